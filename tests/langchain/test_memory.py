"""OblivionMemory: a langchain-classic BaseMemory for legacy chains."""

from __future__ import annotations

import math
from typing import Any

import pytest
from langchain_classic.base_memory import BaseMemory
from langchain_classic.chains import ConversationChain
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from oblivion_core import Oblivion, Policy
from oblivion_core.testing import HashEmbedder, ManualClock, memory, word_count
from oblivion_langchain import OblivionMemory

DAY = 86_400.0


def _kinds(engine: Oblivion, memory_id: str, namespace: str = "ana") -> list[str]:
    return [e.kind for e in engine.history(memory_id, namespace=namespace)]


@pytest.fixture
def mem(engine: Oblivion) -> OblivionMemory:
    """Classic memory over the fast engine, in Ana's namespace."""
    return OblivionMemory(oblivion=engine, namespace="ana", token_budget=60)


def test_is_a_classic_base_memory(mem: OblivionMemory) -> None:
    """It is a BaseMemory exposing one memory variable."""
    assert isinstance(mem, BaseMemory)
    assert mem.memory_variables == ["history"]
    assert OblivionMemory(oblivion=mem.oblivion, memory_key="past").memory_variables == ["past"]


def test_save_then_load_as_text(mem: OblivionMemory, engine: Oblivion) -> None:
    """save_context stores a Human/AI turn; load returns the relevant turns as text."""
    mem.save_context({"input": "I'm vegetarian, never suggest meat."}, {"output": "Noted!"})
    mem.save_context({"input": "My cat is called Tom."}, {"output": "Hi Tom!"})
    first, _ = engine.records(namespace="ana")
    assert first.text == "Human: I'm vegetarian, never suggest meat.\nAI: Noted!"
    assert first.category == "instruction"
    history = mem.load_memory_variables({"input": "Suggest a dinner without meat"})["history"]
    assert history.startswith("- Human: I'm vegetarian, never suggest meat.\n  AI: Noted!")
    assert "Tom" in history


def test_standing_instructions_load_whatever_the_input(engine: Oblivion) -> None:
    """A saved instruction is loaded first for an input about something else (by
    default); standing=() loads what the input recalls only; a bad value is refused."""
    rule = engine.remember("Always give distances in kilometres.", namespace="ana")
    assert rule.category == "instruction"
    for text in ["Ana lives in Porto.", "Ana works as a nurse.", "Ana has two cats."]:
        engine.remember(text, namespace="ana")
    loaded = OblivionMemory(oblivion=engine, namespace="ana", k=2)
    history = loaded.load_memory_variables({"input": "Tell me about Ana"})["history"]
    assert history.startswith("- Always give distances in kilometres.")
    off = OblivionMemory(oblivion=engine, namespace="ana", k=2, standing=())
    history = off.load_memory_variables({"input": "Tell me about Ana"})["history"]
    assert "kilometres" not in history and history.count("Ana") == 2
    with pytest.raises(ValueError, match="standing must be a category name"):
        OblivionMemory(oblivion=engine, standing=3)


IMAGE_ONLY = HumanMessage(content=[{"type": "image", "url": "https://example.com/menu.png"}])


@pytest.mark.parametrize(
    "blank", ["", "  ", IMAGE_ONLY, [{"type": "image", "url": "https://example.com/a.png"}]]
)
def test_an_input_without_text_still_loads_the_standing_instructions(
    engine: Oblivion, clock: ManualClock, blank: Any
) -> None:
    """An input with no text (blank, an image-only message or block list) has nothing
    to match, yet the standing instructions load, as recall puts them first: the
    current ones (a superseded one's successor in its place, an invalidated one left
    out), best scored first, within k's half and the budget, and boosted when shown."""
    rules = [
        engine.remember(text, category="instruction", namespace="ana")
        for text in [
            "Always answer in British English.",
            "Call me Dee.",
            "Never use emoji.",
            "Reply in short sentences.",
        ]
    ]
    engine.remember("Ana lives in Porto.", namespace="ana")
    clock.advance(3 * DAY)
    engine.reinforce([rules[2].id], namespace="ana")  # the most active of them
    engine.invalidate(rules[3].id, namespace="ana")
    newer = engine.remember("Call me Dana.", category="preference", namespace="ana")
    engine.supersede(rules[1].id, newer.id, namespace="ana")
    standing = {rule.text for rule in rules} | {newer.text}

    def first(k: int, budget: int | None) -> list[str]:
        """What a recall for unrelated text shows of them (reading only)."""
        result = engine.recall(
            "zzqx",
            k=k,
            token_budget=budget,
            namespace="ana",
            standing="instruction",
            feedback=False,
        )
        return [text for text in result.texts if text in standing]

    expected = first(6, None)
    assert expected == ["Never use emoji.", "Always answer in British English.", "Call me Dana."]
    before = _kinds(engine, rules[0].id)
    loaded = OblivionMemory(oblivion=engine, namespace="ana", k=6, token_budget=None)
    history = loaded.load_memory_variables({"input": blank})["history"]
    assert history.splitlines() == ["- " + text for text in expected]
    assert _kinds(engine, rules[0].id) == [*before, "recall"]  # shown: the recall boost
    # within k's half (k=2: one place) and the budget
    best = first(2, None)[0]
    one = OblivionMemory(oblivion=engine, namespace="ana", k=2, token_budget=None)
    assert one.load_memory_variables({"input": blank})["history"] == "- " + best
    fits = first(6, 8)[0]  # word-count tokens + 4 per item: one 3-word memory
    tight = OblivionMemory(oblivion=engine, namespace="ana", k=6, token_budget=8)
    assert tight.load_memory_variables({"input": blank})["history"] == "- " + fits
    best = first(2, None)[0]
    as_messages = OblivionMemory(
        oblivion=engine, namespace="ana", return_messages=True, k=2, token_budget=None
    )
    assert as_messages.load_memory_variables({"input": blank})["history"] == [
        SystemMessage(content=best)
    ]
    off = OblivionMemory(oblivion=engine, namespace="ana", standing=())
    assert off.load_memory_variables({"input": blank})["history"] == ""
    new = OblivionMemory(oblivion=engine, namespace="new")
    assert new.load_memory_variables({"input": blank})["history"] == ""


def test_loading_a_new_namespace_returns_nothing(engine: Oblivion) -> None:
    """A conversation with no memories yet loads an empty string (or no messages)."""
    assert OblivionMemory(oblivion=engine, namespace="new").load_memory_variables(
        {"input": "hi"}
    ) == {"history": ""}
    assert OblivionMemory(
        oblivion=engine, namespace="new", return_messages=True
    ).load_memory_variables({"input": "hi"}) == {"history": []}


@pytest.mark.parametrize("budget", [0, 8, 15, 30, 100])
def test_loaded_text_fits_the_budget(engine: Oblivion, budget: int) -> None:
    """The whole loaded block, header included, costs at most token_budget tokens."""
    mem = OblivionMemory(oblivion=engine, namespace="ana", token_budget=budget, header="Past:")
    for i in range(12):
        mem.save_context({"input": f"Fact {i}: room {i} has {i} beds."}, {"output": "Noted."})
    text = mem.load_memory_variables({"input": "How many beds in room 3?"})["history"]
    assert word_count(text) <= budget
    if budget >= 30:
        assert text.startswith("Past:\n- Human: Fact 3: room 3 has 3 beds.")


def test_a_counter_of_fractional_tokens_loads_within_the_budget(clock: ManualClock) -> None:
    """A counter estimating len/4 (fractions, which the engine rounds up) failed every
    load: the header's raw count left a budget of 295.25 tokens, which recall refused."""
    quarter = lambda text: len(text) / 4  # noqa: E731
    engine = memory(clock=clock, token_counter=quarter)
    mem = OblivionMemory(oblivion=engine, namespace="ana", token_budget=30, header="Past:")
    mem.save_context({"input": "I drink espresso every morning."}, {"output": "Noted."})
    text = mem.load_memory_variables({"input": "What do I drink?"})["history"]
    assert text.startswith("Past:\n- Human: I drink espresso every morning.")
    assert math.ceil(quarter(text)) <= 30


def test_return_messages_gives_human_and_ai_messages(mem: OblivionMemory, engine: Oblivion) -> None:
    """With return_messages=True each turn comes back as a Human and an AI message."""
    mem.save_context({"input": "I live in Leeds."}, {"output": "Leeds, noted."})
    engine.remember("Ana is allergic to nuts.", namespace="ana")
    mem.return_messages = True
    messages = mem.load_memory_variables({"input": "Where do I live?"})["history"]
    assert messages[:2] == [HumanMessage("I live in Leeds."), AIMessage("Leeds, noted.")]
    assert SystemMessage("Ana is allergic to nuts.") in messages


@pytest.mark.parametrize("long_side", ["input", "output"])
def test_a_cut_turn_loads_as_messages_within_the_budget(clock: ManualClock, long_side: str) -> None:
    """A turn longer than max_text_chars is stored cut, and the messages rebuilt from it
    are the sides as cut: they cost what recall packed, within token_budget (they used
    to be rebuilt from the uncut turn, many times the budget)."""
    engine = memory(policy=Policy(max_text_chars=400), clock=clock)
    try:
        mem = OblivionMemory(
            oblivion=engine, namespace="ana", token_budget=100, return_messages=True
        )
        long = "My vegetarian recipes: " + " ".join(f"step{i} chop onions" for i in range(300))
        short = "Noted your vegetarian recipes."
        said = (
            {"input": long, "output": short}
            if long_side == "input"
            else {
                "input": short,
                "output": long,
            }
        )
        mem.save_context({"input": said["input"]}, {"output": said["output"]})
        (stored,) = engine.records(namespace="ana")
        assert len(stored.text) <= 400 and stored.text.endswith(" [...]")
        messages = mem.load_memory_variables({"input": "vegetarian recipes"})["history"]
        assert sum(word_count(m.content) for m in messages) <= 100
        texts = [m.content for m in messages]
        assert all(t in stored.text for t in texts)
        if long_side == "input":  # the answer fell beyond the cut: no AI message
            assert [type(m) for m in messages] == [HumanMessage]
        else:
            assert [type(m) for m in messages] == [HumanMessage, AIMessage]
            assert texts[0] == short
        assert texts[-1].startswith(long[:100]) and texts[-1].endswith(" [...]")
    finally:
        engine.close()


def test_a_turn_its_text_no_longer_holds_loads_as_its_text(
    mem: OblivionMemory, engine: Oblivion
) -> None:
    """A memory whose saved turn is not in its text (saved uncut by an older version,
    or edited since) comes back as one SystemMessage of its text, not the old sides."""
    text = "Human: my recipes: step0 [...]"
    engine.remember(
        text,
        metadata={"oblivion_turn": {"input": "my recipes: " + "step " * 200, "output": "ok"}},
        namespace="ana",
    )
    mem.return_messages = True
    assert mem.load_memory_variables({"input": "recipes"})["history"] == [SystemMessage(text)]


def test_save_context_gives_the_used_boost_to_what_the_answer_drew_on(
    mem: OblivionMemory, engine: Oblivion
) -> None:
    """After a load, save_context boosts the recalled memories the output echoes."""
    mem.save_context({"input": "I'm vegetarian, never suggest meat."}, {"output": "Noted!"})
    mem.save_context({"input": "My cat is called Tom."}, {"output": "Hi Tom!"})
    veg, cat = (r.id for r in engine.records(namespace="ana"))
    mem.load_memory_variables({"input": "Suggest a dinner"})
    mem.save_context({"input": "Suggest a dinner"}, {"output": "A vegetarian risotto, no meat."})
    assert "used" in _kinds(engine, veg)
    assert "used" not in _kinds(engine, cat)


def test_a_memory_forgotten_since_the_load_does_not_cancel_the_others_used_boost(
    engine: Oblivion, clock: ManualClock
) -> None:
    """Oblivion.mark_used is all-or-nothing: when one memory the answer drew on was
    forgotten since the load, the others still get their "used" boost."""
    mem = OblivionMemory(oblivion=engine, namespace="ana", token_budget=None)
    mem.save_context({"input": "I am vegetarian and never eat meat"}, {"output": "Noted"})
    mem.save_context({"input": "My sister lives in Porto near the river"}, {"output": "Lovely"})
    veg, porto = (r.id for r in engine.records(namespace="ana"))
    clock.advance(60 * DAY)
    mem.load_memory_variables({"input": "vegetarian dinner with my sister in Porto"})
    assert {veg, porto} <= {memory_id for memory_id, _ in mem._last_recalled}
    engine.forget(porto, namespace="ana")  # e.g. by another component meanwhile
    before = engine.get(veg, namespace="ana").activation
    mem.save_context(
        {"input": "what should I cook?"},
        {
            "output": "You are vegetarian and never eat meat; your sister in Porto near the "
            "river could join for a lentil curry."
        },
    )
    assert "used" in _kinds(engine, veg)
    assert engine.get(veg, namespace="ana").activation > before


def test_a_long_best_memory_over_the_budget_leaves_the_others_loaded_and_boosted() -> None:
    """A memory of many lines costs more rendered (each line indented) than recall packed
    it for: the loaded text left out every memory, the short ones that fit included,
    and the recall had boosted all three although the chain saw none. Now only the long
    one is left out, and only the memories loaded get the recall's boost."""
    engine = Oblivion(None, clock=ManualClock(), embedder=HashEmbedder())  # real tiktoken
    party = "Shopping list for the party:\n" + "\n".join(
        f"{i}. party item {i}" for i in range(1, 25)
    )
    small = ["The party is on Saturday at Anna's flat.", "Tom brings the party music."]
    ids = {
        text: engine.remember(text, namespace="u", category="fact").id for text in (party, *small)
    }
    query = "shopping list for the party"
    packed = engine.recall(query, namespace="u", feedback=False)
    assert packed[0].text == party
    budget = sum(it.tokens + engine.policy.per_item_tokens for it in packed)
    text = OblivionMemory(
        oblivion=engine, namespace="u", token_budget=budget
    ).load_memory_variables({"input": query})["history"]
    assert text == "\n".join(f"- {t}" for t in small) or text == "\n".join(
        f"- {t}" for t in reversed(small)
    )
    counts = {t: engine.get(i, namespace="u").access_count for t, i in ids.items()}
    assert counts == {party: 0, small[0]: 1, small[1]: 1}
    engine.close()


@pytest.mark.parametrize("odd", ["\x00", "\ud800"])
def test_a_nul_or_lone_surrogate_in_the_input_is_cleaned_not_raised(
    mem: OblivionMemory, engine: Oblivion, odd: str
) -> None:
    """A NUL or a lone surrogate (which the engine refuses) in the chain's input is
    cleaned out of the query and of the stored turn (NULs as spaces, surrogates as
    "?"); an input left blank then (only NULs) loads an empty history."""
    mem.save_context({"input": "I live in Leeds."}, {"output": "Leeds, noted."})
    loaded = mem.load_memory_variables({"input": f"Where do I{odd} live?"})["history"]
    assert "I live in Leeds." in loaded
    mem.save_context({"input": f"Where do I{odd} live?"}, {"output": f"In Leeds{odd}."})
    assert engine.records(namespace="ana")[-1].text.startswith("Human: Where do I")
    assert mem.load_memory_variables({"input": "\x00 \x00"})["history"] == ""


BLOCKS = [
    {"type": "text", "text": "I live in Leeds."},
    {"type": "image", "url": "https://example.com/leeds.png"},
]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (BLOCKS, "I live in Leeds."),
        (HumanMessage(content=BLOCKS), "I live in Leeds."),
        (HumanMessage(content="I live in Leeds."), "I live in Leeds."),
        (42, "42"),
        (2.5, "2.5"),
    ],
    ids=["content-blocks", "message-with-blocks", "message", "int", "float"],
)
def test_messages_and_content_blocks_are_stored_as_their_text(
    mem: OblivionMemory, engine: Oblivion, value: Any, text: str
) -> None:
    """A message or a list of content blocks is stored as its text, not its repr
    (as ``ConversationBufferMemory`` renders it); numbers as ``str()``."""
    mem.save_context(
        {"input": value}, {"output": AIMessage(content=[{"type": "text", "text": "Noted."}])}
    )
    (record,) = engine.records(namespace="ana")
    assert record.text == f"Human: {text}\nAI: Noted."
    assert record.metadata["oblivion_turn"] == {"input": text, "output": "Noted."}
    loaded = mem.load_memory_variables({"input": value})["history"]
    assert loaded == f"- Human: {text}\n  AI: Noted."


@pytest.mark.parametrize(
    ("inputs", "outputs", "stored"),
    [
        ({"input": ""}, {"output": "Here is the report."}, "AI: Here is the report."),
        ({"input": "  "}, {"output": "Here is the report."}, "AI: Here is the report."),
        ({"input": "Send the report."}, {"output": ""}, "Human: Send the report."),
        ({"input": "Send the report."}, {"output": None}, "Human: Send the report."),
        ({"input": None}, {"output": "Here is the report."}, "AI: Here is the report."),
    ],
)
def test_a_turn_with_one_empty_side_keeps_the_other(
    engine: Oblivion, inputs: dict[str, Any], outputs: dict[str, Any], stored: str
) -> None:
    """An empty input (or output) is left out; the turn is kept with the other side,
    and loads as that one message, like ``ConversationBufferMemory`` keeps the output."""
    mem = OblivionMemory(oblivion=engine, namespace="ana", return_messages=True)
    mem.save_context(inputs, outputs)
    assert [r.text for r in engine.records(namespace="ana")] == [stored]
    messages = mem.load_memory_variables({"input": "report"})["history"]
    assert [(type(m), m.content) for m in messages] == [
        (HumanMessage if stored.startswith("Human") else AIMessage, stored.split(": ", 1)[1])
    ]


def test_a_turn_with_nothing_said_is_not_stored(mem: OblivionMemory, engine: Oblivion) -> None:
    """Both sides empty: nothing is stored and nothing raises."""
    mem.save_context({"input": " "}, {"output": ""})
    mem.save_context(
        {"input": [{"type": "image", "url": "https://example.com/x.png"}]}, {"output": ""}
    )
    assert "ana" not in engine.namespaces()


def test_clear_forgets_the_namespace_only(mem: OblivionMemory, engine: Oblivion) -> None:
    """clear() removes this conversation's memories and leaves other namespaces alone."""
    mem.save_context({"input": "a fact about trains"}, {"output": "ok"})
    engine.remember("Ben's fact", namespace="ben")
    mem.clear()
    assert engine.count(namespace="ana") == 0
    assert engine.count(namespace="ben") == 1
    OblivionMemory(oblivion=engine, namespace="never").clear()


def test_clear_uses_the_engines_bulk_clear(
    mem: OblivionMemory, engine: Oblivion, monkeypatch: pytest.MonkeyPatch
) -> None:
    """clear() is one Oblivion.clear(namespace=...), not a forget() per memory (which
    took seconds for a few hundred turns on disk)."""
    for i in range(5):
        mem.save_context({"input": f"fact {i} about trains"}, {"output": "ok"})
    cleared: list[str | None] = []
    real_clear = engine.clear

    def spy_clear(*, namespace: str | None = None) -> int:
        cleared.append(namespace)
        return real_clear(namespace=namespace)

    def no_forget(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("clear() must not forget memories one by one")

    monkeypatch.setattr(engine, "clear", spy_clear)
    monkeypatch.setattr(engine, "forget", no_forget)
    mem.clear()
    assert cleared == ["ana"]
    assert engine.count(namespace="ana") == 0
    OblivionMemory(oblivion=engine, namespace="never").clear()  # still a no-op


@pytest.mark.parametrize(
    ("kwargs", "inputs", "outputs", "match"),
    [
        ({}, {"a": "1", "b": "2"}, {"output": "x"}, "One input key"),
        ({"input_key": "question"}, {"input": "1"}, {"output": "x"}, "question"),
        ({}, {"input": "1"}, {"x": "1", "y": "2"}, "output_key"),
        ({"output_key": "answer"}, {"input": "1"}, {"output": "x"}, "answer"),
        ({}, {"input": "1"}, {}, "got no outputs"),
    ],
)
def test_ambiguous_keys_fail_clearly(
    engine: Oblivion,
    kwargs: dict[str, Any],
    inputs: dict[str, Any],
    outputs: dict[str, str],
    match: str,
) -> None:
    """Missing or ambiguous input/output keys raise a ValueError and store nothing."""
    mem = OblivionMemory(oblivion=engine, namespace="ana", **kwargs)
    with pytest.raises(ValueError, match=match):
        mem.save_context(inputs, outputs)
    assert "ana" not in engine.namespaces()


@pytest.mark.parametrize("kwargs", [{"token_budget": -1}, {"k": 0}])
def test_bad_settings_fail_clearly(engine: Oblivion, kwargs: dict[str, Any]) -> None:
    """A negative budget or k < 1 is refused."""
    with pytest.raises(ValueError, match=r"token_budget|k must"):
        OblivionMemory(oblivion=engine, **kwargs)


@pytest.mark.parametrize("kwargs", [{"tokenbudget": 10}, {"top_k": 1}, {"ai_prefx": "Bot"}])
def test_unknown_fields_are_refused(engine: Oblivion, kwargs: dict[str, Any]) -> None:
    """A misspelt or foreign field is an error, not silently ignored."""
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        OblivionMemory(oblivion=engine, **kwargs)


def test_drop_in_for_a_legacy_conversation_chain(engine: Oblivion) -> None:
    """ConversationChain(memory=OblivionMemory(...)) runs and sees recalled turns."""
    llm = FakeListLLM(responses=["Noted, no meat.", "How about a mushroom risotto?"])
    mem = OblivionMemory(oblivion=engine, namespace="ana")
    chain = ConversationChain(llm=llm, memory=mem)
    chain.invoke({"input": "I'm vegetarian, never suggest meat."})
    chain.invoke({"input": "What should I cook tonight?"})
    assert engine.count(namespace="ana") == 2
    history = mem.load_memory_variables({"input": "vegetarian dinner"})["history"]
    assert "vegetarian" in history


async def test_async_variants(mem: OblivionMemory, engine: Oblivion) -> None:
    """asave_context, aload_memory_variables and aclear match the sync methods."""
    await mem.asave_context({"input": "I live in Leeds."}, {"output": "Leeds, noted."})
    loaded = await mem.aload_memory_variables({"input": "Where do I live?"})
    assert "Leeds" in loaded["history"]
    await mem.aclear()
    assert engine.count(namespace="ana") == 0


@pytest.mark.integration
def test_real_stack_classic_memory(real_engine: Oblivion) -> None:
    """With MiniLM, Chroma and tiktoken the relevant turn loads first, within budget."""
    mem = OblivionMemory(oblivion=real_engine, namespace="ana", token_budget=40)
    mem.save_context({"input": "I live in Leeds."}, {"output": "Leeds, noted."})
    mem.save_context({"input": "I had pasta for lunch."}, {"output": "Sounds tasty."})
    text = mem.load_memory_variables({"input": "Which city is my home?"})["history"]
    assert text.startswith("- Human: I live in Leeds.")
    assert real_engine.token_counter(text) <= 40
