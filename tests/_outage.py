"""An embedder that can be down, shared by the adapters' tests (the LangChain and
LlamaIndex test folders share no package; ``tests/`` is on ``sys.path`` for both)."""

from __future__ import annotations

from typing import Any

from oblivion_core.testing import HashEmbedder


class SwitchableEmbedder(HashEmbedder):
    """An embedding API that can be down (it times out while ``down``)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def embed_documents(self, texts: list[str]) -> Any:
        if self.down:
            raise TimeoutError("embedding API timed out")
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        if self.down:
            raise TimeoutError("embedding API timed out")
        return super().embed_query(text)
