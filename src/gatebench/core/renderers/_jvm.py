"""What the two JVM gateways (Spring Cloud Gateway, Zuul 1) share: a jar, a java command line
and a Spring ``application.yml``.

Both run as a generic Spring Boot application built from ``gateways/<name>/`` into
``<build folder>/jvm-gateways/<name>.jar`` (by ``scripts/setup.d/45-jvm-gateways.sh`` in a
checkout, else on first use: ``gatebench.local._resources``): the jar holds
no routes, everything comes from the rendered ``application.yml``
(``--spring.config.location``). docs/jvm-gateways.md describes both.

Spring reads every configuration value through its property resolver, so two spec-derived
shapes would be interpreted rather than taken literally: ``${...}`` (a property placeholder,
anywhere in a value) and ``#{...}`` (SpEL, in Spring Cloud Gateway predicate arguments).
The renderers only ever emit identifiers and ``\\xHH``-escaped regexes or percent-encoded
paths, where neither can occur; :func:`assert_inert` checks it anyway before a value is
written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar

from gatebench.core._locations import jvm_gateway_jar_location
from gatebench.core.errors import Problem, RenderError, UnsupportedHere
from gatebench.core.ir import Api
from gatebench.core.renderers._base import LiveChange, Renderer, RenderTarget, as_files
from gatebench.core.renderers._routes import Route
from gatebench.core.renderers._yaml_out import dump_block_yaml, read_rendered

CLOUD_JAR_DIR = "/opt/gatebench"
"""Where the cloud path's container (``eclipse-temurin`` JRE image) holds the jar."""
JVM_OPTIONS_ENV = "GATEBENCH_JVM_OPTIONS"
"""Extra JVM options, whitespace-separated, inserted before ``-jar`` (tests use
``-XX:TieredStopAtLevel=1`` to halve start-up; never for measured runs)."""
JIT_WARMUP_S = 30.0
"""Seconds of load the JVM gateways need after they start before their latency stops falling
(``python -m benchmarks jit_warmup``, docs/jvm-gateways.md "Warm-up")."""
JIT_WARMUP = (
    f"at least {JIT_WARMUP_S:g} s of the plan's own load after it starts, in every kind of run "
    "and benchmark (measured: where its latency stops falling)"
)
_JAR = "{jar}"
_SPRING_EXPRESSION = re.compile(r"\$\{|^#\{")


def dump_yaml(data: Any) -> str:
    """Block-style YAML in insertion order (deterministic), ASCII only, long lines kept."""
    return dump_block_yaml(data, allow_unicode=False)


def assert_inert(value: str, where: str) -> str:
    """``value`` unchanged, or :class:`RenderError` when Spring would evaluate part of it."""
    if _SPRING_EXPRESSION.search(value):
        raise RenderError(
            [
                Problem(
                    where,
                    f"internal error: {value!r} would be evaluated by Spring ('${{' or '#{{')",
                )
            ]
        )
    return value


def java_command(*options: str) -> tuple[str, ...]:
    """The java command line of a JVM gateway (placeholders as in ``Renderer.run_command``),
    with the gateway's own ``options`` before ``-jar``."""
    return (
        "java",
        "-Xms256m",
        "-Xmx512m",
        "-XX:+ExitOnOutOfMemoryError",
        "-XX:-UsePerfData",
        # The JVM sizes its collector, its JIT compiler and the gateway's thread pools for
        # the cores the gateway is given, whatever the machine has.
        "-XX:ActiveProcessorCount={workers}",
        *options,
        "-Djava.io.tmpdir={workdir}/tmp",
        "-jar",
        _JAR,
        "--spring.config.location=file:{workdir}/application.yml",
    )


def jar_path(gateway: str) -> Path:
    """``GATEBENCH_<NAME>_JAR`` (``GATEBENCH_ZUUL_JAR``), else the jar in the build folder
    (the provisioner builds it on first use, ``gatebench.local._resources.jvm_gateway_jar``)."""
    return jvm_gateway_jar_location(gateway)


NO_RESUMPTION_GAP = (
    "JSSE's server session cache and tickets cannot be switched off from a Spring configuration"
)
"""Why no JVM gateway here turns TLS session resumption off (``deployment_gaps``)."""


class JvmRenderer(Renderer):
    """A gateway that is a Spring Boot jar run by ``java``; subclasses set ``name`` etc. and
    ``run_command`` (:func:`java_command`)."""

    runs_here = True
    # No official image exists for either gateway: the cloud path runs the same jar in the
    # official JRE image, at CLOUD_JAR_DIR/<name>.jar.
    cloud_image = "eclipse-temurin:17.0.15_6-jre"
    check_command: ClassVar[tuple[str, ...] | None] = None
    """Spring has no offline config checker; booting the jar is the check."""
    run_command: ClassVar[tuple[str, ...] | None] = java_command()
    output_files = ("application.yml",)
    live_change = LiveChange(
        "admin-api",
        "Spring Cloud's refresh endpoint, POST /actuator/refresh on the loopback management "
        "port: application.yml is read again, properties rebound, routes rebuilt",
        path="/actuator/refresh",
    )
    readiness_timeout = 120.0
    jit_warmup_s = JIT_WARMUP_S
    cores_setting = "-XX:ActiveProcessorCount={workers}"
    install_hint = "run `make setup-all` (or scripts/setup.sh jvm-gateways; needs JDK 17 and Maven)"

    def run_argv(
        self, workdir: str | os.PathLike[str], target: RenderTarget | None = None
    ) -> list[str] | None:
        argv = super().run_argv(workdir, target)
        if argv is None:
            return None
        jar = jar_path(self.name)
        if not jar.is_file():
            raise UnsupportedHere(f"{self.name}: {jar} is not built; {self.install_hint}")
        extra = os.environ.get(JVM_OPTIONS_ENV, "").split()
        at = argv.index(_JAR)
        return [*argv[: at - 1], *extra, "-jar", str(jar), *argv[at + 1 :]]

    def cloud_argv(self, target: RenderTarget) -> list[str] | None:
        argv = super().cloud_argv(target)
        if argv is None:
            return None
        return [f"{CLOUD_JAR_DIR}/{self.name}.jar" if part == _JAR else part for part in argv]

    def prepare(self, workdir: Path) -> None:
        (workdir / "tmp").mkdir(parents=True, exist_ok=True)

    def route_limitation(self, route: Route) -> str | None:
        if empty_segment(route):
            return "an empty path segment ('//'), which it merges into one '/' when forwarding"
        return super().route_limitation(route)

    def render_live(self, api: Api, target: RenderTarget) -> dict[str, str]:
        """The management port on loopback (``target.admin_port``) with the refresh endpoint
        exposed; the API's port serves no actuator endpoint either way. With TLS, the
        management port stays plain HTTP (``management.server.ssl.enabled: false``): Spring
        Boot otherwise gives it the API's ``server.ssl``, and the loopback refresh request
        gatebench sends is plain."""
        if target.admin_port is None:
            raise RenderError(
                [
                    Problem(
                        "",
                        f"{self.name} takes live changes on a management port: give an admin_port",
                    )
                ]
            )
        header, config = read_rendered(self.render(api, target)["application.yml"])
        management: dict[str, Any] = {"address": "127.0.0.1", "port": target.admin_port}
        if target.tls is not None:
            management["ssl"] = {"enabled": False}
        config.setdefault("management", {}).update(
            {
                "server": management,
                "endpoints": {"web": {"exposure": {"include": "refresh"}}},
            }
        )
        self.live_settings(config, target)
        return as_files({"application.yml": header + dump_yaml(config)})

    def live_settings(self, config: dict[str, Any], target: RenderTarget) -> None:
        """What else the gateway needs in ``config`` (the parsed ``application.yml``) to take
        a refreshed one in full; nothing by default."""

    product: ClassVar[str]
    """Gateway and version for the file's first line: ``Spring Cloud Gateway 5.0.3``."""

    def header(self, what: str) -> str:
        return (
            f"# {self.product} application.yml rendered by gatebench: {what}.\n"
            "# Generated file; re-render instead of editing. docs/jvm-gateways.md explains "
            "every setting.\n"
        )


def empty_segment(route: Route) -> bool:
    """True when the path has an empty segment before its end (``//``).

    Both JVM gateways merge ``//`` into ``/`` when they build the backend request (Spring's
    UriComponentsBuilder, Zuul's SimpleHostRoutingFilter), so such a route cannot be
    forwarded unchanged. A trailing slash (a final empty segment) is fine.
    """
    last = len(route.segments) - 1
    return any(s.is_literal and s.literal == "" and i < last for i, s in enumerate(route.segments))
