"""``Oblivion.backup``: a copy of a store taken while it is in use, opened as a store of
its own with everything the original holds, and refusals that change nothing."""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest

from oblivion_core import (
    EmbeddingError,
    FastEmbedEmbedder,
    InvalidInputError,
    ManualClock,
    Oblivion,
    Policy,
    StoreCorruptError,
    StoreError,
    StorePathError,
    TurnClock,
    UnknownMemoryError,
    VectorStore,
    VectorStoreError,
)
from oblivion_core.backup import copy_database, copy_live
from oblivion_core.state import StateDB
from oblivion_core.testing import HashEmbedder, memory, word_count

DAY = 86_400.0
Snapshot = Callable[[Oblivion], dict[str, Any]]


def _busy_store(mem: Oblivion, clock: ManualClock) -> dict[str, str]:
    """A store with something of everything: two namespaces, one with its own policy,
    archived and cold memories and a summary, links, a confirmation, an invalidation, a
    supersession, recall boosts and what adaptation counted. Returns some ids."""
    mem.set_policy(Policy(compress_below=0.2), namespace="sam")
    ids = {
        "rule": mem.remember("Always answer in British English.", category="instruction").id,
        "tea": mem.remember("My favourite drink is tea.").id,
        "chat": mem.remember("Lovely weather today!", category="small_talk").id,
        "old": mem.remember("The office is in York.").id,
        "sam": mem.remember("Sam keeps bees in the garden.", namespace="sam").id,
    }
    for i in range(12):
        mem.remember(
            f"small talk number {i} about the rain", category="small_talk", namespace="sam"
        )
    ids["new"] = mem.remember("The office moved to Leeds.").id
    mem.supersede(ids["old"], ids["new"])
    mem.link(ids["tea"], ids["rule"], 0.5)
    mem.confirm(ids["rule"])
    mem.invalidate(ids["chat"])
    mem.recall("Where is the office?", k=3)
    clock.advance(40 * DAY)
    mem.maintain(namespace="sam")  # archives and compresses the small talk
    mem.maintain()
    mem.recall("What do I like to drink?", k=2)
    mem.mark_used([ids["tea"]])
    return ids


def _recalls(mem: Oblivion) -> list[Any]:
    """What recall ranks, without boosting anything (feedback off)."""
    return [
        [(i.id, i.tier, round(i.score, 12)) for i in mem.recall(q, namespace=ns, feedback=False)]
        for q, ns in (("office", "default"), ("bees", "sam"), ("the rain", "sam"))
    ]


def _stored_stats(mem: Oblivion) -> dict[str, Any]:
    """``stats()`` of every namespace, less what this process holds in memory (whether
    an archive's copy was made for searching it, and how it is searched)."""
    held = {"archive_in_memory", "archive_search"}
    return {
        ns: {k: v for k, v in mem.stats(namespace=ns).items() if k not in held}
        for ns in mem.namespaces()
    }


def test_a_backup_opens_as_the_same_store(tmp_path: Path, snapshot: Snapshot) -> None:
    """Every memory with its activation and tier, the journal, links, summaries,
    policies, adaptation's counts and recall rankings: the copy opened later shows what
    the original showed when the copy was taken, and nothing done since."""
    clock = ManualClock()
    original = memory(tmp_path / "store", clock=clock)
    try:
        ids = _busy_store(original, clock)
        copy = original.backup(tmp_path / "backup")
        assert copy == tmp_path / "backup" / StateDB.FILE
        assert sorted(p.name for p in copy.parent.iterdir()) == [StateDB.FILE]
        seen = snapshot(original)
        stats = _stored_stats(original)
        links = original.links(ids["tea"])
        summaries = original.records(namespace="sam", tier="cold")
        ranked = _recalls(original)
        assert summaries and {r.tier.label for r in original.records(namespace="sam")} == {
            "archive",
            "cold",
        }
        assert "active" in {r.tier.label for r in original.records()}
        original.remember("written after the backup")
        original.forget(ids["sam"], namespace="sam")
    finally:
        original.close()
    with memory(tmp_path / "backup", clock=ManualClock(clock.now())) as restored:
        assert snapshot(restored) == seen  # chroma counts too: each namespace copied
        assert _stored_stats(restored) == stats
        assert restored.links(ids["tea"]) == links
        assert restored.records(namespace="sam", tier="cold") == summaries
        assert restored.policy_for(namespace="sam").compress_below == 0.2
        assert _recalls(restored) == ranked
        assert restored.get(ids["sam"], namespace="sam").text == "Sam keeps bees in the garden."


def test_queued_boosts_are_in_the_backup(tmp_path: Path) -> None:
    """A recall's boosts wait up to a second to be written; a backup right after the
    recall holds them."""
    with memory(tmp_path / "store") as mem:
        kept = mem.remember("The launch is on 28 March.")
        before = mem.get(kept.id).activation
        mem.recall("When is the launch?")
        boosted = mem.get(kept.id)
        assert boosted.activation > before and boosted.access_count == 1
        mem.backup(tmp_path / "backup")
        clock_now = mem.clock.now()
    with memory(tmp_path / "backup", clock=ManualClock(clock_now)) as restored:
        again = restored.get(kept.id)
        assert (again.activation, again.access_count) == (boosted.activation, 1)
        assert [e.kind for e in restored.history(kept.id)] == ["remember", "recall"]


def test_the_turn_clock_goes_on_from_where_the_backup_was_taken(tmp_path: Path) -> None:
    """On the turn clock the ticks no write followed are kept in memory until close; a
    backup holds them, so its memories are as decayed as the original's."""
    turns = TurnClock()
    with Oblivion(
        tmp_path / "store", clock=turns, embedder=HashEmbedder(), token_counter=word_count
    ) as mem:
        kept = mem.remember("Sam's birthday is in May.")
        turns.tick(30)
        decayed = mem.get(kept.id).activation
        mem.backup(tmp_path / "backup")
    with Oblivion(
        tmp_path / "backup", embedder=HashEmbedder(), token_counter=word_count
    ) as restored:
        assert restored.get(kept.id).activation == pytest.approx(decayed, rel=1e-12)


def test_ticks_no_read_followed_are_in_the_backup(tmp_path: Path) -> None:
    """Ticks right before ``backup()``, shared and one namespace's, with no read or write
    between: the copy held the counts of the last write, so its memories were less
    decayed than the original's (0.7 against 0.42 here)."""
    turns = TurnClock()
    policy = Policy.template("balanced", clock="turns")
    opened = {"clock": turns, "embedder": HashEmbedder(), "token_counter": word_count}
    with Oblivion(tmp_path / "store", policy=policy, **opened) as mem:
        kept = mem.remember("Sam's birthday is in May.", namespace="sam")
        turns.tick(10)
        turns.tick(5, namespace="sam")
        mem.backup(tmp_path / "backup")
        decayed = mem.get(kept.id, namespace="sam").activation  # read after the copy
        counts = (turns.shared, turns.owned())
    restored_clock = TurnClock()
    with Oblivion(tmp_path / "backup", **{**opened, "clock": restored_clock}) as restored:
        assert restored.get(kept.id, namespace="sam").activation == pytest.approx(decayed)
        assert (restored_clock.shared, restored_clock.owned()) == counts


def test_a_backup_on_the_open_originals_own_chroma_folder_is_refused(tmp_path: Path) -> None:
    """The original keeps its vectors in its own ``chroma/`` folder and is open; its
    backup opened on that folder took its collections over and deleted the records
    written after the backup (the original then missed them, and after both closed
    Chroma and SQLite disagreed with equal counts). It is refused, as on a server."""
    from oblivion_core import StoreConflictError

    with memory(tmp_path / "store") as mem:
        mem.remember("fact one about apples", id="m0")
        mem.backup(tmp_path / "backup")
        mem.remember("bananas are yellow", id="after")
        with pytest.raises(StoreConflictError, match="open now"):
            memory(
                tmp_path / "backup",
                vector_store=VectorStore.embedded(tmp_path / "store" / "chroma"),
            ).load()
        assert mem.store.ids("default") == {"m0", "after"}


def _re_embedded_backup(
    tmp_path: Path, old_model: HashEmbedder, new_model: HashEmbedder
) -> tuple[list[str], VectorStore]:
    """A store of 20 memories under ``old_model``, closed after a backup re-embedded with
    ``new_model`` into ``tmp_path / "new"``: its memories' ids, and its vector store."""
    with memory(tmp_path / "store", embedder=old_model) as mem:
        ids = [r.id for r in mem.remember_many([f"fact {i} about the garden" for i in range(20)])]
        mem.backup(tmp_path / "new", embedder=new_model)
    return ids, VectorStore.embedded(tmp_path / "store" / "chroma")


def test_a_re_embedded_backup_takes_the_originals_vector_store_after_it_closed(
    tmp_path: Path,
) -> None:
    """A backup re-embedded with a model of another size, opened on the original's
    vector store once the original closed (the documented way to switch models in
    place): its collections held the old size's vectors, so every write failed with
    Chroma's dimension error and advice about a full disk. The collection is made
    again for the new vectors."""
    new_model = HashEmbedder(dim=32)
    ids, shared = _re_embedded_backup(tmp_path, HashEmbedder(dim=64), new_model)
    with memory(tmp_path / "new", embedder=new_model, vector_store=shared) as new:
        new.remember("the bees are back in the garden", id="bees")
        assert new.recall("bees in the garden", k=1, deep=True).ids == ["bees"]
        assert new.store.ids("default") == {*ids, "bees"}


class _OtherModel(HashEmbedder):
    """Another model of the same size: each vector the negated HashEmbedder's."""

    def _vector(self, text: str) -> Any:
        return -super()._vector(text)


@pytest.mark.parametrize("new_model", [HashEmbedder(dim=32), _OtherModel(dim=64)])
def test_the_original_goes_back_to_its_vectors_after_trying_a_re_embedded_copy(
    tmp_path: Path, new_model: HashEmbedder
) -> None:
    """The copy tried on the original's vector store, then the original opened again
    (the new model did not work out): its collection kept the copy's vectors. Of another
    size, every write failed with advice about a full disk and repair_vector_store()
    saw nothing; of the same size, searches through Chroma ranked by the other model.
    The original now finds the other vectors and fills the collection again."""
    old_model = HashEmbedder(dim=64)
    ids, shared = _re_embedded_backup(tmp_path, old_model, new_model)
    with memory(tmp_path / "new", embedder=new_model, vector_store=shared) as new:
        new.remember("the bees are back in the garden", id="bees")
    with memory(tmp_path / "store", embedder=old_model) as mem:
        mem.remember("the roses need pruning", id="roses")
        held = mem.store.vectors("default", [*ids, "roses"])
        ours = mem._db.vectors("default", [*ids, "roses"])
        assert set(held) == set(ours) == {*ids, "roses"}
        for m, vec in held.items():
            np.testing.assert_allclose(vec, ours[m], atol=1e-6)
        assert mem.store.ids("default") == {*ids, "roses"}
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}


def test_a_collection_of_another_size_is_filled_again_by_repair(tmp_path: Path) -> None:
    """Chroma's dimension error names the cause and repair_vector_store() fixes it."""
    with memory(tmp_path / "store", embedder=HashEmbedder(dim=64)) as mem:
        mem.remember("fact one about apples", id="m0")
        mem.store.drop("default")
        foreign = VectorStore.embedded(tmp_path / "store" / "chroma")
        foreign.add("default", ["x"], np.ones((1, 16), dtype=np.float32), ["other"], [{}])
        with pytest.raises(VectorStoreError, match="another model's vectors"):
            mem.remember("fact two about pears")
        assert mem.repair_vector_store()["put_back"] >= 1
        mem.remember("fact two about pears", id="m1")
        assert mem.store.ids("default") == {"m0", "m1"}


def test_an_unfinished_backup_is_refused_not_opened_empty(tmp_path: Path) -> None:
    """A backup whose process was killed mid-copy leaves ``oblivion.sqlite3.partial``
    alone in its folder. Opened "in place of the store", it was an empty store without a
    word; a backup into it again said only "not empty". Both now name the cause."""
    with memory(tmp_path / "store") as mem:
        mem.remember("a fact worth keeping", id="k")
        folder = tmp_path / "backup"
        folder.mkdir()
        copy = sqlite3.connect(str(folder / "oblivion.sqlite3.partial"))
        mem._db.conn.backup(copy)  # what the killed process had written so far
        copy.close()
        with pytest.raises(StorePathError, match="unfinished backup"):
            mem.backup(folder)
    with pytest.raises(StorePathError, match=r"unfinished backup.*delete the folder"):
        memory(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["oblivion.sqlite3.partial"]
    with memory(tmp_path / "store") as mem:  # the store it was copying is untouched
        assert mem.get("k").text == "a fact worth keeping"


def test_an_in_memory_engine_is_saved_to_disk(tmp_path: Path) -> None:
    """``Oblivion(None)`` keeps nothing; its backup is a store on disk."""
    clock = ManualClock()
    with memory(clock=clock) as mem:
        kept = mem.remember("Dee prefers to be called Dee.", namespace="dee")
        mem.backup(tmp_path / "saved")
    with memory(tmp_path / "saved", clock=clock) as restored:
        assert restored.get(kept.id, namespace="dee").text == "Dee prefers to be called Dee."
        assert restored.recall("What is her name?", namespace="dee").items[0].id == kept.id
        assert restored.store.count("dee") == 1


def test_a_backup_taken_while_another_thread_writes_is_one_instant(tmp_path: Path) -> None:
    """Backups taken while a thread keeps writing each hold exactly the memories written
    before some moment: a prefix of the writes, each with its vector and journal entry."""
    mem = memory(tmp_path / "store")
    written: list[str] = []
    stop = threading.Event()

    def write() -> None:
        i = 0
        while not stop.is_set() and i < 400:
            written.append(mem.remember(f"note {i} of the writer").id)
            i += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        folders = []
        for n in range(4):
            while len(written) < 20 * (n + 1) and writer.is_alive():
                stop.wait(0.005)
            folders.append(tmp_path / f"backup-{n}")
            mem.backup(folders[-1])
    finally:
        stop.set()
        writer.join()
        mem.close()
    sizes = []
    for folder in folders:
        with contextlib.closing(sqlite3.connect(folder / StateDB.FILE)) as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM memories ORDER BY seq")]
            vectors = conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
            remembered = conn.execute(
                "SELECT COUNT(*) FROM events WHERE kind='remember'"
            ).fetchone()[0]
        assert ids == written[: len(ids)]
        assert vectors == remembered == len(ids)
        sizes.append(len(ids))
    assert sizes == sorted(sizes) and sizes[-1] >= 80


@pytest.mark.parametrize(
    "folder, error, says",
    [
        (lambda p: p / "store", InvalidInputError, "is not empty"),
        (lambda p: p / "a-file", StorePathError, "is a file"),
        (lambda p: p / "a-file" / "under-it", StorePathError, "cannot make the backup folder"),
        (lambda p: 42, InvalidInputError, "pass its path as a str or Path"),
        (lambda p: "", InvalidInputError, "pass its path as a str or Path"),
        # a raw ValueError ("embedded null byte") from deep in pathlib
        (lambda p: str(p / "bk\x00"), InvalidInputError, "cannot name a directory"),
    ],
)
def test_a_backup_that_cannot_go_where_asked_changes_nothing(
    tmp_path: Path, snapshot: Snapshot, folder: Any, error: type[Exception], says: str
) -> None:
    """Into the store itself, over a file, under a file, not a path: refused with what to
    change; the store and the file are as they were, and the store goes on."""
    (tmp_path / "a-file").write_text("not a folder")
    with memory(tmp_path / "store") as mem:
        mem.remember("Kept whatever the backup does.")
        before = snapshot(mem)
        with pytest.raises(error, match=says):
            mem.backup(folder(tmp_path))
        assert snapshot(mem) == before
        assert (tmp_path / "a-file").read_text() == "not a folder"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "store"]
        mem.remember("and written after")
        assert mem.count() == 2


def test_a_closed_engine_refuses_a_backup(tmp_path: Path) -> None:
    mem = memory(tmp_path / "store")
    mem.close()
    with pytest.raises(InvalidInputError, match="closed"):
        mem.backup(tmp_path / "backup")
    assert not (tmp_path / "backup").exists()


def _no_hard_links(*args: Any) -> None:
    raise PermissionError(1, "Operation not permitted")  # as on a FAT or some network disks


@pytest.mark.parametrize("hard_links", [True, False])
def test_an_empty_folder_takes_a_backup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hard_links: bool
) -> None:
    """A folder made ahead takes one, and the copy alone is left in it, with or
    without hard links on its file system."""
    if not hard_links:
        monkeypatch.setattr("oblivion_core.backup.os.link", _no_hard_links)
    (tmp_path / "empty").mkdir()
    with memory(tmp_path / "store") as mem:
        mem.remember("Into a folder made ahead.")
        assert mem.backup(tmp_path / "empty") == tmp_path / "empty" / StateDB.FILE
    assert [p.name for p in (tmp_path / "empty").iterdir()] == [StateDB.FILE]
    with memory(tmp_path / "empty") as restored:
        assert [r.text for r in restored.records()] == ["Into a folder made ahead."]


@pytest.mark.parametrize("made", [True, False])
def test_a_damaged_database_leaves_no_backup(tmp_path: Path, made: bool) -> None:
    """A copy SQLite finds damaged, or of no Oblivion database, is not put in place, and
    a folder the backup made is removed again."""
    folder = tmp_path / "backup"
    if not made:
        folder.mkdir()
    other = sqlite3.connect(":memory:")
    other.execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(StoreCorruptError, match="no Oblivion activation database"):
        copy_database(other, folder, of="notes.db")
    assert folder.exists() is not made and (made or not any(folder.iterdir()))
    damaged = tmp_path / "damaged"
    with memory(damaged) as mem:
        mem.remember_many([f"memory number {i} " + "padding " * 200 for i in range(300)])
    raw = bytearray((damaged / StateDB.FILE).read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 4096] = b"\x07" * 4096  # a page of garbage
    (damaged / StateDB.FILE).write_bytes(bytes(raw))
    with pytest.raises(StoreCorruptError, match="damaged"):
        copy_live(damaged, folder)
    assert folder.exists() is not made and (made or not any(folder.iterdir()))


def test_a_full_disk_leaves_no_backup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's "disk is full" while the copy is written: a StoreError saying so, no file
    left, and the store goes on."""
    real = sqlite3.connect

    def connect(target: str, *args: Any, **kwargs: Any) -> Any:
        conn = real(target, *args, **kwargs)
        if str(target).endswith(".partial"):
            conn.execute("PRAGMA max_page_count=2")  # the copy's disk holds 2 pages
        return conn

    with memory(tmp_path / "store") as mem:
        mem.remember_many([f"memory number {i}" for i in range(50)])
        monkeypatch.setattr("oblivion_core.backup.sqlite3.connect", connect)
        with pytest.raises(StoreError, match="full"):
            mem.backup(tmp_path / "backup")
        monkeypatch.undo()
        assert not (tmp_path / "backup").exists()
        assert mem.count() == 50
        mem.backup(tmp_path / "backup")


def test_two_backups_of_one_store_open_side_by_side(tmp_path: Path) -> None:
    """Each backup opened with the chroma/ folder beside it is a store of its own: what
    one is told stays out of the other and the original."""
    with memory(tmp_path / "store") as mem:
        mem.remember("Shared before the backups.")
        mem.backup(tmp_path / "a")
        mem.backup(tmp_path / "b")
        with memory(tmp_path / "a") as a, memory(tmp_path / "b") as b:
            a.remember("Only in a.")
            assert (a.count(), b.count(), mem.count()) == (2, 1, 1)
            assert [i.text for i in b.recall("Only in a.")] == ["Shared before the backups."]


def test_a_backup_restored_onto_a_chroma_server(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """A backup opened with a server fills its collections there from the activation
    database; recall through the server finds the memories."""
    host, port = chroma_server
    with memory(tmp_path / "store") as mem:
        kept = mem.remember_many([f"archived note {i} about the garden shed" for i in range(30)])
        mem.backup(tmp_path / "backup")
    server = VectorStore.server(host, port, prefix=f"restore-{os.getpid()}-{id(tmp_path)}")
    with memory(tmp_path / "backup", vector_store=server) as restored:
        assert restored.count() == 30
        restored.load()
        assert restored.store.count(restored.default_namespace) == 30
        client = chromadb.HttpClient(host=host, port=port)
        names = [c.name for c in client.list_collections()]
        assert any(n.startswith(server.prefix) for n in names)
        hit = restored.recall("archived note 7 about the garden shed", k=1, deep=True)
        assert hit.items[0].id == kept[7].id


@pytest.mark.integration
def test_a_backup_through_the_real_model_and_chroma_on_disk(
    tmp_path: Path, real_embedder: FastEmbedEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    """The default stack: the local model, Chroma on disk, tiktoken. The restored store
    answers as the original did, through its own new chroma/ folder, which it fills as
    an expected step (logged as information), not as memories found lost (a warning)."""
    texts = [
        "Please call me Dee.",
        "The launch moved to 28 March.",
        "I take my coffee black.",
        "Lovely weather today!",
    ]
    with Oblivion(tmp_path / "store", embedder=real_embedder) as mem:
        mem.remember_many(texts)
        before = [(i.id, i.score) for i in mem.recall("When is the launch?", feedback=False)]
        mem.backup(tmp_path / "backup")
    caplog.set_level(logging.INFO, logger="oblivion_core")
    with Oblivion(tmp_path / "backup", embedder=real_embedder) as restored:
        after = restored.recall("When is the launch?", feedback=False, deep=True)
        assert after.items[0].text == "The launch moved to 28 March."
        assert [i.id for i in after][: len(before)] == [i for i, _ in before]
        assert restored.store.count(restored.default_namespace) == len(texts)
        assert (tmp_path / "backup" / "chroma").is_dir()
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "oblivion_core"]
    assert [m for level, m in logged if level >= logging.WARNING] == []
    assert any(m.startswith("copying the 4 memories of namespace 'default'") for _, m in logged)


def test_calls_go_on_while_the_database_is_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's lock is held only to write what is queued and fix the state to copy:
    a write made while the copy runs is not waited for and is not in the backup."""
    import oblivion_core.engine as engine_module

    real = engine_module.copy_database
    copying, written = threading.Event(), threading.Event()
    waited: list[bool] = []

    def slow_copy(source: sqlite3.Connection, folder: Path, **kwargs: Any) -> Path:
        copying.set()
        waited.append(written.wait(timeout=30))  # False: the write waited for the copy
        return real(source, folder, **kwargs)

    monkeypatch.setattr(engine_module, "copy_database", slow_copy)
    with memory(tmp_path / "store") as mem:
        before = mem.remember("Written before the backup.")
        backup = threading.Thread(target=mem.backup, args=(tmp_path / "backup",))
        backup.start()
        assert copying.wait(timeout=30)
        after = mem.remember("Written while the backup copies.")
        written.set()
        backup.join()
        assert waited == [True]
        assert mem.count() == 2
    with memory(tmp_path / "backup") as restored:
        assert [r.id for r in restored.records()] == [before.id]
        with pytest.raises(UnknownMemoryError):
            restored.get(after.id)


class _Failing(HashEmbedder):
    """A HashEmbedder that fails on its call number ``fail_on`` (from 1), or, with
    ``shrink``, returns shorter vectors from then on."""

    def __init__(self, dim: int, fail_on: int, *, shrink: bool = False) -> None:
        super().__init__(dim=dim)
        self.batches, self.fail_on, self.shrink = 0, fail_on, shrink

    def embed_documents(self, texts: Any) -> Any:
        self.batches += 1  # (HashEmbedder's own `calls` counts queries too)
        vectors = super().embed_documents(texts)
        if self.batches >= self.fail_on:
            if not self.shrink:
                raise ConnectionError("the embedding service is down")
            return np.ones((len(texts), 8), dtype=np.float32)
        return vectors


def test_a_backup_re_embedded_for_a_new_model(tmp_path: Path, snapshot: Snapshot) -> None:
    """``backup(folder, embedder=new)``: every memory keeps its activation, tier, links
    and journal, with the new model's vectors (another size here); opened with that
    model it recalls as a store written with it would. The original keeps its own."""
    clock = ManualClock()
    old_model, new_model = HashEmbedder(dim=64), HashEmbedder(dim=32)
    texts = [f"note {i} about the {w} in the garden" for i, w in enumerate(["shed", "pond"] * 300)]
    with memory(tmp_path / "store", clock=clock, embedder=old_model) as mem:
        ids = [r.id for r in mem.remember_many(texts)]
        mem.link(ids[0], ids[1], 0.5)
        mem.recall("the pond in the garden")
        links = mem.links(ids[0])
        seen = snapshot(mem)
        journal = mem.history()
        mem.backup(tmp_path / "new", embedder=new_model)
        assert mem._db.meta("dim") == 64
    with memory(tmp_path / "new", clock=ManualClock(clock.now()), embedder=new_model) as new:
        assert snapshot(new) == seen and new.history() == journal
        assert new.links(ids[0]) == links and ids[1] in links
        assert new._db.meta("dim") == 32
        stored = new._db.vectors(new.default_namespace, ids[:3])
        assert np.allclose(
            np.stack([stored[i] for i in ids[:3]]), new_model.embed_documents(texts[:3])
        )
        assert new.recall(texts[7], k=1, deep=True).items[0].id == ids[7]
    with memory(tmp_path / "store", clock=ManualClock(clock.now()), embedder=old_model) as old:
        assert old.recall(texts[7], k=1, deep=True).items[0].id == ids[7]


@pytest.mark.parametrize("shrink", [False, True])
def test_an_embedder_failing_halfway_leaves_no_copy(
    tmp_path: Path, snapshot: Snapshot, shrink: bool
) -> None:
    """The new model fails (or changes its vectors' size) on the second batch: an
    EmbeddingError, no folder, and the store as it was."""
    with memory(tmp_path / "store") as mem:
        mem.remember_many([f"memory number {i}" for i in range(300)])
        before = snapshot(mem)
        with pytest.raises(EmbeddingError):
            mem.backup(tmp_path / "new", embedder=_Failing(32, 2, shrink=shrink))
        assert not (tmp_path / "new").exists()
        assert snapshot(mem) == before
        mem.remember("and the store goes on")


def test_a_backup_refuses_what_is_not_an_embedder_before_copying(tmp_path: Path) -> None:
    with memory(tmp_path / "store") as mem:
        mem.remember("kept")
        with pytest.raises(InvalidInputError, match="embedder"):
            mem.backup(tmp_path / "new", embedder=42)
        assert not (tmp_path / "new").exists()


@pytest.mark.integration
def test_a_store_moved_to_the_local_model_recalls_by_meaning(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """A store written with a word-hashing embedder, re-embedded with the local model:
    a question that shares no word with its answer now finds it, through the new
    chroma/ folder."""
    texts = [
        "The cat sleeps on the sofa all afternoon.",
        "Invoices are paid within thirty days.",
        "The train to Leeds leaves at nine.",
    ]
    with memory(tmp_path / "store", embedder=HashEmbedder(dim=64)) as mem:
        ids = [r.id for r in mem.remember_many(texts)]
        mem.backup(tmp_path / "minilm", embedder=real_embedder)
    with Oblivion(tmp_path / "minilm", embedder=real_embedder) as new:
        top = new.recall("When do we settle bills?", k=1, deep=True).items[0]
        assert top.id == ids[1]
        assert new.store.count(new.default_namespace) == 3
        assert new._db.meta("dim") == 384


@pytest.mark.parametrize("hard_links", [True, False])
def test_a_store_opened_in_the_folder_meanwhile_is_not_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hard_links: bool
) -> None:
    """Someone opens a store in the backup's folder while the copy is written: the copy
    does not take its database's name (that store's writes would go to a deleted file);
    a StorePathError says so, and that store keeps its memory. Where the file system has
    no hard links, the name is checked before the copy takes it."""
    import oblivion_core.backup as backup_module

    if not hard_links:
        monkeypatch.setattr(backup_module.os, "link", _no_hard_links)

    real_mark = backup_module._mark
    intruder: list[Oblivion] = []

    def mark_then_open(copy: sqlite3.Connection, of: str) -> None:
        real_mark(copy, of)
        with pytest.raises(StorePathError, match="unfinished backup"):
            memory(tmp_path / "backup")  # refused while the copy is written
        # one that checked the folder just before the copy began, then made its database
        with monkeypatch.context() as m:
            m.setattr("oblivion_core.engine.refuse_unfinished_backup", lambda _: None)
            intruder.append(memory(tmp_path / "backup"))
        intruder[0].remember("Written by the store opened in the folder.")

    monkeypatch.setattr(backup_module, "_mark", mark_then_open)
    with memory(tmp_path / "store") as mem:
        mem.remember("The store backed up.")
        with pytest.raises(StorePathError, match="appeared"):
            mem.backup(tmp_path / "backup")
    (other,) = intruder
    assert [r.text for r in other.records()] == ["Written by the store opened in the folder."]
    other.close()
    assert not list((tmp_path / "backup").glob("*.partial*"))
    with memory(tmp_path / "backup") as reopened:
        assert [r.text for r in reopened.records()] == [
            "Written by the store opened in the folder."
        ]
