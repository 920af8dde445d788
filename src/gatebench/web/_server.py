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

What keeps it bounded (:class:`ServeLimits`, each a flag of ``gatebench serve``; docs/frontend.md):
at most ``max_queued`` runs wait (429 with ``Retry-After`` and the queue's length beyond); at most
``max_parses`` uploads are read and checked at once, the others wait for a slot (503 with
``Retry-After`` when none frees in time), so memory grows with the slots, not with the callers
(a refused upload's body is read in chunks and dropped, so its sender gets the answer);
at most ``max_connections`` connections are served (503 at once beyond, without a thread);
a request's head must arrive within ``read_timeout`` and its body within ``read_timeout`` plus
its length at ``min_body_rate`` (408, then the connection is closed), whatever the pace of its
bytes; a ``Content-Length`` that is not a plain number is a 400, a missing one a 411.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from gatebench.core.renderers import local_gateway_names
from gatebench.core.spec import DEFAULT_LIMITS
from gatebench.store import ResultStore
from gatebench.web._api import handle_read, handle_upload, too_large
from gatebench.web._bucket import LocalBucket
from gatebench.web._limits import ServeLimits
from gatebench.web._queue import DirectUploads, QueueFull, RunQueue, queue_full
from gatebench.web._reply import REASONS, Reply
from gatebench.web._site import SiteConfig
from gatebench.web._static import content_type, resolve_static
from gatebench.web._uploads import UploadAcceptor

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
_LENGTH = re.compile(r"[0-9]{1,18}")
"""A Content-Length: ASCII digits only (``str.isdigit`` also takes ``²`` and ``٣``)."""
RETRY_AFTER_BUSY_S = 5
"""What a 503 for a busy parse slot tells the client to wait: a check takes seconds."""


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
    limits: ServeLimits = field(default_factory=ServeLimits)
    parse_slots: threading.BoundedSemaphore = field(init=False)
    parse_pool: ThreadPoolExecutor = field(init=False)

    def __post_init__(self) -> None:
        self.parse_slots = threading.BoundedSemaphore(self.limits.max_parses)
        self.parse_pool = ThreadPoolExecutor(
            self.limits.max_parses, thread_name_prefix="gatebench-parse"
        )

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


class _DeadlineReader(io.RawIOBase):
    """The connection's reading side, with a deadline for everything read until it is moved
    (a socket timeout alone bounds each ``recv``, so a byte a second would never end)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deadline = float("inf")
        self.expired = False
        self.received = 0
        """Bytes read since the deadline was last set."""

    def until(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.expired = False
        self.received = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self.expired = True
            raise TimeoutError("the request took longer than its read deadline")
        self.sock.settimeout(remaining)
        try:
            n = self.sock.recv_into(buffer)
        except TimeoutError:
            self.expired = True
            raise
        self.received += n
        return n


class Handler(BaseHTTPRequestHandler):
    server_version = "gatebench"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    server: GatebenchHTTPServer
    _body_read = False
    _reader: _DeadlineReader
    _answered = False

    def setup(self) -> None:
        super().setup()
        self._reader = _DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self._reader, 65536)

    def handle_one_request(self) -> None:
        # the head (request line and headers) of the next request, idle time included
        self._reader.until(self.app.limits.read_timeout)
        self._answered = False
        # what a 408 needs when the request line itself did not arrive (parse_request sets them)
        self.command, self.path, self.request_version = "", "", "HTTP/1.1"
        super().handle_one_request()
        if self._reader.expired and self._reader.received and not self._answered:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._send(
                    Reply.error(
                        408,
                        f"the request's head did not arrive within "
                        f"{self.app.limits.read_timeout:g} s (--read-timeout)",
                    )
                )

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

    def _read_body(self, headers: Mapping[str, str], *, keep: bool = True) -> bytes | Reply:
        """The request's body, or the reply that refuses it. ``keep=False`` reads it to
        discard it (a refused upload: its sender then reads the answer instead of a reset
        connection), in chunks, whatever its size."""
        if "transfer-encoding" in headers:
            self.close_connection = True
            return Reply.error(411, "send the body with a Content-Length (no chunked uploads)")
        lengths = self.headers.get_all("Content-Length") or []
        if not lengths:
            self.close_connection = True
            return Reply.error(411, "a Content-Length header is required")
        if len(set(lengths)) > 1 or not _LENGTH.fullmatch(lengths[0]):
            self.close_connection = True
            shown = ", ".join(repr(v[:20]) for v in lengths[:3])
            return Reply.error(
                400, f"Content-Length: expected a whole number of bytes, got {shown}"
            )
        length = int(lengths[0])
        if length > self.app.max_bytes:
            self.close_connection = True  # the body is never read
            return too_large(length, self.app.max_bytes)
        self._body_read = True
        allowed = self.app.limits.body_deadline(length)
        self._reader.until(allowed)
        chunks: list[bytes] = []
        got = 0
        try:
            while got < length:
                chunk = self.rfile.read1(min(length - got, 1 << 20))
                if not chunk:
                    break
                if keep:
                    chunks.append(chunk)
                got += len(chunk)
        except TimeoutError:
            pass
        if got < length:
            self.close_connection = True
            if not self._reader.expired:
                return Reply.error(400, f"the body ended after {got:,} of {length:,} bytes")
            return Reply.error(
                408,
                f"the body stopped after {got:,} of {length:,} bytes: it must arrive within "
                f"{allowed:.0f} s (--read-timeout, plus its length at "
                f"{self.app.limits.min_body_rate // 1024} KiB/s)",
            )
        return b"".join(chunks)

    def _after_draining(self, reply: Reply, headers: Mapping[str, str]) -> Reply:
        """``reply``, once the body it refuses has been read and dropped (or the reason the
        body itself is refused)."""
        drained = self._read_body(headers, keep=False)
        return drained if isinstance(drained, Reply) else reply

    def _in_parse_slot(self, headers: Mapping[str, str], check: Callable[[bytes], Reply]) -> Reply:
        """Read the body and ``check`` it in one of the ``max_parses`` parse threads, once a
        slot is free (a 503 after ``parse_wait``). The same few threads do every read and
        parse, so the memory the allocator keeps after a large upload stays with them instead
        of growing with every thread that ever served one."""
        busy = self._parse_slot()
        if busy is not None:
            return self._after_draining(busy, headers)

        def read_and_check() -> Reply:
            body = self._read_body(headers)
            return body if isinstance(body, Reply) else check(body)

        try:
            return self.app.parse_pool.submit(read_and_check).result()
        finally:
            self.app.parse_slots.release()

    def _parse_slot(self) -> Reply | None:
        """Wait for a free parse slot (None: got one; release it); a 503 when none frees."""
        limits = self.app.limits
        if self.app.parse_slots.acquire(timeout=limits.parse_wait):
            return None
        n = limits.max_parses
        return Reply.error(
            503,
            f"{n} upload{'s are' if n != 1 else ' is'} being checked (the limit is {n}, "
            "--max-parses); try again in a few seconds",
            headers=[("Retry-After", str(RETRY_AFTER_BUSY_S))],
        )

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
        if route == "/uploads":
            try:
                self.app.queue.check_room()  # before the body is checked
            except QueueFull as exc:
                return self._after_draining(queue_full(exc), headers)
        base_url = f"http://{headers.get('host', '')}"
        reply = self._in_parse_slot(
            headers,
            lambda body: handle_upload(
                "POST",
                route,
                query,
                body,
                accept=self.app.acceptor(base_url),
                max_bytes=self.app.max_bytes,
                local_gateways=self.app.local_gateways,
            ),
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
        bucket = self.app.bucket
        reply = self._in_parse_slot(
            headers,
            lambda body: bucket.put(
                unquote(object_name),
                query,
                headers,
                body,
                base_url=f"http://{headers.get('host', '')}",
            ),
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
        self._answered = True
        # a client that does not read its answer holds a thread no longer than a slow one
        self.connection.settimeout(self.app.limits.read_timeout)
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
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.app = app
        self._connections = 0
        self._count_lock = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        app.port = self.server_address[1]

    @property
    def connections(self) -> int:
        """Connections being served now (each by a thread)."""
        with self._count_lock:
            return self._connections

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread per connection, up to ``max_connections``; beyond, a 503 from the
        accepting thread itself and the connection closed."""
        with self._count_lock:
            full = self._connections >= self.app.limits.max_connections
            if not full:
                self._connections += 1
        if full:
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def server_close(self) -> None:
        super().server_close()
        self.app.parse_pool.shutdown(wait=False)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line in the server's log, not a traceback on stderr: a client that goes away
        mid-answer (a closed tab, a refused upload's sender) is routine."""
        exc = sys.exc_info()[1]
        self.app.log(f"connection from {client_address[0]}: {exc!r}")

    def _release(self) -> None:
        with self._count_lock:
            self._connections -= 1

    def _refuse(self, request: socket.socket) -> None:
        n = self.app.limits.max_connections
        reply = Reply.error(
            503,
            f"the server is serving {n} connections (the limit, --max-connections); try again "
            "in a second",
        )
        head = "".join(
            f"{name}: {value}\r\n"
            for name, value in {
                **reply.header_map(),
                "Content-Length": str(len(reply.body)),
                "Retry-After": "1",
                "Connection": "close",
            }.items()
        )
        with contextlib.suppress(OSError):
            request.settimeout(1.0)
            request.sendall(f"HTTP/1.1 503 {REASONS[503]}\r\n{head}\r\n".encode() + reply.body)
        self.shutdown_request(request)
        self.app.log(f"refused a connection: {n} are being served (--max-connections)")


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
    limits: ServeLimits | None = None,
    log: Callable[[str], None] = lambda line: print(f"gatebench serve: {line}", file=sys.stderr),
) -> GatebenchHTTPServer:
    """The server, bound and ready for ``serve_forever``; its queue is started unless
    ``start_queue`` is false (runs then wait in the queue: tests of the HTTP layer)."""
    limits = limits or ServeLimits()
    queue = RunQueue(
        store,
        store_location,
        results_dir,
        max_queued=limits.max_queued,
        stop_timeout=stop_timeout,
        sweep=sweep,
        log=log,
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
        limits=limits,
    )
    server = GatebenchHTTPServer((host, port), app)
    if start_queue:
        queue.start()
    return server


__all__ = ["App", "GatebenchHTTPServer", "Handler", "ServeLimits", "build_server", "is_loopback"]
