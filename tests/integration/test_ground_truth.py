"""Ground truth: the mock backend holds every response for exactly its configured latency, and
the engines report that delay. Through the baseline (no gateway) the p50 must be within 1 ms
(Gatling's resolution) of it, and no request may read less than it (a response is never
released early). Real backend, real Gatling, real wrk; a few seconds of load on 127.0.0.1.

Timing bands (marked ``timing_band``), and why they hold on a busy 2-core machine: the load is
bound by the backend's 20 ms hold, not by CPU (5 users × 50 req/s = 250 req/s, a few % of one
core), so other work on the box delays a request by scheduling latency (tens to hundreds of µs),
far inside the 1 ms p50 band; the median ignores the few requests a burst of load delays
more. ``min >= 20 ms`` and the upper request bound (5 users × 2 s / 20 ms, + 5 for the phase
edges) are physics: a busy machine can only make requests slower. The lower bound (300 of
500) leaves 40 % for a machine so busy that requests take 33 ms.

When the machine is busier than that (a load average of 8 on 2 cores has moved the p50 to
22 ms), the bands are judged against what the machine did meanwhile (``tests/timing.py``: the
CPU others used during the phase, the backend's own lateness): a miss the load explains is
measured again at a quieter moment, a bounded number of times; any other miss fails at once.
``test_a_wrong_delay_of_the_same_size_still_fails`` shows a real 2 ms error still fails.
"""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, items

from gatebench.core.model import Measurement
from gatebench.local.backends import start_plan_backend
from gatebench.local.procs import Supervisor
from gatebench.local.runner import RunOptions, RunOutcome, run_benchmark
from timing import (
    BackendWatch,
    Band,
    Meanwhile,
    Timed,
    fastest_reads_the_delay,
    measure_within_bands,
    others_cpu_during,
)

DELAY_MS = 20.0
USERS, DURATION_S = 5, 2.0
STOP_CHECK_S = {"gatling": 0.0, "wrk": 0.1}
"""How late after its duration each engine may stop: wrk's threads check for the stop every
100 ms (its RECORD_INTERVAL_MS; gatebench.local.engines.wrk), so a phase runs up to 2.1 s."""

pytestmark = pytest.mark.timing_band


def _plan(engine: str, delay_ms: float = DELAY_MS) -> tuple:  # type: ignore[type-arg]
    return items(
        gateways=[],
        baseline=True,
        repetitions=1,
        engine=engine,
        warmup={"duration": "1s"},
        backend={"mock": {"latency": f"{delay_ms:g}ms"}},
        workloads=[
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"range": [1, 10]}},
                "injection": {"concurrent": USERS, "duration": f"{DURATION_S:g}s"},
            }
        ],
    )


def _baseline_run(engine: str, results: Path, delay_ms: float = DELAY_MS) -> Timed[RunOutcome]:
    """One run through the baseline with the backend holding ``delay_ms``, judged against the
    configured ``DELAY_MS``."""
    api, plan = _plan(engine, delay_ms)
    watch = BackendWatch()
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="9" * 64,
        options=RunOptions(results_dir=results, seed=3, ceiling=False),
        display=watch.display,
        supervisor_factory=watch.supervisor,
    )
    (m,) = outcome.measurements
    assert (m.target, m.engine, m.ko) == ("baseline", engine, 0)
    return Timed(
        outcome,
        _bands(m),
        Meanwhile(m.other_cpu_pct, watch.late_ms),
        witnesses=[fastest_reads_the_delay(m.engine, m.min, DELAY_MS)],
    )


def _bands(m: Measurement) -> list[Band]:
    # 5 closed-model users, 20 ms each: at most 500 requests in 2 s, plus each user's request
    # in flight at the end and what wrk's late stop lets through
    most = USERS * (DURATION_S + STOP_CHECK_S[m.engine]) * 1000.0 / DELAY_MS + USERS
    return [
        Band("requests", m.requests, 300, most, busy="down"),
        Band("p50 (ms)", m.p50, DELAY_MS - 1.0, DELAY_MS + 1.0),
        # never released early, even at Gatling's whole ms
        Band("min (ms)", m.min, low=DELAY_MS),
    ]


@pytest.mark.parametrize("engine", ["gatling", "wrk"])
def test_the_baseline_reports_the_configured_delay(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    outcome = measure_within_bands(lambda: _baseline_run(engine, tmp_path))
    assert outcome.record.environment["resolution"] == (
        "Gatling records whole milliseconds"
        if engine == "gatling"
        else "wrk records latencies to 1 µs"
    )


def test_a_wrong_delay_of_the_same_size_still_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: the backend holds 22 ms, 2 ms more than the test expects, the size of the
    miss a busy machine caused. Whatever the machine does meanwhile, the judgement fails at
    once: the fastest request reads 22 ms too, which load cannot cause. wrk, for its µs: the
    p50 reads 22.0x ms, just over the 21 ms edge."""
    monkeypatch.setenv(TOKEN_ENV, "t")
    with pytest.raises(pytest.fail.Exception) as failed:
        measure_within_bands(lambda: _baseline_run("wrk", tmp_path, DELAY_MS + 2.0))
    text = str(failed.value)
    assert "p50 (ms) = 22." in text and "expected [19, 21]" in text, text
    assert "what load cannot move moved: wrk min (ms) = 22." in text, text
    assert "attempt 2" not in text


def _precision(work: Path) -> Timed[dict]:  # type: ignore[type-arg]
    """20 requests one after the other against the mock backend, and its own record of them."""
    api, plan = _plan("gatling")
    work.mkdir()
    with Supervisor() as sup:
        proc, base, _ = start_plan_backend(sup, plan, api, work)
        assert proc is not None
        port = int(base.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        took = []
        try:
            conn.request("POST", "/__gatebench__/reset")  # forget the readiness probe
            reset = conn.getresponse()
            reset.read()
            assert reset.status == 204
            with others_cpu_during([proc.pid]) as others:
                for i in range(20):
                    start = time.perf_counter()
                    conn.request("GET", f"/items/{i + 1}")
                    response = conn.getresponse()
                    response.read()
                    took.append((time.perf_counter() - start) * 1000)
                    assert response.status == 200
            conn.request("GET", "/__gatebench__/stats")
            stats = json.loads(conn.getresponse().read())
        finally:
            conn.close()
    assert min(took) >= DELAY_MS
    assert stats["requests"] == 20
    latency = stats["latency"]
    assert latency["configured_us"] == 20_000
    assert latency["held"] == 20
    late = latency["late_us"]["p50"]
    # released within a millisecond of the deadline (typically tens of µs: docs/trust.md);
    # never before it
    return Timed(latency, [Band("late p50 (µs)", late, 0, 999)], Meanwhile(others.pct))


def test_the_backend_measures_its_own_precision(tmp_path: Path) -> None:
    runs = iter(range(1, 100))
    measure_within_bands(lambda: _precision(tmp_path / f"attempt-{next(runs)}"))
