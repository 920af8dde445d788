"""The ingest step: a raw load-engine log in the runs bucket → the run's measurements in
the result store (``gatebench.measure.ingest_simlog``, the same code the laptop uses).

It runs twice on purpose, both idempotent (a measurement is overwritten by the same one):
the ``ingest`` function on each raw log as it lands (object-finalized events), so results
show up during the run, and the score step over every raw log of the run before scoring, so
a late or lost event never loses a measurement.
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

RAW_LOG = re.compile(r"^runs/(r-[0-9a-f]{20})/raw/[A-Za-z0-9._-]+/simulation\.log$")
CGROUP_OBJECT = "runs/{run_id}/cgroup/{target}.jsonl"
"""Where a gateway VM's meter (``gatebench cloud meter``) uploads its container's cgroup
samples, one JSON object per line (gatebench.resources.CgroupSample)."""


class Bucket(Protocol):
    def read_optional(self, bucket: str, name: str) -> bytes | None: ...

    def names(self, bucket: str, prefix: str) -> list[str]: ...


def ingest_object(storage: Bucket, store: ResultStore, bucket: str, name: str) -> int | None:
    """Measurements stored from object ``name``; None when it is not a raw log."""
    match = RAW_LOG.match(name)
    if match is None:
        return None
    run_id = match.group(1)
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
    total = 0
    for name in storage.names(bucket, f"runs/{run_id}/raw/"):
        total += ingest_object(storage, store, bucket, name) or 0
    return total
