"""Lexical retrieval (BM25 over SQLite FTS5): safe query building and namespace isolation."""

from __future__ import annotations

import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from oblivion_core.lexical import LexicalIndex, match_query


def _index() -> tuple[sqlite3.Connection, LexicalIndex]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    return conn, LexicalIndex(conn)


@given(query=st.text(max_size=200))
def test_any_user_text_is_a_safe_query(query: str) -> None:
    """No user text, FTS5 operators and quotes included, makes a lexical search fail."""
    conn, lex = _index()
    lex.add(conn, "ns", [1, 2], ['he said "NEAR" AND (OR) NOT *', "plain words here"])
    seqs, scores = lex.search("ns", query, 10)
    assert len(seqs) == len(scores) <= 2
    assert all(s > 0 for s in scores)


def test_match_query_quotes_content_words_only() -> None:
    """The MATCH expression is an OR of quoted content words; no content words -> None."""
    assert match_query('zebra AND "quokka"') == '"quokka" OR "zebra"'
    assert match_query("the of and") is None


def test_namespaces_have_separate_indexes() -> None:
    """A word stored in one namespace is not found in another."""
    conn, lex = _index()
    lex.add(conn, "a", [1], ["platypus habitat"])
    lex.add(conn, "b", [2], ["kangaroo habitat"])
    assert lex.search("a", "platypus", 5)[0] == [1]
    assert lex.search("b", "platypus", 5)[0] == []


def test_replace_and_delete() -> None:
    """Re-indexed text replaces the old words; deleted rows are no longer found."""
    conn, lex = _index()
    lex.add(conn, "ns", [7], ["old wording"])
    lex.replace(conn, "ns", 7, "new phrasing")
    assert lex.search("ns", "wording", 5)[0] == []
    assert lex.search("ns", "phrasing", 5)[0] == [7]
    lex.delete(conn, "ns", [7])
    assert lex.search("ns", "phrasing", 5)[0] == []


def test_better_matches_score_higher() -> None:
    """A document matching more query words ranks above one matching fewer (porter stems)."""
    conn, lex = _index()
    lex.add(conn, "ns", [1, 2, 3], ["red apples", "red apples and green pears", "blue sky"])
    seqs, _ = lex.search("ns", "green pear apple", 5)
    assert seqs[0] == 2
    assert 3 not in seqs
