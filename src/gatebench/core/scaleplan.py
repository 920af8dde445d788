"""What a route-scale or change-under-load run is asked to measure (docs/scale.md): the table
sizes, the change, and the constant-rate load both measurements run.

Locally they come from the command line (``gatebench scale``, ``gatebench change-under-load``);
on the cloud path from the upload's run request (``x-goog-meta-gatebench``:
``{"kind": "scale", "scale": {"routes": [10, 100]}}``, docs/cloud.md, "Route scale and changes
under load"), read by :func:`scale_ask_from_json` with located problems. Both paths describe
the run in its record the same way (:meth:`ScaleAsk.about`). The settings' names and bounds are
the command line's: ``routes``, ``add``, ``rate``, ``duration``, ``warmup``, ``deadline``,
``change_after``, ``window``.

Pure: data in, data out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from gatebench.core.errors import Problem
from gatebench.core.model import RunKind
from gatebench.core.records import fields
from gatebench.core.routescale import DEFAULT_SIZES, MAX_ROUTES

LIVE_KINDS: tuple[RunKind, ...] = (RunKind.SCALE, RunKind.CHANGE)
"""The kinds of run that grow or change the description (``RunRecord.plan["kind"]``)."""


@dataclass(frozen=True)
class LoadSettings:
    """The constant-rate load both measurements run."""

    rate: float = 200.0
    duration_s: float = 10.0
    """Per measured phase (a scale point runs three: start, middle, end)."""
    warmup_s: float = 3.0
    probe_interval_s: float = 0.05
    deadline_s: float = 120.0
    """How long a route may take to answer correctly (boot or change) before it counts as
    never answering; a gateway's start may take this long too (Varnish compiles a large VCL
    before it listens)."""
    check_timeout_s: float = 600.0


@dataclass(frozen=True)
class ChangeSpec:
    """What the change-under-load run changes, and when."""

    routes_before: int
    routes_added: int
    change_after_s: float = 3.0
    window_s: float = 4.0


@dataclass(frozen=True)
class ScaleAsk:
    """A scale or change-under-load run's request: its kind, the sizes or the change, the
    load's settings."""

    kind: RunKind
    sizes: tuple[int, ...] = ()
    change: ChangeSpec | None = None
    settings: LoadSettings = field(default_factory=LoadSettings)

    def about(self, gateways: Sequence[str]) -> dict[str, Any]:
        """The run record's ``plan`` (JSON-shaped): what the run measures, the same on both
        paths (``report.is_scale_run`` reads ``kind``)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "gateways": list(gateways),
            **fields(self.settings, "rate duration_s warmup_s probe_interval_s"),
        }
        if self.kind == "scale":
            out["sizes"] = list(self.sizes)
        if self.change is not None:
            out["change"] = asdict(self.change)
        return out

    def to_json(self) -> dict[str, Any]:
        """The request's ``scale`` object (:func:`scale_ask_from_json` reads it back)."""
        s = self.settings
        out: dict[str, Any] = {
            "rate": s.rate,
            "duration": s.duration_s,
            "warmup": s.warmup_s,
            "deadline": s.deadline_s,
        }
        if self.kind == "scale":
            out["routes"] = list(self.sizes)
        elif self.change is not None:
            out.update(
                routes=self.change.routes_before,
                add=self.change.routes_added,
                change_after=self.change.change_after_s,
                window=self.change.window_s,
            )
        return out


_NUMBERS: dict[str, tuple[float, float]] = {
    # name → (default, upper bound); every one must be more than 0 (the command line's)
    "rate": (200.0, 100_000.0),
    "duration": (10.0, 3600.0),
    "warmup": (3.0, 600.0),
    "deadline": (120.0, 3600.0),
    "change_after": (3.0, 3600.0),
    "window": (4.0, 3600.0),
}
_SCALE_KEYS = {"routes", "rate", "duration", "warmup", "deadline"}
_CHANGE_KEYS = _SCALE_KEYS | {"add", "change_after", "window"}


def _number(
    data: Mapping[str, Any], name: str, where: str, problems: list[Problem], source: str | None
) -> float:
    default, upper = _NUMBERS[name]
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= upper:
        problems.append(
            Problem(
                f"{where}/{name}",
                f"expected a number more than 0 and at most {upper:g}, got {value!r}",
                source=source,
            )
        )
        return default
    return float(value)


def _count(
    value: Any, pointer: str, problems: list[Problem], source: str | None, what: str
) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ROUTES:
        problems.append(
            Problem(
                pointer,
                f"expected {what}: a whole number from 1 to {MAX_ROUTES}, got {value!r}",
                source=source,
            )
        )
        return None
    return value


def change_window_problem(change_after_s: float, window_s: float, duration_s: float) -> str | None:
    """Why a change and the window after it do not fit in the measured load (None: they do):
    the window's failures and spike are read under the load."""
    if change_after_s + window_s <= duration_s:
        return None
    end = change_after_s + window_s
    return (
        f"the window after the change ({change_after_s:g} s into the load, then {window_s:g} s) "
        f"ends at {end:g} s, after the measured load ({duration_s:g} s), and that window is "
        f"read under the load: measure for at least {end:g} s, or change sooner"
    )


def change_size_problem(routes_before: int, routes_added: int) -> str | None:
    """Why a change's table after it is too large (None: it is not): each number alone may be
    within the bound, the table after the change holds both, and it is grown only when the
    change is prepared, after every gateway booted on the table before it."""
    total = routes_before + routes_added
    if total <= MAX_ROUTES:
        return None
    return (
        f"the table after the change holds {routes_before:,} + {routes_added:,} = {total:,} "
        f"routes, more than the {MAX_ROUTES:,} a table may hold: add at most "
        f"{max(0, MAX_ROUTES - routes_before):,}"
    )


def scale_ask_from_json(
    kind: RunKind, data: Any, *, where: str = "/scale", source: str | None = None
) -> tuple[ScaleAsk | None, list[Problem]]:
    """The :class:`ScaleAsk` of a ``scale`` object (None: every setting's default), or every
    located problem (``where``: the object's pointer; ``source``: where it came from)."""
    problems: list[Problem] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return None, [Problem(where, f"expected an object, got {data!r}", source=source)]
    allowed = _SCALE_KEYS if kind == "scale" else _CHANGE_KEYS
    for key in sorted(set(data) - allowed):
        problems.append(
            Problem(
                f"{where}/{key}",
                f"not a setting of a {kind} run; expected {', '.join(sorted(allowed))}",
                source=source,
            )
        )
    rate = _number(data, "rate", where, problems, source)
    duration = _number(data, "duration", where, problems, source)
    warmup = _number(data, "warmup", where, problems, source)
    deadline = _number(data, "deadline", where, problems, source)
    settings = LoadSettings(rate=rate, duration_s=duration, warmup_s=warmup, deadline_s=deadline)
    if kind == "scale":
        raw = data.get("routes", list(DEFAULT_SIZES))
        sizes: list[int] = []
        if not isinstance(raw, list) or not raw:
            problems.append(
                Problem(
                    f"{where}/routes",
                    f"expected a list of table sizes, increasing (e.g. [10, 100]), got {raw!r}",
                    source=source,
                )
            )
        else:
            for i, item in enumerate(raw):
                n = _count(item, f"{where}/routes/{i}", problems, source, "a table size")
                if n is None:
                    continue
                if sizes and n <= sizes[-1]:
                    problems.append(
                        Problem(
                            f"{where}/routes/{i}",
                            f"sizes must increase; got {n} after {sizes[-1]}",
                            source=source,
                        )
                    )
                    continue
                sizes.append(n)
        if problems:
            return None, problems
        return ScaleAsk(RunKind.SCALE, tuple(sizes), None, settings), []
    before = _count(data.get("routes", 100), f"{where}/routes", problems, source, "routes before")
    added = _count(data.get("add", 100), f"{where}/add", problems, source, "routes added")
    after = _number(data, "change_after", where, problems, source)
    window = _number(data, "window", where, problems, source)
    late = None if problems else change_window_problem(after, window, duration)
    if late is not None:
        problems.append(Problem(f"{where}/window", late, source=source))
    large = None if before is None or added is None else change_size_problem(before, added)
    if large is not None:
        problems.append(Problem(f"{where}/add", large, source=source))
    if problems or before is None or added is None:
        return None, problems
    return ScaleAsk(kind, (), ChangeSpec(before, added, after, window), settings), []


__all__ = [
    "LIVE_KINDS",
    "ChangeSpec",
    "LoadSettings",
    "ScaleAsk",
    "change_size_problem",
    "change_window_problem",
    "scale_ask_from_json",
]
