"""What an adapter showed: the boost it gives, and whether a block shown before is still
current (a tool may forget or correct a memory between two model calls of one turn)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from oblivion_core import Oblivion
from oblivion_core.shown import reinforce_shown, still_current
from oblivion_core.testing import memory


def _two(mem: Oblivion) -> list[tuple[str, str]]:
    texts = ["Dana lives at 7 Quillfeather Lane.", "Dana drinks green tea."]
    return [(r.id, r.text) for r in mem.remember_many(texts, supersede=False)]


def test_a_block_nothing_changed_is_current() -> None:
    with memory() as mem:
        shown = _two(mem)
        mem.recall("where does Dana live", k=2)  # a recall changes activations, not texts
        assert still_current(mem, shown, None)
        assert still_current(mem, [], None)


CHANGES: dict[str, Callable[[Oblivion, str], object]] = {
    "forget": lambda m, i: m.forget(i),
    "invalidate": lambda m, i: m.invalidate(i),
    "edit": lambda m, i: m.edit(i, "Dana lives at 9 Elm Road."),
    "supersede": lambda m, i: m.supersede(i, m.remember("Dana moved to Leeds.").id),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_block_showing_a_changed_memory_is_not_current(change: str) -> None:
    with memory() as mem:
        shown = _two(mem)
        CHANGES[change](mem, shown[0][0])
        assert not still_current(mem, shown, None)
        assert still_current(mem, shown[1:], None)  # the other memory is as shown


def test_an_unknown_namespace_is_not_current() -> None:
    with memory() as mem:
        shown = _two(mem)
        assert not still_current(mem, shown, "someone-else")


def test_the_boost_skips_a_memory_forgotten_since_and_gives_the_others_theirs() -> None:
    with memory() as mem:
        shown = _two(mem)
        items = mem.recall("Dana", k=2, feedback=False).items
        assert {it.id for it in items} == {i for i, _ in shown}
        before = {it.id: len(mem.history(it.id)) for it in items}
        mem.forget(shown[0][0])
        reinforce_shown(mem, items, None)
        kept = shown[1][0]
        assert [e.kind for e in mem.history(kept)][before[kept] :] == ["recall"]


def test_what_a_block_shows_beside_the_hits_is_boosted_not_counted() -> None:
    """The adapters' boost of a shown block counted a hit's neighbouring turns and the
    standing instructions as recalls of their categories: a category never asked for
    lengthened its half-life (as the engine's own recall feedback now does not)."""
    from oblivion_core import ManualClock, Policy

    clock = ManualClock()
    policy = Policy().replace(maintain_every=0, expand_neighbours=1, adjacency_window=60.0)
    with memory(clock=clock, policy=policy) as mem:
        rule = mem.remember("Always answer in British English.", category="instruction").id
        clock.advance(86_400)
        chat = mem.remember("Lovely weather today, isn't it?", category="small_talk").id
        clock.advance(10)
        hit = mem.remember("The invoice portal password rotates every 90 days.").id
        shown = mem.recall("invoice portal password", k=3, standing="instruction", feedback=False)
        assert set(shown.ids) == {rule, chat, hit}
        reinforce_shown(mem, list(shown), None)
        assert all(mem.get(m).access_count == 1 for m in (rule, chat, hit))
        window = {c: v["window"]["recalled"] for c, v in mem.stats()["categories"].items()}
        assert (window["fact"], window["small_talk"], window["instruction"]) == (1, 0, 0)
