"""Spring Cloud Gateway 5.0 (WebFlux server): one ``application.yml``, one route per operation.

Mapping rules (tests/golden/spring-cloud-gateway/README.md says the same in prose):

- Routes live under ``spring.cloud.gateway.server.webflux.routes``, one per IR route, in
  priority order (the gateway takes the first route whose predicates all hold). Each has id
  ``r<priority>_<operationId reduced to [A-Za-z0-9_]>``, ``uri`` = the backend origin, and two
  predicates: ``Method`` (the one method) and ``RawPath``, gatebench's generic predicate in
  ``gateways/spring-cloud-gateway/`` that matches a Java regex against the whole raw request
  path. Spring's own ``Path`` predicate is not used: PathPattern matches the decoded path with
  matrix parameters (``;...``) cut off, so it cannot match a literal ``;`` nor a parameter
  value holding one, and it matches ``/users/me;x`` as ``/users/me``.
- The regex is :meth:`Route.regex` (raw, percent-encoded literal text with every character
  other than ASCII letters and digits written ``\\xHH``; a parameter is ``[^/]+``), so PathPattern
  syntax (``{``, ``*``, ``**``), Spring placeholders (``${``) and SpEL (``#{``) cannot occur.
- No route → the gateway's own 404. The request URI is forwarded as received (no
  ``StripPrefix``/``RewritePath``); ``PreserveHostHeader`` keeps ``Host``; the Forwarded and
  X-Forwarded header filters are off. Bodies stream (no caching filter), keep-alive pool to
  the backend, request line and headers up to 64 KB.
- The file is written by a YAML serialiser; nothing from the spec but the escaped regex and
  the reduced operation id reaches it.
- Cannot express (located ``UnsupportedFeature``): a literal empty segment (``//``), which
  the gateway merges into one ``/`` when it builds the backend request.
- TLS (``target.tls``): Spring Boot's SSL bundle ``gatebench`` (PEM: the run's chain and key)
  on the server, TLS 1.2 and 1.3, ``gatebench.core.tls``'s TLS 1.2 ciphers plus TLS 1.3's
  (JSSE takes one list for both), ``server.http2.enabled`` as asked. JSSE's server session
  cache and tickets cannot be switched off from a Spring configuration.
- Replicas (``target.replicas``): every route's ``uri`` is ``lb://gatebench-backend``, a
  service whose instances are the replicas (Spring Cloud's simple discovery client), balanced
  by Spring Cloud LoadBalancer round robin with its health-check instance supplier
  (``/__gatebench__/health`` every second). It has no least-connections balancer.
  The common retry policy: a ``Retry`` filter (``retries: 2``, no status retried: ``series``
  and ``statuses`` empty, ``exceptions``: ``IOException``, a refused, reset or closed
  connection, and the gateway's response ``TimeoutException``) on every route whose method is
  idempotent and carries no body (GET, HEAD, OPTIONS, TRACE, DELETE); each retry passes the
  load balancer again (the next replica round robin, with no exclusion of the one that
  failed). The routes of POST, PUT and PATCH get none: the filter caches the whole body of
  every request of a route it guards (``enableBodyCaching``), where bodies must stream, so a
  failed connection of theirs is not resent.
- Live changes (``render_live``, docs/scale.md): with replicas, the health-check supplier
  also reads the pool's instances again every second (``refetch-instances``): it otherwise
  keeps the instances it read at start, and a refresh does not rebuild it, so a pool moved by
  a change would never be used.
"""

from __future__ import annotations

from typing import Any, ClassVar

from gatebench.core.ir import Api
from gatebench.core.renderers._base import RenderTarget, as_files
from gatebench.core.renderers._deployment import (
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    IDEMPOTENT_METHODS,
    RETRY_TRIES,
)
from gatebench.core.renderers._jvm import (
    JIT_WARMUP,
    NO_RESUMPTION_GAP,
    JvmRenderer,
    assert_inert,
    dump_yaml,
    java_command,
)
from gatebench.core.renderers._parity import IDLE_TIMEOUT_S, Parity, VendorPage
from gatebench.core.renderers._routes import route_names
from gatebench.core.tls import SERVER_CERT, SERVER_KEY, TLS12_CIPHERS, TLS13_CIPHERS

_HEADER_LIMIT = "64KB"
_SERVICE = "gatebench-backend"


class SpringCloudGatewayRenderer(JvmRenderer):
    name = "spring-cloud-gateway"
    aliases = ("scg", "spring")
    description = (
        "Spring Cloud Gateway (WebFlux server): raw-path regex + Method predicate per route"
    )
    gateway_version = "5.0.3"
    product = "Spring Cloud Gateway 5.0.3 (Spring Boot 4.1.1, Spring Cloud 2025.1.3)"
    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls.no_resumption": NO_RESUMPTION_GAP,
        "pool.least_conn": "Spring Cloud LoadBalancer balances round robin or at random only",
    }
    health_checks = "active"
    # Reactor Netty's event loops: one per core given (its default is the processor count,
    # at least 4, which only oversubscribes a small share).
    run_command: ClassVar[tuple[str, ...] | None] = java_command(
        "-Dreactor.netty.ioWorkerCount={workers}"
    )
    cores_setting = "-XX:ActiveProcessorCount={workers}, reactor.netty.ioWorkerCount {workers}"

    parity = Parity(
        cores="`-XX:ActiveProcessorCount` = cores; Reactor Netty's `ioWorkerCount` = cores "
        "(its default is the processor count, at least 4)",
        pools="`httpclient.pool.type: elastic` (no limit), `max-idle-time 60s`",
        keepalive="`server.netty.idle-timeout 60s`; no request limit",
        timeouts="`httpclient.connect-timeout 10000`, `response-timeout 300s`",
        bodies="streamed (no filter caches a body)",
        logs="the gateway's `metrics` and `observability` off, Spring Boot's observations and "
        "meters off; no access log",
        routes="one route per operation (`Method` and a raw-path regex), tried in order",
        retries=f"a `Retry` filter on the routes of GET, HEAD, OPTIONS, TRACE and DELETE: "
        f"`retries: {RETRY_TRIES - 1}`, `series`/`statuses` empty (no answer retried), "
        "`exceptions: IOException, TimeoutException`; each retry through the load balancer "
        "again (round robin, the failed replica not excluded). Cannot follow the policy for "
        "POST, PUT, PATCH: the filter caches the whole body of a route it guards, so those "
        "routes get no retry (a refused connection is a 5xx)",
        pages=(
            VendorPage(
                "Spring Cloud Gateway: HTTP client and metrics configuration",
                "https://docs.spring.io/spring-cloud-gateway/reference/spring-cloud-gateway-server-webflux/",
            ),
            VendorPage(
                "Reactor Netty reference: event loop resources",
                "https://projectreactor.io/docs/netty/release/reference/",
            ),
            VendorPage(
                "Retry GatewayFilter Factory",
                "https://docs.spring.io/spring-cloud-gateway/reference/"
                "spring-cloud-gateway-server-webflux/gatewayfilter-factories/retry-factory.html",
            ),
        ),
        warmup=JIT_WARMUP,
    )

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        names = route_names(routes)
        scg_routes: list[dict[str, Any]] = []
        for route in routes:
            regex = route.regex(param="[^/]+", anchor_start="", anchor_end="")
            scg_routes.append(
                {
                    "id": names[route.index],
                    "uri": f"lb://{_SERVICE}" if target.pooled else target.backend_origin,
                    "predicates": [
                        {"name": "Method", "args": {"methods": route.method}},
                        {
                            "name": "RawPath",
                            "args": {"regexp": assert_inert(regex, route.pointer)},
                        },
                    ],
                    **_retry(target, route.method),
                }
            )
        webflux: dict[str, Any] = {
            "x-forwarded": {"enabled": False},
            "forwarded": {"enabled": False},
            "httpclient": {
                "connect-timeout": 10000,
                "response-timeout": "300s",
                "max-initial-line-length": _HEADER_LIMIT,
                "max-header-size": _HEADER_LIMIT,
                # Unbounded (elastic) keep-alive pool; an idle connection is kept 60 s.
                "pool": {"type": "elastic", "max-idle-time": f"{IDLE_TIMEOUT_S}s"},
            },
            # No per-request metrics or observations (the gateway's own filters).
            "metrics": {"enabled": False},
            "observability": {"enabled": False},
            "default-filters": ["PreserveHostHeader"],
            "routes": scg_routes,
        }
        config: dict[str, Any] = {
            "server": {
                "address": target.listen_host,
                "port": target.listen_port,
                "max-http-request-header-size": _HEADER_LIMIT,
                "netty": {
                    "max-initial-line-length": _HEADER_LIMIT,
                    "idle-timeout": f"{IDLE_TIMEOUT_S}s",
                },
            },
            # Nothing measured per request: Spring Boot's server and client observations and
            # every meter off (the actuator stays for the refresh endpoint of live changes).
            "management": {
                "metrics": {"enable": {"all": False}},
                "observations": {
                    "enable": {
                        "http.server.requests": False,
                        "http.client.requests": False,
                        "spring.cloud.gateway": False,
                    }
                },
            },
            "spring": {
                "main": {"banner-mode": "off"},
                "web": {"resources": {"add-mappings": False}},
                "cloud": {"gateway": {"server": {"webflux": webflux}}},
            },
        }
        if target.tls is not None:
            tls = target.tls
            config["server"]["ssl"] = {
                "bundle": "gatebench",
                "enabled-protocols": ["TLSv1.3", "TLSv1.2"],
                "ciphers": [*TLS13_CIPHERS, *TLS12_CIPHERS],
            }
            config["server"]["http2"] = {"enabled": tls.http2}
            config["spring"]["ssl"] = {
                "bundle": {
                    "pem": {
                        "gatebench": {
                            "keystore": {
                                "certificate": f"file:{tls.path(SERVER_CERT)}",
                                "private-key": f"file:{tls.path(SERVER_KEY)}",
                            }
                        }
                    }
                }
            }
        if target.pooled:
            config["spring"]["cloud"]["discovery"] = {
                "client": {
                    "simple": {
                        "instances": {
                            _SERVICE: [
                                {"uri": f"http://{host}:{port}"} for host, port in target.upstreams
                            ]
                        }
                    }
                }
            }
            config["spring"]["cloud"]["loadbalancer"] = {
                "configurations": "health-check",
                "cache": {"enabled": False},
                "health-check": {
                    "initial-delay": "0s",
                    "interval": f"{HEALTH_INTERVAL_S}s",
                    "path": {"default": HEALTH_PATH},
                },
            }
        return as_files(
            {"application.yml": self.header(f"{len(routes)} route(s)") + dump_yaml(config)}
        )

    def live_settings(self, config: dict[str, Any], target: RenderTarget) -> None:
        if target.pooled:
            config["spring"]["cloud"]["loadbalancer"]["health-check"].update(
                {"refetch-instances": True, "refetch-instances-interval": f"{HEALTH_INTERVAL_S}s"}
            )


_BODILESS = tuple(m for m in IDEMPOTENT_METHODS if m != "PUT")
"""The idempotent methods whose requests carry no body: the routes a ``Retry`` filter may
guard without caching a body (it caches every body of the routes it guards)."""
_RETRIED = "java.io.IOException, org.springframework.cloud.gateway.support.TimeoutException"


def _retry(target: RenderTarget, method: str) -> dict[str, Any]:
    """With replicas, the common retry policy (``_deployment.RETRY_TRIES``) on a route of an
    idempotent method without a body: a failed connection (refused, reset, closed) or the
    response timeout is retried; an answer, whatever its status, is not."""
    if not target.pooled or method not in _BODILESS:
        return {}
    return {
        "filters": [
            {
                "name": "Retry",
                "args": {
                    "retries": RETRY_TRIES - 1,
                    "methods": method,
                    "series": "",
                    "statuses": "",
                    "exceptions": _RETRIED,
                },
            }
        ]
    }
