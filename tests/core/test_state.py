"""Activation state: the columnar arrays and their SQLite persistence and journal."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from oblivion_core import state
from oblivion_core.state import SCHEMA_VERSION, NamespaceState, StateDB

from ._reads import count_reads

ops = st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=80)


def _values(x: float) -> dict[str, float]:
    return {"importance": x, "a_ref": x, "d_ref": x, "tier": 0}


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
        db.insert(
            conn,
            st_,
            rows,
            {f"m{k}": f"text {k}" for k in range(3)},
            {"m1": {"x": 1}},
            np.eye(3, 4, dtype=np.float32),
        )
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
    assert db.vectors("ns", ["m2", "nope"])["m2"].tolist() == [0.0, 0.0, 1.0, 0.0]
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
        db.insert(conn, st_, [0], {"m": "t"}, {}, np.ones((1, 4), dtype=np.float32))
    db.close()
    db = StateDB(tmp_path)
    assert db.next_seq() == 2
    db.close()


def test_the_next_number_is_read_off_an_index(tmp_path: Path) -> None:
    """A store's next insertion number is read without reading every memory (the scan
    took 40 ms at 100k memories when every store opens): counted in SQLite's virtual
    machine steps, which grow with the rows a statement reads."""
    steps = []
    for n in (100, 5_000):
        (tmp_path / str(n)).mkdir()
        db = StateDB(tmp_path / str(n))
        st_ = NamespaceState("ns")
        rows = [st_.append(f"m{k}", "fact", _values(0.1), k + 1) for k in range(n)]
        with db.transaction() as conn:
            db.add_namespace("ns", conn)
            texts = {f"m{k}": "t" for k in range(n)}
            db.insert(conn, st_, rows, texts, {}, np.ones((n, 2), dtype=np.float32))
        count = 0

        def tick() -> int:
            nonlocal count
            count += 1
            return 0

        db.conn.set_progress_handler(tick, 10)
        assert db.next_seq() == n + 1
        db.conn.set_progress_handler(None, 10)
        steps.append(count)
        db.close()
    assert steps[1] <= steps[0] + 2, steps  # a scan: one step of 10 or more per memory


def _store_three(tmp_path: Path) -> tuple[StateDB, NamespaceState]:
    db = StateDB(tmp_path)
    st_ = NamespaceState("ns")
    rows = [st_.append(f"m{k}", "fact", _values(0.1), k + 1) for k in range(3)]
    with db.transaction() as conn:
        db.add_namespace("ns", conn)
        db.insert(conn, st_, rows, {f"m{k}": "t" for k in range(3)}, {}, np.ones((3, 2)))
    return db, st_


def _a_ref_on_disk(tmp_path: Path) -> list[float]:
    db = StateDB(tmp_path)
    try:
        return [float(x) for x in db.load("ns").col("a_ref")]
    finally:
        db.close()


def test_deferred_batches_are_written_in_the_background(tmp_path: Path) -> None:
    """Once the window passes, queued updates go to a background writer; later values
    and journal entries all reach the disk, in order."""
    db, st_ = _store_three(tmp_path)
    db.DEFER_SECONDS = 0.0
    for step, value in enumerate([0.2, 0.3, 0.4]):
        st_.col("a_ref")[step] = value
        db.defer(st_, [f"m{step}"], float(step), [(f"m{step}", "recall", 0.1, value, {})])
    assert db._writer is not None  # a batch went to the background
    db.close()
    assert _a_ref_on_disk(tmp_path) == pytest.approx([0.2, 0.3, 0.4])
    db = StateDB(tmp_path)
    try:
        assert [e.after for e in db.events("ns") if e.kind == "recall"] == [0.2, 0.3, 0.4]
    finally:
        db.close()


def test_a_batch_larger_than_a_write_chunk_reaches_the_disk_whole(tmp_path: Path) -> None:
    """The writer thread writes a batch in chunks (to let go of the GIL between them):
    every row update and every journal entry of a batch several chunks long is written,
    in order, and a failing chunk rolls the whole batch back."""
    db = StateDB(tmp_path)
    st_ = NamespaceState("ns")
    n = 3 * state._WRITE_CHUNK + 5
    rows = [st_.append(f"m{k}", "fact", _values(0.1), k + 1) for k in range(n)]
    with db.transaction() as conn:
        db.add_namespace("ns", conn)
        db.insert(conn, st_, rows, {f"m{k}": "t" for k in range(n)}, {}, np.ones((n, 2)))
    st_.col("a_ref")[:] = np.linspace(0.2, 0.9, n)
    entries = [(f"m{k}", "recall", 0.1, float(st_.col("a_ref")[k]), {"k": k}) for k in range(n)]
    db.defer(st_, [f"m{k}" for k in range(n)], 1.0, entries)
    batch = db._snapshot()
    assert batch is not None
    broken = (
        batch[0],
        [*batch[1], (2.0, 0.0, "ns", [("m0", "recall", 0.1, 0.2, {"x": {1}})])],
        batch[2],
    )
    with pytest.raises(TypeError):  # a set is not JSON: the last chunk fails
        db._write_apart(broken)
    assert [e for e in db.events("ns") if e.kind == "recall"] == []
    db._write_apart(batch)
    db.close()
    assert _a_ref_on_disk(tmp_path) == pytest.approx(list(np.linspace(0.2, 0.9, n)))
    db = StateDB(tmp_path)
    try:
        got = [e.detail["k"] for e in db.events("ns") if e.kind == "recall"]
        assert got == list(range(n))
    finally:
        db.close()


def test_a_failed_background_batch_is_written_by_the_next_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A background write that fails is not lost: the next transaction writes it."""
    db, st_ = _store_three(tmp_path)
    db.DEFER_SECONDS = 0.0

    def refuse(batch: object) -> None:
        raise OSError("disk hiccup")

    monkeypatch.setattr(db, "_write_apart", refuse)
    st_.col("a_ref")[0] = 0.7
    db.defer(st_, ["m0"], 0.0, [("m0", "recall", 0.1, 0.7, {})])
    st_.col("a_ref")[1] = 0.8
    db.defer(st_, ["m1"], 1.0, [("m1", "recall", 0.1, 0.8, {})])
    assert db._inflight is not None
    with pytest.raises(OSError):
        db._inflight.result()
    monkeypatch.undo()
    with db.transaction() as conn:
        db.set_meta("k", 1, conn)
    db.close()
    assert _a_ref_on_disk(tmp_path)[:2] == pytest.approx([0.7, 0.8])


def test_a_rolled_back_transaction_keeps_deferred_updates(tmp_path: Path) -> None:
    """Queued updates written inside a transaction that rolls back stay queued."""
    db, st_ = _store_three(tmp_path)
    st_.col("a_ref")[2] = 0.9
    db.defer(st_, ["m2"], 0.0, [])
    with pytest.raises(RuntimeError), db.transaction():
        raise RuntimeError("boom")
    db.close()
    assert _a_ref_on_disk(tmp_path)[2] == pytest.approx(0.9)


def test_cached_contents_follow_every_change(tmp_path: Path) -> None:
    """Texts and metadata are served from a cache after the first read; a text edit, a
    metadata change, a delete and a dropped namespace each show at once."""
    db, _ = _store_three(tmp_path)
    try:
        assert db.contents("ns", ["m0", "m1"]) == {"m0": ("t", {}), "m1": ("t", {})}
        with db.transaction() as conn:
            db.set_text(conn, "ns", "m0", "new text", np.ones(2, dtype=np.float32), 2)
            db.set_metadata(conn, "ns", "m1", {"source": "chat"})
        assert db.contents("ns", ["m0", "m1"]) == {
            "m0": ("new text", {}),
            "m1": ("t", {"source": "chat"}),
        }
        assert db.texts("ns", ["m0"]) == {"m0": "new text"}
        with db.transaction() as conn:
            db.delete(conn, "ns", ["m2"])
        assert db.contents("ns", ["m2"]) == {}
        with db.transaction() as conn:
            db.drop_namespace("ns", conn)
        assert db.contents("ns", ["m0", "m1"]) == {}
    finally:
        db.close()


def test_cached_metadata_is_a_fresh_dict_each_time(tmp_path: Path) -> None:
    """Changing the metadata a read returned does not change what the next read returns."""
    db, _ = _store_three(tmp_path)
    try:
        with db.transaction() as conn:
            db.set_metadata(conn, "ns", "m0", {"tags": ["a"]})
        first = db.contents("ns", ["m0"])["m0"][1]
        first["tags"].append("b")
        first["x"] = 1
        assert db.contents("ns", ["m0"])["m0"][1] == {"tags": ["a"]}
        assert db.metadatas("ns", ["m0"]) == {"m0": {"tags": ["a"]}}
    finally:
        db.close()


def test_the_contents_cache_stays_within_its_bound(tmp_path: Path) -> None:
    """The least recently read entries leave first; evicted ones are read again."""
    db, _ = _store_three(tmp_path)
    try:
        db.CONTENTS_CACHE = 2
        db.texts("ns", ["m0"])
        db.texts("ns", ["m1"])
        db.texts("ns", ["m0"])  # m0 is now the most recent
        db.texts("ns", ["m2"])
        assert set(db._contents) == {("ns", "m0"), ("ns", "m2")}
        assert db.texts("ns", ["m1", "m2"]) == {"m1": "t", "m2": "t"}
        assert len(db._contents) == 2
    finally:
        db.close()


def test_held_contents_stay_out_of_the_lru_until_released(tmp_path: Path) -> None:
    """The active tier's entries are not pushed out by other reads; released, they go
    back to the LRU as its newest."""
    db, _ = _store_three(tmp_path)
    try:
        db.CONTENTS_CACHE = 1
        reads = count_reads(db)
        db.hold("ns", ["m0"])
        assert db.texts("ns", ["m0"]) == {"m0": "t"} and reads == [["m0"]]
        db.texts("ns", ["m1"])
        db.texts("ns", ["m2"])  # the LRU holds one: m1 leaves, m0 is held
        assert db.texts("ns", ["m0"]) == {"m0": "t"} and reads == [["m0"], ["m1"], ["m2"]]
        assert set(db._contents) == {("ns", "m2")}
        db.release("ns", ["m0"])
        assert set(db._contents) == {("ns", "m0")} and not db._held  # the newest, alone
        db.hold("ns", ["m0", "m1"])  # m0 moves over from the LRU, m1 is not read yet
        assert db._held == {"ns": {"m0": ("t", "{}"), "m1": None}}  # by namespace
        assert db.read_held("ns") == 1 and reads[-1] == ["m1"]
        assert db.read_held("ns") == 0
        db.release("ns")  # every one of the namespace
        assert not db._held and len(db._contents) == 1
    finally:
        db.close()


def test_a_held_entry_changed_is_read_again(tmp_path: Path) -> None:
    """An edit of a held memory's text or metadata is what the next read returns; a
    deleted one is no longer held; an unloaded namespace holds nothing."""
    db, _ = _store_three(tmp_path)
    try:
        db.hold("ns", ["m0", "m1", "m2"])
        db.read_held("ns")
        with db.transaction() as conn:
            db.set_text(conn, "ns", "m0", "new text", np.ones(2), 3)
            db.set_metadata(conn, "ns", "m1", {"tag": "x"})
        assert db._held["ns"]["m0"] is None  # still held, read again when asked
        assert db.contents("ns", ["m0", "m1"]) == {
            "m0": ("new text", {}),
            "m1": ("t", {"tag": "x"}),
        }
        assert db._held["ns"]["m0"] == ("new text", "{}")
        with db.transaction() as conn:
            db.delete(conn, "ns", ["m2"])
        db.release("ns", ["m2"])  # as the engine's tier hook does for a deleted memory
        assert "m2" not in db._held["ns"] and ("ns", "m2") not in db._contents
        db.forget_cached("ns")
        assert not db._held and not db._contents
    finally:
        db.close()


@given(
    values=st.lists(
        st.tuples(st.floats(0, 1), st.integers(0, 50), st.booleans(), st.integers(0, 2)),
        min_size=1,
        max_size=20,
    ),
    picks=st.lists(st.integers(0, 19), max_size=20),
    tokens=st.lists(st.integers(0, 9), min_size=20, max_size=20),
    keep=st.booleans(),
)
def test_row_values_match_the_columns_one_by_one(
    values: list[tuple[float, int, bool, int]], picks: list[int], tokens: list[int], keep: bool
) -> None:
    """The column-at-a-time parameters equal a plain per-row read of every column; token
    counts (held as count + 1) are written as counts, uncounted ones and all of them
    without ``keep_tokens`` as NULL."""
    from oblivion_core.state import _NUMERIC_COLUMNS, _row_values

    st_ = NamespaceState("ns")
    for k, (a, count, inval, tier) in enumerate(values):
        st_.append(f"m{k}", f"c{k % 3}", {"a_ref": a, "access_count": count, "tier": tier}, k)
        st_.col("invalidated")[k] = inval
        st_.col("tokens")[k] = tokens[k]
    st_.superseded_by["m0"] = "m1"
    rows = [p for p in picks if p < len(values)]
    got = _row_values(st_, rows, keep)
    assert len(got) == len(rows)
    for row, i in zip(got, rows, strict=True):
        expected = [st_.col(name)[i].item() for name in _NUMERIC_COLUMNS]
        expected[-1] = int(expected[-1])
        assert list(row[: len(_NUMERIC_COLUMNS)]) == expected
        assert type(row[_NUMERIC_COLUMNS.index("access_count")]) is int
        assert row[len(_NUMERIC_COLUMNS) :] == (
            st_.superseded_by.get(f"m{i}"),
            f"c{i % 3}",
            tokens[i] - 1 if keep and tokens[i] > 0 else None,
            "ns",
            f"m{i}",
        )


def test_the_journal_key_is_the_same_in_every_process() -> None:
    """history() finds a memory's journal by memory_key, which is stored on disk: it must
    not depend on the process (unlike Python's hash() of a str)."""
    import os
    import subprocess
    import sys

    code = "from oblivion_core.state import memory_key; print(memory_key('ns', 'm-1'))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    assert outs == {str(state.memory_key("ns", "m-1"))}
    assert state.memory_key("ns", "m-1") != state.memory_key("ns2", "m-1")


@given(
    ops=st.lists(st.tuples(st.booleans(), st.integers(0, 30)), max_size=60),
    probe=st.integers(0, 200),
)
def test_adjacent_finds_the_namespaces_own_neighbours(
    ops: list[tuple[bool, int]], probe: int
) -> None:
    """``seqs`` stays the sorted numbers of the live memories through appends (numbers
    grow, with gaps: other namespaces' writes) and deletes; ``adjacent`` gives the next
    and previous of them, however far apart."""
    st_ = NamespaceState("ns")
    seq = 0
    for add, gap in ops:
        if add or not st_.ids:
            seq += 1 + gap
            st_.append(f"m{seq}", "fact", {}, seq)
            if gap % 7 == 0:  # a failed write: removed, and its number used again
                st_.remove(f"m{seq}")
                st_.append(f"m{seq}", "fact", {}, seq)
        else:
            st_.remove(st_.ids[gap % len(st_.ids)])
    live = sorted(st_.by_seq)
    assert [q for q in st_.seqs if q in st_.by_seq] == live  # deleted ones may linger
    assert len(set(st_.seqs)) == len(st_.seqs)
    assert st_.seqs == sorted(st_.seqs) and len(st_.seqs) <= 1.5 * len(live) + 1
    for s in [*live, probe]:
        after = [x for x in live if x > s]
        before = [x for x in live if x < s]
        assert st_.adjacent(s) == (
            st_.by_seq[after[0]] if after else None,
            st_.by_seq[before[-1]] if before else None,
        )


def test_adjacent_reads_only_the_numbers_next_to_it() -> None:
    """``adjacent`` looks at the numbers beside ``seq``, not at every number before it:
    it stepped over the first k numbers one by one (``itertools.islice``), 1.4 ms of each
    recall at 100k memories. Counted in numbers read (bisection included), not seconds;
    ``skip`` is passed over."""

    class Counted(list[int]):
        reads = 0

        def __iter__(self):  # type: ignore[no-untyped-def]
            for x in super().__iter__():
                Counted.reads += 1
                yield x

        def __getitem__(self, k):  # type: ignore[no-untyped-def]
            Counted.reads += 1
            return super().__getitem__(k)

    st_ = NamespaceState("ns")
    for seq in range(1, 10_001):
        st_.append(f"m{seq}", "fact", {}, seq)
    st_.seqs = Counted(st_.seqs)
    assert st_.adjacent(9_000) == ("m9001", "m8999")
    assert st_.adjacent(9_000, skip={"m9001", "m8999"}) == ("m9002", "m8998")
    assert Counted.reads <= 100  # four bisections (14 reads each) and the few beside


def test_deleting_a_memory_reads_its_links_only() -> None:
    """Each deleted memory's links were found by reading every link of its namespace
    (nothing indexed a link's second end): clear() was quadratic, 2.4 s at 4,000
    memories. Counted in SQLite VM steps, not seconds: forgetting a memory with two
    links costs the same whatever the namespace's other links."""
    from oblivion_core.testing import memory

    steps: dict[int, int] = {}
    for others in (200, 2000):
        mem = memory()
        ids = [f"m{i:05d}" for i in range(others)]
        mem.remember_many([f"memory {i}" for i in range(others)], ids=ids)
        mem.remember("the one to forget", id="z")  # "z" sorts last: the second end, b
        for i in range(others):
            mem.link(ids[i], ids[(i * 7 + 1) % others], 0.5)
        mem.link(ids[0], "z", 0.5)
        mem.link(ids[1], "z", 0.5)
        count = [0]

        def step(count: list[int] = count) -> int:
            count[0] += 1
            return 0

        mem._db.conn.set_progress_handler(step, 1)
        mem.forget("z")
        mem._db.conn.set_progress_handler(None, 1)
        assert "z" not in mem.links(ids[0]) and "z" not in mem.links(ids[1])
        steps[others] = count[0]
        mem.close()
    assert steps[2000] < 1.5 * steps[200], steps


def _same_state(a: NamespaceState, b: NamespaceState) -> None:
    assert a.n == b.n
    for name in a.cols:
        assert np.array_equal(a.col(name), b.col(name)), name
        assert a.cols[name].dtype == b.cols[name].dtype, name
    assert (a.ids, a.index, a.by_seq, a.seqs) == (b.ids, b.index, b.by_seq, b.seqs)
    assert (a.vocab, a.superseded_by) == (b.vocab, b.superseded_by)


# a value as SQLite may hand it back for a REAL or INTEGER column: what Oblivion writes,
# and what a hand edit can leave (a number as text, an integer in a REAL column)
_CELL = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-5, 10**6),
    st.sampled_from(["0.5", "7", "abc", None, b"\x00"]),
)


@settings(max_examples=80, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["fact", "task", "chat"]), st.floats(0, 1), st.integers(0, 2)),
        min_size=1,
        max_size=12,
    ),
    edits=st.lists(
        st.tuples(
            st.integers(0, 11),
            st.sampled_from(["a_ref", "importance", "access_count", "tier", "tokens", "seq"]),
            _CELL,
        ),
        max_size=3,
    ),
    successors=st.lists(st.integers(0, 11), max_size=3),
    scan=st.booleans(),
    keep=st.booleans(),
)
# two rows given one number by hand: SQLite's ORDER BY seq put them in id order ("m10"
# before "m2"), the scan's sort in table order; both read them in table order now
@example(
    rows=[("fact", 0.0, 0)] * 11,
    edits=[(2, "seq", 0.0), (10, "seq", 0.0)],
    successors=[],
    scan=True,
    keep=True,
)
@example(
    rows=[("fact", 0.0, 0)] * 11,
    edits=[(2, "seq", 0.0), (10, "seq", 0.0)],
    successors=[],
    scan=False,
    keep=True,
)
def test_a_load_reads_the_columns_as_row_by_row(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str, float, int]],
    edits: list[tuple[int, str, Any]],
    successors: list[int],
    scan: bool,
    keep: bool,
) -> None:
    """Loading a namespace a column at a time (and, past ``_SCAN_ROWS``, by a scan of the
    table) gives the state reading it row by row gives, or the same error: whatever the
    rows hold, hand-edited values included."""
    db = StateDB(tmp_path_factory.mktemp("db"))
    db.keep_tokens = keep
    written = NamespaceState("ns")
    other = NamespaceState("other")  # rows of another namespace in the same tables
    for k, (cat, a, tier) in enumerate(rows):
        written.append(f"m{k}", cat, {"a_ref": a, "tier": tier, "tokens": k}, 10 + 2 * k)
        other.append(f"m{k}", cat, {"a_ref": 1 - a}, 11 + 2 * k)
    for k in successors:
        if k < written.n:
            written.superseded_by[f"m{k}"] = f"m{(k + 1) % written.n}"
    with db.transaction() as conn:
        for space in (written, other):
            db.add_namespace(space.namespace, conn)
            db.insert(
                conn,
                space,
                list(range(space.n)),
                {m: m for m in space.ids},
                {},
                np.ones((space.n, 4), dtype=np.float32),
            )
        for k, column, value in edits:
            if value is None and column != "tokens":  # NOT NULL: SQLite refuses it
                continue
            conn.execute(
                f"UPDATE memories SET {column}=? WHERE namespace='ns' AND id=?", (value, f"m{k}")
            )

    def load(fill: bool) -> NamespaceState | str:
        try:
            if fill:
                return db.load("ns")
            plain = NamespaceState("ns")
            plain.clock = db.parsed("clock:ns", state.DecayClock.from_json)
            found = db.conn.execute(
                "SELECT id, category, importance, confidence, created_at, last_accessed, "
                "a_ref, d_ref, stability, relevance, access_count, tier, invalidated, "
                "superseded_by, seq, tokens FROM memories WHERE namespace=? ORDER BY seq, rowid",
                ("ns",),
            ).fetchall()
            db._append_rows(plain, found)
            return plain
        except state.StoreCorruptError as exc:
            return str(exc)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(state, "_SCAN_ROWS", 1 if scan else 10**9)
        got, want = load(True), load(False)
    if isinstance(want, str):
        assert got == want
    else:
        assert isinstance(got, NamespaceState)
        _same_state(got, want)
    db.close()


@pytest.mark.parametrize("scan", [True, False])
def test_reads_by_scan_or_by_key_are_the_same(tmp_path: Path, scan: bool) -> None:
    """A namespace's texts, links and vectors read by a scan of their tables (it holds
    most of their rows) equal those read through the primary key, and no other
    namespace's rows come with them."""
    db = StateDB(tmp_path)
    spaces = {"ns": NamespaceState("ns"), "small": NamespaceState("small")}
    for k in range(30):
        name = "ns" if k % 5 else "small"
        spaces[name].append(f"m{k}", "fact", _values(k / 30), 100 - k)  # seq against rowid
    with db.transaction() as conn:
        for name, space in spaces.items():
            db.add_namespace(name, conn)
            db.insert(
                conn,
                space,
                list(range(space.n)),
                {m: f"text of {m}" for m in space.ids},
                {},
                np.arange(space.n * 4, dtype=np.float32).reshape(space.n, 4),
            )
            db.save_links(
                conn, name, [(a, b, 0.5, "auto") for a, b in itertools.pairwise(space.ids)]
            )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(state, "_SCAN_ROWS", 1 if scan else 10**9)
        assert db._scan("memories", "ns") is scan
        assert db._scan("memories", "small") is False  # a sixth of the rows
        loaded = db.load("ns")
        texts = db.seq_texts("ns")
        links = db.links("ns")
        ids, vectors = db.namespace_vectors("ns", lambda m: m != "m1", loaded.n)
    ns = spaces["ns"]
    assert loaded.ids == sorted(ns.ids, key=lambda m: 100 - int(m[1:]))  # by seq
    assert texts == sorted((100 - int(m[1:]), f"text of {m}") for m in ns.ids)
    assert sorted(links) == sorted((*sorted((a, b)), 0.5) for a, b in itertools.pairwise(ns.ids))
    assert sorted(ids) == sorted(m for m in ns.ids if m != "m1")
    assert vectors is not None
    by_id = dict(zip(ids, vectors.tolist(), strict=True))
    assert by_id == {m: db.vectors("ns", [m])[m].tolist() for m in ids}
    db.close()


@pytest.mark.parametrize(
    ("damage", "mentions"),
    [
        ("x'0000'", "is 2 bytes"),
        ("x'00000000'", "is 4 bytes"),
        ("'text'", "is a str"),
    ],
)
def test_a_namespaces_vectors_read_at_once_name_a_damaged_one(
    tmp_path: Path, damage: str, mentions: str
) -> None:
    """The vectors read in one buffer for an archive copy are those stored; one of
    another size or kind sends the read back row by row, which names that memory."""
    db = StateDB(tmp_path)
    space = NamespaceState("ns")
    for k in range(20):
        space.append(f"m{k}", "fact", _values(k / 20), k + 1)
    stored = np.random.default_rng(5).standard_normal((20, 4)).astype(np.float32)
    with db.transaction() as conn:
        db.add_namespace("ns", conn)
        db.set_meta("dim", 4, conn)  # as the engine's first write sets it
        db.insert(conn, space, list(range(20)), {m: m for m in space.ids}, {}, stored)
    ids, vectors = db.namespace_vectors("ns", lambda m: m != "m2")
    assert vectors is not None and vectors.flags.writeable
    assert dict(zip(ids, vectors.tolist(), strict=True)) == {
        f"m{k}": stored[k].tolist() for k in range(20) if k != 2
    }
    db.conn.execute(f"UPDATE vectors SET vector={damage} WHERE id='m7'")
    with pytest.raises(state.StoreCorruptError, match=rf"memory 'm7'.*{mentions}"):
        db.namespace_vectors("ns", lambda m: True)
    db.close()
