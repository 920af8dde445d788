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
