"""KrakenD's policies, with the components of KrakenD CE (no plugin), checked against its
official schema (tests/golden/test_policy_goldens.py):

- JWT: ``auth/validator`` on each endpoint of the policy: ``alg``, ``issuer``, ``audience``,
  keys from ``jwks.json`` written beside ``krakend.json`` (``jwk_local_path``; a PEM key is
  converted to a JWKS), ``disable_jwk_security`` (a local file, not a URL), no key cache.
  KrakenD picks the key by the token's ``kid`` and finds none for a token without one (the
  tokens gatebench signs carry none): a set of one key also holds that key without a ``kid``,
  so both kinds of token find it.
- Rate limit: ``qos/ratelimit/router`` per endpoint with a client counter:
  ``client_max_rate`` = requests per ``every`` = window, ``client_capacity`` = requests,
  ``strategy`` ``ip`` or ``header`` (``key``: the header).
- No cache with a TTL: KrakenD's ``qos/http-cache`` follows the backend's ``Cache-Control``
  and takes no TTL, so a cache policy leaves KrakenD out; no per-subject counter either.
"""

from __future__ import annotations

import json
from typing import Any

from gatebench.core.policies import JwtAuth, Policies, RateLimit
from gatebench.core.renderers._envoy_policies import as_jwks

JWKS_FILE = "jwks.json"


def endpoint_policies(p: Policies, jwks_path: str) -> dict[str, Any]:
    """The ``extra_config`` entries of one endpoint."""
    extra: dict[str, Any] = {}
    if isinstance(p.auth, JwtAuth):
        extra["auth/validator"] = {
            "alg": p.auth.algorithms[0],
            "issuer": p.auth.issuer,
            "audience": [p.auth.audience],
            "jwk_local_path": jwks_path,
            "disable_jwk_security": True,
            "cache": False,
        }
    if p.rate_limit is not None:
        extra["qos/ratelimit/router"] = _rate_limit(p.rate_limit)
    return extra


def _rate_limit(limit: RateLimit) -> dict[str, Any]:
    out: dict[str, Any] = {
        "client_max_rate": limit.requests,
        "client_capacity": limit.requests,
        "every": f"{limit.window:g}s",
        "strategy": "ip" if limit.key == "address" else "header",
    }
    if limit.key == "header":
        out["key"] = limit.header
    return out


def jwks_text(policies: list[Policies]) -> str | None:
    keys = {as_jwks(p.auth) for p in policies if isinstance(p.auth, JwtAuth)}
    if len(keys) > 1:
        raise ValueError("one set of JWT keys per configuration")
    text = next(iter(keys), None)
    return None if text is None else _without_kid_too(text)


def _without_kid_too(text: str) -> str:
    """A set of one key with a ``kid``: the same key without one added, for tokens that carry
    no ``kid`` (KrakenD looks keys up by the token's ``kid``, "" when it has none)."""
    document = json.loads(text)
    keys = document.get("keys")
    if not isinstance(keys, list) or len(keys) != 1 or not isinstance(keys[0], dict):
        return text
    if "kid" not in keys[0]:
        return text
    bare = {k: v for k, v in keys[0].items() if k != "kid"}
    return json.dumps({**document, "keys": [keys[0], bare]}, separators=(",", ":"))


__all__ = ["JWKS_FILE", "endpoint_policies", "jwks_text"]
