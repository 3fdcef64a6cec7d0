"""OblivionStore.batch(): consecutive puts of new keys are one engine write, with the
semantics of running the ops one by one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from langgraph.store.base import GetOp, Op, PutOp, SearchOp

from oblivion_core import InvalidInputError, Oblivion
from oblivion_core.testing import memory
from oblivion_langchain import OblivionStore
from oblivion_langchain._convert import encode_namespace

NS = ("memories", "sam")
TEA = "My favourite drink is tea."
COFFEE = "My favourite drink is coffee."


class _Spy:
    """Counts the engine's remember() and remember_many() calls (remember() goes
    through remember_many(), so a per-item write counts once in each)."""

    def __init__(self, engine: Oblivion, monkeypatch: pytest.MonkeyPatch) -> None:
        self.remember = 0
        self.many: list[int] = []  # the size of each remember_many() call
        real_one, real_many = engine.remember, engine.remember_many

        def one(*args: Any, **kwargs: Any) -> Any:
            self.remember += 1
            return real_one(*args, **kwargs)

        def many(texts: Any, **kwargs: Any) -> Any:
            self.many.append(len(texts))
            return real_many(texts, **kwargs)

        monkeypatch.setattr(engine, "remember", one)
        monkeypatch.setattr(engine, "remember_many", many)


@pytest.fixture
def store(engine: Oblivion) -> OblivionStore:
    return OblivionStore(engine, index={"fields": ["text"]})


def _puts(n: int, namespace: tuple[str, ...] = NS) -> list[Op]:
    return [PutOp(namespace, f"k{i}", {"text": f"note {i} about tea", "n": i}) for i in range(n)]


def _check_stored(store: OblivionStore, n: int) -> None:
    for i in range(n):
        item = store.get(NS, f"k{i}")
        assert item is not None
        assert (item.namespace, item.key, item.value) == (
            NS,
            f"k{i}",
            {"text": f"note {i} about tea", "n": i},
        )
        assert item.created_at == item.updated_at and item.created_at.tzinfo is not None
    assert store.oblivion.count(namespace=encode_namespace(NS)) == n
    found = store.search(NS, query=f"note {n - 1} about tea", limit=n)
    assert {h.key for h in found} == {f"k{i}" for i in range(n)}
    assert found[0].key == f"k{n - 1}"


# ==================================================================== one engine write
def test_a_batch_of_new_puts_is_one_engine_write(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """N puts of new keys: one remember_many() of N items, no remember(); every item
    is stored with its value, key, namespace and times, and search finds them."""
    spy = _Spy(engine, monkeypatch)
    results = store.batch(_puts(20))
    assert results == [None] * 20
    assert (spy.remember, spy.many) == (0, [20])
    _check_stored(store, 20)


async def test_abatch_of_new_puts_is_one_engine_write(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """abatch() takes the same path as batch()."""
    spy = _Spy(engine, monkeypatch)
    results = await store.abatch(_puts(20))
    assert results == [None] * 20
    assert (spy.remember, spy.many) == (0, [20])
    _check_stored(store, 20)


def test_hashed_and_unindexed_keys_are_batched_too(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keys the engine cannot take as ids keep their key; unindexed puts form their
    own group (the engine's supersede is one per call) and stay out of query search."""
    spy = _Spy(engine, monkeypatch)
    keys = ["", "lgkey:x", "x" * 600, "plain"]
    store.batch(
        [PutOp(NS, k, {"text": f"tea {i}"}) for i, k in enumerate(keys)]
        + [PutOp(NS, f"raw{i}", {"text": f"tea raw {i}"}, index=False) for i in range(3)]
    )
    assert (spy.remember, spy.many) == (0, [4, 3])
    for i, k in enumerate(keys):
        item = store.get(NS, k)
        assert item is not None and (item.key, item.value) == (k, {"text": f"tea {i}"})
    assert store.get(NS, "raw2").value == {"text": "tea raw 2"}  # type: ignore[union-attr]
    hits = store.search(NS, query="tea", limit=10)
    assert sorted(h.key for h in hits) == sorted(keys)


def test_puts_into_several_namespaces_are_one_write_per_run(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group is one namespace: each run of consecutive puts into one is one write."""
    spy = _Spy(engine, monkeypatch)
    other = ("memories", "ana")
    store.batch([*_puts(3), *_puts(4, other), PutOp(NS, "k9", {"text": "x"})])
    assert spy.many == [3, 4, 1] and spy.remember == 1
    assert [len(store.search(ns, limit=10)) for ns in (NS, other)] == [4, 4]


# ==================================================================== same semantics
def test_the_last_put_of_a_key_in_a_batch_wins(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key put twice in one batch holds the later value, stored once."""
    spy = _Spy(engine, monkeypatch)
    store.batch(
        [
            PutOp(NS, "a", {"text": "first"}),
            PutOp(NS, "b", {"text": "other"}),
            PutOp(NS, "a", {"text": "second"}),
        ]
    )
    assert spy.many == [2] and spy.remember == 0
    assert store.get(NS, "a").value == {"text": "second"}  # type: ignore[union-attr]
    assert engine.count(namespace=encode_namespace(NS)) == 2


def test_a_key_put_again_in_a_batch_is_the_newest_statement(store: OblivionStore) -> None:
    """As one by one: tea, then coffee makes it stale, then tea again is the newest."""
    store.batch([PutOp(NS, "a", {"text": TEA}), PutOp(NS, "b", {"text": COFFEE})])
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["b"]
    store.batch(
        [
            PutOp(NS, "c", {"text": TEA}),
            PutOp(NS, "d", {"text": COFFEE}),
            PutOp(NS, "c", {"text": TEA}),
        ]
    )
    assert [i.key for i in store.search(NS, query="favourite drink")] == ["c"]


def test_a_get_after_a_put_in_one_batch_sees_the_put(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Puts before a read are stored before it runs; search sees them too."""
    spy = _Spy(engine, monkeypatch)
    results = store.batch(
        [
            PutOp(NS, "a", {"text": "green tea"}),
            PutOp(NS, "b", {"text": "black coffee"}),
            GetOp(NS, "a"),
            SearchOp(NS, query="coffee"),
            PutOp(NS, "c", {"text": "milk"}),
            GetOp(NS, "c"),
        ]
    )
    assert results[:2] == [None, None] and results[4] is None
    assert results[2].value == {"text": "green tea"}  # type: ignore[union-attr]
    assert [h.key for h in results[3]][:1] == ["b"]  # type: ignore[union-attr]
    assert results[5].value == {"text": "milk"}  # type: ignore[union-attr]
    assert sorted(spy.many) == [1, 2] and spy.remember == 1


def test_replacements_and_deletes_in_a_batch_keep_their_semantics(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New puts around an edit of an existing key and a delete: the edit keeps the
    item's created_at, the delete forgets, the new keys are written in groups."""
    store.put(NS, "old", {"text": "old text"})
    store.put(NS, "gone", {"text": "to delete"})
    created = store.get(NS, "old").created_at  # type: ignore[union-attr]
    spy = _Spy(engine, monkeypatch)
    results = store.batch(
        [
            PutOp(NS, "n1", {"text": "new one"}),
            PutOp(NS, "n2", {"text": "new two"}),
            PutOp(NS, "old", {"text": "old text edited"}),
            PutOp(NS, "gone", None),
            PutOp(NS, "n3", {"text": "new three"}),
            PutOp(NS, "n4", {"text": "new four"}),
            PutOp(NS, "n1", None),
            GetOp(NS, "old"),
            GetOp(NS, "gone"),
        ]
    )
    assert results[:7] == [None] * 7
    assert results[7].value == {"text": "old text edited"}  # type: ignore[union-attr]
    assert results[7].created_at == created  # type: ignore[union-attr]
    assert results[8] is None
    assert spy.many == [2, 2] and spy.remember == 0
    keys = sorted(h.key for h in store.search(NS, limit=10))
    assert keys == ["n2", "n3", "n4", "old"]


def test_a_key_stored_by_another_writer_meanwhile_is_not_lost(
    store: OblivionStore, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine refuses the group if another writer took one of its keys since it
    was read: each put is then made on its own (the taken key edited), nothing lost
    and nothing stored twice."""
    real_many = engine.remember_many
    space = encode_namespace(NS)

    def racing(texts: Any, **kwargs: Any) -> Any:
        if len(texts) > 1:  # another writer stores k1 just before the group is written
            real_many(["someone else's k1"], ids=["k1"], namespace=space)
        return real_many(texts, **kwargs)

    monkeypatch.setattr(engine, "remember_many", racing)
    assert store.batch(_puts(5)) == [None] * 5
    monkeypatch.setattr(engine, "remember_many", real_many)
    _check_stored(store, 5)


def test_bad_input_in_a_batch_still_changes_nothing(store: OblivionStore) -> None:
    """Validation runs before any op: a bad op after new puts stores none of them."""
    with pytest.raises(InvalidInputError):
        store.batch([*_puts(3), PutOp(NS, "bad", {"text": "x\x00y"})])
    assert store.search(NS) == []


# ==================================================================== vs one by one
_TEXTS = [TEA, COFFEE, "My favourite drink is milk.", "I live in Leeds.", "I live in York."]
_OPS = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "put", "unindexed", "delete", "get"]),
        st.sampled_from([("u", "1"), ("u", "2")]),
        st.sampled_from(["a", "b", "c", "d"]),
        st.sampled_from(_TEXTS),
    ),
    max_size=12,
)


def _op(kind: str, ns: tuple[str, ...], key: str, text: str) -> Op:
    if kind == "get":
        return GetOp(ns, key)
    if kind == "delete":
        return PutOp(ns, key, None)
    return PutOp(ns, key, {"text": text}, index=False if kind == "unindexed" else None)


def _state(store: OblivionStore) -> Any:
    out = []
    for ns in store.list_namespaces():
        listed = sorted((h.key, h.value["text"]) for h in store.search(ns, limit=20))
        found = [h.key for h in store.search(ns, query="favourite drink live", limit=20)]
        out.append((ns, listed, sorted(found)))
    return out


def _run(batches: list[list[Op]], one_by_one: bool) -> tuple[list[Any], Any]:
    store = OblivionStore(memory(), index={"fields": ["text"]}, feedback=False)
    run: Callable[[list[Op]], list[Any]] = store.batch
    results: list[Any] = []
    for ops in batches:
        if one_by_one:
            results.extend(r for op in ops for r in run([op]))
        else:
            results.extend(run(ops))
    got = [(r.key, r.value) if r is not None else None for r in results]
    state = _state(store)
    store.oblivion.close()
    return got, state


@settings(max_examples=40, deadline=None)
@given(first=_OPS, second=_OPS)
@example(  # three restatements chain in a batch as one by one (then the newest edited)
    first=[
        ("put", ("u", "1"), "b", "My favourite drink is tea."),
        ("put", ("u", "1"), "c", "My favourite drink is tea."),
        ("put", ("u", "1"), "a", "My favourite drink is tea."),
    ],
    second=[("put", ("u", "1"), "a", "I live in Leeds.")],
)
def test_a_batch_does_what_its_ops_do_one_by_one(
    first: list[tuple[str, tuple[str, ...], str, str]],
    second: list[tuple[str, tuple[str, ...], str, str]],
) -> None:
    """Two batches of puts, deletes and gets leave the items, the query-searchable
    (not stale) items and the gets' results that the same ops run one by one do."""
    batches = [[_op(*o) for o in first], [_op(*o) for o in second]]
    assert _run(batches, one_by_one=False) == _run(batches, one_by_one=True)
