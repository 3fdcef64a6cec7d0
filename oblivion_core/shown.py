"""The recall boost for what an adapter showed.

An adapter that renders recalled memories into a prompt recalls with ``feedback=False``
(the recall only reads) and then boosts the memories its block actually lists: a line
left out for the budget, or a memory repeating a message still on screen, gets nothing.
An adapter that shows the same block again (a tool loop) checks first that what it
shows is still current.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from oblivion_core.errors import UnknownMemoryError, UnknownNamespaceError
from oblivion_core.recall import RecalledItem
from oblivion_core.records import Tier

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion


def reinforce_shown(
    oblivion: Oblivion, items: Sequence[RecalledItem], namespace: str | None
) -> None:
    """Give ``items``, recalled with ``feedback=False`` and then shown, the boost that
    recall's feedback would have given them: ``Oblivion.reinforce`` with each item's
    relevance (recall boosts by the same relevance, and counts the boost as a recall
    when the query asked for the item).

    A memory forgotten since the recall (by another thread) is skipped; the others are
    still boosted.
    """
    for asked in (True, False):
        relevance = {
            it.id: min(max(float(it.relevance), 0.0), 1.0) for it in items if _asked(it) is asked
        }
        if not relevance:
            continue
        try:
            oblivion.reinforce(
                list(relevance),
                relevances=list(relevance.values()),
                namespace=namespace,
                asked=asked,
            )
        except (UnknownMemoryError, UnknownNamespaceError):
            for memory_id, rel in relevance.items():
                try:
                    oblivion.reinforce(
                        [memory_id], relevances=[rel], namespace=namespace, asked=asked
                    )
                except (UnknownMemoryError, UnknownNamespaceError):
                    continue


def _asked(item: RecalledItem) -> bool:
    """Whether the recall's query asked for ``item``, rather than showing it beside what
    it asked for (a hit's neighbouring turn: ``why["context_for"]``; a standing memory,
    shown whatever the query): only those count as recalls for adaptation, as in
    recall's own feedback."""
    signals = item.why.get("relevance_signals") or {}
    return not item.why.get("context_for") and not signals.get("standing")


def still_current(
    oblivion: Oblivion, shown: Iterable[tuple[str, str]], namespace: str | None
) -> bool:
    """Whether every memory of a block shown before, ``(id, text)`` as shown, is still
    what a recall would show: in the engine, not invalidated, superseded or compressed
    away, its text unchanged. An adapter reusing a block within a turn recalls again
    when it is not (a tool forgot or corrected a memory it shows).

    Raises what :meth:`Oblivion.get` raises for a store that cannot be read.
    """
    for memory_id, text in shown:
        try:
            record = oblivion.get(memory_id, namespace=namespace)
        except (UnknownMemoryError, UnknownNamespaceError):
            return False
        if (
            record.invalidated
            or record.superseded_by is not None
            or record.tier is Tier.COLD
            or record.text != text
        ):
            return False
    return True
