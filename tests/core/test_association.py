"""Associations between memories and spreading activation over them."""

from __future__ import annotations

import logging
import math
import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import InvalidInputError, ManualClock, Oblivion, Policy, UnknownMemoryError
from oblivion_core.association import LinkGraph, spread
from oblivion_core.errors import StoreCorruptError
from oblivion_core.testing import HashEmbedder, memory, word_count

DAY = 86_400.0

nodes = st.sampled_from([f"n{i}" for i in range(12)])
edges = st.lists(st.tuples(nodes, nodes, st.floats(0.01, 1.0)), max_size=40)


@given(
    edges=edges,
    seeds=st.dictionaries(nodes, st.floats(0.0, 1.0), min_size=1, max_size=4),
    fraction=st.floats(0.0, 1.0),
    hop_decay=st.floats(0.0, 1.0),
    hops=st.integers(0, 4),
    max_nodes=st.integers(0, 12),
)
def test_spread_is_bounded(
    edges: list[tuple[str, str, float]],
    seeds: dict[str, float],
    fraction: float,
    hop_decay: float,
    hops: int,
    max_nodes: int,
) -> None:
    """Spreading never reaches a seed, returns each memory once, at most max_nodes of them,
    and no share exceeds fraction * the largest seed boost."""
    graph = LinkGraph()
    for a, b, w in edges:
        if a != b:
            graph.add(a, b, w)
    out = spread(
        graph.adj,
        seeds,
        fraction=fraction,
        hop_decay=hop_decay,
        max_hops=hops,
        max_nodes=max_nodes,
    )
    assert not set(out) & set(seeds)
    assert len(out) <= max_nodes
    top = max(seeds.values())
    for share in out.values():
        assert 0 < share <= fraction * top + 1e-12


@given(
    edges=edges,
    seeds=st.dictionaries(nodes, st.floats(0.0, 1.0), min_size=1, max_size=4),
    hops=st.integers(1, 4),
    max_nodes=st.integers(0, 12),
)
def test_a_node_limit_keeps_the_strongest_first(
    edges: list[tuple[str, str, float]], seeds: dict[str, float], hops: int, max_nodes: int
) -> None:
    """With ``max_nodes`` the result is the first ``max_nodes`` memories of the unlimited
    spread, which lists each hop's memories strongest first (ties by id)."""
    graph = LinkGraph()
    for a, b, w in edges:
        if a != b:
            graph.add(a, b, w)
    kw: dict[str, Any] = {"fraction": 0.5, "hop_decay": 0.5, "max_hops": hops}
    full = spread(graph.adj, seeds, max_nodes=100, **kw)
    limited = spread(graph.adj, seeds, max_nodes=max_nodes, **kw)
    assert list(limited.items()) == list(full.items())[:max_nodes]
    first = spread(graph.adj, seeds, max_nodes=100, **{**kw, "max_hops": 1})
    assert list(first) == sorted(first, key=lambda m: (-first[m], m))
    assert list(full)[: len(first)] == list(first)


def test_spread_follows_weights_and_hops() -> None:
    """One hop passes delta*fraction*weight; the next multiplies by hop_decay as well."""
    graph = LinkGraph()
    graph.add("a", "b", 0.8)
    graph.add("b", "c", 0.5)
    out = spread(graph.adj, {"a": 0.4}, fraction=0.5, hop_decay=0.5, max_hops=2, max_nodes=10)
    assert out["b"] == pytest.approx(0.4 * 0.5 * 0.8)
    assert out["c"] == pytest.approx(0.4 * 0.5 * 0.8 * 0.5 * 0.5)


def test_link_graph_keeps_the_stronger_weight() -> None:
    """Re-linking with a weaker weight keeps the stronger one; links are undirected."""
    graph = LinkGraph()
    assert graph.add("a", "b", 0.7) == 0.7
    assert graph.add("b", "a", 0.2) == 0.7
    assert graph.neighbours("b") == {"a": 0.7}
    assert graph.remove_node("a") == ["b"]
    assert len(graph) == 0


# ---------------------------------------------------------------- through the engine


def test_consecutive_writes_are_linked(mem: Oblivion, clock: ManualClock) -> None:
    """A memory written within the adjacency window of the previous one is linked to it."""
    a = mem.remember("apples and pears in the basket")
    clock.advance(100.0)
    b = mem.remember("quantum physics lecture notes")
    clock.advance(1_000.0)
    c = mem.remember("the boiler makes a strange noise")
    assert mem.links(b.id) == {a.id: mem.policy.adjacency_weight}
    assert c.id not in mem.links(b.id)


def test_similar_memories_are_linked_by_similarity(mem: Oblivion, clock: ManualClock) -> None:
    """A new memory is linked to a near-identical earlier one with weight = similarity."""
    a = mem.remember("the red bicycle is locked outside the station")
    clock.advance(10 * DAY)
    b = mem.remember("the red bicycle is locked outside the station")
    assert mem.links(b.id)[a.id] == pytest.approx(1.0, abs=1e-5)


def test_explicit_link(mem: Oblivion, clock: ManualClock) -> None:
    """link() creates an undirected link; a weaker re-link keeps the stronger weight."""
    a = mem.remember("apples and pears in the basket")
    clock.advance(1_000.0)
    b = mem.remember("quantum physics lecture notes")
    assert mem.link(a.id, b.id, 0.8) == 0.8
    # under both ends (history(b) did not show it): "every recorded change of one memory"
    last = mem.history(b.id)[-1]
    assert (last.kind, last.detail) == ("link", {"to": a.id, "weight": 0.8})
    assert mem.link(b.id, a.id, 0.3) == 0.8
    assert mem.links(a.id) == {b.id: 0.8}
    assert mem.history(a.id)[-1].kind == "link"


def test_link_checks_its_ids_first(mem: Oblivion) -> None:
    """link(None, None) said it cannot link memory None to itself."""
    with pytest.raises(InvalidInputError, match="ids must be non-empty strings"):
        mem.link(None, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("weight", "error", "mentions"),
    [
        (0.0, InvalidInputError, "(0, 1]"),
        (1.5, InvalidInputError, "(0, 1]"),
        (math.nan, InvalidInputError, "(0, 1]"),
        (True, InvalidInputError, "number"),
        ("0.5", InvalidInputError, "number"),
    ],
)
def test_bad_link_weights(
    mem: Oblivion, weight: Any, error: type[Exception], mentions: str
) -> None:
    """A link weight outside (0, 1] or not a number raises InvalidInputError."""
    a = mem.remember("apples and pears in the basket")
    b = mem.remember("quantum physics lecture notes")
    with pytest.raises(error, match=re.escape(mentions)):
        mem.link(a.id, b.id, weight)


def test_link_errors(mem: Oblivion) -> None:
    """Linking a memory to itself or to an unknown id is refused."""
    a = mem.remember("apples and pears in the basket")
    with pytest.raises(InvalidInputError, match="itself"):
        mem.link(a.id, a.id)
    with pytest.raises(UnknownMemoryError):
        mem.link(a.id, "ghost")


def test_boosts_spread_to_linked_memories(mem: Oblivion, clock: ManualClock) -> None:
    """A confirm's boost flows to a linked memory as delta * spread_fraction * weight,
    journaled as a 'spread' event."""
    a = mem.remember("apples and pears in the basket", category="fact", importance=0.0)
    clock.advance(1_000.0)
    b = mem.remember("quantum physics lecture notes", category="fact", importance=0.0)
    mem.link(a.id, b.id, 0.8)
    clock.advance(60 * DAY)
    a0, b0 = mem.get(a.id).activation, mem.get(b.id).activation
    a1 = mem.confirm(a.id)
    expected = (a1 - a0) * mem.policy.spread_fraction * 0.8
    assert mem.get(b.id).activation == pytest.approx(b0 + expected)
    event = mem.history(b.id)[-1]
    assert (event.kind, event.before, event.after) == (
        "spread",
        pytest.approx(b0),
        pytest.approx(b0 + expected),
    )


def test_spreading_can_be_turned_off(fresh: Any) -> None:
    """With spread_fraction=0, a boost stays with the memory that earned it."""
    clock = ManualClock()
    with fresh(clock=clock, policy=Policy().replace(spread_fraction=0.0)) as mem:
        a = mem.remember("apples and pears in the basket", importance=0.0)
        b = mem.remember("quantum physics lecture notes", importance=0.0)
        mem.link(a.id, b.id, 1.0)
        clock.advance(60 * DAY)
        b0 = mem.get(b.id).activation
        mem.confirm(a.id)
        assert mem.get(b.id).activation == b0


def test_invalidate_lowers_and_flags_strongly_linked_memories(
    mem: Oblivion, clock: ManualClock
) -> None:
    """Invalidating a memory halves strongly linked neighbours and flags them for review."""
    wrong = mem.remember("the meeting is in room 12", category="fact")
    clock.advance(1_000.0)
    near = mem.remember("bring the projector to room 12", category="task")
    clock.advance(1_000.0)
    weak = mem.remember("coffee is on the second floor", category="fact")
    mem.link(wrong.id, near.id, 0.9)
    mem.link(wrong.id, weak.id, 0.1)
    near0, weak0 = mem.get(near.id).activation, mem.get(weak.id).activation
    mem.invalidate(wrong.id)
    assert mem.get(near.id).activation == pytest.approx(near0 * mem.policy.invalidate_link_factor)
    assert mem.get(weak.id).activation == pytest.approx(weak0)
    flagged = mem.stats()["flagged_for_review"]
    assert set(flagged) == {near.id}
    assert wrong.id in flagged[near.id]
    item = mem.recall("projector room 12", k=1)[0]
    assert item.id == near.id
    assert "flagged_for_review" in item.why


def test_invalidating_again_changes_nothing(mem: Oblivion) -> None:
    """A retry (a second click on "wrong") halved the linked memory again each time and
    journaled another review: three calls left it at an eighth."""
    wrong = mem.remember("the launch is code-named Apollo", category="fact")
    near = mem.remember("Apollo needs sign-off from Dana", category="fact")
    mem.link(wrong.id, near.id, 1.0)
    mem.invalidate(wrong.id)
    once, entries = mem.get(near.id).activation, len(mem.history())
    mem.invalidate(wrong.id)
    mem.invalidate(wrong.id, reason="still wrong")
    assert mem.get(near.id).activation == once
    assert len(mem.history()) == entries


def test_forget_removes_links(mem: Oblivion) -> None:
    """Forgetting a memory removes every link that touched it."""
    a = mem.remember("apples and pears in the basket")
    b = mem.remember("quantum physics lecture notes")
    mem.link(a.id, b.id, 0.9)
    mem.forget(a.id)
    assert mem.links(b.id) == {}


def test_link_expansion_respects_k(fresh: Any) -> None:
    """With expand_links on, recall(k=1) still returns at most one item."""
    with fresh(policy=Policy().replace(expand_links=True)) as mem:
        mem.remember_many(["alpha bravo charlie", "delta echo foxtrot", "golf hotel india"])
        assert len(mem.recall("alpha bravo charlie", k=1)) <= 1


def test_link_expansion_brings_archived_context_within_budget(fresh: Any) -> None:
    """With expand_links on, an active hit brings its linked archived memory along, marked
    in `why`, and the budget still holds."""
    clock = ManualClock()
    policy = Policy().replace(expand_links=True, expand_neighbours=0, maintain_every=0)
    with fresh(clock=clock, policy=policy) as mem:
        hit = mem.remember("alpha bravo charlie", category="instruction", importance=1.0)
        linked = mem.remember("delta echo foxtrot", category="small_talk", importance=0.0)
        assert mem.links(hit.id) == {linked.id: policy.adjacency_weight}
        clock.advance(5 * DAY)
        assert mem.maintain().archived == [linked.id]
        before = mem.get(linked.id).activation
        result = mem.recall("alpha bravo charlie", deep=False, token_budget=20)
        assert result.ids == [hit.id, linked.id]
        assert result.total_tokens <= 20
        extra = result[1].why
        assert extra["expanded_from"] == hit.id
        assert "added as context" in extra["explanation"]
        # ranked with its activation before this recall, as a hit is (it read the one
        # the hit's boost had spread to it), and that spread is its boost
        assert result[1].activation == extra["activation"] == pytest.approx(before, abs=1e-12)

        spread = mem.history(linked.id)[-1]
        assert spread.kind == "spread"
        assert extra["boost"] == {"before": spread.before, "after": spread.after, "spread": True}
        assert result[0].why["boost"] is not None
        assert len(mem.recall("alpha bravo charlie", deep=False, token_budget=7)) == 1


def test_a_linked_memory_past_a_hit_among_the_strongest_reports_its_pre_spread_value(
    fresh: Any,
) -> None:
    """A hit's strongest link is itself a hit, so expansion takes the next one down: it
    was ranked with, and reported, the activation this recall's spread had already
    raised, with no boost. Every linked memory shown now reports the value before the
    spread, and the spread as its boost."""
    clock = ManualClock()
    policy = Policy().replace(
        adapt=False, maintain_every=0, link_on_write=False, expand_neighbours=0,
        expand_links=True, expand_max=2,
    )  # fmt: skip
    with fresh(clock=clock, policy=policy) as mem:
        hit = mem.remember("the zebra lives in the savanna", category="fact", importance=1.0)
        also = mem.remember("a zebra has black and white stripes", category="fact", importance=1.0)
        far = [
            mem.remember(text, category="fact", importance=0.0).id
            for text in ("penguins huddle on the antarctic ice", "koalas chew eucalyptus leaves")
        ]
        for other, weight in ((also.id, 0.9), (far[0], 0.8), (far[1], 0.7)):
            mem.link(hit.id, other, weight)
        clock.advance(policy.half_lives["fact"] * 3)
        mem.maintain()
        before = {m: mem.get(m).activation for m in far}
        result = mem.recall("zebra", k=10, deep=False)
        shown = {it.id: it for it in result if it.id in far}
        assert set(shown) == set(far)
        for m, item in shown.items():
            assert item.activation == pytest.approx(before[m], abs=1e-12)
            assert item.why["boost"] == {
                "before": pytest.approx(before[m], abs=1e-12),
                "after": pytest.approx(mem.get(m).activation, abs=1e-12),
                "spread": True,
            }


@pytest.mark.integration
def test_links_persist(tmp_path: Path) -> None:
    """Links survive closing and reopening the store."""
    clock = ManualClock()

    def open_() -> Oblivion:
        return Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)

    with open_() as mem:
        a = mem.remember("apples and pears in the basket")
        clock.advance(1_000.0)
        b = mem.remember("quantum physics lecture notes")
        mem.link(a.id, b.id, 0.6)
    with open_() as mem:
        assert mem.links(a.id) == {b.id: 0.6}


def _links_table(path: Path) -> set[tuple[str, str, float]]:
    with sqlite3.connect(path / "oblivion.sqlite3") as conn:
        rows = conn.execute("SELECT a, b, weight FROM links").fetchall()
    conn.close()
    return {(a, b, w) for a, b, w in rows}


def _graph_links(mem: Oblivion) -> set[tuple[str, str, float]]:
    adj = mem._space("default").graph.adj
    return {(a, b, w) for a, out in adj.items() for b, w in out.items() if a < b}


def test_a_reopened_namespace_reads_its_links_on_their_first_use(tmp_path: Path) -> None:
    """A reopened namespace's recalls do not wait for its links: they are read when
    first needed (spreading, stats(), a write that links, load()), and a write that
    links before that gives the graph and table a store that read them first gives."""
    clock = ManualClock()

    def open_() -> Oblivion:
        return Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)

    texts = ["apples and pears", "pears and plums", "plums in the basket", "quantum notes"]
    with open_() as mem:
        for text in texts:
            mem.remember(text)
            clock.advance(60.0)
        stored = _links_table(tmp_path)
        assert stored and _graph_links(mem) == stored
    reads: list[str] = []

    def spy_on(mem: Oblivion) -> None:
        read_links = mem._db.links

        def spy(ns: str) -> Any:
            reads.append(ns)
            return read_links(ns)

        mem._db.links = spy  # type: ignore[method-assign]

    with open_() as mem:
        spy_on(mem)
        assert mem.recall("pears", k=2, feedback=False).items
        assert reads == []  # not needed yet
        assert mem.stats()["links"] == len(stored)
        assert reads == ["default"]
        assert _graph_links(mem) == stored
        mem.load()
        assert reads == ["default"]  # once
    with open_() as mem:  # a write that links, first
        mem.remember("pears and apples again")
        after = _links_table(tmp_path)
        assert after > stored and _graph_links(mem) == after
    with open_() as mem:
        spy_on(mem)
        reads.clear()
        mem.load()  # reads them ahead
        assert reads == ["default"] and _graph_links(mem) == after
    with open_() as mem:  # a forget before they are read: the table is the graph
        spy_on(mem)
        reads.clear()
        gone = mem.records()[1].id
        mem.forget(gone)
        assert reads == []
        left = _links_table(tmp_path)
        assert all(gone not in (a, b) for a, b, _ in left) and left < after
        assert _graph_links(mem) == left and reads == ["default"]


def test_a_damaged_link_is_reported_when_the_links_are_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A link weight that is not a number names the row and the fix when the links are
    first needed (stats(), links()); recall, its boosts, writes and forgetting go on
    without them, with one warning."""
    clock = ManualClock()

    def open_() -> Oblivion:
        return Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)

    with open_() as mem:
        a = mem.remember("apples and pears in the basket")
        b = mem.remember("quantum physics lecture notes")
        mem.link(a.id, b.id, 0.6)
    with sqlite3.connect(tmp_path / "oblivion.sqlite3") as conn:
        conn.execute("UPDATE links SET weight='heavy'")
    conn.close()
    with open_() as mem, caplog.at_level(logging.WARNING, logger="oblivion_core"):
        reads: list[str] = []
        read_links = mem._db.links
        mem._db.links = lambda ns: (reads.append(ns), read_links(ns))[1]  # type: ignore[method-assign]
        assert mem.recall("apples", k=1, feedback=False).ids == [a.id]
        with pytest.raises(StoreCorruptError, match=r"weight 'heavy'.*delete that row"):
            mem.stats()
        with pytest.raises(StoreCorruptError, match="weight 'heavy'"):
            mem.links(a.id)  # not read again: the same error
        assert mem.get(a.id).text == "apples and pears in the basket"
        # what does not need the links works, without them: recall boosts (no
        # spreading), writes (not linked), forgetting; one warning, no reload per call
        space = mem._space("default")
        before = mem.get(a.id).activation
        for _ in range(3):
            mem.recall("apples pears basket", k=1)
            mem.remember("apples again, in a bowl")
        assert mem.get(a.id).activation > before
        mem.forget(b.id)
        assert mem._space("default") is space
        assert caplog.text.count("cannot be read") == 1
        assert reads == ["default"]  # read once (0.26 s at 100k memories)
        assert b.id not in [r.id for r in mem.records()]


class _SameColourJudge:
    """A newer statement about a favourite colour makes an older one stale."""

    def supersedes(self, new: str, old: str, similarity: float) -> bool:
        return "favourite colour" in new and "favourite colour" in old


@pytest.mark.parametrize("judge", [None, _SameColourJudge()], ids=["offline", "judge"])
def test_a_batch_links_and_supersedes_the_same_a_block_at_a_time(
    monkeypatch: pytest.MonkeyPatch, judge: Any
) -> None:
    """remember_many works through a big batch a block at a time (its similarity matrix
    to the memories before it grew as n x (window + n): 1.5 GB at 10,000 texts); with
    the window covering them all, blocks of 3 link and supersede as one block does."""
    import oblivion_core.engine_write as engine_write

    texts = [
        "my favourite colour is blue",
        "the office is in Berlin",
        "we ship on Thursdays",
        "my favourite colour is green now",
        "the office moved to Hamburg",
        "lunch is at noon",
        "my favourite colour is red now",
        "we ship on Fridays now",
    ]

    def outcome(block: int) -> tuple[Any, Any]:
        monkeypatch.setattr(engine_write, "_WRITE_BLOCK", block)
        from oblivion_core.testing import memory

        mem = memory(supersession_judge=judge)
        ids = [r.id for r in mem.remember_many(texts)]
        names = dict(zip(ids, range(len(ids)), strict=True))
        links = {names[m]: sorted(names[o] for o in mem.links(m)) for m in ids}
        after = {r.id: r.superseded_by for r in mem.records()}

        def newest(m: str) -> int:  # a chain's newest statement (one block may skip links)
            while after.get(m) is not None:
                m = after[m]  # type: ignore[assignment]
            return names[m]

        return links, {names[m]: newest(m) for m in ids}

    assert outcome(3) == outcome(1024)
    _, newest = outcome(3)
    assert newest[0] == newest[3] == newest[6] == 6  # across blocks too


def test_a_big_batch_does_not_hold_its_whole_similarity_matrix() -> None:
    """3,000 texts in one remember_many: the n x (window + n) similarity matrix and its
    masks took about 0.25 GB at this size (1.5 GB at 10,000); a block at a time, a
    fraction of it."""
    import tracemalloc

    from oblivion_core.testing import memory

    mem = memory(policy=Policy.template().replace(maintain_every=0))
    texts = [f"note {i} about the quarterly budget" for i in range(3000)]
    tracemalloc.start()
    try:
        mem.remember_many(texts, supersede=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100e6
    assert mem.count() == 3000


@pytest.mark.parametrize("threshold", [0.0, -1.0])
def test_a_threshold_at_or_below_zero_never_stores_a_zero_weight_link(threshold: float) -> None:
    """link_similarity may be any cosine; two memories pointing apart used to get a link
    of weight 0.0 (their negative similarity clamped), which link() itself refuses."""

    class Opposite:
        def embed_documents(self, texts: list[str]) -> np.ndarray:
            return np.stack([self.embed_query(t) for t in texts])

        def embed_query(self, text: str) -> np.ndarray:
            v = np.array([1.0 if "up" in text else -1.0, 0.3, 0.0], dtype=np.float32)
            return v / np.linalg.norm(v)

    policy = Policy.template().replace(link_similarity=threshold, adjacency_weight=0.0)
    mem = memory(embedder=Opposite(), policy=policy)
    a = mem.remember("going up the hill", category="fact").id
    mem.remember("going down the hill", category="fact")
    mem.remember_many(["down again", "and down once more"], categories=["fact", "fact"])
    c = mem.remember("up we go again", category="fact").id
    assert mem.links(a) == {c: pytest.approx(1.0)}
    assert all(0 < w <= 1 for m in mem.records() for w in mem.links(m.id).values())


@given(
    links=st.lists(
        st.tuples(st.sampled_from("abcde"), st.sampled_from("abcde"), st.floats(0, 1)),
        max_size=30,
    )
)
def test_links_added_at_once_equal_links_added_one_by_one(
    links: list[tuple[str, str, float]],
) -> None:
    """``add_many`` (a namespace's links as it loads) leaves the graph ``add`` does, the
    stronger weight kept for a pair given twice, self-links included."""
    one, many = LinkGraph(), LinkGraph()
    for a, b, w in links:
        one.add(a, b, w)
    many.add_many(links)
    assert many.adj == one.adj


def test_a_linked_memory_that_was_no_candidate_gets_its_own_relevance(fresh: Any) -> None:
    """An archived memory a link brings to a ``deep=False`` recall was no candidate, and
    its ``why`` said relevance 0.000 (its cosine to the query is 0.545): it is scored
    on its own now, as a neighbouring turn is (fused, with no BM25)."""
    from oblivion_core.recall import fuse

    clock = ManualClock()
    policy = Policy().replace(expand_links=True, expand_neighbours=0, maintain_every=0)
    with fresh(clock=clock, policy=policy) as mem:
        linked = mem.remember(
            "lol Project Falcon PostgreSQL admin is Joran haha", category="small_talk"
        )
        clock.advance(5 * DAY)
        mem.maintain()
        hit = mem.remember("Project Falcon uses PostgreSQL.", category="fact")
        mem.link(hit.id, linked.id, 0.9)
        query = "Project Falcon uses PostgreSQL"
        result = mem.recall(query, k=4, deep=False, feedback=False)
        (item,) = [it for it in result if it.why.get("expanded_from") == hit.id]
        embedder = HashEmbedder()
        cosine = float(
            np.dot(embedder.embed_query(query), embedder.embed_documents([linked.text])[0])
        )
        expected = float(fuse(np.asarray([cosine]), np.zeros(1), policy)[0])
        assert cosine > 0.3 and item.relevance == pytest.approx(expected, abs=1e-6)
        assert f"relevance {expected:.3f}" in item.why["explanation"]
