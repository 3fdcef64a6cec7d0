"""A set of memories by insertion sequence number, with a log of the ones that entered it.

Recall with ``deep=False`` ranks BM25 over the active tier's memories only
(:mod:`oblivion_core.lexical`). The engine keeps the tier's members here; the lexical index
keeps, per searched term, the postings that fall inside the set, and brings them up to
date from :meth:`SeqSet.entered_since` (the few memories promoted since its last search)
instead of filtering the term's postings over the whole namespace again: at 100k memories
(15k active) a search of 4 terms went from 0.27 to 0.12 ms (``bench/latency.py``, the
active tier's recall).

Written under the engine's lock; read by searches that may run outside it. A writer sets
:attr:`SeqSet.mask`, then logs the entries, then counts them in :attr:`SeqSet.entered`;
a reader that reads ``entered`` first and the mask after it sees every entry it counts.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Entries :meth:`SeqSet.entered_since` can reach back over (at least; the last add is
#: kept whole); a reader further behind filters again from scratch, as it does for more
#: than ``lexical._ENTERED_LOOKUPS`` entries anyway.
LOG_LIMIT = 2_048


class SeqSet:
    """Sequence numbers in the set (:attr:`mask`), and which entered it since when."""

    def __init__(self) -> None:
        #: ``mask[s]``: is ``s`` in the set (past its end: no). Grown by replacement, so a
        #: reader holding it sees a whole array.
        self.mask = np.zeros(0, dtype=bool)
        #: Entries so far (an entry of a sequence number already in the set counts too):
        #: the version a reader compares.
        self.entered = 0
        self._log: list[tuple[int, npt.NDArray[np.int64]]] = []  # (entered before, seqs)
        self._logged = 0  # entries held in _log
        self._start = 0  # the oldest version _log reaches back to

    def add(self, seqs: npt.NDArray[np.int64]) -> None:
        """Put ``seqs`` into the set."""
        if not len(seqs):
            return
        seqs = np.asarray(seqs, dtype=np.int64).copy()
        need = int(seqs.max()) + 1
        if need > len(self.mask):
            grown = np.zeros(max(need, 2 * len(self.mask), 64), dtype=bool)
            grown[: len(self.mask)] = self.mask
            grown[seqs] = True
            self.mask = grown
        else:
            self.mask[seqs] = True
        log, logged, drop = self._log, self._logged + len(seqs), 0
        while drop < len(log) and logged > LOG_LIMIT:  # the oldest entries go
            logged -= len(log[drop][1])
            drop += 1
        if drop:  # a new list: a reader keeps the one it holds
            log = log[drop:]
            self._start = log[0][0] if log else self.entered
            self._log = log
        log.append((self.entered, seqs))
        self._logged = logged
        self.entered += len(seqs)

    def discard(self, seqs: npt.NDArray[np.int64]) -> None:
        """Take ``seqs`` out of the set (ones not in it are ignored)."""
        seqs = np.asarray(seqs, dtype=np.int64)
        seqs = seqs[seqs < len(self.mask)]
        self.mask[seqs] = False

    def entered_since(self, version: int) -> npt.NDArray[np.int64] | None:
        """Sequence numbers that entered after :attr:`entered` read ``version`` (they may
        have left since; later entries may be included), or ``None`` when the log no
        longer reaches back that far."""
        log, start = self._log, self._start
        if version < start:
            return None
        parts = [
            seqs[max(version - before, 0) :] for before, seqs in log if before + len(seqs) > version
        ]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
