"""The README's LangChain / LangGraph examples run as written (read from README.md by
``tests/_readme.py``), on the real stack: the local model and Chroma on disk. Scripted
chat models stand in for ``model`` and ``llm``, the names the README leaves to the reader.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _lc_helpers import EchoChatModel, ScriptedChatModel, memory_block
from _readme import examples
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage, ToolMessage

from oblivion_core import Oblivion

pytestmark = pytest.mark.integration

RETRIEVER, STORE, MIDDLEWARE, CLASSIC = examples("LangChain / LangGraph")


@pytest.fixture
def names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[dict[str, Any]]:
    """What the retriever example, the section's first, leaves defined (``memory``)."""
    monkeypatch.chdir(tmp_path)
    names = RETRIEVER.run({})
    capsys.readouterr()
    yield names
    for value in list(names.values()):
        if isinstance(value, Oblivion):
            value.close()


def test_retriever_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The retriever example prints the office first with its why, within k and budget."""
    monkeypatch.chdir(tmp_path)
    names = RETRIEVER.run({})
    try:
        out = capsys.readouterr().out.splitlines()
        # the office first, then its why; the instruction is only ranked by the query
        assert out[0].startswith("The office moved to Leeds in March. active ")
        assert out[1].strip().startswith("ranked 1 of ")
        docs = names["retriever"].invoke("Where is the office?")
        assert 1 <= len(docs) <= 4
        assert sum(doc.metadata["tokens"] for doc in docs) <= 300
    finally:
        names["memory"].close()


def test_langgraph_store_example(names: dict[str, Any]) -> None:
    """The store example's agent calls its recall tool and gets Sam's tea."""
    names["model"] = ScriptedChatModel(
        [
            AIMessage(
                content="",
                tool_calls=[{"name": "recall", "args": {"query": "drinks"}, "id": "c1"}],
            ),
            "You like green tea.",
        ]
    )
    STORE.run(names)
    result = names["agent"].invoke({"messages": [{"role": "user", "content": "What do I drink?"}]})
    (tool_message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert tool_message.content == "Sam prefers green tea"
    assert result["messages"][-1].content == "You like green tea."


def test_middleware_example(names: dict[str, Any]) -> None:
    """The middleware example's second call sees the first turn's instruction."""
    model = names["model"] = EchoChatModel()
    MIDDLEWARE.run(names)
    assert len(model.seen) == 2
    block = memory_block(model.seen[1])
    assert block is not None and "Always use kilometres." in block
    # each exchange is remembered in the user's namespace
    recalled = names["memory"].recall("kilometres", namespace="sam", k=1)
    assert recalled[0].text.startswith("user: Always use kilometres.")


def test_classic_memory_example(names: dict[str, Any]) -> None:
    """The classic memory example remembers the chain's turn and recalls it."""
    names["llm"] = FakeListLLM(responses=["Noted, no meat."])
    CLASSIC.run(names)
    history = names["classic"].load_memory_variables({"input": "Suggest a dinner"})["history"]
    assert "I'm vegetarian." in history
