"""Latency benchmark: Oblivion against raw Chroma, same embedder, same run.

Not a timed test: a reproducible measurement whose results go into the README.

What is measured
----------------
1. **recall() latency** at each corpus size N (default 10k and 100k memories). Two
   stores hold the same N synthetic memories with the same vectors: Oblivion (embedded
   Chroma + SQLite on disk) and a raw Chroma ``PersistentClient`` collection (cosine
   HNSW, like Oblivion's). For every query, each side embeds the query for real with the
   *same* :class:`FastEmbedEmbedder` instance and then searches:

   * raw: ``collection.query(query_embeddings=..., n_results=k,
     include=["documents", "distances"])``;
   * Oblivion ``active``: ``recall(q, k=k, token_budget=None, deep=False)``: the active
     tier answers, the archive is not searched;
   * Oblivion ``deep``: ``deep=True``: the Chroma archive is searched on every recall;
   * Oblivion ``gated`` (informational): ``deep=None``, the default gate decides.

   The four calls for one query run back to back in a rotating order, so drift in
   machine load hits every side alike. Reported: median and p95 latency (query
   embedding included), their ratios to raw Chroma with a 95 % bootstrap interval
   (queries resampled with their pairs of timings: how far a ratio moves with the
   queries drawn), and the same split into query embedding and the rest. Queries are
   distinct question-like strings that no side has seen (no cache); a few warm-up
   queries run first. Python's cyclic GC is frozen
   (``gc.freeze()``) during the timed loop so a collection over the benchmark's own
   data cannot land on one side. Oblivion runs with its defaults (tiktoken counting,
   feedback boosts, hybrid lexical search if the policy enables it) except
   ``maintain_every=0`` during the bulk load and an ``active_capacity`` that keeps
   ``--active-share`` of N in the active tier (memories are loaded in batches over 90
   days of a :class:`ManualClock`, so they also age, then ``maintain()`` runs once).
   A recall's feedback (boosts, spreading, promotions, journal) is applied by a worker
   right after it returns (``oblivion_core/write_behind.py``); after each timed recall
   the benchmark waits, untimed, until it is applied, so it never overlaps the next
   timed call, and reports that wait as ``feedback_after_return``.

2. **Ingest throughput** with the real embedder on both sides, into fresh stores:
   ``remember_many`` against embed + ``collection.add`` in batches of the same size, and
   single ``remember()`` against single embed + ``add``; batches alternate sides.

3. **Bulk load** (informational): the N-memory load above, with cached vectors on both
   sides, i.e. store overhead without embedding.

4. **Tiering sweep** over 1M memories' activation state, built directly in numpy (see
   ``bench/_latency_tiering.py``): ``plan_tiers`` alone, activation + plan, and the full
   ``maintain(dry_run=True)``; median of ``--tiering-runs``.

5. **Profile** (cProfile) of where Oblivion's recall time goes at the largest N, and of
   one ``remember_many`` batch.

6. **A half-life adaptation** (informational) on each N-memory store: ``maintain()``
   when the largest category adapts its half-life, ``maintain()`` with nothing to adapt,
   and, in the same run, what such a change cost before decay clocks (the activation
   sweep plus rewriting ``a_ref``/``t_ref`` of every memory of the category in SQLite).

7. **Reopen** (informational) of each N-memory store in a new process: open and first
   recall, then first deep recall, against opening the raw collection and its first
   query (``bench/_latency_reopen.py``).

The corpus is embedded once and cached (``/tmp/oblivion-bench-cache``; set
``OBLIVION_BENCH_CACHE`` or ``--cache-dir`` to move it, ``--no-cache`` to skip it).

Reproduce (from the repository root, offline assets via ``../shared``)::

    . ../shared/offline-env.sh
    python bench/latency.py                      # full run: ~7 min with cached vectors
    python bench/latency.py --quick              # smoke run
    python bench/latency.py --sizes 10000 --queries 100
    python bench/latency.py --readme-table       # Markdown table from the last results

Results: ``bench/results/latency.json`` and ``bench/results/latency.png``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import json
import os
import platform
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from oblivion_core import FastEmbedEmbedder, ManualClock, Oblivion, Policy

if __package__:
    from ._latency_corpus import (
        PrecomputedEmbedder,
        default_cache_dir,
        embed_corpus,
        memory_ids,
        memory_texts,
        query_texts,
    )
    from ._latency_reopen import measure_reopen
    from ._latency_tiering import run_tiering
else:  # run as a script: bench/ is on sys.path
    from _latency_corpus import (
        PrecomputedEmbedder,
        default_cache_dir,
        embed_corpus,
        memory_ids,
        memory_texts,
        query_texts,
    )
    from _latency_reopen import measure_reopen
    from _latency_tiering import run_tiering

ROOT = Path(__file__).resolve().parent
DEFAULT_OUT = ROOT / "results" / "latency.json"
DEFAULT_PNG = ROOT / "results" / "latency.png"

DAY = 86_400.0
LOAD_SPAN = 90 * DAY  # the bulk load is spread over 90 days of the manual clock
LOAD_END = 1_750_000_000.0
PROFILE_EXTRA = 1_000  # cached corpus texts kept out of the stores for the ingest profile

TARGETS = {
    "recall_active": 1.0,  # ratio to raw Chroma, strictly below
    "recall_deep": 1.10,  # ratio to raw Chroma, at most
    "ingest": 0.90,  # throughput ratio, at least
    "tiering_ms": 50.0,  # at most
}

MODES: tuple[tuple[str, bool | None], ...] = (
    ("raw", None),
    ("active", False),
    ("gated", None),
    ("deep", True),
)
MODE_LABELS = {
    "raw": "raw Chroma",
    "active": "Oblivion, active tier answers (deep=False)",
    "gated": "Oblivion, default gate (deep=None)",
    "deep": "Oblivion, archive searched (deep=True)",
}

_PACKAGES = ("chromadb", "fastembed", "onnxruntime", "numpy", "tiktoken")


# ==================================================================== configuration
@dataclass
class Config:
    """Every knob of one run (saved with the results)."""

    sizes: list[int]
    queries: int
    k: int
    warmup: int
    profile_queries: int
    active_share: float
    load_batch: int
    ingest: int
    ingest_batch: int
    single: int
    tiering_rows: int
    tiering_runs: int
    seed: int
    quick: bool
    profile: bool
    dense_variant: bool
    fast_load: bool
    cache_dir: str | None


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--sizes", default=None, help="corpus sizes, comma-separated (10000,100000)")
    p.add_argument("--queries", type=int, default=None, help="timed queries per size (200)")
    p.add_argument("--k", type=int, default=10, help="results per query (10)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up queries per side (20)")
    p.add_argument("--profile-queries", type=int, default=None, help="recalls profiled (60)")
    p.add_argument(
        "--active-share", type=float, default=0.15, help="active tier capacity / N (0.15)"
    )
    p.add_argument("--load-batch", type=int, default=1000, help="bulk-load batch size (1000)")
    p.add_argument("--ingest", type=int, default=None, help="texts for the ingest test (5000)")
    p.add_argument("--ingest-batch", type=int, default=500, help="ingest batch size (500)")
    p.add_argument("--single", type=int, default=None, help="single-item writes per side (300)")
    p.add_argument("--tiering-rows", type=int, default=None, help="tiering sweep rows (1M)")
    p.add_argument("--tiering-runs", type=int, default=20, help="tiering repetitions (20)")
    p.add_argument("--seed", type=int, default=20_250_601, help="seed of every generator")
    p.add_argument(
        "--quick", action="store_true", help="smoke run: 2k memories, 50 queries, 100k rows"
    )
    p.add_argument("--no-profile", action="store_true", help="skip the cProfile section")
    p.add_argument(
        "--no-dense-variant",
        action="store_true",
        help="skip the diagnostic second pass with lexical_weight=0 (dense retrieval only)",
    )
    p.add_argument(
        "--fast-load",
        action="store_true",
        help="bulk load with supersede=False (skips supersession detection on write, the "
        "slow part of a 100k load); recall then runs on stores without detected supersessions",
    )
    p.add_argument("--cache-dir", default=None, help="vector cache folder")
    p.add_argument("--no-cache", action="store_true", help="do not cache corpus vectors")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSON")
    p.add_argument("--png", type=Path, default=DEFAULT_PNG, help="bar chart")
    p.add_argument(
        "--readme-table", action="store_true", help="print the table from --out and exit"
    )
    return p.parse_args(argv)


def _config(args: argparse.Namespace) -> Config:
    quick = bool(args.quick)

    def pick(value: Any, full: Any, smoke: Any) -> Any:
        return value if value is not None else (smoke if quick else full)

    sizes = (
        [int(s) for s in str(args.sizes).replace("_", "").split(",") if s.strip()]
        if args.sizes
        else ([2_000] if quick else [10_000, 100_000])
    )
    if not sizes or min(sizes) < 100:
        raise SystemExit("--sizes: give corpus sizes of at least 100")
    if args.k < 1:
        raise SystemExit("--k must be >= 1")
    if not 0 < args.active_share <= 1:
        raise SystemExit("--active-share must be in (0, 1]")
    cache = None if args.no_cache else str(args.cache_dir or default_cache_dir())
    return Config(
        sizes=sorted(set(sizes)),
        queries=pick(args.queries, 200, 50),
        k=args.k,
        warmup=pick(args.warmup, 20, 10),
        profile_queries=pick(args.profile_queries, 60, 20),
        active_share=args.active_share,
        load_batch=args.load_batch,
        ingest=pick(args.ingest, 5_000, 500),
        ingest_batch=args.ingest_batch,
        single=pick(args.single, 300, 40),
        tiering_rows=pick(args.tiering_rows, 1_000_000, 100_000),
        tiering_runs=args.tiering_runs if not quick else min(args.tiering_runs, 10),
        seed=args.seed,
        quick=quick,
        profile=not args.no_profile,
        dense_variant=not args.no_dense_variant,
        fast_load=bool(args.fast_load),
        cache_dir=cache,
    )


# ==================================================================== helpers
def _stats(samples_ms: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(samples_ms, dtype=np.float64)
    if arr.size == 0:
        return {"median_ms": float("nan"), "p95_ms": float("nan"), "mean_ms": float("nan")}
    return {
        "median_ms": float(np.median(arr)),
        "p95_ms": float(np.percentile(arr, 95)),
        "mean_ms": float(arr.mean()),
        "min_ms": float(arr.min()),
        "max_ms": float(arr.max()),
        "n": int(arr.size),
    }


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


#: CPU features that decide what a product or an embedding costs (machines of one kind differ)
_FEATURES = ("avx2", "f16c", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile")


def _cpu() -> dict[str, Any]:
    """The CPU's model name and which of :data:`_FEATURES` it has (Linux; else empty)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    fields = dict(
        (k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in text.splitlines()) if v
    )
    flags = set(fields.get("flags", "").split())
    return {"model": fields.get("model name"), "features": [f for f in _FEATURES if f in flags]}


def _raw_collection(path: Path) -> tuple[Any, Any]:
    """A raw Chroma collection configured like Oblivion's (cosine HNSW, no embedding fn)."""
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(path), settings=Settings(anonymized_telemetry=False, allow_reset=False)
    )
    col = client.get_or_create_collection(
        "raw-bench", embedding_function=None, configuration={"hnsw": {"space": "cosine"}}
    )
    return client, col


def filled_collection(path: Path, ids: list[str], vectors: np.ndarray) -> Any:
    """A raw collection (:func:`_raw_collection`) at ``path`` holding ``vectors`` under
    ``ids``, added 5,000 at a time (the size sweeps' Chroma side)."""
    _, col = _raw_collection(path)
    for start in range(0, len(ids), 5_000):
        col.add(ids=ids[start : start + 5_000], embeddings=vectors[start : start + 5_000])
    return col


class _TimedEmbedder:
    """Delegates to the real embedder and adds up the time spent embedding documents."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.seconds = 0.0

    def embed_documents(self, texts: list[str]) -> Any:
        started = time.perf_counter()
        out = self.real.embed_documents(texts)
        self.seconds += time.perf_counter() - started
        return out

    def embed_query(self, text: str) -> Any:
        return self.real.embed_query(text)


def _chunks(n: int, size: int) -> list[tuple[int, int]]:
    return [(s, min(s + size, n)) for s in range(0, n, size)]


# ==================================================================== bulk load
def load_stores(
    n: int,
    texts: Sequence[str],
    ids: Sequence[str],
    pre: PrecomputedEmbedder,
    workdir: Path,
    cfg: Config,
) -> tuple[Oblivion, Any, Any, dict[str, Any]]:
    """Load the same ``n`` memories (same ids, same vectors) into both stores."""
    clock = ManualClock(LOAD_END - LOAD_SPAN)
    capacity = max(1, int(n * cfg.active_share))
    policy = Policy.template("balanced").replace(maintain_every=0, active_capacity=capacity)
    load_policy = policy.replace(supersede=False) if cfg.fast_load else policy
    mem = Oblivion(workdir / f"oblivion-{n}", policy=load_policy, clock=clock, embedder=pre)
    client, col = _raw_collection(workdir / f"raw-{n}")
    batches = _chunks(n, cfg.load_batch)
    step = LOAD_SPAN / len(batches)
    raw_s = obl_s = 0.0
    for b, (s, e) in enumerate(tqdm(batches, desc=f"bulk load N={n:,}", unit="batch")):
        part_texts, part_ids = list(texts[s:e]), list(ids[s:e])

        def raw(part_texts: list[str] = part_texts, part_ids: list[str] = part_ids) -> float:
            started = time.perf_counter()
            vecs = pre.embed_documents(part_texts)
            col.add(ids=part_ids, embeddings=vecs, documents=part_texts)
            return time.perf_counter() - started

        def obl(part_texts: list[str] = part_texts, part_ids: list[str] = part_ids) -> float:
            started = time.perf_counter()
            mem.remember_many(part_texts, ids=part_ids)
            return time.perf_counter() - started

        if b % 2 == 0:
            raw_s += raw()
            obl_s += obl()
        else:
            obl_s += obl()
            raw_s += raw()
        clock.advance(step)
    if cfg.fast_load:  # back to the policy recall is measured with
        mem.set_policy(policy, reason="benchmark: bulk load done")
    started = time.perf_counter()
    plan = mem.maintain()
    maintain_s = time.perf_counter() - started
    stats = mem.stats()
    if pre.misses:
        raise RuntimeError(f"{pre.misses} corpus texts were not in the vector cache")
    if col.count() != n or stats["memories"] != n:
        raise RuntimeError(f"load mismatch: raw {col.count()}, oblivion {stats['memories']}")
    info = {
        "n": n,
        "batch": cfg.load_batch,
        "raw_seconds": raw_s,
        "oblivion_seconds": obl_s,
        "raw_items_per_s": n / raw_s,
        "oblivion_items_per_s": n / obl_s,
        "ratio": (n / obl_s) / (n / raw_s),
        "maintain_seconds": maintain_s,
        "archived_by_maintain": len(plan.archived),
        "active": stats["active"],
        "archive": stats["archive"],
        "active_capacity": capacity,
        "span_days": LOAD_SPAN / DAY,
        "supersede_during_load": not cfg.fast_load,
        "superseded": stats.get("superseded"),
    }
    return mem, client, col, info


# ==================================================================== recall
def _raw_query(real: Any, col: Any, q: str, k: int) -> tuple[float, float, list[str]]:
    started = time.perf_counter()
    vec = np.asarray(real.embed_query(q), dtype=np.float32)
    embedded = time.perf_counter()
    res = col.query(
        query_embeddings=vec.reshape(1, -1), n_results=k, include=["documents", "distances"]
    )
    done = time.perf_counter()
    if len(res["documents"][0]) != k:
        raise RuntimeError(f"raw Chroma returned {len(res['documents'][0])} documents")
    return done - started, embedded - started, list(res["ids"][0])


def ratio_ci(
    ours: Sequence[float], raw: Sequence[float], q: float, rounds: int = 2_000
) -> list[float]:
    """A 95 % interval for ``percentile(ours, q) / percentile(raw, q)``: a bootstrap over
    the queries, each keeping its pair of timings (both sides ran it back to back, so
    machine load hits them alike). How far a ratio moves with the queries drawn; a
    target inside the interval is within the run's noise."""
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(raw, dtype=np.float64)
    picks = np.random.default_rng(20_250_601).integers(0, len(a), size=(rounds, len(a)))
    ratios = np.percentile(a[picks], q, axis=1) / np.percentile(b[picks], q, axis=1)
    return [float(v) for v in np.percentile(ratios, [2.5, 97.5])]


def _settle(mem: Oblivion) -> float:
    """Wait (untimed for the recall) until the recall's write-behind feedback is applied,
    so it never overlaps the next timed call; returns how long that took."""
    started = time.perf_counter()
    lock = getattr(mem, "_lock", None)
    if hasattr(lock, "settle"):  # core versions before write-behind applied it in line
        lock.settle()
    return time.perf_counter() - started


def _obl_query(
    mem: Oblivion, pre: PrecomputedEmbedder, q: str, k: int, deep: bool | None
) -> tuple[float, float, list[str], bool, float]:
    started = time.perf_counter()
    res = mem.recall(q, k=k, token_budget=None, deep=deep)
    done = time.perf_counter()
    return done - started, pre.last_query_s, res.ids, res.searched_archive, _settle(mem)


def measure_recall(
    mem: Oblivion,
    pre: PrecomputedEmbedder,
    col: Any,
    queries: Sequence[str],
    warmup: Sequence[str],
    k: int,
) -> dict[str, Any]:
    """Time every mode on every query (rotating order); see the module docstring."""
    real = pre.real

    def one(mode: str, deep: bool | None, q: str) -> tuple[float, float, list[str], bool, float]:
        if mode == "raw":
            total, emb, ids = _raw_query(real, col, q, k)
            return total, emb, ids, True, 0.0
        return _obl_query(mem, pre, q, k, deep)

    for q in warmup:
        for mode, deep in MODES:
            one(mode, deep, q)

    active_before = mem.stats()["active"]
    total: dict[str, list[float]] = {m: [] for m, _ in MODES}
    embed: dict[str, list[float]] = {m: [] for m, _ in MODES}
    archived: dict[str, int] = {m: 0 for m, _ in MODES}
    behind: dict[str, list[float]] = {m: [] for m, _ in MODES}
    overlap: dict[str, list[float]] = {m: [] for m, _ in MODES if m != "raw"}
    gc.collect()
    gc.freeze()
    load_before = _load()
    try:
        for i, q in enumerate(tqdm(queries, desc="queries", unit="q", leave=False)):
            order = MODES[i % len(MODES) :] + MODES[: i % len(MODES)]
            got: dict[str, list[str]] = {}
            for mode, deep in order:
                t, e, ids, searched, settle = one(mode, deep, q)
                total[mode].append(t * 1000.0)
                behind[mode].append(settle * 1000.0)
                embed[mode].append(e * 1000.0)
                archived[mode] += int(searched)
                got[mode] = ids
            for mode in overlap:
                overlap[mode].append(len(set(got[mode]) & set(got["raw"])) / k)
    finally:
        gc.unfreeze()
    load_after = _load()
    modes: dict[str, Any] = {}
    for mode, _ in MODES:
        rest = [t - e for t, e in zip(total[mode], embed[mode], strict=True)]
        modes[mode] = {
            **_stats(total[mode]),
            "embed": _stats(embed[mode]),
            "without_embedding": _stats(rest),
            "searched_archive_share": archived[mode] / len(queries),
            # from the recall's return until its write-behind feedback was applied
            "feedback_after_return": _stats(behind[mode]),
        }
        if mode in overlap:
            modes[mode]["overlap_with_raw_at_k"] = float(np.mean(overlap[mode]))
    ratios: dict[str, Any] = {}
    for mode in ("active", "gated", "deep"):
        ratios[mode] = {
            "median": modes[mode]["median_ms"] / modes["raw"]["median_ms"],
            "p95": modes[mode]["p95_ms"] / modes["raw"]["p95_ms"],
            "median_without_embedding": modes[mode]["without_embedding"]["median_ms"]
            / modes["raw"]["without_embedding"]["median_ms"],
            "median_ci95": ratio_ci(total[mode], total["raw"], 50.0),
            "p95_ci95": ratio_ci(total[mode], total["raw"], 95.0),
        }
    return {
        "queries": len(queries),
        "warmup": len(warmup),
        "k": k,
        "active_before": active_before,
        "active_after": mem.stats()["active"],
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "modes": modes,
        "ratios": ratios,
    }


# ==================================================================== profile
# (label, file suffix, function name, sub-part): the top-level parts are disjoint and add
# up to the total with "everything else"; sub-parts are shown inside their parent only.
# Parts missing from the core version under test are skipped.
Part = tuple[str, str, str, bool]
RECALL_PARTS: tuple[Part, ...] = (
    ("query embedding (ONNX)", "embedding.py", "embed_query", False),
    (
        "in-memory search: the active tier (exact), the archive's copy (exact, or by signs)",
        "index.py",
        "nearest",
        False,
    ),
    ("  of which counting signs (a large archive's sketch copy)", "sketch.py", "hamming", True),
    (
        "archive search (Chroma query, a namespace too big for the copies)",
        "store.py",
        "query",
        False,
    ),
    (
        "lexical search (in-process BM25; after the query embedding with the local model)",
        "lexical.py",
        "search",
        False,
    ),
    ("cosines of non-active hits (SQLite vectors)", "engine_recall.py", "_cosines", False),
    ("activation", "engine.py", "_activation", False),
    ("texts from SQLite", "state.py", "texts", False),
    ("metadata from SQLite", "state.py", "metadatas", False),
    ("token counting (tiktoken)", "budget.py", "__call__", False),
    (
        "feedback: boosts, spreading, batched writes (after the recall returns)",
        "engine_feedback.py",
        "_feedback",
        False,
    ),
    ("  of which spreading activation", "engine_feedback.py", "_spread", True),
    ("  of which promotions", "engine_maintain.py", "_promote", True),
    ("link expansion", "engine_ranking.py", "_expansions", False),
    ("explanations", "recall.py", "explain", False),
)
INGEST_PARTS: tuple[Part, ...] = (
    ("embedding (cached vectors here)", "embedding.py", "embed_texts", False),
    ("importance score", "importance.py", "score", False),
    ("categorise", "importance.py", "categorize", False),
    ("Chroma upsert", "store.py", "add", False),
    ("SQLite insert rows", "state.py", "insert", False),
    ("lexical index insert (in-process BM25)", "lexical.py", "add", False),
    ("journal", "state.py", "journal", False),
    ("auto-linking", "engine_feedback.py", "_auto_link", False),
    ("supersession detection", "engine_stale.py", "_detect_supersession", False),
    ("  of which lexical search (BM25)", "lexical.py", "search", True),
    ("  of which cosines (SQLite vectors)", "engine_recall.py", "_cosines", True),
    ("records returned", "engine.py", "_records", False),
    ("maintain (maintain_every)", "engine_maintain.py", "_maintain", False),
)


def _profile(
    fn: Callable[[], Any],
    calls: int,
    total_key: tuple[str, str],
    parts: Sequence[Part],
) -> dict[str, Any]:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]

    def cum(suffix: str, name: str) -> tuple[float, int]:
        # the outermost match: a wrapper and the method it wraps may share a name
        # (embedding.embed_query -> FastEmbedEmbedder.embed_query), so never add them up
        best = (0.0, 0)
        for (file, _line, func), (_cc, nc, _tt, ct, _callers) in raw.items():
            if func == name and file.endswith(suffix) and ct > best[0]:
                best = (ct, nc)
        return best

    total, _ = cum(*total_key)
    breakdown: list[dict[str, Any]] = []
    accounted = 0.0
    for label, suffix, name, sub in parts:
        t, n = cum(suffix, name)
        if n == 0:
            continue
        if not sub:
            accounted += t
        breakdown.append(
            {
                "part": label,
                "function": f"{suffix}:{name}",
                "ms_per_call": 1000.0 * t / calls,
                "share": t / total if total else 0.0,
                "calls": n,
            }
        )
    breakdown.append(
        {
            "part": "everything else (Python glue)",
            "function": "-",
            "ms_per_call": 1000.0 * (total - accounted) / calls,
            "share": (total - accounted) / total if total else 0.0,
            "calls": 0,
        }
    )
    top = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:15]
    return {
        "calls": calls,
        "total_ms_per_call": 1000.0 * total / calls,
        "breakdown": breakdown,
        "top_tottime": [
            {
                "function": f"{Path(file).name}:{line}({func})",
                "ncalls": nc,
                "tottime_ms_per_call": 1000.0 * tt / calls,
                "cumtime_ms_per_call": 1000.0 * ct / calls,
            }
            for (file, line, func), (_cc, nc, tt, ct, _callers) in top
        ],
        "note": "cProfile inflates Python-heavy parts; read shares, not absolute times",
    }


def profile_recall(mem: Oblivion, queries: Sequence[str], k: int) -> dict[str, Any]:
    """cProfile of ``recall`` with ``deep=False`` and ``deep=True``.

    The write-behind feedback is applied in line here (``WRITE_BEHIND = False``) so the
    profile (of this thread only) shows it; by default it runs after the recall returns.
    """
    out: dict[str, Any] = {}
    mem.WRITE_BEHIND = False
    try:
        for mode, deep in (("active", False), ("deep", True)):

            def run(deep: bool = deep) -> None:
                for q in queries:
                    mem.recall(q, k=k, token_budget=None, deep=deep)

            out[mode] = _profile(run, len(queries), ("engine_recall.py", "recall"), RECALL_PARTS)
    finally:
        del mem.WRITE_BEHIND
    return out


def profile_ingest(mem: Oblivion, texts: Sequence[str], ids: Sequence[str]) -> dict[str, Any]:
    """cProfile of one ``remember_many`` batch (cached vectors) into the loaded store."""

    def run() -> None:
        mem.remember_many(list(texts), ids=list(ids))

    result = _profile(run, 1, ("engine_write.py", "remember_many"), INGEST_PARTS)
    result["batch"] = len(texts)
    result["store_size_before"] = mem.count() - len(texts)
    return result


# ==================================================================== ingest
def measure_adaptation(mem: Oblivion, runs: int = 5) -> dict[str, Any]:
    """``maintain()`` when the namespace's largest category adapts its half-life, against
    ``maintain()`` with nothing to adapt and against what a half-life change cost before
    decay clocks: writing ``a_ref``/``t_ref`` of every memory of the category (the
    activation sweep plus one SQLite transaction), all in this run on this store.

    Private wiring: the category's usage counters are set so that the archive-hit rule
    fires (half-life x 1.1), as if most of its recalls had come from the archive.
    """
    ns = mem.default_namespace
    space = mem._space(ns)
    st = space.state
    cats = st.col("cat")
    largest = int(np.bincount(cats).argmax())
    category = st.vocab[largest]
    rows = np.flatnonzero(cats == largest)
    mem.maintain()  # settle tiers first: the timed calls move (almost) nothing
    plain: list[float] = []
    adapting: list[float] = []
    rewrite: list[float] = []
    adapted = 0
    for _ in range(runs):
        started = time.perf_counter()
        mem.maintain()
        plain.append((time.perf_counter() - started) * 1000.0)
        usage = space.usage.of(category)
        usage.recalled, usage.archive_hits = 30, 20
        started = time.perf_counter()
        plan = mem.maintain()
        adapting.append((time.perf_counter() - started) * 1000.0)
        adapted += category in plan.adapted
        with mem._lock:  # the rewrite a half-life change used to do
            started = time.perf_counter()
            now = mem.clock.now()
            act = mem._activation(ns, st, now)
            st.col("a_ref")[rows] = act[rows]
            st.col("d_ref")[rows] = mem._clock_now(ns, st, now)[cats[rows]]
            with mem._db.transaction() as conn:
                mem._db.save_activation(conn, st, rows.tolist())
            rewrite.append((time.perf_counter() - started) * 1000.0)
    return {
        "category": category,
        "memories_of_category": len(rows),
        "memories": st.n,
        "runs": runs,
        "adapted_runs": adapted,
        "maintain_ms": _stats(plain),
        "maintain_adapting_ms": _stats(adapting),
        "rewrite_category_ms": _stats(rewrite),
    }


def measure_ingest(
    real: Any,
    texts: Sequence[str],
    single_texts: Sequence[str],
    warm_texts: Sequence[str],
    ids: Sequence[str],
    workdir: Path,
    cfg: Config,
) -> dict[str, Any]:
    """Real-embedder writes into fresh stores: batches, then single items."""
    timed = _TimedEmbedder(real)
    mem = Oblivion(workdir / "ingest-oblivion", embedder=timed)
    _client, col = _raw_collection(workdir / "ingest-raw")
    id_iter = iter(ids)

    def take(n: int) -> list[str]:
        return [next(id_iter) for _ in range(n)]

    # warm-up: the first write of each side creates the collection, tables, sessions
    warm = list(warm_texts)
    col.add(ids=take(len(warm)), embeddings=real.embed_documents(warm), documents=warm)
    mem.remember_many(warm, ids=take(len(warm)))

    raw_s = obl_s = raw_embed_s = 0.0
    obl_embed_start = timed.seconds
    batches = _chunks(len(texts), cfg.ingest_batch)
    load_before = _load()
    for b, (s, e) in enumerate(tqdm(batches, desc="ingest batches", unit="batch", leave=False)):
        part = list(texts[s:e])
        raw_ids, obl_ids = take(len(part)), take(len(part))
        for side in ("raw", "obl") if b % 2 == 0 else ("obl", "raw"):
            started = time.perf_counter()
            if side == "raw":
                vecs = real.embed_documents(part)
                raw_embed_s += time.perf_counter() - started
                col.add(ids=raw_ids, embeddings=vecs, documents=part)
                raw_s += time.perf_counter() - started
            else:
                mem.remember_many(part, ids=obl_ids)
                obl_s += time.perf_counter() - started
    obl_embed_s = timed.seconds - obl_embed_start
    n = len(texts)

    single_raw: list[float] = []
    single_obl: list[float] = []
    for i, text in enumerate(tqdm(single_texts, desc="single writes", unit="item", leave=False)):
        (raw_id,), (obl_id,) = take(1), take(1)
        for side in ("raw", "obl") if i % 2 == 0 else ("obl", "raw"):
            started = time.perf_counter()
            if side == "raw":
                col.add(ids=[raw_id], embeddings=real.embed_documents([text]), documents=[text])
                single_raw.append((time.perf_counter() - started) * 1000.0)
            else:
                mem.remember(text, id=obl_id)
                single_obl.append((time.perf_counter() - started) * 1000.0)
    load_after = _load()
    m = len(single_texts)
    result = {
        "batch": {
            "items": n,
            "batch_size": cfg.ingest_batch,
            "raw_items_per_s": n / raw_s,
            "oblivion_items_per_s": n / obl_s,
            "ratio": raw_s / obl_s,
            "raw_seconds": raw_s,
            "oblivion_seconds": obl_s,
            "raw_embed_seconds": raw_embed_s,
            "oblivion_embed_seconds": obl_embed_s,
            "raw_store_items_per_s": n / max(raw_s - raw_embed_s, 1e-9),
            "oblivion_store_items_per_s": n / max(obl_s - obl_embed_s, 1e-9),
        },
        "single": {
            "items": m,
            "raw_items_per_s": 1000.0 * m / sum(single_raw),
            "oblivion_items_per_s": 1000.0 * m / sum(single_obl),
            "ratio": sum(single_raw) / sum(single_obl),
            "raw": _stats(single_raw),
            "oblivion": _stats(single_obl),
        },
        "policy": mem.policy.name,
        "maintain_every": mem.policy.maintain_every,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
    }
    mem.close()
    return result


# ==================================================================== run
def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _git() -> dict[str, Any]:
    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    digest = hashlib.sha256()
    for path in sorted((ROOT.parent / "oblivion_core").glob("*.py")):
        digest.update(path.name.encode() + b"\x00" + path.read_bytes())
    return {
        "commit": git("rev-parse", "HEAD"),
        "core_dirty": bool(git("status", "--porcelain", "--", "../oblivion_core")),
        "core_sha256": digest.hexdigest()[:16],  # the engine sources actually measured
    }


def run(cfg: Config) -> dict[str, Any]:
    """The whole benchmark; returns the results dictionary."""
    started = time.perf_counter()
    n_max = max(cfg.sizes)
    results: dict[str, Any] = {
        "meta": {
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "config": asdict(cfg),
            "versions": _versions(),
            "git": _git(),
            "machine": {
                "platform": platform.platform(),
                "processor": platform.processor() or platform.machine(),
                "cpus": os.cpu_count(),
                "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
                "cpu": _cpu(),
                "loadavg_start": _load(),
            },
            "targets": TARGETS,
        }
    }
    print(f"generating {n_max + PROFILE_EXTRA:,} memories and queries...", flush=True)
    corpus = memory_texts(n_max + PROFILE_EXTRA, cfg.seed)
    corpus_ids = memory_ids(n_max + PROFILE_EXTRA, cfg.seed + 1)
    all_queries = query_texts(cfg.queries + cfg.warmup + cfg.profile_queries, cfg.seed + 2)
    queries = all_queries[: cfg.queries]
    warmup = all_queries[cfg.queries : cfg.queries + cfg.warmup]
    profile_qs = all_queries[cfg.queries + cfg.warmup :]
    known = set(corpus)
    fresh = memory_texts(cfg.ingest + cfg.single + 16, cfg.seed + 3, exclude=known)
    ingest_texts = fresh[: cfg.ingest]
    single_texts = fresh[cfg.ingest : cfg.ingest + cfg.single]
    warm_texts = fresh[cfg.ingest + cfg.single :]

    real = FastEmbedEmbedder()
    real.embed_query("warm up the model")
    model_tag = f"{real.model_name}|{real.model_path}"
    cache_dir = Path(cfg.cache_dir) if cfg.cache_dir else None
    vectors, embed_s, cached = embed_corpus(real, corpus, model_tag, cache_dir)
    results["corpus"] = {
        "memories": n_max,
        "profile_extra": PROFILE_EXTRA,
        "mean_words": float(np.mean([len(t.split()) for t in corpus])),
        "examples": corpus[:5],
        "query_examples": queries[:5],
        "embedding_seconds": embed_s,
        "embedding_cached": cached,
    }
    pre = PrecomputedEmbedder(real, corpus, vectors)

    workdir = Path(tempfile.mkdtemp(prefix="oblivion-latency-"))
    try:
        results["bulk_load"] = []
        results["recall"] = []
        for n in cfg.sizes:
            mem, _client, col, load = load_stores(n, corpus[:n], corpus_ids[:n], pre, workdir, cfg)
            results["bulk_load"].append(load)
            print(
                f"N={n:,}: active {load['active']:,}, archive {load['archive']:,}; "
                f"timing {cfg.queries} queries...",
                flush=True,
            )
            rec = measure_recall(mem, pre, col, queries, warmup, cfg.k)
            rec["n"] = n
            rec["active"] = load["active"]
            rec["archive"] = load["archive"]
            results["recall"].append(rec)
            if cfg.profile and n == n_max:
                print("profiling recall and one remember_many batch...", flush=True)
                results["profile"] = {
                    "n": n,
                    "recall": profile_recall(mem, profile_qs, cfg.k),
                    "ingest": profile_ingest(
                        mem, corpus[n_max : n_max + PROFILE_EXTRA], corpus_ids[n_max:]
                    ),
                }
            policy = mem.policy_for()
            if cfg.dense_variant and getattr(policy, "lexical_weight", 0) > 0:
                print("diagnostic pass: dense retrieval only (lexical_weight=0)...", flush=True)
                mem.set_policy(
                    policy.replace(lexical_weight=0.0),
                    namespace=mem.default_namespace,
                    reason="benchmark: dense-only diagnostic pass",
                )
                rec["dense_only"] = measure_recall(mem, pre, col, queries, warmup, cfg.k)
            print("maintain() with a half-life adaptation...", flush=True)
            results.setdefault("adaptation", []).append(measure_adaptation(mem))
            mem.close()
            del mem, col, _client
            gc.collect()
            print("reopen: a new process opens each store and recalls once...", flush=True)
            results.setdefault("reopen", []).append(
                measure_reopen(
                    workdir,
                    n,
                    LOAD_END,
                    load["active_capacity"],
                    cfg.k,
                    queries,
                    runs=1 if cfg.quick else 3,
                )
            )

        print(f"ingest: {cfg.ingest:,} texts with the real embedder...", flush=True)
        ingest_ids = memory_ids(2 * (cfg.ingest + cfg.single + len(warm_texts)), cfg.seed + 4)
        results["ingest"] = measure_ingest(
            real, ingest_texts, single_texts, warm_texts, ingest_ids, workdir, cfg
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"tiering sweep over {cfg.tiering_rows:,} memories...", flush=True)
    results["tiering"] = run_tiering(cfg.tiering_rows, cfg.tiering_runs, cfg.seed + 5)
    results["meta"]["loadavg_end"] = _load()
    results["meta"]["runtime_seconds"] = time.perf_counter() - started
    return results


# ==================================================================== reporting
def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _n(n: int) -> str:
    return f"{n:,}"


def render_table(results: dict[str, Any]) -> str:
    """The README's Markdown table from a results dictionary."""
    t = results["meta"]["targets"]
    lines = [
        "| Benchmark | Memories | Oblivion | Raw Chroma | Ratio | Target | Met "
        "| Ratio w/o embedding | Ratio, 95 % interval |",
        "|---|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for rec in results["recall"]:
        modes, ratios = rec["modes"], rec["ratios"]
        for mode, target, op in (
            ("active", t["recall_active"], "<"),
            ("deep", t["recall_deep"], "<="),
            ("gated", None, None),
        ):
            for stat in ("median", "p95"):
                ratio = ratios[mode][stat]
                if target is None:
                    share = modes[mode]["searched_archive_share"]
                    target_s, met = f"info (`searched_archive` on {share:.0%})", "-"
                else:
                    ok = ratio < target if op == "<" else ratio <= target
                    target_s, met = f"{op} {target:.2f}x", _yes(ok)
                label = {
                    "active": "recall, active tier answers (`deep=False`)",
                    "deep": "recall, archive searched (`deep=True`)",
                    "gated": "recall, default gate (`deep=None`)",
                }[mode]
                rest = (
                    modes[mode]["without_embedding"][f"{stat}_ms"]
                    / modes["raw"]["without_embedding"][f"{stat}_ms"]
                )
                ci = ratios[mode].get(f"{stat}_ci95")  # results written before it: none
                ci_s = f"{ci[0]:.2f}-{ci[1]:.2f}x" if ci else "-"
                lines.append(
                    f"| {label}, {stat} | {_n(rec['n'])} | {modes[mode][f'{stat}_ms']:.1f} ms "
                    f"| {modes['raw'][f'{stat}_ms']:.1f} ms | {ratio:.2f}x | {target_s} | {met} "
                    f"| {rest:.2f}x | {ci_s} |"
                )
    ing = results["ingest"]
    b, s = ing["batch"], ing["single"]
    lines.append(
        f"| ingest, `remember_many` vs embed + `add`, batches of {b['batch_size']} "
        f"| {_n(b['items'])} | {b['oblivion_items_per_s']:.0f}/s | {b['raw_items_per_s']:.0f}/s "
        f"| {b['ratio']:.2f}x | >= {t['ingest']:.2f}x | {_yes(b['ratio'] >= t['ingest'])} "
        f"| {b['oblivion_store_items_per_s'] / b['raw_store_items_per_s']:.2f}x | - |"
    )
    lines.append(
        f"| ingest, single `remember()` vs embed + `add` | {_n(s['items'])} "
        f"| {s['oblivion_items_per_s']:.0f}/s | {s['raw_items_per_s']:.0f}/s "
        f"| {s['ratio']:.2f}x | info | - | - | - |"
    )
    for reopen in results.get("reopen", []):  # results written before it: none
        lines.append(
            f"| reopen in a new process: open + first recall (`deep=False`) vs open + first "
            f"query, median of {reopen['runs']} | {_n(reopen['n'])} "
            f"| {1000 * reopen['first_recall_s']:.0f} ms "
            f"| {1000 * reopen['raw_first_query_s']:.0f} ms | {reopen['ratio']:.2f}x | info "
            "| - | - | - |"
        )
        lines.append(
            f"| then the first deep recall (reads the archive's vectors for its in-memory "
            f"copy: {', '.join(reopen['archive_search'])}) | {_n(reopen['n'])} "
            f"| {1000 * reopen['first_deep_s']:.0f} ms | - | - | info | - | - | - |"
        )
    for load in results["bulk_load"]:
        lines.append(
            f"| bulk load, cached vectors, batches of {load['batch']} | {_n(load['n'])} "
            f"| {load['oblivion_items_per_s']:.0f}/s | {load['raw_items_per_s']:.0f}/s "
            f"| {load['ratio']:.2f}x | info | - | - | - |"
        )
    for ad in results.get("adaptation", []):
        lines.append(
            f"| `maintain()` adapting the half-life of {ad['memories_of_category']:,} "
            f"{ad['category']} memories, median | {_n(ad['memories'])} "
            f"| {ad['maintain_adapting_ms']['median_ms']:.1f} ms "
            f"(no adaptation: {ad['maintain_ms']['median_ms']:.1f} ms) | - | - | info | - | - | - |"
        )
        lines.append(
            f"| the same half-life change before decay clocks (rewrite every memory of the "
            f"category), median | {_n(ad['memories'])} "
            f"| {ad['rewrite_category_ms']['median_ms']:.1f} ms | - | - | info | - | - | - |"
        )
    tier = results["tiering"]
    for case, label, target in (
        ("maintain_dry_run", "tiering sweep, `maintain(dry_run=True)`", True),
        ("activation_plus_plan", "tiering: activation + `plan_tiers`", False),
        ("plan_tiers", "tiering: `plan_tiers` alone", False),
        ("maintain_dry_run_capacity", "tiering sweep with `active_capacity`", False),
    ):
        ms = tier["cases"][case]["median_ms"]
        target_s = f"<= {t['tiering_ms']:.0f} ms" if target else "info"
        met = _yes(ms <= t["tiering_ms"]) if target else "-"
        lines.append(
            f"| {label}, median | {_n(tier['n'])} | {ms:.1f} ms | - | - | {target_s} | {met} | - "
            "| - |"
        )
    meta = results["meta"]
    v = meta["versions"]
    lines.append("")
    lines.append(
        f"k={results['recall'][0]['k']}, {results['recall'][0]['queries']} queries per size, "
        f"query embedding included on both sides (all-MiniLM-L6-v2, fastembed "
        f"{v.get('fastembed')}); chromadb {v.get('chromadb')}, Python {v.get('python')}, "
        f"{meta['machine']['cpus']} CPUs{_features(meta['machine'])}; "
        f"load average {meta['machine']['loadavg_start']} at "
        f"start, {meta.get('loadavg_end')} at end; total {meta['runtime_seconds'] / 60:.1f} min; "
        f"oblivion_core at {meta['git']['commit'][:7]}"
        f"{' (uncommitted changes)' if meta['git']['core_dirty'] else ''}."
    )
    return "\n".join(lines)


def _features(machine: dict[str, Any]) -> str:
    """`` (AVX2, AVX512F)``: the CPU features a run recorded (runs before: nothing)."""
    found = (machine.get("cpu") or {}).get("features")
    return f" ({', '.join(f.upper() for f in found)})" if found else ""


def render_details(results: dict[str, Any]) -> str:
    """Latency split and profile, for the console."""
    out: list[str] = []
    for rec in results["recall"]:
        out.append(
            f"\nN={rec['n']:,} (active {rec['active_before']:,} -> {rec['active_after']:,}, "
            f"load {rec['loadavg_before']} -> {rec['loadavg_after']})"
        )
        out.append(
            "  mode      median   p95   | embed med | rest med  rest p95 | overlap@k"
            " | feedback after return, med"
        )
        for mode, _ in MODES:
            m = rec["modes"][mode]
            ov = m.get("overlap_with_raw_at_k")
            fb = m.get("feedback_after_return")
            behind = "" if fb is None or mode == "raw" else f"{fb['median_ms']:.2f} ms"
            out.append(
                f"  {mode:<7} {m['median_ms']:7.2f} {m['p95_ms']:7.2f} | "
                f"{m['embed']['median_ms']:8.2f}  | {m['without_embedding']['median_ms']:7.2f}"
                f"  {m['without_embedding']['p95_ms']:7.2f} | "
                f"{'' if ov is None else f'{ov:.2f}':>9} | "
                f"{behind}"
            )
        dense = rec.get("dense_only")
        if dense:
            out.append("  same queries again with lexical_weight=0 (dense only):")
            for mode, _ in MODES:
                m = dense["modes"][mode]
                ratio = "" if mode == "raw" else f"ratio {dense['ratios'][mode]['median']:.2f}x"
                out.append(
                    f"  {mode:<7} {m['median_ms']:7.2f} {m['p95_ms']:7.2f} | "
                    f"{m['embed']['median_ms']:8.2f}  | {m['without_embedding']['median_ms']:7.2f}"
                    f"  {m['without_embedding']['p95_ms']:7.2f} | {ratio}"
                )
    prof = results.get("profile")
    if prof:
        for mode, p in prof["recall"].items():
            out.append(
                f"\nprofile recall {mode} at N={prof['n']:,}: {p['total_ms_per_call']:.2f} ms "
                "per recall under cProfile"
            )
            for part in p["breakdown"]:
                out.append(
                    f"  {part['part']:<36} {part['ms_per_call']:7.2f} ms  {part['share']:6.1%}"
                )
        p = prof["ingest"]
        out.append(
            f"\nprofile remember_many({p['batch']}) into {p['store_size_before']:,} memories: "
            f"{p['total_ms_per_call']:.0f} ms under cProfile"
        )
        for part in p["breakdown"]:
            out.append(f"  {part['part']:<36} {part['ms_per_call']:8.1f} ms  {part['share']:6.1%}")
    return "\n".join(out)


def plot(results: dict[str, Any], path: Path) -> None:
    """Bar chart: recall latency per size and mode, ingest throughput, tiering sweep."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 5.8), gridspec_kw={"width_ratios": [2.2, 1.3, 1.3]})
    colors = {"raw": "#8c8c8c", "active": "#2a9d8f", "gated": "#e9c46a", "deep": "#e76f51"}

    ax = axes[0]
    recs = results["recall"]
    width = 0.2
    x = np.arange(len(recs))
    for j, (mode, _) in enumerate(MODES):
        med = [r["modes"][mode]["median_ms"] for r in recs]
        p95 = [r["modes"][mode]["p95_ms"] for r in recs]
        pos = x + (j - 1.5) * width
        emb = [r["modes"][mode]["embed"]["median_ms"] for r in recs]
        ax.bar(pos, med, width, color=colors[mode], label=MODE_LABELS[mode])
        ax.bar(pos, emb, width, color="none", edgecolor="white", hatch="///", lw=0)
        ax.scatter(pos, p95, marker="_", s=180, color="black", zorder=3)
        for px, m, r in zip(pos, med, recs, strict=True):
            label = f"{m:.1f}" if mode == "raw" else f"{m:.1f}\n{r['ratios'][mode]['median']:.2f}x"
            ax.text(px, m, label, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, [f"N = {r['n']:,}" for r in recs])
    ax.set_ylabel("recall latency, ms")
    ax.set_title(
        f"recall(k={recs[0]['k']}): bar median (hatched: query embedding), tick p95",
        fontsize=10,
    )
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=2)

    ax = axes[1]
    ing = results["ingest"]
    labels = [f"batches of {ing['batch']['batch_size']}", "single"]
    raw = [ing["batch"]["raw_items_per_s"], ing["single"]["raw_items_per_s"]]
    obl = [ing["batch"]["oblivion_items_per_s"], ing["single"]["oblivion_items_per_s"]]
    for load in results["bulk_load"]:
        labels.append(f"cached vecs\nN={load['n']:,}")
        raw.append(load["raw_items_per_s"])
        obl.append(load["oblivion_items_per_s"])
    xi = np.arange(len(labels))
    ax.bar(
        xi - 0.2,
        raw,
        0.4,
        color=colors["raw"],
        label="raw Chroma (embed + add; add alone for cached vecs)",
    )
    ax.bar(xi + 0.2, obl, 0.4, color=colors["active"], label="Oblivion remember")
    ax.set_yscale("log")
    ax.set_xticks(xi, labels, fontsize=8)
    ax.set_ylabel("items / s (log)")
    ax.set_title("ingest throughput")
    ax.legend(fontsize=7)

    ax = axes[2]
    tier = results["tiering"]
    names = ["plan_tiers", "activation", "activation_plus_plan", "maintain_dry_run"]
    vals = [tier["cases"][c]["median_ms"] for c in names]
    ax.bar(range(len(names)), vals, color=["#457b9d", "#457b9d", "#457b9d", "#1d3557"])
    ax.axhline(results["meta"]["targets"]["tiering_ms"], color="#e63946", ls="--", label="target")
    ax.set_xticks(
        range(len(names)), ["plan_tiers", "activation", "act. + plan", "maintain\n(dry run)"]
    )
    ax.set_ylabel("ms (median)")
    ax.set_title(f"tiering sweep, {tier['n']:,} memories")
    ax.legend(fontsize=7)

    meta = results["meta"]
    fig.suptitle(
        f"Oblivion vs raw Chroma, same embedder, same run ({meta['machine']['cpus']} CPUs, "
        f"chromadb {meta['versions'].get('chromadb')})",
        fontsize=11,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=2) + "\n")
    tmp.replace(path)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    args = _parse(argv)
    if args.readme_table:
        if not args.out.exists():
            print(f"no results at {args.out}; run the benchmark first", file=sys.stderr)
            return 1
        print(render_table(json.loads(args.out.read_text())))
        return 0
    cfg = _config(args)
    results = run(cfg)
    _write_json(results, args.out)
    plot(results, args.png)
    print(render_details(results))
    print()
    print(render_table(results))
    print(f"\nwrote {args.out} and {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
