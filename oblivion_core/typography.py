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

import re
import unicodedata
from collections.abc import Callable

#: Right and left single quotes, the modifier letter and the fullwidth apostrophe.
_APOSTROPHES = str.maketrans(dict.fromkeys("\u2019\u2018\u02bc\uff07", "'"))


def straighten(text: str) -> str:
    """``text`` with every typographic apostrophe as ``'``."""
    return text if text.isascii() else text.translate(_APOSTROPHES)


def composed(text: str) -> str:
    """``text`` straightened (:func:`straighten`) and in Unicode's composed form (NFC): a
    "café" typed on macOS or pasted from a PDF often holds "e" and a combining accent,
    which regular expressions read as a letter and a non-letter, and another text than
    the composed "café" of most keyboards. Both read as one word, the same."""
    if text.isascii():
        return text
    text = text.translate(_APOSTROPHES)
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


#: The blocks of the Basic Multilingual Plane that hold cased letters: Latin, Greek,
#: Coptic, Cyrillic, Armenian, Georgian, Cherokee, Glagolitic, and the fullwidth forms.
_CASED_BLOCKS = (
    (0x0000, 0x058F),
    (0x10A0, 0x10FF),
    (0x13A0, 0x13FF),
    (0x1C80, 0x1CBF),
    (0x1E00, 0x1FFF),
    (0x2C00, 0x2D2F),
    (0xA640, 0xA69F),
    (0xA720, 0xA7FF),
    (0xAB70, 0xABBF),
    (0xFF21, 0xFF5A),
)


def _char_class(
    keep: Callable[[str], bool], blocks: tuple[tuple[int, int], ...] = _CASED_BLOCKS
) -> str:
    """The characters of ``blocks`` that ``keep`` accepts, as the inside of a regular
    expression's ``[...]`` (ranges)."""
    spans: list[tuple[int, int]] = []
    for low, high in blocks:
        for code in range(low, high + 1):
            if keep(chr(code)):
                if spans and spans[-1][1] == code - 1:
                    spans[-1] = (spans[-1][0], code)
                else:
                    spans.append((code, code))
    return "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in spans
    )


#: An uppercase (or titlecase) letter of any cased script, for a regular expression
#: (Python's ``re`` has no ``\p{Lu}``): ``A``, ``É``, ``Ł``, ``Ø``, ``Σ``, ``Ж``. Match it
#: case-sensitively (inside ``(?-i:...)`` in a pattern that ignores case).
UPPER = "[" + _char_class(lambda c: c.isupper() or unicodedata.category(c) == "Lt") + "]"
#: A lowercase letter of any cased script: ``a``, ``é``, ``ø``, ``ß``, ``σ``, ``ж``.
LOWER = "[" + _char_class(str.islower) + "]"
#: A letter of any script (any case, or none: CJK), as ``\w`` is without digits and ``_``.
LETTER = r"[^\W\d_]"

#: Blocks holding combining marks of words: the combining diacriticals and the scripts
#: written with vowel signs and viramas (Devanagari to Sinhala, Thai, Lao, Tibetan,
#: Myanmar, Khmer...), and the later blocks of such marks.
_MARK_BLOCKS = ((0x0300, 0x2FFF), (0xA640, 0xABFF), (0xFB1E, 0xFB1E), (0xFE00, 0xFE2F))


#: A combining mark inside a word (a vowel sign, a virama, a tone mark, an accent typed
#: apart), which ``\w`` leaves out: "दिल्ली" is one word with them, three without.
MARK = (
    "[" + _char_class(lambda c: unicodedata.category(c) in ("Mn", "Mc", "Me"), _MARK_BLOCKS) + "]"
)
