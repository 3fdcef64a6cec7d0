"""Importing a Chroma collection: ``import_chroma``.

Part of :class:`~oblivion_core.engine.Oblivion` (a function of the engine assigned in
its class body, as in :mod:`engine_write`). A collection an app filled before it had
Oblivion (its own, LangChain's ``Chroma``, LlamaIndex's ``ChromaVectorStore``) becomes
memories with their ids, texts and metadata. Its vectors are kept when they are this
store's model's (Chroma's default embedding function is the same all-MiniLM-L6-v2 as
Oblivion's default), so nothing is embedded again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from chromadb.errors import InvalidArgumentError

from oblivion_core.checks import check_category, check_flag, check_id, check_namespace, check_text
from oblivion_core.embedding import embed_texts, normalize
from oblivion_core.errors import (
    InvalidInputError,
    ModelMismatchError,
    VectorStoreError,
)
from oblivion_core.progress import progress
from oblivion_core.records import check_metadata
from oblivion_core.typing import Embedder

# a filter Chroma refuses: its own checks raise ValueError or TypeError, its Rust
# binding's (an unknown top-level operator) InvalidArgumentError
_REFUSED = (ValueError, TypeError, InvalidArgumentError)


def _refused_where(where: Mapping[str, Any], exc: BaseException) -> InvalidInputError:
    return InvalidInputError(f"Chroma refused where={dict(where)!r:.200}: {exc}")


def check_import_where(collection: Any, where: Mapping[str, Any]) -> None:
    """Chroma's own check of ``where`` on ``collection`` (a one-record ``get``), for a
    caller that checks before it opens a store (``oblivion import``)."""
    try:
        collection.get(limit=1, where=where, include=[])
    except _REFUSED as exc:
        raise _refused_where(where, exc) from exc


if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion

#: Records read from the collection, and stored, at a time (one ``remember_many`` each).
IMPORT_BATCH = 1000
#: Texts of the collection embedded by this store's model to check that the
#: collection's vectors are that model's: the shortest of the first batch, which fit
#: in the model's window as they do in Chroma's embedding function's.
MODEL_SAMPLE = 16
#: The median cosine between the collection's vectors and this store's model's for the
#: same texts, below which they are taken as another model's. The same model gives
#: 0.99 and more (another ONNX export, another runtime); unrelated models of the same
#: size give about 0.0-0.3, their axes meaning different things.
SAME_MODEL_COSINE = 0.9
#: Metadata keys left out by default: LlamaIndex's ``ChromaVectorStore`` keeps a JSON
#: copy of each node beside its metadata (``_node_content``: its relationships, ids and
#: metadata again, several hundred characters) and its class (``_node_type``). A memory
#: has its text and metadata already; kept, they would reach a prompt through the
#: LlamaIndex adapters' nodes.
LLAMAINDEX_KEYS = ("_node_content", "_node_type")


@dataclass
class ImportReport:
    """What :meth:`~oblivion_core.Oblivion.import_chroma` did.

    ``imported``: records stored as new memories. ``already``: records whose id the
    namespace held before (an import run again goes on where the last one stopped).
    ``skipped`` maps the id of each record that could not be stored to why: no text, or
    a text, id, metadata or vector Oblivion refuses (the message says what to change).
    """

    collection: str
    namespace: str
    imported: int = 0
    already: int = 0
    skipped: dict[str, str] = field(default_factory=dict)
    reembedded: bool = False

    def __str__(self) -> str:
        total = self.imported + self.already + len(self.skipped)
        how = "embedded again" if self.reembedded else "with their vectors"
        lines = [
            f"imported {self.imported:,} of {total:,} records of collection "
            f"{self.collection!r} into namespace {self.namespace!r} ({how}); "
            f"{self.already:,} were there already, {len(self.skipped):,} skipped"
        ]
        for mid, why in list(self.skipped.items())[:10]:
            lines.append(f"  skipped {mid!r}: {why}")
        if len(self.skipped) > 10:
            lines.append(f"  ... and {len(self.skipped) - 10:,} more skipped")
        return "\n".join(lines)


def import_chroma(
    self: Oblivion,
    collection: Any,
    *,
    namespace: str | None = None,
    category: str | None = None,
    reembed: bool = False,
    supersede: bool | None = None,
    where: Mapping[str, Any] | None = None,
    drop_keys: Iterable[str] = LLAMAINDEX_KEYS,
    batch_size: int = IMPORT_BATCH,
) -> ImportReport:
    """Store every record of a Chroma ``collection`` as a memory of ``namespace``: its
    id, document text and metadata (a record without text is skipped and reported).

    Args:
        collection: A ``chromadb`` collection (``client.get_collection(name)``), on
            disk or on a server, or a vector store holding one (LangChain's ``Chroma``,
            LlamaIndex's ``ChromaVectorStore``). Only read.
        namespace: Where the memories go (created on first write). ``None``: the
            namespace a collection of an Oblivion store was made for (each user's
            memories back in their own, in a store whose activation database was
            lost), else the engine's default.
        category: One category for all of them; inferred per text when ``None``, as
            :meth:`remember` does (for a collection of an Oblivion store, the chroma/
            folder of one whose activation database was lost: the category each
            record's metadata keeps).
        reembed: Embed the texts with this store's embedder instead of keeping the
            collection's vectors. Needed when the collection was made with another
            model: the import checks that (16 of its texts embedded again) and says so.
        supersede: Stale-fact detection among the imported texts (``None``: the
            policy's). ``False`` for documents that state nothing about the user.
        where: Import only the records this Chroma metadata filter passes (Chroma's
            own syntax: ``{"user_id": "42"}``, ``{"$and": [...]}``): one user's
            records of a collection shared by many into that user's namespace, say.
        drop_keys: Metadata keys not brought over: by default LlamaIndex's serialized
            copy of each node (:data:`LLAMAINDEX_KEYS`); ``()`` keeps every key.
        batch_size: Records read and stored at a time; each batch is stored whole or
            not at all.

    Records whose id the namespace already holds are counted (``report.already``), not
    stored again, so an import that stopped (an error, a ``KeyboardInterrupt``) goes on
    where it stopped when run again. Shows a progress bar (tqdm). New memories start as
    any new memory does: the collection has no activation to bring.

    Raises:
        InvalidInputError: ``collection`` is not a Chroma collection, or a bad argument.
        ModelMismatchError: the collection's vectors are another model's (pass
            ``reembed=True``, or open the store with that model as ``embedder=``).
        VectorStoreError: Chroma failed reading the collection (the batches stored
            before stay stored).
    """
    self._check_open()
    if not _is_collection(collection):
        # LangChain's Chroma and LlamaIndex's ChromaVectorStore keep theirs here
        inner = getattr(collection, "_collection", None)
        if not _is_collection(inner):
            raise InvalidInputError(
                "collection must be a Chroma collection (chromadb's "
                "client.get_collection(name)) or a vector store holding one (LangChain's "
                f"Chroma, LlamaIndex's ChromaVectorStore), got {type(collection).__name__}"
            )
        collection = inner
    # one of an Oblivion store's own collections (the chroma/ folder of a store whose
    # activation database was lost): each record's metadata is its memory's category,
    # and the collection's its namespace
    made_for = (getattr(collection, "metadata", None) or {}).get("oblivion_namespace")
    own = isinstance(made_for, str)
    if namespace is None:
        namespace = made_for if own else self.default_namespace
    ns = check_namespace(namespace)
    if category is not None:
        category = check_category(category)
        self._hint_category(ns, category)
    reembed = check_flag(reembed, "reembed")
    if supersede is not None:
        supersede = check_flag(supersede, "supersede")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(f"batch_size must be an int >= 1, got {batch_size!r}")
    if where is not None and not isinstance(where, Mapping):
        raise InvalidInputError(
            f"where must be a Chroma metadata filter (a dict such as {{'user_id': '42'}}), "
            f"got {type(where).__name__}"
        )
    keys = None
    if isinstance(drop_keys, Iterable) and not isinstance(drop_keys, str | bytes | Mapping):
        keys = list(drop_keys)
    if keys is None or not all(isinstance(k, str) for k in keys):
        raise InvalidInputError(
            f"drop_keys must be a list of metadata keys (strings), got {drop_keys!r:.100}"
        )
    dropped = frozenset(keys)
    name = str(getattr(collection, "name", "?"))
    if not reembed:  # its vectors are taken as this embedder's: it must be the store's
        self._check_model()
    report = ImportReport(collection=name, namespace=ns, reembedded=reembed)
    include = ["documents", "metadatas"] if reembed else ["documents", "metadatas", "embeddings"]
    checked = reembed
    # with a filter, how many pass is known at the end (Chroma counts a collection whole)
    total = None if where else int(collection.count())
    # an import is no interaction: on the turn clock it stores its records at the
    # namespace's turn (a tick per record aged the user's own memories by as many turns)
    self._no_ticks.active = True
    try:
        with progress(total, f"importing {name}") as advance:
            for offset in itertools.count(0, batch_size):
                try:
                    page = collection.get(
                        limit=batch_size, offset=offset, include=include, where=where or None
                    )
                except Exception as exc:
                    if where and offset == 0 and isinstance(exc, _REFUSED):
                        raise _refused_where(where, exc) from exc
                    raise VectorStoreError(
                        f"reading collection {name!r} from record {offset:,} failed "
                        f"({type(exc).__name__}: {exc}); the {report.imported:,} memories "
                        "imported before are stored: run the import again to go on"
                    ) from exc
                if not page["ids"]:
                    break
                ids, texts, metas, vectors = self._importable(ns, page, report, reembed, dropped)
                cats: list[str | None] = [category] * len(ids)
                if own:
                    ids, texts, metas, vectors, found = _own_records(
                        report, ids, texts, metas, vectors
                    )
                    cats = [category or c for c in found]
                if ids and not checked:
                    _check_model(self, name, texts, vectors)
                    checked = True
                if ids:
                    self.remember_many(
                        texts,
                        categories=cats,
                        metadatas=metas,
                        ids=ids,
                        namespace=ns,
                        supersede=supersede,
                        embeddings=None if reembed else vectors,
                    )
                    report.imported += len(ids)
                advance(len(page["ids"]))
                if len(page["ids"]) < batch_size:
                    break
    finally:
        self._no_ticks.active = False
    return report


def _importable(
    self: Oblivion,
    ns: str,
    page: Mapping[str, Any],
    report: ImportReport,
    reembed: bool,
    dropped: frozenset[str],
) -> tuple[list[str], list[str], list[dict[str, Any]], list[Any]]:
    """The records of one page of ``collection.get()`` that can be stored: ids, texts,
    metadata without the ``dropped`` keys and (unless ``reembed``) vectors. The others
    go to ``report.skipped``."""
    got_ids = [str(i) for i in page["ids"]]
    docs = page.get("documents") or [None] * len(got_ids)
    raw_metas = page.get("metadatas") or [None] * len(got_ids)
    usable = np.ones(len(got_ids), dtype=bool)
    embs = None
    if not reembed and got_ids:
        # in float32, as they are stored: a value beyond its range is infinite there,
        # one below it zero
        with np.errstate(over="ignore"):
            embs = np.asarray(page["embeddings"], dtype=np.float64).astype(np.float32)
        usable = np.asarray(np.isfinite(embs).all(axis=1) & embs.any(axis=1))
    limit = (self.policy_for(ns) if ns in self._known else self._policy).max_text_chars
    kept: list[tuple[int, str, str, dict[str, Any]]] = []
    for k, raw_id in enumerate(got_ids):
        if docs[k] is None:
            report.skipped[raw_id] = "no document text (Oblivion stores texts)"
            continue
        if not usable[k]:
            report.skipped[raw_id] = "its vector has NaN or infinite values, or only zeros"
            continue
        try:
            kept.append(
                (
                    k,
                    check_id(raw_id),
                    check_text(docs[k], limit, "its text"),
                    check_metadata(_without(raw_metas[k], dropped), "its metadata"),
                )
            )
        except InvalidInputError as exc:
            report.skipped[raw_id] = str(exc)
    with self._lock:
        space = self._space(ns) if ns in self._known else None
        held = {m for _, m, _, _ in kept if space is not None and m in space.state.index}
    ids: list[str] = []
    texts: list[str] = []
    metas: list[dict[str, Any]] = []
    vectors: list[Any] = []
    for k, mid, text, meta in kept:
        if mid in held:
            report.already += 1
            continue
        ids.append(mid)
        texts.append(text)
        metas.append(meta)
        if embs is not None:
            vectors.append(embs[k])
    return ids, texts, metas, vectors


def _own_records(
    report: ImportReport,
    ids: list[str],
    texts: list[str],
    metas: list[dict[str, Any]],
    vectors: list[Any],
) -> tuple[list[str], list[str], list[dict[str, Any]], list[Any], list[str | None]]:
    """The records of an Oblivion store's own collection to import, with the category
    each had (taken out of its metadata, which holds nothing else: it is no metadata of
    the user's, whatever ``category=`` says). A summary is skipped: its originals are
    in the collection and come back themselves (it would stand beside them as a plain
    memory, no longer the summary of any)."""
    found = [_own_category(meta) for meta in metas]
    keep = []
    for k, cat in enumerate(found):
        if cat == "summary":
            report.skipped[ids[k]] = "a summary: the memories it summarised are imported"
        else:
            keep.append(k)
    if len(keep) == len(ids):
        return ids, texts, metas, vectors, found
    return (
        [ids[k] for k in keep],
        [texts[k] for k in keep],
        [metas[k] for k in keep],
        [vectors[k] for k in keep] if vectors else vectors,
        [found[k] for k in keep],
    )


def _own_category(metadata: dict[str, Any]) -> str | None:
    """The category an Oblivion store's collection records in a record's metadata,
    taken out of it (``None``: inferred from the text, as when it is missing)."""
    found = metadata.pop("category", None)
    try:
        return check_category(found) if found is not None else None
    except InvalidInputError:
        return None


def _is_collection(value: object) -> bool:
    return all(callable(getattr(value, a, None)) for a in ("get", "count"))


def _without(metadata: Any, dropped: frozenset[str]) -> Any:
    """``metadata`` (a record's, as Chroma gives it) without the ``dropped`` keys."""
    if not dropped or not isinstance(metadata, Mapping) or dropped.isdisjoint(metadata):
        return metadata
    return {k: v for k, v in metadata.items() if k not in dropped}


def _check_model(self: Oblivion, name: str, texts: list[str], vectors: list[Any]) -> None:
    """:func:`check_model` with this store's embedder."""
    check_model(self.embedder, self._dim, name, texts, vectors)


def check_import_model(
    collection: Any, embedder: Embedder, where: Mapping[str, Any] | None
) -> None:
    """The check of :meth:`~oblivion_core.Oblivion.import_chroma` that ``collection``'s
    vectors are ``embedder``'s, on the first records (of those ``where`` passes) with a
    text and a vector, for a caller that checks before it opens a store (``oblivion
    import``: a store made at a new path for a refused import was left holding nothing).
    A collection Chroma cannot read is left to the import, whose error says where."""
    try:
        page = collection.get(
            limit=IMPORT_BATCH, include=["documents", "embeddings"], where=where or None
        )
    except Exception:
        return
    docs = page.get("documents") or []
    vecs = page.get("embeddings")
    if vecs is None:
        return
    texts: list[str] = []
    vectors: list[Any] = []
    for text, vector in zip(docs, vecs, strict=False):
        if isinstance(text, str) and text.strip() and vector is not None:
            texts.append(text)
            vectors.append(vector)
    if texts:
        check_model(embedder, None, str(getattr(collection, "name", "?")), texts, vectors)


def check_model(
    embedder: Embedder, dim: int | None, name: str, texts: list[str], vectors: list[Any]
) -> None:
    """Raise a :class:`ModelMismatchError` unless ``vectors`` (collection ``name``'s, for
    ``texts``) are ``embedder``'s: its own vectors for the :data:`MODEL_SAMPLE` shortest
    texts must point the same way."""
    sample = sorted(range(len(texts)), key=lambda k: len(texts[k]))[:MODEL_SAMPLE]
    ours = embed_texts(embedder, [texts[k] for k in sample], dim)
    fix = (
        "pass reembed=True to embed its texts with this store's embedder, or open the "
        "store with the model that made them (Oblivion(path, embedder=...))"
    )
    theirs_dim = len(vectors[sample[0]])
    if theirs_dim != ours.shape[1]:
        problem = (
            f"collection {name!r} holds {theirs_dim}-d vectors and this store's embedder "
            f"makes {ours.shape[1]}-d ones"
        )
        raise ModelMismatchError(f"{problem}: {fix}", problem=problem)
    theirs = normalize([vectors[k] for k in sample], len(sample), None, f"collection {name!r} has")
    cosine = float(np.median(np.sum(ours * theirs, axis=1)))
    if cosine < SAME_MODEL_COSINE:
        problem = (
            f"collection {name!r} holds another model's vectors (median cosine "
            f"{cosine:.2f} between them and this store's embedder's for {len(sample)} of "
            "its texts, where the same model gives 0.99)"
        )
        raise ModelMismatchError(f"{problem}: {fix}", problem=problem)
