"""Agent middleware for ``create_agent``: inject recalled memories, record each turn."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence, Set
from typing import Annotated, Any, Optional

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ModelCallResult, PrivateStateAttr
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import run_in_executor
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.runtime import Runtime
from pydantic import BaseModel
from typing_extensions import NotRequired  # typing's from Python 3.11 only

from oblivion_core import Oblivion, Policy
from oblivion_core.budget import count_tokens, render
from oblivion_core.checks import check_namespace, check_plain_namespace, check_standing
from oblivion_core.errors import OUTAGES as _OUTAGES
from oblivion_core.errors import (
    InvalidInputError,
    OblivionError,
    PolicyError,
    UnknownMemoryError,
    UnknownNamespaceError,
    is_outage,
)
from oblivion_core.overlap import used_ids
from oblivion_core.policy import resolve_policy
from oblivion_core.shown import reinforce_shown, still_current
from oblivion_core.widen import besides, recall_besides
from oblivion_langchain._convert import (
    appraise,
    budget,
    clean_text,
    fit_text,
    is_summary,
    latest_human,
    latest_summary,
    message_key,
    message_text,
    positive_k,
)

#: Key of the middleware's private entry in the agent state.
STATE_KEY = "oblivion_memory"

logger = logging.getLogger("oblivion_langchain")

#: Failures of the memory store, the embedder or the tokenizer that a run survives with
#: ``on_error="warn"`` (a Chroma server down, a store locked by another process, no
#: tiktoken encoding offline): :data:`oblivion_core.errors.OUTAGES`, less the lasting ones
#: (:func:`oblivion_core.errors.is_outage`: another embedding model than the store's, a
#: damaged store, another store's collection), which are raised whatever ``on_error``.
OUTAGES = _OUTAGES

#: Turns kept for a later write while the store is down; beyond, the oldest are dropped.
MAX_PENDING_TURNS = 1_000

DEFAULT_HEADER = "Relevant memories from earlier conversations (most relevant first):"

#: Put between the agent's own system prompt and the memory block.
SEPARATOR = "\n\n"

NamespaceResolver = Callable[[Runtime[Any], RunnableConfig], "str | None"]
UsedRule = Callable[[str, Sequence[tuple[str, str]]], list[str]]


class OblivionMemoryState(AgentState[Any]):
    """Agent state plus the middleware's record of the current turn (private)."""

    oblivion_memory: NotRequired[Annotated[dict[str, Any], PrivateStateAttr]]


def _memo(state: Mapping[str, Any]) -> dict[str, Any] | None:
    memo = state.get(STATE_KEY)
    return memo if isinstance(memo, dict) else None


@dataclasses.dataclass(frozen=True)
class _TurnMemory:
    """A turn to remember: what :meth:`Oblivion.remember` is called with."""

    namespace: str | None
    text: str
    category: str
    importance: float
    metadata: dict[str, Any]
    id: str | None = None  # from the user message's id: a regenerated answer replaces it


def _turn_of(text: str, users: set[str] | None, sizes: set[int] | None = None) -> bool:
    """Whether ``text`` is a turn memory (``"user: ..."``, as :meth:`_record` writes
    them) of one of the user messages ``users`` (``sizes``: their lengths, if known)."""
    if not users or not text.startswith("user: "):
        return False
    body = text[len("user: ") :]
    sizes = sizes if sizes is not None else {len(u) for u in users}
    # a user message may hold "\nassistant: " itself (a pasted transcript): each place
    # the answer may start is tried, where a message of that length ends
    at = len(body)
    while at >= 0:
        if at in sizes and body[:at] in users:
            return True
        at = body.rfind("\nassistant: ", 0, at)
    return False


def _turn_id(namespace: str | None, message_id: str) -> str:
    """The id of the memory of the turn of the user message ``message_id`` (LangGraph
    gives each message a unique id): one per turn, so a regenerated answer finds it."""
    digest = hashlib.sha256(f"{namespace or ''}\0{message_id}".encode("utf-8", "surrogatepass"))
    return "turn-" + digest.hexdigest()[:32]


def _visible(state: Mapping[str, Any], at: int) -> set[str]:
    """The user messages of earlier turns still in the thread (before position ``at``;
    a checkpointer keeps them), as recall's queries are cleaned: their memories are not
    shown again, and do not take others' places."""
    return {
        clean_text(message_text(m)).strip()
        for m in state["messages"][:at]
        if isinstance(m, HumanMessage) and not is_summary(m)
    } - {""}


def _unrecorded(state: Mapping[str, Any]) -> tuple[dict[str, Any], int, str] | None:
    """The middleware's memo, the position of the latest user message and its text, if
    that message's turn was recalled for and not recorded yet (else ``None``).

    When LangChain's ``SummarizationMiddleware`` summarised the user message away
    during its turn (after a tool call), the position is that of the summary and the
    text is the one :meth:`OblivionMemoryMiddleware.before_model` kept in the memo.
    """
    memo = _memo(state)
    if memo is None or memo.get("recorded"):
        return None
    messages = state["messages"]
    found = latest_human(messages)
    if found is not None:
        if memo.get("turn") != message_key(*found):
            return None
        return memo, found[0], message_text(found[1]).strip()
    at, user = latest_summary(messages), memo.get("user")
    if at is None or not isinstance(user, str):
        return None
    return memo, at, user


def _stopped(
    state: Mapping[str, Any], memo: Mapping[str, Any], at: int, direct: Set[str] = frozenset()
) -> tuple[str, str] | None:
    """The user message and answer of the memo's turn, if the model answered it but the
    run stopped before ``after_model`` recorded it (else ``None``).

    A client gone while streaming, a cancelled request or a timeout can end a run
    between the model call and ``after_model``: the checkpointer keeps the answer in
    the thread, and the next user message (at position ``at``) starts a new turn.
    The answer is the turn's final ``AIMessage`` (no tool calls), as ``after_model``
    takes it, or, when the model call set a ``structured_response``, what
    ``after_agent`` takes, or, when it ended on the results of tools that all return
    directly (``direct``: their names), the last result, as ``after_agent`` takes it. A
    turn stopped before its answer (before the model call, or in a tool loop) has none:
    ``None``. When ``SummarizationMiddleware`` summarised
    the user message away, the turn's messages are those after the summary (no user
    message among them) and the text is the one the memo kept.
    """
    if memo.get("recorded"):
        return None
    messages = state["messages"][:at]
    users = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage) and not is_summary(m)]
    start = next((i for i in users if message_key(i, messages[i]) == memo.get("turn")), None)
    if start is not None:
        user: Any = message_text(messages[start]).strip()
    else:
        start, user = latest_summary(messages), memo.get("user")
        if start is None or not isinstance(user, str) or any(i > start for i in users):
            return None
    end = next((i for i in users if i > start), len(messages))
    turn = messages[start + 1 : end]
    if not any(isinstance(m, AIMessage) for m in turn):
        return None
    last = turn[-1]
    if isinstance(last, AIMessage) and not last.tool_calls:
        return user, message_text(last).strip()
    if state.get("structured_response") is not None:  # set by this turn's model call
        return user, _final_answer(state, turn)
    if _ended_direct(turn, direct):
        return user, message_text(last).strip()
    return None


def _ended_direct(turn: Sequence[BaseMessage], direct: Set[str]) -> bool:
    """Whether ``turn`` ended on the results of tools that all return directly (names in
    ``direct``): every tool call of its last ``AIMessage`` answered by a ``ToolMessage``,
    as the agent's edge from its tools to the end tests it."""
    calls = next((m for m in reversed(turn) if isinstance(m, AIMessage)), None)
    if calls is None or not calls.tool_calls or not isinstance(turn[-1], ToolMessage):
        return False
    results = {m.tool_call_id: m.name for m in turn if isinstance(m, ToolMessage)}
    names = [results.get(c["id"] or "") for c in calls.tool_calls]
    return all(name is not None and name in direct for name in names)


def _final_answer(state: Mapping[str, Any], turn: Sequence[BaseMessage]) -> str:
    """The answer of a turn that did not end on a plain ``AIMessage`` (see ``after_agent``).

    In order: the state's ``structured_response`` when a model call of this turn set
    it (its only field when that is a string, else the whole response as JSON); else,
    when the turn ended on tool results (a ``return_direct`` tool), the last tool
    message's text; else the text of the turn's last ``AIMessage``; else ``""``.
    """
    structured = state.get("structured_response")
    # only if a model call of this turn produced it (it is cleared on every model call)
    if structured is not None and any(isinstance(m, AIMessage) for m in turn):
        return _structured_text(structured)
    if turn and isinstance(turn[-1], ToolMessage):
        return message_text(turn[-1]).strip()
    for message in reversed(turn):
        if isinstance(message, AIMessage):
            return message_text(message).strip()
    return ""


def _structured_text(response: Any) -> str:
    """A structured response as text: its single string field, else JSON."""
    if isinstance(response, BaseModel):
        data: Any = response.model_dump(mode="json")
    elif dataclasses.is_dataclass(response) and not isinstance(response, type):
        data = dataclasses.asdict(response)
    else:
        data = response
    if isinstance(data, str):
        return data.strip()
    if isinstance(data, Mapping) and len(data) == 1:
        (only,) = data.values()
        if isinstance(only, str):
            return only.strip()
    return json.dumps(data, ensure_ascii=False, default=str)


def _with_block(system: SystemMessage, block: str) -> SystemMessage:
    """A copy of ``system`` with the memory block appended to its content, as it is.

    A string prompt stays a string (``prompt + SEPARATOR + block``); a list of content
    blocks gets one more ``{"type": "text", "text": SEPARATOR + block}``, the others left
    exactly as they are (provider-native blocks, cache points and image ids included).
    The copy keeps the message's name, id, additional_kwargs (provider options such as
    prompt caching) and response_metadata; ``system`` itself is not changed.
    """
    content = system.content
    if isinstance(content, str):
        new: str | list[str | dict[Any, Any]] = content + SEPARATOR + block if content else block
    else:
        new = [*content, {"type": "text", "text": SEPARATOR + block}]
    return system.model_copy(update={"content": new})


class OblivionMemoryMiddleware(AgentMiddleware[OblivionMemoryState, Any]):
    """Decaying long-term memory for a ``create_agent`` agent.

    Each user turn goes through these hooks:

    1. ``before_model`` (once per user message; after tool calls the block is
       reused, unless a memory it shows was forgotten, invalidated, superseded or
       edited since — by a tool, say —: then it is recalled again, and only the
       memories it shows for the first time get the boost): recall
       from the latest user message, in the user's namespace, with the engine's recall
       boost, and render the memories with :func:`oblivion_core.budget.render` into one
       block that fits ``token_budget`` tokens as counted by the engine's token
       counter (header included; the block is kept in the agent state, privately).
       NULs and lone surrogates in the message, which the engine refuses, are cleaned
       out of the query and of the stored turn. A message with no text to query (images
       only, or nothing but NULs) recalls only the current memories of the ``standing``
       categories, those a recall would put first. The summary message that LangChain's
       ``SummarizationMiddleware`` puts in place of old history is not a user message:
       it is never the query nor the recorded turn, even when it replaces the user's
       message in the middle of a turn.
    2. ``wrap_model_call``: send that block to the model as part of the one system
       message: appended to the agent's system prompt after a blank line — a string
       prompt stays one string, a prompt of content blocks gets the block as one more
       text block, its other blocks, name, id and other fields unchanged — or as the
       whole system message when the agent has none. A system prompt given as the
       first message of the conversation (no ``system_prompt=``) gets the block the
       same way. The agent state's messages are not changed, so memories never pile
       up in the history.
    3. ``after_model``, once the model gives its final answer (no tool calls):

       * **used boost** — the recalled memories the answer drew on get the larger
         ``Oblivion.mark_used`` boost. "Drew on" is decided by
         :func:`oblivion_core.overlap.used_ids`: a memory counts as used when the answer
         repeats at least two of its content words, or all of a memory's that has
         fewer (lower-cased words of 3+ letters, and numbers, minus stop words —
         ``user``/``assistant`` included) **and** those
         make up at least a quarter of the memory's content words. Pass ``used_rule``
         to decide differently.
       * **remember the turn** — one memory per turn, ``"user: <message>\\nassistant:
         <answer>"``, so a recalled turn shows what was asked and what was answered.
         Its category and importance are appraised from the *user's* message alone
         with the engine's importance scorer, because that is what the user
         told us (the wording of the answer must not turn small talk into a fact).
    4. ``after_agent``, at the end of the run, only if ``after_model`` did not record
       the turn (the run ended without a plain final ``AIMessage``): the same used
       boost and turn memory, with as the answer the ``structured_response`` of
       ``response_format=ToolStrategy(...)`` (its only field when that is a string,
       else the response as JSON), else the last tool result of a ``return_direct``
       tool, else the text of the turn's last ``AIMessage``. A turn is never recorded
       twice: an answer regenerated from a checkpoint taken before the model call
       (LangGraph's ``invoke(None, config)``) replaces the turn's memory (its id comes
       from the user message's), and the first answer's "used" boost is not given
       again.

    A run that stops between the model's answer and ``after_model`` (a client gone
    while streaming, a cancelled request, a timeout) leaves the answer in the thread
    (a checkpointer keeps it): ``before_model`` of the next user message records that
    turn first, as ``after_model`` would have (once: if its ``after_model`` runs later,
    from its checkpoint, it finds the turn stored). A turn stopped before its answer
    (before the model call, or in a tool loop) is not recorded.

    When the store, the embedder or the tokenizer fails (:data:`OUTAGES`: a Chroma
    server down, the store locked by another process, the embedding model failing, no
    tiktoken encoding offline), the run goes on
    with ``on_error="warn"`` (the default) and a warning on the ``oblivion_langchain``
    logger: a failed recall injects no memories, a failed used boost is skipped, and a
    turn that could not be stored waits in the middleware (at most
    :data:`MAX_PENDING_TURNS`; beyond that the oldest is dropped, logged as an error)
    and is written, in order, before the next turn this middleware stores. Its
    ``created_at`` is then the time of that write. Pending turns live in this process
    only: :meth:`flush` writes them (e.g. at shutdown), :attr:`pending_turns` counts
    them. With ``on_error="raise"`` the error ends the run, as any other does;
    errors in what the caller passed (a bad namespace, a closed engine) always do.

    The namespace is per user: by default ``runtime.context.user_id`` (attribute or
    dict key) or ``config["configurable"]["user_id"]``; without either, the engine's
    default namespace, which every run without an id shares (a warning says so, once;
    ``namespace=oblivion.default_namespace`` shares it on purpose, without one).
    Pass ``namespace="shared"`` for a fixed one, or a callable
    ``(runtime, config) -> str | None``.

    Setup:
        Install the extra: ``pip install "oblivion-memory[langchain]"``.

    Instantiate and use:
        .. code-block:: python

            from langchain.agents import create_agent
            from oblivion_core import Oblivion
            from oblivion_langchain import OblivionMemoryMiddleware

            memory = OblivionMemoryMiddleware(Oblivion("./memory"), token_budget=300)
            agent = create_agent(model, tools=[], middleware=[memory])
            agent.invoke(
                {"messages": [{"role": "user", "content": "Always use kilometres."}]},
                {"configurable": {"user_id": "ana"}},
            )

    Args:
        oblivion: The engine.
        token_budget: Tokens the injected block may cost (``None``: no limit; ``0``:
            inject nothing and recall nothing). Must be >= 0.
        k: Maximum memories per recall (``None``: the policy's ``default_k``).
        namespace: Fixed namespace, a resolver ``(runtime, config) -> str | None``, or
            ``None`` to read ``user_key`` from the runtime context / configurable.
        user_key: The key holding the user id for the default resolver (a non-empty
            string; an id that is an ``int`` or a ``uuid.UUID`` is its ``str``).
        policy: Policy (or template name, e.g. ``"support-desk"``) to apply to each
            namespace this middleware serves, once, when it first meets the namespace
            (a brand-new user's too, before their first turn is stored).
        header: First line of the injected block (``""``: none).
        remember_turns: Store each turn (default). ``False`` only recalls and boosts.
        used_rule: ``(answer, [(id, text), ...]) -> ids`` deciding which recalled
            memories the answer used (default :func:`oblivion_core.overlap.used_ids`;
            ``lambda answer, items: []`` gives no used boost).
        on_error: ``"warn"`` (default) or ``"raise"``: what a store or embedder failure
            does to the run (see above).
        standing: Categories whose current memories are injected whatever the user's
            message (``Oblivion.recall``'s ``standing``): by default ``"instruction"``,
            so "always use kilometres" holds in every later turn, not only those that
            mention distances, and in a turn whose message has no text (an image). They
            take at most half of ``k``'s places. ``()``: only what the message recalls.
    """

    state_schema = OblivionMemoryState

    def __init__(
        self,
        oblivion: Oblivion,
        *,
        token_budget: int | None = 400,
        k: int | None = None,
        namespace: str | NamespaceResolver | None = None,
        user_key: str = "user_id",
        policy: Policy | str | None = None,
        header: str = DEFAULT_HEADER,
        remember_turns: bool = True,
        used_rule: UsedRule = used_ids,
        on_error: str = "warn",
        standing: str | Sequence[str] = "instruction",
    ) -> None:
        super().__init__()
        if not isinstance(oblivion, Oblivion):
            raise InvalidInputError(f"oblivion must be an Oblivion, got {type(oblivion).__name__}")
        if namespace is not None and not isinstance(namespace, str) and not callable(namespace):
            raise InvalidInputError(
                f"namespace must be a string, a callable (runtime, config) -> str, or None; "
                f"got {namespace!r}"
            )
        if isinstance(namespace, str):
            if not namespace.strip():
                raise InvalidInputError(
                    f"namespace must be a non-empty string, a callable (runtime, config) -> "
                    f"str, or None (the user id under user_key); got {namespace!r}"
                )
            check_plain_namespace(check_namespace(namespace))  # too long, a surrogate...
        if not isinstance(user_key, str) or not user_key:
            raise InvalidInputError(
                f"user_key must be a non-empty string naming the user id in the runtime "
                f'context or configurable (default "user_id"), got {user_key!r}'
            )
        if not isinstance(header, str):
            raise InvalidInputError(
                f'header must be a string, the first line of the injected block ("" for '
                f"none), got {header!r}"
            )
        if not callable(used_rule):
            raise InvalidInputError(
                "used_rule must be a callable (answer, [(id, text), ...]) -> ids, e.g. "
                "oblivion_core.overlap.used_ids (the default); to give no used boost pass "
                f"lambda answer, items: [], got {used_rule!r}"
            )
        if on_error not in ("warn", "raise"):
            raise InvalidInputError(f'on_error must be "warn" or "raise", got {on_error!r}')
        if policy is not None and not isinstance(policy, Policy | str):
            raise InvalidInputError(f"policy must be a Policy or a template name, got {policy!r}")
        if policy is not None:  # refused now, not after a run's model call
            clock = oblivion.policy.clock
            if resolve_policy(policy, clock=clock).clock != clock:
                raise PolicyError(
                    f"the store decays on the {clock!r} clock; pass a policy with "
                    f"clock={clock!r} (e.g. Policy.template(name, clock={clock!r}))"
                )
        self.oblivion = oblivion
        self.token_budget = budget(token_budget)
        self.k = positive_k(k)
        self.namespace = namespace
        self.user_key = user_key
        self.policy = policy
        self.header = header
        self.remember_turns = remember_turns
        self.used_rule = used_rule
        self.on_error = on_error
        self.standing = check_standing(standing)
        self._policy_done: set[str] = set()
        self._told_shared = False  # the warning of a run without a user id, given
        self._lock = threading.Lock()
        self._pending: list[_TurnMemory] = []
        self._pending_lock = threading.Lock()
        # held while turns are written: a turn taken from the queue by one thread is
        # written before another thread's next turn (else a user's older turn, stored
        # after their newer one, made the newer fact stale)
        self._write_lock = threading.Lock()
        # names of the tools that return directly, and of the others, from the model calls
        # seen: a run stopped after such a tool, before after_agent, is stored with the
        # next turn. A name another agent sharing this middleware gives a tool that does
        # not return directly is no longer taken as one (a stop in that agent's tool
        # loop would pass for an answered turn)
        self._direct_tools: set[str] = set()
        self._other_tools: set[str] = set()

    @property
    def pending_turns(self) -> int:
        """Turns waiting to be stored after a store failure (``on_error="warn"``)."""
        with self._pending_lock:
            return len(self._pending)

    def flush(self) -> int:
        """Store the turns still waiting after a store failure; returns how many wait
        still (0 once all are stored). Raises what the store raises, the turns kept."""
        self._store_turns(None, raise_outage=True)
        return self.pending_turns

    # ================================================================ hooks
    def before_model(
        self,
        state: OblivionMemoryState,
        runtime: Runtime[Any],
        config: Optional[RunnableConfig] = None,  # noqa: UP045 (the form LangGraph reads)
    ) -> dict[str, Any] | None:
        """Recall for a new user message and keep the rendered block in the state.

        ``config`` is the run's config, which LangGraph passes to a node that names it
        (this hook is one). Without it, ``langgraph.config.get_config()``: that finds
        nothing in an async run on Python 3.10, where every user would share one
        namespace.
        """
        found = latest_human(state["messages"])
        if found is None:
            return None
        turn = message_key(*found)
        previous = _memo(state)
        if previous is not None and previous.get("turn") == turn:
            # a later model call of the same turn (after tools): the block is reused,
            # unless a memory it shows was forgotten, invalidated, superseded or edited
            # since (a tool may have done it): then recalled again for the turn
            if self._block_current(previous):
                return None
            return self._refresh(previous, state, found)
        if previous is not None:
            # the run of the memo's turn stopped between the answer and after_model (a
            # client gone while streaming, a cancelled request): recorded now, before
            # the memo is replaced (its memory id keeps it once if after_model runs later)
            stopped = _stopped(state, previous, found[0], self._direct_tools - self._other_tools)
            if stopped is not None:
                self._record(previous, *stopped)
        namespace = self._namespace(runtime, config)
        # A NUL or lone surrogate in the message would make the engine reject the query
        # and crash the run: cleaned out, like OblivionStore cleans its queries.
        user = clean_text(message_text(found[1])).strip()
        context, recalled = self._recall_or_outage(
            user, namespace, _visible(state, found[0]), apply_policy=True
        )
        return {
            STATE_KEY: {
                "turn": turn,
                "user": user,  # to record the turn if a summary replaces the message
                "namespace": namespace,
                "context": context,
                "recalled": recalled,
                "recorded": False,
                # the turn memory's id (None: the message has no id of its own)
                "memory": _turn_id(namespace, found[1].id) if found[1].id else None,
            }
        }

    def _block_current(self, memo: Mapping[str, Any]) -> bool:
        """Whether every memory the turn's block shows is still current
        (:func:`~oblivion_core.shown.still_current`). A failure to read (an outage)
        counts as not current: the recall that follows deals with it as any recall does."""
        shown = [(str(pair[0]), str(pair[1])) for pair in memo.get("recalled") or []]
        try:
            return still_current(self.oblivion, shown, memo.get("namespace"))
        except OUTAGES as exc:
            if not is_outage(exc):
                raise
            return False

    def _refresh(
        self, memo: dict[str, Any], state: Mapping[str, Any], found: tuple[int, BaseMessage]
    ) -> dict[str, Any]:
        """The turn's memo with its block recalled again (a memory it showed is gone).

        The memories the turn's blocks showed before were boosted then: only the ones
        shown for the first time in the turn get the recall boost (a tool loop does not
        boost the same memories again)."""
        namespace = memo.get("namespace")
        user = memo.get("user")
        if not isinstance(user, str):
            user = clean_text(message_text(found[1])).strip()
        # every memory a block of this turn showed (a block recalled again, then again,
        # may bring back one the first showed)
        boosted = {str(m) for m in memo.get("boosted") or []}
        boosted |= {str(pair[0]) for pair in memo.get("recalled") or []}
        context, recalled = self._recall_or_outage(
            user, namespace, _visible(state, found[0]), boosted=boosted
        )
        return {
            STATE_KEY: {
                **memo,
                "context": context,
                "recalled": recalled,
                "boosted": sorted(boosted),
            }
        }

    def _recall_or_outage(
        self,
        query: str,
        namespace: str | None,
        visible: set[str],
        *,
        boosted: set[str] | None = None,
        apply_policy: bool = False,
    ) -> tuple[str, list[list[str]]]:
        """:meth:`_recall` (after :meth:`_apply_policy`, if asked); a store or embedder
        that is down gives no memories and a warning (``on_error="raise"``: the error)."""
        try:
            if apply_policy:
                self._apply_policy(namespace)
            return self._recall(query, namespace, visible, boosted)
        except OUTAGES as exc:
            if not is_outage(exc) or self.on_error == "raise":
                raise
            logger.warning(
                "OblivionMemoryMiddleware: recall failed, the model answers without memories: %s",
                exc,
            )
            return "", []

    async def abefore_model(
        self,
        state: OblivionMemoryState,
        runtime: Runtime[Any],
        config: Optional[RunnableConfig] = None,  # noqa: UP045 (the form LangGraph reads)
    ) -> dict[str, Any] | None:
        """:meth:`before_model` in a worker thread."""
        return await run_in_executor(None, self.before_model, state, runtime, config)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelCallResult[Any]:
        """Call the model with the memory block added to the system message."""
        return handler(self._inject(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelCallResult[Any]:
        """Async :meth:`wrap_model_call`."""
        return await handler(self._inject(request))

    def after_model(
        self, state: OblivionMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """After the final answer of a turn: boost what it used, remember the turn."""
        messages = state["messages"]
        if not messages or not isinstance(messages[-1], AIMessage) or messages[-1].tool_calls:
            return None
        pending = _unrecorded(state)
        if pending is None:
            return None
        memo, _, user = pending
        self._record(memo, user, message_text(messages[-1]).strip())
        return {STATE_KEY: {**memo, "recorded": True}}

    async def aafter_model(
        self, state: OblivionMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`after_model` in a worker thread."""
        return await run_in_executor(None, self.after_model, state, runtime)

    def after_agent(
        self, state: OblivionMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """At the end of the run: record the turn if ``after_model`` did not.

        That happens when the run ends without a plain final ``AIMessage``: a
        structured response (``response_format=ToolStrategy(...)``), a
        ``return_direct`` tool, or another middleware jumping to the end.
        """
        pending = _unrecorded(state)
        if pending is None:
            return None
        memo, at, user = pending
        answer = _final_answer(state, state["messages"][at + 1 :])
        self._record(memo, user, answer)
        return {STATE_KEY: {**memo, "recorded": True}}

    async def aafter_agent(
        self, state: OblivionMemoryState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """:meth:`after_agent` in a worker thread."""
        return await run_in_executor(None, self.after_agent, state, runtime)

    # ================================================================ steps
    def _namespace(
        self, runtime: Runtime[Any] | None, config: RunnableConfig | None = None
    ) -> str | None:
        if isinstance(self.namespace, str):
            return self.namespace
        if config is None:
            try:
                config = get_config()
            except RuntimeError:
                config = {}
        if self.namespace is not None:
            value = self.namespace(runtime, config)  # type: ignore[arg-type]
        else:
            context = getattr(runtime, "context", None)
            if isinstance(context, Mapping):
                value = context.get(self.user_key)
            else:
                value = getattr(context, self.user_key, None)
            if value is None:
                value = (config.get("configurable") or {}).get(self.user_key)
        if value is None:
            if self.namespace is None and not self._told_shared:
                # every run without the id shares one namespace: each user would be
                # shown the others' memories, so it is said once (a resolver returning
                # None chose the default namespace)
                self._told_shared = True
                logger.warning(
                    "OblivionMemoryMiddleware found no %r in this run's context or "
                    "configurable: its turns go to the engine's default namespace %r, "
                    "shared by every run without one. Pass the user id (context=... "
                    "or config={'configurable': {%r: ...}}), or namespace=%r to share "
                    "it on purpose (its memories stay in view)",
                    self.user_key,
                    self.oblivion.default_namespace,
                    self.user_key,
                    self.oblivion.default_namespace,
                )
            return None
        if isinstance(value, (int, uuid.UUID)) and not isinstance(value, bool):
            value = str(value)  # a database's user id
        if not isinstance(value, str) or not value.strip():
            raise InvalidInputError(
                f"the namespace for this run must be a non-empty string, got {value!r}; "
                f"check the {self.user_key!r} you pass in the context or configurable"
            )
        return check_plain_namespace(value)

    def _apply_policy(self, namespace: str | None) -> None:
        if self.policy is None:
            return
        ns = namespace if namespace is not None else self.oblivion.default_namespace
        with self._lock:
            if ns in self._policy_done:
                return
            try:
                current: Policy | None = self.oblivion.policy_for(ns)
            except UnknownNamespaceError:  # a new user: set before their first turn
                current = None
            same = current is not None and (
                current.name == self.policy
                if isinstance(self.policy, str)
                else current == self.policy
            )
            if not same:
                self.oblivion.set_policy(
                    self.policy, namespace=ns, reason="OblivionMemoryMiddleware(policy=...)"
                )
            self._policy_done.add(ns)

    def _recall(
        self,
        query: str,
        namespace: str | None,
        visible: set[str] | None = None,
        boosted: set[str] | None = None,
    ) -> tuple[str, list[list[str]]]:
        """The rendered block and the ``[id, text]`` pairs it shows, best first.

        ``visible``: the user messages of earlier turns still in the thread. A turn
        memory of one of them is not shown: while the recall returns such repeats and
        fewer than ``k`` others, it is asked again for that many more
        (:func:`~oblivion_core.widen.recall_besides`). The recall reads only; the
        memories the block shows get the recall's boost after (not one whose lines
        ``render`` dropped to keep the budget), except those in ``boosted`` (boosted
        by an earlier recall of the same turn).
        """
        if self.token_budget == 0 or (not query and not self.standing):
            return "", []
        counter = self.oblivion.token_counter
        room = (
            None
            if self.token_budget is None
            else max(self.token_budget - count_tokens(counter, SEPARATOR), 0)
        )
        # Leave the header's tokens out of what recall may pack, so render rarely drops lines.
        items_budget = (
            None if room is None else max(room - count_tokens(counter, self.header + "\n"), 0)
        )
        try:
            policy = self.oblivion.policy_for(namespace)
        except UnknownNamespaceError:
            return "", []
        k = self.k if self.k is not None else policy.default_k
        sizes = {len(u) for u in visible or ()}

        result = recall_besides(
            # a message without text (images only): the standing memories alone
            lambda budget, n: self.oblivion.recall(
                query,
                token_budget=budget,
                k=n,
                namespace=namespace,
                standing=self.standing,
                feedback=False,  # boosted below: only what the block shows
            ),
            items_budget,
            k,
            policy.per_item_tokens,
            lambda text: _turn_of(text, visible, sizes),
        )
        items = besides(result.items, lambda text: _turn_of(text, visible, sizes))[:k]
        block, shown = render(
            [it.text for it in items], counter=counter, budget=room, header=self.header
        )
        # The recall read only: the boost its feedback gives goes to the memories the
        # block shows (render leaves out a line that overflows the budget: a memory of
        # many lines costs more rendered than recall packed it for)
        listed = [items[i] for i in shown]
        reinforce_shown(
            self.oblivion, [it for it in listed if it.id not in (boosted or ())], namespace
        )
        return block, [[item.id, item.text] for item in listed]

    def _inject(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        tools = [t for t in request.tools or () if isinstance(t, BaseTool)]
        if tools:
            self._direct_tools.update(t.name for t in tools if t.return_direct)
            self._other_tools.update(t.name for t in tools if not t.return_direct)
        memo = _memo(request.state or {})
        context = memo.get("context") if memo is not None else None
        if not context:
            return request
        if request.system_message is not None:
            return request.override(system_message=_with_block(request.system_message, context))
        messages = request.messages
        if messages and isinstance(messages[0], SystemMessage):
            # The agent's instructions are the first message of the state (no
            # system_prompt= given): the block joins that one rather than adding a second
            # system message. A copy in a new list: the state is not changed, so blocks
            # never accumulate from one turn to the next.
            return request.override(messages=[_with_block(messages[0], context), *messages[1:]])
        return request.override(system_message=SystemMessage(content=context))

    def _record(self, memo: Mapping[str, Any], user: str, answer: str) -> None:
        namespace = memo.get("namespace")
        # the engine refuses a text holding a NUL or a lone surrogate
        user, answer = clean_text(user).strip(), clean_text(answer).strip()
        recalled = [(str(i), str(t)) for i, t in memo.get("recalled") or []]
        memory_id = memo.get("memory")
        memory_id = memory_id if isinstance(memory_id, str) else None
        if memory_id is not None and self._regenerated(memory_id, namespace, user, answer):
            return
        # the turn first, then the "used" boost: once, by the path that stored the turn
        # (a late record retried after an outage, or racing a cancelled run's
        # after_model, gave it again each time)
        stored_elsewhere = False
        if self.remember_turns and user:
            category, importance = appraise(self.oblivion, user)
            turn = _TurnMemory(
                namespace,
                self._turn_text(namespace, user, answer),
                category,
                importance,
                {"source": "oblivion_langchain.middleware", "kind": "turn"},
                memory_id,
            )
            stored_elsewhere = self._store_turns(turn, raise_outage=self.on_error == "raise")
        if answer and recalled and not stored_elsewhere:
            try:
                # one forgotten since the recall does not cost the others their boost
                self.oblivion.mark_used(
                    self.used_rule(answer, recalled), namespace=namespace, skip_missing=True
                )
            except OUTAGES as exc:
                if not is_outage(exc) or self.on_error == "raise":
                    raise
                logger.warning("OblivionMemoryMiddleware: the used boost was skipped: %s", exc)

    def _turn_text(self, namespace: str | None, user: str, answer: str) -> str:
        """A turn's memory text, ``"user: ...\nassistant: ..."``, cut to fit the
        namespace's ``max_text_chars`` (the default policy's for a new namespace)."""
        text = f"user: {user}\nassistant: {answer}" if answer else f"user: {user}"
        try:
            limit = self.oblivion.policy_for(namespace).max_text_chars
        except UnknownNamespaceError:
            limit = self.oblivion.policy.max_text_chars
        return fit_text(text, limit)

    def _regenerated(self, memory_id: str, namespace: str | None, user: str, answer: str) -> bool:
        """Whether the turn of ``memory_id`` was recorded already: an answer regenerated
        from a checkpoint taken before the model call (``agent.invoke(None, config)``),
        whose state says the turn is not recorded yet. The turn memory then takes the new
        answer (keeping its activation), and the memories the first answer used keep the
        one "used" boost they got (else each regeneration gave another)."""
        try:
            current = self.oblivion.get(memory_id, namespace=namespace)
        except (UnknownMemoryError, UnknownNamespaceError):
            return False
        except OUTAGES as exc:
            if not is_outage(exc) or self.on_error == "raise":
                raise
            logger.warning("OblivionMemoryMiddleware: the turn was not recorded: %s", exc)
            return True
        if not self.remember_turns or not user:
            return True
        text = self._turn_text(namespace, user, answer)
        if text != current.text:
            try:
                self.oblivion.edit(memory_id, text, namespace=namespace)
            except OUTAGES as exc:
                if not is_outage(exc) or self.on_error == "raise":
                    raise
                logger.warning("OblivionMemoryMiddleware: the new answer was not stored: %s", exc)
        return True

    def _store_turns(self, turn: _TurnMemory | None, *, raise_outage: bool) -> bool:
        """Store the pending turns, then ``turn``, in order. On an outage the ones not
        stored wait (``turn`` too, unless the outage is raised); a pending turn the
        engine refuses for what it is is dropped with a warning (it never would be
        stored), ``turn`` refused raises as before. One call at a time (``_write_lock``),
        so turns are written in the order they were made. ``True`` if another path had
        stored ``turn`` meanwhile (:meth:`_stored_meanwhile`)."""
        with self._write_lock:
            return self._write_turns(turn, raise_outage=raise_outage)

    def _write_turns(self, turn: _TurnMemory | None, *, raise_outage: bool) -> bool:
        with self._pending_lock:
            todo = [*self._pending, *([turn] if turn is not None else [])]
            self._pending.clear()
        elsewhere = False
        for n, memory in enumerate(todo):
            try:
                self.oblivion.remember(
                    memory.text,
                    category=memory.category,
                    importance=memory.importance,
                    metadata=memory.metadata,
                    namespace=memory.namespace,
                    id=memory.id,
                )
            except OUTAGES as exc:
                left = todo[n:]
                if raise_outage and turn is not None:
                    left = [m for m in left if m is not turn]
                self._requeue(left)
                if raise_outage or not is_outage(exc):  # a lasting one: raised, they wait
                    raise
                logger.warning(
                    "OblivionMemoryMiddleware: %d turn(s) could not be stored and wait "
                    "for the next one: %s",
                    self.pending_turns,
                    exc,
                )
                return False
            except OblivionError as exc:
                if self._stored_meanwhile(memory):
                    elsewhere = elsewhere or memory is turn
                    continue
                if memory is turn:
                    self._requeue(todo[n + 1 :])
                    raise
                logger.warning("OblivionMemoryMiddleware: a pending turn was dropped: %s", exc)
                continue
            try:
                self._apply_policy(memory.namespace)
            except OUTAGES as exc:  # applied with the namespace's next turn
                if raise_outage or not is_outage(exc):
                    self._requeue(todo[n + 1 :])
                    raise
                logger.warning("OblivionMemoryMiddleware: the policy was not applied: %s", exc)
        return elsewhere

    def _stored_meanwhile(self, memory: _TurnMemory) -> bool:
        """Whether another path stored this turn's memory (its id) since it was found
        absent: a run cancelled after the answer goes on in a worker thread to its
        ``after_model`` while the thread's next message records the turn in
        ``before_model``. The turn is then stored once, with this text."""
        if memory.id is None:
            return False
        try:
            current = self.oblivion.get(memory.id, namespace=memory.namespace)
        except OblivionError:
            return False
        if current.text != memory.text:
            try:
                self.oblivion.edit(memory.id, memory.text, namespace=memory.namespace)
            except OblivionError as exc:
                logger.warning("OblivionMemoryMiddleware: the new answer was not stored: %s", exc)
        return True

    def _requeue(self, turns: Sequence[_TurnMemory]) -> None:
        """Put ``turns`` back first in line, dropping the oldest beyond the bound."""
        if not turns:
            return
        with self._pending_lock:
            self._pending[:0] = turns
            excess = len(self._pending) - MAX_PENDING_TURNS
            if excess > 0:
                del self._pending[:excess]
                logger.error(
                    "OblivionMemoryMiddleware: %d turn(s) dropped, more than %d waited "
                    "for the store",
                    excess,
                    MAX_PENDING_TURNS,
                )
