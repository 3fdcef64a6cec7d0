"""The sketch copy's search (:mod:`oblivion_core.sketch`): signs packed and counted
right, candidates exactly the rows within the distance that holds enough of them, and
the result the exact best among those; through adds, removes, edits and any row order."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import oblivion_core.sketch as sketch
from oblivion_core import ManualClock, Oblivion, Policy
from oblivion_core.index import ActiveIndex
from oblivion_core.sketch import SketchIndex, hamming, nearest_codes, sign_codes

DAY = 86_400.0


@contextmanager
def few_candidates(per_result: int, least: int) -> Iterator[None]:
    """Select candidates by signs in small indexes (the defaults need thousands)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sketch, "CANDIDATES_PER_RESULT", per_result)
        mp.setattr(sketch, "MIN_CANDIDATES", least)
        yield


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    vecs = rng.normal(size=(n, dim))
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


def _signs_differ(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The Hamming distance computed the slow way: row by row, sign by sign."""
    return np.asarray([int(np.sum((row > 0) != (b > 0))) for row in a])


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), dim=st.integers(1, 200))
def test_distance_is_the_number_of_signs_that_differ(seed: int, n: int, dim: int) -> None:
    """Any dimension (padding to whole words adds no distance), zero coordinates
    counted as not positive."""
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs[rng.random(size=vecs.shape) < 0.1] = 0.0
    q = rng.normal(size=dim).astype(np.float32)
    codes = sign_codes(vecs)
    assert codes.shape == (-(-dim // 64), n) and codes.dtype == np.uint64
    got = hamming(codes, sign_codes(q[None])[:, 0])
    np.testing.assert_array_equal(got, _signs_differ(vecs, q))


@given(hnp.arrays(np.uint64, st.tuples(st.integers(1, 4), st.integers(1, 50))))
def test_the_table_popcount_counts_as_bitwise_count(words: np.ndarray) -> None:
    """numpy before 2.0 counts bits by table; the same counts."""
    slow = np.vectorize(lambda w: bin(int(w)).count("1"))(words)
    np.testing.assert_array_equal(sketch._popcount_table(words), slow)
    if hasattr(np, "bitwise_count"):
        np.testing.assert_array_equal(np.bitwise_count(words), slow)


@given(
    distances=hnp.arrays(np.uint16, st.integers(1, 300), elements=st.integers(0, 40)),
    want=st.integers(1, 400),
)
def test_the_candidates_are_every_row_within_the_first_distance_holding_enough(
    distances: np.ndarray, want: int
) -> None:
    rows = nearest_codes(distances, want)
    assert len(rows) >= min(want, len(distances))
    assert np.array_equal(rows, np.sort(rows))
    inside = distances[rows]
    outside = np.delete(distances, rows)
    if len(outside):
        assert inside.max() < outside.min()  # ties at the edge all kept
        # and no smaller distance would hold enough
        assert np.count_nonzero(distances < inside.max()) < want


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    k=st.integers(1, 12),
    per_result=st.integers(1, 6),
    ops=st.lists(st.tuples(st.sampled_from(["add", "remove", "replace"]), st.integers(1, 40))),
)
def test_nearest_is_the_exact_best_of_the_candidates_through_changes(
    seed: int, n: int, k: int, per_result: int, ops: list[tuple[str, int]]
) -> None:
    """After any adds, removes and edits: the rows the signs select are those of a
    slow recount, the result is the exact best ``k`` among them, and the similarities
    computed on the way are exactly theirs."""
    rng = np.random.default_rng(seed)
    dim = 24
    with few_candidates(per_result, 4):
        index = SketchIndex()
        index.add([f"m{i}" for i in range(n)], _unit(rng, n, dim))
        written = n
        for op, count in ops:
            if op == "add":
                index.add([f"m{written + i}" for i in range(count)], _unit(rng, count, dim))
                written += count
            elif index.ids:
                picked = list(rng.choice(index.ids, size=min(count, len(index)), replace=False))
                if op == "remove":
                    index.remove(picked)
                else:
                    index.add(picked, _unit(rng, len(picked), dim))
        size = len(index)
        rows = index._rows[:size]
        np.testing.assert_array_equal(index._codes[:, :size], sign_codes(rows))
        q = _unit(rng, 1, dim)[0]
        got_ids, got_sims, known = index.nearest(q, k)
    if not size:
        assert got_ids == []
        return
    want = max(per_result * k, 4)
    if 8 * want >= size:  # too few rows to select: one product, exact
        cand = np.arange(size)
    else:
        dist = _signs_differ(rows, q)
        edge = np.sort(dist)[want - 1]
        cand = np.flatnonzero(dist <= edge)
        if 8 * len(cand) >= size:
            cand = np.arange(size)
    sims = rows[cand] @ q
    best = cand[np.argsort(-sims, kind="stable")][:k]
    assert sorted(got_ids) == sorted(index.ids[r] for r in best.tolist())
    np.testing.assert_allclose(got_sims, np.sort(sims)[::-1][:k], atol=1e-6)
    done = np.flatnonzero(~np.isnan(known))
    np.testing.assert_array_equal(done, cand)
    np.testing.assert_allclose(known[done], rows[done] @ q, atol=1e-6)


def test_the_result_does_not_depend_on_the_order_rows_were_added() -> None:
    """A reopened store rebuilds its copy in another order: the same memories come
    back (the candidates are every row within a distance, not the first ones found)."""
    rng = np.random.default_rng(7)
    vecs = _unit(rng, 2_000, 32)
    ids = [f"m{i}" for i in range(len(vecs))]
    order = rng.permutation(len(vecs))
    with few_candidates(3, 16):
        one, two = SketchIndex(), SketchIndex()
        one.add(ids, vecs)
        two.add([ids[i] for i in order], vecs[order])
        for q in _unit(rng, 30, 32):
            assert one.nearest(q, 10)[0] == two.nearest(q, 10)[0]
            assert one._bounded_rows(q, 10) is not None  # selected by signs


def test_sentence_vectors_find_what_one_product_finds(real_embedder: Any) -> None:
    """The real model's vectors of 3,000 notes: with 16 candidates per result (the
    default), the ten best of each of 40 questions are exactly one product's, while
    fewer than an eighth of the rows are multiplied in full."""
    rng = np.random.default_rng(3)
    things = ["boiler", "dentist", "piano", "invoice", "flight", "garden", "printer", "rent"]
    verbs = ["booked", "paid", "moved", "cancelled", "fixed", "checked", "renewed", "lost"]
    when = ["on Monday", "last week", "in March", "yesterday", "next month", "at noon"]
    texts = [
        f"I {rng.choice(verbs)} the {rng.choice(things)} {rng.choice(when)}, note {i}"
        for i in range(3_000)
    ]
    vecs = np.asarray(real_embedder.embed_documents(texts), dtype=np.float32)
    ids = [str(i) for i in range(len(texts))]
    exact, sketched = ActiveIndex(), SketchIndex()
    exact.add(ids, vecs)
    sketched.add(ids, vecs)
    questions = [f"When was the {t} {v}?" for t in things for v in verbs[:5]]
    for question in questions:
        q = np.asarray(real_embedder.embed_query(question), dtype=np.float32)
        rows = sketched._bounded_rows(q, 10)
        assert rows is not None and 8 * len(rows) < len(texts)
        assert sketched.nearest(q, 10)[0] == exact.top(exact.scores(q), 10)[0]


def test_deep_recall_through_a_sketch_copy_on_the_real_stack(
    tmp_path: Path, real_embedder: Any, chroma_queries: Any
) -> None:
    """Real model, Chroma on disk, 1,500 archived notes searched through a sketch copy
    (signs selecting candidates): the same items as Chroma's query, then after a reopen
    the copy is made again from the stored vectors."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(maintain_every=0)
    rng = np.random.default_rng(5)
    places = ["Porto", "Leeds", "Lyon", "Graz", "Turku", "Cork", "Bari", "Brno", "Gent"]
    jobs = ["dentist", "plumber", "tutor", "vet", "mechanic", "tailor", "notary"]
    notes = [
        f"Our {rng.choice(jobs)} in {rng.choice(places)} is booked for visit {i}"
        for i in range(1_500)
    ]
    questions = [f"When is the {j} in {p}?" for j in jobs[:4] for p in places[:5]]

    def ask(mem: Oblivion) -> list[list[str]]:
        return [mem.recall(q, deep=True, k=3, feedback=False).ids for q in questions]

    with (
        few_candidates(2, 16),
        Oblivion(tmp_path, embedder=real_embedder, clock=clock, policy=policy) as mem,
    ):
        mem.EXACT_ARCHIVE_ROWS = 0
        mem.remember_many(notes, categories=["small_talk"] * len(notes))
        clock.advance(10 * DAY)
        mem.maintain()
        assert mem.stats()["archive"] > 1_000
        calls = chroma_queries(mem)
        sketched = ask(mem)
        assert mem.stats()["archive_search"] == "sketch" and calls == []
        mem.SKETCH_ARCHIVE_ROWS = 0
        mem._spaces[mem.default_namespace].archive = None
        assert ask(mem) == sketched and len(calls) == len(questions)
    with (
        few_candidates(2, 16),
        Oblivion(tmp_path, embedder=real_embedder, clock=clock, policy=policy) as mem,
    ):
        mem.EXACT_ARCHIVE_ROWS = 0
        calls = chroma_queries(mem)
        assert ask(mem) == sketched and calls == []
        assert mem.stats()["archive_search"] == "sketch"
