"""A probe as the load engine's input: the workload document of one rate offered to one target.

A probe is two constant-rate phases of the same workload at the same rate, back to back: the
warm-up (not measured; its queue, connections and caches carry into the next phase, since the
engine continues the schedule without a gap) and the measured window. The backend is reset
before the warm-up. The requests are built by the same code as every other run's
(``gatebench.workload.render_workload``), so a capacity probe sends what a fixed-workload run
of that workload sends.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..ir import Api
from ..plan import Injection, Plan
from ..workload import Control, Phase, Schedule, render_workload
from ._metrics import ProbeRequest

MIN_WARMUP_S = 0.001


def probe_document(
    plan: Plan,
    api: Api,
    workload: str,
    target: str,
    base_url: str,
    request: ProbeRequest,
    *,
    reset_url: str | None = None,
    seed: int = 0,
    first_index: int = 0,
) -> dict[str, Any]:
    """The document of one probe: a warm-up phase (when the probe has one) and the measured
    phase, numbered from ``first_index`` (the measured phase is the last)."""
    before = (Control(reset_url),) if reset_url else ()
    phases = []
    repetition = 1
    if request.warmup_s >= MIN_WARMUP_S:
        phases.append(
            Phase(
                first_index,
                target,
                workload,
                repetition,
                False,
                base_url,
                Injection("constant_rate", rate=request.rate, duration=request.warmup_s),
                before,
            )
        )
        before = ()
    phases.append(
        Phase(
            first_index + len(phases),
            target,
            workload,
            repetition,
            True,
            base_url,
            Injection("constant_rate", rate=request.rate, duration=request.duration_s),
            before,
        )
    )
    only = replace(plan, workloads=tuple(w for w in plan.workloads if w.name == workload))
    return render_workload(only, api, Schedule(tuple(phases), seed))


def measured_index(document: dict[str, Any]) -> int:
    """The index of a probe document's measured phase."""
    return int(next(p["index"] for p in document["phases"] if p["measured"]))


__all__ = ["measured_index", "probe_document"]
