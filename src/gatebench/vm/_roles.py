"""What the run's own VMs run (the runner image's ``gatebench cloud tester`` and
``gatebench cloud meter``; the backend VM's ``gatebench cloud backend`` is
gatebench.vm._backend); on one machine the local provisioner runs the same
commands.

The tester is the only machine that reaches every other one, so it checks the targets
answer, runs the load when the load build asks (through the bucket, see ``cloud._tester``), and
uploads the load engine's raw log, from which the ingest step computes the measurements. With a
TLS plan it trusts the run's CA alone (the certificate the provision build wrote: it writes
its trust store from it) and counts each phase's handshakes; with a fault, tester 0 kills and restarts the
replica (gatebench.vm._deployed). With
several testers they meet before every phase as they do locally: tester 0 serves the phase
barrier (gatebench.local._fanout.PhaseBarrier) on its VM, the others call it by tester 0's name
(``--barrier``), and tester 0 keeps who arrived at each phase with its ``load-done``.

The meter runs beside a gateway on its VM: it samples the gateway container's cgroup v2
files (CPU time, memory) every :data:`~gatebench.core.resources.SAMPLE_INTERVAL_S` and uploads the
samples to ``runs/RUN/cgroup/TARGET.jsonl`` every few seconds. Once every tester has written
``load-done`` it takes one more sample (so the last phase's end is covered) and uploads a last
time, the object ending with a ``meter_done`` line: the score step's ingest waits for that line
(bounded) before it turns the samples into each phase's gateway CPU seconds and peak memory
(gatebench.core.resources.cgroup_window), and notes a gateway whose line never came.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from gatebench.cloud import Storage
from gatebench.cloud._ingest import CGROUP_OBJECT, meter_done_line, raw_object
from gatebench.cloud._live import LIVE_PLAN, read_json
from gatebench.cloud._render import backend_error_object, config_error_object
from gatebench.cloud._tester import (
    POLL_S,
    Clock,
    fleet_testers,
    marker_of_tester,
    read_marker,
    read_required_json,
    wait_for_marker,
    write_marker,
)
from gatebench.cloud._tls import CA_OBJECT
from gatebench.core.errors import GatebenchError, RunError
from gatebench.core.model import BASELINE
from gatebench.core.resources import SAMPLE_INTERVAL_S, CgroupFormatError, CgroupSample
from gatebench.core.stats import counted
from gatebench.core.testers import split_document
from gatebench.core.tls import CA_CERT, TRUST_P12, trust_store
from gatebench.core.workload import is_engine_warmup
from gatebench.local._fanout import PhaseBarrier, barrier_controls, expected_testers
from gatebench.local.engines import get_engine
from gatebench.local.procs import Supervisor, http_probe
from gatebench.run.ports import EngineEvent, PhaseResult
from gatebench.vm._capacity import capacity_input, search_on_tester, serve_shares
from gatebench.vm._deployed import TesterWatch

BUILTIN_TOKEN = "gatebench-builtin"
"""The credential sent to gatebench's own backends when the spec names a secret the tester
does not have: they accept any non-empty token (examples/auction/README.md)."""
REQUEST_TIMEOUT_S = 86400.0
METER_UPLOAD_S = 5.0
"""How often the meter uploads its samples so far (each upload replaces the object)."""
METER_MAX_S = 6 * 3600.0
"""The meter stops after this long even if the tester never writes ``load-done``."""


class LiveProgram(Protocol):
    def __call__(
        self,
        storage: Storage,
        bucket: str,
        run_id: str,
        workdir: Path,
        plan: dict[str, Any],
        unreachable: dict[str, str],
    ) -> dict[str, Any]: ...


def raw_name(tester: int, testers: int) -> str:
    """The raw log's folder: ``gatling`` for a single tester, ``gatling-tT`` for tester T of
    several (gatebench.cloud ingests them together)."""
    return "gatling" if testers == 1 else f"gatling-t{tester}"


class _Quiet:
    def on_event(self, event: EngineEvent) -> None:
        pass

    def on_phase(self, result: PhaseResult) -> None:
        pass

    def tick(self) -> None:
        pass


def trust_run_ca(document: dict[str, Any], workdir: Path) -> str | None:
    """With a TLS plan: the run's CA (``tls.ca``: the certificate the provision build wrote,
    gatebench.cloud._tls) written into ``workdir/tls`` as a PEM file and as the engine's trust
    store, which the document then names; the PEM's path (None without TLS)."""
    tls = document.get("tls")
    if not isinstance(tls, dict):
        return None
    ca = str(tls.get("ca") or "")
    if not ca:
        raise RunError("the run has no CA certificate (the provision build writes it)")
    folder = workdir / "tls"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CA_CERT).write_text(ca, encoding="ascii")
    (folder / TRUST_P12).write_bytes(trust_store(ca.encode()))
    tls["trust_store"] = str((folder / TRUST_P12).resolve())
    return str((folder / CA_CERT).resolve())


def probe_targets(
    document: dict[str, Any],
    timeout: float,
    clock: Clock,
    ca_file: str | None = None,
    reported: Callable[[str], str | None] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """(targets that answered an HTTP request, {target: why not}) within ``timeout``; an
    ``https`` target over TLS, trusting ``ca_file`` alone. ``reported(target)``: why the
    target's VM did not start it, once the VM has said so (then nobody waits for it any more);
    asked every :data:`POLL_S` seconds while the target is silent."""
    urls: dict[str, str] = {}
    for phase in document.get("phases", []):
        warmup = is_engine_warmup(phase["target"], phase.get("repetition"), phase.get("measured"))
        if not warmup:
            urls.setdefault(phase["target"], phase["request"]["base_url"])
    reachable: list[str] = []
    unreachable: dict[str, str] = {}
    deadline = clock.now() + timeout
    next_report = clock.now()
    pending = dict(urls)
    while pending:
        for target, url in list(pending.items()):
            parts = urlsplit(url)
            tls = ca_file if parts.scheme == "https" else None
            if http_probe(parts.hostname or "", parts.port or 80, "/", ca_file=tls) is not None:
                reachable.append(target)
                del pending[target]
        if pending and reported is not None and clock.now() >= next_report:
            next_report = clock.now() + POLL_S
            for target, url in list(pending.items()):
                reason = reported(target)
                if reason is not None:
                    unreachable[target] = (
                        f"{url} did not answer: its VM did not start it ({reason})"
                    )
                    del pending[target]
        if not pending or clock.now() >= deadline:
            break
        clock.sleep(1.0)
    for target, url in pending.items():
        unreachable[target] = f"{url} did not answer within {timeout:g}s"
    return sorted(reachable), unreachable


class _Meeting:
    """One tester's side of the phase barrier on the cloud path (none with a single tester)."""

    def __init__(self, tester: int, url: str | None, served: PhaseBarrier | None) -> None:
        self.tester = tester
        self.url = url
        self.served = served

    def controls(self, document: dict[str, Any]) -> dict[str, Any]:
        """The tester's document with the barrier calls before every phase (tester 0 calls
        its own server on the loopback interface)."""
        if self.served is not None:
            return self.served.controls(document, self.tester)
        if self.url is not None:
            return barrier_controls(document, self.tester, self.url.rstrip("/"))
        return document

    def finished(self) -> dict[str, Any] | None:
        """This tester's load is over: nobody waits for it any more. Tester 0 answers who met
        at each phase (:meth:`PhaseBarrier.record`)."""
        if self.served is not None:
            self.served.gone(self.tester)
            return self.served.record()
        if self.url is not None:  # best effort: tester 0 may have ended already
            request = urllib.request.Request(
                f"{self.url.rstrip('/')}/gone/{self.tester}", method="POST"
            )
            with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=10):
                pass
        return None


@contextlib.contextmanager
def _meeting(
    url: str | None, tester: int, documents: Sequence[dict[str, Any]]
) -> Iterator[_Meeting]:
    """Tester 0 serves the barrier from the start (on every interface of its VM; on loopback
    when its URL says 127.0.0.1), until the block ends; the others only call it."""
    if url is None or len(documents) == 1 or tester != 0:
        yield _Meeting(tester, url if len(documents) > 1 else None, None)
        return
    parts = urlsplit(url)
    host = "127.0.0.1" if parts.hostname == "127.0.0.1" else "0.0.0.0"
    try:
        served = PhaseBarrier(expected_testers(documents), host=host, port=parts.port or 80)
    except OSError as exc:
        raise RunError(f"the phase barrier cannot listen on {host}:{parts.port}: {exc}") from None
    with served:
        yield _Meeting(tester, url, served)


def _step(tester: int, what: str) -> None:
    """One line of a tester's progress on its serial console (stderr): where it got to, so a
    tester that stops or hangs says after which step (the provision build's timeout names only
    the marker it waited for)."""
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    sys.stderr.write(f"gatebench: tester {tester}: {stamp} {what}\n")
    sys.stderr.flush()


def run_tester(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    ready_timeout: float,
    clock: Clock | None = None,
    tester: int = 0,
    testers: int = 1,
    barrier: str | None = None,
    live_program: LiveProgram | None = None,
) -> int:
    """Tester ``tester`` of ``testers``: its share of every phase (gatebench.core.testers), meeting
    the others before every phase at ``barrier`` (tester 0's phase barrier). A scale or
    change-under-load run (its program in the runs bucket) runs ``live_program`` instead
    (``gatebench.vm._live_tester.run_live_program``, handed in by the command line: it measures
    with ``gatebench.local.liveruns``, which builds on this package)."""
    clock = clock or Clock()
    workdir.mkdir(parents=True, exist_ok=True)
    _step(tester, f"reading the workload of {run_id}")
    documents = split_document(
        read_required_json(storage, bucket, f"runs/{run_id}/workload.json"), testers
    )
    with _meeting(barrier, tester, documents) as meeting:
        if meeting.served is not None:
            _step(tester, f"serving the phase barrier on port {meeting.served.port}")
        document = documents[tester]
        tls = document.get("tls")
        if isinstance(tls, dict) and not tls.get("ca"):  # the run's CA, from the provision build
            ca = storage.read_optional(bucket, CA_OBJECT.format(run_id=run_id))
            tls["ca"] = ca.decode("ascii") if ca is not None else ""
        ca_file = trust_run_ca(document, workdir)

        def reported(target: str) -> str | None:  # a VM that did not start its gateway
            said = storage.read_optional(
                bucket,
                backend_error_object(run_id)
                if target == BASELINE
                else config_error_object(run_id, target),
            )
            if said is None:
                return None
            try:
                reason = json.loads(said).get("reason")
            except (ValueError, AttributeError):
                reason = None
            return str(reason or "no reason given")

        _step(tester, f"waiting up to {ready_timeout:g}s for the targets to answer")
        reachable, unreachable = probe_targets(
            document, ready_timeout, clock, ca_file, reported=reported
        )
        for target in sorted(unreachable):  # one that said why only after the deadline
            reason = (
                reported(target) if "its VM did not start it" not in unreachable[target] else None
            )
            if reason is not None:
                unreachable[target] += f" ({reason})"
        write_marker(
            storage,
            bucket,
            run_id,
            marker_of_tester("ready", tester),
            {"reachable": reachable, "unreachable": unreachable},
        )
        _step(
            tester,
            f"ready: {counted(len(reachable), 'target')} answered, {len(unreachable)} did not",
        )
        if not reachable:
            return 3
        skip_file = workdir / "skip-targets.txt"
        skip_file.write_text("".join(f"{t}\n" for t in sorted(unreachable)), encoding="utf-8")
        document = dict(meeting.controls(document), skip_file=str(skip_file.resolve()))
        done_marker = marker_of_tester("load-done", tester)
        if read_marker(storage, bucket, run_id, done_marker) is not None:
            return 0  # a restarted tester: the load happened already
        _step(tester, "waiting for the load request")
        request = wait_for_marker(
            storage, bucket, run_id, "load-request", REQUEST_TIMEOUT_S, clock=clock
        )
        start_at = float(request.get("start_at") or 0.0)
        _step(tester, "the load request came: loading")

        def go() -> None:  # the JVM is up; every tester lets its load go at start_at
            clock.sleep(max(0.0, start_at - clock.now()))

        started = clock.now()
        program = read_json(storage, bucket, f"runs/{run_id}/{LIVE_PLAN}")
        if program is not None:  # route scale or a change under load (gatebench.vm._live_tester)
            if live_program is None:
                done = {"ok": False, "reason": "this tester cannot run a scale program"}
            else:
                done = live_program(storage, bucket, run_id, workdir, program, unreachable)
        else:
            capacity = capacity_input(storage, bucket, run_id)
            if capacity is not None:  # a capacity run: search instead (provisioners._vm_capacity)
                done = _capacity_signed(
                    storage,
                    bucket,
                    run_id,
                    workdir,
                    document,
                    capacity,
                    reachable,
                    tester,
                    testers,
                    clock,
                )
            else:
                watch = TesterWatch(document, tester)
                watch.start()
                try:
                    done = _load_signed(
                        storage,
                        bucket,
                        run_id,
                        workdir,
                        document,
                        raw_name(tester, testers),
                        go,
                        watch,
                    )
                finally:
                    watch.close()
                deployment = watch.summary()
                if deployment:
                    done["deployment"] = deployment
        met = meeting.finished()
        if met is not None:
            done["barrier"] = met
        write_marker(storage, bucket, run_id, done_marker, done)
        _step(tester, "load done" if done["ok"] else f"load failed: {done.get('reason')}")
        if meeting.served is not None:  # a tester left behind may still call the barrier
            _linger(storage, bucket, run_id, testers, max(60.0, clock.now() - started), clock)
    return 0 if done["ok"] else 3


def _linger(
    storage: Storage, bucket: str, run_id: str, testers: int, timeout: float, clock: Clock
) -> None:
    """Tester 0 keeps its barrier up until every tester has written ``load-done`` (at most
    ``timeout`` seconds: as long as its own load took)."""
    deadline = clock.now() + timeout
    while clock.now() < deadline and not all(
        read_marker(storage, bucket, run_id, marker_of_tester("load-done", t)) is not None
        for t in range(1, testers)
    ):
        clock.sleep(min(POLL_S, max(0.0, deadline - clock.now())))


def _load_signed(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    document: dict[str, Any],
    raw_as: str = "gatling",
    barrier: Callable[[], None] | None = None,
    listener: Any = None,
) -> dict[str, Any]:
    """:func:`_load`, with the run's credentials (:func:`_credentialed`)."""
    return _credentialed(
        storage,
        bucket,
        run_id,
        document,
        lambda env: _load(
            storage, bucket, run_id, workdir, document, env, raw_as, barrier, listener
        ),
    )


def _capacity_signed(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    document: dict[str, Any],
    capacity: dict[str, Any],
    reachable: list[str],
    tester: int,
    testers: int,
    clock: Clock,
) -> dict[str, Any]:
    """The capacity search (tester 0) or this tester's shares of its probes (the others), with
    the run's credentials (:func:`_credentialed`)."""

    def search(env: dict[str, str]) -> dict[str, Any]:
        try:
            if tester == 0:
                return search_on_tester(
                    storage, bucket, run_id, workdir, capacity, reachable, testers, env, clock
                )
            return serve_shares(
                storage, bucket, run_id, workdir, tester, env, clock, REQUEST_TIMEOUT_S
            )
        except GatebenchError as exc:
            return {"ok": False, "reason": str(exc)}

    return _credentialed(storage, bucket, run_id, document, search)


def _credentialed(
    storage: Storage,
    bucket: str,
    run_id: str,
    document: dict[str, Any],
    work: Callable[[dict[str, str]], dict[str, Any]],
) -> dict[str, Any]:
    """``work(env)`` once the tester has read the API key it sends (``auth.api_key``) and
    signed the run's tokens when its plan asks for it (``auth.jwt``: gatebench.vm._tokens);
    they are gone when it returns. ``env``: :data:`BUILTIN_TOKEN` for each secret variable
    without a value here, when the run has a backend of its own (``backend.json``). What stops
    it first is the marker's reason."""
    from gatebench.vm._tokens import client_key_on_tester, signed_tokens_on_tester

    with contextlib.ExitStack() as held:
        for holding, what in (
            (client_key_on_tester, "read the run's API key"),
            (signed_tokens_on_tester, "sign the run's tokens"),
        ):
            try:
                held.enter_context(holding(document))
            except RunError as exc:
                return {"ok": False, "reason": f"the tester could not {what}: {exc}"}
        missing = [name for name in document.get("secret_env", []) if not os.environ.get(name)]
        if missing and storage.read_optional(bucket, f"runs/{run_id}/backend.json") is None:
            return {"ok": False, "reason": f"the tester has no value for {', '.join(missing)}"}
        return work(dict.fromkeys(missing, BUILTIN_TOKEN))


def _load(
    storage: Storage,
    bucket: str,
    run_id: str,
    workdir: Path,
    document: dict[str, Any],
    env: dict[str, str],
    raw_as: str = "gatling",
    barrier: Callable[[], None] | None = None,
    listener: Any = None,
) -> dict[str, Any]:
    started = time.time()
    try:
        with Supervisor() as supervisor:
            result = get_engine().run(
                document,
                workdir,
                listener if listener is not None else _Quiet(),
                supervisor=supervisor,
                name="gatling",
                env=env,
                ready=barrier,
            )
    except GatebenchError as exc:
        return {"ok": False, "reason": str(exc)}
    raw = []
    if result.raw_log is not None and result.raw_log.exists():
        name = raw_object(run_id, raw_as)
        storage.upload_file(bucket, name, result.raw_log)  # streamed, never read whole
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


def load_finished(storage: Storage, bucket: str, run_id: str) -> bool:
    """Every tester of the run has written ``load-done`` (the load build writes it for a
    tester that never answered)."""
    testers = fleet_testers(storage, bucket, run_id)
    return all(
        read_marker(storage, bucket, run_id, marker_of_tester("load-done", t)) is not None
        for t in range(testers)
    )


NATIVE_TRANSPORTS = {
    "netty_transport_native_epoll": "epoll",
    "netty_transport_native_io_uring": "io_uring",
}
"""Netty's native transports, by the file name of their library: a JVM gateway's Netty uses one
only when it could load it (from java.io.tmpdir, which must be executable), else Java's NIO."""


def loaded_transports(proc: Path, cgroup: str) -> set[str]:
    """The native transports (:data:`NATIVE_TRANSPORTS`) whose code any process of the cgroup
    ``cgroup`` (its path, as ``/proc/PID/cgroup`` names it on cgroup v2) has mapped executable,
    from ``proc`` (the host's /proc). Only an executable mapping counts: a load that failed on a
    ``noexec`` folder can leave the library's first, read-only segment mapped."""
    found: set[str] = set()
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            lines = (entry / "cgroup").read_text().splitlines()
            if f"0::{cgroup}" not in lines:
                continue
            maps = (entry / "maps").read_text(errors="replace").splitlines()
        except OSError:  # gone, or not ours to read
            continue
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and "x" in fields[1]:
                found |= {name for lib, name in NATIVE_TRANSPORTS.items() if lib in fields[5]}
    return found


def meter_gateway(
    storage: Storage,
    bucket: str,
    run_id: str,
    target: str,
    cgroup_dir: Path,
    clock: Clock | None = None,
    interval: float = SAMPLE_INTERVAL_S,
    proc: Path | None = None,
    cgroup_root: Path | None = None,
) -> int:
    """Sample the gateway container's cgroup until every tester has written ``load-done`` (or
    :data:`METER_MAX_S` passes), uploading the samples as it goes; the last upload, after one
    more sample, ends with the ``meter_done`` line. With ``proc`` (the host's /proc) each upload
    also says which native transports the container's processes loaded (a ``{"loaded": [...]}``
    line; ``cgroup_root``: where the host's cgroup hierarchy is mounted, so that ``cgroup_dir``
    names the container's cgroup path). Returns 0, or 3 when the cgroup cannot be read at the
    start."""
    clock = clock or Clock()
    loaded: set[str] = set()
    cgroup_path = (
        "/" + str(cgroup_dir.relative_to(cgroup_root)).strip("/")
        if cgroup_root is not None and cgroup_dir.is_relative_to(cgroup_root)
        else None
    )
    name = CGROUP_OBJECT.format(run_id=run_id, target=target)
    lines: list[str] = []
    started = clock.now()
    last_upload = started
    try:
        lines.append(json.dumps(read_cgroup(cgroup_dir, started * 1000.0).to_dict()))
    except RunError as exc:
        sys.stderr.write(f"gatebench: meter: {exc}\n")
        return 3

    def sample() -> float:
        now = clock.now()
        try:
            lines.append(json.dumps(read_cgroup(cgroup_dir, now * 1000.0).to_dict()))
        except RunError as exc:  # the container restarted: keep what was read
            sys.stderr.write(f"gatebench: meter: {exc}\n")
        return now

    def upload(*final: str) -> None:
        if proc is not None and cgroup_path is not None:
            loaded.update(loaded_transports(proc, cgroup_path))
        found = [json.dumps({"loaded": sorted(loaded)})] if proc is not None else []
        text = "".join(f"{line}\n" for line in [*lines, *found, *final])
        storage.write(bucket, name, text, "application/x-ndjson")

    why = "time limit"
    while True:
        clock.sleep(interval)
        now = sample()
        if now - last_upload >= METER_UPLOAD_S:
            upload()
            last_upload = now
            if load_finished(storage, bucket, run_id):
                why = "load-done"
                break
        if now - started >= METER_MAX_S:
            break
    # load-done was written after the last phase ended: a sample taken after seeing it covers
    # every phase's end.
    clock.sleep(interval)
    now = sample()
    upload(meter_done_line(now * 1000.0, why))
    return 0
