"""Report content and formats: verdict, precision, the BigQuery CSV, JSON, Markdown, HTML."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gatebench.core.metrics import METRICS
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.core.report import (
    bigquery_schema,
    build_report,
    column_names,
    flat_rows,
    render,
    render_csv,
    render_html,
    render_json,
    render_markdown,
)
from gatebench.core.report._format import fmt_ci, fmt_points, fmt_signed, fmt_value
from gatebench.core.report._markdown import _cell
from gatebench.core.trust import Ceiling, CeilingPoint
from paths import ROOT
from synthetic import synthetic_run

GOLDEN = ROOT / "tests" / "golden" / "report"


@pytest.fixture(scope="module")
def synthetic() -> tuple[RunRecord, list[Measurement]]:
    return synthetic_run()


@pytest.fixture(scope="module")
def report(synthetic: tuple[RunRecord, list[Measurement]]):  # type: ignore[no-untyped-def]
    run, ms = synthetic
    return build_report(run, ms, now=1_767_272_400.0)


def m(target: str, workload: str, rep: int, mean: float, **kw: object) -> Measurement:
    values: dict[str, object] = dict.fromkeys(METRICS, mean)
    values.update(throughput=1000.0 / mean, error_pct=0.0, requests=100, ok=100, ko=0)
    values.update(kw)
    return Measurement(run_id="r", target=target, workload=workload, repetition=rep, **values)  # type: ignore[arg-type]


def run_record(**kw: object) -> RunRecord:
    values: dict[str, object] = {
        "run_id": "r",
        "spec_uri": "file:///a.yaml",
        "spec_sha256": "0" * 64,
        "status": RunStatus.DONE,
        "created_at": 0.0,
    }
    values.update(kw)
    return RunRecord(**values)  # type: ignore[arg-type]


# -- precision ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "value", "half", "expected"),
    [
        ("p99", 0.0, None, "<1"),
        ("min", 0.0, 0.0, "<1"),
        ("p99", 12.0, None, "12"),
        ("mean", 1.2549, None, "1.3"),
        ("mean", 1.26, 0.11, "1.3 ± 0.1"),  # never finer than 0.1 ms
        ("p95", 412.3, 37.2, "412 ± 37"),
        ("p95", 4440.0, 0.0, "4,440"),
        ("throughput", 812.46, 37.1, "812 ± 37"),
        ("throughput", 81.246, 3.71, "81.2 ± 3.7"),
        ("throughput", 81.246, None, "81.2"),
        ("error_pct", 0.0, None, "0"),
        ("error_pct", 0.25, 0.31, "0.25 ± 0.31"),
        ("error_pct", 2.0, None, "2.00"),
    ],
)
def test_numbers_never_claim_more_precision_than_measured(
    metric: str, value: float, half: float | None, expected: str
) -> None:
    assert fmt_ci(metric, value, half) == expected


def test_differences_are_signed() -> None:
    assert fmt_signed("mean", 2.46, None) == "+2.5"
    assert fmt_signed("mean", -0.44, 0.3) == "−0.4"
    assert fmt_signed("throughput", -123.4, None) == "−123"
    assert fmt_signed("mean", 0.0, None) == "0.0"
    assert fmt_value("mean", float("nan")) == "–"


def test_score_points_are_counted_in_words() -> None:
    """The verdict read 'Its lead over nginx is inside the run-to-run noise (1 points, ...)'."""
    assert fmt_points(1.2, 0) == "1 point"
    assert fmt_points(1.0, 1) == "1.0 points"
    assert fmt_points(6.0, 0) == "6 points"
    assert fmt_points(-0.2, 0) == "0 points"


# -- verdict -----------------------------------------------------------------------------------


def test_verdict_with_a_clear_leader(report) -> None:  # type: ignore[no-untyped-def]
    text = " ".join(report.verdict)
    leader = report.summary.scores.gateways[0]
    assert text.startswith(f"{leader.target} scores highest (")
    assert (
        "and over haproxy is larger than the run-to-run noise (2 comparisons, nginx against each "
        "other gateway, paired by repetition and Holm-corrected); it ranked first in 5 of 5 "
        "repetitions." in text
    )


def test_the_verdict_names_the_cpu_policy_the_run_ran_under(
    synthetic: tuple[RunRecord, list[Measurement]],
) -> None:
    """A run records its CPU policy (gatebench.core.fairness): the verdict ends with it, and the
    run's section shows it and each gateway's setting on one line each."""
    from gatebench.core.fairness import cpu_environment, local_cpu_policy
    from gatebench.core.pinning import resolve_layout
    from gatebench.core.plan import Cpus

    run, ms = synthetic
    cpu = local_cpu_policy(resolve_layout(Cpus(), [0, 1]), [0, 1])
    environment = {**run.environment, **cpu_environment(cpu, ["nginx", "apache"], 64)}
    report = build_report(dataclasses.replace(run, environment=environment), ms, now=0.0)
    assert report.verdict[-1] == (
        "CPU policy: every gateway: 1 core (cpu 1, pinned); workers, threads and event loops "
        'set to 1 (docs/gateways.md, "A fair fight").'
    )
    text = render_markdown(report)
    assert "- cpu_policy: every gateway: 1 core (cpu 1, pinned); workers" in text
    assert (
        "- gateway_cpu: apache: event MPM: 1 process(es) × 64 threads (StartServers, "
        "MaxRequestWorkers / ThreadsPerChild); nginx: worker_processes 1" in text
    )
    assert "cpu_policy" not in " ".join(build_report(run, ms, now=0.0).verdict)


def test_verdict_when_the_lead_is_inside_the_noise() -> None:
    ms = []
    for rep, noise in enumerate([1.0, -1.0, 0.5, -0.5]):
        ms += [m("a", "w", rep, 10.0 + noise * 0.9), m("b", "w", rep, 10.0 - noise)]
    report = build_report(run_record(gateways=["a", "b"]), ms)
    assert report.verdict[1].startswith("Its lead over ")
    assert "is inside the run-to-run noise (" in report.verdict[1]
    assert report.verdict[1].endswith("treat the two as equal on this evidence.")


def disagreeing_repetitions() -> list[Measurement]:
    """Ten repetitions in which the score of the averaged metrics and the per-repetition
    ranking disagree, as on a busy machine: nginx is steady (10 ms) and never first; caddy is
    first in 4 (9 ms), second in 5 (9.8 ms) and stalls once (16 ms); haproxy is first in the
    other 6 (9.5 ms) and stalls in the first 4 (30 ms). The stalls weigh on the means, so
    nginx has the highest score of the averaged metrics while it wins no repetition."""
    ms = []
    for rep in range(1, 11):
        ms.append(m("nginx", "w", rep, 10.0))
        ms.append(m("caddy", "w", rep, 9.0 if rep <= 4 else 9.8 if rep < 10 else 16.0))
        ms.append(m("haproxy", "w", rep, 30.0 if rep <= 4 else 9.5))
    return ms


def test_verdict_when_the_averaged_metrics_and_the_repetitions_disagree() -> None:
    report = build_report(
        run_record(gateways=["nginx", "caddy", "haproxy"]), disagreeing_repetitions()
    )
    stability = {r.target: (r.first, r.mean_rank) for r in report.summary.rank_stability}
    assert [g.target for g in report.summary.scores.gateways] == ["nginx", "caddy", "haproxy"]
    assert stability == {"nginx": (0, 2.5), "caddy": (4, 1.7), "haproxy": (6, 1.8)}
    assert report.summary.comparison is not None
    assert report.summary.comparison.difference.estimate < 0  # caddy does better per repetition
    text = " ".join(report.verdict)
    assert "lead" not in text
    assert report.verdict == (
        "nginx, caddy and haproxy are tied on this evidence: the score of the averaged metrics "
        "and the ranking of the single repetitions disagree.",
        "On the metrics averaged over the 10 repetitions, nginx scores highest (99.8 of 100, paper "
        "profile), ahead of caddy (99) and haproxy (63).",
        "Scored one repetition at a time, haproxy ranked first in 6 of 10 repetitions (mean rank "
        "1.8), caddy in 4 (mean rank 1.7) and nginx in 0 (mean rank 2.5); caddy's score averaged "
        "1.3 points above nginx's (95 % CI -7.5 to 10.0).",
        "More repetitions, or a quieter machine, may separate them; until then, compare them on "
        "the tables.",
    )


def test_a_negative_difference_alone_is_a_disagreement() -> None:
    # Each wins two rounds, but b wins by more than a does: b's per-repetition score averages
    # more, though a's averaged metrics score higher.
    ms = []
    for rep, (a, b) in enumerate([(10.0, 5.0), (10.0, 5.0), (10.0, 16.0), (10.0, 16.0)]):
        ms += [m("a", "w", rep, a), m("b", "w", rep, b)]
    report = build_report(run_record(gateways=["a", "b"]), ms)
    assert [g.target for g in report.summary.scores.gateways] == ["a", "b"]
    assert report.verdict[0].startswith("a and b are tied on this evidence: ")
    assert "lead" not in " ".join(report.verdict)
    assert report.verdict[2].startswith(
        "Scored one repetition at a time, a ranked first in 2 of 4 repetitions (mean rank 1.5) "
        "and b in 2 (mean rank 1.5); b's score averaged "
    )


def test_the_gateways_scored_between_disagreeing_ones_are_tied_with_them() -> None:
    # c wins every round but stalls once, badly: the averaged metrics put it last; b sits
    # between a and c on both counts, so it is tied with them as well.
    ms = []
    for rep in range(1, 6):
        ms += [m("a", "w", rep, 10.0), m("b", "w", rep, 11.0)]
        ms.append(m("c", "w", rep, 9.5 if rep < 5 else 100.0))
        ms.append(m("d", "w", rep, 40.0))
    report = build_report(run_record(gateways=["a", "b", "c", "d"]), ms)
    assert [g.target for g in report.summary.scores.gateways] == ["a", "b", "c", "d"]
    assert report.verdict[0].startswith("a, b and c are tied on this evidence: ")
    assert report.verdict[1].endswith("ahead of b (92), c (48) and d (33).")


def test_the_html_stability_section_speaks_of_no_negative_lead() -> None:
    report = build_report(
        run_record(gateways=["nginx", "caddy", "haproxy"]), disagreeing_repetitions()
    )
    html = render_html(report)
    assert "the lead is" not in html
    assert (
        "<p>caddy − nginx, paired by repetition: 1.3 points, 95 % CI -7.5 to 10.0: scored one "
        "repetition at a time, caddy does better than nginx, against the order of the averaged "
        "metrics (see the verdict); the difference is inside the run-to-run noise.</p>"
    ) in html


def test_verdict_with_one_repetition() -> None:
    report = build_report(run_record(), [m("a", "w", 0, 10.0), m("b", "w", 0, 12.0)])
    assert report.verdict == (
        "a scores highest (100 of 100, paper profile), ahead of b (85).",
        "With a single complete repetition there is no measure of run-to-run noise: repeat "
        "the run (3 or more repetitions) before trusting this order.",
    )


def test_the_verdict_names_the_targets_measured_on_a_cold_engine() -> None:
    cold = ("engine-cold",)
    ms = [m("a", "w", 0, 10.0), m("b", "w", 0, 12.0, flags=cold), m("b", "v", 0, 12.0)]
    report = build_report(run_record(gateways=["a", "b"]), ms)
    assert report.verdict[-1] == (
        "The load engine was still warming when it measured b on w (engine-cold): those "
        "figures read worse than the targets are, because of the order the targets ran in, "
        "not of the gateways. More repetitions spread that cost over the targets, longer "
        "phases shrink it (docs/trust.md)."
    )
    assert any("engine-cold in 1 (among the run's first phases" in c for c in report.cautions)
    warm = build_report(
        run_record(gateways=["a", "b"]), [dataclasses.replace(x, flags=()) for x in ms]
    )
    assert not any("engine-cold" in line for line in warm.verdict)
    # a cold baseline makes every gateway seem to add less (all 9 overheads read negative in a
    # run whose baseline ran first): said, where nothing did
    ms += [m("baseline", "w", 0, 11.0, flags=cold), m("baseline", "v", 0, 8.0)]
    said = build_report(run_record(gateways=["a", "b"]), ms).verdict[-1]
    assert said == (
        "The overhead against the baseline on w is understated for the same reason: the "
        "baseline read slower than the backend is, so a gateway can seem to add less than it "
        "does, or to be faster than no gateway."
    )


def test_verdict_with_a_tie_names_its_profile() -> None:
    measured = [m("a", "w", 0, 10.0), m("b", "w", 0, 10.0)]
    report = build_report(run_record(), measured)
    assert report.verdict == ("a and b tie for first place with 100 of 100 (paper profile).",)
    robust = build_report(run_record(), measured, profile="robust")
    assert robust.verdict == ("a and b tie for first place with 100 of 100 (robust profile).",)


def test_a_tie_still_says_what_does_not_count_and_where_every_gateway_erred() -> None:
    """A tie for first place is no reason to drop the rest of the verdict: both erred on v
    (the backend refuses it), and v's phases were too short for a throughput."""
    ms = [
        m(
            t,
            w,
            r,
            10.0,
            error_pct=50.0 if w == "v" else 0.0,
            ko=50 if w == "v" else 0,
            ok=50 if w == "v" else 100,
        )
        for t in ("a", "b")
        for w in ("w", "v")
        for r in (1, 2)
    ]
    ms = [dataclasses.replace(x, flags=("too-short",)) if x.workload == "v" else x for x in ms]
    report = build_report(run_record(gateways=["a", "b"]), ms)
    assert report.verdict[0] == "a and b tie for first place with 100 of 100 (paper profile)."
    assert (
        "Throughput does not count on v: its phases were too short to measure a rate (too "
        "short: docs/trust.md)."
    ) in report.verdict
    assert any(line.startswith("Every gateway returned errors on v:") for line in report.verdict)


def test_verdict_with_a_single_gateway_speaks_of_the_baseline() -> None:
    ms = [m("a", "w", r, v) for r, v in enumerate([12.0, 13.0, 14.0])]
    ms += [m("baseline", "w", r, v) for r, v in enumerate([10.0, 10.5, 11.0])]
    report = build_report(run_record(gateways=["a"]), ms)
    assert report.verdict == (
        "Only a was measured, so its score (100) compares it with nothing.",
        "Against the baseline its mean latency differs by +2.5 ± 2.1 ms on w.",  # Welch, df ≈ 2.9
    )


def test_verdict_when_every_gateway_measured_gave_wrong_answers() -> None:
    """Measured and then not ranked: 'No gateway was measured' was false."""
    ms = [m(g, "w", r, 10.0, wrong_answers=3, answers_checked=True) for g in "ab" for r in (1, 2)]
    report = build_report(run_record(gateways=["a", "b"]), ms)
    assert report.verdict[0] == "No gateway was ranked: there is nothing to compare."


def test_gateways_left_out_before_the_run_are_not_said_to_have_failed() -> None:
    """Gateways that cannot apply the plan's policies are left out before the run: the
    verdict said 'apache failed before it was measured' and the cautions 'apache failed'."""
    reason = (
        "{g} cannot apply the requested policies natively: rate limit per client address "
        "(rate_limit.address); it is left out (--allow-missing-policies runs it without them, "
        "marked)"
    )
    record = run_record(
        gateways=["a", "b", "c", "d"],
        target_errors={g: reason.format(g=g) for g in ("b", "c", "d")},
        environment={
            "left_out": {
                "b": "cannot apply the plan's policies",
                "c": "cannot apply the plan's policies",
                "d": "cannot render the plan's deployment (TLS or a pool of replicas)",
            }
        },
    )
    ms = [m(g, "w", r, 10.0) for g in ("a", "baseline") for r in (1, 2)]
    report = build_report(record, ms)
    said = " ".join(report.verdict)
    assert "failed" not in said
    assert (
        "b and c were left out before the run, as they cannot apply the plan's policies: not "
        "ranked." in report.verdict
    )
    assert (
        "d was left out before the run, as it cannot render the plan's deployment (TLS or a "
        "pool of replicas): not ranked." in report.verdict
    )
    assert report.summary.unranked["b"] == (
        "was left out before the run, as it cannot apply the plan's policies"
    )
    assert [c for c in report.cautions if c.startswith(reason.format(g="b"))]
    assert not [c for c in report.cautions if c.startswith(("b failed", "c failed", "d failed"))]
    # a gateway with an error on record and no left_out entry still failed
    failed = build_report(run_record(gateways=["a", "b"], target_errors={"b": "exited 1"}), ms)
    assert "b failed before it was measured: not ranked." in failed.verdict


def test_verdict_without_measurements() -> None:
    report = build_report(run_record(gateways=["a", "b"], status=RunStatus.LOADING), [])
    assert report.verdict == ("No gateway was measured: there is nothing to compare yet.",)
    assert "The run's status is 'loading': the results may be incomplete." in report.cautions


def test_cautions_name_failed_targets_and_flags() -> None:
    ms = [m("a", "w", 0, 10.0, flags=("tester-bound",))]
    report = build_report(
        run_record(gateways=["a", "b"], target_errors={"b": "config rejected\nline 2"}), ms
    )
    assert report.cautions[0] == (
        "Flagged measurements (target × workload × repetition): tester-bound in 1 (the load "
        "generator was the bottleneck: within 20 % of its ceiling, or out of CPU). Their numbers "
        "describe the machine as much as the gateway."
    )
    assert report.cautions[1] == "b failed: config rejected."


def test_a_gateway_that_failed_before_it_was_measured_is_named_not_ranked_last() -> None:
    """A gateway whose configuration could not be rendered has no measurement: it used to
    score 0 and be ranked ("a scores highest, ahead of b (0)"), as if it had been measured."""
    ms = [m("a", "w", 0, 10.0), m("c", "w", 0, 12.0)]
    run = run_record(gateways=["a", "b", "c"], target_errors={"b": "cannot render"})
    report = build_report(run, ms)
    assert [g.target for g in report.summary.scores.gateways] == ["a", "c"]
    assert dict(report.summary.unranked) == {"b": "failed before it was measured"}
    verdict = " ".join(report.verdict)
    assert "ahead of c (" in verdict and "b (" not in verdict
    assert "b failed before it was measured: not ranked." in verdict
    assert "overlap a failure" not in verdict  # nothing of b's was measured to leave out
    # b failed later (the runner records when): its measurements stay, it is not ranked
    later = dataclasses.replace(run, environment={"failures": {"b": {"repetition": 1}}})
    report = build_report(later, [*ms, m("b", "w", 0, 11.0)])
    assert dict(report.summary.unranked) == {"b": "failed during repetition 1"}
    assert "overlap a failure" in " ".join(report.verdict)


def test_the_plan_profile_is_used_unless_told_otherwise() -> None:
    run = run_record(plan={"scoring": {"profile": "robust", "weights": [["p99", 2.0]]}})
    ms = [m("a", "w", 0, 10.0), m("b", "w", 0, 12.0)]
    assert build_report(run, ms).profile == "robust"
    assert dict(build_report(run, ms).weights)["p99"] == 2.0
    paper = build_report(run, ms, profile="paper")
    assert (paper.profile, paper.weights) == ("paper", ())


# -- CSV: the BigQuery table -------------------------------------------------------------------

BQ_TYPES = {
    "STRING",
    "BYTES",
    "INTEGER",
    "INT64",
    "FLOAT",
    "FLOAT64",
    "NUMERIC",
    "BOOLEAN",
    "BOOL",
    "TIMESTAMP",
    "DATE",
    "TIME",
    "DATETIME",
    "RECORD",
    "JSON",
}
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?\+00:00$")
INTEGER = re.compile(r"^-?\d+$")
FLOAT = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")
STATISTICS = {
    "value",
    "mean",
    "stddev",
    "ci95_low",
    "ci95_high",
    "overhead",
    "overhead_ci95_low",
    "overhead_ci95_high",
    "metric_score",
    "endpoint",
    "global",
}


def test_the_bigquery_schema_file_is_valid() -> None:
    schema = bigquery_schema()
    names = [f["name"] for f in schema]
    assert len(names) == len(set(names))
    for f in schema:
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,299}", f["name"])
        assert f["type"] in BQ_TYPES
        assert f["mode"] in ("NULLABLE", "REQUIRED")
        assert f["description"]


def test_the_csv_loads_into_the_bigquery_schema_unchanged(report) -> None:  # type: ignore[no-untyped-def]
    text = render_csv(report)
    assert "\r" not in text
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    assert tuple(header) == column_names()
    schema = {f["name"]: f for f in bigquery_schema()}
    for row in body:
        assert len(row) == len(header)
        for name, value in zip(header, row, strict=True):
            field = schema[name]
            if value == "":
                assert field["mode"] == "NULLABLE", f"{name} is REQUIRED but empty in {row}"
                continue
            kind = field["type"]
            if kind == "TIMESTAMP":
                assert TIMESTAMP.match(value), value
            elif kind == "INTEGER":
                assert INTEGER.match(value), value
            elif kind == "FLOAT":
                assert FLOAT.match(value), value
                float(value)
            elif kind == "BOOLEAN":
                assert value in ("true", "false")
    by_name = [dict(zip(header, row, strict=True)) for row in body]
    assert {r["statistic"] for r in by_name} == STATISTICS
    assert {r["metric"] for r in by_name} == set(METRICS) | {"score", "rank"}
    values = [r for r in by_name if r["statistic"] == "value"]
    assert len(values) == len(report.measurements) * len(METRICS)
    assert {r["is_baseline"] for r in by_name if r["target"] == "baseline"} == {"true"}


def test_csv_rows_carry_the_numbers_of_the_report(report) -> None:  # type: ignore[no-untyped-def]
    rows = [
        dict(zip(column_names(), r, strict=True))
        for r in list(csv.reader(io.StringIO(render_csv(report))))[1:]
    ]
    g = report.summary.scores.gateways[0]
    global_row = [
        r
        for r in rows
        if r["target"] == g.target
        and r["metric"] == "score"
        and r["statistic"] == "global"
        and r["repetition"] == ""
    ]
    assert len(global_row) == 1
    assert float(global_row[0]["value"]) == g.score
    cell = report.summary.cell("bid", "nginx")
    mean_row = [
        r
        for r in rows
        if (r["target"], r["workload"], r["metric"], r["statistic"])
        == ("nginx", "bid", "p99", "mean")
    ]
    assert float(mean_row[0]["value"]) == cell.metrics["p99"].mean
    assert mean_row[0]["n"] == "5"


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_text_a_spreadsheet_would_run_as_a_formula_starts_with_a_quote(start: str) -> None:
    """A title reached every row's run_title as written, and Excel or LibreOffice ran
    '=HYPERLINK(...)' as a formula (OWASP, "CSV Injection"). The CSV quotes such text; the
    rows, which BigQuery also receives as JSON, keep it as written; numbers stay numbers, a
    negative one too."""
    title = f'{start}HYPERLINK("http://evil.example/?x","click")'
    ms = [m("a", "w", 0, 10.0), m("b", "w", 0, 12.0), m("baseline", "w", 0, 11.0)]
    report = build_report(run_record(title=title, gateways=["a", "b"]), ms)
    rows = [
        dict(zip(column_names(), r, strict=True))
        for r in list(csv.reader(io.StringIO(render_csv(report))))[1:]
    ]
    assert {r["run_title"] for r in rows} == {"'" + title}
    assert {r["run_title"] for r in flat_rows(report)} == {title}
    assert min(float(r["value"]) for r in rows) < 0  # a's overhead: faster than the baseline


def test_no_gateway_measured_means_no_score_in_any_format() -> None:
    """A run stopped before any gateway completed a request: the Markdown, the JSON and the
    CSV ranked every gateway first with a score of 0, while the HTML showed no score."""
    ms = [m(g, "w", 0, 10.0, requests=0, ok=0) for g in ("a", "b")]
    report = build_report(
        run_record(gateways=["a", "b"], status=RunStatus.PARTIAL),
        [*ms, m("baseline", "w", 0, 8.0)],
    )
    assert report.summary.scores.gateways == ()
    scores = json.loads(render_json(report))["scores"]
    assert (scores["gateways"], scores["order"]) == ({}, [])
    rows = [
        dict(zip(column_names(), r, strict=True))
        for r in csv.reader(io.StringIO(render_csv(report)))
    ]
    assert not [r for r in rows if r["metric"] in ("score", "rank")]
    assert "## Global scores\n\nNo gateway was scored yet.\n" in render_markdown(report)
    assert "No gateway was scored yet." in render_html(report)


def test_every_format_says_the_weights_it_scored_with() -> None:
    """The Markdown report named the profile without its weights (the HTML named them)."""
    weights = [["p99", 5.0], ["min", 0.0]]
    run = run_record(plan={"scoring": {"profile": "robust", "weights": weights}})
    report = build_report(run, [m("a", "w", 0, 10.0), m("b", "w", 0, 12.0)])
    said = (
        "robust (weights throughput×1, min×0, mean×1, max×1, stddev×1, p50×1, p90×1, p95×1, "
        "p99×5, error_pct×1)"
    )
    assert report.scoring == said
    assert render_markdown(report).splitlines()[2] == f"Run `r` · status done · profile {said}"
    assert f"<dd>{said}</dd>" in render_html(report)
    assert json.loads(render_json(report))["weights"] == dict(report.weights)
    rows = [
        dict(zip(column_names(), r, strict=True))
        for r in csv.reader(io.StringIO(render_csv(report)))
    ]
    weighed = {
        (r["target"], r["metric"], r["value"], r["profile"])
        for r in rows
        if r["statistic"] == "weight"
    }
    assert weighed == {
        (g, metric, repr(w), "robust") for g in ("a", "b") for metric, w in report.weights
    }


# -- JSON and Markdown -------------------------------------------------------------------------


def test_json_is_strict_and_complete(report) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(render_json(report))
    assert data["verdict"] == " ".join(report.verdict)
    assert data["scores"]["order"] == [g.target for g in report.summary.scores.gateways]
    assert data["resolution_ms"] == 1
    assert len(data["cells"]) == len(report.summary.cells)
    assert {c["target"] for c in data["cells"]} == {"nginx", "haproxy", "caddy", "baseline"}
    assert data["rank_stability"][0]["repetitions"] == 5


def test_markdown_golden(report, golden) -> None:  # type: ignore[no-untyped-def]
    golden.check(GOLDEN / "synthetic.md", render_markdown(report))


def test_markdown_shows_the_runs_text_as_written_never_as_markup() -> None:
    """A pull request comment or a wiki page rendered the title's HTML and Markdown: a script,
    an image fetched from a tracker, a link, a table's column opened by '|'."""
    evil = (
        "<script>alert(1)</script> ![](http://tracker.example/p.png) "
        "[click](http://evil.example) a|b *x* `c` _y_"
    )
    shown = (
        r"&lt;script&gt;alert(1)&lt;/script&gt; !\[\](http://tracker.example/p.png) "
        r"\[click\](http://evil.example) a\|b \*x\* \`c\` \_y\_"
    )
    run = run_record(
        title=evil,
        spec_uri=f"file:///{evil}.yaml",
        gateways=["a", "b"],
        environment={"note": evil},
        target_errors={"b": evil},
    )
    text = render_markdown(build_report(run, [m("a", "w", 0, 10.0)]))
    lines = text.splitlines()
    assert lines[0] == f"# {shown}"
    assert f"- Description: file:///{shown}.yaml (sha256 000000000000…)" in lines
    assert f"- note: {shown}" in lines
    assert f"- b failed: {shown}" in lines
    assert "<" not in text
    assert "](" not in text.replace("\\](", "")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("cpu_policy", "cpu_policy"),  # inside a word, no emphasis
        ("_y_ and __z__", r"\_y\_ and \_\_z\_\_"),
        ("# C# 2", r"\# C# 2"),
        ("~~gone~~", r"\~\~gone\~\~"),
        ("a\\b", r"a\\b"),
        ("&lt; & <1", "&amp;lt; &amp; &lt;1"),
        ("two\nlines", "two lines"),
    ],
)
def test_markdown_escapes_what_would_change_the_rendering(text: str, shown: str) -> None:
    assert _cell(text) == shown


# -- HTML --------------------------------------------------------------------------------------


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self.scripts += 1


def parse(html: str) -> _Collector:
    c = _Collector()
    c.feed(html)
    return c


def test_html_is_self_contained(report) -> None:  # type: ignore[no-untyped-def]
    html = render_html(report)
    tags = parse(html).tags
    csp = [a for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp
    assert "default-src 'none'" in (csp[0]["content"] or "")
    for tag, attrs in tags:
        assert tag not in ("link", "img", "iframe", "object", "embed"), tag
        for name in ("src", "href"):
            value = attrs.get(name)
            assert value is None or value.startswith("#"), (tag, name, value)
    urls = set(re.findall(r"https?://[^\"'\s<>)]+", html))
    assert urls == {"http://www.w3.org/2000/svg"}  # the SVG namespace name, never fetched


def test_html_has_the_required_sections_and_accessible_structure(report) -> None:  # type: ignore[no-untyped-def]
    html = render_html(report)
    tags = parse(html).tags
    ids = {a.get("id") for _, a in tags}
    for section in (
        "verdict",
        "scores",
        "workload-scores",
        "throughput",
        "latency",
        "overhead",
        "stability",
        "quality",
        "run",
        "method",
    ):
        assert section in ids, section
    svgs = [a for t, a in tags if t == "svg"]
    assert len(svgs) == 3
    assert all(a.get("role") == "img" and a.get("aria-labelledby") for a in svgs)
    assert sum(1 for t, _ in tags if t == "caption") >= 8
    col_heads = [a for t, a in tags if t == "th" and a.get("scope") == "col"]
    row_heads = [a for t, a in tags if t == "th" and a.get("scope") == "row"]
    assert col_heads
    assert row_heads
    assert "1 ms resolution" in html
    bars = [a for t, a in tags if t == "rect" and a.get("class") == "bar"]
    n_cells = len(report.summary.cells)
    n_gateways = len(report.summary.gateways)
    assert len(bars) == n_gateways + n_gateways * len(report.summary.workloads) + n_cells
    whiskers = [a for t, a in tags if t == "path" and a.get("class") == "whisker"]
    assert len(whiskers) == n_cells


def test_each_endpoint_has_its_own_throughput_scale() -> None:
    """The auction's endpoints differ by orders of magnitude (60 and 12,000 req/s): on one
    scale the slow endpoint's bars were slivers nobody could compare. Each endpoint is drawn
    on its own scale, ticked above its bars, its fastest bar filling most of the width."""
    from gatebench.core.report._svg import PLOT_WIDTH

    ms = [
        m(t, w, rep, 1.0, throughput=tp * (1 + 0.01 * rep))
        for w, scale in (("upload", 60.0), ("get", 12_000.0))
        for t, tp in (("a", scale), ("b", scale / 2))
        for rep in (1, 2)
    ]
    html = render_html(build_report(run_record(gateways=["a", "b"]), ms))
    svg = re.search(r'<svg[^>]*id="chart-throughput".*?</svg>', html, re.S)
    assert svg is not None
    rows = re.findall(
        r'data-workload="([^"]+)"><text[^>]*>[^<]*</text><rect class="bar" x="([0-9.]+)" [^>]*width="([0-9.]+)"',
        svg.group(0),
    )
    widths = {w: max(float(width) for ww, _x, width in rows if ww == w) for w, _x, _width in rows}
    assert set(widths) == {"upload", "get"}
    assert all(width > 0.5 * PLOT_WIDTH for width in widths.values()), widths
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', svg.group(0))
    numbers = [float(t.replace(",", "")) for t in ticks]
    assert max(n for n in numbers if n < 1000) <= 100  # the upload's scale ends near 60
    assert max(numbers) >= 12_000  # the get's near 12,000
    assert "Each endpoint on its own scale." in html


def test_html_escapes_everything_from_the_run() -> None:
    evil = '<script>alert("x")</script>'
    run = run_record(
        title=evil, gateways=["a"], environment={"note": evil}, target_errors={"b": evil}
    )
    html = render_html(build_report(run, [m("a", "w", 0, 10.0)]))
    assert evil not in html
    assert parse(html).scripts == 1
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_html_of_an_empty_run_still_renders() -> None:
    html = render_html(build_report(run_record(status=RunStatus.LOADING), []))
    assert "No gateway was scored yet." in html
    assert "Nothing was measured yet." in html


def test_render_dispatch(report) -> None:  # type: ignore[no-untyped-def]
    assert render(report, "md") == render_markdown(report)
    with pytest.raises(
        ValueError, match=r"^unknown report format 'pdf'; available: html, json, csv, md$"
    ):
        render(report, "pdf")  # type: ignore[arg-type]


def test_report_generation_is_deterministic(synthetic: tuple[RunRecord, list[Measurement]]) -> None:
    run, ms = synthetic
    a = build_report(run, ms, now=0.0)
    b = build_report(dataclasses.replace(run), list(reversed(ms)), now=0.0)
    assert render_html(a) == render_html(b)
    assert render_csv(a) == render_csv(b)


def test_the_golden_folder_is_where_the_docs_say(tmp_path: Path) -> None:
    assert GOLDEN.parent.name == "golden"


def test_verdict_separates_errors_everyone_had_from_the_leaders_own() -> None:
    ms = [
        m("a", "w", 0, 10.0, error_pct=80.0, ko=80, ok=20),
        m("b", "w", 0, 12.0, error_pct=85.0, ko=85, ok=15),
        m("a", "v", 0, 10.0, error_pct=5.0, ko=5, ok=95),
        m("b", "v", 0, 12.0),
    ]
    verdict = build_report(run_record(gateways=["a", "b"]), ms).verdict
    assert (
        "Every gateway returned errors on w: the workload or the backend refuses those "
        "requests, so compare the error column rather than the latencies."
    ) in verdict
    assert (
        "a failed 5.0 % of its requests on v (b 0.0 %): failed requests are often the fastest, "
        "and the paper profile counts their times in the latencies and the error rate as one "
        "metric among them, so part of its lead is its failures."
    ) in " ".join(verdict)
    # the baseline refused them too: then it is the backend that refuses
    ms.append(m("baseline", "w", 0, 8.0, error_pct=100.0, ko=100, ok=0))
    ms.append(m("baseline", "v", 0, 8.0))
    verdict = build_report(run_record(gateways=["a", "b"]), ms).verdict
    assert (
        "Every gateway returned errors on w, and so did the baseline, which reaches the backend "
        "directly: the backend refuses those requests (the error column says which errors), so "
        "their latencies are those of refusals."
    ) in verdict
    # the leader's own errors where the baseline had some too (the demo's bid: a few 409s the
    # auction refuses to bids reordered in flight) are the backend's, not the leader's
    ms[-1] = m("baseline", "v", 0, 8.0, error_pct=1.0, ko=1, ok=99)
    verdict = build_report(run_record(gateways=["a", "b"]), ms).verdict
    assert not any(line.startswith("a failed") for line in verdict)
    assert (
        "a returned errors on v, as the baseline did, which reaches the backend directly: the "
        "backend refused some of those requests whatever was in front of it, so they are not "
        "the gateway's doing (the error column says which errors)."
    ) in verdict


def test_verdict_says_whose_errors_everyone_had_by_their_reasons() -> None:
    """A 3 ms timeout in the plan: every KO of every target, the baseline's too, timed out. The
    plan set that limit; the backend refused nothing."""

    def timeouts(target: str, port: int, ko: int) -> Measurement:
        reason = f"Request timeout to 127.0.0.1/127.0.0.1:{port} after 3 ms"
        kw = {"error_pct": float(ko), "ko": ko, "ok": 100 - ko, "errors": ((reason, ko),)}
        return m(target, "w", 0, 10.0 if target == "a" else 12.0, **kw)

    ms = [timeouts("a", 1, 30), timeouts("b", 2, 20), timeouts("baseline", 3, 40)]
    opening = (
        "Every gateway returned errors on w, and so did the baseline, which reaches the backend "
        "directly: "
    )
    verdict = build_report(run_record(gateways=["a", "b"]), ms).verdict
    assert verdict[2] == opening + (
        "every error there is a request that outlived the plan's timeout (the workload's "
        "`timeout`): the load engine gave up on it, neither the backend nor a gateway refused "
        "it. Their latencies stop at that timeout: raise it to measure those requests."
    )
    assert not any("refuse" in line for line in verdict[3:])
    # the baseline's errors are partly the backend's refusals
    refusal = "status 503, expected below 400"
    ms[-1] = dataclasses.replace(
        ms[-1], ko=50, errors=((refusal, 10), ("Request timeout after 3 ms", 40))
    )
    verdict = build_report(run_record(gateways=["a", "b"]), ms).verdict
    assert verdict[2] == opening + (
        "some errors there are requests that outlived the plan's timeout (the workload's "
        "`timeout`), which the load engine gave up on, the others the backend's refusals (the "
        "error column says which errors)."
    )
    # no timeout among them: the backend refuses
    ms = [dataclasses.replace(x, errors=((refusal, x.ko),)) for x in ms]
    verdict = build_report(run_record(gateways=["a", "b"]), ms).verdict
    assert verdict[2] == opening + (
        "the backend refuses those requests (the error column says which errors), so their "
        "latencies are those of refusals."
    )


def test_verdict_says_a_lower_ranked_gateway_was_charged_with_the_baselines_errors() -> None:
    """The demo's bid on a busy machine: the baseline had 38 % errors, envoy 72 %, the leader
    none; the verdict said nothing of it, while the score counted them against envoy."""
    ms = [
        m("a", "v", 0, 10.0),
        m("b", "v", 0, 12.0, error_pct=72.0, ko=36, ok=14),
        m("baseline", "v", 0, 8.0, error_pct=38.0, ko=19, ok=31),
    ]
    verdict = build_report(run_record(gateways=["a", "b"]), ms).verdict
    assert (
        "The baseline, which reaches the backend directly, had errors too (38.0 % on v): the "
        "backend refused those requests whatever was in front of it, so part of each gateway's "
        "error rate there is not the gateway's doing, though the score counts it (the error "
        "column says which errors)."
    ) in verdict
    # without the baseline's errors there is nothing to say
    ms[-1] = m("baseline", "v", 0, 8.0)
    assert not any(
        "had errors too" in line
        for line in build_report(run_record(gateways=["a", "b"]), ms).verdict
    )


def test_a_recorded_value_is_written_in_words_not_as_python_repr() -> None:
    """The Markdown report's run section and a scale run's settings (one helper): no braces,
    quotes or None."""
    from gatebench.core.report._build import in_words

    assert in_words({"nginx": "1.22", "caddy": 2.6}) == "nginx: 1.22; caddy: 2.6"
    assert in_words({"cores": {"gateway": [1], "engine": [0]}, "note": ""}) == (
        "cores: (gateway: 1; engine: 0); note: –"
    )
    assert in_words([[1, ["nginx", "baseline"]], [2, []]]) == "(1, (nginx, baseline)), (2, –)"
    assert in_words(None) == "–" and in_words("two\nlines") == "two lines" and in_words({}) == "–"


def test_the_verdict_never_gives_an_interval_past_what_two_scores_can_differ_by() -> None:
    """Two repetitions (t = 12.7 with one degree of freedom): a leads by 50 points in one and
    by a hair in the other. The paired interval is about 26 ± 300; two scores of 0-100 cannot
    differ by more than 100, so the verdict says -100 to 100."""
    ms = [
        m("a", "w", 1, 1.0),
        m("b", "w", 1, 2.0),
        m("a", "w", 2, 1.0),
        m("b", "w", 2, 1.01),
    ]
    report = build_report(run_record(gateways=["a", "b"], workloads=[{"name": "w"}]), ms)
    c = report.summary.comparison
    assert c is not None and c.difference.half_width is not None
    assert c.difference.half_width > 100
    assert (c.difference.low, c.difference.high) == (-100.0, 100.0)
    lead = [line for line in report.verdict if line.startswith("Its lead over b")]
    assert lead and "95 % CI -100 to 100;" in lead[0], report.verdict
    assert json.loads(render_json(report))["comparison"]["ci95_low"] == -100.0


def test_a_baseline_the_gateways_outrun_is_said_to_be_no_floor(
    synthetic: tuple[RunRecord, list[Measurement]],
) -> None:
    run, ms = synthetic
    floor = "There the baseline is no floor"
    assert not any(floor in c for c in build_report(run, ms).cautions)
    slow = [
        dataclasses.replace(x, throughput=x.throughput / 4) if x.target == "baseline" else x
        for x in ms
        if x.workload != "bid" or x.target != "baseline"
    ]
    environment = {
        **run.environment,
        "cpu_affinity": {"cores": {"gateway": [1], "engine": [0], "backend": [0]}},
        "tls": {"http2": True},
    }
    report = build_report(dataclasses.replace(run, environment=environment), slow)
    said = [c for c in report.cautions if floor in c]
    assert said == [
        "More requests per second than the baseline (no gateway): nginx, haproxy and caddy on "
        "create-auction and retrieve. There the baseline is no floor "
        "(the baseline is the backend itself, which ran on the load engine's cpu 0 while each "
        "gateway had its own; with tls, the backend ends TLS itself at the baseline): the "
        "overhead table shows gains there, so compare the gateways with one another."
    ]
    # the terminal says it too, after the scores
    from gatebench.cli.run import report_lines
    from gatebench.run import RunOutcome

    named = [{**w, "method": "GET", "path": "/x"} for w in report.run.workloads]
    run = dataclasses.replace(report.run, workloads=named)
    lines = report_lines(RunOutcome(run, list(report.measurements), Path("r"), report=report))
    assert [line for line in lines if floor in line] == [f"Note: {said[0]}"]


def test_the_verdict_names_a_workload_once_with_the_first_reason_its_throughput_does_not_count() -> (
    None
):
    """v is tester-bound (a reached the engine's ceiling there) and too short, u and w only too
    short: v is said tester-bound, and the other two too short together (before, v came
    twice)."""
    ms = [
        dataclasses.replace(m(t, w, r, 10.0 + (t == "b") + (w == "u")), flags=("too-short",))
        for t in ("a", "b")
        for w in ("u", "v", "w")
        for r in (1, 2, 3)
    ]
    ceiling = Ceiling("gatling", "nginx", {"v": CeilingPoint(100.0, 0.0, 300)})
    record = run_record(gateways=["a", "b"], environment={"ceiling": ceiling.to_dict()})
    said = [x for x in build_report(record, ms).verdict if x.startswith("Throughput does not")]
    assert said == [
        "Throughput does not count on v: the load generator, not the gateways, set it there "
        "(tester-bound).",
        "Throughput does not count on u and w: their phases were too short to measure a rate "
        "(too short: docs/trust.md).",
    ]


def test_gateways_a_stopped_run_never_reached_are_not_ranked_with_zero() -> None:
    """A run interrupted after one gateway's phases: the others have no measurement at all.
    They are not ranked (a score of 0 and second place would say they were measured and
    lost); the verdict says they were not measured."""
    ms = [m("a", "w", 0, 10.0), m("baseline", "w", 0, 8.0)]
    report = build_report(
        run_record(
            gateways=["a", "b", "c"],
            status=RunStatus.PARTIAL,
            error="interrupted (Ctrl-C or SIGTERM)\ncompleted measurements kept",
        ),
        ms,
    )
    assert [g.target for g in report.summary.scores.gateways] == ["a"]
    assert report.summary.unranked == {"b": "was not measured", "c": "was not measured"}
    assert report.verdict[0] == "Only a was ranked, so its score (100) compares it with nothing."
    assert "b and c were not measured: not ranked." in report.verdict
    assert not any("rank 1" in line or "(0)" in line for line in report.verdict)
    assert (
        "The run's status is 'partial' (interrupted (Ctrl-C or SIGTERM)): the results may be "
        "incomplete."
    ) in report.cautions


# -- the leader against every other gateway; a lead with no spread -----------------------------


def _three_gateways() -> list[Measurement]:
    """b is steadily a little slower than a; c is as close, but noisy: it ranks first once."""
    ms = []
    for rep in range(3):
        ms.append(m("a", "w", rep, 10.0))
        ms.append(m("b", "w", rep, 10.0, p50=[11.0, 11.1, 10.9][rep]))
        ms.append(m("c", "w", rep, 10.0, p50=11.0, p99=[8.0, 13.0, 10.0][rep]))
    return ms


def test_the_verdict_tests_the_leader_against_every_gateway_not_only_the_runner_up() -> None:
    report = build_report(run_record(gateways=["a", "b", "c"]), _three_gateways())
    s = report.summary
    assert [c.runner_up for c in s.comparisons] == ["b", "c"]
    assert [c.significant for c in s.comparisons] == [True, False]
    assert all(c.family == 2 for c in s.comparisons)
    assert s.comparison == s.comparisons[0]
    assert report.verdict[1] == (
        "Its lead over b (0.9 points a repetition on average, 95 % CI 0.7 to 1.1) is larger than "
        "the run-to-run noise, but c (1.0 points a repetition on average, 95 % CI -4.3 to 6.4) is "
        "within it: a and c are tied on this evidence (2 comparisons, a against each other "
        "gateway, paired by repetition and Holm-corrected); it ranked first in 2 of 3 "
        "repetitions."
    )
    data = json.loads(render_json(report))
    assert [c["significant"] for c in data["comparisons"]] == [True, False]


def test_the_lead_over_each_gateway_is_holm_corrected() -> None:
    """A lead just outside its own 95 % interval is not enough when it is one of several."""
    from gatebench.core.aggregate import Comparison
    from gatebench.core.confidence import holm, paired_difference

    d = paired_difference([10.0, 12.0, 11.0, 10.5, 11.0], [9.0, 10.0, 10.5, 10.0, 10.6])
    assert d.significant is True
    assert d.p_value is not None and 0.025 < d.p_value < 0.05
    p_adjusted = holm([d.p_value, 0.5])[0]
    assert p_adjusted == pytest.approx(2 * d.p_value)
    assert Comparison("a", "b", d, 5).significant is True  # alone
    assert Comparison("a", "b", d, 5, p_adjusted, 2).significant is False  # one of two


def test_a_lead_with_no_spread_over_the_repetitions_is_not_read_as_beyond_the_noise() -> None:
    """Two repetitions whose per-repetition scores are identical (readings in whole ms, floored
    at 1 ms): a paired sd of 0 is no measure of noise, never "larger than the noise"."""
    ms = []
    for rep in range(2):
        lat = {"min": 0.0, "p50": 0.0, "p90": 0.0, "p95": 1.0, "p99": 1.0, "throughput": 204.0}
        ms.append(m("a", "bid", rep, 0.3 + 0.1 * rep, stddev=0.5 + 0.05 * rep, max=2.0, **lat))
        ms.append(m("b", "bid", rep, 0.4 + 0.05 * rep, stddev=0.6 - 0.05 * rep, max=3.0, **lat))
    report = build_report(run_record(gateways=["a", "b"]), ms)
    d = report.summary.comparison.difference  # type: ignore[union-attr]
    assert d.estimate == pytest.approx(100 / 30)  # max 2 against 3 ms, 1 metric of 10
    assert (d.half_width, d.significant) == (None, None)
    assert report.verdict[1] == (
        "Its lead over b was the same in each of the 2 repetitions (3.3 points), which measures no "
        "run-to-run noise (the readings are too coarse, or the repetitions too few, to show it): "
        "not enough repetitions to tell whether that lead is larger than the noise; it ranked "
        "first in 2 of 2 repetitions."
    )
    assert "larger than the run-to-run noise" not in " ".join(report.verdict)


def test_the_verdict_never_prints_two_different_scores_alike() -> None:
    """95.417 and 94.619 both read 95 in whole points: "ahead of b (95)" read as a tie."""
    ms = []
    for rep in range(10):
        j = 0.05 * (rep % 3)
        ms.append(m("a", "w", rep, 10.0 + j, p50=18.5 + j))
        ms.append(m("b", "w", rep, 10.0 + j, p99=21.7 + j))
    report = build_report(run_record(gateways=["a", "b"]), ms)
    assert report.verdict[0] == "a scores highest (95.4 of 100, paper profile), ahead of b (94.6)."
    close = [
        m(g, "w", rep, 2.0, throughput=t + rep)
        for rep in range(5)
        for g, t in (("a", 5000.0), ("b", 4999.8))
    ]
    report = build_report(run_record(gateways=["a", "b"]), close)
    assert (
        report.verdict[0] == "a scores highest (100 of 100, paper profile), ahead of b (99.9996)."
    )


def test_comparing_runs_that_ranked_different_gateways_warns_that_the_order_can_flip() -> None:
    """The paper divides by each metric's best: c, best on p99, flips a and b (docs/scoring.md,
    "What a score does not tell")."""
    from gatebench.core.report import compare_view

    def cell(g: str, rep: int, p50: float, p99: float) -> Measurement:
        return m(g, "w", rep, 10.0 + 0.01 * rep, p50=p50 + 0.01 * rep, p99=p99 + 0.01 * rep)

    base = [x for rep in range(5) for x in (cell("a", rep, 10, 40), cell("b", rep, 12, 30))]
    withc = base + [cell("c", rep, 20, 15) for rep in range(5)]
    two = build_report(run_record(gateways=["a", "b"]), base)
    three = build_report(run_record(gateways=["a", "b", "c"]), withc)
    assert [g.target for g in two.summary.scores.gateways] == ["b", "a"]
    assert [g.target for g in three.summary.scores.gateways] == ["c", "a", "b"]
    notes = compare_view(two, three)["notes"]
    assert notes[-1] == (
        "Scores are relative to the best gateway within each run, and the runs ranked "
        "different gateways: adding or removing a gateway can reverse the order of two "
        "others, not only change their scores, so compare raw metrics across runs rather "
        "than score points or ranks."
    )
    assert not any("compare ranks" in n for n in notes)


def test_a_wrk_runs_report_gives_wrks_resolution() -> None:
    ms = [
        m(g, "w", rep, v, engine="wrk", throughput=5000.0)
        for rep in range(3)
        for g, v in (("a", 0.2), ("b", 0.8))
    ]
    report = build_report(run_record(gateways=["a", "b"]), ms)
    data = json.loads(render_json(report))
    assert data["resolution_ms"] == 0.001
    assert data["resolutions"] == {"w": {"ms": 0.001, "engine": "wrk"}}
    assert report.verdict[0].startswith("a scores highest (100 of 100, paper profile), ahead of b")
    assert not any("Gatling" in n for n in report.summary.scores.notes)


def test_a_leader_that_failed_fast_is_said_to_lead_on_its_failures() -> None:
    """A gateway answering every request with a fast 502 scored 90 in the paper profile and
    ranked first, said only as 'check the error column': the verdict gives its error rate
    beside the fewest, says its lead is partly its failures, and names the robust profile."""
    ms = []
    for rep in range(3):
        ms.append(m("a", "get", rep, 5.0 + 0.1 * rep))
        ms.append(m("b", "get", rep, 1.0, error_pct=100.0, ok=0, ko=100))
    report = build_report(run_record(gateways=["a", "b"]), ms)
    assert [(g.target, round(g.score)) for g in report.summary.scores.gateways] == [
        ("b", 90),
        ("a", 28),
    ]
    text = " ".join(report.verdict)
    assert "b failed 100.0 % of its requests on get (a 0.0 %)" in text
    assert "so part of its lead is its failures." in text
    assert "`--profile robust` ranks a gateway with errors below every gateway without." in text
    assert "check the error column" not in text
