"""One run record, whichever path starts the run: the laptop's runner and the cloud parse
step describe the same spec's workloads identically (the route path, base path included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gatebench.cloud import ObjectRef, parse_upload
from gatebench.core.errors import RunError
from gatebench.core.plan import load_plan
from gatebench.core.spec import read_spec
from gatebench.local.runner import RunOptions, run_benchmark
from paths import EXAMPLES

PETSTORE = EXAMPLES / "petstore" / "openapi.yaml"
REF = ObjectRef("gb-uploads", "specs/20260101-120000-1a2b3c4d-openapi.yaml", "7")
SAME = ("title", "gateways", "workloads", "plan")


def _local_record(tmp_path: Path) -> dict[str, object]:
    """The record the local runner writes before anything runs (an unknown engine stops it
    right after, with the record on disk)."""
    result = read_spec(PETSTORE)
    assert result.api is not None
    plan = load_plan(result)
    options = RunOptions(results_dir=tmp_path, engine="no-such-engine", run_id="local")
    with pytest.raises(RunError):
        run_benchmark(result.api, plan, spec_uri="x", spec_sha256="0" * 64, options=options)
    record: dict[str, object] = json.loads((tmp_path / "local" / "run.json").read_text())
    return record


def test_local_and_cloud_runs_record_a_based_spec_alike(tmp_path: Path) -> None:
    local = _local_record(tmp_path)
    outcome = parse_upload(PETSTORE.read_bytes(), REF, now=0.0)
    assert outcome.ok, outcome.message
    cloud = json.loads(json.dumps(outcome.run.to_dict()))
    assert {k: cloud[k] for k in SAME} == {k: local[k] for k in SAME}
    # the base path (servers: .../v1) is part of what is recorded, on both paths
    assert [w["path"] for w in local["workloads"]][:1] == ["/v1/pets"]  # type: ignore[index]
