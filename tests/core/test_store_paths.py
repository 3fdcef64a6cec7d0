"""Arguments of VectorStore.server() and VectorStore.embedded() checked before Chroma is
asked: a port, host or folder that can never work is refused naming what to change,
not reported as a server that is not running or a damaged store. No server needed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oblivion_core import InvalidInputError, StorePathError, VectorStore, VectorStoreError


class _Connected(Exception):
    """Raised in place of chromadb.HttpClient: the arguments were let through."""


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """chromadb.HttpClient raises _Connected instead of connecting."""
    import chromadb

    def connect(**kwargs: Any) -> Any:
        raise _Connected(kwargs)

    monkeypatch.setattr(chromadb, "HttpClient", connect)


@pytest.mark.parametrize(
    ("args", "kwargs", "mentions"),
    [
        (("localhost", 70000), {}, "port must be an int from 1 to 65535"),
        (("localhost", -1), {}, "port must be an int from 1 to 65535"),
        (("localhost", 0), {}, "port must be an int from 1 to 65535"),
        (("localhost", "8000"), {}, "port must be an int"),
        (("localhost", True), {}, "port must be an int"),
        (("localhost", 8000.0), {}, "port must be an int"),
        ((None, 8000), {}, "host must be the Chroma server's host name"),
        (("", 8000), {}, "host must be the Chroma server's host name"),
        (("  ", 8000), {}, "host must be the Chroma server's host name"),
        (
            ("localhost:8000",),
            {},
            "pass the port as port=, e.g. VectorStore.server('localhost', port=8000)",
        ),
        (
            ("[::1]:8000",),
            {},
            "pass the port as port=, e.g. VectorStore.server('[::1]', port=8000)",
        ),
        (("::1", 8000), {}, "put it in brackets"),
        (("http://localhost", 8000), {}, "not a URL"),
        (("db.example.com/chroma", 8000), {}, "not a URL"),
        (("localhost", 8000), {"ssl": "yes"}, "ssl must be True (https) or False (http)"),
        (("localhost", 8000), {"prefix": "a b"}, "prefix must be letters"),
        (("localhost", 8000), {"prefix": 5}, "prefix must be letters"),
    ],
)
@pytest.mark.usefixtures("no_server")
def test_server_refuses_arguments_no_server_answers_at(
    args: tuple[Any, ...], kwargs: dict[str, Any], mentions: str
) -> None:
    """A host, port, ssl or prefix no Chroma server can answer at is an InvalidInputError
    naming it, raised before connecting (a ValueError: what was passed, not an outage)."""
    with pytest.raises(InvalidInputError) as err:
        VectorStore.server(*args, timeout=3, **kwargs)
    assert mentions in str(err.value)
    assert not isinstance(err.value, OSError)


@pytest.mark.parametrize(
    ("host", "port", "ssl"),
    [
        ("localhost", 8000, False),
        ("127.0.0.1", 1, True),
        ("[::1]", 65535, False),
        ("db.example.com", 443, True),
    ],
)
@pytest.mark.usefixtures("no_server")
def test_server_lets_good_addresses_through(host: str, port: int, ssl: bool) -> None:
    """Host names, IP addresses (IPv6 in brackets) and ports 1..65535 reach Chroma."""
    with pytest.raises(VectorStoreError, match="could not use the Chroma server") as err:
        VectorStore.server(host, port, ssl=ssl, prefix="app.1", timeout=3)
    assert isinstance(err.value.__cause__, _Connected)


def test_embedded_under_a_file_names_the_file(tmp_path: Path) -> None:
    """A folder whose parent is a file is a StorePathError naming both, not a damaged
    Chroma store to restore from a backup."""
    file = tmp_path / "afile"
    file.write_text("x")
    for where in (file / "chroma", file / "deeper" / "chroma"):
        with pytest.raises(StorePathError) as err:
            VectorStore.embedded(where)
        message = str(err.value)
        assert repr(str(where)) in message
        assert f"{str(file)!r} is a file, not a folder" in message
        assert "pass a path you can write to" in message
        assert "restore" not in message
    assert file.read_text() == "x"


def test_embedded_creates_missing_folders(tmp_path: Path) -> None:
    """A folder that does not exist yet is created with its parents."""
    where = tmp_path / "a" / "b" / "chroma"
    store = VectorStore.embedded(where)
    try:
        assert where.is_dir()
        assert store.folder == where.resolve()
    finally:
        store.close()


def test_a_store_opened_by_a_relative_path_stays_there_after_a_chdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Oblivion("./memory")``, then the process changes directory (a worker, a
    notebook's %cd): its connections and Chroma reopened "./memory" there, failing with
    a raw sqlite3 error, or reaching another store of that name. The path is made
    absolute when the store opens."""
    from oblivion_core.testing import memory

    (tmp_path / "app").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    with memory("./memory") as other:  # another store of the same name, elsewhere
        other.remember("the other store's secret", id="secret")
    monkeypatch.chdir(tmp_path / "app")
    mem = memory("./memory")
    try:
        assert mem.path == tmp_path / "app" / "memory"
        monkeypatch.chdir(tmp_path / "elsewhere")
        mem.remember("written after the chdir", id="mine")
        assert mem.recall("written after the chdir", k=5).ids == ["mine"]
    finally:
        mem.close()
    with memory(tmp_path / "app" / "memory") as reopened:
        assert [r.id for r in reopened.records()] == ["mine"]
    with memory(tmp_path / "elsewhere" / "memory") as untouched:
        assert [r.id for r in untouched.records()] == ["secret"]


def test_a_path_through_a_link_and_dot_dot_is_the_one_the_system_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Made absolute by the string, "link/../state" dropped "link/..": a new, empty store
    in the working directory instead of the one beside the link's target."""
    from oblivion_core.testing import memory

    (tmp_path / "real" / "data").mkdir(parents=True)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "link").symlink_to(tmp_path / "real" / "data")
    monkeypatch.chdir(tmp_path / "app")
    with memory("link/../state") as mem:
        mem.remember("kept beside the link's target", id="k")
    assert (tmp_path / "real" / "state" / "oblivion.sqlite3").exists()
    assert not (tmp_path / "app" / "state").exists()


def test_a_relative_path_in_a_deleted_working_directory_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release folder replaced under a running process: a bare FileNotFoundError."""
    from oblivion_core import EmbeddingError, FastEmbedEmbedder
    from oblivion_core.testing import memory

    gone = tmp_path / "release"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(StorePathError, match=r"no longer exists.*absolute path"):
        memory("./state")
    with pytest.raises(StorePathError, match="no longer exists"):
        VectorStore.embedded("./chroma")
    with pytest.raises(EmbeddingError, match="no longer exists"):
        FastEmbedEmbedder(model_path="./model")
    assert FastEmbedEmbedder("BAAI/bge-small-en-v1.5", model_path="").model_path is None
