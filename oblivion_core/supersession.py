"""Stale facts: noticing that a new memory restates a fact an older one holds.

When a new memory says something new about the same subject ("my favourite colour is
green now" after "my favourite colour is blue"), the older memory is *superseded*: kept,
linked to its successor, demoted, and hidden from recall in favour of its successor
(``recall(include_superseded=True)`` shows it). Nothing is deleted.

The offline default, :class:`LexicalSupersession`, is a documented rule, not a model.
It first parses a text into a :class:`Statement` (typographic apostrophes, ``’`` as
phones and most LLM output write them, read as ``'``; an "'s" no possessive could be,
"my flight's been moved", "my sister's in York", as "has" or "is": see
:func:`_expand_is`):

* **speaker** -- who says the text (:func:`~oblivion_core.speakers.split_speaker`): a
  ``"Name: "`` prefix that is a chat role (``"user:"``, ``"assistant:"``) or a name
  (``"Dana:"``, ``"Dr. Lee:"``); a transcript (``"user: ...\nassistant: ..."``) states
  its first speaker's facts; the person's side of a chat is one speaker under any label,
  as is the assistant's; a memory whose metadata names its chat role reads as opening
  with that role (:func:`~oblivion_core.speakers.as_said`). Discourse labels
  (``"Update:"``, ``"Quick update:"``, ``"Note:"``, ``"PS:"``, ``"Correction:"``,
  ``"Reminder:"``) are not speakers: they are stripped, with leading discourse words
  ("actually", "so", "by the way", "turns out"), before the subject is parsed;
* **list operations** -- "add/put/stick X on/to the (shopping) list", "shopping list: X",
  "we're out of X", a bare "add X" are an *add* of X; "remove/take/cross X off the list",
  a bare "remove X", "we don't need X any more", "got the X already, cross it off",
  "we already have X", "never mind the X" are a *remove*. Asked or offered, none is
  one ("Should I take the eggs off the list?", "Do you want me to add bread?", "Do we
  already have eggs?"); a request is ("Can you add milk to the list?");
* **subject = value** statements, the subject keyed by its owner (the speaker for "my
  ...", the named person for "Priya's ...", a person named by a bare name as "my <name>"
  is: "Tom lives in Leeds" as "my Tom", "Mum lives in Leeds" as "my mum"; an unknown
  speaker's "my" matches another speaker's, but never that of one whose "I" is not the
  user's, the assistant's, a system's, a tool's, a support agent's) so two people's
  favourites never clash; a possessive in the subject ("my sister's", "my parents' phone
  number") and "other" ("my other sister") keep it apart:

  - preferences: "my favourite/go-to/usual/preferred drink is matcha", "matcha is my
    favourite drink now", "my drink of choice is ...", "the drink I like best is ...",
    "my favourite food has changed again. It's lasagne now". Subjects are normalised
    (spelling, plurals, a small head-noun synonym table: beverage = drink, film = movie,
    ...); "favourite drink" also matches "favourite hot drink" (same head noun, one side
    unqualified) but not "favourite cold drink", and a narrower new one only with a cue
    ("these days my favourite hot drink is matcha"; "my favourite Christmas movie is Elf"
    is one more);
  - preferences whose noun is not said (subject ``favourite *``): "I prefer matcha these
    days", "I've switched to matcha", "I like matcha better now", "my new favourite is
    matcha", "matcha is my go-to now", and, with a time cue ("now", "these days",
    "nowadays", "lately"), "I'm into matcha now", "I'm more of a tea person now";
    "I mostly drink/eat/listen to X" names its category (drink, food, music), unless a
    setting follows ("I mostly drink water during the day": a habit there); with a cue,
    a drink's or a colour's name is that favourite's however little the model sees it
    ("I've switched to matcha" after "my favourite drink is tea": 0.11);
  - names (subject ``name``): "call me X", "I go by X", "I'm going by X", "my name is
    X", "I'd rather you called me X", "everyone calls me X", "to be called X", "please
    use X instead/from now on" (that ending the instruction); not what another calls the
    speaker ("Tom calls me Lex", "my kids call me Dad": "call me X" opens its clause or
    follows a request, "please", "you can", "I'd like you to"), a title ("Call me Maybe is
    my favourite song"), a day ("call me Monday"), a way to travel ("I go by Uber"), a
    source ("going by Google Maps") or a tool ("use Zoom instead of Teams"),
    nor a name refused or asked about ("please don't call me Bobby", "why did you call
    me Bob?"); a new name needs no similarity to the old one;
  - the language to reply in (subject ``reply language``), a whole instruction: "always
    answer in French", "from now on, reply in English", "please speak to me in Spanish";
    not a one-off ("answer this one in English"), a question or a task ("reply in English
    to Tom's email"); like a name, one per speaker however little two of them share; a
    language refused ("don't answer in French anymore", "stop replying in French")
    replaces the instruction to use it, and no other;
  - facts about the speaker: "I'm allergic to X", "I live in X", "I work as X" (a role),
    "I work at X" (an employer);
    a change of home or employer to a name: "I (just) moved / relocated to York",
    "I started a new job at Globex", "I got a job at Globex", "I joined Globex as a
    designer / last month" (not "I moved to a new desk", "I joined a gym", "I joined
    Globex's webinar", "I moved to York when I was ten", "In 2015 I moved to Rome",
    "Right out of college I got a job at Microsoft": history, nor a firm, product or tool
    moved to: "I moved to Linux", "I moved to Rust for the backend"; "I moved to Berlin
    for a backend job" is a move);
    the speaker's diet, one at a time (subject ``diet``): "I'm vegetarian", "I am a
    vegan", "I'm pescatarian now", "I've gone vegan", "I've been vegetarian for years"
    (vegetarian, vegan, pescatarian, flexitarian, plant-based; not "I'm a vegan chef",
    "I'm vegetarian for Lent");
  - a person named by a bare name that opens the sentence, with a person's verb: "Tom
    lives in / is based in / is living in Leeds", "Tom (has) moved / relocated to York",
    "Tom works at / for Globex", "Tom got a job at / started working for Initech" (an
    employer: "works"), "Tom works as a nurse" (what he is); keyed as "my Tom" is, so
    Tom's home is never Anna's, nor the speaker's own ("I live in ..."), and "Mum moved
    to York" replaces "my mum lives in Leeds". A move is to a name, as the speaker's is,
    and not to a day ("Dinner moved to Friday"); an employer (a new job's too) is a name
    or a noun phrase after a determiner or possessive ("a bakery", "a fintech", "the
    city", "my dad") that says no time, manner or reason, a role no comparison nor a group
    that ends the phrase ("as a team", not "as a team leader"); so not "works for me",
    "works at night / home / a fast pace", "works for free / hours / a living", "works as
    hard as anyone / as a team", "moved to Rust for the backend" (nor "my sister works
    ...", "I work ..." so), "lives in fear", nor "Tom is ..." (too many things are:
    "Paris is lovely"). The name is one or two capitalised words, no stop word ("If Tom
    ...", "Will", "May"), no adverb before a surname ("Apparently Tom ..."), and no
    pronoun, quantifier, day, month that is no first name, season, meal or other common
    noun, place-name opener ("New York") or well-known firm or product ("Everyone lives
    in fear", "That works for me", "Monday works for me", "Google moved to ...", "Chrome
    moved to ...");
  - copulas: "my flight is on Tuesday", "the budget is 40k", "my sister lives in
    Leeds", "my partner works as a nurse", "the board meeting has been set for the
    18th", "the airline has moved my flight to Thursday", "the flight got pushed back
    to Thursday", "the deadline was brought forward to Monday", "we rescheduled the
    meeting for 4pm", "my address changed to 4 Mill Lane", "my daughter turned eleven",
    an amount that grew or fell ("my rent went up to 1,600", "the team grows to nine",
    "the budget was cut to 30k"), and a count ("there are seven of us on the team": the
    team is seven).
    The verb class is part of the key (lives / works / is; "works as" is "is"; "moved
    to" matches "is" and "lives"), and so is the kind of value an "is" states: a day,
    date or time; an amount (an age "turned" too); a place or origin by its preposition
    ("in", "from"); an adjective's complement ("allergic to"); else a state ("a blue
    Golf", "vegetarian"), which for a person ("my sister", "my partner") is one of what
    they are or do ("a nurse", "retired"), what they eat ("vegetarian", "a vegan") and
    how they are ("pregnant"). "My flight is on Tuesday" and "my flight is from Gatwick" are
    both true; so are "the wedding is on June 14th" and "the wedding is at 2pm" (a
    calendar day and a time of day), "my commute is 40 minutes" and "... 12 miles" (how
    long and how far): values of one kind whose words answer different questions. Subjects
    about one occasion ("my plan for the evening", "lunch today") are *episodic*;
  - a "she"/"he"/"they" that follows a person named with "my" in the same text is that
    person ("Update on my sister: she lives in Leeds now"); a discourse clause before
    "X is my favourite Y" is not part of the value ("If you ever need to know, ...");
* **negated values** -- what the text rejects: "gone off X", "not X any more", "it's
  Y, not X", "X, not Y", "instead of X", "rather than X", "switched from X", "prefer Y
  to X", "Y has overtaken X", "no longer like X", "left X", "I'm not / no longer allergic
  to X", "I'm not vegetarian (any more)", "I am no longer a vegan" (a diet: "I'm not a
  vegetarian restaurant fan" rejects none; the speaker's only: "I'm not vegetarian, but
  my wife is" leaves hers);
  after a negation, "it's Y" states the replacement; a value never holds what the text
  rejects ("I like pho even more than moussaka" states pho);
* **correction cues** -- "actually", "correction", "sorry", "no longer", "from now on",
  "instead", "switched", "changed my mind", "change of heart/plan", "these days",
  "nowadays", "now", "turns out", "after all", "got it wrong", "misremembered".

Questions ("what's my favourite drink these days?", "remind me, what's my favourite
wine? ..."), another's words ("Tom told me: ...", "Forwarded from Dana: ...", "Email from
Tom: ...", quoted speech, a name too: 'How do I say "my name is Pedro" in French?'), a
game, a story or a translation ("Pretend my name is Pedro", "Let's role-play: call me
Captain", "In the story, ...", "Translate to French: ..."), a value under a condition
("... will be £1,500 if we move"), embedded clauses
("find out if my favourite restaurant is open") and suppositions ("worst case: ...")
state no fact of the speaker's; "too", "also", "as well" add a value ("I'm allergic to
shellfish too", "Also, I'm allergic to cats"), and one more allergy is one more, not a
new one ("I'm allergic to penicillin" after "... to peanuts"), rather than replace one;
"was" is the past. A statement after a
leading clause is read ("I got a raise, my salary is 58k") unless the clause holds a
condition or time, a hedge, another's words or a scope ("But if we lose the client, ...",
"Maybe, ...", "Per Tom, ...", "On weekends, ..."). A new statement
supersedes an older memory of the same speaker (a named speaker never supersedes
another's memory; the assistant, a system, a tool or a support agent and an unlabelled
memory supersede each other only through a subject not the speaker's own, "the
launch") when:

1. both are subject = value statements with the same subject and different values --
   or the same value restated: the newest statement of a fact is the one to show -- at
   a similarity of at least ``policy.supersede_similarity`` (a named preference, one
   fact per owner, needs 0.15 less, as a speaker's home, employer and diet do; names
   need none: a person has one name); an
   episodic subject needs a strong cue ("change of plan:"); a noun-less preference
   matches the single most similar favourite of its owner. A new one that holds for a
   bounded time ("this week", "today", "tonight", "just this once"; not "from today",
   "starting this week" or with a start such as "started" or "joined") while the older
   one does not, is an exception to an older routine ("every day", "on Mondays",
   "usually"), which it never replaces; to any other older one when it says so
   ("because", "while", "only", "for now", ...: "my commute is by bus this week because
   of the strike" leaves "my commute is by train") and says nothing of a change (a
   correction cue, a "moved to": "the meeting has moved to Thursday this week" replaces
   "the meeting is on Tuesday"). "The deadline is today" replaces "... is Friday";
2. the new one removes a list item the older one added (or re-adds one it removed): the
   same item, one's words within the other's ("the milk" / "oat milk", not "almond
   milk" / "oat milk") and the same noun ("a bottle of milk" and "almond milk" are
   milk, "a chicken recipe" and "chicken stock" are not chicken), and all of an
   addition of several ("cross the milk off" leaves "add eggs and milk");
3. the new one rejects the older one's value ("I've gone off tea", "it's Alex, not
   Sam"), or carries a correction cue and a negation and names the older value, and is
   about the older one's subject: it names it ("allergic" for an allergy, a diet's word
   for a diet: "I am no longer vegetarian"), or speaks of liking for a favourite ("I had
   tea instead of coffee this morning" leaves "my favourite drink is coffee", "I left
   Leeds at 7am" leaves "my sister lives in Leeds"); or its subject's head noun and its
   rejected value both appear in an older text the rule could not parse ("my rent is
   1,600, not 1,175" after "I pay 1,175 in rent");
4. the new one carries a strong correction cue but no parsable subject ("actually, she
   moved to York"), says a correction (a negation, a change or a mistake, a pronoun's
   restatement: "it's on Thursday"; not "actually, I need to check in for my flight
   online", nor one more value: "actually, I'm also allergic to bee stings"), and the
   older one is the single most similar earlier statement with a parsable subject, at a
   similarity of at least ``policy.supersede_fallback_similarity``: not an allergy (rule
   3 rejects one by name: "I'm not allergic to cats" leaves peanuts) nor a list the new
   one names only part of;
5. the new one is a clean subject = value statement and the older one a negated
   restatement without a parsable subject, at the fallback similarity;
6. the new one is a subject = value statement with a cue (or a "moved to"), the older
   one has no parsable subject, shares a word with it and states an amount, time,
   weekday or date of the same kind with a different value, at the fallback similarity
   ("the Heron budget is £30k now" after "we've been given £80k for the Heron
   project"; "the dentist moved my appointment to 11:30am" after "I've got the dentist
   at 2:30pm");
7. the new one says the speaker switched what the older one's subject names, in the
   plural ("I've switched editors", "we changed banks", "I switched jobs"), and the
   older one is the speaker's own ("my editor of choice is Vim", "I work at Initech"),
   at a similarity of at least ``policy.supersede_similarity`` less 0.15, as for a
   named preference: the older value is no longer current, whether or not the new one
   names the next.

An older memory that states facts of several subjects, in sentences or in clauses ("I
live in Porto and work at Google as a designer", "my sister lives in Porto and is a
nurse": :func:`_facts`), is superseded only by a new one that restates every one of them:
like a summary, it stays when one of its facts changes ("I moved to Lisbon"), for the
others still hold.

Everything else -- "I went to Paris in May" / "I went to Rome in June", two people's
favourite colours, a window seat outbound and an aisle seat on the return, "my plan for
the evening is X" on two different evenings -- stays first-class. An LLM-backed judge
from the adapters can replace the rule (it satisfies :class:`SupersessionJudge`).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from oblivion_core.naming import PLAYED, QUOTED, WHEN_OR_HOW, anothers_call, refused_or_asked
from oblivion_core.overlap import STOP_WORDS, content_words
from oblivion_core.speakers import DISCOURSE, NOT_THE_USER, split_speaker
from oblivion_core.triggers import gated, may_match
from oblivion_core.triggers import has_any as _has
from oblivion_core.typography import LETTER, LOWER, UPPER, composed

# ------------------------------------------------------------------------- labels
#: A discourse label before a statement ("Quick update: ..."), stripped before parsing.
_LABEL = re.compile(r"^\s*([A-Za-z][\w .'\-]{0,30}?)\s*:\s+")

# ---------------------------------------------------------------------------- cues
_CUES = re.compile(
    r"\b(actually|correction|sorry|no longer|not any ?more|any ?more|from now on|instead|"
    r"switch(?:ed)?|changed my mind|change of heart|change of plans?|these days|nowadays|lately|"
    r"now|update\s*:|quick update|an update on|"  # not the noun ("the weekly update")
    r"scratch that|overtaken|rather than|gone off|went off|at the moment|currently|"
    r"going forward|on second thoughts?|turns out|after all|wrong|misremembered|mixed up|"
    r"out of date)\b",
    re.I,
)
_NEGATION = re.compile(
    r"\b(no longer|not any ?more|don't .{0,30}any ?more|instead of|overtaken|rather than|"
    r"switched from|not .{0,20}any ?more|isn't .{0,30}any ?more|gone off|went off|never|"
    r"no more|done with|over it|left|(?:i'm|i am) not)\b",
    re.I,
)
_LEADING = re.compile(
    r"^(?:(?:actually|sorry|correction|update|ok(?:ay)?|so|well|oh|ah|also|and|but|by the way|"
    r"for the record|just so you know|quick update|heads up|heads-up|fyi|these days|nowadays|"
    r"lately|now|change of heart|scratch that|one more thing|small thing|a small thing|please|"
    r"honestly|to be honest|in fact|turns out|on second thoughts?|right|hmm+|um+|ps|p\.s\.?|"
    r"note|reminder|edit|btw|anyway|wait|oops|my bad|i was wrong|from today|as of today|"
    r"from now on|starting today|as of now|from this week|from next week|starting this week|"
    r"starting next week)[,:;.!\s-]*)+",
    re.I,
)
#: A bounded time that makes a statement an exception rather than a change ("by bus this
#: week", "at 10am today"); with a lead ("from today", "starting this week") it starts a
#: change instead.
_ONE_OFF = re.compile(
    r"(?P<lead>\b(?:from|starting|as of|since|until|till|before|after)\s+)?"
    r"\b(?:this\s+(?:week|weekend|time|morning|afternoon|evening)|today|tonight|"
    r"just\s+(?:this\s+)?once|for\s+once|for\s+the\s+day)\b",
    re.I,
)
_ONE_OFF_TRIGGERS = ("this", "tonight", "once", "day")
#: A routine, which an exception leaves standing ("on Mondays", "every day", "usually").
_ROUTINE = re.compile(
    r"\b(?:every|each|daily|weekly|fortnightly|monthly|usually|normally|generally|"
    r"typically|always|weekdays|weeknights|(?:mon|tues|wednes|thurs|fri|satur|sun)days)\b",
    re.I,
)
_ROUTINE_TRIGGERS = (
    "every",
    "each",
    "daily",
    "weekly",
    "fortnightly",
    "monthly",
    "usually",
    "normally",
    "generally",
    "typically",
    "always",
    "weeknights",
    "days",
)


#: A start, which makes "today" the first day of a change ("I started at Globex today").
_STARTS = re.compile(r"\b(?:start(?:s|ed)?|began|begins?|join(?:s|ed)|new)\b", re.I)
#: "I've switched editors", "we changed banks": the speaker's one editor or bank is
#: another now, whether or not the text names it. The speaker's own past switch only:
#: not "Tom switched banks", "I haven't changed dentists", "thinking of switching
#: banks", "I changed trains at York".
_SWITCHED = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have)?(?:\s+(?:just|finally|recently|also|now|officially|"
    r"actually))?\s+(?:switched|changed|swapped)\s+(?:over\s+)?"
    r"(?!(?:trains|buses|hands|sides|gears|lanes|clothes|places|things)\b)(?P<what>[a-z]+s)\b"
    r"(?!\s+(?:on|off|around|back)\b)",
    re.I,
)
_SWITCHED_TRIGGERS = ("switch", "chang", "swap")


def _switched(body: str, lower: str) -> frozenset[str]:
    """What the speaker switched (:data:`_SWITCHED`), in the singular; not in a
    question ("Have I switched banks?")."""
    if not may_match(lower, _SWITCHED_TRIGGERS):
        return frozenset()
    heads = set()
    for m in _SWITCHED.finditer(body):
        end = re.search(r"[.!?\n]", body[m.end() :])
        if end is None or end.group() != "?":
            heads.add(_norm_word(m.group("what").lower()))
    return frozenset(heads)


#: What says a one-off is an exception to what usually holds ("because of the strike").
_TEMPORARY = re.compile(
    r"\b(?:because|due to|while|until|till|for now|for the time being|temporarily|only|"
    r"just this once|for once|instead)\b",
    re.I,
)


def _one_off(body: str, lower: str) -> bool:
    """Whether ``body`` holds for a bounded time (:data:`_ONE_OFF`), not from it on."""
    return (
        may_match(lower, _ONE_OFF_TRIGGERS)
        and any(m.group("lead") is None for m in _ONE_OFF.finditer(body))
        and not _STARTS.search(body)
    )


#: Where a second statement starts inside a sentence.
_CLAUSES = re.compile(r"(?:,\s*(?:so|and so|which means|meaning)\s+|;\s+)", re.I)
#: Verbs that report another's words ("Tom told me: ...", "she says ..."), for
#: :data:`_NOT_STATED` and :data:`_LEAD_NOT_STATED`.
_REPORTING = r"told|tells|said|says|wrote|writes|texted|thinks?|thought|reckons?|claims?|claimed"
#: A leading clause that makes what follows its comma no statement of the speaker's: a
#: condition or time ("If we lose the client, ..."), a supposition, another's words.
_LEAD_NOT_STATED = re.compile(
    # anywhere in the clause ("But if we lose the client, ...", "Update: when ...")
    r"\b(?:if|when|whenever|unless|once|whether|in case|suppose|supposing|assuming|"
    r"imagine|after|before|until|while|although|though|as long as|worst case|best case|"
    r"in theory|hypothetically|"
    # hedges and hearsay ("Maybe, ...", "Apparently, ...", "Per Tom, ...")
    r"maybe|perhaps|probably|possibly|apparently|supposedly|allegedly|reportedly|"
    r"rumou?r|per|according to|let's say|say|"
    # another's words
    rf"{_REPORTING}|asked|asks|wonder(?:ing)?|mentioned|mentions|emailed|heard|hears)\b|\?|"
    # a scope ("On weekends, my alarm is at 9": weekdays' stays true)
    r"^\W*(?:on|for|at|in|during|with|from|to|by|over|under|within|between|around|"
    r"throughout|outside|inside)\b",
    re.I,
)


def _after_lead(sentence: str) -> str | None:
    """What follows the first comma of ``sentence`` when the clause before it leaves it
    the speaker's own statement, else ``None``."""
    lead, comma, rest = sentence.partition(", ")
    if not comma or not rest or _LEAD_NOT_STATED.search(lead) or _additive(lead):
        return None  # "Oh and also, I'm allergic to cats": one more, read as a whole
    return rest


_CUE_TRIGGERS = (
    "actually",
    "correction",
    "sorry",
    "longer",
    "more",
    "now",
    "instead",
    "switch",
    "changed",
    "change of heart",
    "change of plan",
    "these days",
    "update",
    "scratch",
    "overtaken",
    "rather",
    "gone off",
    "went off",
    "lately",
    "moment",
    "currently",
    "forward",
    "second thought",
    "turns out",
    "after all",
    "wrong",
    "misremembered",
    "mixed up",
    "out of date",
)
_NEGATION_TRIGGERS = (
    "longer",
    "more",
    "instead",
    "overtaken",
    "rather",
    "switch",
    "off",
    "never",
    "not",
    "done with",
    "over it",
    "left",
)
#: Cues strong enough for the subject-less fallback rule (4) and for episodic subjects.
_STRONG_CUES = re.compile(
    r"\b(actually|correction|sorry|no longer|from now on|instead|changed my mind|"
    r"change of heart|change of plans?|scratch that|update\s*:|quick update|an update on|"
    r"on second thoughts?)\b",
    re.I,
)
#: What makes a text with a strong cue and no parsable subject a correction (rule 4),
#: besides a negation: a change or a mistake said ("she moved to York", "Leeds was
#: wrong", "scratch that, 4pm"), or a restatement whose subject is a pronoun ("it's on
#: Thursday", "she lives in York", "mine is red"; not "it's raining"). Not a task, a plan
#: or a remark that only opens with "actually" or "sorry" ("Actually, I need to check in
#: for my flight online", "Actually, Paris is getting expensive", "Actually, Dr. Lee
#: prescribed me antibiotics").
_CORRECTS = re.compile(
    r"\b(?:wrong|mistake|mistaken|misremembered|mixed up|typo|meant|correction|scratch that|"
    r"changed my mind|change of (?:heart|plans?)|on second thoughts?|no longer|from now on|"
    r"instead|moved|relocated|changed|switched|swapped|rescheduled|postponed|cancell?ed|"
    r"pushed (?:back|forward|to)|brought forward)\b"
    r"|^(?:it|that|this|she|he|they|mine|ours)(?:'s|'re|\s+(?:is|are|was|were|lives|live|"
    r"works|work))\b"
    r"(?!\s+(?:not\s+|getting\s+)?[a-z]+ing\b)",
    re.I,
)
#: A time cue: the statement is about how things are now (needed by the weaker
#: preference phrasings, "I'm into matcha now").
_NOW = re.compile(
    r"\b(now|these days|nowadays|lately|at the moment|currently|any ?more|recently|"
    r"more and more|from now on|going forward|instead)\b",
    re.I,
)

# --------------------------------------------------------------------------- lists
_ITEM = r"(?P<item>[^\W\d_][\w'\-]*(?:\s+[\w'\-]+){0,3}?)"
_LIST_ADD = re.compile(
    r"\b(?:add|put|stick|pop|include|get|note down|write down|jot down|throw)\s+"
    r"(?P<item>.{1,60}?)\s+(?:back\s+)?(?:on|to|onto|in|for)(?:to)?\s+(?:the|my|our)\s+"
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
_OUT_OF = re.compile(
    r"\b(?:we're|we are|i'm|i am|we've|i've|we have|i have)\s+(?:nearly\s+|almost\s+|"
    r"completely\s+|all\s+|just\s+)?(?:out of|run out of|running out of|running low on|"
    r"low on|short of)\s+(?:the\s+|some\s+)?" + _ITEM + r"(?=\s*[,.;!?]|\s+(?:so|and|again|"
    r"too|now|already)\b|\s*$)",
    re.I,
)
_BARE_ADD = re.compile(
    r"^(?:add|and)\s+(?:some\s+|a\s+|an\s+|the\s+|more\s+)?" + _ITEM + r"(?:\s+(?:too|as well|"
    r"again|also|back|please))*\s*[.!]?$",
    re.I,
)
_LIST_REMOVE = re.compile(
    r"\b(?:remove|take|cross|strike|delete|drop|scratch|scrap|tick)\s+(?P<item>.{1,60}?)\s+"
    r"(?:off|from)\s+(?:the|my|our)\s+(?P<list>[\w\s'\-]{0,30}?list)\b",
    re.I,
)
_BARE_REMOVE = re.compile(
    r"^(?:remove|delete|drop|cross off|take off|strike off|tick off)\s+(?:the\s+|some\s+)?"
    + _ITEM
    + r"(?:\s+(?:too|as well|please))*\s*[.!]?$",
    re.I,
)
#: "got the milk already, cross it off", "we already have eggs", "cross that off".
_HAVE_IT = re.compile(
    r"\b(?:(?:got|bought|picked up|grabbed|found)\s+(?:the\s+|some\s+)?" + _ITEM + r"\s+already"
    r"|already\s+(?:got|bought|have|picked up|grabbed|found)\s+(?:the\s+|some\s+|a\s+|an\s+)?"
    r"(?P<item2>[^\W\d_][\w'\-]*(?:\s+[\w'\-]+){0,3}?)(?=\s*[,.;!?]|\s+(?:so|and)\b|\s*$)"
    r"|(?:cross|tick|strike|take|knock|scratch)\s+(?P<pron>it|that|them|those|this)\s+off)\b",
    re.I,
)
_LIST_DROP = re.compile(
    r"^(?:scratch|scrap|never mind|forget|leave)\s+(?!what\b|about\b)(?:the\s+)?"
    r"(?P<item>[\w\s'\-]{1,40}?)"
    r"(?:\s+out)?(?:\s+after all)?\s*(?:[;,.!]|$)",
    re.I,
)
_NO_NEED = re.compile(
    r"\b(?:we|i)\s+(?:don't|do not|no longer)\s+need\s+(?:any\s+)?(?P<item>[\w\s'\-]+?)"
    r"(?:\s+any ?more|\s+after all|\s+now)?\s*[.!]?$",
    re.I,
)
_NAMED_ELSEWHERE = re.compile(
    r"\b(?:out of|need|buy|get|got|bought|have|found|picked up|grabbed)\s+"
    r"(?:the\s+|some\s+|a\s+|an\s+)?([\w\s'\-]+?)(?:[,.;]|\s+so\b|\s+already\b|$)",
    re.I,
)

# ---------------------------------------------------------------- subject = value
#: A possessive: "my", "our", "Tom's", "José's", "the Joneses'" (patterns that use it
#: ignore case: any word of two letters or more of any script, as "[A-Z][a-z]+" was).
_POSSESSIVE = rf"{LETTER}{LETTER}+'s"
_OWNER = rf"(?P<owner>\b(?:my|our|{_POSSESSIVE}|{LETTER}{LETTER}+s'(?!\w)))"
#: Words that make a noun a preference: "favourite drink", "go-to drink", "usual drink".
_PREF = r"(?:favou?rite|fave|fav|preferred|go-to|go to|usual)"
_IS = (
    r"(?:is|are|'s|has become|has changed to|would be|is now|now is|these days is|"
    r"at the moment is|has to be|must be|"
    r"has changed(?: again)?[.!;:,]?\s+(?:it's|it is|now it's))"
)
_FAV_A = re.compile(
    _OWNER
    + r"\s+(?:new\s+|current\s+|absolute\s+|all-time\s+|real\s+|true\s+)?"
    + _PREF
    + r"\s+(?P<subj>[^\W\d_][\w\s\-]{0,30}?)\s*(?:\s"
    + _IS
    + r"|:)\s+(?P<val>.+)$",
    re.I,
)
_FAV_C = re.compile(
    _OWNER + r"\s+(?:new\s+)?" + _PREF + r"\s+(?P<subj>[^\W\d_][\w\s\-]{0,30}?)\?\s+(?P<val>.+)$",
    re.I,
)
_FAV_B = re.compile(
    r"^(?P<val>.+?)\s*(?:\s(?:is|are|has become|has overtaken .+? as|is now|has (?:always )?been|"
    r"was always|will always be)|'s|[;,]\s+"
    r"(?:it's|it is|that's|that is))\s+(?:now\s+|definitely\s+|officially\s+|still\s+)?"
    + _OWNER
    + r"\s+(?:new\s+)?"
    + _PREF
    + r"\s+(?P<subj>[^\W\d_][\w\s\-]{0,30}?)"
    r"(?:\s+now|\s+these days|\s+nowadays|\s+at the moment|\s+by (?:a mile|far)|\s+for sure)?"
    r"\s*[.!]?$",
    re.I,
)
_FAV_OF_CHOICE = re.compile(
    _OWNER
    + r"\s+(?P<subj>[^\W\d_][\w\-]*(?:\s+[^\W\d_][\w\-]*)?)\s+of\s+choice\s+"
    + _IS
    + r"\s+(?P<val>.+)$",
    re.I,
)
_FAV_BEST = re.compile(
    r"\bthe\s+(?P<subj>[^\W\d_][\w\-]*(?:\s+[^\W\d_][\w\-]*)?)\s+(?:i|we)\s+(?:like|love|enjoy|"
    r"prefer)\s+(?:the\s+)?(?:best|most)\s+(?:now\s+|these days\s+)?" + _IS + r"\s+(?P<val>.+)$",
    re.I,
)
#: "my new favourite is matcha": a preference without a noun (the subject is unknown).
_FAV_NOUNLESS = re.compile(
    r"\b(?:my|our)\s+(?:new\s+|current\s+)?(?:favou?rite|fave|go-to)\s+(?:now\s+|these days\s+|"
    r"at the moment\s+)?(?:is|has to be)\s+(?P<val>.+)$"
    r"|^(?P<val2>.+?)\s+is\s+(?:now\s+)?my\s+(?:new\s+)?(?:favou?rite|fave|go-to)"
    r"(?:\s+now|\s+these days)?\s*[.!]?$",
    re.I,
)
_V = r"(?P<val>[^,.;!?]+)"
#: Preference verbs; group ``cat`` names a category when the verb implies one.
_PREF_VERBS: tuple[tuple[re.Pattern[str], bool], ...] = (
    # (pattern, needs a time cue)
    (
        re.compile(
            r"\b(?:i|we)(?:'ve| have)?\s+(?:now\s+|recently\s+|just\s+|finally\s+|since\s+|"
            r"actually\s+|completely\s+)?(?:switched|swapped|changed|converted|gone over|"
            r"moved on)\s+(?:over\s+)?(?:from\s+[^,.;!?]+?\s+)?to\s+" + _V,
            re.I,
        ),
        False,
    ),
    (
        re.compile(
            r"\b(?:i|we)\s+(?:now\s+|really\s+|much\s+|actually\s+|definitely\s+|mostly\s+|"
            r"generally\s+|honestly\s+)*prefer\s+(?!to\s|it\b|that\b|not\b)" + _V,
            re.I,
        ),
        False,
    ),
    (
        re.compile(
            r"\b(?:i|we)\s+(?:now\s+|really\s+|actually\s+|definitely\s+)*(?:like|love|enjoy)\s+"
            r"(?P<val>[^,.;!?]+?)\s+(?:even\s+|much\s+|a lot\s+)?(?:better|more|most|best)\b",
            re.I,
        ),
        False,
    ),
    (
        re.compile(
            r"\b(?:i'm|i am|we're|we are)\s+(?:now\s+|really\s+|totally\s+|so\s+|very\s+|"
            r"all\s+|completely\s+)*(?:into|hooked on|obsessed with|all about|loving|mad about|"
            r"crazy about|a big fan of|a fan of)\s+" + _V,
            re.I,
        ),
        True,
    ),
    (
        re.compile(
            r"\b(?:i'm|i am|i've become|i have become)\s+(?:now\s+|definitely\s+|really\s+|"
            r"very much\s+|much\s+)?(?P<more>more\s+of\s+)?an?\s+(?P<val>[\w\-]+(?:\s+[\w\-]+)?)"
            r"\s+(?:person|fan|drinker|eater|lover|girl|guy|kind of (?:person|guy|girl)|type)\b",
            re.I,
        ),
        True,
    ),
    (
        re.compile(
            r"\b(?:i|we)\s+(?:(?:now|mostly|mainly|usually|generally|normally|only|just|"
            r"tend to|always|largely)\s+)+(?P<cat>drink|eat|listen to)\s+" + _V,
            re.I,
        ),
        False,
    ),
    (
        re.compile(r"\b(?:i|we)\s+(?P<cat>drink|eat|listen to)\s+" + _V, re.I),
        True,
    ),
)
#: A setting after what one drinks, eats or listens to: a habit there, not a favourite.
_SCOPE = re.compile(
    r"\b(?:during|while|when|whenever|before|after|at (?:work|night|home|lunch|weekends?)|"
    r"on (?:my|the|weekdays|weekends|workdays)|in the (?:morning|afternoon|evening)s?|"
    r"with (?:my|dinner|lunch|breakfast|meals?|friends))\b",
    re.I,
)
#: What every pattern of ``_PREF_VERBS`` and ``_SELF`` needs ("I", "we", "I'm", "we're"...).
_FIRST_PERSON = re.compile(r"\b(?:i|we)\b", re.I)
#: Facts about the speaker: "I'm allergic to shellfish", "I live in Leeds", "I work as a nurse".
_SELF = re.compile(
    r"\b(?:i'm|i am|i've been|i have been)\s+(?:now\s+|actually\s+|currently\s+)?"
    r"(?P<rel>allergic to|based in|living in|living at|married to|engaged to|working at|"
    r"working as|working for)\s+(?P<val>[^,.;!?]+)"
    r"|\b(?:i|we)\s+(?:now\s+|actually\s+|currently\s+)?(?P<rel2>live in|live at|work at|"
    r"work as|work for)\s+(?P<val2>[^,.;!?]+)",
    re.I,
)
_SELF_KEY = {
    "allergic to": "allergy",
    "based in": "home|live",
    "living in": "home|live",
    "living at": "home|live",
    "live in": "home|live",
    "live at": "home|live",
    "married to": "spouse",
    "engaged to": "spouse",
    "working at": "job|work",
    "working as": "job|role",
    "working for": "job|work",
    "work at": "job|work",
    "work as": "job|role",
    "work for": "job|work",
}
#: A first-person change of home or job, to a named place or employer: "I moved to York",
#: "we've just relocated to Lyon", "I started a new job at Globex", "I joined Globex as a
#: designer". The value must be a name (capitalised, no article): "I moved to a new desk",
#: "I joined a gym" and "I joined the choir" change neither.
_SELF_CHANGE = re.compile(
    r"\b(?:i|we)(?:'ve|\s+have)?\s+(?:(?:just|recently|finally|now|actually|officially)\s+){0,2}"
    r"(?:(?P<home>moved|relocated)\s+(?:back\s+)?to|(?P<job>started\s+(?:a\s+new\s+"
    r"(?:job|role|position)\s+|working\s+)?(?:at|for)|got\s+a\s+(?:new\s+)?job\s+(?:at|with)"
    r"|(?P<joined>joined)))\s+"
    # a place ("Leeds", "New York") or an address ("4 Elm Road")
    rf"(?P<val>(?:\d+[a-z]?\s+)?(?-i:{UPPER}[\w\-&]*)(?:\s+(?-i:{UPPER}[\w\-&]*)){{0,2}})"
    r"(?P<rest>[^.;!?]*)",
    re.I,
)
#: What a reply instruction (:data:`_REPLY_IN`, :data:`_REPLY_NOT`) says: the verb, who
#: to, and the language, one or two capitalised words ("British English").
_REPLY_VERB = r"(?:answer|reply|respond|write|speak|talk)"
_TO_US = r"(?:\s+(?:to\s+)?(?:me|us))?"
_LANGUAGE = rf"(?P<val>(?-i:{UPPER}{LOWER}+)(?:\s+(?-i:{UPPER}{LOWER}+))?)"
#: The language replies are to be in, as a whole instruction: "Always answer in French",
#: "From now on, reply in British English", "Please speak to me in Spanish": one per
#: speaker. Not a one-off ("Answer this one in English"), a question, or a task ("Write the
#: summary in French", "Reply in English to Tom's email").
_REPLY_IN = re.compile(
    r"^(?:(?:please|always|from now on|going forward|and|just|only|now)\W+)*"
    + _REPLY_VERB
    + _TO_US
    + r"\s+(?:only\s+)?in\s+"
    + _LANGUAGE
    + r"(?:[,\s]+(?:from now on|going forward|please|instead|only|again))*\s*[.!]?$",
    re.I,
)
#: A whole instruction not to reply in a language any more: "Don't answer in French
#: anymore", "Stop replying in German", "Please never write in Spanish". It replaces an
#: instruction to reply in that language, and no other (:func:`_refused_language`).
_REPLY_NOT = re.compile(
    r"^(?:(?:please|and|so|from now on|going forward)\W+)*"
    r"(?:don't|do\s+not|never|stop|no\s+longer)\s+"
    + _REPLY_VERB
    + r"(?:ing)?"
    + _TO_US
    + r"\s+in\s+"
    + _LANGUAGE
    + r"(?:[,\s]+(?:anymore|any more|from now on|going forward|please|again))*\s*[.!]?$",
    re.I,
)
#: Marks a refused language in a ``reply language`` value: ``{"not:french"}``.
_NOT = "not:"
#: Keys of what a speaker has one of at a time, that :data:`_SELF_CHANGE` changes.
_ONE_PER_OWNER = ("|home|live", "|job|work")
#: After the name, words that make it history or not the thing itself: "when I was ten",
#: "Globex's book club", "I joined Slack's beta".
_SELF_CHANGE_NOT = re.compile(
    r"^(?:'s\b|\s+(?:when|as\s+a\s+(?:kid|child|teen)|years\s+ago|back\s+in|for\s+"
    r"(?:a|the|one|two|three|\d+)\s+(?:day|week|month|year|summer|term|semester)|"
    r"temporarily|briefly))",
    re.I,
)
#: Anywhere in the clause of a move or a new job, a time that makes it history, not the
#: speaker's home or employer now: "When I was a kid I moved to Rome", "Years ago I
#: moved to Rome", "As a teenager ...", "Back in 2010 ...", "Right out of college I got a
#: job at Microsoft", "After university ...", and a year (:func:`_past`).
_PAST_TIME = re.compile(
    r"\b(?:when\s+i\s+was|as\s+an?\s+(?:kid|child|teen|teenager|student|boy|girl|baby|"
    r"toddler|young\s+\w+)|growing\s+up|back\s+(?:in|then)|(?:years|decades)\s+ago|"
    r"long\s+ago|(?:(?:right|straight|fresh|just)\s+)?out\s+of\s+(?:college|school|university|"
    r"uni)|after\s+(?:college|school|university|uni|graduating|graduation)|"
    r"in\s+my\s+(?:teens|twenties|thirties|forties|fifties|youth)|"
    r"at\s+(?:the\s+)?age\s+(?:of\s+)?\w+)\b|\b(?P<year>1[89]\d\d|20\d\d)\b",
    re.I,
)


def _past(clause: str) -> bool:
    """Whether ``clause`` dates what it says to the past (:data:`_PAST_TIME`): a year
    before last ("I moved to Rome in 1998"; "in 2026" may be this year's move)."""
    this_year = time.gmtime().tm_year
    return any(
        m.group("year") is None or int(m.group("year")) < this_year - 1
        for m in _PAST_TIME.finditer(clause)
    )


#: After "joined <Name>", what says the name is an employer: end of clause, "as a ...",
#: a time ("last month", "in May", "today").
_JOINED_EMPLOYER = re.compile(
    r"^\s*(?:$|,|\bas\s+(?:a|an|the|their|its|our)?\b|\b(?:last|this|in|on|today|"
    r"yesterday|recently|full[\s-]time)\b)",
    re.I,
)


def _word_set(words: str) -> frozenset[str]:
    """A set of words written as one string ("in at on ...")."""
    return frozenset(words.split())


#: What the speaker eats, one at a time: "I'm vegetarian", "I am a vegan", "I'm
#: pescatarian now", "I've gone vegan", "I've been vegetarian for years". Not "I'm a vegan
#: chef", "I'm vegetarian for Lent", "I'm not vegetarian" (a rejection: :data:`_NEGATED`).
_SPEAKER_DIETS = r"(?:vegetarian|vegan|pescatarian|pescetarian|flexitarian|plant-based)"
_SELF_DIET = re.compile(
    r"\b(?:i'm|i\s+am|(?P<been>i've\s+been|i\s+have\s+been)|(?:i've|i\s+have)\s+"
    r"(?:now\s+|just\s+|finally\s+)?(?:gone|become|turned))\s+"
    r"(?:now\s+|actually\s+|currently\s+|still\s+|fully\s+|strictly\s+|officially\s+)?"
    r"(?:a\s+|an\s+)?(?P<val>" + _SPEAKER_DIETS + r")"
    r"(?=\s*(?:[,.;!)]|$)|\s+(?:now|these\s+days|nowadays|again|and|but|so|because|though|"
    r"actually|at\s+the\s+moment)\b|(?(been)\s+(?:for|since)\b|(?!)))",
    re.I,
)
#: A person named by a bare name, and what they are or do with a person's verb: "Tom
#: lives in Leeds", "Tom (has) moved to York", "Anna is based in Lyon", "Tom works at
#: Globex", "Tom got a job at Initech", "Tom works as a nurse". The name (one or two
#: capitalised words) opens the sentence and is no :data:`_NOT_PERSON` word.
_NAMED_PERSON = re.compile(
    rf"^(?P<name>(?-i:{UPPER}{LOWER}+)(?:\s+(?-i:{UPPER}{LOWER}+))?)\s+"
    r"(?:(?:now|still|currently|actually|just|recently|finally|officially)\s+)?"
    r"(?:(?P<live>lives\s+(?:in|at)|is\s+(?:now\s+)?(?:living\s+(?:in|at)|based\s+in)|"
    r"has\s+been\s+living\s+(?:in|at))"
    r"|(?P<moved>(?:has\s+)?(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)\s+"
    r"(?:back\s+)?to)"
    r"|(?P<work>works\s+(?:at|for)|is\s+(?:now\s+)?working\s+(?:at|for))"
    r"|(?P<job>(?:has\s+)?(?:just\s+)?(?:started\s+(?:a\s+new\s+(?:job|role|position)\s+|"
    r"working\s+)?(?:at|for)|got\s+a\s+(?:new\s+)?job\s+(?:at|with)))"
    r"|(?P<role>works\s+as|is\s+(?:now\s+)?working\s+as))\s+"
    # not where or when it works ("works for me", "works at night"), not how one lives
    r"(?!(?:me|us|you|him|her|them|it|everyone|everybody|anyone|all|both|now|night|nights|"
    r"weekends?|the\s+weekend|scale|times|least|most|first|last|"
    r"once|the\s+moment|fear|hope|denial|peace|harmony|a\s+bubble|the\s+(?:past|present|"
    r"future)|(?:my|his|her|their|your)\s+head)\b)"
    r"(?P<val>[^.;!?]+)",
    re.I,
)
#: Capitalised words that open a sentence as no person: pronouns and quantifiers
#: ("Everyone lives in fear", "That works for me"), days, months that are no first name,
#: seasons, a few common nouns ("Dinner moved to ..."), place-name openers ("New York")
#: and well-known firms and products ("Chrome moved to ...").
_NOT_PERSON = _word_set(
    "i it its this that these those there here he she they we you who what which where "
    "when why how whoever whatever everyone everybody everything nobody nothing noone "
    "someone somebody something anyone anybody anything each every all both none one "
    "another other others either neither many most some few such the a an my our your "
    "his her their mine yours ours theirs no not also still now then today tomorrow "
    "tonight yesterday monday tuesday wednesday thursday friday saturday sunday january "
    "february march july september october november december spring autumn fall winter "
    "christmas easter home job work life love death evil hope fear money family god "
    "dinner lunch breakfast class school church practice training team office company "
    "business production development support everything new old north south east west "
    "san los las st saint port fort mount lake upper lower"
)
#: Well-known firms and products: no person ("Chrome moved to ..."), and nowhere to live
#: ("Tom moved to Linux", "I moved to Slack").
_FIRMS_AND_PRODUCTS = _word_set(
    "google apple amazon microsoft meta facebook twitter chrome firefox safari python linux "
    "windows android slack zoom teams netflix spotify uber tesla github"
)
#: A named value after a move or a new job: a place or employer ("York", "New York",
#: "Globex") or an address ("4 Elm Road"); what follows is ``rest``.
_PROPER_VALUE = re.compile(
    rf"(?P<val>(?:\d+[a-z]?\s+)?(?-i:{UPPER}[\w\-&]*)(?:\s+(?-i:{UPPER}[\w\-&]*)){{0,2}})"
    r"(?P<rest>[^.;!?]*)"
)

#: Words that end the noun phrase after "works at / for" ("a bakery in York", "a startup
#: now", "the council as a planner", "his own pace without a break").
_PHRASE_END = _word_set(
    "in at on from to with by near under for off out inside outside behind above below "
    "into onto over across beside between of as and or now since until while where who "
    "that these again today full-time part-time without during after before like than "
    "every each per all a an the alone together remotely overtime late early hard long"
)
#: Heads of what "works at / for" names that say how, when, how long, why or at what
#: one works, not for whom: "at a fast pace", "at his own pace", "for a living", "for a
#: few hours", "for the summer", "at the weekend", "for a good cause", "at a desk".
_NOT_AN_EMPLOYER = _word_set(
    "pace speed rate rates clip level standard scale time times hour hours minute minutes "
    "day days week weeks month months year years night nights weekend weekends morning "
    "mornings afternoon afternoons evening evenings shift shifts moment while being summer "
    "winter spring autumn season holidays living wage salary money pittance peanuts change "
    "bit lot fun love sake good cause reason point stage most least best part rest end "
    "desk table computer laptop screen"
)


def _employer(val: str) -> str | None:
    """The employer or place of work after "works at / for", "got a job at": a name
    ("Globex", "St Mary's Hospital") or a determiner or possessive and a noun phrase
    ("a bakery", "a fintech", "the city", "an estate agent", "my dad", "his dad's firm");
    ``None`` for a phrase whose head says how, when, how long or why one works
    (:data:`_NOT_AN_EMPLOYER`: "at a fast pace", "for a living", "for the summer") and
    for what opens with neither ("at home", "for free", "for hours", "for me")."""
    clause = _CLAUSE_END.split(val.strip(), maxsplit=1)[0]
    pm = _PROPER_VALUE.match(clause)
    if pm is not None:
        return pm.group("val")
    words = re.findall(r"[\w'&\-]+", clause)
    if not words or words[0].lower() not in _DETERMINERS:
        return None
    phrase: list[str] = []
    for word in words[1:5]:
        if word.lower() in _PHRASE_END:
            break
        phrase.append(word)
    if not phrase or phrase[-1].lower() in _NOT_AN_EMPLOYER:
        return None
    return " ".join(words[: len(phrase) + 1])


#: What follows "works as" that is no role: a comparison ("as hard as anyone", "as much
#: as he can"), a group one works in, its noun ending the phrase ("as a team", "as a team
#: with Anna", "as a pair", "as one"; not "as a team leader", "as a family doctor", "as
#: one of the managers"), a manner ("as usual", "as needed", "as part of a team").
_NOT_A_ROLE = re.compile(
    r"^(?:(?!(?:a|an|the)\b)[\w'\-]+\s+(?:[\w'\-]+\s+)?as\b"
    r"|(?:(?:a|an|one|the)\s+(?:team|group|unit|pair|duo|trio|whole|collective|family)"
    r"(?=\s*(?:[,:)]|$)|\s+(?:with|of|on|in|at|for|to|from|under|alongside|together|and|or|"
    r"but|so|now|again|because|when|while|than|like|rather|instead|every|all|most|today|"
    r"these|this)\b)"
    r"|one(?=\s*(?:[,:)]|$)|\s+(?:with|and|or|but|so|now|again|because|when|while)\b))"
    r"|(?:usual|needed|required|necessary|always|ever|well|expected|normal|planned|agreed|"
    r"if|though|much|many|long|soon|far|often|best|hard|fast|quickly|little|such|part)\b)",
    re.I,
)


def _works_for_whom(preposition: str, val: str = "") -> bool:
    """Whether "works <preposition> <val>" can say where or as what one works: "at" or
    "for" an employer (:func:`_employer`), "as" a role (not :data:`_NOT_A_ROLE`); any
    other preposition ("works in finance") is not checked here."""
    preposition = preposition.lower()
    if preposition in ("at", "for"):
        return _employer(val) is not None
    if preposition == "as":
        return _NOT_A_ROLE.match(val) is None
    return True


#: After a place moved to, what says it is a tool or a product moved to, not a home:
#: "Tom moved to Rust for the backend", "we moved to Postgres for our analytics db". The
#: tech noun ends the phrase (or "code", "services", "layer" follow it): "moved to Berlin
#: for a backend job", "to Tokyo for a UI design job", "to York in the builds up to
#: Christmas" are moves home.
_TOOL_USE = re.compile(
    r"^\s+(?:for|on|in)\s+(?:(?:the|our|my|his|her|their|its|a|an|this|that|all|new)\s+)?"
    r"(?:[\w\-]+\s+){0,2}?(?:backend|back-end|frontend|front-end|api|apis|database|"
    r"databases|db|codebase|stack|microservices|pipeline|pipelines|ci|scripting|tooling|"
    r"infra|infrastructure|deployment|deployments|hosting|servers?|apps?|ui|tests|testing|"
    r"builds?)(?=\s*(?:[,:)]|$)|\s+(?:and|or|but|so|because|as|at|in|on|with|using|instead|"
    r"now|too|code|services?|layer|side|stuff|work)\b)",
    re.I,
)


def _a_home(pm: re.Match[str]) -> bool:
    """Whether a name moved to (:data:`_PROPER_VALUE`'s ``val`` and ``rest``) can be a
    home: no firm or product ("moved to Linux") and no tool ("moved to Rust for the
    backend")."""
    words = pm.group("val").lower().split()
    return not any(w in _FIRMS_AND_PRODUCTS for w in words) and not _TOOL_USE.match(
        pm.group("rest")
    )


def _a_name(name: str) -> bool:
    """Whether the capitalised words that open a sentence can be a person's name: none
    is a stop word ("If Tom ...", "So ...") or a :data:`_NOT_PERSON` word, and a first
    name before a second is no adverb ("Apparently Tom ...")."""
    words = name.lower().split()
    if any(w in STOP_WORDS or w in _NOT_PERSON or w in _FIRMS_AND_PRODUCTS for w in words):
        return False
    return len(words) == 1 or not words[0].endswith("ly")


def _named_person(clean: str) -> tuple[str, frozenset[str]] | None:
    """``(subject | verb class, value)`` of what a sentence that opens with a person's
    bare name states (:data:`_NAMED_PERSON`): keyed as "my <name>" is, so that "Mum
    moved to York" is "my mum"'s and "Tom lives in Leeds" matches "Tom moved to York"
    only; a move or a new job to a name (not "Tom moved to a new desk", "... when he was
    ten", "Dinner moved to Friday")."""
    nm = _NAMED_PERSON.match(clean)
    if nm is None or not _a_name(nm.group("name")):
        return None
    subj = _subject_words(nm.group("name"))
    val = nm.group("val")
    if nm.group("moved"):
        pm = _PROPER_VALUE.match(val)
        if (
            pm is None
            or _SELF_CHANGE_NOT.search(pm.group("rest"))
            or not _a_home(pm)
            or _past(clean)  # "Tom moved to Rome in 1998"
        ):
            return None
        val = pm.group("val")
        kind = _value_kind(val, "moved to")
        if kind == "when":
            return None  # "Dinner moved to Friday": an occasion, not a person
        verb = f"moved:{kind}"
    elif nm.group("job"):
        # a name ("Globex") or a place of work ("a bakery"), not history ("... when he
        # was ten") nor a while ("... for the summer")
        pm = _PROPER_VALUE.match(val)
        employer = pm.group("val") if pm is not None else _employer(val)
        rest = pm.group("rest") if pm is not None else val.strip()[len(employer or "") :]
        if employer is None or _SELF_CHANGE_NOT.search(rest) or _past(clean):
            return None
        val, verb = employer, "work"
    elif nm.group("work") and _employer(val) is None:
        return None  # "Tom works at home / at a fast pace / for free": not for whom
    elif nm.group("role") and _NOT_A_ROLE.match(val):
        return None  # "Tom works as hard as anyone / as a team": no role
    else:
        verb = "live" if nm.group("live") else "work" if nm.group("work") else "be:kind"
    value = _value(val, subj)
    return (f"{subj}|{verb}", value) if value else None


#: After a negation, "it's Y" states the replacement ("Not tea any more; it's matcha").
_ITS = re.compile(
    r"(?:^|[;,.:]\s*|\bnow\s+)(?:it's|it is)\s+(?:now\s+|all about\s+)?(?P<val>[^,.;!?]+)", re.I
)
_VERB_CATEGORY = {"drink": "drink", "eat": "food", "listen to": "music"}
#: Head nouns that name the same preference ("beverage" = "drink").
_HEAD_SYNONYMS = {
    "beverage": "drink",
    "tipple": "drink",
    "film": "movie",
    "novel": "book",
    "read": "book",
    "cuisine": "food",
    "dish": "food",
    "meal": "food",
    "programme": "show",
    "series": "show",
    "tune": "song",
    "track": "song",
    "writer": "author",
    "color": "colour",
    "colors": "colour",
    "hue": "colour",
    "shade": "colour",
    "footy": "football",
}
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
#: Capitalised words after "call me" / "I go by" that are no name: "can you call me
#: Monday?", "I go by Uber to the airport" (:data:`~oblivion_core.naming.WHEN_OR_HOW`).
_NOT_A_NAME = r"(?!(?i:" + "|".join(WHEN_OR_HOW) + r")\b)"
# Not "X called me Y" / "X calls me Y" (what another says), not "going by <source>"
# ("Going by Google Maps, ...").
_NAME = re.compile(
    r"\b(?i:(?P<call>call me)|(?:you|everyone|everybody|people|friends|my friends|most people)\s+"
    r"(?:calls?|called)\s+me|my name is|my name's|i go by|i'm going by|i am going by|i'm called|"
    r"address me as|refer to me as|to be called|use the name|name me|what you call me\?|"
    r"what to call me\?)\s+" + _NOT_A_NAME + rf"(?P<val>{UPPER}[\w\-]*(?:\s+{UPPER}[\w\-]*)?)",
)
#: "Please use Alex instead." -- the instruction ends there: "use Zoom instead of Teams",
#: "use Gmail from now on for the newsletters", "use Celsius, not Fahrenheit" name tools.
_USE_NAME = re.compile(
    rf"\b(?i:please\s+use|just\s+use|use)\s+(?P<val>{UPPER}[\w\-]*)(?:\s*,)?\s+"
    r"(?i:instead|from now on|for me|going forward|from today|when you talk to me)"
    r"\s*(?:[.!;]|$)",
)
_NAME_TRIGGERS = (
    "call",
    "name",
    "go by",
    "going by",
    "address me",
    "refer to me",
    "use",
)
#: An owner named in more than one word ("Project Falcon's", "New York's"): the words
#: before the last must be capitalised (the patterns below ignore case otherwise).
_NAMED_OWNER = rf"(?-i:{UPPER}[\w\-]*\s+){{1,2}}{_POSSESSIVE}"
#: Verbs of an amount that changed, before "to" (:data:`_COPULA`).
_AMOUNT_CHANGE = (
    r"(?:grown|grew|grows|growing|shrank|shrunk|shrinks|shrinking|"
    r"(?:went|goes|gone|going)\s+(?:up|down)|rose|risen|rises|rising|fell|fallen|falls|"
    r"falling|increased|increases|decreased|decreases|raised|lowered|cut|reduced|"
    r"dropped|drops|jumped|jumps|climbed|climbs)"
)
_AMOUNT_VERB = re.compile(_AMOUNT_CHANGE + r"\s+to$")
#: "There are seven of us on the team": a count of what is in or on the subject.
_THERE_ARE = re.compile(
    r"^there\s+(?P<verb>are|'re|were)\s+(?:now\s+)?(?P<val>[\w,]+)\s+"
    r"(?:(?:of\s+us|of\s+them|people|members|staff|employees|kids|children|students|"
    r"pupils)\s+)?(?:on|in)\s+(?P<owner>my|our|the)\s+(?P<subj>[^\W\d_][\w\s'\-]{0,30}?)"
    r"(?=\s*[,.;!?]|\s+(?:now|including|in total|altogether)\b|\s*$)",
    re.I,
)
_COPULA = re.compile(
    # not "Let's pretend the budget is ...", "That's the plan": no one's
    r"^(?!(?:let|it|that|what|there|here|he|she|who|where|when|how|why|this)'s\b)"
    r"(?P<owner>my|our|the|"
    + _POSSESSIVE
    + "|"
    + _NAMED_OWNER
    + r")\s+(?P<subj>[^\W\d_][\w\s'\-]{0,40}?)\s+"
    r"(?:(?:[a-z]+ed|left|quit|sold|bought)\s+(?:[\w']+\s+){0,2}and\s+)?"
    r"(?:now\s+|still\s+|also\s+|currently\s+)?"
    # an amount that grew or fell ("the team grows to nine", "my rent went up to
    # 1,600"): first, so "is growing to" is not read as "is"
    r"(?P<verb>(?:has\s+|have\s+|had\s+|was\s+|were\s+|is\s+|are\s+|just\s+)?"
    r"(?:been\s+)?" + _AMOUNT_CHANGE + r"\s+to|"
    r"is|are|'s|will be|has been set for|is set for|is scheduled for|"
    r"has been scheduled for|is booked for|is due|falls on|was moved to|"
    r"has been moved to|has moved to|is moving to|got moved to|"
    # "the flight got pushed back to Thursday", "my address changed to 4 Mill Lane"
    r"(?:was|has been|got)\s+(?:(?:pushed|bumped)\s+(?:back\s+|forward\s+)?|brought\s+"
    r"forward\s+)to|"
    r"(?:was|has been|got)\s+rescheduled\s+(?:to|for)|(?:was|has|has been)?\s*changed\s+to|"
    r"moved to|lives|is living|has been living|works|is working|is based|is now based|"
    r"(?:has\s+|just\s+)?turned)\s+"
    r"(?:now\s+|actually\s+)?(?P<val>.+)$",
    re.I,
)
#: Verbs of a new date or time ("pushed back to Thursday", "rescheduled for 4pm"): a
#: subject "pushed to take the job" or "bumped to business class" got no new date.
_DATED_VERB = re.compile(r"pushed|bumped|brought|rescheduled")
#: What "changed to" a new value ("my address changed to 4 Mill Lane"), besides a date or
#: an amount: not a person ("my brother changed to a new dentist").
_ATTRIBUTES = frozenset(
    [
        "address",
        "number",
        "email",
        "name",
        "surname",
        "password",
        "username",
        "handle",
        "phone",
        "plan",
        "title",
        "role",
        "rate",
        "price",
        "fee",
        "salary",
        "rent",
        "budget",
        "deadline",
        "date",
        "time",
        "schedule",
        "shift",
    ]
)
#: "the airline has moved my flight to Thursday", "we pushed the meeting back to May",
#: "we rescheduled the meeting for 4pm".
_MOVED = re.compile(
    r"\b(?P<verb>(?P<dated>moved|rescheduled|shifted)|changed|pushed|put|brought)\s+"
    r"(?P<owner>my|our|the|" + _POSSESSIVE + "|" + _NAMED_OWNER + r")\s+"
    r"(?P<subj>[^\W\d_][\w\s'\-]{0,30}?)\s+(?:back\s+|forward\s+|out\s+)?"
    # "for" after the verbs of a date only: "I brought my laptop for the trip" moves nothing
    r"(?:to|(?(dated)(?P<for>for)|(?!)))\s+(?P<val>.+)$",
    re.I,
)
_VERB_CLASS = {
    "lives": "live",
    "is living": "live",
    "has been living": "live",
    "is based": "live",
    "is now based": "live",
    "works": "work",
    "is working": "work",
    "has moved to": "moved",
    "is moving to": "moved",
    "moved to": "moved",
}
#: Subjects about one occasion ("my plan for the evening", "lunch today"): a later one is
#: another occasion, not a correction, unless a strong cue says so.
_EPISODIC = frozenset(
    [
        "today",
        "tonight",
        "tomorrow",
        "yesterday",
        "morning",
        "afternoon",
        "evening",
        "night",
        "weekend",
        "week",
        "day",
        "lunch",
        "dinner",
        "breakfast",
        "moment",
    ]
)
#: Words of a value that say when or how sure, not what.
_VALUE_FILLER = frozenset(
    [
        "now",
        "days",
        "nowadays",
        "lately",
        "moment",
        "currently",
        "actually",
        "really",
        "definitely",
        "honestly",
        "mile",
        "far",
        "instead",
        "again",
        "anymore",
        "new",
        "favourite",
        "favorite",
        "best",
        "mostly",
        "mainly",
        "usually",
        "generally",
        "normally",
        "always",
        "sure",
        "though",
        "think",
        "like",
        "even",
        "much",
        "more",
    ]
)
_CLAUSE_END = re.compile(
    r"\s*(?:,(?!\d)|[;:(]|\s-\s|\bbut\b|\bbecause\b|\bwhich\b|\bso\b|\bthough\b|\bsince\b|"
    r"\bwhen\b|\band\s+(?:i|it|that|we|my)\b|\s(?:i|we|you|he|she|they)\s)",
    re.I,
)
_NEG_SPAN = r"(?:the\s+|a\s+|an\s+|my\s+)?(?P<neg>[£$€]?[\w'\-]+(?:[,.]\d+)*(?:\s+[\w'\-]+){0,2}?)"
_NEG_END = r"(?=\s*[,.;!?)]|\s+(?:any ?more|now|these days|as|and|but|so|to|any|at all|anyway)\b|$)"
#: Values the new statement rejects: "not Y any more", "it's X, not Y", "gone off Y".
_NEGATED = gated(
    ",;cdfgilmnopqrstw",
    r"(?:\b(?:gone|went|going)\s+(?:right\s+|completely\s+|totally\s+)?off"
    r"|\b(?:i'm|i am)\s+(?:so\s+|totally\s+|completely\s+)?(?:over|done with|off|sick of|"
    r"tired of|bored of|bored with)"
    r"|\b(?:don't|do not|no longer|never|won't|can't stand)\s+(?:really\s+|even\s+)?"
    r"(?:like|drink|eat|want|love|enjoy|fancy|use|go by|prefer)"
    r"|\bnot\s+(?=(?:the\s+|a\s+|an\s+|my\s+)?[\w'\-]+(?:\s+[\w'\-]+){0,2}?\s+any ?more)"
    r"|\bno more|\binstead of|\brather than|\bmore than"
    r"|\b(?:switched|changed|swapped|moved on|converted)\s+(?:over\s+)?from"
    r"|\bprefer\s+[^,.;!?]+?\s+(?:to|over)"
    r"|\bovertaken|\bforget (?:what i said about|about)?"
    r"|\b(?:dropped|ditched|quit|gave up|given up|left|moved away from|moved out of)"
    r"|\b(?:i'm|i am)\s+(?:not|no longer)\s+(?:allergic to|into|a fan of|based in|"
    r"living in|from)"
    # "I'm not vegetarian (any more)", "I am no longer a vegan"
    r"|\b(?P<diet>(?:i'm|i am)\s+(?:not|no longer))(?=\s+(?:a\s+|an\s+)?"
    + _SPEAKER_DIETS
    + _NEG_END
    + ")"
    r"|(?:,|;|\bit'?s\s+\S+|\bthat's\s+\S+)\s*(?:and\s+)?not)\s+" + _NEG_SPAN + _NEG_END,
    re.I,
)
#: Every match of :data:`_NEGATED` contains one of these (a cheap check before the scan).
_NEGATED_TRIGGERS = (
    "off",
    "over",
    "done with",
    "sick of",
    "tired of",
    "bored",
    "don't",
    "no longer",
    "never",
    "won't",
    "can't stand",
    "not",
    "no more",
    "instead of",
    "rather than",
    "more than",
    "from",
    "prefer",
    "forget",
    "dropped",
    "ditched",
    "quit",
    "gave up",
    "given up",
    "left",
    "moved",
)
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
#: Their abbreviations ("may" has none).
_MONTH_ABBREVIATIONS = (
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sept",
    "sep",
    "oct",
    "nov",
    "dec",
)
#: Each month's spellings by the three letters :func:`_date` keeps.
_MONTH_NAMES = {m[:3]: (m,) + (("sept",) if m == "september" else ()) for m in _MONTHS}
#: A month beside a day number ("14 March", "March 14th", "14 Mar"); alone, "may" and the
#: abbreviations are words.
_MONTH = "(?:" + "|".join(_MONTHS + _MONTH_ABBREVIATIONS) + ")"
#: Amounts, times and days: what a changed budget, appointment or date is stated in.
_QUANTITY = gated(
    r"£$€\dadfjmnostw",
    r"(?P<money>[£$€]\s?\d[\d,.]*\s?(?:k|m|bn|million|thousand)?\b"
    r"|\b\d[\d,.]*\s?(?:k|m|bn)?\s?(?:pounds|dollars|euros|quid|bucks)\b)"
    r"|(?P<time>\b\d{1,2}(?:[:.]\d{2})?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d{2}\b)"
    r"|(?P<day>\b" + _WEEKDAY + r"\b)"
    r"|(?P<date>\b\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"\b"
    r"|\b" + _MONTH + r"\s+(?:the\s+)?\d{1,2}(?:st|nd|rd|th)?\b"
    r"|\b\d{1,2}(?:st|nd|rd|th)\b|\b(?:" + "|".join(m for m in _MONTHS if m != "may") + r")\b)",
    re.I,
)
#: Every match of :data:`_QUANTITY` holds a digit, a weekday or a month named in full
#: (not "may"): the words it is searched for (:mod:`~oblivion_core.triggers`).
_QUANTITY_TRIGGERS = (
    *"0123456789",
    *(day + "day" for day in ("mon", "tues", "wednes", "thurs", "fri", "satur", "sun")),
    *(m for m in _MONTHS if m != "may"),
)


def _quantities(lower: str) -> frozenset[tuple[str, str]]:
    """``(kind, value)`` of every amount, time, weekday and date in a text."""
    if not may_match(lower, _QUANTITY_TRIGGERS):
        return frozenset()
    return frozenset(
        (kind, _date(value) if kind == "date" else re.sub(r"[\s,]", "", value))
        for m in _QUANTITY.finditer(lower)
        for kind, value in m.groupdict().items()
        if value
    )


def _date(value: str) -> str:
    """One spelling per date: "14th of March", "March 14" and "14 mar" are "14 mar"."""
    day = re.search(r"\d+", value)
    month = re.search(r"[a-z]{3,}", re.sub(r"\d+(?:st|nd|rd|th)?|\b(?:of|the)\b", " ", value))
    parts = ([str(int(day.group()))] if day else []) + ([month.group()[:3]] if month else [])
    return " ".join(parts)


def _quantity_words(quantities: frozenset[tuple[str, str]]) -> set[str]:
    """The words the amounts, times and dates are written in ("14 mar": "14", "mar",
    "march"): a shared date is not the shared word rule 6 needs."""
    out = {v for _, v in quantities}
    for kind, value in quantities:
        if kind == "date":
            for part in value.split():
                out |= {part, *_MONTH_NAMES.get(part, ())}
    return out


def _changed_quantity(new: frozenset[tuple[str, str]], old: frozenset[tuple[str, str]]) -> bool:
    """The new text states a different amount/time/day/date of a kind the old one has."""
    for kind in {k for k, _ in new}:
        n = {v for k, v in new if k == kind}
        o = {v for k, v in old if k == kind}
        if o and not n <= o:
            return True
    return False


_PRONOUN_ITEMS = {"that", "it", "them", "those", "this", "these", "some"}
_SPELLING = {"favorite": "favourite", "color": "colour", "colors": "colours"}


@dataclass(frozen=True)
class Statement:
    """What the rule understood of one text.

    ``subject`` is ``"<owner>|<words>"``: the owner is ``@<speaker>`` for "my ..." (``@``
    alone when the speaker is unknown) or the possessor's name ("priya"); the words are
    the normalised subject in order, ``favourite *`` for a preference whose noun is not
    said ("I prefer matcha these days").
    """

    speaker: str | None
    subject: str | None = None
    value: frozenset[str] = frozenset()
    op: str | None = None  # "add" | "remove" for list operations
    items: frozenset[str] = frozenset()
    list_name: str | None = None
    cue: bool = False
    strong_cue: bool = False
    negation: bool = False
    words: frozenset[str] = frozenset()
    negated: frozenset[str] = frozenset()  # values the text rejects ("not Y any more")
    episodic: bool = False  # the subject is one occasion ("my plan for the evening")
    moved: bool = False  # a move or new job, to a name ("I moved to York")
    liking: bool = False  # it speaks of liking ("gone off", "prefer", "no longer like")
    several: bool = False  # a list addition of several items ("add eggs and milk")
    item_head: str | None = None  # the noun a list item is ("recipe" of "chicken recipe")
    one_off: bool = False  # it holds for a bounded time ("this week", "today")
    temporary: bool = False  # one_off, and says it is an exception ("because of ...")
    routine: bool = False  # it holds as a routine ("every day", "on Mondays")
    switched: frozenset[str] = frozenset()  # what the speaker switched ("editor", "bank")
    quantities: frozenset[tuple[str, str]] = frozenset()  # ("money", "80k"), ("time", ...)
    # of ``negated``, what it rejects as the speaker's diet only ("I'm not vegetarian")
    own_diet_negated: frozenset[str] = frozenset()
    # it corrects something: a negation or :data:`_CORRECTS`, and adds nothing ("too")
    corrects: bool = False


def _list_name(lower: str) -> str | None:
    """Which list a statement is about: packing, shopping, or unknown (matches any)."""
    if "pack" in lower:
        return "packing"
    if "shop" in lower or "buy" in lower or "grocer" in lower or "out of" in lower:
        return "shopping"
    return None


def _norm_word(w: str) -> str:
    w = _SPELLING.get(w, w)
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w


def _norm_words(text: str) -> frozenset[str]:
    return frozenset(_norm_word(w) for w in content_words(text))


def _strip_label(body: str) -> str:
    """Drop a leading discourse label ("Quick update: ...") and discourse words."""
    m = _LABEL.match(body)
    if m and any(w.lower().strip(".") in DISCOURSE for w in m.group(1).split()):
        body = body[m.end() :]
    return _LEADING.sub("", body).strip()


#: Words that date a subject rather than name it ("my new manager" is "my manager").
_STATE_WORDS = frozenset(["new", "current", "latest", "present"])
#: Stop words a subject keeps: "my other sister" is not "my sister", as "my second
#: sister" is not.
_KEPT = frozenset(["name", "other"])


_SUBJECT_TOKEN = re.compile(r"[^\W_][\w'\-]*")


def _subject_words(subject: str) -> str:
    """The normalised subject, in order, with head-noun synonyms mapped. Numbers and
    letters that name one of several ("office 2", "locker 3", "room A") are kept: the
    password of office 2 is not the password of office 5."""
    words: list[str] = []
    for k, token in enumerate(_SUBJECT_TOKEN.findall(subject)):
        if any(c.isdigit() for c in token) or (k and len(token) == 1 and token not in "aI"):
            words.append("#" + token.lower())
            continue
        w = token.lower()
        if w.endswith("s'") and w[:-1] in content_words(w[:-1]):
            words.append(_norm_word(w[:-1]) + "'")  # "my parents' phone number": whose
        elif w[0].isalpha() and (w in content_words(w) or w in _KEPT) and w not in _STATE_WORDS:
            words.append(_norm_word(w))
    nouns = [k for k, w in enumerate(words) if not w.startswith("#")]
    if nouns:
        words[nouns[-1]] = _HEAD_SYNONYMS.get(words[nouns[-1]], words[nouns[-1]])
    return " ".join(words) or subject.lower().strip()


def _owner(owner: str, speaker: str | None) -> str:
    owner_l = owner.lower()
    if owner_l in ("my", "our"):
        return "@" + (speaker or "")
    if owner_l == "the":
        return "the"
    return " ".join(owner_l.removesuffix("'s").removesuffix("'").split())  # "kids'": kids


#: An email address: a value of its own ("jo@new.com" and "jo@old.com" are two values,
#: not the words "jo", "new", "old", "com", most of them shared or dropped as filler).
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def _value(text: str, subject: str = "") -> frozenset[str]:
    """Content words of the first clause of ``text`` that say what, not when (an email
    address as one)."""
    text = _CLAUSE_END.split(text, maxsplit=1)[0]
    if "@" in text and (emails := _EMAIL.findall(text)):
        return frozenset(e.lower().rstrip(".") for e in emails)
    return _norm_words(text) - _VALUE_FILLER - _norm_words(subject)


def _item_words(item: str, sentence: str) -> tuple[frozenset[str], str | None]:
    """Content words of a list item and its head (:func:`_item_head`)."""
    words = _norm_words(item)
    if words and not (set(item.lower().split()) <= _PRONOUN_ITEMS):
        return words, _item_head(item)
    # "we're out of butter, so stick that on the list": the item is named elsewhere
    m = _NAMED_ELSEWHERE.search(sentence)
    return (_norm_words(m.group(1)), _item_head(m.group(1))) if m else (frozenset(), None)


#: Where a list item's noun phrase ends: a preposition ("milk at home") or a clause
#: word ("chicken, thanks").
_ITEM_END = re.compile(
    r"[,;:.!?]|\b(?:at|in|on|for|from|to|into|onto|with|by|so|but|because|already|now|"
    r"too|again|anymore|any more|after all|today|tonight|tomorrow|please)\b"
)
_ITEM_TOKEN = re.compile(r"[^\W_](?:[^\W_]|['\-])*")
#: Items of several things: no one head ("eggs and milk").
_ITEMS_JOINED = re.compile(r"\b(?:and|or|plus)\b|,|&")


def _item_head(item: str) -> str | None:
    """The noun a list item is: the last content word of its noun phrase, the one after
    "of" in a measure ("a bottle of milk": milk), ``None`` for several items joined.
    "a chicken recipe" is a recipe, "almond milk" is milk."""
    phrase = composed(item).lower()
    if _ITEMS_JOINED.search(phrase):
        return None
    measured = phrase.split(" of ", 1)
    phrase = _ITEM_END.split(measured[-1], maxsplit=1)[0]
    tokens = (w.strip("'-") for w in _ITEM_TOKEN.findall(phrase))
    words = [_norm_word(w) for w in tokens if content_words(w)]
    return words[-1] if words else None


#: A list operation asked about or offered, not made: "Should I add eggs to the list?",
#: "Shall we take the bread off?", "Do you want me to add milk?", "Would you like me to
#: put ...", "Do we already have eggs?", "Have we got the milk already?". A request
#: stays an operation: "Can you add milk to the list?".
_OFFERED = re.compile(
    r"\b(?:(?:should|shall|do|does|did|have|has)\s+(?:i|we|you)|(?:want|like)\s+me\s+to)"
    r"\s+(?:also\s+|really\s+|still\s+|just\s+)?$",
    re.I,
)
#: "Do we need to buy milk?", "Do I really need to get eggs?": a question, not a need.
_NEED_ASKED = re.compile(
    r"\b(?:do|does|did)\s+(?:i|we|you)\s+(?:also\s+|really\s+|still\s+)?need\s+to\b", re.I
)


def _asked(body: str, match: re.Match[str]) -> bool:
    """Whether the list operation ``match`` found in ``body`` is a question or an offer
    (:data:`_OFFERED`, :data:`_NEED_ASKED`): it changes no list."""
    before = body[max(0, match.start() - 40) : match.start()]
    return (
        _OFFERED.search(before) is not None
        or _NEED_ASKED.search(before[-12:] + match.group(0)) is not None
    )


def _list_op(body: str, lower: str) -> tuple[str, frozenset[str], str | None, str | None] | None:
    """``(op, items, list, head)`` of a list operation, if the text is one (``head``: see
    :func:`_item_head`). A question or an offer is none (:func:`_asked`)."""
    listy = "list" in lower or "shop" in lower
    for pattern, op, needed in (
        (_LIST_REMOVE, "remove", listy),
        (_LIST_ADD, "add", listy),
        (_LIST_HEADER, "add", "list:" in lower),
        (_LIST_NEED, "add", True),
    ):
        lm = pattern.search(body) if needed else None
        if lm and not _asked(body, lm):
            items, head = _item_words(lm.group("item"), body)
            if items:
                return op, items, _list_name(lower), head
    nm = _NO_NEED.search(body) if "need" in lower else None
    if nm and _norm_words(nm.group("item")) and not _asked(body, nm):
        return "remove", _norm_words(nm.group("item")), None, _item_head(nm.group("item"))
    hm = _HAVE_IT.search(body) if "already" in lower or " off" in lower else None
    if hm and not _asked(body, hm):
        item = hm.group("item") or hm.group("item2") or hm.group("pron")
        items, head = _item_words(item, body)
        if items:
            return "remove", items, _list_name(lower), head
    om = _OUT_OF.search(body) if "out of" in lower or "low on" in lower else None
    if om and _norm_words(om.group("item")) and not _asked(body, om):
        return "add", _norm_words(om.group("item")), "shopping", _item_head(om.group("item"))
    for sentence in re.split(r"(?<=[.!?])\s+", body):
        clean = _strip_label(sentence)
        for pattern, op in ((_LIST_DROP, "remove"), (_BARE_REMOVE, "remove"), (_BARE_ADD, "add")):
            dm = pattern.search(clean)
            if dm and not re.search(r"\b(?:to|from|in|into|on|onto|for|with)\b", dm.group("item")):
                items = _norm_words(dm.group("item")) - _VALUE_FILLER
                if items:
                    return op, items, _list_name(lower), _item_head(dm.group("item"))
    return None


#: People a "my ..." phrase can name, so that a following "she"/"he"/"they" is them.
_PERSON = (
    r"(?:sister|brother|sibling|mum|mom|mother|dad|father|parents?|partner|wife|husband|son|"
    r"daughter|boss|manager|friend|colleague|neighbou?r|aunt|uncle|cousin|gran|grandma|"
    r"grandmother|grandad|granddad|grandfather|niece|nephew|flatmate|roommate|housemate|"
    r"girlfriend|boyfriend|fianc[eé]e?|kids?|children|child|landlord|landlady|teacher|"
    r"doctor|dentist|coach|mentor|lead|in-laws?)"
)
# matched on parse()'s text, its apostrophes straightened
_TOPIC = re.compile(
    r"(?P<head>\b(?P<topic>(?:my|our)\s+(?:[a-z\-]+\s+)?" + _PERSON + r")\b(?!'s\b)"
    r"[^.!?:;]{0,60}"
    r"[.!?:;]\s+)(?:she|he|they)\b",
    re.I,
)


_PRONOUN = re.compile(r"\b(?:she|he|they)\b", re.I)


def _resolve_pronouns(body: str) -> str:
    """ "Update on my sister: she lives in Leeds now" -> "...: my sister lives in Leeds now"."""
    if not _PRONOUN.search(body):
        return body

    def bind(m: re.Match[str]) -> str:
        # another person named between ("My boss Priya introduced me to Tom. He is ..."):
        # the pronoun may be theirs; the topic's own name right after it does not count
        between = m.group("head")[len(m.group("topic")) :]
        names = _CAPITALISED.findall(between)
        if names and (len(names) > 1 or not between.lstrip().startswith(names[0])):
            return m.group(0)
        return m.group("head") + m.group("topic").lower()

    return _TOPIC.sub(bind, body)


_CAPITALISED = re.compile(rf"(?<![.!?]\s)(?<!^)\b{UPPER}{LOWER}+\b")


#: Words before a statement that make it someone else's, a question or a supposition:
#: "Tom told me: my favourite drink is coffee", "find out if my favourite restaurant is
#: open", "worst case: the budget is £20k".
_NOT_STATED = re.compile(
    r"\b(?:if|whether|ask|asked|asking|check|checking|see|wonder|wondering|find out|"
    r"what|what's|which|who|where|when|why|how|worst case|best case|hypothetically|"
    r"suppose|supposing|imagine|in theory|plan b|"
    # a game, a story, a translation: "Pretend my favourite colour is red", "In the
    # story, ...", "Translate to French: ..." (names: "Let's role-play: call me Captain")
    rf"{PLAYED}|"
    # another's words; "I'd say", "as I said", "I think" are the speaker's own
    rf"(?<!\bi )(?<!\bi'd )(?<!\bwe )(?:{_REPORTING}))\b(?:\s+(?:me|us|him|her|them|you))?\W*$",
    re.I,
)
#: A question's start ("what's my ...?", "remind me, which ...?").
_QUESTION = re.compile(
    r"(?:^|(?<=[.!?])\s+)(?:(?:remind me|tell me|quick question|so|and|but|ok|okay|hey|hi|"
    r"sorry|actually|oh|um|wait|btw|by the way)"
    r"\W+)*(?:what|what's|which|who|who's|whose|where|where's|when|when's|why|how|is|are|"
    r"am|was|were|do|does|did|can|could|will|would|should|have|has|any idea)\b[^.!?]*\?",
    re.I,
)
#: "I'm allergic to shellfish too", "our office is also in Berlin": one more value, not
#: a new one.
_ADDITIVE = re.compile(r"\b(?:too|as well|also)\b", re.I)
_ADDITIVE_TRIGGERS = ("too", "as well", "also")


def _additive(text: str) -> re.Match[str] | None:
    """:data:`_ADDITIVE`'s first match in ``text`` (most texts hold none of its words)."""
    return _ADDITIVE.search(text) if may_match(text.lower(), _ADDITIVE_TRIGGERS) else None


#: A label that says the words are another's: "Email from Tom:", "Forwarded from Dana:".
_FROM_ANOTHER = re.compile(
    r"\b(?:forwarded|fwd|fw|quote|quoting|cc|(?:e-?mail|message|text|letter|dm|reply|words)"
    r"\s+from)\b",
    re.I,
)
#: Items named in a list: "eggs, milk and bread", "eggs & milk".
_SEVERAL = re.compile(r",\s*\w|\s(?:and|&|plus)\s", re.I)
#: A condition after a value: what it will be only then.
_CONDITION = re.compile(
    r"\b(?:if|unless|in case|provided|assuming|as long as|should (?:we|i|they|you))\b", re.I
)
#: Subjects that hold several values at once: a new one adds, only a rejection
#: ("I'm not allergic to penicillin after all") or a restatement replaces.
_ADDED_UP = ("|allergy",)


_PREPOSITIONS = _word_set(
    "in at on from to with by near under for off out inside outside behind above "
    "below into onto over across beside between of"
)
_NUMBER_WORDS = _word_set(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty "
    "seventy eighty ninety hundred thousand half"
)
_DETERMINERS = _word_set("a an the my our his her their your its this that some")
#: A value that is a number: "40k", "£1,600", "3.5m" (not "7tulips").
_AMOUNT = re.compile(r"[£$€]?\d[\d,.]*(?:k|m|bn|%)?", re.I)
_WHEN = re.compile(
    r"\b(?:today|tomorrow|tonight|yesterday|noon|midday|midnight|next|weekend|morning|"
    r"afternoon|evening)\b",
    re.I,
)


def _value_kind(text: str, verb: str = "") -> str:
    """What a copula's value says, so that two values of one subject compete only when
    they answer the same question: ``amount`` (a number: "ten", "40k"; any age "turned"
    gives), ``when`` (a day, date or time), the preposition it starts with (``in``,
    ``from``...: a place, an origin), ``adj:<word>`` ("allergic to ..."), else ``state``
    ("a blue Golf", "vegetarian"). "My flight is on Tuesday" and "my flight is from
    Gatwick" are both true."""
    clause = _CLAUSE_END.split(text.strip(), maxsplit=1)[0].lower()
    clause = re.sub(r"^(?:now|actually|still|currently|as)\s+", "", clause)
    words = re.findall(r"[£$€]?[\w'\-]+(?:[.,]\d+)*", clause)
    approx = ("about", "around", "roughly", "nearly", "almost", "over", "under")
    number = len(words) > 1 and (words[1][:1] in "£$€0123456789" or words[1] in _NUMBER_WORDS)
    if number and words[0] in approx:
        words = words[1:]
    first = words[0] if words else ""
    if verb.endswith("turned") or first.split("-")[0] in _NUMBER_WORDS:
        return "amount"  # "ten", "twenty-five thousand"
    if {kind for kind, _ in _quantities(clause)} & {"time", "day", "date"}:
        return "when"
    if _WHEN.search(clause):
        return "when"
    if _AMOUNT.fullmatch(first):
        return "amount"  # "40k", "£1,600", "3.5m"; not "7tulips" (a password, say)
    if first in _PREPOSITIONS:
        return first
    if len(words) > 1 and words[1] in _PREPOSITIONS and first not in _DETERMINERS:
        return f"adj:{first}"
    return "state"


def _stated(clean: str, start: int) -> bool:
    """Whether a statement found at ``start`` of ``clean`` is the speaker's own (not
    after "Tom told me", "Forwarded from Dana:", ...)."""
    before = clean[:start]
    label, colon, _ = before.rpartition(": ")
    return _NOT_STATED.search(before) is None and not (colon and _FROM_ANOTHER.search(label))


def _subject_value(
    sentences: list[str], lower: str, speaker: str | None, timely: bool
) -> tuple[str, frozenset[str], bool] | None:
    """``(subject key, value, episodic)`` of the first subject = value statement."""
    fav = _has(lower, ("favo", "fave", "fav ", "preferred", "go-to", "go to", "usual"))
    tails = [
        part
        for s in sentences
        if ": " in s[:80]
        for label, part in [s.split(": ", 1)]
        if _NOT_STATED.search(label + ":") is None  # "Tom told me: ...", "Worst case: ..."
        and _FROM_ANOTHER.search(label) is None  # "Email from Tom: ...", "Forwarded: ..."
    ]
    for sentence in [*sentences, *tails]:
        clean = _strip_label(_QUESTION.sub(" ", sentence) if "?" in sentence else sentence)
        if not clean or (clean.endswith("?") and "? " not in clean):
            continue  # a question states no fact
        # (most sentences hold no "too", "also" or "as well": one search rules them out)
        additive = _additive(sentence) or _additive(clean)
        lead = additive and _LEADING.match(_LABEL.sub("", sentence, count=1).lstrip())
        if additive and (
            (lead and _additive(lead.group(0)))
            or any(
                # the first clause, and that of each labelled part ("Another one: ... also")
                _additive(_CLAUSE_END.split(part, maxsplit=1)[0])
                for part in [clean, *sentence.split(": ")[1:]]
            )
        ):
            # one more value ("allergic to shellfish too"), not a new one; "also" in a
            # later clause ("Priya, who also leads design") says nothing of this one
            continue
        if fav or "choice" in lower or " best" in lower or " most" in lower:
            for pattern in (_FAV_A, _FAV_C, _FAV_B, _FAV_OF_CHOICE, _FAV_BEST):
                fm = pattern.search(clean)
                if fm and _stated(clean, fm.start()):
                    subj = _subject_words(fm.group("subj"))
                    if set(subj.split()) <= _VALUE_FILLER:
                        subj = "*"  # "matcha is my go-to now"
                    val = fm.group("val")
                    if fm.re is _FAV_B:  # "If you ever need to know, summer is my ..."
                        val = re.split(r"\s*[,:;]\s+", val)[-1]
                    value = _value(val, subj)
                    if value:
                        owner = fm.groupdict().get("owner") or "my"
                        return f"{_owner(owner, speaker)}|favourite {subj}", value, False
            nm = _FAV_NOUNLESS.search(clean) if fav else None
            if nm and _stated(clean, nm.start()):
                value = _value(nm.group("val") or nm.group("val2"))
                if value:
                    return f"{_owner('my', speaker)}|favourite *", value, False
        # every preference-verb and self-fact pattern starts with "I" or "we"
        first_person = _FIRST_PERSON.search(clean) is not None
        for pattern, needs_time in _PREF_VERBS if first_person else ():
            pm = pattern.search(clean)
            if not pm or (needs_time and not timely and not pm.groupdict().get("more")):
                continue
            if not _stated(clean, pm.start()):
                continue
            cat = pm.groupdict().get("cat")
            if cat and _SCOPE.search(pm.group("val")):
                continue  # a habit in one setting: "I mostly drink water during the day"
            value = _value(pm.group("val"))
            if value:
                subj = _VERB_CATEGORY[cat.lower()] if cat else "*"
                return f"{_owner('my', speaker)}|favourite {subj}", value, False
        # a whole sentence: nothing before it can report it as another's
        rm = (_REPLY_IN.match(clean) or _REPLY_NOT.match(clean)) if " in " in clean else None
        if rm:
            value = _value(rm.group("val"))
            if value and rm.re is _REPLY_NOT:
                value = frozenset(_NOT + w for w in value)
            if value:
                return f"{_owner('my', speaker)}|reply language", value, False
        sm = _SELF.search(clean) if first_person else None
        if sm and _stated(clean, sm.start()):
            rel = (sm.group("rel") or sm.group("rel2")).lower()
            value = _value(sm.group("val") or sm.group("val2"))
            if not _works_for_whom(rel.rpartition(" ")[2], sm.group("val") or sm.group("val2")):
                value = frozenset()  # "I work at a fast pace", "I work as hard as anyone"
            if value:
                return f"{_owner('my', speaker)}|{_SELF_KEY[rel]}", value, False
        dm = _SELF_DIET.search(clean) if first_person else None
        if dm and _stated(clean, dm.start()):
            diet = dm.group("val").lower().replace("pescetarian", "pescatarian")
            return f"{_owner('my', speaker)}|diet", frozenset({diet}), False
        xm = _SELF_CHANGE.search(clean) if first_person else None
        if (
            xm
            and _stated(clean, xm.start())
            and not _SELF_CHANGE_NOT.search(xm.group("rest"))
            and not _past(clean)  # "In 2015 I moved to Rome", "Years ago I joined ..."
            and (not xm.group("joined") or _JOINED_EMPLOYER.search(xm.group("rest")))
            and (not xm.group("home") or _a_home(xm))  # not "I moved to Rust for the backend"
        ):
            value = _value(xm.group("val"))
            if value:
                key = "home|live" if xm.group("home") else "job|work"
                return f"{_owner('my', speaker)}|{key}", value, False
        person = _named_person(clean)  # (anchored: most sentences fail at once)
        if person is not None:
            return f"{_owner('my', speaker)}|{person[0]}", person[1], False
        cm = _COPULA.search(clean) or _MOVED.search(clean) or _THERE_ARE.search(clean)
        if cm and _CONDITION.search(cm.group("val")):
            cm = None  # "the deadline will be May 30th if we lose the contractor"
        if cm:
            subj = _subject_words(cm.group("subj"))
            value = _value(cm.group("val"), subj)
            if value and len(subj.split()) <= 4:
                verb_text = cm.group("verb").lower()
                verb = _VERB_CLASS.get(verb_text, "be")
                if verb == "work" and not _works_for_whom(*cm.group("val").split(None, 1)):
                    continue  # "my sister works at a fast pace": how, not for whom
                if verb == "work" and cm.group("val").lower().startswith("as "):
                    verb = "be"  # "works as a chef" says what they are
                if cm.re is _MOVED:
                    verb = "moved"
                if verb in ("be", "moved"):  # which question the value answers
                    fits = _verb_kind(cm, _value_kind(cm.group("val"), verb_text), subj)
                    if fits is None:
                        continue
                    if fits == "state" and _PERSON_SUBJECT.search(subj):
                        fits = _person_state(cm.group("val"))
                    verb = f"{verb}:{fits}"
                episodic = bool(set(subj.split()) & _EPISODIC)
                if " and " in cm.group("subj"):
                    continue
                owner = _owner(cm.group("owner"), speaker)
                if subj in ("address", "home address") and owner.startswith("@"):
                    # where the speaker lives, as "I live at 12 Baker Street" says it
                    return f"{owner}|home|live", value, episodic
                key = f"{owner}|{subj}|{verb}"
                return key, value, episodic
    return None


#: A subject that is a person ("sister", "older brother", "partner"), as normalised.
_PERSON_SUBJECT = re.compile(rf"(?:^|\s){_PERSON}$")
#: Adjectives that say what a person does, as a noun does ("retired" after "a teacher").
_JOB_STATES = _word_set("retired unemployed self-employed freelance jobless redundant")
#: What a person eats or drinks, noun or adjective ("a vegetarian", "vegan").
_DIETS = _word_set(
    "vegetarian vegan pescatarian flexitarian coeliac celiac diabetic teetotal teetotaller"
)


def _person_state(value: str) -> str:
    """Which question a person's "is" answers (the state kind of :func:`_value_kind`):
    ``diet`` ("vegetarian", "a vegan"), ``kind`` (what they are or do: "a nurse", "an
    engineer", "retired"), else ``state`` (how they are: "pregnant", "shy"). "My sister
    is a nurse" and "my sister is pregnant" are both true; "my dad is a teacher" and
    "my dad is retired now" are not."""
    words = re.findall(r"[a-z][a-z'\-]*", value.lower())
    while words and words[0] in ("now", "actually", "still", "currently", "also", "very", "as"):
        words = words[1:]
    article = bool(words) and words[0] in ("a", "an")
    first = words[1] if article and len(words) > 1 else (words[0] if words else "")
    if first in _DIETS:
        return "diet"
    return "kind" if article or first in _JOB_STATES else "state"


def _verb_kind(cm: re.Match[str], kind: str, subj: str) -> str | None:
    """The kind of the value ``cm`` found (:func:`_value_kind` said ``kind``), or
    ``None`` if it does not suit its verb: a verb of a date ("pushed back to",
    "rescheduled for", "moved X for") needs a day, date or time (a month alone is one
    there: "pushed back to May"); "changed to" a date, an amount or an attribute's new
    value (see :data:`_ATTRIBUTES`)."""
    verb = cm.group("verb").lower()
    if cm.re is _THERE_ARE or _AMOUNT_VERB.search(verb):
        return kind if kind == "amount" else None  # a count; grew or fell to an amount
    dated = _DATED_VERB.search(verb) or (cm.re is _MOVED and cm.group("for") is not None)
    if dated and kind != "when":
        first = cm.group("val").strip().split(maxsplit=1)[0].strip(".,;!?").lower()
        kind = "when" if first in _MONTHS else kind
    if cm.re is _MOVED:
        return kind if cm.group("for") is None or kind == "when" else None
    if "changed" in verb:
        return kind if kind in ("when", "amount") or subj.split()[-1] in _ATTRIBUTES else None
    if dated:
        return kind if kind == "when" else None
    return kind


# "'s" for "is" or "has" after a lowercase noun ("my flight's on Tuesday", "the
# meeting's been moved"), where the word after it cannot follow a possessive: a
# preposition, an article or possessive pronoun, "been", "called" (after "now", "still"
# or "not" too). A name may be a place ("the McDonald's in York"). Pronouns and
# question words keep theirs ("it's", "what's", "let's": parsed as they are).
_NOT_NOUN = (
    r"(?!(?:it|that|what|there|here|he|she|who|where|when|how|why|let|this|one|"
    r"everyone|everything|nothing|something|someone|somebody|nobody|anyone|anything)'s)"
)
_IS_CONTRACTION = re.compile(
    # a lowercase noun: "the McDonald's in York" is a place, not "McDonald is in York"
    rf"\b{_NOT_NOUN}(?P<noun>(?-i:[a-z0-9]+))'s(?=[ \t]+"
    r"(?:(?:now|still|actually|currently|not|also|finally|officially)[ \t]+)?"
    r"(?P<next>been|in|at|on|from|with|due|a|an|the|my|our|his|her|their|your|out|off|"
    r"over|called|named)(?![\w'-]))",
    re.IGNORECASE,
)
# "My favourite colour's blue.", "my birthday's tomorrow!", "the budget's 50k now." --
# the last word of a sentence that opens with "my", "our" (or, before a day or a number,
# "the") and up to three words, when they name a favourite or the word is a day or a
# number ("I borrowed my sister's car.",
# "My dad's dog, Max." and "My partner works at St Mary's Hospital" stay possessives)
_IS_TAIL = r"(?:[ \t]+(?:now|these days|nowadays|again|instead))?[ \t]*(?:[.!?]|$))"
_IS_LAST = re.compile(
    r"^(?:(?P<fav>(?:my|our)(?:[ \t]+[^\W\d_]+){0,2}[ \t]+favou?rite(?:[ \t]+[^\W\d_]+){1,2})"
    r"'s(?=[ \t]+(?:now[ \t]+)?[\w-]+" + _IS_TAIL + "|"
    r"(?P<head>(?:my|our|the)(?:[ \t]+(?-i:[a-z]+)){1,3})'s(?=[ \t]+(?:now[ \t]+)?"
    r"(?:today|tonight|tomorrow|[£$€]?\d[\w.,:]*|" + _WEEKDAY + r")\b" + _IS_TAIL + ")",
    re.IGNORECASE | re.MULTILINE,
)


def _expand_is(body: str) -> str:
    """Spell out "'s" where it means "is" or "has": before what cannot follow a
    possessive (:data:`_IS_CONTRACTION`), or before a sentence's last word after "my
    favourite ..." or a day or number after "my ..." (:data:`_IS_LAST`)."""
    if "'s" not in body:
        return body
    body = _IS_LAST.sub(lambda m: (m.group("fav") or m.group("head")) + " is", body)
    return _IS_CONTRACTION.sub(
        lambda m: m.group("noun") + (" has" if m.group("next").lower() == "been" else " is"),
        body,
    )


@functools.lru_cache(maxsize=8_192)
def parse(text: str) -> Statement:
    """Parse one memory text (see the module doc for the rule). The last 8,192 are cached
    (a write's candidates are mostly the same recent memories): about 2 KB each for a chat
    turn, 18 KB for a 1,000-character chunk; 65,536 held up to 1.2 GB of chunks."""
    # typographic apostrophes (phones, word processors, most LLM output) read as "'":
    # "I don’t live in Paris anymore" negates as "I don't" does
    # and "café" typed as "e" and a combining accent reads as the composed "café"
    speaker, body = split_speaker(composed(text))
    body = _expand_is(body)
    lower = body.lower()
    # cheap keyword checks first: most texts state no fact and skip most regexes
    cue = may_match(lower, _CUE_TRIGGERS) and bool(_CUES.search(body))
    negation = may_match(lower, _NEGATION_TRIGGERS) and bool(_NEGATION.search(body))
    rejections = (
        [
            (m.group("diet") is not None, _norm_words(m.group("neg")))
            for m in _NEGATED.finditer(body)
        ]
        if may_match(lower, _NEGATED_TRIGGERS)
        else []
    )
    negated = frozenset(w for _, ws in rejections for w in ws)
    # "I'm not vegetarian, but my wife is": a diet rejected as the speaker's only
    diet_only = frozenset(w for diet, ws in rejections if diet for w in ws).difference(
        *(ws for diet, ws in rejections if not diet)
    )
    words = _norm_words(body)
    base: dict[str, Any] = {  # Statement's fields every kind of statement has
        "speaker": speaker,
        "cue": cue,
        # a cue inside a question corrects nothing ("Sorry, what was my cat called?")
        "strong_cue": cue
        and bool(_STRONG_CUES.search(_QUESTION.sub(" ", body) if "?" in body else body)),
        "negation": negation,
        "words": words,
        "negated": negated - _VALUE_FILLER,
        "own_diet_negated": diet_only - _VALUE_FILLER,
        "quantities": _quantities(lower),
        "liking": may_match(lower, _LIKING_TRIGGERS) and _LIKING.search(body) is not None,
        "one_off": (one_off := _one_off(body, lower)),
        "temporary": one_off and _TEMPORARY.search(body) is not None,
        "switched": _switched(body, lower),
        "routine": may_match(lower, _ROUTINE_TRIGGERS) and _ROUTINE.search(body) is not None,
        "corrects": cue  # (only read after a strong cue)
        and (
            negation
            or bool(negated)
            or bool(_CORRECTS.search(body) or _CORRECTS.search(_strip_label(body)))
        )
        and not _additive(body),
    }
    op = _list_op(body, lower)
    if op is not None:
        several = op[0] == "add" and len(op[1]) > 1 and _SEVERAL.search(body) is not None
        return Statement(
            op=op[0], items=op[1], list_name=op[2], item_head=op[3], several=several, **base
        )
    own = QUOTED.sub(" ", body) if '"' in body or "“" in body else body  # not quoted words
    if may_match(lower, _NAME_TRIGGERS):
        # quoted words are another's or a phrase's ('How do I say "my name is Pedro"?')
        # not another's "call me" ("My kids call me Dad") nor a title ("Call me Maybe is
        # ..."): the first that is the speaker's own
        nm = next(
            (m for m in _NAME.finditer(own) if not (m["call"] and anothers_call(own, *m.span()))),
            None,
        ) or _USE_NAME.search(own)
        if nm and _stated(own, nm.start()) and not refused_or_asked(own, nm.start()):
            value = frozenset({nm.group("val").lower()})
            return Statement(subject=f"@{speaker or ''}|name", value=value, **base)
    first = re.split(r"(?<=[.!?])\s+", _resolve_pronouns(own))
    # clauses after ", so" / "; ": "Marcus is moving teams, so my new manager is Priya"
    first += [c for part in first for c in _CLAUSES.split(part)[1:] if c]
    # and after a leading clause: "I got a raise, my salary is 58k" ("If we lose the
    # client, the budget is 20k" and "Tom said, ..." state nothing: not split)
    first += [tail for part in first if (tail := _after_lead(part))]
    timely = bool(_NOW.search(body)) if may_match(lower, _NOW_TRIGGERS) else False
    found = _subject_value([*first, own] if len(first) > 1 else first, lower, speaker, timely)
    if not found and negated and "it" in lower:
        im = _ITS.search(body)
        value = _value(im.group("val")) - negated if im else frozenset()
        if value:  # a replacement whose subject is not said: never "same" as another
            liking = _has(lower, ("like", "love", "prefer", "best", "favo", "into"))
            found = (f"{_owner('my', speaker)}|{'favourite *' if liking else '?'}", value, False)
    if found:
        subject, value, episodic = found
        value = value - negated or value  # "I like pho even more than moussaka"
        moved = subject.endswith(_ONE_PER_OWNER) and _SELF_CHANGE.search(own) is not None
        return Statement(subject=subject, value=value, episodic=episodic, moved=moved, **base)
    return Statement(**base)


_NOW_TRIGGERS = (
    "now",
    "days",
    "lately",
    "moment",
    "currently",
    "more",
    "recently",
    "forward",
    "instead",
)


#: Where one fact of a text may end and another start: a sentence's or line's end, "; ",
#: "and", "but" ("I live in Porto and work at Google"). Not ", so": what follows is what
#: the fact means ("The launch is on 14 March, so the clock is ticking").
_FACT_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+|;\s+|,?\s+(?:and|but)\s+(?:also\s+)?", re.I)
_FACT_SPLIT_TRIGGERS = (".", "!", "?", "\n", ";", " and ", " but ")
#: Words a clause opens with that are not a verb sharing the subject before it.
_NOT_A_VERB = _DETERMINERS | _word_set("i we you he she they it there here which who that")


def _subject_phrase(clause: str) -> str | None:
    """What a clause's statement is about, to read a clause after it that has none of its
    own ("... and work at Google"): "I" or "we", or the words before a copula's verb
    ("My sister" of "My sister lives in Porto")."""
    fm = re.match(r"(?:i|we)\b", clause, re.I)
    if fm:
        return fm.group(0)
    nm = _NAMED_PERSON.match(clause)
    if nm and _a_name(nm.group("name")):
        return nm.group("name")  # "Tom lives in Leeds and works at Globex"
    expanded = _expand_is(clause)
    cm = _COPULA.match(expanded)
    return expanded[: cm.start("verb")].strip() if cm else None


@functools.lru_cache(maxsize=8_192)
def _facts(text: str) -> frozenset[str]:
    """The subjects of every fact ``text`` states (owners read as the unknown speaker's:
    one text has one speaker): each sentence and each "and", "but", ";" clause, parsed
    on its own, a clause with no subject of its own read with the one before it ("I live
    in Porto and work at Google": a home and an employer; "my sister lives in Porto and
    is a nurse": where she lives and what she does). Additions count ("... and I'm also
    allergic to peanuts")."""
    found = set()
    if (whole := parse(text).subject) is not None:
        found.add(whole)
    _, body = split_speaker(composed(text))
    if may_match(body.lower(), _FACT_SPLIT_TRIGGERS):
        carry: str | None = None
        for part in _FACT_SPLIT.split(_resolve_pronouns(body)):
            clause = _strip_label(_ADDITIVE.sub(" ", part)).strip()
            if not clause:
                continue
            subject = parse(clause).subject
            first = clause.split(maxsplit=1)[0].lower()
            if subject is None and carry and clause[0].islower() and first not in _NOT_A_VERB:
                subject = parse(f"{carry} {clause}").subject  # "... and work at Google"
            else:
                carry = _subject_phrase(clause)
            if subject is not None:
                found.add(subject)
    return frozenset(re.sub(r"^@[^|]*", "@", subject) for subject in found)


def _compound(new: str, old: str) -> bool:
    """Whether ``old`` states facts of several subjects (:func:`_facts`) and ``new``
    restates only some of them: like a summary, it stays, for the others still hold."""
    old_facts = _facts(old)
    if len(old_facts) < 2:
        return False
    new_facts = _facts(new)
    return not all(any(_subject_relation(n, o) == "same" for n in new_facts) for o in old_facts)


#: The words older statements of a self-fact key use ("I live in London" is a ``home``,
#: "I work at Acme" a ``job``): the key alone is a word they need not hold.
_SUBJECT_QUERY = {
    "home": "home live lives living based moved address",
    "job": "job work works working employer company joined role",
    "allergy": "allergy allergic allergies",
    "spouse": "married engaged wife husband partner spouse",
    "diet": "vegetarian vegan pescatarian pescetarian flexitarian plant-based diet",
}


def subject_query(statement: Statement) -> str | None:
    """Words that find older statements of the same subject by keyword (BM25), however
    far back and however unlike the new text they are: ``"favourite colour best"``."""
    if statement.subject is None:
        return None
    subject = statement.subject.split("|")[1]
    if subject in _SUBJECT_QUERY:  # a key the rules name: the words its statements use
        return _SUBJECT_QUERY[subject]
    if subject == "name":
        return "name call calls called going by"
    if subject.startswith("favourite"):
        return f"{subject.replace('*', '')} best prefer"
    return subject if subject != "?" else None


def _refused_language(value: frozenset[str]) -> frozenset[str] | None:
    """The language a ``reply language`` value refuses (``{"not:french"}`` ->
    ``{"french"}``), or ``None`` for a language to reply in."""
    if not value or not all(w.startswith(_NOT) for w in value):
        return None
    return frozenset(w[len(_NOT) :] for w in value)


def _owners_match(a: str, b: str) -> bool:
    """Same owner; ``@`` (the unknown speaker's "my") matches another speaker's "my",
    but never that of a speaker whose "I" is not the user's
    (:data:`~oblivion_core.speakers.NOT_THE_USER`): "assistant: my name is Ada" neither
    replaces nor is replaced by a bare "My name is Robert". A named speaker's does match
    it: a label such as "Flight:" or "Confession:" reads as a name, and the user's own
    lines open with them ("Flight: my flight is on Thursday now")."""
    if a == b:
        return True
    if a.startswith("@") and b.startswith("@") and "@" in (a, b):
        return (a if b == "@" else b)[1:] not in NOT_THE_USER
    if "the" in (a, b):  # "the flight" is the speaker's flight too
        return a.startswith("@") or b.startswith("@")
    return a.lstrip("@") == b.lstrip("@") and a not in ("@", "the") and b not in ("@", "the")


def _other_side(new: str | None, old: str | None) -> bool:
    """Whether one of two texts is unlabelled and the other's speaker one whose "I" is
    never the user's (the assistant, a system, a tool, a support agent: see
    :func:`_owners_match`)."""
    return (new is None) != (old is None) and (new or old) in NOT_THE_USER


def _speakers_own(subject: str | None) -> bool:
    """Whether ``subject`` is a thing of the speaker's own ("my bank", "my editor of
    choice", "I work at ..."), not someone else's that "my" reaches ("my sister's
    bank")."""
    if not subject or not subject.startswith("@"):
        return False
    words = subject.split("|")[1].split()[:-1]
    return not any(w.endswith("'") or _PERSON_SUBJECT.search(w) for w in words)


def _subject_head(subject: str) -> str:
    """The head noun of a subject key ("@user|flight|be" -> "flight")."""
    words = subject.split("|")[1].split()
    return words[-1] if words else ""


#: Units that say which question an amount answers: how long, or how far.
_UNIT_QUESTION = {
    **dict.fromkeys(_word_set("second minute min hour hr week month year"), "how long"),
    **dict.fromkeys(_word_set("mile km kilometre kilometer metre meter yard foot feet"), "how far"),
}


def _questions(s: Statement) -> set[str]:
    """Which questions an "is" statement's value answers, when its words say: a time of
    day or a calendar day for a ``when``, how long or how far for an ``amount``."""
    kind = (s.subject or "").rpartition(":")[2]
    if kind == "when":
        return {"clock" if k == "time" else "calendar" for k, _ in s.quantities if k != "money"}
    if kind == "amount":
        return {_UNIT_QUESTION[w] for w in s.words if w in _UNIT_QUESTION}
    return set()


def _says_moved(s: Statement) -> bool:
    """Whether ``s`` states its value with a verb of a move ("the meeting has moved to
    Thursday", "the airline moved my flight to ...")."""
    return (s.subject or "").rpartition("|")[2].startswith("moved")


def _exception(new: Statement, old: Statement) -> bool:
    """Whether ``new`` is a one-off exception that leaves ``old`` standing: it holds for a
    bounded time and ``old`` does not, and ``old`` is a routine ("my gym class is on
    Wednesday this week" after "... on Mondays"), or ``new`` says it is an exception
    ("my commute is by bus this week because of the strike") and nothing of a change (no
    cue, no "moved to"). "The deadline is today" after "the deadline is Friday" is a
    change: nothing says Friday still holds."""
    if not new.one_off or old.one_off:
        return False
    return old.routine or (new.temporary and not (new.cue or _says_moved(new)))


def _other_question(new: Statement, old: Statement) -> bool:
    """Two values of one subject that answer different questions of one kind, so both
    hold: a date and a time of day ("the wedding is on June 14th" / "the wedding is at
    2pm"), a duration and a distance ("my commute is 40 minutes" / "... 12 miles")."""
    a, b = _questions(new), _questions(old)
    return bool(a) and bool(b) and not a & b


def _subject_relation(a: str, b: str) -> str:
    """``"same"``, ``"maybe"`` (one preference has no noun) or ``"different"``."""
    a_owner, _, a_subj = a.partition("|")
    b_owner, _, b_subj = b.partition("|")
    if not _owners_match(a_owner, b_owner):
        return "different"
    if a_subj == b_subj == "favourite *":
        # "I prefer green tea" / "I prefer meetings before noon": two noun-less
        # preferences may be about anything; only the most similar one may match
        return "maybe"
    if a_subj == b_subj:
        return "different" if a_subj == "?" else "same"
    a_words, b_words = a_subj.split("|")[0].split(), b_subj.split("|")[0].split()
    if a_words == b_words and "|" in a_subj and "|" in b_subj:  # copula: compare verb classes
        verbs = {a_subj.rpartition("|")[2], b_subj.rpartition("|")[2]}
        classes = {v.partition(":")[0] for v in verbs}
        if "moved" not in classes or not classes <= {"moved", "be", "live"}:
            return "different"
        # moved to a day is a day's change, moved to a place a place's
        kinds = {v.partition(":")[2] for v in verbs} - {""}
        return (
            "same"
            if len(kinds) <= 1 or kinds <= {"in", "at", "state", "kind", "diet"}
            else "different"
        )
    if a_words[:1] != ["favourite"] or b_words[:1] != ["favourite"]:
        return "different"
    if "*" in (a_words[-1], b_words[-1]):
        return "maybe"
    # head-noun matching: "favourite drink" = "favourite hot drink", but not "cold drink"
    if a_words[-1] == b_words[-1] and (len(a_words) == 2 or len(b_words) == 2):
        return "same"
    return "different"


#: Values that say which named favourite a noun-less preference is about, however little
#: the model sees it: "I've switched to matcha" is 0.11 like "my favourite drink is tea"
#: on the default model, "I prefer the window seat now" 0.30.
_KINDS_OF_VALUE = {
    "drink": _word_set(
        "tea coffee matcha latte espresso cappuccino americano macchiato mocha chai cocoa "
        "juice lemonade smoothie kombucha soda cola beer ale lager stout cider wine gin "
        "vodka whisky whiskey rum tequila champagne prosecco cocktail mojito"
    ),
    "colour": _word_set(
        "red orange yellow green blue purple violet pink brown black white grey gray teal "
        "turquoise navy crimson maroon indigo lilac lavender beige"
    ),
}


def _kind_of_value(value: frozenset[str]) -> str | None:
    """The one favourite :data:`_KINDS_OF_VALUE` says ``value`` is of ("matcha": a
    drink), or ``None`` (none, or two: "green tea")."""
    kinds = [kind for kind, words in _KINDS_OF_VALUE.items() if not words.isdisjoint(value)]
    return kinds[0] if len(kinds) == 1 else None


def _narrower(new: str | None, old: str | None) -> bool:
    """Whether ``new`` is a favourite of a kind of ``old``'s ("favourite Christmas movie"
    of "favourite movie"): one more, unless the new text says it changed."""
    a, b = (s.partition("|")[2].split("|")[0].split() for s in (new or "", old or ""))
    return a[:1] == b[:1] == ["favourite"] and len(a) > len(b) == 2


@runtime_checkable
class SupersessionJudge(Protocol):
    """Decides whether ``new`` replaces the fact stated in ``old``."""

    def supersedes(self, new: str, old: str, similarity: float) -> bool:
        """True if ``new`` makes ``old`` stale."""
        ...


_PREFERENCE_SLACK = 0.15


#: Verbs that say a new text is about liking something: its rejection of a favourite's
#: value is a change of favourite ("I've gone off tea"), where "I had tea instead of
#: coffee this morning" says nothing of one.
_LIKING = re.compile(
    r"\b(?:like|likes|liked|love|loves|loved|prefer|prefers|preferred|favou?rite|fave|"
    r"gone off|went off|going off|sick of|tired of|into|fan of|switched|switching|"
    r"changed my mind|any ?more)\b",
    re.I,
)
_LIKING_TRIGGERS = (
    "like",
    "love",
    "prefer",
    "fav",
    "off",
    "sick of",
    "tired of",
    "fan of",
    "into",
    "switch",
    "changed my mind",
    "more",
)


#: Words that name a speaker's self-fact key ("I'm not allergic to almonds" is about the
#: allergy of "I'm allergic to almonds").
_HEAD_WORDS = {
    "allergy": ("allergic", "allergie"),
    "home": ("live", "living", "moved", "based"),
    "job": ("work", "working", "job", "employer"),
    "spouse": ("married", "engaged", "wife", "husband", "partner"),
    "diet": ("vegetarian", "vegan", "pescatarian", "pescetarian", "flexitarian", "diet"),
}


def _about(new: Statement, old: Statement) -> bool:
    """Whether ``new``, which has no subject of its own, can be about ``old``'s subject:
    it names a word of it ("my sister doesn't live in Leeds any more", "the launch has
    moved" for "the launch date"), or,
    for a favourite, speaks of liking. "I left Leeds at 7am" rejects the value of "my
    sister lives in Leeds" in words only."""
    head = _subject_head(old.subject or "")
    if head in ("", "?", "*"):  # the old one's subject is not said: nothing to check
        return True
    subject = set(old.subject.split("|")[1].split()) if old.subject else set()
    if not new.words.isdisjoint(subject) or not new.words.isdisjoint(_HEAD_WORDS.get(head, ())):
        return True  # "the launch has moved ... not 14 March" after "the launch date is ..."
    return "|favourite " in (old.subject or "") and new.liking


def _partly_named(new: Statement, old: Statement, old_text: str) -> bool:
    """Whether ``new`` names some, not all, of the items of ``old``'s value ("shellfish"
    of "peanuts and shellfish")."""
    value = _flat(old.value)
    named = value & new.words
    return len(value) > 1 and bool(named) and named != value and bool(_SEVERAL.search(old_text))


def _speakers_diet(subject: str | None) -> bool:
    """Whether ``subject`` is a speaker's own diet ("I'm vegetarian": ``@|diet``)."""
    return subject is not None and subject.startswith("@") and subject.partition("|")[2] == "diet"


def _flat(value: frozenset[str]) -> frozenset[str]:
    """The content words of a value ("dr okoye" -> {"okoye"})."""
    return _norm_words(" ".join(value)) or value


@dataclass(frozen=True)
class Candidate:
    """An older memory that the new one might supersede."""

    id: str
    text: str
    similarity: float


class LexicalSupersession:
    """The offline default rule (see the module doc).

    Args:
        min_similarity: Embedding similarity an older memory needs before a subject =
            value statement can supersede it (rules 1, 3 and 5).
        fallback_similarity: Similarity the subject-less fallback (rule 4) and a
            noun-less preference matched with another noun-less one need ("I prefer
            meetings before noon" leaves "I prefer green tea in the afternoon"), unless
            the new one rejects a value ("I no longer like navy best; it's crimson"
            after "... it's teal": a change of favourite, as a named preference's).
    """

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
        maybe: list[tuple[float, str]] = []  # noun-less preferences: the best one only
        parsed = [(c, parse(c.text)) for c in candidates]
        for c, o in parsed:
            if n.speaker and o.speaker and n.speaker != o.speaker:
                continue
            # the assistant's text and an unlabelled memory: only a subject that is not
            # the speaker's own ("the launch") lets one supersede the other
            other_side = _other_side(n.speaker, o.speaker) and (
                n.subject is None or n.subject.startswith("@")
            )
            if (
                n.switched
                and not other_side
                and _speakers_own(o.subject)
                and _subject_head(o.subject or "") in n.switched
                and c.similarity >= self.min_similarity - _PREFERENCE_SLACK
            ):  # rule 7: "I've switched editors" after "my editor of choice is Vim"
                chosen.append(c.id)
                continue
            if n.op and o.op:
                same_list = n.list_name is None or o.list_name in (None, n.list_name)
                # the same item ("milk" / "the milk"), not one sharing a word with it
                # ("almond milk" / "oat milk")
                same_item = n.items <= o.items or o.items <= n.items
                if n.items != o.items and None not in (n.item_head, o.item_head):
                    # one names more than the other: the same thing only if both are
                    # the same noun ("the milk" / "almond milk"), not one a kind of
                    # the other's word ("a chicken recipe" / "chicken")
                    same_item = same_item and n.item_head == o.item_head
                if o.several and not o.items <= n.items:
                    # "cross the milk off" leaves the eggs of "add eggs and milk": the
                    # entry still says what to buy
                    same_item = False
                if same_list and n.op != o.op and n.items and o.items and same_item:
                    chosen.append(c.id)
                continue
            relation = _subject_relation(n.subject, o.subject) if n.subject and o.subject else None
            if relation == "same" and not n.cue and _narrower(n.subject, o.subject):
                # "my favourite Christmas movie is Elf" leaves "my favourite movie is
                # Alien"; "these days my favourite hot drink is matcha" replaces tea
                relation = "different"
            # a diet the speaker rejects as their own is no one else's ("I'm not
            # vegetarian, but my wife is" leaves "my wife is vegetarian")
            own_diet = _speakers_diet(o.subject)
            rejected = n.negated if own_diet else n.negated - n.own_diet_negated
            named = n.words if own_diet else n.words - n.own_diet_negated
            name = n.subject is not None and n.subject.endswith("|name")
            # a whole instruction of the language to reply in: one per owner, however
            # little the two share ("Please speak to me in Spanish" after "Always answer
            # in British English")
            reply = relation == "same" and (n.subject or "").endswith("|reply language")
            refused = _refused_language(n.value) if reply else None
            if refused is not None and o.value not in (refused, n.value):
                continue  # "don't answer in French" leaves "answer in Spanish" be
            # a named preference ("favourite food") is one fact per owner however it is
            # phrased, so it needs less similarity than a copula ("the budget is ...")
            preference = relation == "same" and "|favourite " in (n.subject or "")
            # so is a speaker's home or employer, moved to or joined: "I moved to York"
            # after "I live in Leeds" is 0.39 similar with the default model ("I'm working
            # at home today" is no such statement)
            # and a speaker's diet: "I'm pescatarian now" after "I'm vegetarian" is 0.45
            one_per_owner = (
                relation == "same"
                and (n.moved or (n.subject or "").endswith("|diet"))
                and (n.subject or "").startswith("@")
            )
            # "I no longer like navy best; it's crimson" after "... it's teal": a change
            # of favourite between two noun-less ones, as a named preference's
            nounless_change = (
                relation == "maybe"
                and bool(n.negated)
                and (n.subject or "").endswith("*")
                and (o.subject or "").endswith("*")
            )
            # "I've switched to matcha" after "my favourite drink is tea" (0.11 on the
            # default model): a noun-less preference with a cue whose value is of the
            # older favourite's kind; the best such one only (``maybe``)
            of_kind = (
                relation == "maybe"
                and n.cue
                and (n.subject or "").endswith("|favourite *")
                and not (o.subject or "").endswith("*")
                and _kind_of_value(n.value) == _subject_head(o.subject or "")
            )
            if c.similarity < self.min_similarity and not (
                (name and o.subject == n.subject)
                or reply
                or of_kind
                or (
                    (preference or nounless_change or one_per_owner)
                    and c.similarity >= self.min_similarity - _PREFERENCE_SLACK
                )
            ):
                continue
            if n.subject and o.subject:
                # a restatement of the same value also replaces the older one: the
                # newest statement of a fact is the one to show
                changed = n.value != o.value and not n.value <= o.value
                if n.subject.endswith(_ADDED_UP):
                    changed = False  # one more allergy is not a changed one
                restated = n.value == o.value
                # (not when both hold: "the wedding is at 2pm" after "... on June 14th")
                if (
                    relation == "same"
                    and (changed or restated)
                    and not _other_question(n, o)
                    and not _exception(n, o)
                ):
                    if not (n.episodic or o.episodic) or n.strong_cue:
                        chosen.append(c.id)
                elif relation == "maybe" and o.value and _flat(o.value) <= rejected:
                    chosen.append(c.id)  # rule 3: the new one names and rejects it
                elif relation == "maybe" and (changed or restated):
                    both_nounless = n.subject.endswith("*") and o.subject.endswith("*")
                    if nounless_change:
                        chosen.append(c.id)
                    elif not both_nounless or c.similarity >= self.fallback_similarity:
                        # one of its kind first, however similar another is
                        maybe.append((c.similarity + (1.0 if of_kind else 0.0), c.id))
                elif (
                    relation == "different"
                    and o.value
                    and _flat(o.value) <= rejected
                    and _owners_match(n.subject.partition("|")[0], o.subject.partition("|")[0])
                ):
                    chosen.append(c.id)  # rule 3: "gone off tea" names the old value
                continue
            if other_side:
                continue  # "assistant: I've gone off tea" leaves the user's favourite
            if (
                o.subject
                and o.value
                and not o.op
                and ((n.cue and n.negation and o.value <= named) or _flat(o.value) <= rejected)
                and _about(n, o)
            ):
                chosen.append(c.id)  # rule 3
                continue
            if (
                n.subject
                and not o.subject
                and not o.op
                and (n.cue or _says_moved(n))
                and c.similarity >= self.fallback_similarity
                and _changed_quantity(n.quantities, o.quantities)
                and (n.words & o.words) - _quantity_words(n.quantities | o.quantities)
            ):  # rule 6: "the Heron budget is £30k now" after "we've been given £80k for Heron"
                chosen.append(c.id)
                continue
            if (
                n.subject
                and rejected
                and not o.subject
                and not o.op
                and rejected <= o.words
                and _subject_head(n.subject) in o.words
            ):  # rule 3: "my rent is 1,600, not 1,175" after "I pay 1,175 in rent"
                chosen.append(c.id)
                continue
            if (
                n.subject
                and not o.subject
                and not o.op
                and o.strong_cue
                and o.negation
                and c.similarity >= self.fallback_similarity
            ):  # rule 5: a later clean statement replaces an earlier negated restatement
                chosen.append(c.id)
        # "I live in Porto and work at Google": "I moved" leaves the job. Checked for the
        # few chosen only (reading a text's every clause costs a parse each)
        texts = {c.id: (c.text, o) for c, o in parsed}

        def compound(memory_id: str) -> bool:
            text, o = texts[memory_id]
            return not o.op and _compound(new, text)

        chosen = [m for m in chosen if not compound(m)]
        maybe = [(sim, m) for sim, m in maybe if not compound(m)]
        if maybe and not chosen:
            chosen.append(max(maybe)[1])
        # rule 4 only for a correction ("actually, she moved to York"), not a task, plan
        # or remark after "actually" or "sorry", nor one more value ("also", "too")
        if chosen or not fallback or n.subject or n.op or not n.strong_cue or not n.corrects:
            return chosen
        near = sorted(
            (
                (c.similarity, c.id)
                for c, o in parsed
                if o.subject
                # what adds up ("I'm allergic to peanuts"): a rejection names its value
                # (rule 3); "I'm not allergic to cats" leaves peanuts
                and not o.subject.endswith(_ADDED_UP)
                # a list one item of which the new one names ("I no longer take
                # lisinopril" after "I take metformin and lisinopril"): the rest holds
                and not _partly_named(n, o, c.text)
                and (not n.speaker or not o.speaker or n.speaker == o.speaker)
                and not _other_side(n.speaker, o.speaker)
                and c.similarity >= self.fallback_similarity
                # "I am no longer vegan, but my son still is": the speaker's diet only
                and (not n.own_diet_negated or _speakers_diet(o.subject))
            ),
            reverse=True,
        )
        return next(([m] for _, m in near if not _compound(new, texts[m][0])), [])
