"""Raw logs travel streamed, never whole: the tester uploads its simulation.log as a resumable
upload sent in parts, and the ingest step parses it from a reader that downloads it range by
range (no whole-object read, no copy into the function's /tmp, which is memory on Cloud
Functions). Through the real google-cloud-storage client against the storage emulator, with a
log of ~10 MB: more than the client sends in one request (8 MB; smaller files go in one), so
two parts each way (gatebench.cloud._storage.CHUNK_BYTES)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cloud.servers import start_gcs_emulator, storage_client
from cloud.simlog import SimLogWriter
from gatebench.cloud import _storage
from gatebench.cloud._ingest import ingest_object
from gatebench.core.measure import ingest_simlog
from gatebench.core.model import Measurement
from gatebench.core.plan import Injection
from gatebench.core.workload import FORMAT, injection_json
from gatebench.local.procs import Supervisor

pytestmark = pytest.mark.integration

RUNS = "gb-runs"
RUN = "r-" + "c" * 20
PART = _storage.CHUNK_BYTES
REQUESTS = 400_000  # ~26 bytes a request record: ~10 MB


def workload() -> dict[str, Any]:
    phase = {
        "id": "p0000",
        "index": 0,
        "target": "nginx",
        "workload": "w",
        "repetition": 1,
        "measured": True,
        "seed": 1,
        "injection": injection_json(Injection("sequential", requests=REQUESTS)),
        "before": [],
        "params": {},
        "request": {"base_url": "http://gw.invalid:8000"},
    }
    return {"format": FORMAT, "seed": 1, "secret_env": [], "skip_file": "", "phases": [phase]}


class Stored:
    """The result store's one call the ingest makes."""

    def __init__(self) -> None:
        self.measurements: list[Measurement] = []

    def put_measurement(self, measurement: Measurement) -> None:
        self.measurements.append(measurement)


class Recorded(_storage.Storage):
    """The real Storage, recording whole-object reads and every HTTP exchange."""

    def __init__(self) -> None:
        super().__init__("gatebench-test")
        self.whole_reads: list[str] = []
        self.exchanges: list[tuple[str, str, dict[str, str]]] = []

    def read_optional(self, bucket: str, name: str) -> bytes | None:
        self.whole_reads.append(name)
        return super().read_optional(bucket, name)

    def watch(self) -> None:
        def record(response: Any, *args: Any, **kwargs: Any) -> None:
            request = response.request
            headers = {k.lower(): v for k, v in request.headers.items()}
            self.exchanges.append((request.method, request.url, headers))

        self.client._http.hooks["response"].append(record)


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[Recorded]:
    with Supervisor() as supervisor:
        endpoint = start_gcs_emulator(supervisor, tmp_path)
        client: Any = storage_client(endpoint)
        client.create_bucket(RUNS)
        recorded = Recorded()
        recorded.watch()
        yield recorded


def test_a_raw_log_is_uploaded_in_parts_and_ingested_range_by_range(
    storage: Recorded, tmp_path: Path
) -> None:
    writer = SimLogWriter()
    for i in range(REQUESTS):
        writer.request("p0000", i, i + 1 + i % 3)
    log = tmp_path / "simulation.log"
    log.write_bytes(writer.bytes())
    size = log.stat().st_size
    assert PART < size < 2 * PART
    name = f"raw/{RUN}/gatling/simulation.log"
    storage.upload_file(RUNS, name, log)
    parts = [e for e in storage.exchanges if e[0] == "PUT" and "upload_id" in e[1]]
    assert len(parts) == -(-size // PART)  # one request per part, none holding the whole log
    assert all("bytes " in e[2].get("content-range", "") for e in parts)

    storage.write(RUNS, f"runs/{RUN}/workload.json", json.dumps(workload()))
    storage.exchanges.clear()
    store = Stored()
    assert ingest_object(storage, store, RUNS, name) == 1  # type: ignore[arg-type]
    (measured,) = store.measurements
    assert measured.requests == REQUESTS
    assert measured == ingest_simlog(log, workload(), RUN)[0]  # as from the file itself
    assert name not in storage.whole_reads  # the raw log was never read whole
    ranges = [
        e[2]["range"]
        for e in storage.exchanges
        if e[0] == "GET" and "simulation.log" in e[1] and "range" in e[2]
    ]
    spans = [[int(x) for x in r.removeprefix("bytes=").split("-")] for r in ranges]
    assert spans[0][0] == 0 and len(spans) >= -(-size // PART)
    assert all(end - start + 1 <= PART + 1 for start, end in spans)  # a part at a time
