"""``gatebench serve``: the dashboard's Flask app for this machine, served by waitress.

Routes::

    GET  /config.json             the site configuration (SiteConfig)
    GET  /api/runs ...            the read API over the result store
    POST /api/validate            check a spec, nothing runs
    POST /api/uploads             check a spec and queue its run (202 + run id; the queue is
                                  gatebench.local.queue), or answer a signed URL
                                  (--upload signed-url)
    PUT  /bucket/specs/NAME?...   the stand-in bucket for signed uploads (--upload signed-url;
                                  gatebench.local.bucket)
    GET  /...                     a file of frontend/ (resolve_static), nothing else

What keeps it safe to leave running: it binds 127.0.0.1 unless told otherwise; on loopback it
answers only requests whose ``Host`` names loopback (a DNS-rebinding page cannot reach it); a
POST needs the ``X-Gatebench`` header and, when the browser sends an ``Origin``, the server's
own (a cross-site form or fetch cannot start a run); every answer carries a strict
Content-Security-Policy; results are read-only.

What keeps it bounded (:class:`ServeLimits`, each a flag; docs/frontend.md): waitress reads a
request before the app sees it, its body spilled to a file past 512 KB, so a slow or large
upload holds neither a thread nor memory: a body over ``--max-bytes`` is refused from its
``Content-Length`` without being read (413), a length that is not a plain number is a 400, a
chunked body a 411; a request's head must arrive within ``read_timeout`` and its body within
``read_timeout`` plus its length at ``min_body_rate``, however its bytes trickle (408, then
the connection is closed; an idle connection is closed after ``read_timeout``); beyond
``max_connections`` a connection gets a 503 at once. At most ``max_queued`` runs wait (429
with ``Retry-After``) and ``max_parses`` uploads are checked at once, on as many threads, the
others waiting for a slot (503 with ``Retry-After`` when none frees in time).
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from flask import Flask, Response, copy_current_request_context, request
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser, ParsingError
from waitress.server import TcpWSGIServer
from waitress.task import ErrorTask, WSGITask
from waitress.utilities import Error, RequestEntityTooLarge
from waitress.wasyncore import loop
from werkzeug.routing import PathConverter

from gatebench.core.errors import Problem
from gatebench.core.renderers import local_gateway_names
from gatebench.core.spec import DEFAULT_LIMITS
from gatebench.kinds.request import UPLOAD_PREFIX, CheckedUpload, UploadRejected
from gatebench.local._abandoned import AbandonedAsSettled
from gatebench.local.bucket import LocalBucket, PutRefused
from gatebench.local.queue import QueueFull, RunQueue
from gatebench.run.stages.parse import unset_credentials
from gatebench.store import ResultStore
from gatebench.web._app import Dashboard, dashboard, new_app, query, raw_path, read_api, upload_api
from gatebench.web._limits import ServeLimits
from gatebench.web._site import CONTENT_TYPES, SiteConfig, resolve_static
from gatebench.web._uploads import Answer, SignedUploads, problems, refusal, too_large

SITE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'{extra}; frame-src 'self'{extra}; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""The dashboard's pages: nothing but this server (and the API endpoints its site names),
framed by nobody; the one frame they hold is a report of the API (a route scale or change
run's page)."""
REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
)
"""A report the API serves as HTML: its own inline style and script only; framed by this
server's dashboard alone (the page opens it sandboxed)."""
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
RETRY_AFTER_BUSY_S = 5
"""What a 503 for a busy parse slot tells the client to wait: a check takes seconds."""
RETRY_AFTER_FULL_S = 60
"""What a 429 for a full queue tells the client to wait: runs take minutes."""
_CHUNKED = "send the body with a Content-Length (no chunked uploads)"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def queue_full(exc: QueueFull) -> Answer:
    retry = [("Retry-After", str(RETRY_AFTER_FULL_S))]
    return problems(429, [Problem("", str(exc))], retry, queue_length=exc.waiting)


@dataclass
class DirectUploads:
    """The local acceptor: a valid upload is queued at once (202 with its run id)."""

    queue: RunQueue
    method: str = "direct"

    def accept(self, upload: CheckedUpload) -> Answer:
        try:
            job = self.queue.submit(upload)
        except QueueFull as exc:
            return queue_full(exc)
        position = self.queue.position(job.run_id)
        answer = {"ok": True, "method": "direct", "run_id": job.run_id, "status": "queued"}
        return answer | {"queue_position": position}, 202, [("Location", f"runs/{job.run_id}")]


@dataclass
class Local(Dashboard):
    """The local server's state: the API's, and the page, the queue and the bounds."""

    frontend: Path = Path()
    site: SiteConfig = field(default_factory=SiteConfig)
    queue: RunQueue | None = None
    bucket: LocalBucket | None = None
    loopback_only: bool = True
    port: int = 0
    limits: ServeLimits = field(default_factory=ServeLimits)
    log: Callable[[str], None] = lambda line: None
    parse_slots: threading.BoundedSemaphore = field(init=False)
    parse_pool: ThreadPoolExecutor = field(init=False)

    def __post_init__(self) -> None:
        self.parse_slots = threading.BoundedSemaphore(self.limits.max_parses)
        self.parse_pool = ThreadPoolExecutor(self.limits.max_parses, "gatebench-parse")
        self.parse = self._in_parse_slot

    def _in_parse_slot(self, check: Callable[[bytes], Answer]) -> Answer:
        """Read the body and ``check`` it in one of the ``max_parses`` parse threads, once a
        slot frees (503 after ``parse_wait``): memory grows with the slots, not the callers,
        and what the allocator keeps after a large upload stays with those few threads."""
        if not self.parse_slots.acquire(timeout=self.limits.parse_wait):
            n = self.limits.max_parses
            message = (
                f"{n} upload{'s are' if n != 1 else ' is'} being checked (the limit is {n}, "
                "--max-parses); try again in a few seconds"
            )
            return refusal(503, message, [("Retry-After", str(RETRY_AFTER_BUSY_S))])
        try:
            job = copy_current_request_context(lambda: check(request.get_data(cache=False)))
            return self.parse_pool.submit(job).result()
        finally:
            self.parse_slots.release()

    def base_url(self) -> str:
        return f"http://{request.host}"


def _unset_credentials(upload: CheckedUpload) -> list[Problem]:
    """The credential variables the upload's plan reads and this server's environment, which
    its runs inherit, lacks: the run would fail at once."""
    said = "; the runs of gatebench serve read its environment: start it with the variable set"
    return unset_credentials(upload.run_plan, upload.spec, os.environ, said)


def local() -> Local:
    found = dashboard()
    assert isinstance(found, Local)
    return found


def local_app(state: Local) -> Flask:
    app = new_app(state)
    app.url_map.merge_slashes = False  # '//etc/passwd' is not '/etc/passwd'
    app.register_blueprint(read_api, url_prefix="/api")
    app.register_blueprint(upload_api, url_prefix="/api")
    app.before_request(_guard)
    app.after_request(_secure)
    app.add_url_rule("/config.json", "config", lambda: (state.site.to_dict(), 200, []))
    app.url_map.converters["site"] = _SitePath
    app.add_url_rule("/", "index", _static)
    app.add_url_rule("/<site:_path>", "static", _static)
    if state.bucket is not None:
        app.add_url_rule("/bucket/<path:_name>", "bucket", _bucket_put, methods=["PUT"])
    if state.queue is not None:
        state.live = state.queue
    return app


def _guard() -> Answer | None:
    """Host first (DNS rebinding), then the request line; an upload's header and origin."""
    state, headers = local(), request.headers
    if state.loopback_only and headers.get("Host") not in {
        f"{name}:{state.port}" for name in LOOPBACK_NAMES
    }:
        message = "this server answers only requests addressed to 127.0.0.1 or localhost"
        return refusal(421, message)
    if not str(request.environ.get("REQUEST_URI", "/")).startswith("/"):
        return refusal(400, "expected a path starting with '/'")
    if request.blueprint != "upload" and request.endpoint != "bucket":
        return None
    if request.blueprint == "upload" and "X-Gatebench" not in headers:
        message = (
            "uploads need the X-Gatebench header (the gatebench page sends it; a form on "
            "another site cannot)"
        )
        return refusal(403, message)
    origin = headers.get("Origin")
    if origin is not None and origin != state.base_url():
        return refusal(403, f"origin {origin!r} may not upload here")
    if request.content_length is None:
        return refusal(411, "a Content-Length header is required")
    if request.path.endswith("/uploads") and state.queue is not None:
        try:
            state.queue.check_room()  # before the body is checked
        except QueueFull as exc:
            return queue_full(exc)
    return None


def _secure(response: Response) -> Response:
    state = local()
    response.headers.setdefault("Cache-Control", "no-store")
    report = response.mimetype == "text/html" and request.path.startswith("/api/")
    extra = "".join(f" {o}" for o in state.site.origins())
    response.headers["Content-Security-Policy"] = (
        REPORT_CSP if report else SITE_CSP.format(extra=extra)
    )
    response.headers.update(SECURITY_HEADERS)
    if report:  # the older header says what frame-ancestors 'self' says
        response.headers["X-Frame-Options"] = "SAMEORIGIN"
    if request.blueprint == "upload" and (response.status_code >= 400 or "uploads" in request.path):
        state.log(f"POST {request.path} {request.args.get('name', '')!r}: {response.status_code}")
    return response


class _SitePath(PathConverter):
    """Any path outside the API: a wrong method on an API route stays a 405."""

    regex = r"(?!api/)[^/].*?"


def _static(_path: str = "") -> Answer | Response:
    found = resolve_static(local().frontend, raw_path())
    if found is None:
        return refusal(404, "not found")
    content_type = CONTENT_TYPES[found.suffix.lower()]
    return Response(
        found.read_bytes(), content_type=content_type, headers={"Cache-Control": "no-cache"}
    )


def _bucket_put(_name: str) -> Answer:
    state, bucket = local(), local().bucket
    assert bucket is not None
    name = unquote(raw_path().removeprefix("/bucket/"))
    headers = {k.lower(): v for k, v in request.headers.items()}
    asked, base = query(), state.base_url()

    def put(body: bytes) -> Answer:
        try:
            generation, run_id = bucket.put(name, asked, headers, body, base)
        except PutRefused as exc:
            return refusal(exc.status, str(exc))
        except UploadRejected as exc:
            return problems(400, exc.problems)
        except QueueFull as exc:
            return queue_full(exc)
        return {}, 200, [("x-goog-generation", generation), ("x-gatebench-run", run_id)]

    answer = state.parse(put)  # type: ignore[misc]
    state.log(f"PUT /bucket/{name[:120]}: {answer[1]}")
    return answer


# -- waitress, with deadlines and answers in the API's words -----------------------------------


class Refused(Error):  # type: ignore[misc]
    """A request refused before the app saw it, answered like the app's own refusals."""

    def __init__(self, code: int, body: str) -> None:
        super().__init__(body)
        self.code, self.reason = code, HTTPStatus(code).phrase


class _Parser(HTTPRequestParser):  # type: ignore[misc]
    """Waitress's parser, timing the request from its first byte; a chunked body is refused."""

    def __init__(self, adj: Any) -> None:
        super().__init__(adj)
        self.started = time.monotonic()
        self.body_started: float | None = None

    def parse_header(self, header_plus: bytes) -> None:
        super().parse_header(header_plus)
        if self.chunked:
            raise ParsingError(_CHUNKED)
        self.body_started = time.monotonic()


class _Answer(ErrorTask):  # type: ignore[misc]
    """What waitress refuses, as the app words it: located problems in JSON."""

    def execute(self) -> None:
        error, state = self.request.error, self.channel.server.state
        code, message = error.code, str(error.body)
        if message == _CHUNKED:
            code = 411
        elif isinstance(error, RequestEntityTooLarge):
            message = too_large(self.request.content_length, state.max_bytes)
        elif message == "Content-Length is invalid":
            shown = repr(self.request.headers.get("CONTENT_LENGTH", "")[:40])
            message = f"Content-Length: expected a whole number of bytes, got {shown}"
        payload, _, _ = refusal(code, message)
        body = json.dumps(payload, ensure_ascii=False).encode()
        self.status = f"{code} {HTTPStatus(code).phrase}"
        self.response_headers += [("Content-Type", "application/json; charset=utf-8")]
        self.response_headers += list(SECURITY_HEADERS.items())
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class _Task(WSGITask):  # type: ignore[misc]
    """The app's answers; a refused host, upload header or origin closes the connection."""

    def build_response_header(self) -> bytes:
        if self.status[:3] in ("403", "411", "421"):
            self.set_close_on_finish()
        header: bytes = super().build_response_header()
        return header


class _Channel(HTTPChannel):  # type: ignore[misc]
    parser_class = _Parser
    task_class = _Task
    error_task_class = _Answer


class Server(TcpWSGIServer):  # type: ignore[misc]
    """Waitress's server with the bounds it lacks: a deadline for a whole request whatever the
    pace of its bytes (its own timeout counts idle seconds only), and a 503 at once beyond
    ``max_connections`` (it would leave them waiting in the listen backlog)."""

    channel_class = _Channel

    def __init__(self, app: Flask, state: Local, host: str, port: int) -> None:
        self.state, self.limits, self.note = state, state.limits, state.log
        self.stopping = threading.Event()
        limits = state.limits
        super().__init__(
            app,
            host=host,
            port=port,
            ident="gatebench",
            threads=limits.max_connections,
            connection_limit=limits.max_connections + 16,  # beyond max_connections: _refuse
            cleanup_interval=1,
            max_request_body_size=state.max_bytes + 1,  # waitress refuses a length >= this
            expose_tracebacks=False,
        )
        state.port = self.effective_port

    @property
    def server_address(self) -> tuple[str, int]:
        return str(self.effective_host), int(self.effective_port)

    @property
    def connections(self) -> int:
        return len(self.active_channels)

    def handle_accept(self) -> None:
        if len(self.active_channels) < self.limits.max_connections:
            super().handle_accept()
            return
        accepted = self.accept()
        if accepted is None:
            return
        n = self.limits.max_connections
        message = (
            f"the server is serving {n} connections (the limit, --max-connections); try again "
            "in a second"
        )
        body = json.dumps(refusal(503, message)[0]).encode()
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
        )
        head += f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        sock = accepted[0]
        try:
            sock.setblocking(False)
            sock.send(head.encode() + body)
        except OSError:
            pass
        finally:
            sock.close()
        self.note(f"refused a connection: {n} are being served (--max-connections)")

    def maintenance(self, now: float) -> None:
        """A request late for its deadline gets a 408; an idle connection (no request begun,
        none being answered) is closed after ``read_timeout`` without an answer."""
        for channel in list(self.active_channels.values()):
            with channel.requests_lock:
                request = channel.request
                if request is None or request.completed:
                    idle = now - channel.last_activity > self.limits.read_timeout
                    channel.will_close = channel.will_close or (idle and not channel.requests)
                    continue
                late = self._late(request)
                if not late:
                    continue
                request.error, request.completed, request.version = Refused(408, late), True, "1.1"
                channel.request = None
                channel.requests.append(request)
                if len(channel.requests) == 1:
                    self.add_task(channel)

    def _late(self, request: _Parser) -> str:
        limits, now = self.limits, time.monotonic()
        if request.body_started is None:
            if now - request.started < limits.read_timeout:
                return ""
            return f"the request's head did not arrive within {limits.read_timeout:g} s (--read-timeout)"
        length, got = request.content_length, request.body_bytes_received
        allowed = limits.body_deadline(length)
        if now - request.body_started < allowed:
            return ""
        return (
            f"the body stopped after {got:,} of {length:,} bytes: it must arrive within "
            f"{allowed:.0f} s (--read-timeout, plus its length at "
            f"{limits.min_body_rate // 1024} KiB/s)"
        )

    def serve_forever(self) -> None:
        """Serve until :meth:`shutdown` (from another thread) or an exception (a signal)."""
        while not self.stopping.is_set():
            loop(timeout=1.0, map=self._map, use_poll=True, count=1)

    def shutdown(self) -> None:
        self.stopping.set()
        self.pull_trigger()

    def server_close(self) -> None:
        self.task_dispatcher.shutdown()
        for channel in list(self.active_channels.values()):
            channel.close()
        self.close()


class _Log(logging.Handler):
    def __init__(self, log: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        self.log(f"waitress: {record.getMessage()}")


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
) -> Server:
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
    reads = AbandonedAsSettled(store)  # an abandoned run reads as it will be recorded
    state = Local(
        store=lambda: reads,
        max_bytes=max_bytes,
        local_gateways=local_gateway_names(),
        api_base="/api",
        frontend=frontend,
        site=site or SiteConfig(upload_method=upload_method, max_bytes=max_bytes),  # type: ignore[arg-type]
        queue=queue,
        bucket=bucket,
        loopback_only=is_loopback(host),
        limits=limits,
        log=log,
        refusals=_unset_credentials,
    )
    state.acceptor = lambda: (
        SignedUploads(bucket.signer(state.base_url()), prefix=UPLOAD_PREFIX)
        if bucket
        else DirectUploads(queue)
    )
    app = local_app(state)
    app.logger.addHandler(_Log(log))
    logging.getLogger("waitress").addHandler(_Log(log))
    logging.getLogger("waitress").propagate = False
    server = Server(app, state, host, port)
    if start_queue:
        queue.start()
    return server


__all__ = [
    "DirectUploads",
    "ServeLimits",
    "Server",
    "build_server",
    "is_loopback",
    "local_app",
    "queue_full",
]
