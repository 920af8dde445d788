"""What checking every answer costs (docs/trust.md, "Right answers under load").

Each engine runs the same phase against the Go backend (mock mode, 1 kB answers, then echo
mode, whose bodies carry a copy of the signature too; a JSON body sent with every POST) twice
in a row, once with its answers checked (every request names
itself, the backend signs, the engine checks) and once without, and the pair is repeated; the
order within each pair alternates so a drift of the machine falls on both. For each phase the
CPU the engine and the backend used over its window is read from the same samples as a run's
("What a phase cost", docs/engine.md), and divided by the requests: the cost per request, and
its difference between the two is the cost of checking. The load generator runs an open-model
constant rate (the same requests either way), Gatling a closed model (8 users for a few
seconds), so Gatling's throughput shows the cost too.
"""

from __future__ import annotations

import itertools
import json
import statistics
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from gatebench.core.backend import mock_config
from gatebench.core.plan import build_plan
from gatebench.core.spec import read_spec
from gatebench.core.workload import Control, Phase, Schedule, render_workload
from gatebench.local.backends import start_backend_process
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult

TITLE = "The cost of checking every answer"
ROOT = Path(__file__).resolve().parents[1]
PAIRS = 3
RATE, RATE_SECONDS = 1500, 3
USERS, USERS_SECONDS = 8, 3
BACKENDS = ("mock", "echo")
_RUNS = itertools.count()


class _Hooks:
    def __init__(self) -> None:
        self.results: dict[int, PhaseResult] = {}

    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        self.results[result.phase] = result

    def tick(self) -> None:
        pass


@cache
def _description() -> Any:
    """The description the phases load (read once)."""
    result = read_spec(str(ROOT / "tests/data/engine/items.yaml"))
    assert result.api is not None
    return result


def _section(mode: str) -> dict[str, Any]:
    """The description's plan with the backend in ``mode`` (mock: 1 kB answers)."""
    result = _description()
    backend = {"mock": {"response_size": "1kB"}} if mode == "mock" else {"builtin": mode}
    return {**result.benchmark, "backend": backend}


def _document(base: str, engine: str, checked: bool, mode: str) -> dict[str, Any]:
    result = _description()
    section = _section(mode)
    injection: dict[str, Any] = (
        {"constant_rate": {"rate": RATE, "duration": f"{RATE_SECONDS}s"}}
        if engine == "loadgen"
        else {"concurrent": USERS, "duration": f"{USERS_SECONDS}s"}
    )
    section["workloads"] = [
        {
            "name": "write",
            "operation": "createItem",
            "params": {"n": {"counter": {"start": 1}}},
            "body": {"json": {"name": "item-${n}"}},
            "injection": injection,
        }
    ]
    plan = build_plan(section, result.api)
    w = plan.workloads[0]
    reset = Control(f"{base}/__gatebench__/reset")
    warm = Phase(0, "baseline", w.name, 1, False, base, w.injection, (reset,))
    measured = Phase(1, "baseline", w.name, 1, True, base, w.injection, (reset,), checked)
    return render_workload(plan, result.api, Schedule((warm, measured), seed=5))


def _phase(
    engine: str, base: str, checked: bool, mode: str, backend_pid: int, work: Path, sup: Any
) -> dict:
    """One measured phase's figures; run again (at most twice more) when the CPU samples did
    not surround its window (the engine reported it before the sample after its end)."""
    for attempt in range(3):
        # a folder per phase: Gatling reads the newest simulation.log of its folder
        folder = work / f"{engine}-{'checked' if checked else 'unchecked'}-{next(_RUNS)}-{attempt}"
        found = _one_phase(engine, base, checked, mode, backend_pid, folder, sup)
        if found is not None:
            return found
    raise RuntimeError(f"{engine}: three phases without CPU figures")


def _one_phase(
    engine: str, base: str, checked: bool, mode: str, backend_pid: int, work: Path, sup: Any
) -> dict | None:
    hooks = _Hooks()
    runner = GatlingEngine() if engine == "gatling" else LoadgenEngine()
    run = runner.run(
        _document(base, engine, checked, mode),
        work,
        hooks,
        supervisor=sup,
        env={"ITEMS_TOKEN": "bench"},
        cpu_groups={"backend": [backend_pid]},
        target_groups=lambda target: ("backend",),
        name=f"{engine}-{'checked' if checked else 'unchecked'}",
    )
    if run.crashed:
        raise RuntimeError(run.reason)
    result = hooks.results[1]
    requests = result.sample.requests
    cost = result.resources
    if cost is None or cost.engine_cpu_s is None or cost.backend_cpu_s is None:
        return None
    window_s = max(1e-3, (result.end_ms - result.start_ms) / 1000.0)
    if result.cpu is None:
        return None
    return {
        "others": result.cpu.others_pct,
        "requests": requests,
        "wrong": result.sample.wrong,
        "engine_us": 1e6 * cost.engine_cpu_s / requests,
        "backend_us": 1e6 * cost.backend_cpu_s / requests,
        "rate": requests / window_s,
    }


def run() -> str:
    rows = []
    with Supervisor() as sup, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        result = _description()
        for mode in BACKENDS:
            plan = build_plan(_section(mode), result.api)
            args: list[str] = []
            if mode == "mock":
                routes = work / "routes.json"
                routes.write_text(json.dumps(mock_config(result.api, plan.backend)))
                args = ["-config", str(routes)]
            (work / mode).mkdir()
            backend = start_backend_process(sup, mode, work / mode, extra_args=args)
            base = f"http://127.0.0.1:{backend.port}"
            for engine in ("loadgen", "gatling"):
                got: dict[bool, list[dict]] = {True: [], False: []}
                for pair in range(PAIRS):
                    order = (True, False) if pair % 2 == 0 else (False, True)
                    for checked in order:
                        got[checked].append(
                            _phase(engine, base, checked, mode, backend.process.pid, work, sup)
                        )
                if any(r["wrong"] for r in got[True]):
                    raise RuntimeError(f"{engine}: wrong answers straight from the {mode} backend")
                others = statistics.mean(r["others"] for rs in got.values() for r in rs)
                rows.append((engine, mode, got, others))
            sup.stop(backend.process)
    lines = [
        "Straight to the backend (mock mode, 1 kB answers; echo mode, whose JSON answers carry "
        "a copy of the signature when checked), POST with a JSON body: the load "
        f"generator at {RATE:,}/s for {RATE_SECONDS} s, Gatling with {USERS} users for "
        f"{USERS_SECONDS} s; {PAIRS} pairs of phases (checked, not checked; the order "
        "alternating). CPU per request: the medians of the phases' CPU seconds over their "
        "requests; others' CPU: what processes outside the benchmark used during the measured "
        "phases, their mean (% of the machine; the engine's own accounting, docs/engine.md).",
        "",
        "| engine | backend | engine CPU / request, checked | not checked | backend CPU / "
        "request, checked | not checked | req/s checked | not checked | others' CPU |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def med(rs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rs)

    for engine, mode, got, others in rows:
        on, off = got[True], got[False]
        lines.append(
            f"| {engine} | {mode} | {med(on, 'engine_us'):.1f} µs | {med(off, 'engine_us'):.1f} µs | "
            f"{med(on, 'backend_us'):.1f} µs | {med(off, 'backend_us'):.1f} µs | "
            f"{med(on, 'rate'):,.0f} | {med(off, 'rate'):,.0f} | {others:.0f} % |"
        )
    lines += [
        "",
        "Every checked phase had zero wrong answers. The difference of the medians is the "
        "cost of checking on this machine; CPU seconds are read from /proc every 0.2 s and "
        "interpolated to the phase's window, so a phase of a few seconds carries an error of "
        "a few per cent of its CPU time.",
    ]
    return "\n".join(lines)
