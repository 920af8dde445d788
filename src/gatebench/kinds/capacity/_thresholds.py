"""Thresholds on capacity: a CI gate on the rate each target carries within the objective.

::

    thresholds:
      - {metric: capacity, min: 2000/s}                  # every gateway, every searched workload
      - {metric: capacity, min: 500/s, gateway: envoy, workload: bid}

The value is the target's knee on the endpoint: the mean over the repetitions. A bound is
judged as a bound, never as the knee: a target reported as "≥ R" (the tester's limit, the plan's
max_rate) meets a minimum R proves (R ≥ min) and fails a maximum, which a lower bound cannot show
it meets (it may carry more); one reported as "< R" (the objective broke even at the lowest rate
probed) meets a maximum R proves (R ≤ max) and fails a minimum. A target or workload that has no
knee, is noisy or stopped during the run fails (as every threshold on a value that was not
measured does: gatebench.core.thresholds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from gatebench.core.model import BASELINE
from gatebench.core.thresholds import CAPACITY_METRICS, Threshold, ThresholdResult, fmt
from gatebench.kinds.capacity._result import CapacityResult
from gatebench.kinds.capacity._summary import KneeSummary

Bound = Literal["", "≥", "<"]


@dataclass(frozen=True)
class CapacityThresholdResult(ThresholdResult):
    """A capacity threshold's result, whose value may be a bound: ``≥`` (a lower bound: the
    target carries at least it) or ``<`` (an upper bound: it carries less)."""

    bound: Bound = ""

    @property
    def passed(self) -> bool:
        t, v = self.threshold, self.value
        if v is None:
            return False
        if self.bound == "≥":  # at least v: proves v >= min, never v <= max
            return t.max is None and (t.min is None or v >= t.min)
        if self.bound == "<":  # less than v: proves < max, never >= min
            return t.min is None and (t.max is None or v <= t.max)
        return super().passed

    def line(self) -> str:
        if self.value is None or not self.bound:
            return super().line()
        t = self.threshold
        where = f" ({t.pointer})" if t.pointer else ""
        shown = f"{self.bound} {fmt(self.value, t.unit)}"
        if self.passed:
            return f"{self.subject}: {t.metric} {shown} meets {t.label()}{where}"
        kind = "a lower" if self.bound == "≥" else "an upper"
        if (self.bound == "≥" and t.min is not None and self.value < t.min) or (
            self.bound == "<" and t.max is not None and self.value > t.max
        ):
            return (
                f"{self.subject}: {t.metric} {shown} is only {kind} bound and does not show it "
                f"meets {t.label()}{where}"
            )
        return (
            f"{self.subject}: {t.metric} {shown} is only {kind} bound, which cannot show it "
            f"meets {t.label()}{where}"
        )


def _value(summary: KneeSummary | None) -> tuple[float | None, Bound]:
    """The figure a threshold judges, and whether it is a bound."""
    if summary is None or summary.halted or summary.noisy:
        return None, ""
    if summary.upper_bounded:
        return summary.less_than or None, "<"
    if summary.bounded:
        return summary.bound, "≥"
    return summary.mean, ""


def evaluate_capacity(
    thresholds: Sequence[Threshold], result: CapacityResult
) -> list[ThresholdResult]:
    """One result per capacity threshold × target × workload (the others are a fixed run's)."""
    workloads = [e.workload for e in result.endpoints]
    gateways = sorted(
        {s.target for e in result.endpoints for s in e.summaries if s.target != BASELINE}
    )
    out: list[ThresholdResult] = []
    for t in thresholds:
        if t.metric not in CAPACITY_METRICS:
            continue
        targets = [t.gateway] if t.gateway else gateways
        for target in targets:
            for workload in [t.workload] if t.workload else workloads:
                endpoint = result.endpoint(workload)
                summary = endpoint.summary(target) if endpoint is not None else None
                value, bound = _value(summary)
                out.append(CapacityThresholdResult(t, target, workload, value, bound))
    return out


__all__ = ["CapacityThresholdResult", "evaluate_capacity"]
