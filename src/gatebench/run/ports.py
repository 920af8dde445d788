"""The ports a run reaches its machine through: what the stages need from wherever the run's
processes run, said once here and implemented by each adapter.

A stage never starts a process itself: it asks ``ctx.machine`` (a :class:`Machine`) for a load
engine, a provisioner, the backend. The local adapter (``gatebench.local.LocalMachine``) runs
everything on this machine; the tester VM of the cloud path (``gatebench.vm``) runs its engines
there and reaches gateways on VMs of their own. A kind of run that needs more of its machine
declares that port in its own package (``gatebench.kinds.capacity.CapacityMachine``,
``gatebench.kinds.scale.LiveMachine``) and checks the machine has it before anything runs.

The data that crosses a port (an engine's events and runs, the provisioned endpoints, the
backend's addresses) is defined here too, so kinds and adapters share one definition.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from gatebench.core.fairness import CpuPolicy
from gatebench.core.measure import PhaseResult
from gatebench.core.pinning import CpuLayout, LayoutRule
from gatebench.core.tls import GatewayTls

if TYPE_CHECKING:
    import contextlib

    from gatebench.core.ir import Api
    from gatebench.core.plan import Plan
    from gatebench.core.policies import PolicySet
    from gatebench.core.testers import MergedPhase
    from gatebench.core.workload import Phase
    from gatebench.run._journal import RunJournal

T = TypeVar("T")


@dataclass(frozen=True)
class EngineEvent:
    """Progress, for the live display: ``start`` / ``progress`` / ``end`` of a phase."""

    kind: str
    phase: int
    """The phase's index in the schedule."""
    done: int = 0
    """Requests completed so far in the phase (``progress``)."""
    at_ms: float = 0.0


@dataclass
class EngineRun:
    """What one engine invocation produced."""

    completed: list[int] = field(default_factory=list)
    exit_code: int | None = None
    crashed: bool = False
    reason: str = ""
    log_path: Path | None = None
    raw_log: Path | None = None
    control_failures: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    startup_s: float = 0.0
    """From launch to the first phase start (JVM start and simulation init for Gatling)."""


class Hooks(Protocol):
    """What an engine calls while it runs."""

    def on_event(self, event: EngineEvent) -> None: ...

    def on_phase(self, result: PhaseResult) -> None: ...

    def tick(self) -> None:
        """Called every poll (about 5 times a second): health checks, skip decisions."""


class MergingHooks(Hooks, Protocol):
    """The hooks of a load split over several testers: each phase arrives merged."""

    def on_merged(self, merged: MergedPhase) -> None: ...


class LoadEngine(Protocol):
    """A load engine as a stage sees it: bound to its machine's processes."""

    name: str

    def check(self) -> None:
        """Raise RunError saying how to install the engine when it is missing."""

    def version(self) -> str: ...

    def run(
        self,
        document: dict[str, Any],
        workdir: Path,
        hooks: Hooks,
        *,
        cpu_groups: Mapping[str, Sequence[int]] | None = None,
        target_groups: Callable[[str], Sequence[str]] = ...,
        name: str = ...,
        env: Mapping[str, str] | None = None,
        ready: Callable[[], None] | None = None,
    ) -> EngineRun:
        """Run every phase of ``document`` in order; files go into ``workdir`` under ``name``.
        ``cpu_groups`` names process groups whose CPU is accounted (the tester's own group is
        added); ``target_groups(target)`` lists the groups that make up a target (gateway +
        backend). With ``ready``, the engine starts, calls ``ready()`` while it initialises
        (provisioning), then begins the first phase."""


@dataclass
class Endpoint:
    """A target that is up: where to send requests, and what to watch."""

    target: str
    base_url: str
    pgids: tuple[int, ...] = ()
    log_path: Path | None = None
    config_dir: Path | None = None
    boot_s: float = 0.0


@dataclass
class Provisioned:
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    """Targets that could not start, with the reason (and the log tail)."""
    unsupported: dict[str, str] = field(default_factory=dict)
    """Gateways that only run on the cloud path: reported, not fatal."""


class Provisioner(Protocol):
    """Where gateways run for a benchmark: rendered, started, watched, stopped."""

    name: str
    unsupported: dict[str, str]
    """Filled by ``render``: gateways that do not run here, with the reason."""
    routes_left_out: dict[str, str]
    """Filled by ``render``: per gateway, the routes left out of its files (a summary line)."""

    def render(
        self,
        gateways: list[str],
        api: Api,
        backend_url: str,
        run_dir: Path,
        needed: Collection[str] = ...,
    ) -> dict[str, str]:
        """Render and write every gateway's configuration; returns failures (gateway → reason)."""

    def planned(self) -> dict[str, str]:
        """Base URL of every rendered gateway that will run (known before it starts)."""

    def provision(self, gateways: list[str]) -> Provisioned:
        """Start the rendered gateways; one failing does not stop the others."""

    def failure(self, target: str) -> str | None:
        """Why a running gateway stopped (reason and log tail), or None while it is up."""

    def teardown(self) -> None:
        """Stop everything this provisioner started; safe to call twice."""


class Alive(Protocol):
    def alive(self) -> bool: ...


@dataclass(frozen=True)
class RunTlsFiles:
    """The run's TLS, as the stages use it: what every gateway terminates with, and the trust
    store the load engine checks them against."""

    gateway: GatewayTls
    trust_store: Path


@dataclass(frozen=True)
class Backend:
    """The backend a run's gateways forward to, and the engine's ceiling server."""

    url: str
    """The backend's base URL: the baseline target."""
    origin: str
    """Its scheme and host: what the gateways forward to."""
    reset_url: str | None
    pid: int | None
    """The process gatebench started (None: the user's own service)."""
    layout: CpuLayout
    cpu: CpuPolicy
    """The cores every gateway is given (``gatebench.core.fairness``): its share of ``layout``."""
    ceiling: Alive | None
    ceiling_url: str | None
    origins: tuple[str, ...] = ()
    """Every replica's origin when gatebench started the backend (empty: the user's own)."""
    reset_urls: tuple[str, ...] = ()
    """Every replica's reset URL, the first's included."""
    tls: RunTlsFiles | None = None
    """The run's TLS material (a plan with ``tls``); its folder is removed at teardown."""
    ceiling_label: str = ""
    """What the engine's ceiling is measured against (a static file server)."""
    watched: tuple[Alive, ...] = ()
    """The backend's processes gatebench started that must stay up while the load runs
    (every replica but the one a planned fault kills); empty for the user's own service."""


class Watch(Protocol):
    """What the load watches besides the engine (a TLS plan's handshakes, a replica killed)."""

    notes: list[str]

    def on_event(self, kind: str, phase: int, at_ms: float) -> None: ...

    def annotate(self, m: Any, phase: Phase, result: PhaseResult) -> Any: ...

    def close(self) -> None: ...


@dataclass
class FanOut:
    """What several testers produced for one schedule."""

    runs: list[EngineRun] = field(default_factory=list)
    merged: list[MergedPhase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class StageContext(Protocol):
    """What a machine reads of the run it serves (``gatebench.run.RunContext`` is one)."""

    api: Api
    plan: Plan
    journal: RunJournal
    resources: contextlib.ExitStack
    cpu_groups: dict[str, list[int]]

    @property
    def run_dir(self) -> Path: ...

    @property
    def options(self) -> Any: ...

    def note(self, line: str) -> None: ...

    def get(self, kind: type[T]) -> T: ...


@runtime_checkable
class Machine(Protocol):
    """Where a run's processes run. Every kind's shared stages (backend, render, provision,
    load) reach it through these methods only."""

    name: str

    def session(self, run_dir: Path) -> AbstractContextManager[object]:
        """Everything the run starts belongs to this session: entered before the first stage,
        left at teardown (every process stopped), and ended by a guardian if gatebench dies
        first."""

    def engine(self, name: str) -> LoadEngine:
        """The load engine ``name`` on this machine."""

    def start_backend(self, ctx: StageContext, layout: LayoutRule) -> Backend:
        """The cores (the plan's ``cpus:`` by ``layout``), the run's TLS, the backend and the engine's
        ceiling server; what must be undone goes into ``ctx.resources``."""

    def provisioner(
        self,
        *,
        cpu: CpuPolicy,
        concurrency: int,
        policies: PolicySet | None,
        allow_missing_policies: bool,
        tls: GatewayTls | None,
        replicas: Sequence[str],
        balance: str,
    ) -> Provisioner: ...

    def fanout_problem(self, testers: int, engine: str) -> str | None:
        """Why the load cannot be split over ``testers`` generators here (None: it can)."""

    def run_testers(
        self,
        document: dict[str, Any],
        testers: int,
        run_dir: Path,
        hooks: MergingHooks,
        *,
        cpu_groups: Mapping[str, Sequence[int]],
        target_groups: Callable[[str], Sequence[str]],
        ready: Callable[[], None],
    ) -> FanOut:
        """Every phase of ``document`` split across ``testers`` generators, merged exactly."""

    def deployment_watch(
        self, plan: Plan, phases: Sequence[Phase], ports: Mapping[str, int], run_dir: Path
    ) -> Watch | None:
        """The deployment's watch over the load (None: nothing to watch for this plan)."""


__all__ = [
    "Alive",
    "Backend",
    "Endpoint",
    "EngineEvent",
    "EngineRun",
    "FanOut",
    "Hooks",
    "LoadEngine",
    "Machine",
    "MergingHooks",
    "PhaseResult",
    "Provisioned",
    "Provisioner",
    "RunTlsFiles",
    "StageContext",
    "Watch",
]
