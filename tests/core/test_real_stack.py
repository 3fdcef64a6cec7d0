"""Through the real stack: all-MiniLM-L6-v2 (fastembed), embedded Chroma on disk and
tiktoken cl100k_base."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oblivion_core import FastEmbedEmbedder, ManualClock, Oblivion, Policy, Tier, TiktokenCounter

pytestmark = pytest.mark.integration

DAY = 86_400.0

NOTES = [
    "My favourite colour is green",
    "I work as a nurse at the city hospital",
    "My daughter Emma starts school in September",
    "I am allergic to peanuts",
    "Our flight to Lisbon leaves on Friday morning",
    "Always answer in British English",
    "The quarterly report is due next Tuesday",
    "I usually go running along the river before breakfast",
]


def test_default_stack_recalls_by_meaning(tmp_path: Path) -> None:
    """With every default (MiniLM, Chroma, tiktoken), a paraphrased question finds its memory."""
    with Oblivion(tmp_path) as mem:
        assert isinstance(mem.embedder, FastEmbedEmbedder)
        assert isinstance(mem.token_counter, TiktokenCounter)
        mem.remember_many(NOTES)
        result = mem.recall("What colour do I like?", k=3)
        assert result.texts[0] == "My favourite colour is green"
        printed = str(result).splitlines()  # the header, then each item and its why
        assert printed[1].endswith(" preference: My favourite colour is green")
        assert printed[2].strip().startswith("ranked 1 of ")
        count = TiktokenCounter()
        assert result.total_tokens == sum(
            count(t) + mem.policy.per_item_tokens for t in result.texts
        )


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What is my job?", "I work as a nurse at the city hospital"),
        ("Which foods should I avoid?", "I am allergic to peanuts"),
        ("When do we travel to Portugal?", "Our flight to Lisbon leaves on Friday morning"),
        ("What exercise do I do?", "I usually go running along the river before breakfast"),
    ],
)
def test_semantic_recall(tmp_path: Path, real_embedder: Any, question: str, answer: str) -> None:
    """Questions sharing no keywords with a memory still rank it first."""
    with Oblivion(tmp_path, embedder=real_embedder, clock=ManualClock()) as mem:
        mem.remember_many(NOTES)
        assert mem.recall(question, k=1).texts == [answer]


def test_budget_in_real_tokens_is_never_exceeded(tmp_path: Path, real_embedder: Any) -> None:
    """Across queries and budgets, items never cost more cl100k tokens than the budget."""
    count = TiktokenCounter()
    with Oblivion(tmp_path, embedder=real_embedder, clock=ManualClock()) as mem:
        mem.remember_many([*NOTES, " ".join(NOTES)])
        for budget in (0, 5, 12, 30, 60, 200):
            for q in ("colour", "travel plans", "health", "work and school", "what should I know"):
                result = mem.recall(q, token_budget=budget)
                cost = sum(count(t) + mem.policy.per_item_tokens for t in result.texts)
                assert cost == result.total_tokens <= budget
                assert [it.tokens for it in result] == [count(t) for t in result.texts]
                assert count(result.render(count, budget=budget, header="Memory:")) <= budget


def test_recall_works_right_after_reopen(tmp_path: Path, real_embedder: Any) -> None:
    """A reopened store answers by meaning at once, without re-adding anything."""
    clock = ManualClock()
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        mem.remember_many(NOTES)
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        result = mem.recall("What colour do I like?", k=1, deep=False)
        assert result.texts == ["My favourite colour is green"]


def test_long_text_found_by_its_end(tmp_path: Path, real_embedder: Any) -> None:
    """A text far beyond the model window is stored whole and found by a detail at its end."""
    town = [
        "The committee met on Tuesday to review the annual budget for road maintenance.",
        "Several residents complained about noise from the construction site near the school.",
        "The mayor promised that the new library would open before the end of the year.",
        "Traffic on the main bridge has doubled since the factory expanded its night shift.",
        "A local bakery won a regional prize for its sourdough bread and rye rolls.",
        "Volunteers planted two hundred trees along the river during the spring weekend.",
        "The football club announced a new coach after a disappointing season.",
        "Prices for apartments in the city centre rose sharply over the last decade.",
    ]
    text = " ".join(town * 4) + " My sister Alice is allergic to shellfish."
    assert len(text.split()) > 400
    with Oblivion(tmp_path, embedder=real_embedder, clock=ManualClock()) as mem:
        mem.remember_many(["I like to cook pasta on Sundays", "Jupiter is the largest planet"])
        rec = mem.remember(text)
        assert mem.get(rec.id).text == text
        assert mem.recall("Which foods is Alice allergic to?", k=1).ids == [rec.id]


def test_small_talk_fades_and_instructions_stay(tmp_path: Path, real_embedder: Any) -> None:
    """With real categorisation and decay, greetings are archived after days, rules stay."""
    clock = ManualClock()
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        hello = mem.remember("Hi! How are you today?")
        rule = mem.remember("Never share my home address with anyone.")
        clock.advance(7 * DAY)
        plan = mem.maintain()
        assert hello.id in plan.archived
        assert rule.id not in plan.archived
        assert mem.recall("Can you tell people where I live?", k=1).ids == [rule.id]


def test_active_only_recall_keeps_its_keyword_match(tmp_path: Path, real_embedder: Any) -> None:
    """deep=False, live and after a reopen: an active memory gets its BM25 score although
    dozens of archived ones repeat the query's word (BM25 ranks the active tier apart)."""
    clock = ManualClock()
    chatter = [f"Okapi, okapi, okapi! Gerald loved the okapi, visit {i}" for i in range(70)]
    chatter += [f"The gift shop sold {i} postcards today" for i in range(150)]
    keeper = "Book the okapi keeper talk for the school group"
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        mem.remember_many(chatter, categories=["small_talk"] * len(chatter), supersede=False)
        clock.advance(5 * DAY)
        mem.maintain()
        assert mem.stats()["active"] == 0
        kept = mem.remember(keeper, category="instruction").id
        mem.remember("Always answer in British English", category="instruction")
        live = mem.recall("okapi", deep=False, feedback=False)
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock) as mem:
        reopened = mem.recall("okapi", deep=False, feedback=False)
    for result in (live, reopened):
        assert result.ids[0] == kept
        assert result[0].why["relevance_signals"]["lexical"] > 0


def test_a_reopen_reading_its_tables_by_scan_recalls_the_same(
    tmp_path: Path, real_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace holding most of the store is read by scanning its tables on a reopen
    (``state._SCAN_ROWS``, forced low here): the same memories, activations, links and
    recalls as a reopen reading through the keys, beside another namespace."""
    from oblivion_core import state

    clock = ManualClock()
    # three stay active, the rest is archived: a deep recall reads their vectors too
    policy = Policy.template("balanced").replace(active_capacity=3)
    with Oblivion(tmp_path, embedder=real_embedder, clock=clock, policy=policy) as mem:
        mem.remember_many(NOTES)
        mem.remember_many(NOTES[:2], namespace="other")
        mem.recall("What colour do I like?", k=2)
        mem.link(mem.records()[0].id, mem.records()[3].id, 0.8)
        clock.advance(DAY)
        mem.maintain()

    decided: list[tuple[str, bool]] = []  # (table, scanned) of every read that chose
    choose = state.StateDB._scan

    def spy(db: Any, table: str, *args: Any, **kwargs: Any) -> bool:
        scanned = choose(db, table, *args, **kwargs)
        decided.append((table, scanned))
        return scanned

    monkeypatch.setattr(state.StateDB, "_scan", spy)

    def reopened(scan: bool) -> tuple[Any, ...]:
        monkeypatch.setattr(state, "_SCAN_ROWS", 1 if scan else 10**9)
        decided.clear()
        with Oblivion(tmp_path, embedder=real_embedder, clock=clock, policy=policy) as mem:
            records = [(r.id, r.text, r.activation, r.tier) for r in mem.records()]
            graph = mem._space(mem.default_namespace).graph.adj
            found = [
                (it.id, it.score)
                for q in ("my favourite colour and the flight to Lisbon", "When do we travel?")
                for it in mem.recall(q, k=3, deep=True, feedback=False)
            ]
            others = [r.text for r in mem.records(namespace="other")]
        # the default namespace's memories (state and texts), links and vectors
        assert {t for t, scanned in decided if scanned} == (
            {"memories", "links", "vectors"} if scan else set()
        )
        return records, graph, found, others

    by_scan, by_key = reopened(True), reopened(False)
    assert by_scan[0] == by_key[0] and by_scan[1] == by_key[1] and by_scan[3] == by_key[3]
    # the same items; scores within a float32 rounding: a product rounds by a memory's
    # place in its matrix, and the archive's copy holds its rows in the order they were
    # read (by rowid in a scan, by id through the key)
    assert [i for i, _ in by_scan[2]] == [i for i, _ in by_key[2]]
    assert [s for _, s in by_scan[2]] == pytest.approx([s for _, s in by_key[2]], abs=1e-6)
    assert len(by_scan[0]) == len(NOTES) and sorted(by_scan[3]) == sorted(NOTES[:2])
    assert {tier for *_, tier in by_scan[0]} == {Tier.ACTIVE, Tier.ARCHIVE}
