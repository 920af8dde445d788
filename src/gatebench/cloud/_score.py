"""The score step of the cloud path: a run's stored measurements → scores in the store, the
BigQuery rows as newline-delimited JSON in the runs bucket, and the run's outcome.

The workflow then loads the rows file into BigQuery (a load job: free, atomic, idempotent by
job id). ``done`` when every (target, workload, repetition) the plan asked for was measured,
``partial`` when some were, an error when none was.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from ..errors import Problem
from ..model import RunRecord
from ..report import flat_rows, measurement_rows, score_run
from ..store import ResultStore
from ._objects import RequestError


class RowsSink(Protocol):
    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = ...) -> None: ...


class NothingMeasured(RequestError):
    """The run has no measurement to score (HTTP 422 at the edge)."""


def expected_keys(run: RunRecord) -> set[str]:
    """``target:workload:repetition`` of every phase the plan measures."""
    plan = run.plan or {}
    targets = list(plan.get("gateways") or []) + (["baseline"] if plan.get("baseline") else [])
    workloads = [w.get("name") for w in plan.get("workloads") or [] if isinstance(w, dict)]
    repetitions = int(plan.get("repetitions") or 0)
    return {f"{t}:{w}:{r}" for t in targets for w in workloads for r in range(1, repetitions + 1)}


def rows_object(run_id: str) -> str:
    return f"runs/{run_id}/rows.jsonl"


def finish_run(store: ResultStore, sink: RowsSink, runs_bucket: str, run_id: str) -> dict[str, Any]:
    """Score the run, write its rows, and say how it ended."""
    run = store.get_run(run_id)
    if run is None:
        raise RequestError([Problem("/run_id", f"run {run_id!r} does not exist")])
    if run.capacity is not None:  # a capacity run: its result is stored, its rows written here
        from ._capacity import capacity_outcome

        status, capacity_rows = capacity_outcome(store, run_id)
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
