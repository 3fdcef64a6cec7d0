"""Write-time appraisal: how important a new memory is, and what category it is.

:class:`HeuristicImportance` is the offline default. It is a documented set of lexical
cues, not a model:

* **instructions** ("always", "never", "don't", "make sure", "from now on", "remember
  to", "please ... every") -> category ``instruction``, importance 0.9;
* **stated preferences** ("I prefer", "I like", "I love", "I hate", "my favourite",
  "call me") -> ``preference``, 0.75;
* **tasks and commitments** ("remind me", "I will", "I'll", "deadline", "due", "todo",
  "need to", "add ... to the list") -> ``task``, 0.6;
* **events** (meetings, trips, "yesterday", "tomorrow", "last week") -> ``event``, 0.5;
* **small talk** (greetings, thanks, weather, "how are you", very short turns with no
  content) -> ``small_talk``, 0.1: every sentence of the turn is chit-chat, that is it
  mentions the weather, "how are you", "see you", "lovely day" or "nice weekend", or it
  is made only of social and filler words ("hi", "thanks so much", "ok cool", "haha
  nice", "sounds good") plus at most names addressed ("Hey Mel!", "thanks, Anna") and a
  speaker label ("Caroline: ..."). A greeting before content does not make the turn small
  talk ("Thanks! My account number is 55-1234" is a fact), nor does shortness ("I'm
  vegetarian.", "Allergic to peanuts.");
* anything else -> ``fact``, 0.4.

Then +0.05 for each kind of specific detail present (a capitalised name mid-sentence,
a date or weekday or month, a number), up to +0.15, capped at 1.0. A date is a
day number next to a month name or its standard abbreviation ("14 March", "3rd of
May", "Sept 9"), a weekday or an ISO date; "2 separate rooms" or "3 novels" is a number
only.

LLM-backed scorers live in the adapters and satisfy the same
:class:`~oblivion_core.typing.ImportanceScorer` protocol.
"""

from __future__ import annotations

import functools
import re

_RULES: tuple[tuple[str, float, re.Pattern[str]], ...] = (
    (
        "instruction",
        0.9,
        re.compile(
            r"\b(always|never|do not|don't|dont|make sure|from now on|remember to|"
            r"you must|you should|be sure to|every time|whenever you|stop (?:using|doing))\b",
            re.I,
        ),
    ),
    (
        "preference",
        0.75,
        re.compile(
            r"\b(i (?:really )?(?:prefer|like|love|hate|dislike|enjoy|can't stand)|"
            r"my fav(?:ou)?rite|call me|i'd rather|i would rather)\b",
            re.I,
        ),
    ),
    (
        "task",
        0.6,
        re.compile(
            r"\b(remind me|i will|i'll|deadline|due (?:on|by)|to-?do|need to|have to|"
            r"(?:add|put|remove|take) .{1,40}(?:on|to|off|from) (?:the|my) .{0,20}list)\b",
            re.I,
        ),
    ),
    (
        "event",
        0.5,
        re.compile(
            r"\b(meeting|trip|flight|appointment|yesterday|tomorrow|tonight|last (?:week|"
            r"month|year|night)|next (?:week|month|year)|went to|going to)\b",
            re.I,
        ),
    ),
)

# Small talk. A sentence is chit-chat if it has one of these cues anywhere ...
_CHITCHAT = re.compile(
    r"\b(how are you|the weather|lovely day|nice weekend|see you|(?:lovely|nice|great|"
    r"beautiful|gorgeous|glorious|awful|terrible|horrible|grim|miserable|crazy|what|this) "
    r"weather)\b",
    re.I,
)
# ... or if, without its speaker label and the names it addresses, it is made only of
# these words: greetings, thanks, acknowledgements, reactions and the words around them.
_FILLER_WORDS = """
    a about absolutely afternoon again agree agreed ah aha ahh all alright also am amazing
    an and any anything anytime anyway appreciate appreciated are as aw awesome aww back bad
    be beautiful been bit brilliant but bye can can't cannot cant care catch chat chatting
    cheers congrats congratulations cool correct course cute day dear definitely did do
    doing done eh else enough evening everyone exactly excellent fab fabulous fair fantastic
    fine folks for fun funny get glad go going gonna good goodbye goodnight gorgeous got
    gotcha great guess guys ha haha hahaha hahahaha happy have hear heh hehe hello help hey
    hi hiya hm hmm hmmm hooray hope how how's hows huh i i'm im impressive incredible indeed
    inspiring interesting is isn't it it's its just k keep kind kk know later let's lmao lol
    lot lots love lovely luck makes me mean meh morning much my nah neat new nice night no
    nope not noted now np of oh ok okay omg one ooh oops or perfect please pleasure pretty
    problem proud quite really right rofl same say see sense so sorry sound sounds stunning
    super sure sweet take talk thank thanks thanx that that's thats the there these thing
    this those thx to today too totally tracks true ty uh um umm understand understandable
    understood up very wait was way we welcome well were what what's whoa woah wonderful
    worries would wow xd ya yay yea yeah yep yes yo you you're your yup
"""
_FILLER = frozenset(_FILLER_WORDS.split())
_SPEAKER = re.compile(r"^[ \t]*[^\W\d_][\w'’-]*(?:[ \t][^\W\d_][\w'’-]*)?:(?:[ \t]+|$)", re.M)
_VOCATIVE = re.compile(
    r"(,|\b(?i:hi|hey|hello|hiya|yo|thanks|thank you|thx|bye|goodbye|morning|evening|night|"
    r"congrats|congratulations|dear|cheers|welcome|sorry))\s*([A-Z][a-z'’]+)"
    r"(?=\s*(?:[^\w\s]|$))"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|[;\n]+")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")

_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}\b")
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\b\.?"
)
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}|"
    rf"{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b|{_WEEKDAY}|\d{{4}}-\d{{2}}-\d{{2}}\b)",
    re.I,
)
_CALENDAR_WORD = re.compile(rf"{_MONTH}|{_WEEKDAY}", re.I)
_NUMBER = re.compile(r"\d")


class HeuristicImportance:
    """The offline default :class:`~oblivion_core.typing.ImportanceScorer`."""

    def categorize(self, text: str) -> str:
        """The first matching rule's category (``fact`` if none matches)."""
        return self._rule(text)[0]

    def score(self, text: str) -> float:
        """Base importance of the category plus up to 0.15 for specific details."""
        base = self._rule(text)[1]
        detail = sum(0.05 for pattern in (_NAME, _DATE, _NUMBER) if pattern.search(text.strip()))
        return float(min(1.0, base + min(detail, 0.15)))

    @staticmethod
    def _rule(text: str) -> tuple[str, float]:
        return _first_rule(text.strip())


@functools.lru_cache(maxsize=4096)  # a write asks for the category, then the score
def _first_rule(stripped: str) -> tuple[str, float]:
    for category, importance, pattern in _RULES:
        if pattern.search(stripped):
            return category, importance
    if all(_is_chitchat(s) for s in _SENTENCE.split(_SPEAKER.sub("", stripped))):
        return "small_talk", 0.1
    return "fact", 0.4


def _is_chitchat(sentence: str) -> bool:
    """Whether one sentence has no content: a small-talk cue, or filler words only."""
    if _CHITCHAT.search(sentence):
        return True
    sentence = _VOCATIVE.sub(_drop_name, sentence)
    return all(w in _FILLER for w in _WORD.findall(sentence.lower().replace("’", "'")))


def _drop_name(match: re.Match[str]) -> str:
    """A name addressed ("Hey Mel", ", Anna!") is no content; a weekday or month is."""
    return match.group(0) if _CALENDAR_WORD.fullmatch(match.group(2)) else match.group(1) or ""
