"""OblivionRetriever: recall as LangChain documents."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from _lc_helpers import ScriptedChatModel
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import create_retriever_tool

from oblivion_core import (
    InvalidInputError,
    Oblivion,
    Tier,
    UnknownMemoryError,
    VectorStore,
)
from oblivion_core.testing import HashEmbedder, ManualClock, word_count
from oblivion_langchain import OblivionRetriever
from oblivion_langchain._convert import DOCUMENT_KEYS

DAY = 86_400.0

FACTS = [
    "Always answer in British English.",
    "The office moved to Leeds in March.",
    "The quarterly report is due on Friday.",
    "Lovely weather today!",
]


class HashLangChainEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` returning plain lists (what real providers return)."""

    def __init__(self) -> None:
        self._inner = HashEmbedder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts as lists of floats."""
        return self._inner.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embed a query as a list of floats."""
        return self._inner.embed_query(text).tolist()


@pytest.fixture
def filled(engine: Oblivion) -> Oblivion:
    """The fast engine holding FACTS."""
    engine.remember_many(FACTS)
    return engine


def test_documents_carry_the_ranking_facts(filled: Oblivion) -> None:
    """Each document has the memory id and its tier, relevance, activation, score and why."""
    docs = OblivionRetriever(oblivion=filled).invoke("Where is the office now?")
    assert all(isinstance(d, Document) for d in docs)
    top = docs[0]
    assert top.page_content == "The office moved to Leeds in March."
    assert top.id == top.metadata["id"]
    assert filled.get(top.id).text == top.page_content
    for key in ("tier", "relevance", "activation", "score", "why", "category", "namespace"):
        assert key in top.metadata
    assert top.metadata["tier"] == "active"
    assert "ranked 1 of" in top.metadata["why"]["explanation"]
    assert top.metadata["score"] == pytest.approx(top.metadata["why"]["score"])


def test_user_metadata_is_kept_and_ranking_keys_win(engine: Oblivion) -> None:
    """User metadata is returned; keys the retriever sets override user keys of that name."""
    engine.remember("Budget is 120 euros a night.", metadata={"source": "chat", "tier": "gold"})
    doc = OblivionRetriever(oblivion=engine).invoke("budget per night")[0]
    assert doc.metadata["source"] == "chat"
    assert doc.metadata["tier"] == "active"


def test_activation_breaks_ties_between_equally_relevant_memories(
    engine: Oblivion, clock: ManualClock
) -> None:
    """Of two memories with the same text, the fresher (higher activation) ranks first."""
    old = engine.remember("The client prefers phone calls.", category="fact")
    clock.advance(30 * DAY)
    new = engine.remember("The client prefers phone calls.", category="fact")
    docs = OblivionRetriever(oblivion=engine, k=2).invoke("client phone")
    assert [d.id for d in docs] == [new.id, old.id]
    assert docs[0].metadata["relevance"] == pytest.approx(docs[1].metadata["relevance"])
    assert docs[0].metadata["activation"] > docs[1].metadata["activation"]


def test_a_used_memory_outranks_an_equally_relevant_unused_one(engine: Oblivion) -> None:
    """The engine's "used" boost changes what the retriever returns first."""
    a = engine.remember("Meeting notes are in the shared drive.", category="fact")
    b = engine.remember("Meeting notes are in the shared drive.", category="fact")
    engine.mark_used([a.id])
    docs = OblivionRetriever(oblivion=engine, k=2, feedback=False).invoke("meeting notes")
    assert [d.id for d in docs] == [a.id, b.id]


@pytest.mark.parametrize("budget", [0, 3, 8, 12, 100, None])
def test_documents_fit_the_token_budget(filled: Oblivion, budget: int | None) -> None:
    """The returned texts (plus the per-item overhead) never cost more than the budget."""
    overhead = filled.policy.per_item_tokens
    docs = OblivionRetriever(oblivion=filled, token_budget=budget).invoke("office report weather")
    cost = sum(word_count(d.page_content) + overhead for d in docs)
    if budget is None:
        assert len(docs) == len(FACTS)
    else:
        assert cost <= budget
        assert all(d.metadata["tokens"] == word_count(d.page_content) for d in docs)


def test_each_call_boosts_what_it_returns(filled: Oblivion, clock: ManualClock) -> None:
    """invoke() raises the activation of the returned memories; feedback=False does not."""
    clock.advance(5 * DAY)
    reader = OblivionRetriever(oblivion=filled, k=1, feedback=False)
    doc = reader.invoke("quarterly report")[0]
    before = filled.get(doc.id).activation
    assert reader.invoke("quarterly report")[0].id == doc.id
    assert filled.get(doc.id).activation == pytest.approx(before)
    OblivionRetriever(oblivion=filled, k=1).invoke("quarterly report")
    assert filled.get(doc.id).activation > before


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [("k", 1, 1), ("k", 3, 3), ("token_budget", 0, 0)],
)
def test_invoke_arguments_override_the_fields(
    filled: Oblivion, field: str, value: int, expected: int
) -> None:
    """k and token_budget passed to invoke() override the retriever's own."""
    retriever = OblivionRetriever(oblivion=filled, k=4)
    assert len(retriever.invoke("office", **{field: value})) == expected


def test_a_metadata_filter_as_chroma_takes_it(engine: Oblivion) -> None:
    """``filter`` (a field, or per call) keeps to memories whose metadata pass it, in
    the ``where`` syntax a Chroma retriever's ``search_kwargs["filter"]`` takes; a bad
    one is refused when the retriever is built or called, and boosts nothing."""
    email = engine.remember("The Acme invoice total is 420 pounds.", metadata={"source": "email"})
    chat = engine.remember("The Bolt invoice total is 90 pounds.", metadata={"source": "chat"})
    both = {d.id for d in OblivionRetriever(oblivion=engine).invoke("invoice total")}
    assert both == {email.id, chat.id}

    emailed = OblivionRetriever(oblivion=engine, filter={"source": "email"})
    assert [d.id for d in emailed.invoke("invoice total")] == [email.id]
    assert [d.id for d in emailed.invoke("invoice total", filter={"source": "chat"})] == [chat.id]
    wide = {"source": {"$in": ["chat", "email"]}}
    assert {d.id for d in emailed.invoke("invoice total", filter=wide)} == both

    with pytest.raises(ValueError, match=r"unknown operator '\$regex'"):
        OblivionRetriever(oblivion=engine, filter={"source": {"$regex": "mail"}})
    before = {r.id: r.activation for r in engine.records()}
    for query in ("invoice total", ""):
        with pytest.raises(ValueError, match="where must be a dict"):
            emailed.invoke(query, filter="source=email")
    assert {r.id: r.activation for r in engine.records()} == before


def test_a_document_filter_as_chroma_takes_it(engine: Oblivion) -> None:
    """``where_document`` (a field, or per call) keeps to memories whose text passes it,
    as a Chroma retriever's ``search_kwargs["where_document"]`` does; with ``filter``
    both must hold; a bad one is refused when the retriever is built or called."""
    acme = engine.remember("The Acme invoice total is 420 pounds.", metadata={"source": "email"})
    bolt = engine.remember("The Bolt invoice total is 90 pounds.", metadata={"source": "chat"})
    named = OblivionRetriever(oblivion=engine, where_document={"$contains": "Acme"})
    assert [d.id for d in named.invoke("invoice total")] == [acme.id]
    per_call = named.invoke("invoice total", where_document={"$regex": " [0-9]{2} pounds"})
    assert [d.id for d in per_call] == [bolt.id]
    assert named.invoke("invoice total", filter={"source": "chat"}) == []  # both must hold
    tagged = named.invoke("invoice total", filter={"#document": {"$contains": "Bolt"}})
    assert tagged == []

    with pytest.raises(ValueError, match=r"needs a non-empty str"):
        OblivionRetriever(oblivion=engine, where_document={"$contains": ""})
    before = {r.id: r.activation for r in engine.records()}
    for query in ("invoice total", ""):
        with pytest.raises(ValueError, match="not a regular expression"):
            named.invoke(query, where_document={"$regex": "(Acme"})
    assert {r.id: r.activation for r in engine.records()} == before


def test_namespaces_are_separate(engine: Oblivion) -> None:
    """A retriever only sees its namespace; a namespace never written returns nothing."""
    engine.remember("Ana likes jazz.", namespace="ana")
    engine.remember("Ben likes techno.", namespace="ben")
    docs = OblivionRetriever(oblivion=engine, namespace="ben").invoke("music")
    assert [d.page_content for d in docs] == ["Ben likes techno."]
    assert OblivionRetriever(oblivion=engine, namespace="nobody").invoke("music") == []
    assert (
        OblivionRetriever(oblivion=engine).invoke("music", namespace="ana")[0].metadata["namespace"]
        == "ana"
    )


def test_archived_memories_come_back_with_deep(engine: Oblivion, clock: ManualClock) -> None:
    """A memory decayed into the archive is returned with tier 'archive' when deep=True."""
    gone = engine.remember("ok cool", category="small_talk", importance=0.1)
    engine.remember("The deploy key lives in the vault.", category="instruction", importance=0.9)
    clock.advance(10 * DAY)
    engine.maintain()
    assert engine.get(gone.id).tier == Tier.ARCHIVE
    docs = OblivionRetriever(oblivion=engine, deep=True).invoke("ok cool")
    assert {d.id: d.metadata["tier"] for d in docs}[gone.id] == "archive"


@pytest.mark.parametrize(
    "kwargs",
    [{"token_budget": -1}, {"token_budget": 2.5}, {"k": 0}, {"k": "3"}],
)
def test_bad_settings_fail_clearly(engine: Oblivion, kwargs: dict[str, object]) -> None:
    """A negative budget or a bad k is rejected when the retriever is built."""
    with pytest.raises(ValueError, match=r"token_budget|k"):
        OblivionRetriever(oblivion=engine, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [{"search_kwargs": {"k": 1}}, {"tokens_budget": 3}, {"top_k": 1}, {"name_space": "ana"}],
)
def test_unknown_fields_are_refused(filled: Oblivion, kwargs: dict[str, object]) -> None:
    """A misspelt or foreign field (LangChain's usual search_kwargs) is an error, not
    silently ignored (the retriever then returned every match, unbudgeted)."""
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        OblivionRetriever(oblivion=filled, **kwargs)
    # BaseRetriever's own fields are still accepted
    retriever = OblivionRetriever(oblivion=filled, k=1, tags=["memory"], metadata={"app": "x"})
    assert len(retriever.invoke("office")) == 1


async def test_the_arguments_base_retriever_reads_are_accepted(filled: Oblivion) -> None:
    """invoke(q, verbose=True) and ainvoke(q, verbose=True): BaseRetriever reads verbose
    itself, so it is not an unknown retriever argument."""
    retriever = OblivionRetriever(oblivion=filled, k=2)
    assert len(retriever.invoke("office", verbose=True)) == 2
    assert len(await retriever.ainvoke("office", verbose=False)) == 2


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"token_budget": -5}, "token_budget"), ({"k": 0}, "k must"), ({"topk": 3}, "unknown")],
)
def test_bad_call_arguments_fail_clearly_and_change_nothing(
    filled: Oblivion, kwargs: dict[str, object], match: str
) -> None:
    """Bad invoke() arguments raise a ValueError and boost nothing."""
    before = {r.id: r.activation for r in filled.records()}
    with pytest.raises(ValueError, match=match):
        OblivionRetriever(oblivion=filled).invoke("office", **kwargs)
    assert {r.id: r.activation for r in filled.records()} == before


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
async def test_an_empty_query_returns_nothing_and_boosts_nothing(
    filled: Oblivion, query: str
) -> None:
    """An empty or whitespace query gives [] (sync and async), like a vector-store
    retriever gives results rather than raising; nothing is boosted."""
    before = {r.id: r.activation for r in filled.records()}
    retriever = OblivionRetriever(oblivion=filled)
    assert retriever.invoke(query) == []
    assert await retriever.ainvoke(query) == []
    assert {r.id: r.activation for r in filled.records()} == before


@pytest.mark.parametrize("odd", ["\x00", "\ud800"])
async def test_a_nul_or_lone_surrogate_in_the_query_is_searched_around(
    filled: Oblivion, odd: str
) -> None:
    """A NUL or a lone surrogate (which the engine refuses) is cleaned out of the query
    (sync and async: NULs as spaces, surrogates as "?"); a query left blank then (only
    NULs) finds nothing and boosts nothing."""
    retriever = OblivionRetriever(oblivion=filled, k=1)
    for docs in (retriever.invoke(f"office{odd} moved"), await retriever.ainvoke(f"office{odd}")):
        assert [d.page_content for d in docs] == ["The office moved to Leeds in March."]
    before = {r.id: r.activation for r in filled.records()}
    assert retriever.invoke("\x00") == [] and retriever.invoke(" \x00\n") == []
    assert {r.id: r.activation for r in filled.records()} == before


@pytest.mark.parametrize("query", [None, 42, b"office"])
def test_a_query_that_is_not_a_string_fails_clearly(filled: Oblivion, query: object) -> None:
    """A non-string query is still rejected, naming the type."""
    with pytest.raises(ValueError, match="query must be a string"):
        OblivionRetriever(oblivion=filled).invoke(query)  # type: ignore[arg-type]


def test_an_agent_tool_call_with_an_empty_query_does_not_crash_the_agent(
    filled: Oblivion,
) -> None:
    """As a ``create_retriever_tool`` tool, an empty query from the model yields an
    empty tool result and the agent goes on to its answer."""
    model = ScriptedChatModel(
        [
            AIMessage(
                content="", tool_calls=[{"id": "c1", "name": "search", "args": {"query": ""}}]
            ),
            "Nothing found.",
        ]
    )
    tool = create_retriever_tool(OblivionRetriever(oblivion=filled), "search", "Search notes.")
    out = create_agent(model, tools=[tool]).invoke({"messages": [HumanMessage("search")]})
    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_messages] == [""]
    assert out["messages"][-1].content == "Nothing found."


async def test_ainvoke_matches_invoke_and_boosts(filled: Oblivion) -> None:
    """ainvoke() returns what invoke() returns and also feeds back the boost."""
    retriever = OblivionRetriever(oblivion=filled, k=2, feedback=False)
    sync_ids = [d.id for d in retriever.invoke("report due")]
    async_ids = [d.id for d in await retriever.ainvoke("report due")]
    assert async_ids == sync_ids
    before = filled.get(sync_ids[0]).activation
    await OblivionRetriever(oblivion=filled, k=1).ainvoke("report due", token_budget=50)
    assert filled.get(sync_ids[0]).activation > before


async def test_async_unknown_namespace_returns_nothing(engine: Oblivion) -> None:
    """ainvoke() on a namespace never written returns an empty list."""
    assert await OblivionRetriever(oblivion=engine, namespace="nobody").ainvoke("x") == []


@pytest.mark.parametrize(
    "embeddings", [HashLangChainEmbeddings(), DeterministicFakeEmbedding(size=32)]
)
def test_any_langchain_embeddings_works(embeddings: Embeddings) -> None:
    """A LangChain Embeddings is accepted as the engine's embedder, as-is."""
    retriever = OblivionRetriever.from_path(None, embeddings=embeddings, k=2, namespace="notes")
    retriever.oblivion.remember("The office moved to Leeds.", namespace="notes")
    retriever.oblivion.remember("Lunch is at noon.", namespace="notes")
    docs = retriever.invoke("The office moved to Leeds.")
    assert docs[0].page_content == "The office moved to Leeds."
    assert np.isfinite(docs[0].metadata["relevance"])
    retriever.oblivion.close()


def test_from_path_passes_engine_arguments(tmp_path: Path) -> None:
    """``engine_kwargs`` reach the engine: here a vector store of the caller's and a
    clock, as the LlamaIndex adapters' ``from_defaults`` take them."""
    vectors = VectorStore.embedded(tmp_path / "vectors")
    clock = ManualClock(5.0)
    retriever = OblivionRetriever.from_path(
        tmp_path / "state",
        embeddings=HashLangChainEmbeddings(),
        engine_kwargs={"vector_store": vectors, "clock": clock},
        k=1,
    )
    try:
        assert retriever.oblivion.store is vectors and retriever.oblivion.clock is clock
        retriever.oblivion.remember("The office moved to Leeds.")
        assert vectors.count("default") == 1
        assert retriever.invoke("office Leeds")[0].page_content == "The office moved to Leeds."
    finally:
        retriever.oblivion.close()


@pytest.mark.integration
def test_real_stack_ranks_by_meaning_and_activation(real_engine: Oblivion) -> None:
    """With MiniLM, Chroma and tiktoken the relevant memory comes first, within budget."""
    real_engine.remember_many(
        [
            "The office moved to Leeds in March.",
            "Always answer in British English.",
            "I had pasta for lunch.",
            "Our team standup is at 9:30 every weekday.",
        ]
    )
    retriever = OblivionRetriever(oblivion=real_engine, token_budget=40)
    docs = retriever.invoke("Which city is our workplace in?")
    assert docs[0].page_content == "The office moved to Leeds in March."
    assert sum(d.metadata["tokens"] + real_engine.policy.per_item_tokens for d in docs) <= 40
    assert docs[0].metadata["why"]["boost"]["after"] >= docs[0].metadata["activation"]


@pytest.mark.integration
async def test_real_stack_filters_by_metadata(real_engine: Oblivion) -> None:
    """The real model and Chroma on disk: a filter finds the one matching memory under
    closer ones, sync and async."""
    real_engine.remember_many(
        [f"Standup notes {i}: the release is planned for Friday." for i in range(30)],
        metadatas=[{"channel": "standup"}] * 30,
    )
    real_engine.remember(
        "The release moved to Monday after the security review.",
        metadata={"channel": "security", "severity": 3},
    )
    where = {"$and": [{"channel": "security"}, {"severity": {"$gte": 2}}]}
    retriever = OblivionRetriever(oblivion=real_engine, k=2, filter=where)
    by_text = OblivionRetriever(
        oblivion=real_engine, k=2, where_document={"$contains": "security review"}
    )
    for docs in (
        retriever.invoke("When is the release?"),
        await retriever.ainvoke("When is the release?"),
        by_text.invoke("When is the release?"),
        await by_text.ainvoke("When is the release?"),
    ):
        assert [d.page_content for d in docs] == [
            "The release moved to Monday after the security review."
        ]


@pytest.mark.integration
async def test_real_stack_ainvoke(real_engine: Oblivion) -> None:
    """ainvoke() works against the real stack."""
    real_engine.remember("The quarterly report is due on Friday.")
    docs = await OblivionRetriever(oblivion=real_engine).ainvoke("When is the report due?")
    assert docs[0].page_content == "The quarterly report is due on Friday."


@pytest.mark.integration
def test_real_default_embedder(tmp_path: object) -> None:
    """Oblivion(path, embedder=None) with the local model works through the retriever."""
    retriever = OblivionRetriever.from_path(tmp_path, k=1)  # type: ignore[arg-type]
    retriever.oblivion.remember("Backups run at midnight.")
    assert retriever.invoke("When do backups happen?")[0].page_content == "Backups run at midnight."
    retriever.oblivion.close()


def test_add_documents_remembers_them_in_the_retrievers_namespace(engine: Oblivion) -> None:
    """Text, metadata and id as given, in the retriever's namespace, in one batch;
    the retriever then finds them with their metadata."""
    retriever = OblivionRetriever(oblivion=engine, namespace="sam")
    ids = retriever.add_documents(
        [
            Document(page_content="Refunds take 5 working days.", metadata={"source": "faq"}),
            Document(id="shed", page_content="The key is under the shed's mat."),
        ],
        category="fact",
    )
    assert ids[1] == "shed" and len(set(ids)) == 2
    assert [r.id for r in engine.records(namespace="sam")] == ids
    assert {r.category for r in engine.records(namespace="sam")} == {"fact"}
    (top, *_) = retriever.invoke("How long do refunds take?")
    assert (top.id, top.metadata["source"]) == (ids[0], "faq")
    assert retriever.invoke("refunds", filter={"source": "faq"})[0].id == ids[0]
    assert engine.records() == []  # nothing in the default namespace


@pytest.mark.parametrize(
    ("documents", "says"),
    [
        (Document(page_content="one, not a list"), "must be a list of Document"),
        (["a plain string"], "must be a list of Document, got str"),
        ([Document(page_content="fine"), Document(page_content="   ")], "empty"),
        ([Document(id="x", page_content="a"), Document(id="x", page_content="b")], "unique"),
        ([Document(page_content="new"), Document(id="taken", page_content=" ")], r"\[1\].*empty"),
        (
            [
                Document(page_content="new"),
                Document(id="taken", page_content="ok", metadata={"a": {1}}),
            ],
            "metadata",
        ),
        (
            [Document(id="taken", page_content="a"), Document(id="taken", page_content="b")],
            "unique",
        ),
    ],
)
def test_add_documents_refuses_a_bad_batch_whole(
    engine: Oblivion, documents: object, says: str
) -> None:
    """A single Document, a string, an empty text, an id given twice, a replacement
    the engine would refuse: refused with what to change, and nothing of the batch
    stored or replaced."""
    engine.remember("Kept from before.", id="taken")
    retriever = OblivionRetriever(oblivion=engine)
    with pytest.raises(InvalidInputError, match=says):
        retriever.add_documents(documents)  # type: ignore[arg-type]
    assert [r.text for r in engine.records()] == ["Kept from before."]


def test_add_documents_with_a_stored_id_replaces_that_memory(
    engine: Oblivion, clock: ManualClock
) -> None:
    """As a vector store upserts: a document whose id is stored replaces its text and
    metadata (activation kept), new ones are stored, ids= names them, order is kept."""
    engine.remember("Refunds take 5 days.", id="faq-1", metadata={"v": 1}, namespace="s")
    clock.advance(20 * DAY)
    before = engine.get("faq-1", namespace="s").activation
    retriever = OblivionRetriever(oblivion=engine, namespace="s")
    ids = retriever.add_documents(
        [
            Document(page_content="Shipping is free over 50 pounds."),
            Document(id="faq-1", page_content="Refunds take 10 days.", metadata={"v": 2}),
        ]
    )
    assert ids[1] == "faq-1" and ids[0] != "faq-1"
    faq = engine.get("faq-1", namespace="s")
    assert (faq.text, faq.metadata, faq.activation) == ("Refunds take 10 days.", {"v": 2}, before)
    assert engine.count(namespace="s") == 2
    assert retriever.invoke("How long do refunds take?", k=1)[0].page_content == faq.text
    # ids= as a vector store's add_documents takes them; a same-text re-add changes
    # only the metadata and embeds nothing
    calls = engine.embedder.calls
    assert retriever.add_documents(
        [Document(page_content="Refunds take 10 days.", metadata={"v": 3})], ids=["faq-1"]
    ) == ["faq-1"]
    assert engine.embedder.calls == calls
    assert engine.get("faq-1", namespace="s").metadata == {"v": 3}
    assert engine.count(namespace="s") == 2


def test_a_retrieved_document_added_back_keeps_only_the_users_metadata(
    engine: Oblivion,
) -> None:
    """Retrieve, edit, add_documents back (a vector store's update by id): the memory
    keeps exactly its user metadata, as InMemoryVectorStore does; the ranking keys the
    document showed are not stored (filters never match a frozen copy of them), and a
    user key they shadowed on output keeps its stored value."""
    retriever = OblivionRetriever(oblivion=engine, namespace="s", k=1)
    (memory_id,) = retriever.add_documents(
        [
            Document(
                page_content="The office moved to Leeds in March.",
                metadata={"source": "email", "tier": "gold"},
            )
        ]
    )
    doc = retriever.invoke("office")[0]
    assert doc.metadata["tier"] == "active"  # the ranking key wins on output
    doc.page_content = "The office moved to York in May."
    assert retriever.add_documents([doc]) == [memory_id]
    stored = engine.get(memory_id, namespace="s")
    assert stored.text == "The office moved to York in May."
    assert stored.metadata == {"source": "email", "tier": "gold"}
    assert retriever.invoke("office", filter={"tier": "active"}) == []
    assert retriever.invoke("office", filter={"score": {"$gte": 0}}) == []
    assert retriever.invoke("office", filter={"tier": "gold"})[0].id == memory_id
    # ids= naming it, and a metadata-only change: the same
    doc = retriever.invoke("office")[0]
    doc.metadata["source"] = "memo"
    assert retriever.add_documents([doc], ids=[memory_id]) == [memory_id]
    assert engine.get(memory_id, namespace="s").metadata == {"source": "memo", "tier": "gold"}
    # copied into another namespace (stored anew): the user's keys it shows, no ranking
    other = OblivionRetriever(oblivion=engine, namespace="t")
    (copied,) = other.add_documents([retriever.invoke("office")[0]])
    assert copied == memory_id
    assert engine.get(copied, namespace="t").metadata == {"source": "memo"}


def test_a_users_own_keys_named_like_ranking_keys_are_stored(engine: Oblivion) -> None:
    """A document the retriever did not return keeps every key of its metadata, those
    named like the ranking keys included (they are overridden on output only)."""
    retriever = OblivionRetriever(oblivion=engine, namespace="s")
    metadata = {"category": "faq", "score": 4, "why": "support", "id": "ticket-9"}
    (memory_id,) = retriever.add_documents(
        [Document(id="faq-1", page_content="Refunds take 5 days.", metadata=metadata)]
    )
    assert engine.get(memory_id, namespace="s").metadata == metadata
    full = {key: 1 for key in DOCUMENT_KEYS} | {"id": "faq-1", "why": {"rank": 1}}
    retriever.add_documents(
        [Document(id="faq-1", page_content="Refunds take 6 days.", metadata=full)]
    )  # every ranking key and a why dict: read as a retrieved document
    assert engine.get("faq-1", namespace="s").metadata == metadata
    mine = {**full, "id": "another"}  # its "id" is not the document's: the user's own
    retriever.add_documents(
        [Document(id="faq-1", page_content="Refunds take 7 days.", metadata=mine)]
    )
    assert engine.get("faq-1", namespace="s").metadata == mine


def test_add_documents_upserts_an_id_another_writer_stores_meanwhile(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An id another writer stores between add_documents' read of which ids are held
    and its write is replaced, not refused ("already exists"); the rest are stored."""
    remember_many = engine.remember_many

    def racing(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(engine, "remember_many", remember_many)
        engine.remember("Refunds take 5 days.", id="d1", namespace="s")  # the other writer
        return remember_many(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "remember_many", racing)
    retriever = OblivionRetriever(oblivion=engine, namespace="s")
    docs = [Document(page_content=f"Refunds take {n} days.", id=f"d{n}") for n in (0, 1, 2)]
    assert retriever.add_documents(docs) == ["d0", "d1", "d2"]
    assert sorted((r.id, r.text) for r in engine.records(namespace="s")) == [
        (d.id, d.page_content) for d in docs
    ]


def test_add_documents_stores_anew_an_id_another_writer_deletes_meanwhile(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored id another writer forgets before add_documents replaces it is stored
    anew, not an UnknownMemoryError."""
    engine.remember("Refunds take 5 days.", id="faq", namespace="s")
    edit = engine.edit

    def racing(memory_id: str, *args: object, **kwargs: object) -> object:
        monkeypatch.setattr(engine, "edit", edit)
        engine.forget(memory_id, namespace="s")  # the other writer
        return edit(memory_id, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "edit", racing)
    retriever = OblivionRetriever(oblivion=engine, namespace="s")
    docs = [Document(page_content="Refunds take 10 days.", id="faq"), Document(page_content="x")]
    ids = retriever.add_documents(docs)
    assert ids[0] == "faq"
    assert sorted(r.text for r in engine.records(namespace="s")) == ["Refunds take 10 days.", "x"]


def test_concurrent_add_documents_with_the_same_ids_all_upsert(engine: Oblivion) -> None:
    """Many threads and gathered aadd_documents calls upserting the same ids: none
    raises, and each id ends as one memory holding one of the versions written."""
    retriever = OblivionRetriever(oblivion=engine, namespace="docs")

    def batch(v: int) -> list[Document]:
        return [Document(page_content=f"doc {j} version {v}", id=f"d{j}") for j in range(3)]

    async def gathered() -> list[object]:
        calls = [retriever.aadd_documents(batch(v)) for v in range(20)]
        return await asyncio.gather(*calls, return_exceptions=True)

    start = threading.Barrier(8)

    def thread(v: int) -> list[str]:
        start.wait()  # all at once: each reads which ids are held before any writes
        return retriever.add_documents(batch(v))

    results = asyncio.run(gathered())
    with ThreadPoolExecutor(max_workers=8) as pool:
        threads = [pool.submit(thread, v) for v in range(20, 28)]
        results += [f.exception() or f.result() for f in threads]
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert all(r == ["d0", "d1", "d2"] for r in results)
    stored = engine.records(namespace="docs")
    assert sorted(r.id for r in stored) == ["d0", "d1", "d2"]
    for record in stored:
        j = int(record.id[1:])
        assert record.text in {f"doc {j} version {v}" for v in range(28)}


@pytest.mark.parametrize(
    ("ids", "says"), [("faq-1", "list of strings"), (["a", "b"], "2 entries for 1")]
)
def test_add_documents_refuses_bad_ids(engine: Oblivion, ids: object, says: str) -> None:
    retriever = OblivionRetriever(oblivion=engine)
    with pytest.raises(InvalidInputError, match=says):
        retriever.add_documents([Document(page_content="a")], ids=ids)  # type: ignore[arg-type]
    assert engine.records() == []


def test_mark_used_boosts_each_document_in_its_own_namespace(
    engine: Oblivion, clock: ManualClock
) -> None:
    """Documents a per-call namespace= returned are boosted there, not in the
    retriever's namespace under the same id."""
    a = OblivionRetriever(oblivion=engine, namespace="team-a")
    b = OblivionRetriever(oblivion=engine, namespace="team-b")
    a.add_documents([Document(page_content="Refunds take 5 days (team A).", id="faq-1")])
    b.add_documents([Document(page_content="Refunds take 10 days (team B).", id="faq-1")])
    b.add_documents([Document(page_content="Shipping is free over 50.", id="faq-2")])
    clock.advance(30 * DAY)
    (doc,) = a.invoke("refunds", namespace="team-b", k=1, feedback=False)
    assert doc.metadata["namespace"] == "team-b"
    in_a, in_b = (engine.get("faq-1", namespace=n).activation for n in ("team-a", "team-b"))
    (used,) = a.mark_used([doc])
    assert used == engine.get("faq-1", namespace="team-b").activation > in_b
    assert engine.get("faq-1", namespace="team-a").activation == in_a
    # several namespaces at once, each in order; a wrong one boosts nothing
    (other,) = a.invoke("shipping", namespace="team-b", k=1, feedback=False)
    both = a.mark_used([other, "faq-1"])
    assert both == [
        engine.get("faq-2", namespace="team-b").activation,
        engine.get("faq-1", namespace="team-a").activation,
    ]
    before = {n: engine.get("faq-1", namespace=n).activation for n in ("team-a", "team-b")}
    with pytest.raises(UnknownMemoryError):
        a.mark_used([doc, "faq-2"])  # faq-2 is not in team-a
    assert before == {n: engine.get("faq-1", namespace=n).activation for n in before}


@pytest.mark.parametrize("used", [5, None, {"id": "x"}, [3]])
def test_mark_used_refuses_what_is_not_a_document_or_id(engine: Oblivion, used: object) -> None:
    engine.remember_many(FACTS)
    with pytest.raises(InvalidInputError, match="Document"):
        OblivionRetriever(oblivion=engine).mark_used(used)  # type: ignore[arg-type]


def test_mark_used_gives_the_documents_the_used_boost(engine: Oblivion, clock: ManualClock) -> None:
    """Documents the retriever returned (or their ids) get the larger "used" boost: more
    than the retrieval gave them."""
    engine.remember_many(FACTS)
    clock.advance(60 * DAY)  # decayed well below the cap
    retriever = OblivionRetriever(oblivion=engine, k=1, feedback=False)
    (doc,) = retriever.invoke("Where is the office now?")
    start = engine.get(doc.id).activation
    retriever.invoke("Where is the office now?", feedback=True)
    recalled = engine.get(doc.id).activation
    (used,) = retriever.mark_used([doc])
    assert used == engine.get(doc.id).activation
    assert used - recalled > recalled - start > 0
    assert [e.kind for e in engine.history(doc.id)][-2:] == ["recall", "used"]
    assert retriever.mark_used(doc.id)[0] > used  # one id, not its letters


def test_mark_used_refuses_what_the_retriever_did_not_return(engine: Oblivion) -> None:
    engine.remember_many(FACTS)
    retriever = OblivionRetriever(oblivion=engine)
    (doc, *_) = retriever.invoke("office")
    before = engine.get(doc.id).activation
    with pytest.raises(UnknownMemoryError):
        retriever.mark_used([doc, "no-such-memory"])
    with pytest.raises(InvalidInputError, match="without an id"):
        retriever.mark_used([Document(page_content="made up")])
    assert engine.get(doc.id).activation == before


async def test_async_add_documents_and_mark_used(engine: Oblivion) -> None:
    retriever = OblivionRetriever(oblivion=engine)
    (added,) = await retriever.aadd_documents([Document(page_content="Sam keeps bees.")])
    (doc,) = await retriever.ainvoke("Who keeps bees?")
    assert doc.id == added
    before = engine.get(added).activation
    assert (await retriever.amark_used([doc]))[0] > before


@pytest.mark.integration
def test_added_documents_are_found_by_meaning_through_the_real_stack(
    real_engine: Oblivion,
) -> None:
    """The local model, Chroma on disk and tiktoken: documents added through the
    retriever are found by a question that shares no keyword with them."""
    retriever = OblivionRetriever(oblivion=real_engine, k=1)
    retriever.add_documents(
        [
            Document(page_content="The cat sleeps on the sofa all afternoon."),
            Document(page_content="Invoices are paid within thirty days."),
        ]
    )
    (top,) = retriever.invoke("When do we settle bills?")
    assert top.page_content == "Invoices are paid within thirty days."
    assert real_engine.store.count(real_engine.default_namespace) == 2
