"""Small builders shared by the LlamaIndex adapter tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from _outage import SwitchableEmbedder
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory.types import BaseMemory
from llama_index.core.schema import BaseNode, NodeWithScore, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    VectorStoreQuery,
    VectorStoreQueryResult,
)

from oblivion_core import Oblivion
from oblivion_core.testing import HashEmbedder

HOUR = 3600.0
DAY = 24 * HOUR


def node(node_id: str, text: str, score: float | None = None, **metadata: object) -> NodeWithScore:
    """A scored text node."""
    return NodeWithScore(
        node=TextNode(id_=node_id, text=text, metadata=dict(metadata)), score=score
    )


def user(text: str) -> ChatMessage:
    """A user message."""
    return ChatMessage(role="user", content=text)


def assistant(text: str) -> ChatMessage:
    """An assistant message."""
    return ChatMessage(role="assistant", content=text)


def context_tokens(messages: Sequence[ChatMessage], counter) -> int:  # type: ignore[no-untyped-def]
    """Tokens of the messages' texts, counted one message at a time."""
    return sum(int(counter(m.content or "")) for m in messages)


class TextVectorStore(BasePydanticVectorStore):
    """An in-process vector store that keeps node text (``VectorMemoryBlock`` needs one;
    llama-index-core ships none). Exact cosine search, no filters."""

    stores_text: bool = True
    nodes: dict[str, BaseNode] = Field(default_factory=dict)

    @property
    def client(self) -> None:
        return None

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        for n in nodes:
            self.nodes[n.node_id] = n
        return [n.node_id for n in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        self.nodes = {k: n for k, n in self.nodes.items() if n.ref_doc_id != ref_doc_id}

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        q = np.asarray(query.query_embedding, dtype=float)
        scored = []
        for n in self.nodes.values():
            v = np.asarray(n.get_embedding(), dtype=float)
            scored.append((float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q))), n))
        scored.sort(key=lambda pair: -pair[0])
        top = scored[: query.similarity_top_k]
        return VectorStoreQueryResult(
            nodes=[n for _, n in top],
            similarities=[s for s, _ in top],
            ids=[n.node_id for _, n in top],
        )


class HashEmbedding(BaseEmbedding):
    """A LlamaIndex embedding over the core's deterministic :class:`HashEmbedder`:
    texts that share words get similar vectors."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in HashEmbedder().embed_query(query)]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_query_embedding(text)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class FlakyEmbedder(SwitchableEmbedder):
    """Times out (as an embedding API may) once, on the next write holding ``fail_on``,
    and on every call while ``down``."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_on: str | None = None

    def embed_documents(self, texts: list[str]) -> Any:
        if self.fail_on is not None and self.fail_on in texts:
            self.fail_on = None
            raise TimeoutError("embedding API timed out")
        return super().embed_documents(texts)


#: Turns of an agent conversation whose answers push earlier turns out of the window.
AGENT_TURNS = (
    "From now on, always answer in British English.",
    "My cat is called Whiskers.",
    "I live in Porto.",
    "I like tea.",
    "My sister is Anna.",
    "Tell me a joke.",
)


def weather(city: str = "Porto") -> str:
    """Weather in a city."""
    return "sunny"


async def agent_turns(
    engine: Oblivion,
    memory: BaseMemory,
    turns: Sequence[str],
    namespace: str,
    *,
    answer: str = "Done " * 12,
    call_tool: bool = False,
) -> list[tuple[Counter[str], set[str]]]:
    """Run each of ``turns`` through a ``FunctionAgent`` (a mock LLM answering
    ``answer``; with ``call_tool``, after a round calling ``weather`` first) and return,
    per turn, the recall boosts each memory got (by text) and the memories listed
    (``"- text"``) in a prompt the LLM was given."""
    prompts: list[str] = []
    calls = 0

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        nonlocal calls
        prompts.append("\n".join(m.content or "" for m in messages))
        if call_tool and not any(m.role == MessageRole.TOOL for m in messages):
            calls += 1
            block = ToolCallBlock(tool_call_id=f"call-{calls}", tool_name="weather", tool_kwargs={})
            return ChatMessage(role="assistant", blocks=[block])
        return ChatMessage(role="assistant", content=answer)

    agent = FunctionAgent(tools=[weather], llm=MockFunctionCallingLLM(response_generator=respond))

    def boosts() -> Counter[str]:
        if namespace not in engine.namespaces():
            return Counter()
        return Counter(
            e.memory_id for e in engine.history(namespace=namespace) if e.kind == "recall"
        )

    out = []
    for question in turns:
        prompts.clear()
        before = boosts()
        await agent.run(user_msg=question, memory=memory)
        known = namespace in engine.namespaces()
        texts = {r.id: r.text for r in engine.records(namespace=namespace)} if known else {}
        got = Counter({texts[m]: n for m, n in (boosts() - before).items() if m in texts})
        listed = {t for t in texts.values() if any(f"- {t}" in p for p in prompts)}
        out.append((got, listed))
    return out
