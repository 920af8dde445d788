"""Several "machines" on this one: network namespaces, each behind its own link to a router
namespace, with Container-Optimized OS's host firewall.

Each VM is a network namespace with one veth link (a /30 of its own) to a router namespace
that forwards between them; the router exists only for the test, so no address here is seen
outside the namespaces the test created and no packet leaves the machine. A VM's INPUT chain
starts as COS's default (Google's "Configuring the host firewall": everything dropped but
loopback, established/related connections and SSH): only what its startup script opens
answers, as on Compute Engine. Names resolve through ``/etc/netns/NS/hosts`` (``ip netns
exec`` mounts it over ``/etc/hosts``), standing in for Compute Engine's internal DNS. The
router drops what the VPC's firewall rules do not allow (infra/modules/network, read by
tests/cloud/vpc.py): a machine given a role (:meth:`LocalNetwork.assign`) reaches another
one only on the ports a rule opens from its role to the other's, as network tags do.

Everything is named ``gbXXXXXX-...`` with a random tag per network and removed by
:meth:`LocalNetwork.close`: processes first (their owner stops them), then the namespaces
(which takes their veth links), the hosts files and the mount points it had to create (a
gateway's folder is mounted at the container's path inside the gateway's own mount
namespace, which ``ip netns exec`` gives every command) unless another network still has
machines, which may be using them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .vpc import FirewallRule, firewall_rules

CLONE_NEWNET = 0x40000000
CGROUP2 = Path("/sys/fs/cgroup/unified")
"""This machine's cgroup v2 hierarchy (a hybrid layout: v1 controllers beside it). A machine's
cgroups are made under a folder of its own there (:meth:`LocalNetwork.cgroup_root`), so the
paths its startup script names (``gateways.slice``) are its own."""
METADATA_ADDRESS = "169.254.169.254"
"""Compute Engine's metadata server; each machine has its own stand-in at that address."""
COS_INPUT_RULES = [
    # Container-Optimized OS's default host firewall (INPUT): drop, except these.
    ["-P", "INPUT", "DROP"],
    ["-A", "INPUT", "-i", "lo", "-j", "ACCEPT"],
    ["-A", "INPUT", "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"],
    ["-A", "INPUT", "-p", "tcp", "--dport", "22", "-j", "ACCEPT"],
]
NETNS_ETC = Path("/etc/netns")


def _run(argv: Sequence[str]) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def network_namespaces_work() -> str | None:
    """None when this machine can create namespaces and firewall them; else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (scripts/setup.d/apt-packages.txt installs it)"
    return None


@dataclass
class Machine:
    name: str
    """The VM's host name (what the hosts files map)."""
    namespace: str
    address: str
    """Its address on its link; the router's end is ``gateway``."""
    gateway: str


@dataclass
class LocalNetwork:
    tag: str = field(default_factory=lambda: "gb" + secrets.token_hex(3))
    machines: dict[str, Machine] = field(default_factory=dict)
    _next: int = 0
    _mount_points: list[Path] = field(default_factory=list)
    rules: list[FirewallRule] = field(default_factory=firewall_rules)
    """The VPC's firewall rules the router enforces between machines with a role."""
    roles: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: bool = False

    def __post_init__(self) -> None:
        self.router = f"{self.tag}-router"
        _run(["ip", "netns", "add", self.router])
        self._in(self.router, ["ip", "link", "set", "lo", "up"])
        self._in(self.router, ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
        # The VPC: nothing between VMs but what a firewall rule allows (replies pass).
        self._in(self.router, ["iptables", "-w", "-P", "FORWARD", "DROP"])
        established = ["-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"]
        self._in(self.router, ["iptables", "-w", "-A", "FORWARD", *established])

    def assign(self, name: str, role: str) -> None:
        """The machine carries ``role``'s network tag: the router lets it reach, and be
        reached by, the machines with a role on the ports the firewall rules open between
        the two roles."""
        with self._lock:
            self.roles[name] = role
            pairs = [(name, other) for other in self.roles] + [
                (other, name) for other in self.roles if other != name
            ]
            for source, target in pairs:
                a, b = self.machines[source], self.machines[target]
                for rule in self.rules:
                    if not (
                        self.roles[source] in rule.sources and self.roles[target] in rule.targets
                    ):
                        continue
                    for port in sorted(rule.ports):
                        accept = ["-s", a.address, "-d", b.address, "-p", "tcp"]
                        self._in(
                            self.router,
                            [
                                "iptables",
                                "-w",
                                "-A",
                                "FORWARD",
                                *accept,
                                "--dport",
                                str(port),
                                "-j",
                                "ACCEPT",
                            ],
                        )

    # -- machines

    def add(self, names: Sequence[str]) -> list[Machine]:
        """Create a namespace per name (idempotent), then write every machine's hosts file
        (each machine resolves all the others)."""
        added = []
        with self._lock:
            for name in names:
                if name in self.machines:
                    continue
                added.append(self._create(name, self._next))
                self._next += 1
            hosts = (
                f"127.0.0.1\tlocalhost\n127.0.1.1\t{socket.gethostname()}\n"
                f"{METADATA_ADDRESS}\tmetadata.google.internal\tmetadata\n"
            ) + "".join(
                f"{m.address}\t{m.name}\t{m.name.split('.')[0]}\n" for m in self.machines.values()
            )
            for machine in self.machines.values():
                folder = NETNS_ETC / machine.namespace
                folder.mkdir(parents=True, exist_ok=True)
                _extend_in_place(folder / "hosts", hosts)
                # No name server inside: every name is in hosts, other lookups fail at once.
                _extend_in_place(
                    folder / "resolv.conf", "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
                )
        return added

    def _create(self, name: str, index: int) -> Machine:
        namespace = f"{self.tag}-{index}"
        subnet = f"10.213.{index // 64}"
        router_ip, vm_ip = f"{subnet}.{(index % 64) * 4 + 1}", f"{subnet}.{(index % 64) * 4 + 2}"
        outer, inner = f"{self.tag}r{index}", f"{self.tag}v{index}"
        _run(["ip", "netns", "add", namespace])
        machine = Machine(name, namespace, vm_ip, router_ip)
        self.machines[name] = machine
        _run(["ip", "-n", self.router, "link", "add", outer, "type", "veth", "peer", "name", inner])
        _run(["ip", "-n", self.router, "link", "set", inner, "netns", namespace])
        _run(["ip", "-n", self.router, "addr", "add", f"{router_ip}/30", "dev", outer])
        _run(["ip", "-n", self.router, "link", "set", outer, "up"])
        _run(["ip", "-n", namespace, "link", "set", inner, "name", "eth0"])
        _run(["ip", "-n", namespace, "addr", "add", f"{vm_ip}/30", "dev", "eth0"])
        _run(["ip", "-n", namespace, "link", "set", "lo", "up"])
        _run(["ip", "-n", namespace, "link", "set", "eth0", "up"])
        _run(["ip", "-n", namespace, "route", "add", "default", "via", router_ip])
        for rule in COS_INPUT_RULES:
            self._in(namespace, ["iptables", "-w", *rule])
        return machine

    def remove(self, names: Sequence[str]) -> None:
        """Delete machines (their namespace, link, hosts files and cgroups); unknown names are
        skipped."""
        with self._lock:
            gone = [self.machines.pop(n) for n in names if n in self.machines]
            for name in names:
                self.roles.pop(name, None)
        for machine in gone:
            with contextlib.suppress(RuntimeError):
                _run(["ip", "netns", "del", machine.namespace])
            shutil.rmtree(NETNS_ETC / machine.namespace, ignore_errors=True)
            _remove_cgroups(CGROUP2 / machine.namespace)

    def run_in(self, name: str, argv: Sequence[str]) -> str:
        """Run a command inside a machine (its startup script's firewall lines)."""
        return self._in(self.machines[name].namespace, argv)

    def _in(self, namespace: str, argv: Sequence[str]) -> str:
        return _run(["ip", "netns", "exec", namespace, *argv])

    def cgroup_root(self, name: str) -> Path:
        """The folder of this machine's cgroups in the cgroup v2 hierarchy (:data:`CGROUP2`)."""
        return CGROUP2 / self.machines[name].namespace

    def cgroup(self, name: str, path: str) -> Path:
        """The machine's cgroup ``path`` (relative to its root, as its startup script names
        it), made if missing."""
        folder = self.cgroup_root(name) / path.strip("/")
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def in_cgroup(self, name: str, argv: Sequence[str]) -> list[str]:
        """A firewall line of the machine's startup script with its cgroup paths (``-m cgroup
        --path P``) made the machine's own (:meth:`cgroup`)."""
        out = list(argv)
        for i, word in enumerate(out[:-1]):
            if word == "--path" and "cgroup" in out[:i]:
                folder = self.cgroup(name, out[i + 1])
                out[i + 1] = str(folder.relative_to(CGROUP2))
        return out

    def command(
        self,
        name: str,
        argv: Sequence[str],
        *,
        mount: tuple[Path, str] | None = None,
        cgroup: str | None = None,
        noexec: bool = False,
    ) -> list[str]:
        """``argv`` as it runs inside the machine; with ``mount`` (folder, path), the folder
        appears at that path for it alone, as a container's volume does; with ``cgroup`` (a
        path as the machine's script names it), it runs in that cgroup of the machine from its
        first instruction, as a container started with ``--cgroup-parent`` does; with
        ``noexec``, the mounted folder is not executable (a volume from a folder the host
        mounts ``noexec``: Docker's bind mount keeps the flag)."""
        prefix = ["ip", "netns", "exec", self.machines[name].namespace]
        if cgroup is not None:  # joined before `ip netns exec`, which hides this /sys
            procs = self.cgroup(name, cgroup) / "cgroup.procs"
            join = 'echo $$ > "$0" && exec "$@"'
            prefix = ["sh", "-c", join, str(procs), *prefix]
        if mount is None:
            return [*prefix, *argv]
        folder, target = mount
        point = Path(target)
        if not point.exists():  # the mount point: an empty folder on the host, removed by close
            point.mkdir(parents=True)
            with self._lock:
                self._mount_points.append(point)
        script = 'mount --bind "$0" "$1" && shift && exec "$@"'
        if noexec:
            script = (
                'mount --bind "$0" "$1" && mount -o remount,bind,noexec "$1" && shift && exec "$@"'
            )
        return [*prefix, "sh", "-c", script, str(folder), target, *argv]

    def listen_inside(self, name: str, address: str, port: int) -> socket.socket:
        """A listening socket at ``address:port`` inside machine ``name`` (the address added to
        its loopback): a server of the machine itself, such as its metadata server."""
        machine = self.machines[name]
        self._in(machine.namespace, ["ip", "addr", "add", f"{address}/32", "dev", "lo"])
        return self._listen_in(machine.namespace, address, port)

    def listen(self, name: str, port: int = 0) -> socket.socket:
        """A listening socket on the router's end of a machine's link: what the machine
        reaches as ``http://GATEWAY:PORT`` (the storage gate). The socket lives in the router
        namespace; the threads that serve it stay in this one."""
        machine = self.machines[name]
        return self._listen_in(self.router, machine.gateway, port)

    def _listen_in(self, namespace: str, address: str, port: int) -> socket.socket:
        made: list[socket.socket | BaseException] = []

        def create() -> None:  # setns moves only this short-lived thread
            try:
                with open(f"/run/netns/{namespace}") as handle:
                    libc = ctypes.CDLL("libc.so.6", use_errno=True)
                    if libc.setns(handle.fileno(), CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns")
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((address, port))
                sock.listen(64)
                made.append(sock)
            except BaseException as exc:
                made.append(exc)

        thread = threading.Thread(target=create)
        thread.start()
        thread.join()
        result = made[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            namespaces = [m.namespace for m in self.machines.values()] + [self.router]
        for namespace in namespaces:
            with contextlib.suppress(RuntimeError):
                _run(["ip", "netns", "del", namespace])
            shutil.rmtree(NETNS_ETC / namespace, ignore_errors=True)
            _remove_cgroups(CGROUP2 / namespace)
        with contextlib.suppress(OSError):
            NETNS_ETC.rmdir()  # only when no other network left files there
        if NETNS_ETC.exists():
            # Another network (a test process running beside this one) has machines, whose
            # gateways may have their folder mounted at these paths: removing a directory that
            # is a mount point in another mount namespace succeeds and detaches that mount, so
            # its gateway would lose its files mid-run. They stay then (empty directories).
            return
        for point in self._mount_points:
            with contextlib.suppress(OSError):
                point.rmdir()  # only if still empty


def _extend_in_place(path: Path, text: str) -> None:
    """Make ``path`` hold ``text`` without a moment where it holds less than before.

    A running machine's processes see its hosts file through a bind mount of that very file
    (``ip netns exec``), so it cannot be replaced by a rename, and truncating it first leaves it
    empty for as long as this thread is descheduled before its write: a gateway resolving the
    backend's name then (nginx does at start) fails with "host not found" and never answers.
    Machines are only ever added, so the new text starts with the old one: an unchanged file
    is left alone, a longer one is written over in place and only then cut to length.
    """
    data = text.encode()
    try:
        with path.open("r+b") as handle:
            if handle.read() == data:
                return
            handle.seek(0)
            handle.write(data)
            handle.flush()
            handle.truncate()
    except FileNotFoundError:
        path.write_bytes(data)


def _remove_cgroups(folder: Path) -> None:
    """Remove a machine's cgroups, deepest first (a cgroup with a process left stays: the
    process's owner stops it, and the next close removes it)."""
    if not folder.exists():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()


def leftovers(tag: str) -> list[str]:
    """Namespaces and hosts folders of a network still present (for tests' finalizers)."""
    names = _run(["ip", "netns", "list"]).split()
    found = [n for n in names if n.startswith(tag)]
    if NETNS_ETC.exists():
        found += [str(p) for p in NETNS_ETC.iterdir() if p.name.startswith(tag)]
    return found


__all__ = [
    "CGROUP2",
    "METADATA_ADDRESS",
    "LocalNetwork",
    "Machine",
    "leftovers",
    "network_namespaces_work",
]
