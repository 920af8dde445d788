"""The score's rules for what the paper leaves open, and the opt-in robust profile."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gatebench.core.confidence import Sample
from gatebench.core.metrics import METRICS
from gatebench.core.score import ScoreError, metric_score, score, values_from_table


def one_metric(metric: str, **values: float) -> dict[str, dict[str, dict[str, Sample]]]:
    return values_from_table({"e": {g: {metric: v} for g, v in values.items()}})


def per_metric(result, metric: str, workload: str = "e") -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {g.target: g.endpoint(workload).metric(metric).score for g in result.gateways}


# -- cases the paper leaves open -------------------------------------------------------------


def test_a_zero_ms_minimum_ties_with_one_ms() -> None:
    """Gatling's 1 ms resolution: 0 ms means 'under 1 ms'; scored as 1 ms, it ties with 1 ms."""
    result = score(one_metric("min", a=0.0, b=1.0, c=3.0), metrics=("min",), engines="gatling")
    assert per_metric(result, "min") == {"a": 1.0, "b": 1.0, "c": pytest.approx(1 / 3)}
    assert result.gateway("a").endpoint("e").metric("min").value == 1.0
    assert result.notes == ("1 latency value under 1 ms (Gatling's resolution) was scored as 1 ms",)


def test_the_floor_is_the_resolution_given_for_each_workload() -> None:
    """wrk and gatebench-loadgen record microseconds: 0.2 and 0.8 ms differ there, and the note
    names the engine whose resolution raised a value (never Gatling's for a wrk run)."""
    values = values_from_table(
        {
            "e": {"a": {"mean": 0.2}, "b": {"mean": 0.8}},
            "f": {"a": {"mean": 0.0}, "b": {"mean": 0.5}},
        }
    )
    result = score(
        values,
        metrics=("mean",),
        resolution_ms={"e": 0.001, "f": 0.001},
        engines={"e": "wrk", "f": "wrk"},
    )
    assert per_metric(result, "mean", "e") == {"a": 1.0, "b": pytest.approx(0.25)}
    assert per_metric(result, "mean", "f") == {"a": 1.0, "b": pytest.approx(0.002)}
    assert result.notes == (
        "1 latency value under 0.001 ms (wrk's resolution) was scored as 0.001 ms",
    )
    # without an engine named, the note blames no particular one
    plain = score(values, metrics=("mean",), resolution_ms=0.001)
    assert plain.notes == (
        "1 latency value under 0.001 ms (the load engine's resolution) was scored as 0.001 ms",
    )


def test_the_literal_equation_would_zero_a_1_ms_difference() -> None:
    """Why the floor: eq. (3) with best 0 gives 0 to any positive value."""
    assert metric_score(1.0, 0.0, "lower") == 0.0


def test_latencies_at_or_above_the_resolution_are_untouched() -> None:
    result = score(one_metric("mean", a=1.0, b=2.5), metrics=("mean",))
    assert per_metric(result, "mean") == {"a": 1.0, "b": pytest.approx(1 / 2.5)}
    assert result.notes == ()


def test_zero_errors_everywhere_score_one() -> None:
    result = score(one_metric("error_pct", a=0.0, b=0.0), metrics=("error_pct",))
    assert per_metric(result, "error_pct") == {"a": 1.0, "b": 1.0}


def test_errors_where_the_best_is_zero_score_zero() -> None:
    result = score(one_metric("error_pct", a=0.0, b=0.01, c=50.0), metrics=("error_pct",))
    assert per_metric(result, "error_pct") == {"a": 1.0, "b": 0.0, "c": 0.0}


def test_errors_everywhere_compare_relatively() -> None:
    result = score(one_metric("error_pct", a=1.0, b=4.0), metrics=("error_pct",))
    assert per_metric(result, "error_pct") == {"a": 1.0, "b": 0.25}


def test_zero_throughput_everywhere_scores_one() -> None:
    result = score(one_metric("throughput", a=0.0, b=0.0), metrics=("throughput",))
    assert per_metric(result, "throughput") == {"a": 1.0, "b": 1.0}


def test_zero_throughput_against_a_positive_best_scores_zero() -> None:
    result = score(one_metric("throughput", a=0.0, b=50.0), metrics=("throughput",))
    assert per_metric(result, "throughput") == {"a": 0.0, "b": 1.0}


def test_a_gateway_missing_an_endpoint_scores_zero_there() -> None:
    values = values_from_table(
        {
            "e1": {"a": {"mean": 10.0}, "b": {"mean": 20.0}},
            "e2": {"a": {"mean": 10.0}},
        }
    )
    result = score(values, gateways=["a", "b"], metrics=("mean",))
    b = result.gateway("b")
    assert b.endpoint("e2").missing
    assert b.endpoint("e2").score == 0.0
    assert b.score == pytest.approx((50.0 + 0.0) / 2)
    assert b.missing == ("e2",)
    assert result.gateway("a").endpoint("e2").score == 100.0
    assert result.notes == ("b has no measurement for e2: scored 0 there",)


def test_a_gateway_measured_nowhere_scores_zero() -> None:
    result = score(one_metric("mean", a=10.0), gateways=["a", "b"], metrics=("mean",))
    assert result.gateway("b").score == 0.0
    assert result.gateway("b").rank == 2
    assert "b was not measured at all: scored 0" in result.notes


def test_no_gateway_is_scored_when_no_workload_was_measured() -> None:
    """A run stopped before its first gateway's phase: every gateway was ranked first with a
    score of 0, as if measured and tied. None is scored: no score, no rank."""
    result = score({}, gateways=["a", "b"], workloads=["e"], metrics=("mean",))
    assert result.gateways == ()
    assert result.leaders == ()
    assert result.to_dict()["gateways"] == {}
    assert result.notes == ("no gateway was measured on e: no gateway is scored or ranked",)
    alone = score({}, gateways=["a"], workloads=[], metrics=("mean",))
    assert (alone.gateways, alone.notes) == (
        (),
        ("no workload to score: no gateway is scored or ranked",),
    )


def test_an_endpoint_nobody_measured_is_left_out() -> None:
    values = values_from_table({"e1": {"a": {"mean": 10.0}, "b": {"mean": 20.0}}, "e2": {}})
    result = score(values, gateways=["a", "b"], workloads=["e1", "e2"], metrics=("mean",))
    assert result.workloads == ("e1",)
    assert result.unscored == ("e2",)
    assert result.gateway("a").score == 100.0
    assert result.notes == ("no gateway was measured on e2: left out of the scores",)


def test_a_single_gateway_scores_100_and_says_so() -> None:
    values = values_from_table(
        {"e": {"a": dict.fromkeys(METRICS, 5.0), "baseline": dict.fromkeys(METRICS, 1.0)}}
    )
    result = score(values)
    assert [(g.target, g.score, g.rank) for g in result.gateways] == [("a", 100.0, 1)]
    assert result.notes[0] == (
        "only one gateway (a): it is the best on every metric and scores 100 by definition; "
        "compare it with the baseline (overhead) instead"
    )


def test_equal_scores_share_a_rank() -> None:
    result = score(one_metric("mean", a=10.0, b=10.0, c=20.0), metrics=("mean",))
    assert [(g.target, g.rank) for g in result.gateways] == [("a", 1), ("b", 1), ("c", 3)]
    assert result.leaders == ("a", "b")


def test_the_endpoint_score_is_100_times_the_mean_and_the_global_the_mean_of_endpoints() -> None:
    values = values_from_table(
        {
            "e1": {
                "a": {"mean": 10.0, "throughput": 100.0},
                "b": {"mean": 20.0, "throughput": 150.0},
            },
            "e2": {"a": {"mean": 5.0, "throughput": 10.0}, "b": {"mean": 4.0, "throughput": 10.0}},
        }
    )
    result = score(values, metrics=("mean", "throughput"))
    b = result.gateway("b")
    assert b.endpoint("e1").score == pytest.approx(100 * (0.5 + 1.0) / 2)
    assert b.endpoint("e2").score == pytest.approx(100.0)
    assert b.score == pytest.approx((75.0 + 100.0) / 2)


# -- refusals ----------------------------------------------------------------------------------


def test_weights_are_refused_by_the_paper_profile() -> None:
    with pytest.raises(ScoreError) as exc:
        score(one_metric("mean", a=1.0), metrics=("mean",), weights={"mean": 2.0})
    assert str(exc.value) == (
        "weights apply to the 'robust' profile; the 'paper' profile weighs every metric equally"
    )


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (
            {"latency": 1.0},
            "no metric 'latency' to weigh; metrics: throughput, min, mean, max, stddev, p50, p90, p95, p99, error_pct, "
            "req_per_cpu_s, gateway_rss_mb",
        ),
        ({"mean": -1.0}, "weight of 'mean': expected a number >= 0, got -1.0"),
        ({"mean": 0.0}, "at least one weight must be above 0"),
        ({"p99": 1.0}, "metric 'p99' has a weight but is not scored"),
    ],
)
def test_bad_weights(weights: dict[str, float], message: str) -> None:
    with pytest.raises(ScoreError) as exc:
        score(one_metric("mean", a=1.0), metrics=("mean",), weights=weights, profile="robust")
    assert str(exc.value) == message


def test_a_missing_metric_is_an_error() -> None:
    with pytest.raises(ScoreError) as exc:
        score(one_metric("mean", a=1.0, b=2.0), metrics=("mean", "p99"))
    assert str(exc.value) == "workload 'e', target 'a': no value for 'p99'"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_values_must_be_finite_and_not_negative(bad: float) -> None:
    with pytest.raises(
        ScoreError, match=r"^workload 'e', target 'a', mean: expected a finite value >= 0, got "
    ):
        score(one_metric("mean", a=bad, b=2.0), metrics=("mean",))


def test_an_unknown_profile() -> None:
    with pytest.raises(
        ScoreError, match=r"^unknown scoring profile 'fast'; available: paper, robust$"
    ):
        score(one_metric("mean", a=1.0), profile="fast")  # type: ignore[arg-type]


# -- robust profile ----------------------------------------------------------------------------


def samples(**by_gateway: tuple[float, float, int]) -> dict[str, dict[str, dict[str, Sample]]]:
    return {
        "e": {
            g: {"mean": Sample(m, s, n), "error_pct": Sample(0.0)}
            for g, (m, s, n) in by_gateway.items()
        }
    }


def test_robust_a_difference_inside_the_confidence_interval_is_a_tie() -> None:
    # 100 ± (t·10/√5) vs 105 ± the same: Welch's interval of the difference is about ±14.6.
    values = samples(a=(100.0, 10.0, 5), b=(105.0, 10.0, 5), c=(200.0, 10.0, 5))
    paper = score(values, metrics=("mean",))
    robust = score(values, metrics=("mean",), profile="robust")
    assert per_metric(paper, "mean")["b"] == pytest.approx(100 / 105)
    robust_scores = per_metric(robust, "mean")
    assert robust_scores == {"a": 1.0, "b": 1.0, "c": pytest.approx(0.5)}
    assert robust.gateway("b").endpoint("e").metric("mean").tied is True
    assert robust.gateway("c").endpoint("e").metric("mean").tied is False


def test_robust_without_repetitions_only_identical_values_tie() -> None:
    values = samples(a=(100.0, 0.0, 1), b=(101.0, 0.0, 1))
    robust = score(values, metrics=("mean",), profile="robust")
    assert per_metric(robust, "mean") == {"a": 1.0, "b": pytest.approx(100 / 101)}
    assert robust.notes == (
        "some values come from a single repetition: without a confidence interval only identical values tie",
    )


def test_robust_a_gateway_with_errors_never_outranks_one_without() -> None:
    """b is fastest but failed 1 % of requests: it drops to just below a, the slowest
    error-free gateway; c (2 % errors, already lower) takes its own share off too."""
    values = {
        "e": {
            "a": {"mean": Sample(20.0), "error_pct": Sample(0.0)},
            "b": {"mean": Sample(10.0), "error_pct": Sample(1.0)},
            "c": {"mean": Sample(40.0), "error_pct": Sample(2.0)},
            "d": {"mean": Sample(15.0), "error_pct": Sample(0.0)},
        }
    }
    paper = score(values, metrics=("mean",))
    assert paper.gateways[0].target == "b"
    robust = score(values, metrics=("mean",), profile="robust")
    a, b, c, d = (robust.gateway(x).endpoint("e") for x in "abcd")
    assert (a.score, d.score) == (50.0, pytest.approx(200 / 3))
    assert b.score == pytest.approx(50.0 * 0.99)
    assert b.capped_from == pytest.approx(100.0)
    assert b.has_errors
    assert c.score == pytest.approx(25.0 * 0.98)
    assert c.capped_from == pytest.approx(25.0)
    assert a.capped_from is None
    assert [g.target for g in robust.gateways] == ["d", "a", "b", "c"]


def test_robust_a_gateway_whose_every_request_failed_scores_zero() -> None:
    """Failing fast (0 ms latencies, high throughput) wins the paper score; not the robust one."""
    fast = dict.fromkeys(METRICS, 1.0) | {"throughput": 2000.0, "error_pct": 100.0}
    healthy = dict.fromkeys(METRICS, 20.0) | {"throughput": 900.0, "error_pct": 0.0}
    values = values_from_table({"e": {"failfast": fast, "healthy": healthy}})
    assert score(values).gateways[0].target == "failfast"
    robust = score(values, profile="robust")
    assert [(g.target, g.score) for g in robust.gateways] == [
        ("healthy", pytest.approx(robust.gateway("healthy").score)),
        ("failfast", 0.0),
    ]


def test_robust_without_an_error_free_gateway_nothing_is_capped() -> None:
    values = values_from_table(
        {"e": {"a": {"mean": 10.0, "error_pct": 1.0}, "b": {"mean": 20.0, "error_pct": 2.0}}}
    )
    robust = score(values, metrics=("mean",), profile="robust")
    assert [(g.target, g.score) for g in robust.gateways] == [("a", 100.0), ("b", 50.0)]


def test_robust_weights_change_the_mean() -> None:
    values = values_from_table(
        {"e": {"a": {"mean": 10.0, "p99": 100.0}, "b": {"mean": 20.0, "p99": 50.0}}}
    )
    equal = score(values, metrics=("mean", "p99"), profile="robust")
    heavy = score(values, metrics=("mean", "p99"), profile="robust", weights={"p99": 3.0})
    assert equal.gateway("a").score == pytest.approx(75.0)
    assert heavy.gateway("a").score == pytest.approx(100 * (1.0 + 3 * 0.5) / 4)
    assert heavy.gateway("b").score == pytest.approx(100 * (0.5 + 3 * 1.0) / 4)
    assert heavy.weights == (("mean", 1.0), ("p99", 3.0))


def test_robust_a_zero_weight_drops_the_metric() -> None:
    values = values_from_table(
        {"e": {"a": {"mean": 10.0, "p99": 100.0}, "b": {"mean": 20.0, "p99": 50.0}}}
    )
    result = score(values, metrics=("mean", "p99"), profile="robust", weights={"p99": 0.0})
    assert result.metrics == ("mean",)
    assert result.weights == (("mean", 1.0), ("p99", 0.0))
    assert result.gateway("a").score == 100.0


# -- properties --------------------------------------------------------------------------------

values_strategy = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(dict.fromkeys(METRICS, values_strategy)),
        min_size=1,
        max_size=5,
    )
)
def test_scores_are_between_0_and_100_and_the_best_scores_1(rows: list[dict[str, float]]) -> None:
    table = {"e": {f"g{i}": row for i, row in enumerate(rows)}}
    result = score(values_from_table(table))
    for g in result.gateways:
        assert 0.0 <= g.score <= 100.0
        for ms in g.endpoint("e").metrics:
            assert 0.0 <= ms.score <= 1.0
            if ms.value == ms.best:
                assert ms.score == 1.0
    for m in METRICS:
        assert any(g.endpoint("e").metric(m).score == 1.0 for g in result.gateways)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(values_strategy, min_size=2, max_size=5),
    st.integers(min_value=0, max_value=4),
    st.floats(min_value=0.01, max_value=0.99),
)
def test_getting_better_never_lowers_your_own_score(
    values: list[float], who: int, factor: float
) -> None:
    who = who % len(values)
    before = score(
        one_metric("mean", **{f"g{i}": v for i, v in enumerate(values)}), metrics=("mean",)
    )
    improved = list(values)
    improved[who] = values[who] * factor
    after = score(
        one_metric("mean", **{f"g{i}": v for i, v in enumerate(improved)}), metrics=("mean",)
    )
    assert after.gateway(f"g{who}").score >= before.gateway(f"g{who}").score - 1e-9
