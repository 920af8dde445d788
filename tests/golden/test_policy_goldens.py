"""Byte-exact goldens of the configurations with policies: every renderer × two policy cases
(``tests/data/policies/openapi.yaml``: JWT on every operation, a cache on the GET, a
per-subject rate limit on the bid; ``limit-cache.yaml``: a cache and a per-address rate
limit, no authentication; ``limit-all.yaml``: one per-address rate limit for every operation
(counted per operation); ``jwt-limit.yaml``: JWT and a per-header rate limit, no cache;
``cache.yaml``: a cache only; ``header-limit-vary.yaml``: a cache keyed also on a header and a
per-header limit over a minute; ``cache-vary.yaml``: that cache alone; ``api-key.yaml``: API
keys in a header and a query parameter; ``cache-path-only.yaml`` and
``cache-vary-header.yaml``: the cache key variants), written to
``tests/golden/<gateway>/<case>/`` — the
configuration, or ``errors.txt`` with the reason a gateway that lacks a feature is left out.
``make goldens`` rewrites them like the other cases.
"""

from __future__ import annotations

from functools import cache

import pytest
from _cases import ERRORS_FILE, GOLDEN, golden_target

from gatebench.core.api_keys import with_api_keys
from gatebench.core.errors import UnsupportedFeature
from gatebench.core.plan import Plan, load_plan
from gatebench.core.renderers import all_renderers, get_renderer, render_with_policies
from gatebench.core.spec import load_spec
from paths import ROOT

CASES = {
    "policies": "tests/data/policies/openapi.yaml",
    "policies-limit-cache": "tests/data/policies/limit-cache.yaml",
    "policies-limit-all": "tests/data/policies/limit-all.yaml",
    "policies-jwt-limit": "tests/data/policies/jwt-limit.yaml",
    "policies-cache": "tests/data/policies/cache.yaml",
    "policies-header-limit-vary": "tests/data/policies/header-limit-vary.yaml",
    "policies-cache-vary": "tests/data/policies/cache-vary.yaml",
    "policies-api-key": "tests/data/policies/api-key.yaml",
    "policies-cache-path-only": "tests/data/policies/cache-path-only.yaml",
    "policies-cache-vary-header": "tests/data/policies/cache-vary-header.yaml",
}
GOLDEN_KEYS = {"GATEBENCH_API_KEYS": "golden-key-0123456789abcdef, golden.key_2~ABCDEFGHIJ"}
"""Stand-in keys (not secrets): a '.' and a '~' show each configuration's escaping."""
NAMES = [r.name for r in all_renderers()]
PAIRS = [(n, c) for n in NAMES for c in CASES]


@cache
def _plan(case: str) -> tuple[object, Plan]:
    result = load_spec(ROOT / CASES[case])
    return result.api, load_plan(result)


def render_policy_case(name: str, case: str) -> dict[str, str]:
    api, plan = _plan(case)
    try:
        return render_with_policies(
            get_renderer(name),
            api,  # type: ignore[arg-type]
            golden_target(name),
            with_api_keys(plan.policies, GOLDEN_KEYS),
        )
    except UnsupportedFeature as exc:
        return {ERRORS_FILE: "".join(p.format(CASES[case]) + "\n" for p in exc.problems)}


@pytest.mark.parametrize(("gateway", "case"), PAIRS)
def test_policy_golden(
    gateway: str, case: str, golden: object, request: pytest.FixtureRequest
) -> None:
    files = render_policy_case(gateway, case)
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
    assert not leftovers, f"tests/golden/{gateway}/{case}/ holds stale files: {leftovers}"


@pytest.mark.parametrize(("gateway", "case"), PAIRS)
def test_declared_support_renders_and_the_rest_is_refused(gateway: str, case: str) -> None:
    """A gateway declaring every feature the case needs renders it; the others are refused
    with the reason, never rendered bare."""
    _, plan = _plan(case)
    from gatebench.core.policies import missing_features

    files = render_policy_case(gateway, case)
    missing = missing_features(get_renderer(gateway).supported_policies, plan.policies)
    assert (ERRORS_FILE in files) == bool(missing), (gateway, missing)


@pytest.mark.parametrize("case", sorted(CASES))
def test_krakend_policies_match_the_official_schema(case: str) -> None:
    """KrakenD's configuration with policies is checked against KrakenD's own schema
    (auth/validator, qos/ratelimit/router included), everywhere; the policy replay boots it
    where it is installed."""
    import json

    from krakend_schema import krakend_validator

    files = render_policy_case("krakend", case)
    if ERRORS_FILE in files:
        assert case != "policies-jwt-limit", files[ERRORS_FILE]
        return
    config = json.loads(files["krakend.json"])
    errors = sorted(krakend_validator().iter_errors(config), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:20])
    extras = {
        e["endpoint"] + " " + e["method"]: e.get("extra_config", {}) for e in config["endpoints"]
    }
    if case == "policies-limit-all":
        return  # test_a_limit_for_every_operation_counts_each_operation_apart
    assert case == "policies-jwt-limit", case
    assert set(extras["/bid/{auctionId} POST"]) == {"auth/validator", "qos/ratelimit/router"}
    assert extras["/bid/{auctionId} POST"]["qos/ratelimit/router"] == {
        "client_max_rate": 10,
        "client_capacity": 10,
        "every": "1s",
        "strategy": "header",
        "key": "X-Client",
    }
    assert set(extras["/auctions/{auctionId} GET"]) == {"auth/validator"}
    jwks = json.loads(files["jwks.json"])
    # The key, and the same key without its kid for tokens that carry none.
    assert [(k["kty"], k.get("kid")) for k in jwks["keys"]] == [("RSA", "gatebench"), ("RSA", None)]
    assert {k: v for k, v in jwks["keys"][0].items() if k != "kid"} == jwks["keys"][1]


def test_a_limit_for_every_operation_counts_each_operation_apart() -> None:
    """``policies-limit-all``: one per-address limit for every operation becomes a counter of
    each operation's own on every gateway that renders it (the plan's rule, docs/gateways.md):
    a limiter per endpoint, route or router, or one counter keyed by the route and the client.
    The replay (tests/integration/test_policy_replay.py) proves it on the local gateways."""
    import json

    import yaml

    operations = ("r0-createAuction", "r1-getAuction", "r2-bid")
    krakend = json.loads(render_policy_case("krakend", "policies-limit-all")["krakend.json"])
    assert [e["extra_config"]["qos/ratelimit/router"] for e in krakend["endpoints"]] == [
        {"client_max_rate": 20, "client_capacity": 20, "every": "1s", "strategy": "ip"}
    ] * 3
    kong = _kong_plugins("policies-limit-all")
    assert {name: sorted(plugins) for name, plugins in kong.items()} == {
        name: ["rate-limiting"] for name in operations
    }
    envoy = yaml.safe_load(render_policy_case("envoy", "policies-limit-all")["envoy.yaml"])
    (host,) = envoy["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0][
        "typed_config"
    ]["route_config"]["virtual_hosts"]
    assert [
        r["typed_per_filter_config"]["envoy.filters.http.local_ratelimit"]["stat_prefix"]
        for r in host["routes"]
        if "typed_per_filter_config" in r
    ] == ["rl_" + name.replace("-", "_") for name in operations]
    traefik = yaml.safe_load(render_policy_case("traefik", "policies-limit-all")["dynamic.yml"])
    assert {n: traefik["http"]["routers"][n]["middlewares"] for n in operations} == {
        n: [f"gatebench-rate-limit-{n}"] for n in operations
    }
    nginx = render_policy_case("nginx", "policies-limit-all")["nginx.conf"]
    assert (
        "    map $gatebench_route $gb_rl0_key {\n"
        '        default "";\n'
        '        r0_createAuction "r0:$binary_remote_addr";\n'
        '        r1_getAuction "r1:$binary_remote_addr";\n'
        '        r2_bid "r2:$binary_remote_addr";\n'
        "    }\n"
        "    limit_req_zone $gb_rl0_key zone=gb_rl0:10m rate=20r/s;\n"
    ) in nginx
    haproxy = render_policy_case("haproxy", "policies-limit-all")["haproxy.cfg"]
    assert (
        "    http-request track-sc0 var(txn.gatebench_route),field(1,_),concat(@,txn.gb_rl_key) "
        "table st_rl0 if gb_policy0 { var(txn.gb_rl_key) -m found }\n"
    ) in haproxy
    assert (
        "acl gb_policy0 var(txn.gatebench_route) -m str r0_createAuction r1_getAuction r2_bid"
        in (haproxy)
    )


def test_the_krakend_policy_schema_check_can_fail() -> None:
    import json

    from krakend_schema import krakend_validator

    config = json.loads(render_policy_case("krakend", "policies-jwt-limit")["krakend.json"])
    limit = config["endpoints"][-1]["extra_config"]["qos/ratelimit/router"]
    limit["strategy"] = "subject"
    assert [e.message for e in krakend_validator().iter_errors(config)][:1] == [
        "'subject' is not one of ['ip', 'header', 'param']"
    ]


# -- Kong and Tyk: cloud-only, checked against their documented schemas ----------------------

KONG_GOLDENS = sorted(p.parent.name for p in (GOLDEN / "kong").glob("*/kong.yml"))
TYK_GOLDENS = sorted(p.parent.parent.name for p in (GOLDEN / "tyk").glob("*/apps/gatebench.json"))


@pytest.mark.parametrize("case", KONG_GOLDENS)
def test_every_kong_golden_matches_the_plugin_schemas(case: str) -> None:
    from gateway_schemas import kong_errors

    assert kong_errors((GOLDEN / "kong" / case / "kong.yml").read_text()) == []


@pytest.mark.parametrize("case", TYK_GOLDENS)
def test_every_tyk_golden_matches_tyks_schemas(case: str) -> None:
    from gateway_schemas import tyk_errors

    assert tyk_errors((GOLDEN / "tyk" / case / "apps" / "gatebench.json").read_text()) == []


@pytest.mark.parametrize("case", TYK_GOLDENS)
def test_every_tyk_conf_matches_tyks_configuration_schema(case: str) -> None:
    """`tyk lint`'s own schema (Tyk ignores a misspelled setting: this catches it)."""
    from gateway_schemas import tyk_conf_errors

    assert tyk_conf_errors((GOLDEN / "tyk" / case / "tyk.conf").read_text()) == []


def test_the_tyk_conf_schema_can_fail() -> None:
    import json

    from gateway_schemas import tyk_conf_errors

    conf = json.loads((GOLDEN / "tyk" / "auction" / "tyk.conf").read_text())
    conf["http_server_options"]["skip_url_cleanin"] = True
    conf["policies"]["policy_source"] = "file"
    assert tyk_conf_errors(conf) == [
        "/http_server_options: Additional properties are not allowed ('skip_url_cleanin' was "
        "unexpected)",
        "/policies/policy_source: 'file' is not one of ['', 'service', 'rpc']",
    ]


def test_the_policy_goldens_of_kong_and_tyk_are_checked() -> None:
    """The schema tests above cover the configurations with policies, not only bare ones."""
    assert {"policies-cache", "policies-limit-cache", "policies-header-limit-vary"} <= set(
        KONG_GOLDENS
    )
    assert {"policies-cache", "policies-cache-vary"} <= set(TYK_GOLDENS)


def _kong_plugins(case: str) -> dict[str, dict[str, object]]:
    import yaml

    doc = yaml.safe_load(render_policy_case("kong", case)["kong.yml"])
    return {
        r["name"]: {p["name"]: p["config"] for p in r.get("plugins", [])}
        for r in doc["services"][0]["routes"]
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_kong_policies_match_the_plugin_schemas(case: str) -> None:
    from gateway_schemas import kong_errors

    files = render_policy_case("kong", case)
    if ERRORS_FILE in files:
        # Kong is left out only for what it cannot do: JWT with an audience, API keys from a
        # variable, a cache key without the query.
        refused = {
            "policies-api-key": "auth.api_key",
            "policies-cache-path-only": "cache.path_only",
        }
        assert refused.get(case, "auth.jwt") in files[ERRORS_FILE], files[ERRORS_FILE]
        return
    assert kong_errors(files["kong.yml"]) == []


def test_kong_applies_each_operations_policies_to_its_route() -> None:
    plugins = _kong_plugins("policies-header-limit-vary")
    assert plugins["r0-createAuction"] == {}
    assert plugins["r1-getAuction"] == {
        "proxy-cache": {
            "strategy": "memory",
            "cache_ttl": 30,
            "request_method": ["GET"],
            "response_code": [200],
            "content_type": ["*/*", "*/*; charset=utf-8", "*/*; charset=UTF-8"],
            "cache_control": False,
            "vary_headers": ["x-tenant"],
        }
    }
    assert plugins["r2-bid"] == {
        "rate-limiting": {
            "minute": 60,
            "limit_by": "header",
            "header_name": "X-Client",
            "policy": "local",
            "fault_tolerant": False,
            "hide_client_headers": False,
            "error_code": 429,
        }
    }
    limit = _kong_plugins("policies-limit-cache")["r2-bid"]["rate-limiting"]
    assert {k: limit[k] for k in ("second", "limit_by")} == {"second": 10, "limit_by": "ip"}  # type: ignore[index]


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_tyk_policies_match_tyks_schemas(case: str) -> None:
    from gateway_schemas import tyk_errors

    files = render_policy_case("tyk", case)
    if ERRORS_FILE in files:
        assert case not in ("policies-cache", "policies-cache-vary"), files[ERRORS_FILE]
        return
    assert tyk_errors(files["apps/gatebench.json"]) == []


def test_tyk_caches_exactly_the_cached_operation() -> None:
    import json

    api = json.loads(render_policy_case("tyk", "policies-cache-vary")["apps/gatebench.json"])
    assert api["cache_options"] == {
        "enable_cache": True,
        "cache_timeout": 45,
        "cache_all_safe_requests": False,
        "cache_response_codes": [200],
        "enable_upstream_cache_control": False,
        "cache_control_ttl_header": "",
        "cache_by_headers": ["x-tenant"],
    }
    paths = api["version_data"]["versions"]["Default"]["extended_paths"]
    assert paths["advance_cache_config"] == [
        {
            "disabled": False,
            "method": "GET",
            "path": "^/auctions/(?:[^/]+)$",
            "cache_key_regex": "",
            "cache_response_codes": [200],
            "timeout": 45,
        }
    ]
    # The cached path is one the allow list lets through, with the same method.
    allowed = {e["path"]: set(e["method_actions"]) for e in paths["white_list"]}
    assert "GET" in allowed["^/auctions/(?:[^/]+)$"]


def test_the_kong_schema_check_can_fail() -> None:
    """A misspelled member, a wrong type, an unknown enum value and a missing conditional member
    are each caught, located."""
    import yaml
    from gateway_schemas import kong_errors

    doc = yaml.safe_load(render_policy_case("kong", "policies-header-limit-vary")["kong.yml"])
    routes = doc["services"][0]["routes"]
    cache = routes[1]["plugins"][0]["config"]
    cache["cache_tll"] = cache.pop("cache_ttl")
    limit = routes[2]["plugins"][0]["config"]
    limit["minute"] = "60"
    assert kong_errors(doc) == [
        "/services/0/routes/1/plugins/0/config: Additional properties are not allowed "
        "('cache_tll' was unexpected)",
        "/services/0/routes/2/plugins/0/config/minute: '60' is not of type 'number'",
    ]
    limit["minute"] = 60
    del limit["header_name"]
    assert kong_errors({**doc, "services": [{**doc["services"][0], "routes": routes[2:]}]}) == [
        "/services/0/routes/0/plugins/0/config: 'header_name' is a required property"
    ]
    limit["limit_by"] = "subject"
    assert kong_errors({**doc, "services": [{**doc["services"][0], "routes": routes[2:]}]}) == [
        "/services/0/routes/0/plugins/0/config/limit_by: 'subject' is not one of "
        "['consumer', 'credential', 'ip', 'service', 'header', 'path']"
    ]


def test_the_tyk_schema_check_can_fail() -> None:
    import json

    from gateway_schemas import tyk_errors

    api = json.loads(render_policy_case("tyk", "policies-cache-vary")["apps/gatebench.json"])
    api["cache_options"]["cache_timout"] = api["cache_options"].pop("cache_timeout")
    entry = api["version_data"]["versions"]["Default"]["extended_paths"]["advance_cache_config"][0]
    entry["timeout"] = "45"
    api["use_keyles"] = True
    assert tyk_errors(api) == [
        "/: Additional properties are not allowed ('use_keyles' was unexpected)",
        "/cache_options: Additional properties are not allowed ('cache_timout' was unexpected)",
        "/version_data/versions/Default/extended_paths/advance_cache_config/0/timeout: '45' is "
        "not of type 'integer'",
    ]
