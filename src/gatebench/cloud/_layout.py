"""Where a run's machines are, decided before they exist.

Gateway configurations point at the backend, and the workload at the gateways, before any VM
is created (render comes before provision), so addresses are a pure function of the run:
VM names are fixed (``PREFIX-RUN-gw-NAME``, ``-backend``, ``-tester``, as infra/vms names
them) and Compute Engine's internal DNS resolves ``NAME.ZONE.c.PROJECT.internal`` inside the
network. Every gateway listens on the same port on its own VM. With several testers, tester 0
also serves the phase barrier (gatebench.local._fanout.PhaseBarrier) on :data:`BARRIER_PORT`, where
the other testers reach it by its name.

The backend VM runs the plan's replicas (``backend.replicas``) on consecutive ports from
:data:`BACKEND_PORT` (replica 1 is the single backend's port), serves the baseline of a TLS
plan on :data:`BACKEND_TLS_PORT`, and, for a plan with a fault, answers the tester's kill and
restart requests on :data:`BACKEND_CONTROL_PORT` (infra/modules/network opens the replicas'
ports to the gateways and the tester, the TLS port to the tester, the control port to the
tester alone).

The ``loopback`` layout is the same run on one machine (the local provisioner standing in for
the VMs): every machine is 127.0.0.1 and each gets its own port from ``base_port``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gatebench.cloud._objects import RequestError
from gatebench.core.errors import Problem

GATEWAY_PORT = 8000
CONTAINER_WORKDIR = "/etc/gatebench"
BACKEND_PORT = 8080
BARRIER_PORT = 8090
"""Tester 0's phase barrier (infra/modules/network ``ports.barrier``: the tester → tester
firewall rule opens it)."""
BACKEND_TLS_PORT = 8443
"""The baseline's TLS listener on the backend VM (replica 1's; ``ports.backend_tls``)."""
BACKEND_CONTROL_PORT = 8079
"""The backend VM's fault control (``ports.backend_control``: from the tester only)."""
MAX_BACKEND_PORTS = 16
"""Ports from :data:`BACKEND_PORT` kept for replicas (gatebench.core.plan.MAX_REPLICAS;
``ports.backend_replicas`` in infra/modules/network)."""


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

    def backend_host(self) -> str:
        return self._host(self.vm_name("backend"))

    def replica_ports(self, count: int) -> list[int]:
        """The ports of replicas 1..count (replica 1 on :meth:`backend_port`)."""
        if self.kind == "loopback":  # after the barrier's, the TLS and the control ports
            after = self.base_port + 4 + len(self.gateways)
            return [self.backend_port()] + [after + n for n in range(count - 1)]
        return [BACKEND_PORT + n for n in range(count)]

    def replica_urls(self, count: int) -> list[str]:
        return [f"http://{self.backend_host()}:{p}" for p in self.replica_ports(count)]

    def backend_tls_port(self) -> int:
        if self.kind == "loopback":
            return self.base_port + 2 + len(self.gateways)
        return BACKEND_TLS_PORT

    def backend_control_port(self) -> int:
        if self.kind == "loopback":
            return self.base_port + 3 + len(self.gateways)
        return BACKEND_CONTROL_PORT

    def backend_control_url(self) -> str:
        return f"http://{self.backend_host()}:{self.backend_control_port()}"

    def gateway_host(self, gateway: str) -> str:
        return self._host(self.vm_name("gateway", gateway))

    def gateway_url(self, gateway: str, *, tls: bool = False) -> str:
        scheme = "https" if tls else "http"
        return f"{scheme}://{self.gateway_host(gateway)}:{self.gateway_port(gateway)}"

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
    if kind == "loopback" and not 1024 <= base_port <= 65535 - 5 - MAX_BACKEND_PORTS - len(
        gateways
    ):
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
