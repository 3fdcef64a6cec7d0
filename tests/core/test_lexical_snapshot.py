"""The BM25 index saved beside the state database (oblivion_core/lexical_snapshot.py):
read back only while no text of its namespace changed, exactly the index it saved, and
never a reason for a store to fail."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion, Policy, lexical
from oblivion_core.lexical import LexicalIndex, _Namespace
from oblivion_core.lexical_snapshot import FORMAT, LexicalSnapshots
from oblivion_core.testing import HashEmbedder, word_count

_WORDS = ["ferry", "harbour", "flight", "lisbon", "dentist", "boiler", "paid", "zoë", "42"]
_DOC = st.lists(st.sampled_from(_WORDS), min_size=0, max_size=8).map(" ".join)
_QUERY = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join)


def _same(a: _Namespace, b: _Namespace) -> None:
    """Every field a search reads is equal."""
    assert (a.size, a.alive, a.total_length, a.slot_of) == (
        b.size,
        b.alive,
        b.total_length,
        b.slot_of,
    )
    assert np.array_equal(a.seqs[: a.size], b.seqs[: b.size])
    assert np.array_equal(a.lengths[: a.size], b.lengths[: b.size])
    assert list(a.postings) == list(b.postings)
    for term, p in a.postings.items():
        q = b.postings[term]
        for field in ("slots", "tf", "dl"):
            got, want = getattr(p, field)[: p.n], getattr(q, field)[: q.n]
            assert got.dtype == want.dtype and np.array_equal(got, want), (term, field)


@settings(max_examples=80, deadline=None)
@given(
    docs=st.lists(_DOC, min_size=0, max_size=30),
    gone=st.sets(st.integers(1, 30), max_size=12),
    later=st.lists(_DOC, max_size=4),
    queries=st.lists(_QUERY, min_size=1, max_size=3),
)
def test_arrays_give_back_the_index_they_were_taken_from(
    docs: list[str], gone: set[int], later: list[str], queries: list[str]
) -> None:
    """to_arrays() then from_arrays() gives the same index (to_arrays() compacts away
    deleted slots first, which changes no search), searches the same, and takes adds and
    deletes as it would."""
    live = _Namespace()
    if docs:
        live.add(list(range(1, len(docs) + 1)), docs)
    live.delete(sorted(gone))
    if docs:  # an edit: the text's old slot stays behind, deleted, under the same seq
        live.add([1], [docs[-1]])
    before = [live.search(q.split(), 5) for q in queries]
    back = _Namespace.from_arrays(live.to_arrays())
    _same(back, live)
    assert live.alive == live.size  # only live documents are saved
    for q, found in zip(queries, before, strict=True):
        terms = q.split()
        assert back.search(terms, 5) == live.search(terms, 5) == found
    for space in (live, back):  # the views of the read arrays grow into copies
        space.add(list(range(100, 100 + len(later))), later)
        space.delete([1, 100])
    _same(back, live)
    for q in queries:
        assert back.search(q.split(), 5) == live.search(q.split(), 5)


def _arrays() -> dict[str, Any]:
    space = _Namespace()
    space.add([1, 2, 3], ["ferry to lisbon", "the harbour ferry", "boiler paid"])
    return space.to_arrays()


@pytest.mark.parametrize(
    "damage",
    [
        lambda a: a.pop("tf"),
        lambda a: a.update(offsets=a["offsets"][::-1].copy()),
        lambda a: a.update(offsets=a["offsets"][:-1].copy()),
        lambda a: a.update(slots=a["slots"] + 10),
        lambda a: a.update(slots=a["slots"].astype(np.int64)),
        lambda a: a.update(dl=a["dl"][:-1].copy()),
        lambda a: a.update(lengths=np.full(len(a["lengths"]), np.nan)),
        lambda a: a.update(seqs=np.zeros(len(a["seqs"]), dtype=np.int64)),  # live twice
        lambda a: a.update(terms=np.frombuffer(b"ferry\nferry", dtype=np.uint8)),
        lambda a: a.update(seqs=a["seqs"].reshape(1, -1)),
    ],
)
def test_arrays_that_make_no_index_are_refused(damage: Any) -> None:
    arrays = _arrays()
    damage(arrays)
    with pytest.raises(ValueError):
        _Namespace.from_arrays(arrays)


def test_a_file_is_read_only_for_its_namespace_generation_and_format(tmp_path: Path) -> None:
    """A file that is not read (a text changed since, another namespace's, another
    format's) is deleted: it is never read again, and may hold a forgotten text's words
    (a crash after a forget() of a namespace whose index was built)."""
    snaps = LexicalSnapshots(tmp_path / "lexical")
    assert snaps.load("ns", 7) is None  # none saved
    assert snaps.save("ns", 7, _arrays())
    assert snaps.load("other", 7) is None
    got = snaps.load("ns", 7)
    assert got is not None and set(got) == set(_arrays())
    assert snaps.path("ns").exists()
    assert snaps.load("ns", 8) is None  # a text changed since
    assert not snaps.path("ns").exists()
    assert snaps.save("ns", 8, _arrays())
    assert snaps.load("ns", 8) is not None
    # two namespaces whose files would clash by name: the file holds its namespace
    snaps.path("other").write_bytes(snaps.path("ns").read_bytes())
    assert snaps.load("other", 8) is None
    assert not snaps.path("other").exists() and snaps.load("ns", 8) is not None
    # another format (a release whose tokens differ)
    with np.load(snaps.path("ns")) as saved:
        arrays = {k: saved[k] for k in saved.files}
    arrays["header"] = np.array([FORMAT + 1, 8], dtype=np.int64)
    with snaps.path("ns").open("wb") as out:
        np.savez(out, **arrays)
    assert snaps.load("ns", 8) is None
    assert not snaps.path("ns").exists()


def test_what_a_killed_save_left_is_removed_by_the_next_save(tmp_path: Path) -> None:
    snaps = LexicalSnapshots(tmp_path / "lexical")
    snaps.folder.mkdir()
    left = snaps.folder / f"{snaps.path('ns').stem}abc123.tmp"
    left.write_bytes(b"half a file")
    other = snaps.folder / f"{snaps.path('other').stem}abc123.tmp"
    other.write_bytes(b"another namespace's")
    assert snaps.save("ns", 1, _arrays())
    assert not left.exists() and other.exists()
    assert sorted(p.name for p in snaps.folder.iterdir()) == sorted(
        [snaps.path("ns").name, other.name]
    )


def test_a_damaged_file_is_ignored_and_deleted(tmp_path: Path, caplog: Any) -> None:
    snaps = LexicalSnapshots(tmp_path / "lexical")
    assert snaps.save("ns", 1, _arrays())
    data = snaps.path("ns").read_bytes()
    snaps.path("ns").write_bytes(data[: len(data) // 2])  # truncated
    with caplog.at_level(logging.WARNING):
        assert snaps.load("ns", 1) is None
    assert "ignoring the saved BM25 index" in caplog.text
    assert not snaps.path("ns").exists()


def test_saving_where_nothing_can_be_written_warns_and_fails_nothing(
    tmp_path: Path, caplog: Any
) -> None:
    (tmp_path / "lexical").write_text("a file where the folder goes")
    snaps = LexicalSnapshots(tmp_path / "lexical")
    with caplog.at_level(logging.WARNING):
        assert snaps.save("ns", 1, _arrays()) is False
    assert "could not save the BM25 index" in caplog.text
    lex = LexicalIndex(lambda ns: [(1, "ferry to lisbon")], snaps, lambda ns: 1)
    assert lex.search("ns", "ferry", 1)[0] == [1]
    assert lex.save("ns", lambda: 1) is False


def test_an_index_left_half_updated_is_built_again(monkeypatch: Any) -> None:
    """An add that fails midway drops the in-memory index (it would be saved wrong):
    the next search builds it from the stored texts."""
    rows = [(1, "ferry to lisbon")]
    lex = LexicalIndex(lambda ns: rows)
    lex.search("ns", "ferry", 1)
    real_stem = lexical.stem

    def failing(word: str) -> str:
        if word == "harbour":
            raise MemoryError("out of memory in the middle of an add")
        return real_stem(word)

    monkeypatch.setattr(lexical, "stem", failing)
    with pytest.raises(MemoryError):
        lex.add("ns", [2], ["the harbour ferry"])
    monkeypatch.setattr(lexical, "stem", real_stem)
    rows.append((2, "the harbour ferry"))  # committed before the add, as writes do
    assert sorted(lex.search("ns", "ferry", 5)[0]) == [1, 2]
    assert lex.save("ns", lambda: 1) is False  # no snapshots here: nothing to save to


# --------------------------------------------------------------- the real stack


@pytest.fixture(autouse=True)
def _small_namespaces_saved(monkeypatch: Any, request: Any) -> None:
    """The stores below hold a few memories: saved from 4 on (1,024 by default)."""
    if "keeps_no_file" not in request.node.name:
        monkeypatch.setattr(Oblivion, "LEXICAL_SNAPSHOT_DOCUMENTS", 4)


_TEXTS = [
    "My dentist appointment is on Tuesday at 3pm.",
    "I paid 450 pounds for the new boiler.",
    "The ferry to the harbour leaves at 8am.",
    "My flight to Lisbon is on Friday.",
    "Zoë recommended the seafood place near the harbour.",
    "Remember to water the plants on Sunday.",
    "The boiler engineer is called Ravi.",
    "Lisbon hotel booking reference is QX-4471.",
]
_QUERIES = ["when is the dentist", "boiler cost", "harbour ferry", "Lisbon flight", "Zoe"]


def _open(path: Path, embedder: Any, clock: ManualClock) -> Oblivion:
    policy = Policy.template("balanced").replace(active_capacity=4)  # some archived
    return Oblivion(path, embedder=embedder, clock=clock, policy=policy, token_counter=word_count)


class _Answers(list):  # type: ignore[type-arg]
    """Recalls' ids and scores; equal when the ids are and the scores agree within a
    float32 rounding (a reopened archive copy multiplies its rows in another order)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, list) or len(other) != len(self):
            return False
        for mine, theirs in zip(self, other, strict=True):
            if [m for m, _ in mine] != [m for m, _ in theirs]:
                return False
            if any(abs(a - b) > 1e-6 for (_, a), (_, b) in zip(mine, theirs, strict=True)):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]


def _answers(mem: Oblivion) -> _Answers:
    return _Answers(
        [(i.id, i.score) for i in mem.recall(q, k=4, deep=True, feedback=False).items]
        for q in _QUERIES
    )


def _text_reads(mem: Oblivion) -> list[str]:
    reads: list[str] = []
    load = mem._lex._load

    def spy(ns: str) -> Any:
        reads.append(ns)
        return load(ns)

    mem._lex._load = spy
    return reads


def test_a_reopened_store_reads_its_saved_index_until_a_text_changes(
    tmp_path: Path, real_embedder: Any
) -> None:
    """MiniLM, Chroma on disk: the index saved at close is read back (no texts read)
    and recalls rank as with an index built from the texts; recalls alone keep it
    valid; a write, an edit, a forget or a hand edit of the database while closed
    makes the next open build it from the texts, which then say what they say now."""
    path = tmp_path / "store"
    clock = ManualClock()
    with _open(path, real_embedder, clock) as mem:
        mem.remember_many(_TEXTS)
        clock.advance(86_400)
        mem.maintain()
        for q in _QUERIES:  # feedback: activation writes, which change no text
            mem.recall(q, k=3)
        built = _answers(mem)
    files = list((path / "lexical").glob("*.npz"))
    assert len(files) == 1

    with _open(path, real_embedder, clock) as mem:
        reads = _text_reads(mem)
        assert _answers(mem) == built
        assert reads == []  # read back, not built
        mem.recall("harbour", k=2)  # feedback again
    with _open(path, real_embedder, clock) as mem:
        reads = _text_reads(mem)
        _answers(mem)  # (boosted by the feedback of the session before)
        assert reads == []  # still valid: recalls change no text
        new = mem.remember("The harbour ferry now leaves at 9am.")
    with _open(path, real_embedder, clock) as mem:  # saved again at close, with it
        reads = _text_reads(mem)
        top = mem.recall("harbour ferry 9am", k=1, deep=True, feedback=False).items[0]
        assert top.id == new.id and reads == []
        mem.edit(new.id, text="The harbour ferry now leaves at 10am.")
        mem.forget(mem.records()[0].id)
        after = _answers(mem)
    with _open(path, real_embedder, clock) as mem:
        reads = _text_reads(mem)
        assert _answers(mem) == after and reads == []

    # by hand, while closed: SQLite's trigger draws a new number
    with sqlite3.connect(path / "oblivion.sqlite3") as conn:
        conn.execute("UPDATE memories SET text='Zanzibar trip notes' WHERE id=?", (new.id,))
    conn.close()
    with _open(path, real_embedder, clock) as mem:
        reads = _text_reads(mem)
        hits = mem.recall("Zanzibar", k=1, deep=True, feedback=False).items
        assert reads == ["default"]  # the saved index was not taken
        assert hits and hits[0].id == new.id


_FIRST_WRITES = {
    "remember": lambda mem: mem.remember("The harbour ferry now leaves at 9am.", id="new"),
    "remember_many": lambda mem: mem.remember_many(
        ["Ferry tickets cost 12 euros.", "Rain."], ids=["new1", "new2"]
    ),
    "edit": lambda mem: mem.edit(mem.records()[0].id, text="The dentist moved to Monday."),
    "forget": lambda mem: mem.forget(mem.records()[1].id),
}


@pytest.mark.parametrize("write", list(_FIRST_WRITES))
def test_a_write_first_after_reopening_keeps_the_saved_index(
    tmp_path: Path, real_embedder: Any, write: str
) -> None:
    """A reopened namespace whose first call is a write (an agent storing the user's
    turn before recalling for it) reads its saved index before the write changes the
    namespace's number, and indexes the write on top: the next recall reads no text and
    ranks as a store that built its index from the texts."""
    path, twin = tmp_path / "store", tmp_path / "twin"
    clock = ManualClock()
    for where in (path, twin):
        with _open(where, real_embedder, clock) as mem:
            mem.remember_many(_TEXTS, ids=[f"m{i}" for i in range(len(_TEXTS))])
            mem.recall("ferry", k=1, feedback=False)  # built: saved at close
    (twin / "lexical").joinpath(LexicalSnapshots(twin / "lexical").path("default").name).unlink()
    answers = []
    for where in (path, twin):  # the twin builds its index from the texts
        with _open(where, real_embedder, clock) as mem:
            reads = _text_reads(mem)
            _FIRST_WRITES[write](mem)
            answers.append(_answers(mem))
            assert reads == ([] if where == path else ["default"])
    assert answers[0] == answers[1]
    with _open(path, real_embedder, clock) as mem:  # saved again at close, with the write
        reads = _text_reads(mem)
        assert _answers(mem) == answers[0] and reads == []


def test_writes_look_for_a_saved_index_once_per_load(tmp_path: Path) -> None:
    """A namespace without a file (never searched, or small) costs its writes one lookup
    per load, not one each; after an unload the next write looks again."""
    path = tmp_path / "store"
    clock = ManualClock()
    with _open(path, HashEmbedder(), clock) as mem:
        mem.remember_many(_TEXTS, supersede=False)  # never searched: no file at close
    assert not list((path / "lexical").glob("*.npz"))
    with _open(path, HashEmbedder(), clock) as mem:
        looked: list[str] = []
        load = mem._lex._snapshots.load

        def spy(namespace: str, generation: int) -> Any:
            looked.append(namespace)
            return load(namespace, generation)

        mem._lex._snapshots.load = spy  # type: ignore[method-assign,union-attr]
        for text in ("The boiler was fixed.", "The ferry was late.", "Lisbon was sunny."):
            mem.remember(text)
        mem.forget(mem.records()[0].id)
        assert looked == ["default"]
        mem.unload()
        mem.remember("Back again.")
        assert looked == ["default", "default"]
        assert [i.text for i in mem.recall("boiler fixed", k=1, deep=True).items] == [
            "The boiler was fixed."
        ]


def test_without_the_saved_index_the_answers_are_the_same(
    tmp_path: Path, real_embedder: Any
) -> None:
    """A deleted, damaged or foreign file only costs the build."""
    path = tmp_path / "store"
    clock = ManualClock()
    with _open(path, real_embedder, clock) as mem:
        mem.remember_many(_TEXTS)
        mem.remember("Unrelated note in another namespace.", namespace="other")
        clock.advance(86_400)
        mem.maintain()
    with _open(path, real_embedder, clock) as mem:
        first = _answers(mem)
    (file,) = [
        f
        for f in (path / "lexical").glob("*.npz")
        if f.name.startswith(LexicalSnapshots(path / "lexical").path("default").stem)
    ]
    file.write_bytes(b"not a zip file at all")
    with _open(path, real_embedder, clock) as mem:
        reads = _text_reads(mem)
        assert _answers(mem) == first
        assert reads == ["default"]


def test_unload_saves_the_index_and_load_reads_it_back(tmp_path: Path, real_embedder: Any) -> None:
    path = tmp_path / "store"
    clock = ManualClock()
    with _open(path, real_embedder, clock) as mem:
        mem.remember_many(_TEXTS, namespace="bo")
        mem.remember_many(_TEXTS[:3], namespace="al")
        before = mem.recall("harbour ferry", k=3, namespace="bo", feedback=False).ids
        assert mem.unload(namespace="bo") is True
        reads = _text_reads(mem)
        assert mem.load(namespace="bo") is False
        assert reads == []
        assert mem.recall("harbour ferry", k=3, namespace="bo", feedback=False).ids == before
        mem.remember("A new harbour ferry timetable.", namespace="bo")
        assert mem.unload(namespace="bo") is True  # saved again, with the new text
        mem.load(namespace="bo")
        assert reads == []
        assert len(mem.recall("harbour ferry timetable", k=5, namespace="bo").ids) >= 1


def test_an_unwritable_snapshot_folder_does_not_stop_close(
    tmp_path: Path, real_embedder: Any, caplog: Any
) -> None:
    path = tmp_path / "store"
    clock = ManualClock()
    mem = _open(path, real_embedder, clock)
    mem.remember_many(_TEXTS)
    mem.recall("ferry", k=2)
    (path / "lexical").write_text("in the way")
    with caplog.at_level(logging.WARNING):
        mem.close()
    assert "could not save the BM25 index" in caplog.text
    with _open(path, real_embedder, clock) as again:
        assert len(again.records()) == len(_TEXTS)
        assert again.recall("ferry", k=1).items


def test_a_small_namespace_keeps_no_file(tmp_path: Path, real_embedder: Any) -> None:
    """Below LEXICAL_SNAPSHOT_DOCUMENTS nothing is saved, and the file of a namespace
    that shrank below it is deleted."""
    path = tmp_path / "store"
    clock = ManualClock()
    with _open(path, real_embedder, clock) as mem:
        mem.remember_many(_TEXTS[:3])
        mem.recall("ferry", k=1)
    assert not list((path / "lexical").glob("*.npz"))
    mem = _open(path, real_embedder, clock)
    mem.LEXICAL_SNAPSHOT_DOCUMENTS = 2  # (read as the engine opens: this one saves)
    mem._lex.min_documents = 2
    mem.recall("ferry", k=1)
    mem.close()
    assert len(list((path / "lexical").glob("*.npz"))) == 1
    with _open(path, real_embedder, clock) as mem:  # 1,024 again
        reads = _text_reads(mem)
        mem.recall("ferry", k=1)
        assert reads == []  # read back: still valid
        mem.clear()
        mem.remember("The only note left.")
        assert mem.recall("note", k=1).items
    assert not list((path / "lexical").glob("*.npz"))


def test_a_store_from_before_the_table_gets_its_number_only_when_an_index_is_saved(
    tmp_path: Path, real_embedder: Any
) -> None:
    """Closing writes nothing for a namespace whose index was not built (``oblivion
    stats`` reads a store); a store whose namespace has no number yet (written before
    the triggers) gets one when its index is first saved, and reads it back after."""
    path = tmp_path / "store"
    clock = ManualClock()
    with _open(path, real_embedder, clock) as mem:
        mem.remember_many(_TEXTS)

    def numbers() -> list[Any]:
        with sqlite3.connect(path / "oblivion.sqlite3") as conn:
            rows = conn.execute("SELECT * FROM lexical_gen").fetchall()
        conn.close()
        return rows

    with sqlite3.connect(path / "oblivion.sqlite3") as conn:
        conn.execute("DELETE FROM lexical_gen")  # as a store from before the table
    conn.close()
    for saved in (path / "lexical").glob("*.npz"):  # (the first session's writes built it)
        saved.unlink()
    with _open(path, real_embedder, clock) as mem:
        assert len(mem.records()) == len(_TEXTS)  # no BM25 search
    assert numbers() == [] and not list((path / "lexical").glob("*.npz"))
    with _open(path, real_embedder, clock) as mem:
        built = _answers(mem)
    assert len(numbers()) == 1 and len(list((path / "lexical").glob("*.npz"))) == 1
    with _open(path, real_embedder, clock) as mem:
        reads = _text_reads(mem)
        assert _answers(mem) == built and reads == []


def test_writes_committed_while_a_saved_index_is_read_are_all_indexed(
    tmp_path: Path,
) -> None:
    """Writes that commit after the first search read the namespace's number, while it
    reads the saved index, are indexed once it has (their index update waits for it):
    the index then searches as one built from the stored texts."""
    path = tmp_path / "store"
    clock = ManualClock()
    words = ["ferry", "harbour", "lisbon", "boiler", "dentist", "garden", "invoice"]

    def open_() -> Oblivion:
        return Oblivion(path, embedder=HashEmbedder(), clock=clock, token_counter=word_count)

    with open_() as mem:
        mem.remember_many([f"{words[k % 7]} note {k} {words[(3 * k) % 7]}" for k in range(60)])
        mem.recall("ferry", k=1)  # built, saved at close
    with open_() as mem:
        reads = _text_reads(mem)
        number_read = threading.Event()
        written = threading.Event()
        read_number = mem._lex._generation
        assert read_number is not None

        def slow_number(ns: str) -> int | None:
            number = read_number(ns)
            number_read.set()
            written.wait(10)  # the writes commit now, before the saved index is read
            return number

        mem._lex._generation = slow_number
        errors: list[BaseException] = []

        def write(t: int) -> None:
            number_read.wait(10)
            try:
                for j in range(3):
                    mem.remember(f"{words[(t + j) % 7]} racing {t} {j}")
            except BaseException as exc:
                errors.append(exc)

        writers = [threading.Thread(target=write, args=(t,)) for t in range(3)]
        for thread in writers:
            thread.start()
        # the writers commit, then wait for the index (held by the search below)
        threading.Timer(0.3, written.set).start()
        mem.recall("ferry note", k=3)
        for thread in writers:
            thread.join()
        assert errors == [] and reads == []  # read back, not built
        mem._lex._generation = read_number
        live = mem._lex._spaces["default"]
        fresh = _Namespace()
        seqs, texts = zip(*mem._db.seq_texts("default"), strict=True)
        fresh.add(list(seqs), list(texts))
        assert len(fresh.slot_of) == 60 + 9
        assert sorted(live.slot_of) == sorted(fresh.slot_of)
        assert live.total_length == fresh.total_length
        for word in words:
            assert live.search([word, "racing"], 50) == fresh.search([word, "racing"], 50)
