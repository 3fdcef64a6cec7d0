"""A recall widened past memories the caller will not show.

The chat-memory adapters leave out memories repeating what the model sees already (a
turn still on screen, or in the thread): those must not take the places of others.
:func:`recall_besides` asks again, for as many more memories (their tokens on top of the
budget), until ``k`` others come back or nothing more does.
"""

from __future__ import annotations

from collections.abc import Callable

from oblivion_core.recall import RecallResult

#: Times a recall is asked again at most (each time for as many more as it repeated).
WIDEN_TIMES = 4


def recall_besides(
    read: Callable[[int | None, int], RecallResult],
    budget: int | None,
    k: int,
    per_item: int,
    hidden: Callable[[str], bool],
) -> RecallResult:
    """``read(token_budget, k)``, asked again while what it returns holds memories whose
    text is ``hidden`` and fewer than ``k`` others: for ``k`` plus as many more, with
    their tokens (and ``per_item`` each) on top of ``budget`` (``None``: no budget), up to
    :data:`WIDEN_TIMES` times. Returns the last result, hidden memories included (the
    caller leaves them out)."""
    want, extra, before = k, 0, -1
    for _ in range(WIDEN_TIMES + 1):
        result = read(None if budget is None else budget + extra, want)
        repeats = [it for it in result.items if hidden(it.text)]
        got = len(result.items)
        if not repeats or got - len(repeats) >= k or got <= before:
            break  # none to replace, k others, or no more to be had
        before = got
        extra = sum(it.tokens + per_item for it in repeats)
        want = k + len(repeats)
    return result
