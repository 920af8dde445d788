"""The Markdown report: the same content as the HTML one, as text tables (no charts).

The tables are the report's own (``_tables``), in their compact form. Every text the report
did not write itself (a title, a path, a workload's name, an engine's error) is escaped
(``_cell``): a pull request comment or a wiki page shows it as written, never as HTML or as
Markdown's links, images and emphasis."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from gatebench.core.cost import describe_cost
from gatebench.core.report._build import Report, environment_value, traffic_source
from gatebench.core.report._deployment import deployment_tables
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

MARKUP = re.compile(r"[\\`*\[\]|~]|(?<!\S)#|_+")
"""Markdown's characters that would change what follows: emphasis, code, links and images, a
table's columns, strikethrough, a heading (``#`` opening a word), and underscores unless inside
a word (``cpu_policy`` is no emphasis)."""


def _escape_markup(found: re.Match[str]) -> str:
    text, start, end = found.string, found.start(), found.end()
    inside_a_word = text[start - 1 : start].isalnum() and text[end : end + 1].isalnum()
    return found[0] if found[0].startswith("_") and inside_a_word else "\\" + "\\".join(found[0])


def _cell(text: str) -> str:
    """Text as Markdown shows it, as written and on one line: HTML's special characters as
    entities (no tag, no comment), Markdown's (``MARKUP``) after a backslash, a line break as
    a space. Every text the report did not write itself goes through it."""
    escaped = MARKUP.sub(_escape_markup, html.escape(text, quote=False))
    return " ".join(escaped.splitlines())


def _table(
    header: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1
) -> list[str]:
    align = ["---" if i < numeric_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def _with_tags(text: str, tags: Sequence[str]) -> str:
    return text + "".join(f" ({t})" for t in tags)


def _text_table(table: TextTable) -> list[str]:
    """A printed table (``_tables.TextTable``) after its introduction."""
    rows = _table(table.header, table.rows, table.numeric_from) if table.rows else []
    return [_cell(table.intro), "", *rows]


def _model_table(table: Table) -> list[str]:
    """A report table (``_tables``) in its compact form: the columns marked compact, tags
    in brackets; left-aligned up to the first numeric column, right-aligned from there."""
    shown = [i for i, c in enumerate(table.columns) if c.compact]
    first_numeric = next((k for k, i in enumerate(shown) if table.columns[i].numeric), len(shown))
    header = [table.columns[i].label for i in shown]
    rows = []
    for row in table.rows:
        cells = [_with_tags(row.header, row.tags)]
        cells += [_with_tags(row.cells[i - 1].text, row.cells[i - 1].tags) for i in shown[1:]]
        rows.append(cells)
    return _table(header, rows, numeric_from=first_numeric)


def render_markdown(report: Report) -> str:
    s, run = report.summary, report.run
    result = s.scores
    out = [
        f"# {_cell(report.title)}",
        "",
        f"Run `{run.run_id}` · status {run.status.value} · profile {_cell(report.scoring)}",
        "",
    ]
    out += ["**Verdict.** " + _cell(" ".join(report.verdict)), ""]
    if report.cautions:
        out += ["Before you trust these numbers:", ""]
        out += [f"- {_cell(c)}" for c in report.cautions] + [""]

    out += ["## Global scores", ""]
    out += (
        _model_table(score_table(report)) if result.gateways else ["No gateway was scored yet.", ""]
    )

    if result.workloads:
        out += ["## Score per workload", ""]
        out += _model_table(workload_score_table(report))

    out += [
        "## Latency, throughput and errors",
        "",
        "Mean ± half-width of the 95 % confidence interval over the repetitions. Errors: the "
        "mean of the repetitions' error rates (KO / requests of each), as the score takes "
        "them, not the KO of all repetitions over their requests.",
        "",
    ]
    for table in latency_tables(report):
        out += [f"### {_cell(table.subject)}", ""]
        out += _model_table(table)

    if s.baseline and s.overhead:
        out += [
            "## Overhead against the baseline",
            "",
            "Gateway minus baseline, ± the 95 % confidence interval of the difference.",
            "",
        ]
        out += _model_table(overhead_table(s))

    costs = cost_table(s)
    if costs is not None:
        out += ["## What each target cost", "", _cell(costs.legend), ""]
        out += _model_table(costs)

    if s.rank_stability and s.complete_repetitions:
        out += ["## Rank stability", ""]
        out += _model_table(stability_table(report))

    for section in deployment_tables(report.measurements):
        out += [f"## {_cell(section.title)}", "", *_text_table(section)]

    out += ["## Trust: the load engine's headroom and a second engine", ""]
    for trust in trust_tables(report):
        out += _text_table(trust)

    flagged = s.flag_counts()
    out += ["## Run", ""]
    out += [f"- Description: {_cell(run.spec_uri)} (sha256 {_cell(run.spec_sha256[:12])}…)"]
    traffic = traffic_source(run)
    if traffic is not None:
        out += [f"- Workloads: {_cell(traffic)}"]
    out += [
        f"- Gateways: {_cell(', '.join(run.gateways)) or '–'}; baseline: {'measured' if s.baseline else 'not measured'}"
    ]
    out += [f"- Repetitions: {len(s.repetitions)} ({len(s.complete_repetitions)} complete)"]
    out += [f"- Flags: {', '.join(f'{k} ×{v}' for k, v in flagged.items()) or 'none'}"]
    for key, value in sorted(run.environment.items()):
        if key in TRUST_KEYS:
            continue  # in the trust section
        out.append(f"- {_cell(key)}: {_cell(environment_value(key, value))}")
    if report.cost is not None:
        out += ["", "## Estimated cost", "", "```", *describe_cost(report.cost), "```"]
    out += ["", report.resolution_note, ""]
    return "\n".join(out)
