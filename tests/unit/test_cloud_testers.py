"""The cloud path with several testers, over an in-memory bucket: markers per tester, the
common start, the load build waiting for every tester, the merged ingest (gatebench.cloud)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from cloud.simlog import SimLogWriter
from gatebench.cloud._ingest import ingest_object, ingest_run
from gatebench.cloud._tester import (
    START_DELAY_S,
    Clock,
    fleet_testers,
    marker,
    marker_of_tester,
    run_load,
    wait_ready,
)
from gatebench.core.errors import RunError
from gatebench.core.model import Measurement
from gatebench.core.plan import Injection
from gatebench.core.workload import FORMAT, injection_json

RUNS = "gb-runs"
RUN = "r-" + "a" * 20


class MemoryBucket:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        assert bucket == RUNS
        return self.objects.get(name)

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = "") -> None:
        self.objects[name] = data.encode() if isinstance(data, str) else data

    def open_optional(self, bucket: str, name: str) -> io.BytesIO | None:
        data = self.read_optional(bucket, name)
        return None if data is None else io.BytesIO(data)

    def names(self, bucket: str, prefix: str) -> list[str]:
        return sorted(n for n in self.objects if n.startswith(prefix))

    def put_json(self, name: str, value: Any) -> None:
        self.write(RUNS, name, json.dumps(value))


class FakeClock(Clock):
    def __init__(self) -> None:
        self.t = 1000.0
        super().__init__(now=lambda: self.t, sleep=self._sleep)

    def _sleep(self, s: float) -> None:
        self.t += max(s, 0.5)


def _fleet(bucket: MemoryBucket, testers: int) -> None:
    bucket.put_json(f"runs/{RUN}/fleet.json", {"tester": {"args": [], "count": testers}})


def test_marker_of_testers_keep_the_suffix_the_iam_grant_matches() -> None:
    assert marker(RUN, marker_of_tester("ready", 0)) == f"runs/{RUN}/tester/ready.json"
    assert marker(RUN, marker_of_tester("load-done", 2)) == f"runs/{RUN}/t2/tester/load-done.json"


def test_load_waits_for_every_tester_and_records_a_silent_one() -> None:
    bucket = MemoryBucket()
    assert fleet_testers(bucket, RUNS, RUN) == 1
    _fleet(bucket, 2)
    raw0 = f"raw/{RUN}/gatling-t0/simulation.log"
    bucket.put_json(f"runs/{RUN}/tester/load-done.json", {"ok": True, "raw": [raw0]})
    clock = FakeClock()
    done = run_load(bucket, RUNS, RUN, 10, clock=clock, poll=1)
    silent = f"runs/{RUN}/t1/tester/load-done.json"
    assert done == {
        "ok": True,
        "testers": 2,
        "failed": {"1": f"no {silent} within 10s"},
        "raw": [raw0],
    }
    assert json.loads(bucket.objects[silent]) == {"ok": False, "reason": f"no {silent} within 10s"}
    request = json.loads(bucket.objects[f"runs/{RUN}/tester/load-request.json"])
    assert request["start_at"] == request["requested_at"] + START_DELAY_S


def test_a_single_tester_starts_as_soon_as_it_sees_the_request() -> None:
    bucket = MemoryBucket()
    bucket.put_json(f"runs/{RUN}/tester/load-done.json", {"ok": True, "raw": []})
    assert run_load(bucket, RUNS, RUN, 10, clock=FakeClock(), poll=1)["ok"] is True
    request = json.loads(bucket.objects[f"runs/{RUN}/tester/load-request.json"])
    assert request["start_at"] == request["requested_at"]


def test_a_target_whose_vm_said_why_it_did_not_start_it_is_not_waited_for() -> None:
    from gatebench.local.procs import free_port
    from gatebench.vm._roles import probe_targets

    closed = free_port()  # nobody listens: the probe is refused at once
    url = f"http://127.0.0.1:{closed}"
    document = {
        "phases": [
            # the engine's own warm-up against the backend reaches no target: a plan without
            # the baseline waits for its gateways alone
            {
                "target": "baseline",
                "repetition": 0,
                "measured": False,
                "request": {"base_url": url},
            },
            *(
                {"target": t, "repetition": 1, "measured": True, "request": {"base_url": url}}
                for t in ("nginx", "tyk")
            ),
        ]
    }
    asked: list[str] = []

    def reported(target: str) -> str | None:
        asked.append(target)
        return "tyk: no such image" if target == "tyk" else None

    clock = FakeClock()
    reachable, unreachable = probe_targets(document, 600, clock, reported=reported)
    assert reachable == []
    assert unreachable == {
        "nginx": f"http://127.0.0.1:{closed} did not answer within 600s",
        "tyk": f"http://127.0.0.1:{closed} did not answer: its VM did not start it "
        "(tyk: no such image)",
    }
    # tyk was given up at the first question; nginx was asked again every poll until the end
    assert asked.count("tyk") == 1 and asked.count("nginx") > 100


def test_load_fails_when_every_tester_failed() -> None:
    bucket = MemoryBucket()
    _fleet(bucket, 2)
    bucket.put_json(f"runs/{RUN}/tester/load-done.json", {"ok": False, "reason": "exit 1"})
    bucket.put_json(f"runs/{RUN}/t1/tester/load-done.json", {"ok": False, "reason": "exit 2"})
    with pytest.raises(RunError, match=r"^the load failed on every tester; tester 0: exit 1$"):
        run_load(bucket, RUNS, RUN, 5, clock=FakeClock(), poll=1)


def test_wait_ready_waits_for_every_tester() -> None:
    bucket = MemoryBucket()
    _fleet(bucket, 2)
    bucket.put_json(f"runs/{RUN}/tester/ready.json", {"reachable": ["nginx"]})
    with pytest.raises(RunError, match=r"t1/tester/ready.json did not appear within 3s"):
        wait_ready(bucket, RUNS, RUN, 3, clock=FakeClock(), poll=1)
    bucket.put_json(
        f"runs/{RUN}/t1/tester/ready.json", {"reachable": [], "unreachable": {"nginx": "x"}}
    )
    with pytest.raises(RunError, match=r"^tester 1 reached no target: \{'nginx': 'x'\}$"):
        wait_ready(bucket, RUNS, RUN, 3, clock=FakeClock(), poll=1)


class Store:
    def __init__(self) -> None:
        self.stored: dict[str, Measurement] = {}

    def put_measurement(self, m: Measurement) -> None:
        self.stored[m.key] = m


def _document() -> dict[str, Any]:
    phase = {
        "id": "p0000",
        "index": 0,
        "target": "nginx",
        "workload": "w",
        "repetition": 1,
        "measured": True,
        "seed": 1,
        "injection": injection_json(Injection("at_once", users=4)),
        "before": [],
        "params": {},
        "request": {"base_url": "http://gw:8000"},
    }
    return {"format": FORMAT, "seed": 1, "secret_env": [], "skip_file": "", "phases": [phase]}


def test_ingest_merges_every_testers_log_once_all_are_done(tmp_path: Path) -> None:
    bucket = MemoryBucket()
    _fleet(bucket, 2)
    bucket.put_json(f"runs/{RUN}/workload.json", _document())
    for t, latencies in ((0, (1, 2)), (1, (3, 40))):
        log = SimLogWriter(1_700_000_000_000 + t)
        for latency in latencies:
            log.request("p0000", 5, 5 + latency)
        bucket.write(RUNS, f"raw/{RUN}/gatling-t{t}/simulation.log", log.bytes())
    store: Any = Store()
    raw0 = f"raw/{RUN}/gatling-t0/simulation.log"
    bucket.put_json(f"runs/{RUN}/tester/load-done.json", {"ok": True})
    assert ingest_object(bucket, store, RUNS, raw0) == 0  # tester 1 has not finished
    assert store.stored == {}
    bucket.put_json(f"runs/{RUN}/t1/tester/load-done.json", {"ok": True})
    assert ingest_object(bucket, store, RUNS, raw0) == 1
    m = store.stored["nginx:w:1"]
    assert (m.requests, m.p50, m.p99, m.max, m.flags) == (4, 2.0, 40.0, 40.0, ())
    (shares,) = [
        json.loads(line) for line in bucket.objects[f"runs/{RUN}/testers.jsonl"].splitlines()
    ]
    assert [(t["tester"], t["requests"]) for t in shares["testers"]] == [(0, 2), (1, 2)]
    assert shares["start_skew_ms"] == 1.0
    # a tester that failed after uploading a short log: its phase is partial
    bucket.put_json(f"runs/{RUN}/t1/tester/load-done.json", {"ok": False, "reason": "exit 137"})
    bucket.write(
        RUNS,
        f"raw/{RUN}/gatling-t1/simulation.log",
        SimLogWriter().request("p0000", 5, 8).bytes(),
    )
    assert ingest_run(bucket, store, RUNS, RUN) == 1
    m = store.stored["nginx:w:1"]
    assert (m.requests, m.flags) == (3, ("incomplete", "too-short", "partial"))


def test_a_tester_says_each_step_on_its_serial_console(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tester that stops or hangs says after which step: the provision build's timeout names
    only the marker it waited for (a CI run's tester 0 once wrote no ready marker and nothing
    else)."""
    from gatebench.local.procs import free_port
    from gatebench.vm._roles import run_tester

    bucket = MemoryBucket()
    closed = free_port()
    document = {
        "format": FORMAT,
        "phases": [{"target": "nginx", "request": {"base_url": f"http://127.0.0.1:{closed}"}}],
    }
    bucket.put_json(f"runs/{RUN}/workload.json", document)
    assert run_tester(bucket, RUNS, RUN, tmp_path, 1.0, clock=FakeClock()) == 3  # type: ignore[arg-type]
    said = [line.split(" ", 4)[-1] for line in capsys.readouterr().err.splitlines()]
    assert said == [
        f"reading the workload of {RUN}",
        "waiting up to 1s for the targets to answer",
        "ready: 0 targets answered, 1 did not",
    ]
    ready = json.loads(bucket.objects[marker(RUN, "ready")])
    assert ready["reachable"] == [] and list(ready["unreachable"]) == ["nginx"]
