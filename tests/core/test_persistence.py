"""Persistence: a store reopened from disk (real embedded Chroma + SQLite in tmp_path) is
the store that was closed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from oblivion_core import ManualClock, Oblivion, Policy, Tier, TurnClock
from oblivion_core.testing import HashEmbedder, word_count

pytestmark = pytest.mark.integration

DAY = 86_400.0


class CountingEmbedder(HashEmbedder):
    """A HashEmbedder that counts the texts it embeds for storage."""

    def __init__(self) -> None:
        super().__init__()
        self.documents = 0

    def embed_documents(self, texts: list[str]) -> Any:
        self.documents += len(texts)
        return super().embed_documents(texts)


def _open(path: Path, clock: Any = None, **kwargs: Any) -> Oblivion:
    kwargs.setdefault("embedder", HashEmbedder())
    return Oblivion(path, clock=clock, token_counter=word_count, **kwargs)


def _state(mem: Oblivion, namespace: str | None = None) -> list[tuple[Any, ...]]:
    return [
        (
            r.id,
            r.text,
            r.category,
            r.importance,
            r.confidence,
            r.created_at,
            r.last_accessed,
            r.access_count,
            r.activation,
            r.decay_rate,
            r.tier,
            dict(r.metadata),
            r.invalidated,
        )
        for r in mem.records(namespace=namespace)
    ]


def test_reopen_restores_every_memory(tmp_path: Path) -> None:
    """Texts, categories, activations, tiers, metadata and flags all survive a reopen."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    chat = mem.remember("ok see you", category="small_talk", importance=0.0)
    rule = mem.remember("Always answer in British English", metadata={"src": "settings"})
    fact = mem.remember("the gate code is 1234", category="fact", importance=0.3)
    wrong = mem.remember("the meeting is in room 12", category="fact")
    mem.remember("a note for another tenant", namespace="tenant-2")
    clock.advance(5 * DAY)
    mem.recall("gate code")
    mem.confirm(rule.id)
    mem.invalidate(wrong.id)
    mem.maintain()
    mem.edit(fact.id, "the gate code is 4321")
    before = _state(mem)
    before_other = _state(mem, "tenant-2")
    assert mem.get(chat.id).tier == Tier.ARCHIVE
    mem.close()

    mem = _open(tmp_path, clock)
    try:
        assert _state(mem) == before
        assert _state(mem, "tenant-2") == before_other
        assert mem.namespaces() == ["default", "tenant-2"]
        assert mem.get(fact.id).text == "the gate code is 4321"
    finally:
        mem.close()


def test_active_index_is_rebuilt_without_re_embedding(tmp_path: Path) -> None:
    """Right after reopening, recall finds active memories with no document re-embedded."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    recs = mem.remember_many(["the cat is called Miso", "the dog is called Rex"])
    mem.close()

    embedder = CountingEmbedder()
    mem = _open(tmp_path, clock, embedder=embedder)
    try:
        result = mem.recall("cat called Miso", k=1, deep=False)
        assert result.ids == [recs[0].id]
        assert result[0].tier == Tier.ACTIVE
        assert not result.searched_archive
        assert embedder.documents == 0
    finally:
        mem.close()


def test_archived_memories_stay_archived_and_searchable(tmp_path: Path) -> None:
    """An archived memory is still archived after a reopen and deep recall finds it."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    chat = mem.remember("lovely sunny weather in Lisbon", category="small_talk", importance=0.0)
    mem.remember("Always answer briefly", category="instruction")
    clock.advance(5 * DAY)
    mem.maintain()
    mem.close()

    mem = _open(tmp_path, clock)
    try:
        assert mem.get(chat.id).tier == Tier.ARCHIVE
        assert mem.recall("sunny weather Lisbon", deep=True, k=1).ids == [chat.id]
    finally:
        mem.close()


def test_the_journal_persists(tmp_path: Path) -> None:
    """Every journal event is readable, unchanged, after a reopen."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    rec = mem.remember("the gate code is 1234", category="fact")
    clock.advance(DAY)
    mem.recall("gate code")
    mem.mark_used([rec.id])
    gone = mem.remember("temporary note", category="fact")
    mem.forget(gone.id)
    events = mem.history()
    mem.close()

    mem = _open(tmp_path, clock)
    try:
        assert mem.history() == events
        assert [e.kind for e in mem.history(gone.id)][-1] == "forget"
    finally:
        mem.close()


def test_the_turn_counter_persists(tmp_path: Path) -> None:
    """Under the turn clock, a reopened store continues counting where it stopped."""
    mem = _open(tmp_path, policy=Policy.template("balanced", clock="turns"))
    rec = mem.remember("first turn")
    mem.remember_many(["second turn", "third turn"])
    activation = mem.get(rec.id).activation
    mem.close()

    mem = _open(tmp_path)  # no policy given: the stored one (turns) is used
    try:
        assert mem.policy.clock == "turns"
        assert isinstance(mem.clock, TurnClock)
        assert mem.clock.now() == 3.0
        assert mem.get(rec.id).activation == activation
        mem.remember("fourth turn")
        assert mem.clock.now() == 4.0
    finally:
        mem.close()


def test_reopening_a_turns_store_with_a_template_name_keeps_turns(tmp_path: Path) -> None:
    """Reopening a turn-clock store with a template name keeps counting turns, and no
    activation changes."""
    mem = _open(tmp_path, policy=Policy.template("balanced", clock="turns"))
    rec = mem.remember("the spare key is under the blue pot", category="fact", importance=0.0)
    activation = mem.get(rec.id).activation
    mem.close()

    mem = _open(tmp_path, policy="balanced")
    try:
        assert mem.get(rec.id).activation == activation
        assert isinstance(mem.clock, TurnClock)
    finally:
        mem.close()


def test_policies_persist(tmp_path: Path) -> None:
    """The default policy and per-namespace overrides are restored on reopen."""
    mem = _open(tmp_path, policy="research-assistant")
    mem.remember("a note", namespace="desk")
    mem.set_policy("support-desk", namespace="desk")
    mem.close()

    mem = _open(tmp_path)
    try:
        assert mem.policy.name == "research-assistant"
        assert mem.policy_for("desk").name == "support-desk"
    finally:
        mem.close()


def test_an_explicit_policy_replaces_the_stored_one(tmp_path: Path) -> None:
    """Passing a policy when reopening uses (and stores) that policy instead."""
    _open(tmp_path, policy="research-assistant").close()
    mem = _open(tmp_path, policy="support-desk")
    mem.close()
    mem = _open(tmp_path)
    try:
        assert mem.policy.name == "support-desk"
    finally:
        mem.close()


def test_remember_is_durable_without_close(tmp_path: Path) -> None:
    """A memory is on disk once remember() returns, even if the process then dies."""
    code = textwrap.dedent(
        f"""
        import os
        from oblivion_core import Oblivion, ManualClock
        from oblivion_core.testing import HashEmbedder, word_count
        mem = Oblivion({str(tmp_path)!r}, clock=ManualClock(), embedder=HashEmbedder(),
                       token_counter=word_count)
        rec = mem.remember("written just before the crash", id="last-words")
        os._exit(0)  # no close(), no flush, no atexit handlers
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    mem = _open(tmp_path, ManualClock())
    try:
        assert mem.get("last-words").text == "written just before the crash"
        assert mem.recall("crash", k=1, deep=False).ids == ["last-words"]
    finally:
        mem.close()
