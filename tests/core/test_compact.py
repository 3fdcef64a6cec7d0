"""compact_vector_store(): what was deleted leaves Chroma's files (on disk, real model)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from oblivion_core import Oblivion, UnknownNamespaceError
from oblivion_core.embedding import FastEmbedEmbedder
from oblivion_core.testing import memory

MARK = "ZQXMARKER1234"


def _bytes_in(folder: Path, needle: bytes) -> list[str]:
    """The files under ``folder`` holding ``needle``."""
    found = []
    for root, _, files in os.walk(folder):
        for name in files:
            path = Path(root) / name
            if needle in path.read_bytes():
                found.append(str(path.relative_to(folder)))
    return found


def _fill(mem: Oblivion, namespace: str, n: int) -> list[str]:
    texts = [f"Note {i} on the allotment: row {i % 7} needs water." for i in range(n)]
    return [r.id for r in mem.remember_many(texts, namespace=namespace)]


def test_forgotten_memories_leave_chroma_s_files(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """Chroma deletes by marking: a forgotten memory's text stayed in free space of
    chroma/chroma.sqlite3 and its vector in the collection's index file for good (after
    thousands of writes, a close and a reopen). After compact_vector_store() neither is in
    any file of the store, every other memory is recalled as before, through Chroma too,
    and the store reopens whole."""
    path = tmp_path / "mem"
    with Oblivion(path, embedder=real_embedder) as mem:
        kept = _fill(mem, "ana", 60)
        _fill(mem, "bo", 30)
        secret = mem.remember(f"My door code is {MARK}.", namespace="ana", category="fact")
        vector = mem._db.vectors("ana", [secret.id])[secret.id].astype(np.float32).tobytes()
        mem.forget(secret.id, namespace="ana")
        assert _bytes_in(path, MARK.encode())  # Chroma's database still has the text
        assert _bytes_in(path / "chroma", vector)  # and its index the vector
        before = [i.id for i in mem.recall("which row needs water?", namespace="ana", k=5)]
        report = mem.compact_vector_store()
        assert (report.namespaces, report.records, report.vacuumed) == (3, 90, True)
        assert report.folders_removed >= 2
        assert not _bytes_in(path, MARK.encode())
        assert not _bytes_in(path / "chroma", vector)
        assert mem.repair_vector_store(namespace="ana") == {"put_back": 0, "removed": 0}
        assert mem.store.ids("ana") == set(kept)
        again = mem.recall("which row needs water?", namespace="ana", k=5, feedback=False)
        assert [i.id for i in again] == before
        deep = mem.recall("allotment row", namespace="bo", k=3, deep=True, feedback=False)
        assert len(deep) == 3
        mem.remember("A new note after the compaction.", namespace="ana")
    with Oblivion(path, embedder=real_embedder) as mem:
        assert mem.count(namespace="ana") == 61 and mem.count(namespace="bo") == 30
        assert mem.repair_vector_store(namespace="ana") == {"put_back": 0, "removed": 0}


def test_one_namespace_and_an_unknown_one(tmp_path: Path, real_embedder: FastEmbedEmbedder) -> None:
    """namespace= rebuilds that collection only; one never written is refused by name."""
    with Oblivion(tmp_path / "mem", embedder=real_embedder) as mem:
        _fill(mem, "ana", 5)
        _fill(mem, "bo", 4)
        report = mem.compact_vector_store(namespace="bo")
        assert (report.namespaces, report.records) == (1, 4)
        assert "rebuilt 1 collection(s)" in str(report)
        assert report.files == "disk" and "rewrote chroma.sqlite3" in str(report)
    with memory() as mem:  # in memory: no files, no word of a server
        _fill(mem, "ana", 3)
        report = mem.compact_vector_store()
        assert (report.files, report.records, report.vacuumed) == ("memory", 3, False)
        assert str(report).endswith("(3 records)")
    with Oblivion(tmp_path / "mem", embedder=real_embedder) as mem:
        assert mem.store.count("ana") == 5 and mem.store.count("bo") == 4
        with pytest.raises(UnknownNamespaceError, match="'carol' has no memories yet"):
            mem.compact_vector_store(namespace="carol")


def test_a_compaction_killed_after_the_drop_is_finished_by_the_next_open(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """Killed between dropping a collection and writing it again, nothing is lost: the
    next open copies the namespace from the activation database before its first query."""
    path = tmp_path / "mem"
    with Oblivion(path, embedder=real_embedder) as mem:
        ids = _fill(mem, "ana", 20)
    child = textwrap.dedent(
        f"""
        import os
        from oblivion_core import Oblivion
        mem = Oblivion({str(path)!r})
        mem._sync._copy_moved = lambda ns, st: os._exit(9)
        mem.compact_vector_store()
        """
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=300)
    assert done.returncode == 9, done.stderr.decode()[-2000:]
    with Oblivion(path, embedder=real_embedder) as mem:
        hits = mem.recall("allotment water", namespace="ana", k=3, deep=True, feedback=False)
        assert len(hits) == 3
        assert mem.store.ids("ana") == set(ids)


def test_a_compaction_that_fails_half_way_is_finished_before_the_next_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write failing mid-copy (a server outage, a timeout) left the collection holding
    part of the namespace, and recall through Chroma searched that part until a reopen
    or a repair. The namespace is checked again before its next query, which finishes
    the copy."""
    from oblivion_core import Policy, VectorStoreError, vector_sync
    from oblivion_core.testing import HashEmbedder, word_count

    monkeypatch.setattr(vector_sync, "COPY_BATCH", 100)
    mem = Oblivion(
        tmp_path / "mem",
        embedder=HashEmbedder(),
        token_counter=word_count,
        policy=Policy(active_capacity=20, lexical_weight=0.0),
    )
    with mem:
        mem.EXACT_ARCHIVE_ROWS = mem.SKETCH_ARCHIVE_ROWS = mem.ARCHIVE_COPY_TOTAL = 0
        texts = [f"note {k} on garden row {k % 7} item{k}" for k in range(300)]
        mem.remember_many(texts, namespace="ana")
        mem.maintain(namespace="ana")
        query = "note 250 on garden row 5 item250"
        before = [i.id for i in mem.recall(query, namespace="ana", k=3, deep=True, feedback=False)]
        put_back, calls = mem._sync.put_back, []

        def failing(ns: str, st: object, ids: list[str]) -> list[str]:
            calls.append(len(ids))
            if len(calls) == 2:
                raise VectorStoreError("the server went away mid-copy")
            return put_back(ns, st, ids)  # type: ignore[arg-type]

        monkeypatch.setattr(mem._sync, "put_back", failing)
        with pytest.raises(VectorStoreError, match="mid-copy"):
            mem.compact_vector_store(namespace="ana")
        monkeypatch.setattr(mem._sync, "put_back", put_back)
        assert mem.store.count("ana") == 100
        after = [i.id for i in mem.recall(query, namespace="ana", k=3, deep=True, feedback=False)]
        # the note itself first, as before (the rest may differ: Chroma's index is
        # approximate, and one built again links its records otherwise)
        assert after[0] == before[0] == mem.records(namespace="ana")[250].id
        assert mem.store.count("ana") == 300
