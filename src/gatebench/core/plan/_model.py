"""The plan as data: what ``build_plan`` returns, frozen, plain (``Plan.to_dict`` is JSON-shaped).

What each key of ``x-gatebench`` means, its default and bounds, is said once, in the models
that read it (``_document``). The parts a run uses as they are written are those models
(``Tls``, ``Infrastructure``, ``Scoring``, ``TrafficSource``, ``OtherValues``); the records here are the
parts a run needs in another shape (an injection's kind, a parameter's generator...)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from gatebench.core.errors import Problem
from gatebench.core.model import BASELINE
from gatebench.core.plan._document import (  # the bounds, and the parts kept as written
    BALANCES,
    BUILTIN_BACKENDS,
    MAX_BODY_BYTES,
    MAX_DURATION_S,
    MAX_RATE,
    MAX_REPETITIONS,
    MAX_REPLICAS,
    MAX_REQUESTS,
    MAX_STEPS,
    MAX_TESTERS,
    MAX_USERS,
    TLS_KEYS,
    Balance,
    CapacityDoc,
    TlsKey,
)
from gatebench.core.plan._document import InfrastructureDoc as Infrastructure
from gatebench.core.plan._document import OthersDoc as OtherValues
from gatebench.core.plan._document import ScoringDoc as Scoring
from gatebench.core.plan._document import TlsDoc as Tls
from gatebench.core.plan._document import TrafficDoc as TrafficSource
from gatebench.core.policies import PolicySet
from gatebench.core.thresholds import Threshold

InjectionKind = Literal["at_once", "ramp", "constant_rate", "concurrent", "sequential", "arrivals"]
GeneratorKind = Literal["constant", "list", "range", "random", "counter"]
BodyKind = Literal["none", "example", "synthesized", "binary", "multipart", "json", "text"]
BackendKind = Literal["url", "mock", "builtin"]
EngineName = Literal["gatling", "wrk"]
Connections = Literal["keep-alive", "new"]


@dataclass(frozen=True)
class Injection:
    """How requests arrive. Open models: ``at_once``, ``ramp``, ``constant_rate`` and
    ``arrivals`` (each virtual user sends one request). Closed models: ``concurrent`` (N
    users loop, each on its own connection, until ``duration`` or ``requests`` is reached)
    and ``sequential`` (one user sends ``requests`` requests back to back).

    ``arrivals`` replays a recorded arrival curve: ``counts[i]`` users arrive, evenly spaced,
    during step ``i`` of ``step`` seconds (the plan's ``scale`` and ``speed`` already
    applied: gatebench.core.plan._traffic); ``duration`` is the whole curve."""

    kind: InjectionKind
    users: int | None = None
    rate: float | None = None
    duration: float | None = None
    requests: int | None = None
    counts: tuple[int, ...] = ()
    """``arrivals``: users arriving in each step."""
    step: float | None = None
    """``arrivals``: the length of one step, seconds."""

    @property
    def expected_requests(self) -> int | None:
        """Requests the profile sends, when it is fixed in advance (None: time-bounded)."""
        if self.kind == "arrivals":
            return sum(self.counts)
        if self.kind in ("at_once", "ramp"):
            return self.users
        if self.kind == "sequential":
            return self.requests
        if self.kind == "constant_rate":
            assert self.rate is not None
            assert self.duration is not None
            return round(self.rate * self.duration)
        if self.kind == "concurrent" and self.duration is None:
            return self.requests
        return None

    @property
    def offered_rate(self) -> float | None:
        """Requests per second the profile starts whatever the target does: the open models
        (constant_rate; ramp, its users spread evenly over its duration; arrivals, on average
        over the curve). None where the target sets the pace (the closed models, a burst)."""
        if self.kind == "constant_rate":
            return self.rate
        if self.kind == "ramp" and self.users and self.duration:
            return self.users / self.duration
        if self.kind == "arrivals" and self.counts and self.step:
            return sum(self.counts) / (len(self.counts) * self.step)
        return None


@dataclass(frozen=True)
class Generator:
    """Values for one parameter or body placeholder.

    constant (``value``), list (``values`` in order, cycling; ``order: random`` picks at
    random; with ``weights``, each value drawn as often as its weight says, and ``others``
    as more values drawn uniformly: gatebench.core.plan._traffic), range (``low``..``high``
    inclusive, step 1, cycling), random (uniform integer in ``low``..``high``), counter
    (``start``, ``start+step``, ... never repeating)."""

    kind: GeneratorKind
    value: Any = None
    values: tuple[Any, ...] = ()
    low: int | None = None
    high: int | None = None
    start: int = 1
    step: int = 1
    random_order: bool = False
    weights: tuple[float, ...] = ()
    """list: how often each value is drawn, relative to the others (empty: no weights)."""
    others: OtherValues | None = None
    """list with weights: more values beyond ``values``, drawn uniformly among themselves."""


@dataclass(frozen=True)
class MultipartPart:
    name: str
    size: int | None = None
    value: Any = None
    filename: str | None = None
    content_type: str | None = None


@dataclass(frozen=True)
class BodySpec:
    kind: BodyKind
    media_type: str | None = None
    example: str | None = None
    size: int | None = None
    parts: tuple[MultipartPart, ...] = ()
    value: Any = None


@dataclass(frozen=True)
class Workload:
    name: str
    operation_id: str
    injection: Injection
    params: tuple[tuple[str, Generator], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: BodySpec = BodySpec("none")
    expect: tuple[int, ...] = ()
    timeout: float = 60.0
    pointer: str = ""

    def param(self, name: str) -> Generator | None:
        return dict(self.params).get(name)


@dataclass(frozen=True)
class Warmup:
    duration: float | None = 3.0
    requests: int | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.duration) or bool(self.requests)


@dataclass(frozen=True)
class Backend:
    kind: BackendKind
    url: str | None = None
    builtin: str | None = None
    latency: float = 0.0
    response_size: int | None = None
    workers: int | None = None
    replicas: int = 1
    balance: Balance = "round_robin"


@dataclass(frozen=True)
class Fault:
    """One backend replica killed during the measured phase of one workload, for every
    gateway and repetition (``fault:``); the replica is started again before the next phase."""

    replica: int
    workload: str
    at_s: float | None = None
    """Seconds from the start of the phase; or a fraction (0..1) of its duration:"""
    at_fraction: float | None = None
    kind: Literal["kill_replica"] = "kill_replica"

    def offset(self, phase_duration_s: float | None) -> float | None:
        """Seconds from the phase start to the kill (None: a fraction of a phase of unknown
        length)."""
        if self.at_s is not None:
            return self.at_s
        if self.at_fraction is None or phase_duration_s is None:
            return None
        return self.at_fraction * phase_duration_s


@dataclass(frozen=True)
class Auth:
    """Where credentials come from: environment variable names, never values."""

    bearer_env: str | None = None
    basic_username_env: str | None = None
    basic_password_env: str | None = None
    api_key_env: str | None = None
    jwt_private_key_env: str | None = None
    jwt_subjects: int = 1
    jwt_lifetime: float | None = None
    bearer_per_user: bool = False
    """Set by the run, never by a plan: ``bearer_env`` names a file of tokens, one a line,
    and simulated user i sends line i mod their count (the pool of subjects)."""


CpuMode = Literal["pinned", "unpinned", "explicit"]
DEFAULT_CPU_MODE: CpuMode = "pinned"
"""What ``cpus:`` is when the plan does not say: every gateway on the same share of cores,
held there (a fair fight, docs/gateways.md; docs/trust.md, "Pinned cores")."""


@dataclass(frozen=True)
class Cpus:
    """Where the gateway, the load engine and the backend run (gatebench.core.pinning):
    ``pinned`` (the gateway on a core of its own), ``unpinned`` (wherever the scheduler puts
    them), or ``explicit`` core lists per role (an empty list: that role is not pinned)."""

    mode: CpuMode = DEFAULT_CPU_MODE
    gateway: tuple[int, ...] = ()
    engine: tuple[int, ...] = ()
    backend: tuple[int, ...] = ()
    given: bool = False
    """The plan says ``cpus:`` (a kind of run may have its own default where it does not:
    a capacity search splits the cores, gatebench.core.pinning.capacity_layout)."""

    def cores(self, role: str) -> tuple[int, ...]:
        found: tuple[int, ...] = getattr(self, role)
        return found


OBJECTIVE_LATENCY_METRICS = ("p50", "p90", "p95", "p99", "mean", "max")
"""The latencies a capacity objective may bound (milliseconds, from each request's intended
start: gatebench.kinds.capacity)."""


@dataclass(frozen=True)
class Objective:
    """What "carried" means in a capacity search: every latency bound met (ms) and the error
    rate at or below ``error_pct`` (%)."""

    latency: tuple[tuple[str, float], ...] = (("p99", 50.0),)
    """(metric, maximum in ms), in the order the plan gives them."""
    error_pct: float = 0.1

    def label(self) -> str:
        """``p99 ≤ 50 ms, errors ≤ 0.1 %``."""
        parts = [f"{metric} ≤ {limit:g} ms" for metric, limit in self.latency]
        parts.append(f"errors ≤ {self.error_pct:g} %")
        return ", ".join(parts)


_SEARCH = CapacityDoc.model_construct()
"""The search's defaults, as ``capacity`` defines them."""


@dataclass(frozen=True)
class Capacity:
    """How one endpoint's capacity is searched (docs/capacity.md): an open-model constant
    arrival rate, grown by ``growth`` from ``start_rate`` until the objective breaks (at most
    ``max_rate``), then bisected until the bracket is within ``precision``, then confirmed at
    the rate found; every probe warms up for ``warmup`` (excluded) and measures for
    ``probe`` seconds (the confirmation for ``confirm``). ``repetitions`` searches per target,
    in a shuffled target order, within ``budget`` seconds in all."""

    objective: Objective = field(default_factory=Objective)
    start_rate: float = _SEARCH.start_rate
    max_rate: float = _SEARCH.max_rate
    growth: float = _SEARCH.growth
    precision: float = _SEARCH.precision
    warmup: float = _SEARCH.warmup
    probe: float = _SEARCH.probe
    confirm: float = _SEARCH.confirm
    repetitions: int = _SEARCH.repetitions
    budget: float = _SEARCH.budget
    connections: Connections = _SEARCH.connections  # type: ignore[assignment]


@dataclass(frozen=True)
class CapacityPlan:
    """The plan's ``capacity`` settings: the defaults for every workload (``x-gatebench.capacity``)
    with each workload's own overrides (``workloads[i].capacity``; ``false`` leaves it out)."""

    default: Capacity = field(default_factory=Capacity)
    workloads: tuple[tuple[str, Capacity | None], ...] = ()
    """(workload name, its settings; None: not searched), for the workloads that say more."""

    def of(self, workload: str) -> Capacity | None:
        """The settings of one workload (None: ``capacity: false``)."""
        return dict(self.workloads).get(workload, self.default)


@dataclass(frozen=True)
class Plan:
    gateways: tuple[str, ...]
    baseline: bool
    repetitions: int
    warmup: Warmup
    order: Literal["shuffled", "fixed"]
    seed: int | None
    backend: Backend
    workloads: tuple[Workload, ...]
    auth: Auth = field(default_factory=Auth)
    scoring: Scoring = field(default_factory=Scoring)
    infrastructure: Infrastructure | None = None
    thresholds: tuple[Threshold, ...] = ()
    engine: EngineName = "gatling"
    cpus: Cpus = field(default_factory=Cpus)
    warnings: tuple[Problem, ...] = field(default=(), compare=False, repr=False)
    """Located warnings about a valid plan: shown by ``gatebench plan`` and ``validate``,
    never part of the plan's data (``to_dict``)."""
    policies: PolicySet = field(default_factory=PolicySet)
    capacity: CapacityPlan | None = None
    tls: Tls | None = None
    fault: Fault | None = None
    """A backend replica killed during a phase (needs ``backend.replicas`` of 2 or more)."""
    traffic: TrafficSource | None = None
    """The recorded traffic the workloads were imported from (``gatebench import``)."""
    answers_every: int = 1
    """The engines check one answer in this many of each measured phase (``answers: {every:
    N}``; docs/trust.md, "Right answers under load")."""

    @property
    def targets(self) -> tuple[str, ...]:
        """Gateways plus ``baseline`` (no gateway) when enabled."""
        return (*self.gateways, BASELINE) if self.baseline else self.gateways

    def capacity_settings(self) -> dict[str, Capacity]:
        """Each workload's capacity settings (the plan's, or the defaults when it gives
        none), without the workloads that say ``capacity: false``."""
        section = self.capacity or CapacityPlan()
        found = {w.name: section.of(w.name) for w in self.workloads}
        return {name: settings for name, settings in found.items() if settings is not None}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self, dict_factory=_plain)
        data.pop("warnings")
        return data


def _plain(items: list[tuple[str, Any]]) -> dict[str, Any]:
    """A record's fields, the parts read as written (models) as their data."""
    return {k: v.model_dump() if isinstance(v, BaseModel) else v for k, v in items}


__all__ = [
    "BALANCES",
    "BUILTIN_BACKENDS",
    "DEFAULT_CPU_MODE",
    "MAX_BODY_BYTES",
    "MAX_DURATION_S",
    "MAX_RATE",
    "MAX_REPETITIONS",
    "MAX_REPLICAS",
    "MAX_REQUESTS",
    "MAX_STEPS",
    "MAX_TESTERS",
    "MAX_USERS",
    "OBJECTIVE_LATENCY_METRICS",
    "TLS_KEYS",
    "Auth",
    "Backend",
    "BackendKind",
    "Balance",
    "BodyKind",
    "BodySpec",
    "Capacity",
    "CapacityPlan",
    "Connections",
    "CpuMode",
    "Cpus",
    "EngineName",
    "Fault",
    "Generator",
    "GeneratorKind",
    "Infrastructure",
    "Injection",
    "InjectionKind",
    "MultipartPart",
    "Objective",
    "OtherValues",
    "Plan",
    "Scoring",
    "Tls",
    "TlsKey",
    "TrafficSource",
    "Warmup",
    "Workload",
]
