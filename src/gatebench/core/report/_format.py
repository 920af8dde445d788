"""How numbers are printed: never more precise than what was measured.

- A latency is printed at the resolution of the load engine that measured it
  (``resolution_ms``, :func:`resolution_of` its cell's engines). A *reading* (min, max, a
  percentile) from Gatling is a whole millisecond: shown without decimals, and a 0 ms reading
  as ``<1`` (it means "under 1 ms"). wrk and gatebench-loadgen record microseconds: a reading
  shows two significant digits (``0.22``, ``1.4``, ``12``), never finer than 0.001 ms, and one
  under their resolution reads ``<0.001``.
- A value with a confidence interval is rounded where its interval's second significant
  digit falls (``812 ± 37``, ``1.25 ± 0.11``), and never finer than the metric allows:
  0.1 ms for latencies (0.001 ms from an engine that records microseconds), 0.1 req/s,
  0.01 % for errors, 0.1 points for scores.
- Scores are shown as whole points, as the paper does, unless an interval asks for more; the
  verdict shows as many decimals as it takes to print different scores differently
  (:func:`score_decimals`), and no score below 100 ever reads ``100``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal

READINGS = frozenset({"min", "max", "p50", "p90", "p95", "p99"})
"""Metrics that are single request latencies: at the engine's resolution (Gatling: whole
milliseconds)."""

GATLING_MS = 1.0
"""Gatling's resolution, taken for a value whose engine is not known (older records, an
engine :data:`gatebench.core.trust.ENGINE_RESOLUTION_MS` does not list), as the score takes
it (``gatebench.core.score.RESOLUTION_MS``)."""

MAX_DECIMALS = {
    "ms": 1,
    "req/s": 1,
    "%": 2,
    "points": 1,
}


def unit_of(metric: str) -> str:
    from gatebench.core.metrics import UNITS

    return UNITS.get(metric, "points")


def resolution_of(engines: Iterable[str]) -> float:
    """The latency resolution (ms) of values measured by ``engines``: the coarsest of theirs
    (``gatebench.core.trust.ENGINE_RESOLUTION_MS``), :data:`GATLING_MS` for an engine it does
    not know or for none."""
    from gatebench.core.trust import ENGINE_RESOLUTION_MS

    return max((ENGINE_RESOLUTION_MS.get(e, GATLING_MS) for e in engines), default=GATLING_MS)


def resolution_places(resolution_ms: float) -> int:
    """Decimals of a resolution: 0 for Gatling's 1 ms, 3 for wrk's 0.001 ms."""
    if not math.isfinite(resolution_ms) or resolution_ms >= 1:
        return 0
    return max(0, -math.floor(math.log10(resolution_ms) + 1e-9))


def decimals_for(
    half_width: float | None, unit: str, default: int, resolution_ms: float = GATLING_MS
) -> int:
    """Decimals that show ``half_width`` to two significant digits, capped by the unit (a
    latency also by the engine's resolution: never coarser than 0.1 ms, never finer than the
    engine records)."""
    cap = MAX_DECIMALS.get(unit, 2)
    if unit == "ms":
        cap = max(cap, resolution_places(resolution_ms))
    if half_width is None or not math.isfinite(half_width):
        return min(default, cap)
    if half_width <= 0:
        return min(default, cap)
    wanted = 1 - math.floor(math.log10(half_width))
    return max(0, min(wanted, cap))


def _default_decimals(metric: str, value: float, resolution_ms: float = GATLING_MS) -> int:
    unit = unit_of(metric)
    if unit == "ms":
        base = 0 if metric in READINGS else 1
        if resolution_ms >= 1 or not math.isfinite(value) or value == 0:
            return base  # Gatling: whole-millisecond readings, means to 0.1 ms
        # an engine that records microseconds: two significant digits, at least ``base``
        return max(base, decimals_for(abs(value), unit, base, resolution_ms))
    if unit == "req/s":
        return 0 if abs(value) >= 100 else 1
    if unit == "%":
        return 0 if value == 0 else 2
    return 0


def fmt_number(value: float, decimals: int) -> str:
    """``value`` to ``decimals`` places with thousands separators, a half rounded away from
    zero as readers round (12.5 → ``13``, 2.675 → ``2.68``; Python's own format rounds the
    binary value half to even: ``12``, ``2.67``)."""
    if not math.isfinite(value):
        return f"{value:,.{decimals}f}"
    exact = Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    text = f"{exact:,.{decimals}f}"
    if text.startswith("-") and float(text.replace(",", "")) == 0:
        text = text[1:]
    return text


def fmt_points(value: float, decimals: int) -> str:
    """A number of score points, in the singular for exactly one: ``1 point``, ``1.0 points``
    (a measured figure), ``6 points``."""
    text = fmt_number(value, decimals)
    return f"{text} point" if text == "1" else f"{text} points"


def fmt_value(
    metric: str,
    value: float | None,
    half_width: float | None = None,
    resolution_ms: float = GATLING_MS,
) -> str:
    """``value`` of ``metric`` (no unit), at the precision its interval supports and, for a
    latency, the resolution of the engine that measured it (``resolution_ms``): a reading under
    it reads ``<1`` from Gatling, ``<0.001`` from wrk."""
    if value is None or not math.isfinite(value):
        return "–"
    unit = unit_of(metric)
    if unit == "ms" and metric in READINGS and half_width in (None, 0.0) and value < resolution_ms:
        return "<" + fmt_number(resolution_ms, resolution_places(resolution_ms))
    default = _default_decimals(metric, value, resolution_ms)
    decimals = decimals_for(half_width, unit, default, resolution_ms)
    return fmt_number(value, decimals)


def fmt_ci(
    metric: str,
    value: float | None,
    half_width: float | None,
    resolution_ms: float = GATLING_MS,
) -> str:
    """``value ± half`` with both rounded alike; just the value when there is no interval."""
    if value is None or not math.isfinite(value):
        return "–"
    if half_width is None or not math.isfinite(half_width) or half_width == 0:
        # no spread: "± 0" would claim precision
        return fmt_value(metric, value, half_width, resolution_ms)
    unit = unit_of(metric)
    default = _default_decimals(metric, value, resolution_ms)
    decimals = decimals_for(half_width, unit, default, resolution_ms)
    return f"{fmt_number(value, decimals)} ± {fmt_number(half_width, decimals)}"


SCORE_DECIMALS = 9
"""Scores are ranked to this many decimals (gatebench.core.score): no finer difference is
one, and none is printed finer."""


def fmt_score(value: float | None, half_width: float | None = None, decimals: int = 0) -> str:
    """A score at the precision its interval supports, whole points without one (at least
    ``decimals``); never ``100`` for a score below it, however close: 99.59 reads ``99.6``,
    99.9996 ``99.9996``, and a score within 1e-9 of 100 (ranked with 100, never shown as it)
    ``99.999999999``."""
    if value is None or not math.isfinite(value):
        return "–"
    decimals = max(decimals, decimals_for(half_width, "points", 0) if half_width else 0)
    text = fmt_number(value, decimals)
    while value < 100 and float(text.replace(",", "")) >= 100 and decimals < SCORE_DECIMALS:
        decimals += 1
        text = fmt_number(value, decimals)
    if value < 100 and float(text.replace(",", "")) >= 100:
        exact = Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_DOWN)
        text = f"{exact:,.{decimals}f}"
    return text


def score_decimals(scores: Iterable[float]) -> int:
    """The fewest decimals (0 to :data:`SCORE_DECIMALS`) that print different scores
    differently (95.417 and 94.619 both read ``95`` in whole points: ``95.4`` and ``94.6``);
    scores equal to :data:`SCORE_DECIMALS` decimals share a rank and may print alike."""
    distinct = sorted({round(s, SCORE_DECIMALS) for s in scores if math.isfinite(s)})
    for decimals in range(SCORE_DECIMALS + 1):
        shown = [fmt_score(s, decimals=decimals) for s in distinct]
        if len(set(shown)) == len(shown):
            return decimals
    return SCORE_DECIMALS


def fmt_signed(
    metric: str, value: float, half_width: float | None, resolution_ms: float = GATLING_MS
) -> str:
    """A difference: always signed (``+3.2``, ``−0.4``) so its direction is readable; a
    latency's at the resolution of the engines that measured both sides (the coarser)."""
    unit = unit_of(metric)
    base = _default_decimals(metric, abs(value), resolution_ms)
    decimals = decimals_for(half_width, unit, base, resolution_ms)
    text = fmt_number(abs(value), decimals)
    if text.strip("0.,") == "":
        return text
    return ("+" if value > 0 else "−") + text


def fmt_pct(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "–"
    decimals = 0 if abs(value) >= 10 else 1
    return (
        ("+" if value > 0 else "−" if value < 0 else "") + fmt_number(abs(value), decimals) + " %"
    )
