"""Recorded traffic as the workload: access logs, HAR files and JMeter plans become an ordinary
plan (docs/input.md, "From your traffic").

:func:`import_traffic` reads the files (access logs: nginx/Apache ``combined`` and ``common``,
with or without a request time, an nginx ``log_format``, Envoy's default, JSON lines; plain
or gzip, several in time order; HAR 1.2; JMeter ``.jmx``), matches every request to an
operation of the description by method and path template with the gateways' own routing
(``_match``), derives the operation mix, the arrival curve, the inter-arrival times, and per
operation the status mix, request sizes and parameter value distributions (``_stats``), and
writes a plan that replays them (``_plan``; a JMeter plan: ``_jmx``). Pure: no process, no
network (a URL in the input is data), bounded in memory and time whatever the input
(``_logs``).

The package: ``_formats`` (log formats as templates), ``_logs`` (files, chunks, columns),
``_har``, ``_jmx``, ``_match``, ``_stats``, ``_plan``, ``_yaml`` (the plan as text).
"""

from __future__ import annotations

import math
import posixpath
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gatebench.core.errors import Problem, TrafficError
from gatebench.core.ir import Api
from gatebench.core.stats import counted
from gatebench.core.traffic._formats import (
    BUILTIN,
    DESCRIPTIONS,
    FormatError,
    LogFormat,
    builtin,
    compile_format,
)
from gatebench.core.traffic._har import HarError, read_har
from gatebench.core.traffic._jmx import JmxError, read_jmx
from gatebench.core.traffic._logs import (
    MAX_EPOCH,
    OTHER_HOST,
    OUT_OF_RANGE,
    Chunk,
    Skips,
    TrafficFileError,
    json_columns,
    open_binary,
    read_chunks,
    read_columns,
)
from gatebench.core.traffic._match import Matched, Matcher, path_shape
from gatebench.core.traffic._plan import (
    KeepValues,
    OperationCurve,
    PlanResult,
    build_section,
    format_step,
)
from gatebench.core.traffic._stats import TrafficStats
from gatebench.core.traffic._yaml import checked, one_line, plan_text

FORMATS = ("auto", *BUILTIN, "nginx", "json", "har", "jmx")
"""What ``--format`` accepts (``nginx`` needs ``--log-format``)."""
SNIFF_LINES = 50
MAX_FILES = 1000


@dataclass(frozen=True)
class Window:
    """Which part of the traffic the plan replays: the busiest ``length`` seconds, or from
    ``start`` to ``end`` (epoch seconds), or everything (neither)."""

    busiest: float | None = None
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class ImportOptions:
    format: str = "auto"
    log_format: str | None = None
    step: float = 1.0
    window: Window = field(default_factory=Window)
    keep: KeepValues = field(default_factory=KeepValues)
    scale: float = 1.0
    speed: float = 1.0
    min_requests: int = 1


@dataclass
class TrafficImport:
    """What an import read, derived and wrote."""

    files: list[str]
    format: str
    stats: TrafficStats | None
    plan: PlanResult
    skips: Skips
    warnings: list[Problem]
    window: tuple[int, int] | None = None
    """The steps replayed, [first, last] (step numbers since 1970)."""
    unsupported: list[str] = field(default_factory=list)
    """JMeter elements left out, each with its place."""

    def text(self, command: str) -> str:
        """The plan file; :class:`TrafficError` when it would not read back as the workloads
        built (then nothing is to be written)."""
        return checked(plan_text(self.plan, command), self.plan)


def _one_line_notes(result: PlanResult) -> PlanResult:
    """The notes and reasons the command line prints as they are, made one line each: they
    may quote the traffic (a JMeter element's name, a parameter's)."""
    result.notes[:] = [one_line(n) for n in result.notes]
    result.left_out[:] = [(one_line(op), one_line(why)) for op, why in result.left_out]
    return result


def _problem(source: str, line: int | None, message: str, severity: str = "error") -> Problem:
    return Problem("", message, severity, line=line or None, source=source)  # type: ignore[arg-type]


def _sniff(path: Path) -> bytes:
    """The first 64 KB of a file (decompressed); what a truncated gzip stream holds of them."""
    out = bytearray()
    with open_binary(path) as stream:
        try:
            while len(out) < 64 * 1024:
                block = stream.read(4096)
                if not block:
                    break
                out += block
        except EOFError:
            pass
        except (OSError, zlib.error) as exc:
            raise TrafficError(
                [Problem("", f"the gzip stream is corrupt at its start ({exc})", source=path.name)]
            ) from None
    return bytes(out[: 64 * 1024])


def detect_kind(paths: Sequence[Path]) -> str:
    """``log``, ``har`` or ``jmx`` from the files' first bytes (and names)."""
    kinds = set()
    for path in paths:
        head = _sniff(path).lstrip(b"\xef\xbb\xbf \t\r\n")
        name = path.name.lower()
        if name.endswith((".jmx", ".jmx.gz")) or head.startswith((b"<?xml", b"<jmeterTestPlan")):
            kinds.add("jmx")
        elif name.endswith((".har", ".har.gz")) or (
            head.startswith(b"{")
            and b'"log"' in head[:2000]
            and b"\n" in head
            and _not_json_line(head)
        ):
            kinds.add("har")
        else:
            kinds.add("log")
    if len(kinds) > 1:
        raise TrafficError(
            [
                Problem(
                    "",
                    "the files are of different kinds (" + ", ".join(sorted(kinds)) + "); import "
                    "access logs, HAR files or a JMeter plan, one kind at a time",
                )
            ]
        )
    return kinds.pop()


def _not_json_line(head: bytes) -> bool:
    import json

    first = head.split(b"\n", 1)[0]
    try:
        json.loads(first)
    except ValueError:
        return True
    return False


def detect_log_format(path: Path) -> str:
    """The built-in format the first lines of an access log fit best; :class:`TrafficError`
    when none fits."""
    lines = [line for line in _sniff(path).split(b"\n")[:SNIFF_LINES] if line.strip()]
    if lines and sum(1 for line in lines if line.lstrip().startswith(b"{")) * 2 > len(lines):
        return "json"
    best, best_hits = None, 0
    for name in (
        "combined+time",
        "combined+time_us",
        "combined",
        "envoy",
        "common+time",
        "common+time_us",
        "common",
    ):
        fmt = builtin(name)
        hits = sum(1 for line in lines if fmt.regex.match(line.rstrip(b"\r")) and _fits(fmt, line))
        if hits > best_hits:
            best, best_hits = name, hits
    if best is None or best_hits * 2 < len(lines):
        shown = lines[0][:120].decode("latin-1") if lines else ""
        raise TrafficError(
            [
                Problem(
                    "",
                    "the lines are in no format gatebench knows (combined, common, Envoy's "
                    f"default, JSON lines): the first reads {shown!r}; give the nginx "
                    "log_format that wrote them with --log-format",
                    source=path.name,
                    line=1,
                )
            ]
        )
    return best


def _fits(fmt: LogFormat, line: bytes) -> bool:
    """The trailing time variants fit only a line whose extra field is a number of the kind."""
    match = fmt.regex.match(line.rstrip(b"\r"))
    if match is None:
        return False
    duration = match.groupdict().get("duration")
    if fmt.name.endswith("+time"):
        return (
            duration is not None and b"." in duration and duration.replace(b".", b"", 1).isdigit()
        )
    if fmt.name.endswith("+time_us"):
        return duration is not None and duration.isdigit()
    return True


def _first_time(path: Path, fmt: LogFormat | None) -> float:
    """The arrival time of a file's first readable request (for ordering several files)."""
    skips = Skips()
    data = _sniff(path)
    end = data.rfind(b"\n")
    chunk = Chunk(1, data[: end + 1] if end >= 0 else data + b"\n")
    cols = (
        json_columns(chunk, path.name, skips, {})
        if fmt is None
        else read_columns(fmt, chunk, path.name, skips)
    )
    return min(cols.arrival) if cols.arrival else math.inf


def import_traffic(
    api: Api, paths: Sequence[Path], options: ImportOptions, *, spec_ref: str | None
) -> TrafficImport:
    """Read ``paths`` and write the plan that replays them. Raises :class:`TrafficError`
    with located problems when the files cannot be read or nothing is left to replay."""
    if not paths:
        raise TrafficError([Problem("", "no traffic file given")])
    if len(paths) > MAX_FILES:
        raise TrafficError(
            [Problem("", f"at most {MAX_FILES:,} files at once, got {len(paths):,}")]
        )
    for path in paths:
        if not path.is_file():
            raise TrafficError([Problem("", "no such file", source=str(path))])
    kind = options.format if options.format in ("har", "jmx") else None
    if options.format == "auto":
        kind = detect_kind(paths)
    kind = kind or "log"
    if kind == "jmx":
        return _import_jmx(api, paths, options, spec_ref)
    try:
        matcher = Matcher(api)
    except Exception as exc:  # UnsupportedFeature: routes no gateway can express
        problems = getattr(exc, "problems", None)
        raise TrafficError(problems or [Problem("", str(exc))]) from None
    window = None
    if options.window.start is not None and options.window.end is not None:
        window = (options.window.start, options.window.end)
    stats = TrafficStats(
        matcher, step=options.step, window=window, secret_names=_api_secret_names(api)
    )
    skips = Skips()
    warnings: list[tuple[str, int | None, str]] = []
    if kind == "har":
        fmt_name = "har"
        for path in paths:
            try:
                stats.add(read_har(path, path.name, skips))
            except HarError as exc:
                raise TrafficError(
                    [Problem(exc.pointer, exc.message, line=exc.line, source=path.name)]
                ) from None
    else:
        fmt_name = _log_format_name(paths[0], options)
        fmt = _log_format(fmt_name, options)
        ordered = sorted(paths, key=lambda p: _first_time(p, fmt))
        keys: dict[str, str] = {}
        for path in ordered:
            try:
                with open_binary(path) as stream:
                    for chunk in read_chunks(stream, path.name, skips, warnings):
                        if fmt is None:
                            cols = json_columns(chunk, path.name, skips, keys)
                        else:
                            cols = read_columns(fmt, chunk, path.name, skips)
                        stats.add(cols)
            except TrafficFileError as exc:
                raise TrafficError([_problem(exc.source, exc.line, exc.message)]) from None
            except OSError as exc:
                raise TrafficError([_problem(path.name, None, f"cannot be read: {exc}")]) from None
    problems = [_problem(s, line, m, "warning") for s, line, m in warnings]
    if stats.read == 0 and stats.outside_span is not None:
        low, high = stats.outside_span
        raise TrafficError(
            [
                *problems,
                Problem(
                    "",
                    f"no request in the window: the {stats.outside:,} requests read span "
                    f"{iso(low)} to {iso(high)}; choose a --window within that span",
                    source=paths[0].name,
                ),
            ]
        )
    if stats.read == 0 and not skips.count:
        raise TrafficError(
            [*problems, Problem("", "no request in the files", source=paths[0].name)]
        )
    # a line whose time is out of range, or a HAR entry to another host, fits the format: it
    # is counted, not a sign of the wrong format
    misfits = (
        skips.count - skips.by_reason.get(OUT_OF_RANGE, 0) - skips.by_reason.get(OTHER_HOST, 0)
    )
    if stats.read == 0 and not misfits:
        first = skips.shown[0]
        raise TrafficError(
            [
                *problems,
                _problem(
                    first[0],
                    first[1],
                    f"no request left to import: {counted(skips.count, 'line')} skipped, the "
                    f"first: {one_line(first[2])}",
                ),
            ]
        )
    if misfits and misfits * 2 > skips.count + stats.read + stats.outside:
        first = skips.shown[0]
        raise TrafficError(
            [
                _problem(
                    first[0],
                    first[1] or None,
                    f"most lines do not fit the {DESCRIPTIONS.get(fmt_name, fmt_name)} format "
                    f"({skips.count:,} skipped, {stats.read:,} read; the first: "
                    f"{one_line(first[2])}); "
                    "give the format with --format or --log-format",
                )
            ]
        )
    if options.step < 1 and not stats.precise:
        # a step within a second would put each second's requests in its first step and none
        # in the others: bursts the traffic never had
        raise TrafficError(
            [
                *problems,
                Problem(
                    "",
                    f"--step {format_step(options.step)} is finer than the times in the files, "
                    "which are to the second: choose --step 1s or more, or import a log with "
                    "sub-second times (nginx $msec, an ISO 8601 time with a fraction, HAR)",
                    source=paths[0].name,
                ),
            ]
        )
    steps = _replayed_steps(stats, options.window)
    curves = _curves(stats, steps)
    traffic = _traffic_source(paths, fmt_name, stats, steps)
    result = build_section(
        api,
        curves,
        step=stats.step,
        keep=options.keep,
        scale=options.scale,
        speed=options.speed,
        traffic=traffic,
        spec_ref=spec_ref,
        min_requests=options.min_requests,
    )
    if stats.step != options.step:
        result.notes.append(
            f"the traffic spans more steps than gatebench keeps in memory: its curve is kept at "
            f"{format_step(stats.step)} steps; choose a --window to keep {format_step(options.step)}"
        )
    if not result.section["workloads"]:
        raise TrafficError(
            [
                *problems,
                Problem(
                    "",
                    f"no operation of the description is left to replay ({stats.read:,} requests "
                    f"read, {stats.matched:,} matched{_why_nothing(matcher, stats, result.left_out)}",
                    source=paths[0].name,
                ),
            ]
        )
    return TrafficImport(
        files=[p.name for p in paths],
        format=fmt_name,
        stats=stats,
        plan=_one_line_notes(result),
        skips=skips,
        warnings=problems,
        window=steps,
    )


def _why_nothing(matcher: Matcher, stats: TrafficStats, left_out: list[tuple[str, str]]) -> str:
    """Why no operation is left to replay, as the end of a message: why the first operation
    matched was left out (too few requests...); or the requests no operation took, most
    frequent first, and whether the description's base path is what they lack (logged behind
    a gateway that strips it)."""
    if left_out:
        return (
            f"): every operation matched was left out, such as {left_out[0][0]}: {left_out[0][1]}"
        )
    top = stats.misses()[2].most_common(2)
    if not top:
        return ")"
    shapes = [(m, path_shape(p, matcher.literals), n) for (m, p, _), n in top]
    shown = ", ".join(f"{m} {p if len(p) <= 40 else p[:37] + '...'} ({n:,})" for m, p, n in shapes)
    shown = f"; most often unmatched: {shown})"
    (method, path, _), _ = top[0]
    for base in sorted({op.base_path for op in matcher.operations if op.base_path}):
        line = f"{method} {base}{path} HTTP/1.1".encode("latin-1", "replace")
        if isinstance(matcher.resolve(line), Matched):
            return (
                f"{shown}: the description's paths start with {base} (its server URL) and the "
                "logged ones do not; import a log of what clients send"
            )
    return shown


def _api_secret_names(api: Api) -> list[str]:
    """The description's own API key query parameters (never kept, whatever their name)."""
    return sorted(
        {
            s.param_name
            for op in api.operations
            for r in op.security
            for s in r.schemes
            if s.kind == "apiKey" and s.location == "query" and s.param_name
        }
    )


def _log_format_name(first: Path, options: ImportOptions) -> str:
    if options.log_format is not None:
        return "nginx"
    if options.format in ("auto", "har"):
        return detect_log_format(first)
    if options.format == "nginx":
        raise TrafficError([Problem("", "--format nginx needs --log-format (the log_format line)")])
    return options.format


def _log_format(name: str, options: ImportOptions) -> LogFormat | None:
    """The compiled format (None: JSON lines)."""
    if name == "json":
        return None
    try:
        if name == "nginx":
            assert options.log_format is not None
            return compile_format("nginx", _strip_log_format(options.log_format))
        return builtin(name)
    except FormatError as exc:
        raise TrafficError([Problem("", f"--log-format: {exc}")]) from None


def _strip_log_format(text: str) -> str:
    """An nginx ``log_format`` as written in nginx.conf (``log_format main '...' '...';``) or
    only its quoted template."""
    body = text.strip().removesuffix(";").strip()
    if body.startswith("log_format"):
        parts = body.split(None, 2)
        body = parts[2] if len(parts) > 2 else ""
        if body.startswith("escape="):
            body = body.split(None, 1)[1] if " " in body else ""
    pieces = []
    rest = body.strip()
    while rest.startswith(("'", '"')):
        quote = rest[0]
        end = rest.find(quote, 1)
        if end < 0:
            break
        pieces.append(rest[1:end])
        rest = rest[end + 1 :].strip()
    return "".join(pieces) if pieces and not rest else body


def _replayed_steps(stats: TrafficStats, window: Window) -> tuple[int, int] | None:
    """The steps the plan replays: the busiest window, or all the traffic read.

    The busiest window is the one with the most requests an operation takes: health checks
    and 404s are read (and reported) but replay nothing, so they choose no window."""
    total = stats.total_curve()
    if not total:
        return None
    if window.busiest is None:
        return min(total), max(total)
    total = stats.matched_curve() or total
    first, last = min(total), max(total)
    width = max(1, round(window.busiest / stats.step))
    if width >= last - first + 1:
        return first, last
    best_sum, best_start = -1, first
    running = sum(total.get(s, 0) for s in range(first, first + width))
    best_sum = running
    for start in range(first + 1, last - width + 2):
        running += total.get(start + width - 1, 0) - total.get(start - 1, 0)
        if running > best_sum:
            best_sum, best_start = running, start
    return best_start, best_start + width - 1


def _curves(stats: TrafficStats, steps: tuple[int, int] | None) -> list[OperationCurve]:
    out = []
    per_op = stats.operation_stats()
    curves = stats.operation_curves()
    for index, op in enumerate(stats.matcher.operations):
        curve = curves[index]
        if steps is not None:
            curve = {s: c for s, c in curve.items() if steps[0] <= s <= steps[1]}
        if not curve:
            if per_op[index].requests:
                out.append(OperationCurve(op, per_op[index], (), 0))
            continue
        first, last = min(curve), max(curve)
        counts = tuple(curve.get(s, 0) for s in range(first, last + 1))
        out.append(OperationCurve(op, per_op[index], counts, first))
    out.sort(key=lambda c: -c.stats.requests)
    return out


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(min(max(epoch, 0.0), MAX_EPOCH - 1), UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def _traffic_source(
    paths: Sequence[Path], fmt_name: str, stats: TrafficStats, steps: tuple[int, int] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "files": [p.name for p in paths],
        "format": fmt_name,
        "requests": stats.read,
        "matched": stats.matched,
    }
    total = stats.total_curve()
    if steps is not None and total and steps != (min(total), max(total)):
        # a part of the traffic (--window busiest:...): what is replayed, as a window given
        # by START/END is (the requests read in it, from its start to its end)
        low, high = steps
        out["requests"] = sum(c for s, c in total.items() if low <= s <= high)
        out["matched"] = sum(c for s, c in stats.matched_curve().items() if low <= s <= high)
        out["start"] = iso(low * stats.step)
        out["end"] = iso((high + 1) * stats.step)
    elif stats.first is not None and stats.last is not None:
        out["start"] = iso(stats.first)
        out["end"] = iso(stats.last)
    return out


def _import_jmx(
    api: Api, paths: Sequence[Path], options: ImportOptions, spec_ref: str | None
) -> TrafficImport:
    from gatebench.core.traffic._jmx import jmx_section

    if len(paths) != 1:
        raise TrafficError([Problem("", "import one JMeter plan (.jmx) at a time")])
    path = paths[0]
    try:
        test_plan = read_jmx(path)
    except JmxError as exc:
        raise TrafficError(
            [Problem(exc.pointer, exc.message, line=exc.line, source=path.name)]
        ) from None
    try:
        matcher = Matcher(api)
    except Exception as exc:
        problems = getattr(exc, "problems", None)
        raise TrafficError(problems or [Problem("", str(exc))]) from None
    result, problems = jmx_section(
        api, matcher, test_plan, options.keep, spec_ref=spec_ref, source=path.name
    )
    if not result.section.get("workloads"):
        raise TrafficError(
            [
                *problems,
                Problem(
                    "",
                    "no HTTP sampler of the plan matches an operation of the description",
                    source=path.name,
                ),
            ]
        )
    return TrafficImport(
        files=[path.name],
        format="jmx",
        stats=None,
        plan=_one_line_notes(result),
        skips=Skips(),
        warnings=problems,
        unsupported=[u.describe() for u in test_plan.unsupported],
    )


def spec_reference(spec: Path, out: Path) -> str | None:
    """``spec:`` for a plan written to ``out``: the description's path relative to the plan's
    folder when it lies inside it (a benchmark file reads only its own folder), else None."""
    try:
        relative = spec.resolve().relative_to(out.resolve().parent)
    except ValueError:
        return None
    return posixpath.join(*relative.parts)


__all__ = [
    "FORMATS",
    "ImportOptions",
    "KeepValues",
    "TrafficImport",
    "Window",
    "detect_kind",
    "detect_log_format",
    "import_traffic",
    "iso",
    "spec_reference",
]
