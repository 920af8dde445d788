"""Caddy: a Caddyfile whose ``route`` names the matched route in a variable, 404 when none.

Mapping rules (tests/golden/caddy/README.md says the same in prose):

- One ``map`` from ``{http.request.method} {http.request.uri}`` to the placeholder
  ``{gatebench_route}``: one regex key per route (``~^METHOD\\x20regex``), in priority order
  (Caddy tries a map's keys in order and takes the first match), default ``none``.
  ``{http.request.uri}`` is the request target as the client escaped it (Go keeps the raw
  form of a valid escaping); Caddy's ``path``/``path_regexp`` matchers would see the decoded,
  cleaned path instead. One map, as nginx's: a request costs one regex per route tried, not a
  handler and three matchers per route (a ``vars`` subroute per route took 17 ms of CPU per
  request at 10,000 routes; docs/scale.md).
- One ``route`` block: ``respond @unrouted 404`` (``@unrouted`` = ``vars {gatebench_route}
  none``), then one ``reverse_proxy`` to the backend (keep-alive, streaming bodies, ``Host`` and
  every header passed unchanged).
- A fair fight (docs/gateways.md, the parity table): ``GOMAXPROCS`` = the target's cores; the
  transport keeps up to the target's concurrency idle connections (Caddy's default: 32 per
  host) for 60 s; a client's idle connection closes after 60 s (default 5 min); no access log
  (no ``log``) and no metrics (Caddy 2.6 collects them only with ``servers { metrics }``).
- Regexes are backtick-quoted tokens of letters, digits, ``\\xHH`` escapes and regex syntax;
  names are ``[A-Za-z0-9_]``: no spec string can open a block, a placeholder or a new token.
- Site address ``:PORT`` plus ``bind HOST`` (an ``http://HOST:PORT`` address would listen on
  every interface); ``admin off``, ``auto_https off``; Caddy's data and config folders are
  redirected into the workdir (``XDG_DATA_HOME``, ``XDG_CONFIG_HOME``).
- Policies: API keys only (``_caddy_policies``): a named matcher per policy and ``respond
  401`` between the 404 of the unrouted and ``reverse_proxy``.
- TLS (``target.tls``): ``tls CERT KEY`` with ``gatebench.core.tls``'s protocols, TLS 1.2 ciphers
  and ALPN; the global ``servers`` option offers ``h1 h2`` (or ``h1``), never HTTP/3. The
  Caddyfile cannot turn TLS session tickets off (only the JSON ``tls`` app can).
- Replicas (``target.replicas``): one ``reverse_proxy`` over every replica with ``lb_policy
  round_robin`` or ``least_conn``, active checks (``health_uri``, 1 s interval and timeout)
  and passive ones (``fail_duration 10s``, ``max_fails 1``). The common retry policy:
  ``lb_retries 2`` (no ``lb_try_duration``, so no 250 ms wait between tries): Caddy retries a
  failed connection for any method, and a failed round trip only when ``lb_retry_match``
  matches: the idempotent methods without a body (``header !Content-Length``; PUT, and
  chunked bodies, left out: Caddy streams a body and would resend it drained).
"""

from __future__ import annotations

import os
from typing import ClassVar

from gatebench.core.errors import Problem, RenderError
from gatebench.core.ir import Api
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._caddy_policies import apply_caddy_policies
from gatebench.core.renderers._deployment import (
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_TIMEOUT_S,
    IDEMPOTENT_METHODS,
    PASSIVE_FAILS,
    PASSIVE_WINDOW_S,
    RETRY_TRIES,
)
from gatebench.core.renderers._parity import (
    CONNECT_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    RESPONSE_TIMEOUT_S,
    Parity,
    VendorPage,
)
from gatebench.core.renderers._routes import route_names
from gatebench.core.tls import SERVER_CERT, SERVER_KEY, TLS12_CIPHERS

_CONFIG = ("--config", "{workdir}/Caddyfile", "--adapter", "caddyfile")


class CaddyRenderer(Renderer):
    name = "caddy"
    description = "Caddy 2 (Caddyfile): method + raw-URI regex matchers, one reverse_proxy"
    gateway_version = "2.6"
    output_files = ("Caddyfile",)
    runs_here = True
    cloud_image = "caddy:2.6.2"
    check_command = ("caddy", "validate", *_CONFIG)
    run_command = ("caddy", "run", *_CONFIG)
    cores_env = "GOMAXPROCS"
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
    apply_policies = staticmethod(apply_caddy_policies)
    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls.no_resumption": "the Caddyfile has no setting for TLS session tickets (only "
        "Caddy's JSON tls app does)"
    }
    health_checks = "active + passive"

    parity = Parity(
        cores="`GOMAXPROCS` = cores (Go's default is every core it may use)",
        pools="`transport http { keepalive_idle_conns`, `keepalive_idle_conns_per_host` } = "
        "concurrency (default 32 per host)",
        keepalive="`servers { timeouts { idle 60s } }` (default 5 min); upstream `keepalive "
        "60s`; no request limit",
        timeouts="transport `dial_timeout 10s`, `response_header_timeout 300s`",
        bodies="streamed (`reverse_proxy` buffers nothing by default)",
        logs="no `log` directive: no access log; no metrics (Caddy 2.6 collects them only "
        "with `servers { metrics }`)",
        routes="one `map` of method and raw URI to the route, regex keys tried in order (a "
        "subroute per route cost 17 ms of CPU per request at 10,000 routes)",
        retries=f"`lb_retries {RETRY_TRIES - 1}` (a failed connection: any method); "
        "`lb_retry_match { method GET HEAD OPTIONS TRACE DELETE; header !Content-Length }` for "
        "a request already sent (default: GET only); a PUT or a request with a body is not "
        "resent once sent (Caddy streams the body and cannot replay it)",
        pages=(
            VendorPage(
                "reverse_proxy (Caddyfile directive)",
                "https://caddyserver.com/docs/caddyfile/directives/reverse_proxy",
            ),
            VendorPage(
                "map (Caddyfile directive)", "https://caddyserver.com/docs/caddyfile/directives/map"
            ),
            VendorPage(
                "Global options: servers", "https://caddyserver.com/docs/caddyfile/options#servers"
            ),
        ),
    )

    def env(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> dict[str, str]:
        folder = str(workdir)
        return {
            "HOME": folder,
            "XDG_DATA_HOME": f"{folder}/data",
            "XDG_CONFIG_HOME": f"{folder}/config",
            **super().env(workdir, target),
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
        routes = self.render_routes(api, target)
        names = route_names(routes)
        keys = []
        for route in routes:
            regex = route.regex(param="[^/?]+", anchor_start="", anchor_end="(?:\\x3f|$)")
            keys.append(f"\t\t`~^{route.method}\\x20{regex}` {names[route.index]}")
        upstream = f"{target.backend_scheme}://{target.backend_host}:{target.backend_port}"
        if target.pooled:
            upstream = " ".join(f"http://{h}:{p}" for h, p in target.upstreams)
        text = f"""\
# Caddy {self.gateway_version} configuration rendered by gatebench: {len(routes)} route(s).
# Generated file; re-render instead of editing.
{{
\tadmin off
\tauto_https off
{_servers(target)}
}}

:{target.listen_port} {{
\tbind {target.listen_host}{_tls(target)}

\t# Method and raw request URI -> route: one map, regex keys tried in order, first match wins.
\tmap "{{http.request.method}} {{http.request.uri}}" {{gatebench_route}} {{
{chr(10).join(keys)}
\t\tdefault none
\t}}
\t@unrouted vars {{gatebench_route}} none

\troute {{
\t\trespond @unrouted 404
\t\treverse_proxy {upstream} {{
{_proxy_settings(target)}
\t\t}}
\t}}
}}
"""
        return as_files({"Caddyfile": text})


def _servers(target: RenderTarget) -> str:
    """The global ``servers`` options: a client's idle connection closes after 60 s (Caddy's
    default is 5 min), and with TLS the protocols offered (never HTTP/3)."""
    lines = ["\tservers {", "\t\ttimeouts {", f"\t\t\tidle {IDLE_TIMEOUT_S}s", "\t\t}"]
    if target.tls is not None:
        lines.append(f"\t\tprotocols {'h1 h2' if target.tls.http2 else 'h1'}")
    return "\n".join([*lines, "\t}"])


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


def _proxy_settings(target: RenderTarget) -> str:
    """``reverse_proxy``'s block: the transport keeps up to the target's concurrency idle
    connections to the backend (Caddy's default is 32 per host) for 60 s; with replicas, the
    balancer and its checks."""
    lines = [
        "\t\t\ttransport http {",
        f"\t\t\t\tdial_timeout {CONNECT_TIMEOUT_S}s",
        f"\t\t\t\tresponse_header_timeout {RESPONSE_TIMEOUT_S}s",
        f"\t\t\t\tkeepalive {IDLE_TIMEOUT_S}s",
        f"\t\t\t\tkeepalive_idle_conns {target.concurrency}",
        f"\t\t\t\tkeepalive_idle_conns_per_host {target.concurrency}",
        "\t\t\t}",
    ]
    if target.pooled:
        lines += [
            f"\t\t\tlb_policy {target.balance}",
            f"\t\t\thealth_uri {HEALTH_PATH}",
            f"\t\t\thealth_interval {HEALTH_INTERVAL_S}s",
            f"\t\t\thealth_timeout {HEALTH_TIMEOUT_S}s",
            f"\t\t\tfail_duration {PASSIVE_WINDOW_S}s",
            f"\t\t\tmax_fails {PASSIVE_FAILS}",
            # The common retry policy: a failed dial goes to another replica for any method;
            # a request already sent only when idempotent and without a body to replay.
            f"\t\t\tlb_retries {RETRY_TRIES - 1}",
            "\t\t\tlb_retry_match {",
            f"\t\t\t\tmethod {' '.join(REPLAYABLE_METHODS)}",
            "\t\t\t\theader !Content-Length",
            "\t\t\t}",
        ]
    return "\n".join(lines)


REPLAYABLE_METHODS = tuple(m for m in IDEMPOTENT_METHODS if m != "PUT")
"""The methods Caddy resends once sent: the idempotent ones but PUT, which carries a body
that Caddy, streaming it, could not replay."""
