"""KrakenD CE 2.x: one endpoint per operation, ``no-op`` proxying, everything forwarded.

Mapping rules (tests/golden/krakend/README.md says the same in prose):

- Config ``version: 3``; one endpoint per operation with its method, the path in decoded
  form with ``{placeholders}``, and one backend whose ``url_pattern`` is the same path.
- ``output_encoding`` and the backend ``encoding`` are ``no-op``: bodies and status codes
  pass unchanged (KrakenD would otherwise parse and re-encode JSON).
- KrakenD forwards nothing by default: ``input_headers: ["*"]`` and
  ``input_query_strings: ["*"]`` forward every header (``Authorization`` too) and the whole
  query string.
- KrakenD's router (gin) panics when two paths put differently named parameters at the same
  place (``/users/{id}/a`` beside ``/users/{userId}/b``): parameter names are made to agree
  by position (``shared_param_names``), in the endpoint and the ``url_pattern`` alike, and
  reduced to ``[A-Za-z0-9_]``.
- Router options: no redirects for trailing slashes or case, no 405 (wrong methods get 404
  like everything else), no health endpoint (``/__health`` would be a route the API lacks).
- Refused with a located ``UnsupportedFeature`` (KrakenD cannot express them): a parameter
  sharing a segment with text (``/files/{name}.json``), methods other than GET, POST, PUT,
  PATCH and DELETE, a path with ``*``, ``?``, ``&``, ``%``, ``:`` or an encoded ``/`` once
  decoded (the official schema's pattern and KrakenD's documented limits), and paths
  reserved by KrakenD (``/__health``, ``/__debug``, ``/__echo``, ``/__catchall``,
  ``/__stats``).
- The file is JSON written by a serialiser; tests validate it against the official schema.
  KrakenD cannot run here; it runs on the cloud path in the official image.
- TLS (``target.tls``): the root ``tls`` object with the run's chain and key, TLS 1.2 to 1.3
  and ``gatebench.tls``'s cipher suites by code point. KrakenD's Go server offers ``h2`` by
  ALPN whenever TLS is on (no setting turns it off: the engine then keeps to HTTP/1.1 when
  the plan does not ask for HTTP/2) and has no setting for session tickets.
- Replicas (``target.replicas``): every backend's ``host`` lists the replicas; KrakenD CE
  balances round robin when it runs on one core (``GOMAXPROCS=1``) and picks a host at random
  otherwise (lura's default balancer; seen with KrakenD CE 2.13.8), and has no health checks
  and no least-connections balancer.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar
from urllib.parse import unquote

from ..errors import Problem, UnsupportedFeature
from ..ir import Api
from ..policies import PolicySet
from ..tls import CIPHER_CODES, SERVER_CERT, SERVER_KEY, TLS12_CIPHERS, TLS13_CIPHERS
from ._base import Renderer, RenderTarget, as_files
from ._json_out import dump_json
from ._routes import (
    Route,
    encode_literal,
    shared_param_names,
    unsupported,
)
from ._routes import (
    same_route as _same_route,
)

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_FORBIDDEN = "*?&%:"
_RESERVED = ("/__health", "/__debug", "/__echo", "/__catchall", "/__stats")


class KrakendRenderer(Renderer):
    name = "krakend"
    description = (
        "KrakenD CE 2.x: one no-op endpoint per operation, all headers and query forwarded"
    )
    gateway_version = "2.13"
    output_files = ("krakend.json",)
    runs_here = False
    cloud_image = "krakend:2.13.1"
    run_command: ClassVar[tuple[str, ...] | None] = (
        "krakend",
        "run",
        "-c",
        "{workdir}/krakend.json",
    )

    supported_policies: ClassVar[frozenset[str]] = frozenset(
        {"auth.jwt", "auth.jwt.jwks", "rate_limit.address", "rate_limit.header"}
    )

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        from ._krakend_policies import JWKS_FILE, endpoint_policies, jwks_text

        config = json.loads(files["krakend.json"])
        routes = self.routes(api)
        names = shared_param_names(routes)
        by_endpoint = {
            (route.method, self._path(route, names[route.index], [])): route.operation_id
            for route in routes
        }
        used = []
        for endpoint in config["endpoints"]:
            p = policies.for_operation(by_endpoint[endpoint["method"], endpoint["endpoint"]])
            used.append(p)
            extra = endpoint_policies(p, target.path(JWKS_FILE))
            if extra:
                endpoint["extra_config"] = extra
        try:
            jwks = jwks_text(used)
        except ValueError as exc:
            raise UnsupportedFeature(
                [Problem("/x-gatebench/policies", f"krakend: {exc}")]
            ) from None
        out = {**files, "krakend.json": dump_json(config)}
        if jwks is not None:
            out[JWKS_FILE] = jwks
        return as_files(out)

    supported_deployment: ClassVar[frozenset[str]] = frozenset(
        {"tls", "tls.http2", "pool.round_robin"}
    )
    http2_always = True
    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls.no_resumption": "KrakenD's tls settings have none for session tickets",
        "pool.least_conn": "KrakenD CE balances a backend's hosts round robin (one core) or at "
        "random, never by connections",
    }

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        self.refuse_missing_deployment(target)
        routes = self.routes(api)
        names = shared_param_names(routes)
        problems: list[Problem] = []
        endpoints: list[dict[str, Any]] = []
        seen: dict[tuple[str, str], Route] = {}
        for route in routes:
            path = self._path(route, names[route.index], problems)
            if path is None:
                continue
            first = seen.setdefault((route.method, path), route)
            if first is not route:
                problems.append(_same_route(route, first, self.name))
                continue
            endpoints.append(
                {
                    "endpoint": path,
                    "method": route.method,
                    "output_encoding": "no-op",
                    "input_headers": ["*"],
                    "input_query_strings": ["*"],
                    "timeout": "300s",
                    "backend": [
                        {
                            "url_pattern": path,
                            "host": _hosts(target),
                            "encoding": "no-op",
                        }
                    ],
                }
            )
        self.fail_unsupported(problems)
        config = {
            "$schema": "https://www.krakend.io/schema/v2.13/krakend.json",
            "version": 3,
            "name": "gatebench",
            "port": target.listen_port,
            "listen_ip": target.listen_host,
            "timeout": "300s",
            "idle_timeout": "60s",
            "max_idle_connections_per_host": 512,
            "disable_rest": False,
            "extra_config": {
                "router": {
                    "disable_redirect_trailing_slash": True,
                    "disable_redirect_fixed_path": True,
                    "disable_handle_method_not_allowed": True,
                    "disable_health": True,
                    "disable_access_log": True,
                    "auto_options": False,
                    "return_error_msg": False,
                }
            },
            "endpoints": endpoints,
        }
        if target.tls is not None:
            config["tls"] = {
                "keys": [
                    {
                        "public_key": target.tls.path(SERVER_CERT),
                        "private_key": target.tls.path(SERVER_KEY),
                    }
                ],
                "min_version": "TLS12",
                "max_version": "TLS13",
                "cipher_suites": [CIPHER_CODES[c] for c in (*TLS13_CIPHERS, *TLS12_CIPHERS)],
            }
        return as_files({"krakend.json": dump_json(config)})

    def _path(self, route: Route, names: tuple[str, ...], problems: list[Problem]) -> str | None:
        if route.method not in METHODS:
            problems.append(
                unsupported(route, self.name, f"KrakenD endpoints take only {', '.join(METHODS)}")
            )
            return None
        if route.has_partial_segments:
            problems.append(
                unsupported(
                    route,
                    self.name,
                    "a parameter must fill its whole path segment (KrakenD cannot build words from variables)",
                )
            )
            return None
        renamed = iter(names)
        parts = []
        for segment in route.segments:
            if segment.is_whole_param:
                parts.append("{" + next(renamed) + "}")
                continue
            text = unquote(encode_literal(segment.literal))
            bad = sorted({ch for ch in text if ch in _FORBIDDEN or ch == "/"})
            if bad or any(ord(ch) < 0x20 or ch == "\x7f" for ch in text):
                shown = " ".join(repr(ch) for ch in bad) or "a control character"
                problems.append(
                    unsupported(
                        route,
                        self.name,
                        f"the path may not contain {shown} (KrakenD endpoint paths exclude * ? & % : and encoded '/')",
                    )
                )
                return None
            parts.append(text)
        path = "/" + "/".join(parts)
        for reserved in _RESERVED:
            if path == reserved or path.startswith(reserved + "/"):
                problems.append(unsupported(route, self.name, f"{reserved} is reserved by KrakenD"))
                return None
        return path


def _hosts(target: RenderTarget) -> list[str]:
    if not target.pooled:
        return [target.backend_origin]
    return [f"http://{host}:{port}" for host, port in target.upstreams]
