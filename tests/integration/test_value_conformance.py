"""One workload, one seed, three engines, the same requests: the value generators (constant, list
in order and at random, range, random, counter) are implemented three times, in the Gatling
simulation (Java), the wrk script (Lua) and gatebench-loadgen (Go), and this test sends one
workload document through each of them, the real programs against a server that records what
arrives, and compares request by request: path, query, header and body.

The document (``tests/data/engine/values.yaml``) uses every generator, in the path, the query,
a header, a cookie and a JSON body, beside a list and a cookie the description gives. Each engine runs the same phase with its own injection (Gatling: one
user, 40 requests in sequence; wrk: one connection for a second; loadgen: 100 arrivals a second
for 0.4 s); request g of the phase is the g-th the engine built, which each engine numbers the
same way (docs/engine.md, "Values"). The first 40 of each must be equal, and equal to the
definition computed here (:func:`unit`), so the three cannot agree on something else.
"""

from __future__ import annotations

import copy
import json
import math
import threading
from collections.abc import Iterator
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from gatebench.core.plan import build_plan
from gatebench.core.spec import read_spec
from gatebench.core.workload import build_schedule, render_workload
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.engines.wrk import WrkEngine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult
from paths import DATA

pytestmark = pytest.mark.integration

REQUESTS = 40
SPEC = DATA / "engine" / "values.yaml"
MASK = 2**64 - 1


def fnv1a64(name: str) -> int:
    h = 0xCBF29CE484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001B3) & MASK
    return h


def unit(seed: int, name: str, g: int) -> float:
    """u of request g for a parameter: SplitMix64's (g+1)-th output from seed XOR fnv1a64(name)."""
    z = ((seed ^ fnv1a64(name)) + (g + 1) * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return (z >> 11) * 2.0**-53


class _Hooks:
    def __init__(self) -> None:
        self.phases: dict[int, PhaseResult] = {}

    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        self.phases[result.phase] = result

    def tick(self) -> None:
        pass


@pytest.fixture
def capture() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A server that answers 200 and keeps the first requests it gets (path, query, the
    X-Range header, every Cookie header, the body)."""
    seen: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                if len(seen) < 5000:
                    parts = urlsplit(self.path)
                    kind = str(self.headers.get("Content-Type"))
                    seen.append(
                        {
                            "path": parts.path,
                            "query": parts.query,
                            "x-range": self.headers.get("X-Range"),
                            "cookie": self.headers.get_all("Cookie"),
                            **(
                                {"parts": _parts(kind, body)}
                                if kind.startswith("multipart/")
                                else {"body": body.decode("utf-8")}
                            ),
                        }
                    )
            # one write: headers and body apart would wait on the client's delayed ACK (Nagle)
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _parts(content_type: str, body: bytes) -> list[tuple[str, str, str | None, bytes]]:
    """A multipart body's parts: (name, media type, file name, content)."""
    head = f"Content-Type: {content_type}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    return [
        (
            str(part.get_param("name", header="content-disposition")),
            part.get_content_type(),  # text/plain when the part names none (RFC 7578)
            part.get_filename(),
            part.get_payload(decode=True),
        )
        for part in message.iter_parts()
    ]


def _document(url: str, spec: Path = SPEC) -> dict[str, Any]:
    result = read_spec(str(spec))
    assert result.api is not None, [p.format() for p in result.errors]
    plan = build_plan(dict(result.benchmark, backend={"url": url}), result.api)
    schedule = build_schedule(plan, {"baseline": url}, seed=8675309)
    document = render_workload(plan, result.api, schedule)
    assert all(p["measured"] for p in document["phases"])
    return document


def _with_injection(document: dict[str, Any], injection: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(document)
    out["phases"][0]["injection"] = injection
    return out


def _sent(
    engine: Any, document: dict[str, Any], work: Path, seen: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    seen.clear()
    hooks = _Hooks()
    with Supervisor() as supervisor:
        run = engine.run(document, work / engine.name, hooks, supervisor=supervisor)
    assert not run.crashed, run.reason
    assert 0 in hooks.phases, f"{engine.name} reported no phase"
    # request g carries seq = g + 1: the order each engine built them in
    requests = sorted(seen, key=lambda r: int(json.loads(r["body"])["label"].split("-")[1]))
    assert len(requests) >= REQUESTS, f"{engine.name} sent {len(requests)} requests"
    return requests[:REQUESTS]


def test_the_three_engines_send_the_same_values(
    capture: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    url, seen = capture
    document = _document(url)
    seed = int(document["phases"][0]["seed"])
    gatling = _sent(GatlingEngine(), document, tmp_path, seen)
    wrk = _sent(
        WrkEngine(),
        _with_injection(document, {"kind": "concurrent", "users": 1, "duration_ms": 1000}),
        tmp_path,
        seen,
    )
    loadgen = _sent(
        LoadgenEngine(),
        _with_injection(document, {"kind": "constant_rate", "rate": 100, "duration_ms": 400}),
        tmp_path,
        seen,
    )
    for g, (a, b, c) in enumerate(zip(gatling, wrk, loadgen, strict=True)):
        assert a == b == c, f"request {g}:\n gatling {a}\n wrk     {b}\n loadgen {c}"

    # ... and what they agree on is the definition
    picks = ["alpha", "two words", "3", "é/ü"]
    for g, request in enumerate(gatling):
        query = dict(parse_qsl(request["query"]))
        body = json.loads(request["body"])
        assert request["path"] == f"/orders/{1 + math.floor(unit(seed, 'id', g) * 1_000_000)}"
        assert query["pick"] == picks[math.floor(unit(seed, "pick", g) * 4)]
        assert query["cycle"] == "xyz"[g % 3]
        assert query["n"] == str(5 + 3 * g)
        assert request["x-range"] == str(10 + g % 4)
        # required, left out of the plan: sent as its style says (an exploded form list), and
        # cookie parameters in one Cookie header, the plan's generator among them
        assert [v for k, v in parse_qsl(request["query"]) if k == "tags"] == ["a", "b c"]
        assert request["cookie"] == [f"session=s%201; visit={7 + g}"]
        assert body == {
            "label": f"item-{g + 1}",
            "amount": math.floor(unit(seed, "amount", g) * 100),
            "note": 'é & <b> "q"',
            "ratio": 2.5,
            "ok": True,
        }
    # the random draws are not all alike (a generator stuck on one value would pass the above
    # only if the definition were too)
    assert len({r["path"] for r in gatling}) > 30
    assert len({dict(parse_qsl(r["query"]))["pick"] for r in gatling}) == 4


def test_the_three_engines_send_the_same_multipart_parts(
    capture: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """A multipart body (tests/data/engine/parts.yaml): the plan's parts, a text part with its
    own media type among them, then the parts the description gives (a file typed by
    contentMediaType, an array as one part per item, an object as JSON). Each engine writes
    its own boundary; the parts must be alike."""
    url, seen = capture
    document = _document(url, DATA / "engine" / "parts.yaml")
    sent = {}
    for engine, injection in (
        (GatlingEngine(), None),
        (WrkEngine(), {"kind": "concurrent", "users": 1, "duration_ms": 1000}),
        (LoadgenEngine(), {"kind": "constant_rate", "rate": 20, "duration_ms": 200}),
    ):
        seen.clear()
        run_document = copy.deepcopy(document)
        for phase in run_document["phases"]:
            phase["injection"] = injection or phase["injection"]
        with Supervisor() as supervisor:
            run = engine.run(run_document, tmp_path / engine.name, _Hooks(), supervisor=supervisor)
        assert not run.crashed, run.reason
        first = {r["path"]: r["parts"] for r in reversed(seen)}  # each path's first request
        sent[engine.name] = {
            path: [(name, kind, filename, len(data)) for name, kind, filename, data in parts]
            for path, parts in first.items()
        }
    assert sent["gatling"] == sent["wrk"] == sent["loadgen"], sent
    assert sent["gatling"]["/plan"] == [
        ("file", "image/png", "file.bin", 10),
        ("meta", "application/json", None, 8),
        ("note", "text/plain", None, 5),
    ]
    assert sent["gatling"]["/described"] == [
        ("photo", "image/png", "photo.bin", 1024),
        ("pics", "application/octet-stream", "pics.bin", 1024),
        ("pics", "application/octet-stream", "pics.bin", 1024),
        ("labels", "text/plain", None, 1),
        ("labels", "text/plain", None, 1),
        ("meta", "application/json", None, 16),
    ]
