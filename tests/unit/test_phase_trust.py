"""Measurements a reader can trust or discard, pure parts: phases too short for their
throughput to mean anything, and phases that overlap a gateway's failure (docs/trust.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.aggregate import summarize
from gatebench.core.errors import Problem
from gatebench.core.ir import Api
from gatebench.core.measure import PhaseResult, measurement_from
from gatebench.core.metrics import METRICS
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.core.plan import Injection, build_plan, load_plan
from gatebench.core.report import build_report, render_html, render_json, render_markdown
from gatebench.core.report._tables import score_table
from gatebench.core.spec import load_spec
from gatebench.core.stats import PhaseSample
from gatebench.core.trust import failures_of, min_phase_ms, too_short, too_short_throughput
from gatebench.core.workload import Phase
from gatebench.run import RunJournal
from gatebench.run.stages._load_hooks import LoadHooks
from paths import EXAMPLES


def m(
    target: str, workload: str, rep: int, *, flags: tuple[str, ...] = (), **kw: Any
) -> Measurement:
    values: dict[str, Any] = dict.fromkeys(METRICS, 10.0)
    values.update(throughput=100.0, error_pct=0.0, requests=100, ok=100, ko=0)
    values.update(kw)
    return Measurement(
        run_id="r", target=target, workload=workload, repetition=rep, flags=flags, **values
    )


# -- the rule -------------------------------------------------------------------------------


def test_the_rule_is_20_times_resolution_plus_launch_spread() -> None:
    # the window is off by less than r + j; within 5 % needs D >= (r + j) / 0.05
    assert min_phase_ms(1.0) == 20.0
    assert min_phase_ms(1.0, 3.0) == 80.0
    assert min_phase_ms(0.001) == pytest.approx(0.02)
    assert min_phase_ms(1.0, -2.0) == 20.0  # a spread is never negative
    assert too_short(19.0, 1.0) and not too_short(20.0, 1.0)
    assert too_short(79.0, 1.0, 3.0) and not too_short(80.0, 1.0, 3.0)


def _phase(kind: str, users: int = 50) -> Phase:
    injection = (
        Injection("at_once", users=users)
        if kind == "at_once"
        else Injection("sequential", users=1, requests=users)
    )
    return Phase(0, "a", "w", 1, True, "http://x", injection)


def _sample(starts: list[int], ends: list[int]) -> PhaseResult:
    sample = PhaseSample()
    for s, e in zip(starts, ends, strict=True):
        sample.add(s, e, True)
    return PhaseResult(0, sample, 0.0, float(max(ends)), None)


def test_a_burst_is_too_short_against_its_launch_spread() -> None:
    # 50 requests launched over 3 ms, the last one answered at 60 ms: 60 < 20 × (1 + 3)
    starts = [i * 3 // 49 for i in range(50)]
    ends = [s + 10 for s in starts[:-1]] + [60]
    burst = measurement_from("r", _phase("at_once"), _sample(starts, ends))
    assert burst.flags == ("too-short",)
    assert burst.duration_s == 0.06 and burst.throughput == pytest.approx(50 / 0.06)
    # the same records as a sequential phase: its starts are spread on purpose (20 ms rule)
    assert measurement_from("r", _phase("sequential"), _sample(starts, ends)).flags == ()
    # wrk reads microseconds: 19 ms is plenty there, not with whole milliseconds
    short = _sample([0, 1], [5, 19])
    assert measurement_from("r", _phase("sequential", 2), short, engine="wrk").flags == ()
    assert measurement_from("r", _phase("sequential", 2), short).flags == ("too-short",)
    # a burst all launched in the same millisecond: 19 ms is too short, 20 ms is not
    assert measurement_from("r", _phase("at_once", 2), _sample([0, 0], [5, 19])).flags == (
        "too-short",
    )
    assert measurement_from("r", _phase("at_once", 2), _sample([0, 0], [5, 20])).flags == ()


def test_too_short_throughput_is_left_out_of_the_score_for_every_gateway() -> None:
    ms = [
        m("a", "w", 1, throughput=8_000.0, flags=("too-short",)),
        m("a", "w", 2, throughput=3_000.0),
        m("b", "w", 1, throughput=900.0),
        m("b", "w", 2, throughput=1_000.0),
        m("a", "v", 1, throughput=50.0, flags=("too-short",)),  # 1 of 2: scored
        m("a", "v", 2, throughput=60.0),
        m("a", "v", 3, throughput=70.0),
        m("b", "v", 1, throughput=65.0),
        m("baseline", "v", 1, throughput=5.0, flags=("too-short",)),  # never competes
    ]
    assert too_short_throughput(ms, ["a", "b"]) == {"w": ("a",)}
    s = summarize(ms, gateways=["a", "b"], workloads=["w", "v"])
    assert s.too_short == {"w": ("a",)}
    assert s.scores.left_out == (("w", "throughput"),)
    assert (
        "throughput on w is not scored: the phases of a there were too short to measure a "
        "rate (shorter than 20 × the timer's resolution plus a burst's launch spread, in at "
        "least half of the repetitions; docs/trust.md)"
    ) in s.notes
    # the 8,000 req/s of a millisecond phase does not carry a's score on w
    assert s.scores.gateway("a").endpoint("w").score == s.scores.gateway("b").endpoint("w").score
    report = build_report(
        RunRecord("r", "file:///x", "0" * 64, RunStatus.DONE, gateways=["a", "b"]), ms
    )
    assert (
        "Throughput does not count on w: its phases were too short to measure a rate (too "
        "short: docs/trust.md)."
    ) in report.verdict
    assert any(
        c.startswith("Flagged measurements") and "too-short in 3 (the phase was too short" in c
        for c in report.cautions
    )


# -- a gateway that fails mid-run -------------------------------------------------------------


def _failed_run() -> tuple[RunRecord, list[Measurement]]:
    ms = [
        m("a", "w", 1, p50=5.0),
        m("a", "w", 2, p50=5.0),
        m("b", "w", 1, p50=1.0),  # b is faster, but it failed during repetition 2
        m("b", "w", 2, p50=1.0, throughput=5_000.0, flags=("target-failed",)),
        m("baseline", "w", 1),
        m("baseline", "w", 2),
    ]
    record = RunRecord(
        "r",
        "file:///x",
        "0" * 64,
        RunStatus.PARTIAL,
        gateways=["a", "b", "c"],
        workloads=[{"name": "w"}],
        environment={
            "failures": {"b": {"repetition": 2, "last_alive_ms": 1.0, "first_dead_ms": 2.0}}
        },
        target_errors={"b": "b exited with code -9 during the run; last log lines:\n..."},
    )
    return record, ms


def test_failures_are_read_from_the_environment() -> None:
    assert failures_of({"failures": {"b": {"repetition": 2}, "a": {}}}) == {
        "a": "during the run",
        "b": "during repetition 2",
    }
    assert failures_of({}) == {} and failures_of({"failures": []}) == {}


def test_a_gateway_that_failed_is_not_ranked_and_its_overlapping_phases_not_counted() -> None:
    record, ms = _failed_run()
    s = summarize(ms, gateways=["a", "b", "c"], failed=failures_of(record.environment))
    # c has no measurement at all: not ranked, never scored 0 as if it had lost
    assert s.unranked == {"b": "failed during repetition 2", "c": "was not measured"}
    assert [g.target for g in s.scores.gateways] == ["a"]
    assert s.failed_measurements == ("b:w:2",)
    assert s.cells[("w", "b")].n == 1  # its phase before the failure stays in the tables
    assert s.complete_repetitions == (1, 2)  # b's missing repetition does not count against a
    assert "b is not ranked: it failed during repetition 2" in s.notes
    assert (
        "1 measurement overlaps its target's failure and is left out of every figure: b:w:2"
        in s.notes
    )
    report = build_report(record, ms)
    assert report.verdict[-1] == (
        "b failed during repetition 2: not ranked (the phases that overlap a failure are left "
        "out of every figure)."
    )
    rows = {r.header: [c.text for c in r.cells] for r in score_table(report).rows}
    assert rows["b"] == ["–", "–", "–", "–", "not scored: failed during repetition 2"]
    assert list(rows) == ["a", "b", "c"]
    assert "b failed: b exited with code -9 during the run; last log lines:" in report.cautions
    assert "| b | – | – | – | not scored: failed during repetition 2 |" in render_markdown(report)
    assert "not scored: failed during repetition 2" in render_html(report)
    data = json.loads(render_json(report))
    assert data["unranked"] == {"b": "failed during repetition 2", "c": "was not measured"}
    assert data["failed_measurements"] == ["b:w:2"]


class ProcessCheckStandIn:
    """Stands in for the local provisioner's process check (a unit test has no gateway):
    the target is alive until ``dead`` is set, like ``LocalProvisioner.failure``."""

    def __init__(self) -> None:
        self.dead = False

    def failure(self, target: str) -> str | None:
        return f"{target} exited with code -9 during the run" if self.dead else None


def _result(index: int, start_ms: float, end_ms: float) -> PhaseResult:
    sample = PhaseSample()
    sample.add(0, int(end_ms - start_ms), True)
    return PhaseResult(index, sample, start_ms, end_ms, None)


def test_hooks_flag_the_phases_that_overlap_the_failure_window(tmp_path: Path) -> None:
    record = RunRecord("r", "file:///x", "0" * 64, gateways=["a"], workloads=[{"name": "w"}])
    run = RunJournal(record, tmp_path, None, lambda progress: None)
    inj = Injection("concurrent", 5, None, 2.0)
    phases = {
        i: Phase(i, "a", "w", rep, True, "http://x", inj) for i, rep in ((0, 1), (1, 2), (2, 2))
    }
    check = ProcessCheckStandIn()
    hooks = LoadHooks(run, phases, check, tmp_path / "skip.txt", len(phases))
    hooks.on_phase(_result(0, 0.0, 100.0))  # checked alive after it ended: clean
    seen_alive = hooks.last_alive_ms["a"]
    check.dead = True
    hooks.repetition = 2
    hooks.on_phase(_result(1, seen_alive - 50.0, seen_alive + 10.0))  # ends after: overlaps
    hooks.on_phase(_result(2, seen_alive - 500.0, seen_alive - 400.0))  # ended before: clean
    assert [x.flags for x in run.measurements] == [(), ("target-failed",), ()]
    failure = run.record.environment["failures"]["a"]
    assert failure["repetition"] == 2 and failure["last_alive_ms"] == seen_alive
    assert failure["first_dead_ms"] >= seen_alive
    assert run.record.target_errors == {"a": "a exited with code -9 during the run"}
    assert (tmp_path / "skip.txt").read_text() == "a\n"
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["environment"]["failures"]["a"]["repetition"] == 2


class BackendStandIn:
    """The backend process gatebench started, as the hooks watch it (``Alive``)."""

    def __init__(self) -> None:
        self.up = True

    def alive(self) -> bool:
        return self.up


def test_a_backend_that_dies_leaves_every_later_phase_out_of_the_figures(tmp_path: Path) -> None:
    """The backend stopped while nginx was measured: what nginx and the baseline answered
    after it (100 % errors) measured no gateway; ranked as it was, it made a gateway with
    errors 'score highest'. The phases that overlap the failure are flagged backend-failed
    and left out of every figure, every target's remaining phases are skipped, the failure is
    recorded, and the report says so."""
    record = RunRecord("r", "file:///x", "0" * 64, gateways=["a", "b"], workloads=[{"name": "w"}])
    run = RunJournal(record, tmp_path, None, lambda progress: None)
    inj = Injection("concurrent", 5, None, 2.0)
    phases = {
        i: Phase(i, t, "w", 1, True, "http://x", inj)
        for i, t in ((0, "a"), (1, "baseline"), (2, "b"))
    }
    backend = BackendStandIn()
    hooks = LoadHooks(
        run, phases, ProcessCheckStandIn(), tmp_path / "skip.txt", len(phases), backend=(backend,)
    )
    hooks.on_phase(_result(0, 0.0, 100.0))  # a: measured while the backend was up
    seen_alive = hooks._backend_alive_ms
    backend.up = False
    hooks.tick()
    hooks.on_phase(_result(1, seen_alive - 50.0, seen_alive + 10.0))  # the baseline: overlaps
    assert [(x.target, x.flags) for x in run.measurements] == [
        ("a", ()),
        ("baseline", ("backend-failed",)),
    ]
    down = run.record.environment["backend_failure"]
    assert down["last_alive_ms"] == seen_alive and down["first_dead_ms"] >= seen_alive
    assert (tmp_path / "skip.txt").read_text() == "a\nb\nbaseline\n"
    s = summarize(run.measurements, gateways=["a", "b"])
    assert s.cell("w", "baseline") is None
    assert (
        "1 measurement overlaps the failure of the backend gatebench started and is left out "
        "of every figure: baseline:w:1"
    ) in s.notes
    assert s.unranked == {"b": "was not measured"}


# -- the plan checker -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def auction() -> Api:
    result = load_spec(EXAMPLES / "auction" / "openapi.yaml")
    assert result.api is not None
    return result.api


def _warnings(api: Api, injection: dict[str, Any], **workload: Any) -> list[tuple[str, str]]:
    plan = build_plan(
        {
            "gateways": ["nginx"],
            "auth": {"bearer": {"env": "T"}},
            "workloads": [
                {"name": "w", "operation": "getAuction", "injection": injection, **workload}
            ],
        },
        api,
    )
    assert all(isinstance(p, Problem) and p.severity == "warning" for p in plan.warnings)
    assert "warnings" not in plan.to_dict()
    return [(p.pointer, p.message) for p in plan.warnings]


def test_the_plan_warns_of_profiles_too_short_to_measure(auction: Api) -> None:
    assert _warnings(auction, {"at_once": 50}) == [
        (
            "/x-gatebench/workloads/0/injection/at_once",
            "a burst of 50 requests lasts about one response time (a few ms on a fast target): "
            "its throughput is not scored when the phase is too short to measure "
            "(docs/trust.md); to measure throughput, repeat the burst: concurrent: 50, "
            "duration: 10s",
        )
    ]
    assert _warnings(auction, {"sequential": 60}) == [
        (
            "/x-gatebench/workloads/0/injection/sequential",
            "60 sequential requests can end within a few ms on a fast target (a loopback round "
            "trip takes about 0.2 ms): the throughput is not scored when the phase is too short "
            "to measure (docs/trust.md); to measure throughput, send more or for a while: "
            "sequential: 2000, or concurrent: 1, duration: 10s",
        )
    ]
    assert _warnings(auction, {"concurrent": 10, "requests": 500}) == [
        (
            "/x-gatebench/workloads/0/injection/requests",
            "500 requests from 10 users can end within a few ms on a fast target (a loopback "
            "round trip takes about 0.2 ms): the throughput is not scored when the phase is too "
            "short to measure (docs/trust.md); to measure throughput, send more or for a while: "
            "concurrent: 10, duration: 10s",
        )
    ]
    # profiles that last as long as they say, or enough round trips: no warning
    assert _warnings(auction, {"concurrent": 10, "duration": "2s"}) == []
    assert _warnings(auction, {"sequential": 400}) == []
    assert _warnings(auction, {"ramp": {"users": 50, "duration": "1s"}}) == []


def test_a_burst_of_large_uploads_lasts_long_enough(auction: Api) -> None:
    # the auction example: 50 images of 8.6 MB at once take hundreds of ms on loopback
    plan = load_plan(load_spec(EXAMPLES / "auction" / "openapi.yaml"))
    assert plan.warnings == ()
