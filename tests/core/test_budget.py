"""Token counting and packing recalled memories into a token budget."""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oblivion_core import InvalidInputError, OblivionError, TiktokenCounter, TokenizerError
from oblivion_core.budget import (
    bullet,
    check_budget,
    count_tokens,
    pack,
    render,
    resolve_token_counter,
)
from oblivion_core.testing import word_count

costs_st = st.lists(st.integers(0, 200), max_size=60)
budgets = st.none() | st.integers(0, 2000)
limits = st.none() | st.integers(0, 60)


@given(costs=costs_st, budget=budgets, limit=limits)
def test_pack_never_exceeds_the_budget(
    costs: list[int], budget: int | None, limit: int | None
) -> None:
    """The chosen items' costs sum to at most the budget."""
    chosen = pack(costs, budget, limit)
    if budget is not None:
        assert sum(costs[i] for i in chosen) <= budget


@given(costs=costs_st, budget=budgets, limit=limits)
def test_pack_keeps_order_and_respects_the_limit(
    costs: list[int], budget: int | None, limit: int | None
) -> None:
    """Chosen indices are ascending, unique, in range and at most `limit` of them."""
    chosen = pack(costs, budget, limit)
    assert chosen == sorted(set(chosen))
    assert all(0 <= i < len(costs) for i in chosen)
    if limit is not None:
        assert len(chosen) <= limit


@given(costs=costs_st, budget=budgets, limit=limits)
def test_pack_is_greedy_best_first(costs: list[int], budget: int | None, limit: int | None) -> None:
    """An item is skipped only if it did not fit the budget left at its turn, or the
    limit was already reached."""
    chosen = set(pack(costs, budget, limit))
    used = 0
    taken = 0
    for i, cost in enumerate(costs):
        if limit is not None and taken >= limit:
            assert i not in chosen
            continue
        fits = budget is None or used + cost <= budget
        assert (i in chosen) == fits
        if fits:
            used += cost
            taken += 1


@pytest.mark.parametrize(
    ("costs", "budget", "limit", "expected"),
    [
        ([5, 5, 5], 10, None, [0, 1]),
        ([8, 5, 2], 10, None, [0, 2]),  # a big item is skipped, a smaller later one fits
        ([3, 3, 3], None, 2, [0, 1]),
        ([3, 3, 3], 0, None, []),
        ([0, 0], 0, None, [0, 1]),
        ([], 10, 5, []),
    ],
)
def test_pack_table(
    costs: list[int], budget: int | None, limit: int | None, expected: list[int]
) -> None:
    """Worked examples of greedy packing."""
    assert pack(costs, budget, limit) == expected


words = st.text(alphabet="abcdefgh ", min_size=1, max_size=40)


@given(
    texts=st.lists(words, max_size=20),
    budget=st.integers(0, 200),
    header=st.sampled_from(["", "Memories:"]),
)
def test_render_counted_as_a_whole_fits_the_budget(
    texts: list[str], budget: int, header: str
) -> None:
    """The rendered block, header and bullets included, never exceeds the budget."""
    text, shown = render(texts, counter=word_count, budget=budget, header=header)
    assert word_count(text) <= budget
    assert shown == sorted(set(shown)) and all(0 <= i < len(texts) for i in shown)
    if not shown:
        assert text == ""


@given(texts=st.lists(words, min_size=1, max_size=20), budget=st.integers(0, 200))
def test_render_skips_only_the_lines_that_do_not_fit(texts: list[str], budget: int) -> None:
    """render() keeps the texts in rank order and leaves out exactly those that would
    not fit beside the ones kept before them: a long one does not push out the shorter
    ones after it (as pack() does)."""
    text, shown = render(texts, counter=len, budget=budget)
    assert text == "\n".join(f"- {texts[i]}" for i in shown)
    for i in range(len(texts)):
        if i not in shown:
            before = [texts[j] for j in shown if j < i]
            assert len("\n".join(f"- {t}" for t in [*before, texts[i]])) > budget


@pytest.mark.parametrize(("lines", "budget"), [(800, None), (800, 10**9), (800, 2_000)])
def test_render_counts_the_block_a_few_times_not_once_per_line(
    lines: int, budget: int | None
) -> None:
    """Each line was tried by counting the whole block with it: O(lines²) tokens
    counted, 6.4 s for 800 memories with tiktoken. Runs of lines that fit are now tried
    at once, so a block most lines fit is counted O(log lines) times per line skipped."""
    texts = [f"memory {i}: the user said item {i} matters" for i in range(lines)]
    calls: list[str] = []

    def counted(text: str) -> int:
        calls.append(text)
        return word_count(text)

    text, shown = render(texts, counter=counted, budget=budget)
    skipped = lines - len(shown)
    assert len(calls) <= 2 * math.ceil(math.log2(lines)) + 2 * skipped + 2
    assert budget is None or word_count(text) <= budget
    assert (skipped > 0) == (budget == 2_000)


def test_render_keeps_the_short_lines_after_one_too_long() -> None:
    """The best text rendered over the budget: it alone is left out."""
    long_one = "step " * 40
    text, shown = render([long_one, "my name is Dee", "I like tea"], counter=word_count, budget=12)
    assert (text, shown) == ("- my name is Dee\n- I like tea", [1, 2])


def test_render_without_budget_keeps_everything() -> None:
    """With no budget every text is rendered, under the header."""
    text, shown = render(["a", "b"], counter=word_count, header="Known:")
    assert (text, shown) == ("Known:\n- a\n- b", [0, 1])


@pytest.mark.parametrize("budget", [None, 0, 1, 100, 5.0])
def test_check_budget_accepts_whole_numbers(budget: Any) -> None:
    """None and whole numbers >= 0 are valid budgets."""
    out = check_budget(budget)
    assert out == (None if budget is None else int(budget))


@pytest.mark.parametrize(
    "budget", [-1, 10.5, math.nan, math.inf, "10", True, [10], Fraction(10**400, 3)]
)
def test_check_budget_rejects_everything_else(budget: Any) -> None:
    """Negative, fractional, non-finite and non-numeric budgets raise InvalidInputError."""
    with pytest.raises(InvalidInputError, match="token_budget"):
        check_budget(budget)


def test_resolve_token_counter() -> None:
    """A callable is used as-is, None means tiktoken, anything else is rejected."""
    assert resolve_token_counter(word_count) is word_count
    assert isinstance(resolve_token_counter(None), TiktokenCounter)
    with pytest.raises(InvalidInputError, match="token_counter"):
        resolve_token_counter("cl100k_base")  # type: ignore[arg-type]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("text", "tokens"),
    [("hello world", 2), ("", 0), ("<|endoftext|>", 7)],
)
def test_tiktoken_counter_counts_cl100k_tokens(text: str, tokens: int) -> None:
    """The default counter is cl100k_base; special-token text is counted as plain text."""
    assert TiktokenCounter()(text) == tokens


def _offline(*args: Any, **kwargs: Any) -> Any:
    """``tiktoken.get_encoding`` on a machine that cannot download the encoding."""
    import requests

    raise requests.ConnectionError("Failed to resolve 'openaipublic.blob.core.windows.net'")


def test_tiktoken_counter_that_cannot_load_its_encoding_is_an_outage(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An encoding tiktoken cannot download is a TokenizerError (an OSError, not a
    ValueError) naming the encoding and the fixes; the next call tries again."""
    import tiktoken

    load = tiktoken.get_encoding
    monkeypatch.setattr(tiktoken, "get_encoding", _offline)
    counter = TiktokenCounter()
    with pytest.raises(TokenizerError) as err:
        counter("hello world")
    assert isinstance(err.value, OSError)
    assert not isinstance(err.value, ValueError)
    for advice in ("'cl100k_base'", "network access", "TIKTOKEN_CACHE_DIR"):
        assert advice in str(err.value)
    # count_tokens passes it on: it is not the caller's token_counter that is wrong
    with pytest.raises(TokenizerError):
        count_tokens(counter, "hello world")
    monkeypatch.setattr(tiktoken, "get_encoding", load)
    assert counter("hello world") == 2


def test_tiktoken_counter_with_an_unknown_encoding_names_the_setting() -> None:
    """An encoding name tiktoken does not know (OBLIVION_TOKEN_ENCODING misspelt) is a
    TokenizerError telling which setting to change, before any download."""
    with pytest.raises(TokenizerError, match="OBLIVION_TOKEN_ENCODING") as err:
        TiktokenCounter("cl100k_bas")("hello")
    assert "'cl100k_base'" in str(err.value)  # the known names are listed


def test_count_tokens_passes_oblivion_errors_on() -> None:
    """A counter raising an OblivionError keeps it; any other failure is the counter's."""

    def failing(text: str) -> int:
        raise TokenizerError("the encoding is down")

    with pytest.raises(TokenizerError, match="the encoding is down"):
        count_tokens(failing, "hello")
    with pytest.raises(InvalidInputError, match="token_counter"):
        count_tokens(lambda text: 1 // 0, "hello")
    assert issubclass(TokenizerError, OblivionError)


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_count_tokens_refuses_a_counter_returning_a_bool(value: Any) -> None:
    """A bool is no token count: it was taken as 1 (or 0) through the fractional
    branch, which rounds numbers up."""
    with pytest.raises(InvalidInputError, match="token counter returned"):
        count_tokens(lambda text: value, "hello")


@pytest.mark.parametrize("budget", [-5, math.nan, 2.5, True, "10"])
def test_render_refuses_a_budget_recall_would_refuse(budget: Any) -> None:
    """``render`` (and ``RecallResult.render``) gave "" for -5, NaN or 2.5, took True
    as 1 and raised a bare TypeError for "10": the error names the budget now."""
    with pytest.raises(InvalidInputError, match="token_budget"):
        render(["I like tea"], counter=word_count, budget=budget)


def test_render_checks_what_its_counter_returns() -> None:
    """A counter that raises, returns None or a fraction is read as ``count_tokens``
    reads it: an error naming the token counter, or the count rounded up."""
    with pytest.raises(InvalidInputError, match="token_counter"):
        render(["I like tea"], counter=lambda text: 1 // 0, budget=10)
    with pytest.raises(InvalidInputError, match="token counter returned None"):
        render(["I like tea"], counter=lambda text: None, budget=10)  # type: ignore[arg-type,return-value]
    quarter = lambda text: len(text) / 4  # noqa: E731 - 12 characters: 3.0 tokens
    assert render(["I like tea"], counter=quarter, budget=3) == ("- I like tea", [0])
    assert render(["I like tea."], counter=quarter, budget=3) == ("", [])  # 3.25: 4


class _Reads:
    """An iterable of costs that records how far it was read."""

    def __init__(self, costs: list[int]) -> None:
        self.costs = costs
        self.read = 0

    def __iter__(self) -> Iterator[int]:
        for cost in self.costs:
            self.read += 1
            yield cost


@given(costs=costs_st, budget=budgets, limit=limits)
def test_pack_reads_costs_only_as_far_as_it_must(
    costs: list[int], budget: int | None, limit: int | None
) -> None:
    """Given a lazy iterable and a lower bound on every cost, pack chooses what it
    chooses from the whole list, and stops reading at the limit-th chosen item or once
    nothing more can fit."""
    floor = min(costs, default=0)
    reads = _Reads(costs)
    chosen = pack(reads, budget, limit, min_cost=floor)
    assert chosen == pack(costs, budget, limit)
    if limit is not None and len(chosen) == limit:
        assert reads.read == (chosen[-1] + 1 if chosen else 0)
    if budget is not None and reads.read < len(costs) and (limit is None or len(chosen) < limit):
        used = sum(costs[i] for i in chosen)
        assert budget - used < floor  # nothing after the last read could have fit


@given(st.text())
def test_a_text_of_any_lines_is_one_bullet(text: str) -> None:
    """Only "\\n" was indented: a "\\r", U+2028 or a form feed in a memory started a line
    a prompt shows as another memory's bullet."""
    lines = bullet(text).splitlines()
    assert lines[0].startswith("- ")
    assert all(line.startswith("  ") for line in lines[1:])
    assert "".join(line[2:] for line in lines) == "".join(text.splitlines())
