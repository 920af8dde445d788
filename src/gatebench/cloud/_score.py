"""The score step of the cloud path: a run's stored measurements → scores in the store, the
BigQuery rows as newline-delimited JSON in the runs bucket, and the run's outcome.

The workflow then loads the rows file into BigQuery (a load job: free, atomic, idempotent by
job id). ``done`` when every (target, workload, repetition) the plan asked for was measured,
``partial`` when some were, an error when none was.
"""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Protocol

from gatebench.cloud._objects import NothingMeasured, RequestError, rows_object
from gatebench.core.errors import Problem
from gatebench.core.model import RunKind, RunRecord, plan_targets
from gatebench.core.report import flat_rows, measurement_rows, score_run
from gatebench.core.trust import left_out_of
from gatebench.kinds._live._report import is_live_run
from gatebench.store import ResultStore


class RowsSink(Protocol):
    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = ...) -> None: ...

    def read_optional(self, bucket: str, name: str) -> bytes | None: ...

    def names(self, bucket: str, prefix: str) -> list[str]: ...

    def open_optional(self, bucket: str, name: str) -> BinaryIO | None: ...


def expected_keys(run: RunRecord) -> set[str]:
    """``target:workload:repetition`` of every phase the plan measures (not of the gateways
    it left out before the run: ``environment.left_out``)."""
    plan = run.plan or {}
    left = left_out_of(run.environment)
    targets = [t for t in plan_targets(plan) if t not in left]
    workloads = [w.get("name") for w in plan.get("workloads") or [] if isinstance(w, dict)]
    repetitions = int(plan.get("repetitions") or 0)
    return {f"{t}:{w}:{r}" for t in targets for w in workloads for r in range(1, repetitions + 1)}


def _capacity_outcome(
    store: ResultStore, run_id: str, sink: RowsSink, runs_bucket: str
) -> tuple[str, list[dict[str, Any]]] | None:
    from gatebench.cloud._capacity import capacity_outcome

    return capacity_outcome(store, run_id, sink, runs_bucket)


def finish_run(
    store: ResultStore,
    sink: RowsSink,
    runs_bucket: str,
    run_id: str,
    *,
    meter_wait_s: float = 0.0,
) -> dict[str, Any]:
    """Score the run, write its rows, and say how it ended. A scale or change-under-load run
    stores its results instead (``cloud._live.finish_live_run``, waiting up to
    ``meter_wait_s`` for the gateway VMs' meters: their samples are its memory figures)."""
    run = store.get_run(run_id)
    if run is None:
        raise RequestError([Problem("/run_id", f"run {run_id!r} does not exist")])
    if run.kind == RunKind.CAPACITY and (
        outcome := _capacity_outcome(store, run_id, sink, runs_bucket)
    ):
        # a capacity run: its result is stored, its rows are written here
        status, capacity_rows = outcome
        text = "".join(json.dumps(row, allow_nan=False) + "\n" for row in capacity_rows)
        sink.write(runs_bucket, rows_object(run_id), text, "application/x-ndjson")
        return {
            "run_id": run_id,
            "status": status,
            "missing": [],
            "scores": {},
            "rows_uri": f"gs://{runs_bucket}/{rows_object(run_id)}",
            "rows": len(capacity_rows),
        }
    if is_live_run(run):
        from gatebench.cloud._live import finish_live_run

        return finish_live_run(store, sink, runs_bucket, run, meter_wait_s=meter_wait_s)
    measured = {m.key for m in store.measurements(run_id)}
    if not measured:
        raise NothingMeasured([Problem("/run_id", f"run {run_id!r} has no measurement to score")])
    report = score_run(store, run_id)
    rows = measurement_rows(report) + flat_rows(report)
    text = "".join(json.dumps(row, allow_nan=False) + "\n" for row in rows)
    sink.write(runs_bucket, rows_object(run_id), text, "application/x-ndjson")
    missing = sorted(expected_keys(run) - measured)
    split = any("partial" in m.flags for m in store.measurements(run_id))  # a tester failed
    return {
        "run_id": run_id,
        "status": "partial" if missing or split else "done",
        "missing": missing[:50],
        "scores": {g.target: g.score for g in report.summary.scores.gateways},
        "rows_uri": f"gs://{runs_bucket}/{rows_object(run_id)}",
        "rows": len(rows),
    }
