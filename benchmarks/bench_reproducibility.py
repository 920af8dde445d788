"""Reproducibility: the auction example (examples/auction, the AGE paper's case) run three times
through its five gateways and the baseline, and how much the results move between runs.

Each run is the product's own `gatebench run` path (engine ceiling first, shuffled order,
warm-up, backend reset before every measured phase) with 3 repetitions instead of the plan's
10, to keep `make bench` within minutes. Per target, workload and metric: the coefficient of
variation (sample std dev / mean) of the three run-level means; per run: the ranking by global
score.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from gatebench.core.aggregate import RunSummary
from gatebench.core.metrics import UNITS
from gatebench.core.plan import load_plan
from gatebench.core.report import build_report
from gatebench.core.spec import read_spec
from gatebench.core.trust import reproducibility
from gatebench.local.runner import RunOptions, run_benchmark

from ._machine import CpuWindow

TITLE = "Reproducibility: the auction example, three runs"
ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "examples/auction/openapi.yaml"
RUNS = 3
REPETITIONS = 3


def _one_run(
    seed: int, tmp: Path
) -> tuple[RunSummary, float, float, dict[str, int], dict[str, tuple[str, ...]]]:
    os.environ.setdefault("AUCTION_TOKEN", "bench")
    result = read_spec(str(SPEC))
    assert result.api is not None
    plan = load_plan(result)
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
    flags: dict[str, int] = {}
    for m in outcome.measurements:
        for f in m.flags:
            flags[f] = flags.get(f, 0) + 1
    return report.summary, cpu.others_pct, wall, flags, dict(report.trust.tester_bound)


def run() -> str:
    summaries = []
    run_rows = []
    for i in range(1, RUNS + 1):
        with tempfile.TemporaryDirectory() as tmp:
            summary, others, wall, flags, bound = _one_run(100 + i, Path(tmp))
        summaries.append(summary)
        ranking = ", ".join(f"{g.target} {g.score:.0f}" for g in summary.scores.gateways)
        left_out = "; ".join(f"{w} ({', '.join(ts)})" for w, ts in bound.items()) or "none"
        flagged = ", ".join(f"{k} ×{v}" for k, v in sorted(flags.items())) or "none"
        run_rows.append(
            f"| {i} | {ranking} | {left_out} | {flagged} | {others:.0f} % | {wall:.0f} s |"
        )
    rep = reproducibility(summaries)
    flips, compared = rep.pair_flips()
    cv_rows = []
    for metric, (median, low, high) in rep.cv_by_metric().items():
        cv_rows.append(
            f"| {metric} ({UNITS[metric]}) | {median:.0f} % | {low:.0f} % | {high:.0f} % |"
        )
    cell_rows = []
    shown = ("throughput", "mean", "p50", "p95")
    for workload in summaries[0].workloads:
        for target in summaries[0].targets:
            values = {
                v.metric: v
                for v in rep.variations
                if (v.workload, v.target) == (workload, target) and v.metric in shown
            }
            if not values:
                continue
            cells = []
            for metric in shown:
                v = values.get(metric)
                if v is None:
                    cells.append("–")
                    continue
                cv = v.cv_pct
                means = " / ".join(_fmt(metric, x) for x in v.values)
                cells.append(f"{means} ({'–' if cv is None else f'{cv:.0f} %'})")
            cell_rows.append(f"| {workload} | {target} | " + " | ".join(cells) + " |")
    leaders = ", ".join(rep.leaders)
    return "\n".join(
        [
            f"`run_benchmark` on examples/auction/openapi.yaml as `gatebench run SPEC "
            f"--repetitions {REPETITIONS}` does it (the plan's 10 repetitions reduced to "
            f"{REPETITIONS}), {RUNS} times with different seeds; workloads as in the paper: "
            "50 uploads of 8.6 MB at once, 50 bids arriving over 250 ms, 400 sequential reads.",
            "",
            "### Runs",
            "",
            "| run | ranking (global score) | throughput not scored (tester-bound) | flags | "
            "others' CPU | wall time |",
            "|---:|---|---|---|---:|---:|",
            *run_rows,
            "",
            f"Leaders: {leaders}. The whole ranking differs from run 1's in "
            f"{rep.rankings_differing_from_first} of {RUNS - 1} later runs; the leader changes "
            f"in {rep.leader_changes} of {RUNS - 1}; over every pair of runs, {flips} of "
            f"{compared} gateway pairs swap order.",
            "",
            "### Coefficient of variation across runs, per metric",
            "",
            f"CV of the {RUNS} run-level means of each target × workload cell; median, lowest "
            "and highest over the cells.",
            "",
            "| metric | median CV | lowest | highest |",
            "|---|---:|---:|---:|",
            *cv_rows,
            "",
            "### Per cell",
            "",
            "Run-level means of runs 1 / 2 / 3 and their CV. Latencies in ms (Gatling's whole "
            "milliseconds, averaged over the repetitions), throughput in req/s.",
            "",
            "| workload | target | " + " | ".join(shown) + " |",
            "|---|---|" + "---|" * len(shown),
            *cell_rows,
            "",
            "Throughput of 50 requests sent at once is requests / (first start to last end): a "
            "few milliseconds of wall time, so it moves most; latencies of sequential reads "
            "under 1 ms read 0 ms at Gatling's resolution.",
        ]
    )


def _fmt(metric: str, value: float) -> str:
    if metric == "throughput":
        return f"{value:,.0f}"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"
