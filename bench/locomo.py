"""LoCoMo evidence-recall benchmark: memory methods side by side under one protocol.

Each conversation is streamed turn by turn (one memory per turn, at the turn's time) into
every method; every question is then asked one day after the last turn. A method ranks
turns; we measure the share of a question's evidence turns found in its top-k and inside
a token budget packed greedily in rank order (tiktoken ``cl100k_base``), overall and per
LoCoMo category, plus query latency. All methods share one embedder
(all-MiniLM-L6-v2 via fastembed) and each text is embedded once.

Oblivion's entries also hold ``engine``: the active-tier share at question time and the
mean tokens of the context its own ``recall(token_budget=...)`` packs, per budget, overall
and per conversation (measured outside the timed ``rank`` call; see ``_oblivion_method``).

Run from the repository root (``. ../shared/offline-env.sh`` points at offline assets)::

    python bench/locomo.py                       # full run, all methods
    python bench/locomo.py --limit 20 --conversations 2 --methods chroma,bm25 \
        --out /tmp/locomo-quick.json             # quick check; keeps bench/results intact
    python bench/locomo.py --readme-table        # Markdown tables from the last results

Add a method by registering a :class:`RetrievalMethod` factory in :data:`METHODS`.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import random
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo_data import (
    CATEGORY_NAMES,
    QUESTION_DELAY_S,
    TURN_SPACING_S,
    Conversation,
    Turn,
    load_locomo,
)
from _locomo_methods import BASELINES, Embedder, MethodFactory, RetrievalMethod
from _locomo_metrics import (
    BUDGETS,
    KS,
    RANK_K,
    QuestionScore,
    TokenCounter,
    aggregate,
    score_question,
)
from _oblivion_method import ENGINE_STATS_NOTE, VARIANTS, engine_stats, variant_class

__all__ = [
    "METHODS",
    "Embedder",
    "MethodFactory",
    "RetrievalMethod",
    "Turn",
    "main",
    "render_category_table",
    "render_markdown_table",
    "run",
]

METHODS: dict[str, MethodFactory] = dict(BASELINES)
METHODS.update({name: variant_class(name, v) for name, v in VARIANTS.items()})
"""Methods by name; each value builds a fresh :class:`RetrievalMethod` per conversation."""

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "locomo.json"
TABLE_BUDGET = 1024
"""Budget whose mean injected tokens the Markdown table shows."""

_PACKAGES = (
    "chromadb",
    "fastembed",
    "langchain-classic",
    "langchain-core",
    "llama-index-core",
    "numpy",
    "rank-bm25",
    "tiktoken",
)


def _default_data_path() -> Path | None:
    shared = os.environ.get("OBLIVION_SHARED")
    return Path(shared) / "benchmarks" / "locomo" / "locomo_dev.json" if shared else None


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in _PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def _dataset_summary(conversations: list[Conversation]) -> dict[str, Any]:
    per_conv = [
        {
            "conv_id": c.conv_id,
            "turns": len(c.turns),
            "sessions": len({t.session for t in c.turns}),
            "questions_evaluated": len(c.questions),
            "skipped_questions": len(c.skipped_questions),
            "skipped_question_indices": c.skipped_questions,
            "dropped_evidence_ids": len(c.dropped_evidence),
            "dropped_evidence_tokens": c.dropped_evidence,
        }
        for c in conversations
    ]
    categories = [q.category for c in conversations for q in c.questions]
    return {
        "conversations": per_conv,
        "turns": sum(len(c.turns) for c in conversations),
        "questions_evaluated": len(categories),
        "questions_by_category": {
            str(cat): categories.count(cat) for cat in CATEGORY_NAMES if cat in categories
        },
        "skipped_questions": sum(len(c.skipped_questions) for c in conversations),
        "dropped_evidence_ids": sum(len(c.dropped_evidence) for c in conversations),
    }


def _check_ranking(name: str, ranked: list[str], known: set[str], k: int) -> None:
    if len(ranked) > k:
        raise ValueError(f"method {name!r} returned {len(ranked)} ids for k={k}")
    if len(set(ranked)) != len(ranked):
        raise ValueError(f"method {name!r} returned duplicate turn ids")
    unknown = [i for i in ranked if i not in known]
    if unknown:
        raise ValueError(f"method {name!r} returned ids that are no turns: {unknown[:5]}")


def run(
    conversations: list[Conversation],
    method_names: list[str],
    embedder: Embedder,
    counter: TokenCounter,
    rank_k: int = RANK_K,
) -> tuple[dict[str, list[QuestionScore]], dict[str, float], dict[str, dict[str, Any]]]:
    """Stream every conversation into every method and score every question.

    Methods run one at a time per conversation: built, asked the questions in dataset
    order at the conversation's question time (each :meth:`RetrievalMethod.observe`
    untimed, then :meth:`RetrievalMethod.rank` timed), then reported on and closed.

    Returns:
        Scores per method; seconds spent per method (build + questions, without
        ``observe``, which is under ``"<method>:observe"`` for methods that report), with
        the shared embedding time under ``"embedding"``; and, for methods that report
        (:meth:`RetrievalMethod.report`), their reports by conversation id.
    """
    started = time.perf_counter()
    texts = [t.memory_text for c in conversations for t in c.turns]
    texts += [q.question for c in conversations for q in c.questions]
    embedder.embed(texts, progress="embedding")
    seconds: dict[str, float] = {"embedding": time.perf_counter() - started}

    scores: dict[str, list[QuestionScore]] = {name: [] for name in method_names}
    reports: dict[str, dict[str, Any]] = {}
    total = len(method_names) * sum(len(c.questions) for c in conversations)
    with tqdm(total=total, desc="questions", unit="q") as bar:
        for conv in conversations:
            turn_vectors = embedder.embed([t.memory_text for t in conv.turns])
            question_vectors = embedder.embed([q.question for q in conv.questions])
            costs = {t.dia_id: counter(t.memory_text) for t in conv.turns}
            known = set(costs)
            for name in method_names:
                bar.set_postfix_str(f"{conv.conv_id} {name}")
                started = time.perf_counter()
                observed = 0.0  # untimed extra measurements, left out of seconds[name]
                method = METHODS[name](embedder)
                try:
                    method.build(conv.turns, turn_vectors, conv.conv_id)
                    for question, q_vector in zip(conv.questions, question_vectors, strict=True):
                        observing = time.perf_counter()
                        method.observe(question.question, q_vector, conv.question_time, rank_k)
                        observed += time.perf_counter() - observing
                        asked = time.perf_counter()
                        ranked = method.rank(
                            question.question, q_vector, conv.question_time, rank_k
                        )
                        latency_ms = (time.perf_counter() - asked) * 1000.0
                        _check_ranking(name, ranked, known, rank_k)
                        scores[name].append(
                            score_question(
                                ranked,
                                question.evidence,
                                costs,
                                conv_id=conv.conv_id,
                                index=question.index,
                                category=question.category,
                                latency_ms=latency_ms,
                            )
                        )
                        bar.update()
                    report = method.report()
                    if report is not None:
                        reports.setdefault(name, {})[conv.conv_id] = report
                finally:
                    method.close()
                seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - started - observed
                if name in reports:
                    seconds[f"{name}:observe"] = seconds.get(f"{name}:observe", 0.0) + observed
    return scores, seconds, reports


def _pct(value: float) -> str:
    return f"{100.0 * value:.1f}"


def render_markdown_table(results: dict[str, Any]) -> str:
    """Render the summary table (recall in %, latency in ms) from a results dict."""
    header = (
        ["method"]
        + [f"R@{k}" for k in KS]
        + [f"R@{b}t" for b in BUDGETS]
        + [f"mean tokens @{TABLE_BUDGET}", "median ms", "p95 ms"]
    )
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    for name, result in results["methods"].items():
        overall = result["overall"]
        row = (
            [f"`{name}`"]
            + [_pct(overall["recall_at_k"][str(k)]) for k in KS]
            + [_pct(overall["recall_at_budget"][str(b)]) for b in BUDGETS]
            + [
                f"{overall['mean_tokens_at_budget'][str(TABLE_BUDGET)]:.0f}",
                f"{result['latency_ms']['median']:.2f}",
                f"{result['latency_ms']['p95']:.2f}",
            ]
        )
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def render_category_table(results: dict[str, Any], budget: int = TABLE_BUDGET) -> str:
    """Render evidence recall within ``budget`` tokens (%) per LoCoMo question category.

    One row per method, one column per category any method has results for (in
    category-number order), then all questions; a method without results for a
    category shows ``-`` there and is named under the table.
    """
    methods = results["methods"]
    names = {str(k): v for k, v in results["config"].get("categories", {}).items()}
    for result in methods.values():
        for key, cat in result.get("by_category", {}).items():
            names.setdefault(key, cat.get("name", key))
    keys = sorted(
        (k for k in names if any(k in r.get("by_category", {}) for r in methods.values())),
        key=lambda k: (len(k), k),  # "1" < "2" < ... < "10"
    )
    counts = dict(results.get("dataset", {}).get("questions_by_category", {}))
    counts["all"] = results.get("dataset", {}).get("questions_evaluated")
    header = ["method"] + [
        f"{label} (n={counts[key]})" if counts.get(key) else label
        for key, label in [*((k, names[k]) for k in keys), ("all", "all")]
    ]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    missing: list[str] = []
    for name, result in methods.items():
        by_cat = result.get("by_category", {})
        values = [by_cat.get(k, {}).get("recall_at_budget", {}).get(str(budget)) for k in keys]
        if None in values:
            missing.append(f"`{name}`")
        values.append(result["overall"]["recall_at_budget"][str(budget)])
        cells = ["-" if v is None else _pct(v) for v in values]
        lines.append("| " + " | ".join([f"`{name}`", *cells]) + " |")
    if missing:
        lines += ["", f"No results for some categories (`-`): {', '.join(missing)}."]
    return "\n".join(lines)


def plot_recall_vs_budget(results: dict[str, Any], path: Path) -> None:
    """Save a PNG of overall evidence recall against token budget, one line per method."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    # Distinct dashes and markers keep methods with equal results (lines on top of each
    # other) visible.
    lines = itertools.cycle(("-", "--", "-.", ":"))
    markers = itertools.cycle("os^Dv")
    for name, result in results["methods"].items():
        recall = result["overall"]["recall_at_budget"]
        ax.plot(
            BUDGETS,
            [100.0 * recall[str(b)] for b in BUDGETS],
            linestyle=next(lines),
            marker=next(markers),
            label=name,
        )
    ax.set_xscale("log", base=2)
    ax.set_xticks(BUDGETS, [str(b) for b in BUDGETS])
    ax.set_xlabel("token budget (cl100k_base)")
    ax.set_ylabel("evidence recall (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"LoCoMo evidence recall vs token budget ({results['dataset']['turns']} turns)")
    ax.grid(True, alpha=0.3)
    # beside the axes: inside, the box hid the leading methods' points at 256-512 tokens
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=_default_data_path(),
        help="LoCoMo JSON (default: $OBLIVION_SHARED/benchmarks/locomo/locomo_dev.json)",
    )
    parser.add_argument("--limit", type=int, help="evaluate the first N questions per conversation")
    parser.add_argument("--conversations", type=int, help="use the first N conversations")
    parser.add_argument(
        "--methods",
        default=",".join(METHODS),
        help=f"comma-separated methods (default: all = {','.join(METHODS)})",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results JSON path")
    parser.add_argument("--seed", type=int, default=0, help="seed for random and numpy")
    parser.add_argument(
        "--rank-k",
        type=int,
        default=RANK_K,
        help=f"ranking depth asked of each method; budgets pack from it (default {RANK_K})",
    )
    parser.add_argument(
        "--readme-table",
        nargs="?",
        const=True,
        metavar="JSON",
        help="print the Markdown table of an existing results JSON (default: --out) and exit",
    )
    args = parser.parse_args(argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in args.methods if m not in METHODS]
    if unknown or not args.methods:
        parser.error(f"unknown or no methods {unknown}; choose from {', '.join(METHODS)}")
    for flag in ("limit", "conversations", "rank_k"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1, got {value}")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or print a table with ``--readme-table``); return an exit code."""
    args = _parse_args(argv)
    if args.readme_table is not None:
        path = args.out if args.readme_table is True else Path(args.readme_table)
        if not path.is_file():
            sys.exit(f"error: no results at {path}; run the benchmark first or pass a JSON path")
        loaded = json.loads(path.read_text(encoding="utf-8"))
        print(render_markdown_table(loaded))
        print()
        print(render_category_table(loaded))
        return 0

    if args.data is None:
        sys.exit("error: no LoCoMo data; pass --data PATH or set $OBLIVION_SHARED")
    if not args.data.is_file():
        sys.exit(f"error: LoCoMo data not found at {args.data}; pass --data PATH")

    random.seed(args.seed)
    np.random.seed(args.seed)
    started = time.perf_counter()
    conversations = load_locomo(args.data)[: args.conversations]
    if args.limit is not None:
        for conv in conversations:
            conv.questions = conv.questions[: args.limit]

    embedder = Embedder()
    counter = TokenCounter()
    scores, seconds, reports = run(conversations, args.methods, embedder, counter, args.rank_k)
    seconds["total"] = time.perf_counter() - started

    results: dict[str, Any] = {
        "benchmark": "locomo-evidence-recall",
        "config": {
            "data": args.data.name,
            "data_sha256": hashlib.sha256(args.data.read_bytes()).hexdigest(),
            "conversations": [c.conv_id for c in conversations],
            "limit": args.limit,
            "seed": args.seed,
            "methods": args.methods,
            "method_notes": {name: getattr(METHODS[name], "note", "") for name in args.methods},
            "rank_k": args.rank_k,
            "recall_at_k": list(KS),
            "token_budgets": list(BUDGETS),
            "tokenizer": counter.encoding,
            "packing": "greedy in rank order over the top rank_k, skipping items that do not fit",
            "embedding_model": embedder.model_name,
            "turn_spacing_s": TURN_SPACING_S,
            "question_delay_s": QUESTION_DELAY_S,
            "memory_text": "'<speaker>: <text>' + ' [image: <blip_caption>]' when captioned",
            "latency": "wall time of rank(); query embedding precomputed and excluded",
            "categories": {str(k): v for k, v in CATEGORY_NAMES.items()},
            "engine_stats": ENGINE_STATS_NOTE,
            "versions": _versions(),
            "cpus": os.cpu_count(),
        },
        "dataset": _dataset_summary(conversations),
        "methods": {
            name: {
                **aggregate(scores[name], CATEGORY_NAMES),
                **({"engine": engine_stats(reports[name])} if name in reports else {}),
            }
            for name in args.methods
        },
        "runtime_seconds": {k: round(v, 2) for k, v in seconds.items()},
    }

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    plot_path = args.out.with_name(f"{args.out.stem}_recall_vs_budget.png")
    plot_recall_vs_budget(results, plot_path)

    dataset = results["dataset"]
    print(
        f"\n{dataset['turns']} turns, {dataset['questions_evaluated']} questions; "
        f"{dataset['skipped_questions']} questions skipped (no valid evidence), "
        f"{dataset['dropped_evidence_ids']} evidence ids dropped (no such turn)\n"
    )
    print(render_markdown_table(results))
    print()
    print(render_category_table(results))
    for name, result in results["methods"].items():
        if "engine" in result:
            engine = result["engine"]
            tokens = engine["mean_tokens_per_recall"][str(TABLE_BUDGET)]
            print(
                f"{name}: active share {100.0 * engine['active_share']:.1f} %, "
                f"mean tokens per recall @{TABLE_BUDGET} {tokens:.0f}"
            )
    print(f"\nwrote {args.out} and {plot_path} in {seconds['total']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
