"""The tester's side of a route-scale or change-under-load run on the cloud path (docs/cloud.md,
"Route scale and changes under load"): the same measurements as a local run
(``gatebench.local.liveruns``: the functions a local run's stages call), against gateways on their
own VMs.

A :class:`RemoteGateway` is reached over the network for the load and the probes, like any
target of the tester; its starts and its change are asked of its VM's live agent
(``gatebench cloud live-gateway``, gatebench.vm._live_agent) through the runs bucket,
:data:`~gatebench.cloud._live.LEAD_S` ahead, and the agent answers when they really happened;
its memory is read by its VM's meter, at the moments the tester records (idle, under the
load), which the score step takes from the meter's samples (``cloud._live.finish_live_run``).
:func:`run_live_program` is the tester's whole program: every size (or the change) of every
gateway in turn, each result written to the runs bucket as it is known.

Times between the two VMs are wall-clock times (Compute Engine synchronises every VM's clock
with the metadata server's NTP service; their offset adds to each figure that spans both).

An edge: it runs the load engine and talks to Cloud Storage.
"""

from __future__ import annotations

import base64
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gatebench.cloud._live import (
    BACKENDS,
    LIVE_PLAN,
    POLL_S,
    Bucket,
    answer_object,
    read_json,
    request_object,
    result_object,
    write_json,
)
from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.ir import Api
from gatebench.core.renderers import LiveChange, get_renderer
from gatebench.core.routescale import replicate
from gatebench.core.scaleplan import ScaleAsk, scale_ask_from_json
from gatebench.core.spec import read_spec
from gatebench.kinds._live._gateway import RateLoad, change_under_load, load_positions, start_grown
from gatebench.kinds._live._report import CHANGE_KIND, SCALE_KIND
from gatebench.local.engines.constant_rate import GatlingRateLoad
from gatebench.local.procs import Supervisor
from gatebench.local.provisioners._live import ChangeApplied

ANSWER_TIMEOUT_S = 900.0
"""How long the tester waits for an agent's answer (a boot fetches the step's files, stops and
starts the container; a change's check compiles, for Varnish, its whole VCL)."""


def _mono(wall: float) -> float:
    """A wall-clock time (both VMs' clocks) as this process's monotonic time."""
    return wall - (time.time() - time.monotonic())


class RemoteGateway:
    """A gateway on its own VM, as ``gatebench.local.liveruns`` measures it (its ``Gateway``): the
    load and the probes reach it over the network; its starts and its change are asked of its
    VM's live agent through the runs bucket, :attr:`lead_s` ahead; its memory is read by its
    VM's meter, at the moments :attr:`marks` records (:meth:`rss_bytes`)."""

    def __init__(
        self,
        storage: Bucket,
        bucket: str,
        run_id: str,
        name: str,
        url: str,
        steps: dict[str, Any],
        *,
        lead_s: float,
        poll_s: float = POLL_S,
        answer_timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> None:
        self.storage, self.bucket, self.run_id, self.name = storage, bucket, run_id, name
        self.renderer = get_renderer(name)
        parts = urlsplit(url)
        self._host, self._port = parts.hostname or "", parts.port or 80
        self.steps = steps
        self._lead_s = lead_s
        self.poll_s = poll_s
        self.answer_timeout_s = answer_timeout_s
        self.step = next(iter(steps))
        self.marks: list[float] = []
        self.failure = ""
        request = read_json(storage, bucket, request_object(run_id, name)) or {}
        answer = read_json(storage, bucket, answer_object(run_id, name)) or {}
        self.seq = max(int(request.get("seq") or 0), int(answer.get("seq") or 0))
        self.pending: int | None = None
        self._checked = 0.0

    # -- what liveruns reads

    @property
    def mechanism(self) -> LiveChange:
        return self.renderer.live_change

    @property
    def host(self) -> str:
        return self._host

    @property
    def port(self) -> int:
        return self._port

    @property
    def ca_file(self) -> str | None:
        return None

    @property
    def lead_s(self) -> float:
        return self._lead_s

    def config_bytes(self) -> int:
        return int(self.steps[self.step]["bytes"])

    def rss_bytes(self) -> int | None:
        self.marks.append(time.time())
        return None

    pids: tuple[int, ...] = ()
    """Its processes are on its own VM: its meter accounts their CPU."""

    def alive(self) -> bool:
        """False once the agent said it failed the request the probes wait on."""
        if self.pending is not None and time.monotonic() - self._checked >= 1.0:
            self._checked = time.monotonic()
            answer = read_json(self.storage, self.bucket, answer_object(self.run_id, self.name))
            if answer and answer.get("seq") == self.pending and not answer.get("ok"):
                self.failure = str(answer.get("reason") or "failed")
        return not self.failure

    def stop(self) -> None:
        """Nothing: the next step restarts the container, teardown deletes the VM."""

    # -- requests and answers

    def _ask(self, op: str, step: str, at: float | None = None) -> int:
        self.seq += 1
        request = {"seq": self.seq, "op": op, "step": step, "at": at}
        write_json(self.storage, self.bucket, request_object(self.run_id, self.name), request)
        return self.seq

    def _answer(self, seq: int) -> dict[str, Any]:
        deadline = time.monotonic() + self.answer_timeout_s
        while True:
            answer = read_json(self.storage, self.bucket, answer_object(self.run_id, self.name))
            if answer is not None and answer.get("seq") == seq:
                break
            if time.monotonic() >= deadline:
                raise RunError(
                    f"{self.name}: its VM's live agent did not answer within "
                    f"{self.answer_timeout_s:g}s (gs://{self.bucket}/"
                    f"{answer_object(self.run_id, self.name)}; is gatebench-live running?)"
                )
            time.sleep(self.poll_s)
        if seq == self.pending:
            self.pending = None
        if not answer.get("ok"):
            self.failure = str(answer.get("reason") or "failed")
            raise RunError(self.failure)
        return answer

    def _at(self) -> float:
        return time.time() + self._lead_s

    def start(self) -> float:
        """Ask the agent to start the container on :attr:`step`'s files :attr:`lead_s` from
        now, and return at that moment (probes begin: they fail until it really started)."""
        at = self._at()
        self.failure = ""
        self.pending = self._ask("boot", self.step, at)
        time.sleep(max(0.0, at - time.time()))
        return _mono(at)

    def confirm_start(self, started: float) -> float:
        answer = self._answer(self.pending or self.seq)
        return _mono(float(answer["started_at"]))

    def prepare(
        self, api: Api, backend_url: str | None = None, replicas: Sequence[str] = ()
    ) -> Any:
        """The change's files fetched and checked on the gateway VM (the step ``after``)."""
        step = "after"
        if len(api.operations) != int(self.steps[step]["routes"]):
            raise RunError(
                f"{self.name}: the change has {len(api.operations)} routes, its rendered files "
                f"{self.steps[step]['routes']}"
            )
        answer = self._answer(self._ask("prepare", step))
        return {"step": step, "check_s": float(answer.get("check_s") or 0.0)}

    def apply(self, prepared: Any) -> ChangeApplied:
        """Ask the agent to apply the change :attr:`lead_s` from now; return at that moment
        (the probes of the new routes begin: they fail until it really happened)."""
        at = self._at()
        self.step = str(prepared["step"])
        self.pending = self._ask("apply", self.step, at)
        time.sleep(max(0.0, at - time.time()))
        moment = _mono(at)
        return ChangeApplied(self.mechanism, moment, moment, moment, float(prepared["check_s"]))

    def confirm(self, applied: ChangeApplied) -> ChangeApplied:
        answer = self._answer(self.pending or self.seq)
        return ChangeApplied(
            self.mechanism,
            _mono(float(answer["written_at"])),
            _mono(float(answer["triggered_at"])),
            _mono(float(answer["returned_at"])),
            applied.check_s,
        )


def live_plan(storage: Bucket, bucket: str, run_id: str) -> dict[str, Any] | None:
    """The tester's program of a scale or change-under-load run (None: a fixed run)."""
    return read_json(storage, bucket, f"runs/{run_id}/{LIVE_PLAN}")


def _program_api(plan: dict[str, Any]) -> Api:
    spec = plan["spec"]
    result = read_spec(base64.b64decode(spec["data"]), name=spec["name"], entry=spec.get("entry"))
    if result.api is None:
        raise RunError("the run's description cannot be read again on the tester")
    return result.api


def run_live_program(
    storage: Bucket,
    bucket: str,
    run_id: str,
    workdir: Path,
    plan: dict[str, Any],
    unreachable: dict[str, str],
    load: RateLoad | None = None,
    make_gateway: Callable[..., Any] = RemoteGateway,
) -> dict[str, Any]:
    """The tester's program (module docstring): every scale point, or every change outcome,
    written to the runs bucket as it is known; the ``load-done`` marker's content (``ok``
    false when no gateway was measured)."""
    ask, problems = scale_ask_from_json(plan["kind"], plan["scale"])
    if ask is None:
        return {"ok": False, "reason": "; ".join(p.message for p in problems)}
    api = _program_api(plan)
    written: list[str] = []
    failed: dict[str, str] = {}

    def fail(name: str, reason: str) -> None:
        failed[name] = reason
        body = {"kind": _kind(ask), "gateway": name, "ok": False, "reason": reason}
        write_json(storage, bucket, result_object(run_id, name, "failed"), body)

    gateways: dict[str, Any] = {}
    for name, about in sorted(plan["gateways"].items()):
        if name in unreachable:
            fail(name, f"did not answer: {unreachable[name]}")
            continue
        gateways[name] = make_gateway(
            storage, bucket, run_id, name, about["url"], about["steps"], lead_s=plan["lead_s"]
        )
    with Supervisor() as supervisor:
        load = load or GatlingRateLoad(supervisor)
        if ask.kind == "scale":
            for size in ask.sizes:
                grown = replicate(api, size)
                for name, remote in gateways.items():
                    try:
                        written.append(
                            _scale_point(
                                storage,
                                bucket,
                                run_id,
                                remote,
                                f"size-{size}",
                                grown,
                                ask,
                                load,
                                workdir,
                            )
                        )
                    except GatebenchError as exc:  # the agent or the bucket failed: next size
                        fail(name, str(exc))
        else:
            for name, remote in gateways.items():
                try:
                    written.append(
                        _change(
                            storage,
                            bucket,
                            run_id,
                            remote,
                            api,
                            plan,
                            ask,
                            load,
                            workdir,
                        )
                    )
                except GatebenchError as exc:
                    fail(name, str(exc))
    ok = bool(written)
    return {
        "ok": ok,
        "reason": None if ok else f"no gateway was measured: {failed}",
        "results": written,
        "failed": failed,
    }


def _kind(ask: ScaleAsk) -> str:
    return SCALE_KIND if ask.kind == "scale" else CHANGE_KIND


def _scale_point(
    storage: Bucket,
    bucket: str,
    run_id: str,
    remote: RemoteGateway,
    step: str,
    grown: Api,
    ask: ScaleAsk,
    load: RateLoad,
    workdir: Path,
) -> str:
    """One scale point of a gateway (``liveruns.start_grown`` then ``load_positions``), written
    with the moments its memory is to be read at."""
    remote.step = step
    remote.marks.clear()
    booted = start_grown(remote, grown, instance=BACKENDS[0], settings=ask.settings)
    if booted.problem and remote.failure:
        booted.problem += f" (the gateway VM: {remote.failure})"
    idle_ms = remote.marks[-1] * 1000.0 if remote.marks and not booted.problem else None
    remote.marks.clear()
    where = workdir / remote.name / step
    point = load_positions(booted, load=load, settings=ask.settings, workdir=where)
    shutil.rmtree(where, ignore_errors=True)  # the engine's logs: read, never kept
    marks = remote.marks
    body = {
        "kind": SCALE_KIND,
        "gateway": remote.name,
        "step": step,
        "ok": True,
        "result": point.to_dict(),
        "memory": {
            "idle_ms": idle_ms,
            "load_ms": [marks[0] * 1000.0, marks[-1] * 1000.0] if len(marks) > 1 else None,
        },
    }
    name = result_object(run_id, remote.name, step)
    write_json(storage, bucket, name, body)
    return name


def _change(
    storage: Bucket,
    bucket: str,
    run_id: str,
    remote: RemoteGateway,
    api: Api,
    plan: dict[str, Any],
    ask: ScaleAsk,
    load: RateLoad,
    workdir: Path,
) -> str:
    """A gateway's change under load (``liveruns.start_grown``, then ``change_under_load``)."""
    change = ask.change
    assert change is not None
    remote.step = "before"
    before = replicate(api, change.routes_before)
    booted = start_grown(remote, before, instance=BACKENDS[0], settings=ask.settings)
    if booted.problem:
        extra = f" (the gateway VM: {remote.failure})" if remote.failure else ""
        raise RunError(f"{remote.name}: {booted.problem}{extra}")
    after = replicate(api, change.routes_before + change.routes_added)
    where = workdir / remote.name / "change"
    try:
        outcome = change_under_load(
            booted,
            after,
            (BACKENDS[1], str(plan["backends"][BACKENDS[1]])),
            load=load,
            settings=ask.settings,
            change_after_s=change.change_after_s,
            window_s=change.window_s,
            workdir=where,
        )
    finally:
        shutil.rmtree(where, ignore_errors=True)
    body = {
        "kind": CHANGE_KIND,
        "gateway": remote.name,
        "step": "change",
        "ok": True,
        "result": outcome.to_dict(),
    }
    name = result_object(run_id, remote.name, "change")
    write_json(storage, bucket, name, body)
    return name


__all__ = ["ANSWER_TIMEOUT_S", "RemoteGateway", "live_plan", "run_live_program"]
