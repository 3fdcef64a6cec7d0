"""``OblivionNodePostprocessor``: activation re-ranking of other retrievers' nodes."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import math
import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.memory import Memory
from llama_index.core.memory.memory_blocks.vector import VectorMemoryBlock
from llama_index.core.schema import (
    ImageNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from oblivion_core import (
    InvalidInputError,
    Oblivion,
    TextTooLongError,
    UnknownMemoryError,
    UnknownNamespaceError,
)
from oblivion_core.records import MAX_METADATA_DEPTH
from oblivion_core.testing import HashEmbedder, ManualClock, word_count
from oblivion_core.testing import memory as new_engine
from oblivion_llamaindex import OblivionNodePostprocessor, OblivionRetriever
from oblivion_llamaindex._convert import META_NODE_KEY, OBLIVION_KEYS, node_key

from ._helpers import DAY, HashEmbedding, TextVectorStore, node

QUERY = "how long do refunds take"


def ids(nodes: list[NodeWithScore]) -> list[str]:
    """Node ids in order."""
    return [n.node.node_id for n in nodes]


def own_metadata(engine: Oblivion, memory_id: str) -> dict[str, Any]:
    """A memory's stored metadata without the content key the postprocessor adds."""
    return {k: v for k, v in engine.get(memory_id).metadata.items() if k != META_NODE_KEY}


# ---------------------------------------------------------------- registration
def test_unseen_nodes_are_registered_by_node_id(engine: Oblivion) -> None:
    """A node seen for the first time becomes a memory whose id is the node id."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes(
        [
            node("a", "refunds take five days", 0.9, source="faq.md"),
            node("b", "free shipping", 0.2),
        ],
        query_str=QUERY,
    )
    assert engine.get("a").text == "refunds take five days"
    assert own_metadata(engine, "a") == {"source": "faq.md"}
    assert engine.get("a").metadata[META_NODE_KEY] == node_key("refunds take five days")
    assert engine.count() == 2


def test_seen_nodes_are_not_registered_twice(engine: Oblivion) -> None:
    """Nodes already known keep their memory (and its activation history)."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    nodes = [node("a", "refunds take five days", 0.9)]
    rerank.postprocess_nodes(nodes, query_str=QUERY)
    rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert engine.count() == 1
    assert engine.get("a").access_count == 2


def test_changed_node_text_is_re_embedded_in_place(engine: Oblivion) -> None:
    """A known node id with new text updates that memory instead of failing or duplicating."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes([node("a", "refunds take five days", 0.9)], query_str=QUERY)
    rerank.postprocess_nodes([node("a", "refunds take ten days", 0.9)], query_str=QUERY)
    assert engine.count() == 1
    assert engine.get("a").text == "refunds take ten days"


def test_a_node_s_metadata_follows_it(engine: Oblivion) -> None:
    """A known node whose metadata changed (with or without its text) has the new
    metadata stored, so metadata filters see it; an unchanged node is not edited."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes([node("a", "refunds take five days", 0.9, v=1)], query_str=QUERY)
    rerank.postprocess_nodes([node("a", "refunds take ten days", 0.9, v=2)], query_str=QUERY)
    assert (engine.get("a").text, own_metadata(engine, "a")) == ("refunds take ten days", {"v": 2})
    calls = engine.embedder.calls
    rerank.postprocess_nodes([node("a", "refunds take ten days", 0.9, v=3)], query_str=QUERY)
    assert own_metadata(engine, "a") == {"v": 3}
    assert engine.embedder.calls == calls  # the same text is not embedded again
    edits = len([e for e in engine.history("a") if e.kind == "edit"])
    rerank.postprocess_nodes([node("a", "refunds take ten days", 0.9, v=3)], query_str=QUERY)
    assert len([e for e in engine.history("a") if e.kind == "edit"]) == edits


def test_registration_settings_apply_to_new_nodes(engine: Oblivion) -> None:
    """``category`` and ``importance`` set what new nodes are registered with."""
    rerank = OblivionNodePostprocessor(oblivion=engine, category="fact", importance=0.7)
    rerank.postprocess_nodes([node("a", "hello there", 0.5)], query_str=QUERY)
    record = engine.get("a")
    assert (record.category, record.importance) == ("fact", 0.7)


def test_unserialisable_node_metadata_is_dropped_not_fatal(engine: Oblivion) -> None:
    """Node metadata the store cannot hold (objects, NaN) is left out of the memory."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    nws = node("a", "refunds take five days", 0.9, page=3, bad=math.nan, obj=object())
    rerank.postprocess_nodes([nws], query_str=QUERY)
    assert own_metadata(engine, "a") == {"page": 3}


def test_metadata_the_engine_refuses_is_dropped_not_fatal(engine: Oblivion) -> None:
    """Node metadata JSON encodes but the engine refuses (a reader's page map keyed by
    int, nesting deeper than ``MAX_METADATA_DEPTH``) is left out; rerank never fails on
    it, and every entry the engine accepts is kept."""
    too_deep: object = "leaf"
    for _ in range(MAX_METADATA_DEPTH + 1):
        too_deep = [too_deep]
    deepest: object = "leaf"
    for _ in range(MAX_METADATA_DEPTH - 1):
        deepest = [deepest]
    rerank = OblivionNodePostprocessor(oblivion=engine, top_n=2)
    nodes = [
        node("a", "refunds take five days", 0.8, file_name="faq.md"),
        node(
            "b",
            "refunds need the original receipt",
            0.6,
            file_name="faq.md",
            page_map={1: "Refunds"},
            outline=too_deep,
            pages={"1": "Refunds"},
            tree=deepest,
        ),
    ]
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert sorted(ids(out)) == ["a", "b"]
    assert own_metadata(engine, "b") == {
        "file_name": "faq.md",
        "pages": {"1": "Refunds"},
        "tree": deepest,
    }


def parsed(texts: list[str], score: float = 0.5) -> list[NodeWithScore]:
    """``texts`` as a node parser makes them: fresh random node ids, each node of a
    document with a fresh random id (``Document(text=...)`` has one)."""
    return [
        NodeWithScore(
            node=TextNode(
                id_=str(uuid.uuid4()),
                text=text,
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=str(uuid.uuid4()))},
            ),
            score=score,
        )
        for text in texts
    ]


DOCS = [
    "Refunds take five working days.",
    "Shipping is free over fifty euros.",
    "Returns need the original receipt.",
]


def test_a_restarted_app_finds_its_nodes_memories_by_content(tmp_path: Path) -> None:
    """An app rebuilding its index each run (new node ids) on a reopened store keeps one
    memory per node and its activation, and ``mark_used`` takes this run's node ids."""
    clock = ManualClock(0.0)
    first_ids: dict[str, str] = {}
    activations: list[float] = []
    for run in range(3):
        engine = Oblivion(
            tmp_path / "store", embedder=HashEmbedder(), clock=clock, token_counter=word_count
        )
        try:
            rerank = OblivionNodePostprocessor(oblivion=engine, top_n=3)
            nodes = parsed(DOCS)
            out = rerank.postprocess_nodes(nodes, query_str=QUERY)
            assert engine.count() == len(DOCS)
            assert sorted(ids(out)) == sorted(ids(nodes))  # the caller's own node ids
            by_text = {n.node.get_content(): n.node for n in out}
            if run == 0:
                first_ids = {t: n.node_id for t, n in by_text.items()}
            assert {t: n.metadata["oblivion_id"] for t, n in by_text.items()} == first_ids
            refund = by_text[DOCS[0]]
            activations.append(refund.metadata["oblivion_activation"])
            before = engine.get(first_ids[DOCS[0]]).access_count
            rerank.mark_used([refund.node_id])
            assert engine.get(first_ids[DOCS[0]]).access_count == before + 1
        finally:
            engine.close()
        clock.advance(3600)
    assert activations[2] > activations[0]


def test_an_index_built_again_each_day_keeps_a_bounded_map_of_node_ids(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node ids matched to memories by text are kept for the newest builds only (an
    index built again each day gives every node a new id), and today's ids still work."""
    from oblivion_llamaindex import postprocessor as module

    monkeypatch.setattr(module, "MIN_ALIASES", 0)
    texts = [f"refund rule {k}: allow {k} working days" for k in range(20)]
    sizes = []
    for day in range(6):
        rerank = OblivionNodePostprocessor(oblivion=engine, top_n=3)
        nodes = [node(f"day{day}-{k}", text, 0.5) for k, text in enumerate(texts)]
        out = rerank.postprocess_nodes(nodes, query_str=QUERY)
        assert engine.count() == len(texts)
        assert rerank.mark_used([out[0].node.node_id])
        sizes.append(len(rerank._shared().alias))
    assert sizes[1:] == [20, 40, 40, 40, 40]  # two builds' worth: 2 per content key


def test_what_it_knew_of_unloaded_namespaces_is_let_go(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server unloading each user's namespace after a request kept every user's node
    keys and ids (about 70 KB per user of 200 chunks); a namespace let go is read again
    on its next use, its chunks found by their text."""
    from oblivion_llamaindex import postprocessor as module

    monkeypatch.setattr(module, "_MIN_SPACES", 4)
    monkeypatch.setattr(module, "_IDLE_SECONDS", -1.0)  # every one idle at once
    known = []
    for user in range(12):
        rerank = OblivionNodePostprocessor(oblivion=engine, namespace=f"user-{user}", top_n=3)
        rerank.postprocess_nodes(parsed(DOCS), query_str=QUERY)
        if user < 11:
            engine.unload(namespace=f"user-{user}")
        known.append(len(module._SHARED[engine]))
    assert max(known) <= 5 and module._SHARED[engine].keys() <= {f"user-{u}" for u in range(8, 12)}
    rerank = OblivionNodePostprocessor(oblivion=engine, namespace="user-0", top_n=3)
    out = rerank.postprocess_nodes(parsed(DOCS), query_str=QUERY)
    assert engine.count(namespace="user-0") == len(DOCS)  # no memory written twice
    assert rerank.mark_used([out[0].node.node_id])


def test_a_namespace_in_use_is_not_let_go(
    engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One asked for in the last minute stays, unloaded or not: a postprocessor between
    reading the keys and writing a chunk would have its claim forgotten."""
    from oblivion_llamaindex import postprocessor as module

    monkeypatch.setattr(module, "_MIN_SPACES", 2)
    for user in range(6):
        rerank = OblivionNodePostprocessor(oblivion=engine, namespace=f"user-{user}", top_n=3)
        rerank.postprocess_nodes(parsed(DOCS), query_str=QUERY)
        engine.unload(namespace=f"user-{user}")
    assert len(module._SHARED[engine]) == 6


def test_nodes_of_one_call_sharing_a_text_rank_once_by_their_best_score(
    engine: Oblivion,
) -> None:
    """Two nodes with one text (two documents quoting it) are one memory and come back
    once: the best scored of them, with its own node id."""
    rerank = OblivionNodePostprocessor(oblivion=engine, feedback=False)
    nodes = [
        node("x", "refunds take five days", 0.3),
        node("y", "free shipping", 0.5),
        node("z", "refunds take five days", 0.9),
    ]
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert engine.count() == 2
    assert sorted(ids(out)) == ["y", "z"]
    refund = next(n for n in out if n.node.node_id == "z")
    assert refund.node.metadata["oblivion_id"] == "x"
    assert refund.node.metadata["oblivion_relevance"] == pytest.approx(0.9)
    assert rerank.mark_used(["z", "x"])  # both ids name the memory


def test_a_chunk_two_documents_share_keeps_its_first_documents_metadata(
    engine: Oblivion,
) -> None:
    """The memory two documents' nodes share by their text keeps the metadata of the
    node whose id it has, whichever node scores best, and is not written again."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    text = "Refunds are processed within five business days."
    for turn in range(6):
        first, second = (0.9, 0.5) if turn % 2 else (0.5, 0.9)
        rerank.postprocess_nodes(
            [
                node("A", text, first, file_name="policy.pdf"),
                node("B", text, second, file_name="faq.md"),
            ],
            query_str=QUERY,
        )
        assert engine.get("A").metadata["file_name"] == "policy.pdf"
    assert engine.count() == 1
    assert [e.kind for e in engine.history("A")].count("edit") == 0


def test_a_memory_registered_without_a_key_gets_it_and_is_then_found_by_content(
    engine: Oblivion,
) -> None:
    """A memory an earlier version registered without a content key gets it when its node
    is seen by its id, then a node with a new id and that text finds it (no longer once
    the memory's text is edited), and the key never shows in retrieved metadata."""
    engine.remember("refunds take five days", id="old", metadata={"page": 1}, supersede=False)
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes([node("old", "refunds take five days", 0.9, page=1)], query_str=QUERY)
    assert engine.get("old").metadata[META_NODE_KEY] == node_key("refunds take five days")
    out = rerank.postprocess_nodes(
        [node("new", "refunds take five days", 0.9, page=1)], query_str=QUERY
    )
    assert (engine.count(), out[0].node.metadata["oblivion_id"]) == (1, "old")
    hit = OblivionRetriever(engine, k=1, feedback=False).retrieve("refunds")[0]
    assert META_NODE_KEY not in hit.node.metadata and hit.node.metadata["page"] == 1
    engine.edit("old", "refunds take ten days", supersede=False)
    later = OblivionNodePostprocessor(oblivion=engine)
    out = later.postprocess_nodes([node("other", "refunds take five days", 0.9)], query_str=QUERY)
    assert (engine.count(), out[0].node.metadata["oblivion_id"]) == (2, "other")


def test_namespace_keeps_nodes_apart(engine: Oblivion) -> None:
    """A postprocessor with a namespace registers there and nowhere else."""
    engine.remember("unrelated", id="x")
    rerank = OblivionNodePostprocessor(oblivion=engine, namespace="docs")
    rerank.postprocess_nodes([node("a", "refunds take five days", 0.9)], query_str=QUERY)
    assert engine.count(namespace="docs") == 1
    with pytest.raises(UnknownMemoryError):
        engine.get("a")


# ---------------------------------------------------------------- ranking
def test_zero_score_stays_zero(engine: Oblivion) -> None:
    """A node scored 0.0 is ranked with relevance 0.0, not 1.0."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    out = rerank.postprocess_nodes(
        [node("zero", "refunds take five days", 0.0), node("half", "shipping is free", 0.5)],
        query_str=QUERY,
    )
    assert ids(out) == ["half", "zero"]
    zero = out[1].node.metadata
    assert zero["oblivion_relevance"] == 0.0
    assert zero["oblivion_why"]["contributions"]["relevance"] == 0.0


def test_none_score_gets_embedding_relevance(engine: Oblivion) -> None:
    """A node scored ``None`` gets the query similarity from the engine."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    out = rerank.postprocess_nodes(
        [node("off", "the office cat is called Miso"), node("on", "refunds take five days")],
        query_str=QUERY,
    )
    assert ids(out) == ["on", "off"]
    assert out[0].node.metadata["oblivion_relevance"] > 0.0


def test_custom_embedding_strings_are_the_query(engine: Oblivion) -> None:
    """A bundle's ``custom_embedding_strs`` are what relevance is computed against, and a
    bundle with only those (no query string) is accepted."""
    rerank = OblivionNodePostprocessor(oblivion=engine, feedback=False)
    nodes = [node("off", "the office cat is called Miso"), node("on", "refunds take five days")]
    bundle = QueryBundle("q?", custom_embedding_strs=["the office cat is called Miso"])
    assert ids(rerank.postprocess_nodes(nodes, bundle))[0] == "off"
    only = QueryBundle("", custom_embedding_strs=["refunds take five days"])
    assert ids(rerank.postprocess_nodes(nodes, only))[0] == "on"


@pytest.mark.parametrize("relevance", ["embedding", "score"])
def test_a_query_bundle_with_only_an_embedding_is_refused(engine: Oblivion, relevance: str) -> None:
    """A bundle with an embedding and no query text is refused naming what to pass
    (Oblivion embeds the query text with its own model), storing nothing; with text
    too, the text is the query."""
    rerank = OblivionNodePostprocessor(oblivion=engine, relevance=relevance)
    nodes = [node("a", "refunds take five days", 0.9), node("c", "the office cat", 0.1)]
    with pytest.raises(InvalidInputError, match=r"own model.*pass the query text"):
        rerank.postprocess_nodes(nodes, QueryBundle("", embedding=[0.1] * 8))
    assert engine.count() == 0
    out = rerank.postprocess_nodes(nodes, QueryBundle("refunds take five days", embedding=[0.1]))
    assert ids(out)[0] == "a"


def test_from_dict_and_pickle_keep_settings_and_need_the_engine(engine: Oblivion) -> None:
    """``from_dict`` takes the engine; an unpickled copy says to construct it with one."""
    import pickle

    rerank = OblivionNodePostprocessor(oblivion=engine, namespace="kb", top_n=3)
    with pytest.raises(InvalidInputError, match=r"from_dict\(data, oblivion="):
        OblivionNodePostprocessor.from_dict(rerank.to_dict())
    again = OblivionNodePostprocessor.from_dict(rerank.to_dict(), oblivion=engine)
    assert (again.namespace, again.top_n, again.oblivion) == ("kb", 3, engine)
    copy = pickle.loads(pickle.dumps(rerank))
    assert (copy.namespace, copy.top_n) == ("kb", 3)
    with pytest.raises(InvalidInputError, match="deserialised"):
        copy.postprocess_nodes([node("a", "text")], query_str="text")


def test_embedding_relevance_ignores_node_scores(engine: Oblivion) -> None:
    """``relevance="embedding"`` ranks by similarity even against the retriever's scores."""
    rerank = OblivionNodePostprocessor(oblivion=engine, relevance="embedding")
    out = rerank.postprocess_nodes(
        [node("off", "the office cat is called Miso", 9.0), node("on", "refunds take days", 0.0)],
        query_str=QUERY,
    )
    assert ids(out) == ["on", "off"]


def test_activation_breaks_ties(engine: Oblivion, clock: ManualClock) -> None:
    """Among equally scored nodes the one that proved useful ranks first, whatever the order."""
    rerank = OblivionNodePostprocessor(oblivion=engine, category="fact", importance=0.5)
    nodes = [node("fresh", "refund form B", 0.6), node("useful", "refund form A", 0.6)]
    rerank.postprocess_nodes(nodes, query_str=QUERY)
    rerank.mark_used(["useful"])
    clock.advance(3 * DAY)
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert ids(out) == ["useful", "fresh"]
    meta = {n.node.node_id: n.node.metadata for n in out}
    assert meta["useful"]["oblivion_activation"] > meta["fresh"]["oblivion_activation"]


def test_output_is_sorted_by_engine_score(engine: Oblivion) -> None:
    """Returned scores are the engine's combined scores, best first."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    out = rerank.postprocess_nodes(
        [node(str(i), f"refund note number {i}", s) for i, s in enumerate([0.1, 0.9, 0.5])],
        query_str=QUERY,
    )
    scores = [n.score for n in out]
    assert scores == sorted(scores, reverse=True)
    assert ids(out) == ["1", "2", "0"]
    assert all(n.score == n.node.metadata["oblivion_score"] for n in out)


@pytest.mark.parametrize("top_n", [1, 2, 5])
def test_top_n_keeps_the_best(engine: Oblivion, top_n: int) -> None:
    """At most ``top_n`` nodes come back, the highest scored ones."""
    rerank = OblivionNodePostprocessor(oblivion=engine, top_n=top_n)
    nodes = [node(str(i), f"refund note {i}", i / 10) for i in range(4)]
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert ids(out) == ["3", "2", "1", "0"][:top_n]


@pytest.mark.parametrize("budget", [0, 3, 7, 12, 100])
def test_token_budget_is_never_exceeded(engine: Oblivion, budget: int) -> None:
    """Kept nodes cost at most ``token_budget`` (text tokens + per-item overhead)."""
    rerank = OblivionNodePostprocessor(oblivion=engine, token_budget=budget)
    nodes = [node(str(i), " ".join(["refund"] * (i + 1)), 1 - i / 10) for i in range(6)]
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    overhead = engine.policy.per_item_tokens
    assert sum(len(n.node.get_content().split()) + overhead for n in out) <= budget


def test_duplicate_nodes_are_ranked_once(engine: Oblivion) -> None:
    """The same node id twice in the input comes back once."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    nws = node("a", "refunds take five days", 0.9)
    assert ids(rerank.postprocess_nodes([nws, nws], query_str=QUERY)) == ["a"]


def test_a_node_listed_twice_ranks_by_its_best_score(engine: Oblivion) -> None:
    """Two retrievers' lists fused: a node in both ranks by the higher of its scores,
    as the engine's rerank() takes the best of an id's relevances."""
    rerank = OblivionNodePostprocessor(oblivion=engine, feedback=False)
    nodes = [
        node("a", "refund policy", 0.1),
        node("b", "shipping policy", 0.5),
        node("a", "refund policy", 0.95),
    ]
    out = rerank.postprocess_nodes(nodes, query_str="refund")
    assert ids(out) == ["a", "b"]
    assert out[0].node.metadata["oblivion_relevance"] == pytest.approx(0.95)


def test_no_nodes_gives_no_nodes(engine: Oblivion) -> None:
    """An empty candidate list is returned as is, with nothing stored."""
    assert OblivionNodePostprocessor(oblivion=engine).postprocess_nodes([], query_str=QUERY) == []
    with pytest.raises(UnknownNamespaceError):
        engine.count(namespace="never")


def test_invalidated_nodes_are_dropped(engine: Oblivion) -> None:
    """A node whose memory was invalidated no longer comes back."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    nodes = [node("a", "refunds take five days", 0.9), node("b", "refunds are instant", 0.9)]
    rerank.postprocess_nodes(nodes, query_str=QUERY)
    engine.invalidate("b", reason="policy changed")
    assert ids(rerank.postprocess_nodes(nodes, query_str=QUERY)) == ["a"]


@pytest.mark.parametrize("order", [("leeds", "manchester"), ("manchester", "leeds")])
def test_registration_does_not_supersede_nodes(engine: Oblivion, order: tuple[str, ...]) -> None:
    """Nodes are documents: a node listed after a similar one does not make it stale, so
    the ranking follows the scores whatever order the retriever listed them in."""
    docs = {
        "leeds": node("leeds", "The office is in Leeds.", 0.9),
        "manchester": node("manchester", "The office moved to Manchester.", 0.3),
    }
    rerank = OblivionNodePostprocessor(oblivion=engine)
    out = rerank.postprocess_nodes([docs[k] for k in order], query_str="Where is the office?")
    assert ids(out) == ["leeds", "manchester"]
    assert engine.get("leeds").superseded_by is None
    assert engine.get("manchester").superseded_by is None


def test_an_edited_node_does_not_supersede_others(engine: Oblivion) -> None:
    """A node whose text changed is re-embedded without stale-fact detection either."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    leeds = node("leeds", "The office is in Leeds.", 0.9)
    rerank.postprocess_nodes(
        [leeds, node("b", "Refunds take five days.", 0.3)], query_str="Where is the office?"
    )
    moved = node("b", "The office moved to Manchester.", 0.3)
    out = rerank.postprocess_nodes([leeds, moved], query_str="Where is the office?")
    assert ids(out) == ["leeds", "b"]
    assert engine.get("leeds").superseded_by is None


def test_a_superseded_node_is_returned_and_nothing_else_is_added(engine: Oblivion) -> None:
    """A node superseded by hand still comes back (below its successor when both are
    given), and its successor is never added when the retriever did not return it."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    old = node("old", "The office is in Leeds.", 0.9)
    new = node("new", "The office moved to Manchester.", 0.3)
    rerank.postprocess_nodes([old, new], query_str="Where is the office?")
    engine.supersede("old", "new")
    assert ids(rerank.postprocess_nodes([old], query_str="Where is the office?")) == ["old"]
    both = rerank.postprocess_nodes([old, new], query_str="Where is the office?")
    assert ids(both) == ["new", "old"]


# ---------------------------------------------------------------- output nodes
def test_returned_nodes_carry_an_explanation_hidden_from_the_llm(engine: Oblivion) -> None:
    """Metadata holds id, tier, relevance, activation and why; prompts never show it."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    out = rerank.postprocess_nodes(
        [node("a", "refunds take five days", 0.9, page=2)], query_str=QUERY
    )
    meta = out[0].node.metadata
    assert set(OBLIVION_KEYS) <= set(meta)
    assert (meta["oblivion_id"], meta["oblivion_tier"], meta["page"]) == ("a", "active", 2)
    assert meta["oblivion_why"]["explanation"].startswith("ranked 1 of 1")
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        content = out[0].node.get_content(metadata_mode=mode)
        assert "oblivion" not in content and "page: 2" in content


def test_callers_nodes_are_not_modified(engine: Oblivion) -> None:
    """The caller's node objects keep their metadata; the postprocessor returns copies."""
    nws = node("a", "refunds take five days", 0.9, page=2)
    OblivionNodePostprocessor(oblivion=engine).postprocess_nodes([nws], query_str=QUERY)
    assert nws.node.metadata == {"page": 2}
    assert nws.node.excluded_llm_metadata_keys == []
    assert nws.score == 0.9


# ---------------------------------------------------------------- feedback
def test_kept_nodes_are_boosted_and_dropped_ones_are_not(engine: Oblivion) -> None:
    """Feedback boosts exactly the nodes that survive ``top_n``."""
    rerank = OblivionNodePostprocessor(oblivion=engine, top_n=1, importance=0.4)
    nodes = [node("kept", "refunds take five days", 0.9), node("cut", "shipping info", 0.1)]
    rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert engine.get("kept").access_count == 1
    assert engine.get("cut").access_count == 0
    assert engine.get("kept").activation > engine.get("cut").activation


def test_feedback_off_only_reads(engine: Oblivion) -> None:
    """With ``feedback=False`` ranking changes no activation."""
    rerank = OblivionNodePostprocessor(oblivion=engine, feedback=False)
    nodes = [node("a", "refunds take five days", 0.9)]
    rerank.postprocess_nodes(nodes, query_str=QUERY)
    before = engine.get("a")
    rerank.postprocess_nodes(nodes, query_str=QUERY)
    after = engine.get("a")
    assert (after.activation, after.access_count) == (before.activation, before.access_count)


def test_mark_used_gives_the_larger_boost(engine: Oblivion) -> None:
    """``mark_used`` raises activation more than being recalled does, and reports it."""
    rerank = OblivionNodePostprocessor(oblivion=engine, importance=0.2)
    nodes = [node("a", "refunds take five days", 0.5), node("b", "refund desk hours", 0.5)]
    rerank.postprocess_nodes(nodes, query_str=QUERY)
    recalled = engine.get("b").activation
    (used,) = rerank.mark_used(["a"])
    assert used == pytest.approx(engine.get("a").activation)
    assert used - recalled > 0.05


def test_mark_used_accepts_a_single_id(engine: Oblivion) -> None:
    """A bare string is one node id, not a sequence of characters."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes([node("abc", "refunds take five days", 0.5)], query_str=QUERY)
    assert len(rerank.mark_used("abc")) == 1


def test_mark_used_unknown_id_is_a_clear_error_and_boosts_nothing(engine: Oblivion) -> None:
    """An unknown id raises ``UnknownMemoryError`` naming it, and the known ids stay unboosted."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes([node("a", "refunds take five days", 0.5)], query_str=QUERY)
    before = engine.get("a").activation
    with pytest.raises(UnknownMemoryError, match=r"\['ghost'\].*Nothing was boosted"):
        rerank.mark_used(["a", "ghost"])
    assert engine.get("a").activation == before


def test_mark_used_before_any_node_is_a_clear_error(engine: Oblivion) -> None:
    """Feedback on a namespace the postprocessor never wrote is an unknown-id error too."""
    rerank = OblivionNodePostprocessor(oblivion=engine, namespace="empty")
    with pytest.raises(UnknownMemoryError, match="ghost"):
        rerank.mark_used(["ghost"])


# ---------------------------------------------------------------- bad input
def test_a_node_of_blank_text_is_left_out_with_a_warning(
    engine: Oblivion, caplog: pytest.LogCaptureFixture
) -> None:
    """A blank page LlamaIndex indexed (``Document(text="")``) failed every query that
    retrieved it; it has nothing to rank or show, and is left out, saying so."""
    rerank = OblivionNodePostprocessor(oblivion=engine, namespace="docs")
    blank = NodeWithScore(node=Document(id_="page", text=""), score=0.7)
    nuls = node("nuls", "\x00\n\x00 ", 0.6)  # blank once the NULs are spaces
    empty = node("empty", "   ", 0.5)
    nodes = [node("good", "refunds take five days", 0.9), empty, blank, nuls, empty]
    with caplog.at_level(logging.WARNING, logger="oblivion_llamaindex"):
        out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert ids(out) == ["good"]
    assert [r.id for r in engine.records(namespace="docs")] == ["good"]
    assert "3 node(s) of blank text" in caplog.text  # each named once
    assert "'empty', 'page', 'nuls'" in caplog.text
    assert rerank.postprocess_nodes(nodes[1:], query_str=QUERY) == []


def test_image_node_without_text_is_refused(engine: Oblivion) -> None:
    """An image-only node is named in the error and nothing already stored is lost."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes([node("old", "refunds take five days", 0.9)], query_str=QUERY)
    image = NodeWithScore(node=ImageNode(id_="img", image_url="http://x/y.png"), score=0.8)
    with pytest.raises(InvalidInputError, match="'img'"):
        rerank.postprocess_nodes([node("new", "shipping", 0.1), image], query_str=QUERY)
    assert [r.id for r in engine.records()] == ["old"]


@pytest.mark.parametrize("score", [math.nan, math.inf, "0.5"])
def test_non_finite_scores_are_refused(engine: Oblivion, score: object) -> None:
    """NaN, infinite or non-numeric node scores are refused before anything is stored."""
    bad = NodeWithScore.model_construct(node=TextNode(id_="a", text="refunds"), score=score)
    with pytest.raises(InvalidInputError, match="score"):
        OblivionNodePostprocessor(oblivion=engine).postprocess_nodes([bad], query_str=QUERY)
    assert engine.count() == 0


def test_scores_a_rounding_error_outside_the_range_are_clipped(engine: Oblivion) -> None:
    """A cosine of 1.0000000000000002 (float rounding) is a relevance of 1.0, not an error."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    out = rerank.postprocess_nodes(
        [node("a", "refunds take five days", 1.0000000000000002), node("b", "cats", -1.0000001)],
        query_str=QUERY,
    )
    relevance = {n.node.node_id: n.node.metadata["oblivion_relevance"] for n in out}
    assert (relevance["a"], relevance["b"]) == (1.0, -1.0)


def _query_engine(texts: list[str], embed_model: Any, rerank: Any, *, top_k: int) -> Any:
    """``texts`` as documents in a ``VectorStoreIndex``, queried through ``rerank`` (a
    ``MockLLM`` answers), as a LlamaIndex user wires it."""
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(texts)]
    index = VectorStoreIndex.from_documents(docs, embed_model=embed_model)
    return index.as_query_engine(
        llm=MockLLM(), similarity_top_k=top_k, node_postprocessors=[rerank]
    )


def test_vector_store_index_cosines_are_accepted(engine: Oblivion) -> None:
    """The README pipeline: ``VectorStoreIndex`` with ``MockEmbedding(embed_dim=384)``
    scores every node 1.0000000000000002, which the postprocessor takes as 1.0."""
    rerank = OblivionNodePostprocessor(oblivion=engine, top_n=3, token_budget=400)
    query_engine = _query_engine(FAQ[:2], MockEmbedding(embed_dim=384), rerank, top_k=10)
    response = query_engine.query("How long do refunds take?")
    assert len(response.source_nodes) == 2
    assert all(n.node.metadata["oblivion_relevance"] == 1.0 for n in response.source_nodes)


def test_score_outside_the_range_is_refused_before_anything_is_stored(engine: Oblivion) -> None:
    """A BM25 or cross-encoder score (7.3) is refused naming the node and the setting to
    change, and no node of the call is stored; ``relevance="embedding"`` then works."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    nodes = [node("good", "shipping is free", 0.4), node("bm25", "refunds take five days", 7.3)]
    with pytest.raises(InvalidInputError, match=r"'bm25'.*relevance='embedding'"):
        rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert engine.count() == 0
    rerank.relevance = "embedding"
    assert ids(rerank.postprocess_nodes(nodes, query_str=QUERY))[0] == "bm25"


def test_numpy_scores_are_accepted(engine: Oblivion) -> None:
    """A numpy float score (FAISS and co.; ``NodeWithScore`` does not re-validate an
    assigned score) counts as the number it is."""
    scored = node("a", "refunds take five days")
    scored.score = np.float32(0.25)  # type: ignore[assignment]
    out = OblivionNodePostprocessor(oblivion=engine).postprocess_nodes([scored], query_str=QUERY)
    assert out[0].node.metadata["oblivion_relevance"] == pytest.approx(0.25)


def test_refused_node_text_names_the_node_and_stores_nothing(engine: Oblivion) -> None:
    """A node text the engine refuses (too long) fails naming the node id, not an index
    into an internal batch, with the engine's error as the cause; nothing is stored."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes([node("seen", "refunds take five days", 0.5)], query_str=QUERY)
    too_long = "word " * (engine.policy.max_text_chars // 5 + 1)
    new = node("new", "shipping is free", 0.4)
    with pytest.raises(TextTooLongError, match=r"node 'manual'.*max_text_chars") as info:
        rerank.postprocess_nodes([new, node("manual", too_long, 0.3)], query_str=QUERY)
    assert "texts[" not in str(info.value)
    assert isinstance(info.value.__cause__, TextTooLongError)
    assert [r.id for r in engine.records()] == ["seen"]


@pytest.mark.parametrize("stray", ["\x00", "\ud83d"])
def test_a_node_with_a_stray_character_is_ranked_as_memories_read_it(
    engine: Oblivion, stray: str
) -> None:
    """A chunk holding a NUL or a lone surrogate (a PDF's extraction leaves them) failed
    every query that retrieved it; its memory holds it as the memories and queries read
    such text (a space, "?"), and the node comes back as it was given."""
    rerank = OblivionNodePostprocessor(oblivion=engine, relevance="embedding")
    nodes = [node("bin", f"refunds take{stray} five days", 0.2), node("cat", "the cat", 0.9)]
    out = rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert ids(out)[0] == "bin" and out[0].node.get_content() == f"refunds take{stray} five days"
    assert engine.get("bin").text == (
        "refunds take  five days" if stray == "\x00" else "refunds take? five days"
    )
    rerank.postprocess_nodes(nodes, query_str=QUERY)  # the same text: not edited again
    assert [e.kind for e in engine.history("bin")].count("edit") == 0


@pytest.mark.parametrize("bad", ["too long"])
def test_a_refused_changed_node_stores_nothing_of_the_call(engine: Oblivion, bad: str) -> None:
    """A node re-sent with a text the engine refuses is refused before any write: the
    new nodes of the same call are not stored either (all texts are checked first)."""
    rerank = OblivionNodePostprocessor(oblivion=engine, namespace="docs")
    rerank.postprocess_nodes([node("seen", "refunds take five days", 0.5)], query_str=QUERY)
    text = {"too long": "word " * (engine.policy_for("docs").max_text_chars // 5 + 1)}[bad]
    nodes = [node("new", "shipping is free over 50 EUR", 0.4), node("seen", text, 0.5)]
    with pytest.raises(InvalidInputError, match=r"node 'seen'.*unchanged.*Nothing was stored"):
        rerank.postprocess_nodes(nodes, query_str=QUERY)
    assert [r.id for r in engine.records(namespace="docs")] == ["seen"]
    assert engine.get("seen", namespace="docs").text == "refunds take five days"
    # the call without the bad node goes through
    rerank.postprocess_nodes(nodes[:1], query_str=QUERY)
    assert sorted(r.id for r in engine.records(namespace="docs")) == ["new", "seen"]


def test_a_node_whose_metadata_alone_changed_is_not_re_checked(engine: Oblivion) -> None:
    """Only texts to be written are checked: a held node whose metadata changed is
    edited even when its text would now be too long (a lowered ``max_text_chars``)."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    text = "refunds take five working days " * 4
    rerank.postprocess_nodes([node("a", text, 0.5)], query_str=QUERY)
    engine.set_policy(engine.policy.replace(max_text_chars=20))
    rerank.postprocess_nodes([node("a", text, 0.5, src="faq")], query_str=QUERY)
    assert own_metadata(engine, "a") == {"src": "faq"}


@pytest.mark.parametrize("stray", ["\x00", "\ud83d"])
def test_a_query_with_a_stray_character_is_read_cleaned(engine: Oblivion, stray: str) -> None:
    """A NUL or lone surrogate in the query (the engine refuses both) is read as a space
    or "?", as the retrievers and memories read it: the nodes are ranked, not refused."""
    rerank = OblivionNodePostprocessor(oblivion=engine, relevance="embedding")
    nodes = [node("a", "refunds take five days", 0.5), node("b", "the cat is Miso", 0.5)]
    assert ids(rerank.postprocess_nodes(nodes, query_str=f"refunds{stray} days"))[0] == "a"
    with pytest.raises(InvalidInputError, match="query_str"):
        rerank.postprocess_nodes(nodes, query_str="\x00\x00")


@pytest.mark.parametrize(
    ("node_ids", "match"),
    [
        (None, "node id or a list of node ids.*NoneType"),
        (b"a", "node id or a list of node ids.*bytes"),
        (3, "node id or a list of node ids.*int"),
        ([1], "node ids as strings.*int 1"),
    ],
)
def test_mark_used_refuses_what_is_not_node_ids(
    engine: Oblivion, node_ids: object, match: str
) -> None:
    """``mark_used`` of something that is not node ids says what to pass (not a
    ``TypeError``, nor an id of ``120`` read from ``b"x"``), and boosts nothing."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    rerank.postprocess_nodes([node("a", "refunds take five days", 0.5)], query_str=QUERY)
    before = engine.get("a").activation
    with pytest.raises(InvalidInputError, match=f"OblivionNodePostprocessor.mark_used.*{match}"):
        rerank.mark_used(node_ids)  # type: ignore[arg-type]
    assert engine.get("a").activation == before


def test_missing_query_is_refused(engine: Oblivion) -> None:
    """Re-ranking without a query says how to pass one."""
    with pytest.raises(InvalidInputError, match="query_str"):
        OblivionNodePostprocessor(oblivion=engine).postprocess_nodes([node("a", "x", 0.5)])


def test_non_node_items_are_refused(engine: Oblivion) -> None:
    """Passing bare nodes instead of ``NodeWithScore`` is a clear error."""
    with pytest.raises(InvalidInputError, match="NodeWithScore"):
        OblivionNodePostprocessor(oblivion=engine).postprocess_nodes(
            [TextNode(text="x")],  # type: ignore[list-item]
            query_str=QUERY,
        )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("token_budget", -1),
        ("token_budget", 2.5),
        ("token_budget", True),
        ("token_budget", "300"),
        ("top_n", 0),
        ("top_n", -3),
        ("top_n", True),
        ("top_n", "2"),
        ("importance", 2),
        ("namespace", ""),
    ],
)
def test_bad_settings_are_refused(engine: Oblivion, field: str, value: object) -> None:
    """Negative budgets, non-positive ``top_n`` and out-of-range importance fail at
    construction; so do a bool or a string, which pydantic would read as an int (``True``
    as a budget of 1 kept nothing), as every other adapter and the engine refuse them."""
    with pytest.raises(ValueError, match=field):
        OblivionNodePostprocessor(oblivion=engine, **{field: value})


def test_bad_settings_are_refused_on_assignment(engine: Oblivion) -> None:
    """Changing a setting later is validated too."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    with pytest.raises(ValueError, match="token_budget"):
        rerank.token_budget = -5
    assert rerank.token_budget is None


def test_engine_is_required(engine: Oblivion) -> None:
    """Something other than an engine is refused with a hint at ``from_defaults``."""
    with pytest.raises(InvalidInputError, match="from_defaults"):
        OblivionNodePostprocessor(oblivion="./memory")  # type: ignore[arg-type]


# ---------------------------------------------------------------- async
async def test_async_path_matches_sync(engine: Oblivion) -> None:
    """``apostprocess_nodes`` and ``amark_used`` behave like their sync twins."""
    rerank = OblivionNodePostprocessor(oblivion=engine, top_n=1)
    nodes = [node("a", "refunds take five days", 0.9), node("b", "shipping", 0.2)]
    out = await rerank.apostprocess_nodes(nodes, query_str=QUERY)
    assert ids(out) == ["a"]
    assert len(await rerank.amark_used(["a"])) == 1
    with pytest.raises(UnknownMemoryError):
        await rerank.amark_used(["ghost"])


async def test_concurrent_calls_register_each_node_once(engine: Oblivion) -> None:
    """Concurrent async calls over the same new nodes neither fail nor duplicate them."""
    rerank = OblivionNodePostprocessor(oblivion=engine)
    nodes = [node(f"n{i}", f"refund note {i}", 0.5) for i in range(5)]
    results = await asyncio.gather(
        *(rerank.apostprocess_nodes(nodes, query_str=QUERY) for _ in range(4))
    )
    assert all(len(r) == 5 for r in results)
    assert engine.count() == 5


def _meeting_engine(clock: ManualClock) -> Oblivion:
    """An engine whose embedder holds the first two writes until both have been asked
    for (two callers that have each found their node missing)."""
    both_looked_up = threading.Barrier(2, timeout=10)
    writes = itertools.count()

    class MeetingEmbedder(HashEmbedder):
        def embed_documents(self, texts: list[str]) -> Any:
            if next(writes) < 2:  # the two callers' first writes meet here
                with contextlib.suppress(threading.BrokenBarrierError):
                    both_looked_up.wait()
            return super().embed_documents(texts)

    return new_engine(clock=clock, embedder=MeetingEmbedder())


def test_postprocessors_sharing_an_engine_register_a_node_once(clock: ManualClock) -> None:
    """Two postprocessors on one engine (one per request) rerank the same unseen node
    at once (the embedder holds each write until both have found the node missing):
    both succeed and the node is registered once."""
    shared = _meeting_engine(clock)
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def request() -> None:
        rerank = OblivionNodePostprocessor(oblivion=shared, top_n=3)
        try:
            out = rerank.postprocess_nodes(
                [node("doc-1", "refunds take five working days", 0.8)], query_str=QUERY
            )
        except BaseException as exc:  # reported below
            errors.append(exc)
        else:
            results.append(ids(out))

    try:
        threads = [threading.Thread(target=request) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not errors, errors
        assert results == [["doc-1"], ["doc-1"]]
        assert shared.count() == 1
        assert shared.get("doc-1").access_count == 2
    finally:
        shared.close()


def test_postprocessors_sharing_an_engine_register_a_text_once(clock: ManualClock) -> None:
    """Two postprocessors on one engine rerank, at once, unseen nodes with other node ids
    and one text (two indexes built from the same documents; the embedder holds each
    write until both have looked the node up): the text is registered once, each caller
    gets its own node back and can mark it used."""
    shared = _meeting_engine(clock)
    results: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    def request(node_id: str) -> None:
        rerank = OblivionNodePostprocessor(oblivion=shared, top_n=3)
        try:
            out = rerank.postprocess_nodes(
                [node(node_id, "refunds take five working days", 0.8)], query_str=QUERY
            )
            rerank.mark_used([node_id])
        except BaseException as exc:  # reported below
            errors.append(exc)
        else:
            results[node_id] = [*ids(out), out[0].node.metadata["oblivion_id"]]

    try:
        threads = [threading.Thread(target=request, args=(i,)) for i in ("run-1", "run-2")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not errors, errors
        assert shared.count() == 1
        (memory_id,) = [r.id for r in shared.records()]
        assert results == {"run-1": ["run-1", memory_id], "run-2": ["run-2", memory_id]}
        assert shared.get(memory_id).access_count == 4  # two reranks, two mark_used
    finally:
        shared.close()


def test_node_registered_meanwhile_is_not_registered_again(clock: ManualClock) -> None:
    """A node another caller registers between the lookup and the write (here: during
    the write's embedding) is left to that registration, edited to this node's text if
    it differs; the other new nodes of the batch are registered."""
    shared: Oblivion
    interrupted: list[bool] = []

    class InterruptingEmbedder(HashEmbedder):
        def embed_documents(self, texts: list[str]) -> Any:
            if "refunds take five days" in texts and not interrupted:
                interrupted.append(True)  # someone else gets there first
                shared.remember("refunds take 5 days", id="a", supersede=False)
            return super().embed_documents(texts)

    shared = new_engine(clock=clock, embedder=InterruptingEmbedder())
    try:
        rerank = OblivionNodePostprocessor(oblivion=shared)
        out = rerank.postprocess_nodes(
            [node("a", "refunds take five days", 0.9), node("b", "free shipping", 0.2)],
            query_str=QUERY,
        )
        assert sorted(ids(out)) == ["a", "b"]
        assert shared.count() == 2
        assert shared.get("a").text == "refunds take five days"
        assert shared.get("b").text == "free shipping"
    finally:
        shared.close()


# ---------------------------------------------------------------- inside LlamaIndex
def test_query_engine_uses_the_postprocessor(engine: Oblivion) -> None:
    """``as_query_engine(node_postprocessors=[...])`` re-ranks and trims the sources."""
    rerank = OblivionNodePostprocessor(oblivion=engine, top_n=2)
    query_engine = _query_engine(FAQ, HashEmbedding(), rerank, top_k=5)
    response = query_engine.query("How many days do refunds take?")
    assert len(response.source_nodes) == 2
    assert "refund" in response.source_nodes[0].node.get_content().lower()
    assert engine.count() == 5
    assert "oblivion" not in str(response)


def test_a_rebuilt_vector_store_index_reuses_its_nodes_memories(engine: Oblivion) -> None:
    """``VectorStoreIndex.from_documents`` run again (the app restarted: new node ids)
    through ``as_query_engine(node_postprocessors=[...])`` ranks the same memories,
    and ``mark_used`` with the new run's node ids boosts them."""
    rerank = OblivionNodePostprocessor(oblivion=engine, top_n=2)
    memory_ids: list[set[str]] = []
    for _ in range(2):
        query_engine = _query_engine(FAQ, HashEmbedding(), rerank, top_k=5)
        response = query_engine.query("How many days do refunds take?")
        assert engine.count() == len(FAQ)
        indexed = set(query_engine.retriever._index.docstore.docs)
        top = response.source_nodes[0].node
        assert {n.node.node_id for n in response.source_nodes} <= indexed
        memory_ids.append({n.node.metadata["oblivion_id"] for n in response.source_nodes})
        before = engine.get(top.metadata["oblivion_id"]).access_count
        rerank.mark_used([top.node_id])
        assert engine.get(top.metadata["oblivion_id"]).access_count == before + 1
    assert memory_ids[0] == memory_ids[1]


async def test_vector_memory_block_uses_the_postprocessor(engine: Oblivion) -> None:
    """Inside ``VectorMemoryBlock`` the postprocessor registers and re-ranks stored turns."""
    rerank = OblivionNodePostprocessor(oblivion=engine, top_n=1)
    block = VectorMemoryBlock(
        vector_store=TextVectorStore(),
        embed_model=HashEmbedding(),
        similarity_top_k=3,
        node_postprocessors=[rerank],
    )
    for text in ["My refund was late", "The cat is called Miso", "I like green tea"]:
        await block.aput([ChatMessage(role="user", content=text)])
    content = await block.aget([ChatMessage(role="user", content="when will my refund come")])
    assert "refund" in content and "Miso" not in content
    assert engine.count() == 3


FAQ = [
    "Refunds take five working days to reach your account.",
    "Shipping is free for orders above 50 euros.",
    "Our office cat is called Miso.",
    "Returns need the original receipt.",
    "Support is open from 9 to 5 on weekdays.",
]


# ---------------------------------------------------------------- real stack
@pytest.mark.integration
def test_real_query_engine_reranks_by_activation(real_engine: Oblivion, clock: ManualClock) -> None:
    """With equal retriever scores (MockEmbedding) the node the answers used rises to the top."""
    rerank = OblivionNodePostprocessor(oblivion=real_engine, top_n=3, token_budget=60)
    query_engine = _query_engine(FAQ, MockEmbedding(embed_dim=8), rerank, top_k=5)
    first = query_engine.query("When is support open?")
    assert len(first.source_nodes) == 3
    for hit in first.source_nodes:
        assert hit.node.metadata["oblivion_relevance"] == pytest.approx(1.0)
    assert real_engine.count() == len(FAQ)
    refund_id = next(r.id for r in real_engine.records() if r.text.startswith("Refunds"))
    for _ in range(3):
        rerank.mark_used([refund_id])
        clock.advance(DAY)
    again = query_engine.query("When is support open?")
    top = again.source_nodes[0].node
    assert top.node_id == refund_id
    assert top.metadata["oblivion_tier"] == "active"
    assert "activation" in top.metadata["oblivion_why"]["explanation"]
    counter = real_engine.token_counter
    overhead = real_engine.policy.per_item_tokens
    assert sum(counter(n.node.get_content()) + overhead for n in again.source_nodes) <= 60


@pytest.mark.integration
async def test_real_vector_memory_block_with_postprocessor(real_engine: Oblivion) -> None:
    """``Memory`` + ``VectorMemoryBlock`` + the postprocessor run on the real engine, async."""
    rerank = OblivionNodePostprocessor(oblivion=real_engine, top_n=1, token_budget=40)
    block = VectorMemoryBlock(
        vector_store=TextVectorStore(),
        embed_model=HashEmbedding(),
        similarity_top_k=4,
        node_postprocessors=[rerank],
        priority=1,
    )
    memory = Memory.from_defaults(
        session_id="s",
        token_limit=200,
        chat_history_token_ratio=0.2,
        token_flush_size=10,
        memory_blocks=[block],
    )
    for text in [
        "My refund for order 1234 was late.",
        "Our cat is called Miso.",
        "I like green tea in the morning.",
        "hello",
        "When will my refund for the order arrive?",
    ]:
        await memory.aput(ChatMessage(role="user", content=text))
        await memory.aput(ChatMessage(role="assistant", content="Noted."))
    messages = await memory.aget()
    system = messages[0].content or ""
    assert messages[0].role.value == "system" and "refund" in system.lower()
    registered = real_engine.records()
    assert registered and all("<message role=" in r.text for r in registered)
    assert max(r.access_count for r in registered) >= 1
