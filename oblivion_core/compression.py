"""Compression: low-activation memories folded into summaries, reversibly.

When archived memories fall below ``policy.compress_below`` and at least
``policy.compress_min_cluster`` of them form a group -- similar to each other (cosine
>= ``policy.compress_similarity`` with the group's centroid) or written one after the
other, within ``policy.adjacency_window``, on one subject (the turns of a meeting
that stay on its subject: cosine at least half ``compress_similarity``) -- ``maintain()`` plans a
``compress`` step (see :func:`clusters`: time alone never joins memories, a
``remember_many`` batch is no meeting by itself, a chain of similar pairs does not join
two subjects, and a group holds at most what one summary can stand for). A summary
memory is written (category ``summary``, linked to every original, with
``policy.compress_inherit`` of the group's highest activation), and the originals move
to the cold tier, where recall does not look unless asked (``include_cold=True``).
``Oblivion.expand(summary_id)`` returns the originals byte for byte and
``Oblivion.decompress(summary_id)`` undoes the step.

:class:`ExtractiveSummarizer` is the offline default: it scores each sentence of the
group by the summed document frequency of its content words across the group (what the
group keeps talking about), takes the best sentences until ``max_words`` (each Chinese
character or kana a word: :func:`~oblivion_core.cjk.word_count`), and joins them in
their original order. LLM-backed summarisers from the adapters satisfy the same
:class:`~oblivion_core.typing.Summarizer` protocol.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oblivion_core.cjk import HAS_CJK, word_count
from oblivion_core.overlap import content_words

#: The end of a sentence: ".", "!" or "?" and a space; the full stops of Chinese and
#: Japanese (。！？), Arabic's question mark and the Devanagari danda, space or not.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？؟।])(?![。！？؟।」』）】〕\"'’”])\s*")

#: The end of a Chinese or Japanese sentence (a closing quote or bracket may follow).
_CJK_END = ("。", "！", "？", "」", "』", "）", "】", "〕")


class ExtractiveSummarizer:
    """Offline summariser: the most representative sentences, in order (see module doc)."""

    def __init__(self, max_words: int = 80) -> None:
        self.max_words = max_words

    def summarize(self, texts: Sequence[str]) -> str:
        """One text standing for all ``texts``."""
        sentences = [s.strip() for t in texts for s in _SENTENCE.split(t) if s.strip()]
        if not sentences:
            return ""
        df = Counter(w for s in sentences for w in content_words(s))
        scored = sorted(
            range(len(sentences)),
            key=lambda i: (
                -sum(df[w] for w in content_words(sentences[i]))
                / (1 + word_count(sentences[i])) ** 0.5,
                i,
            ),
        )
        chosen: list[int] = []
        words = 0
        for i in scored:
            n = word_count(sentences[i])
            if chosen and words + n > self.max_words:
                continue
            chosen.append(i)
            words += n
        kept = [sentences[i] for i in sorted(chosen)]
        out = kept[0]
        for before, sentence in itertools.pairwise(kept):
            # Chinese and Japanese sentences follow each other without a space
            cjk = before.endswith(_CJK_END) and HAS_CJK.search(sentence) is not None
            out += ("" if cjk else " ") + sentence
        return out


#: A summary of ``max_words`` words stands for at most one memory per this many of its
#: words (80 words: 20 memories; the extractive one keeps a sentence of most of them).
WORDS_PER_MEMORY = 4

#: A time link needs this share of ``similarity`` (a positive one): the next turn of a
#: conversation stays on its subject, the next ticket of a support queue does not.
TIME_LINK_SHARE = 0.5


def max_group_size(max_words: object, min_size: int) -> int:
    """The most memories one summary of ``max_words`` words gathers (80 when the
    summarizer does not say), never fewer than twice ``min_size``, so that a larger
    group splits into parts of at least ``min_size``."""
    words = max_words if isinstance(max_words, int) and max_words > 0 else 80
    return max(2 * min_size, words // WORDS_PER_MEMORY)


def clusters(
    vectors: npt.NDArray[np.float32],
    times: npt.NDArray[np.float64],
    *,
    similarity: float,
    window: float,
    min_size: int,
    max_size: int | None = None,
) -> list[list[int]]:
    """Group rows on one subject: similar ones, and the neighbours in time of a row
    that are alike nothing else but related to it.

    The rows are taken in time order (ties in row order: a ``remember_many`` batch in
    its order), twice:

    1. each joins the group whose centroid (the mean of its rows' vectors) is most
       similar to it, when that cosine is at least ``similarity``, else starts one: a
       chain of pairs, each similar, does not join two subjects (single-link grouping
       made one group of 400 support tickets on 8 topics);
    2. each row still alone joins the group of the row just before it in time, when that
       one is at most ``window`` earlier and the cosine with its group's centroid is at
       least :data:`TIME_LINK_SHARE` of ``similarity``: the turns of a meeting that
       stay on its subject, each saying something else about it. Time never joins two
       groups, nor a row that has a subject of its own (a support queue taking its
       topics in turn, a batch of unrelated texts), nor unrelated rows, however close
       in time. So a meeting whose turns move from subject to subject (cosines of
       0.02-0.3 between the local model's vectors of its turns) is summarised by
       subject, where its turns repeat one, or not at all: its turns are as unrelated
       as a support queue's tickets.

    A group of more than ``max_size`` rows (when given) is cut, in time order, into as
    many near-equal parts of at most ``max_size`` as needed, each of at least
    ``min_size``: one summary cannot stand for hundreds of memories.

    Returns groups of at least ``min_size`` row indices, each sorted by time (then
    row), ordered by their first row; each row is in at most one group.
    """
    n = len(times)
    if n < min_size:
        return []
    sims = np.asarray(vectors @ vectors.T, dtype=np.float32)
    related = min(similarity, similarity * TIME_LINK_SHARE)
    order = np.argsort(times, kind="stable").tolist()
    # with_[g, x]: the summed cosine of row x with the rows of group g, so that x's
    # cosine with g's centroid is with_[g, x] / |sum of g's vectors| (sq[g] its
    # square): a numpy step per row, not one per pair (2,000 near-identical rows: 2M)
    # (float32: a float64 matrix of 2,000 rows took 0.13 s more, its pages first touched)
    with_ = np.zeros((n, n), dtype=np.float32)
    sq = np.zeros(n)
    group_of = np.full(n, -1, dtype=np.intp)

    def join(x: int, g: int) -> None:
        group_of[x] = g
        sq[g] += 2.0 * float(with_[g, x]) + float(sims[x, x])
        with_[g] += sims[x]

    def centroid_cos(x: int, g: slice | int) -> Any:
        return with_[g, x] / np.sqrt(np.maximum(sq[g], 1e-12))

    made = 0
    for x in order:
        cos = centroid_cos(x, slice(0, made))
        best = int(np.argmax(cos)) if made else -1
        if best >= 0 and cos[best] >= similarity:
            join(x, best)
        else:
            join(x, made)
            made += 1
    alone = np.bincount(group_of, minlength=made)[group_of] == 1
    for previous, x in itertools.pairwise(order):
        if (
            alone[x]
            and times[x] - times[previous] <= window
            and group_of[previous] != group_of[x]
            and centroid_cos(x, int(group_of[previous])) >= related
        ):
            # its own group, of it alone, is left empty
            join(x, int(group_of[previous]))
    members: list[list[int]] = [[] for _ in range(made)]
    for x in order:
        members[group_of[x]].append(x)
    found: list[list[int]] = []
    for g in members:
        if len(g) < min_size:
            continue
        parts = 1
        if max_size is not None and len(g) > max_size:
            # near-equal parts in time order, none below min_size
            parts = max(1, min(-(-len(g) // max_size), len(g) // min_size))
        size, extra = divmod(len(g), parts)
        at = 0
        for p in range(parts):
            step = size + (p < extra)
            found.append(g[at : at + step])
            at += step
    return sorted(found, key=lambda g: (times[g[0]], g[0]))


def shared_metadata(metas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The metadata every one of ``metas`` holds alike, which a summary of them carries:
    a filter passes the summary exactly when it passes its originals."""
    if not metas:
        return {}
    return {k: v for k, v in metas[0].items() if all(k in o and o[k] == v for o in metas[1:])}
