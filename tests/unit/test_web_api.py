"""The read and upload APIs (gatebench.web's Flask blueprints, asked through the Cloud
Functions' apps): what the local server and the cloud functions answer, over a real SQLite
store; the content check; signed-URL tickets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from werkzeug.test import TestResponse

from gatebench.core.model import RunKind, RunRecord, RunStatus
from gatebench.core.report import score_run
from gatebench.kinds.request import (
    CheckedUpload,
    RunRequest,
    UploadRejected,
    check_upload,
    run_request_from_metadata,
    run_request_from_query,
    safe_name,
    upload_name_from_object,
)
from gatebench.local.bucket import HmacSigner
from gatebench.store import SqliteStore
from gatebench.web import SignedUploads, cloud_app
from gatebench.web._uploads import Answer
from paths import EXAMPLES
from synthetic import synthetic_run
from webapp import read_client, upload_client

PETSTORE = (EXAMPLES / "petstore" / "openapi.yaml").read_bytes()
BROKEN = PETSTORE.replace(b"operation: listPets", b"operation: listPetz").replace(
    b"repetitions: 3", b"repetitions: -1"
)
T0 = 1_767_268_800.0  # 2026-01-01 12:00:00 UTC


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    with SqliteStore(tmp_path / "s.sqlite") as s:
        for seed, run_id, created in (
            (7, "20260101-120000-aaaa", T0),
            (11, "20260102-120000-bbbb", T0 + 86400),
        ):
            run, ms = synthetic_run(seed=seed, run_id=run_id, created_at=created)
            s.create_run(run)
            for m in ms:
                s.put_measurement(m)
            score_run(s, run_id)
        yield s


def get(store: SqliteStore, path: str, **query: str) -> TestResponse:
    return read_client(store).get(f"/{path}", query_string=query)


def message(reply: TestResponse) -> str:
    return str(reply.get_json()["errors"][0]["message"])


class QueueAcceptor:
    """Records accepted uploads instead of running them (the HTTP tests use the real queue)."""

    method = "direct"

    def __init__(self) -> None:
        self.accepted: list[CheckedUpload] = []

    def accept(self, upload: CheckedUpload) -> Answer:
        self.accepted.append(upload)
        return {"run_id": "r-1"}, 202, []


# -- read API ---------------------------------------------------------------------------------


def test_list_runs_newest_first_with_limit_and_spec_uri(store: SqliteStore) -> None:
    reply = get(store, "runs")
    assert reply.status_code == 200
    runs = reply.get_json()["runs"]
    assert [r["run_id"] for r in runs] == ["20260102-120000-bbbb", "20260101-120000-aaaa"]
    assert runs[0]["status"] == "done"
    assert [r["run_id"] for r in get(store, "runs", limit="1").get_json()["runs"]] == [
        "20260102-120000-bbbb"
    ]
    store.create_run(RunRecord("r-gcs", "gs://b/specs/x.yaml#17", "f" * 64, created_at=T0 - 1))
    found = get(store, "runs", spec_uri="gs://b/specs/x.yaml").get_json()["runs"]
    assert [r["run_id"] for r in found] == ["r-gcs"]
    assert get(store, "runs", spec_uri="gs://b/specs/y.yaml").get_json()["runs"] == []
    bad = get(store, "runs", limit="0")
    assert bad.status_code == 400
    assert message(bad) == "limit: expected a whole number from 1 to 200, got '0'"


def test_get_run_view_report_and_compare(store: SqliteStore) -> None:
    run = get(store, "runs/20260101-120000-aaaa").get_json()["run"]
    assert run["title"] == "Synthetic auction run"
    assert run["finished"] is True
    view = get(store, "runs/20260101-120000-aaaa/view")
    assert view.status_code == 200
    assert view.content_type == "application/json; charset=utf-8"
    assert view.get_json()["format"] == "gatebench-view/1"
    html = get(store, "runs/20260101-120000-aaaa/report")
    assert html.content_type == "text/html; charset=utf-8"
    assert html.data.startswith(b"<!DOCTYPE html>")
    csv = get(store, "runs/20260101-120000-aaaa/report", format="csv")
    assert csv.headers["Content-Disposition"] == 'attachment; filename="20260101-120000-aaaa.csv"'
    compared = get(store, "compare", a="20260101-120000-aaaa", b="20260102-120000-bbbb")
    assert compared.status_code == 200
    assert compared.get_json()["b"]["run_id"] == "20260102-120000-bbbb"


def test_read_errors_are_located_and_exact(store: SqliteStore) -> None:
    missing = get(store, "runs/20990101-000000-none")
    assert (missing.status_code, message(missing)) == (
        404,
        "run '20990101-000000-none' does not exist",
    )
    for path in ("runs/..", "runs/%2e%2e", "runs/a%2fb/view", "runs/.hidden"):
        reply = get(store, path)
        assert reply.status_code == 400, path
        assert message(reply).endswith("is not a run id")
    fmt = get(store, "runs/20260101-120000-aaaa/report", format="pdf")
    assert (fmt.status_code, message(fmt)) == (
        400,
        "format: expected one of html, json, csv, md, got 'pdf'",
    )
    compare = get(store, "compare", a="20260101-120000-aaaa")
    assert compare.status_code == 400
    assert compare.get_json()["errors"] == [
        {"pointer": "/b", "message": "expected a run id, got ''", "severity": "error"}
    ]
    unknown = get(store, "runs/20260101-120000-aaaa/delete")
    assert unknown.status_code == 404
    assert message(unknown) == (
        "no API route 'runs/20260101-120000-aaaa/delete'; routes: runs, runs/{id}, "
        "runs/{id}/view, runs/{id}/report, runs/{id}/scale, compare?a=ID&b=ID"
    )
    post = read_client(store).post("/runs")
    assert post.status_code == 405
    assert post.headers["Allow"] == "GET, HEAD"


def test_cors_for_the_bucket_served_frontend(store: SqliteStore) -> None:
    client = read_client(store, "https://storage.cloud.google.com")
    site = {"Origin": "https://storage.cloud.google.com"}
    ok = client.options("/runs", headers=site)
    assert ok.status_code == 204
    assert ok.data == b""
    assert ok.headers["Access-Control-Allow-Origin"] == "https://storage.cloud.google.com"
    assert ok.headers["Access-Control-Allow-Headers"] == "Content-Type, X-Gatebench"
    assert ok.headers["Vary"] == "Origin"
    refused = client.options("/runs", headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert "Access-Control-Allow-Origin" not in refused.headers
    listed = client.get("/runs", headers=site)
    assert listed.headers["Access-Control-Allow-Origin"] == "https://storage.cloud.google.com"
    other = client.get("/runs", headers={"Origin": "https://evil.example"})
    assert "Access-Control-Allow-Origin" not in other.headers
    # without GATEBENCH_ORIGINS no origin may call it from a browser
    assert read_client(store).options("/runs", headers=site).status_code == 403


# -- upload API -------------------------------------------------------------------------------


def upload(
    route: str, body: bytes, acceptor: QueueAcceptor | None = None, **query: str
) -> TestResponse:
    client = upload_client(
        acceptor or QueueAcceptor(), local_gateways=("caddy", "haproxy", "nginx")
    )
    return client.post(f"/{route}", data=body, query_string={"name": "petstore.yaml", **query})


def test_validate_answers_the_plan_as_it_will_run() -> None:
    reply = upload("validate", PETSTORE)
    assert reply.status_code == 200
    summary = reply.get_json()
    assert summary["title"] == "Petstore"
    assert summary["gateways"] == summary["selected"] == ["nginx", "haproxy", "caddy"]
    assert summary["repetitions"] == 3
    assert summary["cloud_only"] == []
    assert [w["injection"] for w in summary["workloads"]] == [
        "10 concurrent users for 5s",
        "300 sequential requests",
        "50 req/s for 5s",
    ]
    limited = PETSTORE.replace(
        b"  baseline: true\n",
        b"  baseline: true\n  policies: {rate_limit: {requests: 100, window: 1s, key: address}}\n",
    )
    assert limited != PETSTORE
    # a gateway the run leaves out (it cannot apply the policies) is said before the run
    summary = upload("validate", limited).get_json()
    assert summary["selected"] == ["nginx", "haproxy", "caddy"]
    assert summary["left_out"] == {
        "caddy": "caddy cannot apply the requested policies natively: rate limit per client "
        "address (rate_limit.address)"
    }
    assert upload("validate", PETSTORE).get_json()["left_out"] == {}
    quick = upload("validate", PETSTORE, quick="1", gateways="nginx").get_json()
    assert quick["selected"] == ["nginx"]
    assert quick["repetitions"] == 1
    assert [w["injection"] for w in quick["workloads"]] == [
        "10 concurrent users for 2s",
        "100 sequential requests",
        "50 req/s for 2s",
    ]


def test_uploads_go_to_the_acceptor_only_when_valid() -> None:
    acceptor = QueueAcceptor()
    assert upload("uploads", PETSTORE, acceptor, gateways="none", quick="1").status_code == 202
    (accepted,) = acceptor.accepted
    assert accepted.request == RunRequest(quick=True, gateways=())
    assert accepted.run_plan.gateways == ()
    assert accepted.run_plan.baseline is True
    assert upload("uploads", BROKEN, acceptor).status_code == 400
    assert len(acceptor.accepted) == 1


def test_a_broken_spec_is_refused_with_pointers_and_lines() -> None:
    reply = upload("validate", BROKEN)
    assert reply.status_code == 400
    body = reply.get_json()
    assert body["ok"] is False
    assert body["errors"] == [
        {
            "pointer": "/x-gatebench/repetitions",
            "message": "expected a whole number from 1 to 1,000, got -1",
            "severity": "error",
            "line": 107,
            "column": 3,
            "source": "petstore.yaml",
        },
        {
            "pointer": "/x-gatebench/workloads/0/operation",
            "message": "no operation 'listPetz' in the description; did you mean 'listPets', 'listMyPets'?",
            "severity": "error",
            "line": 113,
            "column": 7,
            "source": "petstore.yaml",
        },
    ]


@pytest.mark.parametrize(
    ("body", "name", "pointer", "message", "line"),
    [
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "logo.png",
            "",
            "byte 0x89 at offset 0 is not valid UTF-8; save the file as UTF-8",
            1,
        ),
        (
            b"hello world\n",
            "notes.txt",
            "",
            "expected an OpenAPI or Swagger document (a mapping with 'openapi' or 'swagger'), got a string",
            1,
        ),
        (b'{"openapi": ', "api.json", "", "JSON syntax: expected a value", 1),
        (b"  \n", "empty.yaml", "", "the upload is empty", None),
    ],
)
def test_a_non_spec_upload_is_refused_with_located_errors(
    body: bytes, name: str, pointer: str, message: str, line: int | None
) -> None:
    reply = upload("uploads", body, name=name)
    assert reply.status_code == 400
    (error,) = reply.get_json()["errors"]
    assert (error["pointer"], error["message"], error.get("line")) == (pointer, message, line)


def test_a_spec_without_a_plan_or_with_a_credential_is_refused() -> None:
    no_plan = PETSTORE.split(b"x-gatebench:")[0]
    reply = upload("uploads", no_plan)
    assert reply.status_code == 400
    assert message(reply).startswith("no 'x-gatebench' section")
    secret = PETSTORE.replace(b"  baseline: true", b"  baseline: true\n  password: hunter2")
    reply = upload("uploads", secret)
    assert reply.status_code == 400
    (error,) = reply.get_json()["errors"]
    assert error["pointer"] == "/x-gatebench/password"
    assert error["message"].startswith(
        "'password' looks like a credential; credentials are never accepted"
    )


def test_upload_request_problems() -> None:
    unknown = upload("validate", PETSTORE, gateways="nginx,kongg")
    assert message(unknown) == (
        "gateways: 'kongg' is not in the plan; choose among nginx, haproxy, caddy"
    )
    quick = upload("validate", PETSTORE, quick="maybe")
    assert message(quick) == "query parameter 'quick': expected 1 or 0, got 'maybe'"
    client = upload_client(QueueAcceptor(), max_bytes=100)
    too_big = client.post("/uploads", data=b"x" * 101)
    assert (too_big.status_code, message(too_big)) == (
        413,
        "the upload is 101 bytes; the limit is 100 (--max-bytes)",
    )
    wrong = client.get("/validate")
    assert (wrong.status_code, wrong.headers["Allow"]) == (405, "POST")
    missing = client.post("/runs", data=b"")
    assert (missing.status_code, message(missing)) == (
        404,
        "no API route 'runs'; routes: validate, uploads",
    )


def _two_descriptions() -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("first.yaml", PETSTORE)
        zf.writestr("second.yaml", PETSTORE.replace(b"title: Petstore", b"title: Second"))
    return buf.getvalue()


def test_an_upload_picks_the_entry_of_a_zip_with_two_descriptions() -> None:
    zipped = _two_descriptions()
    refused = upload("validate", zipped, name="specs.zip")
    assert (refused.status_code, message(refused)) == (
        400,
        "several API descriptions in the bundle (first.yaml, second.yaml); name one with "
        "--entry (an upload: the 'entry' parameter)",
    )
    assert (
        upload("validate", zipped, name="specs.zip", entry="second.yaml").get_json()["title"]
        == "Second"
    )
    missing = upload("validate", zipped, name="specs.zip", entry="third.yaml").get_json()
    assert missing["errors"][0]["message"] == (
        "entry 'third.yaml' is not in the bundle; it holds: first.yaml, second.yaml"
    )
    acceptor = QueueAcceptor()
    ticket = upload("uploads", zipped, acceptor, name="specs.zip", entry="second.yaml")
    assert ticket.status_code == 202
    (accepted,) = acceptor.accepted
    assert accepted.request == RunRequest(entry="second.yaml")
    assert accepted.api.title == "Second"
    # A single description has no entry to pick.
    single = upload("validate", PETSTORE, entry="openapi.yaml").get_json()
    assert single["errors"][0]["message"] == "an entry only applies to a folder or a zip"


def test_the_entry_travels_to_the_worker_and_in_the_signed_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gatebench.local import worker as _worker
    from gatebench.local.queue import RunQueue

    zipped = _two_descriptions()
    upload_ = check_upload(zipped, "specs.zip", RunRequest(quick=True, entry="second.yaml"))
    spec = tmp_path / "specs.zip"
    spec.write_bytes(zipped)
    with SqliteStore(tmp_path / "s.sqlite") as store:
        queue = RunQueue(store, str(tmp_path / "s.sqlite"), tmp_path)  # never started
        argv = queue.worker_argv(queue.submit(upload_, spec_path=spec))
    assert argv[argv.index("--entry") + 1] == "second.yaml"
    assert _worker.parse_args(argv[3:]).entry == "second.yaml"
    # The worker reads the upload again with that entry (one it lacks is refused).
    bad = [*argv[3 : argv.index("--entry")], "--entry", "third.yaml"]
    assert _worker.main(bad) == _worker.EXIT_INPUT
    assert "error: /: entry 'third.yaml' is not in the bundle" in capsys.readouterr().err
    # On GCP the entry is signed into the object's metadata, read back by the cloud steps.
    signer = HmacSigner(b"k" * 32, "http://127.0.0.1:8321/bucket", "gs://gb-uploads-p")
    put = SignedUploads(signer, clock=lambda: T0).accept(upload_)[0]["put"]
    metadata = put["headers"]["x-goog-meta-gatebench"]
    assert metadata == '{"entry":"second.yaml","quick":true}'
    assert run_request_from_metadata(metadata).entry == "second.yaml"


@pytest.mark.parametrize(
    ("given", "safe"),
    [
        ("petstore.yaml", "petstore.yaml"),
        ("../../etc/passwd", "passwd"),
        ("..\\..\\win.yaml", "win.yaml"),
        (".hidden.yaml", "hidden.yaml"),
        ("a b$c.yaml", "a-b-c.yaml"),
        ("", "spec.yaml"),
        (None, "spec.yaml"),
        ("..", "spec.yaml"),
    ],
)
def test_safe_names(given: str | None, safe: str) -> None:
    assert safe_name(given) == safe


# -- signed uploads (GCP) ---------------------------------------------------------------------


def _ticket(request: RunRequest) -> tuple[HmacSigner, dict[str, object]]:
    signer = HmacSigner(b"k" * 32, "http://127.0.0.1:8321/bucket", "gs://gb-uploads-p")
    upload = check_upload(PETSTORE, "petstore.yaml", request)
    payload, status, _ = SignedUploads(signer, clock=lambda: T0).accept(upload)
    assert status == 200
    return signer, payload


def test_a_signed_upload_ticket_says_exactly_what_to_send() -> None:
    _, ticket = _ticket(RunRequest(quick=True, gateways=("nginx",)))
    name = "specs/20260101-120000-d2b930db-petstore.yaml"
    assert ticket["object"] == name
    assert ticket["spec_uri"] == f"gs://gb-uploads-p/{name}"
    assert ticket["expires_at"] == T0 + 900
    put = ticket["put"]
    assert isinstance(put, dict)
    assert put["method"] == "PUT"
    assert put["headers"] == {
        "Content-Type": "application/yaml",
        "x-goog-meta-gatebench": '{"gateways":["nginx"],"quick":true}',
    }
    assert put["url"].startswith(f"http://127.0.0.1:8321/bucket/{name}?expires=")
    assert upload_name_from_object(name) == "petstore.yaml"


def test_the_local_signature_binds_object_type_metadata_and_time() -> None:
    signer, ticket = _ticket(RunRequest(quick=True))
    put = ticket["put"]
    assert isinstance(put, dict)
    from urllib.parse import parse_qsl, urlsplit

    query = dict(parse_qsl(urlsplit(put["url"]).query))
    headers = {k.lower(): v for k, v in put["headers"].items()}
    name = str(ticket["object"])
    now = T0 + 10
    assert signer.verify(name, query, headers, now=now) is None
    assert signer.verify(name, query, headers, now=T0 + 901) == "the signed URL has expired"
    mismatch = "the signature does not match this object, content type and metadata"
    assert signer.verify(name + "x", query, headers, now=now) == mismatch
    assert signer.verify(name, query, headers | {"content-type": "text/plain"}, now=now) == mismatch
    # The run request is signed: the browser cannot turn a quick run into a full one.
    full = headers | {"x-goog-meta-gatebench": '{"quick":false}'}
    assert signer.verify(name, query, full, now=now) == mismatch
    assert signer.verify(name, {**query, "expires": "x"}, headers, now=now) == (
        "the URL has no valid 'expires'"
    )


def test_run_requests_from_query_and_metadata() -> None:
    request = RunRequest(quick=True, gateways=("nginx", "caddy"))
    assert run_request_from_metadata(request.to_metadata()) == request
    assert run_request_from_query(request.to_query()) == request
    entry = RunRequest(entry="api/openapi.yaml")
    assert run_request_from_metadata(entry.to_metadata()) == entry
    assert run_request_from_query(entry.to_query()) == entry
    assert run_request_from_query({"entry": ""}) == RunRequest()
    assert run_request_from_query({"gateways": "none"}) == RunRequest(gateways=())
    assert run_request_from_metadata(None) == RunRequest()
    with pytest.raises(UploadRejected) as bad:
        run_request_from_metadata('{"quick": "yes"}')
    assert [p.format() for p in bad.value.problems] == [
        "x-goog-meta-gatebench: error: /quick: expected true or false, got 'yes'"
    ]
    with pytest.raises(UploadRejected) as odd:
        run_request_from_metadata('{"repetitions": 1}')
    assert odd.value.problems[0].message == (
        "metadata x-goog-meta-gatebench: expected an object with 'quick', 'gateways', "
        "'entry', 'kind' and 'scale', got '{\"repetitions\": 1}'"
    )
    capacity = RunRequest(gateways=("nginx",), kind="capacity")
    assert capacity.to_metadata() == '{"gateways":["nginx"],"kind":"capacity","quick":false}'
    assert run_request_from_metadata(capacity.to_metadata()) == capacity
    assert run_request_from_query(capacity.to_query()) == capacity
    assert RunRequest().to_metadata() == '{"quick":false}'  # a fixed run's metadata is unchanged
    with pytest.raises(UploadRejected) as kind:
        run_request_from_metadata('{"kind": "soak"}')
    assert [p.format() for p in kind.value.problems] == [
        "x-goog-meta-gatebench: error: /kind: expected one of fixed, capacity, scale, change-under-load, got 'soak'"
    ]


def test_a_capacity_upload_of_a_plan_with_tls_is_refused_where_a_fixed_one_is_not() -> None:
    """The dashboard's check refuses a capacity run the search cannot run (its generator
    speaks plain HTTP/1.1), located in the spec, before anything is queued."""
    text = PETSTORE.decode()
    assert "    mock: {latency: 1ms}\n" in text
    with_tls = text.replace(
        "    mock: {latency: 1ms}\n", "    mock: {latency: 1ms}\n  tls: {}\n"
    ).encode()
    assert check_upload(with_tls, "petstore.yaml", RunRequest()).plan.tls is not None
    with pytest.raises(UploadRejected) as refused:
        check_upload(with_tls, "petstore.yaml", RunRequest(kind="capacity"))
    assert [p.pointer for p in refused.value.problems] == ["/x-gatebench/tls"]
    assert "plain HTTP/1.1" in refused.value.problems[0].message
    # at its line and column, as every other problem of the plan is (it had neither)
    line = with_tls.decode().splitlines().index("  tls: {}") + 1
    where = refused.value.problems[0]
    assert (where.source, where.line, where.column) == ("petstore.yaml", line, 3)


def test_answers_are_plain_utf8_json_in_their_keys_order() -> None:
    app = cloud_app("read", {}, store=lambda: None)
    text = app.json.dumps({"z": float("nan"), "a": [float("inf"), "é"]})
    assert text == '{"z": null, "a": [null, "é"]}'
    assert json.loads(text) == {"z": None, "a": [None, "é"]}
    assert RunStatus.DONE.finished


def test_a_capacity_run_travels_to_the_worker_and_says_what_it_is_from_the_queue(
    tmp_path: Path,
) -> None:
    """``kind=capacity`` from the form: the summary says so, the queued record is a capacity
    run from its first write, the worker is told ``--kind capacity``, and a quick capacity run
    shortens the capacity search, not the workloads."""
    from gatebench.local import worker as _worker
    from gatebench.local.queue import RunQueue

    checked = upload("validate", PETSTORE, kind="capacity", quick="1").get_json()
    assert checked["kind"] == "capacity"
    # each workload as the capacity run records it: its search, not the unused injection
    assert {w["injection"] for w in checked["workloads"]} == {
        "searched: constant rates from 100/s up to 100,000/s within p99 ≤ 50 ms, errors ≤ 0.1 %, "
        "1 search a target"
    }
    request = RunRequest(quick=True, kind="capacity")
    upload_ = check_upload(PETSTORE, "petstore.yaml", request)
    (workload, *_) = upload_.plan.workloads
    plan = upload_.run_plan
    assert plan.workloads == upload_.plan.workloads  # the workloads as written
    searched = plan.capacity_settings()[workload.name]
    assert (searched.repetitions, searched.probe, searched.precision) == (1, 1.0, 0.2)
    spec = tmp_path / "petstore.yaml"
    spec.write_bytes(PETSTORE)
    with SqliteStore(tmp_path / "s.sqlite") as store:
        queue = RunQueue(store, str(tmp_path / "s.sqlite"), tmp_path)  # never started
        job = queue.submit(upload_, spec_path=spec)
        argv = queue.worker_argv(job)
    assert job.summary.kind == "capacity"  # what the runs list shows
    assert _worker.parse_args(argv[3:]).kind == "capacity"


def test_a_scale_runs_points_and_changes_as_json_and_html(store: SqliteStore) -> None:
    run_id = "20260103-120000-cccc"
    store.create_run(
        RunRecord(
            run_id=run_id, spec_uri="file:///a.yaml", spec_sha256="0" * 64, kind=RunKind.SCALE
        )
    )
    for gateway, routes in (("nginx", 100), ("nginx", 10), ("envoy", 10)):
        store.put_result(
            run_id,
            "scale",
            f"{gateway}@{routes}",
            {
                "gateway": gateway,
                "routes": routes,
                "config_bytes": routes * 90,
                "start_s": 0.1,
                "rss_idle_mb": 10.0,
                "rss_load_mb": 11.0,
                "rate": 200.0,
                "engine": "gatling",
                "measured_from": "send",
                "latency": {
                    "end": {"requests": 9, "ko": 0, "p50_ms": 1.0, "p99_ms": 2.0, "max_ms": 3.0}
                },
                "check_s": None,
                "problem": "",
            },
        )
    reply = get(store, f"runs/{run_id}/scale")
    assert reply.status_code == 200
    doc = reply.get_json()
    assert doc["format"] == "gatebench-scale/1" and doc["run"] == run_id
    assert [(p["gateway"], p["routes"]) for p in doc["points"]] == [
        ("envoy", 10),
        ("nginx", 10),
        ("nginx", 100),
    ]
    assert doc["changes"] == []
    html = get(store, f"runs/{run_id}/scale", format="html")
    assert html.status_code == 200 and html.content_type.startswith("text/html")
    assert b'id="mem-nginx"' in html.data and b'id="p99-envoy"' in html.data
    assert get(store, f"runs/{run_id}/scale", format="csv").status_code == 400
    assert get(store, "runs/20990101-000000-zzzz/scale").status_code == 404


def test_each_kind_answers_its_own_report_and_only_fixed_runs_are_compared(
    store: SqliteStore,
) -> None:
    """``/report`` and ``/view`` look the run's kind up in the registry: a route-scale run's
    report is its own (not an empty AGE report), in the formats it has; ``/compare`` takes the
    kinds that can stand side by side (fixed workloads) and names any other."""
    scale_id, fixed_id = "20260103-130000-dddd", "20260103-130000-eeee"
    store.create_run(
        RunRecord(
            run_id=scale_id, spec_uri="file:///a.yaml", spec_sha256="0" * 64, kind=RunKind.SCALE
        )
    )
    run, measurements = synthetic_run(run_id=fixed_id)
    store.create_run(run)
    for m in measurements:
        store.put_measurement(m)
    html = get(store, f"runs/{scale_id}/report", format="html")
    assert (
        html.status_code == 200
        and html.data == get(store, f"runs/{scale_id}/scale", format="html").data
    )
    as_json = get(store, f"runs/{scale_id}/report", format="json")
    assert as_json.status_code == 200 and json.loads(as_json.data)["format"] == "gatebench-scale/1"
    markdown = get(store, f"runs/{scale_id}/report", format="md")
    assert markdown.status_code == 200 and markdown.data.startswith(b"# ")
    fixed = get(store, f"runs/{fixed_id}/report", format="md")
    assert fixed.status_code == 200 and b"# " in fixed.data
    assert get(store, f"runs/{fixed_id}/view").get_json()["run"]["kind"] == "fixed"
    refused = get(store, "compare", a=fixed_id, b=scale_id)
    assert refused.status_code == 400 and b"is a route scale run" in refused.data
    assert get(store, "compare", a=fixed_id, b=fixed_id).status_code == 200
    # /scale serves the live kinds: a fixed run's was a scale report, 'Nothing measured yet.'
    not_live = get(store, f"runs/{fixed_id}/scale", format="html")
    assert not_live.status_code == 400
    assert b"is a fixed workload run: /scale serves route scale" in not_live.data
