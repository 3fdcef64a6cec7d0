"""Cold start of ``bench/latency.py``: a new process opens the store and recalls once.

A server restarted, a script run again, a namespace unloaded and used again
(``max_loaded_namespaces``): each pays for reading the store before its first answer.
Oblivion reads the namespace's state, links and active vectors from SQLite, builds its
BM25 index, and on the first archive search its in-memory copy of the archive; raw Chroma
opens its collection and loads its HNSW index on the first query.

Each side runs in a fresh Python process, the sides taking turns. The model is loaded
and the imports (Chroma's too) done before the clock starts (the same for both); the files were just
written, so they are in the OS page cache, as on a machine that restarts a service.
Timed: ``Oblivion(path)`` and its first ``recall(deep=False)``, then its first deep
recall; ``PersistentClient(path)``, ``get_collection`` and the first query (embedding
included on both sides).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_OBLIVION = """
import json, sys, time
import chromadb  # imported before the clock starts, as on the raw side
from oblivion_core import FastEmbedEmbedder, ManualClock, Oblivion, Policy
path, now, capacity, k, first, second = sys.argv[1:7]
real = FastEmbedEmbedder()
real.embed_query("warm up the model")
policy = Policy.template("balanced").replace(maintain_every=0, active_capacity=int(capacity))
started = time.perf_counter()
mem = Oblivion(path, policy=policy, clock=ManualClock(float(now)), embedder=real)
opened = time.perf_counter()
mem.recall(first, k=int(k), deep=False, feedback=False)
recalled = time.perf_counter()
mem.recall(second, k=int(k), deep=True, feedback=False)
deep = time.perf_counter()
searched = mem.stats()["archive_search"]
mem.close()
print(json.dumps({"open": opened - started, "first_recall": recalled - started,
                  "first_deep": deep - recalled, "archive_search": searched}))
"""

_RAW = """
import json, sys, time
import chromadb
from chromadb.config import Settings
from oblivion_core import FastEmbedEmbedder
path, k, first = sys.argv[1:4]
real = FastEmbedEmbedder()
real.embed_query("warm up the model")
started = time.perf_counter()
client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
col = client.get_collection("raw-bench")
vec = real.embed_query(first)
col.query(query_embeddings=vec.reshape(1, -1), n_results=int(k), include=["documents", "distances"])
print(json.dumps({"first_query": time.perf_counter() - started}))
"""


def _child(script: str, args: Sequence[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"cold-start child failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure_reopen(
    workdir: Path,
    n: int,
    now: float,
    capacity: int,
    k: int,
    queries: Sequence[str],
    runs: int = 3,
) -> dict[str, Any]:
    """Median cold start over ``runs`` pairs of processes (a query of ``queries`` each)."""
    obl: list[dict[str, Any]] = []
    raw: list[float] = []
    for r in range(runs):
        first, second = queries[2 * r], queries[2 * r + 1]
        sides = ("raw", "obl") if r % 2 == 0 else ("obl", "raw")
        for side in sides:
            if side == "raw":
                got = _child(_RAW, [str(workdir / f"raw-{n}"), str(k), first])
                raw.append(got["first_query"])
            else:
                args = [str(workdir / f"oblivion-{n}"), repr(now), str(capacity), str(k)]
                obl.append(_child(_OBLIVION, [*args, first, second]))
    first_recall = float(np.median([o["first_recall"] for o in obl]))
    raw_first = float(np.median(raw))
    return {
        "n": n,
        "runs": runs,
        "open_s": float(np.median([o["open"] for o in obl])),
        "first_recall_s": first_recall,
        "first_deep_s": float(np.median([o["first_deep"] for o in obl])),
        "archive_search": sorted({str(o["archive_search"]) for o in obl}),
        "raw_first_query_s": raw_first,
        "ratio": first_recall / raw_first,
        "oblivion_runs": obl,
        "raw_runs": raw,
    }
