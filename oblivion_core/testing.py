"""Helpers for testing code that uses Oblivion: no network, no model download, no sleeping.

* :class:`ManualClock` moves only when told to.
* :class:`HashEmbedder` is a deterministic offline embedder: texts sharing words get
  similar vectors (a hashed bag of words and character trigrams), good enough for
  tests of ranking logic, not for real retrieval quality.
* :func:`memory` builds an in-memory :class:`Oblivion` wired to both.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

from oblivion_core.clock import ManualClock
from oblivion_core.engine import Oblivion
from oblivion_core.typing import Vectors

__all__ = ["HashEmbedder", "ManualClock", "memory", "word_count"]

_WORD = re.compile(r"[a-z0-9']+")


class HashEmbedder:
    """Deterministic bag-of-words embedder (``dim`` hashed buckets, unit length)."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls = 0

    def _vector(self, text: str) -> Vectors:
        vec = np.zeros(self.dim, dtype=np.float32)
        words = _WORD.findall(text.lower())
        feats = words + [w[i : i + 3] for w in words for i in range(max(len(w) - 2, 0))]
        for f in feats or ["<empty>"]:
            h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
            vec[h % self.dim] += 1.0 if f in words else 0.3
        norm = np.linalg.norm(vec)
        return vec / norm if norm else vec

    def embed_documents(self, texts: list[str]) -> Vectors:
        """Embed texts."""
        self.calls += 1
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> Vectors:
        """Embed one query."""
        self.calls += 1
        return self._vector(text)


def word_count(text: str) -> int:
    """A token counter for tests: whitespace-separated words."""
    return len(text.split())


def memory(**kwargs: Any) -> Oblivion:
    """An in-memory :class:`Oblivion` with a :class:`ManualClock`, :class:`HashEmbedder`
    and :func:`word_count` (each overridable by keyword)."""
    kwargs.setdefault("clock", ManualClock())
    kwargs.setdefault("embedder", HashEmbedder())
    kwargs.setdefault("token_counter", word_count)
    return Oblivion(None, **kwargs)
