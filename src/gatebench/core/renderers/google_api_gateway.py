"""Google API Gateway (managed): an OpenAPI 2.0 document with ``x-google-backend``.

Mapping rules (tests/golden/google-api-gateway/README.md says the same in prose):

- One Swagger 2.0 document; ``paths`` holds every route's full path (base path included,
  no ``basePath``), one operation per method with a unique ``operationId``
  (``r<priority>_<operationId reduced to [A-Za-z0-9_]>``), every path parameter declared
  (``in: path``, ``required: true``, ``type: string``), ``default`` response only.
- One top-level ``x-google-backend``: the backend origin, ``path_translation:
  APPEND_PATH_TO_ADDRESS`` (the backend receives the client's path), ``disable_auth: true``
  (the client's ``Authorization`` header is passed instead of a Google ID token),
  ``deadline: 300``. Only configured methods and paths are served (the default
  ``x-google-allow: configured``); anything else gets 404 from the gateway.
- Parameter names are made to agree where paths share a prefix (Swagger treats
  ``/users/{id}`` and ``/users/{userId}`` as the same path).
- Refused with a located ``UnsupportedFeature``: ``TRACE`` (not in OpenAPI 2.0), a
  parameter sharing a segment with text, empty segments (trailing slashes; Google's path
  templates have none), and literal characters outside ``A-Za-z0-9-._~!$&'()+,;=@``
  (``*`` and ``:`` mean wildcards and custom verbs in Google's templates; percent-escapes
  and non-ASCII text are not accepted by the template syntax).
- The document is written by a YAML serialiser; tests check it is valid Swagger 2.0 with
  openapi-spec-validator. API Gateway is a managed service: nothing runs here, and the
  backend must be reachable from Google's network.
- Deployment: API Gateway always serves HTTPS (HTTP/2 included) with Google's own managed
  certificate, never a run's certificate, so a TLS plan leaves it out; ``x-google-backend``
  names one backend address, so replicas need a load balancer behind it and a plan with
  replicas leaves it out too.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from gatebench.core.errors import Problem
from gatebench.core.ir import Api
from gatebench.core.renderers._base import Renderer, RenderTarget, as_files
from gatebench.core.renderers._routes import (
    Route,
    distinct_paths,
    route_names,
    shared_param_names,
    unsupported,
)
from gatebench.core.renderers._yaml_out import dump_yaml

_LITERAL_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()+,;=@]*")
_METHODS = ("GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH")


_ONE_BACKEND = (
    "x-google-backend names one backend address; a pool of replicas needs a load balancer "
    "behind the gateway"
)


class GoogleApiGatewayRenderer(Renderer):
    name = "google-api-gateway"
    aliases = ("api-gateway", "gcp-api-gateway")
    description = "Google Cloud API Gateway (managed): OpenAPI 2.0 with x-google-backend"
    gateway_version = "OpenAPI 2.0"
    output_files = ("openapi.yaml",)
    runs_here = False
    cloud_image = None
    cloud_only_reason = "a managed Google Cloud service: it renders; deployed on the cloud path"
    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls": "API Gateway serves HTTPS with Google's own managed certificate, not the run's",
        "tls.http2": "API Gateway serves HTTPS with Google's own managed certificate, not the run's",
        "tls.no_resumption": "API Gateway's TLS is Google's to configure",
        "pool.round_robin": _ONE_BACKEND,
        "pool.least_conn": _ONE_BACKEND,
    }

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        names = shared_param_names(routes)
        problems: list[Problem] = []
        paths: dict[str, dict[str, Any]] = {}
        ids = route_names(routes)
        for route, path in distinct_paths(
            routes, lambda r: self._path(r, names[r.index], problems), self.name, problems
        ):
            item = paths.setdefault(path, {})
            operation: dict[str, Any] = {
                "operationId": ids[route.index],
                "responses": {"default": {"description": "whatever the backend answers"}},
            }
            if names[route.index]:
                operation["parameters"] = [
                    {"name": name, "in": "path", "required": True, "type": "string"}
                    for name in names[route.index]
                ]
            item[route.method.lower()] = operation
        self.fail_unsupported(problems)
        document = {
            "swagger": "2.0",
            "info": {"title": "gatebench", "version": "1.0.0"},
            "schemes": ["https"],
            "x-google-backend": {
                "address": target.backend_origin,
                "path_translation": "APPEND_PATH_TO_ADDRESS",
                "disable_auth": True,
                "deadline": 300.0,
            },
            "paths": paths,
        }
        header = (
            f"# Google API Gateway config (OpenAPI 2.0) rendered by gatebench: {len(routes)} "
            "route(s).\n# Generated file; re-render instead of editing.\n"
        )
        return as_files({"openapi.yaml": header + dump_yaml(document)})

    def _path(self, route: Route, names: tuple[str, ...], problems: list[Problem]) -> str | None:
        if route.method not in _METHODS:
            problems.append(
                unsupported(route, self.name, f"{route.method} is not an OpenAPI 2.0 method")
            )
            return None
        if route.has_partial_segments:
            problems.append(
                unsupported(route, self.name, "a parameter must fill its whole path segment")
            )
            return None
        renamed = iter(names)
        parts = []
        for segment in route.segments:
            if segment.is_whole_param:
                parts.append("{" + next(renamed) + "}")
                continue
            text = segment.literal
            if not text and len(route.segments) > 1:
                problems.append(
                    unsupported(
                        route,
                        self.name,
                        "empty path segments (a trailing slash or '//') do not exist in Google's path templates",
                    )
                )
                return None
            if not _LITERAL_OK.fullmatch(text):
                bad = sorted({ch for ch in text if not _LITERAL_OK.fullmatch(ch)})
                problems.append(
                    unsupported(
                        route,
                        self.name,
                        f"the path may not contain {' '.join(repr(ch) for ch in bad)} "
                        "(allowed: letters, digits and -._~!$&'()+,;=@)",
                    )
                )
                return None
            parts.append(text)
        return "/" + "/".join(parts)
