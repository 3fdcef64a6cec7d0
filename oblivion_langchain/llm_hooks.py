"""LLM-backed importance scoring and summarising for the core's pluggable hooks.

Both satisfy the protocols in :mod:`oblivion_core.typing` with any LangChain
``BaseChatModel``. A model failure or a reply that cannot be parsed never crashes a
turn: it is logged (logger ``oblivion_langchain``) and the offline fallback answers.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from oblivion_core.compression import ExtractiveSummarizer
from oblivion_core.errors import InvalidInputError
from oblivion_core.importance import HeuristicImportance
from oblivion_core.records import BUILTIN_CATEGORIES
from oblivion_core.typing import ImportanceScorer, Summarizer

logger = logging.getLogger("oblivion_langchain")

SCORE_PROMPT = """You rate memories for an assistant's long-term memory.
For the message below, answer with exactly two lines and nothing else:
score: <an integer from 1 to 10>
category: <one of: {categories}>
1 means trivial small talk; 10 means a lasting instruction or a crucial fact."""

SUMMARY_PROMPT = """Summarise the memories below into one short paragraph.
Use at most {max_words} words. Keep every instruction, preference, name, date
and number; drop small talk.
Reply with the summary only."""

_SCORE = re.compile(r"score\s*[:=]\s*\**\s*(\d{1,2}(?:\.\d+)?)\s*(?:/\s*10)?\b", re.I)
_CATEGORY = re.compile(r"category\s*[:=]\s*\**\s*([A-Za-z][A-Za-z _-]*)", re.I)


class LLMImportanceScorer:
    """An :class:`~oblivion_core.typing.ImportanceScorer` that asks a chat model.

    One model call per new text (cached, so the engine's ``categorize`` and ``score``
    calls for the same text share it) asks for a 1-10 score and a category. The score
    maps linearly to ``[0, 1]`` (``(n - 1) / 9``). If the call fails, or a line is
    missing, out of range or names an unknown category, that part comes from
    ``fallback`` (default :class:`~oblivion_core.importance.HeuristicImportance`) and a
    warning is logged.

    Example:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_langchain import LLMImportanceScorer

            scorer = LLMImportanceScorer(chat_model)
            memory = Oblivion("./memory", importance_scorer=scorer)

    Args:
        model: Any LangChain chat model.
        fallback: Scorer used when the model's answer cannot be used.
        categories: Categories the model may choose from.
        cache_size: Texts whose replies are kept (>= 1).
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        fallback: ImportanceScorer | None = None,
        categories: Sequence[str] = BUILTIN_CATEGORIES,
        cache_size: int = 256,
    ) -> None:
        if not isinstance(model, BaseChatModel):
            raise InvalidInputError(f"model must be a LangChain BaseChatModel, got {model!r}")
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
            raise InvalidInputError(f"cache_size must be an int >= 1, got {cache_size!r}")
        if not categories or not all(isinstance(c, str) and c.strip() for c in categories):
            raise InvalidInputError(f"categories must be non-empty strings, got {categories!r}")
        self.model = model
        self.fallback: ImportanceScorer = (
            fallback if fallback is not None else HeuristicImportance()
        )
        self.categories = tuple(categories)
        self.cache_size = cache_size
        self._cache: OrderedDict[str, tuple[float | None, str | None]] = OrderedDict()
        self._lock = threading.Lock()

    def score(self, text: str) -> float:
        """Importance in ``[0, 1]`` from the model's 1-10 rating (fallback on failure)."""
        value = self._ask(text)[0]
        if value is None:
            return float(self.fallback.score(text))
        return value

    def categorize(self, text: str) -> str:
        """The model's category (fallback on failure)."""
        category = self._ask(text)[1]
        if category is None:
            return self.fallback.categorize(text)
        return category

    def _ask(self, text: str) -> tuple[float | None, str | None]:
        with self._lock:
            if text in self._cache:
                self._cache.move_to_end(text)
                return self._cache[text]
        parsed = self._parse(text, self._reply(text))
        with self._lock:
            self._cache[text] = parsed
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return parsed

    def _reply(self, text: str) -> str | None:
        prompt = SCORE_PROMPT.format(categories=", ".join(self.categories))
        try:
            reply = self.model.invoke([SystemMessage(content=prompt), HumanMessage(content=text)])
        except Exception:
            logger.warning("importance model call failed; using the fallback scorer", exc_info=True)
            return None
        return reply.text

    def _parse(self, text: str, reply: str | None) -> tuple[float | None, str | None]:
        if reply is None:
            return None, None
        score: float | None = None
        match = _SCORE.search(reply)
        if match is not None and 1 <= float(match.group(1)) <= 10:
            score = (float(match.group(1)) - 1.0) / 9.0
        else:
            logger.warning(
                "malformed importance reply %r for %r; using the fallback score", reply, text[:80]
            )
        category: str | None = None
        found = _CATEGORY.search(reply)
        name = re.sub(r"[\s-]+", "_", found.group(1).strip().lower()) if found else ""
        if name in self.categories:
            category = name
        else:
            logger.warning(
                "malformed category reply %r for %r; using the fallback category", reply, text[:80]
            )
        return score, category


class LLMSummarizer:
    """A :class:`~oblivion_core.typing.Summarizer` that asks a chat model.

    If the call fails or the reply is empty, ``fallback`` (default: the engine's offline
    :class:`~oblivion_core.compression.ExtractiveSummarizer`) writes the summary and a
    warning is logged.

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
        if not isinstance(model, BaseChatModel):
            raise InvalidInputError(f"model must be a LangChain BaseChatModel, got {model!r}")
        for name, value in (("max_words", max_words), ("max_chars", max_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInputError(f"{name} must be an int >= 1, got {value!r}")
        self.model = model
        self.fallback: Summarizer = (
            fallback if fallback is not None else ExtractiveSummarizer(max_words=max_words)
        )
        self.max_words = max_words
        self.max_chars = max_chars

    def summarize(self, texts: Sequence[str]) -> str:
        """One text standing for all ``texts``."""
        if isinstance(texts, str):
            raise InvalidInputError("summarize() takes a list of texts, not one string")
        texts = [t.strip() for t in texts if isinstance(t, str) and t.strip()]
        if not texts:
            raise InvalidInputError("summarize() needs at least one non-empty text")
        listing = "\n".join(f"- {t}" for t in texts)
        try:
            reply = self.model.invoke(
                [
                    SystemMessage(content=SUMMARY_PROMPT.format(max_words=self.max_words)),
                    HumanMessage(content=listing),
                ]
            ).text.strip()
        except Exception:
            logger.warning(
                "summary model call failed; using the fallback summarizer", exc_info=True
            )
            reply = ""
        else:
            if not reply:
                logger.warning("empty summary reply; using the fallback summarizer instead")
        if not reply:
            reply = self.fallback.summarize(texts).strip() or "; ".join(texts)
        return reply[: self.max_chars]
