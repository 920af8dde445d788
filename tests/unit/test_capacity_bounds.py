"""What a capacity run says when a figure is only a bound, a target stopped, or the run was a
quick one: never a number it did not measure (docs/capacity.md, "Honest labels")."""

from __future__ import annotations

from dataclasses import replace

from capacity_sim import SimulatedTarget
from gatebench.core.model import RunKind, RunRecord, RunStatus
from gatebench.core.plan import Capacity, Objective
from gatebench.core.report._tables import text_table
from gatebench.core.thresholds import Threshold
from gatebench.kinds.capacity import (
    BASELINE,
    Campaign,
    CapacityResult,
    EndpointResult,
    KneeSummary,
    SearchKey,
    SearchResult,
    capacity_result,
    capacity_status,
    compare,
    drive,
    evaluate_capacity,
    search,
    summarize,
    verdict,
)
from gatebench.kinds.capacity._report import (
    best_gateway,
    build_capacity_report,
    capacity_text,
    comparison_table,
    knee_table,
    render_capacity,
)

OBJECTIVE = Objective()
AT = "p99 ≤ 50 ms, errors ≤ 0.1 %"
NOTHING = SearchResult("nothing", None, 10.0, (), "the objective broke even at 10/s")


def found(*knees: float) -> list[SearchResult]:
    return [SearchResult("found", k, k * 1.04, ()) for k in knees]


def at_max(rate: float, n: int = 3) -> list[SearchResult]:
    return [SearchResult("at-max", rate, None, (), f"max_rate {rate:g}/s held")] * n


def endpoint(*summaries: KneeSummary, prices: dict[str, float] | None = None) -> EndpointResult:
    comparisons = tuple(compare(a, b) for i, a in enumerate(summaries) for b in summaries[i + 1 :])
    return EndpointResult(
        "list",
        AT,
        summaries,
        comparisons,
        verdict("list", summaries, OBJECTIVE),
        "all 3 repetitions ran",
        prices or {},
    )


def run_record(**environment: object) -> RunRecord:
    return RunRecord(
        run_id="r-cap",
        spec_uri="cap.yaml",
        spec_sha256="a" * 64,
        status=RunStatus.DONE,
        created_at=1_700_000_000.0,
        kind=RunKind.CAPACITY,
        environment=dict(environment),
    )


# -- 1. below the lowest rate probed: an upper bound, never 0/s ------------------------------


def test_a_target_that_breaks_at_the_lowest_rate_probed_is_reported_under_it() -> None:
    # one worker of 200 ms: 5/s, under the lowest rate a 2-s probe offers (10/s)
    slow = search(Capacity(), SimulatedTarget(workers=1, service_ms=200.0))
    assert (slow.status, slow.knee, slow.below) == ("nothing", None, 10.0)
    s = summarize(BASELINE, "list", [slow, slow])
    assert s.upper_bounded and s.estimate is None and s.mean is None
    assert s.label() == "< 10/s (the lowest rate probed)"
    assert verdict("list", [s], OBJECTIVE) == (
        f"without a gateway the backend carries < 10/s (the lowest rate probed) of list traffic at {AT}"
    )
    # a result stored with a knee of 0 for it reads back as an upper bound, not as 0/s
    old = {**s.to_dict(), "knees": [0.0, 0.0], "repetitions": [1, 2]}
    del old["below"]
    assert KneeSummary.from_dict(old).label() == "< the lowest rate probed"
    assert "0/s" not in KneeSummary.from_dict(old).label()


def test_an_upper_bound_is_a_finished_search_with_a_caution() -> None:
    campaign = Campaign((BASELINE,), {"list": Capacity(repetitions=2)}, 1, 3600.0)
    for rep in (1, 2):
        campaign.rounds = rep
        campaign.record(SearchKey(rep, BASELINE, "list"), NOTHING)
    campaign.end_round()
    result = capacity_result(campaign)
    assert capacity_status(result, False) == "done"
    text = "\n".join(capacity_text(build_capacity_report(run_record(), result)))
    assert "< 10/s (the lowest rate probed)" in text
    assert "0/s (95 % CI" not in text and "no search finished" not in text
    assert "the objective broke even at the lowest rate the search offers" in text


# -- 2. no ratio against a target that carries less than the lowest rate ----------------------


def test_a_target_under_the_lowest_rate_gets_no_percentage() -> None:
    nginx = summarize("nginx", "list", [NOTHING, NOTHING])
    base = summarize(BASELINE, "list", found(362.0, 382.0, 401.0))
    c = compare(base, nginx)
    assert (c.better, c.worse, c.ratio, c.decided) == (BASELINE, "nginx", None, True)
    assert c.by() == "– (nginx < 10/s (the lowest rate probed))"
    e = endpoint(nginx, base)
    rows = "\n".join(text_table(comparison_table(e)))
    assert "%" not in rows.split("\n", 1)[1] and "nginx < 10/s" in rows
    assert e.verdict == (
        f"no gateway carried list traffic at {AT}, even at the lowest rate probed, 10/s: nginx "
        "carries less; without a gateway the backend carries 382/s (95 % CI 333–430) of list "
        f"traffic at {AT}"
    )
    # as stored before: knees of 0 are not clamped to 0.5/s into a ratio
    stored = {**nginx.to_dict(), "knees": [0.0, 0.0], "repetitions": [1, 2]}
    del stored["below"]
    c = compare(base, KneeSummary.from_dict(stored))
    assert c.ratio is None and c.by() == "– (nginx < the lowest rate probed)"


# -- 3. a share or price from a lower bound says so -------------------------------------------


def test_a_share_of_a_lower_bound_baseline_is_at_most() -> None:
    nginx = summarize("nginx", "list", found(118.0, 120.0, 122.0))
    base = summarize(BASELINE, "list", at_max(300.0))
    assert ", ≤ 40 % of what the backend carries without a gateway" in verdict(
        "list", [nginx, base], OBJECTIVE
    )
    rows = "\n".join(text_table(knee_table(endpoint(nginx, base))))
    assert "≤ 40 %" in rows and " 40 %" not in rows.replace("≤ 40 %", "")
    from gatebench.kinds.capacity import share_of_baseline

    assert share_of_baseline(nginx, base) == (40.0, "≤ 40 %")


def test_two_lower_bounds_have_no_share_and_a_bounds_price_is_at_most() -> None:
    nginx = summarize("nginx", "list", at_max(200.0))
    base = summarize(BASELINE, "list", at_max(200.0))
    assert "100 %" not in verdict("list", [nginx, base], OBJECTIVE)
    price = nginx.price_per_million(0.0667)
    assert price is not None
    e = endpoint(nginx, base, prices={"nginx": price})
    rows = "\n".join(text_table(knee_table(e)))
    assert f"≤ ${price:.4f}" in rows and "100 %" not in rows
    html = render_capacity(
        build_capacity_report(run_record(), CapacityResult((e,), (), "done", 3)), "html"
    )
    assert f"≤ ${price:.4f}" in html
    from gatebench.kinds.capacity import share_of_baseline

    assert share_of_baseline(nginx, base) == (None, "–")


# -- 4. a threshold judges a bound as a bound -------------------------------------------------


def test_a_lower_bound_passes_a_minimum_it_proves_and_never_a_maximum() -> None:
    nginx = summarize("nginx", "list", at_max(200.0))
    result = CapacityResult((endpoint(nginx),), (), "done", 3)
    at_most, at_least, too_much = evaluate_capacity(
        [
            Threshold("capacity", max=300.0),
            Threshold("capacity", min=150.0),
            Threshold("capacity", min=250.0),
        ],
        result,
    )
    assert not at_most.passed
    assert "≥ 200 req/s" in at_most.line() and "meets" not in at_most.line().split("cannot")[0]
    assert at_least.passed and at_least.line() == (
        "nginx/list: capacity ≥ 200 req/s meets capacity >= 150 req/s"
    )
    assert not too_much.passed
    under = summarize("nginx", "list", [NOTHING, NOTHING])
    low_max, low_min = evaluate_capacity(
        [Threshold("capacity", max=20.0), Threshold("capacity", min=5.0)],
        CapacityResult((endpoint(under),), (), "done", 2),
    )
    assert low_max.passed and not low_min.passed and "< 10 req/s" in low_min.line()


# -- 5. a target that stopped is never a clean result -----------------------------------------


def test_a_gateway_that_died_is_reported_as_stopped() -> None:
    why = "nginx exited with code -9 during the run"
    campaign = Campaign(("nginx", BASELINE), {"list": Capacity(repetitions=2)}, 1, 3600.0)
    campaign.rounds = 1
    campaign.record(SearchKey(1, "nginx", "list"), found(383.0)[0])
    campaign.record(SearchKey(1, BASELINE, "list"), found(387.0)[0])
    campaign.end_round()
    campaign.rounds = 2
    campaign.record(SearchKey(2, BASELINE, "list"), found(390.0)[0])
    campaign.record(SearchKey(2, "nginx", "list"), SearchResult("failed", None, None, (), why))
    campaign.end_round()
    result = capacity_result(campaign)
    (e,) = result.endpoints
    nginx = e.summary("nginx")
    assert nginx is not None and nginx.label().startswith("stopped in repetition 2; before: 383/s")
    assert f"nginx stopped during repetition 2 ({why})" in e.verdict
    assert "99 %" not in e.verdict and "nginx carries" not in e.verdict
    report = build_capacity_report(run_record(), CapacityResult.from_dict(result.to_dict()))
    assert any(c.startswith(f"nginx stopped during repetition 2 ({why})") for c in report.cautions)
    assert "99 %" not in "\n".join(capacity_text(report))
    assert result.failed == {"nginx": f"stopped during repetition 2 ({why})"}
    from gatebench.kinds.capacity import share_of_baseline

    assert share_of_baseline(nginx, e.summary(BASELINE)) == (None, "–")


def test_a_failure_keeps_more_than_its_first_line() -> None:
    from gatebench.kinds.capacity._stages import failure_line

    assert failure_line("nginx exited with code -9 during the run; last log lines:\n") == (
        "nginx exited with code -9 during the run"
    )
    assert failure_line("nginx exited with code 1; last log lines:\nbad\nworker died\n") == (
        "nginx exited with code 1 (last log line: worker died)"
    )


# -- 6. best needs a positive knee and a decided comparison ----------------------------------


def test_one_gateway_alone_or_one_that_carried_nothing_is_not_best() -> None:
    base = summarize(BASELINE, "list", found(362.0, 382.0, 401.0))
    alone = summarize("nginx", "list", found(300.0, 310.0, 305.0))
    assert best_gateway(endpoint(alone, base)) is None
    nothing = summarize("nginx", "list", [NOTHING, NOTHING])
    e = endpoint(nothing, base)
    assert best_gateway(e) is None
    html = render_capacity(
        build_capacity_report(run_record(), CapacityResult((e,), (), "done", 3)), "html"
    )
    assert 'class="best"' not in html
    faster = summarize("haproxy", "list", found(600.0, 610.0, 605.0))
    assert best_gateway(endpoint(alone, faster, base)) == "haproxy"


# -- 7. a quick run and the search's precision are said --------------------------------------


def test_a_quick_run_says_it_is_a_smoke_run_with_its_precision() -> None:
    base = summarize(BASELINE, "list", found(343.0))
    result = CapacityResult((endpoint(base),), (), "the one repetition ran", 1)
    result = replace(result, precision=0.2)
    text = "\n".join(capacity_text(build_capacity_report(run_record(quick=True), result)))
    assert "list — objective p99 ≤ 50 ms, errors ≤ 0.1 %; search precision 20 %" in text
    assert "A quick run (--quick): a smoke run" in text
    assert "20 %" in text.split("smoke run", 1)[1].split("\n", 1)[0]
    plain = "\n".join(capacity_text(build_capacity_report(run_record(), result)))
    assert "quick" not in plain and "search precision 20 %" in plain
    assert CapacityResult.from_dict(result.to_dict()).precision == 0.2
    campaign = Campaign((BASELINE,), {"list": Capacity(precision=0.2)}, 1, 60.0)
    assert capacity_result(campaign).precision == 0.2


# -- 8. the terminal's table shows the rate per CPU-second, a price only when known ----------


def test_the_compact_table_shows_req_per_cpu_and_a_price_only_when_known() -> None:
    nginx = replace(summarize("nginx", "list", found(300.0, 310.0, 305.0)), req_per_cpu_s=812.0)
    base = summarize(BASELINE, "list", found(362.0, 382.0, 401.0))
    rows = text_table(knee_table(endpoint(nginx, base)))
    assert "req / gateway CPU-s" in rows[0] and "$ / million" not in rows[0]
    assert "812" in "\n".join(rows)
    priced = text_table(knee_table(endpoint(nginx, base, prices={"nginx": 0.06})))
    assert "$ / million req" in priced[0] and "$0.0600" in "\n".join(priced)


# -- 9. the budget covers the ceiling search; a target never searched is listed -------------


def test_the_budget_counts_from_when_the_run_began_searching() -> None:
    settings = Capacity(repetitions=1, budget=10.0)
    campaign = Campaign(("nginx", BASELINE), {"list": settings}, 1, 10.0)
    now = 100.0
    drive(
        campaign,
        lambda key: SimulatedTarget(workers=8, service_ms=10.0),
        clock=lambda: now,
        started=now - 9.0,  # the ceiling search took 9 of the 10 s
    )
    assert "time budget" in (campaign.stop or "")
    result = capacity_result(campaign)
    (e,) = result.endpoints
    targets = {s.target: s.label() for s in e.summaries}
    assert set(targets) == {"nginx", BASELINE}
    assert "not searched" in targets.values()
