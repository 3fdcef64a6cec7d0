"""The ranking score: relevance plus activation and importance, weighted by relevance share."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import Policy
from oblivion_core.recall import (
    activation_share,
    interleave,
    place_priority,
    rank_order,
    score,
    top_ranked,
)

unit = st.floats(0.0, 1.0, allow_nan=False)
vectors = st.lists(st.tuples(unit, unit, unit), min_size=1, max_size=30)
focus = st.sampled_from([0.0, 1.0, 2.0, 4.0, 8.0])


@given(rows=vectors, power=focus)
def test_share_is_a_monotone_fraction_that_is_one_at_the_best(
    rows: list[tuple[float, float, float]], power: float
) -> None:
    """Shares lie in [0, 1], never fall as relevance rises, and the best candidate keeps all."""
    rel = np.asarray([r for r, _, _ in rows])
    best = float(rel.max())
    share = activation_share(rel, best, Policy().replace(activation_focus=power))
    assert np.all((share >= 0) & (share <= 1))
    order = np.argsort(rel, kind="stable")
    assert np.all(np.diff(share[order]) >= -1e-12)
    assert share[int(np.argmax(rel))] == pytest.approx(1.0)


@given(rows=vectors, best=st.floats(0.01, 1.0), power=focus)
def test_a_share_against_another_sets_best_stays_at_most_one(
    rows: list[tuple[float, float, float]], best: float, power: float
) -> None:
    """Neighbour turns and linked memories are scored against the candidates' best, which
    they may pass: their share stays in [0, 1] and their score at most the plain
    weighted sum (no test passed a best below a relevance, so an unclipped share
    survived a mutation)."""
    rel, act, imp = (np.asarray(col) for col in zip(*rows, strict=True))
    policy = Policy().replace(activation_focus=power)
    share = activation_share(rel, best, policy)
    assert np.all((share >= 0) & (share <= 1))
    plain = policy.w_relevance * rel + policy.w_activation * act + policy.w_importance * imp
    assert np.all(score(rel, act, imp, policy, best) <= plain + 1e-12)


@given(rows=vectors)
def test_focus_zero_is_the_plain_weighted_sum(rows: list[tuple[float, float, float]]) -> None:
    """activation_focus=0 gives w_rel*rel + w_act*act + w_imp*imp."""
    rel, act, imp = (np.asarray(c) for c in zip(*rows, strict=True))
    policy = Policy().replace(activation_focus=0.0)
    want = policy.w_relevance * rel + policy.w_activation * act + policy.w_importance * imp
    assert np.allclose(score(rel, act, imp, policy), want)


@given(rows=vectors, power=focus)
def test_score_never_exceeds_the_plain_sum_and_keeps_relevance(
    rows: list[tuple[float, float, float]], power: float
) -> None:
    """The share only scales the activation and importance terms down."""
    rel, act, imp = (np.asarray(c) for c in zip(*rows, strict=True))
    policy = Policy().replace(activation_focus=power)
    got = score(rel, act, imp, policy)
    plain = score(rel, act, imp, policy.replace(activation_focus=0.0))
    assert np.all(got <= plain + 1e-12)
    assert np.all(got >= policy.w_relevance * rel - 1e-12)


def test_a_weak_match_cannot_ride_activation_over_a_strong_one() -> None:
    """A fully active memory half as relevant as the best one stays below it, while the
    plain sum (focus 0) would put it first."""
    rel = np.asarray([0.40, 0.20])
    act = np.asarray([0.0, 1.0])
    imp = np.asarray([0.0, 1.0])
    policy = Policy().replace(w_activation=0.3)
    assert score(rel, act, imp, policy)[0] > score(rel, act, imp, policy)[1]
    plain = policy.replace(activation_focus=0.0)
    assert score(rel, act, imp, plain)[0] < score(rel, act, imp, plain)[1]


def test_equally_relevant_memories_are_ordered_by_activation() -> None:
    """Among equally relevant memories, the more active one ranks first."""
    rel = np.asarray([0.5, 0.5])
    act = np.asarray([0.2, 0.9])
    imp = np.asarray([0.3, 0.3])
    s = score(rel, act, imp, Policy())
    assert s[1] > s[0]


def test_focus_must_be_a_finite_non_negative_number() -> None:
    """A negative or NaN focus is refused with the field's name."""
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="activation_focus"):
            Policy().replace(activation_focus=bad)


_SCORES = st.floats(-1.0, 2.0, allow_nan=False)


@given(
    places=st.lists(
        st.tuples(_SCORES, st.none() | _SCORES, st.booleans()), min_size=1, max_size=30
    ),
    share=st.floats(0.0, 1.0),
)
def test_place_priority_ranks_list_items_first_and_neighbours_by_their_hit(
    places: list[tuple[float, float | None, bool]], share: float
) -> None:
    """A hit stands at its score; a neighbour at its own score or ``share`` of its hit's,
    whichever is higher (never below its own score, never above its hit's when it
    scored less); list items above everything. Checked place by place against those
    rules, for whole arrays of places."""
    own = np.asarray([o for o, _, _ in places])
    hit = np.asarray([np.nan if h is None else h for _, h, _ in places])
    listed = np.asarray([li for _, _, li in places])
    prio = place_priority(own, hit, listed, share=share)
    for p, (o, h, li) in enumerate(places):
        if li:
            assert prio[p] == math.inf
        elif h is None:
            assert prio[p] == o
        else:
            assert prio[p] == max(o, share * h)
            assert prio[p] >= o
            if o <= h and h >= 0:
                assert prio[p] <= h


@st.composite
def _interleavings(draw: st.DrawFn) -> tuple[list[int], int, dict[int, list[int]], int]:
    """A ranking, its first places as hits, and context for some hits: candidates that
    are not hits, ranked lower or not ranked at all (found only as context)."""
    size = draw(st.integers(1, 30))
    perm = draw(st.permutations(range(size)))
    unranked = draw(st.integers(0, size - 1))
    order = list(perm[: size - unranked])
    n_hits = draw(st.integers(0, min(len(order), 4)))
    hits = order[:n_hits]
    others = [c for c in range(size) if c not in hits]
    after: dict[int, list[int]] = {}
    if hits:
        for c in draw(st.lists(st.sampled_from(others), unique=True)) if others else []:
            after.setdefault(draw(st.sampled_from(hits)), []).append(c)
    return order, n_hits, after, size


@given(case=_interleavings())
def test_interleave_puts_context_behind_its_hit_and_keeps_the_rest_in_order(
    case: tuple[list[int], int, dict[int, list[int]], int],
) -> None:
    """Same result as walking the ranking and placing each hit's context right behind it
    (the loop recall used before), and every context place names its hit."""
    order, n_hits, after, size = case
    expected: list[int] = []
    done: set[int] = set()
    for j in order:
        if j in done:
            continue
        expected.append(j)
        done.add(j)
        if j in order[:n_hits]:
            for ctx in after.get(j, []):
                if ctx not in done:
                    expected.append(ctx)
                    done.add(ctx)
    got, hit_at = interleave(np.asarray(order, dtype=np.int64), n_hits, after, size)
    assert got.tolist() == expected
    assert {got[p]: hit for p, hit in hit_at.items()} == {
        c: hit for hit, ctxs in after.items() for c in ctxs
    }


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-1, 1), st.booleans()), max_size=60),
    st.integers(1, 20),
)
def test_visible_top_is_the_best_n_of_what_recall_may_show(
    rows: list[tuple[float, bool]], n: int
) -> None:
    """Hidden results (invalidated, cold) take no places: the visible ones returned are
    exactly the best ``n`` visible ones of the whole list, in order, and every hidden one
    returned ranks above the last of them."""
    from oblivion_core.engine_recall import _visible_top

    order = sorted(range(len(rows)), key=lambda i: -rows[i][0])
    hidden_of = {i: rows[i][1] for i in order}

    def search(k: int) -> tuple[list[int], list[float]]:
        top = order[:k]
        return top, [rows[i][0] for i in top]

    def hidden(ids: list[int]) -> Any:
        return np.asarray([hidden_of[i] for i in ids], dtype=bool)

    ids, values = _visible_top(search, n, hidden, len(rows))
    visible = [i for i in ids if not hidden_of[i]]
    assert visible == [i for i in order if not hidden_of[i]][:n]
    assert values == [rows[i][0] for i in ids]
    assert ids == order[: len(ids)]


@given(
    values=st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=0, max_size=40),
    n=st.integers(-1, 45),
    seed=st.integers(0, 1000),
)
def test_top_ranked_is_the_head_of_rank_order(values: list[float], n: int, seed: int) -> None:
    """The one-selection shortcut picks and orders exactly the first n of the full
    ranking, many ties at the edge included (scores drawn from five values)."""
    scores = np.asarray(values, dtype=np.float64)
    seq = np.random.default_rng(seed).permutation(len(values)).astype(np.int64)
    expected = rank_order(scores, seq)[: max(n, 0)]
    assert top_ranked(scores, seq, n).tolist() == expected.tolist()
