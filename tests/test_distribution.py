"""The wheel a user installs: built from the tracked sources, as ``pip install`` would build
it, and read back. An editable install (what every other test runs on) reads files in
place, so a file the wheel leaves out (the demo's conversation, a ``py.typed``) would pass
them all and fail only for users."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("oblivion_core", "oblivion_langchain", "oblivion_llamaindex")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel built from a copy of the sources git sees (tracked, or new and not
    ignored), offline and without build isolation."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    source = tmp_path_factory.mktemp("source")
    for name in filter(None, tracked):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*build, "--no-index", "-w", str(out), str(source)], check=True, capture_output=True
    )
    (built,) = out.glob("oblivion_memory-*.whl")
    return zipfile.ZipFile(built)


def _metadata(wheel: zipfile.ZipFile, name: str) -> str:
    (path,) = [n for n in wheel.namelist() if n.endswith(f".dist-info/{name}")]
    return wheel.read(path).decode()


def test_the_wheel_holds_every_module_and_nothing_else(wheel: zipfile.ZipFile) -> None:
    """Each package's modules are in it, as in the source tree; tests, benchmarks and
    notebooks are not."""
    names = set(wheel.namelist())
    for package in PACKAGES:
        modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / package).rglob("*.py")}
        assert modules, package
        assert modules <= names, sorted(modules - names)
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == set(PACKAGES)


def test_the_wheel_ships_its_data_and_type_markers(wheel: zipfile.ZipFile) -> None:
    """The demo's conversation, and a ``py.typed`` in each package, so that mypy reads
    the packages' annotations in users' code instead of treating them as untyped."""
    names = set(wheel.namelist())
    demo = sorted(p.name for p in (ROOT / "oblivion_core" / "demo").glob("*.json"))
    assert demo
    assert {f"oblivion_core/demo/{name}" for name in demo} <= names
    for package in PACKAGES:
        assert f"{package}/py.typed" in names


def test_the_wheel_declares_the_command_and_the_extras(wheel: zipfile.ZipFile) -> None:
    """``oblivion`` is installed as a command; the core needs only chromadb, numpy,
    tiktoken and fastembed, and each adapter's frameworks come with its extra."""
    assert "oblivion = oblivion_core.cli:main" in _metadata(wheel, "entry_points.txt")
    meta = Parser().parsestr(_metadata(wheel, "METADATA"))
    assert meta["Name"] == "oblivion-memory"
    assert meta["Requires-Python"] == ">=3.10"
    assert {"langchain", "llamaindex", "all", "test"} <= set(meta.get_all("Provides-Extra"))
    requires: dict[str, set[str]] = {}  # extra ("" for the core) -> the names it needs
    for requirement in meta.get_all("Requires-Dist"):
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        extra = re.search(r'extra == "([^"]+)"', requirement)
        assert name is not None, requirement
        requires.setdefault(extra.group(1) if extra else "", set()).add(name.group(0))
    assert requires[""] == {"chromadb", "numpy", "tiktoken", "fastembed"}
    assert {"langchain-core", "langgraph"} <= requires["langchain"]
    assert "llama-index-core" in requires["llamaindex"]
