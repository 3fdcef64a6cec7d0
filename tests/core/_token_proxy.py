"""A reverse proxy that checks a bearer token in front of a real ``chroma run`` server, as
nginx or an API gateway does where a Chroma server is shared: what
``VectorStore.server(..., headers=...)`` is for."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: What each kind of gateway answers a request without the token: nginx's plain page
#: (HTTP 401), or Chroma's own error body (HTTP 403, what a Chroma server's auth sends).
REFUSALS = {
    "nginx": (401, "text/html", b"<html><body><h1>401 Authorization Required</h1></body></html>"),
    "chroma": (403, "application/json", b'{"error":"AuthError","message":"Forbidden"}'),
}

_HOP = {"host", "connection", "content-length", "transfer-encoding", "accept-encoding"}


class TokenProxy:
    """Forwards requests carrying ``Authorization: Bearer <token>`` to the server at
    ``localhost:upstream``; refuses the rest the ``refusal`` way (:data:`REFUSALS`).
    ``token`` may be changed while it runs (a rotated credential)."""

    def __init__(self, upstream: int, token: str, refusal: str = "nginx") -> None:
        self.upstream, self.token, self.refusal = upstream, token, refusal
        self.forwarded = 0
        self.refused = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _send(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.headers.get("Authorization") != f"Bearer {proxy.token}":
                    proxy.refused += 1
                    status, kind, page = REFUSALS[proxy.refusal]
                    self._send(status, [("Content-Type", kind)], page)
                    return
                proxy.forwarded += 1
                ahead = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                del ahead["Authorization"]
                conn = http.client.HTTPConnection("localhost", proxy.upstream, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=ahead)
                    answer = conn.getresponse()
                    data = answer.read()
                finally:
                    conn.close()
                back = [(k, v) for k, v in answer.getheaders() if k.lower() not in _HOP]
                self._send(answer.status, back, data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

        self._server = ThreadingHTTPServer(("localhost", 0), Handler)
        self.port = int(self._server.server_address[1])

    @contextmanager
    def running(self) -> Iterator[TokenProxy]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join(timeout=10)
