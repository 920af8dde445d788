"""Apache httpd 2.4 with mod_proxy: its own minimal configuration, mod_rewrite for routing.

Mapping rules (tests/golden/apache/README.md says the same in prose):

- A complete ``httpd.conf`` that loads only what it needs (event MPM, mod_rewrite,
  mod_proxy, mod_proxy_http) by paths relative to the server root (``-d``: Debian's
  ``/usr/lib/apache2`` here, ``/usr/local/apache2`` in the official image).
- Routing matches ``%{THE_REQUEST}``, the raw request line (``GET /path?query HTTP/1.1``):
  one negated ``RewriteCond`` per route (method, a space, the path regex, then ``?`` or a
  space), ANDed; when none matches, ``RewriteRule ^ - [R=404,L]``. ``<LocationMatch>``
  would see the decoded, normalised path instead.
- A match is proxied by ``ProxyPass / http://backend/ nocanon`` (the raw path goes to the
  backend unchanged; ``AllowEncodedSlashes NoDecode`` keeps ``%2F``), with
  ``ProxyPreserveHost On`` and pooled keep-alive connections (``ttl=60``: idle ones are kept a
  minute); bodies unlimited (``LimitRequestBody 0``).
- A fair fight (docs/gateways.md): the event MPM runs one process per core of the target
  (``StartServers``, and ``MaxRequestWorkers`` / ``ThreadsPerChild``), each with enough worker
  threads that every request in flight has one (``ThreadsPerChild``; mod_proxy's pool per
  process is as large), none stopped for being idle; ``ServerLimit`` is twice that, so a
  graceful restart (a live change) has slots for the new generation beside the old one;
  keep-alive 60 s, unlimited requests per connection; no access log. httpd's parent starts
  the new generation of a graceful restart when an old process exits or at its next
  one-second maintenance tick, so a change under load often waits about a second (measured on
  one core, 100 routes, 200 requests a second: 9 of 11 changes, with one, two or three
  processes alike; docs/scale.md): httpd's, not the rendering's.
- Regexes are unquoted tokens of letters, digits, ``\\xHH`` escapes and regex syntax: no
  spec string can end the directive, add a ``%{...}`` expansion or a new line.
- Pid, logs, the runtime folder (mutexes) all live in the workdir. ``TRACE`` operations are
  refused (httpd's core answers TRACE itself).
- TLS (``target.tls``): mod_ssl on the one listener with the run's chain and key,
  ``SSLProtocol -all +TLSv1.2 +TLSv1.3``, ``gatebench.core.tls``'s TLS 1.2 ciphers in the server's
  order, a shared-memory session cache and tickets (or ``SSLSessionCache none`` and
  ``SSLSessionTickets off``); ``Protocols h2 http/1.1`` (mod_http2) or ``http/1.1``.
- Replicas (``target.replicas``): mod_proxy_balancer, one ``BalancerMember`` per replica,
  ``lbmethod=byrequests`` (round robin) or ``bybusyness`` (the fewest requests in flight);
  active checks by mod_proxy_hcheck (``hcuri=/__gatebench__/health``, every second, 2 to fall,
  2 to rise) and mod_proxy's own passive one (a member that refused a connection is left out
  for ``retry=10`` seconds). The common retry policy, as far as mod_proxy_balancer goes:
  ``maxattempts=2`` (a request whose member refused or failed the connection goes to another
  member, whatever its method: the balancer's failover); a request already sent whose
  connection then broke is not resent, whatever its method (mod_proxy_http closes the
  client's connection instead, so that the client may retry an idempotent request).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import ClassVar

from gatebench.core.ir import Api
from gatebench.core.renderers._apache_policies import apply_apache_policies
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import (
    HEALTH_FALL,
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_RISE,
    PASSIVE_WINDOW_S,
    RETRY_TRIES,
)
from gatebench.core.renderers._parity import (
    CONNECT_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    LISTEN_BACKLOG,
    Parity,
    VendorPage,
)
from gatebench.core.tls import SERVER_CERT, SERVER_KEY, openssl_ciphers

_MODULES = (
    ("mpm_event_module", "mod_mpm_event.so"),
    ("authz_core_module", "mod_authz_core.so"),
    ("rewrite_module", "mod_rewrite.so"),
    ("proxy_module", "mod_proxy.so"),
    ("proxy_http_module", "mod_proxy_http.so"),
)
LOCAL_SERVER_ROOT = "/usr/lib/apache2"
IMAGE_SERVER_ROOT = "/usr/local/apache2"


def _httpd(program: str, server_root: str, config: str, *, check: bool) -> tuple[str, ...]:
    """httpd's checker (``-t``) or server in the foreground, for ``config`` with the modules
    of ``server_root``: the same command here (Debian's ``apache2``) and in the image."""
    if check:
        return (program, "-t", "-d", server_root, "-f", config)
    return (program, "-d", server_root, "-f", config, "-DFOREGROUND")


class ApacheRenderer(Renderer):
    name = "apache"
    aliases = ("apache2", "httpd")
    description = (
        "Apache httpd 2.4 (mod_proxy): mod_rewrite on the raw request line, ProxyPass nocanon"
    )
    gateway_version = "2.4"
    output_files = ("httpd.conf",)
    runs_here = True
    cloud_image = "httpd:2.4.62"
    check_command = _httpd("apache2", LOCAL_SERVER_ROOT, "{workdir}/httpd.conf", check=True)
    run_command = _httpd("apache2", LOCAL_SERVER_ROOT, "{workdir}/httpd.conf", check=False)
    readiness_timeout = 15.0
    trace_refusal = "httpd's core answers TRACE itself"
    install_hint = "run `scripts/setup.sh apt` (Debian package apache2)"
    live_change = LiveChange(
        "signal",
        "Apache graceful restart: SIGUSR1 to the parent (what `apachectl -k graceful` sends); "
        "children finish their requests, new ones read the new configuration",
        signal="SIGUSR1",
    )
    supported_policies: ClassVar[frozenset[str]] = frozenset(
        {"auth.api_key", "cache", "cache.path_only", "cache.vary_header"}
    )
    apply_policies = staticmethod(apply_apache_policies)

    health_checks = "active + passive"

    parity = Parity(
        cores="event MPM: `StartServers` = `MaxRequestWorkers` / `ThreadsPerChild` = cores (one "
        "listener process per core; `ServerLimit` twice that, for a graceful restart)",
        pools="`ThreadsPerChild` × processes ≥ concurrency (a request holds a thread); "
        "mod_proxy's pool per process is as large",
        keepalive="`KeepAliveTimeout 60`, `MaxKeepAliveRequests 0` (no limit); backend "
        "connections reused (mod_proxy's pool, the default) and kept `ttl=60` s idle, with "
        "TCP keep-alive probes (`keepalive=On`)",
        timeouts="`connectiontimeout=10` on the backend, `Timeout 300`, `ProxyTimeout 300` (the "
        "connect timeout is otherwise the 300 s `Timeout`)",
        bodies="streamed, `LimitRequestBody 0`",
        logs="no `CustomLog`: no access log; no mod_status",
        routes="one negated `RewriteCond` per route on the raw request line, tried in turn",
        retries=f"balancer failover: `ProxySet maxattempts={RETRY_TRIES - 1}` (a member that "
        "fails the connection is put in error state and the request goes to another, any "
        "method). Cannot resend a request already sent, even an idempotent one: mod_proxy "
        "has no setting for it (it closes the client's connection without an answer)",
        pages=(
            VendorPage(
                "Apache Performance Tuning",
                "https://httpd.apache.org/docs/2.4/misc/perf-tuning.html",
            ),
            VendorPage("Apache MPM event", "https://httpd.apache.org/docs/2.4/mod/event.html"),
            VendorPage(
                "mod_proxy: workers and connection pooling",
                "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#workers",
            ),
            VendorPage(
                "mod_proxy: BalancerMember parameters (maxattempts)",
                "https://httpd.apache.org/docs/2.4/mod/mod_proxy.html#proxypass",
            ),
        ),
    )

    def cpu_setting(self, target: RenderTarget) -> str:
        return (
            f"event MPM: {target.workers} process(es) × {threads_per_child(target)} threads "
            "(StartServers, MaxRequestWorkers / ThreadsPerChild)"
        )

    def cloud_argv(self, target: RenderTarget) -> list[str] | None:
        return list(_httpd("httpd", IMAGE_SERVER_ROOT, target.path("httpd.conf"), check=False))

    def cloud_check_argv(self, target: RenderTarget) -> list[str] | None:
        return list(_httpd("httpd", IMAGE_SERVER_ROOT, target.path("httpd.conf"), check=True))

    def prepare(self, workdir: Path) -> None:
        for sub in ("logs", "run"):
            (workdir / sub).mkdir(parents=True, exist_ok=True)

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        conditions = [
            "RewriteCond %{THE_REQUEST} !^"
            + route.method
            + "\\x20"
            + route.regex(param="[^/?\\x20]+", anchor_start="", anchor_end="(?:\\x3f|\\x20)")
            for route in routes
        ]
        modules = "\n".join(f"LoadModule {name} modules/{file}" for name, file in _MODULES)
        scheme = target.backend_scheme
        ssl = "\nSSLProxyEngine On" if scheme == "https" else ""
        if ssl or target.tls is not None:
            modules += "\nLoadModule ssl_module modules/mod_ssl.so"
        modules += _deployment_modules(target)
        threads = threads_per_child(target)
        text = f"""\
# Apache httpd {self.gateway_version} configuration rendered by gatebench: {len(routes)} route(s).
# Generated file; re-render instead of editing. Server root comes from -d.
{modules}

ServerName gatebench.local
Listen {target.listen_address}
ListenBacklog {LISTEN_BACKLOG}
PidFile {target.path("httpd.pid")}
DefaultRuntimeDir {target.path("run")}
ErrorLog {target.path("logs", "error.log")}
LogLevel warn
User www-data
Group www-data
ServerTokens Prod
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout {IDLE_TIMEOUT_S}
Timeout 300

# Event MPM: one process (its listener thread and workers) per core, every request in
# flight with a worker thread of its own, and no process ever stopped for being idle. At most
# MaxRequestWorkers / ThreadsPerChild processes serve; ServerLimit leaves as many slots again
# for a graceful restart's new generation while the old one finishes.
StartServers {target.workers}
ServerLimit {2 * target.workers}
ThreadLimit {threads}
ThreadsPerChild {threads}
MaxRequestWorkers {target.workers * threads}
MinSpareThreads {threads}
MaxSpareThreads {(target.workers + 1) * threads}

# Forward every header and body unchanged; keep the raw path.
LimitRequestBody 0
LimitRequestLine 65536
LimitRequestFieldSize 65536
AllowEncodedSlashes NoDecode
ProxyRequests Off
ProxyPreserveHost On
ProxyTimeout 300{ssl}

# Method and raw request line -> 404 unless some route matches.
RewriteEngine On
{chr(10).join(conditions)}
RewriteRule ^ - [R=404,L]

{_tls(target)}{_proxy_pass(target)}
"""
        return as_files({"httpd.conf": text})


def threads_per_child(target: RenderTarget) -> int:
    """Worker threads of each event-MPM process: together at least the target's concurrency
    (mod_proxy holds a thread for each request it forwards)."""
    return max(25, math.ceil(target.concurrency / target.workers))


def _deployment_modules(target: RenderTarget) -> str:
    mods: list[tuple[str, str]] = []
    if target.tls is not None:
        mods.append(("socache_shmcb_module", "mod_socache_shmcb.so"))
        if target.tls.http2:
            mods.append(("http2_module", "mod_http2.so"))
    if target.pooled:
        mods += [
            ("slotmem_shm_module", "mod_slotmem_shm.so"),
            ("proxy_balancer_module", "mod_proxy_balancer.so"),
            (
                ("lbmethod_bybusyness_module", "mod_lbmethod_bybusyness.so")
                if target.balance == "least_conn"
                else ("lbmethod_byrequests_module", "mod_lbmethod_byrequests.so")
            ),
        ]
    out = "".join(f"\nLoadModule {name} modules/{file}" for name, file in mods)
    if target.pooled:
        # Debian builds mod_watchdog in; the official image has it as a module.
        out += (
            "\n<IfModule !watchdog_module>\n"
            "    LoadModule watchdog_module modules/mod_watchdog.so\n"
            "</IfModule>\n"
            "LoadModule proxy_hcheck_module modules/mod_proxy_hcheck.so"
        )
    return out


def _tls(target: RenderTarget) -> str:
    tls = target.tls
    if tls is None:
        return ""
    if tls.resumption:
        cache = f"SSLSessionCache shmcb:{target.path('run', 'ssl_scache')}(512000)\nSSLSessionCacheTimeout 3600\nSSLSessionTickets on"
    else:
        cache = "SSLSessionCache none\nSSLSessionTickets off"
    protocols = "h2 http/1.1" if tls.http2 else "http/1.1"
    return f"""# TLS on the listener (gatebench.core.tls's protocols and ciphers).
SSLEngine on
SSLCertificateFile {tls.path(SERVER_CERT)}
SSLCertificateKeyFile {tls.path(SERVER_KEY)}
SSLProtocol -all +TLSv1.2 +TLSv1.3
SSLCipherSuite {openssl_ciphers()}
SSLHonorCipherOrder on
{cache}
Protocols {protocols}

"""


def _proxy_pass(target: RenderTarget) -> str:
    scheme = target.backend_scheme
    if not target.pooled:
        return (
            f"ProxyPass / {scheme}://{target.backend_host}:{target.backend_port}/ nocanon "
            f"keepalive=On ttl={IDLE_TIMEOUT_S} connectiontimeout={CONNECT_TIMEOUT_S}"
        )
    method = "bybusyness" if target.balance == "least_conn" else "byrequests"
    members = "".join(
        f"    BalancerMember http://{host}:{port} keepalive=On ttl={IDLE_TIMEOUT_S} "
        f"connectiontimeout={CONNECT_TIMEOUT_S} retry={PASSIVE_WINDOW_S} "
        f"hcmethod=GET hcuri={HEALTH_PATH} hcinterval={HEALTH_INTERVAL_S} "
        f"hcfails={HEALTH_FALL} hcpasses={HEALTH_RISE}\n"
        for host, port in target.upstreams
    )
    return (
        "<Proxy balancer://gatebench>\n"
        f"{members}"
        f"    ProxySet lbmethod={method} maxattempts={RETRY_TRIES - 1}\n"
        "</Proxy>\n"
        "ProxyPass / balancer://gatebench/ nocanon"
    )
