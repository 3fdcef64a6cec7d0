"""Lists built over many turns: a list question recalls the list's current state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oblivion_core import ManualClock, Oblivion
from oblivion_core.lists import ListIndex, list_question
from oblivion_core.supersession import parse
from oblivion_core.testing import memory

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


def test_an_item_added_again_after_its_removal_is_marked_a_list_item() -> None:
    """Bread, removed then added again, supersedes its removal and ranks with its
    relevance: it was shown first, its explanation said "list item", but its
    relevance_signals lacked ``list_item`` (the removal's signals were read)."""
    mem = memory()
    mem.remember_many(
        [
            "add oat milk to the shopping list",
            "we don't need bread any more",
            "add bread to the shopping list",
        ]
    )
    got = mem.recall("what do I still need to buy?", k=3, feedback=False)
    bread = next(i for i in got if i.text == "add bread to the shopping list")
    assert "inherited_from" in bread.why["relevance_signals"]  # the case itself
    assert bread.why["relevance_signals"].get("list_item") == 1.0
    assert "list item" in bread.why["explanation"]


@pytest.mark.parametrize(
    "text",
    [
        "Should I add eggs to the shopping list too?",
        "Shall we take the bread off the shopping list?",
        "Do you want me to add bread to the list?",
        "Would you like me to put milk on the shopping list?",
        "Want me to add eggs to the list?",
        "Do we need to buy milk?",
        "Do we already have eggs?",
        "Have we got the milk already?",
        "assistant: Should I add eggs to the shopping list too?",
        "What do I need to pack for the trip?",
    ],
)
def test_a_question_or_an_offer_changes_no_list(text: str) -> None:
    assert parse(text).op is None


@pytest.mark.parametrize(
    ("text", "op", "item"),
    [
        ("Can you add milk to the shopping list?", "add", "milk"),
        ("Could you please put eggs on my shopping list?", "add", "egg"),
        ("I should add eggs to the list", "add", "egg"),
        ("We need to buy bread for Sunday.", "add", "bread"),
        ("We already have eggs.", "remove", "egg"),
        ("Take the eggs off the shopping list.", "remove", "egg"),
    ],
)
def test_a_request_or_a_statement_still_does(text: str, op: str, item: str) -> None:
    statement = parse(text)
    assert (statement.op, item in statement.items) == (op, True)


def test_a_question_hides_no_item_and_an_offer_adds_none_through_the_real_stack(
    tmp_path: Path, real_embedder: Any
) -> None:
    """ "Should I take the eggs off the shopping list?" made the eggs stale (hidden from
    recall), and an assistant's "Do you want me to add bread?" (stored with its role, as
    the LlamaIndex adapters store messages) was listed as an item."""
    clock = ManualClock()
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        eggs = mem.remember("Add eggs to the shopping list.").id
        milk = mem.remember("Add oat milk to the shopping list.").id
        for filler in FILLER:
            clock.advance(60.0)
            mem.remember(filler)
        mem.remember("Should I take the eggs off the shopping list?")
        mem.remember(
            "Do you want me to add bread to the shopping list?", metadata={"role": "assistant"}
        )
        assert mem.get(eggs).superseded_by is None
        result = mem.recall("What's on my shopping list?", k=6)
        listed = {i.id for i in result if "list_item" in i.why["relevance_signals"]}
        assert listed == {eggs, milk}
