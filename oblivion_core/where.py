"""Metadata filters for recall, in Chroma's ``where`` syntax.

``recall(query, where={"source": "email"})`` returns only memories whose metadata pass
the filter. The syntax is Chroma's, so a filter written for a Chroma collection (or for
LangChain's ``Chroma(...).similarity_search(filter=...)``) works unchanged:

* ``{"key": value}``: equal (``{"key": {"$eq": value}}``);
* ``{"key": {"$ne" | "$gt" | "$gte" | "$lt" | "$lte": value}}``;
* ``{"key": {"$in" | "$nin": [value, ...]}}``;
* ``{"$and": [filter, ...]}``, ``{"$or": [filter, ...]}``; several keys in one dict
  must all hold (Chroma asks for an explicit ``$and``; both are accepted).

Values are ``str``, ``int``, ``float`` (finite) or ``bool``. Ordering operators compare
numbers with numbers and strings with strings (ISO dates order as text); any other
pairing does not match. A memory without the key matches only ``$ne`` and ``$nin``
(its value is not the one excluded). ``True`` equals ``True`` only, never ``1``.

Which memories pass is worked out once per namespace and filter (:class:`FilterMask`:
one scan of the namespace's metadata, then only the memories written since; an edit of
metadata starts it again). A filter that few memories pass
(:attr:`Oblivion.FILTER_SCORED_ROWS`) has each of them scored, no index searched;
otherwise each search is asked for more until enough of its results pass, as for
invalidated memories, as precise as an unfiltered recall (the archive's sketch copy and
Chroma's HNSW are approximate). Where the archive is searched exactly the two ways rank
alike (``tests/core/test_where.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from oblivion_core.errors import InvalidInputError

#: A compiled filter: metadata -> passes.
Predicate = Callable[[Mapping[str, Any]], bool]

_COMPARE = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_MEMBER = ("$in", "$nin")
_LOGICAL = ("$and", "$or")
_MISSING = object()


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _same(a: object, b: object) -> bool:
    """Equal, with bools apart from numbers (``True`` is not ``1``)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _check_value(value: object, where: str) -> Any:
    if isinstance(value, str | bool) or (
        _number(value) and math.isfinite(value)  # type: ignore[arg-type]
    ):
        return value
    raise InvalidInputError(
        f"where: {where} must be a str, a finite int or float, or a bool, got {value!r:.80}"
    )


def ordered(op: str, actual: Any, operand: Any) -> bool:
    """``actual <op> operand`` for ``$gt``, ``$gte``, ``$lt``, ``$lte``: numbers with
    numbers, strings with strings; any other pairing does not match."""
    if not (
        (_number(actual) and _number(operand))
        or (isinstance(actual, str) and isinstance(operand, str))
    ):
        return False
    if op == "$gt":
        return bool(actual > operand)
    if op == "$gte":
        return bool(actual >= operand)
    if op == "$lt":
        return bool(actual < operand)
    return bool(actual <= operand)


def _condition(key: str, op: str, operand: Any) -> Predicate:
    if op == "$eq":
        return lambda meta: _same(meta.get(key, _MISSING), operand)
    if op == "$ne":
        return lambda meta: not _same(meta.get(key, _MISSING), operand)
    if op in _MEMBER:
        inside = op == "$in"
        return lambda meta: inside == any(_same(meta.get(key, _MISSING), v) for v in operand)
    return lambda meta: ordered(op, meta.get(key, _MISSING), operand)


def _field(key: str, cond: object) -> Predicate:
    if not isinstance(cond, Mapping):
        return _condition(key, "$eq", _check_value(cond, f"the value of {key!r}"))
    if len(cond) != 1:
        raise InvalidInputError(
            f"where: {key!r} must map to a value or to one operator, e.g. "
            f'{{"{key}": {{"$gte": 3}}}}; got {dict(cond)!r:.80} (combine several with $and)'
        )
    ((op, operand),) = cond.items()
    if op in _COMPARE:
        return _condition(key, op, _check_value(operand, f"{key!r}'s {op}"))
    if op in _MEMBER:
        if not isinstance(operand, list | tuple) or not operand:
            raise InvalidInputError(
                f"where: {key!r}'s {op} needs a non-empty list of values, got {operand!r:.80}"
            )
        values = tuple(_check_value(v, f"a value of {key!r}'s {op}") for v in operand)
        return _condition(key, op, values)
    raise InvalidInputError(
        f"where: unknown operator {op!r} for {key!r}; use one of {', '.join(_COMPARE + _MEMBER)}"
    )


def compile_where(where: object) -> Predicate | None:
    """``where`` checked and made a predicate over a memory's metadata (``None`` or
    ``{}``: no filter, ``None`` back). Raises :class:`InvalidInputError` naming the part
    to change."""
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise InvalidInputError(
            f'where must be a dict such as {{"source": "email"}} or None, got '
            f"{type(where).__name__}"
        )
    if not where:
        return None
    return _node(where)


def _node(where: Mapping[Any, Any]) -> Predicate:
    parts: list[Predicate] = []
    for key, cond in where.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"where: keys must be non-empty str, got {key!r:.80}")
        if key in _LOGICAL:
            if not isinstance(cond, list | tuple) or not cond:
                raise InvalidInputError(
                    f"where: {key} needs a non-empty list of filters, got {cond!r:.80}"
                )
            subs = []
            for sub in cond:
                if not isinstance(sub, Mapping) or not sub:
                    raise InvalidInputError(
                        f"where: each filter in {key} must be a non-empty dict, got {sub!r:.80}"
                    )
                subs.append(_node(sub))
            parts.append(_every(subs) if key == "$and" else _some(subs))
        elif key.startswith("$"):
            raise InvalidInputError(
                f"where: unknown operator {key!r} at the top of a filter; use $and or $or "
                "there, or a metadata key"
            )
        else:
            parts.append(_field(key, cond))
    return parts[0] if len(parts) == 1 else _every(parts)


def _every(parts: list[Predicate]) -> Predicate:
    held = tuple(parts)
    return lambda meta: all(p(meta) for p in held)


def _some(parts: list[Predicate]) -> Predicate:
    held = tuple(parts)
    return lambda meta: any(p(meta) for p in held)


class FilterMask:
    """Which memories of one namespace pass one filter, kept between recalls.

    Every memory is read once: the first recall with the filter scans the namespace's
    metadata (identical metadata evaluated once), later ones read only the memories
    written since (:meth:`take`, by write number). An edit of a memory's metadata
    drops the namespace's masks (the engine's job). Calling it with ids gives a boolean
    mask: does each pass (``None``, unknown: no).

    It holds the ids of whichever side is smaller, those that pass or those that do
    not (the namespace's own id strings, not copies): at most half the namespace, about
    2 MB at 100k memories.
    """

    def __init__(self, predicate: Predicate) -> None:
        self.predicate = predicate
        #: The ids that pass (``inverted``: that do not), as last read. A forgotten one
        #: may stay: it is never a candidate again, and a memory written under its id
        #: is read anew.
        self.members: set[str] = set()
        self.inverted = False
        #: Every memory whose write number is at most this was read (-1: none yet).
        self.scanned = -1

    def take(
        self,
        rows: Iterable[tuple[str, str]],
        parse: Callable[[str, str], Any],
        scanned: int,
        ids: Sequence[str],
        row_of: Mapping[str, int],
    ) -> None:
        """Read ``(id, metadata JSON)`` rows (``parse(id, raw)`` reads the JSON), then
        note that every memory up to write number ``scanned`` was read. ``ids`` are the
        namespace's memories by row and ``row_of`` their rows."""
        memo: dict[str, bool] = {}
        members, inverted = self.members, self.inverted
        for mid, raw in rows:
            ok = memo.get(raw)
            if ok is None:
                meta = parse(mid, raw)  # a hand-edited value that is no object: no keys
                ok = memo[raw] = bool(self.predicate(meta if isinstance(meta, Mapping) else {}))
            row = row_of.get(mid)
            if row is None:
                continue  # not (or no longer) a memory of the namespace
            if ok != inverted:
                members.add(ids[row])
            else:
                members.discard(mid)
        self.scanned = max(self.scanned, scanned)
        if len(members) > len(ids) // 2 + 64:  # hold the other side: fewer ids
            self.members = {m for m in ids if m not in members}
            self.inverted = not inverted

    def passing(self, ids: Sequence[str], row_of: Mapping[str, int], most: int) -> list[str] | None:
        """The namespace's memories that pass (``ids`` by row, ``row_of`` their rows),
        or ``None`` if more than ``most`` may."""
        if self.inverted:
            if len(ids) - len(self.members) > most:
                return None
            return [m for m in ids if m not in self.members]
        if len(self.members) > most:
            return None
        return [m for m in self.members if m in row_of]

    def __call__(self, mids: Sequence[str | None]) -> np.ndarray[Any, Any]:
        members, inverted = self.members, self.inverted
        return np.fromiter(
            (m is not None and (m in members) != inverted for m in mids), bool, len(mids)
        )


def filter_key(where: Mapping[str, Any]) -> str:
    """One text per filter (key order aside), to keep its mask under."""
    return json.dumps(_plain(where), sort_keys=True, separators=(",", ":"))


def _plain(value: Any) -> Any:
    """``value`` with every mapping a dict and every sequence a list (any Mapping is a
    filter, and JSON writes dicts and lists only)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
