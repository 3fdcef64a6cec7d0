"""Lists built over many turns: which memories make up a list's current state.

A shopping list grows and shrinks over a day ("add oat milk to the shopping list", "we're
out of rice", "we don't need chickpeas any more"). Each addition is a memory; a removal
supersedes the addition it undoes (see :mod:`~oblivion_core.supersession`). A question
about the list ("what do I still need to buy?") rarely shares words or meaning with the
items themselves, so similarity alone does not find them: recall asks :class:`ListIndex`
for the additions that are still current, gives them the best candidate's relevance and
ranks them first.

:func:`list_question` decides whether a query asks for a list, and which one: "what do I
(still) need to buy/get/pack", "what's on my (shopping) list", "my packing list", "the
shopping". The index is kept in memory per namespace, built from the stored texts the
first time a namespace is asked such a question and updated on every write after that.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Literal

from oblivion_core.supersession import parse

_QUESTION = re.compile(
    r"\b(?:need to (?:buy|get|pick up|pack|grab)|still need|have to (?:buy|get|pack)|"
    r"(?:on|in|from|of)\s+(?:my|the|our)\s+(?:[\w\-]+\s+)?list|"
    r"(?:my|the|our)\s+(?:shopping|grocery|groceries|packing|to-?do)(?:\s+list)?|"
    r"shopping list|what (?:else )?(?:should|do|must) (?:i|we) (?:buy|get|pack))\b",
    re.I,
)


def list_question(query: str) -> str | Literal[False] | None:
    """``False`` if ``query`` does not ask for a list; else the list's name
    (``"shopping"``, ``"packing"``) or ``None`` when it does not say which."""
    if not _QUESTION.search(query):
        return False
    lower = query.lower()
    if "pack" in lower:
        return "packing"
    if any(w in lower for w in ("shop", "buy", "grocer")):
        return "shopping"
    return None


class ListIndex:
    """Memories that add an item to a list, by list name (``None``: not said)."""

    def __init__(self) -> None:
        self._items: dict[str | None, dict[str, None]] = {}

    def note(self, ids: Iterable[str], texts: Iterable[str]) -> None:
        """Record the list additions among these memories (in write order)."""
        for mid, text in zip(ids, texts, strict=True):
            statement = parse(text)
            if statement.op == "add":
                self._items.setdefault(statement.list_name, {})[mid] = None

    def discard(self, ids: Iterable[str]) -> None:
        """Forget deleted memories."""
        for items in self._items.values():
            for mid in ids:
                items.pop(mid, None)

    def additions(self, name: str | None) -> Iterator[str]:
        """Ids of additions to list ``name`` (an unnamed list matches any, and an
        addition that names no list belongs to every list), oldest first."""
        for list_name, items in self._items.items():
            if name is None or list_name in (None, name):
                yield from items
