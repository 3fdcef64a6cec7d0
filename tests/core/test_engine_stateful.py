"""Hypothesis drives the engine through random sequences of its public operations on a real
embedded Chroma: writes (with a chat role), edits of text, category and importance,
forgets (one, or by a filter on the text), invalidations, confirmations, used marks,
links, supersessions, recalls with every option, maintenance with compression, what a
caller may do to a summary, policy switches, unloads, bad input, time passing (wall or
turn clock) and reopening the store (with a new clock, as a new process would). After
every step it checks what a user relies on:

- nothing the caller stored is lost, changed or invented; only summaries appear, and
  a memory is cold exactly when a summary stands for it;
- nothing forgotten, invalidated, cold, superseded or from the other namespace is
  recalled unless asked for; ``k`` and the token budget hold;
- Chroma holds exactly the stored memories, with their texts;
- links are undirected and between stored memories; a supersession points at a stored
  memory;
- every change the caller makes is in the journal, in the order it happened;
- a reopen restores every memory, its activation, the policies and the journal.

``FaultMachine`` runs the same with failures injected (a SQLite transaction, a Chroma
write before or after it lands, a delete, an embedding): the step that meets one
changes nothing the caller can see, and every check above still holds after it.

The model keeps only what the caller decides (which ids exist, their texts, which were
invalidated); what the engine decides itself (supersession, tiers, summaries) is checked
through these invariants, not predicted. It found two bugs: a boost journaled after the
restore it caused, and a store on the turn clock that a new ``TurnClock()`` sent back to
turn 0.
"""

from __future__ import annotations

import functools
import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from oblivion_core import FastEmbedEmbedder, Oblivion, Policy, VectorStore
from oblivion_core.clock import TurnClock
from oblivion_core.errors import InvalidInputError, UnknownMemoryError, UnknownNamespaceError
from oblivion_core.policy import ClockKind
from oblivion_core.records import MemoryRecord, Tier
from oblivion_core.testing import HashEmbedder, ManualClock, word_count

NAMESPACES = ("alice", "bob")
DAY = 86_400.0

#: Sentences the text rules read (names, favourites, list items, a reply language) and
#: plain ones, so that writes supersede, link and compress one another.
_SUBJECTS = ("colour", "food", "drink", "editor", "city")
_VALUES = ("blue", "green", "pho", "tea", "vim", "Leeds", "York", "coffee")
_fact = st.builds(
    "my favourite {} is {}".format, st.sampled_from(_SUBJECTS), st.sampled_from(_VALUES)
)
_list = st.builds(
    "{} {} {} the shopping list".format,
    st.sampled_from(("add", "remove", "put")),
    st.sampled_from(("eggs", "milk", "bread")),
    st.sampled_from(("to", "from", "on")),
)
_name = st.builds("call me {}".format, st.sampled_from(("Dee", "Bob", "Ada")))
_plain = st.lists(
    st.sampled_from(
        ("the", "launch", "is", "on", "friday", "meeting", "budget", "moved", "team", "lunch")
    ),
    min_size=1,
    max_size=8,
).map(" ".join)
BAD = ("nan importance", "blank text", "taken id", "repeated id")
FAULTS = ("transaction", "chroma add", "chroma add, after writing", "chroma delete", "embedding")
SUMMARY_ACTIONS = ("forget", "invalidate", "edit", "confirm")
TEMPLATES = ("as opened", "support-desk", "research-assistant", "balanced")
TEXTS = st.one_of(_fact, _list, _name, _plain, st.just("Always answer in French"))


class Boom(RuntimeError):
    """A failure :class:`FaultMachine` injects."""


def _may_fail(*, adds: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A step that meets an injected failure (:class:`FaultMachine`) changes nothing the
    model holds: the exception propagates before the model is updated, and is dropped
    here (``adds``: the step adds to a bundle, and adds nothing then). Without an
    injection armed, this is the step as written."""

    def wrap(rule_fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(rule_fn)
        def step(self: EngineMachine, *args: Any, **kwargs: Any) -> Any:
            self.fired, self.in_step = False, True
            try:
                return rule_fn(self, *args, **kwargs)
            except Exception:
                if not self.fired:
                    raise
                event("a step met an injected failure")
                return multiple() if adds else None
            finally:
                self.in_step = False

        return step

    return wrap


def _chain_head(records: dict[str, MemoryRecord], mid: str, *, cold: bool) -> str:
    """The newest memory of ``mid``'s supersession chain that recall shows: a successor
    that is invalidated, gone, or cold (unless ``cold``) does not count."""
    head, node, seen = mid, mid, {mid}
    while (nxt := records[node].superseded_by) is not None and nxt in records and nxt not in seen:
        seen.add(nxt)
        node = nxt
        if not records[node].invalidated and (cold or records[node].tier != Tier.COLD):
            head = node
    return head


class EngineMachine(RuleBasedStateMachine):
    """One engine on disk, two namespaces, and a model of what the caller asked for."""

    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        self.max_loaded: int | None = None
        self.dir = Path(tempfile.mkdtemp(prefix="oblivion-stateful-"))
        self.clock: ManualClock | TurnClock = ManualClock(1_000.0)
        self.embedder: Any = HashEmbedder(dim=64)
        self.token_counter: Any = word_count
        self.policy = Policy()
        self.mem: Oblivion  # opened by open_store(), the first step
        # (namespace, id) -> text, for every memory the caller stored and did not forget
        self.texts: dict[tuple[str, str], str] = {}
        self.forgotten: set[tuple[str, str]] = set()
        self.invalidated: set[tuple[str, str]] = set()
        # (namespace, id) of every summary the engine made, as of the last step
        self.summaries: set[tuple[str, str]] = set()
        self.fired = False  # an injected failure went off in this step
        self.undo_failed = False  # ... in a Chroma call undoing a failed change's
        self.in_step = False  # injected failures go off in steps, not in the checks
        # where the vectors are kept: the default chroma/ beside the state, or another
        # vector store the state was moved to ("a" or "b"; see move_vectors)
        self.place = "beside"

    def _open(self) -> Oblivion:
        return Oblivion(
            self.dir,
            policy=self.policy,
            clock=self.clock,
            embedder=self.embedder,
            token_counter=self.token_counter,
            max_loaded_namespaces=self.max_loaded,
            vector_store=self._vector_store(),
        )

    def _vector_store(self) -> VectorStore | None:
        """Chroma embedded beside the state (``None``), or in a folder of its own after a
        move (a subclass may use a server)."""
        if self.place == "beside":
            return None
        return VectorStore.embedded(self.dir / f"vectors-{self.place}")

    @initialize(max_loaded=st.sampled_from((None, 1)), clock=st.sampled_from(("wall", "turns")))
    def open_store(self, max_loaded: int | None, clock: ClockKind) -> None:
        # 1: every switch of namespace lets the other go and reads it back later
        self.max_loaded = max_loaded
        if clock == "turns":  # counts writes; a reopen reads the counts back
            self.clock = TurnClock()
        self.policy = Policy.template("balanced", clock=clock).replace(
            active_capacity=6,  # a small active tier: maintenance moves memories
            maintain_every=5,
            compress_below=0.25,
            compress_min_cluster=2,
            compress_similarity=0.3,
        )
        self.mem = self._open()

    def teardown(self) -> None:
        if hasattr(self, "mem"):
            self.mem.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _unknown(self, ns: str, call: Callable[[], object]) -> bool:
        """Whether ``ns`` holds nothing yet; if so, ``call`` on it must say so."""
        if ns in self.mem.namespaces():
            return False
        with pytest.raises(UnknownNamespaceError, match="remember"):
            call()
        return True

    def _kinds_since(self, ns: str, mid: str, seen: int) -> list[str]:
        return [e.kind for e in self.mem.history(mid, namespace=ns)[seen:]]

    def _user_ids(self, ns: str) -> set[str]:
        return {m for (n, m) in self.texts if n == ns}

    # ------------------------------------------------------------------ writes
    @rule(
        target=memories,
        ns=st.sampled_from(NAMESPACES),
        text=TEXTS,
        role=st.sampled_from((None, "user", "assistant")),
    )
    @_may_fail(adds=True)
    def remember(self, ns: str, text: str, role: str | None) -> tuple[str, str]:
        # a chat message with its role, as the adapters store one
        meta = {"role": role} if role else None
        rec = self.mem.remember(text, namespace=ns, metadata=meta)
        assert rec.text == text and rec.namespace == ns
        self.texts[(ns, rec.id)] = text
        return (ns, rec.id)

    @rule(ns=st.sampled_from(NAMESPACES), texts=st.lists(TEXTS, min_size=1, max_size=8))
    @_may_fail()
    def remember_many(self, ns: str, texts: list[str]) -> None:
        recs = self.mem.remember_many(texts, namespace=ns)
        assert [r.text for r in recs] == texts
        for r in recs:
            self.texts[(ns, r.id)] = r.text

    @rule(key=memories, text=TEXTS)
    @_may_fail()
    def edit(self, key: tuple[str, str], text: str) -> None:
        ns, mid = key
        if key in self.forgotten:
            with pytest.raises(UnknownMemoryError):
                self.mem.edit(mid, text, namespace=ns)
            return
        seen = len(self.mem.history(mid, namespace=ns))
        assert self.mem.edit(mid, text, namespace=ns).text == text
        self.texts[key] = text
        assert "edit" in self._kinds_since(ns, mid, seen), "the edit is not in the journal"

    @rule(key=consumes(memories))
    @_may_fail()
    def forget(self, key: tuple[str, str]) -> None:
        ns, mid = key
        if key in self.forgotten:
            with pytest.raises(UnknownMemoryError):
                self.mem.forget(mid, namespace=ns)
            return
        self.mem.forget(mid, namespace=ns)
        assert self.mem.history(mid, namespace=ns)[-1].kind == "forget"  # the journal keeps it
        del self.texts[key]
        self.invalidated.discard(key)
        self.forgotten.add(key)

    @rule(
        ns=st.sampled_from(NAMESPACES),
        piece=st.sampled_from(("tea", "milk", "budget", "call me", "French")),
    )
    @_may_fail()
    def forget_where(self, ns: str, piece: str) -> None:
        where_document = {"$contains": piece}
        if self._unknown(
            ns, lambda: self.mem.forget_where(where_document=where_document, namespace=ns)
        ):
            return
        mine = {m for m in self._user_ids(ns) if piece in self.texts[(ns, m)]}
        gone = self.mem.forget_where(where_document=where_document, namespace=ns)
        event(f"forget_where: {'some' if gone else 'nothing'} deleted")
        assert mine <= set(gone), f"kept: {mine - set(gone)}"
        # besides the caller's memories that hold the piece, only summaries go
        assert all(m in mine or (ns, m) not in self.texts for m in gone)
        for mid in mine:
            assert self.mem.history(mid, namespace=ns)[-1].kind == "forget"
            del self.texts[(ns, mid)]
            self.invalidated.discard((ns, mid))
            self.forgotten.add((ns, mid))

    @rule(key=memories)
    @_may_fail()
    def invalidate(self, key: tuple[str, str]) -> None:
        ns, mid = key
        if key in self.forgotten:
            return
        seen = len(self.mem.history(mid, namespace=ns))
        self.mem.invalidate(mid, namespace=ns)
        if key not in self.invalidated:  # invalidating it again changes nothing
            assert self._kinds_since(ns, mid, seen) == ["invalidate"]
        self.invalidated.add(key)
        assert self.mem.get(mid, namespace=ns).invalidated

    @rule(key=memories)
    @_may_fail()
    def confirm(self, key: tuple[str, str]) -> None:
        ns, mid = key
        if key in self.forgotten:
            return
        seen = len(self.mem.history(mid, namespace=ns))
        activation = self.mem.confirm(mid, namespace=ns)
        assert 0.0 <= activation <= self.policy.cap
        kinds = self._kinds_since(ns, mid, seen)
        if key in self.invalidated:  # invalidate() stands: no boost, nothing recorded
            assert activation == 0.0 and kinds == []
        else:
            # boosted above the band, an archived memory comes back to the active tier
            assert kinds in (["confirm"], ["confirm", "restore"]), kinds
            entry = self.mem.history(mid, namespace=ns)[seen]
            assert entry.after == pytest.approx(activation)

    @rule(ns=st.sampled_from(NAMESPACES), text=TEXTS)
    @_may_fail()
    def unknown_ids_change_nothing(self, ns: str, text: str) -> None:
        if self._unknown(ns, lambda: self.mem.forget("no-such-id", namespace=ns)):
            return
        before = self.mem.count(namespace=ns)
        for call in (
            lambda: self.mem.edit("no-such-id", text, namespace=ns),
            lambda: self.mem.forget("no-such-id", namespace=ns),
            lambda: self.mem.confirm("no-such-id", namespace=ns),
            lambda: self.mem.invalidate("no-such-id", namespace=ns),
        ):
            with pytest.raises(UnknownMemoryError):
                call()
        assert self.mem.count(namespace=ns) == before

    @rule(old=memories, new=memories)
    @_may_fail()
    def supersede(self, old: tuple[str, str], new: tuple[str, str]) -> None:
        if old[0] != new[0] or old[1] == new[1] or {old, new} & self.forgotten:
            return
        ns = old[0]
        try:
            self.mem.supersede(old[1], new[1], namespace=ns)
        except InvalidInputError as e:  # refused for the reason the docstring names
            if new in self.invalidated:  # no current statement of a fact
                assert "is invalidated" in str(e)
            elif old in self.summaries:  # it states several facts
                assert "is a summary" in str(e)
            else:  # superseding back would make a cycle
                assert "cycle" in str(e)
            return
        assert new not in self.invalidated and old not in self.summaries  # (refused above)
        assert self.mem.get(old[1], namespace=ns).superseded_by == new[1]

    @rule(a=memories, b=memories, weight=st.floats(0.01, 1.0))
    @_may_fail()
    def link(self, a: tuple[str, str], b: tuple[str, str], weight: float) -> None:
        if a[0] != b[0] or a[1] == b[1] or {a, b} & self.forgotten:
            return
        ns = a[0]
        before = self.mem.links(a[1], namespace=ns).get(b[1], 0.0)
        w = self.mem.link(a[1], b[1], weight, namespace=ns)
        assert w == pytest.approx(max(before, weight))  # a stronger weight replaces a weaker
        assert self.mem.links(b[1], namespace=ns)[a[1]] == pytest.approx(w)

    @rule(
        key=memories,
        category=st.sampled_from((None, "fact", "instruction", "small_talk")),
        importance=st.one_of(st.none(), st.floats(0.0, 1.0)),
    )
    @_may_fail()
    def recategorise(
        self, key: tuple[str, str], category: str | None, importance: float | None
    ) -> None:
        ns, mid = key
        if key in self.forgotten or (category is None and importance is None):
            return
        rec = self.mem.edit(mid, namespace=ns, category=category, importance=importance)
        assert rec.text == self.texts[key]
        assert rec.category == (category or rec.category)
        if importance is not None:
            assert rec.importance == pytest.approx(importance)

    @rule(ns=st.sampled_from(NAMESPACES), text=TEXTS, bad=st.sampled_from(BAD))
    @_may_fail()
    def bad_input_changes_nothing(self, ns: str, text: str, bad: str) -> None:
        before = self._snapshot(ns)
        taken = next((m for (n, m) in self.texts if n == ns), None)
        with pytest.raises(InvalidInputError):
            if bad == "nan importance":
                self.mem.remember(text, namespace=ns, importance=math.nan)
            elif bad == "blank text":
                self.mem.remember_many([text, "   "], namespace=ns)
            elif bad == "taken id" and taken is not None:
                self.mem.remember(text, namespace=ns, id=taken)
            else:  # a batch that repeats an id
                self.mem.remember_many([text, text], namespace=ns, ids=["twin", "twin"])
        assert self._snapshot(ns) == before

    @rule(ns=st.sampled_from(NAMESPACES))
    @_may_fail()
    def clear(self, ns: str) -> None:
        if self._unknown(ns, lambda: self.mem.clear(namespace=ns)):
            return
        mine = self._user_ids(ns)
        assert self.mem.clear(namespace=ns) >= len(mine)
        for mid in mine:
            del self.texts[(ns, mid)]
            self.invalidated.discard((ns, mid))
            self.forgotten.add((ns, mid))
        assert self.mem.count(namespace=ns) == 0

    @precondition(lambda self: bool(self.summaries))
    @rule(data=st.data())
    @_may_fail()
    def decompress(self, data: st.DataObject) -> None:
        ns, sid = data.draw(st.sampled_from(sorted(self.summaries)))
        event("a summary: decompress")
        summary = self.mem.get(sid, namespace=ns)
        originals = self.mem.expand(sid, namespace=ns)
        assert [r.id for r in originals] == list(summary.metadata["summary_of"])
        assert all(r.text == self.texts[(ns, r.id)] for r in originals)
        back = self.mem.decompress(sid, namespace=ns)
        assert {r.id for r in back} == {r.id for r in originals}
        assert all(self.mem.get(r.id, namespace=ns).tier == Tier.ARCHIVE for r in back)
        with pytest.raises(UnknownMemoryError):
            self.mem.get(sid, namespace=ns)

    @precondition(lambda self: bool(self.summaries))
    @rule(action=st.sampled_from(SUMMARY_ACTIONS), data=st.data())
    @_may_fail()
    def change_a_summary(self, action: str, data: st.DataObject) -> None:
        """What a caller may do to a summary a recall returned: its originals stay."""
        ns, sid = data.draw(st.sampled_from(sorted(self.summaries)))
        event(f"a summary: {action}")
        if action == "forget":
            self.mem.forget(sid, namespace=ns)
        elif action == "invalidate":
            self.mem.invalidate(sid, namespace=ns)
        elif action == "edit":
            self.mem.edit(sid, data.draw(TEXTS), namespace=ns)
        else:
            self.mem.confirm(sid, namespace=ns)

    @rule(ns=st.sampled_from(NAMESPACES))
    @_may_fail()
    def unload_and_load(self, ns: str) -> None:
        if ns not in self.mem.namespaces():
            return
        before = self._snapshot(ns)
        self.mem.unload(namespace=ns)
        assert self._snapshot(ns) == before
        self.mem.unload(namespace=ns)
        self.mem.load(namespace=ns)
        assert self._snapshot(ns) == before

    @rule(ns=st.sampled_from(NAMESPACES), template=st.sampled_from(TEMPLATES))
    @_may_fail()
    def switch_policy(self, ns: str, template: str) -> None:
        if ns not in self.mem.namespaces():
            return
        before = self._snapshot(ns)
        policy = self.policy if template == "as opened" else template
        self.mem.set_policy(policy, namespace=ns, reason="test")
        after = self._snapshot(ns)  # a switch changes future decay, not what is stored
        assert {m: f for m, (f, _) in after.items()} == {m: f for m, (f, _) in before.items()}

    # ------------------------------------------------------------------ reads
    @rule(
        ns=st.sampled_from(NAMESPACES),
        query=TEXTS,
        budget=st.one_of(st.none(), st.integers(1, 30)),
        deep=st.sampled_from((None, True, False)),
        include_invalidated=st.booleans(),
        include_superseded=st.booleans(),
        include_cold=st.booleans(),
        k=st.one_of(st.none(), st.integers(1, 12)),
        standing=st.sampled_from(((), "instruction", ("instruction", "preference"))),
    )
    @_may_fail()
    def recall(
        self,
        ns: str,
        query: str,
        budget: int | None,
        deep: bool | None,
        include_invalidated: bool,
        include_superseded: bool,
        include_cold: bool,
        k: int | None,
        standing: str | tuple[str, ...],
    ) -> None:
        if self._unknown(ns, lambda: self.mem.recall(query, namespace=ns)):
            return
        result = self.mem.recall(
            query,
            namespace=ns,
            token_budget=budget,
            deep=deep,
            include_invalidated=include_invalidated,
            include_superseded=include_superseded,
            include_cold=include_cold,
            k=k,
            standing=standing,
        )
        assert len(result) <= (k or self.mem.policy_for(ns).default_k)
        records = {r.id: r for r in self.mem.records(namespace=ns)}
        ids = [item.id for item in result]
        assert len(ids) == len(set(ids)), f"an item returned twice: {ids}"
        if budget is not None:
            assert sum(item.tokens for item in result) <= budget
        mine = self._user_ids(ns)
        for item in result:
            key = (ns, item.id)
            assert key not in self.forgotten, f"forgotten {item.id} recalled"
            if item.id not in mine:  # only a summary the engine made may be new
                rec = self.mem.get(item.id, namespace=ns)
                assert rec.category == "summary", f"{item.id} in {ns} is no one's memory"
            else:
                assert item.text == self.texts[key]
            if not include_invalidated:
                assert key not in self.invalidated, f"invalidated {item.id} recalled"
            if not include_cold:
                assert records[item.id].tier != Tier.COLD, f"cold {item.id} recalled"
            if not include_superseded:
                head = _chain_head(records, item.id, cold=include_cold)
                assert head == item.id, f"{item.id} recalled in place of its successor {head}"
            assert math.isfinite(item.score) and 0.0 <= item.activation <= self.policy.cap

    @rule(key=memories)
    @_may_fail()
    def mark_used(self, key: tuple[str, str]) -> None:
        ns, mid = key
        if key in self.forgotten:
            # the answer drew on a memory forgotten since: refused, or skipped when asked
            if ns in self.mem.namespaces():
                with pytest.raises(UnknownMemoryError):
                    self.mem.mark_used([mid], namespace=ns)
                assert self.mem.mark_used([mid], namespace=ns, skip_missing=True) == []
            return
        (activation,) = self.mem.mark_used([mid], namespace=ns)
        assert 0.0 <= activation <= self.policy.cap

    # ------------------------------------------------------------------ time, upkeep
    @rule(days=st.floats(0.0, 365.0, allow_nan=False))
    def time_passes(self, days: float) -> None:
        if isinstance(self.clock, TurnClock):
            self.clock.tick(round(days))  # turns every namespace shares
        else:
            self.clock.advance(days * DAY)

    @rule(ns=st.sampled_from(NAMESPACES))
    @_may_fail()
    def months_later(self, ns: str) -> None:
        """A user back after months: what faded is archived and compressed."""
        self.time_passes(200.0)
        if ns in self.mem.namespaces():
            self.mem.maintain(namespace=ns)

    @rule(ns=st.sampled_from(NAMESPACES), dry_run=st.booleans())
    @_may_fail()
    def maintain(self, ns: str, dry_run: bool) -> None:
        if self._unknown(ns, lambda: self.mem.maintain(namespace=ns)):
            return
        before = {(r.id, r.tier) for r in self.mem.records(namespace=ns)}
        self.mem.maintain(namespace=ns, dry_run=dry_run)
        after = {(r.id, r.tier) for r in self.mem.records(namespace=ns)}
        if dry_run:
            assert after == before, "a dry run changed the store"

    @precondition(lambda self: bool(self.texts))
    @rule()
    def reopen(self) -> None:
        snapshot = {ns: self._snapshot(ns) for ns in NAMESPACES}
        known = self.mem.namespaces()
        policies = {ns: self.mem.policy_for(ns) for ns in known}
        journals = {ns: self.mem.history(namespace=ns) for ns in known}
        self.mem.close()
        if isinstance(self.clock, TurnClock):  # a new process: its clock starts at 0
            turns = {ns: self.clock.now(ns) for ns in NAMESPACES}
            self.clock = TurnClock()
        self.mem = self._open()
        if isinstance(self.clock, TurnClock):  # the engine read the counts back
            assert {ns: self.clock.now(ns) for ns in NAMESPACES} == turns
        assert self.mem.namespaces() == known
        for ns in known:
            assert self.mem.policy_for(ns) == policies[ns]
            assert self.mem.history(namespace=ns) == journals[ns]
        for ns in NAMESPACES:
            again = self._snapshot(ns)
            assert again.keys() == snapshot[ns].keys()
            for mid, (fields, activation) in again.items():
                old_fields, old_activation = snapshot[ns][mid]
                assert fields == old_fields, mid
                assert activation == pytest.approx(old_activation, abs=1e-6), mid

    @precondition(lambda self: bool(self.texts))
    @rule(place=st.sampled_from(("beside", "a", "b")))
    def move_vectors(self, place: str) -> None:
        """The store opened with another vector store (or the one it had: a reopen): each
        namespace is copied there on first use, over any older copy a move back finds
        (the invariants then see Chroma hold exactly what the state does)."""
        event(f"moved to {place}" if place != self.place else "reopened where it was")
        self.place = place
        self.reopen()

    @precondition(lambda self: bool(self.texts))
    @rule()
    def restore_a_backup(self) -> None:
        """The store backed up, closed, and the backup opened in its place (with the
        chroma/ folder beside it, which it fills): it holds what the store held, as a
        reopen does (the invariants then see Chroma hold exactly what the state does)."""
        folder = Path(tempfile.mkdtemp(prefix="oblivion-stateful-"))  # empty: it takes one
        self.mem.backup(folder)
        store, self.dir, self.place = self.dir, folder, "beside"
        self.reopen()
        shutil.rmtree(store, ignore_errors=True)

    def _snapshot(self, ns: str) -> dict[str, tuple[tuple[object, ...], float]]:
        if ns not in self.mem.namespaces():
            return {}
        return {
            r.id: (
                (r.text, r.category, r.tier, r.invalidated, r.superseded_by, r.access_count),
                r.activation,
            )
            for r in self.mem.records(namespace=ns)
        }

    # ------------------------------------------------------------------ invariants
    @invariant()
    def every_memory_is_where_the_caller_left_it(self) -> None:
        self.summaries.clear()
        for ns in NAMESPACES:
            if ns not in self.mem.namespaces():
                assert not self._user_ids(ns)
                continue
            records = {r.id: r for r in self.mem.records(namespace=ns)}
            mine = self._user_ids(ns)
            assert mine <= records.keys(), f"lost: {mine - records.keys()}"
            assert self.mem.count(namespace=ns) == len(records)
            # Chroma holds exactly these, with their texts: nothing to repair; unless a
            # failed change could not undo its Chroma call either (logged), which the next
            # query through Chroma, a reopen or repair_vector_store() puts right
            held = set(self.mem.store.ids(ns))
            repaired = self.mem.repair_vector_store(namespace=ns)
            if not self.undo_failed:
                assert held == records.keys()
                assert repaired == {"put_back": 0, "removed": 0}
            assert set(self.mem.store.ids(ns)) == records.keys()
            # ... each with its text and the vector the state keeps (an edit's, not an older
            # copy's: a move back to a folder written before it)
            chroma = self.mem.store.collection(ns).get(include=["documents", "embeddings"])
            kept = self.mem._db.vectors(ns, chroma["ids"])
            for mid, doc, vec in zip(
                chroma["ids"], chroma["documents"], chroma["embeddings"], strict=True
            ):
                assert doc == records[mid].text, mid
                assert np.allclose(vec, kept[mid], atol=1e-6), mid
            for mid in mine:
                r = records[mid]
                assert r.text == self.texts[(ns, mid)]
                assert r.invalidated == ((ns, mid) in self.invalidated)
                assert 0.0 <= r.activation <= self.policy.cap
            for mid in records.keys() - mine:
                assert records[mid].category == "summary", f"{mid} appeared in {ns}"
                assert set(records[mid].metadata["summary_of"]) <= mine
            for mid in records:  # links are undirected, and only between stored memories
                for other, w in self.mem.links(mid, namespace=ns).items():
                    assert other in records, f"{mid} linked to {other}, which is gone"
                    assert self.mem.links(other, namespace=ns)[mid] == pytest.approx(w)
            behind: set[str] = set()  # originals of a summary
            for r in records.values():
                event(f"a {Tier(r.tier).label} memory")  # what the run reached
                if r.superseded_by is not None:
                    event("a superseded memory")
                if r.category == "summary" and r.metadata.get("summary_of"):
                    self.summaries.add((ns, r.id))
                    if not r.invalidated:  # an invalidated one let its originals go
                        behind.update(r.metadata["summary_of"])
            for r in records.values():  # cold: behind a summary, and only then
                assert (r.tier == Tier.COLD) == (r.id in behind), (r.id, r.tier)
                if r.superseded_by is not None:
                    assert r.superseded_by in records, "superseded by a memory that is gone"
        for ns, mid in self.forgotten:
            with pytest.raises(UnknownMemoryError):
                self.mem.get(mid, namespace=ns)
        if all(ns in self.mem.namespaces() for ns in NAMESPACES):
            # repaired above (a namespace whose first write failed holds no memory to
            # repair yet: a record that write left goes when it is first used)
            self.undo_failed = False


@functools.cache
def _local_model() -> FastEmbedEmbedder:
    return FastEmbedEmbedder()


class RealStackMachine(EngineMachine):
    """The same through the local embedding model and tiktoken: real similarities decide
    what supersedes, links and is compressed together."""

    def __init__(self) -> None:
        super().__init__()
        self.embedder = _local_model()
        self.token_counter = None  # the default, tiktoken's cl100k_base


class FaultMachine(EngineMachine):
    """The same with failures injected: the next SQLite transaction, Chroma write or
    embedding fails once. The step that meets it must change nothing the caller can see
    (``_may_fail``), and every invariant must hold after it."""

    @rule(where=st.sampled_from(FAULTS))
    def arm_a_failure(self, where: str) -> None:
        owner, name = {
            "transaction": (self.mem._db, "journal"),  # every change journals in one
            "chroma add": (self.mem.store, "add"),
            "chroma add, after writing": (self.mem.store, "add"),  # a timeout, say
            "chroma delete": (self.mem.store, "delete"),
            "embedding": (self.embedder, "embed_documents"),
        }[where]
        real = getattr(owner, name)

        def broken(*args: Any, **kwargs: Any) -> Any:
            if not self.in_step:  # a check's own call: the failure waits for a step
                return real(*args, **kwargs)
            setattr(owner, name, real)
            # a Chroma call failing after another failure is one undoing a change
            self.undo_failed |= self.fired and where.startswith("chroma")
            self.fired = True
            if where.endswith("after writing"):
                real(*args, **kwargs)
            raise Boom(f"{where} failed")

        setattr(owner, name, broken)


EngineMachine.TestCase.settings = settings(
    max_examples=20,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestEngineMachine = EngineMachine.TestCase

RealStackMachine.TestCase.settings = settings(
    EngineMachine.TestCase.settings, max_examples=6, stateful_step_count=30
)
TestRealStackMachine = pytest.mark.integration(RealStackMachine.TestCase)

FaultMachine.TestCase.settings = settings(
    EngineMachine.TestCase.settings, max_examples=20, stateful_step_count=30
)
TestFaultMachine = pytest.mark.integration(FaultMachine.TestCase)
