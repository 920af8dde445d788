"""The gateway VM's meter and the score step's ingest meet in the runs bucket: the meter's last
upload ends with a ``meter_done`` line once every tester has finished, and the score step waits
for it (bounded) before attaching the gateway's CPU and memory to each phase; a meter that never
finishes leaves a located note in the run record, never a silent gap (gatebench.cloud._ingest).

Cloud Storage does not run here: the bucket is a dict, and time moves only when the code under
test sleeps, so "the upload comes 7 s after the score step started" is exact."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cloud.simlog import SimLogWriter
from gatebench.cloud import METER_WAIT_S, RequestError, meter_wait_from_request
from gatebench.cloud._ingest import METER_GAPS, ingest_run, meter_done_line
from gatebench.cloud._tester import Clock
from gatebench.core.model import RunRecord
from gatebench.core.plan import Injection
from gatebench.core.resources import MB, CgroupSample
from gatebench.core.workload import FORMAT, injection_json
from gatebench.store import SqliteStore
from gatebench.vm._roles import meter_gateway

RUNS = "gb-runs"
RUN = "r-" + "b" * 20
CGROUP = f"runs/{RUN}/cgroup/nginx.jsonl"
LOG_START_MS = 1_700_000_000_000
"""The raw log's start: phase p0000's requests run at +5..+45 ms, phase p0001's at +9000..
+9040 ms."""


class MemoryBucket:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        assert bucket == RUNS
        return self.objects.get(name)

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = "") -> None:
        assert bucket == RUNS
        self.objects[name] = data.encode() if isinstance(data, str) else data

    def open_optional(self, bucket: str, name: str) -> io.BytesIO | None:
        data = self.read_optional(bucket, name)
        return None if data is None else io.BytesIO(data)

    def names(self, bucket: str, prefix: str) -> list[str]:
        return sorted(n for n in self.objects if n.startswith(prefix))

    def put_json(self, name: str, value: Any) -> None:
        self.write(RUNS, name, json.dumps(value))


class SteppingClock(Clock):
    """Time moves only when the code sleeps; ``at`` runs callbacks once their time has come."""

    def __init__(self, start: float) -> None:
        self.t = self.start = start
        self.events: list[tuple[float, Callable[[], None]]] = []
        super().__init__(now=lambda: self.t, sleep=self._sleep)

    def at(self, elapsed: float, action: Callable[[], None]) -> None:
        self.events.append((self.start + elapsed, action))

    def _sleep(self, seconds: float) -> None:
        self.t += seconds
        for when, action in [e for e in self.events if e[0] <= self.t]:
            self.events.remove((when, action))
            action()


# -- the meter


def test_the_meter_ends_only_after_every_tester_is_done_with_a_sample_past_it(
    tmp_path: Path,
) -> None:
    cgroup = tmp_path / "docker-abc.scope"
    cgroup.mkdir()
    (cgroup / "cpu.stat").write_text("usage_usec 0\n")
    (cgroup / "memory.current").write_text(f"{40 * MB}\n")
    bucket = MemoryBucket()
    bucket.put_json(f"runs/{RUN}/fleet.json", {"tester": {"count": 2}})
    bucket.put_json(f"runs/{RUN}/tester/load-done.json", {"ok": True})  # tester 0 is done ...
    clock = SteppingClock(100.0)
    # ... tester 1 (whose last phase may end later) only at 12 s
    clock.at(12.0, lambda: bucket.put_json(f"runs/{RUN}/t1/tester/load-done.json", {"ok": True}))
    assert meter_gateway(bucket, RUNS, RUN, "nginx", cgroup, clock=clock, interval=1.0) == 0
    lines = [json.loads(line) for line in bucket.objects[CGROUP].decode().splitlines()]
    *samples, last = lines
    # uploads at 5, 10 and 15 s: tester 1's load-done is seen at 15 s; one more sample at 16 s,
    # then the last upload, ending with meter_done
    assert [s["wall_ms"] for s in samples] == [1000.0 * (100 + i) for i in range(17)]
    assert last == {"meter_done": True, "wall_ms": 116_000.0, "why": "load-done"}


def test_a_meter_that_never_sees_load_done_stops_at_its_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gatebench.vm import _roles as _vm_roles

    monkeypatch.setattr(_vm_roles, "METER_MAX_S", 8.0)
    cgroup = tmp_path / "docker-abc.scope"
    cgroup.mkdir()
    (cgroup / "cpu.stat").write_text("usage_usec 0\n")
    (cgroup / "memory.current").write_text(f"{40 * MB}\n")
    bucket = MemoryBucket()
    clock = SteppingClock(100.0)
    assert meter_gateway(bucket, RUNS, RUN, "nginx", cgroup, clock=clock, interval=1.0) == 0
    last = json.loads(bucket.objects[CGROUP].decode().splitlines()[-1])
    assert last == {"meter_done": True, "wall_ms": 109_000.0, "why": "time limit"}


# -- the score step's ingest


def _phase(index: int) -> dict[str, Any]:
    return {
        "id": f"p000{index}",
        "index": index,
        "target": "nginx",
        "workload": f"w{index}",
        "repetition": 1,
        "measured": True,
        "seed": 1,
        "injection": injection_json(Injection("at_once", users=2)),
        "before": [],
        "params": {},
        "request": {"base_url": "http://gw:8000"},
    }


def _sample(wall_ms: float, cpu_s: float) -> str:
    usage = int(cpu_s * 1_000_000)
    return json.dumps(CgroupSample(wall_ms, usage, 50 * MB, 0, 60 * MB).to_dict()) + "\n"


EARLY = _sample(LOG_START_MS - 1000, 1.0) + _sample(LOG_START_MS + 1000, 2.0)
"""What the meter had uploaded when the load build ended: it covers phase 0, not phase 1."""
FINAL = EARLY + _sample(LOG_START_MS + 10_000, 4.0) + meter_done_line(LOG_START_MS + 10_000, "x")


@pytest.fixture
def run(tmp_path: Path) -> tuple[MemoryBucket, SqliteStore]:
    """A single-tester run of nginx with two measured phases, its raw log uploaded, its
    gateway metered (fleet.json), and its meter's upload so far (no meter_done line)."""
    bucket = MemoryBucket()
    document = {
        "format": FORMAT,
        "seed": 1,
        "secret_env": [],
        "skip_file": "",
        "phases": [_phase(0), _phase(1)],
    }
    bucket.put_json(f"runs/{RUN}/workload.json", document)
    bucket.put_json(f"runs/{RUN}/fleet.json", {"gateways": {"nginx": {}}, "tester": {"count": 1}})
    log = SimLogWriter(LOG_START_MS)
    for start in (5, 25):
        log.request("p0000", start, start + 20)
    for start in (9000, 9020):
        log.request("p0001", start, start + 20)
    bucket.write(RUNS, f"raw/{RUN}/gatling/simulation.log", log.bytes())
    bucket.write(RUNS, CGROUP, EARLY)
    store = SqliteStore(tmp_path / "results.sqlite")
    store.create_run(RunRecord(RUN, "gs://up/specs/a.yaml", "0" * 64))
    return bucket, store


def test_the_score_step_waits_for_a_meter_whose_last_upload_comes_late(
    run: tuple[MemoryBucket, SqliteStore],
) -> None:
    bucket, store = run
    clock = SteppingClock(5000.0)
    clock.at(7.0, lambda: bucket.write(RUNS, CGROUP, FINAL))  # 7 s after scoring started
    assert ingest_run(bucket, store, RUNS, RUN, meter_wait_s=60, clock=clock) == 2
    assert clock.t - clock.start == pytest.approx(8.0)  # polled every 2 s until it came
    measured = {m.workload: m for m in store.measurements(RUN)}
    # every measured phase has the gateway's CPU seconds and peak memory
    assert (measured["w0"].gateway_cpu_s, measured["w0"].gateway_rss_mb) == (0.02, 50.0)
    assert (measured["w1"].gateway_cpu_s, measured["w1"].gateway_rss_mb) == (0.0089, 50.0)
    run_record = store.get_run(RUN)
    assert run_record is not None and METER_GAPS not in run_record.environment


def test_a_meter_that_never_finishes_is_noted_after_a_bounded_wait(
    run: tuple[MemoryBucket, SqliteStore],
) -> None:
    bucket, store = run
    clock = SteppingClock(5000.0)
    started = time.monotonic()
    assert ingest_run(bucket, store, RUNS, RUN, meter_wait_s=60, clock=clock) == 2
    assert clock.t - clock.start == pytest.approx(60.0)  # waited exactly the bound
    assert time.monotonic() - started < 5  # and no real time beyond the work itself
    measured = {m.workload: m for m in store.measurements(RUN)}
    assert measured["w0"].gateway_cpu_s == 0.02  # covered by what had arrived
    assert (measured["w1"].gateway_cpu_s, measured["w1"].gateway_rss_mb) == (None, None)
    run_record = store.get_run(RUN)
    assert run_record is not None
    assert run_record.environment[METER_GAPS] == {
        "nginx": (
            "nginx: no gateway CPU or memory for 1 measured phase (nginx:w1:1): its meter's "
            f"last upload (gs://{RUNS}/{CGROUP}, ending with a meter_done line) did not arrive "
            "within 60s of scoring"
        )
    }
    # the report says it where a reader looks before trusting the numbers
    from gatebench.core.report import build_report

    report = build_report(run_record, store.measurements(RUN))
    assert run_record.environment[METER_GAPS]["nginx"] + "." in report.cautions
    # scoring again once the last upload has come clears the note and fills the phase in
    bucket.write(RUNS, CGROUP, FINAL)
    assert ingest_run(bucket, store, RUNS, RUN, meter_wait_s=60, clock=clock) == 2
    run_record = store.get_run(RUN)
    assert run_record is not None and METER_GAPS not in run_record.environment
    assert all(m.gateway_cpu_s is not None for m in store.measurements(RUN))


def test_a_gateway_whose_meter_uploaded_nothing_is_noted(
    run: tuple[MemoryBucket, SqliteStore],
) -> None:
    bucket, store = run
    del bucket.objects[CGROUP]
    assert ingest_run(bucket, store, RUNS, RUN, meter_wait_s=4, clock=SteppingClock(0.0)) == 2
    run_record = store.get_run(RUN)
    assert run_record is not None
    assert run_record.environment[METER_GAPS]["nginx"] == (
        "nginx: no gateway CPU or memory for 2 measured phases (nginx:w0:1, nginx:w1:1): its "
        f"meter uploaded nothing (gs://{RUNS}/{CGROUP} is missing)"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"run_id": RUN}, METER_WAIT_S),
        ({"run_id": RUN, "meter_wait_s": 0}, 0.0),
        ({"run_id": RUN, "meter_wait_s": 600}, 600.0),
    ],
)
def test_the_score_request_carries_the_meter_wait(body: dict[str, Any], expected: float) -> None:
    assert meter_wait_from_request(body, METER_WAIT_S) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (601, "expected seconds from 0 to 600, got 601"),
        (-1, "expected seconds from 0 to 600, got -1"),
        ("60", "expected seconds from 0 to 600, got '60'"),
        (True, "expected seconds from 0 to 600, got True"),
    ],
)
def test_a_bad_meter_wait_is_a_located_error(value: Any, message: str) -> None:
    with pytest.raises(RequestError) as info:
        meter_wait_from_request({"run_id": RUN, "meter_wait_s": value}, METER_WAIT_S)
    assert [(p.pointer, p.message) for p in info.value.problems] == [("/meter_wait_s", message)]


def test_the_run_records_the_container_optimized_os_image_its_vms_booted(
    run: tuple[MemoryBucket, SqliteStore],
) -> None:
    """The deployment pins the VMs' image (infra/ vm_image, never a family that moves); the
    provision build saves it with the run's variables and the score step records it."""
    from gatebench.cloud._objects import VARS_OBJECT
    from gatebench.cloud._vms import vm_vars

    bucket, store = run
    settings = {
        "project": "p",
        "prefix": "gb",
        "subnetwork": "s",
        "tags": {},
        "accounts": {},
        "runner_image": "r/runner:1",
        "vm_image": "projects/cos-cloud/global/images/cos-133-19999-44-85",
        "limits": {},
    }
    values = vm_vars(settings, {}, RUN, RUNS)
    assert values["image"] == settings["vm_image"]
    bucket.write(RUNS, VARS_OBJECT.format(run_id=RUN), json.dumps(values))
    bucket.write(RUNS, CGROUP, FINAL)
    ingest_run(bucket, store, RUNS, RUN, meter_wait_s=0, clock=SteppingClock(5000.0))
    recorded = store.get_run(RUN)
    assert recorded is not None
    assert (
        recorded.environment["vm_image"] == "projects/cos-cloud/global/images/cos-133-19999-44-85"
    )
    without = dict(settings)
    del without["vm_image"]
    with pytest.raises(RequestError) as info:
        vm_vars(without, {}, RUN, RUNS)
    assert [(p.pointer, p.message) for p in info.value.problems] == [
        ("/vm_image", "missing from the deployment settings")
    ]


# -- which transport a JVM gateway's Netty loaded


def fake_proc(root: Path, processes: dict[str, tuple[str, str | None]]) -> Path:
    """A /proc with these processes: pid -> (cgroup v2 path, memory maps or None: unreadable)."""
    proc = root / "proc"
    (proc / "self").mkdir(parents=True)
    for pid, (cgroup, maps) in processes.items():
        (proc / pid).mkdir()
        (proc / pid / "cgroup").write_text(f"0::{cgroup}\n")
        if maps is not None:
            (proc / pid / "maps").write_text(maps)
    return proc


EPOLL_MAP = (
    "7f00-7f10 r-xp 00000000 00:2a 12 "
    "/etc/gatebench/tmp/libnetty_transport_native_epoll_x86_644128.so (deleted)\n"
)


def test_the_meter_says_which_native_transport_the_gateways_processes_loaded(
    tmp_path: Path,
) -> None:
    """Netty loads its native transport from java.io.tmpdir, in the gateway's configuration
    folder; from a non-executable folder it falls back to Java's NIO without a word. The meter
    looks at the memory maps of the container's processes (the host's /proc) and says what it
    saw; the score step records each JVM gateway's transport with the run."""
    from gatebench.cloud._ingest import MeterUpload, jvm_transports, meter_uploads
    from gatebench.vm._roles import loaded_transports

    root = tmp_path / "cgroup"
    cgroup = root / "gateways.slice" / "docker-abc.scope"
    cgroup.mkdir(parents=True)
    (cgroup / "cpu.stat").write_text("usage_usec 0\n")
    (cgroup / "memory.current").write_text(f"{40 * MB}\n")
    gateway = "/gateways.slice/docker-abc.scope"
    proc = fake_proc(
        tmp_path,
        {
            "100": (gateway, "7f00-7f10 r-xp 0 00:2a 1 /usr/lib/jvm/lib/libjava.so\n"),
            "101": (gateway, EPOLL_MAP),
            "102": (gateway, None),  # gone, or not the meter's to read
            # a load that failed on a noexec folder: the first segment, not executable
            "103": (gateway, EPOLL_MAP.replace("epoll", "io_uring").replace("r-xp", "r--p")),
            "200": ("/system.slice/docker-def.scope", EPOLL_MAP.replace("epoll", "io_uring")),
        },
    )
    assert loaded_transports(proc, gateway) == {"epoll"}
    assert loaded_transports(proc, "/system.slice/docker-def.scope") == {"io_uring"}
    bucket = MemoryBucket()
    bucket.put_json(f"runs/{RUN}/tester/load-done.json", {"ok": True})
    clock = SteppingClock(100.0)
    assert (
        meter_gateway(
            bucket,
            RUNS,
            RUN,
            "spring-cloud-gateway",
            cgroup,
            clock=clock,
            interval=1.0,
            proc=proc,
            cgroup_root=root,
        )
        == 0
    )
    name = f"runs/{RUN}/cgroup/spring-cloud-gateway.jsonl"
    lines = [json.loads(line) for line in bucket.objects[name].decode().splitlines()]
    assert lines[-2:-1] == [{"loaded": ["epoll"]}]
    uploads = meter_uploads(bucket, RUNS, RUN)
    assert uploads["spring-cloud-gateway"].loaded == ["epoll"]
    assert uploads["spring-cloud-gateway"].done
    assert all("loaded" not in s.to_dict() for s in uploads["spring-cloud-gateway"].samples)
    # a meter without --proc says nothing of it
    meter_gateway(bucket, RUNS, RUN, "nginx", cgroup, clock=SteppingClock(100.0), interval=1.0)
    assert meter_uploads(bucket, RUNS, RUN)["nginx"].loaded is None
    # JVM gateways only; nothing native loaded is Java's NIO; a meter that did not look, nothing
    uploads["zuul"] = MeterUpload(loaded=[])
    uploads["nginx"] = MeterUpload(loaded=[])
    uploads["tyk"] = MeterUpload()
    assert jvm_transports(uploads) == {"spring-cloud-gateway": "epoll", "zuul": "nio"}
