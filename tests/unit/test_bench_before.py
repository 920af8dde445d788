"""Earlier figures beside a benchmark's own (benchmarks/_before.py): read from a section as
docs/benchmarks.md holds it, matched by their keys, and absent with a reason."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # benchmarks/ ships in no wheel
from benchmarks._before import (
    BEFORE_ENV,
    before,
    parse_section,
    rows_of,
    side_by_side,
)

SECTION = """intro
<!-- bench:scale -->
## Route scale

Command: `python -m benchmarks scale` (part of `make bench`), 2026-11-27 13:28 UTC, 2 × AMD EPYC.

| gateway | routes | start, s | ko |
|---|---|---|---|
| caddy | 10,000 | 1.94 | 180 |
| varnish | 10,000 | – | did not start |

| gateway | mechanism |
|---|---|
| nginx | signal |
<!-- /bench:scale -->
<!-- bench:other -->
| gateway | routes |
|---|---|
| nginx | 1 |
<!-- /bench:other -->
"""


def test_a_section_is_read_with_its_tables_and_when_it_was_measured() -> None:
    parsed = parse_section(SECTION, "scale")
    assert parsed is not None
    measured, tables = parsed
    assert measured == "2026-11-27 13:28 UTC, 2 × AMD EPYC"
    assert len(tables) == 2
    assert tables[0][0] == {"gateway": "caddy", "routes": "10,000", "start, s": "1.94", "ko": "180"}
    assert tables[1] == [{"gateway": "nginx", "mechanism": "signal"}]
    assert parse_section(SECTION, "missing") is None


def test_each_figure_stands_beside_the_earlier_one_with_the_same_keys() -> None:
    parsed = parse_section(SECTION, "scale")
    assert parsed is not None
    now = rows_of(
        [
            "| gateway | routes | start, s | ko |",
            "|---|---|---|---|",
            "| varnish | 10,000 | 2.10 | 0 |",
            "| caddy | 10,000 | 0.91 | 0 |",
            "| envoy | 10,000 | 1.42 | 0 |",
        ]
    )
    lines = side_by_side(parsed[1][0], now, ("gateway", "routes"), ("start, s", "ko"))
    assert lines[0] == "| gateway | routes | start, s | ko |"
    assert lines[2:] == [
        "| varnish | 10,000 | – → 2.10 | did not start → 0 |",
        "| caddy | 10,000 | 1.94 → 0.91 | 180 → 0 |",
        "| envoy | 10,000 | – → 1.42 | – → 0 |",
    ]


@pytest.mark.parametrize(
    ("rev", "reason"),
    [
        ("none", f"{BEFORE_ENV}=none"),
        ("--output=/tmp/x", "is not a commit name"),
        ("no-such-commit-anywhere", "no-such-commit-anywhere"),
    ],
)
def test_no_earlier_figures_says_why(
    monkeypatch: pytest.MonkeyPatch, rev: str, reason: str
) -> None:
    monkeypatch.setenv(BEFORE_ENV, rev)
    earlier = before("scale", "6db6b76")
    assert earlier.problem is not None and reason in earlier.problem
    assert earlier.table(0) == []
    assert earlier.describe().startswith("no earlier figures (")
