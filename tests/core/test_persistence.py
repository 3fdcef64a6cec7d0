"""Persistence: a store reopened from disk (real embedded Chroma + SQLite in tmp_path) is
the store that was closed."""

from __future__ import annotations

import json
import logging
import math
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from oblivion_core import ManualClock, Oblivion, Policy, Tier, TurnClock
from oblivion_core.state import SCHEMA_VERSION, StateDB
from oblivion_core.testing import HashEmbedder, word_count

pytestmark = pytest.mark.integration

DAY = 86_400.0


class CountingEmbedder(HashEmbedder):
    """A HashEmbedder that counts the texts it embeds for storage."""

    def __init__(self) -> None:
        super().__init__()
        self.documents = 0

    def embed_documents(self, texts: list[str]) -> Any:
        self.documents += len(texts)
        return super().embed_documents(texts)


def _open(path: Path, clock: Any = None, **kwargs: Any) -> Oblivion:
    kwargs.setdefault("embedder", HashEmbedder())
    return Oblivion(path, clock=clock, token_counter=word_count, **kwargs)


def _state(mem: Oblivion, namespace: str | None = None) -> list[tuple[Any, ...]]:
    return [
        (
            r.id,
            r.text,
            r.category,
            r.importance,
            r.confidence,
            r.created_at,
            r.last_accessed,
            r.access_count,
            r.activation,
            r.decay_rate,
            r.tier,
            dict(r.metadata),
            r.invalidated,
        )
        for r in mem.records(namespace=namespace)
    ]


def test_reopen_restores_every_memory(tmp_path: Path) -> None:
    """Texts, categories, activations, tiers, metadata and flags all survive a reopen."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    chat = mem.remember("ok see you", category="small_talk", importance=0.0)
    rule = mem.remember("Always answer in British English", metadata={"src": "settings"})
    fact = mem.remember("the gate code is 1234", category="fact", importance=0.3)
    wrong = mem.remember("the meeting is in room 12", category="fact")
    mem.remember("a note for another tenant", namespace="tenant-2")
    clock.advance(5 * DAY)
    mem.recall("gate code")
    mem.confirm(rule.id)
    mem.invalidate(wrong.id)
    mem.maintain()
    mem.edit(fact.id, "the gate code is 4321")
    before = _state(mem)
    before_other = _state(mem, "tenant-2")
    assert mem.get(chat.id).tier == Tier.ARCHIVE
    mem.close()

    mem = _open(tmp_path, clock)
    try:
        assert _state(mem) == before
        assert _state(mem, "tenant-2") == before_other
        assert mem.namespaces() == ["default", "tenant-2"]
        assert mem.get(fact.id).text == "the gate code is 4321"
    finally:
        mem.close()


def test_active_index_is_rebuilt_without_re_embedding(tmp_path: Path) -> None:
    """Right after reopening, recall finds active memories with no document re-embedded
    but the few the check of the embedder's model embeds (oblivion_core.model_check)."""
    from oblivion_core.model_check import SAMPLE

    clock = ManualClock()
    mem = _open(tmp_path, clock)
    texts = [f"the pet number {i} is called Rex" for i in range(20)]
    recs = mem.remember_many(["the cat is called Miso", *texts])
    mem.close()

    embedder = CountingEmbedder()
    mem = _open(tmp_path, clock, embedder=embedder)
    try:
        result = mem.recall("cat called Miso", k=1, deep=False)
        assert result.ids == [recs[0].id]
        assert result[0].tier == Tier.ACTIVE
        assert not result.searched_archive
        assert embedder.documents == SAMPLE
    finally:
        mem.close()


def test_after_a_reopen_recall_counts_only_the_tokens_it_packs(tmp_path: Path) -> None:
    """Token counts are kept in memory: after a reopen a recall counts the texts packing
    reaches, not every candidate it ranked, and packs exactly what it packed before."""
    texts = [f"note {i}: the garden shed holds {i} tools and {i % 7} pots" for i in range(40)]
    query = "garden shed tools pots"
    mem = _open(tmp_path, ManualClock())
    mem.remember_many(texts)
    loose = mem.recall(query, k=3, feedback=False)
    # a budget that fits fewer than k items (packing reads further down the ranking)
    tight_budget = loose[0].tokens + mem.policy.per_item_tokens - 1
    tight = mem.recall(query, k=3, token_budget=tight_budget * 2, feedback=False)
    assert len(tight) < 3
    assert loose.candidates >= 30
    mem.close()

    counted: list[str] = []

    def counter(text: str) -> int:
        counted.append(text)
        return word_count(text)

    mem = Oblivion(tmp_path, clock=ManualClock(), embedder=HashEmbedder(), token_counter=counter)
    try:
        again = mem.recall(query, k=3, feedback=False)
        assert [(it.id, it.tokens) for it in again] == [(it.id, it.tokens) for it in loose]
        assert sorted(counted) == sorted(again.texts)  # 3 of 30+ candidates
        again_tight = mem.recall(query, k=3, token_budget=tight_budget * 2, feedback=False)
        assert again_tight.ids == tight.ids
        assert again_tight.total_tokens == tight.total_tokens <= tight_budget * 2
    finally:
        mem.close()


def test_archived_memories_stay_archived_and_searchable(tmp_path: Path) -> None:
    """An archived memory is still archived after a reopen and deep recall finds it."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    chat = mem.remember("lovely sunny weather in Lisbon", category="small_talk", importance=0.0)
    mem.remember("Always answer briefly", category="instruction")
    clock.advance(5 * DAY)
    mem.maintain()
    mem.close()

    mem = _open(tmp_path, clock)
    try:
        assert mem.get(chat.id).tier == Tier.ARCHIVE
        assert mem.recall("sunny weather Lisbon", deep=True, k=1).ids == [chat.id]
    finally:
        mem.close()


def test_the_journal_persists(tmp_path: Path) -> None:
    """Every journal event is readable, unchanged, after a reopen."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    rec = mem.remember("the gate code is 1234", category="fact")
    clock.advance(DAY)
    mem.recall("gate code")
    mem.mark_used([rec.id])
    gone = mem.remember("temporary note", category="fact")
    mem.forget(gone.id)
    events = mem.history()
    mem.close()

    mem = _open(tmp_path, clock)
    try:
        assert mem.history() == events
        assert [e.kind for e in mem.history(gone.id)][-1] == "forget"
    finally:
        mem.close()


def test_the_turn_counter_persists(tmp_path: Path) -> None:
    """Under the turn clock, a reopened store continues counting where it stopped."""
    mem = _open(tmp_path, policy=Policy.template("balanced", clock="turns"))
    rec = mem.remember("first turn")
    mem.remember_many(["second turn", "third turn"])
    activation = mem.get(rec.id).activation
    mem.close()

    mem = _open(tmp_path)  # no policy given: the stored one (turns) is used
    try:
        assert mem.policy.clock == "turns"
        assert isinstance(mem.clock, TurnClock)
        assert mem.clock.now() == 3.0
        assert mem.get(rec.id).activation == activation
        mem.remember("fourth turn")
        assert mem.clock.now() == 4.0
    finally:
        mem.close()


def test_ticks_without_a_write_persist(tmp_path: Path) -> None:
    """``clock.tick()`` (every namespace) and ``tick(namespace=...)`` with no write after
    them are kept by close(): the reopened store decays from the same turn."""
    mem = _open(tmp_path, policy=Policy.template("balanced", clock="turns"))
    rec = mem.remember("the spare key is under the blue pot", namespace="alice")
    mem.remember("bob's own memory", namespace="bob")
    assert isinstance(mem.clock, TurnClock)
    mem.clock.tick(3)
    mem.clock.tick(2, namespace="alice")
    alice, bob = mem.clock.now("alice"), mem.clock.now("bob")
    activation = mem.get(rec.id, namespace="alice").activation
    mem.close()

    mem = _open(tmp_path)
    try:
        assert (mem.clock.now("alice"), mem.clock.now("bob")) == (alice, bob) == (6.0, 4.0)
        assert mem.get(rec.id, namespace="alice").activation == pytest.approx(activation)
    finally:
        mem.close()


def test_ticks_of_a_namespace_with_no_memory_persist(tmp_path: Path) -> None:
    """A namespace's own ticks are kept even while it holds no memory yet (the default
    namespace of an agent that only recalled so far): its first memory starts there."""
    mem = _open(tmp_path, policy=Policy.template("balanced", clock="turns"))
    mem.remember("a note for another tenant", namespace="alice")
    assert isinstance(mem.clock, TurnClock)
    mem.clock.tick(5, namespace="default")
    mem.clock.tick(2, namespace="carol")
    mem.close()

    mem = _open(tmp_path)
    try:
        assert mem.clock.now("default") == 5.0
        assert mem.clock.now("carol") == 2.0
        assert mem.clock.now("alice") == 1.0
    finally:
        mem.close()


def test_mark_used_after_a_reopen_boosts_by_the_last_recall(tmp_path: Path) -> None:
    """mark_used() boosts by the relevance of the memory's last recall, which is stored: the
    same calls give the same activation whether or not the store was reopened between the
    recall and mark_used() (it used to fall back to relevance 1.0)."""

    def run(reopen: bool, path: Path) -> tuple[float, float]:
        clock = ManualClock()
        mem = _open(path, clock)
        mem.remember("the garden shed holds twelve tools", id="a", importance=0.0)
        relevance = mem.recall("garden", k=1).items[0].relevance
        if reopen:
            mem.close()
            mem = _open(path, clock)
        try:
            return relevance, mem.mark_used(["a"])[0]
        finally:
            mem.close()

    relevance, live = run(False, tmp_path / "live")
    _, reopened = run(True, tmp_path / "reopened")
    assert relevance < 0.9  # so relevance 1.0 would boost more
    assert reopened == pytest.approx(live, rel=1e-12)


def test_writes_since_maintain_persist(tmp_path: Path) -> None:
    """maintain_every counts writes across a reopen: the automatic maintain() runs after
    the same write whether or not the store was closed in between."""
    policy = Policy.template("balanced").replace(
        maintain_every=3, active_capacity=1, active_share=None
    )
    texts = ["the garden shed", "the blue piano", "a river flight", "an invoice note"]

    def run(reopen: bool, path: Path) -> tuple[dict[str, Tier], list[str]]:
        mem = _open(path, ManualClock(), policy=policy)
        mem.remember(texts[0], id="a")
        mem.remember(texts[1], id="b")
        if reopen:
            mem.close()
            mem = _open(path, ManualClock())
        try:
            mem.remember(texts[2], id="c")  # the third write: maintain_every is reached
            mem.remember(texts[3], id="d")
            return {r.id: r.tier for r in mem.records()}, [e.kind for e in mem.history()]
        finally:
            mem.close()

    live = run(False, tmp_path / "live")
    assert "archive" in live[1]  # the automatic maintain() ran
    assert run(True, tmp_path / "reopened") == live


def test_stats_of_an_emptied_category_survive_a_reopen(tmp_path: Path) -> None:
    """A category whose last memory was forgotten still shows its counted use in stats(),
    before and after a reopen alike."""
    mem = _open(tmp_path, ManualClock())
    mem.remember("keep me", category="fact", id="a")
    mem.remember("My favourite drink is tea.", category="preference", id="b")
    mem.forget("b")
    live = mem.stats()["categories"]
    mem.close()
    mem = _open(tmp_path, ManualClock())
    try:
        again = mem.stats()["categories"]
    finally:
        mem.close()
    assert live["preference"]["count"] == 0
    assert live["preference"]["window"]["stored"] == 1
    assert again == live


def test_reopening_a_turns_store_with_a_template_name_keeps_turns(tmp_path: Path) -> None:
    """Reopening a turn-clock store with a template name keeps counting turns, and no
    activation changes."""
    mem = _open(tmp_path, policy=Policy.template("balanced", clock="turns"))
    rec = mem.remember("the spare key is under the blue pot", category="fact", importance=0.0)
    activation = mem.get(rec.id).activation
    mem.close()

    mem = _open(tmp_path, policy="balanced")
    try:
        assert mem.get(rec.id).activation == activation
        assert isinstance(mem.clock, TurnClock)
    finally:
        mem.close()


def test_policies_persist(tmp_path: Path) -> None:
    """The default policy and per-namespace overrides are restored on reopen."""
    mem = _open(tmp_path, policy="research-assistant")
    mem.remember("a note", namespace="desk")
    mem.set_policy("support-desk", namespace="desk")
    mem.close()

    mem = _open(tmp_path)
    try:
        assert mem.policy.name == "research-assistant"
        assert mem.policy_for("desk").name == "support-desk"
    finally:
        mem.close()


def test_an_explicit_policy_replaces_the_stored_one(tmp_path: Path) -> None:
    """Passing a policy when reopening uses (and stores) that policy instead."""
    _open(tmp_path, policy="research-assistant").close()
    mem = _open(tmp_path, policy="support-desk")
    mem.close()
    mem = _open(tmp_path)
    try:
        assert mem.policy.name == "support-desk"
    finally:
        mem.close()


@pytest.mark.parametrize(
    ("call", "synced"),
    [
        (lambda m: m.remember("another memory"), True),
        (lambda m: m.edit("a", "Sam likes black tea"), True),
        (lambda m: m.confirm("a"), True),
        (lambda m: m.invalidate("b"), True),
        (lambda m: m.forget("c"), True),
        (lambda m: m.forget_where(where={"kind": "pin"}), True),
        (lambda m: m.clear(), True),
        (lambda m: m.mark_used(["a"]), False),  # a boost per answer, as recall's
    ],
    ids=["remember", "edit", "confirm", "invalidate", "forget", "forget_where", "clear", "used"],
)
def test_explicit_changes_are_synced_to_disk_as_they_return(
    tmp_path: Path, call: Any, synced: bool
) -> None:
    """A commit in WAL mode with synchronous=NORMAL may be rolled back by a power loss:
    a forget() (a PIN) could come back, a confirm() or invalidate() be undone. Those
    commit with synchronous=FULL, as remember() does; a use boost does not."""
    mem = _open(tmp_path)
    try:
        mem.remember_many(
            ["Sam likes green tea", "Sam lives in Porto", "Sam's PIN is 1234"],
            ids=["a", "b", "c"],
            metadatas=[{}, {}, {"kind": "pin"}],
        )
        statements: list[str] = []
        mem._db.conn.set_trace_callback(statements.append)
        call(mem)
        mem._db.conn.set_trace_callback(None)
        full = any("synchronous=FULL" in s.replace(" ", "") for s in statements)
        assert full == synced
    finally:
        mem.close()


def test_remember_is_durable_without_close(tmp_path: Path) -> None:
    """A memory is on disk once remember() returns, even if the process then dies."""
    code = textwrap.dedent(
        f"""
        import os
        from oblivion_core import Oblivion, ManualClock
        from oblivion_core.testing import HashEmbedder, word_count
        mem = Oblivion({str(tmp_path)!r}, clock=ManualClock(), embedder=HashEmbedder(),
                       token_counter=word_count)
        rec = mem.remember("written just before the crash", id="last-words")
        os._exit(0)  # no close(), no flush, no atexit handlers
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    mem = _open(tmp_path, ManualClock())
    try:
        assert mem.get("last-words").text == "written just before the crash"
        assert mem.recall("crash", k=1, deep=False).ids == ["last-words"]
    finally:
        mem.close()


def _boosted(path: Path, clock: ManualClock) -> tuple[Oblivion, float]:
    mem = _open(path, clock)
    mem.remember("the staging database password rotates monthly", id="pw", importance=0.3)
    clock.advance(3 * DAY)
    before = mem.get("pw").activation
    assert mem.recall("staging database password", k=1, deep=True).ids == ["pw"]
    after = mem.get("pw").activation
    assert after > before
    return mem, after


def test_recall_boosts_are_written_on_close(tmp_path: Path) -> None:
    """Recall boosts are batched (StateDB.defer); close() writes them."""
    clock = ManualClock()
    mem, after = _boosted(tmp_path, clock)
    mem.close()
    reopened = _open(tmp_path, clock)
    try:
        assert reopened.get("pw").activation == pytest.approx(after)
        assert [e.kind for e in reopened.history("pw")] == ["remember", "recall"]
    finally:
        reopened.close()


def test_recall_boosts_are_written_with_the_next_write(tmp_path: Path) -> None:
    """A remember() after a recall commits the waiting boosts with it, so they survive a
    crash right after (the process dies without close())."""
    code = textwrap.dedent(
        f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from oblivion_core import ManualClock
        from test_persistence import _boosted
        from pathlib import Path
        mem, after = _boosted(Path({str(tmp_path)!r}), ManualClock())
        mem.remember("an unrelated note")
        print(after)
        os._exit(0)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, timeout=120, capture_output=True, text=True
    )
    mem = _open(tmp_path, ManualClock(start=3 * DAY))
    try:
        assert mem.get("pw").activation == pytest.approx(float(out.stdout.split()[-1]))
    finally:
        mem.close()


def test_history_shows_waiting_recall_events(tmp_path: Path) -> None:
    """The journal a caller reads includes boosts not yet flushed."""
    mem, _ = _boosted(tmp_path, ManualClock())
    try:
        assert [e.kind for e in mem.history("pw")] == ["remember", "recall"]
    finally:
        mem.close()


def _events_on_disk(path: Path, kind: str) -> int:
    conn = sqlite3.connect(str(path / StateDB.FILE))
    try:
        return int(conn.execute("SELECT COUNT(*) FROM events WHERE kind=?", (kind,)).fetchone()[0])
    finally:
        conn.close()


def test_recall_boosts_reach_the_disk_within_the_window_without_another_call(
    tmp_path: Path,
) -> None:
    """``StateDB.DEFER_SECONDS`` holds when the agent goes idle too: a timer hands the
    batch to the writer, and another connection sees it without any further call."""
    mem, _ = _boosted(tmp_path, ManualClock())
    try:
        assert _events_on_disk(tmp_path, "recall") == 0  # batched, not yet written
        deadline = time.monotonic() + 15
        while _events_on_disk(tmp_path, "recall") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _events_on_disk(tmp_path, "recall") == 1
    finally:
        mem.close()


def test_recalls_in_a_row_share_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recall's feedback only queues: the boosts of recalls in a row wait for one batch
    (a change that writes queued updates first must not make every recall commit the one
    before it)."""
    monkeypatch.setattr(StateDB, "DEFER_SECONDS", 3600.0)  # no timer within the test
    mem, _ = _boosted(tmp_path, ManualClock())
    try:
        for _ in range(3):
            mem.recall("staging database password", k=1, deep=True)
            mem._lock.settle()
        assert _events_on_disk(tmp_path, "recall") == 0
    finally:
        mem.close()
    assert _events_on_disk(tmp_path, "recall") == 4


def test_a_script_that_exits_without_close_keeps_its_recall_boosts(tmp_path: Path) -> None:
    """An instance still open at the interpreter's exit is closed then (atexit)."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from oblivion_core import ManualClock
        from test_persistence import _boosted
        from pathlib import Path
        mem, after = _boosted(Path({str(tmp_path)!r}), ManualClock())
        print(after)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, timeout=120, capture_output=True, text=True
    )
    assert "Traceback" not in out.stderr, out.stderr
    mem = _open(tmp_path, ManualClock(start=3 * DAY))
    try:
        assert mem.get("pw").activation == pytest.approx(float(out.stdout.split()[-1]))
        assert mem.get("pw").access_count == 1
        assert [e.kind for e in mem.history("pw")] == ["remember", "recall"]
    finally:
        mem.close()


def test_closing_at_exit_gives_up_on_a_lock_held_elsewhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon thread stuck inside a call must not hang the interpreter's exit."""
    mem = _open(tmp_path, ManualClock())
    monkeypatch.setattr(type(mem._at_exit), "WAIT", 0.05)
    held, go = threading.Event(), threading.Event()

    def stuck() -> None:
        with mem._lock:
            held.set()
            go.wait(10)

    t = threading.Thread(target=stuck)
    t.start()
    held.wait(10)
    with caplog.at_level(logging.ERROR, logger="oblivion_core"):
        mem._at_exit()
    assert "was not closed at exit" in caplog.text
    go.set()
    t.join()
    assert not mem._closed
    mem._at_exit()  # free now: it closes
    assert mem._closed


def test_exit_is_not_held_up_by_a_daemon_thread_stuck_inside_a_call(tmp_path: Path) -> None:
    """The main thread ends while a daemon thread, inside a call, holds the engine's lock
    forever and a recall's feedback is still queued: the interpreter exits (the feedback
    worker is a daemon; the close at exit gives up after its wait) and keeps what was
    written."""
    code = textwrap.dedent(
        f"""
        import threading, time
        from oblivion_core import ManualClock, Oblivion
        from oblivion_core.engine import _CloseAtExit
        from oblivion_core.testing import HashEmbedder, word_count

        _CloseAtExit.WAIT = 0.5
        mem = Oblivion({str(tmp_path)!r}, clock=ManualClock(), embedder=HashEmbedder(),
                       token_counter=word_count)
        mem.remember("the garden hose is in the shed", id="g")
        hang, started, held = threading.Event(), threading.Event(), threading.Event()

        def stuck():
            started.set()
            with mem._lock:  # a call that never returns (a hung remote tokenizer, say)
                held.set()
                hang.wait()

        with mem._lock:  # as a recall does: queue its feedback, then release
            threading.Thread(target=stuck, daemon=True).start()
            started.wait(30)
            time.sleep(0.3)  # the stuck call now waits for the lock, ahead of the worker
            mem._lock.later(lambda: None)
        held.wait(30)  # on a loaded machine it may come after the worker, but it comes
        print("main ends", flush=True)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], timeout=60, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "main ends" in out.stdout
    assert "was not closed at exit" in out.stderr  # the close at exit gave up, and said so
    mem = _open(tmp_path, ManualClock())
    try:
        assert mem.get("g").text == "the garden hose is in the shed"
    finally:
        mem.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_write_the_parents_queued_updates(tmp_path: Path) -> None:
    """A child forked while a recall's journal entry waits exits normally: the close at
    exit it inherited does nothing there, so the parent's close writes the entry once."""
    code = textwrap.dedent(
        f"""
        import os, sys
        from oblivion_core import ManualClock, Oblivion
        from oblivion_core.testing import HashEmbedder, word_count

        mem = Oblivion({str(tmp_path)!r}, clock=ManualClock(), embedder=HashEmbedder(),
                       token_counter=word_count)
        mem.remember("the garden hose is in the shed", id="g")
        mem.recall("garden hose", k=1)
        mem._lock.settle()
        assert mem._db.deferred  # the journal entry waits for the writer
        pid = os.fork()
        if pid == 0:
            sys.exit(0)  # a worker process that never touches the store: atexit runs
        os.waitpid(pid, 0)
        mem.close()
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert _events_on_disk(tmp_path, "recall") == 1
    mem = _open(tmp_path, ManualClock())
    try:
        assert mem.get("g").access_count == 1
        assert [e.kind for e in mem.history("g")] == ["remember", "recall"]
    finally:
        mem.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_the_store_was_open_does_not_keep_it_locked(
    tmp_path: Path,
) -> None:
    """The child inherited the store's lock descriptor: after the parent's close() the
    store stayed locked (StoreLockedError, "open in another instance") until the child
    exited. The child's copy goes at the fork; the parent holds the lock until close()."""
    code = textwrap.dedent(
        f"""
        import os, sys
        from oblivion_core import ManualClock, Oblivion, StoreLockedError
        from oblivion_core.testing import HashEmbedder, word_count

        def opened():
            return Oblivion({str(tmp_path)!r}, clock=ManualClock(), embedder=HashEmbedder(),
                            token_counter=word_count)

        mem = opened()
        mem.remember("the garden hose is in the shed", id="g")
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # a worker that never touches the store, alive until told
            os.close(write)
            os.read(read, 1)
            os._exit(0)
        os.close(read)
        try:
            opened()
            raise SystemExit("a second instance opened while the first was open")
        except StoreLockedError:
            pass
        mem.close()
        again = opened()  # the child still runs
        assert again.get("g").text == "the garden hose is in the shed"
        again.close()
        os.write(write, b"x")
        os.waitpid(pid, 0)
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("chroma", ["embedded", "in memory"])
def test_a_child_forked_after_the_open_is_refused_and_writes_nothing(
    tmp_path: Path, chroma: str
) -> None:
    """``gunicorn --preload``: the app opens the store, then forks its workers. A
    worker's write hung for good inside embedded Chroma; over a server each worker saw
    only its own memories; a worker's write took the parent's queued recall entry,
    written again by the parent. Every call in the child is now refused, naming the fix;
    its close() marks the copy closed; the parent goes on and writes the entry once."""
    store = "None" if chroma == "in memory" else "VectorStore.embedded(p + '/chroma')"
    code = textwrap.dedent(
        f"""
        import os, sys
        from oblivion_core import ManualClock, Oblivion, StoreLockedError, VectorStore
        from oblivion_core.testing import HashEmbedder, word_count

        p = {str(tmp_path)!r}
        mem = Oblivion(p, clock=ManualClock(), embedder=HashEmbedder(),
                       token_counter=word_count, vector_store={store})
        mem.remember("the garden hose is in the shed", id="g")
        mem.recall("garden hose", k=1)
        mem._lock.settle()
        assert mem._db.deferred  # the recall's journal entry waits for the writer
        pid = os.fork()
        if pid == 0:
            calls = [
                lambda: mem.remember("written by a worker"),
                lambda: mem.mark_used(["g"]),
                lambda: mem.recall("garden hose"),
                lambda: mem.count(),
                lambda: mem.maintain(),
            ]
            for call in calls:
                try:
                    call()
                    os._exit(2)
                except StoreLockedError as exc:
                    if "before this process" not in str(exc) or "post_fork" not in str(exc):
                        os._exit(3)
            mem.close()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert mem.count() == 1
        mem.remember("written by the parent", id="p")
        mem.close()
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert _events_on_disk(tmp_path, "recall") == 1
    mem = _open(tmp_path, ManualClock())
    try:
        assert sorted(r.id for r in mem.records()) == ["g", "p"]
        assert [e.kind for e in mem.history("g")] == ["remember", "recall"]
    finally:
        mem.close()


def test_a_store_made_by_another_opener_while_waiting_to_lock_is_opened_not_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes opening a new path: B looked for the database before it took the
    lock. When A made the store, wrote and closed in between (B stalled on a busy host),
    B took A's database for a new one it had made, deleted it as the vector store held
    records, and raised StoreCorruptError: every activation was lost. B now looks once
    it holds the lock, and opens A's store."""
    path = tmp_path / "mem"
    take = StateDB._take_lock
    stalled: list[bool] = []

    def stalled_then_take(self: StateDB, directory: Path) -> None:
        if not stalled:  # B, before its lock: A opens, writes and closes meanwhile
            stalled.append(True)
            with Oblivion(path, embedder=HashEmbedder(), token_counter=word_count) as a:
                a.remember_many([f"note {i} about the garden" for i in range(5)])
        take(self, directory)

    monkeypatch.setattr(StateDB, "_take_lock", stalled_then_take)
    with Oblivion(path, embedder=HashEmbedder(), token_counter=word_count) as b:
        assert b.count() == 5
    assert stalled == [True]
    assert (path / StateDB.FILE).stat().st_size > 0


def test_the_demo_lets_go_of_the_store_lock_it_takes(tmp_path: Path) -> None:
    """The demo's check released its lock with a plain os.close: the number stayed among
    the held locks, and a forked child replaced whatever file reused it with /dev/null."""
    from oblivion_core import state
    from oblivion_core.demo import _unused

    held = set(state._HELD_LOCKS)
    with _unused(tmp_path):
        assert len(state._HELD_LOCKS) == len(held) + 1
    assert held == state._HELD_LOCKS


def test_updates_handed_off_while_no_thread_can_start_are_written_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the main thread ends, the writer cannot take new jobs (``submit`` raises):
    a hand-off keeps the batch for the next write, or the close, instead of losing it."""
    clock = ManualClock()
    mem, after = _boosted(tmp_path, clock)
    mem._lock.settle()
    db = mem._db
    assert db.deferred

    class ShutDown:
        def submit(self, *args: Any) -> Any:
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(db, "_background_writer", lambda: ShutDown())
    db.hand_off()
    assert db.deferred  # still owed, not dropped
    assert _events_on_disk(tmp_path, "recall") == 0
    mem.close()  # writes it in line
    reopened = _open(tmp_path, clock)
    try:
        assert reopened.get("pw").activation == pytest.approx(after)
        assert [e.kind for e in reopened.history("pw")] == ["remember", "recall"]
    finally:
        reopened.close()


def test_a_version_1_store_opens_and_keeps_working(tmp_path: Path) -> None:
    """A store from before vectors were kept in SQLite (schema 1, FTS5 tables) opens:
    the old FTS5 table is dropped, vectors come from Chroma, lexical search is rebuilt."""
    import sqlite3

    clock = ManualClock()
    mem = _open(tmp_path, clock)
    mem.remember("the quokka lives on Rottnest Island", id="q", importance=0.2)
    mem.remember("unrelated words about spreadsheets", id="s")
    clock.advance(60 * DAY)
    mem.maintain()
    assert mem.get("q").tier == Tier.ARCHIVE
    mem.close()
    conn = sqlite3.connect(tmp_path / "oblivion.sqlite3")
    conn.execute("DELETE FROM vectors")
    conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    conn.execute("CREATE VIRTUAL TABLE fts_0123456789abcdef USING fts5(text)")
    conn.commit()
    conn.close()

    mem = _open(tmp_path, clock)
    try:
        result = mem.recall("quokka island", k=1, deep=True, feedback=False)
        assert result.ids == ["q"]
        assert result.items[0].why["relevance_signals"]["lexical"] > 0
        assert result.items[0].relevance > 0
    finally:
        mem.close()
    conn = sqlite3.connect(tmp_path / "oblivion.sqlite3")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    conn.close()
    assert not any(t.startswith("fts_") for t in tables)
    assert version == str(SCHEMA_VERSION)


def _as_version_2(path: Path) -> None:
    """Rewrite a closed store in the version-2 layout: each memory's last event time
    (``t_ref``) instead of its category's decay clock reading, no clocks, the journal
    indexed by (namespace, memory_id)."""
    import json
    import sqlite3

    conn = sqlite3.connect(path / StateDB.FILE)
    for key, value in conn.execute("SELECT key, value FROM meta WHERE key LIKE 'clock:%'"):
        ns = key.removeprefix("clock:")
        for category, (t0, d0, rate) in json.loads(value).items():
            conn.execute(
                "UPDATE memories SET d_ref = ? + (d_ref - ?) / ? WHERE namespace=? AND category=?",
                (t0, d0, rate, ns, category),
            )
    conn.execute("DELETE FROM meta WHERE key LIKE 'clock:%'")
    conn.execute("ALTER TABLE memories RENAME COLUMN d_ref TO t_ref")
    conn.execute("DROP INDEX events_by_key")
    conn.execute("ALTER TABLE events DROP COLUMN mkey")
    conn.execute("DROP INDEX events_by_namespace")
    conn.execute("ALTER TABLE events DROP COLUMN nkey")
    conn.execute("ALTER TABLE memories DROP COLUMN relevance")
    conn.execute("CREATE INDEX events_by_memory ON events (namespace, memory_id)")
    conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    conn.commit()
    conn.close()


def test_a_version_2_store_keeps_every_activation_and_decays_on(tmp_path: Path) -> None:
    """Opening a store written before decay clocks (schema 2, event times) converts it in
    place: the same activations at the moment of opening and afterwards, tiers, categories
    and every memory's journal unchanged, and it records boosts as before."""
    import sqlite3

    clock = ManualClock()
    mem = _open(tmp_path, clock)
    mem.remember("Always answer in English.", id="rule")
    mem.remember("I like green tea in the afternoon.", id="tea")
    mem.remember("lol nice weather today", id="chat", category="small_talk")
    clock.advance(2 * DAY)
    mem.recall("tea", k=1)
    clock.advance(3 * DAY)
    ids = ["rule", "tea", "chat"]
    before = {m: mem.get(m) for m in ids}
    journal = {m: [(e.kind, e.after) for e in mem.history(m)] for m in ids}
    mem.close()
    _as_version_2(tmp_path)
    conn = sqlite3.connect(tmp_path / StateDB.FILE)
    assert "t_ref" in {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    conn.close()

    mem = _open(tmp_path, clock)
    try:
        for m in ids:
            assert [(e.kind, e.after) for e in mem.history(m)] == journal[m]
            assert mem.get(m).activation == pytest.approx(before[m].activation, rel=1e-12)
            assert (mem.get(m).tier, mem.get(m).category) == (before[m].tier, before[m].category)
        clock.advance(4 * DAY)
        for m in ids:
            rate = before[m].decay_rate
            floor = mem.policy.floor_fraction * before[m].importance ** 2
            expected = max(
                min(before[m].activation, floor), before[m].activation * math.exp(-rate * 4 * DAY)
            )
            assert mem.get(m).activation == pytest.approx(expected, rel=1e-9)
        mem.recall("green tea", k=1)
        assert mem.history("tea")[-1].kind == "recall"
    finally:
        mem.close()
    conn = sqlite3.connect(tmp_path / StateDB.FILE)
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    columns = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    conn.close()
    assert "events_by_key" in indexes and "events_by_memory" not in indexes
    assert meta["schema_version"] == str(SCHEMA_VERSION)
    assert StateDB.LEGACY_TIMES not in meta
    assert "clock:default" in meta
    assert "d_ref" in columns and "t_ref" not in columns and "relevance" in columns


def test_use_counts_survive_a_crash_once_their_batch_is_written(tmp_path: Path) -> None:
    """The counters adaptation learns from (stored, recalled, used) go out with the
    batched writes: a process that dies without close() once the batch window has passed
    leaves them on disk (they used to be saved only by maintain() and close())."""
    code = textwrap.dedent(
        f"""
        import json, os, time
        from oblivion_core import Oblivion, ManualClock
        from oblivion_core.testing import HashEmbedder, word_count
        mem = Oblivion({str(tmp_path)!r}, clock=ManualClock(), embedder=HashEmbedder(),
                       token_counter=word_count)
        for i in range(4):
            mem.remember(f"the build server number {{i}} runs nightly", category="fact")
        for _ in range(3):
            ids = mem.recall("build server nightly", k=2).ids
        mem.mark_used(ids[:1])
        time.sleep(3 * mem._db.DEFER_SECONDS)  # the timer hands the batch to the writer
        mem._lock.settle()
        mem._db._settle()
        print(json.dumps(mem.stats()["categories"]["fact"]["window"]))
        os._exit(0)  # no close(), no maintain()
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, timeout=120, capture_output=True, text=True
    )
    live = json.loads(out.stdout.split("\n")[-2])
    mem = _open(tmp_path, ManualClock())
    try:
        usage = mem.stats()["categories"]["fact"]["window"]
        assert usage == live
        assert usage["stored"] == 4 and usage["recalled"] >= 6 and usage["used"] >= 1
    finally:
        mem.close()


def _archived_pair(path: Path, clock: ManualClock) -> Oblivion:
    """A store holding an archived memory "old" and an active "new"."""
    mem = _open(path, clock, policy=Policy.template("balanced").replace(active_share=None))
    mem.remember("The wifi password is hunter2", category="small_talk", id="old")
    clock.advance(30 * DAY)
    mem.remember("Remember to water the plants", category="instruction", id="new")
    mem.maintain()
    assert mem.get("old").tier == Tier.ARCHIVE
    return mem


@pytest.mark.parametrize("loss", ["folder", "one record"])
def test_memories_the_vector_store_lost_are_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, loss: str
) -> None:
    """A chroma/ folder deleted (or restored from an older backup), or a record gone
    from it (a crash between a delete's Chroma call and its commit): the store opened
    silently and recall through Chroma no longer found those memories. They are put back
    from the vectors SQLite keeps, with a warning."""
    monkeypatch.setattr(Oblivion, "EXACT_ARCHIVE_ROWS", 0)  # the archive through Chroma
    monkeypatch.setattr(Oblivion, "SKETCH_ARCHIVE_ROWS", 0)
    clock = ManualClock()
    mem = _archived_pair(tmp_path, clock)
    query = "the wifi password hunter2"
    before = mem.recall(query, deep=True, feedback=False).ids
    assert "old" in before
    if loss == "one record":
        mem.store.delete(mem.default_namespace, ["old"])
    mem.close()
    if loss == "folder":
        import shutil

        shutil.rmtree(tmp_path / "chroma")
    with caplog.at_level(logging.WARNING), _open(tmp_path, clock) as again:
        assert again.recall(query, deep=True, feedback=False).ids == before
        assert again.store.count(again.default_namespace) == 2
    assert "putting them back from the activation database" in caplog.text


def test_a_namespace_that_could_not_be_checked_at_load_is_checked_before_its_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vector store could not be counted when the namespace was loaded (a server
    down for a moment): it was taken as checked, and recall through Chroma missed a
    memory it lacked for the rest of the process."""
    from oblivion_core import VectorStoreError

    monkeypatch.setattr(Oblivion, "EXACT_ARCHIVE_ROWS", 0)  # the archive through Chroma
    monkeypatch.setattr(Oblivion, "SKETCH_ARCHIVE_ROWS", 0)
    clock = ManualClock()
    mem = _archived_pair(tmp_path, clock)
    mem.store.delete(mem.default_namespace, ["old"])
    mem.close()
    with _open(tmp_path, clock) as again:
        count = again.store.count

        def down(ns: str) -> int:
            raise VectorStoreError("the server is down")

        monkeypatch.setattr(again.store, "count", down)
        assert again.get("new").text == "Remember to water the plants"  # loads it
        monkeypatch.setattr(again.store, "count", count)
        found = again.recall("the wifi password hunter2", deep=True, feedback=False)
        assert "old" in found.ids
        assert again.store.ids(again.default_namespace) == {"old", "new"}


def test_a_namespace_recalled_in_process_leaves_its_collection_unopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Loading a namespace counted its Chroma collection, which opened it: a user's
    first recall after a restart took 26 ms instead of 3 (and Chroma kept 2.6 MB for
    the user), though recall searched in process. The check waits for the namespace's
    first Chroma query or write; a record Chroma lost is still put back before it."""
    clock = ManualClock()
    with _open(tmp_path, clock) as mem:
        for user in ("ann", "bob"):
            mem.remember_many([f"{user} likes tea", f"{user} lives in Porto"], namespace=user)
        lost = mem.records(namespace="bob")[0].id
        mem.store.delete("bob", [lost])
    with _open(tmp_path, clock) as again:
        asked: list[str] = []
        for name in ("count", "ids"):
            call = getattr(again.store, name)
            monkeypatch.setattr(
                again.store, name, lambda ns, call=call, name=name: asked.append(name) or call(ns)
            )
        assert again.recall("ann likes tea", namespace="ann", k=1).texts == ["ann likes tea"]
        assert again.recall("bob likes tea", namespace="bob", k=1).texts == ["bob likes tea"]
        assert asked == []  # neither collection was asked anything
        with caplog.at_level(logging.WARNING):
            again.remember("bob plays the cello", namespace="bob")
        assert "lacked 1 of the 2 memories of namespace 'bob'" in caplog.text
        assert lost in again.store.ids("bob") and again.store.count("bob") == 3


def test_a_check_cut_short_is_made_again_before_the_next_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deferred check of the vector store stopped by anything but an outage (a
    StoreConflictError, an interrupt) marked the namespace checked, and what Chroma lost
    was never put back in that process."""
    with _open(tmp_path) as mem:
        kept = mem.remember("the office opens at nine").id
        mem.store.delete("default", [kept])
    with _open(tmp_path) as mem:
        restore = mem._sync.restore_lost

        def interrupted(*args: Any, **kwargs: Any) -> Any:
            monkeypatch.setattr(mem._sync, "restore_lost", restore)
            raise KeyboardInterrupt

        monkeypatch.setattr(mem._sync, "restore_lost", interrupted)
        with pytest.raises(KeyboardInterrupt):
            mem.remember("the office closes at six")
        assert "default" in mem.store.unchecked
        new = mem.remember("the office closes at six").id
        assert mem.store.ids("default") == {kept, new}


def test_a_forget_first_after_a_reopen_checks_the_vector_store_first(tmp_path: Path) -> None:
    """Chroma lost two records and holds one of no memory; after a reopen the first call
    forgets one of the lost ones. Made before the check, the forget made the counts
    agree, and the check after it looked no further: the other lost record and the
    stray one stayed until ``repair_vector_store``."""
    with _open(tmp_path) as mem:
        ids = [mem.remember(f"the shed holds tool {i}", id=f"f{i}").id for i in range(4)]
        vector = mem._db.vectors("default", ["f0"])["f0"]
        mem.store.delete("default", ["f0", "f1"])
        mem.store.add("default", ["stray"], vector[None, :], ["a write never committed"])
    with _open(tmp_path) as mem:
        mem.forget("f0")
        assert mem.store.ids("default") == set(ids) - {"f0"}


def test_lost_vectors_with_no_copy_in_sqlite_are_reported(tmp_path: Path) -> None:
    """A memory neither Chroma nor SQLite holds a vector of (a version-1 store) cannot be
    put back: the store says so instead of recalling without it."""
    from oblivion_core import StoreCorruptError

    clock = ManualClock()
    mem = _archived_pair(tmp_path, clock)
    mem.store.delete(mem.default_namespace, ["old"])
    mem.close()
    conn = sqlite3.connect(tmp_path / StateDB.FILE)
    conn.execute("DELETE FROM vectors WHERE id='old'")
    conn.commit()
    conn.close()
    with _open(tmp_path, clock) as again, pytest.raises(StoreCorruptError, match="backup"):
        again.get("old")


@pytest.mark.parametrize("reopen", [False, True])
def test_a_summary_is_not_the_turn_before_after_a_reopen(tmp_path: Path, reopen: bool) -> None:
    """A reopened store took the newest memory, a summary compression wrote, as the
    turn just before the next write and linked them; the live instance does not."""
    policy = Policy.template("balanced").replace(
        compress_below=0.2, active_share=None, half_lives={"event": 10.0, "fact": 1e9}
    )
    clock = ManualClock()
    mem = _open(tmp_path, clock, policy=policy)
    for t in (
        "the budget meeting started",
        "the budget meeting went on",
        "the budget meeting ended",
    ):
        mem.remember(t, category="event", importance=0.1)
    clock.advance(10_000)
    assert mem.maintain().ids("compress")
    if reopen:
        mem.close()
        mem = _open(tmp_path, clock)
    try:
        new = mem.remember("Sam's flight lands at nine", category="fact").id
        assert mem.links(new) == {}
        clock.advance(5)
        after = mem.remember("It is flight BA 117", category="fact").id
        assert mem.links(after) == {new: pytest.approx(policy.adjacency_weight)}
    finally:
        mem.close()


@pytest.mark.parametrize("reopen", [False, True])
def test_after_the_last_turn_is_forgotten_the_one_before_is_the_turn_before(
    tmp_path: Path, reopen: bool
) -> None:
    """The live instance kept the forgotten turn as "the turn before" (and so linked the
    next write to nothing); a reopened store linked it to the turn before that."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    mem.remember("first turn about cats", id="A")
    mem.remember("second turn about dogs", id="B")
    mem.forget("B")
    if reopen:
        mem.close()
        mem = _open(tmp_path, clock)
    try:
        mem.remember("third turn about birds", id="C")
        assert mem.links("C") == {"A": pytest.approx(mem.policy.adjacency_weight)}
    finally:
        mem.close()


def test_repair_vector_store_when_the_counts_agree_by_chance(tmp_path: Path) -> None:
    """A record of no memory (a crash inside a write) and a memory without a record (a
    crash inside a forget): the counts agree, so the check on load sees nothing and
    recall through Chroma misses the memory; repair_vector_store() compares the ids."""
    clock = ManualClock()
    mem = _archived_pair(tmp_path, clock)
    ns = mem.default_namespace
    try:
        vec = mem.store.vectors(ns, ["old"])["old"]
        mem.store.add(ns, ["half"], vec.reshape(1, -1), ["half written"], [{"category": "fact"}])
        mem.store.delete(ns, ["old"])
        assert mem.store.count(ns) == mem.count()
        assert mem.repair_vector_store() == {"put_back": 1, "removed": 1}
        assert mem.store.ids(ns) == {"old", "new"}
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}
    finally:
        mem.close()
