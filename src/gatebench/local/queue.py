"""The run queue of ``gatebench serve``: uploads run one at a time, each in a worker process.

A checked upload is saved under ``<results>/uploads/<run-id>/`` and waits its turn (at most
``max_queued`` runs wait: :class:`QueueFull`, which the server answers 429 with
``Retry-After``); the queue's thread then starts ``python -m gatebench.local.worker`` (the same runner as
``gatebench run``, writing to the same store) and reads its progress lines for the live
status. Stopping the queue (Ctrl-C or SIGTERM to ``gatebench serve``) drops the runs still
waiting and sends SIGTERM to the worker, whose runner tears down everything it started and
marks the run ``partial`` (or ``failed`` when nothing was measured).

A worker that dies without saying why (killed, a crash before the runner started) leaves
its run recorded as ``failed`` with the worker log's last lines, never stuck ``loading``.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gatebench.core.errors import RunError
from gatebench.core.model import RunRecord, RunStatus, local_run_id
from gatebench.core.report import run_summary
from gatebench.kinds.request import CheckedUpload, RunRequest
from gatebench.local.procs import ManagedProcess, Supervisor, stop_processes_below
from gatebench.store import ResultStore


class QueueFull(RunError):
    """The run queue holds its limit of waiting runs (the server answers 429)."""

    def __init__(self, waiting: int, limit: int) -> None:
        self.waiting = waiting
        self.limit = limit
        super().__init__(
            f"the run queue is full: {waiting} run{'s are' if waiting != 1 else ' is'} waiting "
            f"(the limit is {limit}, --max-queued); try again once one has started"
        )


@dataclass
class QueuedRun:
    """A run waiting for its turn. It keeps what its worker and the read API need (the
    upload's name, its run request, its record), not the upload itself: the bytes are in
    ``spec_path`` and the parsed description would hold tens of MB per waiting run."""

    run_id: str
    name: str
    request: RunRequest
    spec_path: Path
    spec_uri: str
    folder: Path
    summary: RunRecord
    """The run as the runner will record it, for the time before it does."""
    created_at: float = field(default_factory=time.time)
    progress: dict[str, Any] | None = None
    process: ManagedProcess | None = None
    exit_code: int | None = None

    def record(self) -> RunRecord:
        return self.summary


def _record_of(upload: CheckedUpload, run_id: str, spec_uri: str, created_at: float) -> RunRecord:
    plan = upload.run_plan
    return RunRecord(
        run_id=run_id,
        spec_uri=spec_uri,
        spec_sha256=upload.sha256,
        created_at=created_at,
        updated_at=created_at,
        title=upload.api.title,
        gateways=list(plan.gateways),
        workloads=upload.summary()["workloads"],
        plan=json.loads(json.dumps(plan.to_dict())),
        environment={"quick": upload.request.quick},
        kind=upload.request.kind,
    )


class RunQueue:
    """One run at a time; tells the read API what waits and how the running one goes (the
    dashboard's ``LiveRuns``)."""

    def __init__(
        self,
        store: ResultStore,
        store_location: str,
        results_dir: Path,
        *,
        python: str = sys.executable,
        max_queued: int = 10,
        stop_timeout: float = 60.0,
        sweep: bool = False,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.store = store
        self.store_location = store_location
        self.results_dir = Path(results_dir)
        self.python = python
        self.max_queued = max_queued
        """Runs that may wait at once (the running one not counted); more are refused."""
        self.stop_timeout = stop_timeout
        self.sweep_leftovers = sweep
        """After each worker, stop whatever it left below this process (see become_subreaper)."""
        self.log = log
        self._pending: collections.deque[QueuedRun] = collections.deque()
        self._active: QueuedRun | None = None
        self._ids: set[str] = set()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._supervisor = Supervisor()
        """Starts the workers (own session, log file, killed with this process: see procs)."""

    # -- submitting ------------------------------------------------------------------------

    def submit(
        self, upload: CheckedUpload, *, spec_uri: str | None = None, spec_path: Path | None = None
    ) -> QueuedRun:
        """Save the upload (unless ``spec_path`` holds it already) and queue its run;
        :class:`QueueFull` when ``max_queued`` runs are waiting already."""
        with self._cond:
            if self._stopping:
                raise RunError("the server is stopping; no new run is accepted")
            self._check_room()
            run_id = self._new_id(upload.sha256)
            folder = self.results_dir / "uploads" / run_id
            folder.mkdir(parents=True, exist_ok=True)
            if spec_path is None:
                spec_path = folder / upload.name
                spec_path.write_bytes(upload.data)
            spec_uri = spec_uri or str(spec_path.resolve())
            created_at = time.time()
            job = QueuedRun(
                run_id=run_id,
                name=upload.name,
                request=upload.request,
                spec_path=spec_path.resolve(),
                spec_uri=spec_uri,
                folder=folder,
                summary=_record_of(upload, run_id, spec_uri, created_at),
                created_at=created_at,
            )
            self._pending.append(job)
            self._ids.add(run_id)
            self._cond.notify_all()
        self.log(f"queued run {run_id} ({upload.name}, position {self.position(run_id)})")
        return job

    def check_room(self) -> None:
        """:class:`QueueFull` unless one more run may wait (an upload is refused before it
        is read or stored; :meth:`submit` checks again)."""
        with self._cond:
            self._check_room()

    def _check_room(self) -> None:
        if len(self._pending) >= self.max_queued:
            raise QueueFull(len(self._pending), self.max_queued)

    def _new_id(self, sha256: str) -> str:
        base = local_run_id(sha256)
        run_id, n = base, 1
        while run_id in self._ids or self.store.get_run(run_id) is not None:
            n += 1
            run_id = f"{base}-{n}"
        return run_id

    def position(self, run_id: str) -> int | None:
        """1 for the next run to start, 2 after it, ...; None when not waiting."""
        with self._cond:
            for index, job in enumerate(self._pending):
                if job.run_id == run_id:
                    return index + 1
        return None

    # -- what waits, and how the running one goes --------------------------------------------

    def queued_runs(self) -> list[dict[str, Any]]:
        """Newest first: the last run queued, ..., the next to start, then the one starting
        (until the runner has recorded it in the store)."""
        with self._cond:
            pending = list(self._pending)
            active = self._active
        out = [
            run_summary(job.record()) | {"status": "queued", "queue_position": index + 1}
            for index, job in enumerate(pending)
        ]
        out.reverse()
        if active is not None and self.store.get_run(active.run_id) is None:
            out.append(run_summary(active.record()) | {"progress": active.progress})
        return out

    def live_status(self, run_id: str) -> dict[str, Any] | None:
        with self._cond:
            active = self._active
        if active is not None and active.run_id == run_id:
            return {"progress": active.progress}
        position = self.position(run_id)
        return None if position is None else {"status": "queued", "queue_position": position}

    # -- running ---------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="gatebench-run-queue", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                job = self._pending.popleft()
                self._active = job
            try:
                self._run(job)
            except Exception as exc:  # the queue must outlive one broken run
                self.log(f"run {job.run_id}: the queue could not run it: {exc}")
                self._settle(job, f"the server could not start the run: {exc}")
            finally:
                with self._cond:
                    self._active = None
                    self._cond.notify_all()

    def worker_argv(self, job: QueuedRun) -> list[str]:
        argv = [
            self.python,
            "-m",
            "gatebench.local.worker",
            "--spec",
            str(job.spec_path),
            "--name",
            job.name,
            "--spec-uri",
            job.spec_uri,
            "--run-id",
            job.run_id,
            "--results",
            str(self.results_dir),
            "--store",
            self.store_location,
        ]
        request = job.request
        if request.quick:
            argv.append("--quick")
        if request.gateways is not None:
            argv += ["--gateways", ",".join(request.gateways) or "none"]
        if request.entry is not None:
            argv += ["--entry", request.entry]
        if request.kind != "fixed":
            argv += ["--kind", request.kind]
        return argv

    def _run(self, job: QueuedRun) -> None:
        log_path = job.folder / "worker.log"
        self.log(f"starting run {job.run_id}")
        # its own session: Ctrl-C in the terminal reaches the server only
        process = self._supervisor.start(
            "worker", self.worker_argv(job), log_path=log_path, stdout_pipe=True
        )
        with self._cond:
            job.process = process
            stopping = self._stopping
        if stopping:  # shutdown began between popleft and the start
            self._supervisor.stop(process, self.stop_timeout)
        self._read_progress(job, process.stdout)
        job.exit_code = process.wait()
        self._supervisor.stop(process)  # nothing left of its group
        self.log(f"run {job.run_id}: worker exited with code {job.exit_code}")
        if self.sweep_leftovers:
            self.sweep(job.run_id)
        self._settle(job, _tail(log_path) or f"the worker exited with code {job.exit_code}")

    def _read_progress(self, job: QueuedRun, stream: IO[bytes]) -> None:
        for raw in stream:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "progress":
                event.pop("event")
                job.progress = event

    def _settle(self, job: QueuedRun, reason: str) -> None:
        """Make sure the run is recorded as finished once its worker is gone."""
        run = self.store.get_run(job.run_id)
        if run is None:
            self.store.create_run(job.record())
            self.store.set_status(
                job.run_id, RunStatus.FAILED, failed_step="received", error=reason
            )
        elif not run.status.finished:
            kept = bool(self.store.measurements(job.run_id))
            self.store.set_status(
                job.run_id,
                RunStatus.PARTIAL if kept else RunStatus.FAILED,
                failed_step=str(run.status),
                error=f"the worker stopped without finishing the run: {reason}",
            )

    def sweep(self, run_id: str, grace: float = 3.0) -> list[str]:
        """Stop every process still below this one once a worker is gone (SIGTERM, then
        SIGKILL after ``grace``; each is reaped). Normally there is none (the runner tears
        down); a worker killed mid-run can leave some. Returns what was found."""
        left = stop_processes_below(os.getpid(), grace)
        if left:
            self.log(f"run {run_id}: stopped {len(left)} leftover process(es): {', '.join(left)}")
        return left

    # -- stopping --------------------------------------------------------------------------

    def shutdown(self) -> QueuedRun | None:
        """Drop waiting runs, stop the running one (its runner tears down), join the thread.
        Returns the run that was stopped, if any."""
        with self._cond:
            self._stopping = True
            dropped = list(self._pending)
            self._pending.clear()
            active = self._active
            self._cond.notify_all()
        for job in dropped:
            self.log(f"run {job.run_id} was waiting; dropped (its upload stays in {job.folder})")
        if active is not None and active.process is not None:
            self.log(f"stopping run {active.run_id} (SIGTERM to worker {active.process.pid})")
            self._supervisor.stop(active.process, self.stop_timeout)
        if self._thread is not None:
            self._thread.join(self.stop_timeout + 10)
        return active


def _tail(path: Path, lines: int = 8) -> str:
    try:
        text = path.read_bytes()[-8192:].decode("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


__all__ = ["QueueFull", "QueuedRun", "RunQueue"]
