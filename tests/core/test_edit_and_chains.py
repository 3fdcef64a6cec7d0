"""Supersession follows what memories say now: an edited text leaves the chains it was
part of and is judged again, forgetting the middle of a chain keeps the oldest statement
hidden, rerank() returns exactly the candidates it was given, and an invalidated memory
is never reinforced."""

from __future__ import annotations

from pathlib import Path

import pytest

from oblivion_core import InvalidInputError, ManualClock, Oblivion
from oblivion_core.testing import HashEmbedder, word_count


def _colours(mem: Oblivion) -> None:
    mem.remember("My favourite colour is blue.", id="blue")
    mem.remember("My favourite colour is green now.", id="green")
    mem.remember("My favourite colour is red now.", id="red")


def test_forgetting_the_middle_of_a_chain_keeps_the_oldest_hidden(mem: Oblivion) -> None:
    _colours(mem)
    assert mem.get("blue").superseded_by == "green"
    assert mem.get("green").superseded_by == "red"
    mem.forget("green")
    assert mem.get("blue").superseded_by == "red"
    ids = mem.recall("What is my favourite colour?").ids
    assert "red" in ids and "blue" not in ids


def test_forgetting_the_newest_makes_the_one_before_current(mem: Oblivion) -> None:
    _colours(mem)
    mem.forget("red")
    assert mem.get("green").superseded_by is None
    assert mem.get("blue").superseded_by == "green"


def test_editing_the_successor_into_something_else_frees_the_older_fact(mem: Oblivion) -> None:
    mem.remember("My home city is Leeds.", id="leeds")
    mem.remember("My home city is York now.", id="york")
    assert mem.get("leeds").superseded_by == "york"
    mem.edit("york", "I had pasta for lunch today.")
    assert mem.get("leeds").superseded_by is None
    assert "leeds" in mem.recall("What is my home city?").ids
    assert any(e.kind == "unsupersede" for e in mem.history("leeds"))


def test_an_edited_stale_statement_is_current_and_judged_as_the_newest(mem: Oblivion) -> None:
    mem.remember("My favourite drink is tea.", id="a")
    mem.remember("My favourite drink is coffee.", id="b")
    assert mem.get("a").superseded_by == "b"
    mem.edit("a", "I go hiking in the Alps every summer.")
    assert mem.get("a").superseded_by is None
    assert mem.recall("hiking in the Alps").ids[0] == "a"
    # a new statement of the same fact, written as an edit, supersedes the other one
    mem.edit("a", "My favourite drink is cocoa now.")
    assert mem.get("b").superseded_by == "a"
    assert mem.get("a").superseded_by is None


def test_edit_with_supersede_false_judges_nothing(mem: Oblivion) -> None:
    mem.remember("My favourite drink is tea.", id="a")
    mem.remember("I go hiking in the Alps.", id="b")
    mem.edit("b", "My favourite drink is coffee now.", supersede=False)
    assert mem.get("a").superseded_by is None


def test_remember_with_supersede_false_judges_nothing(mem: Oblivion) -> None:
    mem.remember("My favourite drink is tea.", id="a")
    mem.remember("My favourite drink is coffee now.", id="b", supersede=False)
    assert mem.get("a").superseded_by is None


def test_an_edited_list_item_leaves_the_list(mem: Oblivion) -> None:
    mem.remember("Add oat milk to the shopping list.", id="milk")
    mem.remember("The dentist appointment is on Friday at 3pm.", id="dentist")
    mem.remember("Add rice to the shopping list.", id="rice")

    def listed() -> list[str]:
        result = mem.recall("What's on my shopping list?", feedback=False)
        return [i.id for i in result if i.why["relevance_signals"].get("list_item")]

    assert sorted(listed()) == ["milk", "rice"]
    mem.edit("milk", "The quarterly report is due next Monday.")
    assert listed() == ["rice"]
    mem.edit("dentist", "Add bread to the shopping list.")
    assert sorted(listed()) == ["dentist", "rice"]


def test_rerank_returns_exactly_the_candidates_given(mem: Oblivion) -> None:
    _colours(mem)
    # blue alone: its successor is not a candidate, so it is neither added nor hidden
    assert mem.rerank("favourite colour", [("blue", 0.9)]).ids == ["blue"]
    # both: every candidate comes back, the stale one just below its successor
    ids = mem.rerank("favourite colour", [("blue", 0.9), ("red", 0.5)]).ids
    assert ids == ["red", "blue"]


def test_an_invalidated_memory_is_never_reinforced(mem: Oblivion) -> None:
    mem.remember("The office is in Leeds.", id="office")
    mem.remember("I walk the dog every morning.", id="dog")
    mem.link("office", "dog", 1.0)
    mem.invalidate("office")
    dog = mem.get("dog").activation
    assert mem.confirm("office") == 0.0
    assert mem.mark_used(["office"]) == [0.0]
    assert mem.reinforce(["office"]) == [0.0]
    assert mem.get("office").activation == 0.0
    assert mem.get("dog").activation == pytest.approx(dog)


def test_a_statement_whose_successor_was_invalidated_can_be_superseded_again(
    mem: Oblivion,
) -> None:
    """Invalidating the newer statement makes the older one current; a later statement
    of the same fact then supersedes the older one (it used to stay stale in name only,
    never judged again, and came back beside the newest)."""
    mem.remember("My favourite colour is blue.", id="blue")
    mem.remember("My favourite colour is green now.", id="green")
    mem.invalidate("green")
    assert "blue" in mem.recall("What is my favourite colour?").ids
    mem.remember("My favourite colour is red now.", id="red")
    assert mem.get("blue").superseded_by == "red"
    ids = mem.recall("What is my favourite colour?").ids
    assert "red" in ids and "blue" not in ids


def test_a_list_item_whose_removal_was_invalidated_is_on_the_list_again(mem: Oblivion) -> None:
    """The removal of a list item being invalidated puts the item back among the list's
    items (it used to come back as an ordinary hit only)."""
    mem.remember("Add rice to the shopping list.", id="rice")
    mem.remember("Add eggs to the shopping list.", id="eggs")
    mem.remember("Remove eggs from the shopping list.", id="no-eggs")
    assert mem.get("eggs").superseded_by == "no-eggs"
    listed = lambda: {  # noqa: E731
        it.id
        for it in mem.recall("What is on my shopping list?")
        if (it.why.get("relevance_signals") or {}).get("list_item")
    }
    assert "eggs" not in listed()
    mem.invalidate("no-eggs")
    assert {"rice", "eggs"} <= listed()


def test_editing_the_middle_of_a_chain_keeps_the_oldest_hidden(mem: Oblivion) -> None:
    """Like forgetting it: the oldest statement then waits on the newest (editing the
    middle one used to make the oldest current beside the newest), and the move is
    journaled."""
    _colours(mem)
    mem.edit("green", "The dentist appointment is on Monday.")
    assert mem.get("blue").superseded_by == "red"
    assert mem.get("green").superseded_by is None
    ids = mem.recall("What is my favourite colour?").ids
    assert "red" in ids and "blue" not in ids
    moved = [e for e in mem.history("blue") if e.kind == "supersede"]
    assert moved[-1].detail["by"] == "red"


def test_forgetting_a_successor_journals_what_it_did_to_the_older_statements(
    mem: Oblivion,
) -> None:
    """forget() of a newer statement re-points or frees the older ones; each change is
    journaled with the activation before and after (the freed one gets its importance
    floor back), as edit() does."""
    _colours(mem)
    mem.forget("green")  # blue now waits on red
    moved = mem.history("blue")[-1]
    assert (moved.kind, moved.detail["by"]) == ("supersede", "red")
    mem.forget("red")  # blue is current again
    freed = mem.history("blue")[-1]
    assert freed.kind == "unsupersede"
    assert freed.after == pytest.approx(mem.get("blue").activation)
    assert freed.after >= freed.before


def test_a_stale_statement_ranked_below_its_successor_says_so(mem: Oblivion) -> None:
    """With include_superseded=True a stale statement scoring higher than its successor
    is capped just below it; its ``why`` gives that score (and the uncapped one), so the
    explanations agree with the ranks."""
    mem.remember("Project Falcon deadline is Friday.", id="old", importance=1.0)
    mem.remember("Falcon: new date set.", id="new", importance=0.0)
    mem.supersede("old", "new")
    mem.confirm("old")  # more active and important than its successor: it would rank first
    mem.confirm("old")
    result = mem.recall("Project Falcon deadline is Friday", include_superseded=True)
    assert result.ids[:2] == ["new", "old"]
    new, old = result.items[:2]
    assert old.why["ranked_below"] == "new"
    assert old.why["score"] == pytest.approx(old.score) and old.score < new.score
    assert old.why["uncapped_score"] > new.why["score"]
    assert "just below its successor new" in old.why["explanation"]
    assert all(it.why["score"] == pytest.approx(it.score) for it in result)


def test_editing_an_invalidated_memory_makes_nothing_stale(mem: Oblivion) -> None:
    """An invalidated memory is wrong whatever it says now: editing it judges nothing
    (it used to supersede the memory it restated, as "detected on write")."""
    mem.remember("My favourite colour is blue.", id="blue")
    mem.remember("I like hiking.", id="wrong")
    mem.invalidate("wrong")
    mem.edit("wrong", "My favourite colour is green now.")
    assert mem.get("blue").superseded_by is None
    assert "blue" in mem.recall("What is my favourite colour?").ids


def test_edit_gives_another_category_and_importance_from_now_on(tmp_path: Path) -> None:
    """edit(category=, importance=) keeps the activation, then the memory decays at the
    new category's rate with the new floor, in the journal, Chroma's record and after a
    reopen; a failed change leaves the old ones."""
    clock = ManualClock()

    def open_() -> Oblivion:
        return Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)

    with open_() as mem:
        m = mem.remember("ok thanks!", category="small_talk", importance=0.1)
        clock.advance(3600)
        before = mem.get(m.id).activation
        rec = mem.edit(m.id, category="instruction", importance=0.9)
        assert (rec.category, rec.importance) == ("instruction", 0.9)
        assert rec.activation == pytest.approx(before)
        assert mem.history(m.id)[-1].detail == {
            "text_changed": False,
            "metadata_changed": False,
            "category": "instruction",
            "importance": 0.9,
        }
        col = mem.store.collection("default")
        assert col.get(ids=[m.id])["metadatas"][0]["category"] == "instruction"
        clock.advance(5 * 86_400)  # ten of small talk's half-lives, a fraction of an instruction's
        live = mem.get(m.id).activation
        assert live > 0.8 * before
        with pytest.raises(InvalidInputError, match="importance"):
            mem.edit(m.id, importance=1.5)
        with pytest.raises(InvalidInputError, match="changes nothing"):
            mem.edit(m.id)
    with open_() as mem:
        again = mem.get(m.id)
        assert (again.category, again.importance) == ("instruction", 0.9)
        assert again.activation == pytest.approx(live)


def test_invalidating_the_successor_gives_the_older_statement_its_floor_back(
    tmp_path: Path,
) -> None:
    """B superseded A, then B was marked wrong: recall showed A again, but A kept its
    superseded flag, so it decayed to 0 (no importance floor) and maintain() with
    forgetting on deleted the current statement of the fact. A is current again, as
    after a forget() of B, and stays so after a reopen."""
    from oblivion_core import Policy

    clock = ManualClock()
    policy = Policy().replace(forget_enabled=True, maintain_every=0, adapt=False)

    def open_() -> Oblivion:
        return Oblivion(
            tmp_path, clock=clock, policy=policy, embedder=HashEmbedder(), token_counter=word_count
        )

    with open_() as mem:
        a = mem.remember("My office is in building 4.", importance=0.5, category="fact")
        clock.advance(100)
        b = mem.remember("My office is in building 7 now.", importance=0.5, category="fact")
        assert mem.get(a.id).superseded_by == b.id
        mem.invalidate(b.id, reason="it never moved")
        assert mem.get(a.id).superseded_by is None
        last = mem.history(a.id)[-1]
        assert (last.kind, last.detail["reason"]) == (
            "unsupersede",
            "its successor was invalidated",
        )
    with open_() as mem:
        assert mem.get(a.id).superseded_by is None
        for _ in range(6):
            clock.advance(120 * 86_400.0)
            mem.maintain()
        kept = mem.get(a.id)  # its floor: importance 0.5 keeps it from forgetting
        assert kept.activation > 0
        assert a.id in mem.recall("where is my office", deep=True).ids


def test_invalidating_the_middle_of_a_chain_hands_it_to_the_newest(mem: Oblivion) -> None:
    """A -> B -> C with B marked wrong: A waits on C, the next valid statement."""
    a = mem.remember("The meeting is on Monday.", category="fact")
    b = mem.remember("The meeting is on Tuesday.", category="fact")
    c = mem.remember("The meeting is on Wednesday.", category="fact")
    mem.supersede(a.id, b.id)
    mem.supersede(b.id, c.id)
    mem.invalidate(b.id)
    assert mem.get(a.id).superseded_by == c.id
    assert mem.recall("When is the meeting?", deep=True, k=3).ids[0] == c.id
