"""Kong's and Tyk's policies (cloud-only gateways): what each renders, what it refuses and why,
and the cloud render step carrying their configurations with policies to the VMs.

The configurations themselves are goldens checked against the gateways' schemas
(tests/golden/test_policy_goldens.py)."""

from __future__ import annotations

import json

import pytest
import yaml

from cloud.settings import deployment
from gatebench.core.errors import UnsupportedFeature
from gatebench.core.policies import ApiKeyAuth, Cache, JwtAuth, Policies, PolicySet, RateLimit
from gatebench.core.renderers import (
    RenderTarget,
    get_renderer,
    policy_exclusions,
    render_with_policies,
)
from gatebench.core.spec import load_spec
from paths import ROOT

TARGET = RenderTarget(workdir="/srv/gatebench/x", listen_port=8080)
PUBLIC_PEM = (ROOT / "tests" / "data" / "policies" / "keys" / "public.pem").read_text()
JWT = JwtAuth(
    issuer="https://issuer.gatebench.test",
    audience="auction",
    algorithms=("RS256",),
    keys_file="keys/public.pem",
    keys=PUBLIC_PEM,
    keys_format="pem",
)


def _api():  # type: ignore[no-untyped-def]
    api = load_spec(ROOT / "examples" / "auction" / "openapi.yaml").api
    assert api is not None
    return api


def _problems(name: str, policies: PolicySet) -> list[tuple[str, str]]:
    with pytest.raises(UnsupportedFeature) as info:
        render_with_policies(get_renderer(name), _api(), TARGET, policies)
    return [(p.pointer, p.message) for p in info.value.problems]


def test_kong_says_why_it_cannot_apply_a_jwt_policy() -> None:
    assert _problems("kong", PolicySet(Policies(auth=JWT))) == [
        (
            "/x-gatebench/policies",
            "kong cannot apply the requested policies natively: JWT validation (auth.jwt: "
            "Kong's open-source jwt plugin checks the signature, exp and the issuer but not the "
            "audience (aud) the policy requires); it is left out (--allow-missing-policies runs "
            "it without them, marked)",
        )
    ]


def test_tyk_says_why_it_cannot_apply_a_jwt_or_address_limit_policy() -> None:
    out = policy_exclusions(
        ("kong", "tyk"), PolicySet(Policies(auth=JWT, rate_limit=RateLimit(5, 1.0)))
    )
    assert out["tyk"] == (
        "tyk cannot apply the requested policies natively: JWT validation (auth.jwt: Tyk "
        "5.8's JWT middleware checks the signature and the token's times but neither the "
        "issuer (iss) nor the audience (aud) the policy requires), rate limit per client "
        "address (rate_limit.address: Tyk's open-source rate limits count per key (session) "
        "or for the whole API (global_rate_limit), never per client address)"
    )
    assert "rate_limit.address" not in out["kong"]


def test_kong_and_tyk_say_why_they_cannot_take_api_keys_from_the_environment() -> None:
    """The keys live in an environment variable of the gateway's process; neither gateway can
    read them from there, and gatebench never writes a key into a stored configuration."""
    out = policy_exclusions(
        ("kong", "tyk"), PolicySet(Policies(auth=ApiKeyAuth("X-Api-Key", None, "API_KEYS")))
    )
    assert out == {
        "kong": "kong cannot apply the requested policies natively: API key (auth.api_key: "
        "key-auth's credential key is not a vault-referenceable field (Kong takes "
        "{vault://env/...} there as a literal key), so the policy's keys, read from an "
        "environment variable when the gateway starts, could only reach Kong written into the "
        "stored configuration)",
        "tyk": "tyk cannot apply the requested policies natively: API key (auth.api_key: Tyk "
        "keeps API keys in Redis, created through its control API once it runs, while the "
        "policy's keys come from an environment variable and are never written into a stored "
        "configuration)",
    }


def test_kong_refuses_a_window_it_cannot_count() -> None:
    policies = PolicySet(operations=(("bid", Policies(rate_limit=RateLimit(5, 10.0))),))
    assert _problems("kong", policies) == [
        (
            "/x-gatebench/policies",
            "kong: operation 'bid': Kong's rate-limiting counts fixed windows of one second, "
            "minute, hour or day; got a window of 10s",
        )
    ]


@pytest.mark.parametrize(("window", "field"), [(1.0, "second"), (3600.0, "hour"), (86400.0, "day")])
def test_kong_maps_each_window_it_counts(window: float, field: str) -> None:
    policies = PolicySet(Policies(rate_limit=RateLimit(7, window, "header", "X-Client")))
    doc = yaml.safe_load(
        render_with_policies(get_renderer("kong"), _api(), TARGET, policies)["kong.yml"]
    )
    configs = [r["plugins"][0]["config"] for r in doc["services"][0]["routes"]]
    assert len(configs) == 3
    assert all(c[field] == 7 and c["header_name"] == "X-Client" for c in configs)


def test_kong_and_tyk_refuse_a_fractional_ttl() -> None:
    policies = PolicySet(operations=(("getAuction", Policies(cache=Cache(ttl=1.5))),))
    assert _problems("kong", policies) == [
        (
            "/x-gatebench/policies",
            "kong: operation 'getAuction': proxy-cache takes a TTL in whole seconds (at least "
            "1); got 1.5s",
        )
    ]
    assert _problems("tyk", policies) == [
        (
            "/x-gatebench/policies",
            "tyk: operation 'getAuction': Tyk's cache timeout is whole seconds (at least 1); "
            "got 1.5s",
        )
    ]


def test_tyk_refuses_two_header_lists_for_one_api() -> None:
    policies = PolicySet(
        operations=(
            ("createAuction", Policies(cache=Cache(ttl=5.0, vary=("path", "query")))),
            ("getAuction", Policies(cache=Cache(ttl=5.0, vary=("path", "query", "header:x-a")))),
        )
    )
    assert _problems("tyk", policies) == [
        (
            "/x-gatebench/policies",
            "tyk: Tyk varies its cache key on one list of headers per API (cache_by_headers); "
            "the policies ask for different ones: none; x-a",
        )
    ]


def test_a_cache_policy_caches_only_the_methods_it_names() -> None:
    """The default policy covers the POSTs too; only the GET route gets a cache."""
    policies = PolicySet(Policies(cache=Cache(ttl=5.0)))
    kong = yaml.safe_load(
        render_with_policies(get_renderer("kong"), _api(), TARGET, policies)["kong.yml"]
    )
    cached = [r["name"] for r in kong["services"][0]["routes"] if "plugins" in r]
    assert cached == ["r1-getAuction"]
    tyk = json.loads(
        render_with_policies(get_renderer("tyk"), _api(), TARGET, policies)["apps/gatebench.json"]
    )
    entries = tyk["version_data"]["versions"]["Default"]["extended_paths"]["advance_cache_config"]
    assert [(e["method"], e["path"]) for e in entries] == [("GET", "^/auctions/(?:[^/]+)$")]


def test_without_policies_kong_and_tyk_render_the_bare_proxy() -> None:
    for name in ("kong", "tyk"):
        renderer = get_renderer(name)
        assert render_with_policies(renderer, _api(), TARGET, PolicySet()) == renderer.render(
            _api(), TARGET
        )


CLOUD_SETTINGS = deployment()


def _rendered_run(name: str, gateways: str):  # type: ignore[no-untyped-def]
    """The cloud render step on a bundle (a zip, as uploaded) of the policy spec ``name`` and
    its key file, for ``gateways``."""
    import io
    import zipfile

    from gatebench.cloud._objects import ObjectRef
    from gatebench.cloud._render import render_run

    text = (ROOT / "tests" / "data" / "policies" / name).read_text()
    text = text.replace("  gateways: [kong, tyk]\n", f"  gateways: [{gateways}]\n")
    text = text.replace(
        "  gateways: [envoy, haproxy, nginx, caddy]\n", f"  gateways: [{gateways}]\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("openapi.yaml", text)
        bundle.writestr("keys/public.pem", PUBLIC_PEM)
    ref = ObjectRef("gb-uploads", "specs/bundle.zip", "9")
    return render_run(buffer.getvalue(), ref, CLOUD_SETTINGS, "gb-runs")


def test_the_cloud_render_step_deploys_kong_and_tyk_with_their_policies() -> None:
    """The same policy-applied files as `gatebench render --policies`, every one listed for the
    gateway VM to fetch (the startup script downloads each `files` entry into the mount)."""
    rendered = _rendered_run("cache-vary.yaml", "kong, tyk")
    assert rendered.failures == {}
    assert sorted(rendered.configs) == ["kong", "tyk"]
    kong = yaml.safe_load(rendered.configs["kong"]["kong.yml"])
    routes = {r["name"]: r for r in kong["services"][0]["routes"]}
    assert routes["r1-getAuction"]["plugins"][0]["config"]["vary_headers"] == ["x-tenant"]
    tyk = json.loads(rendered.configs["tyk"]["apps/gatebench.json"])
    assert tyk["cache_options"]["cache_by_headers"] == ["x-tenant"]
    objects = rendered.objects()
    for gateway, files in rendered.configs.items():
        entry = rendered.fleet["gateways"][gateway]
        listed = {f["path"]: f["object"] for f in entry["files"]}
        assert sorted(listed) == sorted(files)
        for path, text in files.items():
            assert objects[listed[path]] == text
    # Tyk's cache lives in Redis: the sidecar comes with it.
    assert [s["name"] for s in rendered.fleet["gateways"]["tyk"]["sidecars"]] == ["redis"]


def test_the_cloud_render_step_leaves_kong_and_tyk_out_with_the_reason() -> None:
    """A JWT plan: KrakenD is deployed with its JWKS file listed for its VM; Kong and Tyk are
    left out with their precise reasons, never deployed bare."""
    rendered = _rendered_run("jwt-limit.yaml", "kong, tyk, krakend")
    assert sorted(rendered.configs) == ["krakend"]
    assert rendered.failures["kong"].startswith(
        "kong cannot apply the requested policies natively: JWT validation (auth.jwt: Kong's "
        "open-source jwt plugin checks the signature, exp and the issuer but not the audience"
    )
    assert rendered.failures["tyk"].startswith(
        "tyk cannot apply the requested policies natively: JWT validation (auth.jwt: Tyk 5.8's"
    )
    files = {f["path"] for f in rendered.fleet["gateways"]["krakend"]["files"]}
    assert files == {"krakend.json", "jwks.json"}
    assert rendered.fleet["failures"] == rendered.failures
