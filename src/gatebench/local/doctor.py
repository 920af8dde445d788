"""What can run on this machine: the programs every run needs, gateways, load engines, the
backend and the build tools.

``gatebench doctor`` prints this. Each check looks, never builds: a part gatebench builds on
first use (the Go backend, Gatling, the JVM gateways) counts as ready when its build exists
or its build tools are present. A missing part carries the command that installs it, the
same words a run that needs it fails with. Nothing can run without a load engine or without
a program every run needs (``procs.RUN_PROGRAMS``), so :attr:`Diagnosis.can_run` is false
then.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gatebench.core.errors import UnsupportedHere
from gatebench.local import _resources
from gatebench.local.procs import RUN_PROGRAMS, RUN_PROGRAMS_INSTALL

if TYPE_CHECKING:
    from gatebench.core.renderers import Renderer

Status = Literal["ok", "first-use", "missing", "cloud-only"]

VERSION_ARGS: dict[str, tuple[str, ...]] = {
    "apache2": ("-v",),
    "caddy": ("version",),
    "envoy": ("--version",),
    "go": ("version",),
    "haproxy": ("-v",),
    "java": ("-version",),
    "kong": ("version",),
    "krakend": ("version",),
    "mvn": ("-v",),
    "nginx": ("-v",),
    "setpriv": ("--version",),
    "taskset": ("--version",),
    "traefik": ("version",),
    "tyk": ("--version",),
    "varnishd": ("-V",),
    "wrk": ("-v",),
}
"""How each program says its version (first line of its output)."""

APT = "apt-get install"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Check:
    kind: Literal["run", "gateway", "engine", "backend", "tool"]
    name: str
    status: Status
    detail: str
    """The version when present, else why not and the command that installs it."""

    @property
    def usable(self) -> bool:
        return self.status in ("ok", "first-use")


@dataclass(frozen=True)
class Diagnosis:
    checks: tuple[Check, ...]

    def of(self, kind: str) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.kind == kind)

    @property
    def can_run(self) -> bool:
        """A run needs every program of ``procs.RUN_PROGRAMS`` and a load engine (the baseline
        needs no gateway); the load generator runs only capacity searches, so it alone does not
        make ``gatebench run`` possible."""
        return not self.why_nothing_runs

    @property
    def why_nothing_runs(self) -> list[str]:
        """Why no run can start here, one reason per missing part (empty: a run can)."""
        reasons = [
            f"{c.name} is missing ({RUN_PROGRAMS_INSTALL})" for c in self.of("run") if not c.usable
        ]
        if not any(c.usable for c in self.of("engine") if c.name != "loadgen"):
            reasons.append("no load engine (install java for Gatling, or wrk)")
        return reasons


def program_version(path: str, program: str, env: dict[str, str] | None = None) -> str:
    """The first line a program prints for its version flag, or ``present``; ``env``: extra
    variables it runs with (KrakenD's ``USAGE_DISABLE``)."""
    args = VERSION_ARGS.get(program)
    if args is None:
        return "present"
    try:
        done = subprocess.run(
            [path, *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            env={**os.environ, **(env or {})},
        )
    except (OSError, subprocess.SubprocessError):
        return "present (its version could not be read)"
    for line in _ANSI.sub("", done.stdout + "\n" + done.stderr).splitlines():
        if line.strip():
            return " ".join(line.split())  # Traefik pads: "Version:      3.7.15"
    return "present"


def _run_programs() -> list[Check]:
    """The programs every run starts its processes through (``procs.RUN_PROGRAMS``)."""
    checks = []
    for name, purpose in RUN_PROGRAMS.items():
        path = shutil.which(name)
        if path is None:
            checks.append(Check("run", name, "missing", f"{purpose}; {RUN_PROGRAMS_INSTALL}"))
        else:
            checks.append(Check("run", name, "ok", program_version(path, name)))
    return checks


def _tool(name: str, purpose: str) -> Check:
    path = shutil.which(name)
    if path is None:
        return Check("tool", name, "missing", f"{purpose}; {_resources.INSTALL_HINTS[name]}")
    return Check("tool", name, "ok", program_version(path, name))


def _first_use(what: str, tools: list[Check]) -> tuple[Status, str]:
    missing = [t for t in tools if not t.usable]
    if missing:
        return "missing", f"not built, and {missing[0].name} is missing: {missing[0].detail}"
    return "first-use", f"built on first use with {' and '.join(t.name for t in tools)}"


def _gateways(tools: dict[str, Check]) -> list[Check]:
    from gatebench.core.renderers import all_renderers

    checks = []
    for renderer in sorted(all_renderers(), key=lambda r: r.name):
        name = renderer.name
        if not renderer.runs_here or renderer.run_command is None:
            checks.append(Check("gateway", name, "cloud-only", _cloud_only(renderer)))
        elif name in _resources.JVM_GATEWAYS:
            jar = _resources.jvm_gateway_jar(name, build=False)
            if jar.is_file():
                product = getattr(renderer, "product", name)
                checks.append(Check("gateway", name, "ok", f"{product} ({jar})"))
            else:
                status, detail = _first_use(name, [tools["java"], tools["mvn"]])
                checks.append(Check("gateway", name, status, detail))
        else:
            program_name = renderer.run_command[0]
            try:
                program = renderer.find_program(program_name)
            except UnsupportedHere as exc:
                # what a run of it fails with (the renderer's install_hint), not a second
                # definition of how to install it
                detail = str(exc).removeprefix(f"{name}: ")
                checks.append(Check("gateway", name, "missing", detail))
                continue
            version = program_version(program, program_name, renderer.env("/"))
            reason = renderer.available_here()
            if reason is not None:  # a companion is missing (Tyk's Redis)
                detail = f"{version}, but {reason.removeprefix(f'{name}: ')}"
                checks.append(Check("gateway", name, "missing", detail))
                continue
            checks.append(Check("gateway", name, "ok", version))
    return checks


def _cloud_only(renderer: Renderer) -> str:
    """Why the gateway does not run here, with its version when its program is present."""
    if renderer.run_command is None:
        return renderer.cloud_only_reason
    program = shutil.which(renderer.run_command[0])
    if program is None:
        return renderer.cloud_only_reason
    version = program_version(program, renderer.run_command[0])
    return f"{version} is installed here; {renderer.cloud_only_reason}"


def _engines(tools: dict[str, Check]) -> list[Check]:
    checks = []
    classes, cp_file = _resources.gatling_files(build=False)
    java = tools["java"]
    if not java.usable:
        checks.append(Check("engine", "gatling", "missing", f"java is missing: {java.detail}"))
    elif (classes / "gatebench" / "GenericSimulation.class").is_file() and cp_file.is_file():
        checks.append(Check("engine", "gatling", "ok", f"Gatling 3.15.1 on {java.detail}"))
    else:
        status, detail = _first_use("gatling", [java, tools["mvn"]])
        checks.append(Check("engine", "gatling", status, detail))
    wrk = shutil.which("wrk")
    if wrk is None:
        checks.append(Check("engine", "wrk", "missing", f"Debian: {APT} wrk"))
    else:
        checks.append(Check("engine", "wrk", "ok", program_version(wrk, "wrk")))
    return checks


def _backend(tools: dict[str, Check]) -> Check:
    binary = _resources.backend_binary(build=False)
    if binary.is_file():
        return Check("backend", "gatebench-backend", "ok", str(binary))
    status, detail = _first_use("the backend", [tools["go"]])
    return Check("backend", "gatebench-backend", status, detail)


def _loadgen(tools: dict[str, Check]) -> Check:
    binary = _resources.loadgen_binary(build=False)
    if binary.is_file():
        return Check("engine", "loadgen", "ok", f"capacity search ({binary})")
    status, detail = _first_use("the load generator", [tools["go"]])
    return Check("engine", "loadgen", status, f"{detail} (the capacity search's engine)")


def diagnose() -> Diagnosis:
    """Every check, in the order ``gatebench doctor`` prints them."""
    tools = {
        "go": _tool("go", "builds the Go backend and load generator on first use"),
        "java": _tool("java", "runs Gatling and the JVM gateways"),
        "mvn": _tool("mvn", "builds Gatling's classpath and the JVM gateways on first use"),
    }
    checks = [
        *_run_programs(),
        *_engines(tools),
        _loadgen(tools),
        _backend(tools),
        *_gateways(tools),
        *tools.values(),
    ]
    return Diagnosis(tuple(checks))


__all__ = ["Check", "Diagnosis", "diagnose", "program_version"]
