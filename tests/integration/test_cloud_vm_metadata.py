"""A gateway container cannot take its VM's service-account token; gatebench's own containers
on the VM can.

A gateway VM (Container-Optimized OS) runs the gateway's official image on the host network:
without more, the image could ask the metadata server for the VM account's token and use its
grants. The gateway VM's startup script (infra/vms/templates/gateway.sh.tftpl) starts the
gateway and its sidecars in a cgroup of their own (``--cgroup-parent=gateways.slice``) and
rejects what that cgroup sends to the metadata server (iptables' cgroup match), before any of
them starts; the configure steps, the meter and the live agent run elsewhere.

Here the VM is a network namespace (tests/cloud/netns.py) with its metadata server stand-in at
Compute Engine's address (tests/cloud/metadata.py); the script, rendered from the template,
runs its firewall lines there, and a process started as the script starts the gateway (in the
cgroup its ``docker run`` names) and one started as the live agent (its ``docker run`` names
none) each ask for the token. What this cannot show: Docker placing a container in that slice
on Container-Optimized OS (systemd's cgroup driver), the slice's unit, and Compute Engine's
own metadata server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from cloud.metadata import MetadataStandIn, stand_in_token
from cloud.netns import METADATA_ADDRESS, LocalNetwork, leftovers, network_namespaces_work
from cloud.startup import container_cgroup, firewall_commands, startup_script

pytestmark = pytest.mark.integration

RUN = "r-0123456789abcdef0123"
ACCOUNT = "gb-gateway@proj.iam.gserviceaccount.com"
ASK = """
import json, sys, urllib.request
request = urllib.request.Request(
    "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token",
    headers={"Metadata-Flavor": "Google"},
)
try:
    with urllib.request.urlopen(request, timeout=5) as answer:
        print("served", json.loads(answer.read())["access_token"])
except OSError as exc:
    print("refused", type(getattr(exc, "reason", exc)).__name__)
"""


def values() -> dict[str, Any]:
    return {
        "runner_image": "europe-docker.pkg.dev/p/gb-gatebench/runner:0.1.0",
        "runs_bucket": "gb-runs",
        "run_id": RUN,
        "gateways": {
            "nginx": {
                "port": 8000,
                "files": [{"path": "nginx.conf", "object": f"runs/{RUN}/configs/nginx/nginx.conf"}],
                "dirs": ["logs"],
                "mount": "/etc/gatebench",
                "image": "nginx:1.27.3",
                "args": ["nginx", "-c", "/etc/gatebench/nginx.conf"],
                "random_env": [],
                "configure": [["cloud", "gateway-config", "--gateway", "nginx"]],
                "sidecars": [{"name": "redis", "image": "redis:7", "args": []}],
                "live": [["cloud", "live-gateway", "--gateway", "nginx"]],
            }
        },
    }


@pytest.fixture
def vm() -> Iterator[tuple[LocalNetwork, str, MetadataStandIn]]:
    reason = network_namespaces_work()
    if reason is not None:
        pytest.fail(f"network namespaces are needed here: {reason}")
    network = LocalNetwork()
    host = f"gb-{RUN}-gw-nginx.europe-central2-a.c.proj.internal"
    server = None
    try:
        network.add([host])
        script = startup_script("gateway", values(), "nginx")
        for command in firewall_commands(script):
            network.run_in(host, network.in_cgroup(host, command))
        listener = network.listen_inside(host, METADATA_ADDRESS, 80)
        server = MetadataStandIn(ACCOUNT, {}, listener)
        yield network, host, server
    finally:
        if server is not None:
            server.close()
        network.close()
        assert leftovers(network.tag) == []


def ask(network: LocalNetwork, host: str, cgroup: str | None) -> str:
    command = network.command(host, [sys.executable, "-c", ASK], cgroup=cgroup)
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_gateway_container_is_refused_the_vms_token_and_the_agent_is_served(
    vm: tuple[LocalNetwork, str, MetadataStandIn],
) -> None:
    network, host, server = vm
    script = startup_script("gateway", values(), "nginx")
    gateway = container_cgroup(script, "gateway")
    assert gateway == "gateways.slice"
    assert container_cgroup(script, "redis") == gateway  # its sidecars too
    # gatebench's own containers are not in it: the meter, the live agent
    assert container_cgroup(script, "gatebench-meter") is None
    assert container_cgroup(script, "gatebench-live") is None
    assert ask(network, host, gateway) == "refused ConnectionRefusedError"
    assert ask(network, host, None) == f"served {stand_in_token(ACCOUNT)}"
    assert server.requests == [
        ("/computeMetadata/v1/instance/service-accounts/default/token", 200)
    ]  # the gateway's request never reached the server
