"""Where a run's machines are, decided before they exist.

Gateway configurations point at the backend, and the workload at the gateways, before any VM
is created (render comes before provision), so addresses are a pure function of the run:
VM names are fixed (``PREFIX-RUN-gw-NAME``, ``-backend``, ``-tester``, as infra/vms names
them) and Compute Engine's internal DNS resolves ``NAME.ZONE.c.PROJECT.internal`` inside the
network. Every gateway listens on the same port on its own VM. With several testers, tester 0
also serves the phase barrier (gatebench._fanout.PhaseBarrier) on :data:`BARRIER_PORT`, where
the other testers reach it by its name.

The ``loopback`` layout is the same run on one machine (the local provisioner standing in for
the VMs): every machine is 127.0.0.1 and each gets its own port from ``base_port``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import Problem
from ._objects import RequestError

GATEWAY_PORT = 8000
CONTAINER_WORKDIR = "/etc/gatebench"
BACKEND_PORT = 8080
BARRIER_PORT = 8090
"""Tester 0's phase barrier (infra/modules/network ``ports.barrier``: the tester → tester
firewall rule opens it)."""


@dataclass(frozen=True)
class Layout:
    kind: Literal["dns", "loopback"]
    prefix: str
    run_id: str
    gateways: tuple[str, ...]
    zone: str = ""
    project: str = ""
    base_port: int = 0
    root: str = ""
    """Loopback only: the folder standing in for the VMs' disks."""

    @property
    def listen_host(self) -> str:
        """What gateways and the backend bind: every interface of a VM, or loopback."""
        return "127.0.0.1" if self.kind == "loopback" else "0.0.0.0"

    def gateway_workdir(self, gateway: str) -> str:
        """Where a gateway's files are when it runs: the container mount on a VM."""
        if self.kind == "loopback":
            return f"{self.root}/{self.run_id}/gw-{gateway}"
        return CONTAINER_WORKDIR

    def vm_name(self, role: Literal["backend", "tester", "gateway"], gateway: str = "") -> str:
        base = f"{self.prefix}-{self.run_id}"
        return f"{base}-gw-{gateway}" if role == "gateway" else f"{base}-{role}"

    def _host(self, vm: str) -> str:
        if self.kind == "loopback":
            return "127.0.0.1"
        return f"{vm}.{self.zone}.c.{self.project}.internal"

    def backend_port(self) -> int:
        return self.base_port if self.kind == "loopback" else BACKEND_PORT

    def gateway_port(self, gateway: str) -> int:
        if self.kind == "loopback":
            return self.base_port + 1 + self.gateways.index(gateway)
        return GATEWAY_PORT

    def backend_url(self) -> str:
        return f"http://{self._host(self.vm_name('backend'))}:{self.backend_port()}"

    def gateway_url(self, gateway: str) -> str:
        host = self._host(self.vm_name("gateway", gateway))
        return f"http://{host}:{self.gateway_port(gateway)}"

    def barrier_port(self) -> int:
        """Where tester 0 serves the phase barrier (several testers only)."""
        if self.kind == "loopback":
            return self.base_port + 1 + len(self.gateways)
        return BARRIER_PORT

    def barrier_url(self) -> str:
        """The phase barrier as the other testers reach it: tester 0's name (tester 0 keeps
        the single tester's, ``PREFIX-RUN-tester``)."""
        return f"http://{self._host(self.vm_name('tester'))}:{self.barrier_port()}"


def layout_for(
    settings: dict[str, Any], run_id: str, gateways: Sequence[str], zone: str | None = None
) -> Layout:
    """The layout a deployment's settings (``pipeline/settings.json``) give a run."""
    raw = settings.get("layout", "dns")
    kind = raw if isinstance(raw, str) else raw.get("kind") if isinstance(raw, dict) else None
    if kind not in ("dns", "loopback"):
        raise RequestError(
            [Problem("/layout", f"expected 'dns' or {{'kind': 'loopback', ...}}, got {raw!r}")]
        )
    base_port = int(raw.get("base_port", 0)) if isinstance(raw, dict) else 0
    root = str(raw.get("root", "")) if isinstance(raw, dict) else ""
    if kind == "loopback" and not root.startswith("/"):
        raise RequestError([Problem("/layout/root", f"expected an absolute folder, got {root!r}")])
    if kind == "loopback" and not 1024 <= base_port <= 65535 - 2 - len(gateways):
        raise RequestError(
            [Problem("/layout/base_port", f"expected a free port range start, got {base_port}")]
        )
    return Layout(
        kind="loopback" if kind == "loopback" else "dns",
        prefix=str(settings.get("prefix", "gb")),
        run_id=run_id,
        gateways=tuple(gateways),
        zone=zone or str(settings.get("zone", "")),
        project=str(settings.get("project", "")),
        base_port=base_port,
        root=root,
    )
