"""Pinned cores against unpinned: how much the auction example's results move from run to run.

On a 2-core machine the load engine, the backend and the gateway compete for the CPU; the
plan's ``cpus:`` setting (gatebench.core.pinning) puts the gateway on a core of its own. Three
pinned and three unpinned runs, interleaved (pinned, unpinned, pinned, ...) so that both see
the same moments of the machine, each the product's own `gatebench run` path on
examples/auction/openapi.yaml with a subset of its gateways and fewer repetitions to fit
`make bench`. Per target × workload cell: the coefficient of variation of the three
run-level means of throughput and p50; the median over the cells per workload and overall.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from gatebench.core.aggregate import RunSummary
from gatebench.core.plan import Cpus, load_plan
from gatebench.core.report import build_report
from gatebench.core.spec import read_spec
from gatebench.core.trust import reproducibility
from gatebench.local.runner import RunOptions, run_benchmark

from ._machine import CpuWindow

TITLE = "Pinned cores: run-to-run variation of the auction example, pinned vs unpinned"
ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples/auction/openapi.yaml"
RUNS = 3
REPETITIONS = 3
GATEWAYS = ("nginx", "haproxy", "caddy")
MODES = ("pinned", "unpinned")
METRICS = ("throughput", "p50")


def _one_run(mode: str, seed: int, tmp: Path) -> tuple[RunSummary, float, float, str]:
    os.environ.setdefault("AUCTION_TOKEN", "bench")
    result = read_spec(str(SPEC))
    assert result.api is not None
    plan = replace(load_plan(result), gateways=GATEWAYS, cpus=Cpus(mode=mode))  # type: ignore[arg-type]
    with CpuWindow() as cpu:
        start = time.monotonic()
        outcome = run_benchmark(
            result.api,
            plan,
            spec_uri=str(SPEC),
            spec_sha256="e" * 64,
            options=RunOptions(results_dir=tmp, repetitions=REPETITIONS, seed=seed),
        )
        wall = time.monotonic() - start
    report = build_report(outcome.record, outcome.measurements)
    return report.summary, cpu.others_pct, wall, str(outcome.record.environment.get("cpus"))


def _cv_table(by_mode: dict[str, list[RunSummary]]) -> tuple[list[str], dict[str, float]]:
    reps = {mode: reproducibility(s) for mode, s in by_mode.items()}
    workloads = list(by_mode[MODES[0]][0].workloads)
    rows = []
    overall: dict[str, float] = {}
    for metric in METRICS:
        for workload in [*workloads, None]:
            medians = []
            for mode in MODES:
                cvs = [
                    cv
                    for v in reps[mode].variations
                    if v.metric == metric
                    and (workload is None or v.workload == workload)
                    and (cv := v.cv_pct) is not None
                ]
                cvs = [cv for cv in cvs if math.isfinite(cv)]
                medians.append(statistics.median(cvs) if cvs else float("nan"))
            pinned, unpinned = medians
            ratio = pinned / unpinned if unpinned else float("nan")
            label = workload or "**all cells**"
            rows.append(f"| {metric} | {label} | {pinned:.1f} % | {unpinned:.1f} % | {ratio:.2f} |")
            if workload is None:
                overall[metric] = ratio
    return rows, overall


def _pct(value: float) -> str:
    # a CV of means that are 0 (sub-millisecond p50 at Gatling's resolution) is undefined
    return "–" if math.isnan(value) else f"{value:.1f} %"


def _ratio(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.2f}"


def run() -> str:
    by_mode: dict[str, list[RunSummary]] = {m: [] for m in MODES}
    run_rows = []
    for i in range(1, RUNS + 1):
        order = MODES if i % 2 else tuple(reversed(MODES))
        for mode in order:
            with tempfile.TemporaryDirectory() as tmp:
                summary, others, wall, layout = _one_run(mode, 200 + i, Path(tmp))
            by_mode[mode].append(summary)
            ranking = ", ".join(f"{g.target} {g.score:.0f}" for g in summary.scores.gateways)
            run_rows.append(
                f"| {i} | {mode} | {layout} | {ranking} | {others:.0f} % | {wall:.0f} s |"
            )
            print(run_rows[-1], flush=True)
    rows, overall = _cv_table(by_mode)
    verdict = ", ".join(
        f"{metric}: pinned/unpinned median CV {ratio:.2f}" for metric, ratio in overall.items()
    )
    met = all(r <= 0.5 for r in overall.values())
    return "\n".join(
        [
            f"`run_benchmark` on examples/auction/openapi.yaml with gateways "
            f"{', '.join(GATEWAYS)} and the baseline, {REPETITIONS} repetitions per run (the "
            f"plan's 10 and six gateways reduced to fit), {RUNS} runs pinned (`cpus: pinned`) "
            f"and {RUNS} unpinned (`cpus: unpinned`), interleaved, each with its own seed.",
            "",
            "### Runs",
            "",
            "| run | cpus | layout | ranking (global score) | others' CPU | wall time |",
            "|---:|---|---|---|---:|---:|",
            *run_rows,
            "",
            "### Coefficient of variation across runs",
            "",
            f"Median over target × workload cells of the CV of the {RUNS} run-level means; "
            "ratio = pinned / unpinned (the target is 0.50 or less).",
            "",
            "| metric | workload | pinned CV | unpinned CV | ratio |",
            "|---|---|---:|---:|---:|",
            *rows,
            "",
            f"{verdict}: the target (pinned CV at most half the unpinned CV) is "
            f"{'met' if met else 'not met'} in this session. Others' CPU is the share of the "
            "machine used by processes outside the benchmark while each run measured.",
        ]
    )
