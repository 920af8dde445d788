"""The gateway as deployed, for every renderer: byte-exact goldens of TLS termination and of an
upstream pool (``tests/golden/<gateway>/deploy-*/``: the files, or ``errors.txt`` with the
located reason a gateway cannot render it), and the contract each renderer keeps
(``renderers/_deployment.py``): what it declares in ``supported_deployment`` shows in its
files; anything else is refused with a located reason from ``deployment_gaps``. The support
matrix in docs/gateways.md is the renderers' own declarations.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from _cases import ERRORS_FILE, GOLDEN, case_api, golden_target

from gatebench.core.errors import UnsupportedFeature
from gatebench.core.renderers import RenderTarget, all_renderers, deployment_matrix, get_renderer
from gatebench.core.renderers._deployment import FEATURE_POINTERS, FEATURES
from gatebench.core.tls import GatewayTls
from paths import ROOT

TLS_FOLDER = "/srv/gatebench/tls"
REPLICAS = ("http://127.0.0.1:9000", "http://127.0.0.1:9001", "http://127.0.0.1:9002")
CASES: dict[str, dict[str, Any]] = {
    "deploy-tls-h2": {"tls": GatewayTls(TLS_FOLDER, http2=True)},
    "deploy-tls-no-resumption": {
        "tls": GatewayTls(TLS_FOLDER, key_type="rsa-2048", resumption=False)
    },
    "deploy-replicas": {"replicas": REPLICAS},
    "deploy-replicas-least-conn": {"replicas": REPLICAS, "balance": "least_conn"},
}
NAMES = [r.name for r in all_renderers()]
PAIRS = [(n, c) for n in NAMES for c in CASES]
FEATURE_TARGETS: dict[str, dict[str, Any]] = {
    "tls": {"tls": GatewayTls(TLS_FOLDER)},
    "tls.http2": {"tls": GatewayTls(TLS_FOLDER, http2=True)},
    "tls.no_resumption": {"tls": GatewayTls(TLS_FOLDER, resumption=False)},
    "pool.round_robin": {"replicas": REPLICAS},
    "pool.least_conn": {"replicas": REPLICAS, "balance": "least_conn"},
}


def _target(gateway: str, **changes: Any) -> RenderTarget:
    return dataclasses.replace(golden_target(gateway), **changes)


def render_deployment_case(gateway: str, case: str) -> dict[str, str]:
    try:
        return get_renderer(gateway).render(case_api("auction"), _target(gateway, **CASES[case]))
    except UnsupportedFeature as exc:
        return {
            ERRORS_FILE: "".join(
                p.format("examples/auction/openapi.yaml") + "\n" for p in exc.problems
            )
        }


@pytest.mark.parametrize(("gateway", "case"), PAIRS)
def test_deployment_golden(
    gateway: str, case: str, golden: object, request: pytest.FixtureRequest
) -> None:
    files = render_deployment_case(gateway, case)
    folder = GOLDEN / gateway / case
    if request.config.getoption("--update-goldens") and folder.is_dir():
        for stale in sorted(folder.rglob("*")):
            rel = stale.relative_to(folder).as_posix()
            if stale.is_file() and rel not in files and not rel.endswith(".actual"):
                stale.unlink()
    for name, text in sorted(files.items()):
        golden.check(folder / name, text)  # type: ignore[attr-defined]
    produced = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    leftovers = sorted(p for p in produced if p not in files and not p.endswith(".actual"))
    assert not leftovers, f"stale golden files in {folder}: {leftovers}; run `make goldens`"


def _text(files: dict[str, str]) -> str:
    return "\n".join(files[name] for name in sorted(files))


def _evidence(gateway: str, feature: str, files: dict[str, str], bare: dict[str, str]) -> bool:
    """Whether the files show the feature (and differ from the bare configuration, and for
    HTTP/2 or resumption off, from plain TLS)."""
    text = _text(files)
    if text == _text(bare):
        return False
    if feature.startswith("tls"):
        plain_tls = _text(
            get_renderer(gateway).render(
                case_api("auction"), _target(gateway, tls=GatewayTls(TLS_FOLDER))
            )
        )
        if feature == "tls.http2" and get_renderer(gateway).http2_always:
            return TLS_FOLDER in text and text == plain_tls
        return TLS_FOLDER in text and (feature == "tls" or text != plain_tls)
    return all(url.rsplit(":", 1)[1] in text for url in REPLICAS)


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("gateway", NAMES)
def test_a_declared_feature_shows_and_a_missing_one_is_refused_with_its_reason(
    gateway: str, feature: str
) -> None:
    renderer = get_renderer(gateway)
    api = case_api("auction")
    bare = renderer.render(api, golden_target(gateway))
    target = _target(gateway, **FEATURE_TARGETS[feature])
    if feature in renderer.supported_deployment:
        files = renderer.render(api, target)
        assert _evidence(gateway, feature, files, bare), (
            f"{gateway} declares {feature} but its files do not show it"
        )
        if feature == "pool.least_conn":
            round_robin = renderer.render(api, _target(gateway, replicas=REPLICAS))
            assert _text(files) != _text(round_robin)
        return
    with pytest.raises(UnsupportedFeature) as info:
        renderer.render(api, target)
    (problem,) = info.value.problems
    needs = target.deployment_needs()
    first = next(f for f in FEATURES if f in needs - renderer.supported_deployment)
    assert problem.pointer == FEATURE_POINTERS[first]
    reason = renderer.deployment_gaps.get(first)
    assert reason, f"{gateway} lacks {first}: say why in deployment_gaps"
    assert reason in problem.message
    assert problem.message.startswith(f"{gateway} cannot render ")


def _lines(files: dict[str, str]) -> set[str]:
    return {line.strip() for text in files.values() for line in text.splitlines()}


@pytest.mark.parametrize(("gateway", "case"), PAIRS)
def test_the_live_files_keep_the_deployment(gateway: str, case: str) -> None:
    """A gateway changed while it runs stays as deployed: ``render_live`` (the files its live
    mechanism takes, docs/scale.md) carries every line the deployment adds to ``render``
    (indentation aside: Envoy moves its listener and cluster into watched files), and refuses
    what ``render`` refuses, with the same located reason."""
    renderer = get_renderer(gateway)
    api = case_api("auction")
    target = _target(gateway, **CASES[case])
    try:
        files = renderer.render(api, target)
    except UnsupportedFeature as exc:
        with pytest.raises(UnsupportedFeature) as info:
            renderer.render_live(api, target)
        assert info.value.problems == exc.problems
        return
    added = _lines(files) - _lines(renderer.render(api, golden_target(gateway)))
    assert added, f"{gateway} {case}: the deployment adds nothing to the files"
    missing = added - _lines(renderer.render_live(api, target))
    assert not missing, f"{gateway}'s live files drop part of {case}: {sorted(missing)[:5]}"


@pytest.mark.parametrize("gateway", ["spring-cloud-gateway", "zuul"])
def test_the_jvm_gateways_keep_their_refresh_endpoint_plain_behind_tls(gateway: str) -> None:
    """Spring Boot gives the management port the API's TLS unless told otherwise; gatebench's
    refresh request on loopback is plain HTTP."""
    import yaml

    target = _target(gateway, tls=GatewayTls(TLS_FOLDER))
    live = yaml.safe_load(get_renderer(gateway).render_live(case_api("auction"), target)["application.yml"])
    assert live["server"]["ssl"]["bundle" if gateway == "spring-cloud-gateway" else "key-store"]
    assert live["management"]["server"] == {
        "address": "127.0.0.1",
        "port": target.admin_port,
        "ssl": {"enabled": False},
    }


def test_spring_cloud_gateway_rereads_a_pool_a_change_may_move() -> None:
    """Spring Cloud LoadBalancer's health-check supplier keeps the instances it read at start
    unless told to read them again: the live files make it, every health-check interval."""
    import yaml

    renderer = get_renderer("spring-cloud-gateway")
    target = _target("spring-cloud-gateway", replicas=REPLICAS)
    static = yaml.safe_load(renderer.render(case_api("auction"), target)["application.yml"])
    live = yaml.safe_load(renderer.render_live(case_api("auction"), target)["application.yml"])
    check = live["spring"]["cloud"]["loadbalancer"]["health-check"]
    assert check["refetch-instances"] is True
    assert check["refetch-instances-interval"] == check["interval"] == "1s"
    assert "refetch-instances" not in static["spring"]["cloud"]["loadbalancer"]["health-check"]


def test_one_replica_and_no_tls_keep_the_bare_configuration() -> None:
    for renderer in all_renderers():
        api = case_api("auction")
        bare = renderer.render(api, golden_target(renderer.name))
        assert renderer.render(api, _target(renderer.name, balance="least_conn")) == bare


def test_the_support_matrix_in_the_docs_is_the_renderers_own() -> None:
    docs = (ROOT / "docs" / "gateways.md").read_text(encoding="utf-8")
    assert deployment_matrix() in docs, (
        "docs/gateways.md's deployment matrix is stale; paste "
        "gatebench.core.renderers.deployment_matrix() into it"
    )


# -- the gateways that do not run here: their own schemas and structures ----------------------

KONG_HEALTHCHECK_FIELDS = {
    "active": {
        "type",
        "timeout",
        "concurrency",
        "http_path",
        "https_sni",
        "https_verify_certificate",
        "healthy",
        "unhealthy",
    },
    "passive": {"type", "healthy", "unhealthy"},
    "healthy": {"interval", "http_statuses", "successes"},
    "unhealthy": {"interval", "http_statuses", "tcp_failures", "timeouts", "http_failures"},
}
"""The record fields of an upstream's ``healthchecks``, transcribed from Kong's
``kong/db/schema/entities/upstreams.lua`` (passive checks have no ``interval``)."""
KONG_ALGORITHMS = {"round-robin", "least-connections", "consistent-hashing", "latency"}


@pytest.mark.parametrize("case", ["deploy-replicas", "deploy-replicas-least-conn"])
def test_kong_upstream_structure(case: str) -> None:
    import yaml

    from gateway_schemas import kong_errors

    files = render_deployment_case("kong", case)
    config = yaml.safe_load(files["kong.yml"])
    assert kong_errors(config) == []
    broken = yaml.safe_load(files["kong.yml"])
    broken["upstreams"][0]["healthchecks"]["passive"]["unhealthy"]["interval"] = 1
    broken["upstreams"][0]["algorithm"] = "least-conn"
    assert len(kong_errors(broken)) == 2
    (service,) = config["services"]
    (upstream,) = config["upstreams"]
    assert service["url"] == f"http://{upstream['name']}"
    assert upstream["algorithm"] in KONG_ALGORITHMS
    assert [t["target"] for t in upstream["targets"]] == [u.split("//")[1] for u in REPLICAS]
    checks = upstream["healthchecks"]
    for kind in ("active", "passive"):
        assert set(checks[kind]) <= KONG_HEALTHCHECK_FIELDS[kind]
        for state in ("healthy", "unhealthy"):
            allowed = KONG_HEALTHCHECK_FIELDS[state] - (
                {"interval"} if kind == "passive" else set()
            )
            assert set(checks[kind].get(state, {})) <= allowed


def test_kong_tls_settings() -> None:
    conf = render_deployment_case("kong", "deploy-tls-h2")["kong.conf"]
    assert "proxy_listen = 127.0.0.1:8080 ssl http2 reuseport backlog=4096\n" in conf
    assert f"ssl_cert = {TLS_FOLDER}/server.crt\n" in conf
    assert "ssl_cipher_suite = custom\n" in conf


def test_krakend_deployment_matches_the_official_schema() -> None:
    import json

    from krakend_schema import krakend_validator

    config = json.loads(render_deployment_case("krakend", "deploy-tls-h2")["krakend.json"])
    errors = sorted(krakend_validator().iter_errors(config), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:20])
    assert config["tls"]["keys"] == [
        {"public_key": f"{TLS_FOLDER}/server.crt", "private_key": f"{TLS_FOLDER}/server.key"}
    ]


def test_tyk_deployment_structure() -> None:
    import json

    from gateway_schemas import tyk_errors

    files = render_deployment_case("tyk", "deploy-replicas")
    api = json.loads(files["apps/gatebench.json"])
    assert tyk_errors(api) == []
    assert api["proxy"]["enable_load_balancing"] is True
    assert api["proxy"]["target_list"] == list(REPLICAS)
    assert api["proxy"]["check_host_against_uptime_tests"] is True
    assert [c["url"] for c in api["uptime_tests"]["check_list"]] == [
        u + "/__gatebench__/health" for u in REPLICAS
    ]
    options = json.loads(render_deployment_case("tyk", "deploy-tls-h2")["tyk.conf"])[
        "http_server_options"
    ]
    assert options["use_ssl"] is True
    assert options["enable_http2"] is True
    assert options["certificates"][0]["cert_file"] == f"{TLS_FOLDER}/server.crt"
