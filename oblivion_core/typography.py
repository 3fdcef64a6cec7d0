"""Typographic apostrophes read as the straight one, by every text rule.

Phones, word processors and most LLM output write "don’t" with a right single quote;
some keyboards give a left quote, the modifier letter apostrophe or the fullwidth one.
The rules that read texts (categories and importance, stale facts, the words an answer
shares with a memory, BM25's documents and queries, a summariser's refusal check) see
all of them as ``'``: before, "Please don’t use emojis in replies." was a fact of
importance 0.4 where "don't" made it an instruction of 0.9, and decayed as a fact. The
modifier letter (U+02BC) is a letter to regular expressions, so a rule that skipped this
kept "Oʼbrien" one word where "O'Brien" is two.
"""

from __future__ import annotations

#: Right and left single quotes, the modifier letter and the fullwidth apostrophe.
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2019\u2018\u02bc\uff07", "'"))


def straighten(text: str) -> str:
    """``text`` with every typographic apostrophe as ``'``."""
    return text if text.isascii() else text.translate(_APOSTROPHES)
