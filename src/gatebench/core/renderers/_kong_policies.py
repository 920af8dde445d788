"""Kong's policies, with plugins bundled in Kong Gateway 3.9 open source (no custom plugin),
attached to the routes of the operations that have them (``plugins:`` nested in each route of
the declarative file), checked against a transcription of the plugins' own schemas
(tests/golden/test_policy_goldens.py):

- Rate limit: ``rate-limiting`` with ``policy: local`` (counters in the node's shared memory,
  every worker counting together), ``limit_by: ip`` or ``limit_by: header`` + ``header_name``.
  Kong counts fixed windows of a calendar second, minute, hour or day (``second: N``, ...):
  a window of 1 s, 60 s, 3600 s or 86400 s maps to one of them; any other window is refused
  (Kong cannot count it). A request past the limit gets 429. A plugin on a route counts that
  route's requests: the limit holds per operation. A request without the header of a
  ``limit_by: header`` limit is counted by its client address (Kong's documented fallback).
- Cache: ``proxy-cache`` with ``strategy: memory`` on the cached routes: ``cache_ttl`` = the
  TTL (whole seconds), ``request_method`` = the policy's methods that route serves,
  ``response_code: [200]``, every content type (``*/*``, bare or with ``charset=utf-8``:
  Kong wants the parameters to match too), ``cache_control: false`` (the TTL
  decides, not the backend's headers). Kong's key is the route, the method, the path and
  every query argument; ``vary_headers`` adds the policy's headers.

What Kong's bundled plugins cannot do is declared in ``KongRenderer.policy_gaps`` (the
exclusion reason says it): JWT (no audience check), API keys from the environment, a
per-subject limit, a cache key without the query.
"""

from __future__ import annotations

from typing import Any

from gatebench.core.errors import Problem, UnsupportedFeature
from gatebench.core.policies import Cache, Policies, RateLimit

POINTER = "/x-gatebench/policies"
WINDOWS: dict[float, str] = {1.0: "second", 60.0: "minute", 3600.0: "hour", 86400.0: "day"}
"""The windows Kong's rate-limiting counts, in seconds → its config field."""
CONTENT_TYPES = ("*/*", "*/*; charset=utf-8", "*/*; charset=UTF-8")
"""proxy-cache stores a response whose media type matches one of these with exactly the same
parameters: every type, bare or with the usual charset."""


def route_plugins(p: Policies, method: str, operation_id: str) -> list[dict[str, Any]]:
    """The ``plugins`` of one route: what its operation's policies need, in a fixed order.
    Raises :class:`UnsupportedFeature` for a value Kong cannot express."""
    plugins: list[dict[str, Any]] = []
    if p.rate_limit is not None:
        plugins.append({"name": "rate-limiting", "config": _rate_limit(p.rate_limit, operation_id)})
    if p.cache is not None and method in p.cache.methods:
        plugins.append({"name": "proxy-cache", "config": _cache(p.cache, method, operation_id)})
    return plugins


def _rate_limit(limit: RateLimit, operation_id: str) -> dict[str, Any]:
    period = WINDOWS.get(limit.window)
    if period is None:
        raise UnsupportedFeature(
            [
                Problem(
                    POINTER,
                    f"kong: operation {operation_id!r}: Kong's rate-limiting counts fixed "
                    f"windows of one second, minute, hour or day; got a window of "
                    f"{limit.window:g}s",
                )
            ]
        )
    config: dict[str, Any] = {
        period: limit.requests,
        "limit_by": "ip" if limit.key == "address" else "header",
    }
    if limit.key == "header":
        config["header_name"] = limit.header
    config.update(
        {
            "policy": "local",
            "fault_tolerant": False,
            "hide_client_headers": False,
            "error_code": 429,
        }
    )
    return config


def _cache(cache: Cache, method: str, operation_id: str) -> dict[str, Any]:
    if cache.ttl != int(cache.ttl) or cache.ttl < 1:
        raise UnsupportedFeature(
            [
                Problem(
                    POINTER,
                    f"kong: operation {operation_id!r}: proxy-cache takes a TTL in whole "
                    f"seconds (at least 1); got {cache.ttl:g}s",
                )
            ]
        )
    config: dict[str, Any] = {
        "strategy": "memory",
        "cache_ttl": int(cache.ttl),
        "request_method": [method],
        "response_code": [200],
        "content_type": list(CONTENT_TYPES),
        "cache_control": False,
    }
    headers = [v.split(":", 1)[1] for v in cache.vary if v.startswith("header:")]
    if headers:
        config["vary_headers"] = headers
    return config


__all__ = ["CONTENT_TYPES", "WINDOWS", "route_plugins"]
