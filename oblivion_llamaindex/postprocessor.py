"""A node postprocessor that re-ranks any retriever's nodes by activation."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from oblivion_core.budget import check_k
from oblivion_core.checks import check_text, clean_text
from oblivion_core.engine import Oblivion
from oblivion_core.errors import (
    InvalidInputError,
    UnknownMemoryError,
    UnknownNamespaceError,
)
from oblivion_llamaindex._convert import (
    META_NODE_KEY,
    annotate,
    check_namespace,
    check_optional_limit,
    json_metadata,
    node_key,
    node_score,
    node_text,
)
from oblivion_llamaindex._engine import (
    build_with_engine,
    check_fields,
    check_oblivion,
    mark_used,
    need_engine,
    query_text,
    renamed,
    restore_private,
    text_refusal,
)

logger = logging.getLogger("oblivion_llamaindex")


class OblivionNodePostprocessor(BaseNodePostprocessor):
    """Re-ranks retrieved nodes by relevance *and* activation, and feeds use back.

    Each node is a memory: the first time the postprocessor sees a node it registers
    the node's text (``remember``, one batch per call) under the node id; a node whose
    text changed since is re-embedded (``edit``, activation kept). A node id the engine
    does not hold is first looked up by content, its text (not its document's id, which
    ``Document(text=...)`` draws at random too): LlamaIndex's node parsers give nodes
    fresh random ids on every ingestion, so an index rebuilt from the same documents
    (each run of an app with a persistent store) finds its nodes' memories, and their
    activation, instead of registering the corpus again. Such a node keeps its own id:
    its ``oblivion_id`` metadata names the memory, and :meth:`mark_used` takes its node
    id. Nodes of one call sharing a memory (one text in two documents) come back once,
    the best scored. A node with both a new id and a new text is a new memory (the old
    text's memory fades unused). Registered memories carry the content key in their
    metadata (``oblivion_node_key``); one registered by an earlier version gets it the
    next time its node is seen by its id. Then the engine
    scores the candidates exactly as ``recall`` does
    (``w_relevance * relevance + share * (w_activation * activation + w_importance *
    importance)``, ``share = (relevance / best relevance) ** activation_focus``),
    keeps the best ``top_n`` within ``token_budget``, and boosts what it kept, so nodes
    that keep proving relevant rise and nodes nobody needs fade.

    Relevance is the node's incoming score, unchanged: ``0.0`` stays ``0.0`` and
    negative scores count as 0. A node scored ``None`` (or every node, with
    ``relevance="embedding"``) gets the cosine similarity between the query and its
    stored vector. Use ``relevance="embedding"`` for retrievers whose scores are not
    similarities in ``[0, 1]`` (BM25, rerankers' logits): a score more than a rounding
    error outside ``[-1, 1]`` is refused, naming the node, before anything is stored
    (a cosine of ``1.0000000000000002``, as ``VectorStoreIndex`` returns, is clipped).
    So is a new or changed node whose text the engine would refuse (a NUL, a lone
    surrogate, more than ``policy.max_text_chars`` characters): a refused call stores
    nothing. The query is the bundle's ``custom_embedding_strs`` joined (HyDE and other
    query transforms set them), else its query string; NULs and lone surrogates in it
    are read as spaces and ``"?"``. The engine embeds that text with its own model: a
    bundle's ``embedding`` is not used, and a bundle with an embedding and no query
    text is refused (``InvalidInputError``).

    Returned nodes are copies carrying ``oblivion_*`` metadata (id, tier, relevance,
    activation, importance, score, ``why``) that is hidden from the LLM and embedder;
    their score is the engine's combined score. Nodes whose memory was invalidated
    (``Oblivion.invalidate``) are dropped; no other node is dropped for staleness
    (nodes are registered without stale-fact supersession, and a node superseded by
    hand ranks just below its successor when both are given). Only nodes of the input
    come back.

    Example::

        from llama_index.core import VectorStoreIndex
        from oblivion_core import Oblivion
        from oblivion_llamaindex import OblivionNodePostprocessor

        rerank = OblivionNodePostprocessor(oblivion=Oblivion("./memory"), top_n=3)
        engine = index.as_query_engine(similarity_top_k=10, node_postprocessors=[rerank])
        response = engine.query("How do refunds work?")
        rerank.mark_used([n.node.node_id for n in response.source_nodes[:1]])

    Args:
        oblivion: The engine holding the nodes' activation (shareable).
        top_n: Keep at most this many nodes (``None``: all that fit the budget).
        token_budget: Tokens the kept nodes' texts may cost in total, counted by the
            engine's token counter plus ``policy.per_item_tokens`` each (``None``: no limit).
        namespace: Engine namespace for the nodes (``None``: the engine's default).
        relevance: ``"score"`` (the node's score) or ``"embedding"`` (query similarity).
        feedback: Boost the nodes kept (``False`` only reads).
        category: Category of newly registered nodes (``None``: inferred from the text).
        importance: Importance of newly registered nodes (``None``: scored from the text).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=True)

    top_n: int | None = Field(default=None, description="Keep at most this many nodes.")
    token_budget: int | None = Field(
        default=None, description="Tokens the kept nodes may cost in total (None: no limit)."
    )
    namespace: str | None = Field(default=None, description="Engine namespace of the nodes.")
    relevance: Literal["score", "embedding"] = Field(
        default="score", description="Where relevance comes from: node score or embedding."
    )
    feedback: bool = Field(default=True, description="Boost the nodes kept.")
    category: str | None = Field(
        default=None, description="Category of new nodes (None: inferred)."
    )
    importance: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Importance of new nodes (None: scored)."
    )

    _oblivion: Oblivion | None = PrivateAttr(default=None)

    def __init__(self, oblivion: Oblivion, **data: Any) -> None:
        checked = check_oblivion(oblivion, "OblivionNodePostprocessor")
        check_fields(type(self), data, "OblivionNodePostprocessor")
        super().__init__(**data)
        self._oblivion = checked

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> OblivionNodePostprocessor:
        """Rebuild from :meth:`to_dict` output; the engine is not serialised, pass it:
        ``OblivionNodePostprocessor.from_dict(data, oblivion=Oblivion(path))``."""
        need_engine(kwargs, "OblivionNodePostprocessor")
        return super().from_dict(data, **kwargs)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        restore_private(self)

    @field_validator("namespace", mode="before")
    @classmethod
    def _check_namespace(cls, value: object) -> str | None:
        return check_namespace(value)

    @field_validator("top_n", mode="before")  # before pydantic reads True or "2" as ints
    @classmethod
    def _check_top_n(cls, value: object) -> int | None:
        return check_k(value, "top_n")

    @field_validator("token_budget", mode="before")  # before pydantic reads True or "2" as ints
    @classmethod
    def _check_token_budget(cls, value: object) -> int | None:
        return check_optional_limit(value, "token_budget")

    @classmethod
    def from_defaults(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        oblivion: Oblivion | None = None,
        embed_model: BaseEmbedding | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        **fields: Any,
    ) -> OblivionNodePostprocessor:
        """Open (or create) a store at ``path`` and wrap it.

        Args:
            path: Store directory (``None``: in memory). Not with ``oblivion``.
            oblivion: Use this engine instead of opening one.
            embed_model: Any LlamaIndex ``BaseEmbedding`` (``None``: local MiniLM).
            engine_kwargs: More :class:`Oblivion` arguments (``policy``, ``clock``, ...).
            **fields: Postprocessor settings (``top_n``, ``token_budget``, ...).
        """
        return build_with_engine(
            path,
            oblivion=oblivion,
            embed_model=embed_model,
            engine_kwargs=engine_kwargs,
            make=lambda engine: cls(oblivion=engine, **fields),
        )

    @classmethod
    def class_name(cls) -> str:
        return "OblivionNodePostprocessor"

    @property
    def oblivion(self) -> Oblivion:
        """The engine behind this postprocessor."""
        if self._oblivion is None:
            raise InvalidInputError(
                "this OblivionNodePostprocessor has no engine (it was deserialised); "
                "construct it with oblivion=Oblivion(path)"
            )
        return self._oblivion

    # ------------------------------------------------------------------ ranking
    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        if not nodes:
            return []
        query = (
            query_text(query_bundle, "OblivionNodePostprocessor")
            if query_bundle is not None
            else None
        )
        if isinstance(query, str):
            # NULs and lone surrogates, which the engine refuses in a query, are read as
            # spaces and "?" (as the retrievers and memories read them)
            query = clean_text(query)
        if not isinstance(query, str) or not query:
            raise InvalidInputError(
                "OblivionNodePostprocessor needs the query: call "
                "postprocess_nodes(nodes, query_str=...) or pass a QueryBundle"
            )
        # Validate everything before storing anything: a bad node leaves no trace.
        unique: dict[str, tuple[NodeWithScore, str, float | None]] = {}
        blank: dict[str, None] = {}  # (a node listed twice is named once)
        for nws in nodes:
            if not isinstance(nws, NodeWithScore):
                raise InvalidInputError(
                    f"postprocess_nodes takes NodeWithScore items, got {type(nws).__name__}"
                )
            text = node_text(nws.node)
            if text is None:
                blank[nws.node.node_id] = None
                continue
            score = node_score(nws) if self.relevance == "score" else None
            seen = unique.get(nws.node.node_id)
            if seen is None or (score is not None and (seen[2] is None or score > seen[2])):
                # a node listed twice (two retrievers fused) ranks by its best score
                unique[nws.node.node_id] = (seen[0] if seen else nws, text, score)
        if blank:
            logger.warning(
                "OblivionNodePostprocessor left out %d node(s) of blank text (nothing to "
                "rank or show): %s",
                len(blank),
                ", ".join(map(repr, list(blank)[:5])) + (" ..." if len(blank) > 5 else ""),
            )
        if not unique:
            return []
        memory_of = self._resolve({node_id: text for node_id, (_, text, _) in unique.items()})
        # nodes sharing a memory (one text in two documents, or this run's node and the
        # memory's own node) rank once, as the best scored of them
        ranked: dict[str, tuple[NodeWithScore, str, float | None]] = {}
        # what each memory is registered (or updated) from: the node of its own id if
        # the call has it, else the first; a node matched by content alone never
        # rewrites the memory's metadata (two documents sharing a chunk would take
        # turns writing theirs)
        source: dict[str, _Node] = {}
        for node_id, (nws, text, score) in unique.items():
            memory_id = memory_of[node_id]
            seen = ranked.get(memory_id)
            if seen is None or (score is not None and (seen[2] is None or score > seen[2])):
                ranked[memory_id] = (nws, text, score)
            if memory_id not in source or node_id == memory_id:
                source[memory_id] = _Node(nws, text, own=node_id == memory_id)
        self._register(source)
        result = self.oblivion.rerank(
            query,
            [(memory_id, score) for memory_id, (_, _, score) in ranked.items()],
            namespace=self.namespace,
            token_budget=self.token_budget,
            k=self.top_n,
            feedback=self.feedback,
        )
        return [annotate(ranked[item.id][0].node, item) for item in result]

    # ------------------------------------------------------------------ node -> memory
    def _space_name(self) -> str:
        """The engine namespace of the nodes (the engine's default for ``None``)."""
        return self.namespace if self.namespace is not None else self.oblivion.default_namespace

    def _shared(self) -> _KnownNodes:
        """What the postprocessors of this engine know of this namespace's nodes.

        What they knew of namespaces the engine has since unloaded (and none asked for
        in the last :data:`_IDLE_SECONDS`) is let go when the namespaces known reach
        twice as many as were kept the last time (at least :data:`_MIN_SPACES`): a
        server unloading idle users' namespaces kept every user's node keys and aliases
        (about 70 KB per user of 200 chunks).
        """
        engine, space = self.oblivion, self._space_name()
        now = time.monotonic()
        with _SHARED_LOCK:
            by_space = _SHARED.setdefault(engine, _Spaces())
            known = by_space.get(space)
            if known is not None:
                known.used = now
                return known
            crowded = len(by_space) >= by_space.prune_at
        loaded = set(engine.loaded_namespaces()) if crowded else set()
        with _SHARED_LOCK:
            if crowded:
                # not one in use: a postprocessor between reading its keys and writing
                # a chunk's memory would have its claim forgotten, and a second one
                # write the same chunk again
                idle = now - _IDLE_SECONDS
                for name, held in list(by_space.items()):
                    if name not in loaded and name != space and held.used < idle:
                        del by_space[name]
                by_space.prune_at = max(_MIN_SPACES, 2 * len(by_space))
            known = by_space.setdefault(space, _KnownNodes())
            known.used = now
            return known

    def _known(self) -> _KnownNodes:
        """:meth:`_shared`, its content keys read from the store the first time."""
        known = self._shared()
        if not known.loaded:
            # read without the lock (a large store takes a while); the first reader to
            # finish installs its reading, which predates any registration by key
            by_key = _stored_keys(self.oblivion, self._space_name())
            with known.lock:
                if not known.loaded:
                    known.by_key.update(by_key)
                    known.loaded = True
        return known

    def _memory_of(self, node_id: str) -> str:
        """The memory a node id stands for: the one it was matched to by content in this
        process, else the memory of that id."""
        known = self._shared()
        with known.lock:
            return known.alias.get(node_id, node_id)

    def _held_text(self, memory_id: str) -> str | None:
        """The text of memory ``memory_id``, ``None`` when the engine does not hold it."""
        try:
            return self.oblivion.get(memory_id, namespace=self.namespace).text
        except (UnknownMemoryError, UnknownNamespaceError):
            return None

    def _resolve(self, texts: dict[str, str]) -> dict[str, str]:
        """The memory id of each node (``texts``: node id -> text).

        A node id the engine holds (or matched earlier in this process) keeps its memory.
        Any other node takes the memory holding its content key, when that memory holds
        the same text; else it claims the key for a memory of its own id, which
        :meth:`_register` then writes. The claim is made before the write, so callers
        registering the same text under other node ids at the same time take the same
        memory id, and the engine's refusal of an id it holds settles who writes it.
        """
        known = self._known()
        with known.lock:
            memory_of = {i: known.alias[i] for i in texts if i in known.alias}
        taken = {memory_of[i]: texts[i] for i in memory_of}  # memory id -> text it will hold
        unheld: list[str] = []
        for node_id, text in texts.items():
            if node_id in memory_of:
                continue
            if self._held_text(node_id) is not None:
                memory_of[node_id] = node_id
                taken.setdefault(node_id, text)
            else:
                unheld.append(node_id)
        for node_id in unheld:
            text = texts[node_id]
            key = node_key(text)
            with known.lock:
                memory_id = known.by_key.setdefault(key, node_id)
            if memory_id != node_id:
                held = self._held_text(memory_id)
                if (held is not None and held != text) or taken.get(memory_id, text) != text:
                    # that memory was edited to another text since (or a node of this
                    # call is about to edit it): this text gets a memory of its own
                    with known.lock:
                        if known.by_key.get(key) == memory_id:
                            del known.by_key[key]
                        memory_id = known.by_key.setdefault(key, node_id)
                    if taken.get(memory_id, text) != text:
                        memory_id = node_id
            memory_of[node_id] = memory_id
            taken.setdefault(memory_id, text)
            if memory_id != node_id:
                with known.lock:
                    known.add_alias(node_id, memory_id)
        return memory_of

    def _keyed(self, written: Mapping[str, tuple[str | None, str]]) -> None:
        """Keep the content keys up to date with what was written: ``memory id ->
        (text held before or None, text held now)``."""
        known = self._known()
        with known.lock:
            for memory_id, (before, after) in written.items():
                if before is not None and before != after:
                    old = node_key(before)
                    if known.by_key.get(old) == memory_id:
                        del known.by_key[old]
                known.by_key.setdefault(node_key(after), memory_id)

    # ------------------------------------------------------------------ registration
    def _register(self, nodes: dict[str, _Node]) -> None:
        """Remember nodes never seen before; re-embed nodes whose text changed
        (``nodes``: memory id -> node; see :meth:`_resolve`).

        Nodes are documents, not statements made over time: the order a retriever
        lists them in says nothing about which is newer, so they are not judged for
        stale-fact supersession.

        Other callers may register the same nodes at the same time (postprocessors
        sharing the engine, one per request, or this one from several threads); no lock
        is held across the engine's calls. The engine refuses, all or nothing, an id it
        already holds, so a refused batch is looked up again and the nodes still
        unknown are registered (a node registered meanwhile with other text is edited).
        """
        engine = self.oblivion
        new, changed, retexted = self._unknown(nodes)
        # Every text to be written is checked, as the engine checks it, before anything
        # is written: a changed node refused by its edit, after the batch of new nodes,
        # left that batch stored.
        self._check_texts({i: nodes[i].text for i in [*new, *retexted]}, set(retexted))
        while new:
            try:
                engine.remember_many(
                    [nodes[i].text for i in new],
                    ids=new,
                    categories=[self.category] * len(new),
                    importances=[self.importance] * len(new),
                    metadatas=[nodes[i].metadata for i in new],
                    namespace=self.namespace,
                    supersede=False,
                )
                self._keyed({i: (None, nodes[i].text) for i in new})
                break
            except InvalidInputError as exc:
                still_new, changed_since, _ = self._unknown({i: nodes[i] for i in new})
                if len(still_new) < len(new):  # registered meanwhile by another caller
                    new = still_new
                    changed.extend(changed_since)
                    continue
                named = _refused(exc, new, "Nothing was stored.")
                if named is None:
                    raise
                raise named from exc
        for memory_id in changed:
            text = nodes[memory_id].text
            try:
                held = engine.get(memory_id, namespace=self.namespace).text
                engine.edit(
                    memory_id,
                    text if text != held else None,
                    metadata=nodes[memory_id].metadata,
                    namespace=self.namespace,
                    supersede=False,
                )
            except InvalidInputError as exc:
                named = _refused(exc, [memory_id], "Its stored text is unchanged.")
                if named is None:
                    raise
                raise named from exc
            self._keyed({memory_id: (held, text)})

    def _unknown(self, nodes: dict[str, _Node]) -> tuple[list[str], list[str], list[str]]:
        """``(new, changed, retexted)``: ids of the memories the engine does not hold, of
        those it holds with another text or metadata (a memory registered before
        content keys were stored gets its key so), and of those among them whose text
        changed."""
        engine = self.oblivion
        new: list[str] = []
        changed: list[str] = []
        retexted: list[str] = []
        for memory_id, entry in nodes.items():
            try:
                record = engine.get(memory_id, namespace=self.namespace)
            except UnknownNamespaceError:
                return list(nodes), [], []
            except UnknownMemoryError:
                new.append(memory_id)
                continue
            if record.text != entry.text:
                retexted.append(memory_id)
            if record.text != entry.text or (
                entry.own and _json(record.metadata) != _json(entry.metadata)
            ):
                changed.append(memory_id)
        return new, changed, retexted

    def _check_texts(self, texts: dict[str, str], held: set[str]) -> None:
        """Refuse, naming the node, a text the engine would refuse (a NUL, a lone
        surrogate, more than ``policy.max_text_chars`` characters), before anything of
        the call is written; ``held``: ids of nodes the engine holds (with another text)."""
        engine = self.oblivion
        try:
            policy = engine.policy_for(self.namespace)
        except UnknownNamespaceError:  # a namespace's first write uses the default policy
            policy = engine.policy
        max_chars = policy.max_text_chars
        for node_id, text in texts.items():
            try:
                check_text(text, max_chars, "text")
            except InvalidInputError as exc:
                outcome = "Its stored text is unchanged. " if node_id in held else ""
                named = _refused(exc, [node_id], outcome + "Nothing was stored.")
                if named is None:
                    raise
                raise named from exc

    # ------------------------------------------------------------------ feedback
    def mark_used(self, node_ids: Iterable[str]) -> list[float]:
        """Give the larger "used" boost to nodes the answer actually drew on.

        Args:
            node_ids: Ids of nodes this postprocessor has seen (e.g. from
                ``response.source_nodes``); a node matched by content to a memory
                registered under another id boosts that memory.

        Returns:
            The nodes' new activations, in the order given.

        Raises:
            UnknownMemoryError: an id was never seen here; nothing is boosted.
        """
        return mark_used(
            self.oblivion,
            node_ids,
            self.namespace,
            "OblivionNodePostprocessor",
            self._memory_of,
        )

    async def amark_used(self, node_ids: Iterable[str]) -> list[float]:
        """Async :meth:`mark_used` (runs in a worker thread)."""
        return await asyncio.to_thread(self.mark_used, node_ids)


class _Node(NamedTuple):
    """A node to register: its text and the metadata stored with it; ``own``: its id is
    the memory's (a node matched to the memory by content alone leaves its metadata)."""

    nws: NodeWithScore
    text: str
    own: bool = True

    @property
    def metadata(self) -> dict[str, Any]:
        """The node's storable metadata and its content key."""
        return {**json_metadata(self.nws.node.metadata), META_NODE_KEY: node_key(self.text)}


#: The node ids :class:`_KnownNodes` keeps matched to memories: this many per content
#: key, the newest first (two indexes built from one corpus at once), at least
#: :data:`MIN_ALIASES`. A ``mark_used`` of a node id dropped since (of an index built
#: many times over) names it as never seen.
ALIASES_PER_KEY = 2
MIN_ALIASES = 4_096


class _KnownNodes:
    """What the postprocessors of one engine know of one namespace's nodes (guarded by
    ``lock``; never held across the engine's calls but :func:`_stored_keys`' read)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loaded = False
        #: when a postprocessor last asked for it (``time.monotonic()``)
        self.used = time.monotonic()
        #: content key -> the memory holding (or claimed to hold) that text
        self.by_key: dict[str, str] = {}
        #: node id -> the memory it was matched to by content (ids of this process)
        self.alias: OrderedDict[str, str] = OrderedDict()

    def add_alias(self, node_id: str, memory_id: str) -> None:
        """Note that ``node_id`` stands for ``memory_id`` (call with :attr:`lock` held).
        The newest :data:`ALIASES_PER_KEY` times as many as there are content keys are
        kept (at least :data:`MIN_ALIASES`): an index built again each day gives every
        node a new id, and the old ones never come back."""
        self.alias[node_id] = memory_id
        self.alias.move_to_end(node_id)
        keep = max(MIN_ALIASES, ALIASES_PER_KEY * len(self.by_key))
        while len(self.alias) > keep:
            self.alias.popitem(last=False)


class _Spaces(dict[str, _KnownNodes]):
    """One engine's :class:`_KnownNodes` by namespace."""

    def __init__(self) -> None:
        super().__init__()
        #: how many namespaces known make :meth:`OblivionNodePostprocessor._shared`
        #: let go of those the engine unloaded
        self.prune_at = _MIN_SPACES


#: Namespaces known per engine before any is let go (:class:`_Spaces`).
_MIN_SPACES = 64
#: Seconds a namespace's :class:`_KnownNodes` must have gone unused to be let go.
_IDLE_SECONDS = 60.0

#: Per engine (while it lives), per namespace: shared by every postprocessor of the
#: engine, so one built per request neither reads the store's keys again nor misses
#: another's registrations.
_SHARED: weakref.WeakKeyDictionary[Oblivion, _Spaces] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def _stored_keys(engine: Oblivion, namespace: str) -> dict[str, str]:
    """Content key -> memory id, of the namespace's memories whose stored key still
    matches their text (the oldest written first, when several share one)."""
    try:
        records = engine.records(namespace=namespace)
    except UnknownNamespaceError:
        return {}
    by_key: dict[str, str] = {}
    for record in records:
        key = record.metadata.get(META_NODE_KEY)
        if isinstance(key, str) and key == node_key(record.text):
            by_key.setdefault(key, record.id)
    return by_key


def _json(metadata: Mapping[str, Any]) -> str:
    """Metadata as stored (JSON: a tuple reads back as a list), to compare."""
    return json.dumps(metadata, sort_keys=True)


def _refused(exc: InvalidInputError, node_ids: list[str], outcome: str) -> InvalidInputError | None:
    """The engine's refusal of a node text, naming the node rather than its index in an
    internal batch (``texts[2]``), which the caller cannot map back to a node; ``None``
    when ``exc`` is not about a text."""
    refusal = text_refusal(exc)
    if refusal is None or refusal[0] >= len(node_ids):
        return None
    index, why = refusal
    return renamed(
        exc,
        f"node {node_ids[index]!r} cannot be stored: {why} (or filter the node out before "
        f"OblivionNodePostprocessor). {outcome}",
    )
