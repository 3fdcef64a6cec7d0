"""Server mode: vectors in a real `chroma run` server, activation state on local disk."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from oblivion_core import (
    ManualClock,
    Oblivion,
    StoreConflictError,
    Tier,
    VectorStore,
    testing,
)
from oblivion_core.testing import HashEmbedder, word_count

from .test_engine_stateful import EngineMachine

pytestmark = pytest.mark.server

DAY = 86_400.0


def _open(
    path: Path,
    server: tuple[str, int],
    prefix: str = "",
    clock: ManualClock | None = None,
    timeout: float | None = 60.0,
) -> Oblivion:
    host, port = server
    return Oblivion(
        path,
        vector_store=VectorStore.server(host, port, prefix=prefix, timeout=timeout),
        clock=clock,
        embedder=HashEmbedder(),
        token_counter=word_count,
    )


def test_remember_recall_maintain_reopen(tmp_path: Path, chroma_server: tuple[str, int]) -> None:
    """Against a Chroma server, remember/recall/maintain work and a reopen sees everything."""
    prefix = uuid.uuid4().hex[:8]
    clock = ManualClock()
    mem = _open(tmp_path / "state", chroma_server, prefix, clock)
    chat = mem.remember("lovely sunny weather in Lisbon", category="small_talk", importance=0.0)
    rule = mem.remember("Always answer in British English", category="instruction")
    assert mem.store.count("default") == 2
    assert mem.recall("British English", k=1).ids == [rule.id]
    clock.advance(5 * DAY)
    plan = mem.maintain()
    assert plan.archived == [chat.id]
    assert mem.recall("sunny weather Lisbon", deep=True, k=1).ids == [chat.id]  # in memory
    mem._lock.settle()  # the recall's feedback applied before the copy is dropped
    mem._spaces["default"].archive = None
    mem.EXACT_ARCHIVE_ROWS = 0  # the archive as a big namespace searches it: the server
    mem.SKETCH_ARCHIVE_ROWS = 0
    assert mem.recall("sunny weather Lisbon", deep=True, k=1).ids == [chat.id]
    assert mem._spaces["default"].archive is None
    mem.close()

    mem = _open(tmp_path / "state", chroma_server, prefix, clock)
    try:
        assert mem.count() == 2
        assert mem.get(chat.id).tier == Tier.ARCHIVE
        again = mem.recall("British English", k=1, deep=False)
        assert again.ids == [rule.id]
        assert again[0].tier == Tier.ACTIVE
        mem.forget(chat.id)
        assert mem.store.count("default") == 1
    finally:
        mem.close()


def test_prefixes_keep_stores_apart(tmp_path: Path, chroma_server: tuple[str, int]) -> None:
    """Two Oblivion stores on one server with different prefixes never see each other."""
    clock = ManualClock()
    a = _open(tmp_path / "a", chroma_server, "app-a-" + uuid.uuid4().hex[:6], clock)
    b = _open(tmp_path / "b", chroma_server, "app-b-" + uuid.uuid4().hex[:6], clock)
    a.EXACT_ARCHIVE_ROWS = b.EXACT_ARCHIVE_ROWS = 0  # deep recall queries the server
    a.SKETCH_ARCHIVE_ROWS = b.SKETCH_ARCHIVE_ROWS = 0
    try:
        a.remember("secret of app a", id="s")
        assert b.store.count("default") == 0
        b.remember("note of app b", id="n")
        assert a.recall("note of app b", deep=True).ids == ["s"]
        assert b.recall("secret of app a", deep=True).ids == ["n"]
        assert a.store.count("default") == b.store.count("default") == 1
    finally:
        a.close()
        b.close()


def test_a_store_whose_prefix_starts_another_stores_is_its_own(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """Stores are kept apart by prefix: a new store with prefix ``p`` opens beside a
    store with prefix ``p2-`` that holds memories (it used to be refused as a store that
    lost its activation database), while a new state folder on ``p2-`` itself is still
    refused, naming the store that owns it, with advice for a server (a prefix), not for
    a chroma/ folder."""
    tag = uuid.uuid4().hex[:8]
    clock = ManualClock()
    other = _open(tmp_path / "other", chroma_server, f"{tag}2-", clock)
    other.remember("a memory of the other store")
    other.close()
    mine = _open(tmp_path / "mine", chroma_server, tag, clock)
    try:
        assert mine.count() == 0
        mine.remember("a memory of mine")
        assert mine.store.count("default") == 1
    finally:
        mine.close()
    with pytest.raises(StoreConflictError, match=r"other'\).*give each store its own prefix"):
        _open(tmp_path / "lost", chroma_server, f"{tag}2-", clock)


@pytest.mark.parametrize("first", ["remember", "recall"])
def test_a_collection_the_server_lost_is_refilled_before_recall_reads_it(
    tmp_path: Path, chroma_server: tuple[str, int], first: str
) -> None:
    """The server lost its data while the store was open: the collection made again was
    empty, and recall through Chroma missed every archived memory until a reopen."""
    import chromadb

    prefix = f"t{uuid.uuid4().hex[:8]}-"
    clock = ManualClock()
    mem = _open(tmp_path / "state", chroma_server, prefix, clock)
    mem.EXACT_ARCHIVE_ROWS = 0  # an archive past the in-memory size: searched on the server
    mem.SKETCH_ARCHIVE_ROWS = 0
    try:
        old = mem.remember("the spare key is under the blue flower pot", category="small_talk")
        mem.remember_many([f"note {i} about the quarterly budget" for i in range(5)])
        clock.advance(10 * DAY)
        assert old.id in mem.maintain().archived
        other = chromadb.HttpClient(host=chroma_server[0], port=chroma_server[1])
        (name,) = [c.name for c in other.list_collections() if c.name.startswith(prefix)]
        other.delete_collection(name)
        if first == "remember":
            mem.remember("the offsite is in Lisbon")
        found = mem.recall("where is the spare key", deep=True, k=1, feedback=False)
        assert found.ids == [old.id]
        assert mem.store.count(mem.default_namespace) == mem.count()
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}
    finally:
        mem.close()


def test_a_collection_dropped_on_the_server_is_made_again(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """The store kept its handle of a collection dropped on the server, and every later
    write, deep recall and repair failed with NotFoundError until it was reopened."""
    import chromadb

    prefix = f"t{uuid.uuid4().hex[:8]}-"
    clock = ManualClock()
    mem = _open(tmp_path / "state", chroma_server, prefix, clock)
    try:
        ids = [r.id for r in mem.remember_many([f"note {i} about the budget" for i in range(5)])]
        other = chromadb.HttpClient(host=chroma_server[0], port=chroma_server[1])
        (name,) = [c.name for c in other.list_collections() if c.name.startswith(prefix)]
        other.delete_collection(name)
        new = mem.remember("the offsite is in Lisbon").id
        assert mem.repair_vector_store() == {"put_back": 5, "removed": 0}
        assert mem.store.ids(mem.default_namespace) == {*ids, new}
        assert mem.recall("Lisbon offsite", deep=True).ids[0] == new
    finally:
        mem.close()


def test_the_bm25_index_is_saved_beside_the_local_state(
    tmp_path: Path, chroma_server: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With vectors on a server, the saved BM25 index lives in the local state folder
    and is read back on the next open, while the server is queried for the archive."""
    monkeypatch.setattr(Oblivion, "LEXICAL_SNAPSHOT_DOCUMENTS", 4)
    prefix = uuid.uuid4().hex[:8]
    clock = ManualClock()
    texts = [f"note {k} about the harbour ferry timetable" for k in range(6)]
    with _open(tmp_path / "state", chroma_server, prefix, clock) as mem:
        ids = [r.id for r in mem.remember_many([*texts, "Lisbon flight on Friday"])]
        before = mem.recall("Lisbon flight", k=1, feedback=False).ids
    assert before == [ids[-1]]
    assert len(list((tmp_path / "state" / "lexical").glob("*.npz"))) == 1
    with _open(tmp_path / "state", chroma_server, prefix, clock) as mem:
        built: list[str] = []
        load = mem._lex._load
        mem._lex._load = lambda ns: (built.append(ns), load(ns))[1]
        mem.EXACT_ARCHIVE_ROWS = mem.SKETCH_ARCHIVE_ROWS = 0  # the archive from the server
        clock.advance(60 * DAY)
        assert mem.maintain().ids("archive")  # an archive to search (an empty one is not)
        found = mem.recall("Lisbon flight", k=1, deep=True, feedback=False)
        assert found.ids == before and found.searched_archive
        assert mem.stats()["archive_search"] == "chroma"
        assert built == []  # read back from the state folder


def test_the_engines_state_machine_through_a_server(chroma_server: tuple[str, int]) -> None:
    """The engine's state machine test (``test_engine_stateful.py``) with its vectors in
    a real ``chroma run`` server: every invariant holds there too, reopens and moves
    between prefixes included."""
    host, port = chroma_server

    class ServerMachine(EngineMachine):
        def __init__(self) -> None:
            super().__init__()
            self.prefix = f"machine-{uuid.uuid4().hex[:8]}-"  # a store of its own

        def _vector_store(self) -> VectorStore:  # a move: another prefix on the server
            return VectorStore.server(host, port, prefix=f"{self.prefix}{self.place}-")

    run_state_machine_as_test(
        ServerMachine,
        settings=settings(
            max_examples=8,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


def test_the_testing_helper_runs_a_server_and_stops_it(tmp_path: Path) -> None:
    """``oblivion_core.testing.chroma_server`` (what these tests run on) yields a server
    that answers, with its data and log under the folder given, and stops it on exit."""
    with testing.chroma_server(tmp_path / "srv") as (host, port, proc):
        mem = Oblivion(
            tmp_path / "state",
            vector_store=VectorStore.server(host, port),
            embedder=HashEmbedder(),
            token_counter=word_count,
        )
        mem.remember("the server answers")
        assert mem.store.count("default") == 1
        mem.close()
        assert (tmp_path / "srv" / "server.log").exists()
    assert proc.poll() is not None


def test_a_deep_recall_of_an_all_active_store_answers_with_the_server_down(
    tmp_path: Path,
) -> None:
    """A young store holds every memory in its active tier: a deep recall (the
    LangGraph store's default) has no archive to ask, so a Chroma server that is down
    does not fail it."""
    clock = ManualClock()
    with testing.chroma_server(tmp_path / "srv") as (host, port, proc):
        mem = _open(tmp_path / "state", (host, port), "app", clock)
        mem.remember_many([f"fact {i} about cats" for i in range(30)])
        proc.kill()
        proc.wait()
        assert len(mem.recall("cats", k=3, deep=True)) == 3
        mem.close()


@pytest.mark.parametrize("broken", ["missing", "exits"])
def test_the_testing_helper_says_why_no_server_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """No ``chroma`` command, or one that exits at once: a clear error, not a hang."""
    exits = tmp_path / "chroma"
    exits.write_text("#!/bin/sh\necho 'cannot bind' >&2\nexit 3\n")
    exits.chmod(0o755)
    monkeypatch.setattr(
        testing, "chroma_binary", lambda: None if broken == "missing" else str(exits)
    )
    error = FileNotFoundError if broken == "missing" else RuntimeError
    says = "comes with the chromadb package" if broken == "missing" else "code 3: cannot bind"
    with pytest.raises(error, match=says), testing.chroma_server(tmp_path / "srv"):
        pass


def test_a_server_that_stops_answering_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """A server that stops answering (a stalled host, a network partition: here the
    process is stopped) held remember() for ever, and with it the engine's lock, so
    every other call of every thread waited too. With ``timeout=`` the call fails
    with a VectorStoreError saying so, the engine goes on, nothing stored is lost, and
    the records agree again once the server answers."""
    import os
    import signal

    from oblivion_core import VectorStoreError

    with testing.chroma_server(tmp_path / "srv") as (host, port, proc):
        mem = _open(tmp_path / "state", (host, port), timeout=1.0)
        mem.remember("written before the stall", id="a")
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(VectorStoreError, match="did not answer in time"):
                mem.remember("written during the stall", id="b")
            assert [r.id for r in mem.records()] == ["a"]  # other calls answer
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        mem.remember("written after it", id="c")
        mem.repair_vector_store()  # the stalled request may have landed late
        assert sorted(mem.store.ids("default")) == ["a", "c"]
        mem.close()


def test_a_server_that_never_answers_while_the_client_is_made_is_an_error(
    tmp_path: Path,
) -> None:
    """Chroma's client asks the server for its tenant and database while it is made,
    with no timeout: a host that accepts the connection and never answers (here a
    socket nobody reads, then a stopped ``chroma run``) held ``VectorStore.server()``
    for ever. It now fails within ``timeout=`` with a VectorStoreError, and no local
    state is made."""
    import os
    import signal
    import socket

    from oblivion_core import VectorStoreError

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        with pytest.raises(VectorStoreError, match=r"did not answer within 0\.5 s"):
            VectorStore.server("127.0.0.1", port, timeout=0.5)
    with testing.chroma_server(tmp_path / "srv") as (host, port, proc):
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            with pytest.raises(VectorStoreError, match="did not answer within"):
                Oblivion(
                    tmp_path / "state",
                    vector_store=VectorStore.server(host, port, timeout=1.0),
                    embedder=HashEmbedder(),
                )
            assert not (tmp_path / "state").exists()
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        mem = _open(tmp_path / "state", (host, port), timeout=1.0)
        mem.remember("the server answers again", id="a")
        assert [item.id for item in mem.recall("server answers", k=1)] == ["a"]
        mem.close()


def test_a_call_asks_a_stalled_server_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the server stalled, a recall through Chroma sent five requests (a count, two
    put-backs, a count, the query), each waiting the whole ``timeout=``, while holding
    the engine's lock: five times the wait the README promises. After one request of a
    call times out, the call's next ones fail at once; the next call asks again, and
    once the server answers everything is put right."""
    import os
    import signal

    import httpx

    from oblivion_core import VectorStoreError

    monkeypatch.setattr(Oblivion, "EXACT_ARCHIVE_ROWS", 0)  # the archive through Chroma
    monkeypatch.setattr(Oblivion, "SKETCH_ARCHIVE_ROWS", 0)
    sent: list[str] = []
    send = httpx.Client.send

    def counted(client: httpx.Client, request: httpx.Request, **kw: Any) -> httpx.Response:
        sent.append(request.url.path.rsplit("/", 1)[-1])
        return send(client, request, **kw)

    monkeypatch.setattr(httpx.Client, "send", counted)
    clock = ManualClock()
    with testing.chroma_server(tmp_path / "srv") as (host, port, proc):
        mem = _open(tmp_path / "state", (host, port), clock=clock, timeout=1.0)
        ids = mem.remember_many([f"fact {i} about owls" for i in range(20)])
        clock.advance(60 * 86_400)
        assert mem.maintain().archived
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            for call in (
                lambda: mem.remember("a late write about owls"),
                lambda: mem.forget(ids[3].id),
                lambda: mem.recall("owls", k=2, deep=True),
                lambda: mem.recall("owls", k=2, deep=True),
            ):
                sent.clear()
                with pytest.raises(VectorStoreError, match="did not answer in time"):
                    call()
                assert len(sent) == 1, sent
        finally:
            os.kill(proc.pid, signal.SIGCONT)
        assert len(mem.recall("owls", k=2, deep=True)) == 2
        mem.repair_vector_store()
        assert mem.store.ids("default") == {r.id for r in mem.records()}
        assert mem.count() == 20
        mem.close()


def test_a_database_the_server_lost_is_named_with_the_way_to_make_it_again(
    tmp_path: Path,
) -> None:
    """The server lost the tenant's database the store lives in (its data wiped, or the
    database deleted) while the store was open: the error said the disk may be full or
    the Chroma store damaged. It now names the database and how to make it again, and
    once it is made the open store puts its memories back."""
    import chromadb
    from chromadb.config import Settings

    from oblivion_core import VectorStoreError

    with testing.chroma_server(tmp_path / "srv") as (host, port, _):
        admin = chromadb.AdminClient(
            Settings(
                chroma_api_impl="chromadb.api.fastapi.FastAPI",
                chroma_server_host=host,
                chroma_server_http_port=port,
            )
        )
        admin.create_tenant("acme")
        admin.create_database("db1", tenant="acme")
        mem = Oblivion(
            tmp_path / "state",
            vector_store=VectorStore.server(host, port, tenant="acme", database="db1"),
            embedder=HashEmbedder(),
            token_counter=word_count,
        )
        mem.remember_many([f"fact {i} about tea" for i in range(5)])
        admin.delete_database("db1", tenant="acme")
        for call in (lambda: mem.remember("after the loss"), mem.repair_vector_store):
            with pytest.raises(VectorStoreError, match=r"no database 'db1'.*AdminClient"):
                call()
        assert mem.count() == 5
        admin.create_database("db1", tenant="acme")
        assert mem.repair_vector_store()["put_back"] == 5
        assert mem.store.count("default") == 5
        mem.close()


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan"), "60", True])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(timeout: object) -> None:
    """Refused before the server is asked anything (none listens here)."""
    from oblivion_core import InvalidInputError

    with pytest.raises(InvalidInputError, match="timeout must be a number of seconds"):
        VectorStore.server("localhost", 1, timeout=timeout)  # type: ignore[arg-type]


def test_a_stopped_server_is_named_as_unreachable_not_as_a_damaged_store(
    tmp_path: Path,
) -> None:
    """With the server stopped, a write said to check the disk's free space and, if it
    kept failing, to drop the collection on the server: wrong advice for a server that
    is only down (a drop makes the next start copy every memory again). It now says the
    server could not be reached, and the engine works again once it runs."""
    from oblivion_core import VectorStoreError

    with testing.chroma_server(tmp_path / "srv") as (host, port, proc):
        mem = _open(tmp_path / "state", (host, port))
        mem.remember("written while the server runs", id="a")
        proc.kill()
        proc.wait()
        with pytest.raises(VectorStoreError) as raised:
            mem.remember("written while it is down", id="b")
        said = str(raised.value)
        assert f"could not reach the Chroma server at {host}:{port}" in said
        assert "Start the server" in said and "nothing already stored is lost" in said
        assert "free space" not in said and "drop the collection" not in said
        assert [r.id for r in mem.records()] == ["a"]
        mem.close()


@pytest.mark.parametrize("name", ["tenant", "database"])
def test_a_tenant_or_database_name_the_server_refuses_is_named(
    chroma_server: tuple[str, int], name: str
) -> None:
    """A database name under 3 characters was reported as a server not running ("start
    it (`chroma run --port ...`)") while it ran: the name is what to change."""
    from oblivion_core import VectorStoreError

    host, port = chroma_server
    with pytest.raises(VectorStoreError) as raised:
        VectorStore.server(host, port, **{name: "db"}, timeout=10.0)  # type: ignore[arg-type]
    said = str(raised.value)
    assert "start it" not in said, said
    assert "db" in said and ("refused the tenant or database name" in said or "no such" in said)


def test_a_batch_larger_than_a_server_request_is_written_in_parts(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """A server refuses a request body over about 40 MiB ("Payload too large"), and
    writes were cut by record count only (5,461 here): 3,000 texts with 3,072-d vectors
    (49 MB as base64) failed every time, and so did moving such a store to a server. They
    go in parts now, each record once, and the collection holds every one."""
    host, port = chroma_server
    prefix = f"big-{uuid.uuid4().hex[:8]}"
    server = VectorStore.server(host, port, prefix=prefix, timeout=120.0)
    texts = [f"note {i} about the garden shed and its {i % 97} flower pots" for i in range(3_000)]
    with Oblivion(
        tmp_path / "mem",
        vector_store=server,
        embedder=HashEmbedder(dim=3_072),
        token_counter=word_count,
    ) as mem:
        ids = [r.id for r in mem.remember_many(texts, categories=["fact"] * len(texts))]
        assert mem.count() == 3_000
        assert server.ids("default") == set(ids)
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}


def test_compacting_a_store_on_a_server_rebuilds_its_collections(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """On a server, compact_vector_store() makes each collection again from the
    activation database (a forgotten memory's record no longer in it, marked or not) and
    leaves the server's files to it."""
    prefix = f"cmp-{uuid.uuid4().hex[:8]}"
    with _open(tmp_path / "mem", chroma_server, prefix=prefix) as mem:
        kept = [r.id for r in mem.remember_many([f"garden note {i}" for i in range(12)])]
        gone = mem.remember("the door code is 4711")
        mem.forget(gone.id)
        report = mem.compact_vector_store()
        assert (report.records, report.folders_removed, report.vacuumed) == (12, 0, False)
        assert report.files == "server"
        assert "left to it" in str(report)
        assert mem.store.ids("default") == set(kept)
        assert len(mem.recall("garden note", k=3, deep=True, feedback=False)) == 3
