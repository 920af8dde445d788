"""``score``: the tester-bound flags that need every phase, then the AGE paper's score.

Once every phase is in, a measurement whose throughput came within 20 % of the ceiling the
run demonstrated is flagged ``tester-bound`` and rewritten where it was stored
(gatebench.core.trust). Scoring is the results package's: through the store when there is one (the
scores are stored with the run), else in memory; ``scores.json`` in the run folder either
way. A run with no measured phase fails here. The cloud's score function ingests the raw logs
first (``cloud/_ingest.py``); locally each phase was ingested as it completed (``load``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from gatebench.core.errors import RunError
from gatebench.core.model import RunStatus
from gatebench.run._base import Stage
from gatebench.run._journal import RunJournal

if TYPE_CHECKING:
    from gatebench.core.report import Report
    from gatebench.run._context import RunContext, RunOutcome


class Score(Stage):
    name = "score"
    step = RunStatus.SCORING
    moves = "start"

    def run(self, ctx: RunContext) -> None:
        if not ctx.journal.measurements:
            raise RunError("no phase was measured")
        score_and_save(ctx.journal, ctx.outcome)


def score_and_save(journal: RunJournal, outcome: RunOutcome) -> None:
    """AGE scoring (the results package): through the store when there is one (the scores are
    stored with the run), else in memory; ``scores.json`` in the run folder either way."""
    from gatebench.core.report import build_report, score_run
    from gatebench.core.score import ScoreError

    journal.flag_whole_run()
    try:
        if journal.store is not None:
            report = score_run(journal.store, journal.record.run_id)
        else:
            report = build_report(journal.record, journal.measurements)
    except ScoreError as exc:
        outcome.notes.append(f"not scored: {exc}")
        return
    outcome.report = report
    save_scores(journal.run_dir, report)


def save_scores(run_dir: Path, report: Report) -> None:
    """``scores.json`` in the run folder: the scores as stored (``gatebench score`` writes it
    again when it scores the run with another profile)."""
    documents = report.summary.scores.to_documents()
    (run_dir / "scores.json").write_text(
        json.dumps(documents, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


__all__ = ["Score", "save_scores", "score_and_save"]
