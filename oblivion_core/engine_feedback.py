"""Activation raised by use: a recall's feedback, ``mark_used``, ``reinforce``,
``confirm``, links and the spreading along them.

Part of :class:`~oblivion_core.engine.Oblivion`: each function here is one of its methods
(assigned in its class body), written as a function of the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from oblivion_core import decay
from oblivion_core.association import LinkGraph, spread
from oblivion_core.checks import (
    check_flag,
    check_id,
    check_ids,
    check_namespace,
    check_unit,
    finite,
)
from oblivion_core.errors import InvalidInputError, StoreCorruptError
from oblivion_core.index import exact_links, row_tops
from oblivion_core.policy import Policy
from oblivion_core.records import ARCHIVE, Tier
from oblivion_core.space import Space
from oblivion_core.state import JournalRow
from oblivion_core.typing import Vectors

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion

logger = logging.getLogger("oblivion_core")


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
    # asked for by the query (not a neighbouring turn, not a standing memory): only those
    # count as recalls for adaptation
    asked: list[bool]


def _feedback(
    self: Oblivion,
    ns: str,
    space: Space,
    policy: Policy,
    now: float,
    cids: list[str],
    rows: np.ndarray[Any, Any],
    rel: np.ndarray[Any, Any],
    act: np.ndarray[Any, Any],
    picked: list[int],
    asked: list[bool],
) -> dict[str, dict[str, Any]]:
    """Boost what a recall returned; restore archived items that rise above the band.

    ``asked``: whether the query asked for each picked item (a match, not a neighbouring
    turn or a standing memory shown beside them); only those count as the category's
    recalls (and archive hits) for adaptation.

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
    gains = np.where(tiers == ARCHIVE, policy.archive_gain, 1.0)
    betas = self._category_params(ns, st, policy)[1][c["cat"][prow]]
    deltas = decay.boost_delta(betas, rel[picked], c["confidence"][prow], gains)
    before = act[picked]
    boosted = decay.boost(before, deltas, policy.cap)
    valid = ~c["invalidated"][prow]
    ids = [cids[j] for j in picked]
    # the archived ones lifted above the band: promoted for certain while the active tier
    # has room for all of them (why says so); over its target, whether each beats what
    # the next maintain() keeps is decided with the boosts applied (_room_for reads every
    # active memory's activation: 0.3 ms at 20k, kept out of the recall's own time)
    lifted = int(np.count_nonzero((tiers == ARCHIVE) & (boosted > policy.archive_high) & valid))
    target = policy.active_target(space.state.n)
    sure = lifted > 0 and (target is None or target - len(space.index) >= lifted)
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
            if sure and tier == ARCHIVE and a1 > policy.archive_high:
                public["promoted"] = True
        out[mid] = {"from_tier": Tier(tier), "public": public}

    boosts = _Boosts(ids, prow, tiers, before, boosted, valid, rel[picked], asked)

    def apply() -> None:
        self._apply_feedback(ns, space, policy, now, boosts)

    if self.WRITE_BEHIND and self._lock.outermost and not policy.expand_links:
        self._lock.later(lambda: self._apply_later(ns, space, apply))
    else:
        apply()
    return out


def _apply_later(self: Oblivion, ns: str, space: Space, apply: Callable[[], None]) -> None:
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
    self: Oblivion,
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
    for mid, i, tier, a0, a1, relevance, ok, asked in zip(
        boosts.ids,
        boosts.rows.tolist(),
        boosts.tiers.tolist(),
        boosts.before.tolist(),
        boosts.after.tolist(),
        boosts.relevances.tolist(),
        valid.tolist(),
        boosts.asked,
        strict=True,
    ):
        if not ok:  # shown on request, never reinforced
            continue
        st.cols["relevance"][i] = max(relevance, 0.0)  # what mark_used() boosts by
        if asked:
            usage = space.usage.of(st.category(i))
            usage.recalled += 1
            usage.archive_hits += int(tier == ARCHIVE)
        if tier == ARCHIVE and a1 > policy.archive_high:
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


def _hand_off(self: Oblivion) -> None:
    """Hand the deferred updates to the store's writer (on the lock's timer)."""
    if self._closed:
        return
    self._db.hand_off()
    # again later while anything is owed: updates queued behind a batch still being
    # written, or that batch itself until it is settled (a write that met another
    # process's lock is retried then, not only at the next call)
    if self._db.deferred or self._db.writing:
        self._lock.due(self._db.DEFER_SECONDS, self._hand_off)


def mark_used(
    self: Oblivion, ids: Iterable[str], *, namespace: str | None = None, skip_missing: bool = False
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
    self: Oblivion,
    ids: Iterable[str],
    *,
    relevances: Sequence[float] | None = None,
    namespace: str | None = None,
    asked: bool = True,
) -> list[float]:
    """Give memories the boost a recall would have given them (for callers that pick
    results themselves, e.g. a filtered store search). Returns the new activations.

    Args:
        ids: Memories to boost (each once).
        relevances: Relevance of each in ``[0, 1]`` (default 1.0).
        namespace: Where they live.
        asked: Whether a query asked for them. ``False`` for memories shown beside
            those (a hit's neighbouring turn, a standing instruction): boosted alike,
            but not counted as their categories' recalls, from which adaptation
            (``Policy.adapt``) learns how fast each should decay.
    """
    asked = check_flag(asked, "asked")
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
            counted=asked,
        )


def confirm(self: Oblivion, memory_id: str, *, namespace: str | None = None) -> float:
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
    self: Oblivion,
    ns: str,
    space: Space,
    rows: list[int],
    now: float,
    *,
    kind: str,
    deltas: list[float],
    stability: float,
    counted: bool = True,
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
            elif kind == "recall" and counted:  # reinforce(), as recall's feedback counts
                usage.recalled += 1
                usage.archive_hits += int(st.cols["tier"][i] == Tier.ARCHIVE)
            if (
                st.cols["tier"][i] == Tier.ARCHIVE
                and a > policy.archive_high
                and not st.cols["invalidated"][i]
            ):
                restore.append(mid)
            journal.append((mid, kind, float(b), float(a), {}))
        seeds = {st.ids[i]: float(a - b) for i, b, a in zip(rows, before, after_valid, strict=True)}
        touched = rows + self._spread(ns, space, policy, seeds, now, journal)
        restore = self._room_for(ns, space, policy, now, restore)
        if restore:  # journaled after the boost that lifted them, as recall's are
            promoted, moved = self._promote(ns, space, restore, f"{kind} boost")
            touched += promoted
            journal += moved
        # a confirmation is synced to disk as it returns (rare, and the user said so);
        # use boosts, one per answer, commit as recall boosts do
        with self._db.transaction(durable=kind == "confirm") as conn:
            self._db.save_rows(conn, st, touched)
            self._db.journal(conn, now, ns, journal)
            if kind in ("used", "recall"):  # the counts go with the signal
                self._db.set_meta(f"usage:{ns}", space.usage.to_json(), conn)
        return [float(a) for a in after]


def link(
    self: Oblivion, a: str, b: str, weight: float = 1.0, *, namespace: str | None = None
) -> float:
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


def links(self: Oblivion, memory_id: str, *, namespace: str | None = None) -> dict[str, float]:
    """The memories linked to ``memory_id`` and their weights."""
    ns = self._ns(namespace)
    with self._lock:
        self._check_open()
        space = self._space(ns)
        self._row(space, memory_id)
        return space.graph.neighbours(memory_id)


def _auto_link(
    self: Oblivion,
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
    self: Oblivion,
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
