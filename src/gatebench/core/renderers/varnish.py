"""Varnish Cache 7 as a pass-through proxy: VCL routing on the raw URL, no caching.

Mapping rules (tests/golden/varnish/README.md says the same in prose):

- One ``if (req.method == "M" && req.url ~ "regex") { return (pass); }`` per route in
  priority order, in subroutines of :data:`ROUTES_PER_SUB` routes (``gatebench_routes_N``)
  that ``vcl_recv`` calls in turn (a ``return`` in one ends ``vcl_recv``); everything else
  is ``return (synth(404))``. Varnish compiles VCL to C, and the C compiler's time grows
  faster than linearly with one function's size: split, it grows linearly. ``req.url`` is
  the raw request target, so the regex ends at ``?`` or the end.
- ``pass`` means nothing is cached: every request reaches the backend, bodies stream both
  ways, ``Host`` and every header are kept (Varnish adds ``X-Varnish``, ``Via`` and
  ``X-Forwarded-For``). The backend connection pool keeps connections alive.
- VCL strings have no escapes and may not hold ``"`` or a newline: regexes are made of
  letters, digits, ``\\xHH`` escapes and regex syntax only; the method is one of the IR's
  fixed upper-case names.
- The listen address and the management port are on the command line (``-a``, ``-T``),
  filled from the target; the working folder (``-n``) is inside the workdir, ``-j none``
  keeps the cache process under the caller's user (no jail), ``-s malloc,64m``; a fair fight
  (docs/gateways.md): ``thread_pools`` = the target's cores, ``thread_pool_min`` so that the
  pools start with the target's concurrency, ``timeout_idle`` and ``backend_idle_timeout``
  60 s.
- No TLS: Varnish Cache terminates none (it needs a TLS proxy such as Hitch in front), so a
  TLS plan leaves it out with that reason.
- Replicas (``target.replicas``): one ``backend rN`` per replica with a ``probe`` of
  ``/__gatebench__/health`` (every second, 1 s timeout, healthy while 2 of the last 3 passed:
  two failures take a replica out, two passes put it back; healthy at start), in a
  ``directors.round_robin()`` chosen in ``vcl_recv``. vmod_directors has no
  least-connections director.
"""

from __future__ import annotations

import math
import os
from typing import ClassVar

from gatebench.core.ir import Api
from gatebench.core.renderers._base import (
    DEFAULT_CONCURRENCY,
    LiveChange,
    Renderer,
    RenderTarget,
    as_files,
)
from gatebench.core.renderers._deployment import (
    HEALTH_FALL,
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_RISE,
    HEALTH_TIMEOUT_S,
    RETRY_TRIES,
)
from gatebench.core.renderers._parity import IDLE_TIMEOUT_S, LISTEN_BACKLOG, Parity, VendorPage
from gatebench.core.renderers._varnish_policies import apply_varnish_policies

ROUTES_PER_SUB = 50
"""Routes per VCL subroutine: the C compiler's time grows faster than linearly with the size
of one function (1,000 routes in one ``vcl_recv``: 30 s of CPU; in subroutines of 50: 3.5 s)."""


# The checker's and the server's: no jail (the caller's user), the VCL, the working folder.
_INSTANCE = ("-j", "none", "-f", "{workdir}/default.vcl", "-n", "{workdir}/varnish")


def _no_admin_unless_asked(argv: list[str] | None, target: RenderTarget | None) -> list[str] | None:
    """``-T none`` when the target asks for no management port."""
    if argv is not None and (target is None or target.admin_port is None):
        argv[argv.index("-T") + 1] = "none"
    return argv


class VarnishRenderer(Renderer):
    name = "varnish"
    description = "Varnish Cache 7 in pass mode: VCL method + raw-URL regex, synth 404"
    gateway_version = "7.1"
    # `varnishd -C` compiles the VCL with the C compiler: about 30 ms of CPU per route here
    # (2,000 routes: 64 s), more on a busy machine.
    check_seconds_per_route = 0.05
    output_files = ("default.vcl",)
    runs_here = True
    cloud_image = "varnish:7.1.2"
    check_command = ("varnishd", "-C", *_INSTANCE)
    run_command = (
        "varnishd",
        "-F",
        *_INSTANCE,
        "-a",
        "{listen_address}",
        "-T",
        "127.0.0.1:{admin_port}",
        "-s",
        "malloc,64m",
        "-p",
        f"listen_depth={LISTEN_BACKLOG}",
        "-p",
        "http_req_size=65536",
        "-p",
        "http_req_hdr_len=65536",
    )
    readiness_timeout = 20.0
    trace_refusal = "Varnish does not forward TRACE"
    install_hint = "run `scripts/setup.sh apt` (Debian package varnish)"
    live_change = LiveChange(
        "command",
        "Varnish vcl.load then vcl.use over its management port (varnishadm); requests in "
        "flight finish on the old VCL",
        commands=(
            (
                "varnishadm",
                "-n",
                "{workdir}/varnish",
                "vcl.load",
                "{label}",
                "{workdir}/default.vcl",
            ),
            ("varnishadm", "-n", "{workdir}/varnish", "vcl.use", "{label}"),
        ),
    )
    supported_policies: ClassVar[frozenset[str]] = frozenset(
        {"auth.api_key", "cache", "cache.path_only", "cache.vary_header"}
    )
    apply_policies = staticmethod(apply_varnish_policies)

    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls": "Varnish Cache terminates no TLS; it needs a TLS proxy (such as Hitch) in front",
        "pool.least_conn": "vmod_directors has no least-connections director (round_robin, "
        "random, fallback, hash, shard)",
    }
    health_checks = "active"

    parity = Parity(
        cores="`thread_pools` = cores (Varnish: more pools than cores is detrimental)",
        pools="`thread_pool_min` × pools ≥ concurrency (threads from the start); backend "
        "connections unlimited (no `.max_connections`)",
        keepalive="`timeout_idle 60` (default 5 s), `backend_idle_timeout 60`; no request limit",
        timeouts="`.connect_timeout 10s`, `.first_byte_timeout` and `.between_bytes_timeout 300s`",
        bodies="streamed (`pass`)",
        logs="its shared-memory log and counters, always on (no setting turns them off); no "
        "`varnishncsa`",
        routes="one `if` per route, in subroutines of 50 (compile time linear in the routes)",
        retries=f"`vcl_backend_error`: `return (retry)` while `bereq.retries < {RETRY_TRIES - 1}` "
        "for GET, HEAD, OPTIONS, TRACE, DELETE (the round-robin director picks the next "
        "replica). Cannot follow the policy for POST, PUT, PATCH: VCL cannot tell a refused "
        "connection from a request already sent, and a passed body cannot be replayed, so "
        "those are never resent",
        pages=(
            VendorPage(
                "Varnish 7.1: Performance",
                "https://varnish-cache.org/docs/7.1/users-guide/performance.html",
            ),
            VendorPage(
                "varnishd parameters (thread_pools, timeout_idle)",
                "https://varnish-cache.org/docs/7.1/reference/varnishd.html#list-of-parameters",
            ),
            VendorPage(
                "VCL: vcl_backend_error and return (retry)",
                "https://varnish-cache.org/docs/7.1/users-guide/vcl-built-in-subs.html"
                "#vcl-backend-error",
            ),
        ),
    )

    def run_argv(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> list[str] | None:
        argv = _no_admin_unless_asked(super().run_argv(workdir, target), target)
        return None if argv is None else [*argv, *_parameters(target)]

    def cloud_argv(self, target: RenderTarget) -> list[str] | None:
        argv = _no_admin_unless_asked(super().cloud_argv(target), target)
        return None if argv is None else [*argv, *_parameters(target)]

    def cpu_setting(self, target: RenderTarget) -> str:
        return f"thread_pools {target.workers}, thread_pool_min {_threads_per_pool(target)}"

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        routes = self.render_routes(api, target)
        rules = []
        for route in routes:
            regex = route.regex(param="[^/?]+", anchor_end="(?:\\x3f|$)")
            rules.append(
                f'    if (req.method == "{route.method}" && req.url ~ "{regex}") {{\n'
                "        return (pass);\n"
                "    }"
            )
        groups = [rules[i : i + ROUTES_PER_SUB] for i in range(0, len(rules), ROUTES_PER_SUB)]
        subs = "".join(
            f"sub gatebench_routes_{n} {{\n" + "\n".join(group) + "\n}\n\n"
            for n, group in enumerate(groups)
        )
        calls = "".join(f"    call gatebench_routes_{n};\n" for n in range(len(groups)))
        text = f"""\
# Varnish {self.gateway_version} VCL rendered by gatebench: {len(routes)} route(s), pass-through.
# Generated file; re-render instead of editing.
vcl 4.1;

{_backends(target)}
# Method and raw URL -> pass to the backend; first match wins. The routes are checked in
# subroutines of {ROUTES_PER_SUB}, so the C compiler's time grows linearly with the routes.
{subs}sub vcl_recv {{{_pick(target)}
{calls}    return (synth(404, "Not Found"));
}}
{_retry(target)}"""
        return as_files({"default.vcl": text})


def _threads_per_pool(target: RenderTarget | None) -> int:
    """Worker threads each pool starts with: together at least the target's concurrency
    (a request holds a thread), never below Varnish's default of 100."""
    workers, concurrency = _share(target)
    return max(100, math.ceil(concurrency / workers))


def _share(target: RenderTarget | None) -> tuple[int, int]:
    """The target's cores and concurrency (a command line asked for without a target: the
    defaults)."""
    if target is None:
        return 1, DEFAULT_CONCURRENCY
    return target.workers, target.concurrency


def _parameters(target: RenderTarget | None) -> list[str]:
    """The run-time parameters of a fair fight (docs/gateways.md): one thread pool per core
    (Varnish's advice: more pools than cores is detrimental), enough threads for the
    concurrency from the start, idle client connections closed after 60 s (default 5 s) and
    idle backend connections kept 60 s."""
    return [
        "-p",
        f"thread_pools={_share(target)[0]}",
        "-p",
        f"thread_pool_min={_threads_per_pool(target)}",
        "-p",
        f"timeout_idle={IDLE_TIMEOUT_S}",
        "-p",
        f"backend_idle_timeout={IDLE_TIMEOUT_S}",
    ]


def _backend(name: str, host: str, port: int, probe: str = "") -> str:
    return (
        f"backend {name} {{\n"
        f'    .host = "{host}";\n'
        f'    .port = "{port}";\n'
        "    .connect_timeout = 10s;\n"
        "    .first_byte_timeout = 300s;\n"
        f"    .between_bytes_timeout = 300s;{probe}\n"
        "}\n"
    )


def _backends(target: RenderTarget) -> str:
    if not target.pooled:
        return _backend("default", target.backend_host, target.backend_port)
    window = HEALTH_FALL + HEALTH_RISE - 1
    probe = (
        "import directors;\n\n"
        "probe gatebench_health {\n"
        f'    .url = "{HEALTH_PATH}";\n'
        f"    .interval = {HEALTH_INTERVAL_S}s;\n"
        f"    .timeout = {HEALTH_TIMEOUT_S}s;\n"
        f"    .window = {window};\n"
        f"    .threshold = {HEALTH_RISE};\n"
        f"    .initial = {window};\n"
        "}\n\n"
    )
    members = "\n".join(
        _backend(f"r{n}", host, port, "\n    .probe = gatebench_health;")
        for n, (host, port) in enumerate(target.upstreams, 1)
    )
    adds = "".join(
        f"    gatebench_pool.add_backend(r{n});\n" for n in range(1, len(target.upstreams) + 1)
    )
    return (
        probe
        + members
        + "\nsub vcl_init {\n    new gatebench_pool = directors.round_robin();\n"
        + adds
        + "}\n"
    )


_RESENT = ("GET", "HEAD", "OPTIONS", "TRACE", "DELETE")
"""The idempotent methods without a body: the requests Varnish resends after a failed fetch
(it cannot tell a refused connection from a request already sent, nor replay a passed body)."""


def _retry(target: RenderTarget) -> str:
    """With replicas, the common retry policy as far as VCL can tell: a failed fetch of an
    idempotent request without a body is tried again, on the director's next replica."""
    if not target.pooled:
        return ""
    methods = "|".join(_RESENT)
    return (
        "\n# A failed fetch (refused, reset or timed out) of an idempotent request without a\n"
        "# body goes to the next replica, at most twice.\n"
        "sub vcl_backend_error {\n"
        f'    if (bereq.retries < {RETRY_TRIES - 1} && bereq.method ~ "^({methods})$") {{\n'
        "        return (retry);\n"
        "    }\n"
        "}\n"
    )


def _pick(target: RenderTarget) -> str:
    if not target.pooled:
        return ""
    return "\n    set req.backend_hint = gatebench_pool.backend();"
