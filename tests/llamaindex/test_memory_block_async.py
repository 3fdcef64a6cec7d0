"""``OblivionMemoryBlock`` on an event loop: task ends, busy engines, cancelled reads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from llama_index.core.memory import Memory

import oblivion_llamaindex.memory_block as memory_block
from oblivion_core import Oblivion
from oblivion_core.testing import HashEmbedder, ManualClock
from oblivion_core.testing import memory as new_engine
from oblivion_llamaindex import OblivionMemoryBlock

from ._helpers import assistant, user

ANNA = "Alice's sister Anna lives in Porto."
BOILER = "The boiler code is 1234."


def _recalls(engine: Oblivion, memory_id: str) -> int:
    """How many recall boosts ``memory_id`` got."""
    return sum(e.kind == "recall" for e in engine.history(memory_id))


async def _boosted(engine: Oblivion, memory_id: str, count: int) -> int:
    """``memory_id``'s recall boosts once they reach ``count`` (a worker gives them),
    or after five seconds."""
    for _ in range(500):
        if _recalls(engine, memory_id) >= count:
            break
        await asyncio.sleep(0.01)
    return _recalls(engine, memory_id)


async def test_a_task_ending_while_the_engine_is_busy_leaves_the_loop_free(
    engine: Oblivion,
) -> None:
    """The boost at a task's end waits for a busy engine in a worker thread."""
    engine.remember(ANNA, id="anna")
    block = OblivionMemoryBlock(oblivion=engine)
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block])
    await memory.aput(user("Where does Anna live?"))
    held, release = threading.Event(), threading.Event()
    events: list[str] = []

    def hold_the_engine() -> None:  # another thread's long write, say
        with engine._lock:
            held.set()
            events.append("released" if release.wait(5) else "timed out")

    holder = threading.Thread(target=hold_the_engine, daemon=True)

    async def read() -> None:
        await memory.aget()
        holder.start()
        held.wait(5)

    await asyncio.create_task(read())

    def tick() -> None:  # queued after the task's done callbacks
        events.append("loop ran")
        release.set()

    asyncio.get_running_loop().call_soon(tick)
    await asyncio.to_thread(holder.join, 10)
    assert events == ["loop ran", "released"]
    assert await _boosted(engine, "anna", 1) == 1
    await block.aflush()
    assert _recalls(engine, "anna") == 1


@pytest.mark.parametrize("then", ["worker", "aflush", "next read", "evicted"])
async def test_a_boost_waiting_for_its_tasks_end_is_given_once(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """A read's boost is given once, by its task's worker or whichever comes first."""
    monkeypatch.setattr(memory_block, "_SESSIONS_KEPT", 1)
    engine.remember(ANNA, id="anna")
    block = OblivionMemoryBlock(oblivion=engine)
    memory = Memory.from_defaults(session_id="s", memory_blocks=[block])
    await memory.aput(user("Where does Anna live?"))
    await asyncio.create_task(memory.aget())
    # the task's worker may not have run yet
    if then == "aflush":
        await block.aflush()
    elif then == "next read":
        await asyncio.create_task(memory.aget())  # the same turn: boosted already
    elif then == "evicted":
        # a read after an answer boosts nothing itself
        await block.aget([user("hi"), assistant("Hello!")], session_id="other")
    assert await _boosted(engine, "anna", 1) == 1
    for _ in range(3):
        await asyncio.sleep(0.01)
        await block.aflush()
    assert _recalls(engine, "anna") == 1


class GatedEmbedder(HashEmbedder):
    """Embeds a query only once ``release`` is set, while ``gated``."""

    def __init__(self) -> None:
        super().__init__()
        self.gated = False
        self.entered, self.release = threading.Event(), threading.Event()

    def embed_query(self, text: str) -> np.ndarray:
        if self.gated:
            self.entered.set()
            self.release.wait(timeout=10)
        return super().embed_query(text)


@pytest.fixture
def gated(clock: ManualClock) -> Iterator[tuple[Oblivion, GatedEmbedder]]:
    """An engine whose query embedding waits at a gate, with one memory of each kind."""
    embedder = GatedEmbedder()
    engine = new_engine(clock=clock, embedder=embedder)
    engine.remember(ANNA, id="anna")
    engine.remember(BOILER, id="boiler")
    try:
        yield engine, embedder
    finally:
        embedder.release.set()
        engine.close()


async def test_an_aget_timed_out_before_it_returned_boosts_nothing(
    gated: tuple[Oblivion, GatedEmbedder],
) -> None:
    """An ``aget`` that a timeout cancelled while it recalled delivered nothing to boost."""
    engine, embedder = gated
    block = OblivionMemoryBlock(oblivion=engine, k=1, standing=())
    embedder.gated = True
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(block.aget([user("boiler code?")], session_id="s"), 0.2)
    assert embedder.entered.is_set()
    embedder.gated = False
    embedder.release.set()
    await block.aflush()  # waits for the recall still running in its thread
    assert _recalls(engine, "boiler") == 0
    await block.aget([user("Where does Anna live?")], session_id="s")
    await block.aflush()
    assert (_recalls(engine, "boiler"), _recalls(engine, "anna")) == (0, 1)


async def test_a_task_whose_aget_timed_out_boosts_its_later_reads_at_its_end(
    gated: tuple[Oblivion, GatedEmbedder],
) -> None:
    """A task whose ``aget`` timed out still boosts the reads it made later when it ends."""
    engine, embedder = gated
    block = OblivionMemoryBlock(oblivion=engine, k=1, standing=())

    async def handler() -> str:
        embedder.gated = True
        task = asyncio.current_task()
        assert task is not None
        # a timeout cancelling the caller's own task, as asyncio.timeout and Python
        # 3.12's wait_for do: the task goes on after it
        asyncio.get_running_loop().call_later(0.2, task.cancel)
        with pytest.raises(asyncio.CancelledError):
            await block.aget([user("boiler code?")], session_id="s")
        if hasattr(task, "uncancel"):  # Python 3.11+
            task.uncancel()
        embedder.gated = False
        embedder.release.set()
        return await block.aget([user("Where does Anna live?")], session_id="s")

    assert "Porto" in await asyncio.create_task(handler())
    assert await _boosted(engine, "anna", 1) == 1
    assert _recalls(engine, "boiler") == 0
    await block.aflush()
    assert (_recalls(engine, "boiler"), _recalls(engine, "anna")) == (0, 1)


def test_a_sync_get_then_close_keeps_its_boost(tmp_path: Any) -> None:
    """A worker gave the boost after get() returned; an app closing the engine."""
    path = tmp_path / "store"
    for turn in range(3):
        with Oblivion(path, embedder=HashEmbedder()) as engine:
            if turn == 0:
                engine.remember("Anna lives in Porto.", id="anna", namespace="alice")
            block = OblivionMemoryBlock(oblivion=engine, namespace="alice")
            memory = Memory.from_defaults(
                session_id=f"s{turn}", token_limit=2000, memory_blocks=[block]
            )
            memory.put(user(f"Where does Anna live? ({turn})"))
            assert "Porto" in memory.get()[0].content
    with Oblivion(path, embedder=HashEmbedder()) as engine:
        history = engine.history("anna", namespace="alice")
        assert sum(e.kind == "recall" for e in history) == 3


async def test_an_aput_timed_out_while_the_executor_was_busy_still_stores(
    engine: Oblivion,
) -> None:
    """A cancelled ``aput`` whose write waited for a busy executor stores its messages."""
    # Memory archives a flushed batch before handing it over and never sends it again:
    # asyncio dropped the queued write of a cancelled caller, and the batch was lost
    from concurrent.futures import ThreadPoolExecutor

    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
    block = OblivionMemoryBlock(oblivion=engine, namespace="alice")
    gate = threading.Event()
    busy = asyncio.ensure_future(asyncio.to_thread(gate.wait, 10))  # another session's recall
    await asyncio.sleep(0.05)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(block.aput([user("My cat is called Tom.")], session_id="s"), 0.1)
    gate.set()
    await busy
    for _ in range(500):
        if "alice" in engine.namespaces() and engine.count(namespace="alice"):
            break
        await asyncio.sleep(0.01)
    assert [r.text for r in engine.records(namespace="alice")] == ["My cat is called Tom."]


async def test_a_read_cut_while_memory_truncates_it_boosts_nothing(engine: Oblivion) -> None:
    """A ``Memory.aget`` cut by a timeout in ``atruncate`` delivered nothing to boost."""
    # the block's aget had returned its view, whose boost waits for the task's end: the
    # task ended cancelled, the caller got nothing, and the boost was given all the same
    engine.remember(ANNA, id="anna")
    engine.remember(BOILER, id="boiler")
    block = OblivionMemoryBlock(oblivion=engine, k=2, standing=())
    held, free = threading.Event(), threading.Event()
    question = "Where does Anna live, and what is the boiler code?"

    def other_session() -> None:  # holds the block as a recall embedding its query does
        with block._lock:
            held.set()
            free.wait(10)

    async def read() -> str | None:
        text = await block.aget([user(question)], session_id="s")
        assert "Porto" in text and "1234" in text
        threading.Thread(target=other_session, daemon=True).start()
        held.wait(10)
        return await block.atruncate(text, 1)

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(read(), 0.2)
    free.set()
    await block.aflush()
    await asyncio.sleep(0.2)  # a worker would give a boost by now
    assert (_recalls(engine, "anna"), _recalls(engine, "boiler")) == (0, 0)
    await block.aget([user(question)], session_id="s")
    await block.aflush()
    assert (_recalls(engine, "anna"), _recalls(engine, "boiler")) == (1, 1)


def test_an_aput_cut_as_the_loop_shuts_down_leaves_its_messages_queued(
    engine: Oblivion, caplog: pytest.LogCaptureFixture
) -> None:
    """A cancelled ``aput`` whose write the loop's shutdown cancelled leaves its messages queued."""
    # asyncio.run cancels the tasks left when the app's coroutine returns, the shielded
    # write among them, before the executor ran it: the batch was lost, silently
    from concurrent.futures import ThreadPoolExecutor

    block = OblivionMemoryBlock(oblivion=engine, namespace="alice")

    async def handler() -> None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))
        busy = asyncio.ensure_future(asyncio.to_thread(threading.Event().wait, 0.5))
        await asyncio.sleep(0.05)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(block.aput([user("My cat is called Tom.")]), 0.1)
        assert not busy.done()  # the app returns: the loop shuts down

    asyncio.run(handler())
    assert "not stored yet" in caplog.text
    block.flush()
    assert [r.text for r in engine.records(namespace="alice")] == ["My cat is called Tom."]


async def test_a_cut_truncation_spares_the_other_sessions_the_task_served(
    engine: Oblivion,
) -> None:
    """A truncation cut by a timeout drops the boost of its own view, not of others."""
    # one task serving two sessions in turn (a queue consumer): the cut of the second's
    # truncation cancelled the boost of the first's view, which it had delivered
    engine.remember(ANNA, id="anna")
    engine.remember(BOILER, id="boiler")
    block = OblivionMemoryBlock(oblivion=engine, k=1, standing=())
    held, free = threading.Event(), threading.Event()

    def other_session() -> None:
        with block._lock:
            held.set()
            free.wait(10)

    async def worker() -> None:
        first = await block.aget([user("Where does Anna live?")], session_id="s1")
        assert "Porto" in first
        second = await block.aget([user("What is the boiler code?")], session_id="s2")
        threading.Thread(target=other_session, daemon=True).start()
        held.wait(10)
        task = asyncio.current_task()
        assert task is not None
        # the timeout cancels the task itself, as asyncio.timeout does (Memory.aget's
        # read and truncation run in the caller's task)
        asyncio.get_running_loop().call_later(0.2, task.cancel)
        with pytest.raises(asyncio.CancelledError):
            await block.atruncate(second, 1)
        if hasattr(task, "uncancel"):  # Python 3.11+
            task.uncancel()

    await asyncio.create_task(worker())
    free.set()
    await block.aflush()
    assert await _boosted(engine, "anna", 1) == 1
    assert _recalls(engine, "boiler") == 0


def test_each_caller_of_remember_messages_gets_its_own_ids(engine: Oblivion) -> None:
    """Two threads remembering while the block is busy each get the ids of their messages."""
    # the batch was handed over outside the lock: the first caller in wrote both and got
    # both ids, the other none
    block = OblivionMemoryBlock(oblivion=engine, namespace="alice")
    held, free = threading.Event(), threading.Event()

    def busy() -> None:
        with block._lock:
            held.set()
            free.wait(10)

    threading.Thread(target=busy, daemon=True).start()
    held.wait(10)
    got: dict[str, list[str]] = {}

    def remember(text: str) -> None:
        got[text] = block.remember_messages([user(text)])

    threads = [
        threading.Thread(target=remember, args=(t,)) for t in ("I like tea.", "Call me Dee.")
    ]
    for t in threads:
        t.start()
    free.set()
    for t in threads:
        t.join(10)
    texts = {engine.get(i, namespace="alice").text: t for t, ids in got.items() for i in ids}
    assert texts == {"I like tea.": "I like tea.", "Call me Dee.": "Call me Dee."}
