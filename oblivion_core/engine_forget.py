"""Invalidating and forgetting memories.

Part of :class:`~oblivion_core.engine.Oblivion`: each function here is one of its methods
(assigned in its class body), written as a function of the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any

import numpy as np

from oblivion_core.checks import check_flag, check_id, check_reason
from oblivion_core.errors import InvalidInputError
from oblivion_core.records import Tier
from oblivion_core.space import Space
from oblivion_core.state import JournalRow, NamespaceState
from oblivion_core.where import Filter, compile_where

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion

logger = logging.getLogger("oblivion_core")


def clear(self: Oblivion, *, namespace: str | None = None) -> int:
    """Delete every memory of a namespace (texts, vectors, state); returns how many.

    The journal keeps the history; the namespace stays usable.
    """
    ns = self._ns(namespace)
    with self._lock:
        self._check_open()
        space = self._space(ns)
        n = space.state.n
        if n:
            self._delete(ns, space, list(range(n)), self._now(ns), "clear() called")
        return n


def invalidate(
    self: Oblivion, memory_id: str, *, namespace: str | None = None, reason: str | None = None
) -> None:
    """Mark a memory wrong: activation drops to 0, it leaves the active tier and is kept
    out of recall unless ``include_invalidated=True``. Nothing is deleted by this call;
    with forgetting on (``forget_enabled``), a later ``maintain()`` deletes it as it
    does any memory below ``forget_below`` it may forget (protected categories and
    important memories stay).

    Memories linked to it at least ``policy.invalidate_link_weight`` strongly lose
    activation too (times ``policy.invalidate_link_factor``; never raised) and are
    flagged for review (``stats()["flagged_for_review"]`` and their ``why``).
    Invalidating a memory that already is changes nothing (a retry does not lower its
    neighbours again). A memory it had superseded waits on the next valid statement
    of the chain, or, with none, is current again (its importance floor back); a
    summary holding it as an original goes (its other originals back to the archive).
    """
    reason = check_reason(reason)
    ns = self._ns(namespace)
    with self._lock:
        self._check_open()
        space = self._space(ns)
        policy = self.policy_for(ns)
        st = space.state
        i = self._row(space, memory_id)
        if st.cols["invalidated"][i]:
            return
        now = self._now(ns)
        with self._consistent(ns):
            before = float(self._activation(ns, st, now, np.asarray([i]))[0])
            st.cols["invalidated"][i] = True
            self._set_activation(st, i, 0.0, now, 0.0, count_access=False)
            detail = {"reason": reason} if reason else {}
            journal: list[JournalRow] = [(memory_id, "invalidate", before, 0.0, detail)]
            rows = [i]
            flags: dict[str, str | None] = {memory_id: None}
            # a wrong summary says nothing of its originals: they come back to the
            # archive instead (and are not compressed again), unflagged
            originals = dict.fromkeys(space.summaries.get(memory_id, []), memory_id)
            near = [
                m
                for m, w in space.graph.neighbours(memory_id).items()
                if w >= policy.invalidate_link_weight
                and m in st.index
                and m not in originals
                and not st.cols["invalidated"][st.index[m]]
            ]
            if near:
                nrows = [st.index[m] for m in near]
                acts = self._activation(ns, st, now, np.asarray(nrows, dtype=np.int64))
                for m, r, a in zip(near, nrows, acts, strict=True):
                    lowered = float(a) * policy.invalidate_link_factor
                    self._set_activation(st, r, lowered, now, 0.0, count_access=False)
                    why = f"linked to invalidated memory {memory_id}"
                    flags[m] = space.review[m] = why
                    journal.append((m, "review", float(a), lowered, {"reason": why}))
                rows += nrows
            space.review.pop(memory_id, None)
            why = "an original was invalidated"
            outdated = dict.fromkeys(self._summaries_of(space, {memory_id}), why)
            with self._db.transaction(durable=True) as conn:  # synced as it returns
                if st.cols["tier"][i] == Tier.ACTIVE:
                    st.cols["tier"][i] = Tier.ARCHIVE
                    space.deactivate([memory_id])
                self._db.save_rows(conn, st, rows)
                self._db.set_review(conn, ns, flags)
                self._db.journal(conn, now, ns, journal)
                # what it had made stale waits on the next valid statement of the
                # chain; none: current again, with its importance floor back
                self._repoint(
                    ns, st, _next_valid(st, {memory_id}), now, conn, "its successor was invalidated"
                )
                if originals:
                    self._free_originals(
                        ns, space, originals, conn, now, "its summary was invalidated"
                    )
                    space.uncompressed.update(originals)
                    self._db.set_meta(f"uncompressed:{ns}", sorted(space.uncompressed), conn)
                self._note_outdated(ns, outdated, conn)
        # a summary stating it would keep saying what is wrong: dropped, its other
        # originals back to the archive (as for an edit of one)
        self._drop_summaries(ns, space, outdated, now)


def forget(self: Oblivion, memory_id: str, *, namespace: str | None = None) -> None:
    """Delete a memory for good (text, vector and state). The journal keeps the event.

    An original of a summary takes the summary with it (the summary says what it
    said); the summary's other originals go back to the archive, to be compressed
    again without it.
    """
    ns = self._ns(namespace)
    with self._lock:
        self._check_open()
        space = self._space(ns)
        i = self._row(space, memory_id)
        # in the same transaction: a failure leaves both
        sids = self._summaries_of(space, {memory_id})
        self._delete(
            ns,
            space,
            [i, *(space.state.index[s] for s in sids)],
            self._now(ns),
            "forget() called",
            reasons=dict.fromkeys(sids, "an original was forgotten"),
        )


def forget_many(
    self: Oblivion,
    memory_ids: Iterable[str],
    *,
    namespace: str | None = None,
    skip_missing: bool = False,
) -> list[str]:
    """:meth:`forget` of each of ``memory_ids`` in one transaction and one vector store
    call (one of each per memory took 13 ms apiece with Chroma on disk); returns the ids
    deleted, in the order given, then any summary that went with its originals. A
    failure deletes none.

    Raises:
        UnknownMemoryError: an id is no memory of the namespace (nothing is deleted),
            unless ``skip_missing``: then it is passed over.
        InvalidInputError: ``memory_ids`` is a string or holds anything but strings.
    """
    if isinstance(memory_ids, str | bytes) or not isinstance(memory_ids, Iterable):
        raise InvalidInputError(
            f"memory_ids must be a list of ids, got {type(memory_ids).__name__}; "
            "forget(id) deletes one"
        )
    ids = list(dict.fromkeys(check_id(m) for m in memory_ids))
    skip_missing = check_flag(skip_missing, "skip_missing")
    ns = self._ns(namespace)
    with self._lock:
        self._check_open()
        space = self._space(ns)
        st = space.state
        if skip_missing:
            ids = [m for m in ids if m in st.index]
        else:
            for m in ids:
                self._row(space, m)  # an unknown one raises, nothing deleted
        return _delete_with_summaries(self, ns, space, ids, "forget() called")


def forget_where(
    self: Oblivion,
    where: Mapping[str, Any] | Filter | None = None,
    *,
    where_document: Mapping[str, Any] | None = None,
    namespace: str | None = None,
) -> list[str]:
    """Delete for good every memory whose metadata and text pass the filters (as
    :meth:`recall` takes them; Chroma's ``collection.delete(where=...)``); returns
    the ids deleted, oldest first, then any summary that went with its originals
    (as :meth:`forget` does). One transaction: a failure deletes none. The journal
    keeps the events. A filter is required: :meth:`clear` deletes a whole
    namespace."""
    filtered = compile_where(where, where_document)
    if filtered is None:
        raise InvalidInputError(
            "forget_where() needs a filter (where= or where_document=); clear() "
            "deletes every memory of a namespace"
        )
    ns = self._ns(namespace)
    with self._lock:
        self._check_open()
        space = self._space(ns)
        st = space.state
        gone = [st.ids[r] for r in self._oldest_first(ns, space, None, filtered).tolist()]
        return _delete_with_summaries(self, ns, space, gone, "forget_where() called")


def _delete_with_summaries(
    self: Oblivion, ns: str, space: Space, ids: list[str], why: str
) -> list[str]:
    """Delete the memories ``ids`` of ``ns`` and the summaries of any of them in one
    transaction (call with the lock); returns ``ids``, then those summaries."""
    chosen = set(ids)
    summaries = [s for s in self._summaries_of(space, chosen) if s not in chosen]
    if ids:
        self._delete(
            ns,
            space,
            [space.state.index[m] for m in [*ids, *summaries]],
            self._now(ns),
            why,
            reasons=dict.fromkeys(summaries, "an original was forgotten"),
        )
    return [*ids, *summaries]


def _drop_summaries(
    self: Oblivion, ns: str, space: Space, sids: Mapping[str, str], now: float
) -> Space:
    """Delete the summaries ``sids`` (id -> why) after a change to one of their originals
    (their other originals go back to the archive, to be compressed again without it);
    returns the namespace's state as it is after. A failure is logged, not raised: the
    change stands, and the summaries noted (:meth:`_note_outdated`) are tried again by
    the namespace's next ``maintain()`` or the store's next open."""
    if not sids:
        return space
    rows = [space.state.index[s] for s in sids if s in space.state.index]
    try:
        if not rows:  # gone already (forgotten meanwhile): only the note is left
            with self._db.transaction() as conn:
                self._clear_outdated(ns, sids, conn)
            return space
        self._delete(
            ns,
            space,
            rows,
            now,
            "an original changed",
            lambda conn: self._clear_outdated(ns, sids, conn),
            reasons=sids,
        )
    except Exception:
        # tried again by maintain() or a reopen, not by each call: a failing delete
        # reloads the namespace (0.3 s a recall at 30k memories), and the reload would
        # take the note back into Space.outdated
        self._drop_failed.add(ns)
        logger.exception(
            "the summaries %s could not be dropped after a change to their originals; "
            "the namespace's next maintain() (or the store's next open) tries again, and "
            "forget() or decompress() of them drops them too",
            sorted(sids),
        )
        return self._space(ns)  # reloaded
    self._drop_failed.discard(ns)
    return self._space(ns)  # rows moved


def _note_outdated(self: Oblivion, ns: str, sids: Mapping[str, str], conn: Any) -> None:
    """Note the summaries ``sids`` (id -> why), made outdated by a change, in that
    change's transaction ``conn``: they are dropped after it commits, and a crash in
    between left each stating an original's old text (or an invalidated or superseded
    fact), its originals cold behind it, for good. The next load puts those noted in
    ``Space.outdated``, which the namespace's next recall, write or ``maintain()``
    drops."""
    if sids:
        self._db.set_meta(f"outdated:{ns}", {**self._noted_outdated(ns), **sids}, conn)


def _clear_outdated(self: Oblivion, ns: str, sids: Iterable[str], conn: Any) -> None:
    """Take ``sids`` out of :meth:`_note_outdated`'s note, in the drop's transaction."""
    noted = self._noted_outdated(ns)
    if noted:
        gone = set(sids)
        left = {s: why for s, why in noted.items() if s not in gone}
        self._db.set_meta(f"outdated:{ns}", left or None, conn)


def _noted_outdated(self: Oblivion, ns: str) -> dict[str, str]:
    """The summaries :meth:`_note_outdated` noted in ``ns`` and not dropped yet."""
    noted: dict[str, str] = self._db.parsed(f"outdated:{ns}", _noted)
    return noted


def _noted(value: Any) -> dict[str, str]:
    """:meth:`_note_outdated`'s meta value read back (``None``: none noted)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"not a map of summary ids to reasons: {value!r:.80}")
    return dict(value)


def _drop_outdated(self: Oblivion, ns: str, now: float) -> None:
    """Drop the summaries a supersession made outdated (``Space.outdated``: an original
    they state is no longer current), once the change that superseded it is done
    (deleting rows in the middle of a write would move the rows it works on)."""
    space = self._spaces.get(ns)
    if space is not None and space.outdated:
        sids, space.outdated = space.outdated, {}
        self._drop_summaries(ns, space, sids, now)


def _next_valid(st: NamespaceState, gone: AbstractSet[str]) -> dict[str, str | None]:
    """Each memory outside ``gone`` whose successor is in ``gone`` (deleted or
    invalidated) -> the next statement of its chain that is still valid (neither in
    ``gone`` nor invalidated), or ``None`` when there is none (it is current again)."""
    invalid = st.cols["invalidated"]
    changes: dict[str, str | None] = {}
    for m, succ in st.superseded_by.items():
        if succ not in gone or m in gone:
            continue
        node: str | None = succ
        seen = {m}
        while (
            node is not None
            and node not in seen
            and (node in gone or node not in st.index or invalid[st.index[node]])
        ):
            seen.add(node)
            node = st.superseded_by.get(node)
        valid = node is not None and node not in seen and node in st.index
        changes[m] = node if valid else None
    return changes


def _summaries_of(space: Space, memory_ids: AbstractSet[str]) -> list[str]:
    """The summaries any of ``memory_ids`` is an original of: its text changes or
    goes, and theirs would keep the old one."""
    return [
        s
        for s, originals in space.summaries.items()
        if s in space.state.index and not memory_ids.isdisjoint(originals)
    ]


def _delete(
    self: Oblivion,
    ns: str,
    space: Space,
    rows: list[int],
    now: float,
    why: str,
    also: Callable[[Any], None] | None = None,
    *,
    reasons: Mapping[str, str] | None = None,
) -> None:
    """Delete memories (``also``: more writes of the same change, in its transaction;
    ``reasons``: journal reasons of some of them, instead of ``why``)."""
    # what Chroma lost is put back first: a forget of a lost one would make the counts
    # agree, and the check after it would look no further (orphans and other lost
    # records stayed until repair_vector_store)
    self._sync.check(ns, space.state)
    self._lex.read_saved(ns)  # before the delete makes the saved BM25 index stale
    with self._consistent(ns):
        st = space.state
        ids = [st.ids[i] for i in rows]
        acts = self._activation(ns, st, now, np.asarray(rows, dtype=np.int64))
        seqs = [int(st.cols["seq"][i]) for i in rows]
        gone = set(ids)
        space.discard_texts(gone)
        # Originals of a deleted summary go back to the archive: nothing is lost silently.
        freed = {o: m for m in ids for o in space.summaries.get(m, []) if o not in gone}
        chroma_touched = False
        try:
            # synced as it returns: a power loss must not bring back what was deleted
            with self._db.transaction(durable=True) as conn:
                if freed:
                    self._free_originals(ns, space, freed, conn, now, why)
                if space.uncompressed & gone:
                    space.uncompressed -= gone
                    self._db.set_meta(f"uncompressed:{ns}", sorted(space.uncompressed), conn)
                for sid, originals in list(space.summaries.items()):
                    if sid in gone:
                        del space.summaries[sid]
                        self._db.set_summary(conn, ns, sid, None)
                    elif gone & set(originals):
                        space.summaries[sid] = [o for o in originals if o not in gone]
                        self._db.set_summary(conn, ns, sid, space.summaries[sid])
                # the next statement of the chain that stays takes the deleted one's
                # place; none (it was the newest): they are current again
                changes = _next_valid(st, gone)
                self._repoint(ns, st, changes, now, conn, "its successor was forgotten")
                self._db.delete_links(conn, ns, ids)
                self._db.set_review(conn, ns, dict.fromkeys(ids))
                self._db.delete(conn, ns, ids)
                self._db.journal(
                    conn,
                    now,
                    ns,
                    [
                        (m, "forget", float(a), None, {"reason": (reasons or {}).get(m, why)})
                        for m, a in zip(ids, acts, strict=True)
                    ],
                )
                if also is not None:
                    also(conn)
                chroma_touched = True  # last: a failure before it leaves Chroma be
                self.store.delete(ns, ids)
        except BaseException:
            if chroma_touched:  # the delete, or the commit after it, failed
                self._restore_in_chroma(ns, st, ids)
            raise
        self._db.scrub()  # the deleted texts' old pages out of the write-ahead log
        self._lex.delete(ns, seqs)
        space.discard(ids)
        for m in ids:
            st.remove(m)
            space.unlink(m)
            space.review.pop(m, None)
        if space.last_write is not None and space.last_write[0] in gone:
            space.last_write = self._last_turn(space)  # as a reopened store finds it


def _restore_in_chroma(self: Oblivion, ns: str, st: NamespaceState, ids: list[str]) -> None:
    """Put memories SQLite still holds back into Chroma (a delete whose transaction
    failed); logged, not raised, if that fails too."""
    try:
        self._sync.put_back(ns, st, ids)
    except Exception as exc:
        self._sync.failed(f"could not put {len(ids)} memories back into Chroma", exc)
        self._sync.doubt(ns, ids)
