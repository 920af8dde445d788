"""The report's trust section as text rows, laid out by the Markdown and HTML renderers:
the load engine's ceiling and each target's share of it, what is not scored because of it,
and a second engine's agreement (gatebench.core.trust, docs/trust.md)."""

from __future__ import annotations

from gatebench.core.report._build import Report
from gatebench.core.report._format import fmt_number
from gatebench.core.report._tables import TextTable
from gatebench.core.stats import fmt_rate

TRUST_KEYS = frozenset({"ceiling", "cross_check"})
"""Keys of a run's environment shown in the trust section, not in the run's metadata."""
_HEADROOM_HEADER = (
    "Workload",
    "Target",
    "Throughput (req/s)",
    "Engine ceiling (req/s)",
    "Share of the ceiling",
    "Repetitions at 80 % or more",
)


def _ms(value: float, engine: str) -> str:
    # Gatling's readings are whole ms (a mean over repetitions gets one decimal); wrk's are µs
    return fmt_number(value, 1 if engine == "gatling" else 2)


def _headroom_intro(report: Report) -> str:
    trust = report.trust
    ceiling = trust.ceiling
    if ceiling is None:
        return (
            "This run did not measure the load engine's ceiling, so no throughput was checked "
            "against it (tester-bound flags come from the CPU accounting only)."
        )
    if not ceiling.workloads:
        return ceiling.note or "The ceiling phases measured nothing."
    share = fmt_number(100 * ceiling.share, 0)
    text = (
        f"Before the first repetition, {ceiling.engine} drove the fastest target on this "
        f"machine ({ceiling.server}) with each workload: that is the most it can measure here. "
        f"A measurement at {share} % of that ceiling or more is flagged tester-bound, and a "
        f"workload's throughput is not scored when a gateway reached it in at least half of "
        "its repetitions."
    )
    text += _raised(report)
    rates = ceiling.rates_set()
    if rates:
        text += (
            " Where the plan sets the rate (an open model), the engine carried it, so that "
            "reading is the plan's rate, not a limit, and every target that keeps up carries "
            "the same: throughput is not scored there ("
            + "; ".join(f"{w}, {fmt_rate(r)} req/s offered" for w, r in rates.items())
            + ")."
        )
    if trust.tester_bound:
        text += " Not scored here: " + "; ".join(
            f"throughput on {w} ({', '.join(ts)})" for w, ts in trust.tester_bound.items()
        )
        text += "."
    elif not rates:
        text += " No workload's throughput was left out."
    return text


def _raised(report: Report) -> str:
    """Where a target went faster on average than the ceiling phase's one reading, the
    ceiling the table shows is that target's (gatebench.core.trust.demonstrated_ceiling): said,
    so that no reader takes it for what the fastest target read."""
    assert report.trust.ceiling is not None
    read = report.trust.ceiling.limits()
    said = []
    for workload, reading in sorted(read.items()):
        rows = [h for h in report.trust.headroom if h.workload == workload]
        if not rows or rows[0].ceiling <= reading:
            continue
        fastest = max(rows, key=lambda h: h.throughput)
        said.append(
            f"on {workload} the ceiling phase read {fmt_rate(reading)} req/s, and "
            f"{fastest.target} averaged {fmt_rate(rows[0].ceiling)} req/s over its repetitions"
        )
    if not said:
        return ""
    return (
        " One short reading is noisy: "
        + "; ".join(said)
        + ". The engine drives at least what a target averaged, so that is the ceiling shown there."
    )


def _headroom_rows(report: Report) -> list[list[str]]:
    return [
        [
            h.workload,
            h.target,
            fmt_rate(h.throughput),
            fmt_rate(h.ceiling),
            f"{fmt_number(h.share_pct, 0 if h.share_pct >= 10 else 1)} %",
            f"{h.near_ceiling} of {h.repetitions}",
        ]
        for h in report.trust.headroom
    ]


def _agreement_intro(report: Report) -> str:
    trust = report.trust
    if trust.second_engine is None:
        return (
            "No second engine re-measured this run (`gatebench run --cross-check wrk` does, for "
            "the closed-model workloads)."
        )
    text = trust.summary
    if trust.second_engine_note:
        text += f" Note: {trust.second_engine_note}."
    return (
        text + " Two values agree when the smaller is at least 90 % of the larger; a p50 also "
        "agrees when the two differ by no more than the coarser engine's resolution (Gatling: "
        "1 ms). Means over each engine's repetitions."
    )


def _agreement_header(report: Report) -> list[str]:
    first = report.trust.agreements[0] if report.trust.agreements else None
    one, two = (first.engine, first.other) if first else ("run", "second engine")
    return [
        "Target",
        "Workload",
        f"{one} (req/s)",
        f"{two} (req/s)",
        "Gap",
        f"{one} p50 (ms)",
        f"{two} p50 (ms)",
        "Gap",
        "Agree",
    ]


def agreement_rows(report: Report) -> list[list[str]]:
    return [
        [
            a.target,
            a.workload,
            fmt_rate(a.throughput),
            fmt_rate(a.other_throughput),
            f"{fmt_number(a.throughput_gap_pct, 1)} %",
            _ms(a.p50, a.engine),
            _ms(a.other_p50, a.other),
            f"{fmt_number(a.p50_gap_pct, 1)} %",
            "yes"
            if a.agrees
            else "no" + (f" ({a.engine} flagged tester-bound)" if a.tester_bound else ""),
        ]
        for a in report.trust.agreements
    ]


def trust_tables(report: Report) -> tuple[TextTable, TextTable]:
    """The load engine's headroom, then a second engine's agreement: each introduced even
    without rows (the introduction says why there are none)."""
    return (
        TextTable(
            "headroom",
            "Throughput against the load engine's ceiling (mean over the repetitions)",
            _headroom_intro(report),
            _HEADROOM_HEADER,
            _headroom_rows(report),
            2,
        ),
        TextTable(
            "agreement",
            "The same cells measured by a second engine",
            _agreement_intro(report),
            _agreement_header(report),
            agreement_rows(report),
            2,
        ),
    )


__all__ = ["TRUST_KEYS", "agreement_rows", "trust_tables"]
