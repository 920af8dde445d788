"""x-gatebench.core.policies: JWT / API key / rate limit / cache, defaults from securitySchemes,
per-operation overrides, and the located errors for what is missing."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from gatebench.core.errors import PlanError
from gatebench.core.ir import Api, SecurityScheme
from gatebench.core.plan import build_plan
from gatebench.core.policies import (
    ApiKeyAuth,
    Cache,
    JwtAuth,
    Policies,
    PolicySet,
    RateLimit,
    missing_features,
    missing_reason,
    required_features,
)
from gatebench.core.spec import load_spec
from paths import EXAMPLES


def _public_pem(key: Any) -> str:
    data: bytes = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return data.decode()


RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
FILES = {
    "keys/rsa.pem": _public_pem(RSA_KEY),
    "keys/ec.pem": _public_pem(EC_KEY),
    "keys/private.pem": RSA_KEY.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode(),
    "keys/jwks.json": '{"keys": [{"kty": "EC", "crv": "P-256", "x": "a", "y": "b"}]}',
}


def read_file(name: str) -> str:
    if name not in FILES:
        raise ValueError("no such file in the bundle")
    return FILES[name]


@pytest.fixture(scope="module")
def auction() -> Api:
    result = load_spec(EXAMPLES / "auction" / "openapi.yaml")
    assert result.api is not None
    return result.api


def with_schemes(api: Api, *schemes: SecurityScheme) -> Api:
    return dataclasses.replace(api, security_schemes=schemes)


def section(policies: Any) -> dict[str, Any]:
    return {
        "gateways": ["envoy"],
        "workloads": [{"name": "get", "operation": "getAuction", "injection": {"sequential": 10}}],
        "auth": {"bearer": {"env": "TOKEN"}},
        "policies": policies,
    }


def policies_of(api: Api, policies: Any) -> PolicySet:
    return build_plan(section(policies), api, read_file=read_file).policies


def errors_of(api: Api, policies: Any) -> list[tuple[str, str]]:
    with pytest.raises(PlanError) as info:
        build_plan(section(policies), api, read_file=read_file)
    return [(p.pointer, p.message) for p in info.value.errors]


JWT = {"issuer": "https://issuer.test", "audience": "auction", "keys": "keys/rsa.pem"}


def test_no_policies_is_an_empty_set(auction: Api) -> None:
    plan = build_plan({k: v for k, v in section(None).items() if k != "policies"}, auction)
    assert plan.policies == PolicySet()
    assert plan.policies.empty
    assert required_features(plan.policies) == ()


def test_jwt_rate_limit_and_cache_for_all_operations(auction: Api) -> None:
    ps = policies_of(
        auction,
        {
            "auth": {"jwt": JWT},
            "rate_limit": {"requests": 100, "window": "1s", "key": "subject"},
            "cache": {"ttl": "30s"},
        },
    )
    assert ps.default.auth == JwtAuth(
        issuer="https://issuer.test",
        audience="auction",
        algorithms=("RS256",),
        keys_file="keys/rsa.pem",
        keys=FILES["keys/rsa.pem"],
        keys_format="pem",
    )
    assert ps.default.rate_limit == RateLimit(requests=100, window=1.0, key="subject")
    assert ps.default.cache == Cache(ttl=30.0, methods=("GET",), vary=("path", "query"))
    assert ps.for_operation("bid") == ps.default
    assert required_features(ps) == ("auth.jwt", "rate_limit.subject", "cache")


def test_algorithm_defaults_from_the_key_type(auction: Api) -> None:
    ec_auth = policies_of(auction, {"auth": {"jwt": {**JWT, "keys": "keys/ec.pem"}}}).default.auth
    assert isinstance(ec_auth, JwtAuth)
    assert ec_auth.algorithms == ("ES256",)
    jwks = policies_of(auction, {"auth": {"jwt": {**JWT, "keys": "keys/jwks.json"}}}).default.auth
    assert isinstance(jwks, JwtAuth)
    assert (jwks.keys_format, jwks.algorithms) == ("jwks", ("ES256",))
    assert required_features(PolicySet(Policies(auth=jwks))) == ("auth.jwt", "auth.jwt.jwks")


def test_per_operation_overrides_merge_with_the_default(auction: Api) -> None:
    ps = policies_of(
        auction,
        {
            "auth": {"jwt": JWT},
            "operations": {
                "getAuction": {"cache": {"ttl": 5, "vary": ["path", "header:Accept"]}},
                "createAuction": {"auth": False},
            },
        },
    )
    get = ps.for_operation("getAuction")
    assert get.auth == ps.default.auth
    assert get.cache == Cache(ttl=5.0, methods=("GET",), vary=("path", "header:accept"))
    assert ps.for_operation("createAuction").empty
    assert ps.for_operation("bid") == ps.default
    assert required_features(ps) == ("auth.jwt", "cache", "cache.path_only", "cache.vary_header")


def test_api_key_defaults_from_the_description(auction: Api) -> None:
    api = with_schemes(auction, SecurityScheme("key", "apiKey", location="query", param_name="k"))
    ps = policies_of(api, {"auth": {"api_key": {}}})
    assert ps.default.auth == ApiKeyAuth(header=None, query="k", keys_env="GATEBENCH_API_KEYS")
    header = policies_of(api, {"auth": {"api_key": {"header": "X-Key", "keys_env": "KEYS"}}})
    assert header.default.auth == ApiKeyAuth(header="X-Key", query=None, keys_env="KEYS")


def test_api_key_without_a_scheme_asks_where_the_key_travels(auction: Api) -> None:
    assert errors_of(auction, {"auth": {"api_key": {}}}) == [
        (
            "/x-gatebench/policies/auth/api_key",
            "'header' or 'query' is required: the description's securitySchemes have no "
            "apiKey scheme in a header or query parameter",
        )
    ]


def test_jwt_asks_for_what_the_description_cannot_say(auction: Api) -> None:
    assert errors_of(auction, {"auth": {"jwt": {"audience": "a"}}}) == [
        (
            "/x-gatebench/policies/auth/jwt",
            "'issuer' is required: the description's securityScheme 'bearerAuth' says a bearer "
            "token but not the token issuer ('iss')",
        ),
        (
            "/x-gatebench/policies/auth/jwt",
            "'keys' is required: the description's securityScheme 'bearerAuth' says a bearer "
            "token but not the verification keys (a JWKS or PEM public key file in the bundle)",
        ),
    ]
    bare = with_schemes(auction)
    assert errors_of(bare, {"auth": {"jwt": {**JWT, "issuer": None}} | {}})[0][0] == (
        "/x-gatebench/policies/auth/jwt/issuer"
    )


@pytest.mark.parametrize(
    ("policies", "pointer", "message"),
    [
        (
            {"auth": {"jwt": {**JWT, "keys": "keys/private.pem"}}},
            "/x-gatebench/policies/auth/jwt/keys",
            "keys/private.pem: holds a private key; give the public key only (the signer keeps "
            "the private one)",
        ),
        (
            {"auth": {"jwt": {**JWT, "keys": "../outside.pem"}}},
            "/x-gatebench/policies/auth/jwt/keys",
            "expected a relative path inside the bundle (letters, digits, ._/-, no '..'), got "
            "'../outside.pem'",
        ),
        (
            {"auth": {"jwt": {**JWT, "keys": "keys/none.pem"}}},
            "/x-gatebench/policies/auth/jwt/keys",
            "cannot read 'keys/none.pem': no such file in the bundle",
        ),
        (
            {"auth": {"jwt": {**JWT, "algorithms": ["none"]}}},
            "/x-gatebench/policies/auth/jwt/algorithms",
            'expected a list of RS256, ES256, HS256, got ["none"]',
        ),
        (
            {"auth": {"jwt": {**JWT, "audience": 'a"b'}}},
            "/x-gatebench/policies/auth/jwt/audience",
            "quotes, backslashes and ` $ ; { } # are not accepted here, got 'a\"b'",
        ),
        (
            {"auth": {"jwt": JWT, "api_key": {}}},
            "/x-gatebench/policies/auth",
            "give exactly one of 'jwt' or 'api_key'",
        ),
        (
            {"rate_limit": {"window": "1s"}},
            "/x-gatebench/policies/rate_limit",
            "'requests' (requests allowed per window) is required",
        ),
        (
            {"rate_limit": {"requests": 5, "key": "cookie"}},
            "/x-gatebench/policies/rate_limit/key",
            "expected address, subject or header:NAME, got 'cookie'",
        ),
        (
            {"rate_limit": {"requests": 5, "key": "header:X Y"}},
            "/x-gatebench/policies/rate_limit/key",
            "expected a header or parameter name (letters, digits, -_.), got 'X Y'",
        ),
        (
            {"cache": {"methods": ["GET"]}},
            "/x-gatebench/policies/cache",
            "'ttl' (how long a response is served by the gateway) is required",
        ),
        (
            {"cache": {"ttl": "1s", "methods": ["POST"]}},
            "/x-gatebench/policies/cache/methods",
            'expected a list of GET, HEAD, got ["POST"]',
        ),
        (
            {"cache": {"ttl": "1s", "vary": ["query"]}},
            "/x-gatebench/policies/cache/vary",
            "the key always varies on 'path'; add it",
        ),
        (
            {"operations": {"nope": {"cache": False}}},
            "/x-gatebench/policies/operations/nope",
            "no operation 'nope' in the description; known: bid, createAuction, getAuction",
        ),
        (
            {"cache": {"ttl": "1s", "size": 3}},
            "/x-gatebench/policies/cache/size",
            "unknown key 'size' in policies.cache; expected one of: ttl, methods, vary",
        ),
    ],
)
def test_located_errors(auction: Api, policies: Any, pointer: str, message: str) -> None:
    assert (pointer, message) in errors_of(auction, policies)


def test_missing_features_and_the_reason() -> None:
    ps = PolicySet(
        default=PolicySet().default.__class__(
            rate_limit=RateLimit(requests=5, window=1.0), cache=Cache(ttl=1.0)
        )
    )
    assert missing_features(frozenset({"cache"}), ps) == ("rate_limit.address",)
    assert missing_reason("caddy", ("rate_limit.address", "cache")) == (
        "caddy cannot apply the requested policies natively: rate limit per client address "
        "(rate_limit.address), response cache (key: path and query) (cache)"
    )


def test_bearer_format_jwt_is_named_in_what_is_asked(auction: Api) -> None:
    api = with_schemes(
        auction,
        SecurityScheme("basicAuth", "http", scheme="basic"),
        SecurityScheme("jwtAuth", "http", scheme="bearer", bearer_format="JWT"),
    )
    assert errors_of(api, {"auth": {"jwt": {**JWT, "keys": None} | {}}})[0][0] == (
        "/x-gatebench/policies/auth/jwt/keys"
    )
    assert errors_of(api, {"auth": {"jwt": {"issuer": "i", "keys": "keys/rsa.pem"}}}) == [
        (
            "/x-gatebench/policies/auth/jwt",
            "'audience' is required: the description's securityScheme 'jwtAuth' says a JWT "
            "bearer token (bearerFormat: JWT) but not the token audience ('aud')",
        )
    ]


def test_the_openapi_reader_keeps_bearer_format(tmp_path: Path) -> None:
    spec = tmp_path / "api.yaml"
    spec.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n"
        "components:\n  securitySchemes:\n"
        "    jwtAuth: {type: http, scheme: bearer, bearerFormat: JWT}\n"
    )
    api = load_spec(spec).api
    assert api is not None
    assert api.security_schemes[0].bearer_format == "JWT"
    assert api.security_schemes[0].to_dict()["bearer_format"] == "JWT"


def test_auth_jwt_signing_needs_a_jwt_policy(auction: Api) -> None:
    data = section({"cache": {"ttl": "1s"}})
    data["auth"] = {"jwt": {"private_key_env": "KEY"}}
    with pytest.raises(PlanError) as info:
        build_plan(data, auction, read_file=read_file)
    assert [(p.pointer, p.message) for p in info.value.errors] == [
        (
            "/x-gatebench/auth/jwt",
            "signing tokens needs a JWT policy (policies: {auth: {jwt: {issuer, audience, "
            "keys}}}): its issuer, audience and algorithm are the tokens' claims",
        )
    ]


def _problems(api: Api, workload: dict[str, Any], policies: Any) -> list[tuple[str, str, str]]:
    doc = {**section(policies), "workloads": [workload]}
    try:
        found = build_plan(doc, api, read_file=read_file).warnings
    except PlanError as exc:
        found = tuple(exc.problems)
    return [(p.severity, p.pointer, p.message) for p in found]


GET = {"name": "get", "operation": "getAuction", "injection": {"sequential": 5000}}


def test_a_policys_refusal_status_in_expect_is_refused(auction: Api) -> None:
    """A gateway's own 429 listed in ``expect`` passes the status check without the backend's
    signature: every refusal was a wrong answer and the limited column read 0."""
    limit = {"rate_limit": {"requests": 50, "window": "1s"}}
    assert _problems(auction, {**GET, "expect": [200, 429]}, limit) == [
        (
            "error",
            "/x-gatebench/workloads/0/expect",
            "expect lists 429, the status the plan's policies refuse 'getAuction' with (its "
            "rate limit): a gateway's own 429 carries no answer of the backend, so a listed one "
            "would count as a wrong answer; leave it out (the report counts the rate limit's "
            "refusals apart, as rate-limited, not as errors)",
        )
    ]
    assert _problems(auction, {**GET, "expect": [200]}, limit) == []
    assert _problems(auction, {**GET, "expect": [200, 429]}, {}) == []


def test_a_header_limit_the_workload_never_keys_is_warned(auction: Api) -> None:
    limit = {"rate_limit": {"requests": 50, "window": "1s", "key": "header:X-Client"}}
    assert _problems(auction, GET, limit) == [
        (
            "warning",
            "/x-gatebench/workloads/0",
            "the rate limit of 'getAuction' counts per value of the header X-Client, which this "
            "workload does not send: nginx, HAProxy, Envoy and Traefik count no request "
            "without it, so refuse none (Kong counts it by client address, KrakenD refuses it "
            "with 429); add it to headers to measure the limit",
        )
    ]
    assert _problems(auction, {**GET, "headers": {"x-client": "a"}}, limit) == []


def test_the_plan_says_the_run_signs_the_tokens(auction: Api) -> None:
    """``auth: {jwt: ...}`` sends signed tokens: the plan said ``auth: none``."""
    from gatebench.core.plan import describe_plan

    data = section({"auth": {"jwt": JWT}})
    data["auth"] = {"jwt": {"private_key_env": "KEY", "subjects": 3}}
    lines = describe_plan(build_plan(data, auction, read_file=read_file), auction)
    assert [line for line in lines if line.startswith("  auth:")] == [
        "  auth:        JWT bearer tokens signed by the run (key from $KEY, 3 subjects)"
    ]


def test_signed_tokens_are_credentials_for_a_bearer_operation(auction: Api) -> None:
    """``auth: {jwt: ...}`` sends a signed token to an operation that requires bearer
    authentication: the plan warned that its requests go without credentials."""
    data = section({"auth": {"jwt": JWT}})
    data["auth"] = {"jwt": {"private_key_env": "KEY"}}
    plan = build_plan(data, auction, read_file=read_file)
    assert not [p.message for p in plan.warnings if "requires bearer authentication" in p.message]
