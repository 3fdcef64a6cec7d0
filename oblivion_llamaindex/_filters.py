"""LlamaIndex ``MetadataFilters`` as the engine's ``where`` filter (Chroma's syntax), as
LlamaIndex's Chroma vector store translates them."""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from oblivion_core.errors import InvalidInputError
from oblivion_core.where import compile_where

_OPERATORS = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
}
_CONDITIONS = {FilterCondition.AND: "$and", FilterCondition.OR: "$or"}


def to_where(filters: object) -> dict[str, Any] | None:
    """``filters`` (``MetadataFilters`` or ``None``) as a checked ``where`` dict."""
    if filters is None:
        return None
    if not isinstance(filters, MetadataFilters):
        raise InvalidInputError(
            "filters must be llama_index's MetadataFilters (e.g. MetadataFilters(filters="
            f'[MetadataFilter(key="source", value="email")])) or None, got {type(filters).__name__}'
        )
    where = _group(filters)
    compile_where(where)
    return where or None


def _group(filters: MetadataFilters) -> dict[str, Any]:
    parts = [_group(f) if isinstance(f, MetadataFilters) else _one(f) for f in filters.filters]
    parts = [p for p in parts if p]
    if not parts:
        return {}
    condition = filters.condition or FilterCondition.AND
    if condition not in _CONDITIONS:
        raise InvalidInputError(
            f"filters: condition {condition.value!r} is not supported; use "
            "FilterCondition.AND or FilterCondition.OR"
        )
    return parts[0] if len(parts) == 1 else {_CONDITIONS[condition]: parts}


def _one(f: MetadataFilter) -> dict[str, Any]:
    op = _OPERATORS.get(f.operator)
    if op is None:
        supported = ", ".join(o.value for o in _OPERATORS)
        raise InvalidInputError(
            f"filters: operator {f.operator.value!r} (on {f.key!r}) is not supported; use "
            f"one of {supported}"
        )
    value = list(f.value) if isinstance(f.value, list | tuple) else f.value
    return {f.key: {op: value}}
