"""End to end: five simulated days of chat through ``SimpleChatEngine`` + ``OblivionMemory``.

Real stack (embedded Chroma, local all-MiniLM-L6-v2, tiktoken), ``MockLLM`` for the
model and a ``ManualClock`` for the days. Small talk must decay into the archive, the
first day's instruction must still be recalled when it matters on the last day, and no
context the LLM receives may exceed the memory's token limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import MockLLM

from oblivion_core import Oblivion, Tier
from oblivion_core.testing import ManualClock
from oblivion_llamaindex import OblivionMemory

from ._helpers import DAY, HOUR

INSTRUCTION = "From now on, always answer in British English spelling."
FINAL_QUESTION = "Which spelling should you use in your answers, color or colour?"
TOKEN_LIMIT = 150
SYSTEM_PROMPT = "You are a helpful assistant."

DAYS: list[list[str]] = [
    [
        "Hi there! Lovely weather today.",
        INSTRUCTION,
        "My sister Anna lives in Porto.",
        "haha nice",
        "I work as a nurse at the city hospital.",
        "thanks!",
        "How are you today?",
        "I prefer tea over coffee.",
        "ok cool",
        "My cat is called Miso.",
        "Good night!",
        "I need to renew my passport before June.",
        "see you",
    ],
    [
        "Good morning!",
        "hey",
        "The weather is grim today.",
        "I have a dentist appointment tomorrow at 10.",
        "lol",
        "My favourite band is Radiohead.",
        "thanks",
        "Remind me to call Anna on Sunday.",
        "nice",
        "How are you?",
        "I'm reading a book about the Roman empire.",
        "great",
        "Good night!",
    ],
    [
        "hello",
        "I went to the cinema yesterday.",
        "haha",
        "My car is a blue Fiat Panda.",
        "Lovely day, isn't it?",
        "ok",
        "I'm allergic to peanuts.",
        "cool",
        "thank you",
        "I'll travel to Lisbon next month.",
        "how are you doing?",
        "My manager is called Priya.",
        "see you later",
    ],
    [
        "hi",
        "I started learning Portuguese.",
        "lol nice",
        "It's raining again, the weather is awful.",
        "thanks!",
        "I run 10 kilometres every Saturday.",
        "okay",
        "My birthday is on the 3rd of May.",
        "great",
        "I bought a new bike.",
        "haha",
        "How are you?",
        "Good night!",
    ],
    [
        "Good morning",
        "hey there",
        "I fixed the leaking tap in the kitchen.",
        "nice weekend so far",
        "thanks",
        "My neighbour plays the piano.",
        "cool",
        "I'm thinking of adopting a dog.",
        "lol",
        "ok",
        "I need to finish my tax return this week.",
        "how are you?",
        "see you",
    ],
]


class Recorder:
    """``messages_to_prompt`` for ``MockLLM``: keeps every context the LLM is given."""

    def __init__(self) -> None:
        self.contexts: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage]) -> str:
        self.contexts.append(list(messages))
        return "Noted."


@pytest.mark.integration
async def test_sixty_six_turns_over_five_days(tmp_path: Path) -> None:
    """Small talk is archived, the day-one instruction is recalled at the end, limits hold."""
    clock = ManualClock(0.0)
    engine = Oblivion(tmp_path / "store", clock=clock)
    recorder = Recorder()
    memory = OblivionMemory(oblivion=engine, namespace="alice", token_limit=TOKEN_LIMIT)
    chat = SimpleChatEngine.from_defaults(
        llm=MockLLM(messages_to_prompt=recorder), memory=memory, system_prompt=SYSTEM_PROMPT
    )

    turns = 0
    for day, messages in enumerate(DAYS):
        clock.set(day * DAY + 8 * HOUR)
        if day:
            engine.maintain(namespace="alice")  # the nightly job a deployment runs
        for i, text in enumerate(messages):
            clock.advance(0.75 * HOUR)
            if i % 2:  # both paths: odd turns async, even turns sync
                await chat.achat(text)
            else:
                chat.chat(text)
            turns += 1
    clock.set(len(DAYS) * DAY + 8 * HOUR)
    engine.maintain(namespace="alice")
    chat.chat(FINAL_QUESTION)
    turns += 1
    assert turns >= 60

    # No context ever exceeds the token limit (same tokenizer as the memory).
    counter = engine.token_counter
    assert len(recorder.contexts) == turns
    for context in recorder.contexts:
        assert context[0].content == SYSTEM_PROMPT
        assert sum(counter(m.content or "") for m in context) <= TOKEN_LIMIT

    # The first day's instruction came back through recall, not the recent window.
    final = recorder.contexts[-1]
    memories = next(m.content or "" for m in final[1:] if m.role.value == "system")
    assert f"- {INSTRUCTION}" in memories.splitlines()
    window = [m.content for m in final if m.role.value != "system"]
    assert INSTRUCTION not in window
    assert memory.last_recall is not None
    (hit,) = [it for it in memory.last_recall if it.text == INSTRUCTION]
    assert hit.category == "instruction" and hit.tier == Tier.ACTIVE
    assert "instruction memory" in hit.why["explanation"]

    # Small talk decayed into the archive; what matters stayed active.
    records = engine.records(namespace="alice")
    small_talk = [r for r in records if r.category == "small_talk"]
    assert len(small_talk) >= 20
    before_last_day = [r for r in small_talk if r.created_at < (len(DAYS) - 1) * DAY]
    assert before_last_day and all(r.tier == Tier.ARCHIVE for r in before_last_day)
    durable = [r for r in records if r.category in ("instruction", "preference")]
    assert durable and all(r.tier == Tier.ACTIVE for r in durable)
    instruction = next(r for r in records if r.text == INSTRUCTION)
    assert instruction.activation > engine.policy.archive_high
    assert engine.count(namespace="alice") == turns  # every user turn was remembered
    engine.close()
