"""``OblivionRetriever``: memories as LlamaIndex nodes, sync and async."""

from __future__ import annotations

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, QueryBundle
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from oblivion_core import InvalidInputError, Oblivion, Tier, UnknownMemoryError
from oblivion_core.testing import ManualClock
from oblivion_llamaindex import OblivionRetriever

from ._helpers import DAY


@pytest.fixture
def filled(engine: Oblivion) -> Oblivion:
    """An engine with a few memories."""
    engine.remember("Refunds take five working days.", id="refund", metadata={"src": "faq"})
    engine.remember("The office cat is called Miso.", id="cat")
    engine.remember("Always answer in British English.", id="rule", category="instruction")
    return engine


def test_retrieve_returns_scored_nodes_with_explanations(filled: Oblivion) -> None:
    """Each hit is a node keyed by memory id with tier, relevance, activation and why."""
    hits = OblivionRetriever(filled, k=1).retrieve("how many days do refunds take")
    assert len(hits) == 1
    hit = hits[0]
    meta = hit.node.metadata
    assert hit.node.node_id == "refund" == meta["oblivion_id"]
    assert hit.node.get_content() == "Refunds take five working days."
    assert hit.score == pytest.approx(meta["oblivion_score"])
    assert meta["src"] == "faq"
    assert meta["oblivion_tier"] == "active"
    assert 0 < meta["oblivion_relevance"] <= 1
    assert 0 < meta["oblivion_activation"] <= 1
    assert meta["oblivion_why"]["explanation"].startswith("ranked 1 of")


def test_explanations_are_hidden_from_prompts(filled: Oblivion) -> None:
    """The ``oblivion_*`` keys never reach the LLM or embedding text; user metadata does."""
    hit = OblivionRetriever(filled, k=1).retrieve("refunds")[0]
    llm_text = hit.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "oblivion" not in llm_text and "src: faq" in llm_text


def test_retrieve_accepts_a_query_bundle(filled: Oblivion) -> None:
    """A ``QueryBundle`` works like a plain string."""
    retriever = OblivionRetriever(filled, k=1, feedback=False)
    assert retriever.retrieve(QueryBundle("office cat"))[0].node.node_id == "cat"


def test_a_query_bundle_searches_its_custom_embedding_strings(filled: Oblivion) -> None:
    """``custom_embedding_strs`` (set by HyDE and other query transforms) are what is
    searched for, as LlamaIndex's vector retrievers embed them."""
    retriever = OblivionRetriever(filled, k=1, feedback=False)
    bundle = QueryBundle("q?", custom_embedding_strs=["the office cat is called Miso"])
    assert retriever.retrieve(bundle)[0].node.node_id == "cat"
    bundle = QueryBundle("", custom_embedding_strs=["refunds take five working days"])
    assert retriever.retrieve(bundle)[0].node.node_id == "refund"


def test_a_query_bundle_with_only_an_embedding_is_refused(filled: Oblivion) -> None:
    """A bundle with an embedding and no query text is refused (Oblivion embeds the text
    with its own model) instead of finding nothing; with text too, the text is searched."""
    retriever = OblivionRetriever(filled, k=1, feedback=False)
    vector = [0.1] * 8
    for bundle in (
        QueryBundle("", embedding=vector),
        QueryBundle("  ", embedding=vector),
        QueryBundle("", custom_embedding_strs=[""], embedding=vector),
    ):
        with pytest.raises(InvalidInputError, match=r"own model.*pass the query text"):
            retriever.retrieve(bundle)
    bundle = QueryBundle("the office cat", embedding=vector)
    assert retriever.retrieve(bundle)[0].node.node_id == "cat"


def test_token_budget_bounds_the_hits(filled: Oblivion) -> None:
    """Returned texts cost at most ``token_budget`` tokens (text + per-item overhead)."""
    budget = 12
    hits = OblivionRetriever(filled, token_budget=budget).retrieve("refunds cat English")
    overhead = filled.policy.per_item_tokens
    assert hits
    assert sum(len(h.node.get_content().split()) + overhead for h in hits) <= budget


def test_retrieval_feeds_back_unless_disabled(filled: Oblivion) -> None:
    """Retrieval boosts what it returns; ``feedback=False`` only reads."""
    OblivionRetriever(filled, k=1, feedback=False).retrieve("refunds")
    assert filled.get("refund").access_count == 0
    OblivionRetriever(filled, k=1).retrieve("refunds")
    assert filled.get("refund").access_count == 1


def test_deep_search_reaches_the_archive(filled: Oblivion, clock: ManualClock) -> None:
    """Archived memories come back (tier ``archive``) when the archive is searched."""
    filled.remember("lovely weather today", id="chat", category="small_talk")
    clock.advance(10 * DAY)
    filled.maintain()
    assert filled.get("chat").tier == Tier.ARCHIVE
    hits = OblivionRetriever(filled, deep=True, k=1).retrieve("lovely weather")
    assert hits[0].node.node_id == "chat"
    assert hits[0].node.metadata["oblivion_tier"] == "archive"


def test_unknown_namespace_returns_nothing(filled: Oblivion) -> None:
    """A namespace never written to is an empty result, not an error."""
    assert OblivionRetriever(filled, namespace="nobody").retrieve("anything") == []


def test_namespace_scopes_retrieval(filled: Oblivion) -> None:
    """A retriever sees only its namespace."""
    filled.remember("Bob's refunds are special.", id="bob", namespace="bob")
    hits = OblivionRetriever(filled, namespace="bob").retrieve("refunds")
    assert [h.node.node_id for h in hits] == ["bob"]


def test_mark_used_boosts_and_refuses_unknown_ids(filled: Oblivion) -> None:
    """``mark_used`` gives the used boost; an unknown id fails without boosting anything."""
    retriever = OblivionRetriever(filled)
    before = filled.get("cat").activation
    with pytest.raises(UnknownMemoryError, match="ghost"):
        retriever.mark_used(["cat", "ghost"])
    assert filled.get("cat").activation == before
    (after,) = retriever.mark_used(["cat"])
    assert after > before


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 0}, "k must be"),
        ({"token_budget": -1}, "token_budget"),
        ({"deep": "yes"}, "deep"),
        ({"namespace": ""}, "namespace"),
    ],
)
def test_bad_settings_are_refused(engine: Oblivion, kwargs: dict[str, object], match: str) -> None:
    """Bad settings fail at construction with a message naming the setting."""
    with pytest.raises(InvalidInputError, match=match):
        OblivionRetriever(engine, **kwargs)  # type: ignore[arg-type]


def _filters(*parts: MetadataFilter | MetadataFilters, condition: str = "and") -> MetadataFilters:
    return MetadataFilters(filters=list(parts), condition=FilterCondition(condition))


def test_metadata_filters_keep_to_matching_memories(engine: Oblivion) -> None:
    """``filters`` as a vector index retriever takes them: operators, AND/OR, nesting."""
    for i, (team, year) in enumerate([("ops", 2024), ("ops", 2026), ("web", 2025), ("web", 2026)]):
        engine.remember(
            f"Deploy checklist {i} for the {team} team.",
            id=f"m{i}",
            metadata={"team": team, "year": year},
        )

    def ids(filters: MetadataFilters) -> set[str]:
        found = OblivionRetriever(engine, k=10, filters=filters).retrieve("deploy checklist")
        return {h.node.node_id for h in found}

    assert ids(_filters(MetadataFilter(key="team", value="ops"))) == {"m0", "m1"}
    newer = MetadataFilter(key="year", value=2025, operator=FilterOperator.GTE)
    assert ids(_filters(MetadataFilter(key="team", value="web"), newer)) == {"m2", "m3"}
    assert ids(_filters(MetadataFilter(key="team", value="ops"), newer, condition="or")) == {
        "m0",
        "m1",
        "m2",
        "m3",
    }
    nested = _filters(
        MetadataFilter(key="year", value=[2024, 2025], operator=FilterOperator.IN),
        _filters(
            MetadataFilter(key="team", value="web", operator=FilterOperator.NE),
            MetadataFilter(key="year", value=2026, operator=FilterOperator.EQ),
        ),
        condition="or",
    )
    assert ids(nested) == {"m0", "m1", "m2"}
    assert ids(_filters()) == {"m0", "m1", "m2", "m3"}  # no filter at all


def test_filters_set_on_a_built_retriever_apply(engine: Oblivion) -> None:
    """``retriever.filters = ...`` after construction is what the next retrieval keeps
    to; a filter the engine cannot express is refused there and the old one stays."""
    for i, team in enumerate(["ops", "web"]):
        engine.remember(f"Deploy checklist {i}.", id=f"m{i}", metadata={"team": team})
    retriever = OblivionRetriever(engine, k=10)
    retriever.filters = _filters(MetadataFilter(key="team", value="web"))
    assert [h.node.node_id for h in retriever.retrieve("deploy checklist")] == ["m1"]
    text_match = MetadataFilter(key="team", value="o", operator=FilterOperator.TEXT_MATCH)
    with pytest.raises(InvalidInputError, match="text_match"):
        retriever.filters = _filters(text_match)
    assert retriever.filters is not None and retriever.filters.filters[0].value == "web"
    assert [h.node.node_id for h in retriever.retrieve("deploy checklist")] == ["m1"]
    retriever.filters = None
    assert {h.node.node_id for h in retriever.retrieve("deploy checklist")} == {"m0", "m1"}


def test_filters_changed_in_place_apply_to_the_next_retrieval(engine: Oblivion) -> None:
    """As a vector index retriever reads its filters on every query, one whose
    MetadataFilters object is changed in place keeps to the change (no tenant's
    memories leak through a filter shown but not applied); one changed into what the
    engine cannot express is refused at the retrieval."""
    engine.remember("alice's invoice is overdue", metadata={"user": "alice"}, id="a")
    engine.remember("bob's invoice is overdue", metadata={"user": "bob"}, id="b")
    shown = MetadataFilters(filters=[])
    retriever = OblivionRetriever(engine, k=10, filters=shown)
    assert {h.node.node_id for h in retriever.retrieve("invoice")} == {"a", "b"}
    shown.filters.append(MetadataFilter(key="user", value="alice"))
    assert [h.node.node_id for h in retriever.retrieve("invoice")] == ["a"]
    shown.filters.append(MetadataFilter(key="user", value="x", operator=FilterOperator.TEXT_MATCH))
    with pytest.raises(InvalidInputError, match="text_match"):
        retriever.retrieve("invoice")


def test_list_filters_keep_to_memories_whose_lists_hold_the_values(engine: Oblivion) -> None:
    """``contains``, ``any`` and ``all`` over a list value (``{"tags": [...]}``), as
    LlamaIndex defines them: the list holds the value, any of the values, all of them."""
    for i, tags in enumerate([["ops", "urgent"], ["ops"], ["web", "urgent"], []]):
        engine.remember(f"Deploy checklist {i}.", id=f"m{i}", metadata={"tags": tags})

    def ids(f: MetadataFilter) -> set[str]:
        found = OblivionRetriever(engine, k=10, filters=_filters(f)).retrieve("deploy checklist")
        return {h.node.node_id for h in found}

    assert ids(MetadataFilter(key="tags", value="urgent", operator=FilterOperator.CONTAINS)) == {
        "m0",
        "m2",
    }
    any_of = MetadataFilter(key="tags", value=["web", "ops"], operator=FilterOperator.ANY)
    assert ids(any_of) == {"m0", "m1", "m2"}
    all_of = MetadataFilter(key="tags", value=["ops", "urgent"], operator=FilterOperator.ALL)
    assert ids(all_of) == {"m0"}
    one = MetadataFilter(key="tags", value=["web"], operator=FilterOperator.ALL)
    assert ids(one) == {"m2"}


@pytest.mark.parametrize(
    ("filters", "match"),
    [
        ({"team": "ops"}, "filters must be llama_index's MetadataFilters"),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="team", value="o", operator=FilterOperator.TEXT_MATCH)]
            ),
            "operator 'text_match' \\(on 'team'\\) is not supported",
        ),
        (
            _filters(MetadataFilter(key="team", value="ops"), condition="not"),
            "condition 'not' is not supported",
        ),
        (_filters(MetadataFilter(key="team", value=None)), "must be a str"),  # type: ignore[arg-type]
        (
            _filters(MetadataFilter(key="tags", value="ops", operator=FilterOperator.ANY)),
            "operator 'any' \\(on 'tags'\\) needs a non-empty list",
        ),
    ],
)
def test_unsupported_filters_are_refused_when_built(
    engine: Oblivion, filters: object, match: str
) -> None:
    """A dict instead of ``MetadataFilters``, an operator or condition the engine's
    filter cannot express, or a value it cannot compare is refused at construction."""
    with pytest.raises(InvalidInputError, match=match):
        OblivionRetriever(engine, filters=filters)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
async def test_an_empty_query_finds_nothing_and_boosts_nothing(
    filled: Oblivion, query: str
) -> None:
    """An empty or blank query (an agent's tool call may send one) returns no nodes,
    sync and async, and changes no activation; it does not raise."""
    before = {r.id: (r.activation, r.access_count) for r in filled.records()}
    retriever = OblivionRetriever(filled)
    assert retriever.retrieve(query) == []
    assert await retriever.aretrieve(QueryBundle(query_str=query)) == []
    filled._lock.settle()
    assert {r.id: (r.activation, r.access_count) for r in filled.records()} == before


@pytest.mark.parametrize("stray", ["\x00", "\ud83d"])
async def test_a_query_with_a_stray_character_is_searched_cleaned(
    filled: Oblivion, stray: str
) -> None:
    """A NUL or lone surrogate in the query (the engine refuses both) is searched as a
    space or "?", sync and async, as the LangChain retriever does; a query of nothing
    but NULs finds nothing."""
    retriever = OblivionRetriever(filled, k=1)
    query = f"how many days do refunds take{stray}"
    assert [h.node.node_id for h in retriever.retrieve(query)] == ["refund"]
    assert [h.node.node_id for h in await retriever.aretrieve(query)] == ["refund"]
    assert retriever.retrieve("\x00 \x00") == []


@pytest.mark.parametrize(
    ("node_ids", "match"),
    [
        (None, "node id or a list of node ids.*NoneType"),
        (b"cat", "node id or a list of node ids.*bytes"),
        (["cat", 7], "node ids as strings.*int 7 at position 1"),
    ],
)
def test_mark_used_refuses_what_is_not_node_ids(
    filled: Oblivion, node_ids: object, match: str
) -> None:
    """Not node ids is an ``InvalidInputError`` saying what to pass, and boosts nothing."""
    before = filled.get("cat").activation
    with pytest.raises(InvalidInputError, match=f"OblivionRetriever.mark_used.*{match}"):
        OblivionRetriever(filled).mark_used(node_ids)  # type: ignore[arg-type]
    assert filled.get("cat").activation == before


async def test_async_retrieve_matches_sync(filled: Oblivion) -> None:
    """``aretrieve`` returns the same nodes as ``retrieve``."""
    retriever = OblivionRetriever(filled, feedback=False)
    sync = [(h.node.node_id, h.score) for h in retriever.retrieve("refunds")]
    async_ = [(h.node.node_id, h.score) for h in await retriever.aretrieve("refunds")]
    assert async_ == sync
    assert len(await retriever.amark_used(["refund"])) == 1


def test_works_in_a_query_engine(filled: Oblivion) -> None:
    """``RetrieverQueryEngine`` answers over Oblivion memories with the hits as sources."""
    engine = RetrieverQueryEngine.from_args(OblivionRetriever(filled, k=2), llm=MockLLM())
    response = engine.query("how long do refunds take")
    assert response.source_nodes[0].node.node_id == "refund"
    assert "Refunds take five working days." in str(response)
    assert "oblivion_why" not in str(response)


@pytest.mark.integration
async def test_real_store_sync_and_async(real_engine: Oblivion, clock: ManualClock) -> None:
    """On the real stack, the retriever ranks by meaning and archived memories carry their tier."""
    real_engine.remember("Refunds take five working days.", id="refund")
    real_engine.remember("The office cat is called Miso.", id="cat")
    real_engine.remember("Lovely weather today!", id="chat", category="small_talk")
    clock.advance(10 * DAY)
    real_engine.maintain()
    retriever = OblivionRetriever(real_engine, k=1)
    hits = retriever.retrieve("When will I get my money back?")
    assert hits[0].node.node_id == "refund"
    deep = OblivionRetriever(real_engine, k=1, deep=True)
    archived = await deep.aretrieve("What's the weather like?")
    assert archived[0].node.node_id == "chat"
    assert archived[0].node.metadata["oblivion_tier"] == "archive"
    assert "archive" in archived[0].node.metadata["oblivion_why"]["explanation"]
    emailed = OblivionRetriever(
        real_engine, k=1, filters=_filters(MetadataFilter(key="src", value="email"))
    )
    real_engine.remember(
        "The refund for order 77 was approved by email.", id="mail", metadata={"src": "email"}
    )
    assert [h.node.node_id for h in await emailed.aretrieve("Refunds take how long?")] == ["mail"]
