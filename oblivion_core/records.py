"""Memory records, tiers and categories: the data model, with no I/O."""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oblivion_core.errors import InvalidInputError

#: Metadata nested deeper than this is refused (JSON would recurse without bound).
MAX_METADATA_DEPTH = 100


class Tier(enum.IntEnum):
    """Where a memory lives.

    ``ACTIVE`` memories are searched exactly in process on every recall; ``ARCHIVE``
    memories are searched when the active tier is not confident enough (or when asked):
    in process from a copy of their vectors (exact up to ``Oblivion.EXACT_ARCHIVE_ROWS``,
    by a sign sketch up to ``Oblivion.SKETCH_ARCHIVE_ROWS``), through Chroma beyond;
    ``COLD`` memories (the originals of a summary) are not searched
    unless asked for, and are always recoverable.
    """

    ACTIVE = 0
    ARCHIVE = 1
    COLD = 2

    @property
    def label(self) -> str:
        """Lower-case name, as shown in ``why`` and ``stats()``."""
        return self.name.lower()


#: The tiers as plain ints, for hot loops (an IntEnum member lookup costs about a
#: microsecond).
ACTIVE, ARCHIVE, COLD = int(Tier.ACTIVE), int(Tier.ARCHIVE), int(Tier.COLD)


class Category(str, enum.Enum):
    """Built-in memory categories. Any other non-empty string is accepted as a category too."""

    INSTRUCTION = "instruction"
    PREFERENCE = "preference"
    FACT = "fact"
    EVENT = "event"
    TASK = "task"
    SMALL_TALK = "small_talk"
    SUMMARY = "summary"

    def __str__(self) -> str:
        """The category's name (``"instruction"``), as the engine stores it."""
        return str(self.value)


#: Category names in a fixed order; index positions are used by the columnar state.
BUILTIN_CATEGORIES: tuple[str, ...] = tuple(c.value for c in Category)


@dataclass(frozen=True)
class MemoryRecord:
    """One memory and its activation state, as of ``as_of``.

    Attributes:
        id: Unique within its namespace.
        namespace: The isolated memory space it belongs to.
        text: The remembered text (full, never truncated).
        category: Decides the half-life (see :class:`~oblivion_core.policy.Policy`).
        importance: In ``[0, 1]``; raises initial activation and the decay floor.
        confidence: In ``[0, 1]``; scales the boosts of recall, use and reinforce()
            (not confirm() or spreading).
        created_at: Clock time of the write (seconds or turns, per the policy's clock).
        last_accessed: Clock time of the last activation event.
        access_count: How many times it was recalled, used or confirmed.
        activation: Activation at ``as_of``, in ``[0, 1]``.
        decay_rate: Effective decay rate λ per clock unit at ``as_of``.
        tier: Where it lives.
        metadata: User metadata (JSON-serialisable).
        invalidated: Kept out of recall unless asked for.
        superseded_by: Id of the newer memory that replaced this one, if any.
        as_of: Clock time the activation was evaluated at.
    """

    id: str
    namespace: str
    text: str
    category: str
    importance: float
    confidence: float
    created_at: float
    last_accessed: float
    access_count: int
    activation: float
    decay_rate: float
    tier: Tier
    metadata: Mapping[str, Any] = field(default_factory=dict)
    invalidated: bool = False
    superseded_by: str | None = None
    as_of: float = 0.0

    def __hash__(self) -> int:
        """By the memory and the time it was read at (its metadata is a dict): records
        equal field by field hash alike."""
        return hash((self.namespace, self.id, self.as_of))

    def __repr__(self) -> str:
        """Short: the text shortened, no metadata."""
        text = self.text if len(self.text) <= 60 else self.text[:59] + "…"
        return (
            f"MemoryRecord(id={self.id!r}, namespace={self.namespace!r}, "
            f"category={self.category!r}, tier={self.tier.label}, "
            f"activation={self.activation:.3f}, text={text!r})"
        )


def check_metadata(metadata: object, name: str = "metadata", *, depth: int = 0) -> dict[str, Any]:
    """``metadata`` as :meth:`~oblivion_core.Oblivion.remember` stores it (a fresh dict;
    ``None`` is ``{}``), or an :class:`InvalidInputError` naming ``name``: it must be a dict
    that JSON encodes without NaN, with string keys at every level (JSON would turn ``1``
    and ``"1"`` into one key and silently drop a value), nested at most
    :data:`MAX_METADATA_DEPTH` levels. ``depth``: levels above it in the stored metadata
    (an adapter that nests the user's value in its own keys)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"{name} must be a dict, got {type(metadata).__name__}")
    _check_keys(metadata, name, depth)
    if depth == 0:  # its keys are what filters name
        for key in metadata:
            if key == "" or key.startswith("$") or key == "#document":
                raise InvalidInputError(
                    f"{name} key {key!r:.60} cannot be stored: no filter could read it "
                    "(where= takes '$' keys as operators and '#document' as the text, and "
                    "no key is empty; Chroma refuses them too); rename it"
                )
    try:
        json.dumps(dict(metadata), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{name} must be JSON-serialisable without NaN: {exc}; convert such values "
            "first (a datetime with .isoformat(), a set with list(), NaN with None)"
        ) from exc
    return dict(metadata)


def _check_keys(value: object, where: str, depth: int) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise InvalidInputError(
            f"{where} is nested more than {MAX_METADATA_DEPTH} levels deep; flatten it"
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInputError(
                    f"{where} keys must be strings, got {type(key).__name__} {key!r:.60}; "
                    f"use str({key!r:.60}) if that is what you mean"
                )
            _check_keys(item, f"{where}[{key!r:.60}]", depth + 1)
    elif isinstance(value, list | tuple):
        for k, item in enumerate(value):
            _check_keys(item, f"{where}[{k}]", depth + 1)
