"""Exact cosine search over an in-process matrix: the active tier's index, and the
in-memory copy of a small namespace's archive (``Oblivion.EXACT_ARCHIVE_ROWS``).

A search over a float32 matrix beats an ANN round trip at these sizes (thousands to
about 32k memories at 384 dimensions, ``python bench/exact_archive.py``) and is exact.

Vectors are stored one per row and multiplied on one BLAS thread
(:mod:`oblivion_core.blas`). A product over every row reads the whole matrix from
memory (23 MB at 15k rows of 384 floats, evicted from the caches by the query's
embedding), so from :data:`TWO_STAGE_ROWS` rows on :meth:`ActiveIndex.nearest` reads
less and stays exact: each vector is also kept rotated onto the main axes of the
index's vectors, its first :func:`head_dims` coordinates in a block of their own, and
the query's product with that block plus the Cauchy-Schwarz bound of the rest
(``|q_tail| * |v_tail|``) bounds every similarity from above. Only rows whose bound
reaches the ``k``-th best similarity found are multiplied in full, and nothing else can
be among the best ``k``: at 15k memories of the latency benchmark's corpus, about 110 of
the 15,000 rows at the median (270 at p95), 0.8-1.1 ms against 1.2-1.6 ms for one product
and its top 50 right after an embedding (two runs), the same top 50 on 200 of 200
queries (``python bench/two_stage.py``; at 4k rows one product was as fast or faster).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oblivion_core.blas import matvec, one_thread
from oblivion_core.typing import Vectors

#: From this many rows on :meth:`ActiveIndex.nearest` searches in two stages (see the
#: module doc); below it one product over every row is as fast.
TWO_STAGE_ROWS = 8_192
#: Added to every bound of the two-stage search: it covers float32 rounding (of the
#: rotation, the head product and the norms; each about 1e-6) many times over.
BOUND_MARGIN = 1e-4
#: Squared norm (relative to the vector's) counted in every tail at least: see ``_rest``.
#: It adds 3e-3 to a tail of nothing, and nothing visible to the ~0.1 of a sentence
#: embedding's.
TAIL_FLOOR = 1e-5


def head_dims(dim: int) -> int:
    """Coordinates in the head block of the two-stage search: half of them. The first
    main axes hold most of a sentence embedding's energy, and the rest bounds how many
    rows are multiplied in full. Over the 15k active memories of the latency benchmark's
    100k store, right after an embedding (medians / p95): 192 of 384 axes took 1.01 /
    1.19 ms and multiplied 103 / 386 rows; 224 took 1.11 / 1.25 ms (79 / 206 rows); 160
    took 0.91 / 2.27 ms, its bound too loose for one query in ten; one product over
    every row took 1.70 / 1.83 ms."""
    return dim // 2


class ActiveIndex:
    """Unit vectors of the active memories of one namespace, searchable by dot product."""

    def __init__(self, dim: int | None = None) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self._row: dict[str, int] = {}
        # one memory per row; rows past len(self) are spare capacity
        self._rows: Vectors = np.zeros((0, dim or 0), dtype=np.float32)
        # each row's memory's write number (see add()), for recent()
        self._seqs: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._added = 0
        # the two-stage search (nearest()): made on its first use at TWO_STAGE_ROWS rows
        # or more. ``_basis``: the main axes, one per row; ``_bounds``: one vector per
        # column, its coordinates on them and, in the last row, the norm of the rest, so
        # that one product gives every bound
        self._basis: Vectors | None = None
        self._bounds: Vectors = np.zeros((0, 0), dtype=np.float32)
        self._basis_rows = 0  # rows when the basis was made (made again at twice that)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    def add(
        self,
        ids: Sequence[str],
        vectors: Vectors,
        seqs: npt.NDArray[np.int64] | None = None,
        *,
        adopt: bool = False,
    ) -> None:
        """Add (or replace) rows; ``vectors`` are unit length, shape ``(len(ids), dim)``.
        ``seqs``: the memories' write numbers, which order :meth:`recent` (default: the
        order they are added in). ``adopt``: the caller gives ``vectors`` up; an empty
        index given distinct ids keeps a writable float32 C-ordered matrix as its own
        rows instead of copying it (an archive copy of 85k rows: 130 MB not written
        twice)."""
        if not len(ids):
            return
        if self.dim is None:
            self.dim = int(vectors.shape[1])
            self._rows = np.zeros((0, self.dim), dtype=np.float32)
        fresh: list[int] = []
        replaced: list[int] = []
        for k, mid in enumerate(ids):
            row = self._row.get(mid)
            if row is None:
                fresh.append(k)
            else:
                self._rows[row] = vectors[k]
                replaced.append(row)
        if replaced:
            self._project(np.asarray(replaced, dtype=np.int64))
        if not fresh:
            return
        n = len(self.ids)
        need = n + len(fresh)
        if need > len(self._rows):
            # half again: amortised O(1) per row, and a large index (an archive copy
            # of 16k memories) carries at most half its size in spare rows
            # (a first allocation of 8, not 64: one per namespace, 12 KB not 96 at 384
            # dimensions, for thousands of small namespaces)
            self._grow(max(need, len(self._rows) * 3 // 2, 8), n)
        if (
            adopt
            and n == 0
            and len(fresh) == len(ids) == len(self._rows)
            and isinstance(vectors, np.ndarray)
            and vectors.dtype == np.float32
            and vectors.shape == self._rows.shape
            and vectors.flags.c_contiguous
            and vectors.flags.writeable
        ):
            self._rows = vectors  # the zeros allocated for them were never touched
        else:  # all new (a copy being made): no fancy-indexed copy of them first
            self._rows[n:need] = vectors if len(fresh) == len(ids) else vectors[fresh]
        if seqs is None:
            self._seqs[n:need] = np.arange(self._added, self._added + len(fresh))
        else:
            self._seqs[n:need] = np.asarray(seqs, dtype=np.int64)[fresh]
        self._added += len(fresh)
        for offset, k in enumerate(fresh):
            self._row[ids[k]] = n + offset
            self.ids.append(ids[k])
        self._project(np.arange(n, need))

    def _grow(self, cap: int, n: int) -> None:
        """Reallocate every per-row array with ``cap`` rows, its first ``n`` kept."""
        self._rows = _grown(self._rows, cap, n)
        self._seqs = _grown(self._seqs, cap, n)
        if self._basis is not None:
            self._bounds = _grown(self._bounds, cap, n, axis=1)

    def _move(self, src: int, dst: int) -> None:
        """Copy row ``src`` of every per-row array onto row ``dst``."""
        self._rows[dst] = self._rows[src]
        self._seqs[dst] = self._seqs[src]
        if self._basis is not None:
            self._bounds[:, dst] = self._bounds[:, src]

    @property
    def capacity(self) -> int:
        """Rows allocated (rows held plus spare ones): what the index costs."""
        return 0 if self.dim is None else len(self._rows)

    def remove(self, ids: Sequence[str]) -> None:
        """Remove rows (absent ids are ignored); the last row fills each hole."""
        for mid in ids:
            row = self._row.pop(mid, None)
            if row is None:
                continue
            last = len(self.ids) - 1
            if row != last:
                moved = self.ids[last]
                self._move(last, row)
                self.ids[row] = moved
                self._row[moved] = row
            self.ids.pop()

    def rows(self) -> Vectors:
        """The vectors held, one per row in the order of :attr:`ids` (a view: valid until
        the index next changes)."""
        return self._rows[: len(self.ids)]

    def vector(self, memory_id: str) -> Vectors | None:
        """The stored vector of an active memory, or ``None``."""
        row = self._row.get(memory_id)
        return None if row is None else self._rows[row].copy()

    def search(self, query: Vectors, k: int) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Top-``k`` ids by cosine similarity to a unit ``query``, best first."""
        ids, sims, _ = self.nearest(query, k)
        return ids, sims

    def scores(self, query: Vectors) -> npt.NDArray[np.float32]:
        """Cosine similarity of every memory to a unit ``query``, by row
        (:meth:`row_of`); valid until the index next changes."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        return matvec(query.reshape(-1), self._rows[: len(self.ids)].T)

    def nearest(
        self,
        query: Vectors,
        k: int,
        seqs: Callable[[list[str]], npt.NDArray[np.int64]] | None = None,
    ) -> tuple[list[str], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """The ``k`` memories most similar to a unit ``query``, as
        ``top(scores(query), k, seqs)`` finds them, and the similarities computed on the
        way: by row (:meth:`row_of`), NaN for the rows the two-stage search (module doc)
        showed could not be among them without multiplying them in full. Similarities
        are those of a product over fewer rows, so equal vectors may swap places by a
        float32 rounding, as they do between a live index and a reopened one
        (:func:`untie` settles them).
        """
        rows = self._bounded_rows(query, k)
        if rows is None:  # one product over every row
            scores = self.scores(query)
            return (*self.top(scores, k, seqs), scores)
        known = np.full(len(self.ids), np.nan, dtype=np.float32)
        values = self.products(query, rows)
        known[rows] = values
        ids, sims = self._pick(values, rows, k, seqs)
        return ids, sims, known

    def _bounded_rows(self, query: Vectors, k: int) -> npt.NDArray[np.int64] | None:
        """The rows the two-stage search multiplies in full for the best ``k``: every row
        whose bound reaches the ``k``-th best similarity found; ``None`` where one product
        over every row is as fast (a small index, a large ``k``, a loose bound)."""
        n = len(self.ids)
        if n < TWO_STAGE_ROWS or k <= 0 or 8 * k > n or head_dims(self.dim or 0) < 8:
            return None
        if self._basis is None or n >= 2 * self._basis_rows:
            self._make_basis()
        assert self._basis is not None
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        heads = len(self._basis)
        q_ext = np.empty(heads + 1, dtype=np.float32)  # the query's head, then its tail
        q_ext[:heads] = self._basis @ q
        q_ext[heads] = _rest(_energy(q[None]), _energy(q_ext[None, :heads]))[0]
        # every row's head product plus q_tail * its tail, in one product: a product, a
        # multiply and two adds over every row took 0.06 ms more at 15k-20k rows right
        # after an embedding (0.94 against 0.87 ms at 15k, the same results)
        bound = matvec(q_ext, self._bounds[:, :n])
        # the 2k best bounds hold k real similarities: the k-th best of those is a floor
        # under the k-th best of all, and no row whose bound is below it can take a place
        m = 2 * k
        first = np.argpartition(bound, n - m)[n - m :]
        found = self._rows[first] @ q
        floor = float(np.partition(found, m - k)[m - k])
        # near ties of the edge too; BOUND_MARGIN is added to every bound, here
        keep = bound >= floor - NEAR_TIE - BOUND_MARGIN
        # the rows the floor was found among: kept whatever their bounds (with a valid
        # bound they are in already; a vector far from unit length may break it)
        keep[first[found >= floor - NEAR_TIE]] = True
        rows = np.flatnonzero(keep)
        # too loose for this query: streaming every row is as fast
        return None if 8 * len(rows) > n else rows

    def _make_basis(self) -> None:
        """The main axes of the vectors held (of up to 8,192 of them, evenly spaced):
        the eigenvectors of their second-moment matrix with the largest eigenvalues."""
        n = len(self.ids)
        dim = self.dim or 0
        sample = self._rows[: n : -(-n // 8_192)].astype(np.float64)
        with one_thread():  # (on the recall path, right after the query's embedding)
            _, axes = np.linalg.eigh(sample.T @ sample)  # ascending eigenvalues
        self._basis = np.ascontiguousarray(axes[:, ::-1][:, : head_dims(dim)].T, np.float32)
        self._basis_rows = n
        cap = len(self._rows)
        self._bounds = np.zeros((head_dims(dim) + 1, cap), dtype=np.float32)
        self._project(np.arange(n))

    def _project(self, rows: npt.NDArray[np.int64]) -> None:
        """The head coordinates and tail norms of ``rows`` (after they were written), in
        blocks of slices where they run in order (a basis made at 85k rows: 0.14 s in
        all, 1.2 s when every row went through fancy indexing)."""
        if self._basis is None or not len(rows):
            return
        for start in range(0, len(rows), 4_096):
            span = _span(rows[start : start + 4_096])
            vecs = self._rows[span]
            with one_thread():
                head = vecs @ self._basis.T
            self._bounds[:-1, span] = head.T
            self._bounds[-1, span] = _rest(_energy(vecs), _energy(head))

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
        return self._pick(scores, None, k, seqs)

    def _pick(
        self,
        values: npt.NDArray[np.float32],
        rows: npt.NDArray[np.int64] | None,
        k: int,
        seqs: Callable[[list[str]], npt.NDArray[np.int64]] | None,
    ) -> tuple[list[str], npt.NDArray[np.float32]]:
        """:meth:`top` over the similarities ``values`` of ``rows`` (``None``: of every
        row, in order)."""
        if not len(values) or k <= 0:
            return [], np.zeros(0, dtype=np.float32)
        n = len(values)
        if k < n:
            best = np.argpartition(-values, k - 1)[:k]
            best = best[np.argsort(-values[best], kind="stable")]
        else:
            best = np.argsort(-values, kind="stable")
        if seqs is not None and k < n:
            edge = float(values[best[-1]])
            if np.count_nonzero(values >= edge - NEAR_TIE) > k:
                near = np.flatnonzero(values >= edge - NEAR_TIE)
                above = near[values[near] > edge + NEAR_TIE]
                tied = near[values[near] <= edge + NEAR_TIE]
                tied_rows = tied if rows is None else rows[tied]
                newest = np.argsort(-seqs([self.ids[r] for r in tied_rows.tolist()]), kind="stable")
                best = np.concatenate([above, tied[newest[: k - len(above)]]])
                best = best[np.argsort(-values[best], kind="stable")]
        picked = best if rows is None else rows[best]
        ids = self.ids
        return [ids[r] for r in picked.tolist()], values[best]

    def products(
        self, query: Vectors, rows: Sequence[int] | npt.NDArray[np.intp]
    ) -> npt.NDArray[np.float32]:
        """Cosine similarity of the memories at ``rows`` to a unit ``query``, as the
        second stage of :meth:`nearest` computes it."""
        picked = self._rows[np.asarray(rows, dtype=np.int64)]
        # one BLAS thread: OpenBLAS splits a product of a thousand rows (a sketch
        # search's candidates) over the cores ONNX's threads still spin on (2.8 ms
        # against 0.3 ms at 1,200 rows right after an embedding, 2 cores)
        return matvec(np.asarray(query, dtype=np.float32).reshape(-1), picked.T)

    def exact(self, query: Vectors, rows: Sequence[int]) -> npt.NDArray[np.float64]:
        """Cosine similarity of the memories at ``rows`` to a unit ``query``: the same
        value for the same pair of vectors wherever the memory's row is.

        A product over many rows (:meth:`scores`, :meth:`nearest`) rounds a row's sum
        differently depending on its place in the block multiplied (BLAS kernels treat
        blocks of rows and the tail differently), by about one float32 ulp. Places change
        as memories come and go, and a reopened store rebuilds the index in insertion
        order, so equal vectors (the same text stored twice) would not tie, and which
        comes first could change with a reopen. Here each row is summed in float64, one
        dimension after the other: for the few candidates that need it, not for every
        one.
        """
        picked = self._rows[np.asarray(rows, dtype=np.int64)].astype(np.float64)
        q = np.asarray(query, dtype=np.float64).reshape(1, -1)
        out: npt.NDArray[np.float64] = np.multiply(picked, q).sum(axis=1)
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
            block = matvec(queries[start : start + 64], self._rows[:n].T)
            for sims in block:
                out.append(self._pick(sims, None, k, None))
        return out

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
            return [], self._rows[:0]
        seqs = self._seqs[:size]
        # the ``take`` highest, then in order
        rows = np.argpartition(seqs, size - take)[size - take :] if take < size else np.arange(size)
        rows = rows[np.argsort(seqs[rows], kind="stable")][: max(take - skip, 0)]
        start, stop = size - take, size - take + len(rows)
        if np.array_equal(rows, np.arange(start, stop)):  # in place (none left or came back)
            return self.ids[start:stop], self._rows[start:stop]  # a view
        picked = rows.tolist()
        return [self.ids[r] for r in picked], self._rows[rows]


def _energy(vecs: Vectors) -> npt.NDArray[np.float64]:
    """Each row's squared norm, summed in float64."""
    out: npt.NDArray[np.float64] = np.einsum("ij,ij->i", vecs, vecs, dtype=np.float64)
    return out


def _rest(total: npt.NDArray[np.float64], head: npt.NDArray[np.float64]) -> npt.NDArray[Any]:
    """The norm of what lies outside the head block, from the squared norms of the whole
    and of the head, never below ``sqrt(TAIL_FLOOR * total)``: the head's coordinates
    are float32 products, so a vector (or query) almost inside the head's axes could
    otherwise show no tail where rounding left one of a few 1e-4, more than
    :data:`BOUND_MARGIN` covers."""
    return np.sqrt(np.maximum(total - head, 0.0) + TAIL_FLOOR * total).astype(np.float32)


def _span(rows: npt.NDArray[np.int64]) -> slice | npt.NDArray[np.int64]:
    """``rows`` (not empty) as a slice where they run in order, else as they are: a
    slice reads and writes in place, fancy indexing copies (making the head block of
    85k rows: 0.14 s against 1.2 s). Only a run in order is one (not any rows
    first..last: an edit of rows [2, 0, 4] would skip row 0, found by a review)."""
    if len(rows) == 1 or bool(np.all(np.diff(rows) == 1)):
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def _grown(arr: npt.NDArray[Any], cap: int, n: int, axis: int = 0) -> npt.NDArray[Any]:
    """A copy of ``arr`` with ``cap`` places along ``axis`` (its first ``n`` kept, the
    rest zero), in C order."""
    shape = list(arr.shape)
    shape[axis] = cap
    out = np.zeros(shape, dtype=arr.dtype)
    keep = tuple(slice(0, n) if i == axis else slice(None) for i in range(arr.ndim))
    out[keep] = arr[keep]
    return out


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
