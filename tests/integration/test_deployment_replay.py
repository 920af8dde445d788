"""The gateway as deployed, proven on the real binaries: every gateway that runs here, booted
with the run's TLS (HTTP/2 offered) in front of a pool of three echo replicas, must

- route exactly what the IR says over TLS with HTTP/1.1 and over HTTP/2 negotiated by ALPN
  (the whole replay matrix of the adversarial case, each request compared with the echo the
  backend gives it directly: tests/replay.py);
- present the run's certificate, which a client trusting the run's CA alone accepts, and
  offer only HTTP/1.1 when HTTP/2 is not asked for;
- spread requests over the replicas, each replica counting what it served
  (``/__gatebench__/stats``): round robin within ±10 % of an even share over equal
  replicas; least connections sending a replica that answers 40 ms late well under an even
  share under concurrent load (``LEAST_CONN_SHARE``).

A gateway that cannot render a feature (Varnish: no TLS; no least-connections balancer)
must say so with a located reason instead; it is then replayed with what it can render.
"""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from booted import skip_unless_installed
from gatebench.core.backend import mock_config
from gatebench.core.errors import UnsupportedFeature
from gatebench.core.ir import Api
from gatebench.core.plan import Backend
from gatebench.core.renderers import RenderTarget, all_renderers, get_renderer
from gatebench.core.tls import (
    CA_CERT,
    GatewayTls,
    make_run_certificates,
    remove_tls_folder,
    write_tls_folder,
)
from gatebench.local.backends import StartedBackend, backend_stats, start_backend_process
from gatebench.local.procs import ManagedProcess, Supervisor, free_port
from gatebench.local.provisioners import boot_gateway
from replay import (
    HOLDS_REFUSALS,
    Client,
    Forwarding,
    H2Client,
    ReplayRequest,
    expressible,
    refusals_held,
    replay,
    replay_matrix,
)

LOCAL = [r.name for r in all_renderers() if r.runs_here]
REPLICAS = 3
DISTRIBUTION_REQUESTS = 300
ROUND_ROBIN_TOLERANCE = 0.10
"""How far each replica's round-robin share may stray from an even one (a fraction of it):
round robin is exact up to the few requests a gateway's own state (several workers, a
health check's timing) shifts."""
H2_KNOWN_DIFFERENCES = {
    "zuul": {"htmlAndSubDelims: chunked body"},
}
"""Requests a gateway forwards differently over HTTP/2, by replay label, each documented in
docs/gateways.md: Zuul 1 (Tomcat 9) forwards an HTTP/2 request body sent without
Content-Length (HTTP/2's form of a chunked body) as no body at all."""
SLOW_S = 0.040
"""The slow replica's extra latency in the least-connections test."""
LEAST_CONN_SHARE = 0.6
"""The most a least-connections balancer may send the slow replica, as a fraction of an even
share (round robin sends it exactly one). Apache's ``bybusyness`` spares it least: 43 to 51
of 300 requests (an even share: 100) in eight runs here, with a 40 ms or a 100 ms slow
replica alike; nginx, HAProxy and Envoy sent it 4 to 23."""


@dataclass
class Deployed:
    gateway: str
    target: RenderTarget
    process: ManagedProcess
    supervisor: Supervisor

    def stop(self) -> None:
        self.supervisor.stop(self.process)


@pytest.fixture(scope="module")
def tls_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = write_tls_folder(make_run_certificates("ecdsa-p256"), tmp_path_factory.mktemp("tls"))
    yield folder
    remove_tls_folder(folder)


@pytest.fixture(scope="module")
def replicas(
    supervisor: Supervisor, tmp_path_factory: pytest.TempPathFactory
) -> list[StartedBackend]:
    logs = tmp_path_factory.mktemp("replicas")
    return [start_backend_process(supervisor, "echo", logs, replica=n) for n in (1, 2, 3)]


def _client_context(tls_folder: Path, alpn: list[str]) -> ssl.SSLContext:
    """A client that trusts the run's CA alone (no system roots) and checks the host name."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=str(tls_folder / CA_CERT))
    context.set_alpn_protocols(alpn)
    return context


@pytest.fixture(scope="module")
def deploy(
    supervisor: Supervisor,
    replicas: list[StartedBackend],
    tls_folder: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., Deployed]:
    def start(
        gateway: str, api: Api, *, tls: bool, http2: bool, balance: str, pool: bool = True
    ) -> Deployed:
        renderer = get_renderer(gateway)
        urls = tuple(r.url for r in replicas)
        target = RenderTarget(
            workdir=str(tmp_path_factory.mktemp(f"{gateway}-deployed")),
            listen_port=free_port(),
            backend_url=urls[0],
            admin_port=free_port(),
            tls=GatewayTls(str(tls_folder), http2=http2) if tls else None,
            replicas=urls if pool else (),
            balance=balance,
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GATEBENCH_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")
            proc = boot_gateway(renderer, api, target, supervisor)
        return Deployed(gateway, target, proc, supervisor)

    return start


def _routable(gateway: str, api: Api) -> Api:
    """The gateway, installed here (KrakenD and Tyk are skipped, with the reason, where they
    are not), and the part of ``api`` it expresses: the routes it refuses are left out as a
    run leaves them out (route replay checks those refusals against its goldens)."""
    skip_unless_installed(gateway)
    try:
        get_renderer(gateway).render(api, RenderTarget(workdir="/tmp/gatebench-probe"))
    except UnsupportedFeature as exc:
        api = replace(api, operations=expressible(api, exc.problems))
    assert api.operations, f"{gateway} expresses none of {api.title!r}"
    return api


def _can_render(gateway: str, api: Api, **features: object) -> str | None:
    """None, or the located reason the gateway gives for not rendering these features."""
    renderer = get_renderer(gateway)
    target = RenderTarget(workdir="/tmp/gatebench-probe", **features)  # type: ignore[arg-type]
    try:
        renderer.render(api, target)
    except UnsupportedFeature as exc:
        problem = exc.problems[0]
        assert problem.pointer.startswith("/x-gatebench/"), problem.pointer
        assert gateway in problem.message
        return problem.message
    return None


POOL = {
    "backend_url": "http://127.0.0.1:9001",
    "replicas": ("http://127.0.0.1:9001", "http://127.0.0.1:9002", "http://127.0.0.1:9003"),
}


@pytest.mark.parametrize("gateway", LOCAL)
def test_replay_over_tls_and_http2_through_a_pool(
    gateway: str,
    replay_api: Callable[[str], Api],
    deploy: Callable[..., Deployed],
    replicas: list[StartedBackend],
    tls_folder: Path,
) -> None:
    """TLS with HTTP/2 offered, three replicas round robin: what the gateway renders of it
    (a refused part is left out, with a located reason naming a declared gap)."""
    api = _routable(gateway, replay_api("adversarial"))
    renderer = get_renderer(gateway)
    forwarding = Forwarding.of(renderer)
    no_tls = _can_render(gateway, api, tls=GatewayTls("/tmp/x", http2=True))
    no_pool = _can_render(gateway, api, **POOL)
    if no_tls is not None:
        assert renderer.deployment_gaps.get("tls"), no_tls
        assert "TLS termination" in no_tls
    if no_pool is not None:
        assert renderer.deployment_gaps.get("pool.round_robin"), no_pool
        assert "replicas, round robin" in no_pool
    if no_pool is None:
        forwarding = replace(forwarding, pool_ports=tuple(r.port for r in replicas))
    matrix = replay_matrix(api, forwarding=forwarding)
    deployed = deploy(
        gateway,
        api,
        tls=no_tls is None,
        http2=True,
        balance="round_robin",
        pool=no_pool is None,
    )
    port = deployed.target.listen_port
    try:
        if no_tls is not None:
            failures = replay(
                matrix, gateway_port=port, backend_port=replicas[0].port, forwarding=forwarding
            )
            assert not failures, f"{gateway} (plain):\n" + "\n".join(failures[:40])
            return
        held = HOLDS_REFUSALS.get(gateway)

        def h1_client(timeout: float = held or 60.0) -> Client:
            return Client(
                "127.0.0.1",
                port,
                timeout=timeout,
                ssl_context=_client_context(tls_folder, ["http/1.1"]),
                server_hostname="localhost",
            )

        failures = replay(
            matrix,
            gateway_port=port,
            backend_port=replicas[0].port,
            forwarding=forwarding,
            via=h1_client(),
        )
        if held is not None:
            failures = refusals_held(
                failures, matrix, lambda: h1_client(10.0), forwarding.refusal_status
            )
        assert not failures, f"{gateway} over TLS (HTTP/1.1):\n" + "\n".join(failures[:40])
        h2 = H2Client("127.0.0.1", port, _client_context(tls_folder, ["h2", "http/1.1"]))
        failures = replay(
            matrix,
            gateway_port=port,
            backend_port=replicas[0].port,
            forwarding=forwarding,
            via=h2,
        )
        assert h2.negotiated == "h2"
        known = H2_KNOWN_DIFFERENCES.get(gateway, set())
        differing = {f.split("[", 1)[1].split("]", 1)[0] for f in failures}
        assert differing == known, f"{gateway} over HTTP/2:\n" + "\n".join(failures[:40])
    finally:
        deployed.stop()


@pytest.mark.parametrize("gateway", LOCAL)
def test_tls_without_http2_offers_http1_only_and_refuses_other_cas(
    gateway: str,
    replay_api: Callable[[str], Api],
    deploy: Callable[..., Deployed],
    tls_folder: Path,
    tmp_path: Path,
) -> None:
    api = _routable(gateway, replay_api("auction"))
    if _can_render(gateway, api, tls=GatewayTls("/tmp/x")) is not None:
        pytest.skip(f"{gateway} terminates no TLS (its reason is checked by the replay test)")
    deployed = deploy(gateway, api, tls=True, http2=False, balance="round_robin", pool=False)
    port = deployed.target.listen_port
    try:
        offered = H2Client("127.0.0.1", port, _client_context(tls_folder, ["h2", "http/1.1"]))
        if get_renderer(gateway).http2_always:  # declared: KrakenD offers h2 with any TLS
            offered._open()
            assert offered.negotiated == "h2"
            offered.close()
        else:
            with pytest.raises(AssertionError, match="ALPN selected"):
                offered._open()
        stranger = write_tls_folder(make_run_certificates(), tmp_path)
        probe = ReplayRequest("probe", "GET", "/gatebench-no-such-route")
        refused = Client("127.0.0.1", port, ssl_context=_client_context(stranger, ["http/1.1"]))
        try:
            with pytest.raises(ssl.SSLCertVerificationError):
                refused.send(probe)
        finally:
            refused.close()
        trusted = Client("127.0.0.1", port, ssl_context=_client_context(tls_folder, ["http/1.1"]))
        try:
            assert trusted.send(probe).status == get_renderer(gateway).refusal_status
        finally:
            trusted.close()
    finally:
        deployed.stop()


def _counts(replicas: list[StartedBackend]) -> list[int]:
    return [int(backend_stats(r.port)["requests"]) for r in replicas]


def _load(port: int, clients: int, requests: int) -> list[str]:
    """``requests`` routed GETs from ``clients`` keep-alive clients at once; the problems."""
    errors: list[str] = []

    def client(n: int) -> None:
        c = Client("127.0.0.1", port)
        try:
            for i in range(requests // clients):
                reply = c.send(ReplayRequest("get", "GET", f"/auctions/{n}-{i}"))
                if reply.status != 200:
                    errors.append(f"{reply.status} {reply.body[:80]!r}")
        finally:
            c.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return errors


@pytest.mark.parametrize("gateway", LOCAL)
def test_round_robin_shares_evenly(
    gateway: str,
    replay_api: Callable[[str], Api],
    deploy: Callable[..., Deployed],
    replicas: list[StartedBackend],
) -> None:
    """300 routed requests from 3 keep-alive clients over three equal replicas: each serves
    an even share within ±10 %, and every request is served by some replica."""
    api = _routable(gateway, replay_api("auction"))
    refused = _can_render(gateway, api, **POOL)
    if refused is not None:
        assert get_renderer(gateway).deployment_gaps.get("pool.round_robin"), refused
        pytest.skip(f"{gateway}: {refused}")
    deployed = deploy(gateway, api, tls=False, http2=False, balance="round_robin")
    try:
        before = _counts(replicas)
        errors = _load(deployed.target.listen_port, 3, DISTRIBUTION_REQUESTS)
        served = [a - b for a, b in zip(_counts(replicas), before, strict=True)]
    finally:
        deployed.stop()
    assert not errors, errors[:5]
    assert sum(served) == DISTRIBUTION_REQUESTS, served
    even = DISTRIBUTION_REQUESTS / REPLICAS
    allowed = ROUND_ROBIN_TOLERANCE * even
    assert all(abs(n - even) <= allowed for n in served), (
        f"{gateway}: replicas served {served}; each should be {even:g} ± {allowed:g}"
    )


@pytest.fixture(scope="module")
def uneven_replicas(
    supervisor: Supervisor,
    replay_api: Callable[[str], Api],
    tmp_path_factory: pytest.TempPathFactory,
) -> list[StartedBackend]:
    """Three mock replicas of the auction API; the third answers 40 ms late."""
    folder = tmp_path_factory.mktemp("uneven")
    api = replay_api("auction")
    out = []
    for n, latency in ((1, 0.0), (2, 0.0), (3, SLOW_S)):
        config = folder / f"mock-{n}.json"
        config.write_text(json.dumps(mock_config(api, Backend("mock", latency=latency))))
        out.append(
            start_backend_process(
                supervisor, "mock", folder, replica=n, extra_args=["-config", str(config)]
            )
        )
    return out


@pytest.mark.parametrize("gateway", LOCAL)
def test_least_conn_spares_the_slow_replica(
    gateway: str,
    replay_api: Callable[[str], Api],
    supervisor: Supervisor,
    uneven_replicas: list[StartedBackend],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Six clients at once over two fast replicas and one that answers 40 ms late: a
    least-connections balancer sees the slow one busy and sends it well under an even share
    (``LEAST_CONN_SHARE`` of it; round robin would send it exactly a third)."""
    api = _routable(gateway, replay_api("auction"))
    urls = tuple(r.url for r in uneven_replicas)
    refused = _can_render(gateway, api, balance="least_conn", backend_url=urls[0], replicas=urls)
    if refused is not None:
        assert get_renderer(gateway).deployment_gaps.get("pool.least_conn"), refused
        pytest.skip(f"{gateway}: {refused}")
    target = RenderTarget(
        workdir=str(tmp_path_factory.mktemp(f"{gateway}-least-conn")),
        listen_port=free_port(),
        backend_url=urls[0],
        admin_port=free_port(),
        replicas=urls,
        balance="least_conn",
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GATEBENCH_JVM_OPTIONS", "-XX:TieredStopAtLevel=1")
        proc = boot_gateway(get_renderer(gateway), api, target, supervisor)
    try:
        before = _counts(uneven_replicas)
        errors = _load(target.listen_port, 6, DISTRIBUTION_REQUESTS)
        served = [a - b for a, b in zip(_counts(uneven_replicas), before, strict=True)]
    finally:
        supervisor.stop(proc)
    assert not errors, errors[:5]
    assert sum(served) == DISTRIBUTION_REQUESTS, served
    even = DISTRIBUTION_REQUESTS / REPLICAS
    assert served[2] < even * LEAST_CONN_SHARE, (
        f"{gateway}: the slow replica served {served[2]} of {served}; least connections "
        f"should send it under {even * LEAST_CONN_SHARE:g}"
    )
