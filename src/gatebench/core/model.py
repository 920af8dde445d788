"""What a benchmark run produces, independent of where it is stored.

The same records are written to SQLite (laptop) and Firestore (cloud), and flattened into
``(run, target, workload, metric, value)`` rows for BigQuery and CSV::

    runs/{run}                                   RunRecord
    runs/{run}/measurements/{target}:{workload}:{rep}   Measurement
    runs/{run}/scores/{target}                   written by the scoring step
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from gatebench.core.metrics import COST_METRICS, METRICS
from gatebench.core.records import known_fields
from gatebench.core.resources import PhaseResources, requests_per_cpu_s

BASELINE = "baseline"
"""The target that is no gateway: the backend measured directly."""


def plan_targets(plan: Mapping[str, Any]) -> list[str]:
    """The targets of a plan as ``Plan.to_dict()`` gives it (a stored run's plan): its
    gateways, then :data:`BASELINE` when the plan measures it."""
    gateways = [str(g) for g in plan.get("gateways") or [] if g != BASELINE]
    return gateways + ([BASELINE] if plan.get("baseline") else [])


class RunKind(StrEnum):
    """The kinds of run, spelled once (``gatebench.kinds.registry`` has one package per kind)."""

    FIXED = "fixed"
    """The AGE paper's run: every workload with its own injection profile, repeated, scored."""
    CAPACITY = "capacity"
    """The highest constant arrival rate each gateway carries within the plan's objective."""
    SCALE = "scale"
    """Each gateway measured as its route table grows."""
    CHANGE = "change-under-load"
    """Each gateway's configuration changed under a constant-rate load."""


class RunStatus(StrEnum):
    RECEIVED = "received"
    PARSED = "parsed"
    RENDERED = "rendered"
    PROVISIONING = "provisioning"
    LOADING = "loading"
    SCORING = "scoring"
    DONE = "done"
    FAILED = "failed"
    PARTIAL = "partial"
    """Some targets were measured; the run stopped (Ctrl-C) or some targets failed."""

    @property
    def finished(self) -> bool:
        return self in (RunStatus.DONE, RunStatus.FAILED, RunStatus.PARTIAL)


# The order a run moves through; failed/partial may follow any unfinished step.
STATUS_ORDER = (
    RunStatus.RECEIVED,
    RunStatus.PARSED,
    RunStatus.RENDERED,
    RunStatus.PROVISIONING,
    RunStatus.LOADING,
    RunStatus.SCORING,
    RunStatus.DONE,
)


def can_move(current: RunStatus, new: RunStatus) -> bool:
    """Allowed transitions: forward along STATUS_ORDER, or to failed/partial when unfinished."""
    if current.finished:
        return False
    if new in (RunStatus.FAILED, RunStatus.PARTIAL):
        return True
    return STATUS_ORDER.index(new) > STATUS_ORDER.index(current)


def run_id_for_object(bucket: str, name: str, generation: str | int) -> str:
    """The id of the run an uploaded object starts: the same object (same generation)
    always gives the same id, so a re-delivered event cannot start a second run."""
    digest = hashlib.sha256(f"gs://{bucket}/{name}#{generation}".encode()).hexdigest()
    return f"r-{digest[:20]}"


def local_run_id(spec_sha256: str, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now if now is not None else time.time()))
    return f"{stamp}-{spec_sha256[:8]}"


@dataclass
class RunRecord:
    run_id: str
    spec_uri: str
    spec_sha256: str
    status: RunStatus = RunStatus.RECEIVED
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    title: str = ""
    gateways: list[str] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    """One summary per workload: name, operation, method, path, injection."""
    plan: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    """Versions (gateways, Gatling, JDK), machine, seed: what a reader needs to trust it."""
    failed_step: str | None = None
    error: str | None = None
    target_errors: dict[str, str] = field(default_factory=dict)
    """Targets that failed (config rejected, died mid-run) with the reason and log tail."""
    status_times: dict[str, float] = field(default_factory=dict)
    """When the run entered each status (epoch seconds): the run's history."""
    execution_id: str | None = None
    """Cloud path: the Workflows execution that owns the run (re-delivered events find it)."""
    teardown: str | None = None
    """Cloud path: ``ok`` or ``failed: reason`` once teardown has run."""
    owner: dict[str, Any] | None = None
    """Local path: the process that runs it (``host``, ``pid``, ``started``: procs.this_process)
    and its folder (``run_dir``). A run not finished whose process is gone was abandoned."""
    kind: RunKind = RunKind.FIXED
    """The kind of run (``gatebench.kinds.registry``)."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        data["kind"] = str(self.kind)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        values = known_fields(cls, data)
        values["status"] = RunStatus(values.get("status", "received"))
        values["kind"] = RunKind(values["kind"]) if "kind" in values else _kind_of_older(data)
        return cls(**values)


def _kind_of_older(data: dict[str, Any]) -> RunKind:
    """The kind of a record written before records named their kind: a capacity result or
    ``environment.run_kind``; a scale plan's ``kind``; else a fixed workload."""
    environment = data.get("environment") or {}
    if data.get("capacity") is not None or environment.get("run_kind") == "capacity":
        return RunKind.CAPACITY
    plan_kind = (data.get("plan") or {}).get("kind")
    if plan_kind in (RunKind.SCALE, RunKind.CHANGE):
        return RunKind(plan_kind)
    return RunKind.FIXED


@dataclass(frozen=True)
class Measurement:
    """One measured phase: a target (gateway or ``baseline``) running one workload once.

    Latencies are milliseconds over every request of the phase (OK and KO), computed from
    the raw per-request records, so percentiles are exact (nearest rank) at Gatling's 1 ms
    resolution. Throughput is requests completed per second of the measured phase.
    """

    run_id: str
    target: str
    workload: str
    repetition: int
    requests: int
    ok: int
    ko: int
    error_pct: float
    throughput: float
    min: float
    mean: float
    max: float
    stddev: float
    p50: float
    p90: float
    p95: float
    p99: float
    started_at: float = 0.0
    duration_s: float = 0.0
    engine: str = "gatling"
    flags: tuple[str, ...] = ()
    """``noisy`` (other processes used much CPU), ``tester-bound`` (the load generator was
    the bottleneck), ``incomplete`` (fewer requests than the workload defines), ``too-short``
    (too brief for its throughput to mean anything), ``target-failed`` (it overlaps its
    target's failure: never scored), ``engine-cold`` (the engine, still warming, spent more
    CPU per request than on the workload's other phases). Their meanings:
    ``gatebench.core.measure.FLAGS``; docs/trust.md."""
    other_cpu_pct: float | None = None
    tester_cpu_pct: float | None = None
    errors: tuple[tuple[str, int], ...] = ()
    """KO reasons and their counts (``status.find.in(200..399), but actually found 409``)."""
    gateway_cpu_s: float | None = None
    """What the phase cost (gatebench.core.resources): CPU seconds (user + system) of the
    gateway's process tree or container over the phase, and its peak resident MB; the same
    for the backend and the load engine. None: not measured (older records, the baseline's
    gateway, a user's own backend, a cloud run without its cgroup samples)."""
    gateway_rss_mb: float | None = None
    backend_cpu_s: float | None = None
    backend_rss_mb: float | None = None
    engine_cpu_s: float | None = None
    engine_rss_mb: float | None = None
    tls_new: int | None = None
    """TLS handshakes the target answered during the phase that were full (new sessions), as
    the loopback observer saw them (``gatebench.local._wire``); None: no TLS, or not observed."""
    tls_resumed: int | None = None
    """TLS handshakes of the phase that resumed a session."""
    fault: dict[str, Any] | None = None
    """What a killed backend replica did to this phase (``gatebench.core.fault.FaultImpact``), for a
    phase that carried the plan's fault; None otherwise."""
    wrong_answers: int = 0
    """Answers that were not the right answer to their request (gatebench.core.answers): counted
    in ``requests``, never in ``ok`` nor ``ko``."""
    wrong_kinds: tuple[tuple[str, int], ...] = ()
    """Wrong answers per kind (``crossed``, ``truncated``, ...), sorted by kind."""
    wrong_evidence: tuple[str, ...] = ()
    """The first few wrong answers in the engine's words: request, expected, got."""
    rate_limited: int | None = None
    """Answers that were the plan's rate limit refusing the request (429 from a gateway whose
    operation the plan rate-limits: ``Phase.refusals``): counted in ``requests``, never in
    ``ok`` nor ``ko`` (so not in ``error_pct``); None where the plan limits nothing."""
    answers_checked: bool | None = None
    """Whether the engine checked every answer of the phase: False for an engine that cannot
    (wrk) or a backend that does not sign (a user's own), None in records older than the
    check."""

    @property
    def key(self) -> str:
        return f"{self.target}:{self.workload}:{self.repetition}"

    @property
    def req_per_cpu_s(self) -> float | None:
        """Requests per second of gateway CPU (gatebench.core.resources.requests_per_cpu_s)."""
        return requests_per_cpu_s(self.requests, self.gateway_cpu_s)

    @property
    def resources(self) -> PhaseResources:
        return PhaseResources(
            self.gateway_cpu_s,
            self.gateway_rss_mb,
            self.backend_cpu_s,
            self.backend_rss_mb,
            self.engine_cpu_s,
            self.engine_rss_mb,
        )

    def figures(self) -> list[tuple[str, float | None]]:
        """Every metric, then what the phase cost (``req_per_cpu_s``, each role's CPU seconds
        and peak MB), by name, in the order the flat rows give them; None: not measured."""
        return [
            *((name, self.metric(name)) for name in METRICS),
            ("req_per_cpu_s", self.req_per_cpu_s),
            *((name, getattr(self, name)) for name in RESOURCE_FIELDS),
        ]

    def metric(self, name: str) -> float:
        if name not in METRICS:
            raise KeyError(name)
        value: float = getattr(self, name)
        return value

    def cost(self, name: str) -> float | None:
        """A cost metric (gatebench.core.metrics.COST_METRICS), None when it was not measured."""
        if name not in COST_METRICS:
            raise KeyError(name)
        value: float | None = getattr(self, name)
        return value

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["flags"] = list(self.flags)
        data["errors"] = [list(e) for e in self.errors]
        data["wrong_kinds"] = [list(e) for e in self.wrong_kinds]
        data["wrong_evidence"] = list(self.wrong_evidence)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Measurement:
        values = known_fields(cls, data)
        values["flags"] = tuple(values.get("flags") or ())
        values["errors"] = tuple((str(a), int(b)) for a, b in values.get("errors") or ())
        values["wrong_kinds"] = tuple((str(a), int(b)) for a, b in values.get("wrong_kinds") or ())
        values["wrong_evidence"] = tuple(str(e) for e in values.get("wrong_evidence") or ())
        return cls(**values)


RESOURCE_FIELDS = (
    "gateway_cpu_s",
    "gateway_rss_mb",
    "backend_cpu_s",
    "backend_rss_mb",
    "engine_cpu_s",
    "engine_rss_mb",
)
"""The Measurement fields of what a phase cost, in the order the flat rows give them
(``Measurement.figures``)."""


def flat_rows(measurements: list[Measurement]) -> list[dict[str, Any]]:
    """``(run, target, workload, repetition, metric, value)`` rows for BigQuery and CSV: every
    metric, then what the phase cost where it was measured (``req_per_cpu_s`` and each role's
    CPU seconds and peak MB), then its wrong answers where they were checked and its
    rate-limited answers where the plan limits its rate; no row for a figure not measured."""
    rows = []
    for m in measurements:
        values = [
            *m.figures(),
            ("wrong_answers", float(m.wrong_answers) if m.answers_checked else None),
            ("rate_limited", None if m.rate_limited is None else float(m.rate_limited)),
        ]
        for metric, value in values:
            if value is None:
                continue
            rows.append(
                {
                    "run_id": m.run_id,
                    "target": m.target,
                    "workload": m.workload,
                    "repetition": m.repetition,
                    "metric": metric,
                    "value": value,
                }
            )
    return rows


@runtime_checkable
class ResultStore(Protocol):
    """Where runs are kept: the port SQLite and Firestore implement (``gatebench.store``,
    whose docstring states the rules every adapter keeps)."""

    def create_run(self, run: RunRecord) -> bool:
        """Store a new run; False (and no change) when the run id already exists."""

    def get_run(self, run_id: str) -> RunRecord | None: ...

    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        *,
        failed_step: str | None = None,
        error: str | None = None,
    ) -> RunRecord:
        """Move a run to ``status`` (see ``model.can_move``); raises StoreError otherwise."""

    def update_run(self, run_id: str, **fields: Any) -> RunRecord:
        """Change other fields of a run (environment, target_errors, ...); not its id or
        status. Raises StoreError for an unknown run or field."""

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        """Newest first (by ``created_at``, then run id)."""

    def unfinished_runs(self) -> list[RunRecord]:
        """Every run not finished (not done, failed or partial), oldest first (by
        ``created_at``, then run id)."""

    def put_measurement(self, measurement: Measurement) -> None:
        """Write (or overwrite) one measurement; durable when this returns."""

    def measurements(self, run_id: str) -> list[Measurement]:
        """Sorted by target, workload, repetition."""

    def put_scores(self, run_id: str, scores: Mapping[str, Mapping[str, Any]]) -> None:
        """Replace the score documents of a run: one per target (``ScoreResult.to_documents``)."""

    def scores(self, run_id: str) -> dict[str, dict[str, Any]] | None:
        """Target → score document, or None when the run has not been scored."""

    def put_result(self, run_id: str, kind: str, key: str, doc: Mapping[str, Any]) -> None:
        """Write (or overwrite) one result of a run of another kind (``kind`` ``scale``:
        ``key`` ``nginx@100``); durable when this returns."""

    def results(self, run_id: str, kind: str) -> dict[str, dict[str, Any]]:
        """Key → document of every result of ``kind``, sorted by key (empty when none)."""
