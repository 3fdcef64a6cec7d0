"""Metadata and text filters for recall, in Chroma's ``where`` and ``where_document``
syntax.

``recall(query, where={"source": "email"})`` returns only memories whose metadata pass
the filter. The syntax is Chroma's, so a filter written for a Chroma collection (or for
LangChain's ``Chroma(...).similarity_search(filter=..., where_document=...)``) works
unchanged:

* ``{"key": value}``: equal (``{"key": {"$eq": value}}``);
* ``{"key": {"$ne" | "$gt" | "$gte" | "$lt" | "$lte": value}}``;
* ``{"key": {"$in" | "$nin": [value, ...]}}``;
* ``{"key": {"$contains" | "$not_contains": value}}``: a list value (``{"tags":
  ["work", "urgent"]}``) holds (does not hold) the value;
* ``{"#document": {"$contains" | "$not_contains": "text"}}``: the memory's text holds
  (does not hold) the text, case-sensitive;
* ``{"$and": [filter, ...]}``, ``{"$or": [filter, ...]}``; several keys in one dict
  must all hold (Chroma asks for an explicit ``$and``; both are accepted).

Values are ``str``, ``int``, ``float`` (finite) or ``bool``. Ordering operators compare
numbers with numbers and strings with strings (ISO dates order as text); any other
pairing does not match. A memory without the key matches only ``$ne``, ``$nin`` and
``$not_contains`` (its value is not the one excluded); one whose value is a list matches
``$contains`` alone of the others, as in Chroma. ``True`` equals ``True`` only, never
``1``.

``where_document`` filters the text as Chroma's does: ``{"$contains" | "$not_contains":
"text"}``, ``{"$regex" | "$not_regex": "pattern"}`` (Python's ``re`` syntax, searched
anywhere in the text), ``$and`` and ``$or`` of those. It holds together with ``where``.

Which memories pass is worked out once per namespace and filter (:class:`FilterMask`:
one scan of the namespace's metadata, and of its texts for a filter on them, then only
the memories written since; an edit of metadata starts it again, an edit of a text those
that read the text). A filter that few memories pass
(:attr:`Oblivion.FILTER_SCORED_ROWS`, :attr:`Oblivion.FILTER_SCORED_PER_ROOT`) has each
of them scored, no index searched; otherwise each search is asked for more until enough
of its results pass, as for invalidated memories, as precise as an unfiltered recall
(the archive's sketch copy and Chroma's HNSW are approximate). Where the archive is
searched exactly the two ways rank alike (``tests/core/test_where.py``).

An adapter with a filter language of its own (the LangGraph store's) passes ``where`` a
:class:`Filter` it built: ``Filter(key, test, reads_text)``, ``test(metadata, text)``
saying whether a memory passes and ``key`` naming what the filter means (the masks of a
namespace are kept under it: two filters with one key must pass the same memories).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from _sre import MAXREPEAT
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import regex  # installed with tiktoken, which reads text with it too

try:  # re's own parser: the syntax the README documents
    from re import _parser as _re_parser  # type: ignore[attr-defined]
except ImportError:  # Python 3.10
    import sre_parse as _re_parser

from oblivion_core.errors import InvalidInputError

# re's "possible nested set" (and set operation) warnings for a POSIX class such as
# "[[:digit:]]", which the regex package, and Chroma, read as the class: once, for the
# warnings attributed to these packages (a catch_warnings() around each compile was not
# thread-safe, and could leave the filter on for the whole process)
warnings.filterwarnings(
    "ignore",
    message=r"Possible (nested set|set (difference|intersection|symmetric difference))",
    category=FutureWarning,
    module=r"oblivion_",
)

#: A compiled condition: (metadata, text) -> passes.
Predicate = Callable[[Mapping[str, Any], str], bool]

#: The key of a ``where`` condition on the memory's text, as in Chroma.
DOCUMENT = "#document"

_COMPARE = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_MEMBER = ("$in", "$nin")
_HOLDS = ("$contains", "$not_contains")
_PATTERN = ("$regex", "$not_regex")
_LOGICAL = ("$and", "$or")
_MISSING = object()


class Filter:
    """A recall filter, checked and compiled (:func:`compile_where`): call it with a
    memory's metadata (and text) to know whether the memory passes."""

    __slots__ = ("key", "reads_text", "test")

    def __init__(self, key: str, test: Predicate, reads_text: bool) -> None:
        if not isinstance(key, str) or not callable(test):
            raise InvalidInputError(
                "Filter(key, test, reads_text) takes a str key naming the filter and a "
                f"callable test(metadata, text); got {key!r:.60} and {test!r:.60}"
            )
        #: One text per filter (key order aside), to keep its mask under.
        self.key = key
        self.test = test
        #: Whether it reads the memory's text (``#document``, ``where_document``).
        self.reads_text = reads_text

    def __call__(self, metadata: Mapping[str, Any], text: str = "") -> bool:
        return bool(self.test(metadata, text))


def as_filtered(metadata: Mapping[str, Any]) -> str:
    """What a ``where`` filter reads of ``metadata``, as one text: two memories with the
    same text pass exactly the same filters. A filter reads a dict value as it reads no
    value (under every operator), so dict values are left out (the LangGraph store
    keeps each item's value in one)."""
    read = {key: v for key, v in metadata.items() if not isinstance(v, dict)}
    return json.dumps(read, sort_keys=True)


def _number(x: object) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _same(a: object, b: object) -> bool:
    """Equal, with bools apart from numbers (``True`` is not ``1``)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


#: Seconds a ``$regex`` / ``$not_regex`` may take on one memory's text before the call is
#: refused (:class:`InvalidInputError`); a pattern that does not backtrack without end
#: takes well under a millisecond on the longest text a memory may hold.
REGEX_SECONDS = 0.5
#: Patterns that took longer (the newest 256): refused at once when given again.
_SLOW_PATTERNS: OrderedDict[str, None] = OrderedDict()
#: The most times a ``$regex`` may repeat a part with a count (nested counts multiply).
MAX_REPEAT = 10_000


def _expansion(node: Any, outer: int = 1) -> int:
    """The most times a part of a pattern parsed by re's parser is written out by counted
    repeats (``a{n}``, ``a{n,m}``: the bound; ``a{n,}``: ``n``), nested ones multiplied."""
    data = getattr(node, "data", node)  # a SubPattern holds its items
    if not isinstance(data, list | tuple):
        return outer
    if len(data) == 2 and str(data[0]) in _REPEATS:
        low, high, inner = data[1]
        outer *= max(low if high == MAXREPEAT else high, 1)
        return max(outer, _expansion(inner, outer))
    return max((_expansion(child, outer) for child in data), default=outer)


_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})


def _member(value: object) -> tuple[str, object] | None:
    """``value``'s key in a set of ``$in`` values: equal keys for :func:`_same` values
    (``2`` and ``2.0``; ``True`` apart from ``1``), ``None`` for a value no listed one
    equals (a list, a missing key)."""
    if isinstance(value, bool):
        return ("b", value)
    if _number(value):
        return ("n", value)
    if isinstance(value, str):
        return ("s", value)
    return None


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


def _held(actual: object, operand: object) -> bool:
    """A list value holds ``operand`` (anything else holds nothing, as in Chroma)."""
    return isinstance(actual, list) and any(_same(v, operand) for v in actual)


def _condition(key: str, op: str, operand: Any) -> Predicate:
    if op == "$eq":
        return lambda meta, _: _same(meta.get(key, _MISSING), operand)
    if op == "$ne":
        return lambda meta, _: not _same(meta.get(key, _MISSING), operand)
    if op in _MEMBER:
        inside = op == "$in"
        # one lookup per memory, not one comparison per listed value: an "allowed ids"
        # list of 4,000 over 8,000 memories took 3.5 s
        members = frozenset(_member(v) for v in operand)
        return lambda meta, _: inside == (_member(meta.get(key, _MISSING)) in members)
    if op in _HOLDS:
        holds = op == "$contains"
        return lambda meta, _: holds == _held(meta.get(key, _MISSING), operand)
    return lambda meta, _: ordered(op, meta.get(key, _MISSING), operand)


def _document(op: str, operand: object, where: str, *, empty: bool = False) -> Predicate:
    """A condition on the memory's text (``where``: how to name it in an error)."""
    if op in _HOLDS:
        if not isinstance(operand, str) or (not operand and not empty):
            raise InvalidInputError(
                f"{where}'s {op} needs a{'' if empty else ' non-empty'} str, got {operand!r:.80}"
            )
        holds = op == "$contains"
        return lambda _, text: (operand in text) == holds
    if not isinstance(operand, str) or not operand:  # Chroma refuses an empty one too
        raise InvalidInputError(
            f"{where}'s {op} needs a non-empty pattern str, got {operand!r:.80}"
        )
    try:
        re.compile(operand)  # the syntax documented: Python's re
        parsed = _re_parser.parse(operand)
    except re.error as exc:
        raise InvalidInputError(
            f"{where}'s {op} is not a regular expression Python's re reads ({exc}): {operand!r:.80}"
        ) from exc
    if _expansion(parsed) > MAX_REPEAT:
        # the regex package writes out each counted repeat when it compiles: "a{10000000}"
        # took 2.6 GB
        raise InvalidInputError(
            f"{where}'s {op} {operand!r:.80} repeats a part more than {MAX_REPEAT} times "
            "(counting nested repeats together); use a smaller count or an open one ({n,})"
        )
    # matched by the regex package (re's syntax in its VERSION0), which lets other threads
    # run meanwhile and stops a match at REGEX_SECONDS: re held the whole process (every
    # tenant of a server) for minutes on "^(\w+\s?)*$" over a sentence of 12 words
    slow = (
        f"{where}'s {op} {operand!r:.80} took over {REGEX_SECONDS} s on one memory's text: a "
        "pattern whose repetitions can match the same text in many ways (such as (a|aa)+ "
        "or (\\w+\\s?)*) takes exponential time; write it with one way to match each part"
    )
    if operand in _SLOW_PATTERNS:  # refused at once: each try held the engine for the limit
        raise InvalidInputError(slow + " (refused before in this process)")
    try:
        pattern = regex.compile(operand)
    except (regex.error, MemoryError, OverflowError) as exc:
        raise InvalidInputError(
            f"{where}'s {op} {operand!r:.80} is read by the regex package, which refuses it "
            f"({exc}); POSIX classes such as [[:digit:]] are its own (as in Chroma)"
        ) from exc
    matches = op == "$regex"

    def test(_: Mapping[str, Any], text: str) -> bool:
        try:
            found = pattern.search(text, concurrent=True, timeout=REGEX_SECONDS)
        except TimeoutError:
            _SLOW_PATTERNS[operand] = None
            while len(_SLOW_PATTERNS) > 256:
                _SLOW_PATTERNS.popitem(last=False)
            raise InvalidInputError(slow) from None
        return (found is not None) == matches

    return test


def _field(key: str, cond: object) -> Predicate:
    if key == DOCUMENT:
        ops = ", ".join(_HOLDS)
        if not isinstance(cond, Mapping) or len(cond) != 1 or next(iter(cond)) not in _HOLDS:
            raise InvalidInputError(
                f"where: {DOCUMENT!r} (the memory's text) takes one of {ops}, e.g. "
                f'{{"{DOCUMENT}": {{"$contains": "invoice"}}}}; got {cond!r:.80} '
                "(where_document= takes $regex too)"
            )
        ((op, operand),) = cond.items()
        return _document(op, operand, f"where: {DOCUMENT}", empty=True)
    if not isinstance(cond, Mapping):
        return _condition(key, "$eq", _check_value(cond, f"the value of {key!r}"))
    if len(cond) != 1:
        raise InvalidInputError(
            f"where: {key!r} must map to a value or to one operator, e.g. "
            f'{{"{key}": {{"$gte": 3}}}}; got {dict(cond)!r:.80} (combine several with $and)'
        )
    ((op, operand),) = cond.items()
    if op in _COMPARE:
        if isinstance(operand, bool) and op not in ("$eq", "$ne"):
            # no value orders with a bool: a filter that could pass nothing (Chroma
            # refuses it too)
            raise InvalidInputError(
                f"where: {key!r}'s {op} needs a number or a str to order by, got {operand!r} "
                f'(a flag is compared with $eq or $ne, e.g. {{"{key}": {operand!r}}})'
            )
        return _condition(key, op, _check_value(operand, f"{key!r}'s {op}"))
    if op in _MEMBER:
        if not isinstance(operand, list | tuple) or not operand:
            raise InvalidInputError(
                f"where: {key!r}'s {op} needs a non-empty list of values, got {operand!r:.80}"
            )
        values = tuple(_check_value(v, f"a value of {key!r}'s {op}") for v in operand)
        return _condition(key, op, values)
    if op in _HOLDS:
        return _condition(key, op, _check_value(operand, f"{key!r}'s {op}"))
    raise InvalidInputError(
        f"where: unknown operator {op!r} for {key!r}; use one of "
        f"{', '.join(_COMPARE + _MEMBER + _HOLDS)}"
    )


def compile_where(where: object, where_document: object = None) -> Filter | None:
    """``where`` (on metadata) and ``where_document`` (on the text) checked and made one
    :class:`Filter`, both to hold (``None`` or ``{}`` for both: no filter, ``None``
    back); a :class:`Filter` given as ``where`` is taken as it is. Raises
    :class:`InvalidInputError` naming the part to change."""
    if isinstance(where, Filter):
        if where_document:
            raise InvalidInputError(
                "where_document cannot be given with a Filter as where; fold its condition "
                "on the text into the Filter's test"
            )
        return where
    parts: list[Predicate] = []
    if _given(where, "where", '{"source": "email"}'):
        parts.append(_node(where))  # type: ignore[arg-type]
    if _given(where_document, "where_document", '{"$contains": "invoice"}'):
        parts.append(_text_node(where_document))  # type: ignore[arg-type]
    if not parts:
        return None
    reads_text = bool(where_document) or _names_document(where)
    key = filter_key({"where": where or {}, "where_document": where_document or {}})
    return Filter(key, parts[0] if len(parts) == 1 else _every(parts), reads_text)


def _given(value: object, name: str, example: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"{name} must be a dict such as {example} or None, got {type(value).__name__}"
        )
    return bool(value)


def _names_document(where: object) -> bool:
    """Whether a (checked) ``where`` has a condition on the text anywhere."""
    if isinstance(where, Mapping):
        return any(k == DOCUMENT or _names_document(v) for k, v in where.items())
    if isinstance(where, list | tuple):
        return any(_names_document(v) for v in where)
    return False


def _subs(key: str, cond: object, name: str, node: Callable[[Any], Predicate]) -> Predicate:
    """``$and`` / ``$or`` of the filters in ``cond`` (``name``: where, where_document)."""
    if not isinstance(cond, list | tuple) or not cond:
        raise InvalidInputError(
            f"{name}: {key} needs a non-empty list of filters, got {cond!r:.80}"
        )
    subs = []
    for sub in cond:
        if not isinstance(sub, Mapping) or not sub:
            raise InvalidInputError(
                f"{name}: each filter in {key} must be a non-empty dict, got {sub!r:.80}"
            )
        subs.append(node(sub))
    return _every(subs) if key == "$and" else _some(subs)


def _node(where: Mapping[Any, Any]) -> Predicate:
    parts: list[Predicate] = []
    for key, cond in where.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"where: keys must be non-empty str, got {key!r:.80}")
        if key in _LOGICAL:
            parts.append(_subs(key, cond, "where", _node))
        elif key.startswith("$"):
            raise InvalidInputError(
                f"where: unknown operator {key!r} at the top of a filter; use $and or $or "
                "there, or a metadata key"
            )
        else:
            parts.append(_field(key, cond))
    return parts[0] if len(parts) == 1 else _every(parts)


def _text_node(where: Mapping[Any, Any]) -> Predicate:
    """One ``where_document`` filter: exactly one operator, as in Chroma."""
    ops = ", ".join(_HOLDS + _PATTERN + _LOGICAL)
    if len(where) != 1:
        raise InvalidInputError(
            f"where_document: each filter takes exactly one operator ({ops}); combine "
            f"several with $and, got {dict(where)!r:.80}"
        )
    ((op, operand),) = where.items()
    if op in _LOGICAL:
        return _subs(op, operand, "where_document", _text_node)
    if op in _HOLDS + _PATTERN:
        return _document(op, operand, "where_document")
    raise InvalidInputError(f"where_document: unknown operator {op!r:.40}; use one of {ops}")


def _every(parts: list[Predicate]) -> Predicate:
    held = tuple(parts)
    return lambda meta, text: all(p(meta, text) for p in held)


def _some(parts: list[Predicate]) -> Predicate:
    held = tuple(parts)
    return lambda meta, text: any(p(meta, text) for p in held)


class FilterMask:
    """Which memories of one namespace pass one filter, kept between recalls.

    Every memory is read once: the first recall with the filter scans the namespace's
    metadata, and texts for a filter that reads them (identical metadata evaluated once
    for one that does not), later ones read only the memories written since
    (:meth:`take`, by write number). An edit of a memory's metadata drops the
    namespace's masks, an edit of a text those that read texts (the engine's job).
    Calling it with ids gives a boolean mask: does each pass (``None``, unknown: no).

    It holds the ids of whichever side is smaller, those that pass or those that do
    not (the namespace's own id strings, not copies): at most half the namespace, about
    2 MB at 100k memories.
    """

    def __init__(self, where: Filter) -> None:
        self.where = where
        #: The ids that pass (``inverted``: that do not), as last read. A forgotten one
        #: may stay: it is never a candidate again, and a memory written under its id
        #: is read anew.
        self.members: set[str] = set()
        self.inverted = False
        #: Every memory whose write number is at most this was read (-1: none yet).
        self.scanned = -1

    def take(
        self,
        rows: Iterable[tuple[str, str, str]],
        parse: Callable[[str, str], Any],
        scanned: int,
        ids: Sequence[str],
        row_of: Mapping[str, int],
    ) -> None:
        """Read ``(id, metadata JSON, text)`` rows (``parse(id, raw)`` reads the JSON;
        the text may be ``""`` for a filter that does not read it), then note that every
        memory up to write number ``scanned`` was read. ``ids`` are the namespace's
        memories by row and ``row_of`` their rows."""
        memo: dict[str, bool] = {}
        members, inverted = self.members, self.inverted
        test, by_meta = self.where.test, not self.where.reads_text
        for mid, raw, text in rows:
            ok = memo.get(raw) if by_meta else None
            if ok is None:
                meta = parse(mid, raw)  # a hand-edited value that is no object: no keys
                ok = bool(test(meta if isinstance(meta, Mapping) else {}, text))
                if by_meta:
                    memo[raw] = ok
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

    def holds(self, mid: str) -> bool:
        """Whether one memory passes."""
        return (mid in self.members) != self.inverted

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
