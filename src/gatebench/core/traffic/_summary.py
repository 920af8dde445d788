"""What an import found, in words (``gatebench import`` prints it) and as data (``--stats``):
the traffic read, the share matched, the unmatched paths (a finding about the description),
the operation mix, the arrival rate over time with its peaks and burstiness, the inter-arrival
times, and per operation its statuses, request sizes and parameter cardinalities.

Values never appear here unless the user kept them: paths that matched nothing are shown with
every segment that is neither the description's nor a short plain word replaced (``{n}``,
``{uuid}``, ``{id}``, ``{x}``), without their matrix parameters and their query
(:func:`gatebench.core.traffic._match.path_shape`).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gatebench.core.stats import counted
from gatebench.core.traffic._match import path_shape
from gatebench.core.traffic._stats import OperationStats, TrafficStats
from gatebench.core.traffic._yaml import one_line

if TYPE_CHECKING:
    from gatebench.core.traffic import TrafficImport

SHOWN_UNMATCHED = 10


def _clock(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _gap(seconds: float) -> str:
    """An inter-arrival time: ``12.5 ms``, ``1.14 s`` (never ``1.14e+03 ms``)."""
    return f"{seconds * 1000:.3g} ms" if seconds < 0.9995 else _duration(seconds)


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"


def unmatched_shapes(stats: TrafficStats) -> list[tuple[str, str, str, int]]:
    """(method, path shape, reason, requests), most frequent first."""
    _, _, misses = stats.misses()
    shapes: Counter[tuple[str, str, str]] = Counter()
    for (method, path, reason), count in misses.items():
        shapes[(method, path_shape(path, stats.matcher.literals), reason)] += count
    return [(m, p, r, c) for (m, p, r), c in shapes.most_common(SHOWN_UNMATCHED)]


def curve_summary(stats: TrafficStats) -> dict[str, Any]:
    """The whole traffic's arrival rate: mean, peaks, and how bursty it is (the variance of the
    per-step counts over their mean: 1 for Poisson arrivals, above for bursts)."""
    total = stats.total_curve()
    if not total:
        return {}
    first, last = min(total), max(total)
    steps = last - first + 1
    counts = [total.get(s, 0) for s in range(first, last + 1)]
    mean = sum(counts) / steps
    variance = sum((c - mean) ** 2 for c in counts) / steps
    peaks = sorted(range(steps), key=lambda i: -counts[i])[:3]
    step = stats.step
    out: dict[str, Any] = {
        "step_s": step,
        "steps": steps,
        "mean_per_s": mean / step,
        "peak_per_s": counts[peaks[0]] / step,
        "peaks": [{"at": _clock((first + i) * step), "per_s": counts[i] / step} for i in peaks],
        "dispersion": variance / mean if mean > 0 else 0.0,
    }
    gaps = stats.gap_percentiles(0.5, 0.9, 0.99)
    if gaps is not None:
        out["inter_arrival_s"] = {"p50": gaps[0], "p90": gaps[1], "p99": gaps[2]}
    return out


def _op_dict(
    op_id: str, method: str, path: str, stats: OperationStats, matched: int
) -> dict[str, Any]:
    statuses = sum(stats.statuses.values())
    out: dict[str, Any] = {
        "operation": op_id,
        "method": method,
        "path": path,
        "requests": stats.requests,
        "share_pct": 100.0 * stats.requests / matched if matched else 0.0,
        "statuses": {code: 100.0 * n / statuses for code, n in stats.statuses.most_common()}
        if statuses
        else {},
        "parameters": [],
    }
    if stats.sizes:
        out["request_bytes"] = {
            "median": _quantile(stats.sizes, 0.5),
            "p90": _quantile(stats.sizes, 0.9),
            "max": max(stats.sizes),
        }
    for where, table in (("path", stats.path_values), ("query", stats.query_values)):
        for name, counts in table.items():
            top = counts.top(10)
            out["parameters"].append(
                {
                    "name": name,
                    "in": where,
                    "distinct": counts.distinct,
                    "exact": counts.exact,
                    "top10_share_pct": 100.0 * sum(c for _, c in top) / counts.total
                    if counts.total
                    else 0.0,
                }
            )
    for name in sorted(stats.secret_queries):
        out["parameters"].append({"name": name, "in": "query", "secret": True})
    return out


def _quantile(values: Counter[int], q: float) -> int:
    total = sum(values.values())
    seen = 0
    for value in sorted(values):
        seen += values[value]
        if seen >= q * total:
            return value
    return 0


def import_stats(result: TrafficImport) -> dict[str, Any]:
    """Everything derived, as data (no value the user did not keep)."""
    out: dict[str, Any] = {"files": result.files, "format": result.format}
    stats = result.stats
    if stats is None:
        out["unsupported"] = result.unsupported
        return out
    unmatched, broken, _ = stats.misses()
    out["requests"] = {
        "read": stats.read,
        "matched": stats.matched,
        "matched_pct": 100.0 * stats.matched / stats.read if stats.read else 0.0,
        "unmatched": unmatched,
        "not_requests": broken,
        "outside_window": stats.outside,
        "skipped_lines": result.skips.count,
    }
    if stats.first is not None and stats.last is not None:
        out["span"] = {"start": _clock(stats.first), "end": _clock(stats.last)}
    total = stats.total_curve()
    if result.window is not None and total and result.window != (min(total), max(total)):
        low, high = result.window  # a part of the traffic (--window busiest:...): which
        out["replayed"] = {
            "start": _clock(low * stats.step),
            "end": _clock((high + 1) * stats.step),
            "requests": sum(total.get(s, 0) for s in range(low, high + 1)),
        }
    out["arrivals"] = curve_summary(stats)
    per_op = stats.operation_stats()
    out["operations"] = [
        _op_dict(op.operation_id, op.method, op.route_path, s, stats.matched)
        for op, s in sorted(
            zip(stats.matcher.operations, per_op, strict=True), key=lambda x: -x[1].requests
        )
        if s.requests
    ]
    out["unmatched"] = [
        {"method": m, "path": p, "reason": r, "requests": c}
        for m, p, r, c in unmatched_shapes(stats)
    ]
    return out


def describe_import(result: TrafficImport) -> list[str]:
    """The import's findings, a line each (:func:`one_line`: they quote the traffic)."""
    return [one_line(line) for line in _findings(result)]


def _findings(result: TrafficImport) -> list[str]:
    lines: list[str] = []
    data = import_stats(result)
    files = ", ".join(result.files)
    if result.stats is None:
        section = result.plan.section
        lines.append(
            f"read {files} (JMeter plan): {counted(section['traffic']['requests'], 'HTTP sampler')}, "
            f"{section['traffic']['matched']} matched to operations"
        )
        for item in result.unsupported:
            lines.append(f"  {item}")
        return lines
    requests = data["requests"]
    span = data.get("span")
    when = f", {span['start']} → {span['end']} UTC" if span else ""
    lines.append(f"read {requests['read']:,} requests from {files} ({result.format}){when}")
    if result.skips.count:
        lines.append(f"skipped {counted(result.skips.count, 'line')}:")
        for source, line, reason in result.skips.shown:
            where = f"{source}:{line}" if line else source
            lines.append(f"  {where}: {reason}")
        for reason, count in sorted(result.skips.by_reason.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {count:,} × {reason}")
    if requests["outside_window"]:
        lines.append(f"left {requests['outside_window']:,} requests outside the window")
    replayed = data.get("replayed")
    if replayed:
        lines.append(
            f"replays {replayed['start']} → {replayed['end']} UTC, the busiest window: "
            f"{counted(replayed['requests'], 'request')} of those read"
        )
    lines.append(
        f"matched {requests['matched']:,} ({requests['matched_pct']:.1f} %) to "
        f"{counted(len(data['operations']), 'operation')} of the description"
    )
    if requests["unmatched"] or requests["not_requests"]:
        lines.append(
            f"{counted(requests['unmatched'], 'request')} "
            + ("matches" if requests["unmatched"] == 1 else "match")
            + " no operation (a finding about the "
            "description: the gateways answer them 404), most frequent:"
        )
        for item in data["unmatched"]:
            why = "another method is described" if item["reason"] == "method" else "no route"
            lines.append(f"  {item['requests']:>10,}  {item['method']} {item['path']}  ({why})")
        if requests["not_requests"]:
            lines.append(f"  {requests['not_requests']:>10,}  lines with no HTTP request line")
    arrivals = data["arrivals"]
    if arrivals:
        peaks = ", ".join(f"{p['per_s']:,.4g}/s at {p['at']}" for p in arrivals["peaks"])
        lines.append(
            f"arrivals: mean {arrivals['mean_per_s']:,.4g}/s over "
            f"{_duration(arrivals['steps'] * arrivals['step_s'])}; peaks {peaks}"
        )
        dispersion = arrivals["dispersion"]
        shape = (
            "bursty"
            if dispersion > 1.5
            else "smoother than random arrivals"
            if dispersion < 0.75
            else "close to random (Poisson) arrivals"
        )
        lines.append(
            f"  dispersion of the per-{arrivals['step_s']:g} s counts (variance / mean) "
            f"{dispersion:.3g}: {shape}"
        )
        gaps = arrivals.get("inter_arrival_s")
        if gaps:
            lines.append(
                "  inter-arrival times: " + ", ".join(f"{k} {_gap(v)}" for k, v in gaps.items())
            )
        else:
            lines.append("  inter-arrival times: the log has times to the second only")
    lines.append("operation mix:")
    for op in data["operations"]:
        statuses = ", ".join(f"{k} {v:.1f} %" for k, v in list(op["statuses"].items())[:3])
        lines.append(
            f"  {op['share_pct']:5.1f} %  {op['requests']:>10,}  {op['method']} {op['path']}"
            f"  ({op['operation']}; {statuses})"
        )
        for p in op["parameters"]:
            if p.get("secret"):
                lines.append(f"           {p['in']} {p['name']}: named like a secret, never kept")
                continue
            approx = "" if p["exact"] else " (estimated)"
            lines.append(
                f"           {p['in']} {p['name']}: {p['distinct']:,}{approx} distinct; "
                f"the 10 most frequent carry {p['top10_share_pct']:.1f} %"
            )
        if "request_bytes" in op and op["request_bytes"]["max"]:
            b = op["request_bytes"]
            lines.append(
                f"           request bytes: median {b['median']:,}, p90 {b['p90']:,}, max {b['max']:,}"
            )
    return lines


__all__ = ["curve_summary", "describe_import", "import_stats", "path_shape"]
