"""The metrics gatebench measures per (target, workload, repetition), and which way is better.

This list is the AGE paper's (§IV-B: throughput, min, mean, max, std dev, p50, p90, p95, p99)
plus the error rate its tables report. Latencies are milliseconds; Gatling records whole
milliseconds, so a latency is never more precise than 1 ms.
"""

from __future__ import annotations

from typing import Literal

Direction = Literal["lower", "higher"]

METRICS: dict[str, Direction] = {
    "throughput": "higher",
    "min": "lower",
    "mean": "lower",
    "max": "lower",
    "stddev": "lower",
    "p50": "lower",
    "p90": "lower",
    "p95": "lower",
    "p99": "lower",
    "error_pct": "lower",
}
"""Metric name → direction. Order is the report's column order."""

LATENCY_METRICS = tuple(m for m in METRICS if m not in ("throughput", "error_pct"))
"""The metrics that are latencies (milliseconds), in the report's order."""

UNITS = {"throughput": "req/s", "error_pct": "%"} | dict.fromkeys(LATENCY_METRICS, "ms")

COST_METRICS: dict[str, Direction] = {
    "req_per_cpu_s": "higher",
    "gateway_rss_mb": "lower",
}
"""What a gateway costs (gatebench.core.resources), beside the paper's metrics: requests per
second of gateway CPU, and the gateway's peak resident memory. Not among the paper's metrics,
so the ``paper`` score never uses them; the ``robust`` profile scores them when the plan gives
them a weight (docs/scoring.md)."""

COST_UNITS = {"req_per_cpu_s": "req/CPU-s"} | {
    f"{role}_{kind}": unit
    for role in ("gateway", "backend", "engine")
    for kind, unit in (("cpu_s", "CPU-s"), ("rss_mb", "MB"))
}
"""Units of the cost metrics and of each role's CPU seconds and peak resident memory."""
