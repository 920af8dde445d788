"""The Gatling engine: one JVM per run of phases, the generic simulation, our own log reader.

Launch (docs/engine.md): ``java -Xmx1G --add-opens ... -cp CLASSES:CLASSPATH
io.gatling.app.Gatling -s gatebench.GenericSimulation -rf DIR -nr`` with the workload file in
``-Dgatebench.workload``. The classpath is resolved once, by ``scripts/setup.d/40-gatling.sh``
in a checkout or on first use elsewhere (``gatebench.local._resources``); no Maven at run time. While the JVM runs, this module tails two files: the JVM's output
(``GATEBENCH start|progress|end|finished`` lines: the live display) and the binary
``simulation.log`` (the records: a phase is reported once a later ``__flush__N`` group proves
every record before it is on disk).

Gatling's HTTP client sends a request once more, on a new connection, when the pooled
connection it went on closed before a status line came (any method; not configurable), and
simulation.log then holds one request, OK, timed from the first attempt. The first attempt is a
failed request (docs/engine.md, "A connection closed without a response"): the simulation's
logback configuration writes the client's one trace of it, a "Retrying with new HTTP/1.1
connection" line with its time in milliseconds, to ``<name>-retries.log`` in the work folder,
and each line is a failed request of the phase whose time span holds it
(:func:`attribute_retries`): requests and KO + 1, with no time of its own (the resent
request's time includes it), never in the latency figures. A line outside every phase (a
control request's) counts nowhere.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gatebench.core.errors import RunError
from gatebench.core.simlog import GroupRecord, RequestRecord, SimLogReader
from gatebench.core.stats import PhaseSample
from gatebench.local._resources import gatling_files
from gatebench.local.engines._process import Launch, ProcessEngine, WatchedProcess
from gatebench.local.procs import ManagedProcess
from gatebench.run.ports import EngineEvent, EngineRun, Hooks, PhaseResult

SIMULATION = "gatebench.GenericSimulation"
GATLING_VERSION = "3.15.1"
JVM_OPTIONS = (
    "-Xmx1G",
    "-XX:+UseParallelGC",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
)
_MARKER = re.compile(r"^GATEBENCH (start|end|progress|finished) (\d+)(?: (\d+))?\s*$")
_FLUSH = re.compile(r"^__flush__(\d+)_")
_RETRY = re.compile(
    r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z Retrying with new HTTP/1\.1 connection\s*$"
)
RETRY_REASON = (
    "connection closed without a response (Gatling sent the request again on a new "
    "connection; no time measured for the failed attempt)"
)
"""The KO reason of a request Gatling sent again: its first attempt, which failed."""


def retry_times(lines: Sequence[str]) -> list[int]:
    """The epoch milliseconds of the "Retrying with new HTTP/1.1 connection" lines the
    simulation's logback configuration writes (``2026-12-07T17:50:38.425Z Retrying ...``, UTC);
    other lines are ignored."""
    out = []
    for line in lines:
        match = _RETRY.match(line)
        if match:
            at = datetime.strptime(match.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC)
            out.append(round(at.timestamp() * 1000))
    return out


def attribute_retries(sample: PhaseSample, start_ms: int, pending: list[int]) -> list[int]:
    """Count in ``sample`` (a phase's records, times in ms since the run's ``start_ms``) the
    resends of ``pending`` (epoch ms) its time span holds: each a failed request with no time
    of its own (the resent request's time includes it; a resend happens between its request's
    start and end, so inside the span of its phase; phases do not overlap). Returns the resends after the span (a later phase's); those before it
    belong to no phase (a control request's) and are dropped."""
    if sample.first_start is None:
        return pending
    first = start_ms + sample.first_start
    last = start_ms + (sample.last_end if sample.last_end is not None else sample.first_start)
    inside = sum(1 for t in pending if first <= t <= last)
    if inside:
        sample.add_unanswered(RETRY_REASON, inside)
    return [t for t in pending if t > last]


def gatling_paths() -> tuple[Path, Path]:
    """(compiled simulation classes, classpath file), built on first use; MissingTool when
    java or mvn is missing, RunError when the build fails."""
    classes, cp_file = gatling_files()
    if not (classes / "gatebench" / "GenericSimulation.class").is_file() or not cp_file.is_file():
        raise RunError(
            f"Gatling is not set up (no compiled simulation in {classes} or no {cp_file}); "
            "run `make setup-all` in a checkout (or unset GATEBENCH_GATLING_CLASSES/_CP)"
        )
    return classes, cp_file


def tls_options(tls: Mapping[str, Any] | None) -> list[str]:
    """Gatling's TLS settings for a workload document's ``tls``: trust the run's trust store
    alone (Gatling's default trusts every certificate) and check host names. Gatling reads
    its configuration from system properties over ``gatling.conf``."""
    if not tls:
        return []
    return [
        "-Dgatling.ssl.useInsecureTrustManager=false",
        f"-Dgatling.ssl.trustStore.file={tls['trust_store']}",
        "-Dgatling.ssl.trustStore.type=PKCS12",
        f"-Dgatling.ssl.trustStore.password={tls['trust_store_password']}",
        "-Dgatling.http.enableHostnameVerification=true",
    ]


class GatlingEngine(ProcessEngine[EngineRun]):
    name = "gatling"

    def __init__(self, java: str | None = None, jvm_options: Sequence[str] = JVM_OPTIONS) -> None:
        self.java = java or shutil.which("java") or "java"
        self.jvm_options = tuple(jvm_options)

    def check(self) -> None:
        gatling_paths()
        if shutil.which(self.java) is None and not Path(self.java).is_file():
            raise RunError("java is not installed (JDK 17 is needed for Gatling)")

    def version(self) -> str:
        try:
            out = subprocess.run(
                [self.java, "-version"], capture_output=True, text=True, timeout=20, check=False
            )
            jdk = (out.stderr.splitlines() or ["java ?"])[0].strip()
        except (OSError, subprocess.SubprocessError):
            jdk = "java ?"
        return f"Gatling {GATLING_VERSION} ({jdk})"

    def argv(
        self,
        workload_file: Path,
        results_dir: Path,
        tls: Mapping[str, Any] | None = None,
        retries: Path | None = None,
    ) -> list[str]:
        classes, cp_file = gatling_paths()
        classpath = f"{classes}:{cp_file.read_text(encoding='utf-8').strip()}"
        return [
            self.java,
            *self.jvm_options,
            *tls_options(tls),
            *((f"-Dgatebench.retries={retries}",) if retries is not None else ()),
            f"-Dgatebench.workload={workload_file}",
            "-cp",
            classpath,
            "io.gatling.app.Gatling",
            "-s",
            SIMULATION,
            "-rf",
            str(results_dir),
            "-nr",
        ]

    def launch(
        self, document: dict[str, Any], workdir: Path, hooks: Hooks, how: Launch
    ) -> EngineRun:
        """Run every phase of ``document``; report phases through ``hooks`` as they complete.

        With ``how.ready``, the JVM starts first and waits for a go file; ``how.ready()`` runs
        meanwhile (the runner boots the gateways) and the go file is written when it returns,
        so the JVM's start-up overlaps provisioning. ``how.wrapper`` prefixes the command (``ip
        netns exec NS``: a tester on a host of its own, gatebench.local._netns)."""
        workdir = workdir.resolve()  # the JVM runs in workdir: paths must not be relative
        workdir.mkdir(parents=True, exist_ok=True)
        go_file = workdir / f"{how.name}.go"
        go_file.unlink(missing_ok=True)
        if how.ready is not None:
            document = dict(document, go_file=str(go_file))
        workload_file = workdir / f"{how.name}-workload.json"
        workload_file.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        results_dir = workdir / f"{how.name}-results"
        log_path = workdir / f"{how.name}.log"
        retries_path = workdir / f"{how.name}-retries.log"
        retries_path.unlink(missing_ok=True)
        phases = document["phases"]
        index_of = [int(p["index"]) for p in phases]
        target_of = [str(p["target"]) for p in phases]
        started = time.monotonic()
        watched = WatchedProcess(
            how.supervisor,
            how.name,
            [
                *how.wrapper,
                *self.argv(workload_file, results_dir, document.get("tls"), retries_path),
            ],
            log_path=log_path,
            cwd=workdir,
            env=how.env,
        )
        proc = watched.proc
        if how.ready is not None:
            try:
                how.ready()
            except BaseException:
                watched.stop()
                raise
            go_file.touch()
        # read the groups now: how.ready() may have added the gateways it started
        watched.account(how.cpu_groups)
        sampler = watched.sampler
        tail = _Tail(log_path)
        retry_tail = _Tail(retries_path)
        resends: list[int] = []  # epoch ms of the resends not yet counted in a phase
        reader = SimLogReader()
        simlog: Path | None = None
        simlog_fh = None
        samples = [PhaseSample() for _ in phases]
        reported = 0
        result = EngineRun(log_path=log_path)
        first_start: float | None = None

        def report_up_to(n: int) -> None:
            nonlocal reported, resends
            header = reader.header
            if reported < min(n, len(phases)):
                # a resend's line is written before its request ends, so before the flush
                # that proves the phase complete: the file holds every resend of the phase
                resends.extend(retry_times(retry_tail.lines()))
            while reported < min(n, len(phases)):
                local = reported
                sample = samples[local]
                if header is not None:
                    resends = attribute_retries(sample, header.start_ms, resends)
                if header is not None and sample.first_start is not None:
                    start_ms = float(header.start_ms + sample.first_start)
                    end_ms = float(header.start_ms + (sample.last_end or sample.first_start))
                else:
                    start_ms = end_ms = time.time() * 1000.0
                groups = how.target_groups(target_of[local])
                cpu = sampler.usage(start_ms, end_ms, "tester", groups)
                cost = sampler.resources(start_ms, end_ms, "tester", groups)
                result.completed.append(index_of[local])
                hooks.on_phase(PhaseResult(index_of[local], sample, start_ms, end_ms, cpu, cost))
                samples[local] = PhaseSample()  # the records are handed over; free them
                reported += 1

        def consume(data: bytes) -> None:
            for record in reader.feed(data):
                if isinstance(record, RequestRecord):
                    if record.name.startswith("p") and record.name[1:].isdigit():
                        local = _local_index(record.name, index_of)
                        if local is not None:
                            samples[local].add(record.start, record.end, record.ok, record.message)
                    elif not record.ok and record.name == "__control__":
                        result.control_failures.append(record.message)
                elif isinstance(record, GroupRecord) and record.groups:
                    match = _FLUSH.match(record.groups[-1])
                    if match:
                        report_up_to(int(match.group(1)))

        def poll() -> None:
            nonlocal simlog, simlog_fh, first_start
            for line in tail.lines():
                match = _MARKER.match(line)
                if not match:
                    continue
                kind, a, b = match.group(1), int(match.group(2)), match.group(3)
                if kind == "finished" or a >= len(phases):
                    continue
                if kind == "start" and first_start is None:
                    first_start = time.monotonic()
                hooks.on_event(
                    EngineEvent(
                        kind,
                        index_of[a],
                        done=int(b) if kind == "progress" and b else 0,
                        at_ms=float(b) if kind != "progress" and b else 0.0,
                    )
                )
            if simlog is None:
                found = sorted(results_dir.glob("*/simulation.log"))
                if found:
                    simlog = found[-1]
                    simlog_fh = simlog.open("rb")
            if simlog_fh is not None:
                consume(simlog_fh.read())
            hooks.tick()

        try:
            code = watched.wait(poll)
        finally:
            if simlog_fh is not None:
                simlog_fh.close()
        result.exit_code = code
        result.raw_log = simlog
        result.wall_s = time.monotonic() - started
        result.startup_s = (first_start - started) if first_start is not None else result.wall_s
        if code != 0 or reported < len(phases):
            result.crashed = True
            result.reason = (
                f"Gatling exited with code {code} after {reported} of {len(phases)} phases; "
                f"last log lines:\n{_tail_text(proc)}"
            )
        return result


def _local_index(name: str, index_of: list[int]) -> int | None:
    global_index = int(name[1:])
    # phases are in schedule order: a binary search would do, but the common case is direct
    lo, hi = 0, len(index_of) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if index_of[mid] == global_index:
            return mid
        if index_of[mid] < global_index:
            lo = mid + 1
        else:
            hi = mid - 1
    return None


def _tail_text(proc: ManagedProcess) -> str:
    lines = [
        line for line in proc.log_tail(60).splitlines() if not line.startswith("GATEBENCH progress")
    ]
    return "\n".join(lines[-15:])


class _Tail:
    """New complete lines of a growing text file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def lines(self) -> list[str]:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return []
        self.offset += len(data)
        data = self.partial + data
        *complete, self.partial = data.split(b"\n")
        return [line.decode("utf-8", errors="replace") for line in complete]


__all__ = [
    "GATLING_VERSION",
    "RETRY_REASON",
    "GatlingEngine",
    "attribute_retries",
    "gatling_paths",
    "retry_times",
]
