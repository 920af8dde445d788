"""The local engine's own cost: a JVM per phase or one simulation for all, and the
orchestration overhead of a whole run.

1. The choice. The same short phases (the baseline, the mock backend) run either as one
   Gatling JVM per phase or as one simulation carrying every phase (the engine's design:
   rendez-vous points between phases, docs/engine.md). Overhead = wall time − the time the
   phases themselves lasted (first request start to last request end).
2. A 3-gateway × 3-workload × 3-repetition quick run (nginx, haproxy, caddy; no baseline):
   orchestration overhead = wall time − configured load time, where the configured load time
   is the sum of every phase's configured duration (warm-ups included). Target ≤ 15 % now.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from gatebench.core.plan import build_plan
from gatebench.core.spec import read_spec
from gatebench.core.trust import CEILING_TARGET
from gatebench.core.workload import build_schedule, render_workload
from gatebench.local.backends import start_plan_backend
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.procs import Supervisor
from gatebench.local.runner import RunOptions, run_benchmark
from gatebench.run.ports import EngineEvent, PhaseResult

from ._machine import CpuWindow

TITLE = "Local engine: one JVM per phase vs one simulation, and orchestration overhead"
ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "tests/data/engine/items.yaml"
PHASES = 6
REPEATS = 2


class _Collect:
    def __init__(self) -> None:
        self.phase_s: list[float] = []

    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        self.phase_s.append((result.end_ms - result.start_ms) / 1000.0)

    def tick(self) -> None:
        pass


def _spec_plan(**overrides: Any) -> tuple[Any, Any]:
    result = read_spec(str(SPEC))
    assert result.api is not None
    section = {**result.benchmark, **overrides}
    return result.api, build_plan(section, result.api)


def _choice() -> tuple[list[str], float, float]:
    api, plan = _spec_plan(
        gateways=[],
        warmup=False,
        workloads=[
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"range": [1, 10]}},
                "injection": {"sequential": 200},
            }
        ],
    )
    engine = GatlingEngine()
    per_phase: list[float] = []
    one_sim: list[float] = []
    os.environ.setdefault("ITEMS_TOKEN", "bench")
    with Supervisor() as sup, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        _, base, reset = start_plan_backend(sup, plan, api, work)
        schedule = build_schedule(
            plan, {"baseline": base}, reset_url=reset, seed=1, repetitions=PHASES
        )
        doc = render_workload(plan, api, schedule)
        for r in range(REPEATS):
            hooks = _Collect()
            start = time.monotonic()
            for i, phase in enumerate(doc["phases"]):
                engine.run(dict(doc, phases=[phase]), work / f"a{r}{i}", hooks, supervisor=sup)
            per_phase.append(time.monotonic() - start - sum(hooks.phase_s))
            hooks = _Collect()
            start = time.monotonic()
            engine.run(doc, work / f"b{r}", hooks, supervisor=sup)
            one_sim.append(time.monotonic() - start - sum(hooks.phase_s))
    rows = [
        "| runs | overhead, total (s) | per phase (s) |",
        "|---|---:|---:|",
        f"| one JVM per phase ({PHASES} JVMs) | {statistics.median(per_phase):.1f} | "
        f"{statistics.median(per_phase) / PHASES:.2f} |",
        f"| one simulation carrying the {PHASES} phases | {statistics.median(one_sim):.1f} | "
        f"{statistics.median(one_sim) / PHASES:.2f} |",
    ]
    return rows, statistics.median(per_phase), statistics.median(one_sim)


def _overhead() -> tuple[list[str], float]:
    api, plan = _spec_plan(
        gateways=["nginx", "haproxy", "caddy"],
        baseline=False,
        warmup={"duration": "1s"},
        workloads=[
            {
                "name": "read",
                "operation": "getItem",
                "params": {"id": {"range": [1, 10]}},
                "injection": {"concurrent": 4, "duration": "2s"},
            },
            {
                "name": "write",
                "operation": "createItem",
                "params": {"n": {"counter": {"start": 1}}},
                "body": {"json": {"name": "item-${n}"}},
                "injection": {"concurrent": 4, "duration": "2s"},
            },
            {
                "name": "read-one",
                "operation": "getItem",
                "params": {"id": 1},
                "injection": {"concurrent": 1, "duration": "2s"},
            },
        ],
    )
    os.environ.setdefault("ITEMS_TOKEN", "bench")
    with tempfile.TemporaryDirectory() as tmp, CpuWindow() as cpu:
        start = time.monotonic()
        outcome = run_benchmark(
            api,
            plan,
            spec_uri=str(SPEC),
            spec_sha256="b" * 64,
            options=RunOptions(results_dir=Path(tmp), quick=True, repetitions=3, seed=1),
        )
        wall = time.monotonic() - start
    assert outcome.schedule is not None
    phases = outcome.schedule.phases
    configured = sum(p.injection.duration or 0.0 for p in phases)
    ceiling = sum(1 for p in phases if p.target == CEILING_TARGET)
    measured = sum(1 for p in phases if p.measured and p.target != CEILING_TARGET)
    warmups = len(phases) - ceiling - measured
    overhead = wall - configured
    boots = sum(outcome.record.environment.get("boot_s", {}).values())
    jvm = outcome.engine_runs[0].startup_s if outcome.engine_runs else 0.0
    rows = [
        "| | seconds |",
        "|---|---:|",
        f"| configured load time ({measured} measured phases + {warmups} warm-up phases + {ceiling} "
        f"phases against the ceiling server) | {configured:.1f} |",
        f"| wall time of `run_benchmark` | {wall:.1f} |",
        f"| overhead (wall − configured) | {overhead:.1f} ({100 * overhead / configured:.1f} %) |",
        f"| of which: gateway boots (3) | {boots:.1f} |",
        f"| of which: JVM start to the first phase | {jvm:.1f} |",
        f"| measurements stored | {len(outcome.measurements)} |",
        f"| CPU used by other processes meanwhile | {cpu.others_pct:.0f} % |",
    ]
    return rows, 100 * overhead / configured


def run() -> str:
    choice, per_phase, one_sim = _choice()
    overhead_rows, pct = _overhead()
    verdict = "within" if pct <= 15 else "ABOVE"
    return "\n".join(
        [
            "### One JVM per phase, or one simulation for all\n",
            f"{PHASES} phases of 200 sequential GETs on the baseline (mock backend), median of "
            f"{REPEATS}; overhead = wall time − time inside the phases.\n",
            *choice,
            "",
            f"One simulation saves {per_phase - one_sim:.1f} s over {PHASES} phases "
            f"({(per_phase - one_sim) / PHASES:.1f} s per phase): the engine runs every phase of "
            "a run in one JVM.\n",
            "### Orchestration overhead of a 3 × 3 × 3 quick run\n",
            "`RunOptions(quick=True, repetitions=3)`: nginx, haproxy, caddy; three workloads of "
            "2 s; 1 s warm-up per target and repetition.\n",
            *overhead_rows,
            "",
            f"Overhead {pct:.1f} % of the load time: {verdict} the 15 % target.",
        ]
    )
