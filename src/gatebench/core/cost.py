"""What one cloud run costs, estimated from its plan before it runs.

A cloud run is billed for its VMs (every gateway, the backend and the tester, from creation
in the provision build to deletion in teardown), its Cloud Build minutes (provision, the load
build that waits for the tester, teardown), the Cloud Run functions it invokes, the Workflows
steps it executes (connector polling included) and the raw logs it keeps. The quantities come
from the plan (targets × repetitions × phases, each phase's length from its injection
profile) and a few stated assumptions (boot and teardown times, seconds per request); the
prices from one table, ``gatebench/core/gcp_prices.json``, which cites the pricing page of each
figure and the date it was read. Both are data: the estimate is pure arithmetic over them,
so the same plan always gives the same figures and a test can recompute each one.

Not counted (each a fraction of a cent per run, or not per run at all): Cloud NAT, network
egress, Firestore and BigQuery operations, Eventarc, Artifact Registry storage, the
deployment's standing resources, and every free tier.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from gatebench.core.capabilities import engine_warmup_s
from gatebench.core.errors import GatebenchError
from gatebench.core.model import BASELINE, plan_targets
from gatebench.core.records import fields

if TYPE_CHECKING:
    from gatebench.core.scaleplan import ScaleAsk

_MACHINE = re.compile(r"^(?P<family>[a-z0-9]+)-(?P<shape>[a-z]+)-(?P<vcpus>\d+)$")
_DEFAULT_MACHINE = "n2-standard-2"  # plan.Infrastructure's default for every role


class CostError(GatebenchError):
    """The plan asks for something the price table has no price for."""


@dataclass(frozen=True)
class CostLine:
    item: str
    quantity: float
    unit: str
    unit_price: float
    """USD per unit."""

    @property
    def usd(self) -> float:
        return self.quantity * self.unit_price

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "usd": self.usd}


@dataclass(frozen=True)
class CostEstimate:
    lines: tuple[CostLine, ...]
    load_s: float
    """The load build: every phase of every target and repetition, plus the engine's start."""
    vm_s: float
    """Each VM's billed lifetime."""
    vms: int
    region: str
    as_of: str
    notes: tuple[str, ...] = ()
    """What the plan asks that the figures do not change (a deployment's TLS and replicas)."""

    @property
    def total_usd(self) -> float:
        return sum(line.usd for line in self.lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            **fields(self, "total_usd load_s vm_s vms region"),
            "prices_as_of": self.as_of,
            "lines": [line.to_dict() for line in self.lines],
            **({"notes": list(self.notes)} if self.notes else {}),
        }


@cache
def price_table() -> dict[str, Any]:
    """``gatebench/core/gcp_prices.json``: prices, their sources and date, and the assumptions."""
    text = resources.files("gatebench.core").joinpath("gcp_prices.json").read_text("utf-8")
    table: dict[str, Any] = json.loads(text)
    return table


def machine_hourly(machine: str, table: Mapping[str, Any] | None = None) -> float:
    """List price of one machine type per hour: vCPUs and memory at its family's rates."""
    prices = (table or price_table())["prices"]
    match = _MACHINE.match(machine)
    families = prices["machine_families"]
    shapes = prices["machine_shapes"]
    if not match or match["family"] not in families or match["shape"] not in shapes:
        priced = ", ".join(f"{f}-{s}-N" for f in sorted(families) for s in sorted(shapes))
        raise CostError(f"no list price for machine type {machine!r}; priced: {priced}")
    vcpus = int(match["vcpus"])
    sizes = prices["machine_vcpus"][f"{match['family']}-{match['shape']}"]
    if vcpus not in sizes:  # the family has no such type: Compute Engine would refuse it
        listed = ", ".join(str(n) for n in sizes)
        raise CostError(
            f"no machine type {machine!r}: {match['family']}-{match['shape']}-N exists for N "
            f"in {listed}"
        )
    rates = families[match["family"]]
    return float(vcpus * rates["vcpu_hour"] + vcpus * shapes[match["shape"]] * rates["gib_hour"])


_CUSTOM_MACHINE = re.compile(r"^(?:[a-z0-9]+-)?custom-(?P<vcpus>\d+)-\d+(?:-ext)?$")
_SHARED_CORE_VCPUS = {"e2-micro": 2, "e2-small": 2, "e2-medium": 2, "f1-micro": 1, "g1-small": 1}
"""Shared-core machine types: the vCPUs the guest sees (Compute Engine's machine types page)."""


def machine_vcpus(machine: str) -> int:
    """The vCPUs a Compute Engine machine type gives its guest: ``n2-standard-2`` → 2,
    ``n2-custom-4-8192`` → 4, ``e2-medium`` → 2. A type named otherwise is refused
    (:class:`CostError`), since every gateway on it would be configured for it."""
    for pattern in (_MACHINE, _CUSTOM_MACHINE):
        match = pattern.match(machine)
        if match and int(match["vcpus"]) > 0:
            return int(match["vcpus"])
    if machine in _SHARED_CORE_VCPUS:
        return _SHARED_CORE_VCPUS[machine]
    raise CostError(
        f"cannot tell how many vCPUs machine type {machine!r} has; expected SERIES-SHAPE-VCPUS "
        "(n2-standard-2), a custom type (n2-custom-4-8192) or a shared-core type (e2-medium)"
    )


def phase_seconds(injection: Mapping[str, Any], assumptions: Mapping[str, Any]) -> float:
    """How long one phase with this injection profile lasts (without the phase overhead)."""
    request_s = float(assumptions["request_s"])
    kind = injection.get("kind")
    if injection.get("duration"):
        return float(injection["duration"])
    users = int(injection.get("users") or 1)
    requests = int(injection.get("requests") or 0)
    if kind == "sequential":
        return requests * request_s
    if kind == "concurrent":
        return math.ceil(requests / users) * request_s
    return request_s  # at_once: every user sends its one request at the same time


def phase_requests(injection: Mapping[str, Any], assumptions: Mapping[str, Any]) -> float:
    """Requests one phase sends (duration-bound profiles: users kept busy at request_s)."""
    kind = injection.get("kind")
    duration = float(injection.get("duration") or 0)
    users = int(injection.get("users") or 1)
    if kind == "constant_rate":
        return float(injection.get("rate") or 0) * duration
    if kind == "arrivals":
        return float(sum(injection.get("counts") or ()))
    if kind == "concurrent" and duration:
        bound = users * duration / float(assumptions["request_s"])
        cap = injection.get("requests")
        return float(min(bound, cap) if cap else bound)
    if kind in ("at_once", "ramp"):
        return float(users)
    return float(injection.get("requests") or 0)


def _warmup_seconds(plan: Mapping[str, Any], assumptions: Mapping[str, Any]) -> float:
    """One target's warm-up (gatebench.core.workload._warmups: one phase per workload)."""
    warmup = plan.get("warmup") or {}
    workloads = plan.get("workloads") or []
    n = len(workloads)
    overhead = float(assumptions["phase_overhead_s"])
    if not n or not (warmup.get("duration") or warmup.get("requests")):
        return 0.0
    if warmup.get("duration"):
        return float(warmup["duration"]) + n * overhead
    share = max(1, int(warmup["requests"]) // n)
    total = 0.0
    for w in workloads:
        users = int(w["injection"].get("users") or 1)
        users = min(users, share)
        total += math.ceil(share / users) * float(assumptions["request_s"]) + overhead
    return total


def _polls(duration_s: float, polling: Mapping[str, Any]) -> int:
    """Polling attempts of a Workflows connector waiting ``duration_s`` for an operation."""
    elapsed, delay, count = 0.0, float(polling["initial_delay_s"]), 0
    longest = float(polling["max_delay_s"])
    while elapsed < duration_s:
        if delay >= longest:  # every later attempt waits the longest: counted, not looped
            return count + math.ceil((duration_s - elapsed) / longest)
        elapsed += delay
        count += 1
        delay = min(delay * float(polling["multiplier"]), longest)
    return count


def _gateways(plan: Mapping[str, Any]) -> list[str]:
    return [t for t in plan_targets(plan) if t != BASELINE]


def load_seconds(
    plan: Mapping[str, Any], table: Mapping[str, Any] | None = None, *, quick: bool = False
) -> float:
    """How long the load of a plan (as ``Plan.to_dict()`` gives it) lasts: every phase of
    every target and repetition, plus the engine's start and its own warm-up (none for a
    ``quick`` run: ``core.workload.engine_warmup``)."""
    assume = (table or price_table())["assumptions"]
    gateways = _gateways(plan)
    targets = len(plan_targets(plan))
    repetitions = int(plan.get("repetitions") or 1)
    overhead = float(assume["phase_overhead_s"])
    warmup = _warmup_seconds(plan, assume)
    per_target = warmup + sum(
        phase_seconds(w["injection"], assume) + overhead for w in plan.get("workloads") or []
    )
    # A JIT gateway's first warm-up lasts longer (gatebench.core.workload: renderers.jit_warmups).
    jit = 0.0
    if warmup > 0:
        from gatebench.core.renderers import jit_warmups

        configured = float((plan.get("warmup") or {}).get("duration") or 0.0)
        jit = sum(max(0.0, s - configured) for s in jit_warmups(gateways).values())
    # The engine's own warm-up against the backend, once (gatebench.core.workload).
    warm = 0.0 if quick else engine_warmup_s(str(plan.get("engine") or "gatling"))
    engine = _warmup_seconds({**plan, "warmup": {"duration": warm}}, assume)
    return repetitions * targets * per_target + jit + engine + float(assume["engine_start_s"])


def capacity_seconds(plan: Mapping[str, Any]) -> float:
    """How long a capacity run's load lasts at most: its time budget (``capacity.budget``; the
    search stops there, docs/capacity.md), for a plan as ``Plan.to_dict()`` gives it."""
    from gatebench.core.plan import Capacity

    section = plan.get("capacity") or {}
    budget = (section.get("default") or {}).get("budget")
    return float(budget) if budget else Capacity().budget


def live_seconds(ask: ScaleAsk, gateways: int, table: Mapping[str, Any] | None = None) -> float:
    """How long the load of a scale or change-under-load run (a ``gatebench.core.scaleplan.ScaleAsk``)
    lasts on the cloud path: for every gateway and size, a start (``live_boot_s``: the gateway
    VM told ahead, its container started on the size's files, the routes probed, the idle
    memory read) and a constant-rate load (the engine's start, the warm-up, the measured
    seconds of each of the three positions); for a change, the start, the check of the new
    files (``live_check_s``) and one load."""
    assume = (table or price_table())["assumptions"]
    settings = ask.settings
    boot = float(assume["live_boot_s"])
    per_gateway: float
    engine = float(assume["engine_start_s"])
    if ask.kind == "scale":
        load = engine + settings.warmup_s + 3 * settings.duration_s
        per_gateway = len(ask.sizes) * (boot + load)
    else:
        load = engine + settings.warmup_s + settings.duration_s
        per_gateway = boot + float(assume["live_check_s"]) + load
    return gateways * per_gateway + engine


VM_LIFETIME_FACTOR = 2.0
VM_LIFETIME_MARGIN_S = 1800.0
"""A run's VMs delete themselves after (estimated VM lifetime × factor + margin): room for a
slow boot or a load slower than the estimate, never the hours a forgotten VM would cost."""


def vm_estimate_s(
    plan: Mapping[str, Any], table: Mapping[str, Any] | None = None, *, load_s: float | None = None
) -> float:
    """Each VM's estimated lifetime: the provision build, the load (``load_s`` when the caller
    knows it better: a capacity run's budget, a scale run's :func:`live_seconds`), teardown."""
    assume = (table or price_table())["assumptions"]
    load_s = load_seconds(plan, table) if load_s is None else load_s
    return max(60.0, float(assume["provision_s"]) + load_s + float(assume["teardown_s"]))


def vm_max_run_s(
    plan: Mapping[str, Any], table: Mapping[str, Any] | None = None, *, load_s: float | None = None
) -> int:
    """How long a run's VMs may live before Compute Engine deletes them (their
    ``max_run_duration``): the estimate × :data:`VM_LIFETIME_FACTOR` plus
    :data:`VM_LIFETIME_MARGIN_S`, in whole minutes."""
    seconds = vm_estimate_s(plan, table, load_s=load_s) * VM_LIFETIME_FACTOR + VM_LIFETIME_MARGIN_S
    return int(math.ceil(seconds / 60) * 60)


def raw_log_bytes_bound(plan: Mapping[str, Any], table: Mapping[str, Any] | None = None) -> float:
    """The most bytes one tester's raw log can take: every phase of every target and
    repetition (warm-ups included), a profile bounded by time at most ``raw_log_bound_rps``."""
    assume = (table or price_table())["assumptions"]
    bound_rps = float(assume["raw_log_bound_rps"])
    targets = len(plan_targets(plan))
    repetitions = int(plan.get("repetitions") or 1)
    requests = 0.0
    for w in plan.get("workloads") or []:
        injection = w["injection"]
        counted = phase_requests(injection, assume)
        duration = float(injection.get("duration") or 0)
        if duration:
            cap = injection.get("requests")
            counted = max(counted, duration * bound_rps)
            counted = min(counted, float(cap)) if cap else counted
        requests += counted
    warmup = plan.get("warmup") or {}
    warm = float(warmup.get("duration") or 0) * bound_rps + float(warmup.get("requests") or 0)
    total = targets * (repetitions * requests + warm)
    return total * float(assume["raw_log_bytes_per_request"])


def disk_gib_per_tester(plan: Mapping[str, Any], table: Mapping[str, Any] | None = None) -> int:
    """A tester VM's boot disk, whole GiB: the system and the runner image
    (``tester_system_gib``) plus twice the raw log's bound (Gatling's file and room to spare),
    at least ``boot_disk_gib`` (Container-Optimized OS's minimum)."""
    assume = (table or price_table())["assumptions"]
    needed = float(assume["tester_system_gib"]) + 2 * raw_log_bytes_bound(plan, table) / 2**30
    return max(int(assume["boot_disk_gib"]), math.ceil(needed))


def describe_vm_limits(plan: Mapping[str, Any], table: Mapping[str, Any] | None = None) -> str:
    """One line for ``gatebench plan``: when a cloud run's VMs delete themselves, and the
    tester's disk."""
    estimate = vm_estimate_s(plan, table)
    limit = vm_max_run_s(plan, table)
    return (
        f"VMs delete themselves after {limit / 60:.0f} min at most (estimated "
        f"{estimate / 60:.1f} min × {VM_LIFETIME_FACTOR:g} + {VM_LIFETIME_MARGIN_S / 60:.0f} min; "
        f"the deployment's limits.vm_lifetime caps it); tester boot disk "
        f"{disk_gib_per_tester(plan, table)} GiB"
    )


def plan_testers(plan: Mapping[str, Any]) -> int:
    """How many tester VMs a plan (as ``Plan.to_dict()`` gives it) runs."""
    infra = plan.get("infrastructure") or {}
    return max(1, int(infra.get("testers") or 1))


def machine_roles(plan: Mapping[str, Any], *, live: bool = False) -> list[tuple[str, str]]:
    """(role, machine type) of every VM a cloud run of ``plan`` makes, in the order of the
    fleet: a VM per gateway, the backend unless the plan benchmarks a URL (a scale or
    change-under-load run always has one: its echo backends), each tester."""
    infra = plan.get("infrastructure") or {}
    backend = plan.get("backend") or {}
    gateways = _gateways(plan)
    roles = [("gateway_machine", infra.get("gateway_machine") or _DEFAULT_MACHINE)] * len(gateways)
    if backend.get("kind", "mock") != "url" or live:
        roles.append(("backend_machine", infra.get("backend_machine") or _DEFAULT_MACHINE))
    roles += [("tester_machine", infra.get("tester_machine") or _DEFAULT_MACHINE)] * plan_testers(
        plan
    )
    return roles


def run_estimate(
    plan: Mapping[str, Any],
    *,
    kind: str = "fixed",
    live: ScaleAsk | None = None,
    quick: bool = False,
) -> CostEstimate:
    """The estimate of one cloud run of ``plan`` of the given kind: the plan's workloads
    (``fixed``), a capacity search for its whole time budget (``capacity``), or a scale or
    change-under-load run (``live``)."""
    if live is not None:
        return estimate_cost(plan, live=live)
    if kind == "capacity":
        return estimate_cost(plan, load_s=capacity_seconds(plan))
    return estimate_cost(plan, quick=quick)


def estimate_cost(
    plan: Mapping[str, Any],
    table: Mapping[str, Any] | None = None,
    *,
    live: ScaleAsk | None = None,
    load_s: float | None = None,
    quick: bool = False,
) -> CostEstimate:
    """The estimate for a plan as ``Plan.to_dict()`` gives it (also a stored run's plan).
    ``live``: the run is a scale or change-under-load run (a ``gatebench.core.scaleplan.ScaleAsk``)
    of the plan's gateways instead of its workloads: its load lasts :func:`live_seconds`, the
    backend VM runs its echo backends, no raw log is kept (the load engine's logs stay on the
    tester), and each gateway VM's live agent reads its request object every
    ``live_poll_s`` while it lives (docs/cloud.md, "Route scale and changes under load").
    ``load_s``: how long the load lasts when the caller knows it better than the workloads
    (a capacity search's time budget). ``quick``: the plan is the quick profile's, which runs
    no engine warm-up. Every tester VM is counted (``infrastructure.testers``)."""
    table = table or price_table()
    prices, assume = table["prices"], table["assumptions"]
    gateways = _gateways(plan)
    targets = len(plan_targets(plan))
    repetitions = int(plan.get("repetitions") or 1)
    workloads = plan.get("workloads") or []
    if load_s is None:
        load_s = (
            load_seconds(plan, table, quick=quick)
            if live is None
            else live_seconds(live, len(gateways), table)
        )
    requests = (
        repetitions * targets * sum(phase_requests(w["injection"], assume) for w in workloads)
        if live is None
        else 0.0
    )

    roles = [machine for _, machine in machine_roles(plan, live=live is not None)]
    testers = plan_testers(plan)
    vm_s = vm_estimate_s(plan, table, load_s=load_s)

    lines: list[CostLine] = []
    for machine in sorted(set(roles)):
        count = roles.count(machine)
        lines.append(
            CostLine(
                f"Compute Engine {count} × {machine}",
                count * vm_s / 60,
                "VM-minutes",
                machine_hourly(machine, table) / 60,
            )
        )
    month_s = float(assume["month_hours"]) * 3600
    disk = float(assume["boot_disk_gib"])
    tester_disk = disk_gib_per_tester(plan, table) if live is None else int(disk)
    disk_gib = (len(roles) - testers) * disk + testers * tester_disk
    item = (
        f"boot disks {len(roles)} × {assume['boot_disk_gib']} GiB"
        if tester_disk == disk
        else f"boot disks {len(roles)}, {disk_gib:g} GiB (each tester's {tester_disk} GiB)"
    )
    lines.append(
        CostLine(
            item,
            disk_gib * vm_s / month_s,
            "GiB-months",
            float(prices["standard_disk_gib_month"]),
        )
    )
    builds = {
        "provision": float(assume["provision_s"]),
        "load": load_s,
        "teardown": float(assume["teardown_s"]),
    }
    lines.append(
        CostLine(
            "Cloud Build (provision, load, teardown)",
            sum(builds.values()) / 60,
            "build-minutes",
            float(prices["build_minute"]),
        )
    )
    functions = assume["functions"]
    ingest = int(assume["ingest_events_fixed"]) + int(assume["ingest_events_per_gateway"]) * len(
        gateways
    )
    polls = 0.0
    if live is not None:  # every step's files, requests, answers and results are objects too
        steps = len(live.sizes) if live.kind == "scale" else 2
        ingest += int(assume["live_objects_per_step"]) * steps * len(gateways)
        polls = len(gateways) * vm_s / float(assume["live_poll_s"])
    invocations = {name: int(f["invocations"]) for name, f in functions.items()}
    invocations["ingest"] = ingest
    lines.append(
        CostLine(
            "Cloud Run functions invocations",
            sum(invocations.values()),
            "invocations",
            float(prices["function_invocation_million"]) / 1e6,
        )
    )
    vcpu_s = sum(invocations[n] * f["seconds"] * f["vcpu"] for n, f in functions.items())
    gib_s = sum(invocations[n] * f["seconds"] * f["gib"] for n, f in functions.items())
    lines.append(
        CostLine(
            "Cloud Run functions CPU", vcpu_s, "vCPU-seconds", float(prices["function_vcpu_second"])
        )
    )
    lines.append(
        CostLine(
            "Cloud Run functions memory", gib_s, "GiB-seconds", float(prices["function_gib_second"])
        )
    )
    steps = int(assume["workflow_fixed_steps"]) + sum(
        _polls(s, assume["build_polling"]) for s in builds.values()
    )
    lines.append(
        CostLine(
            "Workflows steps (polling included)",
            steps,
            "internal steps",
            float(prices["workflow_internal_steps_thousand"]) / 1000,
        )
    )
    raw_gib = requests * float(assume["raw_log_bytes_per_request"]) / 2**30
    days = float(assume["raw_log_retention_days"])
    lines.append(
        CostLine(
            f"raw logs kept {days:g} days",
            raw_gib * days * 24 / float(assume["month_hours"]),
            "GiB-months",
            float(prices["storage_gib_month"]),
        )
    )
    lines.append(
        CostLine(
            "Cloud Storage writes",
            ingest,
            "Class A operations",
            float(prices["class_a_thousand"]) / 1000,
        )
    )
    lines.append(
        CostLine(
            "Cloud Storage reads",
            ingest,
            "Class B operations",
            float(prices["class_b_thousand"]) / 1000,
        )
    )
    if live is not None:
        lines.append(
            CostLine(
                "Cloud Storage reads (the gateway VMs' live agents)",
                polls,
                "Class B operations",
                float(prices["class_b_thousand"]) / 1000,
            )
        )
    return CostEstimate(
        lines=tuple(lines),
        load_s=load_s,
        vm_s=vm_s,
        vms=len(roles),
        region=str(table["region"]),
        as_of=str(table["as_of"]),
        notes=deployment_cost_notes(plan),
    )


def deployment_cost_notes(plan: Mapping[str, Any]) -> tuple[str, ...]:
    """What a plan's deployment (``tls``, ``backend.replicas``, ``fault``) changes in the
    price: nothing, and why (docs/cloud.md, "TLS and replicas")."""
    backend = plan.get("backend") or {}
    replicas = int(backend.get("replicas") or 1)
    asks = [
        *(["TLS"] if plan.get("tls") else []),
        *([f"{replicas} backend replicas"] if replicas > 1 else []),
        *(["a killed replica"] if plan.get("fault") else []),
    ]
    if not asks:
        return ()
    what = ", ".join(asks[:-1]) + (" and " if len(asks) > 1 else "") + asks[-1]
    why = []
    if replicas > 1:
        machine = (plan.get("infrastructure") or {}).get("backend_machine") or _DEFAULT_MACHINE
        why.append(
            f"the replicas are processes on the one backend VM ({machine}: they share its "
            "vCPUs; a larger backend_machine is priced as such)"
        )
    if plan.get("tls"):
        why.append("TLS costs CPU on the VMs the run has, not VMs or minutes")
    if plan.get("fault"):
        why.append("the fault is a request from the tester to the backend VM")
    return (f"{what} add nothing to this estimate: " + "; ".join(why) + ".",)


def _price(value: float) -> str:
    return f"{value:.10f}".rstrip("0").rstrip(".")


def describe_cost(estimate: CostEstimate) -> list[str]:
    """The estimate in a few lines (``gatebench plan``, a cloud run's report)."""
    lines = [
        f"Estimated cost of one run on Google Cloud: ${estimate.total_usd:.2f} "
        f"({estimate.region} list prices read {estimate.as_of}, no free tier or discount)",
        f"  {estimate.vms} VMs for {estimate.vm_s / 60:.1f} min each; load build "
        f"{estimate.load_s / 60:.1f} min (assumptions and sources: gatebench/core/gcp_prices.json)",
    ]
    width = max(len(line.item) for line in estimate.lines)
    for line in estimate.lines:
        lines.append(
            f"  {line.item.ljust(width)}  {line.quantity:12.4f} {line.unit:<18} "
            f"× ${_price(line.unit_price)} = ${line.usd:.4f}"
        )
    lines += [f"  {note}" for note in estimate.notes]
    return lines


__all__ = [
    "CostError",
    "CostEstimate",
    "CostLine",
    "deployment_cost_notes",
    "describe_cost",
    "describe_vm_limits",
    "disk_gib_per_tester",
    "estimate_cost",
    "live_seconds",
    "load_seconds",
    "machine_hourly",
    "machine_roles",
    "phase_requests",
    "phase_seconds",
    "plan_testers",
    "price_table",
    "raw_log_bytes_bound",
    "run_estimate",
    "vm_estimate_s",
    "vm_max_run_s",
]
