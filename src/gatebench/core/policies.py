"""Gateway policies as data: what a gateway must enforce in front of the API (authentication,
rate limiting, caching), for every operation or per operation.

A benchmark of a bare proxy measures something nobody deploys, so a plan may ask each gateway
to validate tokens, limit rates and cache (``x-gatebench.core.policies``, read by
``gatebench.core.plan``). Renderers declare which of these *features* they render natively
(``Renderer.supported_policies``); :func:`required_features` says which ones a policy set
needs, so a gateway that cannot apply one is left out with the reason, never run without it
silently.

Feature names, the one vocabulary shared by the plan check, the renderers and the support
matrix in docs/gateways.md:

- ``auth.jwt``: validate a JWT bearer token (signature against keys from the bundle, ``exp``,
  issuer, audience); ``auth.api_key``: a key in a header or query parameter, the valid keys
  from an environment variable.
- ``rate_limit.address`` / ``rate_limit.header`` / ``rate_limit.subject``: N requests per
  window, counted per client address, per value of a request header, or per token subject,
  and always per operation (:class:`RateLimit`).
- ``cache``: answer repeated requests from the gateway for a TTL, keyed on path and query;
  ``cache.path_only``: a key without the query; ``cache.vary_header``: a key that also
  varies on request headers.
- ``auth.jwt.jwks``: the JWT verification keys given as a JWKS document (not a PEM file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

JwtAlgorithm = Literal["RS256", "ES256", "HS256"]
JWT_ALGORITHMS: tuple[JwtAlgorithm, ...] = ("RS256", "ES256", "HS256")
RateLimitKey = Literal["address", "header", "subject"]

FEATURES: tuple[str, ...] = (
    "auth.jwt",
    "auth.jwt.jwks",
    "auth.api_key",
    "rate_limit.address",
    "rate_limit.header",
    "rate_limit.subject",
    "cache",
    "cache.path_only",
    "cache.vary_header",
)
"""Every policy feature, in the order the support matrix lists them."""

FEATURE_LABELS: dict[str, str] = {
    "auth.jwt": "JWT validation",
    "auth.jwt.jwks": "JWT keys from a JWKS file",
    "auth.api_key": "API key",
    "rate_limit.address": "rate limit per client address",
    "rate_limit.header": "rate limit per header value",
    "rate_limit.subject": "rate limit per token subject",
    "cache": "response cache (key: path and query)",
    "cache.path_only": "cache key ignoring the query",
    "cache.vary_header": "cache key varying on request headers",
}


@dataclass(frozen=True)
class JwtAuth:
    """Validate ``Authorization: Bearer <JWT>``: signature, expiry, issuer and audience."""

    issuer: str
    audience: str
    algorithms: tuple[JwtAlgorithm, ...]
    keys_file: str
    """The JWKS or PEM file, relative to the description (inside its bundle)."""
    keys: str
    """The file's text: public keys only (a private key in it is refused)."""
    keys_format: Literal["pem", "jwks"]


@dataclass(frozen=True)
class ApiKeyAuth:
    """A key in a header (``header``) or query parameter (``query``); the valid keys are read
    from the environment variable ``keys_env`` (comma-separated) when the gateway starts."""

    header: str | None
    query: str | None
    keys_env: str
    keys: tuple[str, ...] = field(default=(), repr=False)
    """The valid keys, filled at the edge from ``keys_env`` (``gatebench.core.api_keys``) for the
    renderers only; empty in a plan, which never holds a key."""


@dataclass(frozen=True)
class RateLimit:
    """``requests`` per ``window`` for each (operation, key) pair: a limit given for every
    operation applies to each operation separately, never one budget shared by them. It is the
    scope every gateway that declares rate limits can express (KrakenD's router limiter exists
    only per endpoint), so each renderer counts per operation (docs/gateways.md, What a rate
    limit counts)."""

    requests: int
    window: float
    """Seconds."""
    key: RateLimitKey = "address"
    header: str | None = None
    """For ``key: header``: the header whose value is counted."""

    @property
    def feature(self) -> str:
        return f"rate_limit.{self.key}"


@dataclass(frozen=True)
class Cache:
    ttl: float
    """Seconds a response is served from the gateway."""
    methods: tuple[str, ...] = ("GET",)
    vary: tuple[str, ...] = ("path", "query")
    """Request parts the key varies on: ``path``, ``query``, ``header:NAME``."""


@dataclass(frozen=True)
class Policies:
    """What one operation gets (``None``: that policy is off)."""

    auth: JwtAuth | ApiKeyAuth | None = None
    rate_limit: RateLimit | None = None
    cache: Cache | None = None

    @property
    def empty(self) -> bool:
        return self.auth is None and self.rate_limit is None and self.cache is None

    def features(self) -> tuple[str, ...]:
        out: list[str] = []
        if isinstance(self.auth, JwtAuth):
            out.append("auth.jwt")
            if self.auth.keys_format == "jwks":
                out.append("auth.jwt.jwks")
        elif isinstance(self.auth, ApiKeyAuth):
            out.append("auth.api_key")
        if self.rate_limit is not None:
            out.append(self.rate_limit.feature)
        if self.cache is not None:
            out.append("cache")
            if "query" not in self.cache.vary:
                out.append("cache.path_only")
            if any(v.startswith("header:") for v in self.cache.vary):
                out.append("cache.vary_header")
        return tuple(out)


@dataclass(frozen=True)
class PolicySet:
    """The plan's policies: ``default`` for every operation, ``operations`` overriding it per
    operationId (each override is complete: the default merged with the operation's keys)."""

    default: Policies = Policies()
    operations: tuple[tuple[str, Policies], ...] = ()

    def for_operation(self, operation_id: str) -> Policies:
        return dict(self.operations).get(operation_id, self.default)

    @property
    def empty(self) -> bool:
        return self.default.empty and all(p.empty for _, p in self.operations)

    def all_policies(self) -> tuple[Policies, ...]:
        return (self.default, *(p for _, p in self.operations))


def required_features(policies: PolicySet) -> tuple[str, ...]:
    """Every feature some operation needs, in :data:`FEATURES` order."""
    needed = {f for p in policies.all_policies() for f in p.features()}
    return tuple(f for f in FEATURES if f in needed)


def missing_features(supported: frozenset[str], policies: PolicySet) -> tuple[str, ...]:
    """The features ``policies`` needs that a gateway supporting ``supported`` lacks."""
    return tuple(f for f in required_features(policies) if f not in supported)


def missing_reason(
    gateway: str,
    missing: tuple[str, ...],
    why: Mapping[str, str] | None = None,
    limits: tuple[str, ...] = (),
) -> str:
    """What the gateway cannot apply, in one sentence: the reason it is left out (the plan
    check, the report) and, under ``--allow-missing-policies``, what it runs without, so it
    says no consequence of its own; ``why`` (feature → the gateway's own limit) makes a
    feature's mention precise; ``limits`` are values of a declared feature the gateway cannot
    express (``Renderer.policy_limits``), each a phrase of its own."""
    why = why or {}
    labels = ", ".join(
        [
            *(
                f"{FEATURE_LABELS[f]} ({f}: {why[f]})" if f in why else f"{FEATURE_LABELS[f]} ({f})"
                for f in missing
            ),
            *limits,
        ]
    )
    return f"{gateway} cannot apply the requested policies natively: {labels}"


__all__ = [
    "FEATURES",
    "FEATURE_LABELS",
    "JWT_ALGORITHMS",
    "ApiKeyAuth",
    "Cache",
    "JwtAlgorithm",
    "JwtAuth",
    "Policies",
    "PolicySet",
    "RateLimit",
    "RateLimitKey",
    "missing_features",
    "missing_reason",
    "required_features",
]
