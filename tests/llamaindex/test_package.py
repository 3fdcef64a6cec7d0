"""The public surface of ``oblivion_llamaindex``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import oblivion_llamaindex
from oblivion_core import Oblivion
from oblivion_core.errors import InvalidInputError

PACKAGE = Path(oblivion_llamaindex.__file__).parent

EXPECTED_ALL = [
    "LLMImportanceScorer",
    "LLMSummarizer",
    "LLMSupersessionJudge",
    "OblivionMemory",
    "OblivionMemoryBlock",
    "OblivionNodePostprocessor",
    "OblivionRetriever",
]


def test_all_is_pinned() -> None:
    """``__all__`` lists exactly the four adapter classes and the three LLM hooks."""
    assert oblivion_llamaindex.__all__ == EXPECTED_ALL


def test_all_is_sorted_and_importable() -> None:
    """``__all__`` is sorted and every name in it is importable from the package."""
    assert sorted(oblivion_llamaindex.__all__) == oblivion_llamaindex.__all__
    for name in oblivion_llamaindex.__all__:
        assert getattr(oblivion_llamaindex, name).__name__ == name


def test_init_is_docstring_imports_and_all() -> None:
    """``__init__.py`` holds only a docstring, imports and ``__all__``."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    assert ast.get_docstring(tree)
    for stmt in tree.body[1:]:
        assert isinstance(stmt, ast.ImportFrom | ast.Import | ast.Assign), ast.dump(stmt)


@pytest.mark.parametrize(
    ("module", "cls"),
    [
        ("postprocessor", "OblivionNodePostprocessor"),
        ("retriever", "OblivionRetriever"),
        ("memory_block", "OblivionMemoryBlock"),
        ("memory", "OblivionMemory"),
    ],
)
def test_one_public_class_per_module(module: str, cls: str) -> None:
    """Each public module defines exactly one public class, the one it is named after."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    public = [
        n.name for n in tree.body if isinstance(n, ast.ClassDef) and not n.name.startswith("_")
    ]
    assert public == [cls]
    assert getattr(importlib.import_module(f"oblivion_llamaindex.{module}"), cls).__doc__


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_adapters_hold_no_decay_maths(path: Path) -> None:
    """No adapter module imports the engine's decay, tiering or state internals."""
    tree = ast.parse(path.read_text())
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    }
    forbidden = {"oblivion_core.decay", "oblivion_core.tiering", "oblivion_core.state", "numpy"}
    assert not imported & forbidden


def test_every_test_states_its_behaviour_in_a_docstring() -> None:
    """Each test in this suite has a one-sentence docstring."""
    missing = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and fn.name.startswith(
                "test_"
            ):
                doc = ast.get_docstring(fn) or ""
                if not doc.endswith(".") or doc.count(". ") > 0:
                    missing.append(f"{path.name}::{fn.name}")
    assert missing == []


@pytest.mark.parametrize(
    "cls",
    ["OblivionMemory", "OblivionMemoryBlock", "OblivionNodePostprocessor", "OblivionRetriever"],
)
def test_every_adapter_builds_on_a_given_engine(cls: str, engine: Oblivion) -> None:
    """Only ``OblivionMemory.from_defaults`` took ``oblivion=``.

    The others opened a new engine, then failed with "got multiple values".
    """
    adapter = getattr(oblivion_llamaindex, cls)
    assert adapter.from_defaults(oblivion=engine).oblivion is engine
    with pytest.raises(InvalidInputError, match="drop path"):
        adapter.from_defaults("./never-made", oblivion=engine)
    assert not Path("./never-made").exists()
