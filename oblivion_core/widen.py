"""A recall widened past memories the caller will not show.

The chat-memory adapters leave out memories repeating what the model sees already (a
turn still on screen, or in the thread): those must not take the places of others.
:func:`recall_besides` asks again, for as many more memories (their tokens on top of the
budget), until ``k`` others come back or nothing more does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from oblivion_core.recall import RecalledItem, RecallResult

#: Times a recall is asked again at most (each time for as many more as it repeated).
WIDEN_TIMES = 4


def besides(items: Sequence[RecalledItem], hidden: Callable[[str], bool]) -> list[RecalledItem]:
    """``items`` without those whose text is ``hidden``, and without the turns shown only
    as context of one of those (``why["context_for"]``: the turn written just before or
    after a hit; the model sees the hit itself already). A context turn the query
    matched on its own (``why["matched"]``) stays: it is an answer, not only context."""
    gone = {it.id for it in items if hidden(it.text)}
    if not gone:
        return list(items)
    return [
        it
        for it in items
        if it.id not in gone and (it.why.get("context_for") not in gone or it.why.get("matched"))
    ]


def recall_besides(
    read: Callable[[int | None, int], RecallResult],
    budget: int | None,
    k: int,
    per_item: int,
    hidden: Callable[[str], bool],
) -> RecallResult:
    """``read(token_budget, k)``, asked again while what it returns holds memories the
    caller leaves out (:func:`besides`: their text is ``hidden``, or they are context
    of one that is) and fewer than ``k`` others: for ``k`` plus as many more, with their
    tokens (and ``per_item`` each) on top of ``budget`` (``None``: no budget), up to
    :data:`WIDEN_TIMES` times. Returns the result holding the most others (the first
    of them), those left out included (the caller leaves them out with
    :func:`besides`)."""
    want, extra = k, 0
    best: tuple[int, RecallResult] | None = None
    seen: list[str] | None = None
    for _ in range(WIDEN_TIMES + 1):
        result = read(None if budget is None else budget + extra, want)
        kept = {it.id for it in besides(result.items, hidden)}
        if best is None or len(kept) > best[0]:
            best = (len(kept), result)
        ids = [it.id for it in result.items]
        repeats = [it for it in result.items if it.id not in kept]
        if not repeats or len(kept) >= k or ids == seen:
            break  # none to replace, k others, or no more to be had
        seen = ids
        # a wider recall may bring other context along: room for all it left out
        extra = sum(it.tokens + per_item for it in repeats)
        want = k + len(repeats)
    assert best is not None  # the loop reads at least once
    return best[1]
