"""Clocks: where "now" comes from.

Only the engine reads a clock, once per operation; the maths takes ``now`` as an
argument. Half-lives in the policy are stated in the clock's unit.
"""

from __future__ import annotations

import math
import threading
import time

from oblivion_core.errors import InvalidInputError


class WallClock:
    """Seconds since the Unix epoch. Memories decay while the user is away."""

    unit = "seconds"

    def now(self) -> float:
        """Return ``time.time()``."""
        return time.time()


class TurnClock:
    """Counts interactions; idle time does not decay anything.

    The engine advances it once per ``remember()`` (one stored turn = one interaction)
    and persists the count, so a reopened store continues where it stopped.
    """

    unit = "turns"

    def __init__(self, start: float = 0.0) -> None:
        _check_time(start)
        self._turn = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        """Return the number of interactions so far."""
        return self._turn

    def tick(self, turns: float = 1.0) -> float:
        """Advance by ``turns`` (>= 0) and return the new count."""
        _check_time(turns)
        if turns < 0:
            raise InvalidInputError(f"TurnClock.tick(turns={turns}): turns must be >= 0")
        with self._lock:
            self._turn += turns
            return self._turn

    def rewind(self, turns: float) -> float:
        """Take back ``turns`` (>= 0) of a :meth:`tick` whose write failed: a write that
        stored nothing was no interaction. Returns the new count."""
        _check_time(turns)
        if turns < 0:
            raise InvalidInputError(f"TurnClock.rewind(turns={turns}): turns must be >= 0")
        with self._lock:
            self._turn = max(self._turn - turns, 0.0)
            return self._turn


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
