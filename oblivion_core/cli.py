"""The ``oblivion`` command line: ``oblivion demo`` and ``oblivion stats``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from oblivion_core.errors import OblivionError, StorePathError


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``oblivion`` console script."""
    parser = argparse.ArgumentParser(prog="oblivion", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="stream the shipped conversation and explain the memory")
    demo.add_argument("--path", default="oblivion-demo", help="store directory (replaced)")
    demo.add_argument("--plot", default=None, help="PNG for the activation plot")
    stats = sub.add_parser("stats", help="print stats() of a store as JSON")
    stats.add_argument("path")
    stats.add_argument("--namespace", default=None)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except OblivionError as exc:  # bad input or an unusable store: say what to change
        print(f"oblivion {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "demo":
        from oblivion_core.demo import run_demo

        result = run_demo(args.path, plot=args.plot)
        missed = [r["query"] for r in result.recalls if not r["hit"]]
        if missed:
            print(f"\n{len(missed)} recall(s) did not surface the newest fact: {missed}")
        return 0
    from oblivion_core.engine import Oblivion
    from oblivion_core.state import StateDB

    if not (Path(args.path) / StateDB.FILE).is_file():  # not a typo's fresh empty store
        raise StorePathError(f"there is no Oblivion store at {args.path!r}; check the path")
    with Oblivion(args.path) as mem:
        json.dump(mem.stats(namespace=args.namespace), sys.stdout, indent=2, default=str)
        print()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
