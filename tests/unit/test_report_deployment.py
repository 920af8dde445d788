"""The report's deployment sections (report/_deployment.py): TLS handshakes per phase and what
a killed replica did, in Markdown and HTML, shown only when the run has them."""

from __future__ import annotations

import dataclasses

from gatebench.core.fault import FaultImpact
from gatebench.core.report import build_report, render_html, render_markdown
from synthetic import synthetic_run

IMPACT = FaultImpact(
    killed_at=1000.0,
    requests_after=900,
    errors=12,
    error_pct=1.333,
    p99_before_ms=4.0,
    spike_ms=310.0,
    disturbed_s=1.2,
    stopped_after_s=0.75,
    attempts=9,
    probe_rate=1.0,
)


def _run_with_deployment():  # type: ignore[no-untyped-def]
    run, ms = synthetic_run()
    first = ms[0]
    changed = [
        dataclasses.replace(first, tls_new=3, tls_resumed=97, fault=IMPACT.to_dict()),
        *ms[1:],
    ]
    return build_report(run, changed, now=1_767_272_400.0), first


def test_sections_appear_with_their_figures() -> None:
    report, first = _run_with_deployment()
    md = render_markdown(report)
    assert "## TLS handshakes" in md
    assert f"| {first.target} | {first.workload} | {first.repetition} | 3 | 97 | 97.0 |" in md
    assert "## A replica fails" in md
    assert (
        f"| {first.target} | {first.repetition} | 900 | 12 | 1.33 | 310 | 1.20 | 0.75 | 9 | 1.0 |"
        in md
    )
    html = render_html(report)
    assert 'id="tls"' in html and 'id="fault"' in html
    assert ">310<" in html


def test_no_sections_without_tls_or_a_fault() -> None:
    run, ms = synthetic_run()
    report = build_report(run, ms, now=1_767_272_400.0)
    assert "TLS handshakes" not in render_markdown(report)
    assert 'id="fault"' not in render_html(report)


def test_gatebench_run_prints_what_a_killed_replica_did() -> None:
    """The terminal's report of a run with a fault has its table, a row per gateway and
    repetition (the same rows as the report's section); a run without one has none."""
    from pathlib import Path

    from gatebench.cli.run import report_lines
    from gatebench.run import RunOutcome

    def lines_of(report):  # type: ignore[no-untyped-def]
        run = report.run
        named = [{**w, "method": "GET", "path": "/x"} for w in run.workloads]
        run = dataclasses.replace(run, workloads=named)
        return report_lines(RunOutcome(run, list(report.measurements), Path("r"), report=report))

    report, first = _run_with_deployment()
    lines = lines_of(report)
    start = lines.index("A replica fails (the report says what each column counts):")
    assert lines[start + 1].split()[:4] == ["gateway", "rep", "requests", "after"]
    row = [first.target, str(first.repetition), "900", "12", "1.33", "310", "1.20", "0.75"]
    assert lines[start + 2].split() == [*row, "9", "1.0"]
    run, ms = synthetic_run()
    assert not [line for line in lines_of(build_report(run, ms)) if "replica" in line]
