"""What a phase cost: the sampler's accounting of a real process, the window arithmetic, the
cgroup v2 reading side of the cloud path (on sample files) and its VM-side meter."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gatebench.cloud._ingest import MeterUpload, meter_uploads
from gatebench.core.measure import with_gateway_cgroup
from gatebench.core.model import Measurement
from gatebench.core.resources import (
    MB,
    CgroupFormatError,
    CgroupSample,
    PhaseResources,
    UsageSample,
    cgroup_resources,
    cgroup_window,
    parse_flat_keyed,
    parse_single_value,
    requests_per_cpu_s,
    window_usage,
)
from gatebench.local.engines.cpu import CpuSampler, exited_unreaped
from gatebench.local.procs import Supervisor
from gatebench.vm._roles import meter_gateway, read_cgroup
from paths import DATA

CGROUP = DATA / "cgroup"


def test_window_usage_interpolates_cpu_and_takes_the_peak_around_the_window() -> None:
    samples = [
        UsageSample(1000.0, 10.0, 100 * MB),
        UsageSample(2000.0, 11.0, 300 * MB),
        UsageSample(3000.0, 13.0, 200 * MB),
        UsageSample(4000.0, 13.5, 900 * MB),
    ]
    # CPU: 10.5 at 1500, 12.0 at 2500; memory: the samples at 1000..3000 (around and inside)
    assert window_usage(samples, 1500.0, 2500.0) == (1.5, 300.0)
    # a window between two samples still sees the samples on each side of it
    assert window_usage(samples, 3100.0, 3200.0) == pytest.approx((0.05, 900.0))
    # cut to the samples' span; outside it, nothing
    assert window_usage(samples, 500.0, 1000.0) == (0.0, 100.0)
    assert window_usage(samples, 4500.0, 5000.0) is None
    assert window_usage(samples[:1], 1000.0, 1000.0) is None


def test_requests_per_cpu_second_needs_enough_cpu() -> None:
    assert requests_per_cpu_s(1000, 0.5) == 2000.0
    assert requests_per_cpu_s(1000, 0.09) is None  # under 10 ticks: too coarse to divide by
    assert requests_per_cpu_s(1000, None) is None
    assert requests_per_cpu_s(0, 1.0) is None


def test_a_real_process_burning_cpu_and_holding_memory_is_measured(tmp_path: Path) -> None:
    """A child that holds 150 MB and burns at least 0.6 s of CPU (its own CPU clock, so the
    machine's load cannot shorten it), beside an idle one: the sampler gives the busy one at
    least the CPU it burnt and at least the memory it held, and more of both than the idle."""
    go = tmp_path / "go"
    # The child burns only once the first sample is taken (the file appears): on a busy
    # machine this test may be descheduled between starting it and that first sample.
    busy = (
        "import os, time\n"
        f"while not os.path.exists({str(go)!r}):\n"
        "    time.sleep(0.01)\n"
        "start = time.process_time()\n"
        "block = b'x' * (150 * 1024 * 1024)\n"
        "while time.process_time() - start < 0.6:\n"
        "    pass\n"
        "print(len(block))\n"
    )
    idle = "import time; time.sleep(1.5)"
    with Supervisor() as supervisor:
        gw = supervisor.start("busy", [sys.executable, "-c", busy], log_path=tmp_path / "b.log")
        be = supervisor.start("idle", [sys.executable, "-c", idle], log_path=tmp_path / "i.log")
        sampler = CpuSampler()
        sampler.set_groups({"gw:busy": [gw.pid], "backend": [be.pid], "tester": [be.pid]})
        start_ms = time.time() * 1000.0
        sampler.sample()
        go.touch()
        deadline = time.monotonic() + 60
        while not exited_unreaped(gw.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
            sampler.sample()
        sampler.sample()
        end_ms = time.time() * 1000.0
        assert gw.wait() == 0
    cost = sampler.resources(start_ms, end_ms, "tester", ["gw:busy", "backend"])
    assert cost is not None
    assert cost.gateway_cpu_s is not None and cost.backend_cpu_s is not None
    assert cost.gateway_rss_mb is not None and cost.backend_rss_mb is not None
    assert cost.gateway_cpu_s >= 0.55  # it burnt 0.6 s (clock ticks: 10 ms each)
    assert cost.gateway_cpu_s <= (end_ms - start_ms) / 1000.0 * 2 + 0.1
    assert cost.gateway_cpu_s > cost.backend_cpu_s + 0.4
    assert cost.gateway_rss_mb >= 150
    assert cost.gateway_rss_mb > cost.backend_rss_mb + 100
    # the baseline's window: no gateway group, so no gateway figures
    baseline = sampler.resources(start_ms, end_ms, "tester", ["backend"])
    assert baseline is not None and baseline.gateway_cpu_s is None
    assert baseline.backend_cpu_s == cost.backend_cpu_s


def test_cgroup_files_are_parsed() -> None:
    before = read_cgroup(CGROUP / "before", 1000.0)
    assert before == CgroupSample(
        wall_ms=1000.0,
        usage_usec=2_500_000,
        memory_current=50 * MB,
        inactive_file=5 * MB,
        memory_peak=60 * MB,
    )
    stat = parse_flat_keyed((CGROUP / "after" / "cpu.stat").read_text(), "cpu.stat")
    assert stat["user_usec"] + stat["system_usec"] == stat["usage_usec"] == 4_000_000


def test_cgroup_window_from_two_snapshots() -> None:
    before = read_cgroup(CGROUP / "before", 1000.0)
    after = read_cgroup(CGROUP / "after", 3000.0)
    # 1.5 s of CPU between them; memory.peak rose from 60 to 100 MB inside the window, so the
    # peak is that high less the inactive cache (95 MB), above the sampled 45 and 65 MB
    assert cgroup_window([after, before], 1000.0, 3000.0) == (1.5, 95.0)
    assert cgroup_window([before, after], 1500.0, 2500.0) == (0.75, 95.0)
    # without memory.peak (kernels before 5.19) the sampled working set is the peak
    no_peak = [
        CgroupSample(s.wall_ms, s.usage_usec, s.memory_current, s.inactive_file)
        for s in (before, after)
    ]
    assert cgroup_window(no_peak, 1000.0, 3000.0) == (1.5, 65.0)
    assert cgroup_resources([before, after], 1000.0, 3000.0) == PhaseResources(
        gateway_cpu_s=1.5, gateway_rss_mb=95.0
    )
    assert cgroup_resources([before, after], 5000.0, 6000.0) == PhaseResources()


def test_cgroup_format_errors_say_what_was_expected(tmp_path: Path) -> None:
    with pytest.raises(CgroupFormatError) as info:
        parse_flat_keyed("usage_usec 12\nnr_periods many\n", "cpu.stat")
    assert str(info.value) == (
        "cpu.stat line 2: expected 'key value' (a whole number), got 'nr_periods many'"
    )
    with pytest.raises(CgroupFormatError) as info:
        parse_single_value("max\n", "memory.peak")
    assert str(info.value) == "memory.peak: expected a number of bytes, got 'max'"
    with pytest.raises(CgroupFormatError) as info:
        CgroupSample.from_files(0.0, "user_usec 1\n", "10\n")
    assert str(info.value) == "cpu.stat: no usage_usec line (is this cgroup v2?)"


def _measurement(target: str, started_at: float, duration_s: float) -> Measurement:
    return Measurement(
        "r", target, "w", 1, 3000, 3000, 0, 0.0, 1500.0, 0.0, 1.0, 5.0, 0.5, 1.0, 2.0, 3.0, 4.0,
        started_at=started_at, duration_s=duration_s,
    )  # fmt: skip


def test_cloud_measurements_get_their_gateways_cgroup_figures() -> None:
    before = read_cgroup(CGROUP / "before", 1000.0)
    after = read_cgroup(CGROUP / "after", 3000.0)
    ms = [_measurement("nginx", 1.0, 2.0), _measurement("baseline", 1.0, 2.0)]
    out = with_gateway_cgroup(ms, {"nginx": [before, after]})
    assert (out[0].gateway_cpu_s, out[0].gateway_rss_mb) == (1.5, 95.0)
    assert out[0].req_per_cpu_s == 2000.0
    assert out[1] is ms[1]  # no samples for the baseline: unchanged
    assert with_gateway_cgroup(ms, {"nginx": [before]})[0] is ms[0]  # samples do not cover it


class MemoryBucket:
    """A stand-in for the runs bucket (Cloud Storage does not run here): objects in a dict."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}
        self.writes = 0

    def write(self, bucket: str, name: str, data: bytes | str, content_type: str = "") -> None:
        self.objects[(bucket, name)] = data.encode() if isinstance(data, str) else data
        self.writes += 1

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        return self.objects.get((bucket, name))

    def names(self, bucket: str, prefix: str) -> list[str]:
        return sorted(n for b, n in self.objects if b == bucket and n.startswith(prefix))


class SteppingClock:
    """Time that moves only when the meter sleeps; the tester's load-done marker appears at
    ``done_at`` seconds, and the container's CPU counter grows 0.1 s per second."""

    def __init__(self, bucket: MemoryBucket, cgroup: Path, done_at: float) -> None:
        self.t = 100.0
        self.bucket, self.cgroup, self.done_at = bucket, cgroup, 100.0 + done_at

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds
        usage = int((self.t - 100.0) * 100_000)
        (self.cgroup / "cpu.stat").write_text(f"usage_usec {usage}\nuser_usec {usage}\n")
        marker = self.bucket.read_optional("runs", "runs/r-1/tester/load-done.json")
        if self.t >= self.done_at and marker is None:
            self.bucket.write("runs", "runs/r-1/tester/load-done.json", json.dumps({"ok": True}))


def test_the_meter_samples_until_the_load_is_done_and_the_ingest_reads_it(tmp_path: Path) -> None:
    cgroup = tmp_path / "docker-abc.scope"
    cgroup.mkdir()
    (cgroup / "cpu.stat").write_text("usage_usec 0\n")
    (cgroup / "memory.current").write_text(f"{40 * MB}\n")
    bucket = MemoryBucket()
    clock: Any = SteppingClock(bucket, cgroup, done_at=12.0)
    assert meter_gateway(bucket, "runs", "r-1", "nginx", cgroup, clock=clock, interval=1.0) == 0
    lines = bucket.objects[("runs", "runs/r-1/cgroup/nginx.jsonl")].decode().splitlines()
    samples = [CgroupSample.from_dict(json.loads(line)) for line in lines[:-1]]
    # one sample at the start and one per second until the first upload after load-done (15 s),
    # then one more after seeing it; the last upload ends with the meter_done line
    assert [s.wall_ms for s in samples] == [1000.0 * (100 + i) for i in range(17)]
    assert json.loads(lines[-1]) == {"meter_done": True, "wall_ms": 116_000.0, "why": "load-done"}
    assert bucket.writes == 5  # the marker, and uploads at 5, 10, 15 s and a last one
    assert meter_uploads(bucket, "runs", "r-1") == {"nginx": MeterUpload(samples, done=True)}
    assert cgroup_window(samples, 102_000.0, 104_000.0) == (pytest.approx(0.2), 40.0)


def test_the_meter_says_when_the_cgroup_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bucket = MemoryBucket()
    clock: Any = SteppingClock(bucket, tmp_path, done_at=0.0)
    assert meter_gateway(bucket, "runs", "r-1", "nginx", tmp_path / "nope", clock=clock) == 3
    assert capsys.readouterr().err == (
        f"gatebench: meter: {tmp_path / 'nope'}: no cpu.stat or memory.current; expected the "
        "gateway container's cgroup v2 directory (mount /sys/fs/cgroup into the meter's "
        "container)\n"
    )
    assert bucket.objects == {}
