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

from gatebench.local.backends import start_backend
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
                "status": 200,
                "content_type": "application/json",
                "body": '{"id": 1}',
                "headers": {},
            },
            {
                "method": "GET",
                "path": "/pets/mine",
                "status": 200,
                "content_type": "text/plain",
                "body": "mine",
                "headers": {},
            },
            {
                "method": "POST",
                "path": "/pets",
                "status": 201,
                "content_type": "",
                "body": "",
                "headers": {"Location": "/pets/1"},
            },
        ],
    }
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


def test_mock_reads_uploads_of_16_mb_and_more(mock: int) -> None:
    body = bytes(range(256)) * (17 * 4096)  # 17.8 MB
    assert len(body) >= 16 * 1024 * 1024
    status, _, _ = _call(mock, "POST", "/pets", body, {"Content-Type": "application/octet-stream"})
    assert status == 201


def test_mock_latency_and_response_size(tmp_path: Path) -> None:
    route = {
        "method": "GET",
        "path": "/x",
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
    """2 workers holding 100 ms each: 6 requests sent together are served in three rounds, in
    the order they arrived (physics: nothing can make them faster; a busy machine only makes
    them slower, so only lower bounds and the order are asserted)."""
    import threading

    route = {
        "method": "GET",
        "path": "/x",
        "status": 200,
        "content_type": "",
        "body": "ok",
        "headers": {},
    }
    (tmp_path / "w.json").write_text(
        json.dumps({"latency_ms": 100, "workers": 2, "routes": [route]})
    )
    done: dict[int, float] = {}
    with Supervisor() as sup:
        _, port = start_backend(
            sup, "mock", tmp_path, extra_args=["-config", str(tmp_path / "w.json")]
        )
        start = time.monotonic()

        def one(i: int) -> None:
            time.sleep(0.01 * i)  # arrive in order, 10 ms apart
            _call(port, "GET", "/x")
            done[i] = time.monotonic() - start

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    ends = [done[i] for i in range(6)]
    assert ends[0] >= 0.1 and ends[2] >= 0.2 and ends[4] >= 0.3
    assert ends[2] > ends[1] and ends[4] > ends[3]  # first come, first served
    assert max(ends) >= 0.3


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
