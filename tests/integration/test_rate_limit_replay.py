"""A per-address rate limit proven on the real gateways that declare it (docs/gateways.md,
Policies): booted with 5 requests per second on every operation, in front of the echo backend.

- A client that keeps sending past the limit still gets the limit through, window after window:
  a gateway counts what it lets through, not what it refuses (HAProxy's ``http_req_rate``
  counted the refused requests too, and a client over the limit got nothing more through).
- The client address is the connection's peer: a client writing a new ``X-Forwarded-For`` on
  every request is still one client (Envoy took it from that header).

Each test sends from its own loopback address (127.0.0.x), so each starts with a fresh count.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from booted import skip_unless_installed
from gatebench.core.ir import Api
from gatebench.core.policies import Policies, PolicySet, RateLimit
from gatebench.core.renderers import RenderTarget, all_renderers, get_renderer
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners import boot_gateway

GATEWAYS = [
    r.name for r in all_renderers() if r.runs_here and "rate_limit.address" in r.supported_policies
]
LIMIT = 5
POLICIES = PolicySet(Policies(rate_limit=RateLimit(requests=LIMIT, window=1.0)))


@dataclass
class Limited:
    gateway: str
    port: int

    def statuses(
        self, count: int, *, source: str, rate: float | None = None, forwarded: bool = False
    ) -> list[tuple[float, int]]:
        """``count`` GETs on one keep-alive connection from ``source``, paced at ``rate`` per
        second (as fast as answered without): (seconds since the first, status) each."""
        conn = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=10, source_address=(source, 0)
        )
        out: list[tuple[float, int]] = []
        start = time.monotonic()
        try:
            for i in range(count):
                if rate is not None:
                    time.sleep(max(0.0, start + i / rate - time.monotonic()))
                headers = {"X-Forwarded-For": f"10.9.{i // 250}.{i % 250 + 1}"} if forwarded else {}
                conn.request("GET", f"/auctions/{i % 50 + 1}", headers=headers)
                response = conn.getresponse()
                response.read()
                out.append((time.monotonic() - start, response.status))
        finally:
            conn.close()
        return out


@pytest.fixture(scope="module")
def limited(
    request: pytest.FixtureRequest,
    supervisor: Supervisor,
    echo_backend: int,
    replay_api: object,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Limited]:
    name: str = request.param
    skip_unless_installed(name)
    api: Api = replay_api("auction")  # type: ignore[operator]
    target = RenderTarget(
        workdir=str(tmp_path_factory.mktemp(f"{name}-limit")),
        listen_port=free_port(),
        backend_url=f"http://127.0.0.1:{echo_backend}",
        admin_port=free_port(),
        redis_port=free_port(),
    )
    proc = boot_gateway(get_renderer(name), api, target, supervisor, policies=POLICIES)
    try:
        yield Limited(name, target.listen_port)
    finally:
        supervisor.stop(proc)


@pytest.mark.parametrize("limited", GATEWAYS, indirect=True)
def test_a_client_past_the_limit_still_gets_the_limit_through(limited: Limited) -> None:
    """20 requests a second for 3 s against 5 a second: about 5 pass in each second (nginx's
    and Traefik's leaky buckets pass a few more, 5 at once and then one every 200 ms), never
    only the first 5."""
    answers = limited.statuses(60, source="127.0.0.3", rate=20)
    passed = [t for t, status in answers if status == 200]
    assert {status for _, status in answers} <= {200, 429}, answers
    assert 2 * LIMIT <= len(passed) <= 5 * LIMIT, (limited.gateway, len(passed), answers)
    assert [t for t in passed if t >= 2.0], f"{limited.gateway}: nothing passed after 2 s"


@pytest.mark.parametrize("limited", GATEWAYS, indirect=True)
def test_x_forwarded_for_does_not_make_another_client(limited: Limited) -> None:
    answers = limited.statuses(LIMIT + 5, source="127.0.0.4", forwarded=True)
    passed = [status for _, status in answers if status == 200]
    assert len(passed) <= LIMIT + 1, (limited.gateway, answers)
    assert answers[-1][1] == 429, (limited.gateway, answers)
