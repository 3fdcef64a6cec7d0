"""ONNX Runtime's spinning threads, and the archive searched beside the active tier: why
the local model's session is left as fastembed makes it, and why a deep recall searches
its two indexes one after the other (``bench/NOTES.md``, 2026-12-05).

A deep recall at 100k memories searches two in-memory indexes right after the query is
embedded: the active tier's (18k memories, exact two-stage search) and the archive's copy
(82k, sign sketch). Both are built here from the latency benchmark's corpus vectors. Each
variant runs in a process of its own (ONNX Runtime's threads would spin into another
variant's timings), the variants taking turns for ``--rounds`` rounds:

- ``spinning``: the session as fastembed makes it; ONNX Runtime's default lets its
  threads spin for a while after a run returns;
- ``stopped``: the same model in a session made with ``session.force_spinning_stop``,
  whose threads stop spinning as each run returns;

each with the two searches ``serial`` (one after the other, as recall does) or
``beside`` (the archive's on a second thread while this one searches the active tier).
For every query the process times the whole call, the query embedding included, as a
user sees it, and also the embedding and the searches on their own; a raw Chroma query
(20k vectors, in memory) after an embedding of its own stands for the work anyone else
does right after an embedding.

Reproduce: ``python bench/spinning.py`` (about 3 minutes; the corpus vectors come from
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
CHROMA_ROWS = 20_000
POOL = 50  # the candidates recall asks each index for (policy.candidate_pool)
VARIANTS = (
    ("spinning", "serial"),
    ("stopped", "serial"),
    ("stopped", "beside"),
    ("spinning", "beside"),
)


def _stop_spinning(real: Any) -> None:
    """Make the embedder's ONNX session again with ``session.force_spinning_stop``."""
    import onnxruntime as ort

    inner = real._load().model
    session = inner.model
    options = session.get_session_options()
    options.add_session_config_entry("session.force_spinning_stop", "1")
    inner.model = ort.InferenceSession(
        session._model_path, sess_options=options, providers=session.get_providers()
    )


def run_variant(threads: str, searches: str, queries: int) -> dict[str, Any]:
    """One process's timings (see the module doc)."""
    import chromadb

    from oblivion_core.index import ActiveIndex
    from oblivion_core.sketch import SketchIndex

    real, vectors, texts = sweep_inputs(queries + 20)
    if threads == "stopped":
        _stop_spinning(real)
    active, archive = ActiveIndex(), SketchIndex()
    active.add([f"m{i}" for i in range(ACTIVE)], np.ascontiguousarray(vectors[:ACTIVE]))
    rest = vectors[ACTIVE : ACTIVE + ARCHIVED]
    archive.add([f"m{i}" for i in range(ACTIVE, ACTIVE + len(rest))], np.ascontiguousarray(rest))
    raw = chromadb.EphemeralClient().create_collection("raw", metadata={"hnsw:space": "cosine"})
    for start in range(0, CHROMA_ROWS, 5_000):
        block = vectors[start : start + 5_000]
        raw.add(ids=[f"r{start + i}" for i in range(len(block))], embeddings=block)

    def seqs(ids: list[str]) -> np.ndarray:
        return np.asarray([int(m[1:]) for m in ids], dtype=np.int64)

    worker = ThreadPoolExecutor(1)
    worker.submit(lambda: None).result()  # the thread is started

    def search(vec: np.ndarray) -> tuple[list[str], list[str]]:
        if searches == "serial":
            return active.nearest(vec, POOL, seqs)[0], archive.nearest(vec, POOL, seqs)[0]
        job = worker.submit(archive.nearest, vec, POOL, seqs)
        found = active.nearest(vec, POOL, seqs)[0]
        return found, job.result()[0]

    out: dict[str, list[float]] = {"call": [], "embedding": [], "searches": [], "raw": []}
    found = []
    for k, q in enumerate(tqdm(texts, desc=f"{threads}, {searches}", unit="q", leave=False)):
        started = time.perf_counter()
        vec = np.asarray(real.embed_query(q), dtype=np.float32)
        embedded = time.perf_counter()
        found.append(search(vec))
        ended = time.perf_counter()
        vec = np.asarray(real.embed_query(q), dtype=np.float32)
        raw_started = time.perf_counter()
        raw.query(query_embeddings=vec.reshape(1, -1), n_results=10)
        raw_s = time.perf_counter() - raw_started
        if k >= 20:  # the first 20 warm up
            out["call"].append((ended - started) * 1e3)
            out["embedding"].append((embedded - started) * 1e3)
            out["searches"].append((ended - embedded) * 1e3)
            out["raw"].append(raw_s * 1e3)
    worker.shutdown()
    return {
        **{key: timing(values) for key, values in out.items()},
        "found": [[list(a), list(b)] for a, b in found],
    }


def table(results: dict[str, Any]) -> str:
    """The README's table: medians (p95) of each variant's rounds, pooled."""
    lines = [
        "| ONNX threads after a run | The two searches | Embedding + searches "
        "| Embedding | Searches | Chroma's query after an embedding |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for threads, searches in VARIANTS:
        rounds = results["variants"][f"{threads}/{searches}"]

        def cell(key: str, rounds: list[dict[str, Any]] = rounds) -> str:
            med = np.median([r[key]["median_ms"] for r in rounds])
            p95 = np.median([r[key]["p95_ms"] for r in rounds])
            return f"{med:.2f} ms ({p95:.2f})"

        what = "keep spinning (ONNX Runtime's default)" if threads == "spinning" else "stop"
        how = "one after the other" if searches == "serial" else "archive's on a second thread"
        lines.append(
            f"| {what} | {how} | {cell('call')} | {cell('embedding')} | {cell('searches')} "
            f"| {cell('raw')} |"
        )
    lines.append("")
    lines.append(
        f"Medians of {results['rounds']} processes per variant (p95 in brackets), "
        f"{results['queries']} queries each; a deep recall's two searches at 100k memories "
        f"({ACTIVE:,} active, {ARCHIVED:,} archived, the best {POOL} of each); Chroma in "
        f"memory with {CHROMA_ROWS:,} vectors, 10 results."
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
    variants: dict[str, list[dict[str, Any]]] = {f"{t}/{s}": [] for t, s in VARIANTS}
    found: list[Any] = []
    for r in range(args.rounds):
        for threads, searches in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            print(f"round {r + 1}/{args.rounds}: {threads}, {searches}", flush=True)
            done = subprocess.run(
                [sys.executable, __file__, "--child", threads, searches, str(args.queries)],
                check=True,
                stdout=subprocess.PIPE,  # the JSON; the progress bar shows on stderr
                text=True,
            )
            result = json.loads(done.stdout.strip().splitlines()[-1])
            found.append(result.pop("found"))
            variants[f"{threads}/{searches}"].append(result)
    if any(f != found[0] for f in found):
        raise SystemExit("the variants found different memories")
    results = {"variants": variants, "rounds": args.rounds, "queries": args.queries}
    write_results(args.out, results, table)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        print(json.dumps(run_variant(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        main()
