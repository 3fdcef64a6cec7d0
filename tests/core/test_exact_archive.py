"""The in-memory copy of a namespace's archive: exact (``Oblivion.EXACT_ARCHIVE_ROWS``)
or by signs for bigger ones (``Oblivion.SKETCH_ARCHIVE_ROWS``, searched as
``tests/core/test_sketch.py`` checks). Recall searches it instead of querying Chroma, it
always holds exactly the memories outside the active tier with their stored vectors
(and their signs), an exact copy that outgrows its limit becomes a sketch copy, and a
namespace that outgrows both (or the engine-wide total) goes back to Chroma."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion, Policy, Tier
from oblivion_core.sketch import SketchIndex, sign_codes

DAY = 86_400.0
WORDS = [
    "garden",
    "boiler",
    "invoice",
    "piano",
    "Lisbon",
    "flight",
    "nurse",
    "peanut",
    "report",
    "river",
    "school",
    "camera",
    "ticket",
    "budget",
    "recipe",
    "guitar",
    "dentist",
    "holiday",
    "printer",
    "contract",
]


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"note {k}: " + " ".join(rng.sample(WORDS, 4)) for k in range(n)]


def _archive_most(mem: Oblivion, clock: ManualClock, n: int, seed: int = 1) -> list[str]:
    """``n`` memories, most of them archived by decay; returns their ids."""
    ids = [r.id for r in mem.remember_many(_texts(n, seed), categories=["small_talk"] * n)]
    clock.advance(10 * DAY)
    mem.maintain()
    return ids


def _outside(mem: Oblivion, ns: str | None = None) -> set[str]:
    return {r.id for r in mem.records(namespace=ns) if r.tier != Tier.ACTIVE}


def _check_copy(mem: Oblivion, ns: str | None = None) -> None:
    """The copy, if held, is exactly the memories outside the active tier, each with
    the vector SQLite stores for it."""
    mem._lock.settle()  # a recall's promotions are applied just after it returns
    name = mem._ns(ns)
    space = mem._spaces[name]
    # BM25's filter for deep=False marks exactly the active index's memories
    st = space.state
    marked = {st.by_seq[int(q)] for q in np.flatnonzero(space.active.mask) if int(q) in st.by_seq}
    assert marked == set(space.index.ids)
    if space.archive is None:
        return
    held = set(space.archive.ids)
    assert held == _outside(mem, ns)
    assert not held & set(space.index.ids)
    stored = mem._db.vectors(name, sorted(held))
    for m in held:
        vec = space.archive.vector(m)
        assert vec is not None
        np.testing.assert_array_equal(vec, stored[m])
    if isinstance(space.archive, SketchIndex):  # and each row's signs are its vector's
        n = len(space.archive)
        codes = space.archive._codes[:, :n]
        np.testing.assert_array_equal(codes, sign_codes(space.archive._rows[:n]))


def _only(mem: Oblivion, kind: str, limit: int) -> None:
    """Copies of one kind only (``"exact"`` or ``"sketch"``), up to ``limit`` rows."""
    mem.EXACT_ARCHIVE_ROWS = limit if kind == "exact" else 0
    mem.SKETCH_ARCHIVE_ROWS = limit if kind == "sketch" else 0


Spy = Callable[[Oblivion], list[int]]  # the chroma_queries fixture


@pytest.fixture
def small(
    clock: ManualClock, fresh: Callable[..., AbstractContextManager[Oblivion]]
) -> Iterator[Oblivion]:
    with fresh(clock=clock, policy=Policy.template("balanced").replace(maintain_every=0)) as m:
        yield m


def test_deep_recall_searches_the_copy_not_chroma(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy
) -> None:
    ids = _archive_most(small, clock, 60)
    calls = chroma_queries(small)
    assert small.stats()["archive"] > 40
    assert not small.stats()["archive_in_memory"]  # built on the first archive search
    result = small.recall(small.get(ids[7]).text, deep=True, k=3)
    assert calls == []
    assert small.stats()["archive_in_memory"]
    assert result.searched_archive and result.ids[0] == ids[7]
    assert result[0].why["tier"] == "archive"
    _check_copy(small)


def test_the_copy_ranks_exactly_as_chroma_does(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy
) -> None:
    """Same items, relevance and scores with the copy as through Chroma's query (a small
    collection, where Chroma's HNSW search is exact too); items whose scores tie to 5
    digits may swap places (Chroma computes the distance in another float order)."""
    _archive_most(small, clock, 150, seed=3)
    queries = [" ".join(random.Random(q).sample(WORDS, 3)) for q in range(25)]

    def run() -> list[tuple[list[float], dict[str, tuple[float, float]]]]:
        out = []
        for q in queries:
            res = small.recall(q, deep=True, k=8, feedback=False)
            items = {it.id: (it.relevance, it.score) for it in res}
            hits = [it.score for it in res if "context_for" not in it.why]
            out.append((hits, items))
        return out

    exact = run()
    assert small._spaces[small.default_namespace].archive is not None
    small._lock.settle()  # the recalls' feedback applied before the copy is dropped
    small.EXACT_ARCHIVE_ROWS = 0
    small.SKETCH_ARCHIVE_ROWS = 0
    small._spaces[small.default_namespace].archive = None
    calls = chroma_queries(small)
    # compared to 1e-5, not rounded to 5 digits: a value on a rounding boundary would
    # round apart over a float32 ulp
    for (hits, items), (want_hits, want) in zip(run(), exact, strict=True):
        assert hits == pytest.approx(want_hits, abs=1e-5)
        assert items.keys() == want.keys()
        for mid, pair in items.items():
            assert pair == pytest.approx(want[mid], abs=1e-5)
    assert len(calls) == len(queries)


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "write",
                "write_archived",
                "maintain",
                "recall",
                "invalidate",
                "forget",
                "edit",
                "confirm",
                "compress",
                "decompress",
            ]
        ),
        st.integers(0, 10_000),
    ),
    min_size=1,
    max_size=25,
)


@pytest.mark.parametrize("kind", ["exact", "sketch"])
@settings(max_examples=25)
@given(ops=OPS)
def test_the_copy_follows_every_tier_move(
    fresh: Callable[..., AbstractContextManager[Oblivion]],
    ops: list[tuple[str, int]],
    kind: str,
) -> None:
    """Whatever moves memories between tiers (maintain, recall promotions, confirm,
    invalidate, forget, edits, compression and its undoing), the copy stays exactly the
    memories outside the active tier with their current vectors (and signs)."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(
        maintain_every=0, compress_below=0.25, compress_min_cluster=2, compress_similarity=0.3
    )
    with fresh(clock=clock, policy=policy) as mem:
        _only(mem, kind, 10_000)
        ids = _archive_most(mem, clock, 30)
        mem.recall("garden boiler", deep=True)  # builds the copy
        assert mem.stats()["archive_search"] == kind
        for op, x in ops:
            live = [r.id for r in mem.records()]
            pick = live[x % len(live)] if live else None
            if op == "write":
                ids.append(mem.remember(f"fresh note {x} about the piano").id)
            elif op == "write_archived":
                mem.remember_many(_texts(3, x), categories=["small_talk"] * 3)
                clock.advance(10 * DAY)
            elif op == "maintain":
                clock.advance((x % 7) * DAY)
                mem.maintain()
            elif op == "recall":
                for _ in range(3):  # repeated archive hits promote
                    mem.recall(" ".join(random.Random(x).sample(WORDS, 2)), deep=True)
            elif pick is None:
                continue
            elif op == "invalidate":
                mem.invalidate(pick)
            elif op == "forget":
                mem.forget(pick)
            elif op == "edit":
                mem.edit(pick, f"edited {x}: the printer contract and the river")
            elif op == "confirm":
                mem.confirm(pick)
            elif op == "compress":
                clock.advance(30 * DAY)
                mem.maintain()
            elif op == "decompress":
                summaries = [r.id for r in mem.records() if r.category == "summary"]
                if summaries:
                    mem.decompress(summaries[x % len(summaries)])
            _check_copy(mem)
        mem.recall("garden boiler", deep=True)
        _check_copy(mem)


@pytest.mark.parametrize("kind", ["exact", "sketch"])
def test_a_namespace_above_the_limit_queries_chroma(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy, kind: str
) -> None:
    _only(small, kind, 20)
    ids = _archive_most(small, clock, 40)
    outside = _outside(small)
    assert len(outside) > 20
    calls = chroma_queries(small)
    result = small.recall(small.get(sorted(outside)[0]).text, deep=True, k=1)
    assert calls and result.ids == [sorted(outside)[0]]
    assert not small.stats()["archive_in_memory"]
    # forgotten down to the limit: the next archive search builds the copy
    for m in [m for m in ids if m in outside][: len(outside) - 20]:
        small.forget(m)
    calls.clear()
    small.recall("garden boiler", deep=True)
    assert calls == []
    assert small.stats()["archive_search"] == kind
    _check_copy(small)


def _vector_scans(mem: Oblivion) -> list[str]:
    """Record the namespaces whose stored vectors are read for a copy, from now on."""
    scans: list[str] = []
    read = mem._db.namespace_vectors

    def spy(namespace: str, keep: Any, rows: int | None = None) -> Any:
        scans.append(namespace)
        return read(namespace, keep, rows)

    mem._db.namespace_vectors = spy  # type: ignore[method-assign]
    return scans


@pytest.mark.parametrize("kind", ["exact", "sketch"])
def test_archived_memories_without_a_stored_vector_leave_it_to_chroma(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy, kind: str
) -> None:
    """Stores written before vectors were kept in SQLite: no copy is built (it would
    miss those memories), and Chroma finds them. Another namespace's copy is not dropped
    for it, and the vectors are not read again on every archive search; an edit (or a
    deletion) of such a memory lets the next search try again."""
    _only(small, kind, 10_000)
    small.COPY_KEEP_SECONDS = 0.0
    small.remember_many(_texts(8, 5), categories=["small_talk"] * 8, namespace="other")
    _archive_most(small, clock, 30)
    small.maintain(namespace="other")
    small.recall("garden", deep=True, namespace="other")  # holds a copy
    small.ARCHIVE_COPY_TOTAL = len(_outside(small))  # room for one of the two only
    old = sorted(_outside(small))[0]
    with small._db.transaction() as conn:
        conn.execute("DELETE FROM vectors WHERE id=?", (old,))
    calls = chroma_queries(small)
    scans = _vector_scans(small)
    for _ in range(3):
        result = small.recall(small.get(old).text, deep=True, k=1)
        assert result.ids == [old]
    assert len(calls) == 3 and scans == [small.default_namespace]  # read once
    assert not small.stats()["archive_in_memory"]
    assert small.stats(namespace="other")["archive_in_memory"]  # kept
    small.edit(old, "note again: garden boiler invoice piano")  # stores its vector
    small.recall("garden boiler", deep=True)
    assert small.stats()["archive_search"] == kind and len(calls) == 3
    assert not small.stats(namespace="other")["archive_in_memory"]  # made room
    _check_copy(small)


def test_an_empty_archive_is_not_searched(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy
) -> None:
    """While every memory is active, a deep recall asks nothing of the archive, not even
    with Chroma as its only search (a server that is down cannot fail it); once some are
    archived, it does."""
    small.EXACT_ARCHIVE_ROWS = small.SKETCH_ARCHIVE_ROWS = 0  # the archive: Chroma only
    calls = chroma_queries(small)
    small.remember_many(_texts(12, 3))
    result = small.recall("garden boiler", deep=True, k=3)
    assert len(result) == 3 and calls == []
    assert small.stats()["archive_search"] is None
    _archive_most(small, clock, 30)
    small.recall("garden boiler", deep=True, k=3)
    assert len(calls) == 1 and small.stats()["archive_search"] == "chroma"


def test_the_old_name_of_the_total_is_still_honoured(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy
) -> None:
    """``EXACT_ARCHIVE_TOTAL`` (the total's name before it covered sketch copies too),
    set on the instance or the class, still bounds the copies, with a warning."""
    _archive_most(small, clock, 30)
    small.EXACT_ARCHIVE_TOTAL = 0  # type: ignore[attr-defined]
    calls = chroma_queries(small)
    with pytest.warns(DeprecationWarning, match="ARCHIVE_COPY_TOTAL") as warned:
        assert small.recall("garden boiler", deep=True).searched_archive
    assert warned[0].filename == __file__  # points at the call that set it off
    assert calls and not small.stats()["archive_in_memory"]
    del small.EXACT_ARCHIVE_TOTAL  # type: ignore[attr-defined]
    small.recall("garden boiler", deep=True)
    assert small.stats()["archive_search"] == "exact"


def test_stats_say_how_the_last_archive_search_ran(small: Oblivion, clock: ManualClock) -> None:
    _archive_most(small, clock, 30)
    assert small.stats()["archive_search"] is None  # none yet in this process
    small.recall("garden boiler", deep=True)
    assert small.stats()["archive_search"] == "exact"
    small.EXACT_ARCHIVE_ROWS = small.SKETCH_ARCHIVE_ROWS = 0
    small._spaces[small.default_namespace].archive = None
    small.recall("garden boiler", deep=True)
    assert small.stats()["archive_search"] == "chroma"


@pytest.mark.parametrize("kind", ["exact", "sketch"])
def test_outgrowing_the_limit_drops_the_copy_until_three_quarters(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy, kind: str
) -> None:
    _only(small, kind, 40)
    ids = _archive_most(small, clock, 36)
    small.recall("garden boiler", deep=True)
    space = small._spaces[small.default_namespace]
    assert space.archive is not None
    _archive_most(small, clock, 10, seed=2)  # 46 outside the active tier now
    assert len(_outside(small)) > 40
    assert space.archive is None
    calls = chroma_queries(small)
    outside = [m for m in ids if m in _outside(small)]
    for m in outside[: len(_outside(small)) - 35]:  # 35 left: under the limit, above 3/4
        small.forget(m)
    small.recall("garden boiler", deep=True)
    assert space.archive is None and len(calls) == 1
    for m in [m for m in ids if m in _outside(small)][:6]:  # 29 left: under 3/4 of 40
        small.forget(m)
    small.recall("garden boiler", deep=True)
    assert space.archive is not None and len(calls) == 1
    assert small.stats()["archive_search"] == kind
    _check_copy(small)


def test_an_exact_copy_that_outgrows_its_limit_becomes_a_sketch_copy(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy
) -> None:
    """Past :attr:`EXACT_ARCHIVE_ROWS` the next archive search makes a sketch copy at
    once (Chroma is not asked). It stays one just below the limit again (nothing is
    rebuilt back and forth as a namespace hovers at the limit), and becomes exact again,
    from the rows it holds, at 3/4 of it: search results do not depend on whether the
    namespace was reloaded since."""
    small.EXACT_ARCHIVE_ROWS = 40
    ids = _archive_most(small, clock, 36)
    small.recall("garden boiler", deep=True)
    assert small.stats()["archive_search"] == "exact"
    _archive_most(small, clock, 10, seed=2)  # 46 outside the active tier now
    calls = chroma_queries(small)
    assert not small.stats()["archive_in_memory"]  # dropped; made on the next search
    archived = sorted(_outside(small))[0]
    result = small.recall(small.get(archived).text, deep=True, k=1)
    assert result.ids == [archived] and calls == []
    assert small.stats()["archive_search"] == "sketch"
    _check_copy(small)
    outside = [m for m in ids if m in _outside(small)]
    for m in outside[: len(_outside(small)) - 35]:  # 35 left: under the limit, above 3/4
        small.forget(m)
    small.recall("garden boiler", deep=True)
    assert small.stats()["archive_search"] == "sketch" and calls == []
    _check_copy(small)
    for m in [m for m in ids if m in _outside(small)][:6]:  # 29 left: under 3/4 of 40
        small.forget(m)
    reads = _vector_scans(small)
    small.recall("garden boiler", deep=True)
    assert small.stats()["archive_search"] == "exact" and calls == [] and reads == []
    _check_copy(small)


def test_the_engine_wide_total_drops_the_least_recently_searched(
    small: Oblivion, clock: ManualClock
) -> None:
    for ns in ("a", "b", "c"):
        small.remember_many(_texts(8, 5), categories=["small_talk"] * 8, namespace=ns)
    clock.advance(10 * DAY)
    sizes = {}
    for ns in ("a", "b", "c"):
        small.maintain(namespace=ns)
        sizes[ns] = len(_outside(small, ns))
    assert min(sizes.values()) > 0
    small.ARCHIVE_COPY_TOTAL = sizes["a"] + sizes["b"] + sizes["c"] - 1
    small.COPY_KEEP_SECONDS = 0.0  # any copy may go (the next test keeps recent ones)

    def held() -> set[str]:
        return {ns for ns in "abc" if small._spaces[ns].archive is not None}

    for ns in ("a", "b"):
        small.recall("garden", deep=True, namespace=ns)
    assert held() == {"a", "b"}
    small.recall("garden", deep=True, namespace="a")  # b is now the least recent
    small.recall("garden", deep=True, namespace="c")
    assert held() == {"a", "c"}
    for ns in "abc":  # every namespace still finds its archived memories
        assert small.recall("garden", deep=True, namespace=ns, k=3).searched_archive
        _check_copy(small, ns)


def test_a_recently_searched_copy_is_not_dropped_for_another(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy
) -> None:
    """Room for one copy, two namespaces taking turns: the second searches Chroma while
    the first's copy was searched within ``COPY_KEEP_SECONDS`` (else both would be made
    again on every turn), and takes the room once that copy has been idle longer."""
    for ns in ("a", "b"):
        small.remember_many(_texts(12, 5), categories=["small_talk"] * 12, namespace=ns)
    clock.advance(10 * DAY)
    for ns in ("a", "b"):
        small.maintain(namespace=ns)
    small.ARCHIVE_COPY_TOTAL = max(len(_outside(small, ns)) for ns in "ab")
    small.COPY_KEEP_SECONDS = 3_600.0
    calls = chroma_queries(small)
    small.recall("garden", deep=True, namespace="a")
    assert calls == [] and small.stats(namespace="a")["archive_search"] == "exact"
    for _ in range(2):
        for ns in ("b", "a"):
            assert small.recall("garden", deep=True, namespace=ns, k=3).searched_archive
    assert len(calls) == 2  # b's two searches, through Chroma
    assert small.stats(namespace="a")["archive_search"] == "exact"
    assert small.stats(namespace="b")["archive_search"] == "chroma"
    small.COPY_KEEP_SECONDS = 0.0  # a's copy counts as idle now
    small.recall("garden", deep=True, namespace="b")
    assert len(calls) == 2
    assert not small.stats(namespace="a")["archive_in_memory"]
    assert small.stats(namespace="b")["archive_search"] == "exact"
    for ns in "ab":
        _check_copy(small, ns)


def test_no_copy_is_dropped_for_one_that_would_not_fit_anyway(
    small: Oblivion, clock: ManualClock, chroma_queries: Spy
) -> None:
    small.remember_many(_texts(6, 5), categories=["small_talk"] * 6, namespace="a")
    small.remember_many(_texts(30, 6), categories=["small_talk"] * 30, namespace="b")
    clock.advance(10 * DAY)
    for ns in ("a", "b"):
        small.maintain(namespace=ns)
    sizes = {ns: len(_outside(small, ns)) for ns in "ab"}
    assert sizes["a"] < sizes["b"]
    small.ARCHIVE_COPY_TOTAL = sizes["b"] - 1
    small.COPY_KEEP_SECONDS = 0.0
    small.recall("garden", deep=True, namespace="a")
    calls = chroma_queries(small)
    assert small.recall("garden", deep=True, namespace="b").searched_archive
    assert len(calls) == 1
    assert small.stats(namespace="a")["archive_search"] == "exact"  # kept: dropping it
    # would not have made room


def test_the_copy_through_the_real_stack(
    tmp_path: Path, real_embedder: Any, chroma_queries: Spy
) -> None:
    """Real model, Chroma on disk: the copy ranks archived memories as Chroma does, and
    after a reopen it is rebuilt from the stored vectors."""
    clock = ManualClock()
    policy = Policy.template("balanced").replace(maintain_every=0)
    notes = [
        "The boiler service is booked for the first Monday of March",
        "Our dentist moved her practice to Elm Street",
        "I paid the piano teacher for the whole term",
        "The printer on the second floor jams with thick paper",
        "We renewed the car insurance with a cheaper provider",
        "My sister's wedding is in Porto next June",
    ]
    questions = ["When is the heating checked?", "Where is the dentist now?"]
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock, policy=policy) as mem:
        mem.remember_many(notes, categories=["small_talk"] * len(notes))
        clock.advance(10 * DAY)
        assert len(mem.maintain().archived) == len(notes)
        exact = [mem.recall(q, deep=True, k=2, feedback=False).ids for q in questions]
        mem.EXACT_ARCHIVE_ROWS = 0
        mem.SKETCH_ARCHIVE_ROWS = 0
        mem._spaces[mem.default_namespace].archive = None
        assert [mem.recall(q, deep=True, k=2, feedback=False).ids for q in questions] == exact
        assert [ids[0] for ids in exact] == [
            r.id for r in mem.records() if r.text in (notes[0], notes[1])
        ]
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock, policy=policy) as mem:
        calls = chroma_queries(mem)
        again = [mem.recall(q, deep=True, k=2, feedback=False).ids for q in questions]
        assert again == exact and calls == []
        _check_copy(mem)


def test_the_engine_wide_total_counts_columns_held(small: Oblivion, clock: ManualClock) -> None:
    """The total counted rows while each copy held at least 64 columns: 200 namespaces of
    3 archived memories counted 600 vectors and held 19.7 MB (14 times the allowance).
    It counts allocated columns now, and what is held stays within it."""
    for ns in ("a", "b", "c"):
        small.remember_many(_texts(8, 5), categories=["small_talk"] * 8, namespace=ns)
    clock.advance(10 * DAY)
    for ns in ("a", "b", "c"):
        small.maintain(namespace=ns)
    small.COPY_KEEP_SECONDS = 0.0
    small.ARCHIVE_COPY_TOTAL = 20
    for ns in ("a", "b", "c", "a", "c", "b"):
        small.recall("garden", deep=True, namespace=ns)
        held = [small._spaces[n].archive for n in "abc"]
        assert sum(c.capacity for c in held if c is not None) <= small.ARCHIVE_COPY_TOTAL
    # a total below a copy's smallest allocation (8 rows) holds none, however small
    # the archive
    small.remember_many(_texts(3, 7), categories=["small_talk"] * 3, namespace="d")
    clock.advance(10 * DAY)
    small.maintain(namespace="d")
    for ns in ("a", "b", "c"):
        small.unload(namespace=ns)
    assert 0 < len(_outside(small, "d")) < 7
    small.ARCHIVE_COPY_TOTAL = 7
    assert small.recall("garden", deep=True, namespace="d").searched_archive
    assert not small.stats(namespace="d")["archive_in_memory"]
