"""Clocks: where "now" comes from.

Only the engine reads a clock, once per operation; the maths takes ``now`` as an
argument. Half-lives in the policy are stated in the clock's unit.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping
from typing import Any

from oblivion_core.errors import InvalidInputError


class WallClock:
    """Seconds since the Unix epoch. Memories decay while the user is away."""

    unit = "seconds"

    def now(self) -> float:
        """Return ``time.time()``."""
        return time.time()


class TurnClock:
    """Counts interactions; idle time does not decay anything.

    The engine ticks it once per ``remember()``-ed memory, in that memory's namespace,
    and reads a namespace's time as ``now(namespace)``: the ticks every namespace shares
    (``tick()`` without a namespace) plus the namespace's own. So one user's conversation
    does not age another user's memories. ``now()`` counts every tick. The engine
    persists the counts, so a reopened store continues where it stopped, on its own
    clock or on a new ``TurnClock()`` passed to it (:meth:`catch_up`).
    """

    unit = "turns"

    def __init__(
        self, start: float = 0.0, *, namespaces: Mapping[str, float] | None = None
    ) -> None:
        _check_time(start)
        self._turn = float(start)  # shared by every namespace
        self._own: dict[str, float] = {}
        for ns, turns in (namespaces or {}).items():
            _check_time(turns)
            self._own[ns] = float(turns)
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (and deep-copied) without its lock, which a copy makes anew."""
        with self._lock:
            return {"_turn": self._turn, "_own": dict(self._own)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def now(self, namespace: str | None = None) -> float:
        """Interactions so far: of ``namespace`` (shared ones included), or all of them."""
        if namespace is None:
            return self._turn + sum(self._own.values())
        return self._turn + self._own.get(namespace, 0.0)

    @property
    def shared(self) -> float:
        """The ticks every namespace shares (``tick()`` without a namespace)."""
        return self._turn

    def own(self, namespace: str) -> float:
        """The ticks of ``namespace`` alone."""
        return self._own.get(namespace, 0.0)

    def owned(self) -> dict[str, float]:
        """The ticks of each namespace alone (namespaces that had any)."""
        with self._lock:
            return dict(self._own)

    def tick(self, turns: float = 1.0, namespace: str | None = None) -> float:
        """Advance by ``turns`` (>= 0), for one namespace or (``None``) for every one;
        returns the new :meth:`now` of ``namespace``."""
        _check_time(turns)
        if turns < 0:
            raise InvalidInputError(f"TurnClock.tick(turns={turns}): turns must be >= 0")
        with self._lock:
            if namespace is None:
                self._turn += turns
            else:
                self._own[namespace] = self._own.get(namespace, 0.0) + turns
            return self.now(namespace)

    def rewind(self, turns: float, namespace: str | None = None) -> float:
        """Take back ``turns`` (>= 0) of a :meth:`tick` whose write failed: a write that
        stored nothing was no interaction. Returns the new :meth:`now` of ``namespace``."""
        _check_time(turns)
        if turns < 0:
            raise InvalidInputError(f"TurnClock.rewind(turns={turns}): turns must be >= 0")
        with self._lock:
            if namespace is None:
                self._turn = max(self._turn - turns, 0.0)
            else:
                self._own[namespace] = max(self._own.get(namespace, 0.0) - turns, 0.0)
            return self.now(namespace)

    def catch_up(self, shared: float, namespaces: Mapping[str, float]) -> None:
        """Move forward to at least ``shared`` shared ticks and each namespace's own count
        in ``namespaces`` (a store's saved counts); nothing goes back. The engine calls it
        when a store is opened with a clock of its caller's (``clock=TurnClock()`` in a new
        process), so the store's time continues where it stopped."""
        _check_time(shared)
        for turns in namespaces.values():
            _check_time(turns)
        with self._lock:
            self._turn = max(self._turn, float(shared))
            for ns, turns in namespaces.items():
                self._own[ns] = max(self._own.get(ns, 0.0), float(turns))


class ManualClock:
    """A clock that moves only when told to: for tests and simulations.

    Works in any unit (seconds or turns); it never goes backwards.
    """

    unit = "manual"

    def __init__(self, start: float = 0.0) -> None:
        _check_time(start)
        self._now = float(start)

    def now(self) -> float:
        """Return the current manual time."""
        return self._now

    def advance(self, delta: float) -> float:
        """Move forward by ``delta`` (>= 0) and return the new time."""
        _check_time(delta)
        if delta < 0:
            raise InvalidInputError(f"ManualClock.advance({delta}): time never goes backwards")
        self._now += delta
        return self._now

    def set(self, value: float) -> float:
        """Jump to ``value``, which must not be earlier than the current time."""
        _check_time(value)
        if value < self._now:
            raise InvalidInputError(
                f"ManualClock.set({value}) is earlier than now ({self._now}); "
                "time never goes backwards"
            )
        self._now = float(value)
        return self._now

    def tick(self, turns: float = 1.0) -> float:
        """Alias of :meth:`advance`, so a ManualClock can stand in for a TurnClock."""
        return self.advance(turns)


def _check_time(value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"clock values must be finite numbers, got {value!r}")
