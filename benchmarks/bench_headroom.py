"""Headroom: how fast each engine can drive the fastest target on this machine (nginx serving a
small static file, one worker: gatebench.local.ceiling), in the same run, and the ratio.

Each round runs the same workload document (a warm-up, then closed-model phases with 1 and 50
users) through the Gatling engine (one JVM) and the wrk engine (our Lua script), and then
plain `wrk` without a script (the tool's own maximum); rounds alternate which engine goes
first. A gateway measured by an engine can never be shown faster than that engine's ceiling,
and `gatebench run` flags a gateway within 20 % of it as tester-bound (docs/trust.md).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from gatebench.core.stats import phase_stats
from gatebench.core.workload import build_schedule, render_workload
from gatebench.local.ceiling import SERVER_LABEL, start_ceiling_server
from gatebench.local.engines.cpu import CpuSampler
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.engines.wrk import WrkEngine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult

from ._machine import CpuWindow
from .bench_ground_truth import items_plan, read_workload

TITLE = "Headroom: each engine's ceiling against nginx serving a static file"
ROUNDS = 3
SECONDS = 5
USER_COUNTS = (1, 50)


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


def _plain_wrk(url: str, users: int) -> float:
    threads = 2 if users % 2 == 0 else 1
    out = subprocess.run(
        ["wrk", f"-t{threads}", f"-c{users}", f"-d{SECONDS}s", url + "/static"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    match = re.search(r"Requests/sec:\s+([\d.]+)", out.stdout)
    if match is None:
        raise RuntimeError(f"wrk printed no rate:\n{out.stdout}{out.stderr}")
    return float(match.group(1))


def run() -> str:
    os.environ.setdefault("ITEMS_TOKEN", "bench")
    rows = []
    ratios: dict[int, list[float]] = {u: [] for u in USER_COUNTS}
    gatling, wrk = GatlingEngine(), WrkEngine()
    with Supervisor() as sup, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        proc, url = start_ceiling_server(sup, work / "nginx")
        doc, users = _document(url)
        for r in range(1, ROUNDS + 1):
            order: list[Any] = [gatling, wrk] if r % 2 else [wrk, gatling]
            figures: dict[str, dict[int, tuple[float, float | None]]] = {}
            others: dict[str, float] = {}
            for engine in order:
                with CpuWindow() as cpu, _Share(proc.pid) as server:
                    figures[engine.name] = _engine_round(engine, doc, users, sup, proc.pid, work)
                others[engine.name] = max(0.0, cpu.others_pct - server.pct)
            with CpuWindow() as cpu, _Share(proc.pid) as server:
                plain = {u: _plain_wrk(url, u) for u in USER_COUNTS}
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
    summary = "; ".join(
        f"{u} user{'s' if u > 1 else ''}: Gatling reaches {statistics.median(ratios[u]):.2f}× "
        f"wrk's ceiling (median of {ROUNDS} rounds, range {min(ratios[u]):.2f}–"
        f"{max(ratios[u]):.2f})"
        for u in USER_COUNTS
    )
    return "\n".join(
        [
            f"Target: {SERVER_LABEL} (gatebench.local.ceiling). Each round: the same workload "
            f"document (4 s warm-up at 50 users, then {SECONDS} s at 1 and at 50 concurrent "
            "users) through the Gatling engine (a fresh JVM; its JIT warms during the warm-up) "
            "and the wrk engine, then plain `wrk` (no script) for comparison; the order of the "
            "two engines alternates. Tester CPU: the load generator's share of the machine "
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
