"""Stale facts: a newer statement supersedes an older one.

Part of :class:`~oblivion_core.engine.Oblivion`: each function here is one of its methods
(assigned in its class body), written as a function of the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from oblivion_core.checks import check_reason
from oblivion_core.errors import InvalidInputError
from oblivion_core.index import row_tops
from oblivion_core.policy import Policy
from oblivion_core.records import COLD
from oblivion_core.space import Space
from oblivion_core.state import JournalRow
from oblivion_core.supersession import Candidate, LexicalSupersession, parse, subject_query
from oblivion_core.typing import Vectors

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion

_SUPERSEDE_CANDIDATES = 12  # older memories judged per new statement (dense + lexical)


def supersede(
    self: Oblivion,
    old_id: str,
    new_id: str,
    *,
    namespace: str | None = None,
    reason: str = "explicit",
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
        j = self._row(space, new_id)
        if old_id in space.summaries:
            raise InvalidInputError(
                f"{old_id!r} is a summary: it states several memories, so nothing supersedes "
                "it whole; supersede the original it holds (expand() lists them), or "
                "decompress() or invalidate() the summary"
            )
        if space.state.cols["invalidated"][j]:
            raise InvalidInputError(
                f"{new_id!r} is invalidated, so it cannot be the current statement of a "
                "fact; supersede with a valid memory"
            )
        # old_id's own successor is replaced, so the pair makes a cycle exactly when
        # old_id is anywhere on new_id's chain (not only at its end)
        if _on_chain(space.state.superseded_by.get, new_id, old_id):
            raise InvalidInputError(
                f"{new_id!r} is already superseded (directly or not) by {old_id!r}; "
                "superseding it back would make a cycle"
            )
        now = self._now(ns)
        if space.state.cols["tier"][j] == COLD:
            # a summary's original becomes the current statement of a fact: recallable
            # as itself (compression keeps such memories out), so the summary goes and
            # its originals go back to the archive; behind it, the older statement
            # would count as current (:meth:`_chain_head` skips cold successors)
            sids = self._summaries_of(space, {new_id})
            why = "an original became the current statement of a fact"
            space = self._drop_summaries(ns, space, dict.fromkeys(sids, why), now)
        self._set_superseded(ns, space, [(old_id, new_id)], now, reason)
        self._drop_outdated(ns, now)


def _detect_supersession(
    self: Oblivion,
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
    self: Oblivion,
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
    # a batch restating a few facts asks the same searches again and again (each one's
    # cost grows with the memories holding its words: 20,000 restatements of 8 texts
    # took 37 s), and the index does not change below: each query is searched once
    bm25 = _once(lambda query: self._lex.search(ns, query, _SUPERSEDE_CANDIDATES)[0])
    for k in judged:
        sims: dict[str, float] = {}
        if recent_ids:
            for j in recent_best[k]:
                sims[recent_ids[j]] = float(recent_sims[k, j])
        near, near_sims = nearest[k]
        for m, sim in zip(near, near_sims, strict=True):
            sims.setdefault(m, float(sim))
        seqs = bm25(texts[k])
        keywords = subject_query(statements[k])
        if keywords:  # older statements of the same subject, archived ones included
            seqs = [*seqs, *bm25(keywords)]
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


def _judge_stale(
    self: Oblivion,
    policy: Policy,
    ids: list[str],
    texts: list[str],
    found: list[tuple[int, list[Candidate]]],
) -> list[tuple[str, str]]:
    """``(old, new)`` pairs: which candidates each new text makes stale. Reads no
    engine state, so a judge that asks a model runs outside the engine's lock."""
    judge = self.supersession_judge
    offline = LexicalSupersession(policy.supersede_similarity, policy.supersede_fallback_similarity)
    rule = judge if judge is not None else offline
    verdict = getattr(rule, "verdict", None)
    pairs: list[tuple[str, str]] = []
    taken: set[str] = set()  # made stale by an earlier text of the batch
    for k, cands in found:
        # as if written one by one: a memory an earlier text of the batch made stale is
        # no longer current for the later ones (three restatements chain, each replacing
        # the one before, where all pointed at the newest; an edit of it then made both
        # older ones current again, against one written one at a time)
        cands = [c for c in cands if c.id not in taken]
        if not cands:
            continue
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
        taken.update(chosen)
    return pairs


def _apply_stale(
    self: Oblivion,
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
        self._drop_outdated(ns, now)


def _set_superseded(
    self: Oblivion, ns: str, space: Space, pairs: list[tuple[str, str]], now: float, reason: str
) -> None:
    # one transition per stale memory: two texts of one batch restating its fact both
    # name it (the later one is its successor), and a second entry would journal a
    # ``before`` the first had already lowered
    pairs = list({old: (old, new) for old, new in pairs}.values())
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
        # a summary stating an original no longer current keeps saying it: dropped
        # once the caller's change is done (:meth:`_drop_outdated`), noted with it
        why = "an original was superseded"
        outdated = dict.fromkeys(self._summaries_of(space, {old for old, _ in pairs}), why)
        with self._db.transaction() as conn:
            self._db.save_rows(conn, st, rows)
            self._db.journal(conn, now, ns, journal)
            self._note_outdated(ns, outdated, conn)
        space.outdated.update(outdated)


def _once(search: Callable[[str], list[int]]) -> Callable[[str], list[int]]:
    """``search``, run once per query: its answers are kept, so call it only while what
    it searches does not change (the returned lists are shared: not to be changed)."""
    answers: dict[str, list[int]] = {}

    def once(query: str) -> list[int]:
        found = answers.get(query)
        if found is None:
            found = answers[query] = search(query)
        return found

    return once


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
