"""Chat memory for LlamaIndex chat engines and agents: recent turns plus recalled memories."""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Annotated, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    SerializeAsAny,
    field_serializer,
)
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.memory import InsertMethod
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY, BaseMemory
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore
from pydantic import BeforeValidator

from oblivion_core.budget import count_tokens, pack, render
from oblivion_core.checks import clean_text
from oblivion_core.engine import Oblivion
from oblivion_core.errors import OUTAGES as _OUTAGES
from oblivion_core.errors import (
    InvalidInputError,
    TokenizerError,
    UnknownNamespaceError,
    is_outage,
)
from oblivion_core.overlap import used_ids
from oblivion_core.recall import RecalledItem, RecallResult
from oblivion_core.shown import reinforce_shown, still_current
from oblivion_core.typing import TokenCounter
from oblivion_core.widen import besides, recall_besides
from oblivion_llamaindex._convert import (
    ItemCount,
    Namespace,
    Roles,
    Standing,
    TokenLimit,
    check_limit,
    check_messages,
    is_answer,
    message_text,
    role,
)
from oblivion_llamaindex._engine import (
    RESTORED_HINT,
    build_with_engine,
    check_fields,
    check_oblivion,
    need_engine,
    remember_queued,
    restore_private,
)

logger = logging.getLogger("oblivion_llamaindex")

DEFAULT_TOKEN_LIMIT = 3000
DEFAULT_TOKEN_LIMIT_RATIO = 0.75
DEFAULT_HEADER = "Relevant memories (most relevant first):"

#: Failures of the memory store, the embedder or the tokenizer that a chat turn survives
#: with ``on_error="warn"`` (a Chroma server down, a store locked by another process, the
#: embedding model failing, no tiktoken encoding offline): the same as
#: ``oblivion_langchain``'s ``OUTAGES``, less the lasting ones
#: (:func:`oblivion_core.errors.is_outage`: another embedding model than the store's, a
#: damaged store, another store's collection), which are raised whatever ``on_error``.
OUTAGES = _OUTAGES

#: Seconds between tries of the waiting messages' write while an outage fails it
#: (``on_error="warn"``): the first wait, doubled after each failed try up to the second.
RETRY_SECONDS = (1.0, 30.0)

#: What ``on_error`` says, per failing step, when an outage is first met.
_OUTAGE_NOTES = {
    "recall": "the recall failed, get() returns the recent turns without memories",
    "write": "the messages waiting for the engine could not be stored and stay queued",
    "boost": "the memories' boost was skipped",
    "count": "the token counter failed, get() returns the latest message alone",
}


def _check_on_error(value: object) -> str:
    """``"warn"`` or ``"raise"``; anything else is refused with a clear message."""
    if not isinstance(value, str) or value not in ("warn", "raise"):
        raise InvalidInputError(f'on_error must be "warn" or "raise", got {value!r}')
    return value


#: ``on_error``: checked the same way on construction and on assignment.
OnError = Annotated[str, BeforeValidator(_check_on_error)]


class _TokenList:
    """``tokenizer_fn`` for chat engines, which take ``len(tokenizer_fn(text))``.

    ``on_outage(exc)`` is called when the counter fails for an outage (no tiktoken
    encoding offline): it raises, or returns and the count is 0, which lets the chat
    engine call ``get``, which then returns the latest message alone."""

    def __init__(
        self, counter: TokenCounter, on_outage: Callable[[BaseException], None] | None = None
    ) -> None:
        self._counter = counter
        self._on_outage = on_outage

    def __call__(self, text: str) -> range:
        try:
            return range(count_tokens(self._counter, text))
        except TokenizerError as exc:
            if self._on_outage is None:
                raise
            self._on_outage(exc)
            return range(0)


class OblivionMemory(BaseMemory):
    """Chat memory whose long-term part decays: recent turns plus recalled memories.

    ``get`` returns, within ``token_limit`` tokens (minus the caller's
    ``initial_token_count``), the memories relevant to the latest user message (a
    bulleted block in a system message, or prepended to the latest user message, see
    ``insert_method``), then as many of the most recent turns as fit. Memories may use
    up to ``memory_token_ratio`` of the tokens; the recent turns get the rest. Token
    counts are the engine's token counter applied to each message's text; the total
    never exceeds the limit, except that the latest message alone is returned when it
    is longer than the whole limit (as ``ChatMemoryBuffer`` does, so the LLM reports it).

    ``put`` appends to the short-term history (a LlamaIndex chat store) and remembers
    the message when its role is in ``remember_roles``. The newest message is written
    to the engine right after the next ``get`` recalls (so it does not recall itself)
    or at the next ``put``/``flush``; a text the engine refuses (e.g. longer than
    ``policy.max_text_chars``) is a warning on the ``oblivion_llamaindex`` logger naming
    the message, which stays in the short-term history only (as ``OblivionMemoryBlock``
    does: a pasted log must not cost the user a turn's answer). NULs and lone
    surrogates are read as spaces and ``"?"``.

    When the store, the embedder or the tokenizer fails (:data:`OUTAGES`: a Chroma
    server down, the store locked by another process, the embedding model timing out,
    no tiktoken encoding offline), the chat goes on with ``on_error="warn"`` (the
    default), as ``OblivionMemoryMiddleware`` does: a failed recall makes ``get`` return
    the recent turns alone, without memories, within the same token limit; a failed
    write keeps the messages queued, and a later ``put``/``get``/``set``/``reset``
    writes them, in order, before newer ones (tried again after a wait of 1 s, doubled
    after each failed try up to 30 s: :data:`RETRY_SECONDS`); a failed boost is
    skipped; a token counter that cannot load its encoding makes ``get`` return the
    latest message alone. One
    warning on the ``oblivion_llamaindex`` logger tells when such an outage begins; the
    failures after it are DEBUG lines until the store answers again.
    :attr:`pending_messages` counts the messages waiting (they live in this process
    only); :meth:`flush` writes them, or raises the error whatever ``on_error`` says,
    keeping them queued. With ``on_error="raise"`` the error is raised, the messages
    not stored kept queued; raised from ``put``, ``put_messages``, ``set`` or ``reset``,
    it comes after the call did its own work: no message is lost to it. Errors in what
    the caller passed (a closed engine, a bad argument) are raised either way.

    A memory whose text is still visible among the recent turns is not listed again,
    and does not take the place of another: while the recall returns such repeats and
    fewer than ``k`` others, it is asked again, for as many more memories. The
    memories listed get the recall boost (those hidden as visible turns do not); when
    the assistant's answer is put, the memories it echoes
    (:func:`oblivion_core.overlap.used_ids`) get the larger "used" boost. Repeated
    ``get`` calls for the same user message (agents call it several times per turn)
    reuse one recall, and boost each memory once: when it is first listed. When a
    memory of that recall was forgotten, invalidated, superseded or edited since (by
    an agent's tool, say), the next ``get`` recalls again. A ``get``
    without ``input`` whose latest message is the assistant's answer (text, no tool
    call) boosts nothing: it is the view after the answer (``FunctionAgent`` and
    ``ReActAgent`` read the memory once more after answering, and that read never
    reaches the LLM). Chat engines and agents read with the user's message last, or
    pass it as ``input``.

    ``set`` and ``reset`` change the short-term history only; long-term memories stay
    in the engine (delete them with ``Oblivion.forget``).

    Example::

        from llama_index.core.chat_engine import SimpleChatEngine
        from oblivion_core import Oblivion
        from oblivion_llamaindex import OblivionMemory

        memory = OblivionMemory(
            oblivion=Oblivion("./memory"), namespace="alice", token_limit=1500
        )
        chat = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
        chat.chat("From now on, always answer in British English.")
        chat.chat("How do you spell the colour of the sky?")  # instruction recalled

    Args:
        oblivion: The engine (shareable; one namespace per user is typical).
        token_limit: Tokens ``get`` may return in total (>= 0).
        memory_token_ratio: Largest share of those tokens recalled memories may use.
        k: At most this many memories (``None``: ``policy.default_k``).
        namespace: Engine namespace (``None``: the engine's default).
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
        memory_header: First line of the recalled-memories block.
        insert_method: ``InsertMethod.SYSTEM`` puts the memories in a system message
            before the turns; ``InsertMethod.USER`` prepends them to (a copy of) the
            latest user message. Use ``USER`` with ``ReActAgent``, which drops a
            leading system message in favour of its own prompt.
        chat_store: Where the short-term history lives (default: in process).
        chat_store_key: Key of this conversation in ``chat_store``.
        on_error: ``"warn"`` (default) or ``"raise"``: what a store, embedder or
            tokenizer outage does to a chat turn (see above).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    token_limit: TokenLimit = Field(
        default=DEFAULT_TOKEN_LIMIT, description="Tokens get() may use."
    )
    memory_token_ratio: float = Field(
        default=0.3, gt=0.0, le=1.0, description="Largest share of tokens for memories."
    )
    k: ItemCount = Field(default=None, description="At most this many memories.")
    namespace: Namespace = Field(default=None, description="Engine namespace.")
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
    memory_header: str = Field(default=DEFAULT_HEADER, description="Memory block header.")
    insert_method: InsertMethod = Field(
        default=InsertMethod.SYSTEM,
        description="Where memories go: a system message, or the latest user message.",
    )
    chat_store: SerializeAsAny[BaseChatStore] = Field(default_factory=SimpleChatStore)
    chat_store_key: str = Field(default=DEFAULT_CHAT_STORE_KEY)
    on_error: OnError = Field(
        default="warn",
        description='What a store or embedder outage does: "warn" (go on) or "raise".',
    )

    _oblivion: Oblivion | None = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)
    _unsaved: list[ChatMessage] = PrivateAttr(default_factory=list)
    _shown: list[tuple[str, str]] = PrivateAttr(default_factory=list)
    _last: RecallResult | None = PrivateAttr(default=None)
    _last_query: str | None = PrivateAttr(default=None)
    _boosted: set[str] = PrivateAttr(default_factory=set)
    _limits: tuple[int, int, int] = PrivateAttr(default=(0, 1, 0))
    # the steps failing in the current outage (keys of _OUTAGE_NOTES): one warning when
    # the first fails, the rest at DEBUG until they all work again
    _failing: set[str] = PrivateAttr(default_factory=set)
    # while writes fail for an outage: the next try (time.monotonic()) and the wait
    # before it, doubled on each failure (_save)
    _retry_at: float = PrivateAttr(default=0.0)
    _retry_wait: float = PrivateAttr(default=0.0)

    @field_serializer("insert_method")
    def _insert_method_value(self, value: InsertMethod) -> str:
        """Serialised as its value (``"system"``/``"user"``), so ``to_json`` works and
        ``from_json``/``from_dict`` read it back. Once the chat store holds messages,
        ``to_json``/``to_dict`` fail inside LlamaIndex's own message serialiser with
        llama-index-core 0.14.25 and pydantic 2.14 (``ChatMemoryBuffer`` fails the same
        way); the engine's memories are on disk either way."""
        return value.value

    def __init__(self, oblivion: Oblivion, **data: Any) -> None:
        checked = check_oblivion(oblivion, "OblivionMemory")
        check_fields(type(self), data, "OblivionMemory")
        if "on_error" in data:  # an InvalidInputError, not pydantic's ValidationError
            _check_on_error(data["on_error"])
        super().__init__(**data)
        self._oblivion = checked

    @classmethod
    def class_name(cls) -> str:
        return "OblivionMemory"

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> OblivionMemory:
        """Rebuild from :meth:`to_dict` output; the engine is not serialised, pass it:
        ``OblivionMemory.from_dict(data, oblivion=Oblivion(path))``."""
        from llama_index.core.storage.chat_store.loading import load_chat_store

        need_engine(kwargs, "OblivionMemory")
        data = dict(data)
        if isinstance(data.get("chat_store"), dict):
            data["chat_store"] = load_chat_store(data["chat_store"])
        return super().from_dict(data, **kwargs)

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
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        token_limit: int | None = None,
        **fields: Any,
    ) -> OblivionMemory:
        """Build a memory the way LlamaIndex chat engines do (``memory_cls.from_defaults``).

        Args:
            path: Store directory to open (``None``: in memory). Not with ``oblivion``.
            oblivion: Use this engine instead of opening one.
            embed_model: Any LlamaIndex ``BaseEmbedding`` for a newly opened engine.
            engine_kwargs: More :class:`Oblivion` arguments (``policy``, ``clock``, ...).
            chat_history: Initial short-term history (not written to long-term memory).
            llm: Sizes ``token_limit`` to 75% of its context window when none is given.
            token_limit: Tokens ``get`` may return.
            **fields: Other settings (``namespace``, ``k``, ...).
        """
        if token_limit is None:
            token_limit = (
                int(llm.metadata.context_window * DEFAULT_TOKEN_LIMIT_RATIO)
                if llm is not None
                else DEFAULT_TOKEN_LIMIT
            )
        history = check_messages(chat_history, "chat_history") if chat_history is not None else None

        def make(engine: Oblivion) -> OblivionMemory:
            memory = cls(oblivion=engine, token_limit=token_limit, **fields)
            if history is not None:
                memory.chat_store.set_messages(memory.chat_store_key, history)
            return memory

        return build_with_engine(
            path,
            oblivion=oblivion,
            embed_model=embed_model,
            engine_kwargs=engine_kwargs,
            make=make,
        )

    @property
    def oblivion(self) -> Oblivion:
        """The engine behind this memory."""
        if self._oblivion is None:
            raise InvalidInputError(
                "this OblivionMemory has no engine (it was deserialised); construct it "
                "with oblivion=Oblivion(path)" + RESTORED_HINT
            )
        return self._oblivion

    @property
    def tokenizer_fn(self) -> _TokenList:
        """``len(tokenizer_fn(text))`` is the engine's token count of ``text``.

        Chat engines use it to count their prefix messages into ``initial_token_count``.
        When the counter cannot load its encoding (:data:`OUTAGES`), ``on_error="warn"``
        counts 0 (``get`` then returns the latest message alone) and ``"raise"`` raises.
        """
        return _TokenList(self.oblivion.token_counter, self._count_outage)

    def _count_outage(self, exc: BaseException) -> None:
        """The token counter failed for an outage: raised, or told (``on_error``)."""
        if self.on_error == "raise":
            raise exc
        with self._lock:
            self._outage("count", exc)

    @property
    def last_recall(self) -> RecallResult | None:
        """The recall behind the latest ``get`` (items with their ``why``), if any.

        It reads only (its items' ``why["boost"]`` is ``None``; the listed ones are
        boosted after) and may hold more than ``k`` items: those repeating a visible
        turn, which ``get`` does not list, and as many others in their places."""
        return self._last

    # ------------------------------------------------------------------ reading
    def get(
        self, input: str | ChatMessage | None = None, initial_token_count: int = 0, **kwargs: Any
    ) -> list[ChatMessage]:
        """Recalled memories and recent turns within ``token_limit - initial_token_count``.

        Args:
            input: The query (default: the latest user message in the history).
            initial_token_count: Tokens the caller already uses (e.g. a system prompt).

        Raises:
            InvalidInputError: ``initial_token_count`` is negative or above ``token_limit``.
            OblivionError: with ``on_error="raise"``, the recall or the write failed (a
                store or embedder outage); with ``"warn"`` that is a warning and the
                recent turns come without memories (see the class doc).
        """
        used = check_limit(initial_token_count, "initial_token_count")
        if used > self.token_limit:
            raise InvalidInputError(
                f"initial_token_count ({used}) exceeds token_limit ({self.token_limit}); "
                "raise token_limit or shorten the prefix messages"
            )
        available = self.token_limit - used
        counter = self.oblivion.token_counter
        with self._lock:
            history = self.chat_store.get_messages(self.chat_store_key)
            try:
                out = self._get(input, history, available, counter)
            except OUTAGES as exc:
                if not is_outage(exc):
                    raise
                # the recall, the write and the boost are handled in _get: what reaches
                # here is the token counter failing (no encoding offline), without which
                # no window can be measured
                if self.on_error == "raise":
                    raise
                self._outage("count", exc)
                self._shown = []
                return history[-1:]
            if history:  # counted
                self._recovered("count")
            return out

    def _get(
        self,
        input: str | ChatMessage | None,
        history: list[ChatMessage],
        available: int,
        counter: TokenCounter,
    ) -> list[ChatMessage]:
        """:meth:`get`'s work, under the lock: recall, write the waiting messages, then
        the memory block and the recent turns within ``available`` tokens."""
        cost = _costs(history, counter)
        room = available - (cost(len(history) - 1) if history else 0)
        if history and room < 0:
            # Even the latest message does not fit: hand it over alone and let the
            # LLM report it, as ChatMemoryBuffer does.
            self._write()
            self._shown = []
            return history[-1:]
        budget = min(math.floor(Fraction(available) * Fraction(self.memory_token_ratio)), room)
        query = self._query(input, history)
        # Turns visible without any memory block (the widest window): a memory
        # repeating one of them is not listed, so it must not take a memory's place.
        widest = _newest(history, cost, available)
        # no text to query (images only): the standing memories alone, as recall gives
        pool: list[RecalledItem] = []
        try:
            if (query or self.standing) and budget > 0:
                pool = self._recall(query, budget, widest)
                self._recovered("recall")
        except OUTAGES as exc:
            if not is_outage(exc) or self.on_error == "raise":
                raise
            # the recent turns alone; the waiting messages stay queued for the next
            # put (the same store or embedder would fail the write now)
            self._outage("recall", exc)
        else:
            self._write()
        hidden: set[str] = set()
        while True:
            items = self._pick(pool, hidden)
            while True:
                block, listed = render(
                    [it.text for it in items],
                    counter=counter,
                    budget=budget,
                    header=self.memory_header,
                )
                shown = [items[i] for i in listed]
                out, window = self._compose(history, cost, available, block)
                # A turn still visible in the window need not be listed as a memory
                # too; the next memories down take its place.
                visible = {message_text(m) for m in window}
                repeated = {it.text for it in shown if it.text in visible}
                if repeated:
                    hidden |= repeated
                    break
                # Count what is really sent; joining texts can cost a token more than
                # the parts, so drop the lowest-ranked memory shown until it fits.
                if (
                    not shown
                    or sum(count_tokens(counter, message_text(m)) for m in out) <= available
                ):
                    break
                items = shown[:-1]
            if not repeated:
                break
        if history and is_answer(history[-1]) and not self._query(input, []):
            # The view after the answer (agents read once more after answering):
            # no LLM call follows it, so what it lists is neither boosted nor
            # matched against a later answer.
            return out
        self._shown = [(it.id, it.text) for it in shown]
        self._reinforce(shown)
        return out

    def _query(self, input: str | ChatMessage | None, history: list[ChatMessage]) -> str:
        if isinstance(input, ChatMessage):
            return message_text(input).strip()
        # NULs and lone surrogates, which the engine refuses, are read as spaces and "?"
        query = clean_text(input) if isinstance(input, str) else ""
        if query:
            return query.strip()
        for message in reversed(history):
            if role(message) == "user" and message_text(message).strip():
                return message_text(message).strip()
        return ""

    def _recall(self, query: str, budget: int, widest: Sequence[ChatMessage]) -> list[RecalledItem]:
        """Memories for ``query`` within ``budget`` tokens (one recall per user message,
        made again when a memory of it is gone or changed: :meth:`_current`).

        The recall reads only (``feedback=False``): :meth:`_reinforce` boosts what is
        shown. Memories repeating a message of ``widest`` (the turns visible without a
        memory block) are not listed, so they must not take the places of others: while
        the recall returns some and fewer than ``k`` others, it is asked again, for that
        many more memories (and their tokens on top of the budget:
        :func:`~oblivion_core.widen.recall_besides`). :meth:`_pick` then keeps ``k``
        within ``budget``.
        """
        engine = self.oblivion
        new = self._last_query is None or query != self._last_query
        # no recall kept, or a memory of it forgotten, invalidated, superseded or edited
        # since (by an agent's tool, say): recalled again, the memories boosted already
        # not boosted again
        if new or self._last is None or not self._current():
            header = (
                count_tokens(engine.token_counter, self.memory_header) if self.memory_header else 0
            )
            self._last = None
            if new:
                self._boosted = set()
            if budget - header <= 0:
                return []
            visible = {message_text(m) for m in widest}
            try:
                policy = engine.policy_for(self.namespace)
                k = self.k if self.k is not None else policy.default_k
                self._limits = (budget - header, k, policy.per_item_tokens)
                self._last = recall_besides(
                    lambda b, n: self._read(query, b, n),
                    budget - header,
                    k,
                    policy.per_item_tokens,
                    visible.__contains__,
                )
            except UnknownNamespaceError:
                self._last = None
            self._last_query = query
        return list(self._last) if self._last is not None else []

    def _current(self) -> bool:
        """Whether every memory of the reused recall is still current
        (:func:`~oblivion_core.shown.still_current`)."""
        shown = [(item.id, item.text) for item in self._last or ()]
        return still_current(self.oblivion, shown, self.namespace)

    def _read(self, query: str, budget: int | None, k: int) -> RecallResult:
        """A recall that boosts nothing (:meth:`_reinforce` boosts what is shown)."""
        return self.oblivion.recall(
            query,
            token_budget=budget,
            k=k,
            namespace=self.namespace,
            deep=self.deep,
            feedback=False,
            standing=self.standing,
        )

    def _pick(self, pool: list[RecalledItem], hidden: set[str]) -> list[RecalledItem]:
        """The memories of ``pool`` whose text is not in ``hidden`` (nor context of one
        whose text is: :func:`~oblivion_core.widen.besides`), best first: at most
        ``k`` of them, within the memory budget as the recall packs them (an item that
        does not fit is skipped, smaller ones after it may still fit)."""
        items = besides(pool, hidden.__contains__)
        if not items:
            return []
        room, k, per_item = self._limits
        chosen = pack([it.tokens + per_item for it in items], room, k, per_item)
        return [items[i] for i in chosen]

    def _reinforce(self, shown: list[RecalledItem]) -> None:
        """Give the memories shown the boost of the recall (which read only), once per
        user message: a memory first shown by a later ``get`` of the turn (the window
        changed) is boosted then."""
        if not self.feedback:
            return
        fresh = [it for it in shown if it.id not in self._boosted]
        if fresh:
            self._boosted.update(it.id for it in fresh)
            try:
                reinforce_shown(self.oblivion, fresh, self.namespace)
            except OUTAGES as exc:  # the memories are listed all the same
                if not is_outage(exc) or self.on_error == "raise":
                    raise
                self._outage("boost", exc)
            else:
                self._recovered("boost")

    def _compose(
        self,
        history: list[ChatMessage],
        cost: Callable[[int], int],
        available: int,
        block: str,
    ) -> tuple[list[ChatMessage], list[ChatMessage]]:
        """``(messages, window)``: the recent turns that fit ``available`` tokens next to
        ``block``, and those turns with ``block`` inserted."""
        counter = self.oblivion.token_counter
        window = _newest(history, cost, available - (count_tokens(counter, block) if block else 0))
        if not block:
            return window, window
        out = list(window)
        if self.insert_method == InsertMethod.USER:
            for i in range(len(out) - 1, -1, -1):
                if role(out[i]) == "user":
                    latest = out[i]
                    out[i] = latest.model_copy(
                        update={"blocks": [TextBlock(text=block), *latest.blocks]}
                    )
                    return out, window
        return [ChatMessage(role=MessageRole.SYSTEM, content=block), *out], window

    def get_all(self) -> list[ChatMessage]:
        """The whole short-term history, oldest first."""
        return self.chat_store.get_messages(self.chat_store_key)

    # ------------------------------------------------------------------ writing
    def put(self, message: ChatMessage) -> None:
        """Append a message; remember it if its role is in ``remember_roles``.

        An assistant message gives the "used" boost to the memories it echoes from the
        latest ``get``.

        Raises:
            OblivionError: writing the waiting messages failed (with ``on_error="warn"``
                an outage is a warning instead, see the class doc); this message was
                appended all the same, and the waiting ones stay queued for the next
                ``put``/``get``/``flush``. (A text the engine refuses is a logged
                warning: see the class doc.)
        """
        _check_message(message)
        self._put([message])

    def put_messages(self, messages: list[ChatMessage]) -> None:
        """Append several messages, as :meth:`put` does one by one.

        Raises:
            OblivionError: as for :meth:`put`, raised once all of them are appended.
        """
        messages = list(messages)
        for message in messages:  # checked first: a bad item appends nothing
            _check_message(message)
        self._put(messages)

    def _put(self, messages: list[ChatMessage]) -> None:
        """Append ``messages`` (the call's own work, done first), then write the messages
        waiting before the last one; the first error is raised once all are appended (an
        outage, with ``on_error="warn"``, is a warning instead: :meth:`_outage`)."""
        if not messages:
            return
        errors: list[Exception] = []
        with self._lock:
            queued = False
            for message in messages:
                queued, used = self._append(message)
                if used:
                    try:
                        self.oblivion.mark_used(used, namespace=self.namespace, skip_missing=True)
                    except OUTAGES as exc:
                        if not is_outage(exc) or self.on_error == "raise":
                            errors.append(exc)  # the messages after it are appended all the same
                        else:
                            self._outage("boost", exc)
                    except Exception as exc:
                        errors.append(exc)
                    else:
                        self._recovered("boost")
            # The newest message waits for the next get (so it does not recall itself).
            try:
                self._write(len(self._unsaved) - (1 if queued else 0))
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def _append(self, message: ChatMessage) -> tuple[bool, list[str]]:
        """Add ``message`` to the history and, if its role is remembered, to the write
        queue; return whether it was queued and the ids its text uses (the "used" boost
        due, when it is an assistant answer)."""
        self.chat_store.add_message(self.chat_store_key, message)
        r = role(message)
        text = message_text(message)
        used: list[str] = []
        if r == "assistant" and text.strip() and self._shown:
            if self.feedback:
                used = used_ids(text, self._shown)
            self._shown = []
        queued = r in self.remember_roles and bool(text.strip())
        if queued:
            self._unsaved.append(message)
        if r == "user":
            self._last_query = None
        return queued, used

    @property
    def pending_messages(self) -> int:
        """Messages waiting to be written to the engine: the newest remembered one until
        the next ``get`` or ``put``, and those an outage left queued."""
        with self._lock:
            return len(self._unsaved)

    def flush(self) -> None:
        """Write messages still waiting for the engine (see the class doc).

        Raises:
            OblivionError: the write failed, whatever ``on_error`` says (as
                ``OblivionMemoryMiddleware.flush`` does: a caller flushing, at shutdown
                say, learns that messages are still waiting); they stay queued.
        """
        with self._lock:
            if self._save(wait=False):
                self._recovered("write")

    def _write(self, count: int | None = None) -> None:
        """Write the waiting messages (the ``count`` oldest; ``None``: all); an outage is
        raised or, with ``on_error="warn"``, a warning (:meth:`_outage`), the messages
        kept queued."""
        try:
            wrote = self._save(count)
        except OUTAGES as exc:
            if not is_outage(exc) or self.on_error == "raise":
                raise
            self._outage("write", exc)
        else:
            if wrote:
                self._recovered("write")

    def _outage(self, step: str, exc: BaseException) -> None:
        """Tell that ``step`` (a key of ``_OUTAGE_NOTES``) met an outage, with
        ``on_error="warn"``: one warning on the ``oblivion_llamaindex`` logger when the
        outage begins, then DEBUG lines until every failing step works again (a chat
        turn meets it two or three times, every turn, until the store is back)."""
        first = not self._failing
        self._failing.add(step)
        if not first:
            logger.debug("OblivionMemory: %s (the outage goes on): %s", _OUTAGE_NOTES[step], exc)
            return
        logger.warning(
            "OblivionMemory: %s: %s. %d message(s) wait to be stored, written in order once it "
            "works again; until then, more such failures are logged at DEBUG only",
            _OUTAGE_NOTES[step],
            exc,
            len(self._unsaved),
        )

    def _recovered(self, step: str) -> None:
        """``step`` worked: once every step an outage failed works again, the next
        failure is a new outage, warned about again."""
        if step in self._failing:
            self._failing.discard(step)
            if not self._failing:
                logger.info("OblivionMemory: the memory store answers again")

    def _save(self, count: int | None = None, *, wait: bool = True) -> bool:
        """Write the waiting messages (the ``count`` oldest; ``None``: all).

        A message leaves the queue once the engine has dealt with it: stored, or refused
        for its text (e.g. longer than policy.max_text_chars), which is a warning on the
        ``oblivion_llamaindex`` logger naming it, and leaves it in the short-term history
        only: a chat engine puts the user's message and calls ``get`` before the LLM, and
        a refusal raised there lost the turn's answer (and the next turn's, for an
        answer remembered with ``remember_roles``). When the write fails otherwise (the
        embedder timed out, the store is busy), that error is raised and the messages not
        stored stay queued, first in line for the next write. Returns whether any message
        was written (a store that took them answers again after an outage).

        While an outage fails the writes (``on_error="warn"``), they are tried again only
        once :data:`RETRY_SECONDS`' wait is over (``wait=False``: at once, as
        :meth:`flush` does): each try embeds every waiting message before the store
        fails it, and a chat turn would try two or three times, so an outage of ``n``
        turns cost about ``n * n`` embeddings (120 turns: 4.4 s a turn at the end).
        """
        if wait and "write" in self._failing and time.monotonic() < self._retry_at:
            return False
        try:
            done = remember_queued(
                self.oblivion,
                self._unsaved,
                count,
                message_text,
                lambda m: {"role": role(m), "chat_store_key": self.chat_store_key},
                category=self.category,
                importance=self.importance,
                namespace=self.namespace,
            )
        except Exception as exc:
            if is_outage(exc):
                first, most = RETRY_SECONDS
                self._retry_wait = min(max(2 * self._retry_wait, first), most)
                self._retry_at = time.monotonic() + self._retry_wait
            raise
        self._retry_wait = 0.0
        if done is None:
            return False
        pending, _, refused = done
        for index, _exc, why in refused:
            message = pending[index]
            text = message_text(message)
            logger.warning(
                "the %s message %r%s was not remembered: %s. It stays in the short-term "
                "history only.",
                role(message),
                text[:40],
                "..." if len(text) > 40 else "",
                why,
            )
        return True

    def set(self, messages: list[ChatMessage]) -> None:
        """Replace the short-term history (long-term memories are kept, nothing new is
        remembered). Messages still waiting for the engine are written after (an outage
        then: see ``on_error`` in the class doc)."""
        history = check_messages(messages, "set()")
        with self._lock:
            self.chat_store.set_messages(self.chat_store_key, history)
            self._shown = []
            self._last_query = None
            self._write()

    def reset(self) -> None:
        """Clear the short-term history; long-term memories stay in the engine.
        Messages still waiting for the engine are written after (an outage then: see
        ``on_error`` in the class doc)."""
        with self._lock:
            self.chat_store.delete_messages(self.chat_store_key)
            self._shown = []
            self._last = None
            self._last_query = None
            self._write()


def _check_message(message: object) -> None:
    if not isinstance(message, ChatMessage):
        raise InvalidInputError(f"put() takes a ChatMessage, got {type(message).__name__}")


def _costs(history: Sequence[ChatMessage], counter: TokenCounter) -> Callable[[int], int]:
    """The tokens of ``history[i]``, counted when first asked for: a ``get`` reads only
    the newest messages that fit, and the short-term history is never trimmed (counting
    every message made each ``get`` grow with the conversation: 2,113 counts at 2,000
    messages, 68.8 ms with tiktoken at 4,000)."""
    known: dict[int, int] = {}

    def cost(i: int) -> int:
        if i not in known:
            known[i] = count_tokens(counter, message_text(history[i]))
        return known[i]

    return cost


def _newest(
    history: Sequence[ChatMessage], cost: Callable[[int], int], room: int
) -> list[ChatMessage]:
    """The longest suffix of ``history`` within ``room`` tokens; when older messages
    were cut, minus leading replies (assistant or tool messages), so no reply is shown
    without its question (as ``ChatMemoryBuffer``: a history that fits is kept whole,
    a greeting the assistant opened with included)."""
    start = len(history)
    total = 0
    while start > 0 and total + cost(start - 1) <= room:
        start -= 1
        total += cost(start)
    cut = start > 0
    while cut and start < len(history) - 1 and role(history[start]) in ("assistant", "tool"):
        start += 1
    return list(history[start:])
