"""Two engines on the same targets: the product's run with Gatling, cross-checked by wrk
(`gatebench run --cross-check wrk`), for the same closed-model concurrency.

Two backends: one that holds every response 20 ms (a ground truth: both engines should see
~20 ms and users / 20 ms requests per second), and one that answers at once (the fastest
case, where Gatling sharing 2 cores with the gateway is expected to fall behind wrk). The
report's trust section is what a user sees; this section prints its agreement table.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from gatebench.core.report import build_report
from gatebench.core.report._trust import agreement_rows
from gatebench.local.runner import RunOptions, run_benchmark

from ._machine import CpuWindow
from .bench_ground_truth import GATEWAYS, SPEC, items_plan, read_workload

TITLE = "Second engine: Gatling and wrk on the same targets"
REPETITIONS = 3
USERS = 10
SECONDS = 3
BACKENDS = (("20 ms backend (ground truth)", "20ms"), ("backend answering at once", "0ms"))


def _case(latency: str, tmp: Path) -> tuple[list[list[str]], str, float, float, dict[str, int]]:
    os.environ.setdefault("ITEMS_TOKEN", "bench")
    api, plan = items_plan(
        gateways=GATEWAYS,
        baseline=True,
        repetitions=REPETITIONS,
        warmup={"duration": "2s"},
        backend={"mock": {"latency": latency}},
        workloads=[read_workload(USERS, SECONDS)],
    )
    with CpuWindow() as cpu:
        start = time.monotonic()
        outcome = run_benchmark(
            api,
            plan,
            spec_uri=str(SPEC),
            spec_sha256="d" * 64,
            options=RunOptions(results_dir=tmp, seed=7, cross_check="wrk"),
        )
        wall = time.monotonic() - start
    report = build_report(outcome.record, outcome.measurements)
    flags: dict[str, int] = {}
    for m in outcome.measurements:
        for f in m.flags:
            flags[f] = flags.get(f, 0) + 1
    return agreement_rows(report), report.trust.summary, cpu.others_pct, wall, flags


def run() -> str:
    lines = [
        f"`gatebench run --cross-check wrk`: the baseline and {', '.join(GATEWAYS)}, "
        f"{USERS} concurrent users for {SECONDS} s after a 2 s warm-up, {REPETITIONS} "
        "repetitions with Gatling, then the same phases with wrk (3 repetitions), before "
        "teardown. Means over each engine's repetitions. Agreement: the smaller value is at "
        "least 90 % of the larger; a p50 also agrees within Gatling's 1 ms resolution.",
        "",
    ]
    for label, latency in BACKENDS:
        with tempfile.TemporaryDirectory() as tmp:
            rows, summary, others, wall, flags = _case(latency, Path(tmp))
        lines += [
            f"### {label}",
            "",
            summary,
            "",
            "| target | gatling req/s | wrk req/s | gap | gatling p50 (ms) | wrk p50 (ms) | gap | agree |",
            "|---|---:|---:|---:|---:|---:|---:|---|",
        ]
        for row in rows:
            target, _workload, *rest = row
            lines.append("| " + " | ".join([target, *rest]) + " |")
        flagged = ", ".join(f"{k} ×{v}" for k, v in sorted(flags.items())) or "none"
        lines += [
            "",
            f"Gatling's measurements flagged: {flagged} (of {REPETITIONS * (len(GATEWAYS) + 1)}). "
            f"CPU used by other processes during the whole run: {others:.0f} % of the machine; "
            f"wall time {wall:.0f} s.",
            "",
        ]
    return "\n".join(lines)
