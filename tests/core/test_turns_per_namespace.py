"""On the turn clock every namespace counts its own interactions: one user's
conversation neither ages another user's memories nor breaks their adjacency (real
embedded Chroma + SQLite in tmp_path, so the counts survive a reopen)."""

from __future__ import annotations

import json
import subprocess
import sys
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


_KILLED_AFTER = """
import json, os, sys
from oblivion_core import Oblivion, Policy
from oblivion_core.testing import HashEmbedder, word_count
mem = Oblivion(sys.argv[1], policy=Policy.template("balanced", clock="turns"),
               embedder=HashEmbedder(), token_counter=word_count)
mem.remember("The office moved to Leeds in March", category="fact", importance=0.4,
             namespace="A", id="y")
mem.remember("Lunch is at noon on Fridays", category="fact", namespace="A", id="z")
mem.clock.tick(1200)  # every namespace
getattr(mem, sys.argv[2])(*json.loads(sys.argv[3]), namespace="A")
print(mem.clock.now("A"), mem.get("y", namespace="A").activation, flush=True)
os._exit(0)  # killed: no close(), no atexit
"""


@pytest.mark.parametrize(
    "call", [["maintain"], ["confirm", "z"], ["mark_used", "z"], ["invalidate", "z"]]
)
def test_a_change_computed_after_a_tick_is_saved_with_that_tick(
    tmp_path: Path, call: list[str]
) -> None:
    """The counts used to be saved only by close() and remember(): a process killed
    after maintain()/confirm()/... reopened with its clock 1,200 turns behind the state
    those calls committed (an archived memory back at its old activation, journal times
    in the future)."""
    args = [call[1:]] if call[0] == "mark_used" else call[1:]  # mark_used takes a list
    out = subprocess.run(
        [sys.executable, "-c", _KILLED_AFTER, str(tmp_path), call[0], json.dumps(args)],
        capture_output=True,
        text=True,
        check=True,
    )
    live_now, live_activation = map(float, out.stdout.split())
    mem = _open(tmp_path)
    try:
        assert mem.clock.now("A") == live_now == 1202.0
        assert mem.get("y", namespace="A").activation == pytest.approx(live_activation)
        assert max(e.at for e in mem.history(namespace="A")) <= live_now
    finally:
        mem.close()


_FAILED_WRITE = """
import json, os, sqlite3, sys
from oblivion_core import Oblivion, Policy
from oblivion_core.testing import HashEmbedder, word_count
mem = Oblivion(sys.argv[1], policy=Policy.template("balanced", clock="turns"),
               embedder=HashEmbedder(), token_counter=word_count)
mem.remember("first fact in default")
mem.remember("first fact in b", namespace="b")
journal = mem._db.journal
def disk_error(*args, **kwargs):
    mem._db.journal = journal
    raise sqlite3.OperationalError("disk I/O error")
mem._db.journal = disk_error
try:
    mem.remember("this write fails")
except Exception:
    pass
mem.remember("second fact in b", namespace="b")
print(json.dumps([mem.clock.now("default"), mem.clock.now("b")]), flush=True)
os._exit(0)  # killed: no close()
"""


def test_a_failed_writes_tick_is_not_saved_by_the_next_write(tmp_path: Path) -> None:
    """The failed remember() rewinds its tick; the count its transaction carried was
    queued again with it and saved by the next write (of another namespace), so a
    reopened store ran one turn ahead of the live one."""
    out = subprocess.run(
        [sys.executable, "-c", _FAILED_WRITE, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    live = json.loads(out.stdout)
    assert live == [1.0, 2.0]
    mem = _open(tmp_path)
    try:
        assert [mem.clock.now("default"), mem.clock.now("b")] == live
    finally:
        mem.close()
