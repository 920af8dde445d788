"""``gatebench scale SPEC --routes 10,100,1000`` and ``gatebench change-under-load SPEC``: how
each gateway copes as the API grows, and whether a configuration change under live load drops
requests (docs/scale.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gatebench.cli._common import add_quiet_argument, add_spec_arguments, number, read
from gatebench.cli._local import run_here, spec_digest, target_error_lines
from gatebench.cli._store import add_store_argument, store_flag
from gatebench.core.errors import GatebenchError, PlanError, Problem
from gatebench.core.plan import load_plan
from gatebench.core.renderers import UnknownGateway, all_renderers, get_renderer
from gatebench.core.routescale import DEFAULT_SIZES, MAX_ROUTES, distinct_routes, parse_sizes
from gatebench.core.stats import counted
from gatebench.kinds._live._plan import scale_problems
from gatebench.local.liveruns import LoadSettings
from gatebench.local.runner import claim_run_id


def _sizes(text: str) -> tuple[int, ...]:
    try:
        return parse_sizes(text)
    except GatebenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_seconds(parser: argparse.ArgumentParser, *options: tuple[str, float, int, str]) -> None:
    """Options in seconds, each a number above 0: its flag, default, largest value and help."""
    for flag, default, most, text in options:
        parser.add_argument(
            flag, type=number(float, most=most), default=default, metavar="SECONDS", help=text
        )


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_spec_arguments(parser)
    add_quiet_argument(parser)
    parser.add_argument(
        "--gateways",
        metavar="A,B",
        help="the gateways to measure (default: every gateway installed here)",
    )
    parser.add_argument(
        "--rate",
        type=number(float, most=100_000),
        default=200.0,
        help="constant arrival rate of the load, requests a second (default 200)",
    )
    _add_seconds(
        parser,
        (
            "--duration",
            10.0,
            3600,
            "measured seconds of load per route (scale) or in all (change; default 10)",
        ),
        ("--warmup", 3.0, 600, "warm-up at the same rate before the measured load (default 3)"),
        (
            "--deadline",
            120.0,
            3600,
            "how long a route may take to answer correctly after a start or a change (default 120)",
        ),
    )
    add_store_argument(parser, results=True)


def add_scale_arguments(scale: argparse.ArgumentParser) -> None:
    _arguments(scale)
    scale.add_argument(
        "--routes",
        type=_sizes,
        default=DEFAULT_SIZES,
        metavar="N,N,...",
        help=f"table sizes, increasing, at most {MAX_ROUTES:,} (default 10,100,1000,10000)",
    )


def add_change_arguments(change: argparse.ArgumentParser) -> None:
    _arguments(change)
    change.add_argument(
        "--routes", type=number(int, most=MAX_ROUTES), default=100, help="routes before (100)"
    )
    change.add_argument(
        "--add", type=number(int, most=MAX_ROUTES), default=100, help="routes added (100)"
    )
    _add_seconds(
        change,
        (
            "--change-after",
            3.0,
            3600,
            "when, into the measured load, the change is applied (default 3)",
        ),
        (
            "--window",
            4.0,
            3600,
            "the window after the change in which failures and the spike count (default 4)",
        ),
    )


def _gateways(text: str | None) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The gateways to measure, and those left out: named with ``--gateways``, each is measured
    (one not installed is recorded as failed, with the reason); by default, every gateway
    installed here, and the ones that run here but are not installed are left out. None, said
    on stderr of the option (not of the spec), when a name is no gateway that runs here or
    the option names none (``--gateways ''``: measuring every gateway would not be what was
    asked)."""
    native = [r for r in all_renderers() if r.runs_here]
    if text is not None:  # named, even as nothing: an empty list is refused, not "every one"
        here, names = [r.name for r in native], []
        for written in (g.strip() for g in text.split(",") if g.strip()):
            try:
                name = get_renderer(written).name  # an alias, any case
            except UnknownGateway:
                name = ""
            if name not in here:
                print(
                    f"gatebench: --gateways: {written!r} "
                    + ("runs only on the cloud path" if name else "is not a gateway")
                    + f"; here: {', '.join(here)}",
                    file=sys.stderr,
                )
                return None
            names.append(name)
        if not names:
            print(
                f"gatebench: --gateways: {text!r} names no gateway; name one or more, "
                f"comma-separated (here: {', '.join(here)}), or leave the option out to measure "
                "every gateway installed here",
                file=sys.stderr,
            )
            return None
        return tuple(dict.fromkeys(names)), ()
    missing = tuple(r.name for r in native if r.available_here() is not None)
    return tuple(r.name for r in native if r.name not in missing), missing


def run_scale(args: argparse.Namespace) -> int:
    return _run(args, "scale")


def run_change(args: argparse.Namespace) -> int:
    return _run(args, "change-under-load")


def _run(args: argparse.Namespace, kind: str) -> int:
    from gatebench.core.scaleplan import ChangeSpec, change_size_problem, change_window_problem
    from gatebench.kinds._live._stages import ScaleRequest
    from gatebench.run import RunOptions

    result = read(args)
    result.raise_for_errors()
    api = result.api
    assert api is not None
    if not distinct_routes(api):  # nothing to grow: said before anything starts, located
        empty = Problem("/paths", "the description has no operation to replicate")
        raise PlanError([result.reader.locate(empty)] if result.reader else [empty])
    if result.benchmark_loc is not None:
        refused = scale_problems(
            result.benchmark, result.benchmark_loc.pointer, result.benchmark_loc.doc
        )
        if refused:
            reader = result.reader
            raise PlanError([reader.locate(p) for p in refused] if reader else refused)
        try:  # the rest of the section is not read here, but its problems are not hidden
            load_plan(result)
        except PlanError as exc:
            first = exc.problems[0].format() if exc.problems else str(exc)
            print(
                f"gatebench: note: the benchmark section has {counted(len(exc.problems), 'problem')}"
                f" (`gatebench validate` lists them; the first: {first}); this run reads only its "
                "tls, backend.replicas and fault, and goes on",
                file=sys.stderr,
            )
    settings = LoadSettings(
        rate=args.rate,
        duration_s=args.duration,
        warmup_s=args.warmup,
        deadline_s=args.deadline,
    )
    change = None
    if kind == "change-under-load":
        late = change_window_problem(args.change_after, args.window, args.duration)
        if late is not None:
            print(f"gatebench: --change-after, --window, --duration: {late}", file=sys.stderr)
            return 2
        large = change_size_problem(args.routes, args.add)
        if large is not None:
            print(f"gatebench: --routes, --add: {large}", file=sys.stderr)
            return 2
        change = ChangeSpec(args.routes, args.add, args.change_after, args.window)
    chosen = _gateways(args.gateways)
    if chosen is None:
        return 2
    gateways, missing = chosen
    if not gateways:
        print(
            "gatebench: no gateway is installed here; `gatebench doctor` says how to install them",
            file=sys.stderr,
        )
        return 2
    request = ScaleRequest(
        gateways=gateways,
        sizes=args.routes if kind == "scale" else (),
        settings=settings,
        change=change,
    )
    digest = spec_digest(args.spec)
    results = Path(args.results)
    options = RunOptions(results_dir=results, run_id=claim_run_id(results, digest))
    outcome, location = run_here(
        args, kind, api, request, digest, options, kept="what was measured so far is in"
    )
    record = outcome.record
    print(f"Run {record.run_id}: {record.status} ({outcome.wall_s:.0f}s)")
    if outcome.report is not None:  # the run's document (ScaleScore), the one its files hold
        from gatebench.kinds._live._report import scale_text

        lines = scale_text(outcome.report)
        for line in [*lines, ""] if lines else []:
            print(line)
    for line in target_error_lines(record):
        print(line)
    for line in outcome.notes:
        print(f"Note: {line}")
    if missing:
        print(
            f"Not measured, not installed here: {', '.join(missing)} (`gatebench doctor` says how "
            "to install them; --gateways names the gateways to measure)"
        )
    print(f"Report: {outcome.run_dir}/scale.html (and scale.json)")
    print(
        f"Stored in {location}; `gatebench serve{store_flag(location)}` shows it on the dashboard."
    )
    return 0 if str(record.status) == "done" else 3


__all__ = ["add_change_arguments", "add_scale_arguments", "run_change", "run_scale"]
