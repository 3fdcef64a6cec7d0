"""The framework-free LLM hooks: prompts, reply parsing, fallbacks, caches, thread safety."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from oblivion_core.compression import ExtractiveSummarizer
from oblivion_core.errors import InvalidInputError
from oblivion_core.importance import HeuristicImportance
from oblivion_core.llm_hooks import (
    SUPERSESSION_PROMPT,
    PromptedImportance,
    PromptedSummarizer,
    PromptedSupersessionJudge,
    parse_verdict,
)
from oblivion_core.supersession import LexicalSupersession, SupersessionJudge
from oblivion_core.testing import memory
from oblivion_core.typing import ImportanceScorer, Summarizer

LOGGER = "oblivion_core.llm_hooks"
BLUE = "My favourite colour is blue."
GREEN = "My favourite colour is green now."
PARIS = "I went to Paris in May."
ROME = "I went to Rome in June."
TEXT = "Always give distances in kilometres."
HEURISTIC = HeuristicImportance()


class Scripted:
    """A fake ``complete``: replies in order (an exception instance is raised) and records
    every ``(system, user)`` call."""

    def __init__(self, replies: Iterable[str | BaseException]) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, system: str, user: str) -> str:
        with self._lock:
            self.calls.append((system, user))
            reply = self.replies.pop(0) if self.replies else "no"
        if isinstance(reply, BaseException):
            raise reply
        return reply


def rule(system: str, user: str) -> str:
    """A fake model that calls a pair stale when both mention a favourite colour."""
    old, new = user.split("NEW memory:")
    return "Yes." if "colour" in old and "colour" in new else "No."


def test_they_satisfy_the_core_protocols() -> None:
    """The three hooks are the engine's ImportanceScorer, Summarizer and SupersessionJudge."""
    assert isinstance(PromptedImportance(Scripted([])), ImportanceScorer)
    assert isinstance(PromptedSummarizer(Scripted([])), Summarizer)
    assert isinstance(PromptedSupersessionJudge(Scripted([])), SupersessionJudge)


# ==================================================================== verdict parsing
@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("yes", True),
        ("no", False),
        ("Yes.", True),
        ("NO!", False),
        ("**Yes**", True),
        ("**No** - they are about different trips.", False),
        ("> yes", True),
        ("`no`", False),
        ("- Yes, the colour changed.", True),
        ('"No"', False),
        ("\n\n  yes\n", True),
        ("Answer: yes", True),
        ("**Final answer:** No", False),
        ("<think>Blue is older, so maybe no?</think>\nYes", True),
        ("Nope", None),
        ("yesterday", None),
        ("Maybe.", None),
        ("The answer is yes.", None),
        ("", None),
        ("🤷", None),
    ],
)
def test_verdicts_are_read_from_the_first_word(reply: str, verdict: bool | None) -> None:
    """The first word decides, whatever markdown or punctuation wraps it; anything else is None."""
    assert parse_verdict(reply) is verdict


# ==================================================================== supersession judge
def test_the_judge_asks_the_model_about_both_texts() -> None:
    """One call sends the judge prompt and a question naming OLD and NEW, in that order."""
    complete = Scripted(["yes"])
    assert PromptedSupersessionJudge(complete).supersedes(GREEN, BLUE, 0.8) is True
    ((system, user),) = complete.calls
    assert system == SUPERSESSION_PROMPT
    assert user.index(BLUE) < user.index(GREEN)
    assert "<old>" in user and "<new>" in user


@pytest.mark.parametrize(("reply", "verdict"), [("Yes", True), ("no.", False)])
def test_the_models_verdict_wins_over_the_offline_rule(reply: str, verdict: bool) -> None:
    """A parsed verdict is returned even where the offline rule would disagree."""
    judge = PromptedSupersessionJudge(Scripted([reply]))
    assert judge.supersedes(ROME if verdict else GREEN, PARIS if verdict else BLUE, 0.8) is verdict


@pytest.mark.parametrize(
    "reply", [RuntimeError("provider is down"), "Hard to say.", "", "Nope, different trips."]
)
@pytest.mark.parametrize(("new", "old", "expected"), [(GREEN, BLUE, True), (ROME, PARIS, False)])
def test_a_failed_call_or_junk_falls_back_to_the_lexical_rule(
    reply: str | BaseException,
    new: str,
    old: str,
    expected: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An exception or an unparseable reply logs a warning and LexicalSupersession decides."""
    judge = PromptedSupersessionJudge(Scripted([reply]))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert judge.supersedes(new, old, 0.8) is expected
    assert expected is LexicalSupersession().supersedes(new, old, 0.8)
    assert "using the fallback judge" in caplog.text
    assert ("failed" if isinstance(reply, BaseException) else "malformed") in caplog.text


def test_a_custom_fallback_judge_is_used() -> None:
    """fallback= replaces the lexical rule."""

    class Always:
        def supersedes(self, new: str, old: str, similarity: float) -> bool:
            return True

    judge = PromptedSupersessionJudge(Scripted(["dunno"]), fallback=Always())
    assert judge.supersedes(ROME, PARIS, 0.8) is True


@pytest.mark.parametrize(("similarity", "calls"), [(0.29, 0), (0.3, 1), (0.9, 1)])
def test_dissimilar_pairs_are_not_asked_about(similarity: float, calls: int) -> None:
    """Below min_similarity the answer is no without a model call."""
    complete = Scripted(["yes"])
    judge = PromptedSupersessionJudge(complete)
    assert judge.supersedes(GREEN, BLUE, similarity) is (calls == 1)
    assert len(complete.calls) == calls


def test_min_similarity_minus_one_asks_about_everything() -> None:
    """min_similarity=-1 sends even opposite pairs to the model."""
    complete = Scripted(["yes"])
    assert PromptedSupersessionJudge(complete, min_similarity=-1).supersedes(GREEN, BLUE, -1.0)
    assert len(complete.calls) == 1


def test_verdicts_are_cached_per_pair() -> None:
    """Asking about the same (new, old) pair again costs no call; another pair does."""
    complete = Scripted(["yes", "no"])
    judge = PromptedSupersessionJudge(complete)
    assert [judge.supersedes(GREEN, BLUE, s) for s in (0.8, 0.5)] == [True, True]
    assert judge.supersedes(BLUE, GREEN, 0.8) is False
    assert len(complete.calls) == 2


def test_the_verdict_cache_is_bounded_lru() -> None:
    """With cache_size=2 the least recently used pair is asked about again."""
    complete = Scripted(["yes"] * 10)
    judge = PromptedSupersessionJudge(complete, cache_size=2)
    for new in ("a", "b", "a", "c", "a", "b"):
        judge.supersedes(new, "old", 0.9)
    # a, b asked; a hit (most recent); c asked, evicts b; a hit; b asked again
    assert [user.split("<new>\n")[1][0] for _, user in complete.calls] == ["a", "b", "c", "b"]


@pytest.mark.parametrize("first", [RuntimeError("timeout"), "garbled"])
def test_fallback_answers_are_not_cached(first: str | BaseException) -> None:
    """After a failed call or a junk reply, the next ask calls the model again."""
    complete = Scripted([first, "no"])
    judge = PromptedSupersessionJudge(complete)
    assert judge.supersedes(GREEN, BLUE, 0.8) is True  # the lexical rule
    assert judge.supersedes(GREEN, BLUE, 0.8) is False  # the model, now answering
    assert judge.supersedes(GREEN, BLUE, 0.8) is False  # cached
    assert len(complete.calls) == 2


def test_the_judge_is_thread_safe() -> None:
    """Many threads judging many pairs at once get the right verdicts and a bounded cache."""
    judge = PromptedSupersessionJudge(rule, cache_size=16)
    pairs = [(f"My favourite colour is {i}.", BLUE, True) for i in range(40)]
    pairs += [(f"I went to city {i}.", PARIS, False) for i in range(40)]

    def check(pair: tuple[str, str, bool]) -> bool:
        return judge.supersedes(pair[0], pair[1], 0.9) is pair[2]

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(check, pairs * 5))
    assert len(judge._cache) <= 16


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"min_similarity": 1.5}, "min_similarity"),
        ({"min_similarity": float("nan")}, "min_similarity"),
        ({"min_similarity": True}, "min_similarity"),
        ({"min_similarity": "0.3"}, "min_similarity"),
        ({"cache_size": 0}, "cache_size"),
        ({"cache_size": 2.5}, "cache_size"),
        ({"fallback": object()}, "supersedes"),
    ],
)
def test_bad_judge_settings_fail_clearly(kwargs: dict[str, Any], match: str) -> None:
    """Bad settings raise an InvalidInputError naming the setting."""
    with pytest.raises(InvalidInputError, match=match):
        PromptedSupersessionJudge(Scripted([]), **kwargs)


@pytest.mark.parametrize(
    "make", [PromptedImportance, PromptedSummarizer, PromptedSupersessionJudge]
)
def test_complete_must_be_callable(make: Callable[..., Any]) -> None:
    """A non-callable complete is refused with a hint at the expected signature."""
    with pytest.raises(InvalidInputError, match=r"\(system: str, user: str\) -> str"):
        make("gpt-4o")


def test_warnings_go_to_the_given_logger(caplog: pytest.LogCaptureFixture) -> None:
    """logger= routes the fallback warnings (the adapters pass their own)."""
    mine = logging.getLogger("my_app.memory")
    judge = PromptedSupersessionJudge(Scripted(["??"]), logger=mine)
    with caplog.at_level(logging.WARNING, logger="my_app.memory"):
        judge.supersedes(GREEN, BLUE, 0.8)
    assert [r.name for r in caplog.records] == ["my_app.memory"]


def test_the_engine_consults_the_judge() -> None:
    """Oblivion(supersession_judge=...) lets the judge's yes supersede the older memory."""
    complete = Scripted(["yes"])
    engine = memory(supersession_judge=PromptedSupersessionJudge(complete, min_similarity=-1))
    try:
        old = engine.remember(BLUE)
        new = engine.remember(GREEN)
        assert engine.get(old.id).superseded_by == new.id
        assert len(complete.calls) == 1
    finally:
        engine.close()


# ==================================================================== importance
@pytest.mark.parametrize(
    ("reply", "score", "category"),
    [
        ("score: 10\ncategory: instruction", 1.0, "instruction"),
        ("Score: 7/10\nCategory: Small talk", 6 / 9, "small_talk"),
        ("**score:** 4\n**category:** fact", 3 / 9, "fact"),
        ("score: 11\ncategory: fact", None, "fact"),
        ("score: 6\ncategory: gossip", 5 / 9, None),
        ('score: "9"\ncategory: "instruction"', 8 / 9, "instruction"),
        ("score: `9`\ncategory: `instruction`", 8 / 9, "instruction"),
        ("It is quite important, maybe.", None, None),
    ],
)
def test_importance_replies_are_parsed_or_fall_back(
    reply: str, score: float | None, category: str | None
) -> None:
    """A 1-10 score maps to [0, 1]; a malformed part comes from the heuristic scorer."""
    scorer = PromptedImportance(Scripted([reply]))
    assert scorer.score(TEXT) == pytest.approx(
        score if score is not None else HEURISTIC.score(TEXT)
    )
    assert scorer.categorize(TEXT) == (
        category if category is not None else HEURISTIC.categorize(TEXT)
    )


def test_one_importance_call_serves_score_and_category() -> None:
    """score() and categorize() of one text share one call, even a failed one."""
    for reply in ("score: 9\ncategory: instruction", RuntimeError("down")):
        complete = Scripted([reply])
        scorer = PromptedImportance(complete)
        scorer.score(TEXT)
        scorer.categorize(TEXT)
        assert len(complete.calls) == 1


def test_categories_given_as_an_iterator_are_kept() -> None:
    """The check read a generator to the end and kept nothing: every answer fell back."""
    complete = Scripted(["score: 5\ncategory: work"])
    scorer = PromptedImportance(complete, categories=(c for c in ["work", "home"]))
    assert scorer.categories == ("work", "home")
    assert scorer.categorize("Ship the release notes.") == "work"


def test_importance_prompt_lists_the_categories() -> None:
    """The system prompt offers exactly the configured categories."""
    complete = Scripted(["score: 5\ncategory: recipe"])
    scorer = PromptedImportance(complete, categories=["recipe", "chore"])
    assert scorer.categorize("Boil the pasta for 9 minutes.") == "recipe"
    assert "recipe, chore" in complete.calls[0][0]


# ==================================================================== summaries
def test_summarizer_returns_the_models_summary() -> None:
    """summarize() sends the texts as a bulleted list and returns the reply, stripped."""
    complete = Scripted(["  Sam lives in Leeds and likes tea.  "])
    summary = PromptedSummarizer(complete).summarize(["I live in Leeds.", "I like tea."])
    assert summary == "Sam lives in Leeds and likes tea."
    assert complete.calls[0][1] == "- I live in Leeds.\n- I like tea."


@pytest.mark.parametrize("reply", ["   ", RuntimeError("down")])
def test_summarizer_falls_back_offline(
    reply: str | BaseException, caplog: pytest.LogCaptureFixture
) -> None:
    """An empty reply or a failed call gives the extractive summary, with a warning."""
    texts = ["We met Ana in Porto.", "Ana showed us the Ribeira."]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        summary = PromptedSummarizer(Scripted([reply])).summarize(texts)
    assert summary == ExtractiveSummarizer().summarize(texts)
    assert "fallback summarizer" in caplog.text


# ==================================================================== model replies, round 2
def test_a_reasoning_models_notes_are_not_read_as_its_importance_answer() -> None:
    """``score:``/``category:`` inside a ``<think>`` block are the model's notes, not its
    answer (they used to be read first)."""
    reply = (
        "<think>score: 1? category: small_talk? No, it is a standing rule.</think>\n"
        "score: 9\ncategory: instruction"
    )
    scorer = PromptedImportance(Scripted([reply]))
    assert scorer.score(TEXT) == pytest.approx(8 / 9)
    assert scorer.categorize(TEXT) == "instruction"


@pytest.mark.parametrize(
    ("categories", "reply", "expected"),
    [
        (["Work", "Home"], "category: Work", "Work"),
        (["Work", "Home"], "category: work", "Work"),
        (["follow-up", "chore"], "category: follow-up", "follow-up"),
        (["follow-up", "chore"], "category: Follow up", "follow-up"),
        (["p1", "p2"], "category: p1", "p1"),
        (["fact", "event"], "category: fact score: 7", "fact"),
    ],
)
def test_custom_categories_are_matched_as_configured(
    categories: list[str], reply: str, expected: str
) -> None:
    """Capitals, hyphens and digits in category names no longer make them unreachable:
    the answer is matched regardless of case, spaces, hyphens and underscores, and the
    configured name is stored."""
    scorer = PromptedImportance(Scripted([f"score: 5\n{reply}"]), categories=categories)
    assert scorer.categorize(TEXT) == expected


def test_the_scorer_never_offers_compressions_summary_category() -> None:
    """``summary`` is what compression calls its summaries; a new memory put there would
    be neither a summary nor a memory of its own kind."""
    complete = Scripted(["score: 5\ncategory: summary"])
    scorer = PromptedImportance(complete)
    assert scorer.categorize(TEXT) == HEURISTIC.categorize(TEXT)
    offered = next(line for line in complete.calls[0][0].splitlines() if "category" in line)
    assert "summary" not in offered and "small_talk" in offered


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<think>They want a summary.</think>\nAna showed us Porto.", "Ana showed us Porto."),
        ("Sure! Here is the summary:\n```\nAna showed us Porto.\n```", "Ana showed us Porto."),
        ("```text\nAna showed us Porto.\n```", "Ana showed us Porto."),
        ("I'm sorry, but I can't help with that request.", None),
        ("<think>hmm</think>", None),
        # curly apostrophes, apologies: refusals too (they were stored as the summary)
        ("I’m sorry, but I can’t help with that.", None),
        ("I can’t summarise these memories.", None),
        # the other typographic apostrophes too (a review: they were kept as the summary)
        ("I‘m sorry, but I can‘t help with that.", None),
        ("Iʼm sorry, but I canʼt help with that.", None),
        ("I＇m sorry, but I can＇t help with that.", None),
        ("I apologize, but I cannot assist with that request.", None),
        # a first-person summary is not a refusal (it was replaced by the offline one)
        (
            "I can't eat gluten, won't fly on weekends.",
            "I can't eat gluten, won't fly on weekends.",
        ),
        ("I won't fly on weekends; tea, not coffee.", "I won't fly on weekends; tea, not coffee."),
    ],
)
def test_a_summary_reply_is_unwrapped_or_refused(reply: str, expected: str | None) -> None:
    """Notes, fences and a preface line are not part of the summary; a refusal is no
    summary at all and the offline one is written instead (both used to be stored as the
    summary the originals were folded into)."""
    texts = ["We met Ana in Porto.", "Ana showed us the Ribeira."]
    summary = PromptedSummarizer(Scripted([reply])).summarize(texts)
    assert summary == (
        expected if expected is not None else ExtractiveSummarizer().summarize(texts)
    )


def test_the_judges_prompt_counts_a_restatement_as_superseding() -> None:
    """As the offline rule and the README say: the newer statement of the same fact is
    the one kept (the prompt used to tell the model to answer no)."""
    assert "restatement" in SUPERSESSION_PROMPT
    assert "when NEW repeats OLD" not in SUPERSESSION_PROMPT


def test_a_failing_judge_leaves_the_pairs_to_the_engines_own_rule() -> None:
    """With no fallback given, the pairs the model could not answer are judged by the
    engine's offline rule under the policy in force: its thresholds, and all the
    undecided candidates together (a correction with no parsable subject is only caught
    that way), exactly as with no judge."""

    def outcome(policy: Any, judge: bool, old_text: str, new_text: str) -> bool:
        failing = PromptedSupersessionJudge(Scripted([TimeoutError("slow")] * 50))
        engine = memory(policy=policy, supersession_judge=failing if judge else None)
        try:
            old = engine.remember(old_text)
            engine.remember(new_text)
            return engine.get(old.id).superseded_by is not None
        finally:
            engine.close()

    from oblivion_core import Policy

    strict = Policy.template("balanced").replace(
        supersede_similarity=0.99, supersede_fallback_similarity=0.99
    )
    correction = (
        "My sister lives in Leeds.",
        "Actually, wait: sister lives in York, in Leeds was wrong",
    )
    for policy, (old_text, new_text) in [
        (strict, (BLUE, GREEN)),
        ("balanced", (BLUE, GREEN)),
        ("balanced", correction),
    ]:
        assert outcome(policy, True, old_text, new_text) == outcome(
            policy, False, old_text, new_text
        )
    assert outcome("balanced", True, *correction)
    assert not outcome(strict, True, BLUE, GREEN)


def test_the_judges_verdict_abstains_only_without_a_fallback() -> None:
    """verdict() gives None for an unusable answer when no fallback was given (the
    engine decides); supersedes() and a judge with a fallback always decide."""
    down = [RuntimeError("down")] * 3
    assert (
        PromptedSupersessionJudge(Scripted(down), min_similarity=-1).verdict(GREEN, BLUE, 0.9)
        is None
    )
    assert PromptedSupersessionJudge(Scripted(down), min_similarity=-1).supersedes(
        GREEN, BLUE, 0.9
    ) == LexicalSupersession().supersedes(GREEN, BLUE, 0.9)
    always = PromptedSupersessionJudge(
        Scripted(down), min_similarity=-1, fallback=LexicalSupersession(0.0, 0.0)
    )
    assert always.verdict(GREEN, BLUE, 0.9) is not None
