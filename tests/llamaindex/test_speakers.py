"""Whose facts a chat message states: the LlamaIndex adapters store each message's bare
text with its role as metadata, and the stale-fact rule reads that role as the speaker.
An assistant's "my" is not the user's; the user's corrections still replace their facts,
whichever adapter stored the older one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage, MessageRole

from oblivion_core import Oblivion
from oblivion_core.embedding import FastEmbedEmbedder
from oblivion_core.testing import ManualClock
from oblivion_llamaindex import OblivionMemory, OblivionMemoryBlock

pytestmark = pytest.mark.integration

BOTH = ("user", "assistant")


def user(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=text)


def assistant(text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.ASSISTANT, content=text)


def _current(mem: Oblivion, text: str) -> bool:
    """Whether the memory of ``text`` in namespace "sam" is still current."""
    (record,) = [r for r in mem.records(namespace="sam") if r.text == text]
    return mem.get(record.id, namespace="sam").superseded_by is None


def test_the_assistants_lines_leave_the_users_facts_through_the_block(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """Real model, Chroma on disk, the block remembering both sides: the assistant's
    own name and favourite leave the user's; the user's correction replaces theirs."""
    with Oblivion(tmp_path / "store", embedder=real_embedder, clock=ManualClock()) as mem:
        block = OblivionMemoryBlock(oblivion=mem, namespace="sam", remember_roles=BOTH)
        asyncio.run(block.aput([user("My name is Sam."), assistant("My name is Ada.")]))
        asyncio.run(
            block.aput(
                [
                    user("My favourite colour is blue."),
                    assistant("My favourite colour is purple, since you ask!"),
                ]
            )
        )
        assert _current(mem, "My name is Sam.")
        assert _current(mem, "My favourite colour is blue.")
        shown = asyncio.run(block.aget([user("What is my name?")]))
        assert "My name is Sam." in shown
        asyncio.run(block.aput([user("Actually my favourite colour is green now.")]))
        assert not _current(mem, "My favourite colour is blue.")
        assert _current(mem, "My favourite colour is purple, since you ask!")


def test_the_assistants_lines_leave_the_users_facts_through_memory(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """The same through ``OblivionMemory`` (its writes wait for the next flush)."""
    with Oblivion(tmp_path / "store", embedder=real_embedder, clock=ManualClock()) as mem:
        memory = OblivionMemory(oblivion=mem, namespace="sam", remember_roles=BOTH)
        memory.put(user("My name is Sam."))
        memory.put(assistant("My name is Ada, your assistant."))
        memory.flush()
        assert _current(mem, "My name is Sam.")


def test_a_users_message_replaces_a_fact_another_adapter_stored(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """A turn the LangChain classic memory stored (opening "Human:") is the user's: a
    correction through LlamaIndex replaces it, an assistant's line does not."""
    with Oblivion(tmp_path / "store", embedder=real_embedder, clock=ManualClock()) as mem:
        old = "Human: My favourite colour is blue.\nAI: Blue, noted."
        mem.remember(old, namespace="sam")
        block = OblivionMemoryBlock(oblivion=mem, namespace="sam", remember_roles=BOTH)
        asyncio.run(block.aput([assistant("My favourite colour is red.")]))
        assert _current(mem, old)
        asyncio.run(block.aput([user("My favourite colour is green now.")]))
        assert not _current(mem, old)


def test_the_assistants_introduction_is_not_the_users_name(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """Real model, Chroma on disk, the block remembering both sides: "What's my name?"
    puts the user's introduction first, and the assistant's own ("I'm Ada"), stored
    after it with its role as metadata, is not shown as naming the user; after a reopen
    (the name index built again from the store) too."""
    store = tmp_path / "store"
    clock = ManualClock()
    with Oblivion(store, embedder=real_embedder, clock=clock) as mem:
        block = OblivionMemoryBlock(oblivion=mem, namespace="sam", remember_roles=BOTH)
        asyncio.run(
            block.aput(
                [
                    user("Hi, I'm Sam. I look after the data platform."),
                    assistant("Hi there, I'm Ada, your assistant. How can I help, Sam?"),
                    user("Can you remind me about the budget review on Friday?"),
                ]
            )
        )
    for _ in range(2):
        with Oblivion(store, embedder=real_embedder, clock=clock) as mem:
            result = mem.recall("What's my name?", namespace="sam", k=3, feedback=False)
            named = [i.text for i in result if "names_user" in i.why["relevance_signals"]]
            assert named == ["Hi, I'm Sam. I look after the data platform."]
            assert result[0].text == named[0]
