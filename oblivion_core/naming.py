"""The user's name: questions about it, and the memories where the user gives it.

"What's my name?" is the first thing many people ask a memory, and it shares no word
with "Hi! I'm Bob, I look after the data platform" and little meaning: on the real model
that question ranked "What a lovely day it is today." first and left the introduction
out of the best three, and "What is the user's name?" found "Our team channel is named
#kestrel-launch". So recall treats it as it treats a list question
(:mod:`oblivion_core.lists`): :func:`name_question` recognises the question, a
:class:`NameIndex` kept per namespace holds the memories in which the speaker names
themselves, and the current ones among them come first.

A memory names its speaker when it says "my name is X", "call me X" (also "please/you
can call me X"; not another's word, "my kids call me Dad", nor a title, "Call me Maybe is
my favourite song": :func:`anothers_call`), "I go by X", "I'm called X", or introduces
itself after a greeting:
"Hi, I'm X", "Hello, this is X". ``X`` must be capitalised (in any cased script:
"Zoë", "Łukasz", "Søren", "Ольга"; a text typed decomposed, "E" and a combining accent,
reads as the composed one), so "call me tomorrow" and "I'm tired" are not names, and
weekdays, months and a few words that start sentences ("Hi, I'm Sorry") are refused. A
name refused or asked about is none: "Please don't call me Bobby", "Stop calling me
Bob", "Why did you call me Bob?" (:func:`refused_or_asked`; the stale-fact rule reads
it too, so such a text never replaces the user's name), and so is a name quoted,
played or to translate: 'How do I say "my name is Pedro" in French?', "Pretend my name
is Pedro", "Let's role-play: call me Captain", "Translate to French: My name is Pedro"
(:data:`QUOTED`, :func:`played`).

Who speaks is read as the stale-fact rule reads it (:mod:`oblivion_core.speakers`): a
memory the assistant, the system, a tool or a support agent says names no user, whether
it opens with its label ("Assistant: Hi, I'm Ada") or was stored with its chat role
(``metadata={"role": "assistant"}``, as the LlamaIndex adapters store each message;
:class:`NameIndex` is given the texts as :func:`~oblivion_core.speakers.as_said` reads
them); a transcript names the speaker of its first line only ("user: hi!\nassistant:
Hello, I'm Max" names nobody); other speakers' lines ("Dana: please call me Dee") name
their speaker.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from oblivion_core.speakers import NOT_THE_USER, split_speaker
from oblivion_core.typography import LOWER, UPPER, composed, straighten

_WHO = r"(?:me|the user|this user|him|her|them|you)"
_QUESTION = re.compile(
    r"\b(?:"
    r"what(?:'s|\s+is|\s+was)\s+(?:my|the user's|this user's|your user's)\s+"
    r"(?:(?:first|full|last|real|preferred|actual)\s+)?(?:nick)?name"
    r"|who\s+am\s+i\s*(?:[?.!]|$)"
    r"|what\s+(?:should|do|can|shall|would|must)\s+(?:i|you|we)\s+call\s+" + _WHO + r"\b"
    r"|how\s+(?:should|do|would|must)\s+(?:i|you|we)\s+(?:address|refer\s+to)\s+" + _WHO + r"\b"
    r"|(?:know|remember|recall)\s+my\s+name"
    r"|what\s+name\s+(?:do|does|did|should)\s+(?:i|the user)\s+(?:go\s+by|use|prefer)"
    r"|what\s+(?:do|does)\s+(?:people|everyone|everybody|my friends)\s+call\s+me"
    r")",
    re.I,
)

# "Ana", "Jean-Luc", "O'Brien", "D'Angelo", "McDonald", "LeBron", and in any cased
# script: "Zoë", "José", "Søren", "Łukasz", "Émile", "Ioana-Ștefania", "Дмитрий"
_U, _L = UPPER, LOWER
_NAME = rf"(?P<name>(?:{_U}')?{_U}{_L}+(?:{_U}{_L}+)?(?:[-']{_U}?{_L}+)?)"
_SAYS_NAME = re.compile(
    r"(?i:\bmy\s+name(?:'s|\s+is)|\b(?P<call>call)\s+me|\bcall(?:ed|ing)\s+me|\bi\s+go\s+by"
    r"|\bi'?m\s+called"
    r"|\bi\s+am\s+called|\bpeople\s+call\s+me|\beveryone\s+calls\s+me)\s+" + _NAME + r"\b"
)
_INTRODUCES = re.compile(
    r"(?i:\b(?:hi|hello|hey|hiya|good\s+(?:morning|afternoon|evening))\b[\s,!.:-]*"
    r"(?:there[\s,!.:-]*)?(?:i'?m|i\s+am|this\s+is|it'?s))\s+" + _NAME + r"\b"
)
#: Words after "call me" or "I go by" that say when or how, not who: "can you call me
#: Monday?", "I go by Uber to the airport". The stale-fact rule's name statements refuse
#: them too.
WHEN_OR_HOW = (
    *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    *("tomorrow", "tonight", "today", "later", "back", "when", "after", "before", "once"),
    *("uber", "lyft", "bolt", "taxi", "cab", "bus", "train", "tube", "metro", "car", "bike"),
    *("ferry", "plane", "air", "rail", "coach"),
)
_NOT_NAME_WORDS = (
    "January February March April May June July August September October November "
    "December Sorry Fine Good Great Glad Happy Here Just Still Also Not Sure "
    "Ok Okay Ready Done Afraid Excited Home Anytime Asap Whenever The A An My Your "
    "Our This That It He She They We You Me Him Her Them Mr Mrs Ms Dr"
)
#: Capitalised words that follow those phrases without being a name.
_NOT_NAMES = frozenset([*_NOT_NAME_WORDS.split(), *(w.capitalize() for w in WHEN_OR_HOW)])
_KEYWORDS = ("name", "call", "go by", "hi", "hello", "hey", "good ")
#: Words that, among the three before a naming phrase in its clause, make it give no
#: name: a refusal ("don't", "never", "stop", "not") or a question about it ("why",
#: "did", "who", "when").
_NOT_GIVING = frozenset(
    [
        *("don't", "dont", "not", "never", "stop", "quit", "won't", "can't", "cannot"),
        *("longer", "didn't", "doesn't", "shouldn't", "mustn't"),
        *("why", "did", "who", "when"),
    ]
)
_CLAUSE_END = re.compile(r"[.!?,;:]")
#: What may come before a bare "call me X" in its clause for it to be the speaker's own
#: word: nothing, discourse words ("Actually call me Bob"), a request ("please", "just",
#: "can you", "you can", "I'd like you to", "I'd prefer you"), or a conjunction that
#: opens a clause ("I don't like Robert so call me Bob"). Anything else says who else
#: calls the speaker so ("My kids call me Dad", "The kids call me Grandpa").
_ASKS_TO_CALL = re.compile(
    r"(?:^|\b(?:so|and|but|then|or)\s+)"
    r"(?:(?:actually|also|oh|ok|okay|well|now|hi|hey|hello|there|anyway|so|and|but|then|"
    r"instead|honestly|btw)\s+)*"
    r"(?:(?:please|just|do|(?:can|could|would|will)\s+you|you\s+(?:can|could|may|might|"
    r"should|will)|i'?d\s+(?:like|prefer|love|rather)(?:\s+it\s+if)?\s+you(?:\s+to)?|"
    r"i\s+would\s+(?:like|prefer|love|rather)(?:\s+it\s+if)?\s+you(?:\s+to)?|"
    r"i\s+(?:want|need)\s+you\s+to|feel\s+free\s+to|go\s+ahead\s+and)\s+)*$",
    re.I,
)
#: After "call me X": a title, not a name ("Call me Maybe is my favourite song").
_A_TITLE = re.compile(r"\s+(?:is|was|are|were|'s)\b", re.I)
#: Words that, right before a statement, make it a game's, a story's or a phrase to
#: translate, not a fact of the speaker's: "Pretend my name is Pedro", "Let's role-play:
#: call me Captain", "In the story, my name is Pedro", "Translate to French: My name is
#: Pedro", "How do you say my name is Pedro in French?". The stale-fact rule reads them
#: before any fact ("Pretend my favourite colour is red").
PLAYED = (
    r"(?:let's\s+)?pretend(?:ing)?(?:\s+that)?|let's\s+say|role[\s-]?play(?:ing)?|"
    r"in\s+(?:the|this|my|our|a|your)\s+(?:story|game|novel|script|scene|scenario|"
    r"role[\s-]?play)|in\s+character|"
    r"translat(?:e|ed|ing|ion)(?:\s+(?:this|that|it|the\s+following|(?:the\s+|this\s+)?"
    r"(?:sentence|phrase|line)))?(?:\s+(?:to|into|in)\s+[a-z]+)?|"
    r"(?:do|does|would|could|can|should)\s+(?:i|you|we|one)\s+say"
)
_PLAYED_BEFORE = re.compile(r"\b(?:" + PLAYED + r")\W*$", re.I)
#: Quoted words are another's or a phrase's ('How do I say "my name is Pedro"?'): they
#: name no speaker and state no fact of theirs.
QUOTED = re.compile(r'"[^"]*"|“[^”]*”')


def name_question(query: str) -> bool:
    """Whether ``query`` asks for the user's name ("What's my name?", "Who am I?",
    "What should I call the user?", "How should you address me?")."""
    return bool(_QUESTION.search(straighten(query)))


def refused_or_asked(text: str, start: int) -> bool:
    """Whether the naming phrase at ``start`` of ``text`` (straightened) gives no name:
    refused ("Don't call me Bob", "Stop calling me Bobby", "Please never call me Rob") or
    asked about ("Why did you call me Bob?", "Who called me Bob?"). The last three words
    of its clause before it decide (:data:`_NOT_GIVING`); a request gives one ("Can you
    call me Bob?", "If you don't mind, call me Bob")."""
    clause = _CLAUSE_END.split(text[:start])[-1]
    return any(w.strip("\"'()") in _NOT_GIVING for w in clause.lower().split()[-3:])


def anothers_call(text: str, start: int, end: int) -> bool:
    """Whether the bare "call me X" from ``start`` to ``end`` (after the name) of
    ``text`` (straightened) is no name the speaker gives: another's word ("My kids call
    me Dad", "The kids call me Grandpa": :data:`_ASKS_TO_CALL`), or a title ("Call me
    Maybe is my favourite song", "Call me Ishmael is a famous opening line")."""
    clause = _CLAUSE_END.split(text[:start])[-1].lstrip()  # (its last space kept)
    return _ASKS_TO_CALL.search(clause) is None or _A_TITLE.match(text, end) is not None


def played(text: str, start: int) -> bool:
    """Whether the statement at ``start`` of ``text`` (straightened) is a game's, a
    story's or a phrase to translate (:data:`PLAYED` right before it)."""
    return _PLAYED_BEFORE.search(text[:start]) is not None


def names_speaker(text: str) -> str | None:
    """The name the speaker of ``text`` gives themselves, or ``None`` (module doc)."""
    text = composed(text)  # "Émile" typed as "E" and an accent is "Émile"
    lower = text.lower()
    if not any(k in lower for k in _KEYWORDS):
        return None
    speaker, body = split_speaker(text)
    if speaker in NOT_THE_USER:
        return None
    if '"' in body or "“" in body:
        body = QUOTED.sub(" ", body)
    for pattern in (_SAYS_NAME, _INTRODUCES):
        for found in pattern.finditer(body):
            name = found.group("name")
            if (
                name not in _NOT_NAMES
                and not name.endswith("'s")  # "Hi, I'm Bob's wife": whose, not who
                and not refused_or_asked(body, found.start())
                and not played(body, found.start())
                and not (found.groupdict().get("call") and anothers_call(body, *found.span()))
            ):
                return name
    return None


class NameIndex:
    """Memories in which the speaker gives their name, in write order."""

    def __init__(self) -> None:
        self._ids: dict[str, None] = {}

    def note(self, ids: Iterable[str], texts: Iterable[str]) -> None:
        """Record the memories among these that name their speaker (``texts`` as
        :func:`~oblivion_core.speakers.as_said` gives them: with their chat role)."""
        for mid, text in zip(ids, texts, strict=True):
            if names_speaker(text) is not None:
                self._ids[mid] = None

    def discard(self, ids: Iterable[str]) -> None:
        """Forget deleted (or edited, before :meth:`note` reads them again) memories."""
        for mid in ids:
            self._ids.pop(mid, None)

    def namings(self) -> Iterator[str]:
        """Ids of the memories that name their speaker, oldest first."""
        yield from self._ids
