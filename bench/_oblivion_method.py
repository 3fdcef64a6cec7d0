"""Oblivion as a retrieval method of the LoCoMo and knowledge-update benchmarks.

Each conversation is streamed turn by turn into a fresh in-memory engine on a
``ManualClock`` set to the turn's timestamp (wall-clock seconds), so decay, boosts and
tiering happen as they would in an agent's life. Variants are ablations of one engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from oblivion_core import ManualClock, Oblivion, Policy, Tier

try:
    from ._locomo_data import Turn
    from ._locomo_methods import Embedder, RetrievalMethod
except ImportError:  # run as a script: bench/ is on sys.path
    from _locomo_data import Turn  # type: ignore[no-redef]
    from _locomo_methods import Embedder, RetrievalMethod  # type: ignore[no-redef]


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
    """Oblivion with the policy of :attr:`variant`."""

    variant: ClassVar[Variant] = Variant({})

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self.note = self.variant.note
        self.mem: Oblivion | None = None
        self.clock = ManualClock(0.0)
        self.active_fraction: list[float] = []

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

    def rank(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> list[str]:
        assert self.mem is not None
        self.clock.set(max(self.clock.now(), at_time))
        if not self.active_fraction:
            self.mem.maintain()
            stats = self.mem.stats()
            self.active_fraction.append(stats["active"] / max(stats["memories"], 1))
        return self.mem.recall(question, k=k).ids[:k]

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
}


def active_fraction(methods: Sequence[OblivionMethod]) -> float:
    """Mean active-tier share at question time."""
    values = [v for m in methods for v in m.active_fraction]
    return float(np.mean(values)) if values else float("nan")


__all__ = ["VARIANTS", "OblivionMethod", "Tier", "Variant", "active_fraction", "variant_class"]
