r"""Pure, vectorised activation maths. No clock reads, no I/O.

Every function takes numpy arrays (or scalars) and ``now`` explicitly.

The model, for memory *i* of category *c*:

* decay rate from the category half-life: :math:`\lambda_c = \ln 2 / h_c`
* use slows decay: :math:`\lambda_i = \lambda_c / (1 + \sigma\,u_i)`, where the
  *stability* :math:`u_i` grows with every retrieval (+``retrieval_stability``),
  use (+``used_stability``) and confirmation (+``confirm_stability``)
* floor from importance: :math:`f_i = \phi\,\mathrm{importance}_i^2`
* lazy closed form from the last event :math:`(A_{ref}, t_{ref})`:
  :math:`A_i(t) = \max\big(\min(A_{ref}, f_i),\; A_{ref}\,e^{-\lambda_i (t - t_{ref})}\big)`
  so activation never increases between events and never decays through its floor
  (a memory pushed below its floor, e.g. by invalidation, simply stays there). When
  :math:`\lambda_c` changes over time the exponent is its integral since :math:`t_{ref}`:
  the engine evaluates it through per-category decay clocks
  (:mod:`oblivion_core.decay_clock`, :func:`activation_now`)
* boost on an event: :math:`A \leftarrow \min(\mathrm{cap}, A + \Delta)`, with
  :math:`\Delta = \beta_c \cdot \mathrm{relevance} \cdot \mathrm{confidence} \cdot g`
  and the gain *g* larger for used / archive-recalled memories.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
ArrayLike = FloatArray | float | Sequence[float]

LN2 = math.log(2.0)


def half_life_to_rate(half_life: ArrayLike) -> FloatArray:
    """Return the decay rate λ (per clock unit) for a half-life (in clock units, > 0)."""
    return LN2 / np.asarray(half_life, dtype=np.float64)


def rate_to_half_life(rate: ArrayLike) -> FloatArray:
    """Return the half-life for a decay rate λ > 0 (inverse of :func:`half_life_to_rate`)."""
    return LN2 / np.asarray(rate, dtype=np.float64)


def effective_rate(base_rate: ArrayLike, stability: ArrayLike, sigma: float) -> FloatArray:
    """Per-memory decay rate: the category rate slowed by accumulated use.

    Args:
        base_rate: Category decay rate λ_c (per clock unit).
        stability: Accumulated use u_i >= 0.
        sigma: How strongly use slows decay (>= 0); 0 disables the effect.
    """
    s = np.maximum(np.asarray(stability, dtype=np.float64), 0.0)
    return np.asarray(base_rate, dtype=np.float64) / (1.0 + sigma * s)


def activation_at(
    a_ref: ArrayLike,
    t_ref: ArrayLike,
    rate: ArrayLike,
    floor: ArrayLike,
    now: float,
) -> FloatArray:
    """Evaluate activation at ``now`` in closed form.

    ``now`` earlier than ``t_ref`` is treated as ``t_ref`` (no decay, no growth).
    """
    a = np.asarray(a_ref, dtype=np.float64)
    dt = np.maximum(now - np.asarray(t_ref, dtype=np.float64), 0.0)
    decayed = a * np.exp(-np.asarray(rate, dtype=np.float64) * dt)
    return np.maximum(np.minimum(a, np.asarray(floor, dtype=np.float64)), decayed)


def boost(activation: ArrayLike, delta: ArrayLike, cap: float) -> FloatArray:
    """Raise activation by ``delta`` (negative deltas count as 0), never above ``cap``."""
    a = np.asarray(activation, dtype=np.float64)
    raised = a + np.maximum(np.asarray(delta, dtype=np.float64), 0.0)
    out: FloatArray = np.minimum(np.maximum(raised, a), np.maximum(cap, a))
    return out


def boost_delta(
    beta: ArrayLike, relevance: ArrayLike, confidence: ArrayLike, gain: ArrayLike
) -> FloatArray:
    """The size of a boost: ``beta * relevance * confidence * gain``, clipped to >= 0."""
    r = np.clip(np.asarray(relevance, dtype=np.float64), 0.0, 1.0)
    c = np.clip(np.asarray(confidence, dtype=np.float64), 0.0, 1.0)
    out: FloatArray = np.maximum(np.asarray(beta, dtype=np.float64) * r * c * np.asarray(gain), 0.0)
    return out


def floor_for(importance: ArrayLike, fraction: float) -> FloatArray:
    """The activation floor of a memory: ``fraction * importance**2``.

    Squared, so only truly important memories (instructions, firm preferences) keep a
    floor above the archive threshold; ordinary facts and events can still be archived.
    """
    imp = np.clip(np.asarray(importance, dtype=np.float64), 0.0, 1.0)
    return fraction * imp * imp


def initial_activation(importance: ArrayLike, base: float) -> FloatArray:
    """Activation of a new memory: ``base + (1 - base) * importance`` (1.0 when base is 1)."""
    imp = np.clip(np.asarray(importance, dtype=np.float64), 0.0, 1.0)
    return base + (1.0 - base) * imp


def time_to_reach(a_ref: float, target: float, rate: float) -> float:
    """Clock units until an activation ``a_ref`` decays to ``target`` (inf if never)."""
    if target <= 0 or rate <= 0:
        return math.inf
    if a_ref <= target:
        return 0.0
    return math.log(a_ref / target) / rate


def activation_now(
    a_ref: FloatArray,
    d_ref: FloatArray,
    clock_now: FloatArray,
    category: npt.NDArray[np.integer],
    stability: FloatArray,
    sigma: float,
    importance: FloatArray,
    fraction: float,
    no_floor: npt.NDArray[np.bool_],
) -> FloatArray:
    """Activation now of memories whose category clock reads ``clock_now[category]`` and
    read ``d_ref`` at their last event (:mod:`oblivion_core.decay_clock`): the decay
    exponent is ``(clock_now[category] - d_ref) / (1 + sigma * stability)``, i.e.
    :func:`activation_at` with :func:`effective_rate` and :func:`floor_for` folded in
    while the category rate stays the same; the floor is 0 where ``no_floor``
    (invalidated or superseded memories). A clock reading earlier than ``d_ref`` counts as
    no time passed.

    Two scratch arrays instead of a fresh array per step: a sweep over a million memories
    allocated about fifteen 8 MB temporaries, and their page faults cost as much as the
    arithmetic.
    """
    dt = np.asarray(clock_now, dtype=np.float64)[category]  # a fresh array
    dt -= np.asarray(d_ref, dtype=np.float64)
    np.maximum(dt, 0.0, out=dt)
    tmp = np.maximum(np.asarray(stability, dtype=np.float64), 0.0)
    tmp *= sigma
    tmp += 1.0
    dt /= tmp  # the exponent, slowed by use (effective_rate)
    np.negative(dt, out=dt)
    np.exp(dt, out=dt)
    a = np.asarray(a_ref, dtype=np.float64)
    dt *= a  # decayed = a * exp(-exponent), in ``dt``
    imp = np.clip(np.asarray(importance, dtype=np.float64), 0.0, 1.0, out=tmp)
    floor = np.multiply(fraction, imp)
    floor *= imp  # floor_for
    floor[no_floor] = 0.0
    np.minimum(a, floor, out=floor)
    out: FloatArray = np.maximum(floor, dt, out=dt)
    return out
