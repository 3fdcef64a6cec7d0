"""Properties of the pure activation maths in oblivion_core.decay."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import decay

unit = st.floats(0.0, 1.0)
times = st.floats(0.0, 1e9)
rates = st.floats(1e-9, 10.0)
half_lives = st.floats(1e-3, 1e9)
stabilities = st.floats(0.0, 1e4)
sigmas = st.floats(0.0, 10.0)


@given(a_ref=unit, t_ref=times, rate=rates, floor=unit, d1=times, d2=times)
def test_activation_never_increases_between_events(
    a_ref: float, t_ref: float, rate: float, floor: float, d1: float, d2: float
) -> None:
    """Between two events, activation at a later time is never above an earlier one."""
    early, late = t_ref + min(d1, d2), t_ref + max(d1, d2)
    a_early = decay.activation_at(a_ref, t_ref, rate, floor, early)
    a_late = decay.activation_at(a_ref, t_ref, rate, floor, late)
    assert a_late <= a_early


@given(a_ref=unit, t_ref=times, rate=rates, floor=unit, dt=times)
def test_activation_never_crosses_its_floor(
    a_ref: float, t_ref: float, rate: float, floor: float, dt: float
) -> None:
    """Activation never decays below min(a_ref, floor) and never rises above a_ref."""
    a = float(decay.activation_at(a_ref, t_ref, rate, floor, t_ref + dt))
    assert min(a_ref, floor) <= a <= a_ref


@given(a_ref=unit, t_ref=times, rate=rates, floor=unit, back=st.floats(0.0, 1e9))
def test_time_before_the_reference_is_no_decay(
    a_ref: float, t_ref: float, rate: float, floor: float, back: float
) -> None:
    """A `now` earlier than t_ref evaluates to a_ref exactly (no decay, no growth)."""
    assert decay.activation_at(a_ref, t_ref, rate, floor, t_ref - back) == a_ref


@given(
    a=st.lists(unit, min_size=1, max_size=20),
    rate=rates,
    floor=unit,
    dt=times,
)
def test_activation_is_vectorised_elementwise(
    a: list[float], rate: float, floor: float, dt: float
) -> None:
    """Evaluating an array gives the same values as evaluating each element alone."""
    arr = decay.activation_at(np.asarray(a), 0.0, rate, floor, dt)
    one_by_one = [float(decay.activation_at(x, 0.0, rate, floor, dt)) for x in a]
    assert arr.tolist() == pytest.approx(one_by_one, rel=1e-12, abs=1e-300)


@given(a=unit, delta=st.floats(-2.0, 2.0), cap=st.floats(1e-6, 1.0))
def test_boost_never_exceeds_cap_and_never_lowers(a: float, delta: float, cap: float) -> None:
    """A boost never lowers activation and never lifts it above the cap."""
    out = float(decay.boost(a, delta, cap))
    assert out >= a
    assert out <= max(cap, a)
    if a <= cap:
        assert out <= cap


@given(a=unit, delta=st.floats(-2.0, 0.0), cap=st.floats(1e-6, 1.0))
def test_negative_boost_is_ignored(a: float, delta: float, cap: float) -> None:
    """A negative delta counts as 0: activation is unchanged."""
    assert decay.boost(a, delta, cap) == a


@given(a=st.floats(0.0, 0.5), delta=st.floats(0.0, 0.5))
def test_boost_below_cap_adds_delta(a: float, delta: float) -> None:
    """Below the cap, a boost adds exactly delta."""
    assert float(decay.boost(a, delta, 1.0)) == pytest.approx(a + delta)


@given(beta=unit, r1=st.floats(-1.0, 2.0), r2=st.floats(-1.0, 2.0), conf=unit, gain=st.floats(1, 5))
def test_boost_delta_is_non_negative_and_monotone_in_relevance(
    beta: float, r1: float, r2: float, conf: float, gain: float
) -> None:
    """Boost size is >= 0 and grows (weakly) with relevance."""
    lo, hi = min(r1, r2), max(r1, r2)
    d_lo = float(decay.boost_delta(beta, lo, conf, gain))
    d_hi = float(decay.boost_delta(beta, hi, conf, gain))
    assert 0.0 <= d_lo <= d_hi


@pytest.mark.parametrize(
    ("beta", "relevance", "confidence", "gain", "expected"),
    [
        (0.1, 1.0, 1.0, 1.0, 0.1),
        (0.1, 0.5, 1.0, 2.0, 0.1),
        (0.2, 1.0, 0.5, 3.0, 0.3),
        (0.1, -0.4, 1.0, 1.0, 0.0),  # negative relevance counts as 0
        (0.1, 1.7, 1.0, 1.0, 0.1),  # relevance is clipped to 1
    ],
)
def test_boost_delta_formula(
    beta: float, relevance: float, confidence: float, gain: float, expected: float
) -> None:
    """delta = beta * clip(relevance) * clip(confidence) * gain."""
    assert float(decay.boost_delta(beta, relevance, confidence, gain)) == pytest.approx(expected)


@given(base=rates, s1=stabilities, s2=stabilities, sigma=st.floats(1e-3, 10.0))
def test_effective_rate_decreases_with_stability(
    base: float, s1: float, s2: float, sigma: float
) -> None:
    """More accumulated use never speeds decay up; strictly more slows it down."""
    lo, hi = min(s1, s2), max(s1, s2)
    r_lo = float(decay.effective_rate(base, lo, sigma))
    r_hi = float(decay.effective_rate(base, hi, sigma))
    assert r_hi <= r_lo <= base
    if hi > lo * (1 + 1e-9) + 1e-9:
        assert r_hi < r_lo


@given(base=rates, stability=stabilities)
def test_zero_sigma_disables_stability(base: float, stability: float) -> None:
    """With sigma = 0 the effective rate is the category rate whatever the stability."""
    assert float(decay.effective_rate(base, stability, 0.0)) == base


@given(base=rates, sigma=sigmas, negative=st.floats(-1e4, 0.0))
def test_negative_stability_counts_as_zero(base: float, sigma: float, negative: float) -> None:
    """Negative stability never makes a memory decay faster than its category."""
    assert float(decay.effective_rate(base, negative, sigma)) == base


@given(h=half_lives)
def test_half_life_rate_round_trip(h: float) -> None:
    """half_life -> rate -> half_life returns the same half-life."""
    back = float(decay.rate_to_half_life(decay.half_life_to_rate(h)))
    assert back == pytest.approx(h, rel=1e-12)


@given(rate=rates)
def test_rate_half_life_round_trip(rate: float) -> None:
    """rate -> half_life -> rate returns the same rate."""
    back = float(decay.half_life_to_rate(decay.rate_to_half_life(rate)))
    assert back == pytest.approx(rate, rel=1e-12)


@pytest.mark.parametrize("half_life", [1.0, 20.0, 43_200.0, 180 * 86_400.0])
def test_one_half_life_halves_activation(half_life: float) -> None:
    """From a_ref=1 with floor 0, activation after exactly one half-life is 0.5."""
    rate = decay.half_life_to_rate(half_life)
    a = float(decay.activation_at(1.0, 0.0, rate, 0.0, half_life))
    assert a == pytest.approx(0.5, rel=1e-12)


@given(h=half_lives, n=st.integers(0, 20))
def test_n_half_lives_divide_by_two_to_the_n(h: float, n: int) -> None:
    """After n half-lives with floor 0, activation is a_ref / 2**n."""
    rate = decay.half_life_to_rate(h)
    a = float(decay.activation_at(1.0, 0.0, rate, 0.0, n * h))
    assert a == pytest.approx(0.5**n, rel=1e-9)


@pytest.mark.parametrize(
    ("importance", "fraction", "expected"),
    [(0.0, 0.5, 0.0), (1.0, 0.5, 0.5), (0.6, 0.5, 0.18), (1.5, 0.5, 0.5), (-1.0, 0.5, 0.0)],
)
def test_floor_is_fraction_of_clipped_importance(
    importance: float, fraction: float, expected: float
) -> None:
    """floor = fraction * clip(importance, 0, 1) ** 2."""
    assert float(decay.floor_for(importance, fraction)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("importance", "base", "expected"),
    [(0.0, 0.5, 0.5), (1.0, 0.5, 1.0), (0.5, 0.5, 0.75), (0.3, 1.0, 1.0), (0.4, 0.0, 0.4)],
)
def test_initial_activation_formula(importance: float, base: float, expected: float) -> None:
    """A new memory starts at base + (1 - base) * importance."""
    assert float(decay.initial_activation(importance, base)) == pytest.approx(expected)


@given(a_ref=st.floats(0.01, 1.0), frac=st.floats(0.01, 0.99), rate=rates)
def test_time_to_reach_lands_on_target(a_ref: float, frac: float, rate: float) -> None:
    """Decaying for time_to_reach(a, target) with floor 0 lands on the target."""
    target = a_ref * frac
    t = decay.time_to_reach(a_ref, target, rate)
    assert float(decay.activation_at(a_ref, 0.0, rate, 0.0, t)) == pytest.approx(target, rel=1e-9)


@pytest.mark.parametrize(
    ("a_ref", "target", "rate", "expected"),
    [
        (0.5, 0.0, 1.0, math.inf),  # exponential decay never reaches 0
        (0.5, 0.2, 0.0, math.inf),  # no decay
        (0.2, 0.5, 1.0, 0.0),  # already there
        (1.0, 0.5, math.log(2), 1.0),
    ],
)
def test_time_to_reach_edge_cases(
    a_ref: float, target: float, rate: float, expected: float
) -> None:
    """time_to_reach is inf when the target is unreachable and 0 when already reached."""
    assert decay.time_to_reach(a_ref, target, rate) == pytest.approx(expected)


@given(
    rows=st.lists(
        st.tuples(unit, times, st.integers(0, 3), st.floats(-5.0, 1e4), st.floats(-0.5, 1.5)),
        max_size=40,
    ),
    category_rates=st.lists(rates, min_size=4, max_size=4),
    sigma=sigmas,
    fraction=unit,
    no_floor=st.lists(st.booleans(), min_size=40, max_size=40),
    now=times,
)
def test_activation_now_equals_the_composed_steps(
    rows: list[tuple[float, float, int, float, float]],
    category_rates: list[float],
    sigma: float,
    fraction: float,
    no_floor: list[bool],
    now: float,
) -> None:
    """With clocks through the origin (reading = rate * t), the fused sweep gives what
    effective_rate, floor_for and activation_at give one after another (to rounding: the
    exponent is rate*now - rate*t_ref instead of rate*(now - t_ref)), and leaves its
    inputs unchanged."""
    cols = [np.asarray(c, dtype=np.float64) for c in zip(*rows, strict=True)] or [
        np.zeros(0) for _ in range(5)
    ]
    a_ref, t_ref, cat, stability, importance = cols
    cat = cat.astype(np.int64)
    mask = np.asarray(no_floor[: len(rows)], dtype=bool)
    table = np.asarray(category_rates)
    d_ref = table[cat] * t_ref
    clock_now = table * now
    before = [c.copy() for c in (a_ref, d_ref, stability, importance, clock_now)]
    rate = decay.effective_rate(table[cat], stability, sigma)
    floor = np.where(mask, 0.0, decay.floor_for(importance, fraction))
    expected = decay.activation_at(a_ref, t_ref, rate, floor, now)
    got = decay.activation_now(
        a_ref, d_ref, clock_now, cat, stability, sigma, importance, fraction, mask
    )
    # the exponent differs by the rounding of the two readings; exp and the floor's
    # max/min are 1-Lipschitz in it for activations in [0, 1]
    rounding = 4 * np.finfo(np.float64).eps * np.maximum(clock_now[cat], d_ref)
    assert np.all(np.abs(got - expected) <= a_ref * rounding + 1e-15)
    for old, new in zip(before, (a_ref, d_ref, stability, importance, clock_now), strict=True):
        assert old.tobytes() == new.tobytes()
