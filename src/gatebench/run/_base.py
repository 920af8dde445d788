"""What a stage is: a named step of a run with declared inputs and output.

A stage reads what earlier stages gave from the run context (``ctx.get(Type)``), does one
job, and returns what it adds (one value, stored under its type; or None). It never reaches
into another stage's locals. Everything else is the executor's (:mod:`._executor`): the
lifecycle status, the failed step, timing, teardown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar, Literal

from gatebench.core.errors import RunError
from gatebench.core.model import RunStatus

if TYPE_CHECKING:
    from gatebench.run._context import RunContext


class Stage:
    """One step of a run. Subclasses set the class attributes and implement :meth:`run`."""

    name: ClassVar[str]
    """The step's name, the same as the cloud workflow's (``workflows/benchmark.yaml``)."""
    step: ClassVar[RunStatus]
    """The lifecycle step the stage belongs to: a failure inside it is recorded there."""
    moves: ClassVar[Literal["start", "end"] | None] = None
    """When the executor moves the run to :attr:`step`: as the stage starts, once it has
    finished, or never (a stage that works ahead of its step, like the local backend)."""
    needs: ClassVar[tuple[type, ...]] = ()
    """The outputs of earlier stages it reads (``ctx.get``)."""
    gives: ClassVar[type | None] = None
    """The type of what :meth:`run` returns (None: it adds nothing)."""
    overlaps_next: ClassVar[bool] = False
    """Run inside the next stage, when that one calls ``ctx.ready()`` (the local gateways
    start while the load engine's JVM starts)."""
    local_only: ClassVar[str] = ""
    """Why this stage exists on the local path only (empty: on both paths)."""
    cloud_order: ClassVar[str] = ""
    """Why the cloud workflow runs this stage at another place (empty: the same place)."""

    def check(self, ctx: RunContext) -> None:
        """Refuse, before any stage runs, what this stage could not do (RunError)."""

    def run(self, ctx: RunContext) -> object | None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<stage {self.name}>"


def check_order(stages: Sequence[Stage]) -> None:
    """Every stage's inputs are given by an earlier one; an overlapping stage has a next one.
    A stage list that breaks this is a programming error, refused before anything runs."""
    given: set[type] = set()
    for i, stage in enumerate(stages):
        missing = [t.__name__ for t in stage.needs if t not in given]
        if missing:
            raise RunError(
                f"stage {stage.name!r} needs {', '.join(missing)}, which no earlier stage gives"
            )
        if stage.overlaps_next and (i + 1 == len(stages) or stages[i + 1].overlaps_next):
            raise RunError(f"stage {stage.name!r} overlaps the next stage, and there is none")
        if stage.gives is not None:
            given.add(stage.gives)


def replaced(stages: Sequence[Stage], name: str, stage: Stage) -> tuple[Stage, ...]:
    """``stages`` with the stage called ``name`` replaced by ``stage``."""
    if name not in {s.name for s in stages}:
        raise ValueError(f"no stage {name!r} to replace")
    return tuple(stage if s.name == name else s for s in stages)


def inserted_after(stages: Sequence[Stage], name: str, stage: Stage) -> tuple[Stage, ...]:
    """``stages`` with ``stage`` added right after the stage called ``name``."""
    names = [s.name for s in stages]
    if name not in names:
        raise ValueError(f"no stage {name!r} to add {stage.name!r} after")
    at = names.index(name) + 1
    return (*stages[:at], stage, *stages[at:])


__all__ = ["Stage", "check_order", "inserted_after", "replaced"]
