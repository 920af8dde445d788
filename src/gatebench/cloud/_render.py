"""The render step of the cloud path: a parsed run → every gateway's configuration, the
machines to create (the "fleet") and the workload the tester will run.

Everything that addresses a machine comes from the run's :class:`Layout`, so it is decided
here, before any VM exists. Pure apart from asking each renderer which folders it wants
beside its files (its ``prepare`` hook, run in a scratch folder). The same run rendered
twice gives the same bytes: the workload's seed is the plan's, or derived from the run id.

The deployment of a plan (docs/cloud.md, "TLS and replicas"): with ``backend.replicas`` the
backend VM runs that many processes on consecutive ports and every gateway's pool lists them;
with ``tls`` every gateway terminates TLS with the key and certificates the provision build
made for its VM from the run's own CA (``gatebench.cloud._tls``: the fleet names no key) and the
baseline reaches the backend's own TLS listener; with a ``fault`` the tester kills the
replica through the backend VM's control port at the moments this step computes
(``gatebench.core.fault.fault_offsets``).
"""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gatebench.cloud._layout import Layout, layout_for
from gatebench.cloud._objects import ObjectRef, RequestError, failure_reason
from gatebench.cloud._tls import TLS_DIR, TRUST_STORE_ON_TESTER, tls_section
from gatebench.core.api_keys import REDACTED, api_key_envs, with_api_keys
from gatebench.core.backend import CONTROL_PREFIX, mock_config
from gatebench.core.cost import capacity_seconds, disk_gib_per_tester, load_seconds, vm_max_run_s
from gatebench.core.errors import GatebenchError, PlanError, Problem, RenderError, RunError
from gatebench.core.fairness import CpuPolicy, gateway_target, plan_concurrency, vm_cpu_policy
from gatebench.core.fault import RESET_WAIT_S, fault_offsets
from gatebench.core.ir import Api
from gatebench.core.model import BASELINE
from gatebench.core.plan import Plan, load_plan
from gatebench.core.policies import PolicySet
from gatebench.core.renderers import get_renderer
from gatebench.core.renderers._base import DEFAULT_CONCURRENCY
from gatebench.core.renderers._leave_out import render_leaving_out
from gatebench.core.spec import read_spec
from gatebench.core.tls import GatewayTls
from gatebench.core.tokens import SIGNED_TOKENS_FILE_ENV, TokenSignerError, signing_spec
from gatebench.core.workload import compile_load, engine_warmup
from gatebench.kinds.request import (
    METADATA_HEADER,
    METADATA_KEY,
    UploadRejected,
    run_request_from_metadata,
)

REDIS_IMAGE = "redis:7.4.1"
"""Tyk keeps its state in Redis: a pinned official image beside it on the gateway VM."""
DEFAULT_MACHINE = "n2-standard-2"


def config_object(run_id: str, gateway: str, path: str) -> str:
    return f"runs/{run_id}/configs/{gateway}/{path}"


def run_object(run_id: str, name: str) -> str:
    return f"runs/{run_id}/{name}"


RENDER_INPUT = "render-input.json"
"""What a gateway VM re-renders its key-bearing files from (``gatebench cloud gateway-config``):
the uploaded description, its object, its metadata and the deployment's settings. No key."""


CAPACITY_INPUT = "capacity/input.json"
"""A capacity run's search input (targets, settings, probe templates): its presence tells the
tester to search instead of running the workload (gatebench.vm._capacity)."""


def config_error_object(run_id: str, gateway: str) -> str:
    """Where a gateway VM says why it did not start its gateway (the tester reports it)."""
    return f"runs/{run_id}/gateways/{gateway}/config-error.json"


def backend_error_object(run_id: str) -> str:
    """Where the backend VM says why it did not start the backend (the tester reports it for
    the baseline)."""
    return f"runs/{run_id}/backend/error.json"


@dataclass
class RenderedRun:
    run_id: str
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    """Gateway → relative path → text."""
    fleet: dict[str, Any] = field(default_factory=dict)
    workload: dict[str, Any] = field(default_factory=dict)
    backend: dict[str, Any] | None = None
    """What the backend VM runs (``gatebench cloud backend``), None for the user's own URL."""
    mock: dict[str, Any] | None = None
    failures: dict[str, str] = field(default_factory=dict)
    render_input: dict[str, Any] | None = None
    """With ``auth.api_key``: what the gateway VMs re-render their files from, with the keys
    they read themselves (:data:`RENDER_INPUT`)."""
    capacity: dict[str, Any] | None = None
    """A capacity run (the run request's ``kind``): what tester 0 searches with
    (:data:`CAPACITY_INPUT`, ``gatebench.kinds.capacity.capacity_input``)."""
    live: dict[str, Any] | None = None
    """A scale or change-under-load run (the run request's ``kind``): the tester's program
    (``gatebench.cloud._live.LIVE_PLAN``)."""
    cpu: CpuPolicy | None = None
    """The cores every gateway was rendered for (every vCPU of its VM)."""

    def objects(self) -> dict[str, str]:
        """Every object to write to the runs bucket: name → text."""
        out = {
            config_object(self.run_id, gw, path): text
            for gw, files in self.configs.items()
            for path, text in files.items()
        }
        out[run_object(self.run_id, "fleet.json")] = _json(self.fleet)
        out[run_object(self.run_id, "workload.json")] = _json(self.workload)
        if self.backend is not None:
            out[run_object(self.run_id, "backend.json")] = _json(self.backend)
        if self.mock is not None:
            out[run_object(self.run_id, "mock-backend.json")] = _json(self.mock)
        if self.render_input is not None:
            out[run_object(self.run_id, RENDER_INPUT)] = _json(self.render_input)
        if self.capacity is not None:
            out[run_object(self.run_id, CAPACITY_INPUT)] = _json(self.capacity)
        if self.live is not None:
            from gatebench.cloud._live import LIVE_PLAN

            out[run_object(self.run_id, LIVE_PLAN)] = _json(self.live)
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "gateways": {gw: sorted(files) for gw, files in self.configs.items()},
            "failures": self.failures,
            "phases": len(self.workload.get("phases", [])),
        }


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _prepared_dirs(renderer: Any) -> list[str]:
    """The folders a gateway wants beside its files (created by its ``prepare`` hook)."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        renderer.prepare(root)
        return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir())


def _machines(plan: Plan) -> tuple[str, str, str]:
    infra = plan.infrastructure
    if infra is None:
        return DEFAULT_MACHINE, DEFAULT_MACHINE, DEFAULT_MACHINE
    return infra.gateway_machine, infra.tester_machine, infra.backend_machine


def render_run(
    data: bytes,
    ref: ObjectRef,
    settings: dict[str, Any],
    runs_bucket: str,
    metadata: Mapping[str, str] | None = None,
    *,
    api_keys: str | None = None,
) -> RenderedRun:
    """Render the run of the uploaded object ``ref`` (``data`` its bytes, ``metadata`` its
    custom metadata: the run request applied to the plan exactly as the parse step did).

    With ``auth.api_key`` policies the render step has no key (``api_keys`` None): every
    gateway's files are rendered with :data:`~gatebench.core.api_keys.REDACTED` in their place, for
    the record, and each gateway VM renders them again with the keys of the deployment's
    ``api_clients`` secret, read with its own account, before its gateway starts
    (``api_keys``: that secret's text; gatebench.vm._gateway_config)."""
    run_id = ref.run_id
    try:
        request = run_request_from_metadata((metadata or {}).get(METADATA_KEY))
    except UploadRejected as exc:
        raise RequestError(exc.problems) from None
    result = read_spec(data, name=ref.name.rsplit("/", 1)[-1] or "spec", entry=request.entry)
    if result.errors or result.api is None:
        raise RequestError(result.errors or [Problem("", "the description has errors")])
    try:
        plan = load_plan(result)
    except PlanError as exc:
        raise RequestError(exc.problems) from None
    refused = [result.in_plan(p) for p in request.problems(plan, source=METADATA_HEADER)]
    if refused:
        raise RequestError(refused)
    plan = request.apply(plan)
    if request.scale is not None:  # route scale or a change under load: cloud._live
        from gatebench.cloud._live import render_live_run

        live = RenderedRun(run_id)
        machines = _machines(plan)
        render_live_run(
            live,
            data,
            ref,
            result,
            plan,
            request,
            settings,
            runs_bucket,
            machines,
            _prepared_dirs,
            REDIS_IMAGE,
        )
        return live
    # how long the load lasts: the workloads' estimate, or a capacity run's time budget
    load_s = (
        capacity_seconds(plan.to_dict())
        if request.kind == "capacity"
        else load_seconds(plan.to_dict(), quick=request.quick)
    )
    tls = tls_section(plan) if plan.tls is not None else None
    signing = _signing(plan, settings, load_s)
    clients = _api_clients(plan, settings)
    if clients is not None:
        keys = REDACTED if api_keys is None else api_keys
        try:
            filled = with_api_keys(plan.policies, dict.fromkeys(api_key_envs(plan.policies), keys))
        except RunError as exc:
            raise RunError(f"{clients}: {exc}") from None
        plan = replace(plan, policies=filled)
    if signing is not None:
        plan = replace(
            plan,
            auth=replace(plan.auth, bearer_env=SIGNED_TOKENS_FILE_ENV, bearer_per_user=True),
        )
    api = result.api
    zone = (plan.infrastructure.zone if plan.infrastructure else None) or settings.get("zone")
    layout = layout_for(settings, run_id, list(plan.gateways), zone=zone)
    rendered = RenderedRun(run_id)
    gateway_machine, tester_machine, backend_machine = _machines(plan)
    # The same share for every gateway: every vCPU of its VM; pools hold the plan's load.
    cpu = vm_cpu_policy(gateway_machine)
    concurrency = plan_concurrency(plan, capacity=request.kind == "capacity")
    rendered.cpu = cpu
    gateways: dict[str, Any] = {}
    backend_url = _backend_url(plan, layout)
    pool = layout.replica_urls(plan.backend.replicas) if plan.backend.replicas > 1 else []
    for name in plan.gateways:
        try:
            entry, files = _render_gateway(
                name,
                api,
                layout,
                backend_url,
                run_id,
                {w.operation_id for w in plan.workloads},
                cpu=cpu,
                concurrency=concurrency,
                policies=plan.policies,
                plan=plan,
                pool=pool,
            )
        except GatebenchError as exc:
            rendered.failures[name] = failure_reason(exc)
            continue
        entry["machine_type"] = gateway_machine
        entry["configure"] = []
        out = ["--gateway", name, "--out", entry["mount"]]
        if tls is not None:  # the VM makes its key and certificate before the gateway starts
            entry["configure"].append(
                ["cloud", "gateway-tls", *role_args_of(run_id, runs_bucket), *out]
            )
        if clients is not None:  # the VM writes the key-bearing files before the gateway starts
            entry["configure"].append(
                ["cloud", "gateway-config", *role_args_of(run_id, runs_bucket), *out]
            )
        gateways[name] = entry
        rendered.configs[name] = files
    role_args = role_args_of(run_id, runs_bucket)
    if clients is not None:
        rendered.render_input = {
            "object": {"bucket": ref.bucket, "name": ref.name, "generation": ref.generation},
            "metadata": dict(metadata or {}),
            "settings": settings,
            "spec": base64.b64encode(data).decode("ascii"),
        }
    if plan.backend.kind != "url":
        rendered.backend = _backend(plan, layout, run_id, tls)
        if rendered.backend["mode"] == "mock":
            rendered.mock = mock_config(api, plan.backend)
    rendered.fleet = {
        "run_id": run_id,
        "zone": layout.zone,
        "backend": None
        if rendered.backend is None
        else _backend_vm(plan, layout, rendered.backend, backend_machine, role_args),
        "gateways": gateways,
        "tester": _testers(plan, layout, tester_machine, role_args),
        "failures": rendered.failures,
        # The VMs delete themselves after the plan's estimate plus a margin (the deployment's
        # limits.vm_lifetime caps it: gatebench.cloud._vms).
        "max_run_duration_s": vm_max_run_s(plan.to_dict(), load_s=load_s),
    }
    if tls is not None:  # what the provision build makes the certificates for (no key)
        backend_tls = rendered.backend is not None and "tls" in rendered.backend
        rendered.fleet["tls"] = dict(
            tls,
            hosts={name: layout.gateway_host(name) for name in gateways},
            **({"backend_host": layout.backend_host()} if backend_tls else {}),
        )
    rendered.workload = _workload(
        plan, api, layout, list(gateways), backend_url, rendered, run_id, tls, quick=request.quick
    )
    if request.kind == "capacity":  # plain HTTP, one backend: RunRequest refuses the rest
        from gatebench.kinds.capacity import capacity_input

        base_urls, resets = _targets(plan, layout, list(gateways), backend_url, rendered)
        rendered.capacity = capacity_input(
            plan, api, base_urls, reset_url=resets[0] if resets else None, seed=_seed(plan, run_id)
        )
    if signing is not None:
        rendered.workload["signing"] = signing
    if clients is not None and plan.auth.api_key_env:
        # The tester sends the first key of the same secret (gatebench.vm._tokens).
        rendered.workload["client_key"] = {"env": plan.auth.api_key_env, "secret": clients}
    return rendered


def role_args_of(run_id: str, runs_bucket: str) -> list[str]:
    return ["--run-id", run_id, "--runs-bucket", runs_bucket]


def _api_clients(plan: Plan, settings: Mapping[str, Any]) -> str | None:
    """With ``auth.api_key`` policies: the Secret Manager secret holding the valid keys (the
    deployment's ``api_clients``, readable by the gateway and tester VMs alone:
    infra/secrets.tf). A name, never a key: nothing in a bucket, a store or a workflow
    argument holds one."""
    if not api_key_envs(plan.policies):
        return None
    secret = str(settings.get("api_clients") or "")
    if not secret:
        raise RequestError(
            [
                Problem(
                    "/x-gatebench/policies",
                    "this deployment has no API keys for auth.api_key: set the Terraform "
                    "variable api_clients to a Secret Manager secret holding the valid keys, "
                    'comma-separated (docs/cloud.md, "API keys")',
                )
            ]
        )
    project = str(settings.get("project") or "")
    return f"projects/{project}/secrets/{secret}"


def _signing(plan: Plan, settings: Mapping[str, Any], load_s: float) -> dict[str, Any] | None:
    """With ``auth.jwt``: what the tester signs the run's tokens with, just before the load
    (gatebench.vm._tokens): the claims, the pool, the lifetime, and the Secret
    Manager secret holding the private key (the deployment's ``jwt_signer``, readable by the
    tester VMs alone: infra/secrets.tf). A name, never the key: nothing in a bucket can sign."""
    if plan.auth.jwt_private_key_env is None:
        return None
    where = "/x-gatebench/auth/jwt"
    secret = str(settings.get("jwt_signer") or "")
    if not secret:
        raise RequestError(
            [
                Problem(
                    where,
                    "this deployment has no signing key for auth.jwt: set the Terraform "
                    "variable jwt_signer to a Secret Manager secret holding the PEM private key "
                    '(docs/cloud.md, "Signed tokens"), or give auth: {bearer: {env: NAME}} '
                    "with a token signed beforehand",
                )
            ]
        )
    try:
        spec = signing_spec(plan, load_s)
    except TokenSignerError as exc:
        raise RequestError([Problem(f"{where}/lifetime", str(exc))]) from None
    project = str(settings.get("project") or "")
    return {**spec, "secret": f"projects/{project}/secrets/{secret}"}


def _testers(plan: Plan, layout: Layout, machine_type: str, role_args: list[str]) -> dict[str, Any]:
    """The tester VMs. With several, they meet before every phase at tester 0's barrier
    (``--barrier``: tester 0 serves it, the others call it), which listens on ``listen``
    (tester 0's startup script opens it; infra/vms/main.tf)."""
    count = plan.infrastructure.testers if plan.infrastructure else 1
    tester: dict[str, Any] = {
        "machine_type": machine_type,
        "disk_gb": disk_gib_per_tester(plan.to_dict()),  # its raw log's bound, twice
        "args": ["cloud", "tester", *role_args],
        "count": count,
        "listen": [],
        # A TLS plan's handshakes are counted from the packets arriving (gatebench.local._wire).
        "caps": ["NET_RAW"] if plan.tls is not None else [],
    }
    if count > 1:
        tester["args"] += ["--barrier", layout.barrier_url()]
        tester["listen"] = [layout.barrier_port()]
    return tester


def _backend_url(plan: Plan, layout: Layout) -> str:
    if plan.backend.kind == "url":
        return (plan.backend.url or "").rstrip("/")
    return layout.backend_url()


def _backend(
    plan: Plan, layout: Layout, run_id: str, tls: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``backend.json``: what ``gatebench cloud backend`` starts on the backend VM (the
    replicas' ports, replica 1's TLS listener for the baseline, the fault's control)."""
    mode = "mock" if plan.backend.kind == "mock" else (plan.backend.builtin or "auction")
    host = layout.listen_host
    out: dict[str, Any] = {
        "mode": mode,
        "listen": f"{host}:{layout.backend_port()}",
        "config_object": run_object(run_id, "mock-backend.json") if mode == "mock" else None,
    }
    if plan.backend.replicas > 1:
        out["replicas"] = [f"{host}:{p}" for p in layout.replica_ports(plan.backend.replicas)]
    if tls is not None:
        out["tls"] = dict(
            tls, listen=f"{host}:{layout.backend_tls_port()}", host=layout.backend_host()
        )
    if plan.fault is not None:
        out["control"] = f"{host}:{layout.backend_control_port()}"
    return out


def _backend_vm(
    plan: Plan,
    layout: Layout,
    backend: Mapping[str, Any],
    machine_type: str,
    role_args: list[str],
) -> dict[str, Any]:
    """The backend VM of the fleet: every port its startup script opens."""
    ports = layout.replica_ports(plan.backend.replicas)
    if "tls" in backend:
        ports.append(layout.backend_tls_port())
    if "control" in backend:
        ports.append(layout.backend_control_port())
    return {
        "machine_type": machine_type,
        "port": layout.backend_port(),
        "ports": ports,
        "args": ["cloud", "backend", *role_args],
        # With a fault the backend VM counts the connection attempts to the killed replica
        # from the packets arriving (gatebench.local._wire).
        "caps": ["NET_RAW"] if plan.fault is not None else [],
    }


def _render_gateway(
    name: str,
    api: Api,
    layout: Layout,
    backend_url: str,
    run_id: str,
    needed: Collection[str] = (),
    *,
    cpu: CpuPolicy,
    concurrency: int = DEFAULT_CONCURRENCY,
    policies: PolicySet | None = None,
    plan: Plan | None = None,
    pool: list[str] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    renderer = get_renderer(name)
    if renderer.cloud_image is None:
        raise RenderError(f"{name} is a managed service: there is no image to run on a VM")
    workdir = layout.gateway_workdir(name)
    tls = plan.tls if plan is not None else None
    target = gateway_target(
        cpu,
        workdir=workdir,
        listen_host=layout.listen_host,
        listen_port=layout.gateway_port(name),
        backend_url=backend_url,
        # The files its VM makes at boot (gatebench cloud gateway-tls), under its folder.
        tls=None
        if tls is None
        else GatewayTls(
            f"{workdir}/{TLS_DIR}", key_type=tls.key, http2=tls.http2, resumption=tls.resumption
        ),
        replicas=pool or (),
        balance=plan.backend.balance if plan is not None else "round_robin",
        concurrency=concurrency,
    )
    # A gateway that cannot apply the plan's policies is left out with the reason
    # (UnsupportedFeature → the run's failures), never deployed bare.
    files = render_leaving_out(renderer, api, target, needed, policies=policies).files
    entry = {
        "image": renderer.cloud_image,
        "port": layout.gateway_port(name),
        "mount": target.workdir,
        "files": [{"object": config_object(run_id, name, p), "path": p} for p in sorted(files)],
        "dirs": _prepared_dirs(renderer),
        "args": renderer.cloud_argv(target) or [],
        # What the gateway always runs with (KrakenD's USAGE_DISABLE, GOMAXPROCS = its cores).
        "env": renderer.runtime_env(target),
        # Names only: the VM generates each value at boot (Tyk's control-API secret).
        "random_env": list(renderer.cloud_random_env),
        "sidecars": [{"name": "redis", "image": REDIS_IMAGE, "args": []}] if name == "tyk" else [],
    }
    return entry, files


def _direct(
    layout: Layout, backend_url: str, rendered: RenderedRun, tls: Mapping[str, Any] | None
) -> str:
    """The backend as the tester reaches it without a gateway (the baseline's URL)."""
    if tls is not None and rendered.backend is not None:
        return f"https://{layout.backend_host()}:{layout.backend_tls_port()}"
    return backend_url


def _targets(
    plan: Plan,
    layout: Layout,
    gateways: list[str],
    backend_url: str,
    rendered: RenderedRun,
    tls: Mapping[str, Any] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """Each target's URL as the tester reaches it (over TLS with the run's ``tls``), and the
    backend replicas' reset URLs (none for a backend without one)."""
    base_urls = {g: layout.gateway_url(g, tls=tls is not None) for g in gateways}
    if plan.baseline:
        base_urls[BASELINE] = _direct(layout, backend_url, rendered, tls)
    resets: list[str] = []
    if rendered.backend is not None and rendered.backend["mode"] in ("mock", "auction"):
        replicas = layout.replica_urls(plan.backend.replicas)
        resets = [f"{url}{CONTROL_PREFIX}reset" for url in replicas]
    return base_urls, resets


def _seed(plan: Plan, run_id: str) -> int:
    return plan.seed if plan.seed is not None else int(run_id[2:10], 16)


def _workload(
    plan: Plan,
    api: Api,
    layout: Layout,
    gateways: list[str],
    backend_url: str,
    rendered: RenderedRun,
    run_id: str,
    tls: Mapping[str, Any] | None = None,
    *,
    quick: bool = False,
) -> dict[str, Any]:
    base_urls, resets = _targets(plan, layout, gateways, backend_url, rendered, tls)
    compiled = compile_load(
        plan,
        api,
        base_urls,
        reset_url=resets[0] if resets else None,
        reset_urls=resets[1:],
        seed=_seed(plan, run_id),
        trust_store=TRUST_STORE_ON_TESTER if tls is not None else None,
        reset_wait_s=RESET_WAIT_S if plan.fault is not None else 0.0,
        # The testers run Gatling (gatling/): it warms itself against the backend first.
        engine_warmup=engine_warmup(
            _direct(layout, backend_url, rendered, tls), "gatling", quick=quick
        ),
    )
    document = compiled.document  # with tls, the tester reads the run's CA (gatebench.cloud._tls)
    if plan.fault is not None and rendered.backend is not None:
        offsets = fault_offsets(plan.fault, compiled.schedule.phases)
        document["fault"] = {
            "replica": plan.fault.replica,
            "port": layout.replica_ports(plan.backend.replicas)[plan.fault.replica - 1],
            "control": layout.backend_control_url(),
            "phases": {str(index): offset for index, offset in sorted(offsets.items())},
        }
    return document
