"""A long-term memory block for LlamaIndex's ``Memory``, backed by Oblivion."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock

from oblivion_core.budget import count_tokens, render
from oblivion_core.engine import Oblivion
from oblivion_core.errors import InvalidInputError, UnknownNamespaceError
from oblivion_core.overlap import used_ids
from oblivion_core.recall import RecalledItem
from oblivion_core.shown import reinforce_shown
from oblivion_core.widen import besides, recall_besides
from oblivion_llamaindex._convert import (
    ItemCount,
    Namespace,
    Roles,
    Standing,
    TokenLimit,
    calls_tools,
    check_limit,
    check_messages,
    is_answer,
    message_text,
    query_text,
    role,
)
from oblivion_llamaindex._engine import (
    RESTORED_HINT,
    build_with_engine,
    check_fields,
    check_oblivion,
    remember_queued,
    restore_private,
)

logger = logging.getLogger("oblivion_llamaindex")

#: Rendered blocks remembered for :meth:`OblivionMemoryBlock.atruncate`.
_RENDER_CACHE = 32
#: Turns remembered per session as already boosted.
_TURNS_KEPT = 4
#: Sessions whose turns, last view and last answer the block remembers (the most
#: recently read): a ``Memory`` made per conversation brings a new session id each time.
_SESSIONS_KEPT = 1024


class OblivionMemoryBlock(BaseMemoryBlock[str]):
    """Decaying long-term memory for ``Memory.from_defaults(memory_blocks=[...])``.

    * ``aput`` (called with the messages ``Memory`` flushes out of its short-term
      queue) remembers the text of each message whose role is in ``remember_roles``,
      with ``role`` and ``session_id`` as metadata; the category is inferred from the
      text unless ``category`` is set. A message the engine refuses (e.g. longer than
      ``policy.max_text_chars``) is skipped with a logged warning, not raised: ``Memory``
      has already archived the batch, and the others are still remembered. When the
      write fails otherwise (the embedder times out), the error is raised and the
      messages not stored stay queued in the block; the next ``aput`` (or
      :meth:`flush`) writes them.
    * ``aget`` recalls what is relevant to the latest ``retrieval_context_window``
      messages and returns it as a bulleted list that fits ``token_limit`` tokens as a
      whole (counted by the engine's token counter), leaving out memories whose text is
      one of the messages given (still on screen; the recall is asked again for as many
      more, so they do not take the places of others). The memories delivered get the
      recall boost, once per turn: agents call ``aget`` several times per turn, and a
      memory is boosted by the turn's first call that delivers it. ``Memory`` may
      truncate the content after ``aget`` returns (see ``atruncate``), so the boost
      waits until the read is over: when the asyncio task that called ``aget`` ends
      (the sync ``Memory.get`` and agents' workflow steps run it in their own task;
      given then by a worker thread, so the event loop never waits for the engine),
      at the session's next ``aget``, or at :meth:`flush` (call it when a
      conversation ends in a long-running task, or to have the boosts of tasks that
      ended given before it returns); memories truncated away get none, and so do
      those of an ``aget`` cancelled (a timeout) before it returned.
      A view whose latest message is the assistant's answer (text, no tool call)
      boosts nothing: agents read the memory once more after answering
      (``parse_agent_output``), and that read never reaches the LLM. A turn is the
      latest user message, told apart from a repeat of it by the messages around it:
      ``Memory`` only appends messages and flushes the oldest out, so a view with more
      messages before it, or other ones, or fewer after it, is a new turn (the same
      opening message after ``Memory.reset()`` once a later view showed the turn go
      on), while the same turn after its earlier messages were flushed (the user
      message too) is not. A copy of it that an agent appends as ``input`` after its
      tool calls (only tool calls and results between) is the same turn, and the last
      few turns of each session are remembered, so a call returning to an earlier view
      of the turn does not boost again (for the newest 1,024 sessions read: one older
      than those that comes back may give its last turn's and answer's boosts once
      more). After ``Memory.reset()``, a conversation whose
      messages so far are exactly those of the last view before the reset cannot be
      told from that view read again, and is not boosted again.
      When a later ``aget`` sees the assistant's answer to that turn, the memories it
      was given that the answer echoes (:func:`oblivion_core.overlap.used_ids`) get
      the larger "used" boost, once per answer (the same text answering another turn
      is another answer).
    * ``atruncate`` (called by ``Memory`` when the whole context is over its limit, for
      blocks with ``priority > 0``) drops the memories with the *lowest activation*
      first, not the last lines. (When ``Memory`` then drops the rest of the block too,
      which it does without telling the block, those memories still count as delivered.)

    Memories are kept per engine ``namespace``, not per ``Memory`` session: recall finds
    what any session of the namespace remembered (``session_id`` is only stored as
    metadata). Give each user their own namespace, as in the example.

    Example::

        from llama_index.core.memory import Memory
        from oblivion_core import Oblivion
        from oblivion_llamaindex import OblivionMemoryBlock

        block = OblivionMemoryBlock(
            oblivion=Oblivion("./memory"), namespace="alice", token_limit=400
        )
        memory = Memory.from_defaults(
            session_id="alice", token_limit=2000, memory_blocks=[block]
        )
        memory.put_messages(chat_turns)          # old turns flow into the block
        messages = memory.get()                  # recalled memories in the system message

    Args:
        oblivion: The engine (shareable).
        name: Block name (the tag ``Memory`` wraps its content in).
        token_limit: Tokens the block's content may use (>= 0).
        k: At most this many memories (``None``: ``policy.default_k``).
        namespace: Engine namespace (``None``: the engine's default).
        retrieval_context_window: How many of the latest messages form the query.
        remember_roles: Roles whose messages are remembered (default: user only;
            assistant turns are derived from memories and would echo them back).
        category: Category for remembered messages (``None``: inferred per text).
        importance: Importance for remembered messages (``None``: scored per text).
        deep: Archive search: ``True`` always, ``False`` never, ``None`` engine's gate.
        standing: Categories whose current memories are shown whatever the query
            (``Oblivion.recall``'s ``standing``; default ``("instruction",)``: "always
            answer in British English" holds in every turn). At most half of ``k``'s
            places; ``()`` for none.
        feedback: Boost the memories listed and give "used" boosts.
        priority: ``Memory``'s truncation priority (0 never truncates this block).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    name: str = Field(default="long_term_memory", description="The name of the block.")
    description: str | None = Field(
        default="Memories from earlier conversations, ranked by relevance and activation.",
        description="A description of the memory block.",
    )
    priority: int = Field(
        default=1, description="Truncation priority (0 = never truncate, higher = later)."
    )
    token_limit: TokenLimit = Field(default=512, description="Tokens the block's content may use.")
    k: ItemCount = Field(default=None, description="At most this many memories.")
    namespace: Namespace = Field(default=None, description="Engine namespace.")
    retrieval_context_window: int = Field(
        default=1, ge=1, description="How many of the latest messages form the query."
    )
    remember_roles: Roles = Field(
        default=("user",), description="Roles whose messages are remembered."
    )
    category: str | None = Field(default=None, description="Category (None: inferred).")
    importance: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Importance (None: scored)."
    )
    deep: bool | None = Field(default=None, description="Archive search override.")
    standing: Standing = Field(
        default=("instruction",),
        description="Categories shown whatever the query (recall's standing=); () for none.",
    )
    feedback: bool = Field(default=True, description="Boost listed and used memories.")

    _oblivion: Oblivion | None = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)
    _rendered: OrderedDict[str, list[RecalledItem]] = PrivateAttr(default_factory=OrderedDict)
    _shown: dict[str, list[tuple[str, str]]] = PrivateAttr(default_factory=dict)
    _answered: dict[str, tuple[_Turn | None, str]] = PrivateAttr(default_factory=dict)
    _turns: dict[str, list[_Turn]] = PrivateAttr(default_factory=dict)
    _pending: dict[str, _View] = PrivateAttr(default_factory=dict)
    _watched: weakref.WeakSet[asyncio.Task[Any]] = PrivateAttr(default_factory=weakref.WeakSet)
    # Tasks that ended, their views waiting for a worker thread to settle them; the lock
    # guards only this list and ``_draining`` (whether a worker is on its way), so the
    # event loop never waits for it.
    _handoff: Any = PrivateAttr(default_factory=threading.Lock)
    _ended: list[asyncio.Task[Any]] = PrivateAttr(default_factory=list)
    _draining: bool = PrivateAttr(default=False)
    _unsaved: list[tuple[str, dict[str, Any]]] = PrivateAttr(default_factory=list)
    # batches handed over and not yet taken into ``_unsaved`` (appended on the event
    # loop without the lock, taken by the next write or flush)
    _incoming: deque[list[tuple[str, dict[str, Any]]]] = PrivateAttr(default_factory=deque)

    def __init__(self, oblivion: Oblivion, **data: Any) -> None:
        checked = check_oblivion(oblivion, "OblivionMemoryBlock")
        check_fields(type(self), data, "OblivionMemoryBlock")
        super().__init__(**data)
        self._oblivion = checked

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the engine and the lock, as the package's other adapters are
        pickled (LlamaIndex components drop them): an unpicklable block makes
        ``Memory``'s pickling delete ``memory_blocks`` from the live ``Memory``."""
        state = super().__getstate__()
        private = dict(state.get("__pydantic_private__") or {})
        private.pop("_oblivion", None)
        private.pop("_lock", None)
        for name in ("_watched", "_handoff", "_ended", "_draining"):
            private.pop(name, None)
        state["__pydantic_private__"] = private
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        restore_private(self)

    @classmethod
    def from_defaults(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        oblivion: Oblivion | None = None,
        embed_model: BaseEmbedding | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        **fields: Any,
    ) -> OblivionMemoryBlock:
        """Open (or create) a store at ``path`` and use it as a memory block.

        Args:
            path: Store directory (``None``: in memory). Not with ``oblivion``.
            oblivion: Use this engine instead of opening one.
            embed_model: Any LlamaIndex ``BaseEmbedding`` (``None``: local MiniLM).
            engine_kwargs: More :class:`Oblivion` arguments (``policy``, ``clock``, ...).
            **fields: Block settings (``token_limit``, ``namespace``, ...).
        """
        return build_with_engine(
            path,
            oblivion=oblivion,
            embed_model=embed_model,
            engine_kwargs=engine_kwargs,
            make=lambda engine: cls(oblivion=engine, **fields),
        )

    @property
    def oblivion(self) -> Oblivion:
        """The engine behind this block."""
        if self._oblivion is None:
            raise InvalidInputError(
                "this OblivionMemoryBlock has no engine (it was deserialised); construct "
                "it with oblivion=Oblivion(path)" + RESTORED_HINT
            )
        return self._oblivion

    # ------------------------------------------------------------------ reading
    async def _aget(
        self,
        messages: list[ChatMessage] | None = None,
        session_id: str | None = None,
        **block_kwargs: Any,
    ) -> str:
        checked = check_messages(messages if messages is not None else [], "aget()")
        task = _current_task()
        call = _Call()
        try:
            text, watch = await asyncio.to_thread(self._recall, checked, session_id, task, call)
        except asyncio.CancelledError:
            # Cancelled (a timeout) before returning: nothing was delivered. The recall,
            # which may still run in its thread, leaves no view to boost, or one its
            # settling drops; the task it may have begun watching (a caller cancelled
            # by asyncio.timeout goes on) is settled when it ends.
            call.cancelled = True
            if task is not None:
                task.add_done_callback(self._task_done)
            raise
        if watch and task is not None:
            # Memory.aget may still truncate the content: the boost waits for the task
            task.add_done_callback(self._task_done)
        return text

    def recall_block(self, messages: Sequence[ChatMessage], session_id: str | None = None) -> str:
        """The block's content for ``messages`` (what ``aget`` returns), synchronously.

        The recall boost of the memories listed waits, as ``aget``'s does, for the
        session's next ``recall_block``/``aget`` or :meth:`flush` (``truncate`` may cut
        some of them first).

        Args:
            messages: The conversation so far, oldest first.
            session_id: Keeps "used" feedback of concurrent sessions apart.
        """
        messages = check_messages(messages, "recall_block()")
        return self._recall(messages, session_id, None)[0]

    def _recall(
        self,
        messages: list[ChatMessage],
        session_id: str | None,
        task: asyncio.Task[Any] | None,
        call: _Call | None = None,
    ) -> tuple[str, bool]:
        """``(content, watch)``: the block's content, and whether ``task`` (that of the
        ``Memory.aget`` reading it, if any) is new to watch for the boost it waits for.
        ``call`` is the ``aget`` asking (``None``: a synchronous read); once cancelled,
        its view waits for no boost."""
        engine = self.oblivion
        key = session_id or ""
        with self._lock:
            # The session's previous view was delivered (and truncated) by now.
            self._settle(key)
            seen = self._turns.pop(key, None)  # back in as the newest session
            if not isinstance(seen, list):  # new session (or one pickled as one turn)
                seen = []
            self._turns[key] = seen
            self._forget_old_sessions()
            if self.feedback:
                self._feedback(messages, key)
            query = query_text(messages, self.retrieval_context_window)
            # no text to query (images only): the standing memories alone, as recall gives
            if (not query.strip() and not self.standing) or self.token_limit == 0:
                self._shown[key] = []
                return "", False
            # Agents call aget several times per turn: a memory is boosted once per turn,
            # by the first call that shows it.
            turn = _current_turn(messages, seen)
            visible = {message_text(m) for m in messages}
            try:
                policy = engine.policy_for(self.namespace)
                k = self.k if self.k is not None else policy.default_k
                result = recall_besides(
                    lambda budget, n: engine.recall(
                        query,
                        token_budget=budget,
                        k=n,
                        namespace=self.namespace,
                        deep=self.deep,
                        feedback=False,
                        standing=self.standing,
                    ),
                    self.token_limit,
                    k,
                    policy.per_item_tokens,
                    visible.__contains__,
                )
            except UnknownNamespaceError:
                self._shown[key] = []
                return "", False
            items = besides(result.items, visible.__contains__)[:k]
            text, listed = render(
                [it.text for it in items], counter=engine.token_counter, budget=self.token_limit
            )
            shown = [items[i] for i in listed]
            self._cache(text, shown)
            if messages and is_answer(messages[-1]):
                # The view after the answer (agents read once more after answering):
                # no LLM call follows it, so it is neither boosted nor matched against
                # a later answer.
                self._shown[key] = []
                return text, False
            if call is not None and call.cancelled:  # its aget will not return it
                self._shown[key] = []
                return text, False
            self._shown[key] = [(it.id, it.text) for it in shown]
            watch = False
            if self.feedback and shown:
                self._pending[key] = _View(turn, text, shown, task, call)
                if task is not None and task not in self._watched:
                    self._watched.add(task)
                    watch = True
            return text, watch

    def _forget_old_sessions(self) -> None:
        """Drop what the block holds of the sessions read least recently past
        :data:`_SESSIONS_KEPT` (their pending boost given first)."""
        while len(self._turns) > _SESSIONS_KEPT:
            old = next(iter(self._turns))
            self._settle(old)
            for held in (self._turns, self._answered, self._shown):
                held.pop(old, None)

    def _settle(self, key: str) -> None:
        """Give the recall boost of the session's last view to the memories delivered
        (what ``truncate`` left of it), once per turn."""
        view = self._pending.pop(key, None)
        if view is None or not self.feedback:
            return
        if view.call is not None and view.call.cancelled:
            # its aget was cancelled before returning the view: nothing was delivered,
            # nor is there anything for the answer to have used
            self._shown[key] = []
            return
        fresh = [it for it in view.items if it.id not in view.turn.boosted]
        if fresh:
            view.turn.boosted.update(it.id for it in fresh)
            reinforce_shown(self.oblivion, fresh, self.namespace)

    def _settle_ready(self, current: asyncio.Task[Any] | None) -> None:
        """Settle the views whose reading is over: read synchronously, by ``current``
        (the caller's own task) or by a task that has ended."""
        for key, view in list(self._pending.items()):
            task = view.task
            if task is None or task is current or task.done():
                self._settle(key)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        """A task that read views has ended (its ``Memory.aget`` calls and truncations
        with it): their boosts are given here when the block and the engine are free,
        else by a worker thread. This runs on the event loop, which must not wait for
        the block's lock (a recall holds it while its query embeds) nor for the
        engine's (another thread, a bulk import say, may hold it for long)."""
        with self._handoff:
            self._ended.append(task)
            if self._draining:
                return
            self._draining = True
        # at once when neither this block nor the engine is in use, so it cannot wait: a
        # sync Memory.get() then returns with its boost given (an app closing the engine
        # right after lost it to a worker that came too late)
        if self._lock.acquire(blocking=False):
            try:
                with self.oblivion.exclusive(timeout=0) as held:
                    if held:
                        self._settle_ended()
                        return
            except Exception as exc:  # a closed engine: nobody to raise to
                logger.warning("OblivionMemoryBlock: a recall boost was not given: %s", exc)
                self._stop_draining()
                return
            finally:
                self._lock.release()
        try:
            task.get_loop().run_in_executor(None, self._settle_ended)
            return
        except RuntimeError:  # the loop is closing: its executor takes no more work
            pass
        try:
            threading.Thread(target=self._settle_ended, daemon=True).start()
        except RuntimeError:  # the interpreter is exiting
            self._stop_draining()

    def _stop_draining(self) -> None:
        """Let go of the ended tasks no worker will settle: their views wait (the tasks
        are over) for the session's next read or flush."""
        with self._handoff:
            self._ended.clear()
            self._draining = False

    def _settle_ended(self) -> None:
        """Settle the views of the tasks that ended, until none is left (a task ending
        meanwhile is settled here too): in a worker thread, or at once by
        :meth:`_task_done` when nothing is in use."""
        while True:
            with self._handoff:
                ended = list(self._ended)
                self._ended.clear()
                if not ended:
                    self._draining = False
                    return
            self._settle_tasks(ended)

    def _settle_tasks(self, tasks: list[asyncio.Task[Any]]) -> None:
        """Give the boosts of the views read by ``tasks`` (which have ended), once:
        those another path settled first (the session's next read, a flush) are gone."""
        try:
            with self._lock:
                for task in tasks:
                    self._watched.discard(task)
                ended = set(tasks)
                for key in [k for k, v in self._pending.items() if v.task in ended]:
                    self._settle(key)
        except Exception as exc:  # a worker: nobody to raise to
            logger.warning("OblivionMemoryBlock: a recall boost was not given: %s", exc)

    def _feedback(self, messages: Sequence[ChatMessage], key: str) -> None:
        """Give the "used" boost for the last answer, once per answer: an answer with
        the text of the previous one is a new answer when it answers another turn."""
        at = next(
            (i for i in range(len(messages) - 1, -1, -1) if role(messages[i]) == "assistant"), -1
        )
        answer = message_text(messages[at]) if at >= 0 else ""
        if not answer.strip():
            return
        turn = _turn(messages[: at + 1])
        last = self._answered.get(key)
        old_turn, old_answer = last if isinstance(last, tuple) else (None, last)
        if old_answer == answer and (old_turn is None or turn is None or old_turn.same(turn)):
            return
        self._answered[key] = (turn, answer)
        shown = self._shown.pop(key, [])
        used = used_ids(answer, shown)
        if used:
            self.oblivion.mark_used(used, namespace=self.namespace, skip_missing=True)

    def _cache(self, text: str, items: list[RecalledItem]) -> None:
        if not text:
            return
        self._rendered[text] = items
        self._rendered.move_to_end(text)
        while len(self._rendered) > _RENDER_CACHE:
            self._rendered.popitem(last=False)

    # ------------------------------------------------------------------ truncation
    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Shrink ``content`` by at least ``tokens_to_truncate`` tokens, lowest activation first.

        Memories are dropped in order of rising activation (ties: lower score first);
        the rest keep their ranked order. Content this block did not render is dropped
        whole, as the base class does.

        Returns:
            The shorter content, or ``None`` when nothing is left.

        Raises:
            InvalidInputError: ``tokens_to_truncate`` is negative or not an int.
        """
        # in a worker thread: the block's lock may be held by a recall of another
        # session for as long as its query takes to embed
        task = _current_task()
        # the views of this content (read before the thread may cut their text): a task
        # serving several sessions delivered the others
        calls = [
            v.call
            for v in list(self._pending.values())
            if task is not None and v.task is task and v.text == content and v.call is not None
        ]
        try:
            return await asyncio.to_thread(self._truncate, content, tokens_to_truncate, task)
        except asyncio.CancelledError:
            # Memory.aget cut by a timeout here, after this block's aget returned: the
            # caller gets nothing, so these views boost nothing (a flag: no lock taken)
            for call in calls:
                call.cancelled = True
            raise

    def truncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Synchronous :meth:`atruncate`."""
        return self._truncate(content, tokens_to_truncate, None)

    def _truncate(
        self, content: str, tokens_to_truncate: int, task: asyncio.Task[Any] | None
    ) -> str | None:
        """:meth:`truncate`; the memories cut from a view read by ``task`` (any view of
        ``content`` for ``None``) lose the recall boost it waits to give them."""
        cut = check_limit(tokens_to_truncate, "tokens_to_truncate")
        if cut == 0:
            return content or None
        counter = self.oblivion.token_counter
        with self._lock:
            items = self._rendered.get(content) if isinstance(content, str) else None
            if not items:
                if isinstance(content, str):
                    self._delivered(content, "", [], task)
                return None
            target = count_tokens(counter, content) - cut
            keep = list(items)
            drop_order = sorted(keep, key=lambda it: (it.activation, it.score))
            for weakest in drop_order:
                keep.remove(weakest)
                text, listed = render(
                    [it.text for it in keep], counter=counter, budget=max(target, 0)
                )
                if keep and len(listed) == len(keep):
                    self._cache(text, keep)
                    self._delivered(content, text, keep, task)
                    return text
            self._delivered(content, "", [], task)
            return None

    def _delivered(
        self, content: str, text: str, kept: list[RecalledItem], task: asyncio.Task[Any] | None
    ) -> None:
        """``content``, as a session's view waiting for its boost, was cut to ``text``
        (``kept``): only those are boosted, and matched against the answer."""
        ids = {it.id for it in kept}
        for key, view in self._pending.items():
            if view.text != content or (task is not None and view.task not in (None, task)):
                continue
            view.text = text
            view.items = [it for it in view.items if it.id in ids]
            self._shown[key] = [(it.id, it.text) for it in view.items]

    # ------------------------------------------------------------------ writing
    async def aput(
        self,
        messages: list[ChatMessage],
        from_short_term_memory: bool = False,
        session_id: str | None = None,
    ) -> None:
        """Remember ``messages`` (see :meth:`remember_messages`); ``session_id`` is
        stored as their metadata.

        Raises:
            InvalidInputError: ``messages`` is not a list of ``ChatMessage``; nothing is
                stored.
        """
        checked = check_messages(messages, "aput()")
        await super().aput(
            checked, from_short_term_memory=from_short_term_memory, session_id=session_id
        )

    async def _aput(self, messages: list[ChatMessage]) -> None:
        # queued here, on the loop, then written in a thread, shielded: a caller
        # cancelled (a timeout) while the write waited for a thread of the default
        # executor (busy with other sessions' recalls) had asyncio drop it, and Memory,
        # which archived the batch before handing it over, never sends it again. The
        # write goes on; a write cancelled all the same (the loop shutting down) leaves
        # the batch queued for the next write or flush
        self._incoming.append(self._batch(check_messages(messages, "aput()")))
        write = asyncio.ensure_future(asyncio.to_thread(self._write_queued))
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            write.add_done_callback(_told)
            raise

    def remember_messages(self, messages: Sequence[ChatMessage]) -> list[str]:
        """Remember the text of the messages whose role is in ``remember_roles``.

        Messages without text (images, tool calls) are skipped. So is a message whose
        text the engine refuses (e.g. longer than ``policy.max_text_chars``), with a
        warning on the ``oblivion_llamaindex`` logger saying why: ``Memory`` has already
        archived the batch and never retries it, so raising would lose every message
        of it. The others are stored (one engine write when none is refused).

        When the write fails otherwise (the embedder times out, the store is busy), that
        error is raised and the messages not stored stay queued in the block: the next
        ``aput``/``remember_messages`` or :meth:`flush` writes them first, once each
        (``Memory`` archives a flushed batch before handing it over and never sends it
        again).

        Returns:
            The new memory ids (of messages queued by an earlier failed write too).
        """
        batch = self._batch(check_messages(messages, "remember_messages()"))
        with self._lock:
            # after the batches handed over before it, and inside the lock: a caller
            # waiting for it got another thread's ids, and none of its own
            self._take_incoming()
            self._unsaved.extend(batch)
            return self._save()

    def _batch(self, messages: Sequence[ChatMessage]) -> list[tuple[str, dict[str, Any]]]:
        """The texts and metadata to remember of ``messages`` (see :meth:`remember_messages`)."""
        batch: list[tuple[str, dict[str, Any]]] = []
        for message in messages:
            r = role(message)
            text = message_text(message)
            if r not in self.remember_roles or not text.strip():
                continue
            meta: dict[str, Any] = {"role": r}
            session = message.additional_kwargs.get("session_id")
            if isinstance(session, str):
                meta["session_id"] = session
            batch.append((text, meta))
        return batch

    def _take_incoming(self) -> None:
        """Queue the batches ``aput`` handed over, in their order (call with the lock)."""
        while self._incoming:
            self._unsaved.extend(self._incoming.popleft())

    def _write_queued(self) -> list[str]:
        with self._lock:
            return self._save()

    async def aflush(self) -> list[str]:
        """Asynchronous :meth:`flush`."""
        task = _current_task()
        return await asyncio.to_thread(self._flush, task)

    def flush(self) -> list[str]:
        """Write the messages still queued after a failed write (see
        :meth:`remember_messages`) and give the recall boosts still waiting (see the
        class doc) of reads that are over; returns the new memory ids.

        Raises:
            OblivionError: the write failed again; the messages stay queued.
        """
        return self._flush(_current_task())

    def _flush(self, current: asyncio.Task[Any] | None) -> list[str]:
        with self._lock:
            try:
                return self._save()
            finally:
                self._settle_ready(current)

    def _save(self) -> list[str]:
        """Write the queued messages; those not stored stay queued when the write raises."""
        self._take_incoming()
        done = remember_queued(
            self.oblivion,
            self._unsaved,
            None,
            lambda entry: entry[0],
            lambda entry: entry[1],
            category=self.category,
            importance=self.importance,
            namespace=self.namespace,
        )
        if done is None:
            return []
        pending, stored, refused = done
        for index, _, why in refused:
            text, meta = pending[index]
            logger.warning(
                "OblivionMemoryBlock: a %s message (%r%s) was not remembered: %s",
                meta["role"],
                text[:40],
                "..." if len(text) > 40 else "",
                why,
            )
        return stored


#: Messages before and after a turn's user message kept to recognise the turn.
_CONTEXT_KEPT = 8


def _current_task() -> asyncio.Task[Any] | None:
    """The running asyncio task, ``None`` outside one."""
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running event loop
        return None


@dataclass
class _Turn:
    """A turn seen by ``aget``: its user message's text, how many messages came before
    it and fingerprints of the last of them and of the first messages after it (the
    agent's copy of the input left out), and the memories boosted in it."""

    text: str
    before_count: int
    before: tuple[bytes, ...]
    after: tuple[bytes, ...]
    boosted: set[str] = field(default_factory=set)

    def same(self, other: _Turn) -> bool:
        """Whether ``other`` is a later view of this turn. ``Memory`` only appends
        messages and flushes the oldest out, so a later view has no more messages
        before the user message, those it has end the ones seen, and it has at least
        the messages seen after it, the same ones first (a view with fewer, after
        ``Memory.reset()``, is a new conversation asking the same)."""
        if other.text != self.text or other.before_count > self.before_count:
            return False
        m = min(other.before_count, len(self.before), len(other.before))
        if m and other.before[-m:] != self.before[-m:]:
            return False
        if len(other.after) < len(self.after):
            return False
        return other.after[: len(self.after)] == self.after


def _told(write: asyncio.Future[Any]) -> None:
    """The failure of a write whose caller stopped waiting for it, as a warning (its
    messages stay queued for the next write or flush)."""
    why = "its write was cancelled" if write.cancelled() else write.exception()
    if why is not None:
        logger.warning(
            "OblivionMemoryBlock: the messages of a cancelled aput that were not stored "
            "yet stay queued (the next aput or flush() writes them): %s",
            why,
        )


@dataclass(eq=False)
class _Call:
    """One ``aget``: whether it was cancelled before it returned (its content was never
    delivered, so its view boosts nothing)."""

    cancelled: bool = False


@dataclass(eq=False)
class _View:
    """What ``aget`` gave a session: its turn, the content and the memories listed. Their
    recall boost waits until the content is known to be what was delivered (``Memory``
    truncates it after ``aget`` returns), ``task`` being the one reading it (``None``:
    read synchronously; not pickled)."""

    turn: _Turn
    text: str
    items: list[RecalledItem]
    task: asyncio.Task[Any] | None = None
    call: _Call | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "task": None}


def _current_turn(messages: Sequence[ChatMessage], seen: list[_Turn]) -> _Turn:
    """The turn ``messages`` show: one of ``seen`` (the session's latest turns, oldest
    first) when it is a view of it, else a new turn appended to ``seen`` (the last few
    kept). A view without a user message (``Memory`` flushed it) continues the latest
    turn.

    ``Memory`` only appends messages, so a view showing, before its user message, a
    turn seen after the one it matches comes after that later turn: it is a new turn
    (the conversation was reset and asks the same again). The earlier turns a view
    shows learn the messages after them there (the answer, the next question), so a
    view with fewer after ``Memory.reset()`` is a new turn too (:meth:`_Turn.same`).
    """
    turn = _turn(messages)
    if turn is None:
        if seen and isinstance(seen[-1], _Turn):
            return seen[-1]
        turn = _Turn("", 0, (), ())
    turns = [old for old in seen if isinstance(old, _Turn)]
    shown = [_shown_at(messages, turn.before_count, old) for old in turns]
    current = None
    for n in range(len(turns) - 1, -1, -1):
        if turns[n].same(turn) and not any(shown[n + 1 :]):
            current = turns[n]
            break
    if current is None:
        seen.append(turn)
        del seen[:-_TURNS_KEPT]
        current = turn
    elif len(turn.after) > len(current.after):
        current.after = turn.after
    for old, view in zip(turns, shown, strict=True):
        if view is not None and old is not current:
            old.after = view.after
    return current


def _shown_at(messages: Sequence[ChatMessage], end: int, turn: _Turn) -> _Turn | None:
    """A later view of ``turn`` in ``messages``, its user message before ``end`` (the
    latest such), with all the messages after it; ``None`` when there is none."""
    for i in range(min(end, len(messages)) - 1, -1, -1):
        if role(messages[i]) != "user" or message_text(messages[i]) != turn.text:
            continue
        view = _turn_at(messages, i, len(messages))
        if turn.same(view):
            return view
    return None


def _turn(messages: Sequence[ChatMessage]) -> _Turn | None:
    """The current turn: the latest user message (its text and the messages around it);
    ``None`` without a user message.

    A last user message repeating the latest user message before it, with only tool
    calls and tool results in between, is the agent's copy of the turn's input
    (``Memory.aget(input=...)`` appends one after each round of tool calls), not a
    new message: the turn is the original's. An answer in between makes it a new turn.
    """
    users = [i for i, m in enumerate(messages) if role(m) == "user"]
    if not users:
        return None
    i = users[-1]
    end = len(messages)
    if len(users) > 1 and i == len(messages) - 1:
        j = users[-2]
        if message_text(messages[j]) == message_text(messages[i]) and all(
            _tool_step(m) for m in messages[j + 1 : i]
        ):
            i, end = j, i
    return _turn_at(messages, i, end)


def _turn_at(messages: Sequence[ChatMessage], i: int, end: int) -> _Turn:
    """The turn of the user message ``messages[i]``, its messages after it ending at ``end``."""
    return _Turn(
        message_text(messages[i]),
        i,
        tuple(_fingerprint(m) for m in messages[max(i - _CONTEXT_KEPT, 0) : i]),
        tuple(_fingerprint(m) for m in messages[i + 1 : min(end, i + 1 + _CONTEXT_KEPT)]),
    )


def _fingerprint(message: ChatMessage) -> bytes:
    """A short digest of a message's role and text (stable across processes)."""
    data = f"{role(message)}\0{message_text(message)}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=8).digest()


def _tool_step(message: ChatMessage) -> bool:
    """Whether ``message`` is part of an agent's tool use, not an answer: a tool result,
    or an assistant message calling tools (or with no text)."""
    r = role(message)
    if r in ("tool", "function"):
        return True
    if r != "assistant":
        return False
    return calls_tools(message) or not message_text(message).strip()
