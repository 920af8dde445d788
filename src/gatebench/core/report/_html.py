"""The HTML report: one self-contained file (inline CSS, JS and SVG) that fetches nothing.

A Content-Security-Policy meta tag forbids every fetch (``default-src 'none'``), so even a
mistake could not make the page call home. Every string from the run (gateway, workload
and title names, environment values, error messages) is escaped.

Sections: verdict and cautions; global scores (the paper's Table V); score per workload
(Fig. 4); throughput per endpoint with confidence whiskers (Fig. 3); latency and error
tables per workload (Tables II–IV plus p50/p90/p99); overhead against the baseline; rank
stability; measurement quality (flags, CPU); the run's metadata; how to read it all.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

from gatebench.core._version import __version__
from gatebench.core.cost import describe_cost
from gatebench.core.measure import FLAGS
from gatebench.core.report._build import Report, traffic_source
from gatebench.core.report._charts import (
    Chart,
    colours_for,
    score_chart,
    throughput_chart,
    workload_score_chart,
)
from gatebench.core.report._deployment import deployment_tables
from gatebench.core.report._format import fmt_number, fmt_points
from gatebench.core.report._svg import hbar_chart
from gatebench.core.report._tables import (
    Table,
    TextTable,
    cost_table,
    latency_tables,
    overhead_table,
    score_table,
    stability_table,
    workload_score_table,
)
from gatebench.core.report._trust import TRUST_KEYS, trust_tables
from gatebench.core.trust import left_out_of

CSS = """
:root{--fg:#1b1b1b;--muted:#595959;--line:#d0d0d0;--bg:#fff;--zebra:#f5f7f9;--accent:#0b5cad}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:var(--bg);margin:0}
main,header,nav,footer{max-width:1120px;margin:0 auto;padding:0 20px}
header{padding-top:24px}
h1{font-size:1.6em;margin:.2em 0}
h2{font-size:1.25em;margin:1.6em 0 .5em;border-bottom:2px solid var(--line);padding-bottom:.2em}
h3{font-size:1.05em;margin:1.2em 0 .4em}
.sub{color:var(--muted);margin:0}
.verdict{font-size:1.12em;background:#eef5fc;border-left:5px solid var(--accent);
padding:12px 16px;margin:16px 0}
.cautions{border-left:5px solid #b35c00;background:#fff6ec;padding:8px 16px;margin:12px 0}
.cautions ul{margin:.3em 0;padding-left:1.2em}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 16px;margin:8px 0}
nav a{color:var(--accent)}
table{border-collapse:collapse;margin:8px 0 16px;font-size:.93em}
caption{text-align:left;font-weight:600;padding:4px 0;caption-side:top}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;vertical-align:top}
tbody th{text-align:left;font-weight:600}
thead th{text-align:left;border-bottom:2px solid #9a9a9a;white-space:nowrap}
tbody tr:nth-child(even){background:var(--zebra)}
td{white-space:nowrap}td:last-child{white-space:normal}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th button{font:inherit;font-weight:600;background:none;border:0;padding:0;cursor:pointer;color:inherit}
th button::after{content:" \\2195";color:var(--muted);font-weight:400}
th[aria-sort=ascending] button::after{content:" \\2191"}
th[aria-sort=descending] button::after{content:" \\2193"}
strong.best{font-weight:700}
.tag{display:inline-block;font-size:.8em;border:1px solid var(--muted);border-radius:3px;
padding:0 4px;margin-left:4px;color:var(--muted)}
.scroll{overflow-x:auto}
svg.chart{max-width:100%;height:auto;display:block;margin:6px 0 14px}
svg.chart text{font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;fill:var(--fg)}
svg.chart text.group{font-weight:700}
svg.chart text.tick,svg.chart text.axis-label{fill:var(--muted);font-size:11px}
svg.chart line.grid{stroke:#e3e3e3;stroke-width:1}
svg.chart path.whisker{stroke:#1b1b1b;stroke-width:1.4;fill:none}
svg.chart rect.bar{stroke-width:1}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px}
dl.meta dt{font-weight:600}
dl.meta dd{margin:0;word-break:break-word}
.legend{color:var(--muted);font-size:.9em}
footer{color:var(--muted);font-size:.85em;padding:24px 20px 40px}
@media print{nav{display:none}.verdict,.cautions{break-inside:avoid}}
"""

JS = """
(function () {
  function key(cell) {
    var raw = cell.getAttribute("data-sort");
    if (raw === null) { return cell.textContent.trim().toLowerCase(); }
    var n = parseFloat(raw);
    return isNaN(n) ? raw : n;
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, index) {
      var button = th.querySelector("button");
      if (!button) { return; }
      button.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[index]), y = key(b.cells[index]);
          return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class _Table:
    """A table with a caption, column headers (sort buttons when sortable) and row headers."""

    def __init__(self, caption: str, columns: Sequence[tuple[str, bool]], *, sortable: bool = True):
        self.caption = caption
        self.columns = columns  # (label, numeric)
        self.sortable = sortable
        self.rows: list[str] = []

    def add(
        self,
        header: str,
        cells: Iterable[tuple[str, float | str | None]],
        sort_key: str | None = None,
    ) -> None:
        """``header``: the row header (already HTML); cells: (html, sort value)."""
        key = f' data-sort="{_e(sort_key)}"' if sort_key is not None else ""
        parts = [f'<th scope="row"{key}>{header}</th>']
        for (html, sort), (_, numeric) in zip(cells, self.columns[1:], strict=True):
            attrs = ' class="num"' if numeric else ""
            if sort is not None and not (isinstance(sort, float) and not math.isfinite(sort)):
                attrs += f' data-sort="{_e(sort)}"'
            parts.append(f"<td{attrs}>{html}</td>")
        self.rows.append("<tr>" + "".join(parts) + "</tr>")

    def html(self) -> str:
        heads = []
        for label, numeric in self.columns:
            cls = ' class="num"' if numeric else ""
            inner = f'<button type="button">{label}</button>' if self.sortable else label
            heads.append(f'<th scope="col"{cls}>{inner}</th>')
        cls = ' class="sortable"' if self.sortable else ""
        return (
            f'<div class="scroll"><table{cls}><caption>{self.caption}</caption>'
            f"<thead><tr>{''.join(heads)}</tr></thead><tbody>{''.join(self.rows)}</tbody></table></div>"
        )


def _model_table(table: Table) -> str:
    """A report table (``_tables``), every column, sortable: escaped text, tags and hints as
    tags, the best value and totals in bold."""
    out = _Table(_e(table.caption), [(_e(c.label), c.numeric) for c in table.columns])
    for row in table.rows:
        header = _e(row.header) + "".join(f'<span class="tag">{_e(t)}</span>' for t in row.tags)
        cells: list[tuple[str, float | str | None]] = []
        for cell in row.cells:
            html = _e(cell.text)
            if cell.best:
                html = f'<strong class="best" title="best among the gateways">{html}</strong>'
            elif cell.strong:
                html = f"<strong>{html}</strong>"
            html += "".join(f'<span class="tag">{_e(t)}</span>' for t in (*cell.tags, *cell.hints))
            cells.append((html, cell.sort))
        out.add(header, cells, sort_key=row.sort)
    return out.html()


def render_html(report: Report) -> str:
    s = report.summary
    colours = colours_for(s.targets, s.baseline)

    def colour_of(target: str) -> str:
        return colours.get(target, "#444444")

    sections = [
        ("scores", "Global scores", _scores(report, colour_of)),
        ("workload-scores", "Score per workload", _workload_scores(report, colour_of)),
        (
            "throughput",
            "Throughput per endpoint",
            _chart(throughput_chart(s), colour_of, "Nothing was measured yet."),
        ),
        ("latency", "Latency and errors", _latency(report)),
        ("overhead", "Overhead against the baseline", _overhead(report)),
        ("costs", "What each target cost", _costs(report)),
        ("stability", "Rank stability", _stability(report)),
        ("quality", "Measurement quality", _quality(report)),
        *((t.id, t.title, _text_table(t)) for t in deployment_tables(report.measurements)),
        (
            "trust",
            "Trust: headroom and a second engine",
            "".join(_text_table(t) for t in trust_tables(report)),
        ),
        ("run", "Run", _run_metadata(report)),
        *(
            [
                (
                    "cost",
                    "Estimated cost",
                    f"<pre>{_e(chr(10).join(describe_cost(report.cost)))}</pre>",
                )
            ]
            if report.cost is not None
            else []
        ),
        ("method", "How to read this report", _method(report)),
    ]
    nav = "".join(f'<li><a href="#{sid}">{_e(title)}</a></li>' for sid, title, _ in sections)
    body = "".join(
        f'<section id="{sid}" aria-labelledby="{sid}-h"><h2 id="{sid}-h">{_e(title)}</h2>{content}</section>'
        for sid, title, content in sections
    )
    run = report.run
    return html_page(
        title=f"gatebench: {report.title} ({run.run_id})",
        subtitle=(
            f"gatebench report · run {run.run_id} · {run.status.value} · {_when(run.created_at)}"
        ),
        heading=report.title,
        verdict=report.verdict,
        cautions=report.cautions,
        body=f'<nav aria-label="Sections"><ul>{nav}</ul></nav><main>{body}</main>',
        footer=(
            f"Generated by gatebench {__version__} on {_when(report.generated_at)} "
            f"from {len(report.measurements)} measurement(s). {report.resolution_note}"
        ),
    )


def html_page(
    *,
    title: str,
    subtitle: str,
    heading: str,
    verdict: Sequence[str],
    cautions: Sequence[str],
    body: str,
    footer: str,
) -> str:
    """A whole report page, one file that fetches nothing: its head (``title``, the policy
    that forbids every fetch, the style), a header (``subtitle``, ``heading``, the verdict and
    the cautions), ``body`` (HTML: all that follows the header), the footer and the script.
    Every argument but ``body`` is text."""
    aside = ""
    if cautions:
        items = "".join(f"<li>{_e(c)}</li>" for c in cautions)
        aside = (
            f'<aside class="cautions" role="note" aria-label="Cautions"><strong>Before you '
            f"trust these numbers</strong><ul>{items}</ul></aside>"
        )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="gatebench {_e(__version__)}">'
        f"<title>{_e(title)}</title>"
        f"<style>{CSS}</style></head><body>"
        f'<header><p class="sub">{_e(subtitle)}</p><h1>{_e(heading)}</h1>'
        f'<p class="verdict" id="verdict">{_e(" ".join(verdict))}</p>{aside}</header>'
        f"{body}<footer>{_e(footer)}</footer>"
        f"<script>{JS}</script></body></html>\n"
    )


def _chart(chart: Chart | None, colour_of: Any, empty: str, table: Table | None = None) -> str:
    """A chart, its legend and the table beside it; ``empty`` when there is nothing to draw."""
    if chart is None or not chart.groups:
        return f"<p>{empty}</p>"
    legend = f'<p class="legend">{_e(chart.legend)}</p>' if chart.legend else ""
    return hbar_chart(chart, colour_of) + legend + (_model_table(table) if table else "")


def _scores(report: Report, colour_of: Any) -> str:
    chart = score_chart(report)
    table = score_table(report) if chart else None
    return _chart(chart, colour_of, "No gateway was scored yet.", table)


def _workload_scores(report: Report, colour_of: Any) -> str:
    chart = workload_score_chart(report)
    table = workload_score_table(report) if chart else None
    return _chart(chart, colour_of, "No workload was scored yet.", table)


def _latency(report: Report) -> str:
    s = report.summary
    if not s.cells:
        return "<p>Nothing was measured yet.</p>"
    parts = [
        '<p class="legend">Mean over the repetitions ± the half-width of its 95 % confidence '
        "interval. <strong>Bold</strong>: the best value among the gateways (the baseline does "
        "not compete). Latencies in ms, whole-millisecond readings (&lt;1 means under 1 ms).</p>"
    ]
    parts += [_model_table(table) for table in latency_tables(report)]
    return "".join(parts)


def _costs(report: Report) -> str:
    table = cost_table(report.summary)
    if table is None:
        return (
            "<p>This run recorded no CPU or memory figures (runs before they were measured, "
            "or a cloud run whose gateway VM uploaded no cgroup samples).</p>"
        )
    return f'<p class="legend">{_e(table.legend)}</p>' + _model_table(table)


def _overhead(report: Report) -> str:
    s = report.summary
    if s.baseline is None:
        return "<p>This run has no baseline (no gateway), so there is no overhead to show. Add <code>baseline: true</code> to the plan.</p>"
    if not s.overhead:
        return "<p>No workload has both the baseline and a gateway measured.</p>"
    table = overhead_table(s)
    return f'<p class="legend">{_e(table.legend)}</p>' + _model_table(table)


def _stability(report: Report) -> str:
    s = report.summary
    n = len(s.complete_repetitions)
    if not s.rank_stability or n == 0:
        return "<p>No complete repetition to rank.</p>"
    text = ""
    c = s.comparison
    others = s.comparisons[1:] if s.comparisons else ()
    if c is not None and c.difference.half_width is not None:
        d = c.difference
        noise = "larger than" if c.significant else "inside"
        if d.estimate >= 0:
            holm = (
                f" (Holm-corrected for the {c.family} comparisons of {_e(c.leader)} with each "
                "other gateway)"
                if c.family > 1
                else ""
            )
            text = (
                f"<p>{_e(c.leader)} − {_e(c.runner_up)}, paired by repetition: "
                f"{_e(fmt_points(d.estimate, 1))}, 95 % CI {_e(fmt_number(d.low or 0.0, 1))} "
                f"to {_e(fmt_number(d.high or 0.0, 1))}: the lead is {noise} the run-to-run "
                f"noise{holm}.</p>"
            )
            for o in others:
                od = o.difference
                if od.half_width is None:
                    text += (
                        f"<p>{_e(o.leader)} − {_e(o.runner_up)}: the same "
                        f"{_e(fmt_points(od.estimate, 1))} in every repetition, no measure of "
                        "the run-to-run noise.</p>"
                    )
                    continue
                text += (
                    f"<p>{_e(o.leader)} − {_e(o.runner_up)}: {_e(fmt_points(od.estimate, 1))}, "
                    f"95 % CI {_e(fmt_number(od.low or 0.0, 1))} to "
                    f"{_e(fmt_number(od.high or 0.0, 1))}: the lead is "
                    f"{'larger than' if o.significant else 'inside'} the run-to-run noise.</p>"
                )
        else:
            # Scored one repetition at a time the runner-up does better: no "lead" to speak of.
            text = (
                f"<p>{_e(c.runner_up)} − {_e(c.leader)}, paired by repetition: "
                f"{_e(fmt_points(-d.estimate, 1))}, 95 % CI "
                f"{_e(fmt_number(-(d.high or 0.0), 1))} to {_e(fmt_number(-(d.low or 0.0), 1))}: "
                f"scored one repetition at a time, {_e(c.runner_up)} does better than "
                f"{_e(c.leader)}, against the order of the averaged metrics (see the verdict); the "
                f"difference is {noise} the run-to-run noise.</p>"
            )
    return _model_table(stability_table(report)) + text


def _quality(report: Report) -> str:
    s = report.summary
    if not s.cells:
        return "<p>Nothing was measured yet.</p>"
    columns: list[tuple[str, bool]] = [
        ("Target", False),
        ("Workload", False),
        ("Reps", True),
        ("Requests, all reps", True),
        ("KO", True),
        ("Flags", False),
        ("Other CPU, max (%)", True),
        ("Tester CPU, max (%)", True),
        ("Most frequent KO reason", False),
    ]
    table = _Table("Per target and workload, over the repetitions", columns)
    for (w, t), cell in sorted(
        s.cells.items(),
        key=lambda kv: (s.targets.index(kv[0][1]) if kv[0][1] in s.targets else 99, kv[0][0]),
    ):
        flags = ", ".join(f"{name} ×{count}" for name, count in cell.flags.items()) or "none"
        reason = f"{cell.errors[0][0]} (×{cell.errors[0][1]})" if cell.errors else "–"
        table.add(
            _e(t),
            [
                (_e(w), w),
                (str(cell.n), cell.n),
                (f"{cell.requests:,}", cell.requests),
                (f"{cell.ko:,}", cell.ko),
                (_e(flags), flags),
                (_cpu(cell.other_cpu_pct), cell.other_cpu_pct),
                (_cpu(cell.tester_cpu_pct), cell.tester_cpu_pct),
                (_e(reason), None),
            ],
            sort_key=t,
        )
    legend = (
        '<p class="legend">Flags: '
        + "; ".join(f"<em>{_e(flag)}</em> ({_e(meaning)})" for flag, meaning in FLAGS.items())
        + ".</p>"
    )
    return legend + table.html()


def _text_table(table: TextTable) -> str:
    """A printed table (``_tables.TextTable``) after its introduction, sortable."""
    html = f"<p>{_e(table.intro)}</p>"
    if not table.rows:
        return html
    out = _Table(
        escape(table.title, quote=False),
        [(_e(h), i >= table.numeric_from) for i, h in enumerate(table.header)],
    )
    for row in table.rows:
        out.add(_e(row[0]), [(_e(c), c) for c in row[1:]], sort_key=row[0])
    return html + out.html()


def _cpu(value: float | None) -> str:
    return "–" if value is None else fmt_number(value, 0)


def _flatten(prefix: str, value: Any, out: list[tuple[str, str]]) -> None:
    if isinstance(value, Mapping):
        if not value:
            out.append((prefix, "–"))
        for k in value:
            _flatten(f"{prefix}.{k}" if prefix else str(k), value[k], out)
    elif isinstance(value, list | tuple) and value and all(isinstance(v, Mapping) for v in value):
        for i, v in enumerate(value):
            _flatten(f"{prefix}[{i}]", v, out)
    elif isinstance(value, list | tuple):
        out.append((prefix, ", ".join(str(v) for v in value) or "–"))
    else:
        out.append((prefix, "–" if value is None or value == "" else str(value)))


def _run_metadata(report: Report) -> str:
    run = report.run
    items: list[tuple[str, str]] = [
        ("Run", run.run_id),
        (
            "Status",
            run.status.value + (f" (failed at {run.failed_step})" if run.failed_step else ""),
        ),
        ("API", report.title),
        ("Description", run.spec_uri),
        ("SHA-256", run.spec_sha256),
        ("Created", _when(run.created_at)),
        ("Updated", _when(run.updated_at)),
        ("Gateways", ", ".join(run.gateways) or "–"),
        ("Baseline", "measured" if report.summary.baseline else "not measured"),
        ("Repetitions", ", ".join(str(r) for r in report.summary.repetitions) or "–"),
        ("Scoring", report.scoring),
    ]
    traffic = traffic_source(run)
    if traffic is not None:
        items.insert(4, ("Workloads", traffic))
    if run.error:
        items.append(("Error", run.error))
    left_out = left_out_of(run.environment)
    for target, reason in sorted(run.target_errors.items()):
        items.append((f"{'Left out' if target in left_out else 'Failed'}: {target}", reason))
    env: list[tuple[str, str]] = []
    _flatten("", {k: v for k, v in run.environment.items() if k not in TRUST_KEYS}, env)
    workloads: list[tuple[str, str]] = []
    _flatten("", {str(w.get("name", i)): w for i, w in enumerate(run.workloads)}, workloads)

    def dl(pairs: Sequence[tuple[str, str]]) -> str:
        return (
            '<dl class="meta">'
            + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in pairs)
            + "</dl>"
        )

    html = dl(items)
    html += "<h3>Environment (versions, machine)</h3>"
    html += dl(env) if run.environment else "<p>The run recorded no environment.</p>"
    if run.workloads:
        html += "<h3>Workloads</h3>" + dl(workloads)
    return html


def _method(report: Report) -> str:
    if report.profile == "paper":
        profile = (
            "Profile <em>paper</em>: the AGE paper's score (§IV-C). For each workload and metric, "
            "the best gateway scores 1; another scores best/value for a lower-is-better metric "
            "and value/best for throughput. A workload's score is 100 × the mean over the "
            "metrics; the global score is the mean over the workloads."
        )
    else:
        profile = (
            "Profile <em>robust</em>: the paper's score, except that a value whose difference from "
            "the best is inside the 95 % confidence interval counts as a tie (score 1), a gateway "
            "with errors on a workload never scores above one without, and metrics carry weights."
        )
    return (
        f"<p>{_e(report.resolution_note)}</p><p>{profile} Latencies under the load engine's "
        "resolution (1 ms for Gatling, 0.001 ms for wrk and gatebench-loadgen; the coarsest of "
        "the engines that measured a workload) are scored as that resolution; a "
        "gateway that was not measured on a workload scores 0 there; the baseline never "
        "competes. See docs/scoring.md in gatebench for the rules and worked examples.</p>"
    )
