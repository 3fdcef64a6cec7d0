"""Stale facts: noticing that a new memory restates a fact an older one holds.

When a new memory says something new about the same subject ("my favourite colour is
green now" after "my favourite colour is blue"), the older memory is *superseded*: kept,
linked to its successor, demoted, and hidden from recall in favour of its successor
(``recall(include_superseded=True)`` shows it). Nothing is deleted.

The offline default, :class:`LexicalSupersession`, is a documented rule, not a model.
It first parses a text into a :class:`Statement`:

* **speaker** -- a ``"Name: "`` prefix (``"user: ..."``, ``"Dana: ..."``), if any;
* **list operations** -- "add/put/stick X on/to the (shopping) list" is an *add* of X,
  "remove/take/cross X off/from the list" and "we don't need X any more" are a *remove*;
* **subject = value** statements, with the subject keyed by its owner (the speaker for
  "my ...", the named person for "Priya's ...") so two people's favourites never clash:
  "my favourite colour is blue", "green is my favourite colour now", "call me Sam" /
  "my name is ..." (subject ``name``), "my flight is on Tuesday", "the budget is 40k",
  "my sister lives in Leeds";
* **correction cues** -- "actually", "correction", "no longer", "from now on",
  "instead", "switched", "changed my mind", "not any more", "these days", "now".

Then a new statement supersedes an older memory of the same speaker, whose embedding
similarity is at least ``policy.supersede_similarity``, when:

1. both are subject = value statements with the same subject key and different values;
2. the new one removes a list item the older one added (or re-adds one it removed);
3. the new one carries a correction cue and a negation ("no longer", "not any more",
   "instead of", "overtaken") and names the older one's value ("I no longer like blue
   best; it's green"); or
4. the new one carries a correction cue but no parsable subject ("actually, she moved to
   York"), and the older one is the single most similar earlier statement with a
   parsable subject, at a similarity of at least ``policy.supersede_fallback_similarity``.

Everything else -- "I went to Paris in May" / "I went to Rome in June", two people's
favourite colours, a window seat outbound and an aisle seat on the return -- stays
first-class. An LLM-backed judge from the adapters can replace the rule (it satisfies
:class:`SupersessionJudge`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from oblivion_core.overlap import content_words

_SPEAKER = re.compile(r"^\s*([A-Za-z][\w .'\-]{0,40}?):\s+(.*)$", re.S)
_CUES = re.compile(
    r"\b(actually|correction|sorry|no longer|not any ?more|any ?more|from now on|instead|"
    r"switched|changed my mind|change of heart|these days|now|update|scratch that|"
    r"overtaken|rather than)\b",
    re.I,
)
_NEGATION = re.compile(
    r"\b(no longer|not any ?more|don't .{0,30}any ?more|instead of|overtaken|rather than|"
    r"switched from|not .{0,20}any ?more|isn't .{0,30}any ?more)\b",
    re.I,
)
_LEADING = re.compile(
    r"^(?:(?:actually|sorry|correction|update|ok(?:ay)?|so|well|oh|also|and|but|by the way|"
    r"for the record|just so you know|quick update|heads up|fyi|these days|now|change of heart|"
    r"scratch that|one more thing|small thing|a small thing|please)[,:;.!\s-]*)+",
    re.I,
)
_LIST_ADD = re.compile(
    r"\b(?:add|put|stick|pop|include|get|note down|write down|jot down)\s+(?P<item>.{1,60}?)"
    r"\s+(?:back\s+)?(?:on|to|onto|in|for)(?:to)?\s+(?:the|my|our)\s+"
    r"(?P<list>[\w\s'\-]{0,30}?(?:list|shopping|shop))\b",
    re.I,
)
_LIST_HEADER = re.compile(r"\b(?P<list>[\w'\-]+)\s+list:\s*(?P<item>[^.;!?]{1,60})", re.I)
_LIST_NEED = re.compile(
    r"\b(?:don't let me forget|remind me to (?:pack|buy|get)|i need to (?:pack|buy|get)|"
    r"we need to buy|need to buy)\s+(?P<item>[^.;!?]{1,60}?)"
    r"(?:\s+(?:when|for|before|on)\b|[.;!?]|$)",
    re.I,
)
_LIST_REMOVE = re.compile(
    r"\b(?:remove|take|cross|strike|delete|drop|scratch|scrap)\s+(?P<item>.{1,60}?)\s+"
    r"(?:off|from)\s+(?:the|my|our)\s+(?P<list>[\w\s'\-]{0,30}?list)\b",
    re.I,
)
_LIST_DROP = re.compile(
    r"^(?:scratch|scrap|never mind|forget|leave)\s+(?:the\s+)?(?P<item>[\w\s'\-]{1,40}?)"
    r"(?:\s+out)?(?:\s+after all)?\s*(?:[;,.!]|$)",
    re.I,
)
_NO_NEED = re.compile(
    r"\b(?:we|i)\s+(?:don't|do not|no longer)\s+need\s+(?:any\s+)?(?P<item>[\w\s'\-]+?)"
    r"(?:\s+any ?more|\s+after all|\s+now)?\s*[.!]?$",
    re.I,
)
_FAV_A = re.compile(
    r"\b(?P<owner>my|our|[A-Z][a-z]+'s)\s+(?:new\s+|current\s+|absolute\s+|all-time\s+)?"
    r"(?:favou?rite|preferred)\s+(?P<subj>[a-z][\w\s\-]{0,30}?)\s+(?:is|are|has become|"
    r"would be|is now|now is|these days is)\s+(?P<val>.+)$",
    re.I,
)
_FAV_C = re.compile(
    r"\b(?P<owner>my|our|[A-Z][a-z]+'s)\s+(?:new\s+)?(?:favou?rite|preferred)\s+"
    r"(?P<subj>[a-z][\w\s\-]{0,30}?)\?\s+(?P<val>.+)$",
    re.I,
)
_FAV_B = re.compile(
    r"^(?P<val>.+?)\s+(?:is|are|has become|has overtaken .+? as|is now)\s+(?:now\s+)?"
    r"(?P<owner>my|our|[A-Z][a-z]+'s)\s+(?:new\s+)?(?:favou?rite|preferred)\s+"
    r"(?P<subj>[a-z][\w\s\-]{0,30}?)(?:\s+now|\s+these days)?\s*[.!]?$",
    re.I,
)
_NAME = re.compile(
    r"\b(?i:call me|calls me|my name is|my name's|i go by|i'm going by|known as|i'm called|"
    r"address me as|refer to me as)\s+"
    r"(?P<val>[A-Z][\w\-]*(?:\s+[A-Z][\w\-]*)?)",
)
_COPULA = re.compile(
    r"^(?P<owner>my|our|the|[A-Z][a-z]+'s)\s+(?P<subj>[a-z][\w\s'\-]{0,30}?)\s+"
    r"(?:is|are|will be|was moved to|is moving to|moved to|has moved to|lives|works|is based)\s+"
    r"(?:now\s+|actually\s+)?(?P<val>.+)$",
    re.I,
)
_CUE_TRIGGERS = (
    "actually",
    "correction",
    "sorry",
    "longer",
    "more",
    "now",
    "instead",
    "switched",
    "changed",
    "change of heart",
    "these days",
    "update",
    "scratch",
    "overtaken",
    "rather",
)
_NEGATION_TRIGGERS = ("longer", "more", "instead", "overtaken", "rather", "switched")
_NAME_TRIGGERS = (
    "call me",
    "calls me",
    "name is",
    "name's",
    "go by",
    "going by",
    "known as",
    "called",
    "address me",
    "refer to me",
)
#: Cues strong enough for the subject-less fallback rule (4).
_STRONG_CUES = re.compile(
    r"\b(actually|correction|sorry|no longer|from now on|instead|changed my mind|"
    r"change of heart|scratch that|update)\b",
    re.I,
)
_PRONOUN_ITEMS = {"that", "it", "them", "those", "this", "these", "some"}
_SPELLING = {"favorite": "favourite", "color": "colour", "colors": "colours"}


@dataclass(frozen=True)
class Statement:
    """What the rule understood of one text."""

    speaker: str | None
    subject: str | None = None  # owner-qualified key, e.g. "dana|favourite colour"
    value: frozenset[str] = frozenset()
    op: str | None = None  # "add" | "remove" for list operations
    items: frozenset[str] = frozenset()
    list_name: str | None = None
    cue: bool = False
    strong_cue: bool = False
    negation: bool = False
    words: frozenset[str] = frozenset()


def _list_name(lower: str) -> str | None:
    """Which list a statement is about: packing, shopping, or unknown (matches any)."""
    if "pack" in lower:
        return "packing"
    if "shop" in lower or "buy" in lower or "grocer" in lower:
        return "shopping"
    return None


def _has(lower: str, triggers: tuple[str, ...]) -> bool:
    return any(t in lower for t in triggers)


def _norm_words(text: str) -> frozenset[str]:
    out = set()
    for w in content_words(text):
        w = _SPELLING.get(w, w)
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.add(w)
    return frozenset(out)


def _subject_key(owner: str, subject: str, speaker: str | None) -> str:
    owner_l = owner.lower()
    if owner_l in ("my", "our"):
        who = (speaker or "self").lower()
    elif owner_l == "the":
        who = "the"
    else:
        who = owner_l.removesuffix("'s")
    subj = " ".join(sorted(_norm_words(subject))) or subject.lower().strip()
    return f"{who}|{subj}"


def _item_words(item: str, sentence: str) -> frozenset[str]:
    words = _norm_words(item)
    if words and not (set(item.lower().split()) <= _PRONOUN_ITEMS):
        return words
    # "we're out of butter, so stick that on the list": the item is named elsewhere
    m = re.search(
        r"\b(?:out of|need|buy|get)\s+(?:some\s+)?([\w\s'\-]+?)(?:[,.;]|\s+so\b|$)", sentence, re.I
    )
    return _norm_words(m.group(1)) if m else frozenset()


@functools.lru_cache(maxsize=65_536)
def parse(text: str) -> Statement:
    """Parse one memory text (see the module doc for the rule). Results are cached."""
    speaker = None
    body = text.strip()
    m = _SPEAKER.match(body)
    if m:
        speaker, body = m.group(1).strip().lower(), m.group(2).strip()
    lower = body.lower()
    # cheap keyword checks first: most texts state no fact and skip every regex
    first = re.split(r"(?<=[.!?])\s+", body)
    cue = _has(lower, _CUE_TRIGGERS) and bool(_CUES.search(body))
    negation = _has(lower, _NEGATION_TRIGGERS) and bool(_NEGATION.search(body))
    words = _norm_words(body)
    strong = cue and bool(_STRONG_CUES.search(body))
    base = {
        "speaker": speaker,
        "cue": cue,
        "strong_cue": strong,
        "negation": negation,
        "words": words,
    }
    listy = "list" in lower or "shop" in lower
    for pattern, op, needed in (
        (_LIST_REMOVE, "remove", listy),
        (_LIST_ADD, "add", listy),
        (_LIST_HEADER, "add", "list:" in lower),
        (_LIST_NEED, "add", True),
    ):
        lm = pattern.search(body) if needed else None
        if lm:
            items = _item_words(lm.group("item"), body)
            if items:
                return Statement(op=op, items=items, list_name=_list_name(lower), **base)  # type: ignore[arg-type]
    nm = _NO_NEED.search(body) if "need" in lower else None
    if nm and _norm_words(nm.group("item")):
        return Statement(op="remove", items=_norm_words(nm.group("item")), **base)  # type: ignore[arg-type]
    for sentence in first:
        dm = _LIST_DROP.search(_LEADING.sub("", sentence).strip())
        if dm and _norm_words(dm.group("item")):
            items = _norm_words(dm.group("item"))
            return Statement(op="remove", items=items, list_name=_list_name(lower), **base)  # type: ignore[arg-type]

    nm = _NAME.search(body) if _has(lower, _NAME_TRIGGERS) else None
    if nm:
        key = f"{speaker or 'self'}|name"
        return Statement(subject=key, value=frozenset({nm.group("val").lower()}), **base)  # type: ignore[arg-type]
    for sentence in [*first, body] if len(first) > 1 else first:
        clean = _LEADING.sub("", sentence).strip()
        fav = "favo" in lower or "preferred" in lower
        for pattern in (_FAV_A, _FAV_C, _FAV_B, _COPULA) if fav else (_COPULA,):
            fm = pattern.search(clean)
            if fm:
                subj = fm.group("subj")
                if pattern is not _COPULA:
                    subj = "favourite " + subj
                value = _norm_words(fm.group("val")) - _norm_words(subj)
                if value:
                    key = _subject_key(fm.group("owner"), subj, speaker)
                    return Statement(subject=key, value=value, **base)  # type: ignore[arg-type]
    return Statement(**base)  # type: ignore[arg-type]


@runtime_checkable
class SupersessionJudge(Protocol):
    """Decides whether ``new`` replaces the fact stated in ``old``."""

    def supersedes(self, new: str, old: str, similarity: float) -> bool:
        """True if ``new`` makes ``old`` stale."""
        ...


@dataclass(frozen=True)
class Candidate:
    """An older memory that the new one might supersede."""

    id: str
    text: str
    similarity: float


class LexicalSupersession:
    """The offline default rule (see the module doc)."""

    def __init__(self, min_similarity: float = 0.45, fallback_similarity: float = 0.6) -> None:
        self.min_similarity = min_similarity
        self.fallback_similarity = fallback_similarity

    def supersedes(self, new: str, old: str, similarity: float) -> bool:
        """Pairwise form of :meth:`choose` (rules 1-3; rule 4 needs the whole candidate set)."""
        return bool(self.choose(new, [Candidate("old", old, similarity)], fallback=False))

    def choose(
        self, new: str, candidates: Sequence[Candidate], *, fallback: bool = True
    ) -> list[str]:
        """Ids of the candidates ``new`` supersedes (candidates are older memories)."""
        n = parse(new)
        chosen: list[str] = []
        parsed = [(c, parse(c.text)) for c in candidates]
        for c, o in parsed:
            if n.speaker and o.speaker and n.speaker != o.speaker:
                continue
            if n.op and o.op:
                same_list = n.list_name is None or o.list_name in (None, n.list_name)
                if same_list and n.op != o.op and n.items & o.items:
                    chosen.append(c.id)
                continue
            if c.similarity < self.min_similarity:
                continue
            if n.subject and o.subject:
                if n.subject == o.subject and n.value != o.value and not n.value <= o.value:
                    chosen.append(c.id)
                continue
            if n.cue and n.negation and o.subject and o.value and o.value <= n.words:
                chosen.append(c.id)
            elif (
                n.subject
                and not o.subject
                and not o.op
                and o.strong_cue
                and o.negation
                and c.similarity >= self.fallback_similarity
            ):  # rule 5: a later clean statement replaces an earlier negated restatement
                chosen.append(c.id)
        if chosen or not fallback or n.subject or n.op or not n.strong_cue:
            return chosen
        best = max(
            (
                (c.similarity, c.id)
                for c, o in parsed
                if o.subject and (not n.speaker or not o.speaker or n.speaker == o.speaker)
            ),
            default=None,
        )
        if best is not None and best[0] >= self.fallback_similarity:
            return [best[1]]
        return []
