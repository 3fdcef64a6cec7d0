"""Opening an engine for the adapters' ``from_defaults`` and checking handles."""

from __future__ import annotations

import copy
import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel
from llama_index.core.schema import QueryBundle

from oblivion_core.engine import Oblivion
from oblivion_core.errors import InvalidInputError, UnknownMemoryError, UnknownNamespaceError
from oblivion_llamaindex._embedding import LlamaIndexEmbedder


def check_oblivion(oblivion: object, owner: str) -> Oblivion:
    """Return ``oblivion`` if it is an :class:`Oblivion`, else fail with a hint."""
    if not isinstance(oblivion, Oblivion):
        raise InvalidInputError(
            f"{owner} needs an Oblivion instance (oblivion=Oblivion('./memory')), got "
            f"{type(oblivion).__name__}; or use {owner}.from_defaults(path, embed_model=...)"
        )
    return oblivion


def check_fields(model: type[BaseModel], data: Mapping[str, Any], owner: str) -> None:
    """Refuse settings ``model`` has no field for: pydantic drops them silently, so a
    typo (``token_limt=``) changed nothing, and ``session_id=`` (``Memory``'s) left
    every user of one chat store on the same history key."""
    fields = list(model.model_fields)
    # class_name: what LlamaIndex's model_dump()/to_json() add, read back by model_validate
    unknown = [key for key in data if key not in model.model_fields and key != "class_name"]
    if not unknown:
        return
    hints = []
    for key in unknown:
        if key == "session_id" and "chat_store_key" in model.model_fields:
            hints.append(
                "session_id: pass namespace= (the user's long-term memories, kept apart "
                "from every other user's) and chat_store_key= (their conversation's "
                "history in the chat store)"
            )
        elif close := difflib.get_close_matches(key, fields, n=1):
            hints.append(f"{key}: did you mean {close[0]}=?")
    hint = f" ({'; '.join(hints)})" if hints else ""
    raise InvalidInputError(
        f"{owner} has no setting {', '.join(map(repr, unknown))}{hint}; it has {', '.join(fields)}"
    )


#: The end of the "no engine" errors of a deserialised memory: an agent restored from a
#: Context saved with JsonPickleSerializer takes the memory unpickled from it (without
#: its engine) over the live one passed as ``memory=``, and a live one set into the
#: Context before the run is pickled again on its way in.
RESTORED_HINT = (
    "; an agent's Context saved with JsonPickleSerializer holds its memory without the "
    "engine, and the agent takes that one before memory=: save the Context with "
    "JsonSerializer (the default, which leaves the memory out) and pass memory="
)


def need_engine(kwargs: dict[str, Any], owner: str) -> None:
    """Fail clearly when ``from_dict`` is called without the engine (never serialised)."""
    if kwargs.get("oblivion") is None:
        raise InvalidInputError(
            f"{owner}.from_dict needs the engine, which is not serialised: "
            f"{owner}.from_dict(data, oblivion=Oblivion(path))"
        )


def restore_private(model: BaseModel) -> None:
    """After unpickling: private attributes LlamaIndex dropped as unpicklable (the
    engine, locks) get their defaults, so a fresh lock, and no engine: using the object
    then says to construct it with one, instead of an ``AttributeError``."""
    private = getattr(model, "__pydantic_private__", None)
    if private is None:
        private = {}
        object.__setattr__(model, "__pydantic_private__", private)
    for name, attr in type(model).__private_attributes__.items():
        if name not in private:
            factory = attr.default_factory  # ours take no arguments
            private[name] = factory() if factory is not None else copy.deepcopy(attr.default)  # type: ignore[call-arg]


def query_text(bundle: QueryBundle, owner: str) -> str:
    """The text to recall with: the bundle's custom embedding strings joined (HyDE and
    other query transforms put what to embed there), else its query string.

    The engine embeds the query text with its own model: a bundle's ``embedding`` is not
    used (it may come from another model, of another dimension). A bundle that has an
    embedding with text is searched by its text.

    Raises:
        InvalidInputError: the bundle has an ``embedding`` and no query text, which
            would otherwise silently find nothing.
    """
    strs = bundle.custom_embedding_strs or []
    text = "\n".join(s for s in strs if isinstance(s, str) and s)
    if not text:
        text = bundle.query_str
    if bundle.embedding is not None and not (isinstance(text, str) and text.strip()):
        raise InvalidInputError(
            f"{owner} got a QueryBundle with an embedding and no query text: Oblivion "
            "embeds the query text with its own model (a given embedding is not used), "
            "so pass the query text (QueryBundle(query_str=..., embedding=...) is fine)"
        )
    return text


def open_oblivion(
    path: str | os.PathLike[str] | None,
    *,
    embed_model: BaseEmbedding | None = None,
    **engine_kwargs: Any,
) -> Oblivion:
    """Open an engine, embedding with ``embed_model`` when one is given.

    Args:
        path: Store directory, or ``None`` for an in-memory store.
        embed_model: Any LlamaIndex ``BaseEmbedding``; ``None`` keeps the engine's
            default (local all-MiniLM-L6-v2).
        **engine_kwargs: Passed to :class:`Oblivion` (``policy``, ``clock``,
            ``token_counter``, ...). ``embedder`` and ``embed_model`` are exclusive.
    """
    if embed_model is not None:
        if engine_kwargs.get("embedder") is not None:
            raise InvalidInputError("pass either embed_model= or embedder=, not both")
        engine_kwargs["embedder"] = LlamaIndexEmbedder(embed_model)
    return Oblivion(path, **engine_kwargs)


def engine_for(
    path: str | os.PathLike[str] | None,
    *,
    oblivion: Oblivion | None,
    embed_model: BaseEmbedding | None,
    engine_kwargs: dict[str, Any] | None,
) -> Oblivion:
    """The engine an adapter's ``from_defaults`` uses: ``oblivion`` as it is, or one
    opened by :func:`open_oblivion` (an engine given with settings to open one is
    refused before anything opens)."""
    if oblivion is None:
        return open_oblivion(path, embed_model=embed_model, **(engine_kwargs or {}))
    if path is not None or embed_model is not None or engine_kwargs:
        raise InvalidInputError(
            "from_defaults(oblivion=...) uses that engine as it is; drop path, "
            "embed_model and engine_kwargs"
        )
    return oblivion


def mark_used(
    oblivion: Oblivion,
    node_ids: Iterable[str],
    namespace: str | None,
    owner: str,
    memory_of: Callable[[str], str] | None = None,
) -> list[float]:
    """``Oblivion.mark_used`` for node ids, with an error naming every unknown id.

    Args:
        memory_of: The memory id a node id stands for (``None``: the node id itself).

    Raises:
        InvalidInputError: ``node_ids`` is not a node id or a list of them.
        UnknownMemoryError: some id has no memory in ``namespace``; nothing is boosted
            (the engine checks every id before changing anything).
    """
    ids = check_node_ids(node_ids, f"{owner}.mark_used")
    memory_ids = [memory_of(i) for i in ids] if memory_of is not None else ids
    try:
        return oblivion.mark_used(memory_ids, namespace=namespace)
    except (UnknownMemoryError, UnknownNamespaceError) as exc:
        missing = []
        for node_id, memory_id in zip(ids, memory_ids, strict=True):
            try:
                oblivion.get(memory_id, namespace=namespace)
            except (UnknownMemoryError, UnknownNamespaceError):
                missing.append(node_id)
        where = namespace if namespace is not None else oblivion.default_namespace
        raise UnknownMemoryError(
            f"{owner}.mark_used: node id(s) {missing!r} are not memories in namespace "
            f"{where!r}; pass ids of nodes it returned. Nothing was boosted."
        ) from exc


def check_node_ids(node_ids: object, name: str) -> list[str]:
    """``node_ids`` (one node id, or several) as a list of strings; else a refusal
    naming ``name`` and what to pass."""
    if isinstance(node_ids, str):
        return [node_ids]
    if isinstance(node_ids, bytes | bytearray | Mapping) or not isinstance(node_ids, Iterable):
        raise InvalidInputError(
            f"{name} takes a node id or a list of node ids (strings, e.g. "
            f"[n.node.node_id for n in response.source_nodes]), got {type(node_ids).__name__}"
        )
    ids = list(node_ids)
    for i, node_id in enumerate(ids):
        if not isinstance(node_id, str):
            raise InvalidInputError(
                f"{name} takes node ids as strings (node.node_id), got "
                f"{type(node_id).__name__} {node_id!r:.60} at position {i}"
            )
    return ids


#: How the engine refuses a text for what it says (``oblivion_core.checks.check_text``):
#: ``texts[i]`` of a batch or ``text`` of one write, then "has N characters", "contains"
#: (a NUL, a lone surrogate) or "is empty". Not "texts must be a list": a caller's bug.
_REFUSED_TEXT = re.compile(r"texts?(?:\[(\d+)\])? (?=has |contains |is empty)")


def text_refusal(exc: BaseException) -> tuple[int, str] | None:
    """``(i, why)`` when ``exc`` is the engine refusing the text at index ``i`` of a batch
    (too long, a NUL character, ...), ``why`` being its reason about "its text"; ``None``
    for any other error. The engine only knows the batch index; callers name the
    message or node instead, which is what the user can act on."""
    if not isinstance(exc, InvalidInputError):
        return None
    message = str(exc)
    match = _REFUSED_TEXT.match(message)
    if match is None:
        return None
    return int(match.group(1) or 0), "its text " + message[match.end() :]


def renamed(exc: InvalidInputError, message: str) -> InvalidInputError:
    """An error of ``exc``'s type saying ``message``, caused by ``exc``."""
    new = type(exc)(message)
    new.__cause__ = exc
    return new


_Q = TypeVar("_Q")


def remember_queued(
    oblivion: Oblivion,
    queue: list[_Q],
    count: int | None,
    text_of: Callable[[_Q], str],
    metadata_of: Callable[[_Q], Mapping[str, Any]],
    *,
    category: str | None,
    importance: float | None,
    namespace: str | None,
) -> tuple[list[_Q], list[str], list[tuple[int, InvalidInputError, str]]] | None:
    """Write the ``count`` oldest entries of ``queue`` (``None``: all) with
    :func:`remember_each`; ``None`` when nothing waits.

    An entry leaves the queue once the engine has dealt with it: stored, or refused for
    its text. When the write fails otherwise (the embedder timed out, the store is busy),
    the error is raised and the entries not stored stay queued, first in line for the
    next write.

    Returns:
        The entries written, the new memory ids and :func:`remember_each`'s refusals
        (indices into the entries written).
    """
    pending = queue[:count] if count is not None else list(queue)
    if not pending:
        return None
    stored_at: list[int] = []
    try:
        stored, refused = remember_each(
            oblivion,
            [text_of(entry) for entry in pending],
            [metadata_of(entry) for entry in pending],
            category=category,
            importance=importance,
            namespace=namespace,
            stored_at=stored_at,
        )
    except BaseException:
        written = set(stored_at)
        queue[: len(pending)] = [e for i, e in enumerate(pending) if i not in written]
        raise
    del queue[: len(pending)]
    return pending, stored, refused


def remember_each(
    oblivion: Oblivion,
    texts: Sequence[str],
    metadatas: Sequence[Mapping[str, Any]],
    *,
    category: str | None,
    importance: float | None,
    namespace: str | None,
    stored_at: list[int] | None = None,
) -> tuple[list[str], list[tuple[int, InvalidInputError, str]]]:
    """Remember ``texts`` in one engine write; if the engine refuses one of them for its
    text (``remember_many`` is all or nothing), remember the others one at a time.

    A refused text would be refused again on any retry, so one over-long paste must
    not cost the messages written with it.

    Args:
        stored_at: When given, the index of each text is appended to it once the text
            is stored, as it happens: when the call raises, the texts not listed were
            not stored and may be written again.

    Returns:
        The new memory ids, and ``(index, error, why)`` for each refused text.

    Raises:
        Any error that is not about one text (store, embedder, settings).
    """
    n = len(texts)
    done = stored_at if stored_at is not None else []
    try:
        records = oblivion.remember_many(
            texts,
            categories=[category] * n,
            importances=[importance] * n,
            metadatas=metadatas,
            namespace=namespace,
        )
        done.extend(range(n))
        return [r.id for r in records], []
    except InvalidInputError as exc:
        refusal = text_refusal(exc)
        if refusal is None:
            raise
        if n == 1:
            return [], [(0, exc, refusal[1])]
    stored: list[str] = []
    refused: list[tuple[int, InvalidInputError, str]] = []
    for i, (text, metadata) in enumerate(zip(texts, metadatas, strict=True)):
        try:
            record = oblivion.remember(
                text,
                category=category,
                importance=importance,
                metadata=metadata,
                namespace=namespace,
            )
        except InvalidInputError as exc:
            refusal = text_refusal(exc)
            if refusal is None:
                raise
            refused.append((i, exc, refusal[1]))
            continue
        stored.append(record.id)
        done.append(i)
    return stored, refused


_Built = TypeVar("_Built")


def build_with_engine(
    path: str | os.PathLike[str] | None,
    *,
    oblivion: Oblivion | None,
    embed_model: BaseEmbedding | None,
    engine_kwargs: dict[str, Any] | None,
    make: Callable[[Oblivion], _Built],
) -> _Built:
    """``make(engine)`` with the engine :func:`engine_for` gives. One it opened is
    closed again when ``make`` fails (a misspelt setting): it held the store's lock
    until it was garbage-collected, never in a notebook keeping the traceback, so the
    corrected call was refused as "already open"."""
    engine = engine_for(
        path, oblivion=oblivion, embed_model=embed_model, engine_kwargs=engine_kwargs
    )
    try:
        return make(engine)
    except BaseException:
        if oblivion is None:
            engine.close()
        raise
