"""Traefik's policies, with the middlewares of its open-source build (no plugin):

- Rate limit: a ``rateLimit`` middleware per router (operation) of the policy, a token
  bucket of ``average`` = requests per ``period`` = window with ``burst`` = requests, counted
  per client address (Traefik's default source) or per value of a request header
  (``sourceCriterion.requestHeaderName``); past the limit Traefik answers 429. One middleware
  per router, not one shared by the policy's routers, because the plan counts per operation:
  Traefik 3.7's in-memory limiter happens to give each router using a middleware its own
  buckets, but its Redis storage shares them per middleware, and upstream discusses aligning
  the two (traefik/traefik#13706); a middleware of its own keeps each operation's count
  apart either way. Traefik counts the requests without the header of a header limit in one
  shared bucket (an empty value is a key like any other), where nginx and HAProxy do not count
  them: a router of a header limit takes only the requests that carry the header
  (``HeaderRegexp(`NAME`, `.+`)``), with the middleware, and the route's own router, one
  priority step below, the rest, without it. Every router's priority is then doubled, so the
  pair sits where the route did.
- No JWT (the open-source build validates no token; ForwardAuth delegates to another
  service), no API key (its middlewares check user/password pairs, BasicAuth and DigestAuth,
  or delegate, ForwardAuth; the API Key middleware is Traefik Hub's, not Traefik Proxy's) and
  no cache: a plan that asks for any of them leaves Traefik out.
"""

from __future__ import annotations

from typing import Any

from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet, RateLimit
from gatebench.core.renderers._base import RenderTarget
from gatebench.core.renderers._routes import routes_for
from gatebench.core.renderers._yaml_out import dump_yaml, read_rendered


def _middleware(limit: RateLimit) -> dict[str, Any]:
    rate: dict[str, Any] = {
        "average": limit.requests,
        "period": f"{limit.window:g}s",
        "burst": limit.requests,
    }
    if limit.key == "header":
        rate["sourceCriterion"] = {"requestHeaderName": limit.header}
    return {"rateLimit": rate}


def apply_traefik_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    header, doc = read_rendered(files["dynamic.yml"])
    routers = doc["http"]["routers"]
    pairs = list(zip(routes_for(api), list(routers), strict=False))
    limits = {name: policies.for_operation(r.operation_id).rate_limit for r, name in pairs}
    keyed = any(limit is not None and limit.key == "header" for limit in limits.values())
    middlewares: dict[str, Any] = {}
    out: dict[str, Any] = {}
    for name, router in routers.items():
        limit = limits.get(name)
        if keyed and name in limits:
            router = {**router, "priority": 2 * router["priority"]}
        if limit is not None and limit.key == "header":
            assert limit.header is not None and "`" not in limit.header
            out[f"{name}-keyed"] = {
                **router,
                "rule": f"{router['rule']} && HeaderRegexp(`{limit.header}`, `.+`)",
                "priority": router["priority"] + 1,
                "middlewares": [f"gatebench-rate-limit-{name}"],
            }
        elif limit is not None:
            router = {**router, "middlewares": [f"gatebench-rate-limit-{name}"]}
        if limit is not None:
            middlewares[f"gatebench-rate-limit-{name}"] = _middleware(limit)
        out[name] = router
    doc["http"]["routers"] = out
    if middlewares:
        doc["http"]["middlewares"] = middlewares
    return {**files, "dynamic.yml": header + dump_yaml(doc)}


__all__ = ["apply_traefik_policies"]
