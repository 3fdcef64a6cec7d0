"""LLM-backed hooks: importance, summaries and supersession judged by a language model.

Each class here satisfies one of the engine's pluggable protocols and talks to the
model through one plain callable, a :data:`~oblivion_core.typing.Completer`
``complete(system, user) -> str``, so this module imports no framework. The adapters
wrap a LangChain chat model (:mod:`oblivion_langchain.llm_hooks`) or a LlamaIndex LLM
(:mod:`oblivion_llamaindex.llm_hooks`) into such a callable; anything else (an HTTP
client, a local model) can be wrapped in three lines.

* :class:`PromptedImportance` -- an :class:`~oblivion_core.typing.ImportanceScorer`:
  a 1-10 rating and a category, one call per new text.
* :class:`PromptedSummarizer` -- a :class:`~oblivion_core.typing.Summarizer`.
* :class:`PromptedSupersessionJudge` -- a
  :class:`~oblivion_core.supersession.SupersessionJudge`: does a new memory make an
  older one stale?

A model failure or a reply that cannot be parsed never crashes a write: it is logged
as a warning (logger ``oblivion_core.llm_hooks`` unless another is passed) and the
offline rule the engine would have used answers instead. All three are thread-safe
(their caches are locked; the model is called outside the lock).

Example:
    .. code-block:: python

        from oblivion_core import Oblivion
        from oblivion_core.llm_hooks import PromptedSupersessionJudge

        def complete(system: str, user: str) -> str:
            return my_client.chat(system=system, user=user).text

        memory = Oblivion("./memory", supersession_judge=PromptedSupersessionJudge(complete))
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from typing import Generic, TypeVar

from oblivion_core.compression import ExtractiveSummarizer
from oblivion_core.errors import InvalidInputError
from oblivion_core.importance import HeuristicImportance
from oblivion_core.records import BUILTIN_CATEGORIES
from oblivion_core.supersession import LexicalSupersession, SupersessionJudge
from oblivion_core.typing import Completer, ImportanceScorer, Summarizer
from oblivion_core.typography import straighten

_LOG = logging.getLogger("oblivion_core.llm_hooks")

#: System prompt of :class:`PromptedImportance` (``{categories}``: comma-separated names).
SCORE_PROMPT = """You rate memories for an assistant's long-term memory.
For the message below, answer with exactly two lines and nothing else:
score: <an integer from 1 to 10>
category: <one of: {categories}>
1 means trivial small talk; 10 means a lasting instruction or a crucial fact."""

#: System prompt of :class:`PromptedSummarizer` (``{max_words}``: the length asked for).
SUMMARY_PROMPT = """Summarise the memories below into one short paragraph.
Use at most {max_words} words. Keep every instruction, preference, name, date
and number; drop small talk.
Reply with the summary only."""

#: System prompt of :class:`PromptedSupersessionJudge`.
SUPERSESSION_PROMPT = """You maintain an assistant's long-term memory. You are shown an \
OLD memory and a NEW memory that was written after it. Decide whether NEW makes OLD \
stale, so that OLD should no longer be used.

Answer yes when both are about the same subject of the same person (the same speaker, \
or the same named person) and NEW changes, corrects or withdraws what OLD says: a new \
favourite, a moved date, a corrected name or number, an item taken off a list, a \
preference or plan given up. Answer yes too when NEW states the same thing again \
(a restatement): the newer statement is the one to keep.

Answer no when they are about different subjects, or about different people, or when \
NEW only adds a fact that can be true together with OLD (for example "I went to Paris \
in May" and then "I went to Rome in June": both stay true).

A memory may start with its speaker ("user:", "Dana:") and may include the assistant's \
reply; judge what the speaker states.

Reply with one word: yes or no."""

#: User message of :class:`PromptedSupersessionJudge` (``{old}``, ``{new}``: the texts).
SUPERSESSION_QUESTION = """OLD memory:
<old>
{old}
</old>

NEW memory:
<new>
{new}
</new>

Does NEW make OLD stale? Answer yes or no."""

# a value may come in bold, quotes or backticks ("score: `9`", 'category: "instruction"')
_SCORE = re.compile(
    r"score\s*[:=]\s*[*`\"'“‘]*\s*(\d{1,2}(?:\.\d+)?)\s*[*`\"'”’]*\s*(?:/\s*10)?\b", re.I
)
_CATEGORY = re.compile(r"category\s*[:=]\s*[*`\"'“‘]*\s*([A-Za-z][A-Za-z0-9 _-]*)", re.I)
# A summary reply's wrapping: a code fence, and a first line that only announces it
_FENCE = re.compile(r"^```[\w-]*\s*\n(.*?)\n?```\s*$", re.S)
_PREFACE = re.compile(r"^(?:sure|certainly|of course|okay|ok|here)\b[^\n]*:\s*\n", re.I)
# A reply that declines instead of summarising: an apology, or "I can't" about the task
# itself ("I can't help with that"; matched on the reply with its apostrophes
# straightened, so only "'" appears here); a first-person summary ("I can't eat
# gluten, won't fly on weekends") is not one
_REFUSAL = re.compile(
    r"^\W*(?:(?:(?:i'?m|i am)\s+(?:so\s+|really\s+)?sorry|sorry|i\s+apologi[sz]e)"
    r"(?:[,.!]|\s+but\b)|as an ai\b|(?:unfortunately,?\s+)?"
    r"(?:i\s+(?:can(?:no|')?t|won'?t|will not|am unable to|'m unable to)|"
    r"i'?m\s+(?:not able|unable)\s+to)\s+(?:help|assist|do that|do this|comply|"
    r"provide|summari[sz]e|complete|fulfil+|create|write|process)\b)",
    re.I,
)


def _category_key(name: str) -> str:
    """A category name as compared with a model's answer: case, spaces and hyphens aside."""
    return re.sub(r"[\s_-]+", "_", name.strip().lower())


_THINKING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.I | re.S)
# Leading markdown and punctuation (**, #, >, `, quotes, bullets), an optional
# "answer:" label, then the verdict as a whole word.
_VERDICT = re.compile(r"^[\W_]*(?:(?:final\s+)?answer\b[\W_]*)?(yes|no)\b", re.I)

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


def _check_completer(complete: object) -> Completer:
    if not callable(complete):
        raise InvalidInputError(
            f"complete must be a callable (system: str, user: str) -> str, got {complete!r}"
        )
    return complete


def _check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"{name} must be an int >= 1, got {value!r}")
    return value


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _LRU(Generic[_K, _V]):
    """A bounded least-recently-used map, safe to share between threads (values are
    never ``None``)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[_K, _V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _K) -> _V | None:
        """The value on a hit (the key becomes the most recent), else ``None``."""
        with self._lock:
            if key not in self._data:
                return None
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: _K, value: _V) -> None:
        """Store ``value``; the least recently used keys leave beyond ``size``."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


class PromptedImportance:
    """An :class:`~oblivion_core.typing.ImportanceScorer` that asks a language model.

    One model call per new text (cached, so the engine's ``categorize`` and ``score``
    calls for the same text share it; a failed call is cached too, so one write never
    waits on two failing calls) asks for a 1-10 score and a category
    (:data:`SCORE_PROMPT`). The score maps linearly to ``[0, 1]`` (``(n - 1) / 9``). If
    the call fails, or a line is missing, out of range or names an unknown category,
    that part comes from ``fallback`` (default
    :class:`~oblivion_core.importance.HeuristicImportance`) and a warning is logged.

    Example:
        .. code-block:: python

            scorer = PromptedImportance(complete)
            memory = Oblivion("./memory", importance_scorer=scorer)

    Args:
        complete: ``complete(system, user) -> str``, the model call.
        fallback: Scorer used when the model's answer cannot be used.
        categories: Categories the model may choose from (non-empty names; default:
            the built-in ones but ``summary``, which compression gives its summaries).
            The answer is matched regardless of case, spaces, hyphens and underscores.
        cache_size: Texts whose replies are kept (>= 1).
        logger: Where warnings go (default: ``oblivion_core.llm_hooks``).
    """

    def __init__(
        self,
        complete: Completer,
        *,
        fallback: ImportanceScorer | None = None,
        categories: Sequence[str] | None = None,
        cache_size: int = 256,
        logger: logging.Logger | None = None,
    ) -> None:
        self.complete = _check_completer(complete)
        self.cache_size = _check_positive_int("cache_size", cache_size)
        if categories is None:  # "summary" is compression's own, never a new memory's
            categories = tuple(c for c in BUILTIN_CATEGORIES if c != "summary")
        elif isinstance(categories, Iterable) and not isinstance(categories, str | bytes):
            categories = tuple(categories)  # an iterator is read once, here
        if (
            isinstance(categories, str)
            or not categories
            or not all(isinstance(c, str) and c.strip() for c in categories)
        ):
            raise InvalidInputError(f"categories must be non-empty strings, got {categories!r}")
        self.fallback: ImportanceScorer = (
            fallback if fallback is not None else HeuristicImportance()
        )
        self.categories = tuple(categories)
        self._by_key = {_category_key(c): c for c in self.categories}
        self.logger = logger if logger is not None else _LOG
        self._cache: _LRU[str, tuple[float | None, str | None]] = _LRU(cache_size)

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
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        parsed = self._parse(text, self._reply(text))
        self._cache.put(text, parsed)
        return parsed

    def _reply(self, text: str) -> str | None:
        prompt = SCORE_PROMPT.format(categories=", ".join(self.categories))
        try:
            reply = self.complete(prompt, text)
        except Exception:
            self.logger.warning(
                "importance model call failed; using the fallback scorer", exc_info=True
            )
            return None
        return reply if isinstance(reply, str) else ""

    def _parse(self, text: str, reply: str | None) -> tuple[float | None, str | None]:
        if reply is None:
            return None, None
        reply = _THINKING.sub("", reply)  # a reasoning model's notes are not its answer
        score: float | None = None
        match = _SCORE.search(reply)
        if match is not None and 1 <= float(match.group(1)) <= 10:
            score = (float(match.group(1)) - 1.0) / 9.0
        else:
            # the texts at DEBUG only: a warning goes to a server's logs
            self.logger.warning("malformed importance reply; using the fallback score")
            self.logger.debug("the reply %r, for %r", _short(reply, 200), _short(text))
        category: str | None = None
        found = _CATEGORY.search(reply)
        answer = found.group(1).strip() if found else ""
        # the whole answer, else its first word ("category: fact score: 7" on one line)
        category = self._by_key.get(_category_key(answer)) or self._by_key.get(
            _category_key(answer.split()[0]) if answer else ""
        )
        if category is None:
            self.logger.warning("malformed category reply; using the fallback category")
            self.logger.debug("the reply %r, for %r", _short(reply, 200), _short(text))
        return score, category


class PromptedSummarizer:
    """A :class:`~oblivion_core.typing.Summarizer` that asks a language model.

    The texts go to the model as a bulleted list under :data:`SUMMARY_PROMPT`. If the
    call fails or the reply is empty, ``fallback`` (default: the engine's offline
    :class:`~oblivion_core.compression.ExtractiveSummarizer`) writes the summary and a
    warning is logged. Summaries are not cached: the engine summarises each group once.

    Example:
        .. code-block:: python

            memory = Oblivion("./memory", summarizer=PromptedSummarizer(complete))

    Args:
        complete: ``complete(system, user) -> str``, the model call.
        fallback: Summarizer used when the model's answer cannot be used.
        max_words: Length asked of the model (words, >= 1).
        max_chars: Longest summary returned (characters, >= 1; a longer reply is cut).
        logger: Where warnings go (default: ``oblivion_core.llm_hooks``).
    """

    def __init__(
        self,
        complete: Completer,
        *,
        fallback: Summarizer | None = None,
        max_words: int = 80,
        max_chars: int = 2000,
        logger: logging.Logger | None = None,
    ) -> None:
        self.complete = _check_completer(complete)
        self.max_words = _check_positive_int("max_words", max_words)
        self.max_chars = _check_positive_int("max_chars", max_chars)
        self.fallback: Summarizer = (
            fallback if fallback is not None else ExtractiveSummarizer(max_words=max_words)
        )
        self.logger = logger if logger is not None else _LOG

    def summarize(self, texts: Sequence[str]) -> str:
        """One text standing for all ``texts``.

        Raises:
            InvalidInputError: ``texts`` is a single string or holds no non-empty text.
        """
        if isinstance(texts, str):
            raise InvalidInputError("summarize() takes a list of texts, not one string")
        texts = [t.strip() for t in texts if isinstance(t, str) and t.strip()]
        if not texts:
            raise InvalidInputError("summarize() needs at least one non-empty text")
        listing = "\n".join(f"- {t}" for t in texts)
        try:
            raw = self.complete(SUMMARY_PROMPT.format(max_words=self.max_words), listing)
            reply = _summary_text(raw) if isinstance(raw, str) else ""
        except Exception:
            self.logger.warning(
                "summary model call failed; using the fallback summarizer", exc_info=True
            )
            reply = ""
        else:
            if not reply:
                self.logger.warning(
                    "summary reply is empty or declines; using the fallback summarizer"
                )
                self.logger.debug("the reply %r", _short(str(raw), 200))
        if not reply:
            reply = self.fallback.summarize(texts).strip() or "; ".join(texts)
        return reply[: self.max_chars]


def _summary_text(reply: str) -> str:
    """The summary in a model's reply: without ``<think>`` notes, a code fence or a
    "Sure, here is the summary:" line; ``""`` when the reply declines ("I'm sorry, I
    can't ...") or holds nothing else, so the fallback summarises instead."""
    text = _PREFACE.sub("", _THINKING.sub("", reply).strip(), count=1).strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    return "" if _REFUSAL.match(straighten(text)) else text


def parse_verdict(reply: str) -> bool | None:
    """``True``/``False`` for a reply whose first word is yes/no, else ``None``.

    Case-insensitive; leading markdown and punctuation (``**Yes**``, ``> no.``,
    ```` `YES` ````), an ``Answer:`` label and ``<think>...</think>`` blocks are
    skipped. "Nope", "Maybe" or "The answer is yes" give ``None``.
    """
    match = _VERDICT.match(_THINKING.sub("", reply))
    if match is None:
        return None
    return match.group(1).lower() == "yes"


class PromptedSupersessionJudge:
    """A :class:`~oblivion_core.supersession.SupersessionJudge` that asks a language model.

    The engine asks once for each older memory that may be the same fact as a new one
    (up to about three dozen candidates per write: the most similar recent and active
    memories and the best BM25 matches; those below ``min_similarity`` cost no call).
    After ``remember``, ``remember_many`` and ``edit`` it asks without holding the
    instance's lock (other calls go on meanwhile; the verdicts are checked again before
    they apply). Each question:

    1. answers no without asking when ``similarity < min_similarity`` (most candidates
       of a write are unrelated; this saves their calls);
    2. returns the cached verdict for the pair ``(new, old)`` if there is one (a bounded
       LRU of ``cache_size`` pairs; only the model's own verdicts are kept, so a failed
       call is retried next time);
    3. asks the model (:data:`SUPERSESSION_PROMPT`, then :data:`SUPERSESSION_QUESTION`
       with both texts) and reads the first word of the reply as yes or no
       (:func:`parse_verdict`);
    4. if the call raises or the reply is neither yes nor no, logs a warning and lets
       ``fallback`` decide. Without one, the engine decides those pairs with its own
       offline rule, as it would with no judge: the policy's thresholds, and all the
       undecided candidates of a write together (:meth:`verdict` returns ``None`` for
       them); :meth:`supersedes` called directly uses
       :class:`~oblivion_core.supersession.LexicalSupersession` with its defaults.

    Two threads asking about the same new pair at once may both call the model.

    Example:
        .. code-block:: python

            judge = PromptedSupersessionJudge(complete, min_similarity=0.4)
            memory = Oblivion("./memory", supersession_judge=judge)
            memory.remember("My favourite colour is blue.")
            memory.remember("My favourite colour is green now.")  # blue is superseded

    Args:
        complete: ``complete(system, user) -> str``, the model call.
        fallback: Judge used when the model's answer cannot be used.
        min_similarity: Cosine similarity below which a pair is not asked about (in
            ``[-1, 1]``; ``-1`` asks about every candidate).
        cache_size: ``(new, old)`` pairs whose verdicts are kept (>= 1).
        logger: Where warnings go (default: ``oblivion_core.llm_hooks``).
    """

    def __init__(
        self,
        complete: Completer,
        *,
        fallback: SupersessionJudge | None = None,
        min_similarity: float = 0.3,
        cache_size: int = 1024,
        logger: logging.Logger | None = None,
    ) -> None:
        self.complete = _check_completer(complete)
        if (
            isinstance(min_similarity, bool)
            or not isinstance(min_similarity, int | float)
            or not math.isfinite(min_similarity)
            or not -1.0 <= min_similarity <= 1.0
        ):
            raise InvalidInputError(
                f"min_similarity must be a number in [-1, 1] (a cosine similarity), "
                f"got {min_similarity!r}"
            )
        if fallback is not None and not isinstance(fallback, SupersessionJudge):
            raise InvalidInputError(
                f"fallback must have a supersedes(new, old, similarity) method, got {fallback!r}"
            )
        self.cache_size = _check_positive_int("cache_size", cache_size)
        self.min_similarity = float(min_similarity)
        self._own_fallback = fallback is not None
        self.fallback: SupersessionJudge = (
            fallback if fallback is not None else LexicalSupersession()
        )
        self.logger = logger if logger is not None else _LOG
        self._cache: _LRU[tuple[str, str], bool] = _LRU(cache_size)

    def supersedes(self, new: str, old: str, similarity: float) -> bool:
        """True if ``new`` makes ``old`` stale (see the class doc for the steps)."""
        found = self.verdict(new, old, similarity)
        if found is None:
            return bool(self.fallback.supersedes(new, old, similarity))
        return found

    def verdict(self, new: str, old: str, similarity: float) -> bool | None:
        """:meth:`supersedes`, but ``None`` where the model gave no usable answer and no
        ``fallback`` was given: the engine then applies its own offline rule."""
        found = self._ask(new, old, similarity)
        if found is None and self._own_fallback:
            return bool(self.fallback.supersedes(new, old, similarity))
        return found

    def _ask(self, new: str, old: str, similarity: float) -> bool | None:
        if similarity < self.min_similarity:
            return False
        cached = self._cache.get((new, old))
        if cached is not None:
            return cached
        try:
            reply = self.complete(SUPERSESSION_PROMPT, self._question(new, old))
        except Exception:
            self.logger.warning(
                "supersession model call failed; using the fallback judge", exc_info=True
            )
            self.logger.debug("the question was about %r -> %r", _short(old), _short(new))
            return None
        verdict = parse_verdict(reply) if isinstance(reply, str) else None
        if verdict is None:
            self.logger.warning(
                "malformed supersession reply (expected yes or no); using the fallback judge"
            )
            self.logger.debug(
                "the reply %r, about %r -> %r", _short(str(reply), 200), _short(old), _short(new)
            )
            return None
        self._cache.put((new, old), verdict)
        return verdict

    @staticmethod
    def _question(new: str, old: str) -> str:
        return SUPERSESSION_QUESTION.format(old=old.strip(), new=new.strip())


__all__ = [
    "SCORE_PROMPT",
    "SUMMARY_PROMPT",
    "SUPERSESSION_PROMPT",
    "SUPERSESSION_QUESTION",
    "PromptedImportance",
    "PromptedSummarizer",
    "PromptedSupersessionJudge",
    "parse_verdict",
]
