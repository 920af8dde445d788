"""What the cloud path's VMs watch for a plan's deployment, with real processes:

- the backend VM's replicas and the fault's control (gatebench.vm._backend),
  driven as tester 0 drives them (gatebench.vm._deployed.RemoteFault): real Go
  backend processes, a real control server over HTTP, and the packet observer counting the
  connection attempts to the killed replica;
- a tester's handshakes (gatebench.vm._deployed.TesterWatch): real TLS
  connections to the Go backend's TLS listener, new and resumed, counted per phase.

Both observers watch what arrives for this host on any interface (``interface=None``), here
through the loopback interface; on a VM every address is the VM's own. That is all that
differs: here the servers listen on free loopback ports.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gatebench.local.procs import Supervisor, free_port, http_probe
from gatebench.vm._backend import Replicas, _control_server
from gatebench.vm._deployed import RemoteFault

pytestmark = pytest.mark.integration


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    with Supervisor() as supervisor:
        ports = [free_port() for _ in range(3)]
        started = Replicas(supervisor, "echo", tmp_path, [f"127.0.0.1:{p}" for p in ports], [])
        started.start_all()
        try:
            yield started
        finally:
            started.close()


def knock(port: int, times: int) -> None:
    """Connection attempts to ``port`` (each refused while nothing listens)."""
    for _ in range(times):
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            pass


def test_the_control_kills_a_replica_counts_the_attempts_to_it_and_starts_it_again(
    replicas: Replicas,
) -> None:
    port = replicas.started[1].port
    control_port = free_port()
    server = _control_server(f"127.0.0.1:{control_port}", replicas)
    try:
        fault = RemoteFault(f"http://127.0.0.1:{control_port}", 2, {7: 0.2, 8: 60.0})
        started = time.time()
        fault.on_start(7, started * 1000.0)
        deadline = time.time() + 10
        while "at" not in fault.kills[7] and time.time() < deadline:
            time.sleep(0.05)
        kill = fault.kills[7]
        assert kill["at"] >= started + 0.2, kill
        assert http_probe("127.0.0.1", port, "/") is None  # refused, as after a crash
        assert replicas.failed() is None  # a replica the control killed is not a failure
        for other in (replicas.started[0].port, replicas.started[2].port):
            assert http_probe("127.0.0.1", other, "/") is not None
        knock(port, 5)
        fault.on_end(7)
        assert kill["restarted_at"] > kill["at"]
        assert "note" not in kill, kill["note"]
        attempts = kill["attempts"]
        assert len(attempts) >= 5 and all(a >= kill["at"] for a in attempts)
        assert http_probe("127.0.0.1", port, "/") is not None  # the same port again
        assert replicas.started[1].port == port
        # A phase that ends before its kill time: no kill, said so; an unknown replica: 404.
        fault.on_start(8, time.time() * 1000.0 + 60_000)
        fault.on_end(8)
        assert fault.kills[8] == {"error": "the phase ended before the kill time"}
        request = urllib.request.Request(
            f"http://127.0.0.1:{control_port}/replicas/9/kill", data=b"", method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=5).close()
        with caught.value as refused:
            assert refused.code == 404
            assert json.loads(refused.read()) == {"error": "no /replicas/9/kill"}
    finally:
        server.shutdown()
        server.server_close()


def test_a_replica_that_dies_on_its_own_ends_the_backend(replicas: Replicas) -> None:
    replicas.started[2].process.kill()
    ended = replicas.failed()
    assert ended is not None and ended[0] is replicas.started[2]


def test_a_tester_counts_each_phases_new_and_resumed_handshakes(tmp_path: Path) -> None:
    import ssl

    from gatebench.core.measure import PhaseResult
    from gatebench.core.stats import PhaseSample
    from gatebench.core.tls import CA_CERT, make_run_certificates, write_tls_folder
    from gatebench.local.backends import BackendTls, start_backend_process
    from gatebench.vm._deployed import TesterWatch

    folder = write_tls_folder(make_run_certificates(), tmp_path)
    with Supervisor() as supervisor:
        backend = start_backend_process(supervisor, "echo", tmp_path, tls=BackendTls(folder))
        assert backend.tls_port is not None
        url = f"https://127.0.0.1:{backend.tls_port}"
        phase = {"index": 3, "request": {"base_url": url}}
        watch = TesterWatch({"tls": {"http2": False}, "phases": [phase]})
        watch.start()
        try:
            assert watch.notes == []
            context = ssl.create_default_context(cafile=str(folder / CA_CERT))
            context.maximum_version = ssl.TLSVersion.TLSv1_3
            start = time.time()
            session = None
            for n in range(4):  # one full handshake, then three resuming its session
                with (
                    socket.create_connection(("127.0.0.1", backend.tls_port), 5) as raw,
                    context.wrap_socket(raw, server_hostname="127.0.0.1", session=session) as conn,
                ):
                    conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    while conn.recv(65536):  # the session ticket comes with the answer
                        pass
                    assert conn.session_reused == (n > 0)
                    session = conn.session
            time.sleep(0.3)  # the observer's thread reads what the kernel queued
            end = time.time()
            watch.on_phase(PhaseResult(3, PhaseSample(), start * 1000.0, end * 1000.0, None))
            watch.on_phase(PhaseResult(4, PhaseSample(), start * 1000.0, end * 1000.0, None))
        finally:
            watch.close()
    assert watch.summary() == {"handshakes": {"3": [1, 3]}}
