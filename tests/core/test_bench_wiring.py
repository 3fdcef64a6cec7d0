"""Pieces of the benchmarks. The latency benchmark's tiering sweep builds the engine's
private state directly (a million ``remember()`` calls would measure ingest); it must
still match the core's layout, or ``python bench/latency.py`` fails after an hour of
loading. Its ratio intervals are what the README reads the targets against. The text
rules benchmark must compare the same reading of every text."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(name: str) -> object:
    """The bench module ``name`` (bench/ is not a package)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def tiering() -> object:
    return _bench("_latency_tiering")


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


@pytest.fixture(scope="module")
def latency() -> object:
    return _bench("latency")


def test_the_ratio_interval_holds_the_ratio_and_narrows_with_less_noise(latency: object) -> None:
    """The bootstrap interval of a median (or p95) ratio holds the ratio of the samples
    and narrows, around the true ratio, when the same ratio is measured with less noise;
    identical sides give exactly 1."""
    rng = np.random.default_rng(7)
    raw = rng.gamma(5.0, 1.0, 300) + 4.0
    ci = latency.ratio_ci  # type: ignore[attr-defined]
    for q in (50.0, 95.0):
        noisy = raw * 1.05 + rng.normal(0.0, 1.0, 300)
        calm = raw * 1.05 + rng.normal(0.0, 0.05, 300)
        lo, hi = ci(noisy, raw, q)
        point = np.percentile(noisy, q) / np.percentile(raw, q)
        assert lo <= point <= hi
        calm_lo, calm_hi = ci(calm, raw, q)
        assert calm_hi - calm_lo < hi - lo
        assert calm_lo <= 1.05 * 1.01 and calm_hi >= 1.05 * 0.99
        assert ci(raw, raw, q) == [1.0, 1.0]


def test_the_text_rules_benchmark_compares_the_same_reading(tmp_path: Path) -> None:
    """``bench/text_rules.py`` reads texts with and without the keyword checks, finds the
    same categories, scores and parses, and puts every pattern back afterwards."""
    from oblivion_core import importance, supersession

    bench = _bench("text_rules")
    before = (supersession._NEGATED, supersession._QUANTITY, supersession.may_match)
    with bench.unchecked():  # type: ignore[attr-defined]
        assert supersession._NEGATED is not before[0]
        assert supersession.may_match("cat", ("dog",)) and importance.may_match("cat", ("dog",))
    assert (supersession._NEGATED, supersession._QUANTITY, supersession.may_match) == before
    assert not importance.may_match("cat", ("dog",))
    out = tmp_path / "text_rules.json"
    assert bench.main(["--texts", "300", "--rounds", "2", "--out", str(out)]) == 0  # type: ignore[attr-defined]
    import json

    results = json.loads(out.read_text())
    assert results["same"] is True and results["texts"] == 300
    for part in ("parse", "importance", "both"):
        assert results[part]["checked_us"] > 0 and results[part]["unchecked_us"] > 0


@pytest.mark.integration
def test_the_reopen_measure_opens_both_stores_in_new_processes(
    tmp_path: Path, real_embedder: object
) -> None:
    """The cold-start measure runs its two child processes on stores laid out as the
    latency benchmark leaves them, and reports each side's time and their ratio."""
    from oblivion_core import ManualClock, Oblivion, Tier

    latency = _bench("latency")
    reopen = _bench("_latency_reopen")
    notes = [f"note {k}: the meeting with team {k} moved to room {k + 1}" for k in range(40)]
    with Oblivion(tmp_path / "oblivion-40", clock=ManualClock(1e9), embedder=real_embedder) as mem:
        ids = [r.id for r in mem.remember_many(notes)]
        for memory_id in ids[:5]:  # archived (the benchmark's stores have an archive)
            mem.invalidate(memory_id)
        mem.maintain()
        assert mem.count() - len(mem.records(tier=Tier.ACTIVE)) >= 5
    _client, col = latency._raw_collection(tmp_path / "raw-40")  # type: ignore[attr-defined]
    col.add(
        ids=[str(k) for k in range(40)],
        embeddings=np.asarray(real_embedder.embed_documents(notes)),  # type: ignore[attr-defined]
        documents=notes,
    )
    del col, _client
    got = reopen.measure_reopen(  # type: ignore[attr-defined]
        tmp_path, 40, 1e9, 10, 5, ["which room is team 3 in?", "where do we meet?"], runs=1
    )
    assert got["n"] == 40 and got["runs"] == 1
    assert got["first_recall_s"] >= got["open_s"] > 0
    assert got["first_deep_s"] > 0 and got["raw_first_query_s"] > 0
    assert got["ratio"] == pytest.approx(got["first_recall_s"] / got["raw_first_query_s"])
    assert got["archive_search"] in (["exact"], ["chroma"])


@pytest.mark.integration
def test_a_small_metadata_filter_run_times_both_sides() -> None:
    """``bench/where.py`` end to end on 300 memories: every filter timed on both sides,
    each of Oblivion's items checked against the filter inside the run (it raises
    otherwise), and the README table rendered."""
    where = _bench("where")
    out = where.run(300, 3, 5)  # type: ignore[attr-defined]
    assert set(out["filters"]) == set(where.FILTERS)  # type: ignore[attr-defined]
    for result in out["filters"].values():
        assert result["raw"]["median_ms"] > 0 and result["oblivion"]["median_ms"] > 0
        assert result["ratio_median"] > 0
    assert out["filters"]["none"]["items_per_query"]["oblivion"] == 5
    assert "| 0.1 % (bucket = 0) |" in where.table(out)  # type: ignore[attr-defined]
    assert "| 1 % (text has 'security audit') |" in where.table(out)  # type: ignore[attr-defined]


def test_a_small_backup_run_times_both_ways_and_restores() -> None:
    """``bench/backup.py`` end to end on 400 memories: each round's backup and folder copy
    timed, the backup smaller than the store (no Chroma files), both restores timed, and
    the README table rendered."""
    backup = _bench("backup")
    out = backup.measure(400, 2)  # type: ignore[attr-defined]
    assert len(out["backup_s"]) == len(out["copytree_s"]) == 2
    assert min(out["backup_s"]) > 0 and min(out["copytree_s"]) > 0
    assert 0 < out["bytes"]["backup"] < out["bytes"]["store"]
    assert out["restore_s"] > 0 and out["reopen_s"] > 0
    assert "| 400 |" in backup.table(out)  # type: ignore[attr-defined]


@pytest.mark.integration
def test_a_small_reembedding_run_times_both_sides() -> None:
    """``bench/backup.py``'s re-embedding on 40 memories with the local model: both
    sides timed, and the second table rendered."""
    backup = _bench("backup")
    got = backup.measure_reembed(40)  # type: ignore[attr-defined]
    assert got["reembed_s"] > 0 and got["embed_s"] > 0
    assert got["ratio"] == pytest.approx(got["embed_s"] / got["reembed_s"])
    out = backup.measure(200, 1) | {"reembed": got}  # type: ignore[attr-defined]
    assert "| 40 |" in backup.table(out)  # type: ignore[attr-defined]


def test_a_small_import_run_times_each_side() -> None:
    """``bench/import_chroma.py`` end to end on 300 records: each round times both
    imports (each storing every record: asserted inside) and the raw copy, and the
    README table is rendered."""
    bench = _bench("import_chroma")
    out = bench.measure(300, 3)  # type: ignore[attr-defined]
    for side in ("import_s", "plain_import_s", "raw_copy_s"):
        assert len(out[side]) == 3 and min(out[side]) > 0
    assert out["ratio"] > 0 and out["plain_ratio"] > 0
    assert "| 300 |" in bench.table(out)  # type: ignore[attr-defined]


@pytest.mark.integration
def test_a_small_import_run_with_the_local_model() -> None:
    """The model part on 30 records: the import keeping the vectors and the one
    embedding again both store every record, and the second table is rendered."""
    bench = _bench("import_chroma")
    got = bench.measure_model(30)  # type: ignore[attr-defined]
    assert got["speedup"] == pytest.approx(got["reembed_s"] / got["kept_s"])
    out = bench.measure(100, 1) | {"model": got}  # type: ignore[attr-defined]
    assert "| 30 |" in bench.table(out)  # type: ignore[attr-defined]
