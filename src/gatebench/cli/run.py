"""``gatebench run SPEC``: benchmark every target locally, live progress, the final tables."""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from dataclasses import replace
from pathlib import Path

from gatebench.cli._common import (
    ProgressLine,
    add_plan_argument,
    add_quiet_argument,
    add_spec_arguments,
    load,
)
from gatebench.core.errors import GatebenchError
from gatebench.core.ir import Api
from gatebench.core.model import Measurement, local_run_id
from gatebench.core.plan import Plan, describe_injection
from gatebench.core.stats import format_workload_table, workload_rows
from gatebench.core.thresholds import evaluate, failures
from gatebench.local.engines import ENGINES
from gatebench.local.runner import RunOptions, RunOutcome, run_benchmark
from gatebench.store import DEFAULT_STORE, STORE_ENV, ResultStore, open_store


def _testers(text: str) -> int:
    from gatebench.core.plan import MAX_TESTERS

    if not text.isdigit() or not 1 <= int(text) <= MAX_TESTERS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_TESTERS}, got {text!r}")
    return int(text)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "run",
        help="benchmark the gateways of a plan on this machine",
        description="Render, start every gateway that runs here, drive the plan's workloads "
        "through each one and through no gateway (the baseline) with Gatling, print one table "
        "per workload and save everything under results/<run-id>/.",
    )
    add_spec_arguments(parser)
    add_plan_argument(parser)
    parser.add_argument("--quick", action="store_true", help="one short repetition (smoke run)")
    add_quiet_argument(parser)
    parser.add_argument(
        "--repetitions", type=int, metavar="N", help="override the plan's repetitions"
    )
    parser.add_argument(
        "--gateways",
        metavar="A,B",
        help="measure only these gateways of the plan (comma-separated; 'none' for baseline only)",
    )
    parser.add_argument("--seed", type=int, help="seed of the target order and random values")
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
    parser.add_argument(
        "--testers",
        type=_testers,
        default=1,
        metavar="N",
        help="split every phase across N load generators (1-16), each in a network namespace "
        "of its own, and merge their logs exactly (needs root when N > 1; docs/engine.md)",
    )
    parser.add_argument(
        "--no-ceiling",
        action="store_true",
        help="skip measuring the engine's ceiling (nginx static file) before the run; "
        "tester-bound flags then come from the CPU accounting only",
    )
    parser.add_argument(
        "--allow-missing-policies",
        action="store_true",
        help="run a gateway that cannot apply the plan's policies (x-gatebench policies:) "
        "without them, marked in the report, instead of leaving it out",
    )
    parser.add_argument(
        "--fail-on-threshold",
        action="store_true",
        help="exit 1 when a threshold of the plan (x-gatebench thresholds:) is not met, with "
        "one line per failed threshold on stderr (docs/ci.md)",
    )
    parser.add_argument(
        "--results", default="results", metavar="DIR", help="where run folders go (results/)"
    )
    parser.add_argument(
        "--store",
        metavar="LOCATION",
        help=f"the result store: a SQLite file, sqlite:PATH or firestore://PROJECT[/DATABASE] "
        f"(default: ${STORE_ENV}, else DIR/gatebench.sqlite under --results)",
    )
    parser.set_defaults(handler=run)


def chosen_gateways(args: argparse.Namespace, plan: Plan) -> Plan | None:
    """The plan with ``--gateways`` applied (``none``: the baseline only); None, said on
    stderr, when it names a gateway the plan lacks."""
    if not args.gateways:
        return plan
    wanted = [] if args.gateways == "none" else [g.strip() for g in args.gateways.split(",")]
    unknown = [g for g in wanted if g not in plan.gateways]
    if unknown:
        print(
            f"gatebench: --gateways: {unknown[0]!r} is not in the plan "
            f"({', '.join(plan.gateways)})",
            file=sys.stderr,
        )
        return None
    return replace(plan, gateways=tuple(wanted))


def spec_digest(spec: str) -> str:
    """The SHA-256 of the spec file (of its name when it is not a file: a URL, stdin)."""
    path = Path(spec)
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
    return digest or hashlib.sha256(str(path).encode()).hexdigest()


def prepared(args: argparse.Namespace) -> tuple[Api, Plan, str, str] | None:
    """What a local run of any kind starts from: the API, the plan with ``--gateways``
    applied, the spec's digest and the run id it gives; None (said on stderr) when
    ``--gateways`` names a gateway the plan lacks."""
    result, loaded = load(args)
    api = result.api
    assert api is not None
    plan = chosen_gateways(args, loaded)
    if plan is None:
        return None
    digest = spec_digest(args.spec)
    return api, plan, digest, local_run_id(digest)


def run(args: argparse.Namespace) -> int:
    ready = prepared(args)
    if ready is None:
        return 2
    api, plan, digest, run_id = ready
    run_dir = Path(args.results) / run_id
    options = RunOptions(
        results_dir=Path(args.results),
        quick=args.quick,
        repetitions=args.repetitions,
        seed=args.seed,
        run_id=run_id,
        engine=args.engine,
        ceiling=not args.no_ceiling,
        cross_check=args.cross_check,
        testers=args.testers,
        allow_missing_policies=args.allow_missing_policies,
    )
    display = ProgressLine(sys.stderr, quiet=args.quiet)
    with open_store(_store_location(args)) as store:
        return _run_with_store(
            args, api, plan, Path(args.spec), digest, run_dir, options, display, store
        )


def _run_with_store(
    args: argparse.Namespace,
    api: Api,
    plan: Plan,
    spec_path: Path,
    digest: str,
    run_dir: Path,
    options: RunOptions,
    display: ProgressLine,
    store: ResultStore,
) -> int:
    try:
        outcome = run_benchmark(
            api,
            plan,
            spec_uri=str(spec_path.resolve()),
            spec_sha256=digest,
            options=options,
            store=store,
            display=display,
        )
    except KeyboardInterrupt:
        display.finish()
        print(f"gatebench: completed measurements kept in {run_dir}/", file=sys.stderr)
        raise
    except GatebenchError:
        display.finish()
        if run_dir.exists():
            print(f"gatebench: the run's files are in {run_dir}/", file=sys.stderr)
        raise
    display.finish()
    for line in report_lines(outcome):
        print(line)
    location = _store_location(args)
    store_flag = "" if location == DEFAULT_STORE else f" --store {location}"
    print(
        f"Stored in {location}; `gatebench report {outcome.record.run_id}{store_flag}` "
        "writes the HTML report."
    )
    failed = _check_thresholds(plan, outcome)
    if args.fail_on_threshold and not plan.thresholds:
        print(
            "gatebench: --fail-on-threshold: the plan has no thresholds (x-gatebench "
            "thresholds:, docs/ci.md); only the default (no wrong answer) was checked",
            file=sys.stderr,
        )
    if failed and args.fail_on_threshold:
        return 1
    return 0 if str(outcome.record.status) == "done" else 3


def _check_thresholds(plan: Plan, outcome: RunOutcome) -> int:
    """Print the thresholds' outcome (a count on stdout, each failure on stderr); returns
    how many failed (all of them when the run produced nothing to check). The defaults
    (``wrong_answers <= 0``, gatebench.core.thresholds.DEFAULT_THRESHOLDS) are checked in
    every scored run."""
    if outcome.report is None:
        if not plan.thresholds:
            return 0
        print(
            f"gatebench: {len(plan.thresholds)} threshold(s) not checked: the run was not scored",
            file=sys.stderr,
        )
        return len(plan.thresholds)
    # Thresholds on a gateway left out with --gateways are not checked: it was not asked for.
    chosen = [t for t in plan.thresholds if t.gateway in (None, "baseline", *plan.gateways)]
    results = evaluate(chosen, outcome.report.summary)
    if not results:
        return 0
    failed = failures(results)
    print(f"Thresholds: {len(results) - len(failed)} of {len(results)} met.")
    for result in failed:
        print(f"threshold failed: {result.line()}", file=sys.stderr)
    return len(failed)


def _store_location(args: argparse.Namespace) -> str:
    """``--store``, else ``$GATEBENCH_STORE``, else ``<--results>/gatebench.sqlite``."""
    return str(args.store or os.environ.get(STORE_ENV) or Path(args.results) / "gatebench.sqlite")


def report_lines(outcome: RunOutcome) -> list[str]:
    record = outcome.record
    lines = [
        f"Run {record.run_id}: {record.status} ({len(outcome.measurements)} measured phases, "
        f"{outcome.wall_s:.0f}s)",
        f"Latencies in ms ({record.environment.get('resolution', 'Gatling records whole milliseconds')}; "
        "the columns average the repetitions); err % = KO / requests; req/s = requests / "
        "phase duration; wrong = wrong answers over the repetitions (– not checked).",
    ]
    for workload in record.workloads:
        rows = workload_rows(outcome.measurements, workload["name"])
        if not rows:
            continue
        lines.append("")
        lines.extend(
            format_workload_table(
                workload["name"],
                f"{workload['method']} {workload['path']}, {workload['injection']}",
                rows,
            )
        )
    flagged = [m for m in outcome.measurements if m.flags]
    if flagged:
        lines.append("")
        lines.append(_flag_note(flagged))
    note = record.environment.get("note") if record.environment else None
    if note:
        lines.append(f"Note: {note}.")
    lines.extend(_score_lines(outcome))
    lines.extend(_trust_lines(outcome))
    for target, reason in sorted(record.target_errors.items()):
        lines.append(f"{target}: FAILED: {reason.splitlines()[0]}")
    for note_line in outcome.notes:
        lines.append(f"Note: {note_line}")
    lines.append("")
    lines.append(
        f"Results: {outcome.run_dir}/ (run.json, measurements.jsonl, workload.json, gateway logs, simulation.log)"
    )
    return lines


def _trust_lines(outcome: RunOutcome) -> list[str]:
    """The engine's ceiling and the second engine's agreement (docs/trust.md)."""
    report = outcome.report
    if report is None:
        return []
    trust = report.trust
    lines = []
    if trust.ceiling is not None and trust.ceiling.workloads:
        points = ", ".join(
            f"{w} {p.throughput:,.0f} req/s" for w, p in trust.ceiling.workloads.items()
        )
        lines.append(
            f"Engine ceiling ({trust.ceiling.engine} against {trust.ceiling.server}): {points}; "
            "a measurement within 20 % of it (or of the fastest target's mean, where a target "
            "went faster) is tester-bound."
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
    meaning = {
        "noisy": "other processes used > 20 % of the machine",
        "tester-bound": "within 20 % of the load engine's ceiling, or the machine was ≥ 85 % "
        "busy and the engine used more CPU than the target",
        "incomplete": "fewer requests than the workload defines",
        "too-short": "too short for its throughput to mean anything (docs/trust.md)",
        "target-failed": "overlaps its target's failure; not scored",
        "wrong-answers": "answers that were not the backend's answer to their request, whole; "
        "the gateway is not ranked (docs/trust.md)",
    }
    for flag, n in sorted(counts.items()):
        parts.append(f"{flag} ×{n} ({meaning.get(flag, flag)})")
    return "Flags: " + "; ".join(parts) + "."


__all__ = ["describe_injection"]
