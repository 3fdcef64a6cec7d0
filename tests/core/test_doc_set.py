"""DocSet: membership by sequence number, its version and the log of changes searches read."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import doc_set
from oblivion_core.doc_set import DocSet

_STEP = st.tuples(st.booleans(), st.lists(st.integers(0, 200), max_size=8))


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_STEP, max_size=25), limit=st.sampled_from([1, 5, 20, 4_096]))
def test_mask_version_and_changes_since_any_version(
    steps: list[tuple[bool, list[int]]], limit: int
) -> None:
    """The mask holds what was added and not discarded since; every add, and every
    discard of documents within the mask, counts one version; ``changed_since(v)`` holds
    every document changed after version ``v``, or is ``None`` for versions older than the
    log holds (``LOG_LIMIT`` documents, the last change always)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(doc_set, "LOG_LIMIT", limit)
        s = DocSet()
        members: set[int] = set()
        changes: list[list[int]] = []  # by version
        for enter, seqs in steps:
            arr = np.array(seqs, dtype=np.int64)
            if enter:
                s.add(arr)
                members |= set(seqs)
                changed = seqs
            else:
                changed = [q for q in seqs if q < len(s.mask)]
                s.discard(arr)
                members -= set(seqs)
            if changed:
                changes.append(changed)
            assert set(np.flatnonzero(s.mask).tolist()) == members
            assert s.version == len(changes)
            reached = []
            for v in range(len(changes) + 1):
                got = s.changed_since(v)
                if got is not None:
                    reached.append(v)
                    assert sorted(got.tolist()) == sorted(q for c in changes[v:] for q in c)
            assert reached == list(range(len(changes) + 1 - len(reached), len(changes) + 1))
            held = sum(len(c) for c in changes[len(changes) + 1 - len(reached) :])
            assert len(reached) >= min(len(changes), 1) + 1 or not changes
            if sum(len(c) for c in changes) <= limit:
                assert len(reached) == len(changes) + 1
            else:
                assert held <= max(limit, len(changes[-1]))


def test_a_set_keeps_its_own_copy_of_what_it_was_given() -> None:
    """The set logs its own copy of the sequence numbers: the caller may reuse its array."""
    s = DocSet()
    seqs = np.array([3, 5], dtype=np.int64)
    s.add(seqs)
    seqs[:] = 7
    got = s.changed_since(0)
    assert got is not None and got.tolist() == [3, 5]
    assert np.flatnonzero(s.mask).tolist() == [3, 5]
