"""The report's deployment sections, one definition for HTML and Markdown: TLS handshakes
per phase (new and resumed) and what a killed replica did to each gateway (docs/input.md,
"The gateway as deployed")."""

from __future__ import annotations

from collections.abc import Sequence

from gatebench.core.model import Measurement
from gatebench.core.report._format import fmt_number
from gatebench.core.report._tables import TextTable

_HANDSHAKE_HEADER = ("target", "workload", "rep", "new", "resumed", "resumed %")
_FAULT_HEADER = (
    "gateway",
    "rep",
    "requests after",
    "errors",
    "error %",
    "spike (ms)",
    "clients disturbed (s)",
    "kept sending (s)",
    "attempts",
    "probes/s (all gateways)",
)


def _measured(measurements: Sequence[Measurement]) -> list[Measurement]:
    return sorted(measurements, key=lambda m: (m.target, m.workload, m.repetition))


def _handshake_intro(measurements: Sequence[Measurement]) -> str:
    if not any(m.tls_new is not None for m in measurements):
        return ""
    return (
        "TLS handshakes each target answered during each measured phase, counted from the "
        "packets (gatebench.local._wire: on the loopback interface locally, as they reached the "
        "tester VMs on Google Cloud): new sessions (full handshakes) and resumed ones."
    )


def _handshake_rows(measurements: Sequence[Measurement]) -> list[list[str]]:
    rows = []
    for m in _measured(measurements):
        if m.tls_new is None or m.tls_resumed is None:
            continue
        total = m.tls_new + m.tls_resumed
        share = fmt_number(100 * m.tls_resumed / total, 1) if total else "–"
        rows.append(
            [m.target, m.workload, str(m.repetition), str(m.tls_new), str(m.tls_resumed), share]
        )
    return rows


def _fault_intro(measurements: Sequence[Measurement]) -> str:
    faulted = [m for m in measurements if m.fault]
    if not faulted:
        return ""
    return (
        f"One backend replica was killed during each gateway's measured {faulted[0].workload!r} "
        "phase and started again when it ended. Errors and the spike count the requests still "
        "in flight at the kill (within 5 ms of it, the clocks' skew) or started after it; 'clients disturbed' runs to the end of the last request that "
        "failed or took over twice the p99 before the kill; 'kept sending' to the last moment "
        "the gateway still sent requests to the dead replica (connection attempts beyond its "
        "health checks, or failed requests); 'probes/s' are the connection attempts to the dead "
        "replica afterwards: the health checks of every gateway of the run, which all probe "
        "the same replicas."
    )


def _opt(value: object, digits: int) -> str:
    return "–" if not isinstance(value, int | float) else fmt_number(float(value), digits)


def _fault_rows(measurements: Sequence[Measurement]) -> list[list[str]]:
    rows = []
    for m in _measured(measurements):
        f = m.fault
        if not f:
            continue
        if f.get("error"):
            rows.append([m.target, str(m.repetition), str(f["error"])] + ["–"] * 7)
            continue
        rows.append(
            [
                m.target,
                str(m.repetition),
                str(f.get("requests_after", "–")),
                str(f.get("errors", "–")),
                _opt(f.get("error_pct"), 2),
                _opt(f.get("spike_ms"), 0),
                _opt(f.get("disturbed_s"), 2),
                _opt(f.get("stopped_after_s"), 2),
                str(f["attempts"]) if f.get("attempts") is not None else "–",
                _opt(f.get("probe_rate"), 1),
            ]
        )
    return rows


def deployment_tables(measurements: Sequence[Measurement]) -> list[TextTable]:
    """The sections a run has of TLS handshakes and a replica's failure (none without rows)."""
    tables = [
        TextTable(
            "tls",
            "TLS handshakes",
            _handshake_intro(measurements),
            _HANDSHAKE_HEADER,
            _handshake_rows(measurements),
            3,
        ),
        TextTable(
            "fault",
            "A replica fails",
            _fault_intro(measurements),
            _FAULT_HEADER,
            _fault_rows(measurements),
            1,
        ),
    ]
    return [t for t in tables if t.rows]


__all__ = ["deployment_tables"]
