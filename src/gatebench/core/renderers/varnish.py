"""Varnish Cache 7 as a pass-through proxy: VCL routing on the raw URL, no caching.

Mapping rules (tests/golden/varnish/README.md says the same in prose):

- ``vcl_recv`` has one ``if (req.method == "M" && req.url ~ "regex") { return (pass); }``
  per route in priority order; everything else is ``return (synth(404))``. ``req.url`` is
  the raw request target, so the regex ends at ``?`` or the end.
- ``pass`` means nothing is cached: every request reaches the backend, bodies stream both
  ways, ``Host`` and every header are kept (Varnish adds ``X-Varnish``, ``Via`` and
  ``X-Forwarded-For``). The backend connection pool keeps connections alive.
- VCL strings have no escapes and may not hold ``"`` or a newline: regexes are made of
  letters, digits, ``\\xHH`` escapes and regex syntax only; the method is one of the IR's
  fixed upper-case names.
- The listen address and the management port are on the command line (``-a``, ``-T``),
  filled from the target; the working folder (``-n``) is inside the workdir, ``-j none``
  keeps the cache process under the caller's user (no jail), ``-s malloc,64m``.
- No TLS: Varnish Cache terminates none (it needs a TLS proxy such as Hitch in front), so a
  TLS plan leaves it out with that reason.
- Replicas (``target.replicas``): one ``backend rN`` per replica with a ``probe`` of
  ``/__gatebench__/health`` (every second, 1 s timeout, healthy while 2 of the last 3 passed:
  two failures take a replica out, two passes put it back; healthy at start), in a
  ``directors.round_robin()`` chosen in ``vcl_recv``. vmod_directors has no
  least-connections director.
"""

from __future__ import annotations

import os
from typing import ClassVar

from gatebench.core.ir import Api
from gatebench.core.policies import PolicySet
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._deployment import (
    HEALTH_FALL,
    HEALTH_INTERVAL_S,
    HEALTH_PATH,
    HEALTH_RISE,
    HEALTH_TIMEOUT_S,
)
from gatebench.core.renderers._routes import unsupported


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
    check_command: ClassVar[tuple[str, ...] | None] = (
        "varnishd",
        "-C",
        "-j",
        "none",
        "-f",
        "{workdir}/default.vcl",
        "-n",
        "{workdir}/varnish",
    )
    run_command: ClassVar[tuple[str, ...] | None] = (
        "varnishd",
        "-F",
        "-j",
        "none",
        "-f",
        "{workdir}/default.vcl",
        "-n",
        "{workdir}/varnish",
        "-a",
        "{listen_address}",
        "-T",
        "127.0.0.1:{admin_port}",
        "-s",
        "malloc,64m",
        "-p",
        "http_req_size=65536",
        "-p",
        "http_req_hdr_len=65536",
    )
    readiness_timeout = 20.0
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

    supported_deployment: ClassVar[frozenset[str]] = frozenset({"pool.round_robin"})
    deployment_gaps: ClassVar[dict[str, str]] = {
        "tls": "Varnish Cache terminates no TLS; it needs a TLS proxy (such as Hitch) in front",
        "pool.least_conn": "vmod_directors has no least-connections director (round_robin, "
        "random, fallback, hash, shard)",
    }
    health_checks = "active"

    def apply_policies(
        self, files: dict[str, str], api: Api, target: RenderTarget, policies: PolicySet
    ) -> dict[str, str]:
        from gatebench.core.renderers._varnish_policies import apply_varnish_policies

        return apply_varnish_policies(files, api, policies)

    def run_argv(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> list[str] | None:
        return _no_admin_unless_asked(super().run_argv(workdir, target), target)

    def cloud_argv(self, target: RenderTarget) -> list[str] | None:
        return _no_admin_unless_asked(super().cloud_argv(target), target)

    def render(self, api: Api, target: RenderTarget) -> dict[str, str]:
        self.refuse_missing_deployment(target)
        routes = self.routes(api)
        self.fail_unsupported(
            [
                unsupported(r, self.name, "Varnish does not forward TRACE")
                for r in routes
                if r.method == "TRACE"
            ]
        )
        rules = []
        for route in routes:
            regex = route.regex(param="[^/?]+", anchor_end="(?:\\x3f|$)")
            rules.append(
                f'    if (req.method == "{route.method}" && req.url ~ "{regex}") {{\n'
                "        return (pass);\n"
                "    }"
            )
        text = f"""\
# Varnish {self.gateway_version} VCL rendered by gatebench: {len(routes)} route(s), pass-through.
# Generated file; re-render instead of editing.
vcl 4.1;

{_backends(target)}
sub vcl_recv {{{_pick(target)}
    # Method and raw URL -> pass to the backend; first match wins.
{chr(10).join(rules)}
    return (synth(404, "Not Found"));
}}
"""
        return as_files({"default.vcl": text})


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


def _pick(target: RenderTarget) -> str:
    if not target.pooled:
        return ""
    return "\n    set req.backend_hint = gatebench_pool.backend();"
