"""Tiering sweep of ``bench/latency.py``: plan tier moves over a million memories.

Going through ``remember()`` a million times would measure ingest, not tiering, so this
module builds the engine's columnar activation state (:class:`NamespaceState`) for ``n``
rows directly with numpy and plugs it into an in-memory :class:`Oblivion` engine.

This reaches into private engine state on purpose (``NamespaceState._grow``,
``Oblivion._spaces``, ``Space``, ``Oblivion._activation``): a benchmark may, the
library must not. :func:`_check_bulk_fill` verifies on a small state that the bulk fill
produces exactly what ``NamespaceState.append`` would, so a change in the core's layout
fails loudly instead of silently measuring the wrong thing.

The state is a steady state, as the engine sees it between two ``maintain()`` calls:
tiers were decided by a sweep one hour earlier, so only the memories whose activation
crossed a threshold during that hour move now.
"""

from __future__ import annotations

import copy
import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from oblivion_core import ManualClock, Oblivion, Policy, Tier
from oblivion_core.adaptation import Usage
from oblivion_core.decay_clock import DecayClock
from oblivion_core.index import ActiveIndex
from oblivion_core.space import Space
from oblivion_core.state import NamespaceState
from oblivion_core.testing import HashEmbedder
from oblivion_core.tiering import plan_tiers

DAY = 86_400.0
NOW = 1_750_000_000.0  # fixed wall-clock "now" (seconds), so runs are identical
SWEEP_GAP = 3_600.0  # the previous sweep ran an hour earlier

# (category, share of memories, base importance) -- roughly what HeuristicImportance
# assigns to an assistant's memories
CATEGORIES: tuple[tuple[str, float, float], ...] = (
    ("fact", 0.35, 0.40),
    ("event", 0.20, 0.50),
    ("small_talk", 0.15, 0.10),
    ("task", 0.12, 0.60),
    ("preference", 0.10, 0.75),
    ("instruction", 0.05, 0.90),
    ("summary", 0.03, 0.50),
)


def _columns(n: int, seed: int) -> tuple[dict[str, np.ndarray], np.ndarray, list[str]]:
    """Realistic activation inputs for ``n`` memories spread over a year of use."""
    rng = np.random.default_rng(seed)
    names = [c[0] for c in CATEGORIES]
    shares = np.asarray([c[1] for c in CATEGORIES])
    cat = rng.choice(len(CATEGORIES), size=n, p=shares / shares.sum()).astype(np.int32)
    base_imp = np.asarray([c[2] for c in CATEGORIES])[cat]
    importance = np.minimum(base_imp + 0.05 * rng.integers(0, 4, size=n), 1.0)
    created = NOW - rng.uniform(0.0, 365 * DAY, size=n)
    access = rng.geometric(0.45, size=n) - 1  # most memories are recalled rarely
    accessed = access > 0
    last = np.where(accessed, created + rng.uniform(0.0, 1.0, size=n) * (NOW - created), created)
    a_ref = np.where(
        accessed,
        rng.uniform(0.4, 1.0, size=n),
        0.5 + 0.5 * importance,  # initial activation (initial_base=0.5)
    )
    stability = 0.1 * access + rng.binomial(2, 0.05, size=n)  # retrievals (+ a few "used")
    invalidated = rng.random(n) < 0.002
    cols: dict[str, np.ndarray] = {
        "importance": importance,
        "confidence": np.ones(n),
        "created_at": created,
        "last_accessed": last,
        "a_ref": np.where(invalidated, 0.0, a_ref),
        "d_ref": last,  # event times: _engine turns them into decay clock readings
        "stability": stability.astype(np.float64),
        "access_count": access.astype(np.int64),
        "tier": np.zeros(n, dtype=np.int8),
        "invalidated": invalidated,
        "cat": cat,
        "seq": np.arange(1, n + 1, dtype=np.int64),
    }
    hi = rng.integers(0, 2**63, size=n, dtype=np.int64).tolist()
    lo = rng.integers(0, 2**63, size=n, dtype=np.int64).tolist()
    ids = [f"{a:016x}{b:016x}" for a, b in zip(hi, lo, strict=True)]
    return cols, np.asarray(names, dtype=object), ids


def _bulk_state(
    namespace: str, cols: dict[str, np.ndarray], vocab: np.ndarray, ids: list[str]
) -> NamespaceState:
    """A :class:`NamespaceState` holding ``cols`` (private layout; see the module doc)."""
    n = len(ids)
    st = NamespaceState(namespace)
    for name in vocab:
        st.cat_id(str(name))
    st._grow(n)
    st.cols["relevance"][:n] = 1.0  # never recalled, as NamespaceState.append sets it
    for name, values in cols.items():
        st.cols[name][:n] = values
    st.n = n
    st.ids = list(ids)
    st.index = dict(zip(ids, range(n), strict=True))
    st.by_seq = dict(zip(cols["seq"].tolist(), ids, strict=True))
    st.seqs = sorted(st.by_seq)
    return st


def _check_bulk_fill() -> None:
    """Fail loudly if the bulk fill no longer matches ``NamespaceState.append``."""
    cols, vocab, ids = _columns(50, seed=1)
    bulk = _bulk_state("check", cols, vocab, ids)
    ref = NamespaceState("check")
    for name in vocab:
        ref.cat_id(str(name))
    for i, mid in enumerate(ids):
        values = {
            k: v[i] for k, v in cols.items() if k not in ("cat", "seq")
        }  # append sets cat and seq itself
        ref.append(mid, str(vocab[cols["cat"][i]]), values, int(cols["seq"][i]))
    for attr, value in vars(ref).items():
        other = vars(bulk).get(attr)
        if attr == "cols":
            same = set(value) == set(other) and all(
                np.array_equal(value[c][: ref.n], other[c][: ref.n]) for c in value
            )
        elif attr == "_cap":
            same = True
        else:
            same = value == other
        if not same:
            raise RuntimeError(
                f"bench/_latency_tiering.py: the bulk-filled NamespaceState differs from "
                f"NamespaceState.append in {attr!r}; update _bulk_state to the core's layout"
            )


def _engine(policy: Policy, st: NamespaceState, *, times: bool = True) -> Oblivion:
    """An in-memory engine whose default namespace holds ``st`` (private wiring);
    ``times``: ``st``'s ``d_ref`` still holds event times (converted here, once)."""
    engine = Oblivion(
        None,
        policy=policy,
        clock=ManualClock(NOW),
        embedder=HashEmbedder(dim=384),
        token_counter=lambda text: len(text.split()),
    )
    ns = engine.default_namespace
    index = ActiveIndex(384)
    # maintain() reads only len(index) (the "active before" count): list the active ids
    # without building a 1M x 384 matrix.
    index.ids = [st.ids[i] for i in np.flatnonzero(st.col("tier") == Tier.ACTIVE)]
    engine._spaces[ns] = Space(st, index, Usage())
    # clocks through the origin at the policy's rates (as a converted version-2 store):
    # a memory's reading at time t is rate * t
    rates = engine._category_params(ns, st, policy)[0][: len(st.vocab)]
    st.clock = DecayClock({c: (0.0, 0.0, float(r)) for c, r in zip(st.vocab, rates, strict=True)})
    if times:
        st.col("d_ref")[:] *= rates[st.col("cat")]
    return engine


def _settle_tiers(engine: Oblivion, st: NamespaceState, policy: Policy, at: float) -> None:
    """Tiers as a sweep at ``at`` left them: start all active, apply one plan (with the
    policy's own active-tier target, as ``maintain()`` would)."""
    ns = engine.default_namespace
    st.col("tier")[:] = Tier.ACTIVE
    act = engine._activation(ns, st, at)
    decision = plan_tiers(
        act,
        st.col("tier"),
        low=policy.archive_low,
        high=policy.archive_high,
        capacity=policy.active_target(st.n),
        invalidated=st.col("invalidated"),
    )
    st.col("tier")[decision.archive] = Tier.ARCHIVE
    engine._spaces[ns].index.ids = [
        st.ids[i] for i in np.flatnonzero(st.col("tier") == Tier.ACTIVE)
    ]


def _time(fn: Callable[[], Any], runs: int) -> dict[str, float]:
    fn()  # warm-up
    gc.collect()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000.0)
    arr = np.asarray(samples)
    return {
        "median_ms": float(np.median(arr)),
        "p95_ms": float(np.percentile(arr, 95)),
        "min_ms": float(arr.min()),
        "runs": runs,
    }


def run_tiering(n: int, runs: int, seed: int, capacity_share: float = 0.2) -> dict[str, Any]:
    """Time tier planning over ``n`` memories; see the module docstring."""
    _check_bulk_fill()
    started = time.perf_counter()
    cols, vocab, ids = _columns(n, seed)
    base = Policy.template("balanced").replace(maintain_every=0, adapt=False)
    capacity = max(1, int(n * capacity_share))
    capped = base.replace(active_capacity=capacity)

    st = _bulk_state("default", cols, vocab, ids)
    engine = _engine(base, st)
    _settle_tiers(engine, st, base, NOW - SWEEP_GAP)
    # the capacity scenario gets its own tier column (other columns shared)
    st_cap = copy.copy(st)
    st_cap.cols = dict(st.cols)
    st_cap.cols["tier"] = st.cols["tier"].copy()
    engine_cap = _engine(capped, st_cap, times=False)  # d_ref shared, converted
    _settle_tiers(engine_cap, st_cap, capped, NOW - SWEEP_GAP)
    build_s = time.perf_counter() - started

    ns = engine.default_namespace
    act = engine._activation(ns, st, NOW)
    tier, inval = st.col("tier"), st.col("invalidated")
    tier_cap = st_cap.col("tier")
    low, high = base.archive_low, base.archive_high
    target = base.active_target(n)  # the share of the namespace the active tier may hold

    def plan_only() -> Any:
        return plan_tiers(act, tier, low=low, high=high, capacity=target, invalidated=inval)

    def plan_capacity() -> Any:
        return plan_tiers(act, tier_cap, low=low, high=high, capacity=capacity, invalidated=inval)

    def activation_and_plan() -> Any:
        a = engine._activation(ns, st, NOW)
        return plan_tiers(a, tier, low=low, high=high, capacity=target, invalidated=inval)

    def activation_only() -> Any:
        return engine._activation(ns, st, NOW)

    cases: dict[str, dict[str, Any]] = {}
    for name, fn, note in (
        ("activation", activation_only, "Oblivion._activation over every row"),
        ("plan_tiers", plan_only, "tiering.plan_tiers on precomputed activations"),
        (
            "plan_tiers_capacity",
            plan_capacity,
            f"plan_tiers with active_capacity={capacity:,} (capacity pressure)",
        ),
        ("activation_plus_plan", activation_and_plan, "Oblivion._activation + plan_tiers"),
        (
            "maintain_dry_run",
            lambda: engine.maintain(dry_run=True),
            "Oblivion.maintain(dry_run=True): activation, plan and the plan entries",
        ),
        (
            "maintain_dry_run_capacity",
            lambda: engine_cap.maintain(dry_run=True),
            f"maintain(dry_run=True) with active_capacity={capacity:,}",
        ),
    ):
        result = _time(fn, runs)
        result["note"] = note
        cases[name] = result

    plan = engine.maintain(dry_run=True)
    plan_cap = engine_cap.maintain(dry_run=True)
    out = {
        "n": n,
        "build_seconds": build_s,
        "active": int((tier == Tier.ACTIVE).sum()),
        "active_with_capacity": int((tier_cap == Tier.ACTIVE).sum()),
        "capacity": capacity,
        "moves": {"archive": len(plan.archived), "restore": len(plan.restored)},
        "moves_with_capacity": {
            "archive": len(plan_cap.archived),
            "restore": len(plan_cap.restored),
        },
        "sweep_gap_seconds": SWEEP_GAP,
        "cases": cases,
    }
    engine.close()
    engine_cap.close()
    return out
