"""Did a run's scores regress against a baseline? For CI (``gatebench cloud check``).

Both inputs are JSON: the workflow's result (``gcloud workflows run ... --format='value(result)'``:
``{"run_id", "status", "scores": {target: score}}``) and a baseline of the same shape (a
previous result, kept in the repository or as a CI artefact). Scores are 0–100 points; a
gateway regresses when its score drops by more than ``tolerance`` points, or disappears.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gatebench.core.errors import Problem, ProblemsError


class ResultFileError(ProblemsError):
    """A result or baseline file is not what `gatebench cloud check` reads."""


@dataclass(frozen=True)
class Finding:
    target: str
    baseline: float | None
    current: float | None
    regressed: bool

    def line(self) -> str:
        if self.current is None:
            return f"{self.target}: missing from the run (baseline {self.baseline:.1f})"
        if self.baseline is None:
            return f"{self.target}: {self.current:.1f} (new, no baseline)"
        delta = self.current - self.baseline
        mark = "REGRESSED" if self.regressed else "ok"
        return f"{self.target}: {self.current:.1f} vs {self.baseline:.1f} ({delta:+.1f}) {mark}"


def read_scores(document: Any, *, label: str) -> tuple[str | None, dict[str, float]]:
    """``(status, {target: score})`` from a workflow result (or baseline)."""
    if not isinstance(document, dict) or not isinstance(document.get("scores"), dict):
        raise ResultFileError(
            [Problem("/scores", "expected a map of target → score", source=label)]
        )
    scores: dict[str, float] = {}
    problems = []
    for target, value in document["scores"].items():
        if isinstance(value, dict):
            value = value.get("score")
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
        ):
            problems.append(
                Problem(
                    f"/scores/{target}", f"expected a score in points, got {value!r}", source=label
                )
            )
            continue
        scores[str(target)] = float(value)
    if problems:
        raise ResultFileError(problems)
    status = document.get("status")
    return (status if isinstance(status, str) else None), scores


def compare(
    baseline: dict[str, float], current: dict[str, float], tolerance: float
) -> list[Finding]:
    findings = []
    for target in sorted(set(baseline) | set(current)):
        before, now = baseline.get(target), current.get(target)
        regressed = now is None or (before is not None and before - now > tolerance)
        findings.append(Finding(target, before, now, regressed))
    return findings
