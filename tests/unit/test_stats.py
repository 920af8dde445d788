"""Exact statistics from raw records: nearest-rank percentiles, population std dev, tables."""

from __future__ import annotations

import collections
import dataclasses
import math
import random
import statistics

import pytest

from gatebench.core.model import Measurement
from gatebench.core.stats import (
    LatencySummary,
    PhaseSample,
    format_workload_table,
    nearest_rank,
    nearest_ranks,
    phase_stats,
    workload_rows,
)


def test_nearest_rank_is_an_observed_value() -> None:
    values = list(range(1, 101))  # 1..100
    assert nearest_rank(values, 50) == 50
    assert nearest_rank(values, 90) == 90
    assert nearest_rank(values, 99) == 99
    assert nearest_rank([0, 0, 0, 7], 95) == 7
    assert nearest_rank([3], 50) == 3
    assert nearest_rank([], 50) == 0


def test_phase_stats() -> None:
    sample = PhaseSample()
    for i, latency in enumerate([1, 2, 3, 4, 10]):
        sample.add(100 + i, 100 + i + latency, ok=latency < 10, message="status 409")
    s = phase_stats(sample)
    assert (s.requests, s.ok, s.ko) == (5, 4, 1)
    assert s.error_pct == pytest.approx(20.0)
    assert (s.min, s.max, s.mean) == (1.0, 10.0, 4.0)
    assert s.stddev == pytest.approx(math.sqrt((9 + 4 + 1 + 0 + 36) / 5))
    assert (s.p50, s.p90, s.p95, s.p99) == (3.0, 10.0, 10.0, 10.0)
    # first start 100, last end 104 + 10 = 114: 5 requests in 14 ms
    assert s.duration_s == pytest.approx(0.014)
    assert s.throughput == pytest.approx(5 / 0.014)
    assert s.errors == (("status 409", 1),)


@pytest.mark.parametrize("resolution", ["gatling ms", "wrk µs"])
def test_counts_per_latency_give_the_figures_of_the_whole_list(resolution: str) -> None:
    """A phase keeps counts per latency, not every latency: its figures are those of the sorted
    list of every latency (percentiles and extremes equal, mean and standard deviation equal
    to rounding), whole milliseconds from Gatling and wrk's microseconds kept as they are."""
    rng = random.Random(7)
    sample = PhaseSample()
    values: list[float] = []
    for i in range(5000):
        if resolution == "gatling ms":
            latency: float = int(rng.expovariate(1 / 40))
            sample.add(i, i + int(latency), ok=True)
        else:
            latency = rng.randrange(50, 90_000) / 1000.0  # wrk: µs, as ms with 3 decimals
            sample.add_latency(latency)
        values.append(latency)
    assert len(sample.counts) < len(values)  # what the phase holds: one count per value
    ordered = sorted(values)
    s = phase_stats(sample)
    assert s.requests == len(values)
    assert (s.min, s.max) == (ordered[0], ordered[-1])
    for pct, got in zip((50, 90, 95, 99), (s.p50, s.p90, s.p95, s.p99), strict=True):
        assert got == nearest_rank(ordered, pct)
    assert s.mean == pytest.approx(statistics.fmean(ordered), rel=1e-15)
    assert s.stddev == pytest.approx(statistics.pstdev(ordered), rel=1e-12)
    assert sample.latencies == ordered


def test_nearest_ranks_walk_the_counts_in_order() -> None:
    assert nearest_ranks({3.0: 1, 1.0: 2, 10.0: 1}, (25, 50, 75, 100)) == [1.0, 1.0, 3.0, 10.0]
    assert nearest_ranks({}, (50, 99)) == [0.0, 0.0]
    assert nearest_ranks({5: 0, 7: 1}, (1,)) == [7.0]


def test_every_kind_summarises_latencies_the_same_way() -> None:
    """One summary (``LatencySummary``) for a phase, a capacity probe and a scale point: from
    the values or from counts per value, the same figures, those of the sorted list."""
    from gatebench.kinds._live.metrics import Arrival, latency_of
    from gatebench.kinds.capacity._metrics import _latencies

    rng = random.Random(11)
    values = [rng.randrange(100, 40_000) / 1000.0 for _ in range(2001)]
    ordered = sorted(values)
    s = LatencySummary.of(values)
    assert s == LatencySummary.of_counts(collections.Counter(values))
    assert (s.count, s.min, s.max) == (2001, ordered[0], ordered[-1])
    assert (s.p50, s.p90, s.p95, s.p99) == tuple(nearest_rank(ordered, p) for p in (50, 90, 95, 99))
    assert s.mean == pytest.approx(statistics.fmean(ordered), rel=1e-15)
    sample = PhaseSample()
    for v in values:
        sample.add_latency(v)
    phase = phase_stats(sample)
    assert (phase.p50, phase.p99, phase.mean, phase.max) == (s.p50, s.p99, s.mean, s.max)
    probe = _latencies(LatencySummary.of_counts(sample.counts))
    assert probe == {
        "p50": s.p50,
        "p90": s.p90,
        "p95": s.p95,
        "p99": s.p99,
        "mean": s.mean,
        "max": s.max,
    }
    point = latency_of(Arrival(0.0, v, True, "start") for v in values)
    assert (point.requests, point.p50_ms, point.p99_ms, point.max_ms) == (2001, s.p50, s.p99, s.max)
    assert LatencySummary.of([]) == LatencySummary(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def test_empty_phase() -> None:
    s = phase_stats(PhaseSample())
    assert (s.requests, s.throughput, s.p99) == (0, 0.0, 0.0)


def _m(target: str, rep: int, mean: float) -> Measurement:
    return Measurement(
        run_id="r",
        target=target,
        workload="bid",
        repetition=rep,
        requests=50,
        ok=40,
        ko=10,
        error_pct=20.0,
        throughput=1000.0,
        min=0,
        mean=mean,
        max=30,
        stddev=2.5,
        p50=1,
        p90=5,
        p95=7,
        p99=30,
        flags=("noisy",) if rep == 2 else (),
    )


def test_the_requests_column_is_never_written_with_an_exponent() -> None:
    import dataclasses

    (row,) = workload_rows([_m("nginx", 1, 1.0)], "bid")
    for requests, shown in ((1_234_567.0, "1,234,567"), (11_283.5, "11,283.5"), (50.0, "50")):
        lines = format_workload_table("bid", "x", [dataclasses.replace(row, requests=requests)])
        assert lines[2].split()[2] == shown


def test_table_counts_the_rate_limited_answers_apart() -> None:
    """A run whose plan rate-limits a workload printed err % 0.0 and a throughput mostly made
    of the gateways' 429s, with nothing saying so: the report's tables had the column, the
    console's did not."""
    limited = [
        dataclasses.replace(_m("nginx", 1, 1.0), rate_limited=30),
        dataclasses.replace(_m("nginx", 2, 1.0), rate_limited=12),
        _m("baseline", 1, 1.0),
    ]
    lines = format_workload_table("bid", "x", workload_rows(limited, "bid"))
    assert lines[1].split()[-2:] == ["limited", "flags"]
    assert lines[2].split()[-2:] == ["42", "noisy"]
    assert lines[3].split()[-1] == "–"  # the baseline runs no policy
    plain = format_workload_table("bid", "x", workload_rows([_m("nginx", 1, 1.0)], "bid"))
    assert "limited" not in plain[1]


def test_table_averages_repetitions_and_puts_baseline_last() -> None:
    rows = workload_rows([_m("baseline", 1, 1.0), _m("nginx", 1, 2.0), _m("nginx", 2, 3.0)], "bid")
    assert [r.target for r in rows] == ["nginx", "baseline"]
    assert rows[0].mean == 2.5
    assert rows[0].repetitions == 2
    assert rows[0].flags == ("noisy",)
    lines = format_workload_table("bid", "POST /bid/{auctionId}, 50 users at once", rows)
    assert lines[0] == "bid — POST /bid/{auctionId}, 50 users at once"
    assert lines[1].split() == [
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
        "err",
        "%",
        "req/s",
        "flags",
    ]
    assert lines[2].split() == [
        "nginx",
        "2",
        "50",
        "0",
        "2.5",
        "30",
        "2.5",
        "1",
        "5",
        "7",
        "30",
        "20.0",
        "1,000",
        "noisy",
    ]
