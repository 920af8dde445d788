"""A section's figures as an earlier commit published them, for tables that set old and new
side by side.

Read from that commit's docs/benchmarks.md through git (what it published, on the machine its
section names), never measured again: the new figures beside them are this run's. A checkout
without git history, or a commit without the section, gives no earlier figures and says why.
``GATEBENCH_BENCH_BEFORE`` names another commit (``none`` leaves the earlier figures out).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEFORE_ENV = "GATEBENCH_BENCH_BEFORE"


@dataclass(frozen=True)
class Before:
    """One section's tables at one commit: each table a list of rows keyed by its header."""

    rev: str
    measured: str = ""
    """The section's "Command:" line after the command: when, and on which machine."""
    tables: list[list[dict[str, str]]] = field(default_factory=list)
    problem: str | None = None

    def table(self, index: int) -> list[dict[str, str]]:
        """Table ``index`` of the section (empty where there is none)."""
        return self.tables[index] if index < len(self.tables) else []

    def describe(self) -> str:
        if self.problem:
            return f"no earlier figures ({self.problem})"
        return f"commit {self.rev}'s docs/benchmarks.md ({self.measured})"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_section(text: str, name: str) -> tuple[str, list[list[dict[str, str]]]] | None:
    """The ``bench:name`` section of a docs/benchmarks.md: its "Command:" details and its
    markdown tables (a row padded or cut to its header's width)."""
    found = re.search(
        rf"<!-- bench:{re.escape(name)} -->(.*?)<!-- /bench:{re.escape(name)} -->", text, re.DOTALL
    )
    if found is None:
        return None
    body = found.group(1)
    command = re.search(r"^Command: `[^`]*`(?: \(part of `make bench`\))?, (.*)\.$", body, re.M)
    tables: list[list[dict[str, str]]] = []
    lines = body.splitlines()
    for i, line in enumerate(lines[:-1]):
        if not (
            line.startswith("|") and re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[i + 1].strip())
        ):
            continue
        header = _cells(line)
        rows = []
        for row_line in lines[i + 2 :]:
            if not row_line.startswith("|"):
                break
            cells = _cells(row_line)
            rows.append(dict(zip(header, cells + [""] * (len(header) - len(cells)), strict=False)))
        tables.append(rows)
    return (command.group(1) if command else "when and where not stated"), tables


def before(name: str, default_rev: str) -> Before:
    """The ``bench:name`` section at ``GATEBENCH_BENCH_BEFORE`` (or ``default_rev``)."""
    rev = os.environ.get(BEFORE_ENV) or default_rev
    if rev == "none":
        return Before(rev, problem=f"{BEFORE_ENV}=none")
    if not re.fullmatch(r"[0-9A-Za-z._/-]{1,100}", rev) or rev.startswith("-"):
        return Before(rev, problem=f"{BEFORE_ENV} is not a commit name: {rev!r}")
    try:
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:docs/benchmarks.md"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Before(rev, problem=f"git could not be run: {exc}")
    if shown.returncode != 0:
        return Before(rev, problem=(shown.stderr.strip().splitlines() or ["git failed"])[0])
    parsed = parse_section(shown.stdout, name)
    if parsed is None:
        return Before(rev, problem=f"commit {rev} has no bench:{name} section")
    measured, tables = parsed
    return Before(rev, measured=measured, tables=tables)


def side_by_side(
    before: list[dict[str, str]],
    now: list[dict[str, str]],
    keys: tuple[str, ...],
    columns: tuple[str, ...],
) -> list[str]:
    """A markdown table: per row of ``now``, its ``keys`` and each of ``columns`` as
    "before → now", from the earlier row with the same keys ("–" where there was none)."""
    lines = [
        "| " + " | ".join((*keys, *columns)) + " |",
        "|" + "---|" * (len(keys) + len(columns)),
    ]
    for row in now:
        match = [row.get(k, "") for k in keys]
        earlier = next((b for b in before if [b.get(k) for k in keys] == match), {})
        cells = [f"{earlier.get(c, '–')} → {row.get(c, '–')}" for c in columns]
        lines.append("| " + " | ".join([*match, *cells]) + " |")
    return lines


def rows_of(lines: list[str]) -> list[dict[str, str]]:
    """The rows of the first markdown table in ``lines``, as ``parse_section`` reads them."""
    parsed = parse_section("<!-- bench:t -->\n" + "\n".join(lines) + "\n<!-- /bench:t -->", "t")
    return parsed[1][0] if parsed and parsed[1] else []
