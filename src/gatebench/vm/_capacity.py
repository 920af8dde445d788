"""A capacity run on the cloud path's tester VMs (docs/capacity.md, "Several testers").

The render step writes the search's input (``runs/RUN/capacity/input.json``: targets, settings,
probe templates; ``cloud._render.CAPACITY_INPUT``). When the load build asks for the load, the
tester sees it and searches instead of running the workload:

* **tester 0** runs the campaign (``gatebench.kinds.capacity.drive``), each probe with the load
  generator; with several testers it splits every probe by the testers' rule
  (``gatebench.core.testers.split_document``), writes each other tester's share to
  ``runs/RUN/capacity/probes/NNNN/tT/share.json`` with a common start time, runs its own, waits
  for theirs (``.../tT/loadgen.records``) and merges them exactly (``testers.merge_phase``,
  ``loadlog.merge_schedules``). At the end it writes ``runs/RUN/capacity/campaign.json`` (every
  search, the orders, why it stopped), which the score step turns into the run's result;
* **tester T > 0** waits for its share of each probe in turn, runs it, uploads its records, and
  stops when ``campaign.json`` appears.

The bucket is the only channel (Cloud Build and the testers already meet there; no port is
opened between testers). A share's round trip costs a few polls (:data:`POLL_S`); a tester that
does not answer within the probe's length and :data:`SHARE_TIMEOUT_S` fails the probe, and the
campaign ends with the reason.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gatebench.cloud import Storage
from gatebench.cloud._capacity import CAMPAIGN_OBJECT
from gatebench.cloud._render import CAPACITY_INPUT, run_object
from gatebench.cloud._tester import Clock
from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.loadlog import ScheduleSample, merge_schedules, parse_loadlog
from gatebench.core.renderers import jit_warmups
from gatebench.core.testers import PhasePart, merge_phase, split_document
from gatebench.kinds.capacity import (
    Campaign,
    ProbeMetrics,
    ProbeRequest,
    SearchKey,
    TesterLimits,
    drive,
    late_threshold_ms,
    measured_index,
    probe_document,
    read_probe,
    settings_from_dict,
)
from gatebench.local.engines.loadgen import LoadgenEngine
from gatebench.local.procs import Supervisor
from gatebench.run.ports import EngineEvent, PhaseResult

POLL_S = 0.25
SHARE_TIMEOUT_S = 60.0
"""How long past a probe's own length tester 0 waits for another tester's records."""
START_MARGIN_S = 3.0
"""A share's start time, after tester 0 writes it: time for the others to see it and start."""


def share_object(run_id: str, probe: int, tester: int, leaf: str) -> str:
    return f"runs/{run_id}/capacity/probes/{probe:04d}/t{tester}/{leaf}"


def capacity_input(storage: Storage, bucket: str, run_id: str) -> dict[str, Any] | None:
    """The search's input, when this run is a capacity run."""
    data = storage.read_optional(bucket, run_object(run_id, CAPACITY_INPUT))
    return None if data is None else dict(json.loads(data))


class _Collect:
    def __init__(self) -> None:
        self.phases: dict[int, PhaseResult] = {}

    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        self.phases[result.phase] = result

    def tick(self) -> None:
        pass


def _engine(settings_connections: str, start_at_ms: float | None = None) -> LoadgenEngine:
    return LoadgenEngine(connections=settings_connections, start_at_ms=start_at_ms)


class _CloudProbes:
    """Tester 0's probe functions: its own share here, the others' through the bucket."""

    def __init__(
        self,
        storage: Storage,
        bucket: str,
        run_id: str,
        data: dict[str, Any],
        workdir: Path,
        supervisor: Supervisor,
        testers: int,
        env: dict[str, str],
        clock: Clock,
    ) -> None:
        self.storage, self.bucket, self.run_id = storage, bucket, run_id
        self.data, self.workdir, self.supervisor = data, workdir, supervisor
        self.testers, self.env, self.clock = testers, env, clock
        self.count = 0

    def probe_for(self, key: SearchKey) -> Callable[[ProbeRequest], ProbeMetrics]:
        template = self.data["templates"][key.workload][key.target]
        settings = settings_from_dict(self.data["settings"][key.workload])
        late_ms = late_threshold_ms(settings.objective)

        def probe(request: ProbeRequest) -> ProbeMetrics:
            self.count += 1
            seed = int(self.data.get("seed", 0)) + self.count
            document = probe_document(template, request, seed=seed)
            index = measured_index(document)
            result, schedule = self._run(document, index, settings.connections, request)
            return read_probe(request, result, schedule, late_ms=late_ms)

        return probe

    def _run(
        self, document: dict[str, Any], index: int, connections: str, request: ProbeRequest
    ) -> tuple[PhaseResult, ScheduleSample]:
        name = f"probe-{self.count:04d}"
        shares = split_document(document, self.testers)
        start_at = (self.clock.now() + (START_MARGIN_S if self.testers > 1 else 0.0)) * 1000.0
        for t in range(1, self.testers):
            share = {"document": shares[t], "start_at_ms": start_at, "connections": connections}
            self.storage.write(
                self.bucket,
                share_object(self.run_id, self.count, t, "share.json"),
                json.dumps(share),
                "application/json",
            )
        hooks = _Collect()
        engine = _engine(connections, start_at if self.testers > 1 else None)
        run = engine.run(
            shares[0],
            self.workdir / name,
            hooks,
            supervisor=self.supervisor,
            name=name,
            env=self.env,
        )
        if run.crashed:
            raise RunError(f"{name}: tester 0: {run.reason}")
        if run.control_failures:
            raise RunError(
                "the backend did not accept its reset (is it still running?): "
                + run.control_failures[0]
            )
        parts = [PhasePart(0, hooks.phases.get(index))]
        schedules = [run.schedules.get(index, ScheduleSample())]
        deadline = self.clock.now() + request.seconds + START_MARGIN_S + SHARE_TIMEOUT_S
        for t in range(1, self.testers):
            if not any(int(p["index"]) == index for p in shares[t]["phases"]):
                continue
            records = self._wait(
                share_object(self.run_id, self.count, t, "loadgen.records"), deadline, t
            )
            log = parse_loadlog(records, f"tester {t}")
            found = log.phases.get(index)
            parts.append(PhasePart(t, None if found is None else found.result))
            schedules.append(ScheduleSample() if found is None else found.schedule)
        merged = merge_phase(index, parts)
        if "partial" in merged.flags:
            raise RunError(f"{name}: " + "; ".join(merged.reasons))
        return merged.result, merge_schedules(schedules)

    def _wait(self, name: str, deadline: float, tester: int) -> bytes:
        while True:
            data = self.storage.read_optional(self.bucket, name)
            if data is not None:
                return data
            if self.clock.now() >= deadline:
                raise RunError(f"tester {tester} sent no records for gs://{self.bucket}/{name}")
            self.clock.sleep(POLL_S)


def search_on_tester(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    data: dict[str, Any],
    reachable: list[str],
    testers: int,
    env: dict[str, str],
    clock: Clock,
) -> dict[str, Any]:
    """Tester 0: the whole campaign; its ``load-done`` content."""
    settings = {w: settings_from_dict(s) for w, s in data["settings"].items()}
    targets = [t for t in data["targets"] if t in reachable]
    campaign = Campaign(
        tuple(targets),
        settings,
        int(data.get("seed", 0)),
        next(iter(settings.values())).budget if settings else 0.0,
    )
    started = time.time()
    reason = None
    try:
        with Supervisor() as supervisor:
            probes = _CloudProbes(
                storage, bucket, run_id, data, workdir, supervisor, testers, env, clock
            )
            drive(
                campaign,
                probes.probe_for,
                limits_for=lambda key: TesterLimits(),
                first_warmup=jit_warmups(targets),
            )
    except GatebenchError as exc:
        reason = str(exc)
        campaign.stop = campaign.stop or f"the search stopped: {reason}"
    name = CAMPAIGN_OBJECT.format(run_id=run_id)
    storage.write(bucket, name, json.dumps(campaign.to_dict()), "application/json")
    searched = sum(len(r) for r in campaign.results.values())
    return {
        "ok": reason is None or searched > 0,
        "reason": reason,
        "capacity": name,
        "searches": searched,
        "seconds": round(time.time() - started, 1),
    }


def serve_shares(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    tester: int,
    env: dict[str, str],
    clock: Clock,
    timeout: float,
) -> dict[str, Any]:
    """Tester T > 0: each probe's share in turn until tester 0 writes ``campaign.json``."""
    probe = 1
    ran = 0
    deadline = clock.now() + timeout
    with Supervisor() as supervisor:
        while clock.now() < deadline:
            data = storage.read_optional(bucket, share_object(run_id, probe, tester, "share.json"))
            if data is None:
                if storage.read_optional(bucket, CAMPAIGN_OBJECT.format(run_id=run_id)) is not None:
                    return {"ok": True, "reason": None, "probes": ran}
                clock.sleep(POLL_S)
                continue
            share = json.loads(data)
            document = share["document"]
            if document["phases"]:
                name = f"probe-{probe:04d}-t{tester}"
                engine = _engine(share.get("connections", "keep-alive"), share.get("start_at_ms"))
                run = engine.run(
                    document, workdir / name, _Collect(), supervisor=supervisor, name=name, env=env
                )
                if run.records is not None and run.records.is_file():
                    storage.write(
                        bucket,
                        share_object(run_id, probe, tester, "loadgen.records"),
                        run.records.read_bytes(),
                        "application/octet-stream",
                    )
                ran += 1
            probe += 1
    return {"ok": False, "reason": f"no end of the capacity search within {timeout:g}s"}


__all__ = [
    "capacity_input",
    "search_on_tester",
    "serve_shares",
    "share_object",
]
