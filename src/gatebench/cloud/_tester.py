"""How the Cloud Build steps and the tester VM talk: small JSON objects ("markers") under
``gs://RUNS_BUCKET/runs/RUN/tester/``. Cloud Build's default workers are not in the
benchmark network, so they never reach a VM; the tester, inside the network, does the
probing and the load, and both sides meet in the bucket.

    ready.json         tester → provision build: every target answered (or which did not)
    load-request.json  load build → tester: start the load now
    load-done.json     tester → load build: finished (ok, reason, raw logs written)

Objects are written once; a second writer of the same marker finds it present and stops.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import RunError

POLL_S = 5.0


class Bucket(Protocol):
    def read_optional(self, bucket: str, name: str) -> bytes | None: ...

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = ...) -> None: ...


def marker(run_id: str, name: str) -> str:
    return f"runs/{run_id}/tester/{name}.json"


@dataclass
class Clock:
    now: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep


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
    return ready


def run_load(
    bucket: Bucket, runs_bucket: str, run_id: str, timeout: float, **kw: Any
) -> dict[str, Any]:
    """The load build: ask the tester to start, then wait until it says it finished."""
    clock = kw.get("clock") or Clock()
    if read_marker(bucket, runs_bucket, run_id, "load-request") is None:
        write_marker(bucket, runs_bucket, run_id, "load-request", {"requested_at": clock.now()})
    done = wait_for_marker(bucket, runs_bucket, run_id, "load-done", timeout, **kw)
    if not done.get("ok"):
        raise RunError(f"the load failed on the tester: {done.get('reason') or 'no reason given'}")
    return done
