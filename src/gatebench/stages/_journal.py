"""Where a run writes down what happens to it: ``run.json`` and ``measurements.jsonl`` in its
folder, the result store when there is one, and the live display.

Every status change and record update goes to the folder and the store at once; every
measured phase is appended to ``measurements.jsonl`` and written to the store in one block
that a Ctrl-C or SIGTERM waits for (procs.signals_held), so an interrupted run keeps the same
phases in each.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model import Measurement, RunRecord, RunStatus, can_move
from ..procs import signals_held
from ..store import ResultStore
from ..trust import ceiling_of, flag_near_ceiling
from ..workload import Phase


@dataclass(frozen=True)
class Progress:
    """What the live display shows."""

    step: str
    message: str = ""
    phase: Phase | None = None
    phase_number: int = 0
    phases: int = 0
    done: int = 0
    rate: float = 0.0


class RunJournal:
    """The record, folder, store and display of one run while it goes."""

    def __init__(
        self,
        record: RunRecord,
        run_dir: Path,
        store: ResultStore | None,
        display: Callable[[Progress], None],
    ) -> None:
        self.record = record
        self.run_dir = run_dir
        self.store = store
        self.display = display
        self.measurements: list[Measurement] = []
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "measurements.jsonl").touch()
        if store is not None:
            store.create_run(record)
        self._save()

    def _save(self) -> None:
        self.record.updated_at = time.time()
        tmp = self.run_dir / "run.json.tmp"
        tmp.write_text(json.dumps(self.record.to_dict(), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, self.run_dir / "run.json")

    def status(
        self, status: RunStatus, *, failed_step: str | None = None, error: str | None = None
    ) -> None:
        if not can_move(self.record.status, status):
            return
        self.record.status = status
        if failed_step is not None:
            self.record.failed_step = failed_step
        if error is not None:
            self.record.error = error
        self._save()
        if self.store is not None:
            self.store.set_status(self.record.run_id, status, failed_step=failed_step, error=error)
        self.display(Progress(step=str(status)))

    def update(self, **fields: Any) -> None:
        for key, value in fields.items():
            setattr(self.record, key, value)
        self._save()
        if self.store is not None:
            self.store.update_run(self.record.run_id, **fields)

    def environment(self, **entries: Any) -> None:
        """Add (or replace) entries of the record's environment."""
        self.update(environment=dict(self.record.environment, **entries))

    def target_failed(self, target: str, reason: str) -> None:
        errors = dict(self.record.target_errors)
        errors[target] = reason
        self.update(target_errors=errors)
        self.display(Progress(step="loading", message=f"{target} failed: {reason.splitlines()[0]}"))

    def put(self, m: Measurement) -> None:
        """One measured phase, in measurements.jsonl and the store: a Ctrl-C or SIGTERM waits
        until it is in both (procs.signals_held), so an interrupted run keeps the same phases
        in each."""
        with signals_held():
            self.measurements.append(m)
            with (self.run_dir / "measurements.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(m.to_dict()) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            if self.store is not None:
                self.store.put_measurement(m)

    def flag_tester_bound(self) -> None:
        """Add the ceiling's ``tester-bound`` flags now that every phase is in (they need the
        ceiling the run demonstrated: gatebench.trust.flag_near_ceiling), and write the
        measurements that changed where they were written."""
        ceiling = ceiling_of(self.record.environment)
        if ceiling is None or not ceiling.workloads:
            return
        readings = {w: p.throughput for w, p in ceiling.workloads.items()}
        flagged = flag_near_ceiling(self.measurements, readings, ceiling.share)
        changed = [m for m, old in zip(flagged, self.measurements, strict=True) if m is not old]
        if not changed:
            return
        self.measurements[:] = flagged
        tmp = self.run_dir / "measurements.jsonl.tmp"
        tmp.write_text("".join(json.dumps(m.to_dict()) + "\n" for m in flagged), encoding="utf-8")
        os.replace(tmp, self.run_dir / "measurements.jsonl")
        if self.store is not None:
            for m in changed:
                self.store.put_measurement(m)


__all__ = ["Progress", "RunJournal"]
