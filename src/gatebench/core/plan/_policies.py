"""Reading ``x-gatebench.core.policies`` into a :class:`~gatebench.core.policies.PolicySet`.

What the description's ``securitySchemes`` say fills what the plan leaves out: an ``apiKey``
scheme names the header or query parameter, an ``http`` ``bearer`` scheme (``bearerFormat:
JWT``) says where the token travels. What no description can say (a JWT's issuer, audience
and verification keys) is asked for with a located error. Key files are read through
``read_file`` (the edge passes one that stays inside the bundle); a private key is refused.

:func:`check_workloads` then holds each workload against its operation's policies: a
refusal status of a policy listed in ``expect`` is refused (the answer would pass the status
check without the backend's signature: a wrong answer), and a workload limited per header
that never sends the header is warned about.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from gatebench.core.errors import Problem
from gatebench.core.ir import Api, Operation, SecurityScheme
from gatebench.core.plan._document import (
    ApiKeyDoc,
    JwtDoc,
    OperationPoliciesDoc,
    PolicyAuthDoc,
    RateLimitDoc,
    Reading,
)
from gatebench.core.plan._model import Workload
from gatebench.core.policies import (
    ApiKeyAuth,
    Cache,
    JwtAlgorithm,
    JwtAuth,
    Policies,
    PolicySet,
    RateLimit,
)

ReadFile = Callable[[str], str]


def read_policies(doc: Any, r: Reading, api: Api, read_file: ReadFile | None) -> PolicySet:
    """The policies as read (``PoliciesDoc``) with what the description says filled in."""
    if doc is None:
        return PolicySet()
    default = _policies(doc, r, api, read_file, ["policies"], Policies())
    operations: list[tuple[str, Policies]] = []
    known = {op.operation_id for op in api.operations}
    for op_id, section in doc.operations.items():
        at: list[str | int] = ["policies", "operations", str(op_id)]
        if str(op_id) not in known:
            r.error(
                at,
                f"no operation {str(op_id)!r} in the description; known: {', '.join(sorted(known))}",
            )
            continue
        operations.append((str(op_id), _policies(section, r, api, read_file, at, default)))
    return PolicySet(default=default, operations=tuple(sorted(operations)))


def _policies(
    doc: OperationPoliciesDoc,
    r: Reading,
    api: Api,
    read_file: ReadFile | None,
    where: list[str | int],
    base: Policies,
) -> Policies:
    given = doc.model_fields_set
    auth = base.auth
    if "auth" in given:
        auth = None if doc.auth is False else _auth(doc.auth, r, api, read_file, [*where, "auth"])
    rate_limit = base.rate_limit
    if "rate_limit" in given:
        rate_limit = None if doc.rate_limit is False else _rate_limit(doc.rate_limit)
        if rate_limit is not None and rate_limit.key == "subject" and not isinstance(auth, JwtAuth):
            r.error(
                [*where, "rate_limit", "key"],
                "key: subject counts per token subject; it needs auth: {jwt: ...} on the same operations",
            )
    cache = base.cache
    if "cache" in given:
        cache = (
            None
            if doc.cache is False
            else Cache(ttl=doc.cache.ttl, methods=doc.cache.methods, vary=doc.cache.vary)
        )
    return Policies(auth=auth, rate_limit=rate_limit, cache=cache)


def _schemes(api: Api, kind: str) -> list[SecurityScheme]:
    out = [s for s in api.security_schemes if s.kind == kind]
    if kind == "http":
        out = [s for s in out if s.scheme == "bearer"]
    return out


def _auth(
    doc: PolicyAuthDoc, r: Reading, api: Api, read_file: ReadFile | None, where: list[str | int]
) -> JwtAuth | ApiKeyAuth | None:
    if doc.jwt is not None:
        return _jwt(doc.jwt, r, api, read_file, [*where, "jwt"])
    assert doc.api_key is not None
    return _api_key(doc.api_key, r, api, [*where, "api_key"])


def _jwt(
    doc: JwtDoc, r: Reading, api: Api, read_file: ReadFile | None, where: list[str | int]
) -> JwtAuth | None:
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
    what = {
        "issuer": "the token issuer ('iss')",
        "audience": "the token audience ('aud')",
        "keys": "the verification keys (a JWKS or PEM public key file in the bundle)",
    }
    for key in what:
        if key not in doc.model_fields_set:
            r.error(where, f"'{key}' is required: {said} {what[key]}")
    keys_text, keys_format = None, "pem"
    if doc.keys is not None:
        if read_file is None:
            r.error(
                [*where, "keys"], f"cannot read {doc.keys!r}: the plan was not loaded from a file"
            )
        else:
            try:
                keys_text = read_file(doc.keys)
            except (OSError, ValueError) as exc:
                r.error([*where, "keys"], f"cannot read {doc.keys!r}: {exc}")
        if keys_text is not None:
            keys_format, problem = _key_format(keys_text)
            if problem:
                r.error([*where, "keys"], f"{doc.keys}: {problem}")
                keys_text = None
    algorithms: tuple[JwtAlgorithm, ...] = doc.algorithms or ()  # type: ignore[assignment]
    if not algorithms and keys_text is not None:
        algorithms = (_default_algorithm(keys_text, keys_format),)
    if (
        doc.issuer is None
        or doc.audience is None
        or doc.keys is None
        or keys_text is None
        or not algorithms
    ):
        return None
    return JwtAuth(
        issuer=doc.issuer,
        audience=doc.audience,
        algorithms=algorithms,
        keys_file=doc.keys,
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


def _api_key(doc: ApiKeyDoc, r: Reading, api: Api, where: list[str | int]) -> ApiKeyAuth | None:
    header, query = doc.header, doc.query
    if header is not None and query is not None:
        r.error(where, "give either 'header' or 'query', not both")
        return None
    if header is None and query is None:
        schemes = [s for s in _schemes(api, "apiKey") if s.location in ("header", "query")]
        if not schemes:
            r.error(
                where,
                "'header' or 'query' is required: the description's securitySchemes have no "
                "apiKey scheme in a header or query parameter",
            )
            return None
        header = schemes[0].param_name if schemes[0].location == "header" else None
        query = schemes[0].param_name if schemes[0].location == "query" else None
    return ApiKeyAuth(header=header, query=query, keys_env=doc.keys_env)


def _rate_limit(doc: RateLimitDoc) -> RateLimit:
    key, _, header = doc.key.partition(":")
    return RateLimit(requests=doc.requests, window=doc.window, key=key, header=header or None)  # type: ignore[arg-type]


RATE_LIMITED = 429
"""The status every renderer has a gateway answer past the plan's rate limit."""
AUTH_REFUSALS = (401, 403)
"""The statuses a gateway refuses a missing or wrong credential with (403: a JWT of another
audience on Envoy)."""


def check_workloads(policies: PolicySet, workloads: list[Workload], api: Api, r: Reading) -> None:
    """Each workload against its operation's policies (the module's docstring)."""
    ops = {op.operation_id: op for op in api.operations}
    for w in workloads:
        p = policies.for_operation(w.operation_id)
        refusals = [
            *((RATE_LIMITED, "its rate limit"),) * (p.rate_limit is not None),
            *((s, "its authentication") for s in AUTH_REFUSALS if p.auth is not None),
        ]
        for status, policy in refusals:
            if status in w.expect:
                r.problems.append(
                    Problem(
                        w.pointer + "/expect",
                        f"expect lists {status}, the status the plan's policies refuse "
                        f"{w.operation_id!r} with ({policy}): a gateway's own {status} carries "
                        "no answer of the backend, so a listed one would count as a wrong "
                        "answer; leave it out (the report counts "
                        + (
                            "the rate limit's refusals apart, as rate-limited, not as errors)"
                            if status == RATE_LIMITED
                            else "such refusals as errors)"
                        ),
                        source=r.source,
                    )
                )
        limit, op = p.rate_limit, ops.get(w.operation_id)
        if limit is None or limit.key != "header" or limit.header is None or op is None:
            continue
        if limit.header.lower() not in _sent_headers(w, op, p):
            r.problems.append(
                Problem(
                    w.pointer,
                    f"the rate limit of {w.operation_id!r} counts per value of the header "
                    f"{limit.header}, which this workload does not send: nginx, HAProxy, "
                    "Envoy and Traefik count no request without it, so refuse none (Kong "
                    "counts it by client address, KrakenD refuses it with 429); add it to "
                    "headers to measure the limit",
                    "warning",
                    source=r.source,
                )
            )


def _sent_headers(w: Workload, op: Operation, p: Policies) -> set[str]:
    """The headers (lower case) every request of ``w`` carries: the plan's, the operation's
    header parameters it writes, and the API key of the policy when it travels in a header."""
    given = {name for name, _ in w.params}
    sent = {name.lower() for name, _ in w.headers}
    sent |= {h.name.lower() for h in op.header_params if h.required or h.name in given}
    if isinstance(p.auth, ApiKeyAuth) and p.auth.header:
        sent.add(p.auth.header.lower())
    if isinstance(p.auth, JwtAuth):
        sent.add("authorization")
    return sent


__all__ = ["ReadFile", "check_workloads", "read_policies"]
