"""``gatebench import SPEC TRAFFIC...``: recorded traffic (access logs, HAR files, a JMeter
plan) as a benchmark plan that replays it (docs/input.md, "From your traffic")."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from datetime import datetime
from pathlib import Path

from gatebench.cli._common import add_spec_arguments, print_problems, read
from gatebench.core.errors import TrafficError
from gatebench.core.plan import Plan, load_plan
from gatebench.core.stats import counted
from gatebench.core.traffic import (
    FORMATS,
    ImportOptions,
    KeepValues,
    Window,
    import_traffic,
    spec_reference,
)
from gatebench.core.traffic._summary import describe_import, import_stats
from gatebench.core.units import format_duration, parse_duration


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_spec_arguments(parser)
    parser.add_argument(
        "traffic",
        metavar="TRAFFIC",
        nargs="+",
        help="access logs (plain or gzip, several in any order), HAR files, or one .jmx",
    )
    parser.add_argument(
        "--out",
        metavar="PLAN",
        help="where to write the plan (default: beside SPEC, NAME.traffic.yaml)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="the traffic's format (default: recognised from the files)",
    )
    parser.add_argument(
        "--log-format",
        metavar="TEMPLATE",
        help="the nginx log_format that wrote the log ('$remote_addr - ... $request_time', or "
        "the whole log_format line)",
    )
    parser.add_argument(
        "--step", type=_duration, default=1.0, help="the arrival curve's resolution (default 1s)"
    )
    parser.add_argument(
        "--window",
        metavar="WINDOW",
        help="replay part of the traffic: busiest:10m (the busiest 10 minutes), or "
        "START/END (ISO times, UTC unless they say)",
    )
    parser.add_argument(
        "--keep-values",
        nargs="?",
        const="*",
        metavar="NAMES",
        help="keep the recorded parameter values (all, or the comma-separated names); by "
        "default they are replaced by synthetic ones with the same frequencies",
    )
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply every arrival count (default 1)"
    )
    parser.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="replay N times faster: the same requests in less time",
    )
    parser.add_argument(
        "--min-requests",
        type=int,
        default=1,
        help="leave out operations with fewer requests (default 1)",
    )
    parser.add_argument("--stats", metavar="FILE", help="also write what was derived, as JSON")


def _duration(text: str) -> float:
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError("expected a duration above 0")
    return value


def _epoch(text: str) -> float:
    stamp = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        from datetime import UTC

        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def window_of(text: str | None) -> Window:
    if not text:
        return Window()
    if text.startswith("busiest:"):
        try:
            return Window(busiest=parse_duration(text.removeprefix("busiest:")))
        except ValueError as exc:
            raise TrafficError(f"--window: {exc}") from None
    start, sep, end = text.partition("/")
    try:
        if not sep:
            raise ValueError("expected START/END")
        window = Window(start=_epoch(start), end=_epoch(end))
    except ValueError as exc:
        raise TrafficError(
            f"--window: expected busiest:DURATION or START/END (ISO 8601), got {text!r} ({exc})"
        ) from None
    assert window.start is not None and window.end is not None
    if window.end <= window.start:
        raise TrafficError("--window: END must come after START")
    return window


def _keep(text: str | None) -> KeepValues:
    if text is None:
        return KeepValues()
    if text == "*":
        return KeepValues(everything=True)
    return KeepValues(names=frozenset(n.strip() for n in text.split(",") if n.strip()))


def _default_out(spec: Path) -> Path:
    if spec.is_file() and spec.suffix not in (".zip",):
        return spec.with_name(spec.stem + ".traffic.yaml")
    return Path.cwd() / "traffic.yaml"


def run(args: argparse.Namespace) -> int:
    result = read(args)
    result.raise_for_errors()
    assert result.api is not None
    for name, value in (("--scale", args.scale), ("--speed", args.speed)):
        if not 0 < value <= 1000:
            raise TrafficError(f"{name}: expected a number above 0 and at most 1000, got {value:g}")
    spec = Path(args.spec)
    out = Path(args.out) if args.out else _default_out(spec)
    ref = spec_reference(spec, out) if spec.is_file() else None
    options = ImportOptions(
        format=args.format,
        log_format=args.log_format,
        step=args.step,
        window=window_of(args.window),
        keep=_keep(args.keep_values),
        scale=args.scale,
        speed=args.speed,
        min_requests=max(1, args.min_requests),
    )
    imported = import_traffic(result.api, [Path(t) for t in args.traffic], options, spec_ref=ref)
    print_problems(imported.warnings, stream=sys.stderr)
    print("\n".join(describe_import(imported)))
    command = "gatebench import " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    out.write_text(imported.text(command), encoding="utf-8")
    if args.stats:
        stats = import_stats(imported)
        stats["plan"] = str(out)
        Path(args.stats).write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    for note in imported.plan.notes:
        print(f"note: {note}")
    for op, why in imported.plan.left_out:
        print(f"left out: {op}: {why}")
    # the plan is read back as `gatebench run` will read it
    plan = load_plan(result, str(out))
    print_problems(list(plan.warnings), stream=sys.stderr)
    how = f"gatebench run {out}" if ref is not None else f"gatebench run {args.spec} --plan {out}"
    print(
        f"wrote {out}: {counted(len(plan.workloads), 'workload')}, {_load_of(plan)} per target "
        f"and repetition (each operation in its own phase); run it: {how}"
    )
    return 0


def _load_of(plan: Plan) -> str:
    """How much load the plan makes, as read back: the time its timed workloads take, and
    the requests of those bounded by a count (a JMeter loop: how long they take is the
    target's to say)."""
    timed = [w.injection.duration for w in plan.workloads if w.injection.duration is not None]
    counted_only = [
        w.injection.expected_requests or 0 for w in plan.workloads if w.injection.duration is None
    ]
    parts = [f"{format_duration(sum(timed))} of load"] if timed else []
    if counted_only:
        parts.append(f"{counted(sum(counted_only), 'request')} (their time is the target's)")
    return " and ".join(parts)
