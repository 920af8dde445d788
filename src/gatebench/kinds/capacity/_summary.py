"""From the searches to what a reader takes away: each target's knee on each endpoint with its
95 % confidence interval, which of two targets carries more (and by how much, with an
interval), a verdict in words, and the price of a million requests at the objective.

* **The knee's interval**: the mean of the repetitions' knees, Student's t over them
  (``gatebench.core.confidence``). Each repetition starts its search at a different point of the
  first growth step (``start_rate_for``), so the interval includes the search's own resolution.
* **Lower bounds**: a search that ended ``at-max`` or ``tester-bound`` found only "at least
  R". A target whose searches were bounded in at least half of its repetitions (the rule
  ``gatebench.core.trust`` applies to tester-bound cells) is reported as ``≥ R``, with no interval;
  R is the smallest of its knees, the bounds and the knees found alike (a repetition that found
  a knee below another's bound says the target does not always carry that bound).
* **Noisy**: a target whose repetitions disagree — a rate held in one repetition at least
  :data:`NOISY_SPREAD` times a rate that failed in another (broke the objective, or the tester
  could not offer it) — is reported with both figures and neither as its knee: no interval, no
  bound, never ordered against another target. A shared machine did that, not the target
  (docs/capacity.md, "Honest labels").
* **Upper bounds**: a search that broke the objective even at the lowest rate it probed
  (``nothing``) found only "less than R", R that rate (20 arrivals a probe window: 10/s for
  the default 2-s probe). A target whose searches ended so in at least half of its repetitions
  is reported as ``< R (the lowest rate probed)``: never a knee of 0, never put in a ratio.
* **Stopped**: a target that stopped during the run (a gateway that died) is reported as such,
  its figures those of the repetitions before it stopped, never a clean result: no share, no
  price, never compared.
* A bound says what set it: the plan's ``max_rate``, the tester (it dropped arrivals, fell
  behind, ran out of its cores or reached its ceiling), or the shared machine (saturated, the
  generator using more of it than the target), or other work on it (the probe was noisy).
* **Comparisons** are of the ratio of geometric means, with Welch's interval on the logarithms
  of the knees: "A carries 38 % more than B, 95 % CI 29–47 %". The order of A and B is
  *decided* when that interval excludes 0 %. Against a lower bound ``≥ R`` the order is decided
  when the other target's whole interval lies below R; two lower bounds are never ordered.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gatebench.core.confidence import Sample, welch_difference
from gatebench.core.model import BASELINE
from gatebench.core.plan import Objective
from gatebench.core.records import fields
from gatebench.core.stats import fmt_rate
from gatebench.kinds.capacity._search import SearchResult

NOISY_SPREAD = 2.0
"""Repetitions disagree when one held a rate at least this many times one that failed in
another: the interval of a few repetitions cannot describe a spread that wide."""


def rate_text(value: float) -> str:
    """``1,234/s``; three significant digits below 100 (gatebench.core.stats.fmt_rate)."""
    return f"{fmt_rate(value)}/s"


@dataclass(frozen=True)
class KneeSummary:
    """One target on one endpoint, over its repetitions."""

    target: str
    workload: str
    knees: tuple[float, ...]
    """The knee of every complete search (lower bounds included)."""
    repetitions: tuple[int, ...] = ()
    """The repetition each knee comes from (same order)."""
    bounds: tuple[float, ...] = ()
    """The knees that are only lower bounds (at-max, tester-bound)."""
    notes: tuple[str, ...] = ()
    """Why searches were bounded or incomplete (the tester's limit, the plan's max_rate...)."""
    req_per_cpu_s: float | None = None
    """Requests per gateway CPU-second at the knee (its confirmation runs), when measured."""
    gateway_rss_mb: float | None = None
    searches: int = 0
    probes: int = 0
    failed: tuple[tuple[int, float], ...] = ()
    """(repetition, the lowest rate that failed in it: broke the objective or was
    tester-bound), for the repetitions where one did."""
    below: tuple[float, ...] = ()
    """For every repetition that broke the objective even at the lowest rate it probed
    (``nothing``): that rate. The target carries less: upper bounds, not knees."""
    stopped: str = ""
    """Why the target stopped during the run (a gateway that died), "" when it did not."""
    stopped_at: int | None = None
    """The repetition during which it stopped."""

    @property
    def disagreement(self) -> tuple[tuple[int, float], tuple[int, float]] | None:
        """((repetition, rate that failed), (another repetition, rate held)) when a rate held
        in one repetition is at least :data:`NOISY_SPREAD` times one that failed in another."""
        worst: tuple[tuple[int, float], tuple[int, float]] | None = None
        for rep_f, broke in self.failed:
            for rep_h, held in zip(self.repetitions, self.knees, strict=False):
                wider = worst is None or held / broke > worst[1][1] / worst[0][1]
                if rep_h != rep_f and held >= NOISY_SPREAD * broke and wider:
                    worst = ((rep_f, broke), (rep_h, held))
        return worst

    @property
    def noisy(self) -> bool:
        return self.disagreement is not None

    def disagreement_text(self) -> str:
        """Why the target is noisy, in words ("" when it is not)."""
        found = self.disagreement
        if found is None:
            return ""
        (rep_f, broke), (rep_h, held) = found
        return (
            f"the repetitions disagree: the objective broke at {rate_text(broke)} in repetition "
            f"{rep_f}, {rate_text(held)} held in repetition {rep_h}"
        )

    @property
    def upper_bounded(self) -> bool:
        """At least half of the repetitions broke the objective even at the lowest rate they
        probed: the target is reported as ``< R``, with no number of its own."""
        return (
            not self.noisy
            and bool(self.below)
            and 2 * len(self.below) >= len(self.below) + len(self.knees)
        )

    @property
    def less_than(self) -> float | None:
        """The rate an upper-bounded target carries less than: the lowest rate probed (the
        largest of its repetitions', 0.0 when a stored result did not say)."""
        return max(self.below) if self.upper_bounded else None

    @property
    def bounded(self) -> bool:
        return (
            not self.noisy
            and not self.upper_bounded
            and bool(self.bounds)
            and 2 * len(self.bounds) >= len(self.knees)
        )

    @property
    def bound(self) -> float | None:
        """The lower bound a bounded target is reported with: its smallest knee."""
        return min(self.knees) if self.bounded else None

    @property
    def sample(self) -> Sample | None:
        if not self.knees or self.bounded or self.noisy or self.upper_bounded:
            return None
        return Sample.of(list(self.knees))

    @property
    def mean(self) -> float | None:
        s = self.sample
        return None if s is None else s.mean

    @property
    def interval(self) -> tuple[float, float] | None:
        s = self.sample
        if s is None or s.ci_half_width is None:
            return None
        return max(0.0, s.mean - s.ci_half_width), s.mean + s.ci_half_width

    @property
    def estimate(self) -> float | None:
        """The number a table shows: the mean knee, or the lower bound (None for an upper
        bound: ``< R`` is not a number)."""
        return self.bound if self.bounded else self.mean

    @property
    def halted(self) -> bool:
        """The target stopped during the run (a gateway that died)."""
        return bool(self.stopped) or self.stopped_at is not None

    @property
    def clean(self) -> bool:
        """A figure to rank, share and price: not noisy, the target did not stop during the
        run, and a number (not an upper bound, not missing)."""
        return not self.halted and not self.noisy and self.estimate is not None

    def label(self) -> str:
        """``1,234/s (95 % CI 1,180–1,290)``, ``≥ 8,000/s (the tester's limit)``, ``< 10/s
        (the lowest rate probed)``, ``noisy: ...``, ``not searched``, ``–``; a target that
        stopped during the run says so first."""
        text = self._figure()
        if self.halted:
            when = f" in repetition {self.stopped_at}" if self.stopped_at is not None else ""
            return f"stopped{when}" + ("" if text == "–" else f"; before: {text}")
        return text

    def _figure(self) -> str:
        if self.searches == 0 and not self.knees and not self.below:
            return "not searched"
        found = self.disagreement
        if found is not None:
            (_, broke), (_, held) = found
            return f"noisy: {rate_text(broke)} to {rate_text(held)}"
        if self.bounded:
            assert self.bound is not None
            return f"≥ {rate_text(self.bound)} ({self._bound_reason()})"
        if self.upper_bounded:
            return below_text(self.less_than)
        if self.mean is None:
            return "–"
        ci = self.interval
        if ci is None:
            return f"{rate_text(self.mean)} (one repetition: no interval)"
        return f"{rate_text(self.mean)} (95 % CI {fmt_rate(ci[0])}–{fmt_rate(ci[1])})"

    def _bound_reason(self) -> str:
        """What set the bound, from why the bounded searches stopped (their notes)."""
        text = " ".join(self.notes)
        if "max_rate" in text:
            return "the plan's max_rate"
        if "noisy:" in text:
            return "other work on the machine"
        if "the machine was saturated" in text:
            return "the shared machine's limit"
        return "the tester's limit"

    def price_per_million(self, hourly_usd: float | None) -> float | None:
        """USD per million requests at the knee, on a machine costing ``hourly_usd`` (for a
        lower bound ``≥ R``: the most it costs, :func:`price_text`); None for a target that
        is not a clean figure (noisy, stopped, an upper bound)."""
        rate = self.estimate
        if hourly_usd is None or not rate or not self.clean:
            return None
        return price_per_million(rate, hourly_usd)

    def to_dict(self) -> dict[str, Any]:
        ci = self.interval
        return {
            "target": self.target,
            "workload": self.workload,
            "knees": list(self.knees),
            "repetitions": list(self.repetitions),
            "bounds": list(self.bounds),
            **fields(self, "bounded estimate mean"),
            "ci_low": None if ci is None else ci[0],
            "ci_high": None if ci is None else ci[1],
            **fields(self, "req_per_cpu_s gateway_rss_mb searches probes"),
            "notes": list(self.notes),
            "failed": [list(f) for f in self.failed],
            "noisy": self.noisy,
            # only when set: the cloud store counts every field (cloud._capacity)
            **(
                {"below": list(self.below), "upper_bounded": self.upper_bounded}
                if self.below
                else {}
            ),
            **({"stopped": self.stopped, "stopped_at": self.stopped_at} if self.halted else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KneeSummary:
        """A summary as :meth:`to_dict` wrote it (the derived figures are recomputed). One
        stored before upper bounds were kept apart has a knee of 0 for each search that broke
        the objective even at the lowest rate: an upper bound of a rate it did not keep."""
        knees = tuple(float(k) for k in data.get("knees", ()))
        repetitions = tuple(int(r) for r in data.get("repetitions", ()))
        below = tuple(float(b) for b in data.get("below", ()))
        if "below" not in data and 0.0 in knees:  # stored before upper bounds were kept
            below = tuple(0.0 for k in knees if k == 0.0)
            kept = [(k, r) for k, r in zip(knees, repetitions, strict=False) if k != 0.0]
            knees, repetitions = tuple(k for k, _ in kept), tuple(r for _, r in kept)
        stopped_at = data.get("stopped_at")
        return cls(
            target=str(data["target"]),
            workload=str(data["workload"]),
            knees=knees,
            repetitions=repetitions,
            bounds=tuple(float(k) for k in data.get("bounds", ())),
            notes=tuple(str(n) for n in data.get("notes", ())),
            req_per_cpu_s=_float(data.get("req_per_cpu_s")),
            gateway_rss_mb=_float(data.get("gateway_rss_mb")),
            searches=int(data.get("searches", 0)),
            probes=int(data.get("probes", 0)),
            failed=tuple((int(r), float(v)) for r, v in data.get("failed", ())),
            below=below,
            stopped=str(data.get("stopped") or ""),
            stopped_at=None if stopped_at is None else int(stopped_at),
        )


def below_text(rate: float | None) -> str:
    """``< 10/s (the lowest rate probed)``: what a target that broke the objective even at
    the lowest rate probed carries (``< the lowest rate probed`` when the rate is unknown)."""
    if not rate:
        return "< the lowest rate probed"
    return f"< {rate_text(rate)} (the lowest rate probed)"


def share_of_baseline(s: KneeSummary, base: KneeSummary | None) -> tuple[float | None, str]:
    """(percent, text) of what ``s`` carries against the baseline's figure: ``40 %``;
    ``≤ 40 %`` when only the baseline's is a lower bound, ``≥ 40 %`` when only the target's
    is; (None, ``–``) when both are bounds, either is not a clean figure, or there is no
    baseline."""
    if base is None or s.target == BASELINE or not s.clean or not base.clean:
        return None, "–"
    assert s.estimate is not None and base.estimate is not None
    if not base.estimate or (s.bounded and base.bounded):
        return None, "–"
    value = 100.0 * s.estimate / base.estimate
    prefix = "≤ " if base.bounded else "≥ " if s.bounded else ""
    return value, f"{prefix}{value:.0f} %"


def price_text(s: KneeSummary, price: float | None) -> str:
    """``$0.0270`` a million requests; ``≤ $0.0926`` at a lower bound ``≥ R`` (it carries at
    least R, so a million requests cost at most that); ``–`` without a price."""
    if price is None:
        return "–"
    return f"{'≤ ' if s.bounded else ''}${price:.4f}"


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def price_per_million(rate: float, hourly_usd: float) -> float:
    """What a million requests cost on a machine of ``hourly_usd`` kept busy at ``rate``."""
    return hourly_usd / (rate * 3600.0) * 1e6


def summarize(target: str, workload: str, results: Sequence[SearchResult]) -> KneeSummary:
    """One target on one endpoint; ``results[i]`` is repetition i + 1's search."""
    ended = [
        (i, r)
        for i, r in enumerate(results, start=1)
        if r.status == "nothing" or (r.complete and r.knee is not None)
    ]
    numbered = [(i, r) for i, r in ended if r.status != "nothing"]
    complete = [r for _, r in numbered]
    below = tuple(float(r.below or 0.0) for _, r in ended if r.status == "nothing")
    knees = tuple(float(r.knee) for r in complete if r.knee is not None)
    bounds = tuple(float(r.knee) for r in complete if r.bounded and r.knee is not None)
    notes = tuple(dict.fromkeys(r.note for r in results if r.note and r.status != "found"))
    failed = tuple(
        (i, min(p.request.rate for p in r.probes if p.verdict.outcome != "within"))
        for i, r in ended
        if any(p.verdict.outcome != "within" for p in r.probes)
    )
    stopped = next(
        ((i, r.note) for i, r in enumerate(results, start=1) if r.status == "failed"), None
    )
    confirmations = [c for r in complete if (c := r.confirmation) is not None]
    per_cpu = [v for c in confirmations if (v := c.metrics.req_per_cpu_s) is not None]
    rss = [v for c in confirmations if (v := c.metrics.gateway_rss_mb) is not None]
    return KneeSummary(
        target=target,
        workload=workload,
        knees=knees,
        repetitions=tuple(i for i, _ in numbered),
        bounds=bounds,
        notes=notes,
        req_per_cpu_s=sum(per_cpu) / len(per_cpu) if per_cpu else None,
        gateway_rss_mb=max(rss) if rss else None,
        searches=len(results),
        probes=sum(len(r.probes) for r in results),
        failed=failed,
        below=below,
        stopped=stopped[1] or "it stopped" if stopped else "",
        stopped_at=stopped[0] if stopped else None,
    )


@dataclass(frozen=True)
class Comparison:
    """``better`` against ``worse`` on one endpoint."""

    workload: str
    better: str
    worse: str
    ratio: float | None
    """better / worse (ratio of geometric means; of the bound to the other's mean when one is
    a lower bound); None when neither can be put on a number."""
    low: float | None = None
    high: float | None = None
    """The ratio's 95 % interval (None: not available)."""
    decided: bool = False
    at_least: bool = False
    """The ratio is a lower bound (``better`` reached a limit)."""
    below: float | None = None
    """``worse`` carries less than this rate, the lowest it was probed at (an upper bound):
    no ratio, only the order (0.0: the rate is not known)."""

    def interval(self) -> str | None:
        """The 95 % interval of how much more, ``35–41 %``, with as many decimals (up to two)
        as keep its ends apart: a narrow one never reads as no uncertainty (``41–41 %``)."""
        if self.low is None or self.high is None:
            return None
        low, high = 100 * (self.low - 1), 100 * (self.high - 1)
        decimals = next((d for d in (0, 1) if f"{low:.{d}f}" != f"{high:.{d}f}"), 2)
        return f"{low:.{decimals}f}–{high:.{decimals}f} %"

    def percent(self) -> str:
        """``38 %`` more; with ``at least`` for a lower bound."""
        if self.ratio is None:
            return "?"
        pct = 100.0 * (self.ratio - 1.0)
        return f"{'at least ' if self.at_least else ''}{pct:.0f} %"

    def by(self) -> str:
        """How much more, for a table: ``38 % more``; without a ratio, why (``– (nginx < 10/s,
        the lowest rate probed)``) or ``–``."""
        if self.below is not None:
            return f"– ({self.worse} {below_text(self.below)})"
        if self.ratio is None:
            return "–"
        return self.percent() + " more"

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields(self, "workload better worse ratio"),
            "ci_low": self.low,
            "ci_high": self.high,
            "decided": self.decided,
            "at_least": self.at_least,
            **({"below": self.below} if self.below is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        return cls(
            workload=str(data["workload"]),
            better=str(data["better"]),
            worse=str(data["worse"]),
            ratio=_float(data.get("ratio")),
            low=_float(data.get("ci_low")),
            high=_float(data.get("ci_high")),
            decided=bool(data.get("decided", False)),
            at_least=bool(data.get("at_least", False)),
            below=_float(data.get("below")),
        )


def _logs(values: Sequence[float]) -> list[float]:
    return [math.log(max(v, 0.5)) for v in values]


def compare(a: KneeSummary, b: KneeSummary) -> Comparison:
    """Which of two targets carries more on one endpoint, by how much, and whether that is
    decided (rules in the module docstring)."""
    if a.noisy or b.noisy or a.halted or b.halted:
        return Comparison(a.workload, a.target, b.target, None)
    if a.upper_bounded or b.upper_bounded:
        return _against_upper_bound(a, b)
    if a.bounded and b.bounded:
        first, second = (a, b) if (a.bound or 0) >= (b.bound or 0) else (b, a)
        return Comparison(a.workload, first.target, second.target, None)
    if a.bounded or b.bounded:
        bounded, other = (a, b) if a.bounded else (b, a)
        assert bounded.bound is not None
        top = other.interval[1] if other.interval else other.mean
        if top is None:
            return Comparison(a.workload, bounded.target, other.target, None)
        decided = other.interval is not None and top < bounded.bound
        ratio = bounded.bound / other.mean if other.mean else None
        if ratio is not None and ratio < 1.0:
            return Comparison(a.workload, bounded.target, other.target, None)
        return Comparison(
            a.workload, bounded.target, other.target, ratio, decided=decided, at_least=True
        )
    if not a.knees or not b.knees:
        return Comparison(a.workload, a.target, b.target, None)
    la, lb = Sample.of(_logs(a.knees)), Sample.of(_logs(b.knees))
    diff = welch_difference(la, lb)
    first, second, sign = (a, b, 1.0) if diff.estimate >= 0 else (b, a, -1.0)
    ratio = math.exp(sign * diff.estimate)
    low = high = None
    if diff.half_width is not None:
        low = math.exp(sign * diff.estimate - diff.half_width)
        high = math.exp(sign * diff.estimate + diff.half_width)
    return Comparison(
        a.workload,
        first.target,
        second.target,
        ratio,
        low,
        high,
        decided=bool(diff.significant),
    )


def _against_upper_bound(a: KneeSummary, b: KneeSummary) -> Comparison:
    """One target (or both) broke the objective even at the lowest rate probed: it carries
    less than that rate, a bound no ratio can be taken of (0 % of anything is no figure). The
    other is ahead, decided when all it is known to carry (its lower bound, its interval's
    low end) is at least that rate; two upper bounds are never ordered."""
    if a.upper_bounded and b.upper_bounded:
        return Comparison(a.workload, a.target, b.target, None)
    under, other = (a, b) if a.upper_bounded else (b, a)
    rate = under.less_than or 0.0
    if other.bounded:
        floor = other.bound
    elif other.interval is not None:
        floor = other.interval[0]
    else:
        floor = None  # one repetition: no interval
    if other.estimate is None:
        return Comparison(a.workload, other.target, under.target, None)
    decided = floor is not None and floor >= rate > 0
    return Comparison(a.workload, other.target, under.target, None, decided=decided, below=rate)


def all_decided(summaries: Sequence[KneeSummary]) -> bool:
    """Whether every pair of targets on one endpoint is ordered."""
    return all(compare(a, b).decided for i, a in enumerate(summaries) for b in summaries[i + 1 :])


def undecided_pairs(summaries: Sequence[KneeSummary]) -> list[tuple[str, str]]:
    return [
        (a.target, b.target)
        for i, a in enumerate(summaries)
        for b in summaries[i + 1 :]
        if not compare(a, b).decided
    ]


def verdict(workload: str, summaries: Sequence[KneeSummary], objective: Objective) -> str:
    """The endpoint's verdict in one sentence: the gateway that carries the most against the
    next one, or against the baseline when there is one gateway."""
    text = _verdict(workload, summaries, objective)
    noisy = [s.target for s in summaries if s.noisy]
    if noisy:
        text += (
            f"; {', '.join(noisy)}: the repetitions disagree (noisy), so no figure is given "
            "for them"
        )
    return text


def _verdict(workload: str, summaries: Sequence[KneeSummary], objective: Objective) -> str:
    """The ranking of the targets that ran to the end, then a clause for every target that
    stopped during the run (its figures are not a clean result)."""
    clean = [s for s in summaries if not s.halted]
    stopped = [
        f"{s.target} stopped"
        + (f" during repetition {s.stopped_at}" if s.stopped_at is not None else "")
        + (f" ({s.stopped})" if s.stopped else "")
        + ": its figures are not a clean result"
        for s in summaries
        if s not in clean
    ]
    if not clean and stopped:
        return "; ".join(stopped)
    return "; ".join([_ranked(workload, clean, objective), *stopped])


def _under(workload: str, summaries: Sequence[KneeSummary]) -> str:
    """``; nginx carries < 10/s (the lowest rate probed)`` for the gateways that broke the
    objective even at the lowest rate probed ("" when none did)."""
    under = [s for s in summaries if s.target != BASELINE and s.upper_bounded]
    if not under:
        return ""
    rate = max((s.less_than or 0.0) for s in under)
    names = ", ".join(s.target for s in under)
    verb = "carries" if len(under) == 1 else "carry"
    return f"; {names} {verb} {below_text(rate)} of {workload} traffic"


def _ranked(workload: str, summaries: Sequence[KneeSummary], objective: Objective) -> str:
    at = objective.label()
    gateways = [s for s in summaries if s.target != BASELINE and s.estimate is not None]
    under = [s for s in summaries if s.target != BASELINE and s.upper_bounded]
    baseline = next((s for s in summaries if s.target == BASELINE), None)
    if not gateways:
        base = ""
        if baseline is not None and (baseline.estimate is not None or baseline.upper_bounded):
            base = f"without a gateway the backend carries {baseline.label()} of {workload} traffic at {at}"
        if under:
            rate = max((s.less_than or 0.0) for s in under)
            names = ", ".join(s.target for s in under)
            at_rate = f", {rate_text(rate)}" if rate else ""
            verb = "carries" if len(under) == 1 else "carry"
            text = (
                f"no gateway carried {workload} traffic at {at}, even at the lowest rate "
                f"probed{at_rate}: {names} {verb} less"
            )
            return f"{text}; {base}" if base else text
        if base:
            return base
        # no search found a knee: say what stopped them (the tester's limit, the budget)
        stops = list(dict.fromkeys(n for s in summaries for n in s.notes))
        if stops:
            return f"no target could be measured on {workload} at {at}: {stops[0]}"
        return f"no target carried {workload} traffic at {at}"
    return _gateways(workload, gateways, baseline, at) + _under(workload, under)


def _gateways(
    workload: str, gateways: Sequence[KneeSummary], baseline: KneeSummary | None, at: str
) -> str:
    ranked = sorted(gateways, key=lambda s: -(s.estimate or 0.0))
    best = ranked[0]
    if len(ranked) == 1:
        text = f"{best.target} carries {best.label()} of {workload} traffic at {at}"
        value, share = share_of_baseline(best, baseline)
        if value is not None:
            text += f", {share} of what the backend carries without a gateway"
            if baseline is not None and baseline.bounded:
                text += f" (itself only {baseline.label()})"
        elif baseline is not None and baseline.bounded and best.bounded:
            text += (
                f"; without a gateway the backend carries {baseline.label()}: both are lower "
                "bounds, so no share of it can be told"
            )
        elif baseline is not None and baseline.upper_bounded:
            text += f"; without a gateway the backend carries {baseline.label()}"
        return text
    c = compare(best, ranked[1])
    if c.ratio is None:
        if best.bounded and ranked[1].bounded:
            return (
                f"{c.better} and {c.worse} both reached a limit on {workload} traffic at {at}: "
                "their order cannot be told here"
            )
        return (
            f"{c.better} and {c.worse} on {workload} traffic at {at}: their order cannot be "
            f"told here ({c.better}'s knee is only a lower bound)"
        )
    ci = f", 95 % CI {c.interval()}" if c.low and c.high else ""
    if c.decided:
        return (
            f"{c.better} carries {c.percent()} more {workload} traffic than {c.worse} at {at}{ci}"
        )
    if c.at_least:
        return (
            f"{c.better} may carry more {workload} traffic than {c.worse} at {at}: "
            f"{c.better}'s knee is only a lower bound ({c.percent()} more) and {c.worse}'s "
            "interval reaches above it, so their order is not decided"
        )
    if c.low is None:  # fewer than two knees on a side: no interval, so no noise to be within
        carried = (
            f"{c.better} and {c.worse} carried the same {workload} traffic at {at}"
            if c.percent() == "0 %"  # not '0 % more'
            else f"{c.better} carried {c.percent()} more {workload} traffic than {c.worse} at {at}"
        )
        return (
            f"{carried}, but with fewer than two searches of each there is no interval: their "
            "order is not decided (search again with more repetitions)"
        )
    return (
        f"{c.better} and {c.worse} carry the same {workload} traffic at {at} within the noise "
        f"({c.better} {c.percent()} more{ci})"
    )


__all__ = [
    "BASELINE",
    "NOISY_SPREAD",
    "Comparison",
    "KneeSummary",
    "all_decided",
    "below_text",
    "compare",
    "price_per_million",
    "price_text",
    "rate_text",
    "share_of_baseline",
    "summarize",
    "undecided_pairs",
    "verdict",
]
