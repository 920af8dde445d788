"""The plan's deployment sections, read with located messages: ``tls`` (TLS and HTTP/2 at
every gateway), ``backend.replicas`` / ``backend.balance`` (an upstream pool behind each
gateway) and ``fault`` (a replica killed during a phase).

What they mean at run time is written in docs/input.md ("TLS", "Backend replicas", "A replica
fails"); which gateway can render what is the renderers' to say
(``gatebench.core.renderers.deployment_exclusions``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from gatebench.core.errors import Problem
from gatebench.core.plan._model import (
    BALANCES,
    MAX_REPLICAS,
    TLS_KEYS,
    Backend,
    Balance,
    Fault,
    Tls,
    Workload,
)
from gatebench.core.plan._reader import Reader, _kind, _show

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
DEFAULT_FAULT_AT = 0.5
"""Where in the phase the replica dies when the plan does not say: the middle."""


def read_tls(value: Any, r: Reader) -> Tls | None:
    """``tls: true``, ``tls: false`` or ``tls: {key, http2, resumption}``."""
    if value is False or value is None:
        return None
    if value is True:
        return Tls()
    if not isinstance(value, dict):
        r.error(
            ["tls"],
            f"expected true, false or a mapping {{key, http2, resumption}}, got {_kind(value)}",
        )
        return None
    data = r.mapping(value, ["tls"], "tls")
    key = data.get("key", "ecdsa-p256")
    if key not in TLS_KEYS:
        r.error(["tls", "key"], f"expected one of {', '.join(TLS_KEYS)}, got {_show(key)}")
        key = "ecdsa-p256"
    flags: dict[str, bool] = {}
    for name, default in (("http2", False), ("resumption", True)):
        raw = data.get(name, default)
        if not isinstance(raw, bool):
            r.error(["tls", name], f"expected true or false, got {_show(raw)}")
            raw = default
        flags[name] = raw
    return Tls(key=key, http2=flags["http2"], resumption=flags["resumption"])


def read_pool(data: dict[str, Any], r: Reader, backend: Backend) -> Backend:
    """``backend`` with ``replicas`` and ``balance`` read from the backend mapping ``data``."""
    replicas = 1
    if "replicas" in data:
        replicas = r.integer(data["replicas"], ["backend", "replicas"], 1, MAX_REPLICAS) or 1
    balance: Balance = "round_robin"
    if "balance" in data:
        raw = data["balance"]
        if raw not in BALANCES:
            r.error(
                ["backend", "balance"],
                f"expected one of {', '.join(BALANCES)}, got {_show(raw)}",
            )
        else:
            balance = raw
    if replicas > 1 and backend.kind == "url":
        r.error(
            ["backend", "replicas"],
            "replicas are copies of a backend gatebench starts (mock or builtin); with your "
            "own service (url), run its replicas behind one address yourself",
        )
        replicas = 1
    if "balance" in data and replicas == 1 and backend.kind != "url":
        r.warn(["backend", "balance"], "balance has no effect with one replica")
    return replace(backend, replicas=replicas, balance=balance)


RECOVERY_S = 3.0
"""About how long the gateways' active health checks take to put a restarted replica back
(two passed checks a second apart, plus its start)."""


def read_fault(
    value: Any,
    r: Reader,
    backend: Backend,
    workloads: list[Workload],
    warmup_s: float | None = None,
) -> Fault | None:
    """``fault: {type: kill_replica, replica: N, workload: NAME, at: 50% | 5s}``."""
    if value is None:
        return None
    data = r.mapping(value, ["fault"], "fault")
    if not isinstance(value, dict):
        return None
    kind = data.get("type", "kill_replica")
    if kind != "kill_replica":
        r.error(["fault", "type"], f"expected 'kill_replica' (the only fault), got {_show(kind)}")
    ok = True
    if backend.replicas < 2:
        r.error(
            ["fault"],
            "killing a replica needs at least two (backend: {replicas: 2} or more): with one, "
            "there is nothing left to send to",
        )
        ok = False
    replica = 1
    if "replica" in data:
        found = r.integer(data["replica"], ["fault", "replica"], 1, max(backend.replicas, 1))
        if found is None:
            ok = False
        else:
            replica = found
    workload = _fault_workload(data, r, workloads)
    if workload is None:
        return None
    at_s, at_fraction = _fault_at(data, r, workload)
    if not ok or (at_s is None and at_fraction is None):
        return None
    if (warmup_s or 0.0) < RECOVERY_S:
        r.warn(
            ["fault"],
            f"the replica starts again when its phase ends and the gateways take it back over "
            f"about {RECOVERY_S:g}s (longer with passive checks only): a warm-up of at least "
            f"{RECOVERY_S:g}s keeps the phases after it from meeting a pool still recovering",
        )
    return Fault(replica=replica, workload=workload.name, at_s=at_s, at_fraction=at_fraction)


def _fault_workload(data: dict[str, Any], r: Reader, workloads: list[Workload]) -> Workload | None:
    if not workloads:
        return None
    if "workload" not in data:
        return workloads[0]
    name = data["workload"]
    for w in workloads:
        if w.name == name:
            return w
    names = ", ".join(w.name for w in workloads)
    r.error(["fault", "workload"], f"no workload named {_show(name)}; the plan has: {names}")
    return None


def _phase_duration(workload: Workload) -> float | None:
    """The measured phase's length when the profile fixes it (None: it ends after a number
    of requests, at a time nobody knows in advance)."""
    inj = workload.injection
    if inj.kind in ("concurrent", "constant_rate", "ramp") and inj.duration is not None:
        return inj.duration
    return None


def _fault_at(
    data: dict[str, Any], r: Reader, workload: Workload
) -> tuple[float | None, float | None]:
    """(seconds, None) or (None, fraction) for ``at``; (None, None) after a problem."""
    duration = _phase_duration(workload)
    raw = data.get("at", f"{DEFAULT_FAULT_AT * 100:g}%")
    if isinstance(raw, str) and "%" in raw:
        match = _PERCENT.match(raw)
        if match is None or not 0 < float(match.group(1)) < 100:
            r.error(
                ["fault", "at"], f"expected a percentage above 0 and below 100, got {_show(raw)}"
            )
            return None, None
        if duration is None:
            r.error(
                ["fault", "at"],
                f"workload {workload.name!r} ends after a number of requests, so a percentage "
                "of it has no time; give a duration from the phase's start (at: 5s) or a "
                "workload with a duration",
            )
            return None, None
        return None, float(match.group(1)) / 100
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        r.error(
            ["fault", "at"], f"expected a percentage (50%) or a duration (5s), got {_kind(raw)}"
        )
        return None, None
    seconds = r.duration(raw, ["fault", "at"])
    if seconds is None:
        return None, None
    if duration is not None and seconds >= duration:
        r.error(
            ["fault", "at"],
            f"{_show(raw)} is not inside the phase: workload {workload.name!r} lasts {duration:g}s",
        )
        return None, None
    return seconds, None


def scale_problems(
    section: Any, base: str = "/x-gatebench", source: str | None = None
) -> list[Problem]:
    """What the route-scale and change-under-load runs cannot measure of a benchmark
    section's deployment (docs/scale.md, "TLS and replicas"). Those runs take their settings
    from the command line, not from the plan, so the raw section is read: a description that
    asks for TLS, replicas or a fault is refused with located errors rather than measured
    plain, in front of one backend."""
    if not isinstance(section, dict):
        return []
    where = (
        "these runs load and probe each gateway over plain HTTP/1.1, in front of one echo "
        "backend at a time; run this plan with `gatebench run`, or scale a copy of the "
        'description without the key (docs/scale.md, "TLS and replicas")'
    )
    out = []
    if section.get("tls") not in (None, False):
        out.append(
            Problem(f"{base}/tls", f"scale and change-under-load do not carry TLS yet: {where}")
        )
    backend = section.get("backend")
    if isinstance(backend, dict) and backend.get("replicas") not in (None, 1):
        out.append(
            Problem(
                f"{base}/backend/replicas",
                f"scale and change-under-load do not start backend replicas yet: {where}",
            )
        )
    if section.get("fault") is not None:
        out.append(
            Problem(f"{base}/fault", f"scale and change-under-load inject no fault: {where}")
        )
    return [Problem(p.pointer, p.message, source=source) if source else p for p in out]


__all__ = [
    "DEFAULT_FAULT_AT",
    "RECOVERY_S",
    "read_fault",
    "read_pool",
    "read_tls",
    "scale_problems",
]
