"""The tester's side of a route-scale or change-under-load run on the cloud path (docs/cloud.md,
"Route scale and changes under load"): the run's kind's own stages, as a local run executes them
(``gatebench.kinds.scale``, ``gatebench.kinds.change``), on the tester VM as their machine
(:class:`TesterMachine`), against gateways on their own VMs.

A :class:`RemoteGateway` is reached over the network for the load and the probes, like any
target of the tester; its starts and its change are asked of its VM's live agent
(``gatebench cloud live-gateway``, gatebench.vm._live_agent) through the runs bucket,
:data:`~gatebench.cloud._live.LEAD_S` ahead, and the agent answers when they really happened;
its memory is read by its VM's meter, at the moments the tester records (idle, under the
load), which the score step takes from the meter's samples (``cloud._live.finish_live_run``).
:func:`run_live_program` is the tester's whole program: the kind's stages (every size, or the
change, of every gateway), each result written to the runs bucket as it is known
(:class:`TesterResults`), the workflow's score step scoring them.

Times between the two VMs are wall-clock times (Compute Engine synchronises every VM's clock
with the metadata server's NTP service; their offset adds to each figure that spans both).

An edge: it runs the load engine and talks to Cloud Storage.
"""

from __future__ import annotations

import base64
import contextlib
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from gatebench.cloud._live import (
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
from gatebench.core.fairness import CpuPolicy, vm_cpu_policy
from gatebench.core.ir import Api
from gatebench.core.model import Measurement, RunKind, RunRecord, RunStatus
from gatebench.core.pinning import CpuLayout
from gatebench.core.renderers import LiveChange, get_renderer
from gatebench.core.scaleplan import scale_ask_from_json
from gatebench.core.spec import read_spec
from gatebench.kinds._live._gateway import ChangeApplied, RateLoad
from gatebench.kinds._live._machine import GrownSite
from gatebench.kinds._live._report import CHANGE_KIND, SCALE_KIND
from gatebench.kinds._live._stages import ScaleRequest
from gatebench.kinds.registry import get_kind
from gatebench.local.engines import BoundEngine, get_engine
from gatebench.local.engines.constant_rate import LoadgenRateLoad
from gatebench.local.procs import Supervisor
from gatebench.run import RunContext, RunJournal, RunOptions, execute
from gatebench.run.ports import Backend, FanOut, Provisioner, StageContext, Watch

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


class TesterMachine:
    """The tester VM as a live run's machine (``gatebench.kinds._live.LiveMachine``): its load
    engine runs here, as processes of the tester's supervisor; each gateway is on a VM of its
    own (:class:`RemoteGateway`, on the step of each size's files the render step wrote); the
    echo backends are the backend VM's, at the addresses the program names."""

    name = "tester VM"

    def __init__(
        self,
        storage: Bucket,
        bucket: str,
        run_id: str,
        plan: dict[str, Any],
        unreachable: dict[str, str],
        supervisor: Supervisor,
        *,
        load: RateLoad | None = None,
        make_gateway: Callable[..., Any] = RemoteGateway,
    ) -> None:
        self.storage, self.bucket, self.run_id, self.plan = storage, bucket, run_id, plan
        self.unreachable = unreachable
        self.supervisor = supervisor
        self.load = load
        self.make_gateway = make_gateway
        self.current: dict[str, Any] = {}
        """Gateway → the remote gateway of the size (or change) being measured."""

    @contextlib.contextmanager
    def session(self, run_dir: Path) -> Iterator[object]:
        """The tester's supervisor: the program that called it owns it."""
        yield self.supervisor

    def engine(self, name: str) -> BoundEngine:
        return BoundEngine(get_engine(name), self.supervisor)

    def _not_here(self, what: str) -> RunError:
        return RunError(f"a live run's tester VM has no {what}: its gateways are VMs of their own")

    def start_backend(self, ctx: StageContext, layout: Any = None) -> Backend:
        raise self._not_here("backend of its own")

    def provisioner(self, **settings: Any) -> Provisioner:
        raise self._not_here("provisioner")

    def fanout_problem(self, testers: int, engine: str) -> str | None:
        return "a live run's tester VM runs one load generator"

    def run_testers(self, *args: Any, **kwargs: Any) -> FanOut:
        raise self._not_here("second tester")

    def deployment_watch(self, *args: Any, **kwargs: Any) -> Watch | None:
        return None

    def gateway_cores(self, ctx: StageContext) -> tuple[CpuLayout, CpuPolicy]:
        """Nothing to pin here: each gateway runs alone on a VM of its own, with every vCPU
        of its machine type (the render step's policy)."""
        layout = CpuLayout("unpinned", note="each gateway runs alone on a VM of its own")
        return layout, vm_cpu_policy(str(self.plan["gateway_machine"]))

    def echo_backends(self, names: Sequence[str], ctx: StageContext) -> dict[str, str]:
        return {name: str(self.plan["backends"][name]) for name in names}

    def rate_load(self) -> RateLoad:
        return self.load or LoadgenRateLoad(self.supervisor)

    def unavailable(self, gateway: str) -> str | None:
        if gateway in self.unreachable:
            return f"did not answer: {self.unreachable[gateway]}"
        if gateway not in self.plan["gateways"]:
            return "no VM was created for it"
        return None

    def live_gateway(self, site: GrownSite) -> Any:
        """The gateway's VM, on the step the render step wrote for ``site.grown`` (a size, or
        the change's ``before``; its files were rendered for the VM's cores)."""
        gateway, grown = site.gateway, site.grown
        about = self.plan["gateways"][gateway]
        remote = self.make_gateway(
            self.storage,
            self.bucket,
            self.run_id,
            gateway,
            about["url"],
            about["steps"],
            lead_s=self.plan["lead_s"],
        )
        size_step = f"size-{len(grown.operations)}"
        remote.step = size_step if size_step in about["steps"] else "before"
        remote.marks.clear()
        self.current[gateway] = remote
        return remote


class TesterResults:
    """Where the tester's run writes what it measures (a ``ResultStore`` over the runs bucket):
    each scale point or change outcome as a result object, with the moments the gateway VM's
    meter is to read its memory at; each gateway that failed as a ``failed`` object. The run's
    own document is the workflow's: the tester writes nothing else."""

    def __init__(self, storage: Bucket, bucket: str, machine: TesterMachine) -> None:
        self.storage, self.bucket, self.machine = storage, bucket, machine
        self.written: list[str] = []
        self.failed: dict[str, str] = {}

    def _write(self, run_id: str, gateway: str, step: str, body: dict[str, Any]) -> str:
        name = result_object(run_id, gateway, step)
        write_json(self.storage, self.bucket, name, body)
        return name

    def put_result(self, run_id: str, kind: str, key: str, doc: Mapping[str, Any]) -> None:
        gateway = str(doc["gateway"])
        remote = self.machine.current.get(gateway)
        if kind == SCALE_KIND:
            step = f"size-{doc['routes']}"
            result = dict(doc)
            marks = list(remote.marks) if remote is not None else []
            idle = marks[0] * 1000.0 if marks and result.get("start_s") is not None else None
            load = marks[1:]
            problem = str(result.get("problem") or "")
            if problem and remote is not None and remote.failure and remote.failure not in problem:
                result["problem"] = f"{result['problem']} (the gateway VM: {remote.failure})"
            body = {
                "kind": SCALE_KIND,
                "gateway": gateway,
                "step": step,
                "ok": True,
                "result": result,
                "memory": {
                    "idle_ms": idle,
                    "load_ms": [load[0] * 1000.0, load[-1] * 1000.0] if len(load) > 1 else None,
                },
            }
        else:
            step = "change"
            body = {
                "kind": CHANGE_KIND,
                "gateway": gateway,
                "step": step,
                "ok": True,
                "result": dict(doc),
            }
        self.written.append(self._write(run_id, gateway, step, body))

    def update_run(self, run_id: str, **fields: Any) -> RunRecord:
        for gateway, reason in (fields.get("target_errors") or {}).items():
            if gateway in self.failed:
                continue
            remote = self.machine.current.get(gateway)
            if remote is not None and remote.failure and remote.failure not in reason:
                reason = f"{reason} (the gateway VM: {remote.failure})"
            self.failed[gateway] = reason
            kind = CHANGE_KIND if self.machine.plan["kind"] == RunKind.CHANGE else SCALE_KIND
            body = {"kind": kind, "gateway": gateway, "ok": False, "reason": reason}
            self._write(run_id, gateway, "failed", body)
        return RunRecord(run_id, "", "")

    # the run's document is the workflow's
    def create_run(self, run: RunRecord) -> bool:
        return True

    def get_run(self, run_id: str) -> RunRecord | None:
        return None

    def set_status(self, run_id: str, status: RunStatus, **fields: Any) -> RunRecord:
        return RunRecord(run_id, "", "", status=status)

    def list_runs(self, limit: int = 50) -> list[RunRecord]:
        return []

    def unfinished_runs(self) -> list[RunRecord]:
        return []

    def put_measurement(self, measurement: Measurement) -> None:
        raise RunError("a live run measures no workload phase")

    def measurements(self, run_id: str) -> list[Measurement]:
        return []

    def put_scores(self, run_id: str, scores: Mapping[str, Mapping[str, Any]]) -> None:
        raise RunError("the score step scores a live run")

    def scores(self, run_id: str) -> dict[str, dict[str, Any]] | None:
        return None

    def results(self, run_id: str, kind: str) -> dict[str, dict[str, Any]]:
        return {}


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
    """The tester's program (module docstring): the run's kind's own stages (route scale or
    change under load, ``gatebench.kinds.registry``) on the :class:`TesterMachine`, every scale
    point or change outcome written to the runs bucket as it is known (:class:`TesterResults`);
    the workflow's score step scores them. Returns the ``load-done`` marker's content (``ok``
    false when no gateway was measured)."""
    ask, problems = scale_ask_from_json(plan["kind"], plan["scale"])
    if ask is None:
        return {"ok": False, "reason": "; ".join(p.message for p in problems)}
    api = _program_api(plan)
    kind = get_kind(ask.kind)
    request = ScaleRequest(
        gateways=tuple(sorted(plan["gateways"])),
        sizes=ask.sizes,
        settings=ask.settings,
        change=ask.change,
    )
    options = RunOptions(results_dir=workdir, run_id=run_id)
    prepared = kind.prepare(api, request, options)
    problem = ""
    with Supervisor() as supervisor:
        machine = TesterMachine(
            storage,
            bucket,
            run_id,
            plan,
            unreachable,
            supervisor,
            load=load,
            make_gateway=make_gateway,
        )
        results = TesterResults(storage, bucket, machine)
        record = RunRecord(
            run_id, str(plan["spec"]["name"]), "", kind=kind.name, plan=prepared.record_plan
        )
        journal = RunJournal(record, workdir / "run", results, lambda progress: None)
        ctx = RunContext(api, prepared.plan, options, journal, machine, kind.status_rule)
        stages = [s for s in kind.stages(request, options) if s.name != "score"]
        try:
            execute(stages, ctx)
        except GatebenchError as exc:  # a run-level failure: said in the marker
            problem = str(exc)
        finally:
            shutil.rmtree(workdir / "run" / "load", ignore_errors=True)  # engines' logs: read
    ok = bool(results.written)
    reason = (
        None
        if ok
        else (f"no gateway was measured: {results.failed}" + (f"; {problem}" if problem else ""))
    )
    return {"ok": ok, "reason": reason, "results": results.written, "failed": results.failed}


__all__ = [
    "ANSWER_TIMEOUT_S",
    "RemoteGateway",
    "TesterMachine",
    "TesterResults",
    "live_plan",
    "run_live_program",
]
