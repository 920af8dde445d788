"""``gatebench capacity SPEC``: how much of the plan's traffic each gateway carries within the
objective, per endpoint, with a 95 % confidence interval (docs/capacity.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gatebench.cli._common import (
    ProgressLine,
    add_plan_argument,
    add_quiet_argument,
    add_spec_arguments,
)
from gatebench.cli.run import _store_location, _testers, prepared
from gatebench.core.errors import GatebenchError
from gatebench.core.model import RunKind
from gatebench.core.plan import MAX_REPETITIONS
from gatebench.core.thresholds import failures
from gatebench.run import RunOptions, RunOutcome
from gatebench.store import DEFAULT_STORE, STORE_ENV, open_store


def _repetitions(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_REPETITIONS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_REPETITIONS}, got {text!r}")
    return int(text)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "capacity",
        help="search how much traffic each gateway carries within the plan's objective",
        description="Start every gateway that runs here and search, per endpoint, the highest "
        "arrival rate each one and the baseline carry within the plan's objective (capacity: "
        "p99 ≤ 50 ms and errors ≤ 0.1 % unless the plan says otherwise): growth, bisection, "
        "confirmation, repeated in a shuffled target order until every pair's order is decided "
        "or the time budget is spent. Prints each knee with its 95 % CI and the verdict; "
        "saves everything under results/<run-id>/ (docs/capacity.md).",
    )
    add_spec_arguments(parser)
    add_plan_argument(parser)
    add_quiet_argument(parser)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: one repetition, 0.5 s warm-up, 1 s probes and confirmation, 20 %% "
        "precision, 300 s budget at most",
    )
    parser.add_argument(
        "--repetitions",
        type=_repetitions,
        metavar="N",
        help="searches per target (default: the plan's capacity repetitions, 5)",
    )
    parser.add_argument(
        "--gateways",
        metavar="A,B",
        help="search only these gateways of the plan (comma-separated; 'none' for baseline only)",
    )
    parser.add_argument("--seed", type=int, help="seed of the target order and random values")
    parser.add_argument(
        "--testers",
        type=_testers,
        default=1,
        metavar="N",
        help="split every probe's rate across N load generators (1-16), each in a network "
        "namespace of its own, merged exactly (needs root when N > 1)",
    )
    parser.add_argument(
        "--no-ceiling",
        action="store_true",
        help="skip searching the load generator's own ceiling (against gatebench's static "
        "server) before the targets; tester-bound probes are then known from the generator's "
        "schedule lag and CPU only",
    )
    parser.add_argument(
        "--allow-missing-policies",
        action="store_true",
        help="search a gateway that cannot apply the plan's policies without them, instead of "
        "leaving it out",
    )
    parser.add_argument(
        "--fail-on-threshold",
        action="store_true",
        help="exit 1 when a capacity threshold of the plan ({metric: capacity, min: ...}) is "
        "not met, one line per failed threshold on stderr (docs/ci.md)",
    )
    parser.add_argument(
        "--results", default="results", metavar="DIR", help="where run folders go (results/)"
    )
    parser.add_argument(
        "--store",
        metavar="LOCATION",
        help=f"the result store (default: ${STORE_ENV}, else gatebench.sqlite in DIR)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from gatebench.local.runner import run_local

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
        ceiling=not args.no_ceiling,
        testers=args.testers,
        allow_missing_policies=args.allow_missing_policies,
    )
    display = ProgressLine(sys.stderr, quiet=args.quiet)
    location = _store_location(args)
    with open_store(location) as store:
        try:
            outcome = run_local(
                RunKind.CAPACITY,
                api,
                plan,
                spec_uri=str(Path(args.spec).resolve()),
                spec_sha256=digest,
                options=options,
                store=store,
                display=display,
            )
        except KeyboardInterrupt:
            display.finish()
            print(f"gatebench: the searches that finished are in {run_dir}/", file=sys.stderr)
            raise
        except GatebenchError:
            display.finish()
            if run_dir.exists():
                print(f"gatebench: the run's files are in {run_dir}/", file=sys.stderr)
            raise
    display.finish()
    for line in report_lines(outcome):
        print(line)
    store_flag = "" if location == DEFAULT_STORE else f" --store {location}"
    print(
        f"Stored in {location}; `gatebench report {outcome.record.run_id}{store_flag}` "
        "writes the HTML report (curves with each knee marked)."
    )
    failed = _check_thresholds(outcome)
    if args.fail_on_threshold and not outcome.record.plan.get("thresholds"):
        print(
            "gatebench: --fail-on-threshold: the plan has no thresholds (docs/ci.md); "
            "nothing was checked",
            file=sys.stderr,
        )
    if failed and args.fail_on_threshold:
        return 1
    return 0 if str(outcome.record.status) == "done" else 3


def report_lines(outcome: RunOutcome) -> list[str]:
    from gatebench.kinds.capacity._report import capacity_text

    record = outcome.record
    lines = [f"Run {record.run_id}: {record.status} ({outcome.wall_s:.0f}s)"]
    cores = record.environment.get("cpus")
    if cores:
        lines.append(f"Cores: {cores}")
    if outcome.report is not None:
        lines += capacity_text(outcome.report)
    for target, reason in sorted(record.target_errors.items()):
        lines.append(f"{target}: FAILED: {reason.splitlines()[0]}")
    for note in outcome.notes:
        lines.append(f"Note: {note}")
    lines += [
        "",
        f"Results: {outcome.run_dir}/ (run.json, capacity.json, capacity-searches.jsonl, "
        "probes/, gateway logs)",
    ]
    return lines


def _check_thresholds(outcome: RunOutcome) -> int:
    """The capacity thresholds' outcome (a count on stdout, each failure on stderr); how many
    failed (all of them when the run has no result)."""
    from gatebench.core.thresholds import CAPACITY_METRICS, thresholds_from_plan
    from gatebench.kinds.capacity import evaluate_capacity

    # A threshold on a gateway left out with --gateways is not checked: it was not asked for.
    searched = (None, "baseline", *outcome.record.gateways)
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
            f"gatebench: {len(chosen)} capacity threshold(s) not checked: no result",
            file=sys.stderr,
        )
        return len(chosen)
    results = evaluate_capacity(chosen, report.result)
    failed = failures(results)
    print(f"Thresholds: {len(results) - len(failed)} of {len(results)} met.")
    for result in failed:
        print(f"threshold failed: {result.line()}", file=sys.stderr)
    return len(failed)
