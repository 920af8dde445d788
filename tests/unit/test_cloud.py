"""The cloud path's core (gatebench.cloud): object references and run ids, parsing an upload
into a run record, Firestore's REST encoding, and the functions' bundles."""

from __future__ import annotations

import dataclasses
import io
import zipfile
from pathlib import Path

import pytest

from cloud.settings import deployment
from gatebench.cloud import (
    ObjectRef,
    RequestError,
    firestore_fields,
    object_from_event,
    object_from_request,
    parse_upload,
    plain_value,
)
from gatebench.cloud._bundle import build_bundle, pinned_requirements
from gatebench.core.model import RunRecord, run_id_for_object

ROOT = Path(__file__).resolve().parents[2]
AUCTION = (ROOT / "examples" / "auction" / "openapi.yaml").read_bytes()


def test_object_reference_and_run_id() -> None:
    ref = object_from_request({"bucket": "gb-uploads", "name": "specs/a.yaml", "generation": 17})
    assert ref == ObjectRef("gb-uploads", "specs/a.yaml", "17")
    assert ref.uri == "gs://gb-uploads/specs/a.yaml#17"
    assert ref.run_id == run_id_for_object("gb-uploads", "specs/a.yaml", "17")
    assert object_from_request({"bucket": "gb-uploads", "name": "x"}).generation is None


def test_bad_requests_list_every_problem_with_its_pointer() -> None:
    with pytest.raises(RequestError) as caught:
        object_from_request({"bucket": "Bad Bucket", "name": "", "generation": "-1"})
    assert [(p.pointer, p.message) for p in caught.value.problems] == [
        ("/bucket", "expected a Cloud Storage bucket name, got 'Bad Bucket'"),
        ("/name", "expected an object name, got ''"),
        ("/generation", "expected a positive decimal number, got '-1'"),
    ]
    with pytest.raises(RequestError, match="an object-finalized event carries one"):
        object_from_event({"bucket": "gb-uploads", "name": "specs/a.yaml"})


def test_firestore_encoding_round_trips_and_matches_the_rest_shape() -> None:
    record = {
        "s": "x",
        "i": 3,
        "f": 1.5,
        "b": True,
        "n": None,
        "l": [1, [2, 3]],
        "m": {"k": "v"},
    }
    fields = firestore_fields(record)
    assert fields["i"] == {"integerValue": "3"}
    assert fields["l"]["arrayValue"]["values"][1] == {
        "mapValue": {
            "fields": {
                "_nested_list": {
                    "arrayValue": {"values": [{"integerValue": "2"}, {"integerValue": "3"}]}
                }
            }
        }
    }
    assert plain_value({"mapValue": {"fields": fields}}) == record


def test_parse_upload_of_the_auction_example() -> None:
    ref = ObjectRef("gb-uploads", "specs/auction.yaml", "42")
    outcome = parse_upload(AUCTION, ref, now=1000.0)
    assert outcome.ok, outcome.message
    run = outcome.run
    assert run.run_id == ref.run_id
    assert run.spec_uri == "gs://gb-uploads/specs/auction.yaml#42"
    assert run.gateways == ["nginx", "haproxy", "caddy", "envoy", "apache", "traefik"]
    assert [w["name"] for w in run.workloads] == ["create-auction", "bid", "retrieve"]
    assert run.workloads[1]["method"] == "POST"
    response = outcome.response("exec-9")
    assert response["run_id"] == ref.run_id
    assert response["generation"] == "42"
    document = plain_value({"mapValue": response["document"]})
    assert document["execution_id"] == "exec-9"
    assert document["status"] == "received"
    # What the workflow stores, the result store reads back as the same run (now owned by
    # the execution).
    assert RunRecord.from_dict(document) == dataclasses.replace(run, execution_id="exec-9")


def test_parse_upload_of_an_invalid_plan_keeps_the_run_id_and_locates_the_error() -> None:
    broken = AUCTION.replace(b"repetitions: 10 ", b"repetiton: 10 ")
    ref = ObjectRef("gb-uploads", "specs/auction.yaml", "43")
    outcome = parse_upload(broken, ref, now=0.0)
    assert not outcome.ok
    response = outcome.response()
    assert response["run_id"] == ref.run_id
    (error,) = response["errors"]
    assert error["pointer"] == "/x-gatebench/repetiton"
    assert error["message"] == "unknown key 'repetiton' in x-gatebench; did you mean 'repetitions'?"
    assert response["message"].startswith("auction.yaml:")


def test_parse_upload_of_bytes_that_are_no_spec() -> None:
    outcome = parse_upload(b"\x00\x01 not yaml: [", ObjectRef("b-1", "specs/x.yaml", "1"), now=0.0)
    assert not outcome.ok
    assert outcome.response()["errors"]


def test_bundles_are_deterministic_and_pin_the_runtime_closure(tmp_path: Path) -> None:
    requirements = pinned_requirements()
    names = {r.split("==")[0].lower() for r in requirements}
    assert {
        "functions-framework",
        "google-cloud-firestore",
        "google-cloud-storage",
        "pyyaml",
    } <= names
    assert not {"pytest", "mypy", "ruff", "hypothesis", "python-hcl2"} & names
    assert all("==" in r for r in requirements)
    package = ROOT / "src" / "gatebench"
    first = build_bundle(ROOT / "functions" / "parse", package, requirements)
    second = build_bundle(ROOT / "functions" / "parse", package, requirements)
    assert first == second
    names_in_zip = zipfile.ZipFile(io.BytesIO(first)).namelist()
    assert names_in_zip[:1] == ["gatebench/__init__.py"] or "main.py" in names_in_zip
    assert {"main.py", "requirements.txt", "gatebench/cloud/_parse.py"} <= set(names_in_zip)
    assert not [n for n in names_in_zip if "__pycache__" in n]


def test_layout_names_vms_as_infra_vms_does_and_resolves_them() -> None:
    import hcl2

    from gatebench.cloud._layout import layout_for

    settings = {"prefix": "gb", "zone": "europe-central2-a", "project": "proj", "layout": "dns"}
    layout = layout_for(settings, "r-0123456789abcdef0123", ["nginx", "kong"])
    assert layout.backend_url() == (
        "http://gb-r-0123456789abcdef0123-backend.europe-central2-a.c.proj.internal:8080"
    )
    assert layout.gateway_url("kong") == (
        "http://gb-r-0123456789abcdef0123-gw-kong.europe-central2-a.c.proj.internal:8000"
    )
    # The names Terraform gives the VMs (infra/vms/main.tf), with its own locals substituted.
    with (ROOT / "infra" / "vms" / "main.tf").open() as fh:
        doc = hcl2.load(fh)
    local_name = doc["locals"][0]["name"].strip('"')
    assert local_name == "${var.prefix}-${var.run_id}"
    names = {}
    for block in doc["resource"]:
        for body in block.get('"google_compute_instance"', {}).values():
            names[body["name"].strip('"')] = body
    base = "gb-r-0123456789abcdef0123"
    rendered = {
        n.replace("${local.name}", base)
        .replace("${each.key}", "kong")
        .replace("${local.tester_suffix[count.index]}", "")  # tester 0
        for n in names
    }
    suffixes = doc["locals"][0]["tester_suffix"]
    assert "i == 0" in str(suffixes) and "range(16)" in str(suffixes)
    assert rendered == {
        layout.vm_name("backend"),
        layout.vm_name("gateway", "kong"),
        layout.vm_name("tester"),
    }


def test_loopback_layout_gives_each_machine_its_own_port() -> None:
    from gatebench.cloud._layout import layout_for

    settings = {
        "prefix": "gb",
        "layout": {"kind": "loopback", "base_port": 41000, "root": "/tmp/vms"},
    }
    layout = layout_for(settings, "r-0123456789abcdef0123", ["nginx", "caddy"])
    assert layout.backend_url() == "http://127.0.0.1:41000"
    assert [layout.gateway_url(g) for g in ("nginx", "caddy")] == [
        "http://127.0.0.1:41001",
        "http://127.0.0.1:41002",
    ]
    assert layout.gateway_workdir("caddy") == "/tmp/vms/r-0123456789abcdef0123/gw-caddy"
    with pytest.raises(RequestError, match="layout"):
        layout_for({"layout": "nfs"}, "r-0123456789abcdef0123", [])


def test_vm_vars_are_exactly_the_variables_of_infra_vms() -> None:
    import hcl2

    from gatebench.cloud._render import render_run
    from gatebench.cloud._vms import vm_vars

    settings = deployment()
    ref = ObjectRef("gb-uploads", "specs/auction.yaml", "9")
    rendered = render_run(AUCTION, ref, settings, "gb-runs")
    assert rendered.failures == {}
    values = vm_vars(settings, rendered.fleet, ref.run_id, "gb-runs")
    with (ROOT / "infra" / "vms" / "variables.tf").open() as fh:
        declared = {
            k.strip('"'): v for block in hcl2.load(fh)["variable"] for k, v in block.items()
        }
    # vm_metadata (each VM's write policies and TLS key) is added by vm-vars, for the apply
    # only: machine_metadata
    assert set(values) | {"vm_metadata"} == set(declared)
    assert declared["vm_metadata"]["sensitive"] is True
    gateway_type = declared["gateways"]["type"]
    for key in next(iter(values["gateways"].values())):
        assert f"{key} " in gateway_type or f"{key}=" in gateway_type.replace(" ", "")
    nginx = values["gateways"]["nginx"]
    assert nginx["mount"] == "/etc/gatebench"
    assert nginx["args"][:3] == ["nginx", "-p", "/etc/gatebench/"]
    assert values["tester"]["args"] == [
        "cloud",
        "tester",
        "--run-id",
        ref.run_id,
        "--runs-bucket",
        "gb-runs",
    ]
    # The same run renders to the same bytes (a retried render writes the same objects).
    assert render_run(AUCTION, ref, settings, "gb-runs").objects() == rendered.objects()
    empty = vm_vars(settings, None, ref.run_id, "gb-runs")
    assert (empty["gateways"], empty["backend"], empty["tester"]) == ({}, None, None)


def test_the_vms_live_as_long_as_the_plan_needs_and_the_testers_disk_holds_its_log() -> None:
    """max_run_duration: the plan's estimate plus a margin (gatebench.core.cost.vm_max_run_s),
    capped by the deployment's limits.vm_lifetime; the tester's boot disk from the plan's raw
    log bound (gatebench.core.cost.disk_gib_per_tester), as infra/vms takes it."""
    from gatebench.cloud._render import render_run
    from gatebench.cloud._vms import vm_vars
    from gatebench.core.cost import disk_gib_per_tester, vm_max_run_s
    from gatebench.core.plan import load_plan
    from gatebench.core.spec import read_spec

    plan = load_plan(read_spec(AUCTION, name="openapi.yaml")).to_dict()
    ref = ObjectRef("gb-uploads", "specs/auction.yaml", "9")
    roomy = deployment(limits={"vm_lifetime": 43200})
    rendered = render_run(AUCTION, ref, roomy, "gb-runs")
    assert rendered.fleet["max_run_duration_s"] == vm_max_run_s(plan)
    assert 1800 < vm_max_run_s(plan) < 3 * 3600  # minutes to hours, not the 12-hour cap
    assert rendered.fleet["tester"]["disk_gb"] == disk_gib_per_tester(plan) == 10
    values = vm_vars(roomy, rendered.fleet, ref.run_id, "gb-runs")
    assert values["max_run_duration_s"] == vm_max_run_s(plan)
    assert values["tester"]["disk_gb"] == 10
    tight = vm_vars(deployment(limits={"vm_lifetime": 1200}), rendered.fleet, ref.run_id, "x")
    assert tight["max_run_duration_s"] == 1200  # the deployment's cap holds
    main = (ROOT / "infra" / "vms" / "main.tf").read_text()
    tester = main[main.index('resource "google_compute_instance" "tester"') :]
    assert "size  = var.tester.disk_gb" in tester.split("network_interface")[0]


def test_a_capacity_run_is_recorded_as_one_from_the_parse_step() -> None:
    from gatebench.core.model import RunKind
    from gatebench.kinds.request import METADATA_KEY, RunRequest

    ref = ObjectRef("gb-uploads", "specs/auction.yaml", "9")
    metadata = {METADATA_KEY: RunRequest(kind="capacity").to_metadata()}
    capacity = parse_upload(AUCTION, ref, now=1000.0, metadata=metadata)
    assert capacity.ok and capacity.run.kind == RunKind.CAPACITY
    document = capacity.response()["document"]["fields"]
    assert document["kind"] == {"stringValue": "capacity"}
    assert parse_upload(AUCTION, ref, now=1000.0).run.kind == RunKind.FIXED


def test_the_parse_step_refuses_a_capacity_run_of_a_plan_with_tls() -> None:
    """The capacity search's load generator speaks plain HTTP/1.1: a capacity run of a plan
    with ``tls:`` starts nothing, and says why (located in the spec); a fixed run of it goes
    on (the cloud path carries TLS)."""
    from gatebench.kinds.request import METADATA_KEY, RunRequest

    text = AUCTION.decode()
    assert "  backend: {builtin: auction}\n" in text
    with_tls = text.replace(
        "  backend: {builtin: auction}\n", "  backend: {builtin: auction}\n  tls: {}\n"
    ).encode()
    ref = ObjectRef("gb-uploads", "specs/auction.yaml", "11")
    metadata = {METADATA_KEY: RunRequest(kind="capacity").to_metadata()}
    refused = parse_upload(with_tls, ref, now=1000.0, metadata=metadata)
    assert not refused.ok
    assert [p.pointer for p in refused.problems] == ["/x-gatebench/tls"]
    assert "plain HTTP/1.1" in refused.problems[0].message
    fixed = {METADATA_KEY: RunRequest().to_metadata()}
    assert parse_upload(with_tls, ref, now=1000.0, metadata=fixed).ok


def test_a_capacity_run_renders_the_search_input_for_the_tester() -> None:
    import json

    from gatebench.cloud._render import CAPACITY_INPUT, render_run
    from gatebench.kinds.capacity import probe_document, settings_from_dict
    from gatebench.kinds.capacity._metrics import ProbeRequest
    from gatebench.kinds.request import METADATA_KEY, RunRequest

    settings = deployment()
    ref = ObjectRef("gb-uploads", "specs/auction.yaml", "9")
    fixed = render_run(AUCTION, ref, settings, "gb-runs")
    assert fixed.capacity is None
    assert f"runs/{ref.run_id}/{CAPACITY_INPUT}" not in fixed.objects()
    metadata = {METADATA_KEY: RunRequest(kind="capacity").to_metadata()}
    rendered = render_run(AUCTION, ref, settings, "gb-runs", metadata)
    data = json.loads(rendered.objects()[f"runs/{ref.run_id}/{CAPACITY_INPUT}"])
    assert data["format"] == "gatebench-capacity-input/1"
    assert set(data["targets"]) == set(
        json.loads(fixed.objects()[f"runs/{ref.run_id}/fleet.json"])["gateways"]
    ) | {"baseline"}
    assert set(data["settings"]) == set(data["templates"]) == {"create-auction", "bid", "retrieve"}
    # the fixed workload is rendered too (the tester checks the targets with it)
    assert rendered.workload == fixed.workload
    bid = settings_from_dict(data["settings"]["bid"])
    doc = probe_document(
        data["templates"]["bid"]["baseline"], ProbeRequest(100.0, "grow", bid.warmup, bid.probe)
    )
    baseline = next(p for p in fixed.workload["phases"] if p["target"] == "baseline")
    assert doc["phases"][1]["request"]["base_url"] == baseline["request"]["base_url"]
    assert [p["injection"]["rate"] for p in doc["phases"]] == [100.0, 100.0]
    # the VMs live as long as the search may take (its budget), not the fixed workload's time
    from gatebench.core.cost import capacity_seconds, vm_max_run_s

    plan_dict = {"capacity": {"default": {"budget": 7200.0}}}
    assert capacity_seconds(plan_dict) == 7200.0 and capacity_seconds({}) == 1800.0
    assert rendered.fleet["max_run_duration_s"] == vm_max_run_s({}, load_s=1800.0)
    assert rendered.fleet["max_run_duration_s"] != fixed.fleet["max_run_duration_s"]
