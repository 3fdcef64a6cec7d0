"""``Oblivion._chain_heads``: every chain walked once gives what one walk per memory
gives (the walk ``_chain_head`` made before it became one call of ``_chain_heads``),
cycles, invalidated, cold and deleted successors included."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core.engine import Oblivion
from oblivion_core.records import Tier


def _one_walk(state: Any, memory_id: str, cold: bool) -> str:
    """The newest valid memory of ``memory_id``'s chain, walked from it (cycle-safe)."""
    seen = {memory_id}
    head = node = memory_id
    while node in state.superseded_by:
        nxt = state.superseded_by[node]
        if nxt in seen or nxt not in state.index:
            break
        seen.add(nxt)
        node = nxt
        j = state.index[node]
        if not state.cols["invalidated"][j] and (cold or state.cols["tier"][j] != Tier.COLD):
            head = node
    return head


@given(
    n=st.integers(1, 12),
    edges=st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14)), max_size=20),
    invalid=st.lists(st.booleans(), min_size=12, max_size=12),
    cold=st.lists(st.booleans(), min_size=12, max_size=12),
    show_cold=st.booleans(),
)
def test_heads_equal_one_walk_per_memory(
    n: int, edges: list[tuple[int, int]], invalid: list[bool], cold: list[bool], show_cold: bool
) -> None:
    ids = [f"m{i}" for i in range(n)]
    state = SimpleNamespace(
        index={m: i for i, m in enumerate(ids)},  # m12..m14: deleted successors
        superseded_by={f"m{a}": f"m{b}" for a, b in edges if a < n and a != b},
        cols={
            "invalidated": np.asarray(invalid[:n]),
            "tier": np.asarray([int(Tier.COLD if c else Tier.ARCHIVE) for c in cold[:n]]),
        },
    )
    heads = Oblivion._chain_heads(state, ids, show_cold)  # type: ignore[arg-type]
    assert heads == {m: _one_walk(state, m, show_cold) for m in ids}
    for m in ids:  # one at a time, as most callers ask
        assert Oblivion._chain_head(state, m, show_cold) == heads[m]  # type: ignore[arg-type]


def test_a_long_chain_is_walked_once() -> None:
    """4,000 statements of one fact: every head in one pass (one walk each took
    seconds); the newest statement heads them all."""
    ids = [f"m{i}" for i in range(4_000)]
    state = SimpleNamespace(
        index={m: i for i, m in enumerate(ids)},
        superseded_by={ids[i]: ids[i + 1] for i in range(len(ids) - 1)},
        cols={"invalidated": np.zeros(len(ids), bool), "tier": np.zeros(len(ids), np.int8)},
    )
    heads = Oblivion._chain_heads(state, ids)  # type: ignore[arg-type]
    assert set(heads.values()) == {ids[-1]}
