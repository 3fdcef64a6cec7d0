"""The text rules of a write with and without their keyword checks: the figures behind
``oblivion_core.triggers``.

Every write categorises and scores its text (``HeuristicImportance``) and parses it for
the stale-fact rule (``supersession.parse``). Both run many case-insensitive patterns,
most of which match nothing. With the checks, a pattern is searched only in texts that
hold one of its trigger words, and the two longest stale-fact patterns are tried only
where a match can start (a one-character lookahead). Without them (the plain
alternative, in the same run), every pattern searches every text.

The latency benchmark's ingest texts are read both ways, the ways alternating round by
round; the script checks that both give the same categories, scores and parses, text by
text, and reports microseconds per text (median over rounds).

Reproduce: ``python bench/text_rules.py`` (about half a minute); writes
``bench/results/text_rules.json``.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _latency_corpus import LATENCY_SEED, bench_args, memory_texts, write_results

from oblivion_core import importance, supersession, triggers

HERE = Path(__file__).resolve().parent
GATED = ("_NEGATED", "_QUANTITY")


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Every pattern searches every text, as before the checks."""
    saved = {name: getattr(supersession, name) for name in (*GATED, "may_match")}
    saved_imp = importance.may_match
    try:
        for name in GATED:
            setattr(supersession, name, triggers.ungated(saved[name]))
        supersession.may_match = importance.may_match = lambda lower, words: True
        yield
    finally:
        for name, value in saved.items():
            setattr(supersession, name, value)
        importance.may_match = saved_imp


def read(texts: list[str]) -> tuple[list[Any], float, float]:
    """Parses and appraisals of ``texts`` (no cache), and seconds per text for each."""
    parse = supersession.parse.__wrapped__
    scorer = importance.HeuristicImportance()
    importance._first_rule.cache_clear()
    started = time.perf_counter()
    parsed = [parse(t) for t in texts]
    middle = time.perf_counter()
    # what a write asks: the category, then the score (the rule's cache answers it)
    appraised = [(scorer.categorize(t), scorer.score(t)) for t in texts]
    ended = time.perf_counter()
    importance._first_rule.cache_clear()
    n = len(texts)
    return [parsed, appraised], (middle - started) / n, (ended - middle) / n


def table(results: dict[str, Any]) -> str:
    """The README table."""
    lines = [
        "| Rule | with the checks, us per text | every pattern on every text | ratio |",
        "|---|---:|---:|---:|",
    ]
    for part in ("parse", "importance", "both"):
        r = results[part]
        lines.append(
            f"| {r['label']} | {r['checked_us']:.1f} | {r['unchecked_us']:.1f} "
            f"| {r['ratio']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    out = HERE / "results" / "text_rules.json"
    args = bench_args(
        __doc__,
        out,
        argv,
        table,
        texts=(5_000, "texts read per round"),
        rounds=(7, "rounds per way"),
    )
    if args is None:
        return 0
    texts = memory_texts(args.texts, LATENCY_SEED + 3)  # the ingest section's texts
    times: dict[str, dict[str, list[float]]] = {
        way: {"parse": [], "importance": []} for way in ("checked", "unchecked")
    }
    same = True
    for r in tqdm(range(args.rounds), desc="rounds", unit="round"):
        outputs = {}
        for way in ("checked", "unchecked") if r % 2 == 0 else ("unchecked", "checked"):
            with unchecked() if way == "unchecked" else contextlib.nullcontext():
                outputs[way], parse_s, imp_s = read(texts)
            times[way]["parse"].append(parse_s * 1e6)
            times[way]["importance"].append(imp_s * 1e6)
        same = same and outputs["checked"] == outputs["unchecked"]
    if not same:
        print("the two ways read some text differently", file=sys.stderr)
        return 1
    results: dict[str, Any] = {"texts": len(texts), "rounds": args.rounds, "same": same}
    labels = {"parse": "stale-fact parse", "importance": "category and importance"}
    for part, label in labels.items():
        checked = statistics.median(times["checked"][part])
        plain = statistics.median(times["unchecked"][part])
        results[part] = {
            "label": label,
            "checked_us": checked,
            "unchecked_us": plain,
            "ratio": checked / plain,
        }
    both_checked = results["parse"]["checked_us"] + results["importance"]["checked_us"]
    both_plain = results["parse"]["unchecked_us"] + results["importance"]["unchecked_us"]
    results["both"] = {
        "label": "both (a write's text rules)",
        "checked_us": both_checked,
        "unchecked_us": both_plain,
        "ratio": both_checked / both_plain,
    }
    write_results(args.out, results, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
