"""Apache httpd's policies, with the modules Debian and the official image ship (no add-on):

- Cache: mod_cache with the shared-memory store (mod_cache_socache + mod_socache_shmcb),
  ``CacheQuickHandler off`` so that routing runs first: a cached route's ``RewriteRule`` on the
  raw request line sets ``gatebench_cache`` and clears ``no-cache``, which every request gets
  first (mod_cache neither serves nor stores a request that keeps it). mod_cache stores a response to a request with
  ``Authorization`` only when it says ``public``: ``Header set Cache-Control "public,
  max-age=TTL"`` on the cached routes, before the cache saves it. One TTL per configuration.
- No JWT (mod_auth_openidc is not part of httpd) and no request rate limit (mod_ratelimit
  limits bandwidth): a plan that asks for either leaves Apache out.
"""

from __future__ import annotations

from ..errors import Problem, UnsupportedFeature
from ..ir import Api
from ..policies import Cache, PolicySet
from ._base import RenderTarget
from ._routes import routes_for

_MODULES = (
    ("cache_module", "mod_cache.so"),
    ("cache_socache_module", "mod_cache_socache.so"),
    ("socache_shmcb_module", "mod_socache_shmcb.so"),
    ("headers_module", "mod_headers.so"),
)


def apply_apache_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    text = files["httpd.conf"]
    caches: dict[Cache, list[str]] = {}
    for route in routes_for(api):
        cache = policies.for_operation(route.operation_id).cache
        if cache is not None and route.method in cache.methods:
            regex = route.regex(param="[^/?\\x20]+", anchor_start="", anchor_end="(?:\\x3f|\\x20)")
            caches.setdefault(cache, []).append(f"^{route.method}\\x20{regex}")
    if len(caches) != 1:
        raise UnsupportedFeature(
            [Problem("/x-gatebench/policies", "apache shares one cache TTL between all routes")]
        )
    ((cache, patterns),) = caches.items()
    ttl = max(1, int(cache.ttl))
    loads = "".join(f"LoadModule {m} modules/{f}\n" for m, f in _MODULES)
    rules = "".join(
        f"RewriteCond %{{THE_REQUEST}} {p}\nRewriteRule ^ - [E=!no-cache,E=gatebench_cache:{ttl}]\n"
        for p in patterns
    )
    block = (
        "\n# Policies (gatebench.policies): the cache of the cached routes only.\n"
        "CacheQuickHandler off\n"
        "CacheSocache shmcb\n"
        "CacheSocacheMaxSize 1048576\n"
        "CacheEnable socache /\n"
        f"CacheDefaultExpire {ttl}\n"
        f"CacheMaxExpire {ttl}\n"
        "CacheIgnoreNoLastMod On\n"
        "CacheHeader off\n"
        "RewriteRule ^ - [E=no-cache:1]\n"
        f"{rules}"
        f'Header set Cache-Control "public, max-age={ttl}" env=gatebench_cache\n'
    )
    marker = "LoadModule proxy_http_module modules/mod_proxy_http.so\n"
    proxy = "\nProxyPass / "
    assert marker in text and proxy in text
    text = text.replace(marker, marker + loads, 1)
    head, tail = text.split(proxy, 1)
    text = head + block + proxy + tail
    return {**files, "httpd.conf": text}


__all__ = ["apply_apache_policies"]
