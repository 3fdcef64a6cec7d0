"""Oblivion as a retrieval method of the LoCoMo and knowledge-update benchmarks.

Each conversation is streamed turn by turn into a fresh in-memory engine on a
``ManualClock`` set to the turn's timestamp (wall-clock seconds), so decay, boosts and
tiering happen as they would in an agent's life. Variants are ablations of one engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from _locomo_data import Turn  # bench/ is on sys.path (see locomo.py, updates.py)
from _locomo_methods import Embedder, RetrievalMethod
from _locomo_metrics import BUDGETS

from oblivion_core import ManualClock, Oblivion, Policy


class _CacheEmbedder:
    """The engine's embedder protocol over the benchmark's shared vector cache."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._embedder.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embedder.embed([text])[0]


@dataclass(frozen=True)
class Variant:
    """One engine configuration under test."""

    policy: dict[str, Any]
    recall_every_turn: bool = False
    note: str = ""


class OblivionMethod(RetrievalMethod):
    """Oblivion with the policy of :attr:`variant`.

    At the first question of a conversation (its question time) ``maintain()`` runs
    once and the tier sizes are read: the active-tier share the questions meet.
    :meth:`observe` also asks, per question and token budget, the engine's own
    ``recall(k=rank_k, token_budget=b, feedback=False)`` (read-only, so the ranking that is
    scored is unchanged) and keeps the tokens of the packed context it returns.
    """

    variant: ClassVar[Variant] = Variant({})

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.note = self.variant.note
        self.mem: Oblivion | None = None
        self.clock = ManualClock(0.0)
        self.tiers: dict[str, int] | None = None  # tier sizes at question time
        self.recall_tokens: dict[int, list[int]] = {b: [] for b in BUDGETS}

    def build(self, turns: list[Turn], embeddings: np.ndarray, conv_id: str) -> None:
        policy = Policy.template("balanced").replace(**self.variant.policy)
        self.clock = ManualClock(turns[0].timestamp if turns else 0.0)
        self.mem = Oblivion(
            None, policy=policy, clock=self.clock, embedder=_CacheEmbedder(self.embedder)
        )
        for turn in turns:
            self.clock.set(max(self.clock.now(), turn.timestamp))
            if self.variant.recall_every_turn and self.mem.count() > 0:
                self.mem.recall(turn.memory_text, k=8)
            self.mem.remember(turn.memory_text, id=turn.dia_id, metadata={"speaker": turn.speaker})

    def _at(self, at_time: float) -> Oblivion:
        """The engine at question time ``at_time``; maintained once, at the first question."""
        assert self.mem is not None
        self.clock.set(max(self.clock.now(), at_time))
        if self.tiers is None:
            self.mem.maintain()
            stats = self.mem.stats()
            self.tiers = {k: int(stats[k]) for k in ("active", "archive", "cold", "memories")}
        return self.mem

    def observe(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> None:
        mem = self._at(at_time)
        for budget in BUDGETS:
            result = mem.recall(question, k=k, token_budget=budget, feedback=False)
            self.recall_tokens[budget].append(result.total_tokens)

    def rank(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> list[str]:
        return self._at(at_time).recall(question, k=k).ids[:k]

    def report(self) -> dict[str, Any] | None:
        if self.tiers is None:  # no question was asked
            return None
        return {
            **self.tiers,
            "active_share": self.tiers["active"] / max(self.tiers["memories"], 1),
            "questions_observed": len(self.recall_tokens[BUDGETS[0]]),
            "mean_tokens_per_recall": {
                str(b): float(np.mean(v)) if v else None for b, v in self.recall_tokens.items()
            },
        }

    def close(self) -> None:
        if self.mem is not None:
            self.mem.close()


def variant_class(name: str, variant: Variant) -> type[OblivionMethod]:
    """A method class for ``variant`` (the registry maps names to classes)."""
    return type(f"Oblivion_{name}", (OblivionMethod,), {"variant": variant, "note": variant.note})


VARIANTS: dict[str, Variant] = {
    "oblivion": Variant({}, recall_every_turn=True, note="default policy, agent-like run"),
    "oblivion_no_agent_run": Variant({}, note="default policy, no recall per turn"),
    "oblivion_no_activation": Variant(
        {"w_activation": 0.0, "w_importance": 0.0},
        recall_every_turn=True,
        note="activation and importance weights 0",
    ),
    "oblivion_dense_only": Variant({"lexical_weight": 0.0}, recall_every_turn=True, note="no BM25"),
    "oblivion_expand": Variant(
        {"expand_links": True}, recall_every_turn=True, note="link expansion on"
    ),
    "oblivion_no_supersede": Variant(
        {"supersede": False}, recall_every_turn=True, note="stale-fact detection off"
    ),
    "oblivion_no_share": Variant(
        {"active_share": None}, recall_every_turn=True, note="no active-tier share target"
    ),
}


ENGINE_STATS_NOTE = (
    "active_share: active-tier memories / all memories after maintain() at question time "
    "(overall: pooled over conversations); mean_tokens_per_recall: per question and budget, "
    "total_tokens of the engine's own recall(k=rank_k, token_budget=b, feedback=False), i.e. "
    "item tokens (cl100k_base) + policy.per_item_tokens per item, neighbour context included"
)


def engine_stats(reports: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Combine :meth:`OblivionMethod.report` of each conversation (by conversation id)."""
    tiers = {k: sum(int(r[k]) for r in reports.values()) for k in ("active", "memories")}
    observed = sum(int(r["questions_observed"]) for r in reports.values())
    tokens: dict[str, float | None] = {}
    for b in BUDGETS:
        total = sum(
            r["mean_tokens_per_recall"][str(b)] * r["questions_observed"]
            for r in reports.values()
            if r["questions_observed"]
        )
        tokens[str(b)] = total / observed if observed else None
    return {
        "active_share": tiers["active"] / max(tiers["memories"], 1),
        **tiers,
        "questions_observed": observed,
        "mean_tokens_per_recall": tokens,
        "per_conversation": {cid: dict(r) for cid, r in reports.items()},
    }


__all__ = [
    "ENGINE_STATS_NOTE",
    "VARIANTS",
    "OblivionMethod",
    "Variant",
    "engine_stats",
    "variant_class",
]
