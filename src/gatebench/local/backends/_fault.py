"""A replica killed at a point of a phase, and started again when the phase ends.

The plan's ``fault`` (docs/input.md, "A replica fails") names the replica, the workload whose
measured phases carry it, and when. :class:`ReplicaFault` follows the engine's phase events:
at the start of such a phase (a gateway's, never the baseline's: it has no pool) it arms a
timer for the kill time (the phase's start, from the engine's own clock, plus the offset);
the timer kills the replica's process (SIGKILL, so its port refuses connections, as after a
crash); when the phase ends the replica is started again on the same port, so the phases
after it find the pool whole again once the gateways' health checks have seen it back.
What the kill did is computed afterwards from the phase's requests
(:func:`gatebench.core.fault.fault_impact`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gatebench.core.errors import GatebenchError
from gatebench.core.fault import fault_offsets
from gatebench.core.plan import Fault
from gatebench.core.workload import Phase
from gatebench.local._watching import PhaseTimers
from gatebench.local.backends import PlanBackend, StartedBackend, restart_replica
from gatebench.local.procs import Supervisor


@dataclass
class Kill:
    phase: int
    target: str
    port: int
    """The dead replica's port (what the loopback observer watches)."""
    at: float = 0.0
    """Epoch seconds of the kill (0: not done: the phase ended first)."""
    restarted_at: float = 0.0
    error: str = ""


@dataclass
class ReplicaFault:
    supervisor: Supervisor
    backend: PlanBackend
    fault: Fault
    phases: Sequence[Phase]
    log_dir: str | os.PathLike[str]
    on_kill: Callable[[Kill], None] = lambda kill: None
    """Called right after each kill (the loopback observer starts watching the port)."""
    kills: dict[int, Kill] = field(default_factory=dict)
    _timers: PhaseTimers = field(default_factory=PhaseTimers)

    @property
    def replica(self) -> StartedBackend:
        return self.backend.replicas[self.fault.replica - 1]

    def faulted(self, phase: Phase) -> bool:
        """Whether the fault happens in ``phase``."""
        return phase.index in fault_offsets(self.fault, [phase])

    def on_start(self, index: int, at_ms: float) -> None:
        phase = next((p for p in self.phases if p.index == index), None)
        offset = fault_offsets(self.fault, [phase]).get(index) if phase is not None else None
        if phase is None or offset is None:
            return
        kill = Kill(index, phase.target, self.replica.port)
        self.kills[index] = kill
        delay = max(0.0, at_ms / 1000.0 + offset - time.time())
        self._timers.arm(index, delay, lambda: self._kill(kill))

    def _kill(self, kill: Kill) -> None:
        with self._timers.lock:
            if not self._timers.armed(kill.phase):
                return  # the phase ended first
            replica = self.replica
            replica.process.kill()
            kill.at = time.time()
        self.on_kill(kill)

    def on_end(self, index: int) -> None:
        if self._timers.disarm(index) is None:
            return
        kill = self.kills[index]
        if not kill.at:
            kill.error = "the phase ended before the kill time"
            return
        old = self.replica
        self.supervisor.stop(old.process)
        try:
            new = restart_replica(self.supervisor, self.backend, old, self.log_dir)
        except GatebenchError as exc:
            kill.error = f"replica {self.fault.replica} did not start again: {exc}"
            return
        replicas = list(self.backend.replicas)
        replicas[self.fault.replica - 1] = new
        self.backend = PlanBackend(
            tuple(replicas),
            self.backend.url,
            self.backend.origins,
            self.backend.reset_urls,
            self.backend.mode,
            self.backend.argv_extra,
            self.backend.tls,
        )
        kill.restarted_at = time.time()

    def close(self) -> None:
        self._timers.close()


__all__ = ["Kill", "ReplicaFault"]
