"""A rate limit's refusals counted as such: where the plan rate-limits an operation, a gateway's
429 to it is the policy working, not an error. The workload document marks those phases, each
engine's words for a 429 are read as one, and the measurement, the cell, the tables, the
cautions and the flat rows carry them apart from the errors; everywhere else a 429 stays an
error."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.measure import PhaseResult, measurement_from
from gatebench.core.model import Measurement, flat_rows
from gatebench.core.plan import build_plan
from gatebench.core.report import build_report
from gatebench.core.report._tables import latency_tables
from gatebench.core.spec import read_spec
from gatebench.core.stats import PhaseSample, phase_stats, status_of
from gatebench.core.workload import (
    RATE_LIMITED,
    Phase,
    build_schedule,
    phases_from_document,
    render_workload,
)
from synthetic import synthetic_run

ROOT = Path(__file__).resolve().parents[2]
LIMIT = {"requests": 5, "window": "1s"}


@pytest.mark.parametrize(
    ("reason", "status"),
    [
        ("status.find.in(200,201), but actually found 429", 429),  # Gatling
        # Gatling, a workload without expect: its 429s were counted as errors, not refusals
        ("status.find.lessThan(400), 429 is not less than 400", 429),
        ("status.find.in(200), found 429", 429),  # the open-model engine
        ("status.find.lt(400), found 503", 503),
        ("status 429, expected 200", 429),  # wrk
        ("Request timeout to 127.0.0.1:8080 after 60000 ms", None),
        ("j.n.ConnectException: Connection refused: /127.0.0.1:4290", None),
        ("KO", None),
    ],
)
def test_the_status_of_a_ko_is_read_from_each_engines_words(
    reason: str, status: int | None
) -> None:
    assert status_of(reason) == status


def _sample() -> PhaseSample:
    sample = PhaseSample()
    for i in range(6):
        sample.add(i, i + 2, True)
    for i in range(3):
        sample.add(i, i + 1, False, "status.find.in(200), found 429")
    sample.add(0, 1, False, "status 429, expected 200")
    sample.add(0, 9, False, "status.find.in(200), found 503")
    return sample


def test_a_phase_counts_its_refusals_apart_from_its_errors() -> None:
    limited = phase_stats(_sample(), (RATE_LIMITED,))
    assert (limited.requests, limited.ok, limited.ko, limited.rate_limited) == (11, 6, 1, 4)
    assert limited.error_pct == pytest.approx(100.0 / 11)
    assert limited.errors == (("status.find.in(200), found 503", 1),)
    # the same records where the plan limits nothing: every 429 is an error
    plain = phase_stats(_sample())
    assert (plain.ko, plain.rate_limited) == (5, 0)
    assert plain.error_pct == pytest.approx(500.0 / 11)
    assert dict(plain.errors)["status.find.in(200), found 429"] == 3


def _plan(policies: dict[str, Any]) -> tuple[Any, Any]:
    result = read_spec(str(ROOT / "tests/data/engine/items.yaml"))
    assert result.api is not None
    section = {**result.benchmark, "gateways": ["nginx", "haproxy"], "policies": policies}
    return result.api, build_plan(section, result.api)


def test_the_document_marks_the_phases_a_rate_limit_refuses() -> None:
    """Only the measured phases of a gateway on a limited operation: the baseline runs no
    policy, and a warm-up is not counted at all."""
    api, plan = _plan({"operations": {"getItem": {"rate_limit": LIMIT}}})
    operation = {w.name: w.operation_id for w in plan.workloads}
    schedule = build_schedule(plan, dict.fromkeys(plan.targets, "http://127.0.0.1:9"), seed=3)
    marked = {(p.target, operation[p.workload], p.measured): p.refusals for p in schedule.phases}
    assert marked[("nginx", "getItem", True)] == (429,)
    assert marked[("haproxy", "getItem", True)] == (429,)
    assert marked[("baseline", "getItem", True)] == ()
    assert marked[("nginx", "getItem", False)] == ()
    assert {v for (_, op, _), v in marked.items() if op != "getItem"} == {()}
    document = render_workload(plan, api, schedule)
    assert [p.get("refusals", []) for p in document["phases"]] == [
        list(p.refusals) for p in schedule.phases
    ]
    # a tester (local or on a VM) reads them back from the document it was given
    assert [p.refusals for p in phases_from_document(document)] == [
        p.refusals for p in schedule.phases
    ]


def _measurement(phase: Phase) -> Measurement:
    return measurement_from("r1", phase, PhaseResult(phase.index, _sample(), 0.0, 20.0, None))


def test_a_measurement_carries_its_refusals_and_reads_back() -> None:
    _, plan = _plan({"rate_limit": LIMIT})
    schedule = build_schedule(plan, dict.fromkeys(plan.targets, "http://127.0.0.1:9"), seed=3)
    by_target = {p.target: p for p in schedule.measured() if p.repetition == 1}
    limited, baseline = _measurement(by_target["nginx"]), _measurement(by_target["baseline"])
    assert (limited.ko, limited.rate_limited) == (1, 4)
    assert (baseline.ko, baseline.rate_limited) == (5, None)
    assert Measurement.from_dict(limited.to_dict()) == limited
    rows = {r["metric"]: r["value"] for r in flat_rows([limited])}
    assert rows["rate_limited"] == 4.0
    assert "rate_limited" not in {r["metric"] for r in flat_rows([baseline])}
    # a record written before the count reads back as not limited
    older = {k: v for k, v in limited.to_dict().items() if k != "rate_limited"}
    assert Measurement.from_dict(older).rate_limited is None


def test_the_tables_and_cautions_show_the_refusals() -> None:
    run, measurements = synthetic_run(("nginx", "haproxy"), ("list", "show"), 2)
    measurements = [
        dataclasses.replace(m, rate_limited=7 if m.target == "nginx" else 0)
        if m.workload == "show" and m.target != "baseline"
        else m
        for m in measurements
    ]
    report = build_report(run, measurements)
    cell = report.summary.cell("show", "nginx")
    assert cell is not None and cell.rate_limited == 14
    assert cell.to_dict()["rate_limited"] == 14
    tables = {t.id: t for t in latency_tables(report)}
    show, listing = tables["latency-show"], tables["latency-list"]
    assert show.columns[-1].label == "Rate-limited"
    assert {r.header: r.cells[-1].text for r in show.rows} == {
        "nginx": "14",
        "haproxy": "0",
        "baseline": "–",
    }
    assert "Rate-limited" not in [c.label for c in listing.columns]
    notes = [c for c in report.cautions if "rate limit" in c]
    assert len(notes) == 2
    assert notes[1].startswith(f"nginx on show: 14 of {cell.requests:,} answers (")
    assert "counted apart from the errors" in notes[1]
    # a few refusals among many answers: the verdict has nothing to add
    assert not [line for line in report.verdict if "rate limit" in line]


def test_the_verdict_says_where_most_answers_were_refusals() -> None:
    """98 % of nginx's answers were 429s and it ranked first on a throughput of refusals,
    with only a caution to say so."""
    run, measurements = synthetic_run(("nginx", "haproxy"), ("list", "show"), 2)
    measurements = [
        dataclasses.replace(m, rate_limited=m.requests - 10)
        if m.target != "baseline" and (m.workload == "show" or m.target == "nginx")
        else m
        for m in measurements
    ]
    report = build_report(run, measurements)
    assert (
        "Most answers of nginx on list; haproxy and nginx on show were the plan's rate limit "
        "refusing the request (429): their latency and throughput there measure how fast a "
        "gateway refuses, not how it serves the API; send less than the limit to compare "
        "serving (the cautions give each share)." in report.verdict
    )


def test_the_verdict_says_where_the_limit_refused_unequal_shares() -> None:
    """One gateway's limit refused half the requests, another's 38 %: the ranking compared
    different work (a refusal is faster than an answer) with only the cautions' shares to say
    so. A few points apart is the same limit."""
    run, measurements = synthetic_run(("nginx", "haproxy"), ("list", "show"), 2)

    def refused(m: Measurement) -> Measurement:
        if m.target == "baseline":
            return m
        share = {"haproxy": 0.50, "nginx": 0.38}[m.target] if m.workload == "show" else 0.38
        return dataclasses.replace(m, rate_limited=round(m.requests * share))

    report = build_report(run, [refused(m) for m in measurements])
    unequal = [line for line in report.verdict if line.startswith("The rate limit refused")]
    assert unequal == [
        "The rate limit refused unequal shares on show (haproxy 50 %, nginx 38 %): each "
        "gateway's limit let a different number of requests through (docs/gateways.md says "
        "how each counts), so the ranking there compares different work, and a refusal is "
        "faster than an answer."
    ]
