"""Type conversion between the engine and LlamaIndex; no ranking or decay logic here."""

from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, TextNode
from pydantic import AfterValidator, BeforeValidator

from oblivion_core.budget import check_budget, check_k
from oblivion_core.checks import check_plain_namespace, check_standing, storable
from oblivion_core.errors import InvalidInputError
from oblivion_core.recall import RecalledItem
from oblivion_core.records import check_metadata

#: Node metadata keys the adapters add. They are excluded from what the LLM and the
#: embedding model see, so explanations never leak into prompts.
META_ID = "oblivion_id"
META_NAMESPACE = "oblivion_namespace"
META_CATEGORY = "oblivion_category"
META_TIER = "oblivion_tier"
META_RELEVANCE = "oblivion_relevance"
META_ACTIVATION = "oblivion_activation"
META_IMPORTANCE = "oblivion_importance"
META_SCORE = "oblivion_score"
META_WHY = "oblivion_why"
OBLIVION_KEYS: tuple[str, ...] = (
    META_ID,
    META_NAMESPACE,
    META_CATEGORY,
    META_TIER,
    META_RELEVANCE,
    META_ACTIVATION,
    META_IMPORTANCE,
    META_SCORE,
    META_WHY,
)


#: Metadata key of the memories ``OblivionNodePostprocessor`` registers: the node's
#: content key (:func:`node_key`), by which a node is found again when its node id is
#: new (LlamaIndex's node parsers give nodes fresh random ids on every ingestion). Kept
#: out of the node metadata the adapters return and of what they store from a node.
META_NODE_KEY = "oblivion_node_key"


def node_key(text: str) -> str:
    """The content key of a node's text (as registered): a short hash, the same in every
    run and process."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def item_metadata(item: RecalledItem) -> dict[str, Any]:
    """The ``oblivion_*`` metadata describing one ranked item."""
    return {
        META_ID: item.id,
        META_NAMESPACE: item.namespace,
        META_CATEGORY: item.category,
        META_TIER: item.tier.label,
        META_RELEVANCE: item.relevance,
        META_ACTIVATION: item.activation,
        META_IMPORTANCE: item.importance,
        META_SCORE: item.score,
        META_WHY: dict(item.why),
    }


def _excluded(keys: Sequence[str]) -> list[str]:
    return [*keys, *(k for k in OBLIVION_KEYS if k not in keys)]


def item_to_node(item: RecalledItem) -> NodeWithScore:
    """A recalled memory as a ``TextNode`` (id = memory id) scored by the engine."""
    own = {k: v for k, v in item.metadata.items() if k != META_NODE_KEY}
    metadata = {**own, **item_metadata(item)}
    node = TextNode(
        id_=item.id,
        text=item.text,
        metadata=metadata,
        excluded_llm_metadata_keys=list(OBLIVION_KEYS),
        excluded_embed_metadata_keys=list(OBLIVION_KEYS),
    )
    return NodeWithScore(node=node, score=item.score)


def annotate(node: BaseNode, item: RecalledItem) -> NodeWithScore:
    """A copy of ``node`` carrying ``item``'s explanation, scored by the engine.

    The caller's node object is left untouched (it may live in a docstore).
    """
    copy = node.model_copy(
        update={
            "metadata": {**node.metadata, **item_metadata(item)},
            "excluded_llm_metadata_keys": _excluded(node.excluded_llm_metadata_keys),
            "excluded_embed_metadata_keys": _excluded(node.excluded_embed_metadata_keys),
        }
    )
    return NodeWithScore(node=copy, score=item.score)


#: Where a node holds something other than text (``ImageNode``'s fields, ``Node``'s).
_MEDIA = (
    "image",
    "image_url",
    "image_path",
    "image_resource",
    "audio_resource",
    "video_resource",
)


def node_text(node: BaseNode) -> str | None:
    """The text a node contributes, without metadata, as a memory can hold it (NULs as
    spaces, lone surrogates as "?": a PDF's extraction leaves them, and a chunk the
    engine refused failed every query that retrieved it); ``None`` for a node of blank
    text (a blank page LlamaIndex indexed), which has nothing to rank or to show.

    Raises:
        InvalidInputError: an image-only node (no text, something else to show).
    """
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    cleaned = storable(text) if isinstance(text, str) else ""
    if cleaned.strip():  # (after the NULs became spaces: a page of NULs is blank)
        return cleaned
    if not any(getattr(node, name, None) for name in _MEDIA):
        return None
    raise InvalidInputError(
        f"node {node.node_id!r} ({type(node).__name__}) has no text; Oblivion ranks "
        "text only, so filter such nodes out before this postprocessor"
    )


#: How far past [-1, 1] a score may be and still count as a similarity: float rounding
#: makes the cosine of a vector with itself 1.0000000000000002 (VectorStoreIndex does).
SCORE_ROUNDING = 1e-6


def node_score(nws: NodeWithScore) -> float | None:
    """The retriever's score of a node as a relevance, ``None`` when it has none.

    A score of ``0.0`` stays ``0.0``. Any real number is accepted (numpy floats from
    FAISS and co. too); one a rounding error outside ``[-1, 1]`` is clipped into it.

    Raises:
        InvalidInputError: the score is NaN, infinite, not a number, or clearly outside
            ``[-1, 1]`` (a BM25 score or a reranker's logit is not a similarity).
    """
    score = nws.score
    if score is None:
        return None
    node_id = nws.node.node_id
    value = math.nan
    if not isinstance(score, bool) and isinstance(score, numbers.Real):
        try:
            value = float(score)
        except OverflowError:  # an int beyond float's range
            value = math.inf
    if not math.isfinite(value):
        raise InvalidInputError(
            f"node {node_id!r} has score {score!r}; scores must be finite numbers or None"
        )
    if abs(value) > 1.0 + SCORE_ROUNDING:
        raise InvalidInputError(
            f"node {node_id!r} has score {value!r}, outside [-1, 1]: node scores are read as "
            "similarities. For a retriever or reranker scoring otherwise (BM25, logits), "
            "pass relevance='embedding' to OblivionNodePostprocessor, or normalise the "
            "scores into [-1, 1] before it. Nothing was stored."
        )
    return min(max(value, -1.0), 1.0)


def json_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of a node's metadata the engine can store (others are dropped).

    Each entry is judged by the engine's own check
    (:func:`oblivion_core.records.check_metadata`): kept when it is JSON without NaN,
    with string keys at every level and nested no deeper than the engine allows. So no
    node's metadata can make a write fail (a reader's ``{"page_map": {1: "..."}}``
    is dropped, not refused), and the ``oblivion_*`` keys the adapters add (and
    :data:`META_NODE_KEY`) are left out.
    """
    out: dict[str, Any] = {}
    for key, value in metadata.items():
        if not isinstance(key, str) or key in OBLIVION_KEYS or key == META_NODE_KEY:
            continue
        try:
            check_metadata({key: value})
        except InvalidInputError:
            continue
        out[key] = value
    return out


def message_text(message: ChatMessage) -> str:
    """The text blocks of a chat message, joined (``""`` when it has none), as the engine
    takes it (:func:`~oblivion_core.checks.storable`: a NUL or lone surrogate pasted
    into a message would fail the turn's recall, and the next turns' writes)."""
    return storable(message.content or "")


def role(message: ChatMessage) -> str:
    """A message's role as a plain string (``"user"``, ``"assistant"``, ...)."""
    r = message.role
    return str(getattr(r, "value", r))


def calls_tools(message: ChatMessage) -> bool:
    """Whether ``message`` calls tools (``tool_calls`` in its kwargs, or a tool-call block)."""
    if message.additional_kwargs.get("tool_calls"):
        return True
    return any(getattr(b, "block_type", None) == "tool_call" for b in message.blocks)


def is_answer(message: ChatMessage) -> bool:
    """Whether ``message`` is an assistant's answer: assistant text calling no tool.

    A read of the memory whose latest message is one (and no ``input``) is the view
    after the answer: agents read the memory once more after answering
    (``parse_agent_output``), and that read never reaches the LLM.
    """
    if role(message) != "assistant" or calls_tools(message):
        return False
    return bool(message_text(message).strip())


def check_messages(messages: object, name: str) -> list[ChatMessage]:
    """``messages`` as a list of ``ChatMessage`` s, or a refusal naming ``name``."""
    if isinstance(messages, str | bytes | ChatMessage) or not isinstance(messages, Sequence):
        raise InvalidInputError(
            f"{name} takes a list of ChatMessage, got {type(messages).__name__}"
        )
    wrong = [type(m).__name__ for m in messages if not isinstance(m, ChatMessage)]
    if wrong:
        raise InvalidInputError(f"{name} takes a list of ChatMessage, got a {wrong[0]} in it")
    return list(messages)


def query_text(messages: Sequence[ChatMessage], window: int) -> str:
    """Text of the last ``window`` messages that have text, oldest first."""
    texts = [t for t in (message_text(m) for m in messages) if t.strip()]
    return "\n".join(texts[-window:]) if window > 0 else ""


def check_limit(value: object, name: str) -> int:
    """A token limit: an int >= 0 (in tokens).

    Raises:
        InvalidInputError: ``value`` is ``None``, negative, fractional or not a number.
    """
    limit = check_budget(value, name, optional=False)
    assert limit is not None
    return limit


def check_optional_limit(value: object, name: str) -> int | None:
    """A token budget that may be ``None`` (no limit)."""
    return check_budget(value, name)


def check_namespace(value: object) -> str | None:
    """A namespace: ``None`` (the engine's default) or a non-empty string."""
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise InvalidInputError(f"namespace must be a non-empty string or None, got {value!r}")
    return None if value is None else check_plain_namespace(value)


def check_roles(roles: object) -> tuple[str, ...]:
    """Role names as lower-case strings (one name, or several)."""
    if isinstance(roles, str):
        roles = (roles,)
    if isinstance(roles, bytes | bytearray | Mapping) or not isinstance(roles, Iterable):
        raise InvalidInputError(
            "remember_roles must be a role name or a list of them (e.g. ('user',) or "
            f"('user', 'assistant')), got {type(roles).__name__} {roles!r:.60}"
        )
    out = []
    for r in roles:
        name = getattr(r, "value", r)
        if not isinstance(name, str) or not name.strip():
            raise InvalidInputError(f"roles are non-empty strings like 'user', got {r!r}")
        out.append(name.lower())
    return tuple(out)


# Pydantic field types shared by the memory classes: each carries its check, so a
# setting is validated the same way on construction and on assignment.
TokenLimit = Annotated[int, BeforeValidator(lambda v: check_limit(v, "token_limit"))]
Namespace = Annotated[str | None, BeforeValidator(check_namespace)]
ItemCount = Annotated[int | None, AfterValidator(lambda v: check_k(v, "k"))]
Roles = Annotated[tuple[str, ...], BeforeValidator(check_roles)]
#: ``recall(standing=...)``'s categories (one name or several), as a sorted tuple.
Standing = Annotated[tuple[str, ...], BeforeValidator(check_standing)]
