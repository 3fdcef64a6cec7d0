"""Chunking of long texts: no chunk exceeds the model window, whatever the text (long
unspaced runs of Chinese, Japanese, hex, URLs or base64 included), and nothing is dropped."""

from __future__ import annotations

import base64
import hashlib
import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import EmbeddingError
from oblivion_core.embedding import (
    CHUNK_TOKENS,
    CHUNK_WORDS,
    FastEmbedEmbedder,
    chunks,
    embed_texts,
    estimate_tokens,
    normalize,
)
from oblivion_core.testing import HashEmbedder

ENGLISH = (
    "On Saturday we drove up to the lake with my sister and her two kids, and the weather "
    "held until the late afternoon. I'm still thinking about the new job offer; the salary "
    "is better, but the commute would be an hour each way. Remind me to call the dentist "
    "on Monday morning about moving my appointment to the following week."
)
CJK = "我们今天在公司开会讨论了新的项目计划和预算安排" * 30
JAPANESE = "今日は会社で新しいプロジェクトの計画について会議をしました。" * 25
HEX = " ".join(hashlib.md5(str(i).encode()).hexdigest()[:10] for i in range(120))
BASE64 = base64.b64encode(hashlib.sha512(b"x").digest() * 12).decode()
URLS = " ".join(f"https://example.com/a/{i:04d}/b?id={i * 7919:08x}&q=zz{i}" for i in range(60))
UNSPACED = {"chinese": CJK, "japanese": JAPANESE, "hex": HEX, "base64": BASE64, "urls": URLS}

# letters, digits, punctuation, CJK, kana, Hangul, accents, emoji and whitespace, so that
# generated texts mix long unspaced runs with ordinary words
_ALPHABET = st.sampled_from(
    list("abcdefxyz0123456789.,/=+-_'") + list("我们今天开会きょうカイ오늘회의éüßİ🙂") + [" "] * 6
)
_TEXT = st.text(_ALPHABET, max_size=2_500)


def _squeeze(text: str) -> str:
    return "".join(text.split())


@given(text=_TEXT, limit=st.integers(3, 80))
def test_counted_chunks_fit_and_keep_every_character(text: str, limit: int) -> None:
    """With a token counter, every chunk fits the window (a lone character aside) and
    the chunks hold every non-space character of the text, in order."""

    def count(s: str) -> int:  # a character-level tokenizer with two special tokens
        return len(s) + 2

    parts = chunks(text, count_tokens=count, max_tokens=limit)
    # a lone character, or whitespace alone (nothing to cut), is sent as it is
    assert all(count(p) <= limit or len(p) == 1 or not p.strip() for p in parts)
    assert _squeeze("".join(parts)) == _squeeze(text)
    assert all(p.strip() for p in parts) or parts == [text]


@given(text=_TEXT, limit=st.integers(3, 80))
def test_chunks_fit_even_when_the_count_is_not_monotone(text: str, limit: int) -> None:
    """A count that can drop as a text grows (as word pieces can) still gives chunks that
    fit: only cut points whose count was checked are used."""

    def count(s: str) -> int:
        return len(s) + zlib.crc32(s.encode()) % 7

    parts = chunks(text, count_tokens=count, max_tokens=limit)
    assert all(count(p) <= limit or len(p) == 1 for p in parts)
    assert _squeeze("".join(parts)) == _squeeze(text)


@given(text=_TEXT)
def test_estimated_chunks_fit_and_keep_every_character(text: str) -> None:
    """Without a counter, every chunk's estimate is within CHUNK_TOKENS and the chunks
    hold every non-space character of the text, in order."""
    parts = chunks(text)
    assert all(estimate_tokens(p) <= CHUNK_TOKENS for p in parts)
    assert all(len(p.split()) <= CHUNK_WORDS for p in parts)
    assert _squeeze("".join(parts)) == _squeeze(text)


@pytest.mark.parametrize(
    ("text", "estimate"),
    [
        ("", 0),
        ("the cat", 2),
        ("internationalization", 5),  # 20 letters: one piece per four
        ("a3f9c01b2e", 10),  # hex: a piece per character at worst
        ("我们今天", 4),
        ("오늘", 2),
        ("aGVsbG8", 7),  # base64: case changes inside a run, so not a word
        ("don't!", 4),
    ],
)
def test_estimate_counts_what_a_word_piece_tokenizer_may_spend(text: str, estimate: int) -> None:
    """Latin letters cost one per four (one each where the case changes inside a run),
    every other character one."""
    assert estimate_tokens(text) == estimate


@pytest.mark.parametrize("name", sorted(UNSPACED))
def test_long_unspaced_texts_are_cut_without_a_counter(name: str) -> None:
    """A long run without spaces is cut into several chunks even without a counter."""
    text = UNSPACED[name]
    parts = chunks(text)
    assert len(parts) > 1
    assert _squeeze("".join(parts)) == _squeeze(text)


@pytest.mark.parametrize("text", ["", "   ", " \n\t", "two  spaces\nand a newline", ENGLISH])
def test_short_and_blank_texts_are_one_chunk_as_given(text: str) -> None:
    """Empty, blank and ordinary short texts come back as one chunk, whitespace and all."""
    assert chunks(text) == [text]
    assert chunks(text, count_tokens=lambda s: len(s.split()) + 2, max_tokens=512) == [text]
    if not text.strip():  # even a counter that says blank text is over the window keeps it
        assert chunks(text, count_tokens=lambda s: 99, max_tokens=5) == [text]


@pytest.mark.parametrize("n_words", [CHUNK_WORDS + 1, 2 * CHUNK_WORDS + 1, 1000])
def test_long_english_is_cut_into_as_few_even_runs_as_fit(n_words: int) -> None:
    """Ordinary English longer than CHUNK_WORDS is cut into the fewest runs of at most
    150 words, of equal length: 151 words were a 150-word run and a one-word tail whose
    vector weighed as much in the mean (a matching query's cosine fell 0.63 -> 0.41)."""
    words = (ENGLISH.split() * (n_words // len(ENGLISH.split()) + 1))[:n_words]
    got = chunks(" ".join(words))
    sizes = [len(c.split()) for c in got]
    assert len(got) == -(-n_words // CHUNK_WORDS)
    assert max(sizes) <= CHUNK_WORDS and max(sizes) - min(sizes) <= 1
    assert " ".join(got).split() == words


def test_a_short_tail_cut_at_the_window_is_evened_out() -> None:
    """A text cut at the token window ended in a few words whose vector weighed as much
    as a whole window's: the last two slices are cut again near their middle."""
    text = " ".join(f"w{i}" for i in range(110))

    def fits(piece: str) -> bool:  # a window of 100 words
        return len(piece.split()) <= 100

    got = chunks(text, words=1000, count_tokens=lambda p: len(p.split()), max_tokens=100)
    sizes = [len(c.split()) for c in got]  # cut near the middle in characters
    assert len(sizes) == 2 and min(sizes) >= 50, sizes
    assert all(fits(c) for c in got)
    assert " ".join(got).split() == text.split()


def test_long_text_vectors_count_their_ending_without_a_counter() -> None:
    """Through an embedder that cannot count tokens (a window of its first 40 words), the
    end of a long unspaced text still reaches the vector."""

    class FirstWords(HashEmbedder):
        def _vector(self, text: str) -> Any:
            return super()._vector(" ".join(text.split()[:40]))

    a, b = embed_texts(FirstWords(dim=4096), [HEX + " zebra giraffe", HEX + " volcano glacier"])
    assert float(a @ b) < 0.99


def test_a_failing_token_count_is_an_embedding_error() -> None:
    """An embedder whose own token count raises fails with EmbeddingError, like its embed."""

    class Counting(HashEmbedder):
        max_tokens = 512

        def count_tokens(self, text: str) -> int:
            raise ConnectionError("tokenizer server down")

    with pytest.raises(EmbeddingError, match="tokenizer server down"):
        embed_texts(Counting(), ["hello"])


# ---------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def tokenizer(real_embedder: FastEmbedEmbedder) -> Any:
    """The real model's tokenizer, untruncated (the window is real_embedder.max_tokens)."""
    return real_embedder._load_counter()


@pytest.mark.integration
def test_the_window_is_what_fastembed_truncates_at(real_embedder: FastEmbedEmbedder) -> None:
    """all-MiniLM-L6-v2 in fastembed reads 512 tokens, [CLS] and [SEP] included."""
    assert real_embedder.max_tokens == 512
    assert real_embedder.count_tokens("") == 2
    assert real_embedder._load().model.tokenizer.truncation["max_length"] == 512


@pytest.mark.integration
@settings(max_examples=60)
@given(text=_TEXT)
def test_every_chunk_fits_the_real_window(real_embedder: FastEmbedEmbedder, text: str) -> None:
    """Chunked with the model's own tokens, every chunk fits the window, counted exactly by
    the real tokenizer, and the chunks hold every non-space character of the text."""
    limit = real_embedder.max_tokens
    assert limit is not None
    parts = chunks(text, count_tokens=real_embedder._chunk_count, max_tokens=limit)
    assert all(real_embedder.count_tokens(p) <= limit for p in parts)
    assert _squeeze("".join(parts)) == _squeeze(text)


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(UNSPACED))
def test_unspaced_chunks_fit_the_real_window_even_estimated(
    real_embedder: FastEmbedEmbedder, name: str
) -> None:
    """The estimate alone keeps chunks of unspaced runs inside the real window too."""
    text = UNSPACED[name] + " zebra giraffe savanna"
    assert real_embedder.count_tokens(text) > 512
    for counted in (False, True):
        kwargs: dict[str, Any] = {}
        if counted:
            kwargs = {"count_tokens": real_embedder.count_tokens, "max_tokens": 512}
        parts = chunks(text, **kwargs)
        assert all(real_embedder.count_tokens(p) <= 512 for p in parts)


@pytest.mark.integration
@settings(max_examples=200)
@given(text=st.text(max_size=600))
def test_the_byte_bound_is_never_below_the_real_count(
    real_embedder: FastEmbedEmbedder, text: str
) -> None:
    """The shortcut that spares short texts a tokenizer pass (UTF-8 bytes + 2) never
    undercounts, for any Unicode text."""
    assert real_embedder._chunk_count(text) >= real_embedder.count_tokens(text)


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(UNSPACED))
def test_long_unspaced_texts_with_different_endings_differ(
    real_embedder: FastEmbedEmbedder, name: str
) -> None:
    """Two texts that share a long unspaced prefix (over the window) and end differently
    get different vectors; the ending pulls each toward a query for it."""
    prefix = UNSPACED[name]
    a, b = embed_texts(
        real_embedder, [prefix + " zebra giraffe savanna", prefix + " submarine volcano glacier"]
    )
    assert float(a @ b) < 0.999
    (q,) = embed_texts(real_embedder, ["zebra giraffe savanna"])
    assert float(a @ q) > float(b @ q)


@pytest.mark.integration
def test_short_texts_embed_exactly_as_before(real_embedder: FastEmbedEmbedder) -> None:
    """A text inside the window is one chunk, embedded as-is: the same vector as embedding
    it directly, bit for bit."""
    texts = ["hello world", "I prefer green tea in the afternoon.", ENGLISH, HEX[:300]]
    for text in texts:
        assert chunks(text, count_tokens=real_embedder._chunk_count, max_tokens=512) == [text]
    direct = normalize(real_embedder.embed_documents(texts), len(texts))
    assert np.array_equal(embed_texts(real_embedder, texts), direct)


@pytest.mark.parametrize("text", ["p p p p p p p x x x x x q", " ".join(["00"] * 44 + ["ff"])])
def test_evening_the_tail_repeats_no_words(text: str) -> None:
    """The tail's re-cut found its slice by searching the text from a wrong offset: in
    repeating text it started early, and words came out twice (13 words in, 14 out)."""
    got = chunks(text, words=1000, count_tokens=lambda p: len(p.split()), max_tokens=4)
    assert " ".join(got).split() == text.split()
