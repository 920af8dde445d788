"""The Go backend's mock and auction modes, as real processes: routes, statuses, bodies,
latency and size, uploads of 16 MB and more, the auction's bid rule, reset and stats."""

from __future__ import annotations

import http.client
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.backend import mock_segments, route_order
from gatebench.local.backends import backend_requests, start_backend
from gatebench.local.procs import Supervisor

AUTH = {"Authorization": "Bearer any-token"}


def _call(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def auction(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with Supervisor() as sup:
        _, port = start_backend(sup, "auction", tmp_path_factory.mktemp("auction"))
        yield port


@pytest.fixture(scope="module")
def mock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    work = tmp_path_factory.mktemp("mock")
    config = {
        "latency_ms": 0,
        "response_size": None,
        "routes": [
            {
                "method": "GET",
                "path": "/pets/{id}",
                "segments": mock_segments("/pets/{id}"),
                "status": 200,
                "content_type": "application/json",
                "body": '{"id": 1}',
                "headers": {},
            },
            {
                "method": "GET",
                "path": "/pets/mine",
                "segments": mock_segments("/pets/mine"),
                "status": 200,
                "content_type": "text/plain",
                "body": "mine",
                "headers": {},
            },
            {
                "method": "GET",
                "path": "/items/{id}.json",
                "segments": mock_segments("/items/{id}.json"),
                "status": 200,
                "content_type": "",
                "body": "one item",
                "headers": {},
            },
            {
                "method": "GET",
                "path": "/items/{id}",
                "segments": mock_segments("/items/{id}"),
                "status": 200,
                "content_type": "",
                "body": "item",
                "headers": {},
            },
            {
                "method": "GET",
                "path": "/items/latest.json",
                "segments": mock_segments("/items/latest.json"),
                "status": 200,
                "content_type": "",
                "body": "latest",
                "headers": {},
            },
            {
                "method": "GET",
                "path": "/range/{from}-{to}",
                "segments": mock_segments("/range/{from}-{to}"),
                "status": 200,
                "content_type": "",
                "body": "range",
                "headers": {},
            },
            {
                "method": "GET",
                "path": "/caf%C3%A9/{x}.txt",
                "segments": mock_segments("/caf%C3%A9/{x}.txt"),
                "status": 200,
                "content_type": "",
                "body": "cafe",
                "headers": {},
            },
            {
                "method": "POST",
                "path": "/pets",
                "segments": mock_segments("/pets"),
                "status": 201,
                "content_type": "",
                "body": "",
                "headers": {"Location": "/pets/1"},
            },
        ],
    }
    # in the order the core writes them (the backend answers with the first that matches)
    config["routes"] = sorted(config["routes"], key=route_order)
    path = work / "routes.json"
    path.write_text(json.dumps(config))
    with Supervisor() as sup:
        _, port = start_backend(sup, "mock", work, extra_args=["-config", str(path)])
        yield port


def _multipart(fields: dict[str, Any]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    out = b""
    for name, value in fields.items():
        if isinstance(value, bytes):
            out += (
                (
                    f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="x.jpg"\r\n'
                    "Content-Type: image/jpeg\r\n\r\n"
                ).encode()
                + value
                + b"\r\n"
            )
        else:
            out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


def test_mock_routes_statuses_and_bodies(mock: int) -> None:
    status, headers, body = _call(mock, "GET", "/pets/42")
    assert (status, headers["content-type"], body) == (200, "application/json", b'{"id": 1}')
    assert headers["x-gatebench-backend"] == "mock"
    assert _call(mock, "GET", "/pets/mine")[2] == b"mine"  # a literal segment wins
    status, headers, _ = _call(mock, "POST", "/pets", b"{}")
    assert (status, headers["location"]) == (201, "/pets/1")
    status, headers, _ = _call(mock, "DELETE", "/pets/1")
    assert (status, headers["allow"]) == (405, "GET")
    assert _call(mock, "GET", "/nothing")[0] == 404
    assert _call(mock, "GET", "/pets/")[0] == 404  # an empty segment is not a value


def test_mock_routes_segments_that_mix_text_and_parameters(mock: int) -> None:
    """The gateways' rules (core.renderers._routes): a parameter is one non-empty segment, or
    part of one; literal text is compared decoded; with the routes in the core's order, a
    literal segment wins over a partial one, which wins over a parameter."""
    assert _call(mock, "GET", "/items/7.json")[2] == b"one item"
    assert _call(mock, "GET", "/items/latest.json")[2] == b"latest"
    assert _call(mock, "GET", "/items/7")[2] == b"item"
    assert _call(mock, "GET", "/items/.json")[2] == b"item"  # no value before .json
    assert _call(mock, "GET", "/range/1-20")[2] == b"range"
    assert _call(mock, "GET", "/range/1-")[0] == 404
    assert _call(mock, "GET", "/range/12")[0] == 404
    assert _call(mock, "GET", "/caf%C3%A9/menu.txt")[2] == b"cafe"  # compared decoded
    assert _call(mock, "GET", "/items/a.json/x")[0] == 404


def test_mock_reads_uploads_of_16_mb_and_more(mock: int) -> None:
    body = bytes(range(256)) * (17 * 4096)  # 17.8 MB
    assert len(body) >= 16 * 1024 * 1024
    status, _, _ = _call(mock, "POST", "/pets", body, {"Content-Type": "application/octet-stream"})
    assert status == 201


def test_mock_latency_and_response_size(tmp_path: Path) -> None:
    route = {
        "method": "GET",
        "path": "/x",
        "segments": mock_segments("/x"),
        "status": 200,
        "content_type": "application/json",
        "body": '{"a": 1}',
        "headers": {},
    }
    (tmp_path / "slow.json").write_text(
        json.dumps({"latency_ms": 120, "response_size": 1000, "routes": [route]})
    )
    (tmp_path / "cut.json").write_text(
        json.dumps({"latency_ms": 0, "response_size": 4, "routes": [route]})
    )
    with Supervisor() as sup:
        _, slow = start_backend(
            sup, "mock", tmp_path / "a", extra_args=["-config", str(tmp_path / "slow.json")]
        )
        _, cut = start_backend(
            sup, "mock", tmp_path / "b", extra_args=["-config", str(tmp_path / "cut.json")]
        )
        start = time.monotonic()
        _, _, body = _call(slow, "GET", "/x")
        assert time.monotonic() - start >= 0.12
        assert len(body) == 1000 and body.startswith(b'{"a": 1}') and json.loads(body) == {"a": 1}
        assert _call(cut, "GET", "/x")[2] == b'{"a"'


def test_mock_workers_serve_at_most_their_number_at_once(tmp_path: Path) -> None:
    """2 workers holding 100 ms each: 6 requests sent 10 ms apart are served in three rounds, in
    the order they arrived. Judged on the backend's own timeline (nothing here depends on how
    fast the machine is): never more than 2 holds at once, each hold at least 100 ms, the
    workers passed on in order of arrival, and a request that waited got its worker no earlier
    than the release that freed it."""
    import threading

    route = {
        "method": "GET",
        "path": "/x",
        "segments": mock_segments("/x"),
        "status": 200,
        "content_type": "",
        "body": "ok",
        "headers": {},
    }
    (tmp_path / "w.json").write_text(
        json.dumps({"latency_ms": 100, "workers": 2, "routes": [route]})
    )
    with Supervisor() as sup:
        _, port = start_backend(
            sup, "mock", tmp_path, extra_args=["-config", str(tmp_path / "w.json")]
        )
        assert _call(port, "POST", "/__gatebench__/reset")[0] == 204

        def one(i: int) -> None:
            time.sleep(0.01 * i)  # arrive about in order, 10 ms apart
            assert _call(port, "GET", "/x")[0] == 200

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        served = backend_requests(port).phase()
    assert len(served) == 6
    holds = sorted(
        (r.held_from_us or 0, r.held_to_us or 0, r.worker, r.received_us) for r in served
    )
    assert {w for _, _, w, _ in holds} == {1, 2}
    assert all(to - start >= 100_000 for start, to, _, _ in holds), holds
    for start, _, _, _ in holds:  # at most 2 held at once
        assert sum(1 for s, t, _, _ in holds if s <= start < t) <= 2, holds
    # first come, first served: a request received 20 ms or more before another got its worker
    # first (closer ones may reach the queue in either order: the handler starts, then waits)
    for start, _, _, got in holds:
        assert all(s >= start for s, _, _, r in holds if r >= got + 20_000), holds
    # the last four waited for a worker, each from the release that freed it
    for start, _, worker, _ in holds[2:]:
        freed = max(t for s, t, w, _ in holds if w == worker and t <= start)
        assert start >= freed, holds


def test_the_backend_keeps_its_own_timeline(tmp_path: Path) -> None:
    """``GET /__gatebench__/requests``: every request with its connection, its epoch (a reset
    starts one and keeps the record), control calls marked, and on each kept-alive connection
    the release before and the receipt after each request."""
    with Supervisor() as sup:
        _, port = start_backend(sup, "echo", tmp_path)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            for path in ("/a", "/__gatebench__/reset", "/b", "/c"):
                conn.request("POST" if "reset" in path else "GET", path)
                conn.getresponse().read()
        finally:
            conn.close()
        _call(port, "GET", "/d")  # another connection
        timeline = backend_requests(port)
    assert timeline.epoch == 1
    *_, a, reset, b, c, d, me = timeline.requests  # before them, the readiness probe
    assert me.control and me.released_us is None  # this very call, still being answered
    assert [r.seq for r in (a, reset, b, c, d, me)] == list(range(a.seq, a.seq + 6))
    assert [a.epoch, reset.epoch, b.epoch, c.epoch, d.epoch] == [0, 0, 1, 1, 1]
    assert (a.control, reset.control, b.control, c.control, d.control) == (
        False,
        True,
        False,
        False,
        False,
    )
    assert a.conn == reset.conn == b.conn == c.conn != d.conn
    assert timeline.phase() == (b, c, d)
    # the chain on the kept-alive connection, in order on the backend's clock
    assert a.next_receipt_us == reset.received_us and reset.prev_release_us == a.released_us
    assert b.prev_release_us == reset.released_us and b.next_receipt_us == c.received_us
    assert c.prev_release_us == b.released_us and c.next_receipt_us is None
    assert d.prev_release_us is None and d.next_receipt_us is None
    for r in (a, reset, b, c, d):
        assert r.released_us is not None and r.received_us <= r.released_us
        assert r.held_us is None and r.worker is None  # echo holds nothing
    assert timeline.overwritten == 0
    assert timeline.start_wall_us / 1e6 == pytest.approx(time.time(), abs=60)


def test_mock_refuses_workers_without_a_latency(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"latency_ms": 0, "workers": 3, "routes": []}))
    from gatebench.core.errors import RunError

    with (
        Supervisor() as sup,
        pytest.raises(RunError, match=r"workers need a latency_ms above 0"),
    ):
        start_backend(
            sup, "mock", tmp_path, extra_args=["-config", str(tmp_path / "bad.json")], timeout=5
        )


def test_mock_refuses_a_bad_routes_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(
        json.dumps({"routes": [{"method": "GET", "path": "x", "status": 200}]})
    )
    from gatebench.core.errors import RunError

    with (
        Supervisor() as sup,
        pytest.raises(
            RunError,
            match=(
                r"(?s)^backend-mock exited with code 1 before it was ready; last log lines:\n"
                r".*routes\[0\]\.path must start with '/', got \"x\"$"
            ),
        ),
    ):
        start_backend(
            sup, "mock", tmp_path, extra_args=["-config", str(tmp_path / "bad.json")], timeout=5
        )


def test_auction_bids_only_above_the_highest(auction: int) -> None:
    assert _call(auction, "POST", "/__gatebench__/reset")[0] == 204

    def bid(amount):
        return _call(auction, "POST", "/bid/7", json.dumps({"bid": amount}).encode(), AUTH)

    status, _, body = bid(10)
    assert status == 200 and json.loads(body)["highestBid"] == 10
    status, _, body = bid(10)
    assert status == 409 and json.loads(body) == {"error": "bid 10 is not above the highest bid 10"}
    assert bid(9)[0] == 409
    assert bid(10.5)[0] == 200
    assert json.loads(_call(auction, "GET", "/auctions/7", headers=AUTH)[2])["highestBid"] == 10.5
    assert _call(auction, "POST", "/bid/999", b'{"bid": 1}', AUTH)[0] == 404
    assert _call(auction, "POST", "/bid/7", b'{"amount": 1}', AUTH)[0] == 400


def test_auction_reset_reseeds_and_counts(auction: int) -> None:
    _call(auction, "POST", "/bid/3", b'{"bid": 50}', AUTH)
    assert _call(auction, "POST", "/__gatebench__/reset")[0] == 204
    assert _call(auction, "GET", "/__gatebench__/reset")[0] == 405
    status, _, body = _call(auction, "GET", "/auctions/3", headers=AUTH)
    assert status == 200 and json.loads(body) == {
        "id": 3,
        "title": "Auction 3",
        "highestBid": 0,
        "images": ["/images/3/1.jpg"],
    }
    assert _call(auction, "GET", "/auctions/101", headers=AUTH)[0] == 404
    assert _call(auction, "GET", "/auctions/1", headers=AUTH)[0] == 200
    assert json.loads(_call(auction, "GET", "/__gatebench__/stats")[2]) == {
        "http2": 0,
        "requests": 3,
    }
    assert _call(auction, "GET", "/__gatebench__/health")[2] == b"ok auction\n"


def test_auction_needs_a_bearer_token(auction: int) -> None:
    status, headers, _ = _call(auction, "GET", "/auctions/1")
    assert (status, headers["www-authenticate"]) == (401, "Bearer")
    assert _call(auction, "GET", "/auctions/1", headers={"Authorization": "Bearer "})[0] == 401


def test_auction_create_with_an_image_of_16_mb(auction: int) -> None:
    image = b"\xff\xd8" + bytes(range(256)) * (16 * 4096 + 10)
    body, content_type = _multipart(
        {"title": "Vintage camera", "minimumBid": "100", "image": image}
    )
    status, _, reply = _call(
        auction, "POST", "/auctions", body, {**AUTH, "Content-Type": content_type}
    )
    assert status == 201
    created = json.loads(reply)
    assert (
        created["title"] == "Vintage camera"
        and created["highestBid"] == 100
        and created["id"] > 100
    )
    assert _call(auction, "GET", f"/auctions/{created['id']}", headers=AUTH)[0] == 200
    body, content_type = _multipart({"title": "no image"})
    assert (
        _call(auction, "POST", "/auctions", body, {**AUTH, "Content-Type": content_type})[0] == 400
    )
