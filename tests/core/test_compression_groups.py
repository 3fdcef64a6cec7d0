"""Compression groups: a summary gathers only memories on one subject, and no more than
it can stand for (time adjacency once chained 400 support tickets on 8 topics, written a
minute apart, into one summary that spoke of one topic)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion, Policy
from oblivion_core.compression import TIME_LINK_SHARE, clusters, max_group_size

DAY = 86_400.0
TOPICS = [
    "printer jam on floor 3",
    "vpn drops every hour",
    "password reset for email",
    "laptop battery swelling",
    "monitor flicker on HDMI",
    "wifi slow in office",
    "invoice missing VAT number",
    "refund for order 5512",
]
SUPPORT = Policy.template("support-desk").replace(compress_below=0.25)


def _unit(rows: np.ndarray) -> np.ndarray:
    out: np.ndarray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return out


def _times(draw: Any, n: int) -> np.ndarray:
    """Times in any order, with ties (a batch shares one)."""
    return np.asarray(draw(st.lists(st.integers(0, 30), min_size=n, max_size=n)), dtype=float)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_a_group_holds_one_subject_whatever_the_times(data: Any) -> None:
    """Rows on distinct subjects (each close to its subject, far from the others),
    written in any order and at any times: every group holds one subject, and each
    subject with enough rows is grouped whole (in parts of at most max_size)."""
    k = data.draw(st.integers(1, 6))
    per = data.draw(st.lists(st.integers(1, 12), min_size=k, max_size=k))
    subject = np.repeat(np.arange(k), per)
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    rng.shuffle(subject)
    n = len(subject)
    topics = np.eye(16)[:k]
    vecs = _unit(topics[subject] + 0.03 * rng.normal(size=(n, 16)))
    times = _times(data.draw, n)
    similarity = data.draw(st.floats(0.5, 0.85))
    min_size = data.draw(st.integers(2, 4))
    max_size = data.draw(st.none() | st.integers(2 * min_size, 12))
    window = data.draw(st.sampled_from([0.0, 1.0, 10.0, 1e9]))
    groups = clusters(
        vecs, times, similarity=similarity, window=window, min_size=min_size, max_size=max_size
    )
    for g in groups:
        assert len({int(subject[i]) for i in g}) == 1  # the old time links joined any
        assert min_size <= len(g) <= (max_size or n)
    grouped = sorted(i for g in groups for i in g)
    assert len(grouped) == len(set(grouped))
    whole = [i for i in range(n) if per[subject[i]] >= min_size]
    assert grouped == whole


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_time_alone_never_joins_unrelated_rows(data: Any) -> None:
    """Rows alike nothing else (cosine below TIME_LINK_SHARE of the threshold with each
    other) are never grouped, however close in time: a shared timestamp (one
    remember_many batch) or a minute apart."""
    n = data.draw(st.integers(0, 16))
    similarity = data.draw(st.floats(0.2, 0.99))
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    # orthogonal rows, each tilted a little toward one shared direction (a template)
    tilt = (similarity * TIME_LINK_SHARE / 2) * rng.uniform(0, 1, (n, 1))
    vecs = _unit(np.hstack([np.eye(n, 16), tilt]))
    sims = vecs @ vecs.T
    assert (sims[~np.eye(n, dtype=bool)] < similarity * TIME_LINK_SHARE).all()
    times = _times(data.draw, n)
    window = data.draw(st.sampled_from([0.0, 60.0, 1e9]))
    assert clusters(vecs, times, similarity=similarity, window=window, min_size=2) == []


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(3, 40),
    similarity=st.floats(0.6, 0.95),
    gap=st.sampled_from([0.0, 60.0, 300.0]),
    max_size=st.none() | st.integers(6, 20),
)
def test_the_turns_of_a_meeting_form_one_group(
    n: int, similarity: float, gap: float, max_size: int | None
) -> None:
    """Turns each saying something else about one subject (cosine between half the
    threshold and the threshold with one another, and with any group of them) written
    within the window of each other compress together (one group, or parts of at most
    max_size); the same turns written further apart than the window do not."""
    related = (similarity * TIME_LINK_SHARE + similarity**2) / 2  # below sqrt(.) < s
    tilt = np.sqrt(1 / related - 1)
    vecs = _unit(np.hstack([np.ones((n, 1)), tilt * np.eye(n)]))
    times = np.arange(n, dtype=np.float64) * gap
    groups = clusters(
        vecs, times, similarity=similarity, window=300.0, min_size=3, max_size=max_size
    )
    assert [i for g in groups for i in g] == list(range(n))
    assert len(groups) == (1 if max_size is None else -(-n // max_size))
    apart = clusters(
        vecs,
        np.arange(n, dtype=np.float64) * 301.0,
        similarity=similarity,
        window=300.0,
        min_size=3,
    )
    assert apart == []


def test_a_group_is_no_larger_than_a_summary_can_stand_for() -> None:
    """max_group_size: a quarter of the summary's words (20 at 80), at least twice the
    smallest group (so a larger one splits into parts no smaller than it)."""
    assert max_group_size(80, 3) == 20
    assert max_group_size(None, 3) == 20  # a summarizer that does not say
    assert max_group_size(8, 3) == 6
    vecs = _unit(np.ones((45, 4)))
    groups = clusters(vecs, np.zeros(45), similarity=0.6, window=0.0, min_size=3, max_size=20)
    assert [len(g) for g in groups] == [15, 15, 15]
    assert [i for g in groups for i in g] == list(range(45))


# ----------------------------------------------------------------------- the engine
def _topics_of(mem: Any, texts: dict[str, str]) -> list[set[str]]:
    """For each summary, the topics of its originals."""
    out = []
    for r in mem.records():
        if r.category == "summary":
            of = r.metadata["summary_of"]
            out.append({t for m in of for t in TOPICS if t in texts[m]})
    return out


def _queue(mem: Oblivion, clock: ManualClock, n: int) -> dict[str, str]:
    """``n`` tickets on the topics in turn, a minute apart, maintained a month later;
    their texts by id."""
    texts = {}
    for i in range(n):
        text = f"Customer {i} reports {TOPICS[i % len(TOPICS)]}."
        texts[mem.remember(text).id] = text
        clock.advance(60)
    clock.advance(30 * DAY)
    mem.maintain()
    return texts


def test_a_support_queue_is_summarised_topic_by_topic(fresh: Any) -> None:
    """Tickets on 8 topics taken in turn, a minute apart, a month later: each summary
    holds one topic, none more than 20, and recall of a topic finds its summary (one
    summary of all 48 spoke of one topic, and recall found only it)."""
    clock = ManualClock()
    with fresh(clock=clock, policy=SUPPORT) as mem:
        texts = _queue(mem, clock, 64)
        topics = _topics_of(mem, texts)
        assert len(topics) >= len(TOPICS)
        assert all(len(t) == 1 for t in topics)
        for s in mem.records():
            if s.category == "summary":
                assert len(s.metadata["summary_of"]) <= 20
        hit = mem.recall("vpn drops every hour", k=1).items[0]
        assert "vpn drops every hour" in hit.text


def test_a_batch_is_no_meeting_by_itself(fresh: Any) -> None:
    """remember_many of unrelated texts (one timestamp): summaries still by topic."""
    clock = ManualClock()
    with fresh(clock=clock, policy=SUPPORT) as mem:
        batch = [f"Customer {i} reports {TOPICS[i % len(TOPICS)]}." for i in range(64)]
        texts = {r.id: r.text for r in mem.remember_many(batch)}
        clock.advance(30 * DAY)
        mem.maintain()
        topics = _topics_of(mem, texts)
        assert topics
        assert all(len(t) == 1 for t in topics)


def test_a_strict_similarity_leaves_unrelated_neighbours_apart(fresh: Any) -> None:
    """compress_similarity=0.99: a minute apart is no reason to share a summary."""
    clock = ManualClock()
    with fresh(clock=clock, policy=SUPPORT.replace(compress_similarity=0.99)) as mem:
        texts = _queue(mem, clock, 48)
        assert all(len(t) == 1 for t in _topics_of(mem, texts))


def test_a_meeting_among_other_turns_is_summarised_alone(fresh: Any) -> None:
    """A conversation's consecutive turns on one subject, between unrelated turns all
    within the adjacency window, compress together, and without the others."""
    meeting = [
        "In the budget meeting we agreed the travel budget is frozen.",
        "The budget meeting moved the marketing budget to next quarter.",
        "At the budget meeting Priya asked for a hiring budget review.",
        "The budget meeting ended with a plan to cut the cloud budget.",
    ]
    before = ["The printer on floor 3 jams again.", "My cat knocked over a plant."]
    after = ["Paris will be sunny tomorrow.", "Dinner is at eight with Sam."]
    clock = ManualClock()
    policy = Policy().replace(compress_below=0.1, maintain_every=0, adapt=False, supersede=False)
    with fresh(clock=clock, policy=policy) as mem:
        ids = {}
        for text in before + meeting + after:
            ids[mem.remember(text, category="event", importance=0.0).id] = text
            clock.advance(60)
        clock.advance(60 * DAY)
        mem.maintain()
        (summary,) = [r for r in mem.records() if r.category == "summary"]
        assert [ids[m] for m in summary.metadata["summary_of"]] == meeting
