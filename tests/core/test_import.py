"""Vectors computed already: ``remember_many(embeddings=)``, ``remember(embedding=)``,
and ``import_chroma``, which makes a Chroma collection's records memories keeping their
vectors (checked to be the store's model's), and ``oblivion import``."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from oblivion_core import (
    EmbeddingError,
    FastEmbedEmbedder,
    ImportReport,
    InvalidInputError,
    ManualClock,
    Oblivion,
    StoreCorruptError,
    VectorStore,
    VectorStoreError,
)
from oblivion_core.cli import main
from oblivion_core.embedding import given_vectors
from oblivion_core.testing import HashEmbedder, memory

TEXTS = [
    "The user's dog is called Rex.",
    "Always reply in Spanish.",
    "The office moved to Porto in May.",
    "Dinner with Ana is on Friday at eight.",
]


@pytest.fixture
def client(tmp_path: Path) -> Any:
    """A real embedded Chroma on disk: the app's own, which the imports read."""
    return chromadb.PersistentClient(str(tmp_path / "app-chroma"))


def _collection(client: Any, name: str, texts: list[Any], vectors: Any, **extra: Any) -> Any:
    col = client.create_collection(name, metadata={"hnsw:space": "cosine"})
    ids = extra.pop("ids", [f"doc-{i}" for i in range(len(texts))])
    col.add(ids=ids, embeddings=np.asarray(vectors), documents=texts, **extra)
    return col


# ------------------------------------------------------------------ embeddings given


def test_given_vectors_are_stored_instead_of_the_texts_embedding(tmp_path: Path) -> None:
    """A memory stored with another text's vector is found by that text's words, after
    a reopen too: the vector given, not its own text's, is what recall searches."""
    hasher = HashEmbedder()
    zebra = hasher.embed_query("striped zebra grazing savanna")
    banana = hasher.embed_query("bananas are yellow")
    with memory(tmp_path / "s", embedder=hasher) as mem:
        calls = hasher.calls
        mem.remember_many(
            ["apples are red", "bananas are yellow"],
            ids=["apple", "banana"],
            embeddings=[zebra, banana],
        )
        assert hasher.calls == calls + 1  # a new store's size check: one text
        mem.remember("cherries are dark", embedding=banana)
        assert hasher.calls == calls + 1  # nothing embedded
        assert mem.recall("striped zebra grazing savanna", k=1)[0].id == "apple"
    with memory(tmp_path / "s", embedder=HashEmbedder()) as again:
        assert again.recall("striped zebra grazing savanna", k=1)[0].id == "apple"


def test_one_memory_with_its_embedding_unscaled(mem: Oblivion) -> None:
    """``remember(embedding=)`` takes a vector of any length (scaled to unit length)."""
    mem.remember("lecture notes on the history of Rome", id="rome")
    vec = 7.5 * np.asarray(mem.embedder.embed_query("quantum chromodynamics"))
    record = mem.remember("notes from Tuesday", embedding=list(vec), id="notes")
    assert record.id == "notes"
    assert mem.recall("quantum chromodynamics", k=1)[0].id == "notes"


@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 8)),
        elements=st.floats(-1e6, 1e6, allow_nan=False),
    )
)
def test_given_vectors_keep_their_direction_at_unit_length(values: Any) -> None:
    """Any finite vectors with no all-zero row come back one per text, of unit length,
    each pointing where it pointed; a zero row is refused, never divided by."""
    n, dim = values.shape
    as_float32 = values.astype(np.float32)
    if np.any(~as_float32.any(axis=1)):
        with pytest.raises(InvalidInputError, match="all-zero vector"):
            given_vectors(values, n, dim, "embeddings")
        return
    out = given_vectors(values.tolist(), n, dim, "embeddings")
    assert out.shape == (n, dim) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    unit = as_float32.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    assert np.allclose(out, unit, atol=1e-5)


@pytest.mark.parametrize(
    ("embeddings", "message"),
    [
        ("not vectors", "one vector per text"),
        ({"a": [1.0]}, "one vector per text"),
        ([[1.0] * 256], "shape (1, 256) for 2 text(s)"),
        ([[1.0] * 256, [1.0] * 255], "not a matrix of numbers"),
        ([[1.0] * 128, [1.0] * 128], "128-d vectors but this store holds 256-d"),
        ([[1.0] * 256, [math.nan] * 256], "NaN or infinite"),
        ([[1.0] * 256, [math.inf] + [0.0] * 255], "NaN or infinite"),
        ([[1.0] * 256, [0.0] * 256], "all-zero vector"),
        ([["a"] * 256, [1.0] * 256], "not a matrix of numbers"),
    ],
)
def test_bad_embeddings_are_refused_and_nothing_is_stored(
    mem: Oblivion, embeddings: Any, message: str
) -> None:
    mem.remember("already here", id="kept")
    with pytest.raises(InvalidInputError, match="embeddings") as err:
        mem.remember_many(["one", "two"], embeddings=embeddings)
    assert message in str(err.value)
    assert [r.id for r in mem.records()] == ["kept"]


def test_a_new_store_checks_given_vectors_against_its_embedder(mem: Oblivion) -> None:
    """A store holding nothing yet checks the size against its embedder's vectors (one
    text embedded), so a store never takes vectors its queries cannot be compared with."""
    with pytest.raises(InvalidInputError, match="384-d vectors but this store holds 256-d"):
        mem.remember("hello there", embedding=[0.1] * 384)
    assert mem.count() == 0
    mem.remember("hello there", embedding=[0.1] * 256)
    assert mem.count() == 1


# ------------------------------------------------------------------ import_chroma


def test_import_keeps_ids_texts_metadata_and_vectors(client: Any) -> None:
    hasher = HashEmbedder()
    col = _collection(
        client,
        "notes",
        TEXTS,
        hasher.embed_documents(TEXTS),
        metadatas=[{"source": "chat", "n": i} for i in range(len(TEXTS))],
    )
    with memory(embedder=hasher) as mem:
        calls = hasher.calls
        report = mem.import_chroma(col, namespace="ana")
        # the model check's call and a new store's size check (one text): the
        # collection's texts were not embedded
        assert hasher.calls == calls + 2
        assert (report.imported, report.already, report.skipped) == (4, 0, {})
        assert not report.reembedded
        records = {r.id: r for r in mem.records(namespace="ana")}
        assert {m: r.text for m, r in records.items()} == {
            f"doc-{i}": t for i, t in enumerate(TEXTS)
        }
        assert records["doc-2"].metadata == {"source": "chat", "n": 2}
        assert mem.recall("What is the dog called?", k=1, namespace="ana")[0].id == "doc-0"
        assert mem.count() == 0  # nothing in the default namespace


def test_a_frameworks_vector_store_is_read_through_its_collection(client: Any) -> None:
    """LangChain's ``Chroma`` and LlamaIndex's ``ChromaVectorStore`` hold their
    collection as ``_collection`` (a property, a private attribute); either is passed
    as it is. Stand-ins here: neither package is a dependency."""
    hasher = HashEmbedder()
    col = _collection(client, "langchain", TEXTS, hasher.embed_documents(TEXTS))

    class LangChainChroma:  # has get() of its own, no count()
        def get(self, **kwargs: Any) -> Any:
            raise AssertionError("the collection is read, not the wrapper")

        @property
        def _collection(self) -> Any:
            return col

    class LlamaIndexChroma:
        def __init__(self) -> None:
            self._collection = col

    with memory(embedder=hasher) as mem:
        assert mem.import_chroma(LangChainChroma(), namespace="lc").imported == 4
        assert mem.import_chroma(LlamaIndexChroma(), namespace="li").imported == 4
        with pytest.raises(InvalidInputError, match="or a vector store holding one"):
            mem.import_chroma(object())


def test_import_skips_records_it_cannot_store_and_says_why(client: Any) -> None:
    hasher = HashEmbedder()
    texts = ["A fine text.", None, "   ", "bad\x00text", "Another fine one."]
    vectors = hasher.embed_documents([t or "x" for t in texts])
    col = _collection(client, "mixed", texts, vectors)
    with memory(embedder=hasher) as mem:
        report = mem.import_chroma(col)
    assert report.imported == 2
    assert set(report.skipped) == {"doc-1", "doc-2", "doc-3"}
    assert "no document text" in report.skipped["doc-1"]
    assert "empty or whitespace" in report.skipped["doc-2"]
    assert "NUL" in report.skipped["doc-3"]
    text = str(report)
    assert "imported 2 of 5 records of collection 'mixed'" in text
    assert "skipped 'doc-1': no document text" in text


def test_records_whose_vectors_cannot_be_stored_are_skipped() -> None:
    """A vector of NaN, of zeros, or of values float32 reads as zeros or infinities
    (Chroma's own client may hold them) is skipped with the reason; the rest of its
    batch is stored."""
    hasher = HashEmbedder()
    good = hasher.embed_documents(TEXTS)
    vectors = np.asarray(good, dtype=np.float64)
    vectors[1] = math.nan
    vectors[2] = 1e-50  # zero in float32
    vectors[3, 0] = 1e300  # infinite in float32

    class Page:
        name = "odd"

        def count(self) -> int:
            return len(TEXTS)

        def get(self, **kwargs: Any) -> Any:
            ids = [f"v{i}" for i in range(len(TEXTS))]
            end = kwargs["offset"] + kwargs["limit"]
            return {
                "ids": ids[kwargs["offset"] : end],
                "documents": TEXTS[kwargs["offset"] : end],
                "metadatas": None,
                "embeddings": vectors[kwargs["offset"] : end],
            }

    with memory(embedder=hasher) as mem:
        report = mem.import_chroma(Page())
        assert report.imported == 1 and [r.id for r in mem.records()] == ["v0"]
        assert sorted(report.skipped) == ["v1", "v2", "v3"]
        assert all("NaN or infinite values, or only zeros" in w for w in report.skipped.values())


def test_an_import_run_again_goes_on_where_it_stopped(client: Any) -> None:
    """Records the namespace holds are counted, not stored twice; an import that
    failed on its second batch is finished by running it again."""
    hasher = HashEmbedder()
    texts = [f"memory number {i} about topic {i % 3}" for i in range(7)]
    col = _collection(client, "many", texts, hasher.embed_documents(texts))

    class Failing:
        name = "many"
        reads = 0

        def count(self) -> int:
            return int(col.count())

        def get(self, **kwargs: Any) -> Any:
            self.reads += 1
            if self.reads == 2:
                raise KeyboardInterrupt
            return col.get(**kwargs)

    with memory(embedder=hasher) as mem:
        with pytest.raises(KeyboardInterrupt):
            mem.import_chroma(Failing(), batch_size=3)
        assert mem.count() == 3  # the first batch, whole
        report = mem.import_chroma(col, batch_size=3)
        assert (report.imported, report.already) == (4, 3)
        assert sorted(r.id for r in mem.records()) == sorted(f"doc-{i}" for i in range(7))
        again = mem.import_chroma(col, batch_size=2)
        assert (again.imported, again.already, again.skipped) == (0, 7, {})


def test_a_failed_read_says_what_is_stored_and_how_to_go_on(client: Any) -> None:
    """Chroma failing on a later batch (a server gone, say) is a VectorStoreError that
    says how many memories are stored; they stay stored."""
    hasher = HashEmbedder()
    texts = [f"memory number {i} about topic {i % 3}" for i in range(5)]
    col = _collection(client, "flaky", texts, hasher.embed_documents(texts))

    class Flaky:
        name = "flaky"

        def count(self) -> int:
            return int(col.count())

        def get(self, **kwargs: Any) -> Any:
            if kwargs["offset"] > 0:
                raise ConnectionError("server closed the connection")
            return col.get(**kwargs)

    with memory(embedder=hasher) as mem:
        with pytest.raises(VectorStoreError, match="from record 2 failed") as err:
            mem.import_chroma(Flaky(), batch_size=2)
        assert "ConnectionError: server closed the connection" in str(err.value)
        assert "the 2 memories imported before are stored" in str(err.value)
        assert mem.count() == 2


def test_one_users_records_of_a_shared_collection_into_their_namespace(client: Any) -> None:
    """``where=`` (Chroma's filter) imports the records it passes: a collection holding
    every user's memories, tagged by user, becomes one namespace per user."""
    hasher = HashEmbedder()
    texts = [f"note {i} of user {'ab'[i % 2]} about the garden" for i in range(9)]
    col = _collection(
        client,
        "shared",
        texts,
        hasher.embed_documents(texts),
        metadatas=[{"user_id": "ab"[i % 2]} for i in range(9)],
    )
    with memory(embedder=hasher) as mem:
        for user in ("a", "b"):
            report = mem.import_chroma(col, where={"user_id": user}, namespace=user, batch_size=2)
            assert report.imported == (5 if user == "a" else 4)
        assert {r.text for r in mem.records(namespace="a")} == set(texts[0::2])
        assert {r.text for r in mem.records(namespace="b")} == set(texts[1::2])
        assert {r.id for r in mem.recall("garden", namespace="b", k=10)} <= {
            f"doc-{i}" for i in range(1, 9, 2)
        }
        none = mem.import_chroma(col, where={"user_id": "c"}, namespace="c")
        assert (none.imported, none.already, none.skipped) == (0, 0, {})
        with pytest.raises(InvalidInputError, match="Chroma refused where="):
            mem.import_chroma(col, where={"user_id": {"$bogus": 1}})
        with pytest.raises(InvalidInputError, match="Chroma refused where="):
            mem.import_chroma(col, where={"$bogus": 1})  # refused by Chroma's Rust side
        with pytest.raises(InvalidInputError, match="where must be a Chroma metadata filter"):
            mem.import_chroma(col, where=[("user_id", "a")])  # type: ignore[arg-type]
        assert mem.count() == 0  # nothing went to the default namespace


def test_llamaindexs_copy_of_each_node_is_left_out(client: Any) -> None:
    """A collection LlamaIndex's ``ChromaVectorStore`` filled holds each node's JSON in
    ``_node_content``: left out by default (it would reach prompts through the
    LlamaIndex adapters), kept with ``drop_keys=()``; the rest of the metadata stays."""
    hasher = HashEmbedder()
    node_json = '{"id_": "n1", "metadata": {"file_name": "a.txt"}, "relationships": {}}'
    col = _collection(
        client,
        "llamaindex",
        TEXTS[:1],
        hasher.embed_documents(TEXTS[:1]),
        ids=["n1"],
        metadatas=[
            {
                "file_name": "a.txt",
                "_node_content": node_json,
                "_node_type": "TextNode",
                "ref_doc_id": "doc-a",
            }
        ],
    )
    with memory(embedder=hasher) as mem:
        mem.import_chroma(col)
        assert mem.get("n1").metadata == {"file_name": "a.txt", "ref_doc_id": "doc-a"}
        mem.import_chroma(col, namespace="all", drop_keys=())
        assert mem.get("n1", namespace="all").metadata["_node_content"] == node_json
        mem.import_chroma(col, namespace="less", drop_keys=["file_name", "_node_content"])
        assert mem.get("n1", namespace="less").metadata == {
            "_node_type": "TextNode",
            "ref_doc_id": "doc-a",
        }
        for bad in ("_node_content", 5, [1], {"_node_content": True}):
            with pytest.raises(InvalidInputError, match="drop_keys must be a list"):
                mem.import_chroma(col, namespace="bad", drop_keys=bad)  # type: ignore[arg-type]


def test_import_refuses_another_models_vectors(client: Any) -> None:
    """Vectors of another model (of the same size, here random ones) are refused before
    anything is stored; reembed=True embeds the texts with the store's model."""
    rng = np.random.default_rng(3)
    col = _collection(client, "foreign", TEXTS, rng.standard_normal((len(TEXTS), 256)))
    with memory() as mem:
        with pytest.raises(EmbeddingError, match="another model's vectors") as err:
            mem.import_chroma(col)
        assert "reembed=True" in str(err.value)
        assert mem.count() == 0
        report = mem.import_chroma(col, reembed=True, category="fact")
        assert report.reembedded and report.imported == 4
        assert "embedded again" in str(report)
        assert {r.category for r in mem.records()} == {"fact"}
        assert mem.recall("What is the dog called?", k=1)[0].id == "doc-0"


def test_import_refuses_vectors_of_another_size(client: Any) -> None:
    col = _collection(client, "wide", TEXTS, np.ones((len(TEXTS), 384)))
    with memory() as mem:
        with pytest.raises(EmbeddingError, match="holds 384-d vectors and this store's"):
            mem.import_chroma(col)
        assert mem.count() == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"collection": "notes"}, "must be a Chroma collection"),
        ({"batch_size": 0}, "batch_size must be an int >= 1"),
        ({"batch_size": True}, "batch_size must be an int >= 1"),
        ({"reembed": "yes"}, "reembed"),
        ({"supersede": 1}, "supersede"),
        ({"namespace": ""}, "namespace"),
        ({"category": ""}, "category"),
    ],
)
def test_import_refuses_bad_arguments(client: Any, kwargs: dict[str, Any], message: str) -> None:
    col = _collection(client, "notes", TEXTS, HashEmbedder().embed_documents(TEXTS))
    args = {"collection": col} | kwargs
    with memory() as mem:
        with pytest.raises(InvalidInputError, match=message):
            mem.import_chroma(**args)
        assert mem.count() == 0


def test_import_from_a_chroma_server(client: Any, chroma_server: tuple[str, int]) -> None:
    """A collection on a real ``chroma run`` server is imported as one on disk is."""
    host, port = chroma_server
    remote = chromadb.HttpClient(host=host, port=port)
    name = f"import-{os.getpid()}"
    hasher = HashEmbedder()
    col = _collection(remote, name, TEXTS, hasher.embed_documents(TEXTS))
    try:
        with memory(embedder=hasher) as mem:
            assert mem.import_chroma(col, batch_size=3).imported == 4
            assert mem.recall("Which city is the office in?", k=1)[0].id == "doc-2"
    finally:
        remote.delete_collection(name)


# ------------------------------------------------------------------ the real stack


def _chroma_default_function(tmp_path: Path) -> Any:
    """Chroma's own default embedding function (all-MiniLM-L6-v2 on ONNX Runtime), its
    files read from the local copy when ``OBLIVION_EMBEDDING_MODEL_PATH`` names one
    (downloaded by Chroma otherwise)."""
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    ef = ONNXMiniLM_L6_V2()
    local = os.environ.get("OBLIVION_EMBEDDING_MODEL_PATH")
    if local:
        (tmp_path / "chroma-model").mkdir()
        (tmp_path / "chroma-model" / "onnx").symlink_to(local)
        ef.DOWNLOAD_PATH = tmp_path / "chroma-model"  # type: ignore[misc]
    return ef


def test_a_collection_made_by_chromas_default_function_keeps_its_vectors(
    tmp_path: Path, real_embedder: FastEmbedEmbedder
) -> None:
    """What a Chroma user has: a collection on disk filled by Chroma's default
    embedding function. Its vectors are the local model's, so they are kept (only the
    model check's 16 texts are embedded) and recall through the real stack uses them."""
    source = chromadb.PersistentClient(str(tmp_path / "app-chroma"))
    col = source.create_collection(
        "langchain", embedding_function=_chroma_default_function(tmp_path)
    )
    texts = [f"Support ticket {i}: the customer asked about invoice {1000 + i}." for i in range(40)]
    texts += ["The customer's dog is called Rex.", "Always answer in formal English."]
    col.add(ids=[f"t{i}" for i in range(len(texts))], documents=texts)

    embedded: list[int] = []

    class Counting:
        def embed_documents(self, batch: list[str]) -> Any:
            embedded.append(len(batch))
            return real_embedder.embed_documents(batch)

        def embed_query(self, text: str) -> Any:
            return real_embedder.embed_query(text)

    with Oblivion(tmp_path / "mem", embedder=Counting()) as mem:
        report = mem.import_chroma(col, batch_size=25)
        assert report.imported == len(texts) and not report.reembedded
        assert sum(embedded) <= 16 + 1  # the model check, and a new store's size check
        assert mem.recall("What's the name of the customer's pet?", k=1)[0].id == "t40"
    with Oblivion(tmp_path / "mem", embedder=real_embedder) as reopened:
        assert reopened.count() == len(texts)
        assert reopened.recall("Which language rule applies?", k=1)[0].id == "t41"


def test_oblivion_import_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_embedder: FastEmbedEmbedder
) -> None:
    source = chromadb.PersistentClient(str(tmp_path / "app-chroma"))
    col = source.create_collection("notes", metadata={"hnsw:space": "cosine"})
    col.add(
        ids=["a", "b"], embeddings=real_embedder.embed_documents(TEXTS[:2]), documents=TEXTS[:2]
    )
    store = str(tmp_path / "mem")
    assert main(["import", store, str(tmp_path / "app-chroma"), "notes", "--namespace", "u1"]) == 0
    assert (
        "imported 2 of 2 records of collection 'notes' into namespace 'u1'"
        in capsys.readouterr().out
    )
    assert main(["import", store, str(tmp_path / "app-chroma"), "notes", "--namespace", "u1"]) == 0
    assert "2 were there already" in capsys.readouterr().out
    col.add(ids=["c"], embeddings=real_embedder.embed_documents(TEXTS[2:3]), documents=TEXTS[2:3])
    col.update(ids=["a", "c"], metadatas=[{"user": "x"}, {"user": "y"}])
    argv = ["import", store, str(tmp_path / "app-chroma"), "notes", "--namespace", "y"]
    assert main([*argv, "--where", '{"user": "y"}']) == 0
    assert "imported 1 of 1 records" in capsys.readouterr().out
    assert main([*argv, "--where", "{user: y}"]) == 1
    assert "--where is not JSON" in capsys.readouterr().err
    assert main(["import", store, str(tmp_path / "app-chroma"), "nope"]) == 1
    assert "has no collection 'nope'; it has 'notes'" in capsys.readouterr().err
    assert main(["import", store, str(tmp_path / "nowhere"), "notes"]) == 1
    err = capsys.readouterr().err
    assert "no Chroma database in" in err
    assert not (tmp_path / "nowhere").exists()  # not made by looking
    with Oblivion(store, embedder=real_embedder) as mem:
        assert sorted(r.id for r in mem.records(namespace="u1")) == ["a", "b"]
        assert [r.id for r in mem.records(namespace="y")] == ["c"]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--where", '{"$bad": 1}'], "Chroma refused where="),
        (["--category", ""], "category"),
        (["--category", "   "], "category"),
        (["--namespace", "   "], "namespace"),
    ],
)
def test_oblivion_import_refuses_what_the_import_would_before_making_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], said: str
) -> None:
    """A --where Chroma refuses or an empty --category failed the import after the store
    was made: a new path was left a store holding nothing (its database, chroma/ folder
    and lock file)."""
    source = chromadb.PersistentClient(str(tmp_path / "app-chroma"))
    source.create_collection("notes").add(
        ids=["a"], embeddings=[[0.1] * 384], documents=["a note about the garden"]
    )
    store = tmp_path / "typo_store"
    assert main(["import", str(store), str(tmp_path / "app-chroma"), "notes", *flags]) == 1
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert not store.exists()


def test_oblivion_import_s_advice_names_its_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """From the shell, another model's vectors are refused with the flags that fix it
    (not the Python arguments), before a store is made at a new path (one was left
    holding nothing), and a --model that is no folder names --model."""
    source = chromadb.PersistentClient(str(tmp_path / "app-chroma"))
    rng = np.random.default_rng(0)
    source.create_collection("rand").add(
        ids=[f"r{i}" for i in range(5)],
        embeddings=rng.normal(size=(5, 384)).tolist(),
        documents=[f"note {i} about the garden" for i in range(5)],
    )
    argv = ["import", str(tmp_path / "mem"), str(tmp_path / "app-chroma"), "rand"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "another model's vectors" in err and "add --reembed" in err and "--model DIR" in err
    assert "reembed=True" not in err
    assert not (tmp_path / "mem").exists()
    assert main([*argv, "--model", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "--model" in err and "is not a directory" in err
    assert "OBLIVION_EMBEDDING_MODEL_PATH" not in err
    assert main(["recall", str(tmp_path / "mem"), "garden", "--model", "/nonexistent"]) == 1
    assert "--model '/nonexistent' is not a directory" in capsys.readouterr().err


def test_oblivion_import_into_a_store_of_another_model_names_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_embedder: FastEmbedEmbedder
) -> None:
    """The collection's vectors are the local model's, but the store's were made by
    another model of the same size: the import put them beside them. It is refused with
    the flag that opens the store with its own model, and the store keeps what it had."""
    with Oblivion(tmp_path / "mem", embedder=HashEmbedder(384)) as mem:
        mem.remember_many(TEXTS[:3])
    source = chromadb.PersistentClient(str(tmp_path / "app-chroma"))
    source.create_collection("notes").add(
        ids=["a"], embeddings=real_embedder.embed_documents(TEXTS[3:4]), documents=TEXTS[3:4]
    )
    assert main(["import", str(tmp_path / "mem"), str(tmp_path / "app-chroma"), "notes"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("oblivion import: ModelMismatchError: this store's vectors")
    assert "--model DIR" in line and "--reembed" not in line
    with Oblivion(tmp_path / "mem", embedder=HashEmbedder(384)) as mem:
        assert sorted(r.text for r in mem.records()) == sorted(TEXTS[:3])


def test_oblivion_import_into_a_store_an_app_holds_says_to_stop_it_or_import_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_embedder: FastEmbedEmbedder
) -> None:
    """Refused because an app holds the store, `oblivion import` advised what an app
    does ("share one Oblivion object between threads"); it says to stop the app or to
    import from it, and the app's store is as it was."""
    source = chromadb.PersistentClient(str(tmp_path / "app-chroma"))
    source.create_collection("notes").add(
        ids=["a"], embeddings=real_embedder.embed_documents(TEXTS[:1]), documents=TEXTS[:1]
    )
    store = tmp_path / "mem"
    with Oblivion(store, embedder=real_embedder) as app:
        app.remember("kept by the app", id="k")
        assert main(["import", str(store), str(tmp_path / "app-chroma"), "notes"]) == 1
        err = capsys.readouterr().err
        assert "is already open in" in err and "mem.import_chroma(collection)" in err
        assert "Share one Oblivion object" not in err
        assert [r.id for r in app.records()] == ["k"]


def test_oblivion_import_says_what_to_change_for_a_bad_chroma_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A damaged Chroma database gets the CLI's one-line message, not a traceback, and
    the store is not touched."""
    bad = tmp_path / "bad-chroma"
    bad.mkdir()
    (bad / "chroma.sqlite3").write_bytes(os.urandom(8192))
    store = tmp_path / "mem"
    assert main(["import", str(store), str(bad), "notes"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("oblivion import: StoreError: Chroma cannot open the database in")
    assert "Traceback" not in err and not store.exists()


@pytest.mark.server
def test_oblivion_import_refuses_a_store_kept_on_a_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chroma_server: tuple[str, int]
) -> None:
    """A store whose vectors are on a Chroma server is not opened by the CLI with a
    chroma/ folder (a move there, and back when the app opens it): the error says to
    import from the app."""
    host, port = chroma_server
    server = VectorStore.server(host, port, prefix=f"cli-{os.getpid()}")
    with memory(tmp_path / "mem", vector_store=server) as mem:
        mem.remember("kept on the server", id="k")
    source = chromadb.PersistentClient(str(tmp_path / "app-chroma"))
    source.create_collection("notes").add(ids=["a"], embeddings=[[1.0, 0.0]], documents=["x"])
    assert main(["import", str(tmp_path / "mem"), str(tmp_path / "app-chroma"), "notes"]) == 1
    err = capsys.readouterr().err
    assert "keeps its vectors in the Chroma server at" in err and "mem.import_chroma" in err
    assert not (tmp_path / "mem" / "chroma").exists()


def test_a_store_whose_database_is_damaged_comes_back_as_its_error_says(
    tmp_path: Path,
) -> None:
    """The advice for a damaged activation database works: the database and chroma/
    folder moved aside, the store opened again, and the old folder's collection
    imported, each memory comes back with its text, vector and category."""
    store = tmp_path / "mem"
    with memory(store) as mem:
        rule = mem.remember("Always answer in British English.")
        fact = mem.remember("The launch moved to 28 March.", category="fact")
    db = store / "oblivion.sqlite3"
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)
    with pytest.raises(StoreCorruptError, match="oblivion import PATH OLD_CHROMA COLLECTION"):
        memory(store)
    for name in ("oblivion.sqlite3", "oblivion.sqlite3-wal", "oblivion.sqlite3-shm", "chroma"):
        if (store / name).exists():
            (store / name).rename(tmp_path / f"old-{name}")
    old = chromadb.PersistentClient(str(tmp_path / "old-chroma"))
    with memory(store) as mem:
        (collection,) = old.list_collections()
        report = mem.import_chroma(collection)
        assert report.imported == 2 and not report.skipped
        back = {r.id: r for r in mem.records()}
        assert back[rule.id].category == "instruction" and back[fact.id].category == "fact"
        assert back[fact.id].metadata == {}  # the category is not left in the metadata
        assert mem.recall("When is the launch?", k=1).ids == [fact.id]


def test_a_recovered_store_leaves_summaries_out_and_the_category_key_too(
    tmp_path: Path,
) -> None:
    """Recovery from a store's own chroma/ folder brought a summary back as a plain
    memory beside the originals it summarised; and with ``category=`` the collection's
    internal "category" key was left in every memory's metadata."""
    from .test_compression import MEETING, POLICY

    clock = ManualClock()
    store = tmp_path / "mem"
    with memory(store, clock=clock, policy=POLICY) as mem:
        originals = [
            r.id
            for r in mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        ]
        clock.advance(60 * 86_400.0)
        mem.maintain()
        (summary,) = [r.id for r in mem.records() if r.category == "summary"]
    (store / "chroma").rename(tmp_path / "old-chroma")
    for name in ("oblivion.sqlite3", "oblivion.sqlite3-wal", "oblivion.sqlite3-shm"):
        (store / name).unlink(missing_ok=True)
    (collection,) = chromadb.PersistentClient(str(tmp_path / "old-chroma")).list_collections()
    for category in (None, "fact"):
        with memory(tmp_path / f"back-{category}") as mem:
            report = mem.import_chroma(collection, category=category)
            assert report.imported == 4 and list(report.skipped) == [summary]
            assert "summarised are imported" in report.skipped[summary]
            back = mem.records()
            assert sorted(r.id for r in back) == sorted(originals)
            assert {r.category for r in back} == {category or "event"}
            assert all(r.metadata == {} for r in back)


def test_a_lost_database_comes_back_with_each_user_in_their_own_namespace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_embedder: FastEmbedEmbedder
) -> None:
    """The advice for a lost activation database, followed as printed (one `oblivion
    import PATH OLD_CHROMA COLLECTION` per collection), put every user's memories into
    the store's default namespace, where each user could recall the others'. Each
    collection of an Oblivion store now goes back into the namespace it was made for."""
    store = tmp_path / "mem"
    with Oblivion(store, embedder=real_embedder) as mem:
        mem.remember("Anna's bank PIN hint is her cat's name", namespace="anna", id="pin")
        mem.remember("Bob likes sailing", namespace="bob", id="sail")
    (store / "oblivion.sqlite3").write_bytes(b"")
    with pytest.raises(StoreCorruptError, match="in the namespace it held"):
        Oblivion(store, embedder=real_embedder)
    for name in ("oblivion.sqlite3", "oblivion.sqlite3-wal", "oblivion.sqlite3-shm", "chroma"):
        if (store / name).exists():
            (store / name).rename(tmp_path / f"old-{name}")
    old = tmp_path / "old-chroma"
    names = [c.name for c in chromadb.PersistentClient(str(old)).list_collections()]
    assert len(names) == 2
    for name in names:
        assert main(["import", str(store), str(old), name]) == 0
    out = capsys.readouterr().out
    assert "into namespace 'anna'" in out and "into namespace 'bob'" in out
    with Oblivion(store, embedder=real_embedder) as mem:
        assert mem.count() == 0  # the default namespace: nobody's memories
        assert [r.id for r in mem.records(namespace="anna")] == ["pin"]
        assert [r.id for r in mem.records(namespace="bob")] == ["sail"]


def test_oblivion_import_refuses_a_store_kept_in_another_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store whose app keeps its vectors in another folder than PATH/chroma: the CLI,
    opening it with PATH/chroma, moved it there (every memory copied, and copied back
    when the app opened it again). It is refused, as a store on a server is."""
    elsewhere = VectorStore.embedded(tmp_path / "vectors")
    with memory(tmp_path / "mem", vector_store=elsewhere) as mem:
        mem.remember("kept in another folder", id="k")
    source = chromadb.PersistentClient(str(tmp_path / "app-chroma"))
    source.create_collection("notes").add(ids=["a"], embeddings=[[1.0, 0.0]], documents=["x"])
    assert main(["import", str(tmp_path / "mem"), str(tmp_path / "app-chroma"), "notes"]) == 1
    err = capsys.readouterr().err
    assert "keeps its vectors in Chroma on disk at" in err and "mem.import_chroma" in err
    assert not (tmp_path / "mem" / "chroma").exists()
    with memory(tmp_path / "mem", vector_store=VectorStore.embedded(tmp_path / "vectors")) as mem:
        assert [r.id for r in mem.records()] == ["k"]


def test_import_report_counts_everything() -> None:
    report = ImportReport(
        "c", "ns", imported=1, already=2, skipped={f"x{i}": "why" for i in range(12)}
    )
    text = str(report)
    assert "imported 1 of 15 records" in text
    assert "2 were there already, 12 skipped" in text
    assert "... and 2 more skipped" in text


def test_an_import_costs_no_turns_on_the_turn_clock(client: Any) -> None:
    """On the turn clock each stored record ticked a turn: importing 300 records aged the
    user's own memories by 300 turns (a fact fell towards the archive) and the first
    records by more than the last. An import is no interaction: the namespace's turn
    and every memory's activation stay as they were, and the records start alike."""
    from oblivion_core import Policy, TurnClock

    hasher = HashEmbedder()
    texts = [f"Note {i} about the quarterly report." for i in range(300)]
    col = _collection(client, "notes", texts, hasher.embed_documents(texts))
    policy = Policy.template("balanced", clock="turns")
    with memory(embedder=hasher, clock=TurnClock(), policy=policy) as mem:
        fact = mem.remember("My daughter's name is Ada.", category="fact")
        turn = mem.clock.now()
        before = mem.get(fact.id).activation
        assert mem.import_chroma(col).imported == 300
        assert mem.clock.now() == turn
        assert mem.get(fact.id).activation == pytest.approx(before)
        imported = [r for r in mem.records() if r.id.startswith("doc-")]
        assert len({round(r.activation, 9) for r in imported}) == 1
        mem.remember("And the next turn ticks as before.")
        assert mem.clock.now() == turn + 1
