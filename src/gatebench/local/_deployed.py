"""The gateway as deployed, during a local run: the run's TLS material, and what the load
watches besides the engine (TLS handshakes per phase, a replica killed at a point of a phase).

The stages call three things (docs/development.md, "A run as stages"):

- :func:`prepare_tls` before the backend starts: a throwaway CA and server certificate
  (``gatebench.core.tls``) in a private folder outside the results, which the caller removes at
  teardown; what the run records about it holds no key;
- :class:`DeploymentWatch` around the load: the loopback observer (``gatebench.local._wire``)
  over every TLS target's port and the dead replica's, and the fault
  (``backends._fault``), fed the engine's phase events;
- :meth:`DeploymentWatch.annotate` on each completed phase, before it is stored: the
  phase's new and resumed handshakes, and for a phase that carried the fault its impact
  (``gatebench.core.fault``), computed from the phase's own requests in the engine's log.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gatebench.core.fault import Request, fault_impact
from gatebench.core.measure import PhaseResult
from gatebench.core.model import BASELINE, Measurement
from gatebench.core.plan import Plan
from gatebench.core.simlog import RequestRecord, RunHeader, SimLogReader
from gatebench.core.tls import (
    TRUST_P12,
    GatewayTls,
    describe,
    make_run_certificates,
    write_tls_folder,
)
from gatebench.core.trust import CEILING_TARGET
from gatebench.core.workload import Phase
from gatebench.local._watching import PhaseWatch
from gatebench.local._wire import LoopbackObserver, WireUnavailable, open_observer
from gatebench.local.backends import BackendTls, PlanBackend
from gatebench.local.backends._fault import Kill, ReplicaFault
from gatebench.local.procs import Supervisor

ATTEMPTS_BEFORE_S = 0.5
"""Connection attempts this long before the kill are watched too (clock skew between the
engine's phase start and this process)."""


@dataclass(frozen=True)
class RunTls:
    folder: Path
    gateway: GatewayTls
    backend: BackendTls
    trust_store: Path
    record: dict[str, Any]
    """What the run records: key type, the certificate's fingerprint, hosts, expiry."""


def prepare_tls(plan: Plan, parent: str | os.PathLike[str] | None = None) -> RunTls | None:
    """The run's TLS (None for a plan without ``tls``); remove ``folder`` at teardown
    (``gatebench.core.tls.remove_tls_folder``)."""
    if plan.tls is None:
        return None
    certs = make_run_certificates(plan.tls.key)
    folder = write_tls_folder(certs, parent)
    return RunTls(
        folder=folder,
        gateway=GatewayTls(
            str(folder),
            key_type=plan.tls.key,
            http2=plan.tls.http2,
            resumption=plan.tls.resumption,
        ),
        backend=BackendTls(folder, http2=plan.tls.http2, resumption=plan.tls.resumption),
        trust_store=folder / TRUST_P12,
        record={**describe(certs), "http2": plan.tls.http2, "resumption": plan.tls.resumption},
    )


@dataclass
class DeploymentWatch(PhaseWatch):
    """What the load watches for a TLS plan or a fault; a no-op for a plain plan."""

    supervisor: Supervisor
    plan: Plan
    backend: PlanBackend
    phases: Sequence[Phase]
    target_ports: Mapping[str, int]
    """Each target's TLS port (gateways and the baseline), for the handshakes."""
    log_dir: Path
    engine_dir: Path
    """Where the engine writes its log (its ``*-results/*/simulation.log``)."""
    notes: list[str] = field(default_factory=list)
    observer: LoopbackObserver | None = None
    fault: ReplicaFault | None = None
    started_ms: dict[int, float] = field(default_factory=dict)

    def start(self) -> None:
        watch_ports = tuple(self.target_ports.values()) if self.plan.tls is not None else ()
        dead: tuple[int, ...] = ()
        if self.plan.fault is not None and len(self.backend.replicas) >= self.plan.fault.replica:
            self.fault = ReplicaFault(
                self.supervisor, self.backend, self.plan.fault, self.phases, self.log_dir
            )
            dead = (self.fault.replica.port,)
        if watch_ports or dead:
            try:
                self.observer = open_observer(watch_ports, dead)
            except WireUnavailable as exc:
                self.notes.append(
                    f"TLS handshakes and connection attempts to a killed replica were not "
                    f"observed: {exc}"
                )

    def on_event(self, kind: str, phase: int, at_ms: float) -> None:
        self.follow(kind, phase, at_ms)

    def annotate(self, measurement: Measurement, phase: Phase, result: PhaseResult) -> Measurement:
        """The measurement with the phase's handshakes and the fault's impact, where known."""
        changes: dict[str, Any] = {}
        port = self.target_ports.get(phase.target)
        seen = (
            None if port is None or self.plan.tls is None else self.phase_handshakes(result, port)
        )
        if seen is not None:
            changes.update(tls_new=seen[0], tls_resumed=seen[1])
        kill = self.fault.kills.get(phase.index) if self.fault is not None else None
        if kill is not None:
            changes["fault"] = self._impact(kill, phase, result)
        return dataclasses.replace(measurement, **changes) if changes else measurement

    def _impact(self, kill: Kill, phase: Phase, result: PhaseResult) -> dict[str, Any]:
        if kill.error or not kill.at:
            return {"error": kill.error or "the replica was not killed"}
        requests = self._requests(phase)
        attempts = (
            self.observer.attempts_to(kill.port, kill.at - ATTEMPTS_BEFORE_S)
            if self.observer is not None
            else None
        )
        probers = {p.target for p in self.phases} - {BASELINE, CEILING_TARGET}
        impact = fault_impact(requests, kill.at, result.end_ms / 1000.0, attempts, len(probers))
        return {**impact.to_dict(), "replica": self.plan.fault.replica if self.plan.fault else 0}

    def _requests(self, phase: Phase) -> list[Request]:
        """The phase's requests, from the engine's log as far as it is written (the engine
        reports a phase once all its records are on disk)."""
        logs = sorted(self.engine_dir.glob("*-results/*/simulation.log"))
        if not logs:
            return []
        reader = SimLogReader()
        start_ms = 0
        out: list[Request] = []
        with logs[-1].open("rb") as fh:
            while chunk := fh.read(1 << 20):
                for record in reader.feed(chunk):
                    if isinstance(record, RunHeader):
                        start_ms = record.start_ms
                    elif isinstance(record, RequestRecord) and record.name == phase.id:
                        out.append(
                            Request(
                                (start_ms + record.start) / 1000.0,
                                (start_ms + record.end) / 1000.0,
                                record.ok,
                            )
                        )
        return out


__all__ = ["DeploymentWatch", "RunTls", "prepare_tls"]
