"""Recall through the engine: ranking, explanations, feedback boosts, archive gating and
token budgets (in-memory engine: ManualClock, HashEmbedder, word-count tokens)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import (
    InvalidInputError,
    ManualClock,
    Oblivion,
    Policy,
    RecallResult,
    Tier,
    UnknownMemoryError,
)
from oblivion_core.testing import HashEmbedder, memory, word_count

DAY = 86_400.0
QUIET = Policy.template("balanced").replace(maintain_every=0, adapt=False)

FACTS = [
    "My favourite colour is green",
    "The dentist appointment is on Tuesday at nine",
    "Our wifi password is stored in the blue notebook",
    "The cat is called Miso and likes tuna",
    "Always answer in British English",
    "The car needs new winter tyres before December",
]


def _why_terms(why: Any) -> set[str]:
    return set(why)


def test_remember_then_recall_round_trip(mem: Oblivion) -> None:
    """A remembered text is recalled first by a query sharing its words, with its metadata."""
    rec = mem.remember("My favourite colour is green", metadata={"source": "chat"})
    mem.remember("The train leaves at noon")
    result = mem.recall("favourite colour")
    assert isinstance(result, RecallResult)
    assert result.ids[0] == rec.id
    assert result.texts[0] == "My favourite colour is green"
    assert result[0].metadata == {"source": "chat"}
    assert result[0].namespace == "default"


def test_recall_explains_every_term(mem: Oblivion) -> None:
    """Each item's `why` holds every score term, the weights, the tier and a sentence."""
    mem.remember_many(FACTS)
    result = mem.recall("what colour do I like", k=3)
    policy = mem.policy
    best = max(item.relevance for item in result)  # fresh facts: the most relevant is shown
    for rank, item in enumerate(result, start=1):
        why = item.why
        expected = {
            "rank",
            "candidates",
            "score",
            "relevance",
            "activation",
            "importance",
            "contributions",
            "weights",
            "tier",
            "category",
            "archive_searched_because",
            "boost",
            "explanation",
        }
        assert expected <= set(why)
        assert why["rank"] == rank
        assert why["score"] == pytest.approx(item.score)
        assert sum(why["contributions"].values()) == pytest.approx(item.score)
        assert why["contributions"]["relevance"] == pytest.approx(
            policy.w_relevance * max(item.relevance, 0.0)
        )
        share = why["activation_share"]
        assert share == pytest.approx((max(item.relevance, 0.0) / best) ** policy.activation_focus)
        assert why["contributions"]["activation"] == pytest.approx(
            share * policy.w_activation * item.activation
        )
        assert why["contributions"]["importance"] == pytest.approx(
            share * policy.w_importance * item.importance
        )
        assert why["weights"]["importance"] == policy.w_importance
        assert why["tier"] == "active"
        assert why["category"] == item.category
        assert f"ranked {rank} of {why['candidates']}" in why["explanation"]
        assert item.category in why["explanation"]


def test_a_printed_result_reads_as_its_ranking(mem: Oblivion) -> None:
    """``print(result)`` gives what was asked and found, then each item's rank, score,
    tier, category and text (on one line, long ones shortened) with its explanation."""
    mem.remember_many(FACTS)
    long = mem.remember("colour notes:\n" + "green and blue " * 20, category="fact")
    result = mem.recall("what colour do I like", k=3, token_budget=500, deep=True)
    lines = str(result).splitlines()
    assert lines[0] == (
        f"recall 'what colour do I like' in 'default': 3 item(s) from {result.candidates} "
        f"candidate(s), {result.total_tokens} of 500 tokens, archive searched: deep=True"
    )
    assert len(lines) == 1 + 2 * len(result)
    for rank, item in enumerate(result, 1):
        line, explained = lines[2 * rank - 1], lines[2 * rank]
        assert line == f"{rank:>3}. {item}"
        assert line.startswith(f"{rank:>3}. {item.score:.3f} active  {item.category}: ")
        assert explained.strip() == item.why["explanation"]
    (hit,) = mem.recall("colour notes green and blue", k=1)
    assert hit.id == long.id
    shown = str(hit).split(": ", 1)[1]  # the text, on one line and cut to 100 characters
    assert shown == ("colour notes: " + "green and blue " * 20)[:99] + "…"
    unbudgeted = str(mem.recall("colour", deep=False)).splitlines()[0]
    assert unbudgeted.endswith(" tokens, active tier only") and " of " not in unbudgeted


def test_items_are_ranked_by_score(mem: Oblivion) -> None:
    """Hits come back best score first; neighbour context follows the hit it belongs to."""
    mem.remember_many(FACTS)
    result = mem.recall("blue notebook wifi password", k=6)
    scores = [it.score for it in result if "context_for" not in it.why]
    assert scores == sorted(scores, reverse=True)
    for k, item in enumerate(result):
        if "context_for" in item.why:
            assert item.why["context_for"] in result.ids[:k]


def test_recall_boosts_what_it_returns(mem: Oblivion, clock: ManualClock) -> None:
    """A recall raises each returned memory's activation and journals before/after."""
    recs = mem.remember_many(FACTS, importances=[0.0] * len(FACTS))
    clock.advance(30 * DAY)
    before = {r.id: r.activation for r in mem.records()}
    result = mem.recall("cat Miso tuna", k=2)
    assert len(result) == 2
    for item in result:
        assert item.activation == pytest.approx(before[item.id])
        boost = item.why["boost"]
        assert boost["before"] == pytest.approx(item.activation)
        if "context_for" in item.why:  # neighbour context: boosted by its own relevance only
            assert boost["after"] >= boost["before"]
        else:
            assert boost["after"] > boost["before"]
        assert mem.get(item.id).activation == pytest.approx(boost["after"])
        event = mem.history(item.id)[-1]
        assert event.kind == "recall"
        assert (event.before, event.after) == (
            pytest.approx(boost["before"]),
            pytest.approx(boost["after"]),
        )
    # the others change only through journaled spreading along their links
    for r in recs:
        if r.id in result.ids:
            continue
        now = mem.get(r.id).activation
        events = mem.history(r.id)
        if now == pytest.approx(before[r.id]):
            assert [e.kind for e in events] == ["remember"]
        else:
            assert [e.kind for e in events] == ["remember", "spread"]
            assert events[-1].before == pytest.approx(before[r.id])
            assert events[-1].after == pytest.approx(now)


def test_recall_boost_follows_the_formula(mem: Oblivion, clock: ManualClock) -> None:
    """A recall adds beta * relevance * confidence to an active memory's activation."""
    rec = mem.remember("The cat is called Miso", category="fact", importance=0.0, confidence=0.5)
    clock.advance(40 * DAY)
    item = mem.recall("cat Miso")[0]
    expected = mem.policy.beta("fact") * item.relevance * 0.5
    assert item.why["boost"]["after"] - item.why["boost"]["before"] == pytest.approx(expected)
    assert item.why["boost"]["gain"] == 1.0
    assert mem.get(rec.id).access_count == 1


def test_feedback_false_only_reads(mem: Oblivion, clock: ManualClock, snapshot: Any) -> None:
    """recall(feedback=False) changes no activation and journals nothing."""
    mem.remember_many(FACTS)
    clock.advance(DAY)
    before = snapshot(mem)
    result = mem.recall("cat Miso", feedback=False)
    assert len(result) > 0
    assert all(it.why["boost"] is None for it in result)
    assert snapshot(mem) == before


def test_mark_used_gives_a_bigger_boost_than_recall(mem: Oblivion, clock: ManualClock) -> None:
    """After a recall, mark_used adds used_gain times the recall's boost."""
    rec = mem.remember("The cat is called Miso", category="fact", importance=0.0)
    clock.advance(60 * DAY)
    item = mem.recall("cat Miso")[0]
    recall_delta = item.why["boost"]["after"] - item.why["boost"]["before"]
    clock.advance(60 * DAY)
    before = mem.get(rec.id).activation
    [after] = mem.mark_used([rec.id])
    used_delta = after - before
    assert used_delta > recall_delta
    assert used_delta == pytest.approx(mem.policy.used_gain * recall_delta)
    event = mem.history(rec.id)[-1]
    assert event.kind == "used"
    assert (event.before, event.after) == (pytest.approx(before), pytest.approx(after))


def test_mark_used_without_a_recall_uses_full_relevance(mem: Oblivion, clock: ManualClock) -> None:
    """A memory never recalled gets beta * 1.0 * confidence * used_gain when marked used."""
    rec = mem.remember("The cat is called Miso", category="fact", importance=0.0)
    clock.advance(60 * DAY)
    before = mem.get(rec.id).activation
    [after] = mem.mark_used(rec.id)
    assert after - before == pytest.approx(mem.policy.beta("fact") * mem.policy.used_gain)


def test_mark_used_can_skip_memories_forgotten_since(mem: Oblivion) -> None:
    """By default one unknown id refuses the whole call and boosts nothing;
    ``skip_missing=True`` boosts the ids still stored, as one call with only them would,
    and a namespace gone altogether boosts nothing."""
    kept = mem.remember("The cat is called Miso", category="fact", importance=0.0).id
    gone = mem.remember("The dog is called Rex", category="fact", importance=0.0).id
    mem.forget(gone)
    before = mem.get(kept).activation
    with pytest.raises(UnknownMemoryError):
        mem.mark_used([gone, kept])
    assert mem.get(kept).activation == before
    [after] = mem.mark_used([gone, kept], skip_missing=True)
    assert after == mem.get(kept).activation > before
    assert [e.kind for e in mem.history(kept)][-1] == "used"
    assert mem.mark_used([gone], skip_missing=True) == []
    assert mem.mark_used([kept], namespace="nowhere", skip_missing=True) == []
    with pytest.raises(InvalidInputError, match="skip_missing"):
        mem.mark_used([kept], skip_missing="yes")  # type: ignore[arg-type]


def test_activation_breaks_relevance_ties(mem: Oblivion) -> None:
    """Of two equally relevant memories, the more activated one ranks first (texts that
    state no fact: a restated fact would supersede its older copy)."""
    a = mem.remember("spare key under the mat", importance=0.0)
    b = mem.remember("spare key under the mat", importance=0.0)
    mem.confirm(a.id)
    assert mem.recall("spare key", k=2).ids == [a.id, b.id]


def test_newer_memory_wins_an_exact_tie(mem: Oblivion) -> None:
    """With equal relevance, activation and importance, the newer memory ranks first."""
    old = mem.remember("meeting room B12", importance=0.3)
    new = mem.remember("meeting room B12", importance=0.3)
    assert mem.recall("meeting room", k=2, feedback=False).ids == [new.id, old.id]


@pytest.mark.parametrize("reopen", [False, True])
def test_newer_copy_wins_wherever_the_copies_sit_in_the_index(tmp_path: Path, reopen: bool) -> None:
    """Copies of one text tie exactly, so the newer ranks first, however maintain() and
    confirm() moved them around the active index, and the same after a reopen (the
    product's rounding depends on a memory's column: they used to differ by 1e-8)."""
    drink, colour, dog = (
        "My favourite drink is tea.",
        "My favourite colour is blue.",
        "I walk the dog every morning.",
    )

    def open_() -> Oblivion:
        return Oblivion(
            tmp_path, clock=ManualClock(), embedder=HashEmbedder(), token_counter=word_count
        )

    mem = open_()
    mem.remember_many([drink, drink, drink, colour, dog], ids=["m1", "m2", "m3", "m4", "m5"])
    mem.remember_many([drink, dog], ids=["m6", "m7"])
    mem.confirm("m1")
    mem.maintain()
    if reopen:
        mem.close()
        mem = open_()
    try:
        result = mem.recall("dog walk morning", k=2, feedback=False)
        assert result.ids == ["m7", "m5"]
        assert result[0].relevance == result[1].relevance
        assert result[0].score == result[1].score
    finally:
        mem.close()


def test_a_restated_fact_supersedes_its_older_copy(mem: Oblivion) -> None:
    """The same fact stated twice: the newer statement is the one recalled, the older is
    kept and shown with ``include_superseded``."""
    old = mem.remember("the meeting room is B12", importance=0.3)
    new = mem.remember("the meeting room is B12", importance=0.3)
    assert mem.get(old.id).superseded_by == new.id
    assert mem.recall("meeting room", k=2, feedback=False).ids == [new.id]
    shown = mem.recall("meeting room", k=2, feedback=False, include_superseded=True)
    assert shown.ids == [new.id, old.id]


def test_relevance_dominates_activation(mem: Oblivion, clock: ManualClock) -> None:
    """A relevant but faded memory still beats an irrelevant, fully active one."""
    faded = mem.remember("the boiler service is due in March", category="fact", importance=0.0)
    clock.advance(200 * DAY)
    mem.remember("Always answer in British English", importance=1.0)
    assert mem.recall("boiler service due", k=1, deep=True).ids == [faded.id]


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_k_is_respected(mem: Oblivion, k: int) -> None:
    """recall(k=...) returns at most k items."""
    mem.remember_many(FACTS)
    assert len(mem.recall("the", k=k)) <= k
    assert len(mem.recall("cat tuna colour wifi dentist tyres english", k=k)) == k


def test_default_k_comes_from_the_policy(fresh: Any) -> None:
    """Without k, at most policy.default_k items are returned."""
    with fresh(policy=QUIET.replace(default_k=2)) as mem:
        mem.remember_many(FACTS)
        assert len(mem.recall("cat tuna colour wifi dentist tyres english")) == 2


VOCAB = ["red", "blue", "cat", "dog", "key", "tea", "car", "sun", "moon", "rain"]


@settings(max_examples=30)
@given(
    texts=st.lists(
        st.lists(
            st.sampled_from(VOCAB),
            min_size=1,
            max_size=30,
        ).map(" ".join),
        min_size=1,
        max_size=15,
    ),
    queries=st.lists(
        st.sampled_from(VOCAB),
        min_size=1,
        max_size=5,
    ),
    budget=st.integers(0, 120),
    k=st.none() | st.integers(1, 10),
)
def test_token_budget_is_never_exceeded(
    fresh: Any, texts: list[str], queries: list[str], budget: int, k: int | None
) -> None:
    """Across random memories and queries, packed items never cost more than the budget."""
    with fresh(policy=QUIET) as mem:
        mem.remember_many(texts)
        for q in queries:
            result = mem.recall(q, token_budget=budget, k=k)
            cost = sum(word_count(it.text) + mem.policy.per_item_tokens for it in result)
            assert cost == result.total_tokens <= budget
            assert all(it.tokens == word_count(it.text) for it in result)
            assert len(result) <= (k if k is not None else mem.policy.default_k)
            assert result.token_budget == budget


def test_budget_skips_a_big_item_for_smaller_ones(mem: Oblivion) -> None:
    """A top item too big for the budget is skipped; smaller, lower-ranked ones still fit."""
    big = mem.remember("zebra " * 50 + "facts about zebras")
    small = mem.remember("zebra stripes")
    result = mem.recall("zebra", token_budget=20)
    assert big.id not in result.ids
    assert small.id in result.ids


def test_zero_budget_returns_nothing(mem: Oblivion) -> None:
    """A budget of 0 tokens returns no items (each item costs at least its overhead)."""
    mem.remember_many(FACTS)
    assert len(mem.recall("cat", token_budget=0)) == 0


def test_render_fits_the_budget_as_a_whole(mem: Oblivion) -> None:
    """RecallResult.render() output, header included, fits the budget it is given."""
    mem.remember_many(FACTS)
    result = mem.recall("cat colour wifi", k=6)
    for budget in (0, 5, 12, 30, 100):
        block = result.render(word_count, budget=budget, header="Known facts:")
        assert word_count(block) <= budget


def test_empty_namespace_recalls_nothing(mem: Oblivion) -> None:
    """Recalling from the (always existing) default namespace before any write is empty."""
    result = mem.recall("anything at all")
    assert len(result) == 0
    assert result.total_tokens == 0


# ---------------------------------------------------------------- the archive


@pytest.fixture(params=["exact in memory", "chroma query"])
def archived(
    mem: Oblivion,
    clock: ManualClock,
    request: pytest.FixtureRequest,
    chroma_queries: Callable[[Oblivion], list[int]],
) -> Iterator[tuple[Oblivion, str]]:
    """An engine whose small-talk memory about Lisbon is archived, beside active rules;
    its archive is searched either way recall can search one (the in-memory copy of a
    small namespace, or Chroma), and each test checks that this way was taken."""
    chroma = request.param == "chroma query"
    if chroma:
        mem.EXACT_ARCHIVE_ROWS = 0
        mem.SKETCH_ARCHIVE_ROWS = 0
    queries = chroma_queries(mem)
    chat = mem.remember("lovely sunny weather in Lisbon", category="small_talk", importance=0.0)
    mem.remember_many(
        ["Always reply politely and briefly", "Never reveal internal ticket numbers"],
        categories=["instruction", "instruction"],
    )
    clock.advance(5 * DAY)
    assert mem.maintain().archived == [chat.id]
    yield mem, chat.id
    if chroma:
        assert mem._spaces[mem.default_namespace].archive is None
    else:
        assert queries == []  # every archive search was answered in memory


def test_deep_recall_finds_archived_memories(archived: tuple[Oblivion, str]) -> None:
    """deep=True searches the archive and says so."""
    mem, chat = archived
    result = mem.recall("sunny weather Lisbon", deep=True)
    assert result.ids[0] == chat
    assert result[0].tier == Tier.ARCHIVE
    assert result.searched_archive
    assert result.archive_reason == "deep=True"
    assert "archive searched because deep=True" in result[0].why["explanation"]


def test_the_gate_reason_names_the_cosine_it_compared(archived: tuple[Oblivion, str]) -> None:
    """The gate compares the best active cosine; the reason called it "relevance", and an
    item's fused relevance (0.671) then read above the "best active relevance" (0.529)
    of the same sentence."""
    mem, _ = archived
    mem.set_policy(mem.policy.replace(archive_gate=0.99))
    query = "sunny weather Lisbon"
    best = float(mem._spaces["default"].index.scores(mem.embedder.embed_query(query)).max())
    result = mem.recall(query, k=1, deep=None)
    assert result.archive_reason == f"best active cosine {best:.3f} < gate 0.990"


def test_deep_false_never_returns_archived_memories(archived: tuple[Oblivion, str]) -> None:
    """deep=False searches only the active tier, even when an archived text matches."""
    mem, chat = archived
    result = mem.recall("sunny weather Lisbon", deep=False)
    assert chat not in result.ids
    assert all(it.tier == Tier.ACTIVE for it in result)


def test_deep_false_ranks_the_active_tier_by_bm25(mem: Oblivion, clock: ManualClock) -> None:
    """deep=False gives an active memory its BM25 score even when more than
    candidate_pool archived memories match the query's words better: BM25 ranks the
    active tier's memories among themselves. (It used to keep the active ones among the
    best of all memories: at 100k memories, one of the 50 in the median query.)"""
    n = mem.policy.candidate_pool + 10
    texts = [f"zebra zebra zebra, said visitor {i}" for i in range(n)]
    texts += [f"the visitor count was {i}" for i in range(3 * n)]  # zebra's idf > 0
    chatter = mem.remember_many(
        texts, categories=["small_talk"] * len(texts), importances=[0.0] * len(texts)
    )
    clock.advance(5 * DAY)
    mem.maintain()
    assert all(mem.get(r.id).tier == Tier.ARCHIVE for r in chatter)
    keeper = mem.remember(
        "Feed the zebra hay at noon, then check the water trough and the fence",
        category="instruction",
    )
    mem.remember("Always reply politely and briefly", category="instruction")
    item = next(it for it in mem.recall("zebra", deep=False) if it.id == keeper.id)
    assert item.why["relevance_signals"]["lexical"] > 0.1
    # searched with the archive, the zebra chatter outranks it
    deep = mem.recall("zebra", deep=True, k=n)
    assert keeper.id not in deep.ids
    assert all(it.why["relevance_signals"]["lexical"] > 0.1 for it in deep)


def test_gate_opens_when_the_active_tier_is_not_confident(archived: tuple[Oblivion, str]) -> None:
    """With enough active memories but none relevant, the gate searches the archive."""
    mem, chat = archived
    result = mem.recall("sunny weather Lisbon", k=1)
    assert result.searched_archive
    assert "gate" in (result.archive_reason or "")
    assert result.ids == [chat]


def test_gate_opens_when_too_few_active_memories(archived: tuple[Oblivion, str]) -> None:
    """With fewer active memories than k, the archive is searched too."""
    mem, _ = archived
    result = mem.recall("politely", k=5)
    assert result.searched_archive
    assert "only 2 active memories" in (result.archive_reason or "")


def test_gate_stays_closed_when_the_active_tier_is_confident(
    archived: tuple[Oblivion, str],
) -> None:
    """A confident active hit with enough active memories leaves the archive alone."""
    mem, chat = archived
    result = mem.recall("Always reply politely and briefly", k=1)
    assert not result.searched_archive
    assert result.archive_reason is None
    assert chat not in result.ids


def test_archive_hits_get_the_archive_gain(archived: tuple[Oblivion, str]) -> None:
    """A memory recalled from the archive is boosted with gain archive_gain (2)."""
    mem, chat = archived
    item = mem.recall("sunny weather Lisbon", deep=True, k=1)[0]
    assert item.id == chat
    boost = item.why["boost"]
    assert boost["gain"] == mem.policy.archive_gain == 2.0
    expected = mem.policy.beta("small_talk") * item.relevance * mem.policy.archive_gain
    assert boost["after"] - boost["before"] == pytest.approx(expected)


def test_repeated_archive_hits_promote_back(archived: tuple[Oblivion, str]) -> None:
    """Recalled from the archive often enough, a memory is promoted back to the active tier."""
    mem, chat = archived
    for _ in range(10):
        item = mem.recall("sunny weather Lisbon", deep=True, k=1)[0]
        if item.why["boost"].get("promoted"):
            break
    else:
        pytest.fail("never promoted after 10 archive hits")
    assert item.why["boost"]["after"] > mem.policy.archive_high
    assert mem.get(chat).tier == Tier.ACTIVE
    restore = [e for e in mem.history(chat) if e.kind == "restore"]
    assert len(restore) == 1
    assert restore[0].detail["reason"] == "recalled from the archive"
    again = mem.recall("sunny weather Lisbon", deep=False, k=1)
    assert again.ids == [chat]
    assert again[0].tier == Tier.ACTIVE


def test_confirm_promotes_an_archived_memory(archived: tuple[Oblivion, str]) -> None:
    """confirm() lifts an archived memory above the band, which restores it."""
    mem, chat = archived
    mem.confirm(chat)
    assert mem.get(chat).tier == Tier.ACTIVE


# ---------------------------------------------------------------- rerank


def test_rerank_orders_external_candidates_by_the_same_score(mem: Oblivion) -> None:
    """rerank() scores candidates retrieved elsewhere and returns them best first."""
    recs = mem.remember_many(FACTS)
    result = mem.rerank("cat", [(recs[0].id, 0.1), (recs[3].id, 0.9), (recs[1].id, None)])
    assert result.ids[0] == recs[3].id
    assert set(result.ids) == {recs[0].id, recs[3].id, recs[1].id}


def test_rerank_with_unknown_id_boosts_nothing(mem: Oblivion, snapshot: Any) -> None:
    """An unknown id in rerank() raises UnknownMemoryError before any boost."""
    from oblivion_core import UnknownMemoryError

    recs = mem.remember_many(FACTS)
    before = snapshot(mem)
    with pytest.raises(UnknownMemoryError, match="no memory 'ghost'"):
        mem.rerank("cat", [(recs[0].id, 0.5), ("ghost", 0.5)])
    assert snapshot(mem) == before


def test_tokens_are_counted_once_when_a_memory_is_written() -> None:
    """The token counter runs at write time, once per text; recall reuses the count."""
    from oblivion_core.testing import memory

    calls: list[str] = []

    def counter(text: str) -> int:
        calls.append(text)
        return len(text.split())

    mem = memory(token_counter=counter)
    mem.remember_many(["the launch moved to friday", "lunch is at noon today"])
    assert sorted(calls) == ["lunch is at noon today", "the launch moved to friday"]
    res = mem.recall("when is the launch", token_budget=1000, k=2)
    assert len(calls) == 2  # nothing counted again
    assert {it.text: it.tokens for it in res} == {
        "the launch moved to friday": 5,
        "lunch is at noon today": 5,
    }


def test_writes_and_the_recall_after_them_read_nothing_back(
    fresh: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What remember() writes goes into the text cache as it is committed: the records
    it returns and a recall right after show texts and metadata without reading SQLite,
    and each item gets its own metadata dict. (Supersession detection is off: it reads
    older texts.)"""
    with fresh(policy=Policy.template("balanced").replace(supersede=False)) as mem:
        reads: list[Any] = []
        original = mem._db._by_ids

        def spy(*args: Any, **kwargs: Any) -> Any:
            reads.append(args)
            return original(*args, **kwargs)

        monkeypatch.setattr(mem._db, "_by_ids", spy)
        recs = mem.remember_many(
            FACTS, metadatas=[{"n": i, "tags": ["x"]} for i in range(len(FACTS))]
        )
        assert [r.metadata for r in recs] == [{"n": i, "tags": ["x"]} for i in range(len(FACTS))]
        res = mem.recall("what is the cat called", k=3)
        assert reads == []
        by_id = {r.id: i for i, r in enumerate(recs)}
        assert res[0].text == "The cat is called Miso and likes tuna"
        for item in res:
            assert item.text == FACTS[by_id[item.id]]
            assert item.metadata == {"n": by_id[item.id], "tags": ["x"]}
        res[0].metadata["tags"].append("changed")
        again = mem.recall("what is the cat called", k=1, feedback=False)
        assert again[0].metadata == {"n": by_id[again[0].id], "tags": ["x"]}


def test_a_failing_token_counter_stores_nothing() -> None:
    """If the token counter raises while a memory is written, nothing of it is stored."""
    from oblivion_core.testing import memory

    def counter(text: str) -> int:
        if "boom" in text:
            raise ValueError("cannot count this")
        return 1

    mem = memory(token_counter=counter)
    mem.remember("kept memory")
    with pytest.raises(ValueError, match="cannot count"):
        mem.remember_many(["fine", "boom"])
    assert mem.count() == 1
    assert [it.text for it in mem.recall("memory fine boom", k=5)] == ["kept memory"]


@pytest.mark.parametrize("busy", [True, False])
def test_bm25_runs_beside_the_embedding_only_when_cores_are_free(busy: bool) -> None:
    """With an embedder that keeps every core busy, BM25 runs on the calling thread after
    the query embedding; otherwise on a worker during it. The result is the same."""
    import threading

    from oblivion_core.testing import HashEmbedder, memory

    class Embedder(HashEmbedder):
        busy_cores = busy

    texts = [
        "the quarterly budget review is on tuesday",
        "my sister lives in lisbon",
        "budget spreadsheet shared with finance",
        "we adopted a cat called miso",
    ]
    mem = memory(embedder=Embedder())
    plain = memory()
    for m in (mem, plain):
        m.remember_many(texts)
    threads: list[str] = []
    search = mem._lex.search

    def spy(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return search(*args)

    mem._lex.search = spy  # type: ignore[method-assign]
    got = mem.recall("budget review", k=3, feedback=False)
    want = plain.recall("budget review", k=3, feedback=False)
    assert got.texts == want.texts
    assert [it.score for it in got] == pytest.approx([it.score for it in want])
    assert len(threads) == 1
    assert (threads[0] == threading.current_thread().name) is busy


def test_recall_searches_bm25_in_line_when_no_worker_can_start() -> None:
    """Once the interpreter shuts down (its main thread ended while another thread still
    calls in) no worker can start: BM25 runs on the calling thread, same result."""
    from oblivion_core.testing import memory

    texts = ["the quarterly budget review is on tuesday", "we adopted a cat called miso"]
    mem, plain = memory(), memory()
    for m in (mem, plain):
        m.remember_many(texts)

    def refuse(*args: Any) -> Any:
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    mem._workers.submit = refuse  # type: ignore[method-assign]
    got = mem.recall("budget review", k=2, feedback=False)
    assert got.texts == plain.recall("budget review", k=2, feedback=False).texts
    assert got.items[0].why["relevance_signals"]["lexical"] > 0
    mem.close()
    with pytest.raises(InvalidInputError, match="closed"):
        mem.recall("budget review")


def _team_memories(mem: Oblivion, clock: ManualClock) -> tuple[str, str, str]:
    """An old team-size fact with a long, off-topic reply right after it (its neighbour),
    and a newer team-size fact a week later. Returns (old fact, its reply, new fact)."""
    old = mem.remember("How many people are on the team? Seven people are on the team.")
    reply = mem.remember(
        "Thanks, noted, I will keep that in mind when we plan the quarterly offsite dinner "
        "and book the restaurant tables for everyone"
    )
    clock.advance(7 * DAY)
    new = mem.remember("People on the team: nine people from next week.")
    clock.advance(DAY)  # a third hit, so the reply is not a top hit of its own
    mem.remember("The team photo: many people, one team.")
    clock.advance(DAY)
    mem.remember_many(FACTS)
    return old.id, reply.id, new.id


@pytest.mark.parametrize("share", [0.5, 1.0])
def test_a_neighbour_never_crowds_out_a_strong_hit_in_a_tight_budget(
    fresh: Any, clock: ManualClock, share: float
) -> None:
    """A hit's neighbour (the turn written just after it) follows its hit when everything
    fits; for a tight budget it competes as if it scored ``context_share`` of its hit's
    score: with 0.5 a hit scoring more than that goes first (the newer team size here);
    with 1 the neighbour rides right behind its hit."""
    with fresh(clock=clock, policy=QUIET.replace(context_share=share)) as mem:
        old, reply, new = _team_memories(mem, clock)
        query = "how many people are on the team"
        full = mem.recall(query, feedback=False)
        by_id = {it.id: it for it in full}
        assert full.ids[:2] == [old, reply]  # unlimited: the neighbour follows its hit
        assert by_id[reply].why["context_for"] == old
        assert by_id[reply].why["neighbour"] == "next"
        explanation = by_id[reply].why["explanation"]
        assert explanation.endswith("; context: the turn written just after rank 1")
        assert "context:" not in by_id[old].why["explanation"]
        assert by_id[new].score > 0.5 * by_id[old].score > by_id[reply].score
        cost = {m: it.tokens + QUIET.per_item_tokens for m, it in by_id.items()}
        # room for the old fact and one more: the new fact or the (longer) reply
        budget = cost[old] + max(cost[new], cost[reply])
        tight = mem.recall(query, token_budget=budget, feedback=False)
        assert tight.total_tokens <= budget
        if share == 0.5:
            assert tight.ids[0] == old
            assert new in tight.ids
            assert reply not in tight.ids
        else:
            assert tight.ids[:2] == [old, reply]
            assert new not in tight.ids


@pytest.mark.parametrize("how", ["remember", "remember_many", "edit", "scorer"])
def test_a_category_given_as_the_enum_is_stored_by_its_name(how: str) -> None:
    """str(Category.INSTRUCTION) is "Category.INSTRUCTION" (a (str, Enum)): remember()
    stored that, a category no policy knows, so an instruction decayed at the default
    rate and was forgotten though instructions are protected."""
    from oblivion_core import Category
    from oblivion_core.importance import HeuristicImportance

    class EnumScorer(HeuristicImportance):
        def categorize(self, text: str) -> str:
            return Category.INSTRUCTION

    clock = ManualClock()
    policy = Policy.template("balanced").replace(forget_enabled=True, forget_below=0.05)
    mem = memory(clock=clock, policy=policy, importance_scorer=EnumScorer())
    text = "Always answer in British English"
    if how == "remember":
        rid = mem.remember(text, category=Category.INSTRUCTION, importance=0.0).id
    elif how == "remember_many":
        (rec,) = mem.remember_many([text], categories=[Category.INSTRUCTION], importances=[0.0])
        rid = rec.id
    elif how == "edit":
        rid = mem.remember(text, category="fact", importance=0.0).id
        mem.edit(rid, category=Category.INSTRUCTION)
    else:
        rid = mem.remember(text, importance=0.0).id
    record = mem.get(rid)
    assert type(record.category) is str and record.category == "instruction"
    assert record.decay_rate == pytest.approx(math.log(2) / policy.half_life("instruction"))
    clock.advance(400 * 86_400)
    assert rid not in mem.maintain().ids("forget")
    assert "Category.INSTRUCTION" not in mem.stats()["categories"]
    mem.close()


def test_a_query_vector_given_ranks_as_the_query_embedded_and_is_checked() -> None:
    """``recall(embedding=)``: the query's vector made already by the store's embedder
    (an adapter searching several namespaces embeds the query once) ranks exactly as
    the recall that embeds it, and a vector of another size or not finite is refused
    naming the argument."""
    import math

    from oblivion_core import InvalidInputError
    from oblivion_core.testing import memory

    mem = memory()
    mem.remember_many([f"note {i}: the ferry to island {i} leaves at dawn" for i in range(30)])
    query = "when does the ferry to island 7 leave"
    vector = mem.embedder.embed_query(query)
    given = mem.recall(query, k=5, feedback=False, embedding=vector)
    alone = mem.recall(query, k=5, feedback=False)
    assert [(it.id, it.score) for it in given] == [(it.id, it.score) for it in alone]
    for bad in ([1.0, 2.0], [math.nan] * len(vector), "a vector"):
        with pytest.raises(InvalidInputError, match="embedding"):
            mem.recall(query, embedding=bad)
    # query_vector() makes it as recall would; one row of a matrix is taken as it
    made = mem.query_vector(query)
    assert made.shape == (len(vector),)
    for given_as in (made, made.reshape(1, -1), list(map(float, made)), [list(map(float, made))]):
        again = mem.recall(query, k=5, feedback=False, embedding=given_as)
        assert [(it.id, it.score) for it in again] == [(it.id, it.score) for it in alone]


def test_query_vector_of_another_models_size_is_an_embedding_error() -> None:
    """The size is checked against the store's vectors, as recall checks its own."""
    from oblivion_core import EmbeddingError
    from oblivion_core.testing import memory

    mem = memory()
    mem.remember("the ferry leaves at dawn")
    mem.embedder = HashEmbedder(dim=32)
    with pytest.raises(EmbeddingError, match="32"):
        mem.query_vector("when does the ferry leave")
