"""Write-time appraisal: the documented lexical rules of HeuristicImportance."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import HeuristicImportance
from oblivion_core.typing import ImportanceScorer

scorer = HeuristicImportance()


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Always answer in British English.", "instruction"),
        ("Never share my phone number.", "instruction"),
        ("From now on, reply in French.", "instruction"),
        ("I prefer window seats on flights.", "preference"),
        ("My favourite colour is green.", "preference"),
        ("Remind me to call the bank.", "task"),
        ("The deadline for the report is close.", "task"),
        ("We had a meeting with the landlord yesterday.", "event"),
        ("Hi there!", "small_talk"),
        ("thanks", "small_talk"),
        ("ok", "small_talk"),
        ("The Eiffel tower is in Paris and is made of iron.", "fact"),
    ],
)
def test_categories_follow_the_documented_cues(text: str, category: str) -> None:
    """Each documented cue yields its category; anything else is a fact."""
    assert scorer.categorize(text) == category


@pytest.mark.parametrize(
    ("text", "importance"),
    [
        ("Always answer in English.", 0.9 + 0.05),  # "English" is a name
        ("thanks", 0.1),
        ("The tower is made of iron and steel.", 0.4),
        ("The tower has 1665 steps to the top.", 0.45),  # a number
        ("The tower near Paris opened on Monday with 300 guests.", 0.55),  # name+date+number
    ],
)
def test_importance_is_category_base_plus_details(text: str, importance: float) -> None:
    """Importance is the category's base plus 0.05 per kind of specific detail."""
    assert scorer.score(text) == pytest.approx(importance)


@given(st.text(max_size=300))
def test_scores_are_in_unit_interval_for_any_text(text: str) -> None:
    """Any text scores within [0, 1] and gets a non-empty category."""
    assert 0.0 <= scorer.score(text) <= 1.0
    assert scorer.categorize(text)


def test_satisfies_the_protocol() -> None:
    """HeuristicImportance is an ImportanceScorer."""
    assert isinstance(scorer, ImportanceScorer)
