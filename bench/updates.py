"""Knowledge-update benchmark: does the newest statement of a fact win?

Data: ``bench/data/updates.json`` (written by ``bench/data/make_updates.py``): 80
conversations in which a fact changes 2-5 times (favourites, names, corrections, lists
with removals) with 1k-10k tokens of filler between statements, plus distractors that
look like updates but are not. Each conversation is streamed turn by turn (at its own
timestamps) into every method; the question comes at the end.

Metrics, per method:

* **latest-first**: every newest statement ranks above every stale one (questions that
  have stale statements; a newest statement missing from the top 50 counts as a miss);
* **newest in 256 tokens**: share of the newest statements inside a 256-token context
  packed in rank order (cl100k);
* **stale in context**: share of questions whose 256-token context holds a stale one;
* **distractor recall**: newest-in-256 on the distractor questions alone (both facts must
  stay first-class).

Methods: raw Chroma, BM25, LangChain's ``TimeWeightedVectorStoreRetriever`` (defaults) and
Oblivion, with the same embedder. Reproduce: ``python bench/updates.py`` (``--limit N`` for
a quick run); writes ``bench/results/updates.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo_data import Turn
from _locomo_methods import BASELINES, Embedder
from _locomo_metrics import TokenCounter, pack
from _oblivion_method import VARIANTS, variant_class

HERE = Path(__file__).resolve().parent
BUDGET = 256
RANK_K = 50
METHODS = {
    "chroma": BASELINES["chroma"],
    "bm25": BASELINES["bm25"],
    "langchain_time_weighted": BASELINES["langchain_time_weighted"],
    "oblivion": variant_class("oblivion_no_agent_run", VARIANTS["oblivion_no_agent_run"]),
}
EPOCH = 1_700_000_000.0  # conversations' t=0, as a wall-clock time


def load(path: Path, limit: int | None) -> list[dict[str, Any]]:
    """The conversations of the data file; with ``limit``, that many taken from each
    kind in turn (the file's first four are all distractors: ``--limit 3`` measured no
    update at all)."""
    if not path.exists():
        raise SystemExit(f"{path} not found: run `python bench/data/make_updates.py` first")
    convs: list[dict[str, Any]] = json.loads(path.read_text())["conversations"]
    if not limit:
        return convs
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for conv in convs:
        by_kind.setdefault(conv["kind"], []).append(conv)
    turns = itertools.zip_longest(*by_kind.values())
    taken = [c for group in turns for c in group if c is not None]
    return sorted(taken[:limit], key=convs.index)


def to_turns(conv: dict[str, Any]) -> list[Turn]:
    """Benchmark turns in time order, one memory per turn (``"<speaker>: <text>"``)."""
    return [
        Turn(
            dia_id=t["id"],
            speaker=t["speaker"],
            text=t["text"],
            memory_text=f"{t['speaker']}: {t['text']}",
            timestamp=EPOCH + float(t["t"]),
            session=1,
            position=k,
        )
        for k, t in enumerate(conv["turns"])
    ]


def score(ranked: list[str], q: dict[str, Any], costs: dict[str, int]) -> dict[str, float]:
    """The metrics of one question (see the module doc)."""
    newest, stale = set(q["newest"]), set(q["stale"])
    rank = {m: r for r, m in enumerate(ranked)}
    inf = len(ranked) + 1
    worst_new = max(rank.get(m, inf) for m in newest)
    best_stale = min((rank.get(m, inf + 1) for m in stale), default=inf + 1)
    packed, _ = pack(ranked, costs, BUDGET)
    ctx = set(packed)
    return {
        "latest_first": float(worst_new < inf and worst_new < best_stale),
        "newest_in_context": len(newest & ctx) / len(newest),
        "stale_in_context": float(bool(stale & ctx)),
        "has_stale": float(bool(stale)),
    }


def run(convs: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Stream every conversation into every method and score every question."""
    embedder = Embedder()
    counter = TokenCounter()
    texts = [f"{t['speaker']}: {t['text']}" for c in convs for t in c["turns"]]
    texts += [q["question"] for c in convs for q in c["questions"]]
    embedder.embed(texts, progress="embedding")
    rows: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    seconds = dict.fromkeys(names, 0.0)
    for conv in tqdm(convs, desc="conversations", unit="conv"):
        turns = to_turns(conv)
        vectors = embedder.embed([t.memory_text for t in turns])
        costs = {t.dia_id: counter(t.memory_text) for t in turns}
        for name in names:
            started = time.perf_counter()
            method = METHODS[name](embedder)
            try:
                method.build(turns, vectors, conv["id"])
                for q in conv["questions"]:
                    qv = embedder.embed([q["question"]])[0]
                    ranked = method.rank(q["question"], qv, EPOCH + float(q["t"]), RANK_K)
                    row = score(ranked, q, costs)
                    row["kind"] = conv["kind"]
                    rows[name].append(row)
            finally:
                method.close()
            seconds[name] += time.perf_counter() - started
    return {"methods": {n: summarise(rows[n], seconds[n]) for n in names}}


def summarise(rows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """Aggregate one method's question rows."""
    upd = [r for r in rows if r["has_stale"]]
    dis = [r for r in rows if r["kind"] == "distractor"]

    def mean(items: list[dict[str, Any]], key: str) -> float:
        return float(np.mean([r[key] for r in items])) if items else float("nan")

    return {
        "questions": len(rows),
        "update_questions": len(upd),
        "latest_first": mean(upd, "latest_first"),
        "newest_in_256": mean(rows, "newest_in_context"),
        "newest_in_256_updates": mean(upd, "newest_in_context"),
        "stale_in_256": mean(upd, "stale_in_context"),
        "distractor_newest_in_256": mean(dis, "newest_in_context"),
        "seconds": seconds,
    }


def render_markdown_table(results: dict[str, Any]) -> str:
    """The README table (percentages)."""
    lines = [
        "| method | latest-first | newest in 256 tokens | stale in 256 tokens | "
        "distractors kept (newest in 256) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, m in results["methods"].items():
        lines.append(
            f"| `{name}` | {100 * m['latest_first']:.1f} | {100 * m['newest_in_256']:.1f} | "
            f"{100 * m['stale_in_256']:.1f} | {100 * m['distractor_newest_in_256']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=HERE / "data" / "updates.json")
    ap.add_argument(
        "--limit", type=int, default=None, help="N conversations only, taken across kinds"
    )
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--out", type=Path, default=HERE / "results" / "updates.json")
    ap.add_argument("--readme-table", action="store_true", help="print the table from --out")
    args = ap.parse_args(argv)
    if args.readme_table:
        print(render_markdown_table(json.loads(args.out.read_text())))
        return 0
    names = [n.strip() for n in args.methods.split(",") if n.strip()]
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise SystemExit(f"unknown methods {unknown}; choose from {list(METHODS)}")
    results = run(load(args.data, args.limit), names)
    results["config"] = {"budget": BUDGET, "rank_k": RANK_K, "limit": args.limit}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(render_markdown_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
