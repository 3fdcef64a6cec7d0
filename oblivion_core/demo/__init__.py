"""The ``oblivion demo`` story: three weeks of an assistant's memory, streamed and explained.

A multi-session conversation ships with the package (``conversation.json``). The demo
streams it through an embedded store (Chroma on disk + the local embedding model) on a
simulated clock, prints how memories move between the active tier and the archive as
sessions pass, answers a few recalls with the ``why`` of each item, and plots the
activation of a handful of memories over time.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from oblivion_core.clock import ManualClock
from oblivion_core.engine import Oblivion
from oblivion_core.errors import (
    InvalidInputError,
    OblivionError,
    StoreLockedError,
    StorePathError,
)
from oblivion_core.policy import Policy
from oblivion_core.records import Tier
from oblivion_core.state import StateDB, release_store_lock, take_store_lock

DAY = 86_400.0
TURN_GAP = 30.0  # seconds between turns within a session
SAMPLES_PER_DAY = 4
TAIL_DAYS = 3  # simulated days after the last session


def load_conversation() -> dict[str, Any]:
    """The conversation that ships with the package."""
    text = resources.files("oblivion_core.demo").joinpath("conversation.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@dataclass
class DemoResult:
    """What a demo run produced (used by the notebook and the tests)."""

    path: Path
    timeline: list[float] = field(default_factory=list)  # days
    traces: dict[str, list[float]] = field(default_factory=dict)  # label -> activation
    tier_sizes: list[tuple[int, int, int]] = field(default_factory=list)  # (day, active, archive)
    recalls: list[dict[str, Any]] = field(default_factory=list)
    plot: Path | None = None


#: The file that marks a store as the demo's own: only such a store is ever replaced.
MARKER = "oblivion-demo.marker"


def _fresh_dir(path: Path) -> None:
    """Make ``path`` an empty directory for the demo's store.

    Only a store an earlier demo made (it holds :data:`MARKER`) is deleted, and only
    while no process has it open: any other folder with something in it, an Oblivion
    store of the user's above all, is refused.
    """
    try:
        if path.exists() and not path.is_dir():
            raise InvalidInputError(f"{path} is a file; pass --path to an empty or new directory")
        if path.exists() and any(path.iterdir()):
            if not (path / MARKER).exists():
                what = "an Oblivion store" if (path / StateDB.FILE).exists() else "files"
                raise InvalidInputError(
                    f"{path} holds {what} that the demo did not make, and the demo only "
                    "replaces its own stores; pass --path to an empty or new directory"
                )
            with _unused(path):
                # what it holds, not the folder: it may be the working directory
                # (`--path .`), which cannot be removed
                for entry in path.iterdir():
                    if entry.is_dir() and not entry.is_symlink():
                        shutil.rmtree(entry)
                    else:
                        entry.unlink()
        path.mkdir(parents=True, exist_ok=True)
        (path / MARKER).write_text("made by `oblivion demo`, which replaces it on its next run\n")
    except OblivionError:  # an OSError too: raised as it is
        raise
    except OSError as exc:
        raise StorePathError(
            f"cannot make the demo's store at {path}: {exc.strerror or exc}; pass --path to "
            "an empty or new directory you can write to"
        ) from exc


@contextlib.contextmanager
def _unused(path: Path) -> Iterator[None]:
    """Hold the store's lock (as an open Oblivion does) for the block; a store open in a
    process is refused instead of deleted under it."""
    try:
        fd = take_store_lock(path, StateDB.LOCK)
    except StoreLockedError:
        raise InvalidInputError(
            f"the demo store at {path} is open in another process; close it, or pass "
            "--path to an empty or new directory"
        ) from None
    try:
        yield
    finally:
        if fd is not None:
            release_store_lock(fd)


def run_demo(
    path: str | Path = "oblivion-demo",
    *,
    plot: str | Path | None = None,
    embedder: Any = None,
    out: Callable[[str], None] = print,
) -> DemoResult:
    """Stream the shipped conversation through a fresh store at ``path``.

    Args:
        path: Store directory: new, empty, or a store an earlier demo made (replaced);
            anything else is refused.
        plot: File to write the activation plot to (default ``path/activation.png``;
            skipped when matplotlib is missing): an existing directory gets
            ``activation.png`` inside it, a name without a suffix ``.png``; any other
            suffix must be a format matplotlib writes. Checked before the demo runs.
        embedder: Override the default local model (tests use a fast fake).
        out: Where the narration goes.
    """
    conv = load_conversation()
    root = Path(path)
    target = _plot_target(plot) if plot else root / "activation.png"
    _fresh_dir(root)
    # simulated time that ends now: the store reopened after the demo (oblivion stats,
    # records, recall) reads its memories as the demo left them, not 56 years decayed
    # from a clock that started at 0
    span = (float(conv["sessions"][-1]["day"]) + TAIL_DAYS) * DAY
    origin = float(int(time.time() - span))
    clock = ManualClock(origin)
    policy = Policy.template("balanced").replace(maintain_every=0)
    result = DemoResult(path=root)
    tracked: dict[str, str] = {}  # memory id -> label
    recalls = sorted(conv.get("recalls", []), key=lambda r: r["after_session"])

    with Oblivion(root, policy=policy, clock=clock, embedder=embedder) as mem:
        out(f"Oblivion demo: {conv['title']} -> store at {root}/")
        for s_idx, session in enumerate(conv["sessions"]):
            start = origin + float(session["day"]) * DAY
            _sample_until(mem, clock, origin, start, tracked, result)
            clock.set(max(clock.now(), start))
            ids = []
            for t_idx, turn in enumerate(session["turns"]):
                clock.set(max(clock.now(), start + t_idx * TURN_GAP))
                speaker = conv.get("user", "User") if turn["role"] == "user" else "Assistant"
                rec = mem.remember(
                    f"{speaker}: {turn['text']}",
                    category=turn.get("category"),
                    importance=turn.get("importance"),
                    metadata={"session": s_idx, "turn": t_idx, "role": turn["role"]},
                )
                ids.append(rec.id)
                if turn.get("track") or (
                    len(tracked) < 6 and _interesting(turn, tracked, mem, rec.id)
                ):
                    tracked[rec.id] = _label(turn)
            plan = mem.maintain()
            st = mem.stats()
            result.tier_sizes.append((int(session["day"]), st["active"], st["archive"]))
            out(
                f"\nDay {session['day']:>2} · {session['label']}: {st['memories']} memories, "
                f"{st['active']} active, {st['archive']} archived"
            )
            out(f"  maintain: {plan.summary()}")
            for entry in plan.entries[:4]:
                text = mem.get(entry.id).text
                out(f"    {entry.action:8s} {entry.activation:.2f}  {_short(text)}")
            if len(plan.entries) > 4:
                out(f"    ... and {len(plan.entries) - 4} more")
            for r in [r for r in recalls if r["after_session"] == s_idx]:
                res = mem.recall(r["query"], token_budget=120, k=3)
                hit = any(r["expect_substring"].lower() in t.lower() for t in res.texts)
                result.recalls.append({"query": r["query"], "texts": res.texts, "hit": hit})
                out(f'  recall "{r["query"]}" (budget 120 tokens, used {res.total_tokens}):')
                for item in res:
                    out(f"    - {_short(item.text, 70)}")
                    out(f"      why: {item.why['explanation']}")
        _sample_until(mem, clock, origin, clock.now() + TAIL_DAYS * DAY, tracked, result)
        final = mem.stats()
        archived_small_talk = [
            r for r in mem.records(tier=Tier.ARCHIVE) if r.category == "small_talk"
        ]
        out(
            f"\nAfter {conv['sessions'][-1]['day'] + TAIL_DAYS} days: {final['active']} active, "
            f"{final['archive']} archived ({len(archived_small_talk)} of them small talk); "
            "nothing was deleted."
        )
    result.plot = _plot(result, target, out)
    return result


def _interesting(turn: dict[str, Any], tracked: dict[str, str], mem: Oblivion, mid: str) -> bool:
    wanted = {"instruction", "preference", "small_talk", "fact", "task"}
    have = {label.split(":")[0] for label in tracked.values()}
    return turn["role"] == "user" and turn.get("category") in wanted - have


def _label(turn: dict[str, Any]) -> str:
    return f"{turn.get('category', 'fact')}: {_short(turn['text'], 32)}"


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _sample_until(
    mem: Oblivion,
    clock: ManualClock,
    origin: float,
    until: float,
    tracked: dict[str, str],
    res: DemoResult,
) -> None:
    """Advance the clock to ``until`` in steps, recording tracked activations (the
    timeline in days since ``origin``, the demo's start)."""
    step = DAY / SAMPLES_PER_DAY
    while True:
        for mid, label in tracked.items():
            res.traces.setdefault(label, []).append(mem.get(mid).activation)
        res.timeline.append((clock.now() - origin) / DAY)
        if clock.now() + step > until:
            break
        clock.advance(step)
    # traces of memories tracked late are padded at the front for plotting
    longest = len(res.timeline)
    for label, values in res.traces.items():
        if len(values) < longest:
            res.traces[label] = [float("nan")] * (longest - len(values)) + values


def _plot_target(plot: str | Path) -> Path:
    """The file the plot goes to (see :func:`run_demo`), refused before the demo runs
    when matplotlib cannot write its format or its folder cannot be made."""
    target = Path(plot)
    if target.is_dir() or str(plot).endswith(("/", os.sep)):
        target /= "activation.png"
    elif not target.suffix:  # "act" or "act.": act.png
        target = target.with_name(target.name.rstrip(".") + ".png")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return target  # the plot is skipped
    # pgf needs a LaTeX installation: it would fail only after the demo ran
    formats = {k: v for k, v in Figure().canvas.get_supported_filetypes().items() if k != "pgf"}
    if target.suffix[1:].lower() not in formats:
        raise InvalidInputError(
            f"matplotlib cannot write a {target.suffix!r} file; pass --plot a name ending in "
            + ", ".join(f".{f}" for f in sorted(formats))
        )
    folder = target.parent  # or the nearest folder above it that exists, to make it in
    try:
        while not folder.exists():
            folder = folder.parent
        usable = folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)
    except OSError:
        usable = False
    if not usable:
        raise InvalidInputError(
            f"cannot write the plot to {target}: {folder} is not a folder you can write in; "
            "pass --plot a file in a folder you can write to"
        )
    return target


def _plot(res: DemoResult, target: Path, out: Callable[[str], None]) -> Path | None:
    try:  # a bare Figure: no pyplot, so the caller's backend (e.g. a notebook's) is untouched
        from matplotlib.figure import Figure
    except ImportError:
        out("(matplotlib not installed: skipping the plot; pip install 'oblivion-memory[demo]')")
        return None
    fig = Figure(figsize=(9, 4.5))
    ax = fig.subplots()
    for label, values in res.traces.items():
        ax.plot(res.timeline, values, label=label)
    policy = Policy.template("balanced")
    ax.axhspan(policy.archive_low, policy.archive_high, color="grey", alpha=0.15)
    ax.text(
        0.1,
        policy.archive_high + 0.01,
        "hysteresis band (the policy's; a full tier raises it)",
        fontsize=8,
        color="grey",
    )
    ax.set_xlabel("day")
    ax.set_ylabel("activation")
    ax.set_ylim(0, 1.05)
    ax.set_title("Activation over three weeks (boosts on recall; decay per category)")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(target, dpi=110, format=target.suffix[1:].lower())
    except Exception as exc:  # a folder, a format's own tools: one line, not a traceback
        raise InvalidInputError(
            f"cannot write the plot to {target}: "
            f"{getattr(exc, 'strerror', None) or exc}; pass --plot a .png file in a folder "
            "you can write to"
        ) from exc
    out(f"Activation plot written to {target}")
    return target
