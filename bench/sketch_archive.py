"""The sketch copy of a large archive against Chroma's query: time and what each finds
(``Oblivion.SKETCH_ARCHIVE_ROWS``, :mod:`oblivion_core.sketch`).

For each size, the same vectors (the latency benchmark's corpus, all-MiniLM-L6-v2) go
into a raw Chroma collection (cosine HNSW, Chroma's defaults) and into a
:class:`~oblivion_core.sketch.SketchIndex`. Each query is embedded with the real model
right before it is searched, as in a recall (the embedding evicts the caches the search
reads), and the two searches alternate which goes first. Chroma is asked for 100
candidates, as deep recall asks it (the active memories it also returns must not crowd
out the archived ones); the sketch copy for 50 (the policy's candidate pool), which is
all recall takes from it. What each found is compared, untimed, with the exact best 50
and best 10 of one product over every row.

Reproduce: ``python bench/sketch_archive.py`` (about 4 minutes; the corpus vectors come
from the latency benchmark's cache, or are embedded first); writes
``bench/results/sketch_archive.json``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import (
    LATENCY_CORPUS,
    alternating,
    sweep_args,
    sweep_inputs,
    timing,
    write_results,
)
from latency import filled_collection

from oblivion_core import Oblivion
from oblivion_core.sketch import SketchIndex

HERE = Path(__file__).resolve().parent
SIZES = (32_768, 65_536, LATENCY_CORPUS)
POOL = 50  # the balanced policy's candidate pool: what recall takes from the archive


def _found(got: list[int], want: np.ndarray) -> float:
    """Share of ``want`` (exact best rows) among ``got``."""
    return len(set(got) & set(want.tolist())) / len(want)


def measure(size: int, vectors: np.ndarray, real: Any, queries: list[str]) -> dict[str, Any]:
    """Times, rows multiplied and shares of the exact best found, over the first
    ``size`` vectors."""
    ids = [str(i) for i in range(size)]
    mat = np.ascontiguousarray(vectors[:size], dtype=np.float32)
    started = time.perf_counter()
    index = SketchIndex()
    index.add(ids, mat)
    build_s = time.perf_counter() - started
    out: dict[str, Any] = {"rows": size, "sketch_build_seconds": build_s}
    times: dict[str, list[float]] = {"chroma": [], "sketch": []}
    found: dict[str, list[float]] = {
        "chroma@50": [],
        "chroma@10": [],
        "sketch@50": [],
        "sketch@10": [],
    }
    multiplied: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        col = filled_collection(Path(tmp), ids, mat)

        def run_chroma(vec: np.ndarray) -> tuple[str, list[int]]:
            started = time.perf_counter()
            res = col.query(
                query_embeddings=vec.reshape(1, -1), n_results=100, include=["distances"]
            )
            times["chroma"].append((time.perf_counter() - started) * 1e3)
            return "chroma", [int(m) for m in res["ids"][0]][:POOL]

        def run_sketch(vec: np.ndarray) -> tuple[str, list[int]]:
            started = time.perf_counter()
            got_ids, _, known = index.nearest(vec, POOL)
            times["sketch"].append((time.perf_counter() - started) * 1e3)
            multiplied.append(int(np.count_nonzero(~np.isnan(known))))
            return "sketch", [int(m) for m in got_ids]

        for search, vec in alternating(real, queries, f"{size:,} rows", run_chroma, run_sketch):
            side, got = search(vec)
            # the exact best, after the timed search (its product would warm the caches
            # for it)
            best = np.argsort(-(mat @ vec), kind="stable")[:POOL]
            found[f"{side}@50"].append(_found(got, best))
            found[f"{side}@10"].append(_found(got[:10], best[:10]))
    out["chroma_n100"], out["sketch_top50"] = timing(times["chroma"]), timing(times["sketch"])
    out["ratio_median"] = out["sketch_top50"]["median_ms"] / out["chroma_n100"]["median_ms"]
    out["found"] = {key: float(np.mean(v)) for key, v in found.items()}
    out["found_all_50"] = {
        side: float(np.mean(np.asarray(found[f"{side}@50"]) == 1.0))
        for side in ("chroma", "sketch")
    }
    out["rows_multiplied"] = {
        "median": float(np.median(multiplied)),
        "p95": float(np.percentile(multiplied, 95)),
    }
    return out


def table(results: dict[str, Any]) -> str:
    """The README table."""
    lines = [
        "| Rows | Chroma query, n=100, median / p95 | sketch copy, top 50, median / p95 "
        "| sketch / Chroma | best 50 found: Chroma / sketch | best 10 found: Chroma / sketch "
        "| rows multiplied, median |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["sizes"]:
        c, s, f = r["chroma_n100"], r["sketch_top50"], r["found"]
        lines.append(
            f"| {r['rows']:,} | {c['median_ms']:.2f} / {c['p95_ms']:.2f} ms "
            f"| {s['median_ms']:.2f} / {s['p95_ms']:.2f} ms | {r['ratio_median']:.2f}x "
            f"| {100 * f['chroma@50']:.1f} / {100 * f['sketch@50']:.2f} % "
            f"| {100 * f['chroma@10']:.1f} / {100 * f['sketch@10']:.2f} % "
            f"| {r['rows_multiplied']['median']:,.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sweep_args(__doc__, HERE / "results" / "sketch_archive.json", 200, argv, table)
    if args is None:
        return 0
    real, vectors, queries = sweep_inputs(args.queries)
    results: dict[str, Any] = {
        "queries": args.queries,
        "limits_in_use": {
            "exact": Oblivion.EXACT_ARCHIVE_ROWS,
            "sketch": Oblivion.SKETCH_ARCHIVE_ROWS,
        },
        "sizes": [measure(size, vectors, real, queries) for size in SIZES],
    }
    write_results(args.out, results, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
