"""The recall boost for what an adapter showed.

An adapter that renders recalled memories into a prompt recalls with ``feedback=False``
(the recall only reads) and then boosts the memories its block actually lists: a line
left out for the budget, or a memory repeating a message still on screen, gets nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oblivion_core.errors import UnknownMemoryError, UnknownNamespaceError
from oblivion_core.recall import RecalledItem

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion


def reinforce_shown(
    oblivion: Oblivion, items: Sequence[RecalledItem], namespace: str | None
) -> None:
    """Give ``items``, recalled with ``feedback=False`` and then shown, the boost that
    recall's feedback would have given them: ``Oblivion.reinforce`` with each item's
    relevance (recall boosts by the same relevance, and counts the boost as a recall).

    A memory forgotten since the recall (by another thread) is skipped; the others are
    still boosted.
    """
    relevance = {it.id: min(max(float(it.relevance), 0.0), 1.0) for it in items}
    if not relevance:
        return
    try:
        oblivion.reinforce(
            list(relevance), relevances=list(relevance.values()), namespace=namespace
        )
    except (UnknownMemoryError, UnknownNamespaceError):
        for memory_id, rel in relevance.items():
            try:
                oblivion.reinforce([memory_id], relevances=[rel], namespace=namespace)
            except (UnknownMemoryError, UnknownNamespaceError):
                continue
