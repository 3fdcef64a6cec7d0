"""Activation state: the columnar arrays and their SQLite persistence and journal."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core.state import SCHEMA_VERSION, NamespaceState, StateDB

ops = st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=80)


def _values(x: float) -> dict[str, float]:
    return {"importance": x, "a_ref": x, "t_ref": x, "tier": 0}


@given(ops=ops)
def test_rows_stay_consistent_through_appends_and_swap_removes(ops: list[tuple[bool, int]]) -> None:
    """After any appends and deletes, every id maps to its own row and values."""
    st_ = NamespaceState("ns")
    model: dict[str, float] = {}
    seq = 0
    for add, k in ops:
        mid = f"m{k}"
        if add and mid not in model:
            seq += 1
            st_.append(mid, f"cat{k % 3}", _values(k / 100), seq)
            model[mid] = k / 100
        elif not add and mid in model:
            st_.remove(mid)
            del model[mid]
    assert st_.n == len(model)
    assert sorted(st_.ids) == sorted(model)
    for mid, value in model.items():
        i = st_.row(mid)
        assert i is not None
        assert st_.ids[i] == mid
        assert st_.col("a_ref")[i] == value
        assert st_.category(i) == f"cat{int(mid[1:]) % 3}"
        assert st_.by_seq[int(st_.col("seq")[i])] == mid
    assert len(st_.by_seq) == len(model)


def test_columns_grow_past_their_initial_capacity() -> None:
    """Appending more rows than the initial allocation keeps every value."""
    st_ = NamespaceState("ns")
    for k in range(1000):
        st_.append(f"m{k}", "fact", _values(k / 1000), k)
    assert st_.n == 1000
    assert st_.col("a_ref")[999] == pytest.approx(0.999)


def test_state_db_round_trips_rows(tmp_path: Path) -> None:
    """Rows written by insert/save_rows are loaded back identically after reopening."""
    db = StateDB(tmp_path)
    st_ = NamespaceState("ns")
    rows = [st_.append(f"m{k}", "fact", _values(k / 10), k + 1) for k in range(3)]
    with db.transaction() as conn:
        db.add_namespace("ns", conn)
        db.insert(conn, st_, rows, {f"m{k}": f"text {k}" for k in range(3)}, {"m1": {"x": 1}})
    st_.col("a_ref")[2] = 0.123
    with db.transaction() as conn:
        db.save_rows(conn, st_, [2])
    db.close()
    db = StateDB(tmp_path)
    loaded = db.load("ns")
    assert loaded.ids == ["m0", "m1", "m2"]
    assert loaded.col("a_ref").tolist() == pytest.approx([0.0, 0.1, 0.123])
    assert db.texts("ns", ["m1"]) == {"m1": "text 1"}
    assert db.metadatas("ns", ["m1", "m0"]) == {"m1": {"x": 1}, "m0": {}}
    assert db.meta("schema_version") == SCHEMA_VERSION
    db.close()


def test_a_failed_transaction_is_rolled_back() -> None:
    """An exception inside a transaction leaves the database as it was."""
    db = StateDB(None)
    with pytest.raises(RuntimeError), db.transaction() as conn:
        db.set_meta("k", 1, conn)
        raise RuntimeError("boom")
    assert db.meta("k") is None
    db.close()


def test_journal_is_append_only_and_ordered() -> None:
    """Events come back oldest first, per memory or per namespace, and `limit` keeps the
    newest."""
    db = StateDB(None)
    with db.transaction() as conn:
        db.journal(
            conn, 1.0, "ns", [("a", "remember", None, 1.0, {}), ("b", "remember", None, 0.5, {})]
        )
        db.journal(conn, 2.0, "ns", [("a", "recall", 0.9, 1.0, {"relevance": 0.5})])
        db.journal(conn, 2.0, "other", [("a", "remember", None, 1.0, {})])
    assert [e.kind for e in db.events("ns", "a")] == ["remember", "recall"]
    assert [e.memory_id for e in db.events("ns")] == ["a", "b", "a"]
    assert [e.kind for e in db.events("ns", limit=1)] == ["recall"]
    assert db.events("ns", "a")[-1].detail == {"relevance": 0.5}
    db.close()


def test_next_seq_is_monotonic_across_reopen(tmp_path: Path) -> None:
    """Insertion sequence numbers keep growing after a reopen."""
    db = StateDB(tmp_path)
    st_ = NamespaceState("ns")
    st_.append("m", "fact", _values(0.5), db.next_seq())
    with db.transaction() as conn:
        db.insert(conn, st_, [0], {"m": "t"}, {})
    db.close()
    db = StateDB(tmp_path)
    assert db.next_seq() == 2
    db.close()
