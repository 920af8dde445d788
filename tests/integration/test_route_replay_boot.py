"""The boot API the engine uses: checker refusals, cloud-only gateways, parallel instances,
files kept inside the workdir, and nothing left running."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gatebench.errors import UnsupportedHere
from gatebench.ir import Api
from gatebench.procs import Supervisor, free_port, http_probe
from gatebench.provisioners import ConfigRejected, boot_gateway, check_config, write_files
from gatebench.renderers import RenderTarget, get_renderer
from gatebench.renderers.nginx import NginxRenderer


class BrokenNginx(NginxRenderer):
    """nginx with one directive nginx does not know: its checker must refuse it."""

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        files = super().render(api, target)
        return {
            "nginx.conf": files["nginx.conf"].replace(
                "daemon off;", "daemon off;\nbogus_directive 1;"
            )
        }


def _target(workdir: Path, backend_port: int = 9) -> RenderTarget:
    return RenderTarget(
        workdir=str(workdir),
        listen_port=free_port(),
        backend_url=f"http://127.0.0.1:{backend_port}",
        admin_port=free_port(),
    )


@pytest.fixture
def petstore(replay_api: Callable[[str], Api]) -> Api:
    return replay_api("petstore")


def test_a_rejected_config_carries_the_checker_output(tmp_path: Path, petstore: Api) -> None:
    with Supervisor() as sup, pytest.raises(ConfigRejected) as info:
        boot_gateway(BrokenNginx(), petstore, _target(tmp_path), sup)
    error = info.value
    assert error.gateway == "nginx"
    assert 'unknown directive "bogus_directive"' in error.output
    assert str(error).startswith("nginx: the configuration was rejected by `")
    assert error.returncode != 0


def test_cloud_only_gateways_cannot_boot_here(tmp_path: Path, petstore: Api) -> None:
    with (
        Supervisor() as sup,
        pytest.raises(UnsupportedHere, match="kong only runs on the cloud path"),
    ):
        boot_gateway("kong", petstore, _target(tmp_path), sup)


@pytest.mark.parametrize("gateway", ["apache", "caddy", "envoy", "haproxy", "nginx", "varnish"])
def test_two_instances_run_at_once_and_stop_cleanly(
    gateway: str, tmp_path: Path, echo_backend: int, petstore: Api
) -> None:
    api = petstore
    before = set(os.listdir("/run")) if os.path.isdir("/run") else set()
    pids = []
    with Supervisor() as sup:
        targets = [_target(tmp_path / f"{gateway}-{i}", echo_backend) for i in (1, 2)]
        procs = [boot_gateway(gateway, api, t, sup) for t in targets]
        for target in targets:
            assert http_probe("127.0.0.1", target.listen_port, "/v1/pets/mine") == 200
            assert http_probe("127.0.0.1", target.listen_port, "/nope") == 404
        pids = [p.pid for p in procs]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    after = set(os.listdir("/run")) if os.path.isdir("/run") else set()
    assert after <= before, f"{gateway} wrote to /run: {sorted(after - before)}"


def test_checker_accepts_what_render_writes(
    tmp_path: Path, replay_api: Callable[[str], Api]
) -> None:
    renderer = get_renderer("haproxy")
    target = _target(tmp_path)
    write_files(renderer.render(replay_api("auction"), target), tmp_path)
    assert check_config(renderer, tmp_path, target) is not None
