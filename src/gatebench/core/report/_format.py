"""How numbers are printed: never more precise than what was measured.

- A latency *reading* (min, max, a percentile) is a whole millisecond from Gatling: shown
  without decimals, and a 0 ms reading as ``<1`` (it means "under 1 ms").
- A value with a confidence interval is rounded where its interval's second significant
  digit falls (``812 ± 37``, ``1.25 ± 0.11``), and never finer than the metric allows:
  0.1 ms for latencies, 0.1 req/s, 0.01 % for errors, 0.1 points for scores.
- Scores are shown as whole points, as the paper does, unless an interval asks for more.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

READINGS = frozenset({"min", "max", "p50", "p90", "p95", "p99"})
"""Metrics that are single request latencies: whole milliseconds."""

MAX_DECIMALS = {
    "ms": 1,
    "req/s": 1,
    "%": 2,
    "points": 1,
}


def unit_of(metric: str) -> str:
    from gatebench.core.metrics import UNITS

    return UNITS.get(metric, "points")


def decimals_for(half_width: float | None, unit: str, default: int) -> int:
    """Decimals that show ``half_width`` to two significant digits, capped by the unit."""
    cap = MAX_DECIMALS.get(unit, 2)
    if half_width is None or not math.isfinite(half_width):
        return min(default, cap)
    if half_width <= 0:
        return min(default, cap)
    wanted = 1 - math.floor(math.log10(half_width))
    return max(0, min(wanted, cap))


def _default_decimals(metric: str, value: float) -> int:
    unit = unit_of(metric)
    if unit == "ms":
        return 0 if metric in READINGS else 1
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


def fmt_value(metric: str, value: float | None, half_width: float | None = None) -> str:
    """``value`` of ``metric`` (no unit), at the precision its interval supports."""
    if value is None or not math.isfinite(value):
        return "–"
    unit = unit_of(metric)
    if unit == "ms" and metric in READINGS and half_width in (None, 0.0) and value < 1:
        return "<1"
    decimals = decimals_for(half_width, unit, _default_decimals(metric, value))
    return fmt_number(value, decimals)


def fmt_ci(metric: str, value: float | None, half_width: float | None) -> str:
    """``value ± half`` with both rounded alike; just the value when there is no interval."""
    if value is None or not math.isfinite(value):
        return "–"
    if half_width is None or not math.isfinite(half_width) or half_width == 0:
        return fmt_value(metric, value, half_width)  # no spread: "± 0" would claim precision
    unit = unit_of(metric)
    decimals = decimals_for(half_width, unit, _default_decimals(metric, value))
    return f"{fmt_number(value, decimals)} ± {fmt_number(half_width, decimals)}"


def fmt_score(value: float | None, half_width: float | None = None) -> str:
    """A score at the precision its interval supports, whole points without one; never
    ``100`` for a score below it (99.59 reads ``99.6``, not a perfect score)."""
    if value is None or not math.isfinite(value):
        return "–"
    decimals = decimals_for(half_width, "points", 0) if half_width else 0
    text = fmt_number(value, decimals)
    while value < 100 and float(text.replace(",", "")) >= 100 and decimals < 3:
        decimals += 1
        text = fmt_number(value, decimals)
    return text


def fmt_signed(metric: str, value: float, half_width: float | None) -> str:
    """A difference: always signed (``+3.2``, ``−0.4``) so its direction is readable."""
    unit = unit_of(metric)
    base = 0 if unit == "ms" and half_width is None else _default_decimals(metric, abs(value))
    if unit == "ms" and half_width is None and metric not in READINGS:
        base = 1
    decimals = decimals_for(half_width, unit, base)
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
