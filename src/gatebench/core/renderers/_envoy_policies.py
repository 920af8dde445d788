"""Envoy's policies, with filters built into Envoy (no extension outside its release):

- JWT: ``envoy.filters.http.jwt_authn``, one provider per distinct policy (issuer, audience,
  keys inline: Envoy reads a JWKS or a PEM public key); each route names its requirement in
  ``typed_per_filter_config`` or disables the filter. Missing, expired or wrongly signed
  tokens get 401, a wrong audience 403, from Envoy itself. ``payload_in_metadata`` keeps the
  claims for the subject rate limit.
- API key: ``envoy.filters.http.api_key_auth`` (built into Envoy since 1.33; its API is marked
  work-in-progress), configured per route (``ApiKeyAuthPerRoute``: the keys as credentials,
  the header or query parameter as the key source) and disabled on the other routes
  (``FilterConfig`` ``disabled``). Absent or wrong: 401 from Envoy. The keys are in the file
  (Envoy compares no hash): a run's stored copy is redacted (``gatebench.core.api_keys``).
- Rate limit: ``envoy.filters.http.local_ratelimit`` per route, a token bucket of
  ``requests`` tokens refilled every ``window``; a descriptor built from the route's
  ``rate_limits`` actions (remote address, a request header, or the token's ``sub`` claim)
  gives each key its own bucket (a descriptor entry with an empty value: dynamic
  descriptors), and only that bucket counts (``always_consume_default_token_bucket: false``).
  A request without the key (no such header, no ``sub``) builds no descriptor and falls to
  the default bucket: for a header or subject key that bucket holds 2^32 − 1 tokens per
  window, so such a request is not counted, as nginx, HAProxy and Traefik leave it (docs/gateways.md,
  What a rate limit counts). Past the limit: 429. Envoy refills a
  bucket at most every 50 ms: a shorter window leaves Envoy out
  (:func:`envoy_policy_limits`). A per-address limit counts the connection's peer, as the
  other gateways do: the listener then sets ``use_remote_address: true`` (without it Envoy
  takes the client address from ``X-Forwarded-For``, which any client writes) and keeps what
  the backend gets as it was: ``skip_xff_append: true`` (``X-Forwarded-For`` as the client sent
  it, no address added), ``preserve_external_request_id: true`` (the client's
  ``X-Request-Id``), ``x-envoy-external-address`` removed. ``X-Forwarded-Proto`` becomes the
  connection's scheme, and a client's ``x-envoy-*`` headers are ignored (an edge's rules).
- Cache: ``envoy.filters.http.cache`` with the in-memory ``simple_http_cache``. Envoy caches
  by the HTTP caching rules, so a cached route adds ``Cache-Control: public, max-age=TTL`` to
  the backend's response before the cache sees it (the client sees it too). The key is
  Envoy's own: host, path and query.

Filter order: authentication, then the rate limit, then the cache, then the router, so no
unauthenticated request is counted or answered from the cache.
"""

from __future__ import annotations

import json
from typing import Any

from gatebench.core.api_keys import checked_keys
from gatebench.core.ir import Api
from gatebench.core.policies import ApiKeyAuth, JwtAuth, PolicySet, RateLimit
from gatebench.core.renderers._base import RenderTarget
from gatebench.core.renderers._routes import routes_for
from gatebench.core.renderers._yaml_out import dump_yaml, read_rendered

UPSTREAM_OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
"""The cluster's HTTP protocol options (``typed_extension_protocol_options`` key): the
renderer sets HTTP/1.1 and the idle timeout there, the policies add their upstream filters."""

_T = "type.googleapis.com/envoy.extensions.filters.http."
_MAX_DYNAMIC = 100_000
_MIN_FILL_INTERVAL = 0.05
"""Envoy refuses a token bucket ``fill_interval`` under 50 ms ("local rate limit token bucket
fill timer must be >= 50ms")."""
_UNCOUNTED = 4_294_967_295
"""The default bucket of a header or subject limit (the largest ``max_tokens``): requests
without the key are not counted."""
_CARRIED = "x-gatebench-validated-authorization"
_CACHE_CONTROL = "x-gatebench-cache-control"


def _ratelimit_descriptor_key(limit: RateLimit) -> str:
    return {"address": "remote_address", "header": "header", "subject": "subject"}[limit.key]


def _rate_limit_actions(limit: RateLimit) -> list[dict[str, Any]]:
    if limit.key == "address":
        return [{"remote_address": {}}]
    if limit.key == "header":
        assert limit.header is not None
        return [
            {
                "request_headers": {
                    "header_name": limit.header.lower(),
                    "descriptor_key": "header",
                }
            }
        ]
    return [
        {
            "metadata": {
                "descriptor_key": "subject",
                "metadata_key": {
                    "key": "envoy.filters.http.jwt_authn",
                    "path": [{"key": "jwt_payload"}, {"key": "sub"}],
                },
                "source": "DYNAMIC",
            }
        }
    ]


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _percent(key: str) -> dict[str, Any]:
    return {"runtime_key": key, "default_value": {"numerator": 100, "denominator": "HUNDRED"}}


def _local_ratelimit(limit: RateLimit, prefix: str) -> dict[str, Any]:
    bucket = {
        "max_tokens": limit.requests,
        "tokens_per_fill": limit.requests,
        "fill_interval": _seconds(limit.window),
    }
    default = bucket
    if limit.key != "address":
        default = {**bucket, "max_tokens": _UNCOUNTED, "tokens_per_fill": _UNCOUNTED}
    return {
        "@type": _T + "local_ratelimit.v3.LocalRateLimit",
        "stat_prefix": prefix,
        "token_bucket": default,
        "filter_enabled": _percent(f"{prefix}_enabled"),
        "filter_enforced": _percent(f"{prefix}_enforced"),
        "descriptors": [
            {
                "entries": [{"key": _ratelimit_descriptor_key(limit), "value": ""}],
                "token_bucket": bucket,
            }
        ],
        "max_dynamic_descriptors": _MAX_DYNAMIC,
        # Only the key's own bucket counts (the default one takes requests without the key).
        "always_consume_default_token_bucket": False,
    }


def envoy_policy_limits(policies: PolicySet) -> tuple[str, ...]:
    """The rate limits of ``policies`` whose window is shorter than Envoy refills a bucket
    (``Renderer.policy_limits``)."""
    reasons = (
        f"a rate limit of {p.rate_limit.requests} per {p.rate_limit.window:g}s "
        "(local_ratelimit refills its token bucket at most every 50ms: fill_interval >= 50ms)"
        for p in policies.all_policies()
        if p.rate_limit is not None and p.rate_limit.window < _MIN_FILL_INTERVAL
    )
    return tuple(dict.fromkeys(reasons))


def apply_envoy_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    header, doc = read_rendered(files["envoy.yaml"])
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    envoy_routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    providers: dict[str, Any] = {}
    names: dict[tuple[JwtAuth, bool], str] = {}
    uses_jwt = uses_limit = uses_cache = by_address = False
    carried_routes: set[str] = set()
    uses_key = any(isinstance(p.auth, ApiKeyAuth) for p in policies.all_policies())
    for route, envoy_route in zip(routes_for(api), envoy_routes, strict=True):
        p = policies.for_operation(route.operation_id)
        per_filter: dict[str, Any] = {}
        if uses_key:
            per_filter["envoy.filters.http.api_key_auth"] = _api_key_per_route(p.auth)
        if isinstance(p.auth, JwtAuth):
            uses_jwt = True
            carried = p.cache is not None and route.method in p.cache.methods
            if (p.auth, carried) not in names:
                names[p.auth, carried] = f"jwt{len(names)}"
                providers[names[p.auth, carried]] = {
                    "issuer": p.auth.issuer,
                    "audiences": [p.auth.audience],
                    "local_jwks": {"inline_string": as_jwks(p.auth)},
                    "forward": not carried,
                    "payload_in_metadata": "jwt_payload",
                }
            per_filter["envoy.filters.http.jwt_authn"] = {
                "@type": _T + "jwt_authn.v3.PerRouteConfig",
                "requirement_name": names[p.auth, carried],
            }
        else:
            per_filter["envoy.filters.http.jwt_authn"] = {
                "@type": _T + "jwt_authn.v3.PerRouteConfig",
                "disabled": True,
            }
        if p.rate_limit is not None:
            uses_limit = True
            by_address = by_address or p.rate_limit.key == "address"
            per_filter["envoy.filters.http.local_ratelimit"] = _local_ratelimit(
                p.rate_limit, f"rl_{envoy_route['name']}"
            )
            envoy_route["route"]["rate_limits"] = [{"actions": _rate_limit_actions(p.rate_limit)}]
        if p.cache is not None and route.method in p.cache.methods:
            uses_cache = True
            per_filter["envoy.filters.http.header_mutation"] = {
                "@type": _T + "header_mutation.v3.HeaderMutationPerRoute",
                "mutations": {
                    "request_mutations": [
                        {
                            "append": {
                                "header": {
                                    "key": _CACHE_CONTROL,
                                    "value": f"public, max-age={int(p.cache.ttl)}",
                                },
                                "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                            }
                        }
                    ]
                },
            }
            if isinstance(p.auth, JwtAuth):
                carried_routes.add(envoy_route["name"])
        envoy_route["typed_per_filter_config"] = per_filter
    filters: list[dict[str, Any]] = []
    if uses_cache:
        filters.append(
            {
                "name": "envoy.filters.http.header_mutation",
                "typed_config": {
                    "@type": _T + "header_mutation.v3.HeaderMutation",
                    "mutations": {
                        "request_mutations": [
                            {"remove": _CACHE_CONTROL},
                            {"remove": _CARRIED},
                            {
                                "append": {
                                    "header": {"key": _CARRIED, "value": "%REQ(authorization)%"},
                                    "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                                }
                            },
                        ]
                    },
                },
            }
        )
    if uses_key:
        filters.append(
            {
                "name": "envoy.filters.http.api_key_auth",
                "typed_config": {"@type": _T + "api_key_auth.v3.ApiKeyAuth"},
            }
        )
    if uses_jwt:
        filters.append(
            {
                "name": "envoy.filters.http.jwt_authn",
                "typed_config": {
                    "@type": _T + "jwt_authn.v3.JwtAuthentication",
                    "providers": providers,
                    "requirement_map": {n: {"provider_name": n} for n in providers},
                },
            }
        )
    if uses_limit:
        filters.append(
            {
                "name": "envoy.filters.http.local_ratelimit",
                "typed_config": {
                    "@type": _T + "local_ratelimit.v3.LocalRateLimit",
                    "stat_prefix": "gatebench_rate_limit",
                },
            }
        )
    if uses_cache:
        filters.append(
            {
                "name": "envoy.filters.http.cache",
                "typed_config": {
                    "@type": _T + "cache.v3.CacheConfig",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.http.cache.simple_http_cache.v3.SimpleHttpCacheConfig"
                    },
                },
            }
        )
    if uses_cache:
        # The cache never serves a request that carries Authorization, and sends what it
        # fetches through the cluster's upstream filters only: the validated token travels
        # under another name and is restored there, just before the backend.
        upstream = [
            {
                "name": "envoy.filters.http.header_mutation",
                "typed_config": {
                    "@type": _T + "header_mutation.v3.HeaderMutation",
                    "mutations": {
                        "request_mutations": [
                            {
                                "append": {
                                    "header": {
                                        "key": "authorization",
                                        "value": f"%REQ({_CARRIED})%",
                                    },
                                    "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                                    "keep_empty_value": False,
                                }
                            },
                            {"remove": _CARRIED},
                        ],
                        "response_mutations": [
                            {
                                "append": {
                                    "header": {
                                        "key": "cache-control",
                                        "value": f"%REQ({_CACHE_CONTROL})%",
                                    },
                                    "append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
                                    "keep_empty_value": False,
                                }
                            },
                        ],
                    },
                },
            },
            {
                "name": "envoy.filters.http.upstream_codec",
                "typed_config": {
                    "@type": _T + "upstream_codec.v3.UpstreamCodec",
                },
            },
        ]
        cluster = doc["static_resources"]["clusters"][0]
        options = cluster.setdefault("typed_extension_protocol_options", {}).setdefault(
            UPSTREAM_OPTIONS,
            {
                "@type": f"type.googleapis.com/{UPSTREAM_OPTIONS}",
                "explicit_http_config": {"http_protocol_options": {}},
            },
        )
        options["http_filters"] = upstream
    if by_address:
        # The remote_address action reads the address Envoy trusts: the peer's only with
        # use_remote_address (else the last X-Forwarded-For entry); the header passes as sent.
        hcm["use_remote_address"] = True
        hcm["skip_xff_append"] = True
        hcm["preserve_external_request_id"] = True
        hcm["route_config"]["request_headers_to_remove"] = ["x-envoy-external-address"]
    hcm["http_filters"] = [*filters, *hcm["http_filters"]]
    return {**files, "envoy.yaml": header + dump_yaml(doc)}


def _api_key_per_route(auth: object) -> dict[str, Any]:
    if not isinstance(auth, ApiKeyAuth):
        return {"@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig", "disabled": True}
    source = {"header": auth.header.lower()} if auth.header is not None else {"query": auth.query}
    return {
        "@type": _T + "api_key_auth.v3.ApiKeyAuthPerRoute",
        "credentials": [
            {"key": key, "client": f"key{n}"}
            for n, key in enumerate(checked_keys(auth, "envoy"), 1)
        ],
        "key_sources": [source],
    }


def as_jwks(auth: JwtAuth) -> str:
    """The policy's keys as a JWKS document (what Envoy's ``local_jwks`` reads): a PEM
    public key converted, a JWKS kept as given."""
    if auth.keys_format == "jwks":
        return auth.keys
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from jwt.algorithms import ECAlgorithm, RSAAlgorithm

    key = load_pem_public_key(auth.keys.encode())
    if isinstance(key, ec.EllipticCurvePublicKey):
        jwk = ECAlgorithm.to_jwk(key, as_dict=True)
    else:
        assert isinstance(key, rsa.RSAPublicKey), "the plan reader accepts RSA and EC keys"
        jwk = RSAAlgorithm.to_jwk(key, as_dict=True)
    jwk["alg"] = auth.algorithms[0]
    jwk["use"] = "sig"
    jwk["kid"] = "gatebench"
    return json.dumps({"keys": [dict(sorted(jwk.items()))]}, separators=(",", ":"))


__all__ = ["apply_envoy_policies", "envoy_policy_limits"]
