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
- Limitation: Tyk's allow list answers requests it does not allow with **403**, not 404.
- Files are JSON written by a serialiser. Tyk cannot run here; it runs on the cloud path in
  the official image with Redis.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..ir import Api
from ._base import Renderer, RenderTarget, as_files
from ._json_out import dump_json


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

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.routes(api)
        # One allow-list entry per distinct path pattern, in priority order of first use.
        by_regex: dict[str, dict[str, Any]] = {}
        for route in routes:
            entry = by_regex.setdefault(
                route.regex(param="[^/]+", either=True),
                {"path": "", "method": "", "ignore_case": False, "method_actions": {}},
            )
            entry["method_actions"][route.method] = {
                "action": "no_action",
                "code": 200,
                "data": "",
                "headers": {},
            }
        allow = [{**entry, "path": regex} for regex, entry in by_regex.items()]
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
                        "extended_paths": {"white_list": allow},
                    }
                },
            },
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
        return as_files(
            {
                "tyk.conf": _json(conf),
                "apps/gatebench.json": _json(definition),
                "policies/policies.json": "{}",
            }
        )
