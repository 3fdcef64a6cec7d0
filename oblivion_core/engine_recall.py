"""Recall's candidates: the active tier, the archive (its in-memory copy or Chroma),
BM25 and the filters.

Part of :class:`~oblivion_core.engine.Oblivion`: each function here is one of its methods
(assigned in its class body), written as a function of the engine.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from oblivion_core.budget import check_budget, check_k
from oblivion_core.checks import check_flag, check_id, check_standing, check_text, finite
from oblivion_core.doc_set import DocSet
from oblivion_core.embedding import embed_query, given_vectors
from oblivion_core.errors import InvalidInputError
from oblivion_core.index import ActiveIndex, untie
from oblivion_core.lists import ListIndex, list_question
from oblivion_core.naming import NameIndex, name_question
from oblivion_core.recall import RecallResult, Signals, fuse, score, top_ranked
from oblivion_core.records import ACTIVE, ARCHIVE, COLD
from oblivion_core.sketch import SketchIndex
from oblivion_core.space import FILTERS_KEPT, Space
from oblivion_core.state import NamespaceState
from oblivion_core.typing import Vectors
from oblivion_core.where import Filter, FilterMask, compile_where

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion

_K = TypeVar("_K")


def recall(
    self: Oblivion,
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
    embedding: Any = None,
) -> RecallResult:
    """Find the memories that matter for ``query``, best first, within a token budget.

    Args:
        query: The text to search for. Blank (``""``) with ``standing`` given: only the
            standing memories, ranked as a query ranks them (equally relevant), for a
            message with no text to search (an image alone).
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
        embedding: ``query``'s vector, made already (:meth:`query_vector`), instead
            of embedding it again: a search of one query in several namespaces embeds
            it once. Checked for its size, not for its model.
    """
    self._check_open()
    standing_categories = check_standing(standing)
    blank = isinstance(query, str) and not query.strip()
    if blank and not standing_categories:
        raise InvalidInputError(
            "query is empty or whitespace; pass some text, or standing='instruction' (any "
            "categories) to get the standing memories alone, as for a message with no text"
        )
    q = query if blank else check_text(query, None, "query")
    filtered = compile_where(where, where_document)
    budget = check_budget(token_budget)
    k = check_k(k)
    if deep is not None and not isinstance(deep, bool):
        raise InvalidInputError(f"deep must be True, False or None, got {deep!r}")
    include_invalidated = check_flag(include_invalidated, "include_invalidated")
    include_cold = check_flag(include_cold, "include_cold")
    include_superseded = check_flag(include_superseded, "include_superseded")
    feedback = check_flag(feedback, "feedback")
    ns = self._ns(namespace)
    for category in standing_categories:
        self._hint_category(ns, category, standing=True)
    if blank:  # nothing to embed or match: the standing memories alone
        with self._lock:
            self._check_open()
            if self._space(ns).outdated:  # a crash left summaries a change made outdated
                self._drop_outdated(ns, self._now(ns))
            return self._standing_recall(
                ns,
                budget,
                k,
                include_invalidated,
                include_cold,
                feedback,
                include_superseded,
                standing_categories,
                filtered,
            )
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
    beside = lexical_now and filtered is None and not getattr(self.embedder, "busy_cores", False)
    lexical = self._background(self._lex.search, ns, q, pool, allow) if beside else None
    if embedding is None:
        self._check_model()
        qvec = embed_query(self.embedder, q, self._dim)
    else:
        qvec = given_vectors([_one_row(embedding)], 1, self._dim, "embedding")
    try:
        bm25 = lexical.result() if lexical is not None else None
        if bm25 is None and lexical_now:  # outside the engine's lock
            bm25 = self._lex.search(ns, q, pool, allow)
    except Exception:
        self._check_open()  # closed meanwhile: say so, not how the read failed
        raise
    with self._lock:
        self._check_open()
        if self._space(ns).outdated:  # a crash left summaries a change made outdated
            self._drop_outdated(ns, self._now(ns))
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


def _one_row(embedding: Any) -> Any:
    """``embedding``, or its row if it is a matrix of one (``embed_documents([q])``'s
    list of one list, or an array of shape ``(1, dim)``), as ``recall`` takes it."""
    if isinstance(embedding, (str, bytes)):
        return embedding
    try:
        matrix = np.asarray(embedding, dtype=np.float64)
    except (TypeError, ValueError):
        return embedding  # refused by the check, which names it
    return matrix[0] if matrix.ndim == 2 and matrix.shape[0] == 1 else embedding


def query_vector(self: Oblivion, query: str) -> Vectors:
    """``query``'s vector as :meth:`recall` embeds it (a row of this store's size, unit
    length), for ``recall(query, embedding=...)`` in several namespaces: a
    :class:`~oblivion_core.errors.EmbeddingError` if the embedder fails or makes vectors
    of another size than the store holds."""
    q = check_text(query, None, "query")
    self._check_model()
    row: Vectors = embed_query(self.embedder, q, self._dim)[0]
    return row


def rerank(
    self: Oblivion,
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
            f"candidates must be a list of (id, relevance) pairs, got {type(candidates).__name__}"
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
    if need_vec:
        self._check_model()
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
    self: Oblivion,
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
            few_active = len(ids)
            noun = "active memory" if few_active == 1 else "active memories"
            verb = " passes the filter" if few_active == 1 else " pass the filter"
            reason = f"only {few_active} {noun}{verb if passes else ''} for k={limit}"
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
    elif reason is not None and st.n == len(space.index):
        # every memory is active: the archive is empty, and is not asked (Chroma on a
        # server that is down would fail a recall with nothing to find there)
        archive = ([], [])
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
        if reason is None and deep is not False:
            # one it may show: an invalidated or cold match, kept out, searched nothing
            archived = [m for m in lexical if m not in space.index]
            if archived and not hidden(archived).all():
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
    fused = fuse(np.fromiter(dense.values(), np.float64, len(dense)), raw_bm25, policy, lexical_top)
    cand = dict(zip(ids_all, fused.tolist(), strict=True))
    which = list_question(query)
    listed: frozenset[str] = frozenset()
    if which is not False:
        listed = frozenset(
            self._list_items(ns, space, which, active_only=deep is False, passes=passes)
        )
    pinned: frozenset[str] = frozenset()
    if standing:
        pinned = frozenset(
            self._standing(ns, st, standing, include_cold, now, limit, passes=passes)
        )
    named: frozenset[str] = frozenset()
    if name_question(query):
        named = frozenset(self._named(ns, space, limit, active_only=deep is False, passes=passes))
    first = listed | pinned | named
    for m in first:  # as relevant as the best match shown (_score_and_pack)
        cand.setdefault(m, -np.inf)
    signals = Signals(dense, lexical, listed, lexical_top=lexical_top, standing=pinned, named=named)

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


def _archived_share(st: NamespaceState) -> float:
    """The share of the namespace's active or archived memories in the archive."""
    tiers = st.col("tier")
    archived = int(np.count_nonzero(tiers == ARCHIVE))
    either = archived + int(np.count_nonzero(tiers == ACTIVE))
    return archived / either if either else 0.0


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
        out |= st.cols["tier"][known] == COLD
    return out


def _filter_mask(self: Oblivion, ns: str, space: Space, where: Filter) -> FilterMask:
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
    self: Oblivion,
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


def _scored_limit(self: Oblivion, n: int) -> int:
    """How many of a namespace of ``n`` memories may pass a filter for each to be
    scored (:attr:`FILTER_SCORED_ROWS`, :attr:`FILTER_SCORED_PER_ROOT`)."""
    return int(min(self.FILTER_SCORED_ROWS, self.FILTER_SCORED_PER_ROOT * math.sqrt(n)))


def _exact_archive(self: Oblivion, ns: str, space: Space) -> ActiveIndex | None:
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
    ids, vectors = self._db.namespace_vectors(ns, lambda m: m in st.index and m not in active, st.n)
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


def _copy_total(self: Oblivion) -> int:
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


def _copy_kind(self: Oblivion, outside: int, dropped: int) -> tuple[type[ActiveIndex], int] | None:
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


def _written_texts(self: Oblivion, ns: str, st: NamespaceState) -> tuple[list[str], list[str]]:
    """Every stored memory of the namespace and its text as said (with the chat role
    its metadata names: :func:`~oblivion_core.speakers.as_said`), in write order: what
    the list and name indexes are built from."""
    ids = [st.by_seq[q] for q in sorted(st.by_seq)]
    said = self._said(ns, ids)
    stored = [m for m in ids if m in said]
    return stored, [said[m] for m in stored]


def _list_items(
    self: Oblivion,
    ns: str,
    space: Space,
    which: str | None,
    *,
    active_only: bool,
    passes: FilterMask | None = None,
) -> list[str]:
    """The additions that make up list ``which`` now (not removed, not invalidated;
    passing recall's ``where``)."""
    if space.lists is None:  # built on the first list question (7 s at 100k memories)
        space.lists = ListIndex()
        space.lists.note(*self._written_texts(ns, space.state))
    return self._current(
        space, space.lists.additions(which), active_only=active_only, passes=passes
    )


def _named(
    self: Oblivion,
    ns: str,
    space: Space,
    limit: int,
    *,
    active_only: bool,
    passes: FilterMask | None = None,
) -> list[str]:
    """The newest memories in which the user gives their name (not superseded, not
    invalidated, not cold, passing recall's ``where``), for half of ``limit``'s places
    (at least one), as standing memories take (:meth:`_standing`)."""
    # built on the first such question: 0.85 s at 100k memories, 0.6 s of it reading
    # their texts and metadata
    if space.names is None:
        space.names = NameIndex()
        space.names.note(*self._written_texts(ns, space.state))
    current = self._current(space, space.names.namings(), active_only=active_only, passes=passes)
    return current[-_pinned_places(limit) :]


def _current(
    self: Oblivion,
    space: Space,
    ids: Iterable[str],
    *,
    active_only: bool,
    passes: FilterMask | None = None,
) -> list[str]:
    """Those of ``ids`` a recall may show as they stand: held, passing ``passes``
    (recall's ``where``), the newest valid statement of their chain, not invalidated,
    not cold (and in the active tier for ``active_only``)."""
    st = space.state
    ids = [m for m in ids if m in st.index]
    heads = self._chain_heads(st, [m for m in ids if m in st.superseded_by])
    out = []
    for m in ids:
        i = st.index.get(m)
        if (
            i is None
            or (passes is not None and not passes.holds(m))
            or heads.get(m, m) != m  # superseded by a valid memory
            or st.cols["invalidated"][i]
            or st.cols["tier"][i] == COLD
            or (active_only and m not in space.index)
        ):
            continue
        out.append(m)
    return out


def _standing_recall(
    self: Oblivion,
    ns: str,
    budget: int | None,
    k: int | None,
    include_invalidated: bool,
    include_cold: bool,
    feedback: bool,
    include_superseded: bool,
    standing: tuple[str, ...],
    where: Filter | None,
) -> RecallResult:
    """A recall of a blank query with ``standing`` categories (call under the lock):
    the places :meth:`_standing` gives them, every one as relevant as the best match
    of a query would be (1.0), scored and packed as any recall's candidates (a
    superseded one brings its successor in its place)."""
    policy = self.policy_for(ns)
    space = self._space(ns)
    limit = k if k is not None else policy.default_k
    now = self._now(ns)
    passes = self._filter_mask(ns, space, where) if where is not None else None
    pinned = frozenset(
        self._standing(ns, space.state, standing, include_cold, now, limit, passes=passes)
    )
    return self._score_and_pack(
        "",
        ns,
        space,
        policy,
        now,
        dict.fromkeys(pinned, 1.0),
        budget,
        limit,
        None,
        include_invalidated=include_invalidated,
        include_cold=include_cold,
        feedback=feedback,
        signals=Signals({}, {}, standing=pinned),
        include_superseded=include_superseded,
        listed=pinned,
        passes=passes,
    )


def _standing(
    self: Oblivion,
    ns: str,
    st: NamespaceState,
    categories: Iterable[str],
    include_cold: bool,
    now: float,
    limit: int,
    *,
    passes: FilterMask | None = None,
) -> list[str]:
    """The memories of ``categories`` (see :meth:`recall`'s ``standing``) in any tier
    but the cold one (unless ``include_cold``), not invalidated, passing ``passes``
    (recall's ``where``: the places are not spent on memories the filter then drops);
    the best scored of them for half of ``limit``'s places (at least one), so that the
    query's own matches keep the rest. A superseded one brings its successor in its
    place, as any candidate does (:meth:`_score_and_pack`)."""
    rows = st.rows_of_categories(categories)
    rows = rows[~st.cols["invalidated"][rows]]
    if not include_cold:
        rows = rows[st.cols["tier"][rows] != COLD]
    if passes is not None and len(rows):
        rows = rows[passes([st.ids[i] for i in rows.tolist()])]
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
    self: Oblivion,
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


def _pinned_places(limit: int) -> int:
    """Places of a recall's ``limit`` that memories shown whatever the query ranks them
    (standing ones, the user's naming) take at most: half, at least one, so that the
    query's own matches keep the rest."""
    return max(1, limit // 2)


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
