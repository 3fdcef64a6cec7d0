"""Write-behind recall feedback (``oblivion_core/write_behind.py``): a recall's boosts,
spreading, promotions and journal entries are applied just after it returns, and no
later call can tell the difference from applying them before."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion, Policy
from oblivion_core.testing import HashEmbedder, word_count
from oblivion_core.write_behind import EngineLock

DAY = 86_400.0


# ------------------------------------------------------------------ the lock alone
def _wait_until(done: Callable[[], bool], seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if done():
            return True
        time.sleep(0.005)
    return done()


def test_a_queued_job_runs_before_the_next_call_body() -> None:
    lock = EngineLock()
    ran: list[str] = []
    with lock:
        lock.later(lambda: ran.append("job"))
        assert ran == []  # not while the call that queued it runs
    with lock:
        ran.append("next call")
    assert ran == ["job", "next call"]


def test_the_worker_runs_a_queued_job_without_another_call() -> None:
    lock = EngineLock()
    ran = threading.Event()
    where: list[str] = []

    def job() -> None:
        where.append(threading.current_thread().name)
        ran.set()

    with lock:
        lock.later(job)
    assert ran.wait(10)
    assert where[0].startswith("oblivion-feedback")
    assert _wait_until(lambda: not lock._scheduled)


def test_re_entering_the_lock_does_not_run_the_queue() -> None:
    lock = EngineLock()
    ran: list[int] = []
    with lock:
        lock.later(lambda: ran.append(1))
        with lock:
            assert not lock.outermost
            assert ran == []
        assert ran == []
        assert lock.outermost
    lock.settle()
    assert ran == [1]


def test_jobs_run_in_order_and_a_failing_one_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    lock = EngineLock()
    lock.stop()  # no worker: the next call runs the queue, in this thread
    ran: list[int] = []

    def boom() -> None:
        raise RuntimeError("boom")

    with lock:
        lock.later(lambda: ran.append(1))
        lock.later(boom)
        lock.later(lambda: ran.append(3))
    assert ran == []
    with caplog.at_level(logging.ERROR, logger="oblivion_core"), lock:
        assert ran == [1, 3]
    assert "a queued engine job failed" in caplog.text


def test_an_interrupt_in_a_queued_job_releases_the_lock() -> None:
    """``with`` does not call ``__exit__`` when ``__enter__`` raises: the lock must not
    stay held by the interrupted thread."""
    lock = EngineLock()
    lock.stop()
    ran: list[int] = []

    def interrupted() -> None:
        raise KeyboardInterrupt

    with lock:
        lock.later(interrupted)
        lock.later(lambda: ran.append(2))
    with pytest.raises(KeyboardInterrupt), lock:
        pass
    free: list[bool] = []

    def other() -> None:
        free.append(lock._lock.acquire(timeout=5))
        lock._lock.release()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert free == [True] and lock._depth == 0
    with lock:  # the job after the interrupted one still runs
        assert ran == [2]


def test_later_needs_the_lock() -> None:
    with pytest.raises(RuntimeError, match="needs the lock held"):
        EngineLock().later(lambda: None)


# ------------------------------------------------------------------ the engine
def _view(mem: Oblivion) -> list[tuple[Any, ...]]:
    return [
        (r.id, r.activation, r.tier, r.access_count, r.last_accessed, r.invalidated)
        for r in mem.records()
    ]


def _journal(mem: Oblivion) -> list[tuple[Any, ...]]:
    return [(e.memory_id, e.kind, e.before, e.after) for e in mem.history()]


def _items(result: Any) -> list[tuple[Any, ...]]:
    return [(i.id, i.tier, i.activation, i.score, i.why.get("boost")) for i in result.items]


WORDS = ["garden", "boiler", "piano", "Lisbon", "flight", "nurse", "invoice", "river"]
TEXTS = [f"{a} {b} note" for a in WORDS for b in WORDS if a < b]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("remember"), st.integers(0, len(TEXTS) - 1)),
        st.tuples(
            st.just("recall"),
            st.sampled_from(WORDS),
            st.sampled_from([None, True, False]),
            st.integers(1, 6),
        ),
        st.tuples(st.just("used"), st.integers(0, 50)),
        st.tuples(st.just("confirm"), st.integers(0, 50)),
        st.tuples(st.just("link"), st.integers(0, 50), st.integers(0, 50)),
        st.tuples(st.just("invalidate"), st.integers(0, 50)),
        st.tuples(st.just("advance"), st.floats(0.5, 20)),
        st.tuples(
            st.just("maintain"),
        ),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=40)
@given(
    first_texts=st.lists(st.integers(0, len(TEXTS) - 1), min_size=3, max_size=10),
    script=ops,
    worker=st.booleans(),
)
def test_write_behind_is_indistinguishable_from_applying_feedback_first(
    fresh: Callable[..., AbstractContextManager[Oblivion]],
    first_texts: list[int],
    script: list[tuple[Any, ...]],
    worker: bool,
) -> None:
    """The same calls on two engines, one applying recall feedback after the recall
    returns (the default) and one before: every result, every memory's activation, tier
    and use count, and the journal agree after every call. Without the worker
    (``worker=False``) the feedback waits for the next call, even past a clock move."""
    policy = Policy.template("balanced").replace(maintain_every=0, spread_fraction=0.5)
    clocks = ManualClock(), ManualClock()
    with (
        fresh(clock=clocks[0], policy=policy) as behind,
        fresh(clock=clocks[1], policy=policy) as first,
    ):
        first.WRITE_BEHIND = False
        if not worker:
            behind._lock.stop()
        ids: list[str] = []
        for op in [("remember", t) for t in first_texts] + script:
            name = op[0]
            out = []
            for mem, clock in ((behind, clocks[0]), (first, clocks[1])):
                if name == "remember":
                    if f"m{op[1]}" not in ids:
                        out.append(mem.remember(TEXTS[op[1]], id=f"m{op[1]}"))
                elif name == "recall":
                    out.append(_items(mem.recall(op[1], deep=op[2], k=op[3])))
                elif name == "advance":
                    clock.advance(op[1] * DAY)
                elif name == "maintain":
                    plan = mem.maintain()
                    out.append(sorted((e.id, e.action) for e in plan.entries))
                elif ids:
                    a = ids[op[1] % len(ids)]
                    if name == "used":
                        out.append(mem.mark_used([a]))
                    elif name == "confirm":
                        out.append(mem.confirm(a))
                    elif name == "invalidate":
                        mem.invalidate(a)
                    elif name == "link":
                        b = ids[op[2] % len(ids)]
                        if a != b:
                            out.append(mem.link(a, b, 0.8))
            if name == "remember" and out:
                ids.append(out[0].id)
            if out:
                assert out[0] == out[1], op
            if name != "recall" or worker:  # else the next call compares it, after it ran
                assert _view(behind) == _view(first), op
                assert _journal(behind) == _journal(first), op


def test_feedback_is_applied_after_recall_returns(mem: Oblivion) -> None:
    a = mem.remember("the boiler service is booked for March").id
    before = mem.get(a).activation
    item = mem.recall("boiler service", k=1).items[0]
    boost = item.why["boost"]
    assert item.id == a and boost["before"] == pytest.approx(before)
    # the worker applies it without any further call ...
    assert _wait_until(lambda: not mem._lock._queued)
    # ... and any call sees it
    assert mem.get(a).activation == pytest.approx(boost["after"])
    assert [e.kind for e in mem.history(a)][-1] == "recall"


def test_a_nested_recall_applies_its_feedback_at_once(mem: Oblivion) -> None:
    """Inside another call (the lock re-entered), nothing is left for later."""
    a = mem.remember("the piano teacher is paid for the term").id
    with mem._lock:
        item = mem.recall("piano teacher", k=1).items[0]
        assert not mem._lock._queued
        st = mem._spaces[mem.default_namespace].state
        assert st.cols["access_count"][st.index[a]] == 1
    assert mem.get(a).activation == pytest.approx(item.why["boost"]["after"])


def test_link_expansion_reads_the_boosted_state(clock: ManualClock) -> None:
    from oblivion_core.testing import memory

    mem = memory(clock=clock, policy=Policy.template("balanced").replace(expand_links=True))
    try:
        mem.remember("the boiler service is booked for March")
        mem.recall("boiler", k=1)
        assert not mem._lock._queued  # applied in line: expansion follows the boosts
    finally:
        mem.close()


def test_close_right_after_recall_keeps_its_feedback(tmp_path: Path) -> None:
    clock = ManualClock()
    mem = Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    a = mem.remember("our dentist moved to Elm Street").id
    after = mem.recall("dentist", k=1).items[0].why["boost"]["after"]
    mem.close()
    again = Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    try:
        assert again.get(a).activation == pytest.approx(after)
        assert again.get(a).access_count == 1
        assert [e.kind for e in again.history(a)] == ["remember", "recall"]
    finally:
        again.close()


def test_a_failing_feedback_is_logged_and_the_store_stays_consistent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Feedback whose write cannot be queued fails after the recall returned: the
    recall's answer stands, the failure is logged, and the namespace is reloaded from
    the store (without that recall's boosts), so the live instance and a fresh open
    agree, and the next recall's feedback is applied again."""
    clock = ManualClock()
    mem = Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    a = mem.remember("the printer on the second floor jams").id
    b = mem.remember("the boiler service is booked for March").id
    stored = mem.get(a)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk went away")

    monkeypatch.setattr(mem._db, "defer", broken)
    with caplog.at_level(logging.ERROR, logger="oblivion_core"):
        result = mem.recall("printer second floor jams", k=1)
        assert result.items[0].id == a
        assert result.items[0].why["boost"]["after"] > stored.activation
        assert mem.get(a) == stored  # the boost went with the failed write
    assert "could not be applied" in caplog.text
    monkeypatch.undo()
    item = mem.recall("boiler service", k=1).items[0]
    assert mem.get(b).activation == pytest.approx(item.why["boost"]["after"])
    live = _view(mem)
    mem.close()
    again = Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    try:
        assert _view(again) == live
    finally:
        again.close()


@pytest.fixture
def threads_mem(tmp_path: Path) -> Iterator[Oblivion]:
    mem = Oblivion(tmp_path, clock=ManualClock(), embedder=HashEmbedder(), token_counter=word_count)
    yield mem
    mem.close()


def test_recalls_from_many_threads_each_count_once(threads_mem: Oblivion) -> None:
    mem = threads_mem
    a = mem.remember("the garden hose is in the shed").id

    def work() -> None:
        for _ in range(25):
            mem.recall("garden hose", k=1)

    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert mem.get(a).access_count == 100
    assert sum(e.kind == "recall" for e in mem.history(a)) == 100


def test_feedback_applied_after_a_clock_move_keeps_the_recall_time(
    fresh: Callable[..., AbstractContextManager[Oblivion]],
) -> None:
    """Feedback queued by a recall and applied only after the clock moved (no worker:
    the next call applies it) boosts as of the recall, not as of the call applying it:
    the same as an engine that applied it before returning."""
    clocks = ManualClock(), ManualClock()
    with fresh(clock=clocks[0]) as behind, fresh(clock=clocks[1]) as first:
        first.WRITE_BEHIND = False
        behind._lock.stop()
        recalled_at = clocks[0].now()
        for mem, clock in ((behind, clocks[0]), (first, clocks[1])):
            mem.remember("the piano teacher is paid for the term", id="p")
            clock.advance(3 * DAY)
            mem.recall("piano teacher", k=1)
            clock.advance(10 * DAY)
        assert behind._lock._queued  # still waiting: the clock moved meanwhile
        late, on_time = behind.get("p"), first.get("p")
        assert late.last_accessed == on_time.last_accessed == recalled_at + 3 * DAY
        assert late.activation == pytest.approx(on_time.activation)
        assert _journal(behind) == _journal(first)


def test_a_timed_job_runs_once_without_another_call() -> None:
    lock = EngineLock()
    ran: list[str] = []
    with lock:
        lock.due(0.05, lambda: ran.append("first"))
        lock.due(0.05, lambda: ran.append("ignored while one waits"))
    assert _wait_until(lambda: ran == ["first"])
    time.sleep(0.2)
    assert ran == ["first"]
    with lock:  # a new one may wait once the first ran
        lock.due(0.05, lambda: ran.append("second"))
    assert _wait_until(lambda: ran == ["first", "second"])


def test_stop_cancels_a_timed_job() -> None:
    lock = EngineLock()
    ran: list[int] = []
    with lock:
        lock.due(0.1, lambda: ran.append(1))
        lock.stop()
    time.sleep(0.3)
    assert ran == []


def test_acquire_gives_up_after_its_timeout_and_runs_the_queue_when_taken() -> None:
    lock = EngineLock()
    lock.stop()  # no worker: what the holder queues waits for the next taker
    ran: list[int] = []
    held, go = threading.Event(), threading.Event()

    def holder() -> None:
        with lock:
            lock.later(lambda: ran.append(1))
            held.set()
            go.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(10)
    assert lock.acquire(0.05) is False
    go.set()
    t.join()
    assert ran == []
    assert lock.acquire(5) is True
    try:
        assert ran == [1]
        assert lock.outermost
    finally:
        lock.release()
    assert lock._depth == 0 and not lock._lock._is_owned()  # type: ignore[attr-defined]


class _NoTimer(threading.Timer):
    def start(self) -> None:
        raise RuntimeError("can't create new thread at interpreter shutdown")


class _NoThread(threading.Thread):
    def start(self) -> None:
        raise RuntimeError("can't create new thread at interpreter shutdown")


def test_while_no_thread_can_start_jobs_wait_for_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While the interpreter shuts down (no new threads): a timed job is skipped and can
    be set again later; a queued job waits for the next call. Neither raises."""
    lock = EngineLock()
    ran: list[str] = []
    monkeypatch.setattr("oblivion_core.write_behind.threading.Timer", _NoTimer)
    monkeypatch.setattr("oblivion_core.write_behind.threading.Thread", _NoThread)
    with lock:
        lock.due(0.01, lambda: ran.append("timed"))
        lock.later(lambda: ran.append("queued"))
    time.sleep(0.1)
    assert ran == []
    assert lock._timer is None and not lock._scheduled
    with lock:  # the next call runs the queue
        assert ran == ["queued"]
    monkeypatch.undo()
    with lock:  # threads again: the timer can be set again, and runs
        lock.due(0.01, lambda: ran.append("timed"))
    assert _wait_until(lambda: ran == ["queued", "timed"])


def test_recall_feedback_survives_a_timer_that_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recall whose hand-off timer cannot start (interpreter shutting down) keeps its
    boost and journal entry; close() writes them."""
    monkeypatch.setattr("oblivion_core.write_behind.threading.Timer", _NoTimer)
    clock = ManualClock()
    mem = Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    mem.remember("the garden hose is in the shed", id="g", importance=0.3)
    clock.advance(3 * DAY)
    before = mem.get("g").activation
    assert mem.recall("garden hose", k=1).ids == ["g"]
    after = mem.get("g").activation
    assert after > before
    mem.close()
    reopened = Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    try:
        assert reopened.get("g").activation == pytest.approx(after)
        assert [e.kind for e in reopened.history("g")] == ["remember", "recall"]
    finally:
        reopened.close()


def test_a_deep_false_recall_sees_the_promotion_a_queued_feedback_makes() -> None:
    """recall(deep=False) ranked BM25 over the active tier as it stood before taking the
    lock, which applies the previous recall's feedback: a memory that feedback promoted
    got no lexical score, unlike with the feedback applied first."""
    from oblivion_core.testing import memory

    policy = Policy.template("balanced").replace(maintain_every=0, adapt=False, supersede=False)

    def run(write_behind: bool) -> list[tuple[str, float, Any]]:
        clock = ManualClock()
        mem = memory(clock=clock, policy=policy)
        try:
            mem.WRITE_BEHIND = write_behind
            if write_behind:
                mem._lock.stop()  # the worker has not run yet: the next call applies it
            mem.remember("the boiler service is booked for March", category="fact", importance=0.2)
            for i in range(5):
                mem.remember(f"unrelated note number {i} about the garden", importance=0.9)
            clock.advance(60 * DAY)
            mem.maintain()
            for _ in range(3):  # the third deep recall promotes the boiler note
                mem.recall("boiler service booked March", k=3, deep=True)
            got = mem.recall("boiler service booked March", k=3, deep=False)
            return [(i.text, i.score, i.why["relevance_signals"].get("lexical")) for i in got]
        finally:
            mem.close()

    first, behind = run(False), run(True)
    assert first[0][0] == "the boiler service is booked for March" and first[0][2]
    assert behind == first
