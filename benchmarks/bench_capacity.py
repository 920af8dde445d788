"""Capacity ground truth: the capacity search against backends of known capacity, at rates
above the test's 400 req/s, up to 40,000 req/s.

The mock backend with W workers each holding a response for exactly S ms serves W / S requests
per second and no more (``backend: {mock: {latency: S, workers: W}}``). For each such backend
the search (the real load generator, no gateway, the plan's defaults but the objective) runs
three times, as the repetitions of a capacity run do, with the engine's ceiling measured first
as a run measures it: the first cold (from the plan's start rate, or a 16th of the tester's
cap when higher), the others next to the knees found before (``start_rate_for``); each row
gives the probes it used, the time it took and its error against W / S. Target: within 5 %
in at most 10 probes.

The objective bounds the median (p50 ≤ S + 15 ms), as the ground-truth test's does
(tests/integration/test_capacity_ground_truth.py says why: other work on a shared 2-core
machine moves the tail, not the median, while an overload moves both). A search that misses
while other processes used more than 20 % of the machine during its probes is run once more
after a pause; the table gives the attempts and what the rest of the machine used.

W / S is the capacity of an ideal server. The backend's own timeline (``GET
/__gatebench__/requests``: when each worker took up each request and let it go) gives what this
one carried on this machine: a worker that had a request waiting when it let the previous one go
took the next one up after a handoff, so its saturated cycle is the fixed hold, how late the
hold ended and the handoff; W over the mean of those cycles is the most it could serve
(``tests/groundtruth.worker_capacity``, as tests/integration/test_capacity_ground_truth.py
judges the search). The search is judged against both.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gatebench.core.pinning import capacity_layout
from gatebench.core.plan import Cpus, build_plan
from gatebench.core.spec import read_spec
from gatebench.kinds.capacity import (
    ProbeRequest,
    TesterLimits,
    late_threshold_ms,
    search,
    start_rate_for,
)
from gatebench.local.backends import backend_requests, start_plan_backend
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.probing import Prober, measure_ceiling
from gatebench.local.procs import Supervisor

from ._machine import CpuWindow

TITLE = "Capacity ground truth: the search against backends of known capacity"
ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "tests/data/engine/items.yaml"
BACKENDS = ((4, 10.0), (10, 10.0), (20, 10.0), (50, 10.0), (40, 4.0), (80, 4.0), (160, 4.0))
"""(workers, service ms): 400, 1,000, 2,000, 5,000, 10,000, 20,000 and 40,000 req/s."""
REPETITIONS = 3
OBJECTIVE_MARGIN_MS = 15.0
"""The objective: p50 ≤ the service time + this."""
ATTEMPTS = 2
PAUSE_S = 10.0
NOISY_PCT = 20.0
CAPACITY: dict[str, Any] = {
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
        "capacity": {**CAPACITY, "objective": {"p50": f"{service_ms + OBJECTIVE_MARGIN_MS:g}ms"}},
    }
    return result.api, build_plan(section, result.api)


LAYOUT = capacity_layout(Cpus(), sorted(os.sched_getaffinity(0)))
"""The cores as a capacity run splits them."""
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


MIN_CYCLES = 50
"""Saturated cycles the backend's own capacity needs (fewer: not measured)."""


def _own_capacity(port: int, workers: int) -> float | None:
    """What the backend carried at most, from its own timeline of the search's last requests
    (the record keeps 16,384): ``groundtruth.worker_capacity``, the rule the ground-truth test
    holds the search to (workers over each worker's mean cycle from one hold to the next while
    a request waited for it)."""
    sys.path.insert(0, str(ROOT / "tests"))  # the rule is a test helper
    from groundtruth import worker_capacity

    served = [r for r in backend_requests(port).requests if not r.control]
    delivered = worker_capacity(served, workers)
    return delivered.rate if delivered.cycles >= MIN_CYCLES else None


def _ceiling() -> float | None:
    """The engine's ceiling here, measured as a capacity run measures it before its searches
    (against the ceiling server, with the workload's own requests): the searches then know
    the tester's cap, as in a run (a cold one starts a 16th of it up, when that is above the
    plan's start rate)."""
    api, plan = _plan(*BACKENDS[0])
    settings = plan.capacity_settings()["read"]
    with tempfile.TemporaryDirectory() as tmp, Supervisor() as sup:
        sup.pin(LAYOUT.cores)
        ceiling, _ = measure_ceiling(plan, api, "read", settings, sup, Path(tmp))
    return ceiling


def _search_once(
    workers: int, service_ms: float, start: float, cold: bool, limits: TesterLimits
) -> tuple[Any, float, float, float, float | None]:
    """One search: (its result, its wall time, the most CPU other processes used during a
    probe (% of the machine), what they used over the whole search, the backend's own
    capacity)."""
    api, plan = _plan(workers, service_ms)
    settings = plan.capacity_settings()["read"]
    with tempfile.TemporaryDirectory() as tmp, CpuWindow() as cpu, Supervisor() as sup:
        sup.pin(LAYOUT.cores)
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
        result = search(settings, prober, start_rate=start, cold=cold, limits=limits)
        wall = time.monotonic() - started
        own = _own_capacity(int(base_url.rsplit(":", 1)[1].split("/")[0]), workers)
    noisy = max((p.metrics.others_cpu_pct or 0.0 for p in result.probes), default=0.0)
    return result, wall, noisy, cpu.others_pct, own


def run() -> str:
    os.environ.setdefault("ITEMS_TOKEN", "bench")
    rows = []
    first: list[bool] = []
    later: list[bool] = []
    own_first: list[bool] = []
    own_later: list[bool] = []
    ceiling = _ceiling()
    limits = TesterLimits(ceiling=ceiling)
    for workers, service_ms in BACKENDS:
        truth = workers / service_ms * 1000.0
        settings = _plan(workers, service_ms)[1].capacity_settings()["read"]
        knees: list[float] = []
        for rep in range(1, REPETITIONS + 1):
            start = start_rate_for(settings, rep, knees)
            for attempt in range(1, ATTEMPTS + 1):
                result, wall, noisy, others, own = _search_once(
                    workers, service_ms, start, not knees, limits
                )
                knee = result.knee
                error = None if knee is None else 100.0 * (knee - truth) / truth
                own_error = None if knee is None or own is None else 100.0 * (knee - own) / own
                ok = result.status == "found" and error is not None and abs(error) <= 5.0
                if ok or noisy <= NOISY_PCT or attempt == ATTEMPTS:
                    break
                time.sleep(PAUSE_S)
            if knee is not None and result.status == "found":
                knees.append(knee)
            probes = len(result.probes)
            first_rate = result.probes[0].request.rate if result.probes else start
            lag = max((p.metrics.lag_p99_ms for p in result.probes), default=0.0)
            engine_cpu = max((p.metrics.engine_cpu_pct for p in result.probes), default=0.0)
            (first if rep == 1 else later).append(ok and probes <= 10)
            (own_first if rep == 1 else own_later).append(
                result.status == "found"
                and own_error is not None
                and abs(own_error) <= 5.0
                and probes <= 10
            )
            rows.append(
                f"| {workers} × {service_ms:g} ms | {truth:,.0f} | "
                f"{'–' if own is None else f'{own:,.0f}'} | {rep} | "
                f"{first_rate:,.0f} | {result.status} | "
                f"{'–' if knee is None else f'{knee:,.0f}'} | "
                f"{'–' if error is None else f'{error:+.1f} %'} | "
                f"{'–' if own_error is None else f'{own_error:+.1f} %'} | {probes} | {wall:.0f} s | "
                f"{attempt} | {lag:.1f} ms | {engine_cpu:.0f} % | {others:.0f} % "
                f"(≤ {noisy:.0f} %) |"
            )
    return "\n".join(
        [
            "Objective p50 ≤ service time + 15 ms, errors ≤ 0.1 % (the median: see the module "
            "docstring); repetition 1 (cold) starts at "
            f"{CAPACITY['start_rate']} or, when higher, a 16th of the tester's cap "
            f"({limits.ceiling_share:.0%} of the engine's ceiling, measured first against the "
            "ceiling server as a capacity run measures it: "
            f"{'not measured' if ceiling is None else f'{ceiling:,.0f} req/s'}), "
            "repetition k at half the median knee found before, "
            "times 2^frac((k−1) × 0.618) (as a capacity run's repetitions do), growth 2, precision "
            f"5 %, probes of {CAPACITY['warmup']} warm-up + {CAPACITY['probe']}, confirmation "
            f"{CAPACITY['confirm']}; keep-alive connections; no gateway; cores {LAYOUT.describe()}. "
            "A search with no knee to start from is cold: it grows by 4 and reads what an "
            'overloaded probe served (docs/capacity.md, "The step controller"). The knee is the highest '
            "rate that held; the error is against workers / service time (W / S), and against "
            "the backend's own capacity: workers over the mean saturated cycle its own timeline "
            "shows (the hold, how late it ended, the handoff to the next request; the module "
            "docstring). The probes include the "
            "confirmation. Attempts: a search that missed while other processes used more than "
            f"{NOISY_PCT:g} % of the machine during a probe ran once more after {PAUSE_S:g} s. Lag "
            "is the worst probe's p99 schedule lag, engine CPU the busiest probe's share of the "
            "engine's cores, others the CPU the rest of the machine used over the search (and "
            "during its busiest probe).",
            "",
            "| backend | W / S (req/s) | its own (req/s) | rep | start (req/s) | status | "
            "knee (req/s) | error vs W / S | vs its own | probes | time | attempts | lag p99 | "
            "engine CPU | others |",
            "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *rows,
            "",
            f"Within 5 % of W / S in at most 10 probes: repetitions 2 and 3 (which start next to "
            f"the knees found before) {sum(later)} of {len(later)}; repetition 1 (cold) "
            f"{sum(first)} of {len(first)}. Within 5 % of the "
            f"backend's own capacity: {sum(own_later)} of {len(own_later)} and "
            f"{sum(own_first)} of {len(own_first)}.",
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
