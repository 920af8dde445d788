"""The JVM gateways (Spring Cloud Gateway, Zuul 1) against the places where their stock
behaviour would change a request: each is booted once with ``tests/data/jvm/quirks.yaml``
in front of the echo backend.

Route replay (``test_route_replay.py``) already proves the shared cases; here the same
replay runs on the quirks spec, and a few hand-made requests check what replay leaves
open: headers the gateway would add or drop (compared exactly, not only the client's own),
Cookie, a 20 KB header, form and multipart bodies, a GET with a body, a DELETE without one,
and TRACE; that it listens on loopback only and keeps backend connections alive. The
``boot`` fixture starts the JVMs with ``-XX:TieredStopAtLevel=1`` (C1 only: the same code
paths, half the start-up time).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from booted import BootedGateway
from gatebench.core.ir import Api
from gatebench.core.spec import load_spec
from replay import (
    HOP_BY_HOP,
    REPLAY_HOST,
    Client,
    ReplayRequest,
    Reply,
    replay,
    replay_matrix,
)

QUIRKS = Path(__file__).resolve().parents[1] / "data" / "jvm" / "quirks.yaml"
GATEWAYS = ("spring-cloud-gateway", "zuul")
# What each gateway may add to a request that lacks it (Reactor Netty's client defaults).
ADDED_WHEN_MISSING = {"spring-cloud-gateway": {"user-agent", "accept"}, "zuul": set()}
FRAMING = {"content-length", "transfer-encoding"}
MULTIPART = (
    b"--gbBOUNDARY\r\n"
    b'Content-Disposition: form-data; name="title"\r\n\r\n'
    b"caf\xc3\xa9 & co\r\n"
    b"--gbBOUNDARY\r\n"
    b'Content-Disposition: form-data; name="image"; filename="a.bin"\r\n'
    b"Content-Type: application/octet-stream\r\n\r\n" + bytes(range(256)) * 64 + b"\r\n"
    b"--gbBOUNDARY--\r\n"
)


@pytest.fixture(scope="module")
def quirks_api() -> Api:
    api = load_spec(QUIRKS).api
    assert api is not None
    return api


@pytest.fixture(scope="module", params=GATEWAYS)
def booted(
    request: pytest.FixtureRequest,
    boot: Callable[[str, str | Api], BootedGateway],
    quirks_api: Api,
) -> Iterator[BootedGateway]:
    gateway = boot(request.param, quirks_api)
    yield gateway
    gateway.stop()


def test_quirks_route_replay(booted: BootedGateway, quirks_api: Api, echo_backend: int) -> None:
    # The matrix's two catch-all probes carry no Host header (each client then sends its own
    # host:port); with the root-level parameter here they are routed, so give them one.
    matrix = [
        req
        if any(name.lower() == "host" for name, _ in req.headers)
        else dataclasses.replace(req, headers=(("Host", REPLAY_HOST), *req.headers))
        for req in replay_matrix(quirks_api, large_body_bytes=17 * 1024 * 1024)
    ]
    assert sum(r.expect_routed for r in matrix) > 20
    failures = replay(matrix, gateway_port=booted.port, backend_port=echo_backend)
    assert not failures, "\n".join(failures[:40])


def _send(port: int, req: ReplayRequest) -> Reply:
    client = Client("127.0.0.1", port)
    try:
        return client.send(req)
    finally:
        client.close()


def _echo_pair(booted: BootedGateway, backend: int, req: ReplayRequest) -> tuple[dict, dict]:
    direct = _send(backend, req)
    via = _send(booted.port, req)
    assert direct.status == 200, direct.body[:200]
    assert via.status == 200, via.body[:300]
    assert via.from_backend, via.body[:300]
    return direct.echo(), via.echo()


def _assert_same_request(gateway: str, req: ReplayRequest, want: dict, got: dict) -> None:
    for key in ("method", "path", "query", "host", "body_sha256", "body_length"):
        assert got[key] == want[key], f"{key}: sent {want[key]!r}, backend got {got[key]!r}"
    sent = {k: v for k, v in want["headers"].items() if k not in HOP_BY_HOP}
    received = {k: v for k, v in got["headers"].items() if k not in HOP_BY_HOP}
    client_names = {name.lower() for name, _ in req.headers}
    for name in ADDED_WHEN_MISSING[gateway] - client_names:
        received.pop(name, None)
    assert received == sent, f"{gateway} changed the headers"


REQUESTS = [
    ReplayRequest(
        "bare GET with Cookie and Authorization, no User-Agent/Accept/Accept-Encoding",
        "GET",
        "/abc;m=1?x=%41&x=b&y",
        (
            ("Host", "jvm.gatebench.test"),
            ("Cookie", "session=abc; theme=dark"),
            ("Authorization", "Basic Z2F0ZTpiZW5jaA=="),
        ),
    ),
    ReplayRequest(
        "20 KB header value",
        "GET",
        "/big-header",
        (("X-Large", "v" * 20_000), ("User-Agent", "gatebench-jvm-test")),
    ),
    ReplayRequest(
        "GET with a body",
        "GET",
        "/with-body",
        (("Content-Type", "text/plain"), ("User-Agent", "gatebench-jvm-test")),
        b"a body on a GET",
    ),
    ReplayRequest(
        "form body",
        "POST",
        "/forms",
        (("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "*/*")),
        b"b=2&a=1&a=%20x+y&empty=&caf%C3%A9=%E6%97%A5",
    ),
    ReplayRequest(
        "multipart body",
        "POST",
        "/forms",
        (("Content-Type", "multipart/form-data; boundary=gbBOUNDARY"), ("Accept", "*/*")),
        MULTIPART,
    ),
    ReplayRequest("DELETE without a body", "DELETE", "/items/42", (("Accept", "*/*"),)),
    ReplayRequest("OPTIONS", "OPTIONS", "/items/42", (("Accept", "*/*"),)),
    ReplayRequest("Zuul's servlet path", "GET", "/zuul/routes", (("Accept", "*/*"),)),
    ReplayRequest("Spring Boot's error path", "GET", "/error", (("Accept", "*/*"),)),
]


# The same Host goes to both, so that the echoes can be compared.
REQUESTS = [
    r
    if any(name.lower() == "host" for name, _ in r.headers)
    else dataclasses.replace(r, headers=(("Host", REPLAY_HOST), *r.headers))
    for r in REQUESTS
]


@pytest.mark.parametrize("req", REQUESTS, ids=[r.label for r in REQUESTS])
def test_request_reaches_the_backend_unchanged(
    booted: BootedGateway, echo_backend: int, req: ReplayRequest
) -> None:
    want, got = _echo_pair(booted, echo_backend, req)
    _assert_same_request(booted.gateway, req, want, got)
    if req.method == "DELETE":
        assert not FRAMING & set(got["headers"]), "a DELETE without a body gained body framing"
    if req.body is not None:
        assert got["body_sha256"] == hashlib.sha256(req.body).hexdigest()


def test_trace_answer_is_the_backends_alone(booted: BootedGateway, echo_backend: int) -> None:
    req = ReplayRequest("TRACE", "TRACE", "/abc", (("Accept", "*/*"),))
    via = _send(booted.port, req)
    assert via.status == 200
    assert via.from_backend
    echo = json.loads(via.body)  # one JSON document: nothing appended by the servlet stack
    assert echo["method"] == "TRACE"
    assert echo["path"] == "/abc"


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("GET", "/a/b"),
        ("DELETE", "/abc"),
        ("POST", "/zuul/routes"),
        ("GET", "/items/1"),
        # The actuator's endpoints (the live change's refresh) are never on the API's port.
        ("GET", "/actuator/health"),
        ("POST", "/actuator/refresh"),
    ],
)
def test_unrouted_requests_get_404_from_the_gateway(
    booted: BootedGateway, method: str, target: str
) -> None:
    reply = _send(booted.port, ReplayRequest("negative", method, target, (("Accept", "*/*"),)))
    assert reply.status == 404
    assert not reply.from_backend


def _sockets(pid: int) -> list[tuple[str, str, str]]:
    """(local address, remote address, state) of every TCP socket process ``pid`` holds, as
    /proc/net/tcp writes them (hex; state 01 established, 0A listening)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[len("socket:[") : -1])
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                out.append((fields[1], fields[2], fields[3]))
    return out


def _open_connections(pid: int, remote_port: int) -> int:
    """Established TCP connections process ``pid`` holds to port ``remote_port``."""
    return sum(
        1
        for _local, remote, state in _sockets(pid)
        if state == "01" and int(remote.rsplit(":", 1)[1], 16) == remote_port
    )


def test_listens_on_loopback_only(booted: BootedGateway) -> None:
    listening = [local for local, _remote, state in _sockets(booted.process.pid) if state == "0A"]
    # Java listens on an IPv6 socket bound to the IPv4-mapped ::ffff:127.0.0.1.
    loopback = {
        f"0100007F:{booted.port:04X}",
        f"0000000000000000FFFF00000100007F:{booted.port:04X}",
    }
    assert len(listening) == 1
    assert listening[0] in loopback


def test_a_client_connection_carries_more_than_tomcats_100_requests(
    booted: BootedGateway,
) -> None:
    """Every gateway lets a kept-alive connection carry at least 100,000 requests
    (docs/gateways.md, the parity table): Zuul's Tomcat would close it after 100 (its
    ``maxKeepAliveRequests``), unless the application's connector customizer lifts it."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", booted.port, timeout=30)
    try:
        for n in range(150):
            conn.request("GET", "/keep-alive", headers={"Host": REPLAY_HOST})
            response = conn.getresponse()
            response.read()
            assert response.status == 200
            assert not response.will_close, f"the gateway closed the connection after {n + 1}"
    finally:
        conn.close()


def test_backend_connections_are_kept_alive(booted: BootedGateway, echo_backend: int) -> None:
    client = Client("127.0.0.1", booted.port)
    req = ReplayRequest("keep-alive", "GET", "/keep-alive", (("Host", REPLAY_HOST),))
    try:
        for _ in range(40):
            reply = client.send(req)
            assert reply.from_backend
    finally:
        client.close()
    # 40 sequential requests: with keep-alive they reuse a pooled connection that stays open;
    # without it each would have been closed after its response.
    assert 1 <= _open_connections(booted.process.pid, echo_backend) <= 4
