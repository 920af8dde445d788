"""``gatebench scale SPEC --routes 10,100,1000`` and ``gatebench change-under-load SPEC``: how
each gateway copes as the API grows, and whether a configuration change under live load drops
requests (docs/scale.md)."""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gatebench.cli._common import ProgressLine, add_quiet_argument, add_spec_arguments, read
from gatebench.cli.run import _store_location
from gatebench.core.errors import GatebenchError, PlanError
from gatebench.core.model import local_run_id
from gatebench.core.renderers import all_renderers, get_renderer
from gatebench.core.routescale import DEFAULT_SIZES, MAX_ROUTES, parse_sizes
from gatebench.kinds._live._plan import scale_problems
from gatebench.local.liveruns import LoadSettings
from gatebench.store import DEFAULT_STORE, open_store


def _positive(kind: type[int] | type[float], upper: float) -> Callable[[str], Any]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not 0 < value <= upper:
            raise argparse.ArgumentTypeError(f"expected more than 0 and at most {upper:g}")
        return value

    return parse


def _sizes(text: str) -> tuple[int, ...]:
    try:
        return parse_sizes(text)
    except GatebenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _common(parser: argparse.ArgumentParser) -> None:
    add_spec_arguments(parser)
    add_quiet_argument(parser)
    parser.add_argument(
        "--gateways",
        metavar="A,B",
        help="the gateways to measure (default: every gateway that runs here)",
    )
    parser.add_argument(
        "--rate",
        type=_positive(float, 100_000),
        default=200.0,
        help="constant arrival rate of the load, requests a second (default 200)",
    )
    parser.add_argument(
        "--duration",
        type=_positive(float, 3600),
        default=10.0,
        metavar="SECONDS",
        help="measured seconds of load per route (scale) or in all (change; default 10)",
    )
    parser.add_argument(
        "--warmup",
        type=_positive(float, 600),
        default=3.0,
        metavar="SECONDS",
        help="warm-up at the same rate before the measured load (default 3)",
    )
    parser.add_argument(
        "--deadline",
        type=_positive(float, 3600),
        default=120.0,
        metavar="SECONDS",
        help="how long a route may take to answer correctly after a start or a change "
        "(default 120)",
    )
    parser.add_argument(
        "--results", default="results", metavar="DIR", help="where run folders go (results/)"
    )
    parser.add_argument(
        "--store",
        metavar="LOCATION",
        help="the result store (default: $GATEBENCH_STORE, else DIR/gatebench.sqlite)",
    )


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scale = sub.add_parser(
        "scale",
        help="memory, start time and latency of each gateway as the API grows",
        description="Replicate the description's routes under distinct prefixes to each size, "
        "boot every gateway on it, and measure the configuration's size, the time from start "
        "to the first correct answer, resident memory idle and under a constant-rate load, "
        "and p50/p99 at that load for the routes at the start, middle and end of the table "
        "(docs/scale.md).",
    )
    _common(scale)
    scale.add_argument(
        "--routes",
        type=_sizes,
        default=DEFAULT_SIZES,
        metavar="N,N,...",
        help=f"table sizes, increasing, at most {MAX_ROUTES:,} (default 10,100,1000,10000)",
    )
    scale.set_defaults(handler=run_scale_command, kind="scale")
    change = sub.add_parser(
        "change-under-load",
        help="apply a new configuration through each gateway's own mechanism under load",
        description="Boot every gateway on the description grown to --routes routes, load "
        "the route at the end of its table at a constant rate, and during the load add --add "
        "routes and move the upstream to a second backend through the gateway's own "
        "mechanism (reload, admin API, watched file, refresh; a restart where it has none): "
        "every failed request, the latency spike and the time until each new route answers "
        "(docs/scale.md).",
    )
    _common(change)
    change.add_argument(
        "--routes", type=_positive(int, MAX_ROUTES), default=100, help="routes before (100)"
    )
    change.add_argument(
        "--add", type=_positive(int, MAX_ROUTES), default=100, help="routes added (100)"
    )
    change.add_argument(
        "--change-after",
        type=_positive(float, 3600),
        default=3.0,
        metavar="SECONDS",
        help="when, into the measured load, the change is applied (default 3)",
    )
    change.add_argument(
        "--window",
        type=_positive(float, 3600),
        default=4.0,
        metavar="SECONDS",
        help="the window after the change in which failures and the spike count (default 4)",
    )
    change.set_defaults(handler=run_scale_command, kind="change-under-load")


def _gateways(text: str | None) -> tuple[str, ...]:
    if not text:
        return tuple(r.name for r in all_renderers() if r.runs_here)
    return tuple(dict.fromkeys(get_renderer(g.strip()).name for g in text.split(",") if g.strip()))


def run_scale_command(args: argparse.Namespace) -> int:
    from gatebench.core.scaleplan import ChangeSpec
    from gatebench.kinds._live._stages import ScaleRequest
    from gatebench.local.runner import run_local
    from gatebench.run import RunOptions

    result = read(args)
    result.raise_for_errors()
    api = result.api
    assert api is not None
    if result.benchmark_loc is not None:
        refused = scale_problems(
            result.benchmark, result.benchmark_loc.pointer, result.benchmark_loc.doc
        )
        if refused:
            reader = result.reader
            raise PlanError([reader.locate(p) for p in refused] if reader else refused)
    settings = LoadSettings(
        rate=args.rate,
        duration_s=args.duration,
        warmup_s=args.warmup,
        deadline_s=args.deadline,
    )
    change = None
    if args.kind == "change-under-load":
        if args.change_after + args.window > args.duration:
            print(
                "gatebench: --change-after plus --window must not pass --duration (the window "
                "after the change is measured under the load)",
                file=sys.stderr,
            )
            return 2
        change = ChangeSpec(args.routes, args.add, args.change_after, args.window)
    request = ScaleRequest(
        gateways=_gateways(args.gateways),
        sizes=args.routes if args.kind == "scale" else (),
        settings=settings,
        change=change,
    )
    spec_path = Path(args.spec)
    digest = hashlib.sha256(spec_path.read_bytes()).hexdigest() if spec_path.is_file() else ""
    digest = digest or hashlib.sha256(str(spec_path).encode()).hexdigest()
    run_id = local_run_id(digest)
    options = RunOptions(results_dir=Path(args.results), run_id=run_id)
    display = ProgressLine(sys.stderr, quiet=args.quiet)
    location = _store_location(args)
    with open_store(location) as store:
        try:
            outcome = run_local(
                args.kind,
                api,
                request,
                spec_uri=str(spec_path.resolve()),
                spec_sha256=digest,
                options=options,
                store=store,
                display=display,
            )
        finally:
            display.finish()
    record = outcome.record
    print(f"Run {record.run_id}: {record.status} ({outcome.wall_s:.0f}s)")
    for target, reason in sorted(record.target_errors.items()):
        print(f"{target}: FAILED: {reason.splitlines()[0]}")
    for line in outcome.notes:
        print(f"Note: {line}")
    store_flag = "" if location == DEFAULT_STORE else f" --store {location}"
    print(f"Report: {outcome.run_dir}/scale.html (and scale.json)")
    print(f"Stored in {location}; `gatebench serve{store_flag}` shows it on the dashboard.")
    return 0 if str(record.status) == "done" else 3


__all__ = ["run_scale_command"]
