"""Questions about the user's name, and the memories in which the user gives it
(:mod:`oblivion_core.naming`): recognised, indexed per namespace through every write,
edit and deletion, and ranked first, newest first, for such a question."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import ManualClock, Oblivion, Policy
from oblivion_core.naming import NameIndex, name_question, names_speaker
from oblivion_core.supersession import parse

Fresh = Callable[..., AbstractContextManager[Oblivion]]


@pytest.mark.parametrize(
    "query",
    [
        "What's my name?",
        "what’s my name",
        "What is the user's name?",
        "What was my nickname again?",
        "Who am I?",
        "What should I call the user?",
        "What should you call me?",
        "How should you address me?",
        "Do you remember my name?",
        "What name do I go by?",
        "What do people call me?",
    ],
)
def test_questions_about_the_users_name(query: str) -> None:
    assert name_question(query)


@pytest.mark.parametrize(
    "query",
    [
        "What's the project name?",
        "What should I call the function?",
        "Who am I meeting tomorrow?",
        "What is my sister's name?",
        "Name three hiking trails near Denver",
        "When should I call the plumber?",
    ],
)
def test_other_questions_are_not(query: str) -> None:
    assert not name_question(query)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Hi! I'm Bob, I look after the data platform at Acme.", "Bob"),
        ("User: Hello there, this is Priya from accounting", "Priya"),
        ("hey, it's Tom here", "Tom"),
        ("My name is Ana and I live in Lisbon", "Ana"),
        ("my name’s Siobhan", "Siobhan"),
        ("Please call me Rob, everyone does.", "Rob"),
        ("Dana: Also, a small thing: please call me Dee from now on.", "Dee"),
        ("Actually, I'd rather you called me Theo instead of Ted.", "Theo"),
        ("Everyone calls me Teddy, so you might as well too.", "Teddy"),
        ("I go by Sam", "Sam"),
        ("I'm called Jean-Luc at work", "Jean-Luc"),
        ("Human: Hi, I'm Jo, I run the Leeds office.", "Jo"),
        ("Update: my name is Ana now, not Anna", "Ana"),
        ("user: hi, I'm Bo\nassistant: Hello Bo, I'm Ada.", "Bo"),
        ("My name is O'Brien", "O'Brien"),
        ("Hi, I'm D'Angelo from the platform team", "D'Angelo"),
        ("Call me McDonald", "McDonald"),
    ],
)
def test_memories_that_name_their_speaker(text: str, name: str) -> None:
    assert names_speaker(text) == name


@pytest.mark.parametrize(
    "text",
    [
        "Call me tomorrow at 10 about the budget.",
        "Call me Monday",
        "Hi, I'm tired",
        "Hi, I'm Sorry to bother you",
        "I'm British",
        "My sister is called Ana",
        "The project name is Kestrel",
        "My cousin just named her puppy Nick",
        "Assistant: Hi, I'm Claude.",
        "AI: Nice to meet you, my name is Atlas.",
        "Can we change what you call me? Ted, please, not Teddy.",
        # a transcript states its first speaker's words: the reply is the assistant's
        "user: what can you do?\nassistant: Hi, I'm Max, I can plan trips.",
        "Support: Hi, this is Carla from the help desk.",
        "Chatbot: Hello, I'm Pip!",
        "tool: my name is search_flights",
        # whose, not who; how, not who
        "Hi, I'm Bob's wife, Carol.",
        "Hello, this is Dana's assistant speaking.",
        "I go by Uber to work",
        "I go by train on Mondays",
    ],
)
def test_memories_that_do_not(text: str) -> None:
    assert names_speaker(text) is None


@given(st.text(max_size=120))
def test_a_name_is_a_capitalised_word_of_the_text_and_never_the_assistants(
    text: str,
) -> None:
    name = names_speaker(text)
    if name is not None:
        assert name in text.replace("\u2019", "'") and name[0].isupper()
    assert names_speaker(f"Assistant: {text}") is None
    assert names_speaker("Assistant: Hi, I'm Claude. " + text) is None


def test_the_index_keeps_namings_in_write_order_through_discards() -> None:
    index = NameIndex()
    index.note(["a", "b", "c"], ["My name is Ana", "It rained", "Call me Bea"])
    assert list(index.namings()) == ["a", "c"]
    index.discard(["a"])
    index.note(["d"], ["I go by Dee"])
    assert list(index.namings()) == ["c", "d"]


NOISE = [
    "The project name is Kestrel and it launches in March.",
    "Can you name three good hiking trails near Denver?",
    "What a lovely day it is today.",
    "Our team channel is named #kestrel-launch.",
    "Call me tomorrow at 10 about the budget.",
    "I prefer short answers, bullet points please.",
]


def _engine(fresh: Fresh) -> AbstractContextManager[Oblivion]:
    policy = Policy.template("balanced").replace(maintain_every=0)
    return fresh(clock=ManualClock(), policy=policy)


def test_the_users_naming_comes_first_with_its_reason(fresh: Fresh) -> None:
    with _engine(fresh) as mem:
        bob = mem.remember("Hi! I'm Bob, I look after the data platform at Acme.").id
        mem.remember_many(NOISE)
        for query in ("What's my name?", "Who am I?", "What should I call the user?"):
            result = mem.recall(query, k=4)
            assert result.ids[0] == bob, query
            why = result[0].why
            assert why["relevance_signals"]["names_user"] == 1.0
            assert "names the user" in why["explanation"]
        plain = mem.recall("Tell me about the project name", k=4)
        assert all("names_user" not in (i.why.get("relevance_signals") or {}) for i in plain)


def test_a_new_name_replaces_the_old_one_and_an_invalidated_one_gives_it_back(
    fresh: Fresh,
) -> None:
    """ "My name is Robert", then "call me Bob", then "everyone calls me Bobby": each
    makes the one before stale (the stale-fact rule), so only the newest comes first;
    invalidating it brings the one before back."""
    with _engine(fresh) as mem:
        first = mem.remember("My name is Robert.").id
        mem.remember_many(NOISE)
        second = mem.remember("Please call me Bob.").id
        third = mem.remember("Actually, everyone calls me Bobby.").id
        result = mem.recall("What's my name?", k=4)
        assert result.ids[0] == third
        assert {first, second}.isdisjoint(result.ids)
        mem.invalidate(third)
        assert mem.recall("What's my name?", k=4).ids[0] == second
        mem.invalidate(second)
        assert mem.recall("What's my name?", k=4).ids[0] == first


def test_namings_that_stand_together_take_half_of_k_the_newest(fresh: Fresh) -> None:
    """Two speakers name themselves; neither replaces the other."""
    with _engine(fresh) as mem:
        mem.remember_many(NOISE)
        dana = mem.remember("Dana: please call me Dee from now on.").id
        sam = mem.remember("Sam: Hi, I'm Sam, the new designer.").id
        # two of four places, best scored first (Dana's is an instruction)
        assert mem.recall("What's my name?", k=4).ids[:2] == [dana, sam]
        assert mem.recall("What's my name?", k=3).ids[0] == sam  # one place: the newest


def test_edits_and_deletions_change_what_names_the_user(fresh: Fresh) -> None:
    with _engine(fresh) as mem:
        mem.remember_many(NOISE)
        mem.recall("What's my name?")  # the index is built now
        note = mem.remember("I went for a run this morning.").id
        assert "names_user" not in str(mem.recall("What's my name?", k=3)[0].why)
        mem.edit(note, "Hi, I'm Carla, I went for a run this morning.")
        assert mem.recall("What's my name?", k=3).ids[0] == note
        mem.edit(note, "I went for a long run this morning.")
        assert "names_user" not in str(mem.recall("What's my name?", k=3)[0].why)
        named = mem.remember("My name is Dmitri.").id
        assert mem.recall("What's my name?", k=3).ids[0] == named
        mem.forget(named)
        assert named not in mem.recall("What's my name?", k=3).ids


def test_a_message_stored_with_the_assistants_role_names_no_user(fresh: Fresh) -> None:
    """Bare texts with their chat role as metadata (as the LlamaIndex adapters store
    messages) are read as the stale-fact rule reads them: the assistant's introduction is
    not the user's name, whether the index is built from the store or kept on write, and
    an edit of the role changes what names the user."""

    def named(mem: Oblivion) -> list[str]:
        result = mem.recall("What's my name?", k=4)
        return [i.id for i in result if "names_user" in (i.why.get("relevance_signals") or {})]

    with _engine(fresh) as mem:
        sam = mem.remember("Hi, I'm Sam.", metadata={"role": "user"}).id
        mem.remember("Hello Sam! I'm Ada, your assistant.", metadata={"role": "assistant"})
        mem.remember_many(NOISE)
        assert named(mem) == [sam]  # the index is built from the store
        bot = mem.remember("Hi, I'm Max, I plan trips.", metadata={"role": "assistant"}).id
        assert named(mem) == [sam]  # and kept on write
        mem.edit(bot, metadata={"role": "user"})  # it was the user's line after all
        assert sorted(named(mem)) == sorted([bot, sam])
        mem.edit(bot, metadata={"role": "assistant"})
        assert named(mem) == [sam]


def test_namespaces_keep_their_own_names(fresh: Fresh) -> None:
    with _engine(fresh) as mem:
        ana = mem.remember("My name is Ana.", namespace="ana").id
        ben = mem.remember("My name is Ben.", namespace="ben").id
        for ns in ("ana", "ben"):
            mem.remember_many(NOISE, namespace=ns)
        assert mem.recall("What's my name?", namespace="ana", k=3).ids[0] == ana
        assert mem.recall("What's my name?", namespace="ben", k=3).ids[0] == ben
        assert ben not in mem.recall("What's my name?", namespace="ana").ids


def test_the_index_is_built_again_after_a_reopen_on_the_real_stack(
    tmp_path: Path, real_embedder: Any
) -> None:
    """Chroma on disk, the local model: "What's my name?" shared no word with the
    introduction and ranked "What a lovely day it is today." first before; now the
    user's two namings come first, newest first, and again after a reopen."""
    texts = [
        "User: Hi! I'm Bob, I look after the data platform at Acme.",
        "Assistant: Nice to meet you, Bob.",
        *[f"User: {t}" for t in NOISE],
        "User: My sister is called Ana and she lives in Lisbon.",
        "User: Please call me Rob, everyone does.",
    ]
    clock = ManualClock()
    for _ in range(2):
        with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
            if not mem.count():
                ids = [r.id for r in mem.remember_many(texts)]
            for query in ("What's my name?", "What is the user's name?", "Who am I?"):
                result = mem.recall(query, k=4, feedback=False)
                assert result.ids[:2] == [ids[-1], ids[0]], query


def test_a_name_question_builds_only_the_name_index(fresh: Fresh) -> None:
    """The list index parses every text (about 7 s at 100k memories); a question
    about the name does not pay for it, nor a list question for the name index."""
    with _engine(fresh) as mem:
        mem.remember_many([*NOISE, "My name is Ana."])
        space = mem._spaces[mem.default_namespace]
        mem.recall("What's my name?")
        assert space.names is not None and space.lists is None
        mem.remember_many([*NOISE, "Add oat milk to the shopping list."], namespace="other")
        mem.recall("What's on my shopping list?", namespace="other")
        other = mem._spaces["other"]
        assert other.lists is not None and other.names is None


@pytest.mark.parametrize(
    "text",
    [
        "Please don't call me Bobby.",
        "Stop calling me Bob!",
        "Please never call me Rob.",
        "Can you not call me Bob?",
        "Why did you call me Bob?",
        "Did you just call me Bob?",
        "Who called me Bob?",
        "When did you start calling me Bob?",
    ],
)
def test_a_name_refused_or_asked_about_is_none(text: str) -> None:
    """Neither the name index nor the stale-fact rule reads a name here."""
    assert names_speaker(text) is None
    assert parse(text).subject is None


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Can you call me Bob?", "Bob"),
        ("If you don't mind, call me Bob.", "Bob"),
        ("I don't like Robert so call me Bob", "Bob"),
        ("Call me Bob, not Robert.", "Bob"),
    ],
)
def test_a_request_still_gives_the_name(text: str, name: str) -> None:
    assert names_speaker(text) == name
    assert parse(text).value == frozenset({name.lower()})


def test_refusing_a_name_keeps_the_users_name_on_the_real_stack(
    tmp_path: Path, real_embedder: Any
) -> None:
    """Chroma on disk, the local model: "Please don't call me Bobby" made "Bobby" the
    user's name, superseding (hiding) "My name is Robert", and was shown first for
    "What's my name?"."""
    with Oblivion(tmp_path, embedder=real_embedder, clock=ManualClock()) as mem:
        robert = mem.remember("My name is Robert.").id
        mem.remember_many(NOISE)
        refusal = mem.remember("Please don't call me Bobby.").id
        asked = mem.remember("Why did you call me Bob yesterday?").id
        assert mem.get(robert).superseded_by is None
        result = mem.recall("What's my name?", k=4, feedback=False)
        named = [i.id for i in result if "names_user" in i.why["relevance_signals"]]
        assert named == [robert]
        assert result.ids[0] == robert
        assert {refusal, asked}.isdisjoint(named)


@pytest.mark.parametrize(
    "text",
    [
        'How do I say "my name is Pedro" in French?',
        'Translate "my name is Pedro" into Spanish.',
        "Translate to French: My name is Pedro.",
        "Pretend my name is Pedro.",
        "Let's role-play: call me Captain.",
        "In the story, my name is Pedro.",
        'My brother always says "call me Ishmael".',
        "Translate: my name is Pedro.",
    ],
)
def test_a_name_quoted_played_or_to_translate_is_none(text: str) -> None:
    """Neither the name index nor the stale-fact rule reads a name here: each was the
    user's newest naming, shown first for "What's my name?", and replaced their name."""
    assert names_speaker(text) is None
    assert parse(text).subject is None
