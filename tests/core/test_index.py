"""The active tier's exact in-process vector index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from oblivion_core.index import NEAR_TIE, ActiveIndex, row_tops, untie


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1, norms)).astype(np.float32)


matrices = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 40), st.just(8)),
    elements=st.floats(-1, 1, width=32),
)


@given(
    mat=matrices,
    q=hnp.arrays(np.float32, 8, elements=st.floats(-1, 1, width=32)),
    k=st.integers(1, 50),
)
def test_search_matches_brute_force(mat: np.ndarray, q: np.ndarray, k: int) -> None:
    """Top-k search returns the k best cosine similarities, best first, exactly."""
    vecs = _unit(mat)
    index = ActiveIndex()
    ids = [f"m{i}" for i in range(len(vecs))]
    index.add(ids, vecs)
    got_ids, got_sims = index.search(q, k)
    expected = np.sort(vecs @ q)[::-1][: min(k, len(vecs))]
    assert len(got_ids) == min(k, len(vecs))
    assert np.allclose(got_sims, expected, atol=1e-6)
    for mid, sim in zip(got_ids, got_sims, strict=True):
        assert float(vecs[ids.index(mid)] @ q) == pytest.approx(float(sim), abs=1e-6)


@given(
    n=st.integers(1, 30),
    removals=st.lists(st.integers(0, 29), max_size=30),
)
def test_remove_keeps_remaining_rows_intact(n: int, removals: list[int]) -> None:
    """After any removals every remaining id still maps to its own vector."""
    rng = np.random.default_rng(n)
    vecs = _unit(rng.normal(size=(n, 8)))
    ids = [f"m{i}" for i in range(n)]
    index = ActiveIndex()
    index.add(ids, vecs)
    gone = {f"m{i}" for i in removals}
    index.remove(sorted(gone))
    left = [m for m in ids if m not in gone]
    assert sorted(index.ids) == sorted(left)
    assert len(index) == len(left)
    for m in left:
        assert m in index
        assert np.array_equal(index.vector(m), vecs[ids.index(m)])
    for m in gone:
        assert m not in index
        assert index.vector(m) is None


def test_adding_an_existing_id_replaces_its_vector() -> None:
    """Re-adding an id overwrites its vector instead of duplicating the row."""
    index = ActiveIndex()
    a, b = np.eye(2, dtype=np.float32)
    index.add(["x"], a[None, :])
    index.add(["x"], b[None, :])
    assert len(index) == 1
    assert np.array_equal(index.vector("x"), b)
    assert index.search(b, 1)[0] == ["x"]


def test_empty_index_and_zero_k_return_nothing() -> None:
    """Searching an empty index, or with k=0, returns no ids."""
    index = ActiveIndex(4)
    q = np.ones(4, dtype=np.float32) / 2
    assert index.search(q, 5)[0] == []
    index.add(["a"], q[None, :])
    assert index.search(q, 0)[0] == []


def test_growth_beyond_initial_capacity() -> None:
    """The index grows past its initial allocation without losing rows."""
    rng = np.random.default_rng(0)
    vecs = _unit(rng.normal(size=(500, 16)))
    index = ActiveIndex()
    for start in range(0, 500, 7):
        index.add([f"m{i}" for i in range(start, min(start + 7, 500))], vecs[start : start + 7])
    assert len(index) == 500
    assert index.search(vecs[321], 1)[0] == ["m321"]


def test_removing_absent_ids_is_a_no_op() -> None:
    """Removing ids that are not there changes nothing."""
    index = ActiveIndex()
    index.add(["a"], np.ones((1, 3), dtype=np.float32) / np.sqrt(3))
    index.remove(["zzz", "yyy"])
    assert index.ids == ["a"]


@given(
    mat=matrices,
    queries=hnp.arrays(
        np.float32, st.tuples(st.integers(0, 70), st.just(8)), elements=st.floats(-1, 1, width=32)
    ),
    k=st.integers(1, 12),
)
def test_search_many_equals_one_search_per_query(
    mat: np.ndarray, queries: np.ndarray, k: int
) -> None:
    """The batched search gives each query exactly what its own search gives."""
    vecs = _unit(mat)
    index = ActiveIndex()
    index.add([f"m{i}" for i in range(len(vecs))], vecs)
    batched = index.search_many(queries, k)
    assert len(batched) == len(queries)
    for q, (ids, sims) in zip(queries, batched, strict=True):
        one_ids, one_sims = index.search(q, k)
        assert len(ids) == len(one_ids)
        assert np.allclose(sims, one_sims, atol=1e-6)
        # equal similarities may swap places; each id carries its own similarity
        for mid, sim in zip(ids, sims, strict=True):
            assert float(vecs[int(mid[1:])] @ q) == pytest.approx(float(sim), abs=1e-5)


def test_recent_returns_the_last_vectors_added_as_rows() -> None:
    """``recent(n)`` gives the newest ids with their vectors, one per row."""
    rng = np.random.default_rng(1)
    vecs = _unit(rng.normal(size=(10, 8)))
    index = ActiveIndex()
    index.add([f"m{i}" for i in range(10)], vecs)
    ids, rows = index.recent(3)
    assert ids == ["m7", "m8", "m9"]
    assert rows.shape == (3, 8)
    assert np.array_equal(rows, vecs[7:])
    assert index.recent(50)[0] == [f"m{i}" for i in range(10)]


@given(
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 29)), max_size=60),
    n=st.integers(0, 12),
    skip=st.integers(0, 4),
)
def test_recent_goes_by_write_number_wherever_the_rows_sit(
    ops: list[tuple[bool, int]], n: int, skip: int
) -> None:
    """After any adds and removes (a removed memory's row is filled by the last; one
    that comes back is added last), ``recent(n, skip)`` gives the ``n`` memories with
    the highest write numbers below the ``skip`` highest, oldest first, with their own
    vectors: what an index built afresh in any order gives (a reload)."""
    rng = np.random.default_rng(0)
    vecs = _unit(rng.normal(size=(30, 8)))
    live = ActiveIndex()
    held: set[int] = set()
    for add, i in ops:
        if add:
            live.add([f"m{i}"], vecs[i : i + 1], np.asarray([i]))
            held.add(i)
        else:
            live.remove([f"m{i}"])
            held.discard(i)
    order = sorted(held)
    expected = order[max(len(order) - skip - n, 0) : max(len(order) - skip, 0)] if n else []
    ids, rows = live.recent(n, skip)
    assert ids == [f"m{i}" for i in expected]
    assert len(rows) == len(expected)
    if expected:
        assert np.array_equal(rows, vecs[expected])
    fresh = ActiveIndex()
    shuffled = rng.permutation(order).tolist()
    if shuffled:
        fresh.add([f"m{i}" for i in shuffled], vecs[shuffled], np.asarray(shuffled))
    assert fresh.recent(n, skip)[0] == ids


@given(
    mat=hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, 6), st.integers(1, 12)),
        elements=st.sampled_from([-1.0, -0.5, 0.0, 0.25, 0.5, 1.0]),  # many ties
    ),
    m=st.integers(0, 14),
)
def test_row_tops_are_each_rows_largest_values_best_first(mat: np.ndarray, m: int) -> None:
    """row_tops gives, per row, min(m, columns) distinct columns holding the row's largest
    values, in non-increasing order."""
    tops = row_tops(mat, m)
    assert len(tops) == mat.shape[0]
    for row, cols in zip(mat, tops, strict=True):
        want = min(m, mat.shape[1])
        assert len(cols) == len(set(cols)) == want
        values = [float(row[j]) for j in cols]
        assert values == sorted(values, reverse=True)
        assert sorted(values) == sorted(float(v) for v in np.sort(row)[::-1][:want])


@given(
    seed=st.integers(0, 2**32 - 1),
    width=st.integers(2, 300),
    places=st.lists(st.integers(0, 299), min_size=2, max_size=6, unique=True),
)
def test_exact_is_the_same_wherever_a_vector_sits(seed: int, width: int, places: list[int]) -> None:
    """The same vector gets bit-for-bit the same exact similarity at any column of an
    index of any width (the full product's rounding depends on the column), and untie()
    makes its copies tie while leaving values that are not near a tie alone."""
    rng = np.random.default_rng(seed)
    places = [p for p in places if p < width] or [0, width - 1]
    vectors = _unit(rng.standard_normal((width, 384)))
    vectors[places] = vectors[places[0]]
    query = _unit(rng.standard_normal((1, 384)))[0]
    index = ActiveIndex()
    index.add([f"m{i}" for i in range(width)], vectors)
    alone = ActiveIndex()
    alone.add(["v"], vectors[places[:1]])
    exact = index.exact(query, places)
    assert set(exact.tolist()) == set(alone.exact(query, [0]).tolist())
    assert abs(exact[0] - float(vectors[places[0]] @ query)) < 1e-6

    scores = index.scores(query)
    sims = {f"m{i}": float(scores[i]) for i in range(width)}
    before = dict(sims)
    untie(query, [index], sims)
    assert len({sims[f"m{p}"] for p in places}) == 1
    for m, value in before.items():
        if sum(abs(value - other) < NEAR_TIE for other in before.values()) == 1:  # only itself
            assert sims[m] == value


@pytest.mark.parametrize("kind", ["exact", "sketch"])
def test_an_adopted_matrix_is_the_index_storage_and_changes_like_a_copy(kind: str) -> None:
    """``add(..., adopt=True)`` on an empty index keeps the caller's matrix as its rows
    (no copy), and the index then searches, grows, replaces and removes exactly as one
    given a copy does."""
    from oblivion_core.sketch import SketchIndex

    cls = ActiveIndex if kind == "exact" else SketchIndex
    rng = np.random.default_rng(3)
    vecs = _unit(rng.standard_normal((40, 8)))
    ids = [f"m{k}" for k in range(40)]
    adopted, copied = cls(8), cls(8)
    given_rows = vecs.copy()
    adopted.add(ids, given_rows, adopt=True)
    copied.add(ids, vecs.copy())
    assert adopted._rows is given_rows
    more = _unit(rng.standard_normal((30, 8)))
    for index in (adopted, copied):
        index.add([f"n{k}" for k in range(30)], more)  # grows past the adopted rows
        index.add(["m3"], more[:1])  # replaces one
        index.remove(["m0", "n5", "m39"])
    assert adopted.ids == copied.ids
    assert np.array_equal(adopted.rows(), copied.rows())
    for q in _unit(rng.standard_normal((5, 8))):
        (a_ids, a_sims), (c_ids, c_sims) = adopted.search(q, 7), copied.search(q, 7)
        assert a_ids == c_ids
        assert np.array_equal(a_sims, c_sims)


@pytest.mark.parametrize(
    "make",
    [
        lambda v: v.astype(np.float64),  # another dtype
        lambda v: np.asfortranarray(v),  # not C-ordered
        lambda v: np.frombuffer(v.tobytes(), np.float32).reshape(v.shape),  # read-only
    ],
    ids=["float64", "fortran", "read-only"],
)
def test_a_matrix_that_cannot_be_the_storage_is_copied(make: object) -> None:
    """``adopt`` takes only a writable float32 C-ordered matrix; any other is copied
    (the index must be able to write its rows)."""
    vecs = _unit(np.random.default_rng(4).standard_normal((12, 8)))
    given_rows = make(vecs)  # type: ignore[operator]
    index = ActiveIndex(8)
    index.add([f"m{k}" for k in range(12)], given_rows, adopt=True)
    assert index._rows is not given_rows
    assert index._rows.flags.writeable and index._rows.dtype == np.float32
    assert np.allclose(index.rows(), vecs)
    index.remove(["m0"])  # moves the last row into its place
    assert np.allclose(index.rows()[0], vecs[11])
