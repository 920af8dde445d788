"""The score step of a capacity run on the cloud path: the tester's campaign → the run's result.

Tester 0 writes ``runs/RUN/capacity/campaign.json`` when its search ends
(gatebench.vm._capacity). This step reads it, gives every probe of a gateway the
gateway's CPU seconds and peak memory over the probe's window from the cgroup samples its VM's
meter uploaded (``gatebench.core.resources.cgroup_resources``, as the fixed run's phases get theirs),
prices a million requests at each knee for the plan's gateway machine type
(``gatebench.core.cost.machine_hourly``, the prices gatebench holds), stores the result with the run
(``RunRecord.capacity``) and writes its BigQuery rows.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from gatebench.cloud._ingest import Bucket, meter_uploads, metered_gateways, wait_for_meters
from gatebench.cloud._tester import Clock
from gatebench.core.cost import CostError, machine_hourly
from gatebench.core.resources import CgroupSample, cgroup_resources
from gatebench.core.thresholds import thresholds_from_plan
from gatebench.kinds.capacity import (
    RESULT_KEY,
    RESULT_KIND,
    Campaign,
    CapacityResult,
    ProbeOutcome,
    SearchResult,
    capacity_result,
    stored_capacity,
)
from gatebench.kinds.capacity._report import build_capacity_report, capacity_rows
from gatebench.store import ResultStore

CAMPAIGN_OBJECT = "runs/{run_id}/capacity/campaign.json"
"""Where tester 0 writes the campaign when its search ends (provisioners._vm_capacity)."""
DEFAULT_MACHINE = "n2-standard-2"


def read_campaign(storage: Bucket, bucket: str, run_id: str) -> Campaign | None:
    data = storage.read_optional(bucket, CAMPAIGN_OBJECT.format(run_id=run_id))
    return None if data is None else Campaign.from_dict(json.loads(data))


def _metered(probe: ProbeOutcome, samples: list[CgroupSample]) -> ProbeOutcome:
    m = probe.metrics
    if not samples or m.started_ms is None or m.ended_ms is None:
        return probe
    if not (samples[0].wall_ms <= m.started_ms and samples[-1].wall_ms >= m.ended_ms):
        return probe  # samples that do not cover the window would understate it
    cost = cgroup_resources(samples, m.started_ms, m.ended_ms)
    if cost.gateway_cpu_s is None:
        return probe
    metrics = replace(m, gateway_cpu_s=cost.gateway_cpu_s, gateway_rss_mb=cost.gateway_rss_mb)
    return replace(probe, metrics=metrics)


def with_gateway_samples(campaign: Campaign, samples: dict[str, list[CgroupSample]]) -> Campaign:
    """The campaign with each gateway's probes carrying its CPU and memory over their windows."""
    for (target, workload), results in campaign.results.items():
        found = sorted(samples.get(target, []), key=lambda s: s.wall_ms)
        if not found:
            continue
        campaign.results[(target, workload)] = [
            SearchResult(
                r.status,
                r.knee,
                r.high,
                tuple(_metered(p, found) for p in r.probes),
                r.note,
                r.seconds,
            )
            for r in results
        ]
    return campaign


def gateway_machine(plan: dict[str, Any]) -> str:
    infra = plan.get("infrastructure") or {}
    return str(infra.get("gateway_machine") or DEFAULT_MACHINE)


def ingest_run(
    storage: Bucket,
    store: ResultStore,
    bucket: str,
    run_id: str,
    *,
    meter_wait_s: float = 0.0,
    clock: Clock | None = None,
) -> int:
    """The score step's ingest: a capacity run's campaign (in the bucket) becomes its result,
    stored with the run (the number of target × endpoint summaries is returned); any other
    run's raw logs its measurements (``_ingest.ingest_run``)."""
    campaign = read_campaign(storage, bucket, run_id)
    if campaign is None:
        from gatebench.cloud._ingest import ingest_run as ingest_raw_logs

        return ingest_raw_logs(
            storage, store, bucket, run_id, meter_wait_s=meter_wait_s, clock=clock
        )
    searched = {t for (t, _), results in campaign.results.items() if results}
    targets = [t for t in metered_gateways(storage, bucket, run_id) if t in searched]
    uploads = wait_for_meters(storage, bucket, run_id, targets, meter_wait_s, clock)
    if not uploads:
        uploads = meter_uploads(storage, bucket, run_id)
    campaign = with_gateway_samples(campaign, {t: list(u.samples) for t, u in uploads.items()})
    run = store.get_run(run_id)
    plan = (run.plan if run is not None else None) or {}
    machine = gateway_machine(plan)
    try:
        hourly: float | None = machine_hourly(machine)
    except CostError:
        hourly = None
    result = capacity_result(campaign, machine=machine, hourly_usd=hourly)
    whole = result_object(run_id)
    write = getattr(storage, "write", None)  # the functions' Storage; a read-only view skips it
    if write is not None:
        write(bucket, whole, json.dumps(result.to_dict(), sort_keys=True), "application/json")
    store.put_result(
        run_id,
        RESULT_KIND,
        RESULT_KEY,
        bounded_capacity(result.to_dict(), f"gs://{bucket}/{whole}"),
    )
    return sum(len(e.summaries) for e in result.endpoints)


RESULT_OBJECT = "runs/{run_id}/capacity/result.json"
CURVES_KEPT = 400
"""The probes of the result's curves its stored copy keeps in Firestore (the first repetitions'
first): a campaign of many searches has more than a document holds."""


CURVE_POINT_FIELDS = 13
"""A curve point's fields in the stored result (CurvePoint.to_dict's 12, and itself)."""


def capacity_fields_bound(targets: int, workloads: int, repetitions: int) -> int:
    """The most fields the stored copy of a capacity result holds (Firestore's count,
    every array element one: gatebench.store._firestore_size), for ``targets`` searched on
    each of ``workloads`` endpoints ``repetitions`` times: per endpoint 8, a summary per target
    (22 with an upper bound's and a stop's, and its knees, repetition numbers, bounds, notes
    and rates it broke at the lowest probed: at most one each a repetition), a comparison per
    pair of targets (10) and a price per target; an order per repetition (3 and its targets);
    :data:`CURVES_KEPT` curve points; the result's own 10, 4 more, and the targets that
    stopped (1 and one each)."""
    pairs = targets * (targets - 1) // 2
    endpoint = 8 + targets * (22 + 5 * repetitions) + 10 * pairs + targets
    curves = CURVE_POINT_FIELDS * CURVES_KEPT
    return 15 + targets + workloads * endpoint + repetitions * (targets + 3) + curves


def result_object(run_id: str) -> str:
    """A capacity run's result as the score step made it, whole (the stored copy in
    Firestore keeps at most :data:`CURVES_KEPT` curve points)."""
    return RESULT_OBJECT.format(run_id=run_id)


def bounded_capacity(result: dict[str, Any], whole: str) -> dict[str, Any]:
    """A capacity result (``CapacityResult.to_dict``) as the store keeps it: every
    endpoint's knees, comparisons and verdict, at most :data:`CURVES_KEPT` curve points (by
    repetition, then target, endpoint and rate: every search's first curve first), and where
    the whole result is; ``kept`` counts what was cut."""
    curves = sorted(
        result.get("curves") or [],
        key=lambda c: (c["repetition"], c["target"], c["workload"], c["rate"]),
    )
    return {
        **result,
        "curves": curves[:CURVES_KEPT],
        "kept": {"curves": min(len(curves), CURVES_KEPT), "of_curves": len(curves)},
        "whole": whole,
    }


def capacity_outcome(
    store: ResultStore, run_id: str, storage: Bucket | None = None, bucket: str = ""
) -> tuple[str, list[dict[str, Any]]] | None:
    """(``done`` or ``partial``, the BigQuery rows) of a stored capacity run: partial when a
    target has no knee on some endpoint or the searches stopped on an error; ``None`` when
    the run stored no result. The whole result is read from the bucket when ``storage`` is
    given (the stored copy is bounded)."""
    run, stored = store.get_run(run_id), stored_capacity(store, run_id)
    if run is None or stored is None:
        return None
    data = storage.read_optional(bucket, result_object(run_id)) if storage is not None else None
    result = CapacityResult.from_dict(json.loads(data) if data is not None else stored)
    from gatebench.kinds.capacity import evaluate_capacity

    report = build_capacity_report(
        run, result, thresholds=evaluate_capacity(thresholds_from_plan(run.plan), result)
    )
    missing = any(not s.knees for e in result.endpoints for s in e.summaries)
    stopped = result.stop.startswith("the search stopped")
    return ("partial" if missing or stopped else "done"), capacity_rows(report)


__all__ = [
    "CAMPAIGN_OBJECT",
    "CURVES_KEPT",
    "bounded_capacity",
    "capacity_fields_bound",
    "capacity_outcome",
    "gateway_machine",
    "ingest_run",
    "read_campaign",
    "result_object",
    "with_gateway_samples",
]
