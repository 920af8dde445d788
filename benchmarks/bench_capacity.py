"""Capacity ground truth: the capacity search against backends of known capacity, at rates
above the test's 400 req/s.

The mock backend with W workers each holding a response for exactly S ms serves W / S requests
per second and no more (``backend: {mock: {latency: S, workers: W}}``). For each such backend
the search (the real load generator, no gateway, the plan's defaults but the objective) runs
three times, as the repetitions of a capacity run do: the first from the plan's start rate, the
others next to the knees found before (``start_rate_for``); each row gives the probes it used,
the time it took and its error against W / S. Target (issue 25): within 5 % in
at most 10 probes.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from gatebench.backends import start_plan_backend
from gatebench.capacity import ProbeRequest, late_threshold_ms, search, start_rate_for
from gatebench.engines.loadgen import LoadgenEngine
from gatebench.plan import build_plan
from gatebench.probing import Prober
from gatebench.procs import Supervisor
from gatebench.spec import read_spec

from ._machine import CpuWindow

TITLE = "Capacity ground truth: the search against backends of known capacity"
ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "tests/data/engine/items.yaml"
BACKENDS = ((4, 10.0), (10, 10.0), (20, 10.0), (50, 10.0), (40, 4.0))
"""(workers, service ms): 400, 1,000, 2,000, 5,000 and 10,000 req/s."""
REPETITIONS = 3
OBJECTIVE_MS = 50.0
CAPACITY: dict[str, Any] = {
    "objective": {"p99": f"{OBJECTIVE_MS:g}ms"},
    "start_rate": "100/s",
    "warmup": "1s",
    "probe": "2s",
    "confirm": "5s",
}


def _plan(workers: int, service_ms: float) -> tuple[Any, Any]:
    result = read_spec(str(SPEC))
    assert result.api is not None
    section = {
        **result.benchmark,
        "gateways": [],
        "backend": {"mock": {"latency": f"{service_ms:g}ms", "workers": workers}},
        "capacity": CAPACITY,
    }
    return result.api, build_plan(section, result.api)


TIME_WAIT_RATE = 2000.0
TIME_WAIT_SECONDS = 2.0


def _time_wait(port: str) -> tuple[int, int]:
    """Sockets in TIME_WAIT on the server's side of ``port`` and on the clients' side."""
    out = subprocess.run(
        ["ss", "-Htan", "state", "time-wait"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    server = sum(1 for line in out if line.split()[2].endswith(f":{port}"))
    client = sum(1 for line in out if line.split()[3].endswith(f":{port}"))
    return server, client


def _connections() -> list[str]:
    """One probe per connection mode against the mock (no latency): who holds TIME_WAIT."""
    rows = []
    api, plan = _plan(1000, 1.0)
    for mode in ("keep-alive", "new"):
        with tempfile.TemporaryDirectory() as tmp, Supervisor() as sup:
            _, base_url, reset_url = start_plan_backend(sup, plan, api, tmp)
            port = base_url.rsplit(":", 1)[1]
            prober = Prober(
                plan,
                api,
                "read",
                "baseline",
                base_url,
                sup,
                Path(tmp),
                5.0,
                engine=LoadgenEngine(connections=mode),
                reset_url=reset_url,
            )
            m = prober(ProbeRequest(TIME_WAIT_RATE, "grow", 0.0, TIME_WAIT_SECONDS))
            server, client = _time_wait(port)
        rows.append(
            f"| {mode} | {m.requests:,} | {m.connections:,} | {server:,} | {client:,} | "
            f"{m.latency['p50']:.2f} ms | {m.latency['p99']:.2f} ms |"
        )
    return rows


def run() -> str:
    os.environ.setdefault("ITEMS_TOKEN", "bench")
    rows = []
    verdicts = []
    for workers, service_ms in BACKENDS:
        truth = workers / service_ms * 1000.0
        api, plan = _plan(workers, service_ms)
        settings = plan.capacity_settings()["read"]
        knees: list[float] = []
        for rep in range(1, REPETITIONS + 1):
            start = start_rate_for(settings, rep, knees)
            with tempfile.TemporaryDirectory() as tmp, CpuWindow() as cpu, Supervisor() as sup:
                backend, base_url, reset_url = start_plan_backend(sup, plan, api, tmp)
                assert backend is not None
                prober = Prober(
                    plan,
                    api,
                    "read",
                    "baseline",
                    base_url,
                    sup,
                    Path(tmp),
                    late_threshold_ms(settings.objective),
                    engine=LoadgenEngine(),
                    reset_url=reset_url,
                    # the backend is the target: its CPU is the target's, not "other processes'"
                    cpu_groups={"backend": [backend.pid]},
                    target_groups=lambda target: ["backend"],
                )
                started = time.monotonic()
                result = search(settings, prober, start_rate=start)
                wall = time.monotonic() - started
            knee = result.knee
            if knee is not None and result.status == "found":
                knees.append(knee)
            error = None if knee is None else 100.0 * (knee - truth) / truth
            probes = len(result.probes)
            lag = max((p.metrics.lag_p99_ms for p in result.probes), default=0.0)
            engine_cpu = max((p.metrics.engine_cpu_pct for p in result.probes), default=0.0)
            ok = result.status == "found" and error is not None and abs(error) <= 5.0
            verdicts.append(ok and probes <= 10)
            rows.append(
                f"| {workers} × {service_ms:g} ms | {truth:,.0f} | {rep} | "
                f"{start:,.0f} | {result.status} | "
                f"{'–' if knee is None else f'{knee:,.0f}'} | "
                f"{'–' if error is None else f'{error:+.1f} %'} | {probes} | {wall:.0f} s | "
                f"{lag:.1f} ms | {engine_cpu:.0f} % | {cpu.others_pct:.0f} % |"
            )
    met = sum(verdicts)
    return "\n".join(
        [
            f"Objective p99 ≤ {OBJECTIVE_MS:g} ms, errors ≤ 0.1 %; repetition 1 starts at "
            f"{CAPACITY['start_rate']}, repetition k at half the median knee found before, "
            "times 2^frac((k−1) × 0.618) (as a capacity run's repetitions do), growth 2, precision "
            f"5 %, probes of {CAPACITY['warmup']} warm-up + {CAPACITY['probe']}, confirmation "
            f"{CAPACITY['confirm']}; keep-alive connections; no gateway. The knee is the highest "
            "rate that held; the error is against workers / service time. The probes include the "
            "confirmation. Lag is the worst probe's p99 schedule lag, engine CPU the busiest "
            "probe's share of the engine's cores, others the CPU the rest of the machine used.",
            "",
            "| backend | capacity (req/s) | rep | start (req/s) | status | knee (req/s) | "
            "error | probes | time | lag p99 | engine CPU | others |",
            "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Within 5 % in at most 10 probes: {met} of {len(verdicts)} searches.",
            "",
            "### Connections: a pool, or one per request",
            "",
            f"One probe of {TIME_WAIT_RATE:,.0f} req/s for {TIME_WAIT_SECONDS:g} s against the "
            "mock backend (1,000 workers of 1 ms: no queue), with each `connections` mode; then "
            "the sockets left in TIME_WAIT (`ss -tan state time-wait`) on the server's side of "
            'its port and on the generator\'s side (docs/capacity.md, "Limits").',
            "",
            "| connections | requests | connections opened | TIME_WAIT, server side | "
            "TIME_WAIT, generator side | p50 | p99 |",
            "|---|---:|---:|---:|---:|---:|---:|",
            *_connections(),
        ]
    )
