"""OblivionMemory through random conversations: Hypothesis puts, sets, resets, reads and
lets time pass, on a real embedded Chroma, and checks after each step what a LlamaIndex
user relies on: ``get_all`` is the conversation as put (as ``ChatMemoryBuffer`` keeps
it), ``get`` fits the token limit and ends with the latest turns in order, every
memory it lists is a message remembered earlier, and each remembered message is stored
once in the engine, whatever ``set`` and ``reset`` did to the short-term history.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory.memory import InsertMethod

from oblivion_core import Oblivion
from oblivion_core.testing import HashEmbedder, ManualClock, word_count
from oblivion_llamaindex import OblivionMemory
from oblivion_llamaindex._convert import message_text

DAY = 86_400.0
_WORDS = ("I", "like", "tea", "the", "launch", "is", "on", "friday", "always", "answer", "briefly")
TEXTS = st.one_of(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12).map(" ".join),
    st.sampled_from(("Always answer in French", "my favourite colour is blue", "call me Dee")),
)
MESSAGES = st.tuples(st.sampled_from(("user", "assistant")), TEXTS)


def _message(role: str, text: str) -> ChatMessage:
    return ChatMessage(role=MessageRole(role), content=text)


class ChatMemoryMachine(RuleBasedStateMachine):
    """One conversation, its model, and the engine under it."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="oblivion-chat-stateful-"))
        self.clock = ManualClock(1_000.0)
        self.engine: Oblivion
        self.memory: OblivionMemory
        self.history: list[tuple[str, str]] = []  # what get_all() must return
        self.remembered: list[str] = []  # every user message put, in order

    @initialize(
        limit=st.integers(4, 80),
        ratio=st.sampled_from((0.3, 0.5, 1.0)),
        insert=st.sampled_from((InsertMethod.SYSTEM, InsertMethod.USER)),
    )
    def open_memory(self, limit: int, ratio: float, insert: InsertMethod) -> None:
        self.engine = Oblivion(
            self.dir, clock=self.clock, embedder=HashEmbedder(dim=64), token_counter=word_count
        )
        self.memory = OblivionMemory(
            oblivion=self.engine,
            namespace="alice",
            token_limit=limit,
            memory_token_ratio=ratio,
            insert_method=insert,
        )

    def teardown(self) -> None:
        if hasattr(self, "engine"):
            self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------ writes
    @rule(message=MESSAGES)
    def put(self, message: tuple[str, str]) -> None:
        self.memory.put(_message(*message))
        self._append([message])

    @rule(messages=st.lists(MESSAGES, max_size=4))
    def put_messages(self, messages: list[tuple[str, str]]) -> None:
        self.memory.put_messages([_message(*m) for m in messages])
        self._append(messages)

    def _append(self, messages: list[tuple[str, str]]) -> None:
        self.history += messages
        self.remembered += [text for role, text in messages if role == "user"]

    @rule(messages=st.lists(MESSAGES, max_size=4))
    def set(self, messages: list[tuple[str, str]]) -> None:
        self.memory.set([_message(*m) for m in messages])  # remembers nothing
        self.history = list(messages)

    @rule()
    def reset(self) -> None:
        self.memory.reset()  # the long-term memories stay
        self.history = []

    @rule(days=st.floats(0.0, 90.0))
    def time_passes(self, days: float) -> None:
        self.clock.advance(days * DAY)

    # ------------------------------------------------------------------ reads
    @rule(
        query=st.one_of(st.none(), TEXTS),
        initial=st.integers(0, 4),
    )
    def get(self, query: str | None, initial: int) -> None:
        limit = self.memory.token_limit
        initial = min(initial, limit)
        out = self.memory.get(input=query, initial_token_count=initial)
        available = limit - initial
        texts = [message_text(m) for m in out]
        cost = sum(word_count(t) for t in texts)
        turns = self.history
        if cost > available:  # only the latest message, longer than the whole limit
            assert [(m.role.value, t) for m, t in zip(out, texts, strict=True)] == turns[-1:]
            return
        header = self.memory.memory_header
        listed: list[str] = []
        messages = [(m.role.value, t) for m, t in zip(out, texts, strict=True)]
        if messages and messages[0][0] == "system" and messages[0][1].startswith(header):
            listed = messages.pop(0)[1].split("\n")[1:]
        else:  # InsertMethod.USER: the block opens the latest user message of the window
            for i in range(len(messages) - 1, -1, -1):
                role, text = messages[i]
                if role == "user" and text.startswith(header):
                    # its text blocks read as one: the block's lines, then the message's
                    lines = text.split("\n")[1:]
                    n = next(j for j, line in enumerate(lines) if not line.startswith("- "))
                    listed = lines[:n]
                    messages[i] = (role, "\n".join(lines[n:]))
                    break
        # the turns are the newest of the conversation, in order
        assert messages == turns[len(turns) - len(messages) :]
        for line in listed:
            assert line.startswith("- ") and line[2:] in self.remembered, line

    @invariant()
    def the_conversation_is_kept_as_put(self) -> None:
        got = [(m.role.value, message_text(m)) for m in self.memory.get_all()]
        assert got == self.history

    @invariant()
    def each_user_message_is_remembered_once(self) -> None:
        self.memory.flush()
        if "alice" not in self.engine.namespaces():
            assert not self.remembered
            return
        stored = sorted(r.text for r in self.engine.records(namespace="alice"))
        assert stored == sorted(self.remembered)


ChatMemoryMachine.TestCase.settings = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestChatMemoryMachine = ChatMemoryMachine.TestCase
