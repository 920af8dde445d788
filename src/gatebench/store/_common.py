"""What both adapters share: name checks, transition checks, field updates, error wording."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any, Self

from gatebench.core.errors import StoreError
from gatebench.core.model import Measurement, RunRecord, RunStatus, can_move

_IMMUTABLE_FIELDS = ("run_id", "status")
_RUN_FIELDS = tuple(f.name for f in dataclasses.fields(RunRecord))


def check_run_id(run_id: str) -> None:
    if not isinstance(run_id, str) or not run_id:
        raise StoreError(f"run id: expected a non-empty string, got {run_id!r}")
    if (
        "/" in run_id
        or run_id in (".", "..")
        or (run_id.startswith("__") and run_id.endswith("__"))
    ):
        raise StoreError(f"run id {run_id!r}: '/', '.', '..' and '__name__' are not allowed")
    if len(run_id.encode()) > 500:
        raise StoreError(f"run id {run_id[:40]!r}...: longer than 500 bytes")


def check_name(kind: str, value: str) -> None:
    if not isinstance(value, str) or not value:
        raise StoreError(f"measurement {kind}: expected a non-empty string, got {value!r}")
    if "/" in value or ":" in value:
        raise StoreError(
            f"measurement {kind} {value!r}: '/' and ':' are not allowed "
            "(they separate the key target:workload:repetition)"
        )


def check_measurement(m: Measurement) -> None:
    check_run_id(m.run_id)
    check_name("target", m.target)
    check_name("workload", m.workload)
    if not isinstance(m.repetition, int) or isinstance(m.repetition, bool) or m.repetition < 0:
        raise StoreError(
            f"measurement {m.target}:{m.workload}: repetition must be an integer >= 0, "
            f"got {m.repetition!r}"
        )


def check_target(target: str) -> None:
    if not isinstance(target, str) or not target or "/" in target or ":" in target:
        raise StoreError(f"score target {target!r}: expected a name without '/' or ':'")


def check_result(run_id: str, kind: str, key: str) -> None:
    check_run_id(run_id)
    for label, value in (("kind", kind), ("key", key)):
        if not isinstance(value, str) or not value or "/" in value or ":" in value:
            raise StoreError(
                f"result {label} {value!r}: expected a non-empty name without '/' or ':' "
                "(they separate the key kind:key)"
            )


def no_such_run(run_id: str) -> StoreError:
    return StoreError(f"run {run_id!r} does not exist")


def moved(
    run: RunRecord,
    status: RunStatus,
    failed_step: str | None,
    error: str | None,
    now: float | None = None,
) -> RunRecord:
    """The run after moving to ``status``, or StoreError naming the allowed moves."""
    status = RunStatus(status)
    if not can_move(run.status, status):
        allowed = [s.value for s in RunStatus if can_move(run.status, s)]
        why = ", ".join(allowed) if allowed else "none, the run is finished"
        raise StoreError(
            f"run {run.run_id!r}: cannot move from {run.status.value!r} to "
            f"{status.value!r} (allowed: {why})"
        )
    when = now or time.time()
    changes: dict[str, Any] = {
        "status": status,
        "updated_at": when,
        "status_times": {**run.status_times, status.value: when},
    }
    if failed_step is not None:
        changes["failed_step"] = failed_step
    if error is not None:
        changes["error"] = error
    return dataclasses.replace(run, **changes)


def updated(run: RunRecord, fields: dict[str, Any], now: float | None = None) -> RunRecord:
    """The run with ``fields`` changed, or StoreError for a field that cannot change."""
    for name in fields:
        if name in _IMMUTABLE_FIELDS:
            hint = " (use set_status)" if name == "status" else ""
            raise StoreError(f"run {run.run_id!r}: field {name!r} cannot be updated{hint}")
        if name not in _RUN_FIELDS:
            raise StoreError(
                f"run {run.run_id!r}: no field {name!r}; fields: {', '.join(_RUN_FIELDS)}"
            )
    changes = dict(fields)
    changes.setdefault("updated_at", now or time.time())
    new = dataclasses.replace(run, **changes)
    try:
        json.dumps(new.to_dict(), allow_nan=True)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"run {run.run_id!r}: a field cannot be stored: {exc}") from None
    return new


class BaseStore:
    """What every store does alike: ``set_status`` and ``update_run``, each one read, change
    and write of the run in the store's own transaction (``_change_run``), and ``close`` at
    the end of a ``with`` block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _change_run(
        self, run_id: str, what: str, change: Callable[[RunRecord], RunRecord]
    ) -> RunRecord:
        """Read run ``run_id``, write ``change(run)`` and return it, in one transaction;
        ``what``: the operation, for error messages. Raises StoreError for an unknown run."""
        raise NotImplementedError

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        failed_step: str | None = None,
        error: str | None = None,
    ) -> RunRecord:
        return self._change_run(
            run_id,
            f"moving run {run_id!r} to {RunStatus(status).value!r}",
            lambda run: moved(run, status, failed_step, error),
        )

    def update_run(self, run_id: str, **fields: Any) -> RunRecord:
        return self._change_run(
            run_id, f"updating run {run_id!r}", lambda run: updated(run, fields)
        )


def check_scores(run_id: str, scores: dict[str, dict[str, Any]]) -> None:
    for target, doc in scores.items():
        check_target(target)
        if not isinstance(doc, dict):
            raise StoreError(f"run {run_id!r}: score of {target!r} must be a mapping")
