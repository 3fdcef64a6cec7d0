"""The `oblivion` command line: what `demo --plot` writes and reports, one-line errors for
unusable paths, and `stats`, `records` and `history`, which read a store without making
or repairing anything."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import chromadb
import pytest

import oblivion_core
from oblivion_core import Oblivion, VectorStore
from oblivion_core.cli import main
from oblivion_core.state import StateDB
from oblivion_core.testing import HashEmbedder, word_count


def _store(path: Path, vector_store: VectorStore | None = None, n: int = 3) -> None:
    with Oblivion(
        path, vector_store=vector_store, embedder=HashEmbedder(), token_counter=word_count
    ) as mem:
        mem.remember_many([f"memory number {i}" for i in range(n)])


def _elsewhere(tmp_path: Path) -> VectorStore:
    """A store's vectors outside its folder (a Chroma server, simulated on disk)."""
    return VectorStore(chromadb.PersistentClient(path=str(tmp_path / "server")), prefix="app")


def test_demo_plot_without_a_suffix_reports_the_png_written(tmp_path: Path) -> None:
    """`--plot NAME` writes NAME.png, and that is the path reported and returned."""
    from oblivion_core.demo import run_demo

    lines: list[str] = []
    result = run_demo(
        tmp_path / "store", plot=tmp_path / "act", embedder=HashEmbedder(), out=lines.append
    )
    assert result.plot == tmp_path / "act.png" and result.plot.is_file()
    assert lines[-1] == f"Activation plot written to {tmp_path / 'act.png'}"
    assert not (tmp_path / "act").exists()
    again = run_demo(
        tmp_path / "store", plot=tmp_path / "dot.", embedder=HashEmbedder(), out=lines.append
    )
    assert again.plot == tmp_path / "dot.png" and again.plot.is_file()


def test_the_demo_s_store_reopened_is_as_the_demo_left_it(tmp_path: Path) -> None:
    """The demo's simulated weeks end now: its store opened afterwards on the wall clock
    (as `oblivion stats`, `records` and `recall` open it) reads the activations the demo
    ended with (its last three days' decay due for archiving, not all of it: 56 of 64
    active memories were, after 56 years of decay from a clock at 0)."""
    import time

    from oblivion_core.demo import run_demo

    run_demo(tmp_path / "store", plot=tmp_path / "act.png", embedder=HashEmbedder(), out=print)
    with Oblivion(tmp_path / "store", embedder=HashEmbedder()) as mem:
        assert abs(mem.stats()["now"] - time.time()) < 3_600
        plan = mem.maintain(dry_run=True)
        assert len(plan.ids("archive")) < plan.active_before // 4
        best = mem.records(order="activation", limit=1)[0]
        assert best.activation > 0.9  # the day-1 instructions, confirmed along the way


def test_demo_plot_into_an_existing_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`oblivion demo --plot DIR` (the real model) writes DIR/activation.png, not DIR.png."""
    (tmp_path / "plots").mkdir()
    assert main(["demo", "--path", str(tmp_path / "store"), "--plot", str(tmp_path / "plots")]) == 0
    assert (tmp_path / "plots" / "activation.png").is_file()
    assert f"written to {tmp_path / 'plots' / 'activation.png'}" in capsys.readouterr().out
    assert not (tmp_path / "plots.png").exists()


@pytest.mark.parametrize(
    ("path", "plot", "error", "advice"),
    [
        ("afile/store", None, "StorePathError", "pass --path to"),
        ("/proc/oblivion-demo", None, "StorePathError", "pass --path to"),
        ("store", "p.xyz", "InvalidInputError", ".png"),
        ("store", "p.pgf", "InvalidInputError", ".png"),  # needs LaTeX: failed after the run
        ("store", "afile/p.png", "InvalidInputError", "pass --plot a file in a folder"),
    ],
)
def test_demo_refuses_an_unusable_path_or_plot_in_one_line_before_running(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    path: str,
    plot: str | None,
    error: str,
    advice: str,
) -> None:
    """A store path or a plot target that cannot be written is reported in one line (status
    1) before the demo streams anything: no store is made, nothing is printed."""
    (tmp_path / "afile").write_text("x")
    argv = ["demo", "--path", str(tmp_path / path)]
    assert main(argv + (["--plot", str(tmp_path / plot)] if plot else [])) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"oblivion demo: {error}: ") and advice in captured.err
    assert captured.err.count("\n") == 1 and captured.out == ""
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize("vectors", ["chroma folder", "elsewhere"])
def test_stats_refuses_an_empty_activation_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], vectors: str
) -> None:
    """A truncated oblivion.sqlite3 is refused (restore it from a backup), neither given a
    fresh schema nor deleted."""
    state = tmp_path / "state"
    _store(state, None if vectors == "chroma folder" else _elsewhere(tmp_path))
    (state / StateDB.FILE).write_bytes(b"")
    before = sorted(os.listdir(state))
    assert main(["stats", str(state)]) == 1
    assert (state / StateDB.FILE).stat().st_size == 0
    assert sorted(os.listdir(state)) == before
    err = capsys.readouterr().err
    assert "StoreCorruptError" in err and "restore it from a backup" in err


def test_stats_reads_a_store_whose_vectors_are_elsewhere_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """stats reads the activation database alone: a store whose vectors are on a server
    (here another folder) is read without a chroma/ folder being made in PATH or every
    vector copied into it, and nothing is written where its vectors are."""
    state = tmp_path / "state"
    _store(state, _elsewhere(tmp_path), n=4)
    before = sorted(os.listdir(state)), sorted(os.listdir(tmp_path / "server"))
    assert main(["stats", str(state)]) == 0
    assert '"memories": 4' in capsys.readouterr().out
    assert (sorted(os.listdir(state)), sorted(os.listdir(tmp_path / "server"))) == before


@pytest.mark.parametrize("command", ["stats", "records", "history"])
def test_a_read_command_lets_go_of_the_store_before_it_writes_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """`oblivion history PATH | less` held the store's lock while the pager waited (the
    pipe full, every write blocked), and an app starting meanwhile was refused with "lets
    go within seconds". The output is written once the store is closed: an app opening
    the store at the first write finds it free."""
    state = tmp_path / "state"
    _store(state, n=3)
    opened: list[bool] = []

    class Pager:
        def write(self, text: str) -> int:
            if not opened:
                with Oblivion(state, embedder=HashEmbedder(), token_counter=word_count):
                    opened.append(True)
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", Pager())
    assert main([command, str(state)]) == 0
    assert opened == [True]


@pytest.mark.parametrize("command", ["stats", "records", "history"])
def test_reading_a_store_of_an_older_schema_leaves_it_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """The app that wrote it may still be on the older Oblivion, which refuses a store
    upgraded by a newer one: a read command reads an upgraded copy and says so."""
    from .test_journal_by_namespace import _as_version_5

    state = tmp_path / "state"
    _store(state, n=3)
    _as_version_5(state)
    db = state / StateDB.FILE
    before = db.read_bytes()
    assert main([command, str(state)]) == 0
    out, err = capsys.readouterr()
    assert "older Oblivion (schema 5)" in err and "leaving the store as it is" in err
    assert out.strip()
    assert db.read_bytes() == before
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            "5",
        )
    finally:
        conn.close()


def test_stats_puts_nothing_back_into_an_emptied_chroma_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Opening the store puts lost vectors back; stats only reads."""
    state = tmp_path / "state"
    _store(state, n=3)
    shutil.rmtree(state / "chroma")
    (state / "chroma").mkdir()
    assert main(["stats", str(state)]) == 0
    assert '"memories": 3' in capsys.readouterr().out
    assert list((state / "chroma").iterdir()) == []


@pytest.mark.server
def test_stats_reads_a_store_on_a_chroma_server(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], chroma_server: tuple[str, int]
) -> None:
    """`oblivion stats PATH` of a store whose vectors are on a server: no server needed,
    nothing made on it."""
    host, port = chroma_server
    prefix = "cli-" + uuid.uuid4().hex[:8]
    state = tmp_path / "state"
    _store(state, VectorStore.server(host, port, prefix=prefix), n=4)
    client = chromadb.HttpClient(host=host, port=port)
    before = sorted(c.name for c in client.list_collections())
    assert main(["stats", str(state)]) == 0
    assert '"memories": 4' in capsys.readouterr().out
    assert sorted(c.name for c in client.list_collections()) == before
    assert not (state / "chroma").exists()


def test_stats_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    """`oblivion stats PATH | head` whose reader is gone: no BrokenPipeError traceback."""
    _store(tmp_path / "state")
    proc = subprocess.Popen(
        [sys.executable, "-m", "oblivion_core.cli", "stats", str(tmp_path / "state")],
        cwd=Path(oblivion_core.__file__).parents[1],  # this checkout's oblivion_core
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader exits before the command writes
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1
    assert "BrokenPipeError" not in err and "Traceback" not in err


def test_an_app_opening_a_store_a_command_reads_is_told_to_open_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`oblivion records PATH` of a closed store holds its lock while it reads (seconds at
    20k memories): an app starting then was refused with advice for two apps on one
    path. The lock names its holder: the app is told which command holds it and to open
    again in a moment; an app holding it is named as a process, with the old advice."""
    from oblivion_core import state as state_module

    _store(tmp_path / "state")
    script = (
        "import sys\n"
        "from oblivion_core import Oblivion, StoreLockedError\n"
        "from oblivion_core.testing import HashEmbedder\n"
        "try:\n"
        "    Oblivion(sys.argv[1], embedder=HashEmbedder())\n"
        "except StoreLockedError as exc:\n"
        "    print(exc)\n"
    )

    def refusal() -> str:
        return subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "state")],
            cwd=Path(oblivion_core.__file__).parents[1],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout

    monkeypatch.setattr(state_module, "LOCK_HOLDER", "oblivion records")
    with Oblivion(tmp_path / "state", embedder=HashEmbedder(), token_counter=word_count):
        said = refusal()
    assert f"process {os.getpid()} (oblivion records)" in said
    assert "within seconds, open it again" in said
    monkeypatch.setattr(state_module, "LOCK_HOLDER", None)
    with Oblivion(tmp_path / "state", embedder=HashEmbedder(), token_counter=word_count):
        said = refusal()
    assert f"process {os.getpid()} (" in said and "give each process its own path" in said


def test_stats_shows_every_namespace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Memories kept per user (the middleware's namespaces): stats printed the default
    namespace's zeros, with no hint of the others. Without --namespace it prints each
    namespace's; with it, that one's."""
    import json

    state = tmp_path / "state"
    with Oblivion(state, embedder=HashEmbedder(), token_counter=word_count) as mem:
        mem.remember_many(["Sam likes tea", "Sam lives in Leeds"], namespace="sam")
    assert main(["stats", str(state)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"default", "sam"}
    assert (out["default"]["memories"], out["sam"]["memories"]) == (0, 2)
    assert main(["stats", str(state), "--namespace", "sam"]) == 0
    assert json.loads(capsys.readouterr().out)["memories"] == 2


def test_stats_of_a_store_open_in_a_running_process_reads_a_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store a running app holds (its lock taken) was refused; stats now reads a copy of
    what the app has written, says so on stderr, and leaves the app's store as it was:
    the app keeps its lock and goes on writing, and nothing is left behind."""
    state = tmp_path / "state"
    with Oblivion(state, embedder=HashEmbedder(), token_counter=word_count) as mem:
        mem.remember("written before stats reads the store")
        mem.remember("in another namespace", namespace="sam")
        files = sorted(p.name for p in state.iterdir())
        assert main(["stats", str(state)]) == 0
        captured = capsys.readouterr()
        out = json.loads(captured.out)
        assert {ns: s["memories"] for ns, s in out.items()} == {"default": 1, "sam": 1}
        assert "open in a running process; read a copy" in captured.err
        assert sorted(p.name for p in state.iterdir()) == files
        mem.remember("written after")  # the app still holds and writes its store
        assert mem.count() == 2
        assert main(["stats", str(state), "--namespace", "default"]) == 0
        assert json.loads(capsys.readouterr().out)["memories"] == 2


class _NamedWords:
    """A token counter with a name: the store keeps its counts."""

    cache_key = "words:v1"

    def __call__(self, text: str) -> int:
        return len(text.split())


def test_stats_keeps_the_token_counts_of_the_stores_own_counter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """stats opened the store with the default counter, which renamed the store's counter
    and cleared every kept count (the app then counted each text again); it keeps them."""
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=_NamedWords()) as mem:
        mem.remember_many([f"memory number {i} about the shed" for i in range(5)])
    db = tmp_path / StateDB.FILE

    def kept() -> tuple[object, list[object]]:
        with contextlib.closing(sqlite3.connect(db)) as conn:
            name = conn.execute(
                "SELECT value FROM meta WHERE key=?", (StateDB.TOKEN_COUNTER,)
            ).fetchone()
            return name, [t for (t,) in conn.execute("SELECT tokens FROM memories ORDER BY id")]

    before = kept()
    assert None not in before[1]
    assert main(["stats", str(tmp_path)]) == 0
    assert '"memories": 5' in capsys.readouterr().out
    assert kept() == before


def test_stats_leaves_an_edits_resync_note_for_the_real_vector_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record an edit left wrong in Chroma is written again when the app next loads the
    namespace; stats, which opens no vector store, used to take the note for done."""
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        mem.remember("The office is in Leeds.", id="office", supersede=False)
        wrong = HashEmbedder().embed_documents(["Quarterly budget review"])
        mem.store.collection("default").upsert(
            ids=["office"], documents=["Quarterly budget review"], embeddings=wrong
        )
        mem._sync.note("default", ["office"])  # as a failed put-back leaves it
    assert main(["stats", str(tmp_path)]) == 0
    capsys.readouterr()
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        mem.records()  # loads the namespace: the note is acted on
        got = mem.store.collection("default").get(ids=["office"], include=["documents"])
        assert got["documents"] == ["The office is in Leeds."]


def _lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def test_history_prints_a_memorys_journal_as_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`oblivion history PATH ID` prints each recorded change of the memory, oldest
    first, one JSON object per line, as `Oblivion.history` returns them."""
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        kept = mem.remember("The launch moved to Friday.", namespace="ana")
        mem.remember("Tea, no sugar.", namespace="ana")
        mem.recall("when is the launch", namespace="ana")
        mem.confirm(kept.id, namespace="ana")
        expected = [dataclasses.asdict(e) for e in mem.history(kept.id, namespace="ana")]
    assert main(["history", str(tmp_path), kept.id, "--namespace", "ana"]) == 0
    got = _lines(capsys.readouterr().out)
    assert got == json.loads(json.dumps(expected))
    assert got[0]["kind"] == "remember" and got[-1]["kind"] == "confirm"
    assert {e["memory_id"] for e in got} == {kept.id}


def test_history_of_a_namespace_and_its_newest_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without an id it prints the namespace's journal; ``--last N`` only its newest N
    entries, still oldest first."""
    _store(tmp_path, n=4)
    assert main(["history", str(tmp_path)]) == 0
    every = _lines(capsys.readouterr().out)
    assert [e["kind"] for e in every].count("remember") == 4
    assert [e["seq"] for e in every] == sorted(e["seq"] for e in every)
    assert main(["history", str(tmp_path), "--last", "2"]) == 0
    assert _lines(capsys.readouterr().out) == every[-2:]


@pytest.mark.parametrize("command", ["records", "history"])
def test_an_empty_default_namespace_names_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A store of per-user namespaces read without --namespace printed nothing, with
    status 0, as if it held nothing: a note on stderr names its namespaces; stdout stays
    the (empty) answer, for a pipe."""
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        mem.remember("alice likes tea", namespace="alice")
        mem.remember("bob likes coffee", namespace="bob")
    assert main([command, str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"oblivion {command}: the default namespace 'default' is empty; this store's other "
        "namespaces: 'alice', 'bob' (pass --namespace)\n"
    )
    assert main([command, str(tmp_path), "--namespace", "alice"]) == 0
    captured = capsys.readouterr()
    assert "alice" in captured.out and captured.err == ""
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        mem.remember("a note in the default namespace")
    # nothing on that page (or of that tier), but the namespace is not empty: no note
    what = ["--offset", "5"] if command == "records" else ["no-such-id"]
    main([command, str(tmp_path), *what])
    assert "is empty" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "error", "says"),
    [
        (["no-such-id"], "UnknownMemoryError", "no journal entries of a memory 'no-such-id'"),
        (
            ["--namespace", "bob"],
            "UnknownNamespaceError",
            "namespace 'bob' has no memories yet (known namespaces: 'default'): check --namespace",
        ),
        (["--last", "0"], "InvalidInputError", "--last must be a whole number >= 1, got 0"),
    ],
)
def test_history_refuses_what_it_cannot_show_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], error: str, says: str
) -> None:
    """An unknown id or namespace, or a count below 1, is one line on stderr naming what
    to change, and exit status 1."""
    _store(tmp_path)
    assert main(["history", str(tmp_path), *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"oblivion history: {error}: ") and says in line


def test_history_and_records_of_a_store_open_in_a_running_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """history and records read a running app's store from a copy too: its journal and
    memories as the app wrote them (a recall's boosts once written), and the app keeps
    working."""
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        kept = mem.remember("kept while history reads the store")
        mem.recall("what is kept?")
        with mem._lock:  # the recall's boost applied and written, as within a second
            mem._db.flush()
        assert main(["history", str(tmp_path), kept.id]) == 0
        captured = capsys.readouterr()
        assert [e["kind"] for e in _lines(captured.out)] == ["remember", "recall"]
        assert "open in a running process" in captured.err
        assert main(["records", str(tmp_path)]) == 0
        (row,) = _lines(capsys.readouterr().out)
        assert row["id"] == kept.id and row["access_count"] == 1
        assert mem.count() == 1
        mem.forget(kept.id)
        assert mem.count() == 0


def test_records_prints_the_memories_most_active_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`oblivion records PATH --order activation --limit N` prints the N most active
    memories, one JSON object per line, as `Oblivion.records` returns them (the tier by
    its label); without options, every memory oldest first."""
    with Oblivion(tmp_path, embedder=HashEmbedder(), token_counter=word_count) as mem:
        mem.remember("ok cool", category="small_talk", namespace="ana")
        kept = mem.remember("Never call before 10am.", category="instruction", namespace="ana")
        mem.remember("The office is in Leeds.", category="fact", namespace="ana")
        expected = mem.records(namespace="ana", order="activation", limit=2)
        written = [r.id for r in mem.records(namespace="ana")]
    args = ["records", str(tmp_path), "--namespace", "ana"]
    assert main([*args, "--order", "activation", "--limit", "2"]) == 0
    got = _lines(capsys.readouterr().out)
    assert [r["id"] for r in got] == [r.id for r in expected]
    assert got[0]["id"] == kept.id and got[0]["tier"] == "active"
    assert got[0]["activation"] == pytest.approx(expected[0].activation)
    assert main(args) == 0
    assert [r["id"] for r in _lines(capsys.readouterr().out)] == written


@pytest.mark.parametrize(
    ("args", "error", "says"),
    [
        (
            ["--namespace", "bob"],
            "UnknownNamespaceError",
            "namespace 'bob' has no memories yet (known namespaces: 'default'): check --namespace",
        ),
        (["--limit", "0"], "InvalidInputError", "--limit must be a whole number >= 1, got 0"),
        (["--offset", "-2"], "InvalidInputError", "--offset must be a whole number >= 0"),
    ],
)
def test_records_refuses_what_it_cannot_show_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], error: str, says: str
) -> None:
    """An unknown namespace or a bad page is one line on stderr naming what to change,
    and exit status 1."""
    _store(tmp_path)
    assert main(["records", str(tmp_path), *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"oblivion records: {error}: ") and says in line


def test_the_installed_command_prints_a_history(tmp_path: Path) -> None:
    """The console script runs `history` end to end in a process of its own."""
    _store(tmp_path, n=2)
    done = subprocess.run(
        [sys.executable, "-m", "oblivion_core.cli", "history", str(tmp_path), "--last", "1"],
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["kind"] == "remember"


def test_backup_of_a_closed_store_prints_the_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`oblivion backup PATH FOLDER` copies a closed store into FOLDER and prints the
    copy's database; the copy opens with every memory, the original is unchanged."""
    _store(tmp_path / "store", n=4)
    assert main(["backup", str(tmp_path / "store"), str(tmp_path / "copy")]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == str(tmp_path / "copy" / StateDB.FILE)
    assert captured.err == ""
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == [StateDB.FILE]
    for path in ("store", "copy"):
        with Oblivion(tmp_path / path, embedder=HashEmbedder(), token_counter=word_count) as mem:
            assert sorted(r.text for r in mem.records()) == [f"memory number {i}" for i in range(4)]


def test_backup_of_a_store_open_in_a_running_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A running app's store is copied through a read-only connection: what the app has
    written, said on stderr; the app keeps its lock and goes on."""
    state = tmp_path / "state"
    with Oblivion(state, embedder=HashEmbedder(), token_counter=word_count) as mem:
        kept = mem.remember("written before the backup", namespace="sam")
        assert main(["backup", str(state), str(tmp_path / "copy")]) == 0
        captured = capsys.readouterr()
        assert captured.out.strip() == str(tmp_path / "copy" / StateDB.FILE)
        assert "open in a running process; copied what it has written" in captured.err
        mem.remember("written after the backup", namespace="sam")
        assert mem.count(namespace="sam") == 2
    with Oblivion(tmp_path / "copy", embedder=HashEmbedder(), token_counter=word_count) as copy:
        assert [r.id for r in copy.records(namespace="sam")] == [kept.id]
        assert copy.recall("before the backup", namespace="sam").items[0].id == kept.id


@pytest.mark.parametrize(
    ("where", "error", "says"),
    [
        ("full", "InvalidInputError", "is not empty"),
        ("nowhere", "StorePathError", "there is no Oblivion store"),
    ],
)
def test_backup_refuses_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, error: str, says: str
) -> None:
    """A folder that holds files, or a path with no store: one line naming what to change,
    exit status 1, and nothing written."""
    _store(tmp_path / "store")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    source = tmp_path / ("store" if where == "full" else "nowhere")
    target = tmp_path / ("full" if where == "full" else "copy")
    assert main(["backup", str(source), str(target)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"oblivion backup: {error}: ") and says in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "store"]
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("command", ["stats", "records", "history", "backup"])
def test_a_folder_holding_an_unfinished_backup_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """It said "there is no Oblivion store ...; check the path", of a path that is right."""
    folder = tmp_path / "backup"
    folder.mkdir()
    (folder / (StateDB.FILE + ".partial")).write_bytes(b"")
    args = [command, str(folder)] + ([str(tmp_path / "copy")] if command == "backup" else [])
    assert main(args) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "StorePathError" in line and "unfinished backup" in line
    assert not (tmp_path / "copy").exists()


def _files(folder: Path) -> dict[str, int]:
    """Every file under ``folder`` (SQLite's -wal and -shm aside) by its size (the lock
    file's 0: it names whoever opened the store last)."""
    return {
        str(p.relative_to(folder)): 0 if p.name == "oblivion.lock" else p.stat().st_size
        for p in folder.rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


@pytest.mark.integration
def test_recall_shows_what_the_app_would_recall_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], real_embedder: Any
) -> None:
    """`oblivion recall PATH QUERY` ranks as the engine does, with each item's why, from
    a copy: the store's memories, journal and files are as they were."""
    texts = [
        "The launch moved to 28 March.",
        "Please call me Dee.",
        "I take my coffee black.",
        "The office is in Leeds.",
    ]
    with Oblivion(tmp_path / "store", embedder=real_embedder) as mem:
        mem.remember_many(texts)
        before = [(r.id, r.activation, r.access_count) for r in mem.records()]
        journal = mem.history()
    files = _files(tmp_path / "store")
    assert main(["recall", str(tmp_path / "store"), "When is the launch?", "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("recall 'When is the launch?' in 'default': 2 item(s)")
    assert "1. " in out and "The launch moved to 28 March." in out.splitlines()[1]
    assert "ranked 1 of" in out
    assert main(["recall", str(tmp_path / "store"), "What is my name?", "--json"]) == 0
    rows = _lines(capsys.readouterr().out)
    assert rows[0]["text"] == "Please call me Dee." and rows[0]["tier"] == "active"
    assert {"relevance", "activation", "score", "tokens", "why"} <= rows[0].keys()
    assert _files(tmp_path / "store") == files
    with Oblivion(tmp_path / "store", embedder=real_embedder) as mem:
        # (a wall clock: a few seconds of decay on a busy machine move the sixth digit;
        # a recall's boost, a hundredth or more, would move the second)
        assert [(r.id, r.activation, r.access_count) for r in mem.records()] == [
            (i, pytest.approx(a, rel=1e-4), n) for i, a, n in before
        ]
        assert mem.history() == journal
        ranked = mem.recall("What is my name?", feedback=False)
        assert [r["id"] for r in rows] == [i.id for i in ranked]


@pytest.mark.integration
def test_recall_of_a_running_apps_store_searches_its_archive_in_process(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    real_embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store a running app holds is read from a copy (said on stderr), which has no
    vector store: its archive is searched in process whatever its size (here the
    thresholds are 0, so the app itself would ask Chroma). The query shares no word
    with the archived memory, so BM25 cannot find it instead."""
    from oblivion_core import ManualClock

    clock = ManualClock()
    with Oblivion(tmp_path / "store", embedder=real_embedder, clock=clock) as mem:
        old = mem.remember("Lovely weather for the picnic today!", category="small_talk")
        mem.remember_many([f"Ticket {i} was closed by the support team." for i in range(8)])
        clock.advance(90 * 86_400.0)
        mem.maintain()
        assert mem.get(old.id).tier.label == "archive"
        monkeypatch.setattr(Oblivion, "EXACT_ARCHIVE_ROWS", 0)
        monkeypatch.setattr(Oblivion, "SKETCH_ARCHIVE_ROWS", 0)
        args = ["recall", str(tmp_path / "store"), "Was it sunny at our outdoor lunch?", "--deep"]
        assert main([*args, "--json", "--k", "1"]) == 0
        captured = capsys.readouterr()
        (row,) = _lines(captured.out)
        assert (row["id"], row["tier"]) == (old.id, "archive")
        assert "open in a running process; read a copy of what it has written" in captured.err
        assert mem.get(old.id).tier.label == "archive"  # the app's store: not promoted


@pytest.mark.parametrize(
    ("args", "error", "says"),
    [
        (
            ["--namespace", "bob"],
            "UnknownNamespaceError",
            "namespace 'bob' has no memories yet (known namespaces: 'default'): check --namespace",
        ),
        (["--k", "0"], "InvalidInputError", "--k must be a whole number >= 1"),
        (
            ["--token-budget", "-1"],
            "InvalidInputError",
            "--token-budget must be a whole number >= 0",
        ),
    ],
)
def test_recall_refuses_what_it_cannot_answer_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], error: str, says: str
) -> None:
    _store(tmp_path)
    assert main(["recall", str(tmp_path), "anything", *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"oblivion recall: {error}: ") and says in line


@pytest.mark.parametrize("query", ["", "   "])
def test_recall_of_an_empty_query_says_to_give_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], query: str
) -> None:
    """An empty query was refused with the engine's advice, which names recall()'s
    ``standing=`` (no flag of the command); it asks for the words to search for."""
    _store(tmp_path)
    assert main(["recall", str(tmp_path), query]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("oblivion recall: InvalidInputError: the query is empty")
    assert "standing" not in line


def test_recall_of_a_store_written_with_another_model_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The store's vectors have another size than the local model's: one line saying
    what to pass."""
    with Oblivion(tmp_path, embedder=HashEmbedder(dim=64), token_counter=word_count) as mem:
        mem.remember("A memory embedded by some other model.")
    assert main(["recall", str(tmp_path), "anything"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("oblivion recall: ModelMismatchError: ") and "64-d" in line
    assert "another embedder" in line and "feedback=False" in line
    assert main(["recall", str(tmp_path), "anything", "--model", str(tmp_path / "nowhere")]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("oblivion recall: EmbeddingError: ") and "is not a directory" in line


def test_the_demo_replaces_its_store_from_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`oblivion demo --path .` run from inside the demo's folder (to look at its plot)
    deleted everything, then failed removing the working directory itself, leaving the
    folder empty. What the folder holds is replaced; the folder stays."""
    from oblivion_core.demo import MARKER, _fresh_dir

    folder = tmp_path / "oblivion-demo"
    (folder / "chroma").mkdir(parents=True)
    (folder / "chroma" / "data.bin").write_bytes(b"old")
    (folder / "activation.png").write_bytes(b"png")
    (folder / MARKER).write_text("made by `oblivion demo`\n")
    monkeypatch.chdir(folder)
    _fresh_dir(Path("."))
    assert sorted(p.name for p in folder.iterdir()) == [MARKER]


def test_ctrl_c_is_one_line_and_status_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Ctrl-C in a long command (an import, the demo) printed a Python traceback; it is
    one line on stderr and the shell's status for an interrupt."""
    import oblivion_core.cli as cli

    def interrupted(args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_run", interrupted)
    assert main(["stats", str(tmp_path)]) == 130
    assert capsys.readouterr().err == "oblivion stats: interrupted\n"
