"""Stale facts said the way people say them: each phrasing family, and the look-alikes."""

from __future__ import annotations

from pathlib import Path

import pytest

from oblivion_core import ManualClock, Oblivion
from oblivion_core.speakers import as_said
from oblivion_core.supersession import Candidate, LexicalSupersession, _expand_is, parse

rule = LexicalSupersession()
TEA = "My favourite drink is tea."


@pytest.mark.parametrize(
    ("label", "speaker"),
    [
        ("user", "user"),
        ("assistant", "assistant"),
        ("Dana", "dana"),
        ("Dr. Lee", "dr. lee"),
        ("Update", None),
        ("Quick update", None),
        ("Note", None),
        ("PS", None),
        ("Correction", None),
        ("Reminder", None),
        ("FYI", None),
        ("Shopping list", None),
        # a phrase to translate or a game: no one's line
        ("Translate", None),
        ("Roleplay", None),
    ],
)
def test_only_names_and_roles_are_speakers(label: str, speaker: str | None) -> None:
    """A ``"Label: "`` prefix is a speaker only if it is a role or a name."""
    assert parse(f"{label}: my favourite drink is matcha now.").speaker == speaker


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        # discourse labels are not speakers
        (TEA, "Update: my favourite drink is matcha now.", True),
        (TEA, "Quick update: my favourite drink is matcha now.", True),
        (TEA, "PS: my favourite drink is matcha.", True),
        ("user: " + TEA, "user: Correction: my favourite drink is matcha.", True),
        # preference verbs, without the subject noun
        (TEA, "I prefer matcha these days.", True),
        (TEA, "I've switched to matcha.", True),
        (TEA, "Actually, I've switched to matcha.", True),
        (TEA, "I've gone off tea, I mostly drink matcha now.", True),
        (TEA, "Nowadays I mostly drink matcha.", True),
        (TEA, "I'm into matcha now.", True),
        ("My favourite drink is coffee.", "I'm more of a tea person now.", True),
        (TEA, "I like matcha better now.", True),
        (TEA, "Not tea anymore, it's matcha.", True),
        (TEA, "It's matcha these days, not tea.", True),
        (TEA, "My new favourite is matcha.", True),
        (TEA, "Matcha is my go-to now.", True),
        ("I prefer tea.", "I've switched to matcha.", True),
        # synonymous subjects
        (TEA, "My go-to drink is matcha now.", True),
        (TEA, "My drink of choice is matcha these days.", True),
        (TEA, "My favourite beverage is matcha now.", True),
        (TEA, "These days my favourite hot drink is matcha.", True),
        ("Rugby has always been my favourite sport.", "My favourite sport is climbing.", True),
        (
            "My favourite food is pho.",
            "My favourite food has changed again. It's lasagne now.",
            True,
        ),
        # names
        ("Call me Sam.", "I go by Alex now.", True),
        ("Call me Sam.", "Please use Alex from now on.", True),
        ("Call me Sam.", "It's Alex, not Sam.", True),
        ("My name is Sam.", "Actually, I'd rather you called me Alex.", True),
        ("I go by Sam.", "I'd prefer to be called Alex.", True),
        # corrections and changed facts
        (
            "My flight is on Tuesday.",
            "Sorry, correction: the flight is on Thursday, not Tuesday.",
            True,
        ),
        ("My flight is on Tuesday.", "The airline has moved my flight to Thursday.", True),
        ("The meeting is on Tuesday.", "The meeting has been moved to Thursday.", True),
        ("My sister lives in Leeds.", "Actually, my sister moved to York last month.", True),
        (
            "My partner works as a nurse.",
            "Update: my partner retrained and now works as a teacher.",
            True,
        ),
        (
            "I pay £1,175 a month in rent.",
            "I misremembered: my rent is £1,600 a month, not £1,175.",
            True,
        ),
        ("I'm allergic to shellfish.", "Correction: it's peanuts I react to, not shellfish.", True),
        (
            "My plan for the evening is clearing the gutters.",
            "Change of plan: my plan for the evening is ironing shirts.",
            True,
        ),
        # independent facts that look like updates
        ("I went to Paris in May.", "I went to Rome in June.", False),
        ("Dana: my favourite colour is blue", "Sam: my favourite colour is green", False),
        ("Dr. Lee: " + TEA, "Dana: my favourite drink is matcha now.", False),
        ("Priya's favourite colour is red", "My favourite colour is green", False),
        ("My mum's favourite city is Paris.", "My favourite city is Rome.", False),
        (TEA, "My brother's favourite drink is coffee.", False),
        (
            "I want a window seat on the outbound flight",
            "I want an aisle seat on the return flight",
            False,
        ),
        ("My favourite hot drink is tea.", "My favourite cold drink is lemonade.", False),
        (TEA, "My favourite colour is green now.", False),
        ("My sister lives in Leeds.", "My sister is a nurse.", False),
        ("My sister lives in Leeds.", "My sister works in York.", False),
        ("I drink tea in the morning.", "I drink coffee in the afternoon.", False),
        (TEA, "What's my favourite drink these days?", False),
        (TEA, TEA, True),  # not independent: a restatement, and the newer one is shown
        (
            "My plan for the evening is clearing the gutters.",
            "My plan for the evening is ironing a mountain of shirts.",
            False,
        ),
        # a discourse clause before "X is my favourite Y"
        (
            "My favourite season is winter.",
            "If you ever need to know, summer is my favourite season.",
            True,
        ),
        (
            "My favourite board game is chess.",
            "Actually, I've switched: Azul is my favourite board game now.",
            True,
        ),
        # "she" after "Update on my sister:" is the sister
        (
            "My sister lives in Norwich.",
            "Update on my sister: she left Norwich and lives in Brighton now.",
            True,
        ),
        ("My sister lives in Norwich.", "Update on my sister: she lives in Brighton now.", True),
        # what the text prefers over the old value
        (
            "My favourite food is moussaka.",
            "Turns out I like pho even more than moussaka, so that's my new favourite food.",
            True,
        ),
        (
            "Everyone calls me Dr Okoye, so you might as well too.",
            "I've decided I prefer Adaeze to Dr Okoye, so let's go with that from today.",
            True,
        ),
        (
            "Everyone calls me Teddy, so you might as well too.",
            "Can we change what you call me? Ted, please, not Teddy.",
            True,
        ),
        (
            "These days I'd say my favourite colour is grey.",
            "Forget what I said about grey. My favourite colour is green now.",
            True,
        ),
        # ages, jobs, and an amount or time stated again
        ("My daughter is ten.", "Small correction: my daughter turned eleven on Saturday.", True),
        (
            "My partner is an accountant.",
            "Update: my partner retrained and now works as a chef.",
            True,
        ),
        (
            "We've been given £80k for the Heron project.",
            "Finance came back: the Heron budget is £30k now.",
            True,
        ),
        (
            "I've got the dentist at 2:30pm on Wednesday.",
            "The dentist rang and moved my appointment to 11:30am.",
            True,
        ),
        # ... but not another project's amount or another appointment's time
        (
            "We've been given £80k for the Heron project.",
            "Finance came back: the Quill budget is £30k now.",
            False,
        ),
        ("I've got the dentist at 2:30pm on Wednesday.", "The team meeting is at 4pm now.", False),
        ("My partner works at the hospital.", "My partner works as a nurse.", False),
    ],
)
def test_phrasings(old: str, new: str, stale: bool) -> None:
    """Each phrasing family supersedes the older fact; each look-alike leaves it alone."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("Add milk to the shopping list.", "Remove milk from the shopping list.", True),
        ("Add milk.", "Remove the milk.", True),
        ("We're out of milk.", "Got the milk already, cross it off.", True),
        ("Add milk to the shopping list.", "Got the milk already, cross it off.", True),
        ("Add milk to the shopping list.", "We already have milk.", True),
        ("Add milk to the shopping list.", "We don't need milk any more.", True),
        ("Add milk to the shopping list.", "Add eggs to the shopping list.", False),
        ("Add oat milk to the list.", "We're out of oat milk.", False),
    ],
)
def test_list_phrasings(old: str, new: str, stale: bool) -> None:
    """Removing an item supersedes its addition, whatever the similarity; other items stay."""
    assert rule.supersedes(new, old, similarity=0.1) is stale


def test_a_nounless_preference_supersedes_only_the_most_similar_favourite() -> None:
    """'I prefer matcha these days' retires one favourite, the closest, not all of them."""
    from oblivion_core.supersession import Candidate

    cands = [Candidate("drink", TEA, 0.7), Candidate("colour", "My favourite colour is blue", 0.5)]
    assert rule.choose("I prefer matcha these days.", cands) == ["drink"]


# ---------------------------------------------------------------- through the engine


@pytest.mark.integration
@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        (TEA, "Update: my favourite drink is matcha now.", "What is my favourite drink?"),
        (TEA, "I've gone off tea, I mostly drink matcha now.", "What do I like to drink?"),
        (TEA, "My go-to drink is matcha now.", "What is my favourite drink?"),
        ("Call me Sam.", "I go by Alex now.", "What should you call me?"),
        ("I live in Leeds.", "I moved to York.", "Where do I live?"),
        ("I work at Initech.", "I started a new job at Globex.", "Where do I work?"),
        (
            "Add oat milk to the shopping list.",
            "Got the oat milk already, cross it off.",
            "oat milk",
        ),
    ],
)
def test_through_the_engine(tmp_path: Path, old: str, new: str, query: str) -> None:
    """With the default embedder, the newer statement supersedes on write and ranks first."""
    clock = ManualClock()
    with Oblivion(tmp_path, clock=clock) as mem:
        a = mem.remember(old)
        mem.remember("The weather has been awful all week.")
        clock.advance(3_600.0)
        b = mem.remember(new)
        assert mem.get(a.id).superseded_by == b.id
        assert mem.recall(query, include_superseded=True).ids[0] == b.id


@pytest.mark.integration
@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        ("I live in London.", "I moved to Leeds.", "Where do I live?"),
        (
            "I work at Acme Corp as a data analyst.",
            "I started a new job at Globex as a platform lead.",
            "Where do I work?",
        ),
    ],
)
def test_a_fact_changed_long_after_it_was_archived(
    tmp_path: Path, old: str, new: str, query: str
) -> None:
    """Four hundred turns later the first statement is archived, where stale candidates
    are found by keyword only: the key a rule names ("home", "job") was the query, a
    word "I live in London" never holds, so the change went unseen and the old value was
    recalled first. The key's query now holds the words its statements use."""
    from oblivion_core import Policy

    with Oblivion(tmp_path, policy=Policy.template("balanced", clock="turns")) as mem:
        first = mem.remember(old)
        for i in range(400):
            mem.remember(f"Task {i}: file the weekly report for project {i % 37}.")
        mem.maintain()
        assert mem.get(first.id).tier.label == "archive"
        second = mem.remember(new)
        assert mem.get(first.id).superseded_by == second.id
        assert mem.recall(query, k=3).ids[0] == second.id


def test_a_named_speaker_with_a_chat_role_in_metadata(tmp_path: Path) -> None:
    """The demo's turns: "Dana: ..." with ``"role": "user"`` are Dana's, so her later
    correction replaces her launch date (read as "user: Dana: ...", it did not)."""
    clock = ManualClock()
    user = {"role": "user"}
    with Oblivion(tmp_path, clock=clock) as mem:
        a = mem.remember(
            "Dana: The Kestrel launch date is 14 March, so the clock is already ticking.",
            metadata=user,
        )
        clock.advance(3_600.0)
        b = mem.remember(
            "Dana: Bad news: the launch has moved. Kestrel now goes live on 28 March, not "
            "14 March.",
            metadata=user,
        )
        assert mem.get(a.id).superseded_by == b.id


@pytest.mark.integration
def test_independent_facts_survive_the_engine(tmp_path: Path) -> None:
    """Trips, other people's favourites and the return flight's seat stay first-class."""
    clock = ManualClock()
    texts = [
        "I went to Paris in May.",
        "I went to Rome in June.",
        "Dana: my favourite colour is blue",
        "Sam: my favourite colour is green",
        "I want a window seat on the outbound flight",
        "I want an aisle seat on the return flight",
    ]
    with Oblivion(tmp_path, clock=clock) as mem:
        ids = []
        for text in texts:
            ids.append(mem.remember(text).id)
            clock.advance(600.0)
        assert all(mem.get(i).superseded_by is None for i in ids)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (
            "I'm allergic to almonds, so bear that in mind for restaurant bookings.",
            "Turns out I'm not allergic to almonds after all; the clinic says it's shellfish.",
        ),
        (
            "I'm allergic to shellfish, so bear that in mind for restaurant bookings.",
            "Correction from the allergy clinic: it's peanuts I react to, not shellfish.",
        ),
        (
            "Correction from the allergy clinic: it's peanuts I react to, not shellfish.",
            "Turns out I'm not allergic to peanuts after all; the clinic says it's mustard.",
        ),
        (TEA, "I've gone off tea."),
        (  # the demo's launch date: "launch" names the subject
            "Dana: The Kestrel launch date is 14 March, so the clock is already ticking.",
            "Dana: Bad news: the launch has moved. Kestrel now goes live on 28 March, "
            "not 14 March.",
        ),
    ],
)
def test_corrections_the_look_alike_guards_keep(old: str, new: str) -> None:
    """A rejected value still replaces the fact it is about: an allergy ("allergic"
    names it), a favourite (a liking word); a correction from a clinic is the speaker's
    own."""
    assert rule.supersedes(new, old, similarity=0.6) is True


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("I live in Leeds.", "I moved to York.", True),
        ("I live in Leeds.", "We've finally moved to York!", True),
        ("I'm based in Berlin.", "I relocated to Munich.", True),
        ("I moved to York.", "I moved to Bristol.", True),
        ("I work at Initech.", "I started a new job at Globex.", True),
        ("I work for Initech.", "I started working for Globex today.", True),
        ("I work at Initech.", "I got a job at Globex.", True),
        ("I work at Initech.", "I joined Globex as a senior engineer.", True),
        # history, someone else, no name, not an employer, a supposition, a plan
        ("I live in Leeds.", "I moved to York when I was ten.", False),
        ("I live in Leeds.", "I moved to York for a month in 2019.", False),
        ("I live in Leeds.", "My sister moved to York.", False),
        ("I live in Leeds.", "I moved to a new desk.", False),
        ("I live in Leeds.", "If I moved to York, I'd be closer to Mum.", False),
        ("I live in Leeds.", "I'm moving to York next year.", False),
        ("I work at Initech.", "I joined a gym.", False),
        ("I work at Initech.", "I joined the choir.", False),
        ("I work at Initech.", "I joined Globex's webinar.", False),
        ("I work at Initech.", "I joined Python Discord to ask questions.", False),
    ],
)
def test_a_change_of_home_or_employer(old: str, new: str, expected: bool) -> None:
    """A move or a new job, to a name, replaces the speaker's home or employer (at the
    similarity a named preference needs: "I moved to York" is 0.39 like "I live in
    Leeds" with the default model)."""
    chosen = LexicalSupersession().choose(new, [Candidate("old", old, 0.35)])
    assert (chosen == ["old"]) is expected


@pytest.mark.parametrize(
    ("old", "new", "similarity", "expected"),
    [
        # lived at, moved to, or named as an address (each pair's cosine with the
        # default model)
        ("I live at 12 Baker Street.", "I now live at 4 Elm Road.", 0.504, True),
        ("I live in London.", "I moved to 4 Elm Road in Leeds.", 0.48, True),
        (
            "I live at 12 Baker Street in London.",
            "My address is now 4 Elm Road in Leeds.",
            0.543,
            True,
        ),
        ("My address is 12 Baker Street, London.", "I moved to 4 Elm Road in Leeds.", 0.443, True),
        ("I live at 12 Baker Street.", "My sister's address is 4 Elm Road.", 0.516, False),
        ("I live at 12 Baker Street.", "My email address is jo@example.com.", 0.216, False),
    ],
)
def test_a_change_of_address(old: str, new: str, similarity: float, expected: bool) -> None:
    """ "I live at", a move to a house number, and "my address is" all state where the
    speaker lives: each replaces the others ("live at" was no home, a move's value had
    to start with a capital, and "my address" was a subject of its own)."""
    chosen = LexicalSupersession().choose(new, [Candidate("old", old, similarity)])
    assert (chosen == ["old"]) is expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "Project Falcon's deadline moved to April 10th.",
            "Project Falcon's deadline is now May 2nd.",
            True,
        ),
        (
            "Project Falcon's deadline is March 3rd.",
            "Project Falcon's deadline moved to April 10th.",
            True,
        ),
        ("New York's office is in Midtown.", "New York's office moved to Brooklyn.", True),
        # another project's, or another owner's, deadline is another fact
        ("Project Falcon's deadline is March 3rd.", "Project Heron's deadline is May 2nd.", False),
        ("Project Falcon's deadline is March 3rd.", "Falcon's deadline is May 2nd.", False),
        # the words before the owner's name must be capitalised to belong to it
        ("Lisa's car is red.", "yesterday Lisa's car is blue.", False),
    ],
)
def test_an_owner_named_in_several_words(old: str, new: str, expected: bool) -> None:
    """ "Project Falcon's deadline" has one owner, as "Lisa's car" has."""
    chosen = LexicalSupersession().choose(new, [Candidate("old", old, 0.8)])
    assert (chosen == ["old"]) is expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (  # a second statement after ", so", and "new" dates the subject, not names it
            "Dana: My manager is Marcus Webb. He runs the applied ML group.",
            "Dana: Big week. Marcus is moving to the platform team, so from today my new "
            "manager is Priya Nair.",
            True,
        ),
        (
            "user: My manager is Marcus.",
            "user: My current manager is Priya; she started today.",
            True,
        ),
        ("user: My former manager is Marcus.", "user: My manager is Priya.", False),
        (  # a clause about someone else does not restate the speaker's fact
            "user: My manager is Marcus.",
            "user: Priya joined the team, so her manager is Marcus too.",
            False,
        ),
    ],
)
def test_clauses_and_dated_subjects(old: str, new: str, expected: bool) -> None:
    """Facts stated in a later clause are read; "new"/"current" do not change the subject."""
    chosen = LexicalSupersession().choose(new, [Candidate("old", old, 0.6)])
    assert (chosen == ["old"]) is expected


@pytest.mark.parametrize(
    "new",
    [
        "Dana: Priya wants a written Kestrel update from me every Thursday.",
        "Dana: Can you write this week's Kestrel update for Priya? Usual rules on length.",
        "Assistant: Weekly Kestrel update for Priya on Thursdays. I'll prompt you.",
    ],
)
def test_the_noun_update_is_not_a_correction(new: str) -> None:
    """ "a weekly update" names a report; only "Update:" / "quick update" announce a change."""
    olds = [
        "Dana: Big week. Marcus is moving to the platform team, so from today my new manager "
        "is Priya Nair.",
        "Dana: My first one-to-one with Priya is on Wednesday at 2pm.",
        "Assistant: Updated. The Kestrel launch is now 28 March.",
    ]
    cands = [Candidate(f"o{k}", old, 0.7) for k, old in enumerate(olds)]
    assert LexicalSupersession().choose(new, cands) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("14th March for the launch.", "The launch is now 28th March.", True),
        ("14 March for the launch.", "The launch is now 28 March.", True),  # the demo's text
        ("March 14 for the launch.", "The launch is now March 28.", True),
        ("The 14th of March for the launch.", "The launch is now the 28th of March.", True),
        ("Launch on 14 Mar.", "The launch is now 28 Mar.", True),
        ("Launch on 3 May.", "The launch is now 10 May.", True),
        ("The launch is in March.", "The launch is now in June.", True),
        # a subject of more than 30 characters (it was cut there, and read as none)
        (
            "The deadline for the grant application is March 3rd.",
            "The deadline for the grant application got pushed back to March 17th.",
            True,
        ),
        # one date, spelled two ways: not a change
        ("14 March for the launch.", "The launch is still March 14th.", False),
        ("Launch on 14 Mar.", "The launch is on the 14th of March.", False),
    ],
)
def test_a_changed_date_in_any_spelling(old: str, new: str, expected: bool) -> None:
    """Rule 6 compares dates by day and month however they are written: "14 March" and
    "28 March" used to read as the same date (only "14th" counted as a day)."""
    chosen = LexicalSupersession().choose(new, [Candidate("old", old, 0.7)])
    assert (chosen == ["old"]) is expected


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Dinner on 14th March.", "The launch is now 28th March."),
        ("Release candidate on 14 March.", "The launch is now 28 March."),
        ("Dinner with Priya on March 3rd.", "The launch is now March 10th."),
        ("Flights booked for 3 Sept.", "The launch is now 10 September."),
    ],
)
def test_a_shared_month_is_not_the_shared_word_a_date_change_needs(old: str, new: str) -> None:
    """Two dated statements about different things share only their month: no update
    (once "14 March" was one date value, the month counted as a shared word)."""
    assert LexicalSupersession().choose(new, [Candidate("old", old, 0.65)]) == []


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("The wifi password for office 2 is abc.", "The wifi password for office 5 is xyz.", False),
        ("The locker 3 code is 1234.", "The locker 4 code is 9876.", False),
        ("The meeting in room A is at 10.", "The meeting in room B is at 3.", False),
        ("Plan b is the train.", "Plan c is the bus.", False),
        # the same numbered one, restated: still an update
        (
            "The wifi password for office 2 is abc.",
            "The wifi password for office 2 is now xyz.",
            True,
        ),
        ("The locker 3 code is 1234.", "The locker 3 code is 9876 now.", True),
    ],
)
def test_a_number_or_letter_names_one_of_several(old: str, new: str, expected: bool) -> None:
    """Numbers and letters were dropped from the subject, so office 5's password
    superseded office 2's (through the LangGraph store, office 2's was then never found)."""
    chosen = LexicalSupersession().choose(new, [Candidate("old", old, 0.8)])
    assert (chosen == ["old"]) is expected


#: Still-true memories a newer one marked stale (review of false supersessions).
STILL_TRUE = [
    # another attribute of the same subject: the value answers another question
    ("My daughter is allergic to peanuts.", "My daughter is vegetarian."),
    ("My flight is on Tuesday.", "My flight is from Gatwick."),
    ("The meeting is on Thursday at 3pm.", "The meeting is in Room 4."),
    ("My car is a blue Golf.", "My car is in the garage."),
    ("My daughter is ten.", "My daughter is at school until 3pm."),
    # one more value, not a new one
    ("I'm allergic to peanuts.", "I'm allergic to shellfish too."),
    ("I'm allergic to peanuts.", "I'm allergic to shellfish as well."),
    ("My son is allergic to eggs.", "My son is also allergic to milk."),
    ("Our office is in London.", "Our office is also in Berlin."),
    # a question, a question inside a request
    (TEA, "What's my favourite drink? I keep forgetting."),
    (
        "My favourite wine is Rioja.",
        "Remind me, what's my favourite wine? Planning the dinner menu.",
    ),
    (
        "My favourite restaurant is Dishoom.",
        "Find out if my favourite restaurant is open on Sunday.",
    ),
    # someone else's words, a supposition, another person
    (TEA, "Tom told me: my favourite drink is coffee."),
    (TEA, 'My brother always says "my favourite drink is coffee".'),
    ("The budget is £40k.", "Worst case: the budget is £20k."),
    ("My sister lives in Leeds.", "I met my sister's friend Jo yesterday. She lives in York now."),
    # the past
    ("My favourite band is Radiohead.", "My favourite band was Oasis when I was a teenager."),
    ("My favourite city is Lisbon.", "My favourite city was Paris until I visited Lisbon."),
    # not a name: a day, a tool, a source, a way to travel, what someone else calls me
    ("Please call me Alex.", "Can you call me Monday morning to go over the contract?"),
    ("My name is Alex.", "My mum called me Tuesday about Christmas plans."),
    ("Please call me Alex.", "Please use Zoom instead of Teams for the client calls."),
    ("My name is Alex.", "Just use Gmail from now on for the newsletters."),
    ("Please call me Alex.", "Use Celsius, not Fahrenheit, in weather reports."),
    ("My name is Alex.", "Going by Google Maps, the hotel is ten minutes from the station."),
    ("My name is Alex.", "Going by Tom's estimate, the move will take two days."),
    ("My name is Alex.", "Tom calls me Lex but that's just him."),
    ("Call me Alex.", "The receptionist called me Alexandra, which nobody does."),
    ("My name is Alex.", "I go by Uber to the airport usually."),
    # "also" opening the statement; another allergy; another side of work
    ("I'm allergic to peanuts.", "Oh and also, I'm allergic to cats."),
    ("I'm allergic to peanuts.", "Also, I'm allergic to cats."),
    ("My favourite food is sushi.", "Another favourite: my favourite food is also tacos."),
    ("I'm allergic to peanuts.", "I'm allergic to penicillin."),
    ("I work at St Thomas' Hospital.", "I work as a nurse in the children's ward."),
    ("I work as a software engineer.", "I work at Google."),
    # the old value rejected in passing, about something else
    (
        "My favourite drink is coffee.",
        "I had tea instead of coffee this morning because we ran out.",
    ),
    ("My sister lives in Leeds.", "I left Leeds at 7am, so I'll be home by ten."),
    ("My sister lives in Leeds.", "We're going to York, not Leeds, for the weekend."),
    (
        "My favourite restaurant is Dishoom.",
        "We went to Padella rather than Dishoom because the queue was huge.",
    ),
    ("My favourite team is Arsenal.", "My son supports Spurs, not Arsenal."),
    ("My manager is Priya.", "Actually, Tom never reports to Priya, he's on another team."),
    # a condition after the value; another's words under a label; another man's "he"
    (
        "Project Falcon's deadline is April 10th.",
        "Project Falcon's deadline will be May 30th if we lose the contractor.",
    ),
    ("My rent is £1,200 a month.", "My rent will be £1,500 if we move to Zone 2."),
    ("My favourite colour is blue.", "Forwarded from Dana: my favourite colour is green."),
    (
        "My sister lives in Leeds.",
        "Email from Tom: My sister lives in Bristol now, so I'll visit her in May.",
    ),
    (
        "My boss is Priya.",
        "My boss Priya introduced me to Tom. He is a designer on the Falcon team.",
    ),
    # one kind of value, another question: a date and a time of day, a duration and a
    # distance
    ("The wedding is on June 14th.", "The wedding is at 2pm."),
    ("Project Falcon's launch is on May 2nd.", "Project Falcon's launch is at 9am Pacific."),
    ("My commute is 40 minutes each way.", "My commute is 12 miles."),
    # a habit in one setting is not a favourite
    ("My favourite drink is a flat white.", "I mostly drink water during the day."),
    ("My favourite music is jazz.", "I mostly listen to podcasts on my commute."),
    # another's favourite: "your" is not "our" (the speaker's)
    ("My favourite colour is blue.", "I bet your favourite colour is red."),
    ("Our drink of choice is prosecco.", "Your drink of choice is lemonade, I think."),
]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a user's own lines may open with labels: only a chat role ends their turn
        (
            "user: My flight is on Tuesday.",
            "user: Trip update:\nFlight: my flight is on Thursday now.\nHotel: still the "
            "Hilton.\nassistant: Noted, Thursday.",
        ),
        # the person's side of a chat under two apps' labels is one speaker
        (
            "Human: My favourite colour is blue.\nAI: Noted.",
            "user: My favourite colour is green now.",
        ),
        ("Customer: My flight is on Tuesday.", "user: My flight is on Thursday now."),
    ],
)
def test_one_speaker_across_chat_labels(old: str, new: str) -> None:
    """The LangChain middleware stores "user: ...", the classic memory "Human: ...": the
    same person's correction through either replaces their fact."""
    assert rule.supersedes(new, old, similarity=0.7) is True


def test_an_assistant_is_not_the_user_under_any_label() -> None:
    assert (
        rule.supersedes(
            "AI: My favourite colour is green now.", "user: My favourite colour is blue.", 0.9
        )
        is False
    )


@pytest.mark.parametrize(("old", "new"), STILL_TRUE)
def test_a_still_true_memory_is_not_superseded(old: str, new: str) -> None:
    """Each of these hid the older memory from recall, though it is still true."""
    assert rule.supersedes(new, old, similarity=0.9) is False


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Add oat milk to the shopping list.", "Remove the almond milk from the shopping list."),
        ("Add red onions to the shopping list.", "Take the red peppers off the shopping list."),
        ("Add chicken thighs to the shopping list.", "We don't need chicken stock any more."),
    ],
)
def test_removing_an_item_leaves_another_that_shares_a_word(old: str, new: str) -> None:
    """A removal undid any addition sharing one word with it ("milk")."""
    assert rule.supersedes(new, old, similarity=0.9) is False
    undo = "Remove the oat milk from the shopping list."  # the same item: caught
    assert rule.supersedes(undo, old, similarity=0.9) is ("oat milk" in old)


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        # one item names more words than the other: the same thing only as the same noun
        ("Add chicken to the shopping list.", "I already have a chicken recipe.", False),
        ("Add chicken stock to the shopping list.", "We already have chicken.", False),
        ("Add chicken to the shopping list.", "We don't need chicken stock any more.", False),
        ("Add a phone charger to the shopping list.", "I already have a phone.", False),
        ("Add almond milk to the shopping list.", "Cross the milk off the list.", True),
        ("Add a bottle of milk to the shopping list.", "We already have milk.", True),
        ("Add milk to the shopping list.", "We already have milk at home.", True),
        ("Add milk to the shopping list.", "Got the fresh milk already, cross it off.", True),
        ("Add eggs and milk to the shopping list.", "Got the eggs and the milk already.", True),
    ],
)
def test_an_item_is_its_noun(old: str, new: str, stale: bool) -> None:
    """ "I already have a chicken recipe" crossed chicken off the shopping list: the two
    shared a word and one's words held the other's. A recipe is not chicken."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        # an exception to a routine leaves the routine
        (
            "Our standup is at 9am every day.",
            "The standup is at 10am on Thursday this week.",
            False,
        ),
        ("My gym class is on Mondays.", "My gym class is on Wednesday this week.", False),
        ("The meeting is on Tuesdays.", "The meeting has moved to Thursday this week.", False),
        ("My yoga class is usually at 6pm.", "Just this once, my yoga class is at 7pm.", False),
        # a bounded time said to be an exception leaves the standing fact
        ("My commute is by train.", "My commute is by bus this week because of the strike.", False),
        ("My office is in Leeds.", "My office is in York today.", False),
        # a bounded time with nothing said of an exception: a one-time thing's new time
        ("The deadline is Friday.", "The deadline is today.", True),
        ("My interview is on Monday.", "My interview is this afternoon.", True),
        ("My interview is at 2pm.", "My interview is at 3pm today.", True),
        # a change said so replaces it, bounded time or not
        ("The meeting is on Tuesday.", "The meeting has moved to Thursday this week.", True),
        ("My commute is by train.", "Actually my commute is by bus this week.", True),
        ("My commute is by train.", "My commute is by bus now.", True),
        # "from today", "starting this week", a start: the first day of a change
        ("My manager is Marcus.", "From today my manager is Priya.", True),
        ("My office is in Leeds.", "Starting this week my office is in York.", True),
        ("I work for Initech.", "I started working for Globex today.", True),
        # two bounded times of one subject: the usual rules
        ("My office is in York today.", "My office is in Leeds today.", True),
    ],
)
def test_a_one_off_exception(old: str, new: str, stale: bool) -> None:
    """ "by bus this week because of the strike" hid "my commute is by train": a
    statement for a bounded time is an exception to a routine, and to another fact when
    it says it is one ("because", "only", "just this once") and not a change."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        # what a person is, how they are and what they eat answer different questions
        ("My sister is a nurse.", "My sister is pregnant.", False),
        ("My partner is a chef.", "My partner is vegetarian.", False),
        ("My partner is a vegetarian.", "My partner is a chef.", False),
        ("My boss is strict.", "My boss is a woman.", False),
        # one question asked again is a change
        ("My brother is a teacher.", "My brother is a doctor now.", True),
        ("My dad is a teacher.", "My dad is retired now.", True),
        ("My partner is an accountant.", "My partner now works as a chef.", True),
        ("My partner is vegetarian.", "My partner is vegan now.", True),
        ("My sister is ill.", "My sister is better now.", True),
        # not a person: no such split ("a team lead" and "team lead" are one value)
        ("My role is team lead.", "My role is a team lead.", True),
    ],
)
def test_a_person_is_what_they_are_how_they_are_and_what_they_eat(
    old: str, new: str, stale: bool
) -> None:
    """ "My sister is pregnant" hid "my sister is a nurse": both were one "state"."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new", "similarity", "stale"),
    [
        # the demo's own pair: the new editor named in another sentence
        (
            "user: For the record, my editor of choice is Vim. I've lived in it for years.",
            "user: Confession: I've switched editors. I'm using Helix full-time now.",
            0.76,
            True,
        ),
        ("My bank is Barclays.", "I've switched banks, I'm with Monzo now.", 0.54, True),
        ("My dentist is Dr Patel.", "I changed dentists last month.", 0.58, True),
        ("My current bank is Barclays.", "We swapped banks.", 0.5, True),
        # a job is one per owner: the lower similarity of a named preference is enough
        ("I work at Initech as a tester.", "I switched jobs in March.", 0.386, True),
        ("I work at Initech as a tester.", "I switched jobs in March.", 0.29, False),
        # someone else's, or another thing switched
        ("My sister's bank is Barclays.", "I've switched banks.", 0.6, False),
        ("Dana: My bank is Barclays.", "Tom: I've switched banks.", 0.6, False),
        ("My train is the 8:15 to Leeds.", "I changed trains at York.", 0.6, False),
        ("My favourite colour is blue.", "I changed colours on the slides.", 0.5, False),
        ("My bank is Barclays.", "I've switched phones.", 0.5, False),
        # not the speaker's own past switch
        ("My bank is Barclays.", "Have I switched banks?", 0.6, False),
        ("My bank is Barclays.", "I haven't switched banks.", 0.6, False),
        ("My bank is Barclays.", "I never changed banks.", 0.6, False),
        ("My bank is Barclays.", "Tom switched banks.", 0.6, False),
        ("My bank is Barclays.", "I'm thinking of switching banks.", 0.6, False),
    ],
)
def test_a_switch_of_what_the_older_one_names(
    old: str, new: str, similarity: float, stale: bool
) -> None:
    """ "I've switched editors. I'm using Helix full-time now." left "my editor of choice
    is Vim" current: the new text has no subject of its own."""
    assert rule.supersedes(new, old, similarity=similarity) is stale


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("My rent is 1,200.", "My rent went up to 1,600.", True),
        ("My salary is 50k.", "My salary rose to 58k.", True),
        ("The budget is 80k.", "The budget was cut to 30k.", True),
        ("The Heron budget is 80k.", "The Heron budget has been increased to 100k.", True),
        ("Our team is seven people.", "The team grew to nine.", True),
        # the demo's pair: a count, then a clause after "so"
        (
            "There are seven of us on the team, including me.",
            "Good news on hiring: two new starters join next week, so the team grows to nine.",
            True,
        ),
        ("There are 30 kids in my class.", "My class has gone up to 32 kids.", True),
        # not an amount, or not a count
        ("My hair is long.", "My hair was cut to shoulder length.", False),
        ("The team is great.", "The team is growing to nine.", False),
        ("My son is a keen swimmer.", "My son grew to love football.", False),
        ("There are seven of us on the team.", "There are lots of us in the office.", False),
    ],
)
def test_an_amount_that_grew_or_fell(old: str, new: str, stale: bool) -> None:
    """ "The team grows to nine" left "there are seven of us on the team" current: neither
    was read as a statement of the team's size."""
    assert rule.supersedes(new, old, similarity=0.7) is stale


@pytest.mark.integration
def test_an_exception_leaves_the_routine_through_the_engine(tmp_path: Path) -> None:
    """The routine stays current and recallable beside its exception."""
    with Oblivion(tmp_path, clock=ManualClock()) as mem:
        routine = mem.remember("My gym class is on Mondays.")
        exception = mem.remember("My gym class is on Wednesday this week.")
        assert mem.get(routine.id).superseded_by is None
        assert {routine.id, exception.id} <= set(mem.recall("When is my gym class?").ids)


@pytest.mark.integration
def test_a_recipe_leaves_the_chicken_on_the_list(tmp_path: Path) -> None:
    """Through the engine and the default embedder: the list still holds the chicken."""
    with Oblivion(tmp_path, clock=ManualClock()) as mem:
        chicken = mem.remember("Add chicken to the shopping list.")
        mem.remember("I already have a chicken recipe.")
        assert mem.get(chicken.id).superseded_by is None
        assert chicken.id in mem.recall("What's on my shopping list?").ids
        done = mem.remember("We already have chicken, cross it off.")
        assert mem.get(chicken.id).superseded_by == done.id


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My flight is on Tuesday.", "My flight is on Thursday now."),
        ("The meeting is at 3pm.", "Actually the meeting is at 4pm."),
        ("My car is in the garage.", "My car is in the car park now."),
        ("My car is a blue Golf.", "My car is a red Polo now."),
        ("The budget is about £40k.", "The budget is £30k now."),
        ("My daughter is ten.", "My daughter turned eleven on Saturday."),
        ("My flight is on Tuesday.", "The airline has moved my flight to Thursday."),
        ("My sister lives in Leeds.", "My sister moved to York."),
        # the speaker's own words, though they sound reported
        (
            "Rugby has always been my favourite sport.",
            "These days I'd say my favourite sport is climbing.",
        ),
        (TEA, "As I said, my favourite drink is coffee now."),
        (TEA, "I think my favourite drink is coffee now."),
        # "also"/"another" in a later clause, a hyphenated number, a password with digits
        ("My manager is Sam.", "My manager is now Priya, who also leads design."),
        (TEA, "My favourite drink is coffee now, I have another cup every morning."),
        ("My budget is 20k.", "My budget is now twenty-five thousand."),
        ("My wifi password is sunflower.", "My wifi password is now 7tulips."),
        # a time of day, a day or a length changed: the same question
        ("The meeting is on Tuesday at 2pm.", "The meeting is at 3pm now."),
        ("My appointment is at 2:30pm.", "My appointment is at 11:30am now."),
        ("The launch is on May 2nd.", "The launch is on Friday now."),
        ("My commute is 40 minutes.", "My commute is 25 minutes now."),
        # a habit with no setting still names a favourite
        ("My favourite drink is coffee.", "I now mostly drink green tea."),
    ],
)
def test_the_same_attribute_changed_is_still_caught(old: str, new: str) -> None:
    """The value kinds that keep other attributes apart still let a change through."""
    assert rule.supersedes(new, old, similarity=0.9) is True


def test_two_nounless_preferences_need_the_fallback_similarity() -> None:
    """Both are "favourite *": they were one fact per owner at a cosine of 0.30, so
    "I prefer meetings before noon" hid "I prefer green tea in the afternoon"."""
    tea = "user: I prefer green tea to coffee in the afternoon."
    meetings = "user: I prefer meetings scheduled before noon."
    assert rule.choose(meetings, [Candidate("tea", tea, 0.47)]) == []
    assert rule.choose(meetings, [Candidate("tea", tea, 0.65)]) == ["tea"]
    # a new one that rejects a value is a change of favourite, as a named one's
    teal = "user: I no longer like orange best; it's teal."
    crimson = "user: I no longer like navy best; it's crimson."
    assert rule.choose(crimson, [Candidate("teal", teal, 0.44)]) == ["teal"]


@pytest.mark.parametrize(
    ("text", "metadata", "said"),
    [
        ("My name is Ada.", {"role": "assistant"}, "assistant: My name is Ada."),
        ("My name is Sam.", {"role": "user", "session_id": "s1"}, "user: My name is Sam."),
        ("3 rows found for Leeds.", {"role": "tool"}, "tool: 3 rows found for Leeds."),
        # already naming its speaker, or no chat role given: as it is
        ("user: My name is Sam.", {"role": "user"}, "user: My name is Sam."),
        ("Dana: The launch is on 14 March.", {"role": "user"}, "Dana: The launch is on 14 March."),
        ("My name is Sam.", {"role": "admin"}, "My name is Sam."),
        ("My name is Sam.", {"role": 3}, "My name is Sam."),
        ("My name is Sam.", {}, "My name is Sam."),
        ("My name is Sam.", None, "My name is Sam."),
    ],
)
def test_a_memorys_chat_role_is_read_as_its_speaker(
    text: str, metadata: dict[str, object] | None, said: str
) -> None:
    assert as_said(text, metadata) == said


def test_a_role_in_metadata_keeps_speakers_apart() -> None:
    """Bare texts with their roles beside them, as the LlamaIndex adapters store chat
    messages: an assistant's "my" is not the user's; the user's correction still
    replaces their fact, whichever label the older one carries."""
    sam = as_said("My name is Sam.", {"role": "user"})
    ada = as_said("My name is Ada, your assistant.", {"role": "assistant"})
    assert rule.supersedes(ada, sam, similarity=0.9) is False
    green = as_said("Actually my favourite colour is green now.", {"role": "user"})
    assert rule.supersedes(green, "Human: My favourite colour is blue.", similarity=0.8)
    assert rule.supersedes(green, as_said("My favourite colour is blue.", {"role": "user"}), 0.8)


def _curly(text: str) -> str:
    return text.replace("'", "\u2019")


APOSTROPHE_PAIRS = [
    ("My sister's name is Ann.", "My sister's name is Anna now.", True),
    ("I'm based in Leeds.", "I've moved to York.", True),
    ("I live in Paris.", "I don't live in Paris anymore, I live in Lyon.", True),
    ("Project Falcon's deadline is April 30th.", "Project Falcon's deadline is now May 2nd.", True),
    ("Add milk to the shopping list.", "We don't need milk any more.", True),
    ("Dana's favourite colour is red.", "My favourite colour's green.", False),
    ("I'm vegetarian.", "I'm a chef.", False),
]


@pytest.mark.parametrize(("old", "new", "stale"), APOSTROPHE_PAIRS)
def test_typographic_apostrophes_read_as_straight_ones(old: str, new: str, stale: bool) -> None:
    """Phones and most LLM output write ’: "I don’t live in Paris anymore" is a
    correction as "I don't ..." is, and every text parses the same either way."""
    for a, b in [(old, new), (_curly(old), _curly(new)), (old, _curly(new)), (_curly(old), new)]:
        assert rule.supersedes(b, a, similarity=0.9) is stale, (a, b)
    assert parse(_curly(new)) == parse(new)
    assert parse(new.replace("'", "\u02bc")) == parse(new)


@pytest.mark.integration
def test_typographic_apostrophes_through_the_engine(tmp_path: Path) -> None:
    """With the default embedder, a correction typed with ’ replaces the older fact."""
    clock = ManualClock()
    with Oblivion(tmp_path, clock=clock) as mem:
        a = mem.remember("My sister\u2019s name is Ann.")
        mem.remember("The weather has been awful all week.")
        clock.advance(3_600.0)
        b = mem.remember("My sister\u2019s name is Anna now, she changed it.")
        assert mem.get(a.id).superseded_by == b.id
        assert mem.recall("What\u2019s my sister\u2019s name?").ids[0] == b.id


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("My flight is on Tuesday.", "My flight's been moved to Thursday.", True),
        ("My favourite colour is blue.", "My favourite colour's green now.", True),
        ("Our rent is 1200 a month.", "Our rent's 1350 now.", True),
        ("My sister is in Leeds.", "My sister's in York now.", True),
        ("The team meeting is at 3pm on Mondays.", "The team meeting's at 4pm now.", True),
        ("My dog is called Rex.", "My dog's called Max.", True),
        ("The budget is 40k.", "The budget's 50k now.", True),
        ("The rent is £1,200.", "The rent's £1,400 now.", True),
        ("My sister is in Leeds.", "I borrowed my sister's car.", False),
        ("My sister is a nurse.", "My sister's car is red.", False),
        ("My partner works at the hospital.", "My partner's at the gym on Thursdays.", False),
    ],
)
def test_is_and_has_said_as_s(old: str, new: str, stale: bool) -> None:
    """ "My flight's been moved" and "my sister's in York now" state a change as the
    words spelled out do; a possessive ("my sister's car") states nothing of the owner."""
    assert rule.supersedes(new, old, similarity=0.9) is stale
    assert rule.supersedes(_curly(new), old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("My flight's been moved to Thursday.", "My flight has been moved to Thursday."),
        (
            "Dana's a nurse now, and her sister's in York.",
            "Dana's a nurse now, and her sister is in York.",
        ),
        ("My favourite colour's green.", "My favourite colour is green."),
        ("Our rent's 1350 now.", "Our rent is 1350 now."),
        ("I borrowed my sister's car.", "I borrowed my sister's car."),
        ("My sister's car is red.", "My sister's car is red."),
        ("My partner works at St Mary's Hospital.", "My partner works at St Mary's Hospital."),
        ("The archive's in-memory copy is small.", "The archive's in-memory copy is small."),
        (
            "It's green now, let's go; what's next? Here's one.",
            "It's green now, let's go; what's next? Here's one.",
        ),
    ],
)
def test_which_s_is_spelled_out(text: str, read: str) -> None:
    """Only an "'s" no possessive could be: before a preposition, an article, "been",
    "now", "called", or before a sentence's last word after "my ..."."""
    assert _expand_is(text) == read


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("My flight is on Tuesday.", "The flight got pushed to Thursday.", True),
        ("My flight is on Tuesday.", "My flight got pushed back to Thursday.", True),
        ("The launch is on 14 March.", "The launch was bumped to 28 March.", True),
        ("The deadline is on Friday.", "The deadline was brought forward to Wednesday.", True),
        ("The meeting is at 3pm.", "The meeting has been rescheduled for 4pm.", True),
        ("The meeting is at 3pm.", "We rescheduled the meeting for 4pm.", True),
        ("My address is 12 High Street.", "My address changed to 4 Mill Lane.", True),
        ("My address is 12 High Street.", "My address has changed to 4 Mill Lane.", True),
        ("The launch is in March.", "The launch got pushed back to June.", True),
        ("The wedding is in June.", "We moved the wedding for July.", True),
        ("My email is jo@old.com.", "My email changed to jo@new.com.", True),
        ("My email is jo@old.com.", "My new email is jo@new.com, please use that.", True),
        ("My work email is jo@globex.com.", "My personal email is jo@gmail.com.", False),
        ("My son is a doctor.", "My son was put to bed early.", False),
        ("My laptop is a MacBook.", "I brought my laptop for the trip.", False),
        ("My team is the platform team.", "I pushed my team for results.", False),
    ],
)
def test_more_verbs_of_a_change(old: str, new: str, stale: bool) -> None:
    """A date pushed, bumped, brought forward or rescheduled, and a value that "changed
    to" another, replace the older one; "put to bed" or "brought ... for the trip" move
    nothing."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


# a reviewer's look-alikes of the "'s" and change-verb rules: possessives before a comma,
# shop names before "in", "pushed to" a place or a deed, "moved X for" a reason
LOOK_ALIKES_OF_S_AND_VERBS = [
    ("My sister is a nurse.", "My sister's husband, Tom, is a chef."),  # is_last
    (
        "Our neighbour is a retired teacher.",
        "Our neighbour's dog, Rex, keeps barking at night.",
    ),  # is_last
    ("Our landlord is Mr Khan.", "Our landlord's agent, Dave, is useless."),  # is_last
    ("Our dog is a spaniel.", "Our dog's vet, Dr Shaw."),  # is_last
    ("My son is a Year 3 pupil.", "My son's school, St Mary's, is closed today."),  # is_last
    ("Our company is Globex.", "Our company's CEO, Dana Reyes, resigned."),  # is_last
    (
        "The McDonald's in Leeds is open 24 hours.",
        "The McDonald's in York is shut for refurb.",
    ),  # is_cont
    ("The Sainsbury's in Headingley is huge.", "The Sainsbury's in town is tiny."),  # is_cont
    (
        "The St Mary's in Leeds is a teaching hospital.",
        "The St Mary's in Leeds has a great A&E; the St Mary's in York is smaller.",
    ),  # is_cont
    (
        "The Nando's at the retail park is quiet.",
        "The Nando's at the station is always rammed.",
    ),  # is_cont
    ("The Domino's on Park Lane is good.", "The Domino's on the corner is rubbish."),  # is_cont
    ("My brother is a plumber.", "My brother's now fiancée Jo is lovely."),  # is_cont
    (
        "My son is a really keen reader.",
        "My son got pushed to the front of the queue.",
    ),  # copula_verb
    ("My sister is a nurse.", "My sister was pushed to breaking point."),  # copula_verb
    ("My son is the goalkeeper.", "My son was brought forward to the first team."),  # copula_verb
    (
        "The sofa is a grey corner sofa.",
        "The sofa was pushed to the wall for the party.",
    ),  # copula_verb
    ("My boss is Sarah.", "My boss got pushed to the board."),  # copula_verb
    ("My hearing is a tribunal.", "My hearing was rescheduled for the second time."),  # copula_verb
    ("My car is a blue Golf.", "I moved my car for the street cleaners."),  # moved_for
    ("The sofa is grey.", "We moved the sofa for the party."),  # moved_for
    ("The piano is a Yamaha.", "We moved the piano for the party."),  # moved_for
    ("My desk is a standing desk.", "I moved my desk for better light."),  # moved_for
    ("The furniture is all IKEA.", "We shifted the furniture for the painters."),  # moved_for
    ("The bins are green.", "We moved the bins for collection day."),  # moved_for
]


@pytest.mark.parametrize(("old", "new"), LOOK_ALIKES_OF_S_AND_VERBS)
def test_look_alikes_of_s_and_the_change_verbs_leave_the_fact_alone(old: str, new: str) -> None:
    """ "My sister's husband, Tom, is a chef" says nothing of what the sister is; "the
    McDonald's in York" is another branch; "my son got pushed to the front of the queue"
    and "I moved my desk for better light" give no new date."""
    assert not rule.supersedes(new, old, similarity=0.9)
    assert not rule.supersedes(_curly(new), _curly(old), similarity=0.9)


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("Always answer in French.", "From now on, answer in English.", True),
        ("Always answer in French.", "Reply in English instead.", True),
        ("Always answer in British English.", "Please speak to me in Spanish from now on.", True),
        ("Always answer in French.", "Always answer in French, please.", True),  # restated
        ("Always answer in French.", "Answer this one in English, please.", False),
        ("Always answer in French.", "Can you answer in English just this once?", False),
        ("Always answer in French.", "Reply in English to Tom's email.", False),
        ("Always answer in French.", "Write the summary in English.", False),
        ("Always answer in French.", "My sister always answers in English.", False),
        ("Dana: always answer in French.", "Sam: answer in English from now on.", False),
        # a language refused replaces the instruction to use it, and no other
        ("Always answer in French.", "Don't answer in French anymore.", True),
        ("Always answer in French.", "Stop replying in French, please.", True),
        ("Reply to me in British English.", "Never write to me in British English.", True),
        ("Always answer in Spanish.", "Don't answer in French anymore.", False),
        ("Don't answer in French anymore.", "Stop replying in French.", True),  # restated
        ("Stop replying in French.", "Answer in French again.", True),
        ("Stop replying in French.", "Always answer in Spanish.", True),
        ("Always answer in French.", "Don't answer in French to Tom.", False),  # a task
        ("I'm learning the French language.", "Don't answer in French anymore.", False),
        ("Always answer in French.", "I don't speak French.", False),
    ],
)
def test_the_language_to_reply_in(old: str, new: str, stale: bool) -> None:
    """A whole instruction of the language to reply in is one per speaker, however little
    two of them share (a similarity of 0.2 here); a one-off, a question or a task is
    none."""
    assert rule.supersedes(new, old, similarity=0.2) is stale


def test_a_changed_reply_language_replaces_the_standing_instruction(tmp_path: Path) -> None:
    """The default embedder, Chroma on disk: "Always answer in French" stood beside "From
    now on, answer in English" for every question, two instructions that contradict."""
    clock = ManualClock()
    with Oblivion(tmp_path, clock=clock) as mem:
        french = mem.remember("Always answer in French.").id
        mem.remember("The weather has been awful all week.")
        clock.advance(3_600.0)
        english = mem.remember("From now on, answer in English.").id
        assert mem.get(french).superseded_by == english
        result = mem.recall("Any plans for the weekend?", standing="instruction", k=4)
        standing = [i.id for i in result if "standing" in i.why["relevance_signals"]]
        assert standing == [english]
        clock.advance(3_600.0)
        refused = mem.remember("Don't answer in English any more.").id
        assert mem.get(english).superseded_by == refused
        kept = mem.remember("Keep your answers short.", category="instruction").id
        assert mem.get(kept).superseded_by is None
        result = mem.recall("Any plans for the weekend?", standing="instruction", k=4)
        standing = [i.id for i in result if "standing" in i.why["relevance_signals"]]
        assert sorted(standing) == sorted([refused, kept])


ROBERT = "My name is Robert."


@pytest.mark.parametrize(
    "new",
    [
        'How do I say "my name is Pedro" in French?',
        'Translate "my name is Pedro" into Spanish.',
        "Translate to French: My name is Pedro.",
        "How do you say my name is Pedro in Spanish?",
        "Pretend my name is Pedro.",
        "Let's pretend that my name is Pedro.",
        "Let's role-play: call me Captain.",
        "In the story, my name is Pedro.",
        "Translate: my name is Pedro.",
        "Roleplay: call me Captain.",
    ],
)
def test_a_quoted_played_or_translated_name_leaves_the_users_name(new: str) -> None:
    """A name in quotes, in a phrase to translate, a game or a story is no name of the
    speaker's: each replaced "My name is Robert" (the name rule read the text before its
    quoted words were dropped, and knew no pretending)."""
    assert parse(new).subject is None
    assert rule.supersedes(new, ROBERT, similarity=0.9) is False


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My favourite colour is blue.", "Pretend my favourite colour is red."),
        ("My favourite colour is blue.", "Let's say my favourite colour is red."),
        ("My favourite colour is blue.", "In the story, my favourite colour is red."),
        ("My favourite colour is blue.", "Translate to Spanish: my favourite colour is red."),
        ("My favourite colour is blue.", "Translate: my favourite colour is red."),
        ("I live in Porto.", "In the game, I live in Lisbon."),
        ("I live in Porto.", "Let's role-play: I live in Lisbon now."),
    ],
)
def test_a_game_a_story_or_a_translation_states_no_fact(old: str, new: str) -> None:
    """What a game, a story or a phrase to translate says is not the speaker's fact."""
    assert rule.supersedes(new, old, similarity=0.9) is False


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Hi, my name is Robert.", "assistant: Hi, my name is Ada."),
        ("My name is Robert, nice to meet you.", "assistant: My name is Ada, nice to meet you."),
        ("Hello, my name is Robert.", "assistant: Hello Robert, my name is Ada."),
        ("Hi, my name is Robert.", "support: Hi, my name is Jake from support."),
        ("My name is Robert.", "system: My name is Ada."),
        ("I live in Porto.", "assistant: I live in Lisbon now."),
        ("My favourite colour is blue.", "AI: My favourite colour is green now."),
        # and the other way: the user's bare "my" is not the assistant's
        ("assistant: My name is Ada.", "My name is Robert."),
        ("assistant: I live in Lisbon.", "I moved to Porto."),
        # nor does what it rejects or switches, with no subject of its own
        ("My favourite drink is tea.", "assistant: I've gone off tea."),
        ("I live in Porto.", "assistant: Actually, you no longer live in Porto."),
        ("My editor of choice is Vim.", "assistant: I've switched editors."),
    ],
)
def test_the_assistants_my_never_replaces_the_unlabelled_users(old: str, new: str) -> None:
    """A memory stored without a label (a plain ``remember()``, the user's own facts) is
    the unknown speaker's, whose "my" matched every speaker's: the assistant's "Hi, my
    name is Ada" replaced the user's name, its "I live in Lisbon now" the user's home."""
    assert rule.supersedes(new, old, similarity=0.9) is False


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (ROBERT, "user: Actually, call me Bob."),
        (ROBERT, "Human: My name is Bob now."),
        ("I live in Porto.", "user: I moved to Lisbon."),
        # an unknown speaker's "my" still matches a named one's
        ("Dana: My favourite colour is blue.", "My favourite colour is green now."),
        ("My editor of choice is Vim.", "user: I've switched editors."),
        # a topic label reads as a name: the user's own lines open with them
        ("My flight is on Tuesday.", "Flight: my flight is on Thursday now."),
        ("My editor of choice is Vim.", "Confession: I've switched editors."),
        # and "the" is anyone's: the assistant may restate the launch date
        ("The launch is on 14 March.", "Assistant: Updated. The launch is now 28 March."),
        ("14 March for the launch.", "Assistant: Updated. The launch is now 28 March."),
    ],
)
def test_the_users_chat_role_still_replaces_an_unlabelled_memory(old: str, new: str) -> None:
    """The person's side of a chat ("user:", "Human:"), and a topic label the user opens
    a line with ("Flight:", read as a name), are the unlabelled speaker's too."""
    assert rule.supersedes(new, old, similarity=0.9) is True


def test_the_assistants_correction_without_a_subject_picks_no_unlabelled_memory() -> None:
    """Rule 4's fallback: the assistant's "Sorry, I got that wrong" is not the user's
    correction of their own fact."""
    chosen = rule.choose(
        "assistant: Actually, sorry, I got that wrong.",
        [Candidate("old", "My favourite drink is tea.", 0.9)],
    )
    assert chosen == []


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("My phone number is 555-1234.", "My parents' phone number is 555-9876.", False),
        ("My doctor is Dr Smith.", "My parents' doctor is Dr Jones.", False),
        ("My dentist is Dr Smith.", "My kids' dentist is Dr Jones now.", False),
        ("My favourite colour is blue.", "My kids' favourite colour is green.", False),
        ("My address is 4 Mill Lane.", "My parents' address is 10 High Street.", False),
        # their own fact, changed
        (
            "My parents' phone number is 555-9876.",
            "My parents' phone number is 555-0000 now.",
            True,
        ),
        ("My kids' favourite colour is green.", "My kids' favourite colour is red now.", True),
    ],
)
def test_a_plural_possessive_is_another_owner(old: str, new: str, stale: bool) -> None:
    """ "My parents' phone number" is theirs, as "my sister's" is hers: the trailing
    apostrophe was dropped with the word, which left "my phone number"."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("My sister lives in Porto.", "My other sister lives in Lisbon now.", False),
        ("My son is 7.", "My other son is 9 now.", False),
        ("My car is a blue Golf.", "My other car is a red Polo now.", False),
        ("My cat is called Tom.", "My other cat is called Felix.", False),
        # the other one's own fact, changed
        ("My other sister lives in Lisbon.", "My other sister moved to Faro.", True),
        ("My other half is vegetarian.", "My other half is vegan now.", True),
    ],
)
def test_my_other_one_is_another_one(old: str, new: str, stale: bool) -> None:
    """ "My other sister" is a second sister, as "my second sister" is: "other" was
    dropped as a stop word, so she replaced what the user said of the first."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        ("I live in Porto and work at Google as a designer.", "I moved to Lisbon.", False),
        (
            "My sister lives in Porto and is a nurse at the children's hospital.",
            "My sister lives in Lisbon now.",
            False,
        ),
        (
            "My flight is on Tuesday and my hotel is the Hilton on 5th Avenue.",
            "My flight is on Thursday now.",
            False,
        ),
        (
            "My favourite drink is coffee and I'm allergic to peanuts.",
            "My favourite drink is tea now.",
            False,
        ),
        (
            "My flight is on Tuesday. My hotel is the Hilton.",
            "My flight is on Thursday now.",
            False,
        ),
        (
            "My favourite drink is coffee and I'm also allergic to peanuts.",
            "I've gone off coffee.",
            False,
        ),
        # every fact restated: nothing is lost
        (
            "I live in Porto and work at Google.",
            "I live in Lisbon now and work at Globex.",
            True,
        ),
        # one fact and what goes with it: the demo's editor, a value with "and" in it
        (
            "Dana: For the record, my editor of choice is Vim. I've lived in it for about ten "
            "years.",
            "Dana: My editor of choice is Helix now.",
            True,
        ),
        (
            "Dana: For the record, my editor of choice is Vim. I've lived in it for about ten "
            "years.",
            "Dana: Confession: I've switched editors. I'm using Helix full-time now and Vim "
            "is officially retired.",
            True,
        ),
        ("My favourite food is fish and chips.", "My favourite food is pho now.", True),
        (
            "The launch is on 14 March, so the clock is ticking.",
            "The launch is now 28 March.",
            True,
        ),
    ],
)
def test_a_memory_of_several_facts_stays_when_one_changes(old: str, new: str, stale: bool) -> None:
    """A memory that states facts of several subjects was hidden whole when one of them
    changed: "Where do I work?" lost Google. Like a summary, it stays unless the new one
    restates every one of them."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


def test_a_memory_of_several_facts_is_not_the_fallbacks_choice() -> None:
    """A correction without a subject of its own (rule 4) picks no memory of several
    facts either."""
    old = "I live in Porto and work at Google as a designer."
    chosen = rule.choose("Actually, sorry, that's wrong.", [Candidate("old", old, 0.9)])
    assert chosen == []


def test_a_memory_of_several_facts_keeps_them_through_the_engine(tmp_path: Path) -> None:
    """The default embedder, Chroma on disk: "I moved to Lisbon" hid "I live in Porto and
    work at Google as a designer", so "Where do I work?" found no employer."""
    clock = ManualClock()
    with Oblivion(tmp_path, clock=clock) as mem:
        both = mem.remember("I live in Porto and work at Google as a designer.").id
        mem.remember("The weather has been awful all week.")
        clock.advance(3_600.0)
        mem.remember("I moved to Lisbon.")
        assert mem.get(both).superseded_by is None
        assert both in mem.recall("Where do I work?", k=3, feedback=False).ids


@pytest.mark.parametrize(
    "question",
    [
        "Sorry, what was my cat called again?",
        "Sorry what is my cat called?",
        "Actually, what's my cat called?",
        "Oh wait, what was my cat's name?",
        "By the way, what is my cat called?",
    ],
)
def test_a_question_with_a_correction_cue_corrects_nothing(question: str) -> None:
    """ "Sorry" is a cue strong enough for the rule without a subject, and a chat memory
    stores every user turn: "Sorry, what was my cat called again?" replaced the fact it
    asked about, which then left recall. A cue inside a question states no fact."""
    old = Candidate("old", "My cat is called Whiskers.", 0.9)
    assert LexicalSupersession().choose(question, [old]) == []


def test_a_correction_before_a_question_still_corrects() -> None:
    """The cue of a statement beside a question still counts."""
    old = Candidate("old", "The standup is at 9:30.", 0.8)
    new = "Sorry, the standup is at 10:00 now. Is that OK for you?"
    assert LexicalSupersession().choose(new, [old]) == ["old"]


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        # a changed diet, or one rejected (as "I'm not allergic to X" rejects an allergy)
        ("I'm vegetarian.", "I'm not vegetarian anymore, I eat fish now.", True),
        ("I'm vegetarian.", "I am no longer vegetarian.", True),
        ("I am a vegan.", "I'm not a vegan any more.", True),
        ("I'm vegetarian.", "I'm not vegetarian.", True),
        ("I'm vegetarian.", "I'm pescatarian now.", True),
        ("I am a vegan.", "I've gone vegetarian.", True),
        ("I've been vegetarian for ten years.", "I'm vegan now.", True),
        ("I'm vegan.", "I'm not vegetarian, I'm vegan.", True),  # restated: the newest shows
        ("I'm vegetarian.", "I'm not vegetarian, I'm vegan.", True),
        # another diet rejected, another person's diet, no diet of the speaker's
        ("I'm vegetarian.", "I'm not vegan.", False),
        ("I'm vegetarian.", "My partner is vegan now.", False),
        ("My partner is vegetarian.", "I'm vegan now.", False),
        ("My partner is vegetarian.", "I'm not vegetarian any more.", False),
        ("I'm vegetarian.", "Tom is not vegetarian.", False),
        ("I'm vegetarian.", "I'm a vegan chef.", False),
        ("I'm vegetarian.", "I'm vegan for Lent.", False),
        ("I'm vegetarian.", "I'm not a vegetarian restaurant fan.", False),
        ("I'm vegetarian.", "Am I vegetarian?", False),
        ("I'm vegetarian.", "If I'm vegan, what can I eat?", False),
        ("I'm allergic to nuts.", "I'm vegan now.", False),
        # the speaker's diet rejected beside another's kept: the speaker's only
        ("I'm vegetarian.", "I'm not vegetarian anymore.", True),
        ("I'm vegetarian.", "I'm not vegetarian, but my wife is.", True),
        ("My wife is vegetarian.", "I'm not vegetarian, but my wife is.", False),
        ("My son is vegan.", "I am no longer vegan, but my son still is.", False),
    ],
)
def test_the_speakers_diet(old: str, new: str, stale: bool) -> None:
    """ "I'm vegetarian" stated no fact (only "my partner is vegetarian" did), so "I am no
    longer vegetarian" left it first in recall."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new", "own"),
    [
        ("My wife is vegetarian.", "I'm not vegetarian, but my wife is.", "I'm vegetarian."),
        ("My wife is vegetarian.", "I'm not vegetarian myself; my wife is, though.", None),
        ("My son is vegan.", "I am no longer vegan, but my son still is.", "I am a vegan."),
        ("My son is vegan.", "I'm no longer vegan. My son still is.", "I'm vegan."),
    ],
)
def test_the_speakers_diet_rejected_is_no_one_elses(old: str, new: str, own: str | None) -> None:
    """ "I'm not vegetarian" rejects the speaker's diet: it named "vegetarian" and "my
    wife", so "I'm not vegetarian, but my wife is" replaced "my wife is vegetarian" (rule
    3), and "I am no longer vegan, but my son still is" replaced "my son is vegan" as the
    most similar fact after a strong cue (rule 4). The speaker's own still goes."""
    assert LexicalSupersession().choose(new, [Candidate("old", old, 0.9)]) == []
    if own is not None:  # ("I'm not vegetarian myself" is read as no rejection)
        assert LexicalSupersession().choose(new, [Candidate("own", own, 0.9)]) == ["own"]


def test_a_new_diet_needs_the_similarity_of_a_named_preference() -> None:
    """One diet per speaker: "I'm pescatarian now" is 0.45 like "I'm vegetarian" with the
    default model, so it needs only what a named preference or a new home needs."""
    chosen = LexicalSupersession().choose(
        "I'm pescatarian now.", [Candidate("old", "I'm vegetarian.", 0.35)]
    )
    assert chosen == ["old"]


@pytest.mark.parametrize(
    ("old", "new", "stale"),
    [
        # a person named by a bare name, as "my brother" is
        ("Tom lives in Leeds.", "Tom moved to York.", True),
        ("Tom lives in Leeds.", "Tom now lives in York.", True),
        ("Tom lives in Leeds.", "Tom relocated to York.", True),
        ("Tom lives in Leeds.", "Actually, Tom moved to York.", True),
        ("Tom is based in Leeds.", "Tom has moved to York.", True),
        ("Tom is living in Leeds.", "Tom lives in York these days.", True),
        ("Tom moved to York.", "Tom moved to Bristol.", True),
        ("Tom works at Globex.", "Tom works at Initech now.", True),
        ("Tom works at Globex.", "Tom got a job at Initech.", True),
        ("Tom works for Globex.", "Tom started working for Initech.", True),
        ("Tom works as a nurse.", "Tom works as a doctor now.", True),
        ("Tom works at Globex.", "Tom works at Initech.", True),
        ("Tom works at Globex.", "Tom works at the local hospital now.", True),
        ("Tom works as a nurse.", "Tom works as a teacher now.", True),
        ("Tom lives in Leeds.", "Tom moved to York for his new job.", True),
        # a place of work named by a common noun, as "works at a bakery" states one
        ("Tom works at Globex.", "Tom got a job at a bakery.", True),
        ("Mum lives in Leeds.", "My mum moved to York.", True),
        ("My dad lives in Leeds.", "Dad moved to York.", True),
        # another person's, the speaker's own, another fact of the same person
        ("Tom lives in Leeds.", "Anna moved to York.", False),
        ("Tom lives in Leeds.", "I moved to York.", False),
        ("I live in Leeds.", "Tom moved to York.", False),
        ("I live in Leeds.", "Tom lives in York now.", False),
        ("I work at Globex.", "Tom works at Initech now.", False),
        ("My brother lives in Leeds.", "Tom moved to York.", False),
        ("Tom: I live in Leeds.", "Anna moved to York.", False),
        ("Tom lives in Leeds.", "Tom works at Globex.", False),
        ("Tom works at Globex.", "Tom works as a nurse.", False),
        ("Tom lives in Leeds and works at Globex.", "Tom moved to York.", False),
        # history, a plan, a supposition, another's words, no name, no employer
        ("Tom lives in Leeds.", "Tom moved to York when he was ten.", False),
        ("Tom lives in Leeds.", "Tom is moving to York next year.", False),
        ("Tom lives in Leeds.", "If Tom moved to York, he'd be closer.", False),
        ("Tom lives in Leeds.", "Tom told me Anna moved to York.", False),
        ("Tom lives in Leeds.", "Tom moved to a new desk.", False),
        ("Tom works at Globex.", "Tom works at night now.", False),
        ("Tom works at Globex.", "Tom works at home now.", False),
        # a speaker's label is still a speaker
        ("Tom: I live in Leeds.", "Tom: I moved to York.", True),
        ("I live in Leeds.", "I moved to York for work.", True),
    ],
)
def test_a_person_named_by_a_bare_name(old: str, new: str, stale: bool) -> None:
    """ "Tom lives in Leeds" stated no fact (only "Tom's address ..." and "my brother
    lives in ..." did), so "Tom moved to York" left it first in recall."""
    assert rule.supersedes(new, old, similarity=0.9) is stale


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # how, how long or why one works: no employer
        ("Tom works at Globex.", "Tom works at a fast pace."),
        ("Tom works at Globex.", "Tom works at his own pace."),
        ("Tom works at Globex.", "Tom works for hours without a break."),
        ("Tom works at Globex.", "Tom works for free."),
        ("Tom works at Globex.", "Tom works for a living."),
        ("Tom works at Globex.", "Tom got a job at a bakery for the summer."),
        ("My sister works at Globex.", "My sister works at a fast pace."),
        ("I work at Globex.", "I work at a fast pace."),
        # a comparison or a group: no role
        ("Tom works as a nurse.", "Tom works as hard as anyone."),
        ("Tom works as a nurse.", "Tom works as a team with Anna."),
        ("My sister is shy.", "My sister works as hard as anyone."),
        ("I work as a nurse.", "I work as part of a team."),
        # a tool or a product moved to: no home
        ("Tom lives in Leeds.", "Tom moved to Rust for the backend."),
        ("Tom lives in Leeds.", "Tom moved to Linux."),
        ("I live in Leeds.", "I moved to Rust for the backend."),
        ("I live in Leeds.", "We moved to Postgres for our analytics db."),
        ("Tom lives in Leeds.", "Tom moved to Rust for the backend and the CLI."),
        ("I live in Leeds.", "I moved to Linux."),
        # a group whose noun ends the phrase, a time or a reason: still no role or employer
        ("Tom works as a nurse.", "Tom works as a team."),
        ("I work as a nurse.", "I work as a pair on Fridays."),
        ("My sister works as a nurse.", "My sister works as one with her team."),
        ("Tom works at Globex.", "Tom works for a few hours a day."),
        ("Tom works at Globex.", "Tom works at the weekend."),
        ("I work at Globex.", "I work for the money."),
        ("My sister works at Globex.", "My sister works for the love of it."),
    ],
)
def test_how_one_works_or_what_one_moved_to_is_no_employer_role_or_home(old: str, new: str) -> None:
    """The look-alikes the rule names ("works for me", "works at night / home", "lives in
    fear") were refused by a short list; any other value was an employer, a role or a
    home: "Tom works at a fast pace" replaced "Tom works at Globex", "Tom works as hard as
    anyone" replaced "Tom works as a nurse", "Tom moved to Rust for the backend" replaced
    "Tom lives in Leeds"."""
    assert rule.supersedes(new, old, similarity=0.9) is False


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # an employer named by any noun phrase, or a person one works for
        ("I work at Globex.", "I work at a fintech."),
        ("My sister works at Globex.", "My sister works at a biotech."),
        ("Tom works at Globex.", "Tom works at an estate agent."),
        ("I work at Globex.", "I work at a vet's."),
        ("I work at Globex.", "I work at a solicitors."),
        ("I work at Globex.", "I work at a coffee chain."),
        ("I work at Globex.", "I work for a tech giant."),
        ("My sister works at Globex.", "My sister works for a multinational."),
        ("I work for the city.", "I work at Globex."),
        ("My sister works at Globex.", "My sister works for the state."),
        ("My husband works for the railway.", "My husband works at Initech."),
        ("I work at Globex.", "I work for a school district."),
        ("I work at Globex.", "I work for a hospital trust."),
        ("I work at Globex.", "I work for my dad."),
        ("Tom works at Globex.", "Tom works for his dad."),
        # a role that opens with a group noun, or one of many
        ("My wife works as a family lawyer.", "My wife works as a teacher."),
        ("My wife works as a teacher.", "My wife works as a family doctor."),
        ("I work as a nurse.", "I work as a team leader."),
        ("I work as a team leader.", "I work as a nurse."),
        ("Tom works as a pair programmer.", "Tom works as a designer."),
        ("Tom works as a unit manager.", "Tom works as a chef."),
        ("Tom works as a chef.", "Tom works as one of the managers."),
        # a move home for a tech job: the tech noun does not end the phrase
        ("I live in London.", "I moved to Berlin for a backend job."),
        ("Tom lives in Leeds.", "Tom moved to Berlin for a backend job."),
        ("I live in London.", "I moved to Seattle for a cloud infrastructure role."),
        ("I live in London.", "I moved to Tokyo for a UI design job."),
        ("I live in London.", "I moved to Austin for a frontend position."),
        ("I live in London.", "I moved to Dublin for a testing job."),
        ("I live in London.", "I moved to Bangalore for a database admin job."),
        ("I live in London.", "I moved to Houston for a pipeline engineering job."),
        ("I live in London.", "I moved to San Francisco for an apps startup."),
        ("I live in Leeds.", "I moved to York in the builds up to Christmas."),
    ],
)
def test_a_job_or_home_that_looks_like_how_one_works_still_counts(old: str, new: str) -> None:
    """Review of the rule above: it refused what a word of its look-alikes opened or
    what a closed list of workplaces missed. "Works as a team" is no role, but "works as a
    team leader" or "a family doctor" is; "works at a fast pace" no employer, but "at a
    fintech", "for the city" or "for my dad" is; "moved to Rust for the backend" no home,
    but "moved to Berlin for a backend job" is."""
    assert rule.supersedes(new, old, similarity=0.9) is True


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Paris is lovely.", "Paris is a nightmare in August."),
        ("Python works on Linux.", "Python works on Windows now."),
        ("Everyone lives in fear.", "Everyone lives in hope now."),
        ("Nobody lives in Leeds.", "Nobody lives in York now."),
        ("Chrome moved to a new engine.", "Chrome moved to Blink."),
        ("Google moved to Mountain View.", "Google moved to Palo Alto."),
        ("Monday works for me.", "Tuesday works for me now."),
        ("Friday works for us.", "Friday works for me now."),
        ("That works for me.", "This works for us now."),
        ("It works for me.", "It works for them now."),
        ("Dinner moved to Friday.", "Dinner moved to Saturday."),
        ("Christmas moved to Leeds.", "Christmas moved to York."),
        ("New York moved to Brooklyn.", "New York moved to Queens."),
        ("Apparently Tom moved to Leeds.", "Apparently Tom moved to York."),
        ("Will lives in Leeds.", "Will lives in York now."),
    ],
)
def test_a_capitalised_word_that_is_no_person_states_nothing(old: str, new: str) -> None:
    """A sentence's first word is capitalised whoever it names: a pronoun, a day, a
    meal, a firm or a product, an adverb or a stop word ("Will") is read as no person."""
    assert parse(new).subject is None
    assert rule.supersedes(new, old, similarity=0.9) is False


@pytest.mark.integration
@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        ("I'm vegetarian.", "I'm not vegetarian anymore, I eat fish now.", "Am I vegetarian?"),
        ("I'm vegetarian.", "I am no longer vegetarian.", "Do I eat meat?"),
        ("Tom lives in Leeds.", "Tom moved to York.", "Where does Tom live?"),
        ("Tom works at Globex.", "Tom works at Initech now.", "Where does Tom work?"),
    ],
)
def test_a_changed_diet_or_named_persons_fact_through_the_engine(
    tmp_path: Path, old: str, new: str, query: str
) -> None:
    """With the default model, the newer statement supersedes on write and ranks first."""
    clock = ManualClock()
    with Oblivion(tmp_path, clock=clock) as mem:
        a = mem.remember(old)
        clock.advance(7 * 86_400.0)
        b = mem.remember(new)
        assert mem.get(a.id).superseded_by == b.id
        assert mem.recall(query, feedback=False, k=3).ids[0] == b.id
