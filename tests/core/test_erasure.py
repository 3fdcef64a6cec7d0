"""Deleting for good (README, "Deleting for good"): after ``forget()``, ``forget_where()``
or an ``edit()`` of its text, no file of the store holds the old text, Chroma's own
files aside until ``compact_vector_store()`` (documented), and a store without
documents in Chroma holds it nowhere.

Through real Chroma on disk, with a namespace large enough (over 1,024 memories) that
its keyword index is saved beside the database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from oblivion_core import Oblivion, VectorStore
from oblivion_core.testing import HashEmbedder, ManualClock, word_count

FORGOTTEN = "Plumbuszetta"  # each marker is a word no other memory holds
EDITED = "Quuxlington"
BY_FILTER = "Zorbwallace"


def _open(path: Path, documents: bool) -> Oblivion:
    return Oblivion(
        path,
        vector_store=VectorStore.embedded(path / "chroma", documents=documents),
        embedder=HashEmbedder(),
        token_counter=word_count,
        clock=ManualClock(),
    )


def _files_holding(path: Path, words: list[str]) -> dict[str, list[str]]:
    """The files whose bytes hold any of ``words``, in any case, as UTF-8 or as numpy
    keeps a string (UTF-32: the saved keyword index's terms are lowercase)."""
    found: dict[str, list[str]] = {}
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        data = file.read_bytes().lower()
        held = [
            w
            for w in words
            if any(w.lower().encode(code) in data for code in ("utf-8", "utf-32-le"))
        ]
        if held:
            found[str(file.relative_to(path))] = held
    return found


def _story(path: Path, documents: bool) -> None:
    notes = [f"note {k}: the team meets on Tuesdays to plan sprint {k}" for k in range(1_100)]
    with _open(path, documents) as mem:
        mem.remember_many(notes, supersede=False)
        gone = mem.remember(f"Dana's therapist is Dr {FORGOTTEN} on Elm Street").id
        edited = mem.remember(f"Dana's new employer is {EDITED} Holdings").id
        mem.remember(f"Dana's locker code at {BY_FILTER} gym is 4471", metadata={"kind": "pin"})
        for q in ("therapist", "employer", "locker code"):
            mem.recall(q, k=3)
        mem.forget(gone)
        mem.edit(edited, "Dana's employer: withheld")
        assert len(mem.forget_where(where={"kind": "pin"})) == 1
        mem.maintain()
    with _open(path, documents) as mem:  # reopened from what was saved, used, closed
        for word in (FORGOTTEN, EDITED, BY_FILTER):
            assert not any(word in it.text for it in mem.recall(word, k=5, deep=True).items)
        mem.remember("a new note after the deletions")


def test_a_store_without_documents_in_chroma_keeps_no_deleted_text(tmp_path: Path) -> None:
    _story(tmp_path, documents=False)
    assert _files_holding(tmp_path, [FORGOTTEN, EDITED, BY_FILTER]) == {}


def test_with_documents_only_chroma_keeps_them_until_compacted(tmp_path: Path) -> None:
    """Chroma deletes by marking (its database's free space keeps the documents for
    good); compact_vector_store() leaves them nowhere."""
    _story(tmp_path, documents=True)
    held = _files_holding(tmp_path, [FORGOTTEN, EDITED, BY_FILTER])
    assert set(held) <= {"chroma/chroma.sqlite3"}, held
    with _open(tmp_path, documents=True) as mem:
        mem.compact_vector_store()
    assert _files_holding(tmp_path, [FORGOTTEN, EDITED, BY_FILTER]) == {}


def test_an_edit_of_metadata_alone_leaves_no_old_value_in_the_log(tmp_path: Path) -> None:
    """Only an edit of the text emptied the write-ahead log: an edit of metadata alone
    (a LangGraph store's put of a new value under a key keeps the whole value in the
    memory's metadata) left the old value's page there until a later deletion, a
    checkpoint or close()."""
    with _open(tmp_path, documents=False) as mem:
        rec = mem.remember("Dana's locker", metadata={"code": f"{FORGOTTEN} 4471"})
        mem.remember_many([f"note {k} about the garden" for k in range(20)], supersede=False)
        mem.edit(rec.id, metadata={"code": "withheld"})
        held = _files_holding(tmp_path, [FORGOTTEN])
        assert not {f for f in held if f.startswith("oblivion.sqlite3")}, held


def test_the_database_overwrites_what_it_deletes(tmp_path: Path) -> None:
    """SQLite's ``secure_delete`` is turned on, whatever the build's default."""
    with _open(tmp_path, documents=False) as mem:
        assert mem._db.conn.execute("PRAGMA secure_delete").fetchone()[0] == 1


def test_the_database_and_its_log_hold_no_deleted_text_while_the_store_is_open(
    tmp_path: Path,
) -> None:
    """The write-ahead log kept the page holding a forgotten (or edited-away) text until
    about 1,000 pages of later writes, or the store closed; it is emptied after each."""
    with _open(tmp_path, documents=False) as mem:
        gone = mem.remember(f"Dana's therapist is Dr {FORGOTTEN}.").id
        edited = mem.remember(f"Dana's new employer is {EDITED} Holdings.").id
        mem.remember_many([f"note {k} about the garden" for k in range(20)], supersede=False)
        mem.recall("garden", k=3)
        mem.forget(gone)
        mem.edit(edited, "Dana's employer: withheld")
        held = _files_holding(tmp_path, [FORGOTTEN, EDITED])
        assert not {f for f in held if f.startswith("oblivion.sqlite3")}, held


def _built_and_saved(path: Path) -> list[str]:
    """A namespace over 1,024 memories, its keyword index saved at close, then read
    back and used by a recall (built) in the store opened again."""
    notes = [f"note {k}: the team meets on Tuesdays to plan sprint {k}" for k in range(1_100)]
    with _open(path, documents=False) as mem:
        mem.remember_many(notes, supersede=False)
        ids = [
            mem.remember(f"Dana's therapist is Dr {FORGOTTEN} on Elm Street").id,
            mem.remember(f"Dana's new employer is {EDITED} Holdings").id,
            mem.remember(f"Dana's locker code at {BY_FILTER} gym", metadata={"kind": "pin"}).id,
        ]
        mem.recall("sprint planning", k=3)
    assert _files_holding(path / "lexical", [FORGOTTEN, EDITED, BY_FILTER])
    return ids


def test_the_saved_keyword_index_holds_no_deleted_text_while_the_store_is_open(
    tmp_path: Path,
) -> None:
    """Of a namespace whose index was built, the saved file kept a forgotten or
    edited-away text's words until the store closed (days, in a server)."""
    gone, edited, _ = _built_and_saved(tmp_path)
    with _open(tmp_path, documents=False) as mem:
        mem.recall("sprint planning", k=3)  # the index, read from the file, is built
        mem.forget(gone)
        assert FORGOTTEN not in str(_files_holding(tmp_path / "lexical", [FORGOTTEN]))
        mem.edit(edited, "Dana's employer: withheld")
        assert len(mem.forget_where(where={"kind": "pin"})) == 1
        assert _files_holding(tmp_path / "lexical", [FORGOTTEN, EDITED, BY_FILTER]) == {}
        assert mem.recall(FORGOTTEN, k=3).items[0].text.startswith("note")
    assert _files_holding(tmp_path / "lexical", [FORGOTTEN, EDITED, BY_FILTER]) == {}


_KILLED_AFTER_FORGET = """
import os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from core.test_erasure import _open
mem = _open(Path({path!r}), documents=False)
mem.recall("sprint planning", k=3)
mem.forget({gone!r})
os._exit(9)
"""


def test_a_keyword_index_file_a_crash_left_stale_is_deleted_when_the_store_opens(
    tmp_path: Path,
) -> None:
    """The process dies after a forget(): the file written before it is out of date,
    never read again, and deleted by the next open's first search."""
    gone, _, _ = _built_and_saved(tmp_path)
    tests = str(Path(__file__).resolve().parents[1])
    code = _KILLED_AFTER_FORGET.format(tests=tests, path=str(tmp_path), gone=gone)
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 9
    with _open(tmp_path, documents=False) as mem:
        mem.recall("sprint planning", k=3)
        assert _files_holding(tmp_path / "lexical", [FORGOTTEN]) == {}


def test_what_a_killed_save_of_the_keyword_index_left_goes_with_a_deletion(
    tmp_path: Path,
) -> None:
    """A save of the keyword index killed before its rename leaves a temporary file
    holding every word of the namespace. A deletion removed the saved file only: the
    temporary one stayed for good once the namespace was never saved again."""
    gone, _, _ = _built_and_saved(tmp_path)
    (saved,) = (tmp_path / "lexical").glob("*.npz")
    left = saved.with_name(f"{saved.stem}k1ll3d.tmp")
    left.write_bytes(saved.read_bytes())
    with _open(tmp_path, documents=False) as mem:
        mem.forget(gone)
        assert not left.exists()
        assert _files_holding(tmp_path / "lexical", [FORGOTTEN]) == {}
