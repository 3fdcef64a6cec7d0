"""Evidence recall at rank cut-offs and within token budgets, and their aggregation."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

RANK_K = 50
"""Ranking depth asked of every method; the pool that token budgets are packed from."""

KS: tuple[int, ...] = (5, 10, 25, 50)
BUDGETS: tuple[int, ...] = (256, 512, 1024, 2048)
TOKENIZER = "cl100k_base"


class TokenCounter:
    """Count tiktoken tokens of a text, caching by text."""

    def __init__(self, encoding: str = TOKENIZER) -> None:
        import tiktoken

        self.encoding = encoding
        self._encoding = tiktoken.get_encoding(encoding)
        self._cache: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        count = self._cache.get(text)
        if count is None:
            count = len(self._encoding.encode(text, disallowed_special=()))
            self._cache[text] = count
        return count


def pack(ranked: Sequence[str], costs: Mapping[str, int], budget: int) -> tuple[list[str], int]:
    """Greedily pack ids in rank order, skipping any that no longer fit.

    Args:
        ranked: Ids, best first.
        costs: Token cost of each id.
        budget: Token budget; the packed total never exceeds it.

    Returns:
        The packed ids in rank order and their total cost in tokens.
    """
    packed: list[str] = []
    used = 0
    for item in ranked:
        cost = costs[item]
        if used + cost <= budget:
            packed.append(item)
            used += cost
    return packed, used


@dataclass(frozen=True, slots=True)
class QuestionScore:
    """Metrics of one method on one question.

    Attributes:
        conv_id: Conversation id.
        index: Index of the QA item in the conversation's ``qa`` list.
        category: LoCoMo category 1-5.
        recall_at_k: Fraction of evidence turns in the top ``k``, by ``k``.
        recall_at_budget: Fraction of evidence turns packed within the budget, by budget.
        tokens_at_budget: Tokens packed within the budget, by budget.
        latency_ms: Wall time of the ``rank`` call, in milliseconds.
    """

    conv_id: str
    index: int
    category: int
    recall_at_k: dict[int, float]
    recall_at_budget: dict[int, float]
    tokens_at_budget: dict[int, int]
    latency_ms: float


def score_question(
    ranked: Sequence[str],
    evidence: Iterable[str],
    costs: Mapping[str, int],
    *,
    conv_id: str,
    index: int,
    category: int,
    latency_ms: float,
) -> QuestionScore:
    """Score one ranking against its (non-empty, distinct) evidence ids."""
    wanted = set(evidence)

    def recall(ids: Iterable[str]) -> float:
        return len(wanted.intersection(ids)) / len(wanted)

    packs = {budget: pack(ranked, costs, budget) for budget in BUDGETS}
    return QuestionScore(
        conv_id=conv_id,
        index=index,
        category=category,
        recall_at_k={k: recall(ranked[:k]) for k in KS},
        recall_at_budget={b: recall(ids) for b, (ids, _) in packs.items()},
        tokens_at_budget={b: used for b, (_, used) in packs.items()},
        latency_ms=latency_ms,
    )


def _means(scores: Sequence[QuestionScore]) -> dict[str, Any]:
    return {
        "questions": len(scores),
        "recall_at_k": {str(k): float(np.mean([s.recall_at_k[k] for s in scores])) for k in KS},
        "recall_at_budget": {
            str(b): float(np.mean([s.recall_at_budget[b] for s in scores])) for b in BUDGETS
        },
        "mean_tokens_at_budget": {
            str(b): float(np.mean([s.tokens_at_budget[b] for s in scores])) for b in BUDGETS
        },
    }


def aggregate(scores: Sequence[QuestionScore], category_names: Mapping[int, str]) -> dict[str, Any]:
    """Average per-question metrics overall and per category; summarise latency.

    Recalls are fractions in [0, 1]; latency is in milliseconds.
    """
    if not scores:
        raise ValueError("no questions were scored; check --limit and --conversations")
    latencies = np.array([s.latency_ms for s in scores])
    by_category = {
        str(category): {"name": name, **_means(members)}
        for category, name in category_names.items()
        if (members := [s for s in scores if s.category == category])
    }
    return {
        "overall": _means(scores),
        "by_category": by_category,
        "latency_ms": {
            "median": float(np.median(latencies)),
            "p95": float(np.percentile(latencies, 95)),
            "mean": float(latencies.mean()),
        },
    }
