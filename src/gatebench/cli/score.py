"""``gatebench score RUN``: score a stored run again (another profile, other weights)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gatebench.cli._store import RUN_HELP, add_store_argument, run_location
from gatebench.core.metrics import COST_METRICS, METRICS
from gatebench.core.report import score_run
from gatebench.core.report._tables import aligned
from gatebench.core.score import PROFILES, ScoreError
from gatebench.store import open_store

EXIT_USAGE = 2


def _weight(text: str) -> tuple[str, float]:
    name, sep, value = text.partition("=")
    if not sep or (name not in METRICS and name not in COST_METRICS):
        raise argparse.ArgumentTypeError(
            "expected METRIC=WEIGHT with METRIC one of "
            f"{', '.join([*METRICS, *COST_METRICS])}; got {text!r}"
        )
    try:
        return name, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"weight of {name!r}: expected a number, got {value!r}"
        ) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", metavar="RUN", help=RUN_HELP)
    parser.add_argument(
        "--profile", choices=PROFILES, help="paper (AGE §IV-C) or robust (default: the plan's)"
    )
    parser.add_argument(
        "--weight",
        action="append",
        type=_weight,
        metavar="METRIC=WEIGHT",
        help="robust profile only: weigh a metric (repeatable; unlisted metrics weigh 1)",
    )
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    add_store_argument(parser)


def run(args: argparse.Namespace) -> int:
    location, run_id = run_location(args)
    with open_store(location) as store:
        try:
            report = score_run(store, run_id, profile=args.profile, weights=args.weight)
        except ScoreError as exc:
            print(f"gatebench score: {exc}", file=sys.stderr)
            return EXIT_USAGE
    run_dir = Path(str((report.run.owner or {}).get("run_dir") or ""))
    if run_dir.parts and (run_dir / "scores.json").is_file():  # the run folder says the same
        from gatebench.kinds.fixed.score import save_scores

        save_scores(run_dir, report)
    result = report.summary.scores
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return 0
    workloads = list(result.workloads)
    header = ["RANK", "GATEWAY", "SCORE", *(w.upper() for w in workloads)]
    rows = [
        [str(g.rank), g.target, f"{g.score:.0f}"]
        + [("-" if g.endpoint(w).missing else f"{g.endpoint(w).score:.0f}") for w in workloads]
        for g in result.gateways
    ]
    print(f"run {report.run.run_id}, profile {result.profile}")
    if result.gateways:
        for line in aligned(header, rows):
            print(line)
    else:
        print("no gateway was scored: no score and no rank (the notes say why)")
    print()
    print(" ".join(report.verdict))
    for caution in report.cautions:
        print(f"note: {caution}", file=sys.stderr)
    return 0
