"""Lists built over many turns: a list question recalls the list's current state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oblivion_core import ManualClock, Oblivion
from oblivion_core.lists import ListIndex, list_question

FILLER = [
    "The train was twenty minutes late this morning, so I read the news.",
    "Lunch today was a falafel wrap from the place near the station.",
    "We spent an hour discussing the font on the intranet and decided nothing.",
    "My neighbour has taken up the drums, and I can hear every practice session.",
    "The survey summary needs another pass before it goes out.",
    "I watched a documentary about volcanoes last night. Surprisingly gripping.",
]
TURNS = [
    "Put bread on the list too.",
    "Shopping list: lemons, please.",
    "We're out of rice, so stick that on the shopping list.",
    "We don't need bread any more.",
    "Add oat milk to the shopping list.",
    "Don't let me forget pasta when I next do the shop.",
]
CURRENT = {"lemons", "rice", "oat milk", "pasta"}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What do I still need to buy?", "shopping"),
        ("What's on my shopping list?", "shopping"),
        ("What's on the list?", None),
        ("What do I need to pack for the trip?", "packing"),
        ("Read me my packing list", "packing"),
        ("What is my favourite colour?", False),
        ("Where does my sister live?", False),
        ("Who is on the guest list for the wedding?", None),
    ],
)
def test_list_questions(query: str, expected: object) -> None:
    assert list_question(query) == expected


def test_list_index_tracks_additions_per_list() -> None:
    index = ListIndex()
    index.note(
        ["a", "b", "c", "d"],
        [
            "Add milk to the shopping list",
            "Put my passport on the packing list",
            "My favourite colour is blue",
            "Add eggs",
        ],
    )
    assert list(index.additions("shopping")) == ["a", "d"]
    assert set(index.additions(None)) == {"a", "b", "d"}
    index.discard(["a"])
    assert list(index.additions("shopping")) == ["d"]


def _store(mem: Oblivion, clock: ManualClock) -> dict[str, str]:
    ids: dict[str, str] = {}
    for k, turn in enumerate(TURNS):
        for filler in FILLER:
            clock.advance(60.0)
            mem.remember(f"user: {filler} ({k})")
        clock.advance(60.0)
        ids[turn] = mem.remember(f"user: {turn}").id
    return ids


def test_a_list_question_recalls_the_current_items_through_the_real_stack(
    tmp_path: Path, real_embedder: Any
) -> None:
    clock = ManualClock()
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        ids = _store(mem, clock)
        result = mem.recall("What do I still need to buy?", k=6)
        listed = [i for i in result if i.why["relevance_signals"].get("list_item") == 1.0]
        texts = {item.text for item in listed}
        assert texts == {f"user: {TURNS[k]}" for k in (1, 2, 4, 5)}
        assert result.items[: len(listed)] == tuple(listed)  # ranked first
        # the removed item is kept (superseded by its removal), not recalled
        assert mem.get(ids[TURNS[0]]).superseded_by == ids[TURNS[3]]
    # reopened: the list is rebuilt from the stored texts
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        again = mem.recall("What's on my shopping list?", k=6)
        assert {i.text for i in again if "list_item" in i.why["relevance_signals"]} == texts


def test_a_forgotten_addition_leaves_the_list(mem: Oblivion, clock: ManualClock) -> None:
    ids = _store(mem, clock)
    mem.recall("What do I still need to buy?")  # builds the list index
    mem.forget(ids[TURNS[1]])
    added = mem.remember("user: Add apples to the shopping list.").id
    items = {
        item.id
        for item in mem.recall("What do I still need to buy?", k=10)
        if "list_item" in item.why["relevance_signals"]
    }
    assert ids[TURNS[1]] not in items
    assert added in items
    assert ids[TURNS[0]] not in items  # removed by "we don't need bread any more"
