"""``gatebench run SPEC``: benchmark every target locally, live progress, the final tables."""

from __future__ import annotations

import argparse
import sys

from gatebench.cli._common import print_thresholds
from gatebench.cli._local import add_run_arguments, run_plan, target_error_lines
from gatebench.core.capabilities import engine_warmup_s
from gatebench.core.measure import FLAGS
from gatebench.core.model import BASELINE, Measurement, RunKind
from gatebench.core.plan import Plan, describe_injection
from gatebench.core.resources import MIN_CPU_S
from gatebench.core.stats import (
    counted,
    fmt_rate,
    format_workload_table,
    joined_names,
    workload_descriptions,
    workload_rows,
)
from gatebench.core.thresholds import evaluate
from gatebench.local.engines import ENGINES
from gatebench.run import RunOutcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_run_arguments(
        parser,
        ceiling="skip measuring the engine's ceiling (nginx static file) before the run; "
        "tester-bound flags then come from the CPU accounting only",
    )
    parser.add_argument("--quick", action="store_true", help="one short repetition (smoke run)")
    parser.add_argument(
        "--no-engine-warmup",
        action="store_true",
        help="skip the engine's own warm-up against the backend before the first phase "
        f"({engine_warmup_s('gatling'):g} s for Gatling, without which the first target meets "
        "a colder engine; docs/trust.md)",
    )
    parser.add_argument(
        "--repetitions", type=int, metavar="N", help="override the plan's repetitions"
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        help="the load engine (default: the plan's engine:, else gatling; wrk runs the "
        "closed model only)",
    )
    parser.add_argument(
        "--cross-check",
        choices=ENGINES,
        metavar="ENGINE",
        help="after the run, re-measure the closed-model workloads with a second engine "
        "(gatling or wrk) and report where the two agree (docs/trust.md)",
    )


def run(args: argparse.Namespace) -> int:
    return run_plan(
        args,
        RunKind.FIXED,
        kept="completed measurements kept in",
        report=report_lines,
        check=_check_thresholds,
        unchecked="only the default (no wrong answer) was checked",
        engine=args.engine,
        cross_check=args.cross_check,
        engine_warmup=not args.no_engine_warmup,
    )


def _check_thresholds(plan: Plan, outcome: RunOutcome) -> int:
    """Print the thresholds' outcome (a count on stdout, each failure on stderr); returns
    how many failed (all of them when the run produced nothing to check). The defaults
    (``wrong_answers <= 0``, gatebench.core.thresholds.DEFAULT_THRESHOLDS) are checked in
    every scored run."""
    if outcome.report is None:
        if not plan.thresholds:
            return 0
        print(
            f"gatebench: {counted(len(plan.thresholds), 'threshold')} not checked: the run was not scored",
            file=sys.stderr,
        )
        return len(plan.thresholds)
    # Thresholds on a gateway left out with --gateways are not checked: it was not asked for.
    chosen = [t for t in plan.thresholds if t.gateway in (None, BASELINE, *plan.gateways)]
    results = evaluate(chosen, outcome.report.summary)
    if not results:
        return 0
    return print_thresholds(results)


def report_lines(outcome: RunOutcome) -> list[str]:
    record = outcome.record
    lines = [
        f"Run {record.run_id}: {record.status} ({len(outcome.measurements)} measured phases, "
        f"{outcome.wall_s:.0f}s)",
        f"Latencies in ms ({record.environment.get('resolution', 'Gatling records whole milliseconds')}; "
        "the columns average the repetitions); err % = a repetition's KO / requests, averaged "
        "as the score does (docs/scoring.md), not the total KO / total req; req/s = requests / "
        "phase duration; req/CPU-s = requests per gateway CPU-second (– under "
        f"{MIN_CPU_S:g} CPU-s); wrong = wrong answers over the repetitions (– not checked)"
        + (
            "; limited = answers that were the plan's rate limit refusing the request (429), "
            "over the repetitions: counted in req and req/s, not in err %."
            if any(m.rate_limited is not None for m in outcome.measurements)
            else "."
        ),
    ]
    for name, description in workload_descriptions(record.workloads).items():
        rows = workload_rows(outcome.measurements, name)
        if rows:
            lines += ["", *format_workload_table(name, description, rows)]
    flagged = [m for m in outcome.measurements if m.flags]
    if flagged:
        lines.append("")
        lines.append(_flag_note(flagged))
    note = record.environment.get("note") if record.environment else None
    if note:
        lines.append(f"Note: {note}.")
    lines.extend(_fault_lines(outcome))
    lines.extend(_score_lines(outcome))
    lines.extend(_trust_lines(outcome))
    if outcome.report is not None:
        from gatebench.core.report import baseline_not_a_floor

        lines.extend(
            f"Note: {line}." for line in baseline_not_a_floor(record, outcome.report.summary)
        )
    lines.extend(target_error_lines(record))
    for note_line in outcome.notes:
        lines.append(f"Note: {note_line}")
    lines.append("")
    lines.append(
        f"Results: {outcome.run_dir}/ (run.json, measurements.jsonl, workload.json, gateway logs, simulation.log)"
    )
    return lines


def _fault_lines(outcome: RunOutcome) -> list[str]:
    """The plan's fault, per gateway and repetition: what its clients saw after the kill (the
    report's "A replica fails", whose introduction says what each column means)."""
    from gatebench.core.report._deployment import deployment_tables
    from gatebench.core.report._tables import aligned

    for table in deployment_tables(outcome.measurements):
        if table.id == "fault":
            numeric = [i >= table.numeric_from for i in range(len(table.header))]
            rows = aligned(table.header, table.rows, numeric)
            return ["", f"{table.title} (the report says what each column counts):"] + [
                "  " + line for line in rows
            ]
    return []


def _trust_lines(outcome: RunOutcome) -> list[str]:
    """The engine's ceiling and the second engine's agreement (docs/trust.md)."""
    report = outcome.report
    if report is None:
        return []
    trust = report.trust
    lines = []
    ceiling = trust.ceiling
    limits = ceiling.limits() if ceiling is not None else {}
    rates = ceiling.rates_set() if ceiling is not None else {}
    if ceiling is not None and limits:
        points = ", ".join(f"{w} {fmt_rate(rate)} req/s" for w, rate in limits.items())
        lines.append(
            f"Engine ceiling ({ceiling.engine} against {ceiling.server}): {points}; "
            "a measurement within 20 % of it (or of the fastest target's mean, where a target "
            "went faster) is tester-bound."
        )
    if ceiling is not None and rates:
        offered = joined_names(f"{w} ({fmt_rate(rate)} req/s)" for w, rate in rates.items())
        lines.append(
            f"The plan sets the rate of {offered}, an open model: {ceiling.engine} carried it "
            f"against {ceiling.server}, so that is no limit, and throughput there is not scored."
        )
    if trust.second_engine is not None:
        lines.append(trust.summary or f"Cross-check: {trust.second_engine_note}")
    return ["", *lines] if lines else []


def _score_lines(outcome: RunOutcome) -> list[str]:
    report = outcome.report
    if report is None:
        return []
    result = report.summary.scores
    lines = ["", f"Scores ({result.profile} profile, 0-100):"]
    for g in result.gateways:
        lines.append(f"  {g.rank}. {g.target} {g.score:.0f}")
    for target, why in report.summary.unranked.items():
        lines.append(f"  –  {target} not scored: {why}")
    verdict = " ".join(report.verdict)
    if verdict:
        lines.append(verdict)
    return lines


def _flag_note(flagged: list[Measurement]) -> str:
    counts: dict[str, int] = {}
    for m in flagged:
        for f in m.flags:
            counts[f] = counts.get(f, 0) + 1
    parts = []
    for flag, n in sorted(counts.items()):
        parts.append(f"{flag} ×{n} ({FLAGS.get(flag, flag)})")
    return "Flags: " + "; ".join(parts) + "."


__all__ = ["describe_injection"]
