"""Readings are printed at the resolution of the engine that measured them, and every format
says which engines those were: a wrk run's p99 of 0.22 and 0.87 ms read ``0.22`` and ``0.87``
(not both ``<1``, while the score, floored at wrk's 0.001 ms, tells them apart), and its note
names wrk, not Gatling. A Gatling run reads as it always did."""

from __future__ import annotations

import re

import pytest

from gatebench.core.metrics import METRICS
from gatebench.core.model import BASELINE, Measurement, RunRecord, RunStatus
from gatebench.core.report import (
    RESOLUTION_NOTE,
    Report,
    build_report,
    compare_view,
    render_html,
    render_markdown,
    resolution_note,
    run_view,
)
from gatebench.core.report._format import fmt_ci, fmt_signed, fmt_value, resolution_of


def m(target: str, workload: str, rep: int, engine: str, **kw: float) -> Measurement:
    values: dict[str, object] = dict.fromkeys(METRICS, 0.5)
    values.update(throughput=2000.0, error_pct=0.0, requests=100, ok=100, ko=0)
    values.update(kw)
    return Measurement(
        run_id="r",
        target=target,
        workload=workload,
        repetition=rep,
        engine=engine,
        **values,  # type: ignore[arg-type]
    )


def report_of(engines: dict[str, str], baseline: bool = False) -> Report:
    """kong (p99 0.22 ms) and nginx (p99 0.87 ms) on each workload of ``engines`` (workload →
    the engine that measured it), three repetitions alike."""
    targets = {"kong": 0.22, "nginx": 0.87} | ({BASELINE: 0.2} if baseline else {})
    ms = [
        # the baseline's p99 varies (0.19, 0.2, 0.21 ms): its differences have an interval
        m(t, w, rep, engine, p99=p99 + (0.01 * (rep - 2) if t == BASELINE else 0.0))
        for w, engine in engines.items()
        for t, p99 in targets.items()
        for rep in (1, 2, 3)
    ]
    run = RunRecord(
        run_id="r",
        spec_uri="file:///a.yaml",
        spec_sha256="0" * 64,
        status=RunStatus.DONE,
        created_at=0.0,
        gateways=("kong", "nginx"),
        workloads=tuple({"name": w} for w in engines),
        plan={"baseline": baseline},
    )
    return build_report(run, ms, now=0.0)


def p99_column(markdown: str) -> list[str]:
    """The p99 cells of the Markdown latency tables, row by row."""
    out = []
    header: list[str] = []
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if "p99 (ms)" in cells and "Throughput (req/s)" in cells:
            header = cells
        elif header and line.startswith("| ") and not line.startswith("| ---"):
            out.append(cells[header.index("p99 (ms)")])
        elif not line.startswith("|"):
            header = []
    return out


# -- formatting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "value", "half", "resolution", "expected"),
    [
        # Gatling (the default): as ever
        ("p99", 0.22, None, 1.0, "<1"),
        ("p99", 0.0, None, 1.0, "<1"),
        ("p99", 12.0, None, 1.0, "12"),
        ("mean", 0.22, None, 1.0, "0.2"),
        ("mean", 1.26, 0.11, 1.0, "1.3 ± 0.1"),
        # wrk, gatebench-loadgen: microseconds
        ("p99", 0.22, None, 0.001, "0.22"),
        ("p99", 0.87, 0.0, 0.001, "0.87"),
        ("p99", 0.0123, None, 0.001, "0.012"),
        ("p99", 0.0004, None, 0.001, "<0.001"),
        ("p99", 1.43, None, 0.001, "1.4"),
        ("p99", 12.3, None, 0.001, "12"),
        ("mean", 0.022, None, 0.001, "0.022"),
        ("p99", 0.22, 0.013, 0.001, "0.220 ± 0.013"),
        ("p95", 412.3, 37.2, 0.001, "412 ± 37"),
        ("throughput", 81.246, None, 0.001, "81.2"),
    ],
)
def test_a_reading_is_printed_at_its_engines_resolution(
    metric: str, value: float, half: float | None, resolution: float, expected: str
) -> None:
    assert fmt_ci(metric, value, half, resolution) == expected


def test_a_difference_is_printed_at_its_engines_resolution() -> None:
    assert fmt_signed("p99", 0.65, None) == "+1"
    assert fmt_signed("p99", 0.65, None, 0.001) == "+0.65"
    assert fmt_signed("mean", 0.044, 0.012, 0.001) == "+0.044"
    assert fmt_value("mean", 0.012, 0.012, 0.001) == "0.012"


def test_the_resolution_of_a_cells_engines_is_the_coarsest() -> None:
    assert resolution_of(["wrk"]) == 0.001
    assert resolution_of(["loadgen"]) == 0.001
    assert resolution_of(["gatling", "wrk"]) == 1.0
    assert resolution_of([]) == 1.0  # older records: Gatling's
    assert resolution_of(["k6"]) == 1.0  # an engine the score does not know: as it takes it


# -- reports -----------------------------------------------------------------------------------


def test_a_wrk_runs_markdown_prints_its_sub_millisecond_readings() -> None:
    """Both gateways read ``<1`` while the score put them at 100 and below: the readings
    behind it must show."""
    report = report_of({"get": "wrk"})
    text = render_markdown(report)
    assert p99_column(text) == ["0.22", "0.87"]
    assert "&lt;1" not in text and "<1" not in text
    note = report.resolution_note
    assert note.startswith("Latencies are recorded to the microsecond by wrk")
    assert "Gatling" not in note
    assert note in text
    assert RESOLUTION_NOTE not in text
    scores = {g.target: g.score for g in report.summary.scores.gateways}
    assert scores["kong"] == 100 and scores["nginx"] < 100


def test_a_wrk_runs_html_prints_its_sub_millisecond_readings() -> None:
    report = report_of({"get": "wrk"})
    html = render_html(report)
    cells = re.findall(r'<td class="num" data-sort="0\.(?:22|87)">(?:<strong[^>]*>)?([^<]*)<', html)
    assert cells == ["0.22", "0.87"]
    assert "&lt;1<" not in html
    assert "Gatling records each request" not in html
    assert "Latencies are recorded to the microsecond by wrk" in html
    assert html.count("by wrk, so a reading") == 2  # the method section and the footer


def test_a_loadgen_run_names_gatebench_loadgen() -> None:
    report = report_of({"get": "loadgen"})
    assert report.resolution_note.startswith(
        "Latencies are recorded to the microsecond by gatebench-loadgen"
    )
    assert p99_column(render_markdown(report)) == ["0.22", "0.87"]


def test_a_gatling_runs_report_is_unchanged() -> None:
    report = report_of({"get": "gatling"})
    text = render_markdown(report)
    assert p99_column(text) == ["&lt;1", "&lt;1"]
    assert text.endswith(f"\n\n{RESOLUTION_NOTE}\n")
    html = render_html(report)
    assert html.count(RESOLUTION_NOTE.replace("'", "&#x27;")) == 2
    view = run_view(report)
    assert view["resolution"] == RESOLUTION_NOTE
    (latency,) = [c for c in view["charts"] if c["id"] == "latency"]
    assert latency["legend"].endswith("Gatling records whole milliseconds; <1 means under 1 ms.")
    assert latency["groups"][0]["bars"][0]["text"] == "p50 <1 · p90 <1 · p99 <1 ms"
    assert report.resolution_note == RESOLUTION_NOTE


def test_the_dashboard_says_what_the_reports_say() -> None:
    report = report_of({"get": "wrk"})
    view = run_view(report)
    assert view["resolution"] == report.resolution_note
    (latency,) = [c for c in view["charts"] if c["id"] == "latency"]
    bars = latency["groups"][0]["bars"]
    assert [b["text"] for b in bars] == [
        "p50 0.50 · p90 0.50 · p99 0.22 ms",
        "p50 0.50 · p90 0.50 · p99 0.87 ms",
    ]
    assert [mark["text"] for mark in bars[0]["marks"]] == ["0.50", "0.50", "0.22"]
    assert "Gatling" not in latency["legend"] + latency["description"]
    (table,) = [t for t in view["tables"] if t["id"] == "latency-get"]
    assert "0.22" in str(table) and "<1" not in str(table)
    assert compare_view(report, report)["resolution"] == report.resolution_note
    gatling = report_of({"get": "gatling"})
    both = compare_view(gatling, report)["resolution"]
    assert both == f"Run A: {RESOLUTION_NOTE} Run B: {report.resolution_note}"


def test_the_overhead_of_a_wrk_run_is_printed_at_its_resolution() -> None:
    text = render_markdown(report_of({"get": "wrk"}, baseline=True))
    overhead = text.split("## Overhead against the baseline")[1].split("##")[0]
    rows = [line.split(" | ")[4] for line in overhead.splitlines() if line.startswith("| ")]
    assert rows[2:] == ["+0.020 ± 0.025 (+10.0 %)", "+0.670 ± 0.025 (+335 %)"]  # p99
    assert "| baseline (no gateway) | 2,000 | 0.50 |" in text


def test_a_run_of_two_engines_says_which_measured_what() -> None:
    report = report_of({"get": "wrk", "post": "gatling"})
    note = report.resolution_note
    assert note == (
        "Latencies come from more than one load engine, each printed at its own resolution: "
        "Gatling measured workload post and records each request's time at 1 ms resolution "
        "(a 0 ms reading means under 1 ms, shown as <1); wrk measured workload get and "
        "records latencies to the microsecond (a reading is shown with the decimals it "
        "needs: two significant digits, never finer than 0.001 ms). Intervals are 95 % "
        "confidence intervals of the mean over the repetitions (Student's t)."
    )
    text = render_markdown(report)
    assert p99_column(text) == ["0.22", "0.87", "&lt;1", "&lt;1"]
    assert note in text


def test_a_workload_measured_by_two_engines_names_the_targets() -> None:
    ms = [m("kong", "get", 1, "wrk"), m("nginx", "get", 1, "gatling")]
    note = resolution_note(ms)
    assert "Gatling measured workload get (for nginx) and records" in note
    assert "wrk measured workload get (for kong) and records" in note
