"""Exceptions raised by Oblivion.

Every error says what was wrong and what to change. Each subclasses both
:class:`OblivionError` (catch everything from this library) and the built-in
exception a Python user would expect: ``ValueError`` or ``KeyError`` for what the
caller passed, ``OSError`` for a failure outside it (the disk, the vector store, the
embedding model or service), as Python's own I/O failures are.

Those failures are not ``RuntimeError``s: LlamaIndex's synchronous wrappers
(``Memory.put``/``get`` through ``asyncio_run``) replace any ``RuntimeError`` raised
inside them with "Detected nested async", which would hide a store or embedder
outage behind advice about event loops.
"""

from __future__ import annotations


class OblivionError(Exception):
    """Base class of every error raised by Oblivion.

    ``problem`` is the message without the advice that ends it (what to change), for a
    caller that gives advice of its own: the ``oblivion`` command names its flags where
    the message names Python arguments. It is the whole message when no advice is set
    apart.
    """

    def __init__(self, *args: object, problem: str | None = None) -> None:
        super().__init__(*args)
        self.problem = problem if problem is not None else (str(args[0]) if args else "")


class InvalidInputError(OblivionError, ValueError):
    """An argument has the wrong type or value (empty text, NaN, a negative budget...)."""


class TextTooLongError(InvalidInputError):
    """A text is longer than ``Policy.max_text_chars``; split it into several memories."""


class PolicyError(InvalidInputError):
    """A policy value is out of range or inconsistent (e.g. ``archive_low >= archive_high``)."""


class UnknownMemoryError(OblivionError, KeyError):
    """No memory with this id exists in the namespace."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnknownNamespaceError(OblivionError, KeyError):
    """The namespace has never been written to."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StoreError(OblivionError, OSError):
    """The on-disk store cannot be used."""


class StorePathError(StoreError):
    """The store path does not exist and cannot be created, or is not writable."""


class StoreCorruptError(StoreError):
    """The activation database is not a valid Oblivion SQLite file."""


class StoreLockedError(StoreError):
    """Another process holds a write lock on the activation database."""


class StoreConflictError(StoreError):
    """The vector store's collection for a namespace belongs to another Oblivion store
    (two stores given one prefix on a Chroma server, or one ``VectorStore`` object)."""


class VectorStoreError(StoreError):
    """The vector store (Chroma) failed to add, delete or search records of a namespace."""


class EmbeddingError(OblivionError, OSError):
    """The embedder failed or returned vectors of the wrong shape or with NaNs."""


class ModelMismatchError(EmbeddingError):
    """Vectors are another embedding model's than the store's: another dimension, or
    (for a collection being imported) pointing elsewhere for the same texts."""


class TokenizerError(OblivionError, OSError):
    """The token counter's encoding could not be loaded: an outage, not bad input
    (tiktoken downloads its encoding file unless ``TIKTOKEN_CACHE_DIR`` holds a copy)."""


#: Failures outside what the caller passed that may pass by themselves: a vector store
#: that is down or busy, an embedding service timing out, a tokenizer's encoding not
#: downloaded yet. The adapters' ``on_error="warn"`` lets a chat go on through them.
OUTAGES: tuple[type[OblivionError], ...] = (StoreError, EmbeddingError, TokenizerError)

#: Failures of those kinds that never pass by themselves, whatever ``on_error`` says: the
#: embedder is another model than the store's, the store belongs to another, is damaged
#: or cannot be written. Going on would queue every later message for good.
_LASTING: tuple[type[OblivionError], ...] = (
    ModelMismatchError,
    StoreConflictError,
    StoreCorruptError,
    StorePathError,
)


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` is an outage an app may go on through (:data:`OUTAGES`), not a
    lasting one (another embedding model, a store damaged, another store's collection,
    a path that cannot be written), which needs the app changed."""
    return isinstance(exc, OUTAGES) and not isinstance(exc, _LASTING)
