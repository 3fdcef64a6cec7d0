"""Backing up a store in use, against copying the store's folder with the app stopped.

A store of N memories is written on disk (the embedded default: SQLite and a
``chroma/`` folder) and recalled from. ``Oblivion.backup(folder)`` is timed while the
store is open; other calls wait for that long. The plain way, for a store whose app is
stopped, is copying its folder (``shutil.copytree``: SQLite and Chroma's files). Rounds
alternate between the two; the ratio is the copy's median over the backup's (above 1.0:
the backup is faster). Sizes on disk are reported beside.

A backup holds the activation database alone (it keeps every vector and text), so
opening it copies its memories into a new ``chroma/`` folder. That restore (open and
``load()``: the copy, the BM25 index and the archive's copy) is timed against opening
the original folder and loading it.

The vectors come from ``oblivion_core.testing.HashEmbedder`` (384 dimensions, as the
default model's): nothing timed above embeds.

Re-embedding for a new model (``backup(folder, embedder=...)``) is timed apart, on a
store of fewer memories, with the local model (all-MiniLM-L6-v2 through fastembed): the
plain alternative is that model's ``embed_documents`` of the same texts, in batches of
the same size (``backup.REEMBED_BATCH``), without writing them anywhere.

Reproduce: ``python bench/backup.py`` (about two minutes); writes
``bench/results/backup.json``.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import bench_args, memory_texts, write_results

from oblivion_core import Oblivion
from oblivion_core.testing import HashEmbedder

HERE = Path(__file__).resolve().parent
BATCH = 2_000


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _open_and_load(folder: Path, embedder: HashEmbedder) -> float:
    """Seconds to open the store at ``folder`` and load its namespace whole."""
    started = time.perf_counter()
    with Oblivion(folder, embedder=embedder) as mem:
        mem.load()
        took = time.perf_counter() - started
    return took


def measure_reembed(memories: int) -> dict[str, Any]:
    """Re-embed a store of ``memories`` with the local model, against embedding the same
    texts with it alone."""
    from oblivion_core import FastEmbedEmbedder
    from oblivion_core.backup import REEMBED_BATCH

    model = FastEmbedEmbedder()
    texts = memory_texts(memories, 20_261_207)
    model.embed_documents(texts[:32])  # the model loaded before either side is timed
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with Oblivion(root / "store", embedder=HashEmbedder(dim=384)) as mem:
            mem.remember_many(texts, supersede=False)
            started = time.perf_counter()
            mem.backup(root / "minilm", embedder=model)
            reembed = time.perf_counter() - started
    started = time.perf_counter()
    for start in tqdm(range(0, memories, REEMBED_BATCH), desc="plain embedding", unit="batch"):
        model.embed_documents(texts[start : start + REEMBED_BATCH])
    plain = time.perf_counter() - started
    return {"memories": memories, "reembed_s": reembed, "embed_s": plain, "ratio": plain / reembed}


def measure(memories: int, rounds: int) -> dict[str, Any]:
    """Write ``memories`` on disk, then time backups, folder copies and the restores."""
    embedder = HashEmbedder(dim=384)
    texts = memory_texts(memories, 20_261_206)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = root / "store"
        with Oblivion(store, embedder=embedder) as mem:
            for start in tqdm(range(0, memories, BATCH), desc="writing the store", unit="batch"):
                mem.remember_many(texts[start : start + BATCH], supersede=False)
            for query in texts[:50]:
                mem.recall(query)
        backups: list[float] = []
        copies: list[float] = []
        for i in tqdm(range(rounds), desc="backup / copy rounds", unit="round"):
            with Oblivion(store, embedder=embedder) as mem:
                mem.recall(texts[i])  # in use: a boost queued
                started = time.perf_counter()
                mem.backup(root / f"backup-{i}")
                backups.append(time.perf_counter() - started)
            started = time.perf_counter()
            shutil.copytree(store, root / f"copy-{i}")
            copies.append(time.perf_counter() - started)
        sizes = {"backup": _size(root / "backup-0"), "store": _size(root / "copy-0")}
        restore = _open_and_load(root / "backup-0", embedder)
        reopen = _open_and_load(root / "copy-0", embedder)
    backup_s, copy_s = statistics.median(backups), statistics.median(copies)
    return {
        "memories": memories,
        "rounds": rounds,
        "backup_s": backups,
        "copytree_s": copies,
        "ratio": copy_s / backup_s,
        "bytes": sizes,
        "restore_s": restore,
        "reopen_s": reopen,
    }


def table(results: dict[str, Any]) -> str:
    """The README's table."""
    r = results
    mb = {k: v / 2**20 for k, v in r["bytes"].items()}
    e = r.get("reembed")
    again = (
        [
            "",
            "| memories re-embedded | `backup(embedder=local model)` | the model's "
            "`embed_documents` alone | ratio |",
            "|---:|---:|---:|---:|",
            f"| {e['memories']:,} | {e['reembed_s']:.1f} s | {e['embed_s']:.1f} s | "
            f"{e['ratio']:.2f}x |",
        ]
        if e
        else []
    )
    return "\n".join(
        [
            "| memories | `backup()`, store open | `copytree` of the stopped store | "
            "copy / backup | first open + `load()` of the backup | of the store |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {r['memories']:,} | {statistics.median(r['backup_s']):.2f} s "
            f"({mb['backup']:.0f} MB) | {statistics.median(r['copytree_s']):.2f} s "
            f"({mb['store']:.0f} MB) | {r['ratio']:.2f}x | {r['restore_s']:.1f} s | "
            f"{r['reopen_s']:.1f} s |",
            *again,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = bench_args(
        __doc__,
        HERE / "results" / "backup.json",
        argv,
        table,
        memories=(50_000, "memories in the store"),
        rounds=(3, "backups and copies timed"),
        reembed=(5_000, "memories re-embedded with the local model (0: skip)"),
    )
    if args is None:
        return 0
    results = measure(args.memories, args.rounds)
    if args.reembed:
        results["reembed"] = measure_reembed(args.reembed)
    write_results(args.out, results, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
