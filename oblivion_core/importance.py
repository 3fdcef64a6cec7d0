"""Write-time appraisal: how important a new memory is, and what category it is.

:class:`HeuristicImportance` is the offline default. It is a documented set of lexical
cues, not a model. Small talk is tried first, the other rules in the order listed:

* **instructions** ("always", "never", "don't" opening a clause or after "you": "Never
  share my number.", "When you book, never pick Ryanair"; inside a statement they
  describe: "I never learned to swim" is a fact; "never mind", "don't worry" and "don't
  forget" (an errand) are none), imperatives of standing rules ("Use metric units.",
  "Reply in Spanish.", "Be concise.", "Avoid ...", "Keep your answers short", "Stop
  ...ing"), "I'd like you to", "address me as", "make sure", "from now on", "remember
  to", "you should", "please ... every" -> category ``instruction``, importance 0.9; a
  greeting before the turn ("Hi - use metric units") does not hide its opening;
* **stated preferences** ("I prefer", "I like", "I love", "I hate", "my favourite",
  "call me", habits of one's own: "I never drink coffee", "I always take the train")
  -> ``preference``, 0.75;
* **tasks and commitments** ("remind me", "don't forget", "I will", "I'll", "deadline",
  "due" (not "due to"), "todo", "need to", "add ... to the list") -> ``task``, 0.6;
* **events** (meetings, trips, flights, appointments, "yesterday", "tomorrow", "last
  week") -> ``event``, 0.5;
* **what must never be lost** (allergies, medication and doses, diabetes, asthma,
  coeliac disease, pregnancy, blood type, "do not resuscitate", emergency contacts,
  passport, licence and account numbers) -> importance at least 0.8 whatever the
  category above (``fact`` if none): above ``Policy.protect_importance``, never
  forgotten;
* **small talk** (greetings, thanks, weather, "how are you", very short turns with no
  content) -> ``small_talk``, 0.1: every sentence of the turn is chit-chat. A sentence is
  read in three steps. (1) Its social phrases are taken out ("good morning", "how's it
  going", "see you later", "talk soon", "happy birthday", "merry christmas", "nice to meet
  you", "sleep well", "will do", "same here", "good point", "sounds good", "no worries",
  "thanks for the help", ...). (2) Names addressed are dropped, but only right after a
  greeting, thanks or reaction word or a phrase ("Hey Mel!", "Thanks, Anna!", "Good to
  see you, Mel!", "Cheers mate!") or after a chit-chat clause that has a subject ("That's
  awesome, Mel!"); never after a bare answer word ("Sure, Tokyo.", "Definitely, Rust!"
  keep their answer). (3) What is left must be social words only: a small list of
  greetings, thanks, acknowledgements, reactions and praise ("hi", "thanks", "ok",
  "cool", "lol", "wow", "great", "yes", "no", "sure") and the function words around them
  ("so", "much", "the", "you", "that's"); emoji and emoticons (":)", "<3") are no
  words. Content verbs and nouns are never social ("I can't do the morning.", "I got a
  new one today."). Words of time and address ("today", "tonight", "there", "everyone")
  pass only next to a phrase ("How are you today?"), weather words only in a sentence
  about the weather ("It's raining again, the weather is awful."; "The weather in Lisbon
  is 30 degrees in July." is a fact), and "Morning!", "Later!", "Enjoy!" or "Same!"
  only on their own. A speaker label opening a line is dropped when it is a role
  ("user:", "assistant:") or up to three capitalised words that are no field label
  ("Caroline:", "A:"; "Status: ok" keeps "Status", and a label holding a yes or no is a
  record: "Diabetic: yes"). A greeting before content does not
  make the turn small talk ("Thanks! My account number is 55-1234" is a fact), nor does
  shortness ("I'm vegetarian.", "Done.", "Yes, Thursday works."). A turn of chit-chat
  only is small talk whatever cue of the other rules it holds ("Nice meeting you!", "See
  you tomorrow!", "Never mind.");
* anything else -> ``fact``, 0.4.

The cues are English: a turn in another language is a fact unless it holds one.

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

from oblivion_core.speakers import ROLES
from oblivion_core.triggers import may_match
from oblivion_core.typography import straighten

# "always", "never", "don't" make an instruction where they open a clause (an
# imperative: "Never share my number.", "Please always cc Ann", "When you book, never pick
# Ryanair") or follow "you"; inside a statement they describe ("I never learned to swim",
# "My brother always calls on Sundays", "I don't have a car" are facts).
# Imperatives of standing rules ("Use metric units.", "Reply in Spanish.", "Be concise.",
# "Avoid meetings on Fridays."); an errand ("Book a table", "Buy milk") is no rule.
_RULE_VERBS = (
    r"use|reply|respond|answer (?:in|with|only|briefly|in)|write (?:in|with|like|only)|speak|"
    r"talk to me|be|avoid|keep (?:it|them|things|(?:your |my )?(?:answers|replies|responses|"
    r"messages|emails))|stick to|"
    r"refrain|default to|format|address me|cc|copy me|prefer"
)


class _Instruction:
    """The instruction rule: cues that must open a clause, tried at each clause's start
    only (``match``), and cues that count anywhere (``search``). One regex with a
    lookbehind at every position cost 12.7 us a text, a quarter of the whole appraisal."""

    _SPLIT = re.compile(r"[.!?;:,(\n]")
    _OPENING = re.compile(
        r"[ \t]*(?:(?:please|and|but|so|also|then)[ \t]+)?(?:"
        # not "never mind", "don't worry", "don't forget" (an errand), "never again"
        # ("Never again book me a window seat" is one; "Never again." is not)
        r"(?:always|never(?![ \t]+mind\b)(?![ \t]+again\b(?![ \t]+\w))|"
        r"(?:do not|don't|dont)(?![ \t]+(?:worry|forget|mention it)\b))\b|"
        # "Stop recommending podcasts", not "Stop kidding!" or "Stop worrying"
        r"stop (?!(?:worrying|kidding|joking|teasing|making me)\b)\w+ing[ \t]+\w|"
        rf"(?:only[ \t]+)?(?:{_RULE_VERBS})\b)",
        re.I,
    )
    _ANYWHERE = re.compile(
        r"\b(?:i'd like|i would like) you to\b(?![ \t]+(?:know|meet|hear|see|have)\b)|"
        r"\byou to (?:always|never)\b|"
        r"\b(?:address|refer to) (?:me|us|my \w+) as\b|"
        r"\b(?:you|you'll|you will|you'd|you should|you must)[ \t]+(?:always|never)\b|"
        r"\bi (?:always|never|don't|do not) want (?:you|it|them|replies|answers)\b|"
        r"\b(?:make sure|from now on|remember to|you must|you should|be sure to|"
        r"every time|whenever you|stop (?:using|doing))\b|"
        r"\bplease\b[^.!?\n]{0,60}\bevery\b",
        re.I,
    )

    def search(self, text: str) -> bool:
        if self._ANYWHERE.search(text):
            return True
        return any(self._OPENING.match(part) for part in self._SPLIT.split(text))


_RULES: tuple[tuple[str, float, _Instruction | re.Pattern[str]], ...] = (
    ("instruction", 0.9, _Instruction()),
    (
        "preference",
        0.75,
        re.compile(
            r"\b(i (?:really )?(?:prefer|like|love|hate|dislike|enjoy|can't stand)|"
            r"my fav(?:ou?)?rite|call me|i'd rather|i would rather|"
            # habits of one's own ("I never drink coffee", "I always take the train")
            r"i (?:always|never|usually|don't|do not|won't|can't|cannot|no longer) "
            r"(?:eat|drink|fly|drive|smoke|travel|take|use|work|wake|sleep))\b",
            re.I,
        ),
    ),
    (
        "task",
        0.6,
        re.compile(
            r"\b(remind me|don't forget|do not forget|i will|i'll|deadline|due(?![ \t]+to\b)|"
            r"to-?do|need to|have to|"
            r"(?:add|put|remove|take) .{1,40}(?:on|to|off|from) (?:the|my) .{0,20}list)\b",
            re.I,
        ),
    ),
    (
        "event",
        0.5,
        re.compile(
            r"\b((?:meeting|trip|flight|appointment)s?|yesterday|tomorrow|tonight|"
            r"(?:last|next) (?:week(?:end)?|month|year|night)|went to|going to)\b",
            re.I,
        ),
    ),
)

#: Every match of a rule's pattern holds one of its words (:mod:`~oblivion_core.triggers`);
#: the instruction rule has no such words.
_RULE_TRIGGERS: dict[str, tuple[str, ...]] = {
    "preference": (
        *("prefer", "like", "love", "hate", "enjoy", "can't stand", "fav", "call me", "rather"),
        *("eat", "drink", "fly", "drive", "smoke", "travel", "take", "use", "work", "wake"),
        "sleep",
    ),
    "task": (
        *("remind me", "forget", "i will", "i'll", "deadline", "due", "to-do", "todo"),
        *("need to", "have to", "list"),
    ),
    "event": (
        *("meeting", "trip", "flight", "appointment", "yesterday", "tomorrow", "tonight"),
        *("last ", "next ", "went to", "going to"),
    ),
}

# What must never be lost (health and safety, identity and account numbers): importance
# at least 0.8 whatever the category ("I'm allergic to penicillin, found out last year" is
# an event, and kept).
_CRITICAL = re.compile(
    r"\b(allerg(?:y|ies|ic)|anaphyla\w*|epi-?pens?|asthma\w*|diabet\w*|insulin|"
    r"epilep\w*|seizures?|pacemaker|blood (?:type|group|thinners?)|pregnan\w*|coeliac|"
    r"celiac|medications?|medicines?|prescri(?:bed|ption)\w*|\d+ ?mg|dosage|"
    r"do not resuscitate|dnr|emergency contact|next of kin|passport|account (?:number|no)|"
    r"sort code|iban|social security|national insurance|routing number|nhs number|"
    r"(?:driv(?:ing|er'?s?) )?licen[cs]e (?:number|no))\b",
    re.I,
)
#: Every match of :data:`_CRITICAL` holds one of these (:mod:`~oblivion_core.triggers`).
_CRITICAL_TRIGGERS = (
    "allerg",
    "anaphyla",
    "epi",
    "asthma",
    "diabet",
    "insulin",
    "seizure",
    "pacemaker",
    "blood ",
    "pregnan",
    "coeliac",
    "celiac",
    "medic",
    "prescri",
    "mg",
    "dosage",
    "resuscitate",
    "dnr",
    "emergency contact",
    "next of kin",
    "passport",
    "account ",
    "sort code",
    "iban",
    "social security",
    "national insurance",
    "routing number",
    "nhs number",
    "licen",
)
CRITICAL_IMPORTANCE = 0.8


def _words(text: str) -> frozenset[str]:
    """A word list written as a text block."""
    return frozenset(text.split())


# Small talk. Each sentence of a turn, its speaker label aside, is read on its own. Its
# social phrases are taken out first; what is left may hold only social words, and, next
# to a phrase, words of time or address ("How are you today?", "Thanks again, all!").
_YOU = r"(?:you all|you both|you guys|you|u|ya|y'all|everyone)"
_NICE = r"(?:good|nice|great|lovely|wonderful|fantastic|fun|safe|relaxing|restful|awesome)"
_PERIOD = r"(?:day|night|evening|morning|afternoon|weekend|week|time|one|holiday|holidays|trip)"
_PHRASES = (  # taken out in this order: a longer phrase before one it starts with
    rf"(?:i )?hope (?:you|u) (?:have|had|are having|enjoy) (?:a|an) {_NICE} {_PERIOD}",
    # answers and fillers that hold a cue of another rule ("I don't know.", "I love it!")
    r"(?:i )?(?:don't|do not|dont) know|i (?:don't|do not) (?:get it|think so)|i have to say",
    r"i (?:really )?(?:love|like) (?:it|that|this|them)",
    r"(?:always )?(?:happy|glad) to help|always a pleasure|never better",
    r"let me (?:think|check|see)|brb|gtg|one sec(?:ond)?|"
    r"(?:just|hang on|hold on|wait) a (?:sec|second|moment|minute)",
    r"(?:i'll |i will )?(?:think about it|let (?:you|u) know|be right back|check)",
    r"(?:good|great) question|i'm back",
    r"(?:enjoy|have a (?:safe|good|nice|great)) (?:your )?(?:trip|flight|journey)|"
    r"how was (?:your|the) (?:trip|flight|journey)",
    r"make sure (?:you|to)(?: have (?:fun|a good time))?|you should",
    # thanks
    r"(?:thanks|thank you|thank u|ty) (?:so much |very much |a lot )?for (?:asking|sharing|"
    r"everything|that|this|letting me know|the chat|being there(?: for me)?|having my back|"
    r"all (?:the|your) (?:help|support|advice)|"
    r"(?:the|your) (?:(?:quick|fast|kind|lovely|great|detailed|prompt|thoughtful) )?"
    r"(?:help|advice|tip|tips|info|information|update|reminder|heads up|chat|talk|"
    r"support|kind words|suggestion|recommendation|offer|invite|time|compliment|reply|"
    r"response|patience|understanding|concern))",
    rf"thank {_YOU}|many thanks|thanks (?:a lot|a bunch|a ton|a million|heaps|loads|again|"
    r"anyway)",
    r"(?:much |really |greatly )?appreciated|(?:i |we )?(?:really |truly )?appreciate (?:it|"
    r"that|you|this|(?:your|the) (?:help|support|friendship|kind words|encouragement|advice))",
    # a fine day, and wishes for one (before "good day")
    rf"(?:have|had|having|enjoy) (?:a|an|the) {_NICE} {_PERIOD}|have fun",
    r"(?:what|such) a (?:lovely|beautiful|gorgeous|glorious|nice|great|perfect) day",
    rf"(?:a )?(?:lovely|beautiful|gorgeous|glorious|perfect|{_NICE}) (?:day|weekend)"
    r"(?: (?:today|out|outside|so far))?",
    r"keep (?:it up|going|at it|(?:up )?the good work|doing what you love)",  # before "good work"
    # greetings, how-are-yous and their answers
    rf"(?:nice|good|great|lovely|glad|happy|pleased|a pleasure) (?:to|2) (?:meet|see|hear from|"
    rf"chat with|talk to|talk with|catch up with) {_YOU}(?: (?:too|again|all|both))?",
    rf"(?:it was |it's |was )?(?:nice|good|great|lovely|fun|awesome) (?:meeting|seeing|talking|"
    rf"chatting|catching up|hearing from)(?: (?:to|with) {_YOU}| {_YOU})?",
    r"(?:nice|good|great|lovely|fun|awesome) to (?:chat|talk|catch up)(?: again)?",
    r"(?:good|nice|great|glad|happy|sorry|sad) to (?:know|hear)(?: (?:that|it|this))?",
    r"good (?:morning|afternoon|evening|night|nite|day)|(?:hi|hey|hello|howdy) there",
    rf"how (?:are|r) (?:{_YOU}|things)(?: (?:doing|going|keeping|holding up|feeling|been))?",
    r"how(?:'s| is| has| was) (?:it|everything|life|things|your (?:day|week|weekend|evening|"
    r"morning|night|family)|the (?:family|day|week|weekend))(?: (?:going|been))?",
    r"how(?: have|'ve) you been|how you been|how (?:you|ya) doing|how do you do",
    r"what(?: have|'ve)? you been up to|what are you up to|enough about me",
    r"(?:how|what) about you|and you|what's (?:up|new|good|happening|going on)(?: with you)?",
    r"whassup|wassup|wasup|anything new|long time no (?:see|talk|chat)",
    rf"(?:i )?(?:hope|trust) (?:you're|you are|{_YOU} are|all is|everything is|things are|"
    r"you're doing|you are doing|it's|everything's) (?:well|good|ok|okay|fine|going well)",
    r"(?:i )?hope (?:this|that|it) helps|(?:glad|happy) (?:it|that) helped",
    r"(?:glad|happy) to help|(?:glad|happy) (?:i|we) could help",
    r"(?:i )?hope (?:you|u) (?:enjoy|like|liked|enjoyed) it|(?:glad|happy) (?:you|u) "
    r"(?:had fun|liked it|like it|enjoyed it|enjoy it)",
    r"(?:i )?just wanted to say (?:hi|hello|hey|thanks)",
    r"feel free to reach out(?: anytime| any time)?",
    r"i'm (?:always )?here for you|you rock|that's the spirit",
    # farewells and wishes
    rf"see {_YOU}(?: (?:later|soon|then|around|tomorrow|next time|next week|there|again))?",
    rf"(?:i'll |we'll )?(?:talk|speak|chat) (?:to {_YOU} )?(?:soon|later|tomorrow|again)",
    rf"catch {_YOU} (?:later|soon|around)|take care(?: of yourself)?|take it easy",
    r"bye for now|bye bye|until next time|till next time|later then",
    r"(?:let's |we should )?catch up (?:soon|later|again)",
    r"enjoy (?:it|yourself|yourselves|your (?:day|evening|weekend|meal|week|holiday|break)|"
    r"the (?:rest of (?:your|the) (?:day|week|weekend)|day|evening|weekend|show))",
    r"sleep (?:well|tight)|sweet dreams|night night|rest well|stay (?:safe|well|warm|cool|dry)",
    r"let me know if (?:you|u) (?:want|need) (?:a hand|any help|anything)(?: with anything)?",
    r"keep in touch|keep me posted|let me know|welcome back",
    r"happy (?:birthday|bday|b-day|anniversary|holidays|new year|easter|thanksgiving|hanukkah|"
    r"diwali|eid|halloween|christmas|friday|weekend|mother's day|father's day|valentine's"
    r"(?: day)?)(?: to you)?",
    r"merry (?:christmas|xmas|x-mas)|season's greetings",
    r"good luck(?: with (?:that|it|everything))?|best of luck|best wishes|all the best",
    r"fingers crossed|break a leg|get well soon|feel better(?: soon)?|bless you|god bless",
    r"well done|(?:good|great|nice) (?:job|work|one|try|call|idea|point)|way to go|you did it",
    r"(?:fair|valid|excellent|interesting) point|(?:i'm )?(?:so )?proud of (?:you|u)",
    r"(?:miss|love) (?:you|u|ya)(?: too)?|hugs|xoxo",
    r"(?:you|we)(?:'ve)? got this|hang in there",
    r"(?:i )?can't wait(?: to (?:hear|see|read) (?:it|about it|more|them|that)| to catch up)?",
    # acknowledgements and reactions
    r"will do|can do|sure thing|you bet|sounds (?:good|great|fine|perfect|lovely|fun|amazing|"
    r"awesome|cool|nice|interesting|like a plan|like fun|about right)|(?:it's )?a deal",
    r"(?:that's|it's) (?:just )?how it goes|worth a (?:try|shot)(?:, at least)?|that's a classic",
    r"(?:that |it )?makes sense|that tracks|fair enough|same here|same to you|same for me",
    r"me too|me neither|you too|likewise|ditto",
    r"no (?:worries|worry|problem|problemo|probs|prob|biggie|big deal|stress|sweat|rush)"
    r"(?: at all)?",
    r"not a problem|you're (?:most |very )?welcome|(?:my|the|a) pleasure|anytime|any time",
    r"of course|for sure|for real|got it|i guess(?: so)?|i think so|i get it|"
    r"i (?:totally |completely |fully |quite )?agree(?: with (?:you|that))?|you're the best",
    r"(?:i )?hope so|(?:i'm )?not sure|no idea|who knows",
    r"(?:i see|i know|you know|i understand)(?![ \t]+(?-i:[A-Z]))",  # not "I know Anna."
    rf"(?:that's|you're|so|very|how|too) (?:kind|sweet|thoughtful)(?: of {_YOU})?|kind of {_YOU}",
    r"(?:that's|it's|all) (?:ok|okay|fine|alright|all right|good)|all right|my bad|oh well",
    r"(?:i'm |i am )?(?:doing|been) (?:well|good|great|fine|ok|okay|alright)|can't complain",
    r"not (?:too |so |that )?bad|(?:not|nothing) (?:much|really)(?: (?:new|here))?",
    r"looks (?:good|great|fine|amazing|awesome|lovely|nice|perfect|fun)",
    r"too bad|what a (?:shame|pity)|(?:that's )?a (?:shame|pity)|here you go|there you go",
    r"(?:oh )?my (?:god|gosh|goodness)|oh no|oh dear|no way|good grief",
    r"isn't it|wasn't it|aren't they|don't you think",  # tag questions
    r"never mind|nevermind|don't worry(?: about it)?|don't mention it",
    r"no need to (?:apologise|apologize|worry)",
)
_PHRASE = tuple(re.compile(rf"\b(?:{p})\b", re.I) for p in _PHRASES)
# Every word a phrase may hold, in pieces split at apostrophes ("how's": "how", "s"): a
# sentence with any other word, uncapitalised (no name), is content without more ado.
_PHRASE_PIECES = frozenset(re.findall(r"[a-z0-9]+", " ".join(_PHRASES)))
_MARK = "\x1f"  # where a social phrase stood: a name may be addressed right after it
# Words that are never content on their own: greetings, thanks, acknowledgements,
# reactions and praise ...
_INTERJECTIONS = _words(
    """
    hi hii hiii hey heyy heyyy heya hello hiya howdy yo sup bye byee goodbye goodnight gn cya ttyl
    thanks thank thx ty tysm thanx thnx cheers ok okay okey k kk alright yes yeah yea yep yup
    ya yah no nope nah sure right true correct indeed exactly agreed absolutely definitely
    totally certainly noted gotcha understood fine fair cool sweet neat wow whoa woah omg oh
    ohh ooh ah ahh aha aw aww awww ha hah haha hahaha hahahaha heh hehe lol lmao rofl xd yay
    woohoo hooray oops whoops hmm hm hmmm huh uh um umm er erm meh eh phew ugh nice great
    awesome amazing wonderful fantastic brilliant excellent perfect lovely beautiful gorgeous
    stunning cute adorable impressive incredible interesting inspiring fun funny good glad
    happy congrats congratulations sorry welcome please super fab fabulous terrific splendid
    understandable np
    """
)
# ... and the function words around them.
_SOCIAL = _INTERJECTIONS | _words(
    """
    a an the so too very much really just and but or of to for with you your you're yours u
    ur that that's this it it's is was are were be been am i i'm me my we all again also
    such quite pretty how what what's as well still though
    """
)
# Words of time and address: no content next to a social phrase ("How are you today?"),
# content on their own ("I'm going back today.", "The morning.").
_CONTEXT = _words(
    """
    today tonight morning afternoon evening night weekend week day days lately recently these
    now then later soon anyway there here everyone everybody both guys folks back
    """
)
# A sentence that mentions the weather may describe it ("It's raining again, the weather
# is awful."); "The weather in Lisbon is 30 degrees in July." has content still.
_WEATHER = re.compile(
    r"\b(?:weather|rain|raining|rainy|snow|snowing|snowy|sunny|sunshine|windy|foggy|stormy|"
    r"humid|muggy|drizzle|drizzly|freezing|chilly|cold|hot|warm|cloudy)\b",
    re.I,
)
_WEATHER_WORDS = _CONTEXT | _words(
    """
    weather rain raining rainy rained snow snowing snowy sun sunny sunshine wind windy fog
    foggy storm stormy humid muggy drizzle drizzly freezing chilly cold hot warm cool mild
    wet dry grey gray cloudy pouring down outside out getting has have had miserable awful
    terrible horrible grim glorious crazy weird bit little lot such
    """
)
# Said alone, with at most interjections around, these are small talk ("Morning!",
# "Enjoy!", "Haha same"); in a sentence they are content ("The morning.", "Same as before").
_ALONE = _words(
    "morning evening afternoon night nite later laters enjoy same likewise ditto deal never"
)
# A speaker label opening a line: a chat role (``speakers.ROLES``: "user:", "assistant:",
# any case), "Speaker 2:", or a name of up to three capitalised words ("Caroline:",
# "Dr. Jane Smith:", "A:"), but not a field label such as "Status:", "Note:" or "Answer:"
# (listed below), a weekday or a month: those are content.
_SPEAKER = re.compile(
    r"^[ \t]*(?:(?i:" + "|".join(sorted(ROLES)) + r"|"
    r"speaker(?:[ \t]*\d+)?)|(?P<name>[A-Z][\w'.-]*(?:[ \t][A-Z][\w'.-]*){0,2}))[ \t]*:"
    r"(?:[ \t]+|$)",
    re.M,
)
_LABEL_WORDS = _words(
    """
    status note notes nb ps fyi re edit update updates news info answer question reply
    response result results reason summary reminder todo task tasks tip warning important
    caution date time when where who what why how location place address name email phone
    number password code subject topic title goal goals plan decision outcome verdict score
    total price cost budget eta deadline due fact facts memory context source diet allergy
    allergies preference preferences order booking ticket issue bug fix error example step
    problem solution conclusion description comment feedback rating age birthday occupation
    job role hobby hobbies favorite favourite meeting event agenda weather mood idea
    detail details size colour color version progress correction today tomorrow tonight
    yesterday
    """
)
# A name addressed, dropped as no content: right after a greeting, thanks or reaction word
# or a social phrase ("Hey Mel!", "Thanks, Anna!", "Good to see you, Mel!", "Cheers mate!"),
# and after a comma that ends a chit-chat clause of its own ("That's awesome, Mel!"), never
# after a bare answer ("Sure, Tokyo.", "Definitely, Rust!" keep their answer).
_ADDRESS_WORDS = _words(
    "all everyone everybody guys folks mate mates buddy pal dude bro man friend friends y'all "
    "love dear darling team fam"
)
_NAME_WORD = r"(?!I')[A-Z](?:[^\W\d_]|')+"  # not "I'm"
_ADDRESSEE = (
    rf"(?P<name>{_NAME_WORD}(?:[ \t]{_NAME_WORD})?|(?i:{'|'.join(sorted(_ADDRESS_WORDS))}))"
    r"(?=[ \t]*(?:[^\w\s]|$))"
)
_VOCATIVE = re.compile(
    rf"(?P<cue>{_MARK}|\b(?i:hi|hey|heya|hello|hiya|howdy|yo|thanks|thank|thx|ty|cheers|bye|"
    r"goodbye|night|morning|evening|afternoon|congrats|congratulations|dear|sorry|welcome|wow|"
    rf"whoa|woah|aw+|omg|yay))[ \t]*,?[ \t]*{_ADDRESSEE}"
)
_CLAUSE_NAME = re.compile(
    rf"^(?P<clause>.*\b(?i:that's|it's|that|this|you|you're|i'm|how|what)\b[^,]*),[ \t]*"
    rf"{_ADDRESSEE}"
)
# The words a chit-chat sentence may hold besides its phrases and capitalised names.
_POSSIBLE = _SOCIAL | _WEATHER_WORDS | _ALONE | _ADDRESS_WORDS
_EMOTICON = re.compile(r"(?<!\S)[:;=][-']?[()\[\]DPpOo3/\\|*]+(?=[\s.,!?]|$)|<3+")  # ":)", "<3"
_SENTENCE = re.compile(r"(?<=[.!?])\s+|[;\n]+")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")

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
#: Every match of :data:`_DATE` holds a digit (a month is a date only beside a day's
#: number) or a weekday.
_DATE_TRIGGERS = (*"0123456789", "day")
_CALENDAR_WORD = re.compile(rf"{_MONTH}|{_WEEKDAY}", re.I)
_NUMBER = re.compile(r"\d")


# Greetings, thanks and reactions opening a turn (not "I", "we": "I never learned to swim"
# opens with no imperative).
_GREETING_LEAD = re.compile(
    r"^(?:[\W_]*\b(?:"
    + "|".join(sorted(_INTERJECTIONS | _words("there so much you a lot again morning evening")))
    + r")\b)+[\W_]*",
    re.I,
)


class HeuristicImportance:
    """The offline default :class:`~oblivion_core.typing.ImportanceScorer`."""

    def categorize(self, text: str) -> str:
        """The first matching rule's category (``fact`` if none matches)."""
        return self._rule(text)[0]

    def score(self, text: str) -> float:
        """Base importance of the category plus up to 0.15 for specific details."""
        base = self._rule(text)[1]
        stripped = straighten(text.strip())  # "Oʼhare" is a name as "O'Hare" is
        dated = may_match(stripped.lower(), _DATE_TRIGGERS) and _DATE.search(stripped)
        detail = sum(
            0.05 for hit in (_NAME.search(stripped), dated, _NUMBER.search(stripped)) if hit
        )
        return float(min(1.0, base + min(detail, 0.15)))

    @staticmethod
    def _rule(text: str) -> tuple[str, float]:
        return _first_rule(text.strip())


@functools.lru_cache(maxsize=4096)  # a write asks for the category, then the score
def _first_rule(stripped: str) -> tuple[str, float]:
    stripped = straighten(stripped)  # "don’t" as "don't", for every rule below
    turn = _EMOTICON.sub("", _SPEAKER.sub(_drop_speaker, stripped))
    if all(_is_chitchat(s) for s in _SENTENCE.split(turn)):
        return "small_talk", 0.1
    # a greeting run into the turn ("Hi - use metric units", "Ok so never call me") does
    # not hide that it opens with an imperative
    body = _GREETING_LEAD.sub("", stripped)
    lower = stripped.lower()  # body is its end: holds no trigger that this does not
    critical = may_match(lower, _CRITICAL_TRIGGERS) and _CRITICAL.search(stripped)
    floor = CRITICAL_IMPORTANCE if critical else 0.0
    for category, importance, pattern in _RULES:
        triggers = _RULE_TRIGGERS.get(category)
        if triggers is not None and not may_match(lower, triggers):
            continue
        if pattern.search(stripped) or (body is not stripped and pattern.search(body)):
            return category, max(importance, floor)
    return "fact", max(0.4, floor)


def _is_chitchat(sentence: str) -> bool:
    """Whether one sentence has no content: social phrases, social words and names
    addressed only (and words of time or address next to a phrase, weather words in a
    sentence about the weather)."""
    for word in _WORD.findall(sentence):
        lower = word.lower()
        if not (word[0].isupper() or lower in _POSSIBLE or _phrase_word(lower)):
            return False
    weather = _WEATHER.search(sentence) is not None
    phrases = 0
    for pattern in _PHRASE:
        sentence, n = pattern.subn(f" {_MARK}", sentence)
        phrases += n
    sentence = _VOCATIVE.sub(_drop_name, sentence)
    sentence = _CLAUSE_NAME.sub(_drop_name, sentence)
    words = _WORD.findall(sentence.lower())
    allowed = _WEATHER_WORDS if weather else _CONTEXT if phrases else frozenset()
    rest = [w for w in words if w not in _SOCIAL and w not in allowed]
    if not rest:
        return True
    return (
        len(rest) == 1
        and rest[0] in _ALONE
        and all(w in _INTERJECTIONS for w in words if w != rest[0])
    )


def _phrase_word(word: str) -> bool:
    """Whether a social phrase may hold the word (its pieces, split at apostrophes)."""
    return all(piece in _PHRASE_PIECES for piece in word.split("'"))


def _drop_speaker(match: re.Match[str]) -> str:
    """A speaker label is no content; a field label ("Status:"), a date, or a label
    holding a yes or no ("Diabetic: yes", "Smoker: no": a record, not a speaker) is."""
    name = match.group("name")
    if name is None:
        return ""
    words = name.lower().replace(".", " ").split()
    if any(w in _LABEL_WORDS or _CALENDAR_WORD.fullmatch(w) for w in words):
        return match.group(0)
    value = match.string[match.end() :].split("\n", 1)[0].strip(" \t.!").lower()
    if value in _FIELD_VALUES:
        return match.group(0)
    return ""


_FIELD_VALUES = _words("yes no y n true false none n/a na positive negative unknown")


def _drop_name(match: re.Match[str]) -> str:
    """A name addressed ("Hey Mel", "Thanks, Anna!") is no content; a weekday or month is."""
    name = match.group("name")
    if name is not None and _CALENDAR_WORD.fullmatch(name):
        return match.group(0)
    return match.group("cue") if "cue" in match.groupdict() else match.group("clause")
