"""unload(): a namespace's in-memory state let go and read back on its next use answers,
ranks and explains as before, and keeps what was queued for it."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion, Policy, StoreLockedError, UnknownNamespaceError
from oblivion_core.errors import InvalidInputError
from oblivion_core.state import StateDB
from oblivion_core.testing import HashEmbedder, word_count

pytestmark = pytest.mark.integration

DAY = 86_400.0
QUERIES = ["Where does Ana live?", "What does Ana drink in the morning?", "deadline of the report"]


def _rounded(value: Any) -> Any:
    """``value`` with every float rounded (the active tier's product rounds by a
    memory's place in the matrix, which a reload may change)."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def _snapshot(mem: Oblivion, ns: str) -> dict[str, Any]:
    """What a user can see of a namespace, without changing it."""
    return _rounded(
        {
            "records": [dataclasses.asdict(r) for r in mem.records(namespace=ns)],
            # less whether the archive's in-memory copy is built yet (a cache, rebuilt on
            # the first archive search)
            "stats": {
                k: v
                for k, v in mem.stats(namespace=ns).items()
                if k not in ("archive_in_memory", "archive_search")
            },
            "recalls": [
                [
                    (i.id, i.tier, i.score, i.why)
                    for i in mem.recall(q, k=5, namespace=ns, deep=True, feedback=False)
                ]
                for q in QUERIES
            ],
            "history": [
                (e.memory_id, e.kind, e.before, e.after, e.at) for e in mem.history(namespace=ns)
            ],
        }
    )


def _session(mem: Oblivion, clock: ManualClock, ns: str) -> None:
    """A few days of use: writes, a stale fact replaced, recalls (their feedback queued
    behind the call), a used boost, a confirmation, tier moves."""
    mem.remember_many(
        [
            "Ana lives in Leeds.",
            "Ana drinks black coffee every morning.",
            "The quarterly report is due on Friday.",
            "Ana's sister Lena is a nurse in York.",
            "It was sunny and warm at the picnic.",
        ],
        namespace=ns,
    )
    clock.advance(DAY)
    mem.remember("Ana moved to York last week.", namespace=ns)
    clock.advance(DAY)
    result = mem.recall("What does Ana drink?", k=3, namespace=ns)
    mem.mark_used([result.items[0].id], namespace=ns)
    mem.confirm(result.items[0].id, namespace=ns)
    clock.advance(5 * DAY)
    mem.maintain(namespace=ns)
    mem.recall("When is the report due?", k=3, namespace=ns)  # its feedback still queued


def test_an_unloaded_namespace_answers_as_before(tmp_path: Path, real_embedder: Any) -> None:
    """Real model, Chroma on disk: after unload() the records, stats, recalls (deep, with
    their why) and journal of the namespace are what they were; the other namespace is
    untouched and stays loaded."""
    clock = ManualClock()
    policy = Policy(active_capacity=3, active_share=None)
    with Oblivion(tmp_path / "store", embedder=real_embedder, clock=clock, policy=policy) as mem:
        _session(mem, clock, "ana")
        _session(mem, clock, "bo")
        before = _snapshot(mem, "ana")
        other = _snapshot(mem, "bo")
        assert {"ana", "bo"} <= set(mem.loaded_namespaces())
        assert mem.unload(namespace="ana") is True
        assert "ana" not in mem.loaded_namespaces()
        assert "bo" in mem.loaded_namespaces()
        assert mem.unload(namespace="ana") is False  # nothing held any more
        assert _snapshot(mem, "ana") == before
        assert "ana" in mem.loaded_namespaces()  # read back by that use
        assert _snapshot(mem, "bo") == other
        # and it goes on as a loaded one would: a correction still replaces the old fact
        mem.unload(namespace="ana")
        mem.remember("Update: the quarterly report is now due on Monday.", namespace="ana")
        top = mem.recall("When is the quarterly report due?", k=2, namespace="ana")
        assert [i.text for i in top.items][:1] == [
            "Update: the quarterly report is now due on Monday."
        ]
        assert mem.stats(namespace="ana")["superseded"] == before["stats"]["superseded"] + 1


def _twins(tmp_path: Path) -> tuple[Oblivion, Oblivion, ManualClock]:
    clock = ManualClock()
    made = [
        Oblivion(tmp_path / name, embedder=HashEmbedder(), clock=clock, token_counter=word_count)
        for name in ("kept", "unloaded")
    ]
    return made[0], made[1], clock


def test_unload_keeps_the_feedback_and_use_counters_queued_for_the_namespace(
    tmp_path: Path,
) -> None:
    """Two stores given the same calls, one unloaded right after a recall whose feedback
    (boosts, journal entries, use counters) was still queued: both end the same."""
    kept, unloaded, clock = _twins(tmp_path)
    try:
        for mem in (kept, unloaded):
            mem.remember_many(
                [f"fact {i}: the garden shed holds tool {i}" for i in range(8)],
                ids=[f"f{i}" for i in range(8)],
            )
        clock.advance(DAY)
        for mem in (kept, unloaded):
            mem.recall("garden shed tool 3", k=3)
            mem.recall("garden shed tool 5", k=3, deep=True)
        assert unloaded.unload() is True
        assert _snapshot(unloaded, "default") == _snapshot(kept, "default")
    finally:
        kept.close()
        unloaded.close()
    # and on disk: reopened, the unloaded store holds what the other does
    with (
        Oblivion(tmp_path / "kept", embedder=HashEmbedder(), clock=clock) as a,
        Oblivion(tmp_path / "unloaded", embedder=HashEmbedder(), clock=clock) as b,
    ):
        assert _snapshot(b, "default") == _snapshot(a, "default")


def test_unload_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    """An unknown namespace and a closed engine are errors; a namespace never used since
    the engine opened is not loaded."""
    path = tmp_path / "store"
    with Oblivion(path, embedder=HashEmbedder()) as mem:
        mem.remember("The office is in Leeds.", namespace="work")
    mem = Oblivion(path, embedder=HashEmbedder())
    try:
        assert "work" not in mem.loaded_namespaces()
        assert mem.unload(namespace="work") is False
        with pytest.raises(UnknownNamespaceError, match="nowhere"):
            mem.unload(namespace="nowhere")
    finally:
        mem.close()
    with pytest.raises(InvalidInputError, match="closed"):
        mem.unload(namespace="work")
    with pytest.raises(InvalidInputError, match="closed"):
        mem.loaded_namespaces()


def test_a_lock_held_elsewhere_leaves_the_namespace_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queued updates cannot be written while another process holds the database's
    write lock: unload() raises, the namespace stays loaded with its updates, and once
    the lock is gone a call unloads it with nothing lost."""
    monkeypatch.setattr(StateDB, "BUSY_TIMEOUT", 0.2)
    path = tmp_path / "store"
    mem = Oblivion(path, embedder=HashEmbedder(), clock=ManualClock(), token_counter=word_count)
    try:
        mem.remember_many([f"fact {i}: the harbour ferry leaves at {i}pm" for i in range(6)])
        mem.recall("harbour ferry 3pm", k=2)
        boosted = _snapshot(mem, "default")  # the recall's boosts, queued, not written
        ext = sqlite3.connect(path / StateDB.FILE, isolation_level=None)
        ext.execute("BEGIN IMMEDIATE")  # as by a backup tool, the sqlite3 shell
        try:
            with pytest.raises(StoreLockedError):
                mem.unload()
            assert "default" in mem.loaded_namespaces()
            assert _snapshot(mem, "default") == boosted
        finally:
            ext.execute("ROLLBACK")
            ext.close()
        assert mem.unload() is True
        assert _snapshot(mem, "default") == boosted
    finally:
        mem.close()


def test_unload_beside_recalls_and_writes_on_other_threads(tmp_path: Path) -> None:
    """Threads recall and write while another unloads the namespace over and over: no
    call fails, every write is there afterwards and each recall finds its fact."""
    mem = Oblivion(tmp_path / "store", embedder=HashEmbedder(), token_counter=word_count)
    mem.remember_many([f"fact {i}: locker {i} holds the blue kit" for i in range(40)])
    errors: list[BaseException] = []
    stop = threading.Event()

    def guard(fn: Any) -> Any:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # reported below
                errors.append(exc)

        return run

    @guard
    def unloader() -> None:
        while not stop.is_set():
            mem.unload()

    @guard
    def reader() -> None:
        for i in range(60):
            got = mem.recall(f"fact {i % 40}: locker {i % 40}", k=1)
            assert got.items and got.items[0].text.startswith(f"fact {i % 40}:")

    @guard
    def writer() -> None:
        for i in range(30):
            mem.remember(f"note {i}: the red kit is in bay {i}")

    try:
        threads = [threading.Thread(target=f) for f in (reader, reader, writer)]
        spinner = threading.Thread(target=unloader)
        spinner.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        stop.set()
        spinner.join(timeout=30)
        assert not errors, errors
        assert mem.count() == 70
    finally:
        mem.close()


def test_unload_lets_go_of_the_cached_texts_and_counts_need_no_load(tmp_path: Path) -> None:
    """The texts and metadata read for a namespace go with it (the reviewer saw 3,000
    of them stay); count() of a namespace not loaded is read from the database, so
    listing every user's namespace (as OblivionStore.list_namespaces does) loads none."""
    with Oblivion(tmp_path / "store", embedder=HashEmbedder()) as mem:
        for user in ("ana", "bo"):
            mem.remember_many(
                [f"{user} fact {i}: the shed holds tool {i}" for i in range(6)], namespace=user
            )
            mem.remember("Keep answers short.", category="instruction", namespace=user)
            mem.recall("shed tool 3", k=3, namespace=user)  # reads texts into the cache
        counts = {
            u: (mem.count(namespace=u), mem.count(namespace=u, category="instruction"))
            for u in ("ana", "bo")
        }
        # the active tier's texts are held apart from the LRU (StateDB.hold)
        assert any(mem._db._held["ana"].values())
        mem.unload(namespace="ana")
        assert mem._db._held["bo"]  # one namespace's unload leaves the others' alone
        mem.unload(namespace="bo")
        assert not any(ns in ("ana", "bo") for ns, _ in mem._db._contents)
        assert not {"ana", "bo"} & set(mem._db._held)
        assert {
            u: (mem.count(namespace=u), mem.count(namespace=u, category="instruction"))
            for u in ("ana", "bo")
        } == counts
        assert mem.count(namespace="ana", category="never-used") == 0
        assert not {"ana", "bo"} & set(mem.loaded_namespaces())


# ------------------------------------------------- max_loaded_namespaces: unloaded for you

USERS = ["ana", "bo", "cy", "dee"]


def _ops() -> st.SearchStrategy[list[tuple[str, str, int]]]:
    kinds = st.sampled_from(["remember", "recall", "used", "confirm", "maintain", "wait"])
    return st.lists(
        st.tuples(kinds, st.sampled_from(USERS), st.integers(0, 5)), min_size=1, max_size=25
    )


def _apply(mem: Oblivion, clock: ManualClock | None, op: tuple[str, str, int], n: int) -> None:
    """Call ``n`` of a session: ``op`` on one user's namespace (``clock`` advanced by one
    of the twins only: they share it)."""
    kind, ns, i = op
    if kind == "wait":
        if clock is not None:
            clock.advance(DAY * (i + 1))
        return
    if kind == "remember":
        mem.remember(f"{ns} fact {i}: the shed holds tool {i}", namespace=ns, id=f"m{n}")
        return
    if ns not in mem.namespaces():
        return
    if kind == "recall":
        mem.recall(f"shed tool {i}", k=2, namespace=ns, deep=i % 2 == 0)
    elif kind == "maintain":
        mem.maintain(namespace=ns)
    else:
        ids = [r.id for r in mem.records(namespace=ns)]
        if ids:
            target = ids[i % len(ids)]
            if kind == "used":
                mem.mark_used([target], namespace=ns)
            else:
                mem.confirm(target, namespace=ns)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_ops(), limit=st.integers(1, 3))
def test_max_loaded_namespaces_holds_the_limit_and_changes_nothing_else(
    ops: list[tuple[str, str, int]], limit: int
) -> None:
    """Random calls over four users: an engine holding at most ``limit`` namespaces ends
    exactly as one holding all of them (records, stats, recalls with their why, the
    journal), live and reopened, and never holds more than ``limit`` once a call has
    returned."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = ManualClock()

        def made(name: str, cap: int | None) -> Oblivion:
            return Oblivion(
                Path(tmp) / name,
                embedder=HashEmbedder(),
                clock=clock,
                token_counter=word_count,
                max_loaded_namespaces=cap,
            )

        capped, free = made("capped", limit), made("free", None)
        try:
            for n, op in enumerate(ops):
                for mem in (capped, free):
                    _apply(mem, clock if mem is capped else None, op, n)
                assert len(capped.loaded_namespaces()) <= limit
            assert capped.namespaces() == free.namespaces()
            for ns in capped.namespaces():
                assert _snapshot(capped, ns) == _snapshot(free, ns), ns
                assert len(capped.loaded_namespaces()) <= limit
        finally:
            capped.close()
            free.close()
        with made("capped", None) as a, made("free", None) as b:
            for ns in a.namespaces():
                assert _snapshot(a, ns) == _snapshot(b, ns), ns


def test_the_least_recently_used_namespaces_go_first(tmp_path: Path) -> None:
    """With room for two, using a third unloads whichever was used longest ago."""
    with Oblivion(tmp_path, embedder=HashEmbedder(), max_loaded_namespaces=2) as mem:
        for user in ("ana", "bo"):
            mem.remember(f"{user} keeps the spare key under the mat", namespace=user)
        mem.recall("spare key", namespace="ana")  # bo is now the idle one
        mem.remember("cy keeps the spare key in the shed", namespace="cy")
        assert mem.loaded_namespaces() == ["ana", "cy"]
        assert mem.recall("spare key", namespace="bo").texts == [
            "bo keeps the spare key under the mat"
        ]
        assert mem.loaded_namespaces() == ["bo", "cy"]


def test_an_unloaded_namespace_lets_go_of_its_chroma_collection(tmp_path: Path) -> None:
    """The vector store kept a handle on the collection of every namespace ever used
    (about 9 KB each on a Chroma server's client): a server's memory grew with every
    user it had seen, whatever ``max_loaded_namespaces``. Unloading lets go of it, and
    the next use opens it again, archive and writes included."""
    with Oblivion(
        tmp_path, embedder=HashEmbedder(), token_counter=word_count, max_loaded_namespaces=3
    ) as mem:
        for i in range(12):
            mem.remember(f"user {i} keeps the spare key in box {i}", namespace=f"u{i}", id="key")
            mem.recall("spare key", namespace=f"u{i}")
            mem._lock.settle()
            assert set(mem.store._collections) <= set(mem.loaded_namespaces())
        mem.edit("key", "user 0 keeps the spare key in the shed", namespace="u0")
        assert set(mem.store.ids("u0")) == {"key"}
        assert mem.recall("spare key shed", namespace="u0", deep=True).texts == [
            "user 0 keeps the spare key in the shed"
        ]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_max_loaded_namespaces_must_be_a_positive_int(tmp_path: Path, bad: object) -> None:
    """Anything but None or an int >= 1 is refused, naming the argument."""
    with pytest.raises(InvalidInputError, match="max_loaded_namespaces must be an int >= 1"):
        Oblivion(tmp_path, embedder=HashEmbedder(), max_loaded_namespaces=bad)  # type: ignore[arg-type]


def test_a_namespace_that_cannot_be_unloaded_stays_until_it_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another process holds the database's write lock: the idle namespace stays loaded
    with its queued updates, a warning says why, the calls go on, and the next namespace
    loaded after the lock is gone unloads it with nothing lost."""
    monkeypatch.setattr(StateDB, "BUSY_TIMEOUT", 0.2)
    path = tmp_path / "store"
    mem = Oblivion(
        path,
        embedder=HashEmbedder(),
        clock=ManualClock(),
        token_counter=word_count,
        max_loaded_namespaces=1,
    )
    try:
        for user in ("ana", "bo", "cy"):
            mem.remember_many(
                [f"{user} fact {i}: the ferry leaves at {i}pm" for i in range(4)], namespace=user
            )
        mem.unload(namespace="cy")
        mem.recall("ferry 3pm", k=2, namespace="ana")
        boosted = _snapshot(mem, "ana")  # its boosts queued, not written
        ext = sqlite3.connect(path / StateDB.FILE, isolation_level=None)
        ext.execute("BEGIN IMMEDIATE")
        try:
            with caplog.at_level("WARNING", logger="oblivion_core"):
                got = mem.recall("ferry 2pm", k=1, namespace="cy", feedback=False)
                assert got.texts == ["cy fact 2: the ferry leaves at 2pm"]
                assert mem.loaded_namespaces() == ["ana", "cy"]
            assert "'ana' could not be unloaded" in caplog.text
        finally:
            ext.execute("ROLLBACK")
            ext.close()
        mem.recall("ferry 1pm", k=1, namespace="bo", feedback=False)
        assert mem.loaded_namespaces() == ["bo"]
        assert _snapshot(mem, "ana") == boosted
    finally:
        mem.close()


def _links_of_a_new_memory(path: Path, cap: int | None, case: str) -> dict[str, float]:
    """The links a write makes after the same calls, with ``max_loaded_namespaces=cap``
    (1: another user's write unloads this one first)."""
    clock = ManualClock()
    policy = Policy(link_window=3) if case == "window" else None  # as for >2,000 active
    with Oblivion(
        path,
        embedder=HashEmbedder(),
        token_counter=word_count,
        clock=clock,
        policy=policy,
        max_loaded_namespaces=cap,
    ) as mem:
        if case == "window":
            mem.remember(
                "I drink green tea every morning", namespace="ana", id="tea", importance=0.1
            )
            mem.remember_many(
                [f"The {w} is parked outside" for w in ("car", "bike", "van", "boat")],
                namespace="ana",
                ids=["car", "bike", "van", "boat"],
                importances=[0.9] * 4,
            )
            clock.advance(60 * DAY)
            assert [e.id for e in mem.maintain(namespace="ana").entries] == ["tea"]
            mem.confirm("tea", namespace="ana")  # back in the active tier, its row last
        else:  # equal texts: a tie, broken by the rows' places before this change
            mem.remember_many(
                ["I drink green tea every morning"] * 5,
                namespace="ana",
                ids=[f"t{i}" for i in range(5)],
                importances=[0.1, 0.9, 0.9, 0.9, 0.9],
                supersede=False,
            )
            clock.advance(60 * DAY)
            mem.maintain(namespace="ana")  # t0 archived: the last row fills its place
        mem.remember("Bo's first note", namespace="bo")
        mem.remember("I drink green tea every morning, hot", namespace="ana", id="new")
        return mem.links("new", namespace="ana")


@pytest.mark.parametrize("case", ["window", "tie"])
def test_links_made_on_write_do_not_depend_on_a_reload(tmp_path: Path, case: str) -> None:
    """Which recent memories a write links to went by the rows' places in the active
    index, which a reload (automatic or not) orders otherwise: the same calls gave a
    capped engine other links (found by the review of automatic unloading). They go by
    write number now."""
    assert _links_of_a_new_memory(tmp_path / "free", None, case) == _links_of_a_new_memory(
        tmp_path / "capped", 1, case
    )


@pytest.mark.parametrize(
    "change",
    [
        {"floor_fraction": 0.3},  # every memory rebased: the namespaces are read
        {"half_lives": {"fact": 2 * DAY, "event": 9 * DAY}},  # new clock pieces only
    ],
)
def test_a_policy_switch_leaves_the_namespaces_it_read_unloaded(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    """Switching the default policy reads every namespace that follows it (to start its
    new decay there) and used to keep them all; those not loaded before go again, and
    each ends as in a twin that had them all loaded: the switch in a namespace does not
    depend on whether it was loaded. Reopening with another policy switches the same way.

    A switch of half-lives alone starts the new clock pieces of a namespace not loaded
    in the state database: it loaded each, opening its Chroma collection (about 2.6 MB
    each until the client closes: 820 MB for 300 users). Nor does a load open it now
    (the vector store is checked before its first query or write)."""
    twins = {}
    for name in ("kept", "unloaded"):
        clock = ManualClock()
        mem = Oblivion(
            tmp_path / name, embedder=HashEmbedder(), clock=clock, token_counter=word_count
        )
        for user in USERS:
            mem.remember_many(
                [f"{user} fact {i}: the shed holds tool {i}" for i in range(4)],
                namespace=user,
                ids=[f"{user}{i}" for i in range(4)],
            )
        clock.advance(3 * DAY)
        twins[name] = (mem, clock)
    kept, unloaded = twins["kept"][0], twins["unloaded"][0]
    try:
        for user in USERS:
            unloaded.unload(namespace=user)
        unloaded.recall("shed tool 1", namespace="ana")  # one in use
        kept.recall("shed tool 1", namespace="ana")
        switch = Policy.template("research-assistant").replace(**change)
        opened: set[str] = set()
        collection = unloaded.store.collection

        def recorded(namespace: str, *args: Any, **kwargs: Any) -> Any:
            opened.add(namespace)
            return collection(namespace, *args, **kwargs)

        unloaded.store.collection = recorded  # type: ignore[method-assign]
        for mem in (kept, unloaded):
            mem.set_policy(switch, reason="test")
        del unloaded.store.collection
        assert unloaded.loaded_namespaces() == ["ana"]
        assert opened == set()
        assert kept.loaded_namespaces() == sorted(USERS)
        for _, clock in twins.values():
            clock.advance(5 * DAY)
        for user in USERS:
            assert unloaded.policy_for(user) == switch
            assert _snapshot(unloaded, user) == _snapshot(kept, user), user
    finally:
        kept.close()
        unloaded.close()
    with Oblivion(tmp_path / "unloaded", embedder=HashEmbedder(), policy="support-desk") as mem:
        assert mem.loaded_namespaces() == []
        assert mem.policy_for("bo").name == "support-desk"


def test_load_reads_a_namespace_ahead_and_its_first_recalls_read_nothing_more(
    tmp_path: Path, real_embedder: Any
) -> None:
    """load() reads a namespace's state, builds its BM25 index and its archive's
    in-memory copy: the recalls after it read no texts to index and no archived vectors,
    and everything answers as without it."""
    path = tmp_path / "store"
    clock = ManualClock()
    policy = Policy.template("balanced").replace(active_capacity=3)  # some archived

    def open_store() -> Oblivion:
        return Oblivion(
            path, embedder=real_embedder, clock=clock, policy=policy, token_counter=word_count
        )

    with open_store() as mem:
        _session(mem, clock, "ns")
        mem.remember("The office is in Leeds.", namespace="other")

    def seen(ahead: bool) -> dict[str, Any]:
        # the BM25 index saved at close is read back instead of the texts
        # (test_lexical_snapshot.py): gone, so load() builds it
        shutil.rmtree(path / "lexical", ignore_errors=True)
        with open_store() as mem:
            assert mem.loaded_namespaces() == []
            reads: list[str] = []
            index_texts, vectors = mem._lex._load, mem._db.namespace_vectors

            def texts_spy(ns: str) -> Any:
                reads.append(f"texts {ns}")
                return index_texts(ns)

            def vectors_spy(ns: str, *args: Any) -> Any:
                reads.append(f"vectors {ns}")
                return vectors(ns, *args)

            mem._lex._load = texts_spy
            mem._db.namespace_vectors = vectors_spy  # type: ignore[method-assign]
            if ahead:
                assert mem.load(namespace="ns") is False
                assert mem.loaded_namespaces() == ["ns"]
                assert reads == ["vectors ns", "texts ns"]
                stats = mem.stats(namespace="ns")
                assert stats["archive"] > 0 and stats["archive_in_memory"] is True
                reads.clear()
            snapshot = _snapshot(mem, "ns")  # deep recalls among it
            assert reads == ([] if ahead else ["texts ns", "vectors ns"])
            assert mem.load(namespace="ns") is True  # loaded: nothing read again
            assert reads == ([] if ahead else ["texts ns", "vectors ns"])
            assert mem.loaded_namespaces() == ["ns"]  # "other" is not touched
            return snapshot

    assert seen(ahead=True) == seen(ahead=False)


def test_load_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    """An unknown namespace and a closed engine are errors; archive=False leaves the
    archive's copy to the first archive search."""
    path = tmp_path / "store"
    clock = ManualClock()
    policy = Policy.template("balanced").replace(active_capacity=2)
    with Oblivion(path, embedder=HashEmbedder(), clock=clock, policy=policy) as mem:
        mem.remember_many([f"note {k} about the harbour ferry" for k in range(6)])
        clock.advance(DAY)
        mem.maintain()
    mem = Oblivion(path, embedder=HashEmbedder(), clock=clock, policy=policy)
    try:
        with pytest.raises(UnknownNamespaceError, match="nowhere"):
            mem.load(namespace="nowhere")
        assert mem.loaded_namespaces() == []
        assert mem.load(archive=False) is False
        stats = mem.stats()
        assert stats["archive"] > 0 and stats["archive_in_memory"] is False
        mem.recall("harbour ferry", k=2, deep=True)
        assert mem.stats()["archive_in_memory"] is True
    finally:
        mem.close()
    with pytest.raises(InvalidInputError, match="closed"):
        mem.load()
