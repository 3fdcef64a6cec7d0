"""OblivionStore with many users, one namespace each: a search in one user's namespace
reads that namespace's labels, not every user's (decoding each engine namespace on
every search cost 7.2 ms for a listing of 5 at 2,000 namespaces)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from oblivion_core import Oblivion
from oblivion_core.testing import memory
from oblivion_langchain import OblivionStore
from oblivion_langchain import store as store_module
from oblivion_langchain._convert import decode_namespace


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The engine namespaces the store decodes from now on."""
    seen: list[str] = []

    def counted(name: str) -> tuple[str, ...] | None:
        seen.append(name)
        return decode_namespace(name)

    monkeypatch.setattr(store_module, "decode_namespace", counted)
    yield seen


def test_a_users_search_decodes_only_the_namespaces_under_its_prefix(
    decoded: list[str],
) -> None:
    with memory() as engine:
        store = OblivionStore(engine, index={"fields": ["text"]})
        for user in range(300):
            store.put(("memories", f"user-{user}"), "tea", {"text": f"user {user} drinks tea"})
        store.put(("memories", "user-7", "work"), "desk", {"text": "desk by the window"})
        decoded.clear()
        for _ in range(3):
            listed = store.search(("memories", "user-7"), limit=5)
            found = store.search(("memories", "user-7"), query="tea", limit=5)
        assert {(i.namespace, i.key) for i in listed} == {
            (("memories", "user-7"), "tea"),
            (("memories", "user-7", "work"), "desk"),
        }
        assert (found[0].namespace, found[0].key) == (("memories", "user-7"), "tea")
        # the two namespaces under the prefix, decoded once each and then remembered
        assert len(decoded) <= 2, len(decoded)


LABELS = st.text(alphabet='ab",[]\\é ', min_size=1, max_size=3)


def _both(engine: Oblivion, spaces: list[list[str]]) -> tuple[OblivionStore, InMemoryStore]:
    """An OblivionStore on ``engine`` and an InMemoryStore, each holding one item in each
    of ``spaces``."""
    ours, theirs = OblivionStore(engine, index={"fields": ["text"]}), InMemoryStore()
    for k, labels in enumerate(spaces):
        for store in (ours, theirs):
            store.put(tuple(labels), f"k{k}", {"text": f"note {k}"})
    return ours, theirs


@settings(max_examples=40, deadline=None)
@given(
    spaces=st.lists(st.lists(LABELS, min_size=1, max_size=3), min_size=1, max_size=6),
    prefix=st.lists(LABELS, max_size=2),
)
def test_the_namespaces_under_a_prefix_are_those_in_memory_store_has(
    spaces: list[list[str]], prefix: list[str]
) -> None:
    """Labels holding JSON's own characters (quotes, commas, brackets, backslashes)
    included: the prefix is matched on the encoded string first, then by labels."""
    with memory() as engine:
        ours, theirs = _both(engine, spaces)
        want = sorted((i.namespace, i.key) for i in theirs.search(tuple(prefix), limit=100))
        got = sorted((i.namespace, i.key) for i in ours.search(tuple(prefix), limit=100))
        assert got == want


def test_listing_one_users_namespaces_reads_only_theirs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each namespace listed is counted (one holding only compression summaries holds
    no item): a listing under one user's prefix counted every user's namespaces (a
    query each when not loaded: 180 ms at 10,000 namespaces)."""
    with memory() as engine:
        store = OblivionStore(engine, index={"fields": ["text"]})
        for user in range(200):
            store.put(("users", f"u{user}"), "tea", {"text": f"user {user} drinks tea"})
            store.put(("users", f"u{user}", "work"), "desk", {"text": "a desk"})
        counted: list[str | None] = []
        count = engine.count

        def counting(*args: object, namespace: str | None = None, **kwargs: object) -> int:
            counted.append(namespace)
            return count(*args, namespace=namespace, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(engine, "count", counting)
        assert store.list_namespaces(prefix=("users", "u7")) == [
            ("users", "u7"),
            ("users", "u7", "work"),
        ]
        assert len(counted) <= 4, len(counted)
        assert store.list_namespaces(prefix=("users", "*", "work"), limit=3) == [
            ("users", "u0", "work"),
            ("users", "u1", "work"),
            ("users", "u10", "work"),
        ]


@settings(max_examples=40, deadline=None)
@given(
    spaces=st.lists(st.lists(LABELS, min_size=1, max_size=3), min_size=1, max_size=6),
    prefix=st.lists(st.one_of(LABELS, st.just("*")), max_size=2),
    suffix=st.lists(st.one_of(LABELS, st.just("*")), max_size=2),
)
def test_listed_namespaces_are_those_in_memory_store_lists(
    spaces: list[list[str]], prefix: list[str], suffix: list[str]
) -> None:
    with memory() as engine:
        ours, theirs = _both(engine, spaces)
        asked = {"prefix": tuple(prefix) or None, "suffix": tuple(suffix) or None}
        want = sorted(theirs.list_namespaces(**asked, limit=100))  # type: ignore[arg-type]
        assert sorted(ours.list_namespaces(**asked, limit=100)) == want  # type: ignore[arg-type]


# ------------------------------------------------- another adapter's namespace
HOSTILE = '["memories","sam"]'  # the store's own name for ("memories", "sam")


def test_a_user_id_that_is_a_store_namespace_reaches_none_of_its_items(engine: Oblivion) -> None:
    """A user whose id was the string ``["memories","sam"]`` read Sam's store items in
    the middleware's block and wrote their turns among them. Every adapter whose
    namespaces are plain strings refuses the store's form; the store keeps its items."""
    from _lc_helpers import ScriptedChatModel
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from oblivion_core import InvalidInputError
    from oblivion_langchain import OblivionMemory, OblivionMemoryMiddleware, OblivionRetriever

    store = OblivionStore(engine)
    store.put(("memories", "sam"), "pin", {"text": "Sam's bank PIN is 4921."})
    agent = create_agent(
        ScriptedChatModel(["Noted."]),
        middleware=[OblivionMemoryMiddleware(engine)],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t", "user_id": HOSTILE}}
    with pytest.raises(InvalidInputError, match="reserved to it"):
        agent.invoke({"messages": [{"role": "user", "content": "my PIN changed to 0000"}]}, config)
    with pytest.raises(InvalidInputError, match="reserved to it"):
        OblivionMemoryMiddleware(engine, namespace=HOSTILE)
    with pytest.raises(ValueError, match="reserved to it"):
        OblivionMemory(oblivion=engine, namespace=HOSTILE)
    with pytest.raises(ValueError, match=r"reserved to it(?s:.*)an earlier release.*are kept"):
        OblivionRetriever(oblivion=engine, namespace=HOSTILE)
    with pytest.raises(InvalidInputError, match="reserved to it"):
        OblivionRetriever(oblivion=engine).invoke("PIN", namespace=HOSTILE)
    retriever, classic = OblivionRetriever(oblivion=engine), OblivionMemory(oblivion=engine)
    for adapter in (retriever, classic):  # a per-request namespace set on a shared object
        with pytest.raises(ValueError, match="reserved to it"):
            adapter.namespace = HOSTILE
        assert adapter.namespace is None
    (item,) = store.search(("memories", "sam"))
    assert item.value == {"text": "Sam's bank PIN is 4921."}
    assert engine.count(namespace=HOSTILE) == 1
    # a namespace that merely starts with "[" is a plain one
    OblivionRetriever(oblivion=engine, namespace="[draft] notes")


def test_a_search_over_many_namespaces_embeds_its_query_once() -> None:
    """A query search of a prefix over several namespaces ran one recall in each, and
    each embedded the same query again: 100 users took 2.9 s with the local model
    against InMemoryStore's 40 ms. The query is embedded once and its vector given to
    every recall; the results are those of a recall that embeds it itself."""
    from oblivion_core.testing import HashEmbedder

    class Counted(HashEmbedder):
        queries = 0

        def embed_query(self, text: str) -> list[float]:
            Counted.queries += 1
            return super().embed_query(text)

    with memory(embedder=Counted()) as engine:
        store = OblivionStore(engine, index={"fields": ["text"]})
        for user in range(40):
            store.put(("memories", f"user-{user}"), "tea", {"text": f"user {user} drinks tea"})
            store.put(("memories", f"user-{user}"), "job", {"text": f"user {user} is a nurse"})
        namespace = _space(("memories", "user-3"))
        vector = engine.embedder.embed_query("who drinks tea")
        given = engine.recall(
            "who drinks tea", namespace=namespace, feedback=False, embedding=vector
        )
        alone = engine.recall("who drinks tea", namespace=namespace, feedback=False)
        assert [(it.id, it.score, it.why) for it in given] == [
            (it.id, it.score, it.why) for it in alone
        ]
        Counted.queries = 0
        found = store.search(("memories",), query="who drinks tea", limit=10)
        assert Counted.queries == 1
        assert len(found) == 10 and all(item.key == "tea" for item in found)


def _space(labels: tuple[str, ...]) -> str:
    """The engine namespace of a store namespace."""
    from oblivion_langchain._convert import encode_namespace

    return encode_namespace(labels)


def test_a_search_with_another_models_embedder_is_an_embedding_error() -> None:
    """Embedded once for the search, the query's size was checked only as recall's
    argument: an InvalidInputError (a ValueError) about an argument the user never
    passed, where an EmbeddingError (an OSError) named the model."""
    from oblivion_core import EmbeddingError
    from oblivion_core.testing import HashEmbedder

    with memory() as engine:
        store = OblivionStore(engine, index={"fields": ["text"]})
        store.put(("memories", "ana"), "tea", {"text": "Ana drinks green tea"})
        engine.embedder = HashEmbedder(dim=32)
        with pytest.raises(EmbeddingError, match="32"):
            store.search(("memories",), query="who drinks tea")
