"""One load-generator process, watched: started as an engine process of the supervisor, its
CPU and the run's accounting groups sampled, polled until it exits, stopped on every way out.
The one definition of that loop for every engine (Gatling, wrk, loadgen).

Why the loop looks as it does: the process is polled with ``exited_unreaped`` (not
``proc.alive()``, which would reap it): until it is reaped, /proc still shows its CPU time,
which the last phase's CPU figures need, so the last sample is taken after it exited. The
sampler runs every ``POLL_S`` (and calls the engine's ``on_poll``, which ticks the hooks);
the end is seen within ``exit_poll_s``, so a short probe does not wait out a whole period.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from gatebench.local.engines.cpu import CpuSampler, exited_unreaped
from gatebench.local.procs import ManagedProcess, Supervisor
from gatebench.run.ports import EngineRun, Hooks

POLL_S = 0.2
"""How often the CPU is sampled and the engine's per-poll work runs."""


@dataclass(frozen=True)
class Launch:
    """How one engine run is placed: as processes of ``supervisor``, its files under ``name``,
    the CPU of ``cpu_groups`` accounted (the tester's own group is added), a target made of the
    groups ``target_groups(target)`` lists (gateway + backend), ``env`` added to the engine's
    environment, ``ready`` called while it initialises, ``wrapper`` before its command (``ip
    netns exec NS``: a tester on a host of its own, gatebench.local._netns)."""

    supervisor: Supervisor
    name: str
    cpu_groups: Mapping[str, Sequence[int]] | None = None
    target_groups: Callable[[str], Sequence[str]] = lambda target: ()
    env: Mapping[str, str] | None = None
    ready: Callable[[], None] | None = None
    wrapper: Sequence[str] = ()


RunT = TypeVar("RunT", bound=EngineRun, covariant=True)


class ProcessEngine(Generic[RunT]):
    """A load engine as processes of a :class:`~gatebench.local.procs.Supervisor`; the run's
    stages see it bound to the machine's supervisor (``gatebench.run.ports.LoadEngine``). An
    engine implements ``check``, ``version`` and ``launch``; ``run`` is the same for all."""

    name: str

    def check(self) -> None:
        """Raise RunError saying how to install the engine when it is missing."""
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def run(
        self,
        document: dict[str, Any],
        workdir: Path,
        hooks: Hooks,
        *,
        supervisor: Supervisor,
        cpu_groups: Mapping[str, Sequence[int]] | None = None,
        target_groups: Callable[[str], Sequence[str]] = lambda target: (),
        name: str = "",
        env: Mapping[str, str] | None = None,
        ready: Callable[[], None] | None = None,
        wrapper: Sequence[str] = (),
    ) -> RunT:
        """Run every phase of ``document`` in order, placed as :class:`Launch` says (``name``:
        the engine's own by default); files go into ``workdir``. With ``ready``, the engine
        starts, calls ``ready()`` while it initialises (provisioning), then begins the first
        phase."""
        how = Launch(
            supervisor, name or self.name, cpu_groups, target_groups, env, ready, tuple(wrapper)
        )
        return self.launch(document, workdir, hooks, how)

    def launch(self, document: dict[str, Any], workdir: Path, hooks: Hooks, how: Launch) -> RunT:
        raise NotImplementedError


class WatchedProcess:
    """A started engine process and its CPU sampler (``tester`` is its own group)."""

    def __init__(
        self,
        supervisor: Supervisor,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.supervisor = supervisor
        self.proc: ManagedProcess = supervisor.start(
            name, list(argv), log_path=log_path, cwd=cwd, env=env, role="engine"
        )
        self.sampler = CpuSampler()

    def account(self, cpu_groups: Mapping[str, Sequence[int]] | None) -> None:
        """The groups whose CPU each phase counts, read now (the gateways may have just
        started), with this process as ``tester``."""
        groups = {k: list(v) for k, v in (cpu_groups or {}).items()}
        groups["tester"] = [self.proc.pid]
        self.sampler.set_groups(groups)

    def wait(
        self, on_poll: Callable[[], None] = lambda: None, *, exit_poll_s: float = POLL_S
    ) -> int:
        """Sample and call ``on_poll`` every ``POLL_S`` until the process exits (seen within
        ``exit_poll_s``), once more after it exited; its exit code. The process is stopped
        (and reaped) on every way out."""
        try:
            self.sampler.sample()
            next_poll = time.monotonic() + POLL_S
            while not exited_unreaped(self.proc.pid):
                time.sleep(min(exit_poll_s, max(0.0, next_poll - time.monotonic())))
                if time.monotonic() >= next_poll:
                    self.sampler.sample()
                    on_poll()
                    next_poll += POLL_S
            self.sampler.sample()  # the exited process still shows its CPU time until reaped
            on_poll()
            return self.proc.popen.wait()
        finally:
            self.stop()

    def stop(self) -> None:
        self.supervisor.stop(self.proc)


__all__ = ["POLL_S", "WatchedProcess"]
