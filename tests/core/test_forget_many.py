"""forget_many(): many memories deleted in one transaction and one vector store call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oblivion_core import InvalidInputError, Oblivion, UnknownMemoryError
from oblivion_core.embedding import FastEmbedEmbedder


def test_many_go_in_one_vector_store_call_and_the_rest_stay(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """On disk with the local model: the ids given are deleted with one Chroma delete
    (forget() made one per memory, 13 ms apiece), recall never returns them, the others
    stay, and a reopened store agrees."""
    path = tmp_path / "mem"
    with Oblivion(path, embedder=real_embedder) as mem:
        ids = [
            r.id for r in mem.remember_many([f"Note {i} about the allotment." for i in range(30)])
        ]
        calls: list[int] = []
        delete = mem.store.delete

        def counted(namespace: str, gone: Any) -> None:
            calls.append(len(gone))
            delete(namespace, gone)

        mem.store.delete = counted  # type: ignore[method-assign]
        assert mem.forget_many(ids[:20]) == ids[:20]
        assert calls == [20]
        assert mem.store.ids("default") == set(ids[20:])
        hits = mem.recall("allotment note", k=30, deep=True, feedback=False)
        assert {i.id for i in hits} <= set(ids[20:])
        assert [e.kind for e in mem.history(ids[0])][-1] == "forget"
    with Oblivion(path, embedder=real_embedder) as mem:
        assert sorted(r.id for r in mem.records()) == sorted(ids[20:])


def test_an_unknown_id_deletes_none_unless_skipped(fresh: Any) -> None:
    """One unknown id refuses the whole call, nothing deleted; skip_missing passes over it."""
    with fresh() as mem:
        ids = [r.id for r in mem.remember_many(["tea at four", "the offsite in Lisbon"])]
        with pytest.raises(UnknownMemoryError, match="'nope'"):
            mem.forget_many([ids[0], "nope"])
        assert mem.count() == 2
        assert mem.forget_many([ids[0], "nope", ids[0]], skip_missing=True) == [ids[0]]
        assert [r.id for r in mem.records()] == [ids[1]]
        assert mem.forget_many([], skip_missing=True) == []


@pytest.mark.parametrize("bad", ["one-id", b"bytes", 7, [1, 2]])
def test_what_is_no_list_of_ids_is_refused(fresh: Any, bad: Any) -> None:
    """A single id (a string), bytes or non-string ids are refused, with what to pass."""
    with fresh() as mem:
        mem.remember("tea at four", id="one-id")
        with pytest.raises(InvalidInputError):
            mem.forget_many(bad)
        assert mem.count() == 1
