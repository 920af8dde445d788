"""A capacity run's result: what is stored with the run and what every report renders.

Built once from the campaign (:func:`capacity_result`), it holds per endpoint each target's
knee with its interval, every pair's comparison, the verdict in words and why the searches
stopped; the latency-against-offered-rate curves (every probe: its rate, p50, p99, errors and
outcome, the knee marked by the summaries); and the price of a million requests at the knee when
the gateway's machine type and its price are known. It is small: a probe is a handful of numbers
(the full probe metrics stay in the run folder's ``capacity-searches.jsonl``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gatebench.core.model import BASELINE, ResultStore
from gatebench.core.plan import Capacity
from gatebench.core.records import fields
from gatebench.kinds.capacity._campaign import Campaign
from gatebench.kinds.capacity._summary import Comparison, KneeSummary, compare, verdict

FORMAT = "gatebench-capacity/1"


@dataclass(frozen=True)
class CurvePoint:
    """One probe on a latency-against-offered-rate curve."""

    target: str
    workload: str
    repetition: int
    rate: float
    kind: str
    outcome: str
    p50: float
    p99: float
    error_pct: float
    achieved_rate: float
    lag_p99_ms: float
    reasons: str = ""
    """The scoring function's reasons (``p99 73.0 ms > 50 ms; noisy: ...``)."""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CurvePoint:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class EndpointResult:
    """One endpoint (workload): every target's knee, the comparisons, the verdict."""

    workload: str
    objective: str
    """The objective in words: ``p99 ≤ 50 ms, errors ≤ 0.1 %``."""
    summaries: tuple[KneeSummary, ...]
    comparisons: tuple[Comparison, ...]
    verdict: str
    stop: str
    """Why this endpoint's searches stopped."""
    prices: Mapping[str, float] = field(default_factory=dict)
    """Target → USD per million requests at the knee (gateways only; cloud path; at most
    that for a lower bound: ``gatebench.kinds.capacity.price_text``)."""

    def summary(self, target: str) -> KneeSummary | None:
        return next((s for s in self.summaries if s.target == target), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "objective": self.objective,
            "summaries": [s.to_dict() for s in self.summaries],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "verdict": self.verdict,
            "stop": self.stop,
            "prices": dict(self.prices),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EndpointResult:
        return cls(
            workload=str(data["workload"]),
            objective=str(data["objective"]),
            summaries=tuple(KneeSummary.from_dict(s) for s in data.get("summaries", ())),
            comparisons=tuple(Comparison.from_dict(c) for c in data.get("comparisons", ())),
            verdict=str(data.get("verdict", "")),
            stop=str(data.get("stop", "")),
            prices={str(k): float(v) for k, v in (data.get("prices") or {}).items()},
        )


@dataclass(frozen=True)
class CapacityResult:
    endpoints: tuple[EndpointResult, ...]
    curves: tuple[CurvePoint, ...]
    stop: str
    """Why the run stopped: every pair decided, every repetition run, or the budget spent."""
    repetitions: int
    """Rounds that ran."""
    orders: tuple[tuple[int, tuple[str, ...]], ...] = ()
    """(repetition, targets in the order they ran)."""
    machine: str | None = None
    """The gateway's machine type the prices are for (cloud path)."""
    hourly_usd: float | None = None
    ceiling: float | None = None
    """The engine's ceiling (req/s) the tester-bound rule used, when measured."""
    precision: float | None = None
    """The search's precision (``high / low − 1`` of its last bracket: how close under the
    knee a search lands), the coarsest of the endpoints'; None when not recorded. One figure
    for the run: the cloud store counts every field (gatebench.cloud._capacity)."""
    failed: Mapping[str, str] = field(default_factory=dict)
    """Targets that stopped during the run (a gateway that died) → when and why, in words
    (``stopped during repetition 2 (nginx exited with code -9 during the run)``)."""

    def endpoint(self, workload: str) -> EndpointResult | None:
        return next((e for e in self.endpoints if e.workload == workload), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "endpoints": [e.to_dict() for e in self.endpoints],
            "curves": [c.to_dict() for c in self.curves],
            "stop": self.stop,
            "repetitions": self.repetitions,
            "orders": [[rep, list(order)] for rep, order in self.orders],
            **fields(self, "machine hourly_usd ceiling precision"),
            **({"failed": dict(self.failed)} if self.failed else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CapacityResult:
        return cls(
            endpoints=tuple(EndpointResult.from_dict(e) for e in data.get("endpoints", ())),
            curves=tuple(CurvePoint.from_dict(c) for c in data.get("curves", ())),
            stop=str(data.get("stop", "")),
            repetitions=int(data.get("repetitions", 0)),
            orders=tuple((int(r), tuple(str(t) for t in o)) for r, o in data.get("orders", ())),
            machine=data.get("machine"),
            hourly_usd=None if data.get("hourly_usd") is None else float(data["hourly_usd"]),
            ceiling=None if data.get("ceiling") is None else float(data["ceiling"]),
            precision=None if data.get("precision") is None else float(data["precision"]),
            failed={str(k): str(v) for k, v in (data.get("failed") or {}).items()},
        )


def capacity_status(result: CapacityResult | None, target_errors: bool) -> str:
    """A capacity run's last status from its result: ``partial`` when there is none, a target
    failed or has no knee on some endpoint, or the searches stopped on the budget; ``done``
    otherwise."""
    if result is None:
        return "partial"
    missing = any(not s.knees and not s.below for e in result.endpoints for s in e.summaries)
    budget = "budget" in result.stop
    return "partial" if target_errors or missing or budget else "done"


RESULT_KIND, RESULT_KEY = "capacity", "result"
"""Where a capacity run's result is stored: ``ResultStore.put_result(run_id, RESULT_KIND,
RESULT_KEY, CapacityResult.to_dict())``, as every kind stores its results."""


def stored_capacity(store: ResultStore, run_id: str) -> dict[str, Any] | None:
    """The stored result of capacity run ``run_id`` (``CapacityResult.to_dict``), None while
    it has none (still searching, or stopped before its result)."""
    return store.results(run_id, RESULT_KIND).get(RESULT_KEY)


def capacity_result(
    campaign: Campaign,
    *,
    machine: str | None = None,
    hourly_usd: float | None = None,
    ceiling: float | None = None,
) -> CapacityResult:
    """The result of a finished (or stopped) campaign: every target on every endpoint, those
    the campaign never reached (the budget ran out first) as not searched, and those that
    stopped during the run (a gateway that died) marked so on every endpoint."""
    stopped = _stopped(campaign)
    endpoints = []
    for workload, settings in campaign.settings.items():
        searched = {s.target: s for s in campaign.summaries(workload)}
        summaries = []
        for target in campaign.targets:
            s = searched.get(target) or KneeSummary(target, workload, ())
            if target in stopped:
                s = replace(s, stopped=stopped[target][1], stopped_at=stopped[target][0])
            summaries.append(s)
        endpoints.append(_endpoint(workload, settings, summaries, campaign, hourly_usd))
    curves = []
    for (target, workload), results in sorted(campaign.results.items()):
        for repetition, result in enumerate(results, start=1):
            for p in result.probes:
                m = p.metrics
                curves.append(
                    CurvePoint(
                        target=target,
                        workload=workload,
                        repetition=repetition,
                        rate=p.request.rate,
                        kind=p.request.kind,
                        outcome=p.verdict.outcome,
                        p50=round(m.latency["p50"], 3),
                        p99=round(m.latency["p99"], 3),
                        error_pct=round(m.error_pct, 4),
                        achieved_rate=round(m.achieved_rate, 3),
                        lag_p99_ms=round(m.lag_p99_ms, 3),
                        reasons="; ".join(p.verdict.reasons),
                    )
                )
    return CapacityResult(
        endpoints=tuple(endpoints),
        curves=tuple(curves),
        stop=campaign.stop or "",
        repetitions=campaign.rounds,
        orders=tuple(campaign.orders),
        machine=machine,
        hourly_usd=hourly_usd,
        ceiling=ceiling,
        precision=max((s.precision for s in campaign.settings.values()), default=None),
        failed={
            t: f"stopped during repetition {rep}" + (f" ({why})" if why else "")
            for t, (rep, why) in stopped.items()
        },
    )


def _stopped(campaign: Campaign) -> dict[str, tuple[int | None, str]]:
    """Target → (the repetition during which it stopped, why) for every target the campaign
    searched no more because it stopped (``Campaign.failed``)."""
    out: dict[str, tuple[int | None, str]] = {}
    for target, why in campaign.failed.items():
        when = next(
            (
                i
                for (t, _), results in campaign.results.items()
                if t == target
                for i, r in enumerate(results, start=1)
                if r.status == "failed"
            ),
            None,
        )
        out[target] = (when, why)
    return out


def _endpoint(
    workload: str,
    settings: Capacity,
    summaries: Sequence[KneeSummary],
    campaign: Campaign,
    hourly_usd: float | None,
) -> EndpointResult:
    comparisons = tuple(compare(a, b) for i, a in enumerate(summaries) for b in summaries[i + 1 :])
    prices = {}
    for s in summaries:
        if s.target == BASELINE:
            continue
        price = s.price_per_million(hourly_usd)
        if price is not None:
            prices[s.target] = price
    return EndpointResult(
        workload=workload,
        objective=settings.objective.label(),
        summaries=tuple(summaries),
        comparisons=comparisons,
        verdict=verdict(workload, summaries, settings.objective),
        stop=campaign.done.get(workload, campaign.stop or ""),
        prices=prices,
    )


__all__ = [
    "FORMAT",
    "RESULT_KEY",
    "RESULT_KIND",
    "CapacityResult",
    "CurvePoint",
    "EndpointResult",
    "capacity_result",
    "capacity_status",
    "stored_capacity",
]
