"""notebooks/quickstart.ipynb and the `oblivion demo` story run end to end."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

from oblivion_core import InvalidInputError, ManualClock, Oblivion
from oblivion_core.cli import main
from oblivion_core.testing import HashEmbedder

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "quickstart.ipynb"


def test_demo_story_moves_small_talk_to_the_archive(tmp_path: Path) -> None:
    """The demo streams every session, archives small talk, keeps instructions active and
    writes the activation plot."""
    from oblivion_core.demo import run_demo

    lines: list[str] = []
    result = run_demo(tmp_path / "store", embedder=HashEmbedder(), out=lines.append)
    assert result.tier_sizes[-1][2] > 0  # something was archived
    assert result.plot is not None and result.plot.exists()
    assert any("why:" in line for line in lines)
    assert len(result.recalls) >= 5


@pytest.mark.integration
def test_demo_surfaces_the_newest_fact_for_every_scripted_question(
    tmp_path: Path, real_embedder: object
) -> None:
    """`make demo`'s story with the local model and Chroma on disk: each of its questions
    (asked with k=3 within 120 tokens) brings back the newest statement of its fact,
    including the team that grew from seven to nine people."""
    from oblivion_core.demo import run_demo

    result = run_demo(tmp_path / "store", embedder=real_embedder, out=lambda _: None)
    assert len(result.recalls) >= 5
    assert [r["query"] for r in result.recalls if not r["hit"]] == []
    # "I've switched editors. I'm using Helix ..." made "my editor of choice is Vim"
    # stale: it is no longer recalled beside it
    (editor,) = [r for r in result.recalls if "editor" in r["query"]]
    assert not [t for t in editor["texts"] if "editor of choice is Vim" in t]
    # "... so the team grows to nine" made "there are seven of us on the team" stale
    (team,) = [r for r in result.recalls if "team" in r["query"]]
    assert "nine" in team["texts"][0]
    assert not [t for t in team["texts"] if "seven of us" in t]
    # "please call me Dee" comes first for the question about the user's name, where
    # "Written updates over calls" shared more of its words
    (name,) = [r for r in result.recalls if "call the user" in r["query"]]
    assert "call me Dee" in name["texts"][0]


def test_demo_refuses_to_replace_a_directory_that_is_not_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`oblivion demo --path` never deletes a folder that does not hold an Oblivion store:
    it says why on stderr and exits with status 1 (no traceback)."""
    (tmp_path / "mine.txt").write_text("precious")
    assert main(["demo", "--path", str(tmp_path)]) == 1
    assert "files that the demo did not make" in capsys.readouterr().err
    assert (tmp_path / "mine.txt").read_text() == "precious"
    assert main(["demo", "--path", str(tmp_path / "mine.txt")]) == 1
    assert "is a file" in capsys.readouterr().err


def _user_store(path: Path) -> None:
    with Oblivion(path, clock=ManualClock(), embedder=HashEmbedder()) as mem:
        mem.remember("my precious user memory", id="precious")


def _intact(path: Path) -> bool:
    with Oblivion(path, clock=ManualClock(), embedder=HashEmbedder()) as mem:
        return mem.get("precious").text == "my precious user memory"


def test_demo_never_replaces_a_store_it_did_not_make(tmp_path: Path) -> None:
    """An Oblivion store of the user's at the demo's path is refused, not deleted (the
    demo used to replace any folder holding an Oblivion store)."""
    from oblivion_core.demo import run_demo

    _user_store(tmp_path / "store")
    with pytest.raises(InvalidInputError, match="holds an Oblivion store that the demo did not"):
        run_demo(tmp_path / "store", embedder=HashEmbedder(), out=lambda _: None)
    assert _intact(tmp_path / "store")


def test_demo_replaces_its_own_store_unless_it_is_open(tmp_path: Path) -> None:
    """A second demo run replaces the first one's store; while that store is open (here
    or in another process) it is refused and left as it is."""
    from oblivion_core.demo import run_demo

    path = tmp_path / "store"
    first = run_demo(path, embedder=HashEmbedder(), out=lambda _: None)
    again = run_demo(path, embedder=HashEmbedder(), out=lambda _: None)
    assert again.tier_sizes == first.tier_sizes
    with Oblivion(path, embedder=HashEmbedder()) as mem:
        count = mem.count()
        with pytest.raises(InvalidInputError, match="open in another process"):
            run_demo(path, embedder=HashEmbedder(), out=lambda _: None)
        assert mem.count() == count and mem.recall("tea", k=1).ids


def test_stats_command_errors_say_what_to_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`oblivion stats` on a path holding no store does not create one there; an unknown
    namespace is reported in one line, with status 1. A store open elsewhere is read
    from a copy, and says so."""
    missing = tmp_path / "typo"
    assert main(["stats", str(missing)]) == 1
    assert "there is no Oblivion store" in capsys.readouterr().err
    assert not missing.exists()
    _user_store(tmp_path / "store")
    assert main(["stats", str(tmp_path / "store"), "--namespace", "nosuch"]) == 1
    err = capsys.readouterr().err
    assert "UnknownNamespaceError" in err and "Traceback" not in err
    with Oblivion(tmp_path / "store", embedder=HashEmbedder()):
        assert main(["stats", str(tmp_path / "store")]) == 0
        captured = capsys.readouterr()
        assert "open in a running process; read a copy" in captured.err
        assert '"memories": 1' in captured.out
    assert main(["stats", str(tmp_path / "store")]) == 0
    assert '"memories": 1' in capsys.readouterr().out


@pytest.mark.notebook
@pytest.mark.integration
def test_quickstart_notebook_executes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cell runs in the python3 kernel with the real model and the plot is drawn."""
    from nbclient import NotebookClient

    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb,
        kernel_name="python3",
        timeout=300,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
