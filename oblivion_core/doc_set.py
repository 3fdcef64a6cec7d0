"""A set of documents (memories) by insertion sequence number, with a log of its changes.

Recall with ``deep=False`` ranks BM25 over the active tier's memories only
(:meth:`oblivion_core.lexical.LexicalIndex.search` with ``allow``). The engine keeps the
tier's members in a :class:`DocSet`; the lexical index keeps a copy by its own document
slots, brought up to date from :meth:`DocSet.changed_since` (a promotion or two between
recalls), and each searched term's postings inside the set while it stays as it is. A
4-term search at 100k memories, 15k of them in the set, right after a query embedding
(``python bench/lexical_within.py``, medians of 300): 0.20 ms with the set unchanged since
the search before, 0.35 ms with one memory entered, 0.36 ms over the whole namespace;
scoring every posting and filtering the hits, as before, took 0.33-0.36 ms.

Changed under the engine's lock, read by searches that may run outside it. A writer
changes :attr:`DocSet.mask`, then logs the change, then counts it in
:attr:`DocSet.version`; a reader that reads ``version`` first and the mask after it has
every change it counts in the mask it holds.
"""

from __future__ import annotations

import bisect

import numpy as np
import numpy.typing as npt

#: Changed documents the log holds at most (the last change is kept whole, however
#: many). A reader further behind reads the whole set again.
LOG_LIMIT = 4_096


class DocSet:
    """Documents by sequence number (:attr:`mask`), and which changed since when."""

    def __init__(self) -> None:
        #: ``mask[s]``: is document ``s`` in the set (past its end: no). Grown by
        #: replacement, so a reader holding it sees a whole array.
        self.mask = np.zeros(0, dtype=bool)
        #: Changes so far (each :meth:`add` or :meth:`discard` that names a document).
        self.version = 0
        self._log: list[tuple[int, npt.NDArray[np.int64]]] = []  # (version before, seqs)
        self._logged = 0  # documents in _log
        self._start = 0  # the oldest version _log reaches back to

    def add(self, seqs: npt.NDArray[np.int64]) -> None:
        """Put documents ``seqs`` into the set."""
        seqs = np.array(seqs, dtype=np.int64)  # a copy: the log keeps it
        if not len(seqs):
            return
        need = int(seqs.max()) + 1
        if need > len(self.mask):
            grown = np.zeros(max(need, 2 * len(self.mask), 64), dtype=bool)
            grown[: len(self.mask)] = self.mask
            grown[seqs] = True
            self.mask = grown
        else:
            self.mask[seqs] = True
        self._note(seqs)

    def discard(self, seqs: npt.NDArray[np.int64]) -> None:
        """Take documents ``seqs`` out of the set (ones past the mask are ignored)."""
        seqs = np.array(seqs, dtype=np.int64)
        seqs = seqs[seqs < len(self.mask)]
        if len(seqs):
            self.mask[seqs] = False
            self._note(seqs)

    def _note(self, seqs: npt.NDArray[np.int64]) -> None:
        """Log a change of ``seqs`` (after the mask took it), then count it."""
        log, logged, drop = self._log, self._logged + len(seqs), 0
        while drop < len(log) and logged > LOG_LIMIT:  # the oldest changes go
            logged -= len(log[drop][1])
            drop += 1
        if drop:  # a new list: a reader keeps the one it holds
            log = log[drop:]
            self._start = log[0][0] if log else self.version
            self._log = log
        log.append((self.version, seqs))
        self._logged = logged
        self.version += 1

    def changed_since(self, version: int) -> npt.NDArray[np.int64] | None:
        """The documents added or discarded after :attr:`version` read ``version`` (later
        changes may be included; a document may appear more than once), or ``None`` when
        the log no longer reaches back that far."""
        log, start = self._log, self._start
        if version < start:
            return None
        first = bisect.bisect_left(log, version, key=lambda entry: entry[0])
        parts = [seqs for _, seqs in log[first:]]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
