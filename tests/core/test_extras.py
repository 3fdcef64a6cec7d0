"""An adapter imported without its extra fails with the pip command that installs it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oblivion_core.extras import require


def test_installed_modules_pass() -> None:
    """Nothing is raised when every module is there (a dotted name too)."""
    require("pkg", ("numpy", "chromadb.api"), "x")


def test_missing_modules_are_named_with_the_extra_to_install() -> None:
    """Every missing module is named, the first as the error's ``name``, and the message
    gives the pip command of the extra."""
    with pytest.raises(ModuleNotFoundError) as caught:
        require("pkg", ("numpy", "no_such_module_x", "no_such_pkg.sub"), "langchain")
    error = caught.value
    assert error.name == "no_such_module_x"
    assert str(error) == (
        "pkg needs no_such_module_x, no_such_pkg.sub (not installed): "
        'pip install "oblivion-memory[langchain]"'
    )


@pytest.mark.parametrize(
    ("package", "blocked", "extra"),
    [
        ("oblivion_langchain", "langchain_classic", "langchain"),
        ("oblivion_llamaindex", "llama_index.core", "llamaindex"),
    ],
)
def test_an_adapter_without_its_extra_says_what_to_install(
    package: str, blocked: str, extra: str
) -> None:
    """Importing an adapter whose framework is missing (blocked in a fresh interpreter)
    raises one ModuleNotFoundError naming it and the extra, before any of its modules."""
    code = f"import sys; sys.modules[{blocked!r}] = None; import {package}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"ModuleNotFoundError: {package} needs {blocked} (not installed): "
        f'pip install "oblivion-memory[{extra}]"'
    )


def test_a_release_older_than_the_code_needs_is_named_with_the_upgrade() -> None:
    """An environment that had the framework before: langchain 1.0 has no
    ``ModelRequest.system_message``, langgraph-checkpoint before 4.3 no
    ``validate_op_namespace``, and the import failed deep inside the package (or the
    first model call did). Each distribution older than its minimum is named, with the
    ``pip install -U`` that upgrades it; a new enough or absent one passes."""
    import numpy as np

    with pytest.raises(ImportError) as caught:
        require("pkg", ("numpy",), "langchain", minimum={"numpy": "999.1", "tiktoken": "0.1"})
    assert str(caught.value) == (
        f"pkg needs numpy >= 999.1 (installed: {np.__version__}): "
        'pip install -U "oblivion-memory[langchain]"'
    )
    require("pkg", ("numpy",), "x", minimum={"numpy": "1.0", "no-such-dist-x": "9"})


@pytest.mark.parametrize(
    ("version", "numbers"),
    [("1.1", (1, 1)), ("1.1.0", (1, 1)), ("1.1.0rc1", (1, 1)), ("4.3.2", (4, 3, 2)), ("x", (0,))],
)
def test_release_numbers_compare_as_pip_orders_releases(
    version: str, numbers: tuple[int, ...]
) -> None:
    """ "1.1" and "1.1.0" are one release; a pre-release counts as its release."""
    from oblivion_core.extras import _numbers

    assert _numbers(version) == numbers
