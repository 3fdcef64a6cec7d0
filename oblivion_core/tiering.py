"""Tier planning: hysteresis, capacity pressure and forgetting, as pure functions.

:func:`plan_tiers` looks at activations and says which rows to archive, restore or
forget; the engine turns that into a :class:`MaintenancePlan` and applies it (or, in a
dry run, only returns it). No I/O here.

Rules (``low = archive_low``, ``high = archive_high``):

* an active memory is archived when its activation falls below ``low``;
* an archived memory is restored when its activation rises above ``high``;
* inside ``[low, high]`` nothing moves, so an activation hovering around a threshold
  cannot make a memory oscillate;
* capacity pressure: when more than ``capacity`` memories would be active (those at or
  above ``low``, and archived ones above ``high`` coming back), exactly ``capacity`` stay:
  the most activated, an archived one counting its activation minus the band's width
  (to displace an active memory it must beat it by the band, so two memories cannot
  swap tiers back and forth), equal ones by ``order`` (newest first). ``low`` and
  ``high`` as reported rise to the edges of that band: nothing between them moves;
* invalidated memories leave the active tier;
* forgetting (deletion) is off unless enabled, only touches archived memories below
  ``forget_below`` that are old enough, and never protected ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from oblivion_core.records import Tier

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TierDecision:
    """Row indices to move, and the thresholds that were in force."""

    archive: IntArray
    restore: IntArray
    forget: IntArray
    low: float
    high: float
    pressure: bool = False  # capacity pressure: more would be active than ``capacity``


def plan_tiers(
    activation: npt.NDArray[np.float64],
    tier: npt.NDArray[np.int8],
    *,
    low: float,
    high: float,
    capacity: int | None = None,
    invalidated: BoolArray | None = None,
    forget_enabled: bool = False,
    forget_below: float = 0.0,
    forgettable: BoolArray | None = None,
    order: npt.NDArray[np.integer] | None = None,
) -> TierDecision:
    """Decide tier moves for every row.

    Args:
        activation: Activation of each row at "now".
        tier: Current :class:`Tier` of each row.
        low: Archive threshold (demote strictly below it).
        high: Restore threshold (promote strictly above it); ``low < high``.
        capacity: Target active-tier size, or ``None``.
        invalidated: Rows kept out of the active tier.
        forget_enabled: Whether deletion may be planned at all.
        forget_below: Archived rows below this may be forgotten.
        forgettable: Rows that are allowed to be forgotten (not protected, old enough).
        order: Recency of each row (larger is newer; default: the row index): under
            capacity pressure, of equally ranked rows the newer stay.
    """
    # plain ints: numpy compares an IntEnum member ~10x slower (0.6 ms per 1M rows); each
    # mask is built in place, and only those the plan needs (1M rows without a capacity:
    # 9.0 -> 5.4 ms; under capacity pressure the partition dominates)
    active = np.equal(tier, int(Tier.ACTIVE))
    archived = np.equal(tier, int(Tier.ARCHIVE))
    good = None if invalidated is None else ~invalidated

    eff_low, eff_high = low, high
    kept: tuple[IntArray, float] | None = None
    if capacity is not None:
        stay = np.greater_equal(activation, low)  # those that stay active ...
        stay &= active
        come = np.greater(activation, high)  # ... and those that come back
        come &= archived
        if good is not None:
            stay &= good
            come &= good
        rows = np.flatnonzero(stay | come)
        if len(rows) > capacity:
            kept = _keep(activation, come, rows, capacity, high - low, order)
            eff_low = max(low, float(kept[1]))
            eff_high = max(high, eff_low + (high - low))

    if kept is not None:  # exactly the rows kept are active afterwards
        keep = np.zeros(len(activation), dtype=bool)
        keep[kept[0]] = True
        archive = active & ~keep
        restore = come & keep
    else:
        archive = np.less(activation, eff_low)
        if invalidated is not None:
            archive |= invalidated
        archive &= active
        restore = np.greater(activation, eff_high)
        restore &= archived
        if good is not None:
            restore &= good
    if forget_enabled:
        ok = forgettable if forgettable is not None else np.ones_like(active)
        forget = ((archived & ~restore) | archive) & ok & (activation < forget_below)
        archive &= ~forget
        forget_rows = np.flatnonzero(forget)
    else:
        forget_rows = np.zeros(0, dtype=np.intp)
    return TierDecision(
        archive=np.flatnonzero(archive),
        restore=np.flatnonzero(restore),
        forget=forget_rows,
        low=eff_low,
        high=eff_high,
        pressure=kept is not None,
    )


def _keep(
    activation: npt.NDArray[np.float64],
    come: BoolArray,
    rows: IntArray,
    capacity: int,
    width: float,
    order: npt.NDArray[np.integer] | None,
) -> tuple[IntArray, float]:
    """The ``capacity`` rows of ``rows`` to keep active, and the rank value of the last
    one: activation, minus ``width`` for a row coming back from the archive; among
    equal values rows already active first, then the newer (``order``, else the row)."""
    returning = come[rows]
    keys = activation[rows] - width * returning
    # the capacity-th largest key: a partition finds it in linear time (0.6 ms for 210k
    # values, a full sort 3.6 ms)
    cut = float(np.partition(keys, len(keys) - capacity)[len(keys) - capacity])
    above = keys > cut
    tied = np.flatnonzero(keys == cut)
    need = capacity - int(np.count_nonzero(above))
    if need < len(tied):
        recency = rows[tied] if order is None else np.asarray(order)[rows[tied]]
        tied = tied[np.lexsort((-recency, returning[tied]))[:need]]
    return np.concatenate([rows[above], rows[tied]]), cut


@dataclass(frozen=True)
class PlanEntry:
    """One planned move of one memory."""

    id: str
    action: str  # "archive" | "restore" | "forget" | "compress"
    activation: float
    category: str
    reason: str


@dataclass(frozen=True)
class MaintenancePlan:
    """What ``maintain()`` would do (dry run) or did.

    Attributes:
        namespace: The namespace planned for.
        now: Clock time of the plan.
        entries: Every planned move.
        low / high: Thresholds in force (raised under capacity pressure).
        active_before / active_after: Active-tier size before and after applying.
        applied: ``False`` for a dry run.
        adapted: Category parameters changed by self-adaptation while applying.
    """

    namespace: str
    now: float
    entries: tuple[PlanEntry, ...]
    low: float
    high: float
    active_before: int
    active_after: int
    applied: bool
    adapted: dict[str, dict[str, float]] = field(default_factory=dict)

    def ids(self, action: str) -> list[str]:
        """Ids planned for ``action``."""
        return [e.id for e in self.entries if e.action == action]

    @property
    def archived(self) -> list[str]:
        """Ids moved (or to be moved) to the archive."""
        return self.ids("archive")

    @property
    def restored(self) -> list[str]:
        """Ids moved (or to be moved) back to the active tier."""
        return self.ids("restore")

    @property
    def forgotten(self) -> list[str]:
        """Ids deleted (or to be deleted)."""
        return self.ids("forget")

    def __len__(self) -> int:
        return len(self.entries)

    def summary(self) -> str:
        """One line: counts per action and the thresholds."""
        counts = {a: len(self.ids(a)) for a in ("archive", "restore", "forget", "compress")}
        parts = ", ".join(f"{v} to {k}" for k, v in counts.items() if v) or "nothing to move"
        mode = "applied" if self.applied else "dry run"
        return (
            f"[{self.namespace}] {mode}: {parts}; active {self.active_before} -> "
            f"{self.active_after}; band [{self.low:.3f}, {self.high:.3f}]"
        )
