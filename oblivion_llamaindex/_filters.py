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
    FilterOperator.CONTAINS: "$contains",  # a list value holds it
}
# a list value holds any (all) of several values: $contains of each, $or-ed ($and-ed)
_EACH = {FilterOperator.ANY: "$or", FilterOperator.ALL: "$and"}
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
    value = list(f.value) if isinstance(f.value, list | tuple) else f.value
    if f.operator in _EACH:
        if not isinstance(value, list) or not value:
            raise InvalidInputError(
                f"filters: operator {f.operator.value!r} (on {f.key!r}) needs a non-empty "
                f"list of values, got {value!r:.80}"
            )
        each = [{f.key: {"$contains": v}} for v in value]
        return each[0] if len(each) == 1 else {_EACH[f.operator]: each}
    op = _OPERATORS.get(f.operator)
    if op is None:
        supported = ", ".join(o.value for o in [*_OPERATORS, *_EACH])
        raise InvalidInputError(
            f"filters: operator {f.operator.value!r} (on {f.key!r}) is not supported; use "
            f"one of {supported}"
        )
    return {f.key: {op: value}}
