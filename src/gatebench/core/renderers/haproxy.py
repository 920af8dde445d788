"""HAProxy: one frontend that names the matched route in a variable, 404 when none.

Mapping rules (tests/golden/haproxy/README.md says the same in prose):

- The routes are one map file (``routes.map``: a key ``^METHOD:regex`` per route, in priority
  order, its value the route's name) looked up once per request with ``map_reg`` on
  ``METHOD:path``: the regexes are tried in file order, the first match wins, and the result
  for a key already seen comes from HAProxy's pattern cache (``tune.pattern.cache-size``). One
  ``http-request`` rule per route, as before, fetched and matched the path again for every
  rule: at 10,000 routes on one core a request cost enough CPU that 200 a second queued for
  seconds (docs/benchmarks.md, "Route scale"). ``path`` is the raw path without the query
  string, so matching sees what the client sent.
- No route → ``http-request return status 404``; otherwise the default backend, one server,
  connections reused (``http-reuse always``: HAProxy's default, ``safe``, opens a new backend
  connection for the first request of every client connection, so a client that connects per
  request never reuses one; ``option http-keep-alive``), idle ones purged after 60 s at the
  earliest (``pool-purge-delay``).
- Regexes are made only of letters, digits, ``\\xHH`` escapes and regex syntax (no white
  space, quote or ``#``), so no spec string can end a map key, add a line or start a comment.
- Headers, ``Host`` included, and bodies pass unchanged; no ``X-Forwarded-For`` is added.
- ``maxconn 4000`` (this machine's hard limit on file descriptors is 20000), ``nbthread`` =
  the target's cores; the pid file lives in the workdir; no ``log`` line, so no access log.
- TLS (``target.tls``): ``bind ... ssl crt`` with the run's chain and key in one PEM,
  ``ssl-min-ver TLSv1.2``, ``gatebench.core.tls``'s TLS 1.2 ciphers, ALPN ``h2,http/1.1`` or
  ``http/1.1``; resumption off is ``no-tls-tickets`` plus ``tune.ssl.cachesize 0``.
- Replicas (``target.replicas``): one ``server`` per replica, ``balance roundrobin`` or
  ``leastconn``, active checks (``option httpchk GET /__gatebench__/health``, ``inter 1s fall 2
  rise 2``) and HAProxy's passive check (``observe layer4 error-limit 1 on-error mark-down``).
  The common retry policy: ``retries 2`` with ``option redispatch 1`` (every retry on another
  server, with no turn-around wait; without it HAProxy retried the same dead server three
  times, a second apart), ``retry-on conn-failure empty-response response-timeout`` and
  ``http-request disable-l7-retry`` unless the method is idempotent (a request already sent
  is resent only then; a failed connection is retried for any method).
"""

from __future__ import annotations

from typing import ClassVar

from gatebench.core.ir import Api
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import (
    HEALTH_FALL,
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_RISE,
    HEALTH_TIMEOUT_S,
    IDEMPOTENT_METHODS,
    PASSIVE_FAILS,
    RETRY_TRIES,
)
from gatebench.core.renderers._haproxy_policies import apply_haproxy_policies
from gatebench.core.renderers._parity import (
    IDLE_TIMEOUT_S,
    LISTEN_BACKLOG,
    MAX_CONNECTIONS,
    Parity,
    VendorPage,
)
from gatebench.core.renderers._routes import route_names
from gatebench.core.tls import SERVER_PEM, openssl_ciphers

ROUTES_MAP = "routes.map"
"""The route table: one ``^METHOD:regex name`` line per route, looked up with ``map_reg``."""


def _tls(target: RenderTarget) -> str:
    if target.backend_scheme != "https":
        return ""
    return f" ssl verify required ca-file @system-ca sni str({target.backend_host})"


class HaproxyRenderer(Renderer):
    name = "haproxy"
    description = "HAProxy in HTTP mode: method + raw-path regexes in one map, one backend"
    gateway_version = "2.6"
    output_files = ("haproxy.cfg", ROUTES_MAP)
    runs_here = True
    cloud_image = "haproxy:2.6.12"
    # -dW: zero-warning mode, a warning fails the check like an error.
    check_command: ClassVar[tuple[str, ...] | None] = (
        "haproxy",
        "-c",
        "-dW",
        "-f",
        "{workdir}/haproxy.cfg",
    )
    run_command: ClassVar[tuple[str, ...] | None] = (
        "haproxy",
        "-db",
        "-f",
        "{workdir}/haproxy.cfg",
    )
    readiness_timeout = 10.0
    install_hint = "run `scripts/setup.sh apt` (Debian package haproxy)"
    live_change = LiveChange(
        "signal",
        "HAProxy seamless reload: SIGUSR2 to the master (master-worker mode); the new worker "
        "takes the listening sockets over from the old one (expose-fd listeners), which "
        "finishes its connections",
        signal="SIGUSR2",
    )
    supported_policies: ClassVar[frozenset[str]] = frozenset(
        {
            "auth.api_key",
            "auth.jwt",
            "cache",
            "rate_limit.address",
            "rate_limit.header",
            "rate_limit.subject",
        }
    )
    apply_policies = staticmethod(apply_haproxy_policies)

    health_checks = "active + passive"
    cores_setting = "nbthread {workers}"

    parity = Parity(
        cores="`nbthread` = cores (one thread per core, HAProxy's default when it sees them)",
        pools="backend connections unlimited (no `maxconn` per server, `pool-max-conn` -1); "
        "`maxconn 4000` clients",
        keepalive="`timeout http-keep-alive 60s`, no request limit; `http-reuse always`, a "
        "departure from the manual's recommended `safe` (which dials per client connection's "
        "first request, where every other gateway here reuses any idle backend connection; the "
        "manual keeps `always` for a path that never breaks them, and asks for a low "
        "`http-keep-alive` with it, not done here: the same 60 s as the others); idle backend "
        "connections purged after `pool-purge-delay 60s` at the earliest",
        timeouts="`timeout connect 10s`, `timeout server 300s`",
        bodies="streamed (HTTP mode never buffers a whole body)",
        logs="no `log` line: no access log; no stats socket (except for live changes)",
        routes="one `map_reg` lookup per request in a map of `METHOD:regex` keys, tried in "
        "order, the first match wins; results cached by `tune.pattern.cache-size` (a rule per "
        "route fetched and matched the path once per route)",
        retries=f"`retries {RETRY_TRIES - 1}`, `option redispatch 1` (each retry on another "
        "server; without it the retries went to the same server, after a turn-around of up to "
        "1 s each), `retry-on conn-failure empty-response response-timeout`, "
        "`http-request disable-l7-retry` unless the method is idempotent (requests over "
        "`tune.bufsize`, 64 KiB, are not resent once sent)",
        pages=(
            VendorPage(
                "HAProxy 2.6 Configuration Manual",
                "https://docs.haproxy.org/2.6/configuration.html",
            ),
            VendorPage(
                "HAProxy 2.6 Management Guide",
                "https://docs.haproxy.org/2.6/management.html",
            ),
            VendorPage(
                "HAProxy 2.6: retry-on",
                "https://docs.haproxy.org/2.6/configuration.html#4-retry-on",
            ),
        ),
    )

    def render_live(self, api: Api, target: RenderTarget) -> dict[str, str]:
        """Master-worker mode, and a stats socket in the workdir that hands the listening
        sockets to the next worker (``expose-fd listeners``): the seamless reload. The socket's
        path is relative to the workdir (HAProxy runs there): a Unix socket's path holds at
        most 107 bytes, which a deep workdir would pass."""
        files = self.render(api, target)
        live = (
            "global\n"
            "    master-worker\n"
            "    stats socket unix@haproxy.sock mode 600 level admin "
            "expose-fd listeners\n"
        )
        files["haproxy.cfg"] = files["haproxy.cfg"].replace("global\n", live, 1)
        return files

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        names = route_names(routes)
        entries = []
        for route in routes:
            regex = route.regex(param="[^/]+", anchor_start="")
            entries.append(f"^{route.method}:{regex} {names[route.index]}")
        text = f"""\
# HAProxy {self.gateway_version} configuration rendered by gatebench: {len(routes)} route(s).
# Generated file; re-render instead of editing.
global
    maxconn {MAX_CONNECTIONS}
    nbthread {target.workers}
    pidfile {target.path("haproxy.pid")}
    tune.bufsize 65536
    tune.http.maxhdr 256{_global_tls(target)}

defaults
    mode http
    timeout connect 10s
    timeout client 300s
    timeout server 300s
    timeout http-request 30s
    timeout http-keep-alive {IDLE_TIMEOUT_S}s
    option http-keep-alive
    backlog {LISTEN_BACKLOG}
    # Reuse any idle backend connection, also for a client connection's first request
    # (the default, safe, dials anew for each client that opens a connection per request).
    http-reuse always
    # Idle backend connections are purged no sooner than the others keep theirs.
    default-server pool-purge-delay {IDLE_TIMEOUT_S}s

frontend gatebench
    bind {target.listen_address}{_bind_tls(target)}
    # Method and raw path (query excluded) -> route: routes.map's regex keys in order, the
    # first match wins; a key seen before is answered from the pattern cache.
    http-request set-var(txn.gatebench_path) path
    http-request set-var(txn.gatebench_route) method,concat(:,txn.gatebench_path),map_reg({target.path(ROUTES_MAP)})
    http-request return status 404 content-type text/plain string "no route" unless {{ var(txn.gatebench_route) -m found }}
    default_backend gatebench_backend

backend gatebench_backend
{_servers(target)}
"""
        header = f"# {len(routes)} route(s): METHOD:path regex, route name; first match wins.\n"
        return as_files(
            {"haproxy.cfg": text, ROUTES_MAP: header + "".join(e + "\n" for e in entries)}
        )


def _servers(target: RenderTarget) -> str:
    if not target.pooled:
        return f"    server backend {target.backend_host}:{target.backend_port}{_tls(target)}"
    lines = [
        f"    balance {'leastconn' if target.balance == 'least_conn' else 'roundrobin'}",
        f"    option httpchk GET {HEALTH_PATH}",
        f"    timeout check {HEALTH_TIMEOUT_S}s",
        f"    default-server check inter {HEALTH_INTERVAL_S}s fall {HEALTH_FALL} rise {HEALTH_RISE} "
        f"observe layer4 error-limit {PASSIVE_FAILS} on-error mark-down",
        # The common retry policy: a failed connection goes to another server for any method;
        # a request sent without an answer only when idempotent.
        f"    retries {RETRY_TRIES - 1}",
        "    option redispatch 1",
        "    retry-on conn-failure empty-response response-timeout",
        "    http-request disable-l7-retry unless { method " + " ".join(IDEMPOTENT_METHODS) + " }",
    ]
    lines += [
        f"    server r{n} {host}:{port}" for n, (host, port) in enumerate(target.upstreams, 1)
    ]
    return "\n".join(lines)


def _global_tls(target: RenderTarget) -> str:
    if target.tls is None or target.tls.resumption:
        return ""
    return "\n    tune.ssl.cachesize 0"


def _bind_tls(target: RenderTarget) -> str:
    tls = target.tls
    if tls is None:
        return ""
    tickets = "" if tls.resumption else " no-tls-tickets"
    return (
        f" ssl crt {tls.path(SERVER_PEM)} ssl-min-ver TLSv1.2 ciphers {openssl_ciphers()} "
        f"alpn {','.join(tls.alpn)}{tickets}"
    )
