"""Tier planning: hysteresis, capacity pressure and forgetting (pure plan_tiers), and the
same rules applied by the engine's maintain()."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import MaintenancePlan, ManualClock, Oblivion, PlanEntry, Policy, Tier
from oblivion_core.testing import HashEmbedder, memory
from oblivion_core.tiering import plan_tiers

DAY = 86_400.0
LOW, HIGH = 0.25, 0.4

tiers2 = st.sampled_from([int(Tier.ACTIVE), int(Tier.ARCHIVE)])


def _apply(tier: np.ndarray, decision: Any) -> np.ndarray:
    out = tier.copy()
    out[decision.archive] = Tier.ARCHIVE
    out[decision.restore] = Tier.ACTIVE
    return out


@given(
    initial=st.lists(tiers2, min_size=1, max_size=40),
    rounds=st.lists(
        st.lists(st.floats(0.29, 0.35), min_size=40, max_size=40), min_size=1, max_size=30
    ),
)
def test_oscillation_inside_the_band_never_moves_anything(
    initial: list[int], rounds: list[list[float]]
) -> None:
    """Activations hovering randomly in 0.29..0.35 (band [0.25, 0.4]) never change a tier."""
    tier = np.asarray(initial, dtype=np.int8)
    for acts in rounds:
        activation = np.asarray(acts[: len(tier)], dtype=np.float64)
        d = plan_tiers(activation, tier, low=LOW, high=HIGH)
        assert len(d.archive) == len(d.restore) == len(d.forget) == 0
        tier = _apply(tier, d)
    assert tier.tolist() == initial


@given(
    data=st.lists(st.tuples(st.floats(0.0, 1.0), tiers2), min_size=1, max_size=60),
    low=st.floats(0.0, 0.9),
    width=st.floats(0.01, 0.5),
)
def test_hysteresis_rules_hold_for_any_activations(
    data: list[tuple[float, int]], low: float, width: float
) -> None:
    """Below low is archived, above high is restored, nothing inside [low, high] moves."""
    high = low + width
    activation = np.asarray([a for a, _ in data])
    tier = np.asarray([t for _, t in data], dtype=np.int8)
    d = plan_tiers(activation, tier, low=low, high=high)
    active, archived = tier == Tier.ACTIVE, tier == Tier.ARCHIVE
    assert set(d.archive) == set(np.flatnonzero(active & (activation < low)))
    assert set(d.restore) == set(np.flatnonzero(archived & (activation > high)))
    inside = (activation >= low) & (activation <= high)
    moved = set(d.archive) | set(d.restore)
    assert not moved & set(np.flatnonzero(inside))
    assert (d.low, d.high) == (low, high)


@pytest.mark.parametrize(
    ("activation", "tier", "archived", "restored"),
    [
        (0.24, Tier.ACTIVE, True, False),
        (0.25, Tier.ACTIVE, False, False),  # exactly low stays
        (0.30, Tier.ACTIVE, False, False),
        (0.40, Tier.ARCHIVE, False, False),  # exactly high stays archived
        (0.41, Tier.ARCHIVE, False, True),
        (0.30, Tier.ARCHIVE, False, False),
        (0.90, Tier.ACTIVE, False, False),
        (0.01, Tier.ARCHIVE, False, False),
        (0.01, Tier.COLD, False, False),  # cold memories are never moved by maintenance
        (0.99, Tier.COLD, False, False),
    ],
)
def test_threshold_table(activation: float, tier: Tier, archived: bool, restored: bool) -> None:
    """Demote strictly below low, promote strictly above high, cold rows stay put."""
    d = plan_tiers(np.asarray([activation]), np.asarray([tier], dtype=np.int8), low=LOW, high=HIGH)
    assert (len(d.archive) == 1, len(d.restore) == 1) == (archived, restored)


@given(
    acts=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=80, unique=True),
    tiers=st.lists(tiers2, min_size=80, max_size=80),
    capacity=st.integers(1, 80),
)
def test_capacity_pressure_keeps_the_active_tier_within_capacity(
    acts: list[float], tiers: list[int], capacity: int
) -> None:
    """With distinct activations, applying the plan leaves at most `capacity` active rows."""
    activation = np.asarray(acts)
    tier = np.asarray(tiers[: len(acts)], dtype=np.int8)
    d = plan_tiers(activation, tier, low=LOW, high=HIGH, capacity=capacity)
    after = _apply(tier, d)
    assert int((after == Tier.ACTIVE).sum()) <= capacity
    assert d.low >= LOW
    assert d.high - d.low == pytest.approx(HIGH - LOW) or d.high == HIGH


@given(
    acts=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=60, unique=True),
    capacity=st.integers(1, 59),
)
def test_capacity_keeps_the_most_activated(acts: list[float], capacity: int) -> None:
    """Under capacity pressure on an all-active tier, the survivors are the top activations."""
    activation = np.asarray(acts)
    tier = np.zeros(len(acts), dtype=np.int8)
    d = plan_tiers(activation, tier, low=0.0, high=0.01, capacity=capacity)
    kept = set(range(len(acts))) - set(d.archive)
    top = set(np.argsort(-activation)[: min(capacity, len(acts))].tolist())
    assert kept <= top


# few distinct values, so ties are common (a remember_many batch shares one activation)
_TIED = st.sampled_from([0.1, 0.3, 0.35, 0.5, 0.6, 0.9])


@given(
    rows=st.lists(st.tuples(st.one_of(_TIED, st.floats(0.0, 1.0)), tiers2), max_size=60),
    capacity=st.integers(1, 50),
)
def test_capacity_pressure_leaves_exactly_capacity_and_is_stable(
    rows: list[tuple[float, int]], capacity: int
) -> None:
    """Under pressure exactly ``capacity`` memories are active afterwards, ties included
    (it used to keep every memory tied at the raised threshold, or none when archived
    ones above ``archive_high`` were counted but not restored); planning again with the
    same activations moves nothing (no oscillation), and nothing inside the reported
    band moved."""
    activation = np.asarray([a for a, _ in rows], dtype=np.float64)
    tier = np.asarray([t for _, t in rows], dtype=np.int8)
    d = plan_tiers(activation, tier, low=LOW, high=HIGH, capacity=capacity)
    after = _apply(tier, d)
    active, archived = tier == Tier.ACTIVE, tier == Tier.ARCHIVE
    eligible = int(np.sum(active & (activation >= LOW)) + np.sum(archived & (activation > HIGH)))
    assert int(np.sum(after == Tier.ACTIVE)) == min(eligible, capacity)
    again = plan_tiers(activation, after, low=LOW, high=HIGH, capacity=capacity)
    assert len(again.archive) == len(again.restore) == 0
    inside = (activation > d.low) & (activation < d.high)
    assert not np.any(inside & (after != tier))


def test_capacity_ties_keep_the_newest() -> None:
    """A batch of equal activations over capacity keeps the newest (``order``)."""
    n, capacity = 10, 4
    order = np.asarray([5, 9, 1, 7, 3, 8, 0, 6, 2, 4])
    d = plan_tiers(
        np.full(n, 0.6),
        np.zeros(n, dtype=np.int8),
        low=LOW,
        high=HIGH,
        capacity=capacity,
        order=order,
    )
    kept = sorted(set(range(n)) - set(d.archive.tolist()))
    assert sorted(order[kept].tolist()) == [6, 7, 8, 9]


def test_capacity_pressure_never_empties_the_active_tier() -> None:
    """Archived memories far above ``archive_high`` replace the active ones, up to the
    capacity: the tier is not left empty (the case the review found: 10 active, 20
    archived above the band, capacity 10)."""
    activation = np.concatenate([np.full(10, 0.6), np.linspace(0.9, 0.95, 20)])
    tier = np.asarray([Tier.ACTIVE] * 10 + [Tier.ARCHIVE] * 20, dtype=np.int8)
    d = plan_tiers(activation, tier, low=LOW, high=HIGH, capacity=10)
    after = _apply(tier, d)
    assert np.flatnonzero(after == Tier.ACTIVE).tolist() == list(range(20, 30))


def test_no_pressure_below_capacity() -> None:
    """When the active tier fits its capacity, the thresholds are the policy's own."""
    d = plan_tiers(
        np.asarray([0.9, 0.8, 0.3]), np.zeros(3, dtype=np.int8), low=LOW, high=HIGH, capacity=3
    )
    assert (d.low, d.high) == (LOW, HIGH)
    assert len(d.archive) == 0


def test_invalidated_rows_leave_the_active_tier_and_never_return() -> None:
    """Invalidated rows are archived even when highly activated, and never restored."""
    activation = np.asarray([0.9, 0.9])
    tier = np.asarray([Tier.ACTIVE, Tier.ARCHIVE], dtype=np.int8)
    d = plan_tiers(activation, tier, low=LOW, high=HIGH, invalidated=np.asarray([True, True]))
    assert d.archive.tolist() == [0]
    assert d.restore.tolist() == []


@given(
    data=st.lists(st.tuples(st.floats(0.0, 1.0), tiers2, st.booleans()), min_size=1, max_size=60),
    enabled=st.booleans(),
    forget_below=st.floats(0.0, 0.24),
)
def test_forgetting_is_opt_in_and_spares_protected_rows(
    data: list[tuple[float, int, bool]], enabled: bool, forget_below: float
) -> None:
    """Only enabled forgetting deletes, only unprotected rows below forget_below, never a
    restored one."""
    activation = np.asarray([a for a, _, _ in data])
    tier = np.asarray([t for _, t, _ in data], dtype=np.int8)
    forgettable = np.asarray([f for _, _, f in data])
    d = plan_tiers(
        activation,
        tier,
        low=LOW,
        high=HIGH,
        forget_enabled=enabled,
        forget_below=forget_below,
        forgettable=forgettable,
    )
    if not enabled:
        assert len(d.forget) == 0
    for i in d.forget:
        assert forgettable[i]
        assert activation[i] < forget_below
    assert not set(d.forget) & set(d.restore)
    assert not set(d.forget) & set(d.archive)


def _plan_row_by_row(
    activation: list[float],
    tier: list[int],
    invalidated: list[bool],
    forgettable: list[bool],
    capacity: int | None,
    forget_below: float | None,
) -> tuple[list[int], list[int], list[int], float, float]:
    """plan_tiers' rules, one row at a time (the oracle for the vectorised masks)."""
    n = len(tier)
    act, arch = int(Tier.ACTIVE), int(Tier.ARCHIVE)
    low, high = LOW, HIGH
    projected = [
        i
        for i, a in enumerate(activation)
        if not invalidated[i] and ((tier[i] == act and a >= LOW) or (tier[i] == arch and a > HIGH))
    ]
    if capacity is not None and len(projected) > capacity:
        # the `capacity` best: activation, minus the band for one coming back; ties: the
        # active first, then the newer (a larger row)
        width = HIGH - LOW

        def key(i: int) -> float:
            return activation[i] - width if tier[i] == arch else activation[i] - 0.0

        ranked = sorted(projected, key=lambda i: (-key(i), tier[i] == arch, -i))
        keep = set(ranked[:capacity])
        low = max(LOW, key(ranked[capacity - 1]))
        high = max(HIGH, low + width)
        archive = [i for i in range(n) if tier[i] == act and i not in keep]
        restore = [i for i in range(n) if tier[i] == arch and i in keep]
    else:
        archive = [
            i for i in range(n) if tier[i] == act and (invalidated[i] or activation[i] < low)
        ]
        restore = [
            i for i in range(n) if tier[i] == arch and not invalidated[i] and activation[i] > high
        ]
    forget: list[int] = []
    if forget_below is not None:
        forget = [
            i
            for i in range(n)
            if ((tier[i] == arch and i not in restore) or i in archive)
            and forgettable[i]
            and activation[i] < forget_below
        ]
        archive = [i for i in archive if i not in forget]
    return archive, restore, forget, low, high


@given(
    rows=st.lists(
        st.tuples(
            st.floats(0.0, 1.0),
            st.sampled_from([int(t) for t in Tier]),
            st.booleans(),
            st.booleans(),
        ),
        max_size=60,
    ),
    capacity=st.none() | st.integers(1, 50),
    forget_below=st.none() | st.floats(0.0, 0.24),
    with_invalidated=st.booleans(),
)
def test_plan_equals_the_rules_row_by_row(
    rows: list[tuple[float, int, bool, bool]],
    capacity: int | None,
    forget_below: float | None,
    with_invalidated: bool,
) -> None:
    """Every combination of capacity, invalidation and forgetting (the masks are built in
    place and only when needed) plans exactly what the rules say row by row."""
    activation = [a for a, _, _, _ in rows]
    tier = [t for _, t, _, _ in rows]
    invalid = [v and with_invalidated for _, _, v, _ in rows]
    forgettable = [f for _, _, _, f in rows]
    d = plan_tiers(
        np.asarray(activation, dtype=np.float64),
        np.asarray(tier, dtype=np.int8),
        low=LOW,
        high=HIGH,
        capacity=capacity,
        invalidated=np.asarray(invalid, dtype=bool) if with_invalidated else None,
        forget_enabled=forget_below is not None,
        forget_below=forget_below or 0.0,
        forgettable=np.asarray(forgettable, dtype=bool),
    )
    archive, restore, forget, low, high = _plan_row_by_row(
        activation, tier, invalid, forgettable, capacity, forget_below
    )
    assert (d.archive.tolist(), d.restore.tolist(), d.forget.tolist()) == (
        archive,
        restore,
        forget,
    )
    assert (d.low, d.high) == (low, high)


def test_plan_summary_and_ids() -> None:
    """A MaintenancePlan lists ids per action and summarises itself in one line."""
    plan = MaintenancePlan(
        namespace="ns",
        now=0.0,
        entries=(
            PlanEntry("a", "archive", 0.1, "fact", "low"),
            PlanEntry("b", "restore", 0.5, "fact", "high"),
            PlanEntry("c", "forget", 0.0, "fact", "old"),
        ),
        low=LOW,
        high=HIGH,
        active_before=3,
        active_after=2,
        applied=False,
    )
    assert (plan.archived, plan.restored, plan.forgotten) == (["a"], ["b"], ["c"])
    assert len(plan) == 3
    assert "dry run" in plan.summary()
    assert "1 to archive" in plan.summary()


# ---------------------------------------------------------------- through the engine

CALM = Policy.template("balanced").replace(
    maintain_every=0, adapt=False, betas=dict.fromkeys(Policy().half_lives, 0.05)
)


def test_engine_memories_hovering_in_the_band_never_flip_flop(fresh: Any) -> None:
    """Over 40 cycles of decay, small recall boosts and maintain(), a memory whose activation
    stays inside the band keeps its tier: one stays active, one stays archived."""
    clock = ManualClock()
    with fresh(clock=clock, policy=CALM) as mem:
        # floor 0.5 * 0.775**2 = 0.30 is inside the band: never below low
        stay = mem.remember(
            "zebra crossings near the school", category="small_talk", importance=0.775
        )
        # floor 0.5 * 0.4**2 = 0.08 is below low: archived; small boosts keep it under high
        low = mem.remember("quokka photos from the island", category="small_talk", importance=0.4)
        clock.advance(5 * DAY)
        first = mem.maintain()
        assert first.archived == [low.id]
        for _ in range(40):
            clock.advance(5 * DAY)
            mem.recall("zebra crossings near the school", k=1)
            mem.recall("quokka photos from the island", k=1, deep=True)
            plan = mem.maintain()
            assert len(plan) == 0, plan.summary()
        assert mem.get(stay.id).tier == Tier.ACTIVE
        assert mem.get(low.id).tier == Tier.ARCHIVE
        moves = [e.kind for e in mem.history() if e.kind in ("archive", "restore")]
        assert moves == ["archive"]


@settings(max_examples=15)
@given(
    steps=st.lists(
        st.tuples(st.floats(0.0, 3 * DAY), st.integers(0, 5), st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_engine_moves_only_outside_the_band(
    fresh: Any, steps: list[tuple[float, int, bool]]
) -> None:
    """Through any sequence of waits, recalls and maintain(), every archive happens below
    the band and every restore above it."""
    clock = ManualClock()
    texts = [
        f"memo {w} about topic {w}"
        for w in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
    ]
    with fresh(
        clock=clock, policy=CALM.replace(betas=dict.fromkeys(Policy().half_lives, 0.3))
    ) as mem:
        recs = mem.remember_many(
            texts, categories=["small_talk", "event", "task"] * 2, importances=[0.0, 0.3] * 3
        )
        ids = {r.id for r in recs}
        for wait, pick, maintain in steps:
            clock.advance(wait)
            before = {r.id: r for r in mem.records()}
            if maintain:
                plan = mem.maintain()
                for e in plan.entries:
                    act = before[e.id].activation
                    if e.action == "archive":
                        assert act < plan.low
                        assert before[e.id].tier == Tier.ACTIVE
                    if e.action == "restore":
                        assert act > plan.high
                        assert before[e.id].tier == Tier.ARCHIVE
            else:
                mem.recall(texts[pick], k=1, deep=True)
        for e in mem.history():
            if e.kind == "restore" and e.detail.get("reason") == "recalled from the archive":
                assert e.memory_id in ids
        for r in mem.records():
            if r.tier == Tier.ARCHIVE:
                assert any(e.kind in ("archive", "invalidate") for e in mem.history(r.id))


def test_small_talk_is_archived_and_instructions_stay(mem: Oblivion, clock: ManualClock) -> None:
    """After simulated days, maintain() archives small talk and keeps an instruction active."""
    chat = mem.remember("Hi! Lovely weather today.")
    rule = mem.remember("Always answer in British English.")
    assert (chat.category, rule.category) == ("small_talk", "instruction")
    clock.advance(3 * DAY)
    plan = mem.maintain()
    assert plan.archived == [chat.id]
    assert mem.get(chat.id).tier == Tier.ARCHIVE
    clock.advance(365 * DAY)
    mem.maintain()
    assert mem.get(rule.id).tier == Tier.ACTIVE


def test_dry_run_changes_nothing(mem: Oblivion, clock: ManualClock, snapshot: Any) -> None:
    """maintain(dry_run=True) reports the plan but moves, journals and adapts nothing."""
    mem.remember_many([f"chit chat number {i}" for i in range(25)], categories=["small_talk"] * 25)
    mem.remember("Always answer in British English.")
    clock.advance(4 * DAY)
    before = snapshot(mem)
    dry = mem.maintain(dry_run=True)
    assert not dry.applied
    assert len(dry.archived) == 25
    assert dry.adapted == {}
    assert snapshot(mem) == before
    real = mem.maintain()
    assert real.applied
    assert sorted(real.archived) == sorted(dry.archived)
    assert (real.active_before, real.active_after) == (dry.active_before, dry.active_after)


def test_maintenance_journals_every_move(mem: Oblivion, clock: ManualClock) -> None:
    """Each archive move is journaled with its activation and the reason."""
    chat = mem.remember("thanks, see you", category="small_talk", importance=0.0)
    clock.advance(4 * DAY)
    mem.maintain()
    events = [e for e in mem.history(chat.id) if e.kind == "archive"]
    assert len(events) == 1
    assert events[0].before == pytest.approx(mem.get(chat.id).activation)
    assert "below" in events[0].detail["reason"]


def test_engine_capacity_pressure(fresh: Any) -> None:
    """With active_capacity=5 and distinct activations, maintain() leaves 5 active: the top 5."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(active_capacity=5, maintain_every=0, adapt=False)
    with fresh(clock=clock, policy=policy) as mem:
        recs = mem.remember_many(
            [f"note {i} on subject {i * 7}" for i in range(12)],
            categories=["fact"] * 12,
            importances=[i / 12 for i in range(12)],
        )
        clock.advance(DAY)
        plan = mem.maintain()
        assert plan.active_after == 5
        assert mem.stats()["active"] == 5
        active = {r.id for r in mem.records(tier=Tier.ACTIVE)}
        assert active == {r.id for r in recs[-5:]}


def test_engine_capacity_with_a_tied_batch_and_archived_returners(tmp_path: Path) -> None:
    """On a persisted store: a batch of equal activations over the target keeps the
    target's newest (it used to keep them all); archived memories well above the band
    take the places of weaker active ones instead of leaving the tier empty; a reopened
    store plans no move."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(
        active_capacity=10, active_share=None, maintain_every=0, adapt=False
    )
    with Oblivion(tmp_path, policy=policy, clock=clock, embedder=HashEmbedder()) as mem:
        batch = mem.remember_many(
            [f"imported note {i} about topic{i}" for i in range(40)],
            categories=["fact"] * 40,
            importances=[0.5] * 40,
            supersede=False,
        )
        assert mem.maintain().active_after == 10
        assert {r.id for r in mem.records(tier=Tier.ACTIVE)} == {r.id for r in batch[-10:]}
        # the archived 30 are confirmed well above the band; the 10 active ones are not
        for r in batch[:30]:
            mem.confirm(r.id)
        plan = mem.maintain()
        assert plan.active_after == 10
        # they take the places of weaker ones, as maintain() ranks a returner (its
        # activation less the band's width): no archived one would beat an active one
        active = mem.records(tier=Tier.ACTIVE)
        confirmed = {r.id for r in batch[:30]}
        assert len([r for r in active if r.id in confirmed]) >= 5
        width = policy.archive_high - policy.archive_low
        least = min(r.activation for r in active)
        archived = [r for r in mem.records(tier=Tier.ARCHIVE) if r.id in confirmed]
        assert archived and all(r.activation - width <= least for r in archived)
    with Oblivion(tmp_path, policy=policy, clock=clock, embedder=HashEmbedder()) as mem:
        again = mem.maintain(dry_run=True)
        assert again.entries == ()
        assert mem.stats()["active"] == 10


@given(
    memories=st.integers(0, 10**7),
    share=st.one_of(st.none(), st.floats(0.001, 1.0)),
    share_min=st.integers(0, 10_000),
    capacity=st.one_of(st.none(), st.integers(1, 10**6)),
)
def test_active_target_is_the_tighter_of_capacity_and_share(
    memories: int, share: float | None, share_min: int, capacity: int | None
) -> None:
    """The active tier's target is the smaller of the capacity and the share (which never
    asks for fewer than ``active_share_min``); with neither it is unbounded."""
    policy = Policy.template("balanced").replace(
        active_share=share, active_share_min=share_min, active_capacity=capacity
    )
    target = policy.active_target(memories)
    if share is None and capacity is None:
        assert target is None
        return
    assert target is not None
    if capacity is not None:
        assert target <= capacity
    if share is not None:
        assert target <= max(share_min, math.ceil(share * memories))
        assert target >= min(share_min, capacity if capacity is not None else share_min)
        assert target >= min(share * memories, capacity if capacity is not None else math.inf)


def test_engine_active_share(fresh: Any) -> None:
    """With active_share=0.25, maintain() leaves a quarter of 400 memories active: the most
    active ones; a store smaller than active_share_min keeps them all."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(
        active_share=0.25, active_share_min=64, maintain_every=0, adapt=False
    )
    with fresh(clock=clock, policy=policy) as mem:
        recs = mem.remember_many(
            [f"note {i} on subject {i * 7}" for i in range(60)], categories=["fact"] * 60
        )
        clock.advance(60.0)
        mem.maintain()
        assert mem.stats()["active"] == 60  # below the minimum: nothing moves
        for i in range(60, 400):
            clock.advance(60.0)
            recs.append(mem.remember(f"note {i} on subject {i * 7}", category="fact"))
        plan = mem.maintain()
        assert plan.active_after == 100
        assert mem.stats()["active_target"] == 100
        assert {r.id for r in mem.records(tier=Tier.ACTIVE)} == {r.id for r in recs[-100:]}


def test_forgetting_is_off_by_default(mem: Oblivion, clock: ManualClock) -> None:
    """With the default policy nothing is ever deleted by decay, however old."""
    mem.remember("ok", category="small_talk", importance=0.0)
    clock.advance(10_000 * DAY)
    mem.maintain()
    mem.maintain()
    assert mem.count() == 1
    assert mem.records()[0].activation < 1e-6


def test_forgetting_when_enabled_spares_protected_memories(fresh: Any) -> None:
    """Enabled forgetting deletes old unprotected archived memories only, and a dry run
    reports it first."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(forget_enabled=True, maintain_every=0)
    with fresh(clock=clock, policy=policy) as mem:
        chat = mem.remember("ok cool", category="small_talk", importance=0.0)
        pref = mem.remember("I prefer tea", category="preference", importance=0.0)
        vip = mem.remember("server moved to rack 9", category="fact", importance=0.9)
        clock.advance(5_000 * DAY)
        dry = mem.maintain(dry_run=True)
        assert dry.forgotten == [chat.id]
        assert mem.count() == 3
        plan = mem.maintain()
        assert plan.forgotten == [chat.id]
        assert {r.id for r in mem.records()} == {pref.id, vip.id}
        assert any(e.kind == "forget" for e in mem.history(chat.id))


def _settled(mem: Oblivion) -> None:
    """A second maintain() at the same time moves nothing and the target is kept."""
    again = mem.maintain()
    assert (again.archived, again.restored) == ([], [])
    stats = mem.stats()
    assert stats["active"] <= stats["active_target"]


def test_the_active_target_is_for_the_memories_left_after_forgetting() -> None:
    """maintain() sized the active tier for the count before it forgot: 16 memories, 8
    forgotten, 4 left active where the target of 8 is 2, and the next call archived 2."""
    policy = Policy.template("balanced").replace(
        active_share=0.25,
        active_share_min=0,
        forget_enabled=True,
        forget_below=0.05,
        protected_categories=[],
        half_lives={"fact": 1e6, "small_talk": 1.0},
    )
    clock = ManualClock()
    mem = memory(clock=clock, policy=policy)
    for w in ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]:
        mem.remember(f"{w} fact kept", category="fact", importance=0.5)
        mem.remember(f"{w} chit chat", category="small_talk", importance=0.1)
    clock.advance(100)
    plan = mem.maintain()
    assert len(plan.ids("forget")) == 8
    assert mem.stats()["active"] == mem.stats()["active_target"] == 2
    _settled(mem)


def test_the_active_target_counts_the_summaries_written() -> None:
    """Compression adds a summary, raising the target: the next maintain() restored a
    memory the first had archived, at the same activation."""
    policy = Policy.template("balanced").replace(
        active_share=0.25,
        active_share_min=0,
        compress_below=0.2,
        compress_similarity=0.99,
        adapt=False,
        half_lives={"fact": 1e6, "small_talk": 1.0, "summary": 1e6},
    )
    clock = ManualClock()
    mem = memory(clock=clock, policy=policy)
    for text in ("hello there", "hello there friend", "hello there again"):
        mem.remember(text, category="small_talk", importance=0.1)
    clock.advance(1000)
    for i, w in enumerate(["alpha", "bravo", "charlie", "delta", "echo"]):
        mem.remember(f"{w} fact number {i}", category="fact", importance=0.2 + 0.1 * i)
        clock.advance(1000)
    assert mem.maintain().ids("compress")
    _settled(mem)


def _an_archived_fact() -> tuple[Oblivion, str, Policy]:
    """An engine holding one fact that faded into the archive, its id, and the policy."""
    policy = Policy.template("balanced").replace(active_share=None, half_lives={"fact": 10.0})
    clock = ManualClock()
    mem = memory(clock=clock, policy=policy)
    mid = mem.remember("the launch is code-named bluebird", category="fact", importance=0.2).id
    clock.advance(100)
    assert mem.maintain().archived == [mid]
    return mem, mid, policy


def test_a_restore_by_maintain_is_journaled_once() -> None:
    """It was journaled twice: by the move ('maintain') and by the plan's entry."""
    mem, mid, policy = _an_archived_fact()
    mem.set_policy(policy.replace(archive_low=0.6, archive_high=0.9))
    mem.confirm(mid)  # above the usual band, inside this one: stays archived
    mem.set_policy(policy)
    assert mem.maintain().restored == [mid]
    restores = [e for e in mem.history(mid) if e.kind == "restore"]
    assert [e.detail["reason"] for e in restores] == ["activation above 0.400"]


@pytest.mark.parametrize("signal", ["confirm", "used"])
def test_a_boost_that_restores_is_journaled_before_the_restore(signal: str) -> None:
    """The journal read 'restore' and then the 'confirm' that caused it (found by the
    engine's state machine test); a recall's promotion was already journaled after it."""
    mem, mid, _ = _an_archived_fact()
    seen = len(mem.history(mid))
    for _ in range(3):  # a used boost may take two to lift it above the band
        if signal == "confirm":
            mem.confirm(mid)
        else:
            mem.mark_used([mid])
        if mem.get(mid).tier == Tier.ACTIVE:
            break
    assert mem.get(mid).tier == Tier.ACTIVE
    events = mem.history(mid)[seen:]
    assert [e.kind for e in events[-2:]] == [signal, "restore"]
    assert {e.kind for e in events[:-2]} <= {signal}
    assert events[-1].detail["reason"] == f"{signal} boost"


def test_memories_archived_at_the_cut_say_so() -> None:
    """A batch shares one activation; a full active tier keeps the newest of them. The
    others were archived "activation below 0.750" at exactly 0.750."""
    mem = memory(policy=Policy.template("balanced").replace(active_share_min=0, maintain_every=0))
    mem.remember_many([f"note number {i}" for i in range(20)], importances=[0.5] * 20)
    plan = mem.maintain()
    archived = [e for e in plan.entries if e.action == "archive"]
    assert len(archived) == 15
    for e in archived:
        assert e.activation >= plan.low
        assert e.reason == f"activation {e.activation:.3f} tied at the full tier's cut"


def test_a_recall_does_not_swap_two_memories_at_a_full_tiers_cut() -> None:
    """An archive hit boosted above archive_high was promoted though the tier was full:
    the next maintain() archived one of the two again, the next recall brought it back
    (10 tier changes in 6 recall + maintain cycles)."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(
        active_capacity=1, active_share=None, maintain_every=0
    )
    mem = memory(clock=clock, policy=policy)
    # both start at the cap: neither beats the other by the band's width
    a = mem.remember("the garden gate is painted green", category="fact", importance=0.9).id
    clock.advance(60)
    b = mem.remember("the garage door is painted blue", category="fact", importance=0.9).id
    mem.maintain()
    tiers = []
    for q in ("garden gate green", "garage door blue") * 3:
        clock.advance(60)
        mem.recall(q, k=1, deep=True)
        mem.maintain()
        tiers.append((mem.get(a).tier, mem.get(b).tier))
    changes = sum(x != y for x, y in itertools.pairwise(tiers))
    assert changes == 0, tiers
    assert len(mem.records(tier="active")) == 1
    mem.close()


def test_a_recall_promotes_only_what_the_next_maintain_keeps() -> None:
    """An archive hit was promoted when it beat the least activated active memory, a
    new write the next maintain() archives anyway: that maintain archived the hit
    again, on every recall + maintain, with no time passing. The hit now must beat the
    least activated of what maintain() keeps; its why says whether it was promoted."""
    policy = Policy.template("balanced").replace(
        active_capacity=3, active_share=None, maintain_every=0
    )
    mem = memory(clock=ManualClock(), policy=policy)
    for text in ("alpha one", "bravo two", "charlie three"):
        mem.remember(text, category="instruction", importance=1.0)
    x = mem.remember("zulu zebra xylophone", category="fact", importance=0.6, confidence=0.0).id
    mem.maintain()
    assert mem.get(x).tier == Tier.ARCHIVE
    for i in range(4):
        mem.remember(f"small talk {i}", category="small_talk", importance=0.0)
        item = mem.recall("zulu zebra xylophone", k=1)[0]
        assert item.id == x and "promoted" not in item.why["boost"]
        assert mem.get(x).tier == Tier.ARCHIVE
        mem.maintain()
    assert [e.kind for e in mem.history(x)].count("restore") == 0
    # with room in the tier it is promoted, and its why says so
    mem.set_policy(policy.replace(active_capacity=10))
    mem._lock.settle()
    item = mem.recall("zulu zebra xylophone", k=1)[0]
    mem._lock.settle()
    assert item.why["boost"].get("promoted") is True and mem.get(x).tier == Tier.ACTIVE
    mem.close()


def test_a_recall_with_nothing_to_promote_reads_no_other_activation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the active tier over its target, every recall's feedback read the
    activation of every active memory (the floor a promotion must beat) even with no
    archive hit to promote: 0.9 ms of each recall's feedback at 100k memories. Only
    the candidates' activations are read then."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(
        active_capacity=5, active_share=None, maintain_every=0
    )
    mem = memory(clock=clock, policy=policy.replace(active_capacity=None))
    first = mem.remember_many([f"note number {i} about the garden" for i in range(200)])[0]
    mem.set_policy(policy)  # 200 active memories for a target of 5, until maintain()
    assert len(mem.records(tier="active")) == 200
    sizes: list[int] = []
    real = Oblivion._activation

    def counted(self: Oblivion, ns: str, st: Any, now: float, rows: Any = None) -> Any:
        out = real(self, ns, st, now, rows)
        sizes.append(len(out))
        return out

    monkeypatch.setattr(Oblivion, "_activation", counted)
    clock.advance(60)
    mem.recall("garden note", k=2, deep=False)
    mem.get(first.id)  # the queued feedback has run
    assert sizes and max(sizes) < 200, sizes  # the candidates (dense and BM25), never the tier
    mem.close()


def test_a_restore_into_a_full_tier_says_what_it_passed() -> None:
    """Into a full tier a memory comes back by passing the policy's own threshold and
    being among the most active the tier keeps; the raised band's edge it was said to be
    "above" equals its activation here (two memories at the 1.0 cap)."""
    policy = Policy.template("balanced").replace(
        active_capacity=2, active_share=None, maintain_every=0, adapt=False
    )
    clock = ManualClock()
    mem = memory(clock=clock, policy=policy)
    ids = [mem.remember(f"note {w}", category="fact").id for w in ("amber", "basil", "cedar")]
    clock.advance(3_600)
    (gone,) = mem.maintain().archived
    other, last = [m for m in ids if m != gone]
    mem.set_policy(policy.replace(archive_low=0.85, archive_high=1.0))  # nothing promoted
    for mid in (gone, other):
        for _ in range(3):
            mem.confirm(mid)  # to the cap
    mem.set_policy(policy)
    plan = mem.maintain()
    assert plan.restored == [gone] and plan.archived == [last]
    (entry,) = [e for e in plan.entries if e.action == "restore"]
    assert entry.activation == pytest.approx(1.0) and plan.high == pytest.approx(1.0)
    why = f"activation above {policy.archive_high:.3f}, among the most active the full tier keeps"
    assert entry.reason == why
    assert [e.detail["reason"] for e in mem.history(gone) if e.kind == "restore"] == [why]
