"""Stale facts: a newer statement of the same fact supersedes the older one."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import InvalidInputError, ManualClock, Oblivion, Policy, Tier
from oblivion_core.supersession import Candidate, LexicalSupersession, parse
from oblivion_core.testing import HashEmbedder, word_count

rule = LexicalSupersession()


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("My favourite colour is blue", "My favourite colour is green now", True),
        ("My favourite colour is blue", "Green is my favourite colour now", True),
        ("call me Sam", "Actually, call me Alex", True),
        ("My name is Sam", "My name is Alex", True),
        ("Add milk to the shopping list", "Remove milk from the shopping list", True),
        ("My sister lives in Leeds", "My sister lives in York these days", True),
        ("My favourite colour is blue", "I no longer like blue best; it's green", True),
        (
            "My favourite colour is blue",
            "My favourite colour is blue",
            True,
        ),  # restated: newest wins
        ("I went to Paris in May", "I went to Rome in June", False),
        ("Dana: my favourite colour is blue", "Sam: my favourite colour is green", False),
        ("Priya's favourite colour is red", "My favourite colour is green", False),
        ("Add milk to the shopping list", "Add eggs to the shopping list", False),
        (
            "I want a window seat on the outbound flight",
            "I want an aisle seat on the return flight",
            False,
        ),
    ],
)
def test_the_documented_rule(old: str, new: str, stale: bool) -> None:
    """The lexical rule supersedes restated facts and leaves independent ones alone."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new"),
    [("Call me Sam", "Call me Alex"), ("I go by Sam", "I go by Alex now")],
)
def test_sentence_initial_name_statements(old: str, new: str) -> None:
    """A new name supersedes the old one however the sentence is capitalised."""
    assert rule.supersedes(new, old, similarity=0.9)


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        # turns as the LangChain middleware and classic memory store them
        (
            "user: my flight is on Tuesday\nassistant: Got it, Tuesday.",
            "user: my flight is on Thursday now\nassistant: Noted, Thursday.",
            True,
        ),
        ("Human: my manager is Priya\nAI: Thanks.", "Human: my manager is Tom now\nAI: Ok.", True),
        (
            "user: my favourite colour is blue\nassistant: Blue, noted.",
            "user: my favourite colour is green now\nassistant: Green it is.",
            True,
        ),
        # the reply is not the user's statement
        (
            "user: what's the budget?\nassistant: the budget is 40k",
            "user: the budget is 55k",
            False,
        ),
        (
            "user: my flight is on Tuesday\nassistant: Noted.",
            "user: my flight is from Gatwick\nassistant: Noted.",
            False,
        ),
    ],
)
def test_a_transcript_states_its_first_speakers_facts(old: str, new: str, stale: bool) -> None:
    """A stored turn "user: ...\nassistant: ..." had no subject (sentences ended only at
    . ! ?; the value ran into the reply): 5 of 5 changes in the adapters' format missed."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("My salary is 52k.", "I got a raise, my salary is 58k.", True),
        ("My flight is on Tuesday.", "Just checked the booking, my flight is on Wednesday.", True),
        ("The standup is at 9am.", "Heads up everyone, the standup is at 10am now.", True),
        ("The budget is 40k.", "If we lose the client, the budget is 20k.", False),
        ("My car is fine.", "Tom said, my car is broken.", False),
        ("My flight is on Tuesday.", "Is it true, my flight is on Friday?", False),
        # a condition, hedge, hearsay or scope anywhere before the comma
        ("The budget is 40k.", "But if we lose the client, the budget is 20k.", False),
        ("The budget is 40k.", "Update: when the grant ends, the budget is 20k.", False),
        ("My budget is 40k.", "Maybe, my budget is 20k.", False),
        ("My budget is 40k.", "Apparently, my budget is 20k.", False),
        ("My budget is 40k.", "Per Tom, my budget is 20k.", False),
        ("On weekdays, my alarm is at 6am.", "On weekends, my alarm is at 9am.", False),
        ("The standup is at 9am.", "On Fridays, the standup is at 10am.", False),
        # another's words on the line before
        ("My budget is 40k.", "Tom told me:\nmy budget is 20k", False),
        ("My budget is 40k.", "Worst case:\nmy budget is 20k", False),
    ],
)
def test_a_leading_clause_does_not_hide_a_statement(old: str, new: str, stale: bool) -> None:
    """The subject had to open the sentence: "I got a raise, my salary is 58k" stated
    nothing; a condition or another's words before the comma still state nothing."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


def test_moved_in_a_non_correction_sense_supersedes_nothing() -> None:
    """A sentence that merely uses the verb 'moved' does not make an older fact stale."""
    old = "In the budget meeting we agreed the travel budget is frozen."
    new = "The budget meeting moved the marketing budget to next quarter."
    chosen = rule.choose(new, [Candidate("old", old, 0.8)])
    assert chosen == []


def test_low_similarity_protects_subject_statements() -> None:
    """Below the similarity threshold even a same-subject statement is left alone."""
    assert not rule.supersedes("My favourite colour is green", "My favourite colour is blue", 0.1)


@given(st.text(max_size=300))
def test_parse_never_fails(text: str) -> None:
    """Any text parses into a Statement without raising."""
    parse(text)


# ---------------------------------------------------------------- through the engine


@pytest.fixture
def colours(mem: Oblivion, clock: ManualClock) -> tuple[Oblivion, str, str]:
    """An engine where a newer favourite colour superseded an older one."""
    old = mem.remember("My favourite colour is blue")
    clock.advance(1_000.0)
    new = mem.remember("My favourite colour is green now")
    return mem, old.id, new.id


def test_newer_statement_supersedes_on_write(colours: tuple[Oblivion, str, str]) -> None:
    """The older memory is kept, points to its successor and is demoted below the band."""
    mem, old, new = colours
    rec = mem.get(old)
    assert rec.superseded_by == new
    assert rec.activation <= mem.policy.archive_low / 2
    assert mem.count() == 2
    event = [e for e in mem.history(old) if e.kind == "supersede"]
    assert len(event) == 1
    assert event[0].detail["by"] == new
    assert mem.stats()["superseded"] == 1


def test_two_restatements_in_one_batch_journal_one_supersession(
    mem: Oblivion, clock: ManualClock
) -> None:
    """Both texts of a batch restating an older fact named it stale: it got two
    "supersede" entries, the second with a ``before`` the first had already lowered,
    and the first naming a successor the engine did not keep. One entry now, naming the
    successor the engine holds, and the journal's values chain; as written one by one,
    the batch's texts chain (yellow, then red, then green)."""
    old = mem.remember("my favourite colour is yellow").id
    clock.advance(100.0)
    red, green = (
        r.id
        for r in mem.remember_many(["my favourite colour is red", "my favourite colour is green"])
    )
    (event,) = [e for e in mem.history(old) if e.kind == "supersede"]
    assert event.detail["by"] == red == mem.get(old).superseded_by
    assert mem.get(red).superseded_by == green
    assert event.after == pytest.approx(mem.get(old).activation, abs=1e-12)
    assert mem.recall("favourite colour").ids[0] == green


def test_recall_returns_the_newest_statement(colours: tuple[Oblivion, str, str]) -> None:
    """A query about the fact returns the successor, not the stale statement."""
    mem, _, new = colours
    assert mem.recall("my favourite colour blue").ids == [new]


def test_the_successor_ranks_with_the_relevance_of_the_stale_one_and_says_so(
    colours: tuple[Oblivion, str, str],
) -> None:
    """A query that matches the stale statement better ranks its successor with the stale
    one's relevance signals, and the why names where they came from."""
    mem, old, new = colours
    result = mem.recall("my favourite colour blue", include_superseded=True, feedback=False)
    by_id = {item.id: item for item in result}
    stale = by_id[old].why["relevance_signals"]
    assert "inherited_from" not in stale
    assert by_id[new].why["relevance_signals"] == {**stale, "inherited_from": old}
    assert by_id[new].relevance == pytest.approx(by_id[old].relevance)


def test_include_superseded_ranks_the_stale_one_below(colours: tuple[Oblivion, str, str]) -> None:
    """include_superseded=True shows the stale statement just below its successor."""
    mem, old, new = colours
    result = mem.recall("my favourite colour blue", include_superseded=True)
    assert result.ids.index(new) < result.ids.index(old)
    assert result[result.ids.index(old)].why["superseded_by"] == new


def test_maintenance_archives_superseded_memories(
    colours: tuple[Oblivion, str, str],
) -> None:
    """The demoted statement leaves the active tier at the next maintenance."""
    mem, old, _ = colours
    assert mem.maintain().archived == [old]
    assert mem.get(old).tier == Tier.ARCHIVE


def test_invalidating_the_successor_brings_the_older_statement_back(
    colours: tuple[Oblivion, str, str],
) -> None:
    """If the newer statement is marked wrong, recall falls back to the older one."""
    mem, old, new = colours
    mem.invalidate(new, reason="misheard")
    assert mem.recall("my favourite colour").ids == [old]


def test_forgetting_the_successor_brings_the_older_statement_back(
    colours: tuple[Oblivion, str, str],
) -> None:
    """If the newer statement is deleted, recall returns the older one again."""
    mem, old, new = colours
    mem.forget(new)
    assert mem.recall("my favourite colour").ids == [old]


def test_forgetting_the_successor_leaves_no_dangling_reference(
    colours: tuple[Oblivion, str, str],
) -> None:
    """After its successor is forgotten, the older memory no longer points at a deleted id."""
    mem, old, new = colours
    mem.forget(new)
    assert mem.get(old).superseded_by is None
    assert mem.stats()["superseded"] == 0


def test_explicit_supersede_and_its_errors(mem: Oblivion) -> None:
    """supersede() links two memories; self-supersession and cycles are refused."""
    a = mem.remember("the office code is 1111", category="fact")
    b = mem.remember("the door code is 2222", category="fact")
    mem.supersede(a.id, b.id, reason="user said so")
    assert mem.get(a.id).superseded_by == b.id
    with pytest.raises(InvalidInputError, match="itself"):
        mem.supersede(b.id, b.id)
    with pytest.raises(InvalidInputError, match="cycle"):
        mem.supersede(b.id, a.id)


@given(
    pairs=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3)).filter(lambda p: p[0] != p[1]),
        max_size=12,
    )
)
def test_explicit_supersede_never_makes_a_cycle(fresh: Any, pairs: list[tuple[int, int]]) -> None:
    """Whatever supersede() calls are made, every chain ends: a call that would close a loop
    anywhere along the chain (not only at its end) is refused and changes nothing."""
    with fresh(policy=Policy().replace(supersede=False)) as mem:
        ids = [mem.remember(f"note number {n} about the {w}").id for n, w in enumerate("abcd")]
        for old, new in pairs:
            before = {r.id: r.superseded_by for r in mem.records()}
            try:
                mem.supersede(ids[old], ids[new])
            except InvalidInputError as e:
                assert "cycle" in str(e)
                assert {r.id: r.superseded_by for r in mem.records()} == before
            chain = {r.id: r.superseded_by for r in mem.records()}
            for start in ids:
                seen, node = set(), start
                while node is not None:
                    assert node not in seen, f"cycle through {node} after {old}->{new}"
                    seen.add(node)
                    node = chain[node]


def test_supersede_refuses_a_cycle_through_the_middle_of_a_chain(mem: Oblivion) -> None:
    """b -> a -> c: superseding a by b would replace a -> c with a -> b, so b -> a -> b."""
    a, b, c = (mem.remember(t, category="fact").id for t in ("one", "two", "three"))
    mem.supersede(a, c)
    mem.supersede(b, a)
    with pytest.raises(InvalidInputError, match="cycle"):
        mem.supersede(a, b)
    assert mem.get(a).superseded_by == c
    assert mem.get(b).superseded_by == a


def test_supersession_can_be_turned_off(fresh: Any) -> None:
    """With supersede=False both statements stay first-class."""
    clock = ManualClock()
    with fresh(clock=clock, policy=Policy().replace(supersede=False)) as mem:
        old = mem.remember("My favourite colour is blue")
        clock.advance(1_000.0)
        mem.remember("My favourite colour is green now")
        assert mem.get(old.id).superseded_by is None


@pytest.mark.integration
def test_supersession_persists(tmp_path: Path) -> None:
    """Who superseded whom survives a reopen, and recall still hides the stale one."""
    clock = ManualClock()

    def open_() -> Oblivion:
        return Oblivion(tmp_path, clock=clock, embedder=HashEmbedder(), token_counter=word_count)

    with open_() as mem:
        old = mem.remember("My favourite colour is blue")
        clock.advance(1_000.0)
        new = mem.remember("My favourite colour is green now")
    with open_() as mem:
        assert mem.get(old.id).superseded_by == new.id
        assert mem.recall("favourite colour blue").ids == [new.id]


_VALUES = st.sampled_from(["tea", "coffee", "matcha", "cocoa", "kombucha", "lemonade"])


@given(values=st.lists(_VALUES, min_size=2, max_size=5, unique=True))
def test_a_chain_of_values_supersedes_each_predecessor(values: list[str]) -> None:
    """In a chain of restated favourites, each statement supersedes the one before it."""
    texts = [f"My favourite drink is {v} now." for v in values]
    for old, new in itertools.pairwise(texts):
        assert rule.supersedes(new, old, similarity=0.8)


@given(
    person=st.sampled_from(["Priya", "Tom", "Mei"]),
    old=_VALUES,
    new=_VALUES,
    similarity=st.floats(0.0, 1.0),
)
def test_another_persons_favourite_is_never_superseded(
    person: str, old: str, new: str, similarity: float
) -> None:
    """A third party's favourite and the speaker's own never supersede each other."""
    mine, theirs = f"My favourite drink is {new} now.", f"{person}'s favourite drink is {old}."
    assert not rule.supersedes(mine, theirs, similarity)
    assert not rule.supersedes(theirs, mine, similarity)


_NEGATION_TEXT = (
    "gone off went going right i'm i am so totally over done with sick tired of bored don't "
    "do not no longer never won't can't stand really even like drink eat want love use go by "
    "prefer the a my tea coffee cats any more anymore instead rather than switched changed "
    "from to dropped ditched quit gave up given left moved away out overtaken forget what "
    "said about allergic into fan based living it's that's it's , ; and now these days but "
    "Ted Teddy pho moussaka at all anyway ."
)
_NEGATION_WORDS = _NEGATION_TEXT.split()


@given(st.lists(st.sampled_from(_NEGATION_WORDS), min_size=1, max_size=14))
def test_the_negation_keyword_check_never_skips_a_rejected_value(words: list[str]) -> None:
    """parse() looks for rejected values only in texts holding one of the trigger words;
    every text the full pattern matches holds one, so the shortcut changes no result."""
    from oblivion_core import supersession as sup

    text = " ".join(words)
    if sup._NEGATED.search(text):
        assert sup._has(text.lower(), sup._NEGATED_TRIGGERS)


_SPEAKERS = st.sampled_from(
    ["I", "i", "I'm", "I am", "I've", "I have", "we", "We", "we're", "we are", "we've",
     "You", "They", "Ivy", "Wei", "hi", "x'i", "I-we", "iwe", "Mike's", ""]
)  # fmt: skip
_ADVERBS = st.lists(
    st.sampled_from(["now", "really", "actually", "just", "finally", "mostly", "very", "so"]),
    max_size=2,
)
_PREFERENCE_VERBS = st.sampled_from(
    ["switched to", "swapped over to", "prefer", "like", "love", "enjoy", "into",
     "hooked on", "a fan of", "more of a", "an", "drink", "eat", "listen to", "allergic to",
     "based in", "living in", "married to", "working at", "live in", "work as", "work for",
     "become a", "have become a", "is", "said", "gone", "been", "not", "a"]
)  # fmt: skip
_PREFERENCE_TAILS = st.sampled_from(
    [
        "tea",
        "green tea more",
        "coffee person",
        "jazz fan",
        "Leeds",
        "a nurse",
        "tea, now",
        "vegetarian",
        "vegan now",
        "pescatarian.",
    ]
)


@given(
    before=st.sampled_from(["", "Honestly,", "Update:", "So", "Tom said"]),
    speaker=_SPEAKERS,
    adverbs=_ADVERBS,
    verb=_PREFERENCE_VERBS,
    tail=_PREFERENCE_TAILS,
)
def test_the_first_person_check_never_skips_a_preference_or_self_fact(
    before: str, speaker: str, adverbs: list[str], verb: str, tail: str
) -> None:
    """_subject_value tries the preference-verb and self-fact patterns only on sentences
    saying "I" or "we"; every sentence one of them matches does, so the shortcut changes
    no result."""
    from oblivion_core import supersession as sup

    text = " ".join(w for w in (before, speaker, *adverbs, verb, tail) if w)
    patterns = [p for p, _ in sup._PREF_VERBS] + [sup._SELF, sup._SELF_DIET]
    if any(p.search(text) for p in patterns):
        assert sup._FIRST_PERSON.search(text)
