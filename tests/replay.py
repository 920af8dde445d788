"""Route replay: the proof that a running gateway routes exactly like the IR says.

A request matrix is derived from the IR (every operation with sample parameters, query
strings, an ``Authorization`` header and other client headers, small and large bodies, plus
negative requests: wrong methods, altered paths). Each request goes once straight to the
echo backend and once through the gateway; for a request the IR routes, the two echoes must
agree on everything the client controls (method, raw path, raw query, the client's own
headers, body digest and length). A request the IR does not route must get 404 from the
gateway itself, never reaching the backend.

Whether a request is routed is decided by an oracle, :func:`expected_route`, which applies
the shared semantics (``_routes``) with Python's ``re`` on the same regexes the renderers
use, so the matrix never hard-codes an outcome. The integration tests replay the whole matrix
(a test helper: nothing in the product imports it).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import socket
import ssl
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gatebench.core.errors import Problem
from gatebench.core.ir import HTTP_METHODS, Api, Operation, Parameter
from gatebench.core.renderers import Renderer, Route, routes_for

LARGE_BODY_BYTES = 16 * 1024 * 1024
REPLAY_HOST = "replay.gatebench.test"
# Headers a proxy may legitimately change: hop-by-hop ones and body framing.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "expect",
    }
)
# A tricky but valid path parameter: every sub-delimiter, ':' '@', an escape, UTF-8.
TRICKY_VALUE = "x%20y;z=1,(a)'!*$&+:@~%C3%A9-._"
OWN_PATHS = (
    "/hello",
    "/ready",
    "/tyk/apis",
    "/tyk/reload",
    "/__health",
    "/__debug/x",
    "/__echo/x",
    "/__stats",
    "/ping",
    "/stats",
)
ODD_QUERY = "flag&x=1;2&z=3"
# A value holding the delimiters a client must escape: ? # and % itself.
ESCAPED_DELIMITERS_VALUE = "q%3Fh%23p%25s"
_SAFE_SAMPLE = re.compile(r"[A-Za-z0-9._~-]{1,40}")
_SAFE_QUERY_NAME = re.compile(r"[A-Za-z0-9._~-]{1,40}")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = re.compile(r"[A-Za-z0-9._~-]")


@dataclass(frozen=True)
class ReplayRequest:
    label: str
    """What the request tests, for failure messages: ``getUser: sample``."""
    method: str
    target: str
    """Raw request target: path (percent-encoded as a client sends it) and query."""
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    chunked: bool = False
    expect_routed: bool = True
    operation_id: str | None = None

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    port: int = 0
    """The port that answered (the backend's, for a direct request)."""

    @property
    def from_backend(self) -> bool:
        return self.headers.get("x-gatebench-backend") == "echo"

    def echo(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


def _deterministic_bytes(size: int, seed: str) -> bytes:
    out = bytearray()
    block = hashlib.sha256(seed.encode()).digest()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(block + counter.to_bytes(8, "big")).digest() * 64
        counter += 1
    return bytes(out[:size])


def expected_route(
    routes: Sequence[Route], method: str, path: str, *, empty_parameters: bool = False
) -> Route | None:
    """The route a request hits under the shared semantics, or None (→ 404).
    ``empty_parameters``: an empty parameter followed by more of the path matches too (the
    documented exception of KrakenD, ``Renderer.routes_empty_parameters``)."""
    for route in routes:
        if route.method == method and re.fullmatch(_python_regex(route, empty_parameters), path):
            return route
    return None


_REGEX_CACHE: dict[tuple[str, str, bool], re.Pattern[str]] = {}
# A parameter: one non-empty segment; or, where empty ones count, an empty one before a "/".
_PARAM = "[^/?]+"
_PARAM_OR_EMPTY = "(?:[^/?]+|(?=/))"


def _python_regex(route: Route, empty_parameters: bool = False) -> re.Pattern[str]:
    key = (route.method, route.path, empty_parameters)
    pattern = _REGEX_CACHE.get(key)
    if pattern is None:
        param = _PARAM_OR_EMPTY if empty_parameters else _PARAM
        pattern = re.compile(route.regex(param=param, anchor_start="", anchor_end=""))
        _REGEX_CACHE[key] = pattern
    return pattern


def _sample_value(param: Parameter | None, fallback: str) -> str:
    if param is not None:
        for value in (*param.examples, param.schema.get("example"), param.schema.get("default")):
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float | str) and _SAFE_SAMPLE.fullmatch(str(value)):
                return str(value)
        enum = param.schema.get("enum")
        if isinstance(enum, list) and enum and _SAFE_SAMPLE.fullmatch(str(enum[0])):
            return str(enum[0])
    return fallback


def _query_for(op: Operation) -> str:
    parts = []
    for param in op.query_params:
        if _SAFE_QUERY_NAME.fullmatch(param.name):
            parts.append(f"{param.name}={_sample_value(param, '7')}")
    parts += ["gb=1", "gb=2", "sp=a%20b+c", "enc=%C3%A9%2F%3F", "empty="]
    return "&".join(parts)


def _client_headers(op: Operation, n: int) -> tuple[tuple[str, str], ...]:
    headers = [
        ("Host", REPLAY_HOST),
        ("Authorization", f"Bearer replay-token-{n}.abc~+/="),
        ("X-Gatebench-Replay", f'value with spaces; "quotes", commas, = and {n}'),
        ("X_Under_Score", "kept"),
        ("Accept", "application/json"),
        ("User-Agent", "gatebench-replay/1"),
    ]
    for param in op.header_params:
        if re.fullmatch(r"[A-Za-z0-9-]{1,40}", param.name) and param.name.lower() not in {
            h.lower() for h, _ in headers
        }:
            headers.append((param.name, _sample_value(param, "h1")))
    return tuple(headers)


def _param_values(route: Route, value: str | None = None) -> dict[str, str]:
    """A value for every parameter: ``value``, or a sample from the description."""
    by_name = {p.name: p for p in route.operation.path_params}
    return {
        name: value if value is not None else _sample_value(by_name.get(name), f"v{i}x")
        for i, name in enumerate(route.param_names)
    }


def _has_body(op: Operation) -> bool:
    return op.request_body is not None or op.method in ("POST", "PUT", "PATCH")


def expressible(api: Api, problems: Sequence[Problem]) -> tuple[Operation, ...]:
    """The operations of ``api`` no problem is about (located at the operation or below):
    what a run keeps of a description a gateway partly refuses."""
    refused = {p.pointer for p in problems}
    return tuple(
        op
        for op in api.operations
        if not any(r == op.pointer or r.startswith(op.pointer + "/") for r in refused)
    )


def replay_matrix(
    api: Api, *, large_body_bytes: int = LARGE_BODY_BYTES, forwarding: Forwarding | None = None
) -> list[ReplayRequest]:
    """Every request of the replay, routed ones first; expectations come from the oracle
    (with the gateway's documented routing exceptions, ``forwarding``)."""
    routes = routes_for(api)
    requests: list[ReplayRequest] = []
    large_done = False
    used = {r.method for r in routes}
    spare = next(
        m for m in ("PATCH", "PUT", "DELETE", "POST", "GET") if m not in used or m == "GET"
    )
    methods = sorted(used | {spare}, key=HTTP_METHODS.index)
    for n, route in enumerate(routes):
        op = route.operation
        label = op.operation_id.replace("\n", "\\n")
        headers = _client_headers(op, n)
        samples = [("sample", route.sample_path(_param_values(route)))]
        if route.param_names:
            samples.append(
                ("tricky parameter", route.sample_path(_param_values(route, TRICKY_VALUE)))
            )
            samples.append(
                (
                    "escaped delimiters in a parameter",
                    route.sample_path(_param_values(route, ESCAPED_DELIMITERS_VALUE)),
                )
            )
        for kind, path in samples:
            body = None
            if _has_body(op):
                body = _deterministic_bytes(1000 + n, f"{label}-{kind}")
            requests.append(ReplayRequest(f"{label}: {kind}", route.method, path, headers, body))
        path = samples[0][1]
        requests.append(
            ReplayRequest(
                f"{label}: query string", route.method, f"{path}?{_query_for(op)}", headers
            )
        )
        if n == 0:
            # Once: a bare name, and a ';' inside a pair (no separator in RFC 3986 queries).
            requests.append(
                ReplayRequest(
                    f"{label}: query with a bare name and a ';'",
                    route.method,
                    f"{path}?{ODD_QUERY}",
                    headers,
                )
            )
        if _has_body(op) and not large_done and route.method != "HEAD":
            large_done = True
            big = _deterministic_bytes(large_body_bytes, "large")
            requests.append(
                ReplayRequest(f"{label}: {len(big)}-byte body", route.method, path, headers, big)
            )
            requests.append(
                ReplayRequest(
                    f"{label}: chunked body", route.method, path, headers, big[:300_000], True
                )
            )
        requests.extend(_negatives(route, path, headers))
        # Every method of the API on this path: the oracle says which are routed (method-aware
        # matching: DELETE /users/me reaches DELETE /users/{id}).
        for method in methods:
            if method != route.method:
                requests.append(
                    ReplayRequest(f"{label}: {method} on its path", method, path, headers)
                )
    requests.append(ReplayRequest("unknown path", "GET", "/gatebench-no-such-route", ()))
    # Paths gateways answer themselves when left to their defaults (Tyk's control API and
    # health checks, KrakenD's health and debug endpoints, Envoy's and Traefik's admin ones):
    # outside the API they must be refused like any other path, never answered.
    for path in OWN_PATHS:
        requests.append(ReplayRequest(f"a gateway's own path {path}", "GET", path, ()))
    requests.append(
        ReplayRequest(
            "route only in the query", "GET", "/gatebench-nothing?" + routes[0].sample_path(), ()
        )
        if routes
        else ReplayRequest("root", "GET", "/", ())
    )
    empty = forwarding is not None and forwarding.routes_empty_parameters
    return _dedupe(_with_expectations(routes, requests, empty_parameters=empty))


def _negatives(
    route: Route, path: str, headers: tuple[tuple[str, str], ...]
) -> Iterator[ReplayRequest]:
    label = route.operation_id.replace("\n", "\\n")
    altered = [
        ("extra segment", path.rstrip("/") + "/gatebench-extra"),
        (
            "trailing slash toggled",
            path[:-1] if path.endswith("/") and len(path) > 1 else path + "/",
        ),
        ("last character dropped", _drop_last(path)),
        ("upper-cased", path.upper()),
        ("prefixed", "/gatebench-prefix" + path),
    ]
    if route.param_names:
        altered.append(("empty parameter", route.sample_path(dict.fromkeys(route.param_names, ""))))
    for kind, other in altered:
        if other != path:
            yield ReplayRequest(f"{label}: {kind}", route.method, other, headers)


def _drop_last(path: str) -> str:
    """The path without its last character (a trailing ``%XX`` counts as one)."""
    cut = 3 if re.search(r"%[0-9A-Fa-f]{2}$", path) else 1
    return path[:-cut] or "/x"


def _with_expectations(
    routes: Sequence[Route], requests: list[ReplayRequest], *, empty_parameters: bool = False
) -> list[ReplayRequest]:
    out = []
    for req in requests:
        hit = expected_route(routes, req.method, req.path, empty_parameters=empty_parameters)
        out.append(
            ReplayRequest(
                req.label,
                req.method,
                req.target,
                req.headers,
                req.body,
                req.chunked,
                hit is not None,
                hit.operation_id if hit else None,
            )
        )
    return out


def _dedupe(requests: list[ReplayRequest]) -> list[ReplayRequest]:
    seen: set[tuple[str, str, bool, int]] = set()
    out = []
    for req in requests:
        key = (req.method, req.target, req.chunked, len(req.body or b""))
        if key not in seen:
            seen.add(key)
            out.append(req)
    return out


class Sender(Protocol):
    def send(self, req: ReplayRequest) -> Reply: ...

    def close(self) -> None: ...


@dataclass
class Client:
    """One keep-alive HTTP/1.1 connection, re-opened when the server closes it; over TLS
    when given an ``ssl_context`` (``server_hostname`` is what the certificate is checked
    against)."""

    host: str
    port: int
    timeout: float = 60.0
    ssl_context: ssl.SSLContext | None = None
    server_hostname: str | None = None
    _conn: http.client.HTTPConnection | None = field(default=None, repr=False)

    def send(self, req: ReplayRequest) -> Reply:
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = self._open()
            conn = self._conn
            try:
                conn.putrequest(req.method, req.target, skip_host=True, skip_accept_encoding=True)
                has_host = any(k.lower() == "host" for k, _ in req.headers)
                if not has_host:
                    conn.putheader("Host", f"{self.host}:{self.port}")
                for name, value in req.headers:
                    conn.putheader(name, value)
                body = req.body
                if body is not None and req.chunked:
                    conn.putheader("Transfer-Encoding", "chunked")
                    conn.endheaders()
                    for start in range(0, len(body), 65536):
                        chunk = body[start : start + 65536]
                        conn.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    conn.send(b"0\r\n\r\n")
                elif body is not None:
                    conn.putheader("Content-Length", str(len(body)))
                    conn.endheaders(body)
                else:
                    if req.method in ("POST", "PUT", "PATCH"):
                        conn.putheader("Content-Length", "0")
                    conn.endheaders()
                resp = conn.getresponse()
                data = resp.read()
                headers = {k.lower(): v for k, v in resp.getheaders()}
                if resp.will_close:
                    self.close()
                return Reply(resp.status, headers, data, self.port)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _open(self) -> http.client.HTTPConnection:
        if self.ssl_context is None:
            return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        conn = _TlsConnection(self.host, self.port, timeout=self.timeout, context=self.ssl_context)
        conn.server_hostname = self.server_hostname or self.host
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _TlsConnection(http.client.HTTPSConnection):
    """HTTPS to an address, the certificate checked against ``server_hostname``."""

    server_hostname: str = ""

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        tls = self._context.wrap_socket(  # type: ignore[attr-defined]
            self.sock, server_hostname=self.server_hostname, do_handshake_on_connect=False
        )
        self.sock = tls
        try:
            tls.do_handshake()
        except BaseException:
            self.close()
            raise


class H2Client:
    """HTTP/2 over TLS on one connection (ALPN must select ``h2``, or it fails), a stream
    per request; the raw request target goes out as ``:path`` and the ``Host`` header as
    ``:authority``. A chunked body is sent as plain DATA frames (HTTP/2 has no chunking)."""

    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname or host
        self._sock: ssl.SSLSocket | None = None
        self._conn: Any = None
        self.negotiated: str | None = None

    def _open(self) -> None:
        import h2.config
        import h2.connection
        import h2.settings

        raw = socket.create_connection((self.host, self.port), timeout=self.timeout)
        sock = self.ssl_context.wrap_socket(
            raw, server_hostname=self.server_hostname, do_handshake_on_connect=False
        )
        try:
            sock.do_handshake()
        except BaseException:
            sock.close()
            raise
        self.negotiated = sock.selected_alpn_protocol()
        if self.negotiated != "h2":
            sock.close()
            raise AssertionError(f"ALPN selected {self.negotiated!r}, not 'h2'")
        conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        )
        conn.initiate_connection()
        conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2**24})
        conn.increment_flow_control_window(2**24)
        sock.sendall(conn.data_to_send())
        self._sock, self._conn = sock, conn

    def send(self, req: ReplayRequest) -> Reply:
        import h2.events

        if self._conn is None:
            self._open()
        conn, sock = self._conn, self._sock
        assert sock is not None
        authority = next((v for k, v in req.headers if k.lower() == "host"), None)
        headers = [
            (":method", req.method),
            (":scheme", "https"),
            (":authority", authority or f"{self.host}:{self.port}"),
            (":path", req.target),
        ]
        headers += [(k.lower(), v) for k, v in req.headers if k.lower() != "host"]
        body = req.body
        if body is not None and not req.chunked:
            headers.append(("content-length", str(len(body))))
        elif body is None and req.method in ("POST", "PUT", "PATCH"):
            headers.append(("content-length", "0"))
        stream = conn.get_next_available_stream_id()
        conn.send_headers(stream, headers, end_stream=body is None)
        sock.sendall(conn.data_to_send())
        pending = memoryview(body or b"")
        status, reply_headers, data, ended = 0, {}, bytearray(), False
        while not ended:
            while body is not None and pending is not None:
                window = min(conn.local_flow_control_window(stream), conn.max_outbound_frame_size)
                if window <= 0:
                    break
                chunk, pending = pending[:window], pending[window:]
                last = len(pending) == 0
                conn.send_data(stream, bytes(chunk), end_stream=last)
                sock.sendall(conn.data_to_send())
                if last:
                    pending = None  # type: ignore[assignment]
            incoming = sock.recv(65536)
            if not incoming:
                self.close()
                raise ConnectionResetError("the server closed the HTTP/2 connection")
            for event in conn.receive_data(incoming):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == stream:
                    for name, value in event.headers:
                        if name == ":status":
                            status = int(value)
                        else:
                            reply_headers[name] = value
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if event.stream_id == stream:
                        data += event.data
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == stream:
                    ended = True
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == stream:
                    raise ConnectionResetError(f"stream reset: error code {event.error_code}")
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.close()
                    raise ConnectionResetError(f"GOAWAY: error code {event.error_code}")
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
        return Reply(status, reply_headers, bytes(data))

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._conn.close_connection()
                self._sock.sendall(self._conn.data_to_send())
            except OSError:
                pass
            self._sock.close()
        self._sock, self._conn = None, None


def normal_path(path: str) -> str:
    """``path`` in RFC 3986's syntax-based normal form (§6.2.2.1, §6.2.2.2): escapes of
    unreserved characters decoded (``%41`` → ``A``), the other escapes upper-cased."""

    def one(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if _UNRESERVED.fullmatch(char) else match.group(0).upper()

    return _ESCAPE.sub(one, path)


def _same(text: str) -> str:
    return text


def _nothing(text: str) -> int | None:
    return None


@dataclass(frozen=True)
class Forwarding:
    """What a gateway is documented to do to a request (docs/gateways.md), read from its
    renderer: route replay expects exactly this, and byte-identical forwarding otherwise."""

    normalizes_path: bool = False
    """The path arrives in RFC 3986 normal form (:func:`normal_path`; Traefik)."""
    forwards_host: bool = True
    """False: the backend gets its own ``host:port`` (KrakenD), not the client's ``Host``."""
    refusal_status: int = 404
    """What the gateway answers a request outside the API (Tyk's allow list: 403)."""
    routes_empty_parameters: bool = False
    """An empty parameter followed by more of the path is routed (KrakenD)."""
    query: Callable[[str], str] = _same
    """The query the backend gets for the client's (``Renderer.forwarded_query``)."""
    path: Callable[[str], str] = _same
    """The path the backend gets for the client's (``Renderer.forwarded_path``)."""
    answers_itself: Callable[[str], int | None] = _nothing
    """The status the gateway answers a routed path with itself (``Renderer.answers_itself``)."""
    pool_ports: tuple[int, ...] = ()
    """The backend is a pool of replicas on these ports: a gateway that does not forward the
    client's ``Host`` sends the address of whichever replica it chose."""

    @classmethod
    def of(cls, renderer: Renderer) -> Forwarding:
        return cls(
            normalizes_path=renderer.normalizes_path,
            forwards_host=renderer.forwards_host,
            refusal_status=renderer.refusal_status,
            routes_empty_parameters=renderer.routes_empty_parameters,
            query=renderer.forwarded_query,
            path=renderer.forwarded_path,
            answers_itself=renderer.answers_itself,
        )


def compare_echoes(
    req: ReplayRequest,
    direct: Reply,
    via: Reply,
    *,
    normalizes_path: bool = False,
    forwarding: Forwarding | None = None,
) -> list[str]:
    """What differs between the direct echo and the echo through the gateway, beyond what
    ``forwarding`` says the gateway does. ``normalizes_path``: the gateway forwards the path
    in RFC 3986 normal form (:func:`normal_path`; Traefik), so the paths are compared in that
    form."""
    rules = forwarding or Forwarding(normalizes_path=normalizes_path)
    problems: list[str] = []
    if not req.expect_routed:
        if via.status != rules.refusal_status:
            problems.append(f"expected {rules.refusal_status} (no route), got {via.status}")
        if via.from_backend:
            problems.append("the request reached the backend")
        return problems
    itself = rules.answers_itself(req.path)
    if itself is not None:
        if via.status != itself:
            problems.append(f"expected {itself} from the gateway itself, got {via.status}")
        if via.from_backend:
            problems.append("the request reached the backend")
        return problems
    if via.status != direct.status or not via.from_backend:
        body = via.body[:200].decode("utf-8", "replace")
        return [f"expected the backend's {direct.status}, got {via.status}: {body!r}"]
    if req.method == "HEAD":
        return problems
    want, got = direct.echo(), via.echo()
    if rules.normalizes_path and normal_path(want["path"]) == got["path"]:
        got = dict(got, path=want["path"])
    want = dict(want, path=rules.path(want["path"]), query=rules.query(want["query"]))
    if not rules.forwards_host:
        chosen = {f"127.0.0.1:{p}" for p in rules.pool_ports}
        want = dict(want, host=got["host"] if got["host"] in chosen else f"127.0.0.1:{direct.port}")
    for key in ("method", "path", "query", "host", "body_sha256", "body_length"):
        if want[key] != got[key]:
            problems.append(f"{key}: sent {want[key]!r}, backend got {got[key]!r}")
    for name, values in sorted(want["headers"].items()):
        if name in HOP_BY_HOP:
            continue
        if got["headers"].get(name) != values:
            problems.append(
                f"header {name}: sent {values!r}, backend got {got['headers'].get(name)!r}"
            )
    return problems


HOLDS_REFUSALS = {"spring-cloud-gateway": 5.0}
"""Gateways that may hold their own refusal of a bodiless request on a keep-alive connection
until the client closes it (docs/scale.md, "Each gateway's mechanism"), with how long a replay
waits for such an answer (seconds). Seen with Spring Cloud Gateway 5.0.3: a POST or PUT with
``Content-Length: 0`` right after another refused one on the same connection, answered 404
only once the client half-closed; in about half of the runs after ``/actuator/refresh``, and
once in a fresh boot over TLS in front of a pool."""


def refusals_held(
    failures: list[str],
    matrix: Sequence[ReplayRequest],
    fresh: Callable[[], Sender],
    refusal: int,
) -> list[str]:
    """``failures`` without the timeouts of requests outside the API that, sent again on a new
    connection (``fresh()``), get the gateway's refusal: the routing decision is right, the
    answer on the kept-alive connection was held. Anything else stays a failure."""
    outside = {(r.method, r.label): r for r in matrix if not r.expect_routed}
    kept = []
    for line in failures:
        method = line.split(" ", 1)[0]
        label = line.split(" [", 1)[1].rsplit("]: ", 1)[0] if " [" in line else ""
        req = outside.get((method, label))
        timed_out = line.endswith(("TimeoutError('timed out')", "timed out')"))
        if req is None or ": TimeoutError(" not in line or not timed_out:
            kept.append(line)
            continue
        client = fresh()
        try:
            status = client.send(req).status
        finally:
            client.close()
        if status != refusal:
            kept.append(f"{line}; on a new connection: {status}, expected {refusal}")
    return kept


def replay(
    matrix: Sequence[ReplayRequest],
    *,
    gateway_port: int,
    backend_port: int,
    host: str = "127.0.0.1",
    normalizes_path: bool = False,
    forwarding: Forwarding | None = None,
    via: Sender | None = None,
) -> list[str]:
    """Replay every request; one line per mismatch (``METHOD target [label]: problem``).
    ``forwarding``: what the gateway is documented to change (:meth:`Forwarding.of` its
    renderer); ``normalizes_path`` alone: the gateway's ``Renderer.normalizes_path``.
    ``via``: the client that reaches the gateway (default plain HTTP/1.1 to
    ``gateway_port``; a TLS :class:`Client` or an :class:`H2Client`)."""
    direct_client = Client(host, backend_port)
    via_client: Sender = via if via is not None else Client(host, gateway_port)
    failures: list[str] = []
    try:
        for req in matrix:
            direct = direct_client.send(req)
            try:
                answer = via_client.send(req)
            except (OSError, http.client.HTTPException) as exc:
                failures.append(f"{req.method} {_short(req.target)} [{req.label}]: {exc!r}")
                via_client.close()
                continue
            failures.extend(
                f"{req.method} {_short(req.target)} [{req.label}]: {problem}"
                for problem in compare_echoes(
                    req, direct, answer, normalizes_path=normalizes_path, forwarding=forwarding
                )
            )
    finally:
        direct_client.close()
        via_client.close()
    return failures


def _short(target: str) -> str:
    return target if len(target) <= 120 else target[:100] + f"...({len(target)} chars)"


__all__ = [
    "HTTP_METHODS",
    "Client",
    "Forwarding",
    "H2Client",
    "ReplayRequest",
    "Reply",
    "Sender",
    "compare_echoes",
    "expected_route",
    "normal_path",
    "replay",
    "replay_matrix",
]
