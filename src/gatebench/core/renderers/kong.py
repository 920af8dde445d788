"""Kong Gateway 3.x, DB-less: a declarative ``kong.yml`` and the ``kong.conf`` that loads it.

Mapping rules (tests/golden/kong/README.md says the same in prose):

- One service (``gatebench-backend``, the backend URL, 10 s to connect, 300 s timeouts; with
  replicas ``retries: 2``, the common retry policy, else Kong's default) and one
  route per operation: ``methods: [M]``, ``paths: ["~/regex$"]`` (Kong 3 reads a path as a
  regex only with the ``~`` prefix and anchors it at the start; the ``$`` anchors the end),
  path parameters as named captures ``(?<name>[^/]+)``, ``strip_path: false`` and
  ``preserve_host: true`` so the backend gets the path and ``Host`` unchanged.
- Priority: every route has the same matching attributes (methods + paths), so Kong orders
  them by ``regex_priority``, highest first: the route count minus the route's priority
  position, so literal segments outrank templates.
- Kong matches a normalised path (percent-decoded where safe); each percent-encoded
  character of a literal is therefore accepted in both forms, the decoded one written as
  itself. ASCII punctuation is written ``\\xHH``.
- ``kong.conf``: ``database = off``, the declarative file, listen address from the target,
  no admin listener, unlimited bodies, headers with underscores kept, ``router_flavor =
  traditional_compatible``, everything Kong writes at run time under ``prefix`` inside the
  workdir. Both files are written by serialisers (YAML) or from validated values only.
- Policies (``apply_policies``): bundled plugins nested in the routes (``_kong_policies``).
- Kong does not run here: Kong OSS is OpenResty with Kong's own patches plus its LuaRocks,
  which no registry this project installs from carries, so a local start was never proven.
  The output is checked by structure tests and schemas and runs on the cloud path in the
  official image.
- TLS (``target.tls``): ``proxy_listen ... ssl`` (plus ``http2``), ``ssl_cert`` /
  ``ssl_cert_key`` with the run's files, ``ssl_protocols = TLSv1.2 TLSv1.3``,
  ``ssl_cipher_suite = custom`` with ``gatebench.core.tls``'s TLS 1.2 ciphers in the server's
  order. Kong's template always keeps nginx's shared TLS session cache, so resumption cannot
  be switched off.
- Replicas (``target.replicas``): an ``upstreams`` entry ``gatebench-backend`` (the service's
  host) with one target per replica, ``algorithm: round-robin`` or ``least-connections``,
  active checks of ``/__gatebench__/health`` (every second, 1 s timeout, 2 failures out, 2
  passes back) and passive ones (one refused connection or timeout takes a target out).
  The service's ``retries: 2`` is the common retry policy: Kong's balancer retries through
  nginx's ``proxy_next_upstream`` conditions (a failed connection for any method, a request
  already sent only when idempotent).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers._base import InlinePoliciesRenderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import (
    HEALTH_FALL,
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_RISE,
    HEALTH_TIMEOUT_S,
    PASSIVE_FAILS,
    RETRY_TRIES,
)
from gatebench.core.renderers._kong_policies import route_plugins
from gatebench.core.renderers._parity import (
    IDLE_TIMEOUT_S,
    KEEPALIVE_REQUESTS,
    LISTEN_BACKLOG,
    Parity,
    VendorPage,
)
from gatebench.core.renderers._routes import named_group_pcre, route_names, shared_param_names
from gatebench.core.renderers._yaml_out import dump_yaml
from gatebench.core.renderers.nginx import listen_tls
from gatebench.core.tls import SERVER_CERT, SERVER_KEY, openssl_ciphers


class KongRenderer(InlinePoliciesRenderer):
    name = "kong"
    description = "Kong Gateway 3.x OSS, DB-less declarative config: one regex route per operation"
    gateway_version = "3.9"
    output_files = ("kong.yml", "kong.conf")
    runs_here = False
    cloud_image = "kong:3.9.1"
    run_command: ClassVar[tuple[str, ...] | None] = ("kong", "start", "-c", "{workdir}/kong.conf")
    cloud_only_reason = (
        "gatebench runs Kong on the cloud path only (image kong:3.9.1): Kong OSS is OpenResty with Kong's own "
        "patches and LuaRocks, which no registry gatebench installs from carries, so a local "
        "start was never proven; a user installs Kong from its vendor (Kong's Debian and RPM "
        "packages, https://cloudsmith.io/~kong)"
    )
    supported_policies = frozenset(
        {"rate_limit.address", "rate_limit.header", "cache", "cache.vary_header"}
    )
    policy_gaps: ClassVar[Mapping[str, str]] = {
        "auth.jwt": "Kong's open-source jwt plugin checks the signature, exp and the issuer but "
        "not the audience (aud) the policy requires",
        "auth.jwt.jwks": "Kong's jwt plugin takes one PEM key per credential, no JWKS",
        "auth.api_key": "key-auth's credential key is not a vault-referenceable field (Kong "
        "takes {vault://env/...} there as a literal key), so the policy's keys, read from an "
        "environment variable when the gateway starts, could only reach Kong written into the "
        "stored configuration",
        "rate_limit.subject": "rate-limiting counts per consumer only after Kong's own "
        "authentication, which cannot apply the JWT policy",
        "cache.path_only": "proxy-cache keys on every query argument unless some are named; it "
        "cannot ignore the query",
    }

    deployment_gaps: ClassVar[Mapping[str, str]] = {
        "tls.no_resumption": "Kong's nginx template always keeps a shared TLS session cache "
        "(only tickets can be switched off)"
    }
    health_checks = "active + passive"
    cores_setting = "nginx_worker_processes = {workers}"

    parity = Parity(
        cores="`nginx_worker_processes` = cores (Kong's default, `auto`, is one per core)",
        pools="`upstream_keepalive_pool_size` = concurrency (default 512)",
        keepalive="`nginx_http_keepalive_timeout 60s`, `nginx_http_keepalive_requests 100000`; "
        "`upstream_keepalive_idle_timeout 60`, `upstream_keepalive_max_requests 100000`",
        timeouts="service `connect_timeout 10000`, `read_timeout`/`write_timeout 300000`",
        bodies="`request_buffering: false` (streamed), `nginx_http_client_max_body_size 0`",
        logs="`proxy_access_log off`, `anonymous_reports off`; no plugin but the plan's",
        routes="one regex route per operation, Kong's own router (`traditional_compatible`)",
        retries=f"service `retries: {RETRY_TRIES - 1}` (default 5), each on the balancer's next "
        "target, under nginx's own conditions (`error timeout`: a request already sent is "
        "passed on only when idempotent)",
        pages=(
            VendorPage(
                "Kong Gateway configuration reference",
                "https://docs.konghq.com/gateway/3.9.x/reference/configuration/",
            ),
            VendorPage(
                "Kong Gateway performance testing",
                "https://docs.konghq.com/gateway/latest/production/performance/performance-testing/",
            ),
            VendorPage(
                "Gateway Service: retries",
                "https://developer.konghq.com/gateway/entities/service",
            ),
        ),
    )

    def render_files(self, api: Api, target: RenderTarget, policies: PolicySet) -> dict[str, str]:
        routes = self.render_routes(api, target)
        names = shared_param_names(routes)
        route_ids = route_names(routes, separator="-")
        kong_routes: list[dict[str, Any]] = []
        for route in routes:
            regex = route.regex(
                param="[^/]+",
                named=named_group_pcre,
                names=names[route.index],
                either=True,
                anchor_start="",
            )
            kong_routes.append(
                {
                    "name": route_ids[route.index],
                    "methods": [route.method],
                    "paths": ["~" + regex],
                    "regex_priority": len(routes) - route.index,
                    "strip_path": False,
                    "preserve_host": True,
                    "protocols": ["http", "https"],
                    "request_buffering": False,
                    "response_buffering": True,
                }
            )
            plugins = route_plugins(
                policies.for_operation(route.operation_id), route.method, route.operation_id
            )
            if plugins:
                kong_routes[-1]["plugins"] = plugins
        service = {
            "name": "gatebench-backend",
            "url": target.backend_origin,
            "connect_timeout": 10000,
            "read_timeout": 300000,
            "write_timeout": 300000,
            "routes": kong_routes,
        }
        declarative: dict[str, Any] = {
            "_format_version": "3.0",
            "_transform": True,
            "services": [service],
        }
        if target.pooled:
            service["url"] = f"http://{_UPSTREAM}"
            service["retries"] = RETRY_TRIES - 1
            declarative["upstreams"] = [_upstream(target)]
        header = (
            f"# Kong {self.gateway_version} declarative configuration rendered by gatebench: "
            f"{len(routes)} route(s).\n# Generated file; re-render instead of editing.\n"
        )
        conf = f"""\
# Kong {self.gateway_version} configuration rendered by gatebench (DB-less).
# Generated file; re-render instead of editing.
prefix = {target.path("kong")}
database = off
declarative_config = {target.path("kong.yml")}
proxy_listen = {target.listen_address}{listen_tls(target)} reuseport backlog={LISTEN_BACKLOG}
admin_listen = off
status_listen = off
router_flavor = traditional_compatible
nginx_daemon = off
nginx_worker_processes = {target.workers}
nginx_http_client_max_body_size = 0
nginx_http_underscores_in_headers = on
nginx_http_large_client_header_buffers = 8 64k
nginx_http_keepalive_timeout = {IDLE_TIMEOUT_S}s
nginx_http_keepalive_requests = {KEEPALIVE_REQUESTS}
upstream_keepalive_pool_size = {target.concurrency}
upstream_keepalive_max_requests = {KEEPALIVE_REQUESTS}
upstream_keepalive_idle_timeout = {IDLE_TIMEOUT_S}
anonymous_reports = off
proxy_access_log = off
proxy_error_log = {target.path("kong", "logs", "error.log")}
log_level = warn
{_tls_conf(target)}"""
        return as_files({"kong.yml": header + dump_yaml(declarative), "kong.conf": conf})


_UPSTREAM = "gatebench-backend"


def _tls_conf(target: RenderTarget) -> str:
    tls = target.tls
    if tls is None:
        return ""
    return (
        f"ssl_cert = {tls.path(SERVER_CERT)}\n"
        f"ssl_cert_key = {tls.path(SERVER_KEY)}\n"
        "ssl_protocols = TLSv1.2 TLSv1.3\n"
        "ssl_cipher_suite = custom\n"
        f"ssl_ciphers = {openssl_ciphers()}\n"
        "ssl_prefer_server_ciphers = on\n"
        "ssl_session_tickets = on\n"
    )


def _upstream(target: RenderTarget) -> dict[str, Any]:
    return {
        "name": _UPSTREAM,
        "algorithm": "least-connections" if target.balance == "least_conn" else "round-robin",
        "healthchecks": {
            "active": {
                "type": "http",
                "http_path": HEALTH_PATH,
                "timeout": HEALTH_TIMEOUT_S,
                "healthy": {"interval": HEALTH_INTERVAL_S, "successes": HEALTH_RISE},
                "unhealthy": {
                    "interval": HEALTH_INTERVAL_S,
                    "http_failures": HEALTH_FALL,
                    "tcp_failures": HEALTH_FALL,
                    "timeouts": HEALTH_FALL,
                },
            },
            "passive": {
                "type": "http",
                "unhealthy": {"tcp_failures": PASSIVE_FAILS, "timeouts": PASSIVE_FAILS},
            },
        },
        "targets": [{"target": f"{host}:{port}"} for host, port in target.upstreams],
    }
