"""Live configuration changes on the real gateways (gatebench.local.provisioners._live): each gateway
that runs here boots on 10 routes behind echo backend ``a``, takes 100 routes and a new
upstream (backend ``b``) through its own mechanism, and every one of the 100 routes then answers
correctly from ``b``; the configuration after a change routes exactly as route replay demands;
a configuration the checker refuses is never applied; a gateway without a live mechanism is
restarted; a gateway booted as deployed (the run's TLS, a pool of replicas) stays so through a
change. Small sizes: seconds per gateway (the JVM gateways: their start-up)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gatebench.core.errors import RunError, UnsupportedFeature
from gatebench.core.fairness import stated_cpu_policy
from gatebench.core.ir import Api
from gatebench.core.renderers import (
    RESTART,
    LiveChange,
    RenderTarget,
    all_renderers,
    get_renderer,
)
from gatebench.core.renderers._jvm import JVM_OPTIONS_ENV
from gatebench.core.renderers.nginx import NginxRenderer
from gatebench.core.routescale import Probe, added_routes, probes_for, replicate
from gatebench.core.tls import (
    GatewayTls,
    make_run_certificates,
    remove_tls_folder,
    write_tls_folder,
)
from gatebench.kinds._live._gateway import RouteProber, ask
from gatebench.local.backends import start_backend, start_backend_process
from gatebench.local.procs import Supervisor
from gatebench.local.provisioners import ConfigRejected
from gatebench.local.provisioners._live import LiveGateway
from replay import (
    HOLDS_REFUSALS,
    Client,
    Forwarding,
    expressible,
    refusals_held,
    replay,
    replay_matrix,
)

pytestmark = pytest.mark.integration

LOCAL = [r.name for r in all_renderers() if r.runs_here]
DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def backends(supervisor: Supervisor, tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    """Two echo backends that name themselves in every answer."""
    out = {}
    for name in ("a", "b"):
        _proc, port = start_backend(
            supervisor,
            "echo",
            tmp_path_factory.mktemp(f"backend-{name}"),
            extra_args=["-instance", name],
        )
        out[name] = port
    return out


@pytest.fixture
def jvm_quick() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        if JVM_OPTIONS_ENV not in os.environ:
            patch.setenv(JVM_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")
        yield


def _live(
    gateway: object, supervisor: Supervisor, tmp_path: Path, boot_timeout: float | None = None
) -> LiveGateway:
    live = LiveGateway(
        gateway,  # type: ignore[arg-type]
        supervisor,
        tmp_path / "gw",
        cpu=stated_cpu_policy(1),
        boot_timeout=boot_timeout,
    )
    reason = live.renderer.available_here()
    if reason is not None:
        pytest.skip(f"{live.renderer.name} is not installed here: {reason}")
    return live


def _prober(live: LiveGateway, instance: str) -> RouteProber:
    return RouteProber(
        "127.0.0.1",
        live.port,
        instance=instance,
        normalizes_path=live.renderer.normalizes_path,
        ca_file=live.ca_file,
    )


@pytest.mark.parametrize("gateway", LOCAL)
def test_a_change_adds_routes_and_moves_the_upstream(
    gateway: str,
    supervisor: Supervisor,
    backends: dict[str, int],
    tmp_path: Path,
    replay_api: Callable[[str], Api],
    jvm_quick: None,
) -> None:
    api = replay_api("auction")
    small, big = replicate(api, 10), replicate(api, 100)
    live = _live(gateway, supervisor, tmp_path)
    try:
        started = live.boot(small, f"http://127.0.0.1:{backends['a']}")
        booted = _prober(live, "a").until_correct(
            probes_for(small), since=started, deadline_s=DEADLINE_S
        )
        assert booted.all_correct, booted.last_problem
        assert booted.slowest_s is not None and booted.slowest_s > 0
        mech = live.mechanism
        if mech.kind == "admin-api":  # the admin endpoint is never on the API's port
            got = ask(("127.0.0.1", live.port), Probe("admin", mech.method, mech.path))
            assert not isinstance(got, str) and got[0] == 404, got
        idle = live.rss_bytes()
        assert idle > 1_000_000
        size_before = live.config_bytes()

        applied = live.change(big, f"http://127.0.0.1:{backends['b']}")
        assert applied.mechanism == get_renderer(gateway).live_change
        assert applied.written_at <= applied.triggered_at <= applied.returned_at
        new = probes_for(big, added_routes(small, big))
        assert len(new) == 90
        after = _prober(live, "b").until_correct(
            probes_for(big), since=applied.triggered_at, deadline_s=DEADLINE_S, alive=live.alive
        )
        assert after.all_correct, list(after.last_problem.items())[:5]
        assert live.alive(), f"{gateway} stopped after the change"
        assert live.config_bytes() > size_before
        assert live.rss_bytes() > 1_000_000
    finally:
        live.stop()


@pytest.mark.parametrize("gateway", LOCAL)
def test_the_configuration_after_a_change_routes_exactly(
    gateway: str,
    supervisor: Supervisor,
    backends: dict[str, int],
    tmp_path: Path,
    replay_api: Callable[[str], Api],
    jvm_quick: None,
) -> None:
    """Boot on the auction example, change to the adversarial description: the whole replay
    matrix of the new description goes through as it does for a fresh boot."""
    target_api = replay_api("adversarial")
    try:
        get_renderer(gateway).render_live(
            target_api, RenderTarget(workdir="/tmp/gatebench-probe", admin_port=9)
        )
    except UnsupportedFeature as exc:  # the routes it refuses are left out, as a run does
        target_api = replace(target_api, operations=expressible(target_api, exc.problems))
    live = _live(gateway, supervisor, tmp_path)
    try:
        live.boot(replay_api("auction"), f"http://127.0.0.1:{backends['a']}")
        applied = live.change(target_api, f"http://127.0.0.1:{backends['b']}")
        after = _prober(live, "b").until_correct(
            probes_for(target_api), since=applied.triggered_at, deadline_s=DEADLINE_S
        )
        assert after.all_correct, list(after.last_problem.items())[:5]
        forwarding = Forwarding.of(live.renderer)
        matrix = replay_matrix(target_api, forwarding=forwarding)
        held = HOLDS_REFUSALS.get(gateway)
        failures = replay(
            matrix,
            gateway_port=live.port,
            backend_port=backends["b"],
            forwarding=forwarding,
            via=Client("127.0.0.1", live.port, timeout=held or 60.0),
        )
        if held is not None:
            failures = refusals_held(
                failures,
                matrix,
                lambda: Client("127.0.0.1", live.port, timeout=10.0),
                forwarding.refusal_status,
            )
        assert not failures, "\n".join(failures[:40])
    finally:
        live.stop()


@pytest.fixture(scope="module")
def pools(supervisor: Supervisor, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Two pools of two echo replicas each, every replica naming its pool (``a``, ``b``) and
    its number in every answer."""
    out: dict[str, list[str]] = {}
    for name in ("a", "b"):
        out[name] = [
            start_backend_process(
                supervisor,
                "echo",
                tmp_path_factory.mktemp(f"pool-{name}{n}"),
                replica=n,
                extra_args=["-instance", name],
            ).url
            for n in (1, 2)
        ]
    return out


@pytest.fixture(scope="module")
def tls_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = write_tls_folder(make_run_certificates("ecdsa-p256"), tmp_path_factory.mktemp("tls"))
    yield folder
    remove_tls_folder(folder)


def _replicas_seen(live: LiveGateway, probe: Probe, requests: int) -> set[str]:
    """The replica numbers that answered ``requests`` probes, each on a new connection."""
    seen = set()
    for _ in range(requests):
        got = ask(("127.0.0.1", live.port), probe, ca_file=live.ca_file)
        assert not isinstance(got, str), got
        assert got[0] == 200, got
        seen.add(got[1].get("x-gatebench-replica", "none"))
    return seen


@pytest.mark.parametrize("gateway", LOCAL)
def test_a_change_keeps_tls_and_the_pool(
    gateway: str,
    supervisor: Supervisor,
    pools: dict[str, list[str]],
    tls_folder: Path,
    tmp_path: Path,
    replay_api: Callable[[str], Api],
    jvm_quick: None,
) -> None:
    """Booted as deployed (the run's TLS with HTTP/2 offered, a pool of two replicas; what the
    gateway renders of it), the gateway takes 100 routes and a new pool through its own
    mechanism and stays as deployed: every route answers correctly over TLS from the new
    pool, both of its replicas serve, and plain HTTP is still refused."""
    renderer = get_renderer(gateway)
    tls = "tls" in renderer.supported_deployment
    pool = "pool.round_robin" in renderer.supported_deployment
    if not (tls or pool):
        pytest.skip(f"{gateway} renders neither TLS nor a pool")
    api = replay_api("auction")
    small, big = replicate(api, 10), replicate(api, 100)
    live = LiveGateway(
        gateway,
        supervisor,
        tmp_path / "gw",
        cpu=stated_cpu_policy(1),
        tls=GatewayTls(str(tls_folder), http2=True) if tls else None,
    )
    reason = live.renderer.available_here()
    if reason is not None:
        pytest.skip(f"{gateway} is not installed here: {reason}")

    def upstream(name: str) -> tuple[str, list[str]]:
        urls = pools[name]
        return urls[0], urls if pool else []

    def plain_refused() -> None:
        got = ask(("127.0.0.1", live.port), probes_for(small)[0])
        assert isinstance(got, str) or not 200 <= got[0] < 300, got

    try:
        started = live.boot(small, *upstream("a"))
        assert live.target is not None and (live.target.tls is not None) == tls
        booted = _prober(live, "a").until_correct(
            probes_for(small), since=started, deadline_s=DEADLINE_S
        )
        assert booted.all_correct, booted.last_problem
        if tls:
            plain_refused()
        applied = live.change(big, *upstream("b"))
        assert live.target.tls == live.tls and live.target.pooled == pool
        after = _prober(live, "b").until_correct(
            probes_for(big), since=applied.triggered_at, deadline_s=DEADLINE_S, alive=live.alive
        )
        assert after.all_correct, list(after.last_problem.items())[:5]
        if tls:
            plain_refused()
        if pool:
            assert _replicas_seen(live, probes_for(big)[-1], 12) == {"1", "2"}
    finally:
        live.stop()


class _RestartedNginx(NginxRenderer):
    live_change = RESTART


class _RefusedOnChange(NginxRenderer):
    """nginx whose second configuration its checker refuses."""

    def render_live(self, api: Api, target: RenderTarget) -> dict[str, str]:
        files = self.render(api, target)
        if len(api.operations) > 10:
            files["nginx.conf"] += "this is not a directive;\n"
        return files


class _AdminPortNeverOpens(NginxRenderer):
    """nginx taking changes on an admin port it never opens (as a Spring Boot gateway's
    management port is not open yet when its API port first answers)."""

    live_change = LiveChange("admin-api", "POST /change on the admin port", path="/change")


def test_a_gateway_taking_changes_on_an_admin_port_is_ready_once_that_port_answers(
    supervisor: Supervisor,
    backends: dict[str, int],
    tmp_path: Path,
    replay_api: Callable[[str], Api],
) -> None:
    """The boot waits for the port changes go to, not only the API's: a change sent right after
    the boot reached Zuul's management port before it was open (refused)."""
    live = _live(_AdminPortNeverOpens(), supervisor, tmp_path, boot_timeout=2.0)
    with pytest.raises(RunError, match=r"did not answer on 127\.0\.0\.1:\d+ within 2s"):
        live.boot(replay_api("auction"), f"http://127.0.0.1:{backends['a']}")
    assert live.proc is not None and not live.proc.alive(), "the gateway outlived its boot"


def test_a_gateway_without_a_live_mechanism_is_restarted(
    supervisor: Supervisor,
    backends: dict[str, int],
    tmp_path: Path,
    replay_api: Callable[[str], Api],
) -> None:
    api = replay_api("auction")
    live = _live(_RestartedNginx(), supervisor, tmp_path)
    try:
        live.boot(replicate(api, 10), f"http://127.0.0.1:{backends['a']}")
        first = live.proc
        applied = live.change(replicate(api, 100), f"http://127.0.0.1:{backends['b']}")
        assert applied.mechanism.kind == "restart"
        assert live.proc is not first and first is not None and not first.alive()
        # The new process answered before change() returned: the restart cost is measured.
        assert applied.returned_at > applied.triggered_at
        after = _prober(live, "b").until_correct(
            probes_for(replicate(api, 100)), since=applied.triggered_at, deadline_s=DEADLINE_S
        )
        assert after.all_correct
    finally:
        live.stop()


def test_a_refused_configuration_is_never_applied(
    supervisor: Supervisor,
    backends: dict[str, int],
    tmp_path: Path,
    replay_api: Callable[[str], Api],
) -> None:
    api = replay_api("auction")
    small = replicate(api, 10)
    live = _live(_RefusedOnChange(), supervisor, tmp_path)
    try:
        live.boot(small, f"http://127.0.0.1:{backends['a']}")
        before = (tmp_path / "gw" / "nginx.conf").read_text()
        with pytest.raises(ConfigRejected, match="this"):
            live.change(replicate(api, 100), f"http://127.0.0.1:{backends['b']}")
        assert (tmp_path / "gw" / "nginx.conf").read_text() == before
        still = _prober(live, "a").until_correct(probes_for(small), since=0.0, deadline_s=1e9)
        assert still.all_correct and live.alive()
        assert not list((tmp_path).glob(".gw-check*")), "the staging folder was left behind"
    finally:
        live.stop()


def test_the_prober_reports_wrong_answers_and_gives_up_at_its_deadline(
    backends: dict[str, int], replay_api: Callable[[str], Api]
) -> None:
    import time

    probes = probes_for(replicate(replay_api("auction"), 3))
    # Straight to backend a while expecting b: every answer is wrong, for the whole deadline.
    prober = RouteProber("127.0.0.1", backends["a"], instance="b", interval_s=0.05)
    started = time.monotonic()
    out = prober.until_correct(probes, since=started, deadline_s=0.5)
    assert not out.all_correct and out.slowest_s is None
    assert set(out.last_problem.values()) == {"answered by backend 'a', not 'b'"}
    assert 0.45 <= time.monotonic() - started < 3.0
    # a round every 50 ms at most, so at most 11 in 0.5 s (12 at the edges); every one of them
    # unless the machine made a round overrun its 50 ms (the prober counts those as late)
    assert out.rounds <= 12
    assert out.late_rounds > 0 or out.rounds >= 9, (out.rounds, out.late_rounds)
    right = RouteProber("127.0.0.1", backends["a"], instance="a").until_correct(
        probes, since=time.monotonic(), deadline_s=5
    )
    assert right.all_correct and right.rounds == 1
