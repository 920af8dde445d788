"""A run as named stages (gatebench.run): the local lists and the cloud workflow name the
same stages in the same order, a stage on one path only says why, and the executor owns the
status, the failed step and teardown (shown here with stages that start no process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from gatebench.core.errors import RunError
from gatebench.core.model import RunRecord, RunStatus
from gatebench.core.plan import load_plan
from gatebench.core.spec import read_spec
from gatebench.kinds.capacity.kind import CAPACITY_SEARCH, capacity_search
from gatebench.kinds.fixed import FIXED_WORKLOAD, fixed_workload
from gatebench.kinds.registry import CLOUD_ONLY
from gatebench.local.machine import LocalMachine
from gatebench.local.procs import Supervisor
from gatebench.run import RunContext, RunJournal, RunOptions, Stage, check_order, execute
from gatebench.store import SqliteStore
from paths import DATA, EXAMPLES, ROOT

WORKFLOW = ROOT / "workflows" / "benchmark.yaml"
KINDS = {
    "fixed": RunOptions(),
    "testers": RunOptions(testers=2),
    "cross-check": RunOptions(cross_check="wrk"),
    "both": RunOptions(testers=2, cross_check="wrk"),
}


def workflow_stages(document: Any) -> list[str]:
    """The workflow's stages in order: each value it assigns to ``stage`` (the step a failure
    is recorded at), then ``teardown``, the step every way out of the pipeline goes through."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "stage" and isinstance(value, str):
                    found.append(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    steps = document["main"]["steps"]
    walk(steps)
    names = [next(iter(step)) for step in steps]
    assert names.index("teardown") > names.index("run_pipeline")
    return [*found, "teardown"]


def compared(local: list[Stage], cloud: list[str]) -> tuple[list[str], list[str]]:
    """Both lists without the stages one path declares as its own and without the stages
    declared to sit elsewhere on the cloud path (each checked to be there)."""
    elsewhere = {s.name for s in local if s.cloud_order}
    assert elsewhere <= set(cloud), f"declared elsewhere on the cloud path but missing: {elsewhere}"
    mine = [s.name for s in local if not s.local_only and s.name not in elsewhere]
    theirs = [n for n in cloud if n not in CLOUD_ONLY and n not in elsewhere]
    return mine, theirs


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_local_stages_and_the_cloud_workflow_name_the_same_stages_in_order(kind: str) -> None:
    stages = list(fixed_workload(KINDS[kind]))
    cloud = workflow_stages(yaml.safe_load(WORKFLOW.read_text(encoding="utf-8")))
    assert cloud == ["parse", "render", "provision", "load", "score", "export", "teardown"]
    mine, theirs = compared(stages, cloud)
    assert mine == theirs
    assert set(CLOUD_ONLY) <= set(cloud)


def live_kinds() -> dict[str, list[Stage]]:
    """The route-scale run (two sizes, three) and the change-under-load run."""
    from gatebench.core.scaleplan import ChangeSpec
    from gatebench.kinds._live._stages import ScaleRequest
    from gatebench.kinds.change import change_stages
    from gatebench.kinds.scale import scale_stages

    return {
        "scale-2": list(scale_stages(ScaleRequest(("nginx",), sizes=(10, 100)))),
        "scale-3": list(scale_stages(ScaleRequest(("nginx",), sizes=(10, 100, 1000)))),
        "change-under-load": list(
            change_stages(ScaleRequest(("nginx",), change=ChangeSpec(10, 10)))
        ),
    }


@pytest.mark.parametrize("kind", ["scale-2", "scale-3", "change-under-load"])
def test_route_scale_and_change_under_load_name_the_workflows_stages_in_order(kind: str) -> None:
    """The cloud path runs these kinds with the same workflow (docs/cloud.md, "Route scale and
    changes under load"): its render renders every size, its load measures every size. A later
    size's render, provision and load are that, locally only; a size's teardown is the VMs'
    teardown, after score, on the cloud path; the echo backends are the backend VM's."""
    stages = live_kinds()[kind]
    cloud = workflow_stages(yaml.safe_load(WORKFLOW.read_text(encoding="utf-8")))
    mine, theirs = compared(stages, cloud)
    assert mine == theirs == ["parse", "render", "provision", "load", "score"]
    check_order(stages)
    only_here = {type(s).__name__: s.local_only for s in stages if s.local_only}
    expected = {"StartEchoBackends"}
    if kind != "change-under-load":
        expected |= {"GrowRenderNext", "GrowProvisionNext", "GrowLoadNext"}
    assert set(only_here) == expected
    assert all(len(why) > 40 for why in only_here.values())
    teardowns = [s for s in stages if s.name == "teardown"]
    assert teardowns and all(len(s.cloud_order) > 40 for s in teardowns)


def test_the_comparison_sees_a_stage_out_of_order() -> None:
    document = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    text = json.dumps(document).replace('"stage": "render"', '"stage": "RENDER"')
    text = text.replace('"stage": "provision"', '"stage": "render"')
    text = text.replace('"stage": "RENDER"', '"stage": "provision"')
    mine, theirs = compared(list(FIXED_WORKLOAD), workflow_stages(json.loads(text)))
    assert mine != theirs


def test_a_stage_on_one_path_only_says_why() -> None:
    stages = {s.name: s for kind in KINDS.values() for s in fixed_workload(kind)}
    only_here = sorted(n for n, s in stages.items() if s.local_only)
    assert only_here == ["backend", "cross_check"]
    assert all(len(stages[n].local_only) > 40 for n in only_here)
    assert stages["teardown"].cloud_order
    assert all(len(why) > 40 for why in CLOUD_ONLY.values())


def test_testers_and_the_cross_check_are_other_lists_not_branches() -> None:
    names = {
        k: [f"{s.name}:{type(s).__name__}" for s in fixed_workload(o)] for k, o in KINDS.items()
    }
    assert names["fixed"] == [
        "parse:Parse",
        "backend:StartBackend",
        "render:Render",
        "provision:Provision",
        "load:Load",
        "teardown:Teardown",
        "score:Score",
    ]
    assert names["testers"] == [n.replace("load:Load", "load:LoadSplit") for n in names["fixed"]]
    at = names["fixed"].index("load:Load") + 1
    assert names["cross-check"] == [
        *names["fixed"][:at],
        "cross_check:CrossCheck",
        *names["fixed"][at:],
    ]
    for options in KINDS.values():
        check_order(fixed_workload(options))


def test_the_capacity_search_is_a_list_of_its_own_with_the_same_names() -> None:
    """Three stages replaced (parse, load, score), none added: the cloud workflow's names and
    order hold for it too, and ``--testers N`` does not change the list."""
    names = [f"{s.name}:{type(s).__name__}" for s in CAPACITY_SEARCH]
    assert names == [
        "parse:CapacityParse",
        "backend:StartBackend",
        "render:Render",
        "provision:Provision",
        "load:CapacityLoad",
        "teardown:Teardown",
        "score:CapacityScore",
    ]
    cloud = workflow_stages(yaml.safe_load(WORKFLOW.read_text(encoding="utf-8")))
    mine, theirs = compared(list(CAPACITY_SEARCH), cloud)
    assert mine == theirs
    assert capacity_search(RunOptions(testers=3)) == CAPACITY_SEARCH
    check_order(CAPACITY_SEARCH)


# -- the executor, with stages that start no process -------------------------------------------


class Events(list[str]):
    pass


class Gave:
    pass


class Step(Stage):
    """A stage that records what happens; ``fail`` raises inside it."""

    needs: ClassVar[tuple[type, ...]] = ()

    def __init__(
        self,
        name: str,
        step: RunStatus,
        events: Events,
        *,
        moves: Any = None,
        fail: BaseException | None = None,
        calls_ready: bool = False,
        overlaps_next: bool = False,
        gives: type | None = None,
    ) -> None:
        self.name = name
        self.step = step
        self.moves = moves
        self.events = events
        self.fail = fail
        self.calls_ready = calls_ready
        self.overlaps_next = overlaps_next
        self.gives = gives

    def run(self, ctx: RunContext) -> object | None:
        self.events.append(f"{self.name} starts at {ctx.record.status}")
        ctx.resources.callback(self.events.append, f"{self.name} torn down")
        if self.calls_ready:
            ctx.ready()
        if self.fail is not None:
            raise self.fail
        return Gave() if self.gives is Gave else None


def _context(tmp_path: Path) -> RunContext:
    result = read_spec(EXAMPLES / "petstore" / "openapi.yaml")
    assert result.api is not None
    plan = load_plan(result)
    record = RunRecord("r", "file:///petstore", "0" * 64)
    store = SqliteStore(tmp_path / "gatebench.sqlite")
    journal = RunJournal(record, tmp_path / "r", store, lambda progress: None)
    return RunContext(result.api, plan, RunOptions(), journal, LocalMachine(Supervisor()))


def _saved(tmp_path: Path) -> dict[str, Any]:
    """The run as its folder and its store hold it (the same, but for the store's history)."""
    saved: dict[str, Any] = json.loads((tmp_path / "r" / "run.json").read_text())
    with SqliteStore(tmp_path / "gatebench.sqlite") as store:
        stored = store.get_run("r")
    assert stored is not None
    assert (stored.status, stored.failed_step) == (saved["status"], saved["failed_step"])
    times = stored.status_times
    return {**saved, "status_times": sorted(times, key=times.__getitem__)}


def test_the_executor_moves_the_status_and_runs_an_overlapped_stage_inside_the_next(
    tmp_path: Path,
) -> None:
    events = Events()
    stages = [
        Step("parse", RunStatus.PARSED, events, moves="end"),
        Step("provision", RunStatus.PROVISIONING, events, moves="start", overlaps_next=True),
        Step("load", RunStatus.LOADING, events, moves="start", calls_ready=True, gives=Gave),
        Step("score", RunStatus.SCORING, events, moves="start"),
    ]
    ctx = _context(tmp_path)
    outcome = execute(stages, ctx)
    assert events == [
        "parse starts at received",
        "load starts at parsed",
        "provision starts at provisioning",
        "score starts at scoring",
        "score torn down",
        "provision torn down",
        "load torn down",
        "parse torn down",
    ]
    assert isinstance(ctx.get(Gave), Gave)
    saved = _saved(tmp_path)
    assert saved["status_times"] == [
        "parsed",
        "provisioning",
        "loading",
        "scoring",
        "partial",
    ]
    # nothing was measured: the run is partial, with no failed step
    assert (saved["status"], saved["failed_step"]) == ("partial", None)
    assert outcome.record.status == RunStatus.PARTIAL


def test_a_failure_is_recorded_at_the_innermost_stage_after_teardown(tmp_path: Path) -> None:
    events = Events()
    ctx = _context(tmp_path)
    stages = [
        Step(
            "provision",
            RunStatus.PROVISIONING,
            events,
            moves="start",
            overlaps_next=True,
            fail=RunError("no target could be started"),
        ),
        Step("load", RunStatus.LOADING, events, moves="start", calls_ready=True),
    ]
    seen_at_teardown: list[str] = []
    ctx.resources.callback(lambda: seen_at_teardown.append(str(ctx.record.status)))
    with pytest.raises(RunError, match=r"^no target could be started$"):
        execute(stages, ctx)
    assert seen_at_teardown == ["provisioning"]  # torn down before the failure was recorded
    saved = _saved(tmp_path)
    assert (saved["status"], saved["failed_step"]) == ("failed", "provisioning")
    assert "loading" not in saved["status_times"]


def test_a_refused_check_fails_the_run_at_its_first_stage_before_any_stage_runs(
    tmp_path: Path,
) -> None:
    events = Events()

    class Refuses(Step):
        def check(self, ctx: RunContext) -> None:
            raise RunError("--testers 2: only the gatling engine runs as several testers")

    stages = [
        Step("parse", RunStatus.PARSED, events, moves="end"),
        Refuses("load", RunStatus.LOADING, events, moves="start"),
    ]
    with pytest.raises(RunError, match=r"^--testers 2"):
        execute(stages, _context(tmp_path))
    assert events == []
    saved = _saved(tmp_path)
    assert (saved["status"], saved["failed_step"]) == ("failed", "parsed")


def test_an_interrupted_run_is_recorded_at_the_stage_it_was_in(tmp_path: Path) -> None:
    events = Events()
    stages = [
        Step("parse", RunStatus.PARSED, events, moves="end"),
        Step("load", RunStatus.LOADING, events, moves="start", fail=KeyboardInterrupt()),
    ]
    with pytest.raises(KeyboardInterrupt):
        execute(stages, _context(tmp_path))
    saved = _saved(tmp_path)
    assert (saved["status"], saved["failed_step"]) == ("failed", "loading")
    assert saved["error"] == "interrupted (Ctrl-C or SIGTERM)"  # nothing measured, nothing kept
    assert events[-2:] == ["load torn down", "parse torn down"]


def test_a_stage_list_that_reads_what_no_earlier_stage_gives_is_refused() -> None:
    events = Events()

    class Reads(Step):
        needs: ClassVar[tuple[type, ...]] = (Gave,)

    with pytest.raises(RunError, match=r"^stage 'score' needs Gave, which no earlier stage gives$"):
        check_order([Reads("score", RunStatus.SCORING, events)])
    check_order(
        [
            Step("load", RunStatus.LOADING, events, gives=Gave),
            Reads("score", RunStatus.SCORING, events),
        ]
    )
    with pytest.raises(RunError, match="overlaps the next stage, and there is none"):
        check_order([Step("provision", RunStatus.PROVISIONING, events, overlaps_next=True)])


def test_render_keeps_what_the_run_recorded_before_it(tmp_path: Path) -> None:
    """The environment render records (engine, machine, seed, order, cores) is added to what
    earlier stages and render itself recorded: a ceiling that could not be measured, the
    routes a gateway left out of its files."""
    from gatebench.core.fairness import local_cpu_policy
    from gatebench.core.pinning import resolve_layout
    from gatebench.core.plan import build_plan
    from gatebench.core.trust import Ceiling
    from gatebench.run.stages.backend import Backend
    from gatebench.run.stages.parse import Parsed
    from gatebench.run.stages.render import Render

    api = read_spec(DATA / "adversarial" / "templates.yaml").api
    assert api is not None
    plan = build_plan(
        {
            "gateways": ["krakend"],
            "workloads": [{"name": "a", "operation": "aXc", "injection": {"sequential": 10}}],
        },
        api,
    )
    journal = RunJournal(RunRecord("r", "x", "0" * 64), tmp_path / "r", None, lambda p: None)
    ctx = RunContext(api, plan, RunOptions(), journal, LocalMachine(Supervisor()))
    not_measured = Ceiling("gatling", "nginx", note="the load engine's ceiling was not measured")
    journal.environment(ceiling=not_measured.to_dict())
    layout = resolve_layout(plan.cpus, [0, 1])
    ctx.put(Parsed(plan, "gatling", plan.policies))
    cpu = local_cpu_policy(layout, [0, 1])
    ctx.put(
        Backend("http://127.0.0.1:9", "http://127.0.0.1:9", None, None, layout, cpu, None, None)
    )
    try:
        Render().run(ctx)
    finally:
        ctx.teardown()
    environment = json.loads((tmp_path / "r" / "run.json").read_text())["environment"]
    assert environment["routes_left_out"] == {
        "krakend": "krakend: 4 of 10 routes left out (it cannot express them and no workload "
        "uses them)"
    }
    assert environment["ceiling"] == not_measured.to_dict()
    assert {"engine", "seed", "target_order", "cpus"} <= set(environment)
    # The cores every gateway was given, and each gateway's own setting for them.
    assert environment["cpu_policy"]["cores"] == 1
    assert environment["cpu_policy"]["pinned"] == [1]
    assert environment["gateway_cpu"] == {"krakend": "GOMAXPROCS=1"}


def test_a_signal_while_a_measurement_is_written_finds_it_in_the_file_the_store_and_the_list(
    tmp_path: Path,
) -> None:
    """A SIGTERM that comes while a phase is written is delivered once the run's list holds
    it too: the rewrite at the run's end (tester-bound flags) then keeps it in the file."""
    import os
    import signal

    from synthetic import synthetic_run

    done, measurements = synthetic_run(repetitions=2)
    run = RunRecord(done.run_id, "file:///x", "0" * 64)

    class Stop(Exception):
        pass

    def stop(signum: int, frame: object) -> None:
        raise Stop

    class Signalled(SqliteStore):
        def put_measurement(self, m: Any) -> None:
            super().put_measurement(m)
            if len(self.measurements(m.run_id)) == 2:
                os.kill(os.getpid(), signal.SIGTERM)

    store = Signalled(tmp_path / "gatebench.sqlite")
    journal = RunJournal(run, tmp_path / "r", store, lambda progress: None)
    old = signal.signal(signal.SIGTERM, stop)
    try:
        journal.put(measurements[0])
        with pytest.raises(Stop):
            journal.put(measurements[1])
    finally:
        signal.signal(signal.SIGTERM, old)
    lines = (tmp_path / "r" / "measurements.jsonl").read_text().splitlines()
    assert lines == [json.dumps(m.to_dict()) for m in measurements[:2]]
    assert journal.measurements == measurements[:2]
    assert len(store.measurements(run.run_id)) == 2


def test_the_folder_shows_a_status_only_once_the_store_holds_it(tmp_path: Path) -> None:
    """Each status and record update reaches the store before run.json: a ``kill -9`` between
    the two leaves the folder a step behind the store (it is settled from the store), never
    ahead of it (found by the kill -9 teardown test: run.json said provisioning, the store
    rendered)."""
    seen: list[tuple[str, str]] = []
    folder = tmp_path / "r"

    def on_disk() -> str:
        return str(json.loads((folder / "run.json").read_text())["status"])

    class Watched(SqliteStore):
        def set_status(self, run_id: str, status: RunStatus, **fields: Any) -> Any:
            seen.append((status.value, on_disk()))
            return super().set_status(run_id, status, **fields)

        def update_run(self, run_id: str, **fields: Any) -> Any:
            seen.append((sorted(fields)[0], on_disk()))
            return super().update_run(run_id, **fields)

    store = Watched(tmp_path / "gatebench.sqlite")
    journal = RunJournal(RunRecord("r", "x", "0" * 64), folder, store, lambda p: None)
    journal.status(RunStatus.RENDERED)
    journal.status(RunStatus.PROVISIONING)
    journal.environment(kernel="k")
    assert seen == [
        ("rendered", "received"),
        ("provisioning", "rendered"),
        ("environment", "provisioning"),
    ]
    assert on_disk() == "provisioning"
    assert store.get_run("r").environment == {"kernel": "k"}  # type: ignore[union-attr]


def test_a_measurement_the_store_refuses_is_in_neither_place(tmp_path: Path) -> None:
    """The store finds its disk full on the third phase: the file keeps the two before it,
    as the store does, and the run's end is still recorded (with the space held back)."""
    from gatebench.core.errors import NoSpaceLeft
    from gatebench.store._disk import mount_point, no_space
    from synthetic import synthetic_run

    done, measurements = synthetic_run(repetitions=2)
    run = RunRecord(done.run_id, "file:///x", "0" * 64)

    class FillsUp(SqliteStore):
        def put_measurement(self, m: Any) -> None:
            if len(self.measurements(m.run_id)) == 2:
                raise no_space(self.path, f"the result store {self.path}")
            super().put_measurement(m)

    store = FillsUp(tmp_path / "gatebench.sqlite")
    journal = RunJournal(run, tmp_path / "r", store, lambda progress: None)
    assert (tmp_path / "r" / ".reserve").stat().st_size == 1 << 20
    journal.put(measurements[0])
    journal.put(measurements[1])
    with pytest.raises(NoSpaceLeft) as info:
        journal.put(measurements[2])
    assert str(info.value) == (
        f"no space left on {mount_point(tmp_path)} while writing the result store {store.path}"
    )
    lines = (tmp_path / "r" / "measurements.jsonl").read_text().splitlines()
    assert lines == [json.dumps(m.to_dict()) for m in measurements[:2]]
    assert journal.measurements == measurements[:2]
    journal.finish(RunStatus.PARTIAL, failed_step="loading", error="no space left on ...")
    assert not (tmp_path / "r" / ".reserve").exists()
    assert store.get_run(run.run_id).status == RunStatus.PARTIAL  # type: ignore[union-attr]
