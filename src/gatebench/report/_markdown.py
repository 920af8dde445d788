"""The Markdown report: the same content as the HTML one, as text tables (no charts)."""

from __future__ import annotations

from collections.abc import Sequence

from ..cost import describe_cost
from ..metrics import METRICS, UNITS
from ._build import RESOLUTION_NOTE, Report, metric_label
from ._format import fmt_ci, fmt_number, fmt_pct, fmt_score, fmt_signed, fmt_value
from ._trust import (
    HEADROOM_HEADER,
    TRUST_KEYS,
    agreement_header,
    agreement_intro,
    agreement_rows,
    headroom_intro,
    headroom_rows,
)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(
    header: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1
) -> list[str]:
    align = ["---" if i < numeric_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*lines, ""]


def render_markdown(report: Report) -> str:
    s, run = report.summary, report.run
    result = s.scores
    out = [
        f"# {report.title}",
        "",
        f"Run `{run.run_id}` · status {run.status.value} · profile {report.profile}",
        "",
    ]
    out += ["**Verdict.** " + " ".join(report.verdict), ""]
    if report.cautions:
        out += ["Before you trust these numbers:", ""]
        out += [f"- {c}" for c in report.cautions] + [""]

    out += ["## Global scores", ""]
    stability = {r.target: r for r in s.rank_stability}
    n = len(s.complete_repetitions)
    rows = []
    for g in result.gateways:
        r = stability.get(g.target)
        rows.append(
            [
                g.target,
                str(g.rank),
                fmt_score(g.score),
                f"{r.first} of {n}" if r and n else "–",
                ", ".join(g.missing) or "–",
            ]
        )
    out += (
        _table(["Gateway", "Rank", "Score", "First in", "Not measured on"], rows)
        if rows
        else ["No gateway was scored yet.", ""]
    )

    if result.workloads:
        out += ["## Score per workload", ""]
        rows = []
        for g in result.gateways:
            row = [g.target]
            for w in result.workloads:
                e = g.endpoint(w)
                text = fmt_score(e.score)
                if e.missing:
                    text += " (not measured)"
                elif e.capped_from is not None:
                    text += f" (capped from {fmt_score(e.capped_from)}: errors)"
                row.append(text)
            row.append(fmt_score(g.score))
            rows.append(row)
        out += _table(["Gateway", *result.workloads, "Global"], rows)

    out += [
        "## Latency, throughput and errors",
        "",
        "Mean ± half-width of the 95 % confidence interval over the repetitions.",
        "",
    ]
    for w in s.workloads:
        targets = s.measured_targets(w)
        if not targets:
            continue
        out += [f"### {w}", ""]
        rows = []
        for t in targets:
            cell = s.cells[(w, t)]
            rows.append(
                [t + (" (no gateway)" if t == s.baseline else "")]
                + [fmt_ci(m, cell.metrics[m].mean, cell.metrics[m].ci_half_width) for m in METRICS]
                + [f"{cell.requests:,}", str(cell.n)]
            )
        header = (
            ["Target"] + [f"{metric_label(m)} ({UNITS[m]})" for m in METRICS] + ["Requests", "Reps"]
        )
        out += _table(header, rows)

    if s.baseline and s.overhead:
        out += [
            "## Overhead against the baseline",
            "",
            "Gateway minus baseline, ± the 95 % confidence interval of the difference.",
            "",
        ]
        shown = ("mean", "p50", "p99", "throughput")
        rows = []
        for gateway in s.gateways:
            for w in s.workloads:
                if s.overhead_for(w, gateway, "mean") is None:
                    continue
                row = [gateway, w]
                for m in shown:
                    o = s.overhead_for(w, gateway, m)
                    assert o is not None
                    d = o.difference
                    text = fmt_signed(m, d.estimate, d.half_width)
                    if d.half_width:  # no "± 0": identical repetitions are not infinite precision
                        text += f" ± {fmt_value(m, d.half_width, d.half_width)}"
                    if o.relative_pct is not None:
                        text += f" ({fmt_pct(o.relative_pct)})"
                    row.append(text)
                rows.append(row)
        out += _table(
            ["Gateway", "Workload"] + [f"{metric_label(m)} ({UNITS[m]})" for m in shown],
            rows,
            numeric_from=2,
        )

    if s.rank_stability and n:
        out += ["## Rank stability", ""]
        rows = [
            [
                r.target,
                f"{r.first} of {n}",
                fmt_number(r.mean_rank, 1) if r.mean_rank is not None else "–",
            ]
            for r in s.rank_stability
        ]
        out += _table(["Gateway", "First in", "Mean rank"], rows)

    out += ["## Trust: the load engine's headroom and a second engine", ""]
    out += [headroom_intro(report), ""]
    rows = headroom_rows(report)
    if rows:
        out += _table(list(HEADROOM_HEADER), rows, numeric_from=2)
    out += [agreement_intro(report), ""]
    rows = agreement_rows(report)
    if rows:
        out += _table(agreement_header(report), rows, numeric_from=2)

    flagged = s.flag_counts()
    out += ["## Run", ""]
    out += [f"- Description: {run.spec_uri} (sha256 {run.spec_sha256[:12]}…)"]
    out += [
        f"- Gateways: {', '.join(run.gateways) or '–'}; baseline: {'measured' if s.baseline else 'not measured'}"
    ]
    out += [f"- Repetitions: {len(s.repetitions)} ({len(s.complete_repetitions)} complete)"]
    out += [f"- Flags: {', '.join(f'{k} ×{v}' for k, v in flagged.items()) or 'none'}"]
    for key, value in sorted(run.environment.items()):
        if key in TRUST_KEYS:
            continue  # in the trust section
        out.append(f"- {key}: {value}")
    if report.cost is not None:
        out += ["", "## Estimated cost", "", "```", *describe_cost(report.cost), "```"]
    out += ["", RESOLUTION_NOTE, ""]
    return "\n".join(out)
