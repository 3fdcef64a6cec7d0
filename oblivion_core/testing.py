"""Helpers for testing code that uses Oblivion: no network, no model download, no sleeping.

* :class:`ManualClock` moves only when told to.
* :class:`HashEmbedder` is a deterministic offline embedder: texts sharing words get
  similar vectors (a hashed bag of words and character trigrams), good enough for
  tests of ranking logic, not for real retrieval quality.
* :func:`memory` builds an :class:`Oblivion` wired to both, in memory or on disk.
* :func:`chroma_server` runs a real ``chroma run`` server for a test of server mode.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from oblivion_core.cjk import pieces
from oblivion_core.clock import ManualClock
from oblivion_core.engine import Oblivion
from oblivion_core.typing import Vectors

__all__ = [
    "HashEmbedder",
    "ManualClock",
    "chroma_server",
    "memory",
    "wait_for_chroma",
    "word_count",
]

_WORD = re.compile(r"[a-z0-9']+")


#: A word of any script (letters, digits, apostrophes), for a text beyond ASCII.
_ANY_WORD = re.compile(r"[^\W_](?:[^\W_]|')*")


def _words(lower: str) -> list[str]:
    """The words :class:`HashEmbedder` hashes: ASCII ones as they always were; in a text
    beyond ASCII, words of any script, and a run of Chinese characters or kana as its
    characters and pairs (every such text used to embed as the same vector)."""
    if lower.isascii():
        return _WORD.findall(lower)
    return [p for w in _ANY_WORD.findall(lower) for p in pieces(w, singles=True)]


class HashEmbedder:
    """Deterministic bag-of-words embedder (``dim`` hashed buckets, unit length): texts
    sharing words, in any script, get similar vectors."""

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.calls = 0

    def _vector(self, text: str) -> Vectors:
        vec = np.zeros(self.dim, dtype=np.float32)
        words = _words(text.lower())
        feats = words + [w[i : i + 3] for w in words for i in range(max(len(w) - 2, 0))]
        for f in feats or ["<empty>"]:
            h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
            vec[h % self.dim] += 1.0 if f in words else 0.3
        norm = np.linalg.norm(vec)
        return vec / norm if norm else vec

    def embed_documents(self, texts: list[str]) -> Vectors:
        """Embed texts."""
        self.calls += 1
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> Vectors:
        """Embed one query."""
        self.calls += 1
        return self._vector(text)


def word_count(text: str) -> int:
    """A token counter for tests: whitespace-separated words."""
    return len(text.split())


def memory(path: str | Path | None = None, **kwargs: Any) -> Oblivion:
    """An :class:`Oblivion` with a :class:`ManualClock`, :class:`HashEmbedder` and
    :func:`word_count` (each overridable by keyword), in memory or, given a ``path``, on
    disk there (for tests of reopening a store)."""
    kwargs.setdefault("clock", ManualClock())
    kwargs.setdefault("embedder", HashEmbedder())
    kwargs.setdefault("token_counter", word_count)
    return Oblivion(path, **kwargs)


def chroma_binary() -> str | None:
    """The ``chroma`` command chromadb installs (beside this Python first), or ``None``."""
    beside_python = Path(sys.executable).with_name("chroma")
    if beside_python.exists():
        return str(beside_python)
    return shutil.which("chroma")


def wait_for_chroma(host: str, port: int, *, timeout: float = 30.0) -> None:
    """Return once a Chroma server at ``host:port`` answers a heartbeat (a server a
    test stopped and started again).

    Raises:
        RuntimeError: it did not answer within ``timeout`` seconds.
    """
    import chromadb

    deadline = time.monotonic() + timeout
    while True:
        try:
            chromadb.HttpClient(host=host, port=port).heartbeat()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"no Chroma server answered a heartbeat at {host}:{port} within {timeout:g} s"
                ) from None
            time.sleep(0.2)


@contextmanager
def chroma_server(
    path: str | Path, *, timeout: float = 30.0
) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """A real ``chroma run`` server on a free port, its data and ``server.log`` under
    ``path``; yields ``(host, port, process)`` once it answers a heartbeat and stops it
    on exit (a test may stop it sooner, ``process.kill()``, to test an outage)::

        with chroma_server(tmp_path) as (host, port, _):
            mem = Oblivion(tmp_path / "state", vector_store=VectorStore.server(host, port))

    Raises:
        FileNotFoundError: the ``chroma`` command is not installed.
        RuntimeError: the server exited, or did not answer within ``timeout`` seconds
            (the message ends with its log).
    """
    import chromadb

    binary = chroma_binary()
    if binary is None:
        raise FileNotFoundError(
            "the `chroma` command is not installed; it comes with the chromadb package"
        )
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("localhost", 0))
        port = int(s.getsockname()[1])
    log_path = root / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [binary, "run", "--path", str(root / "db"), "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + timeout
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"`chroma run` exited with code {proc.returncode}: "
                        f"{log_path.read_text(errors='replace')[-2000:]}"
                    )
                try:
                    chromadb.HttpClient(host="localhost", port=port).heartbeat()
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise RuntimeError(
                            f"`chroma run` did not answer a heartbeat on port {port} within "
                            f"{timeout:g} s: {log_path.read_text(errors='replace')[-2000:]}"
                        ) from None
                    time.sleep(0.2)
            yield "localhost", port, proc
        finally:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
