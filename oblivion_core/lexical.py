"""Lexical retrieval: BM25 over an in-process inverted index, one per namespace.

Scoring is FTS5's BM25 (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)) floored
at 1e-6) over the tokens of SQLite's ``porter unicode61 remove_diacritics 2`` tokenizer:
lowercased, diacritics removed, split at anything that is not a letter or a digit,
Porter-stemmed (:mod:`oblivion_core.porter`). One difference: a run of Chinese
characters or kana, which ``unicode61`` keeps as one token, gives each character and each
pair of neighbours (:func:`_words`). A query is an OR of its content words (stop words
dropped, see :mod:`overlap`), so user text is never parsed as syntax.

Why not FTS5 itself: an FTS5 ``MATCH ... ORDER BY bm25`` scores every matching row in
SQL, 8-20 ms per query at 100k memories, and it ran on every recall and on every write
(the stale-fact check). Postings held as numpy arrays score the same matches in well
under a millisecond. SQLite holds the texts, and a namespace's index is built from
them on its first search (0.4 s for 100k memories), or read back from the copy saved
when the store last closed or the namespace was unloaded, if no text changed since
(:mod:`oblivion_core.lexical_snapshot`). A write reads a saved copy first if there is
one (:meth:`LexicalIndex.read_saved`: the write makes it stale); otherwise writes to a
namespace whose index is not built skip it, since the build reads them back.

Documents are keyed by the memory's insertion sequence number (``seq``), so deletes are
cheap; deleted postings are masked and compacted away once they are half the index.

A searched term's BM25 values are kept until the index next changes (its idf and the
average length change with every add and delete), so a run of recalls, or the stale-fact
checks of one written batch, computes each term once (a search of 7 terms: 202 -> 155 us
at 5k memories, 630 -> 489 us at 100k, same process).
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oblivion_core.cjk import HAS_CJK, grammar, pieces
from oblivion_core.doc_set import DocSet
from oblivion_core.lexical_snapshot import LexicalSnapshots
from oblivion_core.overlap import STOP_WORDS, content_words
from oblivion_core.porter import stem
from oblivion_core.typography import MARK, straighten

#: Content words of a query beyond this are ignored (longest first).
MAX_QUERY_TERMS = 32
K1 = 1.2
B = 0.75

#: A run of letters and digits, and the combining marks inside it (the vowel signs and
#: viramas of Devanagari, Tamil or Thai, which ``\\w`` leaves out: "दिल्ली" is one term).
_TOKEN = re.compile(rf"[^\W_](?:[^\W_]|{MARK})*")
_ASCII_TOKEN = re.compile(r"[^\W_]+")  # the same for ASCII text, a third faster


def _words(folded: str) -> list[str]:
    """The terms of a :func:`_fold` ed text, unstemmed.

    A run of Chinese characters or kana, written without spaces, gives each of its
    characters and each pair of neighbours ("北京大学" -> 北, 北京, 京, 京大, 大, 大学,
    学; :mod:`oblivion_core.cjk`), as Lucene's CJK analyzer does with unigrams kept: a
    query phrased another way ("你的猫叫什么" against "我的猫叫小白") shares its pairs,
    and a query of one character ("猫") finds it. A query searches the pairs and its
    characters of content (:func:`query_terms`).
    """
    if folded.isascii():
        return _ASCII_TOKEN.findall(folded)
    words: list[str] = _TOKEN.findall(folded)
    if not HAS_CJK.search(folded):
        return words
    return [piece for word in words for piece in pieces(word, singles=True)]


#: Reads ``(seq, text)`` of every memory of a namespace, to build its index.
Loader = Callable[[str], Iterable[tuple[int, str]]]


def _fold(text: str) -> str:
    """Straighten apostrophes, strip diacritics and lowercase (``Zoë`` -> ``zoe``; the
    modifier letter apostrophe in ``Oʼbrien`` is a letter to regular expressions, and
    kept the word whole where ``O'Brien`` splits). Only the accents of Latin, Greek and
    Cyrillic letters go: the marks of other scripts (Devanagari's virama, Thai's tone
    marks) belong to their letters. Lowercased last: the compatibility forms of letters
    have no case of their own, and the mathematical bold "𝐏𝐲𝐭𝐡𝐨𝐧" of a text pasted from
    social media decomposes to "Python"."""
    if text.isascii():
        return text.lower()
    text = straighten(text)
    decomposed = unicodedata.normalize("NFKD", text)
    # accents go from Latin, Greek and Cyrillic letters ("é" is "e"); the marks of other
    # scripts are part of their letters (a virama, a Thai tone mark) and stay
    out: list[str] = []
    accented = False
    for c in decomposed:
        if not unicodedata.combining(c):
            accented = c < "\u0530" or "\u1e00" <= c < "\u2000"
        elif accented:
            continue
        out.append(c)
    # the marks kept join their letters again: kana's voicing mark ("ガ" decomposes to
    # "カ" and U+3099, which regular expressions read as a separate character)
    return unicodedata.normalize("NFC", "".join(out).lower())


def tokens(text: str) -> list[str]:
    """The index terms of ``text``, in order (stemmed, duplicates kept)."""
    return [stem(t) for t in _words(_fold(text))]


def query_terms(text: str) -> list[str]:
    """The distinct terms a query searches for: its content words, tokenised like documents.

    The query is folded as documents are (:func:`_fold`: "München" searches ``munchen``,
    "café" ``cafe``, the decomposed "café" too) before its content words are read
    (:func:`~oblivion_core.overlap.content_words`, in any script: "Москве", "北京").

    A run of Chinese characters or kana searches every pair of neighbours ("我对什么过敏"
    searches 我对, 对什, 什么, 么过 and 过敏; BM25's idf weighs the common ones down) and
    each of its characters that is no grammar (对, 过, 敏...: documents index characters
    too); past :data:`MAX_CJK_TERMS` of them, those nearest the end of the query.

    A content word that splits into several tokens (``grace's``) contributes its tokens
    of two or more letters that are neither stop words nor what a contraction leaves:
    "what's", "we're" and "didn't" searched for "what", "we", "re" and "didn", and
    matched every memory holding "what", "we're" or "didn't". An empty list means
    nothing to search for.
    """
    folded = _fold(text)
    found = [w for w in content_words(folded) if not HAS_CJK.search(w)]
    words = sorted(found, key=lambda w: (-len(w), w))[:MAX_QUERY_TERMS]  # longest first
    if HAS_CJK.search(folded):
        words += _cjk_terms(folded)
    out: dict[str, None] = {}
    for word in words:
        parts = tokens(word)
        if len(parts) > 1:
            negated = word.endswith("n't")  # "didn't": "didn" is the negation's
            parts = [
                p
                for k, p in enumerate(parts)
                if len(p) > 1
                and p not in STOP_WORDS
                and p not in _CONTRACTED
                and not (negated and k == len(parts) - 2)
            ]
        for part in parts:
            out[part] = None
    return list(out)


#: The pairs and characters of Chinese or Japanese a query searches at most: a question
#: after a long message (the end of the query) keeps its own.
MAX_CJK_TERMS = 128


def _cjk_terms(folded: str) -> list[str]:
    """The terms of the runs of Chinese characters or kana in a :func:`_fold` ed query:
    every pair (BM25 weighs the common ones down) and each character of content alone
    ("我需要吃什么药" shares no pair with "我每天早上吃降压药", but 药). Past
    :data:`MAX_CJK_TERMS`, those nearest the end of the query are kept: a question after
    a long message lost its words to the message's, cut by code point."""
    last: dict[str, int] = {}  # term -> where it was last seen
    for match in _TOKEN.finditer(folded):
        word = match.group()
        if not HAS_CJK.search(word):
            continue
        for k, piece in enumerate(pieces(word, singles=True)):
            if HAS_CJK.search(piece) and (len(piece) > 1 or not grammar(piece)):
                last[piece] = match.start() + k
    return sorted(last, key=lambda t: -last[t])[:MAX_CJK_TERMS]


#: What an apostrophe leaves of a contraction besides the word: "we're", "I've", "you'll".
_CONTRACTED = frozenset({"re", "ve", "ll"})


#: Documents changed in a search's ``allow`` set since the search before that are looked
#: up one by one; beyond this, the set is read whole again (about 0.1 ms at 100k).
_CHANGED_LOOKUPS = 1_024


def _in_mask(mask: npt.NDArray[np.bool_], seqs: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Whether each of ``seqs`` is in a :attr:`DocSet.mask` (past its end: not)."""
    inside = np.zeros(len(seqs), dtype=bool)
    ok = seqs < len(mask)
    inside[ok] = mask[seqs[ok]]
    return inside


#: Postings entries whose BM25 terms a namespace keeps between searches (about 12 MB at most).
_PARTS_LIMIT = 1_000_000


class _Postings:
    """Growable parallel arrays for one term: slot, term frequency and the length of the
    slot's document (a slot's length never changes, so the search need not gather it)."""

    __slots__ = ("dl", "n", "slots", "tf")

    def __init__(self) -> None:
        self.slots = np.zeros(4, dtype=np.int32)
        self.tf = np.zeros(4, dtype=np.float32)
        self.dl = np.zeros(4, dtype=np.float32)  # token counts: exact in float32
        self.n = 0

    def extend(self, slots: npt.NDArray[Any], tf: npt.NDArray[Any], dl: npt.NDArray[Any]) -> None:
        if self.n == 0 and len(slots) > len(self.slots):  # a new term of a large batch
            self.slots = slots.astype(np.int32)
            self.tf = tf.astype(np.float32)
            self.dl = dl.astype(np.float32)
            self.n = len(slots)
            return
        need = self.n + len(slots)
        if need > len(self.slots):
            cap = max(need, 2 * len(self.slots))
            self.slots = np.resize(self.slots, cap)
            self.tf = np.resize(self.tf, cap)
            self.dl = np.resize(self.dl, cap)
        self.slots[self.n : need] = slots
        self.tf[self.n : need] = tf
        self.dl[self.n : need] = dl
        self.n = need


class _Namespace:
    """The inverted index of one namespace."""

    def __init__(self) -> None:
        self.postings: dict[str, _Postings] = {}
        self.slot_of: dict[int, int] = {}
        self.seqs = np.zeros(64, dtype=np.int64)
        self.lengths = np.zeros(64, dtype=np.float64)  # 0 marks a deleted slot
        self.size = 0  # slots used
        self.alive = 0
        self.total_length = 0.0
        self._scores = np.zeros(0, dtype=np.float64)  # search's accumulator, kept zeroed
        # each searched term's live slots and BM25 terms, valid until the index changes
        # (idf and the average length change with every add and delete)
        self._parts: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]] = {}
        self._parts_size = 0
        # by slot, is the document in the DocSet a search was last given (``allow``), as
        # of the set's version kept beside it (the set itself, not its id: a new set, of
        # a namespace loaded again, counts from 0 and may get a freed set's id); one
        # entry per slot, grown with the index, made again after a compaction
        self._inside = np.zeros(0, dtype=bool)
        self._inside_of: tuple[DocSet, int] | None = None
        # each searched term's slots and BM25 terms inside that set, kept while
        # ``_inside_of`` is the very tuple ``_within_of`` holds
        self._within: dict[str, tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]] = {}
        self._within_of: tuple[DocSet, int] | None = None

    def add(self, seqs: Sequence[int], texts: Sequence[str]) -> None:
        self.delete([s for s in seqs if s in self.slot_of])
        self._forget_parts()
        n = len(seqs)
        need = self.size + n
        if need > len(self.seqs):
            cap = max(need, 2 * len(self.seqs))
            self.seqs = np.resize(self.seqs, cap)
            self.lengths = np.resize(self.lengths, cap)
        # Every (term, document) pair is counted at once: each token gets its term's
        # number (the terms of :func:`tokens`, each distinct word stemmed once per batch),
        # and one sort of term * n + document gives the term frequencies, grouped by term
        # and in slot order within each. A Counter and three list appends per pair took
        # 0.85 s for the 100k texts of the latency benchmark's store; this takes 0.4 s.
        vocab: dict[str, int] = {}  # term -> its number
        number: dict[str, int] = {}  # word as found -> its term's number
        term_ids: list[int] = []
        lengths = np.zeros(n, dtype=np.int64)
        for j, text in enumerate(texts):
            words = _words(_fold(text))
            lengths[j] = len(words)
            for word in words:
                if word not in number:
                    number[word] = vocab.setdefault(stem(word), len(vocab))
            term_ids += map(number.__getitem__, words)
        first = self.size
        self.slot_of.update(zip([int(s) for s in seqs], range(first, need), strict=True))
        self.seqs[first:need] = seqs
        # an empty document keeps a tiny length so 0 still means "deleted"
        self.lengths[first:need] = np.where(lengths > 0, lengths, 1e-9)
        self.total_length += float(lengths.sum())
        if term_ids:
            docs = np.repeat(np.arange(n, dtype=np.int64), lengths)
            pairs, tf = np.unique(
                np.asarray(term_ids, dtype=np.int64) * n + docs, return_counts=True
            )
            term_of, doc_of = np.divmod(pairs, n)
            starts = np.flatnonzero(np.r_[True, term_of[1:] != term_of[:-1]])
            ends = np.r_[starts[1:], len(pairs)]
            slots = (doc_of + first).astype(np.int32)
            dl = lengths[doc_of]
            names = list(vocab)
            for term_id, a, b in zip(
                term_of[starts].tolist(), starts.tolist(), ends.tolist(), strict=True
            ):
                term = names[term_id]
                postings = self.postings.get(term)
                if postings is None:
                    postings = self.postings[term] = _Postings()
                postings.extend(slots[a:b], tf[a:b], dl[a:b])
        self.size = need
        self.alive += len(seqs)
        held = self._inside_of
        if held is not None:  # the new slots, as the set holds them now (later changes: logged)
            added = _in_mask(held[0].mask, np.asarray(seqs, dtype=np.int64))
            self._inside = np.concatenate([self._inside, added])

    def to_arrays(self) -> dict[str, npt.NDArray[Any]]:
        """The index as flat arrays (:mod:`oblivion_core.lexical_snapshot` saves them):
        the terms, joined by newlines (a term is letters and digits), and each term's
        postings one after the other, ``offsets`` marking where each starts.

        Only live documents are saved: the slots of deleted and edited texts are
        compacted away first (their terms and postings would otherwise stay in the file
        of a namespace too large for :meth:`delete` to compact it yet, after ``forget()``
        promised the text gone). Compaction leaves every score and order as it was."""
        if self.alive < self.size:
            self._forget_parts()  # their slots move
            self._compact()
        terms = list(self.postings)
        held = [self.postings[t] for t in terms]
        offsets = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum([p.n for p in held], out=offsets[1:])

        def joined(field: str, dtype: type) -> npt.NDArray[Any]:
            parts = [getattr(p, field)[: p.n] for p in held]
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

        return {
            "terms": np.frombuffer("\n".join(terms).encode("utf-8"), dtype=np.uint8),
            "offsets": offsets,
            "slots": joined("slots", np.int32),
            "tf": joined("tf", np.float32),
            "dl": joined("dl", np.float32),
            "seqs": self.seqs[: self.size].copy(),
            "lengths": self.lengths[: self.size].copy(),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, npt.NDArray[Any]]) -> _Namespace:
        """The index :meth:`to_arrays` gave; ``ValueError`` if they do not make one."""
        try:
            raw_terms, offsets = arrays["terms"], arrays["offsets"]
            slots, tf, dl = arrays["slots"], arrays["tf"], arrays["dl"]
            seqs, lengths = arrays["seqs"], arrays["lengths"]
        except KeyError as exc:
            raise ValueError(f"no array {exc}") from None
        for name, value, dtype in (
            ("terms", raw_terms, np.uint8),
            ("offsets", offsets, np.int64),
            ("slots", slots, np.int32),
            ("tf", tf, np.float32),
            ("dl", dl, np.float32),
            ("seqs", seqs, np.int64),
            ("lengths", lengths, np.float64),
        ):
            if value.dtype != dtype or value.ndim != 1:
                raise ValueError(f"{name} is {value.dtype} of {value.ndim} dimension(s)")
        terms = bytes(raw_terms).decode("utf-8").split("\n") if len(offsets) > 1 else []
        size = len(seqs)
        n = len(slots)
        if (
            len(offsets) != len(terms) + 1
            or len(set(terms)) != len(terms)
            or offsets[0] != 0
            or offsets[-1] != n
            or np.any(np.diff(offsets) <= 0)
            or len(tf) != n
            or len(dl) != n
            or len(lengths) != size
            or (n and (slots.min() < 0 or slots.max() >= size))
            or not np.all(np.isfinite(lengths))
            or np.any(lengths < 0)
        ):
            raise ValueError("its arrays do not make one index")
        live = lengths > 0
        if len(np.unique(seqs[live])) != int(np.count_nonzero(live)):
            # (an edited text leaves its old slot deleted under the same seq)
            raise ValueError("a seq held by two live documents")
        space = cls()
        space.seqs, space.lengths = seqs.copy(), lengths.copy()
        space.size, space.alive = size, int(np.count_nonzero(live))
        # a sum of token counts: exact, as the adds and deletes kept it
        space.total_length = float(lengths[lengths >= 1].sum())
        space.slot_of = dict(zip(seqs[live].tolist(), np.flatnonzero(live).tolist(), strict=True))
        bounds = offsets.tolist()
        for k, term in enumerate(terms):
            a, b = bounds[k], bounds[k + 1]
            postings = space.postings[term] = _Postings()
            # views of the loaded arrays: a later extend() of a term outgrows its view
            # and copies it
            postings.slots, postings.tf, postings.dl, postings.n = (
                slots[a:b],
                tf[a:b],
                dl[a:b],
                b - a,
            )
        return space

    def _forget_parts(self) -> None:
        self._parts.clear()
        self._within.clear()
        self._parts_size = 0

    def delete(self, seqs: Iterable[int]) -> None:
        self._forget_parts()
        for seq in seqs:
            slot = self.slot_of.pop(int(seq), None)
            if slot is None:
                continue
            length = float(self.lengths[slot])
            self.total_length -= length if length >= 1 else 0.0
            self.lengths[slot] = 0.0
            self.alive -= 1
        if self.size > 1024 and self.alive < self.size // 2:
            self._compact()

    def _compact(self) -> None:
        self._inside_of = None  # slots move
        keep = self.lengths[: self.size] > 0
        remap = np.full(self.size, -1, dtype=np.int32)
        remap[keep] = np.arange(int(keep.sum()), dtype=np.int32)
        for term in list(self.postings):
            p = self.postings[term]
            live = keep[p.slots[: p.n]]
            if not live.any():
                del self.postings[term]
                continue
            slots = remap[p.slots[: p.n][live]]
            tf, dl = p.tf[: p.n][live], p.dl[: p.n][live]
            p.slots, p.tf, p.dl, p.n = slots.copy(), tf.copy(), dl.copy(), len(slots)
        self.seqs = self.seqs[: self.size][keep].copy()
        self.lengths = self.lengths[: self.size][keep].copy()
        self.size = len(self.seqs)
        self.slot_of = {int(s): k for k, s in enumerate(self.seqs)}

    def search(
        self, terms: Sequence[str], k: int, allow: DocSet | None = None
    ) -> tuple[list[int], list[float]]:
        if self.alive == 0:
            return [], []
        n_docs = self.alive
        avgdl = max(self.total_length / n_docs, 1e-9)
        if len(self._scores) < self.size:
            self._scores = np.zeros(max(self.size, 2 * len(self._scores)), dtype=np.float64)
        # accumulated in a reused zeroed buffer; only the matched slots are read and reset
        # (finding them by scanning every slot cost more than the scoring at 100k)
        matched: list[npt.NDArray[np.int32]] = []
        try:
            return self._score(terms, k, n_docs, avgdl, self._scores, matched, allow)
        finally:  # the buffer is zero again whatever happened
            for slots in matched:
                self._scores[slots] = 0.0

    def _inside_set(self, allow: DocSet) -> npt.NDArray[np.bool_]:
        """By slot: is the document in ``allow``. Brought up to date from the set's log of
        changes (a promotion or two between recalls), or read whole from its mask."""
        version = allow.version  # before the mask: every change counted is in it
        mask = allow.mask
        held = self._inside_of
        if held is not None and held[0] is allow:
            if held[1] == version:
                return self._inside
            seqs = allow.changed_since(held[1])
            if seqs is not None and len(seqs) <= _CHANGED_LOOKUPS:
                slot_of = self.slot_of
                pairs = [(slot, q) for q in seqs.tolist() if (slot := slot_of.get(q)) is not None]
                if pairs:
                    slots = np.fromiter((p[0] for p in pairs), np.int64, len(pairs))
                    found = np.fromiter((p[1] for p in pairs), np.int64, len(pairs))
                    self._inside[slots] = _in_mask(mask, found)
                self._inside_of = allow, version
                return self._inside
        inside = _in_mask(mask, self.seqs[: self.size])
        self._inside, self._inside_of = inside, (allow, version)
        return inside

    def _score(
        self,
        terms: Sequence[str],
        k: int,
        n_docs: int,
        avgdl: float,
        scores: npt.NDArray[np.float64],
        matched: list[npt.NDArray[np.int32]],
        allow: DocSet | None,
    ) -> tuple[list[int], list[float]]:
        lengths = self.lengths[: self.size]
        deleted = self.alive < self.size  # else every posting is live: no liveness gather
        c1, c2 = K1 * (1.0 - B), K1 * B / avgdl
        parts = self._parts
        inside = self._inside_set(allow) if allow is not None else None
        within = self._within
        if inside is not None and self._within_of is not self._inside_of:
            within.clear()
            self._within_of = self._inside_of
        for term in terms:
            known = parts.get(term)
            if known is not None:
                slots, part = known
            else:
                p = self.postings.get(term)
                if p is None:
                    continue
                slots, tf, dl = p.slots[: p.n], p.tf[: p.n], p.dl[: p.n]
                live = lengths[slots] > 0 if deleted else None
                n_q = p.n if live is None else int(np.count_nonzero(live))
                if n_q == 0:
                    continue
                idf = math.log((n_docs - n_q + 0.5) / (n_q + 0.5))
                idf = idf if idf > 0 else 1e-6
                # idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)), in float64
                denom = np.multiply(dl, c2, dtype=np.float64)
                denom += c1
                denom += tf
                part = np.multiply(tf, idf * (K1 + 1.0), dtype=np.float64)
                part /= denom
                if live is not None and n_q < len(slots):
                    slots, part = slots[live], part[live]
                if self._parts_size > _PARTS_LIMIT:
                    self._forget_parts()
                parts[term] = slots, part
                self._parts_size += len(slots)
            if inside is not None:  # only these documents compete (idf stays the whole index's)
                kept = within.get(term)
                if kept is None:
                    ok = inside[slots]
                    if not ok.all():
                        slots, part = slots[ok], part[ok]
                        self._parts_size += len(slots)
                    kept = within[term] = slots, part
                slots, part = kept
                if not len(slots):
                    continue
            matched.append(slots)
            scores[slots] += part  # a term lists each slot once
        if not matched:
            return [], []
        # a slot appears once per matched term it holds: the best k * terms entries hold
        # the best k distinct slots
        cand = np.concatenate(matched) if len(matched) > 1 else matched[0]
        values = scores[cand]
        want = k * len(matched)
        if len(cand) > want:
            # everything tied with the last one kept stays, so ties fall to seq below
            kth = values[np.argpartition(-values, want - 1)[want - 1]]
            keep = values >= kth
            cand, values = cand[keep], values[keep]
        top_slots, first = np.unique(cand, return_index=True)
        top_values = values[first]
        # ties: the newest first, as ranking orders them
        order = np.lexsort((-self.seqs[top_slots], -top_values))[:k]
        return [int(s) for s in self.seqs[top_slots[order]]], [float(v) for v in top_values[order]]


class LexicalIndex:
    """BM25 search over the memories of each namespace (see the module doc)."""

    def __init__(
        self,
        loader: Loader,
        snapshots: LexicalSnapshots | None = None,
        generation: Callable[[str], int | None] | None = None,
        min_documents: int = 1,
    ) -> None:
        """``snapshots`` and ``generation`` (the namespace's number in the state
        database, :meth:`~oblivion_core.state.StateDB.lexical_generation`): a saved
        index is read back instead of the build when the numbers match. Only indexes of
        ``min_documents`` or more are saved (a small one builds in less time than a file
        takes to open)."""
        self._load = loader
        self._snapshots = snapshots if generation is not None else None
        self._generation = generation
        self.min_documents = min_documents
        # namespace -> the number its index was saved or read at (not saved again then)
        self._saved: dict[str, int] = {}
        self._spaces: dict[str, _Namespace] = {}
        # its own lock: a search may run on a worker thread, beside the engine's lock
        self._lock = threading.Lock()
        self._changes: dict[str, int] = {}  # per namespace, kept across drop()
        # namespaces read_saved() looked for a file of since their last drop()
        self._looked: set[str] = set()

    def changes(self, namespace: str) -> int:
        """How many times ``namespace``'s documents changed (adds, deletes, drops): a
        search run outside the caller's lock is stale once this moved."""
        return self._changes.get(namespace, 0)

    def _changed(self, namespace: str) -> None:
        self._changes[namespace] = self._changes.get(namespace, 0) + 1

    def _space(self, namespace: str) -> _Namespace:
        space = self._spaces.get(namespace)
        if space is None:
            # read_saved() found no file it could read: none has appeared since (this
            # process alone saves one, from a built index)
            looked = namespace in self._looked
            space = None if looked else self._saved_space(namespace)
            if space is None:
                space = _Namespace()
                rows = list(self._load(namespace))
                if rows:
                    seqs, texts = zip(*rows, strict=True)
                    space.add(seqs, texts)
            self._spaces[namespace] = space
        return space

    def _saved_space(self, namespace: str) -> _Namespace | None:
        """The index saved for ``namespace``, if it is still the namespace's (call with
        the lock held: a write that commits after the number is read indexes its rows
        once this returns, as it would after a build)."""
        if self._snapshots is None or self._generation is None:
            return None
        generation = self._generation(namespace)
        if generation is None:
            return None
        arrays = self._snapshots.load(namespace, generation)
        if arrays is None:
            return None
        try:
            space = _Namespace.from_arrays(arrays)
        except ValueError as exc:
            self._snapshots.discard(namespace, exc)
            return None
        self._saved[namespace] = generation
        return space

    def save(self, namespace: str, generation: Callable[[], int]) -> bool:
        """Save ``namespace``'s index (if built) as of ``generation()``, the namespace's
        number now (asked only if there is an index to save): call where no write can
        land meanwhile (the engine's lock held). ``True`` if a file now holds it."""
        if self._snapshots is None:
            return False
        with self._lock:
            space = self._spaces.get(namespace)
            if space is None:
                return False
            if space.alive < self.min_documents:  # one saved when it was bigger is stale
                self._saved.pop(namespace, None)
                self._snapshots.drop(namespace)
                return False
            number = generation()
            if self._saved.get(namespace) == number:
                return True  # unchanged since it was saved or read
            arrays = space.to_arrays()
        if not self._snapshots.save(namespace, number, arrays):
            return False
        with self._lock:
            self._saved[namespace] = number
        return True

    def read_saved(self, namespace: str) -> None:
        """Read ``namespace``'s saved index now, if it is not built and a file still
        holds it: call before a write that changes the namespace's number (under the
        engine's lock, before its transaction), which then indexes on top of it. Without
        this, a reopened namespace whose first call is a write built its index from
        every text at its next search (about 1 s at 50k memories) instead of reading the
        file (39 ms at 100k). A namespace with no file costs one lookup per load."""
        with self._lock:
            if namespace in self._spaces or namespace in self._looked:
                return
            self._looked.add(namespace)
            space = self._saved_space(namespace)
            if space is not None:
                self._spaces[namespace] = space

    def build(self, namespace: str) -> None:
        """Build ``namespace``'s index now, if it is not built (its first search would)."""
        with self._lock:
            self._space(namespace)

    def add(self, namespace: str, seqs: Sequence[int], texts: Sequence[str]) -> None:
        """Index texts under their sequence numbers (call once they are stored)."""
        with self._lock:
            self._changed(namespace)
            space = self._spaces.get(namespace)
            if space is not None:  # an index not built yet reads them when it is
                try:
                    space.add(seqs, texts)
                except BaseException:  # half added: built again from the texts
                    self._spaces.pop(namespace, None)
                    raise

    def delete(self, namespace: str, seqs: Sequence[int]) -> None:
        """Remove documents by sequence number (absent ones are ignored)."""
        with self._lock:
            self._changed(namespace)
            if len(seqs):
                self._drop_saved(namespace)
            space = self._spaces.get(namespace)
            if space is None:
                return
            try:
                space.delete(seqs)
            except BaseException:  # half deleted: built again from the texts
                self._spaces.pop(namespace, None)
                raise

    def replace(self, namespace: str, seq: int, text: str) -> None:
        """Re-index one document with new text."""
        with self._lock:
            self._drop_saved(namespace)
        self.add(namespace, [seq], [text])

    def _drop_saved(self, namespace: str) -> None:
        """Delete the file saved for a namespace, as one of its texts is deleted or
        changed (call with the lock held): the change made it stale, never to be read
        again, and it would keep the old text's words on disk until the namespace is
        next saved (a clean close), or after a crash, until the one after that. A built
        index is saved again at close."""
        self._saved.pop(namespace, None)
        if self._snapshots is not None:
            self._snapshots.drop(namespace)

    def drop(self, namespace: str) -> None:
        """Forget a namespace's index (a saved one stays: the state database's number
        says whether it still holds)."""
        with self._lock:
            self._changed(namespace)
            self._spaces.pop(namespace, None)
            self._saved.pop(namespace, None)
            self._looked.discard(namespace)

    def search(
        self,
        namespace: str,
        query: str,
        k: int,
        allow: DocSet | None = None,
    ) -> tuple[list[int], list[float]]:
        """Top-``k`` sequence numbers by BM25 and their scores (higher is better).

        ``allow``: if given, only the documents whose sequence numbers are in it are
        returned; idf and the average length are still those of the whole namespace, so
        a document scores the same with or without it.
        """
        terms = query_terms(query)
        if not terms or k <= 0:
            return [], []
        with self._lock:
            return self._space(namespace).search(terms, k, allow)
