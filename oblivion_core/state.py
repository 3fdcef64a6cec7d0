"""Activation state: columnar numpy arrays for the hot path, persisted in SQLite.

One :class:`NamespaceState` per namespace holds every memory's activation inputs as
parallel arrays (row *i* of each array is one memory), so decay and tiering are a few
vectorised numpy operations even at a million memories. :class:`StateDB` persists the
rows and an append-only event journal in SQLite (WAL). Callers hold the engine lock;
nothing here is thread-safe on its own.

Durability: every operation commits before it returns (``synchronous=NORMAL`` in WAL
mode): a crashed process loses nothing; a power cut may lose the last few commits of
activation updates, never a ``remember()`` (those commit with ``synchronous=FULL``).
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import hashlib
import itertools
import json
import math
import operator
import os
import re
import sqlite3
import sys
import threading
import time
import uuid
import weakref
from collections import OrderedDict
from collections.abc import (
    Callable,
    Container,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from oblivion_core.budget import MAX_TOKENS
from oblivion_core.decay_clock import DecayClock
from oblivion_core.errors import (
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StorePathError,
)
from oblivion_core.records import Tier
from oblivion_core.typing import Vectors

#: 2: vectors kept beside the texts; the FTS5 tables of version 1 dropped (see lexical.py).
#: 3: each memory keeps its category's decay clock reading ``d_ref`` instead of the time
#: ``t_ref`` of its last event (see decay_clock.py); the journal is indexed by ``mkey``.
#: 4: each memory keeps the relevance of its last recall (what ``mark_used`` boosts by).
#: 5: each memory keeps its text's token count.
#: 6: the journal is indexed by namespace too (``nkey``).
SCHEMA_VERSION = 6

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS namespaces (
    namespace TEXT PRIMARY KEY, created_at REAL NOT NULL, policy TEXT
);
CREATE TABLE IF NOT EXISTS memories (
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    text TEXT NOT NULL,
    category TEXT NOT NULL,
    importance REAL NOT NULL,
    confidence REAL NOT NULL,
    created_at REAL NOT NULL,
    last_accessed REAL NOT NULL,
    access_count INTEGER NOT NULL,
    a_ref REAL NOT NULL,
    d_ref REAL NOT NULL,  -- decay clock reading at the last event (decay_clock.py)
    stability REAL NOT NULL,
    tier INTEGER NOT NULL,
    invalidated INTEGER NOT NULL DEFAULT 0,
    superseded_by TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    seq INTEGER NOT NULL,
    relevance REAL NOT NULL DEFAULT 1.0,  -- of its last recall (1.0: never recalled)
    tokens INTEGER,  -- its text's tokens by the meta row token_counter's counter (NULL: not kept)
    PRIMARY KEY (namespace, id)
);
CREATE TABLE IF NOT EXISTS vectors (  -- apart, so activation updates touch small pages
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (namespace, id)
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at REAL NOT NULL,
    wall REAL NOT NULL,
    namespace TEXT NOT NULL,
    memory_id TEXT,
    kind TEXT NOT NULL,
    before REAL,
    after REAL,
    detail TEXT,
    -- memory_key of namespace and memory_id: what history of a memory looks up
    mkey INTEGER,
    -- namespace_key of namespace: what history of a namespace and pruning look up
    nkey INTEGER
);
CREATE TABLE IF NOT EXISTS links (
    namespace TEXT NOT NULL,
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    weight REAL NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY (namespace, a, b)
);
CREATE TABLE IF NOT EXISTS review (
    namespace TEXT NOT NULL,
    id TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (namespace, id)
);
CREATE TABLE IF NOT EXISTS summaries (
    namespace TEXT NOT NULL,
    summary_id TEXT NOT NULL,
    original_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (namespace, summary_id, original_id)
);
"""

#: Created after :meth:`StateDB._migrate` (an older store gets the column first).
#: The journal is looked up by one 64-bit key per memory instead of by (namespace, id)
#: text: the text index made every journal entry cost 25-28 us of writer time once the
#: journal held 100k entries (and more as it grows), the integer one 9 us; no index at all
#: 3 us, but then a memory's history scans the whole journal.
#: A namespace's entries (its history, :meth:`StateDB.prune_events`) are found by one
#: 64-bit key per namespace the same way: without it, a namespace holding a few entries
#: read every other namespace's: ``history(namespace=...)`` took 76 ms and a
#: ``maintain()`` pruning by ``Policy.journal_keep`` 259 ms beside 1M entries of another
#: namespace's (1.3 and 0.4 ms with it). It costs 2-3 us of writer time per entry (14.0
#: against 16.0 us in one namespace, 11.5 against 14.2 us across 200, at 200k entries).
#: The next memory's number is read off ``memories_by_seq`` when a store opens: without
#: it, ``MAX(seq)`` read every memory (40 ms at 100k memories, 0.4 s at 1M).
#: Links are found by either end: ``links_by_b`` serves the second (the primary key the
#: first). Without it, each deleted memory's links were found by reading all of its
#: namespace's: clear() of 4,000 memories took 2.4 s, 1.8 s of it here (quadratic).
_INDEXES = """
CREATE INDEX IF NOT EXISTS events_by_key ON events (mkey);
CREATE INDEX IF NOT EXISTS events_by_namespace ON events (nkey);
CREATE INDEX IF NOT EXISTS links_by_b ON links (namespace, b);
CREATE INDEX IF NOT EXISTS memories_by_seq ON memories (seq);
"""

#: A random number per namespace, drawn again by SQLite itself whenever a memory of the
#: namespace is written, deleted, or has its text, seq or namespace changed (through
#: Oblivion or by hand): the BM25 index saved beside the database
#: (:mod:`oblivion_core.lexical_snapshot`) is read back only if the number it was saved
#: with is still the namespace's. A number, not a count: a database restored from a
#: backup and written to again cannot come back to a number it once had.
_LEXICAL_GENERATION = """
CREATE TABLE IF NOT EXISTS lexical_gen (namespace TEXT PRIMARY KEY, gen INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS lexical_gen_insert AFTER INSERT ON memories BEGIN
    INSERT INTO lexical_gen (namespace, gen) VALUES (NEW.namespace, random())
    ON CONFLICT (namespace) DO UPDATE SET gen = excluded.gen;
END;
CREATE TRIGGER IF NOT EXISTS lexical_gen_update AFTER UPDATE OF namespace, seq, text ON memories
BEGIN
    INSERT INTO lexical_gen (namespace, gen) VALUES (OLD.namespace, random())
    ON CONFLICT (namespace) DO UPDATE SET gen = excluded.gen;
    INSERT INTO lexical_gen (namespace, gen) VALUES (NEW.namespace, random())
    ON CONFLICT (namespace) DO UPDATE SET gen = excluded.gen;
END;
CREATE TRIGGER IF NOT EXISTS lexical_gen_delete AFTER DELETE ON memories BEGIN
    INSERT INTO lexical_gen (namespace, gen) VALUES (OLD.namespace, random())
    ON CONFLICT (namespace) DO UPDATE SET gen = excluded.gen;
END;
"""
#: A namespace's number in ``lexical_gen``.
_GENERATION = "SELECT gen FROM lexical_gen WHERE namespace=?"


def _key64(text: str) -> int:
    """A signed 64-bit hash of ``text``, the same in every process (an index key)."""
    digest = hashlib.blake2b(text.encode(), digest_size=8, usedforsecurity=False).digest()
    return int.from_bytes(digest, "big", signed=True)


def memory_key(namespace: str, memory_id: str) -> int:
    """A signed 64-bit hash of ``(namespace, memory_id)`` (collisions are filtered by the
    exact columns beside it)."""
    return _key64(f"{namespace}\x00{memory_id}")


@functools.lru_cache(maxsize=4_096)
def namespace_key(namespace: str) -> int:
    """A signed 64-bit hash of a namespace (collisions are filtered by the exact column
    beside it); cached, as every journal entry needs its namespace's."""
    return _key64(namespace)


#: One journal entry: ``(memory_id, kind, before, after, detail)``.
JournalRow = tuple[str | None, str, float | None, float | None, Mapping[str, Any]]

#: The tier codes a row may hold.
_TIERS = frozenset(int(t) for t in Tier)

#: Tables of at least this many rows (by their largest rowid) may be read by a scan
#: (:meth:`StateDB._scan`); below it either way takes milliseconds.
_SCAN_ROWS = 4_096

_FLOAT_COLS = (
    "importance",
    "confidence",
    "created_at",
    "last_accessed",
    "a_ref",
    "d_ref",
    "stability",
    "relevance",  # of the memory's last recall; 1.0 before its first
)

F64 = npt.NDArray[np.float64]


#: The journal's high-volume kinds: one entry per recalled memory and per memory a boost
#: spread to (what prune_journal and Policy.journal_keep drop).
BOOST_KINDS = ("recall", "spread")

#: Every :attr:`Event.kind` the engine records, and what it marks.
EVENT_KINDS: Mapping[str, str] = MappingProxyType(
    {
        "remember": "a memory was written",
        "recall": "a recall returned it (or reinforce() boosted it)",
        "spread": "a recalled memory's boost spread to it along a link",
        "used": "mark_used(): the answer used it",
        "confirm": "confirm()",
        "link": "link() to another memory",
        "edit": "edit() of its text, metadata, category or importance",
        "supersede": "a newer memory superseded it",
        "unsupersede": "its successor was forgotten, invalidated or edited: it counts again",
        "invalidate": "invalidate()",
        "review": "lowered and flagged for review: a memory linked to it was invalidated",
        "forget": "deleted: forget(), clear(), maintain() with forgetting on, or a summary "
        "decompressed or whose original was forgotten, edited, superseded or invalidated",
        "archive": "moved to the archive tier",
        "restore": "moved back to the active tier",
        "compress": "summarised: it turned cold behind a summary memory",
        "decompress": "back from cold to the archive: its summary went or was decompressed",
        "adapt": "maintain() changed learned decay rates or gains (no memory)",
        "policy": "the namespace's policy changed (no memory), or a lower cap brought "
        "the memory's activation down to it",
    }
)


@dataclass(frozen=True)
class Event:
    """One recorded activation change (or other state change) of a memory (``kind``:
    one of :data:`EVENT_KINDS`)."""

    seq: int
    at: float
    wall: float
    namespace: str
    memory_id: str | None
    kind: str
    before: float | None
    after: float | None
    detail: Mapping[str, Any]

    def __hash__(self) -> int:
        """By its place in the journal (its detail is a dict)."""
        return hash((self.namespace, self.seq))


class NamespaceState:
    """Parallel arrays over the memories of one namespace.

    ``ids[i]`` is the memory at row *i*; every array's first ``n`` entries are live.
    Categories are stored as indices into ``vocab`` so per-category maths is one
    vectorised lookup. Deletion swaps the last row into the hole, so rows are not
    stable across deletes: always look a memory up through :meth:`row`.
    """

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        self.vocab: list[str] = []
        self._vocab_index: dict[str, int] = {}
        self.superseded_by: dict[str, str] = {}
        self.by_seq: dict[int, str] = {}
        #: every memory's ``seq``, ascending: its neighbours in this namespace (sequence
        #: numbers are shared by all namespaces, so the next number may be another's).
        #: A deleted memory's number stays until a third of them are dead (deleting from
        #: the list one by one cost O(n) each: 3 s for 20k of 1M memories)
        self.seqs: list[int] = []
        self._dead = 0
        #: the categories' decay clocks (``cols["d_ref"]`` holds their readings)
        self.clock = DecayClock()
        self._cap = 0
        self.n = 0
        self.cols: dict[str, Any] = {}
        self._grow(64)

    def _grow(self, need: int) -> None:
        cap = max(need, self._cap * 2, 64)
        new: dict[str, Any] = {name: np.zeros(cap, dtype=np.float64) for name in _FLOAT_COLS}
        new["access_count"] = np.zeros(cap, dtype=np.int64)
        new["tier"] = np.zeros(cap, dtype=np.int8)
        new["invalidated"] = np.zeros(cap, dtype=bool)
        new["superseded"] = np.zeros(cap, dtype=bool)  # mirrors ``superseded_by``
        new["cat"] = np.zeros(cap, dtype=np.int32)
        new["seq"] = np.zeros(cap, dtype=np.int64)  # insertion order: newer is larger
        new["tokens"] = np.zeros(cap, dtype=np.int64)  # token count + 1 (0: not counted yet)
        for name, arr in self.cols.items():
            new[name][: self.n] = arr[: self.n]
        self.cols = new
        self._cap = cap

    def col(self, name: str) -> Any:
        """The live part of column ``name`` (a view; writes go through)."""
        return self.cols[name][: self.n]

    def row(self, memory_id: str) -> int | None:
        """Row of ``memory_id`` or ``None``."""
        return self.index.get(memory_id)

    def seqs_of(self, ids: Sequence[str]) -> npt.NDArray[np.int64]:
        """Write numbers of memories ``ids`` (each must be held)."""
        out: npt.NDArray[np.int64] = self.cols["seq"][
            np.fromiter((self.index[m] for m in ids), np.int64, len(ids))
        ]
        return out

    def cat_id(self, category: str) -> int:
        """Index of ``category`` in ``vocab`` (added on first sight)."""
        k = self._vocab_index.get(category)
        if k is None:
            k = len(self.vocab)
            self.vocab.append(category)
            self._vocab_index[category] = k
        return k

    def drop_categories(self, keep: int) -> None:
        """Forget the categories added after the first ``keep`` (no row may use them:
        a write that added them failed and its rows were removed)."""
        for name in self.vocab[keep:]:
            del self._vocab_index[name]
        del self.vocab[keep:]

    def rows_of_categories(self, names: Iterable[str]) -> npt.NDArray[np.intp]:
        """Rows of the memories whose category is one of ``names``, in row order."""
        codes = [self._vocab_index[c] for c in names if c in self._vocab_index]
        if not codes:
            return np.zeros(0, dtype=np.intp)
        cat = self.cols["cat"][: self.n]
        mask = cat == codes[0]  # a comparison per code: np.isin took 4x as long at 100k
        for code in codes[1:]:
            mask |= cat == code
        return np.flatnonzero(mask)

    def category(self, i: int) -> str:
        """Category name of row ``i``."""
        return self.vocab[int(self.cols["cat"][i])]

    def append(self, memory_id: str, category: str, values: Mapping[str, Any], seq: int) -> int:
        """Add one row; returns its index."""
        if self.n + 1 > self._cap:
            self._grow(self.n + 1)
        i = self.n
        for arr in self.cols.values():  # the slot may hold a deleted row's values
            arr[i] = 0
        self.cols["relevance"][i] = 1.0  # never recalled
        for name, value in values.items():
            self.cols[name][i] = value
        self.cols["cat"][i] = self.cat_id(category)
        self.cols["seq"][i] = seq
        self.ids.append(memory_id)
        self.index[memory_id] = i
        self.by_seq[seq] = memory_id
        if not self.seqs or seq > self.seqs[-1]:  # always, but for a hand-made state
            self.seqs.append(seq)
        else:
            k = bisect.bisect_left(self.seqs, seq)
            if k < len(self.seqs) and self.seqs[k] == seq:  # a failed write's number
                self._dead -= 1
            else:
                self.seqs.insert(k, seq)
        self.n += 1
        return i

    def fill(
        self,
        ids: list[str],
        categories: Sequence[str],
        columns: Mapping[str, npt.NDArray[Any]],
        seqs: list[int],
    ) -> None:
        """Rows of an empty state at once, as :meth:`append` would add them one by one
        (``seqs`` strictly ascending; ``columns``: a value per row for any of
        :attr:`cols`, the others start at 0 and ``relevance`` at 1.0)."""
        if self.n:
            raise ValueError("fill() needs an empty state")
        n = len(ids)
        self._grow(n)
        self.cols["relevance"][:n] = 1.0  # never recalled
        for name, values in columns.items():
            self.cols[name][:n] = values
        for category in dict.fromkeys(categories):  # numbered in order of first use
            self.cat_id(category)
        self.cols["cat"][:n] = list(map(self._vocab_index.__getitem__, categories))
        self.cols["seq"][:n] = seqs
        self.ids = list(ids)
        self.index = dict(zip(ids, range(n), strict=True))
        self.by_seq = dict(zip(seqs, ids, strict=True))
        self.seqs = list(seqs)
        self.n = n

    def adjacent(self, seq: int, skip: Container[str] = ()) -> tuple[str | None, str | None]:
        """The memories of this namespace written just after and just before the one
        numbered ``seq`` (``None`` where there is none), passing over those in ``skip``."""
        seqs, by_seq = self.seqs, self.by_seq
        # by index, not itertools.islice: islice steps over the first k numbers one by
        # one, a 1.4 ms walk per call in a 100k namespace
        k, end = bisect.bisect_right(seqs, seq), len(seqs)
        nxt = None
        while k < end:  # past dead numbers (see seqs)
            m = by_seq.get(seqs[k])
            k += 1
            if m is not None and m not in skip:
                nxt = m
                break
        prev = None
        k = bisect.bisect_left(seqs, seq)
        while k > 0:
            k -= 1
            m = by_seq.get(seqs[k])
            if m is not None and m not in skip:
                prev = m
                break
        return nxt, prev

    def remove(self, memory_id: str) -> None:
        """Delete a row by swapping the last row into its place."""
        i = self.index.pop(memory_id)
        self.by_seq.pop(int(self.cols["seq"][i]), None)
        self._dead += 1
        if self._dead * 3 > len(self.seqs):
            self.seqs = [q for q in self.seqs if q in self.by_seq]
            self._dead = 0
        last = self.n - 1
        if i != last:
            for arr in self.cols.values():
                arr[i] = arr[last]
            moved = self.ids[last]
            self.ids[i] = moved
            self.index[moved] = i
        self.ids.pop()
        self.superseded_by.pop(memory_id, None)
        self.n -= 1


#: SQLite primary result codes by what the user has to change (``sqlite3.SQLITE_*`` and
#: ``sqlite3.Error.sqlite_errorcode`` exist only from Python 3.11; before, the message is
#: matched).
_CAUSE_BY_CODE = {
    5: "locked",  # SQLITE_BUSY
    6: "locked",  # SQLITE_LOCKED
    3: "path",  # SQLITE_PERM
    8: "path",  # SQLITE_READONLY
    14: "path",  # SQLITE_CANTOPEN
    11: "corrupt",  # SQLITE_CORRUPT
    26: "corrupt",  # SQLITE_NOTADB
    13: "full",  # SQLITE_FULL
    10: "io",  # SQLITE_IOERR
}
_CAUSE_BY_MESSAGE = (
    ("locked", "locked"),
    ("readonly", "path"),
    ("permission denied", "path"),
    ("unable to open", "path"),
    ("malformed", "corrupt"),
    ("not a database", "corrupt"),
    ("disk is full", "full"),
    ("disk i/o error", "io"),
)


def sqlite_cause(exc: sqlite3.Error) -> str | None:
    """What went wrong in SQLite terms a user can act on, or ``None`` (anything else)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return _CAUSE_BY_CODE.get(code & 0xFF)
    text = str(exc).lower()
    return next((cause for needle, cause in _CAUSE_BY_MESSAGE if needle in text), None)


#: The way to a new activation database that keeps the memories, which errors about a
#: damaged one give (the vector store alone holds no activation: a new database beside
#: it is refused, as its memories would be orphans).
START_OVER = (
    "to start over instead, move it (with the -wal and -shm files beside it) and the "
    "chroma/ folder beside it aside, and open the store again: the old chroma/ folder "
    "keeps every memory's vector and text, and `oblivion import PATH OLD_CHROMA "
    "COLLECTION` brings each namespace's collection into the new store (as new memories, "
    "in the namespace it held, with their texts, vectors and categories only: metadata, "
    "importance and invalidations were the database's)"
)


#: Lock descriptors this process holds (:func:`take_store_lock`). An ``flock`` lasts while
#: any copy of its descriptor is open, so a child forked while a store was open (a
#: multiprocessing pool, a pre-forking server) kept it locked after ``close()``, until the
#: child exited; the child's copies are let go of at the fork.
_HELD_LOCKS: set[int] = set()


def _let_go_of_locks_in_child() -> None:
    """After a fork, in the child: drop its copies of the parent's lock descriptors. The
    numbers stay taken (by ``/dev/null``), so the inherited object closing its own later
    closes nothing else."""
    for fd in list(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, fd)
            os.close(null)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_let_go_of_locks_in_child)


def release_store_lock(fd: int) -> None:
    """Let go of a lock :func:`take_store_lock` returned (close its descriptor). A plain
    ``os.close`` left the number among the held ones, so a forked child would then
    replace whatever file reused it with ``/dev/null``."""
    _HELD_LOCKS.discard(fd)
    os.close(fd)


def take_store_lock(directory: Path, name: str) -> int | None:
    """Take the exclusive lock an open store holds on ``directory / name`` (``flock``;
    :func:`release_store_lock` lets go of it). ``None`` where there is no ``fcntl``
    (Windows: SQLite's own locking is all there is).

    Raises:
        StorePathError: the lock file cannot be created.
        StoreLockedError: the store is open in another instance (this or another process).
    """
    try:
        import fcntl
    except ImportError:
        return None
    try:
        fd = os.open(directory / name, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StorePathError(
            f"cannot create the lock file {str(directory / name)!r}: {exc.strerror}; "
            "make the store directory writable or open a store at a different path"
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _lock_holder(fd)
        os.close(fd)
        if holder is not None and holder[0] == os.getpid():
            who = "another Oblivion instance of this process"
        elif holder is not None:
            who = f"process {holder[0]} ({holder[1]})"
        else:
            who = "another Oblivion instance (this or another process)"
        brief = (
            ": an `oblivion` command reading the store lets go within seconds, open it again then"
            if holder is not None and holder[1].startswith("oblivion ")
            else ". Share one Oblivion object between threads, or give each process its own path"
        )
        problem = f"the store at {str(directory)!r} is already open in {who}"
        raise StoreLockedError(f"{problem}{brief}", problem=problem) from exc
    with contextlib.suppress(OSError):  # who holds it, for the refusal of another opener
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {LOCK_HOLDER or _program()}\n".encode(), 0)
    _HELD_LOCKS.add(fd)
    return fd


#: What the lock file names as its holder (``None``: the program's name); the
#: ``oblivion`` command line sets its command.
LOCK_HOLDER: str | None = None


def _program() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "".join(c for c in name if c.isprintable())[:60] or "python"


def _lock_holder(fd: int) -> tuple[int, str] | None:
    """``(pid, program)`` the holder of a store's lock wrote into it (``None``: unknown,
    e.g. a lock file of an earlier version)."""
    try:
        pid, _, name = os.pread(fd, 200, 0).decode("utf-8", "replace").strip().partition(" ")
        return (int(pid), name or "python") if pid.isdigit() else None
    except (OSError, ValueError):
        return None


class StateDB:
    """SQLite persistence for :class:`NamespaceState` rows, metadata and the journal."""

    FILE = "oblivion.sqlite3"
    LOCK = "oblivion.lock"
    #: Deferred writes (:meth:`defer`) reach SQLite at most this many seconds late...
    DEFER_SECONDS = 1.0
    #: ...or once this many journal entries wait, whichever comes first.
    DEFER_EVENTS = 512
    #: Seconds a write waits for another connection's write lock before
    #: :class:`~oblivion_core.errors.StoreLockedError` is raised.
    BUSY_TIMEOUT = 5.0

    def __init__(self, directory: str | Path | None) -> None:
        self.path = Path(directory) / self.FILE if directory is not None else None
        self._lock_fd: int | None = None
        self._closed = False
        self._deferred_rows: dict[int, tuple[NamespaceState, set[str]]] = {}
        self._deferred_events: list[tuple[float, float, str, list[JournalRow]]] = []
        # meta key -> (namespace, its value now): read when the batch is taken (see defer)
        self._deferred_meta: dict[str, tuple[str, Callable[[], Any]]] = {}
        #: Meta rows (key -> JSON) every write carries when it has any, taken as it starts
        #: (the engine's turn counts: a change computed at a time is never on disk
        #: without that time).
        self.carry_meta: Callable[[], dict[str, str]] | None = None
        self._deferred_count = 0
        self._deferred_since: float | None = None
        self._failed: list[_Batch] = []
        self._writer: ThreadPoolExecutor | None = None
        self._writer_conn: sqlite3.Connection | None = None
        # reads made outside the engine's lock (see seq_texts), on a connection of their own
        self._reader_conn: sqlite3.Connection | None = None
        self._reader_lock = threading.Lock()
        self._inflight: Future[None] | None = None
        self._inflight_batch: _Batch = ([], [], {})
        # (namespace, id) -> (text, metadata JSON): what recall shows, without a query
        # per recall for the memories that keep coming back (see :meth:`contents`)
        self._contents: OrderedDict[tuple[str, str], tuple[str, str]] = OrderedDict()
        # the active tier's entries, kept outside the LRU while their memories stay
        # active (see :meth:`hold`); ``None``: not read yet, or changed since. By
        # namespace: a namespace's load and unload read only its own (a scan of every
        # loaded namespace's made a server cycling through K users O(K²))
        self._held: dict[str, dict[str, tuple[str, str] | None]] = {}
        #: whether the ``tokens`` column is read and written (:meth:`use_token_counter`)
        self.keep_tokens = False
        self._vector_bytes: int | None = None  # of a stored vector, once known (0: not yet)
        if directory is not None:
            self._take_lock(Path(directory))
        #: Whether the database file was there, and whether there was none or an empty
        #: one, once the lock is taken: looked at before, another process could create,
        #: write and close the store in between, and its database was taken for a new
        #: one (deleted, when the vector store held its records).
        self.existed = self.path is not None and self.path.exists()
        self.new = self.path is not None and (not self.existed or self.path.stat().st_size == 0)
        try:
            self.conn = sqlite3.connect(
                str(self.path) if self.path else ":memory:",
                check_same_thread=False,
                isolation_level=None,  # explicit BEGIN/COMMIT
                timeout=self.BUSY_TIMEOUT,
            )
            tables = {
                r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if tables and "meta" not in tables:
                raise sqlite3.DatabaseError(
                    f"it holds tables {sorted(tables)[:5]} but no Oblivion metadata"
                )
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            # a deleted or replaced text is overwritten, not left in a free page for anyone
            # reading the file (the default of some builds of SQLite, not of all)
            self.conn.execute("PRAGMA secure_delete=ON")
            self.conn.executescript(_SCHEMA)
            version = self.meta("schema_version")
            if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
                raise self._damaged(
                    f"its schema_version is {version!r}, not a number",
                    f"restore it from a backup; {START_OVER}",
                )
            if version is not None and version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path} was written by a newer Oblivion (schema {version}); upgrade "
                    "oblivion-memory to open it"
                )
            if version != SCHEMA_VERSION:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    self._migrate()
                    self.set_meta("schema_version", SCHEMA_VERSION)
                except BaseException:
                    self._rollback()
                    raise
                self.conn.execute("COMMIT")
            self.conn.executescript(_INDEXES)
            self.conn.executescript(_LEXICAL_GENERATION)
        except sqlite3.Error as exc:
            self._abandon()
            if sqlite_cause(exc) not in (None, "corrupt"):
                raise self._error(exc) from exc
            raise StoreCorruptError(
                f"{self.path} is not a valid Oblivion activation database ({exc}). It was not "
                "modified, and Oblivion does not repair it: restore it from a backup (the "
                f"sqlite3 tool's .recover salvages what is readable); {START_OVER}"
            ) from exc
        except Exception:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """Close the connection (if made) and release the lock after a failed open."""
        conn: sqlite3.Connection | None = getattr(self, "conn", None)
        try:
            if conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    conn.close()
        finally:
            self._release_lock()

    def _error(self, exc: sqlite3.Error) -> StoreError:
        """The Oblivion error for SQLite failure ``exc``: it says what to change. (The
        caller raises it ``from exc``.)"""
        where = str(self.path) if self.path is not None else "the in-memory database"
        cause = sqlite_cause(exc)
        if cause == "locked":
            return StoreLockedError(
                f"another process is writing to {where}; close it or open a different path "
                f"(SQLite waited {self.BUSY_TIMEOUT:g} s for its write lock: {exc})"
            )
        if cause == "path":
            return StorePathError(
                f"cannot write to {where} ({exc}): the file, its folder or its disk is "
                "read-only or not accessible to this user; make them writable (the -wal and "
                "-shm files beside the database too) or open a store at a different path"
            )
        if cause == "corrupt":
            return StoreCorruptError(
                f"{where} is damaged ({exc}). Oblivion does not repair it: restore it from a "
                "backup (the sqlite3 command line tool's .recover command salvages what is "
                f"still readable from it); {START_OVER}"
            )
        if cause == "full":
            return StoreError(
                f"the disk holding {where} is full ({exc}); free space on it (or move the "
                "store to another disk) and retry. The failed write was rolled back; what "
                "was written before it is intact"
            )
        if cause == "io":
            return StoreError(
                f"SQLite could not read or write {where} ({exc}): the disk is full or "
                "failing; free space on it, check the disk, or move the store elsewhere"
            )
        return StoreError(f"SQLite failed on {where}: {exc}")

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """SQLite errors raised inside become the Oblivion error that says what to change."""
        try:
            yield
        except sqlite3.Error as exc:
            raise self._error(exc) from exc

    def _read(
        self, sql: str, params: Sequence[Any] = (), conn: sqlite3.Connection | None = None
    ) -> list[Any]:
        """The rows of one query on ``conn`` (default :attr:`conn`), errors translated as
        by :meth:`_translated`."""
        with self._translated():
            return (conn or self.conn).execute(sql, params).fetchall()

    def _scan(
        self,
        table: str,
        namespace: str,
        rows: int | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> bool:
        """Whether to read ``namespace``'s rows of ``table`` by scanning the whole table
        (``NOT INDEXED``) rather than through its primary key: when the namespace holds
        about half of the table or more (``rows``: its count, if known). In table order
        the pages are read one after the other: 0.19 s for the 100k memories of a
        one-namespace store, against 0.36 s through the index and a sort; 0.13 s for
        their vectors against 0.30 s. ``conn``: the connection to ask on (default
        :attr:`conn`)."""
        # rowids only grow (a deleted or replaced row's is not reused): the largest
        # bounds the table's size from above
        top = self._read(f"SELECT max(rowid) FROM {table}", (), conn)[0][0]
        if not isinstance(top, int) or top < _SCAN_ROWS:
            return False
        if rows is None:
            sql = f"SELECT count(*) FROM {table} WHERE namespace=?"
            rows = int(self._read(sql, (namespace,), conn)[0][0])
        return 2 * rows >= top

    def _namespace_rows(
        self,
        columns: str,
        table: str,
        namespace: str,
        *,
        order: str | None = None,
        rows: int | None = None,
        conn: sqlite3.Connection | None = None,
    ) -> list[Any]:
        """``columns`` of ``namespace``'s rows of ``table``: by a scan of the table where
        the namespace holds most of it, else through its key (:meth:`_scan`, whose
        ``rows`` and ``conn`` these are), ordered by the column ``order`` if given (a
        scan's rows are sorted here, unless a value is one Python cannot order), rows
        of one value (a hand edit's) in table order either way."""

        def read(sql: str) -> list[Any]:
            return self._read(sql, (namespace,), conn)

        if self._scan(table, namespace, rows, conn):
            found = read(f"SELECT {columns} FROM {table} NOT INDEXED WHERE namespace=?")
            if order is None:
                return found
            at = [c.strip() for c in columns.split(",")].index(order)
            try:  # a stable sort of a scan's rows, which come in table (rowid) order
                found.sort(key=operator.itemgetter(at))
                return found
            except TypeError:  # a value that is not a number: SQLite orders any values
                pass
        by = f" ORDER BY {order}, rowid" if order is not None else ""
        return read(f"SELECT {columns} FROM {table} WHERE namespace=?{by}")

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not already (it rolls back by
        itself on some errors, e.g. a full disk; a ROLLBACK then would hide the cause)."""
        if self.conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the error being handled says more
                self.conn.execute("ROLLBACK")

    # ---------------------------------------------------------------- process lock
    def _take_lock(self, directory: Path) -> None:
        self._lock_fd = take_store_lock(directory, self.LOCK)
        if self._lock_fd is not None:
            # an instance dropped without close() and collected lets go of it too (it
            # held the store for the rest of the process)
            self._unlock = weakref.finalize(self, release_store_lock, self._lock_fd)

    def _release_lock(self) -> None:
        if self._lock_fd is not None:
            self._unlock()  # closing the descriptor drops the flock (once)
            self._lock_fd = None

    #: Meta key set while ``d_ref`` still holds version-2 times (see :meth:`_migrate`).
    LEGACY_TIMES = "d_ref_holds_times"

    #: Meta key naming where the store's vectors are kept (``VectorStore.location``).
    VECTOR_STORE = "vector_store"
    #: Meta key listing the namespaces not yet copied to the vector store the store last
    #: moved to (copied on first use, also by a later process).
    VECTOR_STORE_COPYING = "vector_store_copying"
    #: Meta key prefix: ``+ namespace`` holds ``[place, id]``, the Chroma id of the
    #: namespace's collection kept in step with this database while its vectors were at
    #: ``place`` (a :attr:`VECTOR_STORE` value): the same collection reached under another
    #: address is no move (:meth:`VectorSync.note_move`).
    VECTOR_STORE_COLLECTION = "vector_store_collection:"

    #: Meta key naming the token counter whose counts the ``tokens`` column holds.
    TOKEN_COUNTER = "token_counter"

    def use_token_counter(self, key: str | None) -> None:
        """Keep token counts in the ``tokens`` column for the counter named ``key``
        (``None``: a counter without a ``cache_key``, whose counts are not kept).

        A non-``NULL`` count is always one by the counter the meta row names: a store
        opened with another named counter clears them first (they are counted again as
        recall reaches them); one opened with an unnamed counter leaves them, unread, and
        writes ``NULL`` for every row it writes.
        """
        self.keep_tokens = False
        if key is None:
            return
        if self.meta(self.TOKEN_COUNTER) != key:
            with self.transaction() as conn:
                conn.execute("UPDATE memories SET tokens=NULL WHERE tokens IS NOT NULL")
                self.set_meta(self.TOKEN_COUNTER, key, conn)
        self.keep_tokens = True

    def _migrate(self) -> None:
        """Bring a version-1, -2 or -3 store to :data:`SCHEMA_VERSION` (a new one is already
        there), in one transaction.

        Versions 1-2 kept the time of each memory's last event (``t_ref``); version 3 keeps
        its category's decay clock reading (``d_ref``, :mod:`oblivion_core.decay_clock`).
        The column is renamed here and flagged (:attr:`LEGACY_TIMES`); the engine converts
        the values, which needs the policies' rates, in one transaction when it opens.
        Version 3 also keys the journal by :func:`memory_key` (see :data:`_INDEXES`).
        Version 4 keeps the relevance of each memory's last recall; older memories start
        at 1.0, as if never recalled (what :meth:`Oblivion.mark_used` assumed for them).
        Version 5 keeps each text's token count (:meth:`use_token_counter`); older ones
        start uncounted. Version 6 keys the journal by :func:`namespace_key` too (one
        pass over an older journal, once).
        """
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(memories)")}
        if "relevance" not in columns:  # versions 1-3: as if never recalled
            self.conn.execute("ALTER TABLE memories ADD COLUMN relevance REAL NOT NULL DEFAULT 1.0")
        if "tokens" not in columns:  # versions 1-4: counted again as recall reaches them
            self.conn.execute("ALTER TABLE memories ADD COLUMN tokens INTEGER")
        if "t_ref" in columns:
            self.set_meta(self.LEGACY_TIMES, True)
            self.conn.execute("ALTER TABLE memories RENAME COLUMN t_ref TO d_ref")
        if "mkey" not in {r[1] for r in self.conn.execute("PRAGMA table_info(events)")}:
            self.conn.execute("ALTER TABLE events ADD COLUMN mkey INTEGER")
            self.conn.create_function("memory_key", 2, memory_key, deterministic=True)
            self.conn.execute(
                "UPDATE events SET mkey = memory_key(namespace, memory_id) "
                "WHERE memory_id IS NOT NULL"
            )
            self.conn.execute("DROP INDEX IF EXISTS events_by_memory")
        if "nkey" not in {r[1] for r in self.conn.execute("PRAGMA table_info(events)")}:
            self.conn.execute("ALTER TABLE events ADD COLUMN nkey INTEGER")
            self.conn.create_function("namespace_key", 1, namespace_key, deterministic=True)
            self.conn.execute("UPDATE events SET nkey = namespace_key(namespace)")
        legacy = self.conn.execute(  # version 1 kept an FTS5 table per namespace
            "SELECT name FROM sqlite_master WHERE type='table' AND name GLOB 'fts_*' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        ).fetchall()
        for (name,) in legacy:
            self.conn.execute(f'DROP TABLE "{name}"')

    def close(self, *, write: bool = True) -> None:
        """Write deferred updates (unless ``write=False``: they are dropped), close the
        database and release the store lock."""
        try:
            if write:
                self.flush()
        finally:
            try:
                if self._writer is not None:
                    self._writer.shutdown(wait=True)
                if self._writer_conn is not None:
                    self._writer_conn.close()
                with self._reader_lock:
                    self._closed = True  # no reader is opened after this
                    if self._reader_conn is not None:
                        self._reader_conn.close()
                self.conn.close()
            finally:
                self._release_lock()

    # ---------------------------------------------------------------- transactions
    @contextmanager
    def transaction(self, *, durable: bool = False) -> Iterator[sqlite3.Connection]:
        """One atomic write; ``durable=True`` fsyncs on commit (``synchronous=FULL``).

        A deferred batch being written in the background is waited for first; updates
        still queued (:meth:`defer`) are written in this same transaction.
        """
        self._settle()
        conn = self.conn
        try:
            if durable:
                conn.execute("PRAGMA synchronous=FULL")
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if durable:
                self._restore_sync()
            raise self._error(exc) from exc
        queued: _Batch | None = None
        late: dict[str, tuple[str, str]] = {}
        try:
            queued = self._snapshot()
            if queued is not None:
                _write_batch(conn, queued)
            yield conn
            late = self._carried()  # e.g. a clock read inside this transaction
            conn.executemany(_UPSERT_META, [(key, value) for key, (_, value) in late.items()])
            conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            if queued is not None:  # still owed: the next write retries it
                self._failed.append(queued)
            if late:
                self._failed.append(([], [], late))
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc) from exc
            raise
        finally:
            if durable:
                self._restore_sync()

    #: How long :meth:`scrub` waits for a reader of the write-ahead log, in milliseconds.
    SCRUB_WAIT_MS = 200

    def scrub(self) -> None:
        """Copy the write-ahead log into the database and empty it, after a text was
        deleted or replaced: ``secure_delete`` overwrites the text's page with a new
        frame of the log, but the frame holding the text stays in the log file until a
        checkpoint empties it (after about 1,000 pages of later writes, or on close).
        Best effort: a reader still holding the log (another thread's read) is waited
        for :attr:`SCRUB_WAIT_MS` at most; the next scrub, checkpoint or close empties
        it then."""
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute(f"PRAGMA busy_timeout={self.SCRUB_WAIT_MS}")
            try:
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                self.conn.execute(f"PRAGMA busy_timeout={int(self.BUSY_TIMEOUT * 1000)}")

    def _restore_sync(self) -> None:
        """Back to ``synchronous=NORMAL`` after a durable transaction."""
        with contextlib.suppress(sqlite3.Error):  # stays FULL: slower, never unsafe
            self.conn.execute("PRAGMA synchronous=NORMAL")

    def defer(
        self,
        st: NamespaceState,
        ids: Iterable[str],
        at: float,
        entries: Sequence[JournalRow],
        meta: Mapping[str, Callable[[], Any]] | None = None,
    ) -> None:
        """Queue a row update and journal entries instead of committing them now.

        ``meta``: meta rows of the namespace to write with them, each as a function
        giving its value (JSON) when the batch is taken, e.g. the use counters
        adaptation learns from.

        Queued updates go out with the next transaction, on :meth:`close`, or, once the
        oldest has waited :attr:`DEFER_SECONDS` (the engine's timer calls
        :meth:`hand_off` if no further update comes) or :attr:`DEFER_EVENTS` entries
        wait, as one batch written by a background thread on its own connection (so a
        recall never waits for a commit). Rows are named by id, so deletes in between are
        harmless, and the values written are those at hand-off time; every transaction
        first waits for a batch in flight, so a batch never overwrites newer values.
        A crash loses at most the queued window.
        """
        _, pending = self._deferred_rows.setdefault(id(st), (st, set()))
        pending.update(ids)
        for key, value in (meta or {}).items():
            self._deferred_meta[key] = (st.namespace, value)
        if entries:
            self._deferred_events.append((at, time.time(), st.namespace, list(entries)))
            self._deferred_count += len(entries)
        now = time.monotonic()
        if self._deferred_since is None:
            self._deferred_since = now
        elif (
            now - self._deferred_since >= self.DEFER_SECONDS
            or self._deferred_count >= self.DEFER_EVENTS
        ):
            self.hand_off()

    @property
    def deferred(self) -> bool:
        """Whether queued updates wait to be handed to the writer."""
        return bool(
            self._deferred_rows or self._deferred_events or self._deferred_meta or self._failed
        )

    @property
    def writing(self) -> bool:
        """Whether a batch was handed to the writer and not settled since (it may still
        fail, e.g. on a lock: the next :meth:`hand_off` then queues it again)."""
        return self._inflight is not None

    def hand_off(self) -> None:
        """Hand the queued updates to the background writer now, unless a batch is still
        being written (an in-memory database has no second connection: written here).

        The engine calls this from a timer (under its lock) when no further update comes
        within :attr:`DEFER_SECONDS`, so updates never wait longer than that."""
        if self.path is None:
            self.flush()
        elif self._inflight is None or self._inflight.done():
            self._settle()
            batch = self._snapshot()
            if batch is not None:
                try:
                    self._inflight = self._background_writer().submit(self._write_apart, batch)
                except RuntimeError:  # no new threads while the interpreter shuts down:
                    self._failed.append(batch)  # the next transaction, or close(), writes it
                else:
                    self._inflight_batch = batch

    def drop_deferred(self, st: NamespaceState) -> None:
        """Forget every update still owed for ``st``'s namespace: queued rows and journal
        entries, and those of a batch whose write failed and waits to be retried (its
        namespace is being reloaded from the database after a failed change; their
        values may carry that change, and the reloaded state has none of them, so writing
        them later would make the store disagree with the live instance). The engine
        writes what earlier calls queued before a change starts (``Oblivion._consistent``),
        so what goes here is the failed change's own. A batch being written is waited for
        first, so the reload reads what it wrote."""
        self._settle()
        ns = st.namespace
        self._deferred_rows.pop(id(st), None)
        self._deferred_events = [e for e in self._deferred_events if e[2] != ns]
        self._deferred_meta = {k: v for k, v in self._deferred_meta.items() if v[0] != ns}
        self._deferred_count = sum(len(e[3]) for e in self._deferred_events)
        if not self._deferred_rows and not self._deferred_events and not self._deferred_meta:
            self._deferred_since = None
        failed = [
            (
                [r for r in rows if r[-2] != ns],
                [e for e in events if e[2] != ns],
                {k: v for k, v in metas.items() if v[0] != ns},
            )
            for rows, events, metas in self._failed
        ]
        self._failed = [batch for batch in failed if any(batch)]

    def flush(self) -> None:
        """Write deferred updates now (a no-op if none wait)."""
        self._settle()
        if self.deferred:
            with self.transaction():
                pass

    def _snapshot(self) -> _Batch | None:
        """Take every queued update (rows as their current values) off the queue."""
        batches = self._failed
        self._failed = []
        carried = self._carried()
        if carried or self._deferred_rows or self._deferred_events or self._deferred_meta:
            rows = [
                value
                for st, ids in self._deferred_rows.values()
                for value in _row_values(
                    st, [st.index[m] for m in ids if m in st.index], self.keep_tokens
                )
            ]
            metas = {k: (ns, json.dumps(get())) for k, (ns, get) in self._deferred_meta.items()}
            metas |= carried
            # journal entries are encoded by whoever writes the batch (the writer thread)
            batches.append((rows, self._deferred_events, metas))
            self._deferred_rows, self._deferred_events, self._deferred_meta = {}, [], {}
            self._deferred_count, self._deferred_since = 0, None
        if not batches:
            return None
        merged: dict[str, tuple[str, str]] = {}
        for b in batches:  # a later value of a key wins
            merged.update(b[2])
        return [r for b in batches for r in b[0]], [e for b in batches for e in b[1]], merged

    def _carried(self) -> dict[str, tuple[str, str]]:
        """The :attr:`carry_meta` rows, as a batch's meta rows (of no namespace: a
        namespace's failed change does not drop them)."""
        if self.carry_meta is None:
            return {}
        return {key: ("", value) for key, value in self.carry_meta().items()}

    def _settle(self) -> None:
        """Wait for the batch in flight; if it failed, queue it again (the next
        transaction writes it, and raises if the database still refuses)."""
        inflight, self._inflight = self._inflight, None
        if inflight is None:
            return
        try:
            inflight.result()
        except Exception:
            self._failed.append(self._inflight_batch)
        self._inflight_batch = ([], [], {})

    def _background_writer(self) -> ThreadPoolExecutor:
        if self._writer is None:
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="oblivion-writer")
        return self._writer

    def _write_apart(self, batch: _Batch) -> None:
        """Write a batch on the writer thread's own connection."""
        if self._writer_conn is None:
            self._writer_conn = sqlite3.connect(
                str(self.path),
                check_same_thread=False,
                isolation_level=None,
                timeout=self.BUSY_TIMEOUT,  # a call may wait for this batch (_settle)
            )
            self._writer_conn.execute("PRAGMA synchronous=NORMAL")
            self._writer_conn.execute("PRAGMA secure_delete=ON")
        conn = self._writer_conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            _write_batch(conn, batch)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _damaged(self, what: str, fix: str) -> StoreCorruptError:
        """The error for a damaged value in an otherwise valid database."""
        return StoreCorruptError(
            f"{self.path} is damaged: {what}. Oblivion does not repair it: restore a "
            f"backup, or {fix}"
        )

    def _loads(self, text: Any, what: str) -> Any:
        """A JSON value read from the database; damaged ones are a StoreCorruptError."""
        try:
            return json.loads(text)
        except (TypeError, ValueError) as exc:
            raise self._damaged(
                f"{what} is not valid JSON ({exc})", "fix that value with the sqlite3 tool"
            ) from exc

    def parsed(self, key: str, parse: Callable[[Any], Any]) -> Any:
        """``parse(meta(key))``; a value it cannot take (not what Oblivion wrote) is a
        StoreCorruptError."""
        return self._parse(self.meta(key), f"meta value {key!r}", parse)

    def checked(self, text: Any, what: str, parse: Callable[[Any], Any]) -> Any:
        """``parse`` of the JSON ``text`` read from another table than meta (``what``
        names it); damaged, it is a StoreCorruptError."""
        return self._parse(self._loads(text, what), what, parse)

    def _parse(self, value: Any, what: str, parse: Callable[[Any], Any]) -> Any:
        try:
            return parse(value)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            raise self._damaged(
                f"{what} is not what Oblivion wrote ({type(exc).__name__}: {exc})",
                "fix that value with the sqlite3 tool",
            ) from exc

    def _vector(self, blob: Any, memory_id: str, namespace: str) -> Vectors:
        """A stored vector, checked: float32 values, the store's dimension."""
        if not self._vector_bytes:  # until the first write sets the dimension
            dim = self.meta("dim")
            self._vector_bytes = 4 * dim if type(dim) is int and dim > 0 else 0
        size = len(blob) if isinstance(blob, bytes) else None
        if size is None or not size or size % 4 or size != (self._vector_bytes or size):
            raise self._damaged(
                f"the stored vector of memory {memory_id!r} of namespace {namespace!r} is "
                f"{'a ' + type(blob).__name__ if size is None else f'{size} bytes'}, not "
                f"{self._vector_bytes or 'a multiple of 4'} bytes of float32",
                "delete that row of the vectors table with the sqlite3 tool (the vector "
                "store's copy is read instead)",
            )
        return np.frombuffer(blob, dtype=np.float32)

    def vector_sample(self, scan: int) -> list[tuple[str, Vectors]]:
        """``(text, vector)`` of the first ``scan`` memories with a stored vector, in
        table order (what checks that the embedder is the store's model)."""
        rows = self._read(
            "SELECT m.namespace, m.id, m.text, v.vector FROM memories AS m JOIN vectors AS v "
            "ON v.namespace = m.namespace AND v.id = m.id LIMIT ?",
            (scan,),
        )
        return [(str(text), self._vector(blob, str(mid), str(ns))) for ns, mid, text, blob in rows]

    # ---------------------------------------------------------------- meta
    def meta(self, key: str) -> Any:
        """A JSON value from the meta table, or ``None``."""
        row = next(iter(self._read("SELECT value FROM meta WHERE key=?", (key,))), None)
        return self._loads(row[0], f"meta value {key!r}") if row else None

    def metas(self, prefix: str) -> dict[str, Any]:
        """Every JSON value of the meta table whose key starts with ``prefix``, by the rest
        of the key."""
        rows = self._read(
            "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix)
        )
        return {r[0][len(prefix) :]: self._loads(r[1], f"meta value {r[0]!r}") for r in rows}

    def set_meta(self, key: str, value: Any, conn: sqlite3.Connection | None = None) -> None:
        """Store a JSON value in the meta table."""
        with self._translated():
            self.write_meta(conn or self.conn, key, value)

    def pinned(self) -> sqlite3.Connection:
        """A new connection to the database with a read transaction open on what is
        committed now: it goes on reading that state while other connections write (WAL),
        until it is closed. For a backup (:mod:`oblivion_core.backup`)."""
        if self.path is None:
            raise StoreError("an in-memory database has no second connection to read it")
        with self._translated():
            conn = sqlite3.connect(
                str(self.path),
                isolation_level=None,
                check_same_thread=False,
                timeout=self.BUSY_TIMEOUT,
            )
            try:
                conn.execute("BEGIN")
                conn.execute("SELECT COUNT(*) FROM meta").fetchone()  # the snapshot starts
            except BaseException:
                conn.close()
                raise
        return conn

    @staticmethod
    def write_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
        """Store a JSON value in the meta table of the database open on ``conn`` (errors
        untranslated: a copy's, see :mod:`oblivion_core.backup`)."""
        conn.execute(_UPSERT_META, (key, json.dumps(value)))

    @staticmethod
    def write_vectors(
        conn: sqlite3.Connection, namespaces: Sequence[str], ids: Sequence[str], vectors: Vectors
    ) -> None:
        """Store ``vectors`` (one row each) as the vectors of memories ``ids`` of
        ``namespaces`` in the database open on ``conn`` (errors untranslated: a copy's,
        see :mod:`oblivion_core.backup`)."""
        conn.executemany(
            _UPSERT_VECTOR,
            [(ns, m, _blob(v)) for ns, m, v in zip(namespaces, ids, vectors, strict=True)],
        )

    def store_id(self) -> str:
        """This store's id, made on first use: the vector store's collections record it as
        their owner (:meth:`VectorStore.bind`)."""
        found: str | None = self.parsed("store_id", _store_id)
        if found is None:
            found = uuid.uuid4().hex
            self.set_meta("store_id", found)
        return found

    # ---------------------------------------------------------------- namespaces
    def namespaces(self) -> dict[str, str | None]:
        """Namespace -> stored policy JSON (or ``None``)."""
        rows = self._read("SELECT namespace, policy FROM namespaces")
        return {r[0]: r[1] for r in rows}

    def add_namespace(self, namespace: str, conn: sqlite3.Connection) -> None:
        """Record a namespace (idempotent)."""
        conn.execute(
            "INSERT OR IGNORE INTO namespaces(namespace, created_at) VALUES(?, ?)",
            (namespace, time.time()),
        )

    def set_namespace_policy(self, namespace: str, policy_json: str | None) -> None:
        """Persist a namespace's policy override."""
        with self.transaction() as conn:
            self.add_namespace(namespace, conn)
            conn.execute(
                "UPDATE namespaces SET policy=? WHERE namespace=?", (policy_json, namespace)
            )

    def drop_namespace(self, namespace: str, conn: sqlite3.Connection) -> None:
        """Delete a namespace's rows (events are kept as history)."""
        self.forget_cached(namespace)
        for table in ("memories", "vectors", "links", "review", "summaries", "namespaces"):
            conn.execute(f"DELETE FROM {table} WHERE namespace=?", (namespace,))

    # ---------------------------------------------------------------- rows
    def load(self, namespace: str) -> NamespaceState:
        """Read every row of ``namespace`` into a fresh :class:`NamespaceState`."""
        st = NamespaceState(namespace)
        st.clock = self.parsed(f"clock:{namespace}", DecayClock.from_json)
        columns = (
            "id, category, importance, confidence, created_at, last_accessed, a_ref, d_ref, "
            "stability, relevance, access_count, tier, invalidated, superseded_by, seq, tokens"
        )
        rows = self._namespace_rows(columns, "memories", namespace, order="seq")
        if not self._fill(st, rows):  # a value out of the ordinary: read row by row
            self._append_rows(st, rows)
        return st

    def _fill(self, st: NamespaceState, rows: list[tuple[Any, ...]]) -> bool:
        """``rows`` into the empty ``st`` a column at a time (0.14 s instead of 0.31 s
        for 100k memories), if every value is of the kind Oblivion writes; ``False``
        (``st`` untouched) otherwise, so :meth:`_append_rows` reads them and reports what
        is wrong, row by row."""
        if not rows:
            return True
        columns = list(zip(*rows, strict=True))
        ids, cats, seqs = list(columns[0]), columns[1], list(columns[14])
        numbers, whole = {int, float}, {int}
        if (
            not set(map(type, ids)) <= {str}
            or not set(map(type, cats)) <= {str}
            or any(not set(map(type, columns[c])) <= numbers for c in range(2, 10))
            or any(not set(map(type, columns[c])) <= whole for c in (10, 11, 12, 14))
            or not set(columns[11]) <= _TIERS
            or len(set(ids)) < len(ids)
        ):
            return False
        try:
            if np.any(np.diff(np.asarray(seqs, dtype=np.int64)) <= 0):  # ORDER BY seq
                return False  # a number twice: appended row by row, as ever
            values: dict[str, npt.NDArray[Any]] = {
                name: np.asarray(columns[2 + k], dtype=np.float64)
                for k, name in enumerate(_FLOAT_COLS)
            }
            values["access_count"] = np.asarray(columns[10], dtype=np.int64)
            values["tier"] = np.asarray(columns[11], dtype=np.int8)
            values["invalidated"] = np.asarray(columns[12], dtype=bool)
        except (TypeError, ValueError, OverflowError):
            return False
        if self.keep_tokens:  # the column holds count + 1; 0: not counted yet
            values["tokens"] = np.fromiter(
                (t + 1 if type(t) is int and 0 <= t < MAX_TOKENS else 0 for t in columns[15]),
                np.int64,
                len(rows),
            )
        successors = columns[13]
        values["superseded"] = np.fromiter(map(bool, successors), bool, len(rows))
        st.fill(ids, cats, values, seqs)
        st.superseded_by.update(
            (ids[i], successors[i]) for i in np.flatnonzero(values["superseded"]).tolist()
        )
        return True

    def _append_rows(self, st: NamespaceState, rows: list[tuple[Any, ...]]) -> None:
        """``rows`` into ``st`` one at a time, each checked."""
        namespace = st.namespace
        keep = self.keep_tokens
        for r in rows:
            if r[11] not in _TIERS:
                raise self._damaged(
                    f"memory {r[0]!r} of namespace {namespace!r} has tier {r[11]!r} "
                    "(0 active, 1 archive, 2 cold)",
                    "set that row's tier with the sqlite3 tool",
                )
            values = dict(zip(_FLOAT_COLS, r[2:10], strict=True))
            values.update(access_count=r[10], tier=r[11], invalidated=bool(r[12]))
            tokens = r[15]
            if keep and type(tokens) is int and 0 <= tokens < MAX_TOKENS:
                values["tokens"] = tokens + 1  # the column holds count + 1
            try:
                st.append(r[0], r[1], values, r[14])
            except (TypeError, ValueError, OverflowError) as exc:
                raise self._damaged(
                    f"memory {r[0]!r} of namespace {namespace!r} holds a value that is "
                    f"not a number ({exc})",
                    "fix that row with the sqlite3 tool",
                ) from exc
            if r[13]:
                st.superseded_by[r[0]] = r[13]
                st.cols["superseded"][st.n - 1] = True

    def insert(
        self,
        conn: sqlite3.Connection,
        st: NamespaceState,
        rows: Iterable[int],
        texts: Mapping[str, str],
        metadatas: Mapping[str, Mapping[str, Any]],
        vectors: Vectors,
    ) -> None:
        """Insert the given rows of ``st`` (new memories) with their text, metadata and
        vector (``vectors[k]`` for the k-th row)."""
        rows = list(rows)
        tokens = _stored_tokens(st, rows, self.keep_tokens)
        data = []
        blobs = []
        for i, vec, n_tokens in zip(rows, vectors, tokens, strict=True):
            mid = st.ids[i]
            c = st.cols
            data.append(
                (
                    st.namespace,
                    mid,
                    texts[mid],
                    st.category(i),
                    *(float(c[name][i]) for name in _FLOAT_COLS),
                    int(c["access_count"][i]),
                    int(c["tier"][i]),
                    int(c["invalidated"][i]),
                    st.superseded_by.get(mid),
                    json.dumps(dict(metadatas.get(mid, {}))),
                    int(c["seq"][i]),
                    n_tokens,
                )
            )
            blobs.append((st.namespace, mid, _blob(vec)))
        conn.executemany(
            "INSERT INTO memories(namespace, id, text, category, importance, confidence, "
            "created_at, last_accessed, a_ref, d_ref, stability, relevance, access_count, "
            "tier, invalidated, superseded_by, metadata, seq, tokens) "
            "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            data,
        )
        conn.executemany(_UPSERT_VECTOR, blobs)

    def save_rows(self, conn: sqlite3.Connection, st: NamespaceState, rows: Iterable[int]) -> None:
        """Write the mutable columns of ``rows`` back to SQLite."""
        conn.executemany(_UPDATE_ROW, _row_values(st, rows, self.keep_tokens))

    def save_activation(
        self, conn: sqlite3.Connection, st: NamespaceState, rows: Iterable[int]
    ) -> None:
        """Write only ``a_ref`` and ``d_ref`` of ``rows`` (a rebase changes nothing else;
        other pending changes of those rows stay queued for their own write)."""
        index = np.fromiter(rows, dtype=np.int64)
        if not len(index):
            return
        conn.executemany(
            "UPDATE memories SET a_ref=?, d_ref=? WHERE namespace=? AND id=?",
            zip(
                st.cols["a_ref"][index].tolist(),
                st.cols["d_ref"][index].tolist(),
                [st.namespace] * len(index),
                [st.ids[i] for i in index.tolist()],
                strict=True,
            ),
        )

    def delete(self, conn: sqlite3.Connection, namespace: str, ids: Sequence[str]) -> None:
        """Delete rows by id."""
        keys = [(namespace, i) for i in ids]
        self._uncache(namespace, ids)
        conn.executemany("DELETE FROM memories WHERE namespace=? AND id=?", keys)
        conn.executemany("DELETE FROM vectors WHERE namespace=? AND id=?", keys)

    def journalled(self, namespace: str, ids: Sequence[str]) -> set[str]:
        """Those of ``ids`` the journal of ``namespace`` has an entry of: memories once,
        deleted since (a record of a write that never committed has none)."""
        seen: set[str] = set()
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._read(
                f"SELECT DISTINCT memory_id FROM events WHERE mkey IN ({marks}) AND namespace=?",
                [memory_key(namespace, m) for m in chunk] + [namespace],
            )
            seen.update(str(r[0]) for r in rows)
        return seen

    def lexical_generation(self, namespace: str) -> int | None:
        """The namespace's number in ``lexical_gen`` (see :data:`_LEXICAL_GENERATION`),
        ``None`` if it has none yet; read as :meth:`seq_texts` reads (committed rows
        only, on a connection of its own)."""
        if self.path is None:  # an in-memory database has one connection
            found = self._read(_GENERATION, (namespace,))
        else:
            with self._reader_lock:
                found = self._read(_GENERATION, (namespace,), self._reader())
        return int(found[0][0]) if found else None

    def current_lexical_generation(self, namespace: str) -> int:
        """The namespace's number in ``lexical_gen`` as this connection sees it, drawn
        now if it has none yet (a store from before the table, untouched since)."""
        found = self._read(_GENERATION, (namespace,))
        if found:
            return int(found[0][0])
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO lexical_gen (namespace, gen) VALUES (?, random())",
                (namespace,),
            )
            return int(conn.execute(_GENERATION, (namespace,)).fetchone()[0])

    def _reader(self) -> sqlite3.Connection:
        """The connection that reads committed rows only, beside writes (call with
        ``_reader_lock`` held)."""
        if self._closed:
            raise StoreError(f"{self.path} was closed")
        if self._reader_conn is None:
            self._reader_conn = sqlite3.connect(
                str(self.path),
                check_same_thread=False,
                isolation_level=None,
                timeout=self.BUSY_TIMEOUT,
            )
            self._reader_conn.execute("PRAGMA query_only=1")
        return self._reader_conn

    def seq_texts(self, namespace: str) -> list[tuple[int, str]]:
        """``(seq, text)`` of every *committed* memory of a namespace, in insertion order.

        The lexical index is built from this on a namespace's first search, which runs
        outside the engine's lock (beside the query embedding). So it reads on a
        connection of its own: it never sees the rows of a write another thread has not
        committed yet (a rollback would leave them indexed), nor issues a statement on
        the connection that write is using. Writes index their rows after they commit.
        """
        sql = "SELECT seq, text FROM memories WHERE namespace=? ORDER BY seq"
        if self.path is None:  # an in-memory database has one connection
            return [(int(r[0]), str(r[1])) for r in self._read(sql, (namespace,))]
        with self._reader_lock, self._translated():
            # by a scan at 100k memories: 0.06 s, not 0.2 s
            rows = self._namespace_rows(
                "seq, text", "memories", namespace, order="seq", conn=self._reader()
            )
        return [(int(r[0]), str(r[1])) for r in rows]

    #: Entries of the text/metadata cache (least recently used ones leave first).
    CONTENTS_CACHE = 65_536

    def _cached(self, namespace: str, ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """``(text, metadata JSON)`` by id: from the cache, the rest in one query."""
        cache = self._contents
        held = self._held.get(namespace, {})
        out: dict[str, tuple[str, str]] = {}
        missing: list[str] = []
        for m in ids:
            key = (namespace, m)
            hit = held.get(m)
            if hit is not None:
                out[m] = hit
                continue
            hit = cache.get(key)
            if hit is None:
                missing.append(m)
            else:
                cache.move_to_end(key)
                out[m] = hit
        if missing:
            found = self._by_ids("id, text, metadata", namespace, missing)
            out.update((mid, (text, meta)) for mid, text, meta in found)
            self._keep(namespace, [(mid, (text, meta)) for mid, text, meta in found])
        return out

    def _keep(self, namespace: str, entries: Iterable[tuple[str, tuple[str, str]]]) -> None:
        """Put ``(id, (text, metadata JSON))`` entries into the cache as its newest, and
        drop the least recently used ones beyond :attr:`CONTENTS_CACHE`."""
        cache = self._contents
        held = self._held.get(namespace, {})
        for mid, value in entries:
            key = (namespace, mid)
            if mid in held:
                held[mid] = value
                cache.pop(key, None)
            else:
                cache[key] = value
                cache.move_to_end(key)
        while len(cache) > self.CONTENTS_CACHE:
            cache.popitem(last=False)

    def hold(self, namespace: str, ids: Iterable[str]) -> None:
        """Keep the texts and metadata of memories ``ids`` (they entered the active tier)
        out of the LRU until :meth:`release`: every recall reads from the active tier,
        and reads of archived memories or a run of writes would otherwise push out the
        ones written longest ago. What the LRU holds of them moves over; the rest is
        read when first asked for (or by :meth:`read_held`)."""
        cache = self._contents
        held = self._held.setdefault(namespace, {})
        for m in ids:
            if m not in held:
                held[m] = cache.pop((namespace, m), None)

    def release(self, namespace: str, ids: Iterable[str] | None = None) -> None:
        """Memories ``ids`` (``None``: every one of the namespace) left the active tier:
        their entries go back to the LRU (as its newest)."""
        held = self._held.get(namespace, {})
        if ids is None:
            ids = list(held)
        entries = [(m, value) for m in ids if (value := held.pop(m, None)) is not None]
        if not held:
            self._held.pop(namespace, None)
        self._keep(namespace, entries)

    def read_held(self, namespace: str) -> int:
        """Read the held entries of a namespace not read yet, in one query per 500;
        returns how many were read."""
        missing = [m for m, value in self._held.get(namespace, {}).items() if value is None]
        if missing:
            found = self._by_ids("id, text, metadata", namespace, missing)
            self._keep(namespace, [(mid, (text, meta)) for mid, text, meta in found])
        return len(missing)

    def cache_written(
        self,
        namespace: str,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]],
    ) -> None:
        """Put memories just written (and committed) into the text/metadata cache, so
        the records ``remember()`` returns, and the recalls after it, need not read them
        back from SQLite."""
        self._keep(
            namespace,
            (
                (mid, (text, json.dumps(dict(meta))))
                for mid, text, meta in zip(ids, texts, metadatas, strict=True)
            ),
        )

    def forget_cached(self, namespace: str) -> None:
        """Drop the cached texts and metadata of a namespace (it is being unloaded)."""
        self._uncache(namespace, [m for ns, m in self._contents if ns == namespace])
        self._held.pop(namespace, None)

    def count(self, namespace: str, category: str | None = None) -> int:
        """Memories of a namespace (of one category), counted in the database: for a
        namespace not loaded, without loading it."""
        if category is None:
            rows = self._read("SELECT COUNT(*) FROM memories WHERE namespace=?", (namespace,))
        else:
            rows = self._read(
                "SELECT COUNT(*) FROM memories WHERE namespace=? AND category=?",
                (namespace, category),
            )
        return int(rows[0][0])

    def vector_count(self, namespace: str) -> int:
        """Vectors the database holds of a namespace's memories (fewer than its memories
        in a version-1 store, which kept them in Chroma only)."""
        rows = self._read("SELECT COUNT(*) FROM vectors WHERE namespace=?", (namespace,))
        return int(rows[0][0])

    def _uncache(self, namespace: str, ids: Iterable[str]) -> None:
        held = self._held.get(namespace, {})
        for m in ids:
            self._contents.pop((namespace, m), None)
            if m in held:
                held[m] = None  # still held: read again when next asked for

    def texts(self, namespace: str, ids: Sequence[str]) -> dict[str, str]:
        """Texts by id."""
        return {m: v[0] for m, v in self._cached(namespace, ids).items()}

    def metadata_rows(
        self, namespace: str, ids: Sequence[str] | None = None, *, texts: bool = False
    ) -> list[tuple[str, str, str]]:
        """``(id, metadata JSON, text)`` of memories ``ids`` (``None``: every one of the
        namespace; ``texts=False``: ``""`` for each text, not read), read past the
        contents cache: a filter's scan of the whole namespace would push out what
        recall reads."""
        columns = "id, metadata, text" if texts else "id, metadata, ''"
        with self._translated():
            if ids is None:
                rows = self._namespace_rows(columns, "memories", namespace)
            else:
                rows = self._by_ids(columns, namespace, ids)
        return [(str(r[0]), str(r[1]), str(r[2])) for r in rows]

    def parse_metadata(self, memory_id: str, raw: str) -> Any:
        """A memory's metadata from its JSON (:class:`StoreCorruptError` if damaged); most
        memories have none: "{}" is read without the JSON parser."""
        if raw == "{}":
            return {}
        return self._loads(raw, f"the metadata of memory {memory_id!r}")

    def metadatas(self, namespace: str, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Metadata by id."""
        return {m: self.parse_metadata(m, v[1]) for m, v in self._cached(namespace, ids).items()}

    def contents(self, namespace: str, ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """``(text, metadata)`` by id (what a recalled item shows; a fresh metadata dict)."""
        return {
            m: (v[0], self.parse_metadata(m, v[1])) for m, v in self._cached(namespace, ids).items()
        }

    def _by_ids(
        self, cols: str, namespace: str, ids: Sequence[str], table: str = "memories"
    ) -> list[Any]:
        out: list[Any] = []
        ids = list(ids)
        with self._translated():
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                out.extend(
                    self.conn.execute(
                        f"SELECT {cols} FROM {table} WHERE namespace=? AND id IN ({marks})",
                        (namespace, *part),
                    ).fetchall()
                )
        return out

    def set_text(
        self,
        conn: sqlite3.Connection,
        namespace: str,
        memory_id: str,
        text: str,
        vector: Vectors,
        tokens: int,
    ) -> None:
        """Replace a memory's text, its vector and its token count."""
        self._uncache(namespace, [memory_id])
        conn.execute(
            "UPDATE memories SET text=?, tokens=? WHERE namespace=? AND id=?",
            (text, tokens if self.keep_tokens else None, namespace, memory_id),
        )
        conn.execute(_UPSERT_VECTOR, (namespace, memory_id, _blob(vector)))

    def vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, Vectors]:
        """Stored vectors by id (ids without one, e.g. from a version-1 store, are absent)."""
        return {
            r[0]: self._vector(r[1], r[0], namespace)
            for r in self._by_ids("id, vector", namespace, ids, table="vectors")
        }

    def namespace_vectors(
        self, namespace: str, keep: Callable[[str], bool], rows: int | None = None
    ) -> tuple[list[str], Vectors | None]:
        """Ids and stored vectors (one per row) of a namespace's memories that ``keep``
        accepts, read in one query (a third faster than reading them by id); ``rows``:
        how many memories the namespace holds, if known (see :meth:`_scan`)."""
        found = self._namespace_rows("id, vector", "vectors", namespace, rows=rows)
        kept = [(i, v) for i, v in found if keep(i)]
        if not kept:
            return [], None
        ids = [i for i, _ in kept]
        first = self._vector(kept[0][1], kept[0][0], namespace)  # sets _vector_bytes
        blobs = [v for _, v in kept]
        if set(map(type, blobs)) == {bytes} and set(map(len, blobs)) == {first.nbytes}:
            # every one of the store's dimension: joined into one writable buffer (85k
            # vectors in 0.07 s, against 0.08-0.27 s row by row in a new process)
            joined = np.frombuffer(bytearray().join(blobs), dtype=np.float32)
            return ids, joined.reshape(len(kept), len(first))
        # not: row by row, each checked (the first that is not names what to fix)
        mat = np.empty((len(kept), len(first)), dtype=np.float32)
        for j, (i, v) in enumerate(kept):
            mat[j] = self._vector(v, i, namespace)
        return ids, mat

    def set_metadata(
        self, conn: sqlite3.Connection, namespace: str, memory_id: str, metadata: Mapping[str, Any]
    ) -> None:
        """Replace a memory's metadata."""
        self._uncache(namespace, [memory_id])
        conn.execute(
            "UPDATE memories SET metadata=? WHERE namespace=? AND id=?",
            (json.dumps(dict(metadata)), namespace, memory_id),
        )

    def next_seq(self) -> int:
        """A fresh insertion sequence number (monotonic across namespaces and reopenings)."""
        with self._translated():
            row = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchone()
        return int(row[0]) + 1

    # ---------------------------------------------------------------- associations
    def links(self, namespace: str) -> list[tuple[str, str, float]]:
        """Every link ``(a, b, weight)`` of a namespace (each stored once, ``a < b``)."""
        # 139k links by a scan: 0.08 s, not 0.19 s
        rows = self._namespace_rows("a, b, weight", "links", namespace)
        weights = [r[2] for r in rows]
        if set(map(type, weights)) <= {float, int}:  # checked at once, not link by link
            values = np.asarray(weights, dtype=np.float64)
            if np.isfinite(values).all() and (values >= 0).all():
                return [(a, b, float(w)) for a, b, w in rows]
        out = []
        for a, b, weight in rows:
            if not isinstance(weight, int | float) or not math.isfinite(weight) or weight < 0:
                raise self._damaged(
                    f"the link {a!r} - {b!r} of namespace {namespace!r} has weight {weight!r}, "
                    "not a number >= 0",
                    "delete that row of the links table with the sqlite3 tool",
                )
            out.append((a, b, float(weight)))
        return out

    def save_links(
        self, conn: sqlite3.Connection, namespace: str, links: Iterable[tuple[str, str, float, str]]
    ) -> None:
        """Insert or strengthen links ``(a, b, weight, kind)``."""
        conn.executemany(
            "INSERT INTO links(namespace, a, b, weight, kind) VALUES(?,?,?,?,?) "
            "ON CONFLICT(namespace, a, b) DO UPDATE SET weight=max(weight, excluded.weight)",
            [(namespace, *sorted((a, b)), w, kind) for a, b, w, kind in links],
        )

    def delete_links(self, conn: sqlite3.Connection, namespace: str, ids: Sequence[str]) -> None:
        """Remove every link touching ``ids`` (each end through its own index)."""
        rows = [(namespace, i) for i in ids]
        conn.executemany("DELETE FROM links WHERE namespace=? AND a=?", rows)
        conn.executemany("DELETE FROM links WHERE namespace=? AND b=?", rows)

    def review(self, namespace: str) -> dict[str, str]:
        """Memories flagged for review, with the reason."""
        rows = self._read("SELECT id, reason FROM review WHERE namespace=?", (namespace,))
        return {r[0]: r[1] for r in rows}

    def set_review(
        self, conn: sqlite3.Connection, namespace: str, flags: Mapping[str, str | None]
    ) -> None:
        """Flag (reason) or unflag (``None``) memories."""
        for mid, reason in flags.items():
            if reason is None:
                conn.execute("DELETE FROM review WHERE namespace=? AND id=?", (namespace, mid))
            else:
                conn.execute(
                    "INSERT INTO review(namespace, id, reason) VALUES(?,?,?) "
                    "ON CONFLICT(namespace, id) DO UPDATE SET reason=excluded.reason",
                    (namespace, mid, reason),
                )

    def summaries(self, namespace: str) -> dict[str, list[str]]:
        """Summary id -> original ids, in their original order."""
        rows = self._read(
            "SELECT summary_id, original_id FROM summaries WHERE namespace=? "
            "ORDER BY summary_id, position",
            (namespace,),
        )
        out: dict[str, list[str]] = {}
        for sid, oid in rows:
            originals = out.setdefault(sid, [])
            if oid != _NO_ORIGINALS:
                originals.append(oid)
        return out

    def set_summary(
        self,
        conn: sqlite3.Connection,
        namespace: str,
        summary_id: str,
        originals: Sequence[str] | None,
    ) -> None:
        """Record (or with ``None`` remove) which originals a summary stands for. A
        summary whose originals were all forgotten stays a summary (of none)."""
        conn.execute(
            "DELETE FROM summaries WHERE namespace=? AND summary_id=?", (namespace, summary_id)
        )
        if originals is not None:
            conn.executemany(
                "INSERT INTO summaries(namespace, summary_id, original_id, position) "
                "VALUES(?,?,?,?)",
                [(namespace, summary_id, o, k) for k, o in enumerate(originals or [_NO_ORIGINALS])],
            )

    # ---------------------------------------------------------------- journal
    def journal(
        self,
        conn: sqlite3.Connection,
        at: float,
        namespace: str,
        entries: Iterable[JournalRow],
        *,
        wall: float | None = None,
    ) -> None:
        """Append events ``(memory_id, kind, before, after, detail)``."""
        wall = time.time() if wall is None else wall
        conn.executemany(_INSERT_EVENT, _event_values(at, wall, namespace, entries))

    #: Journal entries deleted per transaction by :meth:`prune_events` (65-90 ms each: a
    #: recall or write waiting for the engine or the database never waits long; 100k
    #: entries of a 200k journal went in 1.3 s).
    PRUNE_CHUNK = 5_000

    def prune_events(
        self, namespace: str, before: float, kinds: Sequence[str], *, own_clock: bool = False
    ) -> Generator[int, None, None]:
        """Delete ``namespace``'s journal entries of ``kinds`` recorded before clock time
        ``before``, one transaction per :attr:`PRUNE_CHUNK` entries; yields each count.

        Entries are numbered in the order they were written, which is the namespace's
        clock order except for boosts queued a moment (:meth:`defer`): a binary search over
        the namespace's numbers finds where ``before`` falls, so a prune reads only the
        entries before it. ``own_clock``: each namespace counts its own time (the turn
        clock), so another's entries may be numbered later and timed lower: the search
        then goes over the namespace's own entries (by ``nkey``). The entries deleted are
        read by ``nkey`` too, so another namespace's journal is never read.
        """
        self.flush()
        nkey = namespace_key(namespace)
        with self._translated():
            # two queries: SQLite reads MIN and MAX off the index only one at a time (both
            # in one statement scanned the whole journal: 89 ms at 1M entries)
            first = self.conn.execute("SELECT MIN(seq) FROM events").fetchone()[0]
            last = self.conn.execute("SELECT MAX(seq) FROM events").fetchone()[0]
            if first is None:
                return
            lo, hi = int(first), int(last) + 1  # the first entry at or after ``before``
            while lo < hi:
                mid = (lo + hi) // 2
                row = (
                    self.conn.execute(
                        "SELECT seq, at FROM events WHERE seq >= ? AND nkey = ? AND namespace = ? "
                        "ORDER BY seq LIMIT 1",
                        (mid, nkey, namespace),
                    ).fetchone()
                    if own_clock
                    else self.conn.execute(
                        "SELECT seq, at FROM events WHERE seq >= ? ORDER BY seq LIMIT 1", (mid,)
                    ).fetchone()
                )
                if row is None:  # none of the namespace's from mid on
                    hi = mid
                elif row[1] < before:
                    lo = int(row[0]) + 1
                else:
                    hi = mid
        # a margin past it for entries queued a moment and written after later ones
        cut = lo + 16 * self.DEFER_EVENTS
        marks = ",".join("?" * len(kinds))
        match = f"nkey = ? AND namespace = ? AND at < ? AND kind IN ({marks})"
        after = int(first) - 1
        while True:
            with self.transaction() as conn:
                rows = conn.execute(
                    f"SELECT seq FROM events WHERE seq > ? AND seq < ? AND {match} "
                    "ORDER BY seq LIMIT ?",
                    (after, cut, nkey, namespace, before, *kinds, self.PRUNE_CHUNK),
                ).fetchall()
                if not rows:
                    return
                conn.execute(
                    f"DELETE FROM events WHERE seq BETWEEN ? AND ? AND {match}",
                    (rows[0][0], rows[-1][0], nkey, namespace, before, *kinds),
                )
            after = rows[-1][0]
            yield len(rows)

    def events(
        self,
        namespace: str,
        memory_id: str | None = None,
        limit: int | None = None,
        *,
        committed: bool = False,
    ) -> list[Event]:
        """Journal entries, oldest first (of one memory, or of the namespace).

        ``committed``: read on the reader connection the entries committed (the caller
        flushed the deferred ones), for a caller outside the engine's lock: reading a
        namespace's whole journal (150k entries: 2.4 s) held up every other call."""
        if not committed or self.path is None:  # an in-memory database: one connection
            self.flush()
            committed = False
        sql = "SELECT seq, at, wall, namespace, memory_id, kind, before, after, detail FROM events"
        args: list[Any] = [namespace]
        sql += " WHERE namespace=?"
        if memory_id is None:
            sql += " AND nkey=?"
            args.append(namespace_key(namespace))
        else:
            sql += " AND mkey=? AND memory_id=?"
            args += [memory_key(namespace, memory_id), memory_id]
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY seq DESC LIMIT ?) ORDER BY seq"
            args.append(limit)
        else:
            sql += " ORDER BY seq"
        with self._translated():
            if committed:
                with self._reader_lock:
                    rows = self._reader().execute(sql, args).fetchall()
            else:
                rows = self.conn.execute(sql, args).fetchall()
            return [
                Event(
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    r[4],
                    r[5],
                    r[6],
                    r[7],
                    self._loads(r[8] or "{}", f"the detail of journal entry {r[0]}"),
                )
                for r in rows
            ]


def _blob(vector: Vectors) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).reshape(-1).tobytes()


_UPDATE_ROW = (
    "UPDATE memories SET importance=?, confidence=?, last_accessed=?, a_ref=?, d_ref=?, "
    "stability=?, relevance=?, access_count=?, tier=?, invalidated=?, superseded_by=?, "
    "category=?, tokens=? "
    "WHERE namespace=? AND id=?"
)
_UPSERT_VECTOR = "INSERT OR REPLACE INTO vectors(namespace, id, vector) VALUES(?,?,?)"
_UPSERT_META = (
    "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value"
)
_INSERT_EVENT = (
    "INSERT INTO events(at, wall, namespace, memory_id, kind, before, after, detail, mkey, "
    "nkey) VALUES(?,?,?,?,?,?,?,?,?,?)"
)
#: Deferred writes: row updates as SQL parameters (values at hand-off time), and journal
#: entries as queued by :meth:`StateDB.defer` (encoded when written).
#: Rows, journal entries by call, and meta rows (key -> (namespace, JSON value)).
_Batch = tuple[
    list[tuple[Any, ...]],
    list[tuple[float, float, str, list[JournalRow]]],
    dict[str, tuple[str, str]],
]

_NUMERIC_COLUMNS = (
    "importance",
    "confidence",
    "last_accessed",
    "a_ref",
    "d_ref",
    "stability",
    "relevance",
    "access_count",
    "tier",
    "invalidated",
)


def _row_values(
    st: NamespaceState, rows: Iterable[int], keep_tokens: bool
) -> list[tuple[Any, ...]]:
    """``_UPDATE_ROW`` parameters of ``rows``, column by column (``tolist`` gives Python
    numbers without a conversion per value). ``keep_tokens``: write the token counts
    (else ``NULL``, see :meth:`StateDB.use_token_counter`)."""
    index = np.fromiter(rows, dtype=np.int64)
    if not len(index):
        return []
    numeric = [st.cols[name][index].tolist() for name in _NUMERIC_COLUMNS]
    numeric[-1] = [int(v) for v in numeric[-1]]  # invalidated: bool -> 0/1
    ids = [st.ids[i] for i in index.tolist()]
    superseded = [st.superseded_by.get(m) for m in ids]
    categories = [st.category(i) for i in index.tolist()]
    tokens = _stored_tokens(st, index, keep_tokens)
    namespaces = [st.namespace] * len(ids)
    return list(zip(*numeric, superseded, categories, tokens, namespaces, ids, strict=True))


def _stored_tokens(
    st: NamespaceState, rows: Sequence[int] | npt.NDArray[np.int64], keep: bool
) -> list[int | None]:
    """The ``tokens`` column's values for ``rows``: each count (held in memory as count
    + 1, 0 for not counted) or ``NULL``, always ``NULL`` unless counts are kept
    (:meth:`StateDB.use_token_counter`)."""
    if not keep:
        return [None] * len(rows)
    return [t - 1 if t > 0 else None for t in st.cols["tokens"][rows].tolist()]


def _event_values(
    at: float, wall: float, namespace: str, entries: Iterable[JournalRow]
) -> list[tuple[Any, ...]]:
    nkey = namespace_key(namespace)
    return [
        (
            at,
            wall,
            namespace,
            mid,
            kind,
            before,
            after,
            json.dumps(dict(detail)),
            None if mid is None else memory_key(namespace, mid),
            nkey,
        )
        for mid, kind, before, after, detail in entries
    ]


#: Rows per ``executemany`` of a batch. SQLite releases the GIL while it steps, so small
#: chunks keep the writer thread from holding it for long: encoding 512 journal entries
#: in one go held it ~1.5 ms, and a recall on another thread waited for it.
_WRITE_CHUNK = 64


def _write_batch(conn: sqlite3.Connection, batch: _Batch) -> None:
    rows, events, metas = batch
    conn.executemany(_UPSERT_META, [(key, value) for key, (_, value) in metas.items()])
    for start in range(0, len(rows), _WRITE_CHUNK):
        conn.executemany(_UPDATE_ROW, rows[start : start + _WRITE_CHUNK])
    values = (
        value
        for at, wall, namespace, entries in events
        for value in _event_values(at, wall, namespace, entries)
    )
    while chunk := list(itertools.islice(values, _WRITE_CHUNK)):
        conn.executemany(_INSERT_EVENT, chunk)


#: The one row of a summary whose originals were all forgotten (no memory id is empty).
_NO_ORIGINALS = ""


def folder_in_use(folder: Path) -> bool:
    """Whether an Oblivion instance (this or another process on this host) holds the
    store in ``folder`` open: its lock (:func:`take_store_lock`) is taken. Nothing is
    created or kept."""
    try:
        import fcntl
    except ImportError:
        return False  # Windows: no way to tell
    try:
        fd = os.open(folder / StateDB.LOCK, os.O_RDONLY)
    except OSError:
        return False  # no lock file: never opened there
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock, if taken
    return False


def folder_meta(folder: Path, key: str) -> Any:
    """The meta value ``key`` of the activation database in ``folder``, read only;
    ``None`` when there is none to read (no folder, no database, a damaged one)."""
    db = folder / StateDB.FILE
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=1.0)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        finally:
            conn.close()
        return json.loads(row[0]) if row else None
    except (sqlite3.Error, ValueError, TypeError):
        return None


def folder_store_id(folder: Path) -> str | None:
    """The store id of the Oblivion store whose state is in ``folder`` (``None``: none
    to read)."""
    try:
        return _store_id(folder_meta(folder, "store_id"))
    except ValueError:
        return None


def _store_id(value: object) -> str | None:
    """The store id the meta table holds (``None`` before one is made)."""
    if value is not None and not (isinstance(value, str) and re.fullmatch(r"[0-9a-f]{32}", value)):
        raise ValueError(f"{value!r} is not 32 hexadecimal digits")
    return value
