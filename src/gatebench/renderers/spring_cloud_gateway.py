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
"""

from __future__ import annotations

from typing import Any

from ..errors import Problem
from ..ir import Api
from ._base import RenderTarget, as_files
from ._jvm import JvmRenderer, assert_inert, dump_yaml, empty_segment_problem
from ._routes import identifier

_HEADER_LIMIT = "64KB"


class SpringCloudGatewayRenderer(JvmRenderer):
    name = "spring-cloud-gateway"
    aliases = ("scg", "spring")
    description = (
        "Spring Cloud Gateway (WebFlux server): raw-path regex + Method predicate per route"
    )
    gateway_version = "5.0.3"
    product = "Spring Cloud Gateway 5.0.3 (Spring Boot 4.1.1, Spring Cloud 2025.1.3)"

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.routes(api)
        problems: list[Problem] = []
        for route in routes:
            problem = empty_segment_problem(route, self.name)
            if problem is not None:
                problems.append(problem)
        self.fail_unsupported(problems)
        names: set[str] = set()
        scg_routes: list[dict[str, Any]] = []
        for route in routes:
            route_id = f"r{route.index}_{identifier(route.operation_id, taken=names)}"
            regex = route.regex(param="[^/]+", anchor_start="", anchor_end="")
            scg_routes.append(
                {
                    "id": route_id,
                    "uri": target.backend_origin,
                    "predicates": [
                        {"name": "Method", "args": {"methods": route.method}},
                        {
                            "name": "RawPath",
                            "args": {"regexp": assert_inert(regex, route.pointer)},
                        },
                    ],
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
                "pool": {"type": "elastic", "max-idle-time": "30s"},
            },
            "default-filters": ["PreserveHostHeader"],
            "routes": scg_routes,
        }
        config: dict[str, Any] = {
            "server": {
                "address": target.listen_host,
                "port": target.listen_port,
                "max-http-request-header-size": _HEADER_LIMIT,
                "netty": {"max-initial-line-length": _HEADER_LIMIT},
            },
            "spring": {
                "main": {"banner-mode": "off"},
                "web": {"resources": {"add-mappings": False}},
                "cloud": {"gateway": {"server": {"webflux": webflux}}},
            },
        }
        return as_files(
            {"application.yml": self.header(f"{len(routes)} route(s)") + dump_yaml(config)}
        )
