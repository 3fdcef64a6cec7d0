"""``recall_besides``: a recall asked again past memories the caller leaves out."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from oblivion_core.widen import WIDEN_TIMES, besides, recall_besides


def _reader(
    texts: list[str], tokens: int, per_item: int = 0
) -> tuple[Any, list[tuple[int | None, int]]]:
    """A recall over ``texts`` (best first, ``tokens`` each) that packs them into the
    budget (``tokens + per_item`` each, as recall packs) and ``k``, and the calls it got."""
    calls: list[tuple[int | None, int]] = []

    def read(budget: int | None, k: int) -> Any:
        calls.append((budget, k))
        room = len(texts) if budget is None else budget // (tokens + per_item)
        items = [
            SimpleNamespace(id=t, text=t, tokens=tokens, why={}) for t in texts[: min(k, room)]
        ]
        return SimpleNamespace(items=items)

    return read, calls


@given(
    hidden=st.sets(st.integers(0, 19), max_size=20),
    k=st.integers(1, 8),
    budget=st.one_of(st.none(), st.integers(0, 200)),
)
def test_k_shown_whenever_they_exist_within_the_budget(
    hidden: set[int], k: int, budget: int | None
) -> None:
    """However many of the best are hidden, a recall that stops before its last try
    holds the best min(k, what the budget and the store allow) memories that are not;
    it asks at most WIDEN_TIMES more times, the first time as the caller asked."""
    texts = [f"m{i}" for i in range(20)]
    # (a reader packing without the per-item cost the widening adds back gave a hidden
    # one's place more room than it took: one memory more than the budget held)
    read, calls = _reader(texts, tokens=5, per_item=1)
    out = recall_besides(read, budget, k, 1, lambda t: int(t[1:]) in hidden)
    shown = [it.text for it in out.items if int(it.text[1:]) not in hidden]
    visible = [t for t in texts if int(t[1:]) not in hidden]
    assert calls[0] == (budget, k) and len(calls) <= WIDEN_TIMES + 1
    if len(calls) <= WIDEN_TIMES:  # it stopped on its own
        fit = len(texts) if budget is None else budget // 6
        assert shown[:k] == visible[: min(k, fit)]


def test_nothing_hidden_is_one_recall() -> None:
    read, calls = _reader(["a", "b", "c"], tokens=5)
    out = recall_besides(read, 10, 2, 1, lambda t: False)
    assert [it.text for it in out.items] == ["a", "b"] and calls == [(10, 2)]


def test_hidden_ones_get_their_places_and_tokens_back() -> None:
    """Two of the best three are on screen: asked again for k + 2, with their tokens
    and per-item cost added to the budget."""
    read, calls = _reader(["a", "b", "c", "d", "e"], tokens=5)
    out = recall_besides(read, 15, 3, 1, {"a", "b"}.__contains__)
    assert calls == [(15, 3), (15 + 2 * (5 + 1), 5)]
    assert [it.text for it in out.items if it.text not in {"a", "b"}] == ["c", "d", "e"]


def test_context_of_a_hidden_hit_is_left_out_too() -> None:
    """A hit on screen brought its neighbouring turn along as context
    (``why["context_for"]``): that turn took a place of a better memory. It is left
    out with its hit, and the recall is asked again for both places."""
    rows = [("a", None), ("a-next", "a"), ("b", None), ("c", None), ("d", None)]
    calls: list[tuple[int | None, int]] = []

    def read(budget: int | None, k: int) -> Any:
        calls.append((budget, k))
        items = [
            SimpleNamespace(id=m, text=m, tokens=5, why={} if hit is None else {"context_for": hit})
            for m, hit in rows[:k]
        ]
        return SimpleNamespace(items=items)

    out = recall_besides(read, None, 2, 1, {"a"}.__contains__)
    assert calls == [(None, 2), (None, 4)]
    assert [it.id for it in besides(out.items, {"a"}.__contains__)] == ["b", "c"]
    assert [it.id for it in besides(out.items, {"b"}.__contains__)] == ["a", "a-next", "c"]


def test_a_context_turn_the_query_matched_on_its_own_stays() -> None:
    """A memory the query matched, placed beside a hit as its neighbour: it was left
    out with that hit when the hit was on screen (three turns of a thread asked for a
    fact, the fact written just before the first of them, and the middleware showed no
    memory at all). ``why["matched"]``: it stays."""
    items = [
        SimpleNamespace(id="turn", text="turn", why={}),
        SimpleNamespace(id="fact", text="fact", why={"context_for": "turn", "matched": True}),
        SimpleNamespace(id="next", text="next", why={"context_for": "turn", "matched": False}),
    ]
    assert [it.id for it in besides(items, {"turn"}.__contains__)] == ["fact"]


def test_the_engine_says_which_context_turns_the_query_matched() -> None:
    """Through the engine: a fact written just before three turns that match better is
    the first turn's context and a match of its own."""
    from oblivion_core.testing import ManualClock, memory

    clock = ManualClock()
    with memory(clock=clock) as mem:
        mem.remember("My favourite colour is violet.")
        for j in range(3):
            clock.advance(20)
            mem.remember(f"user: Question {j}: what is my favourite colour again?")
        found = mem.recall("Question 3: what is my favourite colour again?", feedback=False)
        why = {it.text: it.why for it in found}
        fact = why["My favourite colour is violet."]
        assert fact.get("context_for") and fact["matched"] is True
        assert [it.id for it in besides(found.items, lambda t: t.startswith("user:"))] == [
            it.id for it in found if it.text == "My favourite colour is violet."
        ]
