"""``gatebench serve`` under load it must bound, as a real process: ten 24 MB checks at once
grow it by its parse slots, not by its callers (the server's memory, measured), and ten 10 MB
uploads fill its queue to its limit and no further (429 beyond, the waiting runs holding no
upload in memory). The HTTP-level bounds (slow heads, short bodies, bad lengths, connections)
are in tests/unit/test_serve_http.py."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import yaml
from _frontend_helpers import PETSTORE, Serve, start_serve, unreachable_petstore

MB = 1_000_000
PER_PARSE_MB = 250
"""A generous allowance for one 24 MB check (its body, joined, and the parsed description:
about 150 MB measured here)."""


def large_description(operations: int) -> bytes:
    """The petstore with ``operations`` more operations, as JSON: about 1 KB each."""
    doc = yaml.safe_load(PETSTORE.read_text(encoding="utf-8"))
    for i in range(operations):
        doc["paths"][f"/p{i}/{{id}}"] = {
            "get": {
                "operationId": f"op{i}",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "responses": {"200": {"description": "ok " + "y" * 800}},
            }
        }
    return json.dumps(doc).encode()


def padded_upload(size: int) -> bytes:
    """An upload whose run fails within a second (nothing listens on its backend), padded to
    ``size`` bytes with a description."""
    doc = yaml.safe_load(unreachable_petstore())
    text = json.dumps(doc)
    doc["info"]["description"] = "x" * (size - len(text) - 20)
    return json.dumps(doc).encode()


def post(serve: Serve, route: str, body: bytes, name: str) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(
        f"{serve.url}api/{route}?name={name}",
        data=body,
        method="POST",
        headers={"X-Gatebench": "1", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")


class PeakRss:
    """The serve process's resident memory, sampled every 20 ms while the block runs."""

    def __init__(self, pid: int) -> None:
        self.process = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self.peak = self.process.memory_info().rss
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def at_once(n: int, call: Callable[[], Any]) -> list[Any]:
    results: list[Any] = [None] * n

    def one(i: int) -> None:
        results[i] = call()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    return results


def test_ten_large_checks_at_once_grow_the_server_by_its_parse_slots(tmp_path: Path) -> None:
    body = large_description(24_000)
    assert 23 * MB < len(body) < 25 * MB
    serve = start_serve(tmp_path, "--max-parses", "2", "--max-bytes", "25MB")
    try:
        assert post(serve, "validate", body, "big.json")[0] == 200  # warm: imports, caches
        base = psutil.Process(serve.proc.pid).memory_info().rss
        with PeakRss(serve.proc.pid) as rss:
            answers = at_once(10, lambda: post(serve, "validate", body, "big.json"))
    finally:
        code, err = serve.stop()
    statuses = sorted(a[0] for a in answers)
    # each waits for a slot (30 s at most); on a busy machine some may be told to come back
    assert set(statuses) <= {200, 503}, statuses
    assert statuses.count(200) >= 2, statuses
    for status, headers, _ in answers:
        if status == 503:
            assert headers["Retry-After"] == "5"
    grown = (rss.peak - base) / MB
    print(f"base {base / MB:.0f} MB, peak {rss.peak / MB:.0f} MB, grown {grown:.0f} MB")
    assert grown < 2 * PER_PARSE_MB, f"grew by {grown:.0f} MB (base {base / MB:.0f} MB)"
    assert code == 0, err


def test_ten_large_uploads_fill_the_queue_to_its_limit(tmp_path: Path) -> None:
    body = padded_upload(10 * MB)
    serve = start_serve(tmp_path, "--max-queued", "3", "--max-parses", "1")
    try:
        base = psutil.Process(serve.proc.pid).memory_info().rss
        with PeakRss(serve.proc.pid) as rss:
            answers = [post(serve, "uploads", body, "big.json") for _ in range(10)]
        listed = json.loads(urllib.request.urlopen(f"{serve.url}api/runs", timeout=10).read())
    finally:
        code, err = serve.stop()
    statuses = [a[0] for a in answers]
    accepted = statuses.count(202)
    # three wait; a fourth may have been taken off the queue by then (its run fails at once)
    assert 3 <= accepted <= 6, statuses
    assert statuses[:3] == [202, 202, 202]
    refused = [a for a in answers if a[0] == 429]
    assert refused, statuses
    for _, headers, payload in refused:
        assert headers["Retry-After"] == "60"
        assert payload["queue_length"] == 3
        assert payload["errors"][0]["message"].startswith("the run queue is full: 3 runs are ")
    assert len(listed["runs"]) == accepted
    grown = (rss.peak - base) / MB
    print(f"base {base / MB:.0f} MB, peak {rss.peak / MB:.0f} MB, grown {grown:.0f} MB")
    # one upload read and checked at a time, none kept in memory once saved
    assert grown < PER_PARSE_MB, f"grew by {grown:.0f} MB (base {base / MB:.0f} MB)"
    assert code == 0, err
