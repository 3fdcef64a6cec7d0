"""Recall at its edges: neighbours' relevance, ties at the candidate pool's edge, deep=False
and successors, neighbours across namespaces, rerank's candidates, and ``why``'s numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oblivion_core import ManualClock, Oblivion, Policy, Tier
from oblivion_core.testing import HashEmbedder, memory, word_count

DAY = 86_400.0
DIM = 8


def _unit(cosine: float, axis: int) -> Any:
    """A unit vector at ``cosine`` to the query axis e0."""
    v = np.zeros(DIM, np.float32)
    v[0] = cosine
    v[axis] = np.sqrt(1 - cosine * cosine)
    return v


class TableEmbedder:
    """Vectors chosen per text."""

    def __init__(self) -> None:
        self.table: dict[str, Any] = {"query": _unit(1.0, 1)}

    def embed_documents(self, texts: list[str]) -> Any:
        return np.stack([self.table[t] for t in texts])

    def embed_query(self, text: str) -> Any:
        return self.table[text]


def test_a_neighbour_is_scored_like_a_candidate_and_never_displaces_its_hit() -> None:
    """A neighbour that was not a candidate had its raw cosine as relevance (no dense
    weight), so with k=1 it outscored and replaced the very hit it was context for."""
    clock = ManualClock()
    emb = TableEmbedder()
    policy = Policy.template().replace(maintain_every=0, link_on_write=False)
    mem = memory(clock=clock, embedder=emb, policy=policy)
    for i in range(55):  # more than candidate_pool, all at cosine 0.80
        text = f"filler note number {i}"
        emb.table[text] = _unit(0.80, 2 + i % 6)
        mem.remember(text, category="fact", importance=0.5, supersede=False)
        clock.advance(1000)
    emb.table["the best answer"] = _unit(0.81, 1)
    emb.table["the turn right after it"] = _unit(0.79, 1)
    hit = mem.remember("the best answer", category="fact", importance=0.5, supersede=False).id
    clock.advance(5)
    after = mem.remember("the turn right after it", category="fact", importance=0.5).id
    one = mem.recall("query", k=1, feedback=False)
    assert one.ids == [hit]
    shown = mem.recall("query", k=60, feedback=False)
    assert shown.ids[:2] == [hit, after]  # context right behind its hit
    as_context = shown[1]
    as_candidate = next(i for i in mem.recall("query", k=100, feedback=False) if i.id == after)
    assert as_context.why["context_for"] == hit
    assert as_context.relevance == pytest.approx(as_candidate.relevance)
    assert as_context.relevance == pytest.approx(0.7 * 0.79 / (0.7 + 0.3), abs=1e-6)


def test_a_neighbour_whose_hit_is_left_out_stands_at_its_own_score() -> None:
    """A neighbour takes a place as if it scored a share of its hit's score, to be shown
    beside it; with the hit over the budget (left out), the neighbour ("ok, noted") kept
    that share and took the place of a better hit."""
    clock = ManualClock()
    emb = TableEmbedder()
    policy = Policy.template().replace(maintain_every=0, link_on_write=False)
    mem = memory(clock=clock, embedder=emb, policy=policy)
    ids = {}
    for name, text, cos, gap in [
        ("h1", "the first answer", 0.90, 1000),
        ("h2", "the second answer", 0.85, 1000),
        ("y", "a later answer here", 0.60, 1000),
        ("big", " ".join(["a very long answer"] * 25), 0.80, 5),
        ("n", "ok noted", 0.10, 1000),
    ]:
        emb.table[text] = _unit(cos, 1)
        ids[name] = mem.remember(text, category="fact", importance=0.5, supersede=False).id
        clock.advance(gap)
    every = mem.recall("query", k=5, feedback=False)
    assert every.ids == [ids["h1"], ids["h2"], ids["big"], ids["n"], ids["y"]]
    assert every[3].why["context_for"] == ids["big"]
    # 7 + 7 + 8 tokens (word_count, 4 an item): room for "ok noted" or the better hit
    got = mem.recall("query", k=4, token_budget=22, feedback=False)
    assert got.ids == [ids["h1"], ids["h2"], ids["y"]]
    # room for both: "ok noted" is shown, but after the better hit, not at its hit's
    # place (render and the adapters take lines in this order); its why still says
    # whose neighbour it is
    got = mem.recall("query", k=5, token_budget=28, feedback=False)
    assert got.ids == [ids["h1"], ids["h2"], ids["y"], ids["n"]]
    assert [item.score for item in got] == sorted((item.score for item in got), reverse=True)
    assert got[3].why["context_for"] == ids["big"]
    assert "(not packed)" in got[3].why["explanation"]


@pytest.mark.parametrize("spaced", [False, True])
def test_ties_beyond_the_candidate_pool_keep_the_newest(spaced: bool) -> None:
    """Sixty equal memories, more than candidate_pool: the pools kept the oldest 50 (index
    and seq order), so the newest never came back, even when they scored higher."""
    clock = ManualClock()
    policy = Policy.template().replace(maintain_every=0, expand_neighbours=0)
    mem = memory(clock=clock, policy=policy)
    if spaced:
        ids = []
        for _ in range(60):
            ids.append(mem.remember("tea", category="fact", importance=0.5, supersede=False).id)
            clock.advance(3600)
    else:
        recs = mem.remember_many(
            ["tea"] * 60, categories=["fact"] * 60, importances=[0.5] * 60, supersede=False
        )
        ids = [r.id for r in recs]
    got = mem.recall("tea", k=5, feedback=False).ids
    assert got == ids[::-1][:5]


def test_ties_at_the_pool_edge_survive_a_reopen(tmp_path: Path) -> None:
    policy = Policy.template().replace(maintain_every=0, expand_neighbours=0)
    kwargs: dict[str, Any] = {"embedder": HashEmbedder(), "token_counter": word_count}
    with Oblivion(tmp_path, policy=policy, clock=ManualClock(), **kwargs) as mem:
        ids = [r.id for r in mem.remember_many(["tea"] * 60, supersede=False)]
        mem.maintain()
        live = mem.recall("tea", k=5, feedback=False).ids
    with Oblivion(tmp_path, clock=ManualClock(), **kwargs) as again:
        assert again.recall("tea", k=5, feedback=False).ids == live == ids[::-1][:5]


def test_deep_false_does_not_bring_an_archived_successor() -> None:
    """An active superseded statement brought its archived successor into a deep=False
    recall (tier archive, boosted with the archive's gain)."""
    clock = ManualClock()
    mem = memory(clock=clock, policy=Policy.template().replace(maintain_every=0))
    old = mem.remember("The team meets in room Aurora on Mondays", category="event").id
    new = mem.remember("The team now meets in room Borealis on Mondays", category="event").id
    mem.supersede(old, new)
    for i in range(3):
        mem.remember(f"Always answer politely, rule {i}", category="instruction")
    clock.advance(60 * DAY)
    mem.maintain()
    mem.confirm(old)  # back in the active tier; its successor stays archived
    assert (mem.get(old).tier, mem.get(new).tier) == (Tier.ACTIVE, Tier.ARCHIVE)
    res = mem.recall("where does the team meet on Mondays", deep=False, feedback=False)
    assert all(item.tier == Tier.ACTIVE for item in res)
    assert new not in res.ids and old not in res.ids  # the stale one stays hidden
    deep = mem.recall("where does the team meet on Mondays", deep=True, feedback=False)
    assert new in deep.ids and old not in deep.ids


@pytest.mark.parametrize("elsewhere", [0, 8, 40])
def test_the_next_turn_is_context_whatever_other_namespaces_wrote(elsewhere: int) -> None:
    """Sequence numbers are shared by all namespaces: with 8 or more writes to another
    namespace between two turns, the next turn was not found (the scan looked 8 ahead)."""
    clock = ManualClock()
    mem = memory(clock=clock, policy=Policy.template().replace(maintain_every=0))
    question = mem.remember("What's the code name of the launch?", namespace="alice").id
    clock.advance(5)
    for i in range(elsewhere):
        mem.remember(f"bob chat line {i}", namespace="bob")
    clock.advance(5)
    answer = mem.remember("It is Falcon, sign-off by Priya.", namespace="alice").id
    for i in range(5):
        clock.advance(3600)
        mem.remember(f"unrelated note {i}", namespace="alice")
    res = mem.recall("code name of the launch", namespace="alice", feedback=False)
    context = [item.id for item in res if item.why.get("context_for") == question]
    assert context == [answer]


@pytest.mark.parametrize("kwargs", [{"k": 3}, {"token_budget": 40}])
def test_rerank_returns_only_its_candidates_with_link_expansion_on(kwargs: Any) -> None:
    mem = memory(policy=Policy.template().replace(expand_links=True))
    a = mem.remember("The launch is code-named Falcon.").id
    b = mem.remember("Falcon needs sign-off from Priya before the launch window opens.").id
    c = mem.remember("Lunch was pasta today.").id
    mem.link(a, c, 0.9)
    res = mem.rerank("launch code name", [(a, 0.9), (b, 0.5)], feedback=False, **kwargs)
    assert set(res.ids) <= {a, b} and a in res.ids
    assert mem.recall("launch code name", k=3, feedback=False).ids  # recall still expands


def test_why_adds_up_with_a_negative_relevance_and_matches_the_score() -> None:
    """A relevance below 0 is clipped when scoring; the sentence showed it unclipped, so
    its numbers did not add up. why["score"] is the item's score to the last bit."""
    mem = memory()
    mid = mem.remember("The office is in Berlin.", importance=0.5).id
    (item,) = mem.rerank("office", [(mid, -0.5)], feedback=False)
    assert "relevance 0 (clipped from -0.500)" in item.why["explanation"]
    assert item.why["contributions"]["relevance"] == 0.0
    res = mem.recall("office Berlin", k=10, feedback=False)
    for it in [*res, item]:
        assert it.why["score"] == it.score


def _crowded(drop: str, *, chroma: bool) -> tuple[Oblivion, str]:
    """A valid archived fact among 120 near-duplicates that recall must not show (more
    than the candidate pool, and than Chroma is asked for)."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(
        maintain_every=0, compress_below=0.1 if drop == "compress" else None, supersede=False
    )
    mem = memory(clock=clock, policy=policy)
    if chroma:
        mem.EXACT_ARCHIVE_ROWS = 0
        mem.SKETCH_ARCHIVE_ROWS = 0
    keep = mem.remember(
        "the spare key for the garage is under the blue flower pot",
        category="fact",
        importance=0.6 if drop == "compress" else 0.0,
    )
    wrong = []
    for i in range(120):
        clock.advance(600)
        wrong.append(
            mem.remember(
                f"the spare key for the garage is under the doormat number {i}",
                category="small_talk" if drop == "compress" else "fact",
                importance=0.0,
            ).id
        )
    for i in range(10):
        mem.remember(f"Always reply politely, rule {i}", category="instruction")
    if drop == "invalidate":
        for w in wrong:
            mem.invalidate(w)
    clock.advance(60 * DAY)
    plan = mem.maintain()
    if drop == "compress":
        assert set(wrong) <= set(plan.ids("compress"))
    assert mem.get(keep.id).tier == Tier.ARCHIVE
    return mem, keep.id


@pytest.mark.parametrize("chroma", [False, True], ids=["in-memory archive", "chroma"])
@pytest.mark.parametrize("drop", ["invalidate", "compress"])
def test_memories_kept_out_of_recall_do_not_crowd_out_a_valid_one(drop: str, chroma: bool) -> None:
    """Invalidated memories, and the cold originals of a summary, filled the top of the
    archive search and of BM25, and were dropped only after: the one valid memory that
    answered was never found, though forgetting them instead found it."""
    mem, keep = _crowded(drop, chroma=chroma)
    try:
        found = mem.recall("where is the spare key for the garage", deep=True, k=8)
        assert keep in found.ids
        assert all(mem.get(m).tier != Tier.COLD for m in found.ids)
        assert not any(mem.get(m).invalidated for m in found.ids)
        shown = mem.recall(
            "where is the spare key for the garage",
            deep=True,
            k=8,
            include_cold=True,
            include_invalidated=True,
            feedback=False,
        )
        # asked for, the near-duplicates come back
        assert any(mem.get(m).invalidated or mem.get(m).tier == Tier.COLD for m in shown.ids)
    finally:
        mem.close()


def test_a_memory_kept_out_of_recall_does_not_set_the_bm25_scale() -> None:
    """An invalidated memory with the best BM25 divided everyone else's: the same store
    with it forgotten instead ranked with other relevances, and why's signals (dense,
    lexical) could not reproduce the relevance shown."""
    out = {}
    for drop in ("invalidate", "forget"):
        mem = memory(clock=ManualClock())
        anna = mem.remember("Anna lives in Porto since last spring", category="fact").id
        for i in range(30):
            mem.remember(f"filler note number {i} about the weekly chores", category="fact")
        spam = mem.remember("Porto Porto Porto Porto Porto Porto Porto", category="fact").id
        getattr(mem, drop)(spam)
        (item,) = [i for i in mem.recall("Porto", k=5, feedback=False) if i.id == anna]
        sig = item.why["relevance_signals"]
        policy = mem.policy
        again = (
            policy.dense_weight * max(sig["dense"], 0.0)
            + policy.lexical_weight * sig["lexical"] / sig["lexical_max"]
        ) / (policy.dense_weight + policy.lexical_weight)
        assert item.relevance == pytest.approx(again)
        out[drop] = (item.relevance, item.score)
        mem.close()
    assert out["invalidate"] == pytest.approx(out["forget"])


def test_every_kind_of_item_says_why_it_is_where_it_is() -> None:
    """Three explanations were short of the truth: a list item ranked first with a lower
    score said nothing of the list; an invalidated memory shown on request was marked
    nowhere; and the archive's reason said "only 1 active memories" where one memory
    passed the filter in a tier of more."""
    clock = ManualClock()
    with memory(clock=clock, policy=Policy().replace(maintain_every=0)) as mem:
        mem.recall("What is on my shopping list?", feedback=False)  # the list index
        mem.remember("Add oat milk to the shopping list.")
        mem.remember("The shopping list app on my phone is called Listy.", category="fact")
        listed = mem.recall("What is on my shopping list?", feedback=False, k=2)
        (oat,) = [it for it in listed if "oat milk" in it.text]
        assert "list item: shown first for a question about the list" in oat.why["explanation"]

        wrong = mem.remember("The standup is at 9:00.", category="fact", metadata={"team": "a"})
        mem.invalidate(wrong.id)
        shown = mem.recall("When is the standup?", include_invalidated=True, feedback=False)
        (item,) = [it for it in shown if it.id == wrong.id]
        assert item.why["invalidated"] is True
        assert "invalidated: shown because include_invalidated=True" in item.why["explanation"]
        assert all("invalidated" not in it.why for it in shown if it.id != wrong.id)

        mem.remember("The standup moved to 9:30.", category="fact", metadata={"team": "a"})
        clock.advance(90 * 86_400)
        mem.remember("Team b's standup is at ten.", category="fact", metadata={"team": "b"})
        mem.maintain()
        filtered = mem.recall("When is the standup?", k=3, where={"team": "b"}, feedback=False)
        assert filtered.archive_reason == "only 1 active memory passes the filter for k=3"


def test_a_stale_statement_shown_on_request_says_so() -> None:
    """With ``include_superseded=True`` a superseded memory was called stale in its
    sentence only when its score had been capped below its successor's; one ranked
    apart from it (another query's best match) read as current."""
    with memory() as mem:
        old = mem.remember("My office is in building 4.", category="fact")
        new = mem.remember("My office is in building 7 now.", category="fact")
        assert mem.get(old.id).superseded_by == new.id
        shown = mem.recall("building 4", include_superseded=True, feedback=False, k=5)
        (item,) = [it for it in shown if it.id == old.id]
        assert item.why["superseded_by"] == new.id
        assert f"stale: {new.id} states it now" in item.why["explanation"]
        (current,) = [it for it in shown if it.id == new.id]
        assert "stale" not in current.why["explanation"]


def test_an_archived_match_the_recall_cannot_show_searches_no_archive() -> None:
    """The only archived BM25 match is invalidated (or filtered out): the recall said it
    searched the archive "because BM25 matched archived memories", in every item's why,
    though nothing it could show was there."""
    mem = memory()
    wrong = mem.remember("the wifi password is hunter2", metadata={"user": "bob"}).id
    mem.remember("the office wifi router is in the kitchen", metadata={"user": "ann"})
    for i in range(10):
        mem.remember(f"lunch plans for day {i}", metadata={"user": "ann"})
    mem.invalidate(wrong)
    assert mem.get(wrong).tier == Tier.ARCHIVE
    query = "the office wifi router is in the kitchen password"
    got = mem.recall(query, k=3, feedback=False)
    assert (got.searched_archive, got.archive_reason) == (False, None)
    assert all("archive searched" not in item.why["explanation"] for item in got)
    # asked for, it may be shown: the archive is searched for it
    shown = mem.recall(query, k=3, feedback=False, include_invalidated=True)
    assert shown.archive_reason == "BM25 matched archived memories"
    assert wrong in shown.ids
