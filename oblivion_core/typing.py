"""Protocols and type aliases for the pluggable parts of Oblivion.

Anything that satisfies one of these protocols can be passed to :class:`Oblivion`;
no framework import is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

#: A float32 matrix of unit-length row vectors, shape ``(n, dim)``.
Vectors = npt.NDArray[np.float32]

#: Counts the tokens of a text, e.g. ``lambda s: len(enc.encode(s))``. A store keeps
#: each text's count on disk only for a counter with a ``cache_key`` attribute (a string
#: that names its counts: ``"tiktoken:cl100k_base"`` for the default); others are
#: counted again after a reopen, as recall reaches each text.
TokenCounter = Callable[[str], int]

#: Asks a language model: ``complete(system, user)`` sends a system prompt and one user
#: message and returns the reply's text. It may raise; the LLM-backed hooks in
#: :mod:`oblivion_core.llm_hooks` then fall back to their offline rule. It must be safe
#: to call from several threads at once (one engine is shared between threads).
Completer = Callable[[str, str], str]


@runtime_checkable
class Clock(Protocol):
    """A source of "now" in the unit the policy's half-lives are stated in."""

    def now(self) -> float:
        """Return the current time (seconds for wall clocks, turns for turn clocks)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. LangChain ``Embeddings`` satisfy this protocol as-is."""

    def embed_documents(self, texts: list[str]) -> Any:
        """Embed texts for storage: one vector (a sequence of floats) per text."""
        ...

    def embed_query(self, text: str) -> Any:
        """Embed a search query."""
        ...


@runtime_checkable
class Summarizer(Protocol):
    """Condenses several memory texts into one summary text."""

    def summarize(self, texts: Sequence[str]) -> str:
        """Return one text that stands for all ``texts``."""
        ...


@runtime_checkable
class ImportanceScorer(Protocol):
    """Rates how important a memory is at write time, and which category it belongs to."""

    def score(self, text: str) -> float:
        """Return an importance in ``[0, 1]``."""
        ...

    def categorize(self, text: str) -> str:
        """Return a category name for a text whose caller gave none."""
        ...
