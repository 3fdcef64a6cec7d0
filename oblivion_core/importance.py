"""Write-time appraisal: how important a new memory is, and what category it is.

:class:`HeuristicImportance` is the offline default. It is a documented set of lexical
cues, not a model:

* **instructions** ("always", "never", "don't", "make sure", "from now on", "remember
  to", "please ... every") -> category ``instruction``, importance 0.9;
* **stated preferences** ("I prefer", "I like", "I love", "I hate", "my favourite",
  "call me") -> ``preference``, 0.75;
* **tasks and commitments** ("remind me", "I will", "I'll", "deadline", "due", "todo",
  "need to", "add ... to the list") -> ``task``, 0.6;
* **events** (meetings, trips, "yesterday", "tomorrow", "last week") -> ``event``, 0.5;
* **small talk** (greetings, thanks, weather, "how are you", very short turns with no
  content) -> ``small_talk``, 0.1;
* anything else -> ``fact``, 0.4.

Then +0.05 for each kind of specific detail present (a capitalised name mid-sentence,
a date or weekday or month, a number), up to +0.15, capped at 1.0.

LLM-backed scorers live in the adapters and satisfy the same
:class:`~oblivion_core.typing.ImportanceScorer` protocol.
"""

from __future__ import annotations

import functools
import re

_RULES: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    (
        "instruction",
        0.9,
        re.compile(
            r"\b(always|never|do not|don't|dont|make sure|from now on|remember to|"
            r"you must|you should|be sure to|every time|whenever you|stop (?:using|doing))\b",
            re.I,
        ),
    ),
    (
        "preference",
        0.75,
        re.compile(
            r"\b(i (?:really )?(?:prefer|like|love|hate|dislike|enjoy|can't stand)|"
            r"my fav(?:ou)?rite|call me|i'd rather|i would rather)\b",
            re.I,
        ),
    ),
    (
        "task",
        0.6,
        re.compile(
            r"\b(remind me|i will|i'll|deadline|due (?:on|by)|to-?do|need to|have to|"
            r"(?:add|put|remove|take) .{1,40}(?:on|to|off|from) (?:the|my) .{0,20}list)\b",
            re.I,
        ),
    ),
    (
        "event",
        0.5,
        re.compile(
            r"\b(meeting|trip|flight|appointment|yesterday|tomorrow|tonight|last (?:week|"
            r"month|year|night)|next (?:week|month|year)|went to|going to)\b",
            re.I,
        ),
    ),
    (
        "small_talk",
        0.1,
        re.compile(
            r"^\W*(hi|hey|hello|thanks|thank you|ok(?:ay)?|cool|nice|great|lol|haha|good "
            r"(?:morning|night|afternoon))\b|\b(how are you|the weather|lovely day|"
            r"nice weekend|see you)\b",
            re.I,
        ),
    ),
)

_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")
_DATE = re.compile(
    r"\b(\d{1,2}(?:st|nd|rd|th)?\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)\w*\s+\d{1,2}|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|\d{4}-\d{2}-\d{2})\b",
    re.I,
)
_NUMBER = re.compile(r"\d")


class HeuristicImportance:
    """The offline default :class:`~oblivion_core.typing.ImportanceScorer`."""

    def categorize(self, text: str) -> str:
        """The first matching rule's category (``fact`` if none matches)."""
        return self._rule(text)[0]

    def score(self, text: str) -> float:
        """Base importance of the category plus up to 0.15 for specific details."""
        base = self._rule(text)[1]
        detail = sum(0.05 for pattern in (_NAME, _DATE, _NUMBER) if pattern.search(text.strip()))
        return float(min(1.0, base + min(detail, 0.15)))

    @staticmethod
    def _rule(text: str) -> tuple[str, float]:
        return _first_rule(text.strip())


@functools.lru_cache(maxsize=4096)  # a write asks for the category, then the score
def _first_rule(stripped: str) -> tuple[str, float]:
    for category, importance, pattern in _RULES:
        if pattern.search(stripped):
            return category, importance
    if len(stripped.split()) <= 3:
        return "small_talk", 0.1
    return "fact", 0.4
