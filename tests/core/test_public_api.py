"""The public surface of oblivion_core: pinned names, error types, no framework imports."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import oblivion_core
from oblivion_core import errors, testing

EXPECTED_ALL = [
    "EVENT_KINDS",
    "TEMPLATES",
    "Category",
    "EmbeddingError",
    "Event",
    "FastEmbedEmbedder",
    "HeuristicImportance",
    "ImportReport",
    "InvalidInputError",
    "MaintenancePlan",
    "ManualClock",
    "MemoryRecord",
    "ModelMismatchError",
    "Oblivion",
    "OblivionError",
    "PlanEntry",
    "Policy",
    "PolicyError",
    "RecallResult",
    "RecalledItem",
    "StoreConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreLockedError",
    "StorePathError",
    "TextTooLongError",
    "Tier",
    "TiktokenCounter",
    "TokenizerError",
    "TurnClock",
    "UnknownMemoryError",
    "UnknownNamespaceError",
    "VectorStore",
    "VectorStoreError",
    "WallClock",
]

FRAMEWORKS = ("langchain", "langchain_core", "langchain_classic", "langgraph", "llama_index")


def test_all_is_pinned() -> None:
    """`oblivion_core.__all__` is exactly the documented public API."""
    assert oblivion_core.__all__ == EXPECTED_ALL


def _isort_key(name: str) -> tuple[int, str]:
    # RUF022's "isort-style" order: CONSTANTS, then Classes, then functions; ordinal within.
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def test_all_is_sorted() -> None:
    """`__all__` is kept sorted: constants, then classes, then functions (ruff RUF022)."""
    assert oblivion_core.__all__ == sorted(oblivion_core.__all__, key=_isort_key)


@pytest.mark.parametrize("name", EXPECTED_ALL)
def test_every_public_name_resolves(name: str) -> None:
    """Every name in `__all__` is importable from the package root."""
    assert getattr(oblivion_core, name) is not None


def test_testing_module_api_is_pinned() -> None:
    """`oblivion_core.testing` ships exactly the helpers users need for their own tests."""
    assert testing.__all__ == [
        "HashEmbedder",
        "ManualClock",
        "chroma_server",
        "memory",
        "wait_for_chroma",
        "word_count",
    ]


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (errors.InvalidInputError, ValueError),
        (errors.TextTooLongError, ValueError),
        (errors.PolicyError, ValueError),
        (errors.UnknownMemoryError, KeyError),
        (errors.UnknownNamespaceError, KeyError),
        (errors.StoreError, OSError),
        (errors.StorePathError, OSError),
        (errors.StoreConflictError, OSError),
        (errors.StoreCorruptError, OSError),
        (errors.StoreLockedError, OSError),
        (errors.VectorStoreError, OSError),
        (errors.EmbeddingError, OSError),
    ],
)
def test_errors_subclass_library_base_and_builtin(error: type, builtin: type) -> None:
    """Every error is both an OblivionError and the built-in a Python user would catch."""
    assert issubclass(error, errors.OblivionError)
    assert issubclass(error, builtin)
    # LlamaIndex's sync wrappers turn a RuntimeError raised inside them into "Detected
    # nested async" (tests/llamaindex/test_memory_block.py)
    assert not issubclass(error, RuntimeError)


@pytest.mark.parametrize("error", [errors.UnknownMemoryError, errors.UnknownNamespaceError])
def test_key_errors_print_their_message_unquoted(error: type[Exception]) -> None:
    """KeyError subclasses print their message as written, not repr-quoted."""
    assert str(error("no memory 'x'")) == "no memory 'x'"


def test_core_imports_no_agent_framework() -> None:
    """Importing the whole core pulls in no LangChain, LangGraph or LlamaIndex module."""
    modules = [
        "oblivion_core",
        "oblivion_core.testing",
        "oblivion_core.engine",
        "oblivion_core.adaptation",
        "oblivion_core.overlap",
        "oblivion_core.importance",
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    leaked = [m for m in out if m.split(".")[0] in FRAMEWORKS]
    assert leaked == []


def test_console_scripts_resolve() -> None:
    """Every console script declared in pyproject.toml points at an importable callable."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    pyproject = Path(oblivion_core.__file__).resolve().parents[1] / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text())["project"].get("scripts", {})
    for name, target in scripts.items():
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), name


def test_results_records_and_events_hash_and_print_short() -> None:
    """Frozen dataclasses whose ``why``/metadata/detail are dicts: type checkers call them
    hashable, and ``set(mem.records())`` raised "unhashable type: 'dict'"; ``repr()`` of
    a recall printed every text and every ``why`` in full (23k characters for 8 items)."""
    from oblivion_core.testing import memory

    mem = memory()
    long = "The quarterly report covers revenue, churn and hiring. " * 30
    ids = [mem.remember(t, metadata={"k": [1]}).id for t in (long, "Tea at four.", "Rent is due.")]
    first, again = mem.recall("report", feedback=False), mem.recall("report", feedback=False)
    assert first == again and hash(first) == hash(again)
    assert len(set(first) | set(again)) == len(first)
    assert {r.id for r in set(mem.records())} == set(ids)
    assert len(set(mem.history())) == len(mem.history())
    head = first[:2]
    assert isinstance(head, tuple) and list(head) == list(first.items[:2])
    assert len(repr(first)) < 300 and first.ids[0] in repr(first)
    assert len(repr(first[0])) < 300 and len(repr(mem.get(ids[0]))) < 300
    assert "why" not in repr(first[0]) and "{'k'" not in repr(mem.get(ids[0]))
