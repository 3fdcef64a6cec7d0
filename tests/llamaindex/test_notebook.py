"""``notebooks/llamaindex_chat.ipynb`` runs offline and matches its source."""

from __future__ import annotations

import os

import nbformat
import pytest

from .build_notebook import NOTEBOOK, ROOT_HINT, build


def test_stored_notebook_matches_its_source() -> None:
    """The committed notebook is exactly what ``build_notebook.py`` generates (no outputs)."""
    stored = nbformat.read(NOTEBOOK, as_version=4)
    expected = build()
    assert [(c.cell_type, c.source) for c in stored.cells] == [
        (c.cell_type, c.source) for c in expected.cells
    ]
    assert all(not c.get("outputs") for c in stored.cells if c.cell_type == "code")
    assert stored.metadata["kernelspec"]["name"] == "python3"


@pytest.mark.notebook
@pytest.mark.integration
def test_notebook_executes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every cell runs in a fresh ``python3`` kernel from the notebooks folder, plot included."""
    from nbclient import NotebookClient

    # The kernel inherits this environment (offline model paths from offline-env.sh);
    # the repository goes first on its path so it imports the code under test.
    path = os.pathsep.join(p for p in (ROOT_HINT, os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert "all checks passed" in "".join(o.get("text", "") for o in outputs)
