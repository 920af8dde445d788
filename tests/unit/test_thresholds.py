"""Thresholds (gatebench.core.thresholds): read from x-gatebench with located errors, evaluated
against a run's summary, and reported as lines and as JUnit XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from typing import Any

import pytest

from gatebench.core.errors import PlanError
from gatebench.core.ir import Api
from gatebench.core.plan import build_plan
from gatebench.core.report import build_report
from gatebench.core.report._junit import render_junit
from gatebench.core.spec import load_spec
from gatebench.core.thresholds import Threshold, evaluate, failures, fmt, thresholds_from_plan
from paths import EXAMPLES
from synthetic import synthetic_run


@pytest.fixture(scope="module")
def petstore() -> Api:
    api = load_spec(EXAMPLES / "petstore" / "openapi.yaml").api
    assert api is not None
    return api


def section(thresholds: Any) -> dict[str, Any]:
    return {
        "gateways": ["nginx", "httpd"],
        "workloads": [
            {"name": "list", "operation": "listPets", "injection": {"sequential": 10}},
            {"name": "show", "operation": "showPetById", "injection": {"sequential": 10}},
        ],
        "thresholds": thresholds,
    }


def errors(api: Api, thresholds: Any) -> list[tuple[str, str]]:
    with pytest.raises(PlanError) as caught:
        build_plan(section(thresholds), api)
    return [(p.pointer, p.message) for p in caught.value.problems if p.severity == "error"]


def test_a_valid_list_is_read_with_units_and_pointers(petstore: Api) -> None:
    plan = build_plan(
        section(
            [
                {"metric": "p95", "max": "50ms"},
                {"metric": "mean", "max": "0.5s", "gateway": "apache", "workload": "show"},
                {"metric": "error_pct", "max": "1%", "gateway": "baseline"},
                {"metric": "throughput", "min": "500 req/s", "max": "9000/s"},
                {"metric": "overhead.p99", "max": "250us"},
                {"metric": "overhead.mean", "max": "20%", "gateway": "httpd"},
                {"metric": "score", "min": 70},
            ]
        ),
        petstore,
    )
    t = plan.thresholds
    assert t[0] == Threshold("p95", max=50.0, pointer="/x-gatebench/thresholds/0")
    assert (t[1].max, t[1].gateway, t[1].workload) == (500.0, "apache", "show")
    assert (t[2].metric, t[2].max, t[2].gateway, t[2].unit) == ("error_pct", 1.0, "baseline", "%")
    assert (t[3].min, t[3].max, t[3].label()) == (
        500.0,
        9000.0,
        "throughput >= 500 req/s and <= 9,000 req/s",
    )
    assert (t[4].max, t[4].relative, t[4].label()) == (0.25, False, "overhead.p99 <= 0.25 ms")
    assert (t[5].max, t[5].relative, t[5].gateway, t[5].label()) == (
        20.0,
        True,
        "apache",
        "overhead.mean <= 20%",
    )
    assert (t[6].min, t[6].label()) == (70.0, "score >= 70")
    # Stored with the run's plan, read back the same.
    assert thresholds_from_plan(plan.to_dict()) == t


def test_bad_thresholds_are_located_errors_all_at_once(petstore: Api) -> None:
    assert errors(
        petstore,
        [
            {"metric": "p96", "max": "50ms"},
            {"metric": "p95", "max": 50},
            {"metric": "error_pct", "max": 1, "gateway": "kong"},
            {"metric": "throughput", "min": "500", "workload": "lst"},
            {"metric": "score", "min": "80%"},
            {"metric": "p99"},
            {"metric": "p99", "max": "5ms", "mx": 3},
            {"metric": "overhead.p50", "max": "1ms", "gateway": "baseline"},
            {"metric": "p50", "min": "9ms", "max": "2ms"},
            {"max": "2ms"},
            "p95 < 50ms",
        ],
    ) == [
        (
            "/x-gatebench/thresholds/0/metric",
            "unknown metric 'p96'; did you mean 'p99'? expected one of min, mean, max, stddev, "
            "p50, p90, p95, p99, error_pct, throughput, overhead.min, overhead.mean, "
            "overhead.max, overhead.stddev, overhead.p50, overhead.p90, overhead.p95, "
            "overhead.p99, score, capacity, wrong_answers",
        ),
        (
            "/x-gatebench/thresholds/1/max",
            "the unit is missing: expected a latency such as '50ms' or '0.5s', got 50",
        ),
        (
            "/x-gatebench/thresholds/2/max",
            "the unit is missing: expected an error rate such as '1%', got 1",
        ),
        (
            "/x-gatebench/thresholds/2/gateway",
            "'kong' is not in the plan's gateways (nginx, apache, baseline); a threshold "
            "applies to what the plan measures",
        ),
        (
            "/x-gatebench/thresholds/3/min",
            "expected a throughput such as '500/s' or '500 req/s', got '500'",
        ),
        (
            "/x-gatebench/thresholds/3/workload",
            "'lst' is not a workload of the plan (list, show)",
        ),
        (
            "/x-gatebench/thresholds/4/min",
            "expected a score from 0 to 100 (a plain number), got '80%'",
        ),
        ("/x-gatebench/thresholds/5", "a threshold on p99 needs 'max' or 'min' (or both)"),
        (
            "/x-gatebench/thresholds/6/mx",
            "unknown key 'mx' in a threshold; did you mean 'max'? expected one of metric, max, "
            "min, gateway, workload",
        ),
        ("/x-gatebench/thresholds/7/gateway", "the baseline has no overhead: name a gateway"),
        ("/x-gatebench/thresholds/8/min", "the minimum 9ms is above the maximum 2ms"),
        (
            "/x-gatebench/thresholds/9",
            "a threshold needs 'metric' (min, mean, max, stddev, p50, p90, p95, p99, "
            "error_pct, throughput, overhead.min, overhead.mean, overhead.max, "
            "overhead.stddev, overhead.p50, overhead.p90, overhead.p95, overhead.p99, score, capacity, "
            "wrong_answers)",
        ),
        (
            "/x-gatebench/thresholds/10",
            "a threshold must be a mapping such as {metric: p95, max: 50ms}, got a string "
            "('p95 < 50ms')",
        ),
    ]


def test_a_threshold_keyed_by_its_metric_is_shown_how_to_write_it(petstore: Api) -> None:
    assert errors(petstore, [{"p99": "50ms", "gateway": "nginx"}, {"p95": None}]) == [
        (
            "/x-gatebench/thresholds/0/p99",
            "a threshold names its metric: write {metric: p99, max: '50ms'} (or min:)",
        ),
        (
            "/x-gatebench/thresholds/1/p95",
            "a threshold names its metric: write {metric: p95, max: ...} (or min:)",
        ),
    ]


def test_thresholds_must_be_a_list(petstore: Api) -> None:
    assert errors(petstore, {"p95": "50ms"}) == [
        ("/x-gatebench/thresholds", "thresholds must be a list of thresholds, got a mapping")
    ]


def test_a_baseline_threshold_needs_the_baseline(petstore: Api) -> None:
    data = section([{"metric": "p95", "max": "5ms", "gateway": "baseline"}])
    data["baseline"] = False
    with pytest.raises(PlanError) as caught:
        build_plan(data, petstore)
    assert [(p.pointer, p.message) for p in caught.value.problems if p.severity == "error"] == [
        (
            "/x-gatebench/thresholds/0/gateway",
            "'baseline' is not in the plan's gateways (nginx, apache); a threshold applies to "
            "what the plan measures",
        )
    ]


# -- evaluation against a (synthetic) run ---------------------------------------------------


@pytest.fixture(scope="module")
def report() -> Any:
    run, measurements = synthetic_run(("nginx", "haproxy"), ("list", "show"), repetitions=3)
    return build_report(run, measurements)


def test_each_threshold_is_checked_per_target_and_workload(report: Any) -> None:
    summary = report.summary
    p95 = summary.cell("list", "nginx").metrics["p95"].mean
    results = evaluate(
        [
            Threshold("p95", max=p95, gateway="nginx", workload="list", pointer="/t/0"),
            Threshold("p95", max=p95 - 0.5, gateway="nginx", workload="list", pointer="/t/1"),
            Threshold("throughput", min=1.0, pointer="/t/2"),
        ],
        summary,
    )
    assert [(r.threshold.pointer, r.subject, r.passed) for r in results] == [
        ("/t/0", "nginx/list", True),
        ("/t/1", "nginx/list", False),
        ("/t/2", "nginx/list", True),
        ("/t/2", "nginx/show", True),
        ("/t/2", "haproxy/list", True),
        ("/t/2", "haproxy/show", True),
    ]
    (failed,) = failures(results)
    assert failed.line() == (
        f"nginx/list: p95 {fmt(p95, 'ms')} is above the maximum {fmt(p95 - 0.5, 'ms')} (/t/1)"
    )


def test_overhead_and_score_come_from_the_summary(report: Any) -> None:
    summary = report.summary
    overhead = summary.overhead_for("show", "haproxy", "mean")
    score = summary.scores.gateway("haproxy").score
    results = evaluate(
        [
            Threshold(
                "overhead.mean",
                max=overhead.difference.estimate - 0.01,
                gateway="haproxy",
                workload="show",
                pointer="/t/0",
            ),
            Threshold(
                "overhead.mean",
                max=overhead.relative_pct + 0.01,
                relative=True,
                gateway="haproxy",
                workload="show",
                pointer="/t/1",
            ),
            Threshold("score", min=score + 1, gateway="haproxy", pointer="/t/2"),
        ],
        summary,
    )
    assert [r.passed for r in results] == [False, True, False]
    assert results[0].value == pytest.approx(overhead.difference.estimate)
    assert results[1].value == pytest.approx(overhead.relative_pct)
    assert results[2].line() == (
        f"haproxy: score {fmt(score, '')} is below the minimum {fmt(score + 1, '')} (/t/2)"
    )


def test_what_was_not_measured_fails(report: Any) -> None:
    summary = report.summary
    cells = {k: v for k, v in summary.cells.items() if k != ("show", "nginx")}
    partial = replace(summary, cells=cells)
    (result,) = evaluate(
        [Threshold("p50", max=1000.0, gateway="nginx", workload="show", pointer="/t/0")], partial
    )
    assert not result.passed
    assert result.line() == "nginx/show: p50 was not measured; needs p50 <= 1,000 ms (/t/0)"


def test_junit_has_one_case_per_threshold_and_target(report: Any) -> None:
    p95 = report.summary.cell("show", "haproxy").metrics["p95"].mean
    plan = {
        "thresholds": [
            Threshold("p95", max=p95 - 0.5, pointer="/x-gatebench/thresholds/0").to_dict(),
            Threshold("error_pct", max=100.0, pointer="/x-gatebench/thresholds/1").to_dict(),
        ]
    }
    run = replace(report.run, plan=plan)
    xml = render_junit(replace(report, run=run))
    root = ET.fromstring(xml)
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("gatebench.nginx", f"p95 <= {fmt(p95 - 0.5, 'ms')} (every workload)"),
        ("gatebench.haproxy", f"p95 <= {fmt(p95 - 0.5, 'ms')} (every workload)"),
        ("gatebench.nginx", "error_pct <= 100% (every workload)"),
        ("gatebench.haproxy", "error_pct <= 100% (every workload)"),
    ]
    haproxy = cases[1].find("failure")
    assert haproxy is not None
    assert f"haproxy/show: p95 {fmt(p95, 'ms')} is above the maximum" in (haproxy.text or "")
    assert [c.find("failure") is None for c in cases[2:]] == [True, True]
    failed = sum(1 for c in cases if c.find("failure") is not None)
    assert (suite.get("tests"), suite.get("failures")) == ("4", str(failed))
    assert root.get("failures") == str(failed)


def test_a_run_without_thresholds_gives_an_empty_suite(report: Any) -> None:
    root = ET.fromstring(render_junit(report))
    assert (root.get("tests"), root.get("failures")) == ("0", "0")
