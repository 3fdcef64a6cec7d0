"""Keyword checks before a regular expression: a search that cannot match is skipped.

The text rules (categories and importance, stale facts) run dozens of case-insensitive
patterns over every text written, most of which match nothing. Python's ``re`` tries a
pattern that opens with ``\\b`` and an alternation at every position of the text, while
``in`` finds a substring at memory speed. So a pattern whose every match holds one of a
few lower-case substrings (its *triggers*) is searched only in texts that hold one.

The check is exact for ASCII text: there, a case-insensitive match lower-cased is the
text's lower case at the same place, so it holds a trigger. Beyond ASCII, ``re.I`` folds
characters that ``str.lower`` keeps ("ſ" matches "s", "K" the Kelvin sign matches "k"),
so such text is always searched. The tests check each trigger list against its pattern
with generated texts.

:func:`gated` speeds up a pattern that texts do trigger: it is tried only where a match
can start.
"""

from __future__ import annotations

import re


def has_any(lower: str, triggers: tuple[str, ...]) -> bool:
    """Whether ``lower`` holds any of ``triggers``."""
    for t in triggers:  # noqa: SIM110 (any() over a generator costs twice as much here)
        if t in lower:
            return True
    return False


def may_match(lower: str, triggers: tuple[str, ...]) -> bool:
    """Whether a pattern whose every match holds one of ``triggers`` (lower case) may match
    the text whose lower case is ``lower``: ``False`` only when it cannot."""
    return not lower.isascii() or has_any(lower, triggers)


def gated(first: str, pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``pattern`` compiled to be tried only where the text's character is in the class
    ``first`` (written as inside ``[...]``): the characters its matches can start with.

    ``re`` cannot skip ahead to a possible start when every alternative opens with
    ``\\b``, and tries each alternative at each position; a one-character lookahead
    rules most positions out at once (2-3x faster on the stale-fact rule's longest
    patterns, with the same matches). The tests derive every pattern's possible first
    characters from its syntax and check that ``first`` holds them."""
    return re.compile(f"(?=[{first}])(?:{pattern})", flags)


def ungated(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """A :func:`gated` pattern without its gate (what it is compared with: the tests,
    ``bench/text_rules.py``)."""
    source = re.fullmatch(r"\(\?=\[[^\]]*\]\)\(\?:(.*)\)", pattern.pattern, re.S)
    if source is None:
        raise ValueError(f"not a gated pattern: {pattern.pattern[:60]!r}")
    return re.compile(source.group(1), pattern.flags)
