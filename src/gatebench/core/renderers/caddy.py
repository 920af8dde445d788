"""Caddy: a Caddyfile whose ``route`` names the matched route in a variable, 404 when none.

Mapping rules (tests/golden/caddy/README.md says the same in prose):

- Each route is a named matcher ``@rN`` = ``method M`` + ``vars_regexp
  {http.request.uri} `regex``` + "no route chosen yet". ``{http.request.uri}`` is the
  request target as the client escaped it (Go keeps the raw form of a valid escaping);
  Caddy's ``path``/``path_regexp`` matchers would see the decoded, cleaned path instead.
- Inside one ``route`` block (order kept): ``vars @rN gatebench_route rN_id`` per route in
  priority order, ``respond @unrouted 404``, then one ``reverse_proxy`` to the backend
  (keep-alive, streaming bodies, ``Host`` and every header passed unchanged).
- Regexes are backtick-quoted tokens of letters, digits, ``\\xHH`` escapes and regex syntax;
  names are ``[A-Za-z0-9_]``: no spec string can open a block, a placeholder or a new token.
- Site address ``:PORT`` plus ``bind HOST`` (an ``http://HOST:PORT`` address would listen on
  every interface); ``admin off``, ``auto_https off``; Caddy's data and config folders are
  redirected into the workdir (``XDG_DATA_HOME``, ``XDG_CONFIG_HOME``), ``GOMAXPROCS`` =
  the target's ``workers``.
- Policies: API keys only (``_caddy_policies``): a named matcher per policy and ``respond
  401`` between the 404 of the unrouted and ``reverse_proxy``.
- TLS (``target.tls``): ``tls CERT KEY`` with ``gatebench.core.tls``'s protocols, TLS 1.2 ciphers
  and ALPN; the global ``servers`` option offers ``h1 h2`` (or ``h1``), never HTTP/3. The
  Caddyfile cannot turn TLS session tickets off (only the JSON ``tls`` app can).
- Replicas (``target.replicas``): one ``reverse_proxy`` over every replica with ``lb_policy
  round_robin`` or ``least_conn``, active checks (``health_uri``, 1 s interval and timeout)
  and passive ones (``fail_duration 10s``, ``max_fails 1``).
"""

from __future__ import annotations

import os
from typing import ClassVar

from gatebench.core.errors import Problem, RenderError
from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import (
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_TIMEOUT_S,
    PASSIVE_FAILS,
    PASSIVE_WINDOW_S,
)
from gatebench.core.renderers._routes import identifier
from gatebench.core.tls import SERVER_CERT, SERVER_KEY, TLS12_CIPHERS


class CaddyRenderer(Renderer):
    name = "caddy"
    description = "Caddy 2 (Caddyfile): method + raw-URI regex matchers, one reverse_proxy"
    gateway_version = "2.6"
    output_files = ("Caddyfile",)
    runs_here = True
    cloud_image = "caddy:2.6.2"
    check_command: ClassVar[tuple[str, ...] | None] = (
        "caddy",
        "validate",
        "--config",
        "{workdir}/Caddyfile",
        "--adapter",
        "caddyfile",
    )
    run_command: ClassVar[tuple[str, ...] | None] = (
        "caddy",
        "run",
        "--config",
        "{workdir}/Caddyfile",
        "--adapter",
        "caddyfile",
    )
    readiness_timeout = 15.0
    install_hint = "run `scripts/setup.sh apt` (Debian package caddy)"
    live_change = LiveChange(
        "admin-api",
        "Caddy's admin API: POST /load with the new Caddyfile (on the loopback admin port); "
        "Caddy applies it in place, a refused one leaves the old running",
        path="/load",
        content_type="text/caddyfile",
        body="Caddyfile",
    )
    supported_policies: ClassVar[frozenset[str]] = frozenset({"auth.api_key"})
    supported_deployment: ClassVar[frozenset[str]] = frozenset(
        {"tls", "tls.http2", "pool.round_robin", "pool.least_conn"}
    )
    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls.no_resumption": "the Caddyfile has no setting for TLS session tickets (only "
        "Caddy's JSON tls app does)"
    }
    health_checks = "active + passive"

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        from gatebench.core.renderers._caddy_policies import apply_caddy_policies

        return apply_caddy_policies(files, api, policies)

    def env(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> dict[str, str]:
        folder = str(workdir)
        return {
            "HOME": folder,
            "XDG_DATA_HOME": f"{folder}/data",
            "XDG_CONFIG_HOME": f"{folder}/config",
            "GOMAXPROCS": str(target.workers if target else 1),
        }

    def render_live(self, api: Api, target: RenderTarget) -> dict[str, str]:
        """The admin endpoint on the loopback admin port instead of ``admin off`` (the new
        configuration posted to it keeps it there)."""
        files = self.render(api, target)
        if target.admin_port is None:
            raise RenderError(
                [Problem("", "caddy takes live changes through its admin API: give an admin_port")]
            )
        files["Caddyfile"] = files["Caddyfile"].replace(
            "\tadmin off\n", f"\tadmin 127.0.0.1:{target.admin_port}\n", 1
        )
        return files

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        self.refuse_missing_deployment(target)
        routes = self.routes(api)
        names: set[str] = set()
        matchers = []
        setters = []
        for route in routes:
            regex = route.regex(param="[^/?]+", anchor_end="(?:\\x3f|$)")
            value = f"r{route.index}_{identifier(route.operation_id, taken=names)}"
            matchers.append(
                f"\t@r{route.index} {{\n"
                f"\t\tmethod {route.method}\n"
                "\t\tvars gatebench_route none\n"
                f"\t\tvars_regexp {{http.request.uri}} `{regex}`\n"
                "\t}"
            )
            setters.append(f"\t\tvars @r{route.index} gatebench_route {value}")
        upstream = f"{target.backend_scheme}://{target.backend_host}:{target.backend_port}"
        if target.pooled:
            upstream = " ".join(f"http://{h}:{p}" for h, p in target.upstreams) + _pool(target)
        body = "\n".join(matchers)
        text = f"""\
# Caddy {self.gateway_version} configuration rendered by gatebench: {len(routes)} route(s).
# Generated file; re-render instead of editing.
{{
	admin off
	auto_https off{_servers(target)}
}}

:{target.listen_port} {{
	bind {target.listen_host}{_tls(target)}

	# Method and raw request URI -> route, first match wins (routes in priority order).
{body}
	@unrouted vars gatebench_route none

	route {{
		vars gatebench_route none
{chr(10).join(setters)}
		respond @unrouted 404
		reverse_proxy {upstream}
	}}
}}
"""
        return as_files({"Caddyfile": text})


def _servers(target: RenderTarget) -> str:
    if target.tls is None:
        return ""
    protocols = "h1 h2" if target.tls.http2 else "h1"
    return f"\n\tservers {{\n\t\tprotocols {protocols}\n\t}}"


def _tls(target: RenderTarget) -> str:
    tls = target.tls
    if tls is None:
        return ""
    return (
        f"\n\ttls {tls.path(SERVER_CERT)} {tls.path(SERVER_KEY)} {{\n"
        "\t\tprotocols tls1.2 tls1.3\n"
        f"\t\tciphers {' '.join(TLS12_CIPHERS)}\n"
        f"\t\talpn {' '.join(tls.alpn)}\n"
        "\t}"
    )


def _pool(target: RenderTarget) -> str:
    return (
        " {\n"
        f"\t\t\tlb_policy {target.balance}\n"
        f"\t\t\thealth_uri {HEALTH_PATH}\n"
        f"\t\t\thealth_interval {HEALTH_INTERVAL_S}s\n"
        f"\t\t\thealth_timeout {HEALTH_TIMEOUT_S}s\n"
        f"\t\t\tfail_duration {PASSIVE_WINDOW_S}s\n"
        f"\t\t\tmax_fails {PASSIVE_FAILS}\n"
        "\t\t}"
    )
