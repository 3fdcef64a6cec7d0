"""Policy input validation: wrong types and malformed values raise PolicyError saying what to
pass; numpy scalars are accepted and stored as plain Python numbers."""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import ManualClock, Policy, PolicyError
from oblivion_core.policy import TEMPLATES
from oblivion_core.testing import memory

HINTS = typing.get_type_hints(Policy)
BOOL_FIELDS = sorted(n for n, t in HINTS.items() if t is bool)
FLOAT_FIELDS = sorted(n for n, t in HINTS.items() if t in (float, float | None))
INT_FIELDS = sorted(n for n, t in HINTS.items() if t in (int, int | None))

# The three ways a policy is built from user input, each validated the same way.
BUILDERS = {
    "constructor": lambda **kw: Policy(**kw),
    "replace": lambda **kw: Policy.template("balanced").replace(**kw),
    "from_dict": lambda **kw: Policy.from_dict({**Policy().to_dict(), **kw}),
}


def test_bool_fields_are_the_annotated_ones() -> None:
    """Every field annotated ``bool`` is checked (the list below catches a new one)."""
    assert set(BOOL_FIELDS) == {
        "forget_enabled",
        "adapt",
        "supersede",
        "hide_superseded",
        "link_on_write",
        "expand_links",
    }
    for name in BOOL_FIELDS:
        for value in (True, False):
            assert getattr(Policy().replace(**{name: value}), name) is value


@pytest.mark.parametrize("build", BUILDERS.values(), ids=list(BUILDERS))
def test_bare_string_protected_categories_is_rejected(build: Any) -> None:
    """A bare string would become one category per letter and protect nothing."""
    with pytest.raises(PolicyError) as err:
        build(protected_categories="instruction")
    assert "protected_categories" in str(err.value)
    assert "['instruction']" in str(err.value)


@pytest.mark.parametrize("value", [None, 5, b"instruction", ["instruction", ""], ["fact", 1]])
def test_protected_categories_must_be_a_list_of_names(value: Any) -> None:
    """protected_categories needs a list/tuple of non-empty strings."""
    with pytest.raises(PolicyError, match="protected_categories"):
        Policy(protected_categories=value)


def test_protected_categories_accepts_lists_tuples_and_empty() -> None:
    """Lists and tuples of names are stored as a tuple; [] protects nothing."""
    assert Policy(protected_categories=["instruction"]).protected_categories == ("instruction",)
    assert Policy(protected_categories=("a", "b")).protected_categories == ("a", "b")
    assert Policy(protected_categories=[]).protected_categories == ()


_NOT_BOOL = st.one_of(
    st.none(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.lists(st.booleans(), max_size=2),
    st.just(np.bool_(True)),
)


@given(name=st.sampled_from(BOOL_FIELDS), value=_NOT_BOOL)
def test_any_non_bool_for_a_bool_field_is_rejected(name: str, value: Any) -> None:
    """forget_enabled="no" (truthy) and friends raise PolicyError naming field and value."""
    with pytest.raises(PolicyError) as err:
        Policy().replace(**{name: value})
    message = str(err.value)
    assert name in message
    assert repr(value) in message
    assert "True or False" in message


@pytest.mark.parametrize(
    ("changes", "mentions"),
    [
        ({"adapt_bounds": (0.5, 2.0, 3.0)}, "adapt_bounds must be a pair"),
        ({"adapt_bounds": None}, "adapt_bounds must be a pair"),
        ({"adapt_bounds": "ab"}, "adapt_bounds must be a pair"),
        ({"adapt_bounds": (0.5, "x")}, "adapt_bounds must be a pair"),
        ({"adapt_bounds": (math.nan, 2.0)}, "adapt_bounds"),
        ({"half_lives": 5}, "half_lives must map category names to positive finite numbers"),
        ({"half_lives": None}, "half_lives must map category names"),
        ({"half_lives": [("fact", 1.0)]}, "half_lives must map category names"),
        ({"half_lives": {1: 1.0}}, "category names"),
        ({"half_lives": {"": 1.0}}, "category names"),
        ({"half_lives": {"fact": "x"}}, "half_lives['fact'] must be a number, got str 'x'"),
        ({"half_lives": {"fact": True}}, "half_lives['fact'] must be a number"),
        ({"betas": 0.1}, "betas must map category names to numbers in (0, 1]"),
        ({"betas": {"fact": None}}, "betas['fact'] must be a number"),
        ({"name": None}, "name"),
        ({"default_category": 3}, "default_category"),
        ({"journal_keep": 10**400}, "journal_keep"),
    ],
)
def test_malformed_values_raise_policy_error(changes: dict[str, Any], mentions: str) -> None:
    """Wrong shapes raise PolicyError (not a bare ValueError/TypeError) saying what to pass."""
    for build in BUILDERS.values():
        with pytest.raises(PolicyError) as err:
            build(**changes)
        assert mentions in str(err.value)


@pytest.mark.parametrize("name", FLOAT_FIELDS)
def test_non_number_for_a_number_field_says_the_type_is_wrong(name: str) -> None:
    """A string where a number belongs: "<field> must be a number, got str 'x'"."""
    with pytest.raises(PolicyError) as err:
        Policy().replace(**{name: "x"})
    assert f"{name} must be a number" in str(err.value)
    assert "got str 'x'" in str(err.value)


@pytest.mark.parametrize("name", INT_FIELDS)
def test_non_int_for_an_int_field_says_the_type_is_wrong(name: str) -> None:
    """A string or a float where an int belongs: "<field> must be an int, got ..."."""
    for value, shown in (("x", "str 'x'"), (2.5, "float 2.5")):
        with pytest.raises(PolicyError) as err:
            Policy().replace(**{name: value})
        assert f"{name} must be an int" in str(err.value)
        assert shown in str(err.value)


@pytest.mark.parametrize("half_life", [5e-324, 1e-310, 1e-300, -0.0, math.nan])
def test_half_life_whose_decay_rate_overflows_is_rejected(half_life: float) -> None:
    """ln2/half_life must stay finite (5e-324 made remember() fail inside SQLite)."""
    with pytest.raises(PolicyError, match=r"half_lives\['fact'\]"):
        Policy(half_lives={"fact": half_life}, betas={"fact": 0.1})


def test_half_life_floor_accounts_for_adaptation() -> None:
    """Adaptation may shorten a half-life to adapt_bounds[0] times it; that must fit too."""
    Policy(half_lives={"fact": 1e-280}, betas={"fact": 0.1})
    with pytest.raises(PolicyError, match="adapt_bounds"):
        Policy(half_lives={"fact": 1e-280}, betas={"fact": 0.1}, adapt_bounds=(1e-20, 2.0))


def test_smallest_accepted_half_life_keeps_the_engine_working() -> None:
    """At the smallest half-life accepted, writes, recalls and maintenance stay finite."""
    lo = 0.25
    smallest = 1e-300
    while True:  # walk up to the first accepted value
        try:
            policy = Policy(
                half_lives={"fact": smallest, "instruction": 100.0},
                betas={"fact": 0.1, "instruction": 0.1},
                adapt_bounds=(lo, 4.0),
            )
            break
        except PolicyError:
            smallest *= 2
    clock = ManualClock()
    mem = memory(policy=policy, clock=clock)
    try:
        first = mem.remember("a fact about the moon", category="fact")
        assert math.isfinite(first.activation)
        clock.advance(1e9)
        mem.remember("another fact about the moon", category="fact")
        clock.advance(1e9)
        hits = mem.recall("moon fact")
        assert hits
        assert all(math.isfinite(h.activation) for h in hits)
        mem.maintain()
    finally:
        mem.close()


def test_numpy_scalars_are_stored_as_plain_python_numbers() -> None:
    """np.float32/np.int64/np.float64 are accepted and to_dict() stays JSON-serialisable."""
    policy = Policy(
        half_lives={"fact": np.float64(10.0), "event": np.int64(5)},
        betas={"fact": np.float32(0.5), "event": np.float64(0.25)},
        used_gain=np.float32(2.5),
        archive_low=np.float64(0.2),
        active_share=np.float32(0.5),
        default_k=np.int64(5),
        active_capacity=np.int64(100),
        journal_keep=np.int64(60),
        adapt_bounds=(np.float32(0.5), np.int64(2)),
    )
    assert type(policy.used_gain) is float
    assert type(policy.archive_low) is float
    assert type(policy.active_share) is float
    assert type(policy.journal_keep) is float
    assert type(policy.default_k) is int
    assert type(policy.active_capacity) is int
    assert all(type(v) is float for v in policy.half_lives.values())
    assert all(type(v) is float for v in policy.betas.values())
    assert all(type(v) is float for v in policy.adapt_bounds)
    assert policy.default_k == 5
    assert policy.used_gain == 2.5
    data = json.loads(json.dumps(policy.to_dict()))
    assert Policy.from_dict(data) == policy


def test_numpy_int_is_accepted_for_every_number_field() -> None:
    """Each float and int field takes a numpy scalar of its default's value."""
    base = Policy()
    for name in FLOAT_FIELDS + INT_FIELDS:
        default = getattr(base, name)
        if default is None:
            continue
        scalar = np.float64(default) if name in FLOAT_FIELDS else np.int64(default)
        changed = base.replace(**{name: scalar})
        assert type(getattr(changed, name)) is type(float(default) if name in FLOAT_FIELDS else 1)
        assert changed == base


def test_template_and_from_dict_reject_non_strings_and_non_mappings() -> None:
    """template() with a non-string name and from_dict() with a non-mapping raise PolicyError."""
    with pytest.raises(PolicyError, match="template"):
        Policy.template(["balanced"])  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="from_dict"):
        Policy.from_dict("balanced")  # type: ignore[arg-type]


_CATEGORY = st.text(alphabet="abcdefgh_", min_size=1, max_size=8)


@st.composite
def _policies(draw: st.DrawFn) -> Policy:
    cats = draw(st.lists(_CATEGORY, min_size=1, max_size=4, unique=True))
    number = draw(st.sampled_from([float, np.float64, np.float32]))
    half_lives = {c: number(draw(st.floats(1e-6, 1e12))) for c in cats}
    betas = {c: number(draw(st.floats(1e-3, 1.0))) for c in cats}
    low = draw(st.floats(0.0, 0.9))
    high = draw(st.floats(low + 0.01, 1.0))
    changes: dict[str, Any] = {
        "half_lives": half_lives,
        "betas": betas,
        "default_category": cats[0],
        "archive_low": low,
        "archive_high": high,
        "forget_below": low / 2,
        "compress_below": draw(st.none() | st.just(low)) if low > 0 else None,
        "default_k": draw(st.integers(1, 100)),
        "active_capacity": draw(st.none() | st.integers(1, 10**6).map(np.int64)),
        "journal_keep": draw(st.none() | st.floats(0, 1e9)),
        "protected_categories": draw(st.lists(_CATEGORY, max_size=3)),
        "adapt_bounds": [draw(st.floats(0.01, 1.0)), draw(st.floats(1.0, 100.0))],
    }
    for name in BOOL_FIELDS:
        changes[name] = draw(st.booleans())
    if changes["forget_enabled"] and low == 0:
        changes["forget_enabled"] = False
    return Policy.template(draw(st.sampled_from(["balanced", "support-desk"]))).replace(**changes)


@given(policy=_policies())
def test_any_valid_policy_round_trips_through_json(policy: Policy) -> None:
    """to_dict() holds only JSON types and from_dict() rebuilds an equal policy."""
    data = policy.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert Policy.from_dict(json.loads(json.dumps(data))) == policy
    assert dataclasses.replace(policy) == policy


@pytest.mark.parametrize(
    ("changes", "mentions"),
    [
        ({"w_relevance": 1e308, "w_activation": 1e308}, "w_relevance must be at most"),
        ({"w_importance": 1e7}, r"w_importance must be at most 1e\+06"),
        ({"lexical_weight": 1e300}, "lexical_weight must be at most"),
    ],
)
def test_weights_over_the_limit_are_refused(changes: dict[str, Any], mentions: str) -> None:
    """They were accepted, and recall's scores overflowed into inf and nan (a saved
    policy is scaled down instead: below)."""
    for build in (BUILDERS["constructor"], BUILDERS["replace"]):
        with pytest.raises(PolicyError, match=mentions):
            build(**changes)


def test_a_saved_policy_with_weights_over_the_limit_is_scaled_down() -> None:
    """A store saved before weights were capped at 1e6 would no longer open (its stored
    policy refused); the weights are scaled down together, so the ranking is the same."""
    saved = Policy().to_dict() | {"w_relevance": 2e6, "w_activation": 3.0, "w_importance": 0.0}
    saved |= {"dense_weight": 4e6, "lexical_weight": 1e6}
    policy = Policy.from_dict(saved)
    assert (policy.w_relevance, policy.w_activation, policy.w_importance) == (1e6, 1.5, 0.0)
    assert (policy.dense_weight, policy.lexical_weight) == (1e6, 2.5e5)
    with pytest.raises(PolicyError, match="w_relevance must be at most"):
        Policy(w_relevance=2e6)  # a new one is still refused


def test_a_store_saved_with_such_weights_opens(tmp_path: Any) -> None:
    import sqlite3

    from oblivion_core import Oblivion
    from oblivion_core.testing import HashEmbedder, word_count

    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        mem.remember("the office is in Berlin")
        mem.set_policy("support-desk", namespace="desk")
    conn = sqlite3.connect(tmp_path / "oblivion.sqlite3")
    saved = Policy().to_dict() | {"w_relevance": 2e6}
    conn.execute("UPDATE meta SET value=? WHERE key='policy'", (json.dumps(saved),))
    conn.execute("UPDATE namespaces SET policy=? WHERE namespace='desk'", (json.dumps(saved),))
    conn.commit()
    conn.close()
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        assert mem.policy.w_relevance == 1e6
        assert mem.policy_for("desk").w_relevance == 1e6
        assert mem.recall("office").ids


def test_another_clock_needs_its_own_half_lives() -> None:
    """``replace(clock="turns")`` kept the wall clock's half-lives, in seconds, and read
    them as turns (a fact's 1,814,400 turns: nothing decayed)."""
    wall = Policy.template("balanced")
    with pytest.raises(PolicyError, match=r"pass half_lives= for it too.*clock='turns'"):
        wall.replace(clock="turns")
    turns = wall.replace(clock="turns", half_lives={"fact": 600.0})
    assert (turns.clock, turns.half_life("fact")) == ("turns", 600.0)
    assert dict(turns.half_lives) == {"fact": 600.0}  # as given: none in seconds kept
    assert Policy.template("balanced", clock="turns").half_life("fact") == 600.0


@pytest.mark.parametrize("template", TEMPLATES)
def test_replace_merges_half_lives_and_betas_into_the_policys_own(template: str) -> None:
    """``replace(half_lives={"fact": ...})`` replaced the whole mapping: every other
    category fell back to the default category's, so an instruction's half-life went
    from 180 days to the new fact's 7."""
    base = Policy.template(template)
    week = 7 * 86_400.0
    changed = base.replace(half_lives={"fact": week, "note": 3.0}, betas={"event": 0.07})
    assert changed.half_life("fact") == week and changed.half_life("note") == 3.0
    assert changed.beta("event") == 0.07
    for cat in base.half_lives:
        if cat != "fact":
            assert changed.half_life(cat) == base.half_life(cat)
    for cat in base.betas:
        if cat != "event":
            assert changed.beta(cat) == base.beta(cat)
    assert base.half_life("fact") != week  # the original is unchanged
    with pytest.raises(PolicyError, match=r"half_lives\['fact'\]"):
        base.replace(half_lives={"fact": -1.0})


def test_a_half_life_adaptation_would_make_infinite_is_refused() -> None:
    """1.7e308 passed, and one adaptation step (x1.1) made it inf in stats() and the
    journal (written as non-standard JSON)."""
    with pytest.raises(PolicyError, match=r"half_lives\['task'\] must be <="):
        Policy().replace(half_lives={**Policy().half_lives, "task": 1.7e308})
    assert Policy().replace(half_lives={**Policy().half_lives, "task": 1e250}).half_life("task")
