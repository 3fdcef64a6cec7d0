"""A memory's life through the engine: confirm, invalidate, edit, forget, reading it back,
stats, and the journal that records every activation change."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import (
    InvalidInputError,
    ManualClock,
    MemoryRecord,
    Oblivion,
    Policy,
    Tier,
    UnknownMemoryError,
)

DAY = 86_400.0


def test_remember_returns_the_stored_record(mem: Oblivion, clock: ManualClock) -> None:
    """remember() returns the record as stored: text, category, importance, activation, tier."""
    clock.advance(100.0)
    rec = mem.remember(
        "The cat is called Miso",
        category="fact",
        importance=0.4,
        confidence=0.8,
        metadata={"from": "chat", "turn": 3},
        id="cat-name",
    )
    assert isinstance(rec, MemoryRecord)
    assert rec.id == "cat-name"
    assert (rec.text, rec.category, rec.namespace) == ("The cat is called Miso", "fact", "default")
    assert (rec.importance, rec.confidence) == (0.4, 0.8)
    assert rec.activation == pytest.approx(0.5 + 0.5 * 0.4)
    assert rec.tier == Tier.ACTIVE
    assert (rec.created_at, rec.last_accessed, rec.as_of) == (100.0, 100.0, 100.0)
    assert rec.metadata == {"from": "chat", "turn": 3}
    assert rec.access_count == 0
    assert not rec.invalidated
    assert mem.get("cat-name") == rec


def test_category_and_importance_are_inferred_when_omitted(mem: Oblivion) -> None:
    """Without category or importance, the importance scorer supplies both."""
    rec = mem.remember("Always answer in British English.")
    assert rec.category == "instruction"
    assert rec.importance >= 0.9


def test_custom_categories_decay_like_the_default(mem: Oblivion, clock: ManualClock) -> None:
    """A category the policy does not know decays at the default category's rate."""
    custom = mem.remember("sourdough needs 4 hours", category="recipes", importance=0.0)
    fact = mem.remember("sourdough needs 4 hours", category="fact", importance=0.0)
    assert custom.decay_rate == fact.decay_rate
    clock.advance(10 * DAY)
    assert mem.get(custom.id).activation == pytest.approx(mem.get(fact.id).activation)


def test_confirm_boosts_and_slows_decay(mem: Oblivion, clock: ManualClock) -> None:
    """confirm() adds confirm_boost and lowers the memory's decay rate."""
    rec = mem.remember("the gate code is 1234", category="fact", importance=0.0)
    clock.advance(30 * DAY)
    before = mem.get(rec.id)
    after_activation = mem.confirm(rec.id)
    after = mem.get(rec.id)
    assert after_activation == pytest.approx(before.activation + mem.policy.confirm_boost)
    assert after.activation == pytest.approx(after_activation)
    assert after.decay_rate < before.decay_rate
    sigma, u = mem.policy.stability_sigma, mem.policy.confirm_stability
    assert after.decay_rate == pytest.approx(before.decay_rate / (1 + sigma * u))
    assert after.access_count == before.access_count + 1
    event = mem.history(rec.id)[-1]
    assert (event.kind, event.before, event.after) == (
        "confirm",
        pytest.approx(before.activation),
        pytest.approx(after_activation),
    )


@pytest.mark.parametrize("use", ["confirm", "mark_used"])
def test_stability_adds_up_over_repeated_use(mem: Oblivion, clock: ManualClock, use: str) -> None:
    """Each confirm() adds confirm_stability, each mark_used() used_stability, to what
    slows the memory's decay: the rate after two uses is the base rate over
    1 + sigma * (2 * the use's stability). (A mutation setting stability instead of
    adding it, or giving mark_used the retrieval's stability, passed every test.)"""
    rec = mem.remember("the gate code is 1234", category="fact", importance=0.0)
    base = mem.get(rec.id).decay_rate
    for _ in range(2):
        clock.advance(DAY)
        mem.confirm(rec.id) if use == "confirm" else mem.mark_used([rec.id])
    policy = mem.policy
    u = policy.confirm_stability if use == "confirm" else policy.used_stability
    assert mem.get(rec.id).decay_rate == pytest.approx(base / (1 + policy.stability_sigma * 2 * u))


def test_confirmed_memory_outlasts_an_unconfirmed_twin(mem: Oblivion, clock: ManualClock) -> None:
    """Of two equally important event memories, the confirmed one is more active 60 days
    later."""
    a = mem.remember("parking is on level 3", category="event", importance=0.0)
    clock.advance(400.0)  # past the adjacency window: no link between the twins' writes
    b = mem.remember("parking spot is number 42", category="event", importance=0.0)
    mem.confirm(a.id)
    clock.advance(60 * DAY)
    assert mem.get(a.id).activation > mem.get(b.id).activation


def test_boosts_never_exceed_the_cap(mem: Oblivion) -> None:
    """However often a memory is confirmed and used, activation stays at or below cap."""
    rec = mem.remember("the wifi is called Basement", importance=1.0)
    for _ in range(5):
        mem.confirm(rec.id)
        mem.mark_used([rec.id])
        mem.recall("wifi Basement")
    assert mem.get(rec.id).activation <= mem.policy.cap


def test_invalidate_drops_activation_and_hides_from_recall(
    mem: Oblivion, clock: ManualClock
) -> None:
    """An invalidated memory has activation 0, leaves the active tier and is not recalled."""
    wrong = mem.remember("the meeting is in room 12", category="fact", importance=0.9)
    mem.remember("lunch is at noon in the canteen", category="fact")
    mem.invalidate(wrong.id, reason="room changed")
    rec = mem.get(wrong.id)
    assert rec.activation == 0.0
    assert rec.invalidated
    assert rec.tier == Tier.ARCHIVE
    assert wrong.id not in mem.recall("meeting room 12").ids
    assert wrong.id not in mem.recall("meeting room 12", deep=True).ids
    event = mem.history(wrong.id)[-1]
    assert (event.kind, event.after, event.detail) == (
        "invalidate",
        0.0,
        {"reason": "room changed"},
    )
    clock.advance(100 * DAY)
    assert mem.get(wrong.id).activation == 0.0  # its importance floor no longer applies


def test_invalidated_memory_is_kept_and_can_be_shown(mem: Oblivion) -> None:
    """Nothing is deleted: include_invalidated=True returns it, with its text intact."""
    wrong = mem.remember("the meeting is in room 12", category="fact")
    mem.invalidate(wrong.id)
    assert mem.count() == 1
    assert mem.store.count("default") == 1
    found = mem.recall("meeting room 12", include_invalidated=True, deep=True)
    assert found.ids == [wrong.id]
    assert found.texts == ["the meeting is in room 12"]


def test_maintenance_never_restores_an_invalidated_memory(
    mem: Oblivion, clock: ManualClock
) -> None:
    """Even boosted above the band, an invalidated memory stays out of the active tier."""
    wrong = mem.remember("the meeting is in room 12", category="fact")
    mem.invalidate(wrong.id)
    mem.confirm(wrong.id)
    mem.maintain()
    assert mem.get(wrong.id).tier == Tier.ARCHIVE


def test_with_forgetting_on_maintain_deletes_an_invalidated_memory_it_may_forget(
    fresh: Any,
) -> None:
    """invalidate() deletes nothing; with forgetting on, the next maintain() deletes the
    wrong memory as any below ``forget_below`` (its activation is 0), within the same
    protections: an important one stays, invalidated (the README and the docstring say
    so)."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(
        forget_enabled=True, forget_below=0.05, forget_min_age=DAY
    )
    with fresh(clock=clock, policy=policy) as mem:
        wrong = mem.remember("the meeting is in room 12", category="fact", importance=0.4)
        vital = mem.remember("my blood type is B negative", category="fact", importance=0.9)
        clock.advance(2 * DAY)
        mem.invalidate(wrong.id)
        mem.invalidate(vital.id)
        assert mem.count() == 2
        plan = mem.maintain()
        assert plan.forgotten == [wrong.id]
        with pytest.raises(UnknownMemoryError):
            mem.get(wrong.id)
        assert mem.recall("blood type", include_invalidated=True).ids == [vital.id]


def test_forget_deletes_for_good(mem: Oblivion) -> None:
    """forget() removes text, vector and state; the journal keeps the event."""
    rec = mem.remember("my old phone number is 555 0101", category="fact")
    keep = mem.remember("my new phone number is 555 0199", category="fact")
    mem.forget(rec.id)
    assert mem.count() == 1
    assert mem.store.count("default") == 1
    with pytest.raises(UnknownMemoryError):
        mem.get(rec.id)
    assert rec.id not in mem.recall("old phone number 0101", deep=True).ids
    assert [e.kind for e in mem.history(rec.id)][-1] == "forget"
    assert mem.get(keep.id).text == "my new phone number is 555 0199"


def test_forgotten_id_can_be_reused(mem: Oblivion) -> None:
    """After forget(), the same id can be remembered again."""
    mem.remember("first version", id="note")
    mem.forget("note")
    assert mem.remember("second version", id="note").text == "second version"


def test_edit_changes_text_and_re_embeds(mem: Oblivion, clock: ManualClock) -> None:
    """edit() replaces the text; recall finds the new words and no longer the old ones."""
    rec = mem.remember("the office is on Baker Street", category="fact")
    mem.remember("lunch is at noon in the canteen", category="fact")
    clock.advance(DAY)
    before = mem.get(rec.id).activation
    edited = mem.edit(rec.id, "the office moved to Harbour Road")
    assert edited.text == "the office moved to Harbour Road"
    assert edited.activation == pytest.approx(before)
    assert mem.history(rec.id)[-1].kind == "edit"
    assert mem.recall("Harbour Road", k=1).ids == [rec.id]
    old = mem.recall("Baker Street", k=2, feedback=False)
    assert rec.id not in old.ids or old[0].relevance < 0.5


def test_edit_metadata_only(mem: Oblivion) -> None:
    """edit(metadata=...) replaces metadata and leaves the text alone."""
    rec = mem.remember("the office is on Baker Street", metadata={"v": 1})
    edited = mem.edit(rec.id, metadata={"v": 2, "source": "hr"})
    assert edited.text == "the office is on Baker Street"
    assert mem.get(rec.id).metadata == {"v": 2, "source": "hr"}


def test_remember_many_is_all_or_nothing(mem: Oblivion, snapshot: Any) -> None:
    """One invalid item in remember_many() stores none of the batch."""
    mem.remember("already here")
    before = snapshot(mem)
    with pytest.raises(InvalidInputError, match="importance"):
        mem.remember_many(["fine text", "also fine"], importances=[0.5, 2.0])
    with pytest.raises(InvalidInputError, match=r"texts\[1\]"):
        mem.remember_many(["fine text", "   "])
    assert snapshot(mem) == before


def test_remember_many_empty_is_a_no_op(mem: Oblivion) -> None:
    """An empty batch stores nothing and returns an empty list."""
    assert mem.remember_many([]) == []


def test_records_are_oldest_first_and_filter_by_tier(mem: Oblivion, clock: ManualClock) -> None:
    """records() lists every memory oldest first, optionally of one tier."""
    a = mem.remember("ok", category="small_talk", importance=0.0)
    clock.advance(1.0)
    b = mem.remember("Always be concise", category="instruction")
    clock.advance(5 * DAY)
    mem.maintain()
    assert [r.id for r in mem.records()] == [a.id, b.id]
    assert [r.id for r in mem.records(tier=Tier.ARCHIVE)] == [a.id]
    assert [r.id for r in mem.records(tier=Tier.ACTIVE)] == [b.id]


@settings(max_examples=30, deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.sampled_from(["small_talk", "fact", "instruction"]), st.floats(0, 3 * DAY)),
        min_size=1,
        max_size=12,
    ),
    limit=st.one_of(st.none(), st.integers(1, 5)),
    offset=st.integers(0, 14),
)
def test_records_by_activation_are_a_sorted_page(
    fresh: Any, writes: list[tuple[str, float]], limit: int | None, offset: int
) -> None:
    """records(order="activation") lists the most active first and, among equally
    active ones, the latest written first; ``limit``/``offset`` cut a page of exactly
    that list (the same records as the oldest-first list holds)."""
    with fresh() as m:
        for k, (category, wait) in enumerate(writes):
            m.remember(f"note number {k}", category=category, importance=0.5)
            m.clock.advance(wait)
        written = m.records()
        seq = {r.id: k for k, r in enumerate(written)}
        full = m.records(order="activation")
        assert sorted(r.id for r in full) == sorted(seq)
        keys = [(-r.activation, -seq[r.id]) for r in full]
        assert keys == sorted(keys)
        page = m.records(order="activation", limit=limit, offset=offset)
        end = None if limit is None else offset + limit
        assert [r.id for r in page] == [r.id for r in full][offset:end]
        assert [r.id for r in m.records(limit=limit, offset=offset)] == [r.id for r in written][
            offset:end
        ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"order": "newest"}, "order must be 'written'"),
        ({"limit": 0}, "limit must be an int >= 1"),
        ({"limit": 2.5}, "limit must be an int >= 1"),
        ({"offset": -1}, "offset must be an int >= 0"),
        ({"offset": True}, "offset must be an int >= 0"),
    ],
)
def test_records_refuses_a_bad_order_or_page(
    mem: Oblivion, kwargs: dict[str, Any], message: str
) -> None:
    """A bad ``order``, ``limit`` or ``offset`` is refused with what to pass instead."""
    mem.remember("The office is in Leeds")
    with pytest.raises(InvalidInputError, match=message):
        mem.records(**kwargs)


def test_stats_show_tiers_and_per_category_parameters(mem: Oblivion, clock: ManualClock) -> None:
    """stats() reports tier sizes and each category's half-life and beta."""
    mem.remember("ok", category="small_talk", importance=0.0)
    mem.remember("Always be concise", category="instruction")
    mem.remember("the gate code is 1234", category="fact")
    clock.advance(5 * DAY)
    mem.maintain()
    stats = mem.stats()
    assert (stats["memories"], stats["active"], stats["archive"]) == (3, 2, 1)
    assert stats["clock"] == "wall"
    assert stats["policy"] == "balanced"
    assert stats["thresholds"] == {"archive_low": 0.25, "archive_high": 0.4}
    cats = stats["categories"]
    assert set(cats) == {"small_talk", "instruction", "fact"}
    for name in cats:
        assert cats[name]["half_life"] == pytest.approx(mem.policy.half_life(name))
        assert cats[name]["beta"] == pytest.approx(mem.policy.beta(name))
    assert cats["small_talk"]["active"] == 0
    assert cats["instruction"]["count"] == 1


def test_closed_engine_refuses_work(mem: Oblivion) -> None:
    """After close(), every operation raises InvalidInputError saying it is closed."""
    rec = mem.remember("the cat is called Miso")
    mem.close()
    for call in (
        lambda: mem.remember("more"),
        lambda: mem.recall("cat"),
        lambda: mem.get(rec.id),
        lambda: mem.maintain(),
        lambda: mem.mark_used([rec.id]),
    ):
        with pytest.raises(InvalidInputError, match="closed"):
            call()


def test_automatic_maintenance_after_many_writes(fresh: Any) -> None:
    """With maintain_every=N, maintenance runs by itself after N writes."""
    clock = ManualClock()
    with fresh(clock=clock, policy=Policy().replace(maintain_every=5)) as mem:
        chat = mem.remember("ok", category="small_talk", importance=0.0)
        clock.advance(5 * DAY)
        mem.remember_many([f"fact number {i}" for i in range(3)])
        assert mem.get(chat.id).tier == Tier.ACTIVE
        mem.remember("one more fact")
        assert mem.get(chat.id).tier == Tier.ARCHIVE


# ---------------------------------------------------------------- the journal

OPS = ["recall", "used", "confirm", "wait", "maintain"]


@settings(max_examples=25)
@given(ops=st.lists(st.tuples(st.sampled_from(OPS), st.floats(0, 20 * DAY)), max_size=15))
def test_history_records_every_activation_change(fresh: Any, ops: list[tuple[str, float]]) -> None:
    """Every operation that changes a memory's activation appends a journal event whose
    before/after are the activation just before and just after it."""
    clock = ManualClock()
    with fresh(clock=clock, policy=Policy().replace(adapt=False, maintain_every=0)) as mem:
        rec = mem.remember("the blue bicycle is in the garage", category="event", importance=0.2)
        for op, wait in ops:
            clock.advance(wait)
            before = mem.get(rec.id).activation
            n_events = len(mem.history(rec.id))
            if op == "recall":
                mem.recall("blue bicycle garage", deep=True)
            elif op == "used":
                mem.mark_used([rec.id])
            elif op == "confirm":
                mem.confirm(rec.id)
            elif op == "maintain":
                mem.maintain()
            after = mem.get(rec.id).activation
            events = mem.history(rec.id)[n_events:]
            changes = [
                e
                for e in events
                if e.before is not None and e.after != pytest.approx(e.before, abs=1e-12)
            ]
            if after != pytest.approx(before, abs=1e-12):
                assert len(changes) == 1, (op, events)
                assert changes[0].before == pytest.approx(before)
                assert changes[0].after == pytest.approx(after)
            else:
                assert changes == []
        kinds = [e.kind for e in mem.history(rec.id)]
        assert kinds[0] == "remember"
        expected = [op for op, _ in ops if op in ("recall", "used", "confirm")]
        assert [k for k in kinds if k in ("recall", "used", "confirm")] == expected


def test_history_of_the_namespace_lists_all_memories(mem: Oblivion) -> None:
    """history() without an id returns the events of every memory in the namespace."""
    a = mem.remember("first note about apples")
    b = mem.remember("second note about pears")
    events = mem.history()
    assert [(e.memory_id, e.kind) for e in events if e.kind == "remember"] == [
        (a.id, "remember"),
        (b.id, "remember"),
    ]
    assert events == sorted(events, key=lambda e: e.seq)


@pytest.mark.parametrize("last", [1, 2, 3, 50])
def test_history_last_is_the_newest_entries_oldest_first(mem: Oblivion, last: int) -> None:
    """history(last=n) is the last n entries of the full journal, of the namespace or of
    one memory, in the same order."""
    a = mem.remember("first note about apples")
    mem.remember("second note about pears")
    mem.recall("apples")
    mem.confirm(a.id)
    assert mem.history(last=last) == mem.history()[-last:]
    assert mem.history(a.id, last=last) == mem.history(a.id)[-last:]
