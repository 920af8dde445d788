"""One contract, two adapters: every test here runs against SQLite and against Firestore
(the real google-cloud-firestore client talking to the npm Firestore emulator, started
and stopped by this module)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from firestore_emulator import firestore_emulator, missing

from gatebench.core.errors import StoreError
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.store import FirestoreStore, ResultStore, SqliteStore, open_store

ADAPTERS = ("sqlite", "firestore")


@pytest.fixture(scope="session")
def firestore_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The emulator's host:port, exported as FIRESTORE_EMULATOR_HOST for the session."""
    why = missing()
    if why:
        pytest.fail(f"the Firestore leg of the contract cannot run: {why}")
    previous = os.environ.get("FIRESTORE_EMULATOR_HOST")
    with firestore_emulator(tmp_path_factory.mktemp("firestore")) as host:
        os.environ["FIRESTORE_EMULATOR_HOST"] = host
        try:
            yield host
        finally:
            if previous is None:
                os.environ.pop("FIRESTORE_EMULATOR_HOST", None)
            else:
                os.environ["FIRESTORE_EMULATOR_HOST"] = previous


def _location(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if kind == "sqlite":
        return f"sqlite:{tmp_path / 'results' / 'store.sqlite'}"
    request.getfixturevalue("firestore_host")
    # A database per test: the emulator keeps databases apart, so tests cannot see each other.
    return f"firestore://gatebench-test/t{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=ADAPTERS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return _location(request.param, tmp_path, request)


@pytest.fixture
def store(location: str) -> Iterator[SqliteStore | FirestoreStore]:
    with open_store(location) as s:
        yield s


def run_record(run_id: str = "r1", created_at: float = 1000.0, **kw: object) -> RunRecord:
    values: dict[str, object] = {
        "run_id": run_id,
        "spec_uri": "file:///specs/auction.yaml",
        "spec_sha256": "ab" * 32,
        "created_at": created_at,
        "updated_at": created_at,
        "title": "Auction",
        "gateways": ["nginx", "caddy"],
        "workloads": [{"name": "bid", "operation": "bid", "injection": {"concurrent": 50}}],
        "plan": {"scoring": {"profile": "robust", "weights": [["p99", 2.0]]}, "repetitions": 3},
        "environment": {"gatling": "3.15.1", "jdk": "17", "gateways": {"nginx": "1.22.1"}},
    }
    values.update(kw)
    return RunRecord(**values)  # type: ignore[arg-type]


def measurement(
    target: str = "nginx",
    workload: str = "bid",
    repetition: int = 0,
    run_id: str = "r1",
    **kw: object,
) -> Measurement:
    values: dict[str, object] = {
        "run_id": run_id,
        "target": target,
        "workload": workload,
        "repetition": repetition,
        "requests": 400,
        "ok": 398,
        "ko": 2,
        "error_pct": 0.5,
        "throughput": 812.5,
        "min": 0.0,
        "mean": 1.25,
        "max": 31.0,
        "stddev": 2.5,
        "p50": 1.0,
        "p90": 2.0,
        "p95": 3.0,
        "p99": 9.0,
        "started_at": 1000.5,
        "duration_s": 0.49,
        "flags": ("noisy",),
        "other_cpu_pct": 12.5,
        "tester_cpu_pct": None,
        "errors": (("status.find.in(200..399), but actually found 409", 2),),
    }
    values.update(kw)
    return Measurement(**values)  # type: ignore[arg-type]


def test_the_adapter_is_a_result_store(store: ResultStore) -> None:
    assert isinstance(store, ResultStore)


def test_create_run_is_idempotent_and_never_overwrites(store: ResultStore) -> None:
    run = run_record()
    assert store.create_run(run) is True
    assert store.create_run(dataclasses.replace(run, title="changed")) is False
    assert store.get_run("r1") == run


def test_get_run_of_an_unknown_run_is_none(store: ResultStore) -> None:
    assert store.get_run("nope") is None


def test_status_follows_the_lifecycle(store: ResultStore) -> None:
    store.create_run(run_record())
    for status in (RunStatus.PARSED, RunStatus.RENDERED, RunStatus.LOADING):
        assert store.set_status("r1", status).status is status
    failed = store.set_status(
        "r1", RunStatus.FAILED, failed_step="loading", error="nginx exited with code 1"
    )
    assert (failed.status, failed.failed_step, failed.error) == (
        RunStatus.FAILED,
        "loading",
        "nginx exited with code 1",
    )
    assert failed.updated_at > 1000.0
    order = ["parsed", "rendered", "loading", "failed"]
    assert set(failed.status_times) == set(order)
    times = [failed.status_times[s] for s in order]
    assert times == sorted(times)
    assert failed.status_times["failed"] == failed.updated_at
    assert store.get_run("r1") == failed


def test_a_move_against_the_lifecycle_is_refused(store: ResultStore) -> None:
    store.create_run(run_record())
    store.set_status("r1", RunStatus.LOADING)
    with pytest.raises(StoreError) as exc:
        store.set_status("r1", RunStatus.PARSED)
    assert str(exc.value) == (
        "run 'r1': cannot move from 'loading' to 'parsed' (allowed: scoring, done, failed, partial)"
    )
    store.set_status("r1", RunStatus.DONE)
    with pytest.raises(StoreError, match=r"\(allowed: none, the run is finished\)$"):
        store.set_status("r1", RunStatus.FAILED)
    assert store.get_run("r1").status is RunStatus.DONE  # type: ignore[union-attr]


def test_set_status_of_an_unknown_run(store: ResultStore) -> None:
    with pytest.raises(StoreError, match=r"^run 'ghost' does not exist$"):
        store.set_status("ghost", RunStatus.PARSED)


def test_update_run_changes_fields_but_not_id_or_status(store: ResultStore) -> None:
    store.create_run(run_record())
    new = store.update_run(
        "r1", environment={"jdk": "17.0.12"}, target_errors={"caddy": "config rejected"}
    )
    assert new.environment == {"jdk": "17.0.12"}
    assert store.get_run("r1") == new
    with pytest.raises(
        StoreError, match=r"^run 'r1': field 'status' cannot be updated \(use set_status\)$"
    ):
        store.update_run("r1", status="done")
    with pytest.raises(StoreError, match=r"^run 'r1': no field 'colour'; fields: run_id, "):
        store.update_run("r1", colour="blue")
    with pytest.raises(StoreError, match=r"^run 'ghost' does not exist$"):
        store.update_run("ghost", title="x")


def test_list_runs_newest_first_with_a_limit(store: ResultStore) -> None:
    for run_id, created in (("a", 10.0), ("b", 30.0), ("c", 20.0), ("d", 30.0)):
        store.create_run(run_record(run_id, created))
    assert [r.run_id for r in store.list_runs()] == ["d", "b", "c", "a"]
    assert [r.run_id for r in store.list_runs(limit=2)] == ["d", "b"]
    assert store.list_runs(limit=0) == []


def test_unfinished_runs_oldest_first(store: ResultStore) -> None:
    """What the cloud path's parse step counts against limits.max_active_runs."""
    for run_id, created in (("a", 10.0), ("b", 30.0), ("c", 20.0), ("d", 40.0), ("e", 5.0)):
        store.create_run(run_record(run_id, created))
    store.set_status("b", RunStatus.DONE)
    store.set_status("d", RunStatus.FAILED, failed_step="parse", error="x")
    store.set_status("a", RunStatus.PARSED)
    store.set_status("e", RunStatus.PARTIAL)
    assert [r.run_id for r in store.unfinished_runs()] == ["a", "c"]
    assert {r.status for r in store.unfinished_runs()} == {RunStatus.PARSED, RunStatus.RECEIVED}


def test_a_measurement_round_trips_exactly(store: ResultStore) -> None:
    store.create_run(run_record())
    m = measurement()
    store.put_measurement(m)
    assert store.measurements("r1") == [m]


def test_what_a_phase_cost_round_trips_and_old_documents_read_as_not_measured(
    store: ResultStore,
) -> None:
    store.create_run(run_record())
    m = measurement(
        gateway_cpu_s=0.4209,
        gateway_rss_mb=13.75,
        backend_cpu_s=0.43,
        backend_rss_mb=13.18,
        engine_cpu_s=0.2066,
        engine_rss_mb=313.89,
    )
    store.put_measurement(m)
    assert store.measurements("r1") == [m]
    assert store.measurements("r1")[0].req_per_cpu_s == 400 / 0.4209
    # a record written before costs were measured (no such keys) reads back with None
    old = {
        k: v for k, v in measurement().to_dict().items() if not k.endswith(("_cpu_s", "_rss_mb"))
    }
    assert Measurement.from_dict(old).gateway_cpu_s is None


def test_writing_a_measurement_again_overwrites_it(store: ResultStore) -> None:
    store.create_run(run_record())
    store.put_measurement(measurement(mean=1.0))
    store.put_measurement(measurement(mean=2.0))
    assert [m.mean for m in store.measurements("r1")] == [2.0]


def test_measurements_come_back_sorted(store: ResultStore) -> None:
    store.create_run(run_record())
    keys = [("nginx", "bid", 1), ("caddy", "retrieve", 0), ("nginx", "bid", 0), ("caddy", "bid", 2)]
    for target, workload, rep in keys:
        store.put_measurement(measurement(target, workload, rep))
    assert [m.key for m in store.measurements("r1")] == [
        "caddy:bid:2",
        "caddy:retrieve:0",
        "nginx:bid:0",
        "nginx:bid:1",
    ]
    assert store.measurements("other") == []


def test_a_measurement_needs_its_run_and_clean_names(store: ResultStore) -> None:
    with pytest.raises(StoreError, match=r"^run 'r1' does not exist$"):
        store.put_measurement(measurement())
    store.create_run(run_record())
    with pytest.raises(
        StoreError,
        match=r"^measurement target 'a:b': '/' and ':' are not allowed \(they separate the key",
    ):
        store.put_measurement(measurement(target="a:b"))
    with pytest.raises(StoreError, match=r"^measurement workload 'x/y': "):
        store.put_measurement(measurement(workload="x/y"))
    with pytest.raises(StoreError, match=r"repetition must be an integer >= 0, got -1$"):
        store.put_measurement(measurement(repetition=-1))
    assert store.measurements("r1") == []


def test_scores_are_replaced_as_a_whole(store: ResultStore) -> None:
    store.create_run(run_record())
    assert store.scores("r1") is None
    first = {
        "nginx": {"score": 91.5, "rank": 1, "endpoints": {"bid": {"score": 91.5, "metrics": {}}}},
        "caddy": {"score": 80.0, "rank": 2, "weights": {"p99": 2.0}, "notes": ["a", "b"]},
    }
    store.put_scores("r1", first)
    assert store.scores("r1") == first
    second = {"nginx": {"score": 100.0, "rank": 1, "nested": [[1, 2], [3]]}}
    store.put_scores("r1", second)
    assert store.scores("r1") == second
    with pytest.raises(StoreError, match=r"^run 'ghost' does not exist$"):
        store.put_scores("ghost", second)


def test_results_of_other_kinds_of_run_round_trip_and_overwrite(store: ResultStore) -> None:
    """A scale run's points and a change's outcome (docs/scale.md), by kind and key."""
    store.create_run(run_record())
    assert store.results("r1", "scale") == {}
    point = {
        "gateway": "nginx",
        "routes": 100,
        "start_s": 0.03,
        "rss_idle_mb": None,
        "latency": {"end": {"p99_ms": 9.0, "requests": 1000}},
        "series": [[1, 2], [3]],
    }
    store.put_result("r1", "scale", "nginx@100", point)
    store.put_result("r1", "scale", "envoy@10", {"routes": 10})
    store.put_result("r1", "change", "nginx", {"failures": 0, "failed": []})
    assert store.results("r1", "scale") == {"envoy@10": {"routes": 10}, "nginx@100": point}
    assert list(store.results("r1", "scale")) == ["envoy@10", "nginx@100"]
    store.put_result("r1", "scale", "nginx@100", {"routes": 100})
    assert store.results("r1", "scale")["nginx@100"] == {"routes": 100}
    assert store.results("r1", "change") == {"nginx": {"failures": 0, "failed": []}}
    with pytest.raises(StoreError, match=r"^run 'ghost' does not exist$"):
        store.put_result("ghost", "scale", "x", {})
    with pytest.raises(StoreError, match=r"^result key 'a:b': expected a non-empty name"):
        store.put_result("r1", "scale", "a:b", {})


def test_writes_are_visible_to_a_new_connection_at_once(location: str) -> None:
    writer = open_store(location)
    writer.create_run(run_record())
    writer.put_measurement(measurement())
    writer.set_status("r1", RunStatus.LOADING)
    with open_store(location) as reader:
        assert [m.key for m in reader.measurements("r1")] == ["nginx:bid:0"]
        assert reader.get_run("r1").status is RunStatus.LOADING  # type: ignore[union-attr]
    writer.close()


def test_concurrent_writers_lose_nothing(store: ResultStore) -> None:
    store.create_run(run_record())
    errors: list[BaseException] = []

    def write(target: str) -> None:
        try:
            for rep in range(5):
                store.put_measurement(measurement(target, "bid", rep))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in ("a", "b", "c", "d")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.measurements("r1")) == 20


CRASHING_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {tests!r})
    from test_store_contract import measurement, run_record
    from gatebench.store import open_store
    store = open_store({location!r})
    store.create_run(run_record())
    for rep in range(50):
        store.put_measurement(measurement("nginx", "bid", rep))
        print(rep, flush=True)
        if rep == 6:
            os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_measurements_written_before_a_crash_are_kept(location: str) -> None:
    """A writer killed with SIGKILL right after its 7th write returned: all 7 are stored."""
    script = CRASHING_WRITER.format(tests=str(Path(__file__).parent), location=location)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=os.environ
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout.split() == [str(i) for i in range(7)]
    with open_store(location) as reader:
        assert [m.repetition for m in reader.measurements("r1")] == list(range(7))


def test_the_commands_score_and_report_a_run_from_either_store(
    location: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """End to end through the CLI: real score documents (nested maps, nulls) round-trip."""
    from gatebench.cli import main
    from synthetic import synthetic_run

    run, ms = synthetic_run(repetitions=2)
    with open_store(location) as s:
        s.create_run(run)
        for m in ms:
            s.put_measurement(m)
    assert main(["runs", "--store", location]) == 0
    assert run.run_id in capsys.readouterr().out
    assert main(["score", "latest", "--profile", "robust", "--store", location, "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    with open_store(location) as s:
        stored = s.scores(run.run_id)
    assert stored == scored["gateways"]
    assert main(["report", "latest", "-f", "json", "--store", location]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["profile"] == "robust"
    assert report["scores"]["gateways"] == stored
