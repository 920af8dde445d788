"""What the run page and the comparison page are told to show (gatebench.core.report._view): the
numbers come from the report's summary, printed by the report's own formatting."""

from __future__ import annotations

import json
from dataclasses import replace

from gatebench.core.confidence import welch_difference
from gatebench.core.model import RunRecord, RunStatus
from gatebench.core.report import build_report, compare_view, run_summary, run_view, spec_name
from gatebench.core.report._charts import colours_for
from gatebench.core.report._format import fmt_ci, fmt_value
from synthetic import synthetic_run

NOW = 1_767_272_400.0


def _report(**kwargs: object):  # type: ignore[no-untyped-def]
    run, ms = synthetic_run(**kwargs)  # type: ignore[arg-type]
    return build_report(run, ms, now=NOW)


def test_run_view_charts_carry_the_summary_numbers_as_printed_by_the_report() -> None:
    report = _report()
    s = report.summary
    view = run_view(report)
    json.dumps(view, allow_nan=False)  # plain JSON, no NaN
    assert view["format"] == "gatebench-view/1"
    assert [c["id"] for c in view["charts"]] == [
        "scores",
        "throughput",
        "latency",
        "workload-scores",
    ]
    assert view["colours"] == colours_for(s.targets, s.baseline)
    throughput = next(c for c in view["charts"] if c["id"] == "throughput")
    assert [g["title"] for g in throughput["groups"]] == list(s.workloads)
    for group in throughput["groups"]:
        assert [b["label"] for b in group["bars"]] == list(s.targets)
        for bar in group["bars"]:
            sample = s.cells[(group["title"], bar["label"])].metrics["throughput"]
            half = sample.ci_half_width
            assert half is not None  # five repetitions: every bar has its whisker
            assert bar["value"] == sample.mean
            assert bar["low"] == max(0.0, sample.mean - half)
            assert bar["high"] == sample.mean + half
            assert bar["text"] == fmt_ci("throughput", sample.mean, half) + " req/s"
            assert bar["baseline"] is (bar["label"] == "baseline")
            assert bar["colour"] == view["colours"][bar["label"]]


def test_the_latency_chart_marks_p50_p90_p99_of_each_target() -> None:
    report = _report()
    s = report.summary
    chart = next(c for c in run_view(report)["charts"] if c["id"] == "latency")
    assert chart["kind"] == "percentiles"
    bar = chart["groups"][0]["bars"][0]
    cell = s.cells[(chart["groups"][0]["title"], bar["label"])]
    assert [m["name"] for m in bar["marks"]] == ["p50", "p90", "p99"]
    assert [m["value"] for m in bar["marks"]] == [
        cell.metrics[p].mean for p in ("p50", "p90", "p99")
    ]
    assert bar["value"] == cell.metrics["p99"].mean
    expected = " · ".join(
        f"{p} {fmt_value(p, cell.metrics[p].mean)}" for p in ("p50", "p90", "p99")
    )
    assert bar["text"] == expected + " ms"


def test_run_view_tables_scores_latency_overhead() -> None:
    report = _report()
    s = report.summary
    view = run_view(report)
    ids = [t["id"] for t in view["tables"]]
    assert ids == [
        "scores",
        "workload-scores",
        *(f"latency-{w}" for w in s.workloads),
        "overhead",
    ]
    scores = view["tables"][0]
    assert [r["header"] for r in scores["rows"]] == [g.target for g in s.scores.gateways]
    top = scores["rows"][0]["cells"]
    assert top[0] == {"text": "1", "sort": 1}
    assert top[1]["best"] is True
    latency = view["tables"][2]
    assert [c["label"] for c in latency["columns"]][:3] == [
        "Target",
        "Throughput (req/s)",
        "Min (ms)",
    ]
    baseline_row = next(r for r in latency["rows"] if r["header"] == "baseline")
    assert baseline_row["tags"] == ["no gateway"]
    assert not any(c.get("best") for c in baseline_row["cells"])  # the baseline does not compete
    overhead = view["tables"][-1]
    assert len(overhead["rows"]) == len(s.gateways) * len(s.workloads)


def test_a_throughput_the_score_leaves_out_is_never_marked_best() -> None:
    """Where the load generator set the throughput (tester-bound) or the phases were too short,
    the score leaves throughput out: the tables mark no best there and say it is not scored."""
    from gatebench.core.report._tables import latency_tables

    report = _report()
    s = report.summary
    bid, retrieve = "bid", "retrieve"
    before = {t.id: t for t in latency_tables(report)}
    assert any(c.best for r in before[f"latency-{bid}"].rows for c in r.cells[:1])
    left_out = replace(
        report,
        summary=replace(s, tester_bound={bid: ("nginx",)}, too_short={retrieve: ("caddy",)}),
    )
    for table in latency_tables(left_out):
        for row in table.rows:
            throughput = row.cells[0]
            if table.id in (f"latency-{bid}", f"latency-{retrieve}"):
                assert not throughput.best
                gateway = row.header != "baseline"
                assert list(throughput.hints) == (["not scored"] if gateway else [])
            else:
                assert not throughput.hints
    kept = {t.id: t for t in latency_tables(left_out)}["latency-create-auction"]
    assert any(r.cells[0].best for r in kept.rows)  # elsewhere, throughput still competes


def test_a_single_repetition_has_no_whisker_and_a_run_without_measurements_no_chart() -> None:
    single = run_view(_report(repetitions=1))
    for group in next(c for c in single["charts"] if c["id"] == "throughput")["groups"]:
        assert all("low" not in b and "high" not in b for b in group["bars"])
    run, _ = synthetic_run()
    empty = run_view(build_report(replace(run, status=RunStatus.LOADING), [], now=NOW))
    assert empty["charts"] == []
    assert empty["tables"] == []
    assert empty["measurements"] == 0
    assert empty["verdict"] == ["No gateway was measured: there is nothing to compare yet."]


def test_compare_view_puts_both_runs_on_one_scale_and_tags_changes() -> None:
    a = _report(seed=7, run_id="20260101-120000-a")
    b = _report(seed=11, run_id="20260102-120000-b", created_at=1_767_355_200.0)
    view = compare_view(a, b)
    json.dumps(view, allow_nan=False)
    assert (view["a"]["run_id"], view["b"]["run_id"]) == ("20260101-120000-a", "20260102-120000-b")
    chart_a, chart_b = view["charts"]
    # one scale per workload for both runs, each endpoint on its own (the chart's own: none)
    assert chart_a["per_group"] and chart_b["per_group"] and chart_a["max"] is None
    ends = {}
    for chart in (chart_a, chart_b):
        for group in chart["groups"]:
            ends.setdefault(group["title"], set()).add(group["max"])
            assert max(bar["high"] for bar in group["bars"]) <= group["max"]
    assert all(len(found) == 1 for found in ends.values()), ends
    tops = {
        title: max(
            b["high"]
            for c in (chart_a, chart_b)
            for g in c["groups"]
            if g["title"] == title
            for b in g["bars"]
        )
        for title in ends
    }
    for title, (end,) in ends.items():
        assert (
            tops[title] <= end < 2.5 * tops[title]
        )  # the next round number, not the run's largest
    assert [t["id"] for t in view["tables"]] == [
        "scores-compared",
        "compare-create-auction",
        "compare-bid",
        "compare-retrieve",
    ]
    # Each change is B − A with Welch's interval, tagged by what the interval says.
    table = view["tables"][1]
    row = next(r for r in table["rows"] if r["header"] == "nginx")
    change = row["cells"][2]
    sa = a.summary.cells[("create-auction", "nginx")].metrics["throughput"]
    sb = b.summary.cells[("create-auction", "nginx")].metrics["throughput"]
    d = welch_difference(sb, sa)
    assert change["sort"] == d.estimate
    expected = "noise" if not d.significant else ("better" if d.estimate > 0 else "worse")
    assert change["tags"] == [expected]
    assert view["same_spec"] is True
    assert not any("different specs" in n for n in view["notes"])


def test_compare_view_notes_different_specs_and_unshared_workloads() -> None:
    a = _report(workloads=("bid", "retrieve"), run_id="r-a")
    run_b, ms_b = synthetic_run(workloads=("bid", "search"), run_id="r-b")
    b = build_report(replace(run_b, spec_sha256="1" * 64), ms_b, now=NOW)
    view = compare_view(a, b)
    assert view["same_spec"] is False
    assert view["notes"][0] == (
        "The two runs come from different specs: rows are matched by workload and target name."
    )
    assert "Workloads in only one run (left out of the changes): retrieve, search." in view["notes"]
    assert [t["id"] for t in view["tables"]] == ["scores-compared", "compare-bid"]


def test_compare_view_names_each_runs_scoring_and_says_when_scores_are_not_comparable() -> None:
    run_a, ms_a = synthetic_run(run_id="r-a")
    run_b, ms_b = synthetic_run(seed=11, run_id="r-b")
    a = build_report(run_a, ms_a, profile="robust", weights=(("p99", 3.0),), now=NOW)
    b = build_report(run_b, ms_b, profile="paper", now=NOW)
    view = compare_view(a, b)
    weights = (
        "throughput×1, min×1, mean×1, max×1, stddev×1, p50×1, p90×1, p95×1, p99×3, error_pct×1"
    )
    assert (view["a"]["profile"], view["a"]["weights"]["p99"]) == ("robust", 3.0)
    assert view["a"]["scoring"] == f"robust (weights {weights})"
    assert (view["b"]["profile"], view["b"]["weights"], view["b"]["scoring"]) == (
        "paper",
        {},
        "paper",
    )
    assert view["same_scoring"] is False
    assert view["notes"][0] == (
        f"The scores are not comparable: run A is scored with the robust profile (weights "
        f"{weights}), run B with the paper profile, so their scores and ranks measure different "
        "things. Compare the metrics, or rescore one run with the other's profile (`gatebench "
        "score RUN --profile ...`)."
    )
    assert not any(n.startswith("Scores are relative") for n in view["notes"])
    scores = view["tables"][0]
    assert scores["caption"] == (
        "Global scores and ranks in each run (not comparable: the runs are scored with "
        "different profiles)"
    )
    assert {r["cells"][4]["text"] for r in scores["rows"]} == {"not comparable"}
    same = compare_view(a, build_report(run_b, ms_b, profile="robust", weights=(("p99", 3.0),)))
    assert same["same_scoring"] is True
    assert same["tables"][0]["caption"] == "Global scores and ranks in each run"
    assert same["notes"][-1] == (
        "Scores are relative to the best gateway within each run, so compare ranks and raw "
        "metrics across runs rather than score points."
    )


def test_run_summary_and_spec_names() -> None:
    run = RunRecord(
        run_id="r-1",
        spec_uri="gs://bucket/specs/20260101-120000-00000000-api.yaml#1767268800000000",
        spec_sha256="0" * 64,
        status=RunStatus.PARTIAL,
        plan={"baseline": True, "repetitions": 3},
        environment={"quick": True},
        target_errors={"kong": "\nunsupported here\nlast log lines"},
        failed_step="loading",
        error="interrupted",
    )
    summary = run_summary(run)
    assert summary["spec_name"] == "20260101-120000-00000000-api.yaml"
    assert summary["finished"] is True
    assert summary["quick"] is True
    assert summary["baseline"] is True
    assert summary["repetitions"] == 3
    assert summary["target_errors"] == {"kong": "unsupported here"}
    assert summary["left_out"] == []
    # a gateway left out before the run is listed apart: the page said 'caddy failed: ...'
    left = replace(
        run,
        target_errors={"caddy": "caddy cannot apply the requested policies natively: ..."},
        environment={"left_out": {"caddy": "cannot apply the plan's policies"}},
    )
    assert run_summary(left)["left_out"] == ["caddy"]
    assert spec_name("/tmp/x/openapi.yaml") == "openapi.yaml"
    assert spec_name("file:///tmp/bucket/specs/a.json") == "a.json"
