"""Maintenance: tier moves, compression into summaries, promotion.

Part of :class:`~oblivion_core.engine.Oblivion`: each function here is one of its methods
(assigned in its class body), written as a function of the engine.
"""

from __future__ import annotations

import heapq
import logging
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from oblivion_core.adaptation import HELD_SHARE, adapt
from oblivion_core.checks import check_flag, check_text
from oblivion_core.compression import clusters, max_group_size, shared_metadata
from oblivion_core.embedding import embed_texts
from oblivion_core.errors import EmbeddingError, InvalidInputError
from oblivion_core.policy import Policy
from oblivion_core.records import ACTIVE, COLD, MemoryRecord, Tier
from oblivion_core.space import Space
from oblivion_core.state import BOOST_KINDS, JournalRow
from oblivion_core.tiering import MaintenancePlan, PlanEntry, TierDecision, plan_tiers
from oblivion_core.where import as_filtered

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion

logger = logging.getLogger("oblivion_core")
_MAX_COMPRESS_BATCH = 2_000  # lowest-activation candidates clustered per maintain()


def maintain(
    self: Oblivion, *, dry_run: bool = False, namespace: str | None = None
) -> MaintenancePlan:
    """Plan tier moves for one namespace and apply them (``dry_run=True``: plan only).

    Applying also runs self-adaptation of half-lives and betas.
    """
    dry_run = check_flag(dry_run, "dry_run")
    ns = self._ns(namespace)
    with self._lock:
        self._check_open()
        if not dry_run:  # summaries a change made outdated (a crash may have left some)
            if ns in self._drop_failed:  # a drop failed before: tried again here
                self._drop_failed.discard(ns)
                self._space(ns).outdated.update(self._noted_outdated(ns))
            self._drop_outdated(ns, self._now(ns))
        return self._maintain(ns, dry_run=dry_run)


def _maintain(self: Oblivion, ns: str, *, dry_run: bool) -> MaintenancePlan:
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
        # a full tier raises the band, but what comes back only had to pass the policy's
        # own threshold and be among the most active the tier keeps (tiering._keep): one
        # at the raised edge was said to be "above" it
        restored_why = f"activation above {policy.archive_high:.3f}" + (
            ", among the most active the full tier keeps" if decision.pressure else ""
        )
        for action, rows, why in (
            ("archive", decision.archive, f"activation below {decision.low:.3f}"),
            ("restore", decision.restore, restored_why),
            ("forget", decision.forget, f"activation below forget_below {policy.forget_below}"),
        ):
            for i in rows:
                reason = "invalidated" if st.cols["invalidated"][i] else why
                if action == "archive" and reason == why and act[i] >= decision.low:
                    # tied at the cut of a full active tier: the newer of them stay
                    reason = f"activation {act[i]:.3f} tied at the full tier's cut"
                entries.append(PlanEntry(st.ids[i], action, float(act[i]), st.category(i), reason))
        # a summary of a memory forgotten goes with it, as with forget(): it says what
        # the memory said (an invalidated summary, whose originals decay in the archive,
        # kept their text after they were forgotten)
        forgotten = {st.ids[i] for i in decision.forget}
        with_them = [s for s in self._summaries_of(space, forgotten) if s not in forgotten]
        for sid in with_them:
            i = st.index[sid]
            why = "an original was forgotten"
            entries.append(PlanEntry(sid, "forget", float(act[i]), st.category(i), why))
        for g, group in enumerate(groups):
            for mid in group:
                i = st.index[mid]
                reason = f"group {g + 1}: {len(group)} low-activation memories -> one summary"
                entries.append(PlanEntry(mid, "compress", float(act[i]), st.category(i), reason))
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
                    self._move_to_active(ns, space, restore_ids, conn, now, restored_why)
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
                # a tier held at its target (over it, full: a read-only phase promotes
                # nothing, or a few short of it) keeps most memories archived whatever
                # their decay
                target = policy.active_target(will_hold)
                held = decision.pressure or (target is not None and after >= HELD_SHARE * target)
                share = self._archived_share(st) if held else None
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
                    ns,
                    space,
                    [*decision.forget.tolist(), *(st.index[s] for s in with_them)],
                    now,
                    "decayed below forget_below",
                    reasons=dict.fromkeys(with_them, "an original was forgotten"),
                )
            skipped: set[str] = set()
            for group in groups:
                if self._compress(ns, space, policy, group, now) is None:
                    skipped.update(group)
            if skipped:  # the plan says what was done
                entries = [e for e in entries if not (e.action == "compress" and e.id in skipped)]
            if policy.journal_keep is not None:
                # one chunk per call: maintain() runs inside remember() and must not stall
                chunks = self._db.prune_events(
                    ns, now - policy.journal_keep, BOOST_KINDS, own_clock=self._own_clock
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
    self: Oblivion, ns: str, space: Space, policy: Policy, act: Any, decision: Any
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
    ok[[st.index[m] for m in space.summaries if m in st.index]] = False  # recategorised
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
    # only memories whose metadata a filter reads alike share a summary, which carries
    # it: a ``where`` then passes a summary exactly when it passes its originals (one of
    # another user's, say, would show under a filter that leaves it out)
    raw = {m: meta for m, meta, _ in self._db.metadata_rows(ns, ids)}
    alike: dict[str, list[int]] = {}
    for k, m in enumerate(ids):
        alike.setdefault(as_filtered(self._db.parse_metadata(m, raw.get(m, "{}"))), []).append(k)
    # no more than one summary can stand for (80 words: 20 memories)
    most = max_group_size(getattr(self.summarizer, "max_words", None), policy.compress_min_cluster)
    groups: list[list[str]] = []
    for members in alike.values():
        if len(members) < policy.compress_min_cluster:
            continue
        found = clusters(
            mat[members],
            times[members],
            similarity=policy.compress_similarity,
            window=policy.adjacency,
            min_size=policy.compress_min_cluster,
            max_size=most,
        )
        groups.extend([ids[members[k]] for k in group] for group in found)
    # oldest first, as one clustering of them all listed them
    first = [st.index[g[0]] for g in groups]
    order = sorted(
        range(len(groups)),
        key=lambda g: (float(st.cols["created_at"][first[g]]), int(st.cols["seq"][first[g]])),
    )
    return [groups[g] for g in order]


def _compress(
    self: Oblivion, ns: str, space: Space, policy: Policy, group: list[str], now: float
) -> str | None:
    """Write a summary of ``group`` and move the originals to the cold tier."""
    st = space.state
    live = [m for m in group if m in st.index]
    if len(live) < 2:
        return None
    contents = self._db.contents(ns, live)
    texts = [contents[m][0] for m in live]
    # the metadata its originals share (compression groups memories a filter reads alike)
    shared = shared_metadata([contents[m][1] for m in live])
    try:
        summary = self.summarizer.summarize(texts)
        if summary is not None and not isinstance(summary, str):
            raise TypeError(f"summarize() returned {type(summary).__name__}, not a str")
        summary = (summary or "").strip()
        if summary:  # a text remember() would take (no NUL, no lone surrogate, not too long)
            summary = check_text(summary, policy.max_text_chars, "the summary")
    except Exception:  # the group stays archived; maintain() goes on
        logger.exception(
            "the summarizer failed on %d memories of namespace %r; they stay archived",
            len(live),
            ns,
        )
        return None
    if not summary:
        logger.warning(
            "the summarizer returned no text for %d memories of namespace %r; they stay archived",
            len(live),
            ns,
        )
        return None
    try:
        self._check_model()  # (another model's summary vector would rank at random)
        vec = embed_texts(self.embedder, [summary], self._dim)
    except EmbeddingError:  # as a summarizer's failure: the group stays archived
        logger.exception(
            "the embedder failed on the summary of %d memories of namespace %r; they stay archived",
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
        [{**shared, "summary_of": live}],
        a_ref=[a0],
        tier=tier,
        also=originals_to_cold,
        made=(sid,),
    )
    return sid


def expand(self: Oblivion, summary_id: str, *, namespace: str | None = None) -> list[MemoryRecord]:
    """The original memories a summary stands for, in their original order, unchanged."""
    ns = self._ns(namespace)
    with self._lock:
        self._check_open()
        space = self._space(ns)
        return self._records(ns, self._originals(space, summary_id), self._now(ns))


def decompress(
    self: Oblivion, summary_id: str, *, namespace: str | None = None
) -> list[MemoryRecord]:
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


def _originals(self: Oblivion, space: Space, summary_id: str) -> list[int]:
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
    self: Oblivion,
    ns: str,
    space: Space,
    freed: Mapping[str, str],
    conn: Any,
    now: float,
    reason: str,
) -> None:
    """Move cold originals (id -> their summary's id) back to the archive, journaled
    as ``decompress``: their summary was deleted, decompressed or invalidated."""
    st = space.state
    moved = [o for o in freed if o in st.index and st.cols["tier"][st.index[o]] == COLD]
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
    self: Oblivion, ns: str, space: Space, ids: list[str], conn: Any, now: float, reason: str
) -> None:
    rows, journal = self._promote(ns, space, ids, reason)
    self._db.save_rows(conn, space.state, rows)
    self._db.journal(conn, now, ns, journal)


def _room_for(
    self: Oblivion, ns: str, space: Space, policy: Policy, now: float, ids: list[str]
) -> list[str]:
    """Which of ``ids`` (archived memories a boost lifted above ``archive_high``) the
    active tier takes: all while it is below its target; over it, one whose activation
    beats, by the band's width, the least activated of the memories the next
    :meth:`maintain` keeps (the target's worth of the most activated active ones, and
    those promoted before it). Else the promotion cost the next ``maintain()`` one of
    the two again, and the next recall brought it back: two memories at the cut swapped
    tiers on every recall and maintain. (Compared with the least activated active
    memory, a new write that the next maintain archives let every hit in, to be
    archived again.)"""
    st = space.state
    target = policy.active_target(st.n)
    room = len(ids) if target is None else target - len(space.index)
    if not ids or room >= len(ids):  # nothing to rank: the floor is not read
        return ids
    acts = self._activation(ns, st, now, np.asarray([st.index[m] for m in ids], np.int64))
    active = np.flatnonzero(st.col("tier") == ACTIVE)
    # the activations maintain() keeps (at most the target's worth) ...
    kept = self._activation(ns, st, now, active) if len(active) else np.zeros(0)
    if target is not None and len(kept) > target:
        kept = np.partition(kept, len(kept) - target)[len(kept) - target :]
    # ... of which a promotion takes the least's place: one per candidate at most, so
    # the smallest len(ids) + 1 are all a min-heap needs (not the 15k of a 100k store)
    few = min(len(ids) + 1, len(kept))
    heap = np.sort(np.partition(kept, few - 1)[:few]).tolist() if few else []
    width = policy.archive_high - policy.archive_low
    out: list[str] = []
    for j in np.argsort(-acts, kind="stable").tolist():
        a = float(acts[j])
        if room > 0:
            room -= 1
            heapq.heappush(heap, a)
        elif heap and a - width > heap[0]:
            heapq.heapreplace(heap, a)  # it takes the place of the least activated
        else:
            continue
        out.append(ids[j])
    return out


def _promote(
    self: Oblivion, ns: str, space: Space, ids: list[str], reason: str
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
        st.cols["tier"][i] = ACTIVE
    return rows, [(m, "restore", None, None, {"reason": reason}) for m in have]
