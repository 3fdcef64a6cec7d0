"""OblivionMemoryMiddleware when the store or the embedder fails: the run goes on
(``on_error="warn"``) and the turn waits for the next write, or the error ends the run
(``on_error="raise"``)."""

from __future__ import annotations

import logging
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from _lc_helpers import ScriptedChatModel, memory_block
from _outage import SwitchableEmbedder
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from oblivion_core import (
    EmbeddingError,
    FastEmbedEmbedder,
    InvalidInputError,
    ManualClock,
    Oblivion,
    VectorStore,
    VectorStoreError,
)
from oblivion_core.testing import memory, wait_for_chroma, word_count
from oblivion_langchain import OblivionMemoryMiddleware
from oblivion_langchain import middleware as mw

USER = {"configurable": {"user_id": "sam", "thread_id": "t"}}


@pytest.fixture
def flaky() -> Any:
    embedder = SwitchableEmbedder()
    engine = memory(embedder=embedder, clock=ManualClock())
    yield engine, embedder
    engine.close()  # an in-memory engine drops its collections on close


def _agent(engine: Oblivion, replies: list[str], **options: Any) -> tuple[Any, Any, Any]:
    model = ScriptedChatModel(replies)
    middleware = OblivionMemoryMiddleware(engine, **options)
    agent = create_agent(model, tools=[], middleware=[middleware], checkpointer=InMemorySaver())
    return agent, model, middleware


def _ask(agent: Any, text: str) -> dict[str, Any]:
    return agent.invoke({"messages": [{"role": "user", "content": text}]}, USER)


def _turns(engine: Oblivion) -> list[str]:
    return [r.text for r in sorted(engine.records(namespace="sam"), key=lambda r: r.created_at)]


def test_an_outage_leaves_the_answer_and_the_turn_waits(
    flaky: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """With the embedder down the run still answers (no memories injected, a warning
    logged); the turn is stored, before the next one, once the embedder is back."""
    engine, embedder = flaky
    engine.remember("Sam's sister Ana lives in Porto.", namespace="sam")
    agent, model, middleware = _agent(engine, ["Hello Sam.", "Porto, I believe.", "Noted."])
    assert _ask(agent, "Hi there")["messages"][-1].content == "Hello Sam."

    embedder.down = True
    with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
        result = _ask(agent, "Where does my sister Ana live?")
    assert result["messages"][-1].content == "Porto, I believe."
    assert memory_block(model.seen[-1]) is None  # answered without memories
    warnings = [r.getMessage() for r in caplog.records if r.name == "oblivion_langchain"]
    assert any("recall failed" in w and "timed out" in w for w in warnings)
    assert any("1 turn(s) could not be stored" in w for w in warnings)
    assert middleware.pending_turns == 1
    assert not any("Where does my sister" in t for t in _turns(engine))

    embedder.down = False
    _ask(agent, "Please remember that I moved to Lisbon.")
    assert middleware.pending_turns == 0
    turns = _turns(engine)
    assert turns[-2:] == [
        "user: Where does my sister Ana live?\nassistant: Porto, I believe.",
        "user: Please remember that I moved to Lisbon.\nassistant: Noted.",
    ]


def test_raise_ends_the_run_and_keeps_nothing_waiting(flaky: Any) -> None:
    """``on_error="raise"``: the outage ends the run, as it did before the option."""
    engine, embedder = flaky
    agent, _, middleware = _agent(engine, ["Hello."], on_error="raise")
    embedder.down = True
    with pytest.raises(EmbeddingError, match="timed out"):
        _ask(agent, "Hi there")
    assert middleware.pending_turns == 0


def test_a_turn_that_only_fails_to_store_raises_with_raise(flaky: Any) -> None:
    """The recall worked; the write after the answer fails: raised, nothing waits."""
    engine, embedder = flaky
    engine.remember("Sam likes tea.", namespace="sam")
    agent, _, middleware = _agent(engine, ["Tea."], on_error="raise")
    original = engine.remember

    def down(*args: Any, **kwargs: Any) -> Any:
        embedder.down = True
        try:
            return original(*args, **kwargs)
        finally:
            embedder.down = False

    engine.remember = down  # type: ignore[method-assign]
    with pytest.raises(EmbeddingError):
        _ask(agent, "What do I like to drink?")
    assert middleware.pending_turns == 0


@pytest.mark.parametrize("step", ["recall", "remember"])
def test_a_lasting_failure_ends_the_run_whatever_on_error(
    flaky: Any, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """Another embedding model than the store's, a damaged store: no outage that passes.
    "warn" answered without memories and queued every turn for good, saying it would be
    stored "with the next one"; it is raised, the turn waiting for a fixed engine."""
    from oblivion_core import ModelMismatchError, StoreCorruptError

    engine, _ = flaky
    engine.remember("Sam likes tea.", namespace="sam")
    agent, _, middleware = _agent(engine, ["Tea."])
    error = {"recall": ModelMismatchError, "remember": StoreCorruptError}[step]

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise error("another model's vectors (test)")

    monkeypatch.setattr(engine, step, failing)
    with pytest.raises(error):
        _ask(agent, "What do I like to drink?")
    assert middleware.pending_turns == (1 if step == "remember" else 0)


def test_flush_writes_waiting_turns_or_raises_keeping_them(flaky: Any) -> None:
    """``flush()`` raises while the store is down (the turns kept) and writes them once
    it is back."""
    engine, embedder = flaky
    agent, _, middleware = _agent(engine, ["One.", "Two."])
    embedder.down = True
    _ask(agent, "first message")
    _ask(agent, "second message")
    assert middleware.pending_turns == 2
    with pytest.raises(EmbeddingError):
        middleware.flush()
    assert middleware.pending_turns == 2
    embedder.down = False
    assert middleware.flush() == 0
    assert _turns(engine) == [
        "user: first message\nassistant: One.",
        "user: second message\nassistant: Two.",
    ]


def test_waiting_turns_are_bounded(
    flaky: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Beyond MAX_PENDING_TURNS the oldest waiting turn is dropped, logged as an error."""
    monkeypatch.setattr(mw, "MAX_PENDING_TURNS", 2)
    engine, embedder = flaky
    agent, _, middleware = _agent(engine, ["A.", "B.", "C."])
    embedder.down = True
    with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
        for text in ("one", "two", "three"):
            _ask(agent, text)
    assert middleware.pending_turns == 2
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert errors and "1 turn(s) dropped" in errors[0].getMessage()
    embedder.down = False
    middleware.flush()
    assert _turns(engine) == ["user: two\nassistant: B.", "user: three\nassistant: C."]


def test_on_error_is_validated(engine: Oblivion) -> None:
    with pytest.raises(InvalidInputError, match='on_error must be "warn" or "raise"'):
        OblivionMemoryMiddleware(engine, on_error="ignore")


def test_errors_in_what_the_caller_passed_still_raise(flaky: Any) -> None:
    """A closed engine is the caller's mistake, not an outage: it ends the run."""
    engine, _ = flaky
    agent, _, _ = _agent(engine, ["Hello."])
    engine.close()
    with pytest.raises(InvalidInputError, match="closed"):
        _ask(agent, "Hi")


@pytest.mark.integration
@pytest.mark.server
def test_a_chroma_server_going_down_mid_session(
    tmp_path: Path,
    own_chroma_server: tuple[str, int, subprocess.Popen[bytes]],
    real_embedder: FastEmbedEmbedder,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The real stack: a ``chroma run`` server killed between turns. The agent keeps
    answering; the turn waits, and is stored once a server is back on that port."""
    host, port, proc = own_chroma_server
    prefix = "mw-" + uuid.uuid4().hex[:6] + "-"
    engine = Oblivion(
        tmp_path / "state",
        vector_store=VectorStore.server(host, port, prefix=prefix),
        embedder=real_embedder,
        token_counter=word_count,
        clock=ManualClock(),
    )
    try:
        agent, _, middleware = _agent(engine, ["Noted.", "Porto, I think."])
        _ask(agent, "My sister Ana lives in Porto.")
        proc.kill()
        proc.wait(timeout=10)
        with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
            answer = _ask(agent, "Where does my sister live?")["messages"][-1].content
        assert answer == "Porto, I think."
        assert middleware.pending_turns == 1
        with pytest.raises(VectorStoreError):
            middleware.flush()
        assert middleware.pending_turns == 1
        # the server comes back on the same port, with the same data
        again = subprocess.Popen(proc.args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            wait_for_chroma(host, port)
            assert middleware.flush() == 0
            found = engine.recall("Where does my sister live?", namespace="sam", k=5)
            assert "user: Where does my sister live?\nassistant: Porto, I think." in found.texts
            assert "user: My sister Ana lives in Porto.\nassistant: Noted." in found.texts
        finally:
            again.terminate()
            again.wait(timeout=10)
    finally:
        engine.close()
    assert any(r.name == "oblivion_langchain" for r in caplog.records)


def test_a_tokenizer_without_its_encoding_is_an_outage(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Offline with no tiktoken copy, the default counter cannot load its encoding: a
    raw ``requests.ConnectionError`` escaped the middleware and ended the agent run. It
    is a ``TokenizerError`` (an outage): the run answers without memories, with a
    warning, and the turn waits for the next write."""
    import tiktoken

    from oblivion_core import TiktokenCounter

    engine = memory(token_counter=TiktokenCounter(), clock=ManualClock())
    try:

        def offline(name: str) -> Any:
            raise OSError("Name or service not known: openaipublic.blob.core.windows.net")

        monkeypatch.setattr(tiktoken, "get_encoding", offline)
        agent, model, middleware = _agent(engine, ["Hello Sam."], token_budget=400)
        with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
            result = _ask(agent, "Hi there")
        assert result["messages"][-1].content == "Hello Sam."
        assert memory_block(model.seen[-1]) is None
        warnings = [r.getMessage() for r in caplog.records if r.name == "oblivion_langchain"]
        assert any("TIKTOKEN_CACHE_DIR" in w for w in warnings)
        assert middleware.pending_turns == 1
    finally:
        engine.close()


def test_a_users_waiting_turn_is_written_before_their_next_from_another_thread() -> None:
    """After an outage one request writes every waiting turn, one at a time. A request
    of another thread, for a user whose older turn was still in that batch, wrote its
    new turn at once: "I live in York" came after "I moved to Leeds" and made it stale.
    Turns are written one request at a time, in the order they were made."""
    import threading

    from oblivion_core.testing import HashEmbedder

    class Gated(HashEmbedder):
        down = False
        hold = False  # the next write's embedding waits for ``gate``
        entered = threading.Event()
        gate = threading.Event()

        def embed_documents(self, texts: list[str]) -> Any:
            if self.down:
                raise ConnectionError("embedding server down")
            if self.hold:
                self.hold = False
                self.entered.set()
                self.gate.wait(30)
            return super().embed_documents(texts)

        def embed_query(self, text: str) -> Any:
            if self.down:
                raise ConnectionError("embedding server down")
            return super().embed_query(text)

    embedder = Gated()
    engine = memory(embedder=embedder, clock=ManualClock())
    try:
        middleware = OblivionMemoryMiddleware(engine, token_budget=400)
        agent = create_agent(ScriptedChatModel(["Noted."] * 10), tools=[], middleware=[middleware])

        def say(user: str, text: str) -> None:
            config = {"configurable": {"user_id": user}}
            agent.invoke({"messages": [{"role": "user", "content": text}]}, config)

        embedder.down = True
        say("x", "I live in York.")
        embedder.down, embedder.hold = False, True
        first = threading.Thread(target=say, args=("other", "Hello there."))
        first.start()
        assert embedder.entered.wait(30)  # writing the waiting turns, held there
        second = threading.Thread(target=say, args=("x", "I moved to Leeds, I live in Leeds."))
        second.start()
        second.join(1.0)  # it must wait for the first request's batch
        embedder.gate.set()
        first.join(30)
        second.join(30)
        turns = {r.text.split("\n")[0]: r for r in engine.records(namespace="x")}
        york, leeds = (
            turns["user: I live in York."],
            turns["user: I moved to Leeds, I live in Leeds."],
        )
        assert york.superseded_by == leeds.id and leeds.superseded_by is None
    finally:
        engine.close()
