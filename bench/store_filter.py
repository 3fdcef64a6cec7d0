"""The LangGraph store's filtered search against LangGraph's own ``InMemoryStore``.

The same items (the latency corpus's texts, each value ``{"text": ..., "kind": ...}``)
go into an ``OblivionStore`` and into an ``InMemoryStore`` with an index on ``text``,
both embedding with ``oblivion_core.testing.HashEmbedder`` (384 dimensions, no model:
what is timed is the stores, not an embedding). Each query is a ``search(ns,
query=..., filter=..., limit=5)`` on both, and a listing the same without the query,
taking turns going first; medians.

Reproduce: ``python bench/store_filter.py`` (about a minute); writes
``bench/results/store_filter.json``.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import bench_args, memory_texts, query_texts, write_results
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from oblivion_core import ManualClock, Oblivion
from oblivion_core.testing import HashEmbedder
from oblivion_langchain import OblivionStore

HERE = Path(__file__).resolve().parent
NS = ("users", "sam")
#: Every ``RARE``-th item is "rare": the filters pass 1 in RARE, all but that, or all.
RARE = 500
FILTERS = {
    f"1 in {RARE} pass": {"kind": "rare"},
    f"{RARE - 1} in {RARE} pass": {"kind": "common"},
    "no filter": None,
}
#: A search with a query (ranked by relevance), and one without (a listing: LangGraph's
#: stores order it by their own rule, Oblivion's by activation).
MODES = {"query": True, "listing": False}


def measure(items: int, queries: int) -> dict[str, Any]:
    """Median milliseconds of each filter's searches on both stores."""
    embedder = HashEmbedder(dim=384)
    texts = memory_texts(items, 20_261_206)
    puts = [
        PutOp(NS, f"k{i}", {"text": t, "kind": "rare" if i % RARE == 0 else "common"})
        for i, t in enumerate(texts)
    ]
    asked = query_texts(queries, 20_261_207)
    results: dict[str, Any] = {"items": items, "queries": queries, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        engine = Oblivion(tmp, embedder=embedder, clock=ManualClock())
        ours = OblivionStore(engine, index={"fields": ["text"]})
        theirs = InMemoryStore(
            index={"dims": 384, "embed": embedder.embed_documents, "fields": ["text"]}
        )
        for store in (ours, theirs):
            for start in tqdm(range(0, items, 1_000), desc="filling a store", unit="batch"):
                store.batch(puts[start : start + 1_000])
        for (mode, queried), (label, flt) in itertools.product(MODES.items(), FILTERS.items()):
            timed: dict[str, list[float]] = {"oblivion": [], "in_memory": []}
            for k, q in enumerate(tqdm(asked, desc=f"{mode}, {label}", unit="q", leave=False)):
                order = [("oblivion", ours), ("in_memory", theirs)]
                for name, store in order if k % 2 else order[::-1]:
                    started = time.perf_counter()
                    store.search(NS, query=q if queried else None, filter=flt, limit=5)
                    timed[name].append((time.perf_counter() - started) * 1e3)
            ours_ms = statistics.median(timed["oblivion"])
            theirs_ms = statistics.median(timed["in_memory"])
            results["rows"].append(
                {
                    "search": mode,
                    "filter": label,
                    "oblivion_ms": ours_ms,
                    "in_memory_ms": theirs_ms,
                    "ratio": ours_ms / theirs_ms,
                }
            )
        engine.close()
    return results


def table(results: dict[str, Any]) -> str:
    """The README's table."""
    lines = [
        f"{results['items']:,} items, {results['queries']} queries, `limit=5`, medians",
        "",
        "| search | filter | `InMemoryStore.search` | `OblivionStore.search` | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for r in results["rows"]:
        lines.append(
            f"| {r['search']} | {r['filter']} | {r['in_memory_ms']:.2f} ms "
            f"| {r['oblivion_ms']:.2f} ms "
            f"| {r['ratio']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = bench_args(
        __doc__,
        HERE / "results" / "store_filter.json",
        argv,
        table,
        items=(5_000, "items in the namespace"),
        queries=(40, "queries per filter"),
    )
    if args is None:
        return 0
    write_results(args.out, measure(args.items, args.queries), table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
