"""``OblivionMemory`` when the store or the embedder fails: the chat turn answers
(``on_error="warn"``, the default) and the messages wait for the next write, or the
error ends the turn (``on_error="raise"``)."""

from __future__ import annotations

import logging
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM

from oblivion_core import (
    EmbeddingError,
    FastEmbedEmbedder,
    InvalidInputError,
    ManualClock,
    Oblivion,
    VectorStore,
    VectorStoreError,
)
from oblivion_core.testing import memory as new_engine
from oblivion_core.testing import wait_for_chroma, word_count
from oblivion_llamaindex import OblivionMemory

from ._helpers import FlakyEmbedder, assistant, user
from .test_memory import Recorder

LOGGER = "oblivion_llamaindex"
ANSWER = "Noted, thanks for telling me, I will keep that in mind."


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING
    ]


def _stored(engine: Oblivion, namespace: str = "alice") -> list[str]:
    return [r.text for r in engine.records(namespace=namespace)]


def _has_memory_block(messages: Sequence[ChatMessage]) -> bool:
    return any("Relevant memories" in (m.content or "") for m in messages)


@pytest.fixture
def flaky() -> Iterator[tuple[Oblivion, FlakyEmbedder]]:
    """An in-memory engine whose embedder can be down (it times out)."""
    embedder = FlakyEmbedder()
    engine = new_engine(embedder=embedder, clock=ManualClock())
    yield engine, embedder
    engine.close()


def _server_engine(tmp_path: Path, host: str, port: int, embedder: FastEmbedEmbedder) -> Oblivion:
    return Oblivion(
        tmp_path / "state",
        vector_store=VectorStore.server(
            host, port, prefix="li-" + uuid.uuid4().hex[:6] + "-", timeout=5
        ),
        embedder=embedder,
        token_counter=word_count,
        clock=ManualClock(),
    )


@pytest.mark.integration
@pytest.mark.server
def test_a_chroma_server_going_down_mid_chat_costs_no_answer_and_no_message(
    tmp_path: Path,
    own_chroma_server: tuple[str, int, subprocess.Popen[bytes]],
    real_embedder: FastEmbedEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With a real ``chroma run`` server killed between turns, a ``SimpleChatEngine``
    keeps answering with one warning for the whole outage, and once a server is back on
    that port every user turn is stored exactly once, in order."""
    host, port, proc = own_chroma_server
    engine = _server_engine(tmp_path, host, port, real_embedder)
    try:
        memory = OblivionMemory(oblivion=engine, namespace="alice", token_limit=1500)
        chat = SimpleChatEngine.from_defaults(
            llm=MockLLM(messages_to_prompt=Recorder()), memory=memory
        )
        turns = [
            "My sister Anna lives in Porto.",
            "My brother Ben lives in Braga.",
            "Where does Anna live?",
            "Which city is Ben in?",
            "I like hiking in the mountains.",
        ]
        assert str(chat.chat(turns[0])) == "Noted."
        proc.kill()
        proc.wait(timeout=10)
        with caplog.at_level(logging.DEBUG, logger=LOGGER):
            for text in turns[1:4]:
                assert str(chat.chat(text)) == "Noted."
        warnings = _warnings(caplog)
        assert len(warnings) == 1, warnings
        assert warnings[0].startswith("OblivionMemory: ") and "DEBUG only" in warnings[0]
        assert memory.pending_messages == 3
        assert _stored(engine) == turns[:1]
        # the short-term history has every turn, each with its answer
        assert [m.content for m in memory.get_all()] == [
            part for text in turns[:4] for part in (text, "Noted.")
        ]
        with pytest.raises(VectorStoreError):
            memory.flush()  # flush raises, whatever on_error says; nothing is lost
        assert memory.pending_messages == 3

        again = subprocess.Popen(proc.args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            wait_for_chroma(host, port)
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger=LOGGER):
                assert str(chat.chat(turns[4])) == "Noted."
            assert _warnings(caplog) == []
            memory.flush()
            assert memory.pending_messages == 0
            assert _stored(engine) == turns
            found = engine.recall("Where does my brother Ben live?", namespace="alice", k=5)
            assert "My brother Ben lives in Braga." in found.texts
        finally:
            again.terminate()
            again.wait(timeout=10)
    finally:
        engine.close()


@pytest.mark.integration
@pytest.mark.server
def test_on_error_raise_ends_the_chat_turn_when_the_server_is_down(
    tmp_path: Path,
    own_chroma_server: tuple[str, int, subprocess.Popen[bytes]],
    real_embedder: FastEmbedEmbedder,
) -> None:
    """With ``on_error="raise"`` a chat turn meeting a dead Chroma server raises, as
    before the option, and the user's message stays queued for a later write."""
    host, port, proc = own_chroma_server
    engine = _server_engine(tmp_path, host, port, real_embedder)
    try:
        memory = OblivionMemory(oblivion=engine, namespace="alice", on_error="raise")
        chat = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=3), memory=memory)
        chat.chat("My sister Anna lives in Porto.")
        proc.kill()
        proc.wait(timeout=10)
        with pytest.raises(VectorStoreError):
            chat.chat("My brother Ben lives in Braga.")
        assert memory.pending_messages == 1
        assert _stored(engine) == ["My sister Anna lives in Porto."]
    finally:
        engine.close()


def test_an_embedder_down_answers_without_memories_within_the_limit(
    flaky: tuple[Oblivion, FlakyEmbedder], caplog: pytest.LogCaptureFixture
) -> None:
    """With the embedder down, chat turns get the recent turns alone (no memory block,
    within ``token_limit``) and one warning per outage, and the user turns are stored in
    order once it is back."""
    engine, embedder = flaky
    engine.remember("My sister Anna lives in Porto.", namespace="alice")
    recorder = Recorder(ANSWER)
    memory = OblivionMemory(oblivion=engine, namespace="alice", token_limit=60)
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(messages_to_prompt=recorder), memory=memory)
    chat.chat("Where does my sister Anna live?")
    assert _has_memory_block(recorder.calls[-1])  # the memory is recalled while it works

    embedder.down = True
    down = [
        "Where does my sister Anna live, do you remember?",
        "I am vegetarian and I cook every evening.",
        "My brother Ben moved to Braga last year.",
    ]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for text in down:
            assert str(chat.chat(text)) == ANSWER
            sent = recorder.calls[-1]
            assert not _has_memory_block(sent)
            assert sent[-1].content == text
            assert sum(word_count(m.content or "") for m in sent) <= 60
    assert len(sent) < len(memory.get_all())  # the oldest turns cut to fit
    warnings = _warnings(caplog)
    assert len(warnings) == 1 and "recall failed" in warnings[0], warnings
    assert memory.pending_messages == 3

    embedder.down = False
    chat.chat("Remind me where Anna lives.")
    assert _has_memory_block(recorder.calls[-1])  # recalled again
    memory.flush()
    assert _stored(engine) == [
        "My sister Anna lives in Porto.",
        "Where does my sister Anna live?",
        *down,
        "Remind me where Anna lives.",
    ]

    # a new outage is a new warning; an error in what the caller passed still raises
    caplog.clear()
    embedder.down = True
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        chat.chat("Tell me a joke.")
        chat.chat("Another one, please.")
    assert len(_warnings(caplog)) == 1
    engine.close()
    with pytest.raises(InvalidInputError, match="closed"):
        chat.chat("Hello?")


async def test_an_async_chat_turn_answers_through_an_outage(
    flaky: tuple[Oblivion, FlakyEmbedder], caplog: pytest.LogCaptureFixture
) -> None:
    """``achat`` (``aput``/``aget``) answers while the embedder is down, and the message
    is stored after it is back."""
    engine, embedder = flaky
    recorder = Recorder()
    memory = OblivionMemory(oblivion=engine, namespace="alice")
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(messages_to_prompt=recorder), memory=memory)
    embedder.down = True
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert str(await chat.achat("My sister Anna lives in Porto.")) == "Noted."
        assert str(await chat.achat("I am vegetarian.")) == "Noted."
    assert len(_warnings(caplog)) == 1
    embedder.down = False
    await chat.achat("Where does Anna live?")
    memory.flush()
    assert _stored(engine) == [
        "My sister Anna lives in Porto.",
        "I am vegetarian.",
        "Where does Anna live?",
    ]


def test_put_messages_set_and_reset_keep_messages_queued_and_flush_raises(
    flaky: tuple[Oblivion, FlakyEmbedder],
) -> None:
    """With ``on_error="warn"``, ``put_messages``, ``set`` and ``reset`` go on while the
    embedder is down, ``flush`` raises (the messages kept), and the next write stores
    them in order."""
    engine, embedder = flaky
    memory = OblivionMemory(oblivion=engine, namespace="alice")
    embedder.down = True
    memory.put_messages([user("first message"), assistant("One."), user("second message")])
    memory.put(assistant("Two."))
    memory.set([user("hello")])
    memory.reset()
    assert memory.get_all() == []
    assert memory.pending_messages == 2
    with pytest.raises(EmbeddingError, match="timed out"):
        memory.flush()
    assert memory.pending_messages == 2
    embedder.down = False
    memory.flush()
    assert memory.pending_messages == 0
    assert _stored(engine) == ["first message", "second message"]


def test_on_error_is_validated(flaky: tuple[Oblivion, FlakyEmbedder]) -> None:
    """``on_error`` is ``"warn"`` by default, takes ``"raise"``, survives ``to_dict``,
    and anything else is refused with a clear ``InvalidInputError``."""
    engine, _ = flaky
    assert OblivionMemory(oblivion=engine).on_error == "warn"
    strict = OblivionMemory(oblivion=engine, on_error="raise")
    assert OblivionMemory.from_dict(strict.to_dict(), oblivion=engine).on_error == "raise"
    for bad in ("ignore", "WARN", None, 1):
        with pytest.raises(InvalidInputError, match='on_error must be "warn" or "raise"'):
            OblivionMemory(oblivion=engine, on_error=bad)
    with pytest.raises(ValueError, match='on_error must be "warn" or "raise"'):
        strict.on_error = "skip"
    assert strict.on_error == "raise"
    with pytest.raises(InvalidInputError, match='on_error must be "warn" or "raise"'):
        OblivionMemory.from_defaults(oblivion=engine, on_error="silent")


def test_a_tokenizer_without_its_encoding_answers_with_the_latest_message(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Offline with no tiktoken copy, a chat turn answers from the latest message alone
    with one warning (``"raise"`` raises ``TokenizerError``), and its message is stored
    once the encoding loads."""
    import tiktoken

    from oblivion_core import TiktokenCounter, TokenizerError

    engine = new_engine(token_counter=TiktokenCounter(), clock=ManualClock())
    try:
        real = tiktoken.get_encoding

        def offline(name: str) -> Any:
            raise OSError("Name or service not known: openaipublic.blob.core.windows.net")

        monkeypatch.setattr(tiktoken, "get_encoding", offline)
        recorder = Recorder()
        memory = OblivionMemory(oblivion=engine, namespace="alice")
        chat = SimpleChatEngine.from_defaults(
            llm=MockLLM(messages_to_prompt=recorder), memory=memory, system_prompt="Be brief."
        )
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert str(chat.chat("My sister Anna lives in Porto.")) == "Noted."
            assert str(chat.chat("I am vegetarian.")) == "Noted."
        assert [m.content for m in recorder.calls[-1]] == ["Be brief.", "I am vegetarian."]
        warnings = _warnings(caplog)
        assert len(warnings) == 1 and "TIKTOKEN_CACHE_DIR" in warnings[0], warnings
        memory.on_error = "raise"
        with pytest.raises(TokenizerError):
            chat.chat("Where does Anna live?")
        memory.on_error = "warn"

        monkeypatch.setattr(tiktoken, "get_encoding", real)
        chat.chat("I like hiking.")
        memory.flush()
        assert _stored(engine) == [
            "My sister Anna lives in Porto.",
            "I am vegetarian.",
            "Where does Anna live?",
            "I like hiking.",
        ]
    finally:
        engine.close()


class _Mirrored:
    """Another embedding model of the same size: the test embedder's vectors reversed."""

    def __init__(self) -> None:
        from oblivion_core.testing import HashEmbedder

        self.inner = HashEmbedder(dim=64)

    def embed_documents(self, texts: list[str]) -> Any:
        return [list(v)[::-1] for v in self.inner.embed_documents(texts)]

    def embed_query(self, text: str) -> Any:
        return list(self.inner.embed_query(text))[::-1]


def test_another_embedding_model_is_raised_whatever_on_error(tmp_path: Path) -> None:
    """A store opened with another model than its own fails every recall and write with
    ModelMismatchError: no outage that passes, so "warn" queued every message for good
    and answered without memories, saying they would be written once it works again."""
    from oblivion_core import ModelMismatchError
    from oblivion_core.testing import HashEmbedder

    texts = [f"note {i} about the harbour ferry timetable" for i in range(8)]
    with Oblivion(tmp_path, embedder=HashEmbedder(dim=64), token_counter=word_count) as engine:
        engine.remember_many(texts, namespace="alice")
    with Oblivion(tmp_path, embedder=_Mirrored(), token_counter=word_count) as engine:
        memory = OblivionMemory(oblivion=engine, namespace="alice")
        chat = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
        with pytest.raises(ModelMismatchError):
            chat.chat("When does the ferry leave?")
        assert _stored(engine) == texts  # nothing written with the wrong model


def test_writes_during_an_outage_are_tried_again_after_a_wait(
    flaky: tuple[Oblivion, FlakyEmbedder],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the vector store down and the recall answering in process, a failed write is
    tried again only after a wait, doubled after each failed try (every put and get had
    embedded the whole queue again: n * n embeddings over an outage of n turns), flush()
    tries at once, and what waited is stored once, in order."""
    from oblivion_llamaindex import memory as module

    engine, embedder = flaky
    engine.remember("My sister Anna lives in Porto.", namespace="alice")
    embedded: list[int] = []
    real_embed = embedder.embed_documents

    def counting(texts: list[str]) -> Any:
        embedded.append(len(texts))
        return real_embed(texts)

    monkeypatch.setattr(embedder, "embed_documents", counting)
    real_add = engine.store.add
    down = [True]

    def add(*args: Any, **kwargs: Any) -> Any:
        if down[0]:
            raise VectorStoreError("could not reach the Chroma server (test)")
        return real_add(*args, **kwargs)

    monkeypatch.setattr(engine.store, "add", add)
    now = [time.monotonic()]
    monkeypatch.setattr(module.time, "monotonic", lambda: now[0])
    memory = OblivionMemory(oblivion=engine, namespace="alice")
    chat = SimpleChatEngine.from_defaults(llm=MockLLM(), memory=memory)
    said = [f"Message number {i} about my sister Anna." for i in range(8)]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for text in said[:6]:
            chat.chat(text)
    assert len(embedded) == 1  # one try, then the wait
    assert len(_warnings(caplog)) == 1
    now[0] += 1.5  # past the first wait (1 s): one more try, then 2 s
    chat.chat(said[6])
    assert len(embedded) == 2
    chat.chat(said[7])
    assert len(embedded) == 2
    with pytest.raises(VectorStoreError):
        memory.flush()  # at once, whatever the wait
    assert len(embedded) == 3
    down[0] = False
    now[0] += 60
    chat.chat("Back again.")
    memory.flush()
    user_turns = [t for t in _stored(engine) if not t.startswith("My sister")]
    assert [t for t in user_turns if t.startswith(("Message", "Back"))] == [*said, "Back again."]
