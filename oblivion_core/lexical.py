"""Lexical retrieval: BM25 over SQLite FTS5, next to the activation state.

One FTS5 table per namespace lives in the same SQLite file as the activation state, so
the lexical index is incremental (updated in the same transaction as every write),
persistent, and isolated per namespace (its BM25 statistics are the namespace's own).
Rows are keyed by the memory's global insertion sequence number, so deletes are cheap.

Queries are turned into an OR of quoted content words (stop words dropped, see
:mod:`overlap`), so user text can never be parsed as FTS5 syntax.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence

from oblivion_core.overlap import content_words

#: Content words of a query beyond this are ignored (longest first).
MAX_QUERY_TERMS = 32


def table_name(namespace: str) -> str:
    """The FTS5 table of a namespace."""
    return "fts_" + hashlib.sha1(namespace.encode("utf-8")).hexdigest()[:16]


def match_query(text: str) -> str | None:
    """An FTS5 MATCH expression for free text, or ``None`` if it has no content words."""
    words = sorted(content_words(text), key=lambda w: (-len(w), w))[:MAX_QUERY_TERMS]
    words = [w.replace('"', "") for w in words if w.replace('"', "")]
    if not words:
        return None
    return " OR ".join(f'"{w}"' for w in words)


class LexicalIndex:
    """BM25 search over the memories of each namespace."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._ready: set[str] = set()

    def ensure(self, conn: sqlite3.Connection, namespace: str) -> str:
        """Create the namespace's table if needed; returns its name."""
        name = table_name(namespace)
        if namespace not in self._ready:
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING "
                "fts5(text, tokenize='porter unicode61 remove_diacritics 2')"
            )
            self._ready.add(namespace)
        return name

    def add(
        self,
        conn: sqlite3.Connection,
        namespace: str,
        seqs: Sequence[int],
        texts: Sequence[str],
    ) -> None:
        """Index texts under their sequence numbers."""
        name = self.ensure(conn, namespace)
        conn.executemany(
            f"INSERT INTO {name}(rowid, text) VALUES(?, ?)",
            [(int(s), t) for s, t in zip(seqs, texts, strict=True)],
        )

    def delete(self, conn: sqlite3.Connection, namespace: str, seqs: Sequence[int]) -> None:
        """Remove rows by sequence number."""
        name = self.ensure(conn, namespace)
        conn.executemany(f"DELETE FROM {name} WHERE rowid=?", [(int(s),) for s in seqs])

    def replace(self, conn: sqlite3.Connection, namespace: str, seq: int, text: str) -> None:
        """Re-index one row with new text."""
        self.delete(conn, namespace, [seq])
        self.add(conn, namespace, [seq], [text])

    def drop(self, conn: sqlite3.Connection, namespace: str) -> None:
        """Delete the namespace's table."""
        conn.execute(f"DROP TABLE IF EXISTS {table_name(namespace)}")
        self._ready.discard(namespace)

    def search(self, namespace: str, query: str, k: int) -> tuple[list[int], list[float]]:
        """Top-``k`` sequence numbers by BM25 and their scores (higher is better)."""
        expr = match_query(query)
        if expr is None or k <= 0:
            return [], []
        name = self.ensure(self.conn, namespace)
        rows = self.conn.execute(
            f"SELECT rowid, bm25({name}) FROM {name} WHERE {name} MATCH ? "
            f"ORDER BY bm25({name}) LIMIT ?",
            (expr, k),
        ).fetchall()
        return [int(r[0]) for r in rows], [-float(r[1]) for r in rows]
