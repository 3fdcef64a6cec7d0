"""Self-adaptation: per-category half-lives and boost sizes learned from use.

The engine counts, per namespace and category, what happened since the last
adaptation: memories stored, recalled, recalled *from the archive*, marked used, and
archived by maintenance. :func:`adapt` turns those counts into new multipliers on the
policy's half-life and beta; it is pure and runs in ``maintain()``.

Rules (``step = policy.adapt_step``), for a category with at least
``policy.adapt_min_events`` events in the window:

* recalled from the archive in more than 30 % of its recalls -> it decays too fast:
  half-life x (1 + step). Under capacity pressure (``archived_share`` given: the share
  of the namespace's memories in the archive, when the active tier is held at its
  target) the bar is that share, if higher, and the hits must clear it by
  ``ARCHIVE_HIT_Z`` standard deviations of chance (binomial). A full tier keeps most
  memories archived whatever their half-life, so a recall finds them there about that
  often when activation says nothing; only clearly more hits than that say the memories
  asked for decayed out. A plain 30 % bar ran every half-life of a 3,000-turn session
  to its 4x bound; the share without the margin let windows that cleared it by chance
  ratchet a half-life up when every memory is asked for alike (nothing takes a step
  back while a category is recalled). The namespace's share, not the category's own:
  a category whose memories are all archived must still be able to clear it;
* archived at least once and never recalled or used, while the namespace *is* being
  recalled from (at least ``adapt_min_events`` recalls counted over its categories) -> it
  decays too slowly: half-life x (1 - step). Without recalls there is no evidence: a bulk
  import archives memories (capacity pressure) before anyone asks for anything, which
  says nothing about how fast they should decay;
* used in more than half of its recalls -> boosts are too small: beta x (1 + step);
* recalled at least ``adapt_min_events`` times and never used -> beta x (1 - step).

Multipliers stay within ``policy.adapt_bounds`` and beta never exceeds 1. Counters reset
after each adaptation of that category.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from oblivion_core.policy import Policy

ARCHIVE_HIT_RATE = 0.3
#: Under capacity pressure, how many standard deviations of chance the archive hits must
#: clear the archived share by (one-sided, about 0.6 % of windows by chance).
ARCHIVE_HIT_Z = 2.5
#: A tier this share of its target or more counts as held at it: capacity pressure keeps
#: it at the target, and the writes and moves since leave it a few memories short. Only
#: a tier found at its target exactly did, so most maintain() calls of a long session
#: tested archive hits against the plain 30 % bar with 75-93 % of the memories archived,
#: and half-lives climbed to their 4x bound over a simulated year.
HELD_SHARE = 0.9
USED_RATE = 0.5


@dataclass
class CategoryUsage:
    """Counters and learned multipliers of one category in one namespace."""

    stored: int = 0
    recalled: int = 0
    archive_hits: int = 0
    used: int = 0
    archived: int = 0
    half_life_mult: float = 1.0
    beta_mult: float = 1.0

    @property
    def events(self) -> int:
        """Events in the current window."""
        return self.stored + self.recalled + self.used + self.archived

    def reset(self) -> None:
        """Start a new window (multipliers are kept)."""
        self.stored = self.recalled = self.archive_hits = self.used = self.archived = 0


@dataclass
class Usage:
    """Per-category usage of one namespace."""

    categories: dict[str, CategoryUsage] = field(default_factory=dict)

    def of(self, category: str) -> CategoryUsage:
        """Counters of ``category`` (created on first use)."""
        u = self.categories.get(category)
        if u is None:
            u = self.categories[category] = CategoryUsage()
        return u

    def peek(self, category: str) -> CategoryUsage:
        """Counters of ``category`` to read, without adding it (a fresh, unlearned set
        for one not counted yet): reading a rate must not make a category appear."""
        return self.categories.get(category) or CategoryUsage()

    def to_json(self) -> dict[str, dict[str, float]]:
        """Serialisable form."""
        return {c: dict(vars(u)) for c, u in self.categories.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, float]] | None) -> Usage:
        """Inverse of :meth:`to_json`."""
        usage = cls()
        for cat, values in (data or {}).items():
            usage.categories[cat] = CategoryUsage(**values)  # type: ignore[arg-type]
        return usage


def multipliers(usage: CategoryUsage, policy: Policy, category: str) -> tuple[float, float]:
    """The learned half-life and beta multipliers of ``category`` as they apply under
    ``policy``: within its ``adapt_bounds`` (a policy set later may narrow them; widened
    again, the learned values return), and the beta's at most ``1 / beta``."""
    lo, hi = policy.adapt_bounds
    return (
        min(max(usage.half_life_mult, lo), hi),
        min(max(usage.beta_mult, lo), hi, 1.0 / policy.beta(category)),
    )


def adapt(
    usage: Usage, policy: Policy, archived_share: float | None = None
) -> dict[str, dict[str, float]]:
    """Apply the rules above in place; return ``{category: {"half_life": new, "beta": new}}``
    for every category whose effective values changed.

    ``archived_share``: when capacity pressure holds the active tier at its target, the
    share of the namespace's active or archived memories that are in the archive."""
    changed: dict[str, dict[str, float]] = {}
    if not policy.adapt or policy.adapt_step == 0:
        return changed
    lo, hi = policy.adapt_bounds
    step = policy.adapt_step
    in_use = sum(u.recalled for u in usage.categories.values()) >= policy.adapt_min_events
    for cat, u in usage.categories.items():
        if u.events < policy.adapt_min_events:
            continue
        was = multipliers(u, policy, cat)  # in force: the learned ones within bounds
        hl, beta = was
        if u.recalled and _too_many_archive_hits(u.archive_hits, u.recalled, archived_share):
            hl *= 1 + step
        elif u.archived and not u.recalled and not u.used and in_use:
            hl *= 1 - step
        if u.recalled and u.used / u.recalled > USED_RATE:
            beta *= 1 + step
        elif u.recalled >= policy.adapt_min_events and not u.used:
            beta *= 1 - step
        hl = min(max(hl, lo), hi)
        beta = min(max(beta, lo), hi, 1.0 / policy.beta(cat))
        if (hl, beta) != was:
            # a value that did not move keeps what was learned (a policy with narrower
            # bounds clamps it; widened again, the learned value returns)
            if hl != was[0]:
                u.half_life_mult = hl
            if beta != was[1]:
                u.beta_mult = beta
            changed[cat] = {
                "half_life": policy.half_life(cat) * hl,
                "beta": policy.beta(cat) * beta,
            }
        u.reset()
    return changed


def _too_many_archive_hits(hits: int, recalled: int, archived_share: float | None) -> bool:
    """The "decays too fast" test of the module doc."""
    if archived_share is None or archived_share <= ARCHIVE_HIT_RATE:
        return hits > ARCHIVE_HIT_RATE * recalled
    p = min(archived_share, 1.0)
    return hits > recalled * p + ARCHIVE_HIT_Z * math.sqrt(recalled * p * (1.0 - p))
