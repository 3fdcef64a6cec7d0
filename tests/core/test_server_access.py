"""Reaching a Chroma server as deployed: behind a proxy that checks a token
(``headers=``), and in a tenant and database of its own (``tenant=``, ``database=``).
A real ``chroma run`` server throughout; the proxy is a real HTTP server in front of it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oblivion_core import (
    InvalidInputError,
    VectorStore,
    VectorStoreError,
)

from ._token_proxy import REFUSALS, TokenProxy
from .test_store_owner import _open

pytestmark = pytest.mark.server

TOKEN = "s3cret-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(params=sorted(REFUSALS))
def proxy(request: pytest.FixtureRequest, chroma_server: tuple[str, int]) -> Iterator[TokenProxy]:
    """The shared server behind a token-checking proxy that refuses as nginx does (a
    plain 401 page) or as Chroma's own auth does (its 403 error body)."""
    with TokenProxy(chroma_server[1], TOKEN, refusal=request.param).running() as running:
        yield running


def _direct(server: tuple[str, int], database: str = "default_database") -> Any:
    import chromadb

    return chromadb.HttpClient(host=server[0], port=server[1], database=database)


def _collections(client: Any, prefix: str) -> list[str]:
    return [c.name for c in client.list_collections() if c.name.startswith(prefix)]


def test_a_store_behind_a_token_checking_proxy_works_and_reopens(
    tmp_path: Path, proxy: TokenProxy, chroma_server: tuple[str, int]
) -> None:
    """With the token as ``headers=``, every request passes the proxy: memories are
    written to the server behind it, recalled, and found again after a reopen."""
    prefix = "tok-" + uuid.uuid4().hex[:8] + "-"
    store = VectorStore.server("localhost", proxy.port, headers=BEARER, prefix=prefix)
    with _open(tmp_path / "state", store) as mem:
        kept = mem.remember("The deploy key lives in the vault, not the repo.").id
        mem.remember("Lunch was a sandwich.")
        assert mem.recall("where is the deploy key", k=1)[0].id == kept
    assert proxy.forwarded > 0
    assert proxy.refused == 0
    assert len(_collections(_direct(chroma_server), prefix)) == 1

    again = VectorStore.server("localhost", proxy.port, headers=BEARER, prefix=prefix)
    with _open(tmp_path / "state", again) as mem:
        assert mem.count() == 2
        assert mem.recall("where is the deploy key", k=1, deep=True)[0].id == kept


@pytest.mark.parametrize("headers", [None, {"Authorization": "Bearer wrong"}])
def test_missing_or_wrong_credentials_say_to_pass_headers(
    proxy: TokenProxy, headers: dict[str, str] | None
) -> None:
    """Refused at the door, the error says the server refused and names ``headers=``,
    not "start the server" (it is running)."""
    with pytest.raises(VectorStoreError, match=r"refused the request.*headers=") as caught:
        VectorStore.server("localhost", proxy.port, headers=headers)
    assert "chroma run" not in str(caught.value)
    assert proxy.refused > 0


def test_a_rotated_token_is_named_and_loses_nothing(tmp_path: Path, proxy: TokenProxy) -> None:
    """The token changes while the store is open: a write says the server refused and
    to check the credentials; what was stored before stays, and with the token back the
    store goes on."""
    prefix = "rot-" + uuid.uuid4().hex[:8] + "-"
    store = VectorStore.server("localhost", proxy.port, headers=BEARER, prefix=prefix)
    with _open(tmp_path / "state", store) as mem:
        kept = mem.remember("The standup moved to 9:30.").id
        proxy.token = "rotated"
        with pytest.raises(VectorStoreError, match=r"refused.*headers=") as caught:
            mem.remember("The retro is on Friday.")
        assert "free space" not in str(caught.value)
        proxy.token = TOKEN
        assert mem.count() == 1
        assert [i.id for i in mem.recall("when is standup", k=1, deep=True)] == [kept]
        later = mem.remember("The retro is on Friday.").id
        assert mem.recall("when is the retro", k=1, deep=True)[0].id == later


def test_a_database_of_its_own(tmp_path: Path, chroma_server: tuple[str, int]) -> None:
    """``database=`` puts the collections in that database and none in the default one;
    two stores with one prefix in two databases do not meet."""
    import chromadb
    from chromadb.config import Settings

    host, port = chroma_server
    admin = chromadb.AdminClient(
        Settings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host=host,
            chroma_server_http_port=port,
        )
    )
    database = "team-" + uuid.uuid4().hex[:8]
    admin.create_database(database)
    prefix = "db-" + uuid.uuid4().hex[:8] + "-"

    with (
        _open(
            tmp_path / "a", VectorStore.server(host, port, database=database, prefix=prefix)
        ) as a,
        _open(tmp_path / "b", VectorStore.server(host, port, prefix=prefix)) as b,
    ):
        a.remember("Team A ships on Tuesdays.")
        b.remember("Team B ships on Thursdays.")
        assert [i.text for i in a.recall("when do we ship", deep=True)] == [
            "Team A ships on Tuesdays."
        ]
        assert [i.text for i in b.recall("when do we ship", deep=True)] == [
            "Team B ships on Thursdays."
        ]
    assert len(_collections(_direct(chroma_server, database), prefix)) == 1
    assert len(_collections(_direct(chroma_server), prefix)) == 1


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ({"database": "no-such-db"}, "'no-such-db'"),
        ({"tenant": "no-such-tenant"}, "'no-such-tenant'"),
    ],
)
def test_an_unknown_tenant_or_database_says_to_create_it(
    chroma_server: tuple[str, int], where: dict[str, str], named: str
) -> None:
    with pytest.raises(
        VectorStoreError, match=r"no such tenant or database.*AdminClient"
    ) as caught:
        VectorStore.server(*chroma_server, **where)
    assert named in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"headers": "Bearer x"}, "headers"),
        ({"headers": {"Authorization": 42}}, "headers"),
        ({"headers": [("Authorization", "Bearer x")]}, "headers"),
        ({"headers": {"Authorization: Bearer": "x"}}, "headers"),
        ({"headers": {"": "x"}}, "headers"),
        ({"tenant": ""}, "tenant"),
        ({"database": "  "}, "database"),
        ({"database": None}, "database"),
    ],
)
def test_bad_server_arguments_are_named_before_connecting(
    kwargs: dict[str, Any], named: str
) -> None:
    """Checked before any request (port 1 has no server: the error is about the argument)."""
    with pytest.raises(InvalidInputError, match=rf"^{named} must"):
        VectorStore.server("localhost", 1, **kwargs)


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer sk-SECRET-1234", "X-Timeout": 30},
        {"X-Timeout": None, "Authorization": "Bearer sk-SECRET-1234"},
        {"Authorization": b"Bearer sk-SECRET-1234"},
        {"Authorization": "Bearer sk-SECRET-1234\n"},  # read from a file
        {"Authorization": "Bearer sk-SECRET-1234\r\nX-Evil: 1"},
        {"Authorization": "Bearer sk-SECRET-1234\x00"},
        {"Authorization": "Bearer sk-SECRET-1234\u2603"},
        # Chroma's client sends ASCII and refuses control characters: these passed the
        # check, then failed as "start it (chroma run ...)" with the server running
        {"Authorization": "Bearer sk-SECRET-1234\u00e9"},
        {"Authorization": "Bearer sk-SECRET-1234\x01"},
        {"Authorization": "Bearer sk-SECRET-1234\x7f"},
    ],
)
def test_a_bad_header_is_named_without_showing_any_value(headers: dict[str, Any]) -> None:
    """The error quoted the whole mapping: a bearer token went to logs and tracebacks."""
    with pytest.raises(InvalidInputError, match=r"^headers must") as err:
        VectorStore.server("localhost", 1, headers=headers)
    assert "SECRET" not in str(err.value)
    assert "is not shown" in str(err.value)


def test_https_asked_of_a_plain_http_server_says_tls_failed(
    chroma_server: tuple[str, int],
) -> None:
    """The server runs and answers: the error names the TLS handshake and ``ssl=False``,
    not "start it" (Chroma's client words every connection failure as "are you sure it
    is running")."""
    with pytest.raises(VectorStoreError) as caught:
        VectorStore.server(*chroma_server, ssl=True, timeout=10)
    said = str(caught.value)
    assert "TLS handshake failed" in said and "pass ssl=False" in said
    assert "chroma run" not in said and "are you sure" not in said.lower()


def test_a_server_not_answering_plain_http_may_speak_https() -> None:
    with pytest.raises(VectorStoreError, match=r"start it .*ssl=True if it speaks HTTPS"):
        VectorStore.server("localhost", 1, timeout=10)
