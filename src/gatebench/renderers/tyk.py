"""Tyk Gateway 5 (open source): ``tyk.conf`` plus one file-based, keyless API definition.

Mapping rules (tests/golden/tyk/README.md says the same in prose):

- ``tyk.conf``: listen address from the target, API definitions read from files
  (``app_path`` = ``WORKDIR/apps``, no dashboard), policies from a file, Redis at the target's
  ``redis_host``/``redis_port`` (Tyk keeps its state there; the cloud path runs Redis beside
  it), analytics off, exact path matching (``enable_path_prefix_matching`` and
  ``enable_path_suffix_matching``), 300 s timeouts. The control-API ``secret`` is empty in
  the file: the cloud path passes a random one in ``TYK_GW_SECRET`` at start.
- ``apps/gatebench.json``: one Tyk Classic API, ``use_keyless: true``, listen path ``/``
  with ``strip_listen_path: false`` and ``preserve_host_header: true`` (the backend sees
  the client's path and ``Host``), not versioned, rate limits and quotas off.
- Routing: the allow list (``extended_paths.white_list``) holds one entry per distinct path
  pattern: an anchored regex (Tyk treats regex paths as exact patterns) with one
  ``no_action`` method action per method of that path. Each percent-encoded character of
  a literal is accepted in both forms (Tyk matches the decoded path).
- Policies (``apply_policies``): Tyk's cache, per operation (``_tyk_policies``).
- Limitation: Tyk's allow list answers requests it does not allow with **403**, not 404.
- Files are JSON written by a serialiser. Tyk cannot run here; it runs on the cloud path in
  the official image with Redis.
- TLS (``target.tls``): ``http_server_options.use_ssl`` with the run's chain and key for every
  host name, TLS 1.2 (``min_version`` 771) to 1.3, ``gatebench.tls``'s TLS 1.2 ciphers,
  ``enable_http2`` as asked. Tyk has no setting for session tickets.
- Replicas (``target.replicas``): ``proxy.enable_load_balancing`` over ``proxy.target_list``
  (Tyk balances round robin), checked against the API's uptime tests of
  ``/__gatebench__/health`` on every replica (``check_host_against_uptime_tests``; two failed
  checks take a host out). Tyk has no least-connections balancer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..ir import Api
from ..policies import PolicySet
from ..tls import SERVER_CERT, SERVER_KEY, TLS12_CIPHERS
from ._base import Renderer, RenderTarget, as_files
from ._deployment import HEALTH_FALL, HEALTH_PATH, PASSIVE_WINDOW_S
from ._json_out import dump_json
from ._tyk_policies import cache_settings


def _json(data: Any) -> str:
    return dump_json(data)


class TykRenderer(Renderer):
    name = "tyk"
    description = (
        "Tyk Gateway 5 OSS: keyless file-based API definition with an exact-match allow list"
    )
    gateway_version = "5.8"
    output_files = ("tyk.conf", "apps/gatebench.json", "policies/policies.json")
    runs_here = False
    cloud_image = "tykio/tyk-gateway:v5.8.0"
    run_command: ClassVar[tuple[str, ...] | None] = (
        "/opt/tyk-gateway/tyk",
        "--conf",
        "{workdir}/tyk.conf",
    )

    cloud_random_env = ("TYK_GW_SECRET",)
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

    supported_deployment: ClassVar[frozenset[str]] = frozenset(
        {"tls", "tls.http2", "pool.round_robin"}
    )
    deployment_gaps: ClassVar[Mapping[str, str]] = {
        "tls.no_resumption": "Tyk's http_server_options have no setting for session tickets",
        "pool.least_conn": "Tyk balances its target list round robin only",
    }
    health_checks = "active"

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        self.refuse_missing_deployment(target)
        return self._files(api, target, None)

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        self.refuse_missing_deployment(target)
        return self._files(api, target, policies)

    def _files(self, api: Api, target: RenderTarget, policies: PolicySet | None) -> dict[str, str]:
        routes = self.routes(api)
        # One allow-list entry per distinct path pattern, in priority order of first use.
        by_regex: dict[str, dict[str, Any]] = {}
        cached: list[tuple[str, str, str, float]] = []
        for route in routes:
            regex = route.regex(param="[^/]+", either=True)
            cache = policies.for_operation(route.operation_id).cache if policies else None
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
        if cached and policies is not None:
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
            "template_path": "/opt/tyk-gateway/templates",
            "app_path": target.path("apps"),
            "use_db_app_configs": False,
            "disable_dashboard_zeroconf": True,
            "policies": {
                "policy_source": "file",
                "policy_record_name": target.path("policies", "policies.json"),
            },
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
            "max_idle_connections_per_host": 512,
            "http_server_options": {
                "enable_path_prefix_matching": True,
                "enable_path_suffix_matching": True,
                "enable_strict_routes": True,
                "read_timeout": 300,
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
                    "ciphers": list(TLS12_CIPHERS),
                    "enable_http2": target.tls.http2,
                }
            )
        return as_files(
            {
                "tyk.conf": _json(conf),
                "apps/gatebench.json": _json(definition),
                "policies/policies.json": "{}",
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
