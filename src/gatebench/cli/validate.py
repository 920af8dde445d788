"""``gatebench validate SPEC``: every problem, one per line; exit 1 when one is an error."""

from __future__ import annotations

import argparse
import json
import os
import sys

from gatebench.cli._common import add_plan_argument, add_spec_arguments, read
from gatebench.core.errors import PlanError, Problem
from gatebench.core.plan import load_plan
from gatebench.core.stats import counted
from gatebench.run.stages.parse import unset_credentials


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_spec_arguments(parser)
    add_plan_argument(parser)
    parser.add_argument(
        "--strict",
        action="store_true",
        help="also run openapi-spec-validator's semantic checks (slower)",
    )
    parser.add_argument(
        "--json", action="store_true", help='print {"errors": [...], "warnings": [...]}'
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print errors only")


def run(args: argparse.Namespace) -> int:
    result = read(args, strict=args.strict)
    problems: list[Problem] = list(result.problems)
    plan_checked = False
    if not result.errors and (result.benchmark_loc is not None or args.plan):
        try:
            plan = load_plan(result, args.plan)
            problems.extend(plan.warnings)
            said = " (in this shell: gatebench run here would stop at once)"
            problems += unset_credentials(
                plan, result, os.environ, said, severity="note", plan_file=args.plan
            )
            plan_checked = True
        except PlanError as exc:
            problems.extend(exc.problems)
    errors = [p for p in problems if p.severity == "error"]
    if args.json:
        out = {
            "errors": [p.to_dict() for p in errors],
            "warnings": [p.to_dict() for p in problems if p.severity != "error"],
            "operations": len(result.api.operations) if result.api else 0,
        }
        print(json.dumps(out, indent=2))
    else:
        for p in problems:
            if args.quiet and p.severity != "error":
                continue
            print(p.format(result.spec_name or args.spec))
        if not args.quiet:
            ops = len(result.api.operations) if result.api else 0
            warnings = sum(p.severity == "warning" for p in problems)
            notes = len(problems) - len(errors) - warnings
            summary = f"{counted(len(errors), 'error')}, {counted(warnings, 'warning')}"
            summary += f", {counted(notes, 'note')}" if notes else ""
            if result.api is not None:
                summary += f"; {counted(ops, 'operation')}"
                summary += "; plan ok" if plan_checked else ""
            sys.stdout.flush()  # the problems first, then the summary, when both go to one pipe
            print(summary, file=sys.stderr)
    return 1 if errors else 0
