"""Shared test helpers: a scripted chat model, an embedder that can be down, and the
five-day agent story."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from oblivion_langchain.middleware import DEFAULT_HEADER, SEPARATOR

DAY = 86_400.0
HOUR = 3_600.0
USER = "sam"

INSTRUCTION = "Always give distances in kilometres, never in miles."
DAY5_QUESTION = "How many miles is it from Lisbon to Porto by car?"

# Five days of conversation, (user message, scripted answer) per turn: 13 turns a day.
# Small talk is varied so that no answer echoes an earlier greeting.
STORY: tuple[tuple[tuple[str, str], ...], ...] = (
    (  # day 1
        ("Good morning!", "Morning! What are we planning today?"),
        (INSTRUCTION, "Understood: distances in kilometres from now on."),
        ("My sister Ana lives in Porto.", "Noted, your sister Ana lives in Porto."),
        ("I am planning a road trip through Portugal next month.", "A road trip, lovely."),
        ("haha nice", "Glad you think so."),
        ("I prefer small family-run hotels.", "Family-run hotels it is."),
        ("What is the best season for the Douro valley?", "September, for the harvest."),
        ("cool, thanks", "Any time."),
        ("My car is a small electric Renault.", "An electric Renault, noted."),
        ("Hey there, how are you?", "Doing well, ready to plan."),
        ("Which beaches are near Lagos?", "Praia Dona Ana and Meia Praia."),
        ("ok great", "Shall we continue?"),
        ("Good night!", "Sleep well."),
    ),
    (  # day 2
        ("Hello again!", "Welcome back. Where were we?"),
        ("Remind me to book the hotel in Braga.", "Reminder set for the Braga hotel."),
        ("lol", "Indeed."),
        ("Is the train from Porto to Braga fast?", "About an hour on the regional train."),
        ("Good afternoon!", "Afternoon! Anything new?"),
        ("We want to visit Sintra palaces too.", "Pena Palace is a must in Sintra."),
        ("Nice weekend?", "Quiet one, thanks for asking."),
        ("Where can we charge the car in Sintra?", "There are chargers by the station."),
        ("haha ok", "Right then."),
        ("Ana recommends a cafe called Majestic.", "Majestic Cafe in Porto is famous."),
        ("Thanks!", "You are welcome."),
        ("What wine is the Douro known for?", "Port wine, and good dry reds."),
        ("See you later!", "Bye for now."),
    ),
    (  # day 3
        ("Hi!", "Hello. What is on the list?"),
        ("We went to Coimbra yesterday.", "How was the university library?"),
        ("The library was stunning.", "The Joanina library is famous."),
        ("cool", "Great to hear."),
        ("Suggest a lunch spot in Aveiro.", "Try the ovos moles bakeries."),
        ("Hey!", "Hey, what is next?"),
        ("How long is the drive from Aveiro to Porto?", "About 75 kilometres, under an hour."),
        ("great, thank you", "Happy to help."),
        ("Book a table for two in Porto on Friday.", "I will note a table for two on Friday."),
        ("lovely day today", "Enjoy the sun."),
        ("Our budget is 120 euros a night.", "Hotels under 120 euros a night, noted."),
        ("ok", "Okay."),
        ("Good night!", "Rest well."),
    ),
    (  # day 4
        ("Good morning!", "Morning, ready for another day?"),
        ("Ana says the Ribeira is crowded on Saturdays.", "Avoid the Ribeira on Saturday."),
        ("haha true", "Crowds can be a lot."),
        ("Which museums open on Monday in Lisbon?", "The Gulbenkian is closed on Tuesday."),
        ("How are you today?", "All good here."),
        ("We might take a ferry across the Tagus.", "The Cacilhas ferry is short."),
        ("nice", "Sure."),
        ("Find a vegetarian restaurant in Lisbon.", "Try Ao 26 Vegan Food Project."),
        ("Hello!", "Hi again."),
        ("The car needs charging every 250 kilometres.", "Charging every 250 kilometres."),
        ("thanks a lot", "No problem."),
        ("What time does the Belem tower open?", "It opens at ten."),
        ("Bye, see you!", "Bye."),
    ),
    (  # day 5
        ("Hey, good morning!", "Morning! Last planning day."),
        ("We leave Lisbon on Sunday.", "Departure from Lisbon on Sunday."),
        (
            DAY5_QUESTION,
            "Lisbon to Porto is about 313 kilometres by car; distances in kilometres, "
            "as you asked.",
        ),
        ("ok cool", "Right."),
        ("Where should we stop for lunch on the way?", "Leiria has a nice castle and cafes."),
        ("haha sounds good", "It does."),
        ("Can we charge the car in Leiria?", "Yes, there are fast chargers there."),
        ("Thanks!", "You are welcome."),
        ("Remind me to call Ana on Saturday.", "Reminder set to call Ana on Saturday."),
        ("Good afternoon!", "Afternoon."),
        ("Which road is faster, A1 or IC2?", "The A1 motorway is faster."),
        ("great", "Great."),
        ("Good night!", "Safe travels."),
    ),
)


class ScriptedChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` that records the messages of each call and accepts tools."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def __init__(self, replies: Iterable[AIMessage | str], **kwargs: Any) -> None:
        super().__init__(messages=iter(replies), **kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        """Tools are accepted and ignored: the replies are scripted."""
        return self


class EchoChatModel(ScriptedChatModel):
    """Answers each call from its own input ("Noted: <the last user message>"), so that
    concurrent runs need no shared script."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(iter(()), **kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        asked = next(m for m in reversed(messages) if m.type == "human")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"Noted: {asked.text}"))])


def memory_block(messages: Sequence[BaseMessage]) -> str | None:
    """The text block the middleware injected into a call's system message, if any
    (``SEPARATOR`` included when it follows the agent's prompt)."""
    if not messages or not isinstance(messages[0], SystemMessage):
        return None
    content = messages[0].content
    if isinstance(content, str):  # a string prompt stays a string: the block ends it
        if content.startswith(DEFAULT_HEADER):
            return content
        at = content.find(SEPARATOR + DEFAULT_HEADER)
        return content[at:] if at >= 0 else None
    for block in content:
        text = block if isinstance(block, str) else block.get("text", "")
        if text.lstrip("\n").startswith(DEFAULT_HEADER):
            return text
    return None


@dataclass
class TurnLog:
    """What happened on one turn of the story."""

    day: int
    user: str
    block: str | None
    seconds: float


@dataclass
class StoryRun:
    """Everything a test needs to check after running the story."""

    turns: list[TurnLog]
    model: ScriptedChatModel


def story_answers() -> Iterator[str]:
    """The scripted answers, in order."""
    for day in STORY:
        for _, answer in day:
            yield answer


def _turns(engine: Any, clock: Any) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Set the clock for each turn and yield ``(day, user message, config)``.

    The clock is a ``ManualClock`` in seconds: each day starts at 09:00, turns are 40
    minutes apart, and a nightly ``maintain()`` runs before the first turn of each day.
    """
    for d, day in enumerate(STORY, start=1):
        clock.set((d - 1) * DAY + 9 * HOUR)
        if USER in engine.namespaces():
            engine.maintain(namespace=USER)
        config = {"configurable": {"thread_id": f"day-{d}", "user_id": USER}}
        for user, _ in day:
            yield d, user, config
            clock.advance(40 * 60)


def _log(model: ScriptedChatModel, before: int, day: int, user: str, clock: Any) -> TurnLog:
    assert len(model.seen) == before + 1, "one model call per turn"
    return TurnLog(day, user, memory_block(model.seen[-1]), clock.now())


def run_story(engine: Any, clock: Any, agent_for: Any) -> StoryRun:
    """Run the five days through ``agent_for(model)`` with ``invoke``."""
    model = ScriptedChatModel(story_answers())
    agent = agent_for(model)
    turns = []
    for day, user, config in _turns(engine, clock):
        before = len(model.seen)
        agent.invoke({"messages": [{"role": "user", "content": user}]}, config)
        turns.append(_log(model, before, day, user, clock))
    return StoryRun(turns, model)


async def arun_story(engine: Any, clock: Any, agent_for: Any) -> StoryRun:
    """Run the five days through ``agent_for(model)`` with ``ainvoke``."""
    model = ScriptedChatModel(story_answers())
    agent = agent_for(model)
    turns = []
    for day, user, config in _turns(engine, clock):
        before = len(model.seen)
        await agent.ainvoke({"messages": [{"role": "user", "content": user}]}, config)
        turns.append(_log(model, before, day, user, clock))
    return StoryRun(turns, model)


__all__ = [
    "DAY",
    "DAY5_QUESTION",
    "HOUR",
    "INSTRUCTION",
    "SEPARATOR",
    "STORY",
    "USER",
    "ScriptedChatModel",
    "StoryRun",
    "TurnLog",
    "arun_story",
    "memory_block",
    "run_story",
]
