"""LangChain and LangGraph adapters for Oblivion: decaying, explainable agent memory.

* :class:`OblivionRetriever` — a ``BaseRetriever``: documents ranked by relevance and
  activation, packed into a token budget, with the ``why`` in their metadata.
* :class:`OblivionStore` — a LangGraph ``BaseStore`` for ``create_agent(..., store=...)``.
* :class:`OblivionMemoryMiddleware` — agent middleware that injects recalled memories
  within a token budget before each model call and records the turn after it.
* :class:`OblivionMemory` — a langchain-classic ``BaseMemory`` for legacy chains.
* :class:`LLMImportanceScorer` / :class:`LLMSummarizer` / :class:`LLMSupersessionJudge` —
  the core's pluggable hooks (importance, summaries, stale-fact detection), backed by
  any chat model.

The adapters convert types and call :class:`oblivion_core.Oblivion`; all decay, boost
and tiering logic lives in the engine. Install with ``pip install "oblivion-memory[langchain]"``.
"""

from oblivion_langchain import _requires  # noqa: F401  (first: without the extra, one clear error)
from oblivion_langchain.llm_hooks import LLMImportanceScorer, LLMSummarizer, LLMSupersessionJudge
from oblivion_langchain.memory import OblivionMemory
from oblivion_langchain.middleware import OblivionMemoryMiddleware
from oblivion_langchain.retriever import OblivionRetriever
from oblivion_langchain.store import OblivionStore

__all__ = [
    "LLMImportanceScorer",
    "LLMSummarizer",
    "LLMSupersessionJudge",
    "OblivionMemory",
    "OblivionMemoryMiddleware",
    "OblivionRetriever",
    "OblivionStore",
]
