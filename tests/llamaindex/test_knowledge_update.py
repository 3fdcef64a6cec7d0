"""Knowledge updates through ``OblivionMemory``: only the newest value of a preference is sent."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM

from oblivion_core import Oblivion
from oblivion_core.testing import ManualClock
from oblivion_llamaindex import OblivionMemory

QUESTION = "What is my favourite drink?"

# 39 turns of (user message, scripted answer), then QUESTION as turn 40. The favourite
# drink is stated at turn 3, changed at turn 15 and again at turn 30; nothing else
# mentions a drink of the user's (Priya's favourite is another person's).
CONVERSATION: tuple[tuple[str, str], ...] = (
    ("Hi there!", "Hello! How can I help today?"),
    ("I'm a secondary school teacher in Leeds.", "A teacher in Leeds, noted."),
    ("My favourite drink is tea.", "Tea, noted."),
    ("Can you recommend a board game for four players?", "Ticket to Ride works well."),
    ("We have a parents' evening on Thursday.", "Parents' evening on Thursday, noted."),
    ("cool", "Great."),
    ("How do I stop my bike chain squeaking?", "Clean it and use a dry lube."),
    ("My brother Tom lives in Glasgow.", "Tom in Glasgow, noted."),
    ("What's a quick vegetarian dinner?", "A chickpea curry takes 20 minutes."),
    ("The boiler broke again this morning.", "Time to call the engineer."),
    ("My friend Priya's favourite drink is lemonade.", "Lemonade for Priya, noted."),
    ("ok thanks", "You're welcome."),
    ("I'm marking 60 essays this weekend.", "Sixty essays, good luck."),
    ("Which planet has the most moons?", "Saturn, at the latest count."),
    ("Coffee has become my favourite drink.", "Coffee, noted."),
    ("My school term ends on the 19th of July.", "Term ends on 19 July, noted."),
    ("Suggest a day hike near Leeds.", "Try the Otley Chevin loop."),
    ("haha", "Glad that amused you."),
    ("My favourite band is Radiohead.", "Radiohead, noted."),
    ("How do you say thank you in Welsh?", "Diolch."),
    ("Good afternoon!", "Good afternoon! What's new?"),
    ("We are repainting the living room green.", "A green living room, lovely."),
    ("How many litres of paint for a 4 by 5 metre room?", "About five litres for two coats."),
    ("I have a gluten intolerance.", "Gluten intolerance, noted."),
    ("Tom is visiting us in August.", "Tom's visit in August, noted."),
    ("What time does the sun set in June in Leeds?", "Around half past nine."),
    ("nice", "Indeed."),
    ("My phone screen cracked yesterday.", "Sorry, a screen protector helps next time."),
    ("I joined a choir on Wednesday evenings.", "Choir on Wednesdays, lovely."),
    ("Matcha is my new favourite drink.", "Matcha, noted."),
    ("The car's MOT is due in November.", "MOT in November, noted."),
    ("Recommend a podcast about science.", "Try 'Science Vs'."),
    ("lol ok", "Right."),
    ("The choir is singing at the town hall in December.", "A town hall concert, exciting."),
    ("How long does it take to boil an egg?", "About eight minutes for hard-boiled."),
    ("I started learning Spanish on an app.", "¡Buena suerte!"),
    ("Good evening!", "Good evening."),
    ("I have a staff meeting at 8 tomorrow.", "Staff meeting at 8, noted."),
    ("Bye for now!", "Bye!"),
)

_STALE = re.compile(r"\b(tea|coffee)\b", re.I)
_NEWEST = re.compile(r"\bmatcha\b", re.I)


class ScriptedAnswers:
    """``messages_to_prompt`` for ``MockLLM``: records what the LLM is given, answers in order."""

    def __init__(self, answers: Sequence[str]) -> None:
        self.answers = list(answers)
        self.calls: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage]) -> str:
        self.calls.append(list(messages))
        return self.answers.pop(0)


@pytest.mark.integration
@pytest.mark.parametrize(
    "matcha_turn",
    [
        CONVERSATION[29][0],
        "Update: my favourite drink is matcha now.",  # a label, not a speaker named Update
    ],
)
def test_only_the_newest_preference_is_sent(
    real_engine: Oblivion, clock: ManualClock, matcha_turn: str
) -> None:
    """After tea, then coffee, then matcha, the 40th turn's LLM input says matcha only."""
    conversation = [*CONVERSATION[:29], (matcha_turn, "Matcha, noted."), *CONVERSATION[30:]]
    assert len(conversation) == 39
    llm_input = ScriptedAnswers([*(answer for _, answer in conversation), "Matcha."])
    # A short window (a few recent turns) so the preference must come from long-term memory.
    memory = OblivionMemory(
        oblivion=real_engine, namespace="alex", token_limit=200, memory_token_ratio=0.5
    )
    chat = SimpleChatEngine.from_defaults(
        llm=MockLLM(messages_to_prompt=llm_input),
        memory=memory,
        system_prompt="You are Alex's personal assistant.",
    )
    for user, answer in conversation:
        assert str(chat.chat(user)) == answer
        clock.advance(15 * 60)
    chat.chat(QUESTION)

    sent = [m.content or "" for m in llm_input.calls[-1]]
    assert len(llm_input.calls) == 40
    memories = [text for text in sent if text.startswith(memory.memory_header)]
    assert len(memories) == 1, sent
    window = "\n".join(text for text in sent if text not in memories)
    assert not _NEWEST.search(window), "the window reaches back to turn 30; shorten it"
    assert _NEWEST.search(memories[0]), memories[0]
    assert not _STALE.search("\n".join(sent)), sent
    # The stale statements are kept, each superseded by the next one.
    by_text = {r.text: r for r in real_engine.records(namespace="alex")}
    tea, coffee, matcha = (by_text[conversation[i][0]] for i in (2, 14, 29))
    assert (tea.superseded_by, coffee.superseded_by) == (coffee.id, matcha.id)
    assert matcha.superseded_by is None
    assert by_text["My friend Priya's favourite drink is lemonade."].superseded_by is None
