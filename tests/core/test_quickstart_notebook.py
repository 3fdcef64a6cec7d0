"""notebooks/quickstart.ipynb and the `oblivion demo` story run end to end."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

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


def test_demo_refuses_to_replace_a_directory_that_is_not_a_store(tmp_path: Path) -> None:
    """`oblivion demo --path` never deletes a folder that does not hold an Oblivion store."""
    (tmp_path / "mine.txt").write_text("precious")
    with pytest.raises(ValueError, match="not an Oblivion store"):
        main(["demo", "--path", str(tmp_path)])
    assert (tmp_path / "mine.txt").read_text() == "precious"


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
