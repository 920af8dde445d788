"""Figures as a reader rounds them: a half goes away from zero in every format (the console's
table printed 10.5 where the report printed 10, from the same mean)."""

from __future__ import annotations

import pytest

from gatebench.core.report._format import fmt_number


@pytest.mark.parametrize(
    ("value", "decimals", "text"),
    [
        (12.5, 0, "13"),
        (10.5, 0, "11"),
        (2.5, 0, "3"),
        (2.675, 2, "2.68"),
        (-2.5, 0, "-3"),
        (-0.4, 0, "0"),
        (1_234_567.5, 0, "1,234,568"),
        (10.45, 1, "10.5"),
        (99.59, 1, "99.6"),
    ],
)
def test_a_half_rounds_away_from_zero(value: float, decimals: int, text: str) -> None:
    assert fmt_number(value, decimals) == text


def test_what_is_not_a_number_is_written_as_python_writes_it() -> None:
    assert fmt_number(float("inf"), 1) == "inf"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (99.59, "99.6"),
        (99.9996, "99.9996"),  # read "100.000" when the search stopped at 3 decimals
        (99.99996, "99.99996"),
        (100 - 1e-10, "99.999999999"),  # ranked with 100 (9 decimals), never shown as it
        (100.0, "100"),
        (95.417, "95"),
    ],
)
def test_a_score_below_100_never_reads_100(value: float, text: str) -> None:
    from gatebench.core.report._format import fmt_score

    assert fmt_score(value) == text


def test_the_verdicts_decimals_show_different_scores_differently() -> None:
    from gatebench.core.report._format import score_decimals

    assert score_decimals([100.0, 84.2, 73.0]) == 0
    assert score_decimals([95.417, 94.619]) == 1
    assert score_decimals([95.417, 95.419, 12.0]) == 3
    assert score_decimals([95.4, 95.4 + 1e-12]) == 0  # equal to the rank's 9 decimals: a tie
    assert score_decimals([]) == 0
