"""The render step of the cloud path: a parsed run → every gateway's configuration, the
machines to create (the "fleet") and the workload the tester will run.

Everything that addresses a machine comes from the run's :class:`Layout`, so it is decided
here, before any VM exists. Pure apart from asking each renderer which folders it wants
beside its files (its ``prepare`` hook, run in a scratch folder). The same run rendered
twice gives the same bytes: the workload's seed is the plan's, or derived from the run id.
"""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..api_keys import REDACTED, api_key_envs, with_api_keys
from ..backends import CONTROL_PREFIX
from ..backends.mock import mock_config
from ..cost import disk_gib_per_tester, load_seconds, vm_max_run_s
from ..errors import GatebenchError, PlanError, Problem, RenderError, RunError
from ..ir import Api
from ..plan import Plan, cloud_problems, load_plan
from ..policies import PolicySet
from ..renderers import RenderTarget, get_renderer
from ..renderers._leave_out import render_leaving_out
from ..run_request import METADATA_HEADER, METADATA_KEY, UploadRejected, run_request_from_metadata
from ..score import BASELINE
from ..spec import read_spec
from ..tokens import SIGNED_TOKENS_FILE_ENV, TokenSignerError, signing_spec
from ..workload import compile_load
from ._layout import Layout, layout_for
from ._objects import ObjectRef, RequestError

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


def config_error_object(run_id: str, gateway: str) -> str:
    """Where a gateway VM says why it did not start its gateway (the tester reports it)."""
    return f"runs/{run_id}/gateways/{gateway}/config-error.json"


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
    live: dict[str, Any] | None = None
    """A scale or change-under-load run (the run request's ``kind``): the tester's program
    (``gatebench.cloud._live.LIVE_PLAN``)."""

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
        if self.live is not None:
            from ._live import LIVE_PLAN

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
    gateway's files are rendered with :data:`~gatebench.api_keys.REDACTED` in their place, for
    the record, and each gateway VM renders them again with the keys of the deployment's
    ``api_clients`` secret, read with its own account, before its gateway starts
    (``api_keys``: that secret's text; gatebench.provisioners._vm_gateway_config)."""
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
    refused = request.problems(plan, source=METADATA_HEADER)
    if refused:
        raise RequestError(refused)
    plan = request.apply(plan)
    if request.scale is not None:  # route scale or a change under load: cloud._live
        from ._live import render_live_run

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
    not_here = cloud_problems(plan)
    if not_here:
        raise RequestError(not_here)
    signing = _signing(plan, settings)
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
    gateways: dict[str, Any] = {}
    backend_url = _backend_url(plan, layout)
    for name in plan.gateways:
        try:
            entry, files = _render_gateway(
                name,
                api,
                layout,
                backend_url,
                run_id,
                {w.operation_id for w in plan.workloads},
                policies=plan.policies,
            )
        except GatebenchError as exc:
            problems = getattr(exc, "problems", None)
            reason = "; ".join(p.message for p in problems) if problems else str(exc)
            rendered.failures[name] = reason
            continue
        entry["machine_type"] = gateway_machine
        entry["configure"] = []
        if clients is not None:  # the VM writes the key-bearing files before the gateway starts
            out = ["--gateway", name, "--out", entry["mount"]]
            entry["configure"] = [
                ["cloud", "gateway-config", *role_args_of(run_id, runs_bucket), *out]
            ]
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
        mode = "mock" if plan.backend.kind == "mock" else (plan.backend.builtin or "auction")
        rendered.backend = {
            "mode": mode,
            "listen": f"{layout.listen_host}:{layout.backend_port()}",
            "config_object": run_object(run_id, "mock-backend.json") if mode == "mock" else None,
        }
        if mode == "mock":
            rendered.mock = mock_config(api, plan.backend)
    rendered.fleet = {
        "run_id": run_id,
        "zone": layout.zone,
        "backend": None
        if rendered.backend is None
        else {
            "machine_type": backend_machine,
            "port": layout.backend_port(),
            "ports": [layout.backend_port()],
            "args": ["cloud", "backend", *role_args],
        },
        "gateways": gateways,
        "tester": _testers(plan, layout, tester_machine, role_args),
        "failures": rendered.failures,
        # The VMs delete themselves after the plan's estimate plus a margin (the deployment's
        # limits.vm_lifetime caps it: gatebench.cloud._vms).
        "max_run_duration_s": vm_max_run_s(plan.to_dict()),
    }
    rendered.workload = _workload(plan, api, layout, list(gateways), backend_url, rendered, run_id)
    if signing is not None:
        rendered.workload["signing"] = signing
    if clients is not None and plan.auth.api_key_env:
        # The tester sends the first key of the same secret (gatebench.provisioners._vm_tokens).
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


def _signing(plan: Plan, settings: Mapping[str, Any]) -> dict[str, Any] | None:
    """With ``auth.jwt``: what the tester signs the run's tokens with, just before the load
    (gatebench.provisioners._vm_tokens): the claims, the pool, the lifetime, and the Secret
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
        spec = signing_spec(plan, load_seconds(plan.to_dict()))
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
    }
    if count > 1:
        tester["args"] += ["--barrier", layout.barrier_url()]
        tester["listen"] = [layout.barrier_port()]
    return tester


def _backend_url(plan: Plan, layout: Layout) -> str:
    if plan.backend.kind == "url":
        return (plan.backend.url or "").rstrip("/")
    return layout.backend_url()


def _render_gateway(
    name: str,
    api: Api,
    layout: Layout,
    backend_url: str,
    run_id: str,
    needed: Collection[str] = (),
    *,
    policies: PolicySet | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    renderer = get_renderer(name)
    if renderer.cloud_image is None:
        raise RenderError(f"{name} is a managed service: there is no image to run on a VM")
    target = RenderTarget(
        workdir=layout.gateway_workdir(name),
        listen_host=layout.listen_host,
        listen_port=layout.gateway_port(name),
        backend_url=backend_url,
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
        # Names only: the VM generates each value at boot (Tyk's control-API secret).
        "random_env": list(renderer.cloud_random_env),
        "sidecars": [{"name": "redis", "image": REDIS_IMAGE, "args": []}] if name == "tyk" else [],
    }
    return entry, files


def _workload(
    plan: Plan,
    api: Api,
    layout: Layout,
    gateways: list[str],
    backend_url: str,
    rendered: RenderedRun,
    run_id: str,
) -> dict[str, Any]:
    base_urls = {g: layout.gateway_url(g) for g in gateways}
    if plan.baseline:
        base_urls[BASELINE] = backend_url
    reset = f"{backend_url}{CONTROL_PREFIX}reset" if rendered.backend is not None else None
    if rendered.backend is not None and rendered.backend["mode"] not in ("mock", "auction"):
        reset = None
    seed = plan.seed if plan.seed is not None else int(run_id[2:10], 16)
    return compile_load(plan, api, base_urls, reset_url=reset, seed=seed).document
