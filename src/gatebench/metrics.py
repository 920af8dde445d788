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

UNITS = {"throughput": "req/s", "error_pct": "%"} | {
    m: "ms" for m in METRICS if m not in ("throughput", "error_pct")
}
