"""Which cores the gateway, the load engine and the backend run on (the plan's ``cpus:``).

On one small machine the three compete for the same cores: the load engine (a JVM) and the
gateway it loads take turns on the CPU, and what a phase measures depends on how the
scheduler happened to interleave them. Pinning gives the gateway a core of its own and the
engine and the backend the others, so a gateway's figures describe the gateway on its core
(docs/trust.md has the measurement behind the default).

A capacity search whose plan does not say ``cpus:`` splits the cores its own way
(:func:`capacity_layout`): there the load generator is the instrument, and a probe means
something only when the generator kept its schedule, so it gets a core of its own and the
target (gateway and backend) the others; a probe whose target shared a core with the generator
says so (:meth:`CpuLayout.shared_with_engine`).

This module only decides (a pure function of the setting and the cores this process may use);
``gatebench.local.procs`` applies the layout with ``sched_setaffinity`` when it starts a process, so
a gateway's workers and threads inherit it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gatebench.core.plan import Cpus

ROLES = ("gateway", "engine", "backend")
"""The processes a layout places; anything else gatebench starts is not pinned."""


@dataclass(frozen=True)
class CpuLayout:
    """The cores each role runs on (empty: not pinned), and why pinning was not done."""

    setting: str
    cores: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    note: str = ""

    @property
    def pinned(self) -> bool:
        return bool(self.cores)

    def shared_with_engine(self, roles: Sequence[str]) -> str | None:
        """Why the processes of ``roles`` (a target: its gateway and backend) may have run on
        a core the load engine ran on; None when the layout keeps them apart."""
        engine = set(self.cores.get("engine", ()))
        if not engine:
            return f"the load generator was not pinned ({self.describe()})"
        for role in roles:
            cores = set(self.cores.get(role, ()))
            if not cores:
                return f"the {role} was not pinned ({self.describe()})"
            if cores & engine:
                return f"the {role} shared a core with the load generator ({self.describe()})"
        return None

    def describe(self) -> str:
        """One line for the report: ``pinned: gateway on cpu 1; engine, backend on cpu 0``."""
        if not self.cores:
            return "unpinned" + (f" ({self.note})" if self.note else "")
        by_cores: dict[tuple[int, ...], list[str]] = {}
        for role in ROLES:
            if role in self.cores:
                by_cores.setdefault(self.cores[role], []).append(role)
        parts = [
            f"{', '.join(roles)} on cpu {','.join(str(c) for c in cores)}"
            for cores, roles in by_cores.items()
        ]
        label = "split" if self.setting == "split" else "pinned"
        return f"{label}: " + "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "setting": self.setting,
            "cores": {role: list(cores) for role, cores in self.cores.items()},
            "note": self.note,
        }


def recorded_cores(environment: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """role → the cores a run pinned it to, as its record says (``environment.cpu_affinity``,
    :meth:`CpuLayout.to_dict`); empty when it says none."""
    found = environment.get("cpu_affinity")
    cores = found.get("cores") if isinstance(found, Mapping) else None
    if not isinstance(cores, Mapping):
        return {}
    return {
        str(role): tuple(c for c in listed if isinstance(c, int))
        for role, listed in cores.items()
        if isinstance(listed, list | tuple)
    }


def resolve_layout(cpus: Cpus, available: Sequence[int]) -> CpuLayout:
    """The layout for ``cpus`` on a process allowed to run on ``available`` cores.

    ``pinned``: the upper half of the cores for the gateway, the lower half for the engine
    and the backend (2 cores: gateway on the second, the rest on the first). ``explicit``:
    the plan's lists. Pinning needs two cores, and explicit cores this process may use; when
    it cannot be done the run goes unpinned and the note says why."""
    cores = sorted(set(available))
    if cpus.mode == "unpinned":
        return CpuLayout("unpinned")
    if cpus.mode == "pinned":
        if len(cores) < 2:
            return CpuLayout(
                "pinned",
                note=(
                    f"pinning needs at least 2 cores and this machine lets gatebench use "
                    f"{len(cores)} (cpu {','.join(map(str, cores)) or '-'}): ran unpinned"
                ),
            )
        half = len(cores) // 2
        rest, gateway = tuple(cores[:half]), tuple(cores[half:])
        return CpuLayout("pinned", {"gateway": gateway, "engine": rest, "backend": rest})
    chosen = {role: cpus.cores(role) for role in ROLES if cpus.cores(role)}
    missing = sorted({c for cs in chosen.values() for c in cs} - set(cores))
    if missing:
        return CpuLayout(
            "explicit",
            note=(
                f"cpu {','.join(map(str, missing))} is not available here (gatebench may use "
                f"cpu {','.join(map(str, cores))}): ran unpinned"
            ),
        )
    return CpuLayout("explicit", chosen)


def capacity_layout(cpus: Cpus, available: Sequence[int]) -> CpuLayout:
    """A capacity search's layout: the plan's ``cpus:`` when it says one (:func:`resolve_layout`),
    else ``split``: the load generator alone on the first quarter of the cores (at least one),
    the backend on the next quarter and the gateway on the rest; on 2 cores the generator on
    the first and the gateway and the backend (the target) on the second. One core cannot be
    split: the run goes unpinned and its probes say so."""
    if cpus.given:
        return resolve_layout(cpus, available)
    cores = sorted(set(available))
    if len(cores) < 2:
        return CpuLayout(
            "split",
            note=(
                f"splitting needs at least 2 cores and this machine lets gatebench use "
                f"{len(cores)}: the load generator shares it with the target"
            ),
        )
    if len(cores) == 2:
        return CpuLayout(
            "split", {"engine": (cores[0],), "gateway": (cores[1],), "backend": (cores[1],)}
        )
    quarter = max(1, len(cores) // 4)
    return CpuLayout(
        "split",
        {
            "engine": tuple(cores[:quarter]),
            "backend": tuple(cores[quarter : 2 * quarter]),
            "gateway": tuple(cores[2 * quarter :]),
        },
    )


LayoutRule = Callable[[Cpus, Sequence[int]], CpuLayout]
"""How a kind of run turns the plan's ``cpus:`` and the cores it may use into a layout."""

__all__ = [
    "ROLES",
    "CpuLayout",
    "LayoutRule",
    "capacity_layout",
    "recorded_cores",
    "resolve_layout",
]
