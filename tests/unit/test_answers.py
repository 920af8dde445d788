"""Wrong answers from the engines' records to the verdict: read apart from errors, kept as
evidence, carried per measurement and cell, never ranked, flagged in the tables, gated by the
default threshold; and the workload document says which phases are checked and how."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.aggregate import summarize
from gatebench.core.answers import EVIDENCE_KEPT, evidence, wrong_answer_kind
from gatebench.core.measure import PhaseResult, measurement_from
from gatebench.core.model import Measurement, flat_rows
from gatebench.core.plan import build_plan
from gatebench.core.report import build_report
from gatebench.core.report._build import verdict
from gatebench.core.report._tables import latency_tables
from gatebench.core.report._view import run_view
from gatebench.core.spec import read_spec
from gatebench.core.stats import PhaseSample
from gatebench.core.thresholds import Threshold, evaluate, failures
from gatebench.core.workload import build_schedule, phases_from_document, render_workload
from synthetic import synthetic_run

ROOT = Path(__file__).resolve().parents[2]
GATLING_WRAPPED = (
    "bodyBytes.find.transformOption.answer, j.l.IllegalStateException: wrong answer (crossed): "
    "request ab.p0001.7 GET /items/3; expected its own answer; got the answer to request "
    "ab.p0001.9"
)


def test_a_wrong_answer_is_told_from_an_error_by_the_engines_words() -> None:
    assert wrong_answer_kind(GATLING_WRAPPED) == "crossed"
    assert evidence(GATLING_WRAPPED).startswith("wrong answer (crossed): request ab.p0001.7")
    assert wrong_answer_kind("wrong answer (truncated): request x GET /a") == "truncated"
    assert wrong_answer_kind("wrong answer (invented): ...") == "other"
    assert wrong_answer_kind("status.find.in(200), found 409") is None
    assert wrong_answer_kind("Request timeout to 127.0.0.1:8080 after 60000 ms") is None


def test_a_phase_counts_wrong_answers_apart_and_keeps_the_first_few() -> None:
    sample = PhaseSample()
    sample.add(0, 2, True)
    sample.add(0, 3, False, "status.find.in(200), found 503")
    for i in range(EVIDENCE_KEPT + 2):
        sample.add(1, 4, False, GATLING_WRAPPED.replace(".7 ", f".{i} "))
    sample.add(1, 5, False, "wrong answer (truncated): request z GET /a; expected x; got y")
    assert (sample.ok, sample.ko, sample.wrong) == (1, 1, EVIDENCE_KEPT + 3)
    assert sample.requests == sample.latency_count == EVIDENCE_KEPT + 5
    assert dict(sample.wrong_kinds) == {"crossed": EVIDENCE_KEPT + 2, "truncated": 1}
    assert len(sample.wrong_evidence) == EVIDENCE_KEPT
    assert sample.wrong_evidence[0].startswith("wrong answer (crossed): request ab.p0001.0 ")
    assert dict(sample.errors) == {"status.find.in(200), found 503": 1}

    other = PhaseSample()
    other.add(0, 1, False, "wrong answer (repeated): request q POST /b; expected once; got 2")
    other.merge_wrong(sample)
    assert other.wrong == EVIDENCE_KEPT + 4
    assert dict(other.wrong_kinds) == {"crossed": EVIDENCE_KEPT + 2, "repeated": 1, "truncated": 1}
    assert len(other.wrong_evidence) == EVIDENCE_KEPT


def _items() -> tuple[Any, Any]:
    result = read_spec(str(ROOT / "tests/data/engine/items.yaml"))
    assert result.api is not None
    return result.api, result.benchmark


def _measurement(wrong: int, *, engine: str = "gatling", checked: bool = True) -> Measurement:
    api, section = _items()
    plan = build_plan(section, api)
    schedule = build_schedule(plan, {"baseline": "http://127.0.0.1:1"}, seed=1)
    phase = dataclasses.replace(schedule.measured()[0], answers_checked=checked)
    sample = PhaseSample()
    for i in range(10):
        sample.add(i, i + 2, True)
    for i in range(wrong):
        sample.add(i, i + 3, False, f"wrong answer (status): request r{i} GET /items/1; x; y")
    return measurement_from(
        "r1", phase, PhaseResult(phase.index, sample, 0.0, 20.0, None), engine=engine
    )


def test_a_measurement_carries_its_wrong_answers_and_reads_back() -> None:
    m = _measurement(2)
    assert (m.requests, m.ok, m.ko, m.wrong_answers) == (12, 10, 0, 2)
    assert m.error_pct == 0.0
    assert m.wrong_kinds == (("status", 2),)
    assert len(m.wrong_evidence) == 2
    assert "wrong-answers" in m.flags
    assert m.answers_checked is True
    assert Measurement.from_dict(m.to_dict()) == m
    # BigQuery and CSV get a row of them where they were checked
    rows = {r["metric"]: r["value"] for r in flat_rows([m])}
    assert rows["wrong_answers"] == 2.0
    assert "wrong_answers" not in {r["metric"] for r in flat_rows([_measurement(0, engine="wrk")])}
    clean = _measurement(0)
    assert "wrong-answers" not in clean.flags and clean.wrong_answers == 0
    # wrk does not check answers: its phases say so, whatever the document asked
    assert _measurement(0, engine="wrk").answers_checked is False
    assert _measurement(0, checked=False).answers_checked is False
    # a record written before the check reads back as not known
    older = {k: v for k, v in clean.to_dict().items() if not k.startswith(("wrong", "answers"))}
    assert Measurement.from_dict(older).answers_checked is None


def _run_with_wrong(target: str, wrong: int) -> tuple[Any, list[Measurement]]:
    run, measurements = synthetic_run(("nginx", "haproxy", "caddy"), ("list", "show"), 3)
    out = []
    for m in measurements:
        m = dataclasses.replace(m, answers_checked=True)
        if m.target == target and m.workload == "show" and m.repetition == 1:
            m = dataclasses.replace(
                m,
                ok=m.ok - wrong,
                wrong_answers=wrong,
                wrong_kinds=(("crossed", wrong),),
                wrong_evidence=("wrong answer (crossed): request a GET /s; x; y",),
                flags=(*m.flags, "wrong-answers"),
            )
        out.append(m)
    return run, out


def test_a_gateway_with_wrong_answers_is_never_ranked_and_the_verdict_says_why() -> None:
    _, measurements = _run_with_wrong("nginx", 2)
    first = summarize(dataclasses.replace(m, wrong_answers=0) for m in measurements)
    leader = first.scores.gateways[0].target
    _, measurements = _run_with_wrong(leader, 2)
    summary = summarize(measurements, gateways=("nginx", "haproxy", "caddy"))
    assert summary.wrong == {leader: 2}
    assert summary.unranked == {leader: "gave 2 wrong answers"}
    assert leader not in [g.target for g in summary.scores.gateways]
    assert summary.scores.gateways[0].target != leader
    cell = summary.cell("show", leader)
    assert cell is not None and cell.wrong_answers == 2 and cell.wrong_kinds == (("crossed", 2),)
    lines = verdict(summary)
    assert f"{leader} (2 wrong answers: crossed 2) gave wrong answers under load" in " ".join(lines)
    assert not any("overlap a failure" in line for line in lines)


def test_the_tables_flag_wrong_answers_and_never_mark_them_best() -> None:
    run, measurements = _run_with_wrong("caddy", 3)
    # caddy is made the fastest on show: it still is not marked best there
    measurements = [
        dataclasses.replace(m, p50=0.1, mean=0.1, throughput=1e9)
        if (m.target, m.workload) == ("caddy", "show")
        else m
        for m in measurements
    ]
    report = build_report(run, measurements)
    # the dashboard's run page gets the same table and the count per target
    view = run_view(report)
    assert view["wrong_answers"] == {"caddy": 3}
    (shown,) = [t for t in view["tables"] if t["id"] == "latency-show"]
    assert shown["columns"][-1]["label"] == "Wrong answers"
    assert "3 wrong answers: crossed 3" in " ".join(view["verdict"])
    assert (
        "caddy on show: 3 wrong answers, the first: wrong answer (crossed): request a GET /s; "
        "x; y." in view["cautions"]
    )
    (show,) = [t for t in latency_tables(report) if t.id == "latency-show"]
    assert show.columns[-1].label == "Wrong answers"
    rows = {r.header: r for r in show.rows}
    assert rows["caddy"].cells[-1].text == "3"
    assert "wrong answers" in rows["caddy"].tags
    assert not any(c.best for c in rows["caddy"].cells)
    assert rows["nginx"].cells[-1].text == "0"
    unchecked = [dataclasses.replace(m, answers_checked=False) for m in measurements]
    (show,) = [t for t in latency_tables(build_report(run, unchecked)) if t.id == "latency-show"]
    assert {r.header: r.cells[-1].text for r in show.rows}["nginx"] == "unchecked"


def test_every_run_is_gated_on_wrong_answers_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gatebench.cli._common import print_thresholds

    run, measurements = _run_with_wrong("haproxy", 1)
    summary = build_report(run, measurements).summary
    results = evaluate([], summary)
    assert {r.subject for r in results} == {
        f"{g}/{w}" for g in ("nginx", "haproxy", "caddy") for w in ("list", "show")
    }
    (failed,) = failures(results)
    assert failed.line() == ("haproxy/show: wrong_answers 1 is above the maximum 0 (default)")
    # the console says which thresholds no plan wrote ('Thresholds: 5 of 6 met.' did not)
    assert print_thresholds(results) == 1
    assert capsys.readouterr().out == (
        "Thresholds: 5 of 6 met, the default gate: no wrong answers (docs/ci.md).\n"
    )
    # the plan's own threshold replaces the default
    allowed = evaluate([Threshold("wrong_answers", max=1.0, pointer="/t/0")], summary)
    assert not failures(allowed) and {r.threshold.pointer for r in allowed} == {"/t/0"}
    print_thresholds([*allowed, *results[:2]])
    assert capsys.readouterr().out.startswith("Thresholds: 8 of 8 met, 2 of them the default")
    # what was not checked is not held to the default; a threshold the plan writes fails it
    unchecked = [dataclasses.replace(m, answers_checked=False) for m in measurements]
    summary = build_report(run, unchecked).summary
    assert evaluate([], summary) == []
    written = evaluate([Threshold("wrong_answers", max=0.0, pointer="/t/0")], summary)
    assert written and all(r.value is None and not r.passed for r in written)


def test_a_wrong_answers_bound_is_a_whole_count() -> None:
    from gatebench.core.thresholds import parse_thresholds

    ok, problems = parse_thresholds(
        [{"metric": "wrong_answers", "max": 0}], gateways=["nginx"], baseline=True, workloads=["a"]
    )
    assert not problems and ok[0].label() == "wrong_answers <= 0"
    _, problems = parse_thresholds(
        [{"metric": "wrong_answers", "max": "0%"}, {"metric": "wrong_answers", "max": -1}],
        gateways=["nginx"],
        baseline=True,
        workloads=["a"],
    )
    assert [(p.pointer, p.message) for p in problems] == [
        (
            "/x-gatebench/thresholds/0/max",
            "expected a count of wrong answers (a whole number from 0), got '0%'",
        ),
        (
            "/x-gatebench/thresholds/1/max",
            "expected a count of wrong answers (a whole number from 0), got -1",
        ),
    ]


@pytest.mark.parametrize(
    ("backend", "checked"), [({"mock": True}, True), ({"url": "http://127.0.0.1:9"}, False)]
)
def test_the_document_says_which_phases_are_checked_and_how(
    backend: dict[str, Any], checked: bool
) -> None:
    api, section = _items()
    section = {**section, "backend": backend, "gateways": ["nginx", "krakend"]}
    section["workloads"] = [{**section["workloads"][0], "headers": {"X-Tenant": "acme"}}]
    plan = build_plan(section, api)
    urls = {t: f"http://127.0.0.1:{9000 + i}" for i, t in enumerate(plan.targets)}
    schedule = build_schedule(plan, urls, seed=2)
    document = render_workload(plan, api, schedule)
    for phase, doc in zip(schedule.phases, document["phases"], strict=True):
        # the warm-ups too: their requests name themselves, so that an answer a gateway
        # cached then is known as the run's own
        assert phase.answers_checked == checked
        if not phase.answers_checked:
            assert "answers" not in doc
            continue
        # KrakenD rebuilds the path and query it forwards: its receipt of the target is not
        # held to what was sent; every other target's is
        assert doc["answers"] == {"target": phase.target != "krakend", "headers": ["x-tenant"]}
    again = phases_from_document(document)
    assert [p.answers_checked for p in again] == [p.answers_checked for p in schedule.phases]


def test_a_cached_operation_says_so_to_the_engine() -> None:
    """Where the plan caches the operation's answers at the gateway, an answer may carry an
    earlier request's identity (of the same phase) with the same cache key: the engine is told
    (``cached``) and what the key varies on (``cache_key``, header names in lower case, as the
    backend digests them)."""
    api, section = _items()
    cache = {"ttl": "30s", "vary": ["path", "query", "header:X-Tenant"]}
    section = {
        **section,
        "policies": {"operations": {"getItem": {"cache": cache}}},
        "gateways": ["envoy"],
    }
    plan = build_plan(section, api)
    schedule = build_schedule(plan, dict.fromkeys(plan.targets, "http://127.0.0.1:9"), seed=2)
    document = render_workload(plan, api, schedule)
    cached = {
        (p["workload"], p["answers"].get("cached", False))
        for p in document["phases"]
        if "answers" in p
    }
    assert cached == {("read", True), ("write", False)}
    keys = {tuple(p["answers"].get("cache_key", ())) for p in document["phases"] if "answers" in p}
    assert keys == {("path", "query", "header:x-tenant"), ()}


def test_a_sampled_plan_tells_the_engines_and_the_report_says_so() -> None:
    api, section = _items()
    plan = build_plan({**section, "answers": {"every": 3}}, api)
    assert plan.answers_every == 3
    schedule = build_schedule(plan, dict.fromkeys(plan.targets, "http://127.0.0.1:9"), seed=2)
    document = render_workload(plan, api, schedule)
    assert {p["answers"]["every"] for p in document["phases"] if "answers" in p} == {3}
    run, measurements = _run_with_wrong("nginx", 1)
    run = dataclasses.replace(run, plan={**run.plan, "answers_every": 3})
    assert (
        "Answers were checked one in 3 (answers: {every: 3}): a wrong answer between them is "
        "not seen, and the wrong answers counted are a sample."
        in build_report(run, measurements).cautions
    )
