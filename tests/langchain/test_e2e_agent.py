"""End to end: a create_agent agent with the memory middleware over five simulated days.

The clock is wall-clock seconds (policy ``clock="wall"``, the ``balanced`` template:
small talk has a half-life of 12 hours, instructions 180 days) driven by a
``ManualClock``: 13 turns a day, 40 minutes apart, from 09:00, with a nightly
``maintain()``. The chat model is a scripted ``GenericFakeChatModel``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from _lc_helpers import (
    DAY,
    DAY5_QUESTION,
    HOUR,
    INSTRUCTION,
    STORY,
    USER,
    StoryRun,
    arun_story,
    run_story,
)
from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from oblivion_core import Oblivion, Tier
from oblivion_core.testing import ManualClock
from oblivion_langchain import OblivionMemoryMiddleware

BUDGET = 160  # tokens for the injected memory block


def _agent_for(engine: Oblivion) -> Callable[[Any], Any]:
    def build(model: Any) -> Any:
        return create_agent(
            model,
            tools=[],
            system_prompt="You are a helpful travel assistant.",
            middleware=[OblivionMemoryMiddleware(engine, token_budget=BUDGET)],
            checkpointer=InMemorySaver(),
        )

    return build


def _check_story(engine: Oblivion, clock: ManualClock, run: StoryRun) -> None:
    turns = run.turns
    assert len(turns) == sum(len(day) for day in STORY) >= 60
    assert {t.day for t in turns} == {1, 2, 3, 4, 5}
    assert engine.count(namespace=USER) == len(turns)

    # The injected context never exceeds its budget (counted by the engine's counter).
    injected = [t.block for t in turns if t.block is not None]
    # every turn from day 2 on (a thread a day): on day 1 every memory is a turn still
    # in the thread, which the model sees already
    assert [t.day for t in turns if t.block is not None] == [t.day for t in turns if t.day > 1]
    assert max(engine.token_counter(block) for block in injected) <= BUDGET

    # The day-1 instruction is injected on day 5 when it matters.
    (day5,) = [t for t in turns if t.user == DAY5_QUESTION]
    assert day5.day == 5 and day5.block is not None
    assert INSTRUCTION in day5.block

    records = engine.records(namespace=USER)
    (instruction,) = [r for r in records if r.text.startswith(f"user: {INSTRUCTION}")]
    assert instruction.category == "instruction"
    assert instruction.tier == Tier.ACTIVE
    assert instruction.created_at < DAY  # given on day 1
    assert "used" in {e.kind for e in engine.history(instruction.id, namespace=USER)}

    # Small talk decays: by the last day most of it is archived already ...
    small = [r for r in records if r.category == "small_talk"]
    assert len(small) >= 20
    early = [r for r in small if r.created_at < 3 * DAY]
    archived_early = [r for r in early if r.tier == Tier.ARCHIVE]
    assert len(archived_early) >= 0.75 * len(early)

    # ... and after two quiet days (6 and 7) all of it is, while the instruction stays active.
    for day in (6, 7, 8):
        clock.set((day - 1) * DAY + 9 * HOUR)
        engine.maintain(namespace=USER)
    tiers = {r.id: r.tier for r in engine.records(namespace=USER)}
    assert all(tiers[r.id] == Tier.ARCHIVE for r in small)
    assert tiers[instruction.id] == Tier.ACTIVE
    # Archived is not lost: the archive is still searchable.
    assert engine.recall("Good morning!", namespace=USER, deep=True, feedback=False).items


def test_sixty_five_turns_over_five_days(engine: Oblivion, clock: ManualClock) -> None:
    """Small talk decays to the archive; the day-1 instruction is injected on day 5, in budget."""
    _check_story(engine, clock, run_story(engine, clock, _agent_for(engine)))


async def test_sixty_five_turns_over_five_days_async(engine: Oblivion, clock: ManualClock) -> None:
    """The same story holds through the agent's async path (ainvoke)."""
    _check_story(engine, clock, await arun_story(engine, clock, _agent_for(engine)))


@pytest.mark.integration
def test_sixty_five_turns_over_five_days_real_stack(
    real_engine: Oblivion, clock: ManualClock
) -> None:
    """The story holds with MiniLM embeddings, Chroma on disk and tiktoken counts."""
    _check_story(real_engine, clock, run_story(real_engine, clock, _agent_for(real_engine)))
