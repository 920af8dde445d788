"""The constant-rate load's moments (gatebench.local.engines.constant_rate): a callback runs once its
offset from the first measured phase's start has passed, in a thread of its own, and what it
raises is kept with the run, never lost; a moment the load never reached is an error."""

from __future__ import annotations

import threading
import time

import pytest

from gatebench.core.errors import RunError
from gatebench.core.routescale import LOAD_TARGET, WARMUP_WORKLOAD, rate_plan
from gatebench.core.workload import answers_checked, body_signed
from gatebench.local.engines.constant_rate import _Hooks
from gatebench.run.ports import EngineEvent


def test_callbacks_fire_after_their_offset_from_the_first_measured_phase() -> None:
    fired: list[str] = []
    ticks: list[int] = []
    main = threading.current_thread()
    threads: list[threading.Thread] = []

    def early() -> None:
        threads.append(threading.current_thread())
        fired.append("early")

    def failing() -> None:
        raise ValueError("the change failed")

    hooks = _Hooks(1, [(0.2, failing), (0.0, early)], lambda: ticks.append(1))
    hooks.tick()
    hooks.on_event(EngineEvent("start", 0))  # the warm-up: not the first measured phase
    hooks.tick()
    assert fired == [] and hooks.started is None
    hooks.on_event(EngineEvent("start", 1))
    hooks.tick()
    time.sleep(0.05)
    assert fired == ["early"] and threads[0] is not main
    hooks.tick()
    assert len(hooks.fired) == 1  # 0.2 s have not passed
    time.sleep(0.25)
    hooks.tick()
    hooks.join()
    assert len(hooks.fired) == 2 and len(ticks) == 5
    assert hooks.fired[0][1] is None
    assert isinstance(hooks.fired[1][1], ValueError)
    assert hooks.fired[0][0] <= hooks.fired[1][0]


def test_a_moment_the_load_never_reached_is_an_error() -> None:
    hooks = _Hooks(0, [(60.0, lambda: None)], None)
    hooks.on_event(EngineEvent("start", 0))
    hooks.tick()
    with pytest.raises(RunError, match="the load ended before 1 planned moment"):
        hooks.join()


def test_a_moment_fires_at_its_offset_not_at_the_engines_next_poll() -> None:
    # the engine polls every 200 ms: a change fired from the poll came up to that late, and
    # its window ran past the load's end (the end then counted as the load generator's fault)
    called: list[float] = []
    started = time.monotonic() + 0.1  # known ahead, as the load generator's schedule is
    hooks = _Hooks(0, [(0.15, lambda: called.append(time.monotonic()))], None, started=started)
    hooks.tick()  # the last poll before the moment; the next one would come too late
    time.sleep(0.5)
    hooks.join()
    assert len(called) == 1 and len(hooks.fired) == 1
    assert 0.15 <= called[0] - started < 0.2


def test_a_moment_after_the_loads_end_is_never_called() -> None:
    called: list[int] = []
    hooks = _Hooks(0, [(0.3, lambda: called.append(1))], None, started=time.monotonic())
    hooks.arm()
    with pytest.raises(RunError, match="the load ended before 1 planned moment"):
        hooks.join()  # the load ended after 0.3 s: the change is not applied after it
    time.sleep(0.4)
    assert called == [] and hooks.fired == []


def test_the_load_plan_warms_up_at_its_own_rate_then_loads_each_route_in_turn() -> None:
    plan = rate_plan({"start": "a", "end": "b"}, rate=150, duration_s=5, warmup_s=2)
    assert [(w.name, w.operation_id) for w in plan.workloads] == [
        (WARMUP_WORKLOAD, "a"),
        ("start", "a"),
        ("end", "b"),
    ]
    assert [(w.injection.kind, w.injection.rate, w.injection.duration) for w in plan.workloads] == [
        ("constant_rate", 150.0, 2.0),
        ("constant_rate", 150.0, 5.0),
        ("constant_rate", 150.0, 5.0),
    ]
    assert all(w.expect == tuple(range(200, 300)) for w in plan.workloads)
    assert not plan.warmup.enabled and not plan.baseline and plan.repetitions == 1
    # in front of the echo backends, which sign every answer and copy it into their bodies
    assert body_signed(plan) and answers_checked(plan, LOAD_TARGET)
    assert [w.name for w in rate_plan({"x": "a"}, rate=1, duration_s=1, warmup_s=0).workloads] == [
        "x"
    ]
