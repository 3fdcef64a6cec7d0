"""Each collection records the Oblivion store that owns it: two stores pointed at one
vector store (one prefix on a server, one chroma folder, one VectorStore object) are
refused instead of reading, and deleting from, each other's records."""

from __future__ import annotations

import shutil
import socket
import sqlite3
import uuid
from pathlib import Path

import pytest

from oblivion_core import (
    Oblivion,
    StoreConflictError,
    StoreCorruptError,
    VectorStore,
)
from oblivion_core.store import collection_name
from oblivion_core.testing import memory


def _open(path: Path, store: VectorStore) -> Oblivion:
    return memory(path, vector_store=store)


def test_a_second_store_on_the_same_collections_is_refused_and_harms_nothing(
    tmp_path: Path,
) -> None:
    """Both stores open while empty; the first to write owns the namespace's collection.
    The second's write is refused (its own state unchanged), and the first's repair finds
    nothing foreign to delete."""
    shared = tmp_path / "chroma"
    a = _open(tmp_path / "a", VectorStore.embedded(shared))
    b = _open(tmp_path / "b", VectorStore.embedded(shared))
    try:
        kept = a.remember("the deploy key lives in the vault", id="a1")
        with pytest.raises(StoreConflictError, match=r"another Oblivion store.*own\s+prefix"):
            b.remember("the office opens at nine", id="b1")
        assert b.count() == 0
        assert b.records() == []
        assert a.repair_vector_store() == {"put_back": 0, "removed": 0}
        assert a.store.ids("default") == {kept.id}
        assert a.recall("deploy key", k=1).ids == [kept.id]
        # another namespace is free: b may use it
        other = b.remember("the office opens at nine", namespace="office")
        assert b.recall("office opens", namespace="office", k=1).ids == [other.id]
    finally:
        a.close()
        b.close()


def test_a_backup_opened_on_the_vector_store_of_its_open_original_is_refused(
    tmp_path: Path,
) -> None:
    """A backup (or a copied state folder) keeps its store's id. Opened on the vector
    store the original uses while the original is open, it is refused: rewriting the
    collection to match itself would delete the original's records written since the
    backup. Once the original is closed, the backup opened there is a restore."""
    shared = tmp_path / "vectors"
    orig = _open(tmp_path / "state", VectorStore.embedded(shared))
    orig.remember_many([f"old fact {i} about the shed" for i in range(5)])
    orig.backup(tmp_path / "backup")
    newer = orig.remember_many([f"new fact {i} about the boat" for i in range(3)])
    copy = _open(tmp_path / "backup", VectorStore.embedded(shared))
    try:
        with pytest.raises(StoreConflictError, match=r"open now.*is a copy of it.*own prefix"):
            copy.load()
        with pytest.raises(StoreConflictError, match="is a copy of it"):
            copy.recall("old fact", deep=True)
    finally:
        copy.close()
    assert orig.store.count("default") == 8  # nothing of the original's was deleted
    assert orig.recall("new fact 2 about the boat", k=1, deep=True).ids == [newer[2].id]
    orig.close()
    with _open(tmp_path / "backup", VectorStore.embedded(shared)) as restored:
        restored.load()  # the original closed: restored in its place
        assert restored.store.count("default") == 5 == restored.count()


def test_two_apps_each_opening_the_same_relative_path_are_two_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two apps in their own folders, each with ``Oblivion("./state", ...)`` on one shared
    vector store: the second is refused as another store (not told that its database was
    lost, and advised to delete the first's collections), and never writes into the
    first's collection, even while that one is empty."""
    shared = tmp_path / "chroma"
    for app in ("app1", "app2"):
        (tmp_path / app).mkdir()
    monkeypatch.chdir(tmp_path / "app1")
    first = _open(Path("state"), VectorStore.embedded(shared))
    gone = first.remember("a note of app1, forgotten again")
    first.forget(gone.id)  # its collection is empty now, and first still open
    monkeypatch.chdir(tmp_path / "app2")
    second = _open(Path("state"), VectorStore.embedded(shared))
    try:
        with pytest.raises(StoreConflictError, match="another Oblivion store"):
            second.remember("a note of app2")
        assert second.count() == 0
        kept = first.remember("a note of app1")
        assert first.repair_vector_store() == {"put_back": 0, "removed": 0}
        assert first.store.ids("default") == {kept.id}
    finally:
        first.close()
        second.close()
    monkeypatch.chdir(tmp_path / "app2")
    shutil.rmtree("state")
    with pytest.raises(StoreConflictError, match="app1"):  # a new store there, at open
        _open(Path("state"), VectorStore.embedded(shared))


def test_a_moved_store_records_its_new_folder(tmp_path: Path) -> None:
    """A store whose folder moved keeps its collections (its id), and they name the new
    folder once it uses them: its database lost there later is told as such, not as
    another store's."""
    store = VectorStore.embedded(tmp_path / "chroma")
    mem = _open(tmp_path / "s", store)
    mem.remember("kept across the move", id="k")
    mem.close()
    (tmp_path / "s").rename(tmp_path / "t")
    mem = _open(tmp_path / "t", store)
    try:
        assert mem.recall("kept across the move", k=1).ids == ["k"]
        mem.remember("written after the move")  # (recalled in process: not opened yet)
        found = store.client.get_collection(collection_name("default")).metadata
        assert found["oblivion_state"].endswith(str((tmp_path / "t").resolve()))
    finally:
        mem.close()
    (tmp_path / "t" / "oblivion.sqlite3").unlink()
    with pytest.raises(StoreCorruptError, match="missing or empty"):
        _open(tmp_path / "t", store)


@pytest.mark.parametrize("documents", [True, False])
def test_a_lost_database_beside_a_folder_passed_in_gets_the_folder_advice(
    tmp_path: Path, documents: bool
) -> None:
    """A store on a ``VectorStore.embedded(...)`` folder passed in, its database lost:
    the error advised a server's prefix and two containers sharing a host. It names the
    folder, and with ``documents=False`` says that folder holds no texts to import."""
    store = VectorStore.embedded(tmp_path / "vectors", documents=documents)
    with _open(tmp_path / "s", store) as mem:
        mem.remember("kept in the activation database", id="k")
    (tmp_path / "s" / "oblivion.sqlite3").unlink()
    with pytest.raises(StoreCorruptError, match="missing or empty") as err:
        _open(tmp_path / "s", VectorStore.embedded(tmp_path / "vectors", documents=documents))
    said = str(err.value)
    assert str((tmp_path / "vectors").resolve()) in said
    assert "server" not in said and "prefix" not in said
    assert ("oblivion import" in said) is documents
    assert ("vectors only" in said) is not documents


def test_one_vector_store_object_serves_one_oblivion_store_at_a_time(tmp_path: Path) -> None:
    """Passing one VectorStore to two open stores is refused at open; once the first
    closes, it may serve another."""
    store = VectorStore.embedded(tmp_path / "chroma")
    a = _open(tmp_path / "a", store)
    with pytest.raises(StoreConflictError, match="its own VectorStore"):
        _open(tmp_path / "b", store)  # refused while a holds nothing yet, too
    a.remember("alpha fact", id="x")
    with pytest.raises(StoreConflictError, match="its own VectorStore"):
        _open(tmp_path / "b", store)
    assert a.get("x").text == "alpha fact"  # the refused opens changed nothing
    assert a.recall("alpha fact", k=1).ids == ["x"]
    a.close()
    again = _open(tmp_path / "a", store)  # the same store again: its own collections
    try:
        assert again.recall("alpha fact", k=1).ids == ["x"]
    finally:
        again.close()


def test_collections_without_an_owner_are_claimed_on_first_use(tmp_path: Path) -> None:
    """A collection written before owners were recorded is taken over, not refused."""
    store = VectorStore.embedded(tmp_path / "chroma")
    mem = _open(tmp_path / "s", store)
    mem.remember("an old memory", id="old")
    col = store.collection("default")
    col.modify(metadata={"oblivion_namespace": "default"})  # as an older version wrote it
    mem.close()
    mem = _open(tmp_path / "s", store)
    try:
        assert mem.recall("an old memory", k=1).ids == ["old"]
        mem.remember("a new memory", id="new")
        found = store.client.get_collection(collection_name("default")).metadata
        assert found["oblivion_store"] == mem._db.store_id()
        assert found["oblivion_state"] == f"{socket.gethostname()}:{(tmp_path / 's').resolve()}"
    finally:
        mem.close()


def test_an_empty_collection_of_another_store_is_not_taken(tmp_path: Path) -> None:
    """Its store may be open, writing through its own handle: an empty collection is no
    free one (taken over, the two stores shared it again). Its own state folder under a
    new database takes it: nothing is at stake."""
    shared = tmp_path / "chroma"
    a = _open(tmp_path / "a", VectorStore.embedded(shared))
    a.forget(a.remember("temporary", id="t").id)
    b = _open(tmp_path / "b", VectorStore.embedded(shared))
    try:
        with pytest.raises(StoreConflictError, match="belongs to another Oblivion store"):
            b.remember("mine now", id="m")
        a.remember("still a's", id="a1")
        assert a.repair_vector_store() == {"put_back": 0, "removed": 0}
        assert a.store.ids("default") == {"a1"}
    finally:
        a.close()
        b.close()
    db = tmp_path / "a" / "oblivion.sqlite3"
    with _open(tmp_path / "a", VectorStore.embedded(shared)) as again:
        again.forget("a1")
    db.unlink()
    with _open(tmp_path / "a", VectorStore.embedded(shared)) as fresh:
        fresh.remember("a new start", id="n")
        assert fresh.recall("a new start", k=1).ids == ["n"]


def test_a_new_store_on_another_stores_prefix_is_named_as_such(tmp_path: Path) -> None:
    """Opening a new store where another one's collections hold records says whose they
    are (StoreConflictError), not that this store's database was lost."""
    shared = tmp_path / "chroma"
    with _open(tmp_path / "a", VectorStore.embedded(shared)) as a:
        a.remember("a's memory", id="a1")
    with pytest.raises(StoreConflictError, match=r"belongs to another Oblivion store.*/a'"):
        _open(tmp_path / "b", VectorStore.embedded(shared))
    assert not (tmp_path / "b" / "oblivion.sqlite3").exists()


def test_the_store_id_survives_reopen_and_a_damaged_one_is_named(tmp_path: Path) -> None:
    store = VectorStore.embedded(tmp_path / "chroma")
    mem = _open(tmp_path / "s", store)
    first = mem._db.store_id()
    mem.close()
    mem = _open(tmp_path / "s", store)
    assert mem._db.store_id() == first
    mem.close()
    with sqlite3.connect(tmp_path / "s" / "oblivion.sqlite3") as conn:
        conn.execute("UPDATE meta SET value='42' WHERE key='store_id'")
    with pytest.raises(StoreCorruptError, match="store_id"):
        _open(tmp_path / "s", store)


@pytest.mark.server
def test_two_stores_given_one_prefix_on_a_server(
    tmp_path: Path, chroma_server: tuple[str, int]
) -> None:
    """The documented pitfall, now caught: one prefix for two stores on a server."""
    host, port = chroma_server
    prefix = "shared-" + uuid.uuid4().hex[:6]
    a = _open(tmp_path / "a", VectorStore.server(host, port, prefix=prefix))
    b = _open(tmp_path / "b", VectorStore.server(host, port, prefix=prefix))
    try:
        a.remember("secret of app a", id="s")
        with pytest.raises(StoreConflictError, match=prefix):
            b.remember("note of app b", id="n")
        assert a.repair_vector_store() == {"put_back": 0, "removed": 0}
        assert a.store.count("default") == 1
    finally:
        a.close()
        b.close()


def test_a_replaced_activation_database_is_named_as_such(tmp_path: Path) -> None:
    """The collection's owner is this very state folder under another database: the
    error says the database was replaced (restore it), not that another store owns it."""
    store = VectorStore.embedded(tmp_path / "chroma")
    mem = _open(tmp_path / "s", store)
    mem.remember("kept in chroma", id="k", namespace="notes")
    mem.remember("another", id="o")
    mem.close()
    db = tmp_path / "s" / "oblivion.sqlite3"
    db.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with pytest.raises(StoreCorruptError, match=r"(?s)missing or empty.*delete nothing"):
        _open(tmp_path / "s", store)  # caught at open: the chroma folder holds memories
    # a prefix-scoped check cannot see every such case; the collection check names it
    fresh = _open(tmp_path / "s", VectorStore.embedded(tmp_path / "other"))
    fresh.close()
    mem = _open(tmp_path / "s", store)
    try:
        # or another app of the same host name and folder path (two containers on the
        # host's network) uses the prefix: then nothing may be deleted
        with pytest.raises(
            StoreConflictError,
            match=r"(?s)database was replaced.*own prefix=\.\.\. and delete nothing",
        ):
            mem.remember("new", namespace="notes")
    finally:
        mem.close()
