"""Ground truth: the engines report what really happened, judged against the backend's own
timeline of the same requests on the same machine (tests/groundtruth.py has the rules and why
they hold whatever the machine does). Real backend (20 ms hold), real Gatling, real wrk; a few
seconds of load on 127.0.0.1 through no gateway.

Nothing here is a band the machine can push a correct system out of: every rule follows from
how a request travels (no engine can read a request faster than the backend held it, nor
slower than the backend's time between the answers around it on the same connection), and the
backend's fastest hold reads the configured latency (a busy machine delays some releases, a
wrong hold every one). What a fixed band used to assert here (p50 within 1 ms of the hold) is a
benchmark: ``python -m benchmarks ground-truth`` (docs/benchmarks.md, "Ground truth").

The mutations show that real errors of the size a busy machine causes still fail: an engine
that adds 2 ms to every request (each engine, by the product's own reader of its records), and
a backend that holds 2 ms too long.
"""

from __future__ import annotations

import http.client
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import ITEMS, TOKEN_ENV, items

import gatebench.core.simlog as simlog
import gatebench.local.engines.wrk as wrk_engine
from gatebench.local.backends import backend_requests, start_plan_backend
from gatebench.local.procs import Supervisor
from gatebench.local.runner import RunOptions, run_benchmark
from groundtruth import (
    TimelineWatch,
    Verdict,
    gatling_stamps,
    judge_phase,
    measured_phase_ids,
)

DELAY_MS = 20.0
USERS, DURATION_S = 5, 2.0
IN_FLIGHT = {"gatling": 0, "wrk": USERS}
"""Requests the backend may receive that the engine does not report: Gatling ends every
request it started and records it; wrk stops counting with each connection's request in flight."""


def _plan(engine: str, delay_ms: float) -> tuple[Any, Any]:
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


def _judged(engine: str, results: Path, delay_ms: float = DELAY_MS) -> Verdict:
    """One run through the baseline with the backend holding ``delay_ms``, judged against the
    configured ``DELAY_MS``."""
    api, plan = _plan(engine, delay_ms)
    watch = TimelineWatch()
    outcome = run_benchmark(
        api,
        plan,
        spec_uri=str(ITEMS),
        spec_sha256="9" * 64,
        options=RunOptions(results_dir=results, seed=3, ceiling=False, engine_warmup=False),
        display=watch.display,
        supervisor_factory=watch.supervisor,
    )
    (m,) = outcome.measurements
    assert (m.target, m.engine, m.ko) == ("baseline", engine, 0)
    assert outcome.record.environment["resolution"] == (
        "Gatling records whole milliseconds"
        if engine == "gatling"
        else "wrk records latencies to 1 µs"
    )
    assert watch.timeline is not None, "the backend's timeline was not read before teardown"
    phase_id = measured_phase_ids(outcome.run_dir)[m.key]
    stamps = gatling_stamps(outcome.run_dir, phase_id) if engine == "gatling" else []
    verdict = judge_phase(
        m, watch.timeline, hold_ms=DELAY_MS, in_flight=IN_FLIGHT[engine], stamps_ms=stamps
    )
    print(verdict.describe())  # the figures behind it (pytest -rA shows them)
    return verdict


@pytest.mark.parametrize("engine", ["gatling", "wrk"])
def test_the_engines_report_what_the_backend_did(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, "t")
    verdict = _judged(engine, tmp_path)
    assert verdict.passed, verdict.describe()
    # a closed model of 5 users holding 20 ms each: the phase was long enough to judge
    assert verdict.requests >= 50, verdict.describe()


STAMPS = "stamps, no clock offset fits"
CAUGHT_BY = {"gatling": STAMPS, "wrk": "latency, sum"}
"""The rule that catches 2 ms added to every request on any machine: Gatling's stamps, whose
reads then lie too late against its sends for any one offset of its clock; wrk's latencies,
whose sum the connections' spans bound within the client's turnarounds (tests/groundtruth.py)."""


def _add_2_ms_to_gatling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gatling's records as the product reads them, each request ending 2 ms late."""
    real = simlog.RequestRecord
    monkeypatch.setattr(
        simlog,
        "RequestRecord",
        lambda groups, name, start, end, ok, message: real(
            groups, name, start, end + 2 if name.startswith("p") else end, ok, message
        ),
    )


def _add_2_ms_to_wrk(monkeypatch: pytest.MonkeyPatch) -> None:
    """wrk's result as the product reads it, every latency 2 ms longer."""
    real = wrk_engine.sample_from_result

    def late(*args: Any, **kwargs: Any) -> Any:
        sample, start_ms, end_ms = real(*args, **kwargs)
        sample.counts = Counter({v + 2.0: n for v, n in sample.counts.items()})
        return sample, start_ms, end_ms

    monkeypatch.setattr(wrk_engine, "sample_from_result", late)


@pytest.mark.parametrize(
    ("engine", "add_2_ms"), [("gatling", _add_2_ms_to_gatling), ("wrk", _add_2_ms_to_wrk)]
)
def test_an_engine_that_adds_2_ms_to_every_request_fails(
    engine: str, add_2_ms: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: the engine's reported latencies 2 ms longer than what happened, the size
    of the shift a busy machine caused. The backend's view of each connection bounds every
    latency from above, whatever the machine did meanwhile."""
    monkeypatch.setenv(TOKEN_ENV, "t")
    add_2_ms(monkeypatch)
    verdict = _judged(engine, tmp_path)
    assert not verdict.passed, verdict.describe()
    kinds = {b.split(":")[0] for b in verdict.breaches}
    # only what an engine reading too long can break: never a hold, a count or a lower bound
    assert kinds <= {"latency, upper", "latency, sum", STAMPS}, verdict.describe()
    assert CAUGHT_BY[engine] in kinds, verdict.describe()


def test_a_backend_that_holds_2_ms_too_long_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutation: the backend holds 22 ms while 20 ms was configured, the size of the shift
    a busy machine caused. Every hold reads 22 ms; a busy machine delays some releases, not
    all, so the fastest hold catches it. The engine (wrk, for its µs) is right, and the rules
    between it and the backend say so."""
    monkeypatch.setenv(TOKEN_ENV, "t")
    verdict = _judged("wrk", tmp_path, delay_ms=DELAY_MS + 2.0)
    assert not verdict.passed
    (breach,) = verdict.breaches
    assert breach.startswith("hold, a wrong one moves every request: the fastest of "), breach
    assert verdict.holds_ms[0] >= DELAY_MS + 2.0


def test_the_backend_keeps_an_exact_timeline_of_one_client(tmp_path: Path) -> None:
    """20 requests one after the other on one kept-alive connection, timed by this process:
    each took at least the backend's hold of it and at most its chain bound (request by
    request: one connection, in order), and the backend held each for the configured 20 ms
    (never less; the fastest within a millisecond, the record's own precision:
    docs/trust.md)."""
    api, plan = _plan("gatling", DELAY_MS)
    work = tmp_path / "backend"
    work.mkdir()
    with Supervisor() as sup:
        proc, base, _ = start_plan_backend(sup, plan, api, work)
        assert proc is not None
        port = int(base.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        took = []
        try:
            conn.request("POST", "/__gatebench__/reset")  # a new epoch: after the readiness probe
            reset = conn.getresponse()
            reset.read()
            assert reset.status == 204
            for i in range(20):
                start = time.perf_counter()
                conn.request("GET", f"/items/{i + 1}")
                response = conn.getresponse()
                response.read()
                took.append((time.perf_counter() - start) * 1000)
                assert response.status == 200
            conn.request("GET", "/__gatebench__/stats")
            stats_response = conn.getresponse()
            stats_response.read()
        finally:
            conn.close()
        timeline = backend_requests(port)
    served = timeline.phase()
    assert len(served) == 20
    assert len({r.conn for r in served}) == 1
    held = [r.held_us / 1000 for r in served if r.held_us is not None]
    assert len(held) == 20
    assert min(held) >= DELAY_MS, held
    assert min(held) <= DELAY_MS + 1.0, held
    for k, (ms, r) in enumerate(zip(took, served, strict=True)):
        assert r.released_us is not None
        assert ms >= (r.released_us - r.received_us) / 1000 - 0.01, (k, ms, r)
        # the reset came before the first and the stats call after the last: every one of the
        # 20 has both neighbours on the connection
        assert r.prev_release_us is not None and r.next_receipt_us is not None, r
        assert ms <= (r.next_receipt_us - r.prev_release_us) / 1000 + 0.01, (k, ms, r)
