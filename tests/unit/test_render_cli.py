"""``gatebench render``, and the committed large specs being what their generator writes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from gatebench.cli import main

ROOT = Path(__file__).resolve().parents[2]
PETSTORE = str(ROOT / "examples" / "petstore" / "openapi.yaml")
TEMPLATES = str(ROOT / "tests" / "data" / "adversarial" / "templates.yaml")


def test_render_writes_one_folder_per_gateway(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["render", PETSTORE, "--gateway", "nginx,httpd,kong", "--out", str(tmp_path)])
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"nginx: {tmp_path / 'nginx'} (nginx.conf)",
        f"apache: {tmp_path / 'apache'} (httpd.conf)",
        f"kong: {tmp_path / 'kong'} (kong.conf, kong.yml)",
    ]
    conf = (tmp_path / "nginx" / "nginx.conf").read_text()
    assert f"pid {tmp_path / 'nginx' / 'nginx.pid'};" in conf
    # --gateways, as run, capacity and scale spell it, names the same
    assert main(["render", PETSTORE, "--gateways", "nginx", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "nginx" / "nginx.conf").read_text() == conf.replace(
        str(tmp_path / "nginx"), str(tmp_path / "b" / "nginx")
    )
    assert "listen 127.0.0.1:8080 backlog=4096;" in conf


def test_render_takes_target_options(tmp_path: Path) -> None:
    code = main(
        [
            "render",
            PETSTORE,
            "-g",
            "haproxy",
            "-o",
            str(tmp_path),
            "--port",
            "9999",
            "--backend",
            "http://10.0.0.5:8081",
            "--workdir",
            "/srv/gw",
        ]
    )
    assert code == 0
    conf = (tmp_path / "haproxy" / "haproxy.cfg").read_text()
    assert "bind 127.0.0.1:9999" in conf
    assert "server backend 10.0.0.5:8081" in conf
    assert "pidfile /srv/gw/haproxy.pid" in conf


def test_tyks_redis_is_a_setting_of_the_render(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["render", PETSTORE, "-g", "tyk", "-o", str(tmp_path)]
    assert main([*args, "--redis", "10.0.0.7:6380"]) == 0
    storage = json.loads((tmp_path / "tyk" / "tyk.conf").read_text())["storage"]
    assert (storage["host"], storage["port"]) == ("10.0.0.7", 6380)
    capsys.readouterr()
    assert main([*args, "--redis", "10.0.0.7"]) == 2
    assert capsys.readouterr().err == (
        "gatebench render: --redis: expected HOST:PORT, got '10.0.0.7'\n"
    )
    assert main([*args, "--redis", "10.0.0.7:70000"]) == 2
    assert "redis_port must be a TCP port (1-65535); got 70000" in capsys.readouterr().err


def test_unknown_gateway_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", PETSTORE, "-g", "kongg", "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gatebench render: no renderer for 'kongg'; available: apache, caddy,")


def test_bad_target_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["render", PETSTORE, "-g", "nginx", "-o", str(tmp_path), "--backend", "ftp://x"]) == 2
    )
    assert capsys.readouterr().err == (
        "gatebench render: backend_url must be http(s)://host:port with no path, query or "
        "credentials; got 'ftp://x'\n"
    )


def test_routes_a_gateway_cannot_express_are_left_out_with_located_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", TEMPLATES, "-g", "krakend,nginx", "-o", str(tmp_path)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "templates.yaml: warning: /paths/~1files~1{name}.json/get: krakend cannot express this "
        "route (GET /files/{name}.json): a parameter must fill its whole path segment "
        "(KrakenD cannot build words from variables); the route is left out of its configuration"
    )
    assert err[1].startswith(
        "templates.yaml: warning: /paths/~1files~1{name}/head: krakend cannot express this "
        "route (HEAD /files/{name}): KrakenD endpoints take only GET, POST, PUT, PATCH, DELETE"
    )
    assert err[4] == (
        "krakend: 4 of 10 routes left out (it cannot express them and no workload uses them)"
    )
    config = json.loads((tmp_path / "krakend" / "krakend.json").read_text(encoding="utf-8"))
    endpoints = [(e["method"], e["endpoint"]) for e in config["endpoints"]]
    assert len(endpoints) == 6
    assert ("GET", "/files/{name}.json") not in endpoints
    assert ("GET", "/files/index.json") in endpoints
    assert (tmp_path / "nginx" / "nginx.conf").is_file()


def test_a_workload_route_a_gateway_cannot_express_skips_that_gateway(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "templates.yaml"
    spec.write_text(
        Path(TEMPLATES).read_text(encoding="utf-8")
        + "x-gatebench:\n  gateways: [krakend, nginx]\n  workloads:\n"
        + "    - {name: json, operation: getJsonFile, injection: {at_once: 1}}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    assert main(["render", str(spec), "-g", "krakend,nginx", "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines()[:2] == [
        "krakend: cannot express this API:",
        "templates.yaml: error: /paths/~1files~1{name}.json/get: krakend cannot express this "
        "route (GET /files/{name}.json): a parameter must fill its whole path segment "
        "(KrakenD cannot build words from variables)",
    ]
    assert (out / "nginx" / "nginx.conf").is_file()
    assert not (out / "krakend").exists()


def test_large_specs_are_what_the_generator_writes(tmp_path: Path) -> None:
    path = ROOT / "tests" / "data" / "adversarial" / "generate_large.py"
    spec = importlib.util.spec_from_file_location("generate_large", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HERE = tmp_path
    module.main()
    for name in ("openapi3.yaml", "swagger2.json", "api.raml"):
        committed = (path.parent / "large" / name).read_bytes()
        assert (tmp_path / name).read_bytes() == committed, (
            f"tests/data/adversarial/large/{name} is stale; run {path.relative_to(ROOT)}"
        )


def test_adversarial_inputs_the_description_refuses_are_located() -> None:
    """The other outcome of the adversarial spec: each bad route is left out with one located
    warning; the one readable operation is kept."""
    from gatebench.core.spec import read_spec

    result = read_spec(ROOT / "tests" / "data" / "adversarial" / "invalid.yaml")
    assert result.errors == []
    assert result.api is not None and len(result.api.operations) == 1
    left_out = [p for p in result.warnings if p.message.endswith("; the operation is left out")]
    got = {p.pointer[:60]: p.message for p in left_out}
    expected = {
        "/paths/~1bad%zzpercent": "'%' in a path must start a %XX escape",
        "/paths/~1new\nline": "a path may not contain U+000A (a control or line-break character); write it percent",
        "/paths/~1tab\there": "a path may not contain U+0009 (a control or line-break character); write it percent",
        "/paths/~1unbalanced{brace": "unbalanced '{' or '}' in the path template '/unbalanced{brace'",
        "/paths/~1empty~1{}": "empty variable '{}' in the path template",
        "/paths/no-leading-slash": "a path must start with '/'; got 'no-leading-slash'",
        "/paths/~1long~1" + "c" * 45: "the path is 9006 characters long; the limit is 8192",
    }
    assert set(got) == set(expected)
    for pointer, message in expected.items():
        assert got[pointer].startswith(message), (pointer, got[pointer])
    assert all(p.line is not None for p in left_out)
    assert len(result.api.left_out) == len(expected)


def test_a_plan_validate_refuses_is_printed_as_warnings_and_the_render_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "api.yaml"
    spec.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n"
        "      operationId: getA\n      responses: {'200': {description: ok}}\n"
        "x-gatebench:\n  gateways: [nginx]\n  backend: {url: 'http://user:pw@127.0.0.1:9000'}\n"
        "  workloads:\n    - {name: w, operation: nope, injection: {at_once: 1}}\n",
        encoding="utf-8",
    )
    assert main(["render", str(spec), "-g", "nginx", "-o", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "api.yaml:10:13: warning: /x-gatebench/backend/url: credentials in the URL are never "
        "accepted; use auth: {...} with an env variable",
        "api.yaml:12:17: warning: /x-gatebench/workloads/0/operation: no operation 'nope' in the "
        "description; the description has 1 operations (gatebench parse SPEC lists them)",
        "gatebench render: the x-gatebench plan has 2 errors (above, as warnings): validate and "
        "run refuse it; the configurations need only the description",
    ]
    assert captured.out == f"nginx: {tmp_path / 'out' / 'nginx'} (nginx.conf)\n"
