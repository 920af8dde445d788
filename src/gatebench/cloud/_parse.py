"""The parse step of the cloud path: an uploaded object → a run record, or every problem.

Pure: the function (functions/parse) reads the object, the deployment's settings and the runs
in progress, and passes them here. The answer carries the run id in both cases, so the
workflow records a refused upload as a failed run (with the problems) instead of dropping it.

Besides the description and its plan, the deployment refuses an upload for:

- a plan zone or region outside the deployment's region (``/x-gatebench/infrastructure/zone``,
  ``.../region``): the run's VMs join the deployment's network, whose subnet is in that region;
- a backend URL outside Google Cloud's network when the deployment has no Cloud NAT
  (``outside_access`` off, the default: Private Google Access reaches Google's APIs and the
  image repositories without it);
- what a run may cost: a machine type gatebench cannot price, or one outside the deployment's
  ``allowed_machine_types``, at ``/x-gatebench/infrastructure/ROLE_machine``, and a run whose
  estimate (gatebench.core.cost, the figures ``gatebench plan`` prints) is above the
  deployment's ``max_run_cost_usd`` (Terraform requires both when uploads are public);
- a run whose Firestore documents could outgrow Firestore's limits (1 MiB and 20,000 fields a
  document: gatebench.store._firestore_size): more than :data:`MAX_CLOUD_WORKLOADS` workloads
  (each target's scores are one document), a run record above :data:`RUN_RECORD_AT_PARSE`
  (the run adds to it: statuses, notes, a capacity result), a capacity run whose result would
  not fit the run record (:func:`gatebench.cloud._capacity.capacity_fields_bound`);
- an answer the workflow cannot hold: Workflows keeps at most 512 KB of variables, and the
  parse step's answer (the run record in Firestore's REST form, larger than the record it
  stores) is held twice for a moment: above :data:`PARSE_ANSWER_BYTES` it is refused;
- too many runs at once: while ``limits.max_active_runs`` runs are in progress, no new one
  starts (a public upload form cannot start unbounded fleets). A run counts while it is not
  finished and its last update is recent enough for it to be alive (:func:`active_runs`); two
  uploads parsed at the same instant may both pass, so the bound can be exceeded by the number
  of uploads arriving within one parse.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from gatebench.cloud._firestore_rest import firestore_fields
from gatebench.cloud._objects import ObjectRef
from gatebench.core.cost import CostError, machine_hourly, machine_roles, run_estimate
from gatebench.core.errors import PlanError, Problem
from gatebench.core.fairness import (
    cpu_environment,
    plan_concurrency,
    rate_concurrency,
    vm_cpu_policy,
)
from gatebench.core.model import RunKind, RunRecord
from gatebench.core.plan import (
    Backend,
    Capacity,
    Infrastructure,
    Plan,
    left_out,
    load_plan,
)
from gatebench.core.scaleplan import ScaleAsk
from gatebench.core.spec import SpecResult, read_spec
from gatebench.core.stats import counted
from gatebench.kinds.request import (
    METADATA_HEADER,
    METADATA_KEY,
    RunRequest,
    UploadRejected,
    as_run,
    run_request_from_metadata,
)

MAX_MESSAGE = 1500
MAX_CLOUD_WORKLOADS = 100
"""The most workloads (endpoints) one cloud run measures: each target's scores document holds
one entry per workload."""
RUN_RECORD_AT_PARSE = (262_144, 6_000)
"""The most bytes and fields the run record may take at parse (Firestore allows 1 MiB and
20,000): what the run adds later (its statuses, notes) has room."""
PARSE_ANSWER_BYTES = 200_000
"""The most bytes the parse step's answer may take as JSON: the workflow holds the HTTP response
and its body at once (workflows/benchmark.yaml, ``identified``), and both, with its other
variables, must stay within Workflows' 512 KB (cloud.google.com/workflows/quotas, "Data size").
The largest plan the other bounds accept answers about 171,000 bytes."""
_EXECUTION_ID = "0" * 36
"""As long as a Workflows execution id (a UUID), for measuring an answer before it has one."""
CAPACITY_RECORD_FIELDS = 10_000
"""The most fields a capacity run's stored result may take (a document of its own, under
Firestore's 20,000 with room to spare)."""


@dataclass
class ParseOutcome:
    run: RunRecord
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    @property
    def message(self) -> str:
        """One line per error, for the run's ``error`` field (bounded)."""
        lines = [p.format(self.spec_name) for p in self.problems if p.severity == "error"]
        text = "\n".join(lines)
        return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"

    @property
    def spec_name(self) -> str:
        return posixpath.basename(self.run.spec_uri.split("#", 1)[0])

    def response(self, execution_id: str | None = None) -> dict[str, Any]:
        """What the parse function answers (HTTP 200, or 400 when ``ok`` is false)."""
        record = self.run.to_dict()
        if execution_id:
            record["execution_id"] = execution_id
        out: dict[str, Any] = {
            "run_id": self.run.run_id,
            "generation": self.run.spec_uri.rsplit("#", 1)[1],
            "spec_uri": self.run.spec_uri,
            "document": {"fields": firestore_fields(record)},
            "warnings": [p.to_dict() for p in self.problems if p.severity != "error"],
        }
        if not self.ok:
            out["errors"] = [p.to_dict() for p in self.problems if p.severity == "error"]
            out["message"] = self.message
        else:  # the workloads are in the document (the workflow holds this answer: 512 KB)
            out["title"] = self.run.title
            out["gateways"] = self.run.gateways
        return out


SCORE_S = 1800
"""The score call's timeout (workflows/benchmark.yaml)."""


def active_runs(
    unfinished: Sequence[RunRecord], settings: Mapping[str, Any], now: float, run_id: str
) -> list[RunRecord]:
    """The unfinished runs that may still be running: updated within the longest a run can
    take between two status writes (the builds' timeouts, the score call, ten minutes), other
    than ``run_id`` itself (a re-delivered event). Older ones were cut short (a cancelled
    execution) and hold nothing up."""
    limits = settings.get("limits") or {}
    longest = sum(float(limits.get(k, d)) for k, d in _BUILD_LIMITS.items()) + SCORE_S + 600
    return [r for r in unfinished if r.run_id != run_id and now - r.updated_at <= longest]


_BUILD_LIMITS = {"provision_s": 1800, "load_s": 21600, "teardown_s": 1800}


def inside_network(url: str) -> bool:
    """Whether a backend URL is reached without leaving the VPC: a private or link-local
    address, or an internal name (Compute Engine's ``.internal`` DNS). Google's APIs are
    reached through Private Google Access either way."""
    host = (urlsplit(url).hostname or "").lower()
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host.endswith(".internal") or host in ("localhost",)
    return address.is_private or address.is_link_local or address.is_loopback


def cost_problems(
    plan: Plan,
    settings: Mapping[str, Any],
    *,
    kind: str = "fixed",
    live: ScaleAsk | None = None,
    quick: bool = False,
) -> list[Problem]:
    """What the deployment refuses of what a run would cost: a machine type gatebench cannot
    price or the deployment does not allow (``allowed_machine_types``; empty: every priced
    type), and an estimate above ``max_run_cost_usd`` (docs/cloud.md, "Costs")."""
    data = plan.to_dict()
    allowed = [str(m) for m in settings.get("allowed_machine_types") or []]
    problems = []
    for role, machine in dict.fromkeys(machine_roles(data, live=live is not None)):
        pointer = f"/x-gatebench/infrastructure/{role}"
        try:
            machine_hourly(machine)
        except CostError as exc:
            problems.append(
                Problem(
                    pointer,
                    f"{exc}: this deployment runs only machine types gatebench can price, so "
                    "that every run's cost is known before it starts",
                )
            )
            continue
        if allowed and machine not in allowed:
            problems.append(
                Problem(
                    pointer,
                    f"machine type {machine!r} is not one this deployment allows: "
                    f"{', '.join(allowed)} (the Terraform variable allowed_machine_types)",
                )
            )
    bound = settings.get("max_run_cost_usd")
    if problems or bound is None:
        return problems
    estimate = run_estimate(data, kind=kind, live=live, quick=quick)
    if estimate.total_usd > float(bound):
        problems.append(
            Problem(
                "/x-gatebench",
                f"this run is estimated to cost ${estimate.total_usd:.2f} ({estimate.vms} VMs "
                f"for {estimate.vm_s / 60:.0f} min each; `gatebench plan` prints every figure), "
                f"above this deployment's bound of ${float(bound):.2f} a run "
                "(max_run_cost_usd): ask for fewer targets, repetitions or testers, shorter "
                "phases or smaller machines",
            )
        )
    return problems


def deployment_problems(
    plan: Plan,
    settings: Mapping[str, Any],
    active: Sequence[RunRecord],
    *,
    kind: str = "fixed",
    live: ScaleAsk | None = None,
    quick: bool = False,
) -> list[Problem]:
    """What the deployment refuses in this plan: its zone outside the region, what it would
    cost, one run too many (docs/cloud.md, "Limits", "Costs")."""
    problems = []
    region = settings.get("region")
    zone = plan.infrastructure.zone if plan.infrastructure else None
    asked = plan.infrastructure.region if plan.infrastructure else None
    if region and asked and asked != region and not zone:  # a zone names its region itself
        problems.append(
            Problem(
                "/x-gatebench/infrastructure/region",
                f"region {asked!r} is not the deployment's ({region!r}): this deployment runs "
                f"its VMs in {region} only; leave region out or deploy gatebench in {asked}",
            )
        )
    if region and zone and not zone.startswith(f"{region}-"):
        default = settings.get("zone")
        problems.append(
            Problem(
                "/x-gatebench/infrastructure/zone",
                f"zone {zone!r} is not in the deployment's region {region!r} (its network "
                f"and buckets are there): choose a zone of {region}"
                + (f", or leave zone out for the deployment's ({default})" if default else ""),
            )
        )
    url = plan.backend.url if plan.backend.kind == "url" else None
    if url and not settings.get("outside_access") and not inside_network(url):
        problems.append(
            Problem(
                "/x-gatebench/backend/url",
                f"{url} is outside Google Cloud's network and this deployment's VMs have no "
                "route out (Cloud NAT is off): set the Terraform variable outside_access = true "
                "to benchmark a service on the internet, or use a private address or an "
                "internal name",
            )
        )
    problems += cost_problems(plan, settings, kind=kind, live=live, quick=quick)
    limit = (settings.get("limits") or {}).get("max_active_runs")
    if isinstance(limit, int) and len(active) >= limit:
        ids = ", ".join(r.run_id for r in active[:5]) + (" ..." if len(active) > 5 else "")
        problems.append(
            Problem(
                "",
                f"{counted(len(active), 'run')} {'is' if len(active) == 1 else 'are'} in progress ({ids}) and this deployment runs at "
                f"most {limit} at once (limits.max_active_runs): this upload starts no run; "
                "upload it again once one has finished",
            )
        )
    return problems


def parse_upload(
    data: bytes,
    ref: ObjectRef,
    *,
    now: float,
    metadata: Mapping[str, str] | None = None,
    settings: Mapping[str, Any] | None = None,
    unfinished: Sequence[RunRecord] = (),
) -> ParseOutcome:
    """Read and validate an uploaded description and its plan. Never raises for bad input.

    ``metadata`` is the object's custom metadata: its ``gatebench`` value is the run request
    the upload form signed into the object (:func:`gatebench.kinds.request.run_request_from_metadata`:
    a subset of the plan's gateways, the quick profile). The run records the plan as it will
    run; a malformed request is a located problem like a bad spec. With ``settings`` (the
    deployment's) and ``unfinished`` (the store's unfinished runs), the deployment's refusals
    too (:func:`deployment_problems`)."""
    try:
        request = run_request_from_metadata((metadata or {}).get(METADATA_KEY))
        request_problems: list[Problem] = []
    except UploadRejected as exc:
        request, request_problems = None, list(exc.problems)
    name = posixpath.basename(ref.name) or "spec"
    run = RunRecord(
        run_id=ref.run_id,
        spec_uri=ref.uri,
        spec_sha256=hashlib.sha256(data).hexdigest(),
        created_at=now,
        updated_at=now,
    )
    result = read_spec(data, name=name, entry=request.entry if request else None)
    outcome = ParseOutcome(run, [*request_problems, *result.problems])
    if result.errors or result.api is None:
        return outcome
    api = result.api
    run.title = api.title
    try:
        plan = load_plan(result)
    except PlanError as exc:
        outcome.problems.extend(exc.problems)
        return outcome
    if request is None:
        return outcome
    refused = [result.in_plan(p) for p in request.problems(plan, source=METADATA_HEADER)]
    if refused:
        outcome.problems.extend(refused)
        return outcome
    plan = request.apply(plan)
    run.kind = RunKind(request.kind)  # the dashboard shows the run as its kind from the start
    if request.scale is not None:  # route scale or a change under load (cloud._live)
        return _parse_live(outcome, result, plan, request, now, settings, unfinished)
    if settings is not None:
        active = active_runs(unfinished, settings, now, ref.run_id)
        refused = deployment_problems(
            plan, settings, active, kind=request.kind, quick=request.quick
        )
        if refused:
            outcome.problems.extend(refused)
            return outcome
    run.gateways = list(plan.gateways)
    run.environment = {**run.environment, "quick": request.quick}  # as a local run records it
    # Left out before the run, as a local run records them (run.stages.render): the render
    # step deploys none of them, and the report names them, never scores them 0.
    left = left_out(plan)
    if left:
        run.target_errors = {g: why.reason for g, why in left.items()}
        run.environment["left_out"] = {g: why.cannot for g, why in left.items()}
    problem = _record_cpu(run, plan, plan_concurrency(plan, capacity=request.kind == "capacity"))
    if problem is not None:
        outcome.problems.append(problem)
        return outcome
    # JSON-shaped (lists, not tuples): the run reads back from Firestore exactly as built.
    run.plan = json.loads(json.dumps(plan.to_dict()))
    run.workloads = as_run(request.kind).workloads(plan, api)
    if settings is not None:  # the cloud path: its documents and its answer within limits
        refused = document_problems(run, plan, request.kind) or answer_problems(outcome)
        if refused:  # the failed run's record holds the problems, not what was refused
            outcome.problems.extend(refused)
            run.plan, run.workloads = {}, []
    return outcome


def answer_problems(outcome: ParseOutcome) -> list[Problem]:
    """An answer the workflow cannot hold (:data:`PARSE_ANSWER_BYTES`)."""
    from gatebench.cloud._http import reply

    size = len(reply(outcome.response(_EXECUTION_ID))[0].encode())
    if size <= PARSE_ANSWER_BYTES:
        return []
    return [
        Problem(
            "/x-gatebench",
            f"this plan makes a run record of {size:,} bytes as the workflow receives it; on "
            f"Google Cloud it may take {PARSE_ANSWER_BYTES:,} (the workflow holds at most "
            "512 KB at once): fewer workloads, parameters, headers or policies",
        )
    ]


def document_problems(run: RunRecord, plan: Plan, kind: str = "fixed") -> list[Problem]:
    """What keeps this run's Firestore documents within Firestore's limits (module
    docstring): refused here, located, rather than by Firestore after the load."""
    from gatebench.cloud._capacity import capacity_fields_bound
    from gatebench.store._firestore import encode
    from gatebench.store._firestore_size import document_size, field_count

    problems = []
    if len(plan.workloads) > MAX_CLOUD_WORKLOADS:
        problems.append(
            Problem(
                "/x-gatebench/workloads",
                f"{len(plan.workloads)} workloads: a run on Google Cloud measures at most "
                f"{MAX_CLOUD_WORKLOADS} (each target's scores are one Firestore document); "
                "split them over several descriptions",
            )
        )
    fields = encode(run.to_dict())
    size, count = document_size(["runs", run.run_id], fields), field_count(fields)
    most_bytes, most_fields = RUN_RECORD_AT_PARSE
    if size > most_bytes or count > most_fields:
        problems.append(
            Problem(
                "/x-gatebench",
                f"this plan makes a run record of {size:,} bytes and {count:,} fields; on Google "
                f"Cloud a run's record starts within {most_bytes:,} bytes and {most_fields:,} "
                "fields, so that it stays within Firestore's limits (1 MiB, 20,000 fields) as "
                "the run adds to it: fewer workloads, parameters or policies",
            )
        )
    if kind == "capacity":
        targets = len(plan.gateways) + (1 if plan.baseline else 0)
        settings = plan.capacity.default if plan.capacity else Capacity()
        repetitions = max(
            [settings.repetitions]
            + [c.repetitions for _, c in (plan.capacity.workloads if plan.capacity else ()) if c]
        )
        bound = capacity_fields_bound(targets, len(plan.workloads), repetitions)
        if bound > CAPACITY_RECORD_FIELDS:
            problems.append(
                Problem(
                    "/x-gatebench",
                    f"a capacity search of {targets} targets on {len(plan.workloads)} "
                    f"endpoints, {repetitions} times each, could make a result of {bound:,} "
                    f"Firestore fields; on Google Cloud it may take {CAPACITY_RECORD_FIELDS:,}: "
                    "fewer targets, endpoints or repetitions",
                )
            )
    return problems


def _parse_live(
    outcome: ParseOutcome,
    result: SpecResult,
    plan: Plan,
    request: RunRequest,
    now: float,
    settings: Mapping[str, Any] | None,
    unfinished: Sequence[RunRecord],
) -> ParseOutcome:
    """A scale or change-under-load run: what the cloud path refuses of it, then its record
    (``plan``: what it measures, as a local run of the kind records it, with where its memory
    figures come from and the plan's infrastructure)."""
    from gatebench.cloud._live import MEMORY, live_problems

    assert request.scale is not None
    run = outcome.run
    refused = live_problems(result, request)
    if not plan.gateways:
        refused.append(
            Problem("/x-gatebench/gateways", "a scale or change-under-load run needs a gateway")
        )
    if settings is not None:
        # its backends are gatebench's echo backends, whatever the plan's backend is
        echo = replace(plan, backend=Backend("builtin", builtin="echo"))
        refused += deployment_problems(
            echo,
            settings,
            active_runs(unfinished, settings, now, run.run_id),
            kind=request.kind,
            live=request.scale,
        )
    if refused:
        outcome.problems.extend(refused)
        return outcome
    problem = _record_cpu(run, plan, rate_concurrency(request.scale.settings.rate))
    if problem is not None:
        outcome.problems.append(problem)
        return outcome
    run.gateways = list(plan.gateways)
    about = request.scale.about(plan.gateways)
    infrastructure = plan.to_dict().get("infrastructure")
    run.plan = json.loads(json.dumps({**about, "memory": MEMORY, "infrastructure": infrastructure}))
    return outcome


def _record_cpu(run: RunRecord, plan: Plan, concurrency: int) -> Problem | None:
    """The run's CPU policy in its environment (every vCPU of the gateway VMs, each gateway's
    own setting for them: ``gatebench.core.fairness.cpu_environment``), or why the gateway machine
    type cannot be used."""
    machine = (plan.infrastructure or Infrastructure()).gateway_machine
    try:
        cpu = vm_cpu_policy(machine)
    except CostError as exc:
        return Problem("/x-gatebench/infrastructure/gateway_machine", str(exc))
    run.environment = {**run.environment, **cpu_environment(cpu, plan.gateways, concurrency)}
    return None
