"""Oblivion: decay-driven, explainable memory for LLM agents.

Every memory carries an activation that decays over time and is raised again by use.
Activation decides which memories stay in the fast active tier, which move to the
searchable archive, and how recalled memories are ranked and packed into a token budget.

Start with :class:`Oblivion`::

    from oblivion_core import Oblivion

    mem = Oblivion("./memory")
    mem.remember("Always answer in British English.", category="instruction")
    print(mem.recall("spelling rules", token_budget=256).texts)
"""

from oblivion_core.budget import TiktokenCounter
from oblivion_core.clock import ManualClock, TurnClock, WallClock
from oblivion_core.embedding import FastEmbedEmbedder
from oblivion_core.engine import Oblivion
from oblivion_core.engine_import import ImportReport
from oblivion_core.errors import (
    EmbeddingError,
    InvalidInputError,
    ModelMismatchError,
    OblivionError,
    PolicyError,
    StoreConflictError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StorePathError,
    TextTooLongError,
    TokenizerError,
    UnknownMemoryError,
    UnknownNamespaceError,
    VectorStoreError,
)
from oblivion_core.importance import HeuristicImportance
from oblivion_core.policy import TEMPLATES, Policy
from oblivion_core.recall import RecalledItem, RecallResult
from oblivion_core.records import Category, MemoryRecord, Tier
from oblivion_core.state import EVENT_KINDS, Event
from oblivion_core.store import VectorStore
from oblivion_core.tiering import MaintenancePlan, PlanEntry

__all__ = [
    "EVENT_KINDS",
    "TEMPLATES",
    "Category",
    "EmbeddingError",
    "Event",
    "FastEmbedEmbedder",
    "HeuristicImportance",
    "ImportReport",
    "InvalidInputError",
    "MaintenancePlan",
    "ManualClock",
    "MemoryRecord",
    "ModelMismatchError",
    "Oblivion",
    "OblivionError",
    "PlanEntry",
    "Policy",
    "PolicyError",
    "RecallResult",
    "RecalledItem",
    "StoreConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
    "StorePathError",
    "TextTooLongError",
    "Tier",
    "TiktokenCounter",
    "TokenizerError",
    "TurnClock",
    "UnknownMemoryError",
    "UnknownNamespaceError",
    "VectorStore",
    "VectorStoreError",
    "WallClock",
]
