"""``gatebench plan SPEC``: the benchmark plan, validated, in a few lines (or JSON)."""

from __future__ import annotations

import argparse
import json
import sys

from gatebench.cli._common import add_plan_argument, add_spec_arguments, load, print_problems
from gatebench.core.cost import CostError, describe_cost, describe_vm_limits, estimate_cost
from gatebench.core.plan import describe_plan
from gatebench.core.stats import counted


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_spec_arguments(parser)
    add_plan_argument(parser)
    parser.add_argument("--json", action="store_true", help="the plan as JSON")


def run(args: argparse.Namespace) -> int:
    result, plan = load(args)
    assert result.api is not None
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2))
    else:
        print("\n".join(describe_plan(plan, result.api)))
        if plan.infrastructure is not None:  # a cloud plan: what one run costs
            try:
                print("\n".join(describe_cost(estimate_cost(plan.to_dict()))))
            except CostError as exc:
                print(f"Estimated cost: not available: {exc}")
            print(describe_vm_limits(plan.to_dict()))
    warnings = [p for p in result.problems if p.severity == "warning"]
    if warnings:
        print(
            f"({counted(len(warnings), 'warning')} about the description: gatebench validate {args.spec})",
            file=sys.stderr,
        )
        print_problems(warnings[:5], stream=sys.stderr)
    print_problems(list(plan.warnings), stream=sys.stderr)
    return 0
