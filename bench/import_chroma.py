"""Importing a Chroma collection, against copying it into another Chroma collection.

A collection of N records (ids, texts, metadata, vectors) is written with Chroma on
disk, as an app that used Chroma as its memory has one. ``Oblivion.import_chroma``
makes them memories of a new store, keeping their vectors. The plain alternative in the
same run is a raw copy of the collection into a new Chroma collection (``get`` and
``add`` in batches of the same size): what the import costs beyond it is Oblivion's own
writes (SQLite, the BM25 index, links, stale-fact checks). The import is timed twice,
with the policy's stale-fact detection and with ``supersede=False`` (for documents that
state nothing about the user). Rounds take turns going first; each ratio is the raw
copy's median over the import's (1.0: as fast).

Here the vectors come from ``oblivion_core.testing.HashEmbedder`` (384 dimensions, as
the default model's), so nothing timed embeds but the model check's 16 texts.

Apart, on fewer records and with the local model (all-MiniLM-L6-v2 through fastembed,
whose vectors Chroma's default embedding function also makes): the import keeping the
collection's vectors, against ``reembed=True`` (each text embedded again, as storing
the texts with ``remember_many`` would).

Reproduce: ``python bench/import_chroma.py`` (about three minutes); writes
``bench/results/import_chroma.json``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import bench_args, memory_texts, write_results

from oblivion_core import Oblivion
from oblivion_core.engine_import import IMPORT_BATCH
from oblivion_core.testing import HashEmbedder

HERE = Path(__file__).resolve().parent


def _source(path: Path, texts: list[str], vectors: Any) -> Any:
    """A collection on disk holding ``texts`` with ``vectors`` and a little metadata."""
    client = chromadb.PersistentClient(str(path))
    col = client.create_collection("source", metadata={"hnsw:space": "cosine"})
    ids = [f"m{i}" for i in range(len(texts))]
    for s in tqdm(range(0, len(texts), IMPORT_BATCH), desc="writing the collection", unit="batch"):
        e = s + IMPORT_BATCH
        col.add(
            ids=ids[s:e],
            embeddings=np.asarray(vectors[s:e]),
            documents=texts[s:e],
            metadatas=[{"source": "chat", "n": i} for i in range(s, min(e, len(texts)))],
        )
    return col


def _raw_copy(col: Any, path: Path) -> float:
    """Seconds to copy ``col`` into a new collection on disk, a batch at a time."""
    started = time.perf_counter()
    target = chromadb.PersistentClient(str(path)).create_collection(
        "copy", metadata={"hnsw:space": "cosine"}
    )
    for offset in range(0, col.count(), IMPORT_BATCH):
        page = col.get(
            limit=IMPORT_BATCH, offset=offset, include=["documents", "metadatas", "embeddings"]
        )
        target.add(
            ids=page["ids"],
            embeddings=page["embeddings"],
            documents=page["documents"],
            metadatas=page["metadatas"],
        )
    return time.perf_counter() - started


def _import(col: Any, path: Path, embedder: Any, **kwargs: Any) -> tuple[float, int]:
    """Seconds to import ``col`` into a new store at ``path``, and the memories it holds."""
    started = time.perf_counter()
    with Oblivion(path, embedder=embedder) as mem:
        report = mem.import_chroma(col, **kwargs)
        took = time.perf_counter() - started
    return took, report.imported


def measure(memories: int, rounds: int) -> dict[str, Any]:
    """Time imports and raw copies of a collection of ``memories`` hashed vectors."""
    embedder = HashEmbedder(dim=384)
    texts = memory_texts(memories, 20_261_208)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        col = _source(root / "app", texts, embedder.embed_documents(texts))
        times: dict[str, list[float]] = {"import_s": [], "plain_import_s": [], "raw_copy_s": []}
        sides = list(times)
        for i in tqdm(range(rounds), desc="import / copy rounds", unit="round"):
            for side in sides[i % 3 :] + sides[: i % 3]:
                if side == "raw_copy_s":
                    times[side].append(_raw_copy(col, root / f"copy-{i}"))
                    continue
                plain = {"supersede": False} if side == "plain_import_s" else {}
                took, imported = _import(col, root / f"{side}-{i}", embedder, **plain)
                assert imported == memories, imported
                times[side].append(took)
    raw = statistics.median(times["raw_copy_s"])
    return {
        "memories": memories,
        "rounds": rounds,
        **times,
        "ratio": raw / statistics.median(times["import_s"]),
        "plain_ratio": raw / statistics.median(times["plain_import_s"]),
    }


def measure_model(memories: int) -> dict[str, Any]:
    """With the local model: the import keeping the vectors, against ``reembed=True``."""
    from oblivion_core import FastEmbedEmbedder

    model = FastEmbedEmbedder()
    texts = memory_texts(memories, 20_261_209)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        col = _source(root / "app", texts, model.embed_documents(texts))
        kept, n_kept = _import(col, root / "kept", model)
        again, n_again = _import(col, root / "again", model, reembed=True)
    assert n_kept == n_again == memories
    return {"memories": memories, "kept_s": kept, "reembed_s": again, "speedup": again / kept}


def table(results: dict[str, Any]) -> str:
    """The README's table."""
    r = results
    n = r["memories"]
    imp, raw = statistics.median(r["import_s"]), statistics.median(r["raw_copy_s"])
    plain = statistics.median(r["plain_import_s"])
    m = r.get("model")
    model = (
        [
            "",
            "| records, local model's vectors | import, vectors kept | `reembed=True` | speed-up |",
            "|---:|---:|---:|---:|",
            f"| {m['memories']:,} | {m['kept_s']:.1f} s | {m['reembed_s']:.1f} s | "
            f"{m['speedup']:.1f}x |",
        ]
        if m
        else []
    )
    return "\n".join(
        [
            "| records | `import_chroma()` | `supersede=False` | raw copy into a new "
            "collection | copy / import | copy / import, `supersede=False` |",
            "|---:|---:|---:|---:|---:|---:|",
            f"| {n:,} | {imp:.2f} s ({n / imp:,.0f}/s) | {plain:.2f} s ({n / plain:,.0f}/s) "
            f"| {raw:.2f} s ({n / raw:,.0f}/s) | {r['ratio']:.2f}x | {r['plain_ratio']:.2f}x |",
            *model,
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = bench_args(
        __doc__,
        HERE / "results" / "import_chroma.json",
        argv,
        table,
        memories=(20_000, "records in the collection"),
        rounds=(3, "imports and raw copies timed"),
        model=(2_000, "records imported with the local model, kept and re-embedded (0: skip)"),
    )
    if args is None:
        return 0
    results = measure(args.memories, args.rounds)
    if args.model:
        results["model"] = measure_model(args.model)
    write_results(args.out, results, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
