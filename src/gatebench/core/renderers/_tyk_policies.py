"""Tyk's policies, with Tyk Gateway 5.8's own middleware (no plugin), checked against Tyk's
API definition schema and a transcription of its ``apidef`` structs
(tests/golden/test_policy_goldens.py):

- Cache: the API's ``cache_options`` (``enable_cache``, ``cache_all_safe_requests: false`` so
  only the listed endpoints are cached, ``cache_response_codes: [200]``, the backend's
  ``Cache-Control`` ignored, ``cache_by_headers`` = the policies' vary headers) and one
  ``extended_paths.advance_cache_config`` entry per cached operation and method: the same
  anchored path regex as its allow-list entry, ``timeout`` = the TTL in whole seconds. Tyk's
  key is the method, the path and the whole query (plus the listed headers' values); the
  entries live in the Redis beside Tyk.

What Tyk 5.8 cannot do natively is declared in ``TykRenderer.policy_gaps``: its JWT middleware
checks no issuer or audience; API keys live in Redis, created through the control API; its
open-source rate limits count per key or for the whole API, never per client address or
header; the cache key always holds the query; one header list per API.
"""

from __future__ import annotations

from typing import Any

from gatebench.core.errors import Problem, UnsupportedFeature
from gatebench.core.policies import PolicySet

POINTER = "/x-gatebench/policies"


def cache_settings(
    cached: list[tuple[str, str, str, float]], policies: PolicySet
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``cache_options`` and the ``advance_cache_config`` entries for ``cached``: (operationId,
    method, path regex, TTL) of every cached operation. Raises :class:`UnsupportedFeature`
    for what Tyk cannot express."""
    problems: list[Problem] = []
    entries: list[dict[str, Any]] = []
    for op_id, method, regex, ttl in cached:
        if ttl != int(ttl) or ttl < 1:
            problems.append(
                Problem(
                    POINTER,
                    f"tyk: operation {op_id!r}: Tyk's cache timeout is whole seconds (at least "
                    f"1); got {ttl:g}s",
                )
            )
            continue
        entries.append(
            {
                "disabled": False,
                "method": method,
                "path": regex,
                "cache_key_regex": "",
                "cache_response_codes": [200],
                "timeout": int(ttl),
            }
        )
    header_lists = {
        tuple(v.split(":", 1)[1] for v in p.cache.vary if v.startswith("header:"))
        for p in policies.all_policies()
        if p.cache is not None
    }
    if len(header_lists) > 1:
        problems.append(
            Problem(
                POINTER,
                "tyk: Tyk varies its cache key on one list of headers per API "
                "(cache_by_headers); the policies ask for different ones: "
                + "; ".join(", ".join(h) or "none" for h in sorted(header_lists)),
            )
        )
    if problems:
        raise UnsupportedFeature(problems)
    headers = next(iter(header_lists), ())
    options = {
        "enable_cache": True,
        "cache_timeout": entries[0]["timeout"] if entries else 60,
        "cache_all_safe_requests": False,
        "cache_response_codes": [200],
        "enable_upstream_cache_control": False,
        "cache_control_ttl_header": "",
        "cache_by_headers": list(headers),
    }
    return options, entries


__all__ = ["cache_settings"]
