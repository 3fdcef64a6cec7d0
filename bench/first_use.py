"""Each user's first recall after a restart, against a raw Chroma query of the user's
collection, each side in a process of its own.

A server holding one namespace per user restarts, and its users come back one by one.
This builds ``--users`` users of ``--per-user`` memories each (the latency benchmark's
texts, embedded once by the local model and cached), in an Oblivion store on disk and in
a raw Chroma folder with one collection per user holding the same vectors. Then, in a new
process per side and round, each user's first query with the query's vector given (its
embedding is the same on both sides and left out): Oblivion's ``recall(k=5)`` against
Chroma's ``get_collection`` and ``query(n_results=5)``. Rounds alternate the sides, each
on a fresh copy of what was built. Reports the median and p90 of the per-user times, the
ratio of medians (ours / raw: lower is faster) and the growth of resident memory.

Reproduce: ``python bench/first_use.py`` (``--users N``); writes
``bench/results/first_use.json``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _latency_corpus import (  # noqa: E402
    LATENCY_SEED,
    bench_args,
    default_cache_dir,
    embed_corpus,
    memory_texts,
    write_results,
)

OUT = HERE / "results" / "first_use.json"
QUERY = "What does my sister like to eat?"
ROUNDS = 2


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def build(folder: Path, users: int, per_user: int) -> None:
    """The Oblivion store (``folder/oblivion``) and the raw Chroma folder
    (``folder/raw``) of the same vectors, and the query's vector (``folder/query.npy``)."""
    import chromadb

    from oblivion_core import FastEmbedEmbedder, Oblivion

    real = FastEmbedEmbedder()
    texts = memory_texts(users * per_user, LATENCY_SEED)
    vectors, _, _ = embed_corpus(
        real, texts, f"{real.model_name}|{real.model_path}", default_cache_dir()
    )
    np.save(folder / "query.npy", np.asarray(real.embed_query(QUERY), dtype=np.float32))
    raw = chromadb.PersistentClient(str(folder / "raw"))
    with Oblivion(folder / "oblivion", embedder=real) as mem:
        for u in range(users):
            rows = slice(u * per_user, (u + 1) * per_user)
            ids = [f"m{u}-{k}" for k in range(per_user)]
            mem.remember_many(texts[rows], embeddings=vectors[rows], ids=ids, namespace=f"user-{u}")
            raw.create_collection(f"user-{u}").add(
                ids=ids, embeddings=vectors[rows], documents=texts[rows]
            )


def time_side(side: str, folder: Path, users: int) -> dict[str, Any]:
    """Each user's first query on ``side`` (run in a process of its own)."""
    query = np.load(folder / "query.npy")
    if side == "raw":
        import chromadb

        client = chromadb.PersistentClient(str(folder / "raw"))

        def first(u: int) -> None:
            client.get_collection(f"user-{u}").query(query_embeddings=[query], n_results=5)

        first(users)  # Chroma's own start, before the timed users, as on the other side

    else:
        from oblivion_core import FastEmbedEmbedder, Oblivion

        mem = Oblivion(folder / "oblivion", embedder=FastEmbedEmbedder())
        # the instance's one check of its embedder (a few stored texts embedded),
        # before the timed users, as a server's first request would pay it
        mem.recall(QUERY, namespace=f"user-{users}", k=5)

        def first(u: int) -> None:
            mem.recall(QUERY, namespace=f"user-{u}", embedding=query, k=5)

    before = _rss_mb()
    times = []
    for u in range(users):
        started = time.perf_counter()
        first(u)
        times.append((time.perf_counter() - started) * 1e3)
    return {
        "median_ms": float(np.median(times)),
        "p90_ms": float(np.percentile(times, 90)),
        "rss_growth_mb": _rss_mb() - before,
    }


def table(results: dict[str, Any]) -> str:
    """The README's table."""
    ours, raw = results["oblivion"], results["raw"]
    rows = [
        "| users x memories | Oblivion `recall` (median, p90) | raw Chroma `query` (median, "
        "p90) | time, ours / raw | resident memory growth, ours / raw |",
        "|---:|---:|---:|---:|---:|",
        f"| {results['users']:,} x {results['per_user']} | {ours['median_ms']:.1f} ms, "
        f"{ours['p90_ms']:.1f} ms | {raw['median_ms']:.1f} ms, {raw['p90_ms']:.1f} ms | "
        f"{results['ratio']:.2f}x | {ours['rss_growth_mb']:.0f} / "
        f"{raw['rss_growth_mb']:.0f} MB |",
    ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--side":
        side, folder, users = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(time_side(side, folder, users)))
        return
    args = bench_args(
        __doc__ or "",
        OUT,
        argv,
        table,
        users=(300, "users timed"),
        per_user=(20, "memories per user"),
    )
    if args is None:
        return
    with tempfile.TemporaryDirectory(prefix="oblivion-first-use-") as tmp:
        built = Path(tmp) / "built"
        built.mkdir()
        # one user more than timed: the warm-up recall's
        build(built, args.users + 1, args.per_user)
        runs: dict[str, list[dict[str, Any]]] = {"raw": [], "oblivion": []}
        for r in range(ROUNDS):
            for side in ("raw", "oblivion") if r % 2 == 0 else ("oblivion", "raw"):
                copy = Path(tmp) / f"{side}-{r}"
                shutil.copytree(built, copy)
                done = subprocess.run(
                    [sys.executable, __file__, "--side", side, str(copy), str(args.users)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                runs[side].append(json.loads(done.stdout.strip().splitlines()[-1]))
                shutil.rmtree(copy)
                print(side, r, runs[side][-1], flush=True)
    results: dict[str, Any] = {"users": args.users, "per_user": args.per_user, "rounds": runs}
    for side, found in runs.items():
        results[side] = {
            key: float(np.median([run[key] for run in found]))
            for key in ("median_ms", "p90_ms", "rss_growth_mb")
        }
    results["ratio"] = results["oblivion"]["median_ms"] / results["raw"]["median_ms"]
    write_results(args.out, results, table)


if __name__ == "__main__":
    main()
