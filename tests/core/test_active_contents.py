"""The active tier's texts and metadata are held in memory (``StateDB.hold``).

Every recall shows memories of the active tier. Their texts and metadata are kept apart
from the contents cache's LRU while they stay in the tier, so reads of archived memories
and runs of writes do not push them out, and a reopened store reads them in one scan when
the namespace loads instead of one query per recall. Checked here through the engine:
what is held is exactly the active tier, and every entry (held or in the LRU) is what the
database holds, whatever the sequence of writes, edits, deletions, tier moves and unloads.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import Oblivion, Tier
from oblivion_core.testing import HashEmbedder, ManualClock, memory

from ._reads import count_reads

DAY = 86_400.0


def _active(mem: Oblivion, ns: str) -> set[str]:
    st_ = mem._space(ns).state
    return {m for m, i in st_.index.items() if int(st_.cols["tier"][i]) == Tier.ACTIVE}


def _check_coherent(mem: Oblivion, ns: str) -> None:
    """Held = the loaded namespace's active tier; every cached entry is the stored row."""
    db = mem._db
    held = set(db._held.get(ns, {}))
    if ns in mem._spaces:
        assert held == _active(mem, ns)
    else:
        assert held == set()
    cached = {m: v for m, v in db._held.get(ns, {}).items() if v is not None}
    cached.update({m: v for (n, m), v in db._contents.items() if n == ns})
    assert not held & {m for (n, m) in db._contents if n == ns}
    if cached:
        rows = db._by_ids("id, text, metadata", ns, list(cached))
        assert {m: (text, meta) for m, text, meta in rows} == cached


def test_a_reopened_store_reads_the_active_tier_once_then_recalls_without_reading(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    with Oblivion(tmp_path / "s", embedder=HashEmbedder(), clock=clock) as mem:
        ids = [r.id for r in mem.remember_many([f"the shed holds tool {i}" for i in range(40)])]
        clock.advance(60 * DAY)
        kept = mem.remember_many([f"the garage holds bike {i}" for i in range(8)])
        mem.maintain()
        active = _active(mem, mem.default_namespace)
        assert {r.id for r in kept} <= active and set(ids) - active  # some were archived
    with Oblivion(tmp_path / "s", embedder=HashEmbedder(), clock=clock) as mem:
        reads = count_reads(mem._db)
        found = mem.recall("garage bike", k=3, deep=False)
        assert len(reads) == 1 and set(reads[0]) == active  # the load's one scan
        assert {i.id for i in found.items} <= active and len(found.items) == 3
        assert all("garage holds bike" in i.text for i in found.items)
        mem.recall("garage bike 3", k=3, deep=False)
        assert len(reads) == 1  # no read for the second recall either
        _check_coherent(mem, mem.default_namespace)


def test_a_namespace_that_fails_to_load_holds_nothing(tmp_path: Path) -> None:
    import sqlite3

    import pytest

    from oblivion_core import StoreCorruptError

    with Oblivion(tmp_path / "s", embedder=HashEmbedder(), clock=ManualClock()) as mem:
        mem.remember_many([f"fact {i}" for i in range(5)])
    conn = sqlite3.connect(tmp_path / "s" / "oblivion.sqlite3")
    conn.execute("UPDATE meta SET value='{bad' WHERE key='writes:default'")  # one row damaged
    conn.commit()
    conn.close()
    with Oblivion(tmp_path / "s", embedder=HashEmbedder(), clock=ManualClock()) as mem:
        with pytest.raises(StoreCorruptError):
            mem.recall("fact")
        assert mem.loaded_namespaces() == []
        assert "default" not in mem._db._held


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 3)),
        st.tuples(st.just("edit"), st.integers(0, 30)),
        st.tuples(st.just("meta"), st.integers(0, 30)),
        st.tuples(st.just("forget"), st.integers(0, 30)),
        st.tuples(st.just("age"), st.integers(1, 90)),
        st.tuples(st.just("recall"), st.integers(0, 30)),
        st.tuples(st.just("unload"), st.just(0)),
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=60, deadline=None)
@given(ops=_OPS)
def test_what_is_held_is_the_active_tier_and_matches_the_store(ops: list[tuple[str, int]]) -> None:
    mem = memory()
    clock = mem.clock
    assert isinstance(clock, ManualClock)
    ns = mem.default_namespace
    try:
        ids = [r.id for r in mem.remember_many([f"note {i} about the shed" for i in range(4)])]
        for op, arg in ops:
            live = [m for m in ids if m in mem._space(ns).state.index]
            pick = live[arg % len(live)] if live else None
            if op == "write":
                ids += [
                    r.id
                    for r in mem.remember_many([f"fact {len(ids)} {j}" for j in range(arg + 1)])
                ]
            elif op == "edit" and pick:
                mem.edit(pick, f"edited text {arg} of the shed")
            elif op == "meta" and pick:
                mem.edit(pick, metadata={"n": arg})
            elif op == "forget" and pick:
                mem.forget(pick)
            elif op == "age":
                clock.advance(arg * DAY)
                mem.maintain()
            elif op == "recall":
                mem.recall(f"fact {arg} shed", k=3, deep=True)
            elif op == "unload":
                mem.unload()
            mem._lock.settle()  # a recall's promotions are applied after it returns
            _check_coherent(mem, ns)
    finally:
        mem.close()
