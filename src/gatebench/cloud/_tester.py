"""How the Cloud Build steps and the tester VM talk: small JSON objects ("markers") under
``gs://RUNS_BUCKET/runs/RUN/tester/``. Cloud Build's default workers are not in the
benchmark network, so they never reach a VM; the tester, inside the network, does the
probing and the load, and both sides meet in the bucket.

    ready.json         tester → provision build: every target answered (or which did not)
    load-request.json  load build → tester: start the load now (``start_at``: epoch seconds)
    load-done.json     tester → load build: finished (ok, reason, raw logs written)

With several testers (``infrastructure.testers``, the fleet's ``tester.count``), tester T > 0
writes ``runs/RUN/tT/tester/ready.json`` and ``.../load-done.json``; one ``load-request.json`` starts them all:
each starts its JVM when it sees the request and lets it go at ``start_at`` (the barrier:
Compute Engine's clocks are synchronised). The load build waits for every tester; one that
fails or never answers is recorded in its ``load-done`` marker, and its phases end ``partial``
at ingest (``gatebench.core.testers``); only when every tester failed does the load fail.

Objects are written once; a second writer of the same marker finds it present and stops.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from gatebench.core.errors import RunError

POLL_S = 2.0
"""How often a tester and the provision and load builds read the bucket for a marker: one
read (a Class B operation) per marker and poll, a few hundred in a run's longest wait."""
START_DELAY_S = 10.0
"""With several testers, from the load request to the common start: every tester sees the
request within one poll and starts its JVM within about this time; one that is later is waited
for at the first phase's barrier (``gatebench.local._fanout.PHASE_BARRIER_S``), so the start is a
convenience, not the synchronisation. A single tester starts as soon as it sees the request
(it has no one to wait for)."""


class Bucket(Protocol):
    def read_optional(self, bucket: str, name: str) -> bytes | None: ...

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = ...) -> None: ...


class Readable(Protocol):
    def read_optional(self, bucket: str, name: str) -> bytes | None: ...


def marker(run_id: str, name: str) -> str:
    """``runs/RUN/tester/NAME.json``; a name ``tT/NAME`` (:func:`marker_of_tester`) is
    ``runs/RUN/tT/tester/NAME.json``: it ends as tester 0's does, so the tester VMs' IAM
    grant (infra/vm_access.tf, by object-name suffix) covers every tester's markers."""
    folder, _, leaf = name.rpartition("/")
    return f"runs/{run_id}/{folder + '/' if folder else ''}tester/{leaf}.json"


def marker_of_tester(name: str, tester: int) -> str:
    """Tester 0 keeps the single tester's names; tester T > 0's are ``tT/NAME``."""
    return name if tester == 0 else f"t{tester}/{name}"


def fleet_testers(bucket: Readable, runs_bucket: str, run_id: str) -> int:
    """How many testers the run's fleet has (``runs/RUN/fleet.json``; 1 without one)."""
    data = bucket.read_optional(runs_bucket, f"runs/{run_id}/fleet.json")
    if data is None:
        return 1
    tester = json.loads(data).get("tester") or {}
    return int(tester.get("count") or 1)


@dataclass
class Clock:
    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep


def read_required_json(bucket: Bucket, runs_bucket: str, name: str) -> Any:
    """The JSON object ``name`` of the runs bucket; RunError when it is missing."""
    data = bucket.read_optional(runs_bucket, name)
    if data is None:
        raise RunError(f"gs://{runs_bucket}/{name} is missing")
    return json.loads(data)


def read_marker(bucket: Bucket, runs_bucket: str, run_id: str, name: str) -> dict[str, Any] | None:
    data = bucket.read_optional(runs_bucket, marker(run_id, name))
    if data is None:
        return None
    value = json.loads(data)
    if not isinstance(value, dict):
        raise RunError(f"gs://{runs_bucket}/{marker(run_id, name)}: expected a JSON object")
    return value


def write_marker(
    bucket: Bucket, runs_bucket: str, run_id: str, name: str, content: dict[str, Any]
) -> None:
    bucket.write(runs_bucket, marker(run_id, name), json.dumps(content, sort_keys=True))


def wait_for_marker(
    bucket: Bucket,
    runs_bucket: str,
    run_id: str,
    name: str,
    timeout: float,
    *,
    clock: Clock | None = None,
    poll: float = POLL_S,
) -> dict[str, Any]:
    """The marker's content once it exists; RunError when ``timeout`` seconds pass first."""
    clock = clock or Clock()
    deadline = clock.now() + timeout
    while True:
        content = read_marker(bucket, runs_bucket, run_id, name)
        if content is not None:
            return content
        if clock.now() >= deadline:
            raise RunError(
                f"gs://{runs_bucket}/{marker(run_id, name)} did not appear within {timeout:g}s "
                "(is the tester VM running? see its serial console log)"
            )
        clock.sleep(min(poll, max(0.0, deadline - clock.now())))


def wait_ready(
    bucket: Bucket, runs_bucket: str, run_id: str, timeout: float, **kw: Any
) -> dict[str, Any]:
    """The provision build's last step: the tester reached the targets. A target that never
    answered is recorded there (the run goes on without it and ends partial); no target at
    all is a failed provisioning."""
    ready = wait_for_marker(bucket, runs_bucket, run_id, "ready", timeout, **kw)
    if not ready.get("reachable"):
        raise RunError(f"the tester reached no target: {ready.get('unreachable') or ready}")
    for t in range(1, fleet_testers(bucket, runs_bucket, run_id)):
        name = marker_of_tester("ready", t)
        other = wait_for_marker(bucket, runs_bucket, run_id, name, timeout, **kw)
        if not other.get("reachable"):
            raise RunError(f"tester {t} reached no target: {other.get('unreachable') or other}")
    return ready


def run_load(
    bucket: Bucket, runs_bucket: str, run_id: str, timeout: float, **kw: Any
) -> dict[str, Any]:
    """The load build: ask the tester to start, then wait until it says it finished."""
    clock = kw.get("clock") or Clock()
    testers = fleet_testers(bucket, runs_bucket, run_id)
    if read_marker(bucket, runs_bucket, run_id, "load-request") is None:
        now = clock.now()
        request = {"requested_at": now, "start_at": now + (START_DELAY_S if testers > 1 else 0.0)}
        write_marker(bucket, runs_bucket, run_id, "load-request", request)
    if testers == 1:
        done = wait_for_marker(bucket, runs_bucket, run_id, "load-done", timeout, **kw)
        if not done.get("ok"):
            reason = done.get("reason") or "no reason given"
            raise RunError(f"the load failed on the tester: {reason}")
        return done
    return _wait_testers(bucket, runs_bucket, run_id, testers, timeout, clock, kw)


def _wait_testers(
    bucket: Bucket,
    runs_bucket: str,
    run_id: str,
    testers: int,
    timeout: float,
    clock: Clock,
    kw: dict[str, Any],
) -> dict[str, Any]:
    """Every tester's ``load-done``; a tester silent until the deadline gets one written for
    it (ok false, the reason), so ingest marks its phases partial."""
    deadline = clock.now() + timeout
    done: dict[int, dict[str, Any]] = {}
    for t in range(testers):
        name = marker_of_tester("load-done", t)
        try:
            left = max(0.0, deadline - clock.now())
            done[t] = wait_for_marker(bucket, runs_bucket, run_id, name, left, **kw)
        except RunError:
            done[t] = {"ok": False, "reason": f"no {marker(run_id, name)} within {timeout:g}s"}
            write_marker(bucket, runs_bucket, run_id, name, done[t])
    failed = {
        t: str(d.get("reason") or "no reason given") for t, d in done.items() if not d.get("ok")
    }
    if len(failed) == testers:
        raise RunError(f"the load failed on every tester; tester 0: {failed[0]}")
    return {
        "ok": True,
        "testers": testers,
        "failed": {str(t): reason for t, reason in failed.items()},
        "raw": [name for d in done.values() for name in d.get("raw") or []],
    }
