"""notebooks/langchain_agent.ipynb runs offline, end to end, and is up to date."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE.parents[1] / "notebooks" / "langchain_agent.ipynb"


def test_notebook_matches_its_generator() -> None:
    """The committed notebook's cells are what _make_notebook.py builds."""
    sys.path.insert(0, str(HERE))
    from _make_notebook import build

    committed = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(committed)
    assert [(c.cell_type, c.source) for c in committed.cells] == [
        (c.cell_type, c.source) for c in build().cells
    ]


@pytest.mark.notebook
@pytest.mark.integration
def test_notebook_executes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cell runs without error in the python3 kernel and the activation plot is drawn."""
    from nbclient import NotebookClient

    # The kernel inherits the environment (offline model paths); make the repo importable.
    repo = str(HERE.parents[1])
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "Always give distances in kilometres, never in miles." in text
