"""Zuul 1 (Spring Cloud Netflix, ``@EnableZuulProxy``): one ``application.yml``.

Mapping rules (tests/golden/zuul/README.md says the same in prose):

- Zuul 1 routes by path only, with Ant patterns, first match wins. Each distinct route path
  becomes one entry of ``zuul.routes`` (``path<n>``, in priority order) with ``url`` = the
  backend origin and ``strip-prefix: false``. Its Ant pattern is the raw, percent-encoded path
  with every parameter written ``*`` and the hex digits of every ``%XX`` written ``??``: a
  superset of what the route matches, so it only decides which requests reach Zuul.
- The decision is exact: ``gatebench.operations`` lists every operation (method + Java regex
  from :meth:`Route.regex` over the raw path, ``\\xHH`` escapes, parameter ``[^/]+``) and the
  generic ``OperationMatchFilter`` in ``gateways/zuul/`` forwards a request only when one
  matches; otherwise 404, like a path no route matches.
- Zuul is told to leave the request alone: ``decode-url: false`` and
  ``remove-semicolon-content: false`` (match and forward the raw path),
  ``force-original-query-string-encoding`` (query as sent), ``sensitive-headers`` empty
  (``Authorization``, ``Cookie`` and ``Set-Cookie`` pass), ``add-host-header: true`` (``Host``
  kept), ``add-proxy-headers: false`` (no ``X-Forwarded-*``), ``FormBodyWrapperFilter`` and
  ``DebugFilter`` disabled, multipart parsing off (bodies stream unchanged), no discovered
  services. Pooled keep-alive connections to the backend (400), 300 s socket timeout.
- The file is written by a YAML serialiser; only reduced operation ids, escaped regexes and
  percent-encoded Ant patterns (where ``{`` cannot occur, so no ``${`` placeholder) reach it.
- Cannot express (located ``UnsupportedFeature``): a literal empty segment (``//``) or dot
  segment (``.``, ``..``), which Zuul's forwarding rewrites; a path Zuul itself refuses as
  insecure (``../`` or ``..\\`` once decoded, or a URL after the first ``/``); ``%00``, which
  Tomcat refuses.
- TLS (``target.tls``): Tomcat's connector with the run's PKCS#12 key store (Spring Boot 2.3
  reads no PEM), TLS 1.2 and 1.3, ``gatebench.core.tls``'s TLS 1.2 ciphers plus TLS 1.3's (JSSE
  takes one list for both), ``server.http2.enabled`` as asked. JSSE's server session cache
  and tickets cannot be switched off from a Spring configuration.
- No replicas: Zuul 1 balances only through Ribbon behind its ``RibbonRoutingFilter``, which
  re-encodes the query, drops a GET's body and adds ``Accept-Encoding``; the identical
  forwarding every gateway owes (``SimpleHostRoutingFilter``, adjusted in
  ``gateways/zuul/``) takes one host.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar
from urllib.parse import unquote

from gatebench.core.ir import Api
from gatebench.core.renderers._base import RenderTarget, as_files
from gatebench.core.renderers._jvm import (
    JIT_WARMUP,
    NO_RESUMPTION_GAP,
    JvmRenderer,
    assert_inert,
    dump_yaml,
)
from gatebench.core.renderers._parity import IDLE_TIMEOUT_S, LISTEN_BACKLOG, Parity, VendorPage
from gatebench.core.renderers._routes import Route, encode_literal, route_names
from gatebench.core.tls import SERVER_P12, STORE_PASSWORD, TLS12_CIPHERS, TLS13_CIPHERS

_HEADER_LIMIT = "64KB"
_URL_AFTER_SLASH = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:/|url:)")


def ant_pattern(route: Route) -> str:
    """A Zuul (Ant) path pattern matching at least the raw paths ``route`` matches."""
    segments = []
    for segment in route.segments:
        text = ""
        for piece in segment.pieces:
            if piece.is_param:
                text += "*"
            else:
                text += re.sub(r"%[0-9A-F]{2}", "%??", encode_literal(piece.text))
        segments.append(text)
    return "/" + "/".join(segments)


_NO_POOL = (
    "Zuul 1 balances only through Ribbon behind its RibbonRoutingFilter, which does not forward "
    "requests unchanged (it re-encodes the query, drops a GET's body, adds Accept-Encoding)"
)


_NO_METRICS = [
    "org.springframework.boot.actuate.autoconfigure.metrics.web.servlet.WebMvcMetricsAutoConfiguration",
    "org.springframework.boot.actuate.autoconfigure.metrics.web.tomcat.TomcatMetricsAutoConfiguration",
]
"""Spring Boot's per-request timer filter and Tomcat's meters, left out."""


def _pool_size(target: RenderTarget) -> int:
    """Tomcat's request threads and HttpClient's backend connections: the target's
    concurrency, never below Zuul's and Tomcat's default of 200."""
    return max(200, target.concurrency)


def zuul_limitation(route: Route) -> str | None:
    """Why Zuul 1 cannot forward this route unchanged, or None (beside what no JVM gateway
    forwards: ``JvmRenderer.route_limitation``)."""
    for segment in route.segments:
        if not segment.is_literal:
            continue
        decoded = unquote(encode_literal(segment.literal))
        if decoded in (".", ".."):
            return f"a {decoded!r} path segment, which it resolves away when forwarding"
    literal = "/".join(encode_literal(s.literal) for s in route.segments)
    decoded_path = unquote(literal)
    if "../" in decoded_path or "..\\" in decoded_path:
        return "'../' or '..\\' once decoded, which it refuses as an insecure path"
    if _URL_AFTER_SLASH.match(decoded_path):
        return "a URL right after the first '/', which it refuses as an insecure path"
    if "%00" in literal:
        return "'%00' (an encoded NUL), which Tomcat refuses"
    return None


class ZuulRenderer(JvmRenderer):
    name = "zuul"
    description = (
        "Zuul 1 (Spring Cloud Netflix Zuul proxy): Ant path routes + exact method/raw-path filter"
    )
    gateway_version = "1.3.1"
    product = "Zuul 1.3.1 (Spring Cloud Netflix 2.2.9: Spring Boot 2.3.12, Hoxton.SR12)"
    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls.no_resumption": NO_RESUMPTION_GAP,
        "pool.round_robin": _NO_POOL,
        "pool.least_conn": _NO_POOL,
    }
    health_checks = "none"

    parity = Parity(
        cores="`-XX:ActiveProcessorCount` = cores (Tomcat's NIO pollers and the JVM's "
        "threads follow)",
        pools="Tomcat `threads.max` and HttpClient `max-total-connections` / "
        "`max-per-route-connections` = concurrency (at least 200)",
        keepalive="Tomcat keep-alive 60 s, no request limit (Tomcat's default closes a "
        "connection after 100); backend connections kept until the backend closes them",
        timeouts="`connect-timeout-millis 10000`, `socket-timeout-millis 300000`",
        bodies="streamed (multipart and form parsing off)",
        logs="Spring Boot's request timer and Tomcat meters left out, every meter off; no "
        "access log",
        routes="Ant patterns, then one regex per operation in the application's filter",
        retries="none: it renders no pool of replicas (a plan with replicas leaves it out), "
        "so there is nowhere else to send a request",
        pages=(
            VendorPage(
                "Spring Cloud Netflix: Router and Filter: Zuul",
                "https://cloud.spring.io/spring-cloud-netflix/reference/html/#router-and-filter-zuul",
            ),
            VendorPage(
                "Apache Tomcat 9: the HTTP connector",
                "https://tomcat.apache.org/tomcat-9.0-doc/config/http.html",
            ),
        ),
        warmup=JIT_WARMUP,
    )

    def route_limitation(self, route: Route) -> str | None:
        return super().route_limitation(route) or zuul_limitation(route)

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        zuul_routes: dict[str, dict[str, Any]] = {}
        seen: set[str] = set()
        for route in routes:
            pattern = ant_pattern(route)
            if pattern in seen:
                continue
            seen.add(pattern)
            zuul_routes[f"path{len(zuul_routes)}"] = {
                "path": assert_inert(pattern, route.pointer),
                "url": target.backend_origin,
                "strip-prefix": False,
            }
        names = route_names(routes)
        operations = [
            {
                "id": names[route.index],
                "method": route.method,
                "path-regex": assert_inert(
                    route.regex(param="[^/]+", anchor_start="", anchor_end=""), route.pointer
                ),
            }
            for route in routes
        ]
        config: dict[str, Any] = {
            "server": {
                "address": target.listen_host,
                "port": target.listen_port,
                "max-http-header-size": _HEADER_LIMIT,
                "tomcat": {
                    "basedir": target.path("tomcat"),
                    "accept-count": LISTEN_BACKLOG,
                    # A request holds a Tomcat thread while Zuul forwards it.
                    "threads": {"max": _pool_size(target)},
                },
            },
            # Nothing measured per request: the actuator (which Zuul's starter brings, and the
            # refresh endpoint of live changes needs) keeps no meter and times no request.
            "management": {
                "metrics": {
                    "enable": {"all": False},
                    "web": {"server": {"request": {"autotime": {"enabled": False}}}},
                }
            },
            "spring": {
                "autoconfigure": {"exclude": _NO_METRICS},
                "main": {"banner-mode": "off"},
                "servlet": {"multipart": {"enabled": False}},
                "resources": {"add-mappings": False},
                "mvc": {"dispatch-trace-request": True},
            },
            "zuul": {
                "ignored-services": "*",
                "sensitive-headers": "",
                "add-host-header": True,
                "add-proxy-headers": False,
                "decode-url": False,
                "remove-semicolon-content": False,
                "force-original-query-string-encoding": True,
                "host": {
                    "max-total-connections": _pool_size(target),
                    "max-per-route-connections": _pool_size(target),
                    "connect-timeout-millis": 10000,
                    "socket-timeout-millis": 300000,
                },
                "FormBodyWrapperFilter": {"pre": {"disable": True}},
                "DebugFilter": {"pre": {"disable": True}},
                "routes": zuul_routes,
            },
            # Tomcat's keep-alive (the application's connector customizer; Spring Boot 2.3
            # has no property for them): 60 s idle, no request limit (Tomcat's default
            # closes a connection after 100 requests).
            "gatebench": {
                "operations": operations,
                "tomcat": {
                    "keep-alive-timeout": f"{IDLE_TIMEOUT_S}s",
                    "max-keep-alive-requests": -1,
                },
            },
        }
        if target.tls is not None:
            config["server"]["ssl"] = {
                "enabled": True,
                "key-store": target.tls.path(SERVER_P12),
                "key-store-type": "PKCS12",
                "key-store-password": STORE_PASSWORD,
                "key-alias": "gatebench",
                "enabled-protocols": "TLSv1.3,TLSv1.2",
                "ciphers": ",".join([*TLS13_CIPHERS, *TLS12_CIPHERS]),
            }
            config["server"]["http2"] = {"enabled": target.tls.http2}
        return as_files(
            {
                "application.yml": self.header(
                    f"{len(routes)} operation(s) on {len(zuul_routes)} Zuul route(s)"
                )
                + dump_yaml(config)
            }
        )
