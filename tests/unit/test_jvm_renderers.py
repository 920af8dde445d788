"""The spring-cloud-gateway and zuul renderers without booting them: what reaches the YAML,
that it routes what the shared semantics route (Python's ``re`` reads the same ``\\xHH``
regexes Java does), what they refuse and how they are started."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gatebench.core.errors import RenderError, UnsupportedFeature, UnsupportedHere
from gatebench.core.ir import Api
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.renderers._jvm import JVM_OPTIONS_ENV, assert_inert
from gatebench.core.spec import load_spec
from replay import replay_matrix

ROOT = Path(__file__).resolve().parents[2]
CASES = {
    "adversarial": "tests/data/adversarial/openapi.yaml",
    "auction": "examples/auction/openapi.yaml",
    "petstore": "examples/petstore/openapi.yaml",
    "portable": "tests/data/adversarial/portable.yaml",
    "templates": "tests/data/adversarial/templates.yaml",
    "quirks": "tests/data/jvm/quirks.yaml",
}
TARGET = RenderTarget(
    workdir="/srv/gatebench/jvm", listen_port=18080, backend_url="http://127.0.0.1:19000"
)


def _api(path: str | Path) -> Api:
    api = load_spec(ROOT / path).api
    assert api is not None
    return api


def _api_from(tmp_path: Path, paths: str) -> Api:
    spec = tmp_path / "openapi.yaml"
    spec.write_text(
        'openapi: 3.0.3\ninfo: {title: t, version: "1"}\npaths:\n' + paths, encoding="utf-8"
    )
    return _api(spec)


def _config(gateway: str, case: str) -> dict[str, Any]:
    text = get_renderer(gateway).render(_api(CASES[case]), TARGET)["application.yml"]
    data: dict[str, Any] = yaml.safe_load(text)
    return data


def _scg_routes(config: dict[str, Any]) -> list[tuple[str, str]]:
    routes = config["spring"]["cloud"]["gateway"]["server"]["webflux"]["routes"]
    out = []
    for route in routes:
        preds = {p["name"]: p["args"] for p in route["predicates"]}
        assert set(preds) == {"Method", "RawPath"}
        out.append((preds["Method"]["methods"], preds["RawPath"]["regexp"]))
    return out


def _zuul_operations(config: dict[str, Any]) -> list[tuple[str, str]]:
    return [(op["method"], op["path-regex"]) for op in config["gatebench"]["operations"]]


def _ant_regex(pattern: str) -> re.Pattern[str]:
    """Ant's ``*`` / ``?`` within one segment (narrower than Ant's ``**``: enough for a
    superset check)."""
    out = "".join(
        "[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch) for ch in pattern
    )
    return re.compile(out)


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for k, v in node.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(node, list):
        return [s for item in node for s in _strings(item)]
    return []


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("gateway", ["spring-cloud-gateway", "zuul"])
def test_rendered_routes_forward_exactly_what_the_semantics_route(gateway: str, case: str) -> None:
    config = _config(gateway, case)
    operations = (
        _scg_routes(config) if gateway == "spring-cloud-gateway" else _zuul_operations(config)
    )
    compiled = [(method, re.compile(regex)) for method, regex in operations]
    matrix = replay_matrix(_api(CASES[case]), large_body_bytes=1)
    assert any(r.expect_routed for r in matrix)
    assert any(not r.expect_routed for r in matrix)
    for req in matrix:
        routed = any(m == req.method and rx.fullmatch(req.path) for m, rx in compiled)
        assert routed == req.expect_routed, f"{req.method} {req.target[:120]} [{req.label}]"


@pytest.mark.parametrize("case", sorted(CASES))
def test_zuul_ant_routes_let_every_routed_request_reach_zuul(case: str) -> None:
    config = _config("zuul", case)
    patterns = [_ant_regex(r["path"]) for r in config["zuul"]["routes"].values()]
    for route in config["zuul"]["routes"].values():
        assert route["url"] == "http://127.0.0.1:19000"
        assert route["strip-prefix"] is False
    for req in replay_matrix(_api(CASES[case]), large_body_bytes=1):
        if req.expect_routed:
            assert any(p.fullmatch(req.path) for p in patterns), req.label


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("gateway", ["spring-cloud-gateway", "zuul"])
def test_no_value_is_evaluated_by_spring(gateway: str, case: str) -> None:
    for value in _strings(_config(gateway, case)):
        assert "${" not in value, value
        assert not value.startswith("#{"), value
        assert value.isascii(), value


def test_scg_settings_that_keep_the_request_unchanged() -> None:
    config = _config("spring-cloud-gateway", "auction")
    assert config["server"] == {
        "address": "127.0.0.1",
        "port": 18080,
        "max-http-request-header-size": "64KB",
        "netty": {"max-initial-line-length": "64KB", "idle-timeout": "60s"},
    }
    webflux = config["spring"]["cloud"]["gateway"]["server"]["webflux"]
    assert webflux["default-filters"] == ["PreserveHostHeader"]
    assert webflux["x-forwarded"] == {"enabled": False}
    assert webflux["forwarded"] == {"enabled": False}
    assert [r["id"] for r in webflux["routes"]] == ["r0_createAuction", "r1_getAuction", "r2_bid"]
    assert {r["uri"] for r in webflux["routes"]} == {"http://127.0.0.1:19000"}


def test_zuul_settings_that_keep_the_request_unchanged() -> None:
    zuul = _config("zuul", "auction")["zuul"]
    assert zuul["sensitive-headers"] == ""
    assert zuul["add-host-header"] is True
    assert zuul["add-proxy-headers"] is False
    assert zuul["decode-url"] is False
    assert zuul["remove-semicolon-content"] is False
    assert zuul["force-original-query-string-encoding"] is True
    assert zuul["FormBodyWrapperFilter"] == {"pre": {"disable": True}}
    assert [r["path"] for r in zuul["routes"].values()] == ["/auctions", "/auctions/*", "/bid/*"]


def test_zuul_shares_one_ant_route_between_paths_of_the_same_shape(tmp_path: Path) -> None:
    api = _api_from(
        tmp_path,
        "  /u/{a}:\n    get: {operationId: g, responses: {'200': {description: ok}}}\n"
        "  /u/{b}/:\n    put: {operationId: p, responses: {'200': {description: ok}}}\n"
        "  /caf%C3%A9:\n    get: {operationId: c, responses: {'200': {description: ok}}}\n",
    )
    config = yaml.safe_load(get_renderer("zuul").render(api, TARGET)["application.yml"])
    assert [r["path"] for r in config["zuul"]["routes"].values()] == [
        "/caf%??%??",
        "/u/*",
        "/u/*/",
    ]
    assert _zuul_operations(config) == [
        ("GET", "/caf\\x25[Cc]3\\x25[Aa]9"),
        ("GET", "/u/(?:[^/]+)"),
        ("PUT", "/u/(?:[^/]+)/"),
    ]


def test_empty_segment_is_refused_by_both(tmp_path: Path) -> None:
    api = _api_from(
        tmp_path, "  /a//b:\n    get: {operationId: dbl, responses: {'200': {description: ok}}}\n"
    )
    for gateway in ("spring-cloud-gateway", "zuul"):
        with pytest.raises(UnsupportedFeature) as info:
            get_renderer(gateway).render(api, TARGET)
        [problem] = info.value.problems
        assert problem.pointer == "/paths/~1a~1~1b/get"
        assert problem.message == (
            f"{gateway} cannot express this route (GET /a//b): an empty path segment ('//'), "
            "which it merges into one '/' when forwarding"
        )


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/a/./b", "a '.' path segment, which it resolves away when forwarding"),
        ("/a/%2E%2E/b", "a '..' path segment, which it resolves away when forwarding"),
        ("/a..%2Fb", "'../' or '..\\' once decoded, which it refuses as an insecure path"),
        ("/a..%5Cb", "'../' or '..\\' once decoded, which it refuses as an insecure path"),
        ("/http:%2F%2Fx", "a URL right after the first '/', which it refuses as an insecure path"),
        ("/nul%00x", "'%00' (an encoded NUL), which Tomcat refuses"),
    ],
)
def test_zuul_refuses_what_it_would_rewrite(tmp_path: Path, path: str, reason: str) -> None:
    api = _api_from(
        tmp_path,
        f"  /ok/{{id}}:\n    get: {{operationId: ok, responses: {{'200': {{description: ok}}}}}}\n"
        f"  '{path}':\n    get: {{operationId: bad, responses: {{'200': {{description: ok}}}}}}\n",
    )
    with pytest.raises(UnsupportedFeature) as info:
        get_renderer("zuul").render(api, TARGET)
    [problem] = info.value.problems
    assert problem.pointer == "/paths/" + path.replace("/", "~1") + "/get"
    assert problem.message == f"zuul cannot express this route (GET {path}): {reason}"
    # Spring Cloud Gateway forwards all of these unchanged.
    get_renderer("spring-cloud-gateway").render(api, TARGET)


def test_assert_inert_refuses_spring_expressions() -> None:
    assert assert_inert("/a$b/#{x}", "/p") == "/a$b/#{x}"
    for value in ("/a/${user.home}", "#{T(java.lang.Runtime)}"):
        with pytest.raises(RenderError) as info:
            assert_inert(value, "/paths/~1x/get")
        assert info.value.problems[0].pointer == "/paths/~1x/get"
        assert "would be evaluated by Spring" in info.value.problems[0].message


def test_run_argv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    jar = tmp_path / "zuul.jar"
    jar.write_bytes(b"PK")
    monkeypatch.setenv("GATEBENCH_ZUUL_JAR", str(jar))
    monkeypatch.setenv(JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1  -Xshare:auto")
    argv = get_renderer("zuul").run_argv("/srv/w", TARGET)
    assert argv is not None
    assert Path(argv[0]).name == "java"
    assert argv[1:] == [
        "-Xms256m",
        "-Xmx512m",
        "-XX:+ExitOnOutOfMemoryError",
        "-XX:-UsePerfData",
        "-XX:ActiveProcessorCount=1",
        "-Djava.io.tmpdir=/srv/w/tmp",
        "-XX:TieredStopAtLevel=1",
        "-Xshare:auto",
        "-jar",
        str(jar),
        "--spring.config.location=file:/srv/w/application.yml",
    ]


def test_missing_jar_says_how_to_build_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GATEBENCH_SPRING_CLOUD_GATEWAY_JAR", str(tmp_path / "none.jar"))
    renderer = get_renderer("scg")
    with pytest.raises(UnsupportedHere) as info:
        renderer.run_argv("/srv/w")
    assert str(info.value) == (
        f"spring-cloud-gateway: {tmp_path / 'none.jar'} is not built; run `make setup-all` "
        "(or scripts/setup.sh jvm-gateways; needs JDK 17 and Maven)"
    )
    assert renderer.available_here() == str(info.value)


def test_cloud_argv_runs_the_jar_from_the_image() -> None:
    argv = get_renderer("zuul").cloud_argv(RenderTarget(workdir="/etc/gatebench"))
    assert argv is not None
    assert argv[0] == "java"
    assert argv[-3:] == [
        "-jar",
        "/opt/gatebench/zuul.jar",
        "--spring.config.location=file:/etc/gatebench/application.yml",
    ]


@pytest.mark.parametrize("case", ["adversarial", "auction", "petstore", "portable", "templates"])
@pytest.mark.parametrize("gateway", ["spring-cloud-gateway", "zuul"])
def test_what_route_replay_boots_is_the_golden(gateway: str, case: str) -> None:
    """Route replay boots the golden: only the port, the backend and the workdir differ."""
    golden = (ROOT / "tests" / "golden" / gateway / case / "application.yml").read_text()
    target = RenderTarget(
        workdir="/tmp/gatebench-replay-x",
        listen_port=34567,
        backend_url="http://127.0.0.1:45678",
    )
    rendered = get_renderer(gateway).render(_api(CASES[case]), target)["application.yml"]
    expected = (
        golden.replace("  port: 8080\n", "  port: 34567\n")
        .replace("http://127.0.0.1:9000", "http://127.0.0.1:45678")
        .replace(f"/srv/gatebench/{gateway}", "/tmp/gatebench-replay-x")
    )
    assert rendered == expected
