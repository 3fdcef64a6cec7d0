"""The active index's two-stage search against one product over every row, by size:
the figures behind ``oblivion_core.index.TWO_STAGE_ROWS``.

For each size, the latency benchmark's corpus vectors (all-MiniLM-L6-v2) go into an
:class:`~oblivion_core.index.ActiveIndex`. Each query is embedded with the real model
right before it is searched, as in a recall (the embedding evicts the caches the
products read), and the two searches alternate which goes first. Both take the best 50
(the policy's candidate pool) with ties by write number, as recall does; the script
checks they return the same memories and counts the rows the second stage multiplied.

Reproduce: ``python bench/two_stage.py`` (about 2 minutes; the corpus vectors come
from the latency benchmark's cache, or are embedded first); writes
``bench/results/two_stage.json``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import (
    sweep_args,
    sweep_inputs,
    timing,
    write_results,
)

import oblivion_core.index as index_module
from oblivion_core.index import TWO_STAGE_ROWS, ActiveIndex

HERE = Path(__file__).resolve().parent
SIZES = (4_096, 8_192, 15_000, 32_768)
K = 50


def measure(size: int, vectors: np.ndarray, real: Any, queries: list[str]) -> dict[str, Any]:
    """Medians and p95 of both searches over the first ``size`` vectors."""
    index = ActiveIndex()
    index.add([f"m{i}" for i in range(size)], np.ascontiguousarray(vectors[:size]))

    def seqs(ids: list[str]) -> np.ndarray:
        return np.asarray([int(m[1:]) for m in ids], dtype=np.int64)

    one: list[float] = []
    two: list[float] = []
    rows: list[int] = []
    same = 0
    index.nearest(vectors[0], K, seqs)  # the basis is made on the first search

    for k, q in enumerate(tqdm(queries, desc=f"{size:,} rows", unit="q", leave=False)):
        vec = np.asarray(real.embed_query(q), dtype=np.float32)
        results = {}
        for name in ("one", "two") if k % 2 else ("two", "one"):
            real.embed_query(f"{q} ({name})")  # evicts the caches, as a recall's embedding
            started = time.perf_counter()
            if name == "one":
                results[name] = index.top(index.scores(vec), K, seqs)[0]
                one.append((time.perf_counter() - started) * 1e3)
            else:
                ids, _, known = index.nearest(vec, K, seqs)
                two.append((time.perf_counter() - started) * 1e3)
                results[name] = ids
                rows.append(int(np.count_nonzero(~np.isnan(known))))
        same += sorted(results["one"]) == sorted(results["two"])
    out: dict[str, Any] = {"rows": size, "same_top": same, "queries": len(queries)}
    out["one_product"], out["two_stage"] = timing(one), timing(two)
    out["multiplied_rows"] = {
        "median": float(np.median(rows)),
        "p95": float(np.percentile(rows, 95)),
    }
    out["ratio_median"] = out["two_stage"]["median_ms"] / out["one_product"]["median_ms"]
    return out


def table(results: dict[str, Any]) -> str:
    """The README table."""
    lines = [
        "| Rows | one product + top 50, median / p95 | two-stage, median / p95 "
        "| rows multiplied in full, median / p95 | same top 50 | two-stage / one |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["sizes"]:
        o, t, m = r["one_product"], r["two_stage"], r["multiplied_rows"]
        lines.append(
            f"| {r['rows']:,} | {o['median_ms']:.2f} / {o['p95_ms']:.2f} ms "
            f"| {t['median_ms']:.2f} / {t['p95_ms']:.2f} ms | {m['median']:.0f} / {m['p95']:.0f} "
            f"| {r['same_top']}/{r['queries']} | {r['ratio_median']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sweep_args(__doc__, HERE / "results" / "two_stage.json", 200, argv, table)
    if args is None:
        return 0
    real, vectors, queries = sweep_inputs(args.queries)
    results: dict[str, Any] = {
        "k": K,
        "two_stage_rows": TWO_STAGE_ROWS,
        "note": "below two_stage_rows recall uses one product; here both run at every size",
        "sizes": [],
    }
    index_module.TWO_STAGE_ROWS = 0  # both searches at every size, to show the crossover
    for size in SIZES:
        results["sizes"].append(measure(size, vectors, real, queries))
    write_results(args.out, results, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
