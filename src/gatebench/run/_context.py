"""The run context every stage shares: the input (API, plan, options), the run's journal
(record, folder, store, display), what the run keeps for its caller (:class:`RunOutcome`),
the process supervisor, what teardown closes, and the stages' outputs by type."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gatebench.core.errors import RunError
from gatebench.core.ir import Api
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.core.plan import Plan
from gatebench.core.trust import left_out_of
from gatebench.core.workload import Phase, Schedule
from gatebench.run._journal import Progress, RunJournal
from gatebench.run.ports import EngineRun, Machine

T = TypeVar("T")


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
    engine_warmup: bool = True
    """Let the engine warm itself against the backend before the first phase (its JIT;
    ``core.capabilities.ENGINE_WARMUP_S``); never in the quick profile (docs/trust.md)."""
    cross_check: str | None = None
    """A second engine that re-measures the closed-model workloads before teardown."""
    testers: int = 1
    """Load generators per phase, each on a network namespace of its own (gatebench.local._fanout)."""
    allow_missing_policies: bool = False
    """Run a gateway that cannot apply the plan's policies without them (marked in the notes)
    instead of leaving it out."""


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


class RunContext:
    """One run while it goes. Stages read their inputs with :meth:`get` and return their
    output; the executor stores it (:meth:`put`) and owns status and teardown."""

    def __init__(
        self,
        api: Api,
        plan: Plan,
        options: RunOptions,
        journal: RunJournal,
        machine: Machine,
        status_rule: Callable[[RunContext], RunStatus] | None = None,
    ) -> None:
        self.api = api
        self.plan = plan
        """The plan as run (``--quick``, ``--repetitions`` applied)."""
        self.options = options
        self.journal = journal
        self.outcome = RunOutcome(journal.record, journal.measurements, journal.run_dir)
        self.status_rule = status_rule or measured_status
        """How the run's final status is decided, by its kind (:func:`measured_status` by
        default)."""
        self.machine = machine
        """Where the run's processes run (``gatebench.run.ports.Machine``)."""
        self.resources = contextlib.ExitStack()
        """What teardown closes, last in first out: the machine's session (entered first, so
        it stops every process the run started, last), then what stages enter (a token file,
        the gateways)."""
        self.cpu_groups: dict[str, list[int]] = {}
        """Process groups whose CPU each phase accounts: ``backend``, ``gw:<name>``."""
        self.ready: Callable[[], None] = lambda: None
        """Set by the executor while a stage runs that the previous one overlaps: the stage
        calls it when the overlapped work should happen (the engine waits for the gateways)."""
        self._outputs: dict[type, object] = {}
        self._torn_down = False

    @property
    def run_dir(self) -> Path:
        return self.journal.run_dir

    @property
    def record(self) -> RunRecord:
        return self.journal.record

    def note(self, line: str) -> None:
        """A line for the run's notes (printed after the tables)."""
        self.outcome.notes.append(line)

    def get(self, kind: type[T]) -> T:
        """The output of type ``kind`` an earlier stage gave."""
        value = self.find(kind)
        if value is None:
            raise RunError(f"no stage of this run gave {kind.__name__}")
        return value

    def find(self, kind: type[T]) -> T | None:
        """The output of type ``kind`` an earlier stage gave, None when none did (yet)."""
        value = self._outputs.get(kind)
        return value if isinstance(value, kind) else None

    def put(self, value: object) -> None:
        self._outputs[type(value)] = value

    def teardown(self) -> None:
        """Close everything the run opened (shown as ``teardown`` once a stage has given
        something); safe to call again."""
        if self._outputs and not self._torn_down:
            self.journal.display(Progress(step="teardown"))
        self._torn_down = True
        self.resources.close()

    def final_status(self) -> RunStatus:
        """The run's status once every stage ran: its kind's rule (``status_rule``)."""
        return self.status_rule(self)


def measured_status(ctx: RunContext) -> RunStatus:
    """The rule of a run that measures workload phases: ``partial`` when a target failed, was
    not measured or a phase was partial, else ``done``. A gateway the plan leaves out before
    the run (``environment.left_out``: a policy or deployment it cannot apply) neither
    failed nor was expected: it is said in the report, and the run can still be ``done``."""
    measured = {m.target for m in ctx.journal.measurements}
    left = left_out_of(ctx.record.environment)
    if (
        set(ctx.record.target_errors) - set(left)
        or measured != set(ctx.plan.targets) - set(left)
        or any("partial" in m.flags for m in ctx.journal.measurements)
    ):
        return RunStatus.PARTIAL
    return RunStatus.DONE


__all__ = ["RunContext", "RunOptions", "RunOutcome", "measured_status"]
