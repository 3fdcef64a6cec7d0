"""Moving a store to a Chroma server: how long the copy takes against writing the same
records into a collection on that server yourself.

A store is written on disk (the embedded default), then opened with
``vector_store=VectorStore.server(...)``; ``repair_vector_store()`` copies its memories
to the server from the activation database (README, "A Chroma server"). The plain way is
Chroma's ``add`` of the same ids, vectors and texts, in batches of 5,000, into a
collection on the same server: once before the move and once after, and the ratio is
their mean's time over the move's (1.0: as fast as a bare ``add``).

The vectors come from ``oblivion_core.testing.HashEmbedder`` (384 dimensions): a copy
reads them from SQLite whatever model made them, and no model is loaded. A ``chroma
run`` server is started for the run on a free port, with its data in a temporary folder.

Reproduce: ``python bench/move.py`` (about a minute); writes ``bench/results/move.json``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import bench_args, memory_texts, write_results

from oblivion_core import Oblivion, VectorStore
from oblivion_core.testing import HashEmbedder, chroma_server

HERE = Path(__file__).resolve().parent
BATCH = 5_000


def raw_copy(host: str, port: int, name: str, records: dict[str, Any]) -> float:
    """Seconds to ``add`` the records into a new collection on the server."""
    import chromadb

    col = chromadb.HttpClient(host=host, port=port).create_collection(
        name, metadata={"hnsw:space": "cosine"}
    )
    ids, vectors, texts = records["ids"], records["vectors"], records["texts"]
    started = time.perf_counter()
    for start in range(0, len(ids), BATCH):
        end = start + BATCH
        col.add(ids=ids[start:end], embeddings=vectors[start:end], documents=texts[start:end])
    return time.perf_counter() - started


def measure(memories: int) -> dict[str, Any]:
    """Write ``memories`` on disk, then time the move and the two plain copies."""
    embedder = HashEmbedder(dim=384)
    texts = memory_texts(memories, 20_261_206)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with Oblivion(root / "state", embedder=embedder) as mem:
            for start in tqdm(range(0, memories, 2_000), desc="writing the store", unit="batch"):
                mem.remember_many(texts[start : start + 2_000], supersede=False)
            held = mem.records()
            vectors = mem._db.vectors(mem.default_namespace, [r.id for r in held])
        records = {
            "ids": [r.id for r in held],
            "vectors": np.stack([vectors[r.id] for r in held]),
            "texts": [r.text for r in held],
        }
        with chroma_server(root / "server") as (host, port, _):
            before = raw_copy(host, port, "raw-before", records)
            server = VectorStore.server(host, port, prefix="moved")
            with Oblivion(root / "state", embedder=embedder, vector_store=server) as mem:
                started = time.perf_counter()
                copied = sum(
                    mem.repair_vector_store(namespace=ns)["put_back"] for ns in mem.namespaces()
                )
                moved = time.perf_counter() - started
            after = raw_copy(host, port, "raw-after", records)
    assert copied == memories, (copied, memories)
    raw = (before + after) / 2
    return {
        "memories": memories,
        "move_s": moved,
        "raw_add_s": [before, after],
        "ratio": raw / moved,
        "move_per_s": memories / moved,
    }


def table(results: dict[str, Any]) -> str:
    """The README's table."""
    r = results
    raw = sum(r["raw_add_s"]) / 2
    return "\n".join(
        [
            "| memories | move (`repair_vector_store`) | Chroma `add` of the same records | "
            "rate, move / add |",
            "|---:|---:|---:|---:|",
            f"| {r['memories']:,} | {r['move_s']:.1f} s ({r['move_per_s']:,.0f}/s) | "
            f"{raw:.1f} s | {r['ratio']:.2f}x |",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = bench_args(
        __doc__,
        HERE / "results" / "move.json",
        argv,
        table,
        memories=(20_000, "memories in the store moved"),
    )
    if args is None:
        return 0
    write_results(args.out, measure(args.memories), table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
