"""Exact cosine search over an in-process matrix: the active tier's index, and the
in-memory copy of a small namespace's archive (``Oblivion.EXACT_ARCHIVE_ROWS``).

A dot product over a float32 matrix beats an ANN round trip at these sizes (thousands
to about 25k memories at 384 dimensions: 1.5 ms at 16k rows right after an embedding,
against 2.3-2.6 ms for Chroma's query of 100 candidates) and is exact.

Vectors are stored one per *column* (``(dim, capacity)``) and multiplied on one BLAS
thread (:mod:`oblivion_core.blas`): the fastest layout for a single query, 0.9 ms at
16k memories right after an embedding against 1.6 ms for ``np.einsum`` over rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oblivion_core.blas import matvec
from oblivion_core.typing import Vectors


class ActiveIndex:
    """Unit vectors of the active memories of one namespace, searchable by dot product."""

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self._row: dict[str, int] = {}
        # one memory per column; columns past len(self) are spare capacity
        self._cols: Vectors = np.zeros((dim or 0, 0), dtype=np.float32)
        # each row's memory's write number (see add()), for recent()
        self._seqs: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._added = 0

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    def add(
        self, ids: Sequence[str], vectors: Vectors, seqs: npt.NDArray[np.int64] | None = None
    ) -> None:
        """Add (or replace) rows; ``vectors`` are unit length, shape ``(len(ids), dim)``.
        ``seqs``: the memories' write numbers, which order :meth:`recent` (default: the
        order they are added in)."""
        if not len(ids):
            return
        if self.dim is None:
            self.dim = int(vectors.shape[1])
            self._cols = np.zeros((self.dim, 0), dtype=np.float32)
        fresh: list[int] = []
        for k, mid in enumerate(ids):
            row = self._row.get(mid)
            if row is None:
                fresh.append(k)
            else:
                self._cols[:, row] = vectors[k]
        if not fresh:
            return
        n = len(self.ids)
        need = n + len(fresh)
        if need > self._cols.shape[1]:
            # half again: amortised O(1) per column, and a large index (an archive copy
            # of 16k memories) carries at most half its size in spare columns
            # (a first allocation of 8, not 64: one per namespace, 12 KB not 96 at 384
            # dimensions, for thousands of small namespaces)
            cap = max(need, self._cols.shape[1] * 3 // 2, 8)
            grown = np.zeros((self.dim, cap), dtype=np.float32)
            grown[:, :n] = self._cols[:, :n]
            self._cols = grown
            grown_seqs = np.zeros(cap, dtype=np.int64)
            grown_seqs[:n] = self._seqs[:n]
            self._seqs = grown_seqs
        self._cols[:, n:need] = vectors[fresh].T
        if seqs is None:
            self._seqs[n:need] = np.arange(self._added, self._added + len(fresh))
        else:
            self._seqs[n:need] = np.asarray(seqs, dtype=np.int64)[fresh]
        self._added += len(fresh)
        for offset, k in enumerate(fresh):
            self._row[ids[k]] = n + offset
            self.ids.append(ids[k])

    @property
    def capacity(self) -> int:
        """Columns allocated (rows held plus spare ones): what the index costs."""
        return 0 if self.dim is None else int(self._cols.shape[1])

    def remove(self, ids: Sequence[str]) -> None:
        """Remove rows (absent ids are ignored); the last row fills each hole."""
        for mid in ids:
            row = self._row.pop(mid, None)
            if row is None:
                continue
            last = len(self.ids) - 1
            if row != last:
                moved = self.ids[last]
                self._cols[:, row] = self._cols[:, last]
                self._seqs[row] = self._seqs[last]
                self.ids[row] = moved
                self._row[moved] = row
            self.ids.pop()

    def vector(self, memory_id: str) -> Vectors | None:
        """The stored vector of an active memory, or ``None``."""
        row = self._row.get(memory_id)
        return None if row is None else self._cols[:, row].copy()

    def search(self, query: Vectors, k: int) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Top-``k`` ids by cosine similarity to a unit ``query``, best first."""
        return self.top(self.scores(query), k)

    def scores(self, query: Vectors) -> npt.NDArray[np.float32]:
        """Cosine similarity of every memory to a unit ``query``, by row
        (:meth:`row_of`); valid until the index next changes."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        return matvec(query.reshape(-1), self._cols[:, : len(self.ids)])

    def top(
        self,
        scores: npt.NDArray[np.float32],
        k: int,
        seqs: Callable[[list[str]], npt.NDArray[np.int64]] | None = None,
    ) -> tuple[list[str], npt.NDArray[np.float32]]:
        """The ``k`` best of :meth:`scores`: ids and similarities, best first.

        ``seqs`` (the memories' insertion numbers, by id): when more than ``k`` tie for
        the last places (within :data:`NEAR_TIE`: the same text stored many times), the
        newest of them are kept, as ranking orders ties; else the ones that happened to
        sit first in the index, which a reopen changes.
        """
        if not len(scores) or k <= 0:
            return [], np.zeros(0, dtype=np.float32)
        ids, values = self._top(scores, k)
        if seqs is None or k >= len(scores):
            return ids, values
        edge = float(values[-1])
        if np.count_nonzero(scores >= edge - NEAR_TIE) <= k:  # the usual case: one pass
            return ids, values
        near = np.flatnonzero(scores >= edge - NEAR_TIE)
        above = near[scores[near] > edge + NEAR_TIE]
        tied = near[scores[near] <= edge + NEAR_TIE]
        newest = np.argsort(-seqs([self.ids[r] for r in tied.tolist()]), kind="stable")
        chosen = np.concatenate([above, tied[newest[: k - len(above)]]])
        chosen = chosen[np.argsort(-scores[chosen], kind="stable")]
        return [self.ids[r] for r in chosen.tolist()], scores[chosen]

    def exact(self, query: Vectors, rows: Sequence[int]) -> npt.NDArray[np.float64]:
        """Cosine similarity of the memories at ``rows`` to a unit ``query``: the same
        value for the same pair of vectors wherever the memory's column is.

        The product behind :meth:`scores` rounds a column's sum differently depending on
        its place in the matrix (BLAS kernels treat blocks of columns and the tail
        differently), by about one float32 ulp. Places change as memories come and go,
        and a reopened store rebuilds the index in insertion order, so equal vectors (the
        same text stored twice) would not tie, and which comes first could change with a
        reopen. Here each column is summed in float64, one dimension after the other.
        About 1 us a column (each column is spread over ``dim`` cache lines): for the
        few candidates that need it, not for every one.
        """
        cols = self._cols[:, np.asarray(rows, dtype=np.int64)]
        q = np.asarray(query, dtype=np.float64).reshape(-1, 1)
        out: npt.NDArray[np.float64] = np.multiply(cols, q).sum(axis=0)
        return out

    def row_of(self, memory_id: str) -> int | None:
        """Where a memory's similarity is in :meth:`scores`, or ``None``."""
        return self._row.get(memory_id)

    def search_many(
        self, queries: Vectors, k: int
    ) -> list[tuple[list[str], npt.NDArray[np.float32]]]:
        """:meth:`search` for each row of ``queries`` ``(m, dim)``, in one product."""
        n = len(self.ids)
        if n == 0 or k <= 0 or not len(queries):
            return [([], np.zeros(0, dtype=np.float32)) for _ in range(len(queries))]
        out = []
        # blocks of queries keep the (m, n) similarity matrix small
        for start in range(0, len(queries), 64):
            block = matvec(queries[start : start + 64], self._cols[:, :n])
            for sims in block:
                out.append(self._top(sims, k))
        return out

    def _top(
        self, sims: npt.NDArray[np.float32], k: int
    ) -> tuple[list[str], npt.NDArray[np.float32]]:
        """The ``k`` best of one row of similarities (ties: index order)."""
        n = len(sims)
        if k < n:
            top = np.argpartition(-sims, k - 1)[:k]
            top = top[np.argsort(-sims[top], kind="stable")]
        else:
            top = np.argsort(-sims, kind="stable")
        ids = self.ids
        return [ids[i] for i in top.tolist()], sims[top]

    def recent(self, n: int, skip: int = 0) -> tuple[list[str], Vectors]:
        """The ``n`` memories with the highest write numbers (``seqs`` of :meth:`add`)
        below the ``skip`` highest, oldest first, and their vectors, one per row.

        By write number, not by row: rows move as memories leave (the last fills the
        hole) and come back (a restored memory is added last), and a namespace read back
        from the store puts them in another order, so the same writes linked to other
        memories live and after a reload (found by a review of automatic unloading).
        """
        size = len(self.ids)
        take = min(n + skip, size)
        if take <= 0 or n <= 0:
            return [], self._cols[:, :0].T
        seqs = self._seqs[:size]
        # the ``take`` highest, then in order
        rows = np.argpartition(seqs, size - take)[size - take :] if take < size else np.arange(size)
        rows = rows[np.argsort(seqs[rows], kind="stable")][: max(take - skip, 0)]
        start, stop = size - take, size - take + len(rows)
        if np.array_equal(rows, np.arange(start, stop)):  # in place (none left or came back)
            return self.ids[start:stop], self._cols[:, start:stop].T  # a view
        picked = rows.tolist()
        return [self.ids[r] for r in picked], self._cols[:, rows].T


#: Similarities closer than this may be equal vectors apart only by the product's
#: rounding (one float32 ulp is 6e-8 at 0.5): :func:`untie` computes them exactly.
NEAR_TIE = 1e-6


def untie(query: Vectors, indexes: Sequence[ActiveIndex], sims: dict[str, float]) -> None:
    """Make near-equal similarities in ``sims`` (id -> similarity to ``query``) exact,
    in place, for the memories the ``indexes`` hold, so equal vectors tie.

    The product over an index rounds by a memory's place in it (:meth:`ActiveIndex.exact`),
    and places differ between a live instance and a reopened one. The same text stored
    twice would then not tie, so "among equal scores the newer first"
    (:func:`oblivion_core.recall.rank_order`) would not hold and their order could change
    with a reopen. Only values within :data:`NEAR_TIE` of another are recomputed: among
    recall's ~100 candidates, about 2 % of recalls have any.
    """
    values = np.fromiter(sims.values(), np.float64, len(sims))
    order = np.argsort(values, kind="stable")
    close = np.flatnonzero(np.diff(values[order]) < NEAR_TIE)
    if not len(close):
        return
    ids = list(sims)
    near = [ids[j] for j in order[np.union1d(close, close + 1)].tolist()]
    for index in indexes:
        hits = [(m, row) for m in near if (row := index.row_of(m)) is not None]
        if hits:
            exact = index.exact(query, [row for _, row in hits])
            sims.update(zip([m for m, _ in hits], exact.tolist(), strict=True))


def row_tops(matrix: npt.NDArray[Any], m: int) -> list[list[int]]:
    """Column indices of each row's ``m`` largest values, largest first (one partition
    of the whole matrix instead of a sort per row)."""
    m = min(m, matrix.shape[1])
    if m <= 0:
        return [[] for _ in range(matrix.shape[0])]
    best = np.argpartition(-matrix, m - 1, axis=1)[:, :m]
    # each row's m best in order, ties in partition order (a stable sort)
    order = np.argsort(-np.take_along_axis(matrix, best, axis=1), axis=1, kind="stable")
    tops: list[list[int]] = np.take_along_axis(best, order, axis=1).tolist()
    return tops


def exact_links(
    sims: npt.NDArray[Any], best: list[int], vector: Vectors, recent: Vectors
) -> list[tuple[int, float]]:
    """The links of one new memory: columns ``best`` of its similarities ``sims`` to
    ``recent`` (``-inf`` where none may be made), with exact weights.

    The product behind ``sims`` rounds by where the vectors sit in memory, which a reload
    changes: so the weights are computed again exactly, and when others tie with the last
    one chosen (the same text stored several times) the choice among them is made on
    exact values, in write order, as a reload would make it.
    """
    best = [j for j in best if sims[j] != -np.inf]
    if not best:
        return []
    edge = float(sims[best[-1]])
    near = np.flatnonzero(sims >= edge - NEAR_TIE)
    cols = near if len(near) > len(best) else np.asarray(best)
    exact = np.asarray(recent)[cols].astype(np.float64) @ np.asarray(vector, dtype=np.float64)
    order = np.argsort(-exact, kind="stable")[: len(best)]  # ties: the earlier written
    return [(int(cols[i]), float(min(exact[i], 1.0))) for i in order.tolist() if exact[i] > 0]
