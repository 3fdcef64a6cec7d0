"""OblivionMemoryMiddleware: recall before the model, record and boost after it."""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from _lc_helpers import EchoChatModel, ScriptedChatModel, memory_block
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain.agents.structured_output import ToolStrategy
from langchain.tools import tool
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel

from oblivion_core import InvalidInputError, Oblivion, Policy
from oblivion_core.testing import HashEmbedder, ManualClock, memory, word_count
from oblivion_langchain import OblivionMemoryMiddleware
from oblivion_langchain import middleware as mw
from oblivion_langchain._convert import latest_human
from oblivion_langchain.middleware import DEFAULT_HEADER, SEPARATOR, STATE_KEY

USER = {"configurable": {"user_id": "sam"}}


def _agent(
    engine: Oblivion,
    replies: list[Any],
    *,
    system_prompt: str | None = "You are a travel assistant.",
    tools: list[Any] | None = None,
    **options: Any,
) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(replies)
    middleware = OblivionMemoryMiddleware(engine, **options)
    agent = create_agent(
        model,
        tools=tools or [],
        system_prompt=system_prompt,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    return agent, model


def _ask(agent: Any, text: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
    config = {"configurable": {"thread_id": "t", **(config or USER)["configurable"]}}
    return agent.invoke({"messages": [{"role": "user", "content": text}]}, config)


def _events(engine: Oblivion, memory_id: str, namespace: str = "sam") -> list[str]:
    return [e.kind for e in engine.history(memory_id, namespace=namespace)]


@pytest.fixture
def seeded(engine: Oblivion) -> Oblivion:
    """The fast engine with two memories in Sam's namespace."""
    engine.remember("Always give distances in kilometres, never miles.", namespace="sam")
    engine.remember("Sam's sister Ana lives in Porto.", namespace="sam")
    return engine


# ==================================================================== injection
def test_memories_are_injected_as_one_system_message(seeded: Oblivion) -> None:
    """The recalled block is appended to the system prompt as its own text block."""
    agent, model = _agent(seeded, ["About 313 km."])
    result = _ask(agent, "How far is Porto from Lisbon in miles?")
    sent = model.seen[0]
    assert isinstance(sent[0], SystemMessage)
    assert sum(isinstance(m, SystemMessage) for m in sent) == 1
    block = memory_block(sent)
    assert block is not None and block.startswith(SEPARATOR + DEFAULT_HEADER)
    assert "- Always give distances in kilometres, never miles." in block
    # The agent's own history is untouched: no memory text in the state's messages.
    assert not any(isinstance(m, SystemMessage) for m in result["messages"])


def test_injection_keeps_the_system_message_fields(seeded: Oblivion) -> None:
    """The agent's SystemMessage keeps its name, id, additional_kwargs (e.g. provider
    cache options) and response_metadata when the memory block is added to it."""
    prompt = SystemMessage(
        content="You are a travel assistant.",
        name="planner",
        id="sys-1",
        additional_kwargs={"cache": "keep-me"},
        response_metadata={"origin": "prompt-library"},
    )
    agent, model = _agent(seeded, ["Porto."], system_prompt=prompt)  # type: ignore[arg-type]
    _ask(agent, "Where does Ana live?")
    sent = model.seen[0][0]
    assert memory_block(model.seen[0]) is not None
    assert (sent.name, sent.id, sent.additional_kwargs, sent.response_metadata) == (
        "planner",
        "sys-1",
        {"cache": "keep-me"},
        {"origin": "prompt-library"},
    )
    assert sent.content.startswith("You are a travel assistant." + SEPARATOR + DEFAULT_HEADER)


def test_a_string_system_prompt_stays_one_string(seeded: Oblivion) -> None:
    """A plain-string prompt gets the block after a blank line and stays a string (it
    used to become a list of content blocks); the next call starts from the prompt again."""
    agent, model = _agent(seeded, ["Porto.", "Yes."])
    _ask(agent, "Where does Ana live?")
    _ask(agent, "Does Ana live in Porto?")
    for call in model.seen:
        content = call[0].content
        assert isinstance(content, str)
        prompt, sep, block = content.partition(SEPARATOR)
        assert (prompt, sep) == ("You are a travel assistant.", SEPARATOR)
        assert block.startswith(DEFAULT_HEADER) and block.count(DEFAULT_HEADER) == 1


def test_a_content_block_prompt_reaches_the_model_unchanged(seeded: Oblivion) -> None:
    """A prompt of content blocks (provider-native ones included) gets one more text
    block; its own blocks reach the model exactly as configured, on every call (they
    used to be rebuilt from the normalised content_blocks view: a cachePoint became
    non_standard, an image_url got a new random id each call)."""
    blocks: list[Any] = [
        {"type": "text", "text": "You are a travel assistant."},
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "House rules"},
        },
        {"type": "image_url", "image_url": {"url": "https://example.com/map.png"}},
        {"cachePoint": {"type": "default"}},
        "a bare string block",
    ]
    prompt = SystemMessage(content=[dict(b) if isinstance(b, dict) else b for b in blocks])
    agent, model = _agent(
        seeded,
        ["Porto.", "Yes."],
        system_prompt=prompt,  # type: ignore[arg-type]
    )
    _ask(agent, "Where does Ana live?")
    _ask(agent, "Does Ana live in Porto?")
    for call in model.seen:
        content = call[0].content
        assert content[: len(blocks)] == blocks
        assert len(content) == len(blocks) + 1
        extra = content[-1]
        assert set(extra) == {"type", "text"} and extra["type"] == "text"
        assert extra["text"].startswith(SEPARATOR + DEFAULT_HEADER)
    assert prompt.content == blocks  # the agent's own message is not changed


def test_a_system_message_in_the_state_gets_the_block(seeded: Oblivion) -> None:
    """Without system_prompt=, a conversation that starts with a system message gets
    the block in that message, not in a second system message before it; the state
    keeps the message as it was, so blocks do not pile up across turns."""
    model = ScriptedChatModel(["Porto.", "Yes."])
    agent = create_agent(
        model,
        tools=[],
        middleware=[OblivionMemoryMiddleware(seeded)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t", "user_id": "sam"}}
    first = {"role": "system", "content": "You are a travel assistant."}
    agent.invoke({"messages": [first, {"role": "user", "content": "Where does Ana live?"}]}, config)
    result = agent.invoke(
        {"messages": [{"role": "user", "content": "Does Ana live in Porto?"}]}, config
    )
    for call in model.seen:
        assert [type(m) for m in call[:2]] == [SystemMessage, HumanMessage]
        assert sum(isinstance(m, SystemMessage) for m in call) == 1
        content = call[0].content
        assert isinstance(content, str)
        assert content.startswith("You are a travel assistant." + SEPARATOR + DEFAULT_HEADER)
        assert content.count(DEFAULT_HEADER) == 1
    # the state's system message is the agent's, untouched
    assert result["messages"][0].content == "You are a travel assistant."


def test_without_a_system_prompt_the_block_is_the_system_message(seeded: Oblivion) -> None:
    """With no agent system prompt, the memory block alone is the system message."""
    agent, model = _agent(seeded, ["Fine."], system_prompt=None)
    _ask(agent, "Tell me about Ana")
    sent = model.seen[0][0]
    assert isinstance(sent, SystemMessage) and isinstance(sent.content, str)
    assert sent.content.startswith(DEFAULT_HEADER)


def test_nothing_is_injected_for_a_new_user(engine: Oblivion) -> None:
    """A namespace never written gets no memory block, and the turn is still recorded."""
    agent, model = _agent(engine, ["Hello!"])
    _ask(agent, "Hi, I am new here", {"configurable": {"user_id": "newbie"}})
    assert memory_block(model.seen[0]) is None
    assert engine.count(namespace="newbie") == 1


def test_turns_still_in_the_thread_are_not_injected_again(engine: Oblivion) -> None:
    """With a checkpointer the thread's earlier turns are in the prompt already: their
    memories are not shown again in the block, nor boosted by it, and the recall asks
    for more so the older memories they would have crowded out are shown."""
    engine.remember("Sam's cat Tom is allergic to fish.", namespace="sam")
    agent, model = _agent(
        engine, ["Cats like fish.", "Yes, cats eat fish.", "No, Tom is allergic.", "No."], k=2
    )
    _ask(agent, "Do cats like fish?")
    _ask(agent, "Can my cat eat fish?")
    turns = {r.id: r.text for r in engine.records(namespace="sam") if r.text.startswith("user:")}
    assert len(turns) == 2
    before = {m: len(engine.history(m, namespace="sam")) for m in turns}
    _ask(agent, "So can my cat Tom eat fish?")
    block = memory_block(model.seen[-1]) or ""
    assert "- Sam's cat Tom is allergic to fish." in block
    assert not any(text.splitlines()[0] in block for text in turns.values())
    assert all(  # no recall boost for the hidden ones (the third turn's write aside)
        "recall" not in [e.kind for e in engine.history(m, namespace="sam")[before[m] :]]
        for m in turns
    )
    # a new thread does not hold those turns: they are memories there
    other = {"configurable": {"user_id": "sam", "thread_id": "t2"}}
    agent.invoke({"messages": [{"role": "user", "content": "Can my cat eat fish?"}]}, other)
    assert "user: Can my cat eat fish?" in (memory_block(model.seen[-1]) or "")


def test_a_turn_with_a_pasted_transcript_still_in_the_thread_is_not_injected(
    engine: Oblivion,
) -> None:
    """A user message holding a line "assistant: ..." (a pasted chat log) was split
    there, so its turn, still in the thread, came back in the block, the pasted line
    shown as the assistant's."""
    pasted = "My sister Ana lives in Porto, the other bot said:\nassistant: Ana lives in Porto."
    agent, model = _agent(engine, ["The other bot got Porto right.", "Yes, Porto."])
    _ask(agent, pasted)
    _ask(agent, "So where does Ana live, Porto?")
    assert "Ana lives in Porto" not in (memory_block(model.seen[-1]) or "")
    assert mw._turn_of(f"user: {pasted}\nassistant: Yes.", {pasted})
    assert mw._turn_of(f"user: {pasted}", {pasted})


@pytest.mark.parametrize("budget", [0, 5, 12, 25, 60, None])
def test_the_block_never_exceeds_the_token_budget(engine: Oblivion, budget: int | None) -> None:
    """Whatever the budget, the injected text costs at most that many tokens."""
    for i in range(30):
        engine.remember(
            f"Fact number {i}: the {i}th hotel in Porto has {i} rooms.", namespace="sam"
        )
    agent, model = _agent(engine, ["Noted."], token_budget=budget)
    _ask(agent, "Which hotel in Porto has rooms?")
    block = memory_block(model.seen[0])
    if block is None:
        # Too small for the header and one line: nothing is injected rather than too much.
        assert budget is not None and budget < word_count(DEFAULT_HEADER) + 10
    elif budget is not None:
        assert word_count(block) <= budget
    else:
        assert block.count("\n- ") == engine.policy.default_k


def test_a_counter_of_fractional_tokens_injects_within_the_budget(clock: ManualClock) -> None:
    """A counter estimating len/4 (fractions, which the engine rounds up) ended every
    run: the separator's and header's raw counts left a budget of 382.5 tokens, which
    recall refused."""
    quarter = lambda text: len(text) / 4  # noqa: E731
    engine = memory(clock=clock, token_counter=quarter)
    engine.remember("I drink espresso every morning.", namespace="sam")
    agent, model = _agent(engine, ["Noted."], token_budget=60)
    _ask(agent, "What do I drink?")
    block = memory_block(model.seen[0])
    assert block is not None and "I drink espresso every morning." in block
    assert math.ceil(quarter(block)) <= 60


@pytest.mark.parametrize("user_id", [uuid.UUID(int=7), 42])
def test_a_database_user_id_is_its_namespace(engine: Oblivion, user_id: object) -> None:
    """A user id held as a UUID (FastAPI's and SQL's user ids) ended every run with
    "must be a non-empty string"; an int already worked. Each is its ``str``."""
    agent, _ = _agent(engine, ["Noted."])
    _ask(agent, "I drink espresso every morning.", {"configurable": {"user_id": user_id}})
    assert "I drink espresso every morning." in engine.records(namespace=str(user_id))[0].text


def test_a_zero_budget_recalls_nothing(seeded: Oblivion) -> None:
    """token_budget=0 injects nothing and boosts nothing, but still records the turn."""
    agent, _ = _agent(seeded, ["ok"], token_budget=0)
    ids = [r.id for r in seeded.records(namespace="sam")]
    _ask(agent, "distances")
    assert all("recall" not in _events(seeded, i) for i in ids)
    assert seeded.count(namespace="sam") == 3


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"token_budget": -1}, "token_budget"),
        ({"token_budget": 1.5}, "token_budget"),
        ({"k": 0}, "k must"),
        ({"namespace": 42}, "namespace must"),
        ({"policy": 3}, "policy must"),
        # a run stored the turn, then failed after the model answered, and every run after
        ({"policy": Policy.template("support-desk", clock="turns")}, "'wall' clock"),
        ({"policy": "support-dsk"}, "unknown policy template"),
        ({"standing": 3}, "standing must be a category name"),
        ({"standing": ["instruction", ""]}, r"standing\[1\] must be a non-empty string"),
    ],
)
def test_bad_options_fail_clearly(engine: Oblivion, options: dict[str, Any], match: str) -> None:
    """A negative budget (and other bad options) is refused at construction."""
    with pytest.raises(ValueError, match=match):
        OblivionMemoryMiddleware(engine, **options)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"header": None}, r"header must be a string.*\"\" for none"),
        ({"header": 3}, "header must be a string"),
        ({"used_rule": None}, "used_rule must be a callable.*used_ids"),
        ({"used_rule": "used_ids"}, "used_rule must be a callable"),
        ({"user_key": None}, 'user_key must be a non-empty string.*"user_id"'),
        ({"user_key": ""}, "user_key must be a non-empty string"),
        ({"namespace": ""}, "namespace must be a non-empty string, a callable"),
        ({"namespace": "  "}, "namespace must be a non-empty string, a callable"),
        ({"namespace": "x" * 300}, "namespace is longer than"),
    ],
)
def test_options_every_run_would_crash_on_are_refused_at_construction(
    seeded: Oblivion, options: dict[str, Any], match: str
) -> None:
    """header/used_rule/user_key None or a blank namespace are refused when the
    middleware is built, naming the argument and what to pass, not by a TypeError
    inside the hooks of every run."""
    with pytest.raises(InvalidInputError, match=match):
        OblivionMemoryMiddleware(seeded, **options)


def test_an_empty_header_and_a_custom_user_key_run(seeded: Oblivion) -> None:
    """header="" (no header line) and another user_key are legitimate."""
    agent, model = _agent(seeded, ["About 313 km."], header="", user_key="uid")
    _ask(agent, "How far is Porto in kilometres?", {"configurable": {"uid": "sam"}})
    system = model.seen[0][0]
    assert isinstance(system, SystemMessage)
    assert "- Always give distances in kilometres, never miles." in system.text
    assert DEFAULT_HEADER not in system.text


ANA = [
    "Ana lives in Porto.",
    "Ana works as a nurse.",
    "Ana has two cats.",
    "Ana likes jazz.",
    "Ana was born in Lisbon.",
]


def test_standing_instructions_are_injected_whatever_the_message(engine: Oblivion) -> None:
    """ "Always give distances in kilometres" is in the block of a turn about something
    else (the first memory shown), as instructions are by default; standing=() leaves
    the block to what the message recalls."""
    rule = engine.remember("Always give distances in kilometres, never miles.", namespace="sam")
    assert rule.category == "instruction"
    for text in ANA:
        engine.remember(text, namespace="sam")
    agent, model = _agent(engine, ["Ana is a nurse in Porto."], k=3, remember_turns=False)
    _ask(agent, "Tell me about Ana")
    block = memory_block(model.seen[0])
    assert block is not None
    lines = block.strip().splitlines()
    assert lines[1] == "- " + rule.text
    assert sum("Ana" in line for line in lines) == 2  # the message's own matches keep 2
    agent, model = _agent(engine, ["Ana is a nurse."], k=3, remember_turns=False, standing=())
    _ask(agent, "Tell me about Ana")
    block = memory_block(model.seen[0])
    assert block is not None and "kilometres" not in block
    assert sum("Ana" in line for line in block.splitlines()) == 3


# ==================================================================== recording
def test_each_turn_is_remembered_once_after_the_final_answer(engine: Oblivion) -> None:
    """The turn becomes one memory "user: ...\\nassistant: ..." after the final answer."""
    agent, _ = _agent(engine, ["Porto is lovely in May."])
    _ask(agent, "When should I visit Porto?")
    (record,) = engine.records(namespace="sam")
    assert record.text == "user: When should I visit Porto?\nassistant: Porto is lovely in May."
    assert record.metadata["kind"] == "turn"


@pytest.mark.parametrize(
    ("user", "answer", "category"),
    [
        ("Good morning!", "Always happy to help, never tired!", "small_talk"),
        ("Always reply in French.", "Okay.", "instruction"),
        ("I prefer window seats.", "Noted.", "preference"),
    ],
)
def test_category_comes_from_the_users_words(
    engine: Oblivion, user: str, answer: str, category: str
) -> None:
    """The stored turn is appraised from the user's message, not from the answer."""
    agent, _ = _agent(engine, [answer])
    _ask(agent, user)
    (record,) = engine.records(namespace="sam")
    assert record.category == category
    assert record.importance == pytest.approx(engine.importance_scorer.score(user))


def test_tool_loops_recall_once_and_record_once(seeded: Oblivion) -> None:
    """Model calls after a tool call reuse the turn's block and do not record twice."""

    @tool
    def lookup(city: str) -> str:
        """Distance lookup."""
        return f"{city}: 313 km"

    replies = [
        AIMessage(
            content="", tool_calls=[{"name": "lookup", "args": {"city": "Porto"}, "id": "1"}]
        ),
        "Porto is 313 kilometres away.",
    ]
    agent, model = _agent(seeded, replies, tools=[lookup])
    instruction = seeded.records(namespace="sam")[0].id
    _ask(agent, "How far is Porto?")
    assert len(model.seen) == 2
    assert memory_block(model.seen[0]) == memory_block(model.seen[1]) is not None
    assert _events(seeded, instruction).count("recall") == 1
    assert seeded.count(namespace="sam") == 3


def _forgetting_agent(engine: Oblivion, change: Any) -> tuple[Any, ScriptedChatModel]:
    """An agent whose one tool call runs ``change(engine)`` (a tool that forgets or
    corrects a memory), then answers."""

    @tool
    def forget_sister() -> str:
        """Forget what is stored about the user's sister."""
        change(engine)
        return "done"

    replies = [
        AIMessage(content="", tool_calls=[{"name": "forget_sister", "args": {}, "id": "1"}]),
        "Done, I have forgotten it.",
    ]
    return _agent(engine, replies, tools=[forget_sister])


def _sister_id(engine: Oblivion) -> str:
    (record,) = (r for r in engine.records(namespace="sam") if "Ana" in r.text)
    return record.id


@pytest.mark.parametrize(
    "change",
    [
        lambda e: e.forget_where(where_document={"$contains": "Ana"}, namespace="sam"),
        lambda e: e.forget(_sister_id(e), namespace="sam"),
        lambda e: e.invalidate(_sister_id(e), namespace="sam", reason="wrong"),
    ],
    ids=["forget_where", "forget", "invalidate"],
)
def test_a_memory_a_tool_forgets_is_not_in_the_next_model_call(
    seeded: Oblivion, change: Any
) -> None:
    """A memory a tool forgets or invalidates leaves the block of the turn's next model
    call and the checkpointed state; the memories still shown are not boosted again."""
    instruction = seeded.records(namespace="sam")[0].id
    agent, model = _forgetting_agent(seeded, change)
    config = {"configurable": {"thread_id": "t", "user_id": "sam"}}
    agent.invoke({"messages": [{"role": "user", "content": "Forget what you know of Ana"}]}, config)
    first, second = (memory_block(sent) or "" for sent in model.seen)
    assert "Ana lives in Porto" in first
    assert "Ana lives in Porto" not in second
    assert "kilometres" in second
    assert "Ana lives in Porto" not in str(agent.get_state(config).values.get(STATE_KEY))
    assert _events(seeded, instruction).count("recall") == 1


def test_a_memory_shown_in_a_forgotten_ones_place_gets_the_recall_boost_once(
    seeded: Oblivion,
) -> None:
    """A memory the refreshed block shows for the first time gets the recall boost, once."""
    brother = seeded.remember("Sam's brother Leo lives in Lisbon.", namespace="sam")
    instruction = seeded.records(namespace="sam")[0].id

    @tool
    def forget_sister() -> str:
        """Forget what is stored about the user's sister."""
        seeded.forget(_sister_id(seeded), namespace="sam")
        return "done"

    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    replies = [
        AIMessage(content="", tool_calls=[{"name": "forget_sister", "args": {}, "id": "1"}]),
        AIMessage(content="", tool_calls=[{"name": "noop", "args": {}, "id": "2"}]),
        "Done.",
    ]
    agent, model = _agent(seeded, replies, tools=[forget_sister, noop], k=2)
    _ask(agent, "Where does Sam's sister Ana live?")
    blocks = [memory_block(sent) or "" for sent in model.seen]
    assert "Leo" not in blocks[0] and "Ana" in blocks[0]
    assert "Leo" in blocks[1] and "Ana" not in blocks[1] and blocks[2] == blocks[1]
    assert _events(seeded, brother.id).count("recall") == 1
    assert _events(seeded, instruction).count("recall") == 1


def test_a_memory_back_in_a_turns_third_block_is_not_boosted_again(seeded: Oblivion) -> None:
    """A memory the first block showed, the second left out (a tool corrected it) and
    the third shows again (a tool undid the correction) gets one recall boost."""
    sister = _sister_id(seeded)
    made: list[str] = []

    @tool
    def correct() -> str:
        """Store the correction."""
        made.append(seeded.remember("Sam's sister Ana lives in Faro.", namespace="sam").id)
        return "ok"

    @tool
    def undo() -> str:
        """Undo the correction."""
        seeded.forget(made[0], namespace="sam")
        return "ok"

    replies = [
        AIMessage(content="", tool_calls=[{"name": "correct", "args": {}, "id": "1"}]),
        AIMessage(content="", tool_calls=[{"name": "undo", "args": {}, "id": "2"}]),
        "Done.",
    ]
    agent, model = _agent(seeded, replies, tools=[correct, undo], k=2)
    _ask(agent, "Where does Sam's sister Ana live?")
    blocks = [memory_block(sent) or "" for sent in model.seen]
    assert "Porto" in blocks[0] and "Faro" in blocks[1] and "Porto" not in blocks[1]
    assert "Porto" in blocks[2]
    assert _events(seeded, sister).count("recall") == 1


def test_a_memory_a_tool_corrects_is_shown_as_it_is_now(seeded: Oblivion) -> None:
    """A memory a tool edits is shown with its new text in the turn's next model call."""
    agent, model = _forgetting_agent(
        seeded, lambda e: e.edit(_sister_id(e), "Sam's sister Ana lives in Braga.", namespace="sam")
    )
    _ask(agent, "Where does Ana live?")
    first, second = (memory_block(sent) or "" for sent in model.seen)
    assert "Ana lives in Porto" in first
    assert "Ana lives in Braga" in second and "Porto" not in second


def test_a_tool_loop_with_nothing_forgotten_does_not_recall_again(
    seeded: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Model calls after a tool that changed no memory reuse the block: no new recall."""
    agent, model = _forgetting_agent(seeded, lambda e: None)
    calls: list[str] = []
    recall = seeded.recall

    def counted(query: str, **kwargs: Any) -> Any:
        calls.append(query)
        return recall(query, **kwargs)

    monkeypatch.setattr(seeded, "recall", counted)
    _ask(agent, "Where does Ana live?")
    assert len(model.seen) == 2 and len(calls) == 1
    assert memory_block(model.seen[0]) == memory_block(model.seen[1]) is not None


def _summarized_agent(
    engine: Oblivion, replies: list[Any], *, summarization_first: bool
) -> tuple[Any, ScriptedChatModel]:
    """An agent whose ``SummarizationMiddleware`` summarises all but the last two
    messages once there are three: the user's message goes after the first tool call."""

    @tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return f"Sunny in {city}"

    model = ScriptedChatModel(replies)
    summarization = SummarizationMiddleware(
        model=FakeListChatModel(responses=["The user asked about the weather."]),
        trigger=("messages", 3),
        keep=("messages", 2),
    )
    memory = OblivionMemoryMiddleware(engine)
    middleware = [summarization, memory] if summarization_first else [memory, summarization]
    agent = create_agent(
        model, tools=[weather], middleware=middleware, checkpointer=InMemorySaver()
    )
    return agent, model


@pytest.mark.parametrize("summarization_first", [True, False])
@pytest.mark.parametrize("use_async", [False, True])
async def test_a_summary_message_is_not_taken_for_the_users_turn(
    seeded: Oblivion, summarization_first: bool, use_async: bool
) -> None:
    """When ``SummarizationMiddleware`` replaces the user's message by its summary in
    the middle of a turn, the summary is neither recalled for nor recorded: the turn
    recalls once from the user's words and is stored with them."""
    replies = [
        AIMessage(
            content="", tool_calls=[{"id": "c1", "name": "weather", "args": {"city": "Porto"}}]
        ),
        "It is sunny in Porto.",
        "Ana is your sister.",
    ]
    agent, model = _summarized_agent(seeded, replies, summarization_first=summarization_first)
    sister = seeded.records(namespace="sam")[1].id
    config = {"configurable": {"thread_id": "s", "user_id": "sam"}}
    question = {"messages": [HumanMessage("What's the weather where Ana lives?")]}
    follow_up = {"messages": [HumanMessage("Who is Ana?")]}
    if use_async:
        out = await agent.ainvoke(question, config)
        await agent.ainvoke(follow_up, config)
    else:
        out = agent.invoke(question, config)
        agent.invoke(follow_up, config)
    summary = out["messages"][0]
    assert summary.additional_kwargs.get("lc_source") == "summarization"  # it did summarise
    assert len(model.seen) == 3
    assert memory_block(model.seen[0]) == memory_block(model.seen[1]) is not None
    assert _events(seeded, sister).count("recall") == 2  # once per user turn
    turns = [r.text for r in seeded.records(namespace="sam")[2:]]
    assert turns == [
        "user: What's the weather where Ana lives?\nassistant: It is sunny in Porto.",
        "user: Who is Ana?\nassistant: Ana is your sister.",
    ]


def test_latest_human_skips_summary_messages() -> None:
    """``latest_human`` returns the user's last message, never a summary."""
    summary = HumanMessage(
        "Here is a summary of the conversation to date:\n\nWeather.",
        additional_kwargs={"lc_source": "summarization"},
    )
    user = HumanMessage("What's the weather?")
    assert latest_human([summary, user, AIMessage("Sunny.")]) == (1, user)
    assert latest_human([user, summary, AIMessage("", tool_calls=[])]) == (0, user)
    assert latest_human([summary, AIMessage("Sunny.")]) is None


def test_only_memories_the_answer_drew_on_get_the_used_boost(seeded: Oblivion) -> None:
    """mark_used goes to recalled memories the answer echoes, not to the others."""
    instruction, sister = (r.id for r in seeded.records(namespace="sam"))
    agent, _ = _agent(seeded, ["Porto is about 313 kilometres away; distances in kilometres."])
    _ask(agent, "How many miles to Porto?")
    assert "recall" in _events(seeded, instruction) and "recall" in _events(seeded, sister)
    assert "used" in _events(seeded, instruction)
    assert "used" not in _events(seeded, sister)


def test_custom_used_rule(seeded: Oblivion) -> None:
    """A used_rule replaces the default overlap rule."""
    agent, _ = _agent(seeded, ["Sure."], used_rule=lambda answer, items: [i for i, _ in items])
    _ask(agent, "Tell me everything")
    assert all("used" in _events(seeded, r.id) for r in seeded.records(namespace="sam")[:2])


def test_remember_turns_false_only_recalls(seeded: Oblivion) -> None:
    """With remember_turns=False nothing new is stored."""
    agent, _ = _agent(seeded, ["Fine."], remember_turns=False)
    _ask(agent, "distances")
    assert seeded.count(namespace="sam") == 2


def test_an_overlong_turn_is_cut_not_crashed(engine: Oblivion) -> None:
    """A turn longer than max_text_chars is stored cut to the limit."""
    engine.set_policy(Policy.template("balanced").replace(max_text_chars=200))
    agent, _ = _agent(engine, ["word " * 200])
    _ask(agent, "Tell me a long story")
    (record,) = engine.records(namespace="sam")
    assert len(record.text) == 200 and record.text.endswith("[...]")


@pytest.mark.parametrize("odd", ["\x00", "\ud800"])
def test_a_nul_or_lone_surrogate_in_the_message_does_not_crash_the_run(
    seeded: Oblivion, odd: str
) -> None:
    """A NUL or a lone surrogate (which the engine refuses) in the user's message is
    cleaned out of the query and of the stored turn: the agent answers with memories."""
    agent, model = _agent(seeded, ["She lives in Porto."])
    result = _ask(agent, f"Where does Ana{odd} live?")
    assert result["messages"][-1].content == "She lives in Porto."
    block = memory_block(model.seen[0])
    assert block is not None and "Ana lives in Porto" in block
    assert seeded.records(namespace="sam")[-1].text.startswith("user: Where does Ana")


def test_a_message_of_only_a_nul_injects_only_the_standing_instructions(
    seeded: Oblivion,
) -> None:
    """A message that is blank once cleaned matches nothing: only the standing
    instruction is injected (standing=(): nothing is)."""
    agent, model = _agent(seeded, ["Hm?"])
    result = _ask(agent, "\x00")
    assert result["messages"][-1].content == "Hm?"
    block = memory_block(model.seen[0])
    assert block is not None
    assert block.strip().splitlines()[1:] == ["- Always give distances in kilometres, never miles."]
    agent, model = _agent(seeded, ["Hm?"], standing=())
    _ask(agent, "\x00")
    assert memory_block(model.seen[0]) is None


def test_an_image_only_turn_gets_the_standing_instructions(engine: Oblivion) -> None:
    """A user message of images only has no text to recall with: the block holds the
    standing instructions a recall would put first (the current ones, best scored
    first, within k's half), no other memory, and they get the recall boost."""
    rules = [
        engine.remember(text, category="instruction", namespace="sam")
        for text in ["Always give distances in kilometres.", "Call me Sam.", "Never use emoji."]
    ]
    engine.remember("Sam's sister Ana lives in Porto.", namespace="sam")
    engine.reinforce([rules[2].id], namespace="sam")
    engine.invalidate(rules[1].id, namespace="sam")
    expected = engine.recall(
        "zzqx", k=4, namespace="sam", standing="instruction", feedback=False
    ).texts[:2]
    assert expected == [rules[2].text, rules[0].text]
    before = _events(engine, rules[0].id)
    agent, model = _agent(engine, ["A nice photo."], k=4)
    image = HumanMessage(content=[{"type": "image", "url": "https://example.com/map.png"}])
    config = {"configurable": {"thread_id": "t", **USER["configurable"]}}
    result = agent.invoke({"messages": [image]}, config)
    assert result["messages"][-1].content == "A nice photo."
    block = memory_block(model.seen[0])
    assert block is not None
    assert block.strip().splitlines()[1:] == ["- " + text for text in expected]
    assert _events(engine, rules[0].id) == [*before, "recall"]
    agent, model = _agent(engine, ["A nice photo."], k=4, standing=())
    agent.invoke({"messages": [image]}, config)
    assert memory_block(model.seen[0]) is None


def test_a_memory_forgotten_mid_turn_does_not_break_the_used_boost(seeded: Oblivion) -> None:
    """If a recalled memory is forgotten before the answer, the others are still boosted."""
    instruction, sister = (r.id for r in seeded.records(namespace="sam"))
    mw = OblivionMemoryMiddleware(seeded)
    memo = {"namespace": "sam", "recalled": [[sister, "Ana lives in Porto"], [instruction, "x"]]}
    seeded.forget(sister, namespace="sam")
    mw._record(memo, "", "Ana lives in Porto, yes.")
    seeded.mark_used([sister, instruction], namespace="sam", skip_missing=True)
    assert "used" in _events(seeded, instruction)


class Answer(BaseModel):
    """A structured answer with one text field."""

    text: str


class Distance(BaseModel):
    """A structured answer with several fields."""

    city: str
    km: int


def _structured_agent(engine: Oblivion, replies: list[Any], schema: type) -> Any:
    return create_agent(
        ScriptedChatModel(replies),
        tools=[],
        middleware=[OblivionMemoryMiddleware(engine)],
        response_format=ToolStrategy(schema),
        checkpointer=InMemorySaver(),
    )


def _structured_call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def test_a_structured_response_turn_is_remembered_once(engine: Oblivion) -> None:
    """With ToolStrategy the run ends on a ToolMessage: after_agent records the turn,
    taking the response's only text field as the answer, once per turn."""
    agent = _structured_agent(
        engine,
        [
            _structured_call("Answer", {"text": "Noted, kilometres from now on."}, "c1"),
            _structured_call("Answer", {"text": "Porto is lovely in May."}, "c2"),
        ],
        Answer,
    )
    result = _ask(agent, "Always give distances in kilometres.")
    assert result["structured_response"] == Answer(text="Noted, kilometres from now on.")
    (record,) = engine.records(namespace="sam")
    assert record.text == (
        "user: Always give distances in kilometres.\nassistant: Noted, kilometres from now on."
    )
    _ask(agent, "When should I visit Porto?")
    texts = sorted(r.text for r in engine.records(namespace="sam"))
    assert texts[1] == "user: When should I visit Porto?\nassistant: Porto is lovely in May."
    assert len(texts) == 2


def test_a_structured_response_with_several_fields_is_remembered_as_json(
    engine: Oblivion,
) -> None:
    """A structured response that is not a single text is stored as JSON."""
    agent = _structured_agent(
        engine, [_structured_call("Distance", {"city": "Porto", "km": 313}, "c1")], Distance
    )
    _ask(agent, "How far is Porto?")
    (record,) = engine.records(namespace="sam")
    assert record.text == 'user: How far is Porto?\nassistant: {"city": "Porto", "km": 313}'


def test_a_return_direct_tool_turn_is_remembered_and_boosts(seeded: Oblivion) -> None:
    """A return_direct tool ends the run on its result: that is the turn's answer, and
    the recalled memories it echoes get the used boost."""

    @tool(return_direct=True)
    def lookup(city: str) -> str:
        """Distance lookup."""
        return "Sam's sister Ana lives in Porto, 313 kilometres from Lisbon."

    call = _structured_call("lookup", {"city": "Porto"}, "c1")
    agent, _ = _agent(seeded, [call], tools=[lookup])
    sister = seeded.records(namespace="sam")[1].id
    result = _ask(agent, "Where does my sister Ana live?")
    assert isinstance(result["messages"][-1], ToolMessage)
    assert seeded.count(namespace="sam") == 3
    (turn,) = [r.text for r in seeded.records(namespace="sam") if r.metadata.get("kind")]
    assert turn == (
        "user: Where does my sister Ana live?\n"
        "assistant: Sam's sister Ana lives in Porto, 313 kilometres from Lisbon."
    )
    assert _events(seeded, sister).count("used") == 1


async def test_async_structured_response_turn_is_remembered_once(engine: Oblivion) -> None:
    """ainvoke() records a structured-response turn through aafter_agent, once."""
    agent = _structured_agent(engine, [_structured_call("Answer", {"text": "Okay."}, "c1")], Answer)
    config = {"configurable": {"thread_id": "s", "user_id": "sam"}}
    await agent.ainvoke({"messages": [HumanMessage("I prefer window seats.")]}, config)
    (record,) = engine.records(namespace="sam")
    assert record.text == "user: I prefer window seats.\nassistant: Okay."
    state = await agent.aget_state(config)
    assert state.values[STATE_KEY]["recorded"] is True


# ==================================================================== namespaces and policy
@dataclass
class Context:
    """A runtime context carrying the user id."""

    user_id: str


def test_namespace_comes_from_the_runtime_context(engine: Oblivion) -> None:
    """runtime.context.user_id picks the namespace."""
    model = ScriptedChatModel(["Hi Ana."])
    agent = create_agent(
        model, tools=[], middleware=[OblivionMemoryMiddleware(engine)], context_schema=Context
    )
    agent.invoke({"messages": [{"role": "user", "content": "I am Ana."}]}, context=Context("ana"))
    assert engine.count(namespace="ana") == 1


@pytest.mark.parametrize(
    ("namespace", "config", "expected"),
    [
        (None, {"user_id": "sam"}, "sam"),
        (None, {"user_id": 7}, "7"),
        (None, {}, "default"),
        ("shared", {"user_id": "sam"}, "shared"),
        (lambda runtime, config: "team-" + config["configurable"]["team"], {"team": "a"}, "team-a"),
    ],
)
def test_namespace_resolution(
    engine: Oblivion, namespace: Any, config: dict[str, Any], expected: str
) -> None:
    """Configurable user id, a fixed name, a resolver, or the default namespace."""
    agent, _ = _agent(engine, ["ok"], namespace=namespace)
    _ask(agent, "I like trains a lot", {"configurable": config})
    assert engine.count(namespace=expected) == 1


def test_a_run_without_a_user_id_warns_once_that_its_namespace_is_shared(
    engine: Oblivion, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the id every run shares the default namespace (each user would be shown
    the others' memories): a warning says so once, naming the key to pass; a fixed
    namespace or a resolver choosing the default one is on purpose and says nothing."""
    agent, _ = _agent(engine, ["ok", "ok"])
    with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
        _ask(agent, "My bank PIN is 4471.", {"configurable": {}})
        _ask(agent, "What is my bank PIN?", {"configurable": {"thread_id": "other"}})
    (warning,) = [r.getMessage() for r in caplog.records if "default namespace" in r.message]
    # the advice keeps the memories in view (namespace='shared' would start empty)
    assert "'user_id'" in warning and "namespace='default'" in warning
    assert engine.count(namespace="default") == 2
    caplog.clear()
    for namespace in ("shared", lambda runtime, config: None):
        agent, _ = _agent(engine, ["ok"], namespace=namespace)
        with caplog.at_level(logging.WARNING, logger="oblivion_langchain"):
            _ask(agent, "I like trains a lot", {"configurable": {}})
        assert not [r for r in caplog.records if "default namespace" in r.getMessage()]


@pytest.mark.parametrize("use_async", [False, True])
def test_the_namespace_is_read_from_the_config_langgraph_passes(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch, use_async: bool
) -> None:
    """The user id in the configurable picks the namespace even where
    ``langgraph.config.get_config()`` finds no config, as in an async run on Python 3.10,
    which put every user's turns in the default namespace."""

    def no_config() -> Any:
        raise RuntimeError("Called get_config outside of a runnable context")

    monkeypatch.setattr(mw, "get_config", no_config)
    agent, _ = _agent(engine, ["ok"])
    config = {"configurable": {"thread_id": "t", "user_id": "ana"}}
    request = {"messages": [{"role": "user", "content": "I like trains a lot"}]}
    if use_async:
        asyncio.run(agent.ainvoke(request, config))
    else:
        agent.invoke(request, config)
    assert engine.count(namespace="ana") == 1 and engine.count() == 0


def test_users_do_not_see_each_others_memories(engine: Oblivion) -> None:
    """Memories recorded for one user are never injected for another."""
    agent, model = _agent(engine, ["Noted.", "Hello."])
    _ask(agent, "My passport number is X123.", {"configurable": {"user_id": "ana"}})
    _ask(agent, "What is my passport number?", {"configurable": {"user_id": "ben"}})
    assert memory_block(model.seen[1]) is None


async def test_concurrent_runs_of_users_keep_their_memories_apart(engine: Oblivion) -> None:
    """Runs for three users at once (as a server's workers make them) each recall, see
    and store only their own user's turns."""
    model = EchoChatModel()
    agent = create_agent(
        model,
        tools=[],
        middleware=[OblivionMemoryMiddleware(engine, token_budget=None)],
        checkpointer=InMemorySaver(),
    )
    users = ("ana", "ben", "cho")

    async def chat(user: str) -> None:
        for n in range(6):
            config = {"configurable": {"thread_id": user, "user_id": user}}
            text = f"{user} note {n}: the {user} project meets on day {n}."
            await agent.ainvoke({"messages": [HumanMessage(text)]}, config)

    await asyncio.gather(*(chat(u) for u in users))
    assert len(model.seen) == 18
    for messages in model.seen:
        (asked,) = {u for u in users if messages[-1].text.startswith(u)}
        block = memory_block(messages) or ""
        assert not [u for u in users if u != asked and f"{u} note" in block], block
    for user in users:
        turns = [r.text for r in engine.records(namespace=user)]
        assert len(turns) == 6 and all(t.startswith(f"user: {user} note") for t in turns)
        assert all(f"assistant: Noted: {user} note" in t for t in turns)


@pytest.mark.parametrize("value", ["", "   ", 3.5])
def test_a_bad_namespace_from_the_resolver_fails_clearly(engine: Oblivion, value: Any) -> None:
    """An empty or non-string namespace from the resolver raises a ValueError."""
    agent, _ = _agent(engine, ["ok"], namespace=lambda runtime, config: value)
    with pytest.raises(ValueError, match="namespace"):
        _ask(agent, "hello")


def test_policy_template_is_applied_per_namespace(engine: Oblivion) -> None:
    """policy= sets the namespace's policy once, the first time the user is seen."""
    agent, _ = _agent(engine, ["a", "b"], policy="support-desk")
    _ask(agent, "I like trains")
    assert engine.policy_for("sam").name == "support-desk"
    assert engine.policy.name == "balanced"
    journal = [e for e in engine.history(namespace="sam") if e.kind == "policy"]
    _ask(agent, "I like planes")
    assert [e for e in engine.history(namespace="sam") if e.kind == "policy"] == journal


def test_a_new_users_first_turn_is_stored_under_the_middlewares_policy(
    engine: Oblivion,
) -> None:
    """The policy was applied to a brand-new user only after their first turn was
    stored, so that turn was written under the engine's default (here its length was
    not cut to the policy's ``max_text_chars``). It is applied before anything of the
    first turn is recalled or written."""
    short = Policy.template("balanced").replace(name="short", max_text_chars=120)
    agent, _ = _agent(engine, ["ok " * 60, "ok " * 60], policy=short)
    long_message = "I am planning a long trip across Portugal and Spain next spring " * 3
    _ask(agent, long_message)
    assert engine.policy_for("sam").name == "short"
    assert [len(r.text) <= 120 for r in engine.records(namespace="sam")] == [True]


# ==================================================================== async
async def test_async_agent_recalls_injects_records_and_boosts(seeded: Oblivion) -> None:
    """ainvoke() goes through the async hooks with the same effects as invoke()."""
    instruction = seeded.records(namespace="sam")[0].id
    agent, model = _agent(seeded, ["Porto is 313 kilometres away; distances in kilometres."])
    config = {"configurable": {"thread_id": "a", "user_id": "sam"}}
    await agent.ainvoke({"messages": [HumanMessage("How many miles to Porto?")]}, config)
    block = memory_block(model.seen[0])
    assert block is not None and "kilometres" in block
    assert {"recall", "used"} <= set(_events(seeded, instruction))
    assert seeded.count(namespace="sam") == 3


async def test_async_state_keeps_the_turn_private(seeded: Oblivion) -> None:
    """The middleware's state entry is kept out of the agent's output."""
    agent, _ = _agent(seeded, ["ok"])
    config = {"configurable": {"thread_id": "b", "user_id": "sam"}}
    result = await agent.ainvoke({"messages": [HumanMessage("distances")]}, config)
    assert STATE_KEY not in result
    state = await agent.aget_state(config)
    assert state.values[STATE_KEY]["recorded"] is True


# ==================================================================== real stack
@pytest.mark.integration
def test_real_stack_middleware(real_engine: Oblivion, clock: ManualClock) -> None:
    """With MiniLM, Chroma and tiktoken: relevant memory injected within budget, turn stored."""
    real_engine.remember("Always give distances in kilometres, never in miles.", namespace="sam")
    real_engine.remember("I had pasta for lunch.", namespace="sam")
    agent, model = _agent(
        real_engine,
        ["Porto is 313 kilometres from Lisbon; distances in kilometres."],
        token_budget=40,
    )
    _ask(agent, "How many miles from Lisbon to Porto?")
    block = memory_block(model.seen[0])
    assert block is not None and "kilometres, never in miles" in block
    assert real_engine.token_counter(block) <= 40
    instruction = real_engine.records(namespace="sam")[0].id
    assert "used" in _events(real_engine, instruction)
    assert real_engine.count(namespace="sam") == 3


def test_only_the_memories_the_block_shows_get_the_recall_boost() -> None:
    """Recall packs a memory by its tokens plus ``per_item_tokens``, but the block indents
    every line of a memory of many lines: over the budget, ``render`` drops the last
    memories, which the recall (with feedback on a thread's first turn) had already
    boosted though the model never saw them. The boost now goes to what is shown."""
    engine = Oblivion(None, clock=ManualClock(), embedder=HashEmbedder())  # real tiktoken
    facts = [
        "Sam's tea order: green tea with\n  a slice of lemon, no sugar, in the blue mug.",
        "Sam's tea preference\n- green tea from\n- Kyoto\n- in the morning\n- never black tea.",
        "Sam likes tea breaks at 10:30 and 15:30 with colleagues from the Leeds office.",
        "user: What tea should I buy?\nassistant: Buy sencha; it suits your taste for green tea.",
        "Sam's green tea list:\n" + "\n".join(f"{i}. green tea" for i in range(1, 25)),
        "Sam's favourite tea shop is on Briggate in Leeds; it sells loose-leaf green tea.",
    ]
    for fact in facts:
        engine.remember(fact, namespace="sam", category="fact")
    dropped = 0
    try:
        for budget in range(150, 260, 4):
            agent, model = _agent(engine, ["Noted."], token_budget=budget, standing=())
            since = engine.history(namespace="sam")[-1].seq
            _ask(
                agent,
                "Which green tea does Sam like?",
                {"configurable": {"user_id": "sam", "thread_id": f"b{budget}"}},
            )
            block = memory_block(model.seen[0]) or ""
            shown = {t for t in facts if "- " + t.replace("\n", "\n  ") in block}
            boosted = {
                engine.get(e.memory_id, namespace="sam").text
                for e in engine.history(namespace="sam")
                if e.seq > since and e.kind == "recall"
            }
            assert boosted == shown
            dropped += len(
                engine.recall(
                    "Which green tea does Sam like?",
                    namespace="sam",
                    token_budget=budget,
                    feedback=False,
                )
            ) > len(shown)
            for record in engine.records(namespace="sam"):
                if record.metadata.get("kind") == "turn":
                    engine.forget(record.id, namespace="sam")
    finally:
        engine.close()
    assert dropped  # some budgets made render drop a memory the recall had packed


def test_a_long_best_memory_that_renders_over_the_budget_leaves_the_others_shown() -> None:
    """A list of many lines ranked first costs more rendered (each line indented) than
    recall packed it for. The block dropped lines from its end until it fit, so the
    short memories after the list went first, then the list itself: the model got no
    block at all. Now only the list is left out, as recall's packing skips what does
    not fit, and only what is shown is boosted."""
    engine = Oblivion(None, clock=ManualClock(), embedder=HashEmbedder())  # real tiktoken
    count = engine.token_counter
    party = "Shopping list for the party:\n" + "\n".join(
        f"{i}. party item {i}" for i in range(1, 25)
    )
    small = ["The party is on Saturday at Anna's flat.", "Tom brings the party music."]
    for text in (party, *small):
        engine.remember(text, namespace="sam", category="fact")
    try:
        query = "shopping list for the party"
        packed = engine.recall(query, namespace="sam", feedback=False)
        assert packed[0].text == party
        budget = (
            sum(it.tokens + engine.policy.per_item_tokens for it in packed)
            + count(SEPARATOR)
            + count(DEFAULT_HEADER + "\n")
        )
        assert count("- " + party.replace("\n", "\n  ")) > budget  # the list alone overflows
        agent, model = _agent(engine, ["Noted."], token_budget=budget, standing=())
        since = engine.history(namespace="sam")[-1].seq
        _ask(agent, query)
        block = memory_block(model.seen[0]) or ""
        assert all(f"- {text}" in block for text in small)
        assert "party item" not in block
        boosted = {
            engine.get(e.memory_id, namespace="sam").text
            for e in engine.history(namespace="sam")
            if e.seq > since and e.kind == "recall"
        }
        assert boosted == set(small)
    finally:
        engine.close()


def test_a_fact_beside_the_threads_own_turns_stays_in_the_block() -> None:
    """From a thread's fourth turn its earlier turns matched the question better than the
    stored fact, which (written just before the first of them) was shown as that turn's
    context; the middleware, leaving the thread's own turns out, left their context out
    with them, and the model got no memory at all."""
    clock = ManualClock()
    engine = Oblivion(None, clock=clock, embedder=HashEmbedder(), token_counter=word_count)
    try:
        engine.remember("My favourite colour is violet.", namespace="sam")
        agent, model = _agent(engine, ["Let me check."] * 5, token_budget=400)
        for j in range(5):
            clock.advance(20.0)
            _ask(agent, f"Question {j}: what is my favourite colour again?")
            assert "violet" in (memory_block(model.seen[-1]) or ""), j
    finally:
        engine.close()


def test_an_answer_regenerated_from_a_checkpoint_replaces_the_turn(engine: Oblivion) -> None:
    """Regenerating an answer from the checkpoint before the model call (LangGraph's
    ``invoke(None, config)``) stored the turn a second time and gave a second "used"
    boost, the checkpoint saying the turn was not recorded yet. The turn's memory, one
    per user message, takes the new answer and keeps its activation."""
    fact = engine.remember("Sam lives in Leeds and likes green tea.", namespace="sam").id
    agent, _ = _agent(engine, ["First answer: green tea in Leeds.", "Second answer: green tea."])
    config = {"configurable": {"user_id": "sam", "thread_id": "regen"}}
    agent.invoke({"messages": [{"role": "user", "content": "Which tea do I like?"}]}, config)
    (first,) = [r for r in engine.records(namespace="sam") if r.metadata.get("kind") == "turn"]
    before_model = next(h for h in agent.get_state_history(config) if h.next == ("model",))
    agent.invoke(None, before_model.config)
    (turn,) = [r for r in engine.records(namespace="sam") if r.metadata.get("kind") == "turn"]
    assert turn.id == first.id
    assert turn.text == "user: Which tea do I like?\nassistant: Second answer: green tea."
    assert _events(engine, fact).count("used") == 1
    assert _events(engine, turn.id)[-1] == "edit"
