"""Standing memories: recall(standing=...) shows a category's current memories whatever
the query (a user's standing instructions in every prompt)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oblivion_core import InvalidInputError, ManualClock, Oblivion, Policy, Tier

DAY = 86_400.0
RULES = [
    "Always answer in British English.",
    "Please call me Dee from now on.",
    "Use metric units.",
    "Never schedule meetings before 10am.",
]
FACTS = [
    "My sister lives in Leeds.",
    "The Kestrel launch is on 28 March.",
    "I had a falafel wrap for lunch.",
    "The weather has been grey all week.",
]
# no archive gate, no neighbours: what is shown is what the candidates' scores say
POLICY = Policy().replace(maintain_every=0, adapt=False, expand_neighbours=0)


def _store(mem: Oblivion) -> tuple[list[str], list[str]]:
    rules = [mem.remember(t, category="instruction").id for t in RULES]
    facts = [mem.remember(t, category="fact").id for t in FACTS]
    return rules, facts


def test_standing_memories_come_first_whatever_the_query(fresh: Any) -> None:
    """An unrelated query shows the instructions first, each saying why."""
    with fresh(policy=POLICY) as mem:
        rules, facts = _store(mem)
        plain = mem.recall("Where does my sister live?", k=4, feedback=False)
        assert plain.ids[0] == facts[0]
        result = mem.recall(
            "Where does my sister live?", k=4, standing="instruction", feedback=False
        )
        standing = [it for it in result if (it.why.get("relevance_signals") or {}).get("standing")]
        assert len(standing) == 2  # half of k's places
        assert {it.id for it in standing} <= set(rules)
        assert result.ids[:2] == [it.id for it in standing]
        assert facts[0] in result.ids  # the query's own match keeps a place
        for it in standing:
            assert "standing: shown whatever the query" in it.why["explanation"]
        assert "standing" not in result[2].why["explanation"]


@pytest.mark.parametrize("kept_out", ["invalidated", "filtered"])
def test_standing_memories_are_as_relevant_as_the_best_match_shown(
    fresh: Any, kept_out: str
) -> None:
    """An invalidated memory (or one the filter leaves out) that matched the query best
    set the standing memories' relevance, and so lowered every hit's activation share:
    a hit scored less with standing= than without."""
    with fresh(policy=POLICY) as mem:
        rule = mem.remember(RULES[0], category="instruction").id
        hit = mem.remember("The quarterly invoice totals are reviewed by finance in March.").id
        query = "quarterly invoice totals reviewed by finance"
        best = mem.remember(query, metadata={"draft": True}).id  # the query itself
        where = None
        if kept_out == "invalidated":
            mem.invalidate(best)
        else:
            where = {"draft": {"$ne": True}}
        plain = mem.recall(query, feedback=False, where=where)
        assert plain.ids == [hit, rule] or plain.ids == [hit]
        shown = mem.recall(query, standing="instruction", feedback=False, where=where)
        assert shown.ids[:2] == [rule, hit]
        assert shown[0].relevance == pytest.approx(plain[0].relevance)
        assert shown[1].score == pytest.approx(plain[0].score)
        assert shown[1].why["activation_share"] == pytest.approx(plain[0].why["activation_share"])


def test_a_standing_memory_replaced_by_another_category_brings_its_successor(
    fresh: Any,
) -> None:
    """A standing instruction superseded by a preference: its successor is shown first
    in its place, saying so (the first fix of the standing items' relevance showed
    neither)."""
    with fresh(policy=POLICY) as mem:
        old = mem.remember(RULES[0], category="instruction").id
        facts = [mem.remember(t, category="fact").id for t in FACTS]
        new = mem.remember("From now on answer in American English.", category="preference").id
        mem.supersede(old, new)
        result = mem.recall("Where does my sister live?", k=4, standing="instruction")
        assert result.ids[0] == new and old not in result.ids
        assert "standing" in result[0].why["explanation"]
        assert facts[0] in result.ids


def test_standing_places_go_to_the_best_scored(fresh: Any) -> None:
    """With more standing memories than places, the most important ones are shown."""
    with fresh(policy=POLICY) as mem:
        low = [
            mem.remember(t, category="instruction", importance=0.3).id
            for t in ("Use emojis sparingly.", "Prefer bullet points.")
        ]
        high = [
            mem.remember(t, category="instruction", importance=1.0).id
            for t in ("Never share my address.", "Always answer in British English.")
        ]
        mem.remember("My sister lives in Leeds.")
        result = mem.recall("sister", k=4, standing=["instruction"], feedback=False)
        assert set(result.ids[:2]) == set(high)
        assert not set(low) & set(result.ids[:2])


def test_a_single_place_when_k_is_one(fresh: Any) -> None:
    """k=1 still shows one standing memory (at least one place)."""
    with fresh(policy=POLICY) as mem:
        rules, _ = _store(mem)
        result = mem.recall("lunch", k=1, standing="instruction", feedback=False)
        assert result.ids[0] in rules


def test_only_current_standing_memories_are_shown(fresh: Any) -> None:
    """A superseded or invalidated instruction is not shown; its successor is."""
    with fresh(policy=POLICY) as mem:
        old = mem.remember("Call me Dee.", category="instruction").id
        new = mem.remember("Call me Dee Okafor in emails.", category="instruction").id
        gone = mem.remember("Use metric units.", category="instruction").id
        mem.supersede(old, new)
        mem.invalidate(gone)
        mem.remember("My sister lives in Leeds.")
        result = mem.recall("sister", k=6, standing="instruction", feedback=False)
        assert new in result.ids
        assert old not in result.ids
        assert gone not in result.ids


def test_archived_standing_memories_are_shown_even_without_the_archive(fresh: Any) -> None:
    """An instruction that decayed to the archive still applies: deep=False shows it."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        rule = mem.remember("Book aisle seats.", category="event", importance=0.0).id
        clock.advance(60 * DAY)
        mem.remember("My sister lives in Leeds.", importance=1.0)
        mem.maintain()
        assert mem.get(rule).tier is Tier.ARCHIVE
        assert rule not in mem.recall("sister", deep=False, feedback=False).ids
        result = mem.recall("sister", deep=False, standing="event", feedback=False)
        assert result.ids[0] == rule


def test_cold_standing_memories_only_with_include_cold(fresh: Any) -> None:
    """Memories folded into a summary stay behind it, unless cold ones are asked for."""
    clock = ManualClock()
    meeting = [
        "In the budget meeting we agreed the travel budget is frozen.",
        "The budget meeting moved the marketing budget to next quarter.",
        "At the budget meeting Priya asked for a hiring budget review.",
        "The budget meeting ended with a plan to cut the cloud budget.",
    ]
    policy = POLICY.replace(compress_below=0.1, supersede=False)
    with fresh(clock=clock, policy=policy) as mem:
        notes = [
            r.id
            for r in mem.remember_many(meeting, categories=["event"] * 4, importances=[0.0] * 4)
        ]
        clock.advance(60 * DAY)
        mem.maintain()
        assert {mem.get(m).tier for m in notes} == {Tier.COLD}
        shown = mem.recall("weather", k=8, standing="event", feedback=False).ids
        assert not set(notes) & set(shown)
        cold = mem.recall("weather", k=8, standing="event", include_cold=True, feedback=False)
        assert set(cold.ids[:4]) == set(notes)


def test_standing_memories_stay_in_their_namespace(fresh: Any) -> None:
    """Another namespace's instructions are never shown."""
    with fresh(policy=POLICY) as mem:
        mine = mem.remember("Use metric units.", category="instruction", namespace="ana").id
        mem.remember("Always answer in French.", category="instruction", namespace="bo")
        mem.remember("My sister lives in Leeds.", namespace="ana")
        result = mem.recall("sister", namespace="ana", standing="instruction", feedback=False)
        assert mine in result.ids
        assert all(it.namespace == "ana" for it in result)


def test_standing_memories_never_break_the_budget(fresh: Any) -> None:
    """The budget holds with standing memories first; those that do not fit are left out."""
    with fresh(policy=POLICY) as mem:
        _store(mem)
        for budget in (0, 5, 12, 30, 200):
            result = mem.recall("sister", token_budget=budget, standing="instruction")
            assert result.total_tokens <= budget


def test_an_unknown_category_pins_nothing(fresh: Any) -> None:
    with fresh(policy=POLICY) as mem:
        _store(mem)
        a = mem.recall("sister", k=4, feedback=False)
        b = mem.recall("sister", k=4, standing=("nonexistent",), feedback=False)
        assert a.ids == b.ids


@pytest.mark.parametrize(
    ("standing", "match"),
    [
        (5, "standing must be a category name or a list of them"),
        ({"instruction": 1}, "standing must be a category name or a list of them"),
        (["instruction", ""], r"standing\[1\] must be a non-empty string"),
        ([None], r"standing\[0\] must be a non-empty string"),
        ("  ", "standing must be a non-empty string"),
    ],
)
def test_bad_standing_is_refused(fresh: Any, standing: object, match: str) -> None:
    """A wrong type says what to pass, and changes nothing stored."""
    with fresh(policy=POLICY) as mem:
        rules, facts = _store(mem)
        with pytest.raises(InvalidInputError, match=match):
            mem.recall("sister", standing=standing)  # type: ignore[arg-type]
        assert mem.count() == len(rules) + len(facts)


@pytest.mark.integration
def test_standing_instructions_through_the_real_stack(tmp_path: Path) -> None:
    """Chroma on disk, the local model and tiktoken: the user's instruction is shown for
    a question it shares nothing with, and again after a reopen."""
    with Oblivion(tmp_path, clock=ManualClock()) as mem:
        rule = mem.remember("Always answer in British English.").id
        assert mem.get(rule).category == "instruction"
        for text in FACTS:
            mem.remember(text)
        assert rule not in mem.recall("When is the Kestrel launch?", k=3).ids
        result = mem.recall("When is the Kestrel launch?", k=3, standing="instruction")
        assert result.ids[0] == rule
        assert "28 March" in result[1].text
    with Oblivion(tmp_path, clock=ManualClock()) as mem:
        assert mem.recall("lunch?", k=2, standing="instruction").ids[0] == rule


def _context_given(result: Any) -> set[str]:
    """The hits whose neighbouring turns the recall shows."""
    return {it.why["context_for"] for it in result if "context_for" in it.why}


@pytest.mark.parametrize("real", [False, True], ids=["offline", "real-stack"])
def test_standing_memories_leave_the_query_hits_their_turns(
    fresh: Any, tmp_path: Path, real: bool
) -> None:
    """The neighbours of "the best 3 hits" went to the first 3 places, which standing
    memories took: with 3 instructions, no hit brought the turn that answered it (the
    chat adapters show standing instructions by default)."""
    clock = ManualClock()
    policy = Policy().replace(maintain_every=0, adapt=False)
    with (
        Oblivion(tmp_path, clock=clock, policy=policy)
        if real
        else fresh(clock=clock, policy=policy)
    ) as mem:
        for rule in RULES[:1] + RULES[2:]:
            mem.remember(rule, category="instruction")
            clock.advance(3_600)
        turns = [
            "user: Can you help me plan the spring team offsite?",
            "assistant: Lisbon works well in April; the Casa Azul venue fits twelve people.",
            "user: How much money do we have for the team offsite?",
            "assistant: Finance approved 9,000 euros, including travel.",
            "user: Which hotel did we book for the team offsite?",
            "assistant: The Hotel Miramar, confirmation code QX81.",
        ]
        for turn in turns:
            mem.remember(turn, category="fact")
            clock.advance(40)
        query = "What's the budget for the team offsite?"
        plain = mem.recall(query, k=20, feedback=False)
        pinned = mem.recall(query, k=20, standing="instruction", feedback=False)
        assert len(_standing_items(pinned)) == 3
        assert len(_context_given(plain)) >= 2  # the third hit's turns are the others'
        assert _context_given(pinned) == _context_given(plain)
        assert any("9,000 euros" in it.text for it in pinned)


# ------------------------------------------------------------ a message with no text
def _standing_items(result: Any) -> list[str]:
    return [it.id for it in result if (it.why.get("relevance_signals") or {}).get("standing")]


@pytest.mark.parametrize("blank", ["", "   ", "\n"])
def test_a_blank_query_with_standing_shows_the_standing_memories_alone(
    fresh: Any, blank: str
) -> None:
    """An image-only message has no text to search: its standing memories are still
    shown, as a query's recall shows them first, and boosted as a recall boosts."""
    with fresh(policy=POLICY) as mem:
        rules, _ = _store(mem)
        old = mem.remember("Call me Dee.", category="instruction", importance=1.0).id
        new = mem.remember("Call me Dee Okafor.", category="instruction", importance=1.0).id
        mem.supersede(old, new)
        mem.invalidate(rules[1])
        for k in (1, 2, 4, 6, 12):
            blank_result = mem.recall(blank, k=k, standing="instruction", feedback=False)
            query_result = mem.recall("zzqx", k=k, standing="instruction", feedback=False)
            assert blank_result.ids == _standing_items(query_result)
            assert old not in blank_result.ids and rules[1] not in blank_result.ids
            assert len(blank_result) == max(1, k // 2) or len(blank_result) == 4
        before = len(mem.history(new))
        shown = mem.recall(blank, k=4, standing="instruction")
        assert new in shown.ids
        assert [e.kind for e in mem.history(new)][before:] == ["recall"]


def test_a_blank_query_keeps_to_the_filter_and_the_budget(fresh: Any) -> None:
    with fresh(policy=POLICY) as mem:
        mine = mem.remember("Answer in French.", category="instruction", metadata={"u": "a"}).id
        mem.remember(
            "Never book meetings before 10am.", category="instruction", metadata={"u": "b"}
        )
        assert mem.recall("", standing="instruction", where={"u": "a"}).ids == [mine]
        # the newer statement of another user's is no successor to show in its place
        mem.remember("Answer in Welsh please.", category="instruction", metadata={"u": "b"})
        assert mem.get(mine).superseded_by is not None
        assert mem.recall("", standing="instruction", where={"u": "a"}).ids == []
        tight = mem.recall("", standing="instruction", token_budget=0)
        assert tight.ids == [] and tight.total_tokens == 0


def test_a_blank_query_without_standing_is_still_refused(fresh: Any) -> None:
    """The error names standing=, the way to recall for a message with no text."""
    with fresh(policy=POLICY) as mem:
        _store(mem)
        with pytest.raises(InvalidInputError, match=r"query is empty.*standing='instruction'"):
            mem.recall("  ")
        with pytest.raises(InvalidInputError, match="query is empty"):
            mem.recall("", standing=())
