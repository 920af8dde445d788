"""nginx: one ``map`` from method + raw request URI to the matched route, one proxy location.

Mapping rules (tests/golden/nginx/README.md says the same in prose):

- Every route becomes a regex key of ``map "$request_method $request_uri" $gatebench_route``,
  in priority order (nginx checks regex keys in order of appearance). ``$request_uri`` is
  the raw request target, so matching sees exactly what the client sent; the regex ends at
  the query string (``(?:\\?|$)``).
- No match → ``return 404``. A match → ``proxy_pass`` without a URI part, which sends the
  original request target unchanged, to an ``upstream`` with keep-alive connections.
- A fair fight (docs/gateways.md, the parity table): ``worker_processes`` = the target's
  cores, the upstream keeps up to the target's concurrency idle connections per worker,
  idle connections (client and upstream) close after 60 s, 100,000 requests per connection,
  no access log.
- Headers pass unchanged (``underscores_in_headers on``, ``ignore_invalid_headers off``,
  ``Host`` preserved); bodies of any size stream (``client_max_body_size 0``,
  ``proxy_request_buffering off``).
- Pid, logs and temporary folders live in the workdir (``-p`` prefix, ``-e`` error log), so
  several instances can run at once and nothing touches /var/log or /run.
- TLS (``target.tls``): ``listen ... ssl`` (plus ``http2`` when asked: ALPN then offers
  ``h2``), the run's chain and key, ``gatebench.core.tls``'s protocols and TLS 1.2 ciphers with the
  server's order; resumption through a shared session cache and tickets, or both off.
- Replicas (``target.replicas``): every replica a ``server`` of the upstream (``least_conn;``
  when asked), with nginx's passive checks spelled out (``max_fails=1 fail_timeout=10s``: a
  failed connection takes a replica out for 10 s); open-source nginx has no active checks.
  The retry policy every pooled gateway gets is nginx's default, spelled out:
  ``proxy_next_upstream error timeout`` (a failed connection goes to the next replica for any
  method, a request already sent only when idempotent) and ``proxy_next_upstream_tries 3``.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from gatebench.core.ir import Api
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import PASSIVE_FAILS, PASSIVE_WINDOW_S, RETRY_TRIES
from gatebench.core.renderers._nginx_policies import apply_nginx_policies, nginx_policy_limits
from gatebench.core.renderers._parity import (
    IDLE_TIMEOUT_S,
    KEEPALIVE_REQUESTS,
    LISTEN_BACKLOG,
    Parity,
    VendorPage,
)
from gatebench.core.renderers._routes import route_names
from gatebench.core.tls import PROTOCOLS, SERVER_CERT, SERVER_KEY, openssl_ciphers


def nginx_quote(text: str) -> str:
    """A double-quoted nginx string; only regex text made of ``\\xHH`` escapes reaches here,
    but quotes and backslashes are escaped anyway."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# The checker's and the server's: the prefix (pid, temporary folders), error log and config.
_FILES = ("-p", "{workdir}/", "-e", "{workdir}/logs/error.log", "-c", "{workdir}/nginx.conf")


class NginxRenderer(Renderer):
    name = "nginx"
    description = "nginx (open source) as a reverse proxy: regex map on the raw request URI"
    gateway_version = "1.22"
    output_files = ("nginx.conf",)
    runs_here = True
    cloud_image = "nginx:1.22.1"
    check_command = ("nginx", "-t", "-q", *_FILES)
    run_command = ("nginx", *_FILES)
    readiness_timeout = 10.0
    trace_refusal = "nginx answers TRACE with 405 itself"
    install_hint = "run `scripts/setup.sh apt` (Debian package nginx)"
    live_change = LiveChange(
        "signal",
        "nginx reload: SIGHUP to the master (what `nginx -s reload` sends); new workers start "
        "with the new configuration, the old ones finish their requests and exit",
        signal="SIGHUP",
    )
    supported_policies: ClassVar[frozenset[str]] = frozenset(
        {
            "auth.api_key",
            "cache",
            "cache.path_only",
            "cache.vary_header",
            "rate_limit.address",
            "rate_limit.header",
        }
    )
    apply_policies = staticmethod(apply_nginx_policies)
    policy_limits = staticmethod(nginx_policy_limits)

    health_checks = "passive"
    cores_setting = "worker_processes {workers}"

    parity = Parity(
        cores="`worker_processes` = cores (one event-loop process per core)",
        pools="upstream `keepalive` = concurrency idle connections per worker; "
        "`worker_connections` ≥ 2 × concurrency",
        keepalive="`keepalive_timeout 60s`, `keepalive_requests 100000` to clients and to "
        "the upstream (its `keepalive_timeout 60s`)",
        timeouts="`proxy_connect_timeout 10s`, `proxy_read_timeout`/`proxy_send_timeout 300s`",
        bodies="`client_max_body_size 0`, `proxy_request_buffering off` (streamed)",
        logs="`access_log off`, errors at `warn`; no status module",
        routes="one regex `map` on method and raw URI, tried in order (nginx's regex "
        "locations would see the decoded URI)",
        retries=f"`proxy_next_upstream error timeout` (its default: a request already sent is "
        f"not passed on unless idempotent, nor once its streamed body has started), "
        f"`proxy_next_upstream_tries {RETRY_TRIES}`",
        pages=(
            VendorPage("Tuning NGINX for Performance", "https://www.nginx.com/blog/tuning-nginx/"),
            VendorPage(
                "ngx_core_module: worker_processes",
                "https://nginx.org/en/docs/ngx_core_module.html#worker_processes",
            ),
            VendorPage(
                "ngx_http_upstream_module: keepalive",
                "https://nginx.org/en/docs/http/ngx_http_upstream_module.html#keepalive",
            ),
            VendorPage(
                "ngx_http_proxy_module: proxy_next_upstream",
                "https://nginx.org/en/docs/http/ngx_http_proxy_module.html#proxy_next_upstream",
            ),
        ),
    )

    def prepare(self, workdir: Path) -> None:
        for sub in ("logs", "tmp"):
            (workdir / sub).mkdir(parents=True, exist_ok=True)

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        names = route_names(routes)
        keys = []
        for route in routes:
            regex = route.regex(param="[^/?]+", anchor_start="", anchor_end="(?:\\x3f|$)")
            pattern = "~^" + route.method + "\\x20" + regex
            keys.append(f"        {nginx_quote(pattern)} {names[route.index]};")
        w = target.path
        text = f"""\
# nginx {self.gateway_version} configuration rendered by gatebench: {len(routes)} route(s).
# Generated file; re-render instead of editing. Only the map below differs between APIs.
daemon off;
master_process on;
worker_processes {target.workers};
pid {w("nginx.pid")};
error_log {w("logs", "error.log")} warn;

events {{
    worker_connections {_worker_connections(target)};
}}

http {{
    access_log off;
    server_tokens off;
    default_type application/octet-stream;
    client_body_temp_path {w("tmp", "client_body")};
    proxy_temp_path {w("tmp", "proxy")};
    fastcgi_temp_path {w("tmp", "fastcgi")};
    uwsgi_temp_path {w("tmp", "uwsgi")};
    scgi_temp_path {w("tmp", "scgi")};

    # Forward every header and body unchanged.
    client_max_body_size 0;
    underscores_in_headers on;
    ignore_invalid_headers off;
    large_client_header_buffers 8 64k;
    merge_slashes off;
    keepalive_timeout {IDLE_TIMEOUT_S}s;
    keepalive_requests {KEEPALIVE_REQUESTS};

    upstream gatebench_backend {{
{_servers(target)}
        keepalive {target.concurrency};
        keepalive_timeout {IDLE_TIMEOUT_S}s;
        keepalive_requests {KEEPALIVE_REQUESTS};
    }}

    # Method and raw request target -> route; regex keys are tried in this order.
    map "$request_method $request_uri" $gatebench_route {{
        default "";
{chr(10).join(keys)}
    }}

    server {{
        listen {target.listen_address}{listen_tls(target)} backlog={LISTEN_BACKLOG};
        server_name _;
{_tls_lines(target)}
        location / {{
            if ($gatebench_route = "") {{
                return 404;
            }}
            proxy_pass {target.backend_scheme}://gatebench_backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_request_buffering off;
            proxy_connect_timeout 10s;
            proxy_send_timeout 300s;
            proxy_read_timeout 300s;{_retries(target)}
        }}
    }}
}}
"""
        return as_files({"nginx.conf": text})


def _worker_connections(target: RenderTarget) -> int:
    """Each worker's connection limit: a proxied request holds two (client and backend), and
    one worker may receive every client."""
    return max(4096, 2 * target.concurrency + 64)


def _servers(target: RenderTarget) -> str:
    if not target.pooled:
        return f"        server {target.backend_host}:{target.backend_port};"
    lines = ["        least_conn;"] if target.balance == "least_conn" else []
    lines += [
        f"        server {host}:{port} max_fails={PASSIVE_FAILS} fail_timeout={PASSIVE_WINDOW_S}s;"
        for host, port in target.upstreams
    ]
    return "\n".join(lines)


def _retries(target: RenderTarget) -> str:
    """With replicas, the common retry policy (``_deployment.RETRY_TRIES``): nginx's default
    conditions, written out, and the tries bounded (nginx's default is every server)."""
    if not target.pooled:
        return ""
    return (
        "\n            proxy_next_upstream error timeout;"
        f"\n            proxy_next_upstream_tries {RETRY_TRIES};"
    )


def listen_tls(target: RenderTarget) -> str:
    """What nginx's ``listen`` adds for the target's TLS (Kong's ``proxy_listen`` takes the
    same, its proxy being nginx)."""
    if target.tls is None:
        return ""
    return " ssl http2" if target.tls.http2 else " ssl"


def _tls_lines(target: RenderTarget) -> str:
    tls = target.tls
    if tls is None:
        return ""
    if tls.resumption:
        resumption = (
            "        ssl_session_cache shared:gatebench_tls:10m;\n"
            "        ssl_session_timeout 1h;\n"
            "        ssl_session_tickets on;\n"
        )
    else:
        resumption = "        ssl_session_cache off;\n        ssl_session_tickets off;\n"
    return (
        f"        ssl_certificate {tls.path(SERVER_CERT)};\n"
        f"        ssl_certificate_key {tls.path(SERVER_KEY)};\n"
        f"        ssl_protocols {' '.join(PROTOCOLS)};\n"
        f"        ssl_ciphers {openssl_ciphers()};\n"
        "        ssl_prefer_server_ciphers on;\n"
        f"{resumption}"
    )
