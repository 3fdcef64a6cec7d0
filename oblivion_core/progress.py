"""Progress of long work (re-embedding a backup, importing a collection): a tqdm bar
when tqdm is installed (chromadb and fastembed both install it), a log line per step
otherwise. ``oblivion_core`` does not depend on tqdm itself."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

logger = logging.getLogger("oblivion_core")


@contextlib.contextmanager
def progress(total: int | None, desc: str, unit: str = "memory") -> Iterator[Callable[[int], None]]:
    """A function to call with each step's size (``total`` in all, or not known: ``None``):
    a tqdm bar titled ``desc``, or an information log line per step. No bar when
    ``total`` is 0, nor with ``TQDM_DISABLE=1`` in the environment."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - chromadb and fastembed both install tqdm
        seen = [0]

        def log(n: int) -> None:
            seen[0] += n
            logger.info("%s: %d of %s", desc, seen[0], "?" if total is None else total)

        yield log
        return
    # ``disable`` only when there is nothing to show: passed at all, it would override
    # tqdm's own switch, TQDM_DISABLE=1 (a server's logs)
    off = {"disable": True} if total == 0 else {}
    with tqdm(total=total, desc=desc, unit=unit, **off) as bar:
        yield bar.update
