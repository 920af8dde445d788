"""A target that closes a kept-alive connection on a request without answering it: every engine
counts that request as a failed request of its phase (docs/engine.md, "A connection closed
without a response"), whatever the engine did next.

The target is a small keep-alive server of this test's own (raw sockets): it reads each request
whole and answers it, but on every ``EVERY``-th request of the API (``/items``: control calls
are never dropped) it closes the connection instead (a FIN, or a reset with ``SO_LINGER`` 0), counting
what it received and dropped per method. Each engine runs a GET phase, then a POST phase, for
a few seconds on 127.0.0.1, and its failed requests per phase are compared with the drops the
server counted for that method:

- Gatling sends a request again on a new connection when its pooled connection closed before a
  status line (any method, not configurable), and leaves one OK record: the resend's log line
  is the failed attempt; every drop is a KO record or such a line, so the counts are exact.
- gatebench-loadgen fails the request (it used to resend a GET silently): exact.
- wrk counts a socket read error for each drop and reconnects: each is a failed request; the
  requests still in flight when wrk stops its clock are not counted, so up to one per
  connection may be missing.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, Hooks

from gatebench.core.measure import measurement_from
from gatebench.core.plan import build_plan
from gatebench.core.spec import read_spec
from gatebench.core.workload import Control, Phase, Schedule, phases_from_document, render_workload
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.engines.wrk import WrkEngine
from gatebench.local.procs import Supervisor

EVERY = 5
USERS = 4


class DropServer:
    """HTTP/1.1 keep-alive on 127.0.0.1: answers 200 (GET) or 201 (POST), or 204 to a control
    call, but closes the connection without an answer on every ``every``-th API request."""

    def __init__(self, every: int, reset: bool) -> None:
        self.every, self.reset = every, reset
        self.lock = threading.Lock()
        self.api = 0
        self.received: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.open: set[socket.socket] = set()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> DropServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.listener.close()
        with self.lock:
            for conn in list(self.open):
                conn.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.open.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                method, path, _ = lines[0].decode("latin-1").split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                while len(buf) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                buf = buf[length:]
                control = path.startswith("/__gatebench__")
                drop = False
                with self.lock:
                    # the API's requests (not a control call, nor the simulation's own first
                    # request to the target's root, which empties its caches)
                    if path.startswith("/items"):
                        self.received[method] += 1
                        self.api += 1
                        if self.api % self.every == 0:
                            drop = True
                            self.dropped[method] += 1
                if drop:
                    if self.reset:
                        conn.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                    return  # closed below, without an answer
                if control:
                    conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
                else:
                    body = b'{"id": 1, "name": "x"}'
                    status = b"201 Created" if method == "POST" else b"200 OK"
                    conn.sendall(
                        b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (status, len(body), body)
                    )
        except OSError:
            return
        finally:
            with self.lock:
                self.open.discard(conn)
            conn.close()


INJECTIONS = {
    # Gatling: a fixed number of requests (its default for fixed runs)
    "gatling": {"concurrent": USERS, "requests": 300},
    # wrk: the closed model for whole seconds
    "wrk": {"concurrent": USERS, "duration": "2s"},
    # loadgen: a constant arrival rate (the capacity search's and the rate loads' engine)
    "loadgen": {"constant_rate": {"rate": 150, "duration": "2s"}},
}


def _document(engine: str, url: str) -> dict[str, Any]:
    result = read_spec(str(ITEMS))
    assert result.api is not None
    section = dict(result.benchmark)
    section["workloads"] = [
        {
            "name": "read",
            "operation": "getItem",
            "params": {"id": {"range": [1, 10]}},
            "injection": INJECTIONS[engine],
        },
        {
            "name": "write",
            "operation": "createItem",
            "params": {"n": {"counter": {"start": 1}}},
            "body": {"json": {"name": "item-${n}"}},
            "injection": INJECTIONS[engine],
        },
    ]
    plan = build_plan(section, result.api)
    reset = Control(f"{url}/__gatebench__/reset")
    phases = tuple(
        Phase(i, "drops", w.name, 1, True, url, w.injection, (reset,))
        for i, w in enumerate(plan.workloads)
    )
    return render_workload(plan, result.api, Schedule(phases, seed=3))


def _run(engine: str, url: str, work: Path) -> dict[str, Any]:
    document = _document(engine, url)
    runner = {"gatling": GatlingEngine, "wrk": WrkEngine, "loadgen": LoadgenEngine}[engine]()
    hooks = Hooks()
    with Supervisor() as sup:
        run = runner.run(document, work, hooks, supervisor=sup, env={TOKEN_ENV: "t"}, name=engine)
    assert not run.crashed, run.reason
    phases = {p.index: p for p in phases_from_document(document)}
    return {
        phases[i].workload: measurement_from("r", phases[i], r, engine=engine)
        for i, r in hooks.results.items()
    }


@pytest.mark.parametrize(
    ("engine", "reset"),
    [
        ("gatling", False),
        ("gatling", True),
        ("wrk", False),
        ("wrk", True),
        ("loadgen", False),
        ("loadgen", True),
    ],
)
def test_a_request_the_target_dropped_is_a_failed_request(
    engine: str, reset: bool, tmp_path: Path
) -> None:
    with DropServer(EVERY, reset) as server:
        measured = _run(engine, server.url, tmp_path)
    assert set(measured) == {"read", "write"}
    figures = {
        name: (m.requests, m.ok, m.ko, server.received[method], server.dropped[method])
        for name, method in (("read", "GET"), ("write", "POST"))
        for m in [measured[name]]
    }
    print(f"\n{engine} reset={reset} (requests, ok, ko, received, dropped): {figures}")
    for name, method in (("read", "GET"), ("write", "POST")):
        m = measured[name]
        received, dropped = server.received[method], server.dropped[method]
        assert dropped >= 10, f"{name}: too few drops to judge ({dropped})"
        assert m.requests == m.ok + m.ko + m.wrong_answers
        assert m.wrong_answers == 0
        reasons = dict(m.errors)
        if engine == "wrk":
            # requests in flight when wrk stops its clock are not counted: one per connection
            assert dropped - USERS <= m.ko <= dropped, (name, figures, reasons)
            assert received - USERS <= m.requests <= received, (name, figures)
        else:
            assert m.ko == dropped, (name, figures, reasons)
            assert m.requests == received, (name, figures)
        # nothing but the drops failed
        assert m.ok == m.requests - m.ko
        assert m.error_pct > 0
    if engine == "gatling":
        # the resends are the failed attempts of kept-alive connections; their log costs a line
        # per resend and none per request
        lines = (tmp_path / "gatling-retries.log").read_text().splitlines()
        resent = sum(
            count
            for m in measured.values()
            for reason, count in m.errors
            if "Gatling sent the request again" in reason
        )
        assert resent == len(lines) > 0
        print(f"gatling: {len(lines)} resend lines for {sum(server.received.values())} requests")
