"""LlamaIndex adapters for Oblivion: decaying, explainable memory for LlamaIndex apps.

* :class:`OblivionNodePostprocessor` re-ranks any retriever's nodes by activation.
* :class:`OblivionRetriever` retrieves memories as ``NodeWithScore``.
* :class:`OblivionMemoryBlock` is a long-term block for ``llama_index.core.memory.Memory``.
* :class:`OblivionMemory` is a ``BaseMemory`` for chat engines and agents.
* :class:`LLMImportanceScorer`, :class:`LLMSummarizer` and :class:`LLMSupersessionJudge`
  back the engine's pluggable hooks (importance, summaries, stale-fact detection) with
  any LlamaIndex ``LLM``.

The adapters convert types and call :class:`oblivion_core.Oblivion`; decay, boosts and
tiering live in the engine. Install with ``pip install "oblivion-memory[llamaindex]"``.
"""

from oblivion_llamaindex import _requires  # noqa: F401  (first: without the extra, one clear error)
from oblivion_llamaindex.llm_hooks import (
    LLMImportanceScorer,
    LLMSummarizer,
    LLMSupersessionJudge,
)
from oblivion_llamaindex.memory import OblivionMemory
from oblivion_llamaindex.memory_block import OblivionMemoryBlock
from oblivion_llamaindex.postprocessor import OblivionNodePostprocessor
from oblivion_llamaindex.retriever import OblivionRetriever

__all__ = [
    "LLMImportanceScorer",
    "LLMSummarizer",
    "LLMSupersessionJudge",
    "OblivionMemory",
    "OblivionMemoryBlock",
    "OblivionNodePostprocessor",
    "OblivionRetriever",
]
