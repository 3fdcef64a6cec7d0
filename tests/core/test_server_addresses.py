"""A Chroma server as deployed: behind a gateway (nginx, an ingress) that
answers 502/503 while the server is down and 504 after its own wait when it stalls; the
same server reached under another address (``localhost`` and ``127.0.0.1``, a DNS alias,
a Docker name), which is no move; and addresses where no Chroma server answers. Real
``chroma run`` servers and real HTTP servers throughout."""

from __future__ import annotations

import http.client
import logging
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from oblivion_core import ManualClock, Oblivion, VectorStore, VectorStoreError
from oblivion_core.state import StateDB
from oblivion_core.testing import memory

from .test_store_move import OFFICE, _assert_holds_the_state, _records, _write

pytestmark = pytest.mark.server

#: What nginx answers, by status, when its upstream is down (502), when it has none (503,
#: an ingress with no ready pod) and when it gave up waiting for it (504).
PAGES = {
    502: b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>"
    b"502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n"
    b"</html>\r\n",
    503: b"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n"
    b"<body>\r\n<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n<hr>"
    b"<center>nginx</center>\r\n</body>\r\n</html>\r\n",
    504: b"<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n<body>\r\n<center>"
    b"<h1>504 Gateway Time-out</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n"
    b"</body>\r\n</html>\r\n",
    404: b'<!DOCTYPE HTML>\n<html lang="en">\n<head>\n<title>Error response</title>\n'
    b"</head>\n<body>\n<h1>Error response</h1>\n<p>Error code: 404</p>\n</body>\n</html>\n",
}
_HOP = {"host", "connection", "content-length", "transfer-encoding", "accept-encoding"}


class Gateway:
    """A reverse proxy as nginx is: forwards to ``localhost:upstream`` while
    :attr:`status` is ``None``; else answers every request with that status and
    :attr:`page` (nginx's page for it by default), after :attr:`wait` seconds (a
    gateway waiting for a stalled upstream). :attr:`hits` counts the requests."""

    def __init__(self, upstream: int | None = None) -> None:
        self.upstream = upstream
        self.status: int | None = None if upstream else 502
        self.page: bytes | None = None
        self.wait = 0.0
        self.hits = 0
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                gateway.hits += 1
                if gateway.status is not None:
                    time.sleep(gateway.wait)
                    page = PAGES.get(gateway.status, b"") if gateway.page is None else gateway.page
                    kind = [("Content-Type", "text/html")] if page else []
                    self._send(gateway.status, kind, page)
                    return
                ahead = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                conn = http.client.HTTPConnection("localhost", gateway.upstream, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=ahead)
                    answer = conn.getresponse()
                    data = answer.read()
                finally:
                    conn.close()
                back = [(k, v) for k, v in answer.getheaders() if k.lower() not in _HOP]
                self._send(answer.status, back, data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

        self._server = ThreadingHTTPServer(("localhost", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])

    @contextmanager
    def running(self) -> Iterator[Gateway]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join(timeout=10)


@pytest.fixture
def gateway(chroma_server: tuple[str, int]) -> Iterator[Gateway]:
    """The shared server behind a gateway."""
    with Gateway(chroma_server[1]).running() as running:
        yield running


def _through(path: Path, gw: Gateway, clock: ManualClock | None = None, **kw: Any) -> Oblivion:
    prefix = "gw-" + uuid.uuid4().hex[:8] + "-"
    store = VectorStore.server("localhost", gw.port, prefix=prefix, **kw)
    return memory(path, vector_store=store, clock=clock or ManualClock())


def _archived(mem: Oblivion, clock: ManualClock, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Five memories, archived: a deep recall then queries Chroma."""
    monkeypatch.setattr(Oblivion, "EXACT_ARCHIVE_ROWS", 0)
    monkeypatch.setattr(Oblivion, "SKETCH_ARCHIVE_ROWS", 0)
    ids = mem.remember_many(
        [f"Note {i}: the {w} is in the shed." for i, w in enumerate(["bike", "drill", "saw"])],
        categories=["event"] * 3,
    )
    clock.advance(90 * 86_400)
    assert mem.maintain().archived
    return [r.id for r in ids]


def _no_page(said: str) -> None:
    """An error or log line quotes no page: no markup, one line."""
    assert not re.search(r"<\s*[a-zA-Z!/]", said), said  # no tag
    assert "\n" not in said and "\r" not in said, said
    assert "()" not in said, said


# ---------------------------------------------------------------- a gateway


@pytest.mark.parametrize("status", [502, 503])
def test_a_gateway_whose_server_is_down_is_an_outage_not_a_damaged_store(
    tmp_path: Path,
    gateway: Gateway,
    status: int,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The gateway answering 502/503 for a server that is down: the errors said Chroma
    failed, pasted the gateway's whole HTML page and advised checking the disk or
    dropping the collection; the once-per-outage warning carried the page too. Now they
    name the gateway's answer by its title and say the server behind it is down."""
    clock = ManualClock()
    mem = _through(tmp_path / "state", gateway, clock)
    try:
        ids = _archived(mem, clock, monkeypatch)
        gateway.status = status
        caplog.set_level(logging.WARNING, logger="oblivion_core")
        for call in (
            lambda: mem.remember("The kayak is in the loft."),
            lambda: mem.recall("where is the saw", deep=True, k=2),
            lambda: mem.forget(ids[0]),
        ):
            with pytest.raises(VectorStoreError) as raised:
                call()
            said = str(raised.value)
            _no_page(said)
            title = PAGES[status].split(b"<title>")[1].split(b"</title>")[0].decode()
            assert f"the gateway in front of the Chroma server answered {title}" in said
            assert "down or unreachable" in said
            assert "free space" not in said and "drop the collection" not in said
            assert "nothing already stored is lost" in said
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warned) == 1, warned  # once per outage
        _no_page(warned[0])
        assert title in warned[0]
        gateway.status = None
        assert mem.recall("where is the saw", deep=True, k=1).texts == [
            "Note 2: the saw is in the shed."
        ]
        mem.remember("The kayak is in the loft.")
        assert mem.store.count("default") == mem.count() == 4
    finally:
        gateway.status = None
        mem.close()


def test_a_gateway_time_out_stalls_the_call_once(
    tmp_path: Path, gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stalled server behind a gateway: the gateway waits, then answers 504. Each
    request of a call waited for it again, with the engine's lock held (a recall through
    Chroma sent four); the "a call waits once" rule fired on client timeouts only. A 504
    now stalls the call as a timeout does, and is named as the gateway's time-out."""
    clock = ManualClock()
    mem = _through(tmp_path / "state", gateway, clock)
    try:
        ids = _archived(mem, clock, monkeypatch)
        gateway.status, gateway.wait = 504, 0.3
        for call in (
            lambda: mem.remember("The kayak is in the loft.", category="event"),
            lambda: mem.edit(ids[1], "Note 1: the drill is in the van."),
            lambda: mem.recall("where is the saw", deep=True, k=2),
            lambda: mem.recall("where is the saw", deep=True, k=2),
        ):
            before = gateway.hits
            with pytest.raises(VectorStoreError) as raised:
                call()
            assert gateway.hits - before == 1, gateway.hits - before
            said = str(raised.value)
            _no_page(said)
            assert (
                "the gateway in front of the Chroma server answered 504 Gateway Time-out: "
                "the server behind it is not answering"
            ) in said
        gateway.status = None
        assert len(mem.recall("where is the saw", deep=True, k=2)) == 2
        mem.repair_vector_store()
        assert mem.store.ids("default") == {r.id for r in mem.records()}
    finally:
        gateway.status = None
        mem.close()


@pytest.mark.parametrize("status", [502, 503, 504])
def test_opening_through_a_gateway_whose_server_is_down_names_the_gateway(
    status: int,
) -> None:
    """At open, the gateway's page was pasted and the advice was to start a server on
    the gateway's port (`chroma run --port <the gateway's>`)."""
    with Gateway().running() as gw:
        gw.status = status
        with pytest.raises(VectorStoreError) as raised:
            VectorStore.server("localhost", gw.port, timeout=5)
    said = str(raised.value)
    _no_page(said)
    assert f"the gateway at localhost:{gw.port} answered {status} " in said
    assert "chroma run" not in said
    if status == 504:
        assert "the server behind it is not answering" in said
    else:
        assert "down or unreachable" in said


# ---------------------------------------------------------------- wrong addresses


def test_a_host_name_that_does_not_resolve_is_named() -> None:
    """The chain holds a ``gaierror``: the error said "Could not connect to a Chroma
    server" and to start one."""
    with pytest.raises(VectorStoreError) as raised:
        VectorStore.server("no-such-host.invalid", 8000, timeout=5)
    said = str(raised.value)
    assert "the host name 'no-such-host.invalid' could not be resolved" in said
    assert "chroma run" not in said


@pytest.mark.parametrize("page", [PAGES[404], b""], ids=["html", "empty"])
def test_another_http_service_at_the_port_is_no_chroma_server(page: bytes) -> None:
    """Another HTTP service (a web server, an older chromadb) answers 404 to Chroma's
    API v2: the error pasted its page (or, empty, said "()") and said to start a
    server."""
    with Gateway().running() as other:
        other.status, other.page = 404, page
        with pytest.raises(VectorStoreError) as raised:
            VectorStore.server("localhost", other.port, timeout=5)
    said = str(raised.value)
    _no_page(said)
    assert (
        f"something answers at localhost:{other.port} but it is not a Chroma server "
        "speaking API v2 (chromadb >= 1.0)"
    ) in said
    assert "chroma run" not in said


@pytest.mark.parametrize("status", [200, 500])
def test_a_web_page_at_the_port_is_named_not_pasted(status: int) -> None:
    """A web app answering 200 with a page (a captive portal, a dev server on Chroma's
    usual port) or 500 with one was told to start Chroma there, with a JSON parser's
    complaint or the page's status in brackets."""
    with Gateway().running() as other:
        other.status, other.page = status, PAGES[404]
        with pytest.raises(VectorStoreError) as raised:
            VectorStore.server("localhost", other.port, timeout=5)
    said = str(raised.value)
    _no_page(said)
    assert "chroma run" not in said
    if status == 200:
        assert f"something answers at localhost:{other.port} but it is not a Chroma server" in said
    else:
        assert f"the server at localhost:{other.port} answered 500" in said


# ---------------------------------------------------------------- aliases


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of records each ``VectorStore.add`` writes."""
    sizes: list[int] = []
    add = VectorStore.add

    def counted(self: VectorStore, namespace: str, ids: Any, *args: Any, **kw: Any) -> None:
        sizes.append(len(ids))
        add(self, namespace, ids, *args, **kw)

    monkeypatch.setattr(VectorStore, "add", counted)
    return sizes


def _written_at_localhost(tmp_path: Path, server: tuple[str, int]) -> tuple[int, str, Path]:
    """A store written on the shared server as ``localhost``, under a prefix of its own:
    (port, prefix, state folder)."""
    _, port = server
    prefix = "alias-" + uuid.uuid4().hex[:8] + "-"
    state = tmp_path / "state"
    with memory(state, vector_store=VectorStore.server("localhost", port, prefix=prefix)) as mem:
        _write(mem)
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 0, "removed": 0}
    return port, prefix, state


def _use_all(mem: Oblivion) -> dict[str, int]:
    """Every namespace used as a client does: a write (default) and a check (dana, what
    it put back returned)."""
    mem.remember("the printer code is 4521")
    return mem.repair_vector_store(namespace="dana")


def test_the_same_server_under_another_address_copies_nothing(
    tmp_path: Path,
    chroma_server: tuple[str, int],
    written: list[int],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``localhost`` and ``127.0.0.1`` reach one server: switching counted as a move and
    every namespace's memories were written again (2,000 memories: 0.8 s -> 3.7 s per
    switch). The collection found there is the one the store kept (Chroma's id for it),
    so nothing is copied, and nothing is said above INFO."""
    port, prefix, state = _written_at_localhost(tmp_path, chroma_server)
    caplog.set_level(logging.INFO, logger="oblivion_core")
    for host in ("127.0.0.1", "localhost", "127.0.0.1"):
        written.clear()
        server = VectorStore.server(host, port, prefix=prefix)
        with memory(state, vector_store=server) as mem:
            assert _use_all(mem) == {"put_back": 0, "removed": 0}
            assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}
            assert mem._db.meta(StateDB.VECTOR_STORE_COPYING) == []
            for namespace in ("default", "dana"):
                _assert_holds_the_state(mem, server, namespace)
        assert written == [1], (host, written)
        assert not [r for r in caplog.records if r.getMessage().startswith("copying the")]
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_copy_an_earlier_move_left_is_rewritten_under_another_address(
    tmp_path: Path, chroma_server: tuple[str, int], written: list[int]
) -> None:
    """On disk, then the server as ``localhost``, back on disk (an edit, a forget, a new
    memory), then the server as ``127.0.0.1``: the collection there is the copy the
    first move left, not the one the store kept last, so it is written again. A namespace
    not used on disk in between was kept in step by that copy: nothing to write."""
    _, port = chroma_server
    prefix = "alias-" + uuid.uuid4().hex[:8] + "-"
    state, first = tmp_path / "state", VectorStore.embedded(tmp_path / "first")
    with memory(state, vector_store=first) as mem:
        _write(mem)
        edited, gone = mem.records()[:2]
    with memory(state, vector_store=VectorStore.server("localhost", port, prefix=prefix)) as mem:
        _use_all(mem)
    with memory(state, vector_store=first) as mem:
        mem.edit(edited.id, "the spare key moved to the blue box")
        mem.forget(gone.id)
        added = mem.remember("the garage code is 7788")
    written.clear()
    server = VectorStore.server("127.0.0.1", port, prefix=prefix)
    assert gone.id in _records(server, "default")  # the stale copy
    with memory(state, vector_store=server) as mem:
        assert mem.repair_vector_store()["put_back"] == len(OFFICE) + 1
        # dana, not used on disk in between, is still what the server's copy holds
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 0, "removed": 0}
        _assert_holds_the_state(mem, server, "default")
        _assert_holds_the_state(mem, server, "dana")
        assert _records(server, "default")[edited.id][1] == "the spare key moved to the blue box"
        assert mem.recall("garage code", k=1).ids == [added.id]


def test_an_address_switch_a_process_left_unfinished_is_finished_without_a_copy(
    tmp_path: Path, chroma_server: tuple[str, int], written: list[int]
) -> None:
    """Switched to ``127.0.0.1`` and closed (or killed) before ``dana`` was used: the
    list of namespaces to check is kept in the state database, and the next process
    finds ``dana``'s collection is the one kept before: nothing is copied."""
    port, prefix, state = _written_at_localhost(tmp_path, chroma_server)
    written.clear()
    with memory(state, vector_store=VectorStore.server("127.0.0.1", port, prefix=prefix)) as mem:
        mem.remember("the printer code is 4521")
        assert mem._db.meta(StateDB.VECTOR_STORE_COPYING) == ["dana"]
    with memory(state, vector_store=VectorStore.server("127.0.0.1", port, prefix=prefix)) as mem:
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 0, "removed": 0}
        assert mem._db.meta(StateDB.VECTOR_STORE_COPYING) == []
    assert written == [1]


def test_a_real_move_is_a_warning_naming_both_places(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A move to another vector store copies every memory: said at WARNING, with where
    the vectors were and where they are now (it was INFO)."""
    first = VectorStore.embedded(tmp_path / "first")
    with memory(tmp_path / "state", vector_store=first) as mem:
        _write(mem)
    caplog.set_level(logging.INFO, logger="oblivion_core")
    second = VectorStore.embedded(tmp_path / "second")
    with memory(tmp_path / "state", vector_store=second) as mem:
        _use_all(mem)
    (moved,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    said = moved.getMessage()
    assert f"kept in {first.location}" in said and f"now are in {second.location}" in said


def test_a_chroma_folder_moved_whole_keeps_its_collections(
    tmp_path: Path, written: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    """An embedded vector store's folder moved elsewhere (and given at its new path)
    holds the very collections the store kept: nothing is copied."""
    first = VectorStore.embedded(tmp_path / "first")
    with memory(tmp_path / "state", vector_store=first) as mem:
        _write(mem)
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 0, "removed": 0}
    first.close()
    shutil.move(tmp_path / "first", tmp_path / "moved")
    written.clear()
    caplog.set_level(logging.INFO, logger="oblivion_core")
    moved = VectorStore.embedded(tmp_path / "moved")
    with memory(tmp_path / "state", vector_store=moved) as mem:
        assert _use_all(mem) == {"put_back": 0, "removed": 0}
        assert mem.recall("Porto", namespace="dana", k=1).texts == ["Dana's sister lives in Porto"]
        _assert_holds_the_state(mem, moved, "default")
    assert written == [1]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_backup_opened_on_the_originals_server_address_is_still_copied(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """A backup holds the original's record of its collections; opened in the original's
    place (its server, its prefix) once the original is gone, the collection there is
    the original's, newer than the backup: every memory of the backup is written."""
    _, port = chroma_server
    prefix = "alias-" + uuid.uuid4().hex[:8] + "-"
    original = VectorStore.server("localhost", port, prefix=prefix)
    with memory(tmp_path / "state", vector_store=original) as mem:
        _write(mem)
        assert mem.repair_vector_store(namespace="dana") == {"put_back": 0, "removed": 0}
        mem.backup(tmp_path / "bk")
        edited = next(r for r in mem.records() if r.text == OFFICE[0])
        mem.edit(edited.id, "the spare key moved to the blue box")
    shutil.rmtree(tmp_path / "state")
    server = VectorStore.server("localhost", port, prefix=prefix)
    with memory(tmp_path / "bk", vector_store=server) as mem:
        assert mem.repair_vector_store()["put_back"] == len(OFFICE)
        _assert_holds_the_state(mem, server, "default")
        assert _records(server, "default")[edited.id][1] == OFFICE[0]


class _Killed(BaseException):
    """A process stopped where it is raised (no ``except Exception`` handles it)."""


@pytest.mark.parametrize("cut_short", [False, True])
def test_a_copy_of_chromas_files_behind_on_edits_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut_short: bool
) -> None:
    """A copy of Chroma's files (a chroma/ folder copied, a server's data restored on
    another host) keeps the collections' ids; edits made after the copy leave its count
    as it was. Opened as another place, it was taken as the collections kept before,
    a sample of 8 vectors missing the stale ones: recall searched old texts. Every record
    is compared now, and a copy cut short (its record dropped first) is finished."""
    from oblivion_core import vector_sync

    first = VectorStore.embedded(tmp_path / "first")
    with memory(tmp_path / "state", vector_store=first) as mem:
        mem.remember_many([f"fact number {i} about topic{i}" for i in range(40)])
        ids = [r.id for r in mem.records()]
        assert mem.repair_vector_store() == {"put_back": 0, "removed": 0}
    first.close()
    shutil.copytree(tmp_path / "first", tmp_path / "copy")
    first = VectorStore.embedded(tmp_path / "first")
    with memory(tmp_path / "state", vector_store=first) as mem:
        for i in (3, 17, 29):  # edits only: the count stays
            mem.edit(ids[i], f"kettle{i} marmalade{i} walrus{i}")
        mem.edit(ids[5], category="instruction")
    first.close()
    if cut_short:  # the copy fails after its first batch
        monkeypatch.setattr(vector_sync, "COPY_BATCH", 5)
        put_back = vector_sync.VectorSync.put_back
        calls = [0]

        def failing(self: Any, *args: Any, **kw: Any) -> Any:
            calls[0] += 1
            if calls[0] == 2:
                raise _Killed  # as a process killed there: no handler runs
            return put_back(self, *args, **kw)

        monkeypatch.setattr(vector_sync.VectorSync, "put_back", failing)
        copy = VectorStore.embedded(tmp_path / "copy")
        with memory(tmp_path / "state", vector_store=copy) as mem, pytest.raises(_Killed):
            mem.repair_vector_store()
        copy.close()
        monkeypatch.setattr(vector_sync.VectorSync, "put_back", put_back)
    copy = VectorStore.embedded(tmp_path / "copy")
    with memory(tmp_path / "state", vector_store=copy) as mem:
        mem.repair_vector_store()
        _assert_holds_the_state(mem, copy, "default")
    copy.close()
