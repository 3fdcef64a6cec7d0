"""Stale facts in a batch of restatements: each BM25 query is searched once per block,
and the batch comes out as it did when every text searched for itself."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest

from oblivion_core import Oblivion, engine_stale, engine_write

_FACTS = [
    *(f"I live in {city}" for city in ("Paris", "London", "York", "Leeds", "Rome")),
    "my favourite drink is tea",
    "My favourite drink is coffee now",
    "the meeting is at 10",
    "I like dogs",
    "call me Sam",
    "Actually, call me Alex",
]


def _restatements(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(_FACTS) for _ in range(n)]


def _outcome(mem: Oblivion, ids: list[str]) -> tuple[Any, ...]:
    records = [mem.get(m) for m in ids]
    return (
        [r.superseded_by for r in records],
        [r.tier for r in records],
        [round(r.activation, 9) for r in records],
        {m: mem.links(m) for m in ids},
        mem.stats()["superseded"],
        mem.stats()["links"],
    )


def _run(
    fresh: Callable[..., AbstractContextManager[Oblivion]], texts: list[str], earlier: list[str]
) -> tuple[Any, ...]:
    with fresh() as mem:
        # older statements in the namespace, to supersede
        mem.remember_many(earlier, ids=[f"e{k}" for k in range(len(earlier))])
        ids = [r.id for r in mem.remember_many(texts, ids=[f"t{k}" for k in range(len(texts))])]
        return _outcome(mem, [*(f"e{k}" for k in range(len(earlier))), *ids])


@pytest.mark.parametrize("block", [1024, 37])
def test_a_batch_of_restatements_comes_out_as_without_the_kept_searches(
    monkeypatch: pytest.MonkeyPatch,
    fresh: Callable[..., AbstractContextManager[Oblivion]],
    block: int,
) -> None:
    """Searching each query once gives the batch every text's own search gave: the same
    superseded memories, successors, tiers, activations and links (``block``: also with
    the batch judged a block at a time, states between blocks differing)."""
    monkeypatch.setattr(engine_write, "_WRITE_BLOCK", block)
    earlier, texts = _restatements(40, seed=1), _restatements(300, seed=2)
    kept = _run(fresh, texts, earlier)

    def each_time(search: Callable[[str], list[int]]) -> Callable[[str], list[int]]:
        return search

    monkeypatch.setattr(engine_stale, "_once", each_time)
    assert _run(fresh, texts, earlier) == kept
    assert kept[4] > 0  # restatements did supersede


def test_a_batch_of_restatements_searches_each_query_once(
    mem: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hundreds of restatements of a few facts ask the BM25 index once per distinct text
    and subject, not twice per text (each search's cost grows with the batch)."""
    texts = _restatements(400, seed=3)
    queries: Counter[str] = Counter()
    search = mem._lex.search

    def counted(ns: str, query: str, k: int, allow: Any = None) -> tuple[list[int], list[float]]:
        queries[query] += 1
        return search(ns, query, k, allow)

    monkeypatch.setattr(mem._lex, "search", counted)
    mem.remember_many(texts)
    assert queries, "stale-fact detection searched nothing"
    assert max(queries.values()) == 1, queries.most_common(3)
    assert sum(queries.values()) <= 2 * len(set(texts))
