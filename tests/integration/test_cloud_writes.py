"""A run's VMs write only their own run's objects: with the write policies the provision build
signs for each (gatebench.cloud._writes), checked as Cloud Storage checks a V4 POST policy
(tests/cloud/storagegate.py), through the storage emulator; never with the VM's account.

The build account's key stands in for IAM signBlob (tests/cloud/signing.py); the gate checks
the signature with its public half, every condition of the policy, and the build account's own
grants in infra/ (a signed upload acts as its signer)."""

from __future__ import annotations

import datetime
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.servers import start_gcs_emulator, storage_client
from cloud.signing import BUILD_EMAIL, service_account_info
from cloud.storagegate import Access, PolicySigner, StorageGate, build_grants, vm_grants
from gatebench.cloud import Storage
from gatebench.cloud._ingest import CGROUP_OBJECT, raw_object
from gatebench.cloud._writes import PolicyWriter, vm_policies
from gatebench.core.errors import RunError
from gatebench.local.procs import Supervisor

pytestmark = pytest.mark.integration

RUNS = "gb-runs"
RUN, OTHER = "r-" + "a" * 20, "r-" + "b" * 20


def values(run: str) -> dict[str, Any]:
    return {
        "run_id": run,
        "runs_bucket": RUNS,
        "max_run_duration_s": 3600,
        "backend": {"port": 8080},
        "gateways": {"nginx": {}},
        "tester": {"count": 1},
    }


@pytest.fixture
def world(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Storage, dict[str, Any], StorageGate]]:
    """The runs bucket behind a gate that takes a gateway VM's account for every caller but
    a signed POST (which acts as its signer); the storage yielded reads the emulator itself."""
    from google.oauth2 import service_account

    info, public_key = service_account_info(BUILD_EMAIL)
    key = service_account.Credentials.from_service_account_info(info)
    with Supervisor() as supervisor:
        endpoint = start_gcs_emulator(supervisor, tmp_path)
        client: Any = storage_client(endpoint)
        client.create_bucket(RUNS)
        direct = Storage("gatebench-test")
        assert direct.client is not None  # made now: the emulator itself, not the gate
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        access = Access("gateway", "gb-gateway@p", RUNS, vm_grants()["gateway"])
        gate = StorageGate(
            access, listener, endpoint.url, PolicySigner(BUILD_EMAIL, public_key, build_grants())
        )
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", gate.url)
        policies = {
            run: {
                machine: json.loads(text)
                for machine, text in vm_policies(
                    values(run), email=BUILD_EMAIL, sign=key.sign_bytes
                ).items()
            }
            for run in (RUN, OTHER)
        }
        try:
            yield direct, policies, gate
        finally:
            gate.close()


def test_a_gateway_vm_writes_its_runs_samples_and_not_another_runs(
    world: tuple[Storage, dict[str, Any], StorageGate],
) -> None:
    storage, policies, gate = world
    mine = Storage("gatebench-test", writer=PolicyWriter(policies[RUN]["gw-nginx"]))
    samples = CGROUP_OBJECT.format(run_id=RUN, target="nginx")
    mine.write(RUNS, samples, '{"wall_ms": 1}\n', "application/x-ndjson")
    mine.write(RUNS, samples, '{"wall_ms": 2}\n', "application/x-ndjson")  # replaced, again
    assert storage.read_optional(RUNS, samples) == b'{"wall_ms": 2}\n'
    # another run's samples: it holds no policy for them ...
    theirs = CGROUP_OBJECT.format(run_id=OTHER, target="nginx")
    with pytest.raises(RunError, match="this VM holds no write policy for it"):
        mine.write(RUNS, theirs, "{}", "application/x-ndjson")
    # ... and a policy of its own run sent for them is refused by Cloud Storage
    forged = PolicyWriter([{**policies[RUN]["gw-nginx"][0], "value": theirs}])
    with pytest.raises(RunError, match=r"answered 403: .*Policy Condition failed: \[\"eq\""):
        forged.write(RUNS, theirs, "{}", "application/x-ndjson")
    assert storage.read_optional(RUNS, theirs) is None
    # its account writes nothing, even its own run's objects
    from google.api_core.exceptions import Forbidden

    with pytest.raises(Forbidden):
        Storage("gatebench-test").write(RUNS, samples, "{}", "application/x-ndjson")
    # a policy whose signature is not the build account's is refused
    bad = dict(policies[RUN]["gw-nginx"][0])
    bad["fields"] = {**bad["fields"], "x-goog-signature": "00" * 256}
    with pytest.raises(RunError, match="signature we calculated does not match"):
        PolicyWriter([bad]).write(RUNS, samples, "{}", "application/x-ndjson")
    # google-cloud-storage 3 also asks for the bucket's metadata in a background thread (its
    # bucket metadata cache), refused as Cloud Storage refuses it (no storage.buckets.get), at a
    # moment of its own: the object requests refused are the three above
    objects = [d for d in gate.denied if "storage.buckets.get" not in d]
    assert len(objects) == 3, gate.denied


def test_a_tester_streams_its_raw_log_once_and_cannot_replace_it(
    world: tuple[Storage, dict[str, Any], StorageGate], tmp_path: Path
) -> None:
    storage, policies, _ = world
    tester = Storage("gatebench-test", writer=PolicyWriter(policies[RUN]["tester"]))
    log = tmp_path / "simulation.log"
    log.write_bytes(bytes(range(256)) * 12_000)  # 3 MB, sent a megabyte at a time
    name = raw_object(RUN, "gatling")
    tester.upload_file(RUNS, name, log)
    assert storage.read_optional(RUNS, name) == log.read_bytes()
    # the build account creates raw logs and never replaces one: nor can a policy it signed
    with pytest.raises(RunError, match="answered 403"):
        tester.upload_file(RUNS, name, log)
    # its capacity and live folders: objects of its own run made as it goes
    tester.write(RUNS, f"runs/{RUN}/capacity/probes/0003/t1/share.json", "{}", "application/json")
    with pytest.raises(RunError, match="no write policy"):
        tester.write(RUNS, f"runs/{OTHER}/capacity/campaign.json", "{}", "application/json")


def test_a_policy_expires_with_the_runs_vms() -> None:
    now = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)
    (first, *_), *_ = (
        json.loads(t)
        for t in vm_policies(values(RUN), email=BUILD_EMAIL, sign=lambda b: b"", now=now).values()
    )
    import base64

    document = json.loads(base64.b64decode(first["fields"]["policy"]))
    assert document["expiration"] == "2026-12-01T02:00:00Z"  # 3600 s of VMs and an hour
