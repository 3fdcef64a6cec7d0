"""Metadata and text filters: ``recall(where=..., where_document=...)`` against Chroma's
``query(where=..., where_document=...)``.

Both stores hold the same N memories of the latency benchmark's corpus (same ids, same
cached vectors, the texts as Chroma's documents), each with the same metadata: ``team``
(one of 10, so a team filter passes 10 %) and ``bucket`` (0-999, so ``{"bucket": {"$lt":
10}}`` passes 1 % and ``{"bucket": 0}`` 0.1 %). Text filters ask for a word or phrase of
the corpus ("moved" is in 6 % of the first 100k texts, "security audit" in 1 %, "sister"
in 0.15 %). The load is spread over 90 days of a manual clock, so decay archives most of
Oblivion's memories, as in ``bench/latency.py``.

Per query and filter, each side embeds the query with the real model and searches:
raw Chroma ``collection.query(query_embeddings=..., n_results=k, where=...,
where_document=...)``, and Oblivion ``recall(q, k=k, where=..., where_document=...,
deep=True)`` (the archive searched too, as Chroma searches everything; its feedback
applied untimed before the next call). The two take turns going first. Reported: medians
and p95 of the whole call and their ratio, and that every item Oblivion returned passes
the filter.

Reproduce (offline assets via ``../shared``; the corpus vectors are cached by
``bench/latency.py``'s first run, or embedded here first)::

    . ../shared/offline-env.sh
    python bench/where.py                  # N=100,000, 100 queries per filter: ~8 min
    python bench/where.py --size 20000 --queries 200
    python bench/where.py --readme-table

Results: ``bench/results/where.json``.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from oblivion_core import FastEmbedEmbedder, ManualClock, Oblivion, Policy
from oblivion_core.where import compile_where

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _latency_corpus import (
    LATENCY_CORPUS,
    LATENCY_SEED,
    PrecomputedEmbedder,
    bench_args,
    default_cache_dir,
    embed_corpus,
    memory_ids,
    memory_texts,
    query_texts,
    timing,
    write_results,
)

OUT = Path(__file__).resolve().parent / "results" / "where.json"
DAY = 86_400.0
SPAN = 90 * DAY
Filter = tuple[dict[str, Any] | None, dict[str, Any] | None]  # where, where_document
FILTERS: dict[str, Filter] = {
    "none": (None, None),
    "10 % (team)": ({"team": "team-3"}, None),
    "1 % (bucket < 10)": ({"bucket": {"$lt": 10}}, None),
    "0.1 % (bucket = 0)": ({"bucket": 0}, None),
    "6 % (text has 'moved')": (None, {"$contains": "moved"}),
    "1 % (text has 'security audit')": (None, {"$contains": "security audit"}),
    "0.15 % (text has 'sister')": (None, {"$contains": "sister"}),
}


def _metadata(n: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(7)
    teams = rng.integers(0, 10, n)
    buckets = rng.permutation(np.arange(n) % 1000)
    return [{"team": f"team-{t}", "bucket": int(b)} for t, b in zip(teams, buckets, strict=True)]


def _load(n: int, workdir: Path, pre: PrecomputedEmbedder) -> tuple[Oblivion, Any]:
    import chromadb
    from chromadb.config import Settings

    texts = memory_texts(LATENCY_CORPUS, LATENCY_SEED)[:n]
    ids, metas = memory_ids(n, LATENCY_SEED), _metadata(n)
    clock = ManualClock(1_750_000_000.0 - SPAN)
    policy = Policy.template("balanced").replace(maintain_every=0, active_capacity=n // 5)
    mem = Oblivion(
        workdir / "oblivion",
        policy=policy.replace(supersede=False),
        clock=clock,
        embedder=pre,
    )
    client = chromadb.PersistentClient(
        path=str(workdir / "raw"), settings=Settings(anonymized_telemetry=False)
    )
    col = client.create_collection(
        "raw-where", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    batch = 1_000
    for s in tqdm(range(0, n, batch), desc=f"load N={n:,}", unit="batch"):
        e = min(s + batch, n)
        mem.remember_many(texts[s:e], ids=ids[s:e], metadatas=metas[s:e])
        col.add(
            ids=ids[s:e],
            embeddings=pre.embed_documents(texts[s:e]),
            documents=texts[s:e],
            metadatas=metas[s:e],  # type: ignore[arg-type]
        )
        clock.advance(SPAN * batch / n)
    mem.set_policy(policy, reason="benchmark: load done")
    mem.maintain()
    return mem, col


def run(n: int, queries: int, k: int, scored_rows: int | None = None) -> dict[str, Any]:
    real = FastEmbedEmbedder()
    # the latency benchmark's corpus (its first n, as there), with its cached vectors
    # when that benchmark has run here; else these n are embedded (and cached)
    full = memory_texts(LATENCY_CORPUS, LATENCY_SEED)
    tag = f"{real.model_name}|{real.model_path}"
    vectors, _, cached = embed_corpus(real, full, tag, default_cache_dir(), cached_only=True)
    if not cached:
        vectors, _, _ = embed_corpus(real, full[:n], tag, default_cache_dir())
    pre = PrecomputedEmbedder(real, full[:n], vectors[:n])
    asked = query_texts(queries + 10, LATENCY_SEED + 1)
    with tempfile.TemporaryDirectory(prefix="oblivion-where-") as tmp:
        mem, col = _load(n, Path(tmp), pre)
        if scored_rows is not None:  # the size rule off: scored up to scored_rows
            mem.FILTER_SCORED_ROWS, mem.FILTER_SCORED_PER_ROOT = scored_rows, 10**9
        stats = mem.stats()
        stored = mem.records()
        meta, text = {r.id: r.metadata for r in stored}, {r.id: r.text for r in stored}
        out: dict[str, Any] = {
            "n": n,
            "k": k,
            "queries": queries,
            "active": stats["active"],
            "archive": stats["archive"],
            "filter_scored_rows": mem._scored_limit(stats["memories"]),
            "filters": {},
        }

        def raw(q: str, where: Filter) -> tuple[float, list[str]]:
            started = time.perf_counter()
            vec = np.asarray(real.embed_query(q), dtype=np.float32).reshape(1, -1)
            res = col.query(
                query_embeddings=vec,
                n_results=k,
                where=where[0],
                where_document=where[1],  # type: ignore[arg-type]
                include=["distances"],
            )
            return time.perf_counter() - started, list(res["ids"][0])

        def obl(q: str, where: Filter) -> tuple[float, list[str]]:
            started = time.perf_counter()
            res = mem.recall(q, k=k, where=where[0], where_document=where[1], deep=True)
            took = time.perf_counter() - started
            mem._lock.settle()  # its feedback, untimed
            return took, res.ids

        for label, where in FILTERS.items():
            passes = compile_where(*where)
            # warm-up; Oblivion's first recall with a filter scans the metadata
            first_ms = obl(asked[0], where)[0] * 1000.0
            for q in asked[1:10]:
                raw(q, where)
                obl(q, where)
            times: dict[str, list[float]] = {"raw": [], "oblivion": []}
            found: dict[str, list[int]] = {"raw": [], "oblivion": []}
            failed = 0
            gc.collect()
            for i, q in enumerate(tqdm(asked[10:], desc=label, unit="q", leave=False)):
                order = (("raw", raw), ("oblivion", obl))
                for side, call in order if i % 2 else order[::-1]:
                    took, ids = call(q, where)
                    times[side].append(took * 1000.0)
                    found[side].append(len(ids))
                    if side == "oblivion" and passes is not None:
                        failed += sum(not passes(meta[m], text[m]) for m in ids)
            if failed:
                raise RuntimeError(f"{failed} items did not pass {where}")
            out["filters"][label] = {
                "where": where[0],
                "where_document": where[1],
                "raw": timing(times["raw"]),
                "oblivion": timing(times["oblivion"]),
                "first_recall_ms": first_ms,
                "ratio_median": float(np.median(times["oblivion"]) / np.median(times["raw"])),
                "items_per_query": {s: float(np.mean(v)) for s, v in found.items()},
            }
        mem.close()
    return out


def table(results: dict[str, Any]) -> str:
    lines = [
        f"N = {results['n']:,} memories ({results['active']:,} active, "
        f"{results['archive']:,} archived), k = {results['k']}, "
        f"{results['queries']} queries, filters that at most "
        f"{results['filter_scored_rows']:,} memories pass scored in full; medians (p95), "
        "query embedding included",
        "",
        "| filter passes | raw Chroma `query(where= / where_document=)` "
        "| Oblivion `recall(where= / where_document=, deep=True)` | ratio "
        "| Oblivion's first recall with the filter (scans the metadata or texts) |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, r in results["filters"].items():
        # unfiltered, the first recall is the store's first deep recall: not a filter's
        plain = r["where"] is None and r.get("where_document") is None
        first = "-" if plain else f"{r['first_recall_ms']:.0f} ms"
        lines.append(
            f"| {label} | {r['raw']['median_ms']:.2f} ms ({r['raw']['p95_ms']:.2f}) | "
            f"{r['oblivion']['median_ms']:.2f} ms ({r['oblivion']['p95_ms']:.2f}) | "
            f"{r['ratio_median']:.2f}x | {first} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = bench_args(
        __doc__ or "",
        OUT,
        argv,
        table,
        size=(100_000, "memories"),
        queries=(100, "timed queries per filter"),
        k=(10, "results per query"),
        scored_rows=(
            -1,
            "score filters that at most this many memories pass, whatever the store's "
            "size (-1: Oblivion's rule)",
        ),
    )
    if args is None:
        return
    rows = args.scored_rows if args.scored_rows >= 0 else None
    write_results(args.out, run(args.size, args.queries, args.k, rows), table)


if __name__ == "__main__":
    main()
