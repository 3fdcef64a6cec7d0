"""Recall's ranking: candidates scored, packed into the token budget, explained.

Part of :class:`~oblivion_core.engine.Oblivion`: each function here is one of its methods
(assigned in its class body), written as a function of the engine.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from oblivion_core.budget import count_tokens, pack
from oblivion_core.index import ActiveIndex
from oblivion_core.policy import Policy
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
)
from oblivion_core.records import COLD, Tier
from oblivion_core.space import Space
from oblivion_core.state import NamespaceState
from oblivion_core.typing import Vectors
from oblivion_core.where import FilterMask

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion


def _score_and_pack(
    self: Oblivion,
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

    ``listed``: the memories shown first whatever their score (the current items of a
    list the query asks for, standing memories, the user's name), each as relevant as
    the best candidate the recall may show (with ``successors``); they bring no
    neighbours and are not counted among the best ``N`` hits. ``passes``: recall's
    ``where`` filter; only memories that pass it are shown (hits, neighbours, linked
    ones).
    """
    st = space.state
    cand = dict(cand)
    heads: dict[str, str] = {}
    stale = [m for m in cand if m in st.superseded_by]
    for m, head in self._chain_heads(st, stale, include_cold).items():
        if not successors:
            if head != m and head in cand:
                heads[m] = head
            continue
        if head != m and head in st.index and not st.cols["invalidated"][st.index[head]]:
            heads[m] = head
            if active_only and head not in space.index:
                continue  # deep=False: an archived successor stays there (m is stale)
            if m in listed:  # shown first: its successor in its place, whatever its category
                listed = listed | {head}
                cand.setdefault(head, -np.inf)
                if signals is not None and m in signals.standing:
                    signals.standing = signals.standing | {head}
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
        keep &= st.cols["tier"][rows] != COLD
    if heads and successors and not include_superseded and policy.hide_superseded:
        keep &= np.fromiter((m not in heads for m in cids), bool, len(cids))
    if passes is not None:
        keep &= passes(cids)
    if not keep.all():
        cids = [m for m, ok in zip(cids, keep, strict=True) if ok]
        rows = rows[keep]
    if not cids:
        return RecallResult(query, ns, (), 0, budget, reason is not None, reason, 0)
    if listed and successors:
        # the memories shown first whatever the query are as relevant as its best match
        # among those it may show (an invalidated one, kept out, set it before)
        top = max((cand[m] for m in cids if cand[m] > -np.inf), default=1.0)
        for m in listed.intersection(cids):
            cand[m] = max(cand[m], top)
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
    n_first = 0
    if listed:  # a list question: the list's current items come first
        first = np.fromiter((cids[j] in listed for j in order), bool, len(order))
        order = np.concatenate([order[first], order[~first]])
        n_first = int(first.sum())
    context_of: dict[str, tuple[str, str]] = {}
    matched: set[str] = set()  # neighbours placed as context that the query matched too
    hit_at: dict[int, int] = {}  # place in ``order`` of a neighbour -> its hit
    if policy.expand_neighbours and qvec is not None:
        # the best hits after the items that come first whatever the query (a list's
        # items, standing memories, the user's name), which stand alone: their
        # neighbours are other talk, and they took the query's hits' context before
        hits = [cids[j] for j in order[n_first : n_first + policy.expand_neighbours]]
        for hit in hits:
            for which, mid in self._neighbours(st, policy, hit, space.summaries):
                if active_only and mid not in space.index:
                    continue
                if passes is not None and not passes.holds(mid):
                    continue
                if mid not in hits and mid not in listed and mid not in context_of:
                    context_of[mid] = (hit, which)
        fresh = [m for m in context_of if m not in pos]
        matched = {m for m in context_of if m in pos}
        if fresh:  # neighbours that were not candidates: scored now, on their own
            f_rows = np.fromiter((st.index[m] for m in fresh), np.int64, len(fresh))
            f_rel = _own_relevance(
                self, ns, space, policy, qvec, fresh, scored, signals is not None
            )
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
        order, hit_at = interleave(order, n_first + len(hits), by_hit, len(cids))

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
        alone = place_priority(scores[order], np.full(len(order), np.nan), in_list)
        for _ in range(3):
            by_prio = np.argsort(-prio, kind="stable")
            lazy = self._costs(ns, st, cids, rows, order[by_prio], per_item, limit)
            chosen = sorted(int(by_prio[c]) for c in pack(lazy, budget, limit, per_item))
            # a neighbour stands at its hit's share only beside it: with the hit left
            # out (over the budget), it took the place of a better hit at that share
            orphans = _orphans(chosen, order, cids, context_of)
            raised = [c for c in orphans if prio[c] > alone[c]]
            if not raised:
                break
            prio[raised] = alone[raised]
        chosen = _orphans_by_score(chosen, orphans, order, scores, in_list, cids, context_of)
    else:
        lazy = self._costs(ns, st, cids, rows, order, per_item, limit)
        chosen = pack(lazy, budget, limit, per_item)
    picked = [int(order[c]) for c in chosen]
    tokens = self._token_counts(ns, st, [cids[j] for j in picked], rows[picked])
    contents = self._db.contents(ns, [cids[j] for j in picked])

    shares = activation_share(rel, best, policy)
    boosts: dict[str, dict[str, Any]] = {}
    # the linked memories expansion may add, as they stand before this recall's boost
    # spreads to them (their why reports the activation they are ranked with, as a
    # hit's does, and the spread as their boost)
    linked: dict[str, float] = {}
    # (only when expansion will run: as many items as picked, and fewer than the limit)
    if feedback and picked and policy.expand_links and successors and len(picked) < limit:
        # _expansions skips the links it has taken (the hits, and each hit's linked
        # memories for the next hits): each hit's next ones stand past those
        reach = policy.expand_max * (len(picked) + 1) + len(picked)
        near = {
            m for j in picked for m, _ in space.graph.strongest(cids[j], reach) if m in st.index
        }
        if near:
            near_rows = np.asarray([st.index[m] for m in near], dtype=np.int64)
            linked = dict(zip(near, self._activation(ns, st, now, near_rows).tolist(), strict=True))
    if feedback and picked:
        # what the query asked for: not a hit's neighbouring turn, nor a standing memory
        # (shown whatever the query); only those count as recalls for adaptation
        standing = signals.standing if signals is not None else frozenset()
        asked = [cids[j] not in context_of and cids[j] not in standing for j in picked]
        boosts = self._feedback(ns, space, policy, now, cids, rows, rel, act, picked, asked)
    items = []
    rank_of = {cids[j]: r for r, j in enumerate(picked, start=1)} if context_of else {}
    # who states each shown stale statement now (their why), each chain walked once
    stated = self._chain_heads(
        st, [cids[j] for j in picked if cids[j] in st.superseded_by], cold=True
    )
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
            # a candidate of the query in its own right, placed beside the hit: an
            # adapter that leaves the hit out keeps it (widen.besides)
            extra["matched"] = mid in matched
            side = "after" if which == "next" else "before"
            where = f"rank {rank_of[hit]}" if hit in rank_of else f"{hit} (not packed)"
            note = f"context: the turn written just {side} {where}"
        elif signals is not None and mid in signals.standing:
            note = "standing: shown whatever the query (recall's standing=)"
        elif signals is not None and mid in signals.named:
            note = "names the user: shown first for a question about the user's name"
        elif signals is not None and mid in signals.listed:
            note = (
                "list item: shown first for a question about the list, with the "
                "relevance of the query's best match"
            )
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
                head=stated.get(mid),
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
            linked,
            (qvec, scored, signals is not None),
        )
        items.extend(more)
    return RecallResult(
        query, ns, tuple(items), total, budget, reason is not None, reason, len(cids)
    )


def _item(
    self: Oblivion,
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
    head: str | None = None,
) -> RecalledItem:
    """One recalled item with its ``why``; ``values`` are (relevance, activation,
    importance, activation share); ``head``: the newest statement of its chain, cold
    ones included, if the caller has it."""
    st = space.state
    i = st.index[mid]
    if mid in st.superseded_by:
        extra["superseded_by"] = st.superseded_by[mid]
        if head is None:
            head = self._chain_head(st, mid, cold=True)
        if head != mid and "ranked_below" not in extra:  # (a capped one says so below)
            note = f"stale: {head} states it now" + (f"; {note}" if note else "")
    if mid in space.review:
        extra["flagged_for_review"] = space.review[mid]
    if mid in space.summaries:
        extra["summary_of"] = list(space.summaries[mid])
    if st.cols["invalidated"][i]:  # shown on request (include_invalidated=True) only
        extra["invalidated"] = True
        note = "invalidated: shown because include_invalidated=True, never boosted" + (
            f"; {note}" if note else ""
        )
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
    self: Oblivion, ns: str, st: NamespaceState, ids: list[str], rows: np.ndarray[Any, Any]
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
    self: Oblivion,
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
    self: Oblivion,
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
    before: Mapping[str, float] | None = None,
    query: tuple[Vectors | None, Sequence[tuple[ActiveIndex, Any]], bool] | None = None,
) -> tuple[list[RecalledItem], int]:
    """Strongest linked memories of the hits, while budget remains (marked in ``why``);
    with ``passes`` (recall's ``where``), only those that pass it. ``before``: their
    activations before this recall's feedback spread to them (ranked with those; the
    spread is their ``why["boost"]``). ``query``: the query vector, the searches'
    similarities and whether relevance is fused: one that was no candidate gets its
    similarity to the query, as a neighbouring turn does (a link is followed whatever
    ``deep`` says: no search reads the archive for it)."""
    st = space.state
    qvec, scored, fused = query or (None, (), False)
    taken = {it.id for it in hits}
    wanted: list[tuple[str, str, float]] = []
    for hit in hits:
        for other, w in space.graph.strongest(hit.id, policy.expand_max, exclude=taken):
            i = st.index.get(other)
            if (
                i is None
                or st.cols["invalidated"][i]
                or st.cols["superseded"][i]
                or st.cols["tier"][i] == COLD
                or (passes is not None and not passes.holds(other))
            ):
                continue
            taken.add(other)
            wanted.append((other, hit.id, w))
    if not wanted:
        return [], used
    fresh = [m for m, _, _ in wanted if m not in relevance]
    if fresh and qvec is not None:  # linked memories that were not candidates
        f_rel = _own_relevance(self, ns, space, policy, qvec, fresh, scored, fused)
        relevance = {**relevance, **dict(zip(fresh, f_rel.tolist(), strict=True))}
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
        boost: dict[str, Any] | None = None  # context a link brought: not boosted itself
        if before is not None and mid in before:
            if float(a) != before[mid]:  # but the hits' boost spread to it
                boost = {"before": before[mid], "after": float(a), "spread": True}
            a = before[mid]
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
                    score(np.asarray([rel]), np.asarray([a]), np.asarray([imp]), policy, best)[0]
                ),
                tier=Tier(int(st.cols["tier"][i])),
                text=contents[mid][0],
                tokens=t,
                metadata=contents[mid][1],
                archive_reason=None,
                extra={"expanded_from": source, "link_weight": w, "boost": boost},
                note=f"added as context: linked to {source} (weight {w:.2f})",
            )
        )
    return out, used


def _own_relevance(
    self: Oblivion,
    ns: str,
    space: Space,
    policy: Policy,
    qvec: Vectors,
    ids: list[str],
    scored: Sequence[tuple[ActiveIndex, Any]],
    fused: bool,
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The relevance of memories that were no candidate of the query (a neighbouring
    turn, a linked memory), by id order: their cosine to it, fused as recall's is when
    ``fused`` (with no BM25 score)."""
    near = self._cosines(ns, space, qvec, ids, scored)
    rel = np.asarray([near.get(m, 0.0) for m in ids], dtype=np.float64)
    return fuse(rel, np.zeros_like(rel), policy) if fused else rel


def _orphans(
    chosen: list[int],
    order: npt.NDArray[np.int64],
    cids: list[str],
    context_of: Mapping[str, tuple[str, str]],
) -> list[int]:
    """The places of ``chosen`` (in ``order``) holding a neighbour whose hit is not
    among them (left out, over the budget)."""
    shown = {cids[int(order[c])] for c in chosen}
    return [
        c
        for c in chosen
        if (mid := cids[int(order[c])]) in context_of and context_of[mid][0] not in shown
    ]


def _orphans_by_score(
    chosen: list[int],
    orphans: list[int],
    order: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    in_list: npt.NDArray[np.bool_],
    cids: list[str],
    context_of: Mapping[str, tuple[str, str]],
) -> list[int]:
    """``chosen`` (places in ``order``) in the order items are shown: each of its
    ``orphans`` (:func:`_orphans`) moves from its hit's place to where its own score
    ranks it among the items that stand on their own (it was shown first, above better
    hits, and ``render`` takes lines in that order). The first items (a list's) stay
    first, and a neighbour beside its hit stays behind it."""
    if not orphans:
        return chosen
    moving = set(orphans)
    out = [c for c in chosen if c not in moving]
    for o in sorted(orphans, key=lambda c: -scores[order[c]]):
        own = scores[order[o]]
        at = next(
            (
                p
                for p, c in enumerate(out)
                if not in_list[c]
                and cids[int(order[c])] not in context_of
                and scores[order[c]] < own
            ),
            len(out),
        )
        out.insert(at, o)
    return out
