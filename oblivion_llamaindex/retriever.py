"""A LlamaIndex retriever over an Oblivion store."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from oblivion_core.budget import check_k
from oblivion_core.checks import clean_text
from oblivion_core.engine import Oblivion
from oblivion_core.errors import InvalidInputError, UnknownNamespaceError
from oblivion_llamaindex._convert import (
    check_namespace,
    check_optional_limit,
    item_to_node,
)
from oblivion_llamaindex._engine import (
    build_with_engine,
    check_oblivion,
    mark_used,
    query_text,
)
from oblivion_llamaindex._filters import to_where


class OblivionRetriever(BaseRetriever):
    """Retrieves memories, ranked by relevance and activation, as LlamaIndex nodes.

    Each hit is a ``NodeWithScore`` whose node id is the memory id and whose score is
    the engine's combined score. Its metadata is the memory's own metadata (without
    the content key ``OblivionNodePostprocessor`` stores, ``oblivion_node_key``) plus
    ``oblivion_id``, ``oblivion_tier``, ``oblivion_relevance``, ``oblivion_activation``,
    ``oblivion_importance``, ``oblivion_category``, ``oblivion_score`` and
    ``oblivion_why`` (every term of the score and a sentence); those keys are hidden
    from the LLM and the embedder. Retrieval boosts what it returns unless
    ``feedback=False``. A namespace that was never written, or an empty or blank query,
    returns no nodes. NULs in the query are searched as spaces and lone surrogates as
    ``"?"`` (the engine refuses both); a query of nothing else finds nothing. A
    ``QueryBundle``'s ``custom_embedding_strs`` (set by HyDE and other query
    transforms), joined, are what is searched for, as vector retrievers embed them.
    The engine embeds the query text with its own model, so a bundle's ``embedding`` is
    not used: a bundle with both is searched by its text, and one with an embedding
    and no query text (no ``query_str``, no ``custom_embedding_strs``) is refused
    (``InvalidInputError``) rather than finding nothing.

    Example::

        from oblivion_core import Oblivion
        from oblivion_llamaindex import OblivionRetriever

        mem = Oblivion("./memory")
        mem.remember("Refunds take 5 working days.", category="fact")
        retriever = OblivionRetriever(mem, k=4, token_budget=500)
        for hit in retriever.retrieve("how long do refunds take?"):
            print(hit.score, hit.node.text, hit.node.metadata["oblivion_tier"])
        engine = RetrieverQueryEngine.from_args(retriever, llm=llm)

    Args:
        oblivion: The engine to search (shareable).
        namespace: Engine namespace to search (``None``: the engine's default).
        k: At most this many nodes (``None``: ``policy.default_k``).
        token_budget: Tokens the returned texts may cost in total (``None``: no limit).
        deep: ``True`` always searches the archive, ``False`` never, ``None`` lets the
            engine's gate decide.
        feedback: Boost what is returned.
        filters: Only memories whose metadata pass these ``MetadataFilters`` (``==``,
            ``!=``, ``>``, ``>=``, ``<``, ``<=``, ``in``, ``nin``; ``contains``, ``any``,
            ``all`` for list values; ``AND``/``OR``, nested), as a vector index
            retriever's ``filters``; the engine's ``where``.
        callback_manager: LlamaIndex callbacks.
        verbose: LlamaIndex verbosity.
    """

    def __init__(
        self,
        oblivion: Oblivion,
        *,
        namespace: str | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        deep: bool | None = None,
        feedback: bool = True,
        filters: MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self._oblivion = check_oblivion(oblivion, "OblivionRetriever")
        if deep is not None and not isinstance(deep, bool):
            raise InvalidInputError(f"deep must be True, False or None, got {deep!r}")
        self.namespace = check_namespace(namespace)
        self.k = check_k(k, "k")
        self.token_budget = check_optional_limit(token_budget, "token_budget")
        self.deep = deep
        self.feedback = bool(feedback)
        self.filters = filters
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def filters(self) -> MetadataFilters | None:
        """The ``MetadataFilters`` each retrieval keeps to (``None``: none)."""
        return self._filters

    @filters.setter
    def filters(self, filters: MetadataFilters | None) -> None:
        # refused when set, not at the next retrieval; translated again by each
        # retrieval, so one changed in place (filters.filters.append(...)) is applied,
        # as a vector index retriever reads its filters on every query
        to_where(filters)
        self._filters = filters

    @classmethod
    def from_defaults(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        oblivion: Oblivion | None = None,
        embed_model: BaseEmbedding | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        **settings: Any,
    ) -> OblivionRetriever:
        """Open (or create) a store at ``path`` and retrieve from it.

        Args:
            path: Store directory (``None``: in memory). Not with ``oblivion``.
            oblivion: Use this engine instead of opening one.
            embed_model: Any LlamaIndex ``BaseEmbedding`` (``None``: local MiniLM).
            engine_kwargs: More :class:`Oblivion` arguments (``policy``, ``clock``, ...).
            **settings: Retriever settings (``k``, ``token_budget``, ...).
        """
        return build_with_engine(
            path,
            oblivion=oblivion,
            embed_model=embed_model,
            engine_kwargs=engine_kwargs,
            make=lambda engine: cls(engine, **settings),
        )

    @property
    def oblivion(self) -> Oblivion:
        """The engine behind this retriever."""
        return self._oblivion

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_text(query_bundle, "OblivionRetriever")
        if isinstance(query, str):
            # NULs and lone surrogates (a pasted binary, a badly decoded file) would make
            # the engine refuse the query: they are searched as spaces and "?"
            query = clean_text(query)
            if not query:
                # as with LlamaIndex's vector retrievers, not an error (an agent's tool
                # call may send one): nothing is found and nothing boosted
                return []
        try:
            result = self._oblivion.recall(
                query,
                token_budget=self.token_budget,
                k=self.k,
                namespace=self.namespace,
                deep=self.deep,
                feedback=self.feedback,
                where=to_where(self._filters),
            )
        except UnknownNamespaceError:
            return []
        return [item_to_node(item) for item in result]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # The engine is thread-safe; embedding and SQLite work stay off the event loop.
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def mark_used(self, node_ids: Iterable[str]) -> list[float]:
        """Give the larger "used" boost to retrieved memories the answer drew on.

        Raises:
            UnknownMemoryError: an id is not a memory in this namespace; nothing is boosted.
        """
        return mark_used(self._oblivion, node_ids, self.namespace, "OblivionRetriever")

    async def amark_used(self, node_ids: Iterable[str]) -> list[float]:
        """Async :meth:`mark_used` (runs in a worker thread)."""
        return await asyncio.to_thread(self.mark_used, node_ids)
