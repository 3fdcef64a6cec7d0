"""A LangChain retriever over Oblivion: documents ranked by relevance *and* activation."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever, LangSmithRetrieverParams
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, field_validator

from oblivion_core import Oblivion, Policy
from oblivion_core.checks import check_plain_namespace, check_text
from oblivion_core.errors import InvalidInputError, UnknownMemoryError, UnknownNamespaceError
from oblivion_core.records import check_metadata
from oblivion_core.where import compile_where
from oblivion_langchain._convert import (
    PlainNamespace,
    appraise,
    budget,
    clean_text,
    positive_k,
    to_document,
    user_metadata,
)

#: Attempts ``add_documents`` makes, beyond one per document, when other writers keep
#: storing or deleting its ids between its read and its write (see there).
_ADD_ATTEMPTS = 3


class OblivionRetriever(BaseRetriever):
    """Retrieve memories from an :class:`~oblivion_core.Oblivion` store as ``Document`` s.

    Every call is one ``Oblivion.recall``: candidates are ranked by
    ``relevance + activation + importance`` (the engine's formula), packed into an
    optional token budget, and — unless ``feedback=False`` — the returned memories get
    the engine's recall boost, so what keeps being retrieved keeps its place.

    Each ``Document`` has ``id`` = the memory id, ``page_content`` = the memory text and
    ``metadata`` = the memory's own metadata plus ``id``, ``namespace``, ``category``,
    ``tier`` (``"active"``/``"archive"``/``"cold"``), ``relevance``, ``activation`` (as
    ranked, before this call's boost), ``importance``, ``score``, ``tokens`` and ``why``
    (every term of the score and a sentence; ``why["boost"]`` is the boost it received).
    Those keys override user metadata keys of the same name on output only: a
    retrieved document given back to :meth:`add_documents` (edited, to update the
    memory) stores its metadata without them, as the user's own metadata stood.

    Setup:
        Install the extra: ``pip install "oblivion-memory[langchain]"``.

    Instantiate:
        .. code-block:: python

            from oblivion_core import Oblivion
            from oblivion_langchain import OblivionRetriever

            memory = Oblivion("./memory")  # any LangChain Embeddings: Oblivion(..., embedder=emb)
            retriever = OblivionRetriever(oblivion=memory, k=4, token_budget=300)

        or in one step, with a LangChain ``Embeddings``:

        .. code-block:: python

            retriever = OblivionRetriever.from_path("./memory", embeddings=my_embeddings, k=4)

    Add:
        .. code-block:: python

            memory.remember("Always answer in British English.", category="instruction")
            memory.remember("The office moved to Leeds in March.")

    Retrieve:
        .. code-block:: python

            docs = retriever.invoke("Where is the office?")
            docs[0].page_content            # 'The office moved to Leeds in March.'
            docs[0].metadata["tier"]        # 'active'
            docs[0].metadata["why"]["explanation"]
            retriever.invoke("spelling", k=1, token_budget=50)   # per-call overrides
            retriever.invoke("Where is the office?", filter={"source": "email"})
            retriever.invoke("Where is the office?", where_document={"$contains": "Leeds"})
            await retriever.ainvoke("Where is the office?")

    Add and give feedback:
        .. code-block:: python

            retriever.add_documents([Document(page_content="Refunds take 5 days.")])
            docs = retriever.invoke("How long do refunds take?")
            retriever.mark_used(docs[:1])   # the answer used it: the larger boost

    Use in a chain:
        .. code-block:: python

            chain = {"context": retriever, "question": RunnablePassthrough()} | prompt | model

    A namespace that was never written to, or an empty or whitespace-only query,
    returns no documents. NULs in the query are searched as spaces and lone surrogates
    as ``"?"`` (the engine refuses both); a query of nothing but NULs finds nothing.

    Attributes:
        oblivion: The engine to recall from.
        namespace: Namespace to search (``None``: the engine's default namespace).
        k: Maximum documents per call (``None``: the policy's ``default_k``).
        token_budget: Tokens the returned texts may cost in total (``None``: no limit).
        deep: ``True`` always searches the archive, ``False`` never, ``None`` lets the
            engine's gate decide.
        feedback: Give the returned memories the recall boost (default). ``False`` reads only.
        filter: Only memories whose metadata pass this filter, in Chroma's ``where``
            syntax, as ``Chroma.as_retriever(search_kwargs={"filter": ...})`` takes it:
            ``{"source": "email"}``, ``{"year": {"$gte": 2025}}``, ``$in``, ``$and``,
            ``$or`` (``Oblivion.recall``'s ``where``).
        where_document: Only memories whose text passes this filter, in Chroma's
            ``where_document`` syntax, as a Chroma retriever's ``search_kwargs`` take it:
            ``{"$contains": "Leeds"}``, ``$not_contains``, ``$regex``, ``$not_regex``,
            ``$and``, ``$or``. With ``filter``, both must hold.

    An unknown field (``search_kwargs=...``, a misspelling) is refused when the retriever
    is built, as an unknown ``invoke()`` argument is when it is called.
    """

    # BaseRetriever's config plus extra="forbid": a misspelt or foreign field (e.g.
    # search_kwargs={"k": 1}) is an error, not silently dropped.
    model_config = ConfigDict(
        **{**BaseRetriever.model_config, "extra": "forbid", "validate_assignment": True}
    )

    oblivion: Oblivion
    namespace: PlainNamespace = None
    k: int | None = None
    token_budget: int | None = None
    deep: bool | None = None
    feedback: bool = True
    filter: dict[str, Any] | None = None
    where_document: dict[str, Any] | None = None

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: object) -> int | None:
        return positive_k(value)

    @field_validator("token_budget", mode="before")
    @classmethod
    def _check_budget(cls, value: object) -> int | None:
        return budget(value)

    @field_validator("filter", mode="before")
    @classmethod
    def _check_filter(cls, value: object) -> object:
        compile_where(value)  # refused when the retriever is built, not at its first call
        return value

    @field_validator("where_document", mode="before")
    @classmethod
    def _check_where_document(cls, value: object) -> object:
        compile_where(None, value)
        return value

    @classmethod
    def from_path(
        cls,
        path: str | os.PathLike[str] | None,
        *,
        embeddings: Embeddings | None = None,
        policy: Policy | str | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        **fields: Any,
    ) -> OblivionRetriever:
        """Open (or create) an Oblivion store at ``path`` and wrap it.

        Args:
            path: Store directory (``None``: in memory).
            embeddings: Any LangChain ``Embeddings`` (``None``: the local MiniLM model).
            policy: A :class:`~oblivion_core.Policy` or template name.
            engine_kwargs: More :class:`~oblivion_core.Oblivion` arguments, e.g.
                ``{"vector_store": VectorStore.server("chroma.internal", 8000)}``.
            **fields: Retriever fields (``namespace``, ``k``, ``token_budget``, ...).
        """
        engine = Oblivion(path, embedder=embeddings, policy=policy, **(engine_kwargs or {}))
        return cls(oblivion=engine, **fields)

    def add_documents(
        self,
        documents: Sequence[Document],
        *,
        ids: Sequence[str | None] | None = None,
        category: str | None = None,
    ) -> list[str]:
        """Remember ``documents`` in this retriever's namespace, as a vector store
        retriever's ``add_documents`` stores them: ``page_content`` is the text,
        ``metadata`` the memory's metadata, the id ``ids[i]`` or else ``id`` (when set).
        A document whose id the namespace holds already replaces that memory's text
        and metadata (``Oblivion.edit``: its activation is kept); the others are stored
        in one batch (one embedding call, one commit). Every document is checked before
        anything is written: if one is refused, nothing changes. Concurrent calls
        with the same ids upsert too: an id another call stores or deletes meanwhile is
        replaced or stored anew, never refused as taken. Category and
        importance are inferred from each text unless ``category`` is given. A
        document this retriever returned (its metadata holds every ranking key, ``id``
        equal to its id, and a ``why`` dict) is stored without the ranking keys
        (``id``, ``namespace``, ``category``, ``tier``, ``relevance``, ``activation``,
        ``importance``, ``score``, ``tokens``, ``why``): the memory keeps exactly its
        user metadata. A user key of one of those names, which the document shows
        overwritten by the ranking value, is kept when the document updates its memory
        in place, and lost when it is stored anew (in another namespace, or after its
        memory was forgotten). Returns the memory ids, in order.

        Raises:
            InvalidInputError: not a list of ``Document`` s, ``ids`` not one per
                document, or a document the engine refuses (empty text, metadata that
                is not JSON, an id given twice).
        """
        if isinstance(documents, Document) or not isinstance(documents, Sequence):
            raise InvalidInputError(
                f"documents must be a list of Document, got {type(documents).__name__}"
            )
        wrong = [type(d).__name__ for d in documents if not isinstance(d, Document)]
        if wrong:
            raise InvalidInputError(f"documents must be a list of Document, got {wrong[0]}")
        if ids is not None and (isinstance(ids, str) or not isinstance(ids, Sequence)):
            raise InvalidInputError(f"ids must be a list of strings, got {type(ids).__name__}")
        if ids is not None and len(ids) != len(documents):
            raise InvalidInputError(
                f"ids has {len(ids)} entries for {len(documents)} documents; give one per "
                "document (None for a new id)"
            )
        given = list(ids) if ids is not None else [d.id for d in documents]
        out: dict[int, str] = {}  # position -> memory id, of the documents written
        # Another writer on the engine (a concurrent add_documents with the same ids)
        # may store or delete an id between the read of which ids are held and the
        # write. The write then fails without changing anything, and what is not
        # written yet is sorted again on what is there now: an id stored meanwhile is
        # replaced, one deleted meanwhile is stored anew (as OblivionStore's put does).
        # Each such retry follows another writer's change to one of the ids, so a few
        # more than one per document always settle it.
        for attempt in range(len(documents) + _ADD_ATTEMPTS):
            last = attempt + 1 == len(documents) + _ADD_ATTEMPTS
            todo = [i for i in range(len(documents)) if i not in out]
            held = self._held(given, todo)
            if held:
                # Upsert: the replacements are checked first, then the new documents
                # stored in one all-or-nothing batch, then the replacements made.
                policy = self.oblivion.policy_for(self.namespace)
                for i in held:
                    check_text(documents[i].page_content, policy.max_text_chars, f"documents[{i}]")
                    check_metadata(user_metadata(documents[i]), f"documents[{i}].metadata")
                if len({given[i] for i in held}) != len(held):
                    raise InvalidInputError("ids must be unique within one add_documents() call")
            fresh = [i for i in todo if i not in held]
            if fresh:
                try:
                    stored = self._add_new(
                        [documents[i] for i in fresh], [given[i] for i in fresh], category
                    )
                except InvalidInputError:
                    if last or not self._held(given, fresh):
                        raise  # no id of them stored meanwhile: a document is refused
                    continue
                out.update(zip(fresh, stored, strict=True))
            vanished = False
            for i in held:
                try:
                    out[i] = self._replace(documents[i], str(given[i]), category)
                except UnknownMemoryError:
                    if last or self._held(given, [i]):
                        raise  # not deleted meanwhile: a real error
                    vanished = True  # stored anew on the next attempt
                    break
            if not vanished:
                break
        return [out[i] for i in range(len(documents))]

    def _replace(self, doc: Document, memory_id: str, category: str | None) -> str:
        """Give the stored memory ``memory_id`` the text and metadata of ``doc``."""
        current = self.oblivion.get(memory_id, namespace=self.namespace)
        text = doc.page_content if doc.page_content != current.text else None
        cat, importance = (
            appraise(self.oblivion, doc.page_content)
            if text is not None and category is None
            else (category, None)
        )
        self.oblivion.edit(
            memory_id,
            text,
            # a retrieved document's ranking keys dropped, the user's own of those names kept
            metadata=user_metadata(doc, current.metadata),
            namespace=self.namespace,
            category=cat,
            importance=importance,
        )
        return memory_id

    def _held(self, ids: Sequence[object], positions: Iterable[int]) -> list[int]:
        """The ``positions`` of ``ids`` naming a memory this retriever's namespace holds."""
        held = []
        for i in positions:
            memory_id = ids[i]
            if not isinstance(memory_id, str):
                continue  # None: a new id; anything else is refused by remember_many
            try:
                self.oblivion.get(memory_id, namespace=self.namespace)
            except (UnknownMemoryError, UnknownNamespaceError, InvalidInputError):
                continue
            held.append(i)
        return held

    def _add_new(
        self, documents: Sequence[Document], ids: Sequence[str | None], category: str | None
    ) -> list[str]:
        records = self.oblivion.remember_many(
            [d.page_content for d in documents],
            categories=[category] * len(documents),
            metadatas=[user_metadata(d) for d in documents],  # no ranking keys
            ids=ids,
            namespace=self.namespace,
        )
        return [r.id for r in records]

    async def aadd_documents(
        self,
        documents: Sequence[Document],
        *,
        ids: Sequence[str | None] | None = None,
        category: str | None = None,
    ) -> list[str]:
        """Async :meth:`add_documents` (runs in a worker thread)."""
        return await run_in_executor(
            None, self.add_documents, documents, ids=ids, category=category
        )

    def mark_used(self, used: Document | str | Iterable[Document | str]) -> list[float]:
        """Give the larger "used" boost to the documents (or memory ids) the answer drew
        on: ``retriever.mark_used(docs[:1])``. Returns their new activations.

        A document is boosted in the namespace its metadata names (a call with
        ``namespace=`` returns another namespace's documents); an id, in this
        retriever's namespace.

        Raises:
            UnknownMemoryError: one is not a memory of its namespace; nothing is boosted.
        """
        if isinstance(used, str | Document):
            items: list[object] = [used]
        elif isinstance(used, Iterable) and not isinstance(used, bytes | Mapping):
            items = list(used)
        else:
            raise InvalidInputError(
                f"mark_used takes a Document, a memory id, or a list of them, got "
                f"{type(used).__name__}"
            )
        default = self.namespace if self.namespace is not None else self.oblivion.default_namespace
        wanted: list[tuple[str, str]] = []  # (namespace, id) of each, in order
        for item in items:
            if isinstance(item, Document):
                memory_id = item.id
                ns = item.metadata.get("namespace")
                ns = ns if isinstance(ns, str) else default
            elif isinstance(item, str):
                memory_id, ns = item, default
            else:
                raise InvalidInputError(
                    f"mark_used takes Documents or memory ids, got a {type(item).__name__}"
                )
            if memory_id is None:
                raise InvalidInputError(
                    "a Document without an id cannot be marked used; pass documents this "
                    "retriever returned (their id is the memory's)"
                )
            wanted.append((ns, memory_id))
        spaces = list(dict.fromkeys(ns for ns, _ in wanted))
        if len(spaces) > 1:  # every one checked first, so a wrong one boosts nothing
            for ns, memory_id in wanted:
                self.oblivion.get(memory_id, namespace=ns)
        boosted: dict[tuple[str, str], float] = {}
        for space in spaces:
            ids = [m for ns, m in wanted if ns == space]
            activations = self.oblivion.mark_used(ids, namespace=space)
            boosted.update(zip(((space, m) for m in ids), activations, strict=True))
        return [boosted[w] for w in wanted]

    async def amark_used(self, used: Document | str | Iterable[Document | str]) -> list[float]:
        """Async :meth:`mark_used` (runs in a worker thread)."""
        return await run_in_executor(None, self.mark_used, used)

    def _get_ls_params(self, **kwargs: Any) -> LangSmithRetrieverParams:
        params = super()._get_ls_params(**kwargs)
        params["ls_vector_store_provider"] = "oblivion"
        return params

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        **overrides: Any,
    ) -> list[Document]:
        return self._recall(query, **overrides)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        **overrides: Any,
    ) -> list[Document]:
        # The engine is synchronous and thread-safe: run it off the event loop.
        return await run_in_executor(None, self._recall, query, **overrides)

    def _recall(
        self,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | None = None,
        namespace: str | None = None,
        deep: bool | None = None,
        feedback: bool | None = None,
        filter: dict[str, Any] | None = None,
        where_document: dict[str, Any] | None = None,
        verbose: Any = None,
        run_id: Any = None,
        **unknown: Any,
    ) -> list[Document]:
        # verbose and run_id are BaseRetriever.invoke's own arguments, used there
        if unknown:
            raise InvalidInputError(
                f"unknown retriever argument(s) {sorted(unknown)}; use k, token_budget, "
                "namespace, deep, feedback, filter or where_document"
            )
        if isinstance(namespace, str):
            check_plain_namespace(namespace)
        where = filter if filter is not None else self.filter
        if where_document is None:
            where_document = self.where_document
        compile_where(where, where_document)  # a bad filter is refused even for an empty query
        k = positive_k(k) if k is not None else self.k
        token_budget = budget(token_budget) if token_budget is not None else self.token_budget
        if isinstance(query, str):
            # NULs and lone surrogates (a pasted binary, a badly decoded file) would make
            # the engine reject the query: they become spaces and "?".
            query = clean_text(query)
            if not query:
                # Like LangChain's vector-store retrievers, an empty query is not an error
                # (an agent's tool call may send one): it finds nothing and boosts nothing.
                return []
        try:
            result = self.oblivion.recall(
                query,
                k=k,
                token_budget=token_budget,
                namespace=namespace if namespace is not None else self.namespace,
                deep=deep if deep is not None else self.deep,
                feedback=feedback if feedback is not None else self.feedback,
                where=where,
                where_document=where_document,
            )
        except UnknownNamespaceError:
            return []
        return [to_document(item) for item in result]
