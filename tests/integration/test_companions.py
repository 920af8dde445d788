"""A gateway's companions (Tyk's Redis): started before it on loopback, answering, stopped with
it, never left running. Runs with the real redis-server (scripts/setup.d/apt-packages.txt),
with or without Tyk."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import psutil
import pytest

from gatebench.core.errors import RunError
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners._boot import start_companions


def _ping(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.sendall(b"PING\r\n")
        return sock.recv(16)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_tyks_redis_answers_on_loopback_and_stops_with_the_gateway(tmp_path: Path) -> None:
    tyk = get_renderer("tyk")
    target = RenderTarget(workdir=str(tmp_path), listen_port=free_port(), redis_port=free_port())
    with Supervisor() as supervisor:
        (redis,) = start_companions(tyk, target, supervisor)
        assert _ping(target.redis_port) == b"+PONG\r\n"
        listening = {
            c.laddr.ip for c in psutil.Process(redis.pid).net_connections() if c.status == "LISTEN"
        }
        assert listening == {"127.0.0.1"}
        # A stand-in gateway process: stopping it stops its companions.
        gateway = supervisor.start("gateway", ["sleep", "60"], log_path=tmp_path / "gw.log")
        gateway.companions.append(redis)
        supervisor.stop(gateway)
        assert _gone(redis.pid)
        assert redis not in supervisor.processes
    assert not list(tmp_path.glob("*.rdb")), "Redis wrote a snapshot"
    assert (tmp_path / "redis.log").is_file()


def test_a_companion_that_cannot_start_is_a_located_error(tmp_path: Path) -> None:
    tyk = get_renderer("tyk")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        target = RenderTarget(workdir=str(tmp_path), redis_port=busy.getsockname()[1])
        with Supervisor() as supervisor, pytest.raises(RunError) as info:
            start_companions(tyk, target, supervisor, timeout=5)
        assert str(info.value).startswith("tyk's redis exited with code 1 before it was ready")
        assert supervisor.processes == []
    finally:
        busy.close()
