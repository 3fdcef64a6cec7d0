"""OblivionRetriever passes langchain-tests' standard retriever suite."""

from __future__ import annotations

import shutil
import tempfile
from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from oblivion_core import Oblivion
from oblivion_core.testing import memory
from oblivion_langchain import OblivionRetriever

TEXTS = [
    "The office moved to Leeds in March.",
    "Always answer in British English.",
    "The quarterly report is due on Friday.",
    "The team standup is at 9:30.",
    "Lunch is usually at noon.",
]


def _filled(engine: Oblivion) -> Oblivion:
    engine.remember_many(TEXTS)
    return engine


class TestOblivionRetrieverStandard(RetrieversIntegrationTests):
    """The standard suite against the fast in-memory engine."""

    _engine: Oblivion | None = None

    @classmethod
    def teardown_class(cls) -> None:
        """Close the shared engine (and remove its directory, if on disk)."""
        if cls._engine is not None:
            path = cls._engine.path
            cls._engine.close()
            cls._engine = None
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)

    @property
    def retriever_constructor(self) -> type[OblivionRetriever]:
        """The class under test."""
        return OblivionRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        """An engine holding a few memories, shared by the suite."""
        cls = type(self)
        if cls._engine is None:
            cls._engine = _filled(memory())
        return {"oblivion": cls._engine}

    @property
    def retriever_query_example(self) -> str:
        """A query with several relevant memories."""
        return "When is the report due?"


@pytest.mark.integration
class TestOblivionRetrieverStandardRealStack(TestOblivionRetrieverStandard):
    """The standard suite against Chroma on disk, MiniLM and tiktoken."""

    _engine: Oblivion | None = None

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        """A real on-disk engine holding a few memories, shared by the suite."""
        cls = type(self)
        if cls._engine is None:
            cls._engine = _filled(Oblivion(tempfile.mkdtemp(prefix="oblivion-std-")))
        return {"oblivion": cls._engine}
