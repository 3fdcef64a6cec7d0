"""Moving a store to another vector store (an embedded store outgrowing one machine, to a
Chroma server, and back): the state folder opened with another ``vector_store=`` copies
each namespace's memories there from the activation database, and a copy left by an
earlier move is replaced, not trusted."""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest

from oblivion_core import ManualClock, Oblivion, VectorStore, VectorStoreError
from oblivion_core.state import StateDB
from oblivion_core.store import _settings, collection_name
from oblivion_core.testing import memory

DAY = 86_400.0
OFFICE = [f"office note {i}: the {w} key is in drawer {i}" for i, w in enumerate("abcdefghij")]


def _open(path: Path, store: VectorStore | None = None) -> Oblivion:
    return memory(path, vector_store=store)


def _records(store: VectorStore, namespace: str) -> dict[str, tuple[np.ndarray, str, Any]]:
    """What ``store`` holds for ``namespace``: id -> (vector, document, metadata)."""
    name = store.prefix + collection_name(namespace)
    got = store.client.get_collection(name).get(include=["embeddings", "documents", "metadatas"])
    return {
        i: (np.asarray(e), d, m)
        for i, e, d, m in zip(
            got["ids"], got["embeddings"], got["documents"], got["metadatas"], strict=True
        )
    }


def _assert_holds_the_state(mem: Oblivion, store: VectorStore, namespace: str) -> None:
    """``store`` holds exactly the namespace's memories, each with the vector SQLite keeps,
    its text and its category."""
    held = _records(store, namespace)
    records = {r.id: r for r in mem.records(namespace=namespace)}
    assert set(held) == set(records)
    vectors = mem._db.vectors(namespace, list(records))
    for memory_id, (vector, document, meta) in held.items():
        np.testing.assert_allclose(vector, vectors[memory_id], rtol=1e-6, atol=1e-7)
        assert document == records[memory_id].text
        assert meta == {"category": records[memory_id].category}


def _write(mem: Oblivion) -> None:
    mem.remember_many(OFFICE)
    mem.remember("Dana's sister lives in Porto", namespace="dana")
    mem.remember("Dana prefers tea to coffee", namespace="dana")


def test_opened_with_another_vector_store_every_namespace_is_copied_there(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Each namespace is copied on its first use, each copy as an information, not a
    warning about lost records; the move itself is one warning naming both places (a
    copy of every memory, under the engine's lock). ``repair_vector_store`` reports what
    its own load copied."""
    first = VectorStore.embedded(tmp_path / "first")
    with _open(tmp_path / "state", first) as mem:
        _write(mem)
    second = VectorStore.embedded(tmp_path / "second")
    caplog.set_level(logging.INFO, logger="oblivion_core")
    mem = _open(tmp_path / "state", second)
    try:
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 2, "removed": 0}
        (moved,) = [r for r in caplog.records if "were kept in" in r.getMessage()]
        assert moved.levelno == logging.WARNING
        assert f"kept in Chroma on disk at {str(tmp_path / 'first')!r}" in moved.getMessage()
        assert f"now are in Chroma on disk at {str(tmp_path / 'second')!r}" in moved.getMessage()
        assert mem.recall("office key drawer", k=1).texts[0].startswith("office note")
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}  # copied at load
        for namespace in ("default", "dana"):
            _assert_holds_the_state(mem, second, namespace)
        copied = [r for r in caplog.records if r.getMessage().startswith("copying the")]
        assert [r.levelno for r in copied] == [logging.INFO, logging.INFO]
        assert [r for r in caplog.records if r.levelno >= logging.WARNING] == [moved]
    finally:
        mem.close()
    caplog.clear()
    with _open(tmp_path / "state", second):
        pass  # the same place again: nothing moved
    assert not caplog.records


def test_moving_back_replaces_the_copy_left_there(tmp_path: Path) -> None:
    """Back in the first vector store, its records from before the move are stale (an
    edit's old vector, a forgotten memory): they are all written again from SQLite."""
    first = VectorStore.embedded(tmp_path / "first")
    with _open(tmp_path / "state", first) as mem:
        _write(mem)
        edited, gone = mem.records()[:2]
    with _open(tmp_path / "state", VectorStore.embedded(tmp_path / "second")) as mem:
        mem.edit(edited.id, "the spare key moved to the blue box")
        mem.forget(gone.id)
        added = mem.remember("the printer code is 4521")
    stale = _records(first, "default")
    assert gone.id in stale and added.id not in stale  # what the first store still holds
    with _open(tmp_path / "state", first) as mem:
        assert mem.repair_vector_store() == {"put_back": len(OFFICE), "removed": 1}
        _assert_holds_the_state(mem, first, "default")
        assert _records(first, "default")[edited.id][1] == "the spare key moved to the blue box"
        assert mem.recall("printer code", k=1).ids == [added.id]


def test_a_namespace_emptied_meanwhile_leaves_no_records_behind(tmp_path: Path) -> None:
    """A namespace cleared after a move holds no memory to copy back, and its records in
    the older copy are removed all the same."""
    first = VectorStore.embedded(tmp_path / "first")
    with _open(tmp_path / "state", first) as mem:
        _write(mem)
    with _open(tmp_path / "state", VectorStore.embedded(tmp_path / "second")) as mem:
        assert mem.clear(namespace="dana") == 2
    assert len(_records(first, "dana")) == 2
    with _open(tmp_path / "state", first) as mem:
        assert not mem.load(namespace="dana")  # its first use (not loaded before)
        assert first.ids("dana") == set()
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 0, "removed": 0}


def test_a_move_left_unfinished_is_finished_by_the_next_process(tmp_path: Path) -> None:
    """A namespace not used before the store closed is still copied, by the next open:
    the list of those left is kept in the state database."""
    first = VectorStore.embedded(tmp_path / "first")
    with _open(tmp_path / "state", first) as mem:
        _write(mem)
        (sister,) = mem.recall("sister Porto", namespace="dana", k=1)
    with _open(tmp_path / "state", VectorStore.embedded(tmp_path / "second")) as mem:
        mem.edit(sister.id, "Dana's sister moved to Braga", namespace="dana")
    with _open(tmp_path / "state", first) as mem:  # back, and only "default" used
        assert mem.recall("office key", k=1)
    with _open(tmp_path / "state", first) as mem:
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 2, "removed": 0}
        _assert_holds_the_state(mem, first, "dana")
        assert mem._db.meta(StateDB.VECTOR_STORE_COPYING) == []


def test_a_store_folder_moved_whole_is_not_a_move(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The default ``chroma/`` goes with the state folder: a renamed folder copies nothing."""
    with _open(tmp_path / "one") as mem:
        _write(mem)
    shutil.move(tmp_path / "one", tmp_path / "two")
    with caplog.at_level(logging.INFO, logger="oblivion_core"), _open(tmp_path / "two") as mem:
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}
        assert mem.recall("Porto", namespace="dana", k=1).texts == ["Dana's sister lives in Porto"]
    assert not caplog.records


def test_the_folder_beside_the_state_given_as_a_vector_store_is_no_move(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``VectorStore.embedded(path / "chroma")`` is where the store keeps its vectors by
    default: given it explicitly (or not), nothing moved."""
    with _open(tmp_path / "state") as mem:
        _write(mem)
    caplog.set_level(logging.INFO, logger="oblivion_core")
    beside = VectorStore.embedded(tmp_path / "state" / "chroma")
    assert beside.folder == (tmp_path / "state" / "chroma").resolve()
    with _open(tmp_path / "state", beside) as mem:
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 0, "removed": 0}
    with _open(tmp_path / "state") as mem:
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 0, "removed": 0}
    assert not caplog.records


def test_a_client_that_does_not_say_where_is_never_taken_for_a_move(tmp_path: Path) -> None:
    """An in-memory client has no place to compare: opening with one records nothing,
    and the next open with the store's place copies nothing it still holds."""
    # (one in-process system for every EphemeralClient: a prefix of its own)
    in_memory = VectorStore(
        chromadb.EphemeralClient(settings=_settings()), prefix=uuid.uuid4().hex[:8]
    )
    assert in_memory.location is None
    first = VectorStore.embedded(tmp_path / "first")
    with _open(tmp_path / "state", first) as mem:
        _write(mem)
    with _open(tmp_path / "state", in_memory) as mem:
        assert mem._db.meta(StateDB.VECTOR_STORE) == first.location
    with _open(tmp_path / "state", first) as mem:
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}


def test_a_copy_that_fails_is_finished_by_a_later_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new vector store failing during a namespace's copy loses nothing: the copy is
    tried again (here by ``repair_vector_store``) until it is done."""
    with _open(tmp_path / "state", VectorStore.embedded(tmp_path / "first")) as mem:
        _write(mem)
    second = VectorStore.embedded(tmp_path / "second")
    add = VectorStore.add
    fail = [True]

    def flaky(self: VectorStore, *args: Any, **kwargs: Any) -> None:
        if fail.pop() if fail else False:
            raise VectorStoreError("the disk is full")
        add(self, *args, **kwargs)

    monkeypatch.setattr(VectorStore, "add", flaky)
    with _open(tmp_path / "state", second) as mem:
        assert mem.count(namespace="dana") == 2
        assert mem.recall("Porto", namespace="dana", k=1).texts == [
            "Dana's sister lives in Porto"
        ]  # answered from the state while the copy waits
        assert mem.repair_vector_store(namespace="dana")["put_back"] == 2
        _assert_holds_the_state(mem, second, "dana")


@pytest.mark.server
@pytest.mark.integration
def test_an_embedded_store_moves_to_a_chroma_server(
    tmp_path: Path, chroma_server: tuple[str, int], real_embedder: Any
) -> None:
    """The real model's store, written on disk, then opened with a server: every memory
    is on the server, and a recall that searches the archive there finds one."""
    clock = ManualClock()
    with Oblivion(tmp_path / "state", clock=clock, embedder=real_embedder) as mem:
        chat = mem.remember("lovely sunny weather in Lisbon", category="small_talk")
        mem.remember("Always answer in British English", category="instruction")
        mem.remember_many(OFFICE)
        clock.advance(5 * DAY)
        assert chat.id in mem.maintain().archived
    host, port = chroma_server
    prefix = uuid.uuid4().hex[:8]
    server = VectorStore.server(host, port, prefix=prefix)
    assert server.location == (
        f"the Chroma server at {host}:{port} (tenant 'default_tenant', database "
        f"'default_database'), prefix {prefix!r}"
    )
    with Oblivion(
        tmp_path / "state", vector_store=server, clock=clock, embedder=real_embedder
    ) as mem:
        for namespace in mem.namespaces():
            mem.repair_vector_store(namespace=namespace)
        _assert_holds_the_state(mem, server, "default")
        mem.EXACT_ARCHIVE_ROWS = mem.SKETCH_ARCHIVE_ROWS = 0  # the archive on the server
        assert mem.recall("is it sunny in Lisbon?", deep=True, k=1).ids == [chat.id]
        assert mem.stats()["archive_search"] == "chroma"
