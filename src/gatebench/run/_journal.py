"""Where a run writes down what happens to it: ``run.json`` and ``measurements.jsonl`` in its
folder, the result store when there is one, and the live display.

Every status change and record update goes to the store, then to the folder: what ``run.json``
shows, the store already holds (a ``kill -9`` between the two leaves the folder a step behind
the store, never ahead of it, and the run is settled from the store); every
measured phase is appended to ``measurements.jsonl`` and written to the store in one block
that a Ctrl-C or SIGTERM waits for (``gatebench.run._signals``), so an interrupted run keeps the same
phases in each. A write that finds the disk full is ``no space left on DIR while writing …``
(gatebench.store._disk): a measurement is then in neither place, and the space the journal held
back since the start is given up to record how the run ended (:meth:`RunJournal.finish`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gatebench.core.model import Measurement, RunRecord, RunStatus, can_move
from gatebench.core.pinning import recorded_cores
from gatebench.core.trust import ceiling_of, flag_engine_busy, flag_engine_cold, flag_near_ceiling
from gatebench.core.workload import Phase, TimeLeft
from gatebench.run._signals import signals_held
from gatebench.store import ResultStore
from gatebench.store._disk import Reserve, no_space


@dataclass(frozen=True)
class Progress:
    """What the live display shows: the step, what happens in it, and while a phase runs its
    number, requests so far and current rate; the run's time so far and the estimate of the
    time left (set by the journal: :meth:`RunJournal.display`)."""

    step: str
    message: str = ""
    phase: Phase | None = None
    phase_number: int = 0
    phases: int = 0
    done: int = 0
    rate: float = 0.0
    elapsed: float = 0.0
    """Seconds since the run started."""
    left: float | None = None
    """Estimated seconds of load left (``workload.TimeLeft``); None: not known yet."""


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
        self._show = display
        self.started = time.monotonic()
        self.time_left: TimeLeft | None = None
        """The load's estimate of its time left, while it runs (the load stage sets it)."""
        self.measurements: list[Measurement] = []
        with _writing(run_dir):
            run_dir.mkdir(parents=True, exist_ok=True)
        with _writing(run_dir / "measurements.jsonl"):
            (run_dir / "measurements.jsonl").touch()
        self.reserve = Reserve(run_dir)
        if store is not None:
            store.create_run(record)
        self._save()

    def _save(self) -> None:
        self.record.updated_at = time.time()
        tmp = self.run_dir / "run.json.tmp"
        with _writing(self.run_dir / "run.json", tmp):
            tmp.write_text(json.dumps(self.record.to_dict(), indent=1) + "\n", encoding="utf-8")
            os.replace(tmp, self.run_dir / "run.json")

    def display(self, progress: Progress) -> None:
        """Show ``progress`` with the run's time so far and, while loading, the time left."""
        now = time.monotonic()
        clock = self.time_left if progress.step == "loading" else None
        left = progress.left if clock is None else clock.left(now)
        self._show(replace(progress, elapsed=now - self.started, left=left))

    def finish(
        self, status: RunStatus, *, failed_step: str | None = None, error: str | None = None
    ) -> None:
        """The run's last status: the space held back is given up first, so that it is
        recorded on a full disk too."""
        self.reserve.release()
        self.status(status, failed_step=failed_step, error=error)

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
        if self.store is not None:
            self.store.set_status(self.record.run_id, status, failed_step=failed_step, error=error)
        self._save()
        self.display(Progress(step=str(status)))

    def update(self, **fields: Any) -> None:
        for key, value in fields.items():
            setattr(self.record, key, value)
        if self.store is not None:
            self.store.update_run(self.record.run_id, **fields)
        self._save()

    def environment(self, **entries: Any) -> None:
        """Add (or replace) entries of the record's environment."""
        self.update(environment=dict(self.record.environment, **entries))

    def target_left_out(self, target: str, reason: str, cannot: str) -> None:
        """``target`` is left out before the run: ``reason`` is its error, and the record says
        what it ``cannot`` do (``environment.left_out``), so that no report says it failed."""
        errors = dict(self.record.target_errors)
        errors[target] = reason
        left_out = dict(self.record.environment.get("left_out") or {}, **{target: cannot})
        self.update(
            target_errors=errors, environment=dict(self.record.environment, left_out=left_out)
        )
        self.display(Progress(step=str(self.record.status), message=reason.splitlines()[0]))

    def target_failed(self, target: str, reason: str) -> None:
        errors = dict(self.record.target_errors)
        errors[target] = reason
        self.update(target_errors=errors)
        self.display(Progress(step="loading", message=f"{target} failed: {reason.splitlines()[0]}"))

    def put(self, m: Measurement) -> None:
        """One measured phase, in measurements.jsonl, the store (:meth:`append`) and the run's
        list, or in none: a signal that came while it was written is delivered once the list
        holds it too (what the run ends with rewrites the file from the list)."""
        store = self.store
        with signals_held():
            self.append(
                "measurements.jsonl",
                m.to_dict(),
                also=None if store is None else lambda: store.put_measurement(m),
            )
            self.measurements.append(m)

    def put_result(self, kind: str, key: str, doc: Mapping[str, Any]) -> None:
        """A result of a kind of run that measures no workload phases (a scale point, a change
        outcome), in ``<kind>.jsonl`` and the store (:meth:`append`)."""
        store = self.store
        self.append(
            f"{kind}.jsonl",
            {"key": key, **doc},
            also=None
            if store is None
            else lambda: store.put_result(self.record.run_id, kind, key, doc),
            sort_keys=True,
        )

    def append(
        self,
        name: str,
        entry: Mapping[str, Any],
        *,
        also: Callable[[], None] | None = None,
        sort_keys: bool = False,
    ) -> None:
        """One line of JSON at the end of ``name`` in the run's folder, on disk (fsync) when
        this returns; with ``also`` (the store's write), in both or in neither: a Ctrl-C or
        SIGTERM waits until both are done (``gatebench.run._signals``), and a failure of either
        takes the line back, so an interrupted run keeps the same entries in each."""
        path = self.run_dir / name
        line = memoryview((json.dumps(entry, sort_keys=sort_keys) + "\n").encode("utf-8"))
        with signals_held(), _writing(path):
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                end = os.lseek(fd, 0, os.SEEK_END)
                try:
                    while line:
                        line = line[os.write(fd, line) :]
                    os.fsync(fd)
                    if also is not None:
                        also()
                except BaseException:
                    with contextlib.suppress(OSError):  # in neither place: as it was
                        os.ftruncate(fd, end)
                    raise
            finally:
                os.close(fd)

    def flag_whole_run(self) -> None:
        """Add the flags that compare a phase with the run's others, now that every phase is
        in: the ceiling's ``tester-bound`` (the ceiling the run demonstrated:
        gatebench.core.trust.flag_near_ceiling), ``engine-cold`` (the engine's CPU per
        request against the workload's median: gatebench.core.trust.flag_engine_cold) and
        ``engine-busy`` (the engine's pinned cores out of time: flag_engine_busy),
        and write the measurements that changed where they were written."""
        flagged = flag_engine_cold(self.measurements)
        flagged = flag_engine_busy(flagged, recorded_cores(self.record.environment))
        ceiling = ceiling_of(self.record.environment)
        if ceiling is not None and ceiling.workloads:
            flagged = flag_near_ceiling(flagged, ceiling.limits(), ceiling.share)
        changed = [m for m, old in zip(flagged, self.measurements, strict=True) if m is not old]
        if not changed:
            return
        self.measurements[:] = flagged
        tmp = self.run_dir / "measurements.jsonl.tmp"
        with _writing(self.run_dir / "measurements.jsonl", tmp):
            text = "".join(json.dumps(m.to_dict()) + "\n" for m in flagged)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.run_dir / "measurements.jsonl")
        if self.store is not None:
            for m in changed:
                self.store.put_measurement(m)


@contextlib.contextmanager
def _writing(path: Path, partial: Path | None = None) -> Iterator[None]:
    """A full disk while writing ``path`` is :class:`~gatebench.core.errors.NoSpaceLeft`; a partly
    written temporary file (``partial``) is removed."""
    try:
        yield
    except OSError as exc:
        if partial is not None:
            with contextlib.suppress(OSError):
                partial.unlink()
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise no_space(path) from None
        raise


__all__ = ["Progress", "RunJournal"]
