"""``local.procs.free_port``: a port chosen now and listened on later (a gateway's, chosen when
it is rendered) is picked below the kernel's ephemeral range, so that no outgoing connection of
the load (the kernel gives those ephemeral ports) can take it meanwhile; the kernel's choice
when the range is unknown."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from gatebench.local import procs


def test_ports_are_free_and_below_the_ephemeral_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranges = tmp_path / "ip_local_port_range"
    ranges.write_text("32768\t60999\n", encoding="ascii")
    monkeypatch.setattr(procs, "EPHEMERAL_RANGE", ranges)
    ports = [procs.free_port() for _ in range(50)]
    assert all(procs.SERVICE_LOW <= p < 32768 for p in ports), ports
    assert len(set(ports)) > 40  # at random: two callers rarely pick the same
    for port in ports[:5]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))  # free indeed


def test_a_port_someone_listens_on_is_never_picked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    ranges = tmp_path / "ip_local_port_range"
    # a range that leaves exactly [SERVICE_LOW, SERVICE_LOW + 1000): the taken port is moved in
    monkeypatch.setattr(procs, "SERVICE_LOW", port - 500)
    ranges.write_text(f"{port + 500}\t60999\n", encoding="ascii")
    monkeypatch.setattr(procs, "EPHEMERAL_RANGE", ranges)
    try:
        assert port not in {procs.free_port() for _ in range(300)}
    finally:
        taken.close()


def test_without_a_known_range_the_kernel_chooses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(procs, "EPHEMERAL_RANGE", tmp_path / "missing")
    assert procs._below_ephemeral() is None
    assert 1024 < procs.free_port() < 65536
    low = tmp_path / "low"
    low.write_text("20500 60999\n", encoding="ascii")  # too little room below it
    monkeypatch.setattr(procs, "EPHEMERAL_RANGE", low)
    assert procs._below_ephemeral() is None
