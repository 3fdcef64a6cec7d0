"""LLM-backed importance scoring, summarising and supersession judging."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from _lc_helpers import ScriptedChatModel
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from oblivion_core import FastEmbedEmbedder, Oblivion
from oblivion_core.compression import ExtractiveSummarizer
from oblivion_core.importance import HeuristicImportance
from oblivion_core.llm_hooks import (
    SUPERSESSION_PROMPT,
    PromptedImportance,
    PromptedSummarizer,
    PromptedSupersessionJudge,
)
from oblivion_core.supersession import SupersessionJudge
from oblivion_core.testing import memory
from oblivion_core.typing import ImportanceScorer, Summarizer
from oblivion_langchain import (
    LLMImportanceScorer,
    LLMSummarizer,
    LLMSupersessionJudge,
    OblivionMemoryMiddleware,
)

HEURISTIC = HeuristicImportance()
TEXT = "Always give distances in kilometres."


class BrokenChatModel(GenericFakeChatModel):
    """A chat model whose every call fails."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("provider is down")


BLUE = "My favourite colour is blue."
GREEN = "My favourite colour is green now."


def test_they_satisfy_the_core_protocols() -> None:
    """The scorer, summariser and judge are the core's ImportanceScorer, Summarizer and
    SupersessionJudge."""
    assert isinstance(LLMImportanceScorer(ScriptedChatModel([])), ImportanceScorer)
    assert isinstance(LLMSummarizer(ScriptedChatModel([])), Summarizer)
    assert isinstance(LLMSupersessionJudge(ScriptedChatModel([])), SupersessionJudge)


def test_they_are_thin_wrappers_over_the_core_hooks() -> None:
    """Each class is the framework-free core hook with a chat model plugged in."""
    assert issubclass(LLMImportanceScorer, PromptedImportance)
    assert issubclass(LLMSummarizer, PromptedSummarizer)
    assert issubclass(LLMSupersessionJudge, PromptedSupersessionJudge)


@pytest.mark.parametrize(
    ("reply", "score", "category"),
    [
        ("score: 10\ncategory: instruction", 1.0, "instruction"),
        ("score: 1\ncategory: small_talk", 0.0, "small_talk"),
        ("Score: 7/10\nCategory: Small talk", 6 / 9, "small_talk"),
        ("**score:** 4\n**category:** fact", 3 / 9, "fact"),
        ("score = 5.5\ncategory = preference", 4.5 / 9, "preference"),
        ("score: 0\ncategory: fact", None, "fact"),
        ("score: 11\ncategory: fact", None, "fact"),
        ("score: 6\ncategory: gossip", 5 / 9, None),
        ("It is quite important, maybe.", None, None),
        ("", None, None),
    ],
)
def test_replies_are_parsed_or_fall_back(
    reply: str, score: float | None, category: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    """A 1-10 score maps to [0, 1]; anything malformed falls back and is logged."""
    scorer = LLMImportanceScorer(ScriptedChatModel([reply]))
    with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
        got_category = scorer.categorize(TEXT)
        got_score = scorer.score(TEXT)
    assert got_score == pytest.approx(score if score is not None else HEURISTIC.score(TEXT))
    assert got_category == (category if category is not None else HEURISTIC.categorize(TEXT))
    assert ("malformed" in caplog.text) == (score is None or category is None)


def test_one_model_call_serves_score_and_category() -> None:
    """categorize() and score() of the same text share one model call (cached)."""
    model = ScriptedChatModel(["score: 9\ncategory: instruction"])
    scorer = LLMImportanceScorer(model)
    assert scorer.categorize(TEXT) == "instruction"
    assert scorer.score(TEXT) == pytest.approx(8 / 9)
    assert len(model.seen) == 1


def test_the_cache_is_bounded() -> None:
    """Old texts leave the cache once cache_size texts were seen."""
    model = ScriptedChatModel([f"score: {n}\ncategory: fact" for n in (2, 3, 4)])
    scorer = LLMImportanceScorer(model, cache_size=1)
    scorer.score("a")
    scorer.score("b")
    scorer.score("a")
    assert len(model.seen) == 3


def test_a_failing_model_never_crashes(caplog: pytest.LogCaptureFixture) -> None:
    """A model error falls back to the heuristic scorer and is logged."""
    scorer = LLMImportanceScorer(BrokenChatModel(messages=iter([])))
    with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
        assert scorer.score(TEXT) == HEURISTIC.score(TEXT)
        assert scorer.categorize(TEXT) == HEURISTIC.categorize(TEXT)
    assert "failed" in caplog.text


def test_a_custom_fallback_is_used() -> None:
    """fallback= replaces the heuristic scorer."""

    class Fixed:
        def score(self, text: str) -> float:
            return 0.42

        def categorize(self, text: str) -> str:
            return "event"

    scorer = LLMImportanceScorer(ScriptedChatModel(["no idea"]), fallback=Fixed())
    assert (scorer.score(TEXT), scorer.categorize(TEXT)) == (0.42, "event")


def test_the_engine_uses_the_llm_scorer() -> None:
    """Oblivion(importance_scorer=LLMImportanceScorer(...)) stores the model's appraisal."""
    engine = memory(
        importance_scorer=LLMImportanceScorer(
            ScriptedChatModel(["score: 10\ncategory: preference"])
        )
    )
    record = engine.remember("I take my tea with lemon.")
    assert (record.category, record.importance) == ("preference", 1.0)


def test_a_malformed_reply_never_crashes_an_agent_turn() -> None:
    """With a garbage scorer reply the middleware still records the turn (heuristic appraisal)."""
    scorer = LLMImportanceScorer(ScriptedChatModel(["¯\\_(ツ)_/¯"]))
    engine = memory(importance_scorer=scorer)
    agent = create_agent(
        ScriptedChatModel(["Hello!"]), tools=[], middleware=[OblivionMemoryMiddleware(engine)]
    )
    agent.invoke({"messages": [{"role": "user", "content": "Good morning!"}]})
    (record,) = engine.records()
    assert record.category == "small_talk"


@pytest.mark.parametrize(
    "kwargs", [{"cache_size": 0}, {"categories": []}, {"categories": ["ok", ""]}]
)
def test_bad_scorer_settings_fail_clearly(kwargs: dict[str, Any]) -> None:
    """Bad settings raise a ValueError."""
    with pytest.raises(ValueError):
        LLMImportanceScorer(ScriptedChatModel([]), **kwargs)


def test_a_non_chat_model_is_refused() -> None:
    """Passing something that is not a BaseChatModel raises a ValueError."""
    with pytest.raises(ValueError, match="BaseChatModel"):
        LLMImportanceScorer("gpt")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="BaseChatModel"):
        LLMSummarizer(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="BaseChatModel"):
        LLMSupersessionJudge(lambda system, user: "yes")  # type: ignore[arg-type]


# ==================================================================== summariser
def test_summarizer_returns_the_models_summary() -> None:
    """summarize() asks the model once and returns its text."""
    model = ScriptedChatModel(["Sam lives in Leeds and likes tea."])
    summary = LLMSummarizer(model).summarize(["I live in Leeds.", "I like tea."])
    assert summary == "Sam lives in Leeds and likes tea."
    assert "- I live in Leeds." in str(model.seen[0][-1].content)


@pytest.mark.parametrize("model", [ScriptedChatModel(["   "]), BrokenChatModel(messages=iter([]))])
def test_summarizer_falls_back_to_the_default(model: Any, caplog: pytest.LogCaptureFixture) -> None:
    """An empty reply or a failing model gives the offline summary, with a warning."""
    texts = ["We met Ana in Porto.", "Ana showed us the Ribeira."]
    with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
        summary = LLMSummarizer(model).summarize(texts)
    assert summary == ExtractiveSummarizer().summarize(texts)
    assert "fallback summarizer" in caplog.text


def test_a_custom_summary_fallback_is_used() -> None:
    """fallback= replaces the offline summariser."""

    class Joiner:
        def summarize(self, texts: Any) -> str:
            return " | ".join(texts)

    summarizer = LLMSummarizer(ScriptedChatModel([""]), fallback=Joiner())
    assert summarizer.summarize(["a", "b"]) == "a | b"


def test_summary_is_cut_to_max_chars() -> None:
    """The summary never exceeds max_chars."""
    summary = LLMSummarizer(ScriptedChatModel(["x" * 50]), max_chars=10).summarize(["t"])
    assert summary == "x" * 10


@pytest.mark.parametrize("texts", ["one string", [], ["  ", ""]])
def test_summarizer_bad_input(texts: Any) -> None:
    """A bare string or no non-empty text raises a ValueError."""
    with pytest.raises(ValueError):
        LLMSummarizer(ScriptedChatModel(["s"])).summarize(texts)


# ==================================================================== supersession judge
def test_judge_sends_a_system_and_a_human_message() -> None:
    """One call: the judge prompt as the system message, both texts in the human one."""
    model = ScriptedChatModel(["**Yes** - the favourite changed."])
    assert LLMSupersessionJudge(model).supersedes(GREEN, BLUE, 0.8) is True
    ((system, human),) = model.seen
    assert isinstance(system, SystemMessage) and system.content == SUPERSESSION_PROMPT
    assert isinstance(human, HumanMessage) and BLUE in human.text and GREEN in human.text


@pytest.mark.parametrize(
    ("reply", "verdict"), [("no.", False), ("YES", True), ("Answer: no", False)]
)
def test_judge_reads_the_models_verdict(reply: str, verdict: bool) -> None:
    """The reply's first word decides, case and punctuation aside."""
    assert LLMSupersessionJudge(ScriptedChatModel([reply])).supersedes(GREEN, BLUE, 0.8) is verdict


@pytest.mark.parametrize(
    ("model", "logged"),
    [
        (BrokenChatModel(messages=iter([])), "failed"),
        (ScriptedChatModel(["I cannot tell."]), "malformed"),
    ],
)
def test_judge_falls_back_to_the_lexical_rule(
    model: Any, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A failing model or a junk reply is logged and the offline rule decides."""
    judge = LLMSupersessionJudge(model)
    with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
        assert judge.supersedes(GREEN, BLUE, 0.8) is True
        assert judge.supersedes("I went to Rome in June.", "I went to Paris in May.", 0.8) is False
    assert logged in caplog.text
    assert {r.name for r in caplog.records} == {"oblivion_langchain"}


def test_judge_skips_dissimilar_pairs_and_caches_verdicts() -> None:
    """Below min_similarity no call is made; a pair already judged is not asked again."""
    model = ScriptedChatModel(["yes"])
    judge = LLMSupersessionJudge(model, min_similarity=0.5)
    assert judge.supersedes(GREEN, BLUE, 0.49) is False
    assert judge.supersedes(GREEN, BLUE, 0.8) is True
    assert judge.supersedes(GREEN, BLUE, 0.8) is True
    assert len(model.seen) == 1


@pytest.mark.integration
def test_real_stack_judge_supersedes_the_old_colour(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """With MiniLM and embedded Chroma, the model's yes hides blue behind green in recall."""
    model = ScriptedChatModel(["Yes."])
    judge = LLMSupersessionJudge(model)
    mem = Oblivion(tmp_path / "memory", embedder=real_embedder, supersession_judge=judge)
    try:
        mem.remember("I live in Leeds.")
        blue = mem.remember(BLUE)  # Leeds is too dissimilar to ask about
        green = mem.remember(GREEN)
        assert len(model.seen) == 1  # only the blue memory was asked about
        assert BLUE in model.seen[0][-1].text and GREEN in model.seen[0][-1].text
        result = mem.recall("What is my favourite colour?")
        assert result.texts[0] == GREEN
        assert blue.id not in result.ids
        assert mem.get(blue.id).superseded_by == green.id
        shown = mem.recall("What is my favourite colour?", include_superseded=True)
        assert shown[shown.ids.index(blue.id)].why["superseded_by"] == green.id
    finally:
        mem.close()


def test_the_scorer_offers_the_categories_a_memory_can_have() -> None:
    """Compression's own ``summary`` category is not offered to the model."""
    categories = LLMImportanceScorer(ScriptedChatModel([])).categories
    assert "summary" not in categories and "instruction" in categories


def test_the_hooks_model_calls_are_not_streamed_as_the_assistants_words() -> None:
    """Inside an agent's run the hooks' calls inherited the run's callbacks, so
    stream_mode="messages" (what chat UIs render) streamed the scorer's "score: 9" and the
    judge's "yes" from the middleware's node as if the assistant said them."""
    import asyncio

    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import AIMessage

    from oblivion_langchain import OblivionMemoryMiddleware

    class Model(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    hooks = FakeListChatModel(responses=["yes\nscore: 9\ncategory: preference"])
    mem = memory(
        importance_scorer=LLMImportanceScorer(hooks),
        supersession_judge=LLMSupersessionJudge(hooks),
    )
    replies = iter([AIMessage("Noted."), AIMessage("Got it."), AIMessage("Leeds, noted.")])
    agent = create_agent(
        Model(messages=replies), tools=[], middleware=[OblivionMemoryMiddleware(mem)]
    )
    config: Any = {"configurable": {"user_id": "sam"}}
    streamed: list[tuple[str, Any]] = []
    for text in ("My favourite colour is blue.", "My favourite colour is green now."):
        for chunk, meta in agent.stream(
            {"messages": [{"role": "user", "content": text}]}, config, stream_mode="messages"
        ):
            streamed.append((meta.get("langgraph_node"), chunk.content))

    async def astream() -> None:
        async for chunk, meta in agent.astream(
            {"messages": [{"role": "user", "content": "I live in Leeds."}]},
            config,
            stream_mode="messages",
        ):
            streamed.append((meta.get("langgraph_node"), chunk.content))

    asyncio.run(astream())
    assert {node for node, _ in streamed} == {"model"}
    assert "".join(c for _, c in streamed if isinstance(c, str)) == "Noted.Got it.Leeds, noted."
    assert mem.count(namespace="sam") >= 3  # the hooks did run: the turns were scored
