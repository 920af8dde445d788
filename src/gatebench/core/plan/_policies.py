"""Reading ``x-gatebench.core.policies`` into a :class:`~gatebench.core.policies.PolicySet`.

What the description's ``securitySchemes`` say fills what the plan leaves out: an ``apiKey``
scheme names the header or query parameter, an ``http`` ``bearer`` scheme (``bearerFormat:
JWT``) says where the token travels. What no description can say (a JWT's issuer, audience
and verification keys) is asked for with a located error. Key files are read through
``read_file`` (the edge passes one that stays inside the bundle); a private key is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from gatebench.core.ir import Api, SecurityScheme
from gatebench.core.plan._reader import Reader, _kind, _show
from gatebench.core.policies import (
    JWT_ALGORITHMS,
    ApiKeyAuth,
    Cache,
    JwtAlgorithm,
    JwtAuth,
    Policies,
    PolicySet,
    RateLimit,
    RateLimitKey,
)

ReadFile = Callable[[str], str]
DEFAULT_KEYS_ENV = "GATEBENCH_API_KEYS"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOKEN = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_BUNDLE_PATH = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9._/-]{1,200}$")
_MAX_RATE = 1_000_000_000


def read_policies(value: Any, r: Reader, api: Api, read_file: ReadFile | None) -> PolicySet:
    if value is None:
        return PolicySet()
    data = r.mapping(value, ["policies"], "policies")
    where: list[str | int] = ["policies"]
    default = _policies(data, r, api, read_file, where, Policies())
    operations: list[tuple[str, Policies]] = []
    ops = data.get("operations")
    if ops is not None:
        if not isinstance(ops, dict):
            r.error(
                [*where, "operations"],
                f"expected a mapping of operationId → policies, got {_kind(ops)}",
            )
        else:
            known = {op.operation_id for op in api.operations}
            for op_id, section in ops.items():
                at: list[str | int] = [*where, "operations", str(op_id)]
                if str(op_id) not in known:
                    r.error(
                        at,
                        f"no operation {str(op_id)!r} in the description; known: {', '.join(sorted(known))}",
                    )
                    continue
                part = r.mapping(section, at, "operation_policies")
                operations.append((str(op_id), _policies(part, r, api, read_file, at, default)))
    return PolicySet(default=default, operations=tuple(sorted(operations)))


def _policies(
    data: dict[str, Any],
    r: Reader,
    api: Api,
    read_file: ReadFile | None,
    where: list[str | int],
    base: Policies,
) -> Policies:
    auth = base.auth
    if "auth" in data:
        auth = (
            None
            if data["auth"] is False
            else _auth(data["auth"], r, api, read_file, [*where, "auth"])
        )
    rate_limit = base.rate_limit
    if "rate_limit" in data:
        rate_limit = (
            None
            if data["rate_limit"] is False
            else _rate_limit(data["rate_limit"], r, [*where, "rate_limit"])
        )
        if rate_limit is not None and rate_limit.key == "subject" and not isinstance(auth, JwtAuth):
            r.error(
                [*where, "rate_limit", "key"],
                "key: subject counts per token subject; it needs auth: {jwt: ...} on the same operations",
            )
    cache = base.cache
    if "cache" in data:
        cache = None if data["cache"] is False else _cache(data["cache"], r, [*where, "cache"])
    return Policies(auth=auth, rate_limit=rate_limit, cache=cache)


def _schemes(api: Api, kind: str) -> list[SecurityScheme]:
    out = [s for s in api.security_schemes if s.kind == kind]
    if kind == "http":
        out = [s for s in out if s.scheme == "bearer"]
    return out


def _auth(
    value: Any, r: Reader, api: Api, read_file: ReadFile | None, where: list[str | int]
) -> JwtAuth | ApiKeyAuth | None:
    data = r.mapping(value, where, "policy_auth")
    chosen = [k for k in ("jwt", "api_key") if k in data]
    if len(chosen) != 1:
        r.error(where, "give exactly one of 'jwt' or 'api_key'")
        return None
    if chosen[0] == "jwt":
        return _jwt(data["jwt"], r, api, read_file, [*where, "jwt"])
    return _api_key(data["api_key"], r, api, [*where, "api_key"])


def _jwt(
    value: Any, r: Reader, api: Api, read_file: ReadFile | None, where: list[str | int]
) -> JwtAuth | None:
    data = r.mapping({} if value is None else value, where, "jwt")
    bearer = sorted(_schemes(api, "http"), key=lambda s: (s.bearer_format or "").upper() != "JWT")
    if bearer and (bearer[0].bearer_format or "").upper() == "JWT":
        said = (
            f"the description's securityScheme {bearer[0].name!r} says a JWT bearer token "
            "(bearerFormat: JWT) but not"
        )
    elif bearer:
        said = f"the description's securityScheme {bearer[0].name!r} says a bearer token but not"
    else:
        said = "the description's securitySchemes do not say"
    missing = [k for k in ("issuer", "audience", "keys") if k not in data]
    for key in missing:
        what = {
            "issuer": "the token issuer ('iss')",
            "audience": "the token audience ('aud')",
            "keys": "the verification keys (a JWKS or PEM public key file in the bundle)",
        }[key]
        r.error(where, f"'{key}' is required: {said} {what}")
    issuer = _text(data.get("issuer"), r, [*where, "issuer"]) if "issuer" in data else None
    audience = _text(data.get("audience"), r, [*where, "audience"]) if "audience" in data else None
    keys_file = None
    if "keys" in data:
        keys_file = data["keys"]
        if not isinstance(keys_file, str) or not _BUNDLE_PATH.match(keys_file):
            r.error(
                [*where, "keys"],
                f"expected a relative path inside the bundle (letters, digits, ._/-, no '..'), got {_show(keys_file)}",
            )
            keys_file = None
    keys_text, keys_format = None, "pem"
    if keys_file is not None:
        if read_file is None:
            r.error(
                [*where, "keys"], f"cannot read {keys_file!r}: the plan was not loaded from a file"
            )
        else:
            try:
                keys_text = read_file(keys_file)
            except (OSError, ValueError) as exc:
                r.error([*where, "keys"], f"cannot read {keys_file!r}: {exc}")
        if keys_text is not None:
            keys_format, problem = _key_format(keys_text)
            if problem:
                r.error([*where, "keys"], f"{keys_file}: {problem}")
                keys_text = None
    algorithms: tuple[JwtAlgorithm, ...] = ()
    if "algorithms" in data:
        raw = data["algorithms"]
        if not isinstance(raw, list) or not raw or any(a not in JWT_ALGORITHMS for a in raw):
            r.error(
                [*where, "algorithms"],
                f"expected a list of {', '.join(JWT_ALGORITHMS)}, got {_show(raw)}",
            )
        else:
            algorithms = tuple(dict.fromkeys(raw))
    elif keys_text is not None:
        algorithms = (_default_algorithm(keys_text, keys_format),)
    if (
        issuer is None
        or audience is None
        or keys_file is None
        or keys_text is None
        or not algorithms
    ):
        return None
    return JwtAuth(
        issuer=issuer,
        audience=audience,
        algorithms=algorithms,
        keys_file=keys_file,
        keys=keys_text,
        keys_format="jwks" if keys_format == "jwks" else "pem",
    )


def _key_format(text: str) -> tuple[str, str | None]:
    if "PRIVATE KEY" in text:
        return (
            "pem",
            "holds a private key; give the public key only (the signer keeps the private one)",
        )
    if "-----BEGIN PUBLIC KEY-----" in text:
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from cryptography.hazmat.primitives.serialization import load_pem_public_key

        try:
            key = load_pem_public_key(text.encode())
        except ValueError:
            return "pem", "not a readable PEM public key"
        if not isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
            return "pem", "expected an RSA (RS256) or EC P-256 (ES256) public key"
        return "pem", None
    try:
        doc = json.loads(text)
    except ValueError:
        return "pem", "expected a PEM public key (-----BEGIN PUBLIC KEY-----) or a JWKS document"
    keys = doc.get("keys") if isinstance(doc, dict) else None
    if not isinstance(keys, list) or not keys or not all(isinstance(k, dict) for k in keys):
        return "jwks", "a JWKS needs a non-empty 'keys' list"
    for k in keys:
        if "d" in k:
            return "jwks", "holds a private key ('d'); give the public keys only"
    return "jwks", None


def _default_algorithm(text: str, keys_format: str) -> JwtAlgorithm:
    if keys_format == "jwks":
        kty = json.loads(text)["keys"][0].get("kty")
        return "ES256" if kty == "EC" else "HS256" if kty == "oct" else "RS256"
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(text.encode())
    except ValueError:
        return "RS256"
    return "ES256" if isinstance(key, ec.EllipticCurvePublicKey) else "RS256"


def _api_key(value: Any, r: Reader, api: Api, where: list[str | int]) -> ApiKeyAuth | None:
    data = r.mapping({} if value is None else value, where, "api_key_policy")
    header = _token(data.get("header"), r, [*where, "header"]) if "header" in data else None
    query = _token(data.get("query"), r, [*where, "query"]) if "query" in data else None
    if header is not None and query is not None:
        r.error(where, "give either 'header' or 'query', not both")
        return None
    if "header" not in data and "query" not in data:
        schemes = [s for s in _schemes(api, "apiKey") if s.location in ("header", "query")]
        if not schemes:
            r.error(
                where,
                "'header' or 'query' is required: the description's securitySchemes have no "
                "apiKey scheme in a header or query parameter",
            )
            return None
        scheme = schemes[0]
        header = scheme.param_name if scheme.location == "header" else None
        query = scheme.param_name if scheme.location == "query" else None
    keys_env = data.get("keys_env", DEFAULT_KEYS_ENV)
    if not isinstance(keys_env, str) or not _ENV_NAME.match(keys_env):
        r.error(
            [*where, "keys_env"],
            f"expected an environment variable name such as API_KEYS, got {_show(keys_env)}",
        )
        return None
    if header is None and query is None:
        return None
    return ApiKeyAuth(header=header, query=query, keys_env=keys_env)


def _rate_limit(value: Any, r: Reader, where: list[str | int]) -> RateLimit | None:
    data = r.mapping(value, where, "rate_limit")
    if "requests" not in data:
        r.error(where, "'requests' (requests allowed per window) is required")
        return None
    requests = r.integer(data["requests"], [*where, "requests"], 1, _MAX_RATE)
    window = r.duration(data.get("window", "1s"), [*where, "window"])
    key: RateLimitKey = "address"
    header = None
    raw = data.get("key", "address")
    if raw in ("address", "subject"):
        key = raw
    elif isinstance(raw, str) and raw.startswith("header:"):
        key = "header"
        header = _token(raw[len("header:") :], r, [*where, "key"])
        if header is None:
            return None
    else:
        r.error([*where, "key"], f"expected address, subject or header:NAME, got {_show(raw)}")
        return None
    if requests is None or window is None:
        return None
    return RateLimit(requests=requests, window=window, key=key, header=header)


def _cache(value: Any, r: Reader, where: list[str | int]) -> Cache | None:
    data = r.mapping(value, where, "cache")
    if "ttl" not in data:
        r.error(where, "'ttl' (how long a response is served by the gateway) is required")
        return None
    ttl = r.duration(data["ttl"], [*where, "ttl"])
    methods: tuple[str, ...] = ("GET",)
    if "methods" in data:
        raw = data["methods"]
        if not isinstance(raw, list) or not raw or any(m not in ("GET", "HEAD") for m in raw):
            r.error([*where, "methods"], f"expected a list of GET, HEAD, got {_show(raw)}")
            return None
        methods = tuple(dict.fromkeys(raw))
    vary: tuple[str, ...] = ("path", "query")
    if "vary" in data:
        raw = data["vary"]
        ok = isinstance(raw, list) and raw
        parts: list[str] = []
        for i, part in enumerate(raw if isinstance(raw, list) else []):
            if part in ("path", "query"):
                parts.append(part)
            elif isinstance(part, str) and part.startswith("header:") and _TOKEN.match(part[7:]):
                parts.append("header:" + part[7:].lower())
            else:
                r.error(
                    [*where, "vary", i], f"expected path, query or header:NAME, got {_show(part)}"
                )
                ok = False
        if not ok or "path" not in parts:
            if ok:
                r.error([*where, "vary"], "the key always varies on 'path'; add it")
            return None
        vary = tuple(dict.fromkeys(parts))
    if ttl is None:
        return None
    return Cache(ttl=ttl, methods=methods, vary=vary)


def _text(value: Any, r: Reader, where: list[str | int]) -> str | None:
    if not isinstance(value, str) or not value or len(value) > 256 or not value.isprintable():
        r.error(
            where,
            f"expected a non-empty printable string of at most 256 characters, got {_show(value)}",
        )
        return None
    if any(c in value for c in "\"'\\`$;{}#\n"):
        r.error(
            where,
            f"quotes, backslashes and ` $ ; {{ }} # are not accepted here, got {_show(value)}",
        )
        return None
    return value


def _token(value: Any, r: Reader, where: list[str | int]) -> str | None:
    if not isinstance(value, str) or not _TOKEN.match(value):
        r.error(
            where, f"expected a header or parameter name (letters, digits, -_.), got {_show(value)}"
        )
        return None
    return value


__all__ = ["DEFAULT_KEYS_ENV", "ReadFile", "read_policies"]
