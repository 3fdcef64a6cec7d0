"""What the library logs in production: one line per outage, not a traceback per call;
no memory texts at WARNING; progress bars that TQDM_DISABLE turns off."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import pytest

from oblivion_core import VectorStoreError
from oblivion_core.testing import memory


def _down(*_: Any, **__: Any) -> Any:
    raise VectorStoreError("the Chroma server at localhost:1 did not answer. Start it")


def test_an_outage_is_one_warning_line_not_a_traceback_per_call(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the server down, each failed write logged an ERROR with a 90-line traceback
    beside the error it raised, and each namespace load a WARNING with one: a server's
    log got a stack trace on every request of the outage."""
    mem = memory(max_loaded_namespaces=1)
    for user in ("u0", "u1", "u2"):
        mem.remember(f"{user} likes green tea", namespace=user)
    for name in ("add", "delete", "count", "ids"):
        monkeypatch.setattr(mem.store, name, _down)
    caplog.set_level(logging.DEBUG, logger="oblivion_core")
    for round_ in range(3):
        for user in ("u0", "u1", "u2"):
            mem.recall("green tea", namespace=user)  # loads it again: a check fails
            with pytest.raises(VectorStoreError):
                mem.remember(f"{user} wrote {round_}", namespace=user)
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(loud) == 1, [r.getMessage() for r in loud]
    assert loud[0].exc_info is None and "DEBUG" in loud[0].getMessage()
    monkeypatch.undo()
    mem.remember("back again", namespace="u1")  # it answers: the next outage is told
    assert not mem.store.outage_told
    caplog.clear()
    monkeypatch.setattr(mem.store, "add", _down)
    monkeypatch.setattr(mem.store, "delete", _down)
    for _ in range(2):
        with pytest.raises(VectorStoreError):
            mem.remember("down again", namespace="u1")
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1


def test_a_clean_up_failing_for_another_reason_is_still_an_error(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only an unreachable vector store is told once: a bug is an ERROR with its trace."""
    mem = memory()
    mem.remember("first", namespace="u")

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("a bug in the clean-up")

    monkeypatch.setattr(mem.store, "add", _down)
    monkeypatch.setattr(mem.store, "delete", broken)
    caplog.set_level(logging.WARNING, logger="oblivion_core")
    for _ in range(2):
        with pytest.raises(VectorStoreError):
            mem.remember("second", namespace="u")
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 2 and all(r.exc_info for r in errors)


def test_a_model_hook_that_fails_logs_no_memory_text(caplog: pytest.LogCaptureFixture) -> None:
    """The supersession judge's failure quoted both texts at WARNING."""
    from oblivion_core.llm_hooks import PromptedSupersessionJudge

    def offline(system: str, user: str) -> str:
        raise ConnectionError("no route to the model")

    mem = memory(supersession_judge=PromptedSupersessionJudge(offline))
    caplog.set_level(logging.WARNING)
    mem.remember("my favourite colour is blue")
    mem.remember("my favourite colour is green")
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "model call failed" in said
    assert "blue" not in said and "green" not in said


def test_progress_bars_follow_tqdm_disable() -> None:
    """A server sets TQDM_DISABLE=1: the bar was forced on (disable=False passed)."""
    code = (
        "from oblivion_core.progress import progress\n"
        "with progress(10, 're-embedding') as step:\n"
        "    step(10)\n"
    )
    for disabled in (True, False):
        env = {k: v for k, v in os.environ.items() if k != "TQDM_DISABLE"}
        if disabled:
            env["TQDM_DISABLE"] = "1"
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert ("re-embedding" in run.stderr) is not disabled, run.stderr
