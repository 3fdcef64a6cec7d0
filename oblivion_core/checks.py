"""Checks at the engine's boundary: every argument a caller passes and every value read
back from the state database's meta table is checked here, and refused with an error
that says what to change (:class:`InvalidInputError` and its kin), before anything is
written.

Each check returns the value in the form the engine keeps (a plain ``str`` category, a
finite ``float``, a :class:`Tier`), so a call site reads ``x = check_x(x)``.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oblivion_core.clock import TurnClock, WallClock
from oblivion_core.errors import InvalidInputError, PolicyError, StorePathError, TextTooLongError
from oblivion_core.policy import ClockKind, Policy
from oblivion_core.records import Tier
from oblivion_core.store import VectorStore, directory_path
from oblivion_core.typing import Clock, ImportanceScorer, Summarizer

#: The longest namespace name (in characters) a store takes.
MAX_NAMESPACE_CHARS = 256


def clock_kind(clock: object) -> ClockKind | None:
    """The policy clock a :class:`WallClock` or :class:`TurnClock` counts in (``None``
    for any other clock: a :class:`ManualClock` counts whatever its user means)."""
    if isinstance(clock, TurnClock):
        return "turns"
    return "wall" if isinstance(clock, WallClock) else None


def check_clock_kind(clock: Clock, kind: str, stored: bool) -> None:
    """A :class:`WallClock` counts seconds and a :class:`TurnClock` turns: under a policy
    on the other clock every time would be read in the wrong unit (a turns store opened
    with a wall clock sat 1.8e9 turns in the future and archived everything). A
    :class:`ManualClock` counts whatever its user means."""
    other = clock_kind(clock)
    if other is None or other == kind:
        return
    name = type(clock).__name__
    if stored:
        fix = "pass no clock: the store's own is used"
    else:
        fix = f"pass no clock, or policy=Policy.template('balanced', clock={other!r})"
    raise PolicyError(
        f"{'this store' if stored else 'the policy'} decays on the {kind!r} "
        f"clock but clock= is a {name}; {fix}"
    )


def check_namespace(namespace: object) -> str:
    if not isinstance(namespace, str) or not namespace.strip():
        raise InvalidInputError(f"namespace must be a non-empty string, got {namespace!r}")
    if len(namespace) > MAX_NAMESPACE_CHARS:
        raise InvalidInputError(f"namespace is longer than {MAX_NAMESPACE_CHARS} characters")
    return check_utf8(namespace, "namespace")


def labelled_namespace(name: str) -> tuple[str, ...] | None:
    """The labels of a namespace written as a JSON array of strings (``["memories","sam"]``
    -> ``("memories", "sam")``), the form adapters with hierarchical namespaces give
    theirs (the LangGraph store's ``("memories", "sam")``); ``None`` for any other."""
    if not name.startswith("["):
        return None
    try:
        parts = json.loads(name)
    except ValueError:
        return None
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
        return None
    return tuple(parts)


def check_plain_namespace(namespace: str) -> str:
    """Refuse, for an adapter whose namespaces are plain strings (often a user id), one
    that is a hierarchical adapter's (:func:`labelled_namespace`): a user whose id is the
    string ``["memories","sam"]`` read and wrote the LangGraph store's items of the
    namespace ``("memories", "sam")``.

    Raises:
        InvalidInputError: ``namespace`` is another adapter's.
    """
    labels = labelled_namespace(namespace)
    if labels is not None:
        raise InvalidInputError(
            f"namespace {namespace!r} is the form the LangGraph store gives its namespace "
            f"{labels!r}, reserved to it: another adapter may not read or write it (a user "
            "id taken as a namespace would reach that user's store items). Use a namespace "
            "that is not a JSON list of strings. Memories an earlier release stored under "
            "this name are kept: Oblivion.records(namespace=...) and recall(namespace=...) "
            f"read them, and the LangGraph store shows them as items of {labels!r}"
        )
    return namespace


def check_utf8(text: str, name: str) -> str:
    """Reject lone surrogates (``"\\ud800"``): neither SQLite nor Chroma can store them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} contains {text[exc.start]!r} at position {exc.start}, a lone surrogate "
            "that cannot be stored as UTF-8; decode your input with errors='replace' or "
            "remove it"
        ) from None
    return text


def clean_text(text: str | None) -> str:
    """``text`` as the engine accepts it: NULs as spaces, lone surrogates as ``"?"``;
    ``""`` when nothing but whitespace is left.

    For the adapters' user input, which may carry either (a pasted binary, a badly
    decoded file): the engine rejects both in a query or a memory text (:func:`check_text`,
    :func:`check_utf8`), and one stray character must not crash an agent run, a chain or
    a chat turn. A query made of nothing else recalls nothing.
    """
    cleaned = storable(text or "")
    return cleaned if cleaned.strip() else ""


def storable(text: str) -> str:
    """``text`` with NULs as spaces and lone surrogates as ``"?"`` (whitespace kept)."""
    if "\x00" in text:
        text = text.replace("\x00", " ")
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")


def check_flag(value: object, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise InvalidInputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_tier(tier: object) -> Tier | None:
    if tier is None or isinstance(tier, Tier):
        return tier
    if isinstance(tier, str):
        for t in Tier:
            if t.label == tier.lower():
                return t
    labels = ", ".join(repr(t.label) for t in Tier)
    raise InvalidInputError(f"tier must be a Tier, one of {labels}, or None; got {tier!r}")


def check_reason(reason: object) -> str | None:
    if reason is not None and not isinstance(reason, str):
        raise InvalidInputError(f"reason must be a string or None, got {type(reason).__name__}")
    return None if reason is None else check_utf8(reason, "reason")


def check_text(text: object, max_chars: int | None, name: str) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"{name} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError(f"{name} is empty or whitespace; pass some text")
    if "\x00" in text:
        raise InvalidInputError(f"{name} contains a NUL character; remove it")
    if max_chars is not None and len(text) > max_chars:
        raise TextTooLongError(
            f"{name} has {len(text):,} characters, more than policy.max_text_chars="
            f"{max_chars:,}; split it into several memories or raise max_text_chars"
        )
    return check_utf8(text, name)


def check_standing(standing: object) -> tuple[str, ...]:
    """``recall(standing=...)``: one category name or several, as a sorted tuple without
    repeats (adapters check and keep theirs this way when they are made)."""
    if isinstance(standing, str):
        return (check_category(standing, "standing"),)
    if isinstance(standing, Mapping) or not isinstance(standing, Iterable):
        raise InvalidInputError(
            "standing must be a category name or a list of them (e.g. 'instruction'), "
            f"got {standing!r}"
        )
    return tuple(sorted({check_category(c, f"standing[{i}]") for i, c in enumerate(standing)}))


def check_category(category: object, name: str = "category") -> str:
    """``category`` as a plain str: ``Category.INSTRUCTION`` is ``"instruction"`` (its
    ``str()`` was ``"Category.INSTRUCTION"``, a category no policy knows)."""
    if not isinstance(category, str) or not category.strip():
        raise InvalidInputError(f"{name} must be a non-empty string, got {category!r:.60}")
    return check_utf8(str.__str__(category), name)


def near_category(category: str, known: Iterable[str]) -> str | None:
    """The first of ``known`` that ``category`` only mistypes (the same but for case, a
    plural "s" or spaces: "Instruction", "instructions"), or ``None`` when ``category``
    is one of them or like none of them (a category of the user's own). Give the
    policy's categories first: a namespace may hold a mistyped one already."""
    known = list(dict.fromkeys(known))
    if category in known:
        return None

    def plain(name: str) -> str:
        name = name.strip().casefold()
        return name[:-1] if name.endswith("s") else name

    want = plain(category)
    return next((k for k in known if plain(k) == want), None)


def finite(value: object, name: str, want: str) -> float:
    """``value`` as a finite float; else InvalidInputError: ``name`` must be ``want``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInputError(f"{name} must be {want}, got {type(value).__name__} {value!r:.60}")
    try:
        v = float(value)
    except OverflowError:  # an int beyond float's range
        v = math.inf
    if not math.isfinite(v):
        raise InvalidInputError(f"{name} is not finite ({value!r:.60}); it must be {want}")
    return v


def check_unit(value: object, name: str) -> float:
    v = finite(value, name, "a number in [0, 1]")
    if not 0.0 <= v <= 1.0:
        raise InvalidInputError(f"{name} must be a finite number in [0, 1], got {value!r:.60}")
    return v


def scored_category(scorer: ImportanceScorer, text: str) -> str:
    """``scorer.categorize(text)``, checked: a scorer that raises or returns no category
    name is an :class:`InvalidInputError` naming it (not its own exception: a
    ``RuntimeError`` would reach LlamaIndex's sync ``Memory`` as "nested async")."""
    try:
        got = scorer.categorize(text)
    except Exception as exc:
        raise InvalidInputError(
            f"the importance scorer's categorize() failed: {exc!r:.200}; fix the "
            "importance_scorer passed to Oblivion, or pass category= yourself"
        ) from exc
    if not isinstance(got, str) or not got.strip():
        raise InvalidInputError(
            f"the importance scorer's categorize() returned {got!r:.60}; it must "
            "return a non-empty category name (or pass category= yourself)"
        )
    return check_category(got)


def scored_importance(scorer: ImportanceScorer, text: str) -> float:
    """``scorer.score(text)``, checked as :func:`scored_category` checks a category."""
    try:
        got = scorer.score(text)
    except Exception as exc:
        raise InvalidInputError(
            f"the importance scorer's score() failed: {exc!r:.200}; fix the "
            "importance_scorer passed to Oblivion, or pass importance= yourself"
        ) from exc
    return check_unit(got, "scored importance")


def check_count(value: object, name: str) -> int:
    """``value`` as a whole number >= 0 (an offset into a list)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise InvalidInputError(f"{name} must be an int >= 0, got {type(value).__name__} {value!r}")
    return int(value)


def check_id(memory_id: object) -> str:
    if not isinstance(memory_id, str) or not memory_id.strip() or len(memory_id) > 512:
        raise InvalidInputError(f"ids must be non-empty strings of <= 512 chars, got {memory_id!r}")
    return check_utf8(memory_id, "id")


def check_ids(ids: object) -> list[str]:
    if isinstance(ids, str):
        return [check_id(ids)]
    if isinstance(ids, bytes | bytearray | Mapping) or not isinstance(ids, Iterable):
        raise InvalidInputError(f"ids must be a list of strings, got {type(ids).__name__}")
    return [check_id(i) for i in ids]


def parallel(values: Sequence[Any] | None, n: int, name: str, default: Any = None) -> list[Any]:
    if values is None:
        return [default] * n
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence | np.ndarray):
        raise InvalidInputError(
            f"{name} must be a list with one entry per text ({n}), got {type(values).__name__}"
        )
    if len(values) != n:
        raise InvalidInputError(
            f"{name} must be a list with one entry per text ({n}), got {len(values)} entries"
        )
    return list(values)


def stored_dim(value: object) -> int | None:
    """The vector dimension the meta table holds (``None`` before the first write)."""
    if value is not None and (type(value) is not int or value <= 0):
        raise ValueError(f"{value!r} is not a positive whole number")
    return value


def stored_policy(value: object) -> Policy | None:
    """A policy the database holds (``None``: none saved yet)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise TypeError(f"a policy is a JSON object, not {type(value).__name__}")
    return Policy.from_dict(value, strict=False)  # one a newer version saved may hold more


def stored_count(value: object) -> int:
    """A count the meta table holds (absent: 0)."""
    if value is None:
        return 0
    if type(value) is not int or value < 0:
        raise ValueError(f"{value!r} is not a count")
    return value


def stored_ids(value: object) -> set[str]:
    """A list of memory ids the meta table holds (absent: none)."""
    if value is None:
        return set()
    if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
        raise TypeError(f"{value!r:.60} is not a list of ids")
    return set(value)


def store_path(path: object) -> Path | None:
    """The store directory ``Oblivion(path)`` was given, checked (``None``: in memory)."""
    if path is None:
        return None
    return directory_path(path, "path", "the store's directory", ", or None for a store in memory")


def check_hooks(scorer: object, summarizer: object, judge: object, store: object) -> None:
    """Refuse a hook that is not what ``Oblivion()`` expects, before anything is opened
    (else it failed on first use, with an AttributeError)."""
    for name, value, ok, want in (
        (
            "importance_scorer",
            scorer,
            isinstance(scorer, ImportanceScorer),
            "an object with score(text) and categorize(text)",
        ),
        (
            "summarizer",
            summarizer,
            isinstance(summarizer, Summarizer),
            "an object with summarize(texts)",
        ),
        (
            "supersession_judge",
            judge,
            callable(getattr(judge, "supersedes", None)),
            "an object with supersedes(new, old, similarity)",
        ),
        (
            "vector_store",
            store,
            isinstance(store, VectorStore),
            "a VectorStore, e.g. VectorStore.server(host, port)",
        ),
    ):
        if value is not None and not ok:
            raise InvalidInputError(f"{name} must be {want} (or None), got {value!r}")


def prepare_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorePathError(
            f"cannot create the store directory {str(path)!r}: {exc.strerror}; "
            "pass a path you can write to"
        ) from exc
    if not path.is_dir():
        raise StorePathError(f"store path {str(path)!r} exists and is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise StorePathError(
            f"store directory {str(path)!r} is not writable; fix its permissions or pass "
            "another path"
        )
