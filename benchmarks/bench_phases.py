"""Phase length: how much a phase's throughput moves from repetition to repetition, against how
long the phase lasts, and which phases the ``too-short`` rule flags (docs/trust.md).

One run of the product's own path (`gatebench run`: shuffled order, warm-up, backend reset
before every measured phase; no ceiling phase) through nginx and the baseline on the mock
backend, with four workloads on the same operation: a burst of 20 requests at once, 60 and
3,000 sequential requests, and 4 users for 3 s. Per workload and target: the phase's median
duration, the repetitions flagged ``too-short``, and the coefficient of variation of the
throughput over the repetitions, with and without the too-short ones.

``python -m benchmarks.bench_phases RUN_DIR [RUN_DIR ...]`` prints the same table for stored
runs (their ``measurements.jsonl``; ``make demo`` writes one under results/). A run recorded
before the flag existed is judged by the rule's timer part alone (20 × the resolution: its
measurements do not keep the start spread), which can only flag fewer phases.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from gatebench.core.model import Measurement
from gatebench.core.plan import build_plan
from gatebench.core.spec import read_spec
from gatebench.core.trust import (
    ENGINE_RESOLUTION_MS,
    TOO_SHORT_FLAG,
    coefficient_of_variation,
    min_phase_ms,
    too_short,
)
from gatebench.local.runner import RunOptions, run_benchmark

from ._machine import CpuWindow

TITLE = "Phase length: throughput's run-to-run variation and the too-short rule"
REPETITIONS = 8
SPEC = """\
openapi: 3.0.3
info: {title: Phases, version: "1"}
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              example: {id: 1, name: item}
"""
WORKLOADS = [
    ("burst-20", {"at_once": 20}),
    ("seq-60", {"sequential": 60}),
    ("seq-3000", {"sequential": 3000}),
    ("closed-3s", {"concurrent": 4, "duration": "3s"}),
]


def _flagged(m: Measurement) -> bool:
    if TOO_SHORT_FLAG in m.flags:
        return True
    return too_short(m.duration_s * 1000.0, ENGINE_RESOLUTION_MS.get(m.engine, 1.0))


def _cv(values: Sequence[float]) -> str:
    cv = coefficient_of_variation(values)
    return "–" if cv is None else f"{cv:.1f} %"


def table(measurements: Iterable[Measurement]) -> list[str]:
    """One row per workload × target: median duration, too-short repetitions, throughput CV
    over every repetition and over those that are not too short."""
    cells: dict[tuple[str, str], list[Measurement]] = {}
    for m in measurements:
        if m.requests > 0:
            cells.setdefault((m.workload, m.target), []).append(m)
    rows = [
        "| workload | target | median duration | median throughput | too short | throughput "
        "CV, all repetitions | without the too-short ones |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    pooled_all: list[float] = []
    pooled_kept: list[float] = []
    for (workload, target), ms in sorted(cells.items()):
        kept = [m for m in ms if not _flagged(m)]
        duration = statistics.median(m.duration_s * 1000.0 for m in ms)
        rate = statistics.median(m.throughput for m in ms)
        everything = _cv([m.throughput for m in ms])
        without = _cv([m.throughput for m in kept]) if len(kept) >= 2 else "–"
        cv_all = coefficient_of_variation([m.throughput for m in ms])
        cv_kept = coefficient_of_variation([m.throughput for m in kept])
        if cv_all is not None:
            pooled_all.append(cv_all)
        if cv_kept is not None and len(kept) >= 2:
            pooled_kept.append(cv_kept)
        rows.append(
            f"| {workload} | {target} | {duration:,.0f} ms | {rate:,.0f} req/s "
            f"| {len(ms) - len(kept)} of {len(ms)} "
            f"| {everything} | {without} |"
        )
    if pooled_all:
        rows.append(
            f"| **median over the cells** | | | | | {statistics.median(pooled_all):.1f} % | "
            + (f"{statistics.median(pooled_kept):.1f} % |" if pooled_kept else "– |")
        )
    return rows


def run() -> str:
    os.environ.setdefault("PHASES_TOKEN", "bench")
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "phases.yaml"
        spec.write_text(SPEC, encoding="utf-8")
        result = read_spec(str(spec))
        assert result.api is not None
        section = {
            "gateways": ["nginx"],
            "baseline": True,
            "repetitions": REPETITIONS,
            "warmup": {"duration": "1s"},
            "backend": {"mock": True},
            "workloads": [
                {
                    "name": name,
                    "operation": "getItem",
                    "params": {"id": {"range": [1, 100]}},
                    "injection": injection,
                }
                for name, injection in WORKLOADS
            ],
        }
        plan = build_plan(section, result.api)
        with CpuWindow() as cpu:
            outcome = run_benchmark(
                result.api,
                plan,
                spec_uri=str(spec),
                spec_sha256="f" * 64,
                options=RunOptions(results_dir=Path(tmp) / "results", seed=7, ceiling=False),
            )
    rule = min_phase_ms(ENGINE_RESOLUTION_MS["gatling"])
    return "\n".join(
        [
            f"One run, {REPETITIONS} repetitions, nginx and the baseline on the mock backend; "
            "workloads on the same GET: 20 requests at once, 60 and 3,000 sequential requests, "
            f"4 users for 3 s. Other processes used {cpu.others_pct:.0f} % of the machine. A "
            f"phase is too short under 20 × (1 ms + a burst's launch spread): {rule:.0f} ms "
            "for requests launched in the same millisecond.",
            "",
            *table(outcome.measurements),
            "",
            "CV: sample standard deviation of the throughput over the repetitions / its mean.",
        ]
    )


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m benchmarks.bench_phases RUN_DIR [RUN_DIR ...]", file=sys.stderr)
        return 2
    for run_dir in argv:
        path = Path(run_dir) / "measurements.jsonl"
        ms = [
            Measurement.from_dict(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        print(f"{run_dir}: {len(ms)} measurements")
        print("\n".join(table(ms)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
