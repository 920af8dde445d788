"""Trust in the numbers, pure parts: the ceiling rule (tester-bound), throughput left out of the
score, two engines' agreement, reproducibility across runs, and the report's trust section."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gatebench.cli.run import report_lines
from gatebench.core.aggregate import summarize
from gatebench.core.measure import PhaseResult, measurement_from
from gatebench.core.metrics import METRICS
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.core.plan import Injection
from gatebench.core.report import build_report, render_html, render_json, render_markdown
from gatebench.core.score import ScoreError, score, values_from_table
from gatebench.core.stats import PhaseSample
from gatebench.core.trust import (
    CEILING_TARGET,
    Agreement,
    Ceiling,
    CeilingPoint,
    agreement_summary,
    bound_by_tester,
    ceiling_of,
    coefficient_of_variation,
    compare_engines,
    demonstrated_ceiling,
    flag_engine_busy,
    flag_engine_cold,
    flag_near_ceiling,
    gap_pct,
    is_tester_bound,
    near_ceiling,
    reproducibility,
)
from gatebench.core.workload import Phase
from gatebench.kinds.fixed.score import score_and_save
from gatebench.local.ceiling import render_ceiling_config
from gatebench.run import RunJournal, RunOutcome
from gatebench.run.stages._load_hooks import LoadHooks


def m(
    target: str,
    workload: str,
    rep: int,
    *,
    throughput: float = 100.0,
    p50: float = 10.0,
    engine: str = "gatling",
    flags: tuple[str, ...] = (),
    **kw: Any,
) -> Measurement:
    values: dict[str, Any] = dict.fromkeys(METRICS, p50)
    values.update(throughput=throughput, p50=p50, error_pct=0.0, requests=100, ok=100, ko=0)
    values.update(kw)
    return Measurement(
        run_id="r",
        target=target,
        workload=workload,
        repetition=rep,
        engine=engine,
        flags=flags,
        **values,
    )


def run_record(**kw: Any) -> RunRecord:
    values: dict[str, Any] = {
        "run_id": "r",
        "spec_uri": "file:///a.yaml",
        "spec_sha256": "0" * 64,
        "status": RunStatus.DONE,
        "created_at": 0.0,
        "gateways": ["a", "b"],
        "workloads": [{"name": "w"}, {"name": "v"}],
    }
    values.update(kw)
    return RunRecord(**values)


# -- the ceiling ------------------------------------------------------------------------------


def test_within_20_percent_of_the_ceiling_is_tester_bound() -> None:
    assert near_ceiling(800.0, 1000.0)
    assert near_ceiling(1200.0, 1000.0)
    assert not near_ceiling(799.9, 1000.0)
    assert not near_ceiling(800.0, None)
    assert not near_ceiling(800.0, 0.0)
    assert is_tester_bound(1, 2) and is_tester_bound(2, 3)
    assert not is_tester_bound(1, 3) and not is_tester_bound(0, 0)


def _phase(
    target: str = "a", workload: str = "w", index: int = 0, injection: Injection | None = None
) -> Phase:
    injection = injection or Injection("concurrent", 5, None, 2.0)
    return Phase(index, target, workload, 1, True, "http://x", injection)


def _result(requests: int, duration_ms: int, index: int = 0, latency_ms: int = 1) -> PhaseResult:
    sample = PhaseSample()
    for i in range(requests):
        sample.add(i * duration_ms // requests, i * duration_ms // requests + latency_ms, True)
    sample.last_end = duration_ms
    return PhaseResult(index, sample, 0.0, float(duration_ms), None)


def test_a_measurement_carries_only_the_cpu_flags_when_it_is_made() -> None:
    made = measurement_from("r", _phase(), _result(900, 1000), engine="wrk")
    assert made.flags == () and made.engine == "wrk"
    assert measurement_from("r", _phase(), _result(500, 1000)).engine == "gatling"


def _cold(target: str, rep: int, at: float, cpu: float | None, requests: int = 10_000) -> Any:
    return m(target, "w", rep, started_at=at, engine_cpu_s=cpu, requests=requests)


def test_engine_cold_flags_the_first_phases_that_cost_the_engine_more_per_request() -> None:
    # measured here (docs/trust.md): the run's first phase of a workload cost the engine
    # 1.31-1.41 CPU-s for 7,200-7,700 requests, the later ones 0.6-0.7 for 11,000-14,800
    ms = [
        _cold("a", 1, 30.0, 0.7, 11_000),  # third to run, warm
        _cold("b", 1, 10.0, 1.34, 7_559),  # first to run: cold
        _cold("baseline", 1, 20.0, 1.1, 8_000),  # second: still cold (1.5 × the cheapest)
        _cold("a", 2, 40.0, 0.62, 11_000),
        _cold("b", 2, 50.0, 0.66, 11_300),
        _cold("baseline", 2, 60.0, 0.61, 14_800),
    ]
    flagged = flag_engine_cold(ms)
    assert [x.flags for x in flagged] == [(), ("engine-cold",), ("engine-cold",), (), (), ()]
    assert flagged[0] is ms[0] and flagged[3] is ms[3]
    assert flag_engine_cold(flagged) == flagged  # once


def test_engine_cold_leaves_a_warm_run_and_a_costly_target_alone() -> None:
    # a costly phase after a cheap one is no cold engine: the workload's first phase was warm
    warm_first = [
        _cold("a", 1, 10.0, 0.6),
        _cold("b", 1, 20.0, 1.5),
        _cold("baseline", 1, 30.0, 0.6),
    ]
    assert flag_engine_cold(warm_first) == warm_first
    # a target that costs the engine more in every repetition (new connections): not the engine
    costly = [
        _cold("b", 1, 10.0, 1.5),
        _cold("a", 1, 20.0, 0.6),
        _cold("baseline", 1, 30.0, 0.6),
        _cold("a", 2, 40.0, 0.6),
        _cold("b", 2, 50.0, 1.4),
    ]
    assert [x.flags for x in flag_engine_cold(costly)] == [()] * 5
    # too little to compare: no engine figure, a fraction of a CPU-second, two phases
    assert flag_engine_cold([_cold("b", 1, 1.0, None), *warm_first[:1], *warm_first[2:]]) == [
        _cold("b", 1, 1.0, None),
        *warm_first[:1],
        *warm_first[2:],
    ]
    tiny = [_cold("b", 1, 1.0, 0.04, 100), _cold("a", 1, 2.0, 0.01, 100), _cold("c", 1, 3, 0.01)]
    assert [x.flags for x in flag_engine_cold(tiny)] == [()] * 3
    # a phase too small to judge neither is flagged nor ends the first ones; 100 sequential
    # requests that cost the engine 0.16 CPU-s beside 0.02-0.03 are judged (measured here)
    small = [
        _cold("a", 1, 1.0, 0.04, 100),
        _cold("b", 1, 2.0, 0.16, 100),
        _cold("c", 1, 3.0, 0.03, 100),
        _cold("a", 2, 4.0, 0.02, 100),
    ]
    assert [x.flags for x in flag_engine_cold(small)] == [(), ("engine-cold",), (), ()]
    assert flag_engine_cold([_cold("b", 1, 1.0, 1.4), _cold("a", 1, 2.0, 0.6)])[0].flags == ()


PINNED = {"gateway": (1,), "engine": (0,), "backend": (0,)}


def _busy(target: str, rep: int, engine: float, backend: float, gateway: float | None) -> Any:
    """A 2 s phase with its CPU seconds per role (the engine and the backend on cpu 0)."""
    return m(
        target,
        "list",
        rep,
        duration_s=2.0,
        engine_cpu_s=engine,
        backend_cpu_s=backend,
        gateway_cpu_s=gateway,
        throughput=3_000.0 if target != "baseline" else 5_800.0,
    )


def test_engine_busy_where_the_engines_cores_were_out_of_time_and_the_gateways_not() -> None:
    """Measured here (a quick run of examples/petstore, seed given in docs/trust.md): the
    engine and the backend used 1.46 + 0.54 CPU-s of cpu 0 in 2 s while haproxy used 0.31 of
    cpu 1; wrk measured haproxy and nginx within 1 % of each other, Gatling 24 % apart."""
    ms = [
        _busy("haproxy", 1, 1.46, 0.54, 0.31),  # cpu 0: 100 %
        _busy("nginx", 1, 1.34, 0.64, 0.37),  # 99 %
        _busy("baseline", 1, 0.91, 0.86, None),  # 88 %: not saturated
        _busy("envoy", 1, 1.2, 0.8, 1.96),  # its own core full too: the gateway's limit
        _busy("caddy", 1, None, 0.8, 0.5),  # no engine figure
    ]
    flagged = flag_engine_busy(ms, PINNED)
    assert [x.flags for x in flagged] == [("engine-busy",), ("engine-busy",), (), (), ()]
    assert flagged[2] is ms[2] and flag_engine_busy(flagged, PINNED) == flagged  # once
    # the backend elsewhere: only the engine counts on its cores
    apart = {"gateway": (1,), "engine": (0,), "backend": (2,)}
    assert [x.flags for x in flag_engine_busy(ms, apart)] == [()] * 5
    # not pinned apart (or no layout on record): the CPU accounting's rule, not this one
    assert flag_engine_busy(ms, {"gateway": (0, 1), "engine": (0, 1)}) == ms
    assert flag_engine_busy(ms, {}) == ms


def test_an_engine_busy_workload_counts_as_tester_bound_for_the_score() -> None:
    ms = [
        *flag_engine_busy([_busy(t, 1, 1.46, 0.54, 0.31) for t in ("a", "b")], PINNED),
        _busy("baseline", 1, 0.91, 0.86, None),
        m("a", "show", 1, throughput=700.0),
        m("b", "show", 1, throughput=500.0),
    ]
    assert bound_by_tester(ms, ["a", "b"], {}) == {"list": ("a", "b")}
    summary = summarize(ms, gateways=["a", "b"])
    assert not summary.throughput_scored("list") and summary.throughput_scored("show")
    assert summary.engine_busy == {"list": ("a", "b")}
    assert any("(engine-busy)" in n for n in summary.notes)
    # the same reason on two workloads is one note naming both (it was one note each)
    get = [dataclasses.replace(x, workload="get") for x in ms if x.workload == "list"]
    both = summarize([*ms, *get], gateways=["a", "b"])
    [note] = [n for n in both.notes if "(engine-busy)" in n]
    assert note.startswith("throughput on get and list is not scored: the load engine's cores")
    assert "of the phases of a and b in at least half" in note  # it read "of a, b"
    run = run_record(workloads=[{"name": "list"}, {"name": "show"}])
    said = " ".join(build_report(run, ms).verdict)
    assert (
        "Throughput does not count on list: the load engine's cores were out of time there "
        "while the gateways' were not, so the engine, not the gateways, set it (engine-busy)."
    ) in said


def test_flag_near_ceiling_uses_the_demonstrated_ceiling() -> None:
    ms = [
        m("baseline", "w", 1, throughput=2_000.0),
        m("a", "w", 1, throughput=900.0),
        m("b", "w", 1, throughput=1_700.0),
        m("b", "w", 2, throughput=100.0, flags=("noisy", "tester-bound")),  # the CPU's: kept
        m("a", "v", 1, throughput=90.0),
        m("b", "v", 1, throughput=0.0, requests=0),
    ]
    flagged = flag_near_ceiling(ms, {"w": 1_000.0, "v": 100.0})
    assert [x.flags for x in flagged] == [
        ("tester-bound",),
        (),  # 900 reached the ceiling's reading, but not 80 % of the 2,000 the run showed
        ("tester-bound",),
        ("noisy", "tester-bound"),
        ("tester-bound",),
        (),
    ]
    assert flagged[1] is ms[1] and flagged[3] is ms[3]
    assert flag_near_ceiling(ms, {}) == ms


def run_ceiling_of(environment: dict[str, Any]) -> dict[str, float]:
    ceiling = ceiling_of(environment)
    assert ceiling is not None
    return {w: p.throughput for w, p in ceiling.workloads.items()}


def test_the_tester_bound_flag_and_the_score_use_the_same_ceiling(tmp_path: Path) -> None:
    """The ceiling phase reads 1,000 req/s once; the baseline then goes 2,000, which the
    engine therefore drives. a at 900 req/s is 45 % of that (scored, not flagged); b at 1,700
    is 85 % (flagged, its throughput not scored); the baseline is at its own ceiling."""
    record = run_record(gateways=["a", "b"], workloads=[{"name": "w"}])
    run = RunJournal(record, tmp_path, None, lambda progress: None)
    phases = {
        0: _phase(CEILING_TARGET, index=0),
        1: _phase("a", index=1),
        2: _phase("b", index=2),
        3: _phase("baseline", index=3),
    }
    hooks = LoadHooks(run, phases, None, tmp_path / "skip.txt", len(phases))
    for index, requests in ((0, 1_000), (1, 900), (2, 1_700), (3, 2_000)):
        hooks.on_phase(_result(requests, 1_000, index))
    assert run_ceiling_of(run.record.environment) == {"w": 1_000.0}
    outcome = RunOutcome(record, run.measurements, tmp_path)
    score_and_save(run, outcome)
    want = {"a": [], "b": ["tester-bound"], "baseline": ["tester-bound"]}
    assert {x.target: list(x.flags) for x in outcome.measurements} == want
    lines = (tmp_path / "measurements.jsonl").read_text(encoding="utf-8").splitlines()
    assert {d["target"]: d["flags"] for d in map(json.loads, lines)} == want
    assert len(lines) == 3
    summary = outcome.report.summary
    assert summary.tester_bound == {"w": ("b",)}
    assert summary.flag_counts() == {"tester-bound": 2}
    assert summary.cells[("w", "a")].flags == {}


def test_a_run_flags_engine_busy_from_the_cores_its_record_names(tmp_path: Path) -> None:
    """Once every phase is in, the run reads its layout from its record and flags the phases
    whose engine cores were out of time (written back to measurements.jsonl too)."""
    cores = {"setting": "pinned", "cores": {"gateway": [1], "engine": [0], "backend": [0]}}
    record = run_record(workloads=[{"name": "list"}], environment={"cpu_affinity": cores})
    run = RunJournal(record, tmp_path, None, lambda progress: None)
    for x in (_busy("a", 1, 1.46, 0.54, 0.31), _busy("b", 1, 0.8, 0.5, 0.3)):
        run.put(x)
    outcome = RunOutcome(record, run.measurements, tmp_path)
    score_and_save(run, outcome)
    want = {"a": ["engine-busy"], "b": []}
    assert {x.target: list(x.flags) for x in outcome.measurements} == want
    lines = (tmp_path / "measurements.jsonl").read_text(encoding="utf-8").splitlines()
    assert {d["target"]: d["flags"] for d in map(json.loads, lines)} == want


def test_the_rate_an_open_model_offers() -> None:
    assert Injection("constant_rate", rate=200.0, duration=4.0).offered_rate == 200.0
    assert Injection("ramp", users=50, duration=10.0).offered_rate == 5.0
    assert Injection("arrivals", counts=(10, 30, 0, 20), step=2.0).offered_rate == 7.5
    for closed in (
        Injection("concurrent", users=5, duration=2.0),
        Injection("sequential", users=1, requests=400),
        Injection("at_once", users=50),
    ):
        assert closed.offered_rate is None


def test_where_the_plan_sets_the_rate_the_ceiling_is_no_limit(tmp_path: Path) -> None:
    """A constant_rate workload of 200 req/s: the ceiling phase carries 200 req/s, which is
    the plan's rate and not what the engine can do. No target is flagged tester-bound there
    (they all carry 200 req/s, at 100 % of that reading), throughput is not scored, and the
    report says why. The closed-model workload beside it keeps the ceiling rule."""
    rate = Injection("constant_rate", rate=200.0, duration=2.0)
    record = run_record(gateways=["a", "b"], workloads=[{"name": "w"}, {"name": "v"}])
    run = RunJournal(record, tmp_path, None, lambda progress: None)
    phases = {
        0: _phase(CEILING_TARGET, "w", 0),
        1: _phase(CEILING_TARGET, "v", 1, rate),
        2: _phase("a", "w", 2),
        3: _phase("b", "w", 3),
        4: _phase("a", "v", 4, rate),
        5: _phase("b", "v", 5, rate),
    }
    hooks = LoadHooks(run, phases, None, tmp_path / "skip.txt", len(phases))
    for index, requests in ((0, 1_000), (1, 400), (2, 900), (3, 500), (4, 400), (5, 400)):
        phase = phases[index]
        latency = 3 if phase.target == "b" else 1  # b is slower: no tie
        hooks.on_phase(_result(requests, 2_000 if phase.workload == "v" else 1_000, index, latency))
    ceiling = ceiling_of(run.record.environment)
    assert ceiling is not None
    assert ceiling.workloads["v"].offered == 200.0 and ceiling.workloads["w"].offered is None
    assert ceiling.limits() == {"w": 1_000.0} and ceiling.rates_set() == {"v": 200.0}
    outcome = RunOutcome(record, run.measurements, tmp_path)
    score_and_save(run, outcome)
    flags = {(x.target, x.workload): x.flags for x in outcome.measurements}
    assert flags == {
        ("a", "w"): ("tester-bound",),
        ("b", "w"): (),
        ("a", "v"): (),
        ("b", "v"): (),
    }
    report = outcome.report
    summary = report.summary
    assert summary.rates_set == {"v": 200.0} and summary.tester_bound == {"w": ("a",)}
    assert set(summary.scores.left_out) == {("w", "throughput"), ("v", "throughput")}
    assert not summary.throughput_scored("v")
    assert (
        "Throughput does not count on v: the plan sets the rate there (an open model), and "
        "every target that keeps up carries it."
    ) in report.verdict
    unscored = [n for n in summary.notes if " is not scored: " in n]
    assert unscored[1].startswith(  # the verdict's order: tester-bound, then a rate set
        "throughput on v is not scored: its profile starts 200 requests a second"
    )
    assert [n.split(" is not scored")[0] for n in unscored] == [
        "throughput on w",
        "throughput on v",
    ]
    assert [(h.workload, h.target) for h in report.trust.headroom] == [
        ("w", "a"),
        ("w", "b"),
    ]
    md = render_markdown(report)
    assert "throughput is not scored there (v, 200 req/s offered)" in md
    named = [{**w, "method": "GET", "path": "/x", "injection": "..."} for w in record.workloads]
    shown = replace(outcome, record=replace(record, workloads=named))
    lines = report_lines(shown)
    assert any(x.startswith("Engine ceiling (") and ": w 1,000 req/s;" in x for x in lines)
    assert "The plan sets the rate of v (200 req/s), an open model: " in "\n".join(lines)
    # a rate the engine could not carry against the static file stays its limit
    short = Ceiling("gatling", "nginx", {"v": CeilingPoint(150.0, 0.0, 300, 200.0)})
    assert short.limits() == {"v": 150.0} and short.rates_set() == {}
    assert Ceiling.from_dict(short.to_dict()) == short
    assert (
        "offered"
        not in Ceiling("g", "n", {"w": CeilingPoint(1.0, 0.0, 1)}).to_dict()["workloads"]["w"]
    )


def test_only_the_ceiling_leaves_throughput_out_of_the_score() -> None:
    ms = [
        m("a", "w", 1, throughput=850.0),
        m("a", "w", 2, throughput=700.0),
        m("b", "w", 1, throughput=400.0),
        m("b", "w", 2, throughput=420.0),
        # the CPU accounting's flag alone does not decide
        m("a", "v", 1, throughput=100.0, flags=("tester-bound",)),
        m("b", "v", 1, throughput=50.0),
    ]
    assert bound_by_tester(ms, ["a", "b"], {"w": 1000.0, "v": 1000.0}) == {"w": ("a",)}
    summary = summarize(ms, gateways=["a", "b"], workloads=["w", "v"], ceiling={"w": 1000.0})
    assert summary.tester_bound == {"w": ("a",)}
    assert summary.scores.left_out == (("w", "throughput"),)
    assert [s.metric for s in summary.scores.gateway("b").endpoint("w").metrics] == [
        x for x in METRICS if x != "throughput"
    ]
    assert "throughput" in [s.metric for s in summary.scores.gateway("b").endpoint("v").metrics]
    assert summary.notes[0] == (
        "throughput on w is not scored: a reached 80 % of the load engine's ceiling there in at "
        "least half of the repetitions (tester-bound), so the number ranks the load generator, "
        "not the gateways"
    )


def test_a_target_faster_than_the_ceiling_reading_raises_the_ceiling() -> None:
    # the ceiling phase read 10,000 req/s once; the baseline went 29,000 on average, so the
    # engine drives at least that: 20,000 is 69 % of it (scored), 26,000 is 90 % (not)
    ms = [
        m("baseline", "bid", 1, throughput=28_000.0),
        m("baseline", "bid", 2, throughput=30_000.0),
        m("a", "bid", 1, throughput=20_000.0),
        m("a", "bid", 2, throughput=20_000.0),
        m("b", "bid", 1, throughput=26_000.0),
        m("b", "bid", 2, throughput=26_000.0),
        m("a", "get", 1, throughput=900.0),
        m("b", "get", 1, throughput=500.0),
    ]
    ceiling = {"bid": 10_000.0, "get": 1_000.0}
    assert demonstrated_ceiling(ms, ceiling) == {"bid": 29_000.0, "get": 1_000.0}
    assert demonstrated_ceiling([], ceiling) == ceiling
    assert bound_by_tester(ms, ["a", "b"], ceiling) == {"bid": ("b",), "get": ("a",)}
    empty = m("b", "get", 2, throughput=0.0, requests=0)
    assert demonstrated_ceiling([*ms, empty], ceiling)["get"] == 1_000.0
    # the report says which ceiling its table shows, and why it is not the reading
    points = {w: CeilingPoint(v, 0.0, 5000) for w, v in ceiling.items()}
    env = {"ceiling": Ceiling("gatling", "nginx static file (1 worker)", points).to_dict()}
    md = render_markdown(build_report(run_record(environment=env), ms, now=0.0))
    assert (
        "One short reading is noisy: on bid the ceiling phase read 10,000 req/s, and baseline "
        "averaged 29,000 req/s over its repetitions. The engine drives at least what a target "
        "averaged, so that is the ceiling shown there."
    ) in md
    assert "| bid | b | 26,000 | 29,000 | 90 % | 2 of 2 |" in md
    assert "on get the ceiling phase read" not in md  # no target went faster there


def test_left_out_metrics_change_the_mean_as_eq5_says() -> None:
    values = values_from_table(
        {"w": {"a": {"throughput": 100.0, "p50": 10.0}, "b": {"throughput": 50.0, "p50": 20.0}}}
    )
    full = score(values, metrics=["throughput", "p50"])
    assert full.gateway("b").score == pytest.approx(100 * (0.5 + 0.5) / 2)
    partial = score(values, metrics=["throughput", "p50"], left_out={"w": ["throughput"]})
    assert partial.gateway("b").score == pytest.approx(50.0)
    assert partial.left_out == (("w", "throughput"),)
    with pytest.raises(ScoreError, match=r"^workload 'w': every scored metric is left out$"):
        score(values, metrics=["p50"], left_out={"w": ["p50"]})


def test_the_ceiling_server_config_answers_everything_from_one_file(tmp_path: Any) -> None:
    text = render_ceiling_config(tmp_path, 8123)
    assert "listen 127.0.0.1:8123 backlog=4096;" in text
    assert "try_files /ceiling.json =404;" in text
    assert "error_page 405 =200 /ceiling.json;" in text
    assert "user root" not in text
    assert "user root root;\n" in render_ceiling_config(tmp_path, 8123, as_root=True)


# -- two engines ------------------------------------------------------------------------------


def test_agreement_is_within_10_percent_or_one_gatling_millisecond() -> None:
    def a(t1: float, t2: float, p1: float, p2: float) -> Agreement:
        return Agreement("x", "w", "gatling", "wrk", t1, t2, p1, p2, 3, 3)

    assert gap_pct(90.0, 100.0) == pytest.approx(10.0)
    assert a(90.0, 100.0, 20.0, 20.3).agrees
    assert not a(89.0, 100.0, 20.0, 20.3).agrees
    assert a(100.0, 100.0, 0.0, 0.6).p50_agrees  # 100 % apart, but under Gatling's 1 ms
    assert not a(100.0, 100.0, 21.0, 18.5).p50_agrees
    both_wrk = Agreement("x", "w", "wrk", "wrk", 1.0, 1.0, 0.5, 0.6, 1, 1)
    assert not both_wrk.p50_agrees  # µs resolution: no millisecond of slack


def test_compare_engines_pairs_cells_by_target_and_workload() -> None:
    main = [
        m("a", "w", 1, throughput=480.0, p50=20.0),
        m("a", "w", 2, throughput=500.0, p50=21.0, flags=("tester-bound",)),
        m("b", "w", 1, throughput=300.0, p50=30.0),
        m("c", "w", 1, throughput=300.0, p50=30.0),
    ]
    other = [
        m("a", "w", 1, throughput=495.0, p50=20.31, engine="wrk"),
        m("b", "w", 1, throughput=400.0, p50=24.0, engine="wrk"),
        m("b", "w", 2, throughput=0.0, p50=0.0, engine="wrk", requests=0),
    ]
    pairs = compare_engines(main, other)
    assert [(p.target, p.repetitions, p.other_repetitions) for p in pairs] == [
        ("a", 2, 1),
        ("b", 1, 1),
    ]
    assert pairs[0].throughput == 490.0 and pairs[0].tester_bound
    assert pairs[0].agrees and not pairs[1].agrees
    assert agreement_summary(pairs) == (
        "wrk and gatling agree within 10 % on throughput and p50 in 1 of 2 target × workload "
        "cell(s); they disagree on 1 (largest gap: b · w, throughput 25 %, p50 20 %)."
    )
    # a p50 inside Gatling's resolution is not a gap, however large in %
    fast = [m("x", "w", 1, throughput=300.0, p50=0.0)]
    fast_other = [m("x", "w", 1, throughput=500.0, p50=0.05, engine="wrk")]
    assert agreement_summary(compare_engines(fast, fast_other)).endswith(
        "they disagree on 1 (largest gap: x · w, throughput 40 %)."
    )


# -- the report -------------------------------------------------------------------------------


def _trusted_run() -> tuple[RunRecord, list[Measurement]]:
    ms = [
        m(t, w, r, throughput=tp, p50=p)
        for (t, tp, p) in (("a", 900.0, 2.0), ("b", 500.0, 3.0), ("baseline", 950.0, 1.0))
        for w in ("w", "v")
        for r in (1, 2)
    ]
    check = [
        m(t, "w", 1, throughput=tp, p50=p, engine="wrk")
        for (t, tp, p) in (("a", 1500.0, 1.2), ("b", 520.0, 2.8))
    ]
    ceiling = Ceiling(
        "gatling",
        "nginx static file (1 worker)",
        {"w": CeilingPoint(1000.0, 0.0, 5000), "v": CeilingPoint(4000.0, 0.0, 9000)},
    )
    env = {
        "ceiling": ceiling.to_dict(),
        "cross_check": {"name": "wrk", "measurements": [x.to_dict() for x in check]},
    }
    return run_record(environment=env), ms


def test_the_report_shows_headroom_and_the_second_engine() -> None:
    run, ms = _trusted_run()
    report = build_report(run, ms, now=0.0)
    trust = report.trust
    assert trust.tester_bound == {"w": ("a",)}
    assert [(h.workload, h.target, round(h.share_pct), h.near_ceiling) for h in trust.headroom][
        :3
    ] == [("v", "a", 22, 0), ("v", "b", 12, 0), ("v", "baseline", 24, 0)]
    assert report.verdict[-1] == (
        "Throughput does not count on w: the load generator, not the gateways, set it there "
        "(tester-bound)."
    )
    assert report.cautions[0] == (
        "The second engine does not confirm every number: wrk and gatling agree within 10 % on "
        "throughput and p50 in 1 of 2 target × workload cell(s); they disagree on 1 (largest "
        'gap: a · w, throughput 40 %). See "Trust" below.'
    )
    md = render_markdown(report)
    assert "| w | a | 900 | 1,000 | 90 % | 2 of 2 |" in md
    assert "| a | w | 900 | 1,500 | 40.0 % | 2.0 | 1.20 | 40.0 % | no |" in md
    assert "- ceiling:" not in md  # in the trust section, not the run's metadata
    html = render_html(report)
    assert 'id="trust"' in html and "The same cells measured by a second engine" in html
    assert '"second_engine": "wrk"' in render_json(report)


def test_a_run_without_a_ceiling_says_so() -> None:
    run = run_record(
        environment={
            "ceiling": Ceiling(
                "gatling", "nginx static file (1 worker)", note="nginx is not installed"
            ).to_dict()
        }
    )
    report = build_report(run, [m("a", "w", 1), m("b", "w", 1)], now=0.0)
    assert "Nginx is not installed." in report.cautions


# -- reproducibility --------------------------------------------------------------------------


def test_cv_and_ranking_changes_across_runs() -> None:
    assert coefficient_of_variation([10.0, 10.0]) == 0.0
    assert coefficient_of_variation([9.0, 11.0]) == pytest.approx(100 * 2**0.5 / 10)
    assert coefficient_of_variation([1.0]) is None

    def run(a: float, b: float, c: float) -> Any:
        ms = [m(t, "w", 1, p50=p) for t, p in (("a", a), ("b", b), ("c", c))]
        ms += [m(t, "w", 2, p50=p) for t, p in (("a", a), ("b", b), ("c", c))]
        return summarize(ms, gateways=["a", "b", "c"], workloads=["w"])

    result = reproducibility([run(1, 2, 3), run(1, 3, 2), run(2, 1, 3)])
    assert result.rankings == (("a", "b", "c"), ("a", "c", "b"), ("b", "a", "c"))
    assert result.rankings_differing_from_first == 2
    assert result.leader_changes == 1
    assert result.pair_flips() == (4, 9)
    cv = result.cv_by_metric()
    p50 = next(v for v in result.variations if (v.target, v.metric) == ("a", "p50"))
    assert p50.values == (1.0, 1.0, 2.0)
    assert cv["p50"][2] == pytest.approx(coefficient_of_variation([2.0, 3.0, 1.0]))
