"""Fixtures for the LangChain adapter tests.

Unit tests use the in-memory engine of :mod:`oblivion_core.testing` (hash embedder,
word-count tokens, manual clock) and run with sockets off. Tests marked
``integration`` use the real stack: embedded Chroma on disk, the local all-MiniLM-L6-v2
model and tiktoken (source ``../shared/offline-env.sh`` first).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from oblivion_core import FastEmbedEmbedder, Oblivion
from oblivion_core.testing import ManualClock, memory

# The venv's editable install was made before oblivion_langchain had an __init__.py,
# so its finder maps the package as a namespace package; put the repo root first so
# the real package is imported (re-running `pip install -e .` also fixes it).
REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
if getattr(sys.modules.get("oblivion_langchain"), "__file__", "") is None:
    del sys.modules["oblivion_langchain"]


@pytest.fixture(autouse=True)
def _network_off(request: pytest.FixtureRequest) -> Iterator[None]:
    """Unit tests run with the network off (Unix sockets stay allowed for asyncio)."""
    if request.node.get_closest_marker("integration") or request.node.get_closest_marker(
        "notebook"
    ):
        yield
        return
    import pytest_socket

    pytest_socket.disable_socket(allow_unix_socket=True)
    try:
        yield
    finally:
        pytest_socket.enable_socket()


@pytest.fixture
def clock() -> ManualClock:
    """A clock that only moves when told (seconds)."""
    return ManualClock()


@pytest.fixture
def engine(clock: ManualClock) -> Iterator[Oblivion]:
    """A fast in-memory engine: hash embedder, word-count tokens, manual clock."""
    mem = memory(clock=clock)
    yield mem
    names = mem.namespaces()
    mem.close()
    for name in names:  # the ephemeral Chroma client is shared by the whole process
        mem.store.drop(name)


@pytest.fixture(scope="session")
def real_embedder() -> FastEmbedEmbedder:
    """The local all-MiniLM-L6-v2 model, loaded once per session."""
    return FastEmbedEmbedder()


@pytest.fixture
def real_engine(
    tmp_path: Path, clock: ManualClock, real_embedder: FastEmbedEmbedder
) -> Iterator[Oblivion]:
    """The real stack on disk: embedded Chroma, MiniLM, tiktoken, a manual clock."""
    mem = Oblivion(tmp_path / "memory", clock=clock, embedder=real_embedder)
    yield mem
    mem.close()
