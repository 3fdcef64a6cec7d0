"""Noticing a fork: an engine opened before ``os.fork()`` is its parent's alone.

``gunicorn --preload`` (or ``multiprocessing`` with the fork start method) opens the app,
and with it the store, once, then forks the workers. Each worker inherits the parent's
:class:`~oblivion_core.Oblivion` object but not its lock on the store, its threads or a
working embedded Chroma (its Rust threads do not survive a fork: a write hung for good),
and its queued updates were written by the child and by the parent again. Calls on an
inherited instance are refused (:class:`~oblivion_core.write_behind.EngineLock`), and its
``close()`` only marks it closed. Each worker opens the store itself after the fork,
each with its own path.
"""

from __future__ import annotations

import os

_generation = 0


def generation() -> int:
    """How many forks this process is from the first one (0 there, 1 in a child...)."""
    return _generation


def _forked() -> None:
    global _generation
    _generation += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
