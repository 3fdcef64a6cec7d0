"""Shared fixtures: fast in-memory engines, the real embedding model (loaded once per
session) and a real ``chroma run`` server (started only when a test asks for it)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from oblivion_core import FastEmbedEmbedder, ManualClock, Oblivion, UnknownNamespaceError, testing
from oblivion_core.testing import HashEmbedder, memory

# Engine-level properties touch Chroma and SQLite, whose first call in a process is slow;
# a per-example deadline would make them flaky without making them more correct.
settings.register_profile("oblivion", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "oblivion"))

DAY = 86_400.0


@pytest.fixture(autouse=True, scope="session")
def _journal_kinds_are_listed() -> Iterator[None]:
    """Every journal entry any test writes has a kind of ``EVENT_KINDS``, the list
    ``prune_journal(kinds=...)`` checks names against: a kind added without it fails the
    suite instead of being refused to users who name it."""
    from oblivion_core import state

    write = state._event_values

    def checked(at: float, wall: float, namespace: str, entries: Any) -> Any:
        entries = list(entries)
        unlisted = {e[1] for e in entries} - set(state.EVENT_KINDS)
        assert not unlisted, f"journal kinds missing from EVENT_KINDS: {unlisted}"
        return write(at, wall, namespace, entries)

    state._event_values = checked
    yield
    state._event_values = write


@pytest.fixture
def clock() -> ManualClock:
    """A manual clock at t=0 (seconds for wall-clock policies)."""
    return ManualClock()


@pytest.fixture
def mem(clock: ManualClock) -> Iterator[Oblivion]:
    """An in-memory engine: ManualClock, HashEmbedder, word-count tokens, balanced policy."""
    engine = memory(clock=clock)
    yield engine
    close_and_drop(engine)


def close_and_drop(engine: Oblivion) -> None:
    """Close an engine and drop its Chroma collections (the ephemeral client is shared)."""
    names = sorted(engine._known)  # namespaces() refuses a closed engine (some tests close it)
    engine.close()
    for ns in names:
        engine.store.drop(ns)


@pytest.fixture(scope="session")
def fresh() -> Callable[..., AbstractContextManager[Oblivion]]:
    """Build a throw-away in-memory engine (``memory(**kwargs)``) as a context manager;
    safe inside Hypothesis tests, which must not use function-scoped fixtures."""

    @contextmanager
    def make(**kwargs: Any) -> Iterator[Oblivion]:
        engine = memory(**kwargs)
        try:
            yield engine
        finally:
            close_and_drop(engine)

    return make


@pytest.fixture(scope="session")
def chroma_queries() -> Callable[[Oblivion], list[int]]:
    """Watch an engine's Chroma queries: returns a list that receives the ``n`` of every
    query recall then makes (an empty list: every archive search ran in memory)."""

    def spy(engine: Oblivion) -> list[int]:
        calls: list[int] = []
        real = engine.store.query

        def query(namespace: str, vector: Any, n: int) -> tuple[list[str], list[float]]:
            calls.append(n)
            return real(namespace, vector, n)

        engine.store.query = query  # type: ignore[method-assign]
        return calls

    return spy


@pytest.fixture(scope="session")
def snapshot() -> Callable[[Oblivion], dict[str, Any]]:
    """Everything a user can observe about an engine's stored memories and journal."""

    def take(engine: Oblivion) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for ns in engine.namespaces():
            try:
                records = engine.records(namespace=ns)
                events = engine.history(namespace=ns)
            except UnknownNamespaceError:
                continue
            out[ns] = {
                "records": [
                    (
                        r.id,
                        r.text,
                        r.category,
                        r.importance,
                        r.confidence,
                        r.activation,
                        r.decay_rate,
                        r.tier,
                        dict(r.metadata),
                        r.invalidated,
                        r.access_count,
                    )
                    for r in records
                ],
                "events": [(e.seq, e.kind, e.memory_id, e.before, e.after) for e in events],
                "chroma": engine.store.count(ns),
            }
        return out

    return take


class WindowedEmbedder(HashEmbedder):
    """A HashEmbedder that, like a real model, reads only its first ``window`` words."""

    def __init__(self, window: int = 200) -> None:
        super().__init__(dim=4096)  # wide enough that hashed features rarely collide
        self.window = window

    def _vector(self, text: str) -> Any:
        return super()._vector(" ".join(text.split()[: self.window]))


@pytest.fixture
def windowed_embedder() -> WindowedEmbedder:
    """An offline embedder with a 200-word window, for tests of long-text chunking."""
    return WindowedEmbedder()


@pytest.fixture(scope="session")
def real_embedder() -> FastEmbedEmbedder:
    """The real all-MiniLM-L6-v2 model through fastembed, loaded once per session."""
    embedder = FastEmbedEmbedder()
    embedder.embed_query("warm up")
    return embedder


@contextmanager
def _chroma_run(root: Path) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """Start ``chroma run`` with its data under ``root`` (``oblivion_core.testing``'s
    helper); skip the test where the command is missing, fail it if the server does not
    start."""
    if testing.chroma_binary() is None:
        pytest.skip("the `chroma` CLI is not installed (it ships with the chromadb package)")
    with ExitStack() as stack:
        try:
            started = stack.enter_context(testing.chroma_server(root))
        except RuntimeError as exc:
            pytest.fail(str(exc))
        yield started


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A real ``chroma run`` server on a free port; terminated when the session ends."""
    with _chroma_run(tmp_path_factory.mktemp("chroma-server")) as (host, port, _):
        yield host, port


@pytest.fixture
def own_chroma_server(tmp_path: Path) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """A ``chroma run`` server for one test, which may stop it (``proc.kill()``)."""
    root = tmp_path / "own-chroma"
    root.mkdir()
    with _chroma_run(root) as server:
        yield server
