"""Private helpers: convert between Oblivion types and LangChain / LangGraph types.

Nothing here decides anything about decay, boosts or tiers; it only moves data between
the engine's records and the framework's objects.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Annotated, Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BeforeValidator

from oblivion_core import Oblivion
from oblivion_core.budget import check_budget
from oblivion_core.checks import (
    check_plain_namespace,
    labelled_namespace,
    scored_category,
    scored_importance,
)
from oblivion_core.checks import clean_text as clean_text  # the adapters import it from here
from oblivion_core.errors import InvalidInputError
from oblivion_core.recall import RecalledItem
from oblivion_core.records import check_metadata
from oblivion_core.where import ordered

logger = logging.getLogger("oblivion_langchain")

#: Keys the retriever writes into ``Document.metadata`` (they win over user metadata).
DOCUMENT_KEYS = (
    "id",
    "namespace",
    "category",
    "tier",
    "relevance",
    "activation",
    "importance",
    "score",
    "tokens",
    "why",
)


# ------------------------------------------------------------------ recall -> documents
def to_document(item: RecalledItem) -> Document:
    """One recalled memory as a ``Document``; the ranking facts go into its metadata."""
    metadata: dict[str, Any] = dict(item.metadata)
    metadata.update(
        id=item.id,
        namespace=item.namespace,
        category=item.category,
        tier=item.tier.label,
        relevance=item.relevance,
        activation=item.activation,
        importance=item.importance,
        score=item.score,
        tokens=item.tokens,
        why=dict(item.why),
    )
    return Document(id=item.id, page_content=item.text, metadata=metadata)


def retrieved(doc: Document) -> bool:
    """Whether ``doc`` is a :func:`to_document` output (or a copy of one): its metadata
    holds every one of :data:`DOCUMENT_KEYS`, ``metadata["id"]`` is the document's id
    and ``metadata["why"]`` a dict. A document the user built with some of those keys
    (a ``"category"`` of their own, say) is not one."""
    meta = doc.metadata
    return (
        doc.id is not None
        and all(key in meta for key in DOCUMENT_KEYS)
        and meta["id"] == doc.id
        and isinstance(meta["why"], Mapping)
    )


def user_metadata(doc: Document, stored: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The metadata to store for ``doc``: a retrieved document's (:func:`retrieved`)
    without the ranking keys :func:`to_document` wrote over it, and with the user's
    own values of those keys that ``stored`` (the memory it replaces) holds, which
    the document could not show; any other document's metadata as it is (a vector
    store's ``add_documents`` stores exactly the user's metadata)."""
    metadata = dict(doc.metadata)
    if not retrieved(doc):
        return metadata
    for key in DOCUMENT_KEYS:
        del metadata[key]
        if stored is not None and key in stored:
            metadata[key] = stored[key]
    return metadata


# ------------------------------------------------------------------ validation
def budget(value: object, name: str = "token_budget") -> int | None:
    """A token budget: ``None`` (no limit) or a whole number >= 0 (the core's rule)."""
    return check_budget(value, name)


def positive_k(value: object, name: str = "k") -> int | None:
    """``None`` or an int >= 1."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be an int >= 1 or None, got {value!r}")
    return value


# ------------------------------------------------------------------ messages
def message_text(message: BaseMessage) -> str:
    """The plain text of a message (text content blocks joined; other blocks dropped)."""
    return message.text


def value_text(value: object) -> str:
    """The text of a chain input or output value, as ``ConversationBufferMemory`` shows it.

    A message gives its ``.text``; a list of content blocks gives its text blocks joined
    (image and other blocks dropped, as ``BaseMessage.text`` does); a string is itself;
    ``None`` (a chain that returned nothing) is empty; anything else (a number, say)
    is ``str(value)``.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseMessage):
        return str(value.text)
    if isinstance(value, list) and all(isinstance(b, str | Mapping) for b in value):
        blocks = [b if isinstance(b, str) else dict(b) for b in value]
        return str(HumanMessage(content=blocks).text)  # LangChain's own rule
    return str(value)


#: ``additional_kwargs["lc_source"]`` of the ``HumanMessage`` that LangChain's
#: ``SummarizationMiddleware`` puts in place of the history it summarised.
SUMMARY_SOURCE = "summarization"


def is_summary(message: BaseMessage) -> bool:
    """Whether ``message`` is a ``SummarizationMiddleware`` summary, not a user's words."""
    return (
        isinstance(message, HumanMessage)
        and message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE
    )


def latest_human(messages: Sequence[BaseMessage]) -> tuple[int, HumanMessage] | None:
    """Position and value of the last ``HumanMessage`` in ``messages`` that the user
    sent (summaries of the history by ``SummarizationMiddleware`` are skipped)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage) and not is_summary(messages[i]):
            return i, messages[i]  # type: ignore[return-value]
    return None


def latest_summary(messages: Sequence[BaseMessage]) -> int | None:
    """Position of the last ``SummarizationMiddleware`` summary in ``messages``."""
    for i in range(len(messages) - 1, -1, -1):
        if is_summary(messages[i]):
            return i
    return None


def message_key(index: int, message: BaseMessage) -> str:
    """A stable key for one user message: its id, else its position and text."""
    if message.id:
        return str(message.id)
    digest = hashlib.sha1(message_text(message).encode("utf-8")).hexdigest()[:16]
    return f"{index}:{digest}"


#: Put by :func:`fit_text` at the end of a cut text.
CUT_MARKER = " [...]"


def fit_text(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (with a marker) so the engine accepts it:
    ``text[:limit - len(CUT_MARKER)] + CUT_MARKER``."""
    if len(text) <= limit:
        return text
    logger.warning("a turn of %d characters was cut to %d to fit max_text_chars", len(text), limit)
    return text[: max(limit - len(CUT_MARKER), 0)] + CUT_MARKER


def appraise(engine: Oblivion, text: str) -> tuple[str, float]:
    """Category and importance of ``text`` from the engine's own importance scorer."""
    scorer = engine.importance_scorer
    return scored_category(scorer, text), scored_importance(scorer, text)


def _plain(value: object) -> object:
    return check_plain_namespace(value) if isinstance(value, str) else value


#: The ``namespace`` field of the retriever and the classic memory, checked on
#: construction and assignment: the LangGraph store's namespaces are its own
#: (:func:`~oblivion_core.checks.check_plain_namespace`).
PlainNamespace = Annotated[str | None, BeforeValidator(_plain)]


# ------------------------------------------------------------------ LangGraph store
def encode_namespace(namespace: tuple[str, ...]) -> str:
    """A LangGraph namespace tuple as an Oblivion namespace string.

    The tuple is JSON-encoded (``('users', 'a.b')`` -> ``["users","a.b"]``), so no label
    can be confused with a separator and :func:`decode_namespace` inverts it exactly.
    """
    return json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))


def decode_namespace(name: str) -> tuple[str, ...] | None:
    """Inverse of :func:`encode_namespace`; ``None`` for namespaces the store did not make
    (the other adapters refuse those it makes: :func:`check_plain_namespace`)."""
    return labelled_namespace(name)


def check_value(value: object) -> dict[str, Any]:
    """A store value: a dict the engine accepts as metadata (string keys at every level,
    JSON without NaN, not nested too deep), checked before any op of a batch runs."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"store values must be dicts (e.g. {{'text': ...}}), got {type(value).__name__}; "
            "wrap it in a dict, or pass None to delete the item"
        )
    # the value sits two levels down in the memory's metadata: {META_KEY: {"value": ...}}
    checked = check_metadata(value, "store value", depth=2)
    try:
        json.dumps(checked, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"a store value contains {exc.object[exc.start]!r}, a lone surrogate that cannot "
            "be stored as UTF-8; decode your input with errors='replace' or remove it"
        ) from None
    return checked


def now_iso(now: Callable[[], datetime]) -> str:
    """The current time as an aware ISO-8601 string.

    A naive datetime (``datetime.now()``) is local time to Python: it is converted to
    UTC as such (``astimezone`` reads it in the machine's time zone), not labelled UTC,
    which would shift every timestamp by the local offset.
    """
    stamp = now()
    if not isinstance(stamp, datetime):
        raise InvalidInputError(
            f"the store's now= clock returned {type(stamp).__name__} {stamp!r:.80}; it must "
            "return a datetime, e.g. lambda: datetime.now(timezone.utc)"
        )
    if stamp.tzinfo is None:
        try:
            stamp = stamp.astimezone(timezone.utc)
        except (OverflowError, ValueError, OSError) as exc:
            raise InvalidInputError(
                f"the store's now= clock returned {stamp!r}, a local time with no UTC "
                f"equivalent ({exc}); return an aware datetime, e.g. "
                "lambda: datetime.now(timezone.utc)"
            ) from exc
    return stamp.isoformat()


def parse_time(value: object) -> datetime:
    """A stored ISO timestamp as a datetime (the epoch if missing or malformed)."""
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    return datetime.fromtimestamp(0, tz=timezone.utc)


def utc_now() -> datetime:
    """``datetime.now(timezone.utc)``."""
    return datetime.now(timezone.utc)


_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


def check_filter(filter: object) -> dict[str, Any] | None:
    """A LangGraph search filter: ``None`` or a dict whose ``$`` operators are known."""
    if filter is None:
        return None
    if not isinstance(filter, Mapping):
        raise InvalidInputError(f"filter must be a dict or None, got {type(filter).__name__}")

    def walk(node: Any) -> None:
        # lists are matched element by element (matches()): their dicts are conditions too
        if isinstance(node, list | tuple):
            for element in node:
                walk(element)
            return
        if not isinstance(node, Mapping):
            return
        # a dict with any "$" key is a set of operators: every key must be one
        operators = any(isinstance(k, str) and k.startswith("$") for k in node)
        for key, cond in node.items():
            if (operators or (isinstance(key, str) and key.startswith("$"))) and (
                key not in _OPERATORS
            ):
                raise InvalidInputError(
                    f"unsupported filter operator {key!r}; use one of {list(_OPERATORS)} "
                    "(a dict holding an operator holds only operators)"
                )
            walk(cond)

    walk(filter)
    return dict(filter)


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a LangGraph filter (the InMemoryStore semantics).

    ``{"field": x}`` is an exact match (nested dicts match field by field, lists element
    by element); ``{"field": {"$gt": 3}}`` applies ``$eq``, ``$ne``, ``$gt``, ``$gte``,
    ``$lt`` or ``$lte``. Ordering operators compare as numbers when both sides read as
    one (``"10" > 9.5``, as ``InMemoryStore``'s ``float()`` does), strings with strings
    otherwise (ISO dates); any other pairing does not match (``InMemoryStore`` raises).
    """
    if not filter:
        return True
    return all(_compare(value.get(key), cond) for key, cond in filter.items())


def _compare(actual: Any, cond: Any) -> bool:
    if isinstance(cond, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in cond):
            return all(_apply(actual, op, operand) for op, operand in cond.items())
        if not isinstance(actual, Mapping):
            return False
        return all(_compare(actual.get(k), v) for k, v in cond.items())
    if isinstance(cond, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(cond)
            and all(_compare(a, c) for a, c in zip(actual, cond, strict=True))
        )
    return bool(actual == cond)


def _apply(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if op in _OPERATORS:
        a, b = _as_number(actual), _as_number(operand)
        if a is not None and b is not None:
            return ordered(op, a, b)
        return ordered(op, actual, operand)
    raise InvalidInputError(f"unsupported filter operator {op!r}; use one of {list(_OPERATORS)}")


def _as_number(value: Any) -> float | None:
    """``value`` as ``float()`` reads it (a number, a bool, a numeric string), else None."""
    if not isinstance(value, bool | int | float | str):
        return None
    try:
        return float(value)
    except (ValueError, OverflowError):  # not a number; an int beyond a float's range
        return None


def namespace_matches(namespace: tuple[str, ...], kind: str, path: Sequence[str]) -> bool:
    """LangGraph's ``MatchCondition``: ``prefix``/``suffix`` with ``"*"`` wildcards."""
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if kind == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)
