"""Embedders: output validation, chunking of long texts, and wrapping plain callables."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import EmbeddingError, InvalidInputError
from oblivion_core.embedding import (
    CHUNK_WORDS,
    chunks,
    embed_query,
    embed_texts,
    normalize,
    resolve_embedder,
)
from oblivion_core.testing import HashEmbedder, memory
from oblivion_core.typing import Embedder


@pytest.mark.parametrize(
    ("vectors", "expected", "dim", "mentions"),
    [
        ([[1.0, math.nan]], 1, None, "NaN"),
        ([[1.0, math.inf]], 1, None, "NaN or infinite"),
        ([[0.0, 0.0]], 1, None, "all-zero"),
        ([[1.0, 0.0]], 2, None, "for 2 text"),
        ([[1.0, 0.0, 0.0]], 1, 2, "3-d vectors but this store holds 2-d"),
        ([[[1.0]]], 1, None, "shape"),
        ("not a vector", 1, None, "not a matrix"),
        ([[1.0, 2.0], [1.0]], 2, None, "not a matrix"),
    ],
)
def test_normalize_rejects_bad_output(
    vectors: Any, expected: int, dim: int | None, mentions: str
) -> None:
    """Wrong shapes, NaN/inf and zero vectors raise EmbeddingError saying what is wrong."""
    with pytest.raises(EmbeddingError, match=mentions):
        normalize(vectors, expected, dim)


@given(
    rows=st.lists(
        st.lists(st.floats(-1e3, 1e3), min_size=4, max_size=4).filter(
            lambda r: math.sqrt(sum(x * x for x in r)) > 1e-3
        ),
        min_size=1,
        max_size=10,
    )
)
def test_normalize_returns_unit_float32_rows(rows: list[list[float]]) -> None:
    """Valid output comes back as float32 rows of unit length."""
    out = normalize(rows, len(rows))
    assert out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


@given(n=st.integers(0, 1000))
def test_chunks_cover_every_word_within_the_window(n: int) -> None:
    """Chunks hold at most CHUNK_WORDS words each and together every word, in order."""
    text = " ".join(f"w{i}" for i in range(n)) or "short"
    parts = chunks(text)
    assert all(len(p.split()) <= CHUNK_WORDS for p in parts)
    assert " ".join(parts).split() == text.split()


def test_short_text_is_one_chunk_unchanged() -> None:
    """A text inside the window is embedded as-is (whitespace kept)."""
    text = "two  spaces\nand a newline"
    assert chunks(text) == [text]


def test_long_text_vector_includes_its_end(windowed_embedder: HashEmbedder) -> None:
    """A text longer than the model window is embedded so that words at its end count."""
    embedder = windowed_embedder
    filler = " ".join(hashlib.md5(str(i).encode()).hexdigest()[:8] for i in range(560))
    text = filler + " zebra quokka platypus"
    vec = embed_texts(embedder, [text])[0]
    q = embed_query(embedder, "zebra quokka platypus")[0]
    truncated = embedder.embed_documents([text])[0]
    # the head alone only shares hash collisions with the query; the chunked vector
    # carries the tail words
    assert float(vec @ q) > 0.05
    assert float(vec @ q) > 3 * float(truncated @ q)


def test_embed_texts_wraps_embedder_failures() -> None:
    """An exception inside the embedder surfaces as EmbeddingError."""

    def broken(texts: list[str]) -> Any:
        raise ConnectionError("model server down")

    with pytest.raises(EmbeddingError, match="model server down"):
        embed_texts(resolve_embedder(broken), ["hello"])
    with pytest.raises(EmbeddingError, match="model server down"):
        embed_query(resolve_embedder(broken), "hello")


def test_plain_callables_are_accepted_as_embedders() -> None:
    """A callable list[str] -> vectors works as an embedder, for documents and queries."""
    emb = resolve_embedder(lambda texts: [[1.0, float(len(t))] for t in texts])
    assert isinstance(emb, Embedder)
    assert embed_texts(emb, ["ab", "abcd"]).shape == (2, 2)
    assert embed_query(emb, "abc").shape == (1, 2)


@pytest.mark.parametrize("bad", [42, "all-MiniLM-L6-v2", object()])
def test_non_embedders_are_rejected(bad: Any) -> None:
    """Something that is neither an Embedder nor callable raises InvalidInputError."""
    with pytest.raises(InvalidInputError, match="embedder must"):
        resolve_embedder(bad)


def test_hash_embedder_is_deterministic_and_word_sensitive() -> None:
    """The test embedder gives identical vectors for identical text, similar for shared words."""
    emb = HashEmbedder()
    a, b, c = emb.embed_documents(["red apple pie", "red apple pie", "blue ocean waves"])
    assert np.array_equal(a, b)
    assert float(a @ b) == pytest.approx(1.0, abs=1e-6)
    assert float(a @ c) < 0.5


@pytest.mark.integration
def test_real_model_gives_384_d_unit_vectors(real_embedder: Any) -> None:
    """all-MiniLM-L6-v2 produces 384-d vectors; normalised they are unit length."""
    vecs = embed_texts(real_embedder, ["hello world", "another sentence"])
    assert vecs.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


class _RecordingEmbedder(HashEmbedder):
    """A HashEmbedder that remembers the order it was asked to embed texts in."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def embed_documents(self, texts: list[str]) -> Any:
        self.batches.append(list(texts))
        return super().embed_documents(texts)


@given(
    st.lists(
        st.text(st.characters(categories=["Ll"]), min_size=1, max_size=30).filter(str.strip),
        min_size=1,
        max_size=20,
    )
)
def test_embed_texts_embeds_shortest_first_and_returns_input_order(texts: list[str]) -> None:
    """The embedder sees the texts shortest first (less padding in a batched model); each
    text still gets its own vector, in the order given."""
    rec = _RecordingEmbedder()
    vecs = embed_texts(rec, texts)
    (seen,) = rec.batches
    assert sorted(seen) == sorted(texts)
    assert [len(t) for t in seen] == sorted(len(t) for t in texts)
    for text, vec in zip(texts, vecs, strict=True):
        assert np.array_equal(vec, embed_texts(HashEmbedder(), [text])[0])


@pytest.mark.integration
def test_real_model_vectors_do_not_depend_on_batch_order(real_embedder: Any) -> None:
    """With the local model, a text embedded among others of any length gets the vector it
    gets alone (padding is masked), so embedding in length order changes no vector."""
    texts = [
        "A much longer sentence about the weekly planning meeting with the design team.",
        "Hi",
        "I prefer green tea in the afternoon.",
    ]
    together = embed_texts(real_embedder, texts)
    for text, vec in zip(texts, together, strict=True):
        alone = embed_texts(real_embedder, [text])[0]
        assert np.allclose(vec, alone, atol=1e-5)


def test_the_local_model_says_when_it_keeps_every_core_busy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """ONNX on every core (the default) is busy; with fewer threads than cores it is not."""
    import os

    from oblivion_core.embedding import FastEmbedEmbedder

    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert FastEmbedEmbedder().busy_cores
    assert FastEmbedEmbedder(threads=4).busy_cores
    assert not FastEmbedEmbedder(threads=2).busy_cores


@pytest.mark.parametrize("bad", [0, -3, 2.5, "32", True, None])
def test_a_batch_size_that_is_not_a_count_of_texts_is_refused(bad: object) -> None:
    from oblivion_core.embedding import FastEmbedEmbedder

    with pytest.raises(InvalidInputError, match="batch_size must be a whole number"):
        FastEmbedEmbedder(batch_size=bad)  # type: ignore[arg-type]
    assert FastEmbedEmbedder(batch_size=1).batch_size == 1
    numpy_count = FastEmbedEmbedder(batch_size=np.int64(16)).batch_size  # type: ignore[arg-type]
    assert numpy_count == 16 and type(numpy_count) is int


def test_batches_of_any_size_give_the_same_vectors(real_embedder: Any) -> None:
    """The batch size changes how texts are grouped per ONNX call (and padded), not
    their vectors."""
    from oblivion_core.embedding import FastEmbedEmbedder

    texts = ["a", "the meeting moved to Thursday at 3pm", "hi", "x " * 40, "Rust, not Go."]
    one = FastEmbedEmbedder(batch_size=1).embed_documents(texts)
    assert np.allclose(real_embedder.embed_documents(texts), one, atol=1e-5)
    assert np.allclose(FastEmbedEmbedder(batch_size=2).embed_documents(texts), one, atol=1e-5)


def test_long_unspaced_runs_are_read_not_unknown(real_embedder: Any) -> None:
    """A run of letters and digits over WordPiece's 100-character word limit (a key, a
    hash, base64) was one [UNK] to the local model: every such text had the same vector,
    and a 32,000-character one counted 3 tokens, so it was never chunked either."""
    import hashlib

    keys = [hashlib.sha512(bytes([i])).hexdigest() for i in range(3)]  # 128 characters
    vecs = embed_texts(real_embedder, [f"the api key is {k}" for k in keys])
    assert float(vecs[0] @ vecs[1]) < 0.99
    unknown = embed_texts(real_embedder, ["the api key is [UNK]"])[0]
    assert all(float(v @ unknown) < 0.99 for v in vecs)
    query = embed_query(real_embedder, keys[1])
    assert int(np.argmax(vecs @ query.reshape(-1))) == 1
    assert real_embedder.count_tokens("f" * 32_000) > real_embedder.max_tokens
    short = "word " * 20  # nothing to split: the same text, the same count
    assert real_embedder._readable(short) == short
    # a word over the limit once normalised (Hangul splits into its letters) is split too;
    # Chinese, which WordPiece splits by character anyway, is left as it is
    counter = real_embedder._load_counter()
    hangul = "가나다라마바사아자차카타파하" * 11  # 154 syllables, no space
    assert counter.encode(hangul).tokens.count("[UNK]") == 1
    assert "[UNK]" not in counter.encode(real_embedder._readable(hangul)).tokens
    mixed = "我们的Prometheus项目使用Kubernetes部署到生产环境中并且每天都会自动备份数据库" * 3
    assert real_embedder._readable(mixed) == mixed


def test_emoji_the_model_does_not_know_are_read_by_their_names(
    real_embedder: Any, tmp_path: Any
) -> None:
    """The local model read every emoji as [UNK]: "👍" and "🍕" had one vector, at
    cosine 1.0, and so did "👍!" and "💀!" or "我爱🍕" and "我爱🔥"; "🍕" recalled any
    emoji-only memory first, over "I ordered pizza 🍕", and writes linked them all at
    weight 1.0. Each such symbol is given to the model by its Unicode name."""
    from oblivion_core import Oblivion
    from oblivion_core.testing import ManualClock

    assert real_embedder._readable("🍕") == "slice of pizza"
    assert real_embedder._readable("👨\u200d👩\u200d👧") == "man woman girl"
    assert real_embedder._readable("❤️ 2") == "heavy black heart 2"
    pairs = [("👍", "🍕"), ("👍!", "💀!"), ("🎉🎉🎉!!!", "😡😡😡!!!"), ("我爱🍕", "我爱🔥")]
    for a, b in pairs:
        va, vb = embed_texts(real_embedder, [a, b])
        assert float(va @ vb) < 0.95, (a, b)
    # no unknown symbol: the text as it was (ASCII, Chinese, an accent, a known sign)
    for kept in ["I ordered pizza for lunch", "我住在北京", "café", "°C and ©"]:
        assert real_embedder._readable(kept) == kept
    # letters of a script the model lacks stay unknown (named, 25 times the tokens)
    thai = "พี่ชายของฉันอาศัยอยู่ในกรุงเทพ"
    assert real_embedder._readable(thai) == thai
    clock = ManualClock()
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        texts = ["👍", "🎂🎈", "🍕", "🔥🔥", "I ordered pizza 🍕 for the team lunch on Friday."]
        for i, text in enumerate(texts):  # an hour apart: no hit brings a neighbour
            mem.remember(text, id=f"m{i}")
            clock.advance(3600)
        assert set(mem.recall("🍕", k=2).ids) == {"m2", "m4"}
        assert all(w < 0.9 for w in mem.links("m0").values())


@pytest.mark.parametrize("scale", [3e19, 1e-23])
def test_very_large_or_small_vectors_are_normalised_not_zeroed(scale: float) -> None:
    """Squares of float32 values overflowed (a stored all-zero vector, no error) or
    underflowed (refused as all-zero)."""
    from oblivion_core.embedding import normalize

    out = normalize([[3 * scale, 4 * scale]], 1)
    assert out[0].tolist() == pytest.approx([0.6, 0.8])


@pytest.mark.parametrize(
    ("returned", "mentions"),
    [
        ([[]], "0 dimensions"),
        ([], "0 dimensions"),
        ([[10**400, 1]], "not a matrix of numbers"),
    ],
)
def test_odd_embedder_output_is_an_embedding_error(returned: Any, mentions: str) -> None:
    """An empty vector was "an all-zero vector"; an int beyond float range escaped as a
    raw OverflowError."""
    from oblivion_core.embedding import normalize

    with pytest.raises(EmbeddingError, match=mentions):
        normalize(returned, 1)


def test_an_async_embedder_or_a_class_is_refused_when_the_store_opens() -> None:
    """An async embedder was accepted and failed on first use with "not a matrix of
    numbers (TypeError: ... 'coroutine')" and a never-awaited warning; a class in place
    of an instance failed on first use with a missing argument."""

    async def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0]] * len(texts)

    class AsyncDocuments(HashEmbedder):
        async def embed_documents(self, texts: list[str]) -> Any:  # type: ignore[override]
            return super().embed_documents(texts)

    for embedder, says in [
        (embed, "its __call__()"),
        (AsyncDocuments(), "embed_documents()"),
        (HashEmbedder, "pass HashEmbedder(...)"),
    ]:
        with pytest.raises(InvalidInputError, match=re.escape(says)):
            memory(embedder=embedder)


def test_a_synchronous_embedder_with_an_async_call_of_its_own_is_accepted() -> None:
    """Only the methods Oblivion calls are checked: an app's own async ``__call__``
    beside synchronous ``embed_documents``/``embed_query`` is none of its business."""

    class Both(HashEmbedder):
        async def __call__(self, texts: list[str]) -> Any:
            return self.embed_documents(texts)

    mem = memory(embedder=Both())
    kept = mem.remember("the user likes green tea")
    assert mem.recall("green tea", k=1).ids == [kept.id]


def test_an_awaitable_returned_is_refused_without_a_warning(recwarn: Any) -> None:
    from oblivion_core.embedding import normalize

    async def later() -> list[list[float]]:
        return [[1.0, 0.0]]

    with pytest.raises(EmbeddingError, match="an awaitable, not vectors"):
        normalize(later(), 1)
    assert not [w for w in recwarn if "never awaited" in str(w.message)]


@pytest.mark.parametrize(("bad", "says"), [(np.nan, "NaN or infinite"), (0.0, "all-zero")])
def test_a_bad_vector_in_a_batch_names_its_text(bad: float, says: str) -> None:
    from oblivion_core.embedding import normalize

    vectors = np.ones((5, 4))
    vectors[[2, 4]] = bad
    with pytest.raises(
        EmbeddingError, match=f"{says}.* for text 2 \\(counting from 0\\) of the 5 and 1 more"
    ):
        normalize(vectors, 5)
    with pytest.raises(EmbeddingError) as one:
        normalize(vectors[2:3], 1)
    assert "for text" not in str(one.value)


def test_an_output_numpy_cannot_convert_is_an_embedding_error() -> None:
    """A tensor that still needs grad raises RuntimeError when numpy converts it."""
    from oblivion_core.embedding import normalize

    class NeedsGrad:
        def __array__(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad")

    with pytest.raises(EmbeddingError, match="requires grad"):
        normalize(NeedsGrad(), 1)


def test_the_model_path_variable_is_the_default_models_and_read_as_of_construction(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$OBLIVION_EMBEDDING_MODEL_PATH (a copy of all-MiniLM-L6-v2) was used for any
    fastembed model, and a relative one was read at first use, after a chdir."""
    from oblivion_core import FastEmbedEmbedder

    (tmp_path / "models" / "minilm").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OBLIVION_EMBEDDING_MODEL_PATH", "models/minilm")
    assert FastEmbedEmbedder().model_path == str(tmp_path / "models" / "minilm")
    assert FastEmbedEmbedder("BAAI/bge-small-en-v1.5").model_path is None
    given = FastEmbedEmbedder("BAAI/bge-small-en-v1.5", model_path="models/minilm")
    assert given.model_path == str(tmp_path / "models" / "minilm")


def test_a_model_that_failed_to_load_fails_at_once_for_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Offline, each call waited through fastembed's retries (about 40 s) again."""
    from oblivion_core import FastEmbedEmbedder
    from oblivion_core import embedding as embedding_module

    embedder = FastEmbedEmbedder()
    tries: list[int] = []

    def offline() -> Any:
        tries.append(1)
        raise EmbeddingError("could not load embedding model: no network")

    monkeypatch.setattr(embedder, "_open_model", offline)
    for _ in range(3):
        with pytest.raises(EmbeddingError, match="no network"):
            embedder.embed_query("hello")
    assert len(tries) == 1
    monkeypatch.setattr(embedding_module, "LOAD_RETRY_SECONDS", 0.0)
    with pytest.raises(EmbeddingError, match="no network"):
        embedder.embed_query("hello")
    assert len(tries) == 2


def test_the_offline_embedder_tells_texts_of_any_script_apart() -> None:
    """It read only [a-z0-9']: every Chinese, Russian or Arabic text was one vector."""
    embedder = HashEmbedder()
    texts = [
        "我对花生过敏。",
        "我周末喜欢爬山。",
        "Я живу в Москве.",
        "Моя сестра в Казани.",
        "أحب القهوة",
    ]
    vecs = np.asarray(embedder.embed_documents(texts))
    sims = vecs @ vecs.T
    assert (sims[~np.eye(len(texts), dtype=bool)] < 0.9).all(), sims
    query = np.asarray(embedder.embed_query("我对什么过敏？"))
    assert int(np.argmax(vecs @ query)) == 0
