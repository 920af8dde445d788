"""The cloud pipeline with a plan's deployment (docs/cloud.md, "TLS and replicas"): the same
stand-ins as tests/integration/test_pipeline.py (its fixtures: the functions from their
archives, the emulators, the runner image built with podman, the builds and the VMs' commands
in containers of it, each VM a network namespace behind the VPC's firewall rules, with its own
metadata server), with the run's own certificate authority: the provision build makes it,
signs each TLS VM's key with it and puts them in that VM's metadata alone.

- TLS with HTTP/2, three backend replicas and replica 2 killed halfway through nginx's
  retrieve phase runs to ``done``: nginx's VM wrote its key and the certificate the run's CA
  signed, the backend VM the baseline's, the tester trusted the run's CA alone (valid no
  longer than the run's VMs) and counted every phase's handshakes, the backend VM killed and
  restarted the replica for the tester and counted the gateway's connection attempts to it; no
  VM asked Secret Manager for anything, and no private key is in the bucket, Firestore or
  BigQuery.
- A VM whose metadata lacks its certificate never serves TLS: nginx never starts, the backend
  says why, and the provision step fails with both reasons.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import yaml
from test_pipeline import (  # the module's fixtures and helpers: one pipeline, one definition
    PROJECT,
    ROOT,
    RUNS,
    UPLOADS,
    network,  # noqa: F401 - a fixture
    run,
    run_processes,
    stored_run,
    upload,
    world,  # noqa: F401 - a fixture
)

from gatebench.cloud import Storage
from gatebench.core.model import run_id_for_object

pytestmark = pytest.mark.integration


def deployed_auction(baseline: bool = True) -> bytes:
    """The auction example through nginx with TLS (HTTP/2), three replicas and replica 2
    killed halfway through the retrieve phase: sequential bids, then retrieves at a constant
    rate for 4 s; one repetition, 3 s warm-ups (the pool recovers before the next phase)."""
    doc = yaml.safe_load((ROOT / "examples" / "auction" / "openapi.yaml").read_text())
    bench = doc["x-gatebench"]
    bench.update(
        gateways=["nginx"],
        baseline=baseline,
        repetitions=1,
        warmup={"duration": "3s"},
        seed=13,
        tls={"http2": True},
        backend={"builtin": "auction", "replicas": 3},
        fault={"replica": 2, "workload": "retrieve", "at": "50%"},
    )
    bench["workloads"] = [w for w in bench["workloads"] if w["name"] != "create-auction"]
    for workload in bench["workloads"]:
        workload["injection"] = (
            {"sequential": 30}
            if workload["name"] == "bid"
            else {"constant_rate": {"rate": 40, "duration": "4s"}}
        )
    return yaml.safe_dump(doc, sort_keys=False).encode()


def test_tls_three_replicas_and_a_killed_replica_run_to_done_with_their_figures(
    world: dict[str, Any],  # noqa: F811 - the fixture imported above
) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import Encoding

    from gatebench.store import open_store

    name = "specs/deployed.yaml"
    event = upload(world, name, deployed_auction())
    run_id = run_id_for_object(UPLOADS, name, event["data"]["generation"])
    execution = run(world, event, "exec-deployed")
    assert execution.state == "SUCCEEDED", execution.error
    assert (execution.result["status"], execution.result["teardown"]) == ("done", "ok")
    store = open_store(f"firestore://{PROJECT}")
    measured = {(m.target, m.workload): m for m in store.measurements(run_id)}
    assert set(measured) == {(t, w) for t in ("nginx", "baseline") for w in ("bid", "retrieve")}
    # Every request went over TLS to a certificate the tester's trust store (the CA alone)
    # and host name check accepted; the bids all succeeded through the pool of three.
    assert all(m.ok > 0 for m in measured.values())
    assert [measured[(t, "bid")].ko for t in ("nginx", "baseline")] == [0, 0]
    # Each phase's handshakes, counted on the tester VM from the packets arriving.
    storage: Storage = world["storage"]
    done = json.loads(storage.read_optional(RUNS, f"runs/{run_id}/tester/load-done.json") or b"")
    # The retrieves arrive at a constant rate: every request is a new user on a connection of
    # its own, so a handshake each (Gatling gives every user its own TLS context: none
    # resumed). The sequential bids run as one user who keeps its connection from the phase
    # before (gatling/: consecutive fixed-user phases share their users): none is needed.
    handshakes = {k: (m.tls_new, m.tls_resumed) for k, m in measured.items()}
    for target in ("nginx", "baseline"):
        retrieve = measured[(target, "retrieve")]
        assert handshakes[(target, "retrieve")] == (retrieve.requests, 0), (handshakes, done)
        assert handshakes[(target, "bid")] == (0, 0), (handshakes, done)
    # The fault: killed by the backend VM at the tester's request, halfway through nginx's
    # retrieve phase; the figures from the phase's requests and the attempts the backend VM
    # saw; the baseline (no pool) untouched.
    fault = measured[("nginx", "retrieve")].fault
    assert fault is not None and "error" not in fault, fault
    assert fault["replica"] == 2 and fault["requests_after"] > 0
    assert isinstance(fault["attempts"], int) and fault["stopped_after_s"] is not None
    assert all(m.fault is None for k, m in measured.items() if k != ("nginx", "retrieve"))
    (kill,) = done["deployment"]["kills"].values()
    assert kill["restarted_at"] > kill["at"]
    doc = stored_run(run_id)
    environment = doc["environment"]
    assert environment["tls"]["key"] == "ecdsa-p256" and environment["tls"]["http2"] is True
    assert environment["replicas"] == {"count": 3, "balance": "round_robin"}
    assert "deployment_notes" not in environment, environment["deployment_notes"]
    # nginx's VM wrote its own key and a certificate for its host name that the run's CA
    # signed; the CA lives no longer than the run's VMs; the configuration forwards to the
    # three replicas.
    vms = world["vms"]
    folder = vms.root / "vms" / f"{run_id}-gw-nginx"
    leaf, ca = x509.load_pem_x509_certificates((folder / "tls" / "server.crt").read_bytes())
    run_ca = storage.read_optional(RUNS, f"runs/{run_id}/tls/ca.pem")
    assert run_ca is not None and ca == x509.load_pem_x509_certificate(run_ca)
    leaf.verify_directly_issued_by(ca)
    saved = json.loads(storage.read_optional(RUNS, f"runs/{run_id}/vms.tfvars.json") or b"{}")
    lifetime = ca.not_valid_after_utc - ca.not_valid_before_utc
    assert lifetime.total_seconds() <= saved["max_run_duration_s"] + 3600 + 300
    assert (
        environment["tls"]["ca_sha256"] == hashlib.sha256(ca.public_bytes(Encoding.DER)).hexdigest()
    )
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    host = f"gb-{run_id}-gw-nginx.local.c.{PROJECT}.internal"
    assert host in names.get_values_for_type(x509.DNSName)
    backend = f"gb-{run_id}-backend.local.c.{PROJECT}.internal"
    conf = (folder / "nginx.conf").read_text()
    assert [f"server {backend}:{p}" in conf for p in (8080, 8081, 8082)] == [True] * 3
    # No VM asked Secret Manager for anything: no VM ever holds the CA's key.
    assert [c for c in vms.secret_requests if run_id in c[1]] == []
    assert [role for role, _, _ in vms.secret_requests if role in ("gateway", "backend")] == []
    # No private key in the runs bucket (the variables the build saved included), the run's
    # documents or the BigQuery rows.
    assert "vm_metadata" not in saved
    stored = [storage.read_optional(RUNS, n) or b"" for n in storage.names(RUNS, f"runs/{run_id}/")]
    stored.append(json.dumps(doc, default=str).encode())
    stored.append(json.dumps([r for r in world["bigquery"].rows if r["run_id"] == run_id]).encode())
    assert not [data for data in stored if b"PRIVATE KEY" in data]
    assert run_processes(world, run_id) == []
    assert [d for d in vms.denied if run_id in d] == []


def test_a_vm_without_its_certificate_serves_no_tls_and_provision_says_why(
    world: dict[str, Any],  # noqa: F811 - the fixture imported above
) -> None:
    """The TLS VMs' metadata servers withhold their certificates: nginx's VM writes why and
    never starts nginx, the backend VM says why, and the provision step fails with both."""
    vms = world["vms"]
    vms.withheld = {"gatebench-tls"}
    try:
        name = "specs/deployed-withheld.yaml"
        event = upload(world, name, deployed_auction())
        run_id = run_id_for_object(UPLOADS, name, event["data"]["generation"])
        execution = run(world, event, "exec-deployed-withheld")
    finally:
        vms.withheld = set()
    assert execution.state == "FAILED"
    assert execution.error["step"] == "provision"
    message = execution.error["message"]
    assert "the tester reached no target" in message
    missing = "this VM's metadata holds no gatebench-tls"
    assert f"nginx: the gateway VM could not write its TLS certificate: {missing}" in message
    assert f"the backend VM could not start the backend: {missing}" in message
    assert f"{run_id}-gw-nginx" not in [p.name for p in vms.running()]
    doc = stored_run(run_id)
    assert (doc["status"], doc["failed_step"], doc["teardown"]) == ("failed", "provision", "ok")
    assert run_processes(world, run_id) == []
