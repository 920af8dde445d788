"""Pinned cores: the plan's ``cpus:`` (located errors), the layout it gives on a machine, and a
process started on a role's cores really running there."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gatebench.core.ir import Api
from gatebench.core.pinning import CpuLayout, capacity_layout, resolve_layout
from gatebench.core.plan import DEFAULT_CPU_MODE, Cpus, build_plan
from gatebench.local.procs import Supervisor
from paths import EXAMPLES
from plans import auction_api, plan_errors, section


@pytest.fixture(scope="module")
def auction() -> Api:
    return auction_api()


def test_cpus_default_and_the_two_words(auction: Api) -> None:
    assert build_plan(section(), auction).cpus == Cpus(mode=DEFAULT_CPU_MODE)
    assert build_plan(section(cpus="unpinned"), auction).cpus == Cpus(mode="unpinned", given=True)
    assert build_plan(section(cpus="pinned"), auction).cpus == Cpus(mode="pinned", given=True)


def test_cpus_explicit_lists(auction: Api) -> None:
    plan = build_plan(section(cpus={"gateway": [1], "engine": [0], "backend": [0, 0]}), auction)
    assert plan.cpus == Cpus(mode="explicit", gateway=(1,), engine=(0,), backend=(0,), given=True)
    assert plan.to_dict()["cpus"] == {
        "mode": "explicit",
        "gateway": (1,),
        "engine": (0,),
        "backend": (0,),
        "given": True,
    }


def test_cpus_errors_are_located(auction: Api) -> None:
    assert plan_errors(auction, section(cpus="pined")) == [
        (
            "/x-gatebench/cpus",
            "expected 'pinned', 'unpinned' or a mapping of core lists such as "
            "{gateway: [1], engine: [0], backend: [0]}, got 'pined'",
        )
    ]
    assert plan_errors(auction, section(cpus={"gateway": [-1], "engine": []})) == [
        ("/x-gatebench/cpus/gateway/0", "expected a whole number from 0 to 4,095, got -1"),
        (
            "/x-gatebench/cpus/engine",
            "expected a non-empty list of core numbers such as [0], got []",
        ),
    ]
    assert plan_errors(auction, section(cpus={"gatway": [1]})) == [
        ("/x-gatebench/cpus/gatway", "unknown key 'gatway' in cpus; did you mean 'gateway'?"),
        ("/x-gatebench/cpus", "expected at least one of: gateway, engine, backend"),
    ]


def test_cpus_gateway_sharing_a_core_is_a_warning(auction: Api) -> None:
    plan = build_plan(section(cpus={"gateway": [0], "engine": [0]}), auction)
    assert plan.cpus.gateway == (0,)


def test_pinned_layout_on_two_cores() -> None:
    layout = resolve_layout(Cpus(mode="pinned"), [1, 0])
    assert layout.cores == {"gateway": (1,), "engine": (0,), "backend": (0,)}
    assert layout.describe() == "pinned: gateway on cpu 1; engine, backend on cpu 0"
    assert layout.to_dict() == {
        "setting": "pinned",
        "cores": {"gateway": [1], "engine": [0], "backend": [0]},
        "note": "",
    }


def test_pinned_layout_on_four_cores_gives_the_gateway_half() -> None:
    layout = resolve_layout(Cpus(mode="pinned"), [0, 1, 2, 3])
    assert layout.cores == {"gateway": (2, 3), "engine": (0, 1), "backend": (0, 1)}


def test_pinning_on_one_core_runs_unpinned_and_says_why() -> None:
    layout = resolve_layout(Cpus(mode="pinned"), [0])
    assert not layout.pinned
    assert layout.note == (
        "pinning needs at least 2 cores and this machine lets gatebench use 1 (cpu 0): ran unpinned"
    )
    assert layout.describe().startswith("unpinned (pinning needs at least 2 cores")


def test_explicit_layout_with_a_core_not_here_runs_unpinned() -> None:
    layout = resolve_layout(Cpus(mode="explicit", gateway=(5,), engine=(0,)), [0, 1])
    assert layout == CpuLayout(
        "explicit",
        note="cpu 5 is not available here (gatebench may use cpu 0,1): ran unpinned",
    )
    ok = resolve_layout(Cpus(mode="explicit", gateway=(1,)), [0, 1])
    assert ok.cores == {"gateway": (1,)}
    assert ok.describe() == "pinned: gateway on cpu 1"


def test_a_capacity_search_gives_the_generator_a_core_of_its_own() -> None:
    two = capacity_layout(Cpus(), [1, 0])
    assert two.cores == {"engine": (0,), "gateway": (1,), "backend": (1,)}
    assert two.describe() == "split: gateway, backend on cpu 1; engine on cpu 0"
    assert two.shared_with_engine(("gateway", "backend")) is None
    assert two.shared_with_engine(("backend",)) is None  # the baseline's target
    eight = capacity_layout(Cpus(), range(8))
    assert eight.cores == {"engine": (0, 1), "backend": (2, 3), "gateway": (4, 5, 6, 7)}
    three = capacity_layout(Cpus(), [0, 1, 2])
    assert three.cores == {"engine": (0,), "backend": (1,), "gateway": (2,)}
    one = capacity_layout(Cpus(), [3])
    assert not one.pinned and "shares it with the target" in one.note
    assert one.shared_with_engine(("backend",)) == (
        "the load generator was not pinned (unpinned (splitting needs at least 2 cores and this "
        "machine lets gatebench use 1: the load generator shares it with the target))"
    )


def test_a_capacity_search_keeps_the_plans_own_cpus_and_says_what_shares() -> None:
    pinned = capacity_layout(Cpus(mode="pinned", given=True), [0, 1])
    assert pinned.cores["engine"] == pinned.cores["backend"] == (0,)
    assert pinned.shared_with_engine(("gateway", "backend")) == (
        "the backend shared a core with the load generator (pinned: gateway on cpu 1; engine, "
        "backend on cpu 0)"
    )
    unpinned = capacity_layout(Cpus(mode="unpinned", given=True), [0, 1])
    assert not unpinned.pinned and unpinned.shared_with_engine(("gateway",)) is not None


def test_unpinned_layout() -> None:
    layout = resolve_layout(Cpus(mode="unpinned"), [0, 1])
    assert layout.cores == {} and layout.describe() == "unpinned"


def test_a_process_started_with_a_role_runs_on_its_cores(tmp_path: Path) -> None:
    """The affinity is set in the child before exec: what the program reports of itself (and
    any process it starts) is the role's core set; a process without a role is not pinned."""
    mine = sorted(os.sched_getaffinity(0))
    target = {mine[-1]}
    probe = "import os; print(sorted(os.sched_getaffinity(0)))"
    with Supervisor() as supervisor:
        supervisor.pin({"gateway": sorted(target), "engine": []})
        pinned = supervisor.start(
            "probe", [sys.executable, "-c", probe], log_path=tmp_path / "a.log", role="gateway"
        )
        free = supervisor.start(
            "free", [sys.executable, "-c", probe], log_path=tmp_path / "b.log", role="engine"
        )
        assert pinned.wait() == 0 and free.wait() == 0
    assert (tmp_path / "a.log").read_text().strip() == str(sorted(target))
    assert (tmp_path / "b.log").read_text().strip() == str(mine)


def test_the_run_records_its_layout_and_says_why_it_ran_unpinned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The backend stage's pinning (``LocalMachine.pin``): on a machine that gives gatebench one core,
    a pinned plan runs unpinned (the supervisor pins nothing) and the run's notes say why; on
    two cores the supervisor gets the layout, and the run's environment records it."""
    from dataclasses import replace

    from gatebench.core.fairness import local_cpu_policy
    from gatebench.core.model import RunRecord
    from gatebench.core.plan import load_plan
    from gatebench.core.spec import read_spec
    from gatebench.local.machine import LocalMachine
    from gatebench.run import RunOutcome
    from gatebench.run.stages.backend import layout_environment

    result = read_spec(str(EXAMPLES / "auction" / "openapi.yaml"))
    assert result.api is not None
    plan = replace(load_plan(result), cpus=Cpus(mode="pinned"))
    outcome = RunOutcome(RunRecord("r", "spec", "0" * 64), [], Path("."))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    supervisor = Supervisor()
    machine = LocalMachine(supervisor)
    layout = machine.pin(plan, outcome.notes.append)
    cpu = local_cpu_policy(layout, sorted(os.sched_getaffinity(0)))
    assert supervisor.affinity == {}
    # The share is still one core each, configured but not held.
    assert (cpu.cores, cpu.pinned, cpu.enforced) == (1, (), False)
    assert outcome.notes == [
        "cpus: pinning needs at least 2 cores and this machine lets gatebench use 1 (cpu 0): "
        "ran unpinned"
    ]
    assert layout_environment(layout)["cpus"].startswith("unpinned (pinning needs")

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    outcome.notes.clear()
    layout = machine.pin(plan, outcome.notes.append)
    cpu = local_cpu_policy(layout, sorted(os.sched_getaffinity(0)))
    assert (cpu.cores, cpu.pinned, cpu.enforced) == (1, (1,), True)
    assert supervisor.affinity == {
        "gateway": frozenset({1}),
        "engine": frozenset({0}),
        "backend": frozenset({0}),
    }
    assert outcome.notes == []
    assert layout_environment(layout) == {
        "cpus": "pinned: gateway on cpu 1; engine, backend on cpu 0",
        "cpu_affinity": {
            "setting": "pinned",
            "cores": {"gateway": [1], "engine": [0], "backend": [0]},
            "note": "",
        },
    }


def test_signals_held_deliver_after_the_block() -> None:
    """A SIGTERM inside the block is delivered once the block is done, to the handler that
    was in place (the runner writes a measurement to its file and the store in one block)."""
    import os
    import signal

    from gatebench.run._signals import signals_held

    seen: list[str] = []

    class Stop(Exception):
        pass

    def handler(signum: int, frame: object) -> None:
        raise Stop

    old = signal.signal(signal.SIGTERM, handler)
    try:

        def write_both() -> None:
            with signals_held():
                os.kill(os.getpid(), signal.SIGTERM)
                seen.append("file")
                seen.append("store")

        with pytest.raises(Stop):
            write_both()
        assert seen == ["file", "store"]
    finally:
        signal.signal(signal.SIGTERM, old)


def test_a_run_without_a_gateway_keeps_every_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pinning gives the gateway its share: a baseline-only run under the default pins
    nothing, and says so."""
    from dataclasses import replace

    from gatebench.core.model import RunRecord
    from gatebench.core.plan import load_plan
    from gatebench.core.spec import read_spec
    from gatebench.local.machine import LocalMachine
    from gatebench.run import RunOutcome

    result = read_spec(str(EXAMPLES / "auction" / "openapi.yaml"))
    assert result.api is not None
    plan = replace(load_plan(result), gateways=(), cpus=Cpus())
    assert plan.cpus.mode == "pinned"
    outcome = RunOutcome(RunRecord("r", "spec", "0" * 64), [], Path("."))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    supervisor = Supervisor()
    layout = LocalMachine(supervisor).pin(plan, outcome.notes.append)
    assert supervisor.affinity == {}
    assert layout.describe() == "unpinned (no gateway to give a share of the cores: ran unpinned)"
