"""OblivionStore: the LangGraph BaseStore contract, ranked by activation."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from _lc_helpers import ScriptedChatModel
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from oblivion_core import InvalidInputError, Oblivion, Policy
from oblivion_core.testing import ManualClock, memory
from oblivion_langchain import OblivionStore
from oblivion_langchain._convert import encode_namespace

DAY = 86_400.0
NS = ("memories", "sam")


@pytest.fixture
def store(engine: Oblivion) -> OblivionStore:
    """A store over the fast engine that embeds each value's "text" field."""
    return OblivionStore(engine, index={"fields": ["text"]})


def _activation(engine: Oblivion, namespace: tuple[str, ...], key: str) -> float:
    return engine.get(key, namespace=encode_namespace(namespace)).activation


def _snapshot(engine: Oblivion) -> dict[str, list[tuple[str, str, float]]]:
    return {
        ns: [(r.id, r.text, r.activation) for r in engine.records(namespace=ns)]
        for ns in engine.namespaces()
        if ns != engine.default_namespace
    }


# ==================================================================== put / get / delete
def test_put_then_get_returns_the_item(store: OblivionStore) -> None:
    """get() returns the value put, with its key, namespace tuple and aware datetimes."""
    store.put(NS, "tea", {"text": "I prefer green tea", "strength": 3})
    item = store.get(NS, "tea")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        NS,
        "tea",
        {"text": "I prefer green tea", "strength": 3},
    )
    assert isinstance(item.created_at, datetime) and item.created_at.tzinfo is not None
    assert item.created_at == item.updated_at


def test_put_to_an_existing_key_edits_it(engine: Oblivion, clock: ManualClock) -> None:
    """A second put replaces the value and text, keeps created_at and the activation."""
    times = iter([datetime(2025, 1, 1).astimezone(), datetime(2025, 1, 2).astimezone()])
    store = OblivionStore(engine, index={"fields": ["text"]}, now=lambda: next(times))
    store.put(NS, "drink", {"text": "I prefer green tea"})
    clock.advance(3 * DAY)
    before = _activation(engine, NS, "drink")
    store.put(NS, "drink", {"text": "I prefer black coffee"})
    item = store.get(NS, "drink")
    assert item is not None and item.value == {"text": "I prefer black coffee"}
    assert item.created_at.day == 1 and item.updated_at.day == 2
    assert engine.get("drink", namespace=encode_namespace(NS)).text == "I prefer black coffee"
    assert _activation(engine, NS, "drink") == pytest.approx(before)
    assert engine.count(namespace=encode_namespace(NS)) == 1


def test_put_none_and_delete_forget_the_item(store: OblivionStore, engine: Oblivion) -> None:
    """put(..., None) and delete() remove the item; deleting a missing key is a no-op."""
    store.put(NS, "a", {"text": "alpha"})
    store.put(NS, "b", {"text": "beta"})
    store.put(NS, "a", None)
    store.delete(NS, "b")
    store.delete(NS, "never-there")
    assert store.get(NS, "a") is None and store.get(NS, "b") is None
    assert engine.count(namespace=encode_namespace(NS)) == 0


def test_get_of_unknown_namespace_or_key_is_none(store: OblivionStore) -> None:
    """get() returns None for a key or a namespace that holds nothing."""
    store.put(NS, "a", {"text": "alpha"})
    assert store.get(NS, "zzz") is None
    assert store.get(("nobody",), "a") is None


@pytest.mark.parametrize(
    ("first", "second"),
    [(("a", "b"), ("a,b",)), (("a", "b"), ("a", "b", "c")), (('a"b',), ("a", "b"))],
)
def test_namespaces_that_look_alike_stay_apart(
    store: OblivionStore, first: tuple[str, ...], second: tuple[str, ...]
) -> None:
    """Namespace tuples are encoded without ambiguity: look-alikes never share items."""
    store.put(first, "k", {"text": "one"})
    store.put(second, "k", {"text": "two"})
    assert store.get(first, "k").value == {"text": "one"}  # type: ignore[union-attr]
    assert store.get(second, "k").value == {"text": "two"}  # type: ignore[union-attr]
    assert sorted(store.list_namespaces()) == sorted([first, second])


def test_a_batch_runs_ops_in_order(store: OblivionStore) -> None:
    """batch() applies its ops in order and returns one result per op."""
    results = store.batch(
        [
            PutOp(NS, "a", {"text": "alpha"}),
            GetOp(NS, "a"),
            PutOp(NS, "a", {"text": "alpha 2"}),
            GetOp(NS, "a"),
            SearchOp(NS, query="alpha"),
            ListNamespacesOp(),
            PutOp(NS, "a", None),
            GetOp(NS, "a"),
        ]
    )
    assert results[0] is None and results[2] is None and results[6] is None
    assert results[1].value == {"text": "alpha"}  # type: ignore[union-attr]
    assert results[3].value == {"text": "alpha 2"}  # type: ignore[union-attr]
    assert [i.key for i in results[4]] == ["a"]  # type: ignore[union-attr]
    assert results[5] == [NS]
    assert results[7] is None


# ==================================================================== index config
def test_index_fields_choose_the_text_that_is_embedded(engine: Oblivion) -> None:
    """The memory text is the indexed field(s), or the whole value as JSON by default."""
    OblivionStore(engine, index={"fields": ["text", "tags[*]"]}).put(
        NS, "k1", {"text": "Green tea", "tags": ["drink", "morning"], "n": 1}
    )
    OblivionStore(engine).put(NS, "k2", {"text": "Black coffee"})
    space = encode_namespace(NS)
    assert engine.get("k1", namespace=space).text == "Green tea\ndrink\nmorning"
    assert engine.get("k2", namespace=space).text == '{"text": "Black coffee"}'


def test_unindexed_items_are_kept_out_of_query_search(store: OblivionStore) -> None:
    """index=False items (or items lacking the fields) are listed and got, never searched."""
    store.put(NS, "secret", {"text": "green tea secret"}, index=False)
    store.put(NS, "nofield", {"note": "green tea"})
    store.put(NS, "tea", {"text": "green tea"})
    assert [i.key for i in store.search(NS, query="green tea")] == ["tea"]
    assert {i.key for i in store.search(NS)} == {"secret", "nofield", "tea"}
    assert store.get(NS, "secret") is not None


def test_unindexed_items_take_no_part_in_supersession(
    store: OblivionStore, engine: Oblivion
) -> None:
    """An index=False item never makes an indexed item stale (so it cannot empty a
    query search), and switching a key between indexed and unindexed re-judges it."""
    store.put(NS, "pref", {"text": "My favourite drink is tea."})
    store.put(NS, "draft", {"text": "My favourite drink is coffee."}, index=False)
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["pref"]
    assert engine.get("pref", namespace=encode_namespace(NS)).superseded_by is None
    # indexed now: a newer statement of the same fact, the older one is hidden
    store.put(NS, "draft", {"text": "My favourite drink is coffee."})
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["draft"]
    # unindexed again: it leaves the supersession, the older item is back
    store.put(NS, "draft", {"text": "My favourite drink is coffee."}, index=False)
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["pref"]
    assert {i.key for i in store.search(NS)} == {"pref", "draft"}
    assert store.get(NS, "draft").value == {"text": "My favourite drink is coffee."}  # type: ignore[union-attr]
    # also when the indexed text happens to equal the key (the unindexed stand-in)
    same = "My favourite drink is milk."
    store.put(NS, same, {"text": same})
    assert [i.key for i in store.search(NS, query="favourite drink")] == [same]
    store.put(NS, same, {"text": same}, index=False)
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["pref"]


def test_unindexed_values_of_any_size_are_stored(engine: Oblivion) -> None:
    """An unindexed item's memory text is a short stand-in (its key), not its JSON, so a
    value longer than max_text_chars is stored, got and listed with its value intact."""
    store = OblivionStore(engine, index={"fields": ["title"]})
    value = {"title": "report", "body": "x" * (engine.policy.max_text_chars + 10)}
    store.put(NS, "big", value, index=False)
    store.put(NS, "big-indexed", value)
    store.put(NS, "no-title", {"body": "y" * (engine.policy.max_text_chars + 10)})
    space = encode_namespace(NS)
    assert engine.get("big", namespace=space).text == "big"
    assert engine.get("no-title", namespace=space).text == "no-title"
    assert engine.get("big-indexed", namespace=space).text == "report"
    assert store.get(NS, "big").value == value  # type: ignore[union-attr]
    listed = {i.key: i.value for i in store.search(NS)}
    assert listed["big"] == value and listed["big-indexed"] == value
    assert [i.key for i in store.search(NS, query="report")] == ["big-indexed"]
    # switching between indexed and unindexed works both ways
    store.put(NS, "big", {"title": "summary"})
    assert engine.get("big", namespace=space).text == "summary"
    store.put(NS, "big", value, index=False)
    assert engine.get("big", namespace=space).text == "big"
    assert store.get(NS, "big").value == value  # type: ignore[union-attr]


def test_store_rejects_an_embed_function(engine: Oblivion) -> None:
    """index['embed'] is refused with a message saying where the embedder goes."""
    with pytest.raises(ValueError, match="embedder"):
        OblivionStore(engine, index={"dims": 3, "embed": lambda texts: [[0.0] * 3]})


def test_index_fields_given_as_a_string_are_refused(engine: Oblivion) -> None:
    """index={"fields": "text"} is refused like put(..., index="text"), not split into
    the one-letter fields t, e, x, t (which would leave every item unsearchable)."""
    with pytest.raises(ValueError, match=r"index\['fields'\] must be a list of field paths"):
        OblivionStore(engine, index={"fields": "text"})  # type: ignore[typeddict-item]
    assert OblivionStore(engine, index={"fields": ("text",)}).index_fields == ["text"]


@pytest.fixture
def tokyo_time() -> Iterator[None]:
    """The process's local time zone set to Asia/Tokyo (UTC+9, no DST) for the test."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    yield
    if saved is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = saved
    time.tzset()


@pytest.mark.usefixtures("tokyo_time")
def test_a_naive_clock_is_read_as_local_time(engine: Oblivion) -> None:
    """now= returning naive datetimes (datetime.now) gives local wall times: they are
    converted to UTC as such, not labelled UTC (which would be 9 hours off in Tokyo)."""
    naive = datetime(2025, 3, 1, 12, 0)
    store = OblivionStore(engine, index={"fields": ["text"]}, now=lambda: naive)
    store.put(NS, "tea", {"text": "I prefer green tea"})
    item = store.get(NS, "tea")
    assert item is not None
    assert item.created_at == naive.astimezone(timezone.utc)
    assert item.created_at == datetime(2025, 3, 1, 3, 0, tzinfo=timezone.utc)
    assert item.updated_at == item.created_at


@pytest.mark.usefixtures("tokyo_time")
@pytest.mark.parametrize(
    ("stamps", "said"),
    [
        (lambda: datetime.max, "no UTC equivalent"),
        (lambda: datetime.min, "no UTC equivalent"),
        (lambda: 1_700_000_000.0, "must return a datetime"),
        (lambda: "2025-03-01", "must return a datetime"),
    ],
)
def test_a_clock_returning_what_has_no_utc_time_is_named(
    engine: Oblivion, stamps: Any, said: str
) -> None:
    """now= returning a naive datetime at the ends of the range (no UTC equivalent in
    Tokyo) or no datetime at all raised OverflowError, ValueError or AttributeError from
    inside the store; it is an InvalidInputError naming now=, and nothing is stored."""
    store = OblivionStore(engine, index={"fields": ["text"]}, now=stamps)
    with pytest.raises(InvalidInputError, match=said) as err:
        store.put(NS, "tea", {"text": "I prefer green tea"})
    assert "now=" in str(err.value)
    assert store.get(NS, "tea") is None
    with pytest.raises(InvalidInputError, match="now must be a callable"):
        OblivionStore(engine, now=datetime.now())  # type: ignore[arg-type]


def test_an_item_filed_as_a_summary_is_still_the_stores(clock: ManualClock) -> None:
    """An importance scorer may file an item under "summary" (PromptedImportance offers
    the category): its namespace, holding only that item, was taken for one of
    compression summaries alone, so listings, searches and list_namespaces left it out."""
    from oblivion_core.importance import HeuristicImportance

    class Scorer(HeuristicImportance):
        def categorize(self, text: str) -> str:
            return "summary" if "summary" in text.lower() else super().categorize(text)

    engine = memory(clock=clock, importance_scorer=Scorer())
    store = OblivionStore(engine, index={"fields": ["text"]})
    store.put(NS, "weekly", {"text": "Summary of the weekly meeting: ship on Friday"})
    assert engine.get("weekly", namespace=encode_namespace(NS)).category == "summary"
    assert store.list_namespaces() == [NS]
    assert [i.key for i in store.search(NS)] == ["weekly"]
    assert [i.key for i in store.search(NS, query="weekly meeting")] == ["weekly"]
    engine.close()


def test_deletes_in_a_row_are_one_engine_call_with_the_outcome_of_each(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each delete of a batch was its own engine write (1,000 took 13 s with Chroma on
    disk): consecutive deletes in one namespace are one forget_many, and ops around them
    see what one-by-one deletes would leave (a put after the delete of its key stores it
    anew, a delete after a put of a new key deletes it)."""
    for k in range(6):
        store.put(NS, f"k{k}", {"text": f"note {k} about the garden"})
    store.put(("other",), "k0", {"text": "another user's note"})
    calls: list[tuple[str, list[str]]] = []
    forget_many = engine.forget_many

    def counted(ids: Any, **kwargs: Any) -> list[str]:
        calls.append((kwargs["namespace"], list(ids)))
        return forget_many(ids, **kwargs)

    monkeypatch.setattr(engine, "forget_many", counted)
    store.batch(
        [
            PutOp(NS, "k0", None),
            PutOp(NS, "k1", None),
            PutOp(NS, "missing", None),
            PutOp(("other",), "k0", None),
            PutOp(NS, "k2", None),
            PutOp(NS, "k2", {"text": "note 2 written again"}),
            PutOp(NS, "new", {"text": "a new note"}),
            PutOp(NS, "new", None),
            GetOp(NS, "k3"),
        ]
    )
    assert [len(ids) for _, ids in calls] == [3, 1, 1, 1]
    assert sorted(i.key for i in store.search(NS)) == ["k2", "k3", "k4", "k5"]
    assert store.get(NS, "k2").value == {"text": "note 2 written again"}  # type: ignore[union-attr]
    assert store.search(("other",)) == []


# ==================================================================== search
def _fill(store: OblivionStore) -> None:
    store.put(NS, "tea", {"text": "I prefer green tea in the morning", "kind": "drink", "n": 3})
    store.put(NS, "coffee", {"text": "I drink black coffee at work", "kind": "drink", "n": 5})
    store.put(NS, "car", {"text": "My car is an electric Renault", "kind": "car", "n": 1})
    store.put(NS, "trip", {"text": "Road trip to Porto next month", "kind": "plan", "n": 8})


def test_query_search_is_ranked_by_the_engine_score(store: OblivionStore, engine: Oblivion) -> None:
    """search(query=...) returns the most relevant first, scored with the recall score."""
    _fill(store)
    query = "green tea in the morning"
    expected = engine.recall(query, namespace=encode_namespace(NS), feedback=False, k=4)
    hits = store.search(NS, query=query)
    assert hits[0].key == "tea"
    assert [(h.key, h.score) for h in hits] == [(i.id, pytest.approx(i.score)) for i in expected]


def test_query_search_prefers_the_fresher_of_equal_memories(
    store: OblivionStore, clock: ManualClock
) -> None:
    """Equally relevant items are ordered by activation: the decayed one comes last."""
    store.put(NS, "old", {"text": "favourite drink", "drink": "tea"})
    clock.advance(30 * DAY)
    store.put(NS, "new", {"text": "favourite drink", "drink": "coffee"})
    hits = store.search(NS, query="favourite drink")
    assert [h.key for h in hits] == ["new", "old"]
    assert hits[0].score > hits[1].score  # type: ignore[operator]


def _recalls(engine: Oblivion, key: str) -> int:
    history = engine.history(key, namespace=encode_namespace(NS))
    return sum(e.kind == "recall" for e in history)


def test_query_search_boosts_only_what_it_returns(
    store: OblivionStore, engine: Oblivion, clock: ManualClock
) -> None:
    """Returned items get the recall boost; items not returned get no recall event."""
    _fill(store)
    clock.advance(5 * DAY)
    before = _activation(engine, NS, "tea")
    hits = store.search(NS, query="green tea in the morning", limit=1)
    assert [h.key for h in hits] == ["tea"]
    assert _activation(engine, NS, "tea") > before
    assert {k: _recalls(engine, k) for k in ("tea", "coffee", "car", "trip")} == {
        "tea": 1,
        "coffee": 0,
        "car": 0,
        "trip": 0,
    }


def test_query_search_with_offset_does_not_boost_skipped_items(
    store: OblivionStore, engine: Oblivion
) -> None:
    """A page that is not the head of the ranking boosts nothing it skipped."""
    _fill(store)
    top = store.search(NS, query="tea coffee drink", limit=1)[0].key
    page = store.search(NS, query="tea coffee drink", limit=2, offset=1)
    assert top not in [h.key for h in page]
    assert _recalls(engine, top) == 1


def test_filtered_search_does_not_boost_filtered_out_items(
    store: OblivionStore, engine: Oblivion
) -> None:
    """Items a filter removed are never boosted."""
    _fill(store)
    hits = store.search(NS, query="green tea", filter={"kind": "car"})
    assert [h.key for h in hits] == ["car"]
    assert _recalls(engine, "tea") == 0


def test_query_search_boosts_every_item_it_returns_among_neighbours(
    store: OblivionStore, engine: Oblivion
) -> None:
    """Items written close together are each other's neighbour context in the engine's
    recall, which interleaves them with the hits; a limit=2 search still boosts both
    items it returns, and only those."""
    texts = {
        "k0": "the cat sleeps on the sofa",
        "k1": "quarterly revenue grew by ten percent",
        "k2": "the dog barks at the mailman",
        "k3": "cats like to chase mice",
        "k4": "stock prices fell sharply",
        "k5": "my cat is called Tom",
        "k6": "weather is rainy today",
    }
    for key, text in texts.items():  # the clock stands still: all within the window
        store.put(NS, key, {"text": text})
    ranking = engine.recall("cat", namespace=encode_namespace(NS), k=5, feedback=False)
    assert any("context_for" in item.why for item in ranking)  # neighbours interleaved
    before = {key: _activation(engine, NS, key) for key in texts}
    hits = store.search(NS, query="cat", limit=2)
    returned = [h.key for h in hits]
    assert len(returned) == 2
    for key in returned:
        assert _activation(engine, NS, key) > before[key]
    assert {k: _recalls(engine, k) for k in texts} == {k: int(k in returned) for k in texts}


def test_a_filtered_or_offset_page_is_boosted_as_returned(
    store: OblivionStore, engine: Oblivion
) -> None:
    """What a filter or an offset chose is what the caller saw: it gets the boost."""
    _fill(store)
    (car,) = store.search(NS, query="green tea", filter={"kind": "car"})
    assert car.key == "car" and _recalls(engine, "car") == 1
    top = store.search(NS, query="tea coffee drink", limit=1)[0].key
    page = [h.key for h in store.search(NS, query="tea coffee drink", limit=1, offset=1)]
    assert top not in page and all(_recalls(engine, k) == 1 for k in page)


def test_feedback_false_searches_read_only(engine: Oblivion) -> None:
    """OblivionStore(feedback=False) never boosts."""
    store = OblivionStore(engine, index={"fields": ["text"]}, feedback=False)
    _fill(store)
    store.search(NS, query="green tea")
    assert all(_recalls(engine, k) == 0 for k in ("tea", "coffee", "car", "trip"))


def test_query_search_hides_items_a_newer_item_made_stale(store: OblivionStore) -> None:
    """A newer item of the same namespace that restates a fact hides the older one from
    query search; get() and a search without a query still return it."""
    store.put(NS, "ana", {"text": "My favourite drink is tea."})
    store.put(NS, "ben", {"text": "My favourite drink is coffee."})
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["ben"]
    assert store.get(NS, "ana") is not None
    assert {i.key for i in store.search(NS)} == {"ana", "ben"}


def test_hide_superseded_false_keeps_stale_items_below_their_successor() -> None:
    """With a policy of hide_superseded=False the stale item ranks below its successor."""
    engine = memory(policy=Policy(hide_superseded=False))
    try:
        store = OblivionStore(engine, index={"fields": ["text"]})
        store.put(NS, "ana", {"text": "My favourite drink is tea."})
        store.put(NS, "ben", {"text": "My favourite drink is coffee."})
        assert [i.key for i in store.search(NS, query="favourite drink")] == ["ben", "ana"]
    finally:
        names = engine.namespaces()
        engine.close()
        for name in names:
            engine.store.drop(name)


def test_overwriting_a_stale_key_makes_it_a_new_searchable_statement(
    store: OblivionStore,
) -> None:
    """A key hidden as stale and then put with an unrelated value is found by its new text."""
    store.put(NS, "a", {"text": "My favourite drink is tea."})
    store.put(NS, "b", {"text": "My favourite drink is coffee."})
    store.put(NS, "a", {"text": "I go hiking in the Alps every summer."})
    assert store.search(NS, query="hiking in the Alps")[0].key == "a"
    assert {i.key for i in store.search(NS, query="favourite drink")} == {"a", "b"}


def test_overwriting_the_newer_key_brings_back_the_item_it_hid(store: OblivionStore) -> None:
    """When the item that made another stale gets an unrelated value, the other is back."""
    store.put(NS, "a", {"text": "My favourite drink is tea."})
    store.put(NS, "b", {"text": "My favourite drink is coffee."})
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["b"]
    store.put(NS, "b", {"text": "I go hiking in the Alps every summer."})
    assert store.search(NS, query="favourite drink")[0].key == "a"


def test_re_putting_a_stale_item_with_the_same_text_makes_it_the_current_one(
    store: OblivionStore, engine: Oblivion, clock: ManualClock
) -> None:
    """The same text put again under a key a newer item made stale is the newest
    statement (as a remember() of it is): query search returns it, not the older write;
    the same text put again over a current item changes nothing but the value."""
    space = encode_namespace(NS)
    store.put(NS, "ana", {"text": "My favourite drink is tea."})
    store.put(NS, "ben", {"text": "My favourite drink is coffee."})
    assert engine.get("ana", namespace=space).superseded_by == "ben"
    store.put(NS, "ana", {"text": "My favourite drink is tea.", "confirmed": True})
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["ana"]
    assert engine.get("ana", namespace=space).superseded_by is None
    assert store.get(NS, "ana").value == {"text": "My favourite drink is tea.", "confirmed": True}  # type: ignore[union-attr]
    clock.advance(DAY)
    before = _activation(engine, NS, "ana")
    store.put(NS, "ana", {"text": "My favourite drink is tea.", "confirmed": False})
    assert engine.history("ana", namespace=space)[-1].detail["text_changed"] is False
    assert _activation(engine, NS, "ana") == pytest.approx(before)
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["ana"]


def test_search_pages_tile_the_full_result(store: OblivionStore) -> None:
    """limit/offset pages, concatenated, equal one big search (with and without query)."""
    _fill(store)
    for query in ("drink", None):
        full = [h.key for h in store.search(NS, query=query, limit=10)]
        pages = [
            h.key
            for off in range(0, 4, 2)
            for h in store.search(NS, query=query, limit=2, offset=off)
        ]
        assert pages == full and len(full) == 4
    assert store.search(NS, query="drink", limit=0) == []


def test_listing_without_query_orders_by_activation(
    store: OblivionStore, clock: ManualClock
) -> None:
    """search() without a query lists items highest activation first, score None."""
    store.put(NS, "small", {"text": "ok cool"})
    clock.advance(2 * DAY)
    store.put(NS, "fresh", {"text": "The meeting moved to Tuesday"})
    listed = store.search(NS)
    assert [h.key for h in listed] == ["fresh", "small"]
    assert all(h.score is None for h in listed)


@pytest.mark.parametrize(
    ("filter", "keys"),
    [
        ({"kind": "drink"}, {"tea", "coffee"}),
        ({"kind": {"$eq": "car"}}, {"car"}),
        ({"kind": {"$ne": "drink"}}, {"car", "trip"}),
        ({"n": {"$gt": 3}}, {"coffee", "trip"}),
        ({"n": {"$gte": 3}}, {"tea", "coffee", "trip"}),
        ({"n": {"$lt": 3}}, {"car"}),
        ({"n": {"$lte": 3, "$gt": 1}}, {"tea"}),
        ({"kind": "drink", "n": {"$gt": 4}}, {"coffee"}),
        ({"kind": {"$gt": 5}}, set()),
        ({"missing": "x"}, set()),
    ],
)
def test_filters_behave_like_langgraph(
    store: OblivionStore, filter: dict[str, Any], keys: set[str]
) -> None:
    """Exact matches and $eq/$ne/$gt/$gte/$lt/$lte filter with and without a query."""
    _fill(store)
    assert {h.key for h in store.search(NS, filter=filter)} == keys
    assert {h.key for h in store.search(NS, query="drink car trip", filter=filter)} == keys


_SCALARS = st.one_of(
    st.integers(-5, 15),
    st.floats(-5, 15, allow_nan=False),
    st.integers(-5, 15).map(str),
    st.floats(-5, 15, allow_nan=False).map(str),
    st.sampled_from(["2025-01-02", "abc", True, False]),
)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(_SCALARS, min_size=1, max_size=6),
    op=st.sampled_from(["$gt", "$gte", "$lt", "$lte"]),
    operand=_SCALARS,
)
def test_ordering_filters_agree_with_the_in_memory_store(
    values: list[Any], op: str, operand: Any
) -> None:
    """Wherever InMemoryStore answers (it raises when float() cannot read a side), an
    ordering filter passes the same items: numbers and numeric strings compare as
    numbers ("10" > 9.5), as its float() does."""
    reference = InMemoryStore()
    ours = OblivionStore(memory())
    for i, v in enumerate(values):
        for s in (reference, ours):
            s.put(NS, f"k{i}", {"text": f"item {i}", "price": v})
    flt = {"price": {op: operand}}
    try:
        expected = {h.key for h in reference.search(NS, filter=flt)}
    except ValueError:  # InMemoryStore's float("abc"): ours does not raise
        assert isinstance(ours.search(NS, filter=flt), list)
        return
    assert {h.key for h in ours.search(NS, filter=flt)} == expected
    ours.oblivion.close()


def test_filters_with_keys_that_are_not_strings_behave_like_the_in_memory_store(
    store: OblivionStore,
) -> None:
    """A filter key that is not a string (next to string keys, or nested) does not
    crash a search: like InMemoryStore, the item's value has no such field, so
    ``{1: "x"}`` matches nothing and ``{1: None}`` everything; ``1`` is not ``"1"``."""
    reference = InMemoryStore()
    for s in (reference, store):
        s.put(NS, "tea", {"text": "Sam prefers green tea", "kind": "pref"})
        s.put(NS, "one", {"text": "Sam likes the number one", "kind": "pref", "1": "x"})
        s.put(NS, "car", {"text": "Sam drives an electric car", "kind": "fact"})
    filters: list[dict[Any, Any]] = [
        {"1": "x"},  # first: its mask must not answer for {1: "x"}
        {"kind": "pref", 1: "x"},
        {1: "x"},
        {1: None},
        {"kind": {"$eq": "pref"}, 1: {"$ne": "x"}},
        {(1, 2): "x", "kind": "pref"},
    ]
    for flt in filters:
        expected = {h.key for h in reference.search(("memories",), filter=flt)}
        assert {h.key for h in store.search(("memories",), filter=flt)} == expected, flt
        found = store.search(("memories",), query="Sam tea car number", filter=flt)
        assert {h.key for h in found} == expected, flt
    # nested (InMemoryStore raises AttributeError here): no value has that field
    assert store.search(NS, filter={"kind": {"a": 1, 2: 3}}) == []
    assert store.search(NS, query="tea", filter={"kind": {"a": 1, 2: 3}}) == []


def test_iso_dates_in_filters_compare_as_text(store: OblivionStore) -> None:
    """Strings that are not numbers compare as strings (ISO dates order right)."""
    for day in ("2025-01-05", "2025-02-01", "2024-12-31"):
        store.put(NS, day, {"text": f"met on {day}", "on": day})
    found = store.search(NS, filter={"on": {"$gte": "2025-01-01"}})
    assert {h.key for h in found} == {"2025-01-05", "2025-02-01"}


def test_nested_filters_match_field_by_field(store: OblivionStore) -> None:
    """A nested dict filter matches nested values; lists match element by element."""
    store.put(NS, "a", {"text": "a", "meta": {"lang": "en", "v": 2}, "tags": ["x", "y"]})
    store.put(NS, "b", {"text": "b", "meta": {"lang": "pt", "v": 2}, "tags": ["x"]})
    assert [h.key for h in store.search(NS, filter={"meta": {"lang": "en"}})] == ["a"]
    assert [h.key for h in store.search(NS, filter={"tags": ["x"]})] == ["b"]


def test_filtered_query_search_finds_matches_beyond_the_first_k(store: OblivionStore) -> None:
    """A filter that only low-ranked items pass still finds them."""
    for i in range(30):
        store.put(NS, f"tea{i}", {"text": f"green tea note {i}", "kind": "tea"})
    store.put(NS, "car", {"text": "electric car", "kind": "car"})
    hits = store.search(NS, query="green tea", filter={"kind": "car"}, limit=5)
    assert [h.key for h in hits] == ["car"]


def test_a_filtered_query_search_is_one_filtered_recall(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The filter goes into the engine's recall, which ranks only the items that pass:
    one recall, however few pass, instead of asking for more until enough of its
    results do (four recalls here, the last of every item, before)."""
    for i in range(200):
        store.put(NS, f"tea{i}", {"text": f"green tea note {i}", "kind": "tea"})
    store.put(NS, "car", {"text": "electric car with a green stripe", "kind": "car"})
    store.put(NS, "van", {"text": "green delivery van", "kind": "car", "n": 3})
    recall = engine.recall
    calls: list[dict[str, Any]] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return recall(*args, **kwargs)

    monkeypatch.setattr(engine, "recall", counted)
    hits = store.search(NS, query="green tea", filter={"kind": "car"}, limit=5)
    assert {h.key for h in hits} == {"car", "van"}
    assert len(calls) == 1 and calls[0]["k"] < 20
    assert [h.key for h in store.search(NS, query="green", filter={"n": {"$gte": 3}})] == ["van"]
    assert [h.key for h in store.search(NS, query="green", filter={"kind": "boat"})] == []


def _records_read(engine: Oblivion, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many records each ``engine.records`` call returns, from now on."""
    records = engine.records
    returned: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        out = records(*args, **kwargs)
        returned.append(len(out))
        return out

    monkeypatch.setattr(engine, "records", counted)
    return returned


def test_a_filtered_listing_reads_only_the_items_that_pass(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search without a query passes its filter to the engine's ``records``, which
    returns only the items that pass (it read every item of the namespace, before, and
    the store tested each)."""
    for i in range(50):
        store.put(NS, f"tea{i}", {"text": f"green tea note {i}", "kind": "tea"})
    store.put(NS, "car", {"text": "electric car", "kind": "car"})
    store.put(NS, "van", {"text": "delivery van", "kind": "car", "n": 3})
    returned = _records_read(engine, monkeypatch)
    assert {h.key for h in store.search(NS, filter={"kind": "car"}, limit=10)} == {"car", "van"}
    assert returned == [2]
    assert [h.key for h in store.search(NS, filter={"n": {"$gte": 3}})] == ["van"]
    assert store.search(NS, filter={"kind": "boat"}) == []


def test_a_listing_reads_only_its_page(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search without a query asks the engine for the page it returns, most active
    first: 3 records read for ``limit=3`` of 40 items, 5 for an offset of 2."""
    for i in range(40):
        store.put(NS, f"note{i}", {"text": f"green tea note {i}"})
    returned = _records_read(engine, monkeypatch)
    first = store.search(NS, limit=3)
    assert returned == [3]
    assert store.search(NS, limit=3, offset=2)[0].key == first[2].key
    assert returned == [3, 5]


def test_equally_active_items_list_the_latest_written_first(store: OblivionStore) -> None:
    """Items written at one moment, alike, are equally active: the listing shows the
    latest written first, and an update leaves an item where it was."""
    for key in ("a", "b", "c"):
        store.put(NS, key, {"text": "green tea note"})
    assert [h.key for h in store.search(NS)] == ["c", "b", "a"]
    store.put(NS, "a", {"text": "green tea note", "seen": True})
    assert [h.key for h in store.search(NS)] == ["c", "b", "a"]


def test_prefix_search_spans_namespaces(store: OblivionStore, engine: Oblivion) -> None:
    """A prefix searches every namespace under it; other engine namespaces are ignored."""
    store.put(("memories", "sam"), "a", {"text": "green tea"})
    store.put(("memories", "ana"), "b", {"text": "green tea with mint"})
    store.put(("docs",), "c", {"text": "green tea recipe"})
    engine.remember("green tea outside the store", namespace="plain")
    assert {(h.namespace, h.key) for h in store.search(("memories",), query="green tea")} == {
        (("memories", "sam"), "a"),
        (("memories", "ana"), "b"),
    }
    assert len(store.search((), query="green tea")) == 3
    assert len(store.search(())) == 3


# ==================================================================== list_namespaces
@pytest.fixture
def tree(store: OblivionStore) -> OblivionStore:
    """Items in the namespaces of LangGraph's list_namespaces example."""
    for ns in [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]:
        store.put(ns, "k", {"text": "/".join(ns)})
    return store


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"prefix": ("a", "b"), "max_depth": 3},
            [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")],
        ),
        ({"suffix": ("f",)}, [("a", "b", "f"), ("a", "c", "f")]),
        ({"prefix": ("a", "*", "f")}, [("a", "b", "f"), ("a", "c", "f")]),
        ({"prefix": ("a",), "suffix": ("d", "*")}, [("a", "b", "d", "e"), ("a", "b", "d", "i")]),
        ({"max_depth": 1}, [("a",)]),
        ({"limit": 2, "offset": 1}, [("a", "b", "d", "e"), ("a", "b", "d", "i")]),
        ({"prefix": ("zzz",)}, []),
    ],
)
def test_list_namespaces_follows_langgraph(
    tree: OblivionStore, kwargs: dict[str, Any], expected: list[tuple[str, ...]]
) -> None:
    """prefix, suffix, wildcards, max_depth, limit and offset behave as documented."""
    assert tree.list_namespaces(**kwargs) == expected


def test_emptied_namespaces_are_not_listed(tree: OblivionStore) -> None:
    """A namespace whose items were all deleted disappears from list_namespaces()."""
    tree.delete(("a", "c", "f"), "k")
    assert ("a", "c", "f") not in tree.list_namespaces()


# ==================================================================== compression
def _compressed(clock: ManualClock) -> tuple[Oblivion, OblivionStore, str]:
    """A store over a compressing engine (the support-desk template) whose six decayed
    items maintain() folded into one summary; returns the engine, the store and the
    summary's id."""
    engine = memory(clock=clock, policy="support-desk")
    store = OblivionStore(engine, index={"fields": ["text"]})
    for i, text in enumerate(CHAT_TEXTS):
        store.put(NS, f"chat-{i}", {"text": text})
    clock.advance(60 * DAY)
    engine.maintain(namespace=encode_namespace(NS))
    space = encode_namespace(NS)
    (summary,) = (r for r in engine.records(namespace=space) if r.category == "summary")
    assert {r.id for r in engine.records(namespace=space, tier="cold")} == {
        f"chat-{i}" for i in range(6)
    }
    return engine, store, summary.id


# small talk (nothing but chit-chat, no number): what compression folds first
CHAT_TEXTS = [
    f"{opener}, lovely weather today"
    for opener in ("lol ok", "haha ok", "lol nice", "haha cool", "lol yes", "haha wow")
]
CHATS = {f"chat-{i}" for i in range(6)}


def test_compressed_items_are_still_the_items_and_the_summary_is_not_one(
    clock: ManualClock,
) -> None:
    """Compression is invisible to the store's users: a query search finds the cold
    items themselves (with their values) and never the engine's summary; listing,
    get() and list_namespaces() show only what was put."""
    engine, store, summary = _compressed(clock)
    hits = store.search(NS, query="lovely weather today", limit=10)
    assert {h.key for h in hits} == CHATS
    assert all(h.value["text"] in CHAT_TEXTS for h in hits)
    assert {h.key for h in store.search(NS, limit=20)} == CHATS
    item = store.get(NS, "chat-0")
    assert item is not None and item.value == {"text": CHAT_TEXTS[0]}
    assert store.get(NS, summary) is None
    assert store.list_namespaces() == [NS]
    # a memory written straight through the engine (not a summary) is still shown
    note = engine.remember("a note about the weather", namespace=encode_namespace(NS)).id
    assert note in {h.key for h in store.search(NS, query="weather note", limit=10)}
    assert note in {h.key for h in store.search(NS, limit=20)}


def test_a_relevant_active_summary_does_not_hide_the_cold_items(clock: ManualClock) -> None:
    """A summary recalled often enough to be active closes the engine's archive gate
    (the best active cosine is high); a query search still reaches the cold items
    it stands for."""
    policy = Policy.template("support-desk").replace(lexical_weight=0.0)  # cosine only
    engine = memory(clock=clock, policy=policy)
    store = OblivionStore(engine, index={"fields": ["text"]})
    for i, text in enumerate(CHAT_TEXTS):
        store.put(NS, f"chat-{i}", {"text": text})
    clock.advance(60 * DAY)
    space = encode_namespace(NS)
    engine.maintain(namespace=space)
    for i in range(40):
        clock.advance(1_000)
        store.put(NS, f"order-{i}", {"text": f"customer order number {i} shipped to city {i}"})
    query = "lovely weather today"
    for _ in range(15):  # someone else's recalls lift the summary into the active tier
        engine.recall(query, namespace=space, k=1)
    (summary,) = (r for r in engine.records(namespace=space) if r.category == "summary")
    assert summary.tier.label == "active"
    gate = engine.recall(query, namespace=space, include_cold=True, k=5, feedback=False)
    assert not gate.searched_archive and not set(gate.ids) & CHATS
    assert {h.key for h in store.search(NS, query=query, limit=3)} <= CHATS


def test_a_namespace_left_with_only_a_summary_holds_no_item(clock: ManualClock) -> None:
    """Once every compressed item is deleted, the namespace is empty to searches and is
    not listed (the summary went with the first of its originals deleted)."""
    engine, store, _ = _compressed(clock)
    for key in CHATS:
        store.delete(NS, key)
    assert engine.count(namespace=encode_namespace(NS)) == 0
    assert store.search(NS) == []
    assert store.search(NS, query="lovely weather today") == []
    assert store.list_namespaces() == []


# ==================================================================== bad input
def _nested(levels: int) -> dict[str, Any]:
    """A value nested ``levels`` dicts deep."""
    value: dict[str, Any] = {"text": "deep"}
    for _ in range(levels):
        value = {"x": value}
    return value


@pytest.mark.parametrize(
    ("op", "error", "match"),
    [
        (PutOp(("memories", 1), "k", {"text": "x"}), InvalidNamespaceError, "int label"),  # type: ignore[arg-type]
        (PutOp(("memories", None), "k", {"text": "x"}), InvalidNamespaceError, "label"),  # type: ignore[arg-type]
        (PutOp("memories", "k", {"text": "x"}), InvalidNamespaceError, "tuple of strings"),  # type: ignore[arg-type]
        (PutOp((), "k", {"text": "x"}), InvalidNamespaceError, "empty"),
        (PutOp(("langgraph",), "k", {"text": "x"}), InvalidNamespaceError, "langgraph"),
        (PutOp(("a.b",), "k", {"text": "x"}), InvalidNamespaceError, "period"),
        (PutOp(("a", ""), "k", {"text": "x"}), InvalidNamespaceError, "empty"),
        (PutOp(("x" * 300,), "k", {"text": "x"}), InvalidNamespaceError, "too long"),
        (PutOp(NS, "k", ["not", "a", "dict"]), ValueError, "must be dicts"),  # type: ignore[arg-type]
        (PutOp(NS, "k", "text"), ValueError, "must be dicts"),  # type: ignore[arg-type]
        (PutOp(NS, "k", {"x": {1, 2}}), ValueError, "JSON"),
        # InMemoryStore keeps any object; a JSON store cannot: the error says what to do
        (PutOp(NS, "k", {"at": datetime(2026, 1, 1)}), ValueError, r"\.isoformat\(\)"),
        (PutOp(NS, "k", {"x": math.nan}), ValueError, "NaN"),
        (PutOp(NS, "k", {1: "x"}), ValueError, "keys must be strings"),  # type: ignore[dict-item]
        # deeper down too: the engine refuses them when it stores, and that must happen
        # before any op of the batch runs
        (PutOp(NS, "k", {"x": {1: "y"}}), ValueError, "keys must be strings"),
        (PutOp(NS, "k", {"rows": [{None: 1}]}), ValueError, "keys must be strings"),
        (PutOp(NS, "k", _nested(99)), ValueError, "nested more than 100"),
        (PutOp(NS, 7, {"text": "x"}), ValueError, "keys must be strings"),  # type: ignore[arg-type]
        (PutOp(NS, "bad\ud800", {"text": "x"}), ValueError, "surrogate"),
        (PutOp(NS, "k", {"text": "x\ud800"}), ValueError, "surrogate"),
        (PutOp(("a\ud800",), "k", {"text": "x"}), InvalidNamespaceError, "surrogate"),
        (PutOp(NS, "k", {"text": "a\x00b"}), ValueError, "NUL"),
        (PutOp(NS, "k", {"text": "x" * 40_000}), ValueError, "max_text_chars"),
        (PutOp(NS, "k", {"text": "x"}, index="text"), ValueError, "index"),  # type: ignore[arg-type]
        (GetOp(("memories", 2), "k"), InvalidNamespaceError, "int label"),  # type: ignore[arg-type]
        (SearchOp(("memories", 3.5)), InvalidNamespaceError, "float label"),  # type: ignore[arg-type]
        (SearchOp(NS, filter={"n": {"$regex": "x"}}), ValueError, "operator"),
        (SearchOp(NS, filter={"n": {"$gt": 0, "max": 5}}), ValueError, "operator"),
        (SearchOp(NS, limit=-1), ValueError, "limit"),
        (SearchOp(NS, offset=-2), ValueError, "offset"),
        (ListNamespacesOp(max_depth=0), ValueError, "max_depth"),
    ],
)
def test_bad_ops_fail_clearly_and_lose_nothing(
    store: OblivionStore, engine: Oblivion, op: Any, error: type[Exception], match: str
) -> None:
    """A bad op in a batch raises a clear error before any op runs; stored items survive."""
    store.put(NS, "keep", {"text": "keep me"})
    before = _snapshot(engine)
    with pytest.raises(error, match=match):
        store.batch([PutOp(NS, "keep", None), PutOp(NS, "new", {"text": "new"}), op])
    assert _snapshot(engine) == before
    assert store.get(NS, "keep").value == {"text": "keep me"}  # type: ignore[union-attr]


KEYS = ["", "  ", "\n", "k" * 513, "lgkey:abc", "plain", "a/b.c$d", "nul\x00inside"]


def test_any_string_is_a_key_as_in_the_in_memory_store(store: OblivionStore) -> None:
    """Keys the engine cannot take as ids (empty, blank, over 512 characters) are stored
    under a hashed id and come back as given; put, get, list, query search and delete
    behave as in LangGraph's ``InMemoryStore``."""
    from langgraph.store.memory import InMemoryStore

    ref = InMemoryStore()
    for s in (store, ref):
        for n, key in enumerate(KEYS):
            s.put(NS, key, {"text": f"note number {n} about tea"})
        s.delete(NS, "never-put")
        s.delete(NS, "")
        s.put(NS, "k" * 513, {"text": "changed note about coffee"})
    for key in KEYS:
        got, want = store.get(NS, key), ref.get(NS, key)
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            assert (got.key, got.value) == (want.key, want.value)
    listed = {(it.key, it.value["text"]) for it in store.search(NS, limit=50)}
    assert listed == {(it.key, it.value["text"]) for it in ref.search(NS, limit=50)}
    found = {it.key for it in store.search(NS, query="coffee", limit=50)}
    assert "k" * 513 in found and found <= set(KEYS)


def test_blank_queries_list_and_odd_queries_search(store: OblivionStore) -> None:
    """A blank query lists like ``""`` does (InMemoryStore too); a NUL or a lone
    surrogate in a query is searched around, not refused."""
    store.put(NS, "tea", {"text": "I prefer green tea"})
    for blank in ("", "   ", "\n"):
        hits = store.search(NS, query=blank)
        assert [(h.key, h.score) for h in hits] == [("tea", None)]
    for odd in ("green\x00tea", "green tea \ud800"):
        hits = store.search(NS, query=odd)
        assert [h.key for h in hits] == ["tea"] and hits[0].score is not None


def test_a_namespace_the_engine_cannot_hold_reads_as_empty(store: OblivionStore) -> None:
    """Too long a namespace (or a label with a lone surrogate) can hold nothing: get
    finds nothing and delete does nothing, as for any empty namespace; put raises."""
    long_ns = tuple(f"label{i:03d}" for i in range(40))
    for ns in (long_ns, ("a\ud800",)):
        assert store.get(ns, "k") is None
        store.delete(ns, "k")
        with pytest.raises(InvalidNamespaceError):
            store.put(ns, "k", {"text": "x"})
    assert store.get(NS, "bad\ud800") is None
    store.delete(NS, "bad\ud800")


def test_the_public_helpers_validate_too(store: OblivionStore) -> None:
    """put()/get()/search() reject non-string labels through BaseStore's own checks."""
    with pytest.raises(InvalidNamespaceError):
        store.put(("memories", 7), "k", {"text": "x"})  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        store.search(("memories", 7))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be dicts"):
        store.put(NS, "k", 42)  # type: ignore[arg-type]
    assert store.list_namespaces() == []


def test_two_stores_on_one_engine_put_the_same_keys_at_once(engine: Oblivion) -> None:
    """Puts of one key through two store objects (a store per request, one engine)
    race between reading and writing: each still adds or updates, never fails, and
    the key ends holding one of the values put."""
    stores = [OblivionStore(engine) for _ in range(2)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def work(w: int) -> None:
        barrier.wait()
        for j in range(25):
            try:
                stores[w].put(NS, f"key{j % 5}", {"text": f"value {w} {j}"})
                if j % 7 == 6:
                    stores[w].delete(NS, f"key{(j + w) % 5}")
            except BaseException as e:
                errors.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for j in range(5):
        item = stores[0].get(NS, f"key{j}")
        assert item is None or item.value["text"].startswith("value ")
    for w in range(2):  # and every key takes a put after it
        stores[w].put(NS, "key0", {"text": f"last {w}"})
        assert stores[1 - w].get(NS, "key0").value == {"text": f"last {w}"}  # type: ignore[union-attr]


def test_ttl_is_not_supported(store: OblivionStore) -> None:
    """A TTL is refused: decay replaces expiry."""
    with pytest.raises(NotImplementedError):
        store.put(NS, "k", {"text": "x"}, ttl=5)


# ==================================================================== async
async def test_async_api_matches_sync(store: OblivionStore) -> None:
    """aput/aget/asearch/alist_namespaces/adelete behave like their sync twins."""
    await store.aput(NS, "tea", {"text": "green tea"})
    await store.aput(("other",), "x", {"text": "coffee"})
    item = await store.aget(NS, "tea")
    assert item is not None and item.value == {"text": "green tea"}
    hits = await store.asearch(NS, query="tea")
    assert [h.key for h in hits] == ["tea"] and hits[0].score is not None
    assert await store.alist_namespaces() == [NS, ("other",)]
    await store.adelete(NS, "tea")
    assert await store.aget(NS, "tea") is None


async def test_async_bad_input_fails_clearly(store: OblivionStore) -> None:
    """abatch() validates like batch()."""
    with pytest.raises(InvalidNamespaceError):
        await store.abatch([PutOp(("a", 1), "k", {"text": "x"})])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must be dicts"):
        await store.aput(NS, "k", ["x"])  # type: ignore[arg-type]


# ==================================================================== create_agent
@tool
def recall_drinks(query: str, runtime: ToolRuntime) -> str:
    """Look up the user's drinks in long-term memory."""
    assert runtime.store is not None
    hits = runtime.store.search(("memories", "sam"), query=query, limit=5)
    return "\n".join(f"{h.key}:{h.value['drink']}:{h.score:.3f}" for h in hits)


def _drinks_agent(store: OblivionStore) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(
        [
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "recall_drinks", "args": {"query": "favourite drink"}, "id": "c1"}
                ],
            ),
            "You like coffee these days.",
        ]
    )
    return create_agent(model, tools=[recall_drinks], store=store), model


def _tool_output(result: dict[str, Any]) -> list[str]:
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 1
    return [line.split(":")[1] for line in str(tool_messages[0].content).splitlines()]


def _drinks(store: OblivionStore, clock: ManualClock) -> None:
    store.put(NS, "old", {"text": "favourite drink", "drink": "tea"})
    clock.advance(30 * DAY)
    store.put(NS, "new", {"text": "favourite drink", "drink": "coffee"})


def test_create_agent_tool_sees_decayed_reranked_memories(
    store: OblivionStore, clock: ManualClock
) -> None:
    """A tool reading runtime.store gets memories ranked by activation (fresh first)."""
    _drinks(store, clock)
    agent, _ = _drinks_agent(store)
    result = agent.invoke({"messages": [{"role": "user", "content": "What do I drink?"}]})
    assert _tool_output(result) == ["coffee", "tea"]
    assert result["messages"][-1].content == "You like coffee these days."


async def test_create_agent_tool_sees_memories_async(
    store: OblivionStore, clock: ManualClock
) -> None:
    """The same holds through ainvoke() (the store's abatch path)."""
    _drinks(store, clock)
    agent, _ = _drinks_agent(store)
    result = await agent.ainvoke({"messages": [{"role": "user", "content": "What do I drink?"}]})
    assert _tool_output(result) == ["coffee", "tea"]


@tool
def save_drink(text: str, runtime: ToolRuntime) -> str:
    """Save the user's favourite drink under the key drink-1."""
    assert runtime.store is not None
    runtime.store.put(("memories", "sam"), "drink-1", {"text": text, "drink": text.split()[-1]})
    return "saved"


def test_create_agent_tool_re_putting_a_stale_memory_makes_it_current(
    store: OblivionStore,
) -> None:
    """A memory-manager tool writing back a stale item's text makes a later search find it."""
    store.put(NS, "drink-1", {"text": "My favourite drink is tea.", "drink": "tea."})
    store.put(NS, "drink-2", {"text": "My favourite drink is coffee.", "drink": "coffee."})
    model = ScriptedChatModel(
        [
            AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": "save_drink",
                        "args": {"text": "My favourite drink is tea."},
                        "id": "c1",
                    }
                ],
            ),
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "recall_drinks", "args": {"query": "favourite drink"}, "id": "c2"}
                ],
            ),
            "You like tea again.",
        ]
    )
    agent = create_agent(model, tools=[save_drink, recall_drinks], store=store)
    result = agent.invoke({"messages": [{"role": "user", "content": "I drink tea again."}]})
    found = [m for m in result["messages"] if isinstance(m, ToolMessage)][-1]
    assert [line.split(":")[1] for line in str(found.content).splitlines()] == ["tea."]


# ==================================================================== real stack
@pytest.mark.integration
def test_real_stack_store_semantic_search_and_agent(
    real_engine: Oblivion, clock: ManualClock
) -> None:
    """With MiniLM and Chroma on disk, search is semantic and the agent tool sees it."""
    store = OblivionStore(real_engine, index={"fields": ["text"]})
    store.put(NS, "tea", {"text": "I prefer green tea in the morning", "drink": "tea"})
    store.put(NS, "car", {"text": "My car is an electric Renault", "drink": "none"})
    store.put(("memories", "ana"), "x", {"text": "Ana loves espresso", "drink": "espresso"})
    assert store.search(NS, query="What hot beverage do I like?")[0].key == "tea"
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "ana"), NS]
    store.put(NS, "old", {"text": "favourite drink", "drink": "tea"})
    clock.advance(30 * DAY)
    store.put(NS, "new", {"text": "favourite drink", "drink": "coffee"})
    agent, _ = _drinks_agent(store)
    result = agent.invoke({"messages": [{"role": "user", "content": "What do I drink?"}]})
    drinks = _tool_output(result)
    assert drinks.index("coffee") < drinks.index("tea")


@pytest.mark.integration
async def test_real_stack_store_async(real_engine: Oblivion) -> None:
    """The async API works against the real stack."""
    store = OblivionStore(real_engine)
    await store.aput(NS, "k", {"text": "Backups run at midnight"})
    hits = await store.asearch(NS, query="When do backups happen?")
    assert hits[0].key == "k"
    assert (await store.aget(NS, "k")).value == {"text": "Backups run at midnight"}  # type: ignore[union-attr]


@pytest.mark.integration
def test_real_stack_store_batch_of_puts(real_engine: Oblivion) -> None:
    """A batch of new items (one engine write) is stored and searched semantically, and
    survives a reopen of the store."""
    store = OblivionStore(real_engine, index={"fields": ["text"]})
    facts = {
        "tea": "I prefer green tea in the morning",
        "car": "My car is an electric Renault",
        "dog": "Our dog Biscuit is a beagle",
    }
    store.batch([PutOp(NS, key, {"text": text}) for key, text in facts.items()])
    assert store.search(NS, query="What pet do we have?")[0].key == "dog"
    path = real_engine.path
    real_engine.close()
    with Oblivion(path, embedder=real_engine.embedder) as reopened:
        again = OblivionStore(reopened, index={"fields": ["text"]})
        assert {key: again.get(NS, key).value["text"] for key in facts} == facts  # type: ignore[union-attr]


def test_a_restated_value_is_appraised_as_a_new_one(engine: Oblivion, clock: ManualClock) -> None:
    """A key first written with small talk and overwritten with an instruction kept small
    talk's category and importance: it decayed in hours and was archived within a day."""
    store = OblivionStore(engine, index={"fields": ["text"]})
    space = encode_namespace(NS)
    store.put(NS, "profile", {"text": "ok thanks!"})
    assert engine.get("profile", namespace=space).category == "small_talk"
    allergy = "The user is allergic to peanuts; never suggest dishes with nuts."
    store.put(NS, "profile", {"text": allergy})
    store.put(("elsewhere",), "profile", {"text": allergy})  # the same value, put new
    restated = engine.get("profile", namespace=space)
    fresh = engine.get("profile", namespace=encode_namespace(("elsewhere",)))
    assert (restated.category, restated.importance) == (fresh.category, fresh.importance)
    assert restated.category != "small_talk"
    clock.advance(DAY)
    engine.maintain(namespace=space)
    assert engine.get("profile", namespace=space).tier.label == "active"
    edits = [e for e in engine.history("profile", namespace=space) if e.kind == "edit"]
    assert edits[-1].detail["category"] == restated.category
    store.put(NS, "profile", {"text": allergy})  # the same text again: nothing re-appraised
    assert "category" not in engine.history("profile", namespace=space)[-1].detail


def test_pages_tile_one_ranking_when_archived_items_match_best() -> None:
    """The archive gate opened once a page's offset + limit passed the active items: a
    late page came from a wider ranking, repeated items earlier pages had shown, and the
    best matches (archived) were on no page at all."""
    clock = ManualClock()
    engine = memory(clock=clock, policy=Policy(lexical_weight=0.0))  # cosine only
    # no boosts between the page calls: near-ties would trade places
    store = OblivionStore(engine, index={"fields": ["text"]}, feedback=False)
    for i in range(4):
        store.put(NS, f"old{i}", {"text": "green tea leaves"})
    clock.advance(90 * DAY)
    engine.maintain(namespace=encode_namespace(NS))  # the old items go to the archive
    for i in range(20):
        text = "green tea leaves x" if i < 8 else f"unrelated topic number {i} about cars"
        store.put(NS, f"new{i}", {"text": text})
        clock.advance(60)
    query = "green tea leaves"
    full = [h.key for h in store.search(NS, query=query, limit=24)]
    pages = [
        h.key for off in range(0, 24, 4) for h in store.search(NS, query=query, limit=4, offset=off)
    ]
    assert pages == full
    assert set(full[:4]) == {f"old{i}" for i in range(4)}


def test_an_unknown_operator_inside_a_list_filter_changes_nothing(store: OblivionStore) -> None:
    """Validation did not look inside lists: the batch's earlier ops ran, then it raised
    (or, with no stored list that long, matched nothing silently)."""
    store.put(NS, "keep", {"text": "keep me", "tags": ["a"]})
    ops = [
        PutOp(NS, "keep", None),
        PutOp(NS, "new", {"text": "a new item"}),
        SearchOp(NS, filter={"tags": [{"$regex": "x"}]}),
    ]
    with pytest.raises(InvalidInputError, match=r"\$regex"):
        store.batch(ops)
    assert store.get(NS, "keep") is not None
    assert store.get(NS, "new") is None


def test_listing_namespaces_loads_none_of_them(engine: Oblivion) -> None:
    """A server that unloads idle users keeps them unloaded when it lists namespaces."""
    store = OblivionStore(engine)
    for user in ("ana", "bo", "cy"):
        store.put(("users", user), "pref", {"text": f"{user} likes green tea"})
    for space in engine.loaded_namespaces():
        engine.unload(namespace=space)
    assert store.list_namespaces(prefix=("users",)) == [
        ("users", "ana"),
        ("users", "bo"),
        ("users", "cy"),
    ]
    assert engine.loaded_namespaces() == []


@pytest.mark.integration
def test_a_server_capped_at_two_loaded_users_answers_every_user(
    tmp_path: Any, real_embedder: Any
) -> None:
    """Real model, Chroma on disk: with max_loaded_namespaces=2, five users' memories
    are put and searched in turns; each search finds that user's own fact, and the
    engine never holds more than two users once a call has returned."""
    users = {
        "ana": "Ana is allergic to peanuts.",
        "bo": "Bo's flight to Lisbon leaves on Friday.",
        "cy": "Cy prefers answers in Spanish.",
        "dee": "Dee's dog is called Biscuit.",
        "eli": "Eli works night shifts at the hospital.",
    }
    questions = {
        "ana": "what food allergy",
        "bo": "when does the flight leave",
        "cy": "which language for answers",
        "dee": "name of the dog",
        "eli": "what shifts at work",
    }
    with Oblivion(
        tmp_path / "memory", embedder=real_embedder, clock=ManualClock(), max_loaded_namespaces=2
    ) as engine:
        store = OblivionStore(engine)
        for user, text in users.items():
            store.put(("users", user), "fact", {"text": text})
            store.put(("users", user), "chat", {"text": "Thanks, that was helpful!"})
            assert len(engine.loaded_namespaces()) <= 2
        for _ in range(2):
            for user, question in questions.items():
                hits = store.search(("users", user), query=question, limit=1)
                assert [h.value["text"] for h in hits] == [users[user]]
                assert len(engine.loaded_namespaces()) <= 2
        assert len(store.list_namespaces(prefix=("users",))) == 5
