"""``gatebench serve`` over real HTTP (an in-process server, waitress, on a free loopback
port): status codes, the size limit, path traversal, the host and cross-site checks, the
bounds, and the upload paths. The queue is not started here, so accepted uploads wait in it
(their runs are the integration tests' job: tests/integration/test_frontend_serve.py)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from gatebench.core.model import RunStatus
from gatebench.store import SqliteStore
from gatebench.web import ServeLimits, Server, SiteConfig, build_server, export_site
from paths import EXAMPLES, ROOT
from synthetic import synthetic_run

PETSTORE = (EXAMPLES / "petstore" / "openapi.yaml").read_bytes()
BROKEN = PETSTORE.replace(b"operation: listPets", b"operation: listPetz")
MAX = 200_000


@dataclass
class Served:
    server: Server
    frontend: Path
    results: Path

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        *,
        host: str | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            # putrequest sends the path exactly as given: no normalisation of '..' or '%2e'.
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", host or f"127.0.0.1:{self.port}")
            for name, value in (headers or {}).items():
                conn.putheader(name, value)
            if body is not None and "Content-Length" not in (headers or {}):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders()
            if body:
                # The server may answer before reading it (413) and close the connection.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    conn.send(body)
            response = conn.getresponse()
            return (
                response.status,
                {k.lower(): v for k, v in response.getheaders()},
                response.read(),
            )
        finally:
            conn.close()

    def json(
        self, method: str, path: str, body: bytes | None = None, **headers: str
    ) -> tuple[int, Any]:
        status, _, data = self.request(method, path, body, headers)
        return status, json.loads(data) if data else None

    def upload(self, route: str, body: bytes, query: str = "name=petstore.yaml") -> tuple[int, Any]:
        return self.json("POST", f"/api/{route}?{query}", body, **{"X-Gatebench": "1"})


def _serve(tmp_path: Path, **kwargs: Any) -> Iterator[Served]:
    frontend = tmp_path / "frontend"
    export_site(ROOT / "frontend", frontend, SiteConfig())
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    os.symlink(tmp_path / "secret.txt", frontend / "leak.txt")
    os.symlink(frontend / "index.html", frontend / "inside.html")
    results = tmp_path / "results"
    with SqliteStore(results / "s.sqlite") as store:
        server = build_server(
            host="127.0.0.1",
            port=0,
            frontend=frontend,
            store=store,
            store_location=str(results / "s.sqlite"),
            results_dir=results,
            max_bytes=MAX,
            start_queue=False,
            log=lambda line: None,
            **kwargs,
        )
        thread = threading.Thread(target=server.serve_forever)
        thread.start()
        try:
            yield Served(server, frontend, results)
        finally:
            server.shutdown()
            thread.join(5)
            server.server_close()
            assert server.state.queue is not None
            server.state.queue.shutdown()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from _serve(tmp_path)


@pytest.fixture
def signed(tmp_path: Path) -> Iterator[Served]:
    yield from _serve(tmp_path, upload_method="signed-url")


def test_the_site_and_its_config(served: Served) -> None:
    status, headers, body = served.request("GET", "/")
    assert status == 200
    assert headers["content-type"] == "text/html; charset=utf-8"
    assert body == (served.frontend / "index.html").read_bytes()
    csp = headers["content-security-policy"]
    assert csp.startswith("default-src 'none'; script-src 'self'")
    assert "frame-src 'self';" in csp and csp.endswith("frame-ancestors 'none'")
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY"
    status, headers, _ = served.request("GET", "/js/app.js")
    assert (status, headers["content-type"]) == (200, "text/javascript; charset=utf-8")
    status, headers, body = served.request("HEAD", "/js/app.js")
    assert status == 200
    assert body == b""
    assert int(headers["content-length"]) == (served.frontend / "js" / "app.js").stat().st_size
    status, config = served.json("GET", "/config.json")
    assert status == 200
    assert config == SiteConfig(max_bytes=MAX).to_dict()


def test_an_abandoned_run_reads_as_recorded_once_settled_never_as_still_going(
    served: Served,
) -> None:
    """Its gatebench process is gone (this pid, started at another time): the dashboard
    reads it as the next run will record it, the same check ``gatebench runs`` makes."""
    run, ms = synthetic_run(repetitions=1)
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "started": 1.0}
    with SqliteStore(served.results / "s.sqlite") as store:
        store.create_run(replace(run, status=RunStatus.LOADING, owner=owner))
        for m in ms[:3]:
            store.put_measurement(m)
    reason = (
        f"abandoned: the gatebench process that ran it (pid {os.getpid()}) ended without "
        "finishing it"
    )
    status, listed = served.json("GET", "/api/runs")
    assert status == 200
    (summary,) = listed["runs"]
    assert {k: summary[k] for k in ("status", "finished", "failed_step", "error")} == {
        "status": "partial",
        "finished": True,
        "failed_step": "loading",
        "error": reason,
    }
    status, view = served.json("GET", f"/api/runs/{run.run_id}/view")
    assert (status, view["run"]["status"], view["run"]["finished"]) == (200, "partial", True)
    assert view["cautions"][-1] == (
        f"The run's status is 'partial' ({reason}): the results may be incomplete."
    )


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.txt",
        "/../../../../etc/passwd",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/js/%2e%2e/%2e%2e/secret.txt",
        "/%252e%252e/secret.txt",
        "/..%5csecret.txt",
        "//etc/passwd",
        "/etc/passwd",
        "/%2fetc%2fpasswd",
        "/index.html%00.txt",
        "/leak.txt",
        "/inside.html",
        "/js/",
        "/config.json/../index.html",
    ],
)
def test_traversal_attempts_are_not_found(served: Served, path: str) -> None:
    status, _, body = served.request("GET", path)
    assert status == 404, path
    assert b"outside" not in body
    assert b"root:" not in body


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/runs/..", 400),
        ("/api/runs/../../secret.txt", 400),
        ("/api/runs/%2e%2e%2f%2e%2e%2fsecret.txt", 400),
        ("/api/runs/..%2fsecret.txt/view", 400),
        ("/api/runs/20990101-000000-none", 404),
        ("/api/nothing", 404),
    ],
)
def test_api_paths_that_are_not_runs(served: Served, path: str, status: int) -> None:
    got, body = served.json("GET", path)
    assert got == status, path
    assert body["errors"][0]["message"]


def test_an_unknown_api_route_lists_every_route_the_server_answers(served: Served) -> None:
    got, body = served.json("GET", "/api/nothing")
    assert (got, body["errors"][0]["message"]) == (
        404,
        "no API route 'nothing'; routes: runs, runs/{id}, runs/{id}/view, runs/{id}/report, "
        "runs/{id}/scale, compare?a=ID&b=ID, validate, uploads",
    )


def test_an_absolute_form_request_target_is_refused(served: Served) -> None:
    status, _, _ = served.request("GET", "http://evil.example/")
    assert status == 400


def test_methods(served: Served) -> None:
    assert served.request("POST", "/index.html", b"")[0] == 405
    assert served.request("DELETE", "/api/runs")[0] == 405
    assert served.request("OPTIONS", "/api/runs")[0] == 405  # no CORS on the local server
    status, headers, _ = served.request("GET", "/api/uploads")
    assert (status, headers["allow"]) == (405, "POST")
    status, headers, _ = served.request("PUT", "/bucket/specs/x.yaml", b"x")  # direct: no bucket
    assert (status, headers["allow"]) == (405, "GET, HEAD")


def test_a_refused_body_is_never_read_as_the_next_request(served: Served) -> None:
    """A body the app refused is read whole before the next request is parsed: a request
    smuggled inside it is never answered (one answer per request on the connection)."""
    smuggled = b"GET /config.json HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % served.port
    sock = _open(
        served,
        b"PUT /bucket/specs/x.yaml HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %d\r\n\r\n"
        % (served.port, len(smuggled))
        + smuggled
        + b"GET /js/app.js HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n"
        % served.port,
    )
    answers = _answer(sock)
    assert answers.startswith(b"HTTP/1.1 405 ")
    assert answers.count(b"HTTP/1.1 ") == 2
    assert b"HTTP/1.1 200 " in answers
    assert b'"format": "gatebench-site/1"' not in answers  # the smuggled config.json


def test_requests_for_another_host_are_refused(served: Served) -> None:
    """A page on a rebound DNS name cannot talk to the loopback server."""
    status, headers, body = served.request("GET", "/api/runs", host="attacker.example:8321")
    assert status == 421
    assert json.loads(body)["errors"][0]["message"] == (
        "this server answers only requests addressed to 127.0.0.1 or localhost"
    )
    assert headers["connection"] == "close"
    assert served.request("GET", "/", host=f"localhost:{served.port}")[0] == 200


def test_uploads_need_the_page_header_and_its_origin(served: Served) -> None:
    status, body = served.json("POST", "/api/validate?name=p.yaml", PETSTORE)
    assert status == 403
    assert body["errors"][0]["message"].startswith("uploads need the X-Gatebench header")
    status, body = served.json(
        "POST",
        "/api/validate?name=p.yaml",
        PETSTORE,
        **{"X-Gatebench": "1", "Origin": "http://evil.example"},
    )
    assert (status, body["errors"][0]["message"]) == (
        403,
        "origin 'http://evil.example' may not upload here",
    )
    status, body = served.json(
        "POST",
        "/api/validate?name=p.yaml",
        PETSTORE,
        **{"X-Gatebench": "1", "Origin": f"http://127.0.0.1:{served.port}"},
    )
    assert status == 200


def test_size_limit_and_length(served: Served) -> None:
    # Declared too large: refused from the header, the body is never read.
    status, headers, body = served.request(
        "POST",
        "/api/uploads?name=big.yaml",
        b"",
        {"X-Gatebench": "1", "Content-Length": str(MAX + 1)},
    )
    assert status == 413
    assert json.loads(body)["errors"][0]["message"] == (
        f"the upload is {MAX + 1:,} bytes; the limit is {MAX:,} (--max-bytes)"
    )
    assert headers["connection"] == "close"
    # Actually sent too large.
    status, _, _ = served.request(
        "POST", "/api/uploads?name=big.yaml", b"a: 1\n" * (MAX // 4), {"X-Gatebench": "1"}
    )
    assert status == 413
    status, _, _ = served.request("POST", "/api/uploads?name=p.yaml", None, {"X-Gatebench": "1"})
    assert status == 411
    status, _, _ = served.request(
        "POST",
        "/api/uploads?name=p.yaml",
        b"0\r\n\r\n",
        {"X-Gatebench": "1", "Transfer-Encoding": "chunked", "Content-Length": "5"},
    )
    assert status == 411


def test_content_checks(served: Served) -> None:
    status, body = served.upload("uploads", b"\x89PNG\r\n\x1a\n", "name=logo.png")
    assert status == 400
    assert body["errors"] == [
        {
            "pointer": "",
            "message": "byte 0x89 at offset 0 is not valid UTF-8; save the file as UTF-8",
            "severity": "error",
            "line": 1,
            "column": 1,
            "source": "logo.png",
        }
    ]
    status, body = served.upload("uploads", BROKEN)
    assert status == 400
    assert [(e["pointer"], e["line"]) for e in body["errors"]] == [
        ("/x-gatebench/workloads/0/operation", 113)
    ]
    status, listed = served.json("GET", "/api/runs")
    assert listed == {"runs": []}  # nothing was queued


def test_a_plan_whose_credential_the_server_lacks_is_refused_before_it_is_queued(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs read the server's environment: an unset credential variable would fail the
    run at once, after the form said the upload was fine."""
    auction = (EXAMPLES / "auction" / "openapi.yaml").read_bytes()
    monkeypatch.delenv("AUCTION_TOKEN", raising=False)
    for route in ("validate", "uploads"):
        status, body = served.upload(route, auction, "name=auction.yaml")
        assert status == 409, route
        assert [(e["pointer"], e["line"], e["message"], e["source"]) for e in body["errors"]] == [
            (
                "/x-gatebench/auth",
                114,
                "environment variable AUCTION_TOKEN is not set; the plan's auth reads the "
                "credential from it when requests are sent (export AUCTION_TOKEN=...); the runs "
                "of gatebench serve read its environment: start it with the variable set",
                "auction.yaml",
            )
        ]
    assert served.json("GET", "/api/runs")[1] == {"runs": []}
    monkeypatch.setenv("AUCTION_TOKEN", "t0ken")
    assert served.upload("validate", auction, "name=auction.yaml")[0] == 200


def test_valid_uploads_queue_one_after_the_other(served: Served) -> None:
    status, first = served.upload("uploads", PETSTORE, "name=petstore.yaml&quick=1")
    assert status == 202
    assert first["status"] == "queued"
    assert first["queue_position"] == 1
    status, second = served.upload("uploads", PETSTORE, "name=petstore.yaml&gateways=nginx")
    assert status == 202
    assert second["queue_position"] == 2
    assert second["run_id"] != first["run_id"]
    # Same spec: within the same second a suffix keeps the two ids apart (the stamp is the
    # first 15 characters; on a busy machine the second upload may come a second later).
    if second["run_id"][:15] == first["run_id"][:15]:
        assert second["run_id"] == f"{first['run_id']}-2"
    else:
        assert second["run_id"][:15] > first["run_id"][:15]
    status, listed = served.json("GET", "/api/runs")
    runs = listed["runs"]
    assert [(r["run_id"], r["status"], r["queue_position"]) for r in runs] == [
        (second["run_id"], "queued", 2),
        (first["run_id"], "queued", 1),
    ]
    assert runs[0]["gateways"] == ["nginx"]
    assert runs[1]["quick"] is True
    status, got = served.json("GET", f"/api/runs/{first['run_id']}")
    assert (status, got["run"]["status"]) == (200, "queued")
    saved = served.results / "uploads" / first["run_id"] / "petstore.yaml"
    assert saved.read_bytes() == PETSTORE


def _put(served: Served, ticket: dict[str, Any], body: bytes, **override: str) -> int:
    url = urlsplit(ticket["put"]["url"])
    headers = {**ticket["put"]["headers"], **override}
    return served.request("PUT", f"{url.path}?{url.query}", body, headers)[0]


def test_signed_url_uploads(signed: Served) -> None:
    status, config = signed.json("GET", "/config.json")
    assert config["upload"]["method"] == "signed-url"
    status, ticket = signed.upload("uploads", PETSTORE, "name=petstore.yaml&quick=1")
    assert status == 200
    assert ticket["put"]["url"].startswith(f"http://127.0.0.1:{signed.port}/bucket/specs/")
    assert ticket["spec_uri"].startswith((signed.results / "uploads" / "bucket").resolve().as_uri())
    query = dict(parse_qsl(urlsplit(ticket["put"]["url"]).query))
    assert set(query) == {"expires", "signature"}
    # Tampering with what was signed is refused.
    assert _put(signed, ticket, PETSTORE, **{"x-goog-meta-gatebench": '{"quick":false}'}) == 403
    assert _put(signed, ticket, PETSTORE, **{"Content-Type": "text/plain"}) == 403
    listed = signed.json("GET", f"/api/runs?spec_uri={ticket['spec_uri']}")[1]["runs"]
    assert listed == []
    assert _put(signed, ticket, PETSTORE) == 200
    # One upload per URL, like x-goog-if-generation-match: 0.
    assert _put(signed, ticket, PETSTORE) == 412
    listed = signed.json("GET", f"/api/runs?spec_uri={ticket['spec_uri']}")[1]["runs"]
    assert len(listed) == 1
    assert listed[0]["status"] == "queued"
    assert listed[0]["quick"] is True
    stored = signed.results / "uploads" / "bucket" / ticket["object"]
    assert stored.read_bytes() == PETSTORE
    bad_name = signed.request("PUT", "/bucket/specs/..%2f..%2fx.yaml?expires=1&signature=x", b"x")
    assert bad_name[0] == 400


# -- bounds: the queue, the parses, the connections, slow and short requests ------------------


@pytest.fixture
def bounded(tmp_path: Path) -> Iterator[Served]:
    limits = ServeLimits(
        max_queued=2, max_parses=1, max_connections=6, read_timeout=1.0, parse_wait=0.5
    )
    yield from _serve(tmp_path, limits=limits)


def _open(served: Served, head: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    if head:
        sock.sendall(head)
    return sock


def _answer(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    sock.close()
    return data


def _until(what: str, check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _slot_taken(served: Served) -> bool:
    slots = served.server.state.parse_slots
    if slots.acquire(blocking=False):
        slots.release()
        return False
    return True


def test_a_full_queue_answers_429_with_retry_after_and_its_length(bounded: Served) -> None:
    for position in (1, 2):
        status, answer = bounded.upload("uploads", PETSTORE, "name=petstore.yaml")
        assert (status, answer["queue_position"]) == (202, position)
    status, headers, body = bounded.request(
        "POST", "/api/uploads?name=petstore.yaml", PETSTORE, {"X-Gatebench": "1"}
    )
    assert status == 429
    assert headers["retry-after"] == "60"
    answer = json.loads(body)
    assert answer["queue_length"] == 2
    assert answer["errors"][0]["message"] == (
        "the run queue is full: 2 runs are waiting (the limit is 2, --max-queued); "
        "try again once one has started"
    )
    # checking a spec needs no place in the queue
    assert bounded.upload("validate", PETSTORE)[0] == 200
    listed = bounded.json("GET", "/api/runs")[1]["runs"]
    assert len(listed) == 2


@pytest.fixture
def signed_one_place(tmp_path: Path) -> Iterator[Served]:
    yield from _serve(tmp_path, upload_method="signed-url", limits=ServeLimits(max_queued=1))


def test_a_full_queue_refuses_a_signed_upload_before_storing_it(
    signed_one_place: Served,
) -> None:
    served = signed_one_place
    bodies = [PETSTORE, PETSTORE + b"# the second\n"]
    tickets = [served.upload("uploads", body, "name=petstore.yaml")[1] for body in bodies]
    assert _put(served, tickets[0], bodies[0]) == 200
    assert _put(served, tickets[1], bodies[1]) == 429
    # and no further ticket while it is full
    assert served.upload("uploads", PETSTORE, "name=other.yaml")[0] == 429
    assert not (served.results / "uploads" / "bucket" / tickets[1]["object"]).exists()


@pytest.mark.parametrize(
    ("length", "status"),
    [("²", 400), ("٣", 400), ("-1", 400), ("+5", 400), ("0x10", 400), ("5 5", 400), ("", 400)],
)
def test_a_malformed_content_length_is_a_client_error(
    bounded: Served, length: str, status: int
) -> None:
    sock = _open(
        bounded,
        b"POST /api/validate?name=p.yaml HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Gatebench: 1\r\n"
        b"Content-Length: %s\r\n\r\nabcde" % (bounded.port, length.encode()),
    )
    answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 %d " % status), answer[:200]
    assert b'"message": "Content-Length: expected a whole number of bytes' in answer


def test_two_different_lengths_are_refused(bounded: Served) -> None:
    sock = _open(
        bounded,
        b"POST /api/validate?name=p.yaml HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Gatebench: 1\r\n"
        b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef" % bounded.port,
    )
    assert _answer(sock).startswith(b"HTTP/1.1 400 ")


def test_headers_sent_a_byte_at_a_time_are_cut_off(bounded: Served) -> None:
    sock = _open(bounded)
    start = time.monotonic()
    closed = None
    head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: " % bounded.port
    for byte in head + b"a" * 100:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            closed = time.monotonic() - start
            break
        sock.settimeout(0.1)
        with contextlib.suppress(TimeoutError):
            if sock.recv(4096, socket.MSG_PEEK):
                closed = time.monotonic() - start
                break
    assert closed is not None, "the server still reads a request that started 10 s ago"
    assert closed < 5  # the read timeout is 1 s
    sock.settimeout(5)
    assert _answer(sock).startswith(b"HTTP/1.1 408 ")


def test_a_body_shorter_than_its_length_is_cut_off(bounded: Served) -> None:
    sock = _open(
        bounded,
        b"POST /api/validate?name=p.yaml HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Gatebench: 1\r\n"
        b"Content-Length: 1000\r\n\r\nopenapi: 3.0.0\n" % bounded.port,
    )
    start = time.monotonic()
    answer = _answer(sock)
    assert time.monotonic() - start < 5
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"the body stopped after 15 of 1,000 bytes" in answer


def test_an_idle_connection_is_closed_without_an_answer(bounded: Served) -> None:
    sock = _open(bounded)
    start = time.monotonic()
    assert _answer(sock) == b""
    assert time.monotonic() - start < 5


@pytest.fixture
def one_parse(tmp_path: Path) -> Iterator[Served]:
    # a read timeout long enough for the slow upload to outlast the other's wait
    yield from _serve(tmp_path, limits=ServeLimits(max_parses=1, parse_wait=0.5))


def test_parses_wait_for_a_free_slot(one_parse: Served) -> None:
    bounded = one_parse
    # An upload whose body trickles in holds no parse slot: the server reads it first...
    slow = _open(
        bounded,
        b"POST /api/validate?name=p.yaml HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Gatebench: 1\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % (bounded.port, len(PETSTORE)),
    )
    slow.sendall(PETSTORE[:100])
    assert bounded.upload("validate", PETSTORE)[0] == 200
    assert not _slot_taken(bounded)
    # ...while a check in progress does: the next upload waits for it (0.5 s here), then is
    # told to come back.
    slots = bounded.server.state.parse_slots
    assert slots.acquire(blocking=False)
    try:
        status, headers, body = bounded.request(
            "POST", "/api/validate?name=p.yaml", PETSTORE, {"X-Gatebench": "1"}
        )
    finally:
        slots.release()
    assert status == 503
    assert headers["retry-after"] == "5"
    assert json.loads(body)["errors"][0]["message"] == (
        "1 upload is being checked (the limit is 1, --max-parses); try again in a few seconds"
    )
    slow.sendall(PETSTORE[100:])
    assert _answer(slow).startswith(b"HTTP/1.1 200 ")
    assert bounded.upload("validate", PETSTORE)[0] == 200  # the slot is free again


def test_connections_beyond_the_limit_are_refused_at_once(bounded: Served) -> None:
    idle = [_open(bounded) for _ in range(6)]
    _until("six connections served", lambda: bounded.server.connections == 6)
    extra = _open(bounded)
    answer = _answer(extra)
    assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
    assert b"Retry-After: 1" in answer
    for sock in idle:
        sock.close()
    _until("the idle connections to end", lambda: bounded.server.connections == 0)
    assert bounded.request("GET", "/config.json")[0] == 200


def test_answers_carry_the_standard_reason_phrase(served: Served) -> None:
    """``400 Bad Request`` as browsers show it in their console, not werkzeug's capitals."""
    sock = _open(served, b"GET /api/runs/.. HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % served.port)
    sock.settimeout(5)
    assert sock.recv(4096).startswith(b"HTTP/1.1 400 Bad Request\r\n")
    sock.close()


def test_the_report_the_dashboard_frames_may_be_framed_by_this_server_alone(
    served: Served,
) -> None:
    """A change run's page holds its report in a frame (frontend/js/run.js): the page may frame
    this server (frame-src 'self'), and the report may be framed by this server alone
    (frame-ancestors 'self', X-Frame-Options SAMEORIGIN); the dashboard's own pages by none."""
    from gatebench.core.model import RunKind, RunRecord
    from gatebench.kinds._live._report import CHANGE_KIND
    from synthetic import synthetic_change

    change = synthetic_change(failed=())
    record = RunRecord(
        run_id="r-change", spec_uri="file:///a.yaml", spec_sha256="0" * 64, kind=RunKind.CHANGE
    )
    with SqliteStore(served.results / "s.sqlite") as store:
        store.create_run(record)
        store.put_result(record.run_id, CHANGE_KIND, "nginx", change.to_dict())
    status, headers, body = served.request("GET", "/api/runs/r-change/scale?format=html")
    assert status == 200 and b'id="change-timeline"' in body
    assert headers["content-security-policy"].endswith("frame-ancestors 'self'")
    assert headers["x-frame-options"] == "SAMEORIGIN"
    status, headers, _ = served.request("GET", "/api/runs/r-change/scale?format=json")
    assert status == 200 and headers["x-frame-options"] == "DENY"
