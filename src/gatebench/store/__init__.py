"""The result store port: one logical model (``gatebench.model``), two adapters.

SQLite is the embedded default (one file); Firestore is the cloud adapter. One contract
test suite runs against both. Writes are idempotent: writing the same run, measurement
(target, workload, repetition) or score again overwrites it.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from ..model import Measurement, RunRecord, RunStatus


@runtime_checkable
class ResultStore(Protocol):
    def create_run(self, run: RunRecord) -> bool:
        """Store a new run; False (and no change) when the run id already exists."""

    def get_run(self, run_id: str) -> RunRecord | None: ...

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        failed_step: str | None = None,
        error: str | None = None,
    ) -> RunRecord:
        """Move a run to ``status`` (see ``model.can_move``); raises StoreError otherwise."""

    def update_run(self, run_id: str, **fields: Any) -> RunRecord:
        """Change other fields of a run (environment, target_errors, ...)."""

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """Newest first."""

    def put_measurement(self, measurement: Measurement) -> None:
        """Write (or overwrite) one measurement; durable when this returns."""

    def measurements(self, run_id: str) -> list[Measurement]:
        """Sorted by target, workload, repetition."""

    def put_scores(self, run_id: str, scores: dict[str, Any]) -> None:
        """Write (or overwrite) the scores document of every target of a run."""

    def scores(self, run_id: str) -> dict[str, Any] | None: ...


__all__ = ["ResultStore"]
