"""prune_journal: old boost entries leave the journal, nothing else does."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import (
    EVENT_KINDS,
    InvalidInputError,
    ManualClock,
    Oblivion,
    Policy,
    PolicyError,
    TurnClock,
    UnknownNamespaceError,
)
from oblivion_core.state import StateDB
from oblivion_core.testing import HashEmbedder, word_count

DAY = 86_400.0


def _story(mem: Oblivion, clock: ManualClock) -> list[str]:
    """Three memories recalled now and then over twenty days."""
    ids = [
        mem.remember("Dana likes green tea in the afternoon.").id,
        mem.remember("The team offsite is in Lisbon in May.").id,
        mem.remember("Aisha owns the data pipeline.").id,
    ]
    mem.link(ids[0], ids[1], 0.9)
    for _ in range(4):
        for q in ("green tea", "Lisbon offsite", "data pipeline"):
            mem.recall(q, k=2)
        clock.advance(5 * DAY)
    return ids


def _entries(mem: Oblivion, ids: list[str]) -> list[tuple[str, str, float]]:
    return [(m, e.kind, e.at) for m in ids for e in mem.history(m)]


def test_old_recall_and_spread_entries_go_and_everything_else_stays(mem: Oblivion) -> None:
    clock = mem.clock
    assert isinstance(clock, ManualClock)
    ids = _story(mem, clock)
    before = _entries(mem, ids)
    activations = {m: mem.get(m).activation for m in ids}
    cutoff = clock.now() - 8 * DAY
    old = [e for e in before if e[1] in ("recall", "spread") and e[2] < cutoff]
    assert old and any(e[1] == "spread" for e in old)

    assert mem.prune_journal(8 * DAY) == len(old)

    after = _entries(mem, ids)
    assert sorted(after) == sorted(e for e in before if e not in old)
    assert [e for e in after if e[1] == "remember"] == [e for e in before if e[1] == "remember"]
    assert {m: mem.get(m).activation for m in ids} == activations
    assert mem.prune_journal(8 * DAY) == 0  # nothing left to drop


def test_a_prune_in_many_small_chunks_drops_the_same(
    mem: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = mem.clock
    assert isinstance(clock, ManualClock)
    ids = _story(mem, clock)
    expected = [e for e in _entries(mem, ids) if e[1] not in ("recall", "spread")]
    monkeypatch.setattr(StateDB, "PRUNE_CHUNK", 2)
    assert mem.prune_journal(0) > 4
    assert sorted(_entries(mem, ids)) == sorted(expected)


def test_a_call_waiting_for_the_engine_gets_its_turn_between_chunks(
    mem: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prune lets go of the engine after each chunk "so recalls and writes go on in
    between", but took it again at once: the engine's lock is not fair, and a recall of
    another namespace waited for the whole prune (1.6 s for 210k entries). A call waiting
    from the first chunk now runs before the prune ends."""
    import threading

    clock = mem.clock
    assert isinstance(clock, ManualClock)
    _story(mem, clock)
    mem.remember("A note in another space.", namespace="other")
    monkeypatch.setattr(StateDB, "PRUNE_CHUNK", 1)
    real = StateDB.prune_events
    done = threading.Event()
    chunks_after: list[int] = []

    def pruning(self: StateDB, *args: Any, **kwargs: Any) -> Any:
        probe = threading.Thread(
            target=lambda: (mem.count(namespace="other"), done.set()), daemon=True
        )
        for k, deleted in enumerate(real(self, *args, **kwargs)):
            if k == 0:
                probe.start()  # waits for the engine, which this chunk holds
            elif done.is_set() and not chunks_after:
                chunks_after.append(k)
            yield deleted

    monkeypatch.setattr(StateDB, "prune_events", pruning)
    assert mem.prune_journal(0) > 20
    assert chunks_after, "the waiting call ran only after the prune"


def test_other_namespaces_and_named_kinds(mem: Oblivion) -> None:
    clock = mem.clock
    assert isinstance(clock, ManualClock)
    ids = _story(mem, clock)
    other = mem.remember("A note in another space.", namespace="other").id
    mem.recall("note", namespace="other")
    clock.advance(DAY)
    assert mem.prune_journal(0, kinds=["remember"]) == len(ids)
    assert {e.kind for m in ids for e in mem.history(m)} == {"link", "recall", "spread"}
    assert [e.kind for e in mem.history(other, namespace="other")] == ["remember", "recall"]


def test_kinds_may_be_any_iterable(mem: Oblivion) -> None:
    """A generator of kinds prunes what the list would (it was used up by the check and
    nothing was pruned)."""
    ids = [mem.remember(t).id for t in ("tea at four", "the offsite in Lisbon")]
    clock = mem.clock
    assert isinstance(clock, ManualClock)
    clock.advance(DAY)
    assert mem.prune_journal(0, kinds=(k for k in ["remember"])) == len(ids)
    assert [e.kind for i in ids for e in mem.history(i)] == []


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "5", True, None])
def test_an_invalid_age_is_refused_and_nothing_is_dropped(mem: Oblivion, bad: Any) -> None:
    mem.remember("Dana likes green tea.")
    mem.recall("tea")
    count = len(mem.history())
    with pytest.raises(InvalidInputError, match="older_than"):
        mem.prune_journal(bad)
    assert len(mem.history()) == count


@pytest.mark.parametrize("kinds", [[], "recall", [""], [3]])
def test_invalid_kinds_are_refused(mem: Oblivion, kinds: Any) -> None:
    with pytest.raises(InvalidInputError, match="kinds"):
        mem.prune_journal(0, kinds=kinds)


def test_an_unknown_kind_is_refused_and_nothing_is_dropped(mem: Oblivion) -> None:
    """A typo ("recal") deleted nothing and said nothing; the error names the kinds."""
    mem.remember("Dana likes green tea.")
    mem.recall("tea")
    count = len(mem.history())
    with pytest.raises(InvalidInputError, match=r"unknown journal kinds \['recal'\].*spread"):
        mem.prune_journal(0, kinds=["recall", "recal"])
    assert len(mem.history()) == count


def test_every_kind_can_be_named(mem: Oblivion, clock: ManualClock) -> None:
    mem.remember("Dana likes green tea.")
    mem.recall("tea")
    clock.advance(DAY)
    count = len(mem.history())
    assert mem.prune_journal(0, kinds=list(EVENT_KINDS)) == count > 0
    assert mem.history() == []


def test_an_unknown_namespace_is_refused(mem: Oblivion) -> None:
    with pytest.raises(UnknownNamespaceError):
        mem.prune_journal(0, namespace="nowhere")


@pytest.mark.integration
def test_a_pruned_store_reopens_with_the_rest_of_its_journal(tmp_path: Path) -> None:
    clock = ManualClock()
    mem = Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    ids = _story(mem, clock)
    mem.prune_journal(8 * DAY)
    kept = _entries(mem, ids)
    mem.close()
    mem = Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    try:
        assert _entries(mem, ids) == kept
    finally:
        mem.close()


@settings(max_examples=300)
@given(
    n=st.integers(1, 300),
    shuffle=st.lists(st.tuples(st.integers(0, 299), st.integers(0, 40)), max_size=30),
    cut=st.integers(-2, 302),
)
def test_pruning_drops_exactly_the_old_entries_of_the_kinds_even_out_of_order(
    n: int, shuffle: list[tuple[int, int]], cut: int
) -> None:
    """Entries are written roughly in clock order (a queued boost lands a little later than
    newer entries): whatever the order within a batch, exactly the entries of the named
    kinds of that namespace before ``before`` go."""
    times = [float(k) for k in range(n)]
    before = cut - 0.5
    for i, span in shuffle:  # local disorder, as queued boosts cause
        j = min(i + span, len(times) - 1)
        if i < j:
            times[i], times[j] = times[j], times[i]
    db = StateDB(None)
    db.DEFER_EVENTS = 4  # the margin past the binary search's cut: 64 entries, > any span
    try:
        rows = [
            ("ns" if k % 3 else "other", f"m{k}", ("recall", "spread", "remember")[k % 3], at)
            for k, at in enumerate(times)
        ]
        with db.transaction() as conn:
            for ns, mid, kind, at in rows:
                db.journal(conn, at, ns, [(mid, kind, 0.1, 0.2, {})])
        dropped = sum(db.prune_events("ns", before, ["recall", "spread"]))
        kept = {(e.memory_id, e.kind) for ns in ("ns", "other") for e in db.events(ns)}
        expected = {
            (mid, kind)
            for ns, mid, kind, at in rows
            if not (ns == "ns" and kind in ("recall", "spread") and at < before)
        }
        assert kept == expected
        assert dropped == len(rows) - len(expected)
    finally:
        db.close()


def test_journal_keep_has_maintain_drop_old_boost_entries_a_chunk_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock()
    policy = Policy.template("balanced").replace(maintain_every=0, journal_keep=8 * DAY)
    mem = Oblivion(
        None, policy=policy, clock=clock, embedder=HashEmbedder(), token_counter=word_count
    )
    try:
        ids = _story(mem, clock)
        before = _entries(mem, ids)
        cutoff = clock.now() - 8 * DAY
        old = [e for e in before if e[1] in ("recall", "spread") and e[2] < cutoff]
        assert len(old) > 3
        mem.maintain(dry_run=True)
        assert _entries(mem, ids) == before  # a dry run changes nothing
        monkeypatch.setattr(StateDB, "PRUNE_CHUNK", 3)
        mem.maintain()
        assert len(_entries(mem, ids)) == len(before) - 3  # one chunk per call
        for _ in range(len(old)):
            mem.maintain()
        assert sorted(_entries(mem, ids)) == sorted(e for e in before if e not in old)
    finally:
        mem.close()


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "30 days", True])
def test_journal_keep_must_be_a_finite_age(bad: Any) -> None:
    with pytest.raises(PolicyError, match="journal_keep"):
        Policy.template("balanced").replace(journal_keep=bad)


def test_turn_clock_namespaces_are_pruned_by_their_own_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the turn clock each namespace counts its own turns, so another namespace's
    entries may be numbered later yet timed higher: the search for where ``before``
    falls went over every namespace's entries and stopped short, leaving old entries."""
    monkeypatch.setattr(StateDB, "DEFER_EVENTS", 8)  # the search's margin: 16 of these
    policy = Policy.template("balanced", clock="turns")
    with Oblivion(tmp_path, policy=policy, embedder=HashEmbedder(), token_counter=word_count) as m:
        m.remember("Sam likes green tea", namespace="b")
        m.recall("green tea", namespace="b")
        notes = [f"note {i} about the quarterly budget" for i in range(300)]
        m.remember_many(notes, namespace="a", supersede=False)  # 300 turns of a's own
        m.recall("green tea", namespace="b")
        clock = m.clock
        assert isinstance(clock, TurnClock)
        clock.tick(200, namespace="b")  # b: turn 201; a: turn 300
        old = [e for e in m.history(namespace="b") if e.kind in ("recall", "spread")]
        assert len(old) == 2
        assert m.prune_journal(older_than=100, namespace="b") == 2
        assert [e for e in m.history(namespace="b") if e.kind in ("recall", "spread")] == []
