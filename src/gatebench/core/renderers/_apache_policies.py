"""Apache httpd's policies, with the modules Debian and the official image ship (no add-on):

- Cache: mod_cache with the shared-memory store (mod_cache_socache + mod_socache_shmcb),
  ``CacheQuickHandler off`` so that routing runs first: a cached route's ``RewriteRule`` on the
  raw request line sets ``gatebench_cache`` and clears ``no-cache``, which every request gets
  first (mod_cache neither serves nor stores a request that keeps it). mod_cache stores a response to a request with
  ``Authorization`` only when it says ``public``: ``Header set Cache-Control "public,
  max-age=TTL"`` on the cached routes, before the cache saves it. One TTL per configuration.
- Cache key variants: ``path_only`` is ``CacheIgnoreQueryString On``; a ``vary`` header is
  ``Header merge Vary NAME`` on the cached routes' responses, so mod_cache stores one variant
  per value of that request header (the HTTP caching rule it implements).
- API key: per route, ``RewriteCond expr "! sha1(req('NAME')) -in {...}"`` (a query parameter
  is first copied into a variable with a ``RewriteRule [E=...]``) and ``RewriteRule ^ -
  [R=401,L]``: the configuration holds SHA-1 hashes (the strongest hash Apache's expressions
  have; a key has at least 16 characters), never a key. Absent or wrong: 401 before the
  cache or the proxy.
- No JWT (mod_auth_openidc is not part of httpd) and no request rate limit (mod_ratelimit
  limits bandwidth): a plan that asks for either leaves Apache out.
"""

from __future__ import annotations

from gatebench.core.api_keys import checked_keys, sha1_hex
from gatebench.core.errors import Problem, UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.policies import ApiKeyAuth, Cache, PolicySet
from gatebench.core.renderers._base import RenderTarget
from gatebench.core.renderers._routes import Route, routes_for

_MODULES = (
    ("cache_module", "mod_cache.so"),
    ("cache_socache_module", "mod_cache_socache.so"),
    ("socache_shmcb_module", "mod_socache_shmcb.so"),
    ("headers_module", "mod_headers.so"),
)


def _request_line(route: Route) -> str:
    regex = route.regex(param="[^/?\\x20]+", anchor_start="", anchor_end="(?:\\x3f|\\x20)")
    return f"^{route.method}\\x20{regex}"


def apply_apache_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    text = files["httpd.conf"]
    caches: dict[Cache, list[str]] = {}
    keyed: dict[ApiKeyAuth, list[str]] = {}
    for route in routes_for(api):
        p = policies.for_operation(route.operation_id)
        if p.cache is not None and route.method in p.cache.methods:
            caches.setdefault(p.cache, []).append(_request_line(route))
        if isinstance(p.auth, ApiKeyAuth):
            keyed.setdefault(p.auth, []).append(_request_line(route))
    if len(caches) > 1:
        raise UnsupportedFeature(
            [Problem("/x-gatebench/policies", "apache shares one cache TTL between all routes")]
        )
    loads = ""
    block = ""
    if keyed:
        block += _api_key_block(keyed)
    if caches:
        ((cache, patterns),) = caches.items()
        loads = "".join(f"LoadModule {m} modules/{f}\n" for m, f in _MODULES)
        block += _cache_block(cache, patterns)
    marker = "LoadModule proxy_http_module modules/mod_proxy_http.so\n"
    proxy = "\nProxyPass / "
    assert marker in text and proxy in text
    text = text.replace(marker, marker + loads, 1)
    head, tail = text.split(proxy, 1)
    text = head + block + proxy + tail
    return {**files, "httpd.conf": text}


def _api_key_block(keyed: dict[ApiKeyAuth, list[str]]) -> str:
    out = "\n# Policies (gatebench.core.policies): API keys, compared as SHA-1 hashes.\n"
    for n, (auth, patterns) in enumerate(keyed.items()):
        hashes = ",".join(f"'{sha1_hex(k)}'" for k in checked_keys(auth, "apache"))
        if auth.header is not None:
            presented = f"req('{auth.header}')"
        else:
            assert auth.query is not None
            name = auth.query.replace(".", "\\.")
            out += (
                f"RewriteRule ^ - [E=gb_api_key{n}:]\n"
                f"RewriteCond %{{QUERY_STRING}} (?:^|&){name}=([^&]*)\n"
                f"RewriteRule ^ - [E=gb_api_key{n}:%1]\n"
            )
            presented = f"reqenv('gb_api_key{n}')"
        for pattern in patterns:
            out += (
                f"RewriteCond %{{THE_REQUEST}} {pattern}\n"
                f'RewriteCond expr "! sha1({presented}) -in {{{hashes}}}"\n'
                "RewriteRule ^ - [R=401,L]\n"
            )
    return out


def _cache_block(cache: Cache, patterns: list[str]) -> str:
    ttl = max(1, int(cache.ttl))
    rules = "".join(
        f"RewriteCond %{{THE_REQUEST}} {p}\nRewriteRule ^ - [E=!no-cache,E=gatebench_cache:{ttl}]\n"
        for p in patterns
    )
    vary = "".join(
        f"Header merge Vary {part[len('header:') :]} env=gatebench_cache\n"
        for part in cache.vary
        if part.startswith("header:")
    )
    return (
        "\n# Policies (gatebench.core.policies): the cache of the cached routes only.\n"
        "CacheQuickHandler off\n"
        "CacheSocache shmcb\n"
        "CacheSocacheMaxSize 1048576\n"
        "CacheEnable socache /\n"
        f"CacheDefaultExpire {ttl}\n"
        f"CacheMaxExpire {ttl}\n"
        "CacheIgnoreNoLastMod On\n"
        + ("CacheIgnoreQueryString On\n" if "query" not in cache.vary else "")
        + "CacheHeader off\n"
        "RewriteRule ^ - [E=no-cache:1]\n"
        f"{rules}"
        f'Header set Cache-Control "public, max-age={ttl}" env=gatebench_cache\n'
        f"{vary}"
    )


__all__ = ["apply_apache_policies"]
