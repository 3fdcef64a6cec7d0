"""``OblivionMemoryMiddleware`` in a ``create_agent`` agent through random runs.

Hypothesis drives runs for three users (one of them in the engine's default namespace)
in two conversation threads each, sync and async, answered directly, after a tool
call, or by a ``return_direct`` tool, with answers that echo a recalled memory or not.
Between runs the embedder goes down and comes back, waiting turns are flushed, turns
are forgotten, time passes, tiers are maintained, and the store is closed and opened
again under a new middleware. A real embedded Chroma on disk holds the memories.

After each run it checks that every model call of the run saw the same memory block,
none while the embedder was down, within the token budget, and only memories of the
run's own user; that the conversation history holds no memory block; and that a memory
the answer echoed got its used boost. After every step: each user's turns are stored
once, in the order they were asked, each in its own namespace, and the turns that could
not be stored wait, in order, until the embedder is back.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _lc_helpers import ScriptedChatModel, memory_block
from _outage import SwitchableEmbedder
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from langchain.agents import create_agent
from langchain.tools import tool
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.checkpoint.memory import InMemorySaver

from oblivion_core import EmbeddingError, Oblivion
from oblivion_core.overlap import used_ids
from oblivion_core.testing import ManualClock, word_count
from oblivion_langchain import OblivionMemoryMiddleware
from oblivion_langchain.middleware import DEFAULT_HEADER

DAY = 86_400.0
USERS = ("ana", "ben", None)  # None: no user id, the engine's default namespace
DIRECT_RESULT = "The booking desk says: table confirmed."
_WORDS = ("I", "am", "vegetarian", "the", "launch", "is", "friday", "Lisbon", "tea", "Ana")
SAID = st.one_of(
    st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8).map(" ".join),
    st.sampled_from(
        (
            "Always answer in French.",
            "My favourite colour is blue.",
            "My favourite colour is green.",
            "Remind me to call Ana on Saturday.",
            "   ",  # nothing said: recalls nothing, stores nothing
        )
    ),
)
ANSWERS = st.sampled_from(("Noted.", "Sure, the launch is on friday.", "Tea it is.", ""))


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"Nothing found for {query}."


@tool(return_direct=True)
def book(query: str) -> str:
    """Book a table."""
    return DIRECT_RESULT


def _items(block: str | None) -> list[str]:
    """The memory texts of an injected block, as the middleware rendered them."""
    if not block:
        return []
    body = block.lstrip("\n").removeprefix(DEFAULT_HEADER)
    return [part.replace("\n  ", "\n") for part in body.split("\n- ")[1:]]


class MiddlewareMachine(RuleBasedStateMachine):
    """One agent with the middleware, and the turns each user has asked."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="oblivion-middleware-stateful-"))
        self.clock = ManualClock(1_000.0)
        self.embedder = SwitchableEmbedder()
        self.engine: Oblivion
        self.middleware: OblivionMemoryMiddleware
        self.options: dict[str, Any] = {}
        self.checkpointer = InMemorySaver()  # conversations outlive a reopen
        self.plan: list[Callable[[list[BaseMessage]], AIMessage]] = []
        self.model = ScriptedChatModel(self._replies())
        self.calls = itertools.count()
        self.stored: dict[str, list[str]] = {}  # namespace -> its turns, oldest first
        self.waiting: list[tuple[str, str]] = []  # (namespace, turn) not stored yet

    def _replies(self) -> Iterator[AIMessage]:
        while True:
            yield self.plan.pop(0)(self.model.seen[-1])

    @initialize(
        budget=st.sampled_from((None, 0, 12, 40)),
        k=st.sampled_from((None, 2)),
        policy=st.sampled_from((None, "support-desk")),
        standing=st.sampled_from(("instruction", ())),
    )
    def open_agent(
        self, budget: int | None, k: int | None, policy: str | None, standing: Any
    ) -> None:
        self.options = {"token_budget": budget, "k": k, "policy": policy, "standing": standing}
        self._open()

    def _open(self) -> None:
        self.engine = Oblivion(
            self.dir, clock=self.clock, embedder=self.embedder, token_counter=word_count
        )
        self.middleware = OblivionMemoryMiddleware(self.engine, **self.options)
        self.agent = create_agent(
            self.model,
            tools=[lookup, book],
            system_prompt="You are a helpful assistant.",
            middleware=[self.middleware],
            checkpointer=self.checkpointer,
        )

    def teardown(self) -> None:
        if hasattr(self, "engine"):
            self.engine.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _ns(self, user: str | None) -> str:
        return user if user is not None else self.engine.default_namespace

    def _texts(self, ns: str) -> dict[str, list[str]]:
        """Text -> ids of the namespace's memories (turns and anything else)."""
        if ns not in self.engine.namespaces():
            return {}
        out: dict[str, list[str]] = {}
        for record in self.engine.records(namespace=ns):
            out.setdefault(record.text, []).append(record.id)
        return out

    def _used_count(self, ns: str, ids: list[str]) -> int:
        return sum(e.kind == "used" for i in ids for e in self.engine.history(i, namespace=ns))

    # ================================================================ rules
    @rule(
        user=st.sampled_from(USERS),
        thread=st.sampled_from(("t1", "t2")),
        said=SAID,
        how=st.sampled_from(("answer", "tool", "direct")),
        answer=ANSWERS,
        echo=st.booleans(),
        use_async=st.booleans(),
    )
    def ask(
        self,
        user: str | None,
        thread: str,
        said: str,
        how: str,
        answer: str,
        echo: bool,
        use_async: bool,
    ) -> None:
        ns = self._ns(user)
        before = self._texts(ns)
        used = {text: self._used_count(ns, ids) for text, ids in before.items()} if echo else {}
        down = self.embedder.down
        first_call = len(self.model.seen)
        given: list[str] = []

        def final(messages: list[BaseMessage]) -> AIMessage:
            shown = _items(memory_block(messages))
            text = f"As you told me: {shown[0]}" if echo and shown else answer
            given.append(text)
            return AIMessage(content=text)

        n = next(self.calls)
        if how == "answer":
            self.plan.append(final)
        else:
            name = "lookup" if how == "tool" else "book"
            call = {
                "name": name,
                "args": {"query": "friday"},
                "id": f"call-{n}",
                "type": "tool_call",
            }
            self.plan.append(lambda _: AIMessage(content="", tool_calls=[call]))
            if how == "tool":
                self.plan.append(final)
        configurable = {"thread_id": f"{user}-{thread}"}
        if user is not None:
            configurable["user_id"] = user
        request = {"messages": [{"role": "user", "content": said}]}
        if use_async:
            asyncio.run(self.agent.ainvoke(request, {"configurable": configurable}))
        else:
            self.agent.invoke(request, {"configurable": configurable})
        assert not self.plan, "every planned reply was asked for"

        # the block: the same for every call of the run, none while down, in budget,
        # and only this user's memories
        blocks = {memory_block(m) for m in self.model.seen[first_call:]}
        assert len(blocks) == 1, blocks
        (block,) = blocks
        budget = self.options["token_budget"]
        standing = self.options["standing"]
        # a message with no text recalls the standing memories alone, which needs no
        # embedding (recall("", standing=...)): shown while the embedder is down too
        if budget == 0 or (said.strip() and down) or (not said.strip() and not standing):
            assert block is None
        if block is not None and budget is not None:
            assert word_count(block) <= budget
        shown = _items(block)
        if not said.strip():
            assert all(
                self.engine.get(i, namespace=ns).category == standing
                for text in shown
                for i in before.get(text, [])
            ), shown
        event(f"ask: {how}, {'embedder down' if down else f'{len(shown)} memories shown'}")
        assert all(text in before for text in shown), (shown, list(before))

        # the history never keeps a block
        state = self.agent.get_state({"configurable": configurable}).values
        assert not any(DEFAULT_HEADER in str(m.content) for m in state["messages"])

        # an echoed memory got its used boost (recalled ids of that text)
        reply = given[0].strip() if given else DIRECT_RESULT
        if shown and echo and how != "direct":
            ids = before[shown[0]]
            if used_ids(reply, [(ids[0], shown[0])]):
                assert self._used_count(ns, ids) > used[shown[0]]
                event("ask: the echoed memory got its used boost")

        said = said.strip()
        if said:
            turn = f"user: {said}\nassistant: {reply}" if reply else f"user: {said}"
            self.waiting.append((ns, turn))
            if not down:  # the waiting turns are written first, then this one
                self._waiting_stored()
        self.clock.advance(60.0)

    @rule(down=st.booleans())
    def embedder_goes(self, down: bool) -> None:
        self.embedder.down = down

    @precondition(lambda self: self.waiting)
    @rule()
    def flush(self) -> None:
        if self.embedder.down:  # turns are waiting: flush() raises, they wait still
            with pytest.raises(EmbeddingError):
                self.middleware.flush()
            return
        event(f"flush: {len(self.waiting)} turns waiting")
        assert self.middleware.flush() == 0
        self._waiting_stored()

    def _waiting_stored(self) -> None:
        """The waiting turns are now stored, in order, each in its namespace."""
        for ns, turn in self.waiting:
            self.stored.setdefault(ns, []).append(turn)
        self.waiting = []

    @precondition(lambda self: any(self.stored.values()))
    @rule(data=st.data())
    def forget_a_turn(self, data: st.DataObject) -> None:
        ns = data.draw(st.sampled_from(sorted(n for n, t in self.stored.items() if t)))
        records = [r for r in self.engine.records(namespace=ns) if _is_turn(r)]
        record = data.draw(st.sampled_from(records))
        self.engine.forget(record.id, namespace=ns)
        self.stored[ns].remove(record.text)

    @rule(days=st.floats(0.0, 30.0))
    def time_passes(self, days: float) -> None:
        self.clock.advance(days * DAY)

    @rule()
    def maintain(self) -> None:
        for ns in self.engine.namespaces():
            self.engine.maintain(namespace=ns)

    @precondition(lambda self: not self.waiting)  # waiting turns live in the process only
    @rule()
    def reopen(self) -> None:
        self.engine.close()
        self._open()

    # ================================================================ checks
    @invariant()
    def turns_stored_once_in_order(self) -> None:
        names = set(self.engine.namespaces())
        for ns, turns in self.stored.items():
            got = (
                [r.text for r in self.engine.records(namespace=ns) if _is_turn(r)]
                if ns in names
                else []
            )
            assert got == turns, (ns, got, turns)
        assert self.middleware.pending_turns == len(self.waiting)

    @invariant()
    def policy_applied_where_turns_are(self) -> None:
        policy = self.options.get("policy")
        if policy is None:
            return
        for ns in self.stored:  # a turn of each was stored
            assert self.engine.policy_for(ns).name == policy, ns


def _is_turn(record: Any) -> bool:
    return record.metadata.get("kind") == "turn"


MiddlewareMachine.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestMiddlewareMachine = MiddlewareMachine.TestCase
