"""Deciding which recalled memories an answer actually drew on.

Adapters call :func:`used_ids` after the model answers, then give the larger "used"
boost (``Oblivion.mark_used``) only to those memories. The rule is lexical and
documented, so it is cheap, offline and explainable:

* both texts are lower-cased and split into content words (letters and digits of any
  script, apostrophes and hyphens inside a word kept; stop words and words shorter than
  3 characters dropped, save CJK ones, whose every character may be a word), and
  numbers are kept whole; a text in decomposed form (NFD: "e" and a combining accent)
  reads as the composed one. A run of Chinese characters or kana, written without
  spaces, reads as the pairs of neighbouring characters it holds, less those holding
  a character of grammar ("我的", "在觉": :func:`~oblivion_core.cjk.content_pairs`), each
  pair counted as half a word (they overlap);
* a memory counts as used when at least ``min_shared`` of its content words (all of
  them, for a memory with fewer) appear in the answer **and** they make up at least
  ``min_fraction`` of the memory's content words (so a long memory needs a
  proportionate echo, a short one an exact one); a memory whose content is one pair
  of characters needs it and at least half of all its pairs, grammar's included
  ("你住在北京" echoes "我住在北京", "北京今天下雨" does not).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

from oblivion_core.cjk import HAS_CJK, content_pairs, pairs
from oblivion_core.typography import MARK, composed

_TOKEN = re.compile(r"[a-z0-9][a-z0-9'\-]*")
#: :data:`_TOKEN` for any script: a letter or digit, then letters, digits, apostrophes
#: and hyphens ("Müller", "Москве", "d'Artagnan") and the combining marks inside a word
#: (the vowel signs of "दिल्ली"), read in a text whose ``_`` are spaces (``_`` splits
#: words, as in ASCII).
_WORD = re.compile(rf"[^\W_](?:[\w'\-]|{MARK})*")

_STOP = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with you your yours
    yourself yourselves also would could shall may might must let lets get got yes okay ok
    sure thanks thank please user assistant
"""
STOP_WORDS = frozenset(_STOP.split())


def content_words(text: str) -> set[str]:
    """Lower-cased content words of ``text`` (stop words and 1-2 letter words dropped)."""
    # the quotes around a word go before it is judged: "answer 'yes' or 'no'" has no
    # content word "no" (a review found "no'" kept as three letters, then stripped)
    if text.isascii():
        words = (w.strip("'-") for w in _TOKEN.findall(text.lower()))
        return {
            w
            for w in words
            if (len(w) >= 3 or any(ch.isdigit() for ch in w)) and w not in STOP_WORDS
        }
    found = _words(text)
    if HAS_CJK.search(text):  # a run of Chinese or kana reads as its pairs
        found = [piece for w in found for piece in content_pairs(w)]
    words = (w.strip("'-") for w in found)
    return {w for w in words if (len(w) >= 3 or _short_kept(w)) and w not in STOP_WORDS}


def _words(text: str) -> list[str]:
    """The lower-cased words of a text beyond ASCII, in any script (:data:`_WORD`)."""
    # "İ" lowercases to "i" and a combining dot: "İstanbul" is the word "istanbul"
    return _WORD.findall(composed(text).lower().replace("i\u0307", "i").replace("_", " "))


def _short_kept(word: str) -> bool:
    """Whether a word of one or two characters is a content word: a number ("42", "٣"),
    or CJK ("猫", "北京"), whose characters are words or syllables of their own."""
    return any(ch.isdigit() or unicodedata.east_asian_width(ch) in "WF" for ch in word)


def overlap(memory: str, answer: str) -> float:
    """Fraction of the memory's content words that appear in the answer (0 when it has none)."""
    words = content_words(memory)
    if not words:
        return 0.0
    return len(words & content_words(answer)) / len(words)


def used_ids(
    answer: str,
    items: Iterable[tuple[str, str]],
    *,
    min_shared: int = 2,
    min_fraction: float = 0.25,
) -> list[str]:
    """Ids of the ``(id, text)`` items whose content the answer echoes (see module doc)."""
    answer_words = content_words(answer)
    out: list[str] = []
    for memory_id, text in items:
        words = content_words(text)
        if not words:
            continue
        total = _weight(words)
        shared = _weight(words & answer_words)
        if total < 1.0:  # one pair of Chinese or Japanese characters: see _close_echo
            if shared == total and _close_echo(text, answer):
                out.append(memory_id)
        elif shared >= max(1.0, min(min_shared, total)) and shared / total >= min_fraction:
            out.append(memory_id)
    return out


def _close_echo(memory: str, answer: str) -> bool:
    """Whether the answer holds at least half of every pair of neighbouring Chinese or
    Japanese characters in ``memory``, grammar included: a memory whose only content
    is one pair ("我住在北京": 北京; 住在 and 我住 hold grammar) is echoed by "你住在北京",
    not by an answer that only names 北京, as "I live in Beijing" needs both words."""
    mine = set(_pairs(memory))
    return len(mine & set(_pairs(answer))) * 2 >= len(mine)


def _pairs(text: str) -> list[str]:
    """Every pair of neighbouring Chinese characters or kana in ``text``."""
    return [p for w in _words(text) for p in pairs(w) if HAS_CJK.search(p)]


def _weight(words: set[str]) -> float:
    """How many words ``words`` are: a pair of Chinese characters or kana half of one
    (pairs overlap: a word of two characters in a run is about two pairs, "华为手机" is
    华为, 为手, 手机), any other word one."""
    return sum(0.5 if HAS_CJK.search(w) else 1.0 for w in words)


__all__: Sequence[str] = ["STOP_WORDS", "content_words", "overlap", "used_ids"]
