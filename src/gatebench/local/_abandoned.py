"""Runs left unfinished by a gatebench process that is gone (``kill -9``, a crash, a power cut).

Every local run records its owner: the process that runs it (host, PID, start time) and its
folder (``RunRecord.owner``). A run that is not finished while that process is gone was
abandoned: ``gatebench runs`` shows it so at once, and the next run started in the same store
settles it. Its guardian (gatebench.local._guardian) has normally ended its processes already; what
its ledger still lists as running (the guardian died too) is ended now, and the run is
recorded ``failed`` (``partial`` when measurements were kept) at the step it was in, with the
reason, in the store and in its folder's ``run.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gatebench.core.errors import StoreError
from gatebench.core.model import RunRecord, RunStatus
from gatebench.local._guardian import LEDGER, end_groups
from gatebench.local.procs import process_gone
from gatebench.store import ResultStore
from gatebench.store._disk import Reserve


def abandoned(run: RunRecord) -> bool:
    """Not finished, and the process that ran it is gone."""
    return not run.status.finished and run.owner is not None and process_gone(run.owner)


def settle_abandoned(store: ResultStore, limit: int = 500) -> list[str]:
    """Settle the abandoned runs among the newest ``limit`` of ``store``; returns their ids."""
    settled = []
    for run in store.list_runs(limit=limit):
        if not abandoned(run) or run.owner is None:
            continue
        folder = run.owner.get("run_dir")
        ended = end_groups(Path(folder) / LEDGER) if isinstance(folder, str) else []
        reason = (
            f"abandoned: the gatebench process that ran it (pid {run.owner.get('pid')}) ended "
            "without finishing it"
        )
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


__all__ = ["abandoned", "settle_abandoned"]
