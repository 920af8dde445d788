"""Route scale and changes under load on the cloud path (docs/cloud.md, "Route scale and
changes under load"; the measurements themselves: docs/scale.md).

The workflow is the fixed run's (parse, render, provision, load, score, export, teardown); the
upload's run request chooses the kind (``kind: scale`` or ``change-under-load`` in its
``x-goog-meta-gatebench`` metadata, with the ``scale`` settings). What differs is what the steps
write and what the VMs do:

- **render** (:func:`render_live_run`): every gateway's files for every step (``size-N`` for
  each table size; ``before`` and ``after`` for a change), rendered for its VM with what its live
  mechanism needs (``Renderer.render_live``) and its management port on the VM's loopback
  (:data:`ADMIN_PORT`), under ``runs/RUN/configs/GATEWAY/steps/STEP/``; the change's new
  files also rendered into :data:`CHECK_DIR` for the gateway's own checker; each gateway's
  manifest (``configs/GATEWAY/live.json``); the backend VM's echo backends ``a`` and, for a
  change, ``b`` on :data:`CHANGED_BACKEND_PORT`; the tester's program (:data:`LIVE_PLAN`: the
  description, the request's settings, each gateway's address and steps);
- **provision**: the same VMs; a gateway VM boots its gateway on the first step's files and
  starts its live agent beside it (``gatebench cloud live-gateway``, with the VM's Docker
  socket: gatebench.vm._live_agent);
- **load**: the tester runs the same measurements as a local run (``gatebench.local.liveruns``),
  telling each gateway's agent through the runs bucket (:func:`request_object`,
  :func:`answer_object`) when to start its container on a step's files or to apply the
  change, :data:`LEAD_S` ahead, and writes each scale point or change outcome
  (:func:`result_object`);
- **score** (:func:`finish_live_run`): the results with the memory the gateway VMs' meters
  sampled (the container's working set idle and under the load), stored
  (``ResultStore.put_result``, as a local run stores them), the report (``scale.json``,
  ``scale.html``) and the BigQuery rows written. A change outcome can outgrow a Firestore
  document (one time per new route, up to 100,000; a 100 ms bucket per tenth of a second of a
  window up to an hour): Firestore keeps its figures and a bounded part of each list
  (:func:`bounded_change`), the bucket the whole outcome (:func:`change_object`).

Pure apart from asking each renderer which folders it wants beside its files.
"""

from __future__ import annotations

import base64
import json
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any, BinaryIO, Protocol

from gatebench.cloud._ingest import METER_GAPS, wait_for_meters
from gatebench.cloud._layout import (
    BACKEND_PORT,
    CONTAINER_WORKDIR,
    GATEWAY_PORT,
    Layout,
    layout_for,
)
from gatebench.cloud._objects import (
    NothingMeasured,
    ObjectRef,
    RequestError,
    failure_reason,
    rows_object,
)
from gatebench.cloud._tester import Clock
from gatebench.core.cost import live_seconds, vm_max_run_s
from gatebench.core.errors import GatebenchError, Problem
from gatebench.core.fairness import CpuPolicy, gateway_target, rate_concurrency, vm_cpu_policy
from gatebench.core.ir import Api
from gatebench.core.model import RunRecord
from gatebench.core.plan import Plan
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.resources import cgroup_window
from gatebench.core.routescale import replicate
from gatebench.core.scaleplan import ScaleAsk
from gatebench.core.spec import SpecResult
from gatebench.core.stats import counted
from gatebench.kinds._live._plan import scale_problems
from gatebench.kinds._live._report import (
    CHANGE_KIND,
    SCALE_KIND,
    point_key,
    render_scale_html,
    scale_bigquery_rows,
    stored_scale_document,
)
from gatebench.kinds._live.metrics import ChangeOutcome, Latency, ScalePoint, files_bytes
from gatebench.kinds.request import METADATA_HEADER, RunRequest
from gatebench.store import ResultStore

ADMIN_PORT = 8001
"""A gateway VM's management port (Caddy's admin API, the JVM gateways' refresh endpoint,
Varnish's CLI, Envoy's admin) in a scale or change-under-load run: on the VM's loopback only.
No startup-script line opens it (Container-Optimized OS accepts loopback traffic) and no
firewall rule reaches it: only the live agent beside the gateway does."""
CHANGED_BACKEND_PORT = BACKEND_PORT + 1
"""A change-under-load run's second echo backend (``b``, the upstream the change moves to) on
the backend VM; its startup script opens it and the network's gateway → backend rule allows it
(infra/modules/network ``ports.backend_last``)."""
LEAD_S = 2.0
"""How long before a start or a change the tester tells a gateway VM's agent (its request goes
through the runs bucket; the agent reads it every :data:`POLL_S`). The agent acts at the
moment asked for and says when it really did; the figures count from then."""
POLL_S = 0.2
"""How often a live agent reads its request, and the tester the agent's answer."""
CHECK_DIR = ".check"
"""Where, inside a gateway's folder, the change's files rendered for the checker go."""
LIVE_PLAN = "live/plan.json"
"""The tester's program: its presence makes the tester measure instead of running a workload."""
MANIFEST = "live.json"
"""A gateway's manifest of steps, beside its configuration (``runs/RUN/configs/GATEWAY/``)."""
CONTAINER = "gateway"
"""The gateway's container on its VM (infra/vms/templates/gateway.sh.tftpl)."""
BACKENDS = ("a", "b")
MEMORY = (
    "the gateway container's working set: its cgroup v2 memory.current less inactive_file, "
    "sampled every 0.2 s by its VM's meter"
)
"""What the memory figures of a cloud scale run are (the local run's: the process tree's RSS)."""


def request_object(run_id: str, gateway: str) -> str:
    """The tester → agent request of a gateway (one object, replaced at every request)."""
    return f"runs/{run_id}/live/{gateway}/request.json"


def answer_object(run_id: str, gateway: str) -> str:
    """The agent → tester answer of a gateway (one object, replaced at every answer)."""
    return f"runs/{run_id}/live/{gateway}/answer.json"


def result_object(run_id: str, gateway: str, step: str) -> str:
    """A scale point (step ``size-N``) or change outcome (step ``change``) the tester measured."""
    return f"runs/{run_id}/live/{gateway}/{step}.result.json"


def change_object(run_id: str, gateway: str) -> str:
    """A change outcome as the score step stored it, whole (Firestore holds a bounded copy)."""
    return f"runs/{run_id}/live/{gateway}/change.json"


NEW_ROUTES_KEPT = 1000
"""The new routes a stored change keeps (those never answered first, then the slowest)."""
SERIES_KEPT = 600
"""The 100 ms buckets a stored change keeps (the ones nearest the change: a minute)."""
TEXT_KEPT = 200
"""The characters a stored change keeps of an error's text."""
KINDS_KEPT = 100
"""The kinds of failure a stored change keeps (the most frequent)."""


def bounded_change(outcome: ChangeOutcome, whole: str) -> dict[str, Any]:
    """A change outcome as Firestore stores it: every figure (the new routes' count, how many
    answered and their median among them), at most :data:`NEW_ROUTES_KEPT` new routes (every one
    that never answered, then the slowest), the :data:`SERIES_KEPT` buckets nearest the change,
    the failed requests (already at most ``ERRORS_KEPT``) and failure kinds with their texts cut
    to :data:`TEXT_KEPT` characters, and where the whole outcome is (``whole``: the object
    :func:`change_object` names). What was cut is counted in ``kept``."""
    data = outcome.to_dict()
    routes = sorted(
        outcome.new_routes_s.items(),
        key=lambda kv: (kv[1] is not None, -(kv[1] or 0.0), kv[0]),
    )[:NEW_ROUTES_KEPT]
    data["new_routes_s"] = dict(sorted(routes))
    series = sorted(outcome.series, key=lambda b: (abs(float(b["t_ms"])), float(b["t_ms"])))
    data["series"] = sorted(series[:SERIES_KEPT], key=lambda b: float(b["t_ms"]))
    data["failed"] = [
        {**f, "error": _cut(str(f.get("error") or "")), "route": _cut(str(f.get("route") or ""))}
        for f in outcome.failed
    ]
    kinds = sorted(outcome.failure_kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:KINDS_KEPT]
    data["failure_kinds"] = {_cut(k): v for k, v in sorted(kinds)}
    data["problem"] = _cut(outcome.problem, 1500)
    data["kept"] = {
        "new_routes_s": len(data["new_routes_s"]),
        "series": len(data["series"]),
        "failure_kinds": len(data["failure_kinds"]),
    }
    data["whole"] = whole
    return data


def _cut(text: str, limit: int = TEXT_KEPT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def manifest_object(run_id: str, gateway: str) -> str:
    return f"runs/{run_id}/configs/{gateway}/{MANIFEST}"


def step_object(run_id: str, gateway: str, step: str, path: str) -> str:
    return f"runs/{run_id}/configs/{gateway}/steps/{step}/{path}"


def live_steps(ask: ScaleAsk) -> list[tuple[str, int, str]]:
    """(step, routes, backend) in the order the tester takes them."""
    if ask.kind == "scale":
        return [(f"size-{n}", n, BACKENDS[0]) for n in ask.sizes]
    assert ask.change is not None
    total = ask.change.routes_before + ask.change.routes_added
    return [("before", ask.change.routes_before, BACKENDS[0]), ("after", total, BACKENDS[1])]


def backend_urls(layout: Layout) -> dict[str, str]:
    host = layout.backend_url().rsplit(":", 1)[0]
    return {BACKENDS[0]: layout.backend_url(), BACKENDS[1]: f"{host}:{CHANGED_BACKEND_PORT}"}


def live_problems(result: SpecResult, request: RunRequest) -> list[Problem]:
    """What the cloud path refuses in a scale or change-under-load request: the description's
    TLS, replicas or fault (neither path carries them into these runs), a change told to the
    gateway VM later than it can be (:data:`LEAD_S`)."""
    out: list[Problem] = []
    if result.benchmark_loc is not None:
        found = scale_problems(
            result.benchmark, result.benchmark_loc.pointer, result.benchmark_loc.doc
        )
        reader = result.reader
        out += [reader.locate(p) for p in found] if reader else found
    ask = request.scale
    if ask is not None and ask.change is not None and ask.change.change_after_s < LEAD_S:
        out.append(
            Problem(
                "/scale/change_after",
                f"at least {LEAD_S:g} s on the cloud path: the gateway VM is told of the change "
                f"{LEAD_S:g} s ahead, through the runs bucket; got {ask.change.change_after_s:g}",
                source=METADATA_HEADER,
            )
        )
    return out


class _Rendered(Protocol):
    """What :func:`render_live_run` fills (``cloud._render.RenderedRun``)."""

    run_id: str
    configs: dict[str, dict[str, str]]
    fleet: dict[str, Any]
    workload: dict[str, Any]
    backend: dict[str, Any] | None
    failures: dict[str, str]
    live: dict[str, Any] | None
    cpu: CpuPolicy | None


def render_live_run(
    rendered: _Rendered,
    data: bytes,
    ref: ObjectRef,
    result: SpecResult,
    plan: Plan,
    request: RunRequest,
    settings: Mapping[str, Any],
    runs_bucket: str,
    machines: tuple[str, str, str],
    prepared_dirs: Any,
    redis_image: str,
) -> None:
    """Fill ``rendered`` for a scale or change-under-load run (module docstring).
    ``machines``: the gateway, tester and backend machine types; ``prepared_dirs``: a
    renderer → the folders it wants beside its files; ``redis_image``: Tyk's Redis."""
    refused = live_problems(result, request)
    if refused:
        raise RequestError(refused)
    ask, api = request.scale, result.api
    assert ask is not None and api is not None
    run_id = ref.run_id
    zone = (plan.infrastructure.zone if plan.infrastructure else None) or settings.get("zone")
    layout = layout_for(dict(settings), run_id, list(plan.gateways), zone=zone)
    if layout.kind != "dns":
        raise RequestError(
            [Problem("/layout", "scale and change-under-load runs need the dns layout (VMs)")]
        )
    gateway_machine, tester_machine, backend_machine = machines
    steps = live_steps(ask)
    grown = {step: replicate(api, routes) for step, routes, _ in steps}
    urls = backend_urls(layout)
    role_args = ["--run-id", run_id, "--runs-bucket", runs_bucket]
    program: dict[str, Any] = {}
    # The same share for every gateway: every vCPU of its VM; pools hold the constant rate.
    cpu = vm_cpu_policy(gateway_machine)
    rendered.cpu = cpu
    concurrency = rate_concurrency(ask.settings.rate)
    for name in plan.gateways:
        try:
            entry, files, about = _render_gateway(
                name,
                steps,
                grown,
                urls,
                run_id,
                role_args,
                prepared_dirs,
                redis_image,
                cpu=cpu,
                concurrency=concurrency,
            )
        except GatebenchError as exc:
            rendered.failures[name] = failure_reason(exc)
            continue
        entry["machine_type"] = gateway_machine
        rendered.fleet.setdefault("gateways", {})[name] = entry
        rendered.configs[name] = files
        program[name] = {
            "url": layout.gateway_url(name),
            "steps": about,
        }
    rendered.backend = {
        "mode": "echo",
        "listen": f"{layout.listen_host}:{layout.backend_port()}",
        "instances": {
            b: f"{layout.listen_host}:{urls[b].rsplit(':', 1)[1]}"
            for b in BACKENDS[: 1 if ask.kind == "scale" else 2]
        },
    }
    ports = sorted({int(v.rsplit(":", 1)[1]) for v in rendered.backend["instances"].values()})
    load_s = live_seconds(ask, len(program))
    rendered.fleet.update(
        run_id=run_id,
        zone=layout.zone,
        backend={
            "machine_type": backend_machine,
            "port": layout.backend_port(),
            "ports": ports,
            "args": ["cloud", "backend", *role_args],
        },
        tester={
            "machine_type": tester_machine,
            "args": ["cloud", "tester", *role_args],
            "count": 1,
            "listen": [],
        },
        failures=rendered.failures,
        max_run_duration_s=vm_max_run_s(plan.to_dict(), load_s=load_s),
    )
    rendered.fleet.setdefault("gateways", {})
    # What the tester first reaches (provision's readiness): each gateway's address.
    rendered.workload = {
        "kind": ask.kind,
        "phases": [
            {"target": name, "request": {"base_url": about["url"]}}
            for name, about in sorted(program.items())
        ],
    }
    rendered.live = {
        "kind": ask.kind,
        "spec": {
            "name": posixpath.basename(ref.name) or "spec",
            "entry": request.entry,
            "data": base64.b64encode(data).decode("ascii"),
        },
        "scale": ask.to_json(),
        "backends": {b: urls[b] for b in BACKENDS},
        "gateways": program,
        "gateway_machine": gateway_machine,
        "lead_s": LEAD_S,
        "poll_s": POLL_S,
        "failures": rendered.failures,
    }


def _target(workdir: str, backend_url: str, cpu: CpuPolicy, concurrency: int) -> RenderTarget:
    return gateway_target(
        cpu,
        workdir=workdir,
        listen_host="0.0.0.0",
        listen_port=GATEWAY_PORT,
        backend_url=backend_url,
        admin_port=ADMIN_PORT,
        concurrency=concurrency,
    )


def _render_gateway(
    name: str,
    steps: Sequence[tuple[str, int, str]],
    grown: Mapping[str, Api],
    urls: Mapping[str, str],
    run_id: str,
    role_args: list[str],
    prepared_dirs: Any,
    redis_image: str,
    *,
    cpu: CpuPolicy,
    concurrency: int,
) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """A gateway's fleet entry, its objects under ``configs/GATEWAY/`` (every step's files and
    the manifest) and what the tester needs of its steps."""
    renderer = get_renderer(name)
    if renderer.cloud_image is None:
        raise GatebenchError(f"{name} is a managed service: there is no image to run on a VM")
    objects: dict[str, str] = {}
    manifest_steps: dict[str, Any] = {}
    about: dict[str, Any] = {}
    first: RenderTarget | None = None
    first_files: list[dict[str, str]] = []
    for step, routes, backend in steps:
        target = _target(CONTAINER_WORKDIR, urls[backend], cpu, concurrency)
        files = renderer.render_live(grown[step], target)
        listed = []
        for path, text in sorted(files.items()):
            objects[f"steps/{step}/{path}"] = text
            listed.append({"object": step_object(run_id, name, step, path), "path": path})
        check = None
        if step == "after":  # a change is checked by the gateway's own checker first
            staged = _target(f"{CONTAINER_WORKDIR}/{CHECK_DIR}", urls[backend], cpu, concurrency)
            argv = renderer.cloud_check_argv(staged)
            if argv is not None:
                check_files = renderer.render_live(grown[step], staged)
                check_listed = []
                for path, text in sorted(check_files.items()):
                    objects[f"steps/{step}-check/{path}"] = text
                    check_listed.append(
                        {"object": step_object(run_id, name, f"{step}-check", path), "path": path}
                    )
                check = {"files": check_listed, "argv": argv, "dir": CHECK_DIR}
        manifest_steps[step] = {
            "files": listed,
            "bytes": files_bytes(files),
            "routes": routes,
            "backend": backend,
            "check": check,
        }
        about[step] = {"routes": routes, "bytes": files_bytes(files), "backend": backend}
        if first is None:
            first, first_files = target, listed
    assert first is not None
    dirs = prepared_dirs(renderer)
    objects[MANIFEST] = json.dumps(
        {
            "gateway": name,
            "container": CONTAINER,
            "mount": CONTAINER_WORKDIR,
            "dirs": dirs,
            "placeholders": first.placeholders(),
            "steps": manifest_steps,
        },
        indent=1,
        sort_keys=True,
    )
    entry = {
        "image": renderer.cloud_image,
        "port": GATEWAY_PORT,
        "mount": CONTAINER_WORKDIR,
        "files": first_files,
        "dirs": dirs,
        "args": renderer.cloud_argv(first) or [],
        "env": renderer.runtime_env(first),
        "random_env": list(renderer.cloud_random_env),
        "configure": [],
        "sidecars": [{"name": "redis", "image": redis_image, "args": []}] if name == "tyk" else [],
        "live": [
            [
                "cloud",
                "live-gateway",
                *role_args,
                "--gateway",
                name,
                "--dir",
                CONTAINER_WORKDIR,
            ]
        ],
    }
    return entry, objects, about


class Bucket(Protocol):
    """The runs bucket as the VMs use it (``cloud.Storage``)."""

    def read_optional(self, bucket: str, name: str) -> bytes | None: ...

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = ...) -> None: ...


def read_json(storage: Bucket, bucket: str, name: str) -> dict[str, Any] | None:
    """A JSON object of the runs bucket (None: missing, or not an object)."""
    data = storage.read_optional(bucket, name)
    if data is None:
        return None
    value = json.loads(data)
    return value if isinstance(value, dict) else None


def write_json(storage: Bucket, bucket: str, name: str, value: dict[str, Any]) -> None:
    storage.write(bucket, name, json.dumps(value, sort_keys=True), "application/json")


# -- the score step ------------------------------------------------------------------------


class _Bucket(Protocol):
    def read_optional(self, bucket: str, name: str) -> bytes | None: ...

    def open_optional(self, bucket: str, name: str) -> BinaryIO | None: ...

    def names(self, bucket: str, prefix: str) -> list[str]: ...

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = ...) -> None: ...


def _point(data: Mapping[str, Any]) -> ScalePoint:
    fields = dict(data)
    fields["latency"] = {k: Latency(**v) for k, v in (data.get("latency") or {}).items()}
    return ScalePoint(**fields)


def _change(data: Mapping[str, Any]) -> ChangeOutcome:
    fields = {k: v for k, v in data.items() if k not in _DERIVED}
    fields["before"] = Latency(**data["before"])
    fields["during"] = Latency(**data["during"])
    return ChangeOutcome(**fields)


_DERIVED = (
    "all_new_routes_answered",
    "slowest_new_route_s",
    "new_routes",
    "new_routes_answered",
    "new_route_median_s",
    "kept",
    "whole",
)


def live_results(storage: _Bucket, bucket: str, run_id: str) -> list[dict[str, Any]]:
    """Every result the tester wrote, in name order."""
    out = []
    for name in storage.names(bucket, f"runs/{run_id}/live/"):
        if not name.endswith(".result.json"):
            continue
        data = storage.read_optional(bucket, name)
        if data is not None:
            out.append(json.loads(data))
    return out


def with_memory(
    point: ScalePoint, memory: Mapping[str, Any], samples: Sequence[Any]
) -> tuple[ScalePoint, bool]:
    """The point with its memory idle (the working set around ``idle_ms``) and under load
    (the highest over ``load_ms``) from the gateway VM's meter samples; whether both were
    covered."""
    from dataclasses import replace

    idle_ms, load_ms = memory.get("idle_ms"), memory.get("load_ms")
    idle = cgroup_window(samples, idle_ms, idle_ms) if idle_ms is not None else None
    load = cgroup_window(samples, load_ms[0], load_ms[1]) if load_ms else None
    filled = replace(
        point,
        rss_idle_mb=round(idle[1], 2) if idle else None,
        rss_load_mb=round(load[1], 2) if load else None,
    )
    wanted = (idle_ms is not None) + bool(load_ms)
    return filled, (idle is not None) + (load is not None) == wanted


def finish_live_run(
    store: ResultStore,
    storage: _Bucket,
    bucket: str,
    run: RunRecord,
    *,
    meter_wait_s: float = 0.0,
    clock: Clock | None = None,
) -> dict[str, Any]:
    """A scale or change-under-load run's results stored with their memory, its report and
    rows written, and how it ended (``partial`` when a gateway failed or a point has a
    problem, as locally)."""
    run_id = run.run_id
    results = live_results(storage, bucket, run_id)
    if not results:
        raise NothingMeasured(
            [Problem("/run_id", f"run {run_id!r} has no scale point or change outcome")]
        )
    metered = sorted({r["gateway"] for r in results if r.get("kind") == SCALE_KIND and r.get("ok")})
    uploads = wait_for_meters(storage, bucket, run_id, metered, meter_wait_s, clock)
    failed = dict(run.target_errors)
    points: list[ScalePoint] = []
    changes: list[ChangeOutcome] = []
    gaps: dict[str, list[str]] = {}
    for item in results:
        gateway = str(item["gateway"])
        if not item.get("ok") or item.get("result") is None:
            failed[gateway] = str(item.get("reason") or "failed")
            continue
        if item["kind"] == SCALE_KIND:
            samples = uploads[gateway].samples if gateway in uploads else []
            point, covered = with_memory(_point(item["result"]), item.get("memory") or {}, samples)
            if not covered and not point.problem:
                gaps.setdefault(gateway, []).append(point_key(point))
            store.put_result(run_id, SCALE_KIND, point_key(point), point.to_dict())
            points.append(point)
        else:
            outcome = _change(item["result"])
            whole = change_object(run_id, gateway)
            storage.write(bucket, whole, json.dumps(outcome.to_dict(), sort_keys=True))
            bounded = bounded_change(outcome, f"gs://{bucket}/{whole}")
            store.put_result(run_id, CHANGE_KIND, gateway, bounded)
            changes.append(outcome)
    environment = {k: v for k, v in run.environment.items() if k != METER_GAPS}
    if gaps:
        environment[METER_GAPS] = {
            g: f"{g}: no memory figure for {counted(len(keys), 'scale point')} ({', '.join(keys)}): the "
            f"samples of its meter (gs://{bucket}/runs/{run_id}/cgroup/{g}.jsonl) do not cover "
            "them"
            for g, keys in gaps.items()
        }
    store.update_run(run_id, target_errors=failed, environment=environment)
    # the report from the whole outcomes: the store's change documents are bounded
    stored = stored_scale_document(store, run_id) or {}
    changed = {c.gateway: c.to_dict() for c in changes}
    document = {
        **stored,
        "changes": [changed.get(str(c.get("gateway")), c) for c in stored.get("changes", [])],
    }
    storage.write(bucket, f"runs/{run_id}/scale.json", json.dumps(document, indent=1) + "\n")
    storage.write(bucket, f"runs/{run_id}/scale.html", render_scale_html(document), "text/html")
    rows = scale_bigquery_rows(run, points, changes)
    text = "".join(json.dumps(row, allow_nan=False) + "\n" for row in rows)
    storage.write(bucket, rows_object(run_id), text, "application/x-ndjson")
    partial = (  # as a local run's ScaleContext decides
        bool(failed)
        or any(p.problem for p in points)
        or not all(c.all_new_routes_answered for c in changes)
    )
    return {
        "run_id": run_id,
        "status": "partial" if partial else "done",
        "missing": sorted(failed),
        "scores": {},
        "rows_uri": f"gs://{bucket}/{rows_object(run_id)}",
        "rows": len(rows),
    }


__all__ = [
    "ADMIN_PORT",
    "BACKENDS",
    "CHANGED_BACKEND_PORT",
    "CHECK_DIR",
    "CONTAINER",
    "LEAD_S",
    "LIVE_PLAN",
    "MANIFEST",
    "MEMORY",
    "POLL_S",
    "Bucket",
    "answer_object",
    "backend_urls",
    "finish_live_run",
    "live_problems",
    "live_results",
    "live_steps",
    "manifest_object",
    "read_json",
    "render_live_run",
    "request_object",
    "result_object",
    "step_object",
    "with_memory",
    "write_json",
]
