"""A deep recall searches the archive's in-memory copy on the searcher thread while the
calling thread searches the active tier (``Oblivion.SEARCH_BESIDE``), and so does a gated
one while the gate has mostly opened lately: the same result as one after the other,
errors from either side raised, the copy never read after the recall returns, and the
thread gone with ``close()``."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion, Policy, Tier
from oblivion_core.index import ActiveIndex
from oblivion_core.sketch import SketchIndex
from tests.core.test_exact_archive import _archive_most, _only
from tests.core.test_sketch import few_candidates

DAY = 86_400.0
Fresh = Callable[..., AbstractContextManager[Oblivion]]


def _items(mem: Oblivion, query: str, deep: bool | None = True, **kwargs: Any) -> Any:
    result = mem.recall(query, deep=deep, feedback=False, **kwargs)
    return result.archive_reason, [(i.id, i.score, i.relevance, i.tier, i.why) for i in result]


def _threads_named(prefix: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(prefix)]


@settings(max_examples=16, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    kind=st.sampled_from(["exact", "sketch"]),
    invalidated=st.integers(0, 30),
    k=st.integers(1, 12),
    deep=st.sampled_from([True, None]),
)
def test_the_result_is_the_one_searched_on_one_thread(
    fresh: Fresh, seed: int, kind: str, invalidated: int, k: int, deep: bool | None
) -> None:
    """Every item, score and explanation the same as with the thread off, whether the
    gate opens or not; invalidated memories make the copy's search ask for more (on the
    thread)."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(maintain_every=0)
    with few_candidates(2, 8), fresh(clock=clock, policy=policy) as mem:
        _only(mem, kind, 10_000)
        ids = _archive_most(mem, clock, 120, seed)
        for m in random.Random(seed).sample(ids, invalidated):
            mem.invalidate(m)
        queries = [mem.get(m).text for m in ids[::15]] + ["garden piano river", "nothing"]
        mem.recall(queries[0], deep=True)  # the copy is made
        fresh_ones = [f"The garden gnome number {n} by the pond is painted blue" for n in range(12)]
        queries += [mem.remember_many(fresh_ones)[0].text] * 3  # the gate stays shut
        threaded = [_items(mem, q, deep, k=k) for q in queries]
        copy = mem._spaces[mem.default_namespace].archive
        assert isinstance(copy, SketchIndex if kind == "sketch" else ActiveIndex)
        mem.SEARCH_BESIDE = False
        mem._spaces[mem.default_namespace].gate_opens = 1.0
        assert [_items(mem, q, deep, k=k) for q in queries] == threaded


def test_the_copy_is_searched_on_the_searcher_thread(
    fresh: Fresh, monkeypatch: pytest.MonkeyPatch
) -> None:
    """deep=True: the copy's search runs on the searcher thread, the active tier's on
    the caller's; deep=None too while the gate has opened for 3/4 of the recent recalls,
    else after the active tier, on the caller's; with SEARCH_BESIDE off, on the caller's."""
    clock = ManualClock()
    seen: list[tuple[str, str]] = []
    real = ActiveIndex.nearest

    def nearest(self: ActiveIndex, *args: Any, **kwargs: Any) -> Any:
        seen.append(("active" if self is space.index else "copy", threading.current_thread().name))
        return real(self, *args, **kwargs)

    def searched(query: str, deep: bool | None) -> list[tuple[str, str]]:
        seen.clear()
        mem.recall(query, deep=deep)
        mem._lock.settle()
        return sorted(seen)

    with fresh(clock=clock, policy=Policy.template("balanced").replace(maintain_every=0)) as mem:
        ids = _archive_most(mem, clock, 60)
        space = mem._space(mem.default_namespace)
        monkeypatch.setattr(ActiveIndex, "nearest", nearest)
        here, there = threading.current_thread().name, "oblivion-search_0"
        still = iter([m for m in ids if mem.get(m).tier == Tier.ARCHIVE])

        def archived() -> str:  # one not recalled yet: recalling one may promote it
            return mem.get(next(still)).text

        assert searched(archived(), True) == [("active", here), ("copy", there)]
        # the gate opens (the active tier does not hold it): searched beside
        assert searched(archived(), None) == [("active", here), ("copy", there)]
        assert space.gate_opens == 1.0
        # the active tier answers: the gate stays shut, the search beside is dropped...
        fresh_ones = [f"The garden gnome number {n} by the pond is painted blue" for n in range(12)]
        active = mem.remember_many(fresh_ones)[0].text  # k=10 active memories and more
        assert searched(active, None) == [("active", here), ("copy", there)]
        assert space.gate_opens == 7 / 8
        shut = [searched(active, None) for _ in range(3)]  # at 7/8, 49/64, then 343/512
        assert shut[:2] == [[("active", here), ("copy", there)]] * 2
        # ...until fewer than 3/4 of the recent gated recalls opened it: then the copy
        # is searched only when the gate opens, after the active tier
        assert space.gate_opens < 0.75 and shut[2] == [("active", here)]
        assert searched(archived(), None) == [("active", here), ("copy", here)]
        assert searched(archived(), True) == [("active", here), ("copy", there)]
        mem.SEARCH_BESIDE = False
        assert searched(archived(), True) == [("active", here), ("copy", here)]


def test_an_error_in_the_copy_search_is_raised_and_nothing_changes(
    small_archive: tuple[Oblivion, list[str]],
) -> None:
    mem, ids = small_archive
    before = [(r.id, r.text, r.activation, r.tier) for r in mem.records()]
    copy = mem._spaces[mem.default_namespace].archive
    assert copy is not None

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError("the copy could not be read")

    copy.nearest = broken  # type: ignore[method-assign]
    with pytest.raises(MemoryError, match="the copy could not be read"):
        mem.recall(mem.get(ids[5]).text, deep=True)
    del copy.nearest
    mem._lock.settle()
    assert [(r.id, r.text, r.activation, r.tier) for r in mem.records()] == before
    assert mem.recall(mem.get(ids[5]).text, deep=True, k=1).ids == [ids[5]]


def test_an_error_in_the_active_search_waits_for_the_copy_search(
    small_archive: tuple[Oblivion, list[str]],
) -> None:
    """The copy is not read after the recall lets go of the engine's lock (a maintain()
    could change it then): the recall raises only once its search on the thread ended."""
    mem, ids = small_archive
    space = mem._spaces[mem.default_namespace]
    copy = space.archive
    assert copy is not None
    ended: list[float] = []
    real = copy.nearest

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.2)
        try:
            return real(*args, **kwargs)
        finally:
            ended.append(time.monotonic())

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("the active index broke")

    copy.nearest = slow  # type: ignore[method-assign]
    space.index.nearest = broken  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="the active index broke"):
        mem.recall(mem.get(ids[5]).text, deep=True)
    raised = time.monotonic()
    assert len(ended) == 1 and ended[0] <= raised
    del copy.nearest, space.index.nearest
    assert mem.recall(mem.get(ids[5]).text, deep=True, k=1).ids == [ids[5]]


def test_close_ends_the_searcher_thread(tmp_path: Path) -> None:
    from oblivion_core.testing import HashEmbedder

    clock = ManualClock()
    policy = Policy.template("balanced").replace(maintain_every=0)
    before = set(_threads_named("oblivion-search"))
    mem = Oblivion(tmp_path, embedder=HashEmbedder(), clock=clock, policy=policy)
    ids = _archive_most(mem, clock, 40)
    assert mem.recall(mem.get(ids[1]).text, deep=True, k=1).ids == [ids[1]]
    assert set(_threads_named("oblivion-search")) - before
    mem.close()
    assert set(_threads_named("oblivion-search")) <= before


def test_deep_recall_on_the_real_stack_with_the_copy_beside(
    tmp_path: Path, real_embedder: Any
) -> None:
    """Real model, Chroma on disk: the same items with the thread on and off, through a
    sketch copy and an exact one."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(maintain_every=0)
    cities = ["Porto", "Leeds", "Lyon", "Graz", "Turku", "Cork", "Bari", "Brno"]
    things = ["the boiler service", "a piano lesson", "the dentist", "a flight", "the vet"]
    notes = [
        f"{t.capitalize()} in {c} is on day {i}"
        for i in range(60)
        for t in things
        for c in cities[:4]
    ]
    questions = [f"When is {t} in {c}?" for t in things for c in cities[:4]]
    with (
        few_candidates(2, 16),
        Oblivion(tmp_path, embedder=real_embedder, clock=clock, policy=policy) as mem,
    ):
        mem.remember_many(notes, categories=["small_talk"] * len(notes))
        clock.advance(10 * DAY)
        mem.maintain()
        for kind in ("sketch", "exact"):
            _only(mem, kind, 10_000)
            mem._spaces[mem.default_namespace].archive = None
            mem.SEARCH_BESIDE = True
            threaded = [_items(mem, q, k=5) for q in questions]
            assert mem.stats()["archive_search"] == kind
            mem.SEARCH_BESIDE = False
            assert [_items(mem, q, k=5) for q in questions] == threaded
            assert all(items for items in threaded)


@pytest.fixture
def small_archive(fresh: Fresh) -> Any:
    clock = ManualClock()
    with fresh(clock=clock, policy=Policy.template("balanced").replace(maintain_every=0)) as mem:
        ids = _archive_most(mem, clock, 60)
        mem.recall(mem.get(ids[0]).text, deep=True)  # the copy is made
        mem._lock.settle()
        yield mem, ids


def test_the_active_tier_is_searched_whatever_the_thread_finds(
    small_archive: tuple[Oblivion, list[str]],
) -> None:
    """One deep recall finds an active memory and an archived one."""
    mem, ids = small_archive
    archived = next(m for m in ids if mem.get(m).tier == Tier.ARCHIVE)
    active = mem.remember("The garden gnome by the pond is painted blue").id
    query = f"{mem.get(archived).text}; the garden gnome by the pond is painted blue"
    result = mem.recall(query, deep=True, k=10, feedback=False)
    assert {archived, active} <= set(result.ids)
    tiers = {i.id: i.tier for i in result}
    assert {tiers[archived], tiers[active]} == {Tier.ARCHIVE, Tier.ACTIVE}
