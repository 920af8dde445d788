"""The local benchmark run: render, provision, load every target, ingest, tear down.

Steps follow the run lifecycle (``received → parsed → rendered → provisioning → loading →
scoring → done | failed | partial``); each transition is written to ``run.json`` in the run
folder and, when a :class:`~gatebench.store.ResultStore` is given, to the store. Every
measured phase is written as soon as the engine proves it complete (``measurements.jsonl``
and ``store.put_measurement``), so a crash or Ctrl-C keeps what finished.

Protocol (docs/engine.md): the backend and every gateway start once; the schedule lists,
for each repetition, the targets in a shuffled order, each with its warm-up (excluded) and
one measured phase per workload, the backend reset before each measured phase. One Gatling
JVM runs the whole schedule (docs/benchmarks.md has the measurement behind that choice).

Trust (docs/trust.md): before the first repetition the engine drives a ceiling target (nginx
serving a static file) with every workload; the ceiling is stored with the run
(``environment.ceiling``). Once every phase is in, a measurement whose throughput comes within
20 % of the ceiling the run demonstrated (that reading, or a faster target's mean: the one
the score uses) is flagged ``tester-bound``, and rewritten where it was stored. With ``cross_check``, a second engine then runs the same
closed-model phases against the same targets, before teardown, and its measurements are
stored with the run too (``environment.cross_check``) for the report to compare.

Faults: a gateway whose config is rejected or that will not start is marked failed with the
reason and the others go on; one that dies mid-run is marked failed with its log tail and
its remaining phases are skipped. Whether a gateway is alive is checked when each of its
phases starts and ends and when each is reported (and twice a second): a phase that overlaps
its target's failure window (from the last check that saw it alive to the first that saw it
dead) is stored flagged ``target-failed`` and never scored, and the failure is recorded with
the run (``environment.failures``) so the report names the gateway and leaves it unranked; an unreachable backend fails the run before any load; a
load-engine crash is retried once for the phases not yet complete, then marked failed;
Ctrl-C (or SIGTERM) tears everything down and the run ends ``partial`` with what finished.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .api_keys import with_api_keys
from .backends import start_plan_backend
from .capabilities import token_pool_problem
from .engines import EngineEvent, EngineRun, get_engine, injection_problem
from .errors import GatebenchError, RunError
from .ir import Api
from .measure import PhaseResult, measurement_from
from .model import Measurement, RunRecord, RunStatus, can_move, local_run_id
from .pinning import CpuLayout, resolve_layout
from .plan import Plan, workload_summary
from .procs import Supervisor, signals_held
from .provisioners import Provisioned
from .renderers import policy_exclusions
from .score import BASELINE
from .stats import phase_stats
from .store import ResultStore
from .testers import MergedPhase, merged_measurement
from .tokens import SIGNED_TOKEN_ENV, SIGNED_TOKENS_FILE_ENV
from .trust import (
    CEILING_TARGET,
    CROSS_CHECK_REPETITIONS,
    ENGINE_RESOLUTION_MS,
    FAILED_TARGET_FLAG,
    Ceiling,
    CeilingPoint,
    ceiling_of,
    flag_near_ceiling,
)
from .workload import CompiledLoad, Phase, Schedule, compile_load, plan_as_run

SKIP_FILE = "skip-targets.txt"
"""Targets the engine skips from now on (one per line), rewritten as gateways fail."""


@dataclass(frozen=True)
class RunOptions:
    results_dir: Path = Path("results")
    quick: bool = False
    repetitions: int | None = None
    seed: int | None = None
    engine: str | None = None
    """The load engine; None: the plan's (``engine:``, gatling by default)."""
    run_id: str | None = None
    phase_filter: Callable[[Phase], bool] | None = None
    ceiling: bool = True
    """Measure the engine's ceiling first and flag measurements near it (docs/trust.md)."""
    cross_check: str | None = None
    """A second engine that re-measures the closed-model workloads before teardown."""
    testers: int = 1
    """Load generators per phase, each on a network namespace of its own (gatebench._fanout)."""
    allow_missing_policies: bool = False
    """Run a gateway that cannot apply the plan's policies without them (marked in the notes)
    instead of leaving it out."""


@dataclass(frozen=True)
class Progress:
    """What the live display shows."""

    step: str
    message: str = ""
    phase: Phase | None = None
    phase_number: int = 0
    phases: int = 0
    done: int = 0
    rate: float = 0.0


@dataclass
class RunOutcome:
    record: RunRecord
    measurements: list[Measurement]
    run_dir: Path
    schedule: Schedule | None = None
    notes: list[str] = field(default_factory=list)
    engine_runs: list[EngineRun] = field(default_factory=list)
    load_s: float = 0.0
    wall_s: float = 0.0
    report: Any = None
    """The results package's Report (scores, verdict) once scored."""


class _Run:
    """The state of one run while it goes: record, folder, store, display."""

    def __init__(
        self,
        record: RunRecord,
        run_dir: Path,
        store: ResultStore | None,
        display: Callable[[Progress], None],
    ) -> None:
        self.record = record
        self.run_dir = run_dir
        self.store = store
        self.display = display
        self.measurements: list[Measurement] = []
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "measurements.jsonl").touch()
        if store is not None:
            store.create_run(record)
        self._save()

    def _save(self) -> None:
        self.record.updated_at = time.time()
        tmp = self.run_dir / "run.json.tmp"
        tmp.write_text(json.dumps(self.record.to_dict(), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, self.run_dir / "run.json")

    def status(
        self, status: RunStatus, *, failed_step: str | None = None, error: str | None = None
    ) -> None:
        if not can_move(self.record.status, status):
            return
        self.record.status = status
        if failed_step is not None:
            self.record.failed_step = failed_step
        if error is not None:
            self.record.error = error
        self._save()
        if self.store is not None:
            self.store.set_status(self.record.run_id, status, failed_step=failed_step, error=error)
        self.display(Progress(step=str(status)))

    def update(self, **fields: Any) -> None:
        for key, value in fields.items():
            setattr(self.record, key, value)
        self._save()
        if self.store is not None:
            self.store.update_run(self.record.run_id, **fields)

    def target_failed(self, target: str, reason: str) -> None:
        errors = dict(self.record.target_errors)
        errors[target] = reason
        self.update(target_errors=errors)
        self.display(Progress(step="loading", message=f"{target} failed: {reason.splitlines()[0]}"))

    def put(self, m: Measurement) -> None:
        """One measured phase, in measurements.jsonl and the store: a Ctrl-C or SIGTERM waits
        until it is in both (procs.signals_held), so an interrupted run keeps the same phases
        in each."""
        with signals_held():
            self.measurements.append(m)
            with (self.run_dir / "measurements.jsonl").open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(m.to_dict()) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            if self.store is not None:
                self.store.put_measurement(m)

    def flag_tester_bound(self) -> None:
        """Add the ceiling's ``tester-bound`` flags now that every phase is in (they need the
        ceiling the run demonstrated: gatebench.trust.flag_near_ceiling), and write the
        measurements that changed where they were written."""
        ceiling = ceiling_of(self.record.environment)
        if ceiling is None or not ceiling.workloads:
            return
        readings = {w: p.throughput for w, p in ceiling.workloads.items()}
        flagged = flag_near_ceiling(self.measurements, readings, ceiling.share)
        changed = [m for m, old in zip(flagged, self.measurements, strict=True) if m is not old]
        if not changed:
            return
        self.measurements[:] = flagged
        tmp = self.run_dir / "measurements.jsonl.tmp"
        tmp.write_text("".join(json.dumps(m.to_dict()) + "\n" for m in flagged), encoding="utf-8")
        os.replace(tmp, self.run_dir / "measurements.jsonl")
        if self.store is not None:
            for m in changed:
                self.store.put_measurement(m)


@contextlib.contextmanager
def _signed_tokens(plan: Plan, outcome: RunOutcome) -> Iterator[Plan]:
    """With ``auth.jwt``: sign the requests' bearer tokens with the private key from its
    variable and the JWT policy's claims, valid for the run's estimated length plus a margin
    (or the plan's lifetime, refused when shorter); the run records the key's fingerprint
    only. One subject: the token goes to the engine in this process's environment; a pool:
    one token per subject in a temporary file, deleted when the block ends. Yields the plan
    whose auth sends them."""
    from .cost import load_seconds
    from .tokens import TokenSignerError, signer_from_spec, signing_spec, token_file

    name = plan.auth.jwt_private_key_env
    if name is None:
        yield plan
        return
    pem = os.environ.get(name)
    if not pem:
        raise RunError(
            f"environment variable {name} is not set; auth.jwt signs the tokens with the PEM "
            f'private key it holds (export {name}="$(cat key.pem)")'
        )
    try:
        signer = signer_from_spec(signing_spec(plan, load_seconds(plan.to_dict())), pem)
    except TokenSignerError as exc:
        raise RunError(f"auth.jwt: {exc} (key from ${name})") from None
    described = ", ".join(f"{k} {v}" for k, v in signer.describe().items())
    outcome.notes.append(f"bearer tokens signed by the run ({described})")
    if plan.auth.jwt_subjects == 1:
        os.environ[SIGNED_TOKEN_ENV] = signer.sign(0)
        try:
            yield replace(plan, auth=replace(plan.auth, bearer_env=SIGNED_TOKEN_ENV))
        finally:
            os.environ.pop(SIGNED_TOKEN_ENV, None)
        return
    with token_file(signer.tokens(plan.auth.jwt_subjects)) as path:
        os.environ[SIGNED_TOKENS_FILE_ENV] = str(path)
        try:
            yield replace(
                plan,
                auth=replace(plan.auth, bearer_env=SIGNED_TOKENS_FILE_ENV, bearer_per_user=True),
            )
        finally:
            os.environ.pop(SIGNED_TOKENS_FILE_ENV, None)


def _check_secrets(plan: Plan) -> None:
    names = [
        n
        for n in (
            plan.auth.bearer_env,
            plan.auth.basic_username_env,
            plan.auth.basic_password_env,
            plan.auth.api_key_env,
        )
        if n
    ]
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        raise RunError(
            f"environment variable {missing[0]} is not set; the plan's auth reads the credential "
            f"from it when requests are sent (export {missing[0]}=...)"
        )


def run_benchmark(
    api: Api,
    plan: Plan,
    *,
    spec_uri: str,
    spec_sha256: str,
    options: RunOptions = RunOptions(),
    store: ResultStore | None = None,
    display: Callable[[Progress], None] = lambda p: None,
    supervisor_factory: Callable[[], Supervisor] = Supervisor,
) -> RunOutcome:
    """Run the whole benchmark locally. Raises nothing for target faults (they are recorded);
    RunError for a run-level failure (after recording it); KeyboardInterrupt passes through
    after teardown, with the run marked partial."""
    wall_start = time.monotonic()
    plan = plan_as_run(plan, quick=options.quick, repetitions=options.repetitions)
    deployed = [
        key
        for key, asked in (
            ("tls", plan.tls is not None),
            ("backend.replicas", plan.backend.replicas > 1),
            ("fault", plan.fault is not None),
        )
        if asked
    ]
    if deployed:
        # The run's stages carry these; a run without them never goes ahead without them.
        raise RunError(
            f"this run cannot apply {', '.join(deployed)} of the plan: no run is started "
            "without what the plan asks"
        )
    run_id = options.run_id or local_run_id(spec_sha256)
    run_dir = (Path(options.results_dir) / run_id).resolve()
    record = RunRecord(
        run_id=run_id,
        spec_uri=spec_uri,
        spec_sha256=spec_sha256,
        title=api.title,
        gateways=list(plan.gateways),
        workloads=workload_summary(plan, api),
        plan=plan.to_dict(),
    )
    run = _Run(record, run_dir, store, display)
    outcome = RunOutcome(record, run.measurements, run_dir)
    tokens = contextlib.ExitStack()  # the signed tokens' file: deleted however the run ends
    run.status(RunStatus.PARSED)
    step = "rendered"
    engine_name = options.engine or plan.engine
    try:
        engine = get_engine(engine_name)
        engine.check()
        _check_engine_supports(engine_name, plan)
        _check_testers(options.testers, engine_name)
        if options.cross_check:
            get_engine(options.cross_check).check()
        plan = tokens.enter_context(_signed_tokens(plan, outcome))
        _check_secrets(plan)
        # The gateways get the API keys from their variable; the stored plan never holds them.
        enforced = with_api_keys(plan.policies, os.environ)
        with supervisor_factory() as supervisor:
            from .provisioners.local import LocalProvisioner

            layout = _pin(supervisor, plan, outcome)

            provisioner = LocalProvisioner(
                supervisor,
                policies=enforced,
                allow_missing_policies=options.allow_missing_policies,
            )
            try:
                # -- backend first: the configs point at it; unreachable → no load at all
                step = "provisioning"
                display(Progress(step="provisioning", message="backend"))
                backend_proc, backend_url, reset_url = start_plan_backend(
                    supervisor, plan, api, run_dir
                )
                origin = _origin(backend_url)
                ceiling_proc, ceiling_url = (
                    _start_ceiling(supervisor, run, engine_name, outcome)
                    if options.ceiling
                    else (None, None)
                )
                # -- render (ports are chosen here, so the load engine can start right away)
                step = "rendered"
                excluded = policy_exclusions(plan.gateways, plan.policies)
                for gw, reason in excluded.items():
                    if options.allow_missing_policies:
                        outcome.notes.append(f"{gw}: run WITHOUT its policies: {reason}")
                    else:
                        run.target_failed(gw, reason)
                        outcome.notes.append(reason)
                gateways = [
                    g for g in plan.gateways if options.allow_missing_policies or g not in excluded
                ]
                failures = provisioner.render(
                    gateways,
                    api,
                    origin,
                    run_dir,
                    needed={w.operation_id for w in plan.workloads},
                )
                for gw, reason in failures.items():
                    run.target_failed(gw, reason)
                note_routes_left_out(run, outcome, provisioner.routes_left_out)
                for gw, reason in provisioner.unsupported.items():
                    run.target_failed(gw, f"unsupported here (cloud path only): {reason}")
                    outcome.notes.append(f"{gw}: runs only on the cloud path; not measured here")
                run.status(RunStatus.RENDERED)
                planned = provisioner.planned()
                urls = dict(planned)
                if plan.baseline:
                    urls[BASELINE] = backend_url
                if not urls:
                    raise RunError("no target can run here; see the reasons per gateway")
                compiled = compile_load(
                    plan,
                    api,
                    urls,
                    reset_url=reset_url,
                    seed=options.seed,
                    keep=options.phase_filter,
                    ceiling_url=ceiling_url,
                    skip_file=str((run_dir / SKIP_FILE).resolve()),
                )
                schedule = outcome.schedule = compiled.schedule
                run.update(
                    environment=_environment(engine.version(), plan, options, engine_name)
                    | {
                        "testers": options.testers,
                        "seed": schedule.seed,
                        "target_order": [list(o) for o in schedule.target_order],
                    }
                    | _layout_environment(layout)
                    | (
                        {"without_policies": excluded}
                        if excluded and options.allow_missing_policies
                        else {}
                    )
                )
                backend_pid = backend_proc.pid if backend_proc else None
                cpu_groups: dict[str, list[int]] = {}
                if backend_pid is not None:
                    cpu_groups["backend"] = [backend_pid]

                # -- provision, while the load engine starts (it waits for the go signal)
                def provision(hooks: _Hooks) -> None:
                    nonlocal step
                    step = "provisioning"
                    run.status(RunStatus.PROVISIONING)
                    for gw in planned:
                        display(Progress(step="provisioning", message=gw))
                    provisioned: Provisioned = provisioner.provision(list(planned))
                    for gw, reason in provisioned.failures.items():
                        run.target_failed(gw, reason)
                        hooks.skip(gw)
                    for gw, reason in provisioned.unsupported.items():
                        run.target_failed(gw, f"unsupported here (cloud path only): {reason}")
                        hooks.skip(gw)
                    for gw, endpoint in provisioned.endpoints.items():
                        cpu_groups[f"gw:{gw}"] = list(endpoint.pgids)
                    if not provisioned.endpoints and not plan.baseline:
                        raise RunError("no target could be started; see the reasons per gateway")
                    env = dict(run.record.environment)
                    env["boot_s"] = {
                        t: round(e.boot_s, 3) for t, e in provisioned.endpoints.items()
                    }
                    run.update(environment=env)
                    step = "loading"
                    run.status(RunStatus.LOADING)

                load_start = time.monotonic()
                hooks = _load(
                    run,
                    compiled,
                    provisioner,
                    supervisor,
                    cpu_groups,
                    backend_pid,
                    outcome,
                    provision,
                    engine_name,
                    ceiling_proc,
                )
                outcome.load_s = time.monotonic() - load_start
                if options.cross_check:
                    step = "loading"
                    _cross_check(
                        run,
                        plan,
                        api,
                        {t: u for t, u in urls.items() if t not in hooks.failed},
                        reset_url,
                        supervisor,
                        cpu_groups,
                        backend_pid,
                        options,
                        outcome,
                        engine_name,
                    )
            finally:
                display(Progress(step="teardown"))
                provisioner.teardown()
        # -- scoring (the scoring step of the results package plugs in here)
        step = "scoring"
        measured_targets = {m.target for m in run.measurements}
        if not run.measurements:
            raise RunError("no phase was measured")
        run.status(RunStatus.SCORING)
        _score(run, outcome)
        expected_targets = set(plan.targets)
        if (
            run.record.target_errors
            or measured_targets != expected_targets
            or any("partial" in m.flags for m in run.measurements)
        ):
            run.status(RunStatus.PARTIAL)
        else:
            run.status(RunStatus.DONE)
    except KeyboardInterrupt:
        with contextlib.suppress(GatebenchError, OSError):
            run.flag_tester_bound()
        run.status(
            RunStatus.PARTIAL if run.measurements else RunStatus.FAILED,
            failed_step=step,
            error="interrupted (Ctrl-C or SIGTERM); completed measurements kept",
        )
        outcome.wall_s = time.monotonic() - wall_start
        raise
    except Exception as exc:
        with contextlib.suppress(GatebenchError, OSError):
            run.flag_tester_bound()
        run.status(
            RunStatus.PARTIAL if run.measurements else RunStatus.FAILED,
            failed_step=step,
            error=str(exc),
        )
        raise
    finally:
        tokens.close()
    outcome.wall_s = time.monotonic() - wall_start
    return outcome


def _score(run: _Run, outcome: RunOutcome) -> None:
    """AGE scoring (the results package): through the store when there is one (the scores are
    stored with the run), else in memory; ``scores.json`` in the run folder either way."""
    from .report import build_report, score_run
    from .score import ScoreError

    run.flag_tester_bound()
    try:
        if run.store is not None:
            report = score_run(run.store, run.record.run_id)
        else:
            report = build_report(run.record, run.measurements)
    except ScoreError as exc:
        outcome.notes.append(f"not scored: {exc}")
        return
    outcome.report = report
    documents = report.summary.scores.to_documents()
    (run.run_dir / "scores.json").write_text(
        json.dumps(documents, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _check_engine_supports(engine_name: str, plan: Plan) -> None:
    """A plan validated for one engine may be run with another (``--engine``): refuse what it
    cannot run before anything starts."""
    for w in plan.workloads:
        inj = w.injection
        reason = injection_problem(engine_name, inj.kind, inj.duration, inj.requests)
        if reason is not None:
            raise RunError(f"workload {w.name!r}: {reason}")
    if plan.auth.jwt_private_key_env is not None:
        problem = token_pool_problem(engine_name, plan.auth.jwt_subjects)
        if problem is not None:
            raise RunError(f"auth.jwt.subjects: {problem}")


def _check_testers(testers: int, engine_name: str) -> None:
    from ._fanout import fanout_problem

    problem = fanout_problem(testers, engine_name)
    if problem is not None:
        raise RunError(problem)


def note_routes_left_out(run: _Run, outcome: RunOutcome, summaries: dict[str, str]) -> None:
    """Routes a gateway left out of its files (no workload uses them): a note, and a line of
    the report (the run record's environment keeps them)."""
    if not summaries:
        return
    outcome.notes.extend(summaries[gw] for gw in sorted(summaries))
    run.update(
        environment=dict(run.record.environment, routes_left_out=dict(sorted(summaries.items())))
    )


def _start_ceiling(
    supervisor: Supervisor, run: _Run, engine_name: str, outcome: RunOutcome
) -> tuple[Any, str | None]:
    """The ceiling server (gatebench.ceiling), or (None, None) with a note when it cannot run:
    the run goes on, and only the CPU accounting can flag ``tester-bound`` then."""
    from .ceiling import SERVER_LABEL, start_ceiling_server

    try:
        proc, url = start_ceiling_server(supervisor, run.run_dir / "ceiling")
    except GatebenchError as exc:
        note = f"the load engine's ceiling was not measured: {str(exc).splitlines()[0]}"
        outcome.notes.append(note)
        ceiling = Ceiling(engine_name, SERVER_LABEL, note=note)
        run.update(environment=dict(run.record.environment, ceiling=ceiling.to_dict()))
        return None, None
    return proc, url


def _pin(supervisor: Supervisor, plan: Plan, outcome: RunOutcome) -> CpuLayout:
    """The plan's ``cpus:`` on this machine (gatebench.pinning), handed to the supervisor
    before anything starts; why pinning could not be done goes in the run's notes."""
    layout = resolve_layout(plan.cpus, sorted(os.sched_getaffinity(0)))
    supervisor.pin(layout.cores)
    if layout.note:
        outcome.notes.append(f"cpus: {layout.note}")
    return layout


def _layout_environment(layout: CpuLayout) -> dict[str, Any]:
    """The layout as the run records it: a line for the report, the cores per role."""
    return {"cpus": layout.describe(), "cpu_affinity": layout.to_dict()}


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _environment(
    engine_version: str, plan: Plan, options: RunOptions, engine_name: str = "gatling"
) -> dict[str, Any]:
    resolution = ENGINE_RESOLUTION_MS.get(engine_name, 1.0)
    return {
        "engine": engine_version,
        "machine": f"{os.cpu_count()} cores, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "quick": options.quick,
        "repetitions": plan.repetitions,
        "resolution": (
            "Gatling records whole milliseconds"
            if resolution >= 1
            else f"{engine_name} records latencies to {resolution * 1000:g} µs"
        ),
        "note": (
            "on 2 cores every load generator but wrk uses more CPU than the server it "
            "loads: results measure the shared machine, not only the gateway"
            if (os.cpu_count() or 1) <= 4
            else ""
        ),
    }


class _Hooks:
    """The engine's callbacks: live progress, measurements as they complete, health checks."""

    def __init__(
        self,
        run: _Run,
        phases: dict[int, Phase],
        provisioner: Any,
        skip_file: Path,
        total: int,
        engine_name: str = "gatling",
        ceiling_proc: Any = None,
    ) -> None:
        self.run = run
        self.phases = phases
        self.provisioner = provisioner
        self.skip_file = skip_file
        self.total = total
        self.engine_name = engine_name
        self.ceiling_proc = ceiling_proc
        self.ceiling: Ceiling | None = None
        self.failed: set[str] = set(run.record.target_errors)
        self.completed: set[int] = set()
        self._last: tuple[int, int, float] | None = None
        self._rate = 0.0
        self._next_check = 0.0
        self.last_alive_ms: dict[str, float] = {}
        """Target → when a check last saw it alive (epoch ms, the clock of the phases)."""
        self.failures: dict[str, dict[str, Any]] = {}
        """Targets that failed during the load → repetition and failure window."""
        self.repetition = 0
        """The repetition of the phase that started last."""

    def on_event(self, event: EngineEvent) -> None:
        phase = self.phases.get(event.phase)
        if phase is None:
            return
        if event.kind in ("start", "end"):
            if event.kind == "start":
                self.repetition = phase.repetition
            self._check(phase.target)  # before and after every phase
        now = time.monotonic()
        if event.kind == "start":
            self._last = (event.phase, 0, now)
            self._rate = 0.0
        elif event.kind == "progress" and self._last is not None:
            last_phase, last_done, last_t = self._last
            if last_phase == event.phase and now > last_t:
                self._rate = (event.done - last_done) / (now - last_t)
            self._last = (event.phase, event.done, now)
        self.run.display(
            Progress(
                step="loading",
                phase=phase,
                phase_number=sorted(self.phases).index(event.phase) + 1,
                phases=self.total,
                done=event.done,
                rate=self._rate,
            )
        )

    def on_phase(self, result: PhaseResult) -> None:
        self.completed.add(result.phase)
        phase = self.phases.get(result.phase)
        if phase is None or not phase.measured or result.sample.requests == 0:
            return
        self._check(phase.target)  # the phase has ended: alive now means alive throughout
        failure = self.failures.get(phase.target)
        if phase.target in self.failed and failure is None:
            return  # failed before the load (config, boot): no phase of it counts
        if phase.target == CEILING_TARGET:
            self._record_ceiling(phase, result)
            return
        m = measurement_from(self.run.record.run_id, phase, result, engine=self.engine_name)
        # a phase that ended before the last check that saw its target alive is clean
        if failure is not None and result.end_ms > failure["last_alive_ms"]:
            m = replace(m, flags=(*m.flags, FAILED_TARGET_FLAG))
        self.run.put(m)

    def _check(self, target: str) -> None:
        """Is ``target`` alive? Remembers when it was last seen alive; the first time it is
        seen dead, records the failure (repetition, window), skips its remaining phases and
        marks it failed."""
        if target in (BASELINE, CEILING_TARGET) or target in self.failed or not self.provisioner:
            return
        now_ms = time.time() * 1000.0
        reason = self.provisioner.failure(target)
        if reason is None:
            self.last_alive_ms[target] = now_ms
            return
        self.failures[target] = {
            "repetition": self.repetition,
            "last_alive_ms": self.last_alive_ms.get(target, 0.0),
            "first_dead_ms": now_ms,
        }
        self.skip(target)
        self.run.update(environment=dict(self.run.record.environment, failures=self.failures))
        self.run.target_failed(target, reason)

    def on_merged(self, merged: MergedPhase) -> None:
        """A phase split across testers (gatebench._fanout): the measurement carries the
        merge's flags (``partial``, ``tester-bound``), each tester's share goes to
        ``testers.jsonl`` in the run folder."""
        result = merged.result
        self.completed.add(result.phase)
        phase = self.phases.get(result.phase)
        if phase is None:
            return
        with (self.run.run_dir / "testers.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"phase_id": phase.id, **merged.to_dict()}) + "\n")
        if not phase.measured or phase.target in self.failed or result.sample.requests == 0:
            return
        if phase.target == CEILING_TARGET:
            self._record_ceiling(phase, result)
            return
        self.run.put(
            merged_measurement(self.run.record.run_id, phase, merged, engine=self.engine_name)
        )

    def _record_ceiling(self, phase: Phase, result: PhaseResult) -> None:
        """The engine's ceiling for one workload, stored with the run at once."""
        from .ceiling import SERVER_LABEL

        if self.ceiling_proc is not None and not self.ceiling_proc.alive():
            return  # its requests failed fast: not a ceiling
        s = phase_stats(result.sample)
        base = self.ceiling or Ceiling(self.engine_name, SERVER_LABEL)
        point = CeilingPoint(s.throughput, s.p50, s.requests)
        self.ceiling = replace(base, workloads={**base.workloads, phase.workload: point})
        self.run.update(
            environment=dict(self.run.record.environment, ceiling=self.ceiling.to_dict())
        )

    def skip(self, target: str) -> None:
        """Skip the remaining phases of ``target`` (it failed)."""
        self.failed.add(target)
        self.skip_file.write_text("\n".join(sorted(self.failed)) + "\n", encoding="utf-8")

    def tick(self) -> None:
        now = time.monotonic()
        if now < self._next_check:
            return
        self._next_check = now + 0.2
        for target in sorted({p.target for p in self.phases.values()}):
            self._check(target)


def _load(
    run: _Run,
    compiled: CompiledLoad,
    provisioner: Any,
    supervisor: Supervisor,
    cpu_groups: dict[str, list[int]],
    backend_pid: int | None,
    outcome: RunOutcome,
    provision: Callable[[_Hooks], None],
    engine_name: str = "gatling",
    ceiling_proc: Any = None,
) -> _Hooks:
    """Start the load engine, provision while it starts (``provision``), then load; a crash
    is retried once with the phases not yet complete. Returns the hooks (what completed,
    which targets failed)."""
    engine = get_engine(engine_name)
    schedule, document = compiled.schedule, compiled.document
    skip_file = run.run_dir / SKIP_FILE
    skip_file.write_text("", encoding="utf-8")
    (run.run_dir / "workload.json").write_text(
        json.dumps(document, indent=1) + "\n", encoding="utf-8"
    )
    by_index = {p.index: p for p in schedule.phases}
    hooks = _Hooks(
        run, by_index, provisioner, skip_file, len(schedule.phases), engine_name, ceiling_proc
    )
    if hooks.failed:
        skip_file.write_text("\n".join(sorted(hooks.failed)) + "\n", encoding="utf-8")

    def target_groups(target: str) -> list[str]:
        groups = ["backend"] if backend_pid is not None else []
        return groups if target == BASELINE else [f"gw:{target}", *groups]

    if run.record.environment.get("testers", 1) > 1:
        _load_testers(
            run, document, hooks, supervisor, cpu_groups, target_groups, outcome, provision
        )
        return hooks
    remaining = document
    for attempt in (1, 2):
        result = engine.run(
            remaining,
            run.run_dir,
            hooks,
            supervisor=supervisor,
            cpu_groups=cpu_groups,
            target_groups=target_groups,
            name=engine.name if attempt == 1 else f"{engine.name}-retry",
            ready=(lambda: provision(hooks)) if attempt == 1 else None,
        )
        outcome.engine_runs.append(result)
        if result.control_failures:
            raise RunError(
                "the backend did not accept its reset (is it still running?): "
                + result.control_failures[0]
            )
        if not result.crashed:
            return hooks
        left = [p for p in remaining["phases"] if p["index"] not in hooks.completed]
        if not left:
            return hooks
        if attempt == 2:
            raise RunError(f"the load engine failed twice: {result.reason}")
        outcome.notes.append(
            f"the load engine crashed; retrying {len(left)} phase(s): {result.reason.splitlines()[0]}"
        )
        run.display(Progress(step="loading", message="load engine crashed; retrying once"))
        remaining = dict(remaining, phases=left)
    return hooks


def _load_testers(
    run: _Run,
    document: dict[str, Any],
    hooks: _Hooks,
    supervisor: Supervisor,
    cpu_groups: dict[str, list[int]],
    target_groups: Callable[[str], list[str]],
    outcome: RunOutcome,
    provision: Callable[[_Hooks], None],
) -> None:
    """The schedule split across several testers (gatebench._fanout); no retry."""
    from ._fanout import run_testers

    fan = run_testers(
        document,
        int(run.record.environment["testers"]),
        run.run_dir,
        hooks,
        supervisor=supervisor,
        cpu_groups=cpu_groups,
        target_groups=target_groups,
        ready=lambda: provision(hooks),
    )
    outcome.engine_runs.extend(fan.runs)
    outcome.notes.extend(fan.notes)
    for r in fan.runs:
        if r.control_failures:
            raise RunError(
                "the backend did not accept its reset (is it still running?): "
                + r.control_failures[0]
            )


class _CrossCheckHooks:
    """The second engine's phases: measurements collected, nothing stored per phase (the
    whole cross-check is stored with the run at the end)."""

    def __init__(self, run: _Run, phases: dict[int, Phase], engine_name: str) -> None:
        self.run = run
        self.phases = phases
        self.engine_name = engine_name
        self.measurements: list[Measurement] = []

    def on_event(self, event: EngineEvent) -> None:
        phase = self.phases.get(event.phase)
        if phase is not None and event.kind == "start":
            self.run.display(
                Progress(
                    step="loading",
                    message=f"cross-check ({self.engine_name}): {phase.label}",
                    phase=phase,
                    phase_number=sorted(self.phases).index(event.phase) + 1,
                    phases=len(self.phases),
                )
            )

    def on_phase(self, result: PhaseResult) -> None:
        phase = self.phases.get(result.phase)
        if phase is None or not phase.measured or result.sample.requests == 0:
            return
        self.measurements.append(
            measurement_from(self.run.record.run_id, phase, result, engine=self.engine_name)
        )

    def tick(self) -> None:
        pass


def _cross_check(
    run: _Run,
    plan: Plan,
    api: Api,
    urls: dict[str, str],
    reset_url: str | None,
    supervisor: Supervisor,
    cpu_groups: dict[str, list[int]],
    backend_pid: int | None,
    options: RunOptions,
    outcome: RunOutcome,
    engine_name: str,
) -> None:
    """A second engine re-measures, on the same targets, every workload it can run (wrk: the
    closed-model ones), for the plan's repetitions (at most CROSS_CHECK_REPETITIONS); its
    measurements are stored with the run (``environment.cross_check``) and in
    ``cross-check.jsonl``, never mixed with the run's own."""
    name = options.cross_check or ""
    record: dict[str, Any] = {"name": name, "measurements": []}
    if name == engine_name:
        record["note"] = f"the cross-check engine is the run's own ({name}): nothing to compare"
        run.update(environment=dict(run.record.environment, cross_check=record))
        return
    engine = get_engine(name)
    record["engine"] = engine.version()
    workloads = tuple(
        w
        for w in plan.workloads
        if injection_problem(name, w.injection.kind, w.injection.duration, w.injection.requests)
        is None
    )
    if not workloads or not urls:
        record["note"] = f"{name} can run none of this plan's workloads (closed model only)"
        outcome.notes.append(f"cross-check: {record['note']}")
        run.update(environment=dict(run.record.environment, cross_check=record))
        return
    repetitions = min(plan.repetitions, CROSS_CHECK_REPETITIONS)
    check_plan = replace(plan, workloads=workloads, repetitions=repetitions)
    seed = None if options.seed is None else options.seed + 1
    compiled = compile_load(check_plan, api, urls, reset_url=reset_url, seed=seed)
    schedule, document = compiled.schedule, compiled.document
    hooks = _CrossCheckHooks(run, {p.index: p for p in schedule.phases}, name)

    def target_groups(target: str) -> list[str]:
        groups = ["backend"] if backend_pid is not None else []
        return groups if target == BASELINE else [f"gw:{target}", *groups]

    try:
        result = engine.run(
            document,
            run.run_dir,
            hooks,
            supervisor=supervisor,
            cpu_groups=cpu_groups,
            target_groups=target_groups,
            name=f"cross-check-{name}",
        )
    except GatebenchError as exc:  # the run's own measurements stand without it
        result = EngineRun(crashed=True, reason=str(exc))
    outcome.engine_runs.append(result)
    record.update(
        repetitions=repetitions,
        workloads=[w.name for w in workloads],
        seed=schedule.seed,
        measurements=[m.to_dict() for m in hooks.measurements],
    )
    if result.crashed or result.control_failures:
        reason = result.reason or "; ".join(result.control_failures)
        record["note"] = f"the cross-check stopped early: {reason.splitlines()[0]}"
        outcome.notes.append(f"cross-check: {record['note']}")
    with (run.run_dir / "cross-check.jsonl").open("w", encoding="utf-8") as fh:
        for m in hooks.measurements:
            fh.write(json.dumps(m.to_dict()) + "\n")
    run.update(environment=dict(run.record.environment, cross_check=record))


__all__ = [
    "Progress",
    "RunOptions",
    "RunOutcome",
    "run_benchmark",
]
