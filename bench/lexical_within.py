"""BM25 within the active tier (``LexicalIndex.search(allow=DocSet)``), by size: the
figures behind ``oblivion_core.doc_set``.

Recall with ``deep=False`` ranks BM25 over the active tier's memories only (idf still
over the whole namespace). The lexical index keeps which of its documents are in the
set, by its own slots, and brings that up to date from the set's log of changes. For
each size, the latency benchmark's memory texts go into a
:class:`~oblivion_core.lexical.LexicalIndex` and a seeded 15 % of them (the benchmark's
active share) into a :class:`~oblivion_core.doc_set.DocSet`. Each
query is searched three ways, each right after a query embedding with the real model
(which evicts the caches, as in a recall), best 50 as recall asks. Each term's BM25
values over the whole index are computed first, untimed: the index keeps them until it
next changes, so a run of recalls computes each term once whatever the set.

* ``set changed``: one memory entered the set just before (a promotion);
* ``set kept``: the same search again, the set unchanged;
* ``whole namespace``: no set (what ``deep=True`` ranks), the plain search to compare.

The first two must return the same memories; the script counts it.

Reproduce: ``python bench/lexical_within.py`` (about a minute); writes
``bench/results/lexical_within.json``.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import (
    LATENCY_SEED,
    memory_texts,
    query_texts,
    sweep_args,
    timing,
    write_results,
)

from oblivion_core import FastEmbedEmbedder
from oblivion_core.doc_set import DocSet
from oblivion_core.lexical import LexicalIndex

HERE = Path(__file__).resolve().parent
SIZES = (10_000, 100_000)
ACTIVE_SHARE = 0.15
K = 50


def measure(texts: list[str], real: Any, queries: list[str]) -> dict[str, Any]:
    """Medians and p95 of the three searches over ``texts``."""
    rows = list(enumerate(texts))
    lex = LexicalIndex(lambda ns: rows)
    lex.search("ns", "warm", 1)  # builds the index
    rng = random.Random(LATENCY_SEED)
    chosen = rng.sample(range(len(texts)), int(ACTIVE_SHARE * len(texts)))
    active = DocSet()
    active.add(np.asarray(sorted(chosen), dtype=np.int64))
    outside = sorted(set(range(len(texts))) - set(chosen))
    times: dict[str, list[float]] = {"set changed": [], "set kept": [], "whole namespace": []}
    same = 0
    for q in tqdm(queries, desc=f"{len(texts):,} memories", unit="q", leave=False):
        active.add(np.asarray([outside.pop(rng.randrange(len(outside)))], dtype=np.int64))
        lex.search("ns", q, K)  # each term's values over the index, as kept between recalls
        found = {}
        for name, allow in (
            ("set changed", active),
            ("set kept", active),
            ("whole namespace", None),
        ):
            real.embed_query(f"{q} ({name})")  # evicts the caches, as a recall's embedding
            started = time.perf_counter()
            found[name] = lex.search("ns", q, K, allow)
            times[name].append((time.perf_counter() - started) * 1e3)
        same += found["set changed"] == found["set kept"]
    out: dict[str, Any] = {"memories": len(texts), "in_set": len(chosen), "same": same}
    out["queries"] = len(queries)
    out.update({name: timing(samples) for name, samples in times.items()})
    whole = out["whole namespace"]["median_ms"]
    out["ratio_changed"] = out["set changed"]["median_ms"] / whole
    out["ratio_kept"] = out["set kept"]["median_ms"] / whole
    return out


def table(results: dict[str, Any]) -> str:
    """The README table."""
    lines = [
        "| Memories (in the set) | set changed, median / p95 | set kept, median / p95 "
        "| whole namespace, median / p95 | changed / whole | kept / whole | same results |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results["sizes"]:
        c, k, w = r["set changed"], r["set kept"], r["whole namespace"]
        lines.append(
            f"| {r['memories']:,} ({r['in_set']:,}) "
            f"| {c['median_ms']:.3f} / {c['p95_ms']:.3f} ms "
            f"| {k['median_ms']:.3f} / {k['p95_ms']:.3f} ms "
            f"| {w['median_ms']:.3f} / {w['p95_ms']:.3f} ms "
            f"| {r['ratio_changed']:.2f}x | {r['ratio_kept']:.2f}x | {r['same']}/{r['queries']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sweep_args(__doc__, HERE / "results" / "lexical_within.json", 300, argv, table)
    if args is None:
        return 0
    real = FastEmbedEmbedder()
    texts = memory_texts(max(SIZES), LATENCY_SEED)
    queries = query_texts(args.queries, LATENCY_SEED + 2)
    results: dict[str, Any] = {"k": K, "active_share": ACTIVE_SHARE, "sizes": []}
    for size in SIZES:
        results["sizes"].append(measure(texts[:size], real, queries))
    write_results(args.out, results, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
