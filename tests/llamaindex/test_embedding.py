"""Any LlamaIndex ``BaseEmbedding`` can embed for the engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from llama_index.core.embeddings import MockEmbedding

from oblivion_core import InvalidInputError
from oblivion_core.testing import HashEmbedder, ManualClock, word_count
from oblivion_llamaindex import (
    OblivionMemory,
    OblivionMemoryBlock,
    OblivionNodePostprocessor,
    OblivionRetriever,
)
from oblivion_llamaindex._embedding import LlamaIndexEmbedder

from ._helpers import HashEmbedding, node


def test_wrapper_calls_batch_and_query_methods() -> None:
    """Documents go through the batch method and queries through the query method."""
    wrapper = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
    assert np.asarray(wrapper.embed_documents(["a", "b", "c"])).shape == (3, 8)
    assert np.asarray(wrapper.embed_query("q")).shape == (8,)
    assert "MockEmbedding" in repr(wrapper)


@pytest.mark.parametrize("bad", [None, "all-MiniLM-L6-v2", HashEmbedder(), lambda t: t])
def test_wrapper_rejects_non_llamaindex_models(bad: object) -> None:
    """Anything but a ``BaseEmbedding`` is refused with a message naming the type."""
    with pytest.raises(InvalidInputError, match="BaseEmbedding"):
        LlamaIndexEmbedder(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "cls", [OblivionNodePostprocessor, OblivionRetriever, OblivionMemoryBlock, OblivionMemory]
)
def test_from_defaults_embeds_with_the_given_model(cls: type, tmp_path: Path) -> None:
    """``from_defaults(path, embed_model=...)`` opens a store that embeds with that model."""
    adapter = cls.from_defaults(
        tmp_path / "store",
        embed_model=HashEmbedding(),
        engine_kwargs={"clock": ManualClock(), "token_counter": word_count},
    )
    engine = adapter.oblivion
    assert isinstance(engine.embedder, LlamaIndexEmbedder)
    engine.remember("refunds take five working days", id="r")
    engine.remember("the office cat is called Miso", id="c")
    top = engine.recall("how many days do refunds take", k=1, feedback=False)
    assert top.ids == ["r"]
    engine.close()


@pytest.mark.parametrize(
    ("cls", "typo"),
    [
        (OblivionNodePostprocessor, {"top_k": 2}),
        (OblivionRetriever, {"similarity_top_k": 2}),
        (OblivionMemoryBlock, {"token_limt": 50}),
        (OblivionMemory, {"session_id": "bob"}),
    ],
)
def test_a_refused_setting_leaves_the_store_closed(
    cls: type, typo: dict[str, object], tmp_path: Path
) -> None:
    """A setting ``from_defaults(path, ...)`` refuses closes the store it opened, so the
    corrected call opens it while the error is kept (as a notebook keeps its traceback)."""
    settings = {"embed_model": HashEmbedding(), "engine_kwargs": {"token_counter": word_count}}
    with pytest.raises((InvalidInputError, TypeError)) as kept:
        cls.from_defaults(tmp_path / "store", **settings, **typo)
    assert kept.value is not None  # held, as a notebook holds it
    adapter = cls.from_defaults(tmp_path / "store", **settings)
    adapter.oblivion.close()


def test_from_defaults_refuses_two_embedders(tmp_path: Path) -> None:
    """Passing both ``embed_model`` and an engine ``embedder`` is an error, not a silent pick."""
    with pytest.raises(InvalidInputError, match="either embed_model"):
        OblivionRetriever.from_defaults(
            tmp_path,
            embed_model=MockEmbedding(embed_dim=4),
            engine_kwargs={"embedder": HashEmbedder()},
        )


def test_postprocessor_ranks_with_a_llamaindex_embedding(tmp_path: Path) -> None:
    """With ``relevance="embedding"`` the node order follows the LlamaIndex model's similarity."""
    rerank = OblivionNodePostprocessor.from_defaults(
        None,
        embed_model=HashEmbedding(),
        engine_kwargs={"clock": ManualClock(), "token_counter": word_count},
        relevance="embedding",
    )
    nodes = [node("a", "the office cat is called Miso"), node("b", "refunds take five days")]
    out = rerank.postprocess_nodes(nodes, query_str="how long do refunds take")
    assert [n.node.node_id for n in out] == ["b", "a"]
