r"""Per-category decay clocks: changing a category's decay rate costs O(1), not O(memories).

A memory of category *c* decays at :math:`\lambda_c(t) / (1 + \sigma u)`; when the category
rate changes (self-adaptation, a new policy) only the future may decay at the new rate. The
exponent of the decay since a memory's last event is therefore the integral of the rate over
that span. Each category of a namespace has a clock

.. math:: D_c(t) = d_0 + r\,(t - t_0)

that accumulates the decay of an unslowed memory: piecewise linear in *t*, with a new piece
(:meth:`DecayClock.readings` with a different rate) wherever the rate changed. A memory
stores the reading :math:`d_{ref} = D_c(t_{ref})` of its last event, and
:math:`A(t) = \max(\min(A_{ref}, f),\, A_{ref}\, e^{-(D_c(t) - d_{ref}) / (1 + \sigma u)})`
(:func:`oblivion_core.decay.activation_now`).

Before, a rate change rewrote ``(a_ref, t_ref)`` of every memory of the category ("rebase")
inside ``maintain()``'s lock: 0.3-1 s for the 50,000 facts of a 100k-memory store, and
every adaptation of that category paid it again. Now it starts one piece.

Pure: no clock reads, no I/O. The engine persists :meth:`DecayClock.to_json` whenever
:attr:`DecayClock.dirty` is set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


class DecayClock:
    """The decay clocks of the categories of one namespace.

    ``pieces[category] = (t0, d0, rate)``: the current linear piece. A category seen for the
    first time starts at ``(now, 0.0, rate)``.
    """

    def __init__(self, pieces: Mapping[str, Sequence[float]] | None = None) -> None:
        self.pieces: dict[str, tuple[float, float, float]] = {
            c: (float(p[0]), float(p[1]), float(p[2])) for c, p in (pieces or {}).items()
        }
        #: Set when a piece was added or started; cleared by whoever persisted it.
        self.dirty = False
        # the pieces of the last categories asked for, as arrays (readings are vectorised),
        # and the last readings: a recall reads the clocks several times at one ``now``
        self._key: tuple[tuple[str, ...], bytes] | None = None
        self._seen: tuple[Any, Any, int] | None = None
        self._t0: FloatArray = np.zeros(0)
        self._d0: FloatArray = np.zeros(0)
        self._rate: FloatArray = np.zeros(0)
        self._memo: tuple[float, FloatArray] | None = None  # (now, readings): one object

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DecayClock) and self.pieces == other.pieces

    __hash__ = None  # type: ignore[assignment]  # mutable

    def readings(self, categories: Sequence[str], rates: FloatArray, now: float) -> FloatArray:
        """``D_c(now)`` for each of ``categories``, whose rates are now ``rates`` (a
        read-only array).

        A category whose rate differs from its piece's starts a new piece at ``now``
        (continuous: the reading at ``now`` is the same under both pieces), or at the
        current piece's start if ``now`` is before it; one without a piece starts at
        ``(now, 0, rate)``. Either sets :attr:`dirty`.

        A clock stepped back before a piece's start (NTP, a VM restored, a boot at 1970)
        reads that start until it passes it: a memory written or recalled meanwhile
        counts as of the start, and no time the clock never passed is charged to any
        memory, at either rate (extrapolated back, a rate changed in the window charged
        or froze the memories of the window by the difference of the rates).
        """
        seen = self._seen
        if (
            seen is None
            or seen[0] is not categories
            or seen[1] is not rates
            or seen[2] != len(categories)
        ):
            key = (tuple(categories), np.asarray(rates, dtype=np.float64).tobytes())
            if key != self._key:
                self._refresh(categories, rates, now)
                self._key = key
                self._memo = None
            self._seen = (categories, rates, len(categories))
        memo = self._memo
        if memo is None or memo[0] != now:
            # never before a piece's start: a clock stepped back reads the start, so time
            # it never passed is charged to no memory, at either rate
            out = self._d0 + self._rate * np.maximum(now - self._t0, 0.0)
            out.flags.writeable = False  # shared by the reads at this ``now``
            memo = self._memo = (now, out)
        return memo[1]

    def _refresh(self, categories: Sequence[str], rates: FloatArray, now: float) -> None:
        for c, rate in zip(categories, np.asarray(rates, dtype=np.float64).tolist(), strict=True):
            piece = self.pieces.get(c)
            if piece is None:
                self.pieces[c] = (now, 0.0, rate)
                self.dirty = True
            elif piece[2] != rate:
                # never before the piece's own start: a clock stepped back (NTP, a VM
                # restored, a boot at 1970) would date the new rate from then, charging
                # (new - old) * the step to every memory of the category
                t0, d0, old = piece
                start = max(now, t0)
                self.pieces[c] = (start, d0 + old * (start - t0), rate)
                self.dirty = True
        chosen = [self.pieces[c] for c in categories]
        self._t0 = np.asarray([p[0] for p in chosen], dtype=np.float64)
        self._d0 = np.asarray([p[1] for p in chosen], dtype=np.float64)
        self._rate = np.asarray([p[2] for p in chosen], dtype=np.float64)

    def to_json(self) -> dict[str, list[float]]:
        """Serialisable form (floats survive a JSON round trip exactly)."""
        return {c: list(p) for c, p in self.pieces.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> DecayClock:
        """Inverse of :meth:`to_json`."""
        return cls(data)
