"""Embedders: the default local model (fastembed) and wrappers for anything else.

Vectors leave this module as float32 unit-length rows, so cosine similarity is a dot
product everywhere else.
"""

from __future__ import annotations

import inspect
import itertools
import json
import os
import re
import threading
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oblivion_core.errors import EmbeddingError, InvalidInputError, ModelMismatchError
from oblivion_core.typing import Embedder, TokenCounter, Vectors

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Seconds a model that failed to load fails again at once (offline, fastembed retries
#: for about 40 s: each call paid it again), before it is tried again.
LOAD_RETRY_SECONDS = 60.0

#: Words per chunk when a text is longer than this: 150 words of ordinary English are
#: about 200 word pieces, inside the 256 all-MiniLM-L6-v2 was trained on (fastembed
#: reads up to 512).
CHUNK_WORDS = 150

#: Estimated word pieces per chunk for an embedder that cannot count its own tokens
#: (see :func:`estimate_tokens`). 150 words of conversational English estimate at most
#: about 300, so they stay one chunk, as before; text dense in digits, symbols or
#: characters of unspaced scripts (ids, hex, URLs, base64, Chinese, Japanese) is cut
#: into chunks of at most 384 such characters, inside a 512-piece window.
CHUNK_TOKENS = 384

#: Latin letters per estimated word piece: English words mostly are one piece each.
_LETTERS_PER_TOKEN = 4

_LATIN_RUN = re.compile(r"[A-Za-z\u00c0-\u024f]+")
# emoji and other symbols: named when the model does not know them
_SYMBOLS = frozenset({"So", "Sk"})
# the zero-width joiner and variation selectors of emoji sequences
_JOINERS = dict.fromkeys(map(ord, "\u200d\ufe0e\ufe0f"))
_WORD = re.compile(r"\S+")


def _absolute_model_path(path: str | os.PathLike[str]) -> str:
    """``path`` made absolute as of now (a relative one stays the folder it names now).

    Raises:
        EmbeddingError: it is relative to a working directory that no longer exists.
    """
    try:
        # not os.path.abspath: it drops "x/.." by the string, where "x" may be a link
        return os.path.join(os.getcwd(), os.fspath(path))
    except OSError as exc:
        raise EmbeddingError(
            f"embedding model path {os.fspath(path)!r} is relative, and the working "
            f"directory it is relative to no longer exists ({exc.strerror or exc}); set "
            "OBLIVION_EMBEDDING_MODEL_PATH (or model_path=) to an absolute path"
        ) from exc


class FastEmbedEmbedder:
    """all-MiniLM-L6-v2 (or another fastembed model) running locally on ONNX.

    Args:
        model_name: A fastembed model name.
        model_path: A local directory holding the model (``model.onnx`` + tokenizer
            files), read as of construction (a relative one stays the folder it named
            then). Defaults to ``$OBLIVION_EMBEDDING_MODEL_PATH`` for the default model
            (the variable names a copy of all-MiniLM-L6-v2, not of another model); when
            neither is set fastembed downloads the model into ``cache_dir``. A model that
            failed to load (offline: fastembed retries for about 40 s) fails again at
            once for :data:`LOAD_RETRY_SECONDS`, then is tried again.
        cache_dir: Where fastembed keeps downloaded models.
        threads: ONNX runtime threads (``None`` = all cores).
        batch_size: Texts per ONNX call when embedding many texts. 32: a batched
            transformer pads each call's texts to its longest, and ``remember_many``
            hands them over shortest first; a write of 500 short texts took 897-920 ms
            with 32, 911-975 ms with 64 and 1,094 ms with fastembed's 256 on the
            2-core benchmark machine (``bench/embed_batch.py``).
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        *,
        model_path: str | os.PathLike[str] | None = None,
        cache_dir: str | None = None,
        threads: int | None = None,
        batch_size: int = 32,
    ) -> None:
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, (int, np.integer))
            or batch_size < 1
        ):
            raise InvalidInputError(
                f"batch_size must be a whole number of texts, 1 or more, got {batch_size!r}"
            )
        self.model_name = model_name
        env_path = os.environ.get("OBLIVION_EMBEDDING_MODEL_PATH") or None
        if not model_path and model_name == DEFAULT_MODEL:  # "" (an unset variable's)
            model_path = env_path
        self.model_path = _absolute_model_path(model_path) if model_path else None
        self._failed: tuple[float, EmbeddingError] | None = None  # when, and why
        self.cache_dir = cache_dir
        self.threads = threads
        self.batch_size = int(batch_size)
        self._model: Any = None
        self._counter: Any = None
        self._counter_loaded = False
        self._window: int | None = None
        self._specials: int | None = None
        # words WordPiece reads as one [UNK] (over its max_input_chars_per_word once
        # normalised): a run without spaces long enough to be one is looked at
        self._long_run: re.Pattern[str] | None = None
        self._word_chars = 0
        self._unk: int | None = None
        self._known_chars: dict[str, bool] = {}  # symbol -> in the model's vocabulary
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    failed = self._failed
                    if failed is not None and time.monotonic() - failed[0] < LOAD_RETRY_SECONDS:
                        raise EmbeddingError(
                            f"{failed[1]} (it failed {time.monotonic() - failed[0]:.0f} s ago: "
                            f"tried again {LOAD_RETRY_SECONDS:.0f} s after)"
                        ) from failed[1].__cause__
                    try:
                        self._model = self._open_model()
                        self._failed = None
                    except EmbeddingError as exc:
                        self._failed = (time.monotonic(), exc)
                        raise
        return self._model

    def _open_model(self) -> Any:
        """The fastembed model, loaded (downloaded first where it has to be).

        Raises:
            EmbeddingError: naming the folder or what to do offline.
        """
        from fastembed import TextEmbedding

        kwargs: dict[str, Any] = {"threads": self.threads}
        if self.model_path:
            if not os.path.isdir(self.model_path):
                raise EmbeddingError(
                    f"embedding model path {self.model_path!r} is not a directory; "
                    "set OBLIVION_EMBEDDING_MODEL_PATH (or model_path=) to a folder "
                    "holding model.onnx and tokenizer.json, or unset it to download"
                )
            kwargs["specific_model_path"] = self.model_path
        if self.cache_dir:
            kwargs["cache_dir"] = self.cache_dir
        try:
            return TextEmbedding(self.model_name, **kwargs)
        except Exception as exc:
            if self.model_path:
                fix = (
                    f"Check that {self.model_path!r} holds this model's files "
                    "(model.onnx and tokenizer.json, with its config files)"
                )
            else:
                default = self.model_name == DEFAULT_MODEL
                where = (
                    "OBLIVION_EMBEDDING_MODEL_PATH (or model_path=)" if default else "model_path="
                )
                fix = (
                    "Offline? Download it once where the network is reachable "
                    "(fastembed keeps it in cache_dir= or $FASTEMBED_CACHE_PATH), or point "
                    f"{where} at a folder holding its model.onnx and tokenizer.json"
                    + (
                        " (the Hugging Face repository Qdrant/all-MiniLM-L6-v2-onnx)"
                        if default
                        else ""
                    )
                    + "; HF_HUB_OFFLINE=1 makes a missing model fail at once, not after retries"
                )
            raise EmbeddingError(
                f"could not load embedding model {self.model_name!r}: {exc}. {fix}"
            ) from exc

    def _load_counter(self) -> Any:
        """A copy of the model's own tokenizer that neither truncates nor pads (``None``
        if fastembed does not expose it); sets :attr:`max_tokens` from the original."""
        model = self._load()
        if not self._counter_loaded:
            with self._lock:
                if not self._counter_loaded:
                    from tokenizers import Tokenizer

                    # TextEmbedding.model is the loaded OnnxTextModel; its tokenizer is the
                    # tokenizers.Tokenizer it encodes with, truncating at the window.
                    tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
                    truncation = getattr(tokenizer, "truncation", None) or {}
                    window = truncation.get("max_length")
                    if isinstance(tokenizer, Tokenizer) and isinstance(window, int):
                        serialized = tokenizer.to_str()
                        counter = Tokenizer.from_str(serialized)
                        counter.no_truncation()
                        counter.no_padding()
                        config = json.loads(serialized)
                        if _is_bert_style(config):
                            self._specials = len(counter.encode("").ids)
                            most = config["model"].get("max_input_chars_per_word")
                            unk = counter.token_to_id(str(config["model"].get("unk_token")))
                            if type(most) is int and most > 0 and unk is not None:
                                self._word_chars, self._unk = most, unk
                                # normalising may triple a word (Hangul into its letters)
                                shortest = most // 3 + 1
                                self._long_run = re.compile(rf"\S{{{shortest},}}")
                        self._counter, self._window = counter, window
                    self._counter_loaded = True
        return self._counter

    @property
    def max_tokens(self) -> int | None:
        """Tokens the model reads of one text, special tokens included (512 for
        all-MiniLM-L6-v2 in fastembed), or ``None`` if fastembed does not say."""
        self._load_counter()
        return self._window

    def count_tokens(self, text: str) -> int:
        """Tokens the model's tokenizer makes of ``text`` before truncation, special
        tokens included: a text fits the model iff this is at most :attr:`max_tokens`."""
        counter = self._load_counter()
        if counter is None:
            raise EmbeddingError(f"fastembed does not expose the tokenizer of {self.model_name}")
        return len(counter.encode(self._readable(text)).ids)

    def _readable(self, text: str) -> str:
        """``text`` as the model reads it: WordPiece reads a word longer than its limit
        (100 characters for all-MiniLM-L6-v2, once normalised: hex, base64, a long
        identifier, Thai or Hangul written without spaces) as one ``[UNK]``, so every such
        text got the same vector, and a long one was never chunked. Each such word is
        given to the model in pieces, halved until none is ``[UNK]`` (at most four
        rounds). And an emoji the model does not know was one ``[UNK]`` like any other:
        "🍕" and "👍" had one vector, at cosine 1.0, and so did "I love 🍕" and "I love
        🔥". Each such symbol is given to the model as its Unicode name ("slice of
        pizza"). Any other text is returned unchanged."""
        counter = self._load_counter()
        pattern, unk = self._long_run, self._unk
        if counter is None or pattern is None or unk is None:
            return text
        if pattern.search(text) is not None:
            text = self._split_long_words(text, counter, unk)
        if not text.isascii():  # an ASCII character is never [UNK]
            text = self._named(text, counter)
        return text

    def _named(self, text: str, counter: Any) -> str:
        """``text`` with each symbol the model does not know (an emoji: Unicode's
        ``So``/``Sk`` categories, read as ``[UNK]``) written as its Unicode name, and the
        joiners and variation selectors of emoji sequences left out; ``text`` itself
        when it has none. Letters of a script the model lacks (Thai) stay unknown:
        named, a sentence took 25 times its tokens (1 s to embed 300 characters) for
        vectors still alike."""
        out: list[str] = []
        named = False
        for ch in text:
            if (
                ord(ch) > 127
                and unicodedata.category(ch) in _SYMBOLS
                and self._unknown(ch, counter)
            ):
                name = unicodedata.name(ch, "")
                if name:
                    out.append(f" {name.lower()} ")
                    named = True
                    continue
            out.append(ch)
        if not named:
            return text
        return " ".join("".join(out).translate(_JOINERS).split())

    def _unknown(self, ch: str, counter: Any) -> bool:
        """Whether the model reads ``ch`` alone as ``[UNK]`` (cached per character)."""
        known = self._known_chars.get(ch)
        if known is None:
            known = self._known_chars[ch] = counter.token_to_id(ch) is not None
        return not known

    def _split_long_words(self, text: str, counter: Any, unk: int) -> str:
        """The pieces of :meth:`_readable`'s words too long for WordPiece."""
        piece = self._word_chars
        for _ in range(4):
            piece = max(piece // 2, 1)
            enc = counter.encode(text)
            spans = [
                (a, b)
                for i, (a, b) in zip(enc.ids, enc.offsets, strict=True)
                if i == unk and b - a > piece
            ]
            if not spans:
                break
            parts, last = [], 0
            for a, b in spans:
                run = text[a:b]
                parts += [
                    text[last:a],
                    " ".join(run[i : i + piece] for i in range(0, len(run), piece)),
                ]
                last = b
            text = "".join([*parts, text[last:]])
        return text

    def _chunk_count(self, text: str) -> int:
        """:meth:`count_tokens`, or a bound of it inside the window, found without
        tokenizing: with a BERT-style tokenizer a text of ``b`` UTF-8 bytes has at most
        ``b`` tokens besides the special ones (each piece covers at least one normalised
        character, and normalising no character yields more characters than it has bytes;
        checked for every code point), so a short text needs no tokenizer pass. A text
        beyond ASCII is bounded as the model reads it (an emoji it does not know is
        read as its name: :meth:`_readable`)."""
        self._load_counter()  # sets _specials and _window
        if self._specials is not None and self._window is not None:
            read = text if text.isascii() else self._readable(text)
            bound = len(read.encode("utf-8", "surrogatepass")) + self._specials
            if bound <= self._window:
                return bound
        return self.count_tokens(text)

    @property
    def busy_cores(self) -> bool:
        """Whether embedding keeps every core busy (ONNX threads on all of them).

        Work put on another thread beside such an embedding slows it down by more than
        the work itself (a parallel ONNX step waits for its slowest thread), so recall
        then searches BM25 after the query embedding instead of during it.
        """
        return self.threads is None or self.threads >= (os.cpu_count() or 1)

    def embed_documents(self, texts: list[str]) -> Vectors:
        """Embed texts for storage."""
        model = self._load()
        readable = [self._readable(t) for t in texts]
        return np.asarray(list(model.embed(readable, batch_size=self.batch_size)), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        """Embed one query."""
        model = self._load()
        return np.asarray(next(iter(model.query_embed(self._readable(text)))), dtype=np.float32)


def _is_bert_style(config: dict[str, Any]) -> bool:
    """Whether a ``tokenizer.json`` is BERT's: BertNormalizer (or none), BertPreTokenizer,
    WordPiece. Its token count is then at most the text's UTF-8 bytes plus the specials."""
    normalizer = config.get("normalizer") or {"type": "BertNormalizer"}
    pre = config.get("pre_tokenizer") or {}
    model = config.get("model") or {}
    return (
        normalizer.get("type") == "BertNormalizer"
        and pre.get("type") == "BertPreTokenizer"
        and model.get("type") == "WordPiece"
    )


class _LlamaIndexStyleEmbedder:
    """Adapts objects with ``get_text_embedding_batch``/``get_query_embedding`` (LlamaIndex
    ``BaseEmbedding``) without importing LlamaIndex."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def embed_documents(self, texts: list[str]) -> Any:
        return self._model.get_text_embedding_batch(texts)

    def embed_query(self, text: str) -> Any:
        return self._model.get_query_embedding(text)


class _CallableEmbedder:
    """Adapts ``f(list[str]) -> vectors`` to the :class:`Embedder` protocol."""

    def __init__(self, fn: Callable[[list[str]], Any]) -> None:
        self._fn = fn

    def embed_documents(self, texts: list[str]) -> Any:
        return self._fn(texts)

    def embed_query(self, text: str) -> Any:
        return self._fn([text])[0]


def resolve_embedder(embedder: object) -> Embedder:
    """Accept ``None`` (the local default), an :class:`Embedder`, or a plain callable."""
    if embedder is None:
        return FastEmbedEmbedder()
    if isinstance(embedder, type):  # its methods would be called without an instance
        raise InvalidInputError(
            f"embedder must be an instance, got the class {embedder.__name__}: pass "
            f"{embedder.__name__}(...)"
        )
    if isinstance(embedder, Embedder):
        _refuse_async(embedder, "embed_documents", "embed_query")
        return embedder
    if hasattr(embedder, "get_text_embedding_batch") and hasattr(embedder, "get_query_embedding"):
        _refuse_async(embedder, "get_text_embedding_batch", "get_query_embedding")
        return _LlamaIndexStyleEmbedder(embedder)
    if callable(embedder):
        _refuse_async(embedder, "__call__")
        return _CallableEmbedder(embedder)
    raise InvalidInputError(
        "embedder must have embed_documents()/embed_query() (e.g. a LangChain Embeddings) or "
        f"be a callable list[str] -> vectors; got {type(embedder).__name__}"
    )


def _refuse_async(embedder: object, *methods: str) -> None:
    """Refuse an embedder whose ``methods`` (the ones Oblivion calls) are async: each
    call would return a coroutine, found only on first use.

    Raises:
        InvalidInputError: naming the async ones.
    """
    asynchronous = [
        f"its {m}()"
        for m in methods
        if inspect.iscoroutinefunction(getattr(embedder, m, None))
        or (m == "__call__" and inspect.iscoroutinefunction(embedder))
    ]
    if asynchronous:
        raise InvalidInputError(
            f"the embedder is async ({', '.join(asynchronous)}); Oblivion calls embedders "
            "synchronously: pass a synchronous one (a LangChain Embeddings' "
            "embed_documents/embed_query, or a plain function)"
        )


def normalize(
    vectors: Any, expected: int, dim: int | None = None, source: str = "embedder returned"
) -> Vectors:
    """Validate an embedder's output and scale rows to unit length.

    ``source`` starts each error message (vectors a caller gave: ``"embeddings has"``).

    Raises:
        EmbeddingError: wrong row count, inconsistent or unexpected dimension, NaN/inf,
            or an all-zero vector.
    """
    if inspect.isawaitable(vectors):
        if inspect.iscoroutine(vectors):
            vectors.close()  # never awaited: no warning about it
        raise EmbeddingError(
            f"{source} an awaitable, not vectors: Oblivion calls embedders synchronously; "
            "pass one whose methods return the vectors"
        )
    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except Exception as exc:  # a tensor that needs grad, an int beyond float range, ...
        raise EmbeddingError(
            f"{source} something that is not a matrix of numbers ({type(exc).__name__}: {exc})"
        ) from exc
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] != expected:
        raise EmbeddingError(
            f"{source} shape {arr.shape} for {expected} text(s); expected ({expected}, dim)"
        )
    if arr.shape[1] == 0:
        raise EmbeddingError(f"{source} empty vectors (0 dimensions)")
    if dim is not None and arr.shape[1] != dim:
        problem = f"{source} {arr.shape[1]}-d vectors but this store holds {dim}-d vectors"
        raise ModelMismatchError(
            f"{problem}; use the same embedding model the store was created with",
            problem=problem,
        )
    finite = np.asarray(np.isfinite(arr).all(axis=1))
    if not finite.all():
        raise EmbeddingError(f"{source} NaN or infinite values{_which(~finite)}")
    # in float64: squares of float32 values above ~1.8e19 overflowed (every row became 0)
    # and below ~1e-23 underflowed (taken as all-zero)
    wide = arr.astype(np.float64)
    norms = np.linalg.norm(wide, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise EmbeddingError(f"{source} an all-zero vector{_which(norms[:, 0] == 0)}")
    out: Vectors = (wide / norms).astype(np.float32)
    return out


def _which(bad: npt.NDArray[np.bool_]) -> str:
    """Which texts of a batch got a bad vector, in words (nothing for a batch of one)."""
    if len(bad) == 1:
        return ""
    rows = np.flatnonzero(bad)
    more = f" and {len(rows) - 1:,} more" if len(rows) > 1 else ""
    return f" for text {rows[0]} (counting from 0) of the {len(bad):,}{more}"


def given_vectors(values: Any, expected: int, dim: int | None, name: str) -> Vectors:
    """Vectors a caller computed for ``expected`` texts (``remember_many(embeddings=)``),
    checked as an embedder's output is and scaled to unit length.

    Raises:
        InvalidInputError: naming ``name``: not one vector per text, another size than
            ``dim``, NaN or infinite values, or an all-zero vector.
    """
    if values is None or isinstance(values, (str, bytes, Mapping)):
        raise InvalidInputError(
            f"{name} must be one vector per text (a list of lists of numbers, or a 2-D "
            f"array), got {type(values).__name__}"
        )
    try:
        return normalize(values, expected, dim, f"{name} has")
    except EmbeddingError as exc:
        raise InvalidInputError(str(exc)) from None


def estimate_tokens(text: str) -> int:
    """Word pieces a text is assumed to take when the embedder cannot count them.

    One per four Latin letters of a run, rounded up (English words mostly are one piece),
    but one per letter of a run whose case changes inside it (base64, ids: not words);
    one per any other character but whitespace (digits, punctuation, symbols, Chinese,
    Japanese, every other script), about the most a word-piece tokenizer spends on one.
    Made-up lower-case words can take more (up to four times), and so can rare Hangul
    syllables (a BERT tokenizer may split one into three jamo).
    """
    pieces = len(text) - sum(map(str.isspace, text))
    for m in _LATIN_RUN.finditer(text):
        run = m.group()
        if len(run) > 1:  # a lone letter is one character, counted already
            mixed = not (run[1:].islower() or run.isupper())
            pieces += (len(run) if mixed else -(-len(run) // _LETTERS_PER_TOKEN)) - len(run)
    return pieces


def _fits_estimate(piece: str) -> bool:
    """Whether :func:`estimate_tokens` of ``piece`` is at most :data:`CHUNK_TOKENS`."""
    # ASCII is estimated at most one piece per character: a short piece needs no count
    return (len(piece) <= CHUNK_TOKENS and piece.isascii()) or (
        estimate_tokens(piece) <= CHUNK_TOKENS
    )


def _last_fitting(
    fits: Callable[[int], bool], lo: int, hi: int, guess: int | None = None
) -> int | None:
    """A large ``x`` in ``[lo, hi]`` with ``fits(x)``, assuming ``fits`` holds up to some
    point and not after it: the last one, or one within 1/16 of the way from ``lo`` to
    it. ``None`` if ``fits(lo)`` is false. Gallops from ``guess`` (else from ``lo``) up or
    down, then bisects: a good guess (the size of the slice before) costs two or three
    probes. Only returns a value ``fits`` was true for."""
    step = 1
    if guess is not None and lo < guess <= hi:
        step = max(1, (guess - lo) // 16)
        if fits(guess):
            good, bad = guess, hi + 1
        else:
            if not fits(lo):
                return None
            good, bad = lo, guess
            while good + 1 < bad:  # gallop down to a value that fits
                probe = max(bad - step, good + 1)
                if fits(probe):
                    good = probe
                    break
                bad, step = probe, step * 2
            step = bad - good  # then only bisect
    elif fits(lo):
        good, bad = lo, hi + 1
    else:
        return None
    while good + step < bad:  # gallop up to a value that does not fit
        if not fits(good + step):
            bad = good + step
            break
        good, step = good + step, step * 2
    while good + 1 < bad and bad - good > (good - lo) // 16:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


def _split_to_fit(piece: str, fits: Callable[[str], bool]) -> list[str]:
    """Cut ``piece`` into consecutive slices that each satisfy ``fits``, greedily: each
    slice ends at (about) the last word that still fits; a word that does not fit on its
    own is cut between characters (a single character that does not fit is sent alone:
    nothing smaller exists)."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(piece)]
    if not words:
        return [piece]  # only whitespace: nothing to cut, and nothing may vanish
    out: list[str] = []
    i = 0
    start = words[0][0]
    chars, spanned = 0, 0  # characters and words of the slice before: the next guess
    while i < len(words):

        def to_char(e: int, s: int = start) -> bool:
            return fits(piece[s:e])

        def to_word(k: int, s: int = start) -> bool:
            return fits(piece[s : words[k][1]])

        # characters first: a long unspaced run is only tokenized a little beyond what
        # fits, never whole once per slice
        end = words[i][1]
        guess = min(end, start + (chars or 256))
        cut = _last_fitting(to_char, start + 1, end, guess)
        if cut is None or cut < end:
            cut = cut if cut is not None else start + 1
            out.append(piece[start:cut])
            chars, start = cut - start, cut  # the rest of word i starts the next slice
            continue
        j = _last_fitting(to_word, i, len(words) - 1, i + spanned if spanned else None)
        j = j if j is not None else i  # to_word(i) is to_char(end), which fitted
        out.append(piece[start : words[j][1]])
        spanned, i = j - i, j + 1
        if i < len(words):
            start = words[i][0]
    return _even_tail(piece, out, fits)


def _even_tail(piece: str, slices: list[str], fits: Callable[[str], bool]) -> list[str]:
    """The greedy cut's last slice can be a few words: its vector would weigh as much as
    a whole window's in the mean. The last two slices are cut again at the word boundary
    nearest their middle when both halves fit."""
    if len(slices) < 2 or 2 * len(slices[-1]) >= len(slices[-2]):
        return slices
    # where each slice sits: found in order, each after the one before (a slice starts
    # at the first non-space after its predecessor, so the first match from there is it)
    at = 0
    starts = []
    for piece_slice in slices:
        at = piece.index(piece_slice, at)
        starts.append(at)
        at += len(piece_slice)
    tail = piece[starts[-2] : starts[-1] + len(slices[-1])]
    middle = len(tail) // 2
    gaps = [m.start() for m in re.finditer(r"\s+", tail)]
    if not gaps:
        return slices  # one unspaced run: its cut between characters stays
    cut = min(gaps, key=lambda g: abs(g - middle))
    first, second = tail[:cut].rstrip(), tail[cut:].lstrip()
    if first and second and fits(first) and fits(second) and len(second) > len(slices[-1]):
        return [*slices[:-2], first, second]
    return slices


def chunks(
    text: str,
    words: int = CHUNK_WORDS,
    *,
    count_tokens: TokenCounter | None = None,
    max_tokens: int | None = None,
) -> list[str]:
    """Split a text into pieces the embedding model reads whole (one piece if it fits).

    First, as always, a text of more than ``words`` whitespace-separated words is split
    into as few runs of at most ``words`` words as it takes, of equal length (151 words
    are two runs of 76 and 75, not 150 and a one-word tail), joined by single spaces.
    Then any piece over the window
    is cut further, at word boundaries where possible and between characters inside a
    word that is over the window on its own (a long unspaced run: Chinese or Japanese
    text, hex, a URL, base64). Nothing of the text is dropped but whitespace.

    The window: with ``count_tokens`` and ``max_tokens`` (the embedder's own tokenizer,
    special tokens included), a piece fits iff ``count_tokens(piece) <= max_tokens`` (so
    an upper bound of the count is as good, where it is within ``max_tokens``); without
    them, iff :func:`estimate_tokens` is at most :data:`CHUNK_TOKENS`. A text of at most
    ``words`` words that fits is returned as-is, whitespace and all, so it gets the same
    vector as it did before chunking looked at tokens.
    """
    fits: Callable[[str], bool] = _fits_estimate
    if count_tokens is not None and max_tokens is not None:
        counter, limit = count_tokens, max_tokens

        def fits(piece: str) -> bool:
            return counter(piece) <= limit

    parts = text.split()
    if len(parts) <= words:
        pieces = [text]
    else:  # as few runs as fit, of equal length (within a word): no one-word tail
        n, k = len(parts), -(-len(parts) // words)
        bounds = [i * n // k for i in range(k + 1)]
        pieces = [" ".join(parts[a:b]) for a, b in itertools.pairwise(bounds)]
    out: list[str] = []
    for piece in pieces:
        out.extend([piece] if fits(piece) else _split_to_fit(piece, fits))
    return out


def _token_window(embedder: Embedder) -> tuple[TokenCounter, int] | None:
    """How to measure chunks for ``embedder``: its own ``count_tokens`` and ``max_tokens``
    if it has both (as :class:`FastEmbedEmbedder` has), else ``None`` (estimate)."""
    count = getattr(embedder, "count_tokens", None)
    if not callable(count):
        return None
    limit = getattr(embedder, "max_tokens", None)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        return None
    if isinstance(embedder, FastEmbedEmbedder):
        return embedder._chunk_count, limit
    return count, limit


def embed_texts(embedder: Embedder, texts: Sequence[str], dim: int | None = None) -> Vectors:
    """Embed stored texts; a text longer than the model window is embedded as the
    normalised mean of its chunks' vectors (chunks of about equal length), so all of it
    counts in retrieval.

    Chunks come from :func:`chunks`: measured with the embedder's own tokenizer when it
    has ``count_tokens(text) -> int`` and ``max_tokens: int`` (special tokens included,
    as :class:`FastEmbedEmbedder` has), estimated otherwise.
    """
    window = _token_window(embedder)
    count, limit = window if window is not None else (None, None)
    pieces: list[str] = []
    owners: list[int] = []
    try:
        for i, text in enumerate(texts):
            for piece in chunks(text, count_tokens=count, max_tokens=limit):
                pieces.append(piece)
                owners.append(i)
    except EmbeddingError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"embedder failed to count tokens: {exc}") from exc
    # shortest first: a batched transformer pads each batch to its longest text, so
    # neighbours of similar length waste less work (the vectors are the same)
    order = sorted(range(len(pieces)), key=lambda j: len(pieces[j]))
    try:
        raw = embedder.embed_documents([pieces[j] for j in order])
    except EmbeddingError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"embedder failed: {exc}") from exc
    ordered = normalize(raw, len(pieces), dim)
    vecs = np.empty_like(ordered)
    vecs[order] = ordered
    if len(pieces) == len(texts):
        return vecs
    out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
    np.add.at(out, np.asarray(owners), vecs)
    return normalize(out, len(texts))


def embed_query(embedder: Embedder, text: str, dim: int | None = None) -> Vectors:
    """Embed a query into a unit row vector of shape ``(1, dim)``."""
    try:
        raw = embedder.embed_query(text)
    except EmbeddingError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"embedder failed on the query: {exc}") from exc
    return normalize(raw, 1, dim)
