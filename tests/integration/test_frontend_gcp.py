"""The dashboard's Google Cloud side against the local stand-ins (no Google Cloud here):

- a real Cloud Storage V4 signed URL (google-cloud-storage, signing with a throw-away
  service-account key) for the upload API's ticket: its signature covers exactly the
  headers the ticket tells the browser to send, and a PUT with them lands the spec in the
  Cloud Storage emulator (gcp-storage-emulator);
- the read API over Firestore (the npm emulator, the real google-cloud-firestore client)
  answers exactly what it answers over SQLite, and the dashboard in Chromium reads two
  runs from it.

Not covered: the emulator neither checks signatures nor keeps ``x-goog-meta-*`` metadata,
and it has no CORS, so the browser's cross-origin PUT to Cloud Storage cannot run here
(the signed-URL page flow runs against ``gatebench serve --upload signed-url`` instead:
test_frontend_browser.py).
"""

from __future__ import annotations

import http.client
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from _frontend_helpers import PETSTORE, assert_clean, scenario, seed_two_runs, start_serve
from firestore_emulator import firestore_emulator, missing

from cloud.servers import start_gcs_emulator, storage_client
from cloud.signing import service_account, verify_v4
from gatebench.cloud import GcsSigner
from gatebench.kinds.request import RunRequest, run_request_from_metadata
from gatebench.local.procs import Supervisor
from gatebench.store import open_store
from gatebench.web import SignedUploads
from webapp import read_client, upload_client

BUCKET = "gb-uploads-test"
RUN_A, RUN_B = "20260101-120000-fs-a", "20260102-120000-fs-b"


@pytest.fixture(scope="module")
def gcs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("gcs")
    previous = os.environ.get("STORAGE_EMULATOR_HOST")
    try:
        with Supervisor() as supervisor:
            endpoint = start_gcs_emulator(supervisor, tmp / "logs")
            client: Any = storage_client(endpoint)  # sets STORAGE_EMULATOR_HOST
            client.create_bucket(BUCKET)
            yield endpoint.url
    finally:
        if previous is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = previous


def test_a_cloud_storage_signed_url_takes_the_upload(gcs: str) -> None:
    credentials, public_key = service_account()
    signer = GcsSigner(
        BUCKET, credentials=credentials, project="gatebench-test", api_access_endpoint=gcs
    )
    reply = upload_client(SignedUploads(signer)).post(
        "/uploads",
        data=PETSTORE.read_bytes(),
        query_string={"name": "petstore.yaml", "quick": "1", "gateways": "nginx"},
    )
    assert reply.status_code == 200, reply.get_json()
    ticket = reply.get_json()
    put = ticket["put"]
    assert ticket["spec_uri"] == f"gs://{BUCKET}/{ticket['object']}"
    query = dict(parse_qsl(urlsplit(put["url"]).query))
    assert query["X-Goog-Algorithm"] == "GOOG4-RSA-SHA256"
    assert query["X-Goog-SignedHeaders"] == "content-type;host;x-goog-meta-gatebench"
    assert 890 <= int(query["X-Goog-Expires"]) <= 900
    assert query["X-Goog-Credential"].startswith(
        "gb-upload@gatebench-test.iam.gserviceaccount.com/"
    )
    verify_v4(put["url"], put["headers"], public_key)
    # Another run request in the metadata header would not match the signature.
    from cryptography.exceptions import InvalidSignature

    tampered = {**put["headers"], "x-goog-meta-gatebench": '{"quick":false}'}
    with pytest.raises(InvalidSignature):
        verify_v4(put["url"], tampered, public_key)

    # The PUT the page makes, with exactly the ticket's headers.
    parts = urlsplit(put["url"])
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    body = PETSTORE.read_bytes()
    conn.request("PUT", f"{parts.path}?{parts.query}", body, put["headers"])
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 200
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    client = storage.Client(project="gatebench-test", credentials=AnonymousCredentials())
    blob = client.bucket(BUCKET).get_blob(ticket["object"])
    assert blob is not None
    assert blob.download_as_bytes() == body
    assert blob.content_type == "application/yaml"
    # What the parse step reads back from the object's metadata (the emulator drops
    # custom metadata, so it is read from the header the signature fixed).
    assert run_request_from_metadata(put["headers"]["x-goog-meta-gatebench"]) == RunRequest(
        quick=True, gateways=("nginx",)
    )


@pytest.fixture(scope="module")
def firestore_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reason = missing()
    if reason:
        pytest.fail(reason)
    with firestore_emulator(tmp_path_factory.mktemp("firestore")) as host:
        yield host


def test_the_read_api_answers_the_same_over_firestore_and_sqlite(
    firestore_host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", firestore_host)
    firestore = f"firestore://gatebench-test/t{uuid.uuid4().hex[:12]}"
    sqlite = str(tmp_path / "s.sqlite")
    for location in (firestore, sqlite):
        seed_two_runs(location, RUN_A, RUN_B)
    paths = [
        ("runs", {}),
        (f"runs/{RUN_A}", {}),
        (f"runs/{RUN_B}/view", {}),
        ("compare", {"a": RUN_A, "b": RUN_B}),
        ("runs", {"spec_uri": "file://examples/auction/openapi.yaml"}),
        ("runs/20990101-000000-none", {}),
    ]
    with open_store(firestore) as fs, open_store(sqlite) as sq:
        for path, query in paths:
            from_firestore = read_client(fs).get(f"/{path}", query_string=query)
            from_sqlite = read_client(sq).get(f"/{path}", query_string=query)
            assert from_firestore.status_code == from_sqlite.status_code, path
            assert from_firestore.get_json() == from_sqlite.get_json(), path
    with open_store(firestore) as fs:
        listed = read_client(fs).get("/runs").get_json()["runs"]
    assert [r["run_id"] for r in listed] == [RUN_B, RUN_A]


def test_the_dashboard_reads_runs_from_firestore(
    firestore_host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gatebench serve --store firestore://...``: the read path the cloud read function
    takes (the read API over FirestoreStore), in the browser."""
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", firestore_host)  # the server inherits it
    firestore = f"firestore://gatebench-test/t{uuid.uuid4().hex[:12]}"
    seed_two_runs(firestore, RUN_A, RUN_B)
    serve = start_serve(tmp_path, store=firestore)
    try:
        result = scenario("compare", serve, run_a=RUN_A, run_b=RUN_B)
    finally:
        code, err = serve.stop()
    assert code == 0, err
    assert_clean(result, serve)
    assert result["url"].endswith(f"#/compare/{RUN_A}/{RUN_B}")
    assert [c["whiskers"] for c in result["charts"]] == [12, 12]
