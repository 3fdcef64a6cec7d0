"""Crash recovery of the vector store beyond one write's window (test_crash_windows.py):
a damaged Chroma index, a namespace whose first write never committed, an activation
database that lost its last commits, a compaction killed partway. Real embedded Chroma;
processes are killed with SIGKILL where that is how the state arises."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.api.models.Collection import Collection
from chromadb.errors import InternalError

from oblivion_core import Oblivion, VectorStoreError
from oblivion_core.store import collection_name
from oblivion_core.testing import HashEmbedder

from .test_compact import _bytes_in

pytestmark = pytest.mark.integration

MARK = "ZQXSTRAY5521"


def _open(path: Path) -> Oblivion:
    mem = Oblivion(path, embedder=HashEmbedder())
    # recall searches the archive through Chroma, not a copy in process
    mem.EXACT_ARCHIVE_ROWS = mem.SKETCH_ARCHIVE_ROWS = mem.ARCHIVE_COPY_TOTAL = 0
    return mem


def _child(code: str, path: Path, *, killed: bool = True) -> str:
    """Run ``code`` in a process of its own (``mem``: the store at ``path``, open)."""
    script = (
        "import os, signal, sys\n"
        "from oblivion_core import Oblivion\n"
        "from oblivion_core.testing import HashEmbedder\n"
        f"mem = Oblivion({str(path)!r}, embedder=HashEmbedder())\n"
        "def die_after(fn):\n"
        "    def wrapped(*a, **kw):\n"
        "        out = fn(*a, **kw)\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "        return out\n"
        "    return wrapped\n" + textwrap.dedent(code)
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == (-signal.SIGKILL if killed else 0), proc.stderr[-3000:]
    return proc.stdout


def _raw_collections(path: Path) -> dict[str, int]:
    """Collection name -> records, read by a client of its own (the store closed)."""
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        str(path / "chroma"), settings=Settings(anonymized_telemetry=False)
    )
    try:
        return {c.name: c.count() for c in client.list_collections()}
    finally:
        client.close()


# ------------------------------------------------------------ 1. a damaged index
def _texts(n: int) -> list[str]:
    return [f"note {k} on garden row {k % 7} item{k}" for k in range(n)]


def _damage(monkeypatch: pytest.MonkeyPatch, damaged: set[str] | None) -> list[str]:
    """Chroma's query and count of the collections whose id is in ``damaged`` (every
    collection: ``None``) fail as a forget_many killed in Chroma's delete left them:
    "Error finding id", for good. Returns the ids of the queries that failed."""
    failed: list[str] = []
    query, count = Collection.query, Collection.count

    def broken(real: Any) -> Any:
        def call(self: Collection, *args: Any, **kwargs: Any) -> Any:
            if damaged is None or str(self.id) in damaged:
                failed.append(str(self.id))
                raise InternalError("Error executing plan: Internal error: Error finding id")
            return real(self, *args, **kwargs)

        return call

    monkeypatch.setattr(Collection, "query", broken(query))
    monkeypatch.setattr(Collection, "count", broken(count))
    return failed


def test_a_damaged_index_is_made_again_from_the_activation_database_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Every query (and count) of the collection failed with Chroma's InternalError, for
    good, even after a reopen; counts agreed, so no check saw it. The first failure
    makes the collection again from SQLite (what compact_vector_store(namespace=...)
    does), logs a warning, and the query is asked again: recall works."""
    with _open(tmp_path / "mem") as mem:
        mem.remember_many(_texts(300), namespace="ana")
        mem.remember_many(_texts(5), namespace="bo")
        ids = {r.id for r in mem.records(namespace="ana", limit=1000)}
    with _open(tmp_path / "mem") as mem:
        old = mem.store.collection_id("ana")
        failed = _damage(monkeypatch, {old})
        with caplog.at_level(logging.WARNING, logger="oblivion_core"):
            hits = mem.recall("note 250 on garden row 5 item250", namespace="ana", k=3, deep=True)
        assert hits and hits[0].text == "note 250 on garden row 5 item250"
        assert failed  # it was damaged, and is no longer
        assert mem.store.collection_id("ana") != old
        assert mem.store.ids("ana") == ids
        assert "compact_vector_store(namespace=...)" in caplog.text
        assert "damaged" in caplog.text
        assert mem.repair_vector_store(namespace="ana") == {"put_back": 0, "removed": 0}
    with _open(tmp_path / "mem") as mem:  # the copy is the one kept in step
        assert mem.recall("item250", namespace="ana", k=1, deep=True)


def test_a_damaged_index_that_stays_damaged_is_made_again_once_and_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure that persists after the collection was made again is raised, naming
    compact_vector_store(namespace=...) as the fix (not "move chroma/ aside"); the
    collection is not made again on every call."""
    with _open(tmp_path / "mem") as mem:
        mem.remember_many(_texts(200), namespace="ana")
        _damage(monkeypatch, None)
        drops: list[str] = []
        drop = mem.store.drop
        monkeypatch.setattr(
            mem.store, "drop", lambda ns, **kw: (drops.append(ns), drop(ns, **kw))[1]
        )
        for _ in range(3):
            with pytest.raises(VectorStoreError) as err:
                mem.recall("garden row item12", namespace="ana", k=3, deep=True)
            said = str(err.value)
            assert "compact_vector_store(namespace='ana')" in said, said
            assert "move it aside" not in said
        assert drops == ["ana"]
        monkeypatch.undo()
        assert mem.recall("note 12 on garden row 5 item12", namespace="ana", k=1, deep=True)
        assert mem.store.count("ana") == 200


# ------------------------------------------------------------ 2. a stray namespace
# Chroma writes an index file from memory it did not clear (hnswlib): a process that
# held a text may leave it in a later index file. So the text is written, and the store
# compacted, by processes of their own; this one only reads the files.


def test_compaction_drops_the_collection_of_a_namespace_whose_first_write_never_committed(
    tmp_path: Path,
) -> None:
    """A namespace's first write killed after Chroma's add, before SQLite's commit: a
    collection SQLite knows nothing of held its text for good (no check, repair or
    compaction looked at it). compact_vector_store() drops it and says so; another
    store's collection in the same folder is left alone."""
    path = tmp_path / "mem"
    _child(
        'mem.remember("the shed key is under the pot", namespace="ana")\nmem.close()\n',
        path,
        killed=False,
    )
    _child(
        f"""
        mem.store.add = die_after(mem.store.add)
        mem.remember("My locker code is {MARK}.", namespace="stray")
        """,
        path,
    )
    stray, theirs = collection_name("stray"), collection_name("theirs")
    _child(
        f"""
        assert "stray" not in mem.namespaces()
        assert mem.repair_vector_store(namespace="ana") == {{"put_back": 0, "removed": 0}}
        # another store's collection, named as one of this prefix
        other = mem.store.client.create_collection(
            {theirs!r},
            metadata={{
                "oblivion_namespace": "theirs",
                "oblivion_store": "another-store",
                "oblivion_state": "elsewhere:/their/state",
            }},
        )
        other.add(ids=["t1"], embeddings=[[0.1] * 384], documents=["theirs"])
        report = mem.compact_vector_store()
        assert report.dropped == ["stray"], report
        assert "'stray'" in str(report), str(report)
        assert mem.recall("shed key", namespace="ana", k=1)
        assert mem.compact_vector_store().dropped == []  # nothing more to drop
        mem.close()
        """,
        path,
        killed=False,
    )
    assert not _bytes_in(path, MARK.encode())
    left = _raw_collections(path)
    assert stray not in left
    assert left[theirs] == 1
    assert left[collection_name("ana")] == 1


# ------------------------------------------------------------ 3. a lost -wal
def _lose_the_last_commits(path: Path) -> None:
    """301 memories written and committed, the process killed, its -wal lost."""
    _child(
        """
        mem.remember_many([f"late fact {i} about the harbour ferry ticket{i}" for i in range(300)],
                          namespace="a", ids=[f"late{i}" for i in range(300)], supersede=False)
        mem.remember("the user's name is Zed", namespace="a", id="zed")
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        path,
    )
    for suffix in ("-wal", "-shm"):
        Path(f"{path / 'oblivion.sqlite3'}{suffix}").unlink(missing_ok=True)


def test_many_records_of_no_memory_are_kept_not_deleted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After a crash that lost the activation database's -wal, Chroma held 301 records
    of committed memories SQLite no longer knew: the first write deleted them, calling
    them interrupted writes, though they were the only copy. They are kept, with a
    warning saying how many and how to recover or remove them, and recall does not
    show them meanwhile; repair_vector_store(remove_unknown=True) removes them."""
    path = tmp_path / "mem"
    with _open(path) as mem:
        mem.remember_many([f"early fact {i} about the garden" for i in range(5)], namespace="a")
    _lose_the_last_commits(path)
    with _open(path) as mem, caplog.at_level(logging.WARNING, logger="oblivion_core"):
        assert mem.count(namespace="a") == 5
        mem.remember("a write after the crash", namespace="a")
        held = mem.store.ids("a")
        assert len(held) == 6 + 301
        assert "301 records of no memory" in caplog.text
        assert "import_chroma" in caplog.text and "remove_unknown=True" in caplog.text
        hits = mem.recall("harbour ferry ticket7", namespace="a", k=5, deep=True)
        assert all(not h.id.startswith("late") and h.id != "zed" for h in hits)
        assert mem.repair_vector_store(namespace="a") == {"put_back": 0, "removed": 0}
        assert len(mem.store.ids("a")) == 307
        # recovered from the store's own collection
        report = mem.import_chroma(mem.store.collection("a"), namespace="a")
        assert mem.count(namespace="a") == 307, report
        assert mem.get("zed", namespace="a").text == "the user's name is Zed"


def test_many_records_of_no_memory_are_removed_on_request(tmp_path: Path) -> None:
    path = tmp_path / "mem"
    with _open(path) as mem:
        mem.remember_many([f"early fact {i} about the garden" for i in range(5)], namespace="a")
    _lose_the_last_commits(path)
    with _open(path) as mem:
        assert mem.repair_vector_store(namespace="a", remove_unknown=True) == {
            "put_back": 0,
            "removed": 301,
        }
        assert len(mem.store.ids("a")) == 5


def test_a_few_records_of_no_memory_are_still_removed(tmp_path: Path) -> None:
    """One interrupted write's records (a remember_many killed after Chroma's add) are
    removed by the first write, as before."""
    path = tmp_path / "mem"
    with _open(path) as mem:
        mem.remember_many([f"early fact {i} about the garden" for i in range(5)], namespace="a")
    _child(
        """
        mem.store.add = die_after(mem.store.add)
        mem.remember_many([f"batch item {i}" for i in range(40)], namespace="a")
        """,
        path,
    )
    with _open(path) as mem:
        mem.remember("a write after the crash", namespace="a")
        assert len(mem.store.ids("a")) == 6


def test_a_new_namespaces_first_commits_lost_with_the_wal_are_kept_by_compaction(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A lost -wal that took a namespace's first commits leaves a collection SQLite
    never knew, as an interrupted first write does, but of 300 records, their only copy:
    compact_vector_store() dropped it; it is kept with a warning naming the recovery,
    and compact_vector_store(drop_unknown=True) drops it."""
    path = tmp_path / "mem"
    with _open(path) as mem:
        mem.remember("the shed key is under the pot", namespace="ana")
    _child(
        """
        mem.remember_many([f"fact {i} about the harbour" for i in range(300)], namespace="b",
                          supersede=False)
        os.kill(os.getpid(), signal.SIGKILL)
        """,
        path,
    )
    for suffix in ("-wal", "-shm"):
        Path(f"{path / 'oblivion.sqlite3'}{suffix}").unlink(missing_ok=True)
    with _open(path) as mem, caplog.at_level(logging.WARNING, logger="oblivion_core"):
        assert "b" not in mem.namespaces()
        assert mem.compact_vector_store().dropped == []
        assert "namespace 'b' holds 300 records" in caplog.text
        assert "import_chroma" in caplog.text and "drop_unknown=True" in caplog.text
        assert mem.store.client.get_collection(collection_name("b")).count() == 300
        assert mem.compact_vector_store(drop_unknown=True).dropped == ["b"]
        with pytest.raises(ValueError, match="drop_unknown"):
            mem.compact_vector_store(drop_unknown="yes")  # type: ignore[arg-type]


def test_a_damaged_index_made_again_keeps_the_records_kept_as_the_only_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records of no memory kept after a lost -wal (the only copy of those memories)
    were deleted by the automatic remake of a damaged index, which copies SQLite's
    memories only: they are read first and written back."""
    path = tmp_path / "mem"
    with _open(path) as mem:
        mem.remember_many([f"early fact {i} about the garden" for i in range(5)], namespace="a")
    _lose_the_last_commits(path)
    with _open(path) as mem:
        mem.remember("a write after the crash", namespace="a")  # keeps the 301
        assert len(mem.store.ids("a")) == 307
        _damage(monkeypatch, {str(mem.store.collection("a").id)})  # the old one only
        assert mem.store.count("a") == 307  # made again, once (a query would be too)
        assert mem.store.remade == {"a"}
        monkeypatch.undo()
        assert len(mem.store.ids("a")) == 307
        report = mem.import_chroma(mem.store.collection("a"), namespace="a")
        assert mem.get("zed", namespace="a").text == "the user's name is Zed", report


def test_records_of_forgotten_memories_are_removed_however_many(tmp_path: Path) -> None:
    """A chroma/ folder restored from an older copy holds the records of memories
    forgotten since: the journal says they were memories, deleted, so however many
    they are, they go (their texts should not stay on disk)."""
    path = tmp_path / "mem"
    with _open(path) as mem:
        ids = [r.id for r in mem.remember_many(_texts(200), namespace="a")]
    import shutil

    shutil.copytree(path / "chroma", tmp_path / "chroma-copy")
    with _open(path) as mem:
        mem.forget_many(ids[:150], namespace="a")
    shutil.rmtree(path / "chroma")
    shutil.copytree(tmp_path / "chroma-copy", path / "chroma")
    with _open(path) as mem:
        mem.remember("a write after the restore", namespace="a")
        assert len(mem.store.ids("a")) == 51


# ------------------------------------------------------------ 4. a compaction killed
def _secret_store(path: Path) -> bytes:
    """Namespaces ana and bo, and a forgotten memory of bo's: its vector's bytes
    (written in a process of its own, as in 2.)."""
    out = _child(
        f"""
        mem.remember_many([f"note {{k}} on garden row {{k % 7}} item{{k}}" for k in range(30)],
                          namespace="ana")
        mem.remember_many([f"note {{k}} on garden row {{k % 7}} item{{k}}" for k in range(20)],
                          namespace="bo")
        secret = mem.remember("My door code is {MARK}.", namespace="bo")
        import numpy as np
        print(mem._db.vectors("bo", [secret.id])[secret.id].astype(np.float32).tobytes().hex())
        mem.forget(secret.id, namespace="bo")
        mem.close()
        """,
        path,
        killed=False,
    )
    vector = bytes.fromhex(out.strip().splitlines()[-1])
    assert _bytes_in(path / "chroma", vector)
    return vector


@pytest.mark.parametrize("where", ["compact_files", "copy"])
def test_a_compaction_killed_partway_is_finished_on_the_next_open(
    tmp_path: Path, where: str
) -> None:
    """Killed before its files were compacted (or while copying the first namespace,
    the second not yet dropped), the next open finished the copy but left the dropped
    indexes' folders (holding deleted vectors) and did not vacuum. The compaction is
    noted when it starts and finished in full by the next open and first use."""
    path = tmp_path / "mem"
    vector = _secret_store(path)
    kill = (
        "mem.store.compact_files = lambda: os.kill(os.getpid(), signal.SIGKILL)"
        if where == "compact_files"
        else "mem._sync._copy_moved = lambda ns, st: os.kill(os.getpid(), signal.SIGKILL)"
    )
    _child(f"{kill}\nmem.compact_vector_store()\n", path)
    _child(
        """
        mem.EXACT_ARCHIVE_ROWS = mem.SKETCH_ARCHIVE_ROWS = mem.ARCHIVE_COPY_TOTAL = 0
        for ns, n in (("ana", 30), ("bo", 20)):
            assert len(mem.recall("garden row", namespace=ns, k=3, deep=True)) == 3
            assert mem.store.count(ns) == n
        mem.close()
        """,
        path,
        killed=False,
    )
    assert not _bytes_in(path / "chroma", vector)
    assert not _bytes_in(path, MARK.encode())
    with _open(path) as mem:
        assert mem.repair_vector_store(namespace="bo") == {"put_back": 0, "removed": 0}


def test_a_compaction_left_noted_until_its_drops_succeed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Finishing a compaction at open swallowed a failed drop (a locked Chroma
    database), copied into the old collection and cleared its note: the deleted vectors
    stayed in the files. The drop that fails is said, and the note stays for the next
    open, which finishes it."""
    from oblivion_core.vector_sync import COMPACTING

    path = tmp_path / "mem"
    vector = _secret_store(path)
    kill = "mem._sync._copy_moved = lambda ns, st: os.kill(os.getpid(), signal.SIGKILL)"
    _child(f"{kill}\nmem.compact_vector_store()\n", path)

    def locked(self: Any, name: str) -> None:
        raise InternalError("database is locked")

    monkeypatch.setattr(chromadb.api.client.Client, "delete_collection", locked)
    with caplog.at_level(logging.WARNING, logger="oblivion_core"), _open(path) as mem:
        assert mem._db.meta(COMPACTING) is not None  # left for the next open
    assert "could not finish a compact_vector_store()" in caplog.text
    monkeypatch.undo()
    _child(
        """
        mem.EXACT_ARCHIVE_ROWS = mem.SKETCH_ARCHIVE_ROWS = mem.ARCHIVE_COPY_TOTAL = 0
        assert len(mem.recall("garden row", namespace="bo", k=3, deep=True)) == 3
        mem.close()
        """,
        path,
        killed=False,
    )
    assert not _bytes_in(path / "chroma", vector)


def test_a_servers_internal_error_is_not_called_a_damaged_index() -> None:
    """Only embedded Chroma's index is made again; a server's InternalError ("executing
    plan", a log service timing out) was reported as a damaged index to rebuild."""
    from oblivion_core import VectorStore

    store = VectorStore(chromadb.EphemeralClient(), prefix="srv-")  # as a server's client
    said = str(
        store._error(
            InternalError("Error executing plan: timed out waiting for log service"),
            "query the collection",
            "a",
        )
    )
    assert "Chroma's index" not in said and "compact_vector_store" not in said
