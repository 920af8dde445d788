"""The step controller: which rate to probe next, and when the search is over.

Like Nighthawk's exponential search (``source/adaptive_load``), it grows the rate until the
objective breaks and then bisects between the last rate that held and the first that broke;
unlike it, it also:

* grows by ``growth²`` while it starts **cold** (no knee of this run to start from: its first
  search of a target), by ``growth`` when it starts next to a rate the run already knows
  (``gatebench.kinds.capacity.Campaign.start``);
* **reads the overload**: a probe that broke the objective while the target completed clearly
  fewer requests than were offered (its achieved rate under ``1 − 2 × precision`` of the
  offered one) measured what the target can carry. The next probe goes just below that
  (``achieved × (1 − precision / 2)``) and, when it holds, the one after just above it
  (``× (1 + precision)``): two probes instead of the bisection's four or five, and the bracket
  is still the plan's precision. A breach with latency alone (the target kept up, slowly)
  says nothing of the kind, and bisection does the work;
* **shrinks** when the very first rate already breaks the objective (divides by the growth
  factor until a rate holds, down to :data:`MIN_RATE`) instead of giving up;
* bisects **geometrically** (the next rate is ``sqrt(low × high)``): rates scale, and the
  precision is relative (``high / low − 1``), so each step halves the bracket's ratio;
* **confirms** the rate found with a longer run. The bisection's last step (a bracket within two
  precision steps, so that either outcome closes it) is run as long as a confirmation: held,
  it is the knee, confirmed, one probe fewer; broken, it is the bracket's top, and the rate
  under it is confirmed (a short last step had held in searches whose confirmation then broke
  at that very rate). A failed confirmation makes that rate the new
  upper end and the next confirmation is one precision step under it, at once (the rate held a
  short probe, so the knee is just under it: a noisy machine's longer run fails where a short
  one passed), two steps after a second failure (a longer run that keeps breaking sees more of
  the machine's stalls than a short probe: the gap is wider), or under what an overloaded
  confirmation served when that is lower (at most :data:`MAX_CONFIRMATIONS` times), instead of
  shrinking or bisecting down and climbing back. Never at a rate in between that held a short
  probe: short probes held where the longer run broke, so they hold too high (in the
  examples' runs here, 19 of 34 first confirmations broke, and a next one at a rate that held
  short broke again);
* starts a **cold** search from the tester's side when that is higher than the plan's
  ``start_rate``: a 16th of the cap (two cold growth steps under it), since the knee is under
  the cap or the tester is the limit (the first search of a run here grew from 100/s through
  400 and 1,600 to 6,400/s before its first breach at 25,600/s);
* never offers a rate the tester cannot (``cap``: the share of the engine's ceiling at which a
  probe is tester-bound, gatebench.kinds.capacity._scoring rule 2): it probes just under it, and
  when that holds the knee is at least it, the tester's limit;
* stops at the plan's ``max_rate`` (the knee is then at least that: a lower bound), and on a
  ``tester-bound`` probe once a rate has held (the knee is at least the last rate that held:
  the tester's limit);
* **goes under the tester** when a probe is ``tester-bound`` before any rate held (the first
  rate was more than the tester could offer: an 8.6 MB upload the engine cannot send at the
  rate its ceiling against a small file suggests): that rate, one precision step lowered,
  becomes the cap and the search shrinks from it as from a breach, then grows back up to the
  cap (held there: "≥ R", the tester's limit; broken below it: the target's knee).

The controller only decides: it never measures, never waits, and knows nothing of engines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from gatebench.core.plan import Capacity
from gatebench.kinds.capacity._metrics import ProbeKind, ProbeRequest
from gatebench.kinds.capacity._scoring import Outcome

MIN_RATE = 1.0
"""The lowest rate the search may offer (req/s); a short probe's lowest is higher
(:meth:`StepController.floor`: 10/s for the default 2-s probe). A target that breaks the
objective even at the lowest rate probed carries less than it: an upper bound, never 0."""
MIN_ARRIVALS = 20
"""A probe's window holds at least this many arrivals: fewer say nothing about a p99 (the
lowest rate is raised for short probes: :meth:`StepController.floor`)."""
MAX_CONFIRMATIONS = 3
MAX_PROBES = 64
"""A safety stop: the search never needs this many (growth from 1/s to 10⁶/s takes 20)."""

SearchStatus = Literal[
    "found", "at-max", "nothing", "tester-bound", "unconfirmed", "budget", "failed"
]
"""How a search ended: ``found`` (the knee, confirmed); ``at-max`` (the plan's max_rate held:
the knee is at least that); ``nothing`` (even the lowest rate probed, :attr:`StepController.floor`,
broke the objective: no knee, the target carries less than that rate, ``high``); ``tester-bound``
(the tester could not offer a rate: the knee is at least the last rate that held, None when
even the lowest rate was more than it could offer);
``unconfirmed`` (confirmations kept failing: the last rate that held, not confirmed, or no knee
when none held below them);
``budget`` (the time budget ran out: no knee); ``failed`` (the target stopped during the
search: no knee, and it is searched no more)."""


@dataclass
class StepController:
    """Exponential growth (or shrinking), geometric bisection to ``precision``, confirmation."""

    settings: Capacity
    start_rate: float | None = None
    """This search's first rate (the repetitions start at different points of the first
    growth step: gatebench.kinds.capacity.start_rate_for); the plan's start_rate when None."""
    cold: bool | None = None
    """Nothing of this run to start from: grow by growth² until the first breach. None: cold
    when no start_rate is given."""
    cap: float | None = None
    """Rates at or above this are tester-bound (rule 2 of the scoring): never offered."""
    phase: Literal["grow", "shrink", "bisect", "confirm", "done"] = "grow"
    low: float | None = None
    """The highest rate that held (carried within the objective)."""
    high: float | None = None
    """The lowest rate that broke the objective."""
    rate: float = 0.0
    status: SearchStatus | None = None
    held: list[float] = field(default_factory=list)
    confirmations: int = 0
    probes: int = 0
    note: str = ""
    hint: float | None = None
    """What an overloaded probe carried (its achieved rate), not yet used."""
    hinted: bool = False
    """The rate proposed was read from an overload (:attr:`hint`)."""
    closing: bool = False
    """The rate proposed is the bisection's last step, run as long as a confirmation."""
    unoffered: str = ""
    """Why a probe before any rate held was tester-bound (the cap was lowered under it)."""

    def __post_init__(self) -> None:
        first = self.start_rate if self.start_rate is not None else self.settings.start_rate
        if self.cold is None:
            self.cold = self.start_rate is None
        if self.cold and self.cap is not None:
            first = max(first, self.cap / self.growth**2)
        self.rate = min(max(first, self.floor), self.top)

    @property
    def top(self) -> float:
        """The highest rate the search may offer: the plan's max_rate, or just under the
        tester's cap."""
        if self.cap is None or self.cap > self.settings.max_rate:
            return self.settings.max_rate
        return math.floor(self.cap * 1000.0 - 1.0) / 1000.0

    @property
    def growth(self) -> float:
        """The factor between growth probes: squared while cold."""
        g = self.settings.growth
        return g * g if self.cold else g

    @property
    def floor(self) -> float:
        """The lowest rate offered: :data:`MIN_RATE`, or :data:`MIN_ARRIVALS` per probe window."""
        return max(MIN_RATE, MIN_ARRIVALS / self.settings.probe)

    @property
    def done(self) -> bool:
        return self.phase == "done"

    def next_probe(self) -> ProbeRequest | None:
        """The next probe to run, or None once the search is over."""
        if self.phase == "done":
            return None
        s = self.settings
        if self.probes >= MAX_PROBES:
            self._finish("unconfirmed", f"stopped after {MAX_PROBES} probes")
            return None
        kind: ProbeKind = self.phase
        duration = s.confirm if self.phase == "confirm" else s.probe
        return ProbeRequest(round(self.rate, 3), kind, s.warmup, duration)

    def update(self, outcome: Outcome, why: str = "", *, achieved: float | None = None) -> None:
        """The outcome of the probe :meth:`next_probe` proposed; ``achieved``: the rate the
        target completed in it (read from an overload)."""
        if self.phase == "done":
            raise ValueError("the search is over")
        self.probes += 1
        s = self.settings
        rate = self.rate = round(self.rate, 3)  # the rate offered (next_probe's)
        step_up, self.hinted = self.hinted, False
        if outcome == "tester-bound":
            self._tester_could_not_offer(rate, why)
            return
        held = outcome == "within"
        if held:
            self.held.append(rate)
        elif achieved is not None and achieved < rate * (1.0 - 2.0 * s.precision):
            self.hint = achieved
        if self.phase == "confirm":
            if held:
                self.low = rate
                self._finish("found")
                return
            if self.closing:  # the bisection's last step broke: confirm the rate under it
                self.closing = False
                self.high = rate
                self._bisect_or_confirm()
                return
            self.confirmations += 1
            self.high = rate
            below = [r for r in self.held if r < rate]
            # a rate that held a short probe but not the confirmation: it did not hold
            self.held = below
            self.low = max(below) if below else None
            if self.confirmations >= MAX_CONFIRMATIONS:
                self._finish(
                    "unconfirmed",
                    f"{MAX_CONFIRMATIONS} confirmations failed"
                    + ("" if self.low is not None else f", the last at {rate:,.0f}/s"),
                )
                return
            # one precision step under it, then two: a longer run keeps breaking where short
            # probes held, so the gap is wider than one step; under what an overloaded
            # confirmation served, when that is lower
            under = rate / (1.0 + s.precision) ** (2 ** (self.confirmations - 1))
            hint, self.hint = self.hint, None
            if hint is not None:
                under = min(under, hint * (1.0 - s.precision / 2.0))
            # it held a short probe: the knee is just under it, not half as high, nor halfway
            # down to a rate that held far below; nor at a rate between that held a short
            # probe (short probes held where this longer run broke: they hold too high)
            self.rate = max(under, self.floor)
            return
        if self.phase == "grow":
            if held:
                self.low = rate
                if rate >= self.top:
                    if self.top < s.max_rate:
                        self._finish(
                            "tester-bound",
                            f"{rate:,.0f}/s held, just under "
                            + (
                                self.unoffered
                                or "the share of the engine's ceiling at which the tester is "
                                "the limit"
                            ),
                        )
                    else:
                        self._finish("at-max", f"max_rate {s.max_rate:g}/s held")
                    return
                self.rate = min(rate * self.growth, self.top)
                return
            self.high = rate
            self._below(rate)
            return
        if self.phase == "shrink":
            if held:
                self.low = rate
                if self.high is None:  # shrunk under the tester, not a breach: grow back
                    self.phase = "grow"
                    self.rate = min(rate * s.growth, self.top)
                    return
                self._bisect_or_confirm(step_up)
            else:
                self.high = rate
                self._shrink_from(rate)
            return
        # bisect
        if held:
            self.low = rate
        else:
            self.high = rate
        self._bisect_or_confirm(step_up and held)

    def _tester_could_not_offer(self, rate: float, why: str) -> None:
        """A tester-bound probe at ``rate``: the end, with the last rate that held as a lower
        bound; before any held, the cap goes one precision step under ``rate`` and the search
        shrinks from it (down to the floor, where it ends without a knee)."""
        if self.low is not None or self.phase == "confirm" or rate <= self.floor:
            self._finish("tester-bound", why)
            return
        self.cap = rate / (1.0 + self.settings.precision)
        self.unoffered = f"{rate:,.0f}/s, which the tester could not offer ({why})"
        self.hint = None
        self.phase = "shrink"
        self.rate = max(min(rate / self.settings.growth, self.top), self.floor)

    def _from_hint(self, low: float, high: float) -> float | None:
        """The rate just below what an overloaded probe carried, when it lies inside the
        bracket (low, high) and is worth a probe; the hint is used once."""
        hint, self.hint = self.hint, None
        if hint is None:
            return None
        rate = hint * (1.0 - self.settings.precision / 2.0)
        if low * (1.0 + self.settings.precision) < rate < high:
            return rate
        return None

    def _below(self, rate: float) -> None:
        """After ``rate`` did not hold: shrink from it while no rate has held, else bisect
        between the highest that held and it (or confirm)."""
        if self.low is None:
            self._shrink_from(rate)
        else:
            self._bisect_or_confirm()

    def _shrink_from(self, rate: float) -> None:
        if rate <= self.floor:
            self._finish(
                "nothing", f"the objective broke even at {self.floor:g}/s, the lowest rate probed"
            )
            return
        self.phase = "shrink"
        hinted = self._from_hint(self.floor / (1.0 + self.settings.precision), rate)
        if hinted is not None:
            self.rate, self.hinted = max(hinted, self.floor), True
            return
        self.rate = max(rate / self.settings.growth, self.floor)

    def _bisect_or_confirm(self, step_up: bool = False) -> None:
        """The next rate between low and high: the confirmation once they are within the
        precision; just above low after a hinted rate held; the overload's hint; else the
        geometric middle."""
        assert self.low is not None and self.high is not None
        p = self.settings.precision
        if self.high / self.low - 1.0 <= p + 1e-9:
            if self.settings.confirm > 0:
                self.phase = "confirm"
                self.rate = self.low
            else:
                self._finish("found")
            return
        self.phase = "bisect"
        if step_up and self.low * (1.0 + p) < self.high:
            self.hint = None
            self.rate = self.low * (1.0 + p)
            return
        hinted = self._from_hint(self.low, self.high)
        if hinted is not None:
            self.rate, self.hinted = hinted, True
            return
        if self.settings.confirm > 0 and self.high / self.low <= (1.0 + p) ** 2 + 1e-9:
            # the last step of the bisection: either outcome closes the bracket, so it is run
            # as long as a confirmation (held: the knee, confirmed; broken: the bracket's top)
            self.phase, self.closing = "confirm", True
        self.rate = math.sqrt(self.low * self.high)

    def _finish(self, status: SearchStatus, note: str = "") -> None:
        self.phase = "done"
        self.status = status
        self.note = note

    def target_failed(self, why: str) -> None:
        """The target stopped answering (a gateway that died): the search ends without a knee."""
        self._finish("failed", why)

    def out_of_time(self) -> None:
        """The time budget cannot fit the next probe: the search ends without a knee."""
        self._finish("budget", "the time budget ran out before the search ended")

    @property
    def knee(self) -> float | None:
        """The rate the search found: the highest that held (a lower bound for ``at-max`` and
        ``tester-bound``); None for ``nothing`` (the target carries less than :attr:`high`, the
        lowest rate probed: an upper bound, not a knee of 0), ``budget`` and ``failed``, and
        while searching."""
        if self.status in (None, "budget", "nothing", "failed"):
            return None
        return self.low


__all__ = [
    "MAX_CONFIRMATIONS",
    "MAX_PROBES",
    "MIN_ARRIVALS",
    "MIN_RATE",
    "SearchStatus",
    "StepController",
]
