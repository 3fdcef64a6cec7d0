"""``OblivionMemoryBlock`` inside LlamaIndex's ``Memory`` through random conversations.

Hypothesis puts user and assistant messages into two sessions' ``Memory`` sharing one
block (so ``Memory`` flushes the oldest into it), reads them back with and without an
``input``, takes the embedder down and brings it back, flushes the block, resets a
session, lets time pass, maintains the tiers and reopens the store, on a real embedded
Chroma. After every step it checks that each message ``Memory`` archived whose role the
block remembers is stored once, in the order archived, with its session, or waits in
the block (a write while the embedder was down), never both; and that what the block
shows fits its limit, lists only memories of its namespace, and repeats no message on
screen.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus

from oblivion_core import EmbeddingError, Oblivion
from oblivion_core.testing import ManualClock, word_count
from oblivion_llamaindex import OblivionMemoryBlock
from oblivion_llamaindex._convert import message_text

from ._helpers import DAY, FlakyEmbedder

NS = "ana"
SESSIONS = ("s1", "s2")
_WORDS = ("I", "like", "tea", "the", "launch", "is", "on", "friday", "Lisbon", "briefly")
TEXTS = st.one_of(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=10).map(" ".join),
    st.sampled_from(
        ("Always answer in French", "my favourite colour is blue", "call me Dee", "   ")
    ),
)


class MemoryBlockMachine(RuleBasedStateMachine):
    """Two sessions' ``Memory`` over one block, and what each archived."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="oblivion-block-stateful-"))
        self.clock = ManualClock(1_000.0)
        self.embedder = FlakyEmbedder()
        self.engine: Oblivion
        self.block: OblivionMemoryBlock
        self.memories: dict[str, Memory] = {}
        self.fields: dict[str, Any] = {}
        self.stored: list[tuple[str, str]] = []  # (session, text) remembered, in order
        self.queued: list[tuple[str, str]] = []  # archived, waiting in the block
        self.archived_seen: dict[str, int] = dict.fromkeys(SESSIONS, 0)

    @initialize(
        token_limit=st.sampled_from((0, 12, 40, 400, 400)),
        k=st.sampled_from((None, 2)),
        roles=st.sampled_from((("user",), ("user", "assistant"))),
        memory_limit=st.integers(20, 60),
    )
    def open_memory(self, token_limit: int, k: int | None, roles: Any, memory_limit: int) -> None:
        self.fields = {"token_limit": token_limit, "k": k, "remember_roles": roles}
        self.memory_limit = memory_limit
        self._open(stores=None)

    def _open(self, stores: dict[str, Any] | None) -> None:
        self.engine = Oblivion(
            self.dir, clock=self.clock, embedder=self.embedder, token_counter=word_count
        )
        self.block = OblivionMemoryBlock(oblivion=self.engine, namespace=NS, **self.fields)
        self.memories = {
            s: Memory.from_defaults(
                session_id=s,
                token_limit=self.memory_limit,
                tokenizer_fn=str.split,
                chat_history_token_ratio=0.3,
                token_flush_size=10,
                memory_blocks=[self.block],
                chat_store=stores[s] if stores else None,
            )
            for s in SESSIONS
        }

    def teardown(self) -> None:
        if hasattr(self, "engine"):
            self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _archived(self, session: str) -> list[ChatMessage]:
        return self.memories[session].get_all(status=MessageStatus.ARCHIVED)

    # ================================================================ rules
    @rule(
        session=st.sampled_from(SESSIONS),
        said=st.lists(
            st.tuples(st.sampled_from(("user", "assistant")), TEXTS), min_size=1, max_size=4
        ),
    )
    def put(self, session: str, said: list[tuple[str, str]]) -> None:
        """A few messages at once (``put_messages``)."""
        self._put(session, said)

    @rule(session=st.sampled_from(SESSIONS), asked=TEXTS, answered=TEXTS)
    def chat_turn(self, session: str, asked: str, answered: str) -> None:
        """A chat loop's turn: the user's message, then the answer, one by one."""
        self._put(session, [("user", asked)])
        self._put(session, [("assistant", answered)])

    def _put(self, session: str, said: list[tuple[str, str]]) -> None:
        down = self.embedder.down
        try:
            self.memories[session].put_messages(
                [ChatMessage(role=MessageRole(role), content=text) for role, text in said]
            )
            failed = False
        except EmbeddingError:
            assert down, "a write failed with the embedder up"
            failed = True
        archived = self._archived(session)
        new = archived[self.archived_seen[session] :]
        self.archived_seen[session] = len(archived)
        kept = [
            (session, message_text(m))
            for m in new
            if m.role.value in self.fields["remember_roles"] and message_text(m).strip()
        ]
        if new:  # the block was handed a batch: it writes what waits, then the batch
            if failed or down:
                assert failed or not (self.queued or kept), "nothing raised with a write due"
                self.queued += kept
            else:
                self.stored += self.queued + kept
                self.queued = []
            event(f"put: {len(new)} archived, {len(kept)} kept, {'down' if down else 'up'}")
        else:
            assert not failed
        self.clock.advance(60.0)

    @precondition(lambda self: NS in self.engine.namespaces())  # something to show
    @rule(session=st.sampled_from(SESSIONS), given=st.one_of(st.none(), TEXTS))
    def get(self, session: str, given: str | None) -> None:
        memory = self.memories[session]
        on_screen = memory.get_all(status=MessageStatus.ACTIVE)
        known = {r.text for r in self.engine.records(namespace=NS)}
        try:
            messages = memory.get(input=given)
        except EmbeddingError:
            assert self.embedder.down
            return
        shown = _shown(messages, self.block.name)
        event(f"get: {len(shown)} memories shown")
        visible = {message_text(m) for m in on_screen} | ({given} if given else set())
        for text in shown:
            assert text in known, (text, known)
            assert text not in visible, text
        if shown:
            assert word_count("\n".join(f"- {t}" for t in shown)) <= self.fields["token_limit"]

    @rule(down=st.booleans())
    def embedder_goes(self, down: bool) -> None:
        self.embedder.down = down

    @precondition(lambda self: self.queued)
    @rule()
    def flush(self) -> None:
        if self.embedder.down:  # messages are waiting: flush() raises, they wait still
            with pytest.raises(EmbeddingError):
                self.block.flush()
            return
        assert len(self.block.flush()) == len(self.queued)
        self.stored += self.queued
        self.queued = []

    @rule(session=st.sampled_from(SESSIONS))
    def reset(self, session: str) -> None:
        """The session's history goes; what the block remembered stays."""
        self.memories[session].reset()
        self.archived_seen[session] = 0

    @rule(days=st.floats(0.0, 30.0))
    def time_passes(self, days: float) -> None:
        self.clock.advance(days * DAY)

    @precondition(lambda self: NS in self.engine.namespaces())
    @rule()
    def maintain(self) -> None:
        self.engine.maintain(namespace=NS)

    @precondition(lambda self: not self.queued)  # waiting messages live in the process only
    @rule()
    def reopen(self) -> None:
        stores = {s: m.sql_store for s, m in self.memories.items()}
        self.engine.close()
        self._open(stores)

    # ================================================================ checks
    @invariant()
    def archived_messages_stored_once_in_order(self) -> None:
        records = self.engine.records(namespace=NS) if NS in self.engine.namespaces() else []
        got = [(r.metadata.get("session_id"), r.text) for r in records if "role" in r.metadata]
        assert got == self.stored
        assert [text for text, _ in self.block._unsaved] == [text for _, text in self.queued]


def _shown(messages: list[ChatMessage], name: str) -> list[str]:
    """The memory texts the block put into ``Memory.get``'s system message."""
    system = next((m for m in messages if m.role == MessageRole.SYSTEM), None)
    if system is None:
        return []
    text = message_text(system)
    start, end = text.find(f"<{name}>"), text.find(f"</{name}>")
    if start < 0 or end < 0:
        return []
    body = text[start + len(name) + 2 : end].strip()
    return [part.replace("\n  ", "\n") for part in ("\n" + body).split("\n- ")[1:]]


MemoryBlockMachine.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestMemoryBlockMachine = MemoryBlockMachine.TestCase
