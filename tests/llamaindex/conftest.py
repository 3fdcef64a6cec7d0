"""Shared fixtures for the LlamaIndex adapter tests.

Unit tests run on :func:`oblivion_core.testing.memory` (in-memory store, hashed
embeddings, word-count tokens, manual clock). Integration tests (marked
``integration``) open a real store in ``tmp_path``: embedded Chroma, the local
all-MiniLM-L6-v2 model and tiktoken, with a :class:`ManualClock` for simulated time.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The editable install may list ``oblivion_llamaindex`` as a namespace package (it was
# installed before the package had an ``__init__``); putting the repository first on
# ``sys.path`` makes imports resolve to the real package either way.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from oblivion_core import Oblivion  # noqa: E402
from oblivion_core.testing import ManualClock, memory  # noqa: E402


@pytest.fixture
def clock() -> ManualClock:
    """A clock that moves only when a test moves it (seconds)."""
    return ManualClock(0.0)


@pytest.fixture
def engine(clock: ManualClock) -> Iterator[Oblivion]:
    """A fast in-memory engine driven by ``clock``."""
    mem = memory(clock=clock)
    yield mem
    mem.close()


@pytest.fixture
def real_engine(tmp_path: Path, clock: ManualClock) -> Iterator[Oblivion]:
    """A real on-disk engine (Chroma, MiniLM, tiktoken) driven by ``clock``."""
    mem = Oblivion(tmp_path / "store", clock=clock)
    yield mem
    mem.close()
