"""nginx's policies, with the modules of the open-source build (no njs, no add-on):

- Rate limit: ``limit_req`` with one zone per policy, counting per operation and key (the
  plan's rule): a ``map`` of the route variable gives the policy's routes the key
  ``"r<index>:<client>"``, the route's number and the client address (``$binary_remote_addr``)
  or a header's value (``$http_<name>``), and the empty string elsewhere or when the header
  is absent (nginx counts no empty key). One zone, not one per operation: nginx sizes each
  zone's shared memory (10 MB, about 160,000 counters) whatever the number of operations.
  nginx's limit is a leaky bucket: ``rate`` = requests / window (per minute, to the nearest
  whole number, when that is not a whole number per second) and ``burst`` = requests − 1 with
  ``nodelay``, so ``requests`` pass at once and the next one within the window gets 429
  (``limit_req_status``). One request per window has no ``burst`` (nginx refuses
  ``burst=0``). nginx counts whole requests per second or per minute only: a limit below one
  request per minute leaves nginx out (:func:`nginx_policy_limits`), never raised to 1r/m.
- Cache: ``proxy_cache`` with one zone (files in the workdir), key ``$scheme$proxy_host
  $request_uri`` (path and query), ``proxy_cache_valid 200`` = the TTL; the routes without the
  policy bypass it and store nothing (``proxy_cache_bypass`` / ``proxy_no_cache`` on a map of
  the route variable). One TTL per configuration: ``proxy_cache_valid`` is per location and
  every route shares one.
- API key: a ``map`` of the route variable to ``"<n>:$http_<name>"`` (or ``$arg_<name>``) for
  the routes of policy ``n`` (``-`` elsewhere), and a second ``map`` of that value to "refused":
  case-sensitive regexes ``^<n>:(?:key|key)$`` (nginx's plain ``map`` strings ignore case),
  ``-`` and the listed keys pass, anything else (absent, wrong) gets 401 in the rewrite phase,
  before the rate limit counts and the cache answers. The keys are in the file (open-source
  nginx compares no hash): a run's stored copy is redacted (``gatebench.core.api_keys``).
- Cache key variants: ``path_only`` keys on the raw path without the query (a ``map`` of
  ``$request_uri``), ``vary`` headers append ``$http_<name>`` per header.
- No JWT: open-source nginx has no token validation (``auth_jwt`` is NGINX Plus); a plan that
  asks for it leaves nginx out.
"""

from __future__ import annotations

from gatebench.core.api_keys import checked_keys
from gatebench.core.errors import Problem, UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.policies import ApiKeyAuth, Cache, PolicySet, RateLimit
from gatebench.core.renderers._base import RenderTarget
from gatebench.core.renderers._routes import route_names, routes_for


def _route_values(api: Api) -> list[tuple[str, str, str]]:
    routes = routes_for(api)
    names = route_names(routes)
    return [(r.operation_id, r.method, names[r.index]) for r in routes]


def _rate(limit: RateLimit) -> str:
    per_second = limit.requests / limit.window
    if per_second >= 1 and per_second == int(per_second):
        return f"{int(per_second)}r/s"
    reason = _slow_limit(limit)
    if reason is not None:
        raise UnsupportedFeature([Problem("/x-gatebench/policies", f"nginx cannot apply {reason}")])
    return f"{round(limit.requests * 60 / limit.window)}r/m"


def _slow_limit(limit: RateLimit) -> str | None:
    """Why nginx cannot count ``limit``: its ``rate`` is a whole number of requests per second
    or per minute, so the slowest it counts is 1r/m."""
    if limit.requests * 60 / limit.window >= 1:
        return None
    return (
        f"a rate limit of {limit.requests} per {limit.window:g}s (limit_req counts whole "
        "requests per second or per minute, at least 1r/m; this limit is "
        f"{limit.requests * 60 / limit.window:.3g} per minute)"
    )


def nginx_policy_limits(policies: PolicySet) -> tuple[str, ...]:
    """The rate limits of ``policies`` slower than nginx counts (``Renderer.policy_limits``)."""
    reasons = (
        _slow_limit(p.rate_limit) for p in policies.all_policies() if p.rate_limit is not None
    )
    return tuple(dict.fromkeys(r for r in reasons if r is not None))


def apply_nginx_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    text = files["nginx.conf"]
    limits: dict[RateLimit, list[str]] = {}
    caches: dict[Cache, list[str]] = {}
    keyed: dict[ApiKeyAuth, list[str]] = {}
    for op_id, method, value in _route_values(api):
        p = policies.for_operation(op_id)
        if isinstance(p.auth, ApiKeyAuth):
            keyed.setdefault(p.auth, []).append(value)
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
    http: list[str] = ["    # Policies (gatebench.core.policies)."]
    location: list[str] = []
    refuse: list[str] = []
    if keyed:
        http.extend(_api_key_maps(keyed))
        refuse = [
            "            if ($gb_api_key_refused) {",
            "                return 401;",
            "            }",
        ]
    for n, (limit, values) in enumerate(limits.items()):
        http.extend(_limit_key_maps(n, limit, values))
        http.append(f"    limit_req_zone $gb_rl{n}_key zone=gb_rl{n}:10m rate={_rate(limit)};")
        burst = f" burst={limit.requests - 1} nodelay" if limit.requests > 1 else ""
        location.append(f"            limit_req zone=gb_rl{n}{burst};")
    if limits:
        location.append("            limit_req_status 429;")
    for cache, values in caches.items():
        http.append("    map $gatebench_route $gb_no_cache {")
        http.append("        default 1;")
        http.extend(f"        {v} 0;" for v in values)
        http.append("    }")
        if "query" not in cache.vary:
            http.append("    map $request_uri $gb_request_path {")
            http.append('        "~^(?<gb_path>[^?]*)" $gb_path;')
            http.append("    }")
        http.append(
            f"    proxy_cache_path {target.path('cache')} levels=1:2 keys_zone=gb_cache:10m "
            "max_size=64m inactive=10m use_temp_path=off;"
        )
        location.extend(
            [
                "            proxy_cache gb_cache;",
                f"            proxy_cache_key {_cache_key(cache)};",
                f"            proxy_cache_methods {' '.join(cache.methods)};",
                f"            proxy_cache_valid 200 {max(1, int(cache.ttl))}s;",
                "            proxy_cache_bypass $gb_no_cache;",
                "            proxy_no_cache $gb_no_cache;",
            ]
        )
    marker = "    upstream gatebench_backend {"
    proxy = "            proxy_http_version 1.1;\n"
    unrouted = (
        '            if ($gatebench_route = "") {\n                return 404;\n            }\n'
    )
    assert marker in text and proxy in text and unrouted in text
    text = text.replace(unrouted, unrouted + "".join(line + "\n" for line in refuse), 1)
    text = text.replace(marker, "\n".join(http) + "\n\n" + marker, 1)
    text = text.replace(proxy, proxy + "".join(line + "\n" for line in location), 1)
    return {**files, "nginx.conf": text}


def _limit_key_maps(n: int, limit: RateLimit, values: list[str]) -> list[str]:
    """``$gb_rl<n>_key``: ``"<route>:<client key>"`` on the limit's routes, empty elsewhere and
    when the counted header is absent (nginx counts no empty key). The route part makes one
    zone count each operation apart."""
    routes = [(v, v.split("_", 1)[0]) for v in values]
    if limit.key == "address":
        return [
            f"    map $gatebench_route $gb_rl{n}_key {{",
            '        default "";',
            *(f'        {v} "{r}:$binary_remote_addr";' for v, r in routes),
            "    }",
        ]
    header = (limit.header or "").lower().replace("-", "_").replace(".", "_")
    return [
        f"    map $gatebench_route $gb_rl{n}_route {{",
        '        default "";',
        *(f"        {v} {r};" for v, r in routes),
        "    }",
        f'    map "$gb_rl{n}_route:$http_{header}" $gb_rl{n}_key {{',
        '        default "";',
        f'        "~^r[0-9]+:." "$gb_rl{n}_route:$http_{header}";',
        "    }",
    ]


def _variable(prefix: str, name: str, what: str) -> str:
    """``$http_x_api_key`` / ``$arg_api_key``: nginx variable names are ``[A-Za-z0-9_]``."""
    if prefix == "http_":
        name = name.lower().replace("-", "_")
    if not name.replace("_", "").isalnum() or not name.isascii():
        raise UnsupportedFeature(
            [
                Problem(
                    "/x-gatebench/policies",
                    f"nginx cannot read the {what} {name!r}: its variables take letters, "
                    "digits, '_' (and '-' in a header name) only",
                )
            ]
        )
    return f"${prefix}{name}"


def _api_key_maps(keyed: dict[ApiKeyAuth, list[str]]) -> list[str]:
    presented = ["    map $gatebench_route $gb_api_key {", '        default "-";']
    refused = ["    map $gb_api_key $gb_api_key_refused {", "        default 1;", '        "-" 0;']
    for n, (auth, values) in enumerate(keyed.items()):
        if auth.header is not None:
            source = _variable("http_", auth.header, "header")
        else:
            assert auth.query is not None
            source = _variable("arg_", auth.query, "query parameter")
        presented.extend(f'        {v} "{n}:{source}";' for v in values)
        # A key is A-Za-z0-9-._~ only (gatebench.core.api_keys): '.' is the one regex character;
        # a quoted nginx string turns "\\." into the regex's "\.".
        alternatives = "|".join(k.replace(".", "\\\\.") for k in checked_keys(auth, "nginx"))
        refused.append(f'        "~^{n}:(?:{alternatives})$" 0;')
    return [*presented, "    }", *refused, "    }"]


def _cache_key(cache: Cache) -> str:
    key = "$scheme$proxy_host" + ("$request_uri" if "query" in cache.vary else "$gb_request_path")
    for part in cache.vary:
        if part.startswith("header:"):
            key += "|" + _variable("http_", part[len("header:") :], "header")
    return key


__all__ = ["apply_nginx_policies", "nginx_policy_limits"]
