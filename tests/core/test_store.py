"""The VectorStore contract: every Chroma backend (ephemeral, embedded on disk, a real
`chroma run` server) stores, finds, overwrites and deletes the same way."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from oblivion_core import InvalidInputError, VectorStore, VectorStoreError
from oblivion_core.store import CHECK_BATCH, MAX_WRITE_BYTES, _write_spans, collection_name


@pytest.fixture(
    params=[
        "ephemeral",
        pytest.param("embedded", marks=pytest.mark.integration),
        pytest.param("server", marks=pytest.mark.server),
    ]
)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    """One VectorStore per backend; a unique prefix keeps shared clients apart."""
    if request.param == "ephemeral":
        vs = VectorStore.in_memory()
    elif request.param == "embedded":
        vs = VectorStore.embedded(tmp_path / "chroma")
    else:
        host, port = request.getfixturevalue("chroma_server")
        vs = VectorStore.server(host, port, prefix=uuid.uuid4().hex[:8])
    yield vs
    for ns in ("ns", "other"):
        vs.drop(ns)


def test_in_memory_stores_are_apart_and_emptied_on_close() -> None:
    """Two ``VectorStore.in_memory()`` stores share the process's in-memory Chroma but
    not their records, and one closed leaves no collection of its own behind."""
    a, b = VectorStore.in_memory(), VectorStore.in_memory()
    a.add("ns", ["m0"], _unit(1), ["text"])
    assert (a.count("ns"), b.count("ns")) == (1, 0)
    names = {c.name for c in a.client.list_collections()}
    assert any(n.startswith(a.prefix) for n in names)
    a.close()
    left = {c.name for c in b.client.list_collections()}
    assert not any(n.startswith(a.prefix) for n in left)
    b.close()


def _unit(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_add_count_and_query(store: VectorStore) -> None:
    """Added records are counted and a stored vector finds itself with similarity ~1."""
    vecs = _unit(5)
    store.add("ns", [f"m{i}" for i in range(5)], vecs, [f"text {i}" for i in range(5)])
    assert store.count("ns") == 5
    ids, sims = store.query("ns", vecs[3], 2)
    assert ids[0] == "m3"
    assert sims[0] == pytest.approx(1.0, abs=1e-4)
    assert sims[0] >= sims[1]


def test_add_overwrites_an_existing_id(store: VectorStore) -> None:
    """Adding an id again replaces its vector (upsert), the count stays the same."""
    a, b = _unit(2, seed=1)
    store.add("ns", ["x"], a[None, :], ["first"])
    store.add("ns", ["x"], b[None, :], ["second"])
    assert store.count("ns") == 1
    assert np.allclose(store.vectors("ns", ["x"])["x"], b, atol=1e-6)


@pytest.mark.parametrize("made", [False, True])
def test_a_checked_batch_overwrites_the_ids_it_holds(store: VectorStore, made: bool) -> None:
    """A batch of given ids large enough to be checked (one ``get``) replaces the
    records Chroma holds under them and adds the rest; ids the caller says it made are
    added as they are."""
    n = CHECK_BATCH + 3
    ids = [f"m{i}" for i in range(n)]
    store.add("ns", ids[:2], _unit(2, seed=5), ["old 0", "old 1"])
    new = _unit(n, seed=6)
    store.add("ns", ids, new, [f"new {i}" for i in range(n)], made=ids[2:] if made else ())
    assert store.count("ns") == n
    got = store.vectors("ns", ids)
    assert all(np.allclose(got[m], new[i], atol=1e-6) for i, m in enumerate(ids))


def test_delete_and_missing_ids(store: VectorStore) -> None:
    """Deleted ids disappear; unknown ids are ignored by delete() and absent from vectors()."""
    store.add("ns", ["a", "b"], _unit(2), ["a", "b"])
    store.delete("ns", ["a", "nope"])
    assert store.count("ns") == 1
    assert set(store.vectors("ns", ["a", "b", "nope"])) == {"b"}


def test_namespaces_are_separate_collections(store: VectorStore) -> None:
    """A record in one namespace is never returned by a query on another."""
    store.add("ns", ["a"], _unit(1), ["a"])
    store.add("other", ["b"], _unit(1, seed=3), ["b"])
    assert store.query("ns", _unit(1, seed=3)[0], 10)[0] == ["a"]
    assert store.count("other") == 1


def test_query_on_empty_collection_returns_nothing(store: VectorStore) -> None:
    """An empty namespace, or n=0, gives no results instead of an error."""
    assert store.query("ns", _unit(1)[0], 5) == ([], [])
    store.add("ns", ["a"], _unit(1), ["a"])
    assert store.query("ns", _unit(1)[0], 0) == ([], [])


def test_batches_larger_than_the_client_limit(store: VectorStore) -> None:
    """Writes larger than the client's max batch size are split, none lost."""
    store.max_batch = 7
    n = 30
    store.add("ns", [f"m{i}" for i in range(n)], _unit(n), [str(i) for i in range(n)])
    assert store.count("ns") == n
    assert len(store.vectors("ns", [f"m{i}" for i in range(n)])) == n
    store.delete("ns", [f"m{i}" for i in range(n)])
    assert store.count("ns") == 0


@given(
    sizes=st.lists(st.integers(0, 3 * 2**20), min_size=0, max_size=60),
    ascii_text=st.booleans(),
    dim=st.sampled_from([2, 384, 3_072]),
    max_batch=st.integers(1, 20),
)
def test_writes_are_cut_by_count_and_by_request_size(
    sizes: list[int], ascii_text: bool, dim: int, max_batch: int
) -> None:
    """The writes of a batch follow one another over every record once, each of at most
    ``max_batch`` records and, but for a record alone, at most MAX_WRITE_BYTES of
    estimated request: a server refuses a larger body whatever its batch size."""
    texts = [("a" if ascii_text else "é") * n for n in sizes]
    ids = [f"m{k}" for k in range(len(texts))]
    metas = [{"n": k, "tag": "x" * (k % 3)} for k in range(len(texts))]
    spans = _write_spans(ids, texts, metas, dim, max_batch)
    ends = [b for _, b in spans]
    assert [a for a, _ in spans] == ([0, *ends[:-1]] if ids else [])
    assert ends[-1:] == ([len(ids)] if ids else [])
    one = _write_spans(ids[:1], texts[:1], metas[:1], dim, max_batch)
    assert one == ([(0, 1)] if ids else [])
    for a, b in spans:
        assert 0 < b - a <= max_batch
        if b - a > 1:
            body = sum(22 * dim + len(texts[k].encode()) for k in range(a, b))
            assert body <= MAX_WRITE_BYTES


@pytest.mark.server
def test_a_record_too_large_for_a_server_request_is_named(
    chroma_server: tuple[str, int],
) -> None:
    """A server's refusal of one record too large for a request (HTTP 413, "Payload too
    large") read as a full disk, with advice to drop the collection; it names the size."""
    host, port = chroma_server
    vs = VectorStore.server(host, port, prefix=uuid.uuid4().hex[:8], timeout=120.0)
    try:
        with pytest.raises(VectorStoreError, match="too large a request") as err:
            vs.add("ns", ["a"], _unit(1), ["a"], metadatas=[{"blob": "y" * 45 * 2**20}])
        assert "free space" not in str(err.value) and "drop the collection" not in str(err.value)
        assert vs.count("ns") == 0
    finally:
        vs.drop("ns")


def test_documents_false_keeps_texts_out_of_chroma(store: VectorStore) -> None:
    """By default each record's text is its Chroma document, kept up to date; with
    ``documents=False`` new records carry none (Oblivion reads texts from its state)."""
    col = store.collection("ns")
    store.add("ns", ["a"], _unit(1), ["first text"])
    store.add("ns", ["a"], _unit(1), ["second text"])
    assert col.get(ids=["a"], include=["documents"])["documents"] == ["second text"]
    store.documents = False
    store.add("ns", ["b"], _unit(1, seed=2), ["third text"])
    assert col.get(ids=["b"], include=["documents"])["documents"] == [None]
    assert store.query("ns", _unit(1, seed=2)[0], 1)[0] == ["b"]
    # a record overwritten keeps no text it held before (an edit that removed a secret)
    store.add("ns", ["a"], _unit(1, seed=3), ["fourth text"])
    assert col.get(ids=["a"], include=["documents"])["documents"] == [""]


def test_documents_flag_is_checked() -> None:
    """A non-boolean ``documents`` is refused with the values it accepts."""
    import chromadb

    with pytest.raises(InvalidInputError, match="documents must be True or False"):
        VectorStore(chromadb.EphemeralClient(), documents="yes")  # type: ignore[arg-type]


def test_embedded_store_without_documents(tmp_path: Path) -> None:
    """``VectorStore.embedded(path, documents=False)`` through Oblivion: the collection on
    disk holds no texts, recall returns them all the same, and after reopening too."""
    from oblivion_core import Oblivion
    from oblivion_core.testing import HashEmbedder

    def open_() -> Oblivion:
        store = VectorStore.embedded(tmp_path / "chroma", documents=False)
        return Oblivion(tmp_path / "state", vector_store=store, embedder=HashEmbedder(16))

    mem = open_()
    mid = mem.remember("The staging database moved to Frankfurt.").id
    got = mem.store.collection(mem.default_namespace).get(ids=[mid], include=["documents"])
    assert got["documents"] == [None]
    mem.close()
    mem = open_()
    item = mem.recall("staging database", k=1, deep=True).items[0]
    assert (item.id, item.text) == (mid, "The staging database moved to Frankfurt.")
    mem.close()
    # a store written with documents, then edited without: Chroma keeps no old text
    with Oblivion(tmp_path / "both", embedder=HashEmbedder(16)) as mem:
        mem.remember("My card number is 4111 1111 1111 1111", id="card")
    store = VectorStore.embedded(tmp_path / "both" / "chroma", documents=False)
    with Oblivion(tmp_path / "both", vector_store=store, embedder=HashEmbedder(16)) as mem:
        mem.edit("card", "My card is on file (number removed)")
        got = mem.store.collection(mem.default_namespace).get(ids=["card"], include=["documents"])
        assert "4111" not in str(got["documents"])


VALID_CHROMA_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")


@given(namespace=st.text(min_size=1, max_size=300))
def test_collection_names_are_valid_and_distinct(namespace: str) -> None:
    """Any namespace string maps to a valid Chroma collection name, stable and distinct."""
    name = collection_name(namespace)
    assert VALID_CHROMA_NAME.match(name)
    assert ".." not in name
    assert collection_name(namespace) == name
    assert collection_name(namespace + "x") != name


def test_unreachable_server_says_what_to_do() -> None:
    """Connecting to a port where no Chroma server runs raises VectorStoreError (as the
    same outage does once the store is in use; it was a plain StoreError) with a hint,
    and no doubled punctuation from Chroma's own message."""
    with pytest.raises(VectorStoreError, match=r"chroma run --port 1") as caught:
        VectorStore.server("localhost", 1)
    assert "?." not in str(caught.value)


def test_wraps_any_client() -> None:
    """A VectorStore can wrap a Chroma client the caller already has."""
    import chromadb

    vs = VectorStore(chromadb.EphemeralClient(), prefix="wrap-" + uuid.uuid4().hex[:6])
    vs.add("ns", ["a"], _unit(1), ["a"])
    assert vs.count("ns") == 1
    vs.drop("ns")


@pytest.mark.parametrize(
    "prefix", ["my app/", "-lead", ".dot", "x" * 451, "ünï", "team..bot", "a.."]
)
def test_a_prefix_chroma_cannot_name_collections_with_is_refused(prefix: str) -> None:
    """A prefix Chroma would refuse in every collection name is refused at once, with
    Chroma's rules, instead of failing each write later with advice about the disk."""
    import chromadb

    with pytest.raises(InvalidInputError, match="prefix must be letters, digits"):
        VectorStore(chromadb.EphemeralClient(), prefix=prefix)


@pytest.mark.parametrize("prefix", ["", "app", "app.v1_2-", "A" * 450])
def test_prefixes_chroma_accepts_are_accepted(prefix: str) -> None:
    import chromadb

    assert VectorStore(chromadb.EphemeralClient(), prefix=prefix).prefix == prefix


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="aZ9._-/ é", max_size=12))
@example("a..b")
def test_a_prefix_is_accepted_exactly_when_chroma_takes_its_collection_names(prefix: str) -> None:
    """The prefix rule is Chroma's: "a..b" used to pass and fail every write later."""
    import chromadb

    client = chromadb.EphemeralClient()
    name = prefix + collection_name("ns")
    try:
        client.get_or_create_collection(name, embedding_function=None)
        chroma_takes = True
        client.delete_collection(name)
    except Exception:
        chroma_takes = False
    try:
        VectorStore(client, prefix=prefix)
        accepted = True
    except InvalidInputError:
        accepted = False
    assert accepted == chroma_takes


def _own_collections(store: VectorStore) -> list[str]:
    names = [getattr(c, "name", c) for c in store.client.list_collections()]
    return [n for n in names if n.startswith(store.prefix)]


def test_closing_an_in_memory_engine_drops_its_collections() -> None:
    """The in-process Chroma is shared by every in-memory engine and outlives them: a
    closed one's collections stayed (41 for 1 live engine after 40 closed, +120 MB)."""
    from oblivion_core.testing import memory

    keep = memory()
    keep.remember("the one that stays open")
    mem = memory()
    mem.remember("kept in a collection of its own", namespace="other")
    store = mem.store
    assert len(_own_collections(store)) == 1
    mem.close()
    assert _own_collections(store) == []
    assert keep.recall("stays open", deep=True).texts == ["the one that stays open"]
    keep.close()


def test_an_engine_dropped_without_close_releases_its_chroma() -> None:
    """Its SQLite lock and threads were let go of on collection, its Chroma client never
    (11 open files each, for the life of the process)."""
    import gc
    import time

    from oblivion_core.testing import memory

    mem = memory()
    mem.remember("dropped without close()")
    store = mem.store
    assert len(_own_collections(store)) == 1
    del mem
    for _ in range(100):  # its write-behind timer holds it for up to a second
        gc.collect()
        if not _own_collections(store):
            break
        time.sleep(0.05)
    assert _own_collections(store) == []
