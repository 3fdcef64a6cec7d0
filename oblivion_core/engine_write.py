"""Writing memories: ``remember``, ``remember_many`` and ``edit``.

Part of :class:`~oblivion_core.engine.Oblivion`: each function here is one of its methods
(assigned in its class body), written as a function of the engine.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from oblivion_core import decay
from oblivion_core.blas import matvec
from oblivion_core.budget import count_tokens
from oblivion_core.checks import (
    check_category,
    check_flag,
    check_id,
    check_namespace,
    check_text,
    check_unit,
    parallel,
    scored_category,
    scored_importance,
)
from oblivion_core.clock import TurnClock
from oblivion_core.compression import shared_metadata
from oblivion_core.decay_clock import DecayClock
from oblivion_core.embedding import embed_texts, given_vectors
from oblivion_core.errors import InvalidInputError, StoreConflictError
from oblivion_core.policy import Policy
from oblivion_core.records import MemoryRecord, Tier, check_metadata
from oblivion_core.space import Space
from oblivion_core.speakers import as_said
from oblivion_core.state import NamespaceState
from oblivion_core.supersession import Candidate
from oblivion_core.typing import Vectors
from oblivion_core.where import as_filtered

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion

logger = logging.getLogger("oblivion_core")
#: New memories linked and checked for stale facts at a time by ``remember_many``.
_WRITE_BLOCK = 1024


def remember(
    self: Oblivion,
    text: str,
    *,
    category: str | None = None,
    importance: float | None = None,
    confidence: float = 1.0,
    metadata: Mapping[str, Any] | None = None,
    namespace: str | None = None,
    id: str | None = None,
    supersede: bool | None = None,
    embedding: Any = None,
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
        embedding: The text's vector, computed already by this store's embedding
            model (from a collection you import, say): stored as given (scaled to unit
            length) instead of embedding the text. Checked for its size, not for the
            model: vectors of another model make recall rank at random.

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
        embeddings=None if embedding is None else [embedding],
    )[0]


def remember_many(
    self: Oblivion,
    texts: Sequence[str],
    *,
    categories: Sequence[str | None] | None = None,
    importances: Sequence[float | None] | None = None,
    confidences: Sequence[float] | None = None,
    metadatas: Sequence[Mapping[str, Any] | None] | None = None,
    namespace: str | None = None,
    ids: Sequence[str | None] | None = None,
    supersede: bool | None = None,
    embeddings: Any = None,
) -> list[MemoryRecord]:
    """Store several memories in one batch (one embedding call, one commit).

    Arguments are parallel sequences; see :meth:`remember` (``supersede`` applies to
    the whole batch). ``embeddings``: one vector per text (a list, or an ``(n, dim)``
    array), made by this store's embedding model; nothing is embedded then. All or
    nothing: if any item is invalid, or the write fails, nothing is stored.
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
    for category in dict.fromkeys(c for c in cats if c is not None):  # each name once
        self._hint_category(ns, category)
    final_ids = [i if i is not None else uuid.uuid4().hex for i in given_ids]
    if len(set(final_ids)) != n:
        raise InvalidInputError("ids must be unique within one remember_many() call")
    if n == 0:
        return []
    if embeddings is None:
        self._check_model()
        vectors = embed_texts(self.embedder, clean, self._dim)
    else:
        vectors = given_vectors(embeddings, n, self._model_dim(clean), "embeddings")
    for i in range(n):
        if cats[i] is None:
            cats[i] = scored_category(self.importance_scorer, clean[i])
        if imps[i] is None:
            imps[i] = scored_importance(self.importance_scorer, clean[i])

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
        # (an import_chroma() is no interaction: it ticks nothing)
        ticked = (
            turns is not None
            and policy.clock == "turns"
            and not getattr(self._no_ticks, "active", False)
        )
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
                made={m for m, given in zip(final_ids, given_ids, strict=True) if given is None},
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
                    recent_ids, recent = space.index.recent(policy.link_window + e - s, skip=n - e)
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
        self._drop_outdated(ns, now)
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


def _model_dim(self: Oblivion, texts: Sequence[str]) -> int:
    """The size of this store's vectors; while it holds none, of its embedder's (the
    shortest of ``texts`` embedded once), so that vectors given to a new store are
    checked against the model its queries are embedded with."""
    if self._dim is not None:
        return self._dim
    return int(embed_texts(self.embedder, [min(texts, key=len)]).shape[1])


def _judge_outside_the_lock(
    self: Oblivion,
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
    self: Oblivion,
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
    self._sync.check(ns, space.state)  # what Chroma lost is put back before it changes
    self._lex.read_saved(ns)  # before the write makes the saved BM25 index stale
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
        except Exception as exc:  # the write's own error is the one to report
            self._sync.failed(f"could not remove {n} unwritten memories from Chroma", exc)
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


def _queue_usage(self: Oblivion, ns: str, space: Space, now: float) -> None:
    """Queue the namespace's use counters (what adaptation learns from) for the next
    batched write, as recall boosts are: a crash loses at most that window of them,
    instead of every count since the last ``maintain()`` or ``close()``."""
    self._db.defer(space.state, (), now, (), meta={f"usage:{ns}": space.usage.to_json})
    self._lock.due(self._db.DEFER_SECONDS, self._hand_off)


def edit(
    self: Oblivion,
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
    if cat is not None:
        self._hint_category(ns, cat)
    imp = check_unit(importance, "importance") if importance is not None else None
    if supersede is not None:
        supersede = check_flag(supersede, "supersede")
    if clean is not None:
        self._check_model()
    vector = embed_texts(self.embedder, [clean], self._dim) if clean is not None else None
    # counted now, as remember() counts (held as count + 1)
    counted = count_tokens(self.token_counter, clean) + 1 if clean is not None else 0
    stale: list[tuple[int, list[Candidate]]] = []
    said: list[str] = []
    with self._lock:
        self._check_open()
        space = self._space(ns)
        if clean is not None or cat is not None:  # Chroma's record changes
            self._sync.check(ns, space.state)
        if clean is not None:
            self._lex.read_saved(ns)
        st = space.state
        i = self._row(space, memory_id)
        now = self._now(ns)
        if meta is not None and memory_id in space.summaries:
            # what marks it as a summary (expand()'s advice names it) stays, and so does
            # what its originals share: a filter passes a summary exactly when it passes
            # them (one of carol's shows under a filter that leaves carol out otherwise)
            originals = [m for m in space.summaries[memory_id] if m in st.index]
            contents = self._db.contents(ns, originals)
            shared = shared_metadata([contents[m][1] for m in originals])
            meta = {**meta, **shared, "summary_of": list(space.summaries[memory_id])}
        old_category = st.category(i)
        recategorised = cat is not None and cat != old_category
        # Chroma's record changes with the text or the category (it names the category)
        resync = clean is not None or recategorised
        old_texts = self._db.texts(ns, [memory_id]) if resync else {}
        # a summary's original with a new text: the summary keeps saying the old one;
        # with metadata a filter reads otherwise, the summary (carrying what its
        # originals share) would show it under a filter that now leaves it out
        changing = clean is not None or meta is not None
        sids = self._summaries_of(space, {memory_id}) if changing else []
        if sids:
            text_changed = clean is not None and old_texts.get(memory_id) != clean
            meta_changed = meta is not None and as_filtered(
                self._db.contents(ns, [memory_id])[memory_id][1]
            ) != as_filtered(meta)
            if not (text_changed or meta_changed):
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
                self._note_outdated(ns, dict.fromkeys(sids, "an original was edited"), conn)
                if clean is not None and vector is not None:
                    # last, so a failure before it leaves Chroma as it was
                    chroma_changed = True
                    self.store.add(ns, [memory_id], vector, [clean], [{"category": st.category(i)}])
                elif recategorised and old is not None:
                    chroma_changed = True
                    self.store.add(
                        ns, [memory_id], old[1], [old[0]], [{"category": st.category(i)}]
                    )
        except BaseException:
            if chroma_changed and old is not None:  # the commit failed after Chroma
                try:
                    self.store.add(ns, [memory_id], old[1], [old[0]], [{"category": old_category}])
                except Exception as exc:  # the note stays: put right before the next query
                    self._sync.failed(f"could not restore the text of {memory_id!r} in Chroma", exc)
                    resync = False
                    self._sync.due.add(ns)
            if resync:
                self._sync.clear(ns, [memory_id])
            raise
        if resync:
            self._sync.clear(ns, [memory_id])
        if clean is not None or meta is not None:
            # the old text's or metadata's page out of the write-ahead log (a LangGraph
            # store's item keeps its whole value in its memory's metadata)
            self._db.scrub()
            # what it adds to a list, or the name it gives, is what it says now, and
            # who says it (its metadata may name another chat role)
            said = list(self._said(ns, [memory_id]).values())
            space.discard_texts([memory_id])
            space.note_texts([memory_id], said)
        if clean is not None and vector is not None:
            space.set_vector(memory_id, vector)
            self._lex.replace(ns, int(st.cols["seq"][i]), clean)
        if sids:  # after the edit: one that fails leaves the summary as it was
            space = self._drop_summaries(
                ns, space, dict.fromkeys(sids, "an original was edited"), now
            )
            st = space.state
        if clean is not None and vector is not None:
            policy = self.policy_for(ns)
            detect = policy.supersede if supersede is None else supersede
            # an invalidated memory is wrong whatever it says: it makes nothing stale;
            # nor does a summary, which states several facts (its own originals' among
            # them: an edit of one superseded an original, and so deleted the summary)
            if (
                detect
                and not st.cols["invalidated"][st.index[memory_id]]
                and memory_id not in space.summaries
            ):
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
                self._drop_outdated(ns, now)
        # by id: a failure above reloaded the namespace, and rows may have moved
        record = self._record(ns, self._space(ns).state.index[memory_id], now)
    if stale:
        self._judge_outside_the_lock(ns, self.policy_for(ns), [memory_id], said, stale)
    return record


def _release_supersession(
    self: Oblivion, ns: str, space: Space, memory_id: str, now: float, conn: Any
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
    self: Oblivion,
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
