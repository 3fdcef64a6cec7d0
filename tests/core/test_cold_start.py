"""Cold start: importance decides initial activation and the floor."""

from __future__ import annotations

import pytest

from oblivion_core import Policy, Tier
from oblivion_core.testing import memory

SMALL_TALK = [
    "lovely weather today",
    "haha that is funny",
    "thanks, see you later",
    "how are you doing",
    "nice weekend plans",
]


@pytest.mark.parametrize("clock_kind", ["turns", "wall"])
def test_core_instruction_survives_1000_turns_of_small_talk(clock_kind: str) -> None:
    """An instruction given once in the first turn is still active after 1,000 turns of
    small talk (written 10 at a time, 10 turns every 15 minutes on the wall clock), the
    early chatter is archived, and the instruction is recalled first when relevant."""
    policy = Policy.template("balanced", clock=clock_kind).replace(maintain_every=50)
    mem = memory(policy=policy)
    rule = mem.remember("Always answer in British English, never American spelling.")
    assert rule.category == "instruction"
    assert rule.importance >= 0.9
    chatter = []
    for batch in range(100):
        mem.clock.advance(900.0 if clock_kind == "wall" else 10.0)
        texts = [
            f"{SMALL_TALK[k % len(SMALL_TALK)]} {k}" for k in range(batch * 10, batch * 10 + 10)
        ]
        chatter += mem.remember_many(texts, categories=["small_talk"] * 10)
    mem.maintain()
    assert mem.get(rule.id).tier == Tier.ACTIVE
    archived = {r.id for r in mem.records(tier=Tier.ARCHIVE)}
    assert {r.id for r in chatter[:300]} <= archived  # the early chatter went to the archive
    result = mem.recall("which spelling should the answer use, British or American?", k=3)
    assert result.ids[0] == rule.id
