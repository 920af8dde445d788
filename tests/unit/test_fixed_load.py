"""The fixed kind's ``load`` stage after a load engine crash: the retry runs the phases not yet
complete after the warm-ups the crashed engine had run (the engine's own, and the warm-up of
the target whose phase was cut), so that its phases are measured as the others were."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gatebench.core.plan import load_plan
from gatebench.core.spec import read_spec
from gatebench.core.workload import compile_load
from gatebench.kinds.fixed.load import Load, retry_phases
from gatebench.run.ports import Backend, EngineRun
from gatebench.run.stages.parse import Parsed
from paths import EXAMPLES


def _document(*, engine_warmup: bool = True) -> dict[str, Any]:
    """The petstore example's workload document: three workloads (list, show, create), each
    target's warm-up (one phase per workload) then its measured phases; the engine's own
    warm-up first (indexes 0-2) when ``engine_warmup``."""
    result = read_spec(EXAMPLES / "petstore" / "openapi.yaml")
    assert result.api is not None
    plan = load_plan(result)
    urls = {t: f"http://127.0.0.1:{9000 + i}" for i, t in enumerate(plan.targets)}
    warm = ("http://127.0.0.1:8999", 20.0) if engine_warmup else None
    return compile_load(plan, result.api, urls, seed=1, engine_warmup=warm).document


def _where(phases: list[dict[str, Any]]) -> list[tuple[int, str, int, bool]]:
    return [(p["index"], p["target"], p["repetition"], p["measured"]) for p in phases]


def test_a_retry_runs_the_engine_warmup_and_the_cut_targets_warmup_again() -> None:
    phases = _document()["phases"]
    # nginx's warm-up of repetition 1 (9-11) and its first measured phase (12) had completed;
    # its second (13) was cut
    retry = retry_phases(phases, set(range(13)))
    assert _where(retry.phases)[:7] == [
        (0, "baseline", 0, False),
        (1, "baseline", 0, False),
        (2, "baseline", 0, False),
        (9, "nginx", 1, False),
        (10, "nginx", 1, False),
        (11, "nginx", 1, False),
        (13, "nginx", 1, True),
    ]
    assert [p["index"] for p in retry.phases][6:] == list(range(13, 75))
    assert retry.rerun == (
        "running the engine's own warm-up and nginx's warm-up of repetition 1 again"
    )


def test_a_warmup_cut_halfway_runs_whole_and_without_an_engine_warmup_only_it() -> None:
    phases = _document(engine_warmup=False)["phases"]
    # haproxy's warm-up of repetition 2 (30-32 here) was cut at its second workload
    cut = next(p["index"] for p in phases if (p["target"], p["repetition"]) == ("haproxy", 2))
    retry = retry_phases(phases, set(range(cut + 1)))
    assert [p["index"] for p in retry.phases] == list(range(cut, len(phases)))
    assert retry.rerun == "running haproxy's warm-up of repetition 2 again"


def test_the_cut_phase_is_the_one_after_the_last_complete_not_a_skipped_targets() -> None:
    phases = _document()["phases"]
    # caddy failed before the load: its phases (15-20) were skipped, never complete; the
    # crash cut haproxy's first measured phase (24) after its warm-up (21-23)
    done = set(range(15)) | {21, 22, 23}
    retry = retry_phases(phases, done)
    # caddy's phases stay in (the engine skips them again), haproxy's warm-up runs again
    assert [p["index"] for p in retry.phases] == [0, 1, 2, *range(15, 75)]
    assert retry.rerun == (
        "running the engine's own warm-up and haproxy's warm-up of repetition 1 again"
    )


def test_a_crash_between_two_targets_reruns_only_the_engine_warmup() -> None:
    phases = _document()["phases"]
    # nginx's phases (9-14) were complete; caddy's warm-up (15) had not started
    retry = retry_phases(phases, set(range(15)))
    assert [p["index"] for p in retry.phases] == [0, 1, 2, *range(15, 75)]
    assert retry.rerun == "running the engine's own warm-up again"


def test_a_crash_during_the_engine_warmup_runs_it_again_whole() -> None:
    retry = retry_phases(_document()["phases"], {0})
    assert [p["index"] for p in retry.phases] == list(range(75))
    assert retry.rerun == "running the engine's own warm-up again"


# -- the stage, with an engine that crashes once: a mock, since a real engine's crash cannot be
# placed between two given phases


@dataclass
class CrashingEngine:
    completes: set[int]
    """The phases the first run completes before it crashes."""
    documents: list[dict[str, Any]] = field(default_factory=list)
    name: str = "gatling"

    def run(self, document: dict[str, Any], run_dir: Path, hooks: Any, **_: Any) -> EngineRun:
        self.documents.append(document)
        if len(self.documents) == 1:
            hooks.completed |= self.completes
            return EngineRun(crashed=True, reason="Gatling exited with code -9 after 31.2 s")
        hooks.completed |= {p["index"] for p in document["phases"]}
        return EngineRun()


class Context:
    """What ``Load.drive`` reads of a run's context: the machine's engine, the parsed plan's
    engine name, the backend's process, the outcome's notes and engine runs, the journal."""

    def __init__(self, engine: CrashingEngine, run_dir: Path) -> None:
        self.machine = SimpleNamespace(engine=lambda name: engine)
        self.run_dir = run_dir
        self.cpu_groups = None
        self.outcome = SimpleNamespace(notes=[], engine_runs=[])
        self.journal = SimpleNamespace(
            record=SimpleNamespace(environment={}), display=lambda progress: None
        )
        self.parts = {Parsed: SimpleNamespace(engine="gatling"), Backend: SimpleNamespace(pid=1)}

    def get(self, kind: type) -> Any:
        return self.parts[kind]

    def note(self, line: str) -> None:
        self.outcome.notes.append(line)


def test_the_retried_engine_warms_up_before_the_cut_phase_and_the_note_says_so(
    tmp_path: Path,
) -> None:
    engine = CrashingEngine(set(range(13)))
    ctx = Context(engine, tmp_path)
    Load().drive(ctx, SimpleNamespace(completed=set()), _document())  # type: ignore[arg-type]
    retried = engine.documents[1]["phases"]
    assert [p["index"] for p in retried] == [0, 1, 2, 9, 10, 11, *range(13, 75)]
    assert ctx.outcome.notes == [
        "the load engine crashed; retrying 62 phases after running the engine's own warm-up "
        "and nginx's warm-up of repetition 1 again: Gatling exited with code -9 after 31.2 s"
    ]
