"""One namespace's journal is read without reading the others': its history, a prune and
a ``maintain()`` pruning by ``Policy.journal_keep`` cost what its own entries cost.

SQLite's progress handler counts the virtual machine's steps, which grow with the rows a
statement reads: a deterministic stand-in for the time a scan of every namespace's
entries took (76 ms for a history, 259 ms for such a ``maintain()`` beside 1M entries of
another namespace's)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from oblivion_core import ManualClock, Oblivion, Policy
from oblivion_core.state import SCHEMA_VERSION, StateDB, namespace_key
from oblivion_core.testing import HashEmbedder, word_count

DAY = 86_400.0


def _open(path: Path, clock: ManualClock | None = None, policy: Policy | None = None) -> Oblivion:
    return Oblivion(
        path,
        clock=clock if policy is None else None,
        policy=policy,
        embedder=HashEmbedder(),
        token_counter=word_count,
    )


def _foreign(mem: Oblivion, n: int, at: float) -> None:
    """``n`` journal entries of another namespace's (as its recalls would write)."""
    mem.remember("Bob owns the build.", namespace="big", id="m")
    with mem._db.transaction() as conn:
        mem._db.journal(conn, at, "big", [("m", "recall", 0.2, 0.3, {})] * n)


def _steps(mem: Oblivion, call: Callable[[], object]) -> int:
    """SQLite's virtual machine steps (in hundreds) that ``call`` takes."""
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0

    mem._db.conn.set_progress_handler(tick, 100)
    try:
        call()
    finally:
        mem._db.conn.set_progress_handler(None, 100)
    return count


def _small(mem: Oblivion, clock: ManualClock) -> None:
    mem.remember("Alice likes green tea.", namespace="small")
    mem.recall("green tea", namespace="small")
    clock.advance(DAY)
    mem.recall("green tea", namespace="small")


@pytest.mark.parametrize("call", ["history", "history_last", "prune", "maintain"])
def test_a_namespace_reads_its_own_entries_only(tmp_path: Path, call: str) -> None:
    steps = []
    for foreign in (1_000, 20_000):
        clock = ManualClock()
        with _open(tmp_path / str(foreign), clock) as mem:
            _small(mem, clock)
            _foreign(mem, foreign, clock.now() - 2 * DAY)
            keep = mem.policy_for(namespace="small").replace(journal_keep=DAY / 2)
            mem.set_policy(keep, namespace="small")
            calls: dict[str, Callable[[], object]] = {
                "history": lambda m=mem: m.history(namespace="small"),
                "history_last": lambda m=mem: m.history(namespace="small", last=2),
                "prune": lambda m=mem: m.prune_journal(DAY / 2, namespace="small"),
                "maintain": lambda m=mem: m.maintain(namespace="small"),
            }
            steps.append(_steps(mem, calls[call]))
            assert len(mem.history(namespace="big")) == foreign + 1  # none of them pruned
    # reading the other namespace's entries took at least one step (of 100) per 10 of
    # them: 1,800 more for 19,000 more entries
    assert steps[1] <= steps[0] + 50, steps


def test_pruning_still_drops_the_old_entries_beside_another_namespace(tmp_path: Path) -> None:
    clock = ManualClock()
    with _open(tmp_path, clock) as mem:
        _small(mem, clock)
        _foreign(mem, 5_000, clock.now() - 3 * DAY)
        recalls = [e for e in mem.history(namespace="small") if e.kind == "recall"]
        assert len(recalls) == 2
        assert mem.prune_journal(DAY / 2, namespace="small") == 1  # the recall a day ago
        assert [e.at for e in mem.history(namespace="small") if e.kind == "recall"] == [
            recalls[1].at
        ]
        assert len(mem.history(namespace="big")) == 5_001


def _as_version_5(path: Path) -> None:
    """Rewrite a closed store as version 5 wrote it: no ``nkey`` column, no index."""
    conn = sqlite3.connect(path / StateDB.FILE)
    conn.execute("DROP INDEX events_by_namespace")
    conn.execute("ALTER TABLE events DROP COLUMN nkey")
    conn.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
    conn.commit()
    conn.close()


def test_a_version_5_store_gets_every_entry_keyed_by_namespace(tmp_path: Path) -> None:
    clock = ManualClock()
    with _open(tmp_path, clock) as mem:
        _small(mem, clock)
        mem.remember("Bob owns the build.", namespace="other")
        before = {ns: mem.history(namespace=ns) for ns in ("small", "other")}
    _as_version_5(tmp_path)

    with _open(tmp_path, clock) as mem:
        assert {ns: mem.history(namespace=ns) for ns in ("small", "other")} == before
        mem.recall("green tea", namespace="small")  # new entries are keyed as they go in
        assert len(mem.history(namespace="small")) > len(before["small"])

    conn = sqlite3.connect(tmp_path / StateDB.FILE)
    rows = conn.execute("SELECT namespace, nkey FROM events").fetchall()
    version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
    plan = conn.execute(
        "EXPLAIN QUERY PLAN SELECT seq FROM events WHERE nkey=? AND namespace=?", (0, "")
    ).fetchall()
    conn.close()
    assert rows and all(nkey == namespace_key(ns) for ns, nkey in rows)
    assert version == str(SCHEMA_VERSION)
    assert "events_by_namespace" in str(plan)
