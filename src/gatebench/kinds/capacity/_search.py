"""The loop that connects the parts, and nothing more: the step controller proposes a probe,
the probe runs (a callable the caller gives: a real engine, or a simulated target in tests),
the metrics plugin's output is scored, the controller is told the outcome.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gatebench.core.plan import Capacity
from gatebench.core.records import fields
from gatebench.kinds.capacity._controller import MIN_RATE, SearchStatus, StepController
from gatebench.kinds.capacity._metrics import ProbeMetrics, ProbeRequest
from gatebench.kinds.capacity._scoring import TesterLimits, Verdict, score_probe

GOLDEN = (5**0.5 - 1) / 2
"""Where repetition k starts inside the first growth step: frac(k × 0.618…), evenly spread."""


def start_rate_for(settings: Capacity, repetition: int, previous: Sequence[float] = ()) -> float:
    """The first rate of a repetition's search.

    The first search of a target starts at the plan's ``start_rate``; a later one half the
    median knee the earlier ones found (``previous``), so it brackets the knee with two probes
    instead of growing from the start again. Either is multiplied by growth^f, f spread evenly
    over [0, 1) by the repetition (f = 0 for the first): searches that start at the same rate
    probe the same grid and find the same knee every time, hiding the search's own resolution
    from the interval; staggered starts show it."""
    found = [k for k in previous if k > 0]
    base = statistics.median(found) / settings.growth if found else settings.start_rate
    f = ((repetition - 1) * GOLDEN) % 1.0
    return float(min(max(base * settings.growth**f, MIN_RATE), settings.max_rate))


@dataclass(frozen=True)
class ProbeOutcome:
    request: ProbeRequest
    metrics: ProbeMetrics
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.request.rate,
            "kind": self.request.kind,
            "warmup_s": self.request.warmup_s,
            "duration_s": self.request.duration_s,
            "outcome": self.verdict.outcome,
            "reasons": list(self.verdict.reasons),
            "metrics": self.metrics.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbeOutcome:
        return cls(
            ProbeRequest(
                float(data["rate"]),
                data["kind"],
                float(data["warmup_s"]),
                float(data["duration_s"]),
            ),
            ProbeMetrics.from_dict(data["metrics"]),
            Verdict(data["outcome"], tuple(data.get("reasons", ()))),
        )


@dataclass(frozen=True)
class SearchResult:
    """One search of one target on one endpoint."""

    status: SearchStatus
    knee: float | None
    """The highest rate carried within the objective (a lower bound when :attr:`bounded`)."""
    high: float | None
    """The lowest rate that broke it (None when none did)."""
    probes: tuple[ProbeOutcome, ...]
    note: str = ""
    seconds: float = 0.0

    @property
    def bounded(self) -> bool:
        """The knee is only a lower bound: the plan's max_rate held, or the tester ran out."""
        return self.status in ("at-max", "tester-bound")

    @property
    def below(self) -> float | None:
        """For a search that broke the objective even at the lowest rate it probed
        (``nothing``): that rate; the target carries less (an upper bound, never a knee)."""
        if self.status != "nothing":
            return None
        return self.high if self.high is not None else 0.0

    @property
    def complete(self) -> bool:
        """A knee to put in the interval (``budget`` and a tester-bound search without a rate
        that held have none)."""
        return self.knee is not None and self.status != "budget"

    @property
    def confirmation(self) -> ProbeOutcome | None:
        """The confirmation run at the knee, when it held."""
        for p in reversed(self.probes):
            if p.request.kind == "confirm" and p.verdict.outcome == "within":
                return p
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields(self, "status knee high note"),
            "seconds": round(self.seconds, 3),
            "probes": [p.to_dict() for p in self.probes],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SearchResult:
        return cls(
            status=data["status"],
            knee=None if data.get("knee") is None else float(data["knee"]),
            high=None if data.get("high") is None else float(data["high"]),
            probes=tuple(ProbeOutcome.from_dict(p) for p in data.get("probes", ())),
            note=str(data.get("note", "")),
            seconds=float(data.get("seconds", 0.0)),
        )


Probe = Callable[[ProbeRequest], ProbeMetrics]


class TargetDown(Exception):
    """Raised by a probe function when its target stopped (a gateway that died): the search
    ends ``failed`` and the campaign searches that target no more."""


CEILING_PRECISION = 0.10


def ceiling_settings(settings: Capacity) -> Capacity:
    """The search for the engine's own ceiling on this machine (against the ceiling server,
    ``gatebench.local.ceiling``: nginx with a small static file, the fastest target there is): the
    workload's objective and rates, a coarser precision and no confirmation: one search, run
    with ``search(..., ceiling=True)`` (the tester failing is what it looks for)."""
    return replace(
        settings,
        precision=max(settings.precision, CEILING_PRECISION),
        confirm=0.0,
        repetitions=1,
    )


def ceiling_of(result: SearchResult) -> float | None:
    """The rate the engine demonstrated against the ceiling server: the highest that held,
    whether the search found a knee there or the engine ran out first (tester-bound); None
    when the plan's max_rate held (the engine's ceiling is above what the plan offers) or no
    rate held."""
    if result.status in ("found", "unconfirmed", "tester-bound") and result.knee:
        return result.knee
    return None


STALL_SHARE = 0.4
"""A probe tester-bound at under this share of the engine's ceiling here, the engine not busy,
is run once more: the engine demonstrated more than twice the rate against the ceiling server,
so its lateness there was a stall (the machine's, another process's), not its limit (a run
here: the auction's read tester-bound at 193/s, lag p99 51 ms, with a ceiling of 23,475/s,
ended its search at 97/s)."""


def _probe(
    request: ProbeRequest, probe: Probe, settings: Capacity, limits: TesterLimits
) -> ProbeOutcome:
    metrics = probe(request)
    return ProbeOutcome(request, metrics, score_probe(metrics, settings.objective, limits))


def _stalled(probed: ProbeOutcome, limits: TesterLimits) -> bool:
    """A tester-bound probe far under the engine's ceiling (:data:`STALL_SHARE`) while the
    engine was not busy: an engine that used its cores there (the auction's 8.6 MB uploads) is
    at its limit, whatever its ceiling against a small file says."""
    return (
        probed.verdict.outcome == "tester-bound"
        and limits.ceiling is not None
        and probed.request.rate < STALL_SHARE * limits.ceiling
        and probed.metrics.engine_cpu_pct < limits.engine_cpu_pct
    )


def search(
    settings: Capacity,
    probe: Probe,
    *,
    limits: TesterLimits | None = None,
    start_rate: float | None = None,
    cold: bool | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_probe: Callable[[ProbeOutcome], None] | None = None,
    ceiling: bool = False,
) -> SearchResult:
    """Search one target's knee. ``cold``: nothing of the run to start from (the controller
    grows faster; default: when no ``start_rate`` is given). ``deadline`` (on ``clock``): a
    probe that would end after it is not started, and the search ends with status ``budget``.
    ``ceiling``: the search for the engine's own ceiling, where a tester-bound probe is a rate
    the tester could not offer, to bisect below like a breach, not the end of the search."""
    limits = limits or TesterLimits()
    cap = limits.ceiling_share * limits.ceiling if limits.ceiling else None
    controller = StepController(settings, start_rate, cold=cold, cap=cap)
    outcomes: list[ProbeOutcome] = []
    started = clock()
    while (request := controller.next_probe()) is not None:
        if deadline is not None and clock() + request.seconds > deadline:
            controller.out_of_time()
            break
        try:
            probed = _probe(request, probe, settings, limits)
            outcomes.append(probed)
            fits = deadline is None or clock() + request.seconds <= deadline
            if not ceiling and fits and _stalled(probed, limits):  # once more, the same probe
                if on_probe is not None:
                    on_probe(probed)
                probed = _probe(request, probe, settings, limits)
                outcomes.append(probed)
        except TargetDown as exc:
            controller.target_failed(str(exc))
            break
        outcome = probed.verdict.outcome
        if ceiling and outcome == "tester-bound":
            outcome = "breached"
        controller.update(
            outcome,
            "; ".join(probed.verdict.reasons),
            achieved=probed.metrics.served_rate or probed.metrics.achieved_rate,
        )
        if on_probe is not None:
            on_probe(probed)
    assert controller.status is not None
    return SearchResult(
        status=controller.status,
        knee=controller.knee,
        high=controller.high,
        probes=tuple(outcomes),
        note=controller.note,
        seconds=clock() - started,
    )


__all__ = [
    "CEILING_PRECISION",
    "GOLDEN",
    "STALL_SHARE",
    "Probe",
    "ProbeOutcome",
    "SearchResult",
    "TargetDown",
    "ceiling_of",
    "ceiling_settings",
    "search",
    "start_rate_for",
]
