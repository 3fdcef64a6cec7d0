"""The README's LlamaIndex examples run as written (read from README.md by
``tests/_readme.py``), in order, on one engine as the README says (``mem`` from the first),
with the offline stand-ins it names for ``llm`` and ``embed_model``: ``MockLLM()`` and
``MockEmbedding(embed_dim=384)``. The engine is the real stack: the local model and
Chroma on disk.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _readme import examples
from llama_index.core import Settings
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM

pytestmark = pytest.mark.integration


def test_llamaindex_examples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The four examples in order on one engine: the postprocessor re-ranks and explains
    the index's node, the retriever returns Alice's memory, the memory block and the chat
    memory run a chat, and after a reset the instruction is recalled and shown first, with
    its why."""
    postprocessor, retriever, block, chat_memory = examples("LlamaIndex")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(Settings, "_llm", None)  # the example sets both globally
    monkeypatch.setattr(Settings, "_embed_model", None)
    names = {"llm": MockLLM(), "embed_model": MockEmbedding(embed_dim=384)}
    postprocessor.run(names)
    mem = names["mem"]
    try:
        out = capsys.readouterr().out.splitlines()
        # the node's score is Oblivion's, as its why works it out; relevance is the
        # index's similarity (MockEmbedding's 1.0000000000000002 clipped to 1)
        (line,) = out
        score, why = line.split(" ", 1)
        assert why.startswith("ranked 1 of 1: relevance 1.000 x 1 + ")
        assert f"= {score};" in why
        (record,) = mem.records()
        assert record.text == "Refunds take 5 working days."
        assert "used" in [event.kind for event in mem.history(record.id)]

        retriever.run(names)
        (line,) = capsys.readouterr().out.splitlines()  # alice's one memory
        text, tier, activation = line.rsplit(" ", 2)
        assert (text, tier) == ("Alice's sister Anna lives in Porto.", "active")
        assert 0.0 < float(activation) <= 1.0

        block.run(names)
        messages = names["memory"].get()
        assert [m.content for m in messages if m.role.value == "user"] == [
            "From now on, always answer in British English."
        ]

        chat_memory.run(names)
        out = capsys.readouterr().out.splitlines()
        assert out[0].startswith("ranked 1 of ")
        (first, *_) = names["memory"].last_recall.items
        assert "always answer in British English" in first.text
        assert "instruction memory" in out[0]
        # a new conversation: the instruction is in no recent turn, and is shown first
        system, *_ = names["memory"].get()
        assert system.role.value == "system"
        assert system.content.splitlines()[1].startswith("- From now on, always answer in")
    finally:
        mem.close()
