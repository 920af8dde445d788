"""Student's t quantiles and 95 % confidence intervals, with the standard library only.

Repetitions are few (the paper averaged 10), so a normal approximation would make every
interval too narrow; the t distribution is the right one. SciPy would bring ~40 MB for
one function, so the quantile is computed here: the t CDF through the regularised
incomplete beta function (Lentz's continued fraction), inverted by Newton's method. The
CDF is concave above zero, so Newton's method converges from either side of the root; it
starts from the Cornish–Fisher expansion, usually a few 1e-4 away.

Accuracy, against SciPy as the oracle (tests/unit/test_confidence.py; SciPy is a test
dependency only): the 95 % critical values within 1e-11 (relative), quantiles within 1e-9
(relative) for p ≤ 0.45 and p ≥ 0.55, the CDF within 1e-8; near the median (p → 0.5) the
subtraction ``1 - tail`` costs relative accuracy, but the quantile stays within 1e-5.
tests/unit/test_aggregate.py also checks printed 3-decimal tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

CONFIDENCE = 0.95
"""The level of every interval gatebench reports."""
SAME_DIFFERENCE = 1e-9
"""Paired differences whose spread is below this share of the values (float rounding: a
score is ranked to 9 decimals) are the same difference (:func:`paired_difference`)."""


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) for 0 <= x <= 1 and a, b > 0."""
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"x must be in [0, 1], got {x}")
    if x in (0.0, 1.0):
        return x
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(a, b, x) / a
    return 1.0 - front * _continued_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom (df > 0, not necessarily whole)."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    tail = 0.5 * regularized_incomplete_beta(df / (df + t * t), df / 2.0, 0.5)
    return 1.0 - tail if t > 0 else tail


def _t_pdf(t: float, df: float) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def _cornish_fisher(z: float, df: float) -> float:
    """A first guess (Abramowitz & Stegun 26.7.5); near enough that Newton needs 1–3 steps."""
    if df < 3:
        return z
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (0 < p < 1, df > 0)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if math.isinf(df):
        return NormalDist().inv_cdf(p)
    if df == 1.0:  # Cauchy: exact
        return math.tan(math.pi * (p - 0.5))
    t = _cornish_fisher(NormalDist().inv_cdf(p), df)
    for _ in range(200):
        step = (t_cdf(t, df) - p) / _t_pdf(t, df)
        t -= step
        if abs(step) <= 1e-13 * max(1.0, abs(t)):
            break
    return t


def t_critical(df: float, confidence: float = CONFIDENCE) -> float:
    """The two-sided critical value: ``t_quantile(1 - (1 - confidence) / 2, df)``."""
    return t_quantile(1.0 - (1.0 - confidence) / 2.0, df)


@dataclass(frozen=True)
class Sample:
    """Mean, sample standard deviation (n - 1) and size of a set of repetitions."""

    mean: float
    stddev: float = 0.0
    n: int = 1

    @classmethod
    def of(cls, values: Sequence[float]) -> Sample:
        if not values:
            raise ValueError("a sample needs at least one value")
        n = len(values)
        mean = math.fsum(values) / n
        if n < 2:
            return cls(mean, 0.0, n)
        var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
        return cls(mean, math.sqrt(var), n)

    @property
    def ci_half_width(self) -> float | None:
        """Half-width of the 95 % confidence interval of the mean; None with one value."""
        if self.n < 2:
            return None
        return t_critical(self.n - 1) * self.stddev / math.sqrt(self.n)

    def ci_whiskers(self, floor: float | None = 0.0) -> tuple[float | None, float | None]:
        """The ends of the 95 % confidence interval for a chart's whiskers, the low end kept
        at or above ``floor`` (a throughput cannot go below 0); (None, None) with one value."""
        half = self.ci_half_width
        if half is None:
            return None, None
        low = self.mean - half
        return (low if floor is None else max(floor, low)), self.mean + half


@dataclass(frozen=True)
class Difference:
    """``a - b`` with the 95 % confidence interval of the difference (Welch)."""

    estimate: float
    half_width: float | None
    """None when either side has a single value, or (:func:`paired_difference`) when every
    pair differs by the same amount: no interval can be given."""
    df: float | None = None
    bounds: tuple[float, float] | None = None
    """The values the difference can take (two 0–100 scores: −100 to 100): the interval's
    ends stay inside them, where a few repetitions would stretch it past what is possible."""
    stderr: float | None = None
    """The standard error of the estimate (the interval is ``t × stderr``); None without one."""

    @property
    def low(self) -> float | None:
        if self.half_width is None:
            return None
        low = self.estimate - self.half_width
        return low if self.bounds is None else max(self.bounds[0], low)

    @property
    def high(self) -> float | None:
        if self.half_width is None:
            return None
        high = self.estimate + self.half_width
        return high if self.bounds is None else min(self.bounds[1], high)

    @property
    def significant(self) -> bool | None:
        """True when the interval excludes 0; None when there is no interval."""
        if self.half_width is None:
            return None
        return abs(self.estimate) > self.half_width

    @property
    def p_value(self) -> float | None:
        """Two-sided p-value of the t test of a difference of 0; None without an interval or
        with a standard error of 0."""
        if self.half_width is None or self.stderr is None or self.stderr <= 0 or self.df is None:
            return None
        return min(1.0, 2.0 * t_cdf(-abs(self.estimate) / self.stderr, self.df))


def welch_difference(a: Sample, b: Sample, confidence: float = CONFIDENCE) -> Difference:
    """The difference of two means and its confidence interval (Welch–Satterthwaite).

    Welch, because gateways differ in variance (Table II: Tyk's std dev is 4× Kong's).
    """
    estimate = a.mean - b.mean
    if a.n < 2 or b.n < 2:
        return Difference(estimate, None)
    va, vb = a.stddev**2 / a.n, b.stddev**2 / b.n
    se2 = va + vb
    if se2 == 0.0:
        return Difference(estimate, 0.0, float(a.n + b.n - 2), stderr=0.0)
    df = se2 * se2 / (va * va / (a.n - 1) + vb * vb / (b.n - 1))
    se = math.sqrt(se2)
    return Difference(estimate, t_critical(df, confidence) * se, df, stderr=se)


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float = CONFIDENCE,
    bounds: tuple[float, float] | None = None,
) -> Difference:
    """Mean of ``a[i] - b[i]`` and its confidence interval (paired t): repetitions run in
    the same round share the machine's state, so pairing them removes that noise.
    ``bounds``: the values the difference can take (:attr:`Difference.bounds`).

    No interval (``half_width`` None) with a single pair, nor when every pair differs by
    the same amount (to :data:`SAME_DIFFERENCE` of the values), whatever their number. A spread of 0 does not show the run has no
    noise: the per-repetition scores are made of readings the load engine rounds (Gatling's
    whole milliseconds) and raised to its resolution, so identical differences say the noise
    is below what those readings can show, not that it is 0; a zero-width interval would call
    any difference, however small, larger than the noise (decision: docs/scoring.md, "Is the
    leader's lead real?")."""
    if len(a) != len(b):
        raise ValueError(f"paired samples need the same length, got {len(a)} and {len(b)}")
    diffs = Sample.of([x - y for x, y in zip(a, b, strict=True)])
    df = float(diffs.n - 1) if diffs.n > 1 else None
    scale = max(1.0, *(abs(v) for v in (*a, *b)))
    if diffs.n < 2 or diffs.stddev <= SAME_DIFFERENCE * scale:
        return Difference(diffs.mean, None, df, bounds)
    se = diffs.stddev / math.sqrt(diffs.n)
    return Difference(diffs.mean, diffs.ci_half_width, df, bounds, se)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of ``p_values`` tested together (a family), in their order:
    an adjusted p below ``1 - CONFIDENCE`` rejects its hypothesis with the family's error rate
    kept at that level. A test without a p-value (None: no usable interval) stays None, and
    still counts in the family's size, as a test that rejects nothing."""
    m = len(p_values)
    out: list[float | None] = [None] * m
    running = 0.0
    for rank, (p, i) in enumerate(sorted((p, i) for i, p in enumerate(p_values) if p is not None)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


__all__ = [
    "CONFIDENCE",
    "Difference",
    "Sample",
    "holm",
    "paired_difference",
    "regularized_incomplete_beta",
    "t_cdf",
    "t_critical",
    "t_quantile",
    "welch_difference",
]
