"""Chinese and Japanese text, written without spaces between words, read in pieces.

A run of Chinese characters or kana is one "word" to a regular expression: the whole of
"我的猫叫小白" was a single BM25 term and a single content word, so a memory was found, or
counted as used by an answer, only when the other text repeated the run whole. The rules
that read words (BM25's documents and queries, :mod:`oblivion_core.lexical`; the content
words an answer shares with a memory, :mod:`oblivion_core.overlap`) read such a run as
the pairs of neighbouring characters it holds, as Lucene's CJK analyzer does: "你的猫叫什么"
and "我的猫叫小白" share 的猫 and 猫叫. Hangul is written with spaces and is left whole.
"""

from __future__ import annotations

import re
import unicodedata

#: Chinese characters (the unified blocks and their extensions, the compatibility block),
#: hiragana, katakana (with the half-width forms) and the iteration marks 々 and 〇.
_CHARS = (
    "\u3005\u3007\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0003134f"
)
#: Whether a text holds any such character (a text without is read as it was).
HAS_CJK = re.compile(f"[{_CHARS}]")
_RUN = re.compile(f"[{_CHARS}]+")


#: Characters of grammar more than content (Chinese particles, pronouns, common verbs of
#: motion and being; Japanese particles and verb endings in hiragana): a pair holding
#: one says little of what a text is about ("我的", "要去", "に行"), as "my" and "go" in
#: English, which are stop words. The content words an answer shares with a memory leave
#: out the pairs holding one (:func:`content_pairs`); BM25 searches every pair and
#: weighs them by their frequency.
FUNCTION_CHARS = frozenset(
    "的了是我你他她它们們在和就不也都要去这這那个個一吗嗎呢吧啊着過过把被给給很会會能说說"
    "对對从從到么什为為与與及之而其所以此有没沒还還又再得地啦"
    "のにはをがでともへやかなだたてしすまいるねよっんられ"
)
#: Pairs that name the two sides of a chat ("user", "assistant": stop words in English).
_ROLES = frozenset({"用户", "用戶", "助手", "助理"})


def content_pairs(word: str) -> list[str]:
    """The pieces of ``word`` an answer may share with a memory (:func:`pieces`, pairs
    only), without those holding a character of :data:`FUNCTION_CHARS` (我的, 在觉: a
    pair across words, or one of grammar) or naming a side of the chat: "我的猫叫小白" ->
    猫叫, 叫小, 小白. Half-width katakana read as the full-width forms ("ﾃﾞｰﾀ" is
    "データ"). Queries search every pair (:func:`oblivion_core.lexical.query_terms`)."""
    if not HAS_CJK.search(word):
        return [word]
    return [p for p in pairs(word) if not (HAS_CJK.search(p) and (p in _ROLES or grammar(p)))]


def pairs(word: str) -> list[str]:
    """:func:`pieces` of ``word`` without single characters, half-width katakana read as
    the full-width forms."""
    return pieces(unicodedata.normalize("NFKC", word), singles=False)


def grammar(piece: str) -> bool:
    """Whether a piece holds a character of :data:`FUNCTION_CHARS`: such a pair is no
    content word (:func:`content_pairs`), such a character alone no query term."""
    return not FUNCTION_CHARS.isdisjoint(piece)


def pieces(word: str, *, singles: bool) -> list[str]:
    """``word`` with each run of Chinese characters or kana as the pairs of neighbours
    it holds, in order ("北京大学" -> 北京, 京大, 大学), and each character too with
    ``singles`` (北, 北京, 京, 京大, ...); a run of one character is itself. The rest of
    the word is kept as it is ("iphone手机" -> iphone, 手机)."""
    out: list[str] = []
    at = 0
    for run in _RUN.finditer(word):
        if run.start() > at:
            out.append(word[at : run.start()])
        chars = run.group()
        if len(chars) == 1:
            out.append(chars)
        for i in range(len(chars) - 1):
            if singles:
                out.append(chars[i])
            out.append(chars[i : i + 2])
        if singles and len(chars) > 1:
            out.append(chars[-1])
        at = run.end()
    if at < len(word):
        out.append(word[at:])
    return out


_WORDISH = re.compile(f"[{_CHARS}]|[^\\s{_CHARS}]+")


def word_count(text: str) -> int:
    """Words of ``text`` as :meth:`str.split` counts them, each Chinese character or
    kana one (a sentence written without spaces is not one word)."""
    return len(_WORDISH.findall(text)) if HAS_CJK.search(text) else len(text.split())
