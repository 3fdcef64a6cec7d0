"""ONNX Runtime's spinning threads, and the archive searched beside the active tier: the
figures behind ``FastEmbedEmbedder``'s ``session.force_spinning_stop`` and
``Oblivion.SEARCH_BESIDE``.

A deep recall at 100k memories searches two in-memory indexes right after the query is
embedded: the active tier's (about 18k memories, exact two-stage search) and the
archive's copy (about 82k, sign sketch). Both are built here from the latency
benchmark's corpus vectors, with the same sizes. For each query the script times:

- the query's embedding, with the searches of the previous query between the two;
- the two searches one after the other (``serial``), and with the archive's on a second
  thread while this one searches the active tier (``beside``), each right after an
  embedding of its own, taking turns going first;
- at the end, embeddings back to back with nothing between them.

Each variant runs in a process of its own, since ONNX Runtime's threads would spin into
the other's timings; the two take turns for ``--rounds`` rounds:

- ``spinning``: the session as fastembed makes it (ONNX Runtime's default: its threads
  keep spinning for a while after a run returns, holding both cores);
- ``stopped``: the session as :class:`~oblivion_core.FastEmbedEmbedder` makes it, whose
  threads stop spinning as each run returns.

Reproduce: ``python bench/spinning.py`` (about 2 minutes; the corpus vectors come from
the latency benchmark's cache, or are embedded first); writes
``bench/results/spinning.json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import bench_args, sweep_inputs, timing, write_results

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "spinning.json"
ACTIVE, ARCHIVED = 18_000, 82_000  # the latency benchmark's 100k store, by tier
POOL = 50  # the candidates recall asks each index for (policy.candidate_pool)
VARIANTS = ("spinning", "stopped")


def run_variant(variant: str, queries: int) -> dict[str, Any]:
    """One process's timings (see the module doc)."""
    import oblivion_core.embedding as embedding
    from oblivion_core.index import ActiveIndex
    from oblivion_core.sketch import SketchIndex

    if variant == "spinning":  # fastembed's own session
        embedding._stop_spinning_after_runs = lambda model: None
    real, vectors, texts = sweep_inputs(queries + 20)
    active, archive = ActiveIndex(), SketchIndex()
    active.add([f"m{i}" for i in range(ACTIVE)], np.ascontiguousarray(vectors[:ACTIVE]))
    rest = vectors[ACTIVE : ACTIVE + ARCHIVED]
    archive.add([f"m{i}" for i in range(ACTIVE, ACTIVE + len(rest))], np.ascontiguousarray(rest))

    def seqs(ids: list[str]) -> np.ndarray:
        return np.asarray([int(m[1:]) for m in ids], dtype=np.int64)

    worker = ThreadPoolExecutor(1)
    worker.submit(lambda: None).result()  # the thread is started

    def serial(vec: np.ndarray) -> tuple[list[str], list[str]]:
        return active.nearest(vec, POOL, seqs)[0], archive.nearest(vec, POOL, seqs)[0]

    def beside(vec: np.ndarray) -> tuple[list[str], list[str]]:
        job = worker.submit(archive.nearest, vec, POOL, seqs)
        found = active.nearest(vec, POOL, seqs)[0]
        return found, job.result()[0]

    embed: list[float] = []
    times: dict[str, list[float]] = {"serial": [], "beside": []}
    same = 0
    for k, q in enumerate(tqdm(texts, desc=variant, unit="q", leave=False)):
        results = {}
        for name in ("serial", "beside") if k % 2 else ("beside", "serial"):
            started = time.perf_counter()
            vec = np.asarray(real.embed_query(q), dtype=np.float32)
            embedded = time.perf_counter()
            results[name] = (serial if name == "serial" else beside)(vec)
            if k >= 20:  # the first 20 warm up
                times[name].append((time.perf_counter() - embedded) * 1e3)
                embed.append((embedded - started) * 1e3)
        same += results["serial"] == results["beside"]
    worker.shutdown()
    back_to_back = []
    for q in texts[20:]:
        started = time.perf_counter()
        real.embed_query(q)
        back_to_back.append((time.perf_counter() - started) * 1e3)
    return {
        "embedding_between_searches": timing(embed),
        "embedding_back_to_back": timing(back_to_back),
        "serial": timing(times["serial"]),
        "beside": timing(times["beside"]),
        "same_results": same,
        "queries": len(texts),
    }


def table(results: dict[str, Any]) -> str:
    """The README's table: medians (p95) of each variant's rounds, pooled."""
    lines = [
        "| ONNX threads after a run | Embedding, searches between | Embedding, back to back "
        "| Both searches, one thread | Archive's beside | Beside / one thread |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for variant in VARIANTS:
        rounds = results["variants"][variant]

        def cell(key: str, rounds: list[dict[str, Any]] = rounds) -> str:
            med = np.median([r[key]["median_ms"] for r in rounds])
            p95 = np.median([r[key]["p95_ms"] for r in rounds])
            return f"{med:.2f} ms ({p95:.2f})"

        ratio = np.median([r["beside"]["median_ms"] / r["serial"]["median_ms"] for r in rounds])
        what = "keep spinning (ONNX Runtime's default)" if variant == "spinning" else "stop"
        lines.append(
            f"| {what} | {cell('embedding_between_searches')} | {cell('embedding_back_to_back')} "
            f"| {cell('serial')} | {cell('beside')} | {ratio:.2f}x |"
        )
    lines.append("")
    lines.append(
        f"Medians of {results['rounds']} rounds per variant (p95 in brackets), "
        f"{results['queries']} queries each; a deep recall's two searches at 100k memories "
        f"({ACTIVE:,} active, {ARCHIVED:,} archived, the best {POOL} of each)."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = bench_args(
        __doc__ or "",
        DEFAULT_OUT,
        argv,
        table,
        queries=(200, "timed queries per process"),
        rounds=(3, "processes per variant, taking turns"),
    )
    if args is None:
        return
    variants: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    for r in range(args.rounds):
        for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            print(f"round {r + 1}/{args.rounds}: {variant}", flush=True)
            done = subprocess.run(
                [sys.executable, __file__, "--child-variant", variant, str(args.queries)],
                check=True,
                stdout=subprocess.PIPE,  # the JSON; the progress bar shows on stderr
                text=True,
            )
            variants[variant].append(json.loads(done.stdout.strip().splitlines()[-1]))
    for variant, rounds in variants.items():
        if any(r["same_results"] != r["queries"] for r in rounds):
            raise SystemExit(f"{variant}: the threaded search returned other memories")
    results = {"variants": variants, "rounds": args.rounds, "queries": args.queries}
    write_results(args.out, results, table)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child-variant":
        print(json.dumps(run_variant(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
