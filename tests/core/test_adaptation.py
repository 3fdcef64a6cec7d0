"""Self-adaptation: per-category half-lives and betas learned from use (pure rules, and
through the engine's maintain())."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion, Policy, Tier
from oblivion_core.adaptation import (
    ARCHIVE_HIT_RATE,
    ARCHIVE_HIT_Z,
    CategoryUsage,
    Usage,
    adapt,
    multipliers,
)
from oblivion_core.testing import HashEmbedder, word_count

DAY = 86_400.0
POLICY = Policy.template("balanced").replace(maintain_every=0)


def _usage(**counts: int) -> Usage:
    usage = Usage()
    usage.categories["fact"] = CategoryUsage(**counts)
    return usage


@pytest.mark.parametrize(
    ("counts", "half_life_mult", "beta_mult"),
    [
        # recalled from the archive in > 30 % of recalls: decays too fast
        ({"stored": 10, "recalled": 10, "archive_hits": 4}, 1.1, 1.0),
        ({"stored": 10, "recalled": 10, "archive_hits": 4, "used": 6}, 1.1, 1.1),
        # used in more than half the recalls: boosts too small
        ({"stored": 10, "recalled": 10, "used": 6}, 1.0, 1.1),
        # recalled >= adapt_min_events and never used: boosts too big
        ({"recalled": 20}, 1.0, 0.9),
        # exactly 30 % archive hits and half used: nothing changes
        ({"stored": 10, "recalled": 10, "archive_hits": 3, "used": 5}, 1.0, 1.0),
    ],
)
def test_adaptation_rules(counts: dict[str, int], half_life_mult: float, beta_mult: float) -> None:
    """Each documented rule moves the half-life or beta multiplier by one step."""
    usage = _usage(**counts)
    changed = adapt(usage, POLICY)
    u = usage.categories["fact"]
    assert u.half_life_mult == pytest.approx(half_life_mult)
    assert u.beta_mult == pytest.approx(beta_mult)
    if (half_life_mult, beta_mult) != (1.0, 1.0):
        assert changed["fact"]["half_life"] == pytest.approx(
            POLICY.half_life("fact") * half_life_mult
        )
        assert changed["fact"]["beta"] == pytest.approx(POLICY.beta("fact") * beta_mult)
    else:
        assert changed == {}
    assert u.events == 0  # the window restarts


@pytest.mark.parametrize(
    ("hits", "share", "half_life_mult"),
    [
        (13, None, 1.1),  # no capacity pressure: the plain 30 % bar
        (32, 0.75, 1.0),  # 80 % of recalls from an archive holding 75 %: chance
        (38, 0.75, 1.1),  # 95 %: clearly more than chance, decayed too fast
        (40, 0.75, 1.1),  # every memory asked for had decayed out
        (13, 0.2, 1.1),  # a small archive share never lowers the bar below 30 %
        (12, 0.2, 1.0),
    ],
)
def test_the_archive_hit_bar_under_capacity_pressure(
    hits: int, share: float | None, half_life_mult: float
) -> None:
    """Under capacity pressure the archive hits of 40 recalls must clear the namespace's
    archived share (if above 30 %) by ARCHIVE_HIT_Z standard deviations of chance: a
    full active tier keeps memories archived whatever their half-life."""
    usage = _usage(stored=10, recalled=40, archive_hits=hits)
    adapt(usage, POLICY, share)
    assert usage.categories["fact"].half_life_mult == pytest.approx(half_life_mult)


@given(
    recalled=st.integers(1, 500),
    share=st.floats(0.31, 0.99),
    z=st.floats(-3.0, ARCHIVE_HIT_Z - 0.01),
    windows=st.integers(1, 30),
)
def test_no_half_life_ratchet_when_hits_are_chance(
    recalled: int, share: float, z: float, windows: int
) -> None:
    """Window after window of archive hits within chance of the archived share (what
    recall finds when activation carries no information) never lengthens a half-life
    under capacity pressure."""
    sd = math.sqrt(recalled * share * (1 - share))
    hits = max(0, min(recalled, math.floor(recalled * share + z * sd)))
    usage = Usage()
    for _ in range(windows):
        u = usage.of("fact")
        u.stored, u.recalled, u.archive_hits, u.used = 20, recalled, hits, recalled
        adapt(usage, POLICY, share)
        assert usage.categories["fact"].half_life_mult <= 1.0


def test_archived_never_used_category_decays_faster_only_while_recalls_happen() -> None:
    """Archived and never recalled or used, while the namespace's other memories are
    recalled: decays too slowly. With no recalls at all (a bulk import), nothing changes."""
    idle = _usage(stored=10, archived=10)
    assert adapt(idle, POLICY) == {}
    assert idle.categories["fact"].half_life_mult == 1.0
    busy = _usage(stored=10, archived=10)
    busy.categories["chat"] = CategoryUsage(recalled=POLICY.adapt_min_events, used=15)
    changed = adapt(busy, POLICY)
    assert busy.categories["fact"].half_life_mult == pytest.approx(0.9)
    assert changed["fact"]["half_life"] == pytest.approx(POLICY.half_life("fact") * 0.9)
    assert busy.categories["fact"].events == 0


def test_too_few_events_change_nothing_and_keep_counting() -> None:
    """Below adapt_min_events nothing adapts and the counters carry over."""
    usage = _usage(stored=5, archived=5, recalled=0)
    assert adapt(usage, POLICY) == {}
    assert usage.categories["fact"].events == 10


def test_adaptation_can_be_turned_off() -> None:
    """With adapt=False the rules never fire."""
    usage = _usage(stored=10, recalled=10, archive_hits=4)
    assert adapt(usage, POLICY.replace(adapt=False)) == {}
    assert usage.categories["fact"].half_life_mult == 1.0
    assert adapt(usage, POLICY)  # the same counts adapt when it is on


windows = st.lists(
    st.tuples(
        st.integers(0, 50),
        st.integers(0, 50),
        st.integers(0, 50),
        st.integers(0, 50),
        st.integers(0, 50),
    ),
    max_size=60,
)


@given(windows=windows, beta=st.floats(0.05, 1.0))
def test_multipliers_stay_within_bounds(
    windows: list[tuple[int, int, int, int, int]], beta: float
) -> None:
    """Over any sequence of windows, multipliers stay in adapt_bounds and beta never tops 1."""
    policy = POLICY.replace(betas=dict.fromkeys(POLICY.half_lives, beta))
    lo, hi = policy.adapt_bounds
    usage = Usage()
    for stored, recalled, hits, used, archived in windows:
        u = usage.of("fact")
        u.stored += stored
        u.recalled += recalled
        u.archive_hits += min(hits, recalled)
        u.used += used
        u.archived += archived
        adapt(usage, policy)
        assert lo - 1e-12 <= u.half_life_mult <= hi + 1e-12
        assert lo - 1e-12 <= u.beta_mult <= hi + 1e-12
        assert policy.beta("fact") * u.beta_mult <= 1.0 + 1e-12


def test_usage_json_round_trip() -> None:
    """Usage counters and multipliers survive to_json/from_json."""
    usage = _usage(stored=3, recalled=2, archive_hits=1, used=1, archived=0)
    usage.categories["fact"].half_life_mult = 1.21
    assert Usage.from_json(usage.to_json()).to_json() == usage.to_json()


# ---------------------------------------------------------------- through the engine


def _archive_twenty_events(mem: Oblivion, clock: ManualClock) -> list[str]:
    """Twenty events, never recalled, that decay into the archive while the namespace's
    one instruction is recalled twenty times (recalls are what make "never used" mean
    something)."""
    recs = mem.remember_many(
        [f"meetup number {i} with team {chr(65 + i)}" for i in range(20)],
        categories=["event"] * 20,
        importances=[0.0] * 20,
    )
    rule = mem.remember("Always answer in British English.", category="instruction")
    for _ in range(POLICY.adapt_min_events):
        assert mem.recall("Always answer in British English.", k=1).ids == [rule.id]
    clock.advance(60 * DAY)
    return [r.id for r in recs]


def test_a_bulk_import_leaves_half_lives_alone(fresh: Any) -> None:
    """Batches written with no recall in between get archived by maintain() (capacity
    pressure), which is no evidence that they decay too slowly: nothing adapts."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY.replace(active_share=0.25, active_share_min=8)) as mem:
        for batch in range(5):
            mem.remember_many(
                [f"imported note {batch}-{i} about topic {i % 7}" for i in range(40)],
                categories=["fact"] * 40,
                importances=[i / 40 for i in range(40)],
            )
            clock.advance(DAY)
            plan = mem.maintain()
            assert plan.archived
            assert plan.adapted == {}
        assert mem.stats()["categories"]["fact"]["half_life"] == POLICY.half_life("fact")


def test_never_used_category_gets_a_shorter_half_life(fresh: Any) -> None:
    """A category whose memories are archived and never recalled decays faster afterwards."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        _archive_twenty_events(mem, clock)
        plan = mem.maintain()
        assert len(plan.archived) == 20
        expected = POLICY.half_life("event") * (1 - POLICY.adapt_step)
        assert plan.adapted["event"]["half_life"] == pytest.approx(expected)
        assert mem.stats()["categories"]["event"]["half_life"] == pytest.approx(expected)
        assert any(e.kind == "adapt" for e in mem.history())


def test_category_recalled_from_the_archive_gets_a_longer_half_life(fresh: Any) -> None:
    """A category repeatedly recalled from the archive decays slower after maintain()."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        ids = _archive_twenty_events(mem, clock)
        mem.maintain()
        shortened = mem.stats()["categories"]["event"]["half_life"]
        for i, mid in enumerate(ids):
            result = mem.recall(f"meetup number {i} with team {chr(65 + i)}", k=1, deep=True)
            assert result.ids == [mid]
            assert result[0].tier == Tier.ARCHIVE
        plan = mem.maintain()
        lengthened = mem.stats()["categories"]["event"]["half_life"]
        assert lengthened == pytest.approx(shortened * (1 + POLICY.adapt_step))
        assert plan.adapted["event"]["half_life"] == pytest.approx(lengthened)
        assert mem.stats()["categories"]["event"]["half_life_multiplier"] == pytest.approx(
            (1 - POLICY.adapt_step) * (1 + POLICY.adapt_step)
        )


@pytest.mark.parametrize(
    ("from_archive", "from_active", "lengthened"), [(10, 10, False), (20, 0, True)]
)
def test_archive_hits_under_a_full_active_tier(
    fresh: Any, from_archive: int, from_active: int, lengthened: bool
) -> None:
    """With the active tier at its capacity, 75 % of the facts sit in the archive whatever
    their half-life. Half the recalls coming from there is less than that share: no
    longer half-life (the plain 30 % bar ran every half-life of a 3,000-turn session to
    its 4x bound). All of them coming from there is more: the half-life lengthens."""
    clock = ManualClock()
    policy = POLICY.replace(active_share=None, active_capacity=10)
    with fresh(clock=clock, policy=policy) as mem:
        mem.remember_many(
            [f"release note {i} for component {chr(65 + i % 26)}" for i in range(40)],
            categories=["fact"] * 40,
            importances=[0.5] * 40,
        )
        clock.advance(DAY)
        assert len(mem.maintain().archived) == 30
        active = [r.id for r in mem.records(tier="active")]
        archived = [r.id for r in mem.records(tier="archive")]
        mem.reinforce(archived[:from_archive] + active[:from_active])
        window = mem.stats()["categories"]["fact"]["window"]
        assert (window["recalled"], window["archive_hits"]) == (20, from_archive)
        clock.advance(DAY)
        plan = mem.maintain()
        assert plan.high > policy.archive_high  # capacity pressure held
        half_life = mem.stats()["categories"]["fact"]["half_life"]
        expected = POLICY.half_life("fact") * (1 + POLICY.adapt_step if lengthened else 1)
        assert half_life == pytest.approx(expected)


@pytest.mark.parametrize("active", [75, 72])
def test_a_tier_held_at_its_target_uses_the_archived_share_bar(fresh: Any, active: int) -> None:
    """A read-only phase: the active tier is full (75 of 300 facts), recalls promote
    nothing, so maintain() finds it at its target rather than over it. 70 % of the
    recalls came from the archive, less than the 75 % it holds: the half-life stays.
    The archived-share bar applied only to a tier found over its target, so the plain
    30 % bar lengthened it at every such maintain(). Then only to one at its target
    exactly: capacity pressure leaves it a few short (72 of 75) after the writes and
    moves since, and a simulated year ran half-lives to their 4x bound."""
    rng = random.Random(0)
    clock = ManualClock()
    policy = POLICY.replace(
        link_on_write=False, expand_neighbours=0, spread_fraction=0.0,
        betas={**POLICY.betas, "fact": 0.03},
    )  # fmt: skip
    words = [f"w{i}" for i in range(60)]
    half_life = policy.half_lives["fact"]
    with fresh(clock=clock, policy=policy) as mem:

        def store(n: int) -> None:
            texts = [" ".join(rng.sample(words, 4)) for _ in range(n)]
            mem.remember_many(texts, categories=["fact"] * n, importances=[0.0] * n)

        store(300 - active)
        # the older facts decay to 0.2 below the band, the newer ones to 0.35 within it
        later = half_life * math.log2(0.5 / 0.35)
        clock.advance(half_life * math.log2(0.5 / 0.2) - later)
        store(active)
        clock.advance(later)
        mem.maintain()
        for _ in range(25):
            mem.recall(" ".join(rng.sample(words, 2)), k=8)
        window = mem.stats()["categories"]["fact"]["window"]
        plan = mem.maintain()
        stats = mem.stats()
        assert (stats["active"], stats["active_target"], stats["archive"]) == (
            active,
            75,
            300 - active,
        )
        assert not plan.archived and not plan.restored  # held at the target, not over it
        hits = window["archive_hits"] / window["recalled"]
        assert ARCHIVE_HIT_RATE < hits < 0.75
        assert stats["categories"]["fact"]["half_life_multiplier"] == 1.0


def _store(mem: Oblivion, texts: list[str], category: str) -> list[str]:
    """Ids of ``texts`` written in one batch, of one category, at importance 0.5."""
    n = len(texts)
    return [
        r.id for r in mem.remember_many(texts, categories=[category] * n, importances=[0.5] * n)
    ]


def test_no_ratchet_when_every_memory_is_asked_for_alike(fresh: Any) -> None:
    """A full active tier, one category, every memory equally likely to be asked for:
    about as many recalls come from the archive as it holds memories, by chance. Window
    after window, the half-life stays (it climbed to 4x when each window that cleared the
    share by chance added 10 %)."""
    rng = random.Random(1)
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        ids = _store(
            mem, [f"note {i} about item {rng.randint(0, 10**6)}" for i in range(400)], "fact"
        )
        multipliers_seen = []
        for step in range(1, 481):
            clock.advance(3_600.0)
            new = [f"note {len(ids) + k} about item {rng.randint(0, 10**6)}" for k in (0, 1)]
            ids += _store(mem, new, "fact")
            mem.reinforce(rng.sample(ids, 6))
            if step % 16 == 0:
                assert mem.maintain().high > POLICY.archive_high  # the tier is full
                fact = mem.stats()["categories"]["fact"]
                multipliers_seen.append(fact["half_life_multiplier"])
        assert max(multipliers_seen) <= 1.1 + 1e-9


def test_a_category_asked_for_only_from_the_archive_lengthens_under_pressure(
    fresh: Any,
) -> None:
    """300 facts nobody asks for hold a full active tier; 60 tasks are asked for, every
    time from the archive. The tasks' half-life lengthens (the category's own archived
    share, 100 %, was a bar no hit rate clears)."""
    rng = random.Random(2)
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        _store(mem, [f"fact {i} about gadget {i}" for i in range(300)], "fact")
        tasks = _store(mem, [f"task {i}: renew licence {i}" for i in range(60)], "task")
        for step in range(1, 65):
            clock.advance(6 * 3_600.0)
            mem.reinforce(rng.sample(tasks, 4), relevances=[0.6] * 4)
            if step % 8 == 0:
                mem.maintain()
        task = mem.stats()["categories"]["task"]
        assert task["half_life_multiplier"] > 1.0
        assert mem.stats()["categories"]["fact"]["half_life_multiplier"] < 1.0  # never asked


def test_adaptation_does_not_change_activation_at_that_moment(fresh: Any) -> None:
    """Adapting a half-life changes future decay only: activations right after maintain()
    equal those right before it."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        ids = _archive_twenty_events(mem, clock)
        before = {m: mem.get(m).activation for m in ids}
        plan = mem.maintain()
        assert plan.adapted
        after = {m: mem.get(m).activation for m in ids}
        assert after == pytest.approx(before, rel=1e-9)


def test_adapting_a_half_life_does_not_rewrite_the_category(fresh: Any) -> None:
    """A new half-life starts a new piece of the category's decay clock: maintain() writes
    the memories it moves and its journal, not every memory of the adapted category (it
    used to rewrite them all, about 1 s for 50,000 memories)."""
    clock = ManualClock()
    # no size target: the 300 new ones stay active, so maintain() has only the 20 to move
    with fresh(clock=clock, policy=POLICY.replace(active_share=None)) as mem:
        ids = _archive_twenty_events(mem, clock)
        more = mem.remember_many(
            [f"conference talk {i} about topic {i % 9}" for i in range(300)],
            categories=["event"] * 300,
            importances=[0.9] * 300,
        )
        before = {r.id: mem.get(r.id).activation for r in more[:20]}
        conn = mem._db.conn
        changes = conn.total_changes
        plan = mem.maintain()
        assert "event" in plan.adapted
        written = conn.total_changes - changes
        assert written < 100  # 20 archived rows, their journal entries, meta
        assert {m: mem.get(m).activation for m in before} == pytest.approx(before, rel=1e-12)
        assert all(mem.get(m).tier == Tier.ARCHIVE for m in ids)


def test_a_policy_switch_rewrites_memories_only_for_a_new_floor_or_slowing(
    fresh: Any,
) -> None:
    """set_policy with new half-lives starts new clock pieces (no memory rewritten); a new
    floor_fraction folds the decay so far into every memory. Either way activations are
    continuous at the switch."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        recs = mem.remember_many(
            [f"note {i} about the garden" for i in range(200)], importances=[0.5] * 200
        )
        clock.advance(3 * DAY)
        ids = [r.id for r in recs]
        conn = mem._db.conn

        def switch(policy: Policy) -> int:
            before = {m: mem.get(m).activation for m in ids}
            changes = conn.total_changes
            mem.set_policy(policy)
            written = conn.total_changes - changes
            assert {m: mem.get(m).activation for m in ids} == pytest.approx(before, rel=1e-12)
            return written

        slower = POLICY.replace(half_lives={c: 2 * h for c, h in POLICY.half_lives.items()})
        assert switch(slower) < 10  # journal and meta
        assert switch(slower.replace(floor_fraction=0.1)) >= len(ids)


def test_decay_follows_each_new_half_life_at_once(fresh: Any) -> None:
    """Rates are cached per namespace: an adapted half-life, then a policy switched at run
    time, each govern the very next activation read (decay rate and halving time)."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        mid = _archive_twenty_events(mem, clock)[0]

        def halves_in(half_life: float) -> None:
            rec = mem.get(mid)
            assert rec.decay_rate == pytest.approx(math.log(2) / half_life, rel=1e-9)
            clock.advance(half_life)
            assert mem.get(mid).activation == pytest.approx(rec.activation / 2, rel=1e-9)

        halves_in(POLICY.half_life("event"))  # computed, and cached, before adapting
        mem.maintain()
        adapted = mem.stats()["categories"]["event"]
        assert adapted["half_life"] != POLICY.half_life("event")
        halves_in(adapted["half_life"])
        switched = POLICY.replace(half_lives={**POLICY.half_lives, "event": 3 * DAY})
        mem.set_policy(switched)
        halves_in(3 * DAY * adapted["half_life_multiplier"])


def _open(path: Path, clock: ManualClock, policy: Policy | None = None) -> Oblivion:
    """A store on disk (``policy=None``: the policy it was written with)."""
    return Oblivion(
        path, policy=policy, clock=clock, embedder=HashEmbedder(), token_counter=word_count
    )


@pytest.mark.integration
def test_rebased_activations_persist_across_reopen(tmp_path: Path) -> None:
    """An adaptation, then a policy switch, each fold elapsed decay into the stored
    activation of the rows they rebase: after reopening, every memory decays on from the
    same activation, at the new rate."""
    clock = ManualClock()
    mem = _open(tmp_path, clock, POLICY)
    ids = _archive_twenty_events(mem, clock)
    assert mem.maintain().adapted
    mem.set_policy(POLICY.replace(half_lives={**POLICY.half_lives, "event": 3 * DAY}))
    clock.advance(DAY)
    before = {m: mem.get(m).activation for m in ids}
    mem.close()
    mem = _open(tmp_path, clock)  # the store's own policy: the switched one
    try:
        assert {m: mem.get(m).activation for m in ids} == pytest.approx(before, rel=1e-9)
    finally:
        mem.close()


@pytest.mark.integration
def test_adapted_values_persist_across_reopen(tmp_path: Path) -> None:
    """Learned half-lives survive closing and reopening the store."""
    clock = ManualClock()
    mem = _open(tmp_path, clock, POLICY)
    _archive_twenty_events(mem, clock)
    mem.maintain()
    adapted = mem.stats()["categories"]["event"]
    mem.close()
    mem = _open(tmp_path, clock, POLICY)
    try:
        again = mem.stats()["categories"]["event"]
        assert again["half_life"] == pytest.approx(adapted["half_life"])
        assert again["half_life_multiplier"] == pytest.approx(adapted["half_life_multiplier"])
        assert again["half_life"] < POLICY.half_life("event")
    finally:
        mem.close()


def test_narrower_bounds_bind_what_was_learned_before(tmp_path: Path) -> None:
    """A policy set later with narrower ``adapt_bounds`` bounds the multipliers learned
    under the old ones at once, in decay, boosts and stats(), also after a reopen
    (they used to stay in force until the category adapted again); widened again, the
    learned value returns."""
    clock = ManualClock()
    mem = _open(tmp_path, clock, POLICY)
    try:
        _archive_twenty_events(mem, clock)
        mem.maintain()
        learned = mem.stats()["categories"]["event"]["half_life_multiplier"]
        assert learned < 1.0
        mem.set_policy(POLICY.replace(adapt_bounds=(1.0, 1.0)))
        event = mem.stats()["categories"]["event"]
        assert (event["half_life"], event["half_life_multiplier"]) == (
            POLICY.half_life("event"),
            1.0,
        )
    finally:
        mem.close()
    mem = _open(tmp_path, clock)
    try:
        assert mem.stats()["categories"]["event"]["half_life"] == POLICY.half_life("event")
        mem.set_policy(POLICY)
        assert mem.stats()["categories"]["event"]["half_life_multiplier"] == learned
    finally:
        mem.close()


@pytest.mark.integration
def test_a_store_reopened_with_other_half_lives_decays_on_from_where_it_was(
    tmp_path: Path,
) -> None:
    """Half-lives that change while the store is closed (a different policy passed when
    reopening) govern the future only: activations right after reopening are those the
    old half-lives give, and they then halve in the new half-life."""
    clock = ManualClock()
    mem = _open(tmp_path, clock, POLICY)
    rec = mem.remember("meetup with the design team", category="event", importance=0.0)
    clock.advance(2 * DAY)
    mem.close()
    clock.advance(3 * DAY)  # closed: still the old half-life
    old_rate = math.log(2) / POLICY.half_life("event")
    expected = rec.activation * math.exp(-old_rate * 5 * DAY)
    longer = POLICY.replace(half_lives={**POLICY.half_lives, "event": 40 * DAY})
    mem = _open(tmp_path, clock, longer)
    try:
        assert mem.get(rec.id).activation == pytest.approx(expected, rel=1e-9)
        clock.advance(40 * DAY)
        assert mem.get(rec.id).activation == pytest.approx(expected / 2, rel=1e-9)
    finally:
        mem.close()


def test_adapting_under_narrower_bounds_keeps_what_was_learned() -> None:
    """Under bounds that clamp a learned multiplier, a window that cannot move it was
    reported as an adaptation and wrote the clamped value over the learned one, so
    widening the bounds again did not bring it back."""
    usage = _usage(stored=4, recalled=6, used=6)
    usage.of("fact").beta_mult = 1.77
    narrow = POLICY.replace(adapt_bounds=(1.0, 1.0), adapt_min_events=2)
    assert adapt(usage, narrow) == {}
    assert usage.of("fact").beta_mult == 1.77
    wide = POLICY.replace(adapt_min_events=2)
    assert multipliers(usage.of("fact"), wide, "fact")[1] == 1.77
    usage.of("fact").recalled, usage.of("fact").used = 6, 0  # never used: beta falls
    assert adapt(usage, wide) == {
        "fact": {
            "half_life": POLICY.half_life("fact"),
            "beta": pytest.approx(POLICY.beta("fact") * 1.77 * 0.9),
        }
    }


def test_reinforce_counts_as_the_recall_it_stands_for(tmp_path: Path) -> None:
    """reinforce() gives a recall's boost, so adaptation counts it as one: recalls and
    archive hits (they stayed 0, so a caller that picks results itself never moved beta
    or a half-life), also after a reopen."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(
        adapt_min_events=5, maintain_every=0, active_share=None
    )

    def open_() -> Oblivion:
        return Oblivion(
            tmp_path, policy=policy, clock=clock, embedder=HashEmbedder(), token_counter=word_count
        )

    mem = open_()
    ids = [
        mem.remember(f"ticket {i} is about the printer on floor {i}", category="fact").id
        for i in range(6)
    ]
    clock.advance(60 * 86_400)
    mem.maintain()
    assert {mem.get(m).tier for m in ids} == {Tier.ARCHIVE}
    beta = mem.stats()["categories"]["fact"]["beta"]
    for m in ids:  # a filtered search picked each itself, and the answer used it
        mem.reinforce([m], relevances=[0.9])
        mem.mark_used([m])
    window = mem.stats()["categories"]["fact"]["window"]
    assert (window["recalled"], window["archive_hits"], window["used"]) == (6, 6, 6)
    mem.close()
    mem = open_()
    try:
        again = mem.stats()["categories"]["fact"]["window"]
        assert (again["recalled"], again["archive_hits"]) == (6, 6)
        assert "fact" in mem.maintain().adapted
        assert mem.stats()["categories"]["fact"]["beta"] > beta  # every recall was used
    finally:
        mem.close()


def test_only_what_a_query_asked_for_counts_as_a_recall(fresh: Any) -> None:
    """A hit's neighbouring turns and a standing instruction shown beside it counted as
    their categories' recalls, from the archive where they sat: a category never asked
    for (small talk between questions) had its half-life lengthened to the bound."""
    clock = ManualClock()
    policy = POLICY.replace(expand_neighbours=1, adjacency_window=60.0)
    with fresh(clock=clock, policy=policy) as mem:
        rule = mem.remember("Always answer in British English.", category="instruction").id
        clock.advance(DAY)
        before = mem.remember("Lovely weather today, isn't it?", category="small_talk").id
        clock.advance(10)
        hit = mem.remember("The invoice portal password rotates every 90 days.").id
        clock.advance(10)
        after = mem.remember("Ha, sounds good to me.", category="small_talk").id
        result = mem.recall("invoice portal password", k=4, standing="instruction")
        assert set(result.ids) == {rule, before, hit, after}
        assert mem.get(before).access_count == 1  # boosted as shown
        windows = {c: v["window"] for c, v in mem.stats()["categories"].items()}
        assert windows["fact"]["recalled"] == 1
        assert windows["small_talk"]["recalled"] == 0
        assert windows["instruction"]["recalled"] == 0
        # the same through reinforce(): an adapter boosting what its block showed
        mem.reinforce([before, after], asked=False)
        mem.reinforce([hit])
        windows = {c: v["window"] for c, v in mem.stats()["categories"].items()}
        assert (windows["small_talk"]["recalled"], windows["fact"]["recalled"]) == (0, 2)
        assert mem.get(before).access_count == 2
