"""The policy: validation, templates, and switching policy at run time."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from oblivion_core import TEMPLATES, ManualClock, Oblivion, Policy, PolicyError
from oblivion_core.records import BUILTIN_CATEGORIES

DAY = 86_400.0


@pytest.mark.parametrize("name", TEMPLATES)
@pytest.mark.parametrize("clock", ["wall", "turns"])
def test_every_template_builds_for_both_clocks(name: str, clock: str) -> None:
    """Each named template is a valid policy for the wall and the turn clock."""
    policy = Policy.template(name, clock=clock)  # type: ignore[arg-type]
    assert policy.name == name
    assert policy.clock == clock
    assert set(BUILTIN_CATEGORIES) <= set(policy.half_lives)


def test_templates_are_listed() -> None:
    """The three documented templates exist."""
    assert set(TEMPLATES) == {"balanced", "support-desk", "research-assistant"}


@pytest.mark.parametrize("clock", ["wall", "turns"])
@pytest.mark.parametrize("category", BUILTIN_CATEGORIES)
def test_support_desk_decays_faster_than_research_assistant(clock: str, category: str) -> None:
    """For every category: support-desk < balanced < research-assistant half-lives."""
    hl = {n: Policy.template(n, clock=clock).half_life(category) for n in TEMPLATES}  # type: ignore[arg-type]
    assert hl["support-desk"] < hl["balanced"] < hl["research-assistant"]


def test_wall_half_lives_are_in_seconds() -> None:
    """Wall-clock templates state half-lives in seconds (a preference lasts weeks)."""
    policy = Policy.template("balanced", clock="wall")
    assert policy.half_life("preference") == 60 * DAY
    assert policy.half_life("small_talk") == 0.5 * DAY


def test_instructions_outlive_small_talk() -> None:
    """In every template an instruction's half-life is longer than small talk's."""
    for name in TEMPLATES:
        policy = Policy.template(name)
        assert policy.half_life("instruction") > policy.half_life("small_talk")


def test_unknown_template_lists_the_known_ones() -> None:
    """An unknown template name raises PolicyError naming every valid template."""
    with pytest.raises(PolicyError) as err:
        Policy.template("aggressive")
    for name in TEMPLATES:
        assert name in str(err.value)


def test_unknown_clock_is_rejected() -> None:
    """A clock other than 'wall' or 'turns' raises PolicyError."""
    with pytest.raises(PolicyError, match="clock"):
        Policy.template("balanced", clock="days")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "mentions"),
    [
        ({"archive_low": 0.5, "archive_high": 0.4}, "archive_low < archive_high"),
        ({"archive_low": 0.4, "archive_high": 0.4}, "archive_low < archive_high"),
        ({"archive_high": 1.2}, "archive_high"),
        ({"archive_low": -0.1}, "archive_low"),
        ({"archive_low": math.nan}, "archive_low"),
        ({"forget_below": 0.3, "forget_enabled": True}, "lower forget_below"),
        ({"forget_below": -0.1}, "forget_below"),
        ({"forget_below": math.nan}, "forget_below"),
        ({"half_lives": {"fact": 0.0}, "default_category": "fact"}, "half_lives"),
        ({"half_lives": {"fact": -1.0}, "default_category": "fact"}, "half_lives"),
        ({"half_lives": {"fact": math.inf}, "default_category": "fact"}, "half_lives"),
        ({"betas": {"fact": 0.0}}, "betas"),
        ({"betas": {"fact": 1.5}}, "betas"),
        ({"default_category": "nope"}, "default_category"),
        ({"used_gain": 0.5}, "used_gain"),
        ({"archive_gain": math.nan}, "archive_gain"),
        ({"confirm_boost": -0.1}, "confirm_boost"),
        ({"stability_sigma": -1.0}, "stability_sigma"),
        ({"w_relevance": True}, "w_relevance"),
        ({"cap": 0.0}, "cap"),
        ({"cap": 1.5}, "cap"),
        ({"floor_fraction": 1.5}, "floor_fraction"),
        ({"initial_base": -0.5}, "initial_base"),
        ({"protect_importance": 2.0}, "protect_importance"),
        ({"active_capacity": 0}, "active_capacity"),
        ({"active_capacity": 1.5}, "active_capacity"),
        ({"active_capacity": True}, "active_capacity"),
        ({"active_share": 0.0}, "active_share"),
        ({"active_share": 1.5}, "active_share"),
        ({"active_share": math.nan}, "active_share"),
        ({"active_share_min": -1}, "active_share_min"),
        ({"active_share_min": 2.5}, "active_share_min"),
        ({"default_k": 0}, "default_k"),
        ({"candidate_pool": 0}, "candidate_pool"),
        ({"max_text_chars": 0}, "max_text_chars"),
        ({"per_item_tokens": -1}, "per_item_tokens"),
        ({"archive_gate": 1.5}, "archive_gate"),
        ({"context_share": 1.5}, "context_share"),
        ({"context_share": math.nan}, "context_share"),
        ({"adapt_step": 1.0}, "adapt_step"),
        ({"adapt_bounds": (2.0, 3.0)}, "adapt_bounds"),
        ({"adapt_min_events": 0}, "adapt_min_events"),
        ({"maintain_every": -1}, "maintain_every"),
        ({"dense_weight": 0.0, "lexical_weight": 0.0}, "dense_weight + lexical_weight"),
        ({"clock": "days"}, "clock"),
    ],
)
def test_invalid_values_raise_policy_error_naming_the_field(
    changes: dict[str, Any], mentions: str
) -> None:
    """Every out-of-range or inconsistent value raises PolicyError naming what to change."""
    with pytest.raises(PolicyError) as err:
        Policy().replace(**changes)
    assert mentions in str(err.value)


def test_replace_rejects_unknown_fields() -> None:
    """replace() with a misspelt field raises PolicyError naming it."""
    with pytest.raises(PolicyError, match="archive_lo"):
        Policy().replace(archive_lo=0.1)


def test_from_dict_rejects_unknown_keys_naming_the_nearest_fields() -> None:
    """from_dict() refuses a misspelt key, as Policy(...) and replace() do, and names
    the field meant, instead of running with that field's default."""
    with pytest.raises(PolicyError, match="'max_text_char'") as err:
        Policy.from_dict({"name": "balanced", "max_text_char": 1000})
    assert "did you mean 'max_text_chars'?" in str(err.value)
    with pytest.raises(PolicyError, match=r"\['archive_lo', 'no_such_field'\]"):
        Policy.from_dict({"archive_lo": 0.1, "no_such_field": 1})
    with pytest.raises(PolicyError, match="did you mean 'archive_low'"):
        Policy().replace(archive_lo=0.1)


def test_from_dict_not_strict_drops_unknown_keys() -> None:
    """strict=False drops keys this version has no field for (a policy a newer version
    saved) and keeps the rest."""
    data = {**Policy().replace(max_text_chars=1000).to_dict(), "future_field": 1}
    assert Policy.from_dict(data, strict=False) == Policy().replace(max_text_chars=1000)


def test_a_store_whose_policies_a_newer_version_saved_still_opens(tmp_path: Any) -> None:
    """A stored policy (the store's and a namespace's) with fields this version lacks is
    read without them: the store opens with the policies it was closed with."""
    import sqlite3

    from oblivion_core.state import StateDB
    from oblivion_core.testing import memory

    with memory(tmp_path) as mem:
        mem.remember("I live in Paris")
        mem.remember("I like green tea", namespace="sam")
        mem.set_policy(mem.policy.replace(max_text_chars=1000))
        mem.set_policy("support-desk", namespace="sam")
        policies = mem.policy, mem.policy_for("sam")

    def newer(policy: Policy) -> str:
        return json.dumps({**policy.to_dict(), "future_field": 1})

    conn = sqlite3.connect(tmp_path / StateDB.FILE)
    with conn:
        for sql, policy in (
            ("UPDATE meta SET value=? WHERE key='policy'", policies[0]),
            ("UPDATE namespaces SET policy=? WHERE namespace='sam'", policies[1]),
        ):
            assert conn.execute(sql, (newer(policy),)).rowcount == 1
    conn.close()
    with memory(tmp_path) as mem:
        assert (mem.policy, mem.policy_for("sam")) == policies
        assert mem.recall("Paris").texts == ["I live in Paris"]


def test_replace_returns_a_validated_copy() -> None:
    """replace() leaves the original untouched and applies the change to a copy."""
    base = Policy.template("balanced")
    changed = base.replace(archive_low=0.1)
    assert changed.archive_low == 0.1
    assert base.archive_low == 0.25


def test_policy_is_immutable() -> None:
    """A policy cannot be mutated in place, not even its half-life table."""
    policy = Policy()
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.archive_low = 0.1  # type: ignore[misc]
    with pytest.raises(TypeError):
        policy.half_lives["fact"] = 1.0  # type: ignore[index]


@pytest.mark.parametrize("name", TEMPLATES)
def test_to_dict_round_trips_through_json(name: str) -> None:
    """to_dict() is JSON-serialisable and from_dict() rebuilds an equal policy."""
    policy = Policy.template(name, clock="turns").replace(active_capacity=10)
    data = json.loads(json.dumps(policy.to_dict()))
    assert Policy.from_dict(data) == policy


@given(
    low=st.floats(0.01, 0.98),
    width=st.floats(0.01, 1.0),
    k=st.integers(1, 100),
    hl=st.floats(1e-3, 1e9),
)
def test_valid_random_policies_round_trip(low: float, width: float, k: int, hl: float) -> None:
    """Any valid combination of thresholds, k and half-life survives to_dict/from_dict."""
    high = min(1.0, low + width)
    if high <= low:
        return
    policy = Policy(
        half_lives={"fact": hl},
        betas={"fact": 0.1},
        archive_low=low,
        archive_high=high,
        forget_below=low / 2,
        default_k=k,
    )
    assert Policy.from_dict(json.loads(json.dumps(policy.to_dict()))) == policy


def test_archive_low_zero_is_a_valid_never_archive_policy() -> None:
    """archive_low=0 (documented as allowed) builds when forgetting is off."""
    policy = Policy().replace(archive_low=0.0, forget_below=0.0)
    assert policy.archive_low == 0.0


@pytest.mark.parametrize("low", [0.0, 0.01])
def test_a_low_archive_low_needs_no_forget_below_while_forgetting_is_off(low: float) -> None:
    """forget_below only bounds deletion: with forgetting off, an archive_low below its
    default (0.02) is accepted as it is (it used to be refused, by a message about
    forgetting being enabled); enabling forgetting then says what to lower."""
    policy = Policy().replace(archive_low=low)
    assert (policy.archive_low, policy.forget_enabled) == (low, False)
    with pytest.raises(PolicyError, match="lower forget_below or raise archive_low"):
        policy.replace(forget_enabled=True)


def test_unknown_category_uses_the_default_category() -> None:
    """A category without its own entry decays and boosts like the default category."""
    policy = Policy()
    assert policy.half_life("recipes") == policy.half_life(policy.default_category)
    assert policy.beta("recipes") == policy.beta(policy.default_category)


# ---------------------------------------------------------------- policy at run time


def test_policy_templates_differ_through_the_engine(fresh: Any) -> None:
    """After the same idle time, support-desk has decayed a memory most, research least."""
    acts = {}
    for name in TEMPLATES:
        clock = ManualClock()
        with fresh(clock=clock, policy=name) as mem:
            rec = mem.remember("the server room code is 4412", category="fact", importance=0.0)
            clock.advance(5 * DAY)
            acts[name] = mem.get(rec.id).activation
    assert acts["support-desk"] < acts["balanced"] < acts["research-assistant"]


def test_policy_name_accepted_by_the_constructor(fresh: Any) -> None:
    """A template name given to Oblivion() becomes the engine's policy."""
    with fresh(policy="support-desk") as mem:
        assert mem.policy.name == "support-desk"
        assert mem.policy_for().name == "support-desk"


def test_set_policy_for_one_namespace_only(mem: Oblivion) -> None:
    """set_policy(namespace=...) changes that namespace and leaves the default alone."""
    mem.remember("ticket 12 is about the printer", namespace="desk")
    mem.set_policy("support-desk", namespace="desk", reason="busy queue")
    assert mem.policy_for("desk").name == "support-desk"
    assert mem.policy_for().name == "balanced"
    assert mem.policy.name == "balanced"


def test_set_policy_is_recorded_in_the_namespace_journal(mem: Oblivion) -> None:
    """A per-namespace switch is journaled with from, to and the reason."""
    mem.remember("ticket 12 is about the printer", namespace="desk")
    mem.set_policy("support-desk", namespace="desk", reason="busy queue")
    events = [e for e in mem.history(namespace="desk") if e.kind == "policy"]
    assert len(events) == 1
    assert events[0].detail["from"] == "balanced"
    assert events[0].detail["to"] == "support-desk"
    assert events[0].detail["reason"] == "busy queue"


def test_global_set_policy_is_visible_in_history(mem: Oblivion) -> None:
    """A default-policy switch appears in the journal a user can read through history()."""
    mem.remember("the office opens at nine")
    mem.set_policy("research-assistant", reason="long project")
    kinds = [e.kind for e in mem.history()]
    assert "policy" in kinds


def test_a_default_switch_is_not_journaled_where_a_namespace_keeps_its_own(
    mem: Oblivion,
) -> None:
    """set_policy() of the default journaled a switch (from the default's old name) in
    every namespace, also one that keeps its own policy and did not switch."""
    mem.remember("a fact", namespace="n2")
    mem.remember("another fact", namespace="n3")
    mem.set_policy("research-assistant", namespace="n2")
    mem.set_policy("support-desk")
    assert mem.policy_for("n2").name == "research-assistant"
    switches = {
        ns: [e.detail["to"] for e in mem.history(namespace=ns) if e.kind == "policy"]
        for ns in ("n2", "n3")
    }
    assert switches == {"n2": ["research-assistant"], "n3": ["support-desk"]}


def test_set_policy_keeps_activation_continuous(mem: Oblivion, clock: ManualClock) -> None:
    """Switching policy does not change any activation at the moment of the switch."""
    rec = mem.remember("the backup runs on Sundays", category="fact", importance=0.2)
    clock.advance(10 * DAY)
    before = mem.get(rec.id).activation
    mem.set_policy("support-desk", reason="test")
    assert mem.get(rec.id).activation == pytest.approx(before, rel=1e-12)


def test_a_lower_cap_brings_activations_down_to_it(mem: Oblivion, clock: ManualClock) -> None:
    """ "cap: Maximum activation": after set_policy lowers it, no memory is above it,
    and boosts (recall, confirm) keep them at it; one below it is unchanged; the
    switch is journaled and survives a reopen of the namespace."""
    high = mem.remember(
        "the office wifi password is on the fridge", category="fact", importance=1.0
    )
    low = mem.remember("lovely weather today", category="small_talk", importance=0.0)
    clock.advance(DAY)
    below = mem.get(low.id).activation
    assert mem.get(high.id).activation > 0.5 > below
    before = mem.get(high.id).activation
    mem.set_policy(Policy.template("balanced").replace(cap=0.5, archive_low=0.2, archive_high=0.3))
    assert mem.get(high.id).activation == pytest.approx(0.5)
    assert mem.get(low.id).activation == pytest.approx(below, rel=1e-12)
    # journaled: the lowered memory's history, and the switch names what changed
    cut = mem.history(high.id)[-1]
    assert (cut.kind, cut.before, cut.after) == ("policy", pytest.approx(before), 0.5)
    assert "cap" in cut.detail["reason"]
    assert [e.kind for e in mem.history(low.id)] == ["remember"]
    switch = [e for e in mem.history() if e.kind == "policy" and e.memory_id is None][-1]
    assert switch.detail["changed"]["cap"] == [1.0, 0.5]
    item = mem.recall("office wifi password", k=1)[0]
    assert item.why["boost"]["after"] <= 0.5 and mem.confirm(high.id) <= 0.5
    mem.unload()
    assert mem.get(high.id).activation <= 0.5
    assert [e.kind for e in mem.history(high.id)][-2:] == ["recall", "confirm"]


def test_set_policy_changes_future_decay(mem: Oblivion, clock: ManualClock) -> None:
    """After a switch, decay follows the new policy's half-life from the switch onwards."""
    rec = mem.remember("the backup runs on Sundays", category="fact", importance=0.0)
    clock.advance(3 * DAY)
    at_switch = mem.get(rec.id).activation
    new = mem.set_policy("support-desk", reason="test")
    clock.advance(new.half_life("fact"))
    assert mem.get(rec.id).activation == pytest.approx(at_switch / 2, rel=1e-9)


def test_set_policy_keeps_the_clock_kind(fresh: Any) -> None:
    """Switching by template name keeps the engine's clock kind (turns stays turns)."""
    with fresh(policy=Policy.template("balanced", clock="turns")) as mem:
        new = mem.set_policy("support-desk")
        assert new.clock == "turns"


def test_set_policy_rejects_a_policy_for_another_clock(fresh: Any) -> None:
    """A wall-clock policy cannot be switched into a turn-clock engine (units differ)."""
    with fresh(policy=Policy.template("balanced", clock="turns"), clock=None) as mem:
        with pytest.raises(PolicyError, match="clock"):
            mem.set_policy(Policy.template("support-desk", clock="wall"))
        assert mem.policy.clock == "turns"


def test_set_policy_rejects_unknown_template(mem: Oblivion) -> None:
    """An unknown template raises PolicyError and the policy in force is unchanged."""
    with pytest.raises(PolicyError, match="support-desk"):
        mem.set_policy("aggresive")
    assert mem.policy.name == "balanced"


@pytest.mark.parametrize(
    ("signal", "template"),
    [
        ("customer support session", "support-desk"),
        ("Research on protein folding", "research-assistant"),
        ("casual chat", "balanced"),
        # whole words, the first named: "unsupported" named support-desk, and so did
        # research on a support topic (the dict's order)
        ("this option is unsupported", "balanced"),
        ("Research on support tickets", "research-assistant"),
        ("Tickets about a study", "support-desk"),
        # irregular plurals: "s?" missed them
        ("three case studies of churn", "research-assistant"),
        ("data analyses for the board", "research-assistant"),
    ],
)
def test_use_template_for_picks_a_template_from_a_signal_and_journals_it(
    signal: str, template: str
) -> None:
    """A caller's signal selects the matching template for one namespace, journaled."""
    from oblivion_core.testing import memory

    mem = memory()
    mem.remember("hello there", namespace="s1")
    chosen = mem.use_template_for(signal, namespace="s1")
    assert chosen.name == template
    assert mem.policy_for("s1").name == template
    assert mem.policy_for("default").name == "balanced"
    events = [e for e in mem.history(namespace="s1") if e.kind == "policy"]
    assert events[-1].detail["to"] == template
    assert signal in events[-1].detail["reason"]


@given(st.integers(1, 999), st.integers(0, 5000))
@example(70, 100)
def test_the_active_share_target_is_the_exact_ceiling_of_the_share_as_written(
    thousandths: int, memories: int
) -> None:
    """0.07 * 100 is 7.000000000000001 in floats: the target was 8, not 7."""
    share = thousandths / 1000
    policy = Policy(active_share=share, active_share_min=1)
    exact = -(-thousandths * memories // 1000)  # ceil(thousandths * memories / 1000)
    assert policy.active_target(memories) == max(1, exact)


def test_equal_policies_hash_equal() -> None:
    """A policy can key a dict or a cache (hash() raised TypeError on its mappings)."""
    a, b = Policy.template("balanced"), Policy.from_dict(Policy().to_dict())
    assert a == b and hash(a) == hash(b)
    cache = {a: "balanced", Policy.template("support-desk"): "support"}
    assert cache[b] == "balanced" and len(cache) == 2


def test_categories_given_as_the_category_enum_are_their_names() -> None:
    """Category.FACT hashes as "FACT", not "fact": a policy keyed by the enum did not find
    the memories' categories, nor protect them."""
    from oblivion_core import Category

    policy = Policy(
        half_lives={Category.FACT: 100.0, "note": 5.0},
        betas={Category.FACT: 0.1, "note": 0.2},
        default_category=Category.FACT,
        protected_categories=[Category.INSTRUCTION],
    )
    assert set(policy.half_lives) == {"fact", "note"}
    assert all(type(c) is str for c in [*policy.half_lives, *policy.betas])
    assert type(policy.default_category) is str and policy.default_category == "fact"
    assert policy.protected_categories == ("instruction",)
    assert type(policy.protected_categories[0]) is str
    assert Policy.from_dict(json.loads(json.dumps(policy.to_dict()))) == policy


@pytest.mark.parametrize(
    ("name", "near"),
    [
        ("Instruction", "instruction"),
        ("instructions", "instruction"),
        (" PREFERENCES ", "preference"),
        ("instruction", None),  # one of them
        ("rule", None),  # a category of the user's own
        ("instructor", None),
    ],
)
def test_near_category_names_the_one_a_name_only_mistypes(name: str, near: str | None) -> None:
    from oblivion_core.checks import near_category

    assert near_category(name, Policy().half_lives) == near


def test_a_mistyped_category_is_warned_of_once(caplog: pytest.LogCaptureFixture) -> None:
    """``category="Instruction"`` made a new category, decaying as a fact and not
    protected, and ``standing="instructions"`` showed no instruction, both silently
    (found by a review of the README as a new user reads it)."""
    from oblivion_core.testing import memory

    mem = memory()
    with caplog.at_level("WARNING", logger="oblivion_core"):
        mem.remember("Always answer in British English.", category="instruction")
        mem.remember("Rules are rules.", category="rule")  # the user's own: no warning
        assert caplog.records == []
        mem.remember("Never use emoji.", category="Instruction")
        mem.remember("Keep answers short.", category="Instruction")
        assert len(caplog.records) == 1
        said = caplog.records[0].getMessage()
        assert "'Instruction'" in said and "like 'instruction'" in said
        assert "not protected" in said
        got = mem.recall("", standing="instructions")
        assert got.ids == []  # as before: standing is the exact category
        assert len(caplog.records) == 2
        assert "standing='instructions'" in caplog.records[1].getMessage()
        mem.recall("", standing="instructions")
        mem.recall("", standing="instruction")
        assert len(caplog.records) == 2
    assert mem.get(mem.recall("", standing="Instruction").ids[0]).category == "Instruction"
    # an edit's category is written too; the hint names the policy's, not the typo
    caplog.clear()
    with caplog.at_level("WARNING", logger="oblivion_core"):
        rule = mem.remember("Cite your sources.", category="instruction").id
        mem.edit(rule, category="Instructions")
        assert len(caplog.records) == 1
        assert "like 'instruction'" in caplog.records[0].getMessage()
