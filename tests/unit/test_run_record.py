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


def _limited_petstore() -> bytes:
    """The petstore with a rate limit per client address, which caddy cannot apply."""
    return PETSTORE.read_bytes().replace(
        b"  baseline: true\n",
        b"  baseline: true\n  policies: {rate_limit: {requests: 100, window: 1s, key: address}}\n",
    )


def test_local_and_cloud_runs_record_a_based_spec_alike(tmp_path: Path) -> None:
    local = _local_record(tmp_path)
    outcome = parse_upload(PETSTORE.read_bytes(), REF, now=0.0)
    assert outcome.ok, outcome.message
    cloud = json.loads(json.dumps(outcome.run.to_dict()))
    assert {k: cloud[k] for k in SAME} == {k: local[k] for k in SAME}
    # the base path (servers: .../v1) is part of what is recorded, on both paths
    assert [w["path"] for w in local["workloads"]][:1] == ["/v1/pets"]  # type: ignore[index]


def test_the_cloud_records_the_gateways_it_leaves_out_as_a_local_run_does() -> None:
    """The render step deploys no gateway that cannot apply the plan's policies, and nothing
    said so in the run record: the report scored it 0, 'not measured at all'."""
    from gatebench.core.report import build_report

    limited = _limited_petstore()
    outcome = parse_upload(limited, REF, now=0.0)
    assert outcome.ok, outcome.message
    run = outcome.run
    assert run.gateways == ["nginx", "haproxy", "caddy"]
    assert run.environment["left_out"] == {"caddy": "cannot apply the plan's policies"}
    assert run.target_errors["caddy"].startswith(
        "caddy cannot apply the requested policies natively: rate limit per client address"
    )
    report = build_report(run, [])
    assert report.summary.unranked["caddy"].startswith("was left out before the run")
    assert [g.target for g in report.summary.scores.gateways if g.target == "caddy"] == []


def test_a_gateway_left_out_before_the_run_leaves_it_done_on_both_paths() -> None:
    """A gateway the plan leaves out (a policy it cannot apply) neither failed nor was
    expected: with every other target measured the run is done (exit 0), not partial, on
    both paths; a target the run expected and did not measure still makes it partial."""
    from types import SimpleNamespace
    from typing import Any, cast

    from gatebench.cloud._score import expected_keys
    from gatebench.core.model import Measurement, RunStatus
    from gatebench.run._context import measured_status

    limited = _limited_petstore()
    outcome = parse_upload(limited, REF, now=0.0)
    assert outcome.ok, outcome.message
    run = outcome.run
    result = read_spec(limited, name="openapi.yaml")
    plan = load_plan(result)
    keys = expected_keys(run)
    assert {k.split(":")[0] for k in keys} == {"nginx", "haproxy", "baseline"}

    def measured(targets: set[str]) -> list[Measurement]:
        out = []
        for key in sorted(k for k in keys if k.split(":")[0] in targets):
            target, workload, rep = key.split(":")
            out.append(
                Measurement(
                    run.run_id, target, workload, int(rep), *(10, 10, 0, 0.0, 5.0), *[1.0] * 8
                )
            )
        return out

    def status(targets: set[str]) -> RunStatus:
        ctx = SimpleNamespace(
            journal=SimpleNamespace(measurements=measured(targets)), record=run, plan=plan
        )
        return measured_status(cast(Any, ctx))

    assert status({"nginx", "haproxy", "baseline"}) == RunStatus.DONE
    assert status({"nginx", "baseline"}) == RunStatus.PARTIAL
