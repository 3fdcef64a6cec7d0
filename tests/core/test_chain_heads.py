"""``Oblivion._chain_heads``: every chain walked once gives what one walk per memory
(``_chain_head``) gives, cycles, invalidated, cold and deleted successors included."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core.engine import Oblivion
from oblivion_core.records import Tier


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
    assert heads == {m: Oblivion._chain_head(state, m, show_cold) for m in ids}  # type: ignore[arg-type]


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
