"""The Gatling engine: one JVM per run of phases, the generic simulation, our own log reader.

Launch (docs/engine.md): ``java -Xmx1G --add-opens ... -cp CLASSES:CLASSPATH
io.gatling.app.Gatling -s gatebench.GenericSimulation -rf DIR -nr`` with the workload file in
``-Dgatebench.workload``. The classpath is resolved once, by ``scripts/setup.d/40-gatling.sh``
in a checkout or on first use elsewhere (``gatebench.local._resources``); no Maven at run time. While the JVM runs, this module tails two files: the JVM's output
(``GATEBENCH start|progress|end|finished`` lines: the live display) and the binary
``simulation.log`` (the records: a phase is reported once a later ``__flush__N`` group proves
every record before it is on disk).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
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
        self, workload_file: Path, results_dir: Path, tls: Mapping[str, Any] | None = None
    ) -> list[str]:
        classes, cp_file = gatling_paths()
        classpath = f"{classes}:{cp_file.read_text(encoding='utf-8').strip()}"
        return [
            self.java,
            *self.jvm_options,
            *tls_options(tls),
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
        phases = document["phases"]
        index_of = [int(p["index"]) for p in phases]
        target_of = [str(p["target"]) for p in phases]
        started = time.monotonic()
        watched = WatchedProcess(
            how.supervisor,
            how.name,
            [*how.wrapper, *self.argv(workload_file, results_dir, document.get("tls"))],
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
        reader = SimLogReader()
        simlog: Path | None = None
        simlog_fh = None
        samples = [PhaseSample() for _ in phases]
        reported = 0
        result = EngineRun(log_path=log_path)
        first_start: float | None = None

        def report_up_to(n: int) -> None:
            nonlocal reported
            header = reader.header
            while reported < min(n, len(phases)):
                local = reported
                sample = samples[local]
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


__all__ = ["GATLING_VERSION", "GatlingEngine", "gatling_paths"]
