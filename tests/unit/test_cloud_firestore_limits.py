"""Every document the cloud path writes to Firestore stays within Firestore's limits (1 MiB and
20,000 fields a document: its "Quotas and limits" page) for the largest plans its parse step
accepts, each document's size computed by the rules of Firestore's "Storage size calculations"
page (gatebench.store._firestore_size, checked here on that page's own example).

The largest accepted plans: a fixed run of every gateway and the baseline on the most
workloads the cloud path measures (MAX_CLOUD_WORKLOADS) with the longest names and the most
repetitions; a capacity run at its bound; a change under load of 100,000 new routes in a
one-hour window. Each document is the one the writing code builds: the run record as the parse
step makes it, with what the later steps add; a scores document per target from the scoring
core; a measurement with ten long KO reasons; a change outcome and a capacity result as the
score step stores them (a summary and bounded lists; the whole result is an object in the
bucket)."""

from __future__ import annotations

import random
from typing import Any

import yaml

from cloud.settings import deployment
from gatebench.cloud import ObjectRef, parse_upload
from gatebench.cloud._capacity import (
    CURVES_KEPT,
    bounded_capacity,
    capacity_fields_bound,
)
from gatebench.cloud._http import reply
from gatebench.cloud._live import NEW_ROUTES_KEPT, SERIES_KEPT, bounded_change
from gatebench.cloud._parse import CAPACITY_RECORD_FIELDS, MAX_CLOUD_WORKLOADS, PARSE_ANSWER_BYTES
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.core.renderers import gateway_names
from gatebench.core.report import build_report
from gatebench.kinds._live.metrics import ChangeOutcome, Latency
from gatebench.store._firestore import encode
from gatebench.store._firestore_size import (
    MAX_DOCUMENT_BYTES,
    MAX_DOCUMENT_FIELDS,
    document_size,
    field_count,
    limit_problem,
)

REF = ObjectRef("gb-uploads", "specs/largest.yaml", "3")
SETTINGS = deployment(region="europe-central2")


def fits(path: list[str], data: dict[str, Any]) -> tuple[int, int]:
    fields = encode(data)
    assert limit_problem(path, fields) is None, limit_problem(path, fields)
    return document_size(path, fields), field_count(fields)


def test_the_size_rules_give_firestores_own_example() -> None:
    """The page's example: a document of users/jeff/tasks with id my_task_id takes 147
    bytes (44 of name, 71 of fields, 32)."""
    fields = {
        "type": "Personal",
        "done": False,
        "priority": 1,
        "description": "Learn Cloud Firestore",
    }
    assert document_size(["users", "jeff", "tasks", "my_task_id"], fields) == 147
    assert field_count({"a": 1, "m": {"b": [1, 2]}}) == 5  # a, m, m.b and its two elements
    assert limit_problem(["runs", "r"], {"x": "y" * MAX_DOCUMENT_BYTES}) == (
        "runs/r: 1,048,634 bytes and 1 fields, above Firestore's limits of 1,048,576 bytes "
        "(1 MiB) and 20,000 fields a document"
    )


def largest_fixed_spec(workloads: int = MAX_CLOUD_WORKLOADS) -> bytes:
    """Every gateway and the baseline, ``workloads`` operations and workloads with the longest
    names the plan allows, the most repetitions."""
    paths: dict[str, Any] = {}
    flows = []
    for i in range(workloads):
        op = f"operation-{i:03d}-" + "x" * 40
        paths[f"/resource-{i:03d}/{{id}}"] = {
            "get": {
                "operationId": op,
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }
        flows.append(
            {
                "name": f"w{i:03d}-" + "y" * 59,
                "operation": op,
                "params": {"id": {"range": [1, 1000000]}},
                "injection": {"concurrent": 100000, "duration": "1h"},
            }
        )
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "t" * 200, "version": "1"},
        "paths": paths,
        "x-gatebench": {
            "gateways": list(gateway_names()),
            "baseline": True,
            "repetitions": 1000,
            "backend": {"mock": True},
            "infrastructure": {"testers": 16},
            "workloads": flows,
        },
    }
    return yaml.safe_dump(doc).encode()


def later_additions(run: RunRecord) -> RunRecord:
    """What the later steps add to a run record, each at its longest: every status time, the
    longest error, a failure and a meter note per target, the deployment's notes."""
    for status in RunStatus:
        run.status_times[status.value] = 1.7e9
    run.status = RunStatus.FAILED
    run.failed_step, run.error = "score", "e" * 1500
    targets = [*run.gateways, "baseline"]
    run.target_errors = dict.fromkeys(targets, "the VM could not start it: " + "r" * 500)
    run.environment = {
        **run.environment,
        "vm_image": "projects/cos-cloud/global/images/cos-133-19999-44-85",
        "meter_gaps": dict.fromkeys(targets, "no gateway CPU or memory for phases " + "p" * 600),
        "deployment_notes": ["tester could not watch: " + "n" * 300 for _ in range(32)],
        "jvm_transport": dict.fromkeys(targets, "epoll"),
    }
    run.teardown, run.execution_id = "failed: " + "t" * 500, "e" * 64
    return run


def test_the_largest_fixed_run_the_parse_step_accepts_fits_every_document() -> None:
    outcome = parse_upload(largest_fixed_spec(), REF, now=1.0, settings=SETTINGS)
    assert outcome.ok, outcome.message
    run = later_additions(outcome.run)
    size, count = fits(["runs", run.run_id], run.to_dict())
    assert size < MAX_DOCUMENT_BYTES // 2 and count < MAX_DOCUMENT_FIELDS // 2, (size, count)
    # a scores document per target: one entry per workload, every metric
    rng = random.Random(3)
    workloads = [w["name"] for w in (run.plan or {})["workloads"]]
    measured = [
        Measurement(
            run_id=run.run_id,
            target=t,
            workload=w,
            repetition=1,
            requests=1000,
            ok=990,
            ko=10,
            error_pct=1.0,
            throughput=rng.uniform(100, 900),
            min=1.0,
            mean=rng.uniform(2, 9),
            max=90.0,
            stddev=3.0,
            p50=rng.uniform(2, 9),
            p90=20.0,
            p95=30.0,
            p99=rng.uniform(30, 80),
            gateway_cpu_s=1.0,
            gateway_rss_mb=50.0,
        )
        for t in [*run.gateways, "baseline"]
        for w in workloads
    ]
    documents = build_report(run, measured).summary.scores.to_documents()
    assert len(documents) == len(run.gateways)
    for target, doc in documents.items():
        fits(["runs", run.run_id, "scores", target], doc)
    # a measurement with ten KO reasons, each as long as an engine may write one
    long = Measurement(**{**measured[0].to_dict(), "errors": (("k" * 50_000, 1),) * 10})
    stored = long.to_dict()
    from gatebench.store._firestore import _cut

    stored["errors"] = [[_cut(str(t)), c] for t, c in stored["errors"]]
    fits(["runs", run.run_id, "measurements", long.key], stored)


def test_one_workload_more_is_refused_at_parse() -> None:
    outcome = parse_upload(
        largest_fixed_spec(MAX_CLOUD_WORKLOADS + 1), REF, now=1.0, settings=SETTINGS
    )
    assert [(p.pointer, p.message) for p in outcome.problems if p.severity == "error"] == [
        (
            "/x-gatebench/workloads",
            f"{MAX_CLOUD_WORKLOADS + 1} workloads: a run on Google Cloud measures at most "
            f"{MAX_CLOUD_WORKLOADS} (each target's scores are one Firestore document); split "
            "them over several descriptions",
        )
    ]


def test_a_run_record_too_large_at_parse_is_refused() -> None:
    """Parameters and policies can make a plan large within the workload bound: the run
    record's own size is checked at parse."""
    doc = yaml.safe_load(largest_fixed_spec(20))
    for flow in doc["x-gatebench"]["workloads"]:
        flow["params"] = {"id": {"list": list(range(1000))}}
    outcome = parse_upload(yaml.safe_dump(doc).encode(), REF, now=1.0, settings=SETTINGS)
    ((pointer, message),) = [
        (p.pointer, p.message) for p in outcome.problems if p.severity == "error"
    ]
    assert pointer == "/x-gatebench"
    assert message.startswith("this plan makes a run record of ") and "20,0" in message


def change_at_the_limit() -> ChangeOutcome:
    """100,000 new routes (the most parse accepts), some never answered; a one-hour window's
    100 ms buckets around the change; the most failed requests kept, long error texts."""
    rng = random.Random(5)
    routes = {
        f"/gb-new/{i:06d}": (None if i % 997 == 0 else round(rng.uniform(0.01, 3.0), 6))
        for i in range(100_000)
    }
    series = [
        {"t_ms": t * 100.0, "requests": 100, "ko": 1, "p99_ms": 12.5} for t in range(-600, 36_000)
    ]
    failed = [
        {"after_ms": float(i), "route": f"/gb-new/{i:06d}", "error": "x" * 5000}
        for i in range(1000)
    ]
    latency = Latency(1000, 1, 2.0, 9.0, 50.0)
    return ChangeOutcome(
        gateway="nginx",
        mechanism="nginx -s reload",
        kind="signal",
        routes_before=100_000,
        routes_added=100_000,
        upstream_changed=True,
        rate=1000.0,
        engine="loadgen",
        measured_from="intended start",  # type: ignore[arg-type]
        window_s=3600.0,
        before=latency,
        during=latency,
        worst_bucket_p99_ms=40.0,
        failures=5000,
        failure_kinds={f"error kind {i} " + "z" * 300: i for i in range(500)},
        failed=failed,
        new_routes_s=routes,
        mechanism_s=0.2,
        check_s=1.0,
        series=series,
        problem="p" * 20_000,
    )


def test_a_change_of_100000_routes_is_stored_as_a_summary_and_bounded_lists() -> None:
    outcome = change_at_the_limit()
    whole = outcome.to_dict()
    assert limit_problem(["runs", "r", "results", "change:nginx"], encode(whole)) is not None
    stored = bounded_change(outcome, "gs://gb-runs/runs/r/live/nginx/change.json")
    fits(["runs", "r-" + "0" * 20, "results", "change:nginx"], stored)
    assert len(stored["new_routes_s"]) == NEW_ROUTES_KEPT
    never = [r for r, v in outcome.new_routes_s.items() if v is None]
    assert set(never) <= set(stored["new_routes_s"])  # every route that never answered kept
    assert len(stored["series"]) == SERIES_KEPT
    assert stored["series"][0]["t_ms"] < 0 < stored["series"][-1]["t_ms"]  # around the change
    # the figures are the whole outcome's, as the report shows them
    assert (stored["new_routes"], stored["new_routes_answered"]) == (100_000, 100_000 - len(never))
    assert stored["new_route_median_s"] == whole["new_route_median_s"]
    assert stored["all_new_routes_answered"] is False and stored["slowest_new_route_s"] is None
    from gatebench.kinds._live._report import render_scale_html

    page = render_scale_html({"format": "gatebench-scale/1", "points": [], "changes": [stored]})
    assert f"{100_000 - len(never)} of 100000" in page


def test_the_largest_capacity_run_the_parse_step_accepts_fits_its_run_record() -> None:
    """The capacity bound at parse (every target × endpoint × repetition's summary, every pair's
    comparison) and the stored copy of the result (its curves bounded) each fit in their document."""
    from gatebench.kinds.capacity import CapacityResult
    from gatebench.kinds.capacity._result import CurvePoint, EndpointResult
    from gatebench.kinds.capacity._summary import Comparison, KneeSummary

    gateways = list(gateway_names())
    targets = [*gateways, "baseline"]
    repetitions = 1
    workloads = 1
    while capacity_fields_bound(len(targets), workloads + 1, repetitions) <= CAPACITY_RECORD_FIELDS:
        workloads += 1
    assert workloads >= 3  # what a capacity run of every gateway may search at once
    doc = yaml.safe_load(largest_fixed_spec(workloads))
    doc["x-gatebench"]["capacity"] = {"repetitions": repetitions}
    capacity = {"gatebench": '{"kind": "capacity"}'}
    spec = yaml.safe_dump(doc).encode()
    outcome = parse_upload(spec, REF, now=1.0, settings=SETTINGS, metadata=capacity)
    assert outcome.ok, outcome.message
    more = dict(doc)
    more["x-gatebench"] = {**doc["x-gatebench"], "capacity": {"repetitions": 50}}
    refused = parse_upload(
        yaml.safe_dump(more).encode(), REF, now=1.0, settings=SETTINGS, metadata=capacity
    )
    assert not refused.ok
    names = [w["name"] for w in doc["x-gatebench"]["workloads"]]
    note = "the search stopped: " + "n" * 200
    endpoints = tuple(
        EndpointResult(
            workload=w,
            objective="p99 ≤ 50 ms, errors ≤ 0.1 %",
            summaries=tuple(
                KneeSummary(
                    target=t,
                    workload=w,
                    knees=(1000.5,) * repetitions,
                    repetitions=tuple(range(1, repetitions + 1)),
                    bounds=(2000.5,) * repetitions,
                    notes=(note,) * repetitions,
                    req_per_cpu_s=10.5,
                    gateway_rss_mb=50.5,
                    searches=repetitions,
                    probes=64 * repetitions,
                    below=(10.5,) * repetitions,
                    stopped="stopped during repetition 1 (" + "x" * 100 + ")",
                    stopped_at=1,
                )
                for t in targets
            ),
            comparisons=tuple(
                Comparison(w, a, b, 1.5, 1.2, 1.8, decided=True, below=10.5)
                for i, a in enumerate(targets)
                for b in targets[i + 1 :]
            ),
            verdict="v" * 300,
            stop="s" * 200,
            prices=dict.fromkeys(gateways, 0.5),
        )
        for w in names
    )
    curves = tuple(
        CurvePoint(t, w, r, 100.0 * p, "probe", "carried", 2.0, 9.0, 0.0, 99.0, 1.0, "q" * 100)
        for t in targets
        for w in names
        for r in range(1, repetitions + 1)
        for p in range(67)
    )
    result = CapacityResult(
        endpoints=endpoints,
        curves=curves,
        stop="budget",
        repetitions=repetitions,
        orders=tuple((r, tuple(targets)) for r in range(1, repetitions + 1)),
        machine="n2-standard-2",
        hourly_usd=0.1,
        ceiling=None,
        precision=0.05,
        failed=dict.fromkeys(targets, "stopped during repetition 1 (" + "x" * 100 + ")"),
    )
    stored = bounded_capacity(result.to_dict(), "gs://gb-runs/runs/r/capacity/result.json")
    assert len(stored["curves"]) == CURVES_KEPT < len(curves)
    assert field_count(encode(stored)) <= capacity_fields_bound(
        len(targets), workloads, repetitions
    )
    run = later_additions(outcome.run)
    fits(["runs", run.run_id], run.to_dict())
    fits(["runs", run.run_id, "results", "capacity:result"], stored)


def test_a_plan_whose_answer_the_workflow_cannot_hold_is_refused_at_parse() -> None:
    """Within Firestore's limits, the record in its REST form can still outgrow what the
    workflow holds (512 KB of variables, the answer twice): refused, located, and the failed
    run's record keeps the problem, not the plan."""
    doc = yaml.safe_load(largest_fixed_spec(MAX_CLOUD_WORKLOADS))
    for flow in doc["x-gatebench"]["workloads"]:
        flow["headers"] = {"X-Long": "h" * 300}
    outcome = parse_upload(yaml.safe_dump(doc).encode(), REF, now=1.0, settings=SETTINGS)
    ((pointer, message),) = [
        (p.pointer, p.message) for p in outcome.problems if p.severity == "error"
    ]
    assert pointer == "/x-gatebench"
    assert message.startswith("this plan makes a run record of ")
    assert f"it may take {PARSE_ANSWER_BYTES:,} (the workflow holds at most 512 KB" in message
    answer = reply(outcome.response("0" * 36))[0].encode()
    assert len(answer) < PARSE_ANSWER_BYTES // 10
    assert outcome.run.plan == {} and outcome.run.workloads == []


def test_the_largest_fixed_run_answers_within_what_the_workflow_holds() -> None:
    outcome = parse_upload(largest_fixed_spec(), REF, now=1.0, settings=SETTINGS)
    assert outcome.ok
    answer = reply(outcome.response("0" * 36))[0].encode()  # as functions/parse sends it
    assert PARSE_ANSWER_BYTES * 0.8 < len(answer) <= PARSE_ANSWER_BYTES
