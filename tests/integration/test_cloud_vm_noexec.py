"""A gateway VM keeps its gateway's configuration folder where the gateway may run what it
puts there.

Container-Optimized OS mounts /var, /home and /tmp ``noexec`` (COS's "Disks and file system
overview"); a container's volume from such a folder keeps the flag. The renderers' contract
keeps a gateway's working files beside its configuration, and two gateways run what they put
there: Varnish loads the VCL it compiles into its working folder (``-n``), and Netty (Spring
Cloud Gateway) loads its native transport from ``java.io.tmpdir``. Under /var the first never
starts and the second quietly falls back to Java's NIO: a different gateway from the local
path's. The gateway script's folder (infra/vms/templates/gateway.sh.tftpl, its ``dir=``) is
under /mnt/disks, writable and executable.

Here the VM is a network namespace (tests/cloud/netns.py) whose gateway sees the folder mounted
at the container's path, non-executable when COS would mount the script's folder so
(tests/cloud/startup.py ``cos_noexec``). The meter's look at which transport the gateway's
processes mapped (gatebench.vm._roles ``loaded_transports``) reads this machine's /proc. What
this cannot show: COS's own mounts, and Docker's bind mount keeping the flag there (as Linux's
bind mounts do here)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.netns import CGROUP2, LocalNetwork, leftovers, network_namespaces_work
from cloud.startup import config_folder, container_cgroup, cos_noexec, startup_script
from gatebench.cloud._ingest import MeterUpload, jvm_transports
from gatebench.core._locations import jvm_gateway_jar_location
from gatebench.local.procs import Supervisor
from gatebench.vm._roles import loaded_transports

pytestmark = pytest.mark.integration

RUN = "r-0123456789abcdef0123"
MOUNT = "/etc/gatebench"
PORT = 8000
PROBE = """
import socket, sys, time
deadline = time.monotonic() + float(sys.argv[1])
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=1).close()
        print("answers")
        break
    except OSError:
        time.sleep(0.2)
else:
    print("silent")
"""


def values() -> dict[str, Any]:
    gateway = {
        "port": PORT,
        "files": [],
        "dirs": ["tmp"],
        "mount": MOUNT,
        "image": "varnish:7.6.1",
        "args": ["varnishd"],
        "random_env": [],
        "sidecars": [],
        "configure": [],
    }
    return {
        "runner_image": "europe-docker.pkg.dev/p/gb-gatebench/runner:0.1.0",
        "runs_bucket": "gb-runs",
        "run_id": RUN,
        "gateways": {"varnish": gateway},
    }


@pytest.fixture
def vm(tmp_path: Path) -> Iterator[tuple[LocalNetwork, str, Supervisor, Path]]:
    reason = network_namespaces_work()
    if reason is not None:
        pytest.fail(f"network namespaces are needed here: {reason}")
    network = LocalNetwork()
    host = f"gb-{RUN}-gw-varnish.europe-central2-a.c.proj.internal"
    try:
        network.add([host])
        with Supervisor() as supervisor:
            yield network, host, supervisor, tmp_path
    finally:
        network.close()
        assert leftovers(network.tag) == []


def probe(network: LocalNetwork, host: str, seconds: float) -> str:
    command = network.command(host, [sys.executable, "-c", PROBE, str(seconds), str(PORT)])
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_scripts_configuration_folder_is_executable_on_cos() -> None:
    folder = config_folder(startup_script("gateway", values(), "varnish"))
    assert folder.startswith("/mnt/disks/")
    assert not cos_noexec(folder)
    # what COS mounts noexec, and what it leaves executable
    assert cos_noexec("/var/lib/gatebench/config")
    assert cos_noexec("/home/gatebench") and cos_noexec("/tmp/x")
    assert not cos_noexec("/var/lib/docker/volumes/x") and not cos_noexec("/variable")


def start_varnish(
    network: LocalNetwork, host: str, supervisor: Supervisor, folder: Path, noexec: bool
) -> Any:
    folder.mkdir()
    (folder / "default.vcl").write_text(
        'vcl 4.1;\nbackend default { .host = "127.0.0.1"; .port = "9"; }\n'
    )
    argv = [
        "varnishd",
        "-F",
        "-j",
        "none",
        "-f",
        f"{MOUNT}/default.vcl",
        "-n",
        f"{MOUNT}/varnish",
        "-a",
        f"127.0.0.1:{PORT}",
        "-s",
        "malloc,16m",
    ]
    command = network.command(host, argv, mount=(folder, MOUNT), noexec=noexec)
    return supervisor.start(f"varnish-{noexec}", command, log_path=folder.parent / "varnish.log")


def test_varnish_starts_from_the_scripts_folder_and_not_from_a_noexec_one(
    vm: tuple[LocalNetwork, str, Supervisor, Path],
) -> None:
    network, host, supervisor, tmp = vm
    script = startup_script("gateway", values(), "varnish")
    noexec = cos_noexec(config_folder(script))
    gateway = start_varnish(network, host, supervisor, tmp / "scripts", noexec)
    assert probe(network, host, 60) == "answers", (tmp / "varnish.log").read_text()
    supervisor.stop(gateway)
    # the same gateway with its folder under /var: its compiled VCL cannot be loaded
    refused = start_varnish(network, host, supervisor, tmp / "var", True)
    deadline = time.monotonic() + 60
    while refused.returncode is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert refused.returncode not in (None, 0)
    log = (tmp / "varnish.log").read_text()
    assert "failed to map segment" in log or "Could not load" in log, log


def netty_maps(cgroup: Path) -> list[str]:
    """The memory-map lines of Netty's native libraries of the cgroup's processes."""
    lines = []
    for pid in (cgroup / "cgroup.procs").read_text().split():
        try:
            maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
        except OSError:
            continue
        lines += [f"{pid}: {line}" for line in maps if "netty" in line]
    return lines


def start_gateway_jar(
    network: LocalNetwork, host: str, supervisor: Supervisor, folder: Path, noexec: bool
) -> Any:
    jar = jvm_gateway_jar_location("spring-cloud-gateway")
    if not jar.is_file():
        pytest.fail(f"{jar} is not built: run `make setup-all`")
    (folder / "tmp").mkdir(parents=True)
    (folder / "application.yml").write_text(f"server:\n  port: {PORT}\n")
    argv = [
        "java",
        "-Xmx256m",
        "-XX:-UsePerfData",
        f"-Djava.io.tmpdir={MOUNT}/tmp",
        "-jar",
        str(jar),
        f"--spring.config.location=file:{MOUNT}/application.yml",
    ]
    command = network.command(
        host, argv, mount=(folder, MOUNT), cgroup="gateways.slice", noexec=noexec
    )
    return supervisor.start(f"scg-{noexec}", command, log_path=folder.parent / f"scg-{noexec}.log")


def test_spring_cloud_gateway_loads_nettys_native_transport_only_from_an_executable_folder(
    vm: tuple[LocalNetwork, str, Supervisor, Path],
) -> None:
    network, host, supervisor, tmp = vm
    script = startup_script("gateway", values(), "varnish")
    assert container_cgroup(script, "gateway") == "gateways.slice"
    path = "/" + str(network.cgroup(host, "gateways.slice").relative_to(CGROUP2))
    seen, mapped = {}, {}
    for noexec in (cos_noexec(config_folder(script)), True):
        gateway = start_gateway_jar(network, host, supervisor, tmp / f"scg-{noexec}", noexec)
        log = tmp / f"scg-{noexec}.log"
        assert probe(network, host, 120) == "answers", log.read_text()
        seen[noexec] = loaded_transports(Path("/proc"), path)
        mapped[noexec] = netty_maps(network.cgroup(host, "gateways.slice"))
        supervisor.stop(gateway)
        time.sleep(0.5)
    assert seen == {False: {"epoll"}, True: set()}, mapped
    uploads = {
        "spring-cloud-gateway": MeterUpload(loaded=sorted(seen[False])),
        "zuul": MeterUpload(loaded=[]),
        "nginx": MeterUpload(loaded=[]),
    }
    assert jvm_transports(uploads) == {"spring-cloud-gateway": "epoll", "zuul": "nio"}
