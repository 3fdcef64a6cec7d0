"""The README's core examples run as written: the real model, Chroma on disk, and a real
``chroma run`` server for the server example (``tests/_readme.py`` reads them from
README.md). The adapters' examples run in ``tests/langchain`` and ``tests/llamaindex``.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import chromadb
import pytest
from _readme import README, examples

from oblivion_core import Oblivion

# Each README section's examples, each run by a test_readme.py: an example added to the
# README without a test, or one removed, fails test_every_example_has_a_test.
TESTED = {"Core in 10 lines": 1, "Using the engine": 3, "LangChain / LangGraph": 4, "LlamaIndex": 4}


def test_every_example_has_a_test() -> None:
    """Each README section holds the examples its test_readme.py runs, no more."""
    counts: dict[str, int] = {}
    for example in examples():
        counts[example.section] = counts.get(example.section, 0) + 1
    assert counts == TESTED, (
        "README.md's Python examples changed: run each new one in its section's "
        "tests/*/test_readme.py, then update TESTED"
    )


def test_examples_are_read_with_their_lines() -> None:
    """An example's line number is where its code starts in README.md."""
    lines = Path(__file__).resolve().parents[2].joinpath("README.md").read_text().splitlines()
    for example in examples():
        first = example.code.splitlines()[0]
        assert lines[example.line - 1] == first
        assert lines[example.line - 2] == "```python"


def test_the_calls_table_lists_every_public_method() -> None:
    """README's "The calls" names every public method of ``Oblivion``: one added to the
    engine without a row fails here, as does a row for one that is gone."""
    text = README.read_text(encoding="utf-8")
    table = text[text.index("### The calls") : text.index("### Standing instructions")]
    named = set(re.findall(r"`([a-z_]+)\(", table))
    public = {
        name
        for name, value in vars(Oblivion).items()
        if not name.startswith("_") and inspect.isfunction(value)
    }
    assert named == public


def test_the_code_table_names_every_core_module() -> None:
    """README's "Where the code is" names every module of ``oblivion_core``, and only
    those: a file added without a row, or a row for a file gone, fails here."""
    text = README.read_text(encoding="utf-8")
    table = text[text.index("### Where the code is") : text.index("CI (`.ci/run`) installs")]
    named = set(re.findall(r"`(\w+\.py|\w+/)`", table))
    package = Path(__file__).resolve().parents[2] / "oblivion_core"
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    modules |= {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").exists()}
    assert named == modules


@pytest.mark.integration
def test_core_in_10_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first example prints the instruction first with its why, then the plan; the
    store it closed reopens with both memories and the "used" boost."""
    monkeypatch.chdir(tmp_path)
    examples("Core in 10 lines")[0].run({})
    out = capsys.readouterr().out.splitlines()
    # the instruction answers the spelling question first, with its why
    assert out[0].startswith("Always answer in British English. active ")
    assert out[1].strip().startswith("ranked 1 of 2:")
    assert "instruction memory from the active tier" in out[1]
    # the paragraph below the example quotes that explanation as printed
    quoted = " ".join(README.read_text(encoding="utf-8").split())
    assert f'(`why["explanation"]` in words: "{out[1].strip()}")' in quoted
    assert out[-1].startswith("[default] dry run:")
    # the `with` closed the store: it reopens with both memories and the "used" boost
    with Oblivion(tmp_path / "memory") as mem:
        assert mem.count() == 2
        (hit,) = mem.recall("British English", k=1)
        assert hit.text == "Always answer in British English."
        assert "used" in [event.kind for event in mem.history(hit.id)]


@pytest.mark.integration
@pytest.mark.server
def test_chroma_server_example(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    own_chroma_server: tuple[str, int, object],
) -> None:
    """The server example, pointed at a real ``chroma run``: memories go to the server,
    the activation state to the local folder."""
    host, port, _ = own_chroma_server
    monkeypatch.chdir(tmp_path)
    example = examples("Using the engine")[0]
    code = example.code.replace('"chroma.internal", 8000', f'"{host}", {port}')
    assert code != example.code, "the example no longer names chroma.internal:8000"
    mem = example.run({}, code)["mem"]
    try:
        mem.remember("The office moved to Leeds in March.")
        assert [item.text for item in mem.recall("Where is the office?", k=1)] == [
            "The office moved to Leeds in March."
        ]
        assert mem.stats()["memories"] == 1
    finally:
        mem.close()
    # the vectors are on the server, the activation state in the local folder
    (collection,) = chromadb.HttpClient(host=host, port=port).list_collections()
    assert collection.name.startswith("oblivion-default-")
    assert collection.count() == 1
    assert (tmp_path / "state").is_dir()


@pytest.mark.integration
@pytest.mark.server
def test_moving_a_store_to_a_server_example(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    own_chroma_server: tuple[str, int, object],
) -> None:
    """A store written on disk (the real model), moved by the example: each namespace's
    copy is printed, and the server then holds every memory."""
    host, port, _ = own_chroma_server
    monkeypatch.chdir(tmp_path)
    with Oblivion("./memory") as mem:
        mem.remember_many(["The office moved to Leeds in March.", "Refunds take five days."])
        mem.remember("Dana's sister lives in Porto.", namespace="dana")
    example = examples("Using the engine")[1]
    code = example.code.replace('"chroma.internal", 8000', f'"{host}", {port}')
    assert code != example.code, "the example no longer names chroma.internal:8000"
    example.run({}, code)
    assert sorted(capsys.readouterr().out.splitlines()) == [
        "dana {'put_back': 1, 'removed': 0}",
        "default {'put_back': 2, 'removed': 0}",
    ]
    held = {c.name: c.count() for c in chromadb.HttpClient(host=host, port=port).list_collections()}
    assert sorted(held.values()) == [1, 2]
    assert all(name.startswith("support-botoblivion-") for name in held)


@pytest.mark.integration
def test_importing_a_chroma_collection_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A collection filled as LangChain's ``Chroma`` fills one (documents embedded by the
    local model) is imported by the example as written, with its vectors."""
    from oblivion_core import FastEmbedEmbedder

    monkeypatch.chdir(tmp_path)
    texts = ["The office moved to Leeds in March.", "Refunds take five days."]
    col = chromadb.PersistentClient("./chroma_db").create_collection("langchain")
    col.add(
        ids=["a", "b"],
        embeddings=FastEmbedEmbedder().embed_documents(texts),
        documents=texts,
        metadatas=[{"source": "chat"}, {"source": "faq"}],
    )
    examples("Using the engine")[2].run({})
    assert capsys.readouterr().out.startswith(
        "imported 2 of 2 records of collection 'langchain' into namespace 'default' "
        "(with their vectors)"
    )
    with Oblivion("./memory") as mem:
        assert mem.recall("How long does a refund take?", k=1)[0].id == "b"
        assert mem.get("a").metadata == {"source": "chat"}
