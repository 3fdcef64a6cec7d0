"""The single-threaded BLAS product of the recall path."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from oblivion_core import blas


@given(
    mat=hnp.arrays(
        np.float32,
        st.tuples(st.integers(1, 6), st.integers(1, 50)),
        elements=st.floats(-1, 1, width=32),
    ),
    data=st.data(),
)
def test_matvec_equals_the_plain_product(mat: np.ndarray, data: st.DataObject) -> None:
    """One query or a stack of them: the same numbers as numpy's own product."""
    dim = mat.shape[0]
    q = data.draw(hnp.arrays(np.float32, dim, elements=st.floats(-1, 1, width=32)))
    qs = data.draw(hnp.arrays(np.float32, (3, dim), elements=st.floats(-1, 1, width=32)))
    assert np.allclose(blas.matvec(q, mat), q.astype(np.float64) @ mat, atol=1e-5)
    assert np.allclose(blas.matvec(qs, mat), qs.astype(np.float64) @ mat, atol=1e-5)


def test_matvec_reads_a_column_slice_of_a_wider_buffer() -> None:
    """The active index multiplies a slice of spare capacity; padding never leaks in."""
    rng = np.random.default_rng(0)
    wide = rng.normal(size=(16, 100)).astype(np.float32)
    q = rng.normal(size=16).astype(np.float32)
    assert np.allclose(blas.matvec(q, wide[:, :37]), q @ wide[:, :37], atol=1e-5)


@pytest.mark.skipif(not blas.SINGLE_THREADED_BLAS, reason="numpy is not on OpenBLAS here")
def test_the_thread_count_is_put_back_after_each_product() -> None:
    """The override lasts for one product on one thread: the process's BLAS thread
    count and this thread's setting are what they were before."""
    assert blas._FOUND is not None
    setter, getter = blas._FOUND
    before = getter()
    big = np.ones((384, 20_000), dtype=np.float32)
    blas.matvec(np.ones(384, dtype=np.float32), big)
    assert getter() == before
    # this thread follows the global count again: setting 0 reports the global count
    assert setter(0) == before
    seen: list[int] = []

    def other() -> None:
        blas.matvec(np.ones(384, dtype=np.float32), big)
        seen.append(getter())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [before]


@pytest.mark.skipif(not blas.SINGLE_THREADED_BLAS, reason="numpy is not on OpenBLAS here")
def test_one_thread_holds_inside_and_is_put_back_after() -> None:
    """Inside ``one_thread`` the calling thread's BLAS (and LAPACK's ``eigh``, which the
    two-stage basis uses) runs on one thread; after it, even when what ran inside
    raised, the thread follows the process's count again."""
    assert blas._FOUND is not None
    setter, getter = blas._FOUND
    before = getter()
    with blas.one_thread():
        assert getter() == 1
        np.linalg.eigh(np.eye(64))
    assert getter() == before
    with pytest.raises(ZeroDivisionError), blas.one_thread():
        1 / 0  # noqa: B018
    assert getter() == before and setter(0) == before
    with blas.one_thread():  # nested: the inner block leaves the outer's one thread
        with blas.one_thread():
            np.linalg.eigh(np.eye(8))
        assert getter() == 1
    assert getter() == before
