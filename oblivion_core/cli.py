"""The ``oblivion`` command line: ``oblivion demo``, ``oblivion stats``, ``oblivion
records``, ``oblivion history``, ``oblivion recall``, ``oblivion backup`` and ``oblivion
import``."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from oblivion_core.errors import (
    EmbeddingError,
    InvalidInputError,
    ModelMismatchError,
    OblivionError,
    StoreCorruptError,
    StoreError,
    StoreLockedError,
    StorePathError,
    UnknownMemoryError,
    UnknownNamespaceError,
)

if TYPE_CHECKING:
    from oblivion_core.engine import Oblivion
    from oblivion_core.typing import Embedder


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``oblivion`` console script."""
    parser = argparse.ArgumentParser(prog="oblivion", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="stream the shipped conversation and explain the memory")
    demo.add_argument("--path", default="oblivion-demo", help="store directory (replaced)")
    demo.add_argument(
        "--plot",
        default=None,
        help="file for the activation plot (default PATH/activation.png): any format "
        "matplotlib writes (.png, .svg, .pdf...); a name without a suffix gets .png, an "
        "existing directory gets activation.png inside it",
    )
    stats = sub.add_parser(
        "stats", help="print stats() of every namespace of a store (or of one) as JSON"
    )
    stats.add_argument("path")
    stats.add_argument("--namespace", default=None, help="only this namespace's stats()")
    records = sub.add_parser(
        "records",
        help="print the memories of a namespace as JSON lines (oldest first, or most active)",
    )
    records.add_argument("path")
    records.add_argument(
        "--namespace", default=None, help="the namespace (default: the store's default)"
    )
    records.add_argument(
        "--order",
        choices=("written", "activation"),
        default="written",
        help="oldest first (default), or most active first",
    )
    records.add_argument(
        "--tier", choices=("active", "archive", "cold"), default=None, help="only this tier"
    )
    records.add_argument("--limit", type=int, default=None, help="at most N memories")
    records.add_argument("--offset", type=int, default=0, help="skip the first N")
    history = sub.add_parser(
        "history",
        help="print the journal of a namespace (or of one memory) as JSON lines, oldest first",
    )
    history.add_argument("path")
    history.add_argument("id", nargs="?", default=None, help="only this memory's entries")
    history.add_argument(
        "--namespace", default=None, help="the namespace (default: the store's default)"
    )
    history.add_argument("--last", type=int, default=None, help="only the newest N entries")
    recall = sub.add_parser(
        "recall",
        help="what recall() returns for a query, and why, without boosting anything "
        "(read from a copy of the store)",
    )
    recall.add_argument("path")
    recall.add_argument("query")
    recall.add_argument(
        "--namespace", default=None, help="the namespace (default: the store's default)"
    )
    recall.add_argument("--k", type=int, default=None, help="at most N items")
    recall.add_argument(
        "--token-budget", type=int, default=None, help="tokens the items may cost (tiktoken)"
    )
    recall.add_argument(
        "--deep", action="store_true", help="search the archive whatever the gate says"
    )
    recall.add_argument("--json", action="store_true", help="one JSON line per item")
    recall.add_argument(
        "--model",
        default=None,
        help="a folder holding the local model's files (all-MiniLM-L6-v2), for a machine "
        "without network access (or set OBLIVION_EMBEDDING_MODEL_PATH)",
    )
    backup = sub.add_parser(
        "backup",
        help="copy a store (open in a running app too) into a new folder, as a store of its own",
    )
    backup.add_argument("path")
    backup.add_argument("folder", help="where the copy goes: a new or empty folder")
    imp = sub.add_parser(
        "import",
        help="store every record of a Chroma collection on disk as a memory (its vectors "
        "kept when they are the local model's)",
    )
    imp.add_argument("path", help="the Oblivion store (made if new)")
    imp.add_argument("chroma", help="the folder of the Chroma database (PersistentClient's path)")
    imp.add_argument("collection", help="the collection's name")
    imp.add_argument("--namespace", default=None, help="where the memories go")
    imp.add_argument("--category", default=None, help="one category for all (else inferred)")
    imp.add_argument(
        "--where",
        default=None,
        help='only the records this Chroma metadata filter passes, as JSON: \'{"user_id": "42"}\'',
    )
    imp.add_argument(
        "--reembed", action="store_true", help="embed the texts with the local model again"
    )
    imp.add_argument(
        "--no-supersede",
        action="store_true",
        help="no stale-fact detection (documents that state nothing about the user)",
    )
    imp.add_argument(
        "--model",
        default=None,
        help="a folder holding the local model's files (or OBLIVION_EMBEDDING_MODEL_PATH)",
    )
    args = parser.parse_args(argv)
    from oblivion_core import state

    brief = args.command in ("stats", "records", "history", "recall", "backup")
    # an app opening the store meanwhile is told who holds it, and that it is brief
    holder, state.LOCK_HOLDER = state.LOCK_HOLDER, f"oblivion {args.command}" if brief else None
    try:
        status = _run(args)
        sys.stdout.flush()  # a closed pipe (`oblivion stats PATH | head`) fails here
    except UnknownNamespaceError as exc:  # the engine's advice names Python calls
        name = type(exc).__name__
        print(f"oblivion {args.command}: {name}: {exc.problem}: check --namespace", file=sys.stderr)
        return 1
    except OblivionError as exc:  # bad input or an unusable store: say what to change
        print(f"oblivion {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # as Python's docs advise: no second failure at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:  # Ctrl-C: the store closed on the way out, as it was
        print(f"oblivion {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        state.LOCK_HOLDER = holder
    return status


def _run(args: argparse.Namespace) -> int:
    _check_counts(args)
    if args.command == "demo":
        from oblivion_core.demo import run_demo

        result = run_demo(args.path, plot=args.plot)
        missed = [r["query"] for r in result.recalls if not r["hit"]]
        if missed:
            print(f"\n{len(missed)} recall(s) did not surface the newest fact: {missed}")
        return 0
    if args.command == "backup":
        return _backup(args.path, args.folder)
    if args.command == "recall":
        return _recall(args)
    if args.command == "import":
        return _import(args)
    # the output is written once the store is closed: a pager or a slow reader (`| less`,
    # `| jq`) blocks the writes, and an app starting meanwhile found the store locked
    lines: list[str] = []
    with _reading(args.path, args.command) as mem:
        if args.command == "stats":
            if args.namespace is not None:
                out = mem.stats(namespace=args.namespace)
            else:  # every namespace: the memories may all be in per-user ones
                out = {ns: mem.stats(namespace=ns) for ns in mem.namespaces()}
            lines.append(json.dumps(out, indent=2, default=str))
        elif args.command == "records":
            for record in mem.records(
                namespace=args.namespace,
                tier=args.tier,
                order=args.order,
                limit=args.limit,
                offset=args.offset,
            ):
                row = dataclasses.asdict(record) | {"tier": record.tier.label}
                lines.append(json.dumps(row, default=str))
        else:
            events = mem.history(args.id, namespace=args.namespace, last=args.last)
            if args.id is not None and not events:
                ns = args.namespace if args.namespace is not None else mem.default_namespace
                raise UnknownMemoryError(
                    f"no journal entries of a memory {args.id!r} in namespace {ns!r}; check "
                    "the id (`oblivion history PATH` lists the namespace's entries) and "
                    "--namespace"
                )
            lines += (json.dumps(dataclasses.asdict(event), default=str) for event in events)
        others = [n for n in mem.namespaces() if n != mem.default_namespace]
        if (
            args.command != "stats"
            and args.namespace is None
            and not lines
            and others
            and not mem.count()  # not a filter or a page that left nothing to print
        ):
            # a store of per-user namespaces: an empty answer, silently, read as "no data"
            named = ", ".join(repr(n) for n in others[:10]) + (", ..." if len(others) > 10 else "")
            print(
                f"oblivion {args.command}: the default namespace {mem.default_namespace!r} "
                f"is empty; this store's other namespaces: {named} (pass --namespace)",
                file=sys.stderr,
            )
    for line in lines:
        print(line)
    return 0


def _backup(path_arg: str, folder_arg: str) -> int:
    """``oblivion backup``: see :func:`_copy`."""
    from oblivion_core.backup import check_folder

    print(_copy(path_arg, check_folder(folder_arg), "backup"))
    return 0


def _copy(path_arg: str, folder: Path, command: str) -> Path:
    """Copy the store at ``path_arg`` into ``folder`` and return the copy's database: a
    closed store is opened (its lock taken, so no app opens it meanwhile) and copied by
    :meth:`Oblivion.backup`; one a running process holds is copied through a read-only
    connection (:func:`_copy_live`)."""
    try:
        with _opened(path_arg) as mem:
            return mem.backup(folder)
    except StoreLockedError:
        return _copy_live(path_arg, folder, command)


def _copy_live(path_arg: str, folder: Path, command: str, *, older: int | None = None) -> Path:
    """Copy the store at ``path_arg``, which a running process holds (or, ``older``,
    written by an older Oblivion: opening it would upgrade it), into ``folder`` through a
    read-only connection (:func:`backup.copy_live`), and say so on stderr."""
    from oblivion_core.backup import copy_live

    copy = copy_live(Path(path_arg), folder)
    done = "copied" if command == "backup" else "read a copy of"
    said = (
        f"is open in a running process; {done} what it has written (recall boosts of its "
        "last second may be missing)"
        if older is None
        else f"was written by an older Oblivion (schema {older}); read a copy, leaving the "
        "store as it is (the app's next open upgrades it)"
    )
    print(f"oblivion {command}: {path_arg!r} {said}", file=sys.stderr)
    return copy


def _recall(args: argparse.Namespace) -> int:
    """``oblivion recall``: the query recalled from a copy of the store, with every
    archive searched in process (the copy has no vector store), and nothing boosted."""
    import tempfile

    from oblivion_core.engine import Oblivion
    from oblivion_core.store import VectorStore

    if not args.query.strip():  # the engine's advice names recall()'s standing=
        raise InvalidInputError(
            "the query is empty: give the words to search for, as in "
            "oblivion recall PATH 'when is the launch?'"
        )
    embedder = _model(args.model)
    with tempfile.TemporaryDirectory(prefix="oblivion-recall-") as scratch:
        copy = _copy(args.path, Path(scratch) / "copy", "recall")
        store = VectorStore.in_memory()
        try:
            with Oblivion(copy.parent, vector_store=store, embedder=embedder) as mem:
                mem.REPAIR_ON_LOAD = False  # nothing to compare: the copy's Chroma is empty
                mem.SKETCH_ARCHIVE_ROWS = sys.maxsize  # every archive searched in process
                try:
                    result = mem.recall(
                        args.query,
                        namespace=args.namespace,
                        k=args.k,
                        token_budget=args.token_budget,
                        deep=True if args.deep else None,
                        feedback=False,
                    )
                except ModelMismatchError as exc:
                    raise ModelMismatchError(
                        f"{exc.problem}: `oblivion recall` embeds the query with the local model "
                        "(all-MiniLM-L6-v2; --model DIR reads its files from DIR); recall a "
                        "store written with another embedder in its app, with feedback=False"
                    ) from exc
        finally:
            store.close()
    if not args.json:
        print(result)
        return 0
    for item in result:
        row = dataclasses.asdict(item) | {"tier": item.tier.label}
        print(json.dumps(row, default=str))
    return 0


def _import(args: argparse.Namespace) -> int:
    """``oblivion import``: :meth:`Oblivion.import_chroma` of a collection on disk."""
    import chromadb

    from oblivion_core.checks import check_category, check_namespace
    from oblivion_core.embedding import FastEmbedEmbedder
    from oblivion_core.engine import Oblivion
    from oblivion_core.engine_import import check_import_model, check_import_where
    from oblivion_core.state import StateDB, folder_meta

    source = Path(args.chroma)
    if not (source / "chroma.sqlite3").is_file():
        raise StorePathError(
            f"there is no Chroma database in {args.chroma!r} (no chroma.sqlite3); give the "
            "folder your app passes to chromadb.PersistentClient(path=...)"
        )
    kept = folder_meta(Path(args.path), StateDB.VECTOR_STORE)
    if isinstance(kept, str) and not kept.startswith("the chroma/ folder beside it"):
        # opened here with its chroma/ folder, it would move to one (and back, later:
        # every memory copied twice)
        raise InvalidInputError(
            f"the store at {args.path!r} keeps its vectors in {kept}; `oblivion import` "
            "opens a store with its own chroma/ folder. Import from your app instead, "
            "where the store is opened with its vector store: mem.import_chroma(collection)"
        )
    try:
        client = chromadb.PersistentClient(str(source))
        names = sorted(c.name for c in client.list_collections())
    except Exception as exc:  # chromadb's own errors (a damaged file, a read-only folder)
        raise StoreError(
            f"Chroma cannot open the database in {args.chroma!r} ({type(exc).__name__}: "
            f"{str(exc)[:200]}). Check that it is a folder a Chroma app wrote, undamaged; "
            "Chroma opens it for writing, so it must be writable (import from a copy "
            "otherwise)"
        ) from exc
    if args.collection not in names:
        raise InvalidInputError(
            f"{args.chroma!r} has no collection {args.collection!r}; it has "
            f"{', '.join(map(repr, names)) or 'none'}"
        )
    where = None
    if args.where is not None:
        try:
            where = json.loads(args.where)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(
                f'--where is not JSON ({exc}); write it as \'{{"user_id": "42"}}\''
            ) from exc
    # what the import would refuse is refused before the store is opened: a new path
    # would be left a store holding nothing
    collection = client.get_collection(args.collection)
    if args.namespace is not None:
        check_namespace(args.namespace)
    if args.category is not None:
        check_category(args.category)
    if where is not None:
        check_import_where(collection, where)
    embedder = _model(args.model) or FastEmbedEmbedder()
    if not args.reembed:
        with _flag_advice():
            check_import_model(collection, embedder, where)
    try:
        opened = Oblivion(args.path, embedder=embedder)
    except StoreLockedError as exc:
        raise StoreLockedError(
            f"{exc.problem}: stop it first, or import from the app that holds it: "
            "mem.import_chroma(collection)"
        ) from exc
    with opened as mem:
        if not args.reembed:
            _check_store_model(mem)
        with _flag_advice():
            report = mem.import_chroma(
                collection,
                namespace=args.namespace,
                category=args.category,
                reembed=args.reembed,
                supersede=False if args.no_supersede else None,
                where=where,
            )
    print(report)
    return 0


#: Each command's number flags and the least each takes, checked before the engine is
#: asked (its error would name the Python argument: "limit must be an int >= 1").
_COUNTS = {
    "records": {"limit": 1, "offset": 0},
    "history": {"last": 1},
    "recall": {"k": 1, "token_budget": 0},
}


def _check_counts(args: argparse.Namespace) -> None:
    """Refuse a number flag below its least value, naming the flag."""
    for name, least in _COUNTS.get(args.command, {}).items():
        value = getattr(args, name)
        if value is not None and value < least:
            raise InvalidInputError(
                f"--{name.replace('_', '-')} must be a whole number >= {least}, got {value}"
            )


def _check_store_model(mem: Oblivion) -> None:
    """The store's own vectors checked against the model the command opened it with
    (the import's vectors are compared with that model: another one's store would take
    them as its own), with the advice of a flag."""
    try:
        mem._check_model()
    except ModelMismatchError as exc:
        raise ModelMismatchError(
            f"{exc.problem}: open it with the model that made them, --model DIR (its "
            "folder of model.onnx and tokenizer.json), or import from the app that uses "
            "the store: mem.import_chroma(collection)"
        ) from exc


@contextlib.contextmanager
def _flag_advice() -> Iterator[None]:
    """The engine's advice for another model's vectors, which names Python arguments,
    given as the command's flags."""
    try:
        yield
    except ModelMismatchError as exc:
        raise ModelMismatchError(
            f"{exc.problem}: add --reembed to embed its texts with the store's model, or "
            "--model DIR to open the store with the model that made them (its folder of "
            "model.onnx and tokenizer.json)"
        ) from exc


def _model(path: str | None) -> Embedder | None:
    """The local model read from ``--model DIR`` (``None``: the default), checked here
    so that the error names the flag."""
    from oblivion_core.embedding import FastEmbedEmbedder

    if path is None:
        return None
    if not Path(path).is_dir():
        raise EmbeddingError(
            f"--model {path!r} is not a directory; give the folder holding the model's "
            "model.onnx and tokenizer.json, or leave --model out for the default model"
        )
    return FastEmbedEmbedder(model_path=path)


@contextlib.contextmanager
def _reading(path_arg: str, command: str) -> Iterator[Oblivion]:
    """The store at ``path_arg`` opened to read its activation database alone (see
    :func:`_opened`). A store a running process holds open is read from a copy of its
    database taken now (:func:`_copy_live`), which lacks at most the last second of that
    process's recall boosts."""
    import tempfile

    older = _older_schema(Path(path_arg))
    if older is None:
        with contextlib.ExitStack() as stack:
            try:
                mem = stack.enter_context(_opened(path_arg))
            except StoreLockedError:
                pass  # (an error of the caller's, after the yield, is not caught here)
            else:
                yield mem
                return
    with tempfile.TemporaryDirectory(prefix="oblivion-read-") as scratch:
        # locked: no retry; older: opening it would upgrade it, and the older Oblivion
        # of the app that wrote it would then refuse it, so a copy is upgraded instead
        copy = _copy_live(path_arg, Path(scratch) / "copy", command, older=older)
        with _opened(str(copy.parent)) as mem:
            yield mem


def _older_schema(path: Path) -> int | None:
    """The schema version of the store at ``path`` when it is older than this
    Oblivion's, read through a read-only connection; ``None`` otherwise (or when it
    cannot be read: opening the store then says what is wrong)."""
    import json
    import sqlite3

    from oblivion_core.state import SCHEMA_VERSION, StateDB

    db = path / StateDB.FILE
    if not db.is_file() or db.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        finally:
            conn.close()
        version = json.loads(row[0]) if row else None
    except (sqlite3.Error, ValueError):
        return None
    if isinstance(version, bool) or not isinstance(version, int):
        return None
    return version if version < SCHEMA_VERSION else None


@contextlib.contextmanager
def _opened(path_arg: str) -> Iterator[Oblivion]:
    """The store at ``path_arg`` opened to read its activation database alone: the
    vector store (a chroma/ folder, a server) is not opened, so nothing is made or put
    back in it, and no token is counted.

    Raises:
        StoreLockedError: a running process (or a tool such as a sqlite3 shell) holds
            the store.
    """
    from oblivion_core.backup import refuse_unfinished_backup
    from oblivion_core.engine import Oblivion
    from oblivion_core.state import StateDB
    from oblivion_core.store import VectorStore

    path = Path(path_arg)
    db = path / StateDB.FILE
    refuse_unfinished_backup(db)
    if not db.is_file():  # not a typo's fresh empty store
        raise StorePathError(f"there is no Oblivion store at {path_arg!r}; check the path")
    if db.stat().st_size == 0:
        raise StoreCorruptError(
            f"{db} is empty: the store's activation database was lost or truncated; "
            "restore it from a backup"
        )
    store = VectorStore.in_memory()
    try:
        # a counter without a name: the counts kept for the store's own (named)
        # counter stay as they are (a named one would clear them); nothing is counted
        with Oblivion(path, vector_store=store, token_counter=_counts_nothing) as mem:
            mem.REPAIR_ON_LOAD = False
            yield mem
    finally:
        store.close()


def _counts_nothing(text: str) -> int:
    raise AssertionError("oblivion stats, records and history count no tokens")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
