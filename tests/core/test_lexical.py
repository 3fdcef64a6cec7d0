"""Lexical retrieval (in-process BM25): FTS5's scores, safe queries, namespace isolation."""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oblivion_core import doc_set, lexical
from oblivion_core.doc_set import DocSet
from oblivion_core.lexical import LexicalIndex, query_terms, tokens
from oblivion_core.porter import stem


def _index(docs: dict[str, list[tuple[int, str]]] | None = None) -> LexicalIndex:
    stored = docs or {}
    return LexicalIndex(lambda ns: stored.get(ns, []))


def _built(namespace: str, rows: list[tuple[int, str]]) -> LexicalIndex:
    lex = _index({namespace: rows})
    lex.search(namespace, "anything", 1)  # builds the index from the loader
    return lex


@given(query=st.text(max_size=200))
def test_any_user_text_is_a_safe_query(query: str) -> None:
    """No user text, FTS5-like operators and quotes included, makes a lexical search fail."""
    lex = _built("ns", [(1, 'he said "NEAR" AND (OR) NOT *'), (2, "plain words here")])
    seqs, scores = lex.search("ns", query, 10)
    assert len(seqs) == len(scores) <= 2
    assert all(s > 0 for s in scores)


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("What's my name?", ["name"]),
        ("What did Caroline say it's like?", ["carolin", "like", "sai"]),
        ("I've been wondering where we're going", ["go", "wonder"]),
        ("Why didn't Melanie come?", ["come", "melani"]),
        ("Don't forget that I'm vegan", ["forget", "vegan"]),
        ("Don's car and Grace's dog", ["car", "dog", "don", "grace"]),
        ("O'Brien's rock'n'roll", ["brien", "rock", "roll"]),
    ],
)
def test_a_contraction_searches_none_of_its_pieces(query: str, terms: list[str]) -> None:
    """ "what's", "we're", "I've" and "didn't" searched "what", "we", "re", "ve" and
    "didn": every memory holding the same word or contraction matched; a possessive
    keeps its word ("Don's" is Don)."""
    assert sorted(query_terms(query)) == terms


def test_query_terms_are_stemmed_content_words() -> None:
    """Stop words are dropped; the rest are folded and stemmed like documents."""
    assert sorted(query_terms('Zebras AND "quokka"')) == ["quokka", "zebra"]
    assert query_terms("the of and") == []
    assert tokens("Zoë's CAFÉ, running_late") == ["zoe", "s", "cafe", "run", "late"]


def test_porter_reference_examples() -> None:
    """Examples from Porter's paper and reference vocabulary."""
    cases = {
        "caresses": "caress",
        "ponies": "poni",
        "agreed": "agre",
        "hopping": "hop",
        "filing": "file",
        "happy": "happi",
        "relational": "relat",
        "generalizations": "gener",
        "adjustment": "adjust",
        "controll": "control",
        "42nd": "42nd",
        "été": "été",
    }
    assert {w: stem(w) for w in cases} == cases


def test_namespaces_have_separate_indexes() -> None:
    """A word stored in one namespace is not found in another."""
    lex = _index()
    for ns in ("a", "b"):
        lex.search(ns, "habitat", 1)
    lex.add("a", [1], ["platypus habitat"])
    lex.add("b", [2], ["kangaroo habitat"])
    assert lex.search("a", "platypus", 5)[0] == [1]
    assert lex.search("b", "platypus", 5)[0] == []


def test_unbuilt_index_reads_the_store_not_the_writes() -> None:
    """Writes before the first search are skipped: the build reads them from the store."""
    stored = {"ns": [(1, "platypus habitat")]}
    lex = _index(stored)
    lex.add("ns", [1], ["platypus habitat"])  # not built yet: ignored, not doubled
    seqs, _ = lex.search("ns", "platypus", 5)
    assert seqs == [1]
    lex.add("ns", [2], ["platypus again"])  # built: indexed
    assert sorted(lex.search("ns", "platypus", 5)[0]) == [1, 2]


def test_replace_and_delete() -> None:
    """Re-indexed text replaces the old words; deleted rows are no longer found."""
    lex = _built("ns", [(7, "old wording")])
    lex.replace("ns", 7, "new phrasing")
    assert lex.search("ns", "wording", 5)[0] == []
    assert lex.search("ns", "phrasing", 5)[0] == [7]
    lex.delete("ns", [7])
    assert lex.search("ns", "phrasing", 5)[0] == []


def test_compaction_keeps_the_live_documents() -> None:
    """After most documents are deleted, the survivors are still found with FTS5's scores."""
    rows = [(s, f"note {s} about {'cats' if s % 3 else 'dogs'}") for s in range(3000)]
    lex = _built("ns", rows)
    lex.delete("ns", [s for s in range(3000) if s % 10])
    seqs, _ = lex.search("ns", "dogs", 1000)
    assert sorted(seqs) == [s for s in range(0, 3000, 10) if s % 3 == 0]
    _assert_matches_fts5(lex, [r for r in rows if r[0] % 10 == 0], ["dogs", "cats note"])


def test_better_matches_score_higher() -> None:
    """A document matching more query words ranks above one matching fewer (porter stems)."""
    lex = _built("ns", [(1, "red apples"), (2, "red apples and green pears"), (3, "blue sky")])
    seqs, _ = lex.search("ns", "green pear apple", 5)
    assert seqs[0] == 2
    assert 3 not in seqs


def _assert_matches_fts5(
    lex: LexicalIndex, rows: list[tuple[int, str]], queries: list[str]
) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.executemany("INSERT INTO t(rowid, text) VALUES(?, ?)", rows)
    for query in queries:
        terms = query_terms(query)
        if not terms:
            continue
        expr = " OR ".join(f'"{t}"' for t in terms)
        want = conn.execute(
            "SELECT rowid, -bm25(t) FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid", (expr,)
        ).fetchall()
        seqs, scores = lex.search("ns", query, len(rows) + 1)
        got = dict(zip(seqs, scores, strict=True))
        assert set(got) == {r for r, _ in want}, query
        for row, score in want:
            assert got[row] == pytest.approx(score, rel=1e-9, abs=1e-9), (query, row)


_WORDS = ["cat", "cats", "running", "runner", "Zoë", "café", "green", "pears", "42", "the", "x"]
_DOC = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8).map(" ".join)
_QUERY = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(_DOC, min_size=1, max_size=30), query=_QUERY)
def test_scores_equal_sqlite_fts5(docs: list[str], query: str) -> None:
    """Same matches and same BM25 scores as SQLite FTS5 with the porter tokenizer."""
    rows = list(enumerate(docs, start=1))
    _assert_matches_fts5(_built("ns", rows), rows, [query])


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(_DOC, min_size=2, max_size=30),
    queries=st.lists(_QUERY, min_size=1, max_size=6),
    k=st.integers(1, 8),
)
def test_searches_in_a_row_equal_searches_on_a_fresh_index(
    docs: list[str], queries: list[str], k: int
) -> None:
    """Scores accumulate in a buffer reused across searches: a search after any others
    (and after a delete) returns what a fresh index returns, top ``k`` by score, each
    document once."""
    rows = list(enumerate(docs, start=1))
    used = _built("ns", rows)
    for q in queries:
        used.search("ns", q, k)
    used.delete("ns", [1])
    left = rows[1:]
    for q in queries:
        got = used.search("ns", q, k)
        fresh = _built("ns", left).search("ns", q, k)
        assert got[0] == fresh[0]
        assert got[1] == pytest.approx(fresh[1], rel=1e-12)
        assert len(set(got[0])) == len(got[0]) <= k
        assert got[1] == sorted(got[1], reverse=True)


@settings(max_examples=80, deadline=None)
@given(
    docs=st.lists(_DOC, min_size=1, max_size=30),
    allowed=st.lists(st.booleans(), min_size=0, max_size=34),
    queries=st.lists(_QUERY, min_size=1, max_size=4),
    k=st.integers(1, 8),
    deleted=st.integers(0, 3),
)
def test_allow_ranks_the_allowed_documents_among_themselves(
    docs: list[str], allowed: list[bool], queries: list[str], k: int, deleted: int
) -> None:
    """``allow`` returns the best ``k`` of the documents in it, with the scores they have
    without it (idf over them all); sequence numbers past its mask are not in it."""
    rows = list(enumerate(docs, start=1))
    lex = _built("ns", rows)
    lex.delete("ns", range(1, deleted + 1))
    allow = DocSet()
    allow.add(np.flatnonzero(allowed).astype(np.int64))
    for q in queries:
        _assert_within(lex, q, k, allow, len(rows))


def _assert_within(lex: LexicalIndex, q: str, k: int, allow: DocSet, n: int) -> None:
    """``lex.search(allow=allow)`` is the unrestricted ranking filtered through ``allow``."""
    every = lex.search("ns", q, n + 1)
    mask = allow.mask
    want = [(s, v) for s, v in zip(*every, strict=True) if s < len(mask) and mask[s]][:k]
    got = lex.search("ns", q, k, allow)
    assert got[0] == [s for s, _ in want], q
    assert got[1] == [v for _, v in want]


_SET_STEP = st.one_of(
    st.tuples(st.just("enter"), st.sets(st.integers(1, 30), max_size=6)),
    st.tuples(st.just("leave"), st.sets(st.integers(1, 30), max_size=6)),
    st.tuples(st.just("add"), _DOC),
    st.tuples(st.just("delete"), st.integers(1, 30)),
    st.tuples(st.just("replace"), st.integers(1, 30), _DOC),
    st.tuples(st.just("new set"), st.sets(st.integers(1, 30), max_size=20)),
)


@settings(max_examples=150, deadline=None)
@given(
    docs=st.lists(_DOC, min_size=1, max_size=25),
    start=st.sets(st.integers(1, 30), max_size=20),
    steps=st.lists(_SET_STEP, min_size=1, max_size=12),
    queries=st.lists(_QUERY, min_size=1, max_size=3),
    k=st.integers(1, 6),
    log_limit=st.sampled_from([2, 4_096]),
    lookups=st.sampled_from([1, 1_024]),
)
def test_allow_follows_the_set_between_searches(
    docs: list[str],
    start: set[int],
    steps: list[tuple[Any, ...]],
    queries: list[str],
    k: int,
    log_limit: int,
    lookups: int,
) -> None:
    """The index's copy of ``allow`` follows the set: after documents enter or leave it
    (also re-entering, or before they are indexed; beyond the set's log, or too many to
    look up one by one), the index changes (adds, deletes, replaced texts) or another set
    takes its place, every search equals the unrestricted ranking filtered through the
    set."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(doc_set, "LOG_LIMIT", log_limit)
        patch.setattr(lexical, "_CHANGED_LOOKUPS", lookups)
        rows = dict(enumerate(docs, start=1))
        lex = _built("ns", list(rows.items()))
        allow = _set(start)
        for step in steps:
            for q in queries:  # the index takes its copy of the set
                _assert_within(lex, q, k, allow, max(rows, default=0))
            if step[0] == "enter":
                allow.add(np.array(sorted(step[1]), dtype=np.int64))
            elif step[0] == "leave":
                allow.discard(np.array(sorted(step[1]), dtype=np.int64))
            elif step[0] == "new set":  # a namespace loaded again: its count from 0
                allow = _set(step[1])
            else:
                _edit(lex, rows, step)
            for q in queries:
                _assert_within(lex, q, k, allow, max(rows, default=0))


def test_allow_follows_the_set_across_a_compaction() -> None:
    """Deleting most documents compacts the index (slots move); a search within the set
    afterwards still returns exactly the set's documents, though the index had already
    taken its copy of the set before."""
    rows = [(s, f"apple note {s}") for s in range(1, 2_101)]
    lex = _built("ns", rows)
    allow = _set(set(range(1_000, 1_200)))
    assert set(lex.search("ns", "apple", 300, allow)[0]) == set(range(1_000, 1_200))
    lex.delete("ns", list(range(1, 1_100)))  # over half: compacted
    got = lex.search("ns", "apple", 300, allow)[0]
    assert set(got) == set(range(1_100, 1_200))
    _assert_within(lex, "apple", 300, allow, 2_100)


def _edit(lex: LexicalIndex, rows: dict[int, str], edit: tuple[Any, ...]) -> None:
    """Apply ``("add", text)``, ``("delete", seq)`` or ``("replace", seq, text)`` to the
    index and to ``rows``, its expected documents."""
    if edit[0] == "add":
        seq = max(rows, default=0) + 1
        rows[seq] = edit[1]
        lex.add("ns", [seq], [edit[1]])
    elif edit[0] == "delete":
        rows.pop(edit[1], None)
        lex.delete("ns", [edit[1]])
    elif edit[1] in rows:
        rows[edit[1]] = edit[2]
        lex.replace("ns", edit[1], edit[2])


def _set(seqs: set[int]) -> DocSet:
    out = DocSet()
    out.add(np.array(sorted(seqs), dtype=np.int64))
    return out


_EDIT = st.one_of(
    st.tuples(st.just("add"), _DOC),
    st.tuples(st.just("delete"), st.integers(1, 40)),
    st.tuples(st.just("replace"), st.integers(1, 40), _DOC),
)


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(_DOC, min_size=1, max_size=20),
    edits=st.lists(_EDIT, min_size=1, max_size=8),
    queries=st.lists(_QUERY, min_size=1, max_size=4),
)
def test_searches_between_edits_equal_a_fresh_index(
    docs: list[str], edits: list[tuple[Any, ...]], queries: list[str]
) -> None:
    """A search keeps each term's BM25 values until the index changes: after every add,
    delete or replace, searches return exactly what a freshly built index returns."""
    rows = dict(enumerate(docs, start=1))
    used = _built("ns", list(rows.items()))
    for edit in edits:
        for q in queries:  # fills the kept values
            used.search("ns", q, 5)
        _edit(used, rows, edit)
        fresh = _built("ns", list(rows.items()))
        for q in queries:
            assert used.search("ns", q, 5) == fresh.search("ns", q, 5), (q, edit)


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(_DOC, min_size=2, max_size=30),
    gone=st.sets(st.integers(1, 30), max_size=10),
    query=_QUERY,
)
def test_scores_with_deleted_documents_equal_sqlite_fts5(
    docs: list[str], gone: set[int], query: str
) -> None:
    """With deleted documents still in the postings (fewer than half: not compacted), the
    search masks them and scores the rest as FTS5 scores the survivors."""
    rows = list(enumerate(docs, start=1))
    lex = _built("ns", rows)
    gone = {s for s in gone if s <= len(rows)}
    lex.delete("ns", sorted(gone))
    left = [r for r in rows if r[0] not in gone]
    if left:
        _assert_matches_fts5(lex, left, [query])


def _postings(lex: LexicalIndex, namespace: str) -> dict[str, list[tuple[int, float, float]]]:
    """Each term's live postings as (seq, tf, dl), in slot order."""
    space = lex._spaces[namespace]
    out: dict[str, list[tuple[int, float, float]]] = {}
    for term, p in space.postings.items():
        live = [
            (int(space.seqs[s]), float(tf), float(dl))
            for s, tf, dl in zip(p.slots[: p.n], p.tf[: p.n], p.dl[: p.n], strict=True)
            if space.lengths[s] > 0
        ]
        if live:
            out[term] = live
    return out


_ANY_DOC = st.one_of(_DOC, st.text(max_size=40), st.just(""), st.just("   "))


@settings(max_examples=80, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.integers(1, 25), _ANY_DOC), min_size=0, max_size=12),
        min_size=1,
        max_size=4,
    ),
    query=_QUERY,
)
def test_a_batch_indexes_as_its_documents_one_at_a_time(
    batches: list[list[tuple[int, str]]], query: str
) -> None:
    """Adding a batch (terms counted for all its documents at once) leaves the postings,
    lengths and scores that adding its documents one by one does, re-added numbers and
    empty texts included."""
    whole, single = _built("ns", [(100, "seed text")]), _built("ns", [(100, "seed text")])
    for batch in batches:
        latest = dict(batch)  # a number given twice in one batch: its last text
        whole.add("ns", list(latest), list(latest.values()))
        for seq, text in latest.items():
            single.add("ns", [seq], [text])
    assert _postings(whole, "ns") == _postings(single, "ns")
    a, b = whole._spaces["ns"], single._spaces["ns"]
    assert a.alive == b.alive
    assert a.total_length == pytest.approx(b.total_length)
    lengths = {
        int(q): float(n)
        for q, n in zip(a.seqs[: a.size], a.lengths[: a.size], strict=True)
        if n > 0
    }
    assert lengths == {
        int(q): float(n)
        for q, n in zip(b.seqs[: b.size], b.lengths[: b.size], strict=True)
        if n > 0
    }
    got = dict(zip(*whole.search("ns", query, 50), strict=True))
    want = dict(zip(*single.search("ns", query, 50), strict=True))
    assert got.keys() == want.keys()
    assert [got[q] for q in want] == pytest.approx(list(want.values()), rel=1e-12)
