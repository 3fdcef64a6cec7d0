"""Where an exact in-memory search stops beating Chroma's query: the size behind
``Oblivion.EXACT_ARCHIVE_ROWS``.

For each size, the same vectors (the latency benchmark's corpus, all-MiniLM-L6-v2) go into
a raw Chroma collection (cosine HNSW, Chroma's defaults) and into an
:class:`~oblivion_core.index.ActiveIndex`. Each query is embedded with the real model
right before it is searched, as in a recall (the embedding evicts the caches the
product reads), and the two searches alternate which goes first. Chroma is asked for
100 candidates, as deep recall asks it (the active memories it also returns must not
crowd out the archived ones); the exact index for 50 (the policy's candidate pool),
which is all recall takes from it.

Reproduce: ``python bench/exact_archive.py`` (about 3 minutes; the corpus vectors come
from the latency benchmark's cache, or are embedded first); writes
``bench/results/exact_archive.json``.
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
    alternating,
    sweep_args,
    sweep_inputs,
    timing,
    write_results,
)
from latency import filled_collection

from oblivion_core import Oblivion
from oblivion_core.index import ActiveIndex

HERE = Path(__file__).resolve().parent
SIZES = (4_096, 8_192, 16_384, 32_768, 65_536)


def measure(size: int, vectors: np.ndarray, real: Any, queries: list[str]) -> dict[str, Any]:
    """Median and p95 of both searches over the first ``size`` vectors."""
    ids = [str(i) for i in range(size)]
    mat = np.ascontiguousarray(vectors[:size], dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        col = filled_collection(Path(tmp), ids, mat)
        index = ActiveIndex()
        index.add(ids, mat)
        chroma: list[float] = []
        exact: list[float] = []

        def run_chroma(vec: np.ndarray) -> None:
            started = time.perf_counter()
            col.query(query_embeddings=vec.reshape(1, -1), n_results=100, include=["distances"])
            chroma.append((time.perf_counter() - started) * 1e3)

        def run_exact(vec: np.ndarray) -> None:
            started = time.perf_counter()
            index.search(vec, 50)
            exact.append((time.perf_counter() - started) * 1e3)

        # untimed first searches: ActiveIndex's first one builds its copies (0.5-1.6 s),
        # which with few --queries was the p95
        warm = mat[0]
        index.search(warm, 50)
        col.query(query_embeddings=warm.reshape(1, -1), n_results=100, include=["distances"])
        for search, vec in alternating(real, queries, f"{size:,} rows", run_chroma, run_exact):
            search(vec)
    out: dict[str, Any] = {"rows": size}
    out["chroma_n100"], out["exact_top50"] = timing(chroma), timing(exact)
    out["ratio_median"] = out["exact_top50"]["median_ms"] / out["chroma_n100"]["median_ms"]
    return out


def table(results: dict[str, Any]) -> str:
    """The README table."""
    lines = [
        "| Rows | Chroma query, n=100, median / p95 | exact search, top 50, median / p95 "
        "| exact / Chroma |",
        "|---:|---:|---:|---:|",
    ]
    for r in results["sizes"]:
        c, e = r["chroma_n100"], r["exact_top50"]
        lines.append(
            f"| {r['rows']:,} | {c['median_ms']:.2f} / {c['p95_ms']:.2f} ms "
            f"| {e['median_ms']:.2f} / {e['p95_ms']:.2f} ms | {r['ratio_median']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sweep_args(__doc__, HERE / "results" / "exact_archive.json", 100, argv, table)
    if args is None:
        return 0
    n = max(SIZES)
    real, vectors, queries = sweep_inputs(args.queries)
    results: dict[str, Any] = {
        "queries": args.queries,
        "limit_in_use": Oblivion.EXACT_ARCHIVE_ROWS,
        "sizes": [measure(size, vectors[:n], real, queries) for size in SIZES],
    }
    write_results(args.out, results, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
