"""The plan in words, for people and for run records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gatebench.core.ir import Api
from gatebench.core.plan._checks import find_operation
from gatebench.core.plan._model import Capacity, Injection, Plan, Workload
from gatebench.core.stats import counted, joined_names


def describe_plan(plan: Plan, api: Api) -> list[str]:
    """The plan in a few lines, for people (``gatebench plan``, ``make demo``)."""
    from gatebench.core.units import format_duration, format_size

    n = len(api.operations)
    lines = [
        f"Benchmark plan for {api.title or 'the API'!r} ({api.source_format}, {n} "
        f"operation{'' if n == 1 else 's'})"
    ]
    left = left_out(plan)
    measured = [g for g in plan.gateways if g not in left]
    targets = ", ".join(measured) or "no gateway"
    if plan.baseline:
        targets += " + baseline (no gateway)"
    seed = "random seed" if plan.seed is None else f"seed {plan.seed}"
    lines.append(f"  targets:     {targets}; order {plan.order} ({seed})")
    if left:
        lines.append(f"               {joined_names(left)} left out: see below")
    warm = "no warm-up"
    if plan.warmup.duration:
        warm = f"warm-up {format_duration(plan.warmup.duration)} per target"
    elif plan.warmup.requests:
        warm = f"warm-up {plan.warmup.requests} requests per target"
    lines.append(f"  repetitions: {plan.repetitions} ({warm})")
    backend = {
        "url": f"your service at {plan.backend.url}",
        "mock": "mock built from the description"
        + (f", {format_duration(plan.backend.latency)} latency" if plan.backend.latency else "")
        + (
            f", {format_size(plan.backend.response_size)} responses"
            if plan.backend.response_size
            else ""
        )
        + (
            f", {plan.backend.workers} workers (capacity "
            f"{plan.backend.workers / plan.backend.latency:,.0f} req/s)"
            if plan.backend.workers and plan.backend.latency
            else ""
        ),
        "builtin": f"built-in {plan.backend.builtin} service",
    }[plan.backend.kind]
    if plan.backend.replicas > 1:
        backend += (
            f"; {plan.backend.replicas} replicas, {plan.backend.balance} at every gateway "
            "(the baseline reaches the first)"
        )
    lines.append(f"  backend:     {backend}")
    lines.extend(describe_deployment(plan, left))
    if plan.traffic is not None:
        t = plan.traffic
        span = f", {t.start} to {t.end}" if t.start and t.end else ""
        lines.append(
            f"  traffic:     replayed from {', '.join(t.files)} ({t.format}{span}): "
            f"{t.requests:,} read, {t.matched:,} ({t.matched_pct:.1f} %) matched"
        )
    auth = []
    if plan.auth.bearer_env:
        auth.append(f"bearer token from ${plan.auth.bearer_env}")
    if plan.auth.basic_username_env:
        auth.append(f"basic from ${plan.auth.basic_username_env} / ${plan.auth.basic_password_env}")
    if plan.auth.api_key_env:
        auth.append(f"API key from ${plan.auth.api_key_env}")
    if plan.auth.jwt_private_key_env:
        subjects = counted(plan.auth.jwt_subjects, "subject")
        auth.append(
            f"JWT bearer tokens signed by the run (key from ${plan.auth.jwt_private_key_env}, "
            f"{subjects})"
        )
    lines.append(f"  auth:        {', '.join(auth) or 'none'}")
    lines.extend(describe_policies(plan, left))
    weights = ", ".join(f"{m}×{w:g}" for m, w in plan.scoring.weights)
    lines.append(
        f"  scoring:     {plan.scoring.profile}"
        + (
            f" (weights {weights})"
            if weights
            else " (AGE §IV-C)"
            if plan.scoring.profile == "paper"
            else ""
        )
    )
    if plan.infrastructure is not None:
        infra = plan.infrastructure
        lines.append(
            f"  cloud:       {infra.project or '(project from the deployment)'} {infra.zone or ''} "
            f"gateway {infra.gateway_machine}, tester {infra.tester_machine}, backend {infra.backend_machine}"
        )
    lines.append("  workloads:")
    rows = []
    for w in plan.workloads:
        op = api.operation(w.operation_id)
        rows.append(
            (
                w.name,
                f"{op.method} {op.route_path}",
                describe_injection(w.injection),
                _describe_extras(w),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        line = "    " + "  ".join(row[i].ljust(widths[i]) for i in range(3))
        if row[3]:
            line += "  " + row[3]
        lines.append(line.rstrip())
    counts = (len(plan.workloads), len(measured) + plan.baseline, plan.repetitions)
    words = ("workload", "target", "repetition")
    lines.append(
        "  measured phases: "
        + " × ".join(counted(n, word) for n, word in zip(counts, words, strict=True))
        + f" = {counts[0] * counts[1] * counts[2]:,}"
    )
    lines.extend(describe_capacity(plan))
    return lines


def deployment_needs_of(plan: Plan) -> frozenset[str]:
    """What the plan's deployment asks every gateway to render (renderers._deployment)."""
    from gatebench.core.renderers import deployment_needs

    tls = plan.tls
    return deployment_needs(
        tls=tls is not None,
        http2=tls is not None and tls.http2,
        resumption=tls is None or tls.resumption,
        replicas=plan.backend.replicas,
        balance=plan.backend.balance,
    )


CANNOT_DEPLOY = "cannot render the plan's deployment (TLS or a pool of replicas)"
CANNOT_APPLY = "cannot apply the plan's policies"
"""What a gateway left out before the run cannot do, as the run records it
(``environment.left_out``) and the verdict says it."""


@dataclass(frozen=True)
class LeftOut:
    """Why a run leaves a gateway out before it starts."""

    reason: str
    """In full, naming what it lacks: the target's error on record."""
    cannot: str
    """:data:`CANNOT_DEPLOY` or :data:`CANNOT_APPLY`."""


def left_out(plan: Plan) -> dict[str, LeftOut]:
    """The gateways a run of ``plan`` leaves out, in the plan's order: a deployment it cannot
    render (TLS, a pool of replicas), else policies it cannot apply (``gatebench run
    --allow-missing-policies`` runs those bare, marked; the cloud path never does)."""
    from gatebench.core.renderers import deployment_exclusions, policy_exclusions

    undeployable = deployment_exclusions(plan.gateways, deployment_needs_of(plan))
    unpolicied = policy_exclusions(plan.gateways, plan.policies)
    found = {g: LeftOut(r, CANNOT_APPLY) for g, r in unpolicied.items()}
    found.update({g: LeftOut(r, CANNOT_DEPLOY) for g, r in undeployable.items()})
    return {g: found[g] for g in plan.gateways if g in found}


def _left_out_lines(left: dict[str, LeftOut], cannot: str) -> list[str]:
    return [f"  left out:    {why.reason}" for why in left.values() if why.cannot == cannot]


def describe_deployment(plan: Plan, left: dict[str, LeftOut]) -> list[str]:
    """TLS and the fault a plan asks for (docs/input.md, "The gateway as deployed"), and one
    line per gateway of ``left`` (:func:`left_out`) because it cannot render them."""
    from gatebench.core.units import format_duration

    lines = []
    if plan.tls is not None:
        tls = plan.tls
        lines.append(
            f"  tls:         {tls.key} key, throwaway CA; "
            + ("HTTP/2 by ALPN" if tls.http2 else "HTTP/1.1")
            + ("; sessions resumed" if tls.resumption else "; a full handshake per connection")
        )
    if plan.fault is not None:
        f = plan.fault
        when = (
            f"{format_duration(f.at_s)} into"
            if f.at_s is not None
            else f"{(f.at_fraction or 0) * 100:g} % into"
        )
        lines.append(
            f"  fault:       backend replica {f.replica} killed {when} every gateway's "
            f"measured {f.workload!r} phases, started again as each ends (not the baseline's)"
        )
    return lines + _left_out_lines(left, CANNOT_DEPLOY)


def describe_capacity(plan: Plan) -> list[str]:
    """The capacity search's settings (``gatebench capacity``), when the plan gives any."""
    if plan.capacity is None:
        return []
    lines = [f"  capacity:    {_capacity_line(plan.capacity.default)}"]
    for name, settings in plan.capacity.workloads:
        lines.append(
            f"    {name}: " + ("not searched" if settings is None else _capacity_line(settings))
        )
    return lines


def _capacity_line(c: Capacity) -> str:
    from gatebench.core.units import format_duration

    confirm = f", confirm {format_duration(c.confirm)}" if c.confirm else ", no confirmation"
    return (
        f"{c.objective.label()}; from {c.start_rate:g}/s ×{c.growth:g} (at most {c.max_rate:g}/s) "
        f"to {100 * c.precision:g} %; probes {format_duration(c.warmup)} + "
        f"{format_duration(c.probe)}{confirm}; {counted(c.repetitions, 'repetition')}, "
        f"{c.connections} connections, budget {format_duration(c.budget)}"
    )


def describe_policies(plan: Plan, left: dict[str, LeftOut]) -> list[str]:
    """The policies line, and one line per gateway of ``left`` (:func:`left_out`) because it
    cannot apply them."""
    from gatebench.core.policies import ApiKeyAuth, JwtAuth, Policies
    from gatebench.core.units import format_duration

    if plan.policies.empty:
        return []

    def one(p: Policies) -> str:
        parts = []
        if isinstance(p.auth, JwtAuth):
            parts.append(
                f"JWT ({'/'.join(p.auth.algorithms)}, iss {p.auth.issuer}, aud {p.auth.audience})"
            )
        elif isinstance(p.auth, ApiKeyAuth):
            where = f"header {p.auth.header}" if p.auth.header else f"query {p.auth.query}"
            parts.append(f"API key ({where}, keys from ${p.auth.keys_env})")
        if p.rate_limit is not None:
            key = p.rate_limit.header if p.rate_limit.key == "header" else p.rate_limit.key
            parts.append(
                f"rate limit {p.rate_limit.requests}/{format_duration(p.rate_limit.window)} per {key}"
            )
        if p.cache is not None:
            parts.append(f"cache {format_duration(p.cache.ttl)} ({', '.join(p.cache.vary)})")
        return ", ".join(parts) or "none"

    lines = [f"  policies:    {one(plan.policies.default)}"]
    lines.extend(f"    {op}: {one(p)}" for op, p in plan.policies.operations)
    return lines + _left_out_lines(left, CANNOT_APPLY)


def describe_injection(inj: Injection) -> str:
    from gatebench.core.units import format_duration

    if inj.kind == "at_once":
        return f"{counted(inj.users or 0, 'user')} at once"
    if inj.kind == "sequential":
        return counted(inj.requests or 0, "sequential request")
    if inj.kind == "ramp":
        return (
            f"ramp to {counted(inj.users or 0, 'user')} over {format_duration(inj.duration or 0)}"
        )
    if inj.kind == "constant_rate":
        return f"{inj.rate:g} req/s for {format_duration(inj.duration or 0)}"
    if inj.kind == "arrivals":
        step = inj.step or 1.0
        peak = max(inj.counts, default=0) / step
        return (
            f"recorded arrivals: {counted(sum(inj.counts), 'request')} over "
            f"{format_duration(inj.duration or 0)} (peak {peak:,.4g} req/s)"
        )
    bound = []
    if inj.duration:
        bound.append(f"for {format_duration(inj.duration)}")
    if inj.requests:
        bound.append(f"up to {counted(inj.requests, 'request')}")
    return f"{counted(inj.users or 0, 'concurrent user')} " + " ".join(bound)


def workload_summary(plan: Plan, api: Api) -> list[dict[str, Any]]:
    """What a run records about each workload of ``plan`` (its run record's ``workloads``),
    the same on every path: the laptop's runner, the upload form, the cloud parse step.
    ``path`` is the route path the requests go to (the base path and the template)."""
    out = []
    for w in plan.workloads:
        op, _ = find_operation(api, w.operation_id)
        out.append(
            {
                "name": w.name,
                "operation": w.operation_id,
                "method": op.method if op else None,
                "path": op.route_path if op else None,
                "injection": describe_injection(w.injection),
            }
        )
    return out


def _describe_extras(w: Workload) -> str:
    from gatebench.core.units import format_size

    parts = []
    if w.body.kind == "multipart":
        files = [f"{p.name} {format_size(p.size)}" for p in w.body.parts if p.size is not None]
        parts.append("multipart " + ", ".join(files or [p.name for p in w.body.parts]))
    elif w.body.kind == "binary":
        parts.append(f"binary body {format_size(w.body.size or 0)}")
    elif w.body.kind != "none":
        parts.append(f"{w.body.kind} body")
    for name, gen in w.params:
        if gen.kind in ("range", "random"):
            parts.append(f"{name} {gen.kind} {gen.low}..{gen.high}")
        elif gen.kind == "counter":
            parts.append(f"{name} counter from {gen.start}")
        elif gen.kind == "list" and gen.weights:
            more = gen.others.count if gen.others else 0
            parts.append(f"{name} weighted, {len(gen.values) + more:,} values")
        elif gen.kind == "list":
            parts.append(f"{name} one of {len(gen.values)}")
        else:  # as the plan writes it: text as it is, a list or mapping as JSON
            written = gen.value if isinstance(gen.value, str) else json.dumps(gen.value)
            parts.append(f"{name}={written}")
    return "; ".join(parts)
