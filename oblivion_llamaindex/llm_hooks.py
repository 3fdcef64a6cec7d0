"""LLM-backed importance scoring, summarising and supersession judging for the core's hooks.

Each class is the matching :mod:`oblivion_core.llm_hooks` class with any LlamaIndex
``LLM`` as its model: one call is ``llm.chat([system message, user message])`` and
the reply's text is read from ``response.message.content``. Prompts, parsing, caching
and fallbacks live in the core. A model failure or a reply that cannot be parsed never
crashes a write: it is logged (logger ``oblivion_llamaindex``) and the offline
fallback answers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms.llm import LLM

from oblivion_core.errors import InvalidInputError
from oblivion_core.llm_hooks import (
    PromptedImportance,
    PromptedSummarizer,
    PromptedSupersessionJudge,
)
from oblivion_core.supersession import SupersessionJudge
from oblivion_core.typing import Completer, ImportanceScorer, Summarizer

logger = logging.getLogger("oblivion_llamaindex")


def _completer(llm: LLM) -> Completer:
    """``complete(system, user)`` over a LlamaIndex LLM (refuses anything else)."""
    if not isinstance(llm, LLM):
        raise InvalidInputError(f"llm must be a LlamaIndex LLM, got {llm!r}")

    def complete(system: str, user: str) -> str:
        response = llm.chat(
            [
                ChatMessage(role=MessageRole.SYSTEM, content=system),
                ChatMessage(role=MessageRole.USER, content=user),
            ]
        )
        return response.message.content or ""

    return complete


class LLMImportanceScorer(PromptedImportance):
    """An :class:`~oblivion_core.typing.ImportanceScorer` that asks a LlamaIndex LLM.

    One call per new text (cached, shared by ``score`` and ``categorize``) asks for a
    1-10 score and a category; the score maps to ``[0, 1]`` as ``(n - 1) / 9``. A
    failed call or a malformed part of the reply falls back to ``fallback`` (default
    :class:`~oblivion_core.importance.HeuristicImportance`) with a warning. See
    :class:`oblivion_core.llm_hooks.PromptedImportance`.

    Example:
        .. code-block:: python

            from llama_index.llms.openai import OpenAI
            from oblivion_core import Oblivion
            from oblivion_llamaindex import LLMImportanceScorer

            scorer = LLMImportanceScorer(OpenAI(model="gpt-4o-mini"))
            memory = Oblivion("./memory", importance_scorer=scorer)

    Args:
        llm: Any LlamaIndex LLM.
        fallback: Scorer used when the model's answer cannot be used.
        categories: Categories the model may choose from (default: the built-in ones but
            ``summary``, which compression gives its summaries).
        cache_size: Texts whose replies are kept (>= 1).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        fallback: ImportanceScorer | None = None,
        categories: Sequence[str] | None = None,
        cache_size: int = 256,
    ) -> None:
        super().__init__(
            _completer(llm),
            fallback=fallback,
            categories=categories,
            cache_size=cache_size,
            logger=logger,
        )
        self.llm = llm


class LLMSummarizer(PromptedSummarizer):
    """A :class:`~oblivion_core.typing.Summarizer` that asks a LlamaIndex LLM.

    A failed call or an empty reply falls back to ``fallback`` (default: the offline
    :class:`~oblivion_core.compression.ExtractiveSummarizer`) with a warning. See
    :class:`oblivion_core.llm_hooks.PromptedSummarizer`.

    Example:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_llamaindex import LLMSummarizer

            memory = Oblivion("./memory", summarizer=LLMSummarizer(llm))

    Args:
        llm: Any LlamaIndex LLM.
        fallback: Summarizer used when the model's answer cannot be used.
        max_words: Length asked of the model.
        max_chars: Longest summary returned (a longer reply is cut).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        fallback: Summarizer | None = None,
        max_words: int = 80,
        max_chars: int = 2000,
    ) -> None:
        super().__init__(
            _completer(llm),
            fallback=fallback,
            max_words=max_words,
            max_chars=max_chars,
            logger=logger,
        )
        self.llm = llm


class LLMSupersessionJudge(PromptedSupersessionJudge):
    """A :class:`~oblivion_core.supersession.SupersessionJudge` that asks a LlamaIndex LLM.

    For each older memory similar to a new one (at least ``min_similarity``), the LLM
    is asked whether the new memory makes the old one stale and must answer yes or no;
    verdicts are cached per pair. A failed call or an unparseable reply is logged and
    the offline :class:`~oblivion_core.supersession.LexicalSupersession` rule (or
    ``fallback``) decides. See :class:`oblivion_core.llm_hooks.PromptedSupersessionJudge`.

    Example:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_llamaindex import LLMSupersessionJudge

            memory = Oblivion("./memory", supersession_judge=LLMSupersessionJudge(llm))
            memory.remember("My favourite colour is blue.")
            memory.remember("My favourite colour is green now.")  # blue is superseded

    Args:
        llm: Any LlamaIndex LLM.
        fallback: Judge used when the model's answer cannot be used.
        min_similarity: Cosine similarity below which a pair is not asked about (no).
        cache_size: ``(new, old)`` pairs whose verdicts are kept (>= 1).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        fallback: SupersessionJudge | None = None,
        min_similarity: float = 0.3,
        cache_size: int = 1024,
    ) -> None:
        super().__init__(
            _completer(llm),
            fallback=fallback,
            min_similarity=min_similarity,
            cache_size=cache_size,
            logger=logger,
        )
        self.llm = llm


__all__ = ["LLMImportanceScorer", "LLMSummarizer", "LLMSupersessionJudge"]
