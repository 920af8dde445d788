"""Synthetic runs and descriptions: deterministic, made-up data for tests and benchmarks (a
test helper: nothing in the product imports it).

Nothing here is a measurement of anything. Each target gets a base latency and
throughput, each repetition a little seeded noise, so reports, scores and confidence
intervals have something realistic-looking to work on without running a gateway.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from gatebench.core.model import Measurement, RunRecord, RunStatus


def synthetic_run(
    gateways: Sequence[str] = ("nginx", "haproxy", "caddy"),
    workloads: Sequence[str] = ("create-auction", "bid", "retrieve"),
    repetitions: int = 5,
    *,
    baseline: bool = True,
    seed: int = 7,
    run_id: str = "20260101-120000-synthetic",
    created_at: float = 1_767_268_800.0,
) -> tuple[RunRecord, list[Measurement]]:
    rng = random.Random(seed)
    targets = [*gateways, *(["baseline"] if baseline else [])]
    run = RunRecord(
        run_id=run_id,
        spec_uri="file://examples/auction/openapi.yaml",
        spec_sha256="0" * 64,
        status=RunStatus.DONE,
        created_at=created_at,
        updated_at=created_at + 600,
        title="Synthetic auction run",
        gateways=list(gateways),
        workloads=[
            {
                "name": w,
                "operation": w,
                "method": "POST" if w == "bid" else "GET",
                "path": f"/{w}",
                "injection": "50 concurrent users for 10s",
            }
            for w in workloads
        ],
        plan={"repetitions": repetitions, "baseline": baseline, "scoring": {"profile": "paper"}},
        environment={
            "gatling": "3.15.1",
            "jdk": "17.0.13",
            "machine": {"cpus": 2, "memory_gib": 24, "os": "Debian 12"},
            "gateways": {g: f"{1 + i}.{rng.randint(0, 30)}.0" for i, g in enumerate(gateways)},
            "note": "synthetic data",
        },
    )
    measurements: list[Measurement] = []
    for w_index, workload in enumerate(workloads):
        scale = 1.0 + w_index * 1.7
        for t_index, target in enumerate(targets):
            # Each gateway is faster on some workloads than on others.
            speed = 0.55 if target == "baseline" else rng.uniform(0.8, 1.3)
            for rep in range(repetitions):
                noise = rng.gauss(1.0, 0.04)
                mean = 4.0 * scale * speed * noise
                requests = 4000 + 1000 * w_index
                ko = rng.choice((0, 0, 0, 1)) * (t_index % 3)
                duration = 10.0
                measurements.append(
                    Measurement(
                        run_id=run_id,
                        target=target,
                        workload=workload,
                        repetition=rep,
                        requests=requests,
                        ok=requests - ko,
                        ko=ko,
                        error_pct=100.0 * ko / requests,
                        throughput=requests / duration / (speed * noise) * 2.0,
                        min=float(max(0, round(mean * 0.2) - 1)),
                        mean=round(mean, 3),
                        max=float(round(mean * 9 + rng.randint(0, 40))),
                        stddev=round(mean * 0.6 * rng.gauss(1.0, 0.05), 3),
                        p50=float(round(mean * 0.9)),
                        p90=float(round(mean * 1.6)),
                        p95=float(round(mean * 2.1)),
                        p99=float(round(mean * 3.4)),
                        started_at=created_at + 60 + rep * 40 + t_index * 10,
                        duration_s=duration,
                        flags=("noisy",) if rng.random() < 0.05 else (),
                        other_cpu_pct=round(rng.uniform(1, 30), 1),
                        tester_cpu_pct=round(rng.uniform(40, 95), 1),
                        errors=(("status.find.in(200..399), but actually found 503", ko),)
                        if ko
                        else (),
                    )
                )
    return run, measurements


def many_operations(count: int) -> dict[str, Any]:
    """An OpenAPI 3.0 description of exactly ``count`` operations, shaped like a large real
    API: collections ``/r{i}`` (GET, POST) and items ``/r{i}/{id}`` (GET, PUT), one route per
    operation. For checks of configurations too large for a checker (20,000 routes)."""
    ok = {"200": {"description": "ok"}}
    item = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    paths: dict[str, Any] = {}
    done = 0
    while done < count:
        i = len(paths)
        methods = ("get", "put") if i % 2 else ("get", "post")
        path = f"/r{i // 2}/{{id}}" if i % 2 else f"/r{i // 2}"
        operations = {}
        for method in methods[: count - done]:
            operation: dict[str, Any] = {"operationId": f"op{done}", "responses": ok}
            if i % 2:
                operation["parameters"] = [item]
            operations[method] = operation
            done += 1
        paths[path] = operations
    return {"openapi": "3.0.3", "info": {"title": "many", "version": "1"}, "paths": paths}


def synthetic_change(
    gateway: str = "nginx",
    *,
    arrivals: int = 300,
    failed: Sequence[int] = (150,),
    change_ms: float = 2000.0,
    new_routes_s: dict[str, float | None] | None = None,
    mechanism: str = "SIGHUP <to master>",
) -> Any:
    """A change-under-load outcome (``kinds._live.metrics.ChangeOutcome``) of a made-up load:
    ``arrivals`` requests 10 ms apart from 1 s on (100 a second), those at the indexes in
    ``failed`` answered 502, the change at ``change_ms``, a window and a calm second of 1 s."""
    from gatebench.kinds._live.metrics import Arrival, change_outcome

    load = [
        Arrival(1000.0 + 10 * i, 2.0, i not in failed, "end", "status 502" if i in failed else "")
        for i in range(arrivals)
    ]
    return change_outcome(
        load,
        change_ms,
        window_s=1.0,
        calm_s=1.0,
        gateway=gateway,
        mechanism=mechanism,
        kind="signal",
        routes_before=100,
        routes_added=100,
        upstream_changed=True,
        rate=100.0,
        engine="gatling",
        measured_from="send",
        new_routes_s={"a": 0.1, "b": None} if new_routes_s is None else new_routes_s,
        mechanism_s=0.0,
        check_s=0.1,
    )
