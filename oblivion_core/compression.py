"""Compression: low-activation memories folded into summaries, reversibly.

When archived memories fall below ``policy.compress_below`` and at least
``policy.compress_min_cluster`` of them form a group -- similar to each other (cosine
>= ``policy.compress_similarity``) or written close together in time (the turns of one
long meeting, within ``policy.adjacency_window``) -- ``maintain()`` plans a ``compress``
step: a summary memory is written (category ``summary``, linked to every original, with
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


def clusters(
    vectors: npt.NDArray[np.float32],
    times: npt.NDArray[np.float64],
    *,
    similarity: float,
    window: float,
    min_size: int,
) -> list[list[int]]:
    """Group rows that are similar or close in time (single-link, greedy).

    Returns groups of at least ``min_size`` row indices; each row is in at most one group.
    """
    n = len(times)
    if n < min_size:
        return []
    # the graph of rows: similar ones, and neighbours in time within the window
    linked = vectors @ vectors.T >= similarity
    order = np.argsort(times, kind="stable")
    near = np.diff(times[order]) <= window
    before, after = order[:-1][near], order[1:][near]
    linked[before, after] = linked[after, before] = True
    # its connected components, a breadth-first search from each row not yet reached:
    # one numpy step per level, where a union per similar pair took 4 s at 2,000
    # near-identical rows (2M pairs)
    label = np.full(n, -1)
    for start in range(n):
        if label[start] >= 0:
            continue
        label[start] = start
        frontier = np.array([start])
        while frontier.size:
            frontier = np.flatnonzero(linked[frontier].any(axis=0) & (label < 0))
            label[frontier] = start
    groups: dict[int, list[int]] = {}
    for i, root in enumerate(label.tolist()):
        groups.setdefault(root, []).append(i)
    return sorted(
        (sorted(g, key=lambda i: (times[i], i)) for g in groups.values() if len(g) >= min_size),
        key=lambda g: (times[g[0]], g[0]),
    )


def shared_metadata(metas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The metadata every one of ``metas`` holds alike, which a summary of them carries:
    a filter passes the summary exactly when it passes its originals."""
    if not metas:
        return {}
    return {k: v for k, v in metas[0].items() if all(k in o and o[k] == v for o in metas[1:])}
