"""The load engine's callbacks during ``load``: live progress, each measured phase stored as
it completes, the ceiling's readings, and whether each gateway is still alive.

Whether a gateway is alive is checked when each of its phases starts and ends and when each
is reported (and five times a second): a phase that overlaps its target's failure window
(from the last check that saw it alive to the first that saw it dead) is stored flagged
``target-failed``; the failure is recorded with the run (``environment.failures``) and the
target's remaining phases are skipped (the engine reads the skip file before each phase).
The backend gatebench started is checked likewise, at every check of any target: once it is
seen dead every phase that overlaps its failure is flagged ``backend-failed`` (left out of
every figure), every target's remaining phases are skipped, and the failure is recorded
(``environment.backend_failure``): what the targets answered without a backend measures
nothing of them.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from gatebench.core.measure import PhaseResult, measurement_from
from gatebench.core.model import BASELINE
from gatebench.core.stats import phase_stats
from gatebench.core.testers import MergedPhase, merged_measurement
from gatebench.core.trust import (
    BACKEND_FAILED_FLAG,
    CEILING_TARGET,
    FAILED_TARGET_FLAG,
    Ceiling,
    CeilingPoint,
)
from gatebench.core.workload import Phase, TimeLeft
from gatebench.run._journal import Progress, RunJournal
from gatebench.run.ports import Alive, EngineEvent, Provisioner, Watch


class LoadHooks:
    def __init__(
        self,
        journal: RunJournal,
        phases: dict[int, Phase],
        provisioner: Provisioner | None,
        skip_file: Path,
        total: int,
        engine_name: str = "gatling",
        ceiling_proc: Alive | None = None,
        watch: Watch | None = None,
        ceiling_label: str = "",
        backend: tuple[Alive, ...] = (),
    ) -> None:
        self.journal = journal
        journal.time_left = TimeLeft(list(phases.values()))
        self.watch = watch
        """The deployment's watch (``Machine.deployment_watch``): each phase's TLS
        handshakes and a replica fault; None for a plain plan."""
        self.phases = phases
        self.provisioner = provisioner
        self.skip_file = skip_file
        self.total = total
        self.engine_name = engine_name
        self.ceiling_proc = ceiling_proc
        self.ceiling_label = ceiling_label
        self.ceiling: Ceiling | None = None
        self.failed: set[str] = set(journal.record.target_errors)
        self.completed: set[int] = set()
        self._last: tuple[int, int, float] | None = None
        self._rate = 0.0
        self._next_check = 0.0
        self.last_alive_ms: dict[str, float] = {}
        """Target → when a check last saw it alive (epoch ms, the clock of the phases)."""
        self.failures: dict[str, dict[str, Any]] = {}
        """Targets that failed during the load → repetition and failure window."""
        self.repetition = 0
        """The repetition of the phase that started last."""
        self.backend = backend
        """The backend's processes that must stay up (``Backend.watched``)."""
        self.backend_failure: dict[str, Any] | None = None
        """When the backend was last seen alive and first seen dead, in which repetition."""
        self._backend_alive_ms = 0.0

    def on_event(self, event: EngineEvent) -> None:
        phase = self.phases.get(event.phase)
        if phase is None:
            return
        if self.watch is not None:
            self.watch.on_event(event.kind, event.phase, event.at_ms)
        if event.kind in ("start", "end"):
            if event.kind == "start":
                self.repetition = phase.repetition
            self._check(phase.target)  # before and after every phase
        now = time.monotonic()
        clock = self.journal.time_left
        if clock is not None and event.kind == "start":
            clock.started(event.phase, now)
        elif clock is not None and event.kind == "end":
            clock.ended(event.phase, now)
        if event.kind == "start":
            self._last = (event.phase, 0, now)
            self._rate = 0.0
        elif event.kind == "progress" and self._last is not None:
            last_phase, last_done, last_t = self._last
            if last_phase == event.phase and now > last_t:
                self._rate = (event.done - last_done) / (now - last_t)
            self._last = (event.phase, event.done, now)
        self.journal.display(
            Progress(
                step="loading",
                phase=phase,
                phase_number=sorted(self.phases).index(event.phase) + 1,
                phases=self.total,
                done=event.done,
                rate=self._rate,
            )
        )

    def on_phase(self, result: PhaseResult) -> None:
        self.completed.add(result.phase)
        phase = self.phases.get(result.phase)
        if phase is not None and self.journal.time_left is not None:
            seconds = (result.end_ms - result.start_ms) / 1000.0
            self.journal.time_left.ran(phase.workload, result.sample.requests, seconds)
        if phase is None or not phase.measured or result.sample.requests == 0:
            return
        self._check(phase.target)  # the phase has ended: alive now means alive throughout
        failure = self.failures.get(phase.target)
        if phase.target in self.failed and failure is None and self.backend_failure is None:
            return  # failed before the load (config, boot): no phase of it counts
        if phase.target == CEILING_TARGET:
            self._record_ceiling(phase, result)
            return
        m = measurement_from(self.journal.record.run_id, phase, result, engine=self.engine_name)
        # a phase that ended before the last check that saw its target alive is clean
        if failure is not None and result.end_ms > failure["last_alive_ms"]:
            m = replace(m, flags=(*m.flags, FAILED_TARGET_FLAG))
        down = self.backend_failure
        if down is not None and result.end_ms > down["last_alive_ms"]:
            m = replace(m, flags=(*m.flags, BACKEND_FAILED_FLAG))
        if self.watch is not None:
            m = self.watch.annotate(m, phase, result)
        self.journal.put(m)

    def _check(self, target: str) -> None:
        """Is ``target`` alive? Remembers when it was last seen alive; the first time it is
        seen dead, records the failure (repetition, window), skips its remaining phases and
        marks it failed."""
        self._check_backend()
        if target in (BASELINE, CEILING_TARGET) or target in self.failed or not self.provisioner:
            return
        now_ms = time.time() * 1000.0
        reason = self.provisioner.failure(target)
        if reason is None:
            self.last_alive_ms[target] = now_ms
            return
        self.failures[target] = {
            "repetition": self.repetition,
            "last_alive_ms": self.last_alive_ms.get(target, 0.0),
            "first_dead_ms": now_ms,
        }
        self.skip(target)
        self.journal.environment(failures=self.failures)
        self.journal.target_failed(target, reason)

    def _check_backend(self) -> None:
        """Is every watched backend process alive? The first time one is not: the failure is
        recorded and every target's remaining phases are skipped."""
        if not self.backend or self.backend_failure is not None:
            return
        now_ms = time.time() * 1000.0
        if all(p.alive() for p in self.backend):
            self._backend_alive_ms = now_ms
            return
        self.backend_failure = {
            "repetition": self.repetition,
            "last_alive_ms": self._backend_alive_ms,
            "first_dead_ms": now_ms,
        }
        self.skip(*{p.target for p in self.phases.values()})
        self.journal.environment(backend_failure=self.backend_failure)

    def on_merged(self, merged: MergedPhase) -> None:
        """A phase split across testers (gatebench.local._fanout): the measurement carries the
        merge's flags (``partial``, ``tester-bound``), each tester's share goes to
        ``testers.jsonl`` in the run folder."""
        result = merged.result
        self.completed.add(result.phase)
        phase = self.phases.get(result.phase)
        if phase is None:
            return
        self.journal.append("testers.jsonl", {"phase_id": phase.id, **merged.to_dict()})
        if not phase.measured or phase.target in self.failed or result.sample.requests == 0:
            return
        if phase.target == CEILING_TARGET:
            self._record_ceiling(phase, result)
            return
        self.journal.put(
            merged_measurement(self.journal.record.run_id, phase, merged, engine=self.engine_name)
        )

    def _record_ceiling(self, phase: Phase, result: PhaseResult) -> None:
        """The engine's ceiling for one workload, stored with the run at once."""
        if self.ceiling_proc is not None and not self.ceiling_proc.alive():
            return  # its requests failed fast: not a ceiling
        s = phase_stats(result.sample)
        base = self.ceiling or Ceiling(self.engine_name, self.ceiling_label)
        point = CeilingPoint(s.throughput, s.p50, s.requests, phase.injection.offered_rate)
        self.ceiling = replace(base, workloads={**base.workloads, phase.workload: point})
        self.journal.environment(ceiling=self.ceiling.to_dict())

    def skip(self, *targets: str) -> None:
        """Skip the remaining phases of ``targets`` (they failed)."""
        if set(targets) <= self.failed:
            return
        self.failed.update(targets)
        self.skip_file.write_text("\n".join(sorted(self.failed)) + "\n", encoding="utf-8")

    def skip_failed(self) -> None:
        """Skip every target recorded as failed so far (provision runs while the engine
        starts: the gateways that would not start are skipped before the first phase)."""
        self.skip(*self.journal.record.target_errors)

    def tick(self) -> None:
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + 0.2
        for target in sorted({p.target for p in self.phases.values()}):
            self._check(target)


__all__ = ["LoadHooks"]
