"""Chroma access: texts, vectors and static metadata, one collection per namespace.

The store never decides tiers and holds no activation: per-recall boosts would cost a
Chroma metadata write each (README, "How it works"), so activation lives in :mod:`state`.
Queries use no ``where`` filter (10-30x slower); tier filtering happens in process.

Recall reads texts from the state database, never from Chroma. Chroma keeps them too, as
each record's document, by default: a second copy of every text beside its vector, which
survives the loss of the state database, and what tools reading the collection expect.
``documents=False``
leaves them out for faster writes: a document costs a write into Chroma's full-text
index, which Oblivion never queries (it keeps its own BM25 index), and that index was
40 % of Chroma's write time (5,000 texts in batches of 500: 2.5 s with documents, 1.5 s
without). The state database then holds the only copy of the texts.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import re
import socket
import ssl as _ssl
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from oblivion_core.errors import (
    InvalidInputError,
    OblivionError,
    StoreConflictError,
    StorePathError,
    VectorStoreError,
)
from oblivion_core.typing import Vectors

logger = logging.getLogger("oblivion_core")

_T = TypeVar("_T")

#: Given ids per batch from which :meth:`VectorStore.add` asks Chroma whether it holds
#: any (one ``get``, about 1.5 ms for 500 ids) to write them with the cheaper ``add``.
CHECK_BATCH = 32
#: The most one write to Chroma carries, by :func:`_write_spans`' estimate of its
#: request body: a Chroma server refuses a body over about 40 MiB ("Payload too
#: large") whatever its batch size, which 5,461 records reach with 1,536-d vectors, or
#: with the default model's and texts of 6,000 characters.
MAX_WRITE_BYTES = 32 * 2**20


def _write_spans(
    ids: Sequence[str],
    texts: Sequence[str] | None,
    metadatas: Sequence[Mapping[str, Any] | None] | None,
    dim: int,
    max_batch: int,
) -> list[tuple[int, int]]:
    """``(start, end)`` of the writes that store ``ids``: at most ``max_batch`` records
    each, and, but for a record alone, at most :data:`MAX_WRITE_BYTES` by an estimate
    that errs high: a vector as JSON numbers (a client may send base64, a quarter of
    that), every character of a text escaped when it is not ASCII, a metadata value that
    is no string as 24 characters."""
    fixed = 64 + 22 * dim
    spans: list[tuple[int, int]] = []
    start, size = 0, 0
    for k, mid in enumerate(ids):
        cost = fixed + len(mid)
        if texts is not None:
            text = texts[k]
            cost += 2 * len(text) if text.isascii() else 12 * len(text)
        meta = metadatas[k] if metadatas is not None else None
        if meta:
            for key, value in meta.items():
                cost += 8 + 2 * len(key) + (12 * len(value) if isinstance(value, str) else 24)
        if k > start and (k - start >= max_batch or size + cost > MAX_WRITE_BYTES):
            spans.append((start, k))
            start, size = k, 0
        size += cost
    if start < len(ids):
        spans.append((start, len(ids)))
    return spans


def _is_uuid(name: str) -> bool:
    """Whether a folder's ``name`` is a UUID, as Chroma names an index's folder."""
    try:
        return str(uuid.UUID(name)) == name
    except ValueError:
        return False


def _collection_gone(exc: Exception) -> bool:
    """Whether Chroma says the collection no longer exists (deleted since opened)."""
    return type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc)


#: What Chroma's ``InternalError`` says when a collection's index is damaged: a process
#: killed in Chroma's delete left "Error finding id" on every query (and "Failed to
#: apply logs to the hnsw segment writer" on a count), for good, even after a reopen.
_DAMAGED = re.compile(r"error finding id|hnsw|executing plan", re.IGNORECASE)


def _damaged_index(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is Chroma failing inside its own
    index (an ``InternalError`` naming it), not a disk, network or argument error."""
    return any(
        type(at).__name__ == "InternalError" and _DAMAGED.search(str(at)) is not None
        for at in _raised_from(exc)
    )


_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")
#: Longest prefix: Chroma names hold 512 characters, :func:`collection_name` up to 62.
MAX_PREFIX = 450
_PREFIX = re.compile(rf"(?!.*\.\.)[a-zA-Z0-9][a-zA-Z0-9._-]{{0,{MAX_PREFIX - 1}}}")


def location(client: Any, prefix: str = "") -> tuple[str | None, Path | None]:
    """Where ``client`` keeps its collections, in words that tell two places apart (a
    server's host, port, tenant and database, or a folder's absolute path, with the
    collections' ``prefix``), and the folder of an on-disk client. ``None`` for what an
    in-memory client, or one that does not say (its ``get_settings()`` fails), lacks."""
    try:
        settings = client.get_settings()
        host = settings.chroma_server_host
        folder = None
        if host:
            tenant = getattr(client, "tenant", None) or "default_tenant"
            database = getattr(client, "database", None) or "default_database"
            where = (
                f"the Chroma server at {host}:{settings.chroma_server_http_port} "
                f"(tenant {tenant!r}, database {database!r})"
            )
        elif settings.is_persistent and settings.persist_directory:
            folder = Path(settings.persist_directory).resolve()
            where = f"Chroma on disk at {str(folder)!r}"
        else:
            return None, None
    except Exception:
        return None, None
    return (f"{where}, prefix {prefix!r}" if prefix else where), folder


def directory_path(path: object, name: str, what: str, alternative: str = "") -> Path:
    """``path``, a directory the user gave as argument ``name``, checked: a str or
    os.PathLike that can name one (``what``: the directory it is, for the message;
    ``alternative``: what else the argument may be). An empty one made a store in the
    current directory. Made absolute: files opened later (a connection, Chroma's) open
    the directory given even after the process changed its working directory (a
    relative one reached another store's files there)."""
    raw = os.fspath(path) if isinstance(path, str | os.PathLike) else None
    if not isinstance(raw, str):
        raise InvalidInputError(
            f"{name} must be {what} as a str or os.PathLike{alternative}, got {type(path).__name__}"
        )
    if not raw.strip():
        raise InvalidInputError(
            f"{name} is empty: pass {what} ('.' for the current one){alternative}"
        )
    try:
        os.fsencode(raw)
        if "\x00" in raw:
            raise ValueError("a NUL character")
    except (UnicodeError, ValueError) as exc:
        raise InvalidInputError(
            f"{name} {raw!r} cannot name a directory ({exc}); pass another path"
        ) from exc
    try:
        # not os.path.abspath: it drops "x/.." by the string, where "x" may be a link
        return Path(raw).absolute()
    except OSError as exc:  # the working directory was deleted (a release replaced)
        raise StorePathError(
            f"{name} {raw!r} is relative, and the working directory it is relative to no "
            f"longer exists ({exc.strerror or exc}); pass an absolute path"
        ) from exc


def _check_prefix(prefix: object) -> None:
    """``prefix`` checked as :class:`VectorStore` checks it: Chroma's rules for
    collection names (an empty one is no prefix)."""
    if not isinstance(prefix, str) or (prefix and not _PREFIX.fullmatch(prefix)):
        raise InvalidInputError(
            f"prefix must be letters, digits, '.', '_' or '-' (no two dots in a row), "
            f"start with a letter or digit and be at most {MAX_PREFIX} characters "
            f"(Chroma's rules for collection names), got {prefix!r:.80}"
        )


#: A host given with its port: ``name:8000`` or ``[IPv6 address]:8000``.
_HOST_PORT = re.compile(r"(\[[^\]]*\]|[^:\[\]]+):(\d+)")


def _check_address(host: object, port: object, ssl: object) -> None:
    """Refuse a ``host``, ``port`` or ``ssl`` no Chroma server can answer at, before
    connecting: else it was reported as a server that is not running."""
    if not isinstance(host, str) or not host.strip():
        raise InvalidInputError(
            f"host must be the Chroma server's host name or IP address as a str, e.g. "
            f"'localhost', got {host!r:.80}"
        )
    if "://" in host or "/" in host:
        raise InvalidInputError(
            f"host must be a host name or IP address, not a URL: got {host!r:.80}; pass "
            "the port as port= and ssl=True for https"
        )
    if given := _HOST_PORT.fullmatch(host):
        raise InvalidInputError(
            f"host {host!r:.80} includes the port: pass the port as port=, e.g. "
            f"VectorStore.server({given[1]!r}, port={int(given[2])})"
        )
    if ":" in host and not host.startswith("["):
        raise InvalidInputError(
            f"host {host!r:.80} is an IPv6 address: put it in brackets, e.g. '[::1]', and "
            "pass the port as port="
        )
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidInputError(
            f"port must be an int from 1 to 65535 (the port `chroma run --port` listens "
            f"on, 8000 by default), got {type(port).__name__} {port!r:.80}"
        )
    if not isinstance(ssl, bool):
        raise InvalidInputError(
            f"ssl must be True (https) or False (http), got {type(ssl).__name__} {ssl!r:.80}"
        )


def collection_name(namespace: str) -> str:
    """A valid, stable Chroma collection name for any namespace string."""
    digest = hashlib.sha1(namespace.encode("utf-8")).hexdigest()[:12]
    readable = _UNSAFE.sub("-", namespace).strip("-_")[:40] or "ns"
    return f"oblivion-{readable}-{digest}"


def _raised_from(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from, in turn (cycle-safe)."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        yield at
        at = at.__cause__ or at.__context__


def _tls_failed(exc: BaseException) -> str | None:
    """What went wrong in a TLS handshake that ``exc`` was raised from (a certificate
    not trusted, or ``ssl=`` not what the server speaks), or ``None`` for no such
    failure. ``httpx`` raises it as a connection error, which Chroma's client words as
    "are you sure it is running"."""
    for at in _raised_from(exc):
        if isinstance(at, _ssl.SSLError):
            return f"{type(at).__name__}: {at}"
    return None


def _check_headers(headers: object) -> None:
    """Refuse ``headers`` that do not map str names to str values, naming the header
    and its value's type only: a value is often a secret (a bearer token), and an error
    message goes to logs and tracebacks.

    Raises:
        InvalidInputError: not a mapping, or a name or value that is not a str or
            that Chroma's client cannot send (beyond ASCII, a control character).
    """
    must = (
        'headers must map header names to values, both str, e.g. {"Authorization": '
        '"Bearer <token>"};'
    )
    if not isinstance(headers, Mapping):
        raise InvalidInputError(f"{must} got {type(headers).__name__}")
    for name, value in headers.items():
        if not isinstance(name, str):
            raise InvalidInputError(f"{must} a name is {type(name).__name__}")
        if not name or not all("!" <= c <= "~" and c != ":" for c in name):
            raise InvalidInputError(
                f"{must} the name {name!r:.80} is not a header name (ASCII letters, digits "
                "and -, no spaces or colons)"
            )
        if not isinstance(value, str):
            raise InvalidInputError(
                f"{must} the value of {name!r} is {type(value).__name__} (its value is not "
                "shown: it may be a secret)"
            )
        # Chroma's client (httpx) sends values as ASCII, and refuses control characters
        bad = next((c for c in value if not (" " <= c <= "~" or c == "\t")), None)
        if bad is not None:
            what = (
                "a line break"
                if bad in "\r\n"
                else "a character beyond ASCII"
                if ord(bad) > 0x7F
                else f"a control character (U+{ord(bad):04X})"
            )
            raise InvalidInputError(
                f"{must} the value of {name!r} holds {what}, which a header cannot carry (a "
                "token read from a file or a variable often ends in a newline: strip() "
                "it). Its value is not shown: it may be a secret"
            )


#: Chroma's error for a vector of another size than its collection's.
_OTHER_SIZE = re.compile(r"expecting embedding with dimension of (\d+), got (\d+)")


def _refused(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) says a server refused the caller's
    credentials: Chroma's own auth errors, or HTTP 401/403 from a proxy in front of it
    (the Chroma client keeps only the body's text, raising it in the handler of the
    ``httpx`` status error, so the status is read from there)."""
    return any(
        type(at).__name__ in ("AuthorizationError", "ChromaAuthError")
        or getattr(getattr(at, "response", None), "status_code", None) in (401, 403)
        for at in _raised_from(exc)
    )


def _response(exc: BaseException) -> Any | None:
    """The HTTP response that ``exc`` (or what it was raised from) carries: the Chroma
    client raises a status it cannot read as a Chroma error in the handler of the
    ``httpx`` status error, which keeps it; ``None`` if there is none."""
    for at in _raised_from(exc):
        response = getattr(at, "response", None)
        if isinstance(getattr(response, "status_code", None), int):
            return response
    return None


_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_PAGE = re.compile(r"<\s*(?:!doctype|html|head|body|title|h1|center)\b", re.IGNORECASE)


def _answer(response: Any) -> str:
    """What ``response`` answered, in words fit for one line of an error: its status and
    the title of its page (``502 Bad Gateway``, as nginx titles it), or the status and
    its reason phrase; never the page's body (a gateway's whole HTML page)."""
    status = int(response.status_code)
    try:
        text = str(response.text or "")
    except Exception:  # not read, or not text: the status says enough
        text = ""
    found = _TITLE.search(text[:4096])
    title = " ".join(found.group(1).split())[:80] if found else ""
    if title.startswith(str(status)):
        return title
    reason = str(getattr(response, "reason_phrase", "") or "").strip()
    said = f"{status} {reason}" if reason else f"HTTP {status}"
    return f"{said} ({title!r})" if title else said


def _plain(exc: BaseException) -> str:
    """The message of ``exc`` on one line, for an error: a page a server or a gateway
    answered (the Chroma client raises its body as the message) is named by its status
    and title, not pasted."""
    text = str(exc)
    if _PAGE.search(text[:4096]):
        response = _response(exc)
        text = f"an HTML page ({_answer(response)})" if response is not None else "an HTML page"
    text = " ".join(text.split())
    return text[:297] + "..." if len(text) > 300 else text


def _said(exc: BaseException) -> str:
    """``exc`` as ``Type: message`` (:func:`_plain`), or its type alone if it says
    nothing."""
    text = _plain(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


#: What gives a server that did not answer in time longer to (a gateway: its own wait).
_MORE_TIMEOUT = "VectorStore.server(..., timeout=...) more seconds"

#: What a gateway in front of a server answers when that server is down (502 Bad
#: Gateway: it refused the gateway's connection; 503: the gateway has none to send to),
#: and when it gave up waiting for its answer (504 Gateway Time-out).
_GATEWAY_DOWN = (502, 503)
_GATEWAY_WAITED = 504


def _gateway(exc: BaseException) -> tuple[int, str] | None:
    """``(status, what it answered)`` when ``exc`` (or what it was raised from) is a
    gateway's 502, 503 or 504 (:func:`_answer`), else ``None``."""
    response = _response(exc)
    if response is None or response.status_code not in (*_GATEWAY_DOWN, _GATEWAY_WAITED):
        return None
    return int(response.status_code), _answer(response)


def _unresolved(exc: BaseException) -> socket.gaierror | None:
    """The failed host name look-up ``exc`` was raised from (Chroma's client words it as
    "Could not connect to a Chroma server"), or ``None``."""
    return next((at for at in _raised_from(exc) if isinstance(at, socket.gaierror)), None)


def _too_large(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is a server's refusal of a request
    body as too large: HTTP 413, which the Chroma client raises as a bare ``Exception``
    reading "Payload too large"."""
    return any(
        getattr(getattr(at, "response", None), "status_code", None) == 413
        or "payload too large" in str(at).lower()
        for at in _raised_from(exc)
    )


def _set_timeout(client: Any, timeout: float | None) -> None:
    """Give the requests of ``client`` (a ``chromadb.HttpClient``) ``timeout`` seconds:
    Chroma makes its ``httpx.Client`` with ``timeout=None`` and has no setting for it.
    The requests made while the client was made (its tenant and database checks) had
    none: :func:`_within` bounds them."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if timeout is None:
        return
    if not isinstance(session, httpx.Client):  # another chromadb: said once, not fatal
        logger.warning(
            "this chromadb's HTTP client has no session Oblivion knows: timeout=%s is not "
            "applied, a request to the server may wait for ever",
            timeout,
        )
        return
    session.timeout = httpx.Timeout(timeout)


def _within(timeout: float | None, make: Callable[[], Any]) -> Any:
    """``make()``, or :class:`TimeoutError` when it takes longer than ``timeout`` s.

    Chroma's ``HttpClient`` asks the server for its tenant and database while it is
    made, on a session with no timeout and before any can be set: a server that
    accepts the connection and never answers would hold the caller for ever. So it is
    made on a daemon thread, waited for ``timeout`` seconds; one that never returns is
    left to the server (it holds no lock of ours and nothing of it is used)."""
    if timeout is None:
        return make()
    made: dict[str, Any] = {}

    def run() -> None:
        try:
            made["client"] = make()
        except BaseException as exc:  # handed to the caller below
            made["error"] = exc

    thread = threading.Thread(target=run, name="oblivion-chroma-connect", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {timeout} s while connecting")
    if "error" in made:
        raise made["error"]
    return made["client"]


#: How Chroma says the tenant or database a client was made for is gone (a server whose
#: data was wiped while a store was open).
_LOST_PLACE = re.compile(r"\b(Tenant|Database) \[([^\]]*)\] (?:does not exist|not found)")


def _unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is a connection nobody took: the
    server stopped, or another host or port (``httpx.ConnectError`` without TLS)."""
    return any(
        type(at).__name__ == "ConnectError" or isinstance(at, ConnectionRefusedError)
        for at in _raised_from(exc)
    )


def _timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is an HTTP request that timed out."""
    return any(
        type(at).__name__.endswith("Timeout") or isinstance(at, TimeoutError)
        for at in _raised_from(exc)
    )


def _make_folder(where: Path) -> None:
    """Create the Chroma store's folder ``where`` and its parents, as ``Oblivion(path)``
    creates its directory: a path that cannot be one (a parent is a file, or not
    writable) is a :class:`StorePathError` naming it, not a damaged store."""
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        file = next((p for p in where.parents if os.path.isfile(p)), None)
        why = f"{str(file)!r} is a file, not a folder" if file else exc.strerror or exc
        raise StorePathError(
            f"cannot create the Chroma store's folder {str(where)!r}: {why}; pass a path "
            "you can write to"
        ) from exc


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


class VectorStore:
    """Texts (unless ``documents=False``) and vectors in Chroma.

    Build it with :meth:`embedded` (a ``PersistentClient`` on disk, the default),
    :meth:`server` (an ``HttpClient`` to a ``chroma run`` server) or from any Chroma
    client you already have.
    """

    def __init__(self, client: Any, *, prefix: str = "", documents: bool = True) -> None:
        if not isinstance(documents, bool):
            raise InvalidInputError(f"documents must be True or False, got {documents!r}")
        _check_prefix(prefix)
        self.client = client
        self.prefix = prefix
        #: Store each memory's text as its Chroma document too (see the module doc).
        self.documents = documents
        self._collections: dict[str, Any] = {}
        self._stalled: str | None = None  # what a request of this engine call timed out on
        self._stall = "the Chroma server did not answer in time"  # how it did, in words
        self._wait_fix = _MORE_TIMEOUT  # and what gives it longer
        #: The Oblivion store whose collections these are (:meth:`bind`); ``None`` claims
        #: and checks nothing.
        self.owner: str | None = None
        self._owner_label = ""
        self._original: Callable[[str], bool] | None = None
        #: Namespaces whose collection may lack records: made again after it vanished
        #: (a server that lost its data), or not countable when first used. The engine
        #: puts their records back before it next queries one (:meth:`VectorSync.refill`).
        self.unchecked: set[str] = set()
        #: Namespaces whose collection this store took over from another state folder of
        #: the same store (a copy, or the original it is a copy of), by that folder: the
        #: records there may hold that folder's vectors (:class:`VectorSync` compares).
        self.relabelled: dict[str, str] = {}
        #: An outage was told (:meth:`VectorSync.outage`) and no call has been answered
        #: since.
        self.outage_told = False
        #: Called with a namespace and its collection each time this store opens (or
        #: makes) one: :class:`VectorSync` records Chroma's id for it.
        self.on_open: Callable[[str, Any], None] | None = None
        #: Called with a namespace whose collection's index embedded Chroma says is
        #: damaged (:func:`_damaged_index`) on a query or count: makes the collection
        #: again from the activation database (:meth:`VectorSync.remake`), and says
        #: whether it did. Once per namespace (:attr:`remade`).
        self.on_damaged: Callable[[str], bool] | None = None
        #: Namespaces whose collection :attr:`on_damaged` made again in this store's life.
        self.remade: set[str] = set()
        try:
            self.max_batch = int(client.get_max_batch_size())
        except Exception:
            self.max_batch = 5_000
        #: Where the collections are, in words (:func:`location`), and the folder of an
        #: on-disk client; ``None`` for a client that keeps them in memory or does not say.
        self.location, self.folder = location(client, prefix)

    @classmethod
    def embedded(cls, path: str | Path, *, documents: bool = True) -> VectorStore:
        """Chroma on disk at ``path`` (created if needed).

        ``documents=False`` keeps texts out of Chroma (see the module doc).
        """
        import chromadb

        where = directory_path(path, "path", "the Chroma store's folder")
        if where.exists() and not where.is_dir():
            raise StorePathError(
                f"the Chroma store's folder {str(where)!r} is a file; move it aside (or "
                "restore the folder from a backup) and open the store again"
            )
        _make_folder(where)
        if where.is_dir() and not os.access(where, os.R_OK | os.W_OK | os.X_OK):
            raise StorePathError(
                f"the Chroma store's folder {str(where)!r} is not readable and writable; fix "
                "its permissions (and those of the files in it)"
            )
        try:
            client = chromadb.PersistentClient(path=str(where), settings=_settings())
        except Exception as exc:
            if "readonly" in str(exc).replace(" ", "").lower():
                raise StorePathError(
                    f"the Chroma store under {str(where)!r} is read-only ({exc}); fix the "
                    "permissions of its files"
                ) from exc
            raise VectorStoreError(
                f"could not open the Chroma store at {str(where)!r} ({exc}); if it is "
                "damaged, restore it from a backup, or move it aside: the memories are put "
                "back from the activation database's vectors when the store is opened"
            ) from exc
        return cls(client, documents=documents)

    @classmethod
    def in_memory(cls, *, documents: bool = True) -> VectorStore:
        """Chroma in this process, nothing on disk: what ``Oblivion(None)`` uses. Every
        such store shares the process's one in-memory Chroma, each under a prefix of its
        own, and deletes its collections when it closes (:attr:`ephemeral`)."""
        import chromadb

        client = chromadb.EphemeralClient(settings=_settings())
        store = cls(client, prefix=uuid.uuid4().hex[:8], documents=documents)
        store.ephemeral = True
        return store

    @classmethod
    def server(
        cls,
        host: str = "localhost",
        port: int = 8000,
        *,
        ssl: bool = False,
        headers: Mapping[str, str] | None = None,
        tenant: str = "default_tenant",
        database: str = "default_database",
        prefix: str = "",
        documents: bool = True,
        timeout: float | None = 60.0,
    ) -> VectorStore:
        """A Chroma server (``chroma run``) at ``host:port``.

        ``host`` is a host name or IP address (an IPv6 one in brackets, ``"[::1]"``),
        without a scheme or the port; ``ssl=True`` speaks https. Arguments no server can
        answer at are an :class:`InvalidInputError`, raised before connecting.

        ``headers`` go with every request: the credentials of a server behind a proxy
        that checks them, e.g. ``{"Authorization": "Bearer <token>"}``. ``tenant`` and
        ``database`` name where on the server the collections live (both must exist:
        ``chromadb.AdminClient`` creates them). ``prefix`` keeps several Oblivion stores
        apart in one database (e.g. one per app); ``documents=False`` keeps texts out of
        Chroma (see the module doc). ``timeout``: seconds a request waits for the server
        to connect or answer before it is a :class:`VectorStoreError` (``None``: for
        ever, Chroma's own default): a server that stops answering (a stalled host, a
        network partition) would otherwise hold every call on the engine, whose lock
        the waiting call holds. The client is made within the same time (Chroma asks the
        server for the tenant and database then).
        """
        import chromadb

        if headers is not None:
            _check_headers(headers)
        for name, value in (("tenant", tenant), ("database", database)):
            if not isinstance(value, str) or not value.strip():
                default = f"default_{name}"
                raise InvalidInputError(
                    f"{name} must name a {name} on the Chroma server (by default "
                    f"{default!r}), got {value!r:.80}"
                )
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise InvalidInputError(
                f"timeout must be a number of seconds > 0 (e.g. 60.0), or None to wait for "
                f"ever; got {timeout!r:.80}"
            )
        _check_address(host, port, ssl)
        _check_prefix(prefix)
        where = f"{host}:{port}"
        try:
            client = _within(
                timeout,
                lambda: chromadb.HttpClient(
                    host=host,
                    port=port,
                    ssl=ssl,
                    headers=dict(headers) if headers else None,
                    tenant=tenant,
                    database=database,
                    settings=_settings(),
                ),
            )
            _set_timeout(client, timeout)
            client.heartbeat()
        except Exception as exc:
            said = _plain(exc).rstrip(" .?!")
            if (gateway := _gateway(exc)) is not None:
                status, answered = gateway
                why = (
                    "the server behind it is not answering; check that the Chroma server "
                    "behind the gateway is running and not overloaded (or give the gateway "
                    "a longer wait for it)"
                    if status == _GATEWAY_WAITED
                    else "the Chroma server behind it is down or unreachable; start it, or "
                    "check the address the gateway forwards to"
                )
                raise VectorStoreError(
                    f"could not use the Chroma server at {where}: the gateway at {where} "
                    f"answered {answered}: {why}, then open the store again"
                ) from exc
            unresolved = _unresolved(exc)
            if unresolved is not None:
                raise VectorStoreError(
                    f"could not use the Chroma server at {where}: the host name {host!r} "
                    f"could not be resolved ({unresolved.strerror or unresolved}); check its "
                    "spelling, or that this machine's DNS (or /etc/hosts, or the container "
                    "network) knows it"
                ) from exc
            response = _response(exc)
            if response is not None and response.status_code in (404, 405):
                try:
                    path = f" to {response.request.url.path}"
                except Exception:  # no request kept: the status says enough
                    path = ""
                raise VectorStoreError(
                    f"something answers at {where} but it is not a Chroma server speaking "
                    f"API v2 (chromadb >= 1.0): it answered {_answer(response)}{path}. Pass "
                    "the host and port the Chroma server listens on (8000 by default), or "
                    "upgrade a server older than chromadb 1.0"
                ) from exc
            if response is not None and response.status_code >= 500:
                raise VectorStoreError(
                    f"the server at {where} answered {_answer(response)}: if it is the "
                    "Chroma server, its log says why; else pass the host and port the "
                    "Chroma server listens on (8000 by default)"
                ) from exc
            if any(
                type(at).__name__ == "JSONDecodeError" or "JSON value" in str(at)
                for at in _raised_from(exc)
            ):  # a web app, a captive portal, a dev server on Chroma's usual port
                raise VectorStoreError(
                    f"something answers at {where} but it is not a Chroma server: its "
                    "answer is not JSON (a web page?). Pass the host and port the Chroma "
                    "server listens on (8000 by default, which other dev servers use too)"
                ) from exc
            if _timed_out(exc):
                raise VectorStoreError(
                    f"the Chroma server at {where} did not answer within {timeout} s; check "
                    "that it is running and reachable, or pass a larger timeout="
                ) from exc
            tls = _tls_failed(exc)
            if tls is not None:
                advice = (
                    f"{tls}: if the server speaks plain HTTP, "
                    f"pass ssl={not ssl}; if its certificate is signed by your own "
                    "authority, point SSL_CERT_FILE at that authority's certificate (or "
                    "pass VectorStore(chromadb.HttpClient(...), prefix=...) a client "
                    "you configured)"
                    if ssl
                    else f"{tls}: if the server speaks HTTPS, pass ssl=True"
                )
            elif _refused(exc):
                advice = (
                    "the server refused the request: pass the credentials it expects as "
                    'headers=..., e.g. headers={"Authorization": "Bearer <token>"}'
                )
            elif type(exc).__name__ == "InvalidArgumentError":  # the server's own check
                advice = (
                    f"it refused the tenant or database name (tenant {tenant!r}, database "
                    f"{database!r}): pass names of 3 to 512 letters, digits, '.', '_' or "
                    "'-', beginning and ending with a letter or digit"
                )
            elif type(exc).__name__ == "NotFoundError":
                advice = (
                    f"the server has no such tenant or database (tenant {tenant!r}, "
                    f"database {database!r}): create it with chromadb.AdminClient "
                    "(create_tenant, create_database) or pass one the server has"
                )
            else:
                advice = (
                    f"start it (`chroma run --port {port}`) or pass the host and port it listens on"
                    + ("" if ssl else " (and ssl=True if it speaks HTTPS)")
                )
            if tls is not None:  # Chroma's client words it as "are you sure it is running"
                said = "its TLS handshake failed"
            raise VectorStoreError(
                f"could not use the Chroma server at {where}"
                + (f" ({said}); " if said else ": ")
                + advice
            ) from exc
        return cls(client, prefix=prefix, documents=documents)

    def _error(self, exc: Exception, operation: str, namespace: str) -> VectorStoreError:
        """A :class:`VectorStoreError` for a Chroma failure (the caller chains ``exc``).

        One that timed out, or that a gateway gave up waiting for (504), stalls the rest
        of the engine's call (:meth:`new_call`)."""
        gateway = _gateway(exc)
        timed_out = _timed_out(exc)
        if timed_out:
            self._stalled = operation
            self._stall = "the Chroma server did not answer in time"
            self._wait_fix = _MORE_TIMEOUT
        if gateway is not None:
            status, answered = gateway
            name = (
                f"collection {self.prefix + collection_name(namespace)!r}, namespace {namespace!r}"
            )
            if status == _GATEWAY_WAITED:
                self._stalled = operation
                self._stall = (
                    f"the gateway in front of the Chroma server answered {answered}: the "
                    "server behind it is not answering"
                )
                self._wait_fix = "the gateway a longer wait for it"
                return VectorStoreError(
                    f"{self._stall}, so it could not {operation} ({name}). Check that the "
                    "Chroma server behind the gateway is running and not overloaded (or give "
                    "the gateway a longer wait for it), then retry; nothing already stored is "
                    "lost (the activation database holds every memory)"
                )
            return VectorStoreError(
                f"the gateway in front of the Chroma server answered {answered}: the server "
                f"behind it is down or unreachable, so it could not {operation} ({name}). "
                "Start the Chroma server (or check the address the gateway forwards to), "
                "then retry; nothing already stored is lost (the activation database holds "
                "every memory)"
            )
        if _refused(exc):
            return VectorStoreError(
                f"the Chroma server refused to {operation} (collection "
                f"{self.prefix + collection_name(namespace)!r}, namespace {namespace!r}): "
                f"{_said(exc)}. Check the credentials given to "
                "VectorStore.server(..., headers=...) (a token may have expired), then retry"
            )
        if _too_large(exc):
            return VectorStoreError(
                f"the Chroma server refused to {operation} (collection "
                f"{self.prefix + collection_name(namespace)!r}, namespace {namespace!r}) as "
                f"too large a request: {_said(exc)}. Writes are cut to "
                f"{MAX_WRITE_BYTES // 2**20} MiB, so one record alone exceeds what the server "
                "takes (a server or proxy in front of it set to less, or a metadata value of "
                "many megabytes): store less in that record's metadata, or raise the limit"
            )
        tls = _tls_failed(exc)
        if tls is not None:
            return VectorStoreError(
                f"the TLS handshake with the Chroma server failed, so it could not "
                f"{operation} (namespace {namespace!r}): {tls}. Check the server's "
                "certificate (expired, or signed by an authority this machine does not "
                "trust: SSL_CERT_FILE names one it should), then retry"
            )
        if _unreachable(exc):
            return VectorStoreError(
                f"could not reach {self.location or 'the Chroma server'} to {operation} "
                f"(namespace {namespace!r}): {_said(exc)}. Start the server, "
                "or check the host and port it listens on, then retry; nothing already "
                "stored is lost (the activation database holds every memory)"
            )
        lost = _LOST_PLACE.search(" ".join(str(at) for at in _raised_from(exc)))
        if lost:
            tenant = getattr(self.client, "tenant", "default_tenant")
            database = getattr(self.client, "database", "default_database")
            return VectorStoreError(
                f"the Chroma server has no {lost.group(1).lower()} {lost.group(2)!r} any "
                f"more, where this store's collections live (tenant {tenant!r}, database "
                f"{database!r}), so it could not {operation} (namespace {namespace!r}). "
                "Create it again with chromadb.AdminClient (create_tenant, create_database)"
                ": the open store then puts its memories back from its activation database"
            )
        if _damaged_index(exc) and (self.folder is not None or self.ephemeral):
            return VectorStoreError(
                f"Chroma's index of the collection "
                f"{self.prefix + collection_name(namespace)!r} (namespace {namespace!r}) "
                f"is damaged (a process killed while Chroma wrote it, say), so it could not "
                f"{operation}: {_said(exc)}. Call compact_vector_store(namespace="
                f"{namespace!r}) to make the collection again from the activation database, "
                "which holds every memory: nothing is lost"
            )
        sized = _OTHER_SIZE.search(str(exc))
        if sized:
            return VectorStoreError(
                f"the collection {self.prefix + collection_name(namespace)!r} (namespace "
                f"{namespace!r}) holds vectors of {sized.group(1)} dimensions and this "
                f"store's have {sized.group(2)}, so Chroma could not {operation}: another "
                "model's vectors were written there (a copy made with backup(embedder=...) "
                "opened on this vector store, say). Call repair_vector_store(namespace=...) "
                "to fill the collection again from this store's activation database"
            )
        if timed_out:
            return VectorStoreError(
                f"the Chroma server did not answer in time to {operation} (collection "
                f"{self.prefix + collection_name(namespace)!r}, namespace {namespace!r}): "
                f"{_said(exc)}. Check that it is running and reachable, "
                "then retry (or give VectorStore.server(..., timeout=...) more seconds)"
            )
        return VectorStoreError(
            f"Chroma failed to {operation} (collection "
            f"{self.prefix + collection_name(namespace)!r}, namespace {namespace!r}): "
            f"{_said(exc)}. Check that the disk holding the Chroma store has "
            "free space and is writable (or, for a Chroma server, that it is running and "
            "reachable), then retry. If it keeps failing, the Chroma store may be damaged: "
            "move it aside (or drop the collection on the server) and open the Oblivion "
            "store again; it puts the memories back from its activation database"
        )

    # ---------------------------------------------------------------- collections
    def bind(
        self, owner: str, label: str, *, original: Callable[[str], bool] | None = None
    ) -> None:
        """Claim this store's collections for the Oblivion store ``owner`` (its id, kept in
        its activation database; ``label`` names it in errors: its absolute state folder,
        with the host for a vector store the Oblivion store was given).

        Each collection records its owner in its metadata (``oblivion_store``): one made
        by another Oblivion store and holding records is refused with
        :class:`StoreConflictError` instead of shared. Two stores given one prefix on a
        server would otherwise read, and delete from, each other's records
        (:meth:`Oblivion.repair_vector_store` removes records of no memory of its own).
        A collection without an owner (written before owners were recorded) is claimed, and
        so is an empty one of the same label (its database made again); another
        store's is refused even empty: that store may be open, writing through its handle.

        ``original(other_label)``: whether the store a collection of this owner names by
        another label is open now, this store being a copy of it (a backup, a copied
        folder, opened on the same server prefix): refused too, or each would delete
        the other's newer records. Without it (or when it says no: the folder moved, or
        the original is closed and this is its backup restored in its place) the
        collection is relabelled.
        """
        if self.owner is not None and self.owner != owner:
            raise StoreConflictError(
                f"this VectorStore already serves the Oblivion store whose state is "
                f"{self._owner_label!r}, not {label!r}: two stores sharing one would share its "
                "collections. Give each Oblivion store its own VectorStore (on a server, each "
                "with its own prefix=...)"
            )
        self.owner, self._owner_label = owner, label
        self._original = original

    def unbind(self) -> None:
        """Forget the owner :meth:`bind` set (its Oblivion store closed), and the
        collections opened for it."""
        self.owner, self._owner_label, self._original = None, "", None
        self.on_open = self.on_damaged = None
        self.remade.clear()
        self._collections.clear()
        self.unchecked.clear()  # the next store checks each namespace when first used
        self.relabelled.clear()

    def collection(self, namespace: str) -> Any:
        """The collection of ``namespace``, created on first use (cosine space)."""
        col = self._collections.get(namespace)
        if col is None:
            self._check_answering("open (or create) the collection", namespace)
            meta: dict[str, Any] = {"oblivion_namespace": namespace}
            if self.owner is not None:
                meta |= {"oblivion_store": self.owner, "oblivion_state": self._owner_label}
            try:
                col = self.client.get_or_create_collection(
                    self.prefix + collection_name(namespace),
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata=meta,
                )
                self._claim(col, namespace)
            except OblivionError:
                raise
            except Exception as exc:
                raise self._error(exc, "open (or create) the collection", namespace) from exc
            self._collections[namespace] = col
            if self.on_open is not None:
                self.on_open(namespace, col)
        return col

    def collection_id(self, namespace: str) -> str:
        """Chroma's id of the collection of ``namespace`` (opened, or made): the server
        (or the folder's database) gives each collection its own when it makes it, so
        the same collection reached under another address (``localhost`` or
        ``127.0.0.1``, a DNS alias) has the same id, and one made again, or made there
        by an earlier move, another."""
        return str(self.collection(namespace).id)

    def _claim(self, col: Any, namespace: str) -> None:
        """Record this store as ``col``'s owner, or refuse a collection another one holds
        records in (see :meth:`bind`)."""
        if self.owner is None:
            return
        meta = dict(getattr(col, "metadata", None) or {})
        found, state = meta.get("oblivion_store"), meta.get("oblivion_state")
        mine = state == self._owner_label
        if found == self.owner and mine:
            return
        other = str(state or "")
        if found == self.owner and self._original is not None and self._original(other):
            raise StoreConflictError(
                f"the collection {col.name!r} (namespace {namespace!r}) belongs to the "
                f"Oblivion store whose state is {other!r}, open now, and this store's state "
                f"folder {self._owner_label!r} is a copy of it (a backup, or the folder "
                "copied): sharing the collection, each would delete the other's newer "
                "records. Open the copy with its own prefix=... (its collections are filled "
                "there from its activation database), or, to restore it in the original's "
                "place, close the original first"
            )
        held = int(col.count()) if found not in (None, self.owner) else 0
        if found not in (None, self.owner) and (held > 0 or not mine):
            # another store's, even empty: it may be open, writing through its own handle
            if mine:
                raise StoreConflictError(
                    f"the collection {col.name!r} (namespace {namespace!r}) holds "
                    f"{held:,} records written by this store's state folder "
                    f"{self._owner_label!r} under another activation database. Either "
                    "that database was replaced (lost, truncated or made again) since: "
                    "restore it from a backup, or, to start over, delete the collection. "
                    "Or another app on a host of the same name, with a state folder at the "
                    "same path (two containers sharing the host's network, say), uses this "
                    "prefix: give each app its own prefix=... and delete nothing"
                )
            raise self.conflict(
                f"the collection {col.name!r} (namespace {namespace!r}, {held:,} records)",
                meta.get("oblivion_state", "?"),
            )
        if found == self.owner and other:
            self.relabelled[namespace] = other
        col.modify(
            metadata=meta | {"oblivion_store": self.owner, "oblivion_state": self._owner_label}
        )

    #: Whether this store is one engine's in-process Chroma (``Oblivion(None)``): its
    #: collections go when it closes (the in-process system is shared by every such
    #: store and outlives them; a closed one's data stayed, 3 MB per collection).
    ephemeral = False

    def close(self) -> None:
        """Release the Chroma client (``Client.close()``, chromadb 1.x): its files and the
        process-wide system it shares with other clients of the same path, once the last
        one closes. Without it, a store deleted and made again at the same path in one
        process (a notebook re-running the demo) would reopen the old, cached system.
        An :attr:`ephemeral` store deletes its collections first."""
        self._collections.clear()
        if self.ephemeral:
            with contextlib.suppress(Exception):  # releasing, not a reason to fail close()
                for col in self.client.list_collections():
                    name = getattr(col, "name", col)
                    if isinstance(name, str) and name.startswith(self.prefix):
                        self.client.delete_collection(name)
        closer = getattr(self.client, "close", None)
        if callable(closer):
            with contextlib.suppress(Exception):  # releasing, not a reason to fail close()
                closer()

    def new_call(self) -> None:
        """An engine call begins: its requests go to the server again, whatever an
        earlier call's did (see :meth:`_check_answering`)."""
        self._stalled = None

    def _check_answering(self, action: str, namespace: str) -> None:
        """Refuse at once a request of the engine call whose earlier request timed out:
        each would wait ``timeout=`` seconds more for a server known not to answer (a
        recall's checks, put-backs and query made one call wait five times as long),
        and the engine's lock with it."""
        if self._stalled is not None:
            raise VectorStoreError(
                f"{self._stall} (to {self._stalled}, earlier in this call), so it was not "
                f"asked to {action} (collection "
                f"{self.prefix + collection_name(namespace)!r}, namespace {namespace!r}). "
                f"Check that it is running and reachable, then retry (or give {self._wait_fix})"
            )

    def release(self, namespace: str) -> None:
        """Let go of the handle of ``namespace``'s collection (its namespace unloaded):
        a server with many users would otherwise hold one for every user it has seen.
        The next use opens it again."""
        self._collections.pop(namespace, None)

    def drop(self, namespace: str, *, strict: bool = False) -> None:
        """Delete the whole collection of ``namespace`` (``strict``: a failure other than
        its being absent raises :class:`VectorStoreError`: a compaction must not copy
        into the old collection and call itself done)."""
        self._collections.pop(namespace, None)
        self.unchecked.discard(namespace)
        try:
            self.client.delete_collection(self.prefix + collection_name(namespace))
        except Exception as exc:
            if strict and not _collection_gone(exc):
                raise self._error(exc, "delete the collection", namespace) from exc

    def drop_strays(
        self, known: Collection[str], most: int | None = None
    ) -> tuple[list[str], dict[str, int]]:
        """Delete the collections of this prefix that this store owns (their metadata
        names its owner id and state folder, as :meth:`held` reads them) made for a
        namespace not in ``known``: a namespace's first write killed between Chroma's
        add and its commit left one that nothing else removes, its texts on disk.
        Another store's collections, and other prefixes', are left alone. ``most``: one
        holding more records is kept (a namespace whose first commits a lost ``-wal``
        took: they are the only copy). Returns the namespaces dropped and those kept
        with their counts (none for a store not bound)."""
        if self.owner is None:
            return [], {}
        dropped: list[str] = []
        kept: dict[str, int] = {}
        try:
            listed = list(self.client.list_collections())
        except Exception as exc:
            raise self._error(exc, "list the collections", "*") from exc
        for col, _, ns, meta in self._of_this_prefix(listed):
            if (
                ns in known
                or meta.get("oblivion_store") != self.owner
                or meta.get("oblivion_state") != self._owner_label
            ):
                continue
            if most is not None:
                try:
                    held = int(col.count())
                except Exception as exc:
                    raise self._error(exc, "count the records", ns) from exc
                if held > most:
                    kept[ns] = held
                    continue
            self.drop(ns, strict=True)
            dropped.append(ns)
        return sorted(dropped), kept

    def compact_files(self) -> tuple[int, bool]:
        """For Chroma on disk (:attr:`folder`): delete the index folders of no collection
        (Chroma leaves a dropped collection's on disk, its vectors in them) and vacuum
        ``chroma.sqlite3`` (whose free pages keep deleted records' documents). Returns
        how many folders were deleted and whether the database was vacuumed; ``(0,
        False)`` for any other client.

        Folders are listed before the collections' indexes are read: an index another
        client of the folder makes meanwhile is not among them (Chroma records an index
        when it makes its collection, before it writes the index's folder).
        """
        import shutil
        import sqlite3

        folder = self.folder
        if folder is None or not (folder / "chroma.sqlite3").is_file():
            return 0, False
        listed = [p for p in folder.iterdir() if p.is_dir() and _is_uuid(p.name)]
        try:
            conn = sqlite3.connect(str(folder / "chroma.sqlite3"), timeout=30.0)
            try:
                live = {str(row[0]) for row in conn.execute("SELECT id FROM segments")}
                conn.execute("VACUUM")
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise VectorStoreError(
                f"could not compact the Chroma database in {str(folder)!r} ({exc}); the "
                "collections were made again and nothing is lost: call again when no "
                "other process is using that folder"
            ) from exc
        removed = 0
        for path in listed:
            if path.name not in live:
                with contextlib.suppress(OSError):
                    shutil.rmtree(path)
                    removed += 1
        return removed, True

    # ---------------------------------------------------------------- writes
    def _on(
        self, namespace: str, action: str, call: Callable[[Any], _T], *, read: bool = False
    ) -> _T:
        """``call(collection)``, with Chroma's errors as :class:`VectorStoreError`. A
        collection deleted on the server (or in the folder) since this store opened it
        is made again and the call tried once more: a cached handle of a dropped
        collection failed every later call until the store was reopened. So is one
        whose index embedded Chroma says is damaged, for a ``read`` (a query or count:
        :meth:`_remake`)."""
        for attempt in (0, 1):
            self._check_answering(action, namespace)
            col = self.collection(namespace)
            try:
                result = call(col)
            except OblivionError:
                raise
            except Exception as exc:
                if attempt == 0 and _collection_gone(exc):
                    self._collections.pop(namespace, None)
                    self.unchecked.add(namespace)  # made again, empty
                    continue
                if attempt == 0 and read and self._remake(namespace, action, exc):
                    continue
                raise self._error(exc, action, namespace) from exc
            self.outage_told = False  # it answered: the next outage is told again
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def _remake(self, namespace: str, action: str, exc: Exception) -> bool:
        """Make the collection of ``namespace`` again from the activation database
        (:attr:`on_damaged`) when embedded Chroma failed to ``action`` inside its index
        (:func:`_damaged_index`): a forget_many killed in Chroma's delete left every
        query of it failing, for good, with counts that agree (no check saw it). Once
        per namespace, so a failure that persists is raised. Returns whether it was made
        again (the call is then tried once more)."""
        if (
            self.on_damaged is None
            or namespace in self.remade
            or not (self.folder is not None or self.ephemeral)  # a server's are its own
            or not _damaged_index(exc)
        ):
            return False
        self.remade.add(namespace)
        if not self.on_damaged(namespace):  # not now (inside a transaction, say)
            self.remade.discard(namespace)
            return False
        logger.warning(
            "Chroma's index of the collection %r (namespace %r) was damaged (a process "
            "killed while Chroma wrote it, say): it failed to %s (%s). Made the "
            "collection again from the activation database, as "
            "compact_vector_store(namespace=...) does",
            self.prefix + collection_name(namespace),
            namespace,
            action,
            _said(exc),
        )
        return True

    def add(
        self,
        namespace: str,
        ids: Sequence[str],
        vectors: Vectors,
        texts: Sequence[str],
        metadatas: Sequence[Mapping[str, Any]] | None = None,
        *,
        made: Collection[str] = (),
    ) -> None:
        """Add (or overwrite) records; batched to the client's maximum batch size, and
        to requests a server takes (:data:`MAX_WRITE_BYTES`).
        ``texts`` are stored as documents only when :attr:`documents` is on (off, a
        new record has none, and one overwritten is left an empty document, not the
        text it held before).

        Chroma's ``add`` silently keeps the old vector and document of an id it already
        has, so it is used only for ids the collection cannot hold: ``made`` (ids the
        caller just generated, such as random UUIDs) and, in batches of at least
        :data:`CHECK_BATCH` given ids (any number without documents), those one ``get``
        says are absent. Anything else (an edit, a record a crash left behind under a
        given id) is written by ``upsert``, which costs about 15 % more (5,000 texts in
        batches of 500)."""
        metas = [dict(m) or None for m in metadatas] if metadatas is not None else None

        if isinstance(vectors, np.ndarray) and vectors.ndim == 1:  # one vector, as it is
            vectors = vectors.reshape(1, -1)
        dim = len(vectors[0]) if len(vectors) else 0
        docs_sent = texts if self.documents else None
        spans = _write_spans(ids, docs_sent, metas, dim, self.max_batch)

        def write(col: Any) -> None:  # trying it again is harmless: see the docstring
            for start, end in spans:
                chunk = list(ids[start:end])
                given = [i for i in chunk if i not in made]
                # (without documents, always: an upsert could only empty a new one's)
                check = len(given) >= CHECK_BATCH or not self.documents
                absent = not given or (check and not col.get(ids=given, include=[])["ids"])
                if self.documents:
                    docs: list[str] | None = list(texts[start:end])
                else:  # an upsert given none keeps the record's old one: emptied instead
                    docs = None if absent else [""] * len(chunk)
                (col.add if absent else col.upsert)(
                    ids=chunk,
                    embeddings=vectors[start:end],
                    documents=docs,
                    metadatas=metas[start:end] if metas is not None else None,
                )

        self._on(namespace, f"add {len(ids)} record(s)", write)

    def delete(self, namespace: str, ids: Sequence[str]) -> None:
        """Delete records by id (unknown ids are ignored)."""

        def delete(col: Any) -> None:
            for start in range(0, len(ids), self.max_batch):
                col.delete(ids=list(ids[start : start + self.max_batch]))

        if ids:
            self._on(namespace, f"delete {len(ids)} record(s)", delete)

    # ---------------------------------------------------------------- reads
    def query(self, namespace: str, vector: Vectors, n: int) -> tuple[list[str], list[float]]:
        """Top-``n`` ids and cosine similarities for one unit query vector (ANN).

        Chroma returns fewer rows when the collection is smaller than ``n`` (no ``count()``
        first: in chromadb 1.5 it costs more than the query itself at 100k records).
        """
        if n <= 0:
            return [], []
        res = self._on(
            namespace,
            "query",
            lambda col: col.query(
                query_embeddings=vector.reshape(1, -1), n_results=n, include=["distances"]
            ),
            read=True,
        )
        ids = list(res["ids"][0])
        sims = [1.0 - float(d) for d in res["distances"][0]]
        return ids, sims

    def vectors(self, namespace: str, ids: Sequence[str]) -> dict[str, Vectors]:
        """Stored vectors by id (missing ids are absent from the result)."""

        def get(col: Any) -> dict[str, Vectors]:
            out: dict[str, Vectors] = {}
            for start in range(0, len(ids), self.max_batch):
                res = col.get(ids=list(ids[start : start + self.max_batch]), include=["embeddings"])
                for i, vec in zip(res["ids"], res["embeddings"], strict=True):
                    out[i] = np.asarray(vec, dtype=np.float32)
            return out

        return self._on(namespace, f"get the vectors of {len(ids)} record(s)", get)

    def records(
        self, namespace: str, ids: Sequence[str]
    ) -> dict[str, tuple[Vectors, str | None, Any]]:
        """Stored records by id: (vector, document, category); missing ids are absent."""

        def get(col: Any) -> dict[str, tuple[Vectors, str | None, Any]]:
            out: dict[str, tuple[Vectors, str | None, Any]] = {}
            for start in range(0, len(ids), self.max_batch):
                res = col.get(
                    ids=list(ids[start : start + self.max_batch]),
                    include=["embeddings", "documents", "metadatas"],
                )
                rows = zip(
                    res["ids"], res["embeddings"], res["documents"], res["metadatas"], strict=True
                )
                for i, vec, doc, meta in rows:
                    category = (meta or {}).get("category")
                    out[i] = (np.asarray(vec, dtype=np.float32), doc, category)
            return out

        return self._on(namespace, f"get {len(ids)} record(s)", get)

    def ids(self, namespace: str) -> set[str]:
        """Every record id of ``namespace``'s collection."""

        def every(col: Any) -> set[str]:
            out: set[str] = set()
            while True:
                res = col.get(include=[], limit=self.max_batch, offset=len(out))
                if not res["ids"]:
                    return out
                out.update(res["ids"])

        return self._on(namespace, "list the record ids", every)

    def conflict(self, what: str, other: object) -> StoreConflictError:
        """The error for ``what`` belonging to the Oblivion store whose state is ``other``."""
        return StoreConflictError(
            f"{what} belongs to another Oblivion store (whose state is {other!r}), not to "
            f"this one (whose state is {self._owner_label!r}). On a Chroma server, give each "
            f"store its own prefix (VectorStore.server(..., prefix=...); this one's is "
            f"{self.prefix!r}); if that store's state is gone for good, delete its "
            "collections"
        )

    def held(self) -> dict[str | None, int]:
        """Vectors in this prefix's collections across namespaces, by the state folder of
        the Oblivion store that owns each collection (``None``: written before owners were
        recorded); empty if Chroma cannot list them. A collection is this prefix's when
        Oblivion made it for a namespace and its name is exactly ``prefix`` + that
        namespace's name: another store whose prefix merely starts with this one's
        (``app`` and ``app2-``) is not this one."""
        held: dict[str | None, int] = {}
        try:
            for col, _, _, meta in self._of_this_prefix(self.client.list_collections()):
                n = int(col.count())
                if n:
                    owner = meta.get("oblivion_state") if "oblivion_store" in meta else None
                    held[owner] = held.get(owner, 0) + n
        except Exception:  # a check, not a requirement
            return {}
        return held

    def _of_this_prefix(
        self, listed: Iterable[Any]
    ) -> Iterator[tuple[Any, str, str, Mapping[str, Any]]]:
        """The collections of ``listed`` that Oblivion made for a namespace under this
        prefix, as (collection, name, namespace, metadata): its name is exactly
        ``prefix`` + the namespace's (``app`` and ``app2-`` are not one prefix)."""
        for col in listed:
            name = getattr(col, "name", col)
            meta = getattr(col, "metadata", None) or {}
            ns = meta.get("oblivion_namespace")
            if isinstance(ns, str) and name == self.prefix + collection_name(ns):
                yield col, name, ns, meta

    def count(self, namespace: str) -> int:
        """Number of records in the collection of ``namespace``."""
        return int(self._on(namespace, "count the records", lambda col: col.count(), read=True))
