"""One table model for every view of a report: the HTML report, the Markdown report and the
dashboard's run page show the same tables (report._tables); only Markdown, the compact
text form, leaves out the columns marked ``compact=False``."""

from __future__ import annotations

import re
from dataclasses import replace
from html import escape, unescape

from gatebench.core.report import build_report, render_html, render_markdown, run_view
from gatebench.core.report._tables import latency_tables, overhead_table, score_table
from synthetic import synthetic_run

NOW = 1_767_268_800.0


def _report():  # type: ignore[no-untyped-def]
    run, ms = synthetic_run()
    return build_report(run, ms, now=NOW)


def _html_headers(html: str, caption: str) -> list[str]:
    """The column labels of the HTML table with this caption."""
    found = re.search(
        rf"<caption>{re.escape(escape(caption))}</caption><thead><tr>(.*?)</tr></thead>", html
    )
    assert found, caption
    return [
        unescape(label)
        for label in re.findall(r"<button type=\"button\">(.*?)</button>", found.group(1))
    ]


def _markdown_headers(md: str, section: str) -> list[str]:
    after = md.split(f"\n{section}\n", 1)[1]
    line = next(line for line in after.splitlines() if line.startswith("| "))
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def test_the_three_views_show_the_same_score_table() -> None:
    report = _report()
    model = score_table(report)
    labels = [c.label for c in model.columns]
    assert "Mean rank" in labels
    view = next(t for t in run_view(report)["tables"] if t["id"] == "scores")
    assert [c["label"] for c in view["columns"]] == labels
    assert _html_headers(render_html(report), model.caption) == labels
    compact = [c.label for c in model.columns if c.compact]
    assert _markdown_headers(render_markdown(report), "## Global scores") == compact
    # the same printed cells in each view (Markdown: its compact columns)
    row = model.rows[0]
    assert [c["text"] for c in view["rows"][0]["cells"]] == [c.text for c in row.cells]
    md_line = f"| {row.header} | " + " | ".join(
        c.text for c, col in zip(row.cells, model.columns[1:], strict=True) if col.compact
    )
    assert md_line in render_markdown(report)


def test_the_latency_and_overhead_tables_are_the_same_in_html_and_on_the_dashboard() -> None:
    report = _report()
    view = {t["id"]: t for t in run_view(report)["tables"]}
    html = render_html(report)
    latency = latency_tables(report)
    # what each workload sends is in its caption: the tables said only 'Workload bid'
    assert [t.caption.split(":")[0] for t in latency] == [
        "Workload create-auction (GET /create-auction, 50 concurrent users for 10s)",
        "Workload bid (POST /bid, 50 concurrent users for 10s)",
        "Workload retrieve (GET /retrieve, 50 concurrent users for 10s)",
    ]
    for model in [*latency, overhead_table(report.summary)]:
        labels = [c.label for c in model.columns]
        assert [c["label"] for c in view[model.id]["columns"]] == labels
        assert _html_headers(html, model.caption) == labels
        assert [r["header"] for r in view[model.id]["rows"]] == [r.header for r in model.rows]


def test_the_error_column_says_it_is_the_mean_of_the_repetitions_error_rates() -> None:
    """Beside the requests of all repetitions, the error rate is the mean of each repetition's
    KO / requests (what the score takes), not the pooled KO / requests: every view says so."""
    run, ms = synthetic_run(gateways=("nginx",), workloads=("bid",), repetitions=2)
    uneven = [  # 100 requests with 50 KO, then 1,900 with none: 25 %, where pooled is 2.5 %
        replace(m, requests=100, ok=50, ko=50, error_pct=50.0)
        if (m.target, m.repetition) == ("nginx", 1)
        else replace(m, requests=1900, ok=1900, ko=0, error_pct=0.0)
        if m.target == "nginx"
        else m
        for m in ms
    ]
    report = build_report(run, uneven, now=NOW)
    (table,) = latency_tables(report)
    labels = [c.label for c in table.columns]
    assert labels[10:13] == ["Errors, mean of reps (%)", "Requests, all reps", "Reps"]
    nginx = next(r for r in table.rows if r.header == "nginx")
    assert [c.text for c in nginx.cells[9:11]] == ["25 ± 318", "2,000"]
    said = (
        "Errors: the mean of the repetitions' error rates (KO / requests of each), as the "
        "score takes them, not the KO of all repetitions over their requests."
    )
    assert said in table.legend
    assert (
        "Mean ± half-width of the 95 % confidence interval over the repetitions. " + said
    ) in render_markdown(report)


def test_the_latency_table_never_marks_an_unranked_gateways_value_best() -> None:
    from gatebench.core.metrics import METRICS
    from gatebench.core.model import Measurement, RunRecord, RunStatus
    from gatebench.core.report._tables import latency_tables

    def m(target: str, rep: int, mean: float) -> Measurement:
        values: dict[str, object] = dict.fromkeys(METRICS, mean)
        values.update(throughput=1000.0 / mean, error_pct=0.0, requests=100, ok=100, ko=0)
        return Measurement(run_id="r", target=target, workload="w", repetition=rep, **values)  # type: ignore[arg-type]

    run = RunRecord(
        run_id="r",
        spec_uri="file:///a.yaml",
        spec_sha256="0" * 64,
        status=RunStatus.DONE,
        created_at=0.0,
        gateways=["a", "b", "c"],
        environment={"failures": {"c": {"repetition": 3}}},
    )
    ms = [m(g, rep, v) for rep in range(3) for g, v in (("a", 10.0), ("b", 12.0), ("c", 5.0))]
    report = build_report(run, ms)
    assert report.summary.unranked == {"c": "failed during repetition 3"}
    (table,) = latency_tables(report)
    rows = {r.header: r for r in table.rows}
    assert not any(c.best for c in rows["c"].cells)
    assert all(c.best for c in rows["a"].cells[: len(METRICS)] if c.text != "0")
