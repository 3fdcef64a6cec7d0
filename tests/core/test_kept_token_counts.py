"""Token counts kept in the store: a reopened store packs recalls without counting its
texts again, and never with a count that is not its counter's count of its text."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from oblivion_core import Oblivion
from oblivion_core.budget import TiktokenCounter
from oblivion_core.state import StateDB
from oblivion_core.testing import HashEmbedder

pytestmark = pytest.mark.integration

TEXTS = [
    "The user prefers green tea in the morning",
    "Deploys go out on Thursdays after the standup",
    "The cat is called Miso and hates the vacuum cleaner",
    "Always answer in British English",
]


class Counter:
    """Counts words (or characters) and how often it was asked."""

    def __init__(self, unit: str = "words", *, named: bool = True) -> None:
        self.unit = unit
        self.calls = 0
        if named:
            self.cache_key = f"test:{unit}"

    def count(self, text: str) -> int:
        return len(text.split()) if self.unit == "words" else len(text)

    def __call__(self, text: str) -> int:
        self.calls += 1
        return self.count(text)


def _open(path: Path, counter: Any) -> Oblivion:
    return Oblivion(path, embedder=HashEmbedder(), token_counter=counter)


def _all(mem: Oblivion) -> dict[str, int]:
    """Every memory's tokens as recall packs them (no feedback: nothing changes)."""
    res = mem.recall("tea deploys cat English", k=50, deep=True, feedback=False)
    return {item.text: item.tokens for item in res}


def _column(path: Path) -> dict[str, int | None]:
    conn = sqlite3.connect(path / StateDB.FILE)
    try:
        return dict(conn.execute("SELECT text, tokens FROM memories").fetchall())
    finally:
        conn.close()


def test_a_reopened_store_packs_without_counting_again(tmp_path: Path) -> None:
    words = Counter()
    with _open(tmp_path, words) as mem:
        mem.remember_many(TEXTS)
        mem.remember("Lunch is at noon")
    assert words.calls == len(TEXTS) + 1  # counted once, when written
    again = Counter()
    with _open(tmp_path, again) as mem:
        assert _all(mem) == {t: again.count(t) for t in [*TEXTS, "Lunch is at noon"]}
    assert again.calls == 0


def test_another_counter_counts_again_and_never_reads_the_old_counts(tmp_path: Path) -> None:
    with _open(tmp_path, Counter("words")) as mem:
        mem.remember_many(TEXTS)
    chars = Counter("chars")
    with _open(tmp_path, chars) as mem:
        assert _all(mem) == {t: len(t) for t in TEXTS}
    assert chars.calls == len(TEXTS)
    back = Counter("words")
    with _open(tmp_path, back) as mem:  # the character counts were not taken for words
        assert _all(mem) == {t: len(t.split()) for t in TEXTS}


def test_an_unnamed_counter_keeps_nothing_and_spoils_nothing(tmp_path: Path) -> None:
    """Opened with a counter without ``cache_key`` in between, the store holds no count
    by it: the named counter's counts that are left are still its counts of the texts,
    also of a text edited in between."""
    with _open(tmp_path, Counter("words")) as mem:
        ids = [r.id for r in mem.remember_many(TEXTS)]
    unnamed = Counter("chars", named=False)
    with _open(tmp_path, unnamed) as mem:
        mem.edit(ids[0], "The user now prefers coffee, black, no sugar at all")
        mem.remember("A memory written under the unnamed counter")
        assert _all(mem)["A memory written under the unnamed counter"] == 42
        mem.recall("tea deploys cat English", k=50, deep=True)  # boosts: rows rewritten
    stored = _column(tmp_path)
    assert stored["A memory written under the unnamed counter"] is None
    assert stored["The user now prefers coffee, black, no sugar at all"] is None
    assert all(n is None or n == len(t.split()) for t, n in stored.items()), (
        "a count in the column that is not the named counter's"
    )
    words = Counter("words")
    with _open(tmp_path, words) as mem:
        texts = [*TEXTS[1:], "The user now prefers coffee, black, no sugar at all"]
        texts.append("A memory written under the unnamed counter")
        assert _all(mem) == {t: len(t.split()) for t in texts}


def test_an_edit_is_counted_and_kept(tmp_path: Path) -> None:
    """Also when the edit rewrites the row (it leaves a supersession it was part of)."""
    new_text = "The user switched to rooibos, with a slice of lemon"
    with _open(tmp_path, Counter()) as mem:
        first = mem.remember(TEXTS[0]).id
        older = mem.remember(TEXTS[1]).id
        mem.supersede(older, first)
        mem.edit(first, new_text)
        assert _all(mem) == {new_text: 10, TEXTS[1]: 8}
    assert _column(tmp_path) == {new_text: 10, TEXTS[1]: 8}
    again = Counter()
    with _open(tmp_path, again) as mem:
        assert _all(mem) == {new_text: 10, TEXTS[1]: 8}
    assert again.calls == 0


def test_counts_of_an_older_store_are_taken_once_and_kept(tmp_path: Path) -> None:
    """A store written before counts were kept (the column NULL) counts a text when a
    recall packs it, and keeps the count with the recall's batched updates."""
    with _open(tmp_path, Counter()) as mem:
        mem.remember_many(TEXTS)
    conn = sqlite3.connect(tmp_path / StateDB.FILE)
    conn.execute("UPDATE memories SET tokens=NULL")
    conn.commit()
    conn.close()
    first = Counter()
    with _open(tmp_path, first) as mem:
        mem.recall("tea deploys cat English", k=50, deep=True)  # boosted: rows written
    assert first.calls == len(TEXTS)
    assert _column(tmp_path) == {t: len(t.split()) for t in TEXTS}
    second = Counter()
    with _open(tmp_path, second) as mem:
        assert _all(mem) == {t: len(t.split()) for t in TEXTS}
    assert second.calls == 0


@pytest.mark.parametrize("bad", ["-1", "'eleven'", "1.5", str(2**62)])
def test_a_damaged_count_is_counted_again(tmp_path: Path, bad: str) -> None:
    with _open(tmp_path, Counter()) as mem:
        mem.remember(TEXTS[0])
    conn = sqlite3.connect(tmp_path / StateDB.FILE)
    conn.execute(f"UPDATE memories SET tokens={bad}")
    conn.commit()
    conn.close()
    counter = Counter()
    with _open(tmp_path, counter) as mem:
        assert _all(mem) == {TEXTS[0]: len(TEXTS[0].split())}
    assert counter.calls == 1


def test_the_default_counter_keeps_tiktoken_counts(
    tmp_path: Path, real_embedder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the real stack: the local model, embedded Chroma and tiktoken."""
    with Oblivion(tmp_path, embedder=real_embedder) as mem:
        mem.remember_many(TEXTS)
    counts = {t: TiktokenCounter()(t) for t in TEXTS}
    assert _column(tmp_path) == counts
    calls: list[str] = []
    real_call = TiktokenCounter.__call__

    def spy(self: TiktokenCounter, text: str) -> int:
        calls.append(text)
        return real_call(self, text)

    monkeypatch.setattr(TiktokenCounter, "__call__", spy)
    with Oblivion(tmp_path, embedder=real_embedder) as mem:
        assert _all(mem) == counts
    assert calls == []
