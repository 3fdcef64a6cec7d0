"""Bad input fails loudly with a specific exception saying what to change, and nothing
already stored is lost or changed."""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oblivion_core import (
    EmbeddingError,
    InvalidInputError,
    ManualClock,
    Oblivion,
    Policy,
    PolicyError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StorePathError,
    TextTooLongError,
    UnknownMemoryError,
    UnknownNamespaceError,
    VectorStore,
)
from oblivion_core.testing import HashEmbedder, memory, word_count

Call = Callable[[Oblivion], Any]


class SwitchableEmbedder(HashEmbedder):
    """A HashEmbedder that can be told to misbehave."""

    def __init__(self) -> None:
        super().__init__()
        self.mode = "ok"

    def _broken(self, n: int) -> Any:
        if self.mode == "nan":
            out = np.ones((n, self.dim), dtype=np.float32)
            out[:, 0] = np.nan
            return out
        if self.mode == "inf":
            return np.full((n, self.dim), np.inf, dtype=np.float32)
        if self.mode == "dim":
            return np.ones((n, self.dim // 2), dtype=np.float32)
        if self.mode == "zero":
            return np.zeros((n, self.dim), dtype=np.float32)
        if self.mode == "rows":
            return np.ones((n + 1, self.dim), dtype=np.float32)
        if self.mode == "raise":
            raise TimeoutError("embedding service timed out")
        return None

    def embed_documents(self, texts: list[str]) -> Any:
        broken = self._broken(len(texts))
        return broken if broken is not None else super().embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        broken = self._broken(1)
        return broken[0] if broken is not None else super().embed_query(text)


@pytest.fixture
def embedder() -> SwitchableEmbedder:
    """An embedder the test can switch into a failure mode."""
    return SwitchableEmbedder()


@pytest.fixture
def stored(embedder: SwitchableEmbedder) -> Iterator[Oblivion]:
    """An engine that already holds memories in two namespaces, one of them archived."""
    clock = ManualClock()
    mem = memory(clock=clock, embedder=embedder)
    mem.remember("Always answer in British English", id="rule", metadata={"src": "settings"})
    mem.remember("ok cool", id="chat", category="small_talk", importance=0.0)
    mem.remember("alice likes tea", id="tea", namespace="alice")
    clock.advance(5 * 86_400)
    mem.maintain()
    mem.recall("British English")
    yield mem
    names = mem.namespaces()
    mem.close()
    for ns in names:
        mem.store.drop(ns)


def _check(
    stored: Oblivion, snapshot: Any, call: Call, error: type[Exception], mentions: str
) -> None:
    before = snapshot(stored)
    with pytest.raises(error) as err:
        call(stored)
    assert mentions in str(err.value), str(err.value)
    assert snapshot(stored) == before


NOT_JSON = {"when": object()}

BAD_CALLS: list[Any] = [
    # ---- texts
    # one text is named "text", a batch's by its place in the list
    ("empty text", lambda m: m.remember(""), InvalidInputError, "text is empty"),
    ("whitespace text", lambda m: m.remember(" \n\t "), InvalidInputError, "text is empty"),
    ("int text", lambda m: m.remember(42), InvalidInputError, "text must be a string"),
    ("None text", lambda m: m.remember(None), InvalidInputError, "text must be a string"),
    ("bytes text", lambda m: m.remember(b"hello"), InvalidInputError, "text must be a string"),
    ("NUL in text", lambda m: m.remember("a\x00b"), InvalidInputError, "NUL"),
    ("text too long", lambda m: m.remember("x" * 32_001), TextTooLongError, "max_text_chars"),
    (
        "empty text in a batch",
        lambda m: m.remember_many(["valid text", " "]),
        InvalidInputError,
        "texts[1] is empty",
    ),
    ("texts is a str", lambda m: m.remember_many("abc"), InvalidInputError, "list of strings"),
    (
        "ragged batch",
        lambda m: m.remember_many(["a b", "c d"], categories=["fact"]),
        InvalidInputError,
        "one entry per text",
    ),
    # ---- numbers in [0, 1]
    *[
        (
            f"importance={v!r}",
            lambda m, v=v: m.remember("valid text", importance=v),
            InvalidInputError,
            "importance",
        )
        for v in (math.nan, math.inf, -math.inf, -0.1, 1.5, True, "0.5")
    ],
    *[
        (
            f"confidence={v!r}",
            lambda m, v=v: m.remember("valid text", confidence=v),
            InvalidInputError,
            "confidence",
        )
        for v in (math.nan, math.inf, -0.1, 1.01, False, None)
    ],
    # ---- categories, ids, metadata
    (
        "empty category",
        lambda m: m.remember("valid text", category=""),
        InvalidInputError,
        "category",
    ),
    ("int category", lambda m: m.remember("valid text", category=3), InvalidInputError, "category"),
    (
        "duplicate id",
        lambda m: m.remember("another", id="rule"),
        InvalidInputError,
        "already exists",
    ),
    (
        "duplicate ids in one batch",
        lambda m: m.remember_many(["a b", "c d"], ids=["x", "x"]),
        InvalidInputError,
        "unique",
    ),
    ("empty id", lambda m: m.remember("valid text", id=""), InvalidInputError, "ids must be"),
    ("int id", lambda m: m.remember("valid text", id=7), InvalidInputError, "ids must be"),
    (
        "metadata str",
        lambda m: m.remember("valid text", metadata="x"),
        InvalidInputError,
        "must be a dict",
    ),
    (
        "metadata list",
        lambda m: m.remember("valid text", metadata=[("a", 1)]),
        InvalidInputError,
        "must be a dict",
    ),
    (
        "metadata not JSON",
        lambda m: m.remember("valid text", metadata=NOT_JSON),
        InvalidInputError,
        "JSON",
    ),
    (
        "metadata NaN",
        lambda m: m.remember("valid text", metadata={"score": math.nan}),
        InvalidInputError,
        "NaN",
    ),
    (
        "nested metadata inf",
        lambda m: m.remember("valid text", metadata={"a": {"b": [math.inf]}}),
        InvalidInputError,
        "NaN",
    ),
    # ---- namespaces
    (
        "empty namespace",
        lambda m: m.remember("valid text", namespace=""),
        InvalidInputError,
        "namespace",
    ),
    (
        "unknown namespace",
        lambda m: m.recall("tea", namespace="bob"),
        UnknownNamespaceError,
        "'alice'",
    ),
    # ---- recall arguments
    ("empty query", lambda m: m.recall("  "), InvalidInputError, "query"),
    ("None query", lambda m: m.recall(None), InvalidInputError, "query"),
    *[
        (
            f"budget={b!r}",
            lambda m, b=b: m.recall("tea", token_budget=b),
            InvalidInputError,
            "token_budget",
        )
        for b in (-1, 10.5, math.nan, math.inf, "100", True)
    ],
    *[
        (f"k={k!r}", lambda m, k=k: m.recall("tea", k=k), InvalidInputError, "k must be")
        for k in (0, -3, 2.0, True, "5")
    ],
    ("deep='yes'", lambda m: m.recall("tea", deep="yes"), InvalidInputError, "deep"),
    # ---- ids that do not exist
    *[
        (f"unknown id: {name}", call, UnknownMemoryError, "no memory 'ghost'")
        for name, call in [
            ("get", lambda m: m.get("ghost")),
            ("forget", lambda m: m.forget("ghost")),
            ("invalidate", lambda m: m.invalidate("ghost")),
            ("confirm", lambda m: m.confirm("ghost")),
            ("edit", lambda m: m.edit("ghost", "new text")),
            ("mark_used", lambda m: m.mark_used(["rule", "ghost"])),
            ("rerank", lambda m: m.rerank("q", [("ghost", 0.5)])),
        ]
    ],
    ("id of another namespace", lambda m: m.get("tea"), UnknownMemoryError, "no memory 'tea'"),
    ("mark_used(int)", lambda m: m.mark_used(5), InvalidInputError, "list of strings"),
    ("mark_used([None])", lambda m: m.mark_used([None]), InvalidInputError, "ids must be"),
    ("get(int)", lambda m: m.get(5), InvalidInputError, "strings"),
    ("edit empty text", lambda m: m.edit("rule", ""), InvalidInputError, "non-empty"),
    ("edit int text", lambda m: m.edit("rule", 5), InvalidInputError, "must be a string"),
    (
        "edit text too long",
        lambda m: m.edit("rule", "x" * 32_001),
        TextTooLongError,
        "max_text_chars",
    ),
    ("edit bad metadata", lambda m: m.edit("rule", metadata="x"), InvalidInputError, "dict"),
    ("rerank bad pair", lambda m: m.rerank("q", ["rule"]), InvalidInputError, "pairs"),
    (
        "rerank NaN relevance",
        lambda m: m.rerank("q", [("rule", math.nan)]),
        InvalidInputError,
        "not finite",
    ),
    # ---- policy at run time
    ("unknown template", lambda m: m.set_policy("aggressive"), PolicyError, "balanced"),
    ("policy of wrong type", lambda m: m.set_policy(42), PolicyError, "Policy or a template"),
    # set_policy(None) switched to "balanced" (the constructor's default)
    ("policy None", lambda m: m.set_policy(None), PolicyError, "got None"),
    (
        "policy None of a namespace",
        lambda m: m.set_policy(None, namespace="other"),
        PolicyError,
        "got None",
    ),
    # an edit() of nothing was journaled (and committed durably) as an edit
    ("edit of nothing", lambda m: m.edit("rule"), InvalidInputError, "changes nothing"),
]


@pytest.mark.parametrize(
    ("call", "error", "mentions"),
    [pytest.param(c, e, s, id=name) for name, c, e, s in BAD_CALLS],
)
def test_bad_input_is_rejected_and_nothing_changes(
    stored: Oblivion, snapshot: Any, call: Call, error: type[Exception], mentions: str
) -> None:
    """Each bad argument raises its specific error naming what to change; the store is
    untouched."""
    _check(stored, snapshot, call, error, mentions)


@pytest.mark.parametrize(
    ("mode", "mentions"),
    [
        ("nan", "NaN"),
        ("inf", "NaN or infinite"),
        ("dim", "128-d vectors but this store holds 256-d"),
        ("zero", "all-zero"),
        ("rows", "for 1 text"),
        ("raise", "embedding service timed out"),
    ],
)
def test_broken_embedder_stores_nothing(
    stored: Oblivion, embedder: SwitchableEmbedder, snapshot: Any, mode: str, mentions: str
) -> None:
    """An embedder returning NaN, the wrong dimension or failing raises EmbeddingError on
    write and query, and nothing is stored or boosted."""
    embedder.mode = mode
    _check(stored, snapshot, lambda m: m.remember("brand new memory"), EmbeddingError, mentions)
    _check(stored, snapshot, lambda m: m.edit("rule", "changed text"), EmbeddingError, mentions)
    if mode != "rows":
        _check(stored, snapshot, lambda m: m.recall("British English"), EmbeddingError, mentions)
    embedder.mode = "ok"
    assert stored.remember("brand new memory").text == "brand new memory"


@pytest.mark.parametrize(
    ("changes", "mentions"),
    [
        ({"archive_low": 0.5, "archive_high": 0.3}, "archive_low < archive_high"),
        ({"archive_low": 0.3, "archive_high": 0.3}, "archive_low < archive_high"),
    ],
)
def test_thresholds_out_of_order(changes: dict[str, float], mentions: str) -> None:
    """A policy whose archive thresholds are out of order cannot be built."""
    with pytest.raises(PolicyError, match=mentions):
        Policy(**changes)


@pytest.mark.parametrize(
    ("kwargs", "error", "mentions"),
    [
        ({"policy": "nope"}, PolicyError, "unknown policy template"),
        ({"policy": 3}, PolicyError, "Policy or a template"),
        ({"clock": object()}, InvalidInputError, "now()"),
        ({"embedder": 42}, InvalidInputError, "embedder must"),
        ({"token_counter": "cl100k"}, InvalidInputError, "token_counter"),
        ({"namespace": ""}, InvalidInputError, "namespace"),
        # these raised TypeError/ValueError/UnicodeEncodeError, made a store in the
        # current directory (""), or failed on first use with an AttributeError
        ({"path": 5}, InvalidInputError, "path must be the store's directory"),
        ({"path": b"/tmp/x"}, InvalidInputError, "got bytes"),
        ({"path": ""}, InvalidInputError, "path is empty"),
        ({"path": "  "}, InvalidInputError, "path is empty"),
        ({"path": "/tmp/a\x00b"}, InvalidInputError, "NUL"),
        ({"path": "/tmp/\ud800"}, InvalidInputError, "cannot name a directory"),
        ({"importance_scorer": 5}, InvalidInputError, "importance_scorer must be"),
        ({"summarizer": "short"}, InvalidInputError, "summarizer must be"),
        ({"supersession_judge": object()}, InvalidInputError, "supersession_judge must be"),
        ({"vector_store": "x"}, InvalidInputError, "vector_store must be a VectorStore"),
    ],
)
def test_bad_constructor_arguments(
    kwargs: dict[str, Any], error: type[Exception], mentions: str
) -> None:
    """Bad arguments to Oblivion() raise at construction, naming the argument."""
    kwargs = {"path": None, "embedder": HashEmbedder(), "token_counter": word_count, **kwargs}
    with pytest.raises(error, match=re.escape(mentions)):
        Oblivion(**kwargs)


@pytest.mark.parametrize(
    ("path", "mentions"),
    [
        ("", "path is empty"),
        ("   ", "path is empty"),
        (5, "got int"),
        (None, "got NoneType"),
        (b"/tmp/x", "got bytes"),
        ("/tmp/a\x00b", "NUL"),
    ],
)
def test_bad_paths_of_an_embedded_vector_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: Any, mentions: str
) -> None:
    """VectorStore.embedded took them unchecked: "" made a Chroma store in the current
    directory, "   " a folder named with spaces, others raised a raw TypeError or a
    "restore it from a backup"."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InvalidInputError, match=re.escape(mentions)):
        VectorStore.embedded(path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("lexical_weight", [0.0, 0.3])
def test_text_longer_than_the_embedding_window_is_accepted(
    fresh: Any, windowed_embedder: HashEmbedder, lexical_weight: float
) -> None:
    """A text far longer than the model window is stored whole and recall finds it by words
    at its end (through its chunked vector alone, and with lexical search on)."""
    filler = " ".join(hashlib.md5(str(i).encode()).hexdigest()[:8] for i in range(600))
    text = filler + " zebra quokka platypus"
    policy = Policy().replace(lexical_weight=lexical_weight)
    with fresh(embedder=windowed_embedder, policy=policy) as mem:
        mem.remember_many(["the cat sleeps on the sofa", "rain is expected on Friday"])
        rec = mem.remember(text, id="long")
        assert mem.get("long").text == text
        assert rec.text == text
        result = mem.recall("zebra quokka platypus", k=1)
        assert result.ids == ["long"]
        assert result[0].relevance > 0


# ---------------------------------------------------------------- store paths and files


def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _open(path: Path) -> Oblivion:
    return Oblivion(path, clock=ManualClock(), embedder=HashEmbedder(), token_counter=word_count)


@pytest.mark.integration
def test_store_path_under_a_regular_file(tmp_path: Path) -> None:
    """A store path that cannot be created (a file is in the way) raises StorePathError."""
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory")
    with pytest.raises(StorePathError, match="pass a path you can write to"):
        _open(blocker / "store")
    assert blocker.read_text() == "not a directory"


@pytest.mark.integration
def test_store_path_that_is_a_file(tmp_path: Path) -> None:
    """A store path that is an existing file raises StorePathError and leaves it alone."""
    blocker = tmp_path / "file.txt"
    blocker.write_text("keep me")
    with pytest.raises(StorePathError, match="pass a path") as err:
        _open(blocker)
    assert str(blocker) in str(err.value)
    assert blocker.read_text() == "keep me"


@pytest.mark.integration
def test_a_chroma_folder_that_is_a_file_says_what_to_do(tmp_path: Path) -> None:
    """The bare StoreError with Chroma's own words; now StorePathError saying what to
    change, and the activation database is not touched."""
    with _open(tmp_path) as mem:
        mem.remember("keep me")
    shutil.rmtree(tmp_path / "chroma")
    (tmp_path / "chroma").write_text("not a folder")
    digest = _hash(tmp_path / "oblivion.sqlite3")
    with pytest.raises(StorePathError, match="is a file; move it aside"):
        _open(tmp_path)
    assert _hash(tmp_path / "oblivion.sqlite3") == digest
    (tmp_path / "chroma").unlink()  # moved aside: the memory is put back from SQLite
    with _open(tmp_path) as mem:
        assert [r.text for r in mem.records()] == ["keep me"]
        mem.remember("and me")  # (before the namespace's first write through Chroma)
        assert mem.store.count(mem.default_namespace) == 2


@pytest.mark.integration
def test_corrupt_database_is_reported_and_left_untouched(tmp_path: Path) -> None:
    """Garbage in oblivion.sqlite3 raises StoreCorruptError and the file bytes are unchanged."""
    db = tmp_path / "oblivion.sqlite3"
    db.write_bytes(b"this is not sqlite " * 200)
    digest = _hash(db)
    with pytest.raises(
        StoreCorruptError, match=r"restore it from a backup.*move it .* aside.*oblivion import"
    ):
        _open(tmp_path)
    assert _hash(db) == digest
    with pytest.raises(StoreCorruptError):  # the failed open did not leave the store locked
        _open(tmp_path)


@pytest.mark.integration
def test_foreign_sqlite_database_is_reported_and_left_untouched(tmp_path: Path) -> None:
    """A valid SQLite file that is not an Oblivion database raises StoreCorruptError on
    open and is not modified."""
    db = tmp_path / "oblivion.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE memories (x INTEGER)")
    conn.execute("INSERT INTO memories VALUES (1)")
    conn.commit()
    conn.close()
    digest = _hash(db)
    try:
        with pytest.raises(StoreCorruptError):
            mem = _open(tmp_path)
            try:
                mem.remember("hello there")
            finally:
                mem.close()
    finally:
        assert _hash(db) == digest


@pytest.mark.integration
def test_newer_schema_is_refused(tmp_path: Path) -> None:
    """A store written by a newer Oblivion raises StoreError asking to upgrade."""
    _open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / "oblivion.sqlite3")
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="upgrade"):
        _open(tmp_path)


@pytest.mark.integration
def test_store_open_twice_is_locked_until_closed(tmp_path: Path) -> None:
    """A second instance on the same path raises StoreLockedError; after close() it opens
    and sees everything."""
    first = _open(tmp_path)
    first.remember("written by the first instance", id="one")
    with pytest.raises(StoreLockedError, match="already open"):
        _open(tmp_path)
    assert first.get("one").text == "written by the first instance"
    first.close()
    second = _open(tmp_path)
    try:
        assert second.get("one").text == "written by the first instance"
    finally:
        second.close()


# ---------------------------------------------------------------- user callables' output


def _counter(bad: Any) -> Callable[[str], Any]:
    """Word count, except for texts that say "bad"."""

    def count(text: str) -> Any:
        if "bad" not in text:
            return len(text.split())
        if isinstance(bad, Exception):
            raise bad
        return bad

    return count


@pytest.mark.parametrize(
    "bad",
    [
        2**63,
        -1,
        math.nan,
        math.inf,
        "five",
        None,
        RuntimeError("counter down"),
        10**400,
        Fraction(10**400, 3),
    ],
    ids=["2**63", "negative", "nan", "inf", "str", "None", "raises", "huge", "huge-fraction"],
)
def test_a_bad_token_count_stores_nothing(tmp_path: Path, bad: Any) -> None:
    """A token counter returning no usable count (or raising) fails the write with an
    InvalidInputError naming the token counter, and nothing is stored, live or after a
    reopen (a count past int64 used to leave a row in memory only: counted, unreadable,
    its id taken)."""
    make = lambda: Oblivion(  # noqa: E731
        tmp_path, clock=ManualClock(), embedder=HashEmbedder(), token_counter=_counter(bad)
    )
    with make() as mem:
        mem.remember("first memory about cats", id="a")
        with pytest.raises(InvalidInputError, match="token counter"):
            mem.remember("a bad document", id="p")
        with pytest.raises(InvalidInputError, match="token counter"):
            mem.remember_many(["fine words", "bad words"], ids=["q", "r"])
        assert mem.count() == 1 == mem.stats()["memories"]
        assert [r.id for r in mem.records()] == ["a"]
        with pytest.raises(UnknownMemoryError):
            mem.get("p")
        assert mem.remember("a good document", id="p").id == "p"
    with make() as mem:
        assert sorted(r.id for r in mem.records()) == ["a", "p"]


def test_a_bad_token_count_at_recall_says_so(tmp_path: Path) -> None:
    """Counts not cached (a reopened store) are taken when recall packs: a counter that
    fails then raises InvalidInputError, and the memories are unchanged."""
    with _open(tmp_path) as mem:
        mem.remember("a bad habit of mine", id="a")
    with Oblivion(
        tmp_path, clock=ManualClock(), embedder=HashEmbedder(), token_counter=_counter(-3)
    ) as mem:
        with pytest.raises(InvalidInputError, match="returned -3"):
            mem.recall("habit")
        assert mem.get("a").text == "a bad habit of mine"


def test_a_fractional_token_count_is_rounded_up(fresh: Any) -> None:
    """A counter returning floats (len / 4) is read rounded up, so a budget holds."""
    with fresh(token_counter=lambda t: len(t) / 4) as mem:
        mem.remember("abcdefghij")  # 2.5 -> 3 tokens
        result = mem.recall("abcdefghij", token_budget=100)
        assert result[0].tokens == 3


# ---------------------------------------------------------------- numbers, keys, ids


HUGE = 10**400  # an int beyond float's range


@pytest.mark.parametrize(
    ("call", "mentions"),
    [
        (lambda m: m.remember("x", importance=HUGE), "importance"),
        (lambda m: m.remember("x", confidence=HUGE), "confidence"),
        (lambda m: m.link("a", "b", weight=HUGE), "link weight"),
        (lambda m: m.rerank("q", [("a", HUGE)]), "relevance of 'a'"),
        (lambda m: m.rerank("q", [("a", 1.5)]), r"\[-1, 1\]"),
        (lambda m: m.reinforce(["a"], relevances=[HUGE]), "relevance"),
        (lambda m: m.prune_journal(HUGE), "older_than"),
        (lambda m: m.prune_journal(1, kinds=1), "kinds"),  # was a raw TypeError
        (lambda m: m.recall("q", token_budget=-(10**400)), "token_budget"),
    ],
    ids=[
        "importance",
        "confidence",
        "link",
        "rerank-huge",
        "rerank-range",
        "reinforce",
        "prune",
        "prune-kinds",
        "budget",
    ],
)
def test_numbers_out_of_range_say_which(mem: Oblivion, call: Any, mentions: str) -> None:
    """An int too big for a float, or a relevance outside [-1, 1], is an InvalidInputError
    naming the argument (they were a raw OverflowError, or accepted: a rerank relevance of
    1e6 became the item's score), and nothing changes."""
    mem.remember_many(["alpha note", "beta note"], ids=["a", "b"])
    before = [(r.id, r.activation, r.text) for r in mem.records()]
    with pytest.raises(InvalidInputError, match=mentions):
        call(mem)
    assert [(r.id, r.activation, r.text) for r in mem.records()] == before


def test_a_huge_history_length_is_the_whole_history(mem: Oblivion) -> None:
    """history(last=2**70) was SQLite's raw OverflowError; beyond what SQLite counts it
    is every entry."""
    mem.remember("alpha note", id="a")
    mem.recall("alpha")
    assert mem.history("a", last=2**70) == mem.history("a")
    assert len(mem.history("a")) == 2


def test_a_huge_token_budget_is_no_limit(mem: Oblivion) -> None:
    """A whole number too big for a float is still a budget (it used to overflow)."""
    mem.remember("alpha note", id="a")
    assert mem.recall("alpha", token_budget=HUGE).ids == ["a"]


@pytest.mark.parametrize("bad", [5, b"a", ["a"], None.__class__])
def test_history_checks_the_id(mem: Oblivion, bad: Any) -> None:
    """history() takes a string id: anything else is an InvalidInputError (an int or
    bytes used to return [], a list blamed SQLite)."""
    mem.remember("alpha note", id="a")
    with pytest.raises(InvalidInputError, match="ids must be non-empty strings"):
        mem.history(bad)
    assert [e.kind for e in mem.history("a")] == ["remember"]


@pytest.mark.parametrize(
    "metadata",
    [{1: "a", "1": "b"}, {"outer": {None: 2}}, {"rows": [{True: 3}]}],
    ids=["int", "nested-None", "in-a-list"],
)
def test_metadata_keys_must_be_strings(mem: Oblivion, metadata: Any) -> None:
    """A non-string metadata key, at any depth, is refused: JSON turned 1 and "1" into
    one key and silently kept one of the values."""
    with pytest.raises(InvalidInputError, match="keys must be strings"):
        mem.remember("alpha note", metadata=metadata)
    with pytest.raises(InvalidInputError, match="keys must be strings"):
        mem.remember_many(["alpha note"], metadatas=[metadata])
    assert mem.count() == 0


def test_deeply_nested_metadata_is_refused(mem: Oblivion) -> None:
    """Metadata nested thousands of levels deep is an InvalidInputError, not a
    RecursionError."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(InvalidInputError, match="nested more than 100 levels"):
        mem.remember("alpha note", metadata=deep)
    assert mem.count() == 0


@pytest.mark.parametrize("category", [None, 5, "", "  "])
def test_an_inferred_category_is_checked(fresh: Any, category: Any) -> None:
    """A custom importance scorer whose categorize() returns no category name fails the
    write and says so (None used to be stored as the category "None")."""

    class Scorer:
        def score(self, text: str) -> float:
            return 0.5

        def categorize(self, text: str) -> Any:
            return category

    with fresh(importance_scorer=Scorer()) as mem:
        with pytest.raises(InvalidInputError, match=r"categorize\(\) returned"):
            mem.remember("some text")
        assert mem.count() == 0
        assert mem.remember("some text", category="fact").category == "fact"


@pytest.mark.parametrize("failing", ["categorize", "score"])
def test_a_failing_importance_scorer_is_an_oblivion_error(fresh: Any, failing: str) -> None:
    """A custom scorer that raises (a scoring service down) fails the write with an
    InvalidInputError naming it, not its own RuntimeError (which LlamaIndex's sync
    Memory would report as "nested async"); nothing is stored, and a write that names
    what the scorer would infer goes through."""

    class Scorer:
        def score(self, text: str) -> float:
            if failing == "score":
                raise RuntimeError("scoring service down")
            return 0.5

        def categorize(self, text: str) -> str:
            if failing == "categorize":
                raise RuntimeError("scoring service down")
            return "fact"

    with fresh(importance_scorer=Scorer()) as mem:
        with pytest.raises(InvalidInputError, match=rf"{failing}\(\) failed.*service down"):
            mem.remember("some text")
        with pytest.raises(InvalidInputError, match="scoring service down"):
            mem.remember_many(["a text", "another"])
        assert mem.count() == 0
        kept = mem.remember("some text", category="fact", importance=0.4)
        assert (kept.category, kept.importance) == ("fact", 0.4)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("damage", "then", "mentions"),
    [
        ("UPDATE meta SET value='{not json' WHERE key='policy'", None, "meta value 'policy'"),
        ("UPDATE meta SET value='\"x\"' WHERE key='schema_version'", None, "schema_version"),
        ("UPDATE memories SET tier=9 WHERE id='a'", "records", "tier 9"),
        ("UPDATE memories SET metadata='{oops' WHERE id='a'", "records", "metadata of memory 'a'"),
        ("UPDATE memories SET metadata='{oops' WHERE id='a'", "recall", "metadata of memory 'a'"),
        ("UPDATE events SET detail='{oops'", "history", "journal entry"),
        # these escaped as ValueError, TypeError, AttributeError
        ("UPDATE meta SET value='\"abc\"' WHERE key='dim'", None, "meta value 'dim'"),
        ("UPDATE memories SET a_ref='abc' WHERE id='a'", "records", "not a number"),
        (
            "UPDATE vectors SET vector=x'0000' WHERE id='a'",
            "records",
            "stored vector of memory 'a'",
        ),
        ("UPDATE vectors SET vector=x'00000000' WHERE id='a'", "records", "4 bytes, not"),
        ("UPDATE meta SET value='[1]' WHERE key LIKE 'usage:%'", "records", "meta value 'usage:"),
        ("UPDATE meta SET value='{\"x\": 1}' WHERE key LIKE 'clock:%'", "records", "'clock:"),
    ],
    ids=[
        "policy",
        "schema",
        "tier",
        "metadata-records",
        "metadata-recall",
        "journal",
        "dim",
        "a_ref",
        "vector-bytes",
        "vector-dim",
        "usage",
        "clock",
    ],
)
def test_damaged_values_in_the_database_are_reported(
    tmp_path: Path, damage: str, then: str | None, mentions: str
) -> None:
    """A structurally valid database with a damaged value (bit rot, a half-applied manual
    fix) raises StoreCorruptError naming the value, on open or when it is read (they were
    raw JSONDecodeError / ValueError); a store refused on open is not modified."""
    with _open(tmp_path) as mem:
        mem.remember_many(["alpha fact about cats", "beta fact"], ids=["a", "b"])
    conn = sqlite3.connect(tmp_path / "oblivion.sqlite3")
    conn.execute(damage)
    conn.commit()
    conn.close()
    digest = _hash(tmp_path / "oblivion.sqlite3")
    for _ in range(2):  # a failed open leaves the store unlocked
        with pytest.raises(StoreCorruptError, match=re.escape(mentions)):
            mem = _open(tmp_path)
            try:
                if then == "records":
                    mem.records()
                elif then == "recall":
                    mem.recall("cats", deep=True)
                elif then == "history":
                    mem.history("a")
            finally:
                mem.close()
    if then is None:  # refused on open: not touched
        assert _hash(tmp_path / "oblivion.sqlite3") == digest


@pytest.mark.parametrize(
    ("damage", "policy", "mentions"),
    [
        ("UPDATE namespaces SET policy='{oops' WHERE namespace='alice'", None, "'alice'"),
        ("UPDATE namespaces SET policy='{\"cap\": 5}' WHERE namespace='alice'", None, "'alice'"),
        ("UPDATE meta SET value='{\"cap\": 5}' WHERE key='policy'", "balanced", "'policy'"),
        ("UPDATE meta SET value='\"balanced\"' WHERE key='policy'", "balanced", "'policy'"),
        ("UPDATE meta SET value='\"x\"' WHERE key='writes:default'", None, "'writes:default'"),
        ("INSERT OR REPLACE INTO meta VALUES('uncompressed:default', '5')", None, "uncompressed"),
        ("UPDATE links SET weight='abc'", None, "link 'a' - 'b'"),
    ],
    ids=[
        "ns-policy-json",
        "ns-policy-value",
        "policy-value",
        "policy-type",
        "writes",
        "cold",
        "link",
    ],
)
def test_more_damaged_values_are_reported_not_blamed_on_the_caller(
    tmp_path: Path, damage: str, policy: str | None, mentions: str
) -> None:
    """A namespace's saved policy, the store's policy read beside the one passed, the
    maintain counter, the uncompressed list and link weights escaped as raw
    JSONDecodeError / ValueError / TypeError / KeyError, or as a PolicyError blaming a
    valid policy the caller passed."""
    with _open(tmp_path) as mem:
        mem.remember_many(["alpha fact about cats", "beta fact"], ids=["a", "b"])
        mem.link("a", "b", 0.9)
        mem.remember("alice likes tea", namespace="alice")
        mem.set_policy("support-desk", namespace="alice")
    conn = sqlite3.connect(tmp_path / "oblivion.sqlite3")
    conn.execute(damage)
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorruptError, match=re.escape(mentions)):
        mem = Oblivion(
            tmp_path,
            clock=ManualClock(),
            embedder=HashEmbedder(),
            token_counter=word_count,
            policy=policy,
        )
        try:
            mem.records()
            mem.stats()  # (the links are read on their first use)
        finally:
            mem.close()


@pytest.mark.parametrize(
    ("kwargs", "mentions"),
    [
        ({"importances": [0.5, 0.5, "high"]}, r"importances\[2\]"),
        ({"confidences": [1.0, math.nan, 1.0]}, r"confidences\[1\]"),
        ({"categories": ["fact", "", "fact"]}, r"categories\[1\]"),
        ({"metadatas": [{}, {}, {"x": math.nan}]}, r"metadatas\[2\]"),
    ],
)
def test_a_batch_error_names_the_element(mem: Oblivion, kwargs: Any, mentions: str) -> None:
    """remember_many says which element of a parallel list is wrong, as it does for
    texts; nothing is stored."""
    with pytest.raises(InvalidInputError, match=mentions):
        mem.remember_many(["one", "two", "three"], **kwargs)
    assert mem.count() == 0


def test_ids_as_bytes_are_refused(mem: Oblivion) -> None:
    """mark_used(b"a") (bytes iterate as ints) says it wants strings, not "got 97"."""
    mem.remember("alpha", id="a")
    with pytest.raises(InvalidInputError, match="ids must be a list of strings"):
        mem.mark_used(b"a")  # type: ignore[arg-type]


def test_a_clock_that_returns_nan_is_named(tmp_path: Path) -> None:
    """A clock whose now() returns NaN is an InvalidInputError naming the clock (it was
    a StoreError blaming SQLite's NOT NULL constraint); nothing is stored."""

    class Broken:
        def now(self) -> float:
            return math.nan

    with Oblivion(
        tmp_path, clock=Broken(), embedder=HashEmbedder(), token_counter=word_count
    ) as mem:
        with pytest.raises(InvalidInputError, match="clock's now"):
            mem.remember("alpha")
        assert mem.count() == 0


def test_namespaces_after_close_says_closed(tmp_path: Path) -> None:
    """namespaces() on a closed instance raises like every other call."""
    mem = _open(tmp_path)
    mem.close()
    with pytest.raises(InvalidInputError, match="closed"):
        mem.namespaces()


@pytest.mark.integration
@pytest.mark.parametrize("how", ["deleted", "truncated"])
def test_a_lost_activation_database_is_not_started_over(tmp_path: Path, how: str) -> None:
    """oblivion.sqlite3 deleted or truncated to 0 bytes while chroma/ still holds the
    memories: opening raises StoreCorruptError (it opened as an empty store, and new
    writes went on beside vectors nothing knew of), leaves no new database behind, and
    opens again once the backup is back."""
    with _open(tmp_path) as mem:
        mem.remember_many(["alpha fact about cats", "beta fact"], ids=["a", "b"])
    db = tmp_path / "oblivion.sqlite3"
    backup = tmp_path / "backup.sqlite3"
    shutil.copyfile(db, backup)
    db.unlink() if how == "deleted" else db.write_bytes(b"")
    for _ in range(2):  # the failed open did not create a database that would pass next time
        with pytest.raises(StoreCorruptError, match="holds 2 of this store's memories"):
            _open(tmp_path)
        # and left the user's file as it found it (a truncated one was deleted)
        assert db.exists() == (how == "truncated") and (not db.exists() or not db.stat().st_size)
    shutil.copyfile(backup, db)
    with _open(tmp_path) as mem:
        assert sorted(r.id for r in mem.records()) == ["a", "b"]
