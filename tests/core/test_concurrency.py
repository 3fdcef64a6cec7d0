"""One engine shared by many threads (real embedded Chroma and SQLite on disk)."""

from __future__ import annotations

import logging
import random
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oblivion_core import ManualClock, Oblivion, Policy
from oblivion_core.testing import HashEmbedder, word_count

pytestmark = pytest.mark.integration

THREADS = 8
WRITES = 25


def _open(path: Path, clock: ManualClock) -> Oblivion:
    return Oblivion(
        path,
        clock=clock,
        embedder=HashEmbedder(),
        token_counter=word_count,
        policy=Policy.template("balanced").replace(maintain_every=16),
    )


def _state(mem: Oblivion, namespace: str) -> list[tuple[Any, ...]]:
    return [
        (r.id, r.text, r.category, r.access_count, r.activation, r.tier, r.invalidated)
        for r in mem.records(namespace=namespace)
    ]


def _run(worker: Callable[[int], None], threads: int, timeout: float = 300) -> None:
    """Run ``worker(t)`` on ``threads`` threads and wait for them all to finish."""
    started = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for th in started:
        th.start()
    for th in started:
        th.join(timeout=timeout)
    assert not any(th.is_alive() for th in started)


def test_eight_threads_share_one_engine(tmp_path: Path) -> None:
    """Concurrent remember/recall/mark_used/confirm/maintain from 8 threads raise nothing,
    lose nothing, and what SQLite holds equals what the engine held."""
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    errors: list[BaseException] = []
    written: dict[str, tuple[str, str]] = {}
    written_lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        rng = random.Random(t)
        ns = "shared" if t % 2 else f"own-{t}"
        mine: list[str] = []
        try:
            start.wait()
            for w in range(WRITES):
                text = f"thread {t} note {w} about topic {rng.choice('abcdefgh')}"
                rec = mem.remember(text, namespace=ns, importance=rng.random())
                mine.append(rec.id)
                with written_lock:
                    written[rec.id] = (ns, text)
                # every 4th recall searches the archive (its in-memory copy, in step
                # with the tier moves other threads make)
                mem.recall(
                    f"topic {rng.choice('abcdefgh')}", namespace=ns, k=3, deep=w % 4 == 0 or None
                )
                if w % 3 == 0:
                    mem.mark_used([rng.choice(mine)], namespace=ns)
                if w % 5 == 0:
                    mem.confirm(rng.choice(mine), namespace=ns)
                if w % 7 == 0:
                    mem.maintain(namespace=ns)
                if t == 0:
                    clock.advance(3_600.0)
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    _run(worker, THREADS)
    assert errors == []

    assert len(written) == THREADS * WRITES
    namespaces = sorted({ns for ns, _ in written.values()})
    assert sum(mem.count(namespace=ns) for ns in namespaces) == THREADS * WRITES
    for mid, (ns, text) in written.items():
        assert mem.get(mid, namespace=ns).text == text
    for ns in namespaces:
        assert mem.store.count(ns) == mem.count(namespace=ns)
    copies = 0
    for ns in namespaces:
        space = mem._spaces[ns]
        if space.archive is not None:
            copies += 1
            outside = {r.id for r in mem.records(namespace=ns) if r.tier.label != "active"}
            assert set(space.archive.ids) == outside
    assert copies
    before = {ns: _state(mem, ns) for ns in namespaces}
    mem.close()

    conn = sqlite3.connect(tmp_path / "oblivion.sqlite3")
    rows = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    conn.close()
    assert rows == THREADS * WRITES

    mem = _open(tmp_path, clock)
    try:
        for ns in namespaces:
            assert _state(mem, ns) == before[ns]
            active = len([r for r in mem.records(namespace=ns) if r.tier.label == "active"])
            assert mem.stats(namespace=ns)["active"] == active
    finally:
        mem.close()


_WORDS = ["the", "launch", "is", "friday", "budget", "team", "lunch", "my", "colour", "blue", "Dee"]


@pytest.mark.parametrize("max_loaded", [None, 1])
def test_every_kind_of_change_from_four_threads(tmp_path: Path, max_loaded: int | None) -> None:
    """Writes, edits, forgets, invalidations, boosts, maintenance with compression,
    unloads (or, with ``max_loaded_namespaces=1``, a namespace let go at every switch)
    and policy switches, from four threads over three namespaces: nothing raises, every
    memory a thread kept has its last text, Chroma holds exactly what SQLite does, and a
    reopen reads the same state back."""
    clock = ManualClock(1_000.0)
    policy = Policy.template("balanced").replace(
        active_capacity=8, maintain_every=4, compress_below=0.25, compress_similarity=0.3
    )

    def open_store() -> Oblivion:
        return Oblivion(
            tmp_path,
            clock=clock,
            policy=policy,
            embedder=HashEmbedder(dim=64),
            token_counter=word_count,
            max_loaded_namespaces=max_loaded,
        )

    mem = open_store()
    errors: list[BaseException] = []
    kept: dict[str, tuple[str, str]] = {}  # id -> (namespace, text), every thread's
    clock_lock = threading.Lock()

    def worker(t: int) -> None:
        rng = random.Random(t)
        mine: dict[str, tuple[str, str]] = {}

        def text() -> str:
            return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 8)))

        try:
            for _ in range(80):
                ns, op = rng.choice("abc"), rng.random()
                if op < 0.35 or not mine:
                    for rec in mem.remember_many(
                        [text() for _ in range(rng.randint(1, 3))], namespace=ns
                    ):
                        mine[rec.id] = (ns, rec.text)
                    continue
                mid = rng.choice(list(mine))
                own = mine[mid][0]
                if op < 0.5:
                    mem.recall(
                        text(), namespace=own, deep=rng.choice([None, True]), token_budget=20
                    )
                elif op < 0.58:
                    mine[mid] = (own, mem.edit(mid, text(), namespace=own).text)
                elif op < 0.64:
                    mem.forget(mid, namespace=own)
                    del mine[mid]
                elif op < 0.7:
                    mem.maintain(namespace=own)
                elif op < 0.76:
                    mem.confirm(mid, namespace=own)
                    mem.mark_used([mid], namespace=own)
                elif op < 0.8:
                    mem.invalidate(mid, namespace=own)
                elif op < 0.86:
                    with clock_lock:
                        clock.advance(rng.uniform(0, 30) * 86_400)
                elif op < 0.92:
                    mem.unload(namespace=own)
                else:
                    mem.set_policy(rng.choice(["support-desk", policy]), namespace=own)
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)
        kept.update(mine)

    _run(worker, 4)
    assert errors == []
    for mid, (ns, text) in kept.items():
        assert mem.get(mid, namespace=ns).text == text
    namespaces = mem.namespaces()
    for ns in namespaces:
        assert mem.repair_vector_store(namespace=ns) == {"put_back": 0, "removed": 0}
    before = {ns: _state(mem, ns) for ns in namespaces}
    mem.close()
    mem = open_store()
    try:
        assert {ns: _state(mem, ns) for ns in namespaces} == before
    finally:
        mem.close()


def test_concurrent_writes_of_the_same_id_store_it_once(tmp_path: Path) -> None:
    """When 8 threads race to store the same id, exactly one wins and the others are told."""
    mem = _open(tmp_path, ManualClock())
    outcomes: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def worker(t: int) -> None:
        start.wait()
        try:
            mem.remember(f"version from thread {t}", id="contested")
            result = "stored"
        except ValueError as exc:
            result = "rejected" if "already exists" in str(exc) else repr(exc)
        with lock:
            outcomes.append(result)

    _run(worker, THREADS, timeout=120)
    try:
        assert sorted(outcomes) == ["rejected"] * (THREADS - 1) + ["stored"]
        assert mem.count() == 1
        assert mem.store.count("default") == 1
    finally:
        mem.close()


def test_a_journal_prune_beside_recalls_and_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prune_journal releases the engine between chunks: recalls and writes on other
    threads go on meanwhile; afterwards no old boost entry is left and every newer entry
    and every write's entry is."""
    from oblivion_core.state import StateDB

    monkeypatch.setattr(StateDB, "PRUNE_CHUNK", 7)
    clock = ManualClock()
    mem = _open(tmp_path, clock)
    for i in range(30):
        mem.remember(f"note {i} about topic {i % 5}")
    for i in range(40):
        mem.recall(f"topic {i % 5}", k=4)
    clock.advance(10 * 86_400.0)
    cutoff = clock.now() - 86_400.0
    errors: list[BaseException] = []
    pruned: list[int] = []
    go = threading.Barrier(3)

    def prune() -> None:
        try:
            go.wait()
            pruned.append(mem.prune_journal(86_400.0))
        except BaseException as exc:  # reported below
            errors.append(exc)

    def use(t: int) -> None:
        try:
            go.wait()
            for i in range(20):
                mem.remember(f"thread {t} later note {i}")
                mem.recall(f"topic {i % 5}", k=4)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=prune)] + [
        threading.Thread(target=use, args=(t,)) for t in range(2)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    try:
        assert not errors
        assert pruned and pruned[0] > 0
        journal = mem.history()
        assert not [e for e in journal if e.kind in ("recall", "spread") and e.at < cutoff]
        assert sum(e.kind == "remember" for e in journal) == 30 + 2 * 20
        assert any(e.kind == "recall" and e.at >= cutoff for e in journal)
    finally:
        mem.close()


def test_reading_a_long_journal_holds_up_no_other_call(tmp_path: Path) -> None:
    """history() of a whole namespace read and decoded its journal inside the engine's
    lock (150k entries: 2.4 s, every other call waiting). Entries are read after the
    deferred ones are written, outside it: a call made meanwhile runs, and history()
    still returns every entry recorded before it, the last recall's boosts included."""
    from oblivion_core.state import StateDB

    clock = ManualClock()
    with _open(tmp_path, clock) as mem:
        ids = [r.id for r in mem.remember_many([f"garden note {i}" for i in range(20)])]
        mem.remember("a note of another user", namespace="other")
        mem.recall("garden note", k=5)  # its boosts wait to be written
        real = StateDB._loads
        ran: list[int] = []

        def decoding(self: StateDB, text: str, what: str) -> Any:
            if not ran:
                other = threading.Thread(target=lambda: ran.append(mem.count(namespace="other")))
                other.start()
                other.join(timeout=10)
                if not ran:  # still waiting for the engine
                    ran.append(-1)
            return real(self, text, what)

        StateDB._loads = decoding  # type: ignore[method-assign]
        try:
            events = mem.history()
        finally:
            StateDB._loads = real  # type: ignore[method-assign]
        assert ran[0] == 1, "the other call waited for history()"
        assert {e.memory_id for e in events if e.kind == "remember"} == set(ids)
        assert sum(e.kind == "recall" for e in events) == 5


def test_history_racing_close_says_the_instance_is_closed(tmp_path: Path) -> None:
    """Closed between writing the deferred entries and reading them, history() raised
    StoreError naming the database file as if it were damaged; it says what any call on
    a closed instance says."""
    from oblivion_core import InvalidInputError
    from oblivion_core.state import StateDB

    mem = _open(tmp_path, ManualClock())
    mem.remember("a garden note")
    real = StateDB.events

    def closing_first(self: StateDB, *args: Any, **kwargs: Any) -> Any:
        mem.close()  # another thread's close(), between the flush and the read
        return real(self, *args, **kwargs)

    StateDB.events = closing_first  # type: ignore[method-assign]
    try:
        with pytest.raises(InvalidInputError, match="instance is closed"):
            mem.history()
    finally:
        StateDB.events = real  # type: ignore[method-assign]


def test_load_racing_close_says_the_instance_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load() builds the BM25 index after it lets go of the engine's lock; closed in
    between, it raised StoreError naming the database file as if it were damaged."""
    from oblivion_core import InvalidInputError

    mem = _open(tmp_path, ManualClock())
    mem.remember("a garden note")
    real = mem._lex.build

    def closing_first(namespace: str) -> None:
        mem.close()  # another thread's close(), between the lock and the build
        real(namespace)

    mem.unload()
    monkeypatch.setattr(mem._lex, "build", closing_first)
    with pytest.raises(InvalidInputError, match="instance is closed"):
        mem.load()


def test_a_first_search_beside_a_write_that_rolls_back_indexes_none_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace's BM25 index is built on its first search, outside the engine's lock.
    When that happens while another thread's write is inside its transaction and the
    write then fails, the index holds none of the rolled-back texts: it read committed
    rows only (before, it read them through the writer's connection)."""
    mem = _open(tmp_path, ManualClock())
    try:
        mem.remember("apple pie recipe from grandmother", namespace="fresh")
        real_journal = mem._db.journal
        searcher: list[threading.Thread] = []
        results: list[list[str]] = []

        def journal_then_fail(*args: Any, **kwargs: Any) -> None:
            real_journal(*args, **kwargs)  # the rows are in, uncommitted
            th = threading.Thread(
                target=lambda: results.append(mem.recall("zebra", namespace="fresh").texts)
            )
            searcher.append(th)
            th.start()
            for _ in range(1000):  # until its search has built the index (then it waits)
                if "fresh" in mem._lex._spaces:
                    break
                th.join(timeout=0.01)
            assert "fresh" in mem._lex._spaces
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(mem._db, "journal", journal_then_fail)
        with pytest.raises(Exception, match="disk I/O error"):
            mem.remember_many(["zebra stripes", "zebra crossing ahead"], namespace="fresh")
        monkeypatch.undo()
        searcher[0].join(timeout=60)
        assert len(results) == 1 and not any("zebra" in t for t in results[0])
        assert mem.count(namespace="fresh") == 1
        # no phantom documents: the rolled-back texts match nothing, the committed one does
        assert mem._lex.search("fresh", "zebra", 10) == ([], [])
        assert len(mem._lex.search("fresh", "apple pie", 10)[0]) == 1
        assert mem._lex._spaces["fresh"].alive == 1
    finally:
        mem.close()


class _WaitingJudge:
    """A supersession judge whose first answer waits until ``go`` is set (a slow model);
    it answers yes about the colour pair."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.go = threading.Event()
        self.waited_out = False

    def supersedes(self, new: str, old: str, similarity: float) -> bool:
        self.asked.set()
        self.waited_out = not self.go.wait(timeout=30)
        return "colour" in new and "colour" in old


def _judged(path: Path, judge: Any) -> Oblivion:
    return Oblivion(path, clock=ManualClock(), embedder=HashEmbedder(), supersession_judge=judge)


def _green_while_judged(mem: Oblivion, judge: _WaitingJudge) -> threading.Thread:
    """Blue (judged by nobody), then green written on a thread; returns that thread once
    the judge has been asked about green (it now waits for ``judge.go``)."""
    mem.remember("My favourite colour is blue.", id="blue", supersede=False)
    writer = threading.Thread(
        target=lambda: mem.remember("My favourite colour is green now.", id="green")
    )
    writer.start()
    assert judge.asked.wait(timeout=30)
    return writer


def test_a_slow_supersession_judge_does_not_hold_up_other_calls(tmp_path: Path) -> None:
    """The judge (a model, seconds per question) is asked without the engine's lock: a
    recall on another thread completes while a write's judge is still thinking (it used
    to wait for the whole judgement), and the verdict is applied once it comes."""
    judge = _WaitingJudge()
    mem = _judged(tmp_path, judge)
    try:
        writer = _green_while_judged(mem, judge)
        got: list[list[str]] = []
        reader = threading.Thread(target=lambda: got.append(mem.recall("colour").ids))
        reader.start()
        reader.join(timeout=20)
        recalled_meanwhile = not reader.is_alive()
        judge.go.set()
        writer.join(timeout=30)
        reader.join(timeout=30)
        assert recalled_meanwhile and not judge.waited_out
        assert set(got[0]) == {"blue", "green"}  # before the verdict: both current
        assert mem.get("blue").superseded_by == "green"
        assert mem.recall("favourite colour").ids[0] == "green"
    finally:
        judge.go.set()
        mem.close()


def test_a_verdict_that_no_longer_holds_is_not_applied(tmp_path: Path) -> None:
    """What a judge decided outside the lock is checked again before it is applied: the
    older memory forgotten meanwhile is left alone and nothing fails."""
    judge = _WaitingJudge()
    mem = _judged(tmp_path, judge)
    try:
        writer = _green_while_judged(mem, judge)
        mem.forget("blue")  # while the judge thinks
        judge.go.set()
        writer.join(timeout=30)
        assert mem.get("green").superseded_by is None
        assert [r.id for r in mem.records()] == ["green"]
        assert not [e for e in mem.history() if e.kind == "supersede"]
    finally:
        judge.go.set()
        mem.close()


class _TableJudge:
    """Says yes to the ``(new, old)`` text pairs in ``yes``; the questions about the texts
    in ``slow`` wait until ``go`` is set (a model still thinking)."""

    def __init__(self, yes: set[tuple[str, str]], slow: set[str]) -> None:
        self.yes, self.slow = yes, slow
        self.asked = threading.Event()
        self.go = threading.Event()

    def supersedes(self, new: str, old: str, similarity: float) -> bool:
        if new in self.slow:
            self.asked.set()
            self.go.wait(timeout=30)
        return (new, old) in self.yes


def _chains(mem: Oblivion) -> dict[str, str | None]:
    return {r.id: r.superseded_by for r in mem.records()}


def test_verdicts_applied_after_an_edit_never_close_a_cycle(tmp_path: Path) -> None:
    """A batch judged outside the lock (X makes A stale, Y makes X stale) while an edit
    of A makes Y stale: applying the batch must not close A -> X -> Y -> A, which would
    hide the whole fact from recall for good (each pair used to be checked alone)."""
    a, x, y, a2 = "alpha fact one", "xray fact two", "yankee fact three", "alpha fact edited"
    judge = _TableJudge({(x, a), (y, x), (a2, y)}, slow={x, y})
    mem = _judged(tmp_path, judge)
    try:
        mem.remember(a, id="A")
        writer = threading.Thread(target=lambda: mem.remember_many([x, y], ids=["X", "Y"]))
        writer.start()
        assert judge.asked.wait(timeout=30)
        mem.edit("A", a2)  # judged under the lock: Y -> A
        judge.go.set()
        writer.join(timeout=30)
        chains = _chains(mem)
        for start in chains:  # no cycle anywhere
            node, seen = start, set()
            while node is not None:
                assert node not in seen, chains
                seen.add(node)
                node = chains[node]
        assert mem.recall("fact").ids  # the fact is still recalled
    finally:
        judge.go.set()
        mem.close()


@pytest.mark.parametrize("edited", ["new", "old"])
def test_a_verdict_about_words_edited_since_is_dropped(tmp_path: Path, edited: str) -> None:
    """The judge's verdict was about the texts it was shown: when either memory is
    edited while it thinks, the verdict is not applied (it used to hide the edited,
    unrelated memory behind the other one)."""
    old, new, other = "My favourite color is red", "My favourite color is blue", "I adopted Rex"
    judge = _TableJudge({(new, old)}, slow={new})
    mem = _judged(tmp_path, judge)
    try:
        mem.remember(old, id="old")
        writer = threading.Thread(target=lambda: mem.remember(new, id="new"))
        writer.start()
        assert judge.asked.wait(timeout=30)
        mem.edit(edited, other)
        judge.go.set()
        writer.join(timeout=30)
        assert _chains(mem) == {"old": None, "new": None}
    finally:
        judge.go.set()
        mem.close()


def test_closing_while_the_judge_thinks_says_what_was_not_applied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """close() does not wait for a judge still answering: its verdicts are not applied,
    and a warning says so (it used to log a failure with a traceback)."""
    judge = _WaitingJudge()
    mem = _judged(tmp_path, judge)
    writer = _green_while_judged(mem, judge)
    mem.close()
    with caplog.at_level(logging.WARNING, logger="oblivion_core"):
        judge.go.set()
        writer.join(timeout=30)
    assert "closed while its supersession judge was answering" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_edits_judge_is_asked_without_the_lock_too(tmp_path: Path) -> None:
    """edit() judges its new text as remember() does: other calls go on while the judge
    thinks (they used to wait for it), and the verdict applies afterwards."""
    judge = _WaitingJudge()
    mem = _judged(tmp_path, judge)
    try:
        mem.remember("My favourite colour is blue.", id="blue", supersede=False)
        mem.remember("I went hiking today.", id="note", supersede=False)
        editor = threading.Thread(
            target=lambda: mem.edit("note", "My favourite colour is green now.")
        )
        editor.start()
        assert judge.asked.wait(timeout=30)
        reader = threading.Thread(target=lambda: mem.recall("colour"))
        reader.start()
        reader.join(timeout=20)
        recalled_meanwhile = not reader.is_alive()
        judge.go.set()
        editor.join(timeout=30)
        assert recalled_meanwhile and not judge.waited_out
        assert mem.get("blue").superseded_by == "note"
    finally:
        judge.go.set()
        mem.close()


_MEETING = [
    "In the budget meeting we agreed the travel budget is frozen.",
    "The budget meeting moved the marketing budget to next quarter.",
    "At the budget meeting Priya asked for a hiring budget review.",
    "The budget meeting ended with a plan to cut the cloud budget.",
]


def _race_decompress(path: Path) -> None:
    """Compress four notes, then let two threads decompress the summary at once."""
    from oblivion_core import Tier, UnknownMemoryError

    policy = Policy().replace(compress_below=0.1, maintain_every=0, adapt=False, supersede=False)
    clock = ManualClock()
    mem = Oblivion(
        path, clock=clock, embedder=HashEmbedder(), token_counter=word_count, policy=policy
    )
    try:
        recs = mem.remember_many(_MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        mem.remember("Always answer in British English", category="instruction")
        clock.advance(60 * 86_400)
        mem.maintain()
        (sid,) = [r.id for r in mem.records() if r.category == "summary"]
        start = threading.Barrier(2)
        results: list[object] = []

        def undo() -> None:
            start.wait()
            try:
                results.append([r.id for r in mem.decompress(sid)])
            except Exception as exc:
                results.append(exc)

        threads = [threading.Thread(target=undo) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        won = [r for r in results if isinstance(r, list)]
        lost = [r for r in results if not isinstance(r, list)]
        assert won == [[r.id for r in recs]]
        assert len(lost) == 1 and isinstance(lost[0], UnknownMemoryError), lost
        assert [mem.get(r.id).tier for r in recs] == [Tier.ARCHIVE] * 4
    finally:
        mem.close()


def test_decompress_checks_and_deletes_in_one_hold(tmp_path: Path) -> None:
    """Two threads decompressing one summary: one gets the originals back, the other an
    UnknownMemoryError (a raw KeyError came from between its check and its delete, at
    times after the summary was already deleted)."""
    for round_ in range(25):
        _race_decompress(tmp_path / str(round_))


class _SlowQuery(HashEmbedder):
    """Reports busy cores like the local model (BM25 then runs in line, outside the
    lock), and holds a query embedding until told."""

    busy_cores = True

    def __init__(self) -> None:
        super().__init__()
        self.hold, self.inside, self.go = threading.Event(), threading.Event(), threading.Event()

    def embed_query(self, text: str) -> Any:
        if self.hold.is_set():
            self.inside.set()
            self.go.wait(10)
        return super().embed_query(text)


@pytest.mark.parametrize("reader_open", [True, False])
def test_close_during_a_recalls_embedding_says_closed_and_leaves_nothing_open(
    tmp_path: Path, reader_open: bool
) -> None:
    """A namespace's first search reads its texts from SQLite outside the lock: closed
    meanwhile, the call failed with "SQLite failed ... closed database", or opened a new
    connection to the closed store and kept it."""
    from oblivion_core import InvalidInputError

    embedder = _SlowQuery()

    def open_() -> Oblivion:
        return Oblivion(tmp_path, clock=ManualClock(), embedder=embedder, token_counter=word_count)

    with open_() as mem:
        mem.remember("the boiler service is booked for March", namespace="x")
        mem.remember("the piano teacher is paid", namespace="y")
    mem = open_()  # reopened: each namespace's BM25 index is built on its first search
    if reader_open:
        mem.recall("piano", namespace="y")
    embedder.hold.set()
    raised: list[BaseException] = []

    def call() -> None:
        try:
            mem.recall("boiler service", namespace="x")
        except BaseException as exc:  # what it raised is the point
            raised.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    assert embedder.inside.wait(10)
    mem.close()
    embedder.go.set()
    worker.join(30)
    assert len(raised) == 1 and isinstance(raised[0], InvalidInputError), raised
    assert "closed" in str(raised[0])
    assert mem._db._reader_conn is None or _is_closed(mem._db._reader_conn)


def _is_closed(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


def test_an_instance_dropped_without_close_lets_go_of_the_store(tmp_path: Path) -> None:
    """Collected without close(), an instance held the store's lock file for the rest of
    the process: every later Oblivion(path) was refused as "already open"."""
    import gc
    import time
    import weakref

    def use_and_drop() -> weakref.ref[Oblivion]:
        mem = _open(tmp_path, ManualClock())
        mem.remember("the garden hose is in the shed", id="hose")
        mem.recall("garden hose")
        return weakref.ref(mem)

    gone = use_and_drop()
    deadline = time.monotonic() + 20  # its timer holds it until the boosts are handed off
    while gone() is not None and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert gone() is None
    with _open(tmp_path, ManualClock()) as again:
        assert again.get("hose").access_count == 1


class _Gated(HashEmbedder):
    """An embedder whose ``gate`` method (``embed_query`` or ``embed_documents``) waits
    on ``hold`` when it is set: a slow model, so another thread's call lands while a call
    embeds outside the engine's lock."""

    def __init__(self, gate: str) -> None:
        super().__init__()
        self.gate = gate
        self.hold: threading.Event | None = None
        self.entered = threading.Event()

    def _wait(self, method: str) -> None:
        if self.hold is not None and method == self.gate:
            self.entered.set()
            self.hold.wait(10)

    def embed_query(self, text: str) -> list[float]:
        self._wait("embed_query")
        return super().embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._wait("embed_documents")
        return super().embed_documents(texts)


def test_a_recall_beside_an_edit_ranks_the_edited_text() -> None:
    """BM25 runs outside the engine's lock (beside the query's embedding); an edit that
    landed meanwhile left the recall with the old text's scores: "Paris" matched the
    text now about Berlin (lexical 1.78, score 0.52 against 0.23 once settled). A change
    of the lexical index since the search now has it run again under the lock."""
    from oblivion_core.testing import memory

    emb = _Gated("embed_query")
    mem = memory(embedder=emb, policy=Policy().replace(supersede=False, maintain_every=0))
    target = mem.remember("My favourite city is Paris and I visit it often")
    for i in range(10):
        mem.remember(f"Unrelated note number {i} on gardening and tomatoes")
    searched = threading.Event()
    search = mem._lex.search

    def watched(*args: Any, **kwargs: Any) -> Any:
        try:
            return search(*args, **kwargs)
        finally:
            searched.set()

    mem._lex.search = watched  # type: ignore[method-assign]
    emb.hold = threading.Event()
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(mem.recall("Paris", k=3, deep=True)))
    t.start()
    assert searched.wait(10)  # BM25 ran; the query's embedding still waits
    mem.edit(target.id, "My favourite city is Berlin and I visit it often")
    emb.hold.set()
    t.join()
    emb.hold = None
    settled = {it.id: it.score for it in mem.recall("Paris", k=3, deep=True, feedback=False)}
    item = next(it for it in out[0] if it.id == target.id)
    assert item.why["relevance_signals"]["lexical"] == 0.0
    assert item.score == pytest.approx(settled[target.id], abs=0.01)
    mem.close()


def test_a_remember_beside_set_policy_follows_the_new_policy() -> None:
    """remember() read the policy before it embedded (outside the lock) and used that
    copy after: a set_policy() landing meanwhile (maintain_every 1 -> 0, capacity
    100 -> 2) got an automatic maintain() nobody asked for, planned with the new
    capacity: 9 of 11 memories archived. Neither order of the two calls does that."""
    from oblivion_core.testing import memory

    old = Policy().replace(maintain_every=1, active_capacity=100, supersede=False, adapt=False)
    emb = _Gated("embed_documents")
    mem = memory(embedder=emb, policy=old)
    for i in range(10):
        mem.remember(f"note {i} about the garden")
    emb.hold = threading.Event()
    t = threading.Thread(target=mem.remember, args=("the new note",))
    t.start()
    assert emb.entered.wait(10)  # embedding, outside the lock
    mem.set_policy(old.replace(maintain_every=0, active_capacity=2))
    emb.hold.set()
    t.join()
    emb.hold = None
    stats = mem.stats()
    assert stats["memories"] == 11 and stats["active"] == 11
    mem.close()


class _Hooked(HashEmbedder):
    """Runs ``hook`` once, from ``recall()``'s look at ``busy_cores``: after it picked the
    tier BM25 ranks, before BM25 runs (what another thread can do in that window)."""

    hook: Any = None

    @property
    def busy_cores(self) -> bool:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return False


def _scores(mem: Oblivion, query: str) -> list[tuple[str, float]]:
    items = mem.recall(query, deep=False, feedback=False, k=5)
    return [(it.id, round(it.score, 6)) for it in items]


def test_a_deep_false_recall_beside_an_unload_and_a_write_ranks_the_new_tier() -> None:
    """The namespace unloaded and written to (so loaded again, with a new active set whose
    version counted up to the old one's) while a ``deep=False`` recall was about to run
    BM25: it ranked the old set, without the new memory, and the order of two memories
    flipped against the same recall right after (found by review). The recall now redoes
    BM25 unless the set it ranked is still the namespace's."""
    from oblivion_core.testing import memory

    emb = _Hooked(64)
    mem = memory(embedder=emb)
    mem.remember("apple orchard note one")
    mem.remember("banana plantation note two")

    def unload_and_write() -> None:
        mem.unload(namespace="default")
        mem.remember("apple orchard note three")

    emb.hook = unload_and_write
    raced = _scores(mem, "apple orchard")
    assert emb.hook is None  # it ran
    assert raced == _scores(mem, "apple orchard")
    mem.close()


def test_a_deep_false_recall_beside_a_failed_maintain_ranks_the_reloaded_tier(
    tmp_path: Path,
) -> None:
    """A maintain() that archives memories and then fails (its transaction rolled back,
    the namespace's state read again from SQLite) while a ``deep=False`` recall ran BM25
    over the tier without them: the reloaded tier holds them again, and its new set's
    version equals the old one's, so the recall kept BM25 from a set that no longer
    exists (0.54 instead of 0.89 for the three; found by review)."""
    clock = ManualClock()
    policy = Policy().replace(active_capacity=3)

    def open_store() -> Oblivion:
        return Oblivion(
            tmp_path / "m",
            policy=policy,
            clock=clock,
            embedder=HashEmbedder(64),
            token_counter=word_count,
        )

    mem = open_store()
    for i in range(6):
        mem.remember(f"apple orchard note {i}", importance=0.5)
    mem.close()
    clock.advance(86_400 * 30)  # all decayed: maintain() archives down to 3
    mem = open_store()
    mem.recall("pear", deep=False, feedback=False)  # loads the namespace
    search = mem._lex.search
    fired: list[bool] = []

    def failing_maintain_beside(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("allow", args[3] if len(args) > 3 else None) is not None and not fired:
            fired.append(True)
            journal = mem._db.journal

            def fail(*a: Any, **k: Any) -> None:
                raise sqlite3.OperationalError("disk I/O error")

            mem._db.journal = fail  # type: ignore[method-assign]
            try:
                with pytest.raises(Exception, match="disk I/O error"):
                    mem.maintain()
            finally:
                mem._db.journal = journal  # type: ignore[method-assign]
        return search(*args, **kwargs)

    mem._lex.search = failing_maintain_beside  # type: ignore[method-assign]
    raced = _scores(mem, "apple orchard")
    mem._lex.search = search  # type: ignore[method-assign]
    assert fired
    assert raced == _scores(mem, "apple orchard")
    mem.close()


def test_async_code_shares_the_engine_through_worker_threads(tmp_path: Path) -> None:
    """The README's way for async code, ``asyncio.to_thread``: many writes and recalls
    gathered on one event loop each complete, and recalls made after them find the
    writes."""
    import asyncio

    mem = _open(tmp_path / "s", ManualClock())

    async def main() -> list[Any]:
        writes = [
            asyncio.to_thread(mem.remember, f"user {i} likes colour number {i}", id=f"u{i}")
            for i in range(40)
        ]
        reads = [asyncio.to_thread(mem.recall, f"colour number {i}", k=3) for i in range(40)]
        return await asyncio.gather(*writes, *reads)

    try:
        results = asyncio.run(main())
        assert [r.id for r in results[:40]] == [f"u{i}" for i in range(40)]
        assert mem.count() == 40
        assert all(item.id.startswith("u") for result in results[40:] for item in result)
        for i in (0, 17, 39):
            assert f"u{i}" in [item.id for item in mem.recall(f"colour number {i}", k=3)]
    finally:
        mem.close()


def test_exclusive_holds_the_engine_for_calls_in_a_row_or_gives_up_at_once() -> None:
    """``exclusive(timeout=0)`` yields False while another thread's call holds the
    engine, and True (its calls running as one) when it is free."""
    import threading

    from oblivion_core import InvalidInputError
    from oblivion_core.testing import memory

    mem = memory()
    mem.remember("the ferry leaves at dawn", id="f")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with mem.exclusive():
            holding.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    holding.wait(10)
    with mem.exclusive(timeout=0) as held:
        assert held is False
    release.set()
    other.join(10)
    with mem.exclusive(timeout=0) as held:
        assert held is True
        assert mem.recall("ferry", k=1).ids == ["f"]  # calls inside take it again
    for bad in (-1, float("nan"), "soon"):
        with pytest.raises(InvalidInputError, match="timeout"), mem.exclusive(timeout=bad):
            pass
