"""Property: invalidation only ever lowers activation, anywhere in the link graph."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core.testing import memory

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
]


@settings(max_examples=20, deadline=None)
@given(
    n=st.integers(2, 8),
    links=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 7), st.floats(0.05, 1.0)), max_size=20
    ),
    target=st.integers(0, 7),
)
def test_invalidation_never_raises_any_activation(
    n: int, links: list[tuple[int, int, float]], target: int
) -> None:
    """After invalidate(), no memory's activation is higher than it was just before."""
    mem = memory()
    ids = [mem.remember(f"{WORDS[k]} note {k}").id for k in range(n)]
    for a, b, w in links:
        if a < n and b < n and a != b:
            mem.link(ids[a], ids[b], w)
    before = {r.id: r.activation for r in mem.records()}
    mem.invalidate(ids[target % n])
    after = {r.id: r.activation for r in mem.records()}
    assert all(after[i] <= before[i] + 1e-12 for i in ids)
    assert after[ids[target % n]] == 0.0
