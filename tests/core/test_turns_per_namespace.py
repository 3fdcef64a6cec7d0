"""On the turn clock every namespace counts its own interactions: one user's
conversation neither ages another user's memories nor breaks their adjacency (real
embedded Chroma + SQLite in tmp_path, so the counts survive a reopen)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oblivion_core import Oblivion, Policy, TurnClock
from oblivion_core.state import StateDB
from oblivion_core.testing import HashEmbedder, word_count

pytestmark = pytest.mark.integration

TURNS = Policy.template("balanced", clock="turns")


def _open(path: Path) -> Oblivion:
    return Oblivion(path, policy=TURNS, embedder=HashEmbedder(), token_counter=word_count)


def test_writes_in_one_namespace_do_not_age_another(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    bob = mem.remember("We went to the concert last night.", category="event", namespace="bob")
    mem.remember_many([f"alice note {k}" for k in range(300)], namespace="alice")
    assert mem.get(bob.id, namespace="bob").activation == pytest.approx(bob.activation)
    plan = mem.maintain(namespace="bob", dry_run=True)
    assert plan.entries == ()
    mem.remember("And the band played an encore.", category="event", namespace="bob")
    assert mem.get(bob.id, namespace="bob").activation < bob.activation  # bob's own turn
    mem.close()


def test_adjacent_turns_stay_adjacent_when_another_namespace_writes_between(
    tmp_path: Path,
) -> None:
    mem = _open(tmp_path)
    q = mem.remember("Which trail should we hike on Saturday?", namespace="bob")
    mem.remember("Something else entirely, in another conversation.", namespace="alice")
    a = mem.remember("Take the ridge trail, it has the best views.", namespace="bob")
    assert a.id in mem.links(q.id, namespace="bob")
    mem.close()


def test_each_namespace_continues_its_count_after_a_reopen(tmp_path: Path) -> None:
    mem = _open(tmp_path)
    mem.remember_many(["one", "two", "three"], namespace="alice")
    mem.remember("only one", namespace="bob")
    mem.close()
    again = _open(tmp_path)
    assert isinstance(again.clock, TurnClock)
    assert (again.clock.now("alice"), again.clock.now("bob")) == (3.0, 1.0)
    again.close()


def test_a_store_written_with_one_shared_count_keeps_its_times(tmp_path: Path) -> None:
    """Stores written before per-namespace counts hold one ``turn``: every namespace
    continues from it, so no memory's age changes."""
    mem = _open(tmp_path)
    rec = mem.remember("We went to the concert last night.", category="event", namespace="bob")
    mem.remember_many([f"alice note {k}" for k in range(5)], namespace="alice")
    mem.close()
    db = StateDB(tmp_path)  # as the previous version left it: one count, no own counts
    with db.transaction() as conn:
        conn.execute("DELETE FROM meta WHERE key LIKE 'turn:%'")
        db.set_meta("turn", 6.0, conn)
    db.close()
    again = _open(tmp_path)
    assert again.clock.now("bob") == 6.0
    assert again.get(rec.id, namespace="bob").as_of == 6.0
    again.close()
