"""What the run's own VMs run (the runner image's ``gatebench cloud backend``,
``gatebench cloud tester`` and ``gatebench cloud meter``); on one machine the local
provisioner runs the same commands.

The tester is the only machine that reaches every other one, so it checks the targets
answer, runs the load when the load build asks (through the bucket, see ``cloud._tester``), and
uploads the load engine's raw log, from which the ingest step computes the measurements.

The meter runs beside a gateway on its VM: it samples the gateway container's cgroup v2
files (CPU time, memory) every :data:`~gatebench.resources.SAMPLE_INTERVAL_S` and uploads the
samples to ``runs/RUN/cgroup/TARGET.jsonl`` every few seconds and once more when the tester
writes ``load-done``; the ingest step turns them into each phase's gateway CPU seconds and
peak memory (gatebench.resources.cgroup_window).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..backends import backend_binary
from ..cloud import Storage
from ..cloud._tester import Clock, marker_of_tester, read_marker, wait_for_marker, write_marker
from ..engines import EngineEvent, PhaseResult, get_engine
from ..errors import GatebenchError, RunError
from ..procs import Supervisor, http_probe
from ..resources import SAMPLE_INTERVAL_S, CgroupFormatError, CgroupSample
from ..testers import split_document

BUILTIN_TOKEN = "gatebench-builtin"
"""The credential sent to gatebench's own backends when the spec names a secret the tester
does not have: they accept any non-empty token (examples/auction/README.md)."""
REQUEST_TIMEOUT_S = 86400.0
RAW_OBJECT = "runs/{run_id}/raw/{name}/simulation.log"
CGROUP_OBJECT = "runs/{run_id}/cgroup/{target}.jsonl"
METER_UPLOAD_S = 5.0
"""How often the meter uploads its samples so far (each upload replaces the object)."""
METER_MAX_S = 6 * 3600.0
"""The meter stops after this long even if the tester never writes ``load-done``."""


def raw_name(tester: int, testers: int) -> str:
    """The raw log's folder: ``gatling`` for a single tester, ``gatling-tT`` for tester T of
    several (gatebench.cloud ingests them together)."""
    return "gatling" if testers == 1 else f"gatling-t{tester}"


def _read_json(storage: Storage, bucket: str, name: str) -> Any:
    data = storage.read_optional(bucket, name)
    if data is None:
        raise RunError(f"gs://{bucket}/{name} is missing")
    return json.loads(data)


def serve_backend(storage: Storage, bucket: str, run_id: str) -> int:
    """Run the plan's backend in the foreground (the backend VM's container)."""
    spec = _read_json(storage, bucket, f"runs/{run_id}/backend.json")
    argv = [str(backend_binary()), "-listen", spec["listen"], "-mode", spec["mode"]]
    with tempfile.TemporaryDirectory() as scratch, Supervisor() as supervisor:
        if spec.get("config_object"):
            config = Path(scratch) / "mock-backend.json"
            config.write_bytes(
                json.dumps(_read_json(storage, bucket, spec["config_object"])).encode()
            )
            argv += ["-config", str(config)]
        proc = supervisor.start("backend", argv, log_path=Path(scratch) / "backend.log")
        code = proc.popen.wait()
        sys.stderr.write(proc.log_tail())
        return code


class _Quiet:
    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        pass

    def tick(self) -> None:
        pass


def probe_targets(
    document: dict[str, Any], timeout: float, clock: Clock
) -> tuple[list[str], dict[str, str]]:
    """(targets that answered an HTTP request, {target: why not}) within ``timeout``."""
    urls: dict[str, str] = {}
    for phase in document.get("phases", []):
        urls.setdefault(phase["target"], phase["request"]["base_url"])
    reachable: list[str] = []
    deadline = clock.now() + timeout
    pending = dict(urls)
    while pending:
        for target, url in list(pending.items()):
            parts = urlsplit(url)
            if http_probe(parts.hostname or "", parts.port or 80, "/") is not None:
                reachable.append(target)
                del pending[target]
        if not pending or clock.now() >= deadline:
            break
        clock.sleep(1.0)
    unreachable = {t: f"{u} did not answer within {timeout:g}s" for t, u in pending.items()}
    return sorted(reachable), unreachable


def run_tester(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    ready_timeout: float,
    clock: Clock | None = None,
    tester: int = 0,
    testers: int = 1,
) -> int:
    """Tester ``tester`` of ``testers``: its share of every phase (gatebench.testers)."""
    clock = clock or Clock()
    workdir.mkdir(parents=True, exist_ok=True)
    document = _read_json(storage, bucket, f"runs/{run_id}/workload.json")
    document = split_document(document, testers)[tester]
    reachable, unreachable = probe_targets(document, ready_timeout, clock)
    write_marker(
        storage,
        bucket,
        run_id,
        marker_of_tester("ready", tester),
        {"reachable": reachable, "unreachable": unreachable},
    )
    if not reachable:
        return 3
    skip_file = workdir / "skip-targets.txt"
    skip_file.write_text("".join(f"{t}\n" for t in sorted(unreachable)), encoding="utf-8")
    document = dict(document, skip_file=str(skip_file.resolve()))
    done_marker = marker_of_tester("load-done", tester)
    if read_marker(storage, bucket, run_id, done_marker) is not None:
        return 0  # a restarted tester: the load happened already
    request = wait_for_marker(
        storage, bucket, run_id, "load-request", REQUEST_TIMEOUT_S, clock=clock
    )
    start_at = float(request.get("start_at") or 0.0)

    def barrier() -> None:  # the JVM is up; every tester lets its load go at start_at
        clock.sleep(max(0.0, start_at - clock.now()))

    done = _load_signed(
        storage, bucket, run_id, workdir, document, raw_name(tester, testers), barrier
    )
    write_marker(storage, bucket, run_id, done_marker, done)
    return 0 if done["ok"] else 3


def _load_signed(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    document: dict[str, Any],
    raw_as: str = "gatling",
    barrier: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """:func:`_load`, after the tester signed the run's tokens when its plan asks for it
    (``auth.jwt``: gatebench.provisioners._vm_tokens); they are gone when the load ends."""
    from ._vm_tokens import signed_tokens_on_tester

    try:
        with signed_tokens_on_tester(document):
            return _load(storage, bucket, run_id, workdir, document, raw_as, barrier)
    except RunError as exc:  # _load reports its own failures: this is the signing's
        return {"ok": False, "reason": f"the tester could not sign the run's tokens: {exc}"}


def _load(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    document: dict[str, Any],
    raw_as: str = "gatling",
    barrier: Callable[[], None] | None = None,
) -> dict[str, Any]:
    env = {}
    missing = [name for name in document.get("secret_env", []) if not os.environ.get(name)]
    if missing and storage.read_optional(bucket, f"runs/{run_id}/backend.json") is None:
        return {"ok": False, "reason": f"the tester has no value for {', '.join(missing)}"}
    env = dict.fromkeys(missing, BUILTIN_TOKEN)
    started = time.time()
    try:
        with Supervisor() as supervisor:
            result = get_engine().run(
                document,
                workdir,
                _Quiet(),
                supervisor=supervisor,
                name="gatling",
                env=env,
                ready=barrier,
            )
    except GatebenchError as exc:
        return {"ok": False, "reason": str(exc)}
    raw = []
    if result.raw_log is not None and result.raw_log.exists():
        name = RAW_OBJECT.format(run_id=run_id, name=raw_as)
        storage.write(bucket, name, result.raw_log.read_bytes(), "application/octet-stream")
        raw.append(name)
    ok = not result.crashed and bool(raw)
    return {
        "ok": ok,
        "reason": None if ok else (result.reason or "the load engine wrote no raw log"),
        "raw": raw,
        "completed": len(result.completed),
        "seconds": round(time.time() - started, 1),
    }


def read_cgroup(cgroup_dir: Path, wall_ms: float) -> CgroupSample:
    """One sample of a cgroup v2 directory (``cpu.stat``, ``memory.current``, and
    ``memory.stat`` and ``memory.peak`` where the kernel has them)."""

    def text(name: str) -> str | None:
        try:
            return (cgroup_dir / name).read_text(encoding="ascii")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise RunError(f"{cgroup_dir / name}: cannot read: {exc.strerror or exc}") from None

    cpu_stat, current = text("cpu.stat"), text("memory.current")
    if cpu_stat is None or current is None:
        raise RunError(
            f"{cgroup_dir}: no cpu.stat or memory.current; expected the gateway container's "
            "cgroup v2 directory (mount /sys/fs/cgroup into the meter's container)"
        )
    try:
        return CgroupSample.from_files(
            wall_ms, cpu_stat, current, text("memory.stat") or "", text("memory.peak")
        )
    except CgroupFormatError as exc:
        raise RunError(f"{cgroup_dir}: {exc}") from None


def meter_gateway(
    storage: Storage,
    bucket: str,
    run_id: str,
    target: str,
    cgroup_dir: Path,
    clock: Clock | None = None,
    interval: float = SAMPLE_INTERVAL_S,
) -> int:
    """Sample the gateway container's cgroup until the tester writes ``load-done`` (or
    :data:`METER_MAX_S` passes), uploading the samples as it goes. Returns 0, or 3 when the
    cgroup cannot be read at the start."""
    clock = clock or Clock()
    name = CGROUP_OBJECT.format(run_id=run_id, target=target)
    lines: list[str] = []
    started = clock.now()
    last_upload = started
    try:
        lines.append(json.dumps(read_cgroup(cgroup_dir, started * 1000.0).to_dict()))
    except RunError as exc:
        sys.stderr.write(f"gatebench: meter: {exc}\n")
        return 3

    def upload() -> None:
        storage.write(bucket, name, "".join(f"{line}\n" for line in lines), "application/x-ndjson")

    while True:
        clock.sleep(interval)
        now = clock.now()
        try:
            lines.append(json.dumps(read_cgroup(cgroup_dir, now * 1000.0).to_dict()))
        except RunError as exc:  # the container restarted: keep what was read
            sys.stderr.write(f"gatebench: meter: {exc}\n")
        if now - last_upload >= METER_UPLOAD_S:
            upload()
            last_upload = now
            if read_marker(storage, bucket, run_id, "load-done") is not None:
                break
        if now - started >= METER_MAX_S:
            break
    upload()
    return 0
