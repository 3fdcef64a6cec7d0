"""``OblivionMemoryBlock``: long-term memory inside LlamaIndex's ``Memory``."""

from __future__ import annotations

import asyncio
import gc
import logging
import pickle
import threading
import time
from typing import Any

import numpy as np
import pytest
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, ToolCallBlock
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool

from oblivion_core import EmbeddingError, InvalidInputError, Oblivion
from oblivion_core.testing import HashEmbedder, ManualClock, word_count
from oblivion_core.testing import memory as new_engine
from oblivion_llamaindex import OblivionMemoryBlock

from ._helpers import AGENT_TURNS, DAY, HOUR, FlakyEmbedder, agent_turns, assistant, user


def block_for(engine: Oblivion, **fields: object) -> OblivionMemoryBlock:
    """A block on ``engine``."""
    return OblivionMemoryBlock(oblivion=engine, **fields)


# ---------------------------------------------------------------- writing
async def test_aput_remembers_user_turns_with_role_and_session(engine: Oblivion) -> None:
    """Flushed user messages become memories; assistant and text-less ones are skipped."""
    block = block_for(engine)
    image_only = user("")
    await block.aput(
        [user("My sister Anna lives in Porto."), assistant("Nice!"), image_only],
        from_short_term_memory=True,
        session_id="s1",
    )
    (record,) = engine.records()
    assert record.text == "My sister Anna lives in Porto."
    assert record.metadata == {"role": "user", "session_id": "s1"}


async def test_remember_roles_can_include_the_assistant(engine: Oblivion) -> None:
    """``remember_roles`` decides which roles are stored."""
    block = block_for(engine, remember_roles=["user", "assistant"])
    await block.aput([user("I like tea."), assistant("Tea it is.")])
    assert [r.metadata["role"] for r in engine.records()] == ["user", "assistant"]


async def test_category_and_importance_settings_apply(engine: Oblivion) -> None:
    """A fixed ``category``/``importance`` overrides inference for every stored message."""
    block = block_for(engine, category="fact", importance=0.3)
    await block.aput([user("hello")])
    record = engine.records()[0]
    assert (record.category, record.importance) == ("fact", 0.3)


async def test_block_refusing_short_term_flushes_stores_nothing(engine: Oblivion) -> None:
    """``accept_short_term_memory=False`` ignores what ``Memory`` flushes."""
    block = block_for(engine, accept_short_term_memory=False)
    await block.aput([user("My sister Anna lives in Porto.")], from_short_term_memory=True)
    assert engine.records() == []


async def test_refused_message_does_not_cost_the_rest_of_the_batch(
    engine: Oblivion, caplog: pytest.LogCaptureFixture
) -> None:
    """``Memory`` archives a flushed batch before the block sees it: a message the engine
    refuses is skipped with a warning saying why, the others are remembered."""
    block = block_for(engine)
    too_long = "lorem ipsum " * (engine.policy.max_text_chars // 12 + 1)
    memory = Memory.from_defaults(
        session_id="s",
        token_limit=100,
        token_flush_size=100_000,
        memory_blocks=[block],
        tokenizer_fn=str.split,
    )
    turns = [
        user("I am vegetarian."),
        assistant("Noted."),
        user("My sister Anna lives in Porto."),
        assistant("Nice."),
        user(too_long),
        assistant("That is long."),
        user("What should I cook?"),
    ]
    with caplog.at_level(logging.WARNING, logger="oblivion_llamaindex"):
        await memory.aput_messages(turns)
    assert [r.text for r in engine.records()] == [
        "I am vegetarian.",
        "My sister Anna lives in Porto.",
    ]
    assert "'lorem ipsum" in caplog.text and "max_text_chars" in caplog.text


async def test_a_failed_write_keeps_the_batch_for_the_next_put(clock: ManualClock) -> None:
    """``Memory`` archives a flushed batch before handing it over and never resends it:
    when the write fails (the embedder times out), the error is raised and the batch
    stays queued in the block; the next ``aput`` writes it first, once each, and
    ``flush`` writes what is still queued."""
    embedder = FlakyEmbedder()
    engine = new_engine(clock=clock, embedder=embedder)
    block = block_for(engine)
    embedder.fail_on = "My sister Anna lives in Porto."
    with pytest.raises(EmbeddingError, match="timed out"):
        await block.aput(
            [user("My sister Anna lives in Porto."), assistant("Nice."), user("I am vegan.")],
            from_short_term_memory=True,
            session_id="s1",
        )
    assert engine.records() == []
    await block.aput([user("What should I cook?")], session_id="s1")
    records = engine.records()
    assert [r.text for r in records] == [
        "My sister Anna lives in Porto.",
        "I am vegan.",
        "What should I cook?",
    ]
    assert all(r.metadata == {"role": "user", "session_id": "s1"} for r in records)
    embedder.fail_on = "Refunds take five days."
    with pytest.raises(EmbeddingError):
        await block.aput([user("Refunds take five days.")])
    assert block.flush() == [engine.records()[-1].id]
    assert block.flush() == []
    assert [r.text for r in engine.records()][-1] == "Refunds take five days."
    engine.close()


# ---------------------------------------------------------------- reading
async def test_aget_recalls_what_the_latest_message_is_about(engine: Oblivion) -> None:
    """The block lists the memories relevant to the latest message, best first."""
    block = block_for(engine)
    await block.aput([user("Refunds take five working days."), user("The cat is Miso.")])
    content = await block.aget([user("hello"), user("how many days do refunds take")])
    assert content.splitlines()[0] == "- Refunds take five working days."


@pytest.mark.parametrize("limit", [0, 3, 6, 10, 40])
async def test_aget_never_exceeds_token_limit(engine: Oblivion, limit: int) -> None:
    """The whole block fits ``token_limit`` tokens (engine counter)."""
    block = block_for(engine, token_limit=limit)
    await block.aput([user(f"refund fact number {i} is about refunds") for i in range(8)])
    content = await block.aget([user("tell me about refunds")])
    assert word_count(content) <= limit


async def test_aget_without_messages_or_memories_is_empty(engine: Oblivion) -> None:
    """No messages, or a namespace never written, gives an empty block."""
    block = block_for(engine, namespace="nobody")
    assert await block.aget([]) == ""
    assert await block.aget([user("anything")]) == ""


async def test_aget_skips_memories_still_in_the_conversation(engine: Oblivion) -> None:
    """A memory whose text is already among the messages is not repeated."""
    block = block_for(engine)
    await block.aput([user("Refunds take five days."), user("Refund desks open at nine.")])
    content = await block.aget([user("Refunds take five days."), user("refunds")])
    assert "five days" not in content and "nine" in content


async def test_messages_on_screen_do_not_take_the_places_of_older_memories(
    engine: Oblivion, clock: ManualClock
) -> None:
    """Memories repeating messages still given are not listed, and the recall asks for
    more so they leave ``k`` places to the others: an older memory ranked below them
    is listed."""
    engine.remember("The Porto apartment rent is 900 euros per month", id="rent")
    clock.advance(3600)
    block = block_for(engine, k=2, token_limit=1000, feedback=False)
    on_screen = [user(f"question {i} about the Porto apartment rent") for i in range(3)]
    await block.aput(on_screen)
    query = [*on_screen, user("remind me: Porto apartment rent")]
    ranked = engine.recall(query[-1].content or "", k=2, feedback=False)
    assert "rent" not in ranked.ids  # the turns on screen rank above it
    assert await block.aget(query) == "- The Porto apartment rent is 900 euros per month"


async def test_a_hidden_memory_brings_no_context_of_its_own(engine: Oblivion) -> None:
    """A memory left out as still on screen takes the neighbouring turn it brought as
    context (``why["context_for"]``; it took the places of better matches) out with it,
    so the block lists what a recall with the hidden texts filtered out ranks first."""
    scenic = [8, 6, 5, 7, 11, 0, 7, 0, 4, 11, 9, 9, 9, 6, 10]
    texts = [f"I like hiking trail {i} near the lake" + " scenic" * s for i, s in enumerate(scenic)]
    engine.remember_many(texts, ids=[f"t{i}" for i in range(15)])
    query = "which hiking trail near the lake do I like?"
    on_screen = [texts[5], texts[6], texts[7]]
    limit = 36
    plain = engine.recall(query, k=3, token_budget=limit, feedback=False, standing=())
    assert set(plain.ids) <= {"t5", "t6", "t7"}  # the recall's places go to those on screen
    unseen = engine.recall(
        query,
        k=3,
        token_budget=limit,
        feedback=False,
        standing=(),
        where_document={"$and": [{"$not_contains": t} for t in on_screen]},
    )
    block = block_for(engine, token_limit=limit, k=3, standing=(), feedback=False)
    content = await block.aget([*map(user, on_screen), user(query)])
    listed = [line[2:] for line in content.splitlines()]
    assert listed and listed == unseen.texts[: len(listed)]
    assert not set(listed) & set(on_screen)


async def test_a_memory_hidden_as_a_visible_message_gets_no_recall_boost(
    engine: Oblivion,
) -> None:
    """Only the memories listed are boosted: one left out because its text is still
    among the messages gets no recall boost, and a listed one gets exactly the boost
    a recall with feedback would have given it (once ``flush`` says the read is over)."""
    engine.remember("Refunds take five days.", id="five")
    engine.remember("Refund desks open at nine.", id="nine")
    twin = new_engine(clock=ManualClock(0.0))
    twin.remember("Refunds take five days.", id="five")
    twin.remember("Refund desks open at nine.", id="nine")
    block = block_for(engine)
    content = await block.aget([user("Refunds take five days."), user("refunds")], session_id="s")
    assert "five days" not in content and "nine" in content
    block.flush()  # this task's read is over: its boost is given
    assert [e.memory_id for e in engine.history() if e.kind == "recall"] == ["nine"]
    twin.recall("refunds", token_budget=block.token_limit)
    assert engine.get("nine").activation == pytest.approx(twin.get("nine").activation)
    assert engine.get("nine").access_count == twin.get("nine").access_count == 1
    twin.close()


async def test_context_window_widens_the_query(engine: Oblivion) -> None:
    """``retrieval_context_window`` folds earlier messages into the query."""
    await block_for(engine).aput(
        [user("The office cat is called Miso."), user("Then the refund arrives.")]
    )
    messages = [user("tell me about the office cat"), user("and then?")]
    narrow = block_for(engine, retrieval_context_window=1, k=1, feedback=False)
    wide = block_for(engine, retrieval_context_window=2, k=1, feedback=False)
    assert await narrow.aget(messages) == "- Then the refund arrives."
    assert await wide.aget(messages) == "- The office cat is called Miso."


async def test_answer_echoing_a_memory_gives_the_used_boost_once(engine: Oblivion) -> None:
    """When the next ``aget`` sees an answer that used a shown memory, it is boosted once."""
    block = block_for(engine, k=2)
    await block.aput([user("Refunds take five working days."), user("Refund forms are blue.")])
    five = next(r.id for r in engine.records() if "five" in r.text)
    question = user("how long do refunds take")
    shown = await block.aget([question], session_id="s")
    assert "five" in shown and "blue" in shown
    answer = assistant("Refunds take five working days, as you said.")
    await block.aget([question, answer, user("thanks")], session_id="s")
    await block.aget([question, answer, user("thanks")], session_id="s")
    used = [e.memory_id for e in engine.history() if e.kind == "used"]
    assert used == [five]


async def test_only_the_newest_sessions_are_held(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A block kept what it knew of every session it served (a ``Memory`` per
    conversation): memory grew with each conversation, about 2 KB each."""
    monkeypatch.setattr("oblivion_llamaindex.memory_block._SESSIONS_KEPT", 3)
    block = block_for(engine)
    await block.aput([user("Refunds take five working days.")])
    question, answer = user("how long do refunds take"), assistant("Five working days.")
    for n in range(8):
        await block.aget([question], session_id=f"s{n}")
        await block.aget([question, answer, user("thanks")], session_id=f"s{n}")
    held = block.__pydantic_private__
    assert list(held["_turns"]) == ["s5", "s6", "s7"]
    assert set(held["_answered"]) <= {"s5", "s6", "s7"} and set(held["_shown"]) <= {
        "s5",
        "s6",
        "s7",
    }
    # a kept session read again in the same turn boosts nothing more
    await block.aget([question, answer, user("thanks")], session_id="s7")
    block.flush()
    # every session's two turns got their recall boost (a session let go gave its
    # pending one first), and its answer its used boost
    assert _recalls(engine, engine.records()[0].id) == 16
    assert sum(e.kind == "used" for e in engine.history()) == 8


async def test_feedback_is_kept_per_session(engine: Oblivion) -> None:
    """One session's answer is never matched against another session's memories."""
    block = block_for(engine)
    await block.aput([user("Refunds take five working days.")])
    await block.aget([user("refunds?")], session_id="a")
    answer = assistant("Refunds take five working days.")
    await block.aget([user("refunds?"), answer, user("ok")], session_id="b")
    assert not [e for e in engine.history() if e.kind == "used"]


async def test_repeated_gets_in_one_turn_boost_once(engine: Oblivion) -> None:
    """Agents call ``Memory.aget`` several times per turn: the turn boosts its memories
    once; a new turn, even repeating the question, boosts again."""
    engine.remember("Alice's sister Anna lives in Porto.", id="anna")
    block = block_for(engine)
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block])
    question = user("Where does Anna live?")
    await memory.aput(question)
    for _ in range(3):
        assert "Porto" in ((await memory.aget())[0].content or "")
    assert engine.get("anna").access_count == 1
    await memory.aput(assistant("Let me check."))
    await memory.aput(question)
    await memory.aget()
    await memory.aget()
    assert engine.get("anna").access_count == 2
    await memory.aput(assistant("I do not know."))
    await memory.aput(user("Which city is Anna in?"))
    await memory.aget()
    block.flush()  # this task's reads are over: their boosts are given
    assert engine.get("anna").access_count == 3


def weather(city: str = "Porto") -> str:
    """Weather in a city."""
    return "sunny"


async def test_agent_turn_with_tool_calls_boosts_once(engine: Oblivion) -> None:
    """A ``FunctionAgent`` turn with a tool call gets the block three times (the agent's
    ``aget(input=...)`` after the tool call appends a copy of the user message) and
    boosts once; the user asking the same again is a new turn, boosted again."""
    block = block_for(engine, namespace="alice", token_limit=200)
    await block.aput([user("Anna lives in Porto by the river")])
    anna = engine.records(namespace="alice")[0].id
    memory = Memory.from_defaults(session_id="alice", token_limit=4000, memory_blocks=[block])
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(weather)], llm=MockFunctionCallingLLM())
    question = "Where does Anna live and what is the weather there?"

    def boosts() -> int:
        return sum(e.kind == "recall" for e in engine.history(anna, namespace="alice"))

    await agent.run(user_msg=question, memory=memory)
    assert boosts() == 1
    await agent.run(user_msg=question, memory=memory)
    assert boosts() == 2
    assert engine.get(anna, namespace="alice").access_count == 2


async def test_a_copy_of_the_user_message_after_tool_calls_is_the_same_turn(
    engine: Oblivion,
) -> None:
    """The user message repeated after tool calls and their results (a hand-off between
    agents) is the turn's input again; repeated after an answer it is a new turn."""
    engine.remember("Alice's sister Anna lives in Porto.", id="anna")
    block = block_for(engine)
    earlier = [user("hi"), assistant("Hello!")]
    question = user("Where does Anna live?")
    call = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="1", tool_name="handoff", tool_kwargs={})],
    )
    result = ChatMessage(role="tool", content="Handed off.")
    answer = assistant("Anna lives in Porto.")
    views = [
        [*earlier, question],
        [*earlier, question, call, result, question],
        [*earlier, question, call, result, answer],
    ]

    def boosts() -> int:
        return sum(e.kind == "recall" for e in engine.history("anna"))

    for messages in views:
        assert "Porto" in await block.aget(messages, session_id="s")
    assert boosts() == 1
    await block.aget([*earlier, question, call, result, answer, question], session_id="s")
    block.flush()  # this task's reads are over: their boosts are given
    assert boosts() == 2


async def test_a_turn_whose_earlier_messages_memory_flushes_mid_turn_boosts_once(
    engine: Oblivion,
) -> None:
    """``Memory`` may flush the previous turn out of its queue in the middle of a turn
    (a long tool result): the views of the turn that follow are still that turn, while
    the user asking the same again after an answer is a new one."""
    engine.remember("Alice's sister Anna lives in Porto.", id="anna")
    block = block_for(engine)
    question = user("Is Anna in Porto?")
    call = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_call_id="1", tool_name="lookup", tool_kwargs={})],
    )
    result = ChatMessage(role="tool", content="river report " * 25)
    answer = assistant("Yes, Anna lives in Porto.")
    earlier = [user("hello, where does Anna live?"), assistant("In Porto.")]
    views = [
        [*earlier, question],
        [question, call, result, question],  # the earlier turn was flushed
        [question, call, result, answer],
        [result, answer],
    ]

    def boosts() -> int:
        return sum(e.kind == "recall" for e in engine.history("anna"))

    for messages in views:
        assert "Porto" in await block.aget(messages, session_id="s")
    assert boosts() == 1
    await block.aget([question, call, result, answer, question], session_id="s")
    block.flush()  # this task's reads are over: their boosts are given
    assert boosts() == 2
    await block.aget([answer, question], session_id="s")  # flushed again: same turn
    block.flush()
    assert boosts() == 2


async def test_standing_instructions_are_shown_whatever_the_query(engine: Oblivion) -> None:
    """An instruction comes first in a block about something else (by default);
    standing=() shows what the messages recall only; a bad value is refused."""
    rule = engine.remember("Always give distances in kilometres.", namespace="ana")
    assert rule.category == "instruction"
    for text in ["Ana lives in Porto.", "Ana works as a nurse.", "Ana has two cats."]:
        engine.remember(text, namespace="ana")
    content = await block_for(engine, namespace="ana", k=2).aget([user("Tell me about Ana")])
    assert content.splitlines()[0] == "- Always give distances in kilometres."
    block = block_for(engine, namespace="ana", k=2, standing=())
    content = await block.aget([user("Tell me about Ana")])
    assert "kilometres" not in content and content.count("Ana") == 2
    with pytest.raises(ValueError, match="standing must be a category name"):
        block_for(engine, standing=3)


async def test_messages_without_text_still_get_the_standing_instructions(
    engine: Oblivion,
) -> None:
    """A conversation of images only gets the standing instructions alone, and
    standing=() an empty block."""
    engine.remember("Always give distances in kilometres.", namespace="ana")
    engine.remember("Ana lives in Porto.", namespace="ana")
    image = ChatMessage(role="user", blocks=[ImageBlock(url="https://example.com/map.png")])
    content = await block_for(engine, namespace="ana", k=2).aget([image])
    assert content.splitlines() == ["- Always give distances in kilometres."]
    assert await block_for(engine, namespace="ana", k=2, standing=()).aget([image]) == ""


@pytest.mark.parametrize("call_tool", [False, True])
async def test_an_agent_boosts_exactly_what_its_prompts_list(
    engine: Oblivion, call_tool: bool
) -> None:
    """Each agent turn boosts the memories its prompts listed, once, and no other: the
    read after the answer (``parse_agent_output``) reaches no LLM, and a tool-call round
    boosts nothing twice."""
    block = block_for(engine, namespace="u", token_limit=200)
    memory = Memory.from_defaults(
        session_id="s",
        token_limit=80,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
        memory_blocks=[block],
    )
    turns = await agent_turns(engine, memory, AGENT_TURNS, "u", call_tool=call_tool)
    assert sum(len(listed) for _, listed in turns) >= 3
    for got, listed in turns:
        assert got == dict.fromkeys(listed, 1)


async def test_each_answer_echoing_a_memory_gives_the_used_boost(engine: Oblivion) -> None:
    """Answers with the same text to different questions are different answers: each one
    echoing a memory the block listed gives it the "used" boost."""
    engine.remember("My cat is called Whiskers.", id="cat")
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block_for(engine)])
    llm = MockLLM(messages_to_prompt=lambda messages: "Your cat is called Whiskers.")
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    questions = ["What is my cat called?", "Sorry, what was it again?", "Its name?", "Bye."]
    for question in questions:
        await chat.achat(question)
    assert [e.memory_id for e in engine.history() if e.kind == "used"] == ["cat"] * 3


def _recalls(engine: Oblivion, memory_id: str) -> int:
    """How many recall boosts ``memory_id`` got."""
    return sum(e.kind == "recall" for e in engine.history(memory_id))


async def test_an_agents_new_conversation_opening_as_the_last_is_a_new_turn(
    engine: Oblivion,
) -> None:
    """After ``Memory.reset()``, the opening message of the conversation before is a new
    turn, boosted again: the agent's read after its answer saw that turn go on, and a
    view with fewer messages after the user's is not that turn."""
    engine.remember("My cat is called Whiskers.", id="cat")
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block_for(engine)])

    def respond(messages: Any, **kwargs: Any) -> ChatMessage:
        return assistant("Noted.")

    agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM(response_generator=respond))
    for day in range(3):
        await agent.run(user_msg="Hi, what's my cat called?", memory=memory)
        assert _recalls(engine, "cat") == day + 1
        await memory.areset()


async def test_a_chats_new_conversation_opening_as_the_last_is_a_new_turn(
    engine: Oblivion,
) -> None:
    """After ``Memory.reset()``, a chat engine's conversation opening with the message
    of the one before is a new turn: a later view of the session showed that turn's
    answer and the next question."""
    engine.remember("My cat is called Whiskers.", id="cat")
    block = block_for(engine)
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block])
    llm = MockLLM(messages_to_prompt=lambda messages: "Noted.")
    chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for _ in range(3):
        before = _recalls(engine, "cat")
        await chat.achat("Hi, what's my cat called?")
        await chat.achat("And how old is my cat?")
        block.flush()  # this task's reads are over: their boosts are given
        assert _recalls(engine, "cat") - before == 2
        await memory.areset()


async def test_a_reads_boost_is_given_when_its_task_ends(engine: Oblivion) -> None:
    """A ``Memory.aget`` run as a task of its own (as the sync ``Memory.get`` and agent
    steps run it) boosts what it delivered when the task ends, in a worker thread that
    waits while another read holds the block."""
    engine.remember("Alice's sister Anna lives in Porto.", id="anna")
    block = block_for(engine)
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block])
    await memory.aput(user("Where does Anna live?"))
    await asyncio.create_task(memory.aget())
    assert await _boosted(engine, "anna", 1) == 1
    await memory.aput(assistant("In Porto."))
    await memory.aput(user("Is Anna near the river in Porto?"))
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with block._lock:
            held.set()
            release.wait()

    holder = threading.Thread(target=hold, daemon=True)

    async def read_then_hold() -> None:
        await memory.aget()
        holder.start()  # another thread holds the block as the task ends
        held.wait()

    try:
        await asyncio.create_task(read_then_hold())
        await asyncio.sleep(0.05)  # the worker tries meanwhile
        assert _recalls(engine, "anna") == 1  # the boost waits for the lock, off the loop
    finally:
        release.set()
        if holder.is_alive():
            holder.join()
    assert await _boosted(engine, "anna", 2) == 2


def test_the_sync_memory_api_boosts_what_each_get_returned(engine: Oblivion) -> None:
    """``Memory.get`` (sync) boosts what it returned once, as its call ends."""
    engine.remember("Alice's sister Anna lives in Porto.", id="anna")
    # earlier tests' Memory left SQLite connections open: closed now, outside any event
    # loop, not by a collection inside get()'s loop that would close before they do
    gc.collect()
    block = block_for(engine)
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block])
    memory.put(user("Where does Anna live?"))
    assert "Porto" in (memory.get()[0].content or "")
    assert _wait_for_recalls(engine, "anna", 1) == 1
    memory.get()
    block.flush()
    assert _recalls(engine, "anna") == 1


def _wait_for_recalls(engine: Oblivion, memory_id: str, count: int) -> int:
    """``memory_id``'s recall boosts once they reach ``count`` (a worker thread gives
    those of a task that ended), or after five seconds."""
    for _ in range(500):
        if _recalls(engine, memory_id) >= count:
            break
        time.sleep(0.01)
    return _recalls(engine, memory_id)


async def _boosted(engine: Oblivion, memory_id: str, count: int) -> int:
    """:func:`_wait_for_recalls` leaving the event loop free (its tasks' ends start the
    worker thread)."""
    for _ in range(500):
        if _recalls(engine, memory_id) >= count:
            break
        await asyncio.sleep(0.01)
    return _recalls(engine, memory_id)


# ---------------------------------------------------------------- truncation
@pytest.fixture
def ranked(engine: Oblivion, clock: ManualClock) -> Oblivion:
    """Three refund memories of different activation (``weak`` has decayed most)."""
    engine.remember("refund rule weak one", id="weak", category="task", importance=0.1)
    engine.remember("refund rule middle one", id="mid", category="fact", importance=0.5)
    engine.remember("refund rule strong one", id="strong", category="instruction")
    clock.advance(2 * DAY)
    return engine


async def test_atruncate_drops_lowest_activation_first(ranked: Oblivion) -> None:
    """Truncation removes the least active memory, not the last line."""
    # no standing instruction shown first: the order is the query's alone
    block = block_for(ranked, feedback=False, standing=())
    content = await block.aget([user("which refund rule is the weak one")])
    lines = content.splitlines()
    assert lines[0] == "- refund rule weak one"  # the most relevant is ranked first...
    shorter = await block.atruncate(content, 1)
    assert shorter is not None
    assert "weak" not in shorter  # ...but it is the least active, so it goes first
    assert shorter.splitlines() == [line for line in lines if "weak" not in line]
    assert word_count(shorter) <= word_count(content) - 1


async def test_atruncate_can_empty_the_block(ranked: Oblivion) -> None:
    """Asking for more tokens than the block holds returns ``None``."""
    block = block_for(ranked)
    content = await block.aget([user("refund rule")])
    assert await block.atruncate(content, word_count(content)) is None


async def test_atruncate_zero_keeps_content(ranked: Oblivion) -> None:
    """Truncating by zero tokens changes nothing."""
    block = block_for(ranked)
    content = await block.aget([user("refund rule")])
    assert await block.atruncate(content, 0) == content


async def test_atruncate_of_foreign_content_drops_it_whole(engine: Oblivion) -> None:
    """Content this block did not render is removed whole, like the base class does."""
    assert await block_for(engine).atruncate("- something else", 1) is None


@pytest.mark.parametrize("bad", [-1, 1.5, None, "3"])
async def test_atruncate_refuses_bad_token_counts(ranked: Oblivion, bad: object) -> None:
    """A negative or non-integer token count is a clear error and the content is kept."""
    block = block_for(ranked)
    content = await block.aget([user("refund rule")])
    with pytest.raises(InvalidInputError, match="tokens_to_truncate"):
        await block.atruncate(content, bad)  # type: ignore[arg-type]
    assert block.truncate(content, 0) == content


async def test_memory_truncates_the_block_by_activation(ranked: Oblivion) -> None:
    """When ``Memory`` is over its limit it shrinks this block, least active memory first."""
    block = block_for(ranked, feedback=False, token_limit=100)
    memory = Memory.from_defaults(
        session_id="s", token_limit=17, memory_blocks=[block], tokenizer_fn=str.split
    )
    await memory.aput(user("refund rule weak one please"))
    messages = await memory.aget()
    system = messages[0].content or ""
    assert "strong" in system and "weak" not in system


async def test_memories_truncation_cuts_are_not_boosted(
    engine: Oblivion, clock: ManualClock
) -> None:
    """A memory ``Memory`` truncates away never reaches the LLM: it gets no recall
    boost, and an answer echoing it no "used" boost; those delivered get theirs."""
    engine.remember("Anna's cat Miso sleeps all day.", id="weak", category="task", importance=0.1)
    engine.remember("Anna's brother Bruno plays the cello.", id="mid", category="fact")
    engine.remember("Anna lives in Porto by the river.", id="strong", category="preference")
    clock.advance(2 * DAY)
    block = block_for(engine, token_limit=100, standing=())
    memory = Memory.from_defaults(
        session_id="s",
        token_limit=22,
        chat_history_token_ratio=0.9,
        memory_blocks=[block],
        tokenizer_fn=str.split,
    )
    prompts: list[str] = []

    def answer(messages: Any) -> str:
        prompts.append("\n".join(m.content or "" for m in messages))
        return "Miso sleeps all day, and Anna lives in Porto by the river."

    chat = SimpleChatEngine.from_defaults(llm=MockLLM(messages_to_prompt=answer), memory=memory)
    await chat.achat("Tell me about Anna.")
    assert "Bruno" in prompts[0] and "Miso" not in prompts[0]  # truncated: least active
    block.flush()  # this task's reads are over: their boosts are given
    assert {m: _recalls(engine, m) for m in ("weak", "mid", "strong")} == {
        "weak": 0,
        "mid": 1,
        "strong": 1,
    }
    await chat.achat("Thanks.")  # the block sees the answer
    assert [e.memory_id for e in engine.history() if e.kind == "used"] == ["strong"]


async def test_atruncate_cuts_no_more_than_asked_with_a_fractional_counter(
    clock: ManualClock,
) -> None:
    """With a counter returning fractions, the content is counted rounded up, as the
    engine counts it (``count_tokens``): cutting 5 of its 14 tokens (13.5) keeps the two
    most active memories (9 tokens), rather than cutting to 8 and keeping one."""
    engine = new_engine(clock=clock, token_counter=lambda text: len(text.split()) * 0.9)
    engine.remember("refund rule weak one", id="weak", category="task", importance=0.1)
    engine.remember("refund rule middle one", id="mid", category="fact", importance=0.5)
    engine.remember("refund rule strong one", id="strong", category="instruction")
    clock.advance(2 * DAY)
    block = block_for(engine, feedback=False, standing=())
    content = await block.aget([user("which refund rule is the weak one")])
    assert len(content.splitlines()) == 3
    shorter = await block.atruncate(content, 5)
    assert shorter == "- refund rule middle one\n- refund rule strong one"
    engine.close()


async def test_atruncate_leaves_the_event_loop_free_while_it_waits(clock: ManualClock) -> None:
    """``atruncate`` waits for the block's lock (held by another session's recall for as
    long as its query takes to embed) in a worker thread: other tasks on the loop run
    meanwhile, here the one that lets that recall finish."""
    entered, release = threading.Event(), threading.Event()

    class GatedEmbedder(HashEmbedder):
        gated = False

        def embed_query(self, text: str) -> np.ndarray:
            if self.gated:
                entered.set()
                release.wait(timeout=10)  # only if the loop is blocked (the defect)
            return super().embed_query(text)

    embedder = GatedEmbedder()
    engine = new_engine(clock=clock, embedder=embedder)
    engine.remember_many([f"the user likes board game {i}" for i in range(5)])
    block = block_for(engine, k=5)
    content = await block.aget([user("which board games do I like?")], session_id="A")
    assert content
    embedder.gated = True
    other = asyncio.create_task(block.aget([user("games again?")], session_id="B"))
    await asyncio.to_thread(entered.wait, 10)  # B's recall holds the lock, embedding
    assert entered.is_set()
    order: list[str] = []

    async def truncate() -> None:
        await block.atruncate(content, 1)
        order.append("truncated")

    async def heartbeat() -> None:
        order.append("heartbeat")
        release.set()

    await asyncio.gather(truncate(), heartbeat())
    await other
    assert order == ["heartbeat", "truncated"]
    engine.close()


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda b: b.aput(None), "aput"),
        (lambda b: b.aput(None, session_id="s"), "aput"),
        (lambda b: b.aput([user("hi"), "hello"], session_id="s"), "aput"),
        (lambda b: b.aput(user("hi")), "aput"),
        (lambda b: b.aget(["not a ChatMessage"]), "aget"),
        (lambda b: b.aget("hello"), "aget"),
    ],
)
async def test_hooks_refuse_what_is_not_a_list_of_messages(
    engine: Oblivion, call: Any, name: str
) -> None:
    """``aput``/``aget`` of something that is not a list of ``ChatMessage`` is an
    ``InvalidInputError`` saying what to pass (not a ``TypeError`` or an
    ``AttributeError``), and nothing is stored."""
    block = block_for(engine)
    with pytest.raises(InvalidInputError, match=rf"{name}\(\) takes a list of ChatMessage"):
        await call(block)
    with pytest.raises(InvalidInputError, match="takes a list of ChatMessage"):
        block.remember_messages(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="takes a list of ChatMessage"):
        block.recall_block([3])  # type: ignore[list-item]
    assert engine.count() == 0


# ---------------------------------------------------------------- settings
@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("token_limit", -1),
        ("token_limit", None),
        ("token_limit", 1.5),
        ("retrieval_context_window", 0),
        ("k", 0),
        ("importance", -0.1),
        ("remember_roles", [""]),
        ("remember_roles", 1),
        ("remember_roles", b"user"),
        ("namespace", "  "),
    ],
)
def test_bad_settings_are_refused(engine: Oblivion, field: str, value: object) -> None:
    """Bad settings fail at construction naming the setting."""
    with pytest.raises(ValueError, match=field if field != "remember_roles" else "roles"):
        block_for(engine, **{field: value})


@pytest.mark.parametrize("value", [-1, 1.5, "10", None])
def test_a_bad_token_limit_is_not_told_none_would_do(engine: Oblivion, value: object) -> None:
    """The block's limit cannot be None, so its error does not offer it."""
    with pytest.raises(ValueError, match="token_limit") as caught:
        block_for(engine, token_limit=value)
    assert "or None" not in str(caught.value)


def test_negative_limit_on_assignment_is_refused(engine: Oblivion) -> None:
    """Setting a negative token limit later fails and keeps the old one."""
    block = block_for(engine, token_limit=50)
    with pytest.raises(ValueError, match="token_limit"):
        block.token_limit = -1
    assert block.token_limit == 50


async def test_pickling_a_memory_with_the_block_leaves_the_original_working(
    engine: Oblivion,
) -> None:
    """The block pickles like the package's other adapters (without its engine), so
    pickling a ``Memory`` neither drops the block from the copy nor breaks the original."""
    block = block_for(engine, namespace="alice", token_limit=50)
    block.remember_messages([user("Refunds take five days.")])
    assert block.recall_block([user("refunds")], session_id="s") == "- Refunds take five days."
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block])
    copy = pickle.loads(pickle.dumps(memory))
    assert memory.memory_blocks == [block]
    await memory.aput(user("how long do refunds take"))
    assert "five days" in ((await memory.aget())[0].content or "")
    (copied,) = copy.memory_blocks
    assert (copied.namespace, copied.token_limit) == ("alice", 50)
    with pytest.raises(InvalidInputError, match="deserialised"):
        copied.recall_block([user("refunds")])


def test_sync_helpers_mirror_the_async_hooks(engine: Oblivion) -> None:
    """``remember_messages``/``recall_block``/``truncate`` are the sync twins of the hooks."""
    block = block_for(engine)
    ids = block.remember_messages([user("Refunds take five days."), assistant("ok")])
    assert len(ids) == 1
    content = block.recall_block([user("refunds")])
    assert content == "- Refunds take five days."
    assert block.truncate(content, 5) is None


def _word_memory(block: OblivionMemoryBlock, *, token_limit: int, ratio: float) -> Memory:
    """One session's ``Memory`` over ``block``, counting words, flushing 5 at a time."""
    return Memory.from_defaults(
        session_id="s",
        token_limit=token_limit,
        chat_history_token_ratio=ratio,
        token_flush_size=5,
        memory_blocks=[block],
        tokenizer_fn=str.split,
    )


def test_sync_memory_api_works_with_the_block(engine: Oblivion) -> None:
    """``Memory``'s sync ``put``/``get`` drive the async hooks correctly."""
    memory = _word_memory(block_for(engine, token_limit=20), token_limit=60, ratio=0.2)
    for text in ["Refunds take five days.", "The cat is Miso.", "I like tea.", "refunds again?"]:
        memory.put(user(text))
        memory.put(assistant("Noted."))
    assert engine.records()[0].text == "Refunds take five days."
    assert "Refunds take five days." in (memory.get()[0].content or "")


def test_sync_memory_api_raises_an_outage_as_it_is(clock: ManualClock) -> None:
    """With the embedder down, ``Memory``'s sync ``put`` and ``get`` raise the
    ``EmbeddingError`` itself, and the flushed messages wait in the block until it is back."""
    # LlamaIndex runs them through asyncio_run, which replaces a RuntimeError raised
    # inside with "Detected nested async": the engine's outage errors are OSErrors.
    embedder = FlakyEmbedder()
    engine = new_engine(clock=clock, embedder=embedder)
    engine.remember("The cat is called Miso.")
    block = block_for(engine, token_limit=20)
    memory = _word_memory(block, token_limit=20, ratio=0.5)
    embedder.down = True
    with pytest.raises(EmbeddingError, match="timed out"):
        for text in ("Refunds take five working days.", "I like green tea."):
            memory.put(user(text))
            memory.put(assistant("Noted."))
    with pytest.raises(EmbeddingError, match="timed out"):
        memory.get()
    assert [r.text for r in engine.records()] == ["The cat is called Miso."]
    embedder.down = False
    assert len(block.flush()) == 1
    assert [r.text for r in engine.records()] == [
        "The cat is called Miso.",
        "Refunds take five working days.",
    ]
    engine.close()


# ---------------------------------------------------------------- real stack
@pytest.mark.integration
async def test_real_chat_through_memory_block(real_engine: Oblivion, clock: ManualClock) -> None:
    """A chat engine over ``Memory`` + the block recalls an old instruction within its limit
    (async, in the test's event loop: the sync calls left ``Memory``'s aiosqlite threads
    writing to closed loops, an intermittent warning)."""
    block = OblivionMemoryBlock(oblivion=real_engine, token_limit=60)
    memory = Memory.from_defaults(
        session_id="alice",
        token_limit=200,
        chat_history_token_ratio=0.4,
        token_flush_size=20,
        memory_blocks=[block],
    )
    seen: list[list[object]] = []

    def prompt(messages: list[object]) -> str:
        seen.append(list(messages))
        return "Noted."

    chat = SimpleChatEngine.from_defaults(llm=MockLLM(messages_to_prompt=prompt), memory=memory)
    turns = [
        "From now on, always answer in British English spelling.",
        "Hi there! Lovely weather today.",
        "My sister Anna lives in Porto.",
        "haha nice",
        "I work as a nurse at the city hospital.",
        "thanks!",
        "My cat is called Miso.",
        "How are you today?",
        "I need to renew my passport before June.",
        "ok cool",
    ]
    for turn in turns * 2:
        clock.advance(2 * HOUR)
        await chat.achat(turn)
    clock.advance(DAY)
    await chat.achat("Which spelling should you use in your answers, color or colour?")
    counter = real_engine.token_counter
    shown = 0
    for messages in seen:
        for m in messages:
            text = m.content or ""
            if m.role.value == "system" and "<long_term_memory>" in text:
                inner = text.split("<long_term_memory>")[1].split("</long_term_memory>")[0]
                assert counter(inner.strip()) <= 60
                shown += 1
    assert shown > 0
    final_system = seen[-1][0].content or ""
    assert "always answer in British English spelling" in final_system
