"""Adapting a LlamaIndex ``BaseEmbedding`` to the engine's ``Embedder`` protocol."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding

from oblivion_core.errors import InvalidInputError


class LlamaIndexEmbedder:
    """Lets the engine embed with any LlamaIndex embedding model.

    ``embed_documents`` goes through ``get_text_embedding_batch`` (so the model's own
    batching applies) and ``embed_query`` through ``get_query_embedding`` (so query
    instructions some models prepend still apply). The engine normalises the vectors.

    Args:
        embed_model: Any LlamaIndex ``BaseEmbedding``.

    Raises:
        InvalidInputError: ``embed_model`` is not a ``BaseEmbedding``.
    """

    def __init__(self, embed_model: BaseEmbedding) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise InvalidInputError(
                "embed_model must be a LlamaIndex BaseEmbedding (e.g. MockEmbedding, "
                f"HuggingFaceEmbedding), got {type(embed_model).__name__}"
            )
        self.embed_model = embed_model

    def embed_documents(self, texts: list[str]) -> Sequence[Sequence[float]]:
        """Embed texts for storage."""
        return self.embed_model.get_text_embedding_batch(list(texts))

    def embed_query(self, text: str) -> Sequence[float]:
        """Embed a search query."""
        return self.embed_model.get_query_embedding(text)

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self.embed_model.class_name()})"
