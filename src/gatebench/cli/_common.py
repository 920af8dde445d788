"""Options and loading shared by several commands."""

from __future__ import annotations

import argparse
from typing import Any

from gatebench.core.plan import Plan, load_plan
from gatebench.core.spec import DEFAULT_LIMITS, Limits, SpecResult, read_spec
from gatebench.core.units import parse_size


def add_spec_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="API description: a file, a folder or a zip")
    parser.add_argument(
        "--entry", help="the root file inside a folder or zip (when it holds several)"
    )
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=DEFAULT_LIMITS.max_bytes,
        help="largest input accepted, files it includes too (default 25MB)",
    )


def add_plan_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plan",
        metavar="FILE",
        help="a benchmark file with an x-gatebench section (instead of the one in SPEC)",
    )


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def read(args: argparse.Namespace, *, strict: bool = False) -> SpecResult:
    limits = Limits(max_bytes=args.max_bytes)
    return read_spec(args.spec, entry=args.entry, limits=limits, strict=strict)


def load(args: argparse.Namespace) -> tuple[SpecResult, Plan]:
    """Spec and plan, or the first error (raised as a ProblemsError subclass)."""
    result = read(args)
    result.raise_for_errors()
    return result, load_plan(result, getattr(args, "plan", None))


def print_problems(problems: list[Any], *, stream: Any) -> None:
    for problem in problems:
        print(problem.format(), file=stream)
