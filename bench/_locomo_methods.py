"""The retrieval-method contract of the LoCoMo benchmark and the peer baselines.

A method is built once per conversation from the whole turn stream (in time order, with
one precomputed embedding per turn) and then ranks turns for each question, asked at a
given time. Methods with time-dependent state ingest the turns one by one at their
timestamps inside :meth:`RetrievalMethod.build`.

Every baseline shares the same embedder (all-MiniLM-L6-v2 through fastembed) and the same
vectors: each text is embedded once by :class:`Embedder`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, ClassVar

import chromadb
import numpy as np
from _locomo_data import Turn  # bench/ is on sys.path (see locomo.py, updates.py)
from chromadb.config import Settings
from fastembed import TextEmbedding
from langchain_classic.retrievers import TimeWeightedVectorStoreRetriever
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.utils.utils import mock_now
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core.postprocessor import TimeWeightedPostprocessor
from llama_index.core.schema import NodeWithScore, TextNode
from rank_bm25 import BM25Okapi
from tqdm import tqdm

EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PATH_ENV = "OBLIVION_EMBEDDING_MODEL_PATH"
RRF_K = 60


class Embedder:
    """Embed texts with fastembed, caching every vector by text.

    Args:
        model_name: fastembed model name.
        model_path: Local model directory; ``None`` reads ``$OBLIVION_EMBEDDING_MODEL_PATH``
            and, if that is unset too, lets fastembed fetch the model.
        batch_size: Texts per ONNX batch.
    """

    def __init__(
        self,
        model_name: str = EMBEDDING_MODEL,
        model_path: str | None = None,
        batch_size: int = 32,
    ) -> None:
        path = model_path if model_path is not None else os.environ.get(MODEL_PATH_ENV)
        kwargs: dict[str, Any] = {"specific_model_path": path} if path else {}
        self.model_name = model_name
        self.batch_size = batch_size
        self._model = TextEmbedding(model_name, **kwargs)
        self._cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str], *, progress: str | None = None) -> np.ndarray:
        """Return unit-norm float32 vectors, one row per text, embedding only unseen texts.

        Unseen texts are embedded shortest first so batches carry little padding.

        Args:
            texts: Texts to embed.
            progress: Label of a tqdm bar over the unseen texts; ``None`` shows no bar.
        """
        missing = sorted({t for t in texts if t not in self._cache}, key=lambda t: (len(t), t))
        if missing:
            vectors: Iterable[np.ndarray] = self._model.embed(missing, batch_size=self.batch_size)
            if progress is not None:
                vectors = tqdm(vectors, total=len(missing), desc=progress, unit="text")
            for text, vector in zip(missing, vectors, strict=True):
                vector = np.asarray(vector, dtype=np.float32)
                self._cache[text] = vector / np.linalg.norm(vector)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


class RetrievalMethod(ABC):
    """A retrieval method under test; one instance serves one conversation.

    Subclasses set :attr:`note` to say how the method was configured.

    Args:
        embedder: The shared embedding cache; use it to embed any extra text.
    """

    note: ClassVar[str] = ""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    @abstractmethod
    def build(self, turns: list[Turn], embeddings: np.ndarray, conv_id: str) -> None:
        """Ingest a conversation.

        Args:
            turns: Turns in time order; ``turns[i].timestamp`` is when turn ``i`` happened.
            embeddings: Unit-norm vectors, ``embeddings[i]`` for ``turns[i]``.
            conv_id: Conversation id, e.g. for naming a collection.
        """

    @abstractmethod
    def rank(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> list[str]:
        """Return up to ``k`` turn ids (``dia_id``), best first.

        Args:
            question: The question text.
            q_embedding: Its unit-norm vector.
            at_time: When the question is asked, seconds since the epoch.
            k: Maximum number of ids to return.
        """

    def observe(  # noqa: B027 - optional hook, most methods measure nothing extra
        self, question: str, q_embedding: np.ndarray, at_time: float, k: int
    ) -> None:
        """Take untimed measurements for one question, just before its :meth:`rank` call.

        Must leave the method's state as :meth:`rank` would find it without the call.
        """

    def report(self) -> dict[str, Any] | None:
        """Method-specific measurements of the conversation, read before :meth:`close`
        (JSON-serialisable; ``None``, the default, when the method has none)."""
        return None

    def close(self) -> None:  # noqa: B027 - optional hook, most methods hold nothing
        """Release resources (temporary directories, clients)."""


MethodFactory = Callable[[Embedder], RetrievalMethod]
"""What :data:`locomo.METHODS` maps a name to: a class or any callable taking the embedder."""


# --- helpers ---------------------------------------------------------------------------

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""A small English stopword list for BM25 (function words and question words)."""

_WORD = re.compile(r"[a-z0-9]+")


def bm25_tokens(text: str) -> list[str]:
    """Lowercase word tokens without stopwords."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def dense_order(embeddings: np.ndarray, q_embedding: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine ranking of unit-norm rows: (indices best first, their similarities)."""
    sims = embeddings @ q_embedding
    order = np.argsort(-sims, kind="stable")
    return order, sims[order]


class _BM25Index:
    """BM25Okapi over the turns; ranks only turns that share a term with the query."""

    def __init__(self, turns: list[Turn]) -> None:
        self._bm25 = BM25Okapi([bm25_tokens(t.memory_text) for t in turns])

    def order(self, question: str) -> np.ndarray:
        tokens = bm25_tokens(question)
        if not tokens:
            return np.zeros(0, dtype=np.int64)
        scores = self._bm25.get_scores(tokens)
        order = np.argsort(-scores, kind="stable")
        return order[scores[order] > 0]


class _CachedEmbeddings(Embeddings):
    """LangChain ``Embeddings`` view of the shared :class:`Embedder` cache."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self._embedder.embed([text])[0].tolist()


class _CosineInMemoryVectorStore(InMemoryVectorStore):
    """``InMemoryVectorStore`` whose relevance score is its cosine similarity.

    The base class defines no relevance function, so the time-weighted retriever would
    raise ``NotImplementedError``; langchain-chroma's cosine collections also report
    ``1 - cosine distance``, i.e. the cosine similarity.
    """

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda similarity: similarity


def _naive_utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).replace(tzinfo=None)


# --- baselines -------------------------------------------------------------------------


class ChromaMethod(RetrievalMethod):
    """Raw Chroma: embedded ``PersistentClient`` in a temp dir, cosine HNSW, top-k query.

    Turns are added one ``add`` call per turn, in time order, with their precomputed
    vectors. Besides following the streaming protocol, this keeps the run deterministic:
    chromadb 1.5's HNSW inserts a multi-item ``add`` in parallel, so a single batched add
    builds a slightly different graph (and top-50) from run to run.
    """

    note = (
        "chromadb PersistentClient (temp dir), hnsw space=cosine (other settings default), "
        "one add per turn with precomputed vectors, query_embeddings top-k"
    )

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(embedder)
        self._dir = tempfile.mkdtemp(prefix="locomo-chroma-")

    def build(self, turns: list[Turn], embeddings: np.ndarray, conv_id: str) -> None:
        self._client = chromadb.PersistentClient(
            path=self._dir, settings=Settings(anonymized_telemetry=False)
        )
        self._collection = self._client.create_collection(
            f"locomo-{conv_id}",
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
        )
        for turn, vector in zip(turns, embeddings, strict=True):
            self._collection.add(
                ids=[turn.dia_id], embeddings=[vector], documents=[turn.memory_text]
            )
        self._count = len(turns)

    def rank(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> list[str]:
        result = self._collection.query(
            query_embeddings=[q_embedding], n_results=min(k, self._count), include=[]
        )
        return list(result["ids"][0])

    def close(self) -> None:
        self.__dict__.pop("_collection", None)
        self.__dict__.pop("_client", None)
        shutil.rmtree(self._dir, ignore_errors=True)


class BM25Method(RetrievalMethod):
    """BM25 alone (rank_bm25 ``BM25Okapi``, lowercase words, small stopword list)."""

    note = "rank_bm25 BM25Okapi defaults; turns sharing no query term are not returned"

    def build(self, turns: list[Turn], embeddings: np.ndarray, conv_id: str) -> None:
        self._ids = [t.dia_id for t in turns]
        self._bm25 = _BM25Index(turns)

    def rank(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> list[str]:
        return [self._ids[i] for i in self._bm25.order(question)[:k]]


class RRFMethod(RetrievalMethod):
    """Plain reciprocal-rank fusion of the exact dense ranking and the BM25 ranking."""

    note = f"score = sum 1/({RRF_K} + rank) over the full dense and BM25 rankings"

    def build(self, turns: list[Turn], embeddings: np.ndarray, conv_id: str) -> None:
        self._ids = [t.dia_id for t in turns]
        self._embeddings = embeddings
        self._bm25 = _BM25Index(turns)

    def rank(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> list[str]:
        scores = np.zeros(len(self._ids))
        for order in (dense_order(self._embeddings, q_embedding)[0], self._bm25.order(question)):
            scores[order] += 1.0 / (RRF_K + np.arange(1, len(order) + 1))
        fused = np.argsort(-scores, kind="stable")
        return [self._ids[i] for i in fused[:k]]


class LangChainTimeWeightedMethod(RetrievalMethod):
    """LangChain's ``TimeWeightedVectorStoreRetriever`` over an in-memory vector store.

    Defaults (``decay_rate=0.01`` per hour, ``search_kwargs={"k": 100}``,
    ``default_salience=None``) except ``k``, which is set to the benchmark's ranking depth
    instead of 4; ``k`` also sets how many of the newest memories join the candidates.
    Turns are added one by one with ``current_time`` = their timestamp; questions run
    under ``mock_now(question time)``. The retriever stamps ``last_accessed_at`` on the docs
    it returns, so earlier questions of a conversation affect later ones, as for a user.
    Relevance is the cosine similarity, what langchain-chroma gives for a cosine collection
    (``InMemoryVectorStore`` defines no relevance function of its own).
    """

    note = (
        "langchain_classic TimeWeightedVectorStoreRetriever defaults (decay_rate=0.01, "
        "search_kwargs k=100) but k=rank_k (default 4); relevance = cosine; last_accessed_at "
        "updated by retrieval, questions in dataset order"
    )

    def build(self, turns: list[Turn], embeddings: np.ndarray, conv_id: str) -> None:
        self._retriever = TimeWeightedVectorStoreRetriever(
            vectorstore=_CosineInMemoryVectorStore(_CachedEmbeddings(self.embedder))
        )
        for turn in turns:
            doc = Document(page_content=turn.memory_text, metadata={"dia_id": turn.dia_id})
            self._retriever.add_documents(
                [doc], ids=[turn.dia_id], current_time=_naive_utc(turn.timestamp)
            )

    def rank(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> list[str]:
        self._retriever.k = k
        with mock_now(_naive_utc(at_time)):
            docs = self._retriever.invoke(question)
        return [doc.metadata["dia_id"] for doc in docs]


class LlamaIndexTimeWeightedMethod(RetrievalMethod):
    """LlamaIndex's ``TimeWeightedPostprocessor`` over the exact dense top-k.

    Candidates are fresh ``NodeWithScore`` objects (score = cosine similarity) whose
    ``__last_accessed__`` is the turn timestamp, as a ``VectorStoreIndex`` retriever
    returns them: it rebuilds nodes from the docstore on each query, so the
    postprocessor's access refresh (on by default) never reaches later queries.
    Defaults (``time_decay=0.99``) except ``top_k`` (default 1) and ``now``.
    """

    note = (
        "llama_index TimeWeightedPostprocessor defaults (time_decay=0.99) but top_k=rank_k "
        "(default 1), now=question time; exact dense top-rank_k candidates, fresh nodes per query"
    )

    def build(self, turns: list[Turn], embeddings: np.ndarray, conv_id: str) -> None:
        self._turns = turns
        self._embeddings = embeddings

    def rank(self, question: str, q_embedding: np.ndarray, at_time: float, k: int) -> list[str]:
        order, sims = dense_order(self._embeddings, q_embedding)
        nodes = [
            NodeWithScore(
                node=TextNode(
                    id_=self._turns[i].dia_id,
                    text=self._turns[i].memory_text,
                    metadata={"__last_accessed__": self._turns[i].timestamp},
                ),
                score=float(sim),
            )
            for i, sim in zip(order[:k], sims[:k], strict=True)
        ]
        postprocessor = TimeWeightedPostprocessor(now=at_time, top_k=k)
        ranked = postprocessor.postprocess_nodes(nodes, query_str=question)
        return [n.node.node_id for n in ranked]


BASELINES: dict[str, MethodFactory] = {
    "chroma": ChromaMethod,
    "bm25": BM25Method,
    "rrf": RRFMethod,
    "langchain_time_weighted": LangChainTimeWeightedMethod,
    "llamaindex_time_weighted": LlamaIndexTimeWeightedMethod,
}
