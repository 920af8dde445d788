"""The local VMs' hosts files (tests/cloud/netns.py) are never seen empty or shorter while a
machine is added: a running machine reads its file through a bind mount, so a gateway that
resolves a name at start (nginx's upstream) must not catch the file truncated."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from cloud.netns import _extend_in_place

HEADER = "127.0.0.1\tlocalhost\n"


def line(i: int) -> str:
    return f"10.213.0.{i}\tvm{i}.local.internal\tvm{i}\n"


def test_an_unchanged_hosts_file_is_not_written_again(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    text = HEADER + line(2)
    _extend_in_place(hosts, text)
    os.utime(hosts, ns=(1_000_000_000, 1_000_000_000))
    before = hosts.stat()
    _extend_in_place(hosts, text)
    after = hosts.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, 1_000_000_000)
    assert hosts.read_text() == text


def test_a_longer_hosts_file_is_written_over_in_place(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    _extend_in_place(hosts, HEADER + line(2))
    inode = hosts.stat().st_ino
    _extend_in_place(hosts, HEADER + line(2) + line(6))
    assert hosts.stat().st_ino == inode  # what a bind mount of the file keeps showing
    assert hosts.read_text() == HEADER + line(2) + line(6)


def test_a_reader_never_sees_the_file_lose_a_name_while_machines_are_added(
    tmp_path: Path,
) -> None:
    hosts = tmp_path / "hosts"
    first = HEADER + line(2)
    _extend_in_place(hosts, first)
    stop = threading.Event()
    seen: list[str] = []

    def read() -> None:
        while not stop.is_set():
            text = hosts.read_text()
            if not text.startswith(first):
                seen.append(text)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        text = first
        for i in range(3, 400):
            text += line(i)
            _extend_in_place(hosts, text)
            _extend_in_place(hosts, text)  # every boot adds its machine again
    finally:
        stop.set()
        reader.join()
    assert seen == []


def test_a_mount_point_stays_while_another_network_has_machines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing a directory that is a mount point in another mount namespace succeeds and
    detaches the mount there: a network closing beside another one (two test processes) must
    leave the gateways' mount points to it. Namespace commands are not run here."""
    from cloud import netns

    etc = tmp_path / "netns"
    monkeypatch.setattr(netns, "NETNS_ETC", etc)
    monkeypatch.setattr(netns, "_run", lambda argv: "")
    point = tmp_path / "etc-gatebench"
    point.mkdir()
    (etc / "gbother-0").mkdir(parents=True)  # another network's machine
    first = netns.LocalNetwork()
    first._mount_points.append(point)
    first.close()
    assert point.is_dir()
    (etc / "gbother-0").rmdir()
    second = netns.LocalNetwork()
    second._mount_points.append(point)
    second.close()
    assert not point.exists() and not etc.exists()
