"""The ingest step: a raw load-engine log in the runs bucket → the run's measurements in
the result store (``gatebench.core.measure.ingest_simlog``, the same code the laptop uses).

It runs twice on purpose, both idempotent (a measurement is overwritten by the same one):
the ``ingest`` function on each raw log as it lands (object-finalized events), so results
show up during the run, and the score step over every raw log of the run before scoring, so
a late or lost event never loses a measurement.

With several testers (the fleet's ``tester.count``) a phase is split across their logs
(``raw/RUN/gatling-tT/``): nothing is stored until every tester has said it finished
(``tester/load-done*.json``, which the load build writes for a tester that never answered), then
every log is merged at once (``gatebench.core.testers.ingest_tester_logs``); a failed tester's
unfinished phases are ``partial``.

Each gateway VM's meter uploads its container's cgroup samples to ``cgroup/TARGET.jsonl``,
the last upload ending with a ``meter_done`` line; that upload can come after the load build
ended. So the score step (:func:`ingest_run` with ``meter_wait_s``) waits, bounded, for the
``meter_done`` line of every gateway it has measured phases of before it attaches the samples;
a gateway whose phases still lack CPU or memory figures then gets a note in the run record
(``environment.meter_gaps``: which phases, which object, why), never a silent gap. The
``ingest`` function, which runs while the load is going on, does not wait.

A plan's deployment (docs/cloud.md, "TLS and replicas"): each tester's ``load-done`` carries
what it watched besides the engine (gatebench.vm._deployed), and
:func:`with_deployment` turns it into each measured phase's figures, as the local path's
``gatebench.local._deployed`` does: the TLS handshakes every tester counted (summed; none when a
tester could not watch), and for a phase that carried the fault its impact
(``gatebench.core.fault.fault_impact``) from the phase's own requests in the raw logs, the kill's
time and the connection attempts the backend VM saw to the dead replica. What could not be
observed is said in the run record (``environment.deployment_notes``), not filled in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from gatebench.cloud._objects import VARS_OBJECT
from gatebench.cloud._tester import Clock, fleet_testers, marker, marker_of_tester
from gatebench.cloud._tls import CA_OBJECT
from gatebench.core.errors import GatebenchError
from gatebench.core.fault import Request, fault_impact, requests_by_phase
from gatebench.core.measure import ingest_simlog, with_gateway_cgroup
from gatebench.core.model import BASELINE, Measurement
from gatebench.core.resources import CgroupSample
from gatebench.core.simlog import read_simlog
from gatebench.core.stats import counted
from gatebench.core.testers import ingest_tester_logs
from gatebench.core.trust import CEILING_TARGET
from gatebench.store import ResultStore

RAW_PREFIX = "raw/"
"""Where every raw log of every run is, apart from the rest of the run's objects (runs/RUN/):
the bucket's notification to the ingest function fires for this prefix alone (infra/modules/
functions), not for the markers, meters' samples and other objects a run writes."""
RAW_LOG = re.compile(r"^raw/(r-[0-9a-f]{20})/[A-Za-z0-9._-]+/simulation\.log$")


def raw_object(run_id: str, name: str) -> str:
    """A raw log's object: ``raw/RUN/NAME/simulation.log`` (NAME: ``gatling``, or
    ``gatling-tT`` for tester T of several)."""
    return f"{RAW_PREFIX}{run_id}/{name}/simulation.log"


CGROUP_OBJECT = "runs/{run_id}/cgroup/{target}.jsonl"
"""Where a gateway VM's meter (``gatebench cloud meter``) uploads its container's cgroup
samples, one JSON object per line (gatebench.core.resources.CgroupSample), the last upload ending
with the ``meter_done`` line (:func:`meter_done_line`)."""
METER_DONE = "meter_done"
METER_WAIT_S = 60.0
"""How long the score step waits for the meters' last uploads by default (the workflow passes
``GATEBENCH_METER_WAIT_S``, Terraform's ``limits.meter_wait_s``)."""
METER_POLL_S = 2.0
METER_GAPS = "meter_gaps"
"""The run record's ``environment`` key: gateway → why some of its phases have no CPU or
memory figures."""


TESTERS_OBJECT = "runs/{run_id}/testers.jsonl"
"""With several testers: per measured phase, each tester's requests and window, the start skew,
the flags and reasons of the merge (gatebench.core.testers.MergedPhase.to_dict)."""


class Bucket(Protocol):
    def read_optional(self, bucket: str, name: str) -> bytes | None: ...

    def open_optional(self, bucket: str, name: str) -> BinaryIO | None:
        """A stream of the object, read in chunks as it is consumed (raw logs are streamed:
        never read whole, never copied to the function's in-memory /tmp)."""
        ...

    def names(self, bucket: str, prefix: str) -> list[str]: ...


def meter_done_line(wall_ms: float, why: str) -> str:
    """The line that ends a meter's last upload: no sample will follow (``why``: ``load-done``
    when every tester had finished, ``time limit`` when the meter gave up waiting)."""
    return json.dumps({METER_DONE: True, "wall_ms": wall_ms, "why": why}, sort_keys=True)


@dataclass
class MeterUpload:
    """One gateway's ``cgroup/TARGET.jsonl`` as read: its samples, and whether it ends with
    the ``meter_done`` line."""

    samples: list[CgroupSample] = field(default_factory=list)
    done: bool = False
    loaded: list[str] | None = None
    """The native transports the container's processes loaded (None: the meter did not look)."""


def ingest_object(storage: Bucket, store: ResultStore, bucket: str, name: str) -> int | None:
    """Measurements stored from object ``name``; None when it is not a raw log. It does not
    wait for the meters (the load may still be running): the score step does."""
    match = RAW_LOG.match(name)
    if match is None:
        return None
    run_id = match.group(1)
    if fleet_testers(storage, bucket, run_id) > 1:
        return ingest_testers(storage, store, bucket, run_id)
    measurements = with_meters(_measure_object(storage, bucket, run_id, name), storage, bucket)
    for measurement in measurements:
        store.put_measurement(measurement)
    return len(measurements)


def _measure_object(storage: Bucket, bucket: str, run_id: str, name: str) -> list[Measurement]:
    workload = storage.read_optional(bucket, f"runs/{run_id}/workload.json")
    if workload is None:
        return []
    log = storage.open_optional(bucket, name)
    if log is None:
        return []
    document = json.loads(workload)
    measurements = ingest_simlog(log, document, run_id)
    return with_deployment(measurements, storage, bucket, run_id, document, [name])[0]


def ingest_testers(storage: Bucket, store: ResultStore, bucket: str, run_id: str) -> int:
    """Every tester's log of a run merged; 0 until every tester has finished."""
    measurements = with_meters(_measure_testers(storage, bucket, run_id), storage, bucket)
    for measurement in measurements:
        store.put_measurement(measurement)
    return len(measurements)


def _measure_testers(storage: Bucket, bucket: str, run_id: str) -> list[Measurement]:
    """The merged measurements (and ``testers.jsonl`` written); none until every tester has
    finished."""
    testers = fleet_testers(storage, bucket, run_id)
    done = []
    for t in range(testers):
        data = storage.read_optional(bucket, marker(run_id, marker_of_tester("load-done", t)))
        if data is None:
            return []
        done.append(json.loads(data))
    workload = storage.read_optional(bucket, f"runs/{run_id}/workload.json")
    if workload is None:
        return []
    failures = [None if d.get("ok") else str(d.get("reason") or "failed") for d in done]
    logs = [
        storage.open_optional(bucket, raw_object(run_id, f"gatling-t{t}")) for t in range(testers)
    ]  # streams, read one after the other by the merge
    document = json.loads(workload)
    measurements, merged = ingest_tester_logs(logs, document, run_id, failures)
    raw = [raw_object(run_id, f"gatling-t{t}") for t in range(testers)]
    measurements = with_deployment(measurements, storage, bucket, run_id, document, raw)[0]
    barrier = done[0].get("barrier") if isinstance(done[0].get("barrier"), dict) else {}
    arrivals = barrier.get("phases") or {}
    write = getattr(storage, "write", None)  # the functions' Storage; a read-only view skips it
    if write is not None:  # each phase's shares, start skew and barrier, beside the raw logs
        lines = "".join(
            json.dumps(_with_barrier(m.to_dict(), arrivals), sort_keys=True) + "\n" for m in merged
        )
        write(bucket, TESTERS_OBJECT.format(run_id=run_id), lines, "application/x-ndjson")
    return measurements


DEPLOYMENT_NOTES = "deployment_notes"
"""The run record's ``environment`` key: what of a plan's deployment could not be observed."""


def with_deployment(
    measurements: Sequence[Measurement],
    storage: Bucket,
    bucket: str,
    run_id: str,
    document: dict[str, Any],
    raw_logs: Sequence[str],
) -> tuple[list[Measurement], list[str]]:
    """The measurements with what the testers watched (their ``load-done`` markers'
    ``deployment``): each phase's handshakes, a faulted phase's impact. Also the notes of
    what was not observed. Unchanged until every tester has written its marker."""
    import dataclasses

    if not document.get("tls") and not document.get("fault"):
        return list(measurements), []
    testers = fleet_testers(storage, bucket, run_id)
    watched: list[dict[str, Any]] = []
    for t in range(testers):
        data = storage.read_optional(bucket, marker(run_id, marker_of_tester("load-done", t)))
        if data is None:
            return list(measurements), []
        deployment = json.loads(data).get("deployment")
        watched.append(deployment if isinstance(deployment, dict) else {})
    notes = [str(n) for w in watched for n in w.get("notes") or []]
    index = {
        (p["target"], p["workload"], int(p["repetition"])): p
        for p in document.get("phases", [])
        if p.get("measured")
    }
    handshakes: dict[str, list[int]] | None = None
    if document.get("tls"):
        counts = [w.get("handshakes") for w in watched]
        if all(isinstance(c, dict) for c in counts):
            handshakes = {}
            for c in counts:
                for phase, (new, resumed) in (c or {}).items():
                    total = handshakes.setdefault(str(phase), [0, 0])
                    total[0] += int(new)
                    total[1] += int(resumed)
        elif not notes:
            notes.append("TLS handshakes not observed: a tester did not report them")
    kills = (watched[0].get("kills") or {}) if watched else {}
    faulted = {str(p["id"]): p for p in index.values() if str(p["index"]) in kills}
    for p in faulted.values():
        kill = kills[str(p["index"])]
        if isinstance(kill, dict) and kill.get("note"):
            notes.append(f"{p['target']} (repetition {p['repetition']}): {kill['note']}")
    requests = _phase_requests(storage, bucket, raw_logs, set(faulted)) if faulted else {}
    replica = int((document.get("fault") or {}).get("replica") or 0)
    out = []
    for m in measurements:
        phase = index.get((m.target, m.workload, m.repetition))
        changes: dict[str, Any] = {}
        if phase is not None and handshakes is not None:
            new, resumed = handshakes.get(str(phase["index"]), [0, 0])
            changes.update(tls_new=new, tls_resumed=resumed)
        kill = kills.get(str(phase["index"])) if phase is not None else None
        if phase is not None and isinstance(kill, dict):
            probers = len({str(p["target"]) for p in index.values()} - {BASELINE, CEILING_TARGET})
            changes["fault"] = _impact(kill, requests.get(str(phase["id"]), []), replica, probers)
        out.append(dataclasses.replace(m, **changes) if changes else m)
    return out, sorted(set(notes))


def _impact(
    kill: dict[str, Any], requests: list[Request], replica: int, probers: int
) -> dict[str, Any]:
    """A faulted phase's ``fault`` figures (gatebench.core.fault.FaultImpact), or why there are
    none."""
    if kill.get("error") or not kill.get("at"):
        return {"error": str(kill.get("error") or "the replica was not killed")}
    at = float(kill["at"])
    end = max((r.end for r in requests), default=at)
    attempts = kill.get("attempts")
    times = [float(a) for a in attempts] if isinstance(attempts, list) else None
    impact = fault_impact(requests, at, end, times, probers)
    return {**impact.to_dict(), "replica": replica}


def _phase_requests(
    storage: Bucket, bucket: str, names: Sequence[str], phase_ids: set[str]
) -> dict[str, list[Request]]:
    """The requests of the phases ``phase_ids`` (epoch seconds), from the raw logs, streamed:
    only those phases' records are kept."""
    out: dict[str, list[Request]] = {}
    for name in names:
        stream = storage.open_optional(bucket, name)
        if stream is None:
            continue
        for phase, requests in requests_by_phase(read_simlog(stream), phase_ids).items():
            out.setdefault(phase, []).extend(requests)
    return out


def _with_barrier(phase: dict[str, Any], arrivals: dict[str, Any]) -> dict[str, Any]:
    """A phase of ``testers.jsonl`` with the testers that met at its barrier (tester 0's
    ``load-done`` record of ``gatebench.local._fanout.PhaseBarrier``), when there was one."""
    met = arrivals.get(str(phase.get("phase")))
    return dict(phase, barrier=met) if met is not None else phase


def meter_uploads(storage: Bucket, bucket: str, run_id: str) -> dict[str, MeterUpload]:
    """Each gateway's cgroup upload, by target, from the run's ``cgroup/`` objects (a line
    that is neither a sample nor the ``meter_done`` line is skipped: an upload may have been
    cut off mid-write)."""
    prefix = f"runs/{run_id}/cgroup/"
    out: dict[str, MeterUpload] = {}
    for name in storage.names(bucket, prefix):
        if not name.endswith(".jsonl"):
            continue
        data = storage.read_optional(bucket, name)
        if data is None:
            continue
        upload = MeterUpload()
        for line in data.decode("utf-8", errors="replace").splitlines():
            try:
                value = json.loads(line)
                if isinstance(value, dict) and value.get(METER_DONE) is True:
                    upload.done = True
                    continue
                if isinstance(value, dict) and isinstance(value.get("loaded"), list):
                    upload.loaded = [str(v) for v in value["loaded"]]
                    continue
                upload.samples.append(CgroupSample.from_dict(value))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
        out[name[len(prefix) : -len(".jsonl")]] = upload
    return out


def with_meters(
    measurements: Sequence[Measurement], storage: Bucket, bucket: str
) -> list[Measurement]:
    """The measurements with their gateway's CPU and memory from the samples uploaded so far."""
    if not measurements:
        return []
    uploads = meter_uploads(storage, bucket, measurements[0].run_id)
    return with_gateway_cgroup(measurements, {t: u.samples for t, u in uploads.items()})


def metered_gateways(storage: Bucket, bucket: str, run_id: str) -> list[str]:
    """The run's gateways that have a VM, so a meter beside them (``fleet.json``)."""
    data = storage.read_optional(bucket, f"runs/{run_id}/fleet.json")
    gateways = (json.loads(data).get("gateways") if data is not None else None) or {}
    return sorted(gateways) if isinstance(gateways, dict) else []


def wait_for_meters(
    storage: Bucket,
    bucket: str,
    run_id: str,
    targets: Sequence[str],
    wait_s: float,
    clock: Clock | None = None,
    poll: float = METER_POLL_S,
) -> dict[str, MeterUpload]:
    """The meters' uploads once every target's ends with ``meter_done``, or as they are after
    ``wait_s`` seconds."""
    clock = clock or Clock()
    deadline = clock.now() + wait_s
    while True:
        uploads = meter_uploads(storage, bucket, run_id)
        late = [t for t in targets if not uploads.get(t, MeterUpload()).done]
        if not late or clock.now() >= deadline:
            return uploads
        clock.sleep(min(poll, max(0.0, deadline - clock.now())))


def meter_gaps(
    measurements: Sequence[Measurement],
    uploads: dict[str, MeterUpload],
    targets: Sequence[str],
    bucket: str,
    wait_s: float,
) -> dict[str, str]:
    """Gateway → why some of its measured phases have no CPU or memory figures (one sentence
    naming the phases and the meter's object); gateways without a gap are left out."""
    gaps: dict[str, str] = {}
    for target in targets:
        lacking = sorted(
            m.key for m in measurements if m.target == target and m.gateway_cpu_s is None
        )
        if not lacking:
            continue
        upload = uploads.get(target)
        run_id = next(m.run_id for m in measurements if m.target == target)
        where = f"gs://{bucket}/{CGROUP_OBJECT.format(run_id=run_id, target=target)}"
        if upload is None:
            why = f"its meter uploaded nothing ({where} is missing)"
        elif not upload.done:
            why = (
                f"its meter's last upload ({where}, ending with a {METER_DONE} line) did not "
                f"arrive within {wait_s:g}s of scoring"
            )
        else:
            why = f"the samples of its meter ({where}) do not cover them"
        shown = ", ".join(lacking[:10]) + (" ..." if len(lacking) > 10 else "")
        gaps[target] = (
            f"{target}: no gateway CPU or memory for {counted(len(lacking), 'measured phase')} "
            f"({shown}): {why}"
        )
    return gaps


def ingest_run(
    storage: Bucket,
    store: ResultStore,
    bucket: str,
    run_id: str,
    *,
    meter_wait_s: float = 0.0,
    clock: Clock | None = None,
) -> int:
    """Every raw log of a run, ingested; the number of measurements stored. The gateways'
    meters get up to ``meter_wait_s`` seconds to finish their last upload; what they still
    miss then is noted in the run record (``environment.meter_gaps``)."""
    if fleet_testers(storage, bucket, run_id) > 1:
        measurements = _measure_testers(storage, bucket, run_id)
    else:
        measurements = []
        for name in storage.names(bucket, f"{RAW_PREFIX}{run_id}/"):
            if RAW_LOG.match(name):
                measurements += _measure_object(storage, bucket, run_id, name)
    _note_deployment(storage, store, bucket, run_id)
    measured = {m.target for m in measurements}
    targets = [t for t in metered_gateways(storage, bucket, run_id) if t in measured]
    uploads = wait_for_meters(storage, bucket, run_id, targets, meter_wait_s, clock)
    measurements = with_gateway_cgroup(measurements, {t: u.samples for t, u in uploads.items()})
    if targets:
        _note_gaps(store, run_id, meter_gaps(measurements, uploads, targets, bucket, meter_wait_s))
    for measurement in measurements:
        store.put_measurement(measurement)
    return len(measurements)


JVM_TRANSPORT = "jvm_transport"
"""The run record's ``environment`` key: each JVM gateway's network transport (``epoll`` when
Netty loaded its native transport, ``nio`` when it fell back to Java's), from its meter."""
VM_IMAGE = "vm_image"
"""The run record's ``environment`` key: the Container-Optimized OS image its VMs booted (the
deployment pins it: infra/ ``vm_image``), from the variables the provision build saved."""


def _note_deployment(storage: Bucket, store: ResultStore, bucket: str, run_id: str) -> None:
    """The run record's ``environment``: the image the run's VMs booted (:data:`VM_IMAGE`),
    the deployment the run had (``tls``: the key type, the CA's fingerprint, HTTP/2 and
    resumption, every VM's certificate its own; ``replicas``) and :data:`DEPLOYMENT_NOTES`,
    what of it could not be observed."""
    import hashlib

    data = storage.read_optional(bucket, f"runs/{run_id}/workload.json")
    backend = json.loads(storage.read_optional(bucket, f"runs/{run_id}/backend.json") or b"{}")
    saved = json.loads(storage.read_optional(bucket, VARS_OBJECT.format(run_id=run_id)) or b"{}")
    document = json.loads(data) if data is not None else {}
    replicas = len(backend.get("replicas") or [])
    found: dict[str, Any] = {}
    if isinstance(saved.get("image"), str):
        found[VM_IMAGE] = saved["image"]
    transports = jvm_transports(meter_uploads(storage, bucket, run_id))
    if transports:
        found[JVM_TRANSPORT] = transports
    deployed = bool(document.get("tls") or document.get("fault") or replicas > 1)
    if not found and not deployed:
        return
    run = store.get_run(run_id)
    if run is None:
        return
    tls = document.get("tls")
    ca = storage.read_optional(bucket, CA_OBJECT.format(run_id=run_id)) if tls else None
    if isinstance(tls, dict) and ca is not None:
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding

        certificate = x509.load_pem_x509_certificate(ca)
        der = certificate.public_bytes(Encoding.DER)
        plan_tls = (run.plan or {}).get("tls") or {}
        found["tls"] = {
            "key": plan_tls.get("key"),
            "ca_sha256": hashlib.sha256(der).hexdigest(),
            "ca_not_after": certificate.not_valid_after_utc.isoformat(),
            "http2": bool(tls.get("http2")),
            "resumption": plan_tls.get("resumption", True),
            "certificates": "one per VM (each gateway's and the backend's) from the run's own "
            "CA, made by the provision build",
        }
    if replicas > 1:
        balance = ((run.plan or {}).get("backend") or {}).get("balance", "round_robin")
        found["replicas"] = {"count": replicas, "balance": balance}
    notes = with_deployment([], storage, bucket, run_id, document, [])[1] if deployed else []
    environment = {k: v for k, v in run.environment.items() if k != DEPLOYMENT_NOTES}
    environment.update(found)
    if notes:
        environment[DEPLOYMENT_NOTES] = notes
    if environment != run.environment:
        store.update_run(run_id, environment=environment)


def jvm_transports(uploads: dict[str, MeterUpload]) -> dict[str, str]:
    """Each JVM gateway's transport, from what its meter saw loaded: the first native
    transport, else ``nio``; gateways whose meter did not look are left out."""
    from gatebench.core.renderers import get_renderer
    from gatebench.core.renderers._jvm import JvmRenderer

    out = {}
    for target, upload in sorted(uploads.items()):
        try:
            jvm = isinstance(get_renderer(target), JvmRenderer)
        except GatebenchError:
            continue
        if jvm and upload.loaded is not None:
            out[target] = upload.loaded[0] if upload.loaded else "nio"
    return out


def _note_gaps(store: ResultStore, run_id: str, gaps: dict[str, str]) -> None:
    """The run record's ``environment.meter_gaps`` set to ``gaps`` (removed when there is none:
    a second scoring after the meters finished clears the first one's note)."""
    run = store.get_run(run_id)
    if run is None or run.environment.get(METER_GAPS, {}) == gaps:
        return
    environment = {k: v for k, v in run.environment.items() if k != METER_GAPS}
    if gaps:
        environment[METER_GAPS] = gaps
    store.update_run(run_id, environment=environment)
