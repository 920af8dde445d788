"""Headroom: how fast each engine can drive the fastest target on this machine (nginx serving a
small static file, one worker: gatebench.local.ceiling), in the same run, and the ratios.

Each round runs the same workload document (a warm-up, then closed-model phases with 1 and 50
users) through the Gatling engine (one JVM) and the wrk engine (our Lua script), then plain
`wrk` without a script (the tool's own maximum; with 2 threads on both cores, and with 1 thread
on one core), then the open-model engine (gatebench-loadgen) on one core: the highest constant
arrival rate it offers with a schedule lag p99 of at most 1 ms, no arrival dropped, no error
and 98 % of the rate carried (found by the capacity search's own step controller, each probe a
1 s warm-up and 3 s measured). Rounds alternate which engine goes first. nginx runs on the last
core for every engine, loadgen on the first. A gateway measured by an engine can never be
shown faster than that engine's ceiling, and `gatebench run` flags a gateway within 20 % of it
as tester-bound (docs/trust.md).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatebench.core.plan import Capacity
from gatebench.core.stats import phase_stats
from gatebench.core.workload import build_schedule, render_workload
from gatebench.kinds.capacity import StepController
from gatebench.local.ceiling import SERVER_LABEL, start_ceiling_server
from gatebench.local.engines.cpu import CpuSampler
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.engines.wrk import WrkEngine
from gatebench.local.probing import Prober
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult

from ._machine import CpuWindow
from .bench_ground_truth import items_plan, read_workload

TITLE = "Headroom: each engine's ceiling against nginx serving a static file"
ROUNDS = 3
SECONDS = 5
USER_COUNTS = (1, 50)
LAG_P99_MS = 1.0
"""loadgen's ceiling: the highest rate it keeps with this schedule lag p99 (and nothing
dropped, no error, 98 % of the rate carried)."""
CARRIED = 0.98


class _Collect:
    def __init__(self) -> None:
        self.results: dict[int, PhaseResult] = {}

    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        self.results[result.phase] = result

    def tick(self) -> None:
        pass


def _document(url: str) -> tuple[dict[str, Any], dict[int, int]]:
    """Phases: a 4 s warm-up at 50 users, then one measured phase per user count."""
    workloads = [dict(read_workload(u, SECONDS), name=f"u{u}") for u in USER_COUNTS]
    api, plan = items_plan(
        gateways=[],
        baseline=True,
        repetitions=1,
        warmup={"duration": "4s"},
        backend={"url": url},
        workloads=workloads,
    )
    schedule = build_schedule(plan, {"baseline": url}, seed=1)
    doc = render_workload(plan, api, schedule)
    users = {p.index: p.injection.users or 0 for p in schedule.phases if p.measured}
    return doc, users


def _engine_round(
    engine: Any, doc: dict[str, Any], users: dict[int, int], sup: Supervisor, pid: int, work: Path
) -> dict[int, tuple[float, float | None]]:
    """users → (req/s, tester CPU %) of one engine over the document."""
    hooks = _Collect()
    engine.run(
        doc,
        work,
        hooks,
        supervisor=sup,
        cpu_groups={"server": [pid]},
        target_groups=lambda target: ["server"],
        name=f"{engine.name}-{len(list(work.iterdir()))}",
    )
    out = {}
    for index, n in users.items():
        result = hooks.results[index]
        cpu = result.cpu.tester_pct if result.cpu else None
        out[n] = (phase_stats(result.sample).throughput, cpu)
    return out


def _plain_wrk(url: str, users: int, cores: str | None = None) -> float:
    """Plain wrk's rate: with as many threads as the users divide into (at most 2), or pinned to
    ``cores`` with one thread."""
    threads = 1 if cores is not None or users % 2 else 2
    pin = ["taskset", "-c", cores] if cores is not None else []
    out = subprocess.run(
        [*pin, "wrk", f"-t{threads}", f"-c{users}", f"-d{SECONDS}s", url + "/static"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    match = re.search(r"Requests/sec:\s+([\d.]+)", out.stdout)
    if match is None:
        raise RuntimeError(f"wrk printed no rate:\n{out.stdout}{out.stderr}")
    return float(match.group(1))


@dataclass(frozen=True)
class OpenCeiling:
    """loadgen's ceiling in one round, and the probe that set it."""

    rate: float
    lag_p99_ms: float
    engine_cpu_pct: float
    broke_at: float | None
    why: str
    probes: int


def _loadgen_ceiling(sup: Supervisor, url: str, work: Path, start: float) -> OpenCeiling:
    """The highest rate loadgen keeps on one core (the module docstring's rule), searched by
    the capacity search's step controller from ``start``."""
    read = {
        "name": "read",
        "operation": "getItem",
        "params": {"id": {"range": [1, 10]}},
        "injection": {"constant_rate": {"rate": 100, "duration": "1s"}},
        # past nginx's own capacity its queue times requests out: a probe there ends 2 s after
        # its schedule, not a minute
        "timeout": "2s",
    }
    api, plan = items_plan(gateways=[], baseline=True, backend={"url": url}, workloads=[read])
    prober = Prober(
        plan, api, "read", "baseline", url, sup, work, 5.0, engine=LoadgenEngine(), seed=3
    )
    settings = Capacity(start_rate=start, max_rate=1e6, precision=0.05, warmup=1.0, probe=3.0)
    controller = StepController(settings, start, cold=False)
    best: tuple[float, float, float] = (0.0, 0.0, 0.0)
    broke: tuple[float, str] | None = None
    while (request := controller.next_probe()) is not None:
        m = prober(request)
        missed = []
        if m.lag_p99_ms > LAG_P99_MS:
            missed.append(f"lag p99 {m.lag_p99_ms:.2f} ms")
        if m.dropped:
            missed.append(f"{m.dropped:,} dropped")
        if m.ko:
            missed.append(f"{m.ko:,} KO")
        if m.achieved_rate < CARRIED * request.rate:
            missed.append(f"{m.achieved_rate:,.0f}/s carried")
        if missed:
            if broke is None or request.rate < broke[0]:
                broke = (request.rate, ", ".join(missed))
        elif request.rate > best[0]:
            best = (request.rate, m.lag_p99_ms, m.engine_cpu_pct)
        controller.update("breached" if missed else "within", achieved=m.served_rate)
    return OpenCeiling(
        best[0],
        best[1],
        best[2],
        None if broke is None else broke[0],
        "" if broke is None else broke[1],
        prober.probes,
    )


def run() -> str:
    os.environ.setdefault("ITEMS_TOKEN", "bench")
    rows = []
    open_rows = []
    ratios: dict[int, list[float]] = {u: [] for u in USER_COUNTS}
    open_ratios: dict[str, list[float]] = {"plain": [], "one core": []}
    gatling, wrk = GatlingEngine(), WrkEngine()
    cores = sorted(os.sched_getaffinity(0))
    first, last = str(cores[0]), cores[-1]
    with Supervisor() as sup, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sup.pin({"gateway": (last,)})
        proc, url = start_ceiling_server(sup, work / "nginx")
        doc, users = _document(url)
        start = 10_000.0
        for r in range(1, ROUNDS + 1):
            order: list[Any] = [gatling, wrk, "loadgen"] if r % 2 else ["loadgen", wrk, gatling]
            figures: dict[str, dict[int, tuple[float, float | None]]] = {}
            others: dict[str, float] = {}
            ceiling = None
            for engine in order:
                with CpuWindow() as cpu, _Share(proc.pid) as server:
                    if engine == "loadgen":
                        sup.pin({"gateway": (last,), "engine": (cores[0],)})
                        ceiling = _loadgen_ceiling(sup, url, work / f"loadgen-{r}", start)
                        sup.pin({"gateway": (last,)})
                    else:
                        figures[engine.name] = _engine_round(
                            engine, doc, users, sup, proc.pid, work
                        )
                others["loadgen" if engine == "loadgen" else engine.name] = max(
                    0.0, cpu.others_pct - server.pct
                )
            assert ceiling is not None
            start = ceiling.rate or start
            with CpuWindow() as cpu, _Share(proc.pid) as server:
                plain = {u: _plain_wrk(url, u) for u in USER_COUNTS}
                one_core = _plain_wrk(url, max(USER_COUNTS), first)
            others["plain"] = max(0.0, cpu.others_pct - server.pct)
            for u in USER_COUNTS:
                g_rate, g_cpu = figures["gatling"][u]
                w_rate, w_cpu = figures["wrk"][u]
                ratios[u].append(g_rate / w_rate if w_rate else 0.0)
                rows.append(
                    f"| {r} | {u} | {g_rate:,.0f} | {w_rate:,.0f} | {plain[u]:,.0f} | "
                    f"{g_rate / w_rate:.2f} | {_pct(g_cpu)} | {_pct(w_cpu)} | "
                    f"{others['gatling']:.0f} % / {others['wrk']:.0f} % / {others['plain']:.0f} % |"
                )
            top = plain[max(USER_COUNTS)]
            open_ratios["plain"].append(ceiling.rate / top)
            open_ratios["one core"].append(ceiling.rate / one_core)
            broke = "–" if ceiling.broke_at is None else f"{ceiling.broke_at:,.0f}/s: {ceiling.why}"
            open_rows.append(
                f"| {r} | {ceiling.rate:,.0f} | {ceiling.lag_p99_ms:.2f} ms | "
                f"{ceiling.engine_cpu_pct:.0f} % | {broke} | {ceiling.probes} | {top:,.0f} | "
                f"{one_core:,.0f} | {ceiling.rate / top:.2f} | {ceiling.rate / one_core:.2f} | "
                f"{others['loadgen']:.0f} % |"
            )
    summary = "; ".join(
        f"{u} user{'s' if u > 1 else ''}: Gatling reaches {statistics.median(ratios[u]):.2f}× "
        f"wrk's ceiling (median of {ROUNDS} rounds, range {min(ratios[u]):.2f}–"
        f"{max(ratios[u]):.2f})"
        for u in USER_COUNTS
    )
    plain_ratio, core_ratio = open_ratios["plain"], open_ratios["one core"]
    return "\n".join(
        [
            f"Target: {SERVER_LABEL} (gatebench.local.ceiling), on cpu {last}. Each round: the "
            f"same workload document (4 s warm-up at 50 users, then {SECONDS} s at 1 and at 50 "
            "concurrent users) through the Gatling engine (a fresh JVM; its JIT warms during the "
            "warm-up) and the wrk engine, then plain `wrk` (no script) for comparison; the order "
            "of the engines alternates. Tester CPU: the load generator's share of the machine "
            "during the phase (2 cores = 100 %).",
            "",
            "| round | users | Gatling engine req/s | wrk engine req/s | plain wrk req/s | "
            "Gatling / wrk engine | Gatling tester CPU | wrk tester CPU | others' CPU "
            "(Gatling / wrk / plain wrk runs) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
            *rows,
            "",
            f"Ratio: {summary}. A gateway that Gatling measures near its own ceiling is "
            "measuring Gatling: `gatebench run` measures this ceiling at the start of every "
            "run, with the run's own workloads, and flags a measurement within 20 % of it as "
            "tester-bound (its throughput is then not scored).",
            "",
            "### The open-model engine (gatebench-loadgen) on one core",
            "",
            f"In the same rounds, against the same nginx: the highest constant arrival rate "
            f"loadgen offers on cpu {first} (a core of its own, so at the real-time priority: "
            f"loadgen/sys.go) with a schedule lag p99 ≤ {LAG_P99_MS:g} ms, no "
            f"arrival dropped, no error and {CARRIED:.0%} of the rate carried (each probe 1 s of "
            "warm-up and 3 s measured; latency timed from each arrival's intended start), beside "
            f"plain wrk's closed loop at {max(USER_COUNTS)} kept-alive connections: with 2 "
            f"threads on both cores (the table above), and with 1 thread on cpu {first} alone. "
            "Engine CPU: loadgen's share of its one core in the probe that set the ceiling.",
            "",
            "| round | loadgen req/s | its lag p99 | its engine CPU | the lowest rate that missed |"
            " probes | plain wrk (2 threads) | plain wrk (1 thread, one core) | loadgen / plain "
            "wrk | loadgen / plain wrk on one core | others' CPU |",
            "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
            *open_rows,
            "",
            f"Ratio: loadgen on one core reaches {statistics.median(plain_ratio):.2f}× plain "
            f"wrk's closed loop (median of {ROUNDS} rounds, range {min(plain_ratio):.2f}–"
            f"{max(plain_ratio):.2f}), {statistics.median(core_ratio):.2f}× plain wrk given the "
            f"same one core (range {min(core_ratio):.2f}–{max(core_ratio):.2f}).",
        ]
    )


class _Share:
    """The CPU share of the machine one of our long-lived process groups (the nginx server,
    which outlives each window and so would count as another process's) used over a window."""

    def __init__(self, pgid: int) -> None:
        self.sampler = CpuSampler()
        self.sampler.set_groups({"server": [pgid]})
        self.pct = 0.0

    def __enter__(self) -> _Share:
        self.sampler.sample()
        return self

    def __exit__(self, *exc: object) -> None:
        last = self.sampler.sample()
        first = self.sampler.samples[0]
        usage = self.sampler.usage(first.wall_ms, last.wall_ms, "none", ["server"])
        self.pct = usage.target_pct if usage is not None else 0.0


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f} %"
