"""The :class:`Oblivion` facade: wires clock, policy, state, store, index and recall.

This is the only class most users touch. It holds no maths of its own: decay and boosts
come from :mod:`decay`, tier moves from :mod:`tiering`, scoring from :mod:`recall`,
packing from :mod:`budget`. It reads the clock once per operation and holds one
re-entrant lock around every state change, so one instance can be shared by threads
(embedding runs outside the lock).
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import math
import os
import socket
import time
import uuid
import warnings
import weakref
from collections import OrderedDict
from collections.abc import (
    Callable,
    Collection,
    Container,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from collections.abc import (
    Set as AbstractSet,
)
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, TypeVar, cast

import numpy as np

from oblivion_core import decay
from oblivion_core.adaptation import Usage, adapt, multipliers
from oblivion_core.association import LinkGraph, spread
from oblivion_core.blas import matvec
from oblivion_core.budget import (
    check_budget,
    check_k,
    count_tokens,
    pack,
    resolve_token_counter,
)
from oblivion_core.checks import (
    check_category,
    check_clock_kind,
    check_flag,
    check_hooks,
    check_id,
    check_ids,
    check_namespace,
    check_reason,
    check_standing,
    check_text,
    check_tier,
    check_unit,
    clock_kind,
    finite,
    parallel,
    prepare_dir,
    store_path,
    stored_count,
    stored_dim,
    stored_ids,
    stored_policy,
)
from oblivion_core.clock import TurnClock, WallClock
from oblivion_core.compression import ExtractiveSummarizer, clusters
from oblivion_core.decay_clock import DecayClock
from oblivion_core.doc_set import DocSet
from oblivion_core.embedding import embed_query, embed_texts, resolve_embedder
from oblivion_core.errors import (
    EmbeddingError,
    InvalidInputError,
    PolicyError,
    StoreConflictError,
    StoreCorruptError,
    UnknownMemoryError,
    UnknownNamespaceError,
)
from oblivion_core.importance import HeuristicImportance
from oblivion_core.index import ActiveIndex, exact_links, row_tops, untie
from oblivion_core.lexical import LexicalIndex
from oblivion_core.lexical_snapshot import LexicalSnapshots
from oblivion_core.lists import ListIndex, list_question
from oblivion_core.naming import NameIndex, name_question
from oblivion_core.policy import TEMPLATES, Policy, resolve_policy
from oblivion_core.recall import (
    RecalledItem,
    RecallResult,
    Signals,
    activation_share,
    explain,
    fuse,
    interleave,
    place_priority,
    rank_order,
    score,
    top_ranked,
)
from oblivion_core.records import MemoryRecord, Tier, check_metadata
from oblivion_core.sketch import SketchIndex
from oblivion_core.space import FILTERS_KEPT, Space
from oblivion_core.speakers import as_said
from oblivion_core.state import EVENT_KINDS, Event, JournalRow, NamespaceState, StateDB
from oblivion_core.store import VectorStore
from oblivion_core.supersession import (
    Candidate,
    LexicalSupersession,
    SupersessionJudge,
    parse,
    subject_query,
)
from oblivion_core.tiering import MaintenancePlan, PlanEntry, TierDecision, plan_tiers
from oblivion_core.typing import (
    Clock,
    Embedder,
    ImportanceScorer,
    Summarizer,
    TokenCounter,
    Vectors,
)
from oblivion_core.vector_sync import VectorSync
from oblivion_core.where import Filter, FilterMask, compile_where
from oblivion_core.write_behind import EngineLock

DEFAULT_NAMESPACE = "default"
#: The journal's high-volume kinds: one entry per recalled memory and per memory a boost
#: spread to (what prune_journal and Policy.journal_keep drop).
_BOOST_KINDS = ("recall", "spread")
_SIGNALS = {
    "support-desk": ("support", "help desk", "helpdesk", "ticket", "customer"),
    "research-assistant": ("research", "study", "analysis", "literature"),
}
_T = TypeVar("_T")
_K = TypeVar("_K")
logger = logging.getLogger("oblivion_core")
# plain ints for hot loops (an IntEnum member lookup costs about a microsecond)
_ACTIVE, _ARCHIVE, _COLD = int(Tier.ACTIVE), int(Tier.ARCHIVE), int(Tier.COLD)
#: New memories linked and checked for stale facts at a time by ``remember_many``.
_WRITE_BLOCK = 1024
_SUPERSEDE_CANDIDATES = 12  # older memories judged per new statement (dense + lexical)
_MAX_COMPRESS_BATCH = 2_000  # lowest-activation candidates clustered per maintain()
#: Per-category decay rates and recall betas, indexed like ``NamespaceState.vocab``.
_CategoryParams = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]


class _Boosts(NamedTuple):
    """The boosts a recall gives its picked items (row-aligned), computed as it ranks
    them and applied after it returns (``Oblivion._apply_feedback``)."""

    ids: list[str]
    rows: np.ndarray[Any, Any]
    tiers: np.ndarray[Any, Any]
    before: np.ndarray[Any, Any]
    after: np.ndarray[Any, Any]
    valid: np.ndarray[Any, Any]  # not invalidated: only those are reinforced
    relevances: np.ndarray[Any, Any]


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

    #: Put back, when a namespace is first used, the memories whose vectors the vector
    #: store lost (a deleted ``chroma/`` folder, a dropped collection); ``False`` reads
    #: only (``oblivion stats`` changes nothing in the store it inspects).
    REPAIR_ON_LOAD = True

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
        self.max_loaded_namespaces = check_k(max_loaded_namespaces, "max_loaded_namespaces")
        self.default_namespace = check_namespace(namespace)
        self.path = store_path(path)
        check_hooks(importance_scorer, summarizer, supersession_judge, vector_store)
        if self.path is not None:
            prepare_dir(self.path)
        db_file = None if self.path is None else self.path / StateDB.FILE
        # no activation database yet (or an empty file): the vector store should hold none
        # of this store's memories either
        db_existed = db_file is not None and db_file.exists()
        db_new = db_file is not None and (not db_existed or db_file.stat().st_size == 0)
        self._db = StateDB(self.path)
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
            self._turns_saved: dict[str, str] = {}
            if isinstance(clock, TurnClock):
                self._db.carry_meta = self._turn_rows
            self.embedder: Embedder = resolve_embedder(embedder)
            self.token_counter: TokenCounter = resolve_token_counter(token_counter)
            key = getattr(self.token_counter, "cache_key", None)
            self._db.use_token_counter(key if isinstance(key, str) else None)
            self.importance_scorer: ImportanceScorer = importance_scorer or HeuristicImportance()
            self.supersession_judge: SupersessionJudge | None = supersession_judge
            self.summarizer: Summarizer = summarizer or ExtractiveSummarizer()
            passed_store = vector_store
            if vector_store is None:
                if self.path is None:
                    vector_store = _ephemeral_store()
                else:
                    vector_store = VectorStore.embedded(self.path / "chroma")
            self.store = vector_store
            self._owns_store = passed_store is None
            store_id = self._db.store_id()
            label = _owner_label(self.path, store_id, shared=passed_store is not None)
            vector_store.bind(store_id, label)
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
                fresh = (
                    "move the chroma/ folder aside too"
                    if vector_store is not passed_store
                    else "give this store its own prefix on the server "
                    f"(VectorStore.server(..., prefix=...); this one's is {vector_store.prefix!r})"
                    " or delete its collections there"
                )
                raise StoreCorruptError(
                    f"{db_file} is missing or empty, but the vector store holds {held_n:,} of "
                    "this store's memories: their activation database was lost or truncated. "
                    f"Restore it from a backup; to start over instead, {fresh}"
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
            # namespaces with an archive copy, least recently searched first, and when
            # (time.monotonic())
            self._exact_lru: OrderedDict[str, float] = OrderedDict()
            self._known: set[str] = set(self._db.namespaces()) | {self.default_namespace}
            if self._db.meta(StateDB.LEGACY_TIMES):
                self._convert_legacy_times()
        except BaseException:
            self._db.close()
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
    def close(self) -> None:
        """Flush and release the store (the object is unusable afterwards). The BM25
        indexes of the namespaces searched are saved beside the database for the next
        open (:attr:`LEXICAL_SNAPSHOT_DOCUMENTS`; a failure there is only a warning).

        If the queued activation updates cannot be written, this raises and the instance
        stays open, so ``close()`` can be called again once the cause is fixed. If that
        second call fails too, it raises after releasing the store without them (a
        damaged file would otherwise hold the store's lock for good).
        """
        with self._lock:
            if self._closed:
                return
            try:
                # first: a failure keeps the updates and the instance. The use counters
                # adaptation learns from go with them (maintain() saves them too).
                with self._db.transaction() as conn:
                    for ns, space in self._spaces.items():
                        self._db.set_meta(f"usage:{ns}", space.usage.to_json(), conn)
                    if isinstance(self.clock, TurnClock):  # ticks no write followed
                        self._db.set_meta("turn", self.clock.shared, conn)
                        for ns, turns in self.clock.owned().items():
                            self._db.set_meta(f"turn:{ns}", turns, conn)
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
        while another still calls in)."""
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
        (O(memories)). The switch is recorded in the journal with ``reason``. Namespaces
        read from the store for it are let go again (:meth:`unload`).
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
                for ns in known:
                    before = self._policy_of(ns)
                    after = new
                    if (before.floor_fraction, before.stability_sigma) != (
                        after.floor_fraction,
                        after.stability_sigma,
                    ):
                        self._rebase(self._space(ns), self._now(ns))
                with self._db.transaction() as conn:
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
                        self._clock_now(ns, self._space(ns).state, self._now(ns))
                    detail = {"from": old, "to": new.name, "reason": reason, "scope": namespace}
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

        The signal is matched by keyword: "support"/"help desk"/"ticket" -> ``support-desk``,
        "research"/"study"/"analysis" -> ``research-assistant``, anything else ->
        ``balanced``.
        """
        if not isinstance(signal, str) or not signal.strip():
            raise InvalidInputError(f"signal must be a non-empty string, got {signal!r}")
        low = signal.lower()
        name = "balanced"
        for template, words in _SIGNALS.items():
            if any(w in low for w in words):
                name = template
                break
        return self.set_policy(name, namespace=namespace, reason=f"signal {signal!r}")

    # ================================================================ writing
    def remember(
        self,
        text: str,
        *,
        category: str | None = None,
        importance: float | None = None,
        confidence: float = 1.0,
        metadata: Mapping[str, Any] | None = None,
        namespace: str | None = None,
        id: str | None = None,
        supersede: bool | None = None,
    ) -> MemoryRecord:
        """Store one memory; durable when this returns.

        Args:
            text: Non-empty text, at most ``policy.max_text_chars`` characters. Texts
                longer than the embedding window are embedded chunk by chunk (mean of
                the chunk vectors) and stored whole.
            category: Decides the half-life; inferred by the importance scorer if omitted.
            importance: In ``[0, 1]``; scored at write time if omitted.
            confidence: In ``[0, 1]``; scales the boosts of recall, use and reinforce()
                (what retrieval says about it). confirm() (your own word) and spreading
                from a linked memory are not scaled.
            metadata: JSON-serialisable user data, returned with the memory.
            namespace: Isolated memory space (created on first write).
            id: Your own id (unique in the namespace); a UUID by default.
            supersede: Let this memory supersede older ones it makes stale (``None``:
                ``policy.supersede``). ``False`` for texts that state nothing about the
                user or the world (documents, records kept for lookup only).

        Linking and stale-fact detection run after the memory is durable; if they fail
        (a custom judge raising, say) the failure is logged on the ``oblivion_core``
        logger and the call still returns the stored memory. A ``supersession_judge`` is
        asked after the engine's lock is let go (a model may take seconds), so other
        calls go on meanwhile and may briefly see the older memory still current.
        """
        return self.remember_many(
            [text],
            categories=[category],
            importances=[importance],
            confidences=[confidence],
            metadatas=[metadata],
            namespace=namespace,
            ids=[id],
            supersede=supersede,
        )[0]

    def remember_many(
        self,
        texts: Sequence[str],
        *,
        categories: Sequence[str | None] | None = None,
        importances: Sequence[float | None] | None = None,
        confidences: Sequence[float] | None = None,
        metadatas: Sequence[Mapping[str, Any] | None] | None = None,
        namespace: str | None = None,
        ids: Sequence[str | None] | None = None,
        supersede: bool | None = None,
    ) -> list[MemoryRecord]:
        """Store several memories in one batch (one embedding call, one commit).

        Arguments are parallel sequences; see :meth:`remember` (``supersede`` applies to
        the whole batch). All or nothing: if any item is invalid, or the write fails,
        nothing is stored.
        """
        if supersede is not None:
            supersede = check_flag(supersede, "supersede")
        self._check_open()
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise InvalidInputError("texts must be a list of strings (use remember() for one)")
        n = len(texts)
        ns = check_namespace(namespace if namespace is not None else self.default_namespace)
        policy = self.policy_for(ns) if ns in self._known else self._policy
        cats = parallel(categories, n, "categories")
        imps = parallel(importances, n, "importances")
        confs = parallel(confidences, n, "confidences", default=1.0)
        metas = parallel(metadatas, n, "metadatas")
        given_ids = parallel(ids, n, "ids")
        clean: list[str] = []
        for i, text in enumerate(texts):
            at = f"[{i}]" if n > 1 else ""  # which element of a batch is wrong
            clean.append(check_text(text, policy.max_text_chars, f"texts{at}" if at else "text"))
            if cats[i] is not None:
                cats[i] = check_category(cats[i], f"categories{at}" if at else "category")
            if imps[i] is not None:
                imps[i] = check_unit(imps[i], f"importances{at}" if at else "importance")
            confs[i] = check_unit(confs[i], f"confidences{at}" if at else "confidence")
            metas[i] = check_metadata(metas[i], f"metadatas{at}" if at else "metadata")
            if given_ids[i] is not None:
                given_ids[i] = check_id(given_ids[i])
        final_ids = [i if i is not None else uuid.uuid4().hex for i in given_ids]
        if len(set(final_ids)) != n:
            raise InvalidInputError("ids must be unique within one remember_many() call")
        if n == 0:
            return []
        vectors = embed_texts(self.embedder, clean, self._dim)
        for i in range(n):
            if cats[i] is None:
                got = self.importance_scorer.categorize(clean[i])
                if not isinstance(got, str) or not got.strip():
                    raise InvalidInputError(
                        f"the importance scorer's categorize() returned {got!r:.60}; it must "
                        "return a non-empty category name (or pass category= yourself)"
                    )
                cats[i] = check_category(got)
            if imps[i] is None:
                imps[i] = check_unit(self.importance_scorer.score(clean[i]), "scored importance")

        with self._lock:
            self._check_open()
            space = self._space(ns, create=True)
            # the policy as it is now: a set_policy() may have landed while the texts were
            # embedded (its automatic maintain, links, supersession, caps apply)
            current = self._policy_of(ns)
            if current is not policy:
                policy = current
                for i, text in enumerate(clean):
                    check_text(text, policy.max_text_chars, f"texts[{i}]" if n > 1 else "text")
            clash = [i for i in final_ids if i in space.state.index]
            if clash:
                raise InvalidInputError(
                    f"memory id {clash[0]!r} already exists in namespace {ns!r}; use edit() to "
                    "change it or forget() it first"
                )
            turns = self.clock if isinstance(self.clock, TurnClock) else None
            ticked = turns is not None and policy.clock == "turns"
            if turns is not None and ticked:  # one interaction per memory, in its namespace
                turns.tick(n, namespace=ns)
            now = self._now(ns)
            try:
                rows = self._store_new(
                    ns,
                    space,
                    policy,
                    now,
                    final_ids,
                    clean,
                    vectors,
                    [str(c) for c in cats],
                    [float(x) for x in imps],
                    [float(x) for x in confs],
                    [m or {} for m in metas],
                    made={
                        m for m, given in zip(final_ids, given_ids, strict=True) if given is None
                    },
                )
            except BaseException:
                if turns is not None and ticked:  # nothing was stored: no interaction
                    turns.rewind(n, namespace=ns)
                    # the failed write's batch (retried later) holds the ticked count:
                    # the next write carries the count as it is now, after it
                    self._turns_read.add(ns)
                    self._turns_saved.pop("turn", None)
                    self._turns_saved.pop(f"turn:{ns}", None)
                raise
            # Stored and durable from here: what follows refines (links, stale facts,
            # tiers) and must not make the call fail, or a retry would find the ids taken.
            stale: list[tuple[int, list[Candidate]]] = []
            said = [as_said(t, m) for t, m in zip(clean, metas, strict=True)]
            try:
                with self._consistent(ns):
                    detect = policy.supersede if supersede is None else supersede
                    # a block at a time (the similarities of a block to the memories before
                    # it: their n x (window + n) matrix took 1.5 GB and 5 s at n = 10,000)
                    for s in range(0, n, _WRITE_BLOCK):
                        e = min(s + _WRITE_BLOCK, n)
                        ids_b, texts_b, vecs_b = final_ids[s:e], clean[s:e], vectors[s:e]
                        # the block's just-added rows are the index's last but n - e
                        recent_ids, recent = space.index.recent(
                            policy.link_window + e - s, skip=n - e
                        )
                        # one batched similarity against the most recent serves both
                        sims = matvec(vecs_b, recent.T)
                        if policy.link_on_write:
                            self._auto_link(
                                ns, space, policy, ids_b, recent_ids, sims, now, vecs_b, recent
                            )
                        if detect:  # with a judge: asked after the lock is let go (below)
                            found = self._detect_supersession(
                                ns,
                                space,
                                policy,
                                ids_b,
                                texts_b,
                                vecs_b,
                                recent_ids,
                                sims,
                                now,
                                said[s:e],
                            )
                            stale.extend((s + k, cands) for k, cands in found)
            except Exception:
                logger.exception(
                    "linking or stale-fact detection failed after %d memories were stored in "
                    "namespace %r; they are stored, without it",
                    n,
                    ns,
                )
            # by id: a failure above reloaded the namespace, and rows may have moved
            space = self._space(ns)
            rows = [space.state.index[m] for m in final_ids]
            records = self._records(ns, rows, now)
            if 0 < policy.maintain_every <= space.writes_since_maintain:
                try:
                    self._maintain(ns, dry_run=False)
                except Exception:
                    logger.exception(
                        "automatic maintain() after a write in namespace %r failed; the "
                        "memories are stored, tiers are planned again on the next write",
                        ns,
                    )
        if stale:
            self._judge_outside_the_lock(ns, policy, final_ids, said, stale)
        return records

    def _judge_outside_the_lock(
        self,
        ns: str,
        policy: Policy,
        ids: list[str],
        texts: list[str],
        stale: list[tuple[int, list[Candidate]]],
    ) -> None:
        """Ask the supersession judge about a write's candidates without the engine's
        lock (a model may take seconds per question, and every other call of the
        instance would wait), then apply what still holds under it. Failures are logged:
        the memories are stored either way."""
        try:
            pairs = self._judge_stale(policy, ids, texts, stale)
            if not pairs:
                return
            # what each verdict was about: a pair whose texts were edited since is dropped
            said = {m: texts[k] for k, m in enumerate(ids)}
            said.update((c.id, c.text) for _, cands in stale for c in cands)
            with self._lock:
                if self._closed:
                    logger.warning(
                        "Oblivion was closed while its supersession judge was answering: "
                        "%d stale-fact verdict(s) in namespace %r were not applied",
                        len(pairs),
                        ns,
                    )
                    return
                self._apply_stale(ns, self._space(ns), pairs, self._now(ns), said)
        except Exception:
            logger.exception(
                "stale-fact detection failed after a write of %d memories in namespace %r; "
                "the write stands, without it",
                len(ids),
                ns,
            )

    def _store_new(
        self,
        ns: str,
        space: Space,
        policy: Policy,
        now: float,
        ids: list[str],
        texts: list[str],
        vectors: Vectors,
        cats: list[str],
        imps: list[float],
        confs: list[float],
        metas: list[dict[str, Any]],
        *,
        a_ref: list[float] | None = None,
        tier: Tier = Tier.ACTIVE,
        also: Callable[[Any], None] | None = None,
        made: Collection[str] = (),
    ) -> list[int]:
        """Write new memories to Chroma, SQLite, FTS and the in-memory state, atomically:
        on any failure nothing of them remains. Returns their rows.

        ``made``: those of ``ids`` generated here (no record of them can exist in Chroma).

        ``also``: more writes of the same change, made in the same transaction (a caller
        that changes other memories in memory must run inside :meth:`_consistent`).
        """
        st = space.state
        n = len(ids)
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        imp_arr = np.asarray(imps, dtype=np.float64)
        a0 = decay.initial_activation(imp_arr, policy.initial_base) if a_ref is None else a_ref
        # counted now, not on the first recall that packs them (cached as count + 1)
        counted = [count_tokens(self.token_counter, t) + 1 for t in texts]
        seq0 = self._next_seq
        rows: list[int] = []
        # everything from the first row in memory on is undone if anything fails: the
        # rows, a category they brought and its decay clock (read inside the transaction,
        # so a clock piece it starts is written, or rolled back, with them)
        vocab_before = len(st.vocab)
        clock_before = (dict(st.clock.pieces), st.clock.dirty)
        try:
            for k in range(n):
                values = {
                    "importance": imp_arr[k],
                    "confidence": confs[k],
                    "created_at": now,
                    "last_accessed": now,
                    "a_ref": float(min(a0[k], policy.cap)),
                    "stability": 0.0,
                    "access_count": 0,
                    "tier": int(tier),
                    "invalidated": False,
                }
                rows.append(st.append(ids[k], cats[k], values, seq0 + k))
            st.cols["tokens"][rows] = counted
            self.store.add(ns, ids, vectors, texts, [{"category": c} for c in cats], made=made)
            with self._db.transaction(durable=True) as conn:
                st.cols["d_ref"][rows] = self._clock_now(ns, st, now)[st.cols["cat"][rows]]
                self._db.add_namespace(ns, conn)
                self._db.insert(
                    conn,
                    st,
                    rows,
                    dict(zip(ids, texts, strict=True)),
                    dict(zip(ids, metas, strict=True)),
                    vectors,
                )
                if self._db.meta("dim") is None:
                    self._db.set_meta("dim", self._dim, conn)
                # the turn counts go with it, as with every write (StateDB.carry_meta);
                # maintain_every counts on across a reopen
                self._db.set_meta(f"writes:{ns}", space.writes_since_maintain + n, conn)
                self._db.journal(
                    conn,
                    now,
                    ns,
                    [
                        (
                            ids[k],
                            "remember",
                            None,
                            float(st.cols["a_ref"][rows[k]]),
                            {"category": cats[k], "importance": float(imp_arr[k])},
                        )
                        for k in range(n)
                    ],
                )
                if also is not None:
                    also(conn)
        except BaseException:
            for mid in reversed(ids[: len(rows)]):
                st.remove(mid)
            st.drop_categories(vocab_before)
            st.clock = DecayClock(clock_before[0])
            st.clock.dirty = clock_before[1]
            self._param_cache.pop(ns, None)
            try:
                self.store.delete(ns, ids)
            except StoreConflictError:  # another store's collection: nothing went there
                pass
            except Exception:  # the write's own error is the one to report
                logger.exception("could not remove %d unwritten memories from Chroma", n)
                self._sync.doubt(ns, ids)
            raise
        self._next_seq = seq0 + n
        self._known.add(ns)
        self._db.cache_written(ns, ids, texts, metas)
        self._lex.add(ns, [seq0 + k for k in range(n)], texts)
        # a summary too, as the indexes built on reopen have it
        space.note_texts(ids, [as_said(t, m) for t, m in zip(texts, metas, strict=True)])
        if tier == Tier.ACTIVE:
            space.activate(ids, vectors)
        else:
            space.add_inactive(ids, vectors)
        for c in cats:
            space.usage.of(c).stored += 1
        self._queue_usage(ns, space, now)
        space.writes_since_maintain += n
        return rows

    def _queue_usage(self, ns: str, space: Space, now: float) -> None:
        """Queue the namespace's use counters (what adaptation learns from) for the next
        batched write, as recall boosts are: a crash loses at most that window of them,
        instead of every count since the last ``maintain()`` or ``close()``."""
        self._db.defer(space.state, (), now, (), meta={f"usage:{ns}": space.usage.to_json})
        self._lock.due(self._db.DEFER_SECONDS, self._hand_off)

    def edit(
        self,
        memory_id: str,
        text: str | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
        namespace: str | None = None,
        supersede: bool | None = None,
        category: str | None = None,
        importance: float | None = None,
    ) -> MemoryRecord:
        """Change a memory's text (re-embedded), replace its metadata, and/or give it
        another ``category`` (it decays at that category's rate from now on) or
        ``importance`` (its floor from now on).

        Its activation is kept; the change is journaled. A new text is a new statement:
        the memory leaves any supersession it was part of (an older statement it had
        made stale is current again, and it is no longer stale itself), then it is
        judged against every other memory as the newest one (``supersede``: as in
        :meth:`remember`; a ``supersession_judge`` is asked after the lock is let go).
        """
        ns = self._ns(namespace)
        clean = check_text(text, self.policy_for(ns).max_text_chars, "text") if text else None
        if text is not None and clean is None:
            raise InvalidInputError("text must be a non-empty string")
        if text is None and metadata is None and category is None and importance is None:
            raise InvalidInputError(
                f"edit({memory_id!r}) changes nothing: pass text= (a new text), metadata= "
                "(replacing the old), category= and/or importance="
            )
        meta = check_metadata(metadata) if metadata is not None else None
        cat = check_category(category) if category is not None else None
        imp = check_unit(importance, "importance") if importance is not None else None
        if supersede is not None:
            supersede = check_flag(supersede, "supersede")
        vector = embed_texts(self.embedder, [clean], self._dim) if clean is not None else None
        # counted now, as remember() counts (held as count + 1)
        counted = count_tokens(self.token_counter, clean) + 1 if clean is not None else 0
        stale: list[tuple[int, list[Candidate]]] = []
        said: list[str] = []
        with self._lock:
            self._check_open()
            space = self._space(ns)
            st = space.state
            i = self._row(space, memory_id)
            now = self._now(ns)
            old_category = st.category(i)
            recategorised = cat is not None and cat != old_category
            # Chroma's record changes with the text or the category (it names the category)
            resync = clean is not None or recategorised
            old_texts = self._db.texts(ns, [memory_id]) if resync else {}
            # a summary's original with a new text: the summary keeps saying the old one
            sids = self._summaries_of(space, {memory_id}) if clean is not None else []
            if sids and old_texts.get(memory_id) == clean:
                sids = []
            old: tuple[str, Vectors] | None = None  # Chroma's record, to put back on failure
            if resync:
                old_vec = self._vectors(ns, space, [memory_id]).get(memory_id)
                if old_vec is not None:
                    old = (old_texts[memory_id], old_vec)
            chroma_changed = False
            if resync:
                # a crash between Chroma's write and the commit would leave Chroma with a
                # text SQLite never got: noted first, put right when ``ns`` is next loaded
                self._sync.note(ns, [memory_id])
            try:
                with self._consistent(ns), self._db.transaction(durable=True) as conn:
                    if meta is not None:
                        space.filters.clear()  # which memories pass a filter may change
                        self._db.set_metadata(conn, ns, memory_id, meta)
                    if cat is not None or imp is not None:
                        # the activation now, then decay under the new category and floor
                        a_now = float(self._activation(ns, st, now, np.asarray([i]))[0])
                        if cat is not None:
                            st.cols["cat"][i] = st.cat_id(cat)
                        if imp is not None:
                            st.cols["importance"][i] = imp
                        self._set_activation(st, i, a_now, now, 0.0, count_access=False)
                        self._db.save_rows(conn, st, [i])
                    if clean is not None and vector is not None:
                        for key in [k for k, m in space.filters.items() if m.where.reads_text]:
                            del space.filters[key]  # a filter on the text may differ now
                        # before any row is written: a row write keeps the count too
                        st.cols["tokens"][i] = counted
                        self._db.set_text(conn, ns, memory_id, clean, vector, counted - 1)
                        self._release_supersession(ns, space, memory_id, now, conn)
                    detail: dict[str, Any] = {
                        "text_changed": clean is not None,
                        "metadata_changed": meta is not None,
                    }
                    if cat is not None:
                        detail["category"] = cat
                    if imp is not None:
                        detail["importance"] = imp
                    self._db.journal(conn, now, ns, [(memory_id, "edit", None, None, detail)])
                    if clean is not None and vector is not None:
                        # last, so a failure before it leaves Chroma as it was
                        chroma_changed = True
                        self.store.add(
                            ns, [memory_id], vector, [clean], [{"category": st.category(i)}]
                        )
                    elif recategorised and old is not None:
                        chroma_changed = True
                        self.store.add(
                            ns, [memory_id], old[1], [old[0]], [{"category": st.category(i)}]
                        )
            except BaseException:
                if chroma_changed and old is not None:  # the commit failed after Chroma
                    try:
                        self.store.add(
                            ns, [memory_id], old[1], [old[0]], [{"category": old_category}]
                        )
                    except Exception:  # the note stays: put right before the next query
                        logger.exception("could not restore the text of %r in Chroma", memory_id)
                        resync = False
                        self._sync.due.add(ns)
                if resync:
                    self._sync.clear(ns, [memory_id])
                raise
            if resync:
                self._sync.clear(ns, [memory_id])
            if clean is not None or meta is not None:
                # what it adds to a list, or the name it gives, is what it says now, and
                # who says it (its metadata may name another chat role)
                said = list(self._said(ns, [memory_id]).values())
                space.discard_texts([memory_id])
                space.note_texts([memory_id], said)
            if clean is not None and vector is not None:
                space.set_vector(memory_id, vector)
                self._lex.replace(ns, int(st.cols["seq"][i]), clean)
                if sids:  # after the edit: one that fails leaves the summary as it was
                    try:
                        rows = [st.index[m] for m in sids if m in st.index]
                        self._delete(ns, space, rows, now, "an original was edited")
                    except Exception:
                        logger.exception(
                            "the summaries %s of the edited %r could not be dropped; they "
                            "keep its old text until forget() or decompress() of them",
                            sids,
                            memory_id,
                        )
                    space = self._space(ns)  # reloaded on failure
                    st = space.state
                policy = self.policy_for(ns)
                detect = policy.supersede if supersede is None else supersede
                # an invalidated memory is wrong whatever it says: it makes nothing stale
                if detect and not st.cols["invalidated"][st.index[memory_id]]:
                    try:
                        with self._consistent(ns):
                            recent_ids, recent = space.index.recent(policy.link_window + 1)
                            sims = matvec(vector, recent.T)
                            stale = self._detect_supersession(
                                ns,
                                space,
                                policy,
                                [memory_id],
                                [clean],
                                vector,
                                recent_ids,
                                sims,
                                now,
                                said,
                                newest=True,
                            )
                    except Exception:
                        logger.exception("stale-fact detection failed after editing %r", memory_id)
            # by id: a failure above reloaded the namespace, and rows may have moved
            record = self._record(ns, self._space(ns).state.index[memory_id], now)
        if stale:
            self._judge_outside_the_lock(ns, self.policy_for(ns), [memory_id], said, stale)
        return record

    def _release_supersession(
        self, ns: str, space: Space, memory_id: str, now: float, conn: Any
    ) -> None:
        """``memory_id`` (being edited) leaves every supersession it is part of (in memory
        and in the caller's transaction): it is current again, and what it had made stale
        now waits on its own successor, as after a ``forget()`` of it (current again when
        it had none: an edited middle of a chain must not make its oldest statement
        current beside the newest)."""
        st = space.state
        after = st.superseded_by.get(memory_id)
        if after is not None and (after not in st.index or after == memory_id):
            after = None
        changes: dict[str, str | None] = {
            m: (after if after != m else None)
            for m, succ in st.superseded_by.items()
            if succ == memory_id
        }
        if memory_id in st.superseded_by:
            changes[memory_id] = None
        self._repoint(ns, st, changes, now, conn, f"{memory_id} was edited")

    def _repoint(
        self,
        ns: str,
        st: NamespaceState,
        changes: Mapping[str, str | None],
        now: float,
        conn: Any,
        reason: str,
    ) -> None:
        """Give each memory of ``changes`` a new successor (``None``: current again), in
        memory and in the caller's transaction, journaled with its activation before and
        after (a memory current again gets its importance floor back)."""
        if not changes:
            return
        rows = np.fromiter((st.index[m] for m in changes), np.int64, len(changes))
        before = self._activation(ns, st, now, rows)
        for m, succ in changes.items():
            if succ is None:
                st.superseded_by.pop(m, None)
                st.cols["superseded"][st.index[m]] = False
            else:
                st.superseded_by[m] = succ
        after = self._activation(ns, st, now, rows)
        self._db.save_rows(conn, st, rows.tolist())
        self._db.journal(
            conn,
            now,
            ns,
            [
                (
                    m,
                    "unsupersede" if succ is None else "supersede",
                    float(b),
                    float(a),
                    {"reason": reason} if succ is None else {"by": succ, "reason": reason},
                )
                for (m, succ), b, a in zip(changes.items(), before, after, strict=True)
            ],
        )

    # ================================================================ recall
    def recall(
        self,
        query: str,
        *,
        token_budget: int | None = None,
        k: int | None = None,
        namespace: str | None = None,
        deep: bool | None = None,
        include_invalidated: bool = False,
        include_cold: bool = False,
        include_superseded: bool = False,
        feedback: bool = True,
        standing: str | Iterable[str] = (),
        where: Mapping[str, Any] | Filter | None = None,
        where_document: Mapping[str, Any] | None = None,
    ) -> RecallResult:
        """Find the memories that matter for ``query``, best first, within a token budget.

        Args:
            query: The text to search for.
            token_budget: Tokens the items may cost in total (each item costs its text's
                tokens plus ``policy.per_item_tokens``); never exceeded. ``None`` = no limit.
            k: Maximum number of items (default ``policy.default_k``).
            namespace: Where to search.
            deep: ``True`` always searches the archive; ``False`` never; ``None`` lets
                the gate decide (best active cosine below ``policy.archive_gate``, or
                fewer than ``k`` active hits).
            include_invalidated: Also return invalidated memories.
            include_cold: Also search cold memories (originals of summaries).
            include_superseded: Also return memories a newer one superseded (ranked
                just below their successor).
            feedback: Boost the returned memories (the default). ``False`` only reads.
                The boosts are applied just after the recall returns (``WRITE_BEHIND``);
                every later call on this instance sees them.
            standing: Categories (one name or several) whose current memories are shown
                whatever the query: ``"instruction"`` keeps the user's standing
                instructions ("always answer in British English", "call me Dee") in
                every prompt. They join the candidates from every tier but the cold one
                (not invalidated; a superseded one brings its successor in its place),
                as relevant as the best match, and come first, best scored first,
                within ``k`` and the budget, as a list's items do for a list question
                (``why["relevance_signals"]["standing"]``). They take at most half of
                ``k``'s places (at least one), so the query's own matches keep the rest.
            where: Only memories whose metadata pass this filter, in Chroma's ``where``
                syntax (``{"source": "email"}``, ``{"year": {"$gte": 2025}}``,
                ``$in``, ``$nin``, ``$contains`` for lists, ``$and``, ``$or``,
                ``{"#document": {"$contains": "text"}}``; :mod:`oblivion_core.where`).
                Hits, standing ones, neighbours and linked ones alike. If few memories
                pass (:attr:`FILTER_SCORED_ROWS`, :attr:`FILTER_SCORED_PER_ROOT`) each
                is scored; otherwise each search is asked for more until enough pass. A
                memory a newer one superseded stays hidden even if its successor does
                not pass. An adapter with a filter language of its own passes a
                :class:`~oblivion_core.where.Filter` instead.
            where_document: Only memories whose text passes this filter, in Chroma's
                ``where_document`` syntax (``{"$contains": "invoice"}``,
                ``$not_contains``, ``$regex``, ``$not_regex``, ``$and``, ``$or``); with
                ``where``, both must hold.
        """
        self._check_open()
        q = check_text(query, None, "query")
        filtered = compile_where(where, where_document)
        standing_categories = check_standing(standing)
        budget = check_budget(token_budget)
        k = check_k(k)
        if deep is not None and not isinstance(deep, bool):
            raise InvalidInputError(f"deep must be True, False or None, got {deep!r}")
        include_invalidated = check_flag(include_invalidated, "include_invalidated")
        include_cold = check_flag(include_cold, "include_cold")
        include_superseded = check_flag(include_superseded, "include_superseded")
        feedback = check_flag(feedback, "feedback")
        ns = self._ns(namespace)
        policy = self.policy_for(ns)
        pool = max(policy.candidate_pool, k if k is not None else policy.default_k)
        # BM25 needs only the text: it runs on a worker while the query is embedded, unless
        # the embedder keeps every core busy (the local ONNX model): beside it, BM25 slowed
        # the embedding by 0.5-0.8 ms, in line it costs 0.1-0.3 ms (10k-100k memories)
        # deep=False ranks the active tier's documents only (its memories are few among
        # the namespace's: at 100k memories the best 50 of all held about one); a
        # namespace not loaded yet is searched under the lock, once it is
        lexical_seen = self._lex.changes(ns)  # before the search: a change after it counts
        allow: DocSet | None = None
        lexical_now = policy.lexical_weight > 0
        # deep=False: the active tier BM25 ranked, and its version then (a namespace
        # unloaded and loaded again meanwhile has a new set, whose count may match)
        tier: tuple[DocSet, int] | None = None
        if deep is False:
            loaded = self._spaces.get(ns)
            lexical_now = lexical_now and loaded is not None
            if loaded is not None:
                allow = loaded.active
                tier = allow, allow.version
        # (a filtered recall ranks BM25 under the lock, over what passes)
        beside = (
            lexical_now and filtered is None and not getattr(self.embedder, "busy_cores", False)
        )
        lexical = self._background(self._lex.search, ns, q, pool, allow) if beside else None
        qvec = embed_query(self.embedder, q, self._dim)
        try:
            bm25 = lexical.result() if lexical is not None else None
            if bm25 is None and lexical_now:  # outside the engine's lock
                bm25 = self._lex.search(ns, q, pool, allow)
        except Exception:
            self._check_open()  # closed meanwhile: say so, not how the read failed
            raise
        with self._lock:
            self._check_open()
            if self._lex.changes(ns) != lexical_seen:
                # a write or edit landed since BM25 ran (outside the lock): its scores are
                # of texts that changed; ranked again under the lock
                bm25 = None
            return self._recall(
                q,
                qvec,
                ns,
                budget,
                k,
                deep,
                include_invalidated,
                include_cold,
                feedback,
                include_superseded,
                bm25,
                tier,
                standing_categories,
                filtered,
            )

    def rerank(
        self,
        query: str,
        candidates: Sequence[tuple[str, float | None]],
        *,
        namespace: str | None = None,
        token_budget: int | None = None,
        k: int | None = None,
        feedback: bool = True,
    ) -> RecallResult:
        """Rank candidates someone else retrieved, by the same score as :meth:`recall`.

        Only the candidates given come back (no neighbours, no successors added), and
        every one that fits unless invalidated: a superseded candidate is not hidden, it
        ranks just below its successor when that is a candidate too.

        Args:
            query: The query the candidates answer.
            candidates: ``(memory_id, relevance)`` pairs; every id must exist in the
                namespace. ``relevance`` is a similarity in ``[-1, 1]`` (clipped at 0 when
                scoring); ``None`` means "compute it": cosine similarity between the
                query and the memory's stored vector.
            namespace: Where the ids live.
            token_budget: As in :meth:`recall`.
            k: Maximum items (default: all candidates that fit).
            feedback: Boost the returned memories.

        Raises:
            UnknownMemoryError: an id is not in the namespace (nothing is boosted).
        """
        self._check_open()
        q = check_text(query, None, "query")
        budget = check_budget(token_budget)
        k = check_k(k)
        feedback = check_flag(feedback, "feedback")
        if isinstance(candidates, str | bytes | Mapping) or not isinstance(candidates, Iterable):
            raise InvalidInputError(
                "candidates must be a list of (id, relevance) pairs, got "
                f"{type(candidates).__name__}"
            )
        ns = self._ns(namespace)
        pairs: list[tuple[str, float | None]] = []
        for pair in candidates:
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise InvalidInputError(f"candidates are (id, relevance) pairs, got {pair!r}")
            mid, rel = pair
            if rel is not None:
                rel = finite(rel, f"relevance of {mid!r}", "a similarity in [-1, 1] or None")
                if not -1.0 <= rel <= 1.0:
                    raise InvalidInputError(
                        f"relevance of {mid!r} must be a similarity in [-1, 1] (or None to "
                        f"compute it), got {rel!r}"
                    )
            pairs.append((check_id(mid), rel))
        need_vec = any(rel is None for _, rel in pairs)
        qvec = embed_query(self.embedder, q, self._dim) if need_vec else None
        with self._lock:
            self._check_open()
            space = self._space(ns)
            for mid, _ in pairs:
                self._row(space, mid)
            missing = [m for m, rel in pairs if rel is None]
            cand = self._cosines(ns, space, qvec, missing) if qvec is not None else {}
            for mid, rel in pairs:
                if rel is not None:
                    cand[mid] = max(cand.get(mid, -1.0), rel)
            policy = self.policy_for(ns)
            return self._score_and_pack(
                q,
                ns,
                space,
                policy,
                self._now(ns),
                cand,
                budget,
                k if k is not None else max(len(cand), 1),
                None,
                include_invalidated=False,
                include_cold=True,
                feedback=feedback,
                successors=False,
            )

    def _recall(
        self,
        query: str,
        qvec: Vectors,
        ns: str,
        budget: int | None,
        k: int | None,
        deep: bool | None,
        include_invalidated: bool,
        include_cold: bool,
        feedback: bool,
        include_superseded: bool = False,
        bm25: tuple[list[int], list[float]] | None = None,
        tier: tuple[DocSet, int] | None = None,
        standing: tuple[str, ...] = (),
        where: Filter | None = None,
    ) -> RecallResult:
        """``bm25``: the lexical search's result, if it already ran (see :meth:`recall`);
        for ``deep=False``, over the active tier ``tier[0]`` as it stood at version
        ``tier[1]``. ``standing``: categories whose current memories come first.
        ``where``: the recall's filter (:mod:`oblivion_core.where`)."""
        policy = self.policy_for(ns)
        space = self._space(ns)
        if deep is False and (
            tier is None or tier[0] is not space.active or tier[1] != space.active.version
        ):
            # the tier changed since (another call's promotions, or this caller's
            # previous recall's, applied as the lock was taken; or the namespace was
            # loaded again, a new set): ranked again
            bm25 = None
        st = space.state
        limit = k if k is not None else policy.default_k
        pool = max(policy.candidate_pool, limit)
        now = self._now(ns)

        # The archive query runs here, after the active tier. On a worker beside the
        # product it gained nothing (deep recall at 100k memories: 8.84 ms threaded, 8.87
        # ms in line): right after the embedding ONNX's threads still spin on the other
        # core, and the worker waits for the GIL while this thread runs Python (README,
        # "How it works"). An archive copy's search on a second thread, with ONNX's
        # threads stopped after each run to free the core, was measured again and not
        # kept either: every other call got slower (bench/spinning.py, bench/NOTES.md).
        # Chroma returns active memories too: it is asked for enough that they do not
        # crowd out the archived ones.
        n_ask = min(pool + min(len(space.index), pool), st.n)  # a huge k asks for all
        archive: tuple[list[str], list[float]] | None = None
        # the best active memories (ties: by write order), and the similarities computed
        # on the way, kept for the candidates found otherwise (BM25, neighbours): a lookup
        # instead of reading their vectors back
        passes = self._filter_mask(ns, space, where) if where is not None else None
        # a filter few memories pass: each of them is scored, no index searched
        few = (
            self._few_passing(st, passes, include_invalidated, include_cold)
            if passes is not None
            else None
        )
        near: dict[str, float] = {}
        ranked: list[str] = []
        if few is not None:
            scored = [(space.index, np.full(len(space.index), np.nan, np.float32))]
            # archived ones' vectors from the archive's copy (made as a deep recall makes
            # it), as a search would read them: the same similarities to the last bit
            copy = (
                self._exact_archive(ns, space)
                if deep is not False and any(m not in space.index for m in few)
                else space.archive
            )
            if copy is not None:
                scored.append((copy, np.full(len(copy), np.nan, np.float32)))
            near = self._cosines(ns, space, qvec, few, scored) if few else {}
            seq_col = st.cols["seq"]
            # best first, ties by write order (as an index's search ranks them)
            ranked = sorted(few, key=lambda m: (-near[m], int(seq_col[st.index[m]])))
            ids = [m for m in ranked if m in space.index][:pool]
            sims = [near[m] for m in ids]
        elif passes is None:
            ids, found_sims, active_scores = space.index.nearest(qvec, pool, st.seqs_of)
            sims = found_sims.tolist()
            scored = [(space.index, active_scores)]
        else:  # asked for more until `pool` of them pass; the others take no places
            last: list[np.ndarray[Any, Any]] = []

            def active_top(n: int) -> tuple[list[str], list[float]]:
                found, found_sims, known = space.index.nearest(qvec, n, st.seqs_of)
                last[:] = [known]
                return found, found_sims.tolist()

            ids, sims = _visible_top(active_top, pool, lambda mids: ~passes(mids), len(space.index))
            kept = passes(ids)
            ids = [m for m, ok in zip(ids, kept, strict=True) if ok]
            sims = [v for v, ok in zip(sims, kept, strict=True) if ok]
            scored = [(space.index, last[0])]
        cand: dict[str, float] = dict(zip(ids, sims, strict=True))
        best = float(sims[0]) if len(sims) else -1.0

        reason: str | None = None
        if deep:
            reason = "deep=True"
        elif deep is None:
            if len(ids) < limit and st.n > len(space.index):
                reason = f"only {len(ids)} active memories for k={limit}"
            elif best < policy.archive_gate and st.n > len(space.index):
                reason = f"best active cosine {best:.3f} < gate {policy.archive_gate:.3f}"

        def hidden(mids: Sequence[str | None]) -> np.ndarray[Any, Any]:
            """Which of ``mids`` this recall cannot show (invalidated, cold, unknown, or
            not passing ``where``)."""
            out = self._hidden(st, mids, include_invalidated, include_cold)
            return out if passes is None else out | ~passes(mids)

        if reason is not None and few is not None:  # the archived ones that pass
            outside = [m for m in ranked if m not in space.index][:pool]
            archive = (outside, [near[m] for m in outside])
        elif reason is not None:
            exact = self._exact_archive(ns, space)
            if exact is not None:
                computed: list[np.ndarray[Any, Any]] = []  # by the last search

                def exact_top(n: int) -> tuple[list[str], list[float]]:
                    found, found_sims, known = exact.nearest(qvec, n, st.seqs_of)
                    computed[:] = [known]
                    return found, found_sims.tolist()

                archive = _visible_top(exact_top, pool, hidden, len(exact))
                scored.append((exact, computed[0]))
                space.archive_searched = "sketch" if isinstance(exact, SketchIndex) else "exact"
            else:
                space.archive_searched = "chroma"
                self._sync.refill(ns, st)
                archive = self.store.query(ns, qvec, n_ask)
                if self._sync.refill(ns, st):  # its collection vanished meanwhile: made again
                    archive = self.store.query(ns, qvec, n_ask)
                archive = _visible_top(
                    lambda n: self.store.query(ns, qvec, n), n_ask, hidden, st.n, archive
                )

        lexical: dict[str, float] = {}
        if policy.lexical_weight > 0:
            if few is not None:  # over what passes (deep=False: in the active tier)
                within_few = few if deep is not False else [m for m in few if m in space.index]
                allow_few = DocSet()
                allow_few.add(st.seqs_of(within_few))
                bm25 = self._lex.search(ns, query, pool, allow_few) if within_few else ([], [])
            elif bm25 is None:
                allow = space.active if deep is False else None
                bm25 = self._lex.search(ns, query, pool, allow)
            seqs, values = bm25
            by_seq = st.by_seq
            if few is None and (deep is not False or passes is not None):
                # hidden ones take no places (deep=False: over the active tier, where
                # only a filter hides)
                within = space.active if deep is False else None
                seqs, values = _visible_top(
                    lambda n: self._lex.search(ns, query, n, within),
                    pool,
                    lambda found: hidden([by_seq.get(seq) for seq in found]),
                    len(space.index) if deep is False else st.n,
                    (seqs, values),
                )
            for seq, value in zip(seqs, values, strict=True):
                hit = by_seq.get(seq)
                # deep=False: BM25 ranked the active tier only, as it stood before the
                # lock; a memory archived since is left out
                if hit is not None and (deep is not False or hit in space.index):
                    lexical[hit] = value
        if archive is not None:
            for mid, sim in zip(*archive, strict=True):
                if mid not in cand and mid in st.index:
                    cand[mid] = sim
        if lexical:
            if reason is None and deep is not False and any(m not in space.index for m in lexical):
                reason = "BM25 matched archived memories"
            only_lexical = [m for m in lexical if m not in cand]
            if only_lexical and few is not None:
                cand.update((m, near[m]) for m in only_lexical)
            elif only_lexical:
                cand.update(self._cosines(ns, space, qvec, only_lexical, scored))
        if len(cand) > 1:  # equal vectors tie, wherever they sit in an index
            untie(qvec, [index for index, _ in scored], cand)
        ids_all = list(cand)
        dense = cand
        raw_bm25 = np.fromiter((lexical.get(m, 0.0) for m in ids_all), np.float64, len(ids_all))
        # BM25 is scaled by the best of the memories this recall may show: one kept out
        # (invalidated, cold) set the scale of the others' relevance
        lexical_top = float(raw_bm25[~hidden(ids_all)].max(initial=0.0)) if lexical else 0.0
        fused = fuse(
            np.fromiter(dense.values(), np.float64, len(dense)), raw_bm25, policy, lexical_top
        )
        cand = dict(zip(ids_all, fused.tolist(), strict=True))
        which = list_question(query)
        listed: frozenset[str] = frozenset()
        if which is not False:
            listed = frozenset(self._list_items(ns, space, which, active_only=deep is False))
        pinned: frozenset[str] = frozenset()
        if standing:
            pinned = frozenset(self._standing(ns, st, standing, include_cold, now, limit))
        named: frozenset[str] = frozenset()
        if name_question(query):
            named = frozenset(self._named(ns, space, limit, active_only=deep is False))
        first = listed | pinned | named
        if first:
            top = max(cand.values(), default=1.0)
            for m in first:
                if cand.get(m, -np.inf) < top:
                    cand[m] = top
        signals = Signals(
            dense, lexical, listed, lexical_top=lexical_top, standing=pinned, named=named
        )

        return self._score_and_pack(
            query,
            ns,
            space,
            policy,
            now,
            cand,
            budget,
            limit,
            reason,
            include_invalidated=include_invalidated,
            include_cold=include_cold,
            feedback=feedback,
            signals=signals,
            include_superseded=include_superseded,
            qvec=qvec,
            active_only=deep is False,
            listed=first,
            scored=scored,
            passes=passes,
        )

    @staticmethod
    def _archived_share(st: NamespaceState) -> float:
        """The share of the namespace's active or archived memories in the archive."""
        tiers = st.col("tier")
        archived = int(np.count_nonzero(tiers == _ARCHIVE))
        either = archived + int(np.count_nonzero(tiers == _ACTIVE))
        return archived / either if either else 0.0

    @staticmethod
    def _hidden(
        st: NamespaceState,
        mids: Sequence[str | None],
        include_invalidated: bool,
        include_cold: bool,
    ) -> np.ndarray[Any, Any]:
        """Which of ``mids`` a recall with these flags cannot show: invalidated, cold
        (as :meth:`_score_and_pack` drops them), or no memory of ``st``."""
        index = st.index
        rows = np.fromiter(
            (index.get(m, -1) if m is not None else -1 for m in mids), np.int64, len(mids)
        )
        out: np.ndarray[Any, Any] = rows < 0
        known = np.maximum(rows, 0)
        if not include_invalidated:
            out |= st.cols["invalidated"][known]
        if not include_cold:
            out |= st.cols["tier"][known] == _COLD
        return out

    def _filter_mask(self, ns: str, space: Space, where: Filter) -> FilterMask:
        """Which memories of ``ns`` pass the filter ``where``: kept between recalls,
        brought up to date with the memories written since."""
        key = where.key
        masks = space.filters
        mask = masks.get(key)
        if mask is None:
            mask = masks[key] = FilterMask(where)
            while len(masks) > FILTERS_KEPT:
                masks.popitem(last=False)
        else:
            masks.move_to_end(key)
        st = space.state
        if st.n:
            seqs = st.col("seq")
            top = int(seqs.max())
            if top > mask.scanned:
                text = where.reads_text
                if mask.scanned < 0:  # the whole namespace, in one scan
                    rows = self._db.metadata_rows(ns, texts=text)
                else:
                    new = np.flatnonzero(seqs > mask.scanned).tolist()
                    rows = self._db.metadata_rows(ns, [st.ids[i] for i in new], texts=text)
                mask.take(rows, self._db.parse_metadata, top, st.ids, st.index)
        return mask

    def _few_passing(
        self,
        st: NamespaceState,
        mask: FilterMask,
        include_invalidated: bool,
        include_cold: bool,
    ) -> list[str] | None:
        """The memories a filtered recall can show, if few enough pass the filter
        (:meth:`_scored_limit`; each is then scored, no index searched), else ``None``."""
        live = mask.passing(st.ids, st.index, self._scored_limit(st.n))
        if live is None:
            return None
        if not live:
            return []
        shown = ~self._hidden(st, live, include_invalidated, include_cold)
        return [m for m, ok in zip(live, shown.tolist(), strict=True) if ok]

    def _scored_limit(self, n: int) -> int:
        """How many of a namespace of ``n`` memories may pass a filter for each to be
        scored (:attr:`FILTER_SCORED_ROWS`, :attr:`FILTER_SCORED_PER_ROOT`)."""
        return int(min(self.FILTER_SCORED_ROWS, self.FILTER_SCORED_PER_ROOT * math.sqrt(n)))

    def _exact_archive(self, ns: str, space: Space) -> ActiveIndex | None:
        """The in-memory index of the namespace's memories outside the active tier, built
        now if the namespace is small enough (an exact copy up to
        :attr:`EXACT_ARCHIVE_ROWS`, a sketch copy up to :attr:`SKETCH_ARCHIVE_ROWS`),
        else ``None`` (recall then queries Chroma)."""
        now = time.monotonic()
        if space.archive is not None:
            self._exact_lru[ns] = now
            self._exact_lru.move_to_end(ns)
            if (
                isinstance(space.archive, SketchIndex)
                and 0 < len(space.archive) <= self.EXACT_ARCHIVE_ROWS * 3 // 4
            ):
                # shrunk to 3/4 of the exact limit (where one that outgrew it is made
                # exact again, _copy_kind): exact again, from the rows it holds (search
                # results do not depend on whether the namespace was reloaded)
                exact = ActiveIndex(self._dim)
                exact.add(space.archive.ids, space.archive.rows())
                space.archive, space.archive_limit = exact, self.EXACT_ARCHIVE_ROWS
            return space.archive
        self._exact_lru.pop(ns, None)
        if space.copy_blocked:
            return None
        st = space.state
        outside = st.n - len(space.index)
        copy = self._copy_kind(outside, space.archive_dropped)
        if copy is None:
            return None
        kind, limit = copy
        budget = self._copy_total()
        need = max(outside, 8)  # rows a new index allocates at least
        held = {n: self._spaces[n] for n in self._exact_lru if n in self._spaces}
        # counted in rows allocated, spare ones included (rows held undercounted small
        # copies' memory 14-fold)
        total = sum(s.archive.capacity for s in held.values() if s.archive is not None)
        drop: list[str] = []
        for name, other in held.items():  # least recently searched first
            if total + need <= budget:
                break
            if other.archive is not None:
                if now - self._exact_lru[name] < self.COPY_KEEP_SECONDS:
                    break  # and every one after it was searched later still
                total -= other.archive.capacity
            drop.append(name)
        if total + need > budget:
            return None  # no room even so: nothing is dropped
        active = set(space.index.ids)
        ids, vectors = self._db.namespace_vectors(
            ns, lambda m: m in st.index and m not in active, st.n
        )
        if vectors is None or len(ids) < outside:
            # some without a stored vector (a store from before vectors were kept, a
            # damaged row deleted): Chroma answers, and the vectors are not read again
            # on every archive search (until an edit or a deletion could change that)
            space.copy_blocked = True
            return None
        for name in drop:  # only now: nothing is dropped for a copy that is not made
            held[name].archive = None
            del self._exact_lru[name]
        index = kind(self._dim)
        index.add(ids, vectors, adopt=True)
        space.archive, space.archive_limit, space.archive_dropped = index, limit, 0
        self._exact_lru[ns] = now
        return index

    def _copy_total(self) -> int:
        """:attr:`ARCHIVE_COPY_TOTAL`, or the value a caller gave the attribute's name
        before it covered sketch copies too (``EXACT_ARCHIVE_TOTAL``), with a warning."""
        old = getattr(self, "EXACT_ARCHIVE_TOTAL", None)
        if old is None:
            return self.ARCHIVE_COPY_TOTAL
        warnings.warn(
            "Oblivion.EXACT_ARCHIVE_TOTAL was renamed ARCHIVE_COPY_TOTAL (it bounds the "
            "archive copies of either kind); set that instead",
            DeprecationWarning,
            stacklevel=5,  # the caller of recall()
        )
        return int(old)

    def _copy_kind(self, outside: int, dropped: int) -> tuple[type[ActiveIndex], int] | None:
        """The kind of copy for ``outside`` memories outside the active tier, and the
        size past which it is dropped: exact, a sketch, or none (Chroma). ``dropped``:
        the limit a copy of the namespace outgrew (0: none did)."""
        for kind, limit in (
            (ActiveIndex, self.EXACT_ARCHIVE_ROWS),
            (SketchIndex, self.SKETCH_ARCHIVE_ROWS),
        ):
            # one that outgrew its limit is made again below 3/4 of it, so a namespace
            # hovering at the limit does not read its vectors back after every maintain()
            if 0 < outside <= (limit * 3 // 4 if dropped == limit else limit):
                return kind, limit
        return None

    def _written_texts(self, ns: str, st: NamespaceState) -> tuple[list[str], list[str]]:
        """Every stored memory of the namespace and its text as said (with the chat role
        its metadata names: :func:`~oblivion_core.speakers.as_said`), in write order: what
        the list and name indexes are built from."""
        ids = [st.by_seq[q] for q in sorted(st.by_seq)]
        said = self._said(ns, ids)
        stored = [m for m in ids if m in said]
        return stored, [said[m] for m in stored]

    def _list_items(
        self, ns: str, space: Space, which: str | None, *, active_only: bool
    ) -> list[str]:
        """The additions that make up list ``which`` now (not removed, not invalidated)."""
        if space.lists is None:  # built on the first list question (7 s at 100k memories)
            space.lists = ListIndex()
            space.lists.note(*self._written_texts(ns, space.state))
        return self._current(space, space.lists.additions(which), active_only=active_only)

    def _named(self, ns: str, space: Space, limit: int, *, active_only: bool) -> list[str]:
        """The newest memories in which the user gives their name (not superseded, not
        invalidated, not cold), for half of ``limit``'s places (at least one), as
        standing memories take (:meth:`_standing`)."""
        # built on the first such question: 0.85 s at 100k memories, 0.6 s of it reading
        # their texts and metadata
        if space.names is None:
            space.names = NameIndex()
            space.names.note(*self._written_texts(ns, space.state))
        current = self._current(space, space.names.namings(), active_only=active_only)
        return current[-_pinned_places(limit) :]

    def _current(self, space: Space, ids: Iterable[str], *, active_only: bool) -> list[str]:
        """Those of ``ids`` a recall may show as they stand: held, the newest valid
        statement of their chain, not invalidated, not cold (and in the active tier for
        ``active_only``)."""
        st = space.state
        out = []
        for m in ids:
            i = st.index.get(m)
            if (
                i is None
                or self._chain_head(st, m) != m  # superseded by a valid memory
                or st.cols["invalidated"][i]
                or st.cols["tier"][i] == _COLD
                or (active_only and m not in space.index)
            ):
                continue
            out.append(m)
        return out

    def _standing(
        self,
        ns: str,
        st: NamespaceState,
        categories: Iterable[str],
        include_cold: bool,
        now: float,
        limit: int,
    ) -> list[str]:
        """The memories of ``categories`` (see :meth:`recall`'s ``standing``) in any tier
        but the cold one (unless ``include_cold``), not invalidated; the best scored of
        them for half of ``limit``'s places (at least one), so that the query's own
        matches keep the rest. A superseded one brings its successor in its place, as
        any candidate does (:meth:`_score_and_pack`)."""
        rows = st.rows_of_categories(categories)
        rows = rows[~st.cols["invalidated"][rows]]
        if not include_cold:
            rows = rows[st.cols["tier"][rows] != _COLD]
        places = _pinned_places(limit)
        if len(rows) > places:  # as recall scores equally relevant memories
            policy = self._policy_of(ns)
            value = score(
                np.ones(len(rows)),
                self._activation(ns, st, now, rows),
                st.cols["importance"][rows],
                policy,
                1.0,
            )
            rows = rows[top_ranked(value, st.cols["seq"][rows], places)]
        return [st.ids[i] for i in rows.tolist()]

    def _cosines(
        self,
        ns: str,
        space: Space,
        qvec: Vectors,
        ids: list[str],
        scored: Sequence[tuple[ActiveIndex, np.ndarray[Any, Any]]] = (),
    ) -> dict[str, float]:
        """Exact cosine similarity of stored memories to the query (active or not).

        ``scored``: indexes with similarities to this query already computed, by row
        (:meth:`ActiveIndex.nearest`, the index unchanged since; NaN where not computed);
        those are looked up, the others' vectors read.
        """
        out: dict[str, float] = {}
        rest: list[str] = []
        held: dict[int, tuple[list[str], list[int]]] = {}  # not computed, in scored[i]
        for m in ids:
            for i, (index, values) in enumerate(scored):
                row = index.row_of(m)
                if row is not None:
                    value = float(values[row])
                    if value == value:  # computed
                        out[m] = value
                    else:
                        found, rows = held.setdefault(i, ([], []))
                        found.append(m)
                        rows.append(row)
                    break
            else:
                rest.append(m)
        for i, (found, rows) in held.items():  # one product per index
            out.update(zip(found, scored[i][0].products(qvec, rows).tolist(), strict=True))
        if rest:
            q = qvec.reshape(-1)
            out.update((m, float(vec @ q)) for m, vec in self._vectors(ns, space, rest).items())
        return out

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

    def _score_and_pack(
        self,
        query: str,
        ns: str,
        space: Space,
        policy: Policy,
        now: float,
        cand: Mapping[str, float],
        budget: int | None,
        limit: int,
        reason: str | None,
        *,
        include_invalidated: bool,
        include_cold: bool,
        feedback: bool,
        signals: Signals | None = None,
        include_superseded: bool = False,
        qvec: Vectors | None = None,
        active_only: bool = False,
        listed: frozenset[str] = frozenset(),
        scored: Sequence[tuple[ActiveIndex, np.ndarray[Any, Any]]] = (),
        successors: bool = True,
        passes: FilterMask | None = None,
    ) -> RecallResult:
        """Score candidates ``{id: relevance}``, pack the best into the budget, boost them.

        With ``policy.expand_neighbours = N`` (and a query vector), each of the best ``N``
        hits is followed by the memories written just after and just before it (within
        the adjacency window): the turn that answered it, the one that prompted it. For a
        place (within ``limit`` and the budget) a neighbour counts as
        ``policy.context_share`` of its hit's score (:func:`~oblivion_core.recall.place_priority`).

        A superseded candidate brings the newest memory of its chain along (with the
        same relevance, if that is higher than its own); unless ``include_superseded``,
        the stale one itself is dropped, otherwise it is ranked just below its successor.
        ``successors=False`` (candidates someone else chose, :meth:`rerank`): no memory is
        added or dropped; a stale candidate only ranks below a successor that is one.

        ``listed``: the current items of a list the query asks for; they come first and
        bring no neighbours. ``passes``: recall's ``where`` filter; only memories that
        pass it are shown (hits, neighbours, linked ones).
        """
        st = space.state
        cand = dict(cand)
        heads: dict[str, str] = {}
        for m in [m for m in cand if m in st.superseded_by]:
            head = self._chain_head(st, m, include_cold)
            if not successors:
                if head != m and head in cand:
                    heads[m] = head
                continue
            if head != m and head in st.index and not st.cols["invalidated"][st.index[head]]:
                heads[m] = head
                if active_only and head not in space.index:
                    continue  # deep=False: an archived successor stays there (m is stale)
                if cand.get(head, -np.inf) < cand[m]:
                    cand[head] = cand[m]
                    if signals is not None:
                        signals.inherit(head, m)
        cids = list(cand)
        rows = np.fromiter((st.index[m] for m in cids), np.int64, len(cids))
        keep = np.ones(len(cids), dtype=bool)
        if not include_invalidated:
            keep &= ~st.cols["invalidated"][rows]
        if not include_cold:
            keep &= st.cols["tier"][rows] != _COLD
        if heads and successors and not include_superseded and policy.hide_superseded:
            keep &= np.fromiter((m not in heads for m in cids), bool, len(cids))
        if passes is not None:
            keep &= passes(cids)
        if not keep.all():
            cids = [m for m, ok in zip(cids, keep, strict=True) if ok]
            rows = rows[keep]
        if not cids:
            return RecallResult(query, ns, (), 0, budget, reason is not None, reason, 0)
        rel = np.asarray([cand[m] for m in cids], dtype=np.float64)
        act = self._activation(ns, st, now, rows)
        imp = st.cols["importance"][rows]
        best = float(np.maximum(rel, 0.0).max())
        scores = score(rel, act, imp, policy, best)
        pos = {m: j for j, m in enumerate(cids)}
        capped: dict[str, str] = {}  # stale statement -> the successor it ranks below
        for m, head in heads.items():
            # newest statement first, always
            if m in pos and head in pos and scores[pos[m]] > scores[pos[head]] - 1e-6:
                scores[pos[m]] = scores[pos[head]] - 1e-6
                capped[m] = head
        order = rank_order(scores, st.cols["seq"][rows])
        if listed:  # a list question: the list's current items come first
            first = np.fromiter((cids[j] in listed for j in order), bool, len(order))
            order = np.concatenate([order[first], order[~first]])
        context_of: dict[str, tuple[str, str]] = {}
        hit_at: dict[int, int] = {}  # place in ``order`` of a neighbour -> its hit
        if policy.expand_neighbours and qvec is not None:
            hits = [cids[j] for j in order[: policy.expand_neighbours]]
            for hit in hits:
                if hit in listed:
                    continue  # a list item stands alone: its neighbours are other talk
                for which, mid in self._neighbours(st, policy, hit, space.summaries):
                    if active_only and mid not in space.index:
                        continue
                    if passes is not None and not passes.holds(mid):
                        continue
                    if mid not in hits and mid not in context_of:
                        context_of[mid] = (hit, which)
            fresh = [m for m in context_of if m not in pos]
            if fresh:  # neighbours that were not candidates: scored now, on their own
                extra_rel = self._cosines(ns, space, qvec, fresh, scored)
                f_rows = np.fromiter((st.index[m] for m in fresh), np.int64, len(fresh))
                f_rel = np.asarray([extra_rel.get(m, 0.0) for m in fresh], dtype=np.float64)
                if signals is not None:  # recall's relevance is fused: theirs too (no BM25)
                    f_rel = fuse(f_rel, np.zeros_like(f_rel), policy)
                f_act = self._activation(ns, st, now, f_rows)
                f_imp = st.cols["importance"][f_rows]
                for m, r in zip(fresh, f_rel.tolist(), strict=True):
                    cand[m] = r
                    pos[m] = len(cids)
                    cids.append(m)
                rows = np.concatenate([rows, f_rows])
                rel = np.concatenate([rel, f_rel])
                act = np.concatenate([act, f_act])
                imp = np.concatenate([imp, f_imp])
                scores = np.concatenate([scores, score(f_rel, f_act, f_imp, policy, best)])
            # interleave: hit, its next turn, its previous turn, next hit, ...
            by_hit: dict[int, list[int]] = {}
            for m, (hit, _) in context_of.items():
                by_hit.setdefault(pos[hit], []).append(pos[m])
            order, hit_at = interleave(order, len(hits), by_hit, len(cids))

        # tokens are counted only for the candidates packing reaches (the first k, unless
        # the budget skips some): at 10k memories a recall ranks ~135 candidates, and
        # counting them all (SQLite read + tiktoken for each one not yet counted) cost
        # ~1.2 ms of a deep recall
        per_item = policy.per_item_tokens
        if context_of:
            # places within k and the budget go by priority (list items first; a
            # neighbour as if it scored policy.context_share of its hit's score) and are
            # shown in rank order, each neighbour behind its hit
            hit_scores = np.full(len(order), np.nan)
            hit_scores[list(hit_at)] = scores[list(hit_at.values())]
            in_list = np.zeros(len(order), dtype=bool)
            if listed:
                in_list[[p for p, j in enumerate(order.tolist()) if cids[j] in listed]] = True
            prio = place_priority(scores[order], hit_scores, in_list, share=policy.context_share)
            by_prio = np.argsort(-prio, kind="stable")
            lazy = self._costs(ns, st, cids, rows, order[by_prio], per_item, limit)
            chosen = sorted(int(by_prio[c]) for c in pack(lazy, budget, limit, per_item))
        else:
            lazy = self._costs(ns, st, cids, rows, order, per_item, limit)
            chosen = pack(lazy, budget, limit, per_item)
        picked = [int(order[c]) for c in chosen]
        tokens = self._token_counts(ns, st, [cids[j] for j in picked], rows[picked])
        contents = self._db.contents(ns, [cids[j] for j in picked])

        shares = activation_share(rel, best, policy)
        boosts: dict[str, dict[str, Any]] = {}
        if feedback and picked:
            boosts = self._feedback(ns, space, policy, now, cids, rows, rel, act, picked)
        items = []
        rank_of = {cids[j]: r for r, j in enumerate(picked, start=1)} if context_of else {}
        for rank, (j, n_tokens) in enumerate(zip(picked, tokens, strict=True), start=1):
            mid = cids[j]
            i = int(rows[j])
            tier = Tier(int(st.cols["tier"][i])) if mid not in boosts else boosts[mid]["from_tier"]
            extra: dict[str, Any] = {"boost": boosts.get(mid, {}).get("public")}
            if mid in capped:
                extra["ranked_below"] = capped[mid]
            found = signals.of(mid) if signals is not None else None
            if found is not None:
                extra["relevance_signals"] = found
            note = None
            if mid in context_of:
                hit, which = context_of[mid]
                extra["context_for"], extra["neighbour"] = hit, which
                side = "after" if which == "next" else "before"
                where = f"rank {rank_of[hit]}" if hit in rank_of else f"{hit} (not packed)"
                note = f"context: the turn written just {side} {where}"
            elif signals is not None and mid in signals.standing:
                note = "standing: shown whatever the query (recall's standing=)"
            elif signals is not None and mid in signals.named:
                note = "names the user: shown first for a question about the user's name"
            items.append(
                self._item(
                    ns,
                    space,
                    policy,
                    mid,
                    rank=rank,
                    of=len(cids),
                    values=(float(rel[j]), float(act[j]), float(imp[j]), float(shares[j])),
                    score_value=float(scores[j]),
                    tier=tier,
                    text=contents[mid][0],
                    tokens=n_tokens,
                    metadata=contents[mid][1],
                    archive_reason=reason,
                    extra=extra,
                    note=note,
                )
            )
        total = sum(t + per_item for t in tokens)
        if policy.expand_links and successors and items and len(items) < limit:
            more, total = self._expansions(
                ns,
                space,
                policy,
                now,
                items,
                cand,
                best,
                budget,
                total,
                limit - len(items),
                passes,
            )
            items.extend(more)
        return RecallResult(
            query, ns, tuple(items), total, budget, reason is not None, reason, len(cids)
        )

    def _item(
        self,
        ns: str,
        space: Space,
        policy: Policy,
        mid: str,
        *,
        rank: int,
        of: int,
        values: tuple[float, float, float, float],
        score_value: float,
        tier: Tier,
        text: str,
        tokens: int,
        metadata: Mapping[str, Any],
        archive_reason: str | None,
        extra: dict[str, Any],
        note: str | None = None,
    ) -> RecalledItem:
        """One recalled item with its ``why``; ``values`` are (relevance, activation,
        importance, activation share)."""
        st = space.state
        i = st.index[mid]
        if mid in st.superseded_by:
            extra["superseded_by"] = st.superseded_by[mid]
        if mid in space.review:
            extra["flagged_for_review"] = space.review[mid]
        if mid in space.summaries:
            extra["summary_of"] = list(space.summaries[mid])
        rel, act, imp, share = values
        category = st.category(i)
        why = explain(
            rank=rank,
            of=of,
            relevance=rel,
            activation=act,
            importance=imp,
            tier=tier,
            category=category,
            policy=policy,
            archive_reason=archive_reason,
            extra=extra,
            share=share,
        )
        if "ranked_below" in extra:  # a stale statement's score was capped (see above)
            why["uncapped_score"] = why["score"]
            why["explanation"] += (
                f"; capped at {score_value:.3f}, just below its successor "
                f"{extra['ranked_below']} (a stale statement ranks after the newer one)"
            )
        why["score"] = score_value  # the ranking's own value (explain() sums in another order)
        if note:
            why["explanation"] += f"; {note}"
        return RecalledItem(
            id=mid,
            text=text,
            namespace=ns,
            category=category,
            tier=tier,
            relevance=rel,
            activation=act,
            importance=imp,
            score=score_value,
            tokens=tokens,
            why=why,
            metadata=metadata,
        )

    def _token_counts(
        self, ns: str, st: NamespaceState, ids: list[str], rows: np.ndarray[Any, Any]
    ) -> list[int]:
        """Token counts of memories, counted once per text and cached in ``st`` (as
        count + 1, so 0 means not counted yet)."""
        cache = st.cols["tokens"]
        todo = [m for m, i in zip(ids, rows, strict=True) if cache[i] <= 0]
        if todo:
            for m, text in self._db.texts(ns, todo).items():
                cache[st.index[m]] = count_tokens(self.token_counter, text) + 1
        return [int(cache[i]) - 1 for i in rows]

    def _costs(
        self,
        ns: str,
        st: NamespaceState,
        cids: list[str],
        rows: np.ndarray[Any, Any],
        order: np.ndarray[Any, Any],
        per_item: int,
        first: int,
    ) -> Iterator[int]:
        """Each candidate's cost (tokens + ``per_item``) in ``order``, counted as the
        consumer gets there: the ``first`` ones, then twice as many at each step (one
        SQLite read for the texts not counted yet)."""
        start, step = 0, max(first, 1)
        while start < len(order):
            part = order[start : start + step]
            counts = self._token_counts(ns, st, [cids[j] for j in part], rows[part])
            yield from (t + per_item for t in counts)
            start, step = start + step, step * 2

    def _expansions(
        self,
        ns: str,
        space: Space,
        policy: Policy,
        now: float,
        hits: list[RecalledItem],
        relevance: Mapping[str, float],
        best: float,
        budget: int | None,
        used: int,
        room: int,
        passes: FilterMask | None = None,
    ) -> tuple[list[RecalledItem], int]:
        """Strongest linked memories of the hits, while budget remains (marked in ``why``);
        with ``passes`` (recall's ``where``), only those that pass it."""
        st = space.state
        taken = {it.id for it in hits}
        wanted: list[tuple[str, str, float]] = []
        for hit in hits:
            for other, w in space.graph.strongest(hit.id, policy.expand_max, exclude=taken):
                i = st.index.get(other)
                if (
                    i is None
                    or st.cols["invalidated"][i]
                    or st.cols["superseded"][i]
                    or st.cols["tier"][i] == _COLD
                    or (passes is not None and not passes.holds(other))
                ):
                    continue
                taken.add(other)
                wanted.append((other, hit.id, w))
        if not wanted:
            return [], used
        contents = self._db.contents(ns, [m for m, _, _ in wanted])
        rows = np.asarray([st.index[m] for m, _, _ in wanted], dtype=np.int64)
        acts = self._activation(ns, st, now, rows)
        out: list[RecalledItem] = []
        for (mid, source, w), i, a in zip(wanted, rows, acts, strict=True):
            if len(out) >= room:
                break
            t = self._token_counts(ns, st, [mid], np.asarray([i]))[0]
            cost = t + policy.per_item_tokens
            if budget is not None and used + cost > budget:
                continue
            used += cost
            rel = float(relevance.get(mid, 0.0))
            imp = float(st.cols["importance"][i])
            share = float(activation_share(np.asarray([rel]), best, policy)[0])
            out.append(
                self._item(
                    ns,
                    space,
                    policy,
                    mid,
                    rank=len(hits) + len(out) + 1,
                    of=len(hits) + len(wanted),
                    values=(rel, float(a), imp, share),
                    score_value=float(
                        score(np.asarray([rel]), np.asarray([a]), np.asarray([imp]), policy, best)[
                            0
                        ]
                    ),
                    tier=Tier(int(st.cols["tier"][i])),
                    text=contents[mid][0],
                    tokens=t,
                    metadata=contents[mid][1],
                    archive_reason=None,
                    # context a link brought along: shown, not boosted (as the RecalledItem
                    # doc says, why["boost"] holds the boost it received: none)
                    extra={"expanded_from": source, "link_weight": w, "boost": None},
                    note=f"added as context: linked to {source} (weight {w:.2f})",
                )
            )
        return out, used

    def _feedback(
        self,
        ns: str,
        space: Space,
        policy: Policy,
        now: float,
        cids: list[str],
        rows: np.ndarray[Any, Any],
        rel: np.ndarray[Any, Any],
        act: np.ndarray[Any, Any],
        picked: list[int],
    ) -> dict[str, dict[str, Any]]:
        """Boost what a recall returned; restore archived items that rise above the band.

        Returns each picked item's tier before and its boost (for ``why``). The boosts
        are computed now; applying them (activations, use counts, spreading, promotions,
        the journal) is queued on the engine's lock to run right after the recall
        returns (:mod:`oblivion_core.write_behind`), unless this recall runs inside
        another call or link expansion will read the boosted state.
        """
        st = space.state
        out: dict[str, dict[str, Any]] = {}
        # the boosts of all picked items at once (numpy per scalar costs ~1 us a call)
        c = st.cols
        prow = rows[picked]
        tiers = c["tier"][prow]
        gains = np.where(tiers == _ARCHIVE, policy.archive_gain, 1.0)
        betas = self._category_params(ns, st, policy)[1][c["cat"][prow]]
        deltas = decay.boost_delta(betas, rel[picked], c["confidence"][prow], gains)
        before = act[picked]
        boosted = decay.boost(before, deltas, policy.cap)
        valid = ~c["invalidated"][prow]
        ids = [cids[j] for j in picked]
        for mid, tier, gain, a0, a1, ok in zip(
            ids,
            tiers.tolist(),
            gains.tolist(),
            before.tolist(),
            boosted.tolist(),
            valid.tolist(),
            strict=True,
        ):
            public: dict[str, Any] | None = None  # invalidated: never reinforced
            if ok:
                public = {"before": a0, "after": a1, "gain": gain}
                if tier == _ARCHIVE and a1 > policy.archive_high:
                    public["promoted"] = True
            out[mid] = {"from_tier": Tier(tier), "public": public}

        boosts = _Boosts(ids, prow, tiers, before, boosted, valid, rel[picked])

        def apply() -> None:
            self._apply_feedback(ns, space, policy, now, boosts)

        if self.WRITE_BEHIND and self._lock.outermost and not policy.expand_links:
            self._lock.later(lambda: self._apply_later(ns, space, apply))
        else:
            apply()
        return out

    def _apply_later(self, ns: str, space: Space, apply: Callable[[], None]) -> None:
        """Run a recall's queued feedback; if it fails, the namespace is reloaded from the
        store (as after any failed change) and the failure logged, not raised: the call
        that took the lock did not cause it."""
        if self._closed or self._spaces.get(ns) is not space:
            return  # reloaded since: the store has no trace of the boosts either
        try:
            with self._consistent(ns, write_queued=False):
                apply()
        except Exception:
            logger.exception(
                "the feedback of a recall in namespace %r could not be applied; the "
                "namespace was reloaded from the store without it",
                ns,
            )

    def _apply_feedback(
        self,
        ns: str,
        space: Space,
        policy: Policy,
        now: float,
        boosts: _Boosts,
    ) -> None:
        """Apply the boosts :meth:`_feedback` computed, at the recall's time ``now``."""
        st = space.state
        journal: list[JournalRow] = []
        touched: list[int] = []
        restore: list[str] = []
        valid = boosts.valid
        self._set_activation(
            st, boosts.rows[valid], boosts.after[valid], now, policy.retrieval_stability
        )
        seeds: dict[str, float] = {}
        for mid, i, tier, a0, a1, relevance, ok in zip(
            boosts.ids,
            boosts.rows.tolist(),
            boosts.tiers.tolist(),
            boosts.before.tolist(),
            boosts.after.tolist(),
            boosts.relevances.tolist(),
            valid.tolist(),
            strict=True,
        ):
            if not ok:  # shown on request, never reinforced
                continue
            st.cols["relevance"][i] = max(relevance, 0.0)  # what mark_used() boosts by
            usage = space.usage.of(st.category(i))
            usage.recalled += 1
            if tier == _ARCHIVE:
                usage.archive_hits += 1
                if a1 > policy.archive_high:
                    restore.append(mid)
            touched.append(i)
            journal.append((mid, "recall", a0, a1, {"relevance": relevance}))
            seeds[mid] = a1 - a0
        touched += self._spread(ns, space, policy, seeds, now, journal)
        restore = self._room_for(ns, space, policy, now, restore)
        if restore:
            rows_, moved = self._promote(ns, space, restore, "recalled from the archive")
            touched += rows_
            journal += moved
        # boosts and promotions are written in a batch (StateDB.defer), at the latest
        # StateDB.DEFER_SECONDS from now, even if no other call comes
        self._db.defer(
            st,
            [st.ids[i] for i in touched],
            now,
            journal,
            meta={f"usage:{ns}": space.usage.to_json},
        )
        self._lock.due(self._db.DEFER_SECONDS, self._hand_off)

    def _hand_off(self) -> None:
        """Hand the deferred updates to the store's writer (on the lock's timer)."""
        if self._closed:
            return
        self._db.hand_off()
        # again later while anything is owed: updates queued behind a batch still being
        # written, or that batch itself until it is settled (a write that met another
        # process's lock is retried then, not only at the next call)
        if self._db.deferred or self._db.writing:
            self._lock.due(self._db.DEFER_SECONDS, self._hand_off)

    # ================================================================ feedback API
    def mark_used(
        self, ids: Iterable[str], *, namespace: str | None = None, skip_missing: bool = False
    ) -> list[float]:
        """Give the larger "used" boost to memories the answer actually drew on.

        The boost is ``beta * relevance * confidence * used_gain`` (relevance from the
        memory's last recall, 1.0 if it was never recalled) and use slows its decay.
        Returns the new activations.

        ``skip_missing``: boost those of ``ids`` still stored and skip the others
        (forgotten since the answer was given, their namespace too), instead of
        refusing the whole call with :class:`UnknownMemoryError`; the activations
        returned are those of the memories boosted, in order.
        """
        ids = list(dict.fromkeys(check_ids(ids)))  # one boost per memory
        skip_missing = check_flag(skip_missing, "skip_missing")
        if skip_missing:
            name = self.default_namespace if namespace is None else check_namespace(namespace)
            if name not in self._known:
                return []
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            policy = self.policy_for(ns)
            if skip_missing:
                ids = [m for m in ids if m in space.state.index]
                if not ids:
                    return []
            rows = [self._row(space, m) for m in ids]
            now = self._now(ns)
            return self._bump(
                ns,
                space,
                rows,
                now,
                kind="used",
                deltas=[
                    float(
                        decay.boost_delta(
                            self._beta(ns, space.state.category(i)),
                            space.state.cols["relevance"][i],
                            space.state.cols["confidence"][i],
                            policy.used_gain,
                        )
                    )
                    for i in rows
                ],
                stability=policy.used_stability,
            )

    def reinforce(
        self,
        ids: Iterable[str],
        *,
        relevances: Sequence[float] | None = None,
        namespace: str | None = None,
    ) -> list[float]:
        """Give memories the boost a recall would have given them (for callers that pick
        results themselves, e.g. a filtered store search). Returns the new activations.

        Args:
            ids: Memories to boost (each once).
            relevances: Relevance of each in ``[0, 1]`` (default 1.0).
            namespace: Where they live.
        """
        ids = list(dict.fromkeys(check_ids(ids)))
        if relevances is not None and (
            isinstance(relevances, str | bytes | Mapping)
            or not isinstance(relevances, Sequence | np.ndarray)
        ):
            raise InvalidInputError(
                f"relevances must be a list with one number per id, got {type(relevances).__name__}"
            )
        rels = [1.0] * len(ids) if relevances is None else list(relevances)
        if len(rels) != len(ids):
            raise InvalidInputError("relevances must have one entry per (distinct) id")
        rels = [check_unit(r, "relevance") for r in rels]
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            policy = self.policy_for(ns)
            rows = [self._row(space, m) for m in ids]
            st = space.state
            deltas = [
                float(
                    decay.boost_delta(
                        self._beta(ns, st.category(i)),
                        r,
                        st.cols["confidence"][i],
                        policy.archive_gain if st.cols["tier"][i] == Tier.ARCHIVE else 1.0,
                    )
                )
                for i, r in zip(rows, rels, strict=True)
            ]
            for i, r in zip(rows, rels, strict=True):
                st.cols["relevance"][i] = r
            return self._bump(
                ns,
                space,
                rows,
                self._now(ns),
                kind="recall",
                deltas=deltas,
                stability=policy.retrieval_stability,
            )

    def clear(self, *, namespace: str | None = None) -> int:
        """Delete every memory of a namespace (texts, vectors, state); returns how many.

        The journal keeps the history; the namespace stays usable.
        """
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            n = space.state.n
            if n:
                self._delete(ns, space, list(range(n)), self._now(ns), "clear() called")
            return n

    def confirm(self, memory_id: str, *, namespace: str | None = None) -> float:
        """The user confirmed this memory: a strong boost, and it decays slower from now on.

        Returns the new activation. An invalidated memory is not boosted (its
        :meth:`invalidate` stands; :meth:`remember` the fact again if it holds after all):
        its activation, 0, is returned and nothing is recorded.
        """
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            policy = self.policy_for(ns)
            i = self._row(space, memory_id)
            now = self._now(ns)
            return self._bump(
                ns,
                space,
                [i],
                now,
                kind="confirm",
                deltas=[policy.confirm_boost],
                stability=policy.confirm_stability,
            )[0]

    def _bump(
        self,
        ns: str,
        space: Space,
        rows: list[int],
        now: float,
        *,
        kind: str,
        deltas: list[float],
        stability: float,
    ) -> list[float]:
        with self._consistent(ns):
            st = space.state
            policy = self.policy_for(ns)
            idx = np.asarray(rows, dtype=np.int64)
            before = self._activation(ns, st, now, idx)
            after = decay.boost(before, np.asarray(deltas), policy.cap)
            # an invalidated memory is never reinforced (as in recall's feedback) and
            # passes nothing on
            valid = ~st.cols["invalidated"][idx]
            after = np.where(valid, after, before)
            rows = [i for i, ok in zip(rows, valid.tolist(), strict=True) if ok]
            before, after_valid = before[valid], after[valid]
            journal: list[JournalRow] = []
            restore: list[str] = []
            for i, b, a in zip(rows, before, after_valid, strict=True):
                self._set_activation(st, i, float(a), now, stability)
                mid = st.ids[i]
                usage = space.usage.of(st.category(i))
                if kind == "used":
                    usage.used += 1
                elif kind == "recall":  # reinforce(): counted as recall's feedback counts
                    usage.recalled += 1
                    usage.archive_hits += int(st.cols["tier"][i] == Tier.ARCHIVE)
                if (
                    st.cols["tier"][i] == Tier.ARCHIVE
                    and a > policy.archive_high
                    and not st.cols["invalidated"][i]
                ):
                    restore.append(mid)
                journal.append((mid, kind, float(b), float(a), {}))
            seeds = {
                st.ids[i]: float(a - b) for i, b, a in zip(rows, before, after_valid, strict=True)
            }
            touched = rows + self._spread(ns, space, policy, seeds, now, journal)
            restore = self._room_for(ns, space, policy, now, restore)
            if restore:  # journaled after the boost that lifted them, as recall's are
                promoted, moved = self._promote(ns, space, restore, f"{kind} boost")
                touched += promoted
                journal += moved
            with self._db.transaction() as conn:
                self._db.save_rows(conn, st, touched)
                self._db.journal(conn, now, ns, journal)
                if kind in ("used", "recall"):  # the counts go with the signal
                    self._db.set_meta(f"usage:{ns}", space.usage.to_json(), conn)
            return [float(a) for a in after]

    # ================================================================ associations
    def link(self, a: str, b: str, weight: float = 1.0, *, namespace: str | None = None) -> float:
        """Associate two memories (undirected). A stronger weight replaces a weaker one.

        Args:
            a / b: Ids of two different memories in the namespace.
            weight: In ``(0, 1]``; how much of a boost flows between them.

        Returns:
            The link's weight after the call.
        """
        ns = self._ns(namespace)
        weight = finite(weight, "link weight", "a number in (0, 1]")
        if not 0 < weight <= 1:
            raise InvalidInputError(f"link weight must be in (0, 1], got {weight!r}")
        a, b = check_id(a), check_id(b)
        if a == b:
            raise InvalidInputError(f"cannot link memory {a!r} to itself; pass two different ids")
        with self._lock:
            self._check_open()
            space = self._space(ns)
            self._row(space, a)
            self._row(space, b)
            now = self._now(ns)
            with self._consistent(ns):
                with self._db.transaction() as conn:
                    w = space.graph.add(a, b, float(weight))
                    self._db.save_links(conn, ns, [(a, b, w, "explicit")])
                    self._db.journal(  # under both ends: history(b) shows it too
                        conn,
                        now,
                        ns,
                        [
                            (a, "link", None, None, {"to": b, "weight": w}),
                            (b, "link", None, None, {"to": a, "weight": w}),
                        ],
                    )
                return w

    def links(self, memory_id: str, *, namespace: str | None = None) -> dict[str, float]:
        """The memories linked to ``memory_id`` and their weights."""
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            self._row(space, memory_id)
            return space.graph.neighbours(memory_id)

    def _auto_link(
        self,
        ns: str,
        space: Space,
        policy: Policy,
        ids: list[str],
        recent_ids: list[str],
        sims: Any,
        now: float,
        vectors: Vectors,
        recent: Vectors,
    ) -> None:
        """Link new memories to similar recent ones and to the memory written just before.

        ``sims[k, j]`` is the similarity of ``ids[k]`` to ``recent_ids[j]`` (of
        ``vectors[k]`` to ``recent[j]``).
        """
        st = space.state
        new: list[tuple[str, str, float, str]] = []
        if policy.link_neighbours and policy.link_window and recent_ids:
            own, theirs = st.seqs_of(ids), st.seqs_of(recent_ids)
            # only earlier memories at or above the threshold qualify, and a link needs a
            # positive weight (a threshold <= 0 let dissimilar ones in as 0.0 links); the
            # best few of each row, without sorting whole rows
            ok = (theirs[None, :] < own[:, None]) & (sims >= policy.link_similarity) & (sims > 0)
            masked = np.where(ok, sims, -np.inf)
            tops = row_tops(masked, policy.link_neighbours)
            for k, (mid, best) in enumerate(zip(ids, tops, strict=True)):
                for j, weight in exact_links(masked[k], best, vectors[k], recent):
                    new.append((mid, recent_ids[j], weight, "similar"))
        prev = space.last_write
        for mid in ids:
            if (
                policy.adjacency_weight > 0
                and prev is not None
                and prev[0] in st.index
                and now - prev[1] <= policy.adjacency
            ):
                new.append((mid, prev[0], policy.adjacency_weight, "adjacent"))
            prev = (mid, now)
        space.last_write = prev
        graph = self._usable_links(ns, space) if new else None
        if graph is not None:
            with self._db.transaction() as conn:
                self._db.save_links(
                    conn, ns, [(a, b, graph.add(a, b, w), kind) for a, b, w, kind in new]
                )

    @staticmethod
    def _usable_links(ns: str, space: Space) -> LinkGraph | None:
        """``space.graph``, or ``None`` if the links table holds a damaged row: a
        recall's spreading and a write's automatic links then go without, with one
        warning per load, instead of failing every recall's feedback and every write
        (``stats()``, ``links()``, ``link()`` and ``invalidate()`` raise the error)."""
        try:
            return space.graph
        except StoreCorruptError:
            if not space.links_warned:
                space.links_warned = True
                logger.warning(
                    "the links of namespace %r cannot be read; recall boosts do not spread "
                    "and writes are not linked until the store is fixed",
                    ns,
                    exc_info=True,
                )
            return None

    def _spread(
        self,
        ns: str,
        space: Space,
        policy: Policy,
        seeds: Mapping[str, float],
        now: float,
        journal: list[JournalRow],
    ) -> list[int]:
        """Let part of the boosts in ``seeds`` flow to linked memories; returns touched rows."""
        if policy.spread_fraction <= 0:
            return []
        graph = self._usable_links(ns, space)
        if graph is None or not graph.adj:
            return []
        st = space.state
        shares = spread(
            graph.adj,
            seeds,
            fraction=policy.spread_fraction,
            hop_decay=policy.spread_hop_decay,
            max_hops=policy.spread_hops,
            max_nodes=policy.spread_max_nodes,
        )
        known = [m for m in shares if m in st.index]
        rows = np.fromiter((st.index[m] for m in known), np.int64, len(known))
        ok = ~(st.cols["invalidated"][rows] | st.cols["superseded"][rows])
        if not ok.all():
            rows = rows[ok]
            known = [m for m, good in zip(known, ok.tolist(), strict=True) if good]
        if not known:
            return []
        before = self._activation(ns, st, now, rows)
        after = decay.boost(before, np.asarray([shares[m] for m in known]), policy.cap)
        self._set_activation(st, rows, after, now, 0.0, count_access=False)  # not an access
        journal.extend(
            (m, "spread", b, a, {"share": shares[m]})
            for m, b, a in zip(known, before.tolist(), after.tolist(), strict=True)
        )
        out: list[int] = rows.tolist()
        return out

    def supersede(
        self, old_id: str, new_id: str, *, namespace: str | None = None, reason: str = "explicit"
    ) -> None:
        """Mark ``old_id`` as superseded by ``new_id``: the older memory is kept, pointing
        to its successor (``get(old_id).superseded_by``; this adds no association link,
        see :meth:`link`) and demoted; recall returns the successor in its place."""
        ns = self._ns(namespace)
        reason = check_reason(reason) or "explicit"
        if old_id == new_id:
            raise InvalidInputError("a memory cannot supersede itself; pass two different ids")
        with self._lock:
            self._check_open()
            space = self._space(ns)
            self._row(space, old_id)
            self._row(space, new_id)
            # old_id's own successor is replaced, so the pair makes a cycle exactly when
            # old_id is anywhere on new_id's chain (not only at its end)
            if _on_chain(space.state.superseded_by.get, new_id, old_id):
                raise InvalidInputError(
                    f"{new_id!r} is already superseded (directly or not) by {old_id!r}; "
                    "superseding it back would make a cycle"
                )
            self._set_superseded(ns, space, [(old_id, new_id)], self._now(ns), reason)

    def _detect_supersession(
        self,
        ns: str,
        space: Space,
        policy: Policy,
        ids: list[str],
        texts: list[str],
        vectors: Vectors,
        recent_ids: list[str],
        recent_sims: Any,
        now: float,
        said: list[str],
        *,
        newest: bool = False,
    ) -> list[tuple[int, list[Candidate]]]:
        """Let each new memory supersede the older memories it makes stale (``newest``:
        every other memory counts as older, as for a text just edited): the candidates
        (:meth:`_stale_candidates`), judged (:meth:`_judge_stale`), applied; returns
        ``[]``. With a ``supersession_judge`` (a model may take seconds) the candidates
        are returned instead, for :meth:`_judge_outside_the_lock` once the lock is let go.
        ``said``: the texts as the rule reads them (:meth:`_said`)."""
        found = self._stale_candidates(
            ns, space, ids, texts, said, vectors, recent_ids, recent_sims, newest=newest
        )
        if self.supersession_judge is not None:
            return found
        pairs = self._judge_stale(policy, ids, said, found)
        if pairs:
            self._set_superseded(ns, space, pairs, now, "detected on write")
        return []

    def _stale_candidates(
        self,
        ns: str,
        space: Space,
        ids: list[str],
        texts: list[str],
        said: list[str],
        vectors: Vectors,
        recent_ids: list[str],
        recent_sims: Any,
        *,
        newest: bool = False,
    ) -> list[tuple[int, list[Candidate]]]:
        """The older memories each new text may make stale, by its place in ``texts``
        (call under the engine's lock), with their texts as the rule reads them, as
        ``said`` holds the new ones' (:meth:`_said`).

        Candidates: the most similar of the recent memories (``recent_sims``) and of the
        whole active tier, and the best BM25 matches among all memories, those still
        current. Only texts that state something (a subject, a list operation, a cue or
        a rejected value) are judged by the offline rule.
        """
        st = space.state
        judge = self.supersession_judge
        statements = [parse(text) for text in said]
        judged = [
            k
            for k, s in enumerate(statements)
            if judge is not None or s.subject or s.op or s.cue or s.negated
        ]
        # the most similar active memories anywhere (a restatement months later), in one
        # product for the whole batch
        found = space.index.search_many(vectors[judged], _SUPERSEDE_CANDIDATES + 1)
        nearest = dict(zip(judged, found, strict=True))
        # the most similar recent memories of every text
        recent_best = (
            dict(zip(judged, row_tops(recent_sims[judged], _SUPERSEDE_CANDIDATES), strict=True))
            if recent_ids
            else {}
        )
        # candidates of every judged text first, so their vectors and texts are read from
        # SQLite in one query each for the whole batch (nothing below changes the state)
        found_sims: list[dict[str, float]] = []
        lexical_of: list[list[str]] = []
        for k in judged:
            sims: dict[str, float] = {}
            if recent_ids:
                for j in recent_best[k]:
                    sims[recent_ids[j]] = float(recent_sims[k, j])
            near, near_sims = nearest[k]
            for m, sim in zip(near, near_sims, strict=True):
                sims.setdefault(m, float(sim))
            seqs, _ = self._lex.search(ns, texts[k], _SUPERSEDE_CANDIDATES)
            keywords = subject_query(statements[k])
            if keywords:  # older statements of the same subject, archived ones included
                seqs = [*seqs, *self._lex.search(ns, keywords, _SUPERSEDE_CANDIDATES)[0]]
            lexical = [st.by_seq[q] for q in seqs if q in st.by_seq and st.by_seq[q] not in sims]
            found_sims.append(sims)
            lexical_of.append(list(dict.fromkeys(lexical)))
        vectors_of = self._vectors(ns, space, list({m: None for ms in lexical_of for m in ms}))
        older_of: list[list[str]] = []
        for k, sims, lexical in zip(judged, found_sims, lexical_of, strict=True):
            q = vectors[k]
            sims.update((m, float(vectors_of[m] @ q)) for m in lexical if m in vectors_of)
            own_seq = int(st.cols["seq"][st.index[ids[k]]])
            older_of.append(
                [
                    m
                    for m in sims
                    if m in st.index
                    and (m != ids[k] if newest else int(st.cols["seq"][st.index[m]]) < own_seq)
                    # current: not superseded, or only by memories since invalidated
                    and self._chain_head(st, m) == m
                    and not st.cols["invalidated"][st.index[m]]
                    # a summary states several facts: one restated would hide the others
                    and m not in space.summaries
                ]
            )
        old_texts = self._said(ns, list({m: None for ms in older_of for m in ms}))
        return [
            (k, [Candidate(m, old_texts[m], sims[m]) for m in older])
            for k, sims, older in zip(judged, found_sims, older_of, strict=True)
            if older
        ]

    def _said(self, ns: str, ids: list[str]) -> dict[str, str]:
        """Texts of memories ``ids`` as the stale-fact rule reads them: opened with the
        chat role their metadata names (:func:`~oblivion_core.speakers.as_said`)."""
        return {m: as_said(text, meta) for m, (text, meta) in self._db.contents(ns, ids).items()}

    def _judge_stale(
        self,
        policy: Policy,
        ids: list[str],
        texts: list[str],
        found: list[tuple[int, list[Candidate]]],
    ) -> list[tuple[str, str]]:
        """``(old, new)`` pairs: which candidates each new text makes stale. Reads no
        engine state, so a judge that asks a model runs outside the engine's lock."""
        judge = self.supersession_judge
        offline = LexicalSupersession(
            policy.supersede_similarity, policy.supersede_fallback_similarity
        )
        rule = judge if judge is not None else offline
        verdict = getattr(rule, "verdict", None)
        pairs: list[tuple[str, str]] = []
        for k, cands in found:
            if isinstance(rule, LexicalSupersession):
                chosen = rule.choose(texts[k], cands)
            elif callable(verdict):
                # a judge that may abstain (a model that gave no usable answer): those
                # candidates go to the offline rule, together, as with no judge
                answers = [(c, verdict(texts[k], c.text, c.similarity)) for c in cands]
                chosen = [c.id for c, yes in answers if yes]
                undecided = [c for c, yes in answers if yes is None]
                if undecided:
                    chosen += offline.choose(texts[k], undecided)
            else:
                chosen = [c.id for c in cands if rule.supersedes(texts[k], c.text, c.similarity)]
            pairs.extend((old, ids[k]) for old in chosen)
        return pairs

    def _apply_stale(
        self,
        ns: str,
        space: Space,
        pairs: list[tuple[str, str]],
        now: float,
        said: Mapping[str, str],
    ) -> None:
        """Apply pairs judged outside the lock (:meth:`_judge_stale`), those that still
        hold (a write, edit or forget may have come in between): both memories there,
        valid and saying what they said when judged (``said``: id -> text), the older
        one still current, and no cycle, counting the pairs applied before it."""
        st = space.state
        now_says = self._said(ns, [m for m in said if m in st.index])
        chosen: dict[str, str] = {}  # old -> new, as applied below

        def successor(m: str) -> str | None:
            return chosen.get(m, st.superseded_by.get(m))

        for old, new in pairs:
            if old not in st.index or new not in st.index:
                continue
            if any(now_says.get(m) != said.get(m) for m in (old, new)):
                continue  # edited since: the verdict was about other words
            if st.cols["invalidated"][st.index[old]] or st.cols["invalidated"][st.index[new]]:
                continue
            if self._chain_head(st, old) != old:
                continue  # superseded meanwhile by a valid memory
            if _on_chain(successor, new, old):  # a cycle
                continue
            chosen[old] = new
        if chosen:
            self._set_superseded(ns, space, list(chosen.items()), now, "detected on write")

    def _set_superseded(
        self, ns: str, space: Space, pairs: list[tuple[str, str]], now: float, reason: str
    ) -> None:
        with self._consistent(ns):
            st = space.state
            policy = self.policy_for(ns)
            rows = [st.index[old] for old, _ in pairs]
            before = self._activation(ns, st, now, np.asarray(rows, dtype=np.int64))
            journal: list[JournalRow] = []
            for (old, new), i, b in zip(pairs, rows, before, strict=True):
                st.superseded_by[old] = new
                st.cols["superseded"][i] = True
                demoted = float(min(b, policy.archive_low * 0.5))
                self._set_activation(st, i, demoted, now, 0.0, count_access=False)
                journal.append((old, "supersede", float(b), demoted, {"by": new, "reason": reason}))
            with self._db.transaction() as conn:
                self._db.save_rows(conn, st, rows)
                self._db.journal(conn, now, ns, journal)

    def invalidate(
        self, memory_id: str, *, namespace: str | None = None, reason: str | None = None
    ) -> None:
        """Mark a memory wrong: activation drops to 0, it leaves the active tier and is kept
        out of recall unless ``include_invalidated=True``. Nothing is deleted.

        Memories linked to it at least ``policy.invalidate_link_weight`` strongly lose
        activation too (times ``policy.invalidate_link_factor``; never raised) and are
        flagged for review (``stats()["flagged_for_review"]`` and their ``why``).
        Invalidating a memory that already is changes nothing (a retry does not lower its
        neighbours again).
        """
        reason = check_reason(reason)
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            policy = self.policy_for(ns)
            st = space.state
            i = self._row(space, memory_id)
            if st.cols["invalidated"][i]:
                return
            now = self._now(ns)
            with self._consistent(ns):
                before = float(self._activation(ns, st, now, np.asarray([i]))[0])
                st.cols["invalidated"][i] = True
                self._set_activation(st, i, 0.0, now, 0.0, count_access=False)
                detail = {"reason": reason} if reason else {}
                journal: list[JournalRow] = [(memory_id, "invalidate", before, 0.0, detail)]
                rows = [i]
                flags: dict[str, str | None] = {memory_id: None}
                # a wrong summary says nothing of its originals: they come back to the
                # archive instead (and are not compressed again), unflagged
                originals = dict.fromkeys(space.summaries.get(memory_id, []), memory_id)
                near = [
                    m
                    for m, w in space.graph.neighbours(memory_id).items()
                    if w >= policy.invalidate_link_weight
                    and m in st.index
                    and m not in originals
                    and not st.cols["invalidated"][st.index[m]]
                ]
                if near:
                    nrows = [st.index[m] for m in near]
                    acts = self._activation(ns, st, now, np.asarray(nrows, dtype=np.int64))
                    for m, r, a in zip(near, nrows, acts, strict=True):
                        lowered = float(a) * policy.invalidate_link_factor
                        self._set_activation(st, r, lowered, now, 0.0, count_access=False)
                        why = f"linked to invalidated memory {memory_id}"
                        flags[m] = space.review[m] = why
                        journal.append((m, "review", float(a), lowered, {"reason": why}))
                    rows += nrows
                space.review.pop(memory_id, None)
                with self._db.transaction() as conn:
                    if st.cols["tier"][i] == Tier.ACTIVE:
                        st.cols["tier"][i] = Tier.ARCHIVE
                        space.deactivate([memory_id])
                    self._db.save_rows(conn, st, rows)
                    self._db.set_review(conn, ns, flags)
                    self._db.journal(conn, now, ns, journal)
                    if originals:
                        self._free_originals(
                            ns, space, originals, conn, now, "its summary was invalidated"
                        )
                        space.uncompressed.update(originals)
                        self._db.set_meta(f"uncompressed:{ns}", sorted(space.uncompressed), conn)

    def forget(self, memory_id: str, *, namespace: str | None = None) -> None:
        """Delete a memory for good (text, vector and state). The journal keeps the event.

        An original of a summary takes the summary with it (the summary says what it
        said); the summary's other originals go back to the archive, to be compressed
        again without it.
        """
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            i = self._row(space, memory_id)
            # in the same transaction: a failure leaves both
            sids = self._summaries_of(space, {memory_id})
            self._delete(
                ns,
                space,
                [i, *(space.state.index[s] for s in sids)],
                self._now(ns),
                "forget() called",
                reasons=dict.fromkeys(sids, "an original was forgotten"),
            )

    def forget_where(
        self,
        where: Mapping[str, Any] | Filter | None = None,
        *,
        where_document: Mapping[str, Any] | None = None,
        namespace: str | None = None,
    ) -> list[str]:
        """Delete for good every memory whose metadata and text pass the filters (as
        :meth:`recall` takes them; Chroma's ``collection.delete(where=...)``); returns
        the ids deleted, oldest first, then any summary that went with its originals
        (as :meth:`forget` does). One transaction: a failure deletes none. The journal
        keeps the events. A filter is required: :meth:`clear` deletes a whole
        namespace."""
        filtered = compile_where(where, where_document)
        if filtered is None:
            raise InvalidInputError(
                "forget_where() needs a filter (where= or where_document=); clear() "
                "deletes every memory of a namespace"
            )
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            st = space.state
            gone = [st.ids[r] for r in self._oldest_first(ns, space, None, filtered)]
            chosen = set(gone)
            summaries = [s for s in self._summaries_of(space, chosen) if s not in chosen]
            if gone:
                self._delete(
                    ns,
                    space,
                    [st.index[m] for m in [*gone, *summaries]],
                    self._now(ns),
                    "forget_where() called",
                    reasons=dict.fromkeys(summaries, "an original was forgotten"),
                )
            return [*gone, *summaries]

    @staticmethod
    def _summaries_of(space: Space, memory_ids: AbstractSet[str]) -> list[str]:
        """The summaries any of ``memory_ids`` is an original of: its text changes or
        goes, and theirs would keep the old one."""
        return [
            s
            for s, originals in space.summaries.items()
            if s in space.state.index and not memory_ids.isdisjoint(originals)
        ]

    def _delete(
        self,
        ns: str,
        space: Space,
        rows: list[int],
        now: float,
        why: str,
        also: Callable[[Any], None] | None = None,
        *,
        reasons: Mapping[str, str] | None = None,
    ) -> None:
        """Delete memories (``also``: more writes of the same change, in its transaction;
        ``reasons``: journal reasons of some of them, instead of ``why``)."""
        with self._consistent(ns):
            st = space.state
            ids = [st.ids[i] for i in rows]
            acts = self._activation(ns, st, now, np.asarray(rows, dtype=np.int64))
            seqs = [int(st.cols["seq"][i]) for i in rows]
            gone = set(ids)
            space.discard_texts(gone)
            # Originals of a deleted summary go back to the archive: nothing is lost silently.
            freed = {o: m for m in ids for o in space.summaries.get(m, []) if o not in gone}
            chroma_touched = False
            try:
                with self._db.transaction() as conn:
                    if freed:
                        self._free_originals(ns, space, freed, conn, now, why)
                    if space.uncompressed & gone:
                        space.uncompressed -= gone
                        self._db.set_meta(f"uncompressed:{ns}", sorted(space.uncompressed), conn)
                    for sid, originals in list(space.summaries.items()):
                        if sid in gone:
                            del space.summaries[sid]
                            self._db.set_summary(conn, ns, sid, None)
                        elif gone & set(originals):
                            space.summaries[sid] = [o for o in originals if o not in gone]
                            self._db.set_summary(conn, ns, sid, space.summaries[sid])
                    orphans = [
                        m for m, succ in st.superseded_by.items() if succ in gone and m not in gone
                    ]
                    changes: dict[str, str | None] = {}
                    for m in orphans:
                        # the next statement of the chain that stays takes the deleted one's
                        # place; none (it was the newest): they are current again
                        succ: str | None = st.superseded_by[m]
                        seen = {m}
                        while succ is not None and succ in gone and succ not in seen:
                            seen.add(succ)
                            succ = st.superseded_by.get(succ)
                        changes[m] = None if succ is None or succ in gone else succ
                    self._repoint(ns, st, changes, now, conn, "its successor was forgotten")
                    self._db.delete_links(conn, ns, ids)
                    self._db.set_review(conn, ns, dict.fromkeys(ids))
                    self._db.delete(conn, ns, ids)
                    self._db.journal(
                        conn,
                        now,
                        ns,
                        [
                            (m, "forget", float(a), None, {"reason": (reasons or {}).get(m, why)})
                            for m, a in zip(ids, acts, strict=True)
                        ],
                    )
                    if also is not None:
                        also(conn)
                    chroma_touched = True  # last: a failure before it leaves Chroma be
                    self.store.delete(ns, ids)
            except BaseException:
                if chroma_touched:  # the delete, or the commit after it, failed
                    self._restore_in_chroma(ns, st, ids)
                raise
            self._lex.delete(ns, seqs)
            space.discard(ids)
            for m in ids:
                st.remove(m)
                space.unlink(m)
                space.review.pop(m, None)
            if space.last_write is not None and space.last_write[0] in gone:
                space.last_write = self._last_turn(space)  # as a reopened store finds it

    def _restore_in_chroma(self, ns: str, st: NamespaceState, ids: list[str]) -> None:
        """Put memories SQLite still holds back into Chroma (a delete whose transaction
        failed); logged, not raised, if that fails too."""
        try:
            self._sync.put_back(ns, st, ids)
        except Exception:
            logger.exception("could not put %d memories back into Chroma", len(ids))
            self._sync.doubt(ns, ids)

    # ================================================================ maintenance
    def maintain(self, *, dry_run: bool = False, namespace: str | None = None) -> MaintenancePlan:
        """Plan tier moves for one namespace and apply them (``dry_run=True``: plan only).

        Applying also runs self-adaptation of half-lives and betas.
        """
        dry_run = check_flag(dry_run, "dry_run")
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            return self._maintain(ns, dry_run=dry_run)

    def _maintain(self, ns: str, *, dry_run: bool) -> MaintenancePlan:
        with self._consistent(ns):
            space = self._space(ns)
            st = space.state
            policy = self.policy_for(ns)
            now = self._now(ns)
            act = self._activation(ns, st, now)
            forgettable = None
            if policy.forget_enabled:
                protected = np.isin(
                    st.col("cat"),
                    [st.cat_id(c) for c in policy.protected_categories if c in st.vocab],
                )
                # nor a summary: deleting one brings its originals back to the archive,
                # where the next maintain() would compress them into a new one
                protected[[st.index[m] for m in space.summaries if m in st.index]] = True
                forgettable = (
                    ~protected
                    & (st.col("importance") < policy.protect_importance)
                    & (now - st.col("created_at") >= policy.forget_min_age)
                )

            def plan(memories: int) -> TierDecision:
                return plan_tiers(
                    act,
                    st.col("tier"),
                    low=policy.archive_low,
                    high=policy.archive_high,
                    capacity=policy.active_target(memories),
                    invalidated=st.col("invalidated"),
                    forget_enabled=policy.forget_enabled,
                    forget_below=policy.forget_below,
                    forgettable=forgettable,
                    order=st.col("seq"),
                )

            decision = plan(st.n)
            groups = self._compression_groups(ns, space, policy, act, decision)
            # the target is for the memories there will be: fewer by those forgotten, more
            # by the summaries (else the next call, at no later time, moves some again)
            will_hold = st.n - len(decision.forget) + len(groups)
            if policy.active_target(will_hold) != policy.active_target(st.n):
                decision = plan(will_hold)
                groups = self._compression_groups(ns, space, policy, act, decision)
            entries: list[PlanEntry] = []
            for action, rows, why in (
                ("archive", decision.archive, f"activation below {decision.low:.3f}"),
                ("restore", decision.restore, f"activation above {decision.high:.3f}"),
                ("forget", decision.forget, f"activation below forget_below {policy.forget_below}"),
            ):
                for i in rows:
                    reason = "invalidated" if st.cols["invalidated"][i] else why
                    if action == "archive" and reason == why and act[i] >= decision.low:
                        # tied at the cut of a full active tier: the newer of them stay
                        reason = f"activation {act[i]:.3f} tied at the full tier's cut"
                    entries.append(
                        PlanEntry(st.ids[i], action, float(act[i]), st.category(i), reason)
                    )
            for g, group in enumerate(groups):
                for mid in group:
                    i = st.index[mid]
                    reason = f"group {g + 1}: {len(group)} low-activation memories -> one summary"
                    entries.append(
                        PlanEntry(mid, "compress", float(act[i]), st.category(i), reason)
                    )
            before = len(space.index)
            after = before - len(decision.archive) + len(decision.restore)
            after -= int(np.sum(st.cols["tier"][decision.forget] == Tier.ACTIVE))
            adapted: dict[str, dict[str, float]] = {}
            if not dry_run:
                space.writes_since_maintain = 0
                archive_ids = [st.ids[i] for i in decision.archive]
                restore_ids = [st.ids[i] for i in decision.restore]
                with self._db.transaction() as conn:
                    if archive_ids:
                        space.deactivate(archive_ids)
                        for i in decision.archive:
                            st.cols["tier"][i] = Tier.ARCHIVE
                            space.usage.of(st.category(i)).archived += 1
                        self._db.save_rows(conn, st, decision.archive.tolist())
                    if restore_ids:  # journaled there, once
                        why = f"activation above {decision.high:.3f}"
                        self._move_to_active(ns, space, restore_ids, conn, now, why)
                    self._db.journal(
                        conn,
                        now,
                        ns,
                        [
                            (e.id, e.action, e.activation, e.activation, {"reason": e.reason})
                            for e in entries
                            # the others are journaled as done
                            if e.action not in ("forget", "compress", "restore")
                        ],
                    )
                    share = self._archived_share(st) if decision.pressure else None
                    adapted = adapt(space.usage, policy, share)
                    if adapted:
                        # new half-lives start new clock pieces at now: the decay so far stays
                        # at the old rates, without rewriting the category's memories
                        self._clock_now(ns, st, now)
                        self._db.journal(
                            conn, now, ns, [(None, "adapt", None, None, {"changed": adapted})]
                        )
                    self._db.set_meta(f"usage:{ns}", space.usage.to_json(), conn)
                    self._db.set_meta(f"writes:{ns}", 0, conn)
                if len(decision.forget):
                    self._delete(
                        ns, space, decision.forget.tolist(), now, "decayed below forget_below"
                    )
                skipped: set[str] = set()
                for group in groups:
                    if self._compress(ns, space, policy, group, now) is None:
                        skipped.update(group)
                if skipped:  # the plan says what was done
                    entries = [
                        e for e in entries if not (e.action == "compress" and e.id in skipped)
                    ]
                if policy.journal_keep is not None:
                    # one chunk per call: maintain() runs inside remember() and must not stall
                    chunks = self._db.prune_events(
                        ns, now - policy.journal_keep, _BOOST_KINDS, own_clock=self._own_clock
                    )
                    next(chunks, None)
                    chunks.close()
            return MaintenancePlan(
                namespace=ns,
                now=now,
                entries=tuple(entries),
                low=decision.low,
                high=decision.high,
                active_before=before,
                active_after=after,
                applied=not dry_run,
                adapted=adapted,
            )

    def _compression_groups(
        self, ns: str, space: Space, policy: Policy, act: Any, decision: Any
    ) -> list[list[str]]:
        """Groups of archived, low-activation memories to fold into summaries."""
        if policy.compress_below is None:
            return []
        st = space.state
        tier = st.col("tier").copy()
        tier[decision.archive] = Tier.ARCHIVE
        tier[decision.restore] = Tier.ACTIVE
        ok = (
            (tier == Tier.ARCHIVE)
            & (act < policy.compress_below)
            & ~st.col("invalidated")
            & ~st.col("superseded")
        )
        if "summary" in st.vocab:
            ok &= st.col("cat") != st.cat_id("summary")
        # the current statement of a fact that changed stays recallable as itself: cold,
        # its older statement would count as current again (_chain_head)
        ok[[st.index[m] for m in set(st.superseded_by.values()) if m in st.index]] = False
        ok[decision.forget] = False
        ok[[st.index[m] for m in space.uncompressed if m in st.index]] = False
        rows = np.flatnonzero(ok)
        if len(rows) < policy.compress_min_cluster:
            return []
        rows = rows[np.argsort(act[rows], kind="stable")[:_MAX_COMPRESS_BATCH]]
        rows = rows[np.argsort(st.cols["seq"][rows], kind="stable")]  # write order
        ids = [st.ids[i] for i in rows]
        vecs = self._vectors(ns, space, ids)
        keep = [k for k, m in enumerate(ids) if m in vecs]
        if len(keep) < policy.compress_min_cluster:
            return []
        ids = [ids[k] for k in keep]
        mat = np.stack([vecs[m] for m in ids])
        times = st.cols["created_at"][rows[keep]]
        found = clusters(
            mat,
            times,
            similarity=policy.compress_similarity,
            window=policy.adjacency,
            min_size=policy.compress_min_cluster,
        )
        return [[ids[k] for k in group] for group in found]

    def _compress(
        self, ns: str, space: Space, policy: Policy, group: list[str], now: float
    ) -> str | None:
        """Write a summary of ``group`` and move the originals to the cold tier."""
        st = space.state
        live = [m for m in group if m in st.index]
        if len(live) < 2:
            return None
        texts_by_id = self._db.texts(ns, live)
        texts = [texts_by_id[m] for m in live]
        try:
            summary = self.summarizer.summarize(texts)
            if summary is not None and not isinstance(summary, str):
                raise TypeError(f"summarize() returned {type(summary).__name__}, not a str")
            summary = (summary or "").strip()[: policy.max_text_chars]
            if summary:  # a text remember() would take (no NUL, no lone surrogate)
                summary = check_text(summary, None, "the summary")
        except Exception:  # the group stays archived; maintain() goes on
            logger.exception(
                "the summarizer failed on %d memories of namespace %r; they stay archived",
                len(live),
                ns,
            )
            return None
        if not summary:
            logger.warning(
                "the summarizer returned no text for %d memories of namespace %r; they stay "
                "archived",
                len(live),
                ns,
            )
            return None
        try:
            vec = embed_texts(self.embedder, [summary], self._dim)
        except EmbeddingError:  # as a summarizer's failure: the group stays archived
            logger.exception(
                "the embedder failed on the summary of %d memories of namespace %r; they "
                "stay archived",
                len(live),
                ns,
            )
            return None
        rows = [st.index[m] for m in live]
        acts = self._activation(ns, st, now, np.asarray(rows, dtype=np.int64))
        a0 = policy.compress_inherit * float(acts.max())
        sid = uuid.uuid4().hex
        tier = Tier.ACTIVE if a0 >= policy.archive_low else Tier.ARCHIVE

        def originals_to_cold(conn: Any) -> None:
            # in the summary's transaction: a failure leaves neither (maintain() runs in
            # _consistent, which reloads the originals' state)
            for r in rows:
                st.cols["tier"][r] = Tier.COLD
            space.deactivate(live)
            space.summaries[sid] = live
            self._db.save_rows(conn, st, rows)
            self._db.set_summary(conn, ns, sid, live)
            self._db.save_links(
                conn, ns, [(sid, m, space.graph.add(sid, m, 1.0), "summary") for m in live]
            )
            self._db.journal(
                conn,
                now,
                ns,
                [
                    (m, "compress", float(a), float(a), {"summary": sid})
                    for m, a in zip(live, acts, strict=True)
                ],
            )

        self._store_new(
            ns,
            space,
            policy,
            now,
            [sid],
            [summary],
            vec,
            ["summary"],
            [float(st.cols["importance"][rows].max())],
            [1.0],
            [{"summary_of": live}],
            a_ref=[a0],
            tier=tier,
            also=originals_to_cold,
            made=(sid,),
        )
        return sid

    def expand(self, summary_id: str, *, namespace: str | None = None) -> list[MemoryRecord]:
        """The original memories a summary stands for, in their original order, unchanged."""
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            return self._records(ns, self._originals(space, summary_id), self._now(ns))

    def decompress(self, summary_id: str, *, namespace: str | None = None) -> list[MemoryRecord]:
        """Undo a compression: the originals return to the archive, the summary is deleted,
        and ``maintain()`` does not compress them again.

        Returns the originals.
        """
        ns = self._ns(namespace)
        with self._lock:  # one hold: the summary checked is the summary deleted
            self._check_open()
            space = self._space(ns)
            st = space.state
            originals = [st.ids[i] for i in self._originals(space, summary_id)]
            now = self._now(ns)
            with self._consistent(ns):

                def remembered(conn: Any) -> None:
                    # in the delete's transaction (which journals the originals' move): a
                    # failure leaves the summary in place
                    space.uncompressed.update(originals)
                    self._db.set_meta(f"uncompressed:{ns}", sorted(space.uncompressed), conn)

                row = st.index[summary_id]
                self._delete(ns, space, [row], now, "decompress() called", also=remembered)
                # after the delete: it moves the last row into the summary's place
                return self._records(ns, [st.index[m] for m in originals], now)

    def _originals(self, space: Space, summary_id: str) -> list[int]:
        """The rows of the originals summary ``summary_id`` stands for, in their order."""
        self._row(space, summary_id)
        originals = space.summaries.get(summary_id)
        if originals is None:
            raise InvalidInputError(
                f"memory {summary_id!r} is not a summary; expand() and decompress() take the id "
                "of a memory that compression wrote (category 'summary', "
                "metadata['summary_of'])"
            )
        return [space.state.index[m] for m in originals if m in space.state.index]

    def _free_originals(
        self, ns: str, space: Space, freed: Mapping[str, str], conn: Any, now: float, reason: str
    ) -> None:
        """Move cold originals (id -> their summary's id) back to the archive, journaled
        as ``decompress``: their summary was deleted, decompressed or invalidated."""
        st = space.state
        moved = [o for o in freed if o in st.index and st.cols["tier"][st.index[o]] == _COLD]
        rows = [st.index[o] for o in moved]
        for r in rows:
            st.cols["tier"][r] = Tier.ARCHIVE
        self._db.save_rows(conn, st, rows)
        self._db.journal(
            conn,
            now,
            ns,
            [(o, "decompress", None, None, {"summary": freed[o], "reason": reason}) for o in moved],
        )

    def _move_to_active(
        self, ns: str, space: Space, ids: list[str], conn: Any, now: float, reason: str
    ) -> None:
        rows, journal = self._promote(ns, space, ids, reason)
        self._db.save_rows(conn, space.state, rows)
        self._db.journal(conn, now, ns, journal)

    def _room_for(
        self, ns: str, space: Space, policy: Policy, now: float, ids: list[str]
    ) -> list[str]:
        """Which of ``ids`` (archived memories a boost lifted above ``archive_high``) the
        active tier takes: all while it is below its target; over it, one whose
        activation beats the least activated active memory by the band's width, as
        :meth:`maintain` ranks them. A promotion that did not cost the next
        ``maintain()`` one of the two again, and the next recall brought it back: two
        memories at the cut swapped tiers on every recall and maintain."""
        st = space.state
        target = policy.active_target(st.n)
        room = len(ids) if target is None else target - len(space.index)
        if not ids or room >= len(ids):  # nothing to rank: the floor is not read
            return ids
        acts = self._activation(ns, st, now, np.asarray([st.index[m] for m in ids], np.int64))
        active = np.flatnonzero(st.col("tier") == _ACTIVE)
        floor = float(self._activation(ns, st, now, active).min()) if len(active) else -1.0
        width = policy.archive_high - policy.archive_low
        out: list[str] = []
        for j in np.argsort(-acts, kind="stable").tolist():
            if room > 0 or acts[j] - width > floor:
                out.append(ids[j])
                room -= 1
        return out

    def _promote(
        self, ns: str, space: Space, ids: list[str], reason: str
    ) -> tuple[list[int], list[JournalRow]]:
        """Move memories into the active tier in memory; returns the rows to save and the
        journal entries to write."""
        vecs = self._vectors(ns, space, ids)
        have = [m for m in ids if m in vecs]
        if have:
            space.activate(have, np.stack([vecs[m] for m in have]))
        st = space.state
        rows = [st.index[m] for m in have]
        for i in rows:
            st.cols["tier"][i] = _ACTIVE
        return rows, [(m, "restore", None, None, {"reason": reason}) for m in have]

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
    ) -> list[MemoryRecord]:
        """Every memory of a namespace, oldest first; optionally of one tier (a
        :class:`Tier` or its label, ``"active"``, ``"archive"`` or ``"cold"``), and only
        those whose metadata and text pass ``where`` and ``where_document`` (as
        :meth:`recall` takes them; Chroma's ``collection.get(where=...)``). Reads only:
        nothing is boosted."""
        tier = check_tier(tier)
        filtered = compile_where(where, where_document)
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            space = self._space(ns)
            rows = self._oldest_first(ns, space, tier, filtered)
            return self._records(ns, rows, self._now(ns))

    def _oldest_first(
        self, ns: str, space: Space, tier: Tier | None, where: Filter | None
    ) -> list[int]:
        """Rows of the namespace's memories in write order, of ``tier`` and passing
        ``where`` if given (what :meth:`records` lists and :meth:`forget_where` deletes)."""
        st = space.state
        rows = np.argsort(st.col("seq"), kind="stable")
        if tier is not None:
            rows = rows[st.col("tier")[rows] == int(tier)]
        if where is not None and len(rows):
            passes = self._filter_mask(ns, space, where)
            rows = rows[passes([st.ids[r] for r in rows.tolist()])]
        return [int(r) for r in rows.tolist()]

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
        ns = self._ns(namespace)
        with self._lock:
            self._check_open()
            return self._db.events(ns, memory_id, last)

    def prune_journal(
        self,
        older_than: float,
        *,
        namespace: str | None = None,
        kinds: Sequence[str] = _BOOST_KINDS,
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
        if isinstance(kinds, str) or not kinds or not all(isinstance(k, str) and k for k in kinds):
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
        self._lex.build(ns)
        return was

    def unload(self, *, namespace: str | None = None) -> bool:
        """Let go of a namespace's in-memory state until it is next used.

        Every namespace used since the engine opened stays in memory: its activation
        columns, the vectors of its active tier (1.5 KB per memory with the default
        384-dimension model, 2.3 KB in a tier of 8,192 or more), its BM25 index, links
        and summaries. A process serving many users, a namespace each, can unload those
        gone idle, or have the least recently used past some number unloaded for it
        (``max_loaded_namespaces``).
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
    def _ns(self, namespace: str | None) -> str:
        ns = self.default_namespace if namespace is None else check_namespace(namespace)
        if ns not in self._known:
            known = ", ".join(repr(n) for n in sorted(self._known))
            raise UnknownNamespaceError(
                f"namespace {ns!r} has no memories yet; remember() something there first "
                f"(known namespaces: {known})"
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
            repaired = self._sync.restore_lost(ns, st)
            if any(repaired):  # for a repair_vector_store() that loaded it
                self._repaired_at_load[ns] = repaired
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

    def repair_vector_store(self, *, namespace: str | None = None) -> dict[str, int]:
        """Make the vector store hold exactly the namespace's memories: those it lacks
        are put back from the vectors SQLite keeps, records of no memory are removed, and
        a record an edit changed in Chroma but not in SQLite (the edit failed, and Chroma
        was out of reach to undo it) is written again as SQLite holds it.

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
            rewritten = self._sync.resync(ns, st, strict=True)
            held = self.store.ids(ns)
            self.store.unchecked.discard(ns)
            put_back, removed = self._sync.restore_lost(ns, st, held)
            return {
                "put_back": at_load[0] + put_back + rewritten,
                "removed": at_load[1] + removed,
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
                and st.cols["tier"][j] != _COLD
            ):
                out.append((which, other))
        return out

    @staticmethod
    def _chain_head(st: NamespaceState, memory_id: str, cold: bool = False) -> str:
        """The newest valid memory of a supersession chain (cycle-safe): successors that
        were invalidated or deleted, or are cold (behind a summary) unless ``cold`` (a
        recall that shows cold memories), do not count, so the fact stays recallable."""
        seen = {memory_id}
        head = node = memory_id
        while node in st.superseded_by:
            nxt = st.superseded_by[node]
            if nxt in seen or nxt not in st.index:
                break
            seen.add(nxt)
            node = nxt
            j = st.index[node]
            if not st.cols["invalidated"][j] and (cold or st.cols["tier"][j] != _COLD):
                head = node
        return head

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

    def _rebase(self, space: Space, now: float) -> None:
        """Fold the decay until ``now`` into ``a_ref`` under the policy in force, so a new
        floor or slowing by use (``floor_fraction``, ``stability_sigma``) changes future
        decay only. A new half-life alone needs no rebase: the clocks start a new piece."""
        st = space.state
        if st.n == 0:
            return
        st.col("a_ref")[:] = self._activation(st.namespace, st, now)
        st.col("d_ref")[:] = self._clock_now(st.namespace, st, now)[st.col("cat")]
        with self._db.transaction() as c:
            self._db.save_activation(c, st, range(st.n))

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
def _pinned_places(limit: int) -> int:
    """Places of a recall's ``limit`` that memories shown whatever the query ranks them
    (standing ones, the user's naming) take at most: half, at least one, so that the
    query's own matches keep the rest."""
    return max(1, limit // 2)


def _on_chain(successor: Callable[[str], str | None], start: str, target: str) -> bool:
    """Whether ``target`` is on the supersession chain from ``start`` (``start`` itself
    included), following ``successor`` (cycle-safe)."""
    node: str | None = start
    seen: set[str] = set()
    while node is not None and node not in seen:
        if node == target:
            return True
        seen.add(node)
        node = successor(node)
    return False


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


def _visible_top(
    search: Callable[[int], tuple[list[_K], list[float]]],
    n: int,
    hidden: Callable[[list[_K]], np.ndarray[Any, Any]],
    most: int,
    first: tuple[list[_K], list[float]] | None = None,
) -> tuple[list[_K], list[float]]:
    """``search(n)``'s best ``n`` (best first), where memories the recall cannot show
    take no places: ``search`` is asked for more until ``n`` of its results are
    visible, or it has none left (``most``: how many it can return at all). Hidden ones
    ranked among those kept stay in (a stale statement brings its successor along).

    Sixty invalidated near-duplicates of a question filled a top 50, and recall did not
    find the one valid memory that answered it."""
    ids, values = first if first is not None else search(n)
    asked = n
    mask = hidden(ids)
    n_hidden = int(np.count_nonzero(mask))
    while n_hidden and len(ids) >= asked < most and len(ids) - n_hidden < n:
        grown = asked + 2 * n_hidden
        if len(ids) > n_hidden:  # what the share visible so far needs, and a quarter more
            grown = max(grown, math.ceil(asked * n / (len(ids) - n_hidden) * 1.25))
        asked = min(most, grown)
        ids, values = search(asked)
        mask = hidden(ids)
        n_hidden = int(np.count_nonzero(mask))
    if len(ids) - n_hidden <= n:
        return list(ids), list(values)
    cut = int(np.flatnonzero(~mask)[n - 1]) + 1  # just after the n-th visible one
    return list(ids[:cut]), list(values[:cut])


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


def _ephemeral_store() -> VectorStore:
    import chromadb

    from oblivion_core.store import _settings

    # EphemeralClient shares one in-process system; a prefix keeps engines apart.
    store = VectorStore(chromadb.EphemeralClient(settings=_settings()), prefix=uuid.uuid4().hex[:8])
    store.ephemeral = True
    return store
