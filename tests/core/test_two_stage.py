"""The active index's two-stage search finds exactly what one product over every row does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oblivion_core.index as index_module
from oblivion_core import FastEmbedEmbedder, Oblivion, Policy
from oblivion_core.index import ActiveIndex

DIM = 48
CENTRES = np.random.default_rng(0).normal(size=(50, DIM))


@contextmanager
def two_stage_from(rows: int) -> Iterator[None]:
    """Search in two stages from ``rows`` rows on (the default needs thousands)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index_module, "TWO_STAGE_ROWS", rows)
        yield


def _vectors(rng: np.random.Generator, n: int, spread: float) -> np.ndarray:
    """Unit vectors near some directions (as sentence embeddings are: most of their
    energy on a few main axes) plus ``spread`` of noise; a large spread is noise alone,
    where the bound prunes nothing."""
    vecs = CENTRES[rng.integers(0, len(CENTRES), n)] + spread * rng.normal(size=(n, DIM))
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


def _seqs(ids: list[str]) -> np.ndarray:
    """Write numbers by id (the tests name memory ``n`` ``"m<n>"``)."""
    return np.asarray([int(m[1:]) for m in ids], dtype=np.int64)


def _check_same(index: ActiveIndex, q: np.ndarray, k: int) -> np.ndarray:
    """``nearest`` against ``top(scores())``; returns the rows it computed."""
    want_ids, want_sims = index.top(index.scores(q), k, _seqs)
    got_ids, got_sims, known = index.nearest(q, k, _seqs)
    # the same memories, best first; equal vectors may swap places, as a product's
    # rounding by place orders them (recall unties them exactly afterwards)
    assert sorted(got_ids) == sorted(want_ids)
    assert np.allclose(got_sims, want_sims, atol=1e-6)
    want = dict(zip(want_ids, want_sims.tolist(), strict=True))
    assert all(abs(want[m] - v) <= 1e-6 for m, v in zip(got_ids, got_sims.tolist(), strict=True))
    assert np.all(np.diff(got_sims) <= 1e-6)
    scores = index.scores(q)
    done = np.flatnonzero(~np.isnan(known))
    assert np.allclose(known[done], scores[done], atol=1e-6)
    return done


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(40, 400),
    spread=st.sampled_from([0.05, 0.3, 3.0]),
    k=st.integers(1, 12),
    ops=st.lists(st.tuples(st.sampled_from(["add", "remove", "replace"]), st.integers(1, 60))),
)
def test_nearest_is_top_of_every_score_through_adds_removes_and_edits(
    seed: int, n: int, spread: float, k: int, ops: list[tuple[str, int]]
) -> None:
    """The same memories, ties by write number included, after any changes (equal
    vectors may swap places by a rounding)."""
    rng = np.random.default_rng(seed)
    with two_stage_from(32):
        index = ActiveIndex()
        written = 0

        def add(count: int) -> None:
            nonlocal written
            index.add([f"m{written + i}" for i in range(count)], _vectors(rng, count, spread))
            written += count

        add(n)
        _check_same(index, _vectors(rng, 1, spread)[0], k)  # the basis is made here
        for op, count in ops:
            if op == "add":
                add(count)
            elif op == "remove" and len(index) > count:
                index.remove(list(rng.choice(index.ids, count, replace=False)))
            elif op == "replace":
                some = list(rng.choice(index.ids, min(count, len(index)), replace=False))
                index.add(some, _vectors(rng, len(some), spread))
            _check_same(index, _vectors(rng, 1, spread)[0], k)


def test_the_bound_spares_most_rows_of_embedding_like_vectors() -> None:
    """The second stage multiplies few rows (else the search would not pay)."""
    rng = np.random.default_rng(7)
    with two_stage_from(32):
        index = ActiveIndex()
        index.add([f"m{i}" for i in range(2_000)], _vectors(rng, 2_000, 0.3))
        done = [len(_check_same(index, q, 10)) for q in _vectors(rng, 20, 0.3)]
    assert np.median(done) < 2_000 / 8


def test_near_duplicates_at_the_edge_keep_the_newest() -> None:
    """Many copies of one vector tying for the last places: the newest are kept."""
    rng = np.random.default_rng(3)
    base = _vectors(rng, 300, 0.3)
    copies = np.repeat(base[:1], 40, axis=0)
    with two_stage_from(32):
        index = ActiveIndex()
        index.add([f"m{i}" for i in range(340)], np.concatenate([base, copies]))
        q = base[0] + 0.01 * rng.normal(size=DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        ids, _, _ = index.nearest(q, 10, _seqs)
        _check_same(index, q, 10)
    assert sorted(ids) == sorted(f"m{i}" for i in range(330, 340))


@pytest.mark.parametrize("seed", range(12))
def test_a_query_just_outside_the_heads_axes_keeps_its_tail(seed: int) -> None:
    """Data in a 16-dimensional subspace, a query 1e-4 to 3e-4 outside it, and a vector
    mostly outside it that is the true best: its bound must not fall below its
    similarity (the query's tail rounded to nothing in float32 and the search returned
    a wrong or empty top 1; found by a review)."""
    rng = np.random.default_rng(seed)
    dim = 32
    head = index_module.head_dims(dim)
    axes, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    fill = rng.normal(size=(300, head)) @ axes[:, :head].T - 2 * axes[:, 0]
    fill /= np.linalg.norm(fill, axis=1, keepdims=True)
    with two_stage_from(32):
        index = ActiveIndex()
        index.add([f"m{i}" for i in range(300)], fill.astype(np.float32))
        index.nearest(fill[0].astype(np.float32), 1)  # the basis is made
        assert index._basis is not None
        basis, _ = np.linalg.qr(index._basis.astype(np.float64).T)
        h0, h1 = basis[:, 0], basis[:, 1]
        t = rng.normal(size=dim)
        t -= basis @ (basis.T @ t)
        t /= np.linalg.norm(t)
        tail = rng.uniform(1e-4, 3e-4)
        q = (np.sqrt(1 - tail * tail) * h0 + tail * t).astype(np.float32)
        v = np.cos(1.2) * h0 + np.sin(1.2) * t  # mostly outside the head's axes
        x = 0.5 * (np.cos(1.2) + float(q @ v))
        u = x * h0 + np.sqrt(1 - x * x) * h1
        index.add(["m300", "m301"], np.vstack([u, v]).astype(np.float32))
        _check_same(index, q, 1)


def test_replacing_rows_out_of_order_in_one_call_projects_each_of_them() -> None:
    """An edit of rows 2, 0 and 4 in one call: each one's head and tail are its new
    vector's (row 0 kept its old ones, and the search missed it; found by a review)."""
    rng = np.random.default_rng(0)
    vecs = _vectors(rng, 300, 0.3)
    with two_stage_from(32):
        index = ActiveIndex()
        index.add([f"m{i}" for i in range(300)], vecs)
        q = vecs[7]
        index.nearest(q, 1)  # the basis is made
        index.add(["m0"], -q[None])  # m0 points away from the query
        new = -vecs[:3].copy()
        new[1] = q
        index.add(["m2", "m0", "m4"], new)
        ids, _, _ = index.nearest(q, 2, _seqs)
        _check_same(index, q, 2)
    assert "m0" in ids
    assert index._basis is not None
    for m in ("m0", "m2", "m4"):
        row = index.row_of(m)
        assert row is not None
        assert np.allclose(index._bounds[:-1, row], index._basis @ index._rows[row], atol=1e-5)


def test_the_basis_is_made_again_when_the_index_doubles() -> None:
    """Vectors of another kind arriving later are searched exactly all the same."""
    rng = np.random.default_rng(11)
    with two_stage_from(32):
        index = ActiveIndex()
        index.add([f"m{i}" for i in range(100)], _vectors(rng, 100, 0.3))
        _check_same(index, _vectors(rng, 1, 0.3)[0], 5)
        first = index._basis
        other = np.random.default_rng(99).normal(size=(300, DIM)).astype(np.float32)
        other /= np.linalg.norm(other, axis=1, keepdims=True)
        index.add([f"m{i}" for i in range(100, 300)], other[:200])
        for q in other[200:205]:
            _check_same(index, q, 5)
    assert index._basis is not first


@pytest.mark.parametrize("capacity", [None, 100])
def test_recall_through_the_two_stage_search_equals_one_product(
    real_embedder: FastEmbedEmbedder, capacity: int | None
) -> None:
    """A real store, real model: the same items and relevances either way, from the
    active tier alone (600 active memories) and with the archive searched in memory
    (100 active, 500 archived)."""
    topics = ["budget", "design", "launch", "hiring", "travel", "security"]
    kinds = ["red", "small", "old", "shiny", "wooden", "broken", "heavy"]
    texts = [
        f"Catalogue entry {i}: a {kinds[i % 7]} lamp for the {topics[i % 6]} team, shelf {i}."
        for i in range(600)
    ]
    queries = ["a red lamp for the launch team", "shelf 12", "broken lamps", "travel team"]
    policy = Policy.template("balanced").replace(
        active_share=None, active_capacity=capacity, maintain_every=0
    )

    def run(threshold: int) -> tuple[list[list[tuple[str, float]]], bool]:
        with two_stage_from(threshold):
            mem = Oblivion(None, embedder=real_embedder, policy=policy)
            mem.remember_many(texts)
            mem.maintain()
            out = [
                [
                    (i.text, round(i.relevance, 5))
                    for i in mem.recall(q, k=8, feedback=False, deep=capacity is not None)
                ]
                for q in queries
            ]
            (space,) = mem._spaces.values()
            index = space.index if capacity is None else space.archive
            assert index is not None and len(index) == 600 - (capacity or 0)
            two_stage = index._basis is not None
            mem.close()
        return out, two_stage

    got, used = run(64)
    want, not_used = run(10**9)
    assert used and not not_used
    assert got == want
