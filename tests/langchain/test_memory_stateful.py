"""The classic ``OblivionMemory`` through random chain runs: Hypothesis saves turns (a
side sometimes empty), loads with and without messages, clears and lets time pass, on a
real embedded Chroma, and checks after each step that every turn loaded is one saved
since the last clear, as saved; the text block fits the budget; and the engine holds
exactly one memory per turn with anything said.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from oblivion_core import Oblivion
from oblivion_core.testing import HashEmbedder, ManualClock, word_count
from oblivion_langchain import OblivionMemory

DAY = 86_400.0
NS = "ana"
_WORDS = ("I", "am", "vegetarian", "the", "launch", "is", "friday", "noted", "sure", "tea")
SAID = st.one_of(
    st.just(""),
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=10).map(" ".join),
    st.sampled_from(("Always answer in French.", "My favourite colour is blue.")),
)


class ClassicMemoryMachine(RuleBasedStateMachine):
    """One chain's memory, and the turns saved since the last clear."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="oblivion-classic-stateful-"))
        self.clock = ManualClock(1_000.0)
        self.engine: Oblivion
        self.memory: OblivionMemory
        self.turns: list[tuple[str, str]] = []  # (input, output), both sides stripped

    @initialize(budget=st.one_of(st.none(), st.integers(1, 60)), k=st.sampled_from((None, 3)))
    def open_memory(self, budget: int | None, k: int | None) -> None:
        self.engine = Oblivion(
            self.dir, clock=self.clock, embedder=HashEmbedder(dim=64), token_counter=word_count
        )
        self.memory = OblivionMemory(oblivion=self.engine, namespace=NS, token_budget=budget, k=k)

    def teardown(self) -> None:
        if hasattr(self, "engine"):
            self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(user=SAID, answer=SAID)
    def save_context(self, user: str, answer: str) -> None:
        self.memory.save_context({"input": user}, {"output": answer})
        if user or answer:  # a turn with nothing said is not stored
            self.turns.append((user, answer))

    @rule()
    def clear(self) -> None:
        self.memory.clear()
        self.turns = []

    @rule(days=st.floats(0.0, 60.0))
    def time_passes(self, days: float) -> None:
        self.clock.advance(days * DAY)

    @rule(query=SAID.filter(bool))
    def load_text(self, query: str) -> None:
        self.memory.return_messages = False
        block = self.memory.load_memory_variables({"input": query})["history"]
        if self.memory.token_budget is not None:
            assert word_count(block) <= self.memory.token_budget
        saved = {"\n".join(self._lines(turn)) for turn in self.turns}
        for entry in filter(None, block.split("\n- ")):
            turn = entry.removeprefix("- ").replace("\n  ", "\n")
            assert turn in saved, f"loaded a turn never saved: {turn!r}"

    @rule(query=SAID.filter(bool))
    def load_messages(self, query: str) -> None:
        self.memory.return_messages = True
        messages = self.memory.load_memory_variables({"input": query})["history"]
        assert not any(isinstance(m, SystemMessage) for m in messages)  # all saved here
        sides = {("human", u) for u, _ in self.turns} | {("ai", a) for _, a in self.turns}
        for m in messages:
            assert isinstance(m, HumanMessage | AIMessage) and m.content, m
            assert (m.type, m.content) in sides, m

    @invariant()
    def one_memory_per_turn(self) -> None:
        if NS not in self.engine.namespaces():
            assert not self.turns
            return
        stored = sorted(r.text for r in self.engine.records(namespace=NS))
        assert stored == sorted("\n".join(self._lines(turn)) for turn in self.turns)

    @staticmethod
    def _lines(turn: tuple[str, str]) -> list[str]:
        user, answer = turn
        return [f"{p}: {said}" for p, said in (("Human", user), ("AI", answer)) if said]


ClassicMemoryMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestClassicMemoryMachine = ClassicMemoryMachine.TestCase
