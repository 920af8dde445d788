"""Traefik Proxy 3 with the file provider: static ``traefik.yml`` plus dynamic ``dynamic.yml``.

Mapping rules (tests/golden/traefik/README.md says the same in prose):

- Static configuration: one entry point (``web``) on the target's address, the file provider
  reading ``dynamic.yml`` from the workdir, no dashboard or API, no version check or usage
  reporting, 300 s timeouts.
- Dynamic configuration: one router per operation, rule ``Method(`M`) &&
  PathRegexp(`regex`)``, ``priority`` = route count minus the route's priority position
  (Traefik tries higher first; literal segments therefore outrank templates), all to one
  service with ``passHostHeader: true``. Traefik answers 404 when no router matches.
- Regexes are anchored, made of letters, digits, ``\\xHH`` escapes and regex syntax; each
  percent-encoded character of a literal is also accepted decoded (written as itself), as
  Traefik matches the decoded path. Backtick-quoted inside the rule; a regex can never
  contain a backtick. Files are written by a YAML serialiser.
- Traefik cannot run here (its Go modules are refused by the registry proxy); it runs on
  the cloud path in the official image.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..ir import Api
from ._base import Renderer, RenderTarget, as_files
from ._routes import identifier
from .envoy import dump_yaml


class TraefikRenderer(Renderer):
    name = "traefik"
    description = "Traefik Proxy 3 (file provider): one Method && PathRegexp router per operation"
    gateway_version = "3.3"
    output_files = ("traefik.yml", "dynamic.yml")
    runs_here = False
    cloud_image = "traefik:v3.3.0"
    run_command: ClassVar[tuple[str, ...] | None] = (
        "traefik",
        "--configFile={workdir}/traefik.yml",
    )

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.routes(api)
        taken: set[str] = set()
        routers: dict[str, Any] = {}
        for route in routes:
            regex = route.regex(param="[^/]+", either=True)
            if "`" in regex:  # cannot happen: every backtick is written \x60
                raise AssertionError("backtick in a Traefik rule")
            routers[f"r{route.index}-{identifier(route.operation_id, taken=taken)}"] = {
                "entryPoints": ["web"],
                "rule": f"Method(`{route.method}`) && PathRegexp(`{regex}`)",
                "priority": len(routes) - route.index,
                "service": "backend",
            }
        dynamic = {
            "http": {
                "routers": routers,
                "services": {
                    "backend": {
                        "loadBalancer": {
                            "passHostHeader": True,
                            "servers": [{"url": target.backend_origin}],
                        }
                    }
                },
            }
        }
        static = {
            "global": {"checkNewVersion": False, "sendAnonymousUsage": False},
            "entryPoints": {
                "web": {
                    "address": target.listen_address,
                    "transport": {
                        "respondingTimeouts": {
                            "readTimeout": "300s",
                            "writeTimeout": "300s",
                            "idleTimeout": "60s",
                        }
                    },
                }
            },
            "providers": {"file": {"filename": target.path("dynamic.yml"), "watch": False}},
            "serversTransport": {
                "maxIdleConnsPerHost": 512,
                "forwardingTimeouts": {"responseHeaderTimeout": "300s"},
            },
            "log": {"level": "WARN"},
            "api": {"dashboard": False, "insecure": False},
        }
        head = "# Traefik {} {} rendered by gatebench: {} route(s).\n# Generated file; re-render instead of editing.\n"
        return as_files(
            {
                "traefik.yml": head.format(
                    self.gateway_version, "static configuration", len(routes)
                )
                + dump_yaml(static),
                "dynamic.yml": head.format(
                    self.gateway_version, "dynamic configuration", len(routes)
                )
                + dump_yaml(dynamic),
            }
        )
