"""The latency benchmark's tiering sweep builds the engine's private state directly (a
million ``remember()`` calls would measure ingest); it must still match the core's layout,
or ``python bench/latency.py`` fails after an hour of loading."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def tiering() -> object:
    sys.path.insert(0, str(BENCH))
    try:
        import _latency_tiering
    finally:
        sys.path.remove(str(BENCH))
    return _latency_tiering


def test_the_bulk_filled_state_matches_append(tiering: object) -> None:
    """The bench's bulk fill gives what ``NamespaceState.append`` gives, column by column."""
    tiering._check_bulk_fill()  # type: ignore[attr-defined]


def test_a_small_tiering_sweep_runs(tiering: object) -> None:
    """The sweep runs end to end on a small state and reports every timing."""
    result = tiering.run_tiering(2_000, 1, seed=0)  # type: ignore[attr-defined]
    assert result["n"] == 2_000
    assert 0 < result["active"] < 2_000
    assert result["active_with_capacity"] <= result["active"]
    assert "maintain_dry_run" in result["cases"]
    for case in result["cases"].values():
        assert case["runs"] == 1 and case["median_ms"] > 0
