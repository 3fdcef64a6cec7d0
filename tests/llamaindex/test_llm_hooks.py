"""LLM-backed importance, summaries and supersession judging with a LlamaIndex ``LLM``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CustomLLM, MockLLM
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback

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
from oblivion_llamaindex import LLMImportanceScorer, LLMSummarizer, LLMSupersessionJudge

BLUE = "My favourite colour is blue."
GREEN = "My favourite colour is green now."
TEXT = "Always give distances in kilometres."
HEURISTIC = HeuristicImportance()


class ScriptedLLM(CustomLLM):
    """A LlamaIndex LLM that answers chats with scripted replies and records each call."""

    replies: list[str] = Field(default_factory=list)
    fail: bool = False
    seen: list[list[ChatMessage]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(is_chat_model=True)

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.seen.append(list(messages))
        if self.fail:
            raise RuntimeError("provider is down")
        reply = self.replies.pop(0) if self.replies else ""
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=reply))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise NotImplementedError("the hooks use chat()")

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        raise NotImplementedError("the hooks use chat()")


def test_they_satisfy_the_core_protocols() -> None:
    """The three hooks are the core's ImportanceScorer, Summarizer and SupersessionJudge."""
    llm = ScriptedLLM()
    assert isinstance(LLMImportanceScorer(llm), ImportanceScorer)
    assert isinstance(LLMSummarizer(llm), Summarizer)
    assert isinstance(LLMSupersessionJudge(llm), SupersessionJudge)


def test_they_are_thin_wrappers_over_the_core_hooks() -> None:
    """Each class is the framework-free core hook with a LlamaIndex LLM plugged in."""
    assert issubclass(LLMImportanceScorer, PromptedImportance)
    assert issubclass(LLMSummarizer, PromptedSummarizer)
    assert issubclass(LLMSupersessionJudge, PromptedSupersessionJudge)


@pytest.mark.parametrize("cls", [LLMImportanceScorer, LLMSummarizer, LLMSupersessionJudge])
def test_a_non_llm_is_refused(cls: Any) -> None:
    """Passing something that is not a LlamaIndex LLM raises a ValueError naming the type."""
    with pytest.raises(ValueError, match="LlamaIndex LLM"):
        cls("gpt-4o-mini")


# ---------------------------------------------------------------- supersession judge
def test_judge_sends_a_system_and_a_user_message() -> None:
    """One chat call carries the judge prompt as system message and both texts as user."""
    llm = ScriptedLLM(replies=["**Yes**, the favourite changed."])
    assert LLMSupersessionJudge(llm).supersedes(GREEN, BLUE, 0.8) is True
    ((system, user),) = llm.seen
    assert (system.role, system.content) == (MessageRole.SYSTEM, SUPERSESSION_PROMPT)
    assert user.role == MessageRole.USER
    assert BLUE in (user.content or "") and GREEN in (user.content or "")


@pytest.mark.parametrize(("reply", "verdict"), [("No.", False), ("yes", True), ("`NO`", False)])
def test_judge_reads_the_llms_verdict(reply: str, verdict: bool) -> None:
    """The reply's first word decides, whatever its case or punctuation."""
    judge = LLMSupersessionJudge(ScriptedLLM(replies=[reply]))
    assert judge.supersedes(GREEN, BLUE, 0.8) is verdict


@pytest.mark.parametrize(
    ("llm", "logged"),
    [(ScriptedLLM(fail=True), "failed"), (ScriptedLLM(replies=["Unclear."] * 2), "malformed")],
)
def test_judge_falls_back_to_the_lexical_rule(
    llm: ScriptedLLM, logged: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A failing LLM or a junk reply is logged under oblivion_llamaindex and the offline rule
    decides."""
    judge = LLMSupersessionJudge(llm)
    with caplog.at_level(logging.WARNING, logger="oblivion_llamaindex"):
        assert judge.supersedes(GREEN, BLUE, 0.8) is True
        assert judge.supersedes("I went to Rome in June.", "I went to Paris in May.", 0.8) is False
    assert logged in caplog.text
    assert {r.name for r in caplog.records} == {"oblivion_llamaindex"}


def test_judge_skips_dissimilar_pairs_and_caches_verdicts() -> None:
    """Below min_similarity no call is made and a pair already judged is not asked again."""
    llm = ScriptedLLM(replies=["yes"])
    judge = LLMSupersessionJudge(llm, min_similarity=0.5)
    assert judge.supersedes(GREEN, BLUE, 0.49) is False
    assert [judge.supersedes(GREEN, BLUE, 0.8) for _ in range(3)] == [True] * 3
    assert len(llm.seen) == 1


def test_judge_works_with_mock_llm() -> None:
    """LlamaIndex's own MockLLM (which echoes its prompt) drives the judge to the fallback."""
    judge = LLMSupersessionJudge(MockLLM())
    assert judge.supersedes(GREEN, BLUE, 0.8) is True


# ---------------------------------------------------------------- importance and summaries
@pytest.mark.parametrize(
    ("reply", "score", "category"),
    [
        ("score: 10\ncategory: instruction", 1.0, "instruction"),
        ("**score:** 4\n**category:** fact", 3 / 9, "fact"),
        ("score: 0\ncategory: gossip", None, None),
    ],
)
def test_importance_comes_from_the_llm_or_the_heuristic(
    reply: str, score: float | None, category: str | None
) -> None:
    """A 1-10 rating maps to [0, 1] and a malformed part comes from the heuristic scorer."""
    llm = ScriptedLLM(replies=[reply])
    scorer = LLMImportanceScorer(llm)
    assert scorer.score(TEXT) == pytest.approx(
        score if score is not None else HEURISTIC.score(TEXT)
    )
    assert scorer.categorize(TEXT) == (
        category if category is not None else HEURISTIC.categorize(TEXT)
    )
    assert len(llm.seen) == 1


def test_the_engine_uses_the_llm_scorer() -> None:
    """Oblivion(importance_scorer=LLMImportanceScorer(llm)) stores the LLM's appraisal."""
    scorer = LLMImportanceScorer(ScriptedLLM(replies=["score: 10\ncategory: preference"]))
    engine = memory(importance_scorer=scorer)
    try:
        record = engine.remember("I take my tea with lemon.")
        assert (record.category, record.importance) == ("preference", 1.0)
    finally:
        engine.close()


def test_summarizer_returns_the_llms_summary() -> None:
    """summarize() sends the texts as a bulleted list and returns the LLM's text."""
    llm = ScriptedLLM(replies=["Sam lives in Leeds and likes tea."])
    summary = LLMSummarizer(llm).summarize(["I live in Leeds.", "I like tea."])
    assert summary == "Sam lives in Leeds and likes tea."
    assert llm.seen[0][1].content == "- I live in Leeds.\n- I like tea."


@pytest.mark.parametrize("llm", [ScriptedLLM(replies=["  "]), ScriptedLLM(fail=True)])
def test_summarizer_falls_back_offline(llm: ScriptedLLM, caplog: pytest.LogCaptureFixture) -> None:
    """An empty reply or a failing LLM gives the extractive summary with a warning."""
    texts = ["We met Ana in Porto.", "Ana showed us the Ribeira."]
    with caplog.at_level(logging.WARNING, logger="oblivion_llamaindex"):
        summary = LLMSummarizer(llm).summarize(texts)
    assert summary == ExtractiveSummarizer().summarize(texts)
    assert "fallback summarizer" in caplog.text


# ---------------------------------------------------------------- real stack
@pytest.mark.integration
def test_real_stack_judge_supersedes_the_old_colour(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """With MiniLM and embedded Chroma the LLM's yes hides blue behind green in recall."""
    llm = ScriptedLLM(replies=["Yes."])
    judge = LLMSupersessionJudge(llm)
    mem = Oblivion(tmp_path / "store", embedder=real_embedder, supersession_judge=judge)
    try:
        mem.remember("I live in Leeds.")
        blue = mem.remember(BLUE)  # Leeds is too dissimilar to ask about
        green = mem.remember(GREEN)
        assert len(llm.seen) == 1  # only the blue memory was asked about
        question = llm.seen[0][1].content or ""
        assert BLUE in question and GREEN in question
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
    categories = LLMImportanceScorer(ScriptedLLM()).categories
    assert "summary" not in categories and "instruction" in categories
