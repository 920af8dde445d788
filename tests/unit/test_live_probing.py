"""One gateway's start and change as the live runs measure them (gatebench.kinds._live._gateway),
against a stand-in gateway and load: the deadline bounds every probe and says when no probe ran,
and a change's window is read against the load's own end."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.renderers import get_renderer
from gatebench.core.routescale import Probe, replicate
from gatebench.core.scaleplan import LoadSettings
from gatebench.kinds._live import _gateway
from gatebench.kinds._live._gateway import (
    Booted,
    ChangeApplied,
    RateRun,
    RouteProber,
    change_under_load,
    start_grown,
)
from gatebench.kinds._live.metrics import Arrival
from plans import auction_api


class _Gateway:
    """What the measurements ask of a gateway, nothing served: ``started_ago`` seconds between
    the process start and the first probe; a change triggered ``late_s`` after it is asked."""

    host, port, ca_file, lead_s, pids = "127.0.0.1", 9, None, 0.0, ()

    def __init__(self, started_ago: float = 0.0, late_s: float = 0.0) -> None:
        self.renderer = get_renderer("nginx")
        self.mechanism = self.renderer.live_change
        self.started_ago, self.late_s = started_ago, late_s

    def start(self) -> float:
        return time.monotonic() - self.started_ago

    def confirm_start(self, started: float) -> float:
        return started

    def alive(self) -> bool:
        return True

    def rss_bytes(self) -> int | None:
        return 1 << 20

    def config_bytes(self) -> int:
        return 1

    def prepare(
        self, api: Any, backend_url: str | None = None, replicas: Sequence[str] = ()
    ) -> Any:
        return api

    def apply(self, prepared: Any) -> ChangeApplied:
        now = time.monotonic()
        return ChangeApplied(self.mechanism, now, now + self.late_s, now + self.late_s)

    def confirm(self, applied: ChangeApplied) -> ChangeApplied:
        return applied

    def stop(self) -> None:
        return None


def test_a_start_whose_deadline_passed_before_any_probe_says_so() -> None:
    api = replicate(auction_api(), 5)
    settings = LoadSettings(deadline_s=0.001)
    booted = start_grown(_Gateway(started_ago=0.01), api, instance="a", settings=settings)
    assert booted.problem == (
        "no correct answer: 3 routes not probed within the 0.001 s deadline "
        "(it counts from the process start)"
    )


class _SlowProber(RouteProber):
    """Each probe takes ``took_s`` of a clock of its own, then answers correctly."""

    def __init__(self, took_s: float) -> None:
        self.now = 0.0
        super().__init__("127.0.0.1", 9, interval_s=0.05, clock=lambda: self.now)
        self.took_s = took_s
        self.timeouts: list[float] = []

    def problem(self, probe: Probe, timeout: float = _gateway.PROBE_TIMEOUT_S) -> str | None:
        self.timeouts.append(timeout)
        self.now += self.took_s
        return None


def test_an_answer_after_the_deadline_does_not_count_and_no_probe_waits_past_it() -> None:
    probe = Probe("newRoute", "GET", "/r1/x")
    prober = _SlowProber(took_s=1.04)  # a round started in time, answered 1.04 s later
    out = prober.until_correct([probe], since=0.0, deadline_s=0.5)
    assert out.first_correct == {"newRoute": None}
    assert out.last_problem == {
        "newRoute": "answered correctly only after the 0.5 s deadline (1.04 s)"
    }
    assert prober.timeouts == [0.5]  # bounded by the time left, not PROBE_TIMEOUT_S
    fast = _SlowProber(took_s=0.01)
    assert fast.until_correct([probe], since=0.0, deadline_s=0.5).first_correct == {
        "newRoute": 0.01
    }


class _Load:
    """A constant-rate load that sent every request on schedule (100 a second, ``duration_s``
    of measured load) and called the change right at its offset."""

    name, measured_from = "stand-in", "intended start"

    def check(self) -> None:
        return None

    def run(
        self,
        api: Any,
        routes: Mapping[str, str],
        base_url: str,
        *,
        rate: float,
        duration_s: float,
        warmup_s: float,
        workdir: Path,
        at: Sequence[tuple[float, Callable[[], None]]] = (),
        tick: Callable[[], None] | None = None,
    ) -> RateRun:
        ((offset, call),) = at
        fired_ms = time.time() * 1000.0
        call()
        start_ms = fired_ms - offset * 1000.0
        step = 1000.0 / rate
        arrivals = [
            Arrival(start_ms + i * step, 1.0, True, "end") for i in range(int(rate * duration_s))
        ]
        return RateRun(arrivals=arrivals, fired=[(fired_ms, None)])


def test_a_change_triggered_late_reads_its_window_only_up_to_the_loads_end(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the mechanism was triggered 120 ms after the moment: its 1 s window runs 120 ms past the
    # load's end, and the 88 requests due before that end were all sent
    monkeypatch.setattr(RouteProber, "problem", lambda self, probe, timeout=2.0: None)
    before = replicate(auction_api(), 10)
    booted = Booted(_Gateway(late_s=0.12), before, "a")
    settings = LoadSettings(rate=100.0, duration_s=3.0, warmup_s=1.0, deadline_s=1.0)
    out = change_under_load(
        booted,
        replicate(auction_api(), 20),
        ("b", "http://127.0.0.1:9"),
        load=_Load(),
        settings=settings,
        change_after_s=2.0,
        window_s=1.0,
        workdir=tmp_path,
    )
    assert out.window_loaded_s is not None and 0.85 <= out.window_loaded_s <= 0.89
    assert out.during.requests == pytest.approx(88, abs=2)
    assert out.problem == ""
