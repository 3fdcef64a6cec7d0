"""Typographic apostrophes read as the straight one by every text rule."""

from __future__ import annotations

import pytest

from oblivion_core import FastEmbedEmbedder, HeuristicImportance, Oblivion
from oblivion_core.lexical import query_terms, tokens
from oblivion_core.overlap import content_words, used_ids
from oblivion_core.supersession import parse
from oblivion_core.typography import straighten

MARKS = ["\u2019", "\u2018", "\u02bc", "\uff07"]
TEXTS = [
    "Don't ever call me before 9am.",
    "I don't eat meat, I'm vegetarian.",
    "Please don't use emojis in replies.",
    "Never share my address with anyone, it's private.",
    "You shouldn't book flights before checking with me.",
    "Ok thanks, that's great!",
    "haha that's funny",
    "Don't forget: the invoice is due Friday.",
    "I don't live in Paris anymore, I moved to Lyon.",
    "Sam's flight lands at 6pm on Friday.",
    # a name and a date the importance rule counts (U+02BC is a letter to regexes)
    "I booked a table at O'Hare tonight",
    "We're flying out 'Sept 9' with the kids",
    "Dinner with Siobhan O'Brien on Friday",
    "Always answer 'yes' or 'no'",
]


@pytest.mark.parametrize("mark", MARKS)
@pytest.mark.parametrize("text", TEXTS)
def test_every_rule_reads_a_typographic_apostrophe_as_the_straight_one(
    text: str, mark: str
) -> None:
    """Category, importance, stale-fact parse, content words, and BM25's document
    tokens and query terms."""
    curly = text.replace("'", mark)
    scorer = HeuristicImportance()
    assert scorer.categorize(curly) == scorer.categorize(text)
    assert scorer.score(curly) == scorer.score(text)
    assert parse(curly) == parse(text)
    assert content_words(curly) == content_words(text)
    assert query_terms(curly) == query_terms(text)
    assert tokens(curly) == tokens(text)


@pytest.mark.parametrize("quote", ["'", *MARKS])
def test_quoted_stop_words_and_short_words_are_no_content_words(quote: str) -> None:
    """The quotes around a word go before it is judged ("no'" was kept as three
    letters, then stripped to "no"; found by a review)."""
    text = "Always answer 'yes' or 'no', and call me 'Al'".replace("'", quote)
    assert content_words(text) == {"always", "answer", "call"}


def test_straighten_keeps_everything_else() -> None:
    """Only the four apostrophes change; quotes, accents and ASCII stay as they are."""
    text = "Zoë said “hi” \u2014 it\u2019s Ann\u2018s, d\u02bcArc, l\uff07eau"
    assert straighten(text) == "Zoë said “hi” \u2014 it's Ann's, d'Arc, l'eau"
    assert straighten("plain ascii 'quoted'") == "plain ascii 'quoted'"


def test_an_answer_with_straight_apostrophes_used_a_memory_with_curly_ones() -> None:
    """The words an answer shares with a memory do not depend on the apostrophes: a
    short memory needs all of its words echoed, and "sam’s" was not "sam's"."""
    assert used_ids("It's Sam's Tesla.", [("m1", "Sam\u2019s Tesla")]) == ["m1"]
    assert used_ids("It\u2019s Sam\u2019s Tesla.", [("m1", "Sam's Tesla")]) == ["m1"]


def test_a_curly_instruction_is_stored_as_an_instruction(
    real_embedder: FastEmbedEmbedder,
) -> None:
    """Through the engine: the category (and so the half-life) a phone-typed instruction
    gets is the one its straight twin gets."""
    with Oblivion(None, embedder=real_embedder) as mem:
        curly = mem.remember("Please don\u2019t use emojis in replies.")
        straight = mem.remember("Please don't use emojis in my replies.")
        # BM25 finds a word written with the modifier letter apostrophe (it kept
        # "o\u02bcbrien" whole, and no query could reach it; found by a review)
        dinner = mem.remember("Dinner with Siobhan O\u02bcBrien on Friday.")
        found = mem.recall("What about O'Brien?", k=5, feedback=False)
    assert curly.category == straight.category == "instruction"
    assert curly.importance == pytest.approx(straight.importance)
    (item,) = [i for i in found if i.id == dinner.id]
    assert item.why["relevance_signals"]["lexical"] > 0
