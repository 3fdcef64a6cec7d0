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

A load compares counts only (one call; comparing ids would read every id of a large
namespace on each load): a ``chroma/`` folder restored from an older copy that holds as
many records as SQLite does memories (as many forgotten since as written) passes it.
``repair_vector_store()`` compares ids and puts that right; run it after restoring a
vector store from a copy. (Records whose text an edit changed since keep the copy's
vectors: restore a store from ``Oblivion.backup()``, which fills its vector store from
the vectors it holds, rather than from a copy of its ``chroma/`` folder.)
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np

from oblivion_core.checks import stored_dim, stored_ids
from oblivion_core.errors import OblivionError, StoreCorruptError, VectorStoreError
from oblivion_core.state import NamespaceState, StateDB
from oblivion_core.store import VectorStore

logger = logging.getLogger("oblivion_core")
#: Memories read from SQLite per batch when copied to a new vector store.
COPY_BATCH = 5_000


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
        every namespace's records are to be copied there on first use (:attr:`moving`);
        the list is kept in the state database until each is copied, so a move a process
        left unfinished is finished by the next."""
        if here is None:  # in memory, or a client that does not say where
            return
        before = self._db.meta(StateDB.VECTOR_STORE)
        if before == here:
            self.moving = set(self._db.parsed(StateDB.VECTOR_STORE_COPYING, stored_ids))
            return
        moving = set(self._db.namespaces()) if isinstance(before, str) else set()
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(StateDB.VECTOR_STORE, here, conn)
            self._db.set_meta(StateDB.VECTOR_STORE_COPYING, sorted(moving), conn)
        if moving:
            logger.info(
                "this store's vectors were kept in %s and now are in %s: each namespace's "
                "memories are copied there from the activation database on its first use "
                "(repair_vector_store(namespace=...) copies one now)",
                before,
                here,
            )
        self.moving = moving

    def restore_lost(
        self, ns: str, st: NamespaceState, held: set[str] | None = None
    ) -> tuple[int, int]:
        """Put back into the vector store the memories of ``ns`` it lost, from the
        vectors SQLite keeps: a ``chroma/`` folder deleted or restored from an older
        backup (when its count differs, see the module doc), a server's collection
        dropped, a crash between a delete's Chroma call and its commit. Unchecked,
        recall through Chroma silently missed them. ``held``: the vector store's ids
        (else its count is compared first); records of no memory are removed. After
        the store moved to another vector store, every memory is copied there instead
        (:meth:`_copy_moved`). Returns how many records were put back and how many
        removed.

        Raises:
            StoreCorruptError: some have no vector in SQLite (a version-1 store).
        """
        checking = held is None  # on a load or before a query, not repair_vector_store()
        try:
            if ns in self.moving:
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
            orphans = self._drop_orphans(ns, st, held)
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
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(StateDB.VECTOR_STORE_COPYING, sorted(self.moving), conn)
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
        differ = any(
            m in ours
            and (v.shape != ours[m].shape or not np.allclose(v, ours[m], rtol=0, atol=1e-5))
            for m, v in theirs.items()
        )
        if differ:
            logger.warning(
                "the collection of namespace %r was last written by %s, another state "
                "folder of this store, and holds other vectors than this one's (a copy "
                "with another model's, say): filling it again from the activation database",
                ns,
                other,
            )
        return differ

    def _start_copy(self, ns: str) -> None:
        """Note ``ns`` as to be copied whole to the vector store (:attr:`moving`), in
        the state database too: a copy a process leaves unfinished is done by the next."""
        self.moving.add(ns)
        with self._db.transaction(durable=True) as conn:
            self._db.set_meta(StateDB.VECTOR_STORE_COPYING, sorted(self.moving), conn)

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

    def _drop_orphans(self, ns: str, st: NamespaceState, held: set[str]) -> list[str]:
        """Delete from the vector store the records of ``held`` that are no memory of
        ``ns``; returns their ids."""
        orphans = [m for m in held if m not in st.index]
        if orphans:
            self.store.delete(ns, orphans)
        return orphans

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
        if ns in self.due:
            self.resync(ns, st)
        return self.check(ns, st)

    def check(self, ns: str, st: NamespaceState) -> int:
        """Put back what the collection of ``ns`` lost if it is unchecked (a namespace
        loaded since the store opened, see ``Oblivion._load``): before a write to it, and
        (:meth:`refill`) before a query. Returns how many were put back. A check cut
        short by anything but an outage (which :meth:`restore_lost` notes itself) leaves
        the namespace unchecked."""
        if ns not in self.store.unchecked:
            return 0
        self.store.unchecked.discard(ns)
        try:
            return self.restore_lost(ns, st)[0]
        except BaseException:
            self.store.unchecked.add(ns)
            raise
