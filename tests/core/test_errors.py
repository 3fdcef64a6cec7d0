"""Errors for failures outside the caller: the token counter's encoding that cannot be
loaded is an outage (TokenizerError), and a write it refuses changes nothing stored.
Each error's ``problem`` is its message without the advice that ends it."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from oblivion_core import (
    EmbeddingError,
    InvalidInputError,
    ModelMismatchError,
    Oblivion,
    OblivionError,
    StoreLockedError,
    TiktokenCounter,
    TokenizerError,
)
from oblivion_core.testing import HashEmbedder, memory


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


def test_an_errors_problem_is_its_message_without_the_advice(tmp_path: Path) -> None:
    """The CLI gives its own advice after ``problem`` (it split messages at phrases of
    the advice, which a reworded message broke): a locked store's and another model's
    vectors' problems end before the advice, a plain error's problem is its message,
    and ``problem`` survives pickling (errors cross process pools)."""
    assert InvalidInputError("k must be positive").problem == "k must be positive"
    assert OblivionError().problem == ""
    with memory(tmp_path) as mem:
        mem.remember("kept")
        with pytest.raises(StoreLockedError) as locked:
            memory(tmp_path)
        assert str(locked.value).startswith(locked.value.problem + ". Share one Oblivion")
        assert locked.value.problem.endswith(
            "is already open in another Oblivion instance of this process"
        )
    with Oblivion(tmp_path / "b", embedder=HashEmbedder(dim=64)) as mem:
        mem.remember("kept")
    with (
        Oblivion(tmp_path / "b", embedder=HashEmbedder(dim=32)) as other,
        pytest.raises(ModelMismatchError) as mismatch,
    ):
        other.recall("kept")
    assert isinstance(mismatch.value, EmbeddingError)
    assert mismatch.value.problem.endswith("32-d vectors but this store holds 64-d vectors")
    assert str(mismatch.value) == (
        mismatch.value.problem + "; use the same embedding model the store was created with"
    )
    copy = pickle.loads(pickle.dumps(mismatch.value))
    assert type(copy) is ModelMismatchError
    assert (str(copy), copy.problem) == (str(mismatch.value), mismatch.value.problem)
