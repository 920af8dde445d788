"""``gatebench serve``: the frontend, the read and upload APIs and the run queue in one process.

Routes::

    GET  /config.json             the site configuration (SiteConfig)
    GET  /api/runs ...            the read API (handle_read) over the result store
    POST /api/validate            check a spec (handle_upload), nothing runs
    POST /api/uploads             check a spec and queue its run (202 + run id), or answer
                                  a signed URL (--upload signed-url)
    PUT  /bucket/specs/NAME?...   the stand-in bucket for signed uploads (--upload signed-url)
    GET  /...                     a file of frontend/ (resolve_static), nothing else

What keeps a local server safe to leave running: it binds 127.0.0.1 unless told otherwise;
on loopback it answers only requests whose ``Host`` names loopback (a DNS-rebinding page
cannot reach it); a POST needs the ``X-Gatebench`` header and, when the browser sends an
``Origin``, the server's own (a cross-site form or fetch cannot start a run); bodies over
the size limit are refused from their ``Content-Length`` without being read (413);
every answer carries a strict Content-Security-Policy; results are read-only.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..renderers import local_gateway_names
from ..spec import DEFAULT_LIMITS
from ..store import ResultStore
from ._api import handle_read, handle_upload, too_large
from ._bucket import LocalBucket
from ._queue import DirectUploads, RunQueue
from ._reply import REASONS, Reply
from ._site import SiteConfig
from ._static import content_type, resolve_static
from ._uploads import UploadAcceptor

CSRF_HEADER = "x-gatebench"
SITE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'{extra}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class App:
    """Everything a request may touch; the handler only moves bytes."""

    frontend: Path
    store: ResultStore
    queue: RunQueue
    site: SiteConfig
    max_bytes: int = DEFAULT_LIMITS.max_bytes
    bucket: LocalBucket | None = None
    loopback_only: bool = True
    port: int = 0
    log: Callable[[str], None] = lambda line: None
    local_gateways: tuple[str, ...] = field(default_factory=local_gateway_names)

    def allowed_host(self, host: str | None) -> bool:
        if not self.loopback_only:
            return True
        return host in {f"{name}:{self.port}" for name in LOOPBACK_NAMES}

    def site_csp(self) -> str:
        extra = "".join(f" {o}" for o in self.site.origins())
        return SITE_CSP.format(extra=extra)

    def acceptor(self, base_url: str) -> UploadAcceptor:
        if self.bucket is not None:
            return self.bucket.uploads(base_url)
        return DirectUploads(self.queue)


class Handler(BaseHTTPRequestHandler):
    server_version = "gatebench"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    server: GatebenchHTTPServer
    _body_read = False

    # Every method goes through one dispatcher, so unknown ones get a clean 405.
    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_OPTIONS(self) -> None:
        self._dispatch()

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def app(self) -> App:
        return self.server.app

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _dispatch(self) -> None:
        self._body_read = False
        try:
            reply = self._route()
        except Exception as exc:  # one broken request must not take the server down
            self.app.log(f"{self.command} {self.path[:200]}: internal error: {exc!r}")
            reply = Reply.error(500, "internal error; see the server's log")
        sent_body = (
            self.headers.get("Content-Length", "0") != "0" or "Transfer-Encoding" in self.headers
        )
        if sent_body and not self._body_read:
            self.close_connection = True  # an unread body must not be parsed as the next request
        self._send(reply)

    def _route(self) -> Reply:
        headers = self._headers()
        if not self.app.allowed_host(headers.get("host")):
            self.close_connection = True
            return Reply.error(
                421, "this server answers only requests addressed to 127.0.0.1 or localhost"
            )
        raw = self.path
        if not raw.startswith("/"):
            return Reply.error(400, "expected a path starting with '/'")
        path, _, query_string = raw.partition("?")
        query = _query(query_string)
        if path == "/config.json":
            if self.command not in ("GET", "HEAD"):
                return _not_allowed("GET, HEAD")
            return Reply.json(200, self.app.site.to_dict())
        if path in ("/api/validate", "/api/uploads"):
            return self._upload(path.removeprefix("/api"), query, headers)
        if path == "/api" or path.startswith("/api/"):
            return handle_read(
                self.app.store, self.command, path.removeprefix("/api"), query, live=self.app.queue
            )
        if path.startswith("/bucket/") and self.app.bucket is not None:
            return self._bucket_put(path.removeprefix("/bucket/"), query, headers)
        return self._static(path)

    def _origin_ok(self, headers: Mapping[str, str]) -> bool:
        origin = headers.get("origin")
        return origin is None or origin == f"http://{headers.get('host', '')}"

    def _read_body(self, headers: Mapping[str, str]) -> bytes | Reply:
        if "transfer-encoding" in headers:
            self.close_connection = True
            return Reply.error(411, "send the body with a Content-Length (no chunked uploads)")
        length_text = headers.get("content-length")
        if length_text is None or not length_text.isdigit():
            self.close_connection = True
            return Reply.error(411, "a Content-Length header is required")
        length = int(length_text)
        if length > self.app.max_bytes:
            self.close_connection = True  # the body is never read
            return too_large(length, self.app.max_bytes)
        self._body_read = True
        return self.rfile.read(length)

    def _upload(self, route: str, query: Mapping[str, str], headers: Mapping[str, str]) -> Reply:
        if self.command != "POST":
            return _not_allowed("POST")
        if CSRF_HEADER not in headers:
            self.close_connection = True
            return Reply.error(
                403,
                "uploads need the X-Gatebench header (the gatebench page sends it; a form on "
                "another site cannot)",
            )
        if not self._origin_ok(headers):
            self.close_connection = True
            return Reply.error(403, f"origin {headers.get('origin')!r} may not upload here")
        body = self._read_body(headers)
        if isinstance(body, Reply):
            return body
        base_url = f"http://{headers.get('host', '')}"
        reply = handle_upload(
            "POST",
            route,
            query,
            body,
            accept=self.app.acceptor(base_url),
            max_bytes=self.app.max_bytes,
            local_gateways=self.app.local_gateways,
        )
        if reply.status >= 400 or route == "/uploads":
            self.app.log(f"POST /api{route} {query.get('name', '')!r}: {reply.status}")
        return reply

    def _bucket_put(
        self, object_name: str, query: Mapping[str, str], headers: Mapping[str, str]
    ) -> Reply:
        assert self.app.bucket is not None
        if self.command != "PUT":
            return _not_allowed("PUT")
        if not self._origin_ok(headers):
            return Reply.error(403, f"origin {headers.get('origin')!r} may not upload here")
        body = self._read_body(headers)
        if isinstance(body, Reply):
            return body
        reply = self.app.bucket.put(
            unquote(object_name),
            query,
            headers,
            body,
            base_url=f"http://{headers.get('host', '')}",
        )
        self.app.log(f"PUT /bucket/{object_name[:120]}: {reply.status}")
        return reply

    def _static(self, path: str) -> Reply:
        if self.command not in ("GET", "HEAD"):
            return _not_allowed("GET, HEAD")
        found = resolve_static(self.app.frontend, path)
        if found is None:
            return Reply.error(404, "not found")
        return Reply(200, found.read_bytes(), content_type(found), (("Cache-Control", "no-cache"),))

    def _send(self, reply: Reply) -> None:
        body = b"" if self.command == "HEAD" else reply.body
        self.send_response(reply.status, REASONS.get(reply.status))
        headers = reply.header_map()
        headers.setdefault("Cache-Control", "no-store")
        csp = (
            REPORT_CSP
            if reply.content_type.startswith("text/html") and self.path.startswith("/api/")
            else self.app.site_csp()
        )
        headers.update(
            {
                "Content-Length": str(len(reply.body)),
                "Content-Security-Policy": csp,
                "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer",
                "X-Frame-Options": "DENY",
                "Cross-Origin-Opener-Policy": "same-origin",
                "Cross-Origin-Resource-Policy": "same-origin",
            }
        )
        if self.close_connection:
            headers["Connection"] = "close"
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # uploads and errors are logged where they are handled

    def log_error(self, format: str, *args: Any) -> None:
        self.app.log(f"{self.address_string()}: {format % args}")


def _query(text: str) -> dict[str, str]:
    from urllib.parse import parse_qsl

    out: dict[str, str] = {}
    for key, value in parse_qsl(text, keep_blank_values=True):
        out.setdefault(key, value)  # the first value wins
    return out


def _not_allowed(allowed: str) -> Reply:
    return Reply.error(405, f"method not allowed here; use {allowed}", headers=[("Allow", allowed)])


class GatebenchHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.app = app
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        app.port = self.server_address[1]


def build_server(
    *,
    host: str,
    port: int,
    frontend: Path,
    store: ResultStore,
    store_location: str,
    results_dir: Path,
    max_bytes: int = DEFAULT_LIMITS.max_bytes,
    upload_method: str = "direct",
    site: SiteConfig | None = None,
    stop_timeout: float = 60.0,
    start_queue: bool = True,
    sweep: bool = False,
    log: Callable[[str], None] = lambda line: print(f"gatebench serve: {line}", file=sys.stderr),
) -> GatebenchHTTPServer:
    """The server, bound and ready for ``serve_forever``; its queue is started unless
    ``start_queue`` is false (runs then wait in the queue: tests of the HTTP layer)."""
    queue = RunQueue(
        store, store_location, results_dir, stop_timeout=stop_timeout, sweep=sweep, log=log
    )
    bucket = None
    if upload_method == "signed-url":
        bucket = LocalBucket(results_dir / "uploads" / "bucket", queue, max_bytes)
    config = site or SiteConfig(upload_method=upload_method, max_bytes=max_bytes)  # type: ignore[arg-type]
    app = App(
        frontend=frontend,
        store=store,
        queue=queue,
        site=config,
        max_bytes=max_bytes,
        bucket=bucket,
        loopback_only=is_loopback(host),
        log=log,
    )
    server = GatebenchHTTPServer((host, port), app)
    if start_queue:
        queue.start()
    return server


__all__ = ["App", "GatebenchHTTPServer", "Handler", "build_server", "is_loopback"]
