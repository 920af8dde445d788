"""HAProxy's policies, with HAProxy's own fetches, stick tables and cache (no Lua, no add-on):

- JWT (HAProxy 2.5+): ``http_auth_bearer`` takes the token; ``jwt_header_query('$.alg')`` must
  be one of the policy's algorithms, ``jwt_verify`` checks the signature against the PEM public
  key written beside the configuration (``jwt-<n>.pem``; HAProxy reads no JWKS), and
  ``jwt_payload_query`` checks ``iss``, ``aud`` (a single string) and ``exp`` against
  ``date()``. A missing, expired, wrongly signed or wrongly issued token gets 401, a wrong
  audience 403, answered by HAProxy (``http-request return``) before any backend rule.
- API key: the header (``req.fhdr``, the whole value) or query parameter (``url_param``) is
  hashed with ``sha2(256)`` and compared with the SHA-256 of each valid key: the configuration
  holds hashes, never a key. Absent or wrong: 401 from HAProxy, before any rate limit counts.
- Rate limit: one stick table per policy (``st_rl<n>`` backend), counting per operation and
  key (the plan's rule): the tracked key is the route's number and the client address
  (``src``), a request header, or the token's ``sub`` (``r<index>@<key>``). The table counts
  the requests it lets through, not the ones it refuses (as nginx's, Envoy's and Traefik's
  limits do): ``gpc0_rate`` over the sliding ``window``, raised by ``sc-inc-gpc0`` after the
  deny rule; a request that finds ``requests`` already let through within the window gets 429.
- Cache: one ``cache`` section per TTL policy (``max-age``), used and stored in the backend for
  the cached routes' GET/HEAD; HAProxy keys it on host, path and query.

Each policy group is an ACL on the route variable the routing rules set, so a request gets
exactly the policies of its operation.
"""

from __future__ import annotations

from gatebench.core.api_keys import checked_keys, sha256_hex
from gatebench.core.ir import Api
from gatebench.core.policies import ApiKeyAuth, Cache, JwtAuth, Policies, PolicySet, RateLimit
from gatebench.core.renderers._base import RenderTarget
from gatebench.core.renderers._routes import route_names, routes_for

_CARRIED = "x-gatebench-validated-authorization"


def _route_values(api: Api) -> list[tuple[str, str, str]]:
    """(operationId, method, the route variable's value) in rule order, as ``haproxy.render``
    names them."""
    routes = routes_for(api)
    names = route_names(routes)
    return [(r.operation_id, r.method, names[r.index]) for r in routes]


def _refuse(status: int, reason: str) -> str:
    extra = ' hdr WWW-Authenticate "Bearer"' if status == 401 else ""
    return f'http-request return status {status} content-type text/plain string "{reason}"{extra}'


def apply_haproxy_policies(
    files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
) -> dict[str, str]:
    text = files["haproxy.cfg"]
    groups: dict[Policies, list[str]] = {}
    cached: dict[Cache, list[tuple[str, str]]] = {}
    for op_id, method, value in _route_values(api):
        p = policies.for_operation(op_id)
        if p.empty:
            continue
        groups.setdefault(p, []).append(value)
        if p.cache is not None and method in p.cache.methods:
            cached.setdefault(p.cache, []).append((value, method))
    frontend: list[str] = []
    tables: list[str] = []
    extra_files: dict[str, str] = {}
    keys: dict[str, str] = {}
    for n, (p, values) in enumerate(groups.items()):
        acl = f"gb_policy{n}"
        frontend.append(f"    acl {acl} var(txn.gatebench_route) -m str {' '.join(values)}")
        if isinstance(p.auth, ApiKeyAuth):
            frontend.extend(_api_key_rules(p.auth, acl, n))
        if isinstance(p.auth, JwtAuth):
            if p.auth.keys not in keys:
                keys[p.auth.keys] = f"jwt-{len(keys)}.pem"
                extra_files[keys[p.auth.keys]] = p.auth.keys
            frontend.extend(_jwt_rules(p.auth, acl, target.path(keys[p.auth.keys])))
            if p.cache is not None:
                # HAProxy's cache ignores a request that carries Authorization: the validated
                # token travels under another name past the cache and is restored after it.
                frontend.append(
                    f"    http-request set-header {_CARRIED} %[req.hdr(authorization)] if {acl}"
                )
                frontend.append(f"    http-request del-header authorization if {acl}")
        if p.rate_limit is not None:
            table = f"st_rl{n}"
            tables.append(_table(table, p.rate_limit))
            frontend.extend(_limit_rules(p.rate_limit, acl, table))
    caches: list[str] = []
    backend: list[str] = []
    for n, (cache, routes) in enumerate(cached.items()):
        name = f"gb_cache{n}"
        caches.append(
            f"cache {name}\n    total-max-size 64\n    max-object-size 1048576\n"
            f"    max-age {max(1, int(cache.ttl))}\n"
        )
        cond = f"{{ var(txn.gatebench_route) -m str {' '.join(sorted({v for v, _ in routes}))} }}"
        backend.append(f"    http-request cache-use {name} if {cond}")
        # HAProxy stores only a response with freshness information (RFC 7234 section 3).
        backend.append(
            f'    http-response set-header cache-control "public, max-age={max(1, int(cache.ttl))}" '
            f"if {cond}"
        )
        backend.append(f"    http-response cache-store {name} if {cond}")
    if cached:
        backend.append(
            f"    http-request set-header authorization %[req.hdr({_CARRIED})] "
            f"if {{ req.hdr({_CARRIED}) -m found }}"
        )
        backend.append(f"    http-request del-header {_CARRIED}")
    marker = "    default_backend gatebench_backend\n"
    assert marker in text
    text = text.replace(
        marker,
        "    # Policies (gatebench.core.policies), per operation group.\n"
        + "\n".join(frontend)
        + "\n"
        + marker,
    )
    server = "\nbackend gatebench_backend\n"
    text = text.replace(server, server + "".join(line + "\n" for line in backend))
    tail = "".join("\n" + t for t in tables) + "".join("\n" + c for c in caches)
    return {**files, "haproxy.cfg": text.rstrip("\n") + "\n" + tail, **extra_files}


def _jwt_rules(auth: JwtAuth, acl: str, key_path: str) -> list[str]:
    algs = " ".join(auth.algorithms)
    return [
        f"    http-request set-var(txn.gb_bearer) http_auth_bearer if {acl}",
        f"    {_refuse(401, 'missing token')} if {acl} !{{ var(txn.gb_bearer) -m found }}",
        f"    http-request set-var(txn.gb_alg) var(txn.gb_bearer),jwt_header_query('$.alg') if {acl}",
        f"    {_refuse(401, 'algorithm refused')} if {acl} !{{ var(txn.gb_alg) -m str {algs} }}",
        f"    {_refuse(401, 'bad signature')} if {acl} "
        f'!{{ var(txn.gb_bearer),jwt_verify(txn.gb_alg,"{key_path}") -m int 1 }}',
        f"    {_refuse(401, 'wrong issuer')} if {acl} "
        f"!{{ var(txn.gb_bearer),jwt_payload_query('$.iss') -m str \"{auth.issuer}\" }}",
        f"    {_refuse(403, 'wrong audience')} if {acl} "
        f"!{{ var(txn.gb_bearer),jwt_payload_query('$.aud') -m str \"{auth.audience}\" }}",
        f"    http-request set-var(txn.gb_exp) var(txn.gb_bearer),jwt_payload_query('$.exp','int') if {acl}",
        f"    http-request set-var(txn.gb_now) date() if {acl}",
        f"    {_refuse(401, 'token expired')} if {acl} !{{ var(txn.gb_exp) -m found }}",
        f"    {_refuse(401, 'token expired')} if {acl} {{ var(txn.gb_exp),sub(txn.gb_now) -m int le 0 }}",
    ]


def _api_key_rules(auth: ApiKeyAuth, acl: str, n: int) -> list[str]:
    fetch = f"req.fhdr({auth.header})" if auth.header is not None else f"url_param({auth.query})"
    hashes = " ".join(sha256_hex(k) for k in checked_keys(auth, "haproxy"))
    return [
        f"    acl gb_api_key{n} {fetch},sha2(256),hex,lower -m str {hashes}",
        "    http-request return status 401 content-type text/plain string "
        f'"invalid or missing API key" if {acl} !gb_api_key{n}',
    ]


def _table(name: str, limit: RateLimit) -> str:
    # "r<route>@" before an address (at most 45 characters) or a value (128 kept, as before).
    kind = "string len 64" if limit.key == "address" else "string len 144"
    window = f"{max(1, int(limit.window * 1000))}ms"
    return (
        f"backend {name}\n"
        f"    stick-table type {kind} size 100k expire {window} store gpc0_rate({window})\n"
    )


def _limit_rules(limit: RateLimit, acl: str, table: str) -> list[str]:
    """Track ``"r<route index>@<client key>"``: one table counts each operation apart. An absent
    header or ``sub`` sets no key, and nothing is counted (as before). Only a request past the
    deny rule raises the count: a refused request must not push the client's rate further over
    the limit (``http_req_rate`` would count it, and a client a little over the limit would get
    almost nothing through)."""
    if limit.key == "address":
        key = "src"
    elif limit.key == "header":
        key = f"req.hdr({limit.header})"
    else:
        key = "var(txn.gb_bearer),jwt_payload_query('$.sub')"
    counted = f"{acl} {{ var(txn.gb_rl_key) -m found }}"
    return [
        f"    http-request set-var(txn.gb_rl_key) {key} if {acl}",
        f"    http-request track-sc0 var(txn.gatebench_route),field(1,_),concat(@,txn.gb_rl_key) "
        f"table {table} if {counted}",
        f"    {_refuse(429, 'rate limit exceeded')} if {acl} "
        f"{{ sc_gpc0_rate(0,{table}) ge {limit.requests} }}",
        f"    http-request sc-inc-gpc0(0) if {counted}",
    ]


__all__ = ["apply_haproxy_policies"]
