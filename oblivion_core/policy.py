"""The policy: one validated, immutable object holding every tunable.

Half-lives are stated in the unit of the policy's clock: seconds for ``clock="wall"``,
interactions for ``clock="turns"``. Templates give both.
"""

from __future__ import annotations

import dataclasses
import difflib
import fractions
import math
import numbers
import sys
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from oblivion_core.errors import PolicyError

ClockKind = Literal["wall", "turns"]

_DAY = 86_400.0

# Half-lives per category: (wall-clock seconds, turns).
_HALF_LIVES: dict[str, dict[str, tuple[float, float]]] = {
    "balanced": {
        "instruction": (180 * _DAY, 5_000.0),
        "preference": (60 * _DAY, 1_500.0),
        "fact": (21 * _DAY, 600.0),
        "event": (7 * _DAY, 250.0),
        "task": (3 * _DAY, 120.0),
        "small_talk": (0.5 * _DAY, 20.0),
        "summary": (30 * _DAY, 800.0),
    },
    "support-desk": {
        "instruction": (30 * _DAY, 1_000.0),
        "preference": (7 * _DAY, 300.0),
        "fact": (2 * _DAY, 100.0),
        "event": (1 * _DAY, 50.0),
        "task": (0.5 * _DAY, 30.0),
        "small_talk": (0.1 * _DAY, 6.0),
        "summary": (7 * _DAY, 200.0),
    },
    "research-assistant": {
        "instruction": (365 * _DAY, 20_000.0),
        "preference": (180 * _DAY, 6_000.0),
        "fact": (120 * _DAY, 4_000.0),
        "event": (60 * _DAY, 1_500.0),
        "task": (14 * _DAY, 500.0),
        "small_talk": (2 * _DAY, 60.0),
        "summary": (180 * _DAY, 6_000.0),
    },
}

_TEMPLATE_OVERRIDES: dict[str, dict[str, Any]] = {
    "balanced": {},
    "support-desk": {
        "default_k": 5,
        "active_capacity": 200,
        "archive_gate": 0.5,
        "compress_below": 0.1,
    },
    "research-assistant": {
        "default_k": 12,
        "active_capacity": 20_000,
        "active_share": 0.5,
        "archive_low": 0.15,
        "archive_high": 0.3,
        "archive_gate": 0.4,
    },
}

TEMPLATES: tuple[str, ...] = tuple(_HALF_LIVES)

_LN2 = math.log(2.0)
# Decay accumulates ``ln2 / half_life * elapsed``; it must stay a finite float for any
# elapsed time up to this many clock units (~30 million years in seconds), also after
# adaptation shortened the half-life to ``adapt_bounds[0]`` times it.
_MAX_ELAPSED = 1e15
#: Largest score or fusion weight: only their ratios matter (a score adds three terms
#: of at most this times 1, far from overflowing).
MAX_WEIGHT = 1e6
_MIN_HALF_LIFE = _LN2 * _MAX_ELAPSED / sys.float_info.max  # ~3.9e-294
#: Longest half-life, once adapted (far beyond any elapsed time: no decay at all).
_MAX_HALF_LIFE = 1e300


#: The fusion weights (normalised by their sum): only their ratio matters.
_FUSION_WEIGHTS = ("dense_weight", "lexical_weight")


def _plain(value: Any) -> float:
    """``value`` as a float if it is a real number (not a bool), else 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return 0.0
    try:
        return float(value)
    except OverflowError:  # an int beyond float's range
        return math.inf


def _frozen(mapping: Mapping[str, float]) -> Mapping[str, float]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Policy:
    """Every tunable of the engine, validated on construction.

    Build one with :meth:`template` and adjust it with :meth:`replace`::

        policy = Policy.template("support-desk", clock="turns").replace(archive_low=0.2)

    Attributes:
        name: Template name, for display.
        clock: ``"wall"`` (seconds; memories decay while idle) or ``"turns"``
            (interactions; idle-safe).
        half_lives: Category -> half-life in clock units (> 0, and at least ~4e-294 /
            ``adapt_bounds[0]`` so the decay rate stays finite). Unknown categories use
            ``half_lives[default_category]``.
        betas: Category -> recall boost size β in ``(0, 1]``. Unknown categories use
            ``betas[default_category]``.
        default_category: The category whose half-life and β apply to a category this
            policy does not list. It does not name memories: one written without a
            category gets the importance scorer's (``HeuristicImportance``: ``"fact"``
            when no rule matches), which decays as ``default_category`` unless listed.
        used_gain: Boost multiplier for a memory the answer actually used (``mark_used``).
        archive_gain: Boost multiplier for a memory recalled from the archive.
        confirm_boost: Activation added by ``confirm()``.
        retrieval_stability / used_stability / confirm_stability: Stability gained per
            event; stability *u* slows decay as ``λ / (1 + stability_sigma * u)``.
        stability_sigma: Strength of that slowing (>= 0).
        cap: Maximum activation (boosts never exceed it).
        floor_fraction: Decay floor is ``floor_fraction * importance**2``.
        initial_base: New memories start at ``initial_base + (1 - initial_base) * importance``.
        archive_low / archive_high: Hysteresis band. Active memories below ``archive_low``
            are archived; archived ones above ``archive_high`` are restored; nothing moves
            inside the band. Invariant: ``0 <= archive_low < archive_high <= cap``.
        active_capacity: Target size of the active tier (``None`` = unbounded). Above it
            the thresholds rise until the tier fits.
        active_share: Target share of a namespace's memories in the active tier (``None`` =
            no share target). The tier's target size is then the smaller of
            ``active_capacity`` and ``max(active_share_min, ceil(active_share * memories))``:
            an agent that recalls on every turn keeps boosting what it retrieves, and
            without a share target that alone holds about half of a long conversation in
            the fast tier (LoCoMo: 47 %); the archive answers the rest through the gate.
        active_share_min: Stores with at most this many memories are never pushed below it
            by ``active_share`` (a small store stays in process).
        forget_enabled: Deletion by decay; off by default.
        forget_below: Archived memories below this activation may be deleted
            (``< archive_low``), except protected ones and summaries (deleting a
            summary would bring its originals back, only to be compressed again).
        forget_min_age: Never forget memories younger than this (clock units).
        journal_keep: ``maintain()`` drops recall and spread journal entries older than
            this (clock units), at most ``StateDB.PRUNE_CHUNK`` per call, as
            ``Oblivion.prune_journal`` does. ``None`` (the default) keeps the journal whole.
        protected_categories: Never forgotten (a list or tuple of names, not a string).
        protect_importance: Memories at or above this importance are never forgotten.
        archive_gate: Recall also searches the archive when the best active memory's
            cosine similarity to the query is below this, or fewer than ``k`` active
            hits exist.
        default_k: Items returned when no ``k`` is given.
        candidate_pool: Candidates fetched per tier before scoring.
        dense_weight / lexical_weight: Fusion of the two relevance signals:
            ``relevance = (dense_weight * max(cosine, 0) + lexical_weight *
            min(bm25 / top_bm25, 1)) / (dense_weight + lexical_weight)`` (BM25 from the
            in-process index, normalised by the best of the candidates recall may show).
            ``lexical_weight=0`` turns lexical retrieval off: relevance is the cosine.
        w_relevance / w_activation / w_importance: Score weights;
            ``score = w_relevance*relevance + share*(w_activation*activation +
            w_importance*importance)``.
        activation_focus: ``share = (relevance / best relevance of the query) **
            activation_focus``: activation and importance reorder memories about as
            relevant as the best one, but cannot lift a weakly relevant memory over a
            relevant one (0: they count fully for every candidate). At 4, a candidate
            with 90 % of the best relevance keeps 66 % of its activation term, one with
            50 % keeps 6 %. On LoCoMo the plain sum (0) cost 2 points of evidence recall
            against activation weight 0; 4 costs nothing.
        per_item_tokens: Formatting overhead counted per packed item (bullets, newlines).
        max_text_chars: Longer texts are rejected (:class:`TextTooLongError`).
        adapt: Let the engine adjust half-lives and betas from observed use. ``False``
            stops adjusting; what was learned stays in force.
        adapt_step: Relative change per adaptation step (e.g. 0.1 = 10 %).
        adapt_bounds: Adapted values stay within ``[lo, hi]`` times the template value,
            also those learned under wider bounds before (``(1, 1)``: the template's).
        adapt_min_events: Events a category needs before it is adapted.
        supersede: Detect, on write, memories that restate a fact an older memory holds
            (see :mod:`~oblivion_core.supersession`); the older one is superseded.
        supersede_similarity: Minimum cosine similarity of an older memory to be judged.
        supersede_fallback_similarity: Similarity needed by the cue-only fallback rule.
        hide_superseded: Recall returns the newest statement in place of superseded ones
            (``include_superseded=True`` shows them, ranked below their successor).
        link_on_write: Link each new memory to its nearest earlier neighbours (cosine >=
            ``link_similarity``, at most ``link_neighbours``, among the most recent
            ``link_window`` active memories) and to the memory written just before it
            when that was within ``adjacency_window`` clock units (weight
            ``adjacency_weight``). ``adjacency_window=None`` means 300 s on the wall
            clock and 1 turn on the turn clock.
        spread_fraction: Share of a boost that flows to each linked memory (x weight);
            0 turns spreading off.
        spread_hop_decay / spread_hops / spread_max_nodes: Further hops are multiplied
            by ``spread_hop_decay``; the walk stops after ``spread_hops`` hops or
            ``spread_max_nodes`` memories.
        invalidate_link_weight / invalidate_link_factor: ``invalidate()`` multiplies the
            activation of memories linked at least this strongly by the factor and flags
            them for review.
        expand_neighbours: Each of the best ``expand_neighbours`` hits of a recall is
            followed by the memories written just after and before it (within
            ``adjacency_window``), marked ``why["context_for"]``; 0 turns this off.
        context_share: A neighbour competes for a place (within ``k`` and the token
            budget) as if it scored this share of its hit's score (its own score if
            higher): it follows its hit unless that would leave out a hit scoring above
            the share; 1 always keeps it right behind its hit. At 0.85 LoCoMo is
            unchanged (within 0.3 points at every k and budget) and the demo's second
            hit (the newer team size, 95 % of the best score) is no longer left out for
            the best hit's two neighbours.
        expand_links: Recall fills leftover budget with the strongest linked memories of
            its hits (at most ``expand_max`` per hit), marked in ``why``.
        compress_below: Archived memories below this activation may be compressed into
            summaries (``None`` = never). See :mod:`~oblivion_core.compression`.
        compress_min_cluster / compress_similarity / compress_inherit: A group needs at
            least this many memories, each with cosine >= ``compress_similarity`` with the
            group's centroid, or, for a memory alike nothing else, written within
            ``adjacency_window`` after a memory of the group with cosine at least half
            of it (:func:`~oblivion_core.compression.clusters`); a summary stands for at
            most ``max(2 * compress_min_cluster, summarizer.max_words // 4)`` memories;
            it starts at ``compress_inherit`` times the group's highest activation.
        maintain_every: Run ``maintain()`` automatically after this many writes to a
            namespace (0 = only when called).
    """

    name: str = "balanced"
    clock: ClockKind = "wall"
    half_lives: Mapping[str, float] = field(default_factory=dict)
    betas: Mapping[str, float] = field(default_factory=dict)
    default_category: str = "fact"
    used_gain: float = 3.0
    archive_gain: float = 2.0
    confirm_boost: float = 0.5
    retrieval_stability: float = 0.1
    used_stability: float = 1.0
    confirm_stability: float = 3.0
    stability_sigma: float = 0.5
    cap: float = 1.0
    floor_fraction: float = 0.5
    initial_base: float = 0.5
    archive_low: float = 0.25
    archive_high: float = 0.4
    active_capacity: int | None = None
    active_share: float | None = 0.25
    active_share_min: int = 64
    forget_enabled: bool = False
    forget_below: float = 0.02
    forget_min_age: float = 0.0
    journal_keep: float | None = None
    # a list or tuple given; kept as a tuple (__post_init__)
    protected_categories: Sequence[str] = ("instruction", "preference")
    protect_importance: float = 0.7
    archive_gate: float = 0.55
    default_k: int = 8
    candidate_pool: int = 50
    dense_weight: float = 0.7
    lexical_weight: float = 0.3
    w_relevance: float = 1.0
    w_activation: float = 0.15
    w_importance: float = 0.05
    activation_focus: float = 4.0
    per_item_tokens: int = 4
    max_text_chars: int = 32_000
    adapt: bool = True
    adapt_step: float = 0.1
    adapt_bounds: tuple[float, float] = (0.25, 4.0)
    adapt_min_events: int = 20
    maintain_every: int = 32
    supersede: bool = True
    supersede_similarity: float = 0.45
    supersede_fallback_similarity: float = 0.6
    hide_superseded: bool = True
    link_on_write: bool = True
    link_similarity: float = 0.8
    link_neighbours: int = 3
    link_window: int = 2_000
    adjacency_window: float | None = None
    adjacency_weight: float = 0.3
    spread_fraction: float = 0.5
    spread_hop_decay: float = 0.5
    spread_hops: int = 2
    spread_max_nodes: int = 32
    invalidate_link_weight: float = 0.5
    invalidate_link_factor: float = 0.5
    expand_neighbours: int = 3
    context_share: float = 0.85
    expand_links: bool = False
    expand_max: int = 2
    compress_below: float | None = None
    compress_min_cluster: int = 3
    compress_similarity: float = 0.6
    compress_inherit: float = 0.5

    def __post_init__(self) -> None:
        self._validate()

    # ------------------------------------------------------------------ building
    @classmethod
    def template(cls, name: str = "balanced", *, clock: ClockKind = "wall") -> Policy:
        """Return a named template: ``balanced``, ``support-desk`` or ``research-assistant``.

        ``support-desk`` decays fast and keeps a small context; ``research-assistant``
        decays slowly and keeps more.
        """
        if not isinstance(name, str) or name not in _HALF_LIVES:
            raise PolicyError(f"unknown policy template {name!r}; choose one of {list(TEMPLATES)}")
        if clock not in ("wall", "turns"):
            raise PolicyError(f"clock must be 'wall' or 'turns', got {clock!r}")
        col = 0 if clock == "wall" else 1
        half_lives = {c: v[col] for c, v in _HALF_LIVES[name].items()}
        return cls(name=name, clock=clock, half_lives=half_lives, **_TEMPLATE_OVERRIDES[name])

    def replace(self, **changes: Any) -> Policy:
        """Return a copy with ``changes`` applied (validated again).

        ``half_lives`` and ``betas`` are merged into the policy's own: ``replace(
        half_lives={"fact": 7 * 86400})`` changes the facts' half-life and keeps every
        other category's (it set them all to seven days, the default category's fallback,
        before). Another ``clock`` needs ``half_lives`` for it too, and takes them as
        given, not merged: half-lives are in the clock's units (seconds or turns), and
        the wall clock's read as turns would not decay.
        """
        _refuse_unknown(changes)
        clock_changes = changes.get("clock", self.clock) != self.clock
        if clock_changes and "half_lives" not in changes:
            raise PolicyError(
                f"clock={changes['clock']!r} changes the unit of every half-life "
                f"({self.clock!r} -> {changes['clock']!r}): pass half_lives= for it too, or "
                f"start from Policy.template({self.name!r}, clock={changes['clock']!r})"
            )
        for key, own in (("half_lives", self.half_lives), ("betas", self.betas)):
            given = changes.get(key)
            if isinstance(given, Mapping) and not (clock_changes and key == "half_lives"):
                changes[key] = {**own, **given}
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ lookups
    def half_life(self, category: str) -> float:
        """Half-life of ``category`` in clock units (the default category's if unknown)."""
        hl = self.half_lives.get(category)
        return hl if hl is not None else self.half_lives[self.default_category]

    def beta(self, category: str) -> float:
        """Recall boost size of ``category``."""
        b = self.betas.get(category)
        return b if b is not None else self.betas[self.default_category]

    @property
    def adjacency(self) -> float:
        """The adjacency window in clock units (see ``adjacency_window``)."""
        if self.adjacency_window is not None:
            return self.adjacency_window
        return 300.0 if self.clock == "wall" else 1.0

    def active_target(self, memories: int) -> int | None:
        """Target active-tier size for a namespace of ``memories`` (``None`` = unbounded)."""
        targets = [] if self.active_capacity is None else [self.active_capacity]
        if self.active_share is not None:
            # the share as written ("0.07"): 0.07 * 100 is 7.000000000000001 in floats
            share = fractions.Fraction(repr(self.active_share))
            targets.append(max(self.active_share_min, math.ceil(share * memories)))
        return min(targets) if targets else None

    def __hash__(self) -> int:
        """Equal policies hash equal: a policy can key a dict or a cache (the generated
        hash failed on the read-only mappings)."""
        return hash(
            tuple(
                tuple(sorted(v.items())) if isinstance(v, Mapping) else v
                for v in (getattr(self, f.name) for f in dataclasses.fields(self))
            )
        )

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and deep-copied) by its fields: a process pool started by spawn or
        forkserver pickles the policy it hands each worker (the read-only mappings
        cannot be pickled themselves)."""
        return (_from_fields, (self.to_dict(),))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable view of every field."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["half_lives"] = dict(self.half_lives)
        out["betas"] = dict(self.betas)
        out["protected_categories"] = list(self.protected_categories)
        out["adapt_bounds"] = list(self.adapt_bounds)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, strict: bool = True) -> Policy:
        """Inverse of :meth:`to_dict`.

        A key that names no field is refused, as ``Policy(...)`` and :meth:`replace`
        refuse it: a misspelt field would otherwise run with its default. ``strict=False``
        drops such keys instead: how a store reads back a policy that a newer version of
        Oblivion saved, with fields this one lacks.
        """
        if not isinstance(data, Mapping):
            raise PolicyError(
                f"Policy.from_dict needs a mapping of field names to values (as to_dict() "
                f"returns), got {type(data).__name__} {data!r}"
            )
        if strict:
            _refuse_unknown(data)
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        # a policy saved before MAX_WEIGHT: its weights scaled down (only their ratios
        # matter), so the store it came from still opens and ranks as it did
        for group in (("w_relevance", "w_activation", "w_importance"), _FUSION_WEIGHTS):
            top = max((_plain(values.get(k)) for k in group), default=0.0)
            if MAX_WEIGHT < top < math.inf:
                for k in group:
                    if _plain(values.get(k)) > 0:
                        values[k] = values[k] * (MAX_WEIGHT / top)
        return cls(**values)

    # ------------------------------------------------------------------ validation
    def _validate(self) -> None:
        """Check every field; store numbers as plain ``float``/``int`` and containers as
        read-only mappings and tuples (the instance is frozen, hence ``object.__setattr__``)."""
        # -- types: each field must have its annotated type (numpy scalars count as numbers)
        if self.clock not in ("wall", "turns"):
            raise PolicyError(f"clock must be 'wall' or 'turns', got {self.clock!r}")
        for name in ("name", "default_category"):
            v = getattr(self, name)
            _require(isinstance(v, str), f"{name} must be a str, got {_shown(v)}")
            object.__setattr__(self, name, str.__str__(v))  # Category.FACT -> "fact"
        for name in _BOOL_FIELDS:
            v = getattr(self, name)
            _require(isinstance(v, bool), f"{name} must be True or False, got {_shown(v)}")
        for name, kind in _NUMBER_FIELDS.items():
            object.__setattr__(self, name, _number(name, getattr(self, name), kind))
        half_lives = _category_numbers(
            "half_lives", self.half_lives, "positive finite numbers", "{'fact': 86400.0}"
        ) or {c: v[0 if self.clock == "wall" else 1] for c, v in _HALF_LIVES["balanced"].items()}
        betas = _category_numbers(
            "betas", self.betas, "numbers in (0, 1]", "{'fact': 0.1}"
        ) or dict.fromkeys(half_lives, 0.1)
        object.__setattr__(self, "half_lives", _frozen(half_lives))
        object.__setattr__(self, "betas", _frozen(betas))
        object.__setattr__(self, "protected_categories", _category_names(self.protected_categories))
        object.__setattr__(self, "adapt_bounds", _pair("adapt_bounds", self.adapt_bounds))
        # -- values
        lo_b, hi_b = self.adapt_bounds
        _require(
            _finite(lo_b) and _finite(hi_b) and 0 < lo_b <= 1 <= hi_b,
            f"adapt_bounds must satisfy 0 < lo <= 1 <= hi, got {self.adapt_bounds!r}",
        )
        for cat, hl in self.half_lives.items():
            _require(
                _finite(hl) and hl > 0,
                f"half_lives[{cat!r}] must be a finite number > 0, got {hl!r}",
            )
            _require(
                hl * lo_b >= _MIN_HALF_LIFE,
                f"half_lives[{cat!r}] must be >= {_MIN_HALF_LIFE / lo_b:.3g} (with adapt_bounds "
                f"lo={lo_b!r}) so that the decay rate ln2/half_life stays finite; got {hl!r}",
            )
            _require(  # adaptation may lengthen it hi times: it must stay a number
                hl * hi_b <= _MAX_HALF_LIFE,
                f"half_lives[{cat!r}] must be <= {_MAX_HALF_LIFE / hi_b:.3g} (with adapt_bounds "
                f"hi={hi_b!r}) so that an adapted half-life stays finite; got {hl!r}",
            )
        for cat, b in self.betas.items():
            _require(_finite(b) and 0 < b <= 1, f"betas[{cat!r}] must be in (0, 1], got {b!r}")
        _require(
            self.default_category in self.half_lives and self.default_category in self.betas,
            f"default_category {self.default_category!r} needs an entry in half_lives and betas",
        )
        for name in ("used_gain", "archive_gain"):
            v = getattr(self, name)
            _require(_finite(v) and v >= 1, f"{name} must be a finite number >= 1, got {v!r}")
        for name in (
            "confirm_boost",
            "retrieval_stability",
            "used_stability",
            "confirm_stability",
            "stability_sigma",
            "forget_min_age",
            "dense_weight",
            "lexical_weight",
            "w_relevance",
            "w_activation",
            "w_importance",
            "activation_focus",
        ):
            v = getattr(self, name)
            _require(_finite(v) and v >= 0, f"{name} must be a finite number >= 0, got {v!r}")
        _require(
            _finite(self.cap) and 0 < self.cap <= 1, f"cap must be in (0, 1], got {self.cap!r}"
        )
        for name in ("floor_fraction", "initial_base", "protect_importance"):
            v = getattr(self, name)
            _require(_finite(v) and 0 <= v <= 1, f"{name} must be in [0, 1], got {v!r}")
        _require(
            _finite(self.archive_low)
            and _finite(self.archive_high)
            and 0 <= self.archive_low < self.archive_high <= self.cap,
            "thresholds must satisfy 0 <= archive_low < archive_high <= cap; got "
            f"archive_low={self.archive_low!r}, archive_high={self.archive_high!r}, "
            f"cap={self.cap!r}",
        )
        _require(
            _finite(self.forget_below) and 0 <= self.forget_below <= self.cap,
            f"forget_below must be a number in [0, cap={self.cap}], got {self.forget_below!r}",
        )
        # only deletion compares it with archive_low: with forgetting off, any archive_low
        # (down to 0, "never archive") goes without touching forget_below
        _require(
            not self.forget_enabled or self.forget_below < self.archive_low,
            f"forget_below must be below archive_low={self.archive_low} when forgetting is "
            f"enabled, got {self.forget_below!r}; lower forget_below or raise archive_low",
        )
        _require(
            self.dense_weight + self.lexical_weight > 0,
            "dense_weight + lexical_weight must be > 0 (one retrieval signal is needed)",
        )
        for name in (
            "dense_weight",
            "lexical_weight",
            "w_relevance",
            "w_activation",
            "w_importance",
        ):
            v = getattr(self, name)
            # only their ratios matter; huge ones overflow into inf and nan scores
            _require(
                v <= MAX_WEIGHT,
                f"{name} must be at most {MAX_WEIGHT:g} (weights are relative: scale them "
                f"all down), got {v!r}",
            )
        for name in (
            "adjacency_weight",
            "spread_fraction",
            "spread_hop_decay",
            "invalidate_link_weight",
            "invalidate_link_factor",
            "compress_inherit",
            "context_share",
        ):
            v = getattr(self, name)
            _require(_finite(v) and 0 <= v <= 1, f"{name} must be in [0, 1], got {v!r}")
        for name in ("link_neighbours", "link_window", "spread_hops", "spread_max_nodes"):
            v = getattr(self, name)
            _require(_int(v) and v >= 0, f"{name} must be an int >= 0, got {v!r}")
        for name in ("expand_max", "expand_neighbours"):
            v = getattr(self, name)
            _require(_int(v) and v >= 0, f"{name} must be an int >= 0, got {v!r}")
        _require(
            _int(self.compress_min_cluster) and self.compress_min_cluster >= 2,
            f"compress_min_cluster must be an int >= 2, got {self.compress_min_cluster!r}",
        )
        if self.adjacency_window is not None:
            _require(
                _finite(self.adjacency_window) and self.adjacency_window >= 0,
                f"adjacency_window must be None or a number >= 0, got {self.adjacency_window!r}",
            )
        if self.compress_below is not None:
            _require(
                _finite(self.compress_below) and 0 < self.compress_below <= self.archive_low,
                f"compress_below must be None or in (0, archive_low={self.archive_low}], got "
                f"{self.compress_below!r}",
            )
        for name in (
            "supersede_similarity",
            "supersede_fallback_similarity",
            "link_similarity",
            "compress_similarity",
        ):
            v = getattr(self, name)
            _require(_finite(v) and -1 <= v <= 1, f"{name} is a cosine in [-1, 1], got {v!r}")
        _require(
            _finite(self.archive_gate) and -1 <= self.archive_gate <= 1,
            f"archive_gate is a cosine similarity in [-1, 1], got {self.archive_gate!r}",
        )
        if self.active_capacity is not None:
            _require(
                _int(self.active_capacity) and self.active_capacity >= 1,
                f"active_capacity must be None or an int >= 1, got {self.active_capacity!r}",
            )
        if self.journal_keep is not None:
            _require(
                _finite(self.journal_keep) and self.journal_keep >= 0,
                f"journal_keep must be None or a finite number >= 0 (clock units), got "
                f"{self.journal_keep!r}",
            )
        if self.active_share is not None:
            _require(
                _finite(self.active_share) and 0 < self.active_share <= 1,
                f"active_share must be None or a share in (0, 1], got {self.active_share!r}",
            )
        for name, lo in (
            ("default_k", 1),
            ("candidate_pool", 1),
            ("max_text_chars", 1),
            ("active_share_min", 0),
        ):
            v = getattr(self, name)
            _require(_int(v) and v >= lo, f"{name} must be an int >= {lo}, got {v!r}")
        _require(
            _int(self.per_item_tokens) and self.per_item_tokens >= 0,
            f"per_item_tokens must be an int >= 0, got {self.per_item_tokens!r}",
        )
        _require(
            _finite(self.adapt_step) and 0 <= self.adapt_step < 1,
            f"adapt_step must be in [0, 1), got {self.adapt_step!r}",
        )
        _require(
            _int(self.maintain_every) and self.maintain_every >= 0,
            f"maintain_every must be an int >= 0, got {self.maintain_every!r}",
        )
        _require(
            _int(self.adapt_min_events) and self.adapt_min_events >= 1,
            f"adapt_min_events must be an int >= 1, got {self.adapt_min_events!r}",
        )


def _finite(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise PolicyError(message)


def _shown(v: object) -> str:
    """``str 'x'``: a value with its type, for messages about a wrong type."""
    return f"{type(v).__name__} {v!r}"


def _number(name: str, v: object, kind: str) -> float | int | None:
    """``v`` as a plain ``float`` (kind ``"float"``) or ``int`` (kind ``"int"``); ``None``
    passes when the kind ends in ``"?"`` (an optional field)."""
    optional = kind.endswith("?")
    if v is None and optional:
        return None
    or_none = " or None" if optional else ""
    return _integer(name, v, or_none) if kind.startswith("int") else _real(name, v, or_none)


def _real(name: str, v: object, or_none: str = "") -> float:
    """``v`` as a plain ``float``: any ``numbers.Real`` (numpy scalars included) but bool."""
    _require(
        isinstance(v, numbers.Real) and not isinstance(v, bool),
        f"{name} must be a number{or_none}, got {_shown(v)}",
    )
    try:
        return float(typing.cast(numbers.Real, v))
    except OverflowError:  # an int beyond the float range
        raise PolicyError(f"{name} must be a finite number{or_none}, got {v!r}") from None


def _integer(name: str, v: object, or_none: str = "") -> int:
    """``v`` as a plain ``int``: any ``numbers.Integral`` (numpy integers included) but bool."""
    _require(
        isinstance(v, numbers.Integral) and not isinstance(v, bool),
        f"{name} must be an int{or_none}, got {_shown(v)}",
    )
    return int(typing.cast(numbers.Integral, v))


def _category_numbers(name: str, v: object, what: str, example: str) -> dict[str, float]:
    """``v`` as ``{category: float}``; raises PolicyError unless it maps non-empty strings
    to numbers (ranges are checked by the caller)."""
    _require(
        isinstance(v, Mapping),
        f"{name} must map category names to {what}, e.g. {example}; got {_shown(v)}",
    )
    out: dict[str, float] = {}
    for cat, x in typing.cast(Mapping[object, object], v).items():
        _require(
            isinstance(cat, str) and cat != "",
            f"{name} must map category names (non-empty str) to {what}, got key {cat!r}",
        )
        out[str.__str__(typing.cast(str, cat))] = _real(f"{name}[{cat!r}]", x)
    return out


def _category_names(v: object) -> tuple[str, ...]:
    """``protected_categories`` as a tuple of non-empty strings."""
    _require(
        not isinstance(v, str | bytes | bytearray),
        "protected_categories must be a list or tuple of category names such as "
        f"[{v!r}], not a single string {v!r}",
    )
    _require(
        isinstance(v, Iterable) and not isinstance(v, Mapping),
        "protected_categories must be a list or tuple of category names such as "
        f"['instruction', 'preference'] ([] for none), got {_shown(v)}",
    )
    names = tuple(typing.cast(Iterable[object], v))
    for c in names:
        _require(
            isinstance(c, str) and c != "",
            f"protected_categories entries must be non-empty category names (str), got {c!r} "
            f"in {list(names)!r}",
        )
    return tuple(str.__str__(typing.cast(str, c)) for c in names)


def _pair(name: str, v: object) -> tuple[float, float]:
    """``v`` as a ``(lo, hi)`` pair of floats."""
    message = f"{name} must be a pair (lo, hi) of numbers such as (0.25, 4.0), got {_shown(v)}"
    _require(
        isinstance(v, Iterable) and not isinstance(v, str | bytes | bytearray | Mapping), message
    )
    items = tuple(typing.cast(Iterable[object], v))
    _require(
        len(items) == 2
        and all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in items),
        message,
    )
    return _real(name, items[0]), _real(name, items[1])


def _refuse_unknown(names: Iterable[object]) -> None:
    """Refuse any of ``names`` that is not a field of :class:`Policy`, naming the
    fields nearest to each (a misspelling)."""
    fields = [f.name for f in dataclasses.fields(Policy)]
    unknown = sorted({n for n in names if n not in fields}, key=repr)
    if not unknown:
        return
    near = [
        m
        for n in unknown
        if isinstance(n, str)
        for m in difflib.get_close_matches(n, fields, cutoff=0.75)
    ]
    hint = f"; did you mean {', '.join(map(repr, dict.fromkeys(near)))}?" if near else ""
    raise PolicyError(f"unknown policy field(s) {unknown}{hint}")


def _field_kinds() -> tuple[tuple[str, ...], dict[str, str]]:
    """The bool fields and the number fields of :class:`Policy`, read from its annotations
    (``"float"``, ``"int"``; a trailing ``"?"`` marks an optional one)."""
    kinds = {bool: "bool", float: "float", int: "int", float | None: "float?", int | None: "int?"}
    hints = typing.get_type_hints(Policy)
    by_field = {name: kinds[t] for name, t in hints.items() if t in kinds}
    bools = tuple(n for n, k in by_field.items() if k == "bool")
    return bools, {n: k for n, k in by_field.items() if k != "bool"}


_BOOL_FIELDS, _NUMBER_FIELDS = _field_kinds()


def resolve_policy(policy: Policy | str | None, clock: ClockKind | None = None) -> Policy:
    """Turn a template name, a policy or ``None`` (balanced) into a :class:`Policy`."""
    if policy is None:
        return Policy.template("balanced", clock=clock or "wall")
    if isinstance(policy, str):
        return Policy.template(policy, clock=clock or "wall")
    if isinstance(policy, Policy):
        return policy
    raise PolicyError(
        f"policy must be a Policy or a template name {list(TEMPLATES)}, got {policy!r}"
    )


__all__ = ["TEMPLATES", "ClockKind", "Policy", "resolve_policy"]


def _from_fields(fields: dict[str, Any]) -> Policy:
    """The policy of :meth:`Policy.to_dict`'s ``fields`` (:meth:`Policy.__reduce__`)."""
    return Policy(**fields)
