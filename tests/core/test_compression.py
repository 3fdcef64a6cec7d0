"""Compression: low-activation archived memories folded into summaries, reversibly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from oblivion_core import (
    InvalidInputError,
    ManualClock,
    Oblivion,
    Policy,
    Tier,
    UnknownMemoryError,
)
from oblivion_core.compression import ExtractiveSummarizer, clusters
from oblivion_core.testing import HashEmbedder, word_count

DAY = 86_400.0
# supersession off: these notes must stay independent whatever the lexical rule thinks
POLICY = Policy().replace(compress_below=0.1, maintain_every=0, adapt=False, supersede=False)
MEETING = [
    "In the budget meeting we agreed the travel budget is frozen.",
    "The budget meeting moved the marketing budget to next quarter.",
    "At the budget meeting Priya asked for a hiring budget review.",
    "The budget meeting ended with a plan to cut the cloud budget.",
]


@given(
    n=st.integers(0, 30),
    similarity=st.floats(-0.5, 0.99),
    window=st.floats(0.0, 10.0),
    min_size=st.integers(2, 5),
    spare=st.none() | st.integers(0, 10),
    seed=st.integers(0, 1000),
)
def test_clusters_are_disjoint_and_big_enough(
    n: int, similarity: float, window: float, min_size: int, spare: int | None, seed: int
) -> None:
    """Every group has at least min_size rows and at most max_size, no row is in two
    groups, and each is in time order, the groups by their first row."""
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 8)).astype(np.float32)
    vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
    times = np.round(rng.uniform(0, 100, size=n), 0)  # ties in time too
    max_size = None if spare is None else 2 * min_size + spare
    groups = clusters(
        vecs, times, similarity=similarity, window=window, min_size=min_size, max_size=max_size
    )
    seen: list[int] = [i for g in groups for i in g]
    assert len(seen) == len(set(seen))
    assert all(min_size <= len(g) <= (max_size or n) for g in groups)
    assert all(g == sorted(g, key=lambda i: (times[i], i)) for g in groups)
    assert groups == sorted(groups, key=lambda g: (times[g[0]], g[0]))


def test_summarizer_keeps_what_the_group_repeats() -> None:
    """The extractive summary is made of the input's own sentences, within max_words."""
    summary = ExtractiveSummarizer(max_words=25).summarize(MEETING)
    assert 0 < len(summary.split()) <= 25
    kept = [t for t in MEETING if t in summary]
    assert kept
    assert summary == " ".join(kept)  # whole sentences, in their original order


@pytest.fixture
def compressed(fresh: Any) -> Any:
    """An engine where four low-activation meeting notes were compressed into one summary."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        rule = mem.remember("Always answer in British English", category="instruction")
        clock.advance(60 * DAY)
        plan = mem.maintain()
        summaries = [r for r in mem.records() if r.category == "summary"]
        yield mem, [r.id for r in recs], summaries, plan, rule.id


def test_maintain_compresses_low_activation_groups(compressed: Any) -> None:
    """maintain() writes one summary and moves the originals to the cold tier."""
    mem, originals, summaries, plan, _ = compressed
    assert sorted(plan.ids("compress")) == sorted(originals)
    assert len(summaries) == 1
    assert summaries[0].metadata["summary_of"] == originals
    assert all(mem.get(m).tier == Tier.COLD for m in originals)
    stats = mem.stats()
    assert (stats["cold"], stats["summaries"], stats["memories"]) == (4, 1, 6)
    counts = [mem.count(category=c) for c in ("summary", "event", "instruction", "recipe")]
    assert counts == [1, 4, 1, 0]
    with pytest.raises(InvalidInputError, match="category"):
        mem.count(category=" ")


def test_cold_originals_are_only_recalled_when_asked(compressed: Any) -> None:
    """Recall finds the summary; the cold originals only with include_cold=True."""
    mem, originals, summaries, _, _ = compressed
    plain = mem.recall("budget meeting marketing", deep=True)
    assert not set(plain.ids) & set(originals)
    assert summaries[0].id in plain.ids
    cold = mem.recall("budget meeting marketing", deep=True, include_cold=True)
    assert set(originals) & set(cold.ids)


def test_expand_returns_the_originals_byte_for_byte(compressed: Any) -> None:
    """expand() returns the originals in their original order, text unchanged."""
    mem, originals, summaries, _, rule = compressed
    back = mem.expand(summaries[0].id)
    assert [r.id for r in back] == originals
    assert [r.text for r in back] == MEETING
    with pytest.raises(InvalidInputError, match="not a summary"):
        mem.expand(rule)


def test_decompress_undoes_the_compression(compressed: Any) -> None:
    """decompress() deletes the summary and returns the originals to the archive."""
    mem, originals, summaries, _, _ = compressed
    back = mem.decompress(summaries[0].id)
    assert [r.tier for r in back] == [Tier.ARCHIVE] * 4
    assert mem.count() == 5
    assert all(r.category != "summary" for r in mem.records())
    assert set(originals) <= set(mem.recall("budget meeting", deep=True, k=10).ids)


def test_decompress_returns_the_originals_whatever_their_rows(compressed: Any) -> None:
    """Deletes move the last row into the hole; decompress() returns each original once,
    by its own id, whatever rows moved before it (it used to read rows taken before
    its own delete: IndexError). Forgetting an original drops its summary now, so the
    arrangement that showed it (an original last, the summary below it) needs a
    summary moved by hand."""
    mem, originals, summaries, _, rule = compressed
    mem.forget(rule)  # the summary (last row) takes its place
    st = mem._spaces["default"].state
    sid = summaries[0].id
    # swap the summary with the first original, as forgetting that original once did
    a, b = st.index[originals[0]], st.index[sid]
    for arr in st.cols.values():
        arr[[a, b]] = arr[[b, a]]
    st.ids[a], st.ids[b] = st.ids[b], st.ids[a]
    st.index[sid], st.index[originals[0]] = a, b
    assert st.ids[-1] == originals[0]
    back = mem.decompress(sid)
    assert [r.id for r in back] == originals
    assert [r.text for r in back] == MEETING
    assert [r.tier for r in back] == [Tier.ARCHIVE] * 4


def test_compression_dry_run_changes_nothing(fresh: Any, snapshot: Any) -> None:
    """A dry run lists the compress steps but writes no summary and moves nothing."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        clock.advance(60 * DAY)
        mem.maintain()  # archive first: compression only takes archived memories
        clock.advance(1.0)
        before = snapshot(mem)
        plan = mem.maintain(dry_run=True)
        assert len(plan.ids("compress")) in (0, 4)
        assert snapshot(mem) == before


def test_compression_is_off_by_default(mem: Oblivion, clock: ManualClock) -> None:
    """With the balanced template nothing is ever compressed."""
    mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
    clock.advance(60 * DAY)
    mem.maintain()
    mem.maintain()
    assert mem.stats()["summaries"] == 0
    assert mem.stats()["cold"] == 0


def test_invalidated_memories_are_never_compressed(fresh: Any) -> None:
    """An invalidated memory stays out of every summary."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        mem.invalidate(recs[0].id)
        clock.advance(60 * DAY)
        mem.maintain()
        assert mem.get(recs[0].id).tier == Tier.ARCHIVE
        for s in (r for r in mem.records() if r.category == "summary"):
            assert recs[0].id not in s.metadata["summary_of"]


# ------------------------------------------------------------------ property: nothing lost
# Any text remember() accepts: no surrogates (not UTF-8) and no NUL (rejected on write).
_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
_SPACE = st.text(st.sampled_from(" \t\n\r\u00a0\u2003\u3000"), max_size=3)
_WORDS = st.sampled_from(["budget", "meeting", "Priya", "naïve", "日本語", "😀", "a.b", "?!", ""])
_TEXT = st.one_of(
    st.text(_CHARS, min_size=1, max_size=40),
    # words with whitespace inside, before and after
    st.lists(st.tuples(_SPACE, _WORDS | st.text(_CHARS, max_size=8)), min_size=1, max_size=12).map(
        lambda parts: "".join(s + w for s, w in parts)
    ),
    # long-ish: a few hundred to a few thousand characters, several sentences
    st.tuples(st.text(_CHARS, min_size=1, max_size=30), st.integers(10, 150)).map(
        lambda t: (t[0] + ". ") * t[1]
    ),
).filter(lambda t: bool(t.strip()))
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(_CHARS, max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(_CHARS, max_size=5), inner),
    max_leaves=6,
)
_KIND = st.tuples(
    st.sampled_from(["event", "small_talk", "task", "fact"]),  # half-lives <= 21 days
    st.floats(0.0, 0.1),  # decay floor (importance / 2) stays below compress_below
)
# (top-level keys a filter can read: not empty, no "$" or "#document")
_KEYS = st.text(_CHARS, min_size=1, max_size=8).filter(
    lambda key: not key.startswith("$") and key != "#document"
)
_META = st.dictionaries(_KEYS, _JSON, max_size=3)


@st.composite
def _sessions(draw: Any) -> list[list[tuple[str, str, float, dict[str, Any]]]]:
    """Batches of memories written together; texts may repeat within and across batches."""
    pool = draw(st.lists(_TEXT, min_size=1, max_size=5))
    text = st.sampled_from(pool) | _TEXT
    # a few metadata dicts, shared: compression groups memories with the same
    meta = st.sampled_from(draw(st.lists(_META, min_size=1, max_size=3)))
    item = st.tuples(text, _KIND, meta).map(lambda x: (x[0], *x[1], x[2]))
    return draw(st.lists(st.lists(item, min_size=2, max_size=6), min_size=1, max_size=5))


def _filtered(meta: dict[str, Any]) -> str:
    """What a ``where`` filter reads of ``meta``: every value but a dict (read as none)."""
    return json.dumps({k: v for k, v in meta.items() if not isinstance(v, dict)}, sort_keys=True)


@settings(max_examples=40, deadline=None)
@given(sessions=_sessions(), supersede=st.booleans(), similarity=st.sampled_from([0.6, 0.95]))
def test_compression_never_loses_text(
    fresh: Any, sessions: Any, supersede: bool, similarity: float
) -> None:
    """Whatever is stored, compression keeps every original: expand() returns each one
    with its text identical byte for byte and its metadata unchanged, decompress() brings
    them all back to the archive, and no id ever disappears from records()."""
    clock = ManualClock()
    policy = POLICY.replace(supersede=supersede, compress_similarity=similarity)
    with fresh(clock=clock, policy=policy) as mem:
        stored: dict[str, tuple[str, dict[str, Any]]] = {}
        batches: list[list[str]] = []
        for batch in sessions:
            recs = mem.remember_many(
                [t for t, *_ in batch],
                categories=[c for _, c, _, _ in batch],
                importances=[i for *_, i, _ in batch],
                metadatas=[m for *_, m in batch],
            )
            batches.append([r.id for r in recs])
            for r, (text, _, _, meta) in zip(recs, batch, strict=True):
                stored[r.id] = (text, meta)
            clock.advance(3_600.0)  # past adjacency_window: only similarity joins batches
        clock.advance(120 * DAY)
        mem.maintain()

        def unchanged(records: list[Any]) -> None:
            for r in records:
                text, meta = stored[r.id]
                assert r.text.encode("utf-8") == text.encode("utf-8")
                assert r.metadata == meta

        summaries = [r for r in mem.records() if r.category == "summary"]
        event(f"summaries: {len(summaries)}")  # --hypothesis-show-statistics
        folded: list[str] = []
        for s in summaries:
            back = mem.expand(s.id)
            assert [r.id for r in back] == s.metadata["summary_of"]
            assert len(back) >= policy.compress_min_cluster
            assert all(r.tier == Tier.COLD for r in back)
            unchanged(back)
            folded += [r.id for r in back]
        assert len(folded) == len(set(folded))  # no original is in two summaries
        if not supersede:  # the memories of one text that a filter reads alike were
            # folded, when enough (superseded ones never are); a batch is no meeting by
            # itself: its unrelated texts may stay apart
            alike: dict[tuple[str, str], list[str]] = {}
            for ids in batches:
                for m in ids:
                    alike.setdefault((stored[m][0], _filtered(stored[m][1])), []).append(m)
            for same in alike.values():
                if len(same) >= policy.compress_min_cluster:
                    assert set(same) <= set(folded)
        for s in summaries:  # each holds memories a filter reads alike, and carries that
            of = s.metadata["summary_of"]
            assert len({_filtered(stored[m][1]) for m in of}) == 1
            carried = {k: v for k, v in s.metadata.items() if k != "summary_of"}
            assert _filtered(carried) == _filtered(stored[of[0]][1])
        originals = [r for r in mem.records() if r.category != "summary"]
        assert sorted(r.id for r in originals) == sorted(stored)
        unchanged(originals)

        for s in summaries:
            back = mem.decompress(s.id)
            assert [r.id for r in back] == s.metadata["summary_of"]
            assert all(r.tier == Tier.ARCHIVE for r in back)
            unchanged(back)
            with pytest.raises(UnknownMemoryError):
                mem.get(s.id)
        after = mem.records()
        assert sorted(r.id for r in after) == sorted(stored)
        assert not any(r.tier == Tier.COLD for r in after)
        unchanged(after)


def test_expand_keeps_write_order_when_activations_differ(fresh: Any) -> None:
    """Memories written in one call (same created_at) expand in the order they were written."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        recs = mem.remember_many(MEETING[:3], categories=["event"] * 3, importances=[0, 0.1, 0])
        clock.advance(120 * DAY)
        mem.maintain()
        (summary,) = [r for r in mem.records() if r.category == "summary"]
        assert [r.id for r in mem.expand(summary.id)] == [r.id for r in recs]


def test_each_compressed_memory_is_journaled_once(compressed: Any) -> None:
    """One "compress" entry per original, naming its summary (there used to be a second
    one, written from the plan before the summary existed)."""
    mem, originals, summaries, _, _ = compressed
    for m in originals:
        entries = [e for e in mem.history(m) if e.kind == "compress"]
        assert [e.detail for e in entries] == [{"summary": summaries[0].id}]


class _Raising:
    def summarize(self, texts: list[str]) -> str:
        raise RuntimeError("the LLM is down")


class _Returning:
    def __init__(self, value: Any) -> None:
        self.value = value

    def summarize(self, texts: list[str]) -> Any:
        return self.value


@pytest.mark.parametrize(
    "summarizer",
    [
        _Raising(),
        _Returning(None),
        _Returning(""),
        _Returning(5),
        # maintain() raised VectorStoreError (blaming the disk) for these
        _Returning("The team met \ud800 on Monday"),
        _Returning("The team met\x00 on Monday"),
    ],
    ids=["raises", "None", "empty", "not-a-str", "lone-surrogate", "NUL"],
)
def test_a_summarizer_that_fails_leaves_the_group_archived(
    fresh: Any, summarizer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """maintain() applies its tier moves and returns its plan; the group it could not
    summarise stays archived, and neither the plan nor the journal says it was
    compressed (a raising summarizer used to fail maintain() after the tier moves were
    committed, and every failure was journaled as a compression)."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY, summarizer=summarizer) as mem:
        recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        mem.remember("Always answer in British English", category="instruction")
        clock.advance(60 * DAY)
        dry = mem.maintain(dry_run=True)
        assert sorted(dry.ids("compress")) == sorted(r.id for r in recs)  # planned
        plan = mem.maintain()
        assert plan.ids("compress") == []
        assert sorted(plan.ids("archive")) == sorted(r.id for r in recs)
        assert all(mem.get(r.id).tier == Tier.ARCHIVE for r in recs)
        assert not [e for r in recs for e in mem.history(r.id) if e.kind == "compress"]
        assert mem.stats()["summaries"] == 0
    if isinstance(summarizer, _Raising) or summarizer.value not in (None, ""):
        assert "the summarizer failed on 4 memories" in caplog.text
    else:  # nothing used to be logged for a summary of no text
        assert "the summarizer returned no text for 4 memories" in caplog.text


def test_an_embedder_failing_on_the_summary_leaves_the_group_archived(
    fresh: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """maintain() raised EmbeddingError after committing its archive moves, without a
    plan, and skipped the rest of its work; now it goes on as for a failed summarizer."""

    class NoSummaries(HashEmbedder):
        def embed_documents(self, texts: list[str]) -> Any:
            if any(t.startswith("SUMMARY") for t in texts):
                raise RuntimeError("the embedding service is down")
            return super().embed_documents(texts)

    clock = ManualClock()
    with fresh(
        clock=clock, policy=POLICY, embedder=NoSummaries(), summarizer=_Returning("SUMMARY x")
    ) as mem:
        recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        mem.remember("Always answer in British English", category="instruction")
        clock.advance(60 * DAY)
        plan = mem.maintain()
        assert plan.ids("compress") == []
        assert sorted(plan.ids("archive")) == sorted(r.id for r in recs)
        assert all(mem.get(r.id).tier == Tier.ARCHIVE for r in recs)
        assert mem.stats()["summaries"] == 0
    assert "the embedder failed on the summary of 4 memories" in caplog.text


def test_forgetting_spares_summaries(fresh: Any) -> None:
    """With forgetting on, a summary born below forget_below stays, its originals stay
    cold: deleting it brought them back to the archive, the next maintain() wrote a new
    summary, and so on, every other call."""
    clock = ManualClock()
    policy = POLICY.replace(forget_enabled=True, forget_below=0.02)
    with fresh(clock=clock, policy=policy) as mem:
        recs = mem.remember_many(MEETING, categories=["small_talk"] * 4, importances=[0.0] * 4)
        mem.remember("Always answer in British English", category="instruction")
        clock.advance(2 * DAY)  # the notes: below compress_below, above forget_below
        assert sorted(mem.maintain().ids("compress")) == sorted(r.id for r in recs)
        summary = [r for r in mem.records() if r.category == "summary"]
        assert len(summary) == 1
        assert summary[0].activation < policy.forget_below
        for _ in range(4):
            clock.advance(DAY)
            plan = mem.maintain()
            assert summary[0].id not in plan.ids("forget")
        assert [r.id for r in mem.records() if r.category == "summary"] == [summary[0].id]
        assert all(mem.get(r.id).tier == Tier.COLD for r in recs)


def test_decompressed_originals_stay_uncompressed(tmp_path: Path) -> None:
    """After decompress(), maintain() leaves the originals as they are, also after a
    reopen (it compressed them again at once, so the undo lasted until the next call); a
    forgotten original leaves the record."""

    def open_() -> Oblivion:
        return Oblivion(
            tmp_path, policy=POLICY, clock=clock, embedder=HashEmbedder(), token_counter=word_count
        )

    clock = ManualClock()
    with open_() as mem:
        recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        mem.remember("Always answer in British English", category="instruction")
        clock.advance(60 * DAY)
        mem.maintain()
        (summary,) = [r for r in mem.records() if r.category == "summary"]
        mem.decompress(summary.id)
        assert mem.maintain().ids("compress") == []
    with open_() as mem:
        clock.advance(DAY)
        assert mem.maintain().ids("compress") == []
        assert all(mem.get(r.id).tier == Tier.ARCHIVE for r in recs)
        mem.forget(recs[0].id)
        assert mem._db.meta("uncompressed:default") == sorted(r.id for r in recs[1:])


def _persisted(tmp_path: Path, clock: ManualClock) -> Any:
    def open_() -> Oblivion:
        return Oblivion(
            tmp_path, policy=POLICY, clock=clock, embedder=HashEmbedder(), token_counter=word_count
        )

    return open_


def _compress_meeting(mem: Oblivion, clock: ManualClock) -> tuple[list[str], str]:
    recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
    mem.remember("Always answer in British English", category="instruction")
    clock.advance(60 * DAY)
    mem.maintain()
    (summary,) = [r for r in mem.records() if r.category == "summary"]
    return [r.id for r in recs], summary.id


def test_forgetting_an_original_drops_its_summary(tmp_path: Path) -> None:
    """forget() of a compressed original deleted it but left its text in the summary:
    recall still returned it word for word, and metadata['summary_of'] named it. The
    summary now goes with it; the other originals are back in the archive (to be
    compressed again without it), live and after a reopen."""
    clock = ManualClock()
    open_ = _persisted(tmp_path, clock)
    with open_() as mem:
        originals, sid = _compress_meeting(mem, clock)
        mem.forget(originals[1])
        assert sid not in {r.id for r in mem.records()}
        assert [e.kind for e in mem.history(sid)][-1] == "forget"
        hits = mem.recall(
            "marketing budget next quarter", deep=True, include_cold=True, feedback=False
        )
        assert all("marketing" not in t for t in hits.texts)
        rest = [originals[0], *originals[2:]]
        live = [(r.id, r.tier) for r in mem.records()]
        assert {m: t for m, t in live if m in rest} == dict.fromkeys(rest, Tier.ARCHIVE)
        assert mem.maintain().ids("compress") == rest  # compressed again, without it
    with open_() as mem:
        (summary,) = [r for r in mem.records() if r.category == "summary"]
        assert summary.metadata["summary_of"] == rest
        assert "marketing" not in summary.text


def test_forget_where_takes_the_summaries_of_what_it_deletes(tmp_path: Path) -> None:
    """forget_where() deletes a compressed original as forget() does: its summary goes
    with it (named after the memories that passed) and the other originals are back in
    the archive, after a reopen too."""
    clock = ManualClock()
    open_ = _persisted(tmp_path, clock)
    with open_() as mem:
        originals, sid = _compress_meeting(mem, clock)
        gone = mem.forget_where(where_document={"$contains": "marketing"})
        assert gone == [originals[1], sid]
        assert [e.kind for e in mem.history(sid)][-1] == "forget"
    with open_() as mem:
        rest = [originals[0], *originals[2:]]
        assert {r.id: r.tier for r in mem.records() if r.id in originals} == dict.fromkeys(
            rest, Tier.ARCHIVE
        )


def test_editing_an_original_drops_its_summary(tmp_path: Path) -> None:
    """A new text for a compressed original: its summary still said the old one (and a
    cold memory stating something new is recalled by no one). The summary goes, the
    originals are back in the archive, the edited one with its new text."""
    clock = ManualClock()
    with _persisted(tmp_path, clock)() as mem:
        originals, sid = _compress_meeting(mem, clock)
        mem.edit(originals[0], "In the budget meeting we agreed the travel budget is doubled.")
        assert sid not in {r.id for r in mem.records()}
        assert {mem.get(m).tier for m in originals} == {Tier.ARCHIVE}
        assert "doubled" in mem.recall("travel budget", deep=True).texts[0]


def test_new_metadata_for_an_original_drops_its_summary(tmp_path: Path) -> None:
    """A compressed original moved to another user (``edit(metadata=...)``): the summary
    kept the old user's metadata and the moved text, so it showed under the old user's
    filter and the new owner's filter found nothing. The summary goes; each filter then
    finds its own. Metadata a filter reads alike (a dict value) keeps it."""
    clock = ManualClock()
    with _persisted(tmp_path, clock)() as mem:
        recs = mem.remember_many(
            MEETING,
            categories=["event"] * 4,
            importances=[0.0] * 4,
            metadatas=[{"user": "alice", "value": {"n": k}} for k in range(4)],
        )
        originals = [r.id for r in recs]
        clock.advance(60 * DAY)
        mem.maintain()
        (sid,) = [r.id for r in mem.records() if r.category == "summary"]
        mem.edit(originals[1], metadata={"user": "alice", "value": {"n": 9}})
        assert sid in {r.id for r in mem.records()}  # a dict value: read alike
        mem.edit(originals[0], metadata={"user": "bob"})
        assert sid not in {r.id for r in mem.records()}
        alice = mem.recall("budget meeting", deep=True, where={"user": "alice"}, k=10)
        bob = mem.recall("budget meeting", deep=True, where={"user": "bob"}, k=10)
        assert originals[0] not in alice.ids and bob.ids == [originals[0]]
        assert [e.kind for e in mem.history(sid)][-1] == "forget"


def test_superseding_with_a_compressed_memory_makes_it_recallable(fresh: Any) -> None:
    """``supersede(old, new)`` with ``new`` behind a summary: a cold successor counts as
    none (no search reads the cold tier), so the older statement stayed the newest one
    recall could show, and came first though the caller had just said it is stale. The
    summary goes (its originals back to the archive), and the new statement is
    recalled in the older one's place; with ``include_cold`` too."""
    clock = ManualClock()
    policy = POLICY.replace(supersede=False)
    with fresh(clock=clock, policy=policy) as mem:
        old = mem.remember("The team standup is at 9am in room 4.", category="instruction").id
        clock.advance(DAY)
        new = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)[0].id
        clock.advance(60 * DAY)
        mem.maintain()
        (sid,) = [r.id for r in mem.records() if r.category == "summary"]
        assert mem.get(new).tier == Tier.COLD
        mem.supersede(old, new)
        assert sid not in {r.id for r in mem.records()}
        assert mem.get(new).tier == Tier.ARCHIVE
        for include_cold in (False, True):
            shown = mem.recall(
                "When is the team standup?", deep=True, k=5, include_cold=include_cold
            ).ids
            assert old not in shown and new in shown


def test_forgetting_a_summary_journals_its_originals_coming_back(tmp_path: Path) -> None:
    """forget(summary) moves the originals from cold to the archive, and their history
    says so (it ended at "compress"), as decompress()'s does, once each."""
    clock = ManualClock()
    with _persisted(tmp_path, clock)() as mem:
        originals, sid = _compress_meeting(mem, clock)
        mem.forget(sid)
        for m in originals:
            assert mem.get(m).tier == Tier.ARCHIVE
            last = mem.history(m)[-1]
            assert (last.kind, last.detail["summary"]) == ("decompress", sid)
        _, sid2 = _compress_meeting(mem, clock)  # a new group, compressed and undone
        n = len(mem.expand(sid2))  # both groups: the first came back to the archive
        mem.decompress(sid2)
        undone = [
            e for e in mem.history() if e.kind == "decompress" and e.detail["summary"] == sid2
        ]
        assert len(undone) == len({e.memory_id for e in undone}) == n == 8


def test_invalidating_a_summary_brings_its_originals_back(tmp_path: Path) -> None:
    """A summary marked wrong says nothing of the memories it stood for: they return to
    the archive, recallable, unflagged, and are not compressed again (they stayed cold,
    out of recall, for good)."""
    clock = ManualClock()
    open_ = _persisted(tmp_path, clock)
    with open_() as mem:
        originals, sid = _compress_meeting(mem, clock)
        mem.invalidate(sid, reason="the summary garbled the budget")
        assert [mem.get(m).tier for m in originals] == [Tier.ARCHIVE] * 4
        assert not mem.stats()["flagged_for_review"]
        hit = mem.recall("travel budget frozen", deep=True, k=1)
        assert hit.ids == [originals[0]]
        clock.advance(60 * DAY)
        assert mem.maintain().ids("compress") == []
    with open_() as mem:
        clock.advance(DAY)
        assert mem.maintain().ids("compress") == []
        assert [mem.get(m).tier for m in originals] == [Tier.ARCHIVE] * 4
        assert mem.get(sid).invalidated


def test_a_summary_is_no_turn_of_the_conversation(tmp_path: Path) -> None:
    """maintain() writes a summary with the next sequence number; recall showed it as
    "the turn written just after" the memory written before it (pushing out a hit), and
    a summary hit brought the memories numbered around it."""
    clock = ManualClock()
    with _persisted(tmp_path, clock)() as mem:
        mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        mem.remember("Always answer in British English", category="instruction")
        clock.advance(60 * DAY)
        dentist = mem.remember("My dentist appointment is on Tuesday at 3pm", category="event")
        mem.maintain()  # the summary: written just after the dentist, in the same minute
        (sid,) = [r.id for r in mem.records() if r.category == "summary"]
        clock.advance(10)
        after = mem.remember("The dentist is on Harley Street", category="fact")
        for k in (1, 2, 5):
            got = mem.recall("dentist appointment Tuesday", k=k, feedback=False)
            assert got.ids[0] == dentist.id
            assert not [i for i in got if i.id == sid and i.why.get("context_for")]
        assert after.id in got.ids
        hit = mem.recall("budget meeting travel marketing hiring cloud", k=3)
        assert hit.ids[0] == sid
        assert not [i for i in hit if i.why.get("context_for") == sid]


def test_a_summary_that_adds_to_a_list_is_one_live_and_after_a_reopen(tmp_path: Path) -> None:
    """A summary's text counts for lists as the index built on reopen reads it; the live
    instance did not note it, so the same list question ranked differently."""
    clock = ManualClock()
    open_ = _persisted(tmp_path, clock)
    shopping = [
        "Add oat milk to my shopping list.",
        "Add oat milk and bread to my shopping list please.",
        "Put oat milk on my shopping list too.",
    ]
    with open_() as mem:
        mem.recall("What is on my shopping list?", feedback=False)  # builds the list index
        mem.remember_many(shopping, categories=["task"] * 3, importances=[0.0] * 3)
        mem.remember("Always answer in British English", category="instruction")
        clock.advance(60 * DAY)
        mem.maintain()
        live = mem.recall("What is on my shopping list?", feedback=False)
        live_view = [(i.id, i.why["relevance_signals"].get("list_item")) for i in live]
    with open_() as mem:
        again = mem.recall("What is on my shopping list?", feedback=False)
        assert [(i.id, i.why["relevance_signals"].get("list_item")) for i in again] == live_view


def test_restating_one_fact_of_a_summary_leaves_its_other_facts(fresh: Any) -> None:
    """A summary states several facts; "my favourite colour is blue now" superseded the
    whole summary, and the food fact folded into it was recalled no more (the same
    memories uncompressed kept it). It supersedes the colour's original, and the
    summary, stating the old colour, goes: the food fact is recalled from its own."""
    clock = ManualClock()
    policy = POLICY.replace(supersede=True, compress_min_cluster=2, compress_similarity=0.2)
    with fresh(clock=clock, policy=policy) as mem:
        for text in (
            "My favourite colour is green.",
            "The plumber comes on Monday to fix the kitchen sink.",
            "My favourite food is pizza with green olives.",
        ):
            mem.remember(text, category="event", importance=0.1)
            clock.advance(3600)
        clock.advance(80 * DAY)
        mem.maintain()
        (summary,) = [r for r in mem.records() if r.category == "summary"]
        assert "pizza" in summary.text
        blue = mem.remember("My favourite colour is blue now.", category="fact")
        (green,) = [r for r in mem.records() if r.text == "My favourite colour is green."]
        assert green.superseded_by == blue.id and green.tier == Tier.ARCHIVE
        assert summary.id not in {r.id for r in mem.records()}
        hits = mem.recall("What is my favourite food?", k=3, deep=True).texts
        assert "My favourite food is pizza with green olives." in hits


def test_a_memory_that_made_another_stale_is_not_compressed(fresh: Any) -> None:
    """Compressed, the current statement of a changed fact would turn cold (and count as
    none, above): it stays archived and recallable as itself."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        old = mem.remember("The travel budget was open.", category="event", importance=0.0)
        mem.supersede(old.id, recs[0].id)
        clock.advance(60 * DAY)
        compressed = mem.maintain().ids("compress")
        assert recs[0].id not in compressed and old.id not in compressed
        assert [r.id for r in recs[1:]] == compressed
        assert mem.get(recs[0].id).tier == Tier.ARCHIVE


def test_an_edit_of_an_original_that_fails_keeps_its_summary(tmp_path: Path) -> None:
    """The summary was dropped (and committed) before the edit's own transaction: an
    edit that then failed had decompressed the group all the same."""
    from oblivion_core import VectorStoreError

    clock = ManualClock()
    open_ = _persisted(tmp_path, clock)
    with open_() as mem:
        originals, _ = _compress_meeting(mem, clock)
        before = sorted((r.id, r.tier, r.text) for r in mem.records())
        real = mem.store.add

        def down(*args: Any, **kwargs: Any) -> None:
            raise VectorStoreError("chroma is down")

        mem.store.add = down  # type: ignore[method-assign]
        with pytest.raises(VectorStoreError):
            mem.edit(originals[0], "The budget meeting reopened the travel budget.")
        mem.store.add = real  # type: ignore[method-assign]
        assert sorted((r.id, r.tier, r.text) for r in mem.records()) == before
    with open_() as mem:
        assert sorted((r.id, r.tier, r.text) for r in mem.records()) == before


def test_an_edit_of_an_original_to_the_same_text_keeps_its_summary(compressed: Any) -> None:
    """The summary still says what the original says (the LangGraph store re-puts an
    item's text when only its index flag changes)."""
    mem, originals, summaries, _, _ = compressed
    mem.edit(originals[0], MEETING[0])
    assert mem.get(summaries[0].id).category == "summary"
    assert mem.get(originals[0]).tier == Tier.COLD


def test_a_forget_of_an_original_that_fails_keeps_its_summary(tmp_path: Path) -> None:
    """The summary went in one transaction and the original in a second: one delete now,
    so a failure leaves both."""
    from oblivion_core import VectorStoreError

    clock = ManualClock()
    with _persisted(tmp_path, clock)() as mem:
        originals, sid = _compress_meeting(mem, clock)
        before = sorted((r.id, r.tier) for r in mem.records())

        real = mem.store.delete

        def down(namespace: str, ids: list[str]) -> None:  # fails on the original only
            if originals[1] in ids:
                raise VectorStoreError("chroma is down")
            real(namespace, ids)

        mem.store.delete = down  # type: ignore[method-assign]
        with pytest.raises(VectorStoreError):
            mem.forget(originals[1])
        mem.store.delete = real  # type: ignore[method-assign]
        assert sorted((r.id, r.tier) for r in mem.records()) == before
        mem.forget(originals[1])
        assert sid not in {r.id for r in mem.records()}
        assert mem.history(sid)[-1].detail["reason"] == "an original was forgotten"


def test_a_summary_holds_memories_with_the_same_metadata(fresh: Any) -> None:
    """Compression grouped memories whatever their metadata, and a summary carried none
    of it: a filter on a user found none of their compressed memories, and one leaving
    a user out (``$ne``) showed that user's text through the summary. Memories now share
    a summary only with the same metadata, which it carries."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY) as mem:
        for user in ("alice", "bob"):
            mem.remember_many(
                [f"{text} ({user})" for text in MEETING[:3]],
                categories=["event"] * 3,
                importances=[0.0] * 3,
                metadatas=[{"user": user, "n": i} for i in range(3)],
            )
        mem.remember_many(
            MEETING,
            categories=["event"] * 4,
            importances=[0.0] * 4,
            metadatas=[{"user": "carol"}] * 4,
        )
        clock.advance(60 * DAY)
        mem.maintain()
        (summary,) = [r for r in mem.records() if r.category == "summary"]
        assert summary.metadata == {"user": "carol", "summary_of": summary.metadata["summary_of"]}
        assert all(mem.get(m).metadata == {"user": "carol"} for m in summary.metadata["summary_of"])
        for user in ("alice", "bob"):  # their memories differ in "n": none compressed
            mine = mem.recall("budget meeting", deep=True, k=10, where={"user": user})
            assert len(mine) == 3 and all(f"({user})" in t for t in mine.texts)
        carol = mem.recall("budget meeting", deep=True, k=10, where={"user": "carol"})
        assert carol.ids == [summary.id]
        others = mem.recall("budget meeting", deep=True, k=10, where={"user": {"$ne": "carol"}})
        assert summary.id not in others.ids and len(others) == 6
        # an edit of its metadata keeps what the originals share: it replaced it, and
        # carol's summary then showed under a filter that leaves carol out
        mem.edit(summary.id, metadata={"reviewed": True, "user": "dave"})
        assert mem.get(summary.id).metadata == {
            "reviewed": True,
            "user": "carol",
            "summary_of": summary.metadata["summary_of"],
        }
        others = mem.recall("budget meeting", deep=True, k=10, where={"user": {"$ne": "carol"}})
        assert summary.id not in others.ids


def test_a_summary_stating_a_superseded_original_is_dropped(fresh: Any) -> None:
    """An original made stale after its compression: the summary kept stating it, and
    a list question ranked the summary (oat milk included) first as a current addition.
    The summary goes, as for an edit of an original; the others are archived again."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY.replace(supersede=True)) as mem:
        mem.recall("What is on my shopping list?", feedback=False)  # the list index
        adds = mem.remember_many(
            [f"Add {item} to my shopping list." for item in ("oat milk", "bread", "rice")],
            categories=["task"] * 3,
            importances=[0.0] * 3,
        )
        clock.advance(60 * DAY)
        mem.maintain()
        (summary,) = [r for r in mem.records() if r.category == "summary"]
        removal = mem.remember("We don't need oat milk any more, take it off the shopping list.")
        assert mem.get(adds[0].id).superseded_by == removal.id
        with pytest.raises(UnknownMemoryError):
            mem.get(summary.id)
        assert {mem.get(r.id).tier for r in adds} == {Tier.ARCHIVE}
        assert mem.history(summary.id)[-1].detail["reason"] == "an original was superseded"
        shown = mem.recall("What is on my shopping list?", feedback=False, deep=True)
        listed = [it.text for it in shown if it.why["relevance_signals"].get("list_item")]
        assert listed and not any("Add oat milk" in t for t in listed)


def test_invalidating_an_original_drops_its_summary(tmp_path: Path) -> None:
    """A summary kept stating an original marked wrong (recalled, only flagged for
    review). It goes; the other originals are archived again, recallable."""
    clock = ManualClock()
    with _persisted(tmp_path, clock)() as mem:
        originals, sid = _compress_meeting(mem, clock)
        mem.invalidate(originals[2], reason="Priya asked for nothing")
        assert sid not in {r.id for r in mem.records()}
        assert [mem.get(m).tier for m in originals] == [Tier.ARCHIVE] * 4
        hits = mem.recall("budget meeting", deep=True, k=10).ids
        assert originals[2] not in hits and set(originals) - {originals[2]} <= set(hits)


def test_supersede_refuses_a_summary_and_an_invalidated_successor(compressed: Any) -> None:
    """supersede(summary, new) hid the summary and left its originals cold, reachable
    by no recall; a successor marked wrong would make the older statement current
    again at once, without its floor. Both are refused, and nothing changes."""
    mem, originals, summaries, _, rule = compressed
    new = mem.remember("The hiring budget review is done.", category="fact")
    with pytest.raises(InvalidInputError, match="is a summary"):
        mem.supersede(summaries[0].id, new.id)
    mem.invalidate(new.id)
    with pytest.raises(InvalidInputError, match="is invalidated"):
        mem.supersede(rule, new.id)
    assert mem.get(summaries[0].id).superseded_by is None
    assert mem.get(rule).superseded_by is None
    assert all(mem.get(m).tier == Tier.COLD for m in originals)


def test_a_summary_longer_than_max_text_chars_leaves_the_group_archived(
    fresh: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A summary over max_text_chars was cut to it and stored, its end lost without a
    word. It is refused as a text remember() would refuse: logged, the group stays
    archived."""
    clock = ManualClock()
    policy = POLICY.replace(max_text_chars=200)
    with fresh(clock=clock, policy=policy, summarizer=_Returning("The team met. " * 30)) as mem:
        recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        clock.advance(60 * DAY)
        with caplog.at_level("ERROR", logger="oblivion_core"):
            plan = mem.maintain()
        assert plan.ids("compress") == [] and mem.stats()["summaries"] == 0
        assert all(mem.get(r.id).tier == Tier.ARCHIVE for r in recs)
        assert "max_text_chars" in caplog.text


def test_an_edited_summary_stays_a_summary(compressed: Any) -> None:
    """edit(summary, metadata=...) dropped "summary_of", which marks a summary, and a
    summary given another category was folded into a new summary."""
    mem, originals, summaries, _, _ = compressed
    sid = summaries[0].id
    mem.edit(sid, metadata={"topic": "budget"}, category="event")
    assert mem.get(sid).metadata == {"topic": "budget", "summary_of": originals}
    assert [r.id for r in mem.expand(sid)] == originals
    more = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
    mem.edit(sid, importance=0.0)
    mem.clock.advance(120 * DAY)
    assert sid not in mem.maintain().ids("compress")
    assert {r.id for r in more} <= {
        m for s in mem.records() if s.category == "summary" for m in s.metadata["summary_of"]
    }


def test_an_edit_of_a_summarys_text_keeps_it_with_stale_facts_detected(fresh: Any) -> None:
    """The edited summary was read as the newest statement of what it says: it restates
    its own originals, so it superseded one of them, that supersession made the summary
    outdated and deleted it (the user's edit lost, its originals back in the archive),
    and edit() raised a bare KeyError for the id it had just deleted."""
    clock = ManualClock()
    with fresh(clock=clock, policy=POLICY.replace(supersede=True)) as mem:
        originals, sid = _compress_meeting(mem, clock)
        text = mem.get(sid).text
        edited = mem.edit(sid, text.replace("budget", "Budget", 1) + " Reviewed.")
        assert edited.id == sid and mem.get(sid).text.endswith("Reviewed.")
        assert [r.id for r in mem.expand(sid)] == originals
        assert all(
            mem.get(m).tier == Tier.COLD and mem.get(m).superseded_by is None for m in originals
        )
        assert [e.kind for e in mem.history(sid)][-1] == "edit"


def test_a_forgetting_maintain_takes_an_invalidated_summary_with_its_originals(
    fresh: Any,
) -> None:
    """invalidate(summary) sends its originals back to the archive, where they decay;
    a forgetting maintain() deleted them, but the summary (protected from forgetting)
    kept their text for good, shown with include_invalidated=True. It now goes with
    them, as with forget() of an original, and the plan says so."""
    clock = ManualClock()
    policy = POLICY.replace(forget_enabled=True, forget_below=0.05, forget_min_age=0)
    with fresh(clock=clock, policy=policy) as mem:
        recs = mem.remember_many(MEETING, categories=["event"] * 4, importances=[0.0] * 4)
        originals = [r.id for r in recs]
        mem.remember("Always answer in British English", category="instruction")
        while mem.get(originals[0]).activation >= 0.09:  # to compress, not to forget
            clock.advance(DAY / 4)
        mem.maintain()
        (sid,) = [r.id for r in mem.records() if r.category == "summary"]
        mem.invalidate(sid, reason="garbled")
        clock.advance(60 * DAY)
        preview = mem.maintain(dry_run=True)
        assert sid in preview.ids("forget") and set(originals) <= set(preview.ids("forget"))
        mem.maintain()
        alive = {r.id for r in mem.records()}
        assert sid not in alive and not alive & set(originals)
        shown = mem.recall("Priya hiring budget review", include_invalidated=True, deep=True)
        assert all(t not in it.text for it in shown for t in MEETING)
        why = [e.detail["reason"] for e in mem.history(sid) if e.kind == "forget"]
        assert why == ["an original was forgotten"]


def test_a_chinese_group_is_summarised_within_max_words() -> None:
    """Split only at ". " and counted by spaces, a Chinese text was one sentence of one
    word: the "summary" of 8 turns was all 8 of them pasted together."""
    from oblivion_core.cjk import word_count
    from oblivion_core.compression import ExtractiveSummarizer

    texts = [
        "今天的会议讨论了第三季度的预算。张经理负责准备新的预算方案！",
        "预算方案要在下周三之前发给所有部门。王会计整理各部门的需求。",
        "下次会议再讨论预算的细节？大家都同意了。",
    ] * 3
    summary = ExtractiveSummarizer(max_words=20).summarize(texts)
    assert summary and word_count(summary) <= 20
    assert summary.endswith(("。", "！", "？")) and "预算" in summary
    assert word_count("预算是五十万 and more") == 8


def test_a_japanese_quote_stays_with_its_sentence() -> None:
    """Split after 。 even before a closing quote, a summary began with a stray 」."""
    from oblivion_core.compression import ExtractiveSummarizer

    summary = ExtractiveSummarizer(max_words=60).summarize(
        ["「こんにちは。」と彼は言った。東京は大きい。", "我今天去了北京！天气很好。"]
    )
    assert not summary.startswith("」") and "「こんにちは。」と彼は言った。" in summary
    assert " " not in summary  # sentences of Chinese and Japanese join without a space


@pytest.mark.parametrize(
    "text",
    [
        "价格（含税） 100元。",  # a space inside a sentence
        "I went to 北京 last week. 我很喜欢那里。 The food was great.",  # then English
        "真的吗？！太好了。",  # one end of two marks
        "我住在北京。2019年我搬到了上海。「好的」他说。",  # a sentence opening with a digit
    ],
)
def test_a_summary_of_one_text_is_that_text(text: str) -> None:
    """Every space after 。 or ） in the summary went, not only those its join put there
    ("价格（含税）100元。", "那里。The food"), and "？！" ended two sentences."""
    from oblivion_core.compression import ExtractiveSummarizer

    assert ExtractiveSummarizer(max_words=200).summarize([text]) == text
