"""Texts per ONNX call when the local model embeds a write's batch: the figures behind
``FastEmbedEmbedder(batch_size=32)``.

``remember_many`` embeds its texts in one ``embed_documents`` call, shortest first (a
batched transformer pads every text of an ONNX call to the call's longest). The latency
benchmark's ingest texts, in writes of 500, are embedded with each batch size, in the
order they came and shortest first; the sizes alternate round by round. fastembed's own
default is 256, Oblivion's was 64 until this measurement.

Reproduce: ``python bench/embed_batch.py`` (about three minutes); writes
``bench/results/embed_batch.json``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import LATENCY_SEED, bench_args, memory_texts, write_results

from oblivion_core import FastEmbedEmbedder

HERE = Path(__file__).resolve().parent
SIZES = (16, 32, 64, 256)
WRITE = 500


def table(results: dict[str, Any]) -> str:
    """The README table: milliseconds per write of 500 texts, and against 256."""
    lines = [
        "| Texts per ONNX call | in the order written | shortest first | shortest first / 256 |",
        "|---:|---:|---:|---:|",
    ]
    base = results["sizes"]["256"]["shortest first"]
    for size, r in results["sizes"].items():
        lines.append(
            f"| {int(size)} | {r['as written']:.0f} ms | {r['shortest first']:.0f} ms "
            f"| {r['shortest first'] / base:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    out = HERE / "results" / "embed_batch.json"
    args = bench_args(
        __doc__, out, argv, table, texts=(3_000, "texts per round"), rounds=(3, "rounds")
    )
    if args is None:
        return 0
    model = FastEmbedEmbedder()._load()
    texts = memory_texts(args.texts, LATENCY_SEED + 3)  # the ingest section's texts
    writes = [texts[i : i + WRITE] for i in range(0, len(texts), WRITE)]
    list(model.embed(writes[0][:64], batch_size=64))  # loads the session
    times: dict[tuple[int, str], list[float]] = {}
    for r in tqdm(range(args.rounds), desc="rounds", unit="round"):
        for size in SIZES if r % 2 == 0 else SIZES[::-1]:
            for order in ("as written", "shortest first"):
                for write in writes:
                    part = sorted(write, key=len) if order == "shortest first" else write
                    started = time.perf_counter()
                    list(model.embed(part, batch_size=size))
                    ms = (time.perf_counter() - started) * 1e3
                    times.setdefault((size, order), []).append(ms)
    results: dict[str, Any] = {"texts_per_write": WRITE, "writes": len(writes) * args.rounds}
    results["sizes"] = {
        str(size): {
            order: statistics.median(times[(size, order)])
            for order in ("as written", "shortest first")
        }
        for size in SIZES
    }
    write_results(args.out, results, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
