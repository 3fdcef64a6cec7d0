"""SeqSet: membership by sequence number and the log of entries the lexical index reads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import seq_set
from oblivion_core.seq_set import SeqSet

_STEP = st.tuples(st.booleans(), st.lists(st.integers(0, 200), max_size=8))


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_STEP, max_size=25), limit=st.sampled_from([1, 5, 20, 2_048]))
def test_mask_and_entries_since_any_version(
    steps: list[tuple[bool, list[int]]], limit: int
) -> None:
    """The mask holds what was added and not discarded since; ``entered_since(v)`` is
    every entry after the ``v``-th, in order, or ``None`` once the log (``LOG_LIMIT``
    entries, whole adds, the last one always) no longer reaches back to it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(seq_set, "LOG_LIMIT", limit)
        s = SeqSet()
        members: set[int] = set()
        entries: list[int] = []
        last = 0  # entries of the last add
        for enter, seqs in steps:
            arr = np.array(seqs, dtype=np.int64)
            if enter:
                s.add(arr)
                members |= set(seqs)
                entries += seqs
                last = len(seqs) if seqs else last
            else:
                s.discard(arr)
                members -= set(seqs)
            assert set(np.flatnonzero(s.mask).tolist()) == members
            assert s.entered == len(entries)
            reached = 0
            for v in range(len(entries) + 1):
                got = s.entered_since(v)
                if got is None:
                    assert reached == 0  # only the oldest versions are out of reach
                    continue
                reached += 1
                assert got.tolist() == entries[v:]
            assert reached >= last + 1
            if len(entries) <= limit:
                assert reached == len(entries) + 1


def test_a_set_is_not_changed_by_what_it_was_given() -> None:
    """The set keeps its own copy of added sequence numbers: the caller's array may be
    reused."""
    s = SeqSet()
    seqs = np.array([3, 5], dtype=np.int64)
    s.add(seqs)
    seqs[:] = 7
    got = s.entered_since(0)
    assert got is not None and got.tolist() == [3, 5]
    assert np.flatnonzero(s.mask).tolist() == [3, 5]
