"""The boot API the engine uses: checker refusals, cloud-only gateways, parallel instances,
files kept inside the workdir, and nothing left running."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from booted import skip_unless_installed
from gatebench.cli import main
from gatebench.core.errors import UnsupportedHere
from gatebench.core.ir import Api
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.renderers.krakend import KrakendRenderer
from gatebench.core.renderers.nginx import NginxRenderer
from gatebench.core.renderers.traefik import TraefikRenderer
from gatebench.core.renderers.tyk import TykRenderer
from gatebench.local.procs import Supervisor, free_port, http_probe
from gatebench.local.provisioners import (
    CheckTask,
    ConfigRejected,
    boot_gateway,
    check_config,
    check_gateway,
    write_files,
)


class BrokenNginx(NginxRenderer):
    """nginx with one directive nginx does not know: its checker must refuse it."""

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        files = super().render(api, target)
        return {
            "nginx.conf": files["nginx.conf"].replace(
                "daemon off;", "daemon off;\nbogus_directive 1;"
            )
        }


class BrokenTraefik(TraefikRenderer):
    """Traefik with one rule it cannot parse: it drops that router, logs it and runs on."""

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        files = super().render(api, target)
        return {**files, "dynamic.yml": files["dynamic.yml"].replace("Method(`", "Methodd(`", 1)}


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


@pytest.mark.parametrize(
    "gateway", ["apache", "caddy", "envoy", "haproxy", "nginx", "traefik", "varnish"]
)
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


def test_traefik_is_ready_only_once_its_routes_are(
    tmp_path: Path, echo_backend: int, petstore: Api
) -> None:
    """Traefik answers 404 for ~0.1 s before it applies its routes: readiness waits for the
    readiness router of the same file, so the first request after the boot is routed."""
    for attempt in range(5):
        with Supervisor() as sup:
            target = _target(tmp_path / f"traefik-{attempt}", echo_backend)
            boot_gateway("traefik", petstore, target, sup)
            assert http_probe("127.0.0.1", target.listen_port, "/v1/pets/mine") == 200
            assert http_probe("127.0.0.1", target.admin_port or 0, "/ping") == 200
            # the readiness router never answers on the API's own entry point
            assert http_probe("127.0.0.1", target.listen_port, "/ping") == 404


def test_render_check_boots_traefik(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(Path(__file__).resolve().parents[2] / "examples" / "petstore" / "openapi.yaml")
    code = main(["render", spec, "-g", "traefik", "-o", str(tmp_path), "--check"])
    assert capsys.readouterr().out.splitlines() == [
        f"traefik: {tmp_path / 'traefik'} (dynamic.yml, traefik.yml) [booted: ok]"
    ]
    assert code == 0


def test_a_router_traefik_drops_fails_the_boot_check(tmp_path: Path, petstore: Api) -> None:
    target = RenderTarget(workdir=str(tmp_path), listen_port=8080)
    broken = check_gateway(CheckTask(BrokenTraefik(), tmp_path, target, petstore))
    assert (broken.status, broken.failed) == (" rejected at boot", True)
    (err,) = broken.messages
    assert err.startswith("traefik: the configuration was partly refused at boot:\n")
    assert " ERR " in err
    assert "unsupported function: Methodd" in err
    fine = check_gateway(CheckTask(get_renderer("traefik"), tmp_path, target, petstore))
    assert (fine.status, fine.failed, fine.messages) == (" [booted: ok]", False, ())


def test_render_check_exits_1_when_the_boot_refuses_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gatebench.cli.render as render_cli

    real = render_cli.get_renderer
    monkeypatch.setattr(
        render_cli,
        "get_renderer",
        lambda name: BrokenTraefik() if name == "traefik" else real(name),
    )
    spec = str(Path(__file__).resolve().parents[2] / "examples" / "petstore" / "openapi.yaml")
    code = main(["render", spec, "-g", "traefik", "-o", str(tmp_path), "--check"])
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        f"traefik: {tmp_path / 'traefik'} (dynamic.yml, traefik.yml) rejected at boot"
    ]
    assert "unsupported function: Methodd" in err
    assert code == 1


def test_a_boot_check_sees_exactly_what_was_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Routes the render left out (with a warning) are not in the files, so the boot check,
    which boots the same routes, never reports them again; the other gateways still run."""
    spec = tmp_path / "api.yaml"
    spec.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n"
        "  /ok:\n    get: {responses: {'200': {description: ok}}}\n"
        "  /pair/{a}{b}:\n    get:\n      parameters:\n"
        "        - {name: a, in: path, required: true, schema: {type: string}}\n"
        "        - {name: b, in: path, required: true, schema: {type: string}}\n"
        "      responses: {'200': {description: ok}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code = main(["render", str(spec), "-g", "traefik,nginx", "-o", str(out), "--check"])
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"traefik: {out / 'traefik'} (dynamic.yml, traefik.yml) [booted: ok]",
        f"nginx: {out / 'nginx'} (nginx.conf) [checker: ok]",
    ]
    left_out = (
        "api.yaml: warning: /paths/~1pair~1{a}{b}/get: parameters 'a' and 'b' follow each "
        "other in one path segment with nothing between them; no gateway can tell where one "
        "ends; the route is left out of its configuration"
    )
    assert captured.err.splitlines() == [
        left_out,
        "traefik: 1 of 2 routes left out (it cannot express them and no workload uses them)",
        left_out,
        "nginx: 1 of 2 routes left out (it cannot express them and no workload uses them)",
    ]
    assert "<spec>" not in captured.err
    assert code == 0


class BackslashKrakend(KrakendRenderer):
    """KrakenD with a backslash in a path (the renderer refuses one): `krakend check` accepts
    it, KrakenD's router panics at start."""

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        files = super().render(api, target)
        config = json.loads(files["krakend.json"])
        endpoint = config["endpoints"][0]
        endpoint["endpoint"] = endpoint["backend"][0]["url_pattern"] = "/back\\slash"
        return {"krakend.json": json.dumps(config)}


class BrokenTyk(TykRenderer):
    """Tyk with an API definition it cannot read: it logs the error and runs on."""

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        return {**super().render(api, target), "apps/gatebench.json": '{"api_id": '}


def test_krakends_boot_finds_what_its_checker_misses(tmp_path: Path, petstore: Api) -> None:
    skip_unless_installed("krakend")
    renderer = BackslashKrakend()
    target = _target(tmp_path / "files", 9000)
    write_files(renderer.render(petstore, target), target.workdir)
    assert "Syntax OK!" in (check_config(renderer, target.workdir, target) or "")
    checked = check_gateway(CheckTask(renderer, Path(target.workdir), target, petstore))
    assert (checked.status, checked.failed) == (" [checker: ok] rejected at boot", True)
    assert "the boot failed" in checked.messages[0]


def test_tyks_boot_check_reads_its_error_lines(tmp_path: Path, petstore: Api) -> None:
    skip_unless_installed("tyk")
    target = _target(tmp_path)
    checked = check_gateway(CheckTask(get_renderer("tyk"), tmp_path, target, petstore))
    assert checked.status == " [booted: ok]", checked.messages
    checked = check_gateway(CheckTask(BrokenTyk(), tmp_path, target, petstore))
    assert (checked.status, checked.failed) == (" rejected at boot", True)
    assert checked.messages[0].startswith("tyk: the configuration was partly refused at boot")
    assert "level=error" in checked.messages[0]
