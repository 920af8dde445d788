"""Each local tester on its own "host": a network namespace reached over a veth link.

With several testers (``gatebench run --testers N``) every Gatling JVM runs in a network
namespace of its own, so its requests cross a network stack (veth, routing, NAT, conntrack) as
between VMs, not the loopback shortcut. The gateways, the backend and the ceiling server stay
where they are, bound to 127.0.0.1 in the machine's namespace; a tester reaches them at
``TARGET`` (see :class:`LoadHost`), an address that exists only as a neighbour entry inside
the tester's namespace: at the machine's end of the link, a DNAT rule in a chain of the run's
own sends it to 127.0.0.1 (``route_localnet`` on that one link allows it).

No address is added outside the namespaces the run creates: the machine's end of each link
has none, only a route and a neighbour entry for the tester's address, which go with the link.
Everything is named ``gbXXXXXX...`` with a random tag and removed by :meth:`LoadHostNetwork.close`
(namespaces take their links; the NAT chain and its jump are deleted), on every way out: the
runner holds it in a ``with`` block. Root is needed; :func:`namespaces_problem` says why not.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gatebench.core.errors import RunError

TESTER_NET = "100.127"
"""Addresses of testers: ``100.127.T.2`` (the tester) and ``100.127.T.1`` (the targets, as it
sees them); shared address space (RFC 6598), never routed beyond this machine."""


def namespaces_problem() -> str | None:
    """None when this machine can put testers in namespaces; else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "iptables"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (scripts/setup.d/apt-packages.txt installs it)"
    return None


def _run(argv: Sequence[str]) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise RunError(f"tester network: {' '.join(argv)}: {exc}") from exc
    if done.returncode != 0:
        raise RunError(
            f"tester network: {' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}"
        )
    return done.stdout


@dataclass(frozen=True)
class LoadHost:
    index: int
    namespace: str
    address: str
    """The tester's own address, inside its namespace."""
    target: str
    """Where the tester reaches the machine's 127.0.0.1 (any port)."""

    @property
    def wrapper(self) -> tuple[str, ...]:
        """The command prefix that runs a process on this host."""
        return ("ip", "netns", "exec", self.namespace)


@dataclass
class LoadHostNetwork:
    """Namespaces for ``count`` testers; use as a context manager."""

    count: int
    tag: str = field(default_factory=lambda: "gb" + secrets.token_hex(3))
    hosts: list[LoadHost] = field(default_factory=list)
    _links: list[str] = field(default_factory=list)
    _chain: bool = False

    def __enter__(self) -> LoadHostNetwork:
        try:
            self._create()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def chain(self) -> str:
        return f"{self.tag.upper()}-TESTERS"

    def _create(self) -> None:
        _run(["iptables", "-w", "-t", "nat", "-N", self.chain])
        self._chain = True
        _run(["iptables", "-w", "-t", "nat", "-I", "PREROUTING", "-j", self.chain])
        for t in range(self.count):
            ns, outer, inner = f"{self.tag}t{t}", f"{self.tag}o{t}", f"{self.tag}i{t}"
            address, target = f"{TESTER_NET}.{t}.2", f"{TESTER_NET}.{t}.1"
            _run(["ip", "netns", "add", ns])
            self.hosts.append(LoadHost(t, ns, address, target))
            _run(["ip", "link", "add", outer, "type", "veth", "peer", "name", inner])
            self._links.append(outer)
            _run(["ip", "link", "set", inner, "netns", ns])
            outer_mac = Path(f"/sys/class/net/{outer}/address").read_text().strip()
            inside = ["ip", "netns", "exec", ns]
            inner_mac = _run([*inside, "cat", f"/sys/class/net/{inner}/address"]).strip()
            _run([*inside, "ip", "link", "set", "lo", "up"])
            _run([*inside, "ip", "addr", "add", f"{address}/32", "dev", inner])
            _run([*inside, "ip", "link", "set", inner, "up"])
            _run([*inside, "ip", "route", "add", f"{target}/32", "dev", inner])
            _run([*inside, "ip", "neigh", "replace", target, "lladdr", outer_mac, "dev", inner])
            _run(["sysctl", "-qw", f"net.ipv4.conf.{outer}.route_localnet=1"])
            _run(["ip", "link", "set", outer, "up"])
            _run(["ip", "route", "add", f"{address}/32", "dev", outer])
            _run(["ip", "neigh", "replace", address, "lladdr", inner_mac, "dev", outer])
            dnat = ("-d", target, "-p", "tcp", "-j", "DNAT", "--to-destination", "127.0.0.1")
            _run(
                ["iptables", "-w", "-t", "nat", "-A", self.chain, "-i", outer, "-s", address, *dnat]
            )

    def close(self) -> None:
        """Remove everything this network created (idempotent; errors do not stop it)."""
        for host in self.hosts:
            with contextlib.suppress(RunError):
                _run(["ip", "netns", "delete", host.namespace])
        for link in self._links:  # gone with the namespace's peer; this is a second look
            if Path(f"/sys/class/net/{link}").exists():
                with contextlib.suppress(RunError):
                    _run(["ip", "link", "delete", link])
        if self._chain:
            with contextlib.suppress(RunError):
                _run(["iptables", "-w", "-t", "nat", "-D", "PREROUTING", "-j", self.chain])
            with contextlib.suppress(RunError):
                _run(["iptables", "-w", "-t", "nat", "-F", self.chain])
            with contextlib.suppress(RunError):
                _run(["iptables", "-w", "-t", "nat", "-X", self.chain])
        self.hosts, self._links, self._chain = [], [], False


def leftovers(tag: str = "gb") -> list[str]:
    """What tester networks whose tag starts with ``tag`` left behind (namespaces, links,
    NAT chains and jumps): for tests."""
    name = re.compile(re.escape(tag) + r"[0-9a-f]*[tio][0-9]+$")
    found = [n for n in _run(["ip", "netns", "list"]).split() if name.match(n)]
    found += [p.name for p in Path("/sys/class/net").iterdir() if name.match(p.name)]
    rules = _run(["iptables", "-w", "-t", "nat", "-S"])
    chain = re.compile(re.escape(tag.upper()) + r"[0-9A-F]*-TESTERS")
    found += [line for line in rules.splitlines() if chain.search(line)]
    return found


__all__ = ["TESTER_NET", "LoadHost", "LoadHostNetwork", "leftovers", "namespaces_problem"]
