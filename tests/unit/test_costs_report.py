"""What each target cost, as a reader sees it: the cost table in every view (one model,
report._tables), the text table printed after a run, the flat rows (BigQuery / CSV), the
robust profile's opt-in efficiency metric, and records written before costs were measured."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

import pytest

from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.core.report import (
    build_report,
    measurement_rows,
    render_csv,
    render_html,
    render_markdown,
    run_view,
)
from gatebench.core.report._flat import flat_rows
from gatebench.core.report._tables import cost_table
from gatebench.core.score import score
from gatebench.core.stats import format_workload_table, workload_rows

NOW = 1_767_268_800.0


def _m(
    target: str,
    rep: int,
    *,
    requests: int = 1000,
    gateway_cpu_s: float | None = None,
    gateway_rss_mb: float | None = None,
    mean: float = 2.0,
) -> Measurement:
    return Measurement(
        "r-costs", target, "get", rep, requests, requests, 0, 0.0, 500.0,
        1.0, mean, 9.0, 0.5, mean, 3.0, 4.0, 5.0,
        gateway_cpu_s=gateway_cpu_s,
        gateway_rss_mb=gateway_rss_mb,
        backend_cpu_s=0.25,
        backend_rss_mb=12.0,
        engine_cpu_s=1.5,
        engine_rss_mb=300.0,
    )  # fmt: skip


def _run() -> tuple[RunRecord, list[Measurement]]:
    run = RunRecord(
        "r-costs",
        "file://spec.yaml",
        "0" * 64,
        status=RunStatus.DONE,
        created_at=NOW,
        gateways=["nginx", "envoy"],
        workloads=[{"name": "get", "method": "GET", "path": "/x", "injection": "..."}],
    )
    ms = [
        # nginx: 1000 requests on 0.5 CPU-s → 2000 req/CPU-s; 10 and 14 MB
        _m("nginx", 1, gateway_cpu_s=0.5, gateway_rss_mb=10.0),
        _m("nginx", 2, gateway_cpu_s=0.5, gateway_rss_mb=14.0),
        # envoy: 1000 requests on 1.0 CPU-s → 1000 req/CPU-s; 40 MB
        _m("envoy", 1, gateway_cpu_s=1.0, gateway_rss_mb=40.0),
        _m("envoy", 2, gateway_cpu_s=1.0, gateway_rss_mb=40.0),
        _m("baseline", 1),
        _m("baseline", 2),
    ]
    return run, ms


def test_the_cost_table_holds_each_roles_figures_and_marks_the_best_gateway() -> None:
    run, ms = _run()
    table = cost_table(build_report(run, ms, now=NOW).summary)
    assert table is not None
    assert [c.label for c in table.columns] == [
        "Target",
        "Workload",
        "Gateway CPU (CPU-s)",
        "Requests per gateway CPU-second (req/CPU-s)",
        "Gateway peak memory (MB)",
        "Backend CPU (CPU-s)",
        "Backend peak memory (MB)",
        "Engine CPU (CPU-s)",
        "Engine peak memory (MB)",
    ]
    rows = {r.header: r for r in table.rows}
    assert [c.text for c in rows["nginx"].cells] == [
        "get",
        "0.50",
        "2,000",
        "12.0",
        "0.25",
        "12.0",
        "1.50",
        "300",
    ]
    assert [c.best for c in rows["nginx"].cells] == [False, False, True, True, *[False] * 4]
    assert [c.text for c in rows["envoy"].cells][1:4] == ["1.00", "1,000", "40.0"]
    assert not any(c.best for c in rows["envoy"].cells)
    # the baseline has no gateway: its gateway columns are empty, it is tagged
    assert [c.text for c in rows["baseline"].cells][1:4] == ["–", "–", "–"]
    assert rows["baseline"].tags == ["no gateway"]


def test_the_cost_table_is_in_every_view() -> None:
    run, ms = _run()
    report = build_report(run, ms, now=NOW)
    model = cost_table(report.summary)
    assert model is not None
    view = next(t for t in run_view(report)["tables"] if t["id"] == "costs")
    assert [c["label"] for c in view["columns"]] == [c.label for c in model.columns]
    assert [c["text"] for c in view["rows"][0]["cells"]] == [c.text for c in model.rows[0].cells]
    html = render_html(report)
    assert "<caption>What each target cost: CPU and memory per measured phase</caption>" in html
    assert "Requests per gateway CPU-second (req/CPU-s)" in html
    md = render_markdown(report)
    assert "## What each target cost" in md
    # Markdown: the compact columns only (backend figures and engine memory are left out)
    header = next(
        line
        for line in md.split("## What each target cost", 1)[1].splitlines()
        if line.startswith("| ")
    )
    assert [c.strip() for c in header.strip("|").split(" | ")] == [
        "Target",
        "Workload",
        "Gateway CPU (CPU-s)",
        "Requests per gateway CPU-second (req/CPU-s)",
        "Gateway peak memory (MB)",
        "Engine CPU (CPU-s)",
    ]


def test_a_run_without_cost_figures_has_no_cost_table() -> None:
    run, ms = _run()
    old = [Measurement.from_dict({k: v for k, v in m.to_dict().items() if "_cpu_s" not in k and "_rss_mb" not in k}) for m in ms]  # fmt: skip
    assert all(m.gateway_cpu_s is None and m.req_per_cpu_s is None for m in old)
    report = build_report(run, old, now=NOW)
    assert cost_table(report.summary) is None
    assert "## What each target cost" not in render_markdown(report)
    assert "This run recorded no CPU or memory figures" in render_html(report)
    assert all(t["id"] != "costs" for t in run_view(report)["tables"])


def test_the_text_table_shows_requests_per_cpu_second_and_gateway_memory() -> None:
    _, ms = _run()
    lines = format_workload_table("get", "GET /x", workload_rows(ms, "get"))
    assert lines[1].split()[-4:] == ["req/CPU-s", "gw", "MB", "flags"]
    assert lines[2].split()[0] == "envoy" and lines[2].split()[-2:] == ["1,000", "40.0"]
    assert lines[3].split()[0] == "nginx" and lines[3].split()[-2:] == ["2,000", "12.0"]
    assert lines[4].split()[0] == "baseline" and lines[4].split()[-2:] == ["–", "–"]


def test_measurement_rows_carry_each_phases_cost_with_its_unit() -> None:
    run, ms = _run()
    report = build_report(run, ms, now=NOW)
    rows = [r for r in measurement_rows(report) if r["target"] == "nginx" and r["repetition"] == 1]
    by_metric = {r["metric"]: (r["value"], r["unit"]) for r in rows}
    assert by_metric["req_per_cpu_s"] == (2000.0, "req/CPU-s")
    assert by_metric["gateway_cpu_s"] == (0.5, "CPU-s")
    assert by_metric["gateway_rss_mb"] == (10.0, "MB")
    assert by_metric["backend_cpu_s"] == (0.25, "CPU-s")
    assert by_metric["engine_rss_mb"] == (300.0, "MB")
    base = {r["metric"] for r in measurement_rows(report) if r["target"] == "baseline"}
    assert "gateway_cpu_s" not in base and "req_per_cpu_s" not in base  # not measured: no row
    assert "backend_cpu_s" in base
    means = {
        (r["target"], r["metric"]): r["value"]
        for r in flat_rows(report)
        if r["statistic"] == "mean" and r["metric"] in ("req_per_cpu_s", "gateway_rss_mb")
    }
    assert means == {
        ("envoy", "gateway_rss_mb"): 40.0,
        ("envoy", "req_per_cpu_s"): 1000.0,
        ("nginx", "gateway_rss_mb"): 12.0,
        ("nginx", "req_per_cpu_s"): 2000.0,
    }
    table = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert any(r["metric"] == "req_per_cpu_s" and r["unit"] == "req/CPU-s" for r in table)


def test_the_paper_profile_ignores_costs() -> None:
    run, ms = _run()
    with_costs = build_report(run, ms, now=NOW).summary.scores
    without = build_report(run, [replace(m, gateway_cpu_s=None, gateway_rss_mb=None) for m in ms], now=NOW).summary.scores  # fmt: skip
    assert with_costs.to_dict() == without.to_dict()
    assert "req_per_cpu_s" not in with_costs.metrics


def test_the_robust_profile_scores_efficiency_when_weighed() -> None:
    """Equal on every latency metric; nginx serves 2000 req/CPU-s, envoy 1000 (no spread
    over the repetitions, so no tie): with ``req_per_cpu_s: 1`` beside the ten metrics
    (weight 1 each), envoy's endpoint score is 100 × (10 + 1000/2000) / 11; without the
    weight both score 100."""
    run, ms = _run()
    plain = build_report(run, ms, profile="robust", now=NOW).summary.scores
    assert [round(g.score, 6) for g in plain.gateways] == [100.0, 100.0]
    weighed = build_report(
        run, ms, profile="robust", weights=[("req_per_cpu_s", 1.0)], now=NOW
    ).summary.scores
    assert weighed.metrics[-1] == "req_per_cpu_s"
    assert [g.target for g in weighed.gateways] == ["nginx", "envoy"]
    assert weighed.gateway("nginx").score == pytest.approx(100.0)
    assert weighed.gateway("envoy").score == pytest.approx(100 * (10 + 1 / 2) / 11)
    envoy = weighed.gateway("envoy").endpoint("get").metric("req_per_cpu_s")
    assert (envoy.value, envoy.best, envoy.score) == (1000.0, 2000.0, 0.5)
    # memory, lower is better: 12 MB against 40 MB → envoy scores 1 - 28/40 = 0.3 there
    memory = build_report(
        run, ms, profile="robust", weights=[("gateway_rss_mb", 1.0)], now=NOW
    ).summary.scores
    assert memory.gateway("envoy").endpoint("get").metric("gateway_rss_mb").score == pytest.approx(
        0.3
    )


def test_efficiency_not_measured_for_every_gateway_is_left_out_with_a_note() -> None:
    run, ms = _run()
    partial = [replace(m, gateway_cpu_s=None) if m.target == "envoy" else m for m in ms]
    result = build_report(
        run, partial, profile="robust", weights=[("req_per_cpu_s", 1.0)], now=NOW
    ).summary.scores
    assert ("get", "req_per_cpu_s") in result.left_out
    assert (
        "req_per_cpu_s on get: not measured for every gateway there; left out of that "
        "endpoint's score"
    ) in result.notes
    assert [round(g.score, 6) for g in result.gateways] == [100.0, 100.0]


def test_efficiency_weights_belong_to_the_robust_profile() -> None:
    from gatebench.core.confidence import Sample
    from gatebench.core.score import ScoreError

    values = {"get": {"a": {"throughput": Sample(1.0), "req_per_cpu_s": Sample(5.0)}}}
    with pytest.raises(ScoreError) as info:
        score(values, metrics=("throughput",), weights={"req_per_cpu_s": 1.0})
    assert str(info.value) == (
        "weights apply to the 'robust' profile; the 'paper' profile weighs every metric equally"
    )
    robust = score(
        values, metrics=("throughput",), weights={"req_per_cpu_s": 0.0}, profile="robust"
    )
    assert robust.metrics == ("throughput",)
