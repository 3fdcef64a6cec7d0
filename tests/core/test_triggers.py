"""Keyword checks before a regular expression (oblivion_core.triggers) change no result.

Each pattern that is searched only in texts holding one of its trigger words must match
no text that holds none. Three sources of texts:

- *witnesses* read off the pattern's syntax tree: one text for every alternative of every
  part (the other parts as their first alternative), ``\\s`` as a tab, so a trigger
  written with a space where the pattern allows any whitespace is caught. Removing any
  one trigger from a list makes some witness fail (checked below), so the check can fail
  for every word it relies on;
- texts Hypothesis generates to match the pattern (``from_regex``);
- texts of the pattern's words with separators, case changes, digits and characters
  beyond ASCII. With these, the text rules that use the checks are compared with the
  same rules searching every text.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from oblivion_core import importance as imp
from oblivion_core import supersession as sup
from oblivion_core import triggers

try:
    from re import _constants as sre
    from re import _parser as sre_parse
except ImportError:  # Python 3.10
    import sre_constants as sre  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

CHECKED = [
    ("_CUES", sup._CUES, sup._CUE_TRIGGERS),
    ("_NEGATION", sup._NEGATION, sup._NEGATION_TRIGGERS),
    ("_NEGATED", sup._NEGATED, sup._NEGATED_TRIGGERS),
    ("_NAME", sup._NAME, sup._NAME_TRIGGERS),
    ("_USE_NAME", sup._USE_NAME, sup._NAME_TRIGGERS),
    ("_NOW", sup._NOW, sup._NOW_TRIGGERS),
    ("_QUANTITY", sup._QUANTITY, sup._QUANTITY_TRIGGERS),
    ("_LIKING", sup._LIKING, sup._LIKING_TRIGGERS),
    ("_ADDITIVE", sup._ADDITIVE, sup._ADDITIVE_TRIGGERS),
    ("_ONE_OFF", sup._ONE_OFF, sup._ONE_OFF_TRIGGERS),
    ("_ROUTINE", sup._ROUTINE, sup._ROUTINE_TRIGGERS),
    ("_SWITCHED", sup._SWITCHED, sup._SWITCHED_TRIGGERS),
    ("_CRITICAL", imp._CRITICAL, imp._CRITICAL_TRIGGERS),
    ("_DATE", imp._DATE, imp._DATE_TRIGGERS),
    *(
        (category, pattern, imp._RULE_TRIGGERS[category])
        for category, _, pattern in imp._RULES
        if category in imp._RULE_TRIGGERS
    ),
]
_SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", ", ", ". ", "-", "'", "", ": ", "? "]
_FILLERS = ["the", "my", "I", "we", "it's", "a", "to", "and", "14", "3pm", "$20", "x"]


def _vocabulary(pattern: re.Pattern[str]) -> list[str]:
    """The words written in a pattern's source (with pieces of regex syntax: harmless)."""
    return sorted(set(re.findall(r"[a-z]+(?:'[a-z]+)?", pattern.pattern.lower())))


def _texts(words: list[str]) -> st.SearchStrategy[str]:
    word = st.sampled_from(words + _FILLERS).map(str) | st.text(max_size=3)
    cased = st.tuples(word, st.sampled_from([str.lower, str.upper, str.title])).map(
        lambda w: w[1](w[0])
    )
    piece = st.tuples(cased, st.sampled_from(_SEPARATORS)).map("".join)
    return st.lists(piece, min_size=1, max_size=12).map("".join)


_IDS = [c[0] for c in CHECKED]
#: Lists that serve two patterns (a word may be needed by the other one only).
_SHARED = {"_NAME": "_USE_NAME", "_USE_NAME": "_NAME"}

# ---------------------------------------------------------------- witnesses
_CATEGORY = {sre.CATEGORY_DIGIT: list("0123456789"), sre.CATEGORY_SPACE: ["\t"]}


def _class_options(items: list[tuple[object, object]]) -> list[str]:
    """One or more characters a character class matches (every digit, a tab for space)."""
    if items and items[0][0] is sre.NEGATE:
        excluded = {chr(av) for op, av in items if op is sre.LITERAL}  # type: ignore[arg-type]
        return ["#" if "#" not in excluded else "%"]
    out: list[str] = []
    for op, av in items:
        if op is sre.LITERAL:
            out.append(chr(av))  # type: ignore[arg-type]
        elif op is sre.RANGE:
            out.append(chr(av[0]))  # type: ignore[index]
        elif op is sre.CATEGORY:
            out.extend(_CATEGORY.get(av, ["q"]))  # type: ignore[call-overload]
    return out or ["#"]


def _alternatives(data: list[tuple[object, object]]) -> list[str]:
    """Texts that take every alternative of every part of a sequence once, the other
    parts as their first alternative (one text per alternative, not the product)."""
    options: list[list[str]] = []
    for op, av in data:
        if op is sre.LITERAL:
            parts = [chr(av)]  # type: ignore[arg-type]
        elif op is sre.NOT_LITERAL or op is sre.ANY:
            parts = ["#" if av != ord("#") else "%"]
        elif op is sre.IN:
            parts = _class_options(av)  # type: ignore[arg-type]
        elif op is sre.BRANCH:
            parts = [w for alt in av[1] for w in _alternatives(alt.data)]  # type: ignore[index]
        elif op is sre.SUBPATTERN:
            parts = _alternatives(av[-1].data)  # type: ignore[index]
        elif op is sre.MAX_REPEAT or op is sre.MIN_REPEAT:
            low, _, sub = av  # type: ignore[misc]
            parts = ([""] if low == 0 else []) + [w * max(low, 1) for w in _alternatives(sub.data)]
        else:  # \b, ^, lookarounds: no text of their own
            parts = [""]
        options.append(parts)
    first = [parts[0] for parts in options]
    out = {"".join(first): None}
    for i, parts in enumerate(options):
        for part in parts[1:]:
            out["".join(first[:i]) + part + "".join(first[i + 1 :])] = None
    return list(out)


def _witnesses(pattern: re.Pattern[str]) -> list[str]:
    """The texts of :func:`_alternatives` that the pattern matches."""
    texts = _alternatives(sre_parse.parse(pattern.pattern, pattern.flags).data)
    return [t for t in texts if pattern.search(t)]


@pytest.mark.parametrize(("name", "pattern", "words"), CHECKED, ids=_IDS)
def test_every_witness_of_a_pattern_holds_a_trigger(
    name: str, pattern: re.Pattern[str], words: tuple[str, ...]
) -> None:
    found = _witnesses(pattern)
    assert len(found) >= 3, name
    assert [t for t in found if not triggers.may_match(t.lower(), words)] == []


@pytest.mark.parametrize(("name", "pattern", "words"), CHECKED, ids=_IDS)
def test_each_trigger_is_needed_by_a_witness(
    name: str, pattern: re.Pattern[str], words: tuple[str, ...]
) -> None:
    """Without any one of its words, a list lets some witness through unsearched: the
    witnesses reach every word (and no word is dead weight on every write)."""
    patterns = [pattern] + [p for n, p, _ in CHECKED if n == _SHARED.get(name)]
    found = [t.lower() for p in patterns for t in _witnesses(p)]
    for word in words:
        rest = tuple(w for w in words if w != word)
        assert not all(triggers.has_any(t, rest) for t in found), (name, word)


# ------------------------------------------------------------------ gates
def _first_chars(data: list[tuple[object, object]]) -> tuple[list[str], bool]:
    """Patterns of one character each, for the characters a match of a sequence can start
    with, and whether it can match the empty text."""
    out: list[str] = []
    for op, av in data:
        if op is sre.LITERAL:
            return [*out, re.escape(chr(av))], False  # type: ignore[arg-type]
        if op is sre.IN or op is sre.ANY or op is sre.NOT_LITERAL:
            return [*out, _unparse(sre_parse.SubPattern(sre_parse.State(), [(op, av)]))], False
        if op is sre.BRANCH or op is sre.SUBPATTERN or op is sre.MAX_REPEAT:
            parts = av[1] if op is sre.BRANCH else [av[-1]]  # type: ignore[index]
            empty = op is sre.MAX_REPEAT and av[0] == 0  # type: ignore[index]
            for part in parts:
                chars, nullable = _first_chars(part.data)
                out += chars
                empty = empty or nullable
            if not empty:
                return out, False
        # \b, ^ and lookarounds take no character
    return out, True


def _unparse(sub: object) -> str:
    """One parsed character class written back as a pattern."""
    ((op, av),) = sub.data  # type: ignore[attr-defined]
    if op is sre.ANY:
        return "."
    if op is sre.NOT_LITERAL:
        return f"[^{re.escape(chr(av))}]"
    parts = []
    for kind, value in av:
        if kind is sre.NEGATE:
            parts.append("^")
        elif kind is sre.LITERAL:
            parts.append(re.escape(chr(value)))
        elif kind is sre.RANGE:
            parts.append(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
        elif kind is sre.CATEGORY:
            parts.append({sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_SPACE: r"\s"}.get(value, r"\w"))
    return f"[{''.join(parts)}]"


GATED = [("_NEGATED", sup._NEGATED), ("_QUANTITY", sup._QUANTITY)]


@pytest.mark.parametrize(("name", "pattern"), GATED, ids=[g[0] for g in GATED])
def test_a_gate_lets_through_every_character_a_match_can_start_with(
    name: str, pattern: re.Pattern[str]
) -> None:
    (op, (direction, gate)), *inner = sre_parse.parse(pattern.pattern, pattern.flags).data
    assert op is sre.ASSERT and direction == 1, name  # a lookahead opens it
    chars, nullable = _first_chars(inner)
    assert not nullable and len(chars) > 5, name
    # every character of the Basic Multilingual Plane one of them matches (with the
    # pattern's flags: "ſ" is an "s" to re.I), the gate lets through
    starts = re.compile("|".join(chars), pattern.flags)
    gate_class = re.compile(_unparse(gate), pattern.flags)
    missed = [
        c for c in map(chr, range(0x10000)) if starts.fullmatch(c) and not gate_class.fullmatch(c)
    ]
    assert missed == [], name


@pytest.mark.parametrize(("name", "pattern"), GATED, ids=[g[0] for g in GATED])
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_gated_pattern_finds_what_the_pattern_alone_finds(
    name: str, pattern: re.Pattern[str], data: st.DataObject
) -> None:
    inner = triggers.ungated(pattern)
    text = data.draw(st.from_regex(inner) | _texts(_vocabulary(inner)))
    for candidate in (text, text.lower()):
        found = [(m.span(), m.groupdict()) for m in pattern.finditer(candidate)]
        assert found == [(m.span(), m.groupdict()) for m in inner.finditer(candidate)]


# ------------------------------------------------------------ generated texts
@pytest.mark.parametrize(("name", "pattern", "words"), CHECKED, ids=_IDS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_text_the_pattern_matches_holds_a_trigger(
    name: str, pattern: re.Pattern[str], words: tuple[str, ...], data: st.DataObject
) -> None:
    # texts Hypothesis builds to match the pattern, and texts of its words
    matching = st.from_regex(pattern, alphabet=st.characters(codec="ascii"))
    text = data.draw(st.one_of(matching, matching, _texts(_vocabulary(pattern))))
    for candidate in (text, text.lower()):  # _QUANTITY is searched in lower-case text
        if pattern.search(candidate):
            assert triggers.may_match(candidate.lower(), words), (name, candidate)


def test_the_trigger_lists_are_not_vacuous() -> None:
    """Every list is in lower case and rules out a text of plain words."""
    plain = "the cat sat on a mat near a quiet park"
    for name, _, words in CHECKED:
        assert not triggers.may_match(plain, words), name
        assert words and all(w == w.lower() for w in words), name


def test_text_beyond_ascii_is_read_as_its_patterns_read_it() -> None:
    """The parse's keyword checks once skipped some texts beyond ASCII that their
    patterns match (digits of other scripts, characters re.I folds); every check
    searches such texts now, so the parse finds what its patterns say."""
    assert sup.parse.__wrapped__("The standup is at \uff11\uff10am now.").quantities == {
        ("time", "\uff11\uff10am")
    }
    assert sup.parse.__wrapped__("I had tea \u0131nstead of coffee").cue
    said = sup.parse.__wrapped__("I'd like you to addre\u017f\u017f me a\u017f Dr. Okafor.")
    assert said.subject == "@|name" and said.value == {"dr"}


def test_ungated_takes_the_gate_off_only() -> None:
    plain = re.compile(r"\b(?:too|as well)\b", re.I)
    gated = triggers.gated("ta", plain.pattern, re.I)
    assert triggers.ungated(gated).pattern == plain.pattern
    assert triggers.ungated(gated).flags == plain.flags
    with pytest.raises(ValueError, match="not a gated pattern"):
        triggers.ungated(plain)


def test_text_beyond_ascii_is_always_searched() -> None:
    # re.I folds the long s into "s": a trigger check on str.lower would miss it
    assert sup._QUANTITY.search("on thurſday")
    assert triggers.may_match("on thurſday", sup._QUANTITY_TRIGGERS)
    assert triggers.may_match("café", ("xyz",))
    assert not triggers.may_match("cafe", ("xyz",))
    assert triggers.has_any("cafe", ("xyz", "af")) and not triggers.has_any("cafe", ())


_RULE_WORDS = sorted({w for _, pattern, _ in CHECKED for w in _vocabulary(pattern)})


@settings(max_examples=500, deadline=None)
@given(text=_texts(_RULE_WORDS))
@example(text="I'm so over sushi, it's ramen now")
@example(text="Remind me: the dentist moved to Thursday 14 March at 3pm, allergic to latex")
@example(text="Hi! I never drink coffee, I'd rather have tea too")
@example(text="I like tea and love cake")
@example(text="Meeting next week: I'll need to bring my insulin, 20 mg, on Monday at 9:30")
@example(text="My favourite is pho, I'm over moussaka as well")
@example(text="My favourite drink is tea as well")
@example(text="The standup is at \uff11\uff10am now.")  # fullwidth digits
@example(text="I had tea \u0131nstead of coffee")  # dotless i: re.I reads "instead"
@example(text="I'd like you to addre\u017f\u017f me a\u017f Dr. Okafor.")  # long s
def test_the_rules_read_a_text_as_they_do_without_the_checks(text: str) -> None:
    parse = sup.parse.__wrapped__
    scorer = imp.HeuristicImportance()
    checked = (parse(text), imp._first_rule.__wrapped__(text.strip()), scorer.score(text))
    always = lambda lower, words: True  # noqa: E731
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sup, "may_match", always)
        mp.setattr(imp, "may_match", always)
        imp._first_rule.cache_clear()
        unchecked = (parse(text), imp._first_rule.__wrapped__(text.strip()), scorer.score(text))
    imp._first_rule.cache_clear()
    assert checked == unchecked
