"""LLM-backed importance scoring, summarising and supersession judging for the core's hooks.

Each class is the matching :mod:`oblivion_core.llm_hooks` class with any LangChain
``BaseChatModel`` as its model: one call sends a ``SystemMessage`` and a
``HumanMessage`` and reads the reply's text. Prompts, parsing, caching and fallbacks
live in the core. A model failure or a reply that cannot be parsed never crashes a
turn: it is logged (logger ``oblivion_langchain``) and the offline fallback answers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM

from oblivion_core.errors import InvalidInputError
from oblivion_core.llm_hooks import (
    SCORE_PROMPT,
    SUMMARY_PROMPT,
    SUPERSESSION_PROMPT,
    PromptedImportance,
    PromptedSummarizer,
    PromptedSupersessionJudge,
)
from oblivion_core.supersession import SupersessionJudge
from oblivion_core.typing import Completer, ImportanceScorer, Summarizer

logger = logging.getLogger("oblivion_langchain")


def _internal_metadata() -> dict[str, Any]:
    """LangChain's marker of a middleware's internal model call (langchain >= 1.1), which
    also keeps it out of an agent run's message log; empty where it does not exist."""
    try:
        from langchain.agents.middleware.internal_call_transformer import (
            internal_call_metadata,
        )
    except ImportError:
        return {}
    return dict(internal_call_metadata())


def _completer(model: BaseChatModel) -> Completer:
    """``complete(system, user)`` over a chat model (refuses anything else)."""
    if not isinstance(model, BaseChatModel):
        raise InvalidInputError(f"model must be a LangChain BaseChatModel, got {model!r}")

    def complete(system: str, user: str) -> str:
        # an internal call: inside an agent's run it inherits the run's callbacks, and
        # its reply would be streamed as if the assistant said it (as LangChain's own
        # SummarizationMiddleware marks its calls)
        reply = model.invoke(
            [SystemMessage(content=system), HumanMessage(content=user)],
            config={"tags": [TAG_NOSTREAM], "metadata": _internal_metadata()},
        )
        return reply.text

    return complete


class LLMImportanceScorer(PromptedImportance):
    """An :class:`~oblivion_core.typing.ImportanceScorer` that asks a chat model.

    One model call per new text (cached, so the engine's ``categorize`` and ``score``
    calls for the same text share it) asks for a 1-10 score and a category. The score
    maps linearly to ``[0, 1]`` (``(n - 1) / 9``). If the call fails, or a line is
    missing, out of range or names an unknown category, that part comes from
    ``fallback`` (default :class:`~oblivion_core.importance.HeuristicImportance`) and a
    warning is logged. See :class:`oblivion_core.llm_hooks.PromptedImportance`.

    Example:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_langchain import LLMImportanceScorer

            scorer = LLMImportanceScorer(chat_model)
            memory = Oblivion("./memory", importance_scorer=scorer)

    Args:
        model: Any LangChain chat model.
        fallback: Scorer used when the model's answer cannot be used.
        categories: Categories the model may choose from (default: the built-in ones but
            ``summary``, which compression gives its summaries).
        cache_size: Texts whose replies are kept (>= 1).
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        fallback: ImportanceScorer | None = None,
        categories: Sequence[str] | None = None,
        cache_size: int = 256,
    ) -> None:
        super().__init__(
            _completer(model),
            fallback=fallback,
            categories=categories,
            cache_size=cache_size,
            logger=logger,
        )
        self.model = model


class LLMSummarizer(PromptedSummarizer):
    """A :class:`~oblivion_core.typing.Summarizer` that asks a chat model.

    If the call fails or the reply is empty, ``fallback`` (default: the engine's offline
    :class:`~oblivion_core.compression.ExtractiveSummarizer`) writes the summary and a
    warning is logged. See :class:`oblivion_core.llm_hooks.PromptedSummarizer`.

    Example:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_langchain import LLMSummarizer

            memory = Oblivion("./memory", summarizer=LLMSummarizer(chat_model))

    Args:
        model: Any LangChain chat model.
        fallback: Summarizer used when the model's answer cannot be used.
        max_words: Length asked of the model.
        max_chars: Longest summary returned (a longer reply is cut).
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        fallback: Summarizer | None = None,
        max_words: int = 80,
        max_chars: int = 2000,
    ) -> None:
        super().__init__(
            _completer(model),
            fallback=fallback,
            max_words=max_words,
            max_chars=max_chars,
            logger=logger,
        )
        self.model = model


class LLMSupersessionJudge(PromptedSupersessionJudge):
    """A :class:`~oblivion_core.supersession.SupersessionJudge` that asks a chat model.

    For each older memory similar to a new one (at least ``min_similarity``), the model
    is asked whether the new memory makes the old one stale (same subject and person,
    changed or withdrawn value: yes; another subject, another person or a compatible
    extra fact: no) and must answer yes or no. Verdicts are cached per pair. A failed
    call or an unparseable reply is logged and the offline
    :class:`~oblivion_core.supersession.LexicalSupersession` rule (or ``fallback``)
    decides. See :class:`oblivion_core.llm_hooks.PromptedSupersessionJudge`.

    Example:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_langchain import LLMSupersessionJudge

            memory = Oblivion("./memory", supersession_judge=LLMSupersessionJudge(chat_model))
            memory.remember("My favourite colour is blue.")
            memory.remember("My favourite colour is green now.")  # blue is superseded

    Args:
        model: Any LangChain chat model.
        fallback: Judge used when the model's answer cannot be used.
        min_similarity: Cosine similarity below which a pair is not asked about (no).
        cache_size: ``(new, old)`` pairs whose verdicts are kept (>= 1).
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        fallback: SupersessionJudge | None = None,
        min_similarity: float = 0.3,
        cache_size: int = 1024,
    ) -> None:
        super().__init__(
            _completer(model),
            fallback=fallback,
            min_similarity=min_similarity,
            cache_size=cache_size,
            logger=logger,
        )
        self.model = model


__all__ = [
    "SCORE_PROMPT",
    "SUMMARY_PROMPT",
    "SUPERSESSION_PROMPT",
    "LLMImportanceScorer",
    "LLMSummarizer",
    "LLMSupersessionJudge",
]
