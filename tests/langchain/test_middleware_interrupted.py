"""OblivionMemoryMiddleware when a run stops between the model's answer and
``after_model``: a client gone while streaming, a cancelled request, a timeout. The
checkpointer keeps the answer in the thread; the turn is stored with the next one."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from _lc_helpers import EchoChatModel, ScriptedChatModel
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, SummarizationMiddleware
from langchain.agents.structured_output import ToolStrategy
from langchain.tools import tool
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from oblivion_core import Oblivion
from oblivion_langchain import OblivionMemoryMiddleware
from oblivion_langchain.middleware import STATE_KEY

AFTER_MODEL = "OblivionMemoryMiddleware.after_model"
FACT = "My locker code is 4711."


def _config(thread: str = "t", user: str = "sam") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread, "user_id": user}}


def _agent(engine: Oblivion, model: Any, **options: Any) -> Any:
    return create_agent(
        model,
        tools=options.pop("tools", []),
        middleware=[OblivionMemoryMiddleware(engine), *options.pop("middleware", [])],
        checkpointer=InMemorySaver(),
        **options,
    )


def _input(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


def _stop_after(agent: Any, text: str, config: dict[str, Any], node: str = "model") -> None:
    """Stream a turn and stop reading once ``node`` has run (the client goes away)."""
    with contextlib.closing(agent.stream(_input(text), config, stream_mode="updates")) as stream:
        for update in stream:
            if node in update:
                break


async def _astop_after(agent: Any, text: str, config: dict[str, Any]) -> None:
    stream = agent.astream(_input(text), config, stream_mode="updates")
    try:
        async for update in stream:
            if "model" in update:
                break
    finally:
        await stream.aclose()


def _turns(engine: Oblivion, namespace: str = "sam") -> list[Any]:
    if namespace not in engine.namespaces():
        return []
    return sorted(
        (r for r in engine.records(namespace=namespace) if r.metadata.get("kind") == "turn"),
        key=lambda r: r.created_at,
    )


def _events(engine: Oblivion, memory_id: str, namespace: str = "sam") -> list[str]:
    return [e.kind for e in engine.history(memory_id, namespace=namespace)]


def _assert_stored_like_a_normal_turn(engine: Oblivion, stored: Any) -> None:
    """``stored`` is what a run that was not stopped stores for the same turn."""
    agent = _agent(engine, EchoChatModel())
    agent.invoke(_input(FACT), _config("reference", "ref"))
    (normal,) = _turns(engine, "ref")
    assert stored.text == normal.text == f"user: {FACT}\nassistant: Noted: {FACT}"
    assert stored.metadata == normal.metadata
    assert (stored.category, stored.importance) == (normal.category, normal.importance)


def test_a_turn_whose_stream_stopped_after_the_answer_is_stored_with_the_next(
    engine: Oblivion,
) -> None:
    """A sync ``stream()`` the client stopped reading after the answer left the thread
    waiting for ``after_model``; the next message replaced the turn's memo and the turn
    ("My locker code is 4711.") was never stored. It is stored, once, by the next turn,
    as a turn that was not stopped is."""
    agent = _agent(engine, EchoChatModel())
    config = _config()
    _stop_after(agent, FACT, config)
    assert agent.get_state(config).next == (AFTER_MODEL,)
    assert _turns(engine) == []

    agent.invoke(_input("What is the weather?"), config)
    agent.invoke(_input("And tomorrow?"), config)
    texts = [r.text for r in _turns(engine)]
    assert texts == [
        f"user: {FACT}\nassistant: Noted: {FACT}",
        "user: What is the weather?\nassistant: Noted: What is the weather?",
        "user: And tomorrow?\nassistant: Noted: And tomorrow?",
    ]
    _assert_stored_like_a_normal_turn(engine, _turns(engine)[0])


async def test_async_a_turn_whose_stream_stopped_after_the_answer_is_stored_with_the_next(
    engine: Oblivion,
) -> None:
    """The same with ``astream()`` closed after the answer (a client disconnect):
    ``abefore_model`` of the next turn stores it, once."""
    agent = _agent(engine, EchoChatModel())
    config = _config()
    await _astop_after(agent, FACT, config)
    assert (await agent.aget_state(config)).next == (AFTER_MODEL,)

    await agent.ainvoke(_input("What is the weather?"), config)
    await agent.ainvoke(_input("And tomorrow?"), config)
    assert [r.text.splitlines()[0] for r in _turns(engine)] == [
        f"user: {FACT}",
        "user: What is the weather?",
        "user: And tomorrow?",
    ]
    _assert_stored_like_a_normal_turn(engine, _turns(engine)[0])


class _Hang(AgentMiddleware):
    """An ``after_model`` that runs before the memory middleware's and, on the first
    turn, hangs until the request is cancelled (a slow guardrail, a timeout)."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = asyncio.Event()

    async def aafter_model(self, state: Any, runtime: Any) -> None:
        if not self.reached.is_set():
            self.reached.set()
            await asyncio.Event().wait()


async def test_a_request_cancelled_after_the_answer_is_stored_with_the_next(
    engine: Oblivion,
) -> None:
    """A request cancelled after the model answered (``asyncio.wait_for`` timing out,
    a server cancelling the request) lost the turn; it is stored with the next one."""
    hang = _Hang()
    agent = _agent(engine, EchoChatModel(), middleware=[hang])
    config = _config()
    run = asyncio.create_task(agent.ainvoke(_input(FACT), config))
    await hang.reached.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert _turns(engine) == []

    await agent.ainvoke(_input("What is the weather?"), config)
    assert [r.text for r in _turns(engine)] == [
        f"user: {FACT}\nassistant: Noted: {FACT}",
        "user: What is the weather?\nassistant: Noted: What is the weather?",
    ]


def test_the_stopped_turn_is_stored_once_when_after_model_runs_later(
    engine: Oblivion,
) -> None:
    """Once the next turn stored the stopped one, running that turn's ``after_model``
    from its checkpoint (``invoke(None, config)``) neither stores it again nor gives the
    memory its answer used a second "used" boost."""
    locker = engine.remember("Sam's locker is in the gym basement.", namespace="sam").id
    answer = "Your locker is in the gym basement."
    agent = _agent(engine, ScriptedChatModel([answer, "Sunny."]))
    config = _config()
    _stop_after(agent, "Where is my locker?", config)
    agent.invoke(_input("What is the weather?"), config)
    first = _turns(engine)[0]
    assert first.text == f"user: Where is my locker?\nassistant: {answer}"
    assert _events(engine, locker).count("used") == 1

    stopped = next(h for h in agent.get_state_history(config) if h.next == (AFTER_MODEL,))
    agent.invoke(None, stopped.config)
    assert [r.text for r in _turns(engine)] == [
        f"user: Where is my locker?\nassistant: {answer}",
        "user: What is the weather?\nassistant: Sunny.",
    ]
    assert _turns(engine)[0].id == first.id
    assert "edit" not in _events(engine, first.id)
    assert _events(engine, locker).count("used") == 1


def test_a_stopped_turn_resumed_before_the_next_is_stored_once(engine: Oblivion) -> None:
    """A stopped run resumed on its thread (``invoke(None, config)``) stores the turn in
    ``after_model``; the next turn does not store it again."""
    agent = _agent(engine, EchoChatModel())
    config = _config()
    _stop_after(agent, FACT, config)
    agent.invoke(None, config)
    assert agent.get_state(config).values[STATE_KEY]["recorded"] is True
    agent.invoke(_input("What is the weather?"), config)
    assert [r.text.splitlines()[0] for r in _turns(engine)] == [
        f"user: {FACT}",
        "user: What is the weather?",
    ]


def test_an_answer_regenerated_for_a_stopped_turn_replaces_it(engine: Oblivion) -> None:
    """Regenerating the stopped turn's answer from its checkpoint before the model call,
    after the next turn stored it, replaces that memory: one memory per turn."""
    agent = _agent(engine, ScriptedChatModel(["4711, noted.", "Sunny.", "Noted: 4711."]))
    config = _config()
    _stop_after(agent, FACT, config)
    agent.invoke(_input("What is the weather?"), config)
    (first, _) = _turns(engine)
    before_model = next(
        h
        for h in agent.get_state_history(config)
        if h.next == ("model",) and len(h.values["messages"]) == 1
    )
    agent.invoke(None, before_model.config)
    turns = _turns(engine)
    assert [r.text for r in turns] == [
        f"user: {FACT}\nassistant: Noted: 4711.",
        "user: What is the weather?\nassistant: Sunny.",
    ]
    assert turns[0].id == first.id


class Answer(BaseModel):
    """A structured answer with one text field."""

    text: str


def test_a_stopped_structured_response_turn_is_stored_with_the_next(engine: Oblivion) -> None:
    """With ``ToolStrategy`` the turn's answer is its structured response, as
    ``after_agent`` stores it."""
    calls = [
        AIMessage(content="", tool_calls=[{"name": "Answer", "args": {"text": text}, "id": i}])
        for i, text in (("1", "Code 4711 noted."), ("2", "Sunny."))
    ]
    agent = _agent(engine, ScriptedChatModel(calls), response_format=ToolStrategy(Answer))
    config = _config()
    _stop_after(agent, FACT, config)
    assert agent.get_state(config).next == (AFTER_MODEL,)
    agent.invoke(_input("What is the weather?"), config)
    assert [r.text for r in _turns(engine)] == [
        f"user: {FACT}\nassistant: Code 4711 noted.",
        "user: What is the weather?\nassistant: Sunny.",
    ]


@pytest.mark.parametrize("summarization_first", [True, False])
def test_a_stopped_turn_whose_message_was_summarised_away_is_stored(
    engine: Oblivion, summarization_first: bool
) -> None:
    """When ``SummarizationMiddleware`` summarises the stopped turn's user message away
    at the next turn, the turn is stored with the words the memo kept."""
    summarization = SummarizationMiddleware(
        model=FakeListChatModel(responses=["The user gave a locker code."]),
        trigger=("messages", 3),
        keep=("messages", 2),
    )
    memory = OblivionMemoryMiddleware(engine)
    agent = create_agent(
        EchoChatModel(),
        tools=[],
        middleware=[summarization, memory] if summarization_first else [memory, summarization],
        checkpointer=InMemorySaver(),
    )
    config = _config()
    _stop_after(agent, FACT, config)
    out = agent.invoke(_input("What is the weather?"), config)
    assert out["messages"][0].additional_kwargs.get("lc_source") == "summarization"
    assert [r.text for r in _turns(engine)] == [
        f"user: {FACT}\nassistant: Noted: {FACT}",
        "user: What is the weather?\nassistant: Noted: What is the weather?",
    ]


@tool
def lookup(code: str) -> str:
    """Check a locker code."""
    return f"{code} is valid"


@pytest.mark.parametrize("stop_at", ["OblivionMemoryMiddleware.before_model", "model"])
def test_a_turn_stopped_before_its_answer_is_not_stored(engine: Oblivion, stop_at: str) -> None:
    """A turn stopped before the model answered it (before the model call, or when the
    model asked for a tool) has no answer to store: it is left out, as before, and the
    next turn is stored once."""
    call = AIMessage(
        content="", tool_calls=[{"name": "lookup", "args": {"code": "4711"}, "id": "1"}]
    )
    agent = _agent(engine, ScriptedChatModel([call, "Sunny."]), tools=[lookup])
    config = _config()
    _stop_after(agent, FACT, config, stop_at)
    agent.invoke(_input("What is the weather?"), config)
    assert [r.text for r in _turns(engine)] == ["user: What is the weather?\nassistant: Sunny."]


@tool(return_direct=True)
def check_code(code: str) -> str:
    """Check a locker code and answer the user directly."""
    return f"Locker code {code} is valid."


@pytest.mark.parametrize("direct", [True, False])
def test_a_stopped_return_direct_tool_turn_is_stored_with_the_next(
    engine: Oblivion, direct: bool
) -> None:
    """A ``return_direct`` tool ends the run on its result, which ``after_agent`` stores
    as the turn's answer; a run stopped after the tool, before ``after_agent``, lost the
    turn. It is stored with the next one. The same stop after a tool that does not
    return directly is a turn stopped in its tool loop, before its answer: left out."""
    call = AIMessage(
        content="",
        tool_calls=[
            {"name": "check_code" if direct else "lookup", "args": {"code": "4711"}, "id": "1"}
        ],
    )
    tools = [check_code] if direct else [lookup]
    agent = _agent(engine, ScriptedChatModel([call, "Sunny."]), tools=tools)
    config = _config()
    _stop_after(agent, FACT, config, "tools")
    after = "OblivionMemoryMiddleware." + ("after_agent" if direct else "before_model")
    assert agent.get_state(config).next == (after,)
    agent.invoke(_input("What is the weather?"), config)
    stopped = [f"user: {FACT}\nassistant: Locker code 4711 is valid."] if direct else []
    assert [r.text for r in _turns(engine)] == [
        *stopped,
        "user: What is the weather?\nassistant: Sunny.",
    ]


def test_a_tool_name_two_agents_give_different_tools_is_not_taken_to_answer(
    engine: Oblivion,
) -> None:
    """A middleware shared by two agents: agent A's ``lookup`` returns directly, agent
    B's does not. B's run stopped after its tool, before the model answered, was stored
    as a turn answered by the tool's raw result. The name is ambiguous now: left out."""

    @tool("lookup", return_direct=True)
    def lookup_direct(code: str) -> str:
        """Check a locker code and answer directly."""
        return f"Locker code {code} is valid."

    @tool("lookup")
    def lookup_plain(code: str) -> str:
        """Look a code up (the model goes on after it)."""
        return f"raw db row for {code}: status=ok"

    def call() -> AIMessage:
        return AIMessage(
            content="", tool_calls=[{"name": "lookup", "args": {"code": "4711"}, "id": "1"}]
        )

    middleware = OblivionMemoryMiddleware(engine)
    a = create_agent(
        ScriptedChatModel([call(), "x"]),
        tools=[lookup_direct],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    b = create_agent(
        ScriptedChatModel([call(), "Sunny."]),
        tools=[lookup_plain],
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    a.invoke(_input("Is 4711 valid?"), _config("ta", "amy"))
    _stop_after(b, FACT, _config(), "tools")
    b.invoke(_input("What is the weather?"), _config())
    assert [r.text for r in _turns(engine)] == ["user: What is the weather?\nassistant: Sunny."]


def test_a_turn_another_path_stored_meanwhile_is_not_an_error(engine: Oblivion) -> None:
    """The stopped run's after_model goes on in a worker thread while the next message's
    before_model records the same turn: each found it absent, and the second write failed
    the user's run with "memory id 'turn-...' already exists". The turn is stored once,
    with the text of the write that came last."""
    from oblivion_langchain.middleware import _TurnMemory

    middleware = OblivionMemoryMiddleware(engine)
    first = _TurnMemory("sam", "user: hi\nassistant: hello", "small_talk", 0.2, {}, "turn-x")
    again = _TurnMemory("sam", "user: hi\nassistant: hello there", "small_talk", 0.2, {}, "turn-x")
    middleware._store_turns(first, raise_outage=True)
    middleware._store_turns(again, raise_outage=True)  # raised InvalidInputError
    assert [r.id for r in engine.records(namespace="sam")] == ["turn-x"]
    assert engine.get("turn-x", namespace="sam").text == again.text
    assert middleware.pending_turns == 0


def test_the_used_boost_is_given_once_by_the_path_that_stored_the_turn(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two paths recording one turn (each found it absent) both gave the answer's
    "used" boost, and a late record retried after an outage gave it at each try; the
    turn is now written first, and only the path that stored it gives the boost."""
    used = engine.remember("Your locker is in the gym basement.", namespace="sam").id
    middleware = OblivionMemoryMiddleware(engine)
    monkeypatch.setattr(middleware, "_regenerated", lambda *args: False)  # both see none
    memo = {
        "namespace": "sam",
        "memory": "turn-locker",
        "recalled": [(used, "Your locker is in the gym basement.")],
    }
    answer = "Your locker is in the gym basement, by the pool."
    for _ in range(2):
        middleware._record(memo, "Where is my locker?", answer)
    assert [e.kind for e in engine.history(used, namespace="sam")].count("used") == 1
    assert engine.count(namespace="sam") == 2
