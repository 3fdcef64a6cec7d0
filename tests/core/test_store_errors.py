"""Store failures (a locked, read-only, damaged or full store) raise a specific
``oblivion_core.errors`` exception saying what to change, chained to the SQLite or Chroma
error, and nothing stored before is lost: once the cause is gone, a reopened store has
every memory. Real SQLite files and embedded Chroma throughout."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oblivion_core import (
    ManualClock,
    Oblivion,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StorePathError,
    VectorStore,
)
from oblivion_core.errors import VectorStoreError
from oblivion_core.state import StateDB
from oblivion_core.store import collection_name
from oblivion_core.testing import HashEmbedder, word_count

pytestmark = pytest.mark.integration

TEXTS = {
    "rule": "Always answer in British English",
    "office": "The office is in Leeds",
    "team": "The team has five engineers",
}


def _open(path: Path, **kwargs: Any) -> Oblivion:
    return Oblivion(
        path, clock=ManualClock(), embedder=HashEmbedder(), token_counter=word_count, **kwargs
    )


def _seed(path: Path, **kwargs: Any) -> list[tuple[Any, ...]]:
    """A closed store at ``path`` with a few memories; returns what it holds."""
    mem = _open(path, **kwargs)
    for mid, text in TEXTS.items():
        mem.remember(text, id=mid, category="fact", metadata={"src": mid})
    mem.remember_many([f"note {i} about topic {i % 5} with padding" for i in range(60)])
    mem.recall("office team")  # queued boosts, written on close
    held = _snapshot(mem)
    mem.close()
    return held


def _snapshot(mem: Oblivion) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r.id,
            r.text,
            r.category,
            r.access_count,
            round(r.activation, 9),
            dict(r.metadata),
            r.invalidated,
        )
        for r in mem.records()
    )


def _assert_intact(path: Path, held: list[tuple[Any, ...]], **kwargs: Any) -> None:
    """Reopened, the store holds exactly ``held``, and it accepts writes again."""
    mem = _open(path, **kwargs)
    try:
        assert _snapshot(mem) == held
        assert mem.count() == len(held)
        assert mem.recall("office Leeds", feedback=False).ids
        mem.remember("written after the failure", id="after")
        assert mem.get("after").text == "written after the failure"
    finally:
        mem.close()


@pytest.fixture
def fast_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite gives up on another connection's write lock after 0.1 s, not 5 s."""
    monkeypatch.setattr(StateDB, "BUSY_TIMEOUT", 0.1)


@contextlib.contextmanager
def _write_locked(db: Path) -> Iterator[None]:
    """Another connection holds SQLite's write lock on ``db`` (as a backup tool or the
    sqlite3 shell in the middle of a write would)."""
    other = sqlite3.connect(db, isolation_level=None, timeout=0)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


# ---------------------------------------------------------------- locked


@pytest.mark.usefixtures("fast_busy")
def test_write_while_another_connection_holds_the_lock(tmp_path: Path) -> None:
    """remember() under another connection's write lock raises StoreLockedError naming
    the file, rolls back, and the store takes the write once the lock is gone."""
    held = _seed(tmp_path)
    mem = _open(tmp_path)
    db = tmp_path / StateDB.FILE
    try:
        with _write_locked(db):
            start = time.monotonic()
            with pytest.raises(StoreLockedError) as err:
                mem.remember("Tomatoes need staking in July", id="garden")
            assert time.monotonic() - start < 3
            assert f"another process is writing to {db}" in str(err.value)
            assert "close it or open a different path" in str(err.value)
            assert isinstance(err.value.__cause__, sqlite3.OperationalError)
            assert not mem._db.conn.in_transaction  # rolled back
            assert mem.count() == len(held)
        mem.remember("Tomatoes need staking in July", id="garden")  # the lock is gone
        assert mem.get("garden").text == "Tomatoes need staking in July"
    finally:
        mem.close()
    mem = _open(tmp_path)
    try:
        assert [r for r in _snapshot(mem) if r[0] != "garden"] == held
        assert mem.get("garden").text == "Tomatoes need staking in July"
    finally:
        mem.close()


@pytest.mark.usefixtures("fast_busy")
def test_open_while_another_connection_holds_the_lock(tmp_path: Path) -> None:
    """Opening a store whose file another connection is writing raises StoreLockedError
    (not a bare sqlite3 error) and leaves it openable once the lock is gone."""
    held = _seed(tmp_path)
    with _write_locked(tmp_path / StateDB.FILE), pytest.raises(StoreLockedError) as err:
        _open(tmp_path)
    assert "close it or open a different path" in str(err.value)
    assert isinstance(err.value.__cause__, sqlite3.OperationalError)
    _assert_intact(tmp_path, held)


@pytest.mark.usefixtures("fast_busy")
def test_queued_boosts_survive_a_failed_flush(tmp_path: Path) -> None:
    """A flush of queued recall boosts refused by a lock keeps them queued; the next
    write after the lock is gone writes them."""
    _seed(tmp_path)
    db = StateDB(tmp_path)
    try:
        st = db.load("default")
        i = st.row("office")
        assert i is not None
        st.cols["access_count"][i] += 7
        db.defer(st, ["office"], 0.0, [("office", "recall", 1.0, 2.0, {})])
        with _write_locked(db.path or tmp_path), pytest.raises(StoreLockedError):
            db.flush()
        assert not db.conn.in_transaction
        db.flush()
        (count,) = db.conn.execute("SELECT access_count FROM memories WHERE id='office'").fetchone()
        assert count == st.cols["access_count"][i]
        assert [e.kind for e in db.events("default", "office")][-1] == "recall"
    finally:
        db.close()


# ---------------------------------------------------------------- read-only


@contextlib.contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """``path`` (a file) cannot be written: chmod, or as root (whom chmod does not stop)
    a read-only bind mount of the file; skips the test if neither is possible."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    target = str(path)
    bound = subprocess.run(["mount", "--bind", target, target], capture_output=True)
    if bound.returncode != 0:
        pytest.skip("running as root and cannot bind-mount: chmod does not stop root")
    try:
        ro = subprocess.run(["mount", "-o", "remount,ro,bind", target], capture_output=True)
        if ro.returncode != 0:
            pytest.skip("cannot remount a bind mount read-only")
        with pytest.raises(OSError):  # the file really is read-only now
            os.open(target, os.O_WRONLY)
        yield
    finally:
        subprocess.run(["umount", "-l", target], check=True)


def test_read_only_database_file(tmp_path: Path) -> None:
    """A read-only oblivion.sqlite3 raises StorePathError on open, saying to make it
    writable; once it is, the store is intact."""
    held = _seed(tmp_path)
    with _read_only(tmp_path / StateDB.FILE), pytest.raises(StorePathError) as err:
        _open(tmp_path)
    assert str(tmp_path / StateDB.FILE) in str(err.value)
    assert "make them writable" in str(err.value)
    assert isinstance(err.value.__cause__, sqlite3.OperationalError)
    _assert_intact(tmp_path, held)


# ---------------------------------------------------------------- corrupt


def _damage(db: Path, table: str) -> None:
    """Overwrite the root page of ``table`` (the header stays valid)."""
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name=?", (table,)).fetchone()
    conn.close()
    data = bytearray(db.read_bytes())
    data[(root - 1) * page_size : root * page_size] = b"\xde\xad\xbe\xef" * (page_size // 4)
    db.write_bytes(bytes(data))


def _assert_corrupt_error(exc: BaseException, db: Path) -> None:
    assert isinstance(exc, StoreCorruptError)
    assert str(db) in str(exc)
    assert "does not repair" in str(exc)
    assert "backup" in str(exc)
    assert "restore it from a backup" in str(exc) and "oblivion import PATH" in str(exc)
    assert isinstance(exc.__cause__, sqlite3.DatabaseError)


@pytest.mark.parametrize("table", ["memories", "vectors", "events"])
def test_damaged_pages(tmp_path: Path, table: str) -> None:
    """Damaged pages raise StoreCorruptError (on open, or on the first call that reads or
    writes them) naming the file and saying Oblivion does not repair it; with the backup
    restored, nothing is lost."""
    held = _seed(tmp_path)
    db = tmp_path / StateDB.FILE
    backup = tmp_path / "backup.sqlite3"
    shutil.copyfile(db, backup)
    _damage(db, table)
    errors: list[BaseException] = []
    try:
        mem = _open(tmp_path)
    except StoreCorruptError as exc:
        errors.append(exc)
    else:
        try:
            for call in (
                lambda: mem.count(),
                lambda: mem.recall("topic 3", feedback=False),
                lambda: mem.remember("a new note here", id="new"),
            ):
                try:
                    call()
                except StoreCorruptError as exc:
                    errors.append(exc)
        finally:
            try:
                mem.close()
            except StoreCorruptError as exc:
                errors.append(exc)
                # a failed close() keeps the instance open for a retry; let go of the
                # files so the backup can be put back
                with contextlib.suppress(StoreError):
                    mem._db.close()
    assert errors, f"damage to {table} went unreported"
    for exc in errors:
        _assert_corrupt_error(exc, db)
    shutil.copyfile(backup, db)  # restore the backup
    for extra in ("-wal", "-shm"):
        Path(f"{db}{extra}").unlink(missing_ok=True)
    _assert_intact(tmp_path, held)


# ---------------------------------------------------------------- disk full


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 40 MB tmpfs (root only; the test is skipped elsewhere)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mnt)])
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mnt
    finally:
        # lazily: the Chroma client of the closed engine may still hold files there
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


@pytest.mark.parametrize("full", ["state", "chroma"])
def test_disk_full(small_disk: Path, tmp_path: Path, full: str) -> None:
    """A full disk under the activation database raises StoreError saying to free space;
    under Chroma, VectorStoreError naming the collection and the operation. Freed, the
    store has everything written before and takes writes again."""
    state = small_disk / "state" if full == "state" else tmp_path / "state"
    chroma = small_disk / "chroma" if full == "chroma" else tmp_path / "chroma"

    def kwargs() -> dict[str, Any]:
        return {"vector_store": VectorStore.embedded(chroma)}

    held = _seed(state, **kwargs())
    mem = _open(state, **kwargs())
    filler = _fill(small_disk)
    try:
        with pytest.raises(StoreError) as err:
            mem.remember_many([f"bulk {i} " + "pad " * 300 for i in range(200)])
        if full == "state":
            assert "free space" in str(err.value)
            assert str(state / StateDB.FILE) in str(err.value)
            assert isinstance(err.value.__cause__, sqlite3.OperationalError)
            assert not mem._db.conn.in_transaction  # rolled back
        else:
            assert isinstance(err.value, VectorStoreError)
            assert collection_name("default") in str(err.value)
            assert "free space" in str(err.value)
        assert mem.count() == len(held)
    finally:
        filler.unlink()
        mem.close()
    _assert_intact(state, held, **kwargs())


# ---------------------------------------------------------------- vector store


def test_chroma_failure_names_collection_and_operation(tmp_path: Path) -> None:
    """A Chroma error in a VectorStore call becomes VectorStoreError naming the
    collection, namespace and operation, chained to Chroma's exception."""
    vs = VectorStore.embedded(tmp_path / "chroma")
    vecs = np.eye(4, 8, dtype=np.float32)
    vs.add("team-a", ["a", "b", "c", "d"], vecs, ["w", "x", "y", "z"])
    with pytest.raises(VectorStoreError) as err:
        vs.query("team-a", np.ones(3, dtype=np.float32), 2)  # wrong dimension
    message = str(err.value)
    assert collection_name("team-a") in message
    assert "'team-a'" in message
    assert "query" in message
    assert err.value.__cause__ is not None
    assert not isinstance(err.value.__cause__, StoreError)
    with pytest.raises(VectorStoreError, match="add 1 record"):
        vs.add("team-a", ["e"], np.ones((1, 3), dtype=np.float32), ["v"])
    assert vs.count("team-a") == 4
    ids, _ = vs.query("team-a", vecs[0], 1)
    assert ids == ["a"]
