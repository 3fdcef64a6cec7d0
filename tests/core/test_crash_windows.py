"""A process killed between Chroma's write and SQLite's commit: on reopen the two agree
again (SQLite, which holds every text and vector, is the record). Each child kills
itself right after the Chroma call, as a SIGKILL landing there would."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from oblivion_core import Oblivion
from oblivion_core.store import CHECK_BATCH
from oblivion_core.testing import HashEmbedder

pytestmark = pytest.mark.integration

CHILD = r"""
import os, signal, sys
from oblivion_core import Oblivion
from oblivion_core.testing import HashEmbedder
path, step = sys.argv[1], sys.argv[2]
mem = Oblivion(path, embedder=HashEmbedder())

def die_after(fn):
    def wrapped(*a, **kw):
        fn(*a, **kw)
        os.kill(os.getpid(), signal.SIGKILL)
    return wrapped

if step == "setup":
    mem.remember_many([f"fact {i}: the garden shed holds tool {i}" for i in range(5)],
                      ids=[f"f{i}" for i in range(5)], supersede=False)
    mem.close()
elif step == "edit":
    mem.store.add = die_after(mem.store.add)
    mem.edit("f1", "Quarterly budget review with the finance team in Manchester.")
elif step == "recategorise":
    mem.store.add = die_after(mem.store.add)
    mem.edit("f2", category="instruction")
elif step == "remember_many":
    mem.store.add = die_after(mem.store.add)
    mem.remember_many([f"batch item {i} about the harbour ferry" for i in range(50)],
                      ids=[f"b{i}" for i in range(50)])
elif step == "forget":
    mem.store.delete = die_after(mem.store.delete)
    mem.forget("f0")
print("the call returned", flush=True)
"""


def _run(path: Path, step: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), step],
        capture_output=True,
        text=True,
        timeout=120,
    )
    expected = 0 if step == "setup" else -signal.SIGKILL
    assert proc.returncode == expected, proc.stderr[-2000:]


def _chroma(mem: Oblivion, ids: list[str]) -> dict[str, tuple[str, dict, np.ndarray]]:
    got = mem.store.collection("default").get(
        ids=ids, include=["documents", "metadatas", "embeddings"]
    )
    return {
        m: (doc, meta, np.asarray(vec))
        for m, doc, meta, vec in zip(
            got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
        )
    }


def test_an_edit_killed_before_its_commit_leaves_chroma_as_sqlite(tmp_path: Path) -> None:
    """Chroma had the new text and vector, SQLite the old ones: on reopen Chroma holds
    SQLite's again (counts and ids agreed, so no count check could see it)."""
    store = tmp_path / "store"
    _run(store, "setup")
    _run(store, "edit")
    with Oblivion(store, embedder=HashEmbedder()) as mem:
        assert mem.get("f1").text == "fact 1: the garden shed holds tool 1"
        doc, _, vec = _chroma(mem, ["f1"])["f1"]
        assert doc == "fact 1: the garden shed holds tool 1"
        stored = mem._db.vectors("default", ["f1"])["f1"]
        assert np.allclose(vec, stored, atol=1e-6)
    with Oblivion(store, embedder=HashEmbedder()) as mem:  # the note is cleared
        assert mem._db.meta("resync:default") is None


def test_a_recategorisation_killed_before_its_commit(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _run(store, "setup")
    _run(store, "recategorise")
    with Oblivion(store, embedder=HashEmbedder()) as mem:
        category = mem.get("f2").category
        assert category != "instruction"  # the edit never committed
        _, meta, _ = _chroma(mem, ["f2"])["f2"]
        assert meta["category"] == category


def test_records_of_a_killed_write_are_removed_and_hide_no_later_loss(tmp_path: Path) -> None:
    """A remember_many killed after Chroma's add left 50 records of no memory; a forget
    killed after Chroma's delete then lost f0's record. After a reopen, by the first write
    through Chroma, the 50 are gone and f0 is back (the count check saw more records than
    memories and looked no further)."""
    store = tmp_path / "store"
    _run(store, "setup")
    _run(store, "remember_many")
    _run(store, "forget")
    with Oblivion(store, embedder=HashEmbedder()) as mem:
        ids = {r.id for r in mem.records()}
        assert ids == {f"f{i}" for i in range(5)}
        mem.remember("the garden shed holds a rake", id="rake")
        assert mem.store.ids("default") == ids | {"rake"}
        assert mem.recall("garden shed tool 0", k=1, deep=True).ids == ["f0"]


def test_a_later_edit_keeps_another_memorys_resync_note(tmp_path: Path) -> None:
    """An edit whose Chroma record could not be put back leaves its note (here made by
    hand, with Chroma's record drifted). A later edit of another memory clears only its
    own note: on reopen the first record is written again from SQLite."""
    store = tmp_path / "store"
    with Oblivion(store, embedder=HashEmbedder()) as mem:
        mem.remember("The office is in Leeds.", id="office", supersede=False)
        mem.remember("Lunch is at noon on Fridays.", id="lunch", supersede=False)
        wrong = HashEmbedder().embed_documents(["Quarterly budget review"])
        mem.store.collection("default").upsert(
            ids=["office"], documents=["Quarterly budget review"], embeddings=wrong
        )
        mem._sync.note("default", ["office"])  # as a failed put-back leaves it
        mem.edit("lunch", "Lunch is at one on Fridays.")
    with Oblivion(store, embedder=HashEmbedder()) as mem:
        mem.records()  # loads the namespace
        doc, _, vec = _chroma(mem, ["office"])["office"]
        assert doc == "The office is in Leeds."
        assert np.allclose(vec, mem._db.vectors("default", ["office"])["office"], atol=1e-6)
        assert _chroma(mem, ["lunch"])["lunch"][0] == "Lunch is at one on Fridays."


@pytest.mark.parametrize("n", [1, 5, CHECK_BATCH, CHECK_BATCH + 20])
def test_ids_written_again_replace_records_left_in_chroma(tmp_path: Path, n: int) -> None:
    """Records of no memory under ids a caller gives again (a write whose undo could not
    reach Chroma leaves them, made here by hand): the new texts and vectors replace them.
    Chroma's ``add`` would keep the old ones, silently; writes use it only for ids Chroma
    is known not to hold."""
    ids = [f"m{i}" for i in range(n)]
    old = [f"stale record {i} about the harbour ferry" for i in range(n)]
    new = [f"Fact {i}: the garden shed holds tool {i}." for i in range(n)]
    with Oblivion(tmp_path / "store", embedder=HashEmbedder()) as mem:
        mem.remember("The office is in Leeds.", supersede=False)  # makes the collection
        mem.store.collection("default").add(
            ids=ids, documents=old, embeddings=HashEmbedder().embed_documents(old)
        )
        if n == 1:
            mem.remember(new[0], id=ids[0], supersede=False)
        else:
            mem.remember_many(new, ids=ids, supersede=False)
        got = _chroma(mem, ids)
        stored = mem._db.vectors("default", ids)
        assert [got[m][0] for m in ids] == new
        for m in ids:
            assert np.allclose(got[m][2], stored[m], atol=1e-6)
        assert mem.store.count("default") == n + 1


SUMMARY_CHILD = r"""
import os, signal, sys
from oblivion_core import ManualClock, Oblivion, Policy
from oblivion_core.testing import HashEmbedder, word_count
path, op = sys.argv[1], sys.argv[2]
policy = Policy.template("balanced").replace(
    archive_low=0.9, archive_high=0.95, compress_below=0.9, compress_similarity=0.3,
    active_capacity=1, active_share_min=1, maintain_every=1000)
mem = Oblivion(path, clock=ManualClock(1000.0), policy=policy, embedder=HashEmbedder(dim=64),
               token_counter=word_count)
if op == "setup":
    for t in ["the garden shed holds the red lawn mower",
              "the garden shed holds the blue hedge trimmer",
              "the garden shed holds the green watering can",
              "the garden shed holds the old rake",
              "unrelated note about the quarterly budget meeting"]:
        mem.remember(t, importance=0.3, supersede=False)
    mem.maintain()
    mem.close()
    sys.exit(0)
mower = [r for r in mem.records(tier="cold") if "mower" in r.text][0]
mem._drop_summaries = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
if op == "edit":
    mem.edit(mower.id, "the garden shed is empty now: the lawn mower was sold")
elif op == "invalidate":
    mem.invalidate(mower.id)
else:
    new = mem.remember("the lawn mower is now kept in the garage", supersede=False)
    mem.supersede(mower.id, new.id)
"""


def _killed_after(path: Path, op: str) -> Oblivion:
    """The store at ``path`` opened again after :data:`SUMMARY_CHILD` compressed four
    memories and was killed right after ``op`` of one of them committed, before the
    drop of its summary."""
    from oblivion_core import ManualClock

    for step in ("setup", op):
        proc = subprocess.run(
            [sys.executable, "-c", SUMMARY_CHILD, str(path), step],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == (0 if step == "setup" else -signal.SIGKILL), proc.stderr
    return Oblivion(path, clock=ManualClock(1000.0), embedder=HashEmbedder(dim=64))


@pytest.mark.parametrize("op", ["edit", "invalidate", "supersede"])
def test_a_summary_a_change_made_outdated_is_dropped_after_a_crash(tmp_path: Path, op: str) -> None:
    """edit(), invalidate() and supersede() of a summary's original commit the change,
    then drop the summary in a second transaction: killed in between, the summary
    stayed for good, stating the old text (or the invalidated or superseded fact), its
    originals cold behind it, and no reopen, load, repair or maintain() dropped it. The
    summaries to drop are noted in the change's transaction; the namespace's next
    recall, write or maintain() drops them."""
    with _killed_after(tmp_path, op) as mem:
        before = {r.id: (r.activation, len(mem.history(r.id))) for r in mem.records()}
        # the recall that loads it drops them first: its rows, and the feedback it
        # queues by row, are those after the drop (a drop queued after the load moved
        # rows under that feedback, which then boosted a memory it never returned)
        mem.recall("what is in the garden shed", k=5)
        for r in mem.records():
            if r.id in before and r.activation != before[r.id][0]:
                assert len(mem.history(r.id)) > before[r.id][1], r.text  # journaled
        assert not [r for r in mem.records() if r.metadata.get("summary_of")]
        assert mem.records(tier="cold") == []
        texts = [it.text for it in mem.recall("lawn mower in the garden shed", k=5)]
        assert "the garden shed holds the red lawn mower" not in texts
        assert all("holds the red lawn mower" not in t for t in texts)  # no summary says it
        if op == "edit":
            assert "the garden shed is empty now: the lawn mower was sold" in texts
        assert mem._db.meta("outdated:default") is None


def test_a_summary_drop_that_keeps_failing_is_tried_again_by_maintain(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A drop failing again (Chroma refusing deletes) reloaded the namespace, whose load
    queued the drop again: the engine's lock was held for good, retrying (and, tried by
    every call, each failure reloaded the namespace: 0.3 s a recall at 30k memories).
    A failed drop is tried again by maintain() or the next open."""
    from oblivion_core import VectorStoreError

    with _killed_after(tmp_path, "edit") as mem:
        attempts: list[int] = []

        def refuse(*args: object, **kwargs: object) -> None:
            attempts.append(1)
            raise VectorStoreError("Chroma refused the delete")

        mem.store.delete = refuse  # type: ignore[method-assign]
        with caplog.at_level("ERROR", logger="oblivion_core"):
            mem.recall("what is in the garden shed", k=5)
            assert mem.count() == 6  # answered: nothing holds the lock
            mem.recall("what is in the garden shed", k=5)  # not tried by every call
        assert len(attempts) == 1 and "could not be dropped" in caplog.text
        mem.maintain()  # tried again
        assert len(attempts) == 2
        del mem.store.delete
        mem.maintain()  # (may compress the freed originals, the new text among them)
        assert all("holds the red lawn mower" not in r.text for r in mem.records())
        assert mem._db.meta("outdated:default") is None


def test_a_blank_standing_recall_after_the_crash_drops_the_outdated_summary_first(
    tmp_path: Path,
) -> None:
    """recall("", standing=...) (an image-only message) returned before the drop, so it
    still showed the summary a crash had left outdated."""
    with _killed_after(tmp_path, "edit") as mem:
        shown = mem.recall("", standing=["summary", "fact"], k=10)
        assert all("holds the red lawn mower" not in t for t in shown.texts)
        assert not [r for r in mem.records() if r.metadata.get("summary_of")]
