"""The ingest step: a raw load-engine log in the runs bucket → the run's measurements in
the result store (``gatebench.measure.ingest_simlog``, the same code the laptop uses).

It runs twice on purpose, both idempotent (a measurement is overwritten by the same one):
the ``ingest`` function on each raw log as it lands (object-finalized events), so results
show up during the run, and the score step over every raw log of the run before scoring, so
a late or lost event never loses a measurement.

With several testers (the fleet's ``tester.count``) a phase is split across their logs
(``raw/gatling-tT/``): nothing is stored until every tester has said it finished
(``tester/load-done*.json``, which the load build writes for a tester that never answered), then
every log is merged at once (``gatebench.testers.ingest_tester_logs``); a failed tester's
unfinished phases are ``partial``.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Protocol

from ..measure import ingest_simlog, with_gateway_cgroup
from ..resources import CgroupSample
from ..store import ResultStore
from ..testers import ingest_tester_logs
from ._tester import fleet_testers, marker, marker_of_tester

RAW_LOG = re.compile(r"^runs/(r-[0-9a-f]{20})/raw/[A-Za-z0-9._-]+/simulation\.log$")
CGROUP_OBJECT = "runs/{run_id}/cgroup/{target}.jsonl"
"""Where a gateway VM's meter (``gatebench cloud meter``) uploads its container's cgroup
samples, one JSON object per line (gatebench.resources.CgroupSample)."""


TESTERS_OBJECT = "runs/{run_id}/testers.jsonl"
"""With several testers: per measured phase, each tester's requests and window, the start skew,
the flags and reasons of the merge (gatebench.testers.MergedPhase.to_dict)."""


class Bucket(Protocol):
    def read_optional(self, bucket: str, name: str) -> bytes | None: ...

    def names(self, bucket: str, prefix: str) -> list[str]: ...


def ingest_object(storage: Bucket, store: ResultStore, bucket: str, name: str) -> int | None:
    """Measurements stored from object ``name``; None when it is not a raw log."""
    match = RAW_LOG.match(name)
    if match is None:
        return None
    run_id = match.group(1)
    if fleet_testers(storage, bucket, run_id) > 1:
        return ingest_testers(storage, store, bucket, run_id)
    log = storage.read_optional(bucket, name)
    workload = storage.read_optional(bucket, f"runs/{run_id}/workload.json")
    if log is None or workload is None:
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "simulation.log"
        path.write_bytes(log)
        measurements = ingest_simlog(path, json.loads(workload), run_id)
    measurements = with_gateway_cgroup(measurements, _cgroup_samples(storage, bucket, run_id))
    for measurement in measurements:
        store.put_measurement(measurement)
    return len(measurements)


def ingest_testers(storage: Bucket, store: ResultStore, bucket: str, run_id: str) -> int:
    """Every tester's log of a run merged; 0 until every tester has finished."""
    testers = fleet_testers(storage, bucket, run_id)
    done = []
    for t in range(testers):
        data = storage.read_optional(bucket, marker(run_id, marker_of_tester("load-done", t)))
        if data is None:
            return 0
        done.append(json.loads(data))
    workload = storage.read_optional(bucket, f"runs/{run_id}/workload.json")
    if workload is None:
        return 0
    failures = [None if d.get("ok") else str(d.get("reason") or "failed") for d in done]
    with tempfile.TemporaryDirectory() as scratch:
        logs: list[Path | None] = []
        for t in range(testers):
            log = storage.read_optional(bucket, f"runs/{run_id}/raw/gatling-t{t}/simulation.log")
            path = Path(scratch) / f"t{t}.log"
            if log is not None:
                path.write_bytes(log)
            logs.append(path if log is not None else None)
        measurements, merged = ingest_tester_logs(logs, json.loads(workload), run_id, failures)
    measurements = with_gateway_cgroup(measurements, _cgroup_samples(storage, bucket, run_id))
    write = getattr(storage, "write", None)  # the functions' Storage; a read-only view skips it
    if write is not None:  # each phase's shares and start skew, beside the raw logs
        lines = "".join(json.dumps(m.to_dict(), sort_keys=True) + "\n" for m in merged)
        write(bucket, TESTERS_OBJECT.format(run_id=run_id), lines, "application/x-ndjson")
    for measurement in measurements:
        store.put_measurement(measurement)
    return len(measurements)


def _cgroup_samples(storage: Bucket, bucket: str, run_id: str) -> dict[str, list[CgroupSample]]:
    """Each gateway's cgroup samples, by target, from the run's ``cgroup/`` objects (a line
    that is not a sample is skipped: the meter may have been cut off mid-write)."""
    prefix = f"runs/{run_id}/cgroup/"
    out: dict[str, list[CgroupSample]] = {}
    for name in storage.names(bucket, prefix):
        if not name.endswith(".jsonl"):
            continue
        data = storage.read_optional(bucket, name)
        if data is None:
            continue
        samples = []
        for line in data.decode("utf-8", errors="replace").splitlines():
            try:
                samples.append(CgroupSample.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError):
                continue
        out[name[len(prefix) : -len(".jsonl")]] = samples
    return out


def ingest_run(storage: Bucket, store: ResultStore, bucket: str, run_id: str) -> int:
    """Every raw log of a run, ingested; the number of measurements stored."""
    if fleet_testers(storage, bucket, run_id) > 1:
        return ingest_testers(storage, store, bucket, run_id)
    total = 0
    for name in storage.names(bucket, f"runs/{run_id}/raw/"):
        total += ingest_object(storage, store, bucket, name) or 0
    return total
