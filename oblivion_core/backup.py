"""Backups: a copy of a store taken while it is in use.

SQLite (:mod:`state`) is the record of what a store remembers, and it keeps every
memory's vector and text besides its activation, links, summaries and journal; Chroma
holds a copy to search. So a backup is the activation database alone, copied with
SQLite's online backup (one read transaction: the copy is the state at one instant,
whatever is written meanwhile). The copy is checked (``PRAGMA quick_check``) before it
takes its name, and marked as holding no vectors elsewhere: opened, its memories are
copied into whatever vector store it is opened with, each namespace on first use, as
after a move (:meth:`VectorSync.note_move`). A copy can also be re-embedded with another
model before it takes its name (:func:`reembed`): the way to move a store to a new
embedding model with every memory's activation, links and journal kept.

:meth:`Oblivion.backup` writes what is queued, then copies through a second connection
whose read transaction began right after (``StateDB.pinned``), so the engine's other
calls go on during the copy. :func:`copy_live` copies through a read-only connection to
a store another process holds open (the command line's ``oblivion backup``, and how
``oblivion stats`` reads a running app's store): that copy lacks only what the app has
not written yet, at most ``StateDB.DEFER_SECONDS`` of recall boosts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from pathlib import Path

from oblivion_core.embedding import embed_texts
from oblivion_core.errors import (
    InvalidInputError,
    OblivionError,
    StoreCorruptError,
    StoreError,
    StorePathError,
)
from oblivion_core.progress import progress
from oblivion_core.state import StateDB, sqlite_cause
from oblivion_core.store import directory_path
from oblivion_core.typing import Embedder

logger = logging.getLogger("oblivion_core")

#: Suffix of the copy while it is written; it takes the database's name once checked.
PARTIAL = ".partial"
#: Texts per embedding call when a copy is re-embedded (:func:`reembed`).
REEMBED_BATCH = 256


def check_folder(folder: object) -> Path:
    """``folder`` as the :class:`Path` of a backup: a folder that does not exist yet or
    is empty, so a backup never replaces a store (or anything else).

    Raises:
        InvalidInputError: not a path, or a folder that holds files.
        StorePathError: a file is there.
    """
    if not isinstance(folder, str | os.PathLike) or not str(os.fspath(folder)).strip():
        raise InvalidInputError(
            f"a backup goes to a folder: pass its path as a str or Path, got {folder!r}"
        )
    path = directory_path(folder, "folder", "the backup's folder")  # a NUL cannot name one
    if path.exists() and not path.is_dir():
        raise StorePathError(
            f"{str(path)!r} is a file; a backup goes to a folder that does not exist yet or "
            "is empty"
        )
    if path.is_dir():
        refuse_unfinished_backup(path / StateDB.FILE)
    if path.is_dir() and any(path.iterdir()):
        raise InvalidInputError(
            f"{str(path)!r} is not empty; a backup goes to a new or empty folder, so it never "
            "replaces a store (give a new folder, e.g. one named by the date)"
        )
    return path


def refuse_unfinished_backup(db_file: Path) -> None:
    """Refuse a folder holding a backup's unfinished copy and no database: a backup
    being written, or one whose process was stopped (killed, out of memory, the machine
    down). Opened as a store it would be an empty one, the backup's memories silently
    missing (and a store opened while the copy is written would lose its own when the
    copy took the name, were it not refused: :func:`_take_name`).

    Raises:
        StorePathError: the copy is there, without the database it was to become.
    """
    partial = db_file.with_name(db_file.name + PARTIAL)
    if partial.exists() and not db_file.exists():
        raise StorePathError(
            f"{str(db_file.parent)!r} holds an unfinished backup ({partial.name}), not a "
            "store: one being written now, or one whose process was stopped before it "
            "finished. Wait for it to finish; if no backup is running, delete the folder "
            "and back up again (or open another backup)"
        )


def copy_database(
    source: sqlite3.Connection, folder: Path, *, of: str, embedder: Embedder | None = None
) -> Path:
    """Copy the activation database open on ``source`` into ``folder`` (checked by
    :func:`check_folder`, made if missing) as a store of its own, and return the path
    of the copy. ``of``: the store copied, in words (the copy's note says where it came
    from). ``embedder``: re-embed every memory of the copy with it (:func:`reembed`).
    Nothing is left in ``folder`` when the copy fails.

    Raises:
        StorePathError: ``folder`` cannot be made or written.
        StoreCorruptError: the database copied is not a valid Oblivion database.
        StoreError: the disk is full, or SQLite failed otherwise.
        EmbeddingError: ``embedder`` failed.
    """
    made = not folder.exists()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorePathError(
            f"cannot make the backup folder {str(folder)!r} ({exc.strerror or exc}); make its "
            "parent writable or give another folder"
        ) from exc
    final = folder / StateDB.FILE
    partial = folder / (StateDB.FILE + PARTIAL)
    try:
        target = sqlite3.connect(str(partial), isolation_level=None)
        try:
            source.backup(target)  # one step: one read transaction on the source
            if source.in_transaction:  # a pinned snapshot (StateDB.pinned): let it go, so
                source.rollback()  # the store's WAL is not held through a re-embedding
            _check(target, of)
            if embedder is not None:
                reembed(target, embedder)
            _mark(target, of)
        finally:
            target.close()
        _take_name(partial, final)
    except BaseException as exc:
        for leftover in (partial, *(Path(f"{partial}{s}") for s in ("-wal", "-shm", "-journal"))):
            with contextlib.suppress(OSError):
                leftover.unlink()
        if made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, sqlite3.Error):
            raise _error(exc, of, folder) from exc
        if isinstance(exc, OSError) and not isinstance(exc, OblivionError):
            raise StorePathError(
                f"cannot write the backup in {str(folder)!r} ({exc.strerror or exc}); make "
                "it writable or give another folder"
            ) from exc
        raise
    return final


def _take_name(partial: Path, final: Path) -> None:
    """Give the checked copy its name, unless a database took that name meanwhile (a
    store opened in the folder while the copy was written): a hard link fails rather
    than replace it. Where the file system has no hard links, the name is checked first.

    Raises:
        StorePathError: a database has the name now; it is left as it is.
    """
    taken = StorePathError(
        f"an activation database appeared at {str(final)!r} while the backup was written "
        "(a store opened in that folder?); it was left as it is: back up to another folder"
    )
    try:
        os.link(partial, final)
    except FileExistsError:
        raise taken from None
    except OSError:  # no hard links here
        if final.exists():
            raise taken from None
        os.replace(partial, final)
    else:
        partial.unlink()


def copy_live(store: Path, folder: Path) -> Path:
    """Copy the activation database of the store at ``store`` (another process may hold
    it open and keep writing) into ``folder``, through a read-only connection: nothing is
    written to the store, and its lock is not taken. See :func:`copy_database`."""
    db = store / StateDB.FILE
    try:
        # a URI: the path is percent-encoded, and mode=ro refuses any write
        source = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        raise _error(exc, str(store), folder) from exc
    try:
        return copy_database(source, folder, of=str(store))
    finally:
        source.close()


def reembed(copy: sqlite3.Connection, embedder: Embedder) -> None:
    """Replace the vector of every memory of the database open on ``copy`` (a copy no
    one else uses) by ``embedder``'s of its text, :data:`REEMBED_BATCH` texts at a
    time, in one transaction, and record the new dimension. Shows a progress bar (tqdm,
    which chromadb and fastembed install) or, without tqdm, logs each batch.

    Raises:
        EmbeddingError: the embedder failed, or gave vectors of two sizes.
    """
    total = int(copy.execute("SELECT COUNT(*) FROM memories").fetchone()[0])
    dim, last = None, -1
    copy.execute("BEGIN IMMEDIATE")
    try:
        with progress(total, "re-embedding") as advance:
            while True:
                rows = copy.execute(
                    "SELECT rowid, namespace, id, text FROM memories WHERE rowid > ? "
                    "ORDER BY rowid LIMIT ?",
                    (last, REEMBED_BATCH),
                ).fetchall()
                if not rows:
                    break
                vectors = embed_texts(embedder, [r[3] for r in rows], dim)
                dim = int(vectors.shape[1])
                StateDB.write_vectors(copy, [r[1] for r in rows], [r[2] for r in rows], vectors)
                last = rows[-1][0]
                advance(len(rows))
        copy.execute("DELETE FROM meta WHERE key='dim'")
        if dim is not None:
            StateDB.write_meta(copy, "dim", dim)
        copy.execute("COMMIT")
    except BaseException:
        copy.execute("ROLLBACK")
        raise


def _check(copy: sqlite3.Connection, of: str) -> None:
    """Refuse a copy SQLite finds damaged or that holds no Oblivion database."""
    found = [row[0] for row in copy.execute("PRAGMA quick_check").fetchall()]
    if found != ["ok"]:
        raise StoreCorruptError(
            f"the activation database of {of} is damaged ({'; '.join(found[:3])}), so no "
            "backup was written. Restore an earlier backup, or salvage what is readable with "
            "the sqlite3 tool's .recover"
        )
    tables = {r[0] for r in copy.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "meta" not in tables or "memories" not in tables:
        raise StoreCorruptError(
            f"{of} holds no Oblivion activation database (tables {sorted(tables)[:5]}), so "
            "no backup was written; check the path"
        )


#: How a backup names where its vectors are: nowhere yet (:func:`_mark`).
BACKUP_PLACE = "a backup of"


def _mark(copy: sqlite3.Connection, of: str) -> None:
    """Note in the copy that its vectors are kept nowhere else yet: opened, it copies each
    namespace's memories into the vector store it is opened with, on first use."""
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    namespaces = sorted(r[0] for r in copy.execute("SELECT namespace FROM namespaces"))
    copy.execute("BEGIN IMMEDIATE")
    StateDB.write_meta(copy, StateDB.VECTOR_STORE, f"{BACKUP_PLACE} {of} taken {when}")
    StateDB.write_meta(copy, StateDB.VECTOR_STORE_COPYING, namespaces)
    copy.execute("COMMIT")
    # one file: a copy left in WAL mode (the source's) would keep its last pages in a
    # -wal file beside it until opened
    copy.execute("PRAGMA journal_mode=DELETE")


def _error(exc: sqlite3.Error, of: str, folder: Path) -> StoreError:
    """The Oblivion error for SQLite failure ``exc`` while backing up ``of``."""
    cause = sqlite_cause(exc)
    if cause == "full":
        return StoreError(
            f"the disk holding {str(folder)!r} is full ({exc}); free space on it or back up "
            "to another disk. The store was not changed"
        )
    if cause == "corrupt":
        return StoreCorruptError(
            f"the activation database of {of} is damaged ({exc}), so no backup was written. "
            "Restore an earlier backup, or salvage what is readable with the sqlite3 tool's "
            ".recover"
        )
    if cause == "path":
        return StorePathError(
            f"cannot read the store at {of} or write the backup in {str(folder)!r} ({exc}); "
            "check both paths and their permissions"
        )
    if cause == "locked":
        return StoreError(
            f"SQLite could not read {of} ({exc}): another connection held it too long; try again"
        )
    return StoreError(f"SQLite failed backing up {of} into {str(folder)!r}: {exc}")
