"""``gatebench capacity SPEC``: how much of the plan's traffic each gateway carries within the
objective, per endpoint, with a 95 % confidence interval (docs/capacity.md)."""

from __future__ import annotations

import argparse
import sys

from gatebench.cli._common import number, print_thresholds
from gatebench.cli._local import add_run_arguments, run_plan, target_error_lines
from gatebench.core.model import BASELINE, RunKind
from gatebench.core.plan import MAX_REPETITIONS, Plan
from gatebench.core.stats import counted
from gatebench.run import RunOutcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(
        parser,
        ceiling="skip searching the load generator's own ceiling (against gatebench's static "
        "server) before the targets; tester-bound probes are then known from the generator's "
        "schedule lag and CPU only",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: one repetition, 0.5 s warm-up, 1 s probes and confirmation, 20 %% "
        "precision, 300 s budget at most",
    )
    parser.add_argument(
        "--repetitions",
        type=number(int, most=MAX_REPETITIONS),
        metavar="N",
        help="searches per target (default: the plan's capacity repetitions, 5)",
    )


def run(args: argparse.Namespace) -> int:
    return run_plan(
        args,
        RunKind.CAPACITY,
        kept="the searches that finished are in",
        report=report_lines,
        check=_check_thresholds,
        unchecked="nothing was checked",
    )


def report_lines(outcome: RunOutcome) -> list[str]:
    from gatebench.kinds.capacity._report import capacity_text

    record = outcome.record
    lines = [f"Run {record.run_id}: {record.status} ({outcome.wall_s:.0f}s)"]
    cores = record.environment.get("cpus")
    if cores:
        lines.append(f"Cores: {cores}")
    if outcome.report is not None:
        lines += capacity_text(outcome.report)
    lines.extend(target_error_lines(record))
    for note in outcome.notes:
        lines.append(f"Note: {note}")
    lines += [
        "",
        f"Results: {outcome.run_dir}/ (run.json, capacity.jsonl, capacity-searches.jsonl, "
        "probes/, gateway logs)",
    ]
    return lines


def _check_thresholds(_plan: Plan, outcome: RunOutcome) -> int:
    """The capacity thresholds' outcome (a count on stdout, each failure on stderr); how many
    failed (all of them when the run has no result)."""
    from gatebench.core.thresholds import CAPACITY_METRICS, thresholds_from_plan
    from gatebench.kinds.capacity import evaluate_capacity

    # A threshold on a gateway left out with --gateways is not checked: it was not asked for.
    searched = (None, BASELINE, *outcome.record.gateways)
    chosen = [
        t
        for t in thresholds_from_plan(outcome.record.plan)
        if t.metric in CAPACITY_METRICS and t.gateway in searched
    ]
    if not chosen:
        return 0
    report = outcome.report
    if report is None:
        print(
            f"gatebench: {counted(len(chosen), 'capacity threshold')} not checked: no result",
            file=sys.stderr,
        )
        return len(chosen)
    return print_thresholds(evaluate_capacity(chosen, report.result))
