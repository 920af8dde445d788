"""Repetitions: which searches run next, in which order, and when to stop.

Each repetition is a round: the targets in a freshly shuffled order (seeded), and for each
target every endpoint still undecided, one search each, starting next to the knees the run
already found: its own earlier repetitions', else the other targets' on the endpoint, else its
own on the other endpoints (:meth:`Campaign.start`). After each round an endpoint is done
when it has had its own ``repetitions``, or — after at least :data:`MIN_REPETITIONS_TO_STOP`
rounds — when every pair of targets on it is ordered (``gatebench.kinds.capacity._summary``). The
whole campaign stops when every endpoint is done, or when a search ran out of the time budget;
:attr:`Campaign.stop` says which, in words.

Pure: the caller runs the searches and reports them with :meth:`Campaign.record`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gatebench.core.plan import Capacity
from gatebench.core.records import fields
from gatebench.core.units import format_duration
from gatebench.kinds.capacity._document import settings_dict, settings_from_dict
from gatebench.kinds.capacity._metrics import ProbeMetrics, ProbeRequest
from gatebench.kinds.capacity._scoring import TesterLimits
from gatebench.kinds.capacity._search import Probe, SearchResult, search, start_rate_for
from gatebench.kinds.capacity._summary import KneeSummary, all_decided, summarize, undecided_pairs

MIN_REPETITIONS_TO_STOP = 3
"""Early stopping needs this many rounds: with two, Student's t (12.7) makes only a wide gap
decided, and one lucky pair of rounds should not end a campaign."""


@dataclass(frozen=True)
class SearchKey:
    repetition: int
    target: str
    workload: str


@dataclass
class Campaign:
    targets: tuple[str, ...]
    settings: Mapping[str, Capacity]
    """Each searched workload's settings (workloads with ``capacity: false`` are absent)."""
    seed: int
    budget_s: float
    results: dict[tuple[str, str], list[SearchResult]] = field(default_factory=dict)
    rounds: int = 0
    done: dict[str, str] = field(default_factory=dict)
    """Workloads that need no more searches, and why."""
    stop: str | None = None
    orders: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Targets that stopped during a search (searched no more), and why."""
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def next_round(self) -> list[SearchKey]:
        """The searches of the next repetition, in order; [] once the campaign is over."""
        if self.stop is not None:
            return []
        open_workloads = [w for w in self.settings if w not in self.done]
        if not open_workloads:
            self._finish()
            return []
        self.rounds += 1
        order = list(self.targets)
        self._rng.shuffle(order)
        order = [t for t in order if t not in self.failed]
        self.orders.append((self.rounds, tuple(order)))
        return [SearchKey(self.rounds, t, w) for t in order for w in open_workloads]

    def start(self, key: SearchKey) -> tuple[float, bool]:
        """Where this search starts, and whether it starts cold (nothing of the run to start
        from: the controller then grows faster). Next to what the run already knows
        (``start_rate_for``), the first of these that has a knee found:

        1. the earlier repetitions of the same target on the same endpoint;
        2. the other targets on the same endpoint (the baseline's knee, or a gateway's);
        3. the same target on the other endpoints.

        A knee the search confirmed counts first; one whose confirmations kept failing
        (``unconfirmed``: the last rate that held, often far under the knee on a noisy
        machine) only when none was confirmed. Else the plan's start rate, cold. A start from
        the other endpoints (3.) is cold too: their cost may differ by orders of magnitude (the
        auction's 8.6 MB upload carried 23/s, its read 7,201/s: growing by 2 from 11/s took 18
        probes)."""
        settings = self.settings[key.workload]
        for confirmed in (True, False):
            for knees, cold in (
                (self._knees(lambda t, w: t == key.target and w == key.workload, confirmed), False),
                (self._knees(lambda t, w: t != key.target and w == key.workload, confirmed), False),
                (self._knees(lambda t, w: t == key.target and w != key.workload, confirmed), True),
            ):
                if knees:
                    return start_rate_for(settings, key.repetition, knees), cold
        return start_rate_for(settings, key.repetition), True

    def start_rate(self, key: SearchKey) -> float:
        """The first rate of :meth:`start`."""
        return self.start(key)[0]

    def _knees(self, which: Callable[[str, str], bool], confirmed: bool) -> list[float]:
        return [
            r.knee
            for (target, workload), results in self.results.items()
            if which(target, workload)
            for r in results
            if r.complete and not r.bounded and r.knee is not None and r.knee > 0
            if r.status == "found" or not confirmed
        ]

    def record(self, key: SearchKey, result: SearchResult) -> None:
        self.results.setdefault((key.target, key.workload), []).append(result)
        if result.status == "failed":
            self.failed[key.target] = result.note
        if result.status == "budget" and self.stop is None:
            self.stop = (
                f"the time budget ({format_duration(self.budget_s)}) ran out during repetition "
                f"{key.repetition}; that repetition's unfinished searches are left out"
            )

    def end_round(self) -> None:
        """Call after every search of a round: decides which endpoints are done."""
        for workload, settings in self.settings.items():
            if workload in self.done:
                continue
            summaries = [s for s in self.summaries(workload) if s.target not in self.failed]
            if self.rounds >= settings.repetitions:
                n = settings.repetitions
                self.done[workload] = (
                    "the one repetition ran" if n == 1 else f"all {n} repetitions ran"
                )
                if len(summaries) > 1 and not all_decided(summaries):
                    pairs = ", ".join(f"{a}–{b}" for a, b in undecided_pairs(summaries))
                    self.done[workload] += f"; undecided: {pairs}"
            elif self.rounds >= MIN_REPETITIONS_TO_STOP and (
                len(summaries) > 1 and all_decided(summaries)
            ):
                self.done[workload] = (
                    f"every pair's order was decided after {self.rounds} repetitions"
                )
        if all(w in self.done for w in self.settings):
            self._finish()

    def _finish(self) -> None:
        if self.stop is not None:
            return
        reasons = sorted(set(self.done.values()))
        self.stop = (
            reasons[0]
            if len(reasons) == 1
            else "; ".join(f"{w}: {why}" for w, why in self.done.items())
        )

    def to_dict(self) -> dict[str, Any]:
        """The campaign as JSON: settings, every search in order, the orders and why it
        stopped (the cloud path's tester writes it; the score step reads it back)."""
        return {
            "targets": list(self.targets),
            "settings": {w: settings_dict(s) for w, s in self.settings.items()},
            **fields(self, "seed budget_s rounds"),
            "orders": [[rep, list(order)] for rep, order in self.orders],
            "done": dict(self.done),
            "failed": dict(self.failed),
            "stop": self.stop,
            "results": [
                {"target": t, "workload": w, "searches": [r.to_dict() for r in results]}
                for (t, w), results in sorted(self.results.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Campaign:
        campaign = cls(
            tuple(str(t) for t in data["targets"]),
            {str(w): settings_from_dict(s) for w, s in data["settings"].items()},
            int(data["seed"]),
            float(data["budget_s"]),
        )
        campaign.rounds = int(data.get("rounds", 0))
        campaign.orders = [(int(r), tuple(str(t) for t in o)) for r, o in data.get("orders", ())]
        campaign.done = {str(k): str(v) for k, v in (data.get("done") or {}).items()}
        campaign.failed = {str(k): str(v) for k, v in (data.get("failed") or {}).items()}
        campaign.stop = data.get("stop")
        for entry in data.get("results", ()):
            key = (str(entry["target"]), str(entry["workload"]))
            campaign.results[key] = [SearchResult.from_dict(r) for r in entry["searches"]]
        return campaign

    def summaries(self, workload: str) -> list[KneeSummary]:
        return [
            summarize(t, workload, self.results.get((t, workload), []))
            for t in self.targets
            if (t, workload) in self.results
        ]

    def all_summaries(self) -> dict[str, list[KneeSummary]]:
        return {w: self.summaries(w) for w in self.settings}


def drive(
    campaign: Campaign,
    probe_for: Callable[[SearchKey], Probe],
    *,
    limits_for: Callable[[SearchKey], TesterLimits] = lambda key: TesterLimits(),
    clock: Callable[[], float] = time.monotonic,
    on_result: Callable[[SearchKey, SearchResult], None] | None = None,
    first_warmup: Mapping[str, float] | None = None,
    started: float | None = None,
) -> Campaign:
    """Run the campaign to its end: every round's searches in order, each with the probe
    function ``probe_for`` gives for its target and endpoint, within the campaign's budget
    (counted on ``clock`` from ``started``, default now: the stages pass the time before the
    engine's ceiling search, which the budget covers too). ``first_warmup``: target → the
    warm-up its first probe needs at least (a JIT gateway's, ``Renderer.jit_warmup_s``: it
    has not served before)."""
    deadline = (clock() if started is None else started) + campaign.budget_s
    jit_cold = dict(first_warmup or {})
    while keys := campaign.next_round():
        for key in keys:
            if campaign.stop is not None:
                break
            start, cold = campaign.start(key)
            result = search(
                campaign.settings[key.workload],
                _warming(probe_for(key), jit_cold, key.target),
                limits=limits_for(key),
                start_rate=start,
                cold=cold,
                deadline=deadline,
                clock=clock,
            )
            campaign.record(key, result)
            if on_result is not None:
                on_result(key, result)
        campaign.end_round()
    return campaign


def _warming(probe: Probe, cold: dict[str, float], target: str) -> Probe:
    """``probe``, whose first call for a still-cold ``target`` warms up at least as long as
    ``cold`` says (then the target is warm)."""

    def run(request: ProbeRequest) -> ProbeMetrics:
        need = cold.pop(target, 0.0)
        if need > request.warmup_s:
            request = replace(request, warmup_s=need)
        return probe(request)

    return run


def campaign_for(targets: Sequence[str], settings: Mapping[str, Capacity], seed: int) -> Campaign:
    """A campaign over ``targets`` for the searched workloads; its budget is the first
    workload's (the plan-level one: a workload cannot give its own)."""
    budget = next(iter(settings.values())).budget if settings else 0.0
    return Campaign(tuple(targets), dict(settings), seed, budget)


__all__ = ["MIN_REPETITIONS_TO_STOP", "Campaign", "SearchKey", "campaign_for", "drive"]
