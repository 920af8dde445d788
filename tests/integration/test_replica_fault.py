"""A replica killed mid-phase, for real: the Go backend's replica process gets SIGKILL while
Gatling loads a gateway in front of the pool; the loopback observer sees the gateway's
connection attempts to the dead port; the replica is started again when the phase ends; the
impact (gatebench.core.fault) says what the kill did. The phase after it is untouched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _engine_helpers import ROOT

from gatebench.core.fault import fault_impact, requests_by_phase
from gatebench.core.plan import build_plan
from gatebench.core.renderers import RenderTarget, get_renderer
from gatebench.core.simlog import read_simlog
from gatebench.core.spec import read_spec
from gatebench.core.workload import compile_load
from gatebench.local._wire import open_observer
from gatebench.local.backends import backend_stats, start_plan_backends
from gatebench.local.backends._fault import Kill, ReplicaFault
from gatebench.local.engines.gatling import GatlingEngine
from gatebench.local.procs import Supervisor, free_port
from gatebench.local.provisioners import boot_gateway
from gatebench.run.ports import EngineEvent, PhaseResult


class Hooks:
    def __init__(self, fault: ReplicaFault) -> None:
        self.fault = fault
        self.results: dict[int, PhaseResult] = {}
        self.started_ms: dict[int, float] = {}

    def on_event(self, event: EngineEvent) -> None:
        if event.kind == "start":
            self.started_ms[event.phase] = event.at_ms
            self.fault.on_start(event.phase, event.at_ms)
        elif event.kind == "end":
            self.fault.on_end(event.phase)

    def on_phase(self, result: PhaseResult) -> None:
        self.results[result.phase] = result

    def tick(self) -> None:
        pass


@pytest.mark.parametrize("gateway", ["nginx", "haproxy"])
def test_a_replica_killed_mid_phase(gateway: str, tmp_path: Path) -> None:
    result = read_spec(str(ROOT / "examples/auction/openapi.yaml"))
    assert result.api is not None
    section: dict[str, Any] = dict(result.benchmark)
    section.update(
        backend={"builtin": "auction", "replicas": 3},
        baseline=False,
        warmup=False,
        repetitions=1,
        workloads=[
            {
                "name": "get",
                "operation": "getAuction",
                "params": {"auctionId": {"range": [1, 9]}},
                "injection": {"concurrent": 4, "duration": "4s"},
            },
            {
                "name": "after",
                "operation": "getAuction",
                "params": {"auctionId": 1},
                "injection": {"sequential": 60},
            },
        ],
        fault={"replica": 2, "workload": "get", "at": "1500ms"},
    )
    plan = build_plan(section, result.api)
    assert plan.fault is not None
    with Supervisor() as sup:
        backend = start_plan_backends(sup, plan, result.api, tmp_path)
        target = RenderTarget(
            workdir=str(tmp_path / gateway),
            listen_port=free_port(),
            backend_url=backend.origins[0],
            replicas=backend.origins,
        )
        boot_gateway(get_renderer(gateway), result.api, target, sup)
        compiled = compile_load(
            plan,
            result.api,
            {gateway: f"http://127.0.0.1:{target.listen_port}"},
            reset_urls=backend.reset_urls,
            seed=1,
        )
        dead_port = backend.replicas[1].port
        observer = open_observer(attempt_ports=[dead_port])
        kills: list[Kill] = []
        fault = ReplicaFault(
            sup, backend, plan.fault, compiled.schedule.phases, tmp_path, on_kill=kills.append
        )
        hooks = Hooks(fault)
        try:
            run = GatlingEngine().run(
                compiled.document,
                tmp_path / "engine",
                hooks,
                supervisor=sup,
                env={"AUCTION_TOKEN": "fault-token"},
            )
        finally:
            fault.close()
            observer.close()
        assert not run.crashed, run.reason
        # the replica is back and serving
        assert fault.replica.process.alive()
        assert backend_stats(fault.replica.port)["requests"] >= 0
        by_phase = requests_by_phase(read_simlog(run.raw_log))
    (kill,) = kills
    phases = {p.index: p for p in compiled.schedule.phases}
    faulted = phases[kill.phase]
    assert faulted.workload == "get"
    assert kill.at and kill.restarted_at and not kill.error
    requests = by_phase[faulted.id]
    # never before its moment (1500 ms after the phase's start), and inside the phase: the
    # machine may only make a timer late, and the phase goes on for seconds after it
    assert kill.at >= hooks.started_ms[kill.phase] / 1000.0 + 1.5 - 0.001
    assert kill.at < max(r.end for r in requests)
    impact = fault_impact(
        requests,
        kill.at,
        max(r.end for r in requests),
        observer.attempts_to(dead_port, kill.at - 0.5),
    )
    assert impact.requests_after > 0
    assert impact.attempts is not None
    # within the phase (every pooled gateway sends a refused connection to another replica)
    assert impact.stopped_after_s is not None and impact.stopped_after_s < 4.0
    # the next phase is whole: every request served
    after = next(p for p in compiled.schedule.phases if p.workload == "after")
    sample = hooks.results[after.index].sample
    assert (sample.requests, sample.ok) == (60, 60)
    print(gateway, impact.to_dict())


class WatchHooks:
    """What the load stage does with the watch: phase events in, each phase annotated."""

    def __init__(self, watch: Any, phases: dict[int, Any]) -> None:
        self.watch = watch
        self.phases = phases
        self.measurements: list[Any] = []

    def on_event(self, event: EngineEvent) -> None:
        self.watch.on_event(event.kind, event.phase, event.at_ms)

    def on_phase(self, result: PhaseResult) -> None:
        from gatebench.core.measure import measurement_from

        phase = self.phases[result.phase]
        m = measurement_from("run", phase, result)
        self.measurements.append(self.watch.annotate(m, phase, result))

    def tick(self) -> None:
        pass


def test_tls_handshakes_and_a_fault_on_each_measurement(tmp_path: Path) -> None:
    """nginx with the run's TLS and HTTP/2 in front of three replicas, Gatling over HTTP/2
    trusting the run's CA; replica 3 dies in the middle of the measured phase: the
    measurement says how many handshakes were new and resumed and what the kill did."""
    from gatebench.core.tls import remove_tls_folder
    from gatebench.local._deployed import DeploymentWatch, prepare_tls

    result = read_spec(str(ROOT / "examples/auction/openapi.yaml"))
    assert result.api is not None
    section: dict[str, Any] = dict(result.benchmark)
    section.update(
        backend={"builtin": "auction", "replicas": 3},
        baseline=True,
        warmup=False,
        repetitions=1,
        tls={"key": "ecdsa-p256", "http2": True},
        workloads=[
            {
                "name": "get",
                "operation": "getAuction",
                "params": {"auctionId": {"range": [1, 9]}},
                "injection": {"concurrent": 4, "duration": "3s"},
            }
        ],
        fault={"replica": 3, "at": "50%"},
    )
    plan = build_plan(section, result.api)
    tls = prepare_tls(plan)
    assert tls is not None
    try:
        with Supervisor() as sup:
            backend = start_plan_backends(sup, plan, result.api, tmp_path, tls=tls.backend)
            port = free_port()
            target = RenderTarget(
                workdir=str(tmp_path / "nginx"),
                listen_port=port,
                backend_url=backend.origins[0],
                replicas=backend.origins,
                tls=tls.gateway,
            )
            boot_gateway(get_renderer("nginx"), result.api, target, sup)
            compiled = compile_load(
                plan,
                result.api,
                {"nginx": f"https://127.0.0.1:{port}", "baseline": backend.url},
                reset_urls=backend.reset_urls,
                seed=2,
                trust_store=str(tls.trust_store),
            )
            assert backend.url.startswith("https://")
            baseline_port = int(backend.url.rsplit(":", 1)[1])
            engine_dir = tmp_path / "engine"
            watch = DeploymentWatch(
                sup,
                plan,
                backend,
                compiled.schedule.phases,
                {"nginx": port, "baseline": baseline_port},
                tmp_path,
                engine_dir,
            )
            watch.start()
            hooks = WatchHooks(watch, {p.index: p for p in compiled.schedule.phases})
            try:
                run = GatlingEngine().run(
                    compiled.document,
                    engine_dir,
                    hooks,
                    supervisor=sup,
                    env={"AUCTION_TOKEN": "fault-token"},
                )
            finally:
                watch.close()
            assert not run.crashed, run.reason
    finally:
        remove_tls_folder(tls.folder)
    assert not watch.notes
    by_target = {m.target: m for m in hooks.measurements}
    gw, base = by_target["nginx"], by_target["baseline"]
    # 4 looping users keep their connections: a handshake or so each, never one per request
    for m in (gw, base):
        assert m.tls_new is not None and m.tls_resumed is not None
        assert 1 <= m.tls_new + m.tls_resumed <= 8 < m.requests
    assert gw.fault is not None and base.fault is None
    assert gw.fault["replica"] == 3
    assert gw.fault["requests_after"] > 0
    assert gw.fault["attempts"] is not None
    print(gw.tls_new, gw.tls_resumed, gw.fault)
