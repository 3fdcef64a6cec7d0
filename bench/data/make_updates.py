"""Generate ``bench/data/updates.json``, the knowledge-update benchmark data.

The benchmark checks that a memory system surfaces the *newest* statement of a
fact rather than an older one, across long conversations padded with
unrelated filler. Everything is built from templates and word banks in this
file with a seeded ``random.Random``, so a run always writes the same output.
Only the standard library is used.

Schema of the written file::

    {
      "meta": {"generator": ..., "seed": ..., "tokens_per_word": 1.3, ...},
      "conversations": [
        {
          "id": "favourite-007",
          "kind": "favourite" | "name" | "correction" | "list" | "distractor",
          "tags": ["timing:rapid", "plain_update", "stale_echo", ...],
          "decoys": ["t412"],
          "turns": [
            {"id": "t0", "speaker": "user", "text": "...", "t": 0.0}
          ],
          "questions": [
            {"question": "...", "newest": ["t57"], "stale": ["t3", "t20"],
             "also_relevant": [], "t": 98765.0}
          ]
        }
      ]
    }

Fields:

* ``turns[].speaker`` is ``"user"``, ``"assistant"`` or a person's name (a
  third party in a group chat, used by some ``distractor`` conversations).
* ``turns[].t`` and ``questions[].t`` are seconds since the conversation
  started. Spacing varies by conversation (see the ``timing:*`` tag): turns
  about 30 s apart, minutes apart, hours apart, in sessions days apart, or
  sparse. The question always comes after the last turn.
* ``newest``: ids of the turns that state the current truth the question asks
  about. For ``list`` conversations these are the additions still on the list.
* ``stale``: ids of earlier statements superseded by a newer one (for ``list``,
  additions later removed). Always empty for ``distractor`` conversations,
  where statements look like updates but are about different things.
* ``also_relevant``: turns needed to explain the answer that are neither
  newest nor stale (for ``list``, the removal statements).
* ``tags`` (extra): ``timing:<mode>``; ``plain_update`` when updates carry no
  "actually"/"now" cue; ``stale_echo`` when filler repeats a stale value in
  an unrelated context; ``revert`` when a favourite returns to an earlier
  value; ``group_chat`` when a third party speaks; ``distractor:<subtype>``.
* ``decoys`` (extra): ids of filler turns that mention a stale value in an
  unrelated context (for example "blue whales" after "blue" was superseded).

Filler between consecutive key statements is sized to 1k-10k estimated tokens
(tokens are estimated as words * 1.3). Filler never mentions a conversation's
key values or topic words, except for the deliberate decoy turns.

Run ``python bench/data/make_updates.py`` to (re)write the file and print
summary statistics.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20240317
TOKENS_PER_WORD = 1.3
MIN_GAP_TOKENS = 1000
MAX_GAP_TOKENS = 9800
OUT_PATH = Path(__file__).with_name("updates.json")

KIND_COUNTS: dict[str, int] = {
    "favourite": 22,
    "name": 12,
    "correction": 18,
    "list": 12,
    "distractor": 16,
}

Turn = dict[str, object]

# --------------------------------------------------------------------------
# Word banks and filler templates
# --------------------------------------------------------------------------

BANKS: dict[str, list[str]] = {
    "weather": [
        "grey",
        "muggy",
        "blustery",
        "drizzly",
        "bitterly cold",
        "glorious",
        "changeable",
        "oddly warm",
        "foggy",
        "damp",
    ],
    "period": ["week", "morning", "afternoon", "fortnight", "day", "month"],
    "forgotten": [
        "my umbrella",
        "a coat",
        "my gloves",
        "my scarf",
        "my reusable cup",
        "my bus pass",
        "my keys",
    ],
    "dish": [
        "a jacket potato",
        "a bowl of lentil soup",
        "a burrito",
        "leftover curry",
        "a bento box",
        "a cheese toastie",
        "a grain salad",
        "a bacon roll",
        "a falafel wrap",
        "a pasty",
        "a poke bowl",
        "a halloumi salad",
    ],
    "place": [
        "the station",
        "the canal",
        "the old library",
        "the market hall",
        "the big roundabout",
        "the park",
        "the cathedral",
        "the leisure centre",
        "the bus depot",
    ],
    "verdict": [
        "Would recommend",
        "Not bad at all",
        "Honestly forgettable",
        "Better than expected",
        "Far too much of it, but no regrets",
        "A bit overpriced",
        "Exactly what I needed",
    ],
    "activity": [
        "clearing out the garage",
        "a long bike ride",
        "finally assembling that bookcase",
        "visiting my aunt",
        "a day at the coast",
        "repotting the houseplants",
        "doing nothing whatsoever",
        "walking the canal path",
        "a car boot sale",
    ],
    "pastime": [
        "going to a yoga class",
        "volunteering at the community garden",
        "learning to juggle",
        "sketching in the park",
        "running with a local group",
        "practising calligraphy",
        "doing a jigsaw",
    ],
    "commute": [
        "twenty minutes late",
        "cancelled outright",
        "packed to the doors",
        "strangely empty",
        "stuck outside the tunnel for ages",
    ],
    "commute_act": [
        "reading the news",
        "listening to an audiobook",
        "staring out of the window",
        "answering emails",
        "doing the crossword",
    ],
    "doc": [
        "deep-sea fish",
        "the history of bridges",
        "honeybees",
        "medieval castles",
        "volcanoes",
        "the early railways",
        "lighthouse keepers",
        "desert ecosystems",
        "glaciers",
        "coral reefs",
    ],
    "hobby": [
        "the trumpet",
        "tap dancing",
        "woodworking",
        "the drums",
        "karaoke",
        "the bagpipes",
    ],
    "chore": [
        "sorting the recycling",
        "defrosting the freezer",
        "cleaning the oven",
        "fixing the dripping tap",
        "ironing a mountain of shirts",
        "clearing the gutters",
    ],
    "treat": [
        "cinnamon buns",
        "a tin of biscuits",
        "homemade brownies",
        "doughnuts",
        "a giant fruit cake",
        "lemon drizzle",
        "flapjacks",
    ],
    "num": ["two", "three", "four", "five", "six", "ten", "twelve", "fifteen"],
    "colleague": [
        "Marta",
        "Oliver",
        "Jun",
        "Femi",
        "Hannah",
        "Ravi",
        "Ines",
        "Callum",
        "Zara",
        "Pieter",
        "Leila",
        "Owen",
        "Bea",
        "Kwame",
    ],
    "artifact": [
        "slide deck",
        "release notes",
        "architecture diagram",
        "survey summary",
        "onboarding guide",
        "incident write-up",
        "style guide",
    ],
    "event": [
        "last deploy",
        "office move",
        "database upgrade",
        "network outage",
        "framework upgrade",
        "reorg",
    ],
    "system": ["billing", "search", "analytics", "inventory", "login", "reporting"],
    "component": [
        "auth",
        "payments",
        "export",
        "scheduler",
        "caching",
        "notifications",
        "search indexing",
    ],
    "meeting_topic": [
        "naming conventions",
        "the office seating plan",
        "ticket priorities",
        "the new expenses tool",
        "which chat app to use",
        "the font on the intranet",
    ],
    "reason": [
        "on holiday",
        "at a conference",
        "off sick",
        "on paternity leave",
        "on a training course",
    ],
    "opener": [
        "Ha, that sounds about right.",
        "Fair enough.",
        "That's a classic.",
        "Understandable.",
        "That tracks.",
        "Interesting.",
        "Ah, I see.",
        "Well, that's something.",
        "Sounds like quite a {period}.",
        "Ha.",
        "Right.",
        "Quite a mix.",
    ],
    "fact": [
        "octopuses have three hearts.",
        "honey can stay edible for thousands of years if it is sealed well.",
        "a day on Venus is longer than a year on Venus.",
        "bananas count as berries botanically, but strawberries do not.",
        "wombats produce cube-shaped droppings.",
        "sharks have been around for longer than trees.",
        "the Eiffel Tower grows a few centimetres taller in summer heat.",
        "sea otters sometimes hold paws while they sleep.",
        "a group of flamingos is known as a flamboyance.",
        "Scotland's national animal is the unicorn.",
        "the dot over a lowercase i is called a tittle.",
        "Saturn is less dense than water.",
        "lightning is several times hotter than the surface of the sun.",
        "koalas have fingerprints remarkably similar to human ones.",
        "Antarctica counts as the largest desert on Earth.",
        "the word robot comes from a Czech word for forced labour.",
        "the Moon drifts about four centimetres further from Earth every year.",
        "a pineapple plant takes roughly two years to produce one fruit.",
        "crows can recognise individual human faces.",
        "the shortest war on record lasted well under an hour.",
        "hot water can, under some conditions, freeze faster than cold water.",
        "there are more possible games of chess than atoms in the observable universe.",
        "sloths can hold their breath longer than dolphins can.",
        "the Sahara was green and full of lakes a few thousand years ago.",
        "a teaspoon of neutron star material would weigh billions of tonnes.",
        "a jellyfish species can revert to an earlier stage of its life.",
        "the inventor of the frisbee was partly cremated into a frisbee.",
        "rainbows are actually full circles when seen from high enough.",
    ],
}

SMALL_TALK: list[str] = [
    "The weather has been {weather} all {period}, and of course I forgot {forgotten} again.",
    "Lunch today was {dish} from the place near {place}. {verdict}.",
    "This weekend I'm thinking of {activity}, assuming the weather behaves.",
    "The train was {commute} this morning, so I spent the journey {commute_act}.",
    "I watched a documentary about {doc} last night. Surprisingly gripping.",
    "My neighbour has taken up {hobby}, and I can hear every practice session.",
    "I finally got round to {chore} yesterday. It took twice as long as I expected.",
    "Is it just me, or has this {period} lasted forever?",
    "{colleague} brought in {treat} for everyone, which improved the mood considerably.",
    "I'm trying to walk more. Day {num} of the new routine and my legs have opinions.",
    "Traffic around {place} was ridiculous today; apparently there are roadworks again.",
    "The heating in the office is either off or tropical. There is no middle setting.",
    "I've started {pastime} on Sunday mornings. It's oddly relaxing.",
    "Someone in our building keeps microwaving fish at lunchtime, and now there's "
    "a passive-aggressive note about it.",
    "I got caught in a downpour near {place} and I'm still slightly damp.",
    "Went for {dish} again. I'm nothing if not predictable.",
    "It's been so {weather} that I've barely left the house this {period}.",
    "My plan for the evening is {chore}, which tells you how exciting life is.",
]

WORK_CHAT: list[str] = [
    "{colleague} asked whether the {artifact} could wait until after the {event}.",
    "The {system} dashboard has been flaky since the {event}; {colleague} thinks "
    "it's a caching problem.",
    "We spent an hour discussing {meeting_topic} and decided, more or less, nothing.",
    "I'm reviewing {colleague}'s pull request on the {component} module this afternoon.",
    "The {artifact} needs another pass before it goes out. Too many vague sentences.",
    "{colleague} and {colleague2} are pairing on the {component} refactor this week.",
    "We found a bug in the {component} code that has apparently been there for {num} years.",
    "{colleague} is {reason} this week, so I'm covering the {system} on-call rota.",
    "The all-hands ran over by {num} minutes again. Someone needs a stricter chair.",
    "I've been asked to tidy up the {artifact}, which mostly means deleting things.",
    "The {system} migration is finally done. Only {num} tickets left to close.",
    "{colleague} wants a quick sync about the {component} tests, which will not be quick.",
    "Half the team is {reason}, so the office is eerily quiet today.",
    "The {artifact} got approved on the first try, which has never happened before.",
]

TRIVIA_SHARE: list[str] = [
    "I read somewhere that {fact}",
    "Random thing I learned today: {fact}",
    "Someone at the quiz insisted that {fact} I choose to believe them.",
    "Apparently {fact}",
    "My nephew told me that {fact} He's very proud of knowing it.",
]

REPLY_FOLLOW: list[str] = [
    "Hope the rest of the {period} is calmer.",
    "Let me know if you want a hand with anything.",
    "If you need help with the {artifact}, just say.",
    "Fun fact while we're at it: {fact}",
    "Sometimes that's just how it goes.",
    "Worth a try, at least.",
    "I'll leave you to it.",
    "Fingers crossed it settles down.",
    "That'll make a good story later.",
    "",
    "",
]

CONCEPTS: list[tuple[str, str]] = [
    (
        "race condition",
        "It's when the outcome depends on the timing of two things running at "
        "once, so the bug only shows up some of the time.",
    ),
    (
        "feature flag",
        "A switch in the code that turns a feature on or off without a new "
        "deploy, handy for gradual rollouts.",
    ),
    (
        "canary release",
        "Shipping a change to a small slice of users first and watching the "
        "metrics before rolling it out to everyone.",
    ),
    (
        "p95 latency",
        "The response time that 95 percent of requests beat; it tells you how "
        "slow the slow end feels.",
    ),
    (
        "idempotent request",
        "One you can repeat safely: doing it twice has the same effect as doing it once.",
    ),
    (
        "technical debt",
        "The future cost of shortcuts taken now; it has to be paid back with "
        "cleanup work eventually.",
    ),
    (
        "rollback",
        "Returning a system to its previous known-good version after a change goes wrong.",
    ),
    (
        "load balancer",
        "A component that spreads incoming traffic across several servers so no "
        "single one gets overwhelmed.",
    ),
]

QUIZ: list[tuple[str, str]] = [
    ("What's the largest planet in the solar system?", "Jupiter, by a long way."),
    ("How many bones are in an adult human body?", "Two hundred and six."),
    ("Which gas do plants mostly take in?", "Carbon dioxide."),
    ("What's the hardest natural substance?", "Diamond."),
    ("How many sides does a hexagon have?", "Six."),
    ("Which planet has the most moons right now?", "Saturn, at last count."),
    ("What's the chemical symbol for gold?", "Au, from the Latin aurum."),
    ("Which ocean is the largest?", "The Pacific."),
    ("How many minutes are in a day?", "One thousand four hundred and forty."),
    ("What's the tallest mountain above sea level?", "Everest."),
    ("Which is the longest river in Africa?", "The Nile."),
]

STATEMENT_ACKS: list[str] = [
    "Noted.",
    "Got it, I'll remember that.",
    "Thanks, noted.",
    "Understood.",
    "Okay, I've made a note.",
    "Right you are.",
    "Got it.",
    "Thanks for letting me know.",
]

ECHO_REPLIES: list[str] = [
    "Ha, fair enough.",
    "Good to know.",
    "That's news to me.",
    "Interesting.",
    "Oh, really?",
]

GLOBAL_FORBID: list[str] = ["favourite", "favorite", "call me", "go by", "list"]

_SLOT = re.compile(r"\{(\w+)\}")


def cap(text: str) -> str:
    """Upper-case the first character only."""
    return text[:1].upper() + text[1:]


def est_tokens(text: str) -> float:
    """Estimate tokens as words * 1.3."""
    return len(text.split()) * TOKENS_PER_WORD


def fill(rng: random.Random, template: str, given: dict[str, str] | None = None) -> str:
    """Fill ``{slot}`` placeholders from ``given`` or the word banks.

    A trailing digit in a slot name (``colleague2``) draws from the same bank
    without repeating a value already used in this template.
    """
    given = given or {}
    used: dict[str, set[str]] = {}

    def pick(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in given:
            return given[name]
        root = name.rstrip("0123456789")
        taken = used.setdefault(root, set())
        choices = [v for v in BANKS[root] if v not in taken] or BANKS[root]
        value = rng.choice(choices)
        taken.add(value)
        return value

    return cap(_SLOT.sub(pick, template))


class Forbid:
    """Rejects text mentioning any of the given terms.

    Terms starting with an upper-case letter match case-sensitively (so the
    city "Nice" does not reject "nice"); the others ignore case.
    """

    def __init__(self, terms: Sequence[str]) -> None:
        terms = sorted({t for t in terms if t}, key=len, reverse=True)
        sensitive = [t for t in terms if t[:1].isupper()]
        insensitive = [t for t in terms if not t[:1].isupper()]
        self._res: list[re.Pattern[str]] = []
        for group, flags in ((sensitive, 0), (insensitive, re.IGNORECASE)):
            if group:
                body = "|".join(re.escape(t) for t in group)
                self._res.append(re.compile(rf"(?<!\w)(?:{body})(?!\w)", flags))

    def hits(self, text: str) -> bool:
        return any(r.search(text) for r in self._res)


class FillerMaker:
    """Produces unrelated user/assistant exchanges that avoid forbidden terms."""

    def __init__(self, rng: random.Random, forbid: Forbid) -> None:
        self.rng = rng
        self.forbid = forbid

    def _candidate(self) -> tuple[str, str]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.08:
            term, meaning = rng.choice(CONCEPTS)
            art = "an" if term[0] in "aeiou" else "a"
            ask = rng.choice(
                [
                    f"Could you remind me what {art} {term} is? I nodded along "
                    "in a meeting and now regret it.",
                    f"Quick one: what exactly is {art} {term}?",
                    f"The term '{term}' came up in standup. What does it mean again?",
                ]
            )
            return ask, meaning
        if roll < 0.16:
            question, answer = rng.choice(QUIZ)
            lead = rng.choice(["Quiz question for you: ", "Pub quiz practice: ", ""])
            return lead + question, answer
        # Two to four sentences from distinct templates, at most one trivia.
        n_sentences = rng.choice([2, 2, 3, 3, 4])
        templates = rng.sample(SMALL_TALK + WORK_CHAT, n_sentences)
        if rng.random() < 0.3:
            templates[rng.randrange(n_sentences)] = rng.choice(TRIVIA_SHARE)
        user = " ".join(fill(rng, t) for t in templates)
        opener = fill(rng, rng.choice(BANKS["opener"]))
        reply = opener + " " + fill(rng, rng.choice(REPLY_FOLLOW))
        return user, reply.strip()

    def exchange(self) -> tuple[str, str]:
        for _ in range(200):
            user, reply = self._candidate()
            if not self.forbid.hits(user) and not self.forbid.hits(reply):
                return user, reply
        raise RuntimeError("could not build filler avoiding forbidden terms")


# --------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------

TIMING_MODES = ["rapid", "minutes", "hourly", "sessions", "sparse"]


class Clock:
    """Assigns timestamps (seconds since start) to successive turns."""

    def __init__(self, rng: random.Random, mode: str) -> None:
        self.rng = rng
        self.mode = mode
        self.now = 0.0
        self.started = False
        self.session_left = rng.randint(8, 40)

    def tick(self) -> float:
        if not self.started:
            self.started = True
            return self.now
        rng = self.rng
        if self.mode == "rapid":
            step = rng.uniform(20, 40)
        elif self.mode == "minutes":
            step = rng.uniform(60, 600)
        elif self.mode == "hourly":
            step = rng.uniform(1800, 4 * 3600)
        elif self.mode == "sessions":
            self.session_left -= 1
            if self.session_left <= 0:
                self.session_left = rng.randint(8, 40)
                step = rng.uniform(0.5, 4) * 86400
            else:
                step = rng.uniform(15, 90)
        else:  # sparse
            step = rng.uniform(2 * 3600, 10 * 3600)
        self.now += step
        return round(self.now, 1)

    def question_delay(self) -> float:
        lo, hi = {
            "rapid": (30, 120),
            "minutes": (60, 900),
            "hourly": (600, 3 * 3600),
            "sessions": (86400, 5 * 86400),
            "sparse": (6 * 3600, 3 * 86400),
        }[self.mode]
        return self.rng.uniform(lo, hi)


# --------------------------------------------------------------------------
# Conversation builder
# --------------------------------------------------------------------------


@dataclass
class Conv:
    """Accumulates the turns and questions of one conversation."""

    rng: random.Random
    cid: str
    kind: str
    forbid_terms: list[str]
    others: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    questions: list[dict[str, object]] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    decoys: list[str] = field(default_factory=list)
    key_positions: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        mode = self.rng.choice(TIMING_MODES)
        self.clock = Clock(self.rng, mode)
        self.tags.append(f"timing:{mode}")
        self.filler = FillerMaker(self.rng, Forbid(GLOBAL_FORBID + self.forbid_terms))
        if self.others:
            self.tags.append("group_chat")

    def say(self, speaker: str, text: str) -> str:
        tid = f"t{len(self.turns)}"
        self.turns.append({"id": tid, "speaker": speaker, "text": text, "t": self.clock.tick()})
        return tid

    def statement(self, text: str, speaker: str = "user") -> str:
        """Add a key statement (plus a brief assistant acknowledgement)."""
        self.key_positions.append(len(self.turns))
        tid = self.say(speaker, text)
        ack = self.rng.choice(STATEMENT_ACKS)
        if speaker != "user":
            ack = f"Thanks, {speaker}. {ack}" if self.rng.random() < 0.5 else ack
        self.say("assistant", ack)
        return tid

    def pad(self, lo: float, hi: float, echoes: Sequence[str] = ()) -> None:
        """Add filler worth a random number of tokens in ``[lo, hi]``."""
        # Log-scale, skewed towards the short end (mean ~2.9k tokens per gap).
        u = self.rng.random() ** 1.5
        target = math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))
        exchanges: list[tuple[str, str, bool]] = []
        total = 0.0
        while total < target:
            user, reply = self.filler.exchange()
            exchanges.append((user, reply, False))
            total += est_tokens(user) + est_tokens(reply)
        for echo in echoes:
            pos = self.rng.randint(0, len(exchanges))
            exchanges.insert(pos, (echo, self.rng.choice(ECHO_REPLIES), True))
        for user, reply, is_echo in exchanges:
            speaker = "user"
            if self.others and not is_echo and self.rng.random() < 0.3:
                speaker = self.rng.choice(self.others)
            tid = self.say(speaker, user)
            if is_echo:
                self.decoys.append(tid)
            self.say("assistant", reply)

    def gap(self, echoes: Sequence[str] = ()) -> None:
        self.pad(MIN_GAP_TOKENS, MAX_GAP_TOKENS, echoes)

    def intro(self) -> None:
        self.pad(80, 700)

    def outro(self, echoes: Sequence[str] = ()) -> None:
        self.pad(150, 2500, echoes)

    def ask(
        self,
        question: str,
        newest: Sequence[str],
        stale: Sequence[str] = (),
        also_relevant: Sequence[str] = (),
    ) -> None:
        last = self.questions[-1]["t"] if self.questions else self.turns[-1]["t"]
        assert isinstance(last, float)
        t = round(last + self.clock.question_delay(), 1)
        self.questions.append(
            {
                "question": question,
                "newest": list(newest),
                "stale": list(stale),
                "also_relevant": list(also_relevant),
                "t": t,
            }
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.cid,
            "kind": self.kind,
            "tags": self.tags,
            "decoys": self.decoys,
            "turns": self.turns,
            "questions": self.questions,
        }


# --------------------------------------------------------------------------
# favourite
# --------------------------------------------------------------------------

FAVOURITES: dict[str, list[str]] = {
    "colour": [
        "blue",
        "green",
        "teal",
        "orange",
        "purple",
        "yellow",
        "crimson",
        "navy",
        "grey",
        "lilac",
        "burgundy",
    ],
    "film": [
        "Alien",
        "Paddington 2",
        "Spirited Away",
        "Arrival",
        "The Matrix",
        "Jaws",
        "Casablanca",
        "Moonlight",
        "Parasite",
        "Amadeus",
        "Brief Encounter",
    ],
    "drink": [
        "oolong tea",
        "flat white",
        "ginger beer",
        "mint tea",
        "espresso",
        "lemonade",
        "hot chocolate",
        "kombucha",
        "chai",
        "sparkling water",
    ],
    "sport": [
        "tennis",
        "badminton",
        "rugby",
        "cricket",
        "climbing",
        "cycling",
        "swimming",
        "basketball",
        "fencing",
        "rowing",
    ],
    "book": [
        "Middlemarch",
        "Dune",
        "Beloved",
        "The Hobbit",
        "Persuasion",
        "Rebecca",
        "Frankenstein",
        "Small Island",
        "Wolf Hall",
        "Never Let Me Go",
    ],
    "city": [
        "Lisbon",
        "Kyoto",
        "Edinburgh",
        "Montreal",
        "Porto",
        "Vienna",
        "Seoul",
        "Marrakech",
        "Copenhagen",
        "Bologna",
    ],
    "band": [
        "Radiohead",
        "ABBA",
        "Blur",
        "Fleetwood Mac",
        "Portishead",
        "Queen",
        "Arctic Monkeys",
        "Massive Attack",
        "Elbow",
        "The Cure",
    ],
    "food": [
        "ramen",
        "paella",
        "dim sum",
        "lasagne",
        "pho",
        "fish and chips",
        "risotto",
        "falafel",
        "biryani",
        "moussaka",
    ],
    "season": ["spring", "summer", "autumn", "winter"],
    "board game": [
        "chess",
        "Scrabble",
        "Catan",
        "Ticket to Ride",
        "Carcassonne",
        "Pandemic",
        "Azul",
        "backgammon",
    ],
    "animal": [
        "the otter",
        "the fox",
        "the hedgehog",
        "the owl",
        "the red panda",
        "the axolotl",
        "the octopus",
        "the puffin",
    ],
    "author": [
        "Toni Morrison",
        "Terry Pratchett",
        "Jane Austen",
        "Kazuo Ishiguro",
        "Ursula K. Le Guin",
        "Zadie Smith",
        "Hilary Mantel",
    ],
}

FAV_FIRST: list[str] = [
    "My favourite {cat} is {v}.",
    "I should mention that my favourite {cat} is {v}.",
    "{v} has always been my favourite {cat}.",
    "If you ever need to know, {v} is my favourite {cat}.",
    "Nothing beats {v}; it's my favourite {cat} by a mile.",
    "For the record, my favourite {cat} is {v}.",
]

FAV_UPDATE: list[str] = [
    "Actually, I've switched: {v} is my favourite {cat} now.",
    "These days I'd say my favourite {cat} is {v}.",
    "I no longer like {old} best; it's {v}.",
    "Change of heart: {v} has overtaken {old} as my favourite {cat}.",
    "Forget what I said about {old}. My favourite {cat} is {v} now.",
    "Update on the {cat} front: it's {v} for me now, not {old}.",
    "I've gone right off {old}. {V} is my favourite {cat} at the moment.",
    "Turns out I like {v} even more than {old}, so that's my new favourite {cat}.",
    "My favourite {cat} has changed again. It's {v} now.",
]

FAV_PLAIN: list[str] = [
    "My favourite {cat} is {v}.",
    "{v} is my favourite {cat}.",
    "I'd say my favourite {cat} is {v}.",
    "My favourite {cat}? {V}.",
]

FAV_QUESTIONS: list[str] = [
    "What is my favourite {cat}?",
    "What's my favourite {cat} these days?",
    "Which {cat} do I like best?",
    "Remind me, what's my favourite {cat}?",
]

FAV_ECHO: dict[str, list[str]] = {
    "colour": [
        "The decorators painted the stairwell {v} this week. Bold choice for a stairwell.",
        "Someone parked a {v} camper van outside the office and it's been there for days.",
    ],
    "film": [
        "They're showing {v} on a big outdoor screen in the park next month.",
        "There was a long piece about the making of {v} in the weekend paper.",
    ],
    "drink": [
        "The cafe downstairs has a sign offering {v} at half price before nine.",
        "The vending machine on the third floor now sells {v}, of all things.",
    ],
    "sport": [
        "The {v} club down the road is looking for volunteers at weekends.",
        "The local news ran a piece on a {v} coach who is ninety years old.",
    ],
    "book": [
        "I saw someone on the train reading {v} with about forty sticky notes in it.",
        "The charity shop had six copies of {v} in the window this morning.",
    ],
    "city": [
        "There was a documentary on last night about the trams in {v}.",
        "A colleague is off to a conference in {v} next week.",
    ],
    "band": [
        "Someone in the office was humming {v} songs all morning.",
        "There's a {v} tribute act playing at the pub on Saturday.",
    ],
    "food": [
        "The canteen is doing a {v} special on Fridays now.",
        "A new {v} place opened near the station and the queue was round the block.",
    ],
    "season": [
        "The bus company has already published the {v} timetable.",
        "The garden centre has its {v} sale on, apparently.",
    ],
    "board game": [
        "Someone left a {v} set in the break room with half the pieces missing.",
    ],
    "animal": [
        "The local news ran a story about {v} enclosure at the city farm getting a makeover.",
    ],
    "author": [
        "The library has an exhibition on {v}, mostly first editions behind glass.",
    ],
}

SPECIAL_ECHO: dict[str, str] = {
    "blue": "Blue whales are so big that their hearts are the size of a small car.",
    "green": "The council finally re-turfed the green by the church.",
    "orange": "The first oranges were apparently green, which feels like a betrayal.",
    "Queen": "The Queen's portrait in the town hall has been moved for cleaning.",
    "tennis": "Someone was selling a bucket of old tennis balls at the car boot "
    "sale, for dogs apparently.",
}


def fav_echo(rng: random.Random, cat: str, value: str) -> str:
    if value in SPECIAL_ECHO and rng.random() < 0.7:
        return SPECIAL_ECHO[value]
    return cap(rng.choice(FAV_ECHO[cat]).format(v=value))


def make_favourite(rng: random.Random, cid: str, cat: str) -> Conv:
    pool = FAVOURITES[cat]
    n = min(rng.choice([2, 2, 3, 3, 3, 4, 4, 5]), len(pool))
    values = rng.sample(pool, n)
    revert = n >= 3 and rng.random() < 0.35
    if revert:
        values[-1] = rng.choice(values[:-2])
    plain = rng.random() < 0.2
    echo = rng.random() < 0.3
    bare = [v.removeprefix("the ") for v in pool]
    conv = Conv(rng, cid, "favourite", forbid_terms=[cat, *pool, *bare])
    if plain:
        conv.tags.append("plain_update")
    if revert:
        conv.tags.append("revert")
    conv.intro()
    ids: list[str] = []
    for i, value in enumerate(values):
        if i == 0:
            template = rng.choice(FAV_FIRST)
        elif plain:
            template = rng.choice(FAV_PLAIN)
        else:
            template = rng.choice(FAV_UPDATE)
        text = template.format(cat=cat, v=value, V=cap(value), old=values[i - 1])
        ids.append(conv.statement(cap(text)))
        if i < n - 1:
            conv.gap()
    echoes: list[str] = []
    if echo:
        stale_values = [v for v in values[:-1] if v != values[-1]]
        echoes = [fav_echo(rng, cat, rng.choice(stale_values))]
        conv.tags.append("stale_echo")
    conv.outro(echoes)
    question = rng.choice(FAV_QUESTIONS).format(cat=cat)
    conv.ask(question, newest=[ids[-1]], stale=ids[:-1])
    return conv


# --------------------------------------------------------------------------
# name
# --------------------------------------------------------------------------

NAMES: list[tuple[str, list[str]]] = [
    ("Samantha Reid", ["Sam", "Samantha", "Sammy"]),
    ("Alexander Brandt", ["Alex", "Xander", "Alexander"]),
    ("Katherine Moss", ["Kate", "Kit", "Katherine", "Kat"]),
    ("Robert Asante", ["Rob", "Bobby", "Robert"]),
    ("Elizabeth Carr", ["Liz", "Beth", "Eliza", "Elizabeth"]),
    ("Jonathan Pike", ["Jon", "Jonny", "Jonathan"]),
    ("Margaret Ellis", ["Maggie", "Meg", "Peggy"]),
    ("Nicholas Ferreira", ["Nick", "Nico", "Nicholas"]),
    ("Victoria Lang", ["Tori", "Vic", "Victoria"]),
    ("Theodore Quinn", ["Theo", "Ted", "Teddy"]),
    ("Rebecca Osei", ["Becca", "Bex", "Rebecca"]),
    ("Christopher Hale", ["Chris", "Topher", "Christopher"]),
    ("Eleanor Vance", ["Ellie", "Nell", "Eleanor"]),
    ("Benjamin Adler", ["Ben", "Benji", "Benjamin"]),
    ("Adaeze Okoye", ["Ada", "Adaeze", "Dr Okoye"]),
    ("Joanna Price", ["Jo", "JP", "Joanna"]),
    ("Siobhan Walsh", ["Shiv", "Siobhan", "Ms Walsh"]),
    ("Mateusz Nowak", ["Mat", "Matt", "Mateusz"]),
]

NAME_FIRST: list[str] = [
    "By the way, you can call me {v}.",
    "Hi, I'm {full}, but please call me {v}.",
    "Everyone calls me {v}, so you might as well too.",
    "I go by {v}, for what it's worth.",
]

NAME_UPDATE: list[str] = [
    "Please call me {v} from now on.",
    "Actually, I'd rather you called me {v} instead of {old}.",
    "Small request: could you switch to {v}? {old} never really felt like me.",
    "New job, new start: I'm going by {v} now.",
    "I've decided I prefer {v} to {old}, so let's go with that from today.",
    "Can we change what you call me? {v}, please, not {old}.",
]

NAME_PLAIN: list[str] = [
    "Call me {v}.",
    "I go by {v}.",
    "You can call me {v}.",
]

NAME_QUESTIONS: list[str] = [
    "What should you call me?",
    "What name do I want to be called?",
    "How should you address me?",
    "What name should you use for me?",
]

NAME_ECHO: list[str] = [
    "There's a new starter in finance named {v}, so that will get confusing.",
    "The delivery driver today was also a {v}. Small world.",
    "My cousin just named her puppy {v}, which I find hilarious.",
]


def make_name(rng: random.Random, cid: str) -> Conv:
    full, forms = rng.choice(NAMES)
    n = rng.choice([2, 2, 3]) if len(forms) >= 3 else 2
    values = rng.sample(forms, n)
    plain = rng.random() < 0.2
    echo = rng.random() < 0.3
    conv = Conv(rng, cid, "name", forbid_terms=[*forms, *full.split(), "name"])
    if plain:
        conv.tags.append("plain_update")
    conv.intro()
    ids: list[str] = []
    for i, value in enumerate(values):
        if i == 0:
            firsts = [f for f in NAME_FIRST if value not in full or "{full}" not in f]
            template = rng.choice(firsts)
        elif plain:
            template = rng.choice(NAME_PLAIN)
        else:
            template = rng.choice(NAME_UPDATE)
        ids.append(conv.statement(template.format(v=value, old=values[i - 1], full=full)))
        if i < n - 1:
            conv.gap()
    echoes: list[str] = []
    stale_values = [v for v in values[:-1] if v != values[-1] and " " not in v]
    if echo and stale_values:
        echoes = [rng.choice(NAME_ECHO).format(v=rng.choice(stale_values))]
        conv.tags.append("stale_echo")
    conv.outro(echoes)
    conv.ask(rng.choice(NAME_QUESTIONS), newest=[ids[-1]], stale=ids[:-1])
    return conv


# --------------------------------------------------------------------------
# correction
# --------------------------------------------------------------------------

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
UK_CITIES = [
    "Leeds",
    "York",
    "Bristol",
    "Norwich",
    "Cardiff",
    "Glasgow",
    "Bath",
    "Exeter",
    "Durham",
    "Brighton",
]
PROJECTS = ["Heron", "Atlas", "Juniper", "Lantern", "Quill", "Marlin", "Bramble"]
NUMBER_WORDS = [
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
]
ORDINALS = ["4th", "9th", "12th", "16th", "18th", "23rd", "27th"]


@dataclass
class Topic:
    """A fact that is stated and later corrected."""

    name: str
    values: Callable[[random.Random, int], list[str]]
    first: list[str]
    update: list[str]
    plain: list[str]
    questions: list[str]
    echo: list[str]
    forbid: list[str]
    max_n: int = 3
    context: Callable[[random.Random], dict[str, str]] = lambda rng: {}


def _sample(pool: list[str]) -> Callable[[random.Random, int], list[str]]:
    return lambda rng, n: rng.sample(pool, n)


def _money(lo: int, hi: int, step: int, fmt: str) -> Callable[[random.Random, int], list[str]]:
    return lambda rng, n: [fmt.format(x) for x in rng.sample(range(lo, hi, step), n)]


def _ages(rng: random.Random, n: int) -> list[str]:
    """Consecutive ages: the correction adds a year."""
    start = rng.randint(0, len(NUMBER_WORDS) - n)
    return NUMBER_WORDS[start : start + n]


TOPICS: list[Topic] = [
    Topic(
        name="flight",
        values=_sample(WEEKDAYS),
        first=[
            "My flight is on {v}.",
            "I fly out on {v}, so I'll be offline that afternoon.",
            "Just booked it: my flight's on {v}.",
        ],
        update=[
            "Sorry, correction: the flight is on {v}, not {old}.",
            "The airline has moved my flight to {v}.",
            "I got that wrong earlier. My flight is on {v}.",
        ],
        plain=["My flight is on {v}.", "I'm flying on {v}."],
        questions=["Which day is my flight?", "What day do I fly?"],
        echo=[
            "The recycling is collected on {v} now, which nobody on our street remembers.",
            "The gym is closed on {v} for maintenance.",
        ],
        forbid=["flight", "fly", "flying", "airline", "airport", *WEEKDAYS, "Sunday"],
    ),
    Topic(
        name="sister",
        values=_sample(UK_CITIES),
        first=[
            "My sister lives in {v}.",
            "My sister has been living in {v} for a few years now.",
        ],
        update=[
            "Actually, my sister moved to {v} last month.",
            "Update on my sister: she left {old} and lives in {v} now.",
            "I was out of date: my sister lives in {v} these days.",
        ],
        plain=["My sister lives in {v}.", "My sister's place is in {v}."],
        questions=["Where does my sister live?", "Which city does my sister live in?"],
        echo=[
            "{v} is hosting a big food festival next month, apparently.",
            "There's a new direct train to {v} starting in the spring.",
        ],
        forbid=["sister", "moved", "lives", "living"],
    ),
    Topic(
        name="budget",
        values=_money(25, 95, 5, "£{}k"),
        context=lambda rng: {"proj": rng.choice(PROJECTS)},
        first=[
            "The budget for the {proj} project is {v}.",
            "We've been given {v} for the {proj} project.",
        ],
        update=[
            "No, wait, the budget is {v}. I misread the spreadsheet.",
            "Finance came back: the {proj} budget is {v} now.",
            "Correction on the {proj} numbers: it's {v}, not {old}.",
        ],
        plain=["The {proj} budget is {v}.", "The {proj} project has a budget of {v}."],
        questions=[
            "What is the budget for the {proj} project?",
            "How much money do we have for {proj}?",
        ],
        echo=[
            "Someone said the new delivery van cost {v}, which seems steep.",
            "Resurfacing the car park apparently cost {v}.",
        ],
        forbid=["budget", "finance", "spreadsheet", *PROJECTS],
    ),
    Topic(
        name="dentist",
        values=_sample(["8:40am", "9:15am", "10:50am", "11:30am", "1:45pm", "2:30pm", "4:10pm"]),
        context=lambda rng: {"day": rng.choice(WEEKDAYS)},
        first=[
            "My dentist appointment is at {v} on {day}.",
            "I've got the dentist at {v} on {day}.",
        ],
        update=[
            "The dentist rang and moved my appointment to {v}.",
            "Sorry, I misread the card: the dentist appointment is at {v}, not {old}.",
        ],
        plain=["My dentist appointment is at {v}."],
        questions=["What time is my dentist appointment?", "When do I see the dentist?"],
        echo=["The {v} train into town has been cancelled three days running."],
        forbid=["dentist", "appointment", "teeth", *WEEKDAYS],
    ),
    Topic(
        name="daughter",
        values=_ages,
        first=[
            "My daughter is {v} years old.",
            "My daughter is {v} and already taller than all her friends.",
        ],
        update=[
            "Oops, I said {old} earlier, but my daughter is {v}.",
            "Small correction: my daughter turned {v} on Saturday.",
        ],
        plain=["My daughter is {v}.", "My daughter is {v} years old."],
        questions=["How old is my daughter?"],
        echo=["There were {v} of us at the book club last night, a record."],
        forbid=["daughter", "birthday", "years", *NUMBER_WORDS],
        max_n=2,
    ),
    Topic(
        name="room",
        values=_sample(["2A", "3C", "4B", "5D", "1F", "6E"]),
        first=[
            "The offsite is in room {v}.",
            "We've got room {v} booked for the offsite.",
        ],
        update=[
            "Facilities have moved the offsite to room {v}.",
            "Correction: the offsite is in room {v}, not {old}.",
        ],
        plain=["The offsite is in room {v}."],
        questions=["Which room is the offsite in?"],
        echo=["Someone left a parcel for flat {v} in our lobby again."],
        forbid=["room", "offsite", "facilities"],
    ),
    Topic(
        name="allergy",
        values=_sample(["peanuts", "shellfish", "sesame", "kiwi", "almonds", "mustard"]),
        first=[
            "I'm allergic to {v}, so bear that in mind for restaurant bookings.",
            "Just so you know, I'm allergic to {v}.",
        ],
        update=[
            "Turns out I'm not allergic to {old} after all; the clinic says it's {v}.",
            "Correction from the allergy clinic: it's {v} I react to, not {old}.",
        ],
        plain=["I'm allergic to {v}."],
        questions=["What am I allergic to?"],
        echo=[
            "I read that {v} prices have gone up a lot this year.",
            "The market had a stall selling nothing but {v}, which seemed niche.",
        ],
        forbid=["allergic", "allergy", "clinic", "restaurant"],
    ),
    Topic(
        name="rent",
        values=_money(850, 1900, 25, "£{:,}"),
        first=["My rent is {v} a month.", "I pay {v} a month in rent."],
        update=[
            "The landlord has changed my rent; it's {v} a month from now on.",
            "I misremembered: my rent is {v} a month, not {old}.",
        ],
        plain=["My rent is {v} a month."],
        questions=["How much is my rent?"],
        echo=[
            "The new sofa in the staff room apparently cost {v}.",
            "My cousin paid {v} for a second-hand bike, which feels like a lot.",
        ],
        forbid=["rent", "landlord"],
    ),
    Topic(
        name="board",
        values=_sample(ORDINALS),
        first=[
            "The board meeting is on the {v}.",
            "The board meeting has been set for the {v}.",
        ],
        update=[
            "The board meeting has been moved to the {v}.",
            "Sorry, I had the date wrong: the board meeting is on the {v}.",
        ],
        plain=["The board meeting is on the {v}."],
        questions=["When is the board meeting?", "What date is the board meeting?"],
        echo=["My cousin's birthday is on the {v}, so I need to post a card."],
        forbid=["board", "meeting", "date"],
    ),
    Topic(
        name="partner",
        values=_sample(
            [
                "a nurse",
                "an architect",
                "a teacher",
                "an accountant",
                "a chef",
                "a paramedic",
                "a translator",
                "a vet",
                "an electrician",
            ]
        ),
        first=["My partner works as {v}.", "My partner is {v}."],
        update=[
            "My partner has just started a new job as {v}.",
            "Update: my partner retrained and now works as {v}.",
        ],
        plain=["My partner works as {v}."],
        questions=["What does my partner do for work?", "What is my partner's job?"],
        echo=["There was a documentary about life as {v} on last night."],
        forbid=[
            "partner",
            "job",
            "works",
            "retrained",
            "nurse",
            "architect",
            "teacher",
            "accountant",
            "chef",
            "paramedic",
            "translator",
            "vet",
            "electrician",
        ],
    ),
]


def make_correction(rng: random.Random, cid: str, topic: Topic) -> Conv:
    n = 3 if topic.max_n >= 3 and rng.random() < 0.3 else 2
    values = topic.values(rng, n)
    ctx = topic.context(rng)
    plain = rng.random() < 0.25
    echo = rng.random() < 0.3
    conv = Conv(rng, cid, "correction", forbid_terms=[*topic.forbid, *values, *ctx.values()])
    conv.tags.append(f"topic:{topic.name}")
    if plain:
        conv.tags.append("plain_update")
    conv.intro()
    ids: list[str] = []
    for i, value in enumerate(values):
        if i == 0:
            template = rng.choice(topic.first)
        elif plain:
            template = rng.choice(topic.plain)
        else:
            template = rng.choice(topic.update)
        text = template.format(v=value, old=values[i - 1], **ctx)
        ids.append(conv.statement(cap(text)))
        if i < n - 1:
            conv.gap()
    echoes: list[str] = []
    if echo:
        echoes = [cap(rng.choice(topic.echo).format(v=rng.choice(values[:-1])))]
        conv.tags.append("stale_echo")
    conv.outro(echoes)
    conv.ask(rng.choice(topic.questions).format(**ctx), newest=[ids[-1]], stale=ids[:-1])
    return conv


# --------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------

GROCERIES = [
    "eggs",
    "oat milk",
    "bread",
    "tomatoes",
    "coffee beans",
    "washing-up liquid",
    "rice",
    "bananas",
    "cheddar",
    "spinach",
    "lemons",
    "olive oil",
    "yoghurt",
    "pasta",
    "butter",
    "onions",
    "apples",
    "porridge oats",
    "chickpeas",
    "toilet roll",
]

PACKING = [
    "passport",
    "phone charger",
    "sunglasses",
    "hiking boots",
    "swimsuit",
    "rain jacket",
    "plug adapter",
    "toothbrush",
    "camera",
    "sunhat",
    "travel pillow",
    "headphones",
    "e-reader",
    "umbrella",
]

LIST_TEMPLATES: dict[str, dict[str, list[str]]] = {
    "shopping": {
        "add": [
            "Add {x} to the shopping list.",
            "Put {x} on the list too.",
            "We're out of {x}, so stick that on the shopping list.",
            "Can you note down {x} for the shopping?",
            "Don't let me forget {x} when I next do the shop.",
            "Shopping list: {x}, please.",
        ],
        "readd": [
            "Actually, put {x} back on the list.",
            "Add {x} to the shopping list again; I was wrong about having some.",
        ],
        "remove": [
            "Take the {x} off the list.",
            "We don't need {x} any more.",
            "Scratch {x}; I found some at the back of the cupboard.",
            "Remove {x} from the shopping list.",
            "Never mind the {x}, my flatmate already bought some.",
        ],
        "questions": [
            "What is on my shopping list?",
            "What's on the shopping list right now?",
            "What do I still need to buy?",
        ],
        "echo": [
            "I read an article about the price of {x} going up again.",
            "The corner shop has a handwritten sign about {x} in the window.",
        ],
    },
    "packing": {
        "add": [
            "Add my {x} to the packing list.",
            "Put the {x} on the packing list.",
            "I need to pack my {x} for the trip.",
            "Packing list: {x}, please.",
            "Remind me to pack my {x}.",
        ],
        "readd": [
            "On second thoughts, put the {x} back on the packing list.",
        ],
        "remove": [
            "Take the {x} off the packing list.",
            "Cross the {x} off the packing list; the hotel has that covered.",
            "Leave the {x} out after all.",
            "Scrap the {x} from the packing list, there's no room in the bag.",
        ],
        "questions": [
            "What is on my packing list?",
            "What do I still need to pack?",
            "What's on the packing list at the moment?",
        ],
        "echo": [
            "My colleague left her {x} on a train last year. What a saga.",
            "There was a news story about a man who lost his {x} at a festival.",
        ],
    },
}


def plan_list_ops(rng: random.Random, pool: list[str]) -> list[tuple[str, str]]:
    """Plan a sequence of (op, item) with at least one removal and two survivors."""
    while True:
        n_ops = rng.randint(5, 8)
        current: list[str] = []
        removed: list[str] = []
        ops: list[tuple[str, str]] = []
        for i in range(n_ops):
            can_remove = len(current) >= 2 and i >= 2
            if not can_remove or (rng.random() < 0.6 and len(current) < 6):
                if removed and rng.random() < 0.2:
                    item = rng.choice(removed)
                    removed.remove(item)
                    ops.append(("readd", item))
                else:
                    item = rng.choice([x for x in pool if x not in current + removed])
                    ops.append(("add", item))
                current.append(item)
            else:
                item = rng.choice(current)
                current.remove(item)
                removed.append(item)
                ops.append(("remove", item))
        if any(op == "remove" for op, _ in ops) and len(current) >= 2:
            return ops


def make_list(rng: random.Random, cid: str) -> Conv:
    which = "packing" if rng.random() < 0.35 else "shopping"
    pool = PACKING if which == "packing" else GROCERIES
    tpl = LIST_TEMPLATES[which]
    ops = plan_list_ops(rng, pool)
    items = sorted({item for _, item in ops})
    echo = rng.random() < 0.3
    forbid = [*items, "list", "shop", "shopping", "pack", "packing", "buy", "bought"]
    conv = Conv(rng, cid, "list", forbid_terms=forbid)
    conv.tags.append(f"list:{which}")
    if any(op == "readd" for op, _ in ops):
        conv.tags.append("readd")
    conv.intro()
    live: dict[str, str] = {}
    stale: list[str] = []
    removals: list[str] = []
    removed_items: list[str] = []
    for i, (op, item) in enumerate(ops):
        template = rng.choice(tpl[op])
        tid = conv.statement(cap(template.format(x=item)))
        if op == "remove":
            stale.append(live.pop(item))
            removals.append(tid)
            removed_items.append(item)
        else:
            live[item] = tid
        if i < len(ops) - 1:
            conv.gap()
    echoes: list[str] = []
    gone = [x for x in removed_items if x not in live]
    if echo and gone:
        echoes = [cap(rng.choice(tpl["echo"]).format(x=rng.choice(gone)))]
        conv.tags.append("stale_echo")
    conv.outro(echoes)
    newest = sorted(live.values(), key=lambda t: int(t[1:]))
    conv.ask(
        rng.choice(tpl["questions"]),
        newest=newest,
        stale=sorted(stale, key=lambda t: int(t[1:])),
        also_relevant=removals,
    )
    return conv


# --------------------------------------------------------------------------
# distractor
# --------------------------------------------------------------------------

OTHERS = ["Priya", "Tom", "Mei", "Jonas", "Amara", "Luis", "Grace", "Dev"]
WORLD_CITIES = [
    "Paris",
    "Rome",
    "Berlin",
    "Madrid",
    "Prague",
    "Oslo",
    "Athens",
    "Dublin",
    "Budapest",
    "Krakow",
]
MONTHS = [
    "January",
    "February",
    "April",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
]
PET_NAMES = [
    "Biscuit",
    "Pepper",
    "Mango",
    "Pickle",
    "Waffles",
    "Clementine",
    "Basil",
    "Nutmeg",
    "Ziggy",
]
ANIMALS = ["dog", "cat", "rabbit", "tortoise", "parrot", "hamster"]
RELATIVES = ["brother", "dad", "mum", "best friend", "flatmate", "grandmother"]
REVIEWS = [
    "design review",
    "budget review",
    "security review",
    "hiring panel",
    "quarterly planning session",
]
MORNING_AFTERNOON_DRINKS = [
    "a flat white",
    "an espresso",
    "peppermint tea",
    "green tea",
    "a hot chocolate",
    "rooibos",
    "a latte",
]
HOME_TOWNS = ["Sheffield", "Swansea", "Aberdeen", "Plymouth", "Belfast", "Hull"]

# A distractor subtype returns: statements as (speaker, text), questions as
# (question, indices of statements that answer it), extra forbidden terms and
# third-party speakers.
Statements = list[tuple[str, str]]
Questions = list[tuple[str, list[int]]]
DistractorSpec = tuple[Statements, Questions, list[str], list[str]]


def _d_trips(rng: random.Random) -> DistractorSpec:
    c1, c2 = rng.sample(WORLD_CITIES, 2)
    m1, m2 = sorted(rng.sample(MONTHS, 2), key=MONTHS.index)
    templates = rng.sample(
        [
            "I went to {c} in {m}.",
            "Back in {m} I had a long weekend in {c}.",
            "In {m} I spent a few days in {c} for a wedding.",
            "I was in {c} for work in {m}.",
        ],
        2,
    )
    statements = [
        ("user", templates[0].format(c=c1, m=m1)),
        ("user", templates[1].format(c=c2, m=m2)),
    ]
    questions = [
        (f"Where did I go in {m2}?", [1]),
        (f"Where did I go in {m1}?", [0]),
        (f"Which cities did I visit in {m1} and {m2}?", [0, 1]),
        (f"When did I go to {c1}?", [0]),
    ]
    return statements, questions, [c1, c2, m1, m2, "trip", "travel"], []


def _d_speaker(rng: random.Random) -> DistractorSpec:
    cat = rng.choice(["colour", "film", "drink", "sport", "book", "band", "food"])
    a, b = rng.sample(FAVOURITES[cat], 2)
    other = rng.choice(OTHERS)
    statements = [
        ("user", cap(rng.choice(FAV_FIRST).format(cat=cat, v=a))),
        (other, cap(rng.choice(FAV_PLAIN).format(cat=cat, v=b, V=cap(b)))),
    ]
    if rng.random() < 0.5:
        statements.reverse()
        questions = [
            (f"What is my favourite {cat}?", [1]),
            (f"What is {other}'s favourite {cat}?", [0]),
            (f"What favourite {cat} did {other} and I each mention?", [0, 1]),
        ]
    else:
        questions = [
            (f"What is my favourite {cat}?", [0]),
            (f"What is {other}'s favourite {cat}?", [1]),
            (f"What favourite {cat} did {other} and I each mention?", [0, 1]),
        ]
    return statements, questions, [cat, a, b], [other]


def _d_relative(rng: random.Random) -> DistractorSpec:
    cat = rng.choice(["colour", "film", "drink", "sport", "book", "band", "city"])
    a, b = rng.sample(FAVOURITES[cat], 2)
    rel = rng.choice(RELATIVES)
    theirs = ("user", f"My {rel}'s favourite {cat} is {a}.")
    mine = ("user", cap(rng.choice(FAV_FIRST).format(cat=cat, v=b)))
    statements = [theirs, mine]
    if rng.random() < 0.5:
        statements.reverse()
    i_theirs, i_mine = statements.index(theirs), statements.index(mine)
    questions = [
        (f"What is my {rel}'s favourite {cat}?", [i_theirs]),
        (f"What is my favourite {cat}?", [i_mine]),
        (f"What are my favourite {cat} and my {rel}'s?", sorted([i_theirs, i_mine])),
    ]
    return statements, questions, [cat, a, b, rel], []


def _article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _bare(phrase: str) -> str:
    """Drop a leading indefinite article."""
    for art in ("a ", "an "):
        if phrase.startswith(art):
            return phrase[len(art) :]
    return phrase


def _d_seats(rng: random.Random) -> DistractorSpec:
    s1, s2 = rng.sample(["window", "aisle"], 2)
    out = rng.choice(
        [
            f"I'd like {_article(s1)} seat on the outbound flight.",
            f"For the outbound flight, {_article(s1)} seat please.",
        ]
    )
    back = rng.choice(
        [
            f"{cap(s2)} seat on the return, please.",
            f"On the way back I'd prefer {_article(s2)} seat.",
        ]
    )
    questions = [
        ("Which seat did I ask for on the return flight?", [1]),
        ("What seat do I want on the outbound flight?", [0]),
        ("What seats did I ask for on my flights?", [0, 1]),
    ]
    forbid = ["seat", "window", "aisle", "flight", "return", "outbound"]
    return [("user", out), ("user", back)], questions, forbid, []


def _d_pets(rng: random.Random) -> DistractorSpec:
    a1, a2 = rng.sample(ANIMALS, 2)
    n1, n2 = rng.sample(PET_NAMES, 2)
    statements = [
        ("user", f"Our {a1} is called {n1}."),
        (
            "user",
            rng.choice([f"We also have a {a2}; her name is {n2}.", f"Our {a2} is called {n2}."]),
        ),
    ]
    questions = [
        (f"What is our {a2} called?", [1]),
        (f"What is our {a1}'s name?", [0]),
        ("What are our pets called?", [0, 1]),
    ]
    return statements, questions, [a1, a2, n1, n2, "pet", "pets", "called", "name"], []


def _d_meetings(rng: random.Random) -> DistractorSpec:
    r1, r2 = rng.sample(REVIEWS, 2)
    d1, d2 = rng.sample(WEEKDAYS[:5], 2)
    statements = [
        ("user", f"The {r1} is on {d1}."),
        (
            "user",
            rng.choice([f"The {r2} is on {d2}.", f"The {r2} is happening on {d2} this week."]),
        ),
    ]
    questions = [
        (f"When is the {r2}?", [1]),
        (f"Which day is the {r1}?", [0]),
        (f"When are the {r1} and the {r2}?", [0, 1]),
    ]
    forbid = [*r1.split(), *r2.split(), *WEEKDAYS, "Sunday"]
    return statements, questions, forbid, []


def _d_kids(rng: random.Random) -> DistractorSpec:
    a, b = rng.sample(NUMBER_WORDS, 2)
    statements = [
        ("user", f"My son is {a} years old."),
        ("user", rng.choice([f"My daughter is {b}.", f"My daughter is {b} years old."])),
    ]
    if rng.random() < 0.5:
        statements.reverse()
        questions = [("How old is my son?", [1]), ("How old is my daughter?", [0])]
    else:
        questions = [("How old is my son?", [0]), ("How old is my daughter?", [1])]
    questions.append(("How old are my children?", [0, 1]))
    return statements, questions, ["son", "daughter", "years", *NUMBER_WORDS], []


def _d_projects(rng: random.Random) -> DistractorSpec:
    p1, p2 = rng.sample(PROJECTS, 2)
    d1, d2 = rng.sample(ORDINALS, 2)
    statements = [
        ("user", f"Project {p1} is due on the {d1}."),
        ("user", f"Project {p2} is due on the {d2}."),
    ]
    questions = [
        (f"When is Project {p2} due?", [1]),
        (f"When is Project {p1} due?", [0]),
        (f"What are the due dates for {p1} and {p2}?", [0, 1]),
    ]
    return statements, questions, [p1, p2, d1, d2, "due", "project"], []


def _d_drinks(rng: random.Random) -> DistractorSpec:
    a, b = rng.sample(MORNING_AFTERNOON_DRINKS, 2)
    statements = [
        ("user", f"I always have {a} first thing in the morning."),
        ("user", f"In the afternoons I switch to {b}."),
    ]
    questions = [
        ("What do I drink in the afternoon?", [1]),
        ("What's my morning drink?", [0]),
        ("What do I drink in the morning and in the afternoon?", [0, 1]),
    ]
    forbid = [_bare(a), _bare(b), "tea", "coffee", "drink", "morning", "afternoon"]
    return statements, questions, forbid, []


def _d_hometown(rng: random.Random) -> DistractorSpec:
    a, b = rng.sample(HOME_TOWNS, 2)
    statements = [
        ("user", f"I grew up in {a}."),
        ("user", rng.choice([f"I live in {b}.", f"Home for me is {b} these days."])),
    ]
    questions = [
        ("Where do I live?", [1]),
        ("Where did I grow up?", [0]),
        ("Where did I grow up, and where do I live now?", [0, 1]),
    ]
    return statements, questions, [a, b, "grew", "live", "home", "hometown"], []


DISTRACTORS: dict[str, Callable[[random.Random], DistractorSpec]] = {
    "trips": _d_trips,
    "speaker": _d_speaker,
    "relative": _d_relative,
    "seats": _d_seats,
    "pets": _d_pets,
    "meetings": _d_meetings,
    "kids": _d_kids,
    "projects": _d_projects,
    "drinks": _d_drinks,
    "hometown": _d_hometown,
}


def make_distractor(rng: random.Random, cid: str, subtype: str) -> Conv:
    statements, questions, forbid, others = DISTRACTORS[subtype](rng)
    conv = Conv(rng, cid, "distractor", forbid_terms=forbid, others=others)
    conv.tags.append(f"distractor:{subtype}")
    conv.intro()
    ids: list[str] = []
    for i, (speaker, text) in enumerate(statements):
        ids.append(conv.statement(text, speaker=speaker))
        if i < len(statements) - 1:
            conv.gap()
    conv.outro()
    n_q = 2 if rng.random() < 0.35 else 1
    for question, which in rng.sample(questions, n_q):
        conv.ask(question, newest=[ids[i] for i in which])
    return conv


# --------------------------------------------------------------------------
# Assembly, validation, output
# --------------------------------------------------------------------------


def _cycle(rng: random.Random, items: Sequence[str]) -> Callable[[int], str]:
    """Shuffled round-robin, so every variant appears before any repeats."""
    order = list(items)
    rng.shuffle(order)
    return lambda i: order[i % len(order)]


def build(seed: int) -> tuple[list[dict[str, object]], list[float]]:
    """Build all conversations; also return the token gaps between statements."""
    rng = random.Random(seed)
    kinds = [k for k, n in KIND_COUNTS.items() for _ in range(n)]
    rng.shuffle(kinds)
    categories = _cycle(rng, sorted(FAVOURITES))
    topics = _cycle(rng, [t.name for t in TOPICS])
    # The four kinds of look-alike named in the brief appear twice per cycle.
    subtypes = _cycle(rng, [*DISTRACTORS, "trips", "speaker", "relative", "seats"])
    topic_by_name = {t.name: t for t in TOPICS}
    counters: Counter[str] = Counter()
    convs: list[dict[str, object]] = []
    gaps: list[float] = []
    for kind in kinds:
        i = counters[kind]
        counters[kind] += 1
        cid = f"{kind}-{counters[kind]:03d}"
        if kind == "favourite":
            conv = make_favourite(rng, cid, categories(i))
        elif kind == "name":
            conv = make_name(rng, cid)
        elif kind == "correction":
            conv = make_correction(rng, cid, topic_by_name[topics(i)])
        elif kind == "list":
            conv = make_list(rng, cid)
        else:
            conv = make_distractor(rng, cid, subtypes(i))
        validate(conv)
        gaps.extend(gap_tokens(conv))
        convs.append(conv.to_dict())
    return convs, gaps


def gap_tokens(conv: Conv) -> list[float]:
    """Estimated tokens strictly between consecutive key statements."""
    gaps = []
    for a, b in zip(conv.key_positions, conv.key_positions[1:], strict=False):
        gaps.append(sum(est_tokens(str(t["text"])) for t in conv.turns[a + 1 : b]))
    return gaps


def validate(conv: Conv) -> None:
    ids = {str(t["id"]) for t in conv.turns}
    times = [float(str(t["t"])) for t in conv.turns]
    assert times == sorted(times), conv.cid
    for gap in gap_tokens(conv):
        assert MIN_GAP_TOKENS <= gap <= 10_000, (conv.cid, gap)
    for q in conv.questions:
        newest = [str(x) for x in q["newest"]]  # type: ignore[attr-defined]
        stale = [str(x) for x in q["stale"]]  # type: ignore[attr-defined]
        also = [str(x) for x in q["also_relevant"]]  # type: ignore[attr-defined]
        assert newest and set(newest + stale + also) <= ids, conv.cid
        assert not set(newest) & set(stale), conv.cid
        assert float(str(q["t"])) > times[-1], conv.cid
        if conv.kind == "distractor":
            assert not stale, conv.cid
        elif conv.kind != "list":
            assert max(int(s[1:]) for s in stale) < int(newest[0][1:]), conv.cid


def dump(data: dict[str, object], path: Path) -> None:
    """Write JSON with one turn per line: compact but still diffable."""
    convs = data["conversations"]
    assert isinstance(convs, list)
    meta = json.dumps(data["meta"], ensure_ascii=False)
    lines = ["{", f' "meta": {meta},', ' "conversations": [']
    for ci, conv in enumerate(convs):
        head = {k: v for k, v in conv.items() if k not in ("turns", "questions")}
        lines.append("  {" + json.dumps(head, ensure_ascii=False)[1:-1] + ",")
        lines.append('   "turns": [')
        turns = conv["turns"]
        for ti, turn in enumerate(turns):
            sep = "," if ti < len(turns) - 1 else ""
            lines.append("    " + json.dumps(turn, ensure_ascii=False) + sep)
        lines.append("   ],")
        lines.append('   "questions": [')
        questions = conv["questions"]
        for qi, q in enumerate(questions):
            sep = "," if qi < len(questions) - 1 else ""
            lines.append("    " + json.dumps(q, ensure_ascii=False) + sep)
        lines.append("   ]")
        lines.append("  }" + ("," if ci < len(convs) - 1 else ""))
    lines.append(" ]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == json.loads(json.dumps(data))
    path.write_text(text, encoding="utf-8")


def summarise(convs: list[dict[str, object]], gaps: list[float], path: Path) -> None:
    kinds: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    n_turns = n_questions = 0
    conv_tokens: list[float] = []
    for conv in convs:
        kinds[str(conv["kind"])] += 1
        tags.update(str(t) for t in conv["tags"])  # type: ignore[attr-defined]
        turns = conv["turns"]
        assert isinstance(turns, list)
        n_turns += len(turns)
        n_questions += len(conv["questions"])  # type: ignore[arg-type]
        conv_tokens.append(sum(est_tokens(str(t["text"])) for t in turns))
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    print(f"conversations: {len(convs)}  questions: {n_questions}  turns: {n_turns}")
    for kind in KIND_COUNTS:
        print(f"  {kind:<11} {kinds[kind]}")
    total, lo, hi = sum(conv_tokens), min(conv_tokens), max(conv_tokens)
    median = statistics.median(conv_tokens)
    print(
        f"estimated tokens: total {total:,.0f}  per conversation "
        f"min {lo:,.0f} median {median:,.0f} max {hi:,.0f}"
    )
    print(
        f"tokens between consecutive statements ({len(gaps)} gaps): "
        f"min {min(gaps):,.0f} median {statistics.median(gaps):,.0f} "
        f"max {max(gaps):,.0f}"
    )
    print("tags:")
    for tag, count in sorted(tags.items()):
        print(f"  {tag:<24} {count}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=OUT_PATH)
    args = parser.parse_args()
    convs, gaps = build(args.seed)
    meta = {
        "generator": "bench/data/make_updates.py",
        "seed": args.seed,
        "tokens_per_word": TOKENS_PER_WORD,
        "gap_tokens": [MIN_GAP_TOKENS, 10_000],
    }
    dump({"meta": meta, "conversations": convs}, args.out)
    summarise(convs, gaps, args.out)


if __name__ == "__main__":
    main()
