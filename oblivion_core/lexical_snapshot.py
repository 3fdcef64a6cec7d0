"""A namespace's BM25 index saved beside the state database, so a reopened store does not
tokenise every text again.

Building the index from the texts is most of what a large namespace's first recall
waits for after a restart or an ``unload()``: 0.47 s of the 1.5 s that opening the
latency benchmark's 100k store and answering its first recall took. The index is saved
when the store closes and when a namespace is unloaded (``<store>/lexical/``, one
``.npz`` file per namespace: the postings as a few flat arrays, no pickles), and read
back in place of the build when it is still the namespace's: the state database draws
the namespace a new random number whenever one of its memories is written, deleted or
has its text changed, by a trigger (``lexical_gen``, see :mod:`oblivion_core.state`),
and the file holds the number it was saved with.

A file that does not match (another number, another namespace, another :data:`FORMAT`)
is ignored, and one that cannot be read or does not hold a consistent index is ignored
and deleted, with a warning: the index is then built from the texts as before. Nothing
is lost either way, since the texts in the state database are what the index is made
from. Saving is best effort too: a full disk or a read-only folder leaves a warning and
no file. A file is written under a temporary name and then renamed, so it is whole or
absent; a temporary file a killed save left behind is removed by the namespace's next
save.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

logger = logging.getLogger(__name__)

#: Bumped whenever the tokens (:func:`oblivion_core.lexical.tokens`) or the saved arrays
#: change: a file of another format is built again. 2: letters folded before they are
#: lowercased (the compatibility capitals of "𝐏𝐲𝐭𝐡𝐨𝐧" index as ``python``), and only
#: live documents saved. 3: Chinese characters and kana indexed one by one and in pairs.
FORMAT = 3

Arrays = dict[str, npt.NDArray[Any]]


class LexicalSnapshots:
    """Saved BM25 indexes in one folder, one file per namespace."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, namespace: str) -> Path:
        """The file of ``namespace`` (a hash: namespaces may hold any character)."""
        digest = hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:32]
        return self.folder / f"{digest}.npz"

    def load(self, namespace: str, generation: int) -> Arrays | None:
        """The arrays saved for ``namespace`` at ``generation``, or ``None``."""
        path = self.path(namespace)
        try:
            with np.load(path, allow_pickle=False) as saved:
                arrays = {name: saved[name] for name in saved.files}
            header = arrays.pop("header")
            name = bytes(arrays.pop("namespace")).decode("utf-8")
            if header.dtype != np.int64 or header.shape != (2,):
                raise ValueError(f"a header of {header.dtype} {header.shape}")
        except FileNotFoundError:
            return None
        except Exception as exc:  # truncated, not a zip, a missing array, ...
            self.discard(namespace, exc)
            return None
        if int(header[0]) != FORMAT or name != namespace or int(header[1]) != generation:
            # saved by another version, or before a change (a crash after a forget() may
            # leave one, holding the forgotten text's words): never read, so deleted
            self.drop(namespace)
            return None
        return arrays

    def save(self, namespace: str, generation: int, arrays: Arrays) -> bool:
        """Write ``namespace``'s index (replacing the file at once, never half written);
        ``False`` (with a warning) if it could not be written."""
        path = self.path(namespace)
        tmp: str | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # one store is open in one process, which saves a namespace under its lock:
            # a temporary file of this namespace is what a killed save left behind
            self._drop_leftovers(path)
            fd, tmp = tempfile.mkstemp(prefix=path.stem, suffix=".tmp", dir=self.folder)
            saved: Arrays = {
                "header": np.array([FORMAT, generation], dtype=np.int64),
                "namespace": np.frombuffer(namespace.encode("utf-8"), dtype=np.uint8),
                **arrays,
            }
            with os.fdopen(fd, "wb") as out:
                np.savez(out, allow_pickle=False, **saved)
            os.replace(tmp, path)
            tmp = None
            return True
        except OSError as exc:
            logger.warning(
                "could not save the BM25 index of namespace %r to %s (%s); it is built "
                "from the texts when the namespace is next loaded",
                namespace,
                path,
                exc,
            )
            return False
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def drop(self, namespace: str) -> None:
        """Delete ``namespace``'s file, if any, and what a killed save of it left (a
        temporary file holds every word of the namespace too)."""
        path = self.path(namespace)
        with contextlib.suppress(OSError):
            path.unlink()
        self._drop_leftovers(path)

    def _drop_leftovers(self, path: Path) -> None:
        """Delete the temporary files of saves of ``path`` a killed process left."""
        with contextlib.suppress(OSError):
            for left in self.folder.glob(f"{path.stem}*.tmp"):
                with contextlib.suppress(OSError):
                    left.unlink()

    def discard(self, namespace: str, why: BaseException) -> None:
        """Delete ``namespace``'s file, which could not be read back (``why``), with a
        warning."""
        path = self.path(namespace)
        logger.warning(
            "ignoring the saved BM25 index of namespace %r (%s: %s); it is built from "
            "the texts instead",
            namespace,
            path,
            why,
        )
        self.drop(namespace)
