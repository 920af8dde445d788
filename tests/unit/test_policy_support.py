"""Which gateway applies which policy: the renderers' declarations, the support matrix in
docs/gateways.md built from them, the exclusion of a gateway that lacks a feature (with its
reason, in the plan check), and --allow-missing-policies."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from cloud.settings import deployment
from gatebench.core.errors import UnsupportedFeature
from gatebench.core.policies import FEATURES, Cache, JwtAuth, Policies, PolicySet, RateLimit
from gatebench.core.renderers import (
    RenderTarget,
    all_renderers,
    get_renderer,
    policy_exclusions,
    render_with_policies,
    support_matrix,
)
from gatebench.core.spec import load_spec
from paths import ROOT

DOC = ROOT / "docs" / "gateways.md"
POLICY_SPEC = ROOT / "tests" / "data" / "policies" / "openapi.yaml"
TARGET = RenderTarget(workdir="/srv/gatebench/x", listen_port=8080, admin_port=8081)
LIMIT_AND_CACHE = PolicySet(
    Policies(rate_limit=RateLimit(requests=5, window=1.0), cache=Cache(ttl=10.0))
)


def test_every_declaration_names_a_known_feature() -> None:
    for renderer in all_renderers():
        unknown = set(renderer.supported_policies) - set(FEATURES)
        assert not unknown, f"{renderer.name} declares unknown policy features {sorted(unknown)}"


def test_the_doc_matrix_is_the_declarations() -> None:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(
        r"<!-- support-matrix:start -->\n(.*?)<!-- support-matrix:end -->", text, re.S
    )
    assert found, "docs/gateways.md has no support-matrix markers"
    assert found.group(1) == support_matrix(), (
        "docs/gateways.md's policy matrix differs from the renderers' supported_policies; "
        "paste gatebench.core.renderers.support_matrix() between the markers"
    )


def test_the_matrix_reads_each_declaration() -> None:
    rows = {
        line.split("`")[1]: [c.strip() for c in line.strip("|").split("|")[1:]]
        for line in support_matrix().splitlines()[2:]
    }
    names = [r.name for r in all_renderers()]
    for feature in FEATURES:
        for name, cell in zip(names, rows[feature], strict=True):
            expected = "yes" if feature in get_renderer(name).supported_policies else "—"
            assert cell == expected, (feature, name)


def test_a_gateway_without_a_feature_is_refused_with_the_reason() -> None:
    api = load_spec(ROOT / "examples" / "auction" / "openapi.yaml").api
    assert api is not None
    with pytest.raises(UnsupportedFeature) as info:
        render_with_policies(get_renderer("caddy"), api, TARGET, LIMIT_AND_CACHE)
    assert [(p.pointer, p.message) for p in info.value.problems] == [
        (
            "/x-gatebench/policies",
            "caddy cannot apply the requested policies natively: rate limit per client address "
            "(rate_limit.address), response cache (key: path and query) (cache); it is left "
            "out (--allow-missing-policies runs it without them, marked)",
        )
    ]
    bare = get_renderer("caddy").render(api, TARGET)
    assert (
        render_with_policies(
            get_renderer("caddy"), api, TARGET, LIMIT_AND_CACHE, allow_missing=True
        )
        == bare
    )
    assert render_with_policies(get_renderer("caddy"), api, TARGET, PolicySet()) == bare


def test_exclusions_name_only_the_gateways_that_lack_a_feature() -> None:
    out = policy_exclusions(("envoy", "haproxy", "nginx", "caddy"), LIMIT_AND_CACHE)
    assert sorted(out) == ["caddy"]
    assert out["caddy"].startswith("caddy cannot apply the requested policies natively: ")


def test_a_policy_does_not_change_the_bare_render() -> None:
    """Goldens stay put: with no policies, render_with_policies is render."""
    api = load_spec(ROOT / "examples" / "auction" / "openapi.yaml").api
    assert api is not None
    for name in ("envoy", "haproxy"):
        renderer = get_renderer(name)
        assert render_with_policies(renderer, api, TARGET, PolicySet()) == renderer.render(
            api, TARGET
        )


def test_envoy_filters_come_in_order_and_routes_name_their_policies() -> None:
    api = load_spec(ROOT / "examples" / "auction" / "openapi.yaml").api
    assert api is not None
    policies = PolicySet(
        operations=(
            ("getAuction", Policies(cache=Cache(ttl=10.0))),
            ("bid", Policies(rate_limit=RateLimit(requests=5, window=2.0))),
        ),
    )
    doc = yaml.safe_load(
        render_with_policies(get_renderer("envoy"), api, TARGET, policies)["envoy.yaml"]
    )
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    assert [f["name"] for f in hcm["http_filters"]] == [
        "envoy.filters.http.header_mutation",
        "envoy.filters.http.local_ratelimit",
        "envoy.filters.http.cache",
        "envoy.filters.http.router",
    ]
    routes = {r["name"]: r for r in hcm["route_config"]["virtual_hosts"][0]["routes"]}
    bid = routes["r2_bid"]["typed_per_filter_config"]["envoy.filters.http.local_ratelimit"]
    assert bid["token_bucket"] == {"max_tokens": 5, "tokens_per_fill": 5, "fill_interval": "2s"}
    assert bid["descriptors"] == [
        {"entries": [{"key": "remote_address", "value": ""}], "token_bucket": bid["token_bucket"]}
    ]
    assert bid["always_consume_default_token_bucket"] is False
    assert routes["r2_bid"]["route"]["rate_limits"] == [{"actions": [{"remote_address": {}}]}]
    assert (
        "envoy.filters.http.local_ratelimit"
        not in routes["r1_getAuction"]["typed_per_filter_config"]
    )


def test_the_plan_check_names_the_left_out_gateways(capsys: pytest.CaptureFixture[str]) -> None:
    from gatebench.cli import main

    assert main(["plan", str(POLICY_SPEC)]) == 0
    out = capsys.readouterr().out
    assert "  policies:    JWT (RS256, iss https://issuer.gatebench.test, aud auction)\n" in out
    assert (
        "    bid: JWT (RS256, iss https://issuer.gatebench.test, aud auction), rate limit "
        "100/1s per subject\n" in out
    )
    left_out = [line for line in out.splitlines() if line.startswith("  left out:")]
    assert [line.split()[2] for line in left_out] == ["nginx", "caddy"]
    # the targets and the phases are the ones that run: they named all four gateways, 5 phases
    assert out.splitlines()[1:3] == [
        "  targets:     envoy, haproxy + baseline (no gateway); order shuffled (random seed)",
        "               nginx and caddy left out: see below",
    ]
    assert "  measured phases: 1 workload × 3 targets × 1 repetition = 3\n" in out
    assert left_out[0] == (
        "  left out:    nginx cannot apply the requested policies natively: JWT validation "
        "(auth.jwt), rate limit per token subject (rate_limit.subject)"
    )


def test_a_gateway_left_out_twice_over_is_named_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Caddy can neither validate a JWT nor turn TLS session resumption off: the run leaves it
    out for its deployment (``core.plan.left_out``), and the plan says so once, as the run
    records it, not once per category."""
    from gatebench.cli import main

    shutil.copytree(POLICY_SPEC.parent, tmp_path / "policies")
    spec = tmp_path / "policies" / "openapi.yaml"
    doc = yaml.safe_load(spec.read_text())
    doc["x-gatebench"]["tls"] = {"resumption": False}
    spec.write_text(yaml.safe_dump(doc))
    assert main(["plan", str(spec)]) == 0
    left_out = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("  left out:")
    ]
    assert [line.split()[2] for line in left_out] == ["caddy", "nginx"]
    assert "TLS session resumption off" in left_out[0]
    assert "JWT validation" in left_out[1]


def test_the_policy_spec_reads_its_key_from_the_bundle() -> None:
    from gatebench.core.plan import load_plan

    result = load_spec(POLICY_SPEC)
    plan = load_plan(result)
    auth = plan.policies.default.auth
    assert isinstance(auth, JwtAuth)
    assert auth.keys == (POLICY_SPEC.parent / "keys" / "public.pem").read_text()
    assert Path(POLICY_SPEC.parent / auth.keys_file).is_file()


CLOUD_SETTINGS = deployment()


def test_the_cloud_path_applies_the_policies_or_leaves_the_gateway_out() -> None:
    from gatebench.cloud._objects import ObjectRef
    from gatebench.cloud._render import render_run

    data = (ROOT / "tests" / "data" / "policies" / "limit-cache.yaml").read_bytes()
    ref = ObjectRef("gb-uploads", "specs/limit-cache.yaml", "9")
    rendered = render_run(data, ref, CLOUD_SETTINGS, "gb-runs")
    assert rendered.failures == {
        "caddy": "caddy cannot apply the requested policies natively: rate limit per client "
        "address (rate_limit.address), response cache (key: path and query) (cache); it is "
        "left out (--allow-missing-policies runs it without them, marked)"
    }
    assert sorted(rendered.configs) == ["envoy", "haproxy", "nginx"]
    assert "limit_req zone=gb_rl0 burst=9 nodelay;" in rendered.configs["nginx"]["nginx.conf"]
    assert "envoy.filters.http.cache" in rendered.configs["envoy"]["envoy.yaml"]


def test_the_cloud_path_refuses_signing_tokens() -> None:
    import io
    import zipfile

    from gatebench.cloud._objects import ObjectRef, RequestError
    from gatebench.cloud._render import render_run

    text = (ROOT / "tests" / "data" / "policies" / "limit-cache.yaml").read_text()
    text = text.replace("    bearer: {env: AUCTION_TOKEN}\n", "    jwt: {private_key_env: KEY}\n")
    text = text.replace(
        "  policies:\n",
        "  policies:\n    auth:\n      jwt: {issuer: i, audience: a, keys: public.pem}\n",
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("openapi.yaml", text)
        bundle.writestr("public.pem", (POLICY_SPEC.parent / "keys" / "public.pem").read_text())
    ref = ObjectRef("gb-uploads", "specs/x.zip", "9")
    with pytest.raises(RequestError) as info:
        render_run(buffer.getvalue(), ref, CLOUD_SETTINGS, "gb-runs")
    assert [(p.pointer, p.message) for p in info.value.problems] == [
        (  # a deployment without jwt_signer (tests/unit/test_cloud_signing.py: with one)
            "/x-gatebench/auth/jwt",
            "this deployment has no signing key for auth.jwt: set the Terraform variable "
            "jwt_signer to a Secret Manager secret holding the PEM private key (docs/cloud.md, "
            '"Signed tokens"), or give auth: {bearer: {env: NAME}} with a token signed beforehand',
        )
    ]


def test_gatebench_render_with_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from gatebench.cli import main

    spec = str(ROOT / "tests" / "data" / "policies" / "limit-cache.yaml")
    code = main(["render", spec, "-g", "nginx,caddy", "--out", str(tmp_path), "--policies"])
    assert code == 1
    assert (
        "limit_req zone=gb_rl0 burst=9 nodelay;" in (tmp_path / "nginx" / "nginx.conf").read_text()
    )
    assert not (tmp_path / "caddy").exists()
    err = capsys.readouterr().err
    assert (
        "limit-cache.yaml: error: /x-gatebench/policies: caddy cannot apply the requested "
        "policies natively: rate limit per client address (rate_limit.address)"
    ) in err
    assert main(["render", spec, "-g", "nginx", "--out", str(tmp_path / "bare")]) == 0
    assert "limit_req" not in (tmp_path / "bare" / "nginx" / "nginx.conf").read_text()
