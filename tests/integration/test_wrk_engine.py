"""The wrk engine with the real wrk (Debian 4.1.0) behind the engine port: what it sends on the
wire (path values percent-encoded as Gatling does, headers, the token from the environment,
JSON and multipart bodies accepted by the real auction service), that its request count
matches what the backend served, and what it refuses. A few seconds of load on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from _engine_helpers import ITEMS, ROOT, TOKEN_ENV, assert_torn_down, items, processes_mentioning

from gatebench.core.errors import RunError
from gatebench.core.plan import build_plan
from gatebench.core.spec import read_spec
from gatebench.local.procs import free_port
from gatebench.local.runner import RunOptions, run_benchmark


class _Capture(BaseHTTPRequestHandler):
    """A real HTTP/1.1 server (keep-alive) that records what it receives."""

    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str, dict[str, str]]]] = []
    lock: ClassVar[threading.Lock] = threading.Lock()

    def do_GET(self) -> None:
        with self.lock:
            self.seen.append(
                (self.command, self.path, {k.lower(): v for k, v in self.headers.items()})
            )
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def capture() -> Iterator[tuple[int, list[tuple[str, str, dict[str, str]]]]]:
    _Capture.seen = []
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), _Capture)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield port, _Capture.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_wrk_sends_what_the_workload_describes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capture: Any
) -> None:
    port, seen = capture
    monkeypatch.setenv(TOKEN_ENV, "wire-token")
    values = ["a b/é", "x?y#z", "%41"]
    api, plan = items(
        gateways=[],
        baseline=True,
        repetitions=1,
        engine="wrk",
        warmup=False,
        backend={"url": f"http://127.0.0.1:{port}"},
        workloads=[
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"list": values}, "tag": {"list": ["one", "two"]}},
                "headers": {"X-Tag": "t-${tag}"},
                "injection": {"concurrent": 2, "duration": "1s"},
            }
        ],
    )
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="7" * 64,
        options=RunOptions(results_dir=tmp_path, seed=1, ceiling=False),
    )
    (m,) = outcome.measurements
    assert (m.engine, m.ko) == ("wrk", 0)
    load = [s for s in seen if s[1] != "/"]  # "/": the backend reachability check
    assert m.requests <= len(load) <= m.requests + 2  # 2 connections: at most 2 in flight
    paths = {path for _, path, _ in load}
    assert paths == {"/items/a%20b%2F%C3%A9", "/items/x%3Fy%23z", "/items/%2541"}
    assert {h["x-tag"] for _, _, h in load} == {"t-one", "t-two"}
    assert {h["authorization"] for _, _, h in load} == {"Bearer wire-token"}
    assert {h["user-agent"] for _, _, h in load} == {"gatebench"}
    assert {h["host"] for _, _, h in load} == {f"127.0.0.1:{port}"}
    # the secret reaches the wire through the environment only
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert b"wire-token" not in path.read_bytes(), path
    assert processes_mentioning(str(outcome.run_dir.resolve())) == []


def test_wrk_drives_the_auction_service_with_bodies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUCTION_TOKEN", "t")
    result = read_spec(str(ROOT / "examples/auction/openapi.yaml"))
    assert result.api is not None
    section = dict(result.benchmark)
    section.update(
        gateways=[],
        repetitions=1,
        engine="wrk",
        warmup={"duration": "1s"},
        workloads=[
            {
                "name": "create",
                "operation": "createAuction",
                "body": {
                    "multipart": {
                        "title": {"value": "Camera ${n}"},
                        "image": {
                            "size": "20kB",
                            "filename": "c.jpg",
                            "content_type": "image/jpeg",
                        },
                    }
                },
                "params": {"n": {"counter": {"start": 1}}},
                "expect": [201],
                "injection": {"concurrent": 2, "duration": "1s"},
            },
            {
                "name": "bid",
                "operation": "bid",
                "params": {"auctionId": {"range": [1, 100]}, "amount": {"counter": {"start": 1}}},
                "body": {"json": {"bid": "${amount}"}},
                "expect": [200],
                "injection": {"concurrent": 4, "duration": "1s"},
            },
            {
                "name": "get",
                "operation": "getAuction",
                "params": {"auctionId": {"random": [1, 100]}},
                "injection": {"concurrent": 4, "duration": "1s"},
            },
        ],
    )
    plan = build_plan(section, result.api)
    outcome = run_benchmark(
        result.api,
        plan,
        spec_uri="auction",
        spec_sha256="8" * 64,
        options=RunOptions(results_dir=tmp_path, seed=2, ceiling=False),
    )
    by_name = {m.workload: m for m in outcome.measurements}
    assert set(by_name) == {"create", "bid", "get"}
    # the real service accepted every multipart upload (title and image parts) and every read
    assert by_name["create"].ko == 0 and by_name["create"].requests > 10
    assert by_name["get"].ko == 0 and by_name["get"].requests > 100
    # bids on 100 auctions with a counter that never repeats: each is above the last bid on
    # its auction unless threads overtook each other; most are accepted
    bid = by_name["bid"]
    assert bid.ok > bid.requests / 2
    assert all(reason.startswith("status 409, expected 200") for reason, _ in bid.errors)
    # µs, not whole ms: some of the 15 figures falls between two milliseconds (each whole by
    # chance once in a thousand)
    figures = [v for m in by_name.values() for v in (m.min, m.p50, m.p90, m.p99, m.max)]
    assert all(v > 0 for v in figures) and any(v != int(v) for v in figures), figures
    assert outcome.record.status.value == "done"
    assert_torn_down(outcome.run_dir)


def test_wrk_refuses_an_open_model_plan_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    api, plan = items()
    with pytest.raises(RunError) as info:
        run_benchmark(
            api,
            plan,
            spec_uri=str(ITEMS),
            spec_sha256="6" * 64,
            options=RunOptions(results_dir=tmp_path, engine="wrk"),
        )
    assert str(info.value) == (
        "workload 'read': engine wrk runs only the closed model (concurrent users for a whole "
        "number of seconds); got sequential: use engine: gatling for it"
    )
    (run_dir,) = tmp_path.iterdir()
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["status"] == "failed"
    assert not list(run_dir.glob("wrk*"))
