"""Deciding which recalled memories an answer actually drew on (lexical overlap)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core.overlap import content_words, overlap, used_ids


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("The cat is on the mat", {"cat", "mat"}),
        ("I have 2 dogs and 10 cats", {"2", "dogs", "10", "cats"}),
        ("It's Bob's", {"it's", "bob's"}),
        ("a an the of", set()),
    ],
)
def test_content_words(text: str, words: set[str]) -> None:
    """Stop words and 1-2 letter words are dropped; numbers are kept whole."""
    assert content_words(text) == words


@pytest.mark.parametrize(
    ("memory", "answer", "used"),
    [
        ("My sister Alice lives in Lisbon", "Alice lives in Lisbon, so visit her there.", True),
        ("My sister Alice lives in Lisbon", "The weather in Paris is nice.", False),
        ("Alice likes jazz", "Alice is coming.", False),  # one shared word of three
        ("Lisbon", "We flew to Lisbon.", True),  # a one-word memory needs its one word
        ("the of and", "the of and", False),  # no content words at all
    ],
)
def test_used_ids_table(memory: str, answer: str, used: bool) -> None:
    """A memory counts as used when the answer echoes enough of its content words."""
    assert (used_ids(answer, [("m", memory)]) == ["m"]) is used


@given(memory=st.text(max_size=200), answer=st.text(max_size=200))
def test_overlap_is_a_fraction(memory: str, answer: str) -> None:
    """overlap() is always within [0, 1]."""
    assert 0.0 <= overlap(memory, answer) <= 1.0


@given(memory=st.text(max_size=200))
def test_a_memory_fully_overlaps_itself(memory: str) -> None:
    """A memory with content words overlaps an answer that repeats it entirely."""
    assert overlap(memory, memory) == (1.0 if content_words(memory) else 0.0)
