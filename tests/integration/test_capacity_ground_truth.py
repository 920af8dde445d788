"""Ground truth for the capacity search: the mock backend with 20 workers holding every response
exactly 50 ms serves 20 / 50 ms = 400 requests per second and no more. The search, run with the
real load generator against the real backend (no gateway), must land within its precision
(5 %) of that. A few seconds of load at a few hundred requests per second on 127.0.0.1.

Timing bands (marked ``timing_band``), and why they hold on a busy 2-core machine: at 400 req/s
the engine and the backend together use a few % of one core. The objective bounds the median
(p50 ≤ 65 ms, 15 ms above the hold), which other work on the machine cannot move (it delays a
few requests, the tail); an overload moves it as surely as the tail: above 400 req/s the queue
grows by the excess every second, and at 2 % over, a probe's median request (0.5 s of warm-up
and half of its 1-s window in) waits 8 requests of 20 workers × 50 ms... 20 ms behind the
others. A long hold (50 ms rather than 10) keeps the machine's scheduling delays a small
share of each request's time. What the test cannot absorb is a machine so crowded that the
backend's own holds run late for whole milliseconds (measured here: others using 96 % of the
machine made its capacity ~370 req/s): when the search misses while other processes used more
than 20 % of the machine (its probes say ``noisy``), it is run again after a pause, at most
three times; a miss on a quiet machine fails at once.
"""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import TOKEN_ENV, items

from gatebench.core.plan import Capacity
from gatebench.kinds.capacity import ProbeRequest, SearchResult, late_threshold_ms, search
from gatebench.local.backends import start_plan_backend
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.probing import Prober
from gatebench.local.procs import Supervisor

pytestmark = pytest.mark.timing_band

WORKERS, SERVICE_MS = 20, 50.0
CAPACITY = WORKERS / SERVICE_MS * 1000.0
ATTEMPTS = 3
PAUSE_S = 20.0


def _search(tmp_path: Path) -> tuple[SearchResult, Capacity, dict[str, Any]]:
    api, plan = items(
        gateways=[],
        backend={"mock": {"latency": f"{SERVICE_MS:g}ms", "workers": WORKERS}},
        capacity={
            "objective": {"p50": f"{SERVICE_MS + 15:g}ms"},
            "start_rate": "200/s",
            "warmup": "0.5s",
            "probe": "1s",
            "confirm": "2s",
        },
    )
    settings: Capacity = plan.capacity_settings()["read"]
    tmp_path.mkdir(parents=True, exist_ok=True)
    with Supervisor() as supervisor:
        backend, base_url, reset_url = start_plan_backend(supervisor, plan, api, tmp_path)
        assert backend is not None
        prober = Prober(
            plan,
            api,
            "read",
            "baseline",
            base_url,
            supervisor,
            tmp_path,
            late_threshold_ms(settings.objective),
            engine=LoadgenEngine(),
            reset_url=reset_url,
            # the backend is the target: its CPU is the target's, not "other processes'"
            cpu_groups={"backend": [backend.pid]},
            target_groups=lambda target: ["backend"],
        )
        result = search(settings, prober)
        stats = _stats(base_url)
    return result, settings, stats


def _noisy(result: SearchResult) -> float:
    """The most CPU other processes used during a probe, % of the machine."""
    return max((p.metrics.others_cpu_pct or 0.0 for p in result.probes), default=0.0)


def test_the_search_finds_the_backends_known_capacity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    misses = []
    for attempt in range(ATTEMPTS):
        result, settings, stats = _search(tmp_path / f"attempt-{attempt}")
        error = abs((result.knee or 0.0) - CAPACITY) / CAPACITY
        if result.status == "found" and error <= settings.precision:
            break
        misses.append(f"knee {result.knee} ({result.status}), others used {_noisy(result):.0f} %")
        if _noisy(result) <= 20.0:
            break  # a quiet machine: the miss is the search's
        time.sleep(PAUSE_S)
    rates = [(p.request.rate, p.verdict.outcome) for p in result.probes]
    assert result.status == "found", (result.note, rates, misses)
    assert result.knee is not None
    assert abs(result.knee - CAPACITY) / CAPACITY <= settings.precision, (rates, misses)
    assert len(result.probes) <= 10, rates
    # the backend served exactly what the engine sent in the last probe (each probe resets it
    # first): the confirmation's warm-up and measured window
    last = result.probes[-1].request
    assert last.kind == "confirm"
    sent = round(last.rate * last.warmup_s) + round(last.rate * last.duration_s)
    assert stats["requests"] == sent
    # within the objective the latency is the hold (released tens of µs late) plus what a
    # probe near the knee queues; no request reads less than the hold
    confirm = result.confirmation
    assert confirm is not None
    assert SERVICE_MS <= confirm.metrics.latency["p50"] <= SERVICE_MS + 15
    assert confirm.metrics.dropped == 0 and confirm.metrics.ko == 0
    assert confirm.metrics.scheduled == round(last.rate * last.duration_s)


def _stats(base_url: str) -> dict[str, int]:
    host, port = base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("GET", "/__gatebench__/stats")
    data: dict[str, int] = json.loads(conn.getresponse().read())
    conn.close()
    return data


@pytest.mark.parametrize("connections", ["keep-alive", "new"])
def test_arrivals_ride_a_pool_of_kept_alive_connections_unless_told_otherwise(
    connections: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 arrivals in a second at a 10 ms backend: about 2 requests are in flight at a time, so
    a pool needs a handful of connections; ``new`` opens one per request."""
    monkeypatch.setenv(TOKEN_ENV, "t")
    api, plan = items(
        gateways=[],
        backend={"mock": {"latency": "10ms"}},
        capacity={"connections": connections},
    )
    settings = plan.capacity_settings()["read"]
    with Supervisor() as supervisor:
        backend, base_url, reset_url = start_plan_backend(supervisor, plan, api, tmp_path)
        assert backend is not None
        prober = Prober(
            plan,
            api,
            "read",
            "baseline",
            base_url,
            supervisor,
            tmp_path,
            late_threshold_ms(settings.objective),
            engine=LoadgenEngine(connections=settings.connections),
            reset_url=reset_url,
        )
        m = prober(ProbeRequest(200.0, "grow", 0.0, 1.0))
    assert m.requests == 200 and m.ko == 0
    if connections == "new":
        assert m.connections == 200
    else:
        assert 1 <= m.connections <= 50
