"""The loopback observer (gatebench.local._wire) on real traffic: TLS handshakes a real gateway
answered, new and resumed, over TLS 1.3 and 1.2, and connection attempts to a closed port.
Needs CAP_NET_RAW (root), as the observer itself does."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.spec import load_spec
from gatebench.core.tls import (
    CA_CERT,
    GatewayTls,
    make_run_certificates,
    remove_tls_folder,
    write_tls_folder,
)
from gatebench.local._wire import LoopbackObserver, WireUnavailable, open_observer
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners import boot_gateway
from paths import EXAMPLES


@pytest.fixture(scope="module")
def tls_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = write_tls_folder(make_run_certificates(), tmp_path_factory.mktemp("tls"))
    yield folder
    remove_tls_folder(folder)


def _observer(**ports: list[int]) -> LoopbackObserver:
    try:
        return open_observer(**ports)
    except WireUnavailable as exc:
        pytest.fail(f"the observer cannot run here: {exc}")


def _taken(count: Callable[[], int], expected: int, timeout_s: float = 10.0) -> None:
    """Wait until the observer has taken ``expected`` packets in, at most ``timeout_s``, then
    0.3 s more for any it should not have: its thread reads the capture socket on its own, and
    a busy machine may hold it back for longer than the traffic took."""
    deadline = time.monotonic() + timeout_s
    while count() < expected and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)


def _connect(port: int, context: ssl.SSLContext, session: ssl.SSLSession | None) -> ssl.SSLSession:
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        context.wrap_socket(raw, server_hostname="localhost", session=session) as tls,
    ):
        tls.sendall(b"GET /gatebench-none HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while tls.recv(65536):
            pass
        assert tls.session is not None
        return tls.session


@pytest.mark.parametrize("version", ["TLSv1_3", "TLSv1_2"])
@pytest.mark.parametrize("resumption", [True, False])
def test_new_and_resumed_handshakes(
    version: str, resumption: bool, tls_folder: Path, tmp_path: Path
) -> None:
    api = load_spec(EXAMPLES / "auction" / "openapi.yaml").api
    assert api is not None
    port = free_port()
    target = RenderTarget(
        workdir=str(tmp_path / "nginx"),
        listen_port=port,
        tls=GatewayTls(str(tls_folder), resumption=resumption),
    )
    context = ssl.create_default_context(cafile=str(tls_folder / CA_CERT))
    context.maximum_version = getattr(ssl.TLSVersion, version)
    with Supervisor() as sup:
        boot_gateway(get_renderer("nginx"), api, target, sup)
        observer = _observer(server_ports=[port])
        try:
            start = time.time()
            session = _connect(port, context, None)
            for _ in range(3):
                session = _connect(port, context, session)
            _taken(lambda: sum(observer.handshakes_between(start, time.time(), port)), 4)
            new, resumed = observer.handshakes_between(start, time.time(), port)
        finally:
            observer.close()
    if resumption:
        assert (new, resumed) == (1, 3)
    else:
        assert (new, resumed) == (4, 0)


def test_connection_attempts_to_a_closed_port() -> None:
    port = free_port()
    observer = _observer(attempt_ports=[port])
    try:
        start = time.time()
        for _ in range(5):
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
        other = free_port()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", other), timeout=1).close()
        _taken(lambda: len(observer.attempts_to(port, start)), 5)
        seen = observer.attempts_to(port, start)
        assert len(seen) == 5
        assert observer.attempts_to(other, start) == []
    finally:
        observer.close()
