"""What the deployment refuses at parse (gatebench.cloud._parse): a plan zone outside the
deployment's region, located at /x-gatebench/infrastructure/zone; an upload while
limits.max_active_runs runs are in progress (stale and re-delivered runs not counted)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from cloud.settings import deployment
from gatebench.cloud import ObjectRef, parse_upload
from gatebench.cloud._parse import active_runs
from gatebench.core.model import RunRecord, RunStatus

ROOT = Path(__file__).resolve().parents[2]
AUCTION = (ROOT / "examples" / "auction" / "openapi.yaml").read_bytes()
REF = ObjectRef("gb-uploads", "specs/auction.yaml", "7")
NOW = 1_000_000.0
SETTINGS = deployment(region="europe-central2", limits={"vm_lifetime": 3600, "max_active_runs": 2})


def with_zone(zone: str) -> bytes:
    doc = yaml.safe_load(AUCTION)
    doc["x-gatebench"]["infrastructure"]["zone"] = zone
    return yaml.safe_dump(doc).encode()


def run(run_id: str, updated: float, status: RunStatus = RunStatus.LOADING) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        spec_uri="gs://u/x#1",
        spec_sha256="0" * 64,
        status=status,
        created_at=updated,
        updated_at=updated,
    )


def test_a_zone_outside_the_deployments_region_is_a_located_error() -> None:
    outcome = parse_upload(with_zone("us-east1-b"), REF, now=NOW, settings=SETTINGS)
    assert not outcome.ok
    assert [(p.pointer, p.message) for p in outcome.problems if p.severity == "error"] == [
        (
            "/x-gatebench/infrastructure/zone",
            "zone 'us-east1-b' is not in the deployment's region 'europe-central2' (its network "
            "and buckets are there): choose a zone of europe-central2, or leave zone out for "
            "the deployment's (europe-central2-a)",
        )
    ]
    assert parse_upload(with_zone("europe-central2-b"), REF, now=NOW, settings=SETTINGS).ok
    # The example names no zone: it runs in the deployment's.
    assert "zone:" not in AUCTION.decode()
    assert parse_upload(AUCTION, REF, now=NOW, settings=SETTINGS).ok
    # europe-central20 is not europe-central2
    assert not parse_upload(with_zone("europe-central20-a"), REF, now=NOW, settings=SETTINGS).ok


def test_an_upload_while_max_active_runs_are_in_progress_starts_no_run() -> None:
    busy = [run("r-" + "1" * 20, NOW - 60), run("r-" + "2" * 20, NOW - 7200)]
    outcome = parse_upload(AUCTION, REF, now=NOW, settings=SETTINGS, unfinished=busy)
    errors = [p for p in outcome.problems if p.severity == "error"]
    assert [(p.pointer, p.message) for p in errors] == [
        (
            "",
            "2 runs are in progress (r-11111111111111111111, r-22222222222222222222) and "
            "this deployment runs at most 2 at once (limits.max_active_runs): this upload "
            "starts no run; upload it again once one has finished",
        )
    ]
    assert outcome.response()["run_id"] == REF.run_id  # recorded as a failed run at parse
    # One fewer in progress: it starts.
    assert parse_upload(AUCTION, REF, now=NOW, settings=SETTINGS, unfinished=busy[:1]).ok


def test_stale_and_redelivered_runs_do_not_count() -> None:
    # The longest a run goes without a status write: the three builds' timeouts (defaults
    # 1800 + 21600 + 1800 s), the score call (1800 s) and ten minutes.
    longest = 1800 + 21600 + 1800 + 1800 + 600
    runs = [
        run("r-" + "1" * 20, NOW - longest),  # just within
        run("r-" + "2" * 20, NOW - longest - 1),  # a cancelled execution's: stale
        run(REF.run_id, NOW),  # this upload's own run (a re-delivered event)
    ]
    assert [r.run_id for r in active_runs(runs, SETTINGS, NOW, REF.run_id)] == ["r-" + "1" * 20]
    tight = deployment(limits={"provision_s": 60, "load_s": 60, "teardown_s": 60})
    assert active_runs(runs[:1], tight, NOW, REF.run_id) == []


def with_backend(url: str) -> bytes:
    doc = yaml.safe_load(AUCTION)
    doc["x-gatebench"]["backend"] = {"url": url}
    return yaml.safe_dump(doc).encode()


def test_an_outside_backend_needs_the_deployments_nat() -> None:
    """No Cloud NAT unless the deployment asks for one (outside_access): a backend on the
    internet is refused at /x-gatebench/backend/url; one inside the VPC is not."""
    outcome = parse_upload(with_backend("https://api.example.com"), REF, now=NOW, settings=SETTINGS)
    assert [(p.pointer, p.message) for p in outcome.problems if p.severity == "error"] == [
        (
            "/x-gatebench/backend/url",
            "https://api.example.com is outside Google Cloud's network and this deployment's "
            "VMs have no route out (Cloud NAT is off): set the Terraform variable "
            "outside_access = true to benchmark a service on the internet, or use a private "
            "address or an internal name",
        )
    ]
    for inside in ("http://10.0.0.5:8080", "http://svc.europe-central2-a.c.proj.internal:80"):
        assert parse_upload(with_backend(inside), REF, now=NOW, settings=SETTINGS).ok, inside
    nat = deployment(**SETTINGS, outside_access=True)
    assert parse_upload(with_backend("https://api.example.com"), REF, now=NOW, settings=nat).ok


def test_a_plan_region_other_than_the_deployments_is_a_located_error() -> None:
    doc = yaml.safe_load(AUCTION)
    doc["x-gatebench"]["infrastructure"]["region"] = "us-east1"
    outcome = parse_upload(yaml.safe_dump(doc).encode(), REF, now=NOW, settings=SETTINGS)
    assert [p.pointer for p in outcome.problems if p.severity == "error"] == [
        "/x-gatebench/infrastructure/region"
    ]


def with_infrastructure(**infrastructure: Any) -> bytes:
    doc = yaml.safe_load(AUCTION)
    doc["x-gatebench"]["infrastructure"].update(infrastructure)
    return yaml.safe_dump(doc).encode()


def errors(outcome: Any) -> list[tuple[str, str]]:
    return [(p.pointer, p.message) for p in outcome.problems if p.severity == "error"]


def test_a_machine_type_gatebench_cannot_price_or_the_deployment_does_not_allow_is_refused() -> (
    None
):
    """The plan's own check is a pattern only (GPU and memory-optimised types pass it): the
    parse step refuses a type with no price in gatebench's table, whatever the deployment, and
    one outside the deployment's allowed_machine_types, located at the plan's key."""
    gpu = parse_upload(
        with_infrastructure(gateway_machine="a2-highgpu-8g"), REF, now=NOW, settings=SETTINGS
    )
    assert errors(gpu) == [
        (
            "/x-gatebench/infrastructure/gateway_machine",
            "no list price for machine type 'a2-highgpu-8g'; priced: e2-highcpu-N, "
            "e2-highmem-N, e2-standard-N, n2-highcpu-N, n2-highmem-N, n2-standard-N: this "
            "deployment runs only machine types gatebench can price, so that every run's cost "
            "is known before it starts",
        )
    ]
    allowed = deployment(**SETTINGS, allowed_machine_types=["e2-standard-2", "n2-standard-2"])
    big = parse_upload(
        with_infrastructure(tester_machine="n2-standard-128"), REF, now=NOW, settings=allowed
    )
    assert errors(big) == [
        (
            "/x-gatebench/infrastructure/tester_machine",
            "machine type 'n2-standard-128' is not one this deployment allows: e2-standard-2, "
            "n2-standard-2 (the Terraform variable allowed_machine_types)",
        )
    ]
    assert parse_upload(AUCTION, REF, now=NOW, settings=allowed).ok


def test_a_run_estimated_above_the_deployments_bound_is_refused() -> None:
    """The estimate is gatebench.core.cost's (what `gatebench plan` prints); 16 testers for the
    auction example's load cost more than a bound its one tester keeps within."""
    bounded = deployment(**SETTINGS, max_run_cost_usd=1.0)
    assert parse_upload(AUCTION, REF, now=NOW, settings=bounded).ok  # about $0.54
    sixteen = parse_upload(with_infrastructure(testers=16), REF, now=NOW, settings=bounded)
    ((pointer, message),) = errors(sixteen)
    assert pointer == "/x-gatebench"
    assert re.fullmatch(
        r"this run is estimated to cost \$1\.\d\d \(23 VMs for 29 min each; `gatebench plan` "
        r"prints every figure\), above this deployment's bound of \$1\.00 a run "
        r"\(max_run_cost_usd\): ask for fewer targets, repetitions or testers, shorter phases "
        r"or smaller machines",
        message,
    ), message
    # A capacity run is priced for its whole time budget (30 minutes by default: $0.68).
    capacity = {"gatebench": '{"kind": "capacity"}'}
    tight = deployment(**SETTINGS, max_run_cost_usd=0.60)
    assert parse_upload(AUCTION, REF, now=NOW, settings=tight).ok
    refused = parse_upload(AUCTION, REF, now=NOW, settings=tight, metadata=capacity)
    ((pointer, message),) = errors(refused)
    assert (pointer, message[:43]) == (
        "/x-gatebench",
        "this run is estimated to cost $0.68 (8 VMs ",
    )
