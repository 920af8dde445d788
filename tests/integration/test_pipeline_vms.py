"""The local VMs (tests/cloud/localvms.py) fail where Compute Engine VMs fail:

- a role whose startup template forgets its port is unreachable (Container-Optimized OS's
  host firewall drops the connection) even though its server listens;
- a role reads only the objects infra/ grants it: with the grant table of infra/ as it was
  before object-level grants (no grant for the backend's service account), the backend's
  read of its own configuration answers 403 and the backend never serves.

Each test runs a backend VM (the runner image's ``gatebench cloud backend``, in a container of
the image built from cloudbuild/runner.Dockerfile: tests/cloud/image.py) in its own network
namespace, and probes it from another machine of the same test network."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.image import BuiltImage, containers, tag
from cloud.localvms import LocalVms
from cloud.netns import LocalNetwork, leftovers, network_namespaces_work
from cloud.servers import start_gcs_emulator, storage_client
from cloud.storagegate import vm_grants
from gatebench.cloud import Storage
from gatebench.local.procs import Supervisor

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RUNS = "gb-runs"
RUN = "r-00000000000000000abc"
IMAGE = "europe-docker.pkg.dev/gatebench-test/gb-gatebench/runner:0.1.0"
PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("open")
except OSError as exc:
    print("closed", type(exc).__name__)
"""


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Storage]]:
    with Supervisor() as supervisor:
        endpoint = start_gcs_emulator(supervisor, tmp_path_factory.mktemp("vms-gcs"))
        client: Any = storage_client(endpoint)
        client.create_bucket(RUNS)
        storage = Storage("gatebench-test")
        backend = {"listen": "0.0.0.0:8080", "mode": "auction", "config_object": None}
        storage.write(RUNS, f"runs/{RUN}/backend.json", json.dumps(backend))
        yield endpoint.url, storage


@pytest.fixture
def vms(
    tmp_path: Path, gcs: tuple[str, Storage], runner_image: BuiltImage
) -> Iterator[tuple[LocalVms, LocalNetwork, Path]]:
    tag(runner_image.tag, IMAGE)
    reason = network_namespaces_work()
    if reason is not None:
        pytest.fail(f"the local VMs need network namespaces: {reason}")
    url, storage = gcs
    templates = tmp_path / "templates"
    shutil.copytree(ROOT / "infra" / "vms" / "templates", templates)
    infra = tmp_path / "infra"
    infra.mkdir()
    for tf in (ROOT / "infra").glob("*.tf"):
        shutil.copy(tf, infra)
    network = LocalNetwork()
    with Supervisor() as supervisor:
        env = {"STORAGE_EMULATOR_HOST": url, "GATEBENCH_PROJECT": "gatebench-test"}
        local = LocalVms(
            supervisor, storage, tmp_path, env, network, url, templates, infra, image=IMAGE
        )
        try:
            yield local, network, tmp_path
        finally:
            local.close()
            assert leftovers(network.tag) == []
            assert containers(network.tag) == []


def backend_only() -> dict[str, Any]:
    role_args = ["--run-id", RUN, "--runs-bucket", RUNS]
    return {
        "project": "gatebench-test",
        "zone": "local",
        "prefix": "gb",
        "run_id": RUN,
        "runner_image": IMAGE,
        "runs_bucket": RUNS,
        "service_accounts": {"tester": "t@x", "gateway": "g@x", "backend": "b@x"},
        "backend": {
            "machine_type": "e2-small",
            "port": 8080,
            "ports": [8080],
            "args": ["cloud", "backend", *role_args],
        },
        "gateways": {},
        "tester": None,
    }


def probe(network: LocalNetwork, host: str, port: int) -> str:
    """A connection from another tester VM (the role the VPC lets reach the backend)."""
    if "prober.local.internal" not in network.roles:
        network.add(["prober.local.internal"])
        network.assign("prober.local.internal", "tester")
    return network.run_in(
        "prober.local.internal", ["python3", "-c", PROBE, host, str(port)]
    ).strip()


def listening(network: LocalNetwork, host: str, port: int, timeout: float = 30) -> bool:
    """Whether something listens on the port inside the machine (wait for it to start)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = network.run_in(host, ["ss", "-Hltn", f"sport = :{port}"])
        if out.strip():
            return True
        time.sleep(0.2)  # polling the machine's sockets, bounded by the deadline
    return False


def test_a_port_the_startup_template_forgets_stays_closed(
    vms: tuple[LocalVms, LocalNetwork, Path],
) -> None:
    local, network, tmp = vms
    template = tmp / "templates" / "runner.sh.tftpl"
    text = template.read_text()
    assert "iptables -w -A INPUT -p tcp --dport ${p} -j ACCEPT\n" in text
    template.write_text(text.replace("iptables -w -A INPUT -p tcp --dport ${p} -j ACCEPT\n", ""))
    values = backend_only()
    local.apply("gs://b/forgot", values)
    host = local.host_names(values)["backend"]
    assert listening(network, host, 8080)  # the backend serves inside its VM...
    assert probe(network, host, 8080) == "closed TimeoutError"  # ...and nobody reaches it
    local.destroy("gs://b/forgot")
    template.write_text(text)  # with the template's line, the same VM answers
    local.apply("gs://b/kept", values)
    assert listening(network, host, 8080)
    assert probe(network, host, 8080) == "open"


def test_a_role_reads_only_what_infra_grants_it(vms: tuple[LocalVms, LocalNetwork, Path]) -> None:
    local, network, tmp = vms
    values = backend_only()
    host = local.host_names(values)["backend"]
    assert any(g.suffix == "/backend.json" for g in local.grants["backend"])
    infra = tmp / "infra"
    # infra/ without the backend's grants (as before object-level grants existed).
    access = infra / "vm_access.tf"
    text = access.read_text()
    start = text.index("    backend = [\n")
    end = text.index("    ]\n", start) + len("    ]\n")
    access.write_text(text[:start] + text[end:])
    local.grants = vm_grants(infra)
    assert local.grants["backend"] == []
    local.apply("gs://b/old-grants", values)
    (proc,) = local.machines["gs://b/old-grants"]
    assert proc.popen.wait(timeout=60) != 0
    assert "403" in proc.log_tail()
    assert (
        f"b@x does not have storage.objects.get access to the Google Cloud Storage object {RUNS}/runs/{RUN}/backend.json"
        in proc.log_tail()
    )
    assert not listening(network, host, 8080, timeout=1)


def two_testers() -> dict[str, Any]:
    """Two tester VMs and nothing else: tester 0 serves the phase barrier on its VM from the
    moment it starts (here while it keeps probing a target that never answers)."""
    values = backend_only()
    role_args = ["--run-id", RUN, "--runs-bucket", RUNS]
    barrier = f"http://gb-{RUN}-tester.local.c.gatebench-test.internal:8090"
    values["backend"] = None
    values["tester"] = {
        "machine_type": "e2-small",
        "args": ["cloud", "tester", *role_args, "--barrier", barrier],
        "count": 2,
        "listen": [8090],
    }
    return values


def test_the_phase_barrier_is_reached_only_through_the_port_tester_0_opens(
    vms: tuple[LocalVms, LocalNetwork, Path],
) -> None:
    from gatebench.core.plan import Injection
    from gatebench.core.workload import FORMAT, injection_json

    local, network, tmp = vms
    phase = {
        "id": "p0000",
        "index": 0,
        "target": "nginx",
        "workload": "w",
        "repetition": 1,
        "measured": True,
        "seed": 1,
        "injection": injection_json(Injection("at_once", users=2)),
        "before": [],
        "params": {},
        "request": {"base_url": "http://gw.invalid:8000"},
    }
    workload = {"format": FORMAT, "seed": 1, "secret_env": [], "skip_file": "", "phases": [phase]}
    local.storage.write(RUNS, f"runs/{RUN}/workload.json", json.dumps(workload))
    values = two_testers()
    hosts = local.host_names(values)
    first, second = hosts["tester"], hosts["tester-1"]
    template = tmp / "templates" / "runner.sh.tftpl"
    text = template.read_text()
    line = "iptables -w -A INPUT -p tcp --dport ${p} -j ACCEPT\n"
    assert line in text
    template.write_text(text.replace(line, ""))
    local.apply("gs://b/barrier-forgot", values)
    assert listening(network, first, 8090)  # tester 0 serves the barrier on its VM...
    reach = ["python3", "-c", PROBE, first, "8090"]
    assert network.run_in(second, reach).strip() == "closed TimeoutError"  # ...unreachable
    local.destroy("gs://b/barrier-forgot")
    template.write_text(text)  # with the template's line, tester 1 reaches it
    local.apply("gs://b/barrier-kept", values)
    assert listening(network, first, 8090)
    assert network.run_in(second, reach).strip() == "open"
    # only tester 0 opened it (main.tf: count.index == 0), and only tester 0 listens there
    assert not listening(network, second, 8090, timeout=1)
    rules = network.run_in(second, ["iptables", "-w", "-S", "INPUT"])
    assert "--dport 8090" not in rules
    assert "--dport 8090" in network.run_in(first, ["iptables", "-w", "-S", "INPUT"])
    local.destroy("gs://b/barrier-kept")
    # The VPC without its tester → tester rule: the port is open on tester 0, yet dropped
    # between the VMs.
    from cloud.vpc import firewall_rules

    rules_before = network.rules
    assert [r.name for r in rules_before if r.name == "tester_to_tester"] == ["tester_to_tester"]
    network.rules = [r for r in rules_before if r.name != "tester_to_tester"]
    try:
        local.apply("gs://b/barrier-no-rule", values)
        assert listening(network, first, 8090)
        assert network.run_in(second, reach).strip() == "closed TimeoutError"
    finally:
        network.rules = rules_before
    assert network.rules == firewall_rules()
