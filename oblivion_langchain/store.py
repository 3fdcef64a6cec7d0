"""A LangGraph ``BaseStore`` backed by Oblivion: long-term memory that decays and re-ranks."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.runnables.config import run_in_executor
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    validate_op_namespace,
)

from oblivion_core import Oblivion
from oblivion_core.checks import MAX_NAMESPACE_CHARS
from oblivion_core.errors import InvalidInputError, UnknownMemoryError, UnknownNamespaceError
from oblivion_core.recall import RecalledItem
from oblivion_core.records import MemoryRecord
from oblivion_core.where import Filter
from oblivion_langchain._convert import (
    appraise,
    check_filter,
    check_value,
    clean_text,
    decode_namespace,
    encode_namespace,
    matches,
    namespace_matches,
    now_iso,
    parse_time,
    utc_now,
)

#: Key of the memory metadata under which the store keeps the item's value and times.
META_KEY = "langgraph"

#: A key the engine cannot take as a memory id (empty or blank, longer than 512
#: characters, or starting with this prefix) is stored under this prefix plus the key's
#: SHA-256; the key itself is kept in the metadata.
_HASHED = "lgkey:"

#: Reads and writes a put makes at most when other writers keep storing or deleting
#: its key in between (each failed write changed nothing).
_PUT_ATTEMPTS = 3

_Memory = MemoryRecord | RecalledItem


@dataclass(frozen=True)
class _Put:
    """A validated ``PutOp``: where it goes and what text the engine embeds."""

    space: str
    key: str
    value: dict[str, Any] | None
    text: str
    indexed: bool


@dataclass
class _Hit:
    """One search candidate while results from several namespaces are merged."""

    namespace: tuple[str, ...]
    space: str
    item: RecalledItem
    order: int
    rank: int


class OblivionStore(BaseStore):
    """LangGraph long-term memory store whose search is ranked by activation.

    Items live in Oblivion: each namespace tuple is one Oblivion namespace (the tuple
    JSON-encoded, e.g. ``["memories","u1"]``, so labels can never be confused), each
    key is a memory id, and each value is kept verbatim in the memory's metadata. The
    memory's *text* — what is embedded and recalled — is taken from the value like
    LangGraph's ``index={"fields": [...]}`` says (default ``["$"]``: the whole value as
    JSON; several fields are joined with newlines into one text). An item put with
    ``index=False`` (or lacking every indexed field) is stored with its key as a
    stand-in text, so its value may be of any size.

    * ``put`` remembers a new key, edits an existing one (its activation is kept),
      ``put(ns, key, None)`` / ``delete`` forgets it.
    * ``get`` reads one item; it does not boost it.
    * ``search(prefix, query=...)`` is ``Oblivion.recall`` in each namespace under the
      prefix, merged by the engine's score (relevance + activation + importance), then
      ``filter``, ``offset`` and ``limit`` as LangGraph documents them. Each namespace's
      scores are its own recall's: BM25 and the activation share are relative to that
      namespace's best match, so across namespaces the order is by how well each item
      answers within its namespace (an item alone in its namespace with a weak match
      can rank above a better match that has stronger neighbours).
      ``SearchItem.score`` is that score. The filter goes into each recall (the
      engine ranks only the items that pass it, :class:`~oblivion_core.where.Filter`).
      Exactly the items returned get the recall
      boost (through ``Oblivion.rerank``), on a filtered or offset page too; items
      skipped and the neighbour context the engine's recall adds get none.
      Items put with ``index=False`` are never returned by a query search, and are
      kept out of stale-fact detection (they make nothing stale and are not judged
      when put).
    * ``search(prefix)`` without a query lists items, highest activation first
      (``score`` is ``None``); listing boosts nothing.
    * ``list_namespaces`` supports ``prefix``/``suffix`` (with ``"*"`` wildcards),
      ``max_depth``, ``limit`` and ``offset``; namespaces whose items were all deleted
      are not listed.

    Stale facts: the engine's supersession applies to the indexed items of each
    namespace. When a newer item makes an older one stale — ``"My favourite drink is
    tea."`` under one key, then ``"My favourite drink is coffee."`` under another — a
    query search returns only the newer one; ``get`` and a search without a query still
    return the older item. Putting a new text under either key (or deleting the newer
    one) ends that supersession: the older item is searchable again, and a re-put item
    is judged as the newest statement — so is the stale item put again with the same
    text (the user is back to tea: now the coffee item is the stale one). To keep
    stale items in query results, give the engine a policy with
    ``hide_superseded=False`` (they then rank just below their successor), or
    ``supersede=False`` to turn stale-fact detection off, e.g.
    ``Oblivion(path, policy=Policy(hide_superseded=False))``.

    Compression stays inside the engine: with a policy that compresses
    (``compress_below``, e.g. the ``"support-desk"`` template), ``maintain()`` folds
    decayed items into a summary memory and moves them to the cold tier. A query search
    still finds those items (cold memories are searched) and never returns the summary;
    listing, ``get`` and ``list_namespaces`` ignore summaries too.

    Every op of a batch is validated before any is run, so a bad op (a namespace with
    non-string labels, a value that is not a dict, a key or text with a lone surrogate,
    ...) raises and changes nothing. Ops then run in order. TTLs are not supported:
    decay replaces them. Any string is a key (the empty one too). A namespace may be
    at most 256 characters once encoded (about 25 labels of 8 characters): ``put``
    into a longer one raises; reading or deleting there finds nothing.

    Setup:
        Install the extra: ``pip install "oblivion-memory[langchain]"``.

    Instantiate:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_langchain import OblivionStore

            store = OblivionStore(Oblivion("./memory"), index={"fields": ["text"]})

    Put / get / search:
        .. code-block:: python

            store.put(("memories", "u1"), "tea", {"text": "I prefer green tea"})
            store.get(("memories", "u1"), "tea").value     # {'text': 'I prefer green tea'}
            hits = store.search(("memories",), query="drinks", limit=3)
            hits[0].key, hits[0].score

    Use with an agent:
        .. code-block:: python

            from langchain.agents import create_agent
            from langchain.tools import ToolRuntime, tool

            @tool
            def recall(query: str, runtime: ToolRuntime) -> str:
                \"\"\"Look up what we know about the user.\"\"\"
                hits = runtime.store.search(("memories", "u1"), query=query, limit=5)
                return "\\n".join(h.value["text"] for h in hits)

            agent = create_agent(model, tools=[recall], store=store)

    Args:
        oblivion: The engine holding the items.
        index: LangGraph's index config; only ``fields`` is used (the engine embeds with
            its own embedder, so ``embed`` is rejected and ``dims`` ignored).
        deep: Passed to ``recall`` by a query search. ``True`` (the default) searches
            every item, archived ones too, as LangGraph's stores do, so ``offset``/
            ``limit`` pages tile one ranking. ``None`` lets the engine's gate decide
            (faster while the active tier answers; the gate also opens when fewer active
            items than ``offset + limit`` match, so later pages may come from a wider
            ranking than the first). ``False`` searches the active tier only.
        feedback: Give the items a query search returns the recall boost (default).
        now: Clock for ``created_at``/``updated_at`` (default: UTC wall time); a naive
            datetime is read as local time, as Python does, and stored in UTC.
    """

    supports_ttl = False

    def __init__(
        self,
        oblivion: Oblivion,
        *,
        index: IndexConfig | None = None,
        deep: bool | None = True,
        feedback: bool = True,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        if not isinstance(oblivion, Oblivion):
            raise InvalidInputError(f"oblivion must be an Oblivion, got {type(oblivion).__name__}")
        if index is not None and index.get("embed") is not None:
            raise InvalidInputError(
                "OblivionStore embeds with the engine's embedder; pass it as "
                "Oblivion(..., embedder=...) instead of index['embed']"
            )
        fields = (index or {}).get("fields") or ["$"]
        # a string is a sequence too: "text" would become the fields t, e, x, t
        if not isinstance(fields, list | tuple):
            raise InvalidInputError(
                f"index['fields'] must be a list of field paths, e.g. ['text'], got {fields!r}"
            )
        if not all(isinstance(f, str) and f for f in fields):
            raise InvalidInputError(f"index['fields'] must be non-empty strings, got {fields!r}")
        fields = list(fields)
        if now is not None and not callable(now):
            raise InvalidInputError(
                f"now must be a callable returning a datetime, got {type(now).__name__}"
            )
        self.oblivion = oblivion
        self.index_fields: list[str] = fields
        self.deep = deep
        self.feedback = feedback
        self._now = now if now is not None else utc_now
        self._lock = threading.RLock()
        # each engine namespace's labels (None: not one of the store's), decoded once
        self._decoded: dict[str, tuple[str, ...] | None] = {}

    # ================================================================ batch
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ops in order, after validating all of them (a bad op changes nothing).

        Consecutive puts of new keys into one namespace are written together, in one
        ``Oblivion.remember_many`` (one embedding call, one commit), with the outcome
        of writing them one by one but for the engine's time: they are written at one
        time (on a turn clock too), as ``remember_many`` writes its texts. Consecutive
        deletes in one namespace are made together too (``Oblivion.forget_many``);
        edits and reads run on their own.
        """
        ops = list(ops)
        prepared = [self._prepare(op) for op in ops]
        results: list[Result] = []
        # consecutive puts of new keys, written together by _flush (see _pend)
        pending: dict[str, _Put] = {}
        # consecutive deletes in one namespace, made together by _forget
        deletes: list[_Put] = []
        with self._lock:
            for op, prep in zip(ops, prepared, strict=True):
                if isinstance(prep, _Put) and prep.value is None:
                    self._flush(pending)
                    if deletes and deletes[0].space != prep.space:
                        self._forget(deletes)
                    deletes.append(prep)
                    results.append(None)
                    continue
                self._forget(deletes)
                if isinstance(op, PutOp) and self._pend(pending, prep):
                    results.append(None)
                    continue
                self._flush(pending)  # what this op reads or changes is stored first
                results.append(self._run(op, prep))
            self._flush(pending)
            self._forget(deletes)
        return results

    def _forget(self, deletes: list[_Put]) -> None:
        """Delete the items of ``deletes`` (one namespace) in one engine call (one
        transaction, one Chroma delete: 1,000 deletes took 13 s one by one) and empty
        it. A key holding nothing, or deleted meanwhile by another writer, is passed
        over, as one delete of it would do nothing."""
        if not deletes:
            return
        space = deletes[0].space
        ids = [_memory_id(d.key) for d in deletes if isinstance(d.key, str) and _utf8(d.key)]
        deletes.clear()
        with contextlib.suppress(UnknownNamespaceError):  # nothing was stored there
            self.oblivion.forget_many(ids, namespace=space, skip_missing=True)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the engine is synchronous and thread-safe)."""
        return await run_in_executor(None, self.batch, list(ops))

    # ================================================================ validation
    def _prepare(self, op: Op) -> Any:
        if isinstance(op, GetOp):
            return self._space(op.namespace, must_hold=False)
        if isinstance(op, PutOp):
            return self._prepare_put(op)
        if isinstance(op, SearchOp):
            _labels(op.namespace_prefix, "namespace_prefix")
            validate_op_namespace(op)
            check_filter(op.filter)
            _count(op.limit, "limit")
            _count(op.offset, "offset")
            if op.query is not None and not isinstance(op.query, str):
                raise InvalidInputError(f"query must be a string or None, got {op.query!r}")
            return None
        if isinstance(op, ListNamespacesOp):
            for cond in op.match_conditions or ():
                _labels(cond.path, "match condition path")
                if cond.match_type not in ("prefix", "suffix"):
                    raise InvalidInputError(f"unsupported match type {cond.match_type!r}")
            validate_op_namespace(op)
            if op.max_depth is not None:
                _count(op.max_depth, "max_depth", minimum=1)
            _count(op.limit, "limit")
            _count(op.offset, "offset")
            return None
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")

    def _space(
        self, namespace: object, *, write: bool = False, must_hold: bool = True
    ) -> str | None:
        """The engine namespace of a namespace tuple. One the engine cannot hold (too
        long, or a label with a lone surrogate) raises if ``must_hold`` (a put), else
        is ``None``: nothing can be stored there, so reads and deletes find nothing."""
        labels = _labels(namespace, "namespace")
        if write:
            if not labels:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            if labels[0] == "langgraph":
                raise InvalidNamespaceError(
                    f'Root label for namespace cannot be "langgraph". Got: {labels}'
                )
        validate_op_namespace(GetOp(labels, ""))
        space = encode_namespace(labels)
        if len(space) > MAX_NAMESPACE_CHARS:
            if not must_hold:
                return None
            raise InvalidNamespaceError(
                f"namespace {labels!r} is too long: encoded it has {len(space)} characters, "
                f"at most {MAX_NAMESPACE_CHARS} are allowed; use fewer or shorter labels"
            )
        if not _utf8(space):
            if not must_hold:
                return None
            raise InvalidNamespaceError(
                f"namespace {labels!r} has a label with a lone surrogate, which cannot be "
                "stored as UTF-8; decode your input with errors='replace' or remove it"
            )
        return space

    def _prepare_put(self, op: PutOp) -> _Put | None:
        """The validated put; ``None`` for a delete that can find nothing."""
        deleting = op.value is None
        space = self._space(op.namespace, write=True, must_hold=not deleting)
        if not isinstance(op.key, str):
            raise InvalidInputError(f"keys must be strings, got {type(op.key).__name__}")
        if space is None or (deleting and not _utf8(op.key)):
            return None
        if not _utf8(op.key):
            raise InvalidInputError(
                f"key {op.key!r} contains a lone surrogate, which cannot be stored as UTF-8; "
                "decode your input with errors='replace' or remove it"
            )
        if op.value is None:
            return _Put(space, op.key, None, "", False)
        value = check_value(op.value)
        if op.index is False:
            paths: list[str] = []
        elif op.index is None:
            paths = self.index_fields
        elif isinstance(op.index, list) and all(isinstance(p, str) and p for p in op.index):
            paths = op.index
        else:
            raise InvalidInputError(
                f"index must be None, False or a list of field paths, got {op.index!r}"
            )
        texts = [t for path in paths for t in get_text_at_path(value, path) if t.strip()]
        limit = self._policy(space).max_text_chars
        if not texts:
            # The engine needs a text for every memory; an unindexed item gets a short
            # stand-in (its value lives in the metadata), so a value of any size is
            # stored. It is kept out of query searches and of supersession.
            return _Put(space, op.key, value, _stand_in(op.key, limit), False)
        text = "\n".join(texts)
        if "\x00" in text:
            raise InvalidInputError(f"the text indexed for key {op.key!r} contains a NUL character")
        if not _utf8(text):
            raise InvalidInputError(
                f"the text indexed for key {op.key!r} contains a lone surrogate, which cannot "
                "be stored as UTF-8; decode your input with errors='replace' or remove it"
            )
        if len(text) > limit:
            raise InvalidInputError(
                f"the text indexed for key {op.key!r} has {len(text):,} characters, more than "
                f"max_text_chars={limit:,}; index fewer fields (index=[...]) or split the value"
            )
        return _Put(space, op.key, value, text, True)

    def _policy(self, space: str) -> Any:
        try:
            return self.oblivion.policy_for(space)
        except UnknownNamespaceError:
            return self.oblivion.policy

    # ================================================================ execution
    def _run(self, op: Op, prep: Any) -> Result:
        if isinstance(op, GetOp):
            record = self._record(prep, op.key) if prep is not None else None
            if record is None or _is_summary(record):
                return None
            return _item(record, tuple(op.namespace))
        if isinstance(op, PutOp):
            if prep is not None:
                self._put(prep)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        assert isinstance(op, ListNamespacesOp)
        return self._list_namespaces(op)

    def _record(self, space: str, key: object) -> MemoryRecord | None:
        if not isinstance(key, str) or not _utf8(key):
            return None  # nothing can be stored under it
        try:
            return self.oblivion.get(_memory_id(key), namespace=space)
        except (UnknownNamespaceError, UnknownMemoryError):
            return None

    def _put(self, put: _Put) -> None:
        # Another writer on the same engine (a second store object, the engine's own
        # calls) may store or delete the key between the read and the write: the write
        # then fails without changing anything, and is made again on what is there now.
        for attempt in range(_PUT_ATTEMPTS):
            existing = self._record(put.space, put.key)
            try:
                self._write(put, existing)
                return
            except UnknownMemoryError:
                if attempt + 1 == _PUT_ATTEMPTS or self._record(put.space, put.key):
                    raise  # not deleted meanwhile: a real error
            except InvalidInputError:
                taken = existing is None and self._record(put.space, put.key) is not None
                if attempt + 1 == _PUT_ATTEMPTS or not taken:
                    raise  # not stored meanwhile: the value is refused

    def _pend(self, pending: dict[str, _Put], put: _Put | None) -> bool:
        """Add ``put`` to ``pending`` if it stores a new key; whether it was added.

        ``pending`` holds puts of new keys in one namespace, all indexed or all not (the
        engine's ``remember_many`` takes one namespace and one ``supersede``). A put
        that cannot join writes the group first. A key put again in the group is moved
        to its end with the new value: the last put wins, and is the newest statement,
        as it is when the puts are written one by one.
        """
        if put is None or put.value is None:
            return False
        if pending:
            head = next(iter(pending.values()))
            if (put.space, put.indexed) != (head.space, head.indexed):
                self._flush(pending)
        if put.key in pending:
            del pending[put.key]
        elif self._record(put.space, put.key) is not None:
            return False  # a replacement: written on its own, after the group
        pending[put.key] = put
        return True

    def _flush(self, pending: dict[str, _Put]) -> None:
        """Write the pending puts of new keys in one ``remember_many`` (one embedding
        call, one commit) and empty ``pending``."""
        puts = list(pending.values())
        pending.clear()
        if len(puts) > 1:
            try:
                self.oblivion.remember_many(
                    [put.text for put in puts],
                    metadatas=[{META_KEY: self._new_meta(put)} for put in puts],
                    ids=[_memory_id(put.key) for put in puts],
                    namespace=puts[0].space,
                    supersede=_supersede(puts[0]),
                )
                return
            except InvalidInputError:
                # Nothing was stored: another writer stored one of the keys meanwhile
                # (or the engine refuses an item). One at a time, as _put handles both.
                pass
        for put in puts:
            self._put(put)

    def _new_meta(self, put: _Put) -> dict[str, Any]:
        """The metadata of ``put`` written now: its value and times."""
        stamp = now_iso(self._now)
        meta: dict[str, Any] = {
            "value": put.value,
            "created_at": stamp,
            "updated_at": stamp,
            "indexed": put.indexed,
        }
        if _memory_id(put.key) != put.key:
            meta["key"] = put.key
        return meta

    def _write(self, put: _Put, existing: MemoryRecord | None) -> None:
        memory_id = _memory_id(put.key)
        if put.value is None:
            if existing is not None:
                self.oblivion.forget(memory_id, namespace=put.space)
            return
        meta = self._new_meta(put)
        supersede = _supersede(put)
        if existing is None:
            self.oblivion.remember(
                put.text,
                metadata={META_KEY: meta},
                namespace=put.space,
                id=memory_id,
                supersede=supersede,
            )
            return
        old = _meta(existing)
        meta["created_at"] = old.get("created_at", meta["created_at"])
        # A new text (or a switch between indexed and unindexed, even with the same
        # text) is a new statement: the engine releases the supersessions it was part of.
        # So is the same text put again over an item a newer one made stale: the latest
        # write says it now ("tea" again after "coffee"), as remember() of it would.
        restated = (
            put.text != existing.text
            or put.indexed != old.get("indexed", True)
            or existing.superseded_by is not None
        )
        # ... and appraised as remember() appraises a new one: "ok thanks!" overwritten by
        # an allergy must not keep small talk's half-life and importance
        category, importance = appraise(self.oblivion, put.text) if restated else (None, None)
        self.oblivion.edit(
            memory_id,
            put.text if restated else None,
            metadata={META_KEY: meta},
            namespace=put.space,
            supersede=supersede,
            category=category,
            importance=importance,
        )

    def _spaces(self, prefix: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
        """Store namespaces under ``prefix`` holding an item, sorted by tuple.

        A namespace left with only compression summaries (every item they stand for
        was deleted) holds no item: summaries are the engine's, not the store's.
        """
        n = len(prefix)
        # a namespace under the prefix is encoded as the prefix is, and goes on after it
        # (JSON, one encoding per tuple): others are passed over without decoding, so a
        # search in one user's namespace costs little more with every other user
        whole = encode_namespace(tuple(prefix)) if n else None
        under = whole[:-1] + "," if whole else None
        out = []
        for space in self.oblivion.namespaces():
            if whole is not None and space != whole and not space.startswith(under or ""):
                continue
            labels = self._decoded.get(space, ())
            if labels == ():
                labels = self._decoded[space] = decode_namespace(space)
            if labels is None or labels[:n] != tuple(prefix):
                continue
            total = self.oblivion.count(namespace=space)
            summaries = self.oblivion.count(namespace=space, category="summary")
            if summaries and total == summaries:
                # only summaries: the importance scorer may file an item as one too
                # (PromptedImportance offers the category), which is the store's
                summaries = sum(map(_is_summary, self.oblivion.records(namespace=space)))
            if total > summaries:
                out.append((space, labels))
        return sorted(out, key=lambda s: s[1])

    def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit == 0:
            return []
        spaces = self._spaces(op.namespace_prefix)
        query = clean_text(op.query)
        if query:
            return self._search_query(op, query, spaces)
        want = op.offset + op.limit
        where = _engine_filter(op.filter)  # only the records that pass are read
        listed: list[tuple[float, tuple[str, ...], int, MemoryRecord]] = []
        for space, labels in spaces:
            top = self._most_active(space, want, where)
            listed.extend((-rec.activation, labels, rank, rec) for rank, rec in enumerate(top))
        # Highest activation first; among equally active items, by namespace, then the
        # latest written first (the engine's order).
        listed.sort(key=lambda r: r[:3])
        return [_search_item(rec, labels, None) for _, labels, _, rec in listed[op.offset : want]]

    def _most_active(self, space: str, want: int, where: Filter | None) -> list[MemoryRecord]:
        """The ``want`` most active items of ``space`` that pass ``where``, in the
        engine's order, read a page at a time (``records(order="activation", limit=...)``:
        a listing of 5 reads 5 records, not every item). Invalidated memories and
        compression summaries are not items: read past."""
        out: list[MemoryRecord] = []
        offset, limit = 0, want
        while True:
            page = self.oblivion.records(
                namespace=space, where=where, order="activation", limit=limit, offset=offset
            )
            out.extend(rec for rec in page if not rec.invalidated and not _is_summary(rec))
            if len(out) >= want or len(page) < limit:
                return out[:want]
            offset += len(page)
            limit *= 2

    def _search_query(
        self, op: SearchOp, query: str, spaces: list[tuple[str, tuple[str, ...]]]
    ) -> list[SearchItem]:
        want = op.offset + op.limit
        hits: list[_Hit] = []
        # embedded once: each namespace's recall (and each widening of one) embedded the
        # query again, 25 ms a namespace with the local model
        vector = self.oblivion.query_vector(query) if spaces else None
        for order, (space, labels) in enumerate(spaces):
            ranked = self._ranked(space, query, want, op.filter, vector)
            hits.extend(
                _Hit(labels, space, it, order, rank)
                for rank, it in enumerate(ranked)
                if _searchable(it)
            )
        hits.sort(key=lambda h: (-h.item.score, h.order, h.rank))
        page = hits[op.offset : want]
        if self.feedback:
            self._boost(query, page)
        return [_search_item(h.item, h.namespace, h.item.score) for h in page]

    def _ranked(
        self,
        space: str,
        query: str,
        want: int,
        filter: Mapping[str, Any] | None,
        vector: Any = None,
    ) -> list[RecalledItem]:
        """Read-only recall filtered by ``filter`` (:func:`_engine_filter`), widened until
        ``want`` of its items are search results (:func:`_searchable`) or none are left.

        Compression is the engine's business, not the store's: an item it folded into a
        summary (moved to the cold tier) is still an item, so cold memories are searched
        and the summaries themselves are left out (:func:`_searchable`).
        """
        total = self.oblivion.count(namespace=space)
        # neighbour context (up to 2 per top hit) takes slots of a recall's k; ask for
        # enough that the best `want` by score are all in
        extra = 2 * self.oblivion.policy_for(space).expand_neighbours
        k = max(min(want + extra, total), 1)
        deep = self.deep
        where = _engine_filter(filter)
        while True:
            result = self.oblivion.recall(
                query,
                k=k,
                namespace=space,
                deep=deep,
                include_cold=True,
                feedback=False,
                where=where,
                embedding=vector,
            )
            ranked = list(result)
            if deep is None and not result.searched_archive and any(map(_is_summary, ranked)):
                # A relevant summary in the active tier closed the archive gate, but the
                # items it stands for are cold, outside that tier: search them as well.
                deep = True
                continue
            passing = sum(1 for it in ranked if _searchable(it))
            if passing >= want or len(ranked) < k or k >= total:
                return ranked
            k = min(total, k * 4)

    def _boost(self, query: str, page: list[_Hit]) -> None:
        """Give the recall boost to exactly the items returned.

        ``Oblivion.rerank`` boosts exactly the candidates it is given, so each
        namespace's part of the page is boosted as it stands: the neighbour context a
        recall interleaves, the items a filter removed and those an offset skipped get
        nothing, and a filtered or offset page is boosted like any other — it is what
        the caller saw.
        """
        by_space: dict[str, list[tuple[str, float]]] = {}
        for hit in page:
            # The relevance the item was ranked with (a hit's is the fusion of cosine and
            # BM25, in [0, 1]; a neighbour's its cosine, in [-1, 1]), so the boost, which
            # scales with it, is the one recall gives. Clipped: float rounding can take
            # the cosine of two unit vectors just past 1, which rerank refuses.
            relevance = min(max(hit.item.relevance, -1.0), 1.0)
            by_space.setdefault(hit.space, []).append((hit.item.id, relevance))
        for space, candidates in by_space.items():
            try:
                self.oblivion.rerank(query, candidates, namespace=space, feedback=True)
            except UnknownMemoryError:
                # one was forgotten since the search (the engine may be shared): rerank
                # boosts nothing then, so the others are boosted one at a time
                for candidate in candidates:
                    with contextlib.suppress(UnknownMemoryError):
                        self.oblivion.rerank(query, [candidate], namespace=space, feedback=True)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        # the labels a prefix condition fixes, up to its first wildcard: only the
        # namespaces under them are read (a listing of one user's among 10,000 users
        # read every namespace's counts)
        fixed: tuple[str, ...] = ()
        for cond in op.match_conditions or ():
            if cond.match_type == "prefix":
                labels = tuple(cond.path)
                head = labels[: labels.index("*")] if "*" in labels else labels
                fixed = max(fixed, head, key=len)
        found = [labels for _, labels in self._spaces(fixed)]
        for cond in op.match_conditions or ():
            found = [ns for ns in found if namespace_matches(ns, cond.match_type, cond.path)]
        if op.max_depth is not None:
            found = sorted({ns[: op.max_depth] for ns in found})
        return found[op.offset : op.offset + op.limit]


# ==================================================================== helpers
def _labels(namespace: object, name: str) -> tuple[str, ...]:
    if not isinstance(namespace, tuple | list):
        raise InvalidNamespaceError(
            f"{name} must be a tuple of strings, e.g. ('memories', 'user-1'); "
            f"got {type(namespace).__name__} {namespace!r}"
        )
    for label in namespace:
        if not isinstance(label, str):
            raise InvalidNamespaceError(
                f"{name} {tuple(namespace)!r} has a {type(label).__name__} label {label!r}; "
                "namespace labels must be strings"
            )
    return tuple(namespace)


def _count(value: object, name: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInputError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _utf8(text: str) -> bool:
    """Whether ``text`` can be stored as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _supersede(put: _Put) -> bool | None:
    """The engine's ``supersede`` for ``put``: an unindexed item states nothing
    searchable, so it must neither make an indexed item stale nor be judged stale
    itself on this write."""
    return None if put.indexed else False


def _memory_id(key: str) -> str:
    """The memory id of a store key (see :data:`_HASHED`)."""
    if key.strip() and len(key) <= 512 and not key.startswith(_HASHED):
        return key
    return _HASHED + hashlib.sha256(key.encode("utf-8")).hexdigest()


def _key(memory: _Memory) -> str:
    """The store key of a memory (its id, unless the key had to be hashed)."""
    key = _meta(memory).get("key")
    return key if isinstance(key, str) else memory.id


def _stand_in(key: str, limit: int) -> str:
    """The memory text of an unindexed item: its key (cut to ``limit``, NULs dropped)."""
    text = key.replace("\x00", " ")[:limit]
    return text if text.strip() else "-"


def _meta(memory: _Memory) -> Mapping[str, Any]:
    meta = memory.metadata.get(META_KEY)
    return meta if isinstance(meta, Mapping) else {}


def _is_summary(memory: _Memory) -> bool:
    """Whether ``memory`` is a summary that compression wrote (``maintain()`` with a
    policy's ``compress_below``): category ``summary``, ``metadata["summary_of"]``, and
    never put by the store. It stands for items the store holds, it is not one."""
    return (
        memory.category == "summary"
        and "summary_of" in memory.metadata
        and META_KEY not in memory.metadata
    )


def _searchable(memory: RecalledItem) -> bool:
    """Whether a recalled memory is a query-search result: an indexed item, not a
    compression summary (the search's filter is the recall's own, :func:`_engine_filter`)."""
    return bool(not _is_summary(memory) and _meta(memory).get("indexed", True))


def _value(memory: _Memory) -> dict[str, Any]:
    return _value_of(memory.metadata, memory.text)


def _value_of(metadata: Mapping[str, Any], text: str) -> dict[str, Any]:
    meta = metadata.get(META_KEY)
    value = meta.get("value") if isinstance(meta, Mapping) else None
    # A memory written straight through the engine has no stored value: show its text.
    return dict(value) if isinstance(value, Mapping) else {"text": text}


def _engine_filter(filter: Mapping[str, Any] | None) -> Filter | None:
    """A search ``filter`` as the engine's recall takes it, so that it ranks only the
    items that pass (each scored when few do) instead of being asked for more and more
    until enough of its results pass. Its key names the LangGraph filter: masks are
    kept under it."""
    if not filter:
        return None
    key = "langgraph:" + json.dumps(_filter_key(filter), sort_keys=True, default=repr)
    return Filter(
        key, lambda metadata, text: matches(_value_of(metadata, text), filter), reads_text=True
    )


def _filter_key(node: Any) -> Any:
    """``node`` with every dict key as its ``repr``: a filter may hold keys that are not
    strings (``{"kind": "pref", 1: "x"}``, which matches nothing, as in InMemoryStore),
    which ``json.dumps(sort_keys=True)`` cannot order, and which must not share a mask
    with their string (``1`` is not ``"1"``)."""
    if isinstance(node, Mapping):
        return {repr(k): _filter_key(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [_filter_key(v) for v in node]
    return node


def _item(memory: _Memory, namespace: tuple[str, ...]) -> Item:
    meta = _meta(memory)
    return Item(
        value=_value(memory),
        key=_key(memory),
        namespace=namespace,
        created_at=parse_time(meta.get("created_at")),
        updated_at=parse_time(meta.get("updated_at")),
    )


def _search_item(memory: _Memory, namespace: tuple[str, ...], score: float | None) -> SearchItem:
    meta = _meta(memory)
    return SearchItem(
        namespace=namespace,
        key=_key(memory),
        value=_value(memory),
        created_at=parse_time(meta.get("created_at")),
        updated_at=parse_time(meta.get("updated_at")),
        score=score,
    )
