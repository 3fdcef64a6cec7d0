"""Embedders: the default local model (fastembed) and wrappers for anything else.

Vectors leave this module as float32 unit-length rows, so cosine similarity is a dot
product everywhere else.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from oblivion_core.errors import EmbeddingError, InvalidInputError
from oblivion_core.typing import Embedder, Vectors

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

#: Words per chunk when a text is longer than the model window. all-MiniLM-L6-v2 reads
#: 256 word pieces; 150 words stay inside it for ordinary English.
CHUNK_WORDS = 150


class FastEmbedEmbedder:
    """all-MiniLM-L6-v2 (or another fastembed model) running locally on ONNX.

    Args:
        model_name: A fastembed model name.
        model_path: A local directory holding the model (``model.onnx`` + tokenizer
            files). Defaults to ``$OBLIVION_EMBEDDING_MODEL_PATH``; when neither is set
            fastembed downloads the model into ``cache_dir``.
        cache_dir: Where fastembed keeps downloaded models.
        threads: ONNX runtime threads (``None`` = all cores).
        batch_size: Texts per ONNX call when embedding many texts.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        *,
        model_path: str | os.PathLike[str] | None = None,
        cache_dir: str | None = None,
        threads: int | None = None,
        batch_size: int = 64,
    ) -> None:
        self.model_name = model_name
        env_path = os.environ.get("OBLIVION_EMBEDDING_MODEL_PATH")
        self.model_path = str(model_path) if model_path is not None else env_path
        self.cache_dir = cache_dir
        self.threads = threads
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
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
                        self._model = TextEmbedding(self.model_name, **kwargs)
                    except Exception as exc:
                        raise EmbeddingError(
                            f"could not load embedding model {self.model_name!r}: {exc}. "
                            "Offline? Point OBLIVION_EMBEDDING_MODEL_PATH at a local copy."
                        ) from exc
        return self._model

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
        return np.asarray(list(model.embed(texts, batch_size=self.batch_size)), dtype=np.float32)

    def embed_query(self, text: str) -> Vectors:
        """Embed one query."""
        model = self._load()
        return np.asarray(next(iter(model.query_embed(text))), dtype=np.float32)


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
    if isinstance(embedder, Embedder):
        return embedder
    if hasattr(embedder, "get_text_embedding_batch") and hasattr(embedder, "get_query_embedding"):
        return _LlamaIndexStyleEmbedder(embedder)
    if callable(embedder):
        return _CallableEmbedder(embedder)
    raise InvalidInputError(
        "embedder must have embed_documents()/embed_query() (e.g. a LangChain Embeddings) or "
        f"be a callable list[str] -> vectors; got {type(embedder).__name__}"
    )


def normalize(vectors: Any, expected: int, dim: int | None = None) -> Vectors:
    """Validate an embedder's output and scale rows to unit length.

    Raises:
        EmbeddingError: wrong row count, inconsistent or unexpected dimension, NaN/inf,
            or an all-zero vector.
    """
    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"embedder returned something that is not a matrix: {exc}") from exc
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] != expected:
        raise EmbeddingError(
            f"embedder returned shape {arr.shape} for {expected} text(s); "
            f"expected ({expected}, dim)"
        )
    if dim is not None and arr.shape[1] != dim:
        raise EmbeddingError(
            f"embedder returned {arr.shape[1]}-d vectors but this store holds {dim}-d vectors; "
            "use the same embedding model the store was created with"
        )
    if not np.all(np.isfinite(arr)):
        raise EmbeddingError("embedder returned NaN or infinite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise EmbeddingError("embedder returned an all-zero vector")
    out: Vectors = (arr / norms).astype(np.float32)
    return out


def chunks(text: str, words: int = CHUNK_WORDS) -> list[str]:
    """Split a text into pieces of at most ``words`` words (one piece if it is short)."""
    parts = text.split()
    if len(parts) <= words:
        return [text]
    return [" ".join(parts[i : i + words]) for i in range(0, len(parts), words)]


def embed_texts(embedder: Embedder, texts: Sequence[str], dim: int | None = None) -> Vectors:
    """Embed stored texts; a text longer than the model window is embedded as the
    normalised mean of its chunks' vectors, so all of it counts in retrieval."""
    pieces: list[str] = []
    owners: list[int] = []
    for i, text in enumerate(texts):
        for piece in chunks(text):
            pieces.append(piece)
            owners.append(i)
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
