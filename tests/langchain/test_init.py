"""The public surface of oblivion_langchain."""

from __future__ import annotations

import oblivion_langchain

EXPECTED_ALL = [
    "LLMImportanceScorer",
    "LLMSummarizer",
    "LLMSupersessionJudge",
    "OblivionMemory",
    "OblivionMemoryMiddleware",
    "OblivionRetriever",
    "OblivionStore",
]


def test_all_is_pinned() -> None:
    """__all__ lists exactly the public classes, sorted."""
    assert oblivion_langchain.__all__ == EXPECTED_ALL
    assert sorted(oblivion_langchain.__all__) == oblivion_langchain.__all__


def test_every_name_in_all_is_importable() -> None:
    """Every name in __all__ is an attribute of the package."""
    for name in oblivion_langchain.__all__:
        assert getattr(oblivion_langchain, name) is not None


def test_no_decay_maths_in_the_adapters() -> None:
    """The adapters never import the engine's decay, tiering or adaptation maths."""
    import pathlib

    root = pathlib.Path(oblivion_langchain.__file__).parent
    for path in root.glob("*.py"):
        source = path.read_text()
        for module in ("oblivion_core.decay", "oblivion_core.tiering", "oblivion_core.adaptation"):
            assert module not in source, f"{path.name} imports {module}"
