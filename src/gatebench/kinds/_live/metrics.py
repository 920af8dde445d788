"""What the scale and change-under-load runs measure, as data (docs/scale.md).

- :class:`ScalePoint`: one gateway at one table size: the configuration's size, the time from
  the process start to the first correct answer of the routes at the start, middle and end of
  the table, resident memory idle and under the constant-rate load, and per position the
  latency percentiles at that load.
- :class:`ChangeOutcome`: one gateway while a new configuration is applied under a
  constant-rate load on routes it already had: every answer that was not 2xx and every
  connection error in the change's window (each with its time from the change), the latency
  before (p99 of the calm seconds) and in the window (max, p99, the worst 100 ms bucket's p99),
  the time until each new route answered correctly, and for a gateway without a live mechanism
  what the restart cost.

Both are computed from :class:`Arrival` records, one per request of the load, whatever engine
sent them; the engine says whether its latencies count from the intended start (an open model
that cannot hide a stall) or from the moment it sent (``measured_from``).

Pure: records in, figures out.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gatebench.core.answers import wrong_answer_kind
from gatebench.core.stats import LatencySummary

BUCKET_MS = 100.0
"""Width of the buckets of the latency-over-time series around a change."""
ERRORS_KEPT = 1000
"""Failed requests listed one by one per change (the count is always exact)."""
MeasuredFrom = Literal["intended start", "send"]
KEPT_SHARE = 0.9
"""A load that sent fewer than this share of the requests its rate and duration call for did
not keep its schedule: the load generator stalled (a machine with no CPU to spare), and an
engine that counts latency from the send hides what the gateway did meanwhile."""


def schedule_problem(requests: int, rate: float, seconds: float, what: str) -> str:
    """Why a load's figures are the load generator's rather than the gateway's (empty: it
    sent what its schedule called for, within :data:`KEPT_SHARE`)."""
    due = rate * seconds
    if due <= 0 or requests >= KEPT_SHARE * due:
        return ""
    return (
        f"tester-bound: the load sent {requests} of the {due:.0f} requests due {what}; the load "
        "generator did not keep its schedule, so these figures are not the gateway's alone"
    )


@dataclass(frozen=True)
class Arrival:
    """One request of a constant-rate load."""

    at_ms: float
    """When it was due (or sent, see ``measured_from``), epoch milliseconds."""
    latency_ms: float
    ok: bool
    """A 2xx answer."""
    route: str
    """Which route of the load (``start``, ``middle``, ``end``, or an operation id)."""
    error: str = ""
    """For a failed request: the status it got, or the connection error."""


@dataclass(frozen=True)
class Latency:
    requests: int
    ko: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    wrong: int = 0
    """Wrong answers (gatebench.core.answers): not OK, and not among ``ko``."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def latency_of(arrivals: Iterable[Arrival]) -> Latency:
    """Percentiles (nearest rank) over every request, failed ones included: a refused request
    took its time too."""
    values, ko, wrong = [], 0, 0
    for a in arrivals:
        values.append(a.latency_ms)
        if a.ok:
            continue
        if wrong_answer_kind(a.error) is None:
            ko += 1
        else:
            wrong += 1
    if not values:
        return Latency(0, 0, None, None, None)
    s = LatencySummary.of(values)
    return Latency(s.count, ko, s.p50, s.p99, s.max, wrong)


@dataclass(frozen=True)
class ScalePoint:
    gateway: str
    routes: int
    config_bytes: int
    start_s: float | None
    """From the process start to the first correct answer of every probed position; None
    when it never answered correctly (see ``problem``)."""
    rss_idle_mb: float | None
    rss_load_mb: float | None
    """The highest resident memory sampled while the load ran."""
    rate: float
    engine: str
    measured_from: MeasuredFrom
    latency: dict[str, Latency] = field(default_factory=dict)
    """Per position (``start``, ``middle``, ``end``)."""
    check_s: float | None = None
    problem: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["latency"] = {k: v.to_dict() for k, v in self.latency.items()}
        return out


@dataclass(frozen=True)
class ChangeOutcome:
    gateway: str
    mechanism: str
    kind: str
    """``signal``, ``file-watch``, ``admin-api``, ``command`` or ``restart``."""
    routes_before: int
    routes_added: int
    upstream_changed: bool
    rate: float
    engine: str
    measured_from: MeasuredFrom
    window_s: float
    """The window after the change in which failures and the spike are counted."""
    before: Latency
    during: Latency
    worst_bucket_p99_ms: float | None
    failures: int
    failure_kinds: dict[str, int]
    failed: list[dict[str, Any]]
    """Up to :data:`ERRORS_KEPT` failed requests: ``{"after_ms", "route", "error"}``, in time
    order (``after_ms``: from the change; negative for a request due before it that ended
    after it, cut off by the change)."""
    new_routes_s: dict[str, float | None]
    """Per new route: seconds from the change to its first correct answer (None: never in
    the deadline)."""
    mechanism_s: float
    """From the trigger to the mechanism's return (a restart: until the new process answered)."""
    check_s: float
    series: list[dict[str, Any]] = field(default_factory=list)
    """Per bucket of :data:`BUCKET_MS` around the change: ``{"t_ms", "requests", "ko",
    "wrong", "p99_ms"}`` (``t_ms`` from the change)."""
    problem: str = ""
    window_loaded_s: float | None = None
    """The part of the window the load ran through (None: all of it, or not known): a change
    that came late has a window that runs past the load's end, and only this part's requests
    were due (the tester-bound check counts over it)."""

    @property
    def all_new_routes_answered(self) -> bool:
        return all(v is not None for v in self.new_routes_s.values())

    @property
    def slowest_new_route_s(self) -> float | None:
        values = list(self.new_routes_s.values())
        if not values or any(v is None for v in values):
            return None
        return max(v for v in values if v is not None)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["before"], out["during"] = self.before.to_dict(), self.during.to_dict()
        out["all_new_routes_answered"] = self.all_new_routes_answered
        out["slowest_new_route_s"] = self.slowest_new_route_s
        # what the report shows of new_routes_s, kept beside it: a stored copy may hold a
        # bounded part of it (the cloud path's Firestore document)
        times = [v for v in self.new_routes_s.values() if v is not None]
        out["new_routes"] = len(self.new_routes_s)
        out["new_routes_answered"] = len(times)
        out["new_route_median_s"] = statistics.median(times) if times else None
        return out


def change_outcome(
    arrivals: Sequence[Arrival],
    change_at_ms: float,
    *,
    window_s: float,
    calm_s: float,
    load_end_ms: float | None = None,
    **fields: Any,
) -> ChangeOutcome:
    """Figures around a change at ``change_at_ms`` (epoch ms): the ``calm_s`` seconds before
    it are the reference, the ``window_s`` seconds from it are where failures and the spike
    are counted. A failed request due before the change that ended after it (cut off by the
    change: a reset connection) is one of the window's failures too. ``load_end_ms``: when the
    load's schedule ended (epoch ms; None: after the window); no request was due after it, so
    the requests due in the window are counted up to it (``window_loaded_s``). ``fields``: the
    rest of :class:`ChangeOutcome`."""
    end_ms = change_at_ms + window_s * 1000.0
    calm = [a for a in arrivals if change_at_ms - calm_s * 1000.0 <= a.at_ms < change_at_ms]
    window = [a for a in arrivals if change_at_ms <= a.at_ms < end_ms]
    cut_off = [a for a in arrivals if not a.ok and a.at_ms < change_at_ms <= a.at_ms + a.latency_ms]
    loaded_s = window_s
    if load_end_ms is not None and load_end_ms < end_ms:
        loaded_s = max(0.0, (load_end_ms - change_at_ms) / 1000.0)
        fields["window_loaded_s"] = round(loaded_s, 3)
    what = "in the window after the change"
    if loaded_s < window_s:
        what += f" (its first {loaded_s:g} s, until the load ended)"
    stalled = schedule_problem(len(window), float(fields.get("rate") or 0.0), loaded_s, what)
    if stalled:
        fields["problem"] = "; ".join(p for p in (fields.get("problem", ""), stalled) if p)
    new_routes = fields.get("new_routes_s") or {}
    never = sum(1 for v in new_routes.values() if v is None)
    if never:  # the change did not deliver what it carried: the run ends partial
        missed = f"{never} of {len(new_routes)} new routes never answered correctly"
        fields["problem"] = "; ".join(p for p in (fields.get("problem", ""), missed) if p)
    failed = sorted([*cut_off, *(a for a in window if not a.ok)], key=lambda a: a.at_ms)
    kinds: dict[str, int] = {}
    for a in failed:
        # a wrong answer's own words name its request: counted by its kind
        kind = wrong_answer_kind(a.error)
        key = f"wrong answer ({kind})" if kind else a.error or "failed"
        kinds[key] = kinds.get(key, 0) + 1
    return ChangeOutcome(
        window_s=window_s,
        before=latency_of(calm),
        during=latency_of(window),
        worst_bucket_p99_ms=max(
            (b["p99_ms"] for b in buckets(window, change_at_ms) if b["p99_ms"] is not None),
            default=None,
        ),
        failures=len(failed),
        failure_kinds=dict(sorted(kinds.items())),
        failed=[
            {"after_ms": round(a.at_ms - change_at_ms, 3), "route": a.route, "error": a.error}
            for a in failed[:ERRORS_KEPT]
        ],
        series=buckets(
            [a for a in arrivals if change_at_ms - calm_s * 1000.0 <= a.at_ms < end_ms],
            change_at_ms,
        ),
        **fields,
    )


def buckets(
    arrivals: Iterable[Arrival], origin_ms: float, width_ms: float = BUCKET_MS
) -> list[dict[str, Any]]:
    """Requests grouped by when they started, in ``width_ms`` buckets from ``origin_ms``
    (negative ``t_ms`` before it), empty buckets left out, in time order."""
    groups: dict[int, list[Arrival]] = {}
    for a in arrivals:
        groups.setdefault(int((a.at_ms - origin_ms) // width_ms), []).append(a)
    out = []
    for key in sorted(groups):
        lat = latency_of(groups[key])
        out.append(
            {
                "t_ms": key * width_ms,
                "requests": lat.requests,
                "ko": lat.ko,
                "wrong": lat.wrong,
                "p99_ms": lat.p99_ms,
            }
        )
    return out


def position_latency(arrivals: Iterable[Arrival]) -> dict[str, Latency]:
    """Per route label, the latency of its requests."""
    by: dict[str, list[Arrival]] = {}
    for a in arrivals:
        by.setdefault(a.route, []).append(a)
    return {route: latency_of(items) for route, items in sorted(by.items())}


def scale_rows(points: Iterable[ScalePoint]) -> list[dict[str, Any]]:
    """Flat rows (gateway, routes, metric, value) for CSV/BigQuery-style export: per point its
    figures, per position its p50, p99 and the requests that were not 2xx or got a wrong
    answer."""
    rows: list[dict[str, Any]] = []
    for p in points:
        base = {"gateway": p.gateway, "routes": p.routes}
        for metric, value in (
            ("config_bytes", p.config_bytes),
            ("start_s", p.start_s),
            ("rss_idle_mb", p.rss_idle_mb),
            ("rss_load_mb", p.rss_load_mb),
        ):
            rows.append({**base, "metric": metric, "value": value})
        for position, lat in p.latency.items():
            # the failed requests too, as the table's "not 2xx" and "wrong answers" count them
            for metric, value in (
                ("p50_ms", lat.p50_ms),
                ("p99_ms", lat.p99_ms),
                ("not_2xx", lat.ko),
                ("wrong_answers", lat.wrong),
            ):
                rows.append({**base, "metric": f"{position}_{metric}", "value": value})
    return rows


def files_bytes(files: Mapping[str, str]) -> int:
    """A rendered configuration's size: its files' UTF-8 bytes."""
    return sum(len(text.encode("utf-8")) for text in files.values())


def rss_mb(samples: Mapping[float, int] | Sequence[int | None]) -> float | None:
    """The highest of resident-memory samples in bytes, in MB (None: no sample; a None sample
    is memory read elsewhere: a gateway VM's meter)."""
    raw = list(samples.values()) if isinstance(samples, Mapping) else list(samples)
    values = [v for v in raw if v is not None]
    return round(max(values) / (1024 * 1024), 2) if values else None


__all__ = [
    "BUCKET_MS",
    "ERRORS_KEPT",
    "KEPT_SHARE",
    "Arrival",
    "ChangeOutcome",
    "Latency",
    "MeasuredFrom",
    "ScalePoint",
    "buckets",
    "change_outcome",
    "files_bytes",
    "latency_of",
    "position_latency",
    "rss_mb",
    "scale_rows",
    "schedule_problem",
]
