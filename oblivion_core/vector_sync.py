"""Keeping the vector store holding exactly the memories the state database holds.

SQLite (:mod:`state`) is the record of what a store remembers, and it keeps every
memory's vector and text; Chroma (:mod:`store`) holds a copy to search. The two can
disagree after a crash between a write's Chroma call and its commit, a failed change
whose Chroma call could not be undone, a ``chroma/`` folder deleted or restored from an
older backup, a server that lost its data, or a store opened with another vector store
than before (moved to a server, or back). :class:`VectorSync` finds each case and puts
Chroma right from SQLite: records put back, records of no memory removed, records a
failed edit changed written again, every record copied after a move. The engine calls it
when a namespace is loaded, before a query reads Chroma, and from
``Oblivion.repair_vector_store``; it runs under the engine's lock.

A move is told by where the vectors are (:attr:`VectorStore.location`), which names a
server by the address it was given: the same server under another address (``localhost``
and ``127.0.0.1``, a DNS alias, a Docker name) reads as another place. So the state
database also records, for each namespace, Chroma's id of the collection kept in step
with it (:meth:`VectorStore.collection_id`; Chroma gives each collection its own when it
makes it). At another place, a namespace's collection that has that id, as many records
as the namespace has memories, and every one of them as SQLite holds it (vector, text,
category: read back, which costs less than the copy it spares) is the one kept before,
reached under another address: nothing is copied. A copy an earlier move left there was
made with another id, and is written again; so is a namespace whose collection's id was
never recorded (a store written by an older version), or recorded at a place the vectors
were not last kept at (a backup's record of the original's collections). A copy of a
Chroma store's files (a ``chroma/`` folder copied, a server's data restored) keeps its
collections' ids: given as another place, it is used as it is only if every record
agrees, and written again otherwise (edits made after the copy leave its count as it
was).

A load compares counts only (one call; comparing ids would read every id of a large
namespace on each load): a ``chroma/`` folder restored from an older copy that holds as
many records as SQLite does memories (as many forgotten since as written) passes it.
``repair_vector_store()`` compares ids and puts that right; run it after restoring a
vector store from a copy. (Records whose text an edit changed since keep the copy's
vectors: restore a store from ``Oblivion.backup()``, which fills its vector store from
the vectors it holds, rather than from a copy of its ``chroma/`` folder.)

Records of no memory are removed by a check when they are few (what one interrupted
write leaves) or the journal saw them (memories forgotten since); more that it never saw
may be memories the activation database lost (its ``-wal`` lost after a crash), and are
kept, with a warning (:meth:`VectorSync._drop_orphans`). A collection whose index
embedded Chroma reports damaged on a query or count is made again from SQLite, once per
namespace (:meth:`VectorSync.remake`). A ``compact_vector_store()`` a process left
unfinished is finished when the store next opens (:meth:`VectorSync._finish_compaction`).
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from oblivion_core.backup import BACKUP_PLACE
from oblivion_core.checks import stored_dim, stored_ids
from oblivion_core.errors import OblivionError, StoreCorruptError, VectorStoreError
from oblivion_core.state import NamespaceState, StateDB
from oblivion_core.store import VectorStore

logger = logging.getLogger("oblivion_core")
#: Memories read from SQLite per batch when copied to a new vector store.
COPY_BATCH = 5_000
#: Meta key of a ``compact_vector_store()`` under way (:meth:`VectorSync.begin_compaction`):
#: ``[place, namespaces not yet dropped, whether over the whole store]``.
COMPACTING = "vector_store_compacting"
#: Records of no memory a check removes without asking, at most: what one interrupted
#: write leaves, as a rule; more may be memories the activation database lost (see
#: :meth:`VectorSync._drop_orphans`). A namespace's 5 % if more.
ORPHANS_REMOVED = 64


def _kept(value: Any) -> tuple[str, str] | None:
    """``(place, collection id)`` of a :attr:`StateDB.VECTOR_STORE_COLLECTION` value, or
    ``None`` for one not of that shape (it only spares a copy: one not trusted is made)."""
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) and v for v in value):
        return value[0], value[1]
    return None


def _same_vector(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any]) -> bool:
    """Whether the vector store's ``a`` is SQLite's ``b`` (float32 round trips aside)."""
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=0, atol=1e-5))


class VectorSync:
    """Puts a vector store right from the state database (see the module doc).

    Attributes:
        moving: namespaces whose records are still to be copied to the vector store
            this store moved to (:meth:`note_move`).
        due: namespaces with a resync note left to act on (:meth:`resync`) before the
            next Chroma query.
    """

    def __init__(self, db: StateDB, store: VectorStore) -> None:
        self._db = db
        self.store = store
        self.moving: set[str] = set()
        self.due: set[str] = set()
        #: Where the vectors are kept (:meth:`note_move`); ``None``: a client that does
        #: not say, whose collections' ids are not recorded.
        self.here: str | None = None
        #: Where they were kept before, when this process found them moved and that place
        #: held collections of this store's (their ids were recorded there).
        self._before: str | None = None
        self._told = False  # the move (or the same place under another address) was told
        #: Collection ids recorded (or queued) by namespace, and those queued: written
        #: with the next transaction (:meth:`_carry`), as a collection may be opened
        #: inside one.
        self._ids: dict[str, str] = {}
        self._queued: dict[str, str] = {}
        # through a weak reference: the database and the store would otherwise keep this
        # object (and the database, whose collection releases the store's lock) alive
        me = weakref.ref(self)
        carried = db.carry_meta

        def carry() -> dict[str, str]:
            rows = carried() if carried is not None else {}
            sync = me()
            return rows | sync._carry() if sync is not None else rows

        def opened(ns: str, col: Any) -> None:
            sync = me()
            if sync is not None:
                sync._opened(ns, col)

        def damaged(ns: str) -> bool:
            sync = me()
            return sync is not None and sync.remake(ns)

        #: The namespace states last handed to this object, by namespace: what a
        #: collection found damaged in a query is made again from (:meth:`remake`).
        self._states: weakref.WeakValueDictionary[str, NamespaceState] = (
            weakref.WeakValueDictionary()
        )
        db.carry_meta = carry
        store.on_open = opened
        store.on_damaged = damaged

    def _carry(self) -> dict[str, str]:
        """The collection ids queued since the last transaction, as meta rows (JSON)."""
        if not self._queued or self.here is None:
            return {}
        rows = {
            StateDB.VECTOR_STORE_COLLECTION + ns: json.dumps([self.here, found])
            for ns, found in self._queued.items()
        }
        self._queued.clear()
        return rows

    def _opened(self, ns: str, col: Any) -> None:
        """The store opened (or made) the collection of ``ns``: its id is recorded as
        the one kept in step with the state database here, unless ``ns`` is still to be
        copied here (its record is then the collection kept before)."""
        if self.here is None or ns in self.moving:
            return
        try:
            found = str(col.id)
        except Exception:  # a client whose collections have no id: nothing recorded
            return
        if self._ids.get(ns) != found:
            self._ids[ns] = self._queued[ns] = found

    def _record(self, ns: str, found: str | None, conn: Any) -> None:
        """Record in transaction ``conn`` that the collection of ``ns`` here is the one
        whose id is ``found`` (``None``: none is known to be kept in step)."""
        self._queued.pop(ns, None)
        key = StateDB.VECTOR_STORE_COLLECTION + ns
        if found is None or self.here is None:
            self._ids.pop(ns, None)
            conn.execute("DELETE FROM meta WHERE key=?", (key,))
        else:
            self._ids[ns] = found
            self._db.set_meta(key, [self.here, found], conn)

    def failed(self, what: str, exc: BaseException) -> None:
        """Log that a clean-up (``what``) failed with ``exc``, its records noted to put
        right: an unreachable vector store as :meth:`outage` tells it, any other error
        (a bug) at ERROR with its trace."""
        if isinstance(exc, VectorStoreError):
            self.outage(what, exc)
        else:
            logger.error(what, exc_info=exc)

    def outage(self, what: str, exc: BaseException) -> None:
        """Tell that the vector store could not be reached for ``what``, whose records
        are put right before its next query: one warning line per outage (every call
        of a server's requests met one, each with a 90-line traceback), the rest and
        the tracebacks at DEBUG."""
        first = str(exc).split(". ", 1)[0]
        if self.store.outage_told:
            logger.debug("%s (the vector store is still out of reach)", what, exc_info=exc)
            return
        self.store.outage_told = True
        logger.warning(
            "%s: %s. What it missed is put right before its next query; until it answers "
            "again, more such failures are logged at DEBUG only",
            what,
            first,
        )
        logger.debug("the vector store's error", exc_info=exc)

    def note_move(self, here: str | None) -> None:
        """Record where the vectors are kept now (``here``, :attr:`VectorStore.location`
        or ``None`` for a client that does not say). When that is a new place (the state
        folder opened with another vector store: an embedded store moved to a server),
        every namespace's records are to be copied there on first use (:attr:`moving`),
        unless its collection there is the one kept before (:meth:`_same_collection`:
        the same server under another address); the list is kept in the state database
        until each is done, so a move a process left unfinished is finished by the next.
        A real move is told at WARNING, once, when the first namespace is copied."""
        if here is None:  # in memory, or a client that does not say where
            return
        self.here = here
        before = self._db.meta(StateDB.VECTOR_STORE)
        if before == here:
            self.moving = set(self._db.parsed(StateDB.VECTOR_STORE_COPYING, stored_ids))
            self._finish_compaction()
            return
        if self._db.meta(COMPACTING) is not None:  # another place's: its files are not here
            with self._db.transaction(durable=True) as conn:
                self._db.set_meta(COMPACTING, None, conn)
        moving = set(self._db.namespaces()) if isinstance(before, str) else set()
        # the collection ids recorded where the vectors were kept last still name the
        # collections in step with this database (a namespace is copied, or found to be
        # the same collection, before any write here): carried over to this place. Any
        # other (a backup's, naming its original's, whose place the backup was not
        # kept at) is dropped: it would name a collection that moved on since
        recorded = self._db.metas(StateDB.VECTOR_STORE_COLLECTION)
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(StateDB.VECTOR_STORE, here, conn)
            self._db.set_meta(StateDB.VECTOR_STORE_COPYING, sorted(moving), conn)
            for ns, value in recorded.items():
                kept = _kept(value)
                ok = kept is not None and isinstance(before, str) and kept[0] == before
                self._record(ns, kept[1] if ok and kept is not None else None, conn)
        self._ids.clear()
        if moving:
            # a backup opened is copied as it is meant to be: no warning for it
            restored = isinstance(before, str) and before.startswith(BACKUP_PLACE)
            self._before = None if restored else before
            logger.debug(
                "this store's vectors were kept in %s and now are in %s: each namespace's "
                "collection there is checked on its first use, and its memories copied "
                "unless it is the collection kept before",
                before,
                here,
            )
        self.moving = moving

    def _same_collection(self, ns: str, st: NamespaceState) -> bool:
        """Whether the collection of ``ns`` (still to be copied here, :attr:`moving`)
        is the one kept in step before, reached under another address: Chroma's id for
        it is the one recorded, it holds as many records as ``ns`` has memories, and
        every one of them is as SQLite holds it (:meth:`_in_step`). If so, ``ns`` is no
        longer to be copied."""
        if self.here is None:
            return False
        kept = _kept(self._db.meta(StateDB.VECTOR_STORE_COLLECTION + ns))
        if kept is None or kept[0] != self.here:
            return False
        # counted first: a damaged index is made again by the count (VectorStore._remake),
        # under another id
        if self.store.count(ns) != st.n or self.store.collection_id(ns) != kept[1]:
            return False
        # every record read back and compared: a copy of Chroma's files (a chroma/ folder
        # copied, a server's data restored on another host) keeps the ids, and after edits
        # alone its count agrees; a sample of 8 found 4 stale edits of 40 once in 10.
        # Reading is still cheaper than the copy it spares (Chroma's add rebuilds its index)
        if not self._in_step(ns, st):
            return False
        self.moving.discard(ns)
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(StateDB.VECTOR_STORE_COPYING, sorted(self.moving), conn)
            self._record(ns, kept[1], conn)
        if not self._told:
            self._told = True
            logger.info(
                "%s holds the collections this store kept%s (the same Chroma collections, "
                "by their ids, reached under another address): nothing is copied",
                self.here,
                f" in {self._before}" if self._before else "",
            )
        return True

    def _tell_move(self) -> None:
        """Warn, once, as the first namespace is copied, that this process found the
        vectors moved to another place."""
        if self._told or self._before is None:
            return
        self._told = True
        logger.warning(
            "this store's vectors were kept in %s and now are in %s: each namespace's "
            "memories are copied there from the activation database on its first use, "
            "unless its collection there is the one kept before, every record the same "
            "(the same server under another address); repair_vector_store(namespace=...) "
            "does one now",
            self._before,
            self.here,
        )

    def restore_lost(
        self,
        ns: str,
        st: NamespaceState,
        held: set[str] | None = None,
        *,
        remove_unknown: bool = False,
    ) -> tuple[int, int]:
        """Put back into the vector store the memories of ``ns`` it lost, from the
        vectors SQLite keeps: a ``chroma/`` folder deleted or restored from an older
        backup (when its count differs, see the module doc), a server's collection
        dropped, a crash between a delete's Chroma call and its commit. Unchecked,
        recall through Chroma silently missed them. ``held``: the vector store's ids
        (else its count is compared first); records of no memory are removed. After
        the store moved to another vector store, every memory is copied there instead
        (:meth:`_copy_moved`). Many records of no memory are kept unless
        ``remove_unknown`` (:meth:`_drop_orphans`). Returns how many records were put
        back and how many removed.

        Raises:
            StoreCorruptError: some have no vector in SQLite (a version-1 store).
        """
        checking = held is None  # on a load or before a query, not repair_vector_store()
        self._states[ns] = st
        try:
            if ns in self.moving and not self._same_collection(ns, st):
                self._tell_move()
                # its record dropped first, durably: a copy cut short leaves a collection
                # partly rewritten under the recorded id, whose count may then agree
                self._start_copy(ns)
                return self._copy_moved(ns, st)
            count = self.store.count(ns) if held is None else -1  # (opens the collection)
            if self._other_vectors(ns, st, held):
                self._start_copy(ns)
                return self._copy_moved(ns, st)
            if held is None:
                if count == st.n:  # one call: the usual case costs no more
                    return 0, 0
                held = self.store.ids(ns)
            # records of no memory (a write killed between Chroma's add and its commit):
            # removed, and they no longer hide a lost one from the count
            orphans = self._drop_orphans(ns, st, held, keep_many=not remove_unknown)
        except VectorStoreError as exc:  # a check: recall reports an unreachable server
            if not checking:  # repair_vector_store(): its caller is told
                raise
            self.outage(f"could not check the vector store of {ns!r}", exc)
            self.store.unchecked.add(ns)  # checked again before it is next queried
            return 0, 0
        if orphans and checking:
            logger.warning(
                "the vector store held %d records of no memory of namespace %r (writes "
                "interrupted before their commit); removed them",
                len(orphans),
                ns,
            )
        missing = [m for m in st.ids if m not in held]
        if not missing:
            return 0, len(orphans)
        logger.warning(
            "the vector store lacked %d of the %d memories of namespace %r (a deletion "
            "interrupted before its commit, its folder or collection lost, or an older "
            "copy restored); putting them back from the activation database",
            len(missing),
            st.n,
            ns,
        )
        self._raise_lost(ns, st, len(missing), self.put_back(ns, st, missing))
        return len(missing), len(orphans)

    def _copy_moved(self, ns: str, st: NamespaceState) -> tuple[int, int]:
        """Copy every memory of ``ns`` to the vector store this store moved to (opened
        with another one than before), from SQLite, in batches of :data:`COPY_BATCH`.
        Records already there are written again: a copy an earlier move left (the
        ``chroma/`` folder of a store moved back from a server) may predate edits, and
        one of no memory is removed. Returns how many were copied and how many removed."""
        held = self.store.ids(ns)
        if held and self._other_model(ns, held):
            # another model's vectors (a re-embedded backup opened on the original's
            # vector store): the collection takes vectors of one size only, and is
            # rewritten whole anyway, so it is made again for this store's
            logger.info("the collection of namespace %r holds another model's vectors", ns)
            self.store.drop(ns)
            held = set()
        self._states[ns] = st
        orphans = self._drop_orphans(ns, st, held)
        ids = list(st.ids)
        logger.info(
            "copying the %d memories of namespace %r from the activation database to the "
            "vector store this store moved to%s",
            len(ids),
            ns,
            f" (replacing the {len(held):,} records of an older copy)" if held else "",
        )
        lost: list[str] = []
        for start in range(0, len(ids), COPY_BATCH):
            lost += self.put_back(ns, st, ids[start : start + COPY_BATCH])
        self.moving.discard(ns)
        made = self.store.collection_id(ns) if self.here is not None else None
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(StateDB.VECTOR_STORE_COPYING, sorted(self.moving), conn)
            self._record(ns, made, conn)  # the collection in step with this database now
        self._raise_lost(ns, st, len(ids), lost)
        return len(ids), len(orphans)

    #: Records of a namespace whose vectors are compared with SQLite's when its
    #: collection was last written by another state folder of the store.
    SAMPLE = 8

    def _other_vectors(self, ns: str, st: NamespaceState, held: set[str] | None) -> bool:
        """Whether the collection of ``ns`` holds other vectors than this store's:

        * last written by another state folder of this store (a copy made with
          ``backup(embedder=...)`` opened on this vector store, this store then opened
          again: its vectors are another model's) and a sample of its records holds
          other vectors than SQLite's for the same memories; the sizes may agree, and
          a count then shows nothing;
        * for :meth:`Oblivion.repair_vector_store` (``held`` given), records of another
          size than this store's vectors.

        A store restored from its backup in the original's place, or whose folder moved,
        finds the same vectors there, and nothing is copied."""
        other = self.store.relabelled.pop(ns, None)
        if held and self._other_model(ns, held):
            return True
        if other is None or not st.n:
            return False
        step = max(1, st.n // self.SAMPLE)
        sample = [st.ids[i] for i in range(0, st.n, step)][: self.SAMPLE]
        theirs = self.store.vectors(ns, sample)
        ours = self._db.vectors(ns, list(theirs))
        differ = any(m in ours and not _same_vector(v, ours[m]) for m, v in theirs.items())
        if differ:
            logger.warning(
                "the collection of namespace %r was last written by %s, another state "
                "folder of this store, and holds other vectors than this one's (a copy "
                "with another model's, say): filling it again from the activation database",
                ns,
                other,
            )
        return differ

    def _in_step(self, ns: str, st: NamespaceState) -> bool:
        """Whether the collection of ``ns`` holds exactly its memories, each with SQLite's
        vector, text (unless the store keeps none) and category: read in batches."""
        ids = [st.ids[i] for i in range(st.n)]
        if self.store.ids(ns) != set(ids):
            return False
        for start in range(0, len(ids), COPY_BATCH):
            batch = ids[start : start + COPY_BATCH]
            theirs = self.store.records(ns, batch)
            ours = self._db.vectors(ns, batch)
            texts = self._db.texts(ns, batch) if self.store.documents else {}
            for m in batch:
                if m not in theirs or m not in ours:
                    return False
                vector, document, category = theirs[m]
                if not _same_vector(vector, ours[m]):
                    return False
                if self.store.documents and document != texts.get(m):
                    return False
                if category != st.category(st.index[m]):
                    return False
        return True

    def _start_copy(self, ns: str) -> None:
        """Note ``ns`` as to be copied whole to the vector store (:attr:`moving`), in
        the state database too: a copy a process leaves unfinished is done by the next.
        Its collection is no longer the one in step until the copy is done."""
        self.moving.add(ns)
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(StateDB.VECTOR_STORE_COPYING, sorted(self.moving), conn)
            self._record(ns, None, conn)

    def _other_model(self, ns: str, held: set[str]) -> bool:
        """Whether the vector store's records of ``ns`` are of another size than this
        store's vectors (one record read)."""
        dim = self._db.parsed("dim", stored_dim)
        one = self.store.vectors(ns, [next(iter(held))])
        return dim is not None and any(len(v) != dim for v in one.values())

    @staticmethod
    def _raise_lost(ns: str, st: NamespaceState, tried: int, lost: list[str]) -> None:
        """A StoreCorruptError if ``lost`` (memories the vector store lacked with no
        vector in SQLite to put back: a version-1 store) holds any."""
        if lost:
            raise StoreCorruptError(
                f"the vector store lacked {tried:,} of the {st.n:,} memories of "
                f"namespace {ns!r}, and {len(lost):,} of them have no vector in the "
                "activation database to restore them from (the others were put back); "
                "restore the vector store (the chroma/ folder, or the server's collections) "
                "from a backup"
            )

    def _drop_orphans(
        self, ns: str, st: NamespaceState, held: set[str], *, keep_many: bool = False
    ) -> list[str]:
        """Delete from the vector store the records of ``held`` that are no memory of
        ``ns``; returns their ids.

        ``keep_many``: those the journal knows nothing of are kept when they are more
        than one interrupted write leaves as a rule (:data:`ORPHANS_REMOVED`, or 5 % of
        the namespace), with a warning. A write killed between Chroma's add and its
        commit leaves records of no memory; so does an activation database that lost
        its last commits (its ``-wal`` lost after a crash, an older copy restored), and
        those records are then the only copy of memories it held. Records of memories
        the journal saw (forgotten since: a ``chroma/`` folder restored from an older
        copy) are removed however many. Recall shows no record of no memory."""
        orphans = [m for m in held if m not in st.index]
        bound = max(ORPHANS_REMOVED, st.n // 20)
        if keep_many and len(orphans) > bound:
            seen = self._db.journalled(ns, orphans)
            unknown = [m for m in orphans if m not in seen]
            if len(unknown) > bound:
                orphans = [m for m in orphans if m in seen]
                logger.warning(
                    "the vector store holds %d records of no memory of namespace %r that the "
                    "activation database never recorded: more than one interrupted write "
                    "leaves, so they may be memories the activation database lost (its -wal "
                    "file lost after a crash, or an older copy of it restored), of which "
                    "they are the only copy. They are kept, and recall does not show them. "
                    "To recover them, import the store's own collection: "
                    "mem.import_chroma(mem.store.collection(%r), namespace=%r) (README, "
                    '"Importing a Chroma collection"); to remove them, call '
                    "repair_vector_store(namespace=%r, remove_unknown=True) or "
                    "compact_vector_store(namespace=%r)",
                    len(unknown),
                    ns,
                    ns,
                    ns,
                    ns,
                    ns,
                )
        if orphans:
            self.store.delete(ns, orphans)
        return orphans

    def remake(self, ns: str) -> bool:
        """Make the collection of ``ns`` again from the activation database (as
        ``compact_vector_store(namespace=...)`` does): embedded Chroma found its index
        damaged (:meth:`VectorStore._remake`). Runs under the engine's lock, inside the
        call that queried; not inside a transaction (whose writes would be copied before
        they commit), nor for a namespace whose state was not handed to this object, or
        whose vectors SQLite does not all hold (a version-1 store: Chroma's are the only
        copy of some). Returns whether it was made again."""
        st = self._states.get(ns)
        if st is None or self._db.conn.in_transaction or self._db.vector_count(ns) < st.n:
            return False
        # records of no memory are read first (a get does not go through the damaged
        # index) and written back after: many of them were kept as the only copy of
        # memories the activation database lost (_drop_orphans), and the drop would
        # delete them; few are what an interrupted write left, removed as ever after
        unknown = sorted(self.store.ids(ns) - {st.ids[i] for i in range(st.n)})
        saved = self.store.records(ns, unknown) if unknown else {}
        self.rebuild(ns, st)
        try:
            if saved:
                ids = list(saved)
                self.store.add(
                    ns,
                    ids,
                    np.stack([saved[m][0] for m in ids]),
                    [saved[m][1] or "" for m in ids],
                    [{"category": saved[m][2]} if saved[m][2] else {} for m in ids],
                )
        except BaseException:
            self.store.unchecked.add(ns)  # checked again before the next query
            raise
        return True

    def rebuild(self, ns: str, st: NamespaceState) -> int:
        """Drop the collection of ``ns`` and write it again from the activation database
        (noted first, :meth:`start_compacting`: a process stopped after the drop leaves
        the copy to the next open); returns the records written. One cut short is checked
        again before the next query, which finishes the copy."""
        self.start_compacting(ns)
        try:
            self.store.drop(ns, strict=True)  # not copied into the old one
            copied, _ = self._copy_moved(ns, st)
        except BaseException:
            self.store.unchecked.add(ns)
            raise
        return copied

    # ---------------------------------------------------------------- compaction
    def begin_compaction(self, targets: Sequence[str], *, whole: bool) -> None:
        """Note, durably, that ``compact_vector_store()`` starts over ``targets``
        (``whole``: the whole store): a process stopped partway leaves the rest to the
        next open (:meth:`_finish_compaction`). Not for a client that does not say
        where it keeps its collections (in memory: nothing outlives the process)."""
        if self.here is None:
            return
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(COMPACTING, [self.here, sorted(targets), whole], conn)

    def start_compacting(self, ns: str) -> None:
        """Note ``ns`` as to be copied whole (:meth:`_start_copy`) and no longer among
        the compaction's namespaces still to drop, in one durable transaction: the
        caller drops its collection next."""
        note = self._compaction()
        self.moving.add(ns)
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(StateDB.VECTOR_STORE_COPYING, sorted(self.moving), conn)
            self._record(ns, None, conn)
            if note is not None:
                left = sorted(set(note[1]) - {ns})
                self._db.set_meta(COMPACTING, [note[0], left, note[2]], conn)

    def end_compaction(self) -> None:
        """The compaction is done: its note is cleared."""
        if self._db.meta(COMPACTING) is None:
            return
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(COMPACTING, None, conn)

    def drop_strays(self, known: Iterable[str], *, drop_unknown: bool = False) -> list[str]:
        """Drop this store's collections of namespaces neither ``known`` nor in the
        activation database (:meth:`VectorStore.drop_strays`), with a warning. One of
        more records than an interrupted write leaves as a rule (:data:`ORPHANS_REMOVED`)
        is kept, with a warning, unless ``drop_unknown``: its namespace's first commits
        may be what a lost ``-wal`` took, and it their only copy."""
        names = set(known) | set(self._db.namespaces())
        dropped, kept = self.store.drop_strays(names, None if drop_unknown else ORPHANS_REMOVED)
        if dropped:
            logger.warning(
                "dropped the collection(s) of %d namespace(s) the activation database does "
                "not know (a first write interrupted before its commit): %s",
                len(dropped),
                ", ".join(repr(ns) for ns in dropped),
            )
        for ns, held in sorted(kept.items()):
            logger.warning(
                "the collection of namespace %r holds %d records the activation database "
                "does not know (the namespace's first commits, lost with its -wal file, "
                "say): kept. mem.import_chroma(mem.store.collection(%r), namespace=%r) "
                "brings them back as memories; compact_vector_store(drop_unknown=True) "
                "deletes them",
                ns,
                held,
                ns,
                ns,
            )
        return dropped

    def _compaction(self) -> tuple[str | None, list[str], bool] | None:
        """The note of :meth:`begin_compaction`, or ``None``; one not of its shape (not
        what Oblivion wrote) is dropped: a compaction is only to be finished."""
        value = self._db.meta(COMPACTING)
        if (
            isinstance(value, list)
            and len(value) == 3
            and (value[0] is None or isinstance(value[0], str))
            and isinstance(value[1], list)
            and all(isinstance(v, str) for v in value[1])
        ):
            return value[0], list(value[1]), bool(value[2])
        return None

    def _finish_compaction(self) -> None:
        """Finish a ``compact_vector_store()`` a process left unfinished (stopped
        partway; called as the store opens): the collections it had not yet dropped are
        dropped and noted to be copied from the activation database (with those it was
        copying, when each namespace is first used), this store's collections of no
        namespace dropped (over the whole store), then the files compacted
        (:meth:`VectorStore.compact_files`). One that fails is logged and left to the
        next open."""
        if self._db.meta(COMPACTING) is None:
            return
        note = self._compaction()
        try:
            if note is not None and note[0] == self.here:
                known = set(self._db.namespaces())
                for ns in note[1]:
                    if ns in known:
                        # dropped before the note says so: one that fails stays noted
                        self.store.drop(ns, strict=True)
                        self.start_compacting(ns)
                if note[2]:
                    self.drop_strays(())
                removed, _ = self.store.compact_files()
                logger.warning(
                    "finished a compact_vector_store() a process left unfinished: removed "
                    "%d old index folder(s) and compacted the Chroma database; the "
                    "namespaces it was copying are copied from the activation database on "
                    "first use",
                    removed,
                )
            self.end_compaction()
        except VectorStoreError as exc:
            logger.warning(
                "could not finish a compact_vector_store() a process left unfinished (%s); "
                "it is tried again when the store is next opened (or call "
                "compact_vector_store())",
                exc,
            )

    def put_back(self, ns: str, st: NamespaceState, ids: list[str]) -> list[str]:
        """Add memories SQLite holds to the vector store again, from the vectors SQLite
        keeps; returns those without a stored vector (left out)."""
        vecs = self._db.vectors(ns, ids)
        have = [m for m in ids if m in vecs]
        if have:
            texts = self._db.texts(ns, have)
            self.store.add(
                ns,
                have,
                np.stack([vecs[m] for m in have]),
                [texts[m] for m in have],
                [{"category": st.category(st.index[m])} for m in have],
            )
        return [m for m in ids if m not in vecs]

    def note(self, ns: str, ids: Sequence[str]) -> None:
        """Record, durably, that Chroma's records of ``ids`` are about to change inside a
        transaction that may not commit (see :meth:`resync`)."""
        noted = self._db.parsed(f"resync:{ns}", stored_ids)
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(f"resync:{ns}", sorted(noted | set(ids)), conn)

    def doubt(self, ns: str, ids: Sequence[str]) -> None:
        """Chroma's records of ``ids`` may disagree with SQLite: a failed change could not
        undo its Chroma call either (a record of a write never committed, a forgotten
        memory's record not put back). Noted for :meth:`resync`, before the next Chroma
        query and on the next load; if even the note fails, the next query counts the
        collection's records first (:meth:`refill`)."""
        self.due.add(ns)
        try:
            self.note(ns, ids)
        except Exception:
            logger.warning("could not note the records of %r to put right", ns, exc_info=True)
            self.store.unchecked.add(ns)

    def clear(self, ns: str, ids: Iterable[str]) -> None:
        """Drop ``ids`` from the note of :meth:`note` once Chroma agrees with
        SQLite on them again (others noted, whose put-back failed, stay). Best effort: a
        note left behind only writes SQLite's records again on the next load (the error
        of the call that changed them is the one to report)."""
        try:
            left = self._db.parsed(f"resync:{ns}", stored_ids) - set(ids)
            with self._db.transaction() as conn:
                self._db.set_meta(f"resync:{ns}", sorted(left) or None, conn)
        except OblivionError:
            logger.warning("could not clear the resync note of %r", ns, exc_info=True)

    def resync(self, ns: str, st: NamespaceState, *, strict: bool = False) -> tuple[int, list[str]]:
        """Write again to Chroma, from SQLite, the records a crash may have left as they
        were never committed (an edit killed between Chroma's write and its commit, or
        failed with Chroma out of reach to put it back; :meth:`doubt`), and delete the
        noted records of no memory. Returns how many were written, and the ids deleted
        (whether Chroma held them or not); on failure raises if ``strict``, else logs it
        and tries again before the next Chroma query and on the next load."""
        noted = self._db.parsed(f"resync:{ns}", stored_ids)
        if not noted:
            self.due.discard(ns)
            return 0, []
        order = sorted(noted)
        ids = [m for m in order if m in st.index]
        gone = [m for m in order if m not in st.index]  # noted records of no memory
        try:
            self.put_back(ns, st, ids)
            if gone:
                self.store.delete(ns, gone)
        except VectorStoreError as exc:
            self.due.add(ns)
            if strict:
                raise
            self.outage(f"could not put right {len(noted)} records of {ns!r}", exc)
            return 0, []
        self.due.discard(ns)
        self.clear(ns, noted)
        return len(ids), gone

    def refill(self, ns: str, st: NamespaceState) -> int:
        """Put back what the collection of ``ns`` lacks if the vector store doubts it holds
        every record (:attr:`VectorStore.unchecked`: made again after a server lost its
        data while this instance was open, or not countable when ``ns`` was loaded).
        Without it, recall through Chroma missed every archived memory until a reopen.
        Returns how many were put back."""
        self._states[ns] = st
        if ns in self.due:
            self.resync(ns, st)
        return self.check(ns, st)

    def check(self, ns: str, st: NamespaceState) -> int:
        """Put back what the collection of ``ns`` lost if it is unchecked (a namespace
        loaded since the store opened, see ``Oblivion._load``): before a write to it, and
        (:meth:`refill`) before a query. Returns how many were put back. A check cut
        short by anything but an outage (which :meth:`restore_lost` notes itself) leaves
        the namespace unchecked."""
        self._states[ns] = st
        if ns not in self.store.unchecked:
            return 0
        self.store.unchecked.discard(ns)
        try:
            return self.restore_lost(ns, st)[0]
        except BaseException:
            self.store.unchecked.add(ns)
            raise
