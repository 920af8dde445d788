"""``gatebench.core.confidence`` against SciPy, the oracle (a dev-only dependency: the product
computes its Student-t quantiles with the standard library, see the module's docstring).

The tolerances are what the implementation reaches on these grids, with a margin of about
ten; tests/unit/test_aggregate.py checks the same functions against printed 3-decimal
tables."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import special, stats

from gatebench.core.confidence import regularized_incomplete_beta, t_cdf, t_critical, t_quantile

# Whole and fractional degrees of freedom (Welch's test gives fractional ones).
DFS = [1, 1.2, 1.5, 2, 2.5, 3, 3.7, 4, 5, 6.4, 8, 10, 13.3, 20, 30, 50, 100, 300, 1000, 1e4, 1e5]
TAIL_PS = [float(p) for p in np.round(np.linspace(0.55, 0.9995, 40), 6)] + [0.9999]


def test_the_critical_values_match_scipy() -> None:
    for df in [*range(1, 201), 2.5, 7.3, 17.9, 41.05]:
        expected = stats.t.ppf(0.975, df)
        assert t_critical(df) == pytest.approx(expected, rel=1e-11, abs=0), df


def test_quantiles_match_scipy_in_both_tails() -> None:
    for p, df in itertools.product(TAIL_PS, DFS):
        expected = float(stats.t.ppf(p, df))
        assert t_quantile(p, df) == pytest.approx(expected, rel=1e-9, abs=0), (p, df)
        assert t_quantile(1.0 - p, df) == pytest.approx(-expected, rel=1e-9, abs=0), (p, df)


def test_quantiles_near_the_median_match_scipy_absolutely() -> None:
    # 1 - tail cancels near p = 0.5: relative accuracy drops, the absolute error stays tiny.
    for k, df in itertools.product(range(1, 9), DFS):
        p = 0.5 + 10.0**-k
        assert t_quantile(p, df) == pytest.approx(float(stats.t.ppf(p, df)), abs=1e-5), (p, df)


def test_the_cdf_matches_scipy() -> None:
    xs = [float(x) for x in np.linspace(-40, 40, 81)] + [1e-3, -1e-3, 1e-5]
    for x, df in itertools.product(xs, DFS):
        assert t_cdf(x, df) == pytest.approx(float(stats.t.cdf(x, df)), abs=1e-8), (x, df)


def test_the_incomplete_beta_matches_scipy() -> None:
    grid = itertools.product(
        [1e-6, 0.01, 0.2, 0.5, 0.8, 0.99, 1 - 1e-6], [0.5, 1, 2.5, 10, 100], [0.5, 1, 3, 50, 500]
    )
    for x, a, b in grid:
        expected = float(special.betainc(a, b, x))
        assert regularized_incomplete_beta(x, a, b) == pytest.approx(expected, abs=1e-12)


def test_holm_adjusts_a_family_of_p_values() -> None:
    from gatebench.core.confidence import holm

    assert holm([]) == []
    assert holm([0.04, 0.01, None]) == [pytest.approx(0.08), pytest.approx(0.03), None]
    assert holm([0.03, 0.04]) == [pytest.approx(0.06), pytest.approx(0.06)]  # kept monotone
    assert holm([0.6, 0.5]) == [1.0, 1.0]


def test_the_p_value_of_a_difference_is_the_t_tests() -> None:
    from gatebench.core.confidence import paired_difference

    a, b = [10.0, 12.0, 11.0, 10.5], [9.0, 10.0, 10.5, 10.0]
    d = paired_difference(a, b)
    expected = stats.ttest_rel(a, b).pvalue
    assert d.p_value == pytest.approx(expected, rel=1e-8)


def test_a_paired_difference_with_no_spread_has_no_interval() -> None:
    """Every repetition gave the same difference: no measure of noise, not a zero-width
    interval that calls any difference real (at any number of repetitions)."""
    from gatebench.core.confidence import paired_difference

    for n in (2, 3, 10):
        d = paired_difference([100.0] * n, [96.296] * n, bounds=(-100.0, 100.0))
        assert d.estimate == pytest.approx(3.704)
        assert (d.half_width, d.significant, d.p_value, d.low) == (None, None, None, None)
    # float rounding in equal differences is no spread either
    d = paired_difference([100.0, 100.0], [96.29629629629629, 96.2962962962963])
    assert d.half_width is None
