"""Errors for failures outside the caller: the token counter's encoding that cannot be
loaded is an outage (TokenizerError), and a write it refuses changes nothing stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oblivion_core import (
    InvalidInputError,
    OblivionError,
    TiktokenCounter,
    TokenizerError,
)
from oblivion_core.testing import memory


def _offline(*args: Any, **kwargs: Any) -> Any:
    """``tiktoken.get_encoding`` on a machine that cannot download the encoding."""
    raise OSError("[Errno -2] Name or service not known")


def test_tokenizer_error_is_an_outage_not_bad_input() -> None:
    """TokenizerError is an OblivionError and an OSError, never a ValueError or a
    RuntimeError (which LlamaIndex's sync wrappers would hide)."""
    assert issubclass(TokenizerError, OblivionError)
    assert issubclass(TokenizerError, OSError)
    assert not issubclass(TokenizerError, ValueError | RuntimeError)
    assert not issubclass(TokenizerError, InvalidInputError)


def test_a_write_refused_for_an_unloadable_encoding_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """remember() and remember_many() with a default counter whose encoding cannot be
    downloaded raise TokenizerError saying what to fix, and leave the store as it was."""
    import tiktoken

    with memory(tmp_path) as mem:
        mem.remember("I live in Paris")
        mem.remember("I like green tea", namespace="sam")
    monkeypatch.setattr(tiktoken, "get_encoding", _offline)
    with memory(tmp_path, token_counter=TiktokenCounter()) as mem:

        def stored() -> Any:
            return (
                [(r.id, r.text) for r in mem.records()],
                [(r.id, r.text) for r in mem.records(namespace="sam")],
                len(mem.history()),
                len(mem.history(namespace="sam")),
                mem.namespaces(),
            )

        before = stored()
        for write in (
            lambda: mem.remember("I moved to Lyon"),
            lambda: mem.remember("I moved to Lyon", namespace="new"),
            lambda: mem.remember_many(["I moved to Lyon", "I like coffee"], namespace="sam"),
        ):
            with pytest.raises(TokenizerError) as err:
                write()
            assert "TIKTOKEN_CACHE_DIR" in str(err.value)
            assert "passed to Oblivion" not in str(err.value)
            assert stored() == before
    with memory(tmp_path) as mem:  # and so is the store on disk
        assert [r.text for r in mem.records()] == ["I live in Paris"]
        assert [r.text for r in mem.records(namespace="sam")] == ["I like green tea"]
