"""The in-memory copy of a large archive: sign sketches pick candidates, exact products
rank them.

A namespace whose archive is too big for the exact copy
(:attr:`~oblivion_core.engine.Oblivion.EXACT_ARCHIVE_ROWS`) used to be searched through
Chroma's HNSW index: 1.6-1.9 ms for the 100 candidates a deep recall asks for at 85k
archived memories, most of a deep recall's own time at 100k. :class:`SketchIndex` holds
the same vectors in memory, and beside each one its signs: one bit per dimension, 48
bytes at 384 dimensions, a 32nd of the float32 row. The number of signs a memory and
the query disagree on (their Hamming distance) estimates the angle between them
(Charikar, "Similarity estimation techniques from rounding algorithms", 2002). A search
counts it for every row (4 MB read at 85k rows, against 130 MB for one product), takes
the rows nearest by that count, at least :data:`CANDIDATES_PER_RESULT` per result
asked for, and ranks them by their exact similarity (a float32 product over those rows
only).

Like HNSW it is approximate: a memory among the best by similarity can be left out when
its signs disagree with the query's more than those of the candidates taken. Measured on
the latency benchmark's corpus (``python bench/sketch_archive.py``), it finds more of the
exact best 50 than Chroma's query does, in less time. It is deterministic: the
candidates are every row within a distance, so the order rows sit in (which a reopen
changes) does not change them.

The signs are taken on the model's own axes. Centring the vectors first changed nothing
measurable; rotating them onto their main axes (as the two-stage search of
:mod:`oblivion_core.index` does) lost recall (73 % of the best 50 with 250 candidates,
against 97 % on the model's axes): the main axes hold most of the variance, and the
signs of the many weak ones are noise.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from oblivion_core.index import ActiveIndex, _grown, _span
from oblivion_core.typing import Vectors

#: Candidates re-scored exactly per result asked for. Of the best 50 of 85k memories of
#: the latency benchmark's corpus (300 queries), 99.6 % were found with 12 per result,
#: 99.8 % with 16 and 99.95 % with 24; 16 multiply 800 rows for recall's 50 (0.3 ms
#: right after an embedding, 0.45 ms for 1,200).
CANDIDATES_PER_RESULT = 16
#: Candidates re-scored at least, however few results are asked for.
MIN_CANDIDATES = 256


def sign_codes(vectors: Vectors) -> npt.NDArray[np.uint64]:
    """The signs of each row of ``vectors`` ``(n, dim)``, packed: one bit per dimension
    (set where the coordinate is positive), 64 to a word, shape ``(words, n)``: one row
    of words per 64 dimensions, so a distance is a sum of whole rows."""
    bits = np.packbits(np.asarray(vectors) > 0, axis=1)
    pad = -bits.shape[1] % 8  # whole words: the padding is zero in every code
    if pad:
        bits = np.pad(bits, ((0, 0), (0, pad)))
    words: npt.NDArray[np.uint64] = np.ascontiguousarray(bits.view(np.uint64).T)
    return words


def _popcount_table(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint8]:
    """Bits set in each word, by table (numpy before 2.0 has no ``bitwise_count``)."""
    counts = _BYTE_BITS[x.view(np.uint8)].reshape(*x.shape, 8)
    out: npt.NDArray[np.uint8] = counts.sum(axis=-1, dtype=np.uint8)
    return out


_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
popcount: Any = getattr(np, "bitwise_count", _popcount_table)


def hamming(codes: npt.NDArray[np.uint64], query: npt.NDArray[np.uint64]) -> npt.NDArray[Any]:
    """Signs on which each column of ``codes`` and the code ``query`` (one column)
    disagree."""
    out = np.zeros(codes.shape[1], dtype=np.uint16)  # up to 65,535 dimensions
    for word in range(codes.shape[0]):
        np.add(out, popcount(codes[word] ^ query[word]), out=out)
    return out


def nearest_codes(distances: npt.NDArray[Any], want: int) -> npt.NDArray[np.int64]:
    """Every position whose distance is at most the smallest one that has ``want``
    positions within it (ties at that distance all kept), in order."""
    take = min(want, len(distances))
    # the take-th smallest distance, by one selection (0.02 ms at 85k rows; a histogram
    # of every distance took 0.1 ms)
    within = int(np.partition(distances, take - 1)[take - 1]) if take > 0 else 0
    return np.flatnonzero(distances <= within)


class SketchIndex(ActiveIndex):
    """An :class:`~oblivion_core.index.ActiveIndex` whose :meth:`nearest` re-scores only
    the rows nearest to the query by their signs (module doc): approximate, for a copy
    too big for an exact search to be fast."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__(dim)
        self._codes: npt.NDArray[np.uint64] = np.zeros((0, 0), dtype=np.uint64)

    def _grow(self, cap: int, n: int) -> None:
        super()._grow(cap, n)
        words = -(-(self.dim or 0) // 64)
        if self._codes.shape[0] != words:
            self._codes = np.zeros((words, 0), dtype=np.uint64)
        self._codes = _grown(self._codes, cap, n, axis=1)

    def _move(self, src: int, dst: int) -> None:
        super()._move(src, dst)
        self._codes[:, dst] = self._codes[:, src]

    def _project(self, rows: npt.NDArray[np.int64]) -> None:
        super()._project(rows)
        if len(rows):
            span = _span(rows)
            self._codes[:, span] = sign_codes(self._rows[span])

    def _bounded_rows(self, query: Vectors, k: int) -> npt.NDArray[np.int64] | None:
        """The rows nearest to ``query`` by their signs, at least
        :data:`CANDIDATES_PER_RESULT` per result; ``None`` (one product over every
        row) where those would be an eighth of the rows or more."""
        n = len(self.ids)
        want = max(CANDIDATES_PER_RESULT * k, MIN_CANDIDATES)
        if k <= 0 or 8 * want >= n:
            return None
        code = sign_codes(np.asarray(query, dtype=np.float32).reshape(1, -1))[:, 0]
        rows = nearest_codes(hamming(self._codes[:, :n], code), want)
        return None if 8 * len(rows) >= n else rows
