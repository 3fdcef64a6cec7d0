"""Clocks: manual and turn clocks, and the engine's idle-safe turn clock mode."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import InvalidInputError, ManualClock, Policy, TurnClock, WallClock
from oblivion_core.testing import HashEmbedder, word_count
from oblivion_core.typing import Clock

DAY = 86_400.0
TURNS = Policy.template("balanced", clock="turns")


@pytest.mark.parametrize("clock", [WallClock(), TurnClock(), ManualClock()])
def test_every_clock_satisfies_the_protocol(clock: Any) -> None:
    """Wall, turn and manual clocks all satisfy the Clock protocol and return floats."""
    assert isinstance(clock, Clock)
    assert isinstance(clock.now(), float)


@given(steps=st.lists(st.floats(0.0, 1e6), max_size=30))
def test_manual_clock_moves_only_when_told(steps: list[float]) -> None:
    """A ManualClock's time is the sum of its advances, and never moves on its own."""
    clock = ManualClock(5.0)
    for s in steps:
        clock.advance(s)
    assert clock.now() == pytest.approx(5.0 + sum(steps))
    assert clock.now() == clock.now()


@pytest.mark.parametrize(
    ("action", "mentions"),
    [
        (lambda c: c.advance(-1.0), "never goes backwards"),
        (lambda c: c.set(5.0), "earlier than now"),
        (lambda c: c.advance(math.nan), "finite"),
        (lambda c: c.advance(math.inf), "finite"),
        (lambda c: c.advance(True), "finite"),
        (lambda c: c.advance("1"), "finite"),
        (lambda c: c.tick(-2.0), "never goes backwards"),
    ],
)
def test_manual_clock_rejects_bad_moves(action: Any, mentions: str) -> None:
    """Going backwards or non-finite/non-number steps raise InvalidInputError; time is kept."""
    clock = ManualClock(10.0)
    with pytest.raises(InvalidInputError, match=mentions):
        action(clock)
    assert clock.now() == 10.0


def test_manual_clock_set_and_tick() -> None:
    """set() jumps forward and tick() is an alias of advance()."""
    clock = ManualClock()
    assert clock.set(100.0) == 100.0
    assert clock.tick() == 101.0
    assert clock.tick(4) == 105.0


@pytest.mark.parametrize("start", [math.nan, math.inf, -math.inf, True, "0"])
def test_clocks_reject_non_finite_start(start: Any) -> None:
    """A clock cannot start at a non-finite or non-numeric time."""
    with pytest.raises(InvalidInputError):
        ManualClock(start)
    with pytest.raises(InvalidInputError):
        TurnClock(start)


def test_turn_clock_counts_interactions() -> None:
    """A TurnClock starts where told and advances by the number of turns ticked."""
    clock = TurnClock(3)
    assert clock.now() == 3.0
    assert clock.tick() == 4.0
    assert clock.tick(2) == 6.0
    with pytest.raises(InvalidInputError, match="turns must be >= 0"):
        clock.tick(-1)
    assert clock.now() == 6.0


def test_turn_clock_ticks_are_thread_safe() -> None:
    """Concurrent ticks from 8 threads are all counted."""
    clock = TurnClock()

    def work() -> None:
        for _ in range(1000):
            clock.tick()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert clock.now() == 8000.0


def test_units_are_stated() -> None:
    """Each clock states its unit (half-lives are read in that unit)."""
    assert WallClock.unit == "seconds"
    assert TurnClock.unit == "turns"


# ---------------------------------------------------------------- turn clock in the engine


def _turn_engine(fresh: Any) -> Any:
    return fresh(policy=TURNS, clock=None, embedder=HashEmbedder(), token_counter=word_count)


def test_engine_uses_a_turn_clock_for_a_turns_policy(fresh: Any) -> None:
    """With a turns policy and no clock given, the engine counts turns from 0."""
    with _turn_engine(fresh) as mem:
        assert isinstance(mem.clock, TurnClock)
        assert mem.clock.now() == 0.0


def test_each_remember_advances_the_turn(fresh: Any) -> None:
    """remember() advances the turn by one, remember_many() by the number of texts."""
    with _turn_engine(fresh) as mem:
        mem.remember("first note about turtles")
        assert mem.clock.now() == 1.0
        mem.remember_many(["second note", "third note", "fourth note"])
        assert mem.clock.now() == 4.0
        assert [r.created_at for r in mem.records()] == [1.0, 4.0, 4.0, 4.0]


def test_recall_and_maintenance_do_not_advance_the_turn(fresh: Any) -> None:
    """Only stored turns count: recall, mark_used and maintain leave the turn as it is."""
    with _turn_engine(fresh) as mem:
        rec = mem.remember("the dentist is on Main Street")
        mem.recall("dentist")
        mem.mark_used([rec.id])
        mem.maintain()
        assert mem.clock.now() == 1.0


def test_idle_wall_time_does_not_decay_under_turns(
    fresh: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two months of idle wall-clock time change no activation under the turn clock."""
    with _turn_engine(fresh) as mem:
        rec = mem.remember("lovely weather today", category="small_talk")
        before = mem.get(rec.id).activation
        real = time.time()
        monkeypatch.setattr(time, "time", lambda: real + 60 * DAY)
        after = mem.get(rec.id).activation
        stats = mem.stats()
        monkeypatch.undo()
        assert after == before
        assert stats["now"] == 1.0


def test_turns_decay_small_talk_but_keep_instructions(fresh: Any) -> None:
    """After many later turns, small talk is archived by maintain() and an instruction stays."""
    with _turn_engine(fresh) as mem:
        chat = mem.remember("haha nice one", category="small_talk", importance=0.1)
        rule = mem.remember("Always cite the source document.", category="instruction")
        mem.remember_many(
            [f"filler turn number {i}" for i in range(100)], categories=["fact"] * 100
        )
        mem.maintain()
        assert mem.get(chat.id).tier.label == "archive"
        assert mem.get(rule.id).tier.label == "active"


def test_turn_clock_counts_each_namespace_apart() -> None:
    """A namespace's time is the shared ticks plus its own; now() counts them all."""
    clock = TurnClock(2, namespaces={"bob": 5})
    assert clock.tick(3, namespace="alice") == 5.0
    assert clock.now("bob") == 7.0
    assert clock.tick() == 11.0  # shared: every namespace moves
    assert (clock.now("alice"), clock.now("bob"), clock.now("carol")) == (6.0, 8.0, 3.0)
    assert clock.rewind(2, namespace="alice") == 4.0
    assert (clock.shared, clock.own("alice"), clock.own("bob")) == (3.0, 1.0, 5.0)
    assert clock.now() == 9.0


@pytest.mark.integration
def test_a_clock_of_the_other_kind_is_refused_and_changes_nothing(tmp_path: Any) -> None:
    """A WallClock counts seconds, a TurnClock turns: given to a store or a policy on the
    other clock, it is refused (a review saw a turns store opened with a WallClock sit
    1.8e9 turns in the future and archive everything), and the store is as it was."""
    from oblivion_core import Oblivion, PolicyError

    with pytest.raises(PolicyError, match="clock='turns'"):
        Oblivion(tmp_path / "new", embedder=HashEmbedder(), clock=TurnClock(), policy=Policy())
    with pytest.raises(PolicyError, match="clock='wall'"):
        Oblivion(tmp_path / "new", embedder=HashEmbedder(), clock=WallClock(), policy=TURNS)
    # the refused opens left no store behind (its database held the policy refused, so
    # the advice, a wall-clock policy, was refused in turn)
    assert not (tmp_path / "new" / "oblivion.sqlite3").exists()
    with Oblivion(tmp_path / "new", embedder=HashEmbedder(), clock=WallClock()) as mem:
        assert mem.policy.clock == "wall"
    path = tmp_path / "turns"
    with Oblivion(path, embedder=HashEmbedder(), policy=TURNS, token_counter=word_count) as mem:
        mem.remember_many(["We planned the trip to Porto.", "Keep answers short."])
        before = [(r.id, r.activation, r.last_accessed, r.tier) for r in mem.records()]
        turn = mem.clock.now()
    with pytest.raises(PolicyError, match="pass no clock"):
        Oblivion(path, embedder=HashEmbedder(), clock=WallClock())
    with Oblivion(path, embedder=HashEmbedder(), clock=ManualClock(turn)) as mem:  # any unit
        assert [(r.id, r.activation, r.last_accessed, r.tier) for r in mem.records()] == before
    with Oblivion(path, embedder=HashEmbedder()) as mem:
        assert mem.clock.now() == turn
        assert [(r.id, r.activation, r.last_accessed, r.tier) for r in mem.records()] == before


def test_catch_up_only_moves_forward() -> None:
    clock = TurnClock(4, namespaces={"alice": 9})
    clock.catch_up(2, {"alice": 12, "bob": 3})
    assert (clock.shared, clock.own("alice"), clock.own("bob")) == (4.0, 12.0, 3.0)
    with pytest.raises(InvalidInputError):
        clock.catch_up(float("nan"), {})


@pytest.mark.integration
def test_a_store_reopened_with_a_new_turn_clock_continues_where_it_stopped(
    tmp_path: Any,
) -> None:
    """``clock=TurnClock()`` in a new process started the store's time again at 0 (found
    by the engine's state machine test): every memory was read at an earlier time than
    it was written (its activation rose back), and the next write saved the counts as 1,
    so even a reopen with the store's own clock had lost the turns."""
    from oblivion_core import Oblivion

    path = tmp_path / "turns"
    with Oblivion(path, embedder=HashEmbedder(), clock=TurnClock(), policy=TURNS) as mem:
        mem.remember_many([f"note {i} about the trip" for i in range(30)], namespace="a")
        mem.remember("keep answers short", namespace="b")
        mem.clock.tick(2)
        before = [(r.id, r.activation) for r in mem.records(namespace="a")]
    with Oblivion(path, embedder=HashEmbedder(), clock=TurnClock()) as mem:
        assert (mem.clock.now("a"), mem.clock.now("b")) == (32.0, 3.0)
        assert [(r.id, r.activation) for r in mem.records(namespace="a")] == before
        mem.remember("one more note", namespace="a")
    with Oblivion(path, embedder=HashEmbedder()) as mem:  # the store's own clock
        assert (mem.clock.now("a"), mem.clock.now("b")) == (33.0, 3.0)
    ahead = TurnClock(100)  # a clock ahead of the store is kept as it is
    with Oblivion(path, embedder=HashEmbedder(), clock=ahead) as mem:
        assert mem.clock is ahead and ahead.now("a") == 131.0


@pytest.mark.integration
def test_a_new_store_given_a_turn_clock_decays_by_turns(tmp_path: Any) -> None:
    """``Oblivion(path, clock=TurnClock())`` with no policy (or a template name) starts
    the store on the turn clock, with that template's turn half-lives."""
    from oblivion_core import Oblivion

    with Oblivion(tmp_path / "a", embedder=HashEmbedder(), clock=TurnClock()) as mem:
        assert mem.policy == TURNS
    with Oblivion(
        tmp_path / "b", embedder=HashEmbedder(), clock=TurnClock(), policy="support-desk"
    ) as mem:
        assert mem.policy == Policy.template("support-desk", clock="turns")
    with Oblivion(tmp_path / "a", embedder=HashEmbedder()) as mem:  # reopened: its clock
        assert mem.policy == TURNS
        assert isinstance(mem.clock, TurnClock)


class _SteppedWall(WallClock):
    """A wall clock that NTP may step back (``t`` set by the test)."""

    def __init__(self, t: float) -> None:
        self.t = t

    def now(self) -> float:
        return self.t


@pytest.mark.parametrize("template", ["support-desk", "research-assistant"])
def test_a_policy_switched_while_the_clock_was_stepped_back_charges_no_decay(
    tmp_path: Any, template: str
) -> None:
    """On disk with the local model: a wall clock stepped back six hours, a policy with
    other half-lives switched to then, and the clock back at the memory's write time: the
    memory had decayed by the step at the new rate's difference (small talk from 0.5 to
    0.125, below the archive threshold, with nothing in its journal). Now it reads as
    written, and decays at the new rate from there."""
    from oblivion_core import Oblivion

    start = 1_800_000_000.0
    clock = _SteppedWall(start)
    with Oblivion(tmp_path / "mem", clock=clock) as mem:
        rec = mem.remember("Nice weather today!", category="small_talk", importance=0.0)
        written = mem.get(rec.id).activation
        clock.t = start - 6 * 3600.0
        mem.set_policy(template)
        clock.t = start
        assert mem.get(rec.id).activation == pytest.approx(written, abs=1e-9)
        clock.t = start + mem.policy.half_lives["small_talk"]
    with Oblivion(tmp_path / "mem", clock=clock, policy=template) as mem:
        assert mem.get(rec.id).activation == pytest.approx(written / 2, rel=1e-6)
