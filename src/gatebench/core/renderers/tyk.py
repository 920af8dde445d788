"""Tyk Gateway 5 (open source): ``tyk.conf``, one file-based, keyless API definition, and the
error templates Tyk loads at start.

Mapping rules (tests/golden/tyk/README.md says the same in prose):

- ``tyk.conf``: listen address from the target, API definitions read from files
  (``app_path`` = ``WORKDIR/apps``, no dashboard), policies from a file, error templates from
  ``WORKDIR/templates`` (Tyk panics at start without an ``error*`` template there), Redis at the
  target's ``redis_host``/``redis_port`` (Tyk keeps its state there; gatebench starts one on
  loopback here, the cloud path runs one beside it), analytics off, exact path matching
  (``enable_path_prefix_matching`` and ``enable_path_suffix_matching``), no path cleaning
  (``skip_url_cleaning``: otherwise Tyk answers ``//`` and ``/../`` with a 301 redirect), the
  control API on a port of its own (``control_api_port``: otherwise Tyk answers ``/hello``,
  ``/ready`` and ``/tyk/...`` itself on the API's port), 300 s timeouts. The control-API
  ``secret`` is empty in the file: Tyk gets a random one in ``TYK_GW_SECRET`` at every start.
- ``apps/gatebench.json``: one Tyk Classic API, ``use_keyless: true``, listen path ``/``
  with ``strip_listen_path: false`` and ``preserve_host_header: true`` (the backend sees
  the client's path and ``Host``), not versioned, rate limits and quotas off.
- Routing: the allow list (``extended_paths.white_list``) holds one entry per distinct path
  pattern: an anchored regex (Tyk treats regex paths as exact patterns) with one
  ``no_action`` method action per method of that path. Each percent-encoded character of
  a literal is accepted in both forms (Tyk matches the decoded path).
- Policies (``apply_policies``): Tyk's cache, per operation (``_tyk_policies``).
- Limitation: Tyk's allow list answers requests it does not allow with **403**, not 404.
- Refused with a located ``UnsupportedFeature``: a path that starts with an empty segment
  (``//x``): Tyk joins the request path to its target's and drops the leading ``/``.
- ``skip_target_path_escaping``: without it Tyk writes the backend's path again with Go's
  escaping (``'`` → ``%27``, ``(`` → ``%28``).
- Files are JSON written by a serialiser. Here Tyk runs when installed (``tyk`` on PATH or
  ``GATEBENCH_TYK_BIN``) with a Redis gatebench starts on loopback and stops; on the cloud
  path it runs in the official image with Redis beside it.
- TLS (``target.tls``): ``http_server_options.use_ssl`` with the run's chain and key for every
  host name, TLS 1.2 (``min_version`` 771) to 1.3, ``gatebench.core.tls``'s TLS 1.2 ciphers (``ssl_ciphers``),
  ``enable_http2`` as asked. Tyk has no setting for session tickets.
- Replicas (``target.replicas``): ``proxy.enable_load_balancing`` over ``proxy.target_list``
  (Tyk balances round robin), checked against the API's uptime tests of
  ``/__gatebench__/health`` on every replica (``check_host_against_uptime_tests``; two failed
  checks take a host out). Tyk has no least-connections balancer.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Mapping
from typing import Any, ClassVar

from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers._base import Companion, InlinePoliciesRenderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import HEALTH_FALL, HEALTH_PATH, PASSIVE_WINDOW_S
from gatebench.core.renderers._json_out import dump_json
from gatebench.core.renderers._parity import IDLE_TIMEOUT_S, Parity, VendorPage
from gatebench.core.renderers._routes import Route
from gatebench.core.renderers._tyk_policies import cache_settings
from gatebench.core.tls import SERVER_CERT, SERVER_KEY, TLS12_CIPHERS

# Where the control API listens when the target has no admin port (the cloud path: one
# gateway per VM, the port is not opened in its firewall). It must differ from the API's port.
CONTROL_PORT = 9696
SECRET_ENV = "TYK_GW_SECRET"
# Tyk renders its own errors (403 from the allow list, 5xx) with these; its stock templates
# live only in its packages and images.
ERROR_TEMPLATES = {
    "templates/error.json": '{\n    "error": "{{.Message}}"\n}\n',
    "templates/error.xml": '<?xml version="1.0" encoding="UTF-8"?>\n<error>{{.Message}}</error>\n',
}
_LOG_PROBLEM = re.compile(r"\blevel=(?:error|fatal|panic)\b")
_SHUTDOWN = "Shutdown signal received"
REDIS_HINT = "Tyk needs Redis: Debian `apt-get install redis-server` (scripts/setup.sh apt)"


def _json(data: Any) -> str:
    return dump_json(data)


def control_port(target: RenderTarget) -> int:
    """The control API's port: the target's admin port, else :data:`CONTROL_PORT` (never
    the API's own port)."""
    if target.admin_port is not None:
        return target.admin_port
    return CONTROL_PORT if target.listen_port != CONTROL_PORT else CONTROL_PORT + 1


class TykRenderer(InlinePoliciesRenderer):
    name = "tyk"
    description = (
        "Tyk Gateway 5 OSS: keyless file-based API definition with an exact-match allow list"
    )
    gateway_version = "5.8"
    output_files = (
        "tyk.conf",
        "apps/gatebench.json",
        "policies/policies.json",
        "templates/error.json",
        "templates/error.xml",
    )
    runs_here = True
    vendor_installed = True
    cloud_image = "tykio/tyk-gateway:v5.8.0"
    run_command: ClassVar[tuple[str, ...] | None] = ("tyk", "--conf", "{workdir}/tyk.conf")
    cloud_program = "/opt/tyk-gateway/tyk"
    """Where the official image has the binary."""
    vendor_bin_dirs = ("/opt/tyk-gateway",)
    """Where Tyk's Debian and RPM packages install it."""
    install_hint = (
        "install Tyk Gateway 5 (open source) from its vendor (the tyk-gateway Debian or RPM "
        "package from https://packagecloud.io/tyk/tyk-gateway, which installs "
        "/opt/tyk-gateway/tyk), or name the binary in GATEBENCH_TYK_BIN; it needs Redis too "
        "(Debian redis-server)"
    )
    refusal_status = 403
    # /ready on the control API answers 200 once Redis is connected and the APIs are loaded.
    ready_path = "/ready"
    # The control API is served with the gateway's http_server_options, TLS included.
    admin_port_shares_tls = True

    cores_env = "GOMAXPROCS"
    cloud_random_env = (SECRET_ENV,)
    supported_policies = frozenset({"cache", "cache.vary_header"})
    policy_gaps: ClassVar[Mapping[str, str]] = {
        "auth.jwt": "Tyk 5.8's JWT middleware checks the signature and the token's times but "
        "neither the issuer (iss) nor the audience (aud) the policy requires",
        "auth.jwt.jwks": "Tyk cannot apply the JWT policy",
        "auth.api_key": "Tyk keeps API keys in Redis, created through its control API once it "
        "runs, while the policy's keys come from an environment variable and are never written "
        "into a stored configuration",
        "rate_limit.address": "Tyk's open-source rate limits count per key (session) or for "
        "the whole API (global_rate_limit), never per client address",
        "rate_limit.header": "Tyk's open-source rate limits count per key (session) or for the "
        "whole API, never per header value",
        "rate_limit.subject": "a per-key limit needs Tyk's JWT sessions, and Tyk cannot apply "
        "the JWT policy",
        "cache.path_only": "Tyk's cache key always holds the whole query",
    }

    deployment_gaps: ClassVar[Mapping[str, str]] = {
        "tls.no_resumption": "Tyk's http_server_options have no setting for session tickets",
        "pool.least_conn": "Tyk balances its target list round robin only",
    }
    health_checks = "active"

    parity = Parity(
        cores="`GOMAXPROCS` = cores",
        pools="`max_idle_connections_per_host` = concurrency (Tyk advises 500; Go's default "
        "is 2), `max_idle_connections` 0 (no limit)",
        keepalive="`read_timeout 60` (Go closes an idle client connection after it); backend "
        "idle connections kept 90 s (fixed in Tyk); `close_connections` and "
        "`proxy_close_connections` false",
        timeouts="`proxy_default_timeout 300`, `write_timeout 300`; no connect timeout to set "
        "(tyk.conf has none: its dialer's own)",
        bodies="streamed, `max_request_body_size 0`",
        logs="`enable_analytics false`, health checks off; no access log",
        routes="one allow-list entry per path pattern (anchored regexes), tried in turn",
        retries="cannot follow the policy: Tyk's round-robin `target_list` resends nothing "
        "to another target (no retry setting; a refused connection is a 5xx until the "
        "uptime tests take the target out)",
        pages=(
            VendorPage("Planning for Production", "https://tyk.io/docs/planning-for-production/"),
            VendorPage(
                "Load balancing",
                "https://tyk.io/docs/planning-for-production/ensure-high-availability/"
                "load-balancing",
            ),
        ),
    )

    def boot_problems(self, log: str) -> list[str]:
        """Tyk's error lines up to its shutdown: it logs an API definition or a part of its
        configuration it cannot use and keeps running. Not the GraphQL playground's missing
        templates (no GraphQL API is rendered), nor what it says while it stops."""
        problems = []
        for line in log.splitlines():
            if _SHUTDOWN in line:
                break
            if _LOG_PROBLEM.search(line) and "prefix=playground" not in line:
                problems.append(line)
        return problems

    def cloud_argv(self, target: RenderTarget) -> list[str] | None:
        argv = super().cloud_argv(target)
        return None if argv is None else [self.cloud_program, *argv[1:]]

    def env(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> dict[str, str]:
        # A fresh control-API secret at every start, written nowhere (an empty one would let
        # any local client use the control API).
        return {**super().env(workdir, target), SECRET_ENV: secrets.token_urlsafe(24)}

    def companions(self, target: RenderTarget) -> tuple[Companion, ...]:
        """Redis on loopback at the target's ``redis_port``, in memory only, its files in the
        workdir."""
        return (
            Companion(
                name="redis",
                argv=(
                    "redis-server",
                    "--bind",
                    "127.0.0.1",
                    "--port",
                    str(target.redis_port),
                    "--protected-mode",
                    "yes",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--dir",
                    target.workdir,
                    "--daemonize",
                    "no",
                    "--logfile",
                    "",
                ),
                port=target.redis_port,
                install_hint=REDIS_HINT,
                probe=b"PING\r\n",
                answer=b"+PONG",
            ),
        )

    def route_limitation(self, route: Route) -> str | None:
        first = route.segments[0]
        if len(route.segments) > 1 and first.is_literal and not first.literal:
            return (
                "a path that starts with an empty segment ('//'): Tyk joins the path to its "
                "target and drops the leading '/', so the backend would get another path"
            )
        return super().route_limitation(route)

    def render_files(self, api: Api, target: RenderTarget, policies: PolicySet) -> dict[str, str]:
        routes = self.render_routes(api, target)
        # One allow-list entry per distinct path pattern, in priority order of first use.
        by_regex: dict[str, dict[str, Any]] = {}
        cached: list[tuple[str, str, str, float]] = []
        for route in routes:
            regex = route.regex(param="[^/]+", either=True)
            cache = policies.for_operation(route.operation_id).cache
            if cache is not None and route.method in cache.methods:
                cached.append((route.operation_id, route.method, regex, cache.ttl))
            entry = by_regex.setdefault(
                regex,
                {"path": "", "method": "", "ignore_case": False, "method_actions": {}},
            )
            entry["method_actions"][route.method] = {
                "action": "no_action",
                "code": 200,
                "data": "",
                "headers": {},
            }
        allow = [{**entry, "path": regex} for regex, entry in by_regex.items()]
        extended: dict[str, Any] = {"white_list": allow}
        cache_options = None
        if cached:
            cache_options, extended["advance_cache_config"] = cache_settings(cached, policies)
        definition = {
            "name": "gatebench",
            "api_id": "gatebench",
            "org_id": "gatebench",
            "slug": "gatebench",
            "active": True,
            "use_keyless": True,
            "strip_auth_data": False,
            "do_not_track": True,
            "disable_rate_limit": True,
            "disable_quota": True,
            "definition": {"location": "header", "key": "x-api-version", "strip_path": False},
            "version_data": {
                "not_versioned": True,
                "default_version": "Default",
                "versions": {
                    "Default": {
                        "name": "Default",
                        "use_extended_paths": True,
                        "extended_paths": extended,
                    }
                },
            },
            **({"cache_options": cache_options} if cache_options else {}),
            "proxy": {
                "listen_path": "/",
                "target_url": target.backend_origin,
                "strip_listen_path": False,
                "preserve_host_header": True,
            },
        }
        conf = {
            "listen_address": target.listen_host,
            "listen_port": target.listen_port,
            "secret": "",
            "control_api_port": control_port(target),
            "template_path": target.path("templates"),
            "app_path": target.path("apps"),
            "use_db_app_configs": False,
            "disable_dashboard_zeroconf": True,
            # No policy_source: the default reads policy_record_name's file ("file" works too,
            # but Tyk's own configuration schema, `tyk lint`'s, refuses it).
            "policies": {"policy_record_name": target.path("policies", "policies.json")},
            "storage": {
                "type": "redis",
                "host": target.redis_host,
                "port": target.redis_port,
                "database": 0,
                "optimisation_max_idle": 2000,
                "optimisation_max_active": 4000,
                "enable_cluster": False,
            },
            "enable_analytics": False,
            "health_check": {"enable_health_checks": False},
            "hide_generator_header": True,
            "pid_file_location": target.path("tyk.pid"),
            "proxy_default_timeout": 300,
            "close_connections": False,
            "proxy_close_connections": False,
            "max_idle_connections": 0,
            "max_idle_connections_per_host": target.concurrency,
            "http_server_options": {
                "enable_path_prefix_matching": True,
                "enable_path_suffix_matching": True,
                "enable_strict_routes": True,
                "skip_url_cleaning": True,
                "skip_target_path_escaping": True,
                # Go's server closes an idle client connection after its read timeout:
                # the 60 s of every gateway (a request is read long before).
                "read_timeout": IDLE_TIMEOUT_S,
                "write_timeout": 300,
                "max_request_body_size": 0,
            },
        }
        if target.pooled:
            _pool(target, definition, conf)
        if target.tls is not None:
            conf["http_server_options"].update(  # type: ignore[attr-defined]
                {
                    "use_ssl": True,
                    "certificates": [
                        {
                            "domain_name": "*",
                            "cert_file": target.tls.path(SERVER_CERT),
                            "key_file": target.tls.path(SERVER_KEY),
                        }
                    ],
                    "min_version": 771,
                    "max_version": 772,
                    "ssl_ciphers": list(TLS12_CIPHERS),
                    "enable_http2": target.tls.http2,
                }
            )
        return as_files(
            {
                "tyk.conf": _json(conf),
                "apps/gatebench.json": _json(definition),
                "policies/policies.json": "{}",
                **ERROR_TEMPLATES,
            }
        )


def _pool(target: RenderTarget, definition: dict[str, Any], conf: dict[str, Any]) -> None:
    """Tyk's load balancing over the replicas, each checked by the API's uptime tests."""
    urls = [f"http://{host}:{port}" for host, port in target.upstreams]
    definition["proxy"].update(
        {
            "target_url": urls[0],
            "enable_load_balancing": True,
            "target_list": urls,
            "check_host_against_uptime_tests": True,
        }
    )
    definition["uptime_tests"] = {
        "check_list": [{"url": url + HEALTH_PATH, "method": "GET"} for url in urls],
        "config": {"expire_utime_after": 0, "recheck_wait": PASSIVE_WINDOW_S},
    }
    conf["uptime_tests"] = {
        "disable": False,
        "config": {
            "failure_trigger_sample_size": HEALTH_FALL,
            "time_wait": PASSIVE_WINDOW_S,
            "checker_pool_size": 50,
            "enable_uptime_analytics": False,
        },
    }
