"""A change that fails leaves the live instance and the store on disk agreeing, with
nothing stored before lost (real embedded Chroma + SQLite in tmp_path); bad arguments
are refused before anything changes."""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oblivion_core import (
    InvalidInputError,
    ManualClock,
    Oblivion,
    Policy,
    StoreError,
    StoreLockedError,
    Tier,
    TurnClock,
    VectorStore,
    VectorStoreError,
)
from oblivion_core.state import StateDB
from oblivion_core.testing import HashEmbedder, word_count

pytestmark = pytest.mark.integration

DAY = 86_400.0


class Boom(RuntimeError):
    """The injected failure."""


def _open(path: Path, clock: Any = None, **kwargs: Any) -> Oblivion:
    kwargs.setdefault("embedder", HashEmbedder())
    return Oblivion(path, clock=clock or ManualClock(), token_counter=word_count, **kwargs)


def _view(mem: Oblivion) -> list[tuple[Any, ...]]:
    """Everything a user can see of each memory (activation to 9 digits)."""
    return [
        (
            r.id,
            r.text,
            round(r.activation, 9),
            r.tier,
            r.invalidated,
            r.superseded_by,
            r.access_count,
        )
        for r in mem.records()
    ]


def _assert_reopened(path: Path, expected: list[tuple[Any, ...]], clock: Any = None) -> None:
    """The store at ``path``, opened afresh, shows ``expected`` (see :func:`_view`)."""
    again = _open(path, clock)
    assert _view(again) == expected
    again.close()


def _seed(mem: Oblivion) -> list[str]:
    ids = [
        mem.remember("My favourite colour is blue.", id="blue").id,
        mem.remember("My favourite colour is green now.", id="green").id,
        mem.remember("The office is in Leeds.", id="office").id,
        mem.remember("I walk the dog every morning.", id="dog").id,
    ]
    mem.link("office", "dog", 0.9)
    return ids


def _fail_once(obj: Any, name: str) -> None:
    """Make ``obj.name`` raise on its next call only."""
    real = getattr(obj, name)

    def broken(*args: Any, **kwargs: Any) -> Any:
        setattr(obj, name, real)
        raise Boom(f"{name} failed")

    setattr(obj, name, broken)


CHANGES = {
    "invalidate": lambda m: m.invalidate("office", reason="wrong"),
    "confirm": lambda m: m.confirm("office"),
    "mark_used": lambda m: m.mark_used(["office", "dog"]),
    "reinforce": lambda m: m.reinforce(["office"], relevances=[0.9]),
    "supersede": lambda m: m.supersede("office", "dog"),
    "forget": lambda m: m.forget("green"),
    "link": lambda m: m.link("blue", "dog", 0.5),
    "set_policy": lambda m: m.set_policy(
        Policy.template("balanced").replace(floor_fraction=0.3), reason="test"
    ),
    "maintain": lambda m: m.maintain(),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=list(CHANGES))
def test_a_change_whose_transaction_fails_changes_nothing(tmp_path: Path, change: Any) -> None:
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    _seed(mem)
    clock.advance(3 * DAY)
    mem.recall("favourite colour")  # queued boosts, written with the next transaction
    before = _view(mem)  # (a call: the recall's feedback is applied by now)
    mem._db.flush()
    policy = mem.policy_for()
    _fail_once(mem._db, "journal")  # every change journals inside its transaction
    with pytest.raises(Boom):
        change(mem)
    assert _view(mem) == before
    assert mem.policy_for() == policy
    change(mem)  # works once the cause is gone
    after = _view(mem)
    mem.close()
    _assert_reopened(tmp_path, after, clock)


@pytest.mark.parametrize("change", CHANGES.values(), ids=list(CHANGES))
def test_a_failed_change_with_recall_boosts_still_queued_leaves_live_and_disk_agreeing(
    tmp_path: Path, change: Any
) -> None:
    """Boosts not yet written when a change fails either were written before it failed
    or go with the reloaded namespace; either way they are not written later (a failed
    batch is retried for the other namespaces only), so what the live instance shows
    after the failure is what the store holds, journal included."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    _seed(mem)
    mem.remember("Standup moved to ten.", id="other", namespace="work")
    clock.advance(3 * DAY)
    mem.recall("standup", namespace="work")  # kept: its namespace is not reloaded
    mem.recall("favourite colour")  # queued when the change fails
    work = [(r.id, r.activation, r.access_count) for r in mem.records(namespace="work")]
    assert work[0][2] == 1
    _fail_once(mem._db, "journal")
    with pytest.raises(Boom):
        change(mem)
    live, kinds = _view(mem), [e.kind for e in mem.history()]
    mem.close()
    again = _open(tmp_path, clock)
    try:
        assert _view(again) == live
        assert [e.kind for e in again.history()] == kinds
        assert [
            (r.id, r.activation, r.access_count) for r in again.records(namespace="work")
        ] == work
    finally:
        again.close()


def test_forget_whose_chroma_delete_fails_keeps_the_chain(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    _seed(mem)
    assert mem.get("blue").superseded_by == "green"
    before = _view(mem)
    _fail_once(mem.store, "delete")
    with pytest.raises(Boom):
        mem.forget("green")
    assert _view(mem) == before
    assert mem.recall("favourite colour", k=2, feedback=False).ids[:1] == ["green"]
    mem.close()
    _assert_reopened(tmp_path, before)


def test_forget_whose_commit_fails_after_chroma_puts_the_memory_back(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    _seed(mem)
    before = _view(mem)
    real_delete = mem.store.delete

    def delete_then_fail(*args: Any, **kwargs: Any) -> None:
        real_delete(*args, **kwargs)  # Chroma lets go of it; then the commit fails
        mem.store.delete = real_delete  # type: ignore[method-assign]
        raise Boom("commit failed")

    mem.store.delete = delete_then_fail  # type: ignore[method-assign]
    with pytest.raises(Boom):
        mem.forget("office")
    assert _view(mem) == before
    col = mem.store.collection(mem.default_namespace)
    assert col.get(ids=["office"], include=["documents"])["documents"] == [
        "The office is in Leeds."
    ]
    mem.EXACT_ARCHIVE_ROWS = 0
    mem.SKETCH_ARCHIVE_ROWS = 0
    mem.maintain()
    assert mem.recall("office Leeds", k=1, deep=True, feedback=False).ids == ["office"]
    mem.close()


def test_chroma_is_put_right_before_its_next_query_when_an_undo_fails_too(
    tmp_path: Path,
) -> None:
    """A write whose commit failed left its record in Chroma when removing it failed too,
    and a forget whose commit failed left the memory out of Chroma when putting it back
    failed too (found by the engine's state machine test with failures injected): both
    lasted until the store was reopened. Now the next query through Chroma puts them
    right first."""
    mem = _open(tmp_path)
    _seed(mem)
    mem.EXACT_ARCHIVE_ROWS = 0  # the archive is searched through Chroma
    mem.SKETCH_ARCHIVE_ROWS = 0
    real_add, real_delete = mem.store.add, mem.store.delete

    def delete_then_fail(*args: Any, **kwargs: Any) -> None:
        real_delete(*args, **kwargs)  # Chroma lets go of it; then the commit fails
        mem.store.delete = real_delete  # type: ignore[method-assign]
        _fail_once(mem.store, "add")  # and so does putting it back
        raise Boom("commit failed")

    _fail_once(mem._db, "journal")  # the write's commit fails ...
    _fail_once(mem.store, "delete")  # ... and so does removing its record from Chroma
    with pytest.raises(Boom):
        mem.remember("The parking spot is number 12.", id="parking")
    assert "parking" in mem.store.ids("default")
    mem.store.delete = delete_then_fail  # type: ignore[method-assign]
    with pytest.raises(Boom):
        mem.forget("office")
    assert mem.store.add == real_add  # the failure to put it back went off
    held = mem.store.ids("default")
    assert "parking" in held and "office" not in held
    assert mem.recall("office Leeds", k=1, deep=True, feedback=False).ids == ["office"]
    assert mem.store.ids("default") == {r.id for r in mem.records()}
    mem.close()


def test_edit_whose_commit_fails_puts_the_old_text_back_in_chroma(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    _seed(mem)
    real_add = mem.store.add

    def add_then_fail(*args: Any, **kwargs: Any) -> None:
        real_add(*args, **kwargs)  # Chroma takes the new text; then the commit fails
        mem.store.add = real_add  # type: ignore[method-assign]
        raise Boom("commit failed")

    mem.store.add = add_then_fail  # type: ignore[method-assign]
    with pytest.raises(Boom):
        mem.edit("office", "The office moved to Manchester.")
    assert mem.get("office").text == "The office is in Leeds."
    col = mem.store.collection(mem.default_namespace)
    got = col.get(ids=["office"], include=["documents", "embeddings"])
    assert got["documents"] == ["The office is in Leeds."]
    expected = HashEmbedder().embed_documents(["The office is in Leeds."])[0]
    assert np.allclose(got["embeddings"][0], expected, atol=1e-6)
    assert mem.recall("office Leeds", k=1).items[0].text == "The office is in Leeds."
    mem.close()


def _chroma_record(mem: Oblivion, memory_id: str) -> tuple[str, Any]:
    got = mem.store.collection(mem.default_namespace).get(
        ids=[memory_id], include=["documents", "embeddings"]
    )
    return got["documents"][0], np.asarray(got["embeddings"][0])


@pytest.mark.parametrize("put_right_by", ["repair_vector_store", "recall"])
def test_an_edit_chroma_took_but_could_not_undo_is_put_right_once_it_is_back(
    tmp_path: Path, put_right_by: str
) -> None:
    """The edit reached Chroma, its reply was lost (the edit fails) and Chroma stayed out
    of reach for the undo, and for the namespace's next load: once Chroma is back,
    repair_vector_store() or the next recall through Chroma writes the record again as
    SQLite holds it (a server review saw the failed edit's text found by recall)."""
    mem = _open(tmp_path)
    _seed(mem)
    mem.remember("Lovely weather today!", id="chat")
    mem.invalidate("chat")
    mem.maintain()
    assert any(r.tier != Tier.ACTIVE for r in mem.records())  # an empty archive is not asked
    mem.EXACT_ARCHIVE_ROWS = 0  # recall asks Chroma
    mem.SKETCH_ARCHIVE_ROWS = 0
    real_add = mem.store.add
    down = [True]

    def add_then_lose_the_reply(*args: Any, **kwargs: Any) -> None:
        real_add(*args, **kwargs)
        mem.store.add = unreachable  # type: ignore[method-assign]
        raise VectorStoreError("the reply was lost")

    def unreachable(*args: Any, **kwargs: Any) -> None:
        if down[0]:
            raise VectorStoreError("Chroma is out of reach")
        real_add(*args, **kwargs)

    mem.store.add = add_then_lose_the_reply  # type: ignore[method-assign]
    with pytest.raises(VectorStoreError):
        mem.edit("office", "The guest network key is correct horse battery staple.")
    mem.unload()  # the next load's attempt fails too (logged)
    assert mem.get("office").text == "The office is in Leeds."
    assert _chroma_record(mem, "office")[0].startswith("The guest network key")
    with pytest.raises(VectorStoreError):  # repair says so while it cannot reach Chroma
        mem.repair_vector_store()
    down[0] = False
    if put_right_by == "repair_vector_store":
        assert mem.repair_vector_store() == {"put_back": 1, "removed": 0}
    else:
        mem.recall("office", k=1, deep=True, feedback=False)
    doc, vec = _chroma_record(mem, "office")
    assert doc == "The office is in Leeds."
    assert np.allclose(vec, HashEmbedder().embed_documents([doc])[0], atol=1e-6)
    assert mem._db.meta("resync:default") is None
    assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}
    mem.close()


def test_a_failed_write_does_not_advance_the_turn_clock(tmp_path: Path) -> None:
    policy = Policy.template("balanced", clock="turns")
    mem = Oblivion(tmp_path, policy=policy, embedder=HashEmbedder(), token_counter=word_count)
    mem.remember("We planned the trip to Porto.", category="event")
    turn = mem.clock.now()
    assert isinstance(mem.clock, TurnClock)
    for _ in range(3):
        _fail_once(mem.store, "add")
        with pytest.raises(Boom):
            mem.remember_many([f"note {k}" for k in range(100)])
    assert mem.clock.now() == turn
    assert mem.count() == 1
    mem.close()


def test_a_judge_failing_after_the_write_does_not_fail_the_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class BrokenJudge:
        def supersedes(self, new: str, old: str, similarity: float) -> bool:
            raise Boom("judge failed")

    mem = _open(tmp_path, supersession_judge=BrokenJudge())
    mem.remember("My favourite colour is blue.", id="blue")
    with caplog.at_level(logging.ERROR, logger="oblivion_core"):
        record = mem.remember("My favourite colour is green now.", id="green")
    assert record.id == "green"
    assert "stale-fact detection failed" in caplog.text
    assert {r.id for r in mem.records()} == {"blue", "green"}
    mem.close()
    again = _open(tmp_path)
    assert {r.id for r in again.records()} == {"blue", "green"}
    again.close()


def test_a_close_that_cannot_write_keeps_the_instance_and_its_boosts(tmp_path: Path) -> None:
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    _seed(mem)
    clock.advance(DAY)
    mem.recall("favourite colour")  # boosts queued, not written yet
    live = _view(mem)
    _fail_once(mem._db, "transaction")
    with pytest.raises(Boom):
        mem.close()
    assert _view(mem) == live  # still open, nothing dropped
    mem.close()  # the cause is gone: the queued boosts are written
    _assert_reopened(tmp_path, live, clock)


def test_a_close_that_keeps_failing_releases_the_store_the_second_time(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    _seed(mem)
    before = _view(mem)
    mem._db.transaction = _always_fails  # type: ignore[method-assign]
    with pytest.raises(Boom):
        mem.close()
    with pytest.raises(Boom):
        mem.close()  # fails again: gives up writing and releases the lock
    _assert_reopened(tmp_path, before)  # would raise StoreLockedError if the lock were still held


def _always_fails(*args: Any, **kwargs: Any) -> Any:
    raise Boom("the database refuses every write")


def test_use_counters_survive_a_reopen(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    _seed(mem)
    mem.recall("favourite colour")
    mem.mark_used(["green"])
    usage = {c: v["window"] for c, v in mem.stats()["categories"].items()}
    assert any(w["recalled"] for w in usage.values())
    mem.close()
    again = _open(tmp_path)
    assert {c: v["window"] for c, v in again.stats()["categories"].items()} == usage
    again.close()


def test_reopening_with_another_floor_changes_no_activation(tmp_path: Path) -> None:
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    _seed(mem)
    clock.advance(30 * DAY)
    before = {r.id: r.activation for r in mem.records()}
    mem.close()
    floor = Policy.template("balanced").replace(floor_fraction=0.6)
    again = _open(tmp_path, clock, policy=floor)
    assert again.policy.floor_fraction == 0.6
    after = {r.id: r.activation for r in again.records()}
    assert after == pytest.approx(before, abs=1e-9)
    assert any(e.kind == "policy" for e in again.history())
    again.close()


# ==================================================================== refused up front
BAD = {
    "invalidate reason": lambda m: m.invalidate("office", reason=object()),
    "supersede reason": lambda m: m.supersede("office", "dog", reason=3),
    "set_policy reason": lambda m: m.set_policy("support-desk", reason=object()),
    "set_policy namespace": lambda m: m.set_policy("support-desk", namespace=["a"]),
    "recall feedback": lambda m: m.recall("colour", feedback="no"),
    "recall include_invalidated": lambda m: m.recall("colour", include_invalidated="no"),
    "maintain dry_run": lambda m: m.maintain(dry_run="yes"),
    "importances not a list": lambda m: m.remember_many(["a b"], importances=0.5),  # type: ignore[arg-type]
    "ids a generator": lambda m: m.remember_many(["a b"], ids=(i for i in ["x"])),  # type: ignore[arg-type]
    "reinforce relevances": lambda m: m.reinforce(["office"], relevances=0.5),  # type: ignore[arg-type]
    "rerank None": lambda m: m.rerank("q", None),  # type: ignore[arg-type]
    "records tier": lambda m: m.records(tier="frozen"),
    "surrogate text": lambda m: m.remember("bad \ud800 text"),
    "surrogate id": lambda m: m.remember("fine text", id="x\udfff"),
    "surrogate namespace": lambda m: m.remember("fine text", namespace="n\ud800"),
    "surrogate query": lambda m: m.recall("q \ud800"),
    "supersede flag": lambda m: m.remember("fine text", supersede="no"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("call", BAD.values(), ids=list(BAD))
def test_bad_arguments_are_refused_before_anything_changes(tmp_path: Path, call: Any) -> None:
    mem = _open(tmp_path)
    _seed(mem)
    before = _view(mem)
    with pytest.raises(InvalidInputError) as err:
        call(mem)
    assert "must" in str(err.value) or "surrogate" in str(err.value)
    assert _view(mem) == before
    mem.close()
    _assert_reopened(tmp_path, before)


def test_numpy_numbers_and_tier_labels_are_accepted(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    _seed(mem)
    rec = mem.remember("A numpy importance.", importance=np.float32(0.5))
    assert rec.importance == pytest.approx(0.5)
    assert len(mem.recall("colour", k=np.int64(2), token_budget=np.int64(100))) <= 2
    mem.link("blue", "dog", np.float32(0.5))
    assert [r.id for r in mem.records(tier="active")] == [
        r.id for r in mem.records(tier=Tier.ACTIVE)
    ]
    mem.close()


def test_a_huge_k_through_chromas_archive(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    mem.EXACT_ARCHIVE_ROWS = 0  # the archive is searched through Chroma
    mem.SKETCH_ARCHIVE_ROWS = 0
    _seed(mem)
    result = mem.recall("favourite colour", k=2**63, deep=True)
    assert result.searched_archive
    assert 0 < len(result) <= 4
    mem.close()


@pytest.mark.parametrize("touch_at_open", [True, False])
def test_a_half_life_passed_at_reopen_governs_from_the_reopen(
    tmp_path: Path, touch_at_open: bool
) -> None:
    """Not from whenever the namespace is first read after it."""
    clock = ManualClock()
    balanced = Policy.template("balanced")
    mem = _open(tmp_path, clock, policy=balanced)
    rec = mem.remember("meetup with the design team", category="event", importance=0.0)
    mem.close()
    longer = balanced.replace(half_lives={**balanced.half_lives, "event": 40 * DAY})
    again = _open(tmp_path, clock, policy=longer)
    if touch_at_open:
        again.count()
    clock.advance(40 * DAY)
    assert again.get(rec.id).activation == pytest.approx(rec.activation / 2)
    again.close()


_NOTES = ["my favourite colour is green", "the office is in Berlin"]


def _recalled(path: Path) -> Oblivion:
    """A store holding "c" and "o", and a recall whose boost of "c" is still queued."""
    mem = _open(path)
    mem.remember_many(_NOTES, ids=["c", "o"])
    mem.recall("what is my favourite colour", k=1)
    return mem


def _write_locked(path: Path) -> sqlite3.Connection:
    """Another connection holding the store database's write lock (ROLLBACK frees it)."""
    ext = sqlite3.connect(path / StateDB.FILE, isolation_level=None)
    ext.execute("BEGIN IMMEDIATE")
    return ext


@pytest.mark.parametrize(
    "change",
    [
        lambda m: m.confirm("o"),
        lambda m: m.remember("a third note", id="t"),
        lambda m: m.invalidate("o"),
        lambda m: m.edit("o", "the office is in Hamburg"),
        lambda m: m.maintain(),
        lambda m: m.set_policy("support-desk"),
    ],
    ids=["confirm", "remember", "invalidate", "edit", "maintain", "set_policy"],
)
def test_a_change_refused_by_a_locked_database_keeps_earlier_boosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: Any
) -> None:
    """Another process holding SQLite's write lock makes a change fail with
    StoreLockedError; the boosts and journal entries of an earlier recall that were still
    queued stay, live and after a reopen (the reload after the failure used to drop
    them; a failed remember() left its memory in memory only)."""
    monkeypatch.setattr(StateDB, "BUSY_TIMEOUT", 0.2)
    mem = _recalled(tmp_path)
    try:
        boosted = _view(mem)
        ext = _write_locked(tmp_path)  # as by a backup tool, the sqlite3 shell
        try:
            with pytest.raises(StoreLockedError):
                change(mem)
        finally:
            ext.execute("ROLLBACK")
            ext.close()
        assert _view(mem) == boosted
        assert [e.kind for e in mem.history("c")] == ["remember", "recall"]
    finally:
        mem.close()
    _assert_reopened(tmp_path, boosted)


@pytest.mark.parametrize("cause", ["locked", "chroma"])
def test_a_refused_write_of_a_new_category_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cause: str
) -> None:
    """A remember() of a category the namespace never had, refused (SQLite locked by
    another process, Chroma failing): the category is not in stats(), live or after a
    reopen, and reads go on while the lock is held (its decay clock's new piece was
    written outside the transaction, kept in memory as unwritten, and every read tried
    to write it again)."""
    monkeypatch.setattr(StateDB, "BUSY_TIMEOUT", 0.2)
    mem = _open(tmp_path)
    try:
        mem.remember("The capital of France is Paris.", category="fact", id="f")
        before = mem.stats()["categories"]
        ext = _write_locked(tmp_path) if cause == "locked" else None
        try:
            if ext is None:
                monkeypatch.setattr(mem.store, "add", _raise)
            with pytest.raises(StoreLockedError if ext else Boom):
                mem.remember("Buy milk tomorrow.", category="task", id="t")
            assert mem.get("f").text == "The capital of France is Paris."
            assert mem.recall("Paris", feedback=False).ids == ["f"]
            assert mem.stats()["categories"] == before
        finally:
            if ext is not None:
                ext.execute("ROLLBACK")
                ext.close()
        monkeypatch.undo()
        mem.remember("Bob likes tea.", category="fact", id="b")
        assert set(mem.stats()["categories"]) == {"fact"}
    finally:
        mem.close()
    with _open(tmp_path) as again:
        assert set(again.stats()["categories"]) == {"fact"}
        assert again.count() == 2


def _raise(*args: Any, **kwargs: Any) -> None:
    raise Boom("injected")


def test_the_background_writer_waits_only_busy_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Boosts handed to the background writer while another process holds the write
    lock: the writer gives up after StateDB.BUSY_TIMEOUT like every other connection (it
    waited 30 s, and the next call waited for it), and the batch is written once the
    lock is free."""
    monkeypatch.setattr(StateDB, "BUSY_TIMEOUT", 0.2)
    mem = _recalled(tmp_path)
    try:
        mem._lock.settle()
        boosted = _view(mem)
        ext = _write_locked(tmp_path)
        outcome: list[BaseException | None] = []

        def confirm() -> None:
            try:
                with mem._lock:
                    mem._db.hand_off()  # to the writer thread, which meets the lock
                mem.confirm("o")
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        caller = threading.Thread(target=confirm, daemon=True)
        caller.start()
        caller.join(timeout=15)  # generous: it took 30 s; BUSY_TIMEOUT is 0.2 s
        ext.execute("ROLLBACK")
        ext.close()
        assert not caller.is_alive(), "the call waited for the writer past BUSY_TIMEOUT"
        assert isinstance(outcome[0], StoreLockedError)
        assert _view(mem) == boosted
    finally:
        mem.close()
    _assert_reopened(tmp_path, boosted)


class _RaisingJudge:
    def supersedes(self, new: str, old: str, similarity: float) -> bool:
        raise RuntimeError("the judge's LLM is down")


def test_edit_returns_its_own_record_when_stale_fact_detection_fails(tmp_path: Path) -> None:
    """edit() has committed when its stale-fact step fails (logged; the namespace is
    reloaded): it still returns the edited memory, though the reload put rows elsewhere
    (it returned whatever memory now sat in the old row)."""
    mem = _open(tmp_path, supersession_judge=_RaisingJudge())
    try:
        texts = ["office is in leeds", "user likes green tea", "user prefers porto", "budget due"]
        mem.remember_many(texts, ids=["m0", "m1", "m2", "m3"], supersede=False)
        mem.forget("m0")  # the last row fills the hole: rows no longer follow seq
        rec = mem.edit("m2", "user likes black coffee now")
        assert (rec.id, rec.text) == ("m2", "user likes black coffee now")
        assert mem.get("m2").text == "user likes black coffee now"
    finally:
        mem.close()


def test_a_batch_the_writer_could_not_write_is_retried_without_another_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recall boosts handed to the background writer while another process holds the
    write lock are written once the lock is gone, by the timer, without any further call
    (they waited for the next call, so a crash in between lost them)."""
    monkeypatch.setattr(StateDB, "BUSY_TIMEOUT", 0.2)
    monkeypatch.setattr(StateDB, "DEFER_SECONDS", 0.3)
    mem = _open(tmp_path)
    mem.remember_many(_NOTES, ids=["c", "o"])
    ext = _write_locked(tmp_path)
    try:
        mem.recall("what is my favourite colour", k=1)
        time.sleep(1.0)  # the timer's hand-off meets the lock and fails
        ext.execute("ROLLBACK")
        deadline = time.monotonic() + 15
        written = 0
        while written == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
            written = ext.execute("SELECT COUNT(*) FROM events WHERE kind='recall'").fetchone()[0]
        assert written == 1
    finally:
        ext.close()
        mem.close()


def _compressing(path: Path) -> tuple[Oblivion, ManualClock]:
    """A store whose next maintain() compresses four old small-talk memories."""
    policy = Policy.template("balanced").replace(
        compress_below=0.2,
        compress_min_cluster=2,
        compress_similarity=0.0,
        active_share=None,
        maintain_every=0,
    )
    clock = ManualClock()
    mem = _open(path, clock, policy=policy)
    texts = [f"small talk number {i} about the weather" for i in range(4)]
    mem.remember_many(texts, categories=["small_talk"] * 4)
    clock.advance(30 * DAY)
    return mem, clock


def _disk_fails(monkeypatch: pytest.MonkeyPatch, target: Any, name: str, when: Any) -> None:
    """``target.name`` raises a disk error the first time ``when(*args)`` holds."""
    real = getattr(target, name)

    def failing(*args: Any, **kwargs: Any) -> Any:
        if when(*args):
            monkeypatch.setattr(target, name, real)
            raise sqlite3.OperationalError("disk I/O error")
        return real(*args, **kwargs)

    monkeypatch.setattr(target, name, failing)


def _summaries(mem: Oblivion) -> list[str]:
    return [r.id for r in mem.records() if r.category == "summary"]


def test_a_compression_that_fails_writes_no_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The originals' move to the cold tier failing (a disk error) leaves no summary:
    it used to be committed on its own, a summary expand() did not know, and the next
    maintain() wrote a second one of the same memories."""
    mem, _ = _compressing(tmp_path)
    try:
        _disk_fails(monkeypatch, mem._db, "set_summary", lambda *a: True)
        with pytest.raises(StoreError):
            mem.maintain()
        assert _summaries(mem) == []
        assert {r.tier for r in mem.records()} == {Tier.ARCHIVE}
        mem.maintain()
        (sid,) = _summaries(mem)
        assert len(mem.expand(sid)) == 4
    finally:
        mem.close()
    with _open(tmp_path, mem.clock) as again:
        assert _summaries(again) == [sid]


def test_a_decompression_that_fails_keeps_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording the originals as uncompressed failing (a disk error) leaves the summary
    in place: it used to be deleted first, and the next maintain() compressed the
    originals again."""
    mem, _ = _compressing(tmp_path)
    try:
        mem.maintain()
        (sid,) = _summaries(mem)
        view = _view(mem)
        _disk_fails(monkeypatch, mem._db, "set_meta", lambda key, *a: key.startswith("uncomp"))
        with pytest.raises(StoreError):
            mem.decompress(sid)
        assert _view(mem) == view
        assert len(mem.expand(sid)) == 4
        mem.decompress(sid)
        mem.maintain()
        assert _summaries(mem) == []
    finally:
        mem.close()
    with _open(tmp_path, mem.clock) as again:
        assert _summaries(again) == []
        assert {r.tier for r in again.records()} == {Tier.ARCHIVE}


def test_a_store_failing_while_a_load_removes_records_of_no_memory_is_checked_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A namespace's first write finds records of no memory in Chroma (a write killed
    before its commit) and the store fails as they are removed: the write still goes
    on, the failure is logged, and the namespace is checked again before Chroma is next
    queried; ``repair_vector_store`` then removes them."""
    with _open(tmp_path) as mem:
        kept = mem.remember("the office opens at nine").id
        vector = mem._db.vectors("default", [kept])[kept]
        mem.store.add("default", ["stray"], vector[None, :], ["a write never committed"])

    def down(*_args: Any, **_kwargs: Any) -> None:
        raise VectorStoreError("the server is down")

    monkeypatch.setattr(VectorStore, "delete", down)
    with _open(tmp_path) as mem, caplog.at_level(logging.WARNING, logger="oblivion_core"):
        assert [r.id for r in mem.records()] == [kept]
        assert "could not check" not in caplog.text  # reading asks Chroma nothing
        new = mem.remember("the office closes at six").id
        assert "could not check the vector store" in caplog.text
        assert "default" in mem.store.unchecked
        monkeypatch.undo()
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 1}
        assert mem.store.ids("default") == {kept, new}


def test_repair_counts_the_records_of_a_failed_write_it_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write whose records reached Chroma before it failed, with Chroma failing again
    as they were taken back (a server going down mid-batch): they wait, noted, for the
    next check. repair_vector_store() deleted them but reported ``removed: 0``."""
    real_add = VectorStore.add

    def lands_then_fails(self: VectorStore, *args: Any, **kwargs: Any) -> None:
        real_add(self, *args, **kwargs)
        raise VectorStoreError("the server went down mid-batch")

    def down(*_args: Any, **_kwargs: Any) -> None:
        raise VectorStoreError("the server is down")

    with _open(tmp_path) as mem:
        kept = mem.remember("the office opens at nine").id
        monkeypatch.setattr(VectorStore, "add", lands_then_fails)
        monkeypatch.setattr(VectorStore, "delete", down)
        with pytest.raises(VectorStoreError):
            mem.remember_many([f"note {i} about the office" for i in range(5)])
        monkeypatch.undo()
        assert [r.id for r in mem.records()] == [kept]
        assert len(mem.store.ids("default")) == 6  # the 5 wait for the next check
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 5}
        assert mem.store.ids("default") == {kept}
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}
