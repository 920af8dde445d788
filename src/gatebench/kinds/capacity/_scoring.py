"""The scoring function: did the target carry the probe's rate within the objective, did it
not, or did the tester fail to offer the rate (then the probe says nothing about the target)?

The order of the rules is the decision (docs/capacity.md, "Honest limits"):

1. **Dropped arrivals** (more than :attr:`TesterLimits.dropped_pct` of those due): the engine
   could not send them (it fell further behind than the request timeout, or the system refused
   a socket: no ephemeral port, no descriptor). The target was never offered the rate:
   ``tester-bound``.
2. **The engine's ceiling**: an offered rate at or above ``ceiling_share`` of the rate the
   engine demonstrated against the fastest target on the machine (``gatebench.core.trust``'s
   80 % rule; with several testers, of their summed ceilings): ``tester-bound``, whatever the
   latencies say, since a knee there would describe the generator.
3. **Wrong answers** (gatebench.core.answers): a probe with any is ``breached``, whatever the
   engine did, since a rate at which the target answers wrongly is not a rate it carries and
   a crossed or truncated answer is never the tester's doing.
4. **The objective**: every latency bound (from the intended start) and the error bound.
   Met: ``within``, even when the engine was late (its lateness only added latency).
5. **A breach the engine can explain**: breached, and either more than
   :attr:`TesterLimits.late_pct` of the arrivals left more than ``late_ms`` late and the
   objective is met when latencies are measured from the moment requests really left; or
   the engine used :attr:`TesterLimits.engine_cpu_pct` of its cores; or the machine was
   saturated (``gatebench.core.measure.TESTER_BOUND_BUSY_PCT``) with the engine using more CPU than
   the target and more than every other process together: ``tester-bound``.
6. Otherwise ``breached``: the target's.

A probe during which other processes used more than ``gatebench.core.measure.NOISY_OTHERS_PCT`` of
the machine says so in its reasons, whatever its outcome: on a shared machine a breach there
may be the neighbours' (docs/capacity.md, "Limits on a 2-core machine"); so does a probe whose
target may have shared a core with the load generator (``ProbeMetrics.shared_core``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from gatebench.core.measure import NOISY_OTHERS_PCT, TESTER_BOUND_BUSY_PCT
from gatebench.core.plan import Objective
from gatebench.core.stats import fmt_rate
from gatebench.core.trust import TESTER_BOUND_SHARE
from gatebench.kinds.capacity._metrics import ProbeMetrics

Outcome = Literal["within", "breached", "tester-bound"]

LATE_SHARE_OF_OBJECTIVE = 0.1
"""An arrival is late when it left more than this share of the tightest latency bound after it
was due (at least :data:`MIN_LATE_MS`): lateness under it cannot move a percentile by more than
a tenth of the bound."""
MIN_LATE_MS = 1.0


def late_threshold_ms(objective: Objective) -> float:
    tightest = min(float(limit) for _, limit in objective.latency)
    return max(MIN_LATE_MS, LATE_SHARE_OF_OBJECTIVE * tightest)


@dataclass(frozen=True)
class TesterLimits:
    """When a probe describes the tester rather than the target."""

    dropped_pct: float = 0.1
    late_pct: float = 1.0
    engine_cpu_pct: float = 90.0
    ceiling: float | None = None
    """The rate the engine demonstrated against the ceiling target (req/s), if measured."""
    ceiling_share: float = TESTER_BOUND_SHARE


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    reasons: tuple[str, ...] = ()
    """Why, in words: ``p99 73 ms > 50 ms``, ``the engine dropped 2.1 % of arrivals``."""


def breaches(latency: Mapping[str, float], error_pct: float, objective: Objective) -> list[str]:
    """The objective's bounds a probe missed, in words (none: it was met)."""
    out = [
        f"{metric} {latency[metric]:.1f} ms > {limit:g} ms"
        for metric, limit in objective.latency
        if latency[metric] > limit
    ]
    if error_pct > objective.error_pct:
        out.append(f"errors {error_pct:.2f} % > {objective.error_pct:g} %")
    return out


def score_probe(m: ProbeMetrics, objective: Objective, limits: TesterLimits) -> Verdict:
    """The probe's outcome (rules in the module docstring)."""
    if m.requests == 0 and m.dropped == 0:
        return Verdict("tester-bound", ("the probe sent no request: its window held no arrival",))
    if m.scheduled and 100.0 * m.dropped / m.scheduled > limits.dropped_pct:
        reason = m.drop_reasons[0][0] if m.drop_reasons else "the engine could not send them"
        return Verdict(
            "tester-bound",
            (
                f"the engine dropped {m.dropped:,} of {m.scheduled:,} arrivals "
                f"({100.0 * m.dropped / m.scheduled:.1f} %): {reason}",
            ),
        )
    if limits.ceiling is not None and m.offered_rate >= limits.ceiling_share * limits.ceiling:
        return Verdict(
            "tester-bound",
            (
                f"{fmt_rate(m.offered_rate)}/s is at least {limits.ceiling_share:.0%} of the engine's "
                f"ceiling here ({fmt_rate(limits.ceiling)}/s)",
            ),
        )
    noise = _noise(m)
    if m.wrong_answers:
        # a rate at which the target answers wrongly is not a rate it carries, whatever the
        # engine did: never the tester's (docs/trust.md, "Right answers under load")
        kinds = ", ".join(f"{kind} {n:,}" for kind, n in m.wrong_kinds)
        wrong = f"{m.wrong_answers:,} wrong answer{'s' if m.wrong_answers != 1 else ''}"
        missed = breaches(m.latency, m.error_pct, objective)
        return Verdict("breached", (f"{wrong} ({kinds})" if kinds else wrong, *missed, *noise))
    missed = breaches(m.latency, m.error_pct, objective)
    if not missed:
        return Verdict("within", noise)
    engine: list[str] = []
    if m.late_pct > limits.late_pct and not breaches(m.from_send, m.error_pct, objective):
        engine.append(
            f"{m.late_pct:.1f} % of arrivals left more than {m.late_ms:g} ms late "
            f"(lag p99 {m.lag_p99_ms:.1f} ms), and without that lag the objective was met"
        )
    if m.engine_cpu_pct >= limits.engine_cpu_pct:
        engine.append(f"the engine used {m.engine_cpu_pct:.0f} % of its cores")
    if _engine_took_the_machine(m):
        engine.append(
            "the machine was saturated and the engine used more CPU than the target and "
            "than every other process"
        )
    if engine:
        return Verdict("tester-bound", (*missed, *engine, *noise))
    return Verdict("breached", (*missed, *noise))


def _engine_took_the_machine(m: ProbeMetrics) -> bool:
    busy, engine = m.machine_busy_pct, m.engine_machine_pct
    if busy is None or engine is None or busy < TESTER_BOUND_BUSY_PCT:
        return False
    return engine > (m.target_machine_pct or 0.0) and engine > (m.others_cpu_pct or 0.0)


def _noise(m: ProbeMetrics) -> tuple[str, ...]:
    out = []
    if m.others_cpu_pct is not None and m.others_cpu_pct > NOISY_OTHERS_PCT:
        out.append(f"noisy: other processes used {m.others_cpu_pct:.0f} % of the machine")
    if m.shared_core is not None:
        out.append(f"shared core: {m.shared_core}")
    return tuple(out)


__all__ = [
    "LATE_SHARE_OF_OBJECTIVE",
    "MIN_LATE_MS",
    "Outcome",
    "TesterLimits",
    "Verdict",
    "breaches",
    "late_threshold_ms",
    "score_probe",
]
