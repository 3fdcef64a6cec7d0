"""Compacting the vector store: ``compact_vector_store``.

Part of :class:`~oblivion_core.engine.Oblivion` (a function of the engine assigned in
its class body, as in :mod:`engine_write`). Chroma deletes a record by marking it: its
vector stays in the collection's index file (``data_level0.bin``, in a folder named
after the index) and its document in free space of ``chroma.sqlite3``, for good. Only
a collection made again from what is kept holds nothing else; Chroma then leaves the
old index's folder on disk, and its database keeps the freed pages until a
``VACUUM``. This does all three, and drops the collections this store made for a
namespace the activation database never committed. It is noted in the state database
when it starts, so one a process left unfinished is finished on the next open
(:meth:`VectorSync._finish_compaction`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from oblivion_core.checks import check_flag
from oblivion_core.errors import UnknownNamespaceError
from oblivion_core.progress import progress

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion


@dataclass
class CompactReport:
    """What :meth:`~oblivion_core.Oblivion.compact_vector_store` did.

    ``namespaces``: collections made again; ``records``: records written to them.
    ``folders_removed``: index folders of no collection deleted from the Chroma
    folder; ``vacuumed``: its ``chroma.sqlite3`` rewritten without free space (both
    only for Chroma on disk: a server's files are its own). ``files``: where the
    vector store keeps them: ``"disk"``, ``"server"`` or ``"memory"`` (none, or a
    client that does not say). ``dropped``: the namespaces whose collection (this
    store's) was dropped as the activation database does not know them (a namespace's
    first write interrupted before its commit; only over the whole store).
    """

    namespaces: int = 0
    records: int = 0
    folders_removed: int = 0
    vacuumed: bool = False
    files: str = "disk"
    dropped: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        files = {
            "disk": f"; removed {self.folders_removed} old index folder(s) and rewrote "
            "chroma.sqlite3",
            "server": "; the server's own files are left to it",
            "memory": "",
        }[self.files]
        dropped = (
            "; dropped the collection(s) of "
            + ", ".join(repr(ns) for ns in self.dropped)
            + ", no namespace of the activation database"
            if self.dropped
            else ""
        )
        return (
            f"rebuilt {self.namespaces} collection(s) from the activation database "
            f"({self.records:,} records){dropped}{files}"
        )


def compact_vector_store(
    self: Oblivion, *, namespace: str | None = None, drop_unknown: bool = False
) -> CompactReport:
    """Rid the vector store's files of what was deleted from it: every deleted or
    replaced record's vector and text (``forget``, ``forget_where``, ``clear``, the old
    text of an ``edit``, summaries dropped), which Chroma keeps in its files for good.

    Each namespace's collection (``namespace``: that one only) is dropped and written
    again from the activation database, which holds every memory's vector; for Chroma
    on disk (the default), the folders of the dropped indexes are then deleted and
    ``chroma.sqlite3`` vacuumed. About 1 s per 2,000 memories; other calls on this
    instance wait meanwhile. Over the whole store, the collections this store made for
    a namespace the activation database does not know (its first write interrupted
    between Chroma's add and its commit) are dropped too (:attr:`CompactReport.dropped`);
    one holding more records than such a write leaves as a rule (64) is kept, with a
    warning (its namespace's first commits may be what a lost ``-wal`` took, and it
    their only copy), unless ``drop_unknown=True``. Other stores' collections are left
    alone.

    A process stopped half-way loses nothing, and leaves nothing: the compaction is
    noted when it starts, and the next open finishes it (the collections not yet
    dropped are dropped, the files compacted, and each namespace copied from the
    activation database on its first use, as after a move to another vector store).

    On a Chroma server the collections are made again, but the server's own files (its
    database's free pages, the folders of dropped indexes) are its operator's.

    Raises:
        UnknownNamespaceError: ``namespace`` was never written.
        VectorStoreError: the vector store could not be written; call again (what was
            copied stays, and the rest is copied on first use).
    """
    drop_unknown = check_flag(drop_unknown, "drop_unknown")
    report = CompactReport()
    with self._lock:
        self._check_open()
        targets = [self._ns(namespace)] if namespace is not None else sorted(self._known)
        # noted first: a process stopped partway leaves the rest to the next open
        self._sync.begin_compaction(targets, whole=namespace is None)
        if namespace is None:
            report.dropped = self._sync.drop_strays(self._known, drop_unknown=drop_unknown)
        with progress(len(targets), "compacting the vector store", unit="namespace") as step:
            for ns in targets:
                try:
                    st = self._space(ns).state
                except UnknownNamespaceError:  # the default namespace, never written
                    step(1)
                    continue
                report.records += self._sync.rebuild(ns, st)
                report.namespaces += 1
                step(1)
        report.folders_removed, report.vacuumed = self.store.compact_files()
        self._sync.end_compaction()
        if self.store.folder is None:
            report.files = "memory" if self.store.location is None else "server"
    return report
