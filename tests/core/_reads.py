"""Counting the contents queries a StateDB makes (tests of the contents cache)."""

from __future__ import annotations

from typing import Any

from oblivion_core.state import StateDB


def count_reads(db: StateDB) -> list[list[str]]:
    """The ids of each query for texts and metadata ``db`` makes from now on."""
    reads: list[list[str]] = []
    by_ids = db._by_ids

    def counted(cols: str, namespace: str, ids: list[str], table: str = "memories") -> list[Any]:
        if cols.startswith("id, text"):
            reads.append(list(ids))
        return by_ids(cols, namespace, ids, table)

    db._by_ids = counted  # type: ignore[method-assign]
    return reads
