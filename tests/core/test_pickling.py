"""Settings a process pool hands its workers survive pickling and deep copies."""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from oblivion_core import TEMPLATES, Policy, TurnClock


def _policies() -> list[Policy]:
    custom = Policy(half_lives={"fact": 3.5, "chitchat": 0.25}, protected_categories=["fact"])
    return [*(Policy.template(name) for name in TEMPLATES), custom]


@pytest.mark.parametrize("policy", _policies(), ids=lambda p: str(p.name))
def test_a_policy_pickles_and_deep_copies_to_an_equal_one(policy: Policy) -> None:
    """``pickle.dumps(policy)`` and ``copy.deepcopy`` raised "cannot pickle
    'mappingproxy' object": a spawned worker could not be given one."""
    for twin in (pickle.loads(pickle.dumps(policy)), copy.deepcopy(policy), copy.copy(policy)):
        assert twin == policy and hash(twin) == hash(policy)
        assert twin.to_dict() == policy.to_dict()
        with pytest.raises(TypeError):
            twin.half_lives["fact"] = 1.0  # type: ignore[index]  # still read-only


def test_a_turn_clock_pickles_with_its_counts_and_a_lock_of_its_own() -> None:
    clock = TurnClock(5.0, namespaces={"u1": 2.0})
    twin = pickle.loads(pickle.dumps(clock))
    assert (twin.shared, twin.owned()) == (5.0, {"u1": 2.0})
    twin.tick(namespace="u1")
    assert (twin.now("u1"), clock.now("u1")) == (8.0, 7.0)
    assert copy.deepcopy(clock).now() == clock.now()


def _worker(policy: Policy, clock: TurnClock) -> dict[str, Any]:
    clock.tick()
    return {"policy": policy.to_dict(), "now": clock.now()}


def test_a_spawned_worker_gets_the_policy_and_clock() -> None:
    """The way to hand settings to worker processes on macOS, Windows and (from Python
    3.14) Linux: spawn and forkserver pickle every argument."""
    policy = Policy.template("support-desk")
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        got = pool.submit(_worker, policy, TurnClock(3.0)).result(timeout=120)
    assert got == {"policy": policy.to_dict(), "now": 4.0}
