"""A rate limit means the same on every gateway that applies it (docs/gateways.md, Policies):
`requests` per `window` let through per operation and key, counted by what each gateway lets
through, keyed by the connection's peer for a per-address limit, and a gateway that cannot
express a limit's values is left out at `gatebench plan` instead of failing at start or
enforcing another limit."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gatebench.core.errors import UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.policies import Policies, PolicySet, RateLimit
from gatebench.core.renderers import (
    RenderTarget,
    get_renderer,
    policy_exclusions,
    render_with_policies,
)
from gatebench.core.spec import load_spec
from paths import ROOT

TARGET = RenderTarget(workdir="/srv/gatebench/x", listen_port=8080, admin_port=8081)
LIMIT_GATEWAYS = ("envoy", "haproxy", "nginx", "traefik")
LEFT_OUT = "; it is left out (--allow-missing-policies runs it without them, marked)"


@pytest.fixture(scope="module")
def api() -> Api:
    api = load_spec(ROOT / "examples" / "auction" / "openapi.yaml").api
    assert api is not None
    return api


def _limit(requests: int, window: float, **kw: object) -> PolicySet:
    return PolicySet(Policies(rate_limit=RateLimit(requests=requests, window=window, **kw)))  # type: ignore[arg-type]


def _render(gateway: str, api: Api, policies: PolicySet) -> dict[str, str]:
    return render_with_policies(get_renderer(gateway), api, TARGET, policies)


def _hcm(files: dict[str, str]) -> dict[str, object]:
    doc = yaml.safe_load(files["envoy.yaml"])
    listener = doc["static_resources"]["listeners"][0]
    hcm: dict[str, object] = listener["filter_chains"][0]["filters"][0]["typed_config"]
    return hcm


def test_haproxy_counts_only_the_requests_it_lets_through(api: Api) -> None:
    """The count is a general-purpose counter raised after the deny rule: a refused request
    leaves it as it was (``http_req_rate`` counted every tracked request, refused ones too)."""
    lines = _render("haproxy", api, _limit(50, 1.0))["haproxy.cfg"].splitlines()
    assert "    stick-table type string len 64 size 100k expire 1000ms store gpc0_rate(1000ms)" in (
        lines
    )
    assert not [line for line in lines if "http_req_rate" in line]
    deny = [i for i, line in enumerate(lines) if "{ sc_gpc0_rate(0,st_rl0) ge 50 }" in line]
    counted = [i for i, line in enumerate(lines) if "http-request sc-inc-gpc0(0) if " in line]
    tracked = [i for i, line in enumerate(lines) if "http-request track-sc0 " in line]
    assert len(deny) == len(counted) == len(tracked) == 1, (deny, counted, tracked)
    assert tracked[0] < deny[0] < counted[0], "the count must rise after the deny rule"
    assert lines[deny[0]].startswith("    http-request return status 429 ")
    assert lines[counted[0]].endswith(" { var(txn.gb_rl_key) -m found }")


def test_nginx_with_one_request_per_window_has_no_burst(api: Api) -> None:
    """nginx refuses ``burst=0`` ("invalid burst value"): one request per window is the rate
    alone."""
    conf = _render("nginx", api, _limit(1, 1.0))["nginx.conf"]
    assert "limit_req_zone $gb_rl0_key zone=gb_rl0:10m rate=1r/s;" in conf
    assert "            limit_req zone=gb_rl0;\n" in conf
    assert "burst" not in conf
    conf = _render("nginx", api, _limit(2, 1.0))["nginx.conf"]
    assert "            limit_req zone=gb_rl0 burst=1 nodelay;\n" in conf


@pytest.mark.parametrize(
    ("requests", "window", "rate"),
    [(1, 60.0, "1r/m"), (60, 3600.0, "1r/m"), (90, 3600.0, "2r/m"), (5, 1.0, "5r/s")],
)
def test_nginx_counts_down_to_one_request_a_minute(
    api: Api, requests: int, window: float, rate: str
) -> None:
    assert not policy_exclusions(("nginx",), _limit(requests, window))
    assert f"rate={rate};" in _render("nginx", api, _limit(requests, window))["nginx.conf"]


def test_nginx_is_left_out_for_a_limit_below_one_a_minute(api: Api) -> None:
    """``limit_req`` counts whole requests per second or per minute: 2 an hour was rendered
    as 1r/m, 60 an hour."""
    slow = _limit(2, 3600.0)
    reason = (
        "nginx cannot apply the requested policies natively: a rate limit of 2 per 3600s "
        "(limit_req counts whole requests per second or per minute, at least 1r/m; this limit "
        "is 0.0333 per minute)"
    )
    assert policy_exclusions(LIMIT_GATEWAYS, slow) == {"nginx": reason}
    assert policy_exclusions(("nginx",), _limit(29, 1800.0))  # 0.97 a minute
    with pytest.raises(UnsupportedFeature) as info:
        _render("nginx", api, slow)
    assert [(p.pointer, p.message) for p in info.value.problems] == [
        ("/x-gatebench/policies", reason + LEFT_OUT)
    ]
    nginx = get_renderer("nginx")
    bare = nginx.render(api, TARGET)
    assert render_with_policies(nginx, api, TARGET, slow, allow_missing=True) == bare


def test_a_limit_nginx_cannot_count_on_one_operation_names_it_once(api: Api) -> None:
    policies = PolicySet(
        Policies(rate_limit=RateLimit(requests=1, window=7200.0)),
        operations=(
            ("bid", Policies(rate_limit=RateLimit(requests=1, window=7200.0))),
            ("getAuction", Policies(rate_limit=RateLimit(requests=10, window=1.0))),
        ),
    )
    assert get_renderer("nginx").policy_limits(policies) == (
        "a rate limit of 1 per 7200s (limit_req counts whole requests per second or per "
        "minute, at least 1r/m; this limit is 0.00833 per minute)",
    )


def test_envoy_is_left_out_for_a_window_under_50ms(api: Api) -> None:
    """Envoy refuses a token bucket refilled more often than every 50 ms ("local rate limit
    token bucket fill timer must be >= 50ms"); the others count such a window."""
    short = _limit(3, 0.01)
    assert policy_exclusions(LIMIT_GATEWAYS, short) == {
        "envoy": "envoy cannot apply the requested policies natively: a rate limit of 3 per "
        "0.01s (local_ratelimit refills its token bucket at most every 50ms: fill_interval "
        ">= 50ms)"
    }
    with pytest.raises(UnsupportedFeature):
        _render("envoy", api, short)
    assert not policy_exclusions(("envoy",), _limit(3, 0.05))
    assert "fill_interval: 0.05s" in _render("envoy", api, _limit(3, 0.05))["envoy.yaml"]


def test_the_plan_check_leaves_out_what_would_fail_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One request a second everywhere (nginx without ``burst``), three per 10 ms on one
    operation (too short for Envoy): nginx and HAProxy run, Envoy is left out at plan."""
    from gatebench.cli import main

    spec = tmp_path / "api.yaml"
    spec.write_text(
        """openapi: 3.0.3
info: {title: One, version: "1"}
paths:
  /a: {get: {operationId: a, responses: {"200": {description: ok}}}}
  /b: {get: {operationId: b, responses: {"200": {description: ok}}}}
x-gatebench:
  gateways: [nginx, envoy, haproxy]
  repetitions: 1
  warmup: false
  backend: {mock: true}
  policies:
    rate_limit: {requests: 1, window: 1s}
    operations:
      b: {rate_limit: {requests: 3, window: 10ms}}
  workloads:
    - {name: a, operation: a, injection: {constant_rate: {rate: 4, duration: 2s}}}
""",
        encoding="utf-8",
    )
    assert main(["plan", str(spec)]) == 0
    out = capsys.readouterr().out
    left_out = [line for line in out.splitlines() if line.startswith("  left out:")]
    assert left_out == [
        "  left out:    envoy cannot apply the requested policies natively: a rate limit of 3 "
        "per 0.01s (local_ratelimit refills its token bucket at most every 50ms: fill_interval "
        ">= 50ms)"
    ]


def test_envoy_counts_a_client_address_by_the_connections_peer(api: Api) -> None:
    """Without ``use_remote_address`` Envoy takes the address from X-Forwarded-For, which the
    client writes; with it, the header still reaches the backend as sent (no address added),
    and so do the client's request id and Envoy's headers otherwise."""
    hcm = _hcm(_render("envoy", api, _limit(50, 1.0)))
    assert hcm["use_remote_address"] is True
    assert hcm["skip_xff_append"] is True
    assert hcm["preserve_external_request_id"] is True
    route_config = hcm["route_config"]
    assert isinstance(route_config, dict)
    assert route_config["request_headers_to_remove"] == ["x-envoy-external-address"]
    by_header = _hcm(_render("envoy", api, _limit(50, 1.0, key="header", header="X-Client")))
    assert "use_remote_address" not in by_header
    assert "use_remote_address" not in _hcm(
        {"envoy.yaml": get_renderer("envoy").render(api, TARGET)["envoy.yaml"]}
    )


def _local_ratelimits(files: dict[str, str]) -> list[dict[str, object]]:
    hosts = _hcm(files)["route_config"]["virtual_hosts"]  # type: ignore[index]
    return [
        route["typed_per_filter_config"]["envoy.filters.http.local_ratelimit"]
        for host in hosts
        for route in host["routes"]
        if "envoy.filters.http.local_ratelimit" in route.get("typed_per_filter_config", {})
    ]


def test_a_request_without_the_header_is_not_counted_on_envoy(api: Api) -> None:
    """Without the header no descriptor is built and Envoy takes the default bucket: it held
    the limit, so every request without the header shared one count (281 of 300 refused,
    where nginx and HAProxy refused none)."""
    configs = _local_ratelimits(_render("envoy", api, _limit(5, 1.0, key="header", header="X-C")))
    assert configs
    for config in configs:
        assert config["token_bucket"] == {
            "max_tokens": 4_294_967_295,
            "tokens_per_fill": 4_294_967_295,
            "fill_interval": "1s",
        }
        assert config["descriptors"] == [
            {
                "entries": [{"key": "header", "value": ""}],
                "token_bucket": {"max_tokens": 5, "tokens_per_fill": 5, "fill_interval": "1s"},
            }
        ]
    for config in _local_ratelimits(_render("envoy", api, _limit(5, 1.0))):
        assert config["token_bucket"] == {
            "max_tokens": 5,
            "tokens_per_fill": 5,
            "fill_interval": "1s",
        }


def test_a_request_without_the_header_is_not_counted_on_traefik(api: Api) -> None:
    """Traefik counts the requests without the header in one bucket (an empty value): the
    limit goes on a router that takes only requests carrying the header, one priority step
    above the route's own router, which takes the rest."""
    bare = yaml.safe_load(get_renderer("traefik").render(api, TARGET)["dynamic.yml"])["http"]
    limited = _limit(5, 1.0, key="header", header="X-C")
    doc = yaml.safe_load(_render("traefik", api, limited)["dynamic.yml"])["http"]
    for name, router in bare["routers"].items():
        if "priority" not in router:
            continue
        assert doc["routers"][name] == {**router, "priority": 2 * router["priority"]}
        assert doc["routers"][f"{name}-keyed"] == {
            **router,
            "rule": router["rule"] + " && HeaderRegexp(`X-C`, `.+`)",
            "priority": 2 * router["priority"] + 1,
            "middlewares": [f"gatebench-rate-limit-{name}"],
        }
        assert doc["middlewares"][f"gatebench-rate-limit-{name}"] == {
            "rateLimit": {
                "average": 5,
                "period": "1s",
                "burst": 5,
                "sourceCriterion": {"requestHeaderName": "X-C"},
            }
        }
    by_address = yaml.safe_load(_render("traefik", api, _limit(5, 1.0))["dynamic.yml"])["http"]
    assert not any(name.endswith("-keyed") for name in by_address["routers"])
