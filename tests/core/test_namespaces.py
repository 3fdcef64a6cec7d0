"""Namespaces: isolated memory spaces inside one store."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import InvalidInputError, Oblivion, UnknownNamespaceError

WORDS = [
    "apple",
    "river",
    "violin",
    "falcon",
    "copper",
    "meadow",
    "lantern",
    "glacier",
    "pepper",
    "saddle",
]
sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


@settings(max_examples=25)
@given(
    a_texts=st.lists(sentences, min_size=1, max_size=8),
    b_texts=st.lists(sentences, min_size=1, max_size=8),
    queries=st.lists(sentences, min_size=1, max_size=4),
)
def test_nothing_crosses_namespaces(
    fresh: Any, a_texts: list[str], b_texts: list[str], queries: list[str]
) -> None:
    """Whatever is stored, a recall in one namespace only returns that namespace's memories."""
    with fresh() as mem:
        a_ids = {r.id for r in mem.remember_many(a_texts, namespace="alice")}
        b_ids = {r.id for r in mem.remember_many(b_texts, namespace="bob")}
        for q in queries:
            for ns, own in (("alice", a_ids), ("bob", b_ids)):
                result = mem.recall(q, namespace=ns, deep=True, k=20)
                assert set(result.ids) <= own
                assert all(it.namespace == ns for it in result)
        assert mem.count(namespace="alice") == len(a_texts)
        assert mem.count(namespace="bob") == len(b_texts)


def test_same_id_in_two_namespaces(mem: Oblivion) -> None:
    """The same id can live in two namespaces independently."""
    mem.remember("alice likes tea", id="pref", namespace="alice")
    mem.remember("bob likes coffee", id="pref", namespace="bob")
    assert mem.get("pref", namespace="alice").text == "alice likes tea"
    assert mem.get("pref", namespace="bob").text == "bob likes coffee"
    mem.forget("pref", namespace="alice")
    assert mem.get("pref", namespace="bob").text == "bob likes coffee"


def test_operations_on_one_namespace_leave_others_alone(mem: Oblivion, snapshot: Any) -> None:
    """Boosts, invalidation and maintenance in one namespace change nothing in another."""
    a = mem.remember("alice likes tea", namespace="alice")
    mem.remember("bob likes tea too", namespace="bob")
    before = snapshot(mem)["bob"]
    mem.recall("likes tea", namespace="alice")
    mem.confirm(a.id, namespace="alice")
    mem.invalidate(a.id, namespace="alice")
    mem.maintain(namespace="alice")
    assert snapshot(mem)["bob"] == before


def test_namespaces_are_listed(mem: Oblivion) -> None:
    """namespaces() lists the default namespace and every one written to."""
    assert mem.namespaces() == ["default"]
    mem.remember("x marks the spot", namespace="work")
    assert mem.namespaces() == ["default", "work"]


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.recall("tea", namespace="nowhere"),
        lambda m: m.get("x", namespace="nowhere"),
        lambda m: m.maintain(namespace="nowhere"),
        lambda m: m.stats(namespace="nowhere"),
        lambda m: m.count(namespace="nowhere"),
        lambda m: m.history(namespace="nowhere"),
        lambda m: m.records(namespace="nowhere"),
        lambda m: m.forget("x", namespace="nowhere"),
        lambda m: m.mark_used(["x"], namespace="nowhere"),
        lambda m: m.confirm("x", namespace="nowhere"),
        lambda m: m.invalidate("x", namespace="nowhere"),
        lambda m: m.edit("x", "new", namespace="nowhere"),
    ],
)
def test_unknown_namespace_names_the_known_ones(mem: Oblivion, call: Any) -> None:
    """Reading an unknown namespace raises UnknownNamespaceError listing the known ones."""
    mem.remember("alice likes tea", namespace="alice")
    with pytest.raises(UnknownNamespaceError) as err:
        call(mem)
    message = str(err.value)
    assert "'nowhere'" in message
    assert "'alice'" in message
    assert "'default'" in message
    assert isinstance(err.value, KeyError)
    # advice that fits a read or a delete as well as a write
    assert "check its name" in message and "in namespaces()" in message
    assert err.value.problem == (
        "namespace 'nowhere' has no memories yet (known namespaces: 'alice', 'default')"
    )


def test_an_unknown_namespace_names_at_most_ten_known_ones(mem: Oblivion) -> None:
    """A store of a namespace per user put every user's id in the error (3,000 users:
    42 kB, in logs and on stderr)."""
    mem.remember_many(["hello"], namespace="user-00")
    for i in range(1, 30):
        mem.remember(f"note {i}", namespace=f"user-{i:02d}")
    with pytest.raises(UnknownNamespaceError) as err:
        mem.recall("hello", namespace="nowhere")
    message = str(err.value)
    assert "'user-08'" in message and "'user-09'" not in message
    assert "... (31 in all: namespaces() lists them)" in message


@pytest.mark.parametrize("namespace", ["", "   ", 5, b"work", "x" * 257])
def test_invalid_namespace_names_are_rejected(mem: Oblivion, namespace: Any) -> None:
    """Empty, non-string and over-long namespace names raise InvalidInputError."""
    with pytest.raises(InvalidInputError, match="namespace"):
        mem.remember("hello there", namespace=namespace)
    assert mem.namespaces() == ["default"]


@settings(max_examples=20)
@given(namespace=st.text(min_size=1, max_size=60).filter(lambda s: s.strip() and "\x00" not in s))
def test_any_reasonable_namespace_name_works(fresh: Any, namespace: str) -> None:
    """Unicode, punctuation and spaces in namespace names round-trip through the store."""
    with fresh() as mem:
        rec = mem.remember("the key is under the mat", namespace=namespace)
        assert mem.recall("key mat", namespace=namespace).ids == [rec.id]
        assert namespace in mem.namespaces()


def test_custom_default_namespace(fresh: Any) -> None:
    """The namespace given to the constructor is used when a call names none."""
    with fresh(namespace="tenant-7") as mem:
        rec = mem.remember("tenant seven notes")
        assert rec.namespace == "tenant-7"
        assert mem.namespaces() == ["tenant-7"]
