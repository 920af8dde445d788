"""Repetitions: t quantiles, confidence intervals, scores from means, rank stability, overhead."""

from __future__ import annotations

import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gatebench.core.aggregate import UNSCORED_REASONS, first_reasons, summarize
from gatebench.core.confidence import (
    Sample,
    paired_difference,
    t_cdf,
    t_critical,
    t_quantile,
    welch_difference,
)
from gatebench.core.metrics import METRICS
from gatebench.core.model import Measurement
from gatebench.core.score import score

# Two-sided 95 % critical values from standard tables (e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
T_TABLE = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    15: 2.131,
    20: 2.086,
    29: 2.045,
    30: 2.042,
    60: 2.000,
    100: 1.984,
}


@pytest.mark.parametrize(("df", "expected"), sorted(T_TABLE.items()))
def test_t_critical_matches_the_table(df: int, expected: float) -> None:
    assert t_critical(df) == pytest.approx(expected, abs=5e-4)


def test_other_quantiles_and_limits() -> None:
    assert t_quantile(0.95, 10) == pytest.approx(1.812, abs=5e-4)
    assert t_quantile(0.995, 3) == pytest.approx(5.841, abs=5e-4)
    assert t_quantile(0.025, 9) == pytest.approx(-2.262, abs=5e-4)
    assert t_quantile(0.5, 4) == 0.0
    assert t_quantile(0.975, math.inf) == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475))


@settings(max_examples=200, deadline=None)
@given(
    st.floats(min_value=0.5001, max_value=0.9999),
    st.floats(min_value=1.0, max_value=500.0),
)
def test_the_quantile_inverts_the_cdf(p: float, df: float) -> None:
    assert t_cdf(t_quantile(p, df), df) == pytest.approx(p, abs=1e-9)


@pytest.mark.parametrize(("p", "df"), [(0.0, 3), (1.0, 3), (0.9, 0)])
def test_quantile_arguments_are_checked(p: float, df: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        t_quantile(p, df)


def test_a_sample_mean_stddev_and_interval() -> None:
    values = [10.0, 12.0, 11.0, 13.0, 9.0]
    s = Sample.of(values)
    assert s.mean == 11.0
    assert s.stddev == pytest.approx(statistics.stdev(values))
    assert s.ci_half_width == pytest.approx(
        2.776445 * statistics.stdev(values) / math.sqrt(5), rel=1e-6
    )
    assert Sample.of([4.0]).ci_half_width is None
    half = s.ci_half_width
    assert s.ci_whiskers() == (11.0 - half, 11.0 + half)
    wide = Sample.of([1.0, 20.0, 2.0])  # its interval reaches below 0
    assert wide.ci_whiskers()[0] == 0.0
    assert wide.ci_whiskers(floor=None)[0] < 0.0
    assert Sample.of([4.0]).ci_whiskers() == (None, None)
    with pytest.raises(ValueError, match="at least one value"):
        Sample.of([])


def test_welch_difference() -> None:
    a = Sample.of([20.1, 19.8, 20.5, 20.0, 19.9])
    b = Sample.of([18.0, 18.4, 17.9, 18.2, 18.1])
    d = welch_difference(a, b)
    se = math.sqrt(a.stddev**2 / 5 + b.stddev**2 / 5)
    df = se**4 / ((a.stddev**2 / 5) ** 2 / 4 + (b.stddev**2 / 5) ** 2 / 4)
    assert d.estimate == pytest.approx(20.06 - 18.12, abs=1e-9)
    assert d.df == pytest.approx(df)
    assert d.half_width == pytest.approx(t_critical(df) * se)
    assert d.significant is True
    assert welch_difference(Sample(1.0), b).half_width is None
    assert welch_difference(Sample(1.0), b).significant is None


def test_paired_difference() -> None:
    d = paired_difference([10.0, 12.0, 11.0], [9.0, 11.5, 10.0])
    diffs = [1.0, 0.5, 1.0]
    assert d.estimate == pytest.approx(statistics.mean(diffs))
    assert d.half_width == pytest.approx(t_critical(2) * statistics.stdev(diffs) / math.sqrt(3))
    with pytest.raises(ValueError, match="same length"):
        paired_difference([1.0], [1.0, 2.0])


def test_a_difference_of_scores_stays_within_what_scores_can_differ_by() -> None:
    """Two repetitions give t with 1 degree of freedom (12.7): 100 and 88 against 88 and 100
    differ by 12 and −12, and the interval is 0 ± 152, past −100 and 100 without bounds."""
    wide = paired_difference([100.0, 88.0], [88.0, 100.0])
    assert wide.low is not None and wide.low < -100 and wide.high is not None and wide.high > 100
    bounded = paired_difference([100.0, 88.0], [88.0, 100.0], bounds=(-100.0, 100.0))
    assert (bounded.low, bounded.high) == (-100.0, 100.0)
    assert bounded.significant is False and bounded.half_width == wide.half_width
    inside = paired_difference([100.0, 96.0], [90.0, 93.0], bounds=(-100.0, 100.0))
    assert inside.half_width is not None and inside.low == inside.estimate - inside.half_width


# -- summaries ---------------------------------------------------------------------------------


def m(target: str, workload: str, rep: int, mean: float, **kw: float) -> Measurement:
    values: dict[str, object] = dict.fromkeys(METRICS, mean)
    values.update(throughput=1000.0 / mean, error_pct=0.0, requests=100, ok=100, ko=0)
    values.update(kw)
    return Measurement(run_id="r", target=target, workload=workload, repetition=rep, **values)  # type: ignore[arg-type]


def test_cells_hold_mean_stddev_and_interval_per_metric() -> None:
    ms = [m("a", "w", r, v) for r, v in enumerate([10.0, 12.0, 14.0])] + [m("b", "w", 0, 20.0)]
    s = summarize(ms)
    cell = s.cell("w", "a")
    assert cell is not None
    assert cell.repetitions == (0, 1, 2)
    assert cell.metrics["mean"].mean == 12.0
    assert cell.metrics["mean"].stddev == 2.0
    assert cell.metrics["mean"].ci_half_width == pytest.approx(t_critical(2) * 2.0 / math.sqrt(3))
    assert cell.requests == 300
    assert s.cell("w", "b").metrics["mean"].ci_half_width is None  # type: ignore[union-attr]


def test_scores_come_from_the_means() -> None:
    ms = [m("a", "w", r, v) for r, v in enumerate([10.0, 30.0])]
    ms += [m("b", "w", r, v) for r, v in enumerate([15.0, 15.0])]
    s = summarize(ms)
    means = {"w": {t: s.cells[("w", t)].metrics for t in ("a", "b")}}
    assert s.scores == score(means, gateways=("a", "b"), workloads=("w",))
    # b wins on the means (15 vs 20 ms) though a won repetition 0.
    assert s.scores.gateways[0].target == "b"


def test_rank_stability_counts_first_places_per_repetition() -> None:
    ms = []
    for rep, (a, b) in enumerate([(10.0, 11.0), (10.0, 11.0), (12.0, 11.0), (10.0, 10.0)]):
        ms += [m("a", "w", rep, a), m("b", "w", rep, b)]
    s = summarize(ms)
    by_target = {r.target: r for r in s.rank_stability}
    assert by_target["a"].ranks == (1, 1, 2, 1)
    assert by_target["b"].ranks == (2, 2, 1, 1)
    assert (by_target["a"].first, by_target["b"].first) == (3, 2)  # a tie counts for both
    assert by_target["a"].mean_rank == 1.25


def test_an_incomplete_repetition_is_left_out_of_the_ranks() -> None:
    ms = [m("a", "w", 0, 10.0), m("b", "w", 0, 12.0), m("a", "w", 1, 10.0)]
    s = summarize(ms)
    assert s.complete_repetitions == (0,)
    assert {r.target: r.ranks for r in s.rank_stability} == {"a": (1,), "b": (2,)}
    assert s.notes == (
        "repetition 1 did not measure every target and is left out of the rank stability",
    )


def test_a_measurement_without_requests_counts_as_missing() -> None:
    ms = [m("a", "w", 0, 10.0), m("b", "w", 0, 0.0001, requests=0, ok=0, throughput=0.0)]
    s = summarize(ms, gateways=["a", "b"])
    assert s.cell("w", "b") is None
    assert s.scores.gateway("b").endpoint("w").missing
    assert s.empty_measurements == ("b:w:0",)
    assert s.notes[0] == "1 measurement completed no request and counts as missing: b:w:0"


def test_overhead_against_the_baseline() -> None:
    ms = [m("a", "w", r, v) for r, v in enumerate([12.0, 13.0, 14.0])]
    ms += [m("baseline", "w", r, v) for r, v in enumerate([10.0, 10.5, 11.0])]
    s = summarize(ms)
    assert s.baseline == "baseline"
    assert s.gateways == ("a",)
    o = s.overhead_for("w", "a", "mean")
    assert o is not None
    assert o.difference.estimate == pytest.approx(2.5)
    assert o.relative_pct == pytest.approx(100 * 2.5 / 10.5)
    assert o.difference.half_width is not None
    assert o.difference.significant is True
    assert s.overhead_for("w", "baseline", "mean") is None
    # The baseline never competes.
    assert [g.target for g in s.scores.gateways] == ["a"]


def test_the_leader_against_the_runner_up() -> None:
    close, clear = [], []
    for rep, noise in enumerate([1.0, -1.0, 0.5, -0.5, 0.2]):
        close += [m("a", "w", rep, 10.0 + noise), m("b", "w", rep, 10.0 - noise)]
        clear += [m("a", "w", rep, 10.0 + noise * 0.1), m("b", "w", rep, 20.0)]
    s_close = summarize(close)
    assert s_close.comparison is not None
    assert s_close.comparison.difference.significant is False
    s_clear = summarize(clear)
    assert s_clear.comparison is not None
    assert (s_clear.comparison.leader, s_clear.comparison.runner_up) == ("a", "b")
    assert s_clear.comparison.difference.significant is True
    assert s_clear.comparison.repetitions == 5


def test_flags_and_cpu_are_gathered() -> None:
    ms = [
        m("a", "w", 0, 10.0, other_cpu_pct=5.0),
        m("a", "w", 1, 10.0, other_cpu_pct=40.0, tester_cpu_pct=90.0),
    ]
    ms[1] = Measurement(
        **{**ms[1].to_dict(), "flags": ("noisy", "tester-bound"), "errors": (("timeout", 3),)}
    )  # type: ignore[arg-type]
    s = summarize(ms)
    cell = s.cell("w", "a")
    assert cell is not None
    assert dict(cell.flags) == {"noisy": 1, "tester-bound": 1}
    assert (cell.other_cpu_pct, cell.tester_cpu_pct) == (40.0, 90.0)
    assert cell.errors == (("timeout", 3),)
    assert s.flag_counts() == {"noisy": 1, "tester-bound": 1}


def test_each_unscored_workload_has_one_reason_the_first_that_holds() -> None:
    # the verdict and the notes name a workload once: tester-bound, then a rate the plan
    # sets, then too short
    reasons = first_reasons(["w"], {"v": 50.0, "w": 50.0}, {"u": ("a",), "w": ("a",)})
    assert reasons == {"w": "tester-bound", "v": "rate-set", "u": "too-short"}
    assert tuple(dict.fromkeys(reasons.values())) == UNSCORED_REASONS


# -- the latency floor is the resolution of the engine that measured the workload ----------------


def test_sub_millisecond_latencies_are_scored_at_the_engines_own_resolution() -> None:
    """wrk records microseconds: a gateway at 0.22 ms beats one at 0.87 ms, not a tie at 1 ms."""
    ms = []
    for rep in range(3):
        j = 0.01 * rep
        ms.append(m("a", "w", rep, 0.20 + j, engine="wrk", throughput=5000.0))  # type: ignore[arg-type]
        ms.append(m("b", "w", rep, 0.85 + j, engine="wrk", throughput=5000.0))  # type: ignore[arg-type]
    s = summarize(ms)
    assert [g.target for g in s.scores.gateways] == ["a", "b"]
    assert s.scores.gateway("b").score == pytest.approx(100 * (2 + 8 * 0.21 / 0.86) / 10)
    assert s.scores.notes == ()  # nothing under wrk's 0.001 ms
    assert s.resolutions == {"w": (0.001, "wrk")}


def test_a_zero_reading_is_raised_to_the_engines_resolution_and_the_note_names_it() -> None:
    ms = [
        m(g, "w", rep, 0.5, engine="loadgen", min=v)  # type: ignore[arg-type]
        for rep in range(2)
        for g, v in (("a", 0.0), ("b", 0.002))
    ]
    s = summarize(ms)
    assert s.scores.gateway("b").endpoint("w").metric("min").score == pytest.approx(0.5)
    assert s.scores.notes == (
        "1 latency value under 0.001 ms (gatebench-loadgen's resolution) was scored as 0.001 ms",
    )


def test_the_coarsest_engine_among_the_compared_cells_sets_the_floor() -> None:
    """One gateway measured by Gatling: its whole milliseconds cannot tell 0.2 from 0.9 ms, so
    neither can the score, and the note says whose resolution it was."""
    ms = []
    for rep in range(2):
        ms.append(m("a", "w", rep, 0.2, engine="wrk"))  # type: ignore[arg-type]
        ms.append(m("b", "w", rep, 0.9, engine="gatling", throughput=5000.0))  # type: ignore[arg-type]
        ms.append(m("c", "v", rep, 0.2, engine="wrk", throughput=5000.0))  # type: ignore[arg-type]
        ms.append(m("d", "v", rep, 0.9, engine="wrk", throughput=5000.0))  # type: ignore[arg-type]
    s = summarize(ms, failed={"c": "during repetition 2", "d": "during repetition 2"})
    assert s.resolutions == {"w": (1.0, "gatling")}  # v: only unranked gateways measured it
    assert s.scores.gateway("a").endpoint("w").metric("mean").score == 1.0
    assert s.scores.gateway("b").endpoint("w").metric("mean").score == 1.0
    assert any("(Gatling's resolution)" in n for n in s.scores.notes)


def test_an_unranked_gateway_is_never_the_best_value_of_a_workload() -> None:
    """c failed during the run: not ranked, so its 5 ms is not the best the tables mark."""
    ms = [m(g, "w", rep, v) for rep in range(3) for g, v in (("a", 10.0), ("b", 12.0), ("c", 5.0))]
    s = summarize(ms, failed={"c": "during repetition 3"})
    assert [g.target for g in s.scores.gateways] == ["a", "b"]
    assert s.best_among_gateways("w")["mean"] == 10.0
    assert s.best_among_gateways("w")["throughput"] == 100.0


def test_requests_per_cpu_second_is_the_runs_requests_over_its_cpu() -> None:
    """a used 0.05 CPU-s in 7 repetitions (under 0.1: no figure of their own) and 0.2 in 3:
    scored on those 3 alone it read 5,000 req/CPU-s and ranked below b's 6,667, though over
    the run it served 10,000 requests on 0.95 CPU-s."""
    ms = []
    for rep in range(10):
        a_cpu = 0.05 if rep < 7 else 0.2
        ms.append(m("a", "w", rep, 10.0, requests=1000, ok=1000, gateway_cpu_s=a_cpu))
        ms.append(m("b", "w", rep, 10.0, requests=1000, ok=1000, gateway_cpu_s=0.15))
    s = summarize(ms, profile="robust", weights={"req_per_cpu_s": 1})
    a, b = s.cell("w", "a"), s.cell("w", "b")
    assert a is not None and b is not None
    assert a.metrics["req_per_cpu_s"].mean == pytest.approx(10_000 / 0.95)
    assert a.metrics["req_per_cpu_s"].n == 10
    assert a.resources["req_per_cpu_s"] == a.metrics["req_per_cpu_s"]  # the costs table's too
    assert b.metrics["req_per_cpu_s"].mean == pytest.approx(10_000 / 1.5)
    assert b.metrics["req_per_cpu_s"].stddev == pytest.approx(0.0, abs=1e-6)
    assert s.scores.gateways[0].target == "a"
    assert s.scores.notes == ()


def test_requests_per_cpu_second_needs_the_cpu_of_the_run_not_of_each_repetition() -> None:
    from gatebench.core.resources import pooled_requests_per_cpu_s

    assert pooled_requests_per_cpu_s([(100, 0.04), (100, 0.04)]) is None  # 0.08 CPU-s in all
    assert pooled_requests_per_cpu_s([(100, 0.06), (100, 0.06)]) == (
        pytest.approx(200 / 0.12),
        pytest.approx(0.0, abs=1e-9),
        2,
    )
    assert pooled_requests_per_cpu_s([(100, None), (300, 0.2)]) == (1500.0, 0.0, 1)
    ratio, sd, n = pooled_requests_per_cpu_s([(100, 0.1), (300, 0.2), (200, 0.2)])  # type: ignore[misc]
    residuals = [100 - ratio * 0.1, 300 - ratio * 0.2, 200 - ratio * 0.2]
    assert ratio == pytest.approx(1200.0)
    assert sd == pytest.approx(math.sqrt(sum(e * e for e in residuals) / 2) / (0.5 / 3))
    assert n == 3
