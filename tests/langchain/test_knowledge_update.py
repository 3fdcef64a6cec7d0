"""Knowledge updates through the middleware: only the newest value of a preference is injected."""

from __future__ import annotations

import re

import pytest
from _lc_helpers import ScriptedChatModel, memory_block
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage

from oblivion_core import Oblivion
from oblivion_core.testing import ManualClock
from oblivion_langchain import OblivionMemoryMiddleware

CONFIG = {"configurable": {"user_id": "sam"}}
QUESTION = "What is my favourite drink?"

# 39 turns of (user message, scripted answer), then QUESTION as turn 40. The favourite
# drink is stated at turn 3, changed at turn 15 and again at turn 30; nothing else
# mentions a drink of Sam's (Priya's favourite is another person's and must stay).
CONVERSATION: tuple[tuple[str, str], ...] = (
    ("Good morning!", "Morning, Sam! What's on today?"),
    ("I work as a nurse at the city hospital.", "A nurse at the city hospital, noted."),
    ("My favourite drink is tea.", "Tea, noted."),
    ("The weather is awful, it has rained all week.", "Sorry to hear about the rain."),
    ("Can you suggest a novel for the weekend?", "Try 'The Remains of the Day'."),
    ("haha ok", "Enjoy it."),
    ("I run 5 kilometres every Saturday morning.", "Great habit, 5 km on Saturdays."),
    ("My sister Priya's favourite drink is lemonade.", "Lemonade for Priya, noted."),
    ("Remind me that the dentist appointment is on the 14th.", "Dentist on the 14th, noted."),
    ("What is a good stretch after running?", "A standing quad stretch helps."),
    ("thanks!", "Any time."),
    ("We are thinking about adopting a cat.", "Cats make great companions."),
    ("My favourite food is ramen.", "Ramen, noted."),
    ("How do I keep basil alive indoors?", "Sunny window, water when the soil is dry."),
    ("Actually, I've switched: my favourite drink is coffee now.", "Coffee it is, noted."),
    ("My night shifts start next month.", "Night shifts from next month, noted."),
    ("Any tips for sleeping during the day?", "Blackout curtains and a fixed routine."),
    ("lol", "Indeed."),
    ("My car needs new tyres before winter.", "New tyres before winter, noted."),
    ("What is the capital of Canada?", "Ottawa."),
    ("Good afternoon!", "Afternoon! Anything new?"),
    ("We booked a week in Lisbon for October.", "Lisbon in October, lovely."),
    ("Which district should we stay in?", "Alfama or Principe Real."),
    ("I'm allergic to peanuts.", "Peanut allergy, noted."),
    ("Priya starts university in September.", "Good luck to Priya."),
    ("How long should I boil an egg for a runny yolk?", "About six minutes."),
    ("ok cool", "Right."),
    ("My laptop keeps freezing when I open many tabs.", "More memory or fewer tabs may help."),
    ("The cat we adopted is called Miso.", "Miso, what a sweet name."),
    ("These days matcha is my favourite drink.", "Matcha, lovely choice."),
    ("I need to renew my passport before Lisbon.", "Passport renewal before Lisbon, noted."),
    ("What is a good podcast about history?", "Try 'The Rest Is History'."),
    ("haha nice", "Glad you like it."),
    ("Miso knocked a plant off the shelf.", "Cats will be cats."),
    ("How many steps are in a kilometre?", "About 1,300 steps."),
    ("I started learning Portuguese on an app.", "Boa sorte with Portuguese!"),
    ("Good evening!", "Evening, Sam."),
    ("My shift tomorrow starts at 7 pm.", "Shift at 7 pm tomorrow, noted."),
    ("See you later!", "Bye for now."),
)

_STALE = re.compile(r"\b(tea|coffee)\b", re.I)
_NEWEST = re.compile(r"\bmatcha\b", re.I)


def _prompt_text(messages: list[BaseMessage]) -> str:
    return "\n".join(m.text for m in messages)


@pytest.mark.integration
def test_only_the_newest_preference_is_injected(real_engine: Oblivion, clock: ManualClock) -> None:
    """After tea, then coffee, then matcha, the 40th turn's injected memories say matcha only."""
    assert len(CONVERSATION) == 39
    model = ScriptedChatModel([*(answer for _, answer in CONVERSATION), "Matcha."])
    agent = create_agent(
        model,
        tools=[],
        system_prompt="You are Sam's personal assistant.",
        middleware=[OblivionMemoryMiddleware(real_engine, token_budget=400)],
    )
    for user, _ in CONVERSATION:
        agent.invoke({"messages": [{"role": "user", "content": user}]}, CONFIG)
        clock.advance(15 * 60)
    agent.invoke({"messages": [{"role": "user", "content": QUESTION}]}, CONFIG)

    assert len(model.seen) == 40
    block = memory_block(model.seen[-1])
    assert block is not None
    assert _NEWEST.search(block), block
    assert not _STALE.search(block), block
    # No checkpointer: each turn starts fresh, so the block is the only memory the model
    # sees; nothing stale reaches it any other way either.
    assert not _STALE.search(_prompt_text(model.seen[-1]))
    # The stale statements are kept, each superseded by the next one.
    turns = {r.text.split("\n")[0]: r for r in real_engine.records(namespace="sam")}
    tea, coffee, matcha = (turns[f"user: {CONVERSATION[i][0]}"] for i in (2, 14, 29))
    assert (tea.superseded_by, coffee.superseded_by) == (coffee.id, matcha.id)
    assert matcha.superseded_by is None
    priya = turns["user: My sister Priya's favourite drink is lemonade."]
    assert priya.superseded_by is None  # another person's favourite is not an update


@pytest.mark.integration
def test_a_correction_through_the_middleware_replaces_the_classic_memorys_fact(
    real_engine: Oblivion, clock: ManualClock
) -> None:
    """The classic memory stores "Human: ...", the middleware "user: ...": one person, so
    a correction stored by the middleware supersedes the fact the classic memory stored
    (a user moving from ConversationChain to create_agent on one engine)."""
    from oblivion_langchain import OblivionMemory

    classic = OblivionMemory(oblivion=real_engine, namespace="sam")
    classic.save_context({"input": "My favourite colour is blue."}, {"output": "Noted."})
    clock.advance(600)
    model = ScriptedChatModel(["Green it is.", "Green."])
    agent = create_agent(model, tools=[], middleware=[OblivionMemoryMiddleware(real_engine)])
    agent.invoke(
        {"messages": [{"role": "user", "content": "My favourite colour is green now."}]}, CONFIG
    )
    clock.advance(600)
    agent.invoke({"messages": [{"role": "user", "content": "What's my favourite colour?"}]}, CONFIG)
    block = memory_block(model.seen[-1])
    assert block is not None and "green" in block and "blue" not in block, block
    blue = next(r for r in real_engine.records(namespace="sam") if "blue" in r.text)
    assert blue.superseded_by is not None


@pytest.mark.integration
def test_a_labelled_line_of_the_users_message_is_theirs(
    real_engine: Oblivion, clock: ManualClock
) -> None:
    """ "Flight: my flight is on Thursday now." inside the user's message is the user's
    line, not another speaker's reply: the stored turn supersedes the old flight."""
    model = ScriptedChatModel(["Noted.", "Noted, Thursday.", "On Thursday."])
    agent = create_agent(model, tools=[], middleware=[OblivionMemoryMiddleware(real_engine)])
    for text in (
        "My flight is on Tuesday.",
        "Trip update:\nFlight: my flight is on Thursday now.\nHotel: still the Hilton.",
        "When is my flight?",
    ):
        agent.invoke({"messages": [{"role": "user", "content": text}]}, CONFIG)
        clock.advance(600)
    old = next(r for r in real_engine.records(namespace="sam") if "Tuesday" in r.text)
    assert old.superseded_by is not None
    block = memory_block(model.seen[-1])
    assert block is not None and "Tuesday" not in block, block
