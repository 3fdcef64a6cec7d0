"""Write-time appraisal: the documented lexical rules of HeuristicImportance."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from oblivion_core import HeuristicImportance
from oblivion_core.importance import _PHRASES
from oblivion_core.typing import ImportanceScorer

scorer = HeuristicImportance()


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Always answer in British English.", "instruction"),
        ("Never share my phone number.", "instruction"),
        ("From now on, reply in French.", "instruction"),
        ("I prefer window seats on flights.", "preference"),
        ("My favourite colour is green.", "preference"),
        ("Remind me to call the bank.", "task"),
        ("The deadline for the report is close.", "task"),
        ("We had a meeting with the landlord yesterday.", "event"),
        ("Hi there!", "small_talk"),
        ("thanks", "small_talk"),
        ("ok", "small_talk"),
        ("The Eiffel tower is in Paris and is made of iron.", "fact"),
    ],
)
def test_categories_follow_the_documented_cues(text: str, category: str) -> None:
    """Each documented cue yields its category; anything else is a fact."""
    assert scorer.categorize(text) == category


@pytest.mark.parametrize(
    ("text", "importance"),
    [
        ("Always answer in English.", 0.9 + 0.05),  # "English" is a name
        ("thanks", 0.1),
        ("The tower is made of iron and steel.", 0.4),
        ("The tower has 1665 steps to the top.", 0.45),  # a number
        ("The tower near Paris opened on Monday with 300 guests.", 0.55),  # name+date+number
    ],
)
def test_importance_is_category_base_plus_details(text: str, importance: float) -> None:
    """Importance is the category's base plus 0.05 per kind of specific detail."""
    assert scorer.score(text) == pytest.approx(importance)


@given(st.text(max_size=300))
def test_scores_are_in_unit_interval_for_any_text(text: str) -> None:
    """Any text scores within [0, 1] and gets a non-empty category."""
    assert 0.0 <= scorer.score(text) <= 1.0
    assert scorer.categorize(text)


BASE = {"instruction": 0.9, "preference": 0.75, "task": 0.6, "event": 0.5, "fact": 0.4}
BASE["small_talk"] = 0.1


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Great, my new address is 12 Baker Street in London.", "fact"),
        ("Ok so the server password rotates every 90 days.", "fact"),
        ("Thanks! My account number is 55-1234 at Barclays.", "fact"),
        ("Hi there, the gate code is 4417.", "fact"),
        ("Cool. My sister Anna lives in Porto.", "fact"),
        ("Hello! How are you? My flat is on the third floor.", "fact"),
        ("Thanks so much! I prefer aisle seats.", "preference"),
        ("Nice, remind me to call the bank.", "task"),
        ("user: Thanks! My passport expires in 2031.", "fact"),
    ],
)
def test_a_greeting_before_content_is_classified_by_the_content(text: str, category: str) -> None:
    """A greeting or thanks opening a turn does not file the content after it as small talk."""
    assert scorer.categorize(text) == category


@pytest.mark.parametrize(
    "text",
    [
        "I'm vegetarian.",
        "Allergic to peanuts.",
        "Vegan since 2019.",
        "Lactose intolerant.",
        "My birthday's tomorrow!",
        "I'm a nurse.",
        "Left-handed.",
        "Caroline: I'm vegetarian.",
        # content words are no filler, whatever their length
        "I can't do the morning.",
        "I'm going back today.",
        "I got a new one today.",
        "Done.",
        "Tomorrow at 9.",
        "The morning.",
        "Today!",
        "Everyone.",
        "Thanks, done.",
        "Congrats on the new job!",
        # short answers: the answer after an acknowledgement is no name addressed
        "Sure, Tokyo.",
        "Definitely, Rust!",
        "Yes, Thursday works.",
        "No, the blue one.",
        "Oh yes, Paris!",
        "Great, today then.",
        "Thanks, Tuesday!",
        "Hi, I'm Anna.",
        "I know Anna.",
        # a field label is no speaker
        "Status: done.",
        "Status: ok",
        "Answer: yes",
        # a farewell or the weather around content
        "See you at 9 at the station.",
        "The weather in Lisbon is 30 degrees in July.",
        "It's sunny in Lisbon.",
        "It's Tokyo, isn't it?",
    ],
)
def test_short_turns_with_content_are_not_small_talk(text: str) -> None:
    """Shortness alone does not make a turn small talk: a fact about the user is content."""
    assert scorer.categorize(text) != "small_talk"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Hi!",
        "Thanks so much!",
        "ok cool",
        "Great, thanks!",
        "Lovely weather today!",
        "How are you?",
        "haha nice",
        "thanks a lot",
        "Hello again!",
        "Good night!",
        "Bye, see you!",
        "It's raining again, the weather is awful.",
        "Hey Mel! Good to see you!",
        "Thanks, Anna!",
        "Caroline: Thanks, that's so kind!",
        "Wow, that's awesome! Thank you so much!",
        "Sounds good to me 😊",
        "Ha, fair enough.",
        # wishes, farewells and acknowledgements
        "Happy birthday!",
        "Merry Christmas!",
        "Talk soon!",
        "Sleep well",
        "Will do.",
        "Same here.",
        "Good point.",
        "Enjoy!",
        "Nice to meet you.",
        "Cheers mate!",
        "Good to know.",
        "No worries!",
        "Doing well, thanks!",
        "Haha same",
        "Take care and talk to you soon.",
        "Thanks for the help today!",
        "Good morning! How are you today?",
        "It's so hot today!",
        # names addressed after a greeting, a phrase or a chit-chat clause
        "Good to see you, Mel!",
        "Merry Christmas, Anna!",
        "Good morning everyone!",
        "That's awesome, Mel!",
        "Wow, that's awesome, Mel!",
        "Happy birthday Mel!",
        "Thanks for the invite Joanna!",
        "Hey Zoë!",
        # emoticons are no words; a chit-chat turn is small talk whatever other cue it holds
        "Thanks :)",
        "Thanks for the kind words <3",
        "Nice meeting you!",
        "See you tomorrow!",
        "Never mind.",
        "Lovely day, isn't it?",
        # speaker labels: a role or a name
        "user: thanks!",
        "assistant: Sounds good!",
        # every chat role the stale-fact rule knows (oblivion_core.speakers.ROLES)
        "support: thanks, have a great day!",
        "host: haha same",
        "model: Sounds good!",
        "Speaker 2: ok",
        "A: ok",
        "Dr. Jane Smith: Hello!",
        "Caroline: Hey Mel! Good to see you!\nMelanie: Hi Caroline! How are you?",
    ],
)
def test_real_small_talk_stays_small_talk(text: str) -> None:
    """Greetings, thanks, weather and content-free reactions remain small talk."""
    assert scorer.categorize(text) == "small_talk"
    assert scorer.score(text) <= 0.1 + 0.05  # + a name addressed ("Mel", "Anna")


@pytest.mark.parametrize(
    ("text", "importance"),
    [
        ("Great, my new address is 12 Baker Street in London.", 0.4 + 0.05 + 0.05),
        ("Aligned to the grid.", 0.4),
        # a number, but no date: no month name or abbreviation here
        ("we need 2 separate rooms for the workshop", 0.45),
        ("the farmers market 12 stalls were full", 0.45),
        ("she has written 3 novels about sailing", 0.45),
        ("order 4 decks of cards for the club", 0.45),
        ("the junebug 5 and the mayor 2 arrived", 0.45),
        ("the marathon 10 runners were late", 0.45),
        # dates: day number and month name or abbreviation, either order
        ("the launch is on 14 march", 0.5),
        ("the launch is on 14 mar", 0.5),
        ("the launch is on the 3rd of may", 0.5),
        ("the launch is on march 14th", 0.5),
        ("the launch is on sept 9", 0.5),
        ("the launch is on 9 sep.", 0.5),
        ("the launch is on 2025-03-14", 0.5),
        ("the launch is on friday", 0.45),  # a weekday, no number
    ],
)
def test_date_detail_needs_a_month_name(text: str, importance: float) -> None:
    """The date detail needs a month name or its abbreviation, not any word starting so."""
    assert scorer.score(text) == pytest.approx(importance)


OPENERS = [
    "Hi",
    "Hey",
    "Hello",
    "Hi there",
    "Thanks",
    "Thank you",
    "Thanks so much",
    "Ok",
    "Okay",
    "Ok so",
    "Cool",
    "Nice",
    "Great",
    "Lol",
    "Haha",
    "Good morning",
]
CONTENT = [
    "my new address is 12 Baker Street in London.",
    "the server password rotates every 90 days.",
    "My account number is 55-1234 at Barclays.",
    "I'm vegetarian.",
    "Allergic to peanuts.",
    "I prefer window seats on flights.",
    "We had a meeting with the landlord yesterday.",
]
WORDS = st.lists(st.from_regex(r"[a-z]{2,9}", fullmatch=True), min_size=1, max_size=8)


@given(
    st.sampled_from(OPENERS),
    st.sampled_from(["! ", ". ", "... ", "? "]),
    st.one_of(st.sampled_from(CONTENT), WORDS.map(" ".join)),
)
def test_a_greeting_never_turns_content_into_small_talk(
    opener: str, separator: str, content: str
) -> None:
    """A greeting sentence before a turn that is not small talk keeps its category."""
    assume(scorer.categorize(content) != "small_talk")
    assert scorer.categorize(f"{opener}{separator}{content}") == scorer.categorize(content)


@given(
    st.sampled_from(OPENERS),
    st.sampled_from([", ", " - ", " "]),
    st.one_of(
        st.sampled_from(CONTENT),
        st.tuples(WORDS, st.integers(0, 9999)).map(lambda t: " ".join([*t[0], str(t[1])])),
    ),
)
def test_a_greeting_in_the_same_sentence_never_turns_content_into_small_talk(
    opener: str, separator: str, content: str
) -> None:
    """A greeting run into content ("Ok so the password ...") keeps the content's category.

    The content here is a statement or holds a number: arbitrary words may finish a
    social phrase ("Nice" + "to meet you", "Thanks" + "for everything") and be small talk.
    """
    assume(scorer.categorize(content) != "small_talk")
    assert scorer.categorize(f"{opener}{separator}{content}") == scorer.categorize(content)


CHITCHAT = [
    "Hi!",
    "Hey Mel!",
    "Thanks so much!",
    "How are you?",
    "Good to see you!",
    "Happy birthday!",
    "Talk soon!",
    "Sounds good.",
    "Haha nice",
    "Lovely weather!",
    "Cheers mate!",
    "You're welcome.",
    "Same here.",
]


@given(
    st.lists(st.sampled_from(CHITCHAT), min_size=1, max_size=4),
    st.sampled_from(["", "Caroline: ", "user: ", "assistant: "]),
)
def test_chit_chat_sentences_together_are_small_talk(sentences: list[str], label: str) -> None:
    """Any run of chit-chat sentences, with or without a speaker label, is small talk."""
    assert scorer.categorize(label + " ".join(sentences)) == "small_talk"


@given(
    st.lists(st.sampled_from(CHITCHAT), min_size=1, max_size=3),
    st.one_of(st.sampled_from(CONTENT), WORDS.map(lambda w: " ".join(w).capitalize() + ".")),
    st.booleans(),
)
def test_one_sentence_with_content_makes_the_turn_content(
    chitchat: list[str], content: str, content_first: bool
) -> None:
    """Chit-chat before or after a sentence with content leaves the content's category."""
    assume(scorer.categorize(content) != "small_talk")
    parts = [content, *chitchat] if content_first else [*chitchat, content]
    assert scorer.categorize(" ".join(parts)) == scorer.categorize(content)


@given(st.sampled_from(CHITCHAT), st.integers(0, 99999), st.integers(0, 10))
def test_a_number_is_content(sentence: str, number: int, position: int) -> None:
    """A number anywhere in chit-chat ("Thanks 42!") is content: not small talk."""
    words = sentence.split(" ")
    words.insert(position % (len(words) + 1), str(number))
    assert scorer.categorize(" ".join(words)) != "small_talk"


@given(st.sampled_from(_PHRASES).flatmap(lambda p: st.from_regex(p, fullmatch=True)))
def test_every_social_phrase_is_small_talk_on_its_own(phrase: str) -> None:
    """Each listed phrase, in any of its forms, is small talk by itself, whatever cue of
    another rule it holds ("nice meeting you", "see you tomorrow", "never mind")."""
    assert scorer.categorize(phrase) == "small_talk"
    assert scorer.categorize(phrase.capitalize() + "!") == "small_talk"


MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
MONTH_NAMES = [
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
]


@given(
    st.sampled_from(MONTHS),
    st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    st.integers(1, 31),
    st.booleans(),
)
def test_words_merely_starting_like_a_month_are_no_date(
    prefix: str, rest: str, day: int, number_first: bool
) -> None:
    """'2 separate', 'market 12', '3 novels': a number, not a date (one detail, not two)."""
    word = prefix + rest
    assume(word not in MONTH_NAMES and word not in {"sept", "june", "july"})
    text = f"{day} {word}" if number_first else f"{word} {day}"
    assert scorer.score(text) == pytest.approx(BASE[scorer.categorize(text)] + 0.05)


@given(
    st.sampled_from(MONTH_NAMES + MONTHS + ["sept"]),
    st.integers(1, 31),
    st.sampled_from(["", "st", "th"]),
    st.booleans(),
)
def test_month_names_and_abbreviations_next_to_a_day_are_dates(
    month: str, day: int, suffix: str, day_first: bool
) -> None:
    """'14 March', '3rd of may', 'Sept 9', '9 sep.': a date and a number (two details)."""
    text = f"{day}{suffix} {month}" if day_first else f"{month} {day}{suffix}"
    assert scorer.score(text) == pytest.approx(BASE[scorer.categorize(text)] + 0.10)


def test_satisfies_the_protocol() -> None:
    """HeuristicImportance is an ImportanceScorer."""
    assert isinstance(scorer, ImportanceScorer)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # "always", "never", "don't" inside a statement describe: no instruction
        ("I never learned to swim.", "fact"),
        ("My brother always calls on Sundays.", "fact"),
        ("The bus to work is always late.", "fact"),
        ("I don't have a car.", "fact"),
        ("Melanie: My kids never let me sleep in on weekends.", "fact"),
        # ... opening a clause, or after "you", they instruct
        ("Never share my phone number.", "instruction"),
        ("Please always cc Ann on invoices.", "instruction"),
        ("When you book flights, never pick the red-eye.", "instruction"),
        ("You should always double-check the dates.", "instruction"),
        ("Hi - never call me before nine.", "instruction"),
        # imperatives of standing rules, and the documented "please ... every"
        ("Use metric units.", "instruction"),
        ("Reply in Spanish.", "instruction"),
        ("Be concise.", "instruction"),
        ("Avoid scheduling anything on Fridays.", "instruction"),
        ("Keep your answers short.", "instruction"),
        ("Please send me a summary every Friday.", "instruction"),
        # habits of one's own are preferences (they were instructions by "never")
        ("I never drink coffee after noon.", "preference"),
        ("I always take the train to work.", "preference"),
        # "due" without "on"/"by" (not "due to"), plural events
        ("The report is due Friday.", "task"),
        ("The match was cancelled due to rain.", "fact"),
        ("The team meetings moved to Thursdays.", "event"),
        ("Both flights to Oslo were cancelled.", "event"),
        # a label holding a yes or no is a record, not a speaker's chit-chat
        ("Smoker: no", "fact"),
        ("Payment received: yes", "fact"),
    ],
)
def test_cues_need_the_right_place(text: str, category: str) -> None:
    """A cue word anywhere made an instruction ("I never learned to swim" decayed at the
    instruction's half-life, never archived); imperatives, "please ... every" (in the
    doc), "due Friday" and plural meetings were missed; "Diabetic: yes" was read as a
    speaker saying "yes", small talk forgotten in days."""
    assert scorer.categorize(text) == category


@pytest.mark.parametrize(
    "text",
    [
        "I'm allergic to penicillin.",
        "I take 5mg of warfarin every evening.",
        "My blood type is O negative.",
        "Emergency contact: my brother Tom.",
        "Diabetic: yes",
        "My passport number is X1234567.",
        "My licence number is MORGA753116SM9IJ.",
        "My driver license number is D123-4567.",
    ],
)
def test_what_must_never_be_lost_is_protected(text: str) -> None:
    """Allergies, medication, account numbers scored 0.4 like trivia: archived in a month
    and unprotected. They are facts of importance 0.8 or more (above the default
    protect_importance, 0.7: never forgotten)."""
    from oblivion_core import Policy

    assert scorer.categorize(text) == "fact"
    assert scorer.score(text) >= 0.8 > Policy().protect_importance


@pytest.mark.parametrize(
    "text",
    [
        "I don't know.",
        "Hmm, I don't think so.",
        "I love it!",
        "Oh I like that, thanks!",
        "Always happy to help!",
        "No, never.",
        "Let me check.",
        "I'll let you know.",
        "Enjoy your trip!",
        "brb",
    ],
)
def test_chit_chat_with_a_cue_is_small_talk(text: str) -> None:
    """Answers and fillers that hold another rule's cue were instructions or preferences
    (importance 0.9 / 0.75, protected: "I don't know." stayed active for a year)."""
    assert scorer.categorize(text) == "small_talk"


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("I'm allergic to penicillin, found out last year.", "event"),
        ("I have asthma so I need to carry my inhaler.", "task"),
        ("My passport number is 533380006, I'll need it at the airport.", "task"),
        ("I'm coeliac.", "fact"),
    ],
)
def test_a_critical_fact_is_kept_whatever_its_category(text: str, category: str) -> None:
    """The critical rule came last: a time or task word in the same turn made an allergy
    an event of importance 0.5, deleted by maintain() with forgetting on."""
    assert scorer.categorize(text) == category
    assert scorer.score(text) >= 0.8


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("I'd like you to always cite your sources.", "instruction"),
        ("I'd like you to address me as Dr. Okafor.", "instruction"),
        ("Stop recommending podcasts to me.", "instruction"),
        ("Don't forget the milk.", "task"),
        ("Never mind, I'll do it myself.", "task"),
        ("Don't worry, I sorted it.", "fact"),
        ("My favorite band is Radiohead.", "preference"),
        # the exceptions are exact: "don't mention it", "never again." alone
        ("Don't mention my salary to anyone.", "instruction"),
        ("Never again book me a window seat.", "instruction"),
        ("Stop kidding!", "fact"),
        ("Stop worrying, really.", "fact"),
        ("I'd like you to meet my sister Ana.", "fact"),
        ("I want you to know I'm grateful.", "fact"),
        ("We went hiking last weekend.", "event"),
    ],
)
def test_held_out_patterns(text: str, category: str) -> None:
    """Patterns a held-out evaluation found: polite instructions ("I'd like you to"),
    "stop ...ing", one-off errands and social openers read as standing rules ("Don't
    forget the milk" was an instruction of importance 0.9, never decaying), the US
    spelling "favorite", "last weekend"."""
    assert scorer.categorize(text) == category
