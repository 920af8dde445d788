"""nginx's policies, with the modules of the open-source build (no njs, no add-on):

- Rate limit: ``limit_req`` with one zone per policy, keyed by a ``map`` of the route variable
  to the client address (``$binary_remote_addr``) or a header (``$http_<name>``) for the
  policy's routes and to the empty string elsewhere (nginx counts no empty key). nginx's limit
  is a leaky bucket: ``rate`` = requests / window (per minute when that is not a whole number
  per second) and ``burst`` = requests − 1 with ``nodelay``, so ``requests`` pass at once and
  the next one within the window gets 429 (``limit_req_status``).
- Cache: ``proxy_cache`` with one zone (files in the workdir), key ``$scheme$proxy_host
  $request_uri`` (path and query), ``proxy_cache_valid 200`` = the TTL; the routes without the
  policy bypass it and store nothing (``proxy_cache_bypass`` / ``proxy_no_cache`` on a map of
  the route variable). One TTL per configuration: ``proxy_cache_valid`` is per location and
  every route shares one.
- No JWT: open-source nginx has no token validation (``auth_jwt`` is NGINX Plus); a plan that
  asks for it leaves nginx out.
"""

from __future__ import annotations

from ..errors import Problem, UnsupportedFeature
from ..ir import Api
from ..policies import Cache, PolicySet, RateLimit
from ._base import RenderTarget
from ._routes import identifier, routes_for


def _route_values(api: Api) -> list[tuple[str, str, str]]:
    names: set[str] = set()
    return [
        (r.operation_id, r.method, f"r{r.index}_{identifier(r.operation_id, taken=names)}")
        for r in routes_for(api)
    ]


def _rate(limit: RateLimit) -> str:
    per_second = limit.requests / limit.window
    if per_second >= 1 and per_second == int(per_second):
        return f"{int(per_second)}r/s"
    return f"{max(1, round(limit.requests * 60 / limit.window))}r/m"


def apply_nginx_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    text = files["nginx.conf"]
    limits: dict[RateLimit, list[str]] = {}
    caches: dict[Cache, list[str]] = {}
    for op_id, method, value in _route_values(api):
        p = policies.for_operation(op_id)
        if p.rate_limit is not None:
            limits.setdefault(p.rate_limit, []).append(value)
        if p.cache is not None and method in p.cache.methods:
            caches.setdefault(p.cache, []).append(value)
    if len(caches) > 1:
        raise UnsupportedFeature(
            [
                Problem(
                    "/x-gatebench/policies",
                    "nginx shares one cache TTL between all routes (proxy_cache_valid is per "
                    f"location); the plan asks for {len(caches)} different cache policies",
                )
            ]
        )
    http: list[str] = ["    # Policies (gatebench.policies)."]
    location: list[str] = []
    for n, (limit, values) in enumerate(limits.items()):
        header = (limit.header or "").lower().replace("-", "_").replace(".", "_")
        key = "$binary_remote_addr" if limit.key == "address" else f"$http_{header}"
        http.append(f"    map $gatebench_route $gb_rl{n}_key {{")
        http.append('        default "";')
        http.extend(f"        {v} {key};" for v in values)
        http.append("    }")
        http.append(f"    limit_req_zone $gb_rl{n}_key zone=gb_rl{n}:10m rate={_rate(limit)};")
        location.append(f"            limit_req zone=gb_rl{n} burst={limit.requests - 1} nodelay;")
    if limits:
        location.append("            limit_req_status 429;")
    for cache, values in caches.items():
        http.append("    map $gatebench_route $gb_no_cache {")
        http.append("        default 1;")
        http.extend(f"        {v} 0;" for v in values)
        http.append("    }")
        http.append(
            f"    proxy_cache_path {target.path('cache')} levels=1:2 keys_zone=gb_cache:10m "
            "max_size=64m inactive=10m use_temp_path=off;"
        )
        location.extend(
            [
                "            proxy_cache gb_cache;",
                "            proxy_cache_key $scheme$proxy_host$request_uri;",
                f"            proxy_cache_methods {' '.join(cache.methods)};",
                f"            proxy_cache_valid 200 {max(1, int(cache.ttl))}s;",
                "            proxy_cache_bypass $gb_no_cache;",
                "            proxy_no_cache $gb_no_cache;",
            ]
        )
    marker = "    upstream gatebench_backend {"
    proxy = "            proxy_http_version 1.1;\n"
    assert marker in text and proxy in text
    text = text.replace(marker, "\n".join(http) + "\n\n" + marker, 1)
    text = text.replace(proxy, proxy + "".join(line + "\n" for line in location), 1)
    return {**files, "nginx.conf": text}


__all__ = ["apply_nginx_policies"]
