"""Runs left unfinished by a gatebench process that is gone (``kill -9``, a crash, a power cut).

Every local run records its owner: the process that runs it (host, PID, start time) and its
folder (``RunRecord.owner``). A run that is not finished while that process is gone was
abandoned: ``gatebench runs`` shows it so at once, and the next run started in the same store
settles it. Its guardian (gatebench.local._guardian) has normally ended its processes already; what
its ledger still lists as running (the guardian died too) is ended now, and the run is
recorded ``failed`` (``partial`` when measurements were kept) at the step it was in, with the
reason, in the store and in its folder's ``run.json``. Until then every reader that can tell
(``gatebench report``, the dashboard of ``gatebench serve``) reads it through
:class:`AbandonedAsSettled`: as it will be recorded, never as a run still going.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from gatebench.core.errors import StoreError
from gatebench.core.model import RunRecord, RunStatus
from gatebench.local._guardian import LEDGER, end_groups
from gatebench.local.procs import process_gone
from gatebench.store import ResultStore
from gatebench.store._disk import Reserve


def abandoned(run: RunRecord) -> bool:
    """Not finished, and the process that ran it is gone."""
    return not run.status.finished and run.owner is not None and process_gone(run.owner)


def abandoned_reason(run: RunRecord) -> str:
    """Why an abandoned run stopped, as its record says it once settled."""
    pid = (run.owner or {}).get("pid")
    return f"abandoned: the gatebench process that ran it (pid {pid}) ended without finishing it"


def as_settled(run: RunRecord, kept: bool) -> RunRecord:
    """An abandoned run as :func:`settle_abandoned` records it (``kept``: measurements were
    kept), without writing anything."""
    return replace(
        run,
        status=RunStatus.PARTIAL if kept else RunStatus.FAILED,
        failed_step=str(run.status),
        error=abandoned_reason(run),
    )


def settle_abandoned(store: ResultStore, limit: int = 500) -> list[str]:
    """Settle the abandoned runs among the newest ``limit`` of ``store``; returns their ids."""
    settled = []
    for run in store.list_runs(limit=limit):
        if not abandoned(run) or run.owner is None:
            continue
        folder = run.owner.get("run_dir")
        ended = end_groups(Path(folder) / LEDGER) if isinstance(folder, str) else []
        reason = abandoned_reason(run)
        if ended:
            reason += f"; {len(ended)} of its processes still ran and were stopped"
        kept = bool(store.measurements(run.run_id))
        try:
            record = store.set_status(
                run.run_id,
                RunStatus.PARTIAL if kept else RunStatus.FAILED,
                failed_step=str(run.status),
                error=reason,
            )
        except StoreError:
            continue  # settled meanwhile (gatebench serve settles its own workers' runs)
        if isinstance(folder, str) and Path(folder).is_dir():
            Reserve.remove(Path(folder))
            _save(Path(folder), record)
        settled.append(run.run_id)
    return settled


def _save(folder: Path, record: RunRecord) -> None:
    tmp = folder / "run.json.tmp"
    try:
        tmp.write_text(json.dumps(record.to_dict(), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, folder / "run.json")
    except OSError:
        pass  # the store has it; a folder that cannot be written keeps its old run.json


class AbandonedAsSettled:
    """A result store whose abandoned runs read as :func:`as_settled` says (the reports, the
    dashboard's read API): finished, at the step they were in, with the reason. Everything
    else is the store's own."""

    def __init__(self, store: ResultStore) -> None:
        self.store = store

    def _read(self, run: RunRecord) -> RunRecord:
        if not abandoned(run):
            return run
        return as_settled(run, bool(self.store.measurements(run.run_id)))

    def get_run(self, run_id: str) -> RunRecord | None:
        run = self.store.get_run(run_id)
        return None if run is None else self._read(run)

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        return [self._read(r) for r in self.store.list_runs(limit=limit)]

    def unfinished_runs(self) -> list[RunRecord]:
        return [r for r in self.store.unfinished_runs() if not abandoned(r)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)  # every other read and write is the store's own


__all__ = ["AbandonedAsSettled", "abandoned", "abandoned_reason", "as_settled", "settle_abandoned"]
