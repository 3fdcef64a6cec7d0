"""The :class:`Oblivion` facade: wires clock, policy, state, store, index and recall.

This is the only class most users touch. It holds no maths of its own: decay and boosts
come from :mod:`decay`, tier moves from :mod:`tiering`, scoring from :mod:`recall`,
packing from :mod:`budget`. It reads the clock once per operation and holds one
re-entrant lock around every state change, so one instance can be shared by threads
(embedding runs outside the lock).

This file holds its construction, lifecycle, policy, reads (``get``, ``records``,
``stats``...), namespaces and the activation arithmetic every call shares. Its other
methods live with their concern, as functions of the engine assigned in its class body:
writing (:mod:`engine_write`), recall's candidates (:mod:`engine_recall`) and ranking
(:mod:`engine_ranking`), activation raised by use (:mod:`engine_feedback`), stale facts
(:mod:`engine_stale`), invalidating and forgetting (:mod:`engine_forget`), maintenance
(:mod:`engine_maintain`), importing a Chroma collection (:mod:`engine_import`),
compacting the vector store's files (:mod:`engine_compact`). Argument
checks are in :mod:`checks`; keeping Chroma equal to SQLite in :mod:`vector_sync`.
"""

from __future__ import annotations

import atexit
import functools
import itertools
import json
import logging
import os
import re
import socket
import sqlite3
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

from oblivion_core import (
    decay,
    engine_compact,
    engine_feedback,
    engine_forget,
    engine_import,
    engine_maintain,
    engine_ranking,
    engine_recall,
    engine_stale,
    engine_write,
    model_check,
)
from oblivion_core.adaptation import Usage, multipliers
from oblivion_core.backup import check_folder, copy_database, refuse_unfinished_backup
from oblivion_core.budget import check_k, resolve_token_counter
from oblivion_core.checks import (
    check_category,
    check_clock_kind,
    check_count,
    check_hooks,
    check_id,
    check_namespace,
    check_reason,
    check_tier,
    clock_kind,
    finite,
    near_category,
    prepare_dir,
    store_path,
    stored_count,
    stored_dim,
    stored_ids,
    stored_policy,
)
from oblivion_core.clock import TurnClock, WallClock
from oblivion_core.compression import ExtractiveSummarizer
from oblivion_core.decay_clock import DecayClock
from oblivion_core.embedding import resolve_embedder
from oblivion_core.errors import (
    InvalidInputError,
    PolicyError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    UnknownMemoryError,
    UnknownNamespaceError,
)
from oblivion_core.importance import HeuristicImportance
from oblivion_core.index import ActiveIndex
from oblivion_core.lexical import LexicalIndex
from oblivion_core.lexical_snapshot import LexicalSnapshots
from oblivion_core.policy import TEMPLATES, Policy, resolve_policy
from oblivion_core.records import COLD, MemoryRecord, Tier
from oblivion_core.space import Space
from oblivion_core.speakers import as_said
from oblivion_core.state import (
    BOOST_KINDS,
    EVENT_KINDS,
    Event,
    NamespaceState,
    StateDB,
    folder_in_use,
    folder_store_id,
)
from oblivion_core.store import VectorStore
from oblivion_core.supersession import SupersessionJudge
from oblivion_core.typing import (
    Clock,
    Embedder,
    ImportanceScorer,
    Summarizer,
    TokenCounter,
    Vectors,
)
from oblivion_core.vector_sync import VectorSync
from oblivion_core.where import Filter, compile_where
from oblivion_core.write_behind import EngineLock

DEFAULT_NAMESPACE = "default"
#: Seconds :meth:`Oblivion.prune_journal` lets go of the engine between its chunks, for
#: the calls waiting to take their turn.
PRUNE_PAUSE = 0.001
_SIGNALS = {
    "support-desk": ("support", "help desk", "helpdesk", "ticket", "customer"),
    "research-assistant": (
        "research",
        "study",
        "studies",
        "analysis",
        "analyses",
        "literature",
    ),
}
_T = TypeVar("_T")
logger = logging.getLogger("oblivion_core")
#: Per-category decay rates and recall betas, indexed like ``NamespaceState.vocab``.
_CategoryParams = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]


def _inherited(pid: int, path: object) -> StoreLockedError:
    """The error of a call on an instance a forked process inherited (:mod:`forks`)."""
    where = "an in-memory store" if path is None else f"the store at {str(path)!r}"
    return StoreLockedError(
        f"this Oblivion instance ({where}) was opened in process {pid}, before this "
        f"process ({os.getpid()}) forked from it: the store's lock, threads and vector "
        "store stay the parent's, and a write here could hang or be written twice. Open "
        "the store after the fork, in each worker, each with its own path (gunicorn: "
        "without --preload, or in a post_fork hook; multiprocessing: the 'spawn' start "
        "method), or share one process's instance between threads. close() here only "
        "marks this copy closed"
    )


class _CloseAtExit:
    """Closes an :class:`Oblivion` still open when the interpreter exits (registered
    with :mod:`atexit`; holds only a weak reference). A forked child inherits the
    registration but not the instance's threads or store: it does nothing there (else
    the child would write the parent's queued updates, and the parent again)."""

    #: Seconds to wait for a call still running on another (daemon) thread.
    WAIT = 10.0

    def __init__(self, ref: weakref.ReferenceType[Oblivion]) -> None:
        self._ref = ref
        self._pid = os.getpid()

    def __call__(self) -> None:
        mem = self._ref()
        if mem is None or mem._closed or os.getpid() != self._pid:
            return
        if not mem._lock.acquire(self.WAIT):
            logger.error(
                "an Oblivion instance at %s was not closed at exit: another thread held it "
                "for %.0f s; its recall boosts since the last write are lost",
                mem.path,
                self.WAIT,
            )
            return
        try:
            mem.close()
        except Exception:
            logger.exception("closing an Oblivion instance at exit failed")
        finally:
            mem._lock.release()


class Oblivion:
    """Decaying, explainable memory for agents.

    Example::

        from oblivion_core import Oblivion

        with Oblivion("./memory") as mem:            # Chroma + SQLite on disk
            mem.remember("Always answer in British English.", category="instruction")
            mem.remember("Lovely weather today!", category="small_talk")
            result = mem.recall("How should I spell colour?", token_budget=200)
            for item in result:
                print(item.text, item.why["explanation"])

    Args:
        path: Directory for the store (created if missing). ``None`` keeps everything
            in memory (tests, scratch work).
        policy: A :class:`Policy` or a template name. ``None`` reuses the policy saved
            in the store, or ``"balanced"``.
        clock: Where "now" comes from. ``None``: a :class:`WallClock` for
            ``policy.clock == "wall"``, a persisted :class:`TurnClock` for ``"turns"``.
            A ``TurnClock`` given to a new store with no ``Policy`` object (``None`` or a
            template name) starts it on the turn clock; one of the other kind than the
            store's or the policy's clock raises :class:`PolicyError`.
        embedder: ``None`` for the local all-MiniLM-L6-v2 (fastembed), any object with
            ``embed_documents``/``embed_query`` (e.g. LangChain ``Embeddings``), or a
            callable ``list[str] -> vectors``.
        token_counter: ``None`` for tiktoken ``cl100k_base``, or any ``str -> int``. Counts
            are kept in the store for a counter with a ``cache_key`` string (the default
            has one); others count each text again after a reopen.
        importance_scorer: Rates importance and infers categories at write time
            (default :class:`HeuristicImportance`).
        vector_store: A :class:`VectorStore` (e.g. ``VectorStore.server(...)`` for a
            Chroma server). Default: embedded Chroma under ``path/chroma``.
        namespace: Namespace used when a call names none.
        supersession_judge: Decides whether a new memory makes an older one stale
            (default: the offline :class:`LexicalSupersession` rule).
        summarizer: Writes the summaries of compressed memories (default: the offline
            :class:`~oblivion_core.compression.ExtractiveSummarizer`).
        max_loaded_namespaces: Hold at most this many namespaces in memory (``None``: no
            limit). Past it, right after the call that loaded one more, the least
            recently used are unloaded (:meth:`unload`): a server with a namespace per
            user keeps the active ones and reads the others back when they return. This
            bounds the engine's memory; the embedded Chroma keeps about 2.6 MB per
            collection opened until it closes (a Chroma server holds them itself).
    """

    #: A namespace with at most this many memories outside the active tier keeps their
    #: vectors in memory as well, once recall first searches its archive, and searches
    #: them exactly (:meth:`ActiveIndex.nearest`) instead of querying Chroma (Chroma
    #: still stores every vector). Below this size that search is faster than Chroma's
    #: HNSW query for the candidates recall asks for, and exact; above it the namespace
    #: goes back to Chroma. ``0`` always queries Chroma. (16,384 before the two-stage
    #: search: deep recall at 35k memories, 29,750 archived, took 3.3-3.4 ms of
    #: Oblivion's own time with the copy against 3.8-4.1 ms through Chroma.)
    EXACT_ARCHIVE_ROWS = 32_768
    #: A namespace with more memories outside the active tier than
    #: :attr:`EXACT_ARCHIVE_ROWS`, and at most this many, keeps their vectors in memory
    #: too, with their signs (:class:`~oblivion_core.sketch.SketchIndex`): the rows
    #: nearest the query by their signs are multiplied in full. Approximate, like
    #: Chroma's HNSW query it replaces, and faster: at 85k archived memories it found
    #: more of the exact best 50 than Chroma's query, in less time (README, "How it
    #: works"). ``0`` leaves archives past :attr:`EXACT_ARCHIVE_ROWS` to Chroma; both at
    #: ``0`` always query Chroma.
    SKETCH_ARCHIVE_ROWS = 131_072
    #: A recall filtered by ``where`` / ``where_document`` that few memories of the
    #: namespace pass scores each of them (exact cosine, BM25 over them alone) instead
    #: of asking each search for more until enough pass (README, "Metadata and text
    #: filters"): at most this many, and at most :attr:`FILTER_SCORED_PER_ROOT` times
    #: the square root of the namespace's size. Scoring costs about as many passing
    #: memories as there are; searching, the share that passes inverted (each search is
    #: widened by it), so the two meet near a multiple of the root: about 3,000 passing
    #: at 20k memories and 7,700 at 100k (``bench/NOTES.md``). ``0`` always searches.
    FILTER_SCORED_ROWS = 8_192
    FILTER_SCORED_PER_ROOT = 22
    #: Rows (vectors and spare ones) held in archive copies of either kind across all
    #: namespaces, checked as a copy is made; the least recently searched namespace's
    #: copy goes first. At 384 dimensions a row takes 1.5 KB, and half again in exact
    #: copies of 8,192 memories or more (the head block of the two-stage search,
    #: :data:`oblivion_core.index.TWO_STAGE_ROWS`); 48 bytes more in a sketch copy: about
    #: 200 MB in all for sketch copies, 300 MB for exact ones. Copies made grow by up to
    #: half again as memories are archived, until the next copy made counts them.
    ARCHIVE_COPY_TOTAL = 131_072
    #: A copy searched within this many seconds is not dropped to make room for another
    #: namespace's (that namespace's archive is searched through Chroma meanwhile): two
    #: large namespaces taking turns would otherwise make their copies again on every
    #: turn, about 1.2 s each at 85k archived memories.
    COPY_KEEP_SECONDS = 60.0
    #: A namespace with at least this many memories has its BM25 index saved beside the
    #: database when the store closes or the namespace is unloaded, and read back on its
    #: next load instead of built from the texts, if none of them changed meanwhile
    #: (:mod:`oblivion_core.lexical_snapshot`): 39 ms against a 0.6 s build at 100k
    #: memories of the latency benchmark's corpus, 1.8 against 5.5 ms at 1,024. Below
    #: it no file is kept (the build takes a few milliseconds).
    LEXICAL_SNAPSHOT_DOCUMENTS = 1_024
    #: Apply a recall's feedback (boosts, spreading, promotions, their journal entries)
    #: on a worker right after the recall returns, instead of before; every other call
    #: waits for it first, so none sees a difference (:mod:`oblivion_core.write_behind`).
    #: ``False`` applies it before the recall returns.
    WRITE_BEHIND = True

    #: Put back, before a namespace's first query or write through the vector store, the
    #: memories whose vectors it lost (a deleted ``chroma/`` folder, a dropped
    #: collection); ``False`` reads only (``oblivion stats`` changes nothing in the store
    #: it inspects).
    REPAIR_ON_LOAD = True
    #: Check, before an instance's first embedding, that its embedder made the store's
    #: vectors (oblivion_core/model_check.py).
    CHECK_MODEL = True

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        policy: Policy | str | None = None,
        clock: Clock | None = None,
        embedder: Embedder | Any = None,
        token_counter: TokenCounter | None = None,
        importance_scorer: ImportanceScorer | None = None,
        vector_store: VectorStore | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        supersession_judge: SupersessionJudge | None = None,
        summarizer: Summarizer | None = None,
        max_loaded_namespaces: int | None = None,
    ) -> None:
        # recall feedback runs after the recall returns (oblivion_core/write_behind.py)
        self._lock = EngineLock()
        self._lock.in_child = functools.partial(_inherited, os.getpid(), path)
        self.max_loaded_namespaces = check_k(max_loaded_namespaces, "max_loaded_namespaces")
        self.default_namespace = check_namespace(namespace)
        self.path = store_path(path)
        check_hooks(importance_scorer, summarizer, supersession_judge, vector_store)
        if self.path is not None:
            prepare_dir(self.path)
        db_file = None if self.path is None else self.path / StateDB.FILE
        if db_file is not None:
            refuse_unfinished_backup(db_file)
        self._db = StateDB(self.path)
        # no activation database yet (or an empty file): the vector store should hold none
        # of this store's memories either (looked at under the store's lock)
        db_existed, db_new = self._db.existed, self._db.new
        try:
            dim = self._db.parsed("dim", stored_dim)  # checked before anything is written
            stored: Policy | None = self._db.parsed("policy", stored_policy)
            switch_to: Policy | None = None  # another policy than the store was closed with
            if policy is None and stored is not None:
                self._policy = stored
            else:
                # a template name keeps the clock the store was written with; in a new
                # store, that of the clock passed (clock=TurnClock(): decay by turns)
                self._policy = resolve_policy(
                    policy, clock=stored.clock if stored else clock_kind(clock)
                )
                if stored is not None and self._policy.clock != stored.clock:
                    raise PolicyError(
                        f"this store decays on the {stored.clock!r} clock but the policy uses "
                        f"{self._policy.clock!r}; pass a policy with clock={stored.clock!r}"
                    )
                if stored is not None and self._policy != stored:
                    # switched below, as set_policy() would: the past decays as it did
                    switch_to, self._policy = self._policy, stored
            self._db.set_meta("policy", self._policy.to_dict())
            self._ns_policy: dict[str, Policy] = {
                ns: self._db.checked(p, f"the policy of namespace {ns!r}", stored_policy)
                for ns, p in self._db.namespaces().items()
                if p is not None
            }
            # every namespace's own ticks, those of namespaces holding no memory too
            turns = (
                (
                    float(self._db.meta("turn") or 0.0),
                    {ns: float(t) for ns, t in self._db.metas("turn:").items() if t is not None},
                )
                if self._policy.clock == "turns"
                else None
            )
            if clock is None:
                clock = WallClock() if turns is None else TurnClock(turns[0], namespaces=turns[1])
            elif isinstance(clock, TurnClock) and turns is not None:
                # a clock of the caller's (a new TurnClock() in a new process) continues
                # where the store stopped: one behind it read every memory at an earlier
                # time (activations rose again) and the next write saved the counts back
                clock.catch_up(*turns)
            if not isinstance(clock, Clock):
                raise InvalidInputError(f"clock must have a now() method, got {clock!r}")
            check_clock_kind(clock, self._policy.clock, stored is not None)
            self.clock: Clock = clock
            self._turns_read: set[str] = set()
            # set by import_chroma() in its thread: its writes tick no turn
            self._no_ticks = threading.local()
            self._turns_saved: dict[str, str] = {}
            if isinstance(clock, TurnClock):
                self._db.carry_meta = self._turn_rows
            self.embedder: Embedder = resolve_embedder(embedder)
            # whether it made the store's vectors: checked before its first use, unless
            # the store held none when opened (what is written now is this instance's)
            self._model_checked = dim is None
            self.token_counter: TokenCounter = resolve_token_counter(token_counter)
            key = getattr(self.token_counter, "cache_key", None)
            self._db.use_token_counter(key if isinstance(key, str) else None)
            self.importance_scorer: ImportanceScorer = importance_scorer or HeuristicImportance()
            self.supersession_judge: SupersessionJudge | None = supersession_judge
            self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
            passed_store = vector_store
            if vector_store is None:
                if self.path is None:
                    vector_store = VectorStore.in_memory()
                else:
                    vector_store = VectorStore.embedded(self.path / "chroma")
            self.store = vector_store
            self._lock.on_call = vector_store.new_call  # a stalled server: see new_call
            self._owns_store = passed_store is None
            store_id = self._db.store_id()
            label = _owner_label(self.path, store_id, shared=passed_store is not None)
            vector_store.bind(
                store_id,
                label,
                original=functools.partial(_original_of, self.path, store_id)
                if passed_store is not None and self.path is not None
                else None,
            )
            self._bound = True
            held = vector_store.held() if db_new else {}
            others = {o: n for o, n in held.items() if o is not None and o != label}
            if others:  # a new store on another's prefix (or chroma/ folder)
                self._db.close(write=False)
                _drop_new_db(db_file, db_existed)
                other, n = next(iter(others.items()))
                raise vector_store.conflict(f"the vector store ({n:,} records here)", other)
            if held:
                held_n = sum(held.values())
                self._db.close(write=False)
                _drop_new_db(db_file, db_existed)
                on_disk = vector_store.folder is not None
                folder = "the chroma/ folder" if on_disk else ""
                if on_disk and vector_store is passed_store:
                    folder = f"the vector store's folder {str(vector_store.folder)!r}"
                fresh = (
                    (
                        f"move {folder} aside too (it keeps every memory's vector and "
                        "text: `oblivion import PATH OLD_CHROMA COLLECTION` brings each "
                        "namespace's collection into the new store, as new memories in the "
                        "namespace it held)"
                        if vector_store.documents
                        else f"move {folder} aside too (it holds vectors only, no texts, "
                        "since documents=False: only a backup brings those memories back)"
                    )
                    if on_disk
                    else "give this store its own prefix on the server "
                    f"(VectorStore.server(..., prefix=...); this one's is {vector_store.prefix!r})"
                    " or delete its collections there"
                )
                other = (
                    ""
                    if vector_store is not passed_store
                    else " If instead another app on a host of the same name, with a state "
                    "folder at the same path (two containers sharing the host's network, "
                    "say), uses this folder, those memories are its: give this store a "
                    "folder of its own and delete nothing."
                    if on_disk
                    else " If instead another app on a host of the same name, with a state "
                    "folder at the same path (two containers sharing the host's network, "
                    "say), uses this prefix, those memories are its: give this store its "
                    "own prefix=... and delete nothing."
                )
                raise StoreCorruptError(
                    f"{db_file} is missing or empty, but the vector store holds {held_n:,} of "
                    "this store's memories: their activation database was lost or truncated. "
                    f"Restore it from a backup; to start over instead, {fresh}.{other}"
                )
            # the chroma/ folder beside the state goes wherever the state folder goes: a
            # store moved whole has not moved to another vector store
            here = vector_store.location
            if self.path is not None and vector_store.folder == (self.path / "chroma").resolve():
                here = "the chroma/ folder beside it"
                if vector_store.prefix:
                    here += f", prefix {vector_store.prefix!r}"
            self._sync = VectorSync(self._db, vector_store)
            self._sync.note_move(here)
            # (put back, removed) by a namespace's load, for a repair_vector_store() loading it
            self._repaired_at_load: dict[str, tuple[int, int]] = {}
            self._dim: int | None = dim
            snapshots = None if self.path is None else LexicalSnapshots(self.path / "lexical")
            self._lex = LexicalIndex(
                self._db.seq_texts,
                snapshots,
                self._db.lexical_generation,
                min_documents=self.LEXICAL_SNAPSHOT_DOCUMENTS,
            )
            # threads start on first use; neither kind of job waits on self._lock
            self._workers = ThreadPoolExecutor(2, thread_name_prefix="oblivion")
            self._next_seq = self._db.next_seq()
            self._spaces: dict[str, Space] = {}
            self._uses = itertools.count()  # orders the namespaces by last use
            self._evicting = False  # an _unload_idle job is queued
            # per namespace: (policy, learned multipliers by category, (rates, betas))
            self._param_cache: dict[str, tuple[Policy, tuple[Any, ...], _CategoryParams]] = {}
            self._hinted: set[str] = set()  # category names _hint_category warned of
            # namespaces whose outdated summaries could not be dropped (engine_forget)
            self._drop_failed: set[str] = set()
            # namespaces with an archive copy, least recently searched first, and when
            # (time.monotonic())
            self._exact_lru: OrderedDict[str, float] = OrderedDict()
            self._known: set[str] = set(self._db.namespaces()) | {self.default_namespace}
            if self._db.meta(StateDB.LEGACY_TIMES):
                self._convert_legacy_times()
        except BaseException:
            self._db.close(write=not db_new)
            if db_new:  # a refused open of a new store leaves none (a policy it refused)
                _drop_new_db(db_file, db_existed)
            if getattr(self, "_owns_store", False):
                self.store.close()
            elif getattr(self, "_bound", False):
                self.store.unbind()
            raise
        self._closed = False
        self._close_failed = False
        # a script that ends without close() still writes its deferred updates
        self._at_exit = _CloseAtExit(weakref.ref(self))
        atexit.register(self._at_exit)
        # an instance dropped without close() and collected releases its own Chroma
        # client too (its files; an in-memory store's collections), as its state does
        self._store_finalizer = (
            weakref.finalize(self, self.store.close) if self._owns_store else None
        )
        if self._store_finalizer is not None:
            self._store_finalizer.atexit = False  # at exit, _at_exit closes it all
        if switch_to is not None:
            try:
                self.set_policy(switch_to, reason="another policy passed to Oblivion()")
            except BaseException:
                self.close()
                raise

    def _convert_legacy_times(self) -> None:
        """Turn a version-2 store's event times into decay clock readings, in one
        transaction: each category's clock is ``(now, 0, rate)`` at the rate in force, a
        memory's reading ``rate * (t_ref - now)``, so every activation stays what it was
        (see :mod:`oblivion_core.decay_clock`)."""
        start = float(self.clock.now())
        with self._db.transaction() as conn:
            clocks: dict[str, DecayClock] = {}
            usages: dict[str, Usage] = {}
            rates = []
            pairs = conn.execute("SELECT DISTINCT namespace, category FROM memories").fetchall()
            for ns, category in pairs:
                if ns not in clocks:
                    clocks[ns] = DecayClock()
                    usages[ns] = self._db.parsed(f"usage:{ns}", Usage.from_json)
                rate = float(decay.half_life_to_rate(self._half_life(ns, category, usages[ns])))
                clocks[ns].pieces[category] = (start, 0.0, rate)
                rates.append((ns, category, rate))
            # one pass over the table (a pass per category took 3-4 s at 100k memories)
            conn.execute(
                "CREATE TEMP TABLE clock_rates (namespace TEXT, category TEXT, rate REAL, "
                "PRIMARY KEY (namespace, category))"
            )
            conn.executemany("INSERT INTO temp.clock_rates VALUES (?, ?, ?)", rates)
            conn.execute(
                "UPDATE memories SET d_ref = (d_ref - ?) * (SELECT rate FROM temp.clock_rates r "
                "WHERE r.namespace = memories.namespace AND r.category = memories.category)",
                (start,),
            )
            conn.execute("DROP TABLE temp.clock_rates")
            for ns, clock in clocks.items():
                self._db.set_meta(f"clock:{ns}", clock.to_json(), conn)
            conn.execute("DELETE FROM meta WHERE key=?", (StateDB.LEGACY_TIMES,))

    # ================================================================ lifecycle
    @contextmanager
    def exclusive(self, *, timeout: float | None = None) -> Iterator[bool]:
        """Hold this instance for several calls in a row: no other thread's call runs
        between them (each call inside takes the lock again, as its own). ``timeout``
        (seconds; ``0``: do not wait) gives up if another call holds it that long, and
        yields ``False`` then (nothing held); ``None`` waits, and yields ``True``. For
        an event loop that must not wait for the engine: ``with mem.exclusive(timeout=0)
        as held:`` runs its calls only if they cannot block."""
        if timeout is not None:
            timeout = finite(timeout, "timeout", "a number of seconds >= 0 or None")
            if timeout < 0:
                raise InvalidInputError(f"timeout must be >= 0 seconds or None, got {timeout}")
        if not self._lock.acquire(-1 if timeout is None else timeout):
            yield False
            return
        try:
            yield True
        finally:
            self._lock.release()

    def close(self) -> None:
        """Flush and release the store (the object is unusable afterwards). The BM25
        indexes of the namespaces searched are saved beside the database for the next
        open (:attr:`LEXICAL_SNAPSHOT_DOCUMENTS`; a failure there is only a warning).

        If the queued activation updates cannot be written, this raises and the instance
        stays open, so ``close()`` can be called again once the cause is fixed. If that
        second call fails too, it raises after releasing the store without them (a
        damaged file would otherwise hold the store's lock for good).
        """
        if self._lock.inherited:  # forked: the parent's to write and release
            self._closed = True
            return
        with self._lock:
            if self._closed:
                return
            try:
                # first: a failure keeps the updates and the instance. The use counters
                # adaptation learns from go with them (maintain() saves them too).
                with self._db.transaction() as conn:
                    for ns, space in self._spaces.items():
                        self._db.set_meta(f"usage:{ns}", space.usage.to_json(), conn)
                    self._save_turns(conn)
            except BaseException:
                if not self._close_failed:
                    self._close_failed = True
                    raise
                self._release(write=False)  # failed twice: let go of the store
                raise
            try:
                for ns in self._spaces:
                    self._save_lexical(ns)
            finally:  # (an interrupt while saving still lets go of the store)
                self._release(write=True)

    def backup(self, folder: str | os.PathLike[str], *, embedder: object = None) -> Path:
        """Copy this store, while it is in use, into ``folder`` (new, or an empty folder),
        and return the path of the copy's activation database.

        The copy is the store as it is now: every namespace's memories with their
        activation, links, summaries, policies, adaptation and journal, and the updates
        still queued (recall boosts) written first. The activation database keeps each
        memory's vector and text, so that is all the copy holds: opened
        (``Oblivion(folder)``, or with any vector store: ``vector_store=``), it copies
        each namespace's memories into its vector store on that namespace's first use,
        as a store moved to a server does (:meth:`repair_vector_store` or :meth:`load`
        does it ahead). Other calls go on while the database is copied: the copy reads
        the state as it was committed when the backup began (SQLite's snapshot of a
        database in WAL mode), and is checked by SQLite (``quick_check``) before it takes
        its name. An in-memory engine (``Oblivion(None)``) is saved to disk this way
        (other calls wait while it is copied).

        To go back to a backup, close the store and open the backup's folder in its
        place. Opened beside the store it was taken from, it is a second store under the
        same id: give it a vector store of its own (the default ``chroma/`` folder
        beside it is), not the original's server prefix.

        ``embedder``: re-embed every memory of the copy with this embedder (any that
        ``Oblivion(embedder=...)`` takes), to move to a new embedding model: open the
        copy with it (``Oblivion(folder, embedder=...)``) and every memory keeps its
        activation, links and journal. The original keeps its vectors. The texts are
        embedded in batches of ``backup.REEMBED_BATCH``, with a progress bar, while
        calls go on; nothing is left in ``folder`` if the embedder fails.

        Raises:
            InvalidInputError: ``folder`` is not a path, or holds files.
            StorePathError: ``folder`` is a file, or cannot be made or written, or a
                store was opened in it while the copy was written (that store is left
                as it is).
            StoreError: the disk is full (nothing is left in ``folder``).
            EmbeddingError: ``embedder`` failed (nothing is left in ``folder``).
        """
        path = check_folder(folder)
        new_model = None if embedder is None else resolve_embedder(embedder)
        with self._lock:
            self._check_open()
            # what is queued (recall boosts, adaptation's counts), which every transaction
            # carries, and the turn clock's ticks no read or write followed
            with self._db.transaction() as conn:
                self._save_turns(conn)
            if self.path is None:  # no other connection sees an in-memory database
                return copy_database(
                    self._db.conn, path, of="an in-memory store", embedder=new_model
                )
            reader = self._db.pinned()
        try:  # the copy reads what was committed above, while calls go on
            return copy_database(reader, path, of=str(self.path), embedder=new_model)
        finally:
            reader.close()

    def _save_lexical(self, ns: str) -> None:
        """Save ``ns``'s BM25 index beside the database (if built and changed since it
        was saved or read), for its next load (:mod:`oblivion_core.lexical_snapshot`).
        Best effort: a failure is logged, and the next load builds it from the texts."""
        try:
            self._lex.save(ns, lambda: self._db.current_lexical_generation(ns))
        except Exception:
            logger.warning(
                "could not save the BM25 index of namespace %r; it is built from the texts "
                "when the namespace is next loaded",
                ns,
                exc_info=True,
            )

    def _release(self, *, write: bool) -> None:
        self._closed = True
        atexit.unregister(self._at_exit)
        self._lock.stop()
        self._workers.shutdown(wait=True)
        try:
            self._db.close(write=write)
        finally:
            if self._owns_store:  # one passed in is its owner's to close
                if self._store_finalizer is not None:
                    self._store_finalizer.detach()
                self.store.close()
            else:  # free to serve another Oblivion store
                self.store.unbind()

    def _background(self, fn: Callable[..., _T], *args: Any) -> Future[_T]:
        """Run ``fn(*args)`` on a worker thread (BM25 beside the query embedding), or
        here if no thread can start (the interpreter shuts down: its main thread ended
        while another still calls in). Refused in a forked child, whose pool's threads
        stayed in the parent (the result would never come)."""
        self._lock.refuse_inherited()
        try:
            return self._workers.submit(fn, *args)
        except RuntimeError as exc:
            if self._closed:  # shut down by a concurrent close()
                raise InvalidInputError("this Oblivion instance is closed; open a new one") from exc
        done: Future[_T] = Future()
        try:
            done.set_result(fn(*args))
        except Exception as exc:
            done.set_exception(exc)
        return done

    def __enter__(self) -> Oblivion:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInputError("this Oblivion instance is closed; open a new one")

    # ================================================================ policy
    @property
    def policy(self) -> Policy:
        """The default policy (namespaces may override it, see :meth:`set_policy`)."""
        return self._policy

    def policy_for(self, namespace: str | None = None) -> Policy:
        """The policy in force for ``namespace``."""
        ns = self._ns(namespace)
        return self._ns_policy.get(ns, self._policy)

    def set_policy(
        self, policy: Policy | str, *, namespace: str | None = None, reason: str | None = None
    ) -> Policy:
        """Switch policy at run time, for one namespace or (``namespace=None``) the default.

        The switch changes future decay only: new half-lives start new pieces of the
        categories' decay clocks at "now" (O(categories)); a new ``floor_fraction`` or
        ``stability_sigma`` also folds the decay so far into every memory's activation
        (O(memories)), and a lower ``cap`` brings the activations above it down to it
        (each such memory's ``history()`` gets a ``"policy"`` entry). The switch is
        recorded in the journal with ``reason`` and the settings it changed
        (``detail["changed"]``: name -> ``[before, after]``). Namespaces read from the
        store for it are let go again (:meth:`unload`).
        """
        if namespace is not None:
            namespace = check_namespace(namespace)
        reason = check_reason(reason)
        if policy is None:  # resolve_policy() reads None as "balanced": not meant here
            raise PolicyError(
                f"set_policy needs a Policy or a template name {list(TEMPLATES)}, got None"
            )
        new = resolve_policy(policy, clock=self._policy.clock)
        if new.clock != self._policy.clock:
            raise PolicyError(
                f"this store decays on the {self._policy.clock!r} clock; pass a policy with "
                f"clock={self._policy.clock!r} (e.g. Policy.template(name, "
                f"clock={self._policy.clock!r}))"
            )
        with self._lock:
            self._check_open()
            # the default applies to the namespaces without a policy of their own
            targets = (
                [namespace]
                if namespace is not None
                else [ns for ns in self._known if ns not in self._ns_policy]
            )
            known = [ns for ns in targets if ns in self._known]
            loaded = set(self._spaces)
            saved = (self._policy, dict(self._ns_policy), set(self._known))
            # what earlier calls queued is written first (as in _consistent): the reload
            # after a failure below would drop it; if this write fails, nothing changed yet
            self._db.flush()
            try:
                rebased: list[tuple[str, float | None]] = []
                for ns in known:
                    before = self._policy_of(ns)
                    lower_cap = new.cap < before.cap
                    if lower_cap or (before.floor_fraction, before.stability_sigma) != (
                        new.floor_fraction,
                        new.stability_sigma,
                    ):
                        self._space(ns)  # loaded before the transaction
                        rebased.append((ns, new.cap if lower_cap else None))
                was = (
                    self._policy
                    if namespace is None
                    else self._ns_policy.get(check_namespace(namespace), self._policy)
                )
                old_d, new_d = was.to_dict(), new.to_dict()
                changed = {k: [old_d.get(k), v] for k, v in new_d.items() if old_d.get(k) != v}
                with self._db.transaction() as conn:
                    for ns, cap in rebased:  # in the switch's transaction: both or neither
                        lowered = self._rebase(self._space(ns), self._now(ns), conn, cap=cap)
                        why = {"reason": f"the policy's cap was lowered to {cap}"}
                        self._db.journal(
                            conn,
                            self._now(ns),
                            ns,
                            [(m, "policy", b, a, why) for m, b, a in lowered],
                        )
                    if namespace is None:
                        old = self._policy.name
                        self._policy = new
                        self._db.set_meta("policy", new.to_dict(), conn)
                    else:
                        ns = check_namespace(namespace)
                        old = self._ns_policy.get(ns, self._policy).name
                        self._ns_policy[ns] = new
                        self._db.add_namespace(ns, conn)
                        conn.execute(
                            "UPDATE namespaces SET policy=? WHERE namespace=?",
                            (json.dumps(new.to_dict()), ns),
                        )
                        self._known.add(ns)
                    for ns in known:  # new half-lives start new clock pieces at now
                        space = self._spaces.get(ns)
                        if space is not None:
                            self._clock_now(ns, space.state, self._now(ns))
                        else:  # not read for this: its Chroma collection is not opened
                            self._restart_clocks(ns, conn)
                    detail = {
                        "from": old,
                        "to": new.name,
                        "reason": reason,
                        "scope": namespace,
                        "changed": changed,  # setting -> [before, after]
                    }
                    for ns in targets:  # journaled in every namespace it applies to
                        entry = (None, "policy", None, None, detail)
                        self._db.journal(conn, self._now(ns), ns, [entry])
            except BaseException:  # the live policies and states agree with the store again
                self._policy, self._ns_policy, self._known = saved
                for ns in known:
                    self._reload(ns)
                raise
            # the namespaces read only for the switch go again (a store of many users,
            # most of them idle or unloaded, would otherwise hold every one of them)
            for ns in known:
                if ns not in loaded:
                    self._unload_or_keep(ns)
        return new

    def use_template_for(self, signal: str, *, namespace: str | None = None) -> Policy:
        """Pick a policy template from a caller's signal and switch to it (journaled).

        The signal is matched by keyword, whole words: "support"/"help desk"/"ticket" ->
        ``support-desk``, "research"/"study"/"analysis" -> ``research-assistant`` (the
        first named, when it names both), anything else -> ``balanced``.
        """
        if not isinstance(signal, str) or not signal.strip():
            raise InvalidInputError(f"signal must be a non-empty string, got {signal!r}")
        # whole words ("unsupported" is no support), the first named winning
        found = [
            (m.start(), template)
            for template, words in _SIGNALS.items()
            for w in words
            if (m := re.search(rf"\b{re.escape(w)}s?\b", signal, re.I)) is not None
        ]
        name = min(found)[1] if found else "balanced"
        return self.set_policy(name, namespace=namespace, reason=f"signal {signal!r}")

    # ====================================================== the parts in their own files
    # Each oblivion_core/engine_*.py holds functions of the engine, assigned here as its
    # methods: the public ones first, then the helpers the others call through ``self``.

    # engine_compact.py: deleted records out of the vector store's files
    compact_vector_store = engine_compact.compact_vector_store

    # engine_import.py: a Chroma collection made memories
    import_chroma = engine_import.import_chroma
    _importable = engine_import._importable

    # engine_write.py: writing
    _check_model = model_check.check_model
    remember = engine_write.remember
    remember_many = engine_write.remember_many
    edit = engine_write.edit
    _model_dim = engine_write._model_dim
    _judge_outside_the_lock = engine_write._judge_outside_the_lock
    _store_new = engine_write._store_new
    _queue_usage = engine_write._queue_usage
    _release_supersession = engine_write._release_supersession
    _repoint = engine_write._repoint

    # engine_recall.py: recall's candidates (the active tier, the archive, BM25, filters)
    recall = engine_recall.recall
    rerank = engine_recall.rerank
    query_vector = engine_recall.query_vector
    _recall = engine_recall._recall
    _archived_share = staticmethod(engine_recall._archived_share)
    _hidden = staticmethod(engine_recall._hidden)
    _filter_mask = engine_recall._filter_mask
    _few_passing = engine_recall._few_passing
    _scored_limit = engine_recall._scored_limit
    _exact_archive = engine_recall._exact_archive
    _copy_total = engine_recall._copy_total
    _copy_kind = engine_recall._copy_kind
    _written_texts = engine_recall._written_texts
    _list_items = engine_recall._list_items
    _named = engine_recall._named
    _current = engine_recall._current
    _standing = engine_recall._standing
    _standing_recall = engine_recall._standing_recall
    _cosines = engine_recall._cosines

    # engine_ranking.py: recall's scores, token budget and explanations
    _score_and_pack = engine_ranking._score_and_pack
    _item = engine_ranking._item
    _token_counts = engine_ranking._token_counts
    _costs = engine_ranking._costs
    _expansions = engine_ranking._expansions

    # engine_feedback.py: activation raised by use, and links
    mark_used = engine_feedback.mark_used
    reinforce = engine_feedback.reinforce
    confirm = engine_feedback.confirm
    link = engine_feedback.link
    links = engine_feedback.links
    _feedback = engine_feedback._feedback
    _apply_later = engine_feedback._apply_later
    _apply_feedback = engine_feedback._apply_feedback
    _hand_off = engine_feedback._hand_off
    _bump = engine_feedback._bump
    _auto_link = engine_feedback._auto_link
    _usable_links = staticmethod(engine_feedback._usable_links)
    _spread = engine_feedback._spread

    # engine_stale.py: stale facts
    supersede = engine_stale.supersede
    _detect_supersession = engine_stale._detect_supersession
    _stale_candidates = engine_stale._stale_candidates
    _judge_stale = engine_stale._judge_stale
    _apply_stale = engine_stale._apply_stale
    _set_superseded = engine_stale._set_superseded

    # engine_forget.py: invalidating and forgetting
    clear = engine_forget.clear
    invalidate = engine_forget.invalidate
    forget = engine_forget.forget
    forget_many = engine_forget.forget_many
    forget_where = engine_forget.forget_where
    _summaries_of = staticmethod(engine_forget._summaries_of)
    _drop_summaries = engine_forget._drop_summaries
    _drop_outdated = engine_forget._drop_outdated
    _note_outdated = engine_forget._note_outdated
    _noted_outdated = engine_forget._noted_outdated
    _clear_outdated = engine_forget._clear_outdated
    _delete = engine_forget._delete
    _restore_in_chroma = engine_forget._restore_in_chroma

    # engine_maintain.py: tier moves, compression, promotion
    maintain = engine_maintain.maintain
    expand = engine_maintain.expand
    decompress = engine_maintain.decompress
    _maintain = engine_maintain._maintain
    _compression_groups = engine_maintain._compression_groups
    _compress = engine_maintain._compress
    _originals = engine_maintain._originals
    _free_originals = engine_maintain._free_originals
    _move_to_active = engine_maintain._move_to_active
    _room_for = engine_maintain._room_for
    _promote = engine_maintain._promote

    # ================================================================ reading
    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryRecord:
        """One memory with its activation now."""
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            return self._record(ns, self._row(space, memory_id), self._now(ns))

    def records(
        self,
        *,
        namespace: str | None = None,
        tier: Tier | str | None = None,
        where: Mapping[str, Any] | Filter | None = None,
        where_document: Mapping[str, Any] | None = None,
        order: str = "written",
        limit: int | None = None,
        offset: int = 0,
    ) -> list[MemoryRecord]:
        """Every memory of a namespace, oldest first; optionally of one tier (a
        :class:`Tier` or its label, ``"active"``, ``"archive"`` or ``"cold"``), and only
        those whose metadata and text pass ``where`` and ``where_document`` (as
        :meth:`recall` takes them; Chroma's ``collection.get(where=...)``). Reads only:
        nothing is boosted.

        ``order="activation"`` lists the most active first, and the most recently
        written first among equally active ones. ``limit`` and ``offset`` take a page of
        the list: only that page's records are read (their texts and metadata), so the
        100 most active of a large namespace cost little more than 100 records.
        """
        tier = check_tier(tier)
        filtered = compile_where(where, where_document)
        if order not in ("written", "activation"):
            raise InvalidInputError(
                f"order must be 'written' (oldest first) or 'activation' (most active "
                f"first), got {order!r}"
            )
        limit = check_k(limit, "limit")
        offset = check_count(offset, "offset")
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            now = self._now(ns)
            st = space.state
            rows = self._selected(ns, space, tier, filtered)
            if order == "activation" and len(rows):
                acts = self._activation(ns, st, now, rows)
                # most active first; among equal ones, the latest written (highest seq)
                rows = rows[np.lexsort((-st.cols["seq"][rows], -acts))]
            else:
                rows = rows[np.argsort(st.cols["seq"][rows])]
            end = None if limit is None else offset + limit
            return self._records(ns, rows[offset:end].tolist(), now)

    def _selected(
        self, ns: str, space: Space, tier: Tier | None, where: Filter | None
    ) -> np.ndarray[Any, Any]:
        """Rows of the namespace's memories of ``tier`` and passing ``where`` if given,
        in row order (:meth:`records` sorts them as asked)."""
        st = space.state
        rows = np.arange(st.n) if tier is None else np.flatnonzero(st.col("tier") == int(tier))
        if where is not None and len(rows):
            passes = self._filter_mask(ns, space, where)
            rows = rows[passes([st.ids[r] for r in rows.tolist()])]
        return rows

    def _oldest_first(
        self, ns: str, space: Space, tier: Tier | None, where: Filter | None
    ) -> np.ndarray[Any, Any]:
        """:meth:`_selected` in write order (what :meth:`forget_where` deletes)."""
        rows = self._selected(ns, space, tier, where)
        return rows[np.argsort(space.state.cols["seq"][rows])]

    def history(
        self,
        memory_id: str | None = None,
        *,
        namespace: str | None = None,
        last: int | None = None,
    ) -> list[Event]:
        """The journal, oldest first: every recorded change of one memory (or of the
        namespace), or with ``last`` only the newest ``last`` of them (a namespace's
        journal gains about 36 entries per recall). A deleted memory's entries stay."""
        if memory_id is not None:
            memory_id = check_id(memory_id)
        last = check_k(last, "last")
        if last is not None:
            last = min(last, 2**63 - 1)  # SQLite's LIMIT: beyond it, every entry
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            if self._db.path is None:
                return self._db.events(ns, memory_id, last)
            self._db.flush()  # what was recorded until now, committed
        # read and decoded outside the lock (150k entries took 2.4 s, other calls waiting)
        try:
            return self._db.events(ns, memory_id, last, committed=True)
        except (StoreError, sqlite3.ProgrammingError):
            self._check_open()  # closed meanwhile: said as any call on a closed instance is
            raise

    def prune_journal(
        self,
        older_than: float,
        *,
        namespace: str | None = None,
        kinds: Sequence[str] = BOOST_KINDS,
    ) -> int:
        """Delete journal entries of ``kinds`` older than ``older_than`` clock units (seconds
        on the wall clock, interactions on the turn clock); returns how many.

        The journal grows with every recall: an entry per memory returned ("recall") and
        per memory its boost spread to ("spread"), about 36 entries and 4 KB per recall with
        the default policy. Those two kinds are the bulk and are what this drops by
        default; activation is not touched (it lives in the state, the journal only
        records its changes), and neither are writes, confirmations, invalidations,
        supersessions, tier moves or policy changes unless named in ``kinds``. Runs in
        chunks of ``StateDB.PRUNE_CHUNK`` entries, each its own short transaction.
        ``Policy.journal_keep`` has ``maintain()`` do the same, a chunk per call.

        Raises:
            InvalidInputError: ``older_than`` is negative or not a finite number, or
                ``kinds`` is empty or holds anything but a kind of
                :data:`~oblivion_core.EVENT_KINDS`.
            UnknownNamespaceError: the namespace does not exist.
        """
        older_than = finite(older_than, "older_than", "a number of clock units >= 0")
        if older_than < 0:
            raise InvalidInputError(
                f"older_than must be a finite number >= 0 (clock units), got {older_than!r}"
            )
        if isinstance(kinds, Iterable) and not isinstance(kinds, str | bytes | Mapping):
            kinds = list(kinds)  # a generator is read once, here
        if (
            not isinstance(kinds, list)
            or not kinds
            or not all(isinstance(k, str) and k for k in kinds)
        ):
            raise InvalidInputError(
                f"kinds must be a non-empty list of journal kinds such as 'recall', got {kinds!r}"
            )
        unknown = [k for k in kinds if k not in EVENT_KINDS]
        if unknown:  # a typo deleted nothing, silently
            raise InvalidInputError(
                f"unknown journal kinds {unknown}: kinds are {', '.join(EVENT_KINDS)} "
                "(oblivion_core.EVENT_KINDS)"
            )
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            self._space(ns)  # raises for an unknown namespace
            before = float(self._now(ns)) - float(older_than)
            chunks = self._db.prune_events(
                ns, before, list(dict.fromkeys(kinds)), own_clock=self._own_clock
            )
        total = 0
        while True:
            with self._lock:  # one chunk at a time: recalls and writes go on in between
                self._check_open()
                deleted = next(chunks, None)
            if deleted is None:
                return total
            total += deleted
            # the lock is not fair: taken again at once, a thread waiting for it never
            # got it (a recall waited the whole prune, 1.6 s for 210k entries)
            time.sleep(PRUNE_PAUSE)

    def namespaces(self) -> list[str]:
        """Every namespace that exists (the default one always does)."""
        with self._lock:
            self._check_open()
            return sorted(self._known)

    def loaded_namespaces(self) -> list[str]:
        """The namespaces whose state this instance holds in memory: each is read from
        the store when first used and kept until :meth:`unload` or :meth:`close` (or,
        with ``max_loaded_namespaces``, until others were used more recently)."""
        with self._lock:
            self._check_open()
            return sorted(self._spaces)

    def load(self, *, namespace: str | None = None, archive: bool = True) -> bool:
        """Read a namespace into memory now, so its first calls do not pay for it: its
        state, links and active tier, its BM25 index and, with ``archive``, the
        in-memory copy of its archive that its first archive search would make. For a
        server's start, or a user about to come back after :meth:`unload`.

        A reopened store of 100k memories took about 1 s for the first (its BM25 index
        read back from the copy saved at close) and 0.3-0.4 s more for the archive's
        copy (``bench/latency.py``, "reopen"); 10k memories about 0.15 and 0.1 s.
        Nothing stored changes; a namespace loaded already gets what it lacks.

        Returns:
            Whether the namespace was loaded before.

        Raises:
            UnknownNamespaceError: no such namespace.
        """
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            was = ns in self._spaces
            space = self._space(ns)
            space.graph  # noqa: B018 (its links, which a load leaves to their first use)
            if archive:  # none if nothing is outside the tier (or too much is)
                self._exact_archive(ns, space)
        # outside the engine's lock, as a recall's first search builds it (it reads the
        # committed texts on a connection of its own)
        try:
            self._lex.build(ns)
        except Exception:
            self._check_open()  # closed meanwhile: said as any call on a closed instance is
            raise
        return was

    def unload(self, *, namespace: str | None = None) -> bool:
        """Let go of a namespace's in-memory state until it is next used.

        Every namespace used since the engine opened stays in memory: its activation
        columns, the vectors of its active tier (1.5 KB per memory with the default
        384-dimension model, 2.3 KB in a tier of 8,192 or more), its BM25 index, links
        and summaries, and the vector store's handle on its collection. A process
        serving many users, a namespace each, can unload those gone idle, or have the
        least recently used past some number unloaded for it (``max_loaded_namespaces``).
        What is queued for the namespace (activation updates, recall feedback, use
        counters) is written first, and its BM25 index saved beside the database
        (namespaces of :attr:`LEXICAL_SNAPSHOT_DOCUMENTS` memories or more); the next
        call that uses it reads it back from the store, as reopening the store would.
        Nothing stored changes.

        Returns:
            Whether the namespace was loaded.

        Raises:
            UnknownNamespaceError: no such namespace.
            StoreLockedError: the queued updates could not be written (another process
                holds the database); the namespace stays loaded, call again later.
        """
        ns = self._ns(namespace)
        with self._lock:  # taking it applies the feedback of recalls that returned
            self._check_open()
            return self._unload(ns)

    def _unload(self, ns: str) -> bool:
        space = self._spaces.get(ns)
        if space is None:
            return False
        # the updates every call queued, this namespace's use counters with them;
        # a failure raises here, with nothing dropped
        with self._db.transaction() as conn:
            self._db.set_meta(f"usage:{ns}", space.usage.to_json(), conn)
        self._db.forget_cached(ns)  # its texts and metadata (the held ones too)
        self._reload(ns)
        self._save_lexical(ns)
        self._lex.drop(ns)
        self.store.release(ns)
        return True

    def count(self, *, namespace: str | None = None, category: str | None = None) -> int:
        """Number of memories in a namespace (of one ``category``, if given)."""
        ns = self._ns(namespace)
        if category is not None:
            category = check_category(category)
        with self._lock:
            self._check_open()
            if ns not in self._spaces:  # counted where it is, not loaded for it
                return self._db.count(ns, category)
            st = self._space(ns).state
            if category is None:
                return st.n
            if category not in st.vocab:
                return 0
            return int(np.count_nonzero(st.col("cat") == st.cat_id(category)))

    def stats(self, *, namespace: str | None = None) -> dict[str, Any]:
        """Tier sizes, per-category activation and adapted parameters, policy and clock."""
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            st = space.state
            policy = self.policy_for(ns)
            now = self._now(ns)
            act = self._activation(ns, st, now)
            tiers = st.col("tier")
            cats: dict[str, Any] = {}
            codes = st.col("cat")
            # every category with a memory, and every one whose use is counted (after its
            # last memory went too, also once reopened: its vocabulary entry is gone then;
            # code -1 matches no row)
            for name in dict.fromkeys([*st.vocab, *space.usage.categories]):
                mask = codes == (st.cat_id(name) if name in st.vocab else -1)
                if not mask.any() and name not in space.usage.categories:
                    continue
                u = space.usage.of(name)
                hl_mult, beta_mult = multipliers(u, policy, name)
                cats[name] = {
                    "count": int(mask.sum()),
                    "active": int((mask & (tiers == Tier.ACTIVE)).sum()),
                    "mean_activation": float(act[mask].mean()) if mask.any() else None,
                    "half_life": self._half_life(ns, name),
                    "beta": self._beta(ns, name),
                    "half_life_multiplier": hl_mult,
                    "beta_multiplier": beta_mult,
                    "window": {
                        "stored": u.stored,
                        "recalled": u.recalled,
                        "archive_hits": u.archive_hits,
                        "used": u.used,
                        "archived": u.archived,
                    },
                }
            return {
                "namespace": ns,
                "now": now,
                "clock": policy.clock,
                "policy": policy.name,
                "memories": st.n,
                "active": int((tiers == Tier.ACTIVE).sum()),
                "archive": int((tiers == Tier.ARCHIVE).sum()),
                "cold": int((tiers == Tier.COLD).sum()),
                "invalidated": int(st.col("invalidated").sum()),
                "superseded": len(st.superseded_by),
                "links": len(space.graph),
                "summaries": len(space.summaries),
                "flagged_for_review": dict(space.review),
                "thresholds": {
                    "archive_low": policy.archive_low,
                    "archive_high": policy.archive_high,
                },
                "active_capacity": policy.active_capacity,
                "active_target": policy.active_target(st.n),
                # whether an archive copy is held now, and how the last archive search
                # of this process ran: "exact" or "sketch" (a copy), "chroma", or None
                "archive_in_memory": space.archive is not None,
                "archive_search": space.archive_searched,
                "categories": cats,
            }

    # ================================================================ internals
    def _vectors(self, ns: str, space: Space | None, ids: list[str]) -> dict[str, Vectors]:
        """Stored vectors by id: from the active index, else SQLite, else Chroma (stores
        written before vectors were kept in SQLite)."""
        out: dict[str, Vectors] = {}
        missing: list[str] = []
        for m in ids:
            vec = space.vector(m) if space is not None else None
            if vec is None:
                missing.append(m)
            else:
                out[m] = vec
        if missing:
            out.update(self._db.vectors(ns, missing))
            missing = [m for m in missing if m not in out]
        if missing:
            out.update(self.store.vectors(ns, missing))
        return out

    def _said(self, ns: str, ids: list[str]) -> dict[str, str]:
        """Texts of memories ``ids`` as the stale-fact rule reads them: opened with the
        chat role their metadata names (:func:`~oblivion_core.speakers.as_said`)."""
        return {m: as_said(text, meta) for m, (text, meta) in self._db.contents(ns, ids).items()}

    def _ns(self, namespace: str | None) -> str:
        ns = self.default_namespace if namespace is None else check_namespace(namespace)
        if ns not in self._known:
            # the first few: a store of a namespace per user would put thousands of other
            # users' ids in every log line
            names = sorted(self._known)
            known = ", ".join(repr(n) for n in names[:10])
            if len(names) > 10:
                known += f", ... ({len(names)} in all: namespaces() lists them)"
            problem = f"namespace {ns!r} has no memories yet (known namespaces: {known})"
            # reads and deletes get this too: the advice fits them as well as writes
            raise UnknownNamespaceError(
                f"{problem}: check its name; a namespace comes into being with its first "
                "remember(), and `name in namespaces()` tells a new user's apart without "
                "an error",
                problem=problem,
            )
        return ns

    def _now(self, ns: str) -> float:
        """The time of namespace ``ns``: on a :class:`TurnClock`, its own interactions
        (plus the ticks every namespace shares); on any other clock, the clock's time."""
        clock = self.clock
        if isinstance(clock, TurnClock):
            self._turns_read.add(ns)  # the next write saves its count (_turn_rows)
            now = clock.now(ns)
        else:
            now = clock.now()
        return finite(now, "the clock's now()", "a finite number (check the clock you passed)")

    def _save_turns(self, conn: sqlite3.Connection) -> None:
        """Write the turn clock's counts, shared and per namespace, in ``conn``'s
        transaction: ticks no write followed (``close()``, ``backup()``)."""
        if isinstance(self.clock, TurnClock):
            self._db.set_meta("turn", self.clock.shared, conn)
            for ns, turns in self.clock.owned().items():
                self._db.set_meta(f"turn:{ns}", turns, conn)

    def _turn_rows(self) -> dict[str, str]:
        """The turn counts of the namespaces whose time was read since the last write,
        where they changed (``StateDB.carry_meta``): a change computed at a ticked time
        (``maintain()`` after ``clock.tick()``) used to be saved without that tick, which
        only ``close()`` and writes saved, so a killed process reopened with its clock
        behind its own state."""
        if not self._turns_read:
            return {}
        clock = cast(TurnClock, self.clock)
        rows = {"turn": clock.shared} | {f"turn:{ns}": clock.own(ns) for ns in self._turns_read}
        self._turns_read.clear()
        out: dict[str, str] = {}
        for key, value in rows.items():
            encoded = json.dumps(value)
            if self._turns_saved.get(key) != encoded:
                self._turns_saved[key] = out[key] = encoded
        return out

    @contextmanager
    def _consistent(self, ns: str, *, write_queued: bool = True) -> Iterator[None]:
        """Around a change that edits the in-memory state of ``ns`` before its transaction
        commits: if anything fails, that state is dropped and rebuilt from the database
        on next use, so the live instance agrees with the store again (the failed
        transaction rolled back).

        Updates earlier calls queued (recall boosts, their journal entries) are written
        first: a reload would drop them, and they were done. If that write fails (the
        database is locked), nothing has changed yet: the error is raised and they stay
        queued for the next write. ``write_queued=False``: a recall's own feedback, which
        only queues (it never writes, so a lock cannot fail it) and must not cost every
        recall a commit."""
        if write_queued:
            self._db.flush()
        try:
            yield
        except BaseException:
            self._reload(ns)
            raise

    def _reload(self, ns: str) -> None:
        """Drop the in-memory state of ``ns``; :meth:`_space` reads it back."""
        space = self._spaces.pop(ns, None)
        if space is not None:
            self._db.drop_deferred(space.state)
        self._db.release(ns)  # loading holds the tier the store has
        self._param_cache.pop(ns, None)
        self._exact_lru.pop(ns, None)
        self._repaired_at_load.pop(ns, None)

    def _space(self, ns: str, *, create: bool = False) -> Space:
        space = self._spaces.get(ns)
        if space is None:
            space = self._load(ns, create)
        space.used = next(self._uses)
        return space

    def _load(self, ns: str, create: bool) -> Space:
        """Read namespace ``ns`` from the store into memory."""
        if ns not in self._known and not create:
            raise UnknownNamespaceError(f"namespace {ns!r} does not exist")
        st = self._db.load(ns)
        index = ActiveIndex(self._dim)
        active = [st.ids[i] for i in np.flatnonzero(st.col("tier") == Tier.ACTIVE)]
        if active:
            vecs = self._vectors(ns, None, active)
            have = [m for m in active if m in vecs]
            if have:
                index.add(have, np.stack([vecs[m] for m in have]), st.seqs_of(have))
        # (an empty namespace too after a move: an older copy there may hold records)
        if (st.n or ns in self._sync.moving) and self.REPAIR_ON_LOAD:
            if ns in self._sync.moving or self._db.vector_count(ns) < st.n:
                # copied to the store it moved to now; or Chroma holds the only vector
                # of some (a version-1 store): what it lost is lost, and said now
                repaired = self._sync.restore_lost(ns, st)
                if any(repaired):  # for a repair_vector_store() that loaded it
                    self._repaired_at_load[ns] = repaired
            else:
                # what the vector store lost is put back before the namespace's first
                # Chroma query or write (VectorSync.check), not now: counting the
                # collection opened it, and a namespace recalled in process never needs
                # it (a user's first recall after a restart took 26 ms against 3 ms,
                # and Chroma's 2.6 MB)
                self.store.unchecked.add(ns)
            self._sync.resync(ns, st)
        usage = self._db.parsed(f"usage:{ns}", Usage.from_json)
        space = Space(st, index, usage)
        space.writes_since_maintain = self._db.parsed(f"writes:{ns}", stored_count)
        space.read_links_later(lambda: self._db.links(ns))
        space.review = self._db.review(ns)
        space.summaries = self._db.summaries(ns)
        space.uncompressed = self._db.parsed(f"uncompressed:{ns}", stored_ids)
        space.last_write = self._last_turn(space)
        db = self._db
        space.on_tier = lambda ids, active: (db.hold if active else db.release)(ns, ids)
        # the active tier's texts and metadata, read now in one scan: every recall shows
        # some (a reopened store's first recalls otherwise read them one query each);
        # a namespace that fails to load holds none
        db.hold(ns, active)
        try:
            db.read_held(ns)
        except BaseException:
            db.release(ns)
            raise
        self._spaces[ns] = space
        # rates that changed while the store was closed (another policy passed to the
        # constructor) start new clock pieces now: the past decayed at the old rates
        self._clock_now(ns, st, self._now(ns))
        # summaries a crash (or a failed drop) left after a change made them outdated:
        # dropped by the namespace's next recall, write or maintain(), as after the
        # change (not here: a caller's rows, or a recall's feedback queued by row,
        # would move)
        if ns not in self._drop_failed:  # else tried again by maintain()
            space.outdated.update(self._noted_outdated(ns))
        limit = self.max_loaded_namespaces
        if limit is not None and len(self._spaces) > limit and not self._evicting:
            self._evicting = True
            self._lock.later(self._unload_idle)
        return space

    def _unload_idle(self) -> None:
        """Unload the least recently used namespaces past ``max_loaded_namespaces``
        (queued by the call that loaded one more; runs under the lock after it)."""
        # the jobs queued before this one have run; those queued after it are the
        # feedback of the call that queued it, for the namespaces it used last
        self._evicting = False
        limit = self.max_loaded_namespaces
        if self._closed or limit is None or len(self._spaces) <= limit:
            return
        idle = sorted(self._spaces, key=lambda n: self._spaces[n].used)
        for ns in idle[: len(self._spaces) - limit]:
            if not self._unload_or_keep(ns):  # tried again when a namespace is next loaded
                return

    def _unload_or_keep(self, ns: str) -> bool:
        """:meth:`_unload` for the engine's own housekeeping: if the queued updates
        cannot be written (the database locked), the namespace stays loaded, with a
        warning, instead of failing the call that happened to run it."""
        try:
            self._unload(ns)
        except Exception:
            logger.warning("namespace %r could not be unloaded; it stays loaded", ns, exc_info=True)
            return False
        return True

    def repair_vector_store(
        self, *, namespace: str | None = None, remove_unknown: bool = False
    ) -> dict[str, int]:
        """Make the vector store hold exactly the namespace's memories: those it lacks
        are put back from the vectors SQLite keeps, records of no memory are removed, and
        a record an edit changed in Chroma but not in SQLite (the edit failed, and Chroma
        was out of reach to undo it) is written again as SQLite holds it.

        Records of no memory that the journal never saw are removed only when they are
        few (at most 64, or 5 % of the namespace: what an interrupted write leaves), or
        with ``remove_unknown=True``. More may be memories the activation database lost
        (its ``-wal`` file lost after a crash, an older copy of it restored), of which
        they are the only copy: they are kept, with a warning, and recall does not show
        them. ``import_chroma(mem.store.collection(namespace), namespace=namespace)``
        brings them back as memories.

        A namespace is checked by its record count when first used (the lost ones are put
        back then); this compares every id (about 1 s per 100k memories), for when the
        counts may agree by chance: a ``chroma/`` backup restored over a store that has
        since forgotten as many memories as it wrote, crashes on both sides. Other calls
        on this instance wait meanwhile.

        Returns:
            ``{"put_back": ..., "removed": ...}``, counts of records (those written again
            count as put back).

        Raises:
            VectorStoreError: the vector store could not be reached; call again later.
        """
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            loaded = ns in self._spaces
            st = self._space(ns).state
            at_load = (0, 0) if loaded else self._repaired_at_load.pop(ns, (0, 0))
            # the records a failed write left, deleted by the resync, count as removed
            before = self.store.ids(ns)
            rewritten, gone = self._sync.resync(ns, st, strict=True)
            held = self.store.ids(ns) if gone or rewritten else before
            deleted = len(before.intersection(gone))
            self.store.unchecked.discard(ns)
            put_back, removed = self._sync.restore_lost(ns, st, held, remove_unknown=remove_unknown)
            return {
                "put_back": at_load[0] + put_back + rewritten,
                "removed": at_load[1] + removed + deleted,
            }

    @property
    def _own_clock(self) -> bool:
        """Whether each namespace counts its own time (a :class:`TurnClock` decaying the
        turns policy): their journal times are then not comparable."""
        return isinstance(self.clock, TurnClock) and self._policy.clock == "turns"

    @staticmethod
    def _last_turn(space: Space) -> tuple[str, float] | None:
        """The memory written last and when, for the next write's adjacency link: a
        summary compression wrote is not a turn (as the live instance has it)."""
        st = space.state
        for seq in reversed(st.seqs):
            last = st.by_seq.get(seq)  # None: a deleted one's number (NamespaceState.seqs)
            if last is not None and last not in space.summaries:
                return last, float(st.cols["created_at"][st.index[last]])
        return None

    @staticmethod
    def _neighbours(
        st: NamespaceState, policy: Policy, memory_id: str, summaries: Container[str]
    ) -> list[tuple[str, str]]:
        """The memories written just after and just before ``memory_id`` in its namespace,
        within the adjacency window, that recall may show (next first). A summary is no
        turn of the conversation: it has none, and is none (``summaries``)."""
        if memory_id in summaries:
            return []
        i = st.index[memory_id]
        t = float(st.cols["created_at"][i])
        out: list[tuple[str, str]] = []
        after, before = st.adjacent(int(st.cols["seq"][i]), summaries)
        for which, other in (("next", after), ("previous", before)):
            if other is None:
                continue
            j = st.index[other]
            if (
                abs(float(st.cols["created_at"][j]) - t) <= policy.adjacency
                and not st.cols["invalidated"][j]
                and not st.cols["superseded"][j]
                and st.cols["tier"][j] != COLD
            ):
                out.append((which, other))
        return out

    @staticmethod
    def _chain_head(st: NamespaceState, memory_id: str, cold: bool = False) -> str:
        """The newest valid memory of a supersession chain (cycle-safe): successors that
        were invalidated or deleted, or are cold (behind a summary) unless ``cold`` (a
        recall that shows cold memories), do not count, so the fact stays recallable."""
        return Oblivion._chain_heads(st, (memory_id,), cold)[memory_id]

    @staticmethod
    def _chain_heads(st: NamespaceState, ids: Iterable[str], cold: bool = False) -> dict[str, str]:
        """:meth:`_chain_head` of each of ``ids``, each chain walked once: one walk per
        statement cost a recall O(length²) on a long chain (a status restated every day:
        0.54 s at 2,000 statements)."""
        invalid, tier = st.cols["invalidated"], st.cols["tier"]

        def valid(node: str) -> bool:
            j = st.index[node]
            return not invalid[j] and (cold or tier[j] != COLD)

        later: dict[str, str | None] = {}  # the newest valid memory after a node, if any
        out: dict[str, str] = {}
        for m in ids:
            path: list[str] = []  # the walk from m: m, then each successor but the last
            node, seen, cycle = m, {m}, False
            while node not in later:
                nxt = st.superseded_by.get(node)
                if nxt is None or nxt not in st.index:
                    later[node] = None
                    break
                if nxt in seen:
                    cycle = True
                    break
                seen.add(nxt)
                path.append(node)
                node = nxt
            if cycle:  # back to a node of this walk: the last valid one walked past m
                walked = [n for n in (*path[1:], node) if valid(n)]
                out[m] = walked[-1] if walked else m
                continue
            for p in reversed(path):
                q = st.superseded_by[p]
                after = later[q]
                later[p] = after if after is not None else (q if valid(q) else None)
            out[m] = later[m] or m
        return out

    def _row(self, space: Space, memory_id: str) -> int:
        if not isinstance(memory_id, str):
            raise InvalidInputError(f"memory ids are strings, got {type(memory_id).__name__}")
        i = space.state.row(memory_id)
        if i is None:
            raise UnknownMemoryError(
                f"no memory {memory_id!r} in namespace {space.state.namespace!r}; check the id "
                "(ids come from remember() / recall() results) and the namespace"
            )
        return i

    def _hint_category(self, ns: str, category: str, standing: bool = False) -> None:
        """Warn, once per name, when ``category`` (written, or ``standing=``) is none of
        the policy's or namespace ``ns``'s categories and only mistypes one of them
        ("Instruction", "instructions"): written, it makes a new category, decaying at
        the default category's rate and not protected; standing, it shows nothing."""
        policy = self._policy_of(ns)
        if category in self._hinted or category in policy.half_lives:
            return
        space = self._spaces.get(ns)
        known = [*sorted(policy.half_lives), *sorted(policy.protected_categories)]
        near = near_category(category, [*known, *space.state.vocab] if space else known)
        if near is None:
            return
        self._hinted.add(category)
        if standing:
            logger.warning(
                "standing=%r names no category of namespace %r or its policy, only one like "
                "%r: no memory stands for it. Pass %r if that was meant (said once)",
                category,
                ns,
                near,
                near,
            )
        else:
            logger.warning(
                "category %r is no category of namespace %r or its policy, only like %r: "
                "it is a new one, decaying at the default category's rate (%r) and not "
                "protected. Pass %r if that was meant (said once)",
                category,
                ns,
                near,
                policy.default_category,
                near,
            )

    def _policy_of(self, ns: str) -> Policy:
        """:meth:`policy_for` without the checks, for a namespace already resolved."""
        return self._ns_policy.get(ns, self._policy)

    def _half_life(self, ns: str, category: str, usage: Usage | None = None) -> float:
        """The policy's half-life of ``category`` times its learned multiplier (from
        ``usage``, else the loaded namespace's)."""
        if usage is None:
            space = self._spaces.get(ns)
            usage = space.usage if space else None
        policy = self._policy_of(ns)
        mult = multipliers(usage.peek(category), policy, category)[0] if usage else 1.0
        return policy.half_life(category) * mult

    def _beta(self, ns: str, category: str) -> float:
        space = self._spaces.get(ns)
        policy = self._policy_of(ns)
        mult = multipliers(space.usage.peek(category), policy, category)[1] if space else 1.0
        return min(1.0, policy.beta(category) * mult)

    def _category_params(self, ns: str, st: NamespaceState, policy: Policy) -> _CategoryParams:
        """Decay rate and recall beta of each category of ``st.vocab``, from
        :meth:`_half_life` and :meth:`_beta`; cached while ``policy`` (the namespace's) and
        the learned multipliers stay the same."""
        space = self._spaces.get(ns)
        parts = []
        for c in st.vocab:
            u = space.usage.peek(c) if space is not None else None
            parts.append((c, u.half_life_mult, u.beta_mult) if u is not None else (c, 1.0, 1.0))
        key = tuple(parts)
        cached = self._param_cache.get(ns)
        if cached is not None and cached[0] is policy and cached[1] == key:
            return cached[2]
        rates = decay.half_life_to_rate([self._half_life(ns, c) for c in st.vocab] or [1.0])
        betas = np.asarray([self._beta(ns, c) for c in st.vocab] or [1.0])
        self._param_cache[ns] = (policy, key, (rates, betas))
        return rates, betas

    def _rates(self, ns: str, st: NamespaceState, sel: Any) -> np.ndarray[Any, Any]:
        """Decay rate of each selected row: its category's (adapted) rate, slowed by use."""
        policy = self._policy_of(ns)
        return decay.effective_rate(
            self._category_params(ns, st, policy)[0][st.cols["cat"][sel]],
            st.cols["stability"][sel],
            policy.stability_sigma,
        )

    def _activation(
        self, ns: str, st: NamespaceState, now: float, rows: np.ndarray[Any, Any] | None = None
    ) -> np.ndarray[Any, Any]:
        """Activation at ``now`` of ``rows`` (all rows when ``None``), vectorised."""
        policy = self._policy_of(ns)
        sel = slice(0, st.n) if rows is None else rows
        c = st.cols
        return decay.activation_now(
            c["a_ref"][sel],
            c["d_ref"][sel],
            self._clock_now(ns, st, now),
            c["cat"][sel],
            c["stability"][sel],
            policy.stability_sigma,
            c["importance"][sel],
            policy.floor_fraction,
            c["invalidated"][sel] | c["superseded"][sel],
        )

    def _clock_now(self, ns: str, st: NamespaceState, now: float) -> np.ndarray[Any, Any]:
        """Decay clock reading of each category of ``st.vocab`` at ``now``.

        A category whose rate changed since its clock's last piece (learned multipliers, a
        new policy) starts a new piece here, at ``now``; the clocks are then written to
        the meta table at once, inside the caller's transaction if there is one, so no
        row reading of the new piece reaches SQLite before its piece does.
        """
        rates = self._category_params(ns, st, self._policy_of(ns))[0]
        if len(rates) != len(st.vocab):  # no category yet: a placeholder rate
            rates = rates[: len(st.vocab)]
        out = st.clock.readings(st.vocab, rates, now)
        if st.clock.dirty:
            self._db.set_meta(f"clock:{ns}", st.clock.to_json())
            st.clock.dirty = False
        return out

    def _restart_clocks(self, ns: str, conn: sqlite3.Connection) -> None:
        """:meth:`_clock_now` for a namespace that is not loaded, read from and written to
        the meta table in ``conn``'s transaction: a category whose rate the policy in
        force (times the learned multiplier) changed starts a new piece now. A switch of
        policy loaded every namespace for this, each opening its Chroma collection (about
        2.6 MB each, kept until the client closes): 3.3 s and 820 MB for 300 users."""
        clock = self._db.parsed(f"clock:{ns}", DecayClock.from_json)
        categories = list(clock.pieces)
        if not categories:
            return
        usage = self._db.parsed(f"usage:{ns}", Usage.from_json)
        rates = decay.half_life_to_rate([self._half_life(ns, c, usage) for c in categories])
        clock.readings(categories, rates, self._now(ns))
        if clock.dirty:
            self._db.set_meta(f"clock:{ns}", clock.to_json(), conn)

    def _set_activation(
        self,
        st: NamespaceState,
        i: int | np.ndarray[Any, Any],
        value: float | np.ndarray[Any, Any],
        now: float,
        stability: float,
        *,
        count_access: bool = True,
    ) -> None:
        """Rebase row ``i`` (or distinct rows, with one value each) at ``value``, ``now``."""
        c = st.cols
        c["a_ref"][i] = value
        c["d_ref"][i] = self._clock_now(st.namespace, st, now)[c["cat"][i]]
        c["stability"][i] += stability
        if count_access:
            c["access_count"][i] += 1
            c["last_accessed"][i] = now

    def _rebase(
        self, space: Space, now: float, conn: Any, *, cap: float | None = None
    ) -> list[tuple[str, float, float]]:
        """Fold the decay until ``now`` into ``a_ref`` under the policy in force (written in
        the caller's transaction ``conn``), so a new floor or slowing by use
        (``floor_fraction``, ``stability_sigma``) changes future decay only; with a lower
        ``cap``, activations above it come down to it. A new half-life alone needs no
        rebase: the clocks start a new piece.

        Returns ``(id, before, after)`` for each memory the cap brought down (for the
        journal)."""
        st = space.state
        if st.n == 0:
            return []
        acts = self._activation(st.namespace, st, now)
        lowered: list[tuple[str, float, float]] = []
        if cap is not None:
            lowered = [
                (st.ids[i], float(acts[i]), cap) for i in np.flatnonzero(acts > cap).tolist()
            ]
            acts = np.minimum(acts, cap)
        st.col("a_ref")[:] = acts
        st.col("d_ref")[:] = self._clock_now(st.namespace, st, now)[st.col("cat")]
        self._db.save_activation(conn, st, range(st.n))
        return lowered

    def _record(self, ns: str, i: int, now: float) -> MemoryRecord:
        return self._records(ns, [i], now)[0]

    def _records(self, ns: str, rows: list[int], now: float) -> list[MemoryRecord]:
        st = self._space(ns).state
        ids = [st.ids[i] for i in rows]
        contents = self._db.contents(ns, ids)
        idx = np.asarray(rows, dtype=np.int64)
        acts = self._activation(ns, st, now, idx) if rows else np.zeros(0)
        c = st.cols
        rates = self._rates(ns, st, idx).tolist()
        out = []
        for k, i in enumerate(rows):
            mid = st.ids[i]
            cat = st.category(i)
            text, meta = contents[mid]
            out.append(
                MemoryRecord(
                    id=mid,
                    namespace=ns,
                    text=text,
                    category=cat,
                    importance=float(c["importance"][i]),
                    confidence=float(c["confidence"][i]),
                    created_at=float(c["created_at"][i]),
                    last_accessed=float(c["last_accessed"][i]),
                    access_count=int(c["access_count"][i]),
                    activation=float(acts[k]),
                    decay_rate=rates[k],
                    tier=Tier(int(c["tier"][i])),
                    metadata=meta,
                    invalidated=bool(c["invalidated"][i]),
                    superseded_by=st.superseded_by.get(mid),
                    as_of=now,
                )
            )
        return out


# ==================================================================== helpers


def _drop_new_db(db_file: Path | None, existed: bool) -> None:
    """Undo what a refused open wrote: its new database (a user's empty file stays, empty)."""
    if db_file is None:
        return
    for suffix in ("-wal", "-shm"):
        Path(f"{db_file}{suffix}").unlink(missing_ok=True)
    if existed:
        db_file.write_bytes(b"")
    else:
        db_file.unlink(missing_ok=True)


def _original_of(path: Path, store_id: str, label: str) -> bool:
    """Whether ``label`` (:func:`_owner_label` of a vector store given to the store)
    names another state folder on this host, open now, that holds the store
    ``store_id``: the original in use, of which the store at ``path`` is a copy. (Once
    it is closed, the copy may take its place: a backup restored.)"""
    if os.path.isabs(label):  # a store's own chroma/ folder: the label names no host
        folder = label
    else:
        host, sep, folder = label.partition(":")
        if not sep or host != socket.gethostname() or not folder:
            return False
    other = Path(folder)
    if other == path.resolve():
        return False
    return folder_store_id(other) == store_id and folder_in_use(other)


def _owner_label(path: Path | None, store_id: str, *, shared: bool) -> str:
    """How the vector store's collections name the Oblivion store that owns them (and
    tell its database made again from another store's): its state folder, absolute, and
    for a vector store given to it (a Chroma server's prefix, a folder of its own) the
    host too. Two apps each opening ``"./state"`` (or two containers each with a
    ``/data/state``) on one server prefix are two stores, not one whose database was
    lost."""
    if path is None:
        return f"(in memory, {store_id[:8]})"
    folder = str(path.resolve())
    return f"{socket.gethostname()}:{folder}" if shared else folder
