"""Properties of the per-category decay clocks (oblivion_core.decay_clock)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core.decay_clock import DecayClock

rates = st.floats(1e-6, 10.0)
steps = st.lists(st.tuples(st.floats(0.0, 1e4), rates), min_size=1, max_size=30)


@given(start=st.floats(0.0, 1e6), steps=steps)
def test_a_reading_is_the_integral_of_the_rate_and_continuous_at_each_change(
    start: float, steps: list[tuple[float, float]]
) -> None:
    """Whatever the rate changes, the clock advances by rate * time over each span, and a
    change never moves the reading at the moment it happens."""
    clock = DecayClock()
    now = start
    rate = steps[0][1]
    first = clock.readings(["fact"], np.asarray([rate]), now)[0]
    assert first == 0.0
    expected = 0.0
    for dt, new_rate in steps:
        now += dt
        expected += rate * dt
        before = clock.readings(["fact"], np.asarray([rate]), now)[0]
        after = clock.readings(["fact"], np.asarray([new_rate]), now)[0]
        assert after == before  # continuous at the change
        assert before == pytest.approx(expected, rel=1e-9, abs=1e-9)
        rate = new_rate


@given(steps=steps, back=st.floats(0.0, 1e3))
def test_readings_never_decrease_with_time_and_pieces_only_change_with_rates(
    steps: list[tuple[float, float]], back: float
) -> None:
    """Later readings are never smaller (rates are positive); asking again at the same
    rates starts no piece (nothing to persist)."""
    clock = DecayClock()
    now, last = 0.0, -np.inf
    for dt, rate in steps:
        now += dt
        reading = clock.readings(["fact", "event"], np.asarray([rate, 2 * rate]), now)
        assert reading[0] >= last
        last = reading[0]
        clock.dirty = False
        clock.readings(["fact", "event"], np.asarray([rate, 2 * rate]), now + back)
        assert not clock.dirty


@given(
    start=st.floats(0.0, 1e9),
    back=st.floats(1e-3, 1e9),
    old=rates,
    new=rates,
    later=st.floats(0.0, 1e6),
)
def test_a_rate_change_while_the_clock_reads_earlier_charges_no_time_not_passed(
    start: float, back: float, old: float, new: float, later: float
) -> None:
    """A rate changed while the clock reads before the current piece's start (NTP
    stepped it back, a VM was restored, a device booted at 1970) dated the new piece
    from then: a memory read again at its own write time had decayed by
    (new - old) * the step (to its floor at once, or frozen for decades). The new rate
    applies from the piece's start: the reading there is unchanged, and it advances at
    the new rate after."""
    clock = DecayClock()
    at_write = clock.readings(["fact"], np.asarray([old]), start)[0]
    # a memory written in the stepped-back window, before the switch: as of the start
    in_window = clock.readings(["fact"], np.asarray([old]), start - back)[0]
    assert in_window == at_write
    clock.readings(["fact"], np.asarray([new]), start - back)  # the switch, stepped back
    assert clock.readings(["fact"], np.asarray([new]), start - back / 2)[0] == at_write
    again = clock.readings(["fact"], np.asarray([new]), start)[0]
    assert again == pytest.approx(at_write, abs=1e-9)
    after = clock.readings(["fact"], np.asarray([new]), start + later)[0]
    assert after == pytest.approx(at_write + new * later, rel=1e-9, abs=1e-6)


def test_a_new_category_starts_its_own_clock_and_marks_it_for_saving() -> None:
    clock = DecayClock({"fact": (0.0, 0.0, 1.0)})
    out = clock.readings(["fact", "small_talk"], np.asarray([1.0, 3.0]), 10.0)
    assert out.tolist() == [10.0, 0.0]
    assert clock.dirty
    assert clock.pieces["small_talk"] == (10.0, 0.0, 3.0)
    assert clock.readings(["small_talk"], np.asarray([3.0]), 12.0).tolist() == [6.0]


@given(steps=steps)
def test_the_json_form_gives_back_the_same_clock(steps: list[tuple[float, float]]) -> None:
    clock = DecayClock()
    now = 0.0
    for dt, rate in steps:
        now += dt
        clock.readings(["fact", "task"], np.asarray([rate, rate / 3]), now)
    again = DecayClock.from_json(json.loads(json.dumps(clock.to_json())))
    assert again == clock
    rates_now = np.asarray([steps[-1][1], steps[-1][1] / 3])
    assert again.readings(["fact", "task"], rates_now, now + 5).tobytes() == (
        clock.readings(["fact", "task"], rates_now, now + 5).tobytes()
    )
