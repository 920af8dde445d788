"""Per-phase statistics from raw per-request records, and the per-workload table.

Exact, not sketched, in memory that does not grow with the request count: a phase keeps how
many requests took each latency (Gatling records whole milliseconds, so a phase of 10^8
requests that all finished within a minute holds at most 60,000 counts; wrk's and the
open-model engine's microseconds are kept as they came). Percentiles use the nearest-rank
definition (the smallest value with at least p % of the values at or below it:
``sorted[ceil(p/100 × n) − 1]``, found by walking the counts in order), so every percentile is
a latency that was really observed. The mean and the standard deviation (the population one,
as Gatling reports it) are computed exactly over the counts and rounded once. Gatling records
whole milliseconds, so every latency from it is a whole number of ms: a 0 ms minimum means
"under 1 ms".

Throughput is requests completed per second of the measured phase, where the phase lasts
from its first request's start to its last request's end (at least 1 ms).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from gatebench.core.answers import EVIDENCE_KEPT, evidence, wrong_answer_kind
from gatebench.core.metrics import LATENCY_METRICS, METRICS
from gatebench.core.model import BASELINE, Measurement

PERCENTILES = (50, 90, 95, 99)
ERRORS_KEPT = 10
"""KO reasons a phase's record keeps, the most frequent first."""


@dataclass
class PhaseSample:
    """The raw records of one phase, accumulated while the log is read: counts per latency,
    never a list of every request (module docstring)."""

    counts: Counter[float] = field(default_factory=Counter)
    """Latency (milliseconds: whole ones from Gatling, with microseconds from wrk and the
    open-model engine) → how many requests took exactly that long."""
    ok: int = 0
    ko: int = 0
    first_start: int | None = None
    last_start: int | None = None
    """The latest start: ``last_start - first_start`` is the spread of the start times."""
    last_end: int | None = None
    errors: Counter[str] = field(default_factory=Counter)
    wrong: int = 0
    """Wrong answers (gatebench.core.answers): answered, but not the answer to this request,
    not whole, or not to what was sent; neither OK nor KO."""
    wrong_kinds: Counter[str] = field(default_factory=Counter)
    wrong_evidence: list[str] = field(default_factory=list)
    """The first ``EVIDENCE_KEPT`` wrong answers, in the engine's words."""
    unanswered: int = 0
    """Failed requests the engine measured no time for (of ``ko``): a connection the target
    closed, reset or refused without an answer, as wrk counts its socket errors and as Gatling
    resends one (docs/engine.md, "A connection closed without a response"). They count as
    requests and errors, never in the latency figures: a time of 0 ms would have made the
    target that dropped them the fastest."""

    def add_unanswered(self, reason: str, count: int = 1) -> None:
        """``count`` failed requests of ``reason`` with no time measured."""
        if count > 0:
            self.ko += count
            self.unanswered += count
            self.errors[reason] += count

    def add(self, start: int, end: int, ok: bool, message: str = "") -> None:
        self.counts[end - start] += 1
        if ok:
            self.ok += 1
        elif (kind := wrong_answer_kind(message)) is not None:
            self.add_wrong(kind, message)
        else:
            self.ko += 1
            self.errors[message or "KO"] += 1
        self.widen(start, start, end)

    def widen(self, first_start: int, last_start: int, last_end: int) -> None:
        """The phase's window widened to hold requests started from ``first_start`` to
        ``last_start`` and ended by ``last_end``."""
        if self.first_start is None or first_start < self.first_start:
            self.first_start = first_start
        if self.last_start is None or last_start > self.last_start:
            self.last_start = last_start
        if self.last_end is None or last_end > self.last_end:
            self.last_end = last_end

    def add_wrong(self, kind: str, message: str, count: int = 1) -> None:
        """``count`` wrong answers of ``kind``; the first few kept word for word."""
        self.wrong += count
        self.wrong_kinds[kind] += count
        words = evidence(message)
        # an engine names later wrong answers by their kind alone: those are no evidence
        if len(self.wrong_evidence) < EVIDENCE_KEPT and ":" in words:
            self.wrong_evidence.append(words)

    def merge_wrong(self, other: PhaseSample) -> None:
        """The wrong answers of ``other`` counted here too (several testers' shares)."""
        self.wrong += other.wrong
        self.wrong_kinds.update(other.wrong_kinds)
        room = EVIDENCE_KEPT - len(self.wrong_evidence)
        self.wrong_evidence.extend(other.wrong_evidence[: max(0, room)])

    def add_latency(self, value_ms: float, count: int = 1) -> None:
        """``count`` requests that each took ``value_ms`` (an engine that reports a histogram,
        or records read apart from their status)."""
        if count > 0:
            self.counts[value_ms] += count

    def merge_latencies(self, other: PhaseSample) -> None:
        """Every latency of ``other`` counted here too (several testers' shares of a phase)."""
        self.counts.update(other.counts)

    @property
    def requests(self) -> int:
        return self.ok + self.ko + self.wrong

    @property
    def latency_count(self) -> int:
        return sum(self.counts.values())

    @property
    def latencies(self) -> list[float]:
        """Every latency, sorted: a list as long as the phase's requests, for callers that need
        one (a capacity probe's few thousand); the phase's figures never build it."""
        return [value for value, count in sorted(self.counts.items()) for _ in range(count)]

    @property
    def start_spread_ms(self) -> float:
        if self.first_start is None or self.last_start is None:
            return 0.0
        return float(self.last_start - self.first_start)

    @property
    def duration_ms(self) -> int:
        if self.first_start is None or self.last_end is None:
            return 0
        return max(1, self.last_end - self.first_start)


def nearest_rank(sorted_values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile of already sorted values (0 for no values)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


def nearest_ranks(counts: Mapping[float, int], pcts: Sequence[float]) -> list[float]:
    """The nearest-rank percentiles of the values ``counts`` holds (value → how many times), as
    :func:`nearest_rank` gives them for the sorted list of those values; 0 for no values."""
    n = sum(counts.values())
    if n <= 0:
        return [0.0 for _ in pcts]
    ranks = [min(max(1, math.ceil(p / 100.0 * n)), n) for p in pcts]
    out: list[float | None] = [None] * len(pcts)
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        for i, rank in enumerate(ranks):
            if out[i] is None and seen >= rank:
                out[i] = float(value)
        if all(v is not None for v in out):
            break
    return [float(v) for v in out if v is not None]


def _exact_moments(counts: Mapping[float, int]) -> tuple[float, float]:
    """Mean and population standard deviation of the counted values, computed exactly (every
    float is a fraction) and rounded once: the same figures whatever the order of the
    records, never a sum that drifts with the request count."""
    n = sum(counts.values())
    if n <= 0:
        return 0.0, 0.0
    values = {Fraction(v): c for v, c in counts.items() if c}
    mean = sum((v * c for v, c in values.items()), Fraction(0)) / n
    variance = sum(((v - mean) ** 2 * c for v, c in values.items()), Fraction(0)) / n
    return float(mean), math.sqrt(variance)


@dataclass(frozen=True)
class LatencySummary:
    """The one summary of a set of latencies (ms), as the module's docstring defines it:
    nearest-rank percentiles and exact moments. Every kind's latency figures come from it: a
    phase's (``PhaseStats``), a capacity probe's (``latency``, ``from_send``), a route-scale
    point's and a change window's (``kinds._live.metrics.Latency``)."""

    count: int
    min: float
    mean: float
    max: float
    stddev: float
    p50: float
    p90: float
    p95: float
    p99: float

    @classmethod
    def of_counts(cls, counts: Mapping[float, int]) -> LatencySummary:
        """From counts per latency (a phase's ``PhaseSample.counts``); zeros for none."""
        n = sum(counts.values())
        mean, stddev = _exact_moments(counts)
        p50, p90, p95, p99 = nearest_ranks(counts, PERCENTILES)
        present = [v for v, c in counts.items() if c]
        return cls(
            count=n,
            min=float(min(present)) if n else 0.0,
            mean=mean,
            max=float(max(present)) if n else 0.0,
            stddev=stddev,
            p50=p50,
            p90=p90,
            p95=p95,
            p99=p99,
        )

    @classmethod
    def of(cls, values: Iterable[float]) -> LatencySummary:
        """From the latencies themselves, in any order."""
        return cls.of_counts(Counter(values))


@dataclass(frozen=True)
class PhaseStats(LatencySummary):
    """A phase's figures: its latency summary (every request's, OK or not) and its counts."""

    ok: int
    ko: int
    error_pct: float
    throughput: float
    duration_s: float
    errors: tuple[tuple[str, int], ...]
    wrong: int = 0
    """Wrong answers (not in ``ok`` nor ``ko``: gatebench.core.answers)."""
    wrong_kinds: tuple[tuple[str, int], ...] = ()
    wrong_evidence: tuple[str, ...] = ()
    rate_limited: int = 0
    """Answers that were the plan's rate limit refusing the request (``Phase.refusals``): not in
    ``ok`` nor ``ko``, so not in ``error_pct``."""

    @property
    def requests(self) -> int:
        """Every request of the phase: ``ok + ko + wrong + rate_limited``."""
        return self.count

    def outcomes(self) -> dict[str, Any]:
        """How the phase's requests ended, as each record of a phase keeps it (a
        ``Measurement``, a capacity probe's metrics): the counts, the ``ERRORS_KEPT`` most
        frequent KO reasons and the wrong answers."""
        return {
            "requests": self.requests,
            "ok": self.ok,
            "ko": self.ko,
            "errors": self.errors[:ERRORS_KEPT],
            "wrong_answers": self.wrong,
            "wrong_kinds": self.wrong_kinds,
            "wrong_evidence": self.wrong_evidence,
        }


_STATUS = re.compile(r"(?:\bfound|^status) (\d{3})\b|, (\d{3}) is not less than \d+$")
"""The status a KO reason names: Gatling's and the open-model engine's ``status.find.in(200),
(but actually) found 429``, Gatling's ``status.find.lessThan(400), 429 is not less than 400``
(the check of a workload without ``expect``), wrk's ``status 429, expected 200``."""


def status_of(reason: str) -> int | None:
    """The status of an answer a KO reason reports, or None when it reports no answer (a
    timeout, a refused connection)."""
    found = _STATUS.search(reason)
    return int(found.group(1) or found.group(2)) if found else None


def phase_stats(sample: PhaseSample, refusals: Iterable[int] = ()) -> PhaseStats:
    """A phase's figures. ``refusals``: the statuses that are the plan's rate limit refusing a
    request in this phase (``Phase.refusals``); its KOs with one of them are counted as
    ``rate_limited``, apart from the errors."""
    latency = LatencySummary.of_counts(sample.counts)
    n = latency.count + sample.unanswered  # every request; the latencies of those timed
    duration_s = sample.duration_ms / 1000.0
    refused = frozenset(refusals)
    errors = Counter(sample.errors)
    limited = 0
    for reason, count in sample.errors.items() if refused else ():
        if status_of(reason) in refused:
            limited += count
            del errors[reason]
    ko = sample.ko - limited
    return PhaseStats(
        **{**vars(latency), "count": n},
        ok=sample.ok,
        ko=ko,
        error_pct=100.0 * ko / n if n else 0.0,
        throughput=n / duration_s if duration_s > 0 else 0.0,
        duration_s=duration_s,
        errors=tuple(sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))),
        rate_limited=limited,
        wrong=sample.wrong,
        wrong_kinds=tuple(sorted(sample.wrong_kinds.items())),
        wrong_evidence=tuple(sample.wrong_evidence),
    )


# -- the table printed at the end of a run (the AGE paper's Tables II-IV) ----------------------


@dataclass(frozen=True)
class TableRow:
    target: str
    repetitions: int
    requests: float
    error_pct: float
    throughput: float
    min: float
    mean: float
    max: float
    stddev: float
    p50: float
    p90: float
    p95: float
    p99: float
    flags: tuple[str, ...]
    req_per_cpu_s: float | None = None
    """Requests per gateway CPU-second, over the repetitions that measured it."""
    gateway_rss_mb: float | None = None
    """The gateway's peak resident memory (MB), over the repetitions that measured it."""
    wrong_answers: int | None = None
    """Wrong answers summed over the repetitions (gatebench.core.answers); None when no
    repetition's answers were checked."""
    rate_limited: int | None = None
    """Answers that were the plan's rate limit refusing the request, summed over the
    repetitions; None where the plan limits nothing."""


def _mean_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def workload_rows(measurements: Iterable[Measurement], workload: str) -> list[TableRow]:
    """One row per target for ``workload``: the mean over repetitions of every metric."""
    by_target: dict[str, list[Measurement]] = {}
    for m in measurements:
        if m.workload == workload:
            by_target.setdefault(m.target, []).append(m)
    rows = []
    for target in sorted(by_target, key=lambda t: (t == BASELINE, t)):
        ms = by_target[target]

        def avg(name: str, ms: list[Measurement] = ms) -> float:
            return sum(float(getattr(m, name)) for m in ms) / len(ms)

        flags = sorted({f for m in ms for f in m.flags})
        rows.append(
            TableRow(
                target=target,
                repetitions=len(ms),
                **{name: avg(name) for name in ("requests", *METRICS)},
                flags=tuple(flags),
                req_per_cpu_s=_mean_of([m.req_per_cpu_s for m in ms]),
                gateway_rss_mb=_mean_of([m.gateway_rss_mb for m in ms]),
                wrong_answers=sum(m.wrong_answers for m in ms)
                if any(m.answers_checked for m in ms)
                else None,
                rate_limited=sum(m.rate_limited or 0 for m in ms)
                if any(m.rate_limited is not None for m in ms)
                else None,
            )
        )
    return rows


def workload_descriptions(workloads: Iterable[Any]) -> dict[str, str]:
    """What each workload of a run record (``RunRecord.workloads``) sends, by name, as every
    table's heading says it: ``POST /v1/items/{id}:cancel, 2 concurrent users for 2s`` (the
    parts a record lacks are left out; empty when it has none)."""
    out = {}
    for w in workloads:
        if not isinstance(w, Mapping) or not w.get("name"):
            continue
        said = [" ".join(str(w[k]) for k in ("method", "path") if w.get(k))]
        said.append(w["injection"] if isinstance(w.get("injection"), str) else "")
        out[str(w["name"])] = ", ".join(x for x in said if x)
    return out


def format_workload_table(workload: str, description: str, rows: Sequence[TableRow]) -> list[str]:
    """Lines of one table: latencies in ms (whole ms from Gatling; means of repetitions get
    one decimal), error %, throughput req/s, and, when the run measured them, requests per
    gateway CPU-second, the gateway's peak memory in MB, the wrong answers (summed over the
    repetitions; ``–`` where they were not checked) and, where the plan rate-limits the
    workload, the answers that were the limit refusing a request (counted in ``req`` and
    ``req/s``, not in ``err %``; ``–`` on the baseline, which runs no policy)."""
    costs = any(r.req_per_cpu_s is not None or r.gateway_rss_mb is not None for r in rows)
    checked = any(r.wrong_answers is not None for r in rows)
    limited = any(r.rate_limited is not None for r in rows)
    header = (
        "target",
        "reps",
        "req",
        "min",
        "avg",
        "max",
        "stddev",
        "p50",
        "p90",
        "p95",
        "p99",
        "err %",
        "req/s",
        *(("req/CPU-s", "gw MB") if costs else ()),
        *(("wrong",) if checked else ()),
        *(("limited",) if limited else ()),
        "flags",
    )
    body = []
    for r in rows:
        body.append(
            (
                r.target,
                str(r.repetitions),
                _requests(r.requests),
                *(_ms(getattr(r, name)) for name in LATENCY_METRICS),
                f"{r.error_pct:.1f}",
                fmt_rate(r.throughput),
                *(
                    (
                        "–" if r.req_per_cpu_s is None else fmt_rate(r.req_per_cpu_s),
                        _cost(r.gateway_rss_mb),
                    )
                    if costs
                    else ()
                ),
                *((_count(r.wrong_answers),) if checked else ()),
                *((_count(r.rate_limited),) if limited else ()),
                ",".join(r.flags),
            )
        )
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = [f"{workload} — {description}" if description else workload]
    for row in [header, *body]:
        cells = [
            row[i].ljust(widths[i]) if i in (0, len(header) - 1) else row[i].rjust(widths[i])
            for i in range(len(header))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def fmt_rate(value: float) -> str:
    """A rate (or a count per second) in words, the same everywhere: ``13,524`` from 100 up,
    three significant digits below (``25.5``, ``2.56``)."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def counted(n: int, word: str) -> str:
    """A count and its noun, in the singular for one: ``1 request``, ``2,000 requests``."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def joined_names(items: Iterable[str]) -> str:
    """Names in a sentence, the same everywhere: ``a``, ``a and b``, ``a, b and c``."""
    listed = list(items)
    if len(listed) <= 1:
        return "".join(listed)
    return ", ".join(listed[:-1]) + " and " + listed[-1]


def _requests(value: float) -> str:
    """Requests per phase, the mean of the repetitions: ``1,234,567`` or ``11,283.5`` (never in
    an exponent)."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def _count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _cost(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _ms(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


__all__ = [
    "PERCENTILES",
    "PhaseSample",
    "PhaseStats",
    "TableRow",
    "fmt_rate",
    "format_workload_table",
    "nearest_rank",
    "nearest_ranks",
    "phase_stats",
    "status_of",
    "workload_descriptions",
    "workload_rows",
]
