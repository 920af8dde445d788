"""The dashboard's Cloud Functions as deployed (unpacked `make bundle` archives of
functions/read and functions/upload, and functions/parse) served by functions-framework over
real HTTP, with a Cloud Storage emulator (fake-gcs-server: it keeps a signed PUT's
``x-goog-meta-*`` headers as the object's metadata, as Cloud Storage does) and the Firestore
emulator (npm @firestore-emulator/server) behind the real google-cloud-storage and
google-cloud-firestore clients.

- upload: a real V4 signed URL (the function signs with a throw-away service-account key
  given as GOOGLE_APPLICATION_CREDENTIALS, as a key file signs; on Cloud Functions IAM
  signBlob signs instead), verified with the key's public half; the PUT with the ticket's
  headers lands the spec in the emulator with the run request as its ``gatebench`` metadata;
- parse: that metadata applied to the plan of the object the PUT created, and a broken one
  answered as located errors;
- read: every route answers what ``gatebench serve`` answers over the same runs (seeded
  into Firestore and into SQLite);
- CORS preflights and bad requests, with exact messages.

Not covered here: the emulator checks no signature (the test verifies it with the public
key); Cloud Run's IAM in front of the functions cannot run here. The browser's side (the
exported site's cross-origin calls and PUT) is test_frontend_gcp_functions.py.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from _dashboard_stack import UPLOADS, dashboard_stack
from _frontend_helpers import PETSTORE, seed_two_runs, start_serve

from cloud.servers import Endpoint
from cloud.signing import EMAIL, verify_v4
from gatebench.core.model import run_id_for_object
from gatebench.web import READ_ROUTES, UPLOAD_ROUTES

SITE = "https://site.example"
RUN_A, RUN_B = "20260101-120000-dash-a", "20260102-120000-dash-b"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    endpoint: Endpoint | str,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    url = endpoint.url if isinstance(endpoint, Endpoint) else endpoint
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.request(method, path, body, headers or {})
        response = conn.getresponse()
        return Answer(
            response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        )
    finally:
        conn.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with dashboard_stack(
        tmp_path_factory.mktemp("dashboard"), [SITE, "http://localhost:8080"]
    ) as started:
        yield started


def _upload(stack: dict[str, Any], query: dict[str, str], body: bytes) -> Answer:
    return call(
        stack["upload"],
        "POST",
        f"/uploads?{urlencode(query)}",
        body,
        {"Content-Type": "application/yaml", "Origin": SITE},
    )


def test_the_upload_function_signs_a_put_that_lands_the_spec(stack: dict[str, Any]) -> None:
    answer = _upload(
        stack, {"name": "petstore.yaml", "quick": "1", "gateways": "nginx"}, PETSTORE.read_bytes()
    )
    assert answer.status == 200, answer.body
    assert answer.headers["access-control-allow-origin"] == SITE
    ticket = answer.json()
    put = ticket["put"]
    assert ticket["method"] == "signed-url"
    assert ticket["object"].startswith("specs/") and ticket["object"].endswith("-petstore.yaml")
    assert ticket["spec_uri"] == f"gs://{UPLOADS}/{ticket['object']}"
    assert put["headers"] == {
        "Content-Type": "application/yaml",
        "x-goog-meta-gatebench": '{"gateways":["nginx"],"quick":true}',
    }
    parts = urlsplit(put["url"])
    assert f"{parts.scheme}://{parts.netloc}" == stack["gcs"].url  # signed for the emulator
    query = dict(parse_qsl(parts.query))
    assert query["X-Goog-SignedHeaders"] == "content-type;host;x-goog-meta-gatebench"
    assert query["X-Goog-Credential"].startswith(f"{EMAIL}/")
    assert 890 <= int(query["X-Goog-Expires"]) <= 900
    verify_v4(put["url"], put["headers"], stack["public_key"])

    stored = call(
        stack["gcs"], "PUT", f"{parts.path}?{parts.query}", PETSTORE.read_bytes(), put["headers"]
    )
    assert stored.status == 200, stored.body
    blob = stack["bucket"].get_blob(ticket["object"])
    assert blob is not None
    assert blob.download_as_bytes() == PETSTORE.read_bytes()
    assert blob.content_type == "application/yaml"
    assert blob.metadata == {"gatebench": '{"gateways":["nginx"],"quick":true}'}
    parsed = call(
        stack["parse"],
        "POST",
        "/",
        json.dumps({"bucket": UPLOADS, "name": ticket["object"]}).encode(),
        {"Content-Type": "application/json"},
    )
    assert parsed.status == 200, parsed.body
    run = parsed.json()
    assert run["run_id"] == run_id_for_object(UPLOADS, ticket["object"], str(blob.generation))
    assert run["spec_uri"] == f"{ticket['spec_uri']}#{blob.generation}"
    assert run["gateways"] == ["nginx"]  # the plan lists nginx, haproxy and caddy
    plan = run["document"]["fields"]["plan"]["mapValue"]["fields"]
    assert plan["repetitions"] == {"integerValue": "1"}  # quick: 3 in the spec


def test_parse_answers_a_broken_run_request_as_located_errors(stack: dict[str, Any]) -> None:
    blob = stack["bucket"].blob("specs/broken-request.yaml")
    blob.metadata = {"gatebench": '{"quick": "soon", "gateways": ["kong"]}'}
    blob.upload_from_string(PETSTORE.read_bytes(), content_type="application/yaml")
    answer = call(
        stack["parse"],
        "POST",
        "/",
        json.dumps({"bucket": UPLOADS, "name": "specs/broken-request.yaml"}).encode(),
        {"Content-Type": "application/json"},
    )
    assert answer.status == 400
    result = answer.json()
    assert result["run_id"] == run_id_for_object(
        UPLOADS, "specs/broken-request.yaml", str(blob.generation)
    )
    assert result["errors"] == [
        {
            "pointer": "/quick",
            "message": "expected true or false, got 'soon'",
            "severity": "error",
            "source": "x-goog-meta-gatebench",
        }
    ]
    assert result["message"] == (
        "x-goog-meta-gatebench: error: /quick: expected true or false, got 'soon'"
    )
    # A gateway the plan lacks is located in the metadata too.
    blob.metadata = {"gatebench": '{"gateways": ["kong"]}'}
    blob.patch()
    answer = call(
        stack["parse"],
        "POST",
        "/",
        json.dumps({"bucket": UPLOADS, "name": "specs/broken-request.yaml"}).encode(),
        {"Content-Type": "application/json"},
    )
    assert answer.status == 400
    assert answer.json()["message"] == (
        "x-goog-meta-gatebench: error: /gateways: gateways: 'kong' is not in the plan; "
        "choose among nginx, haproxy, caddy"
    )


def test_the_upload_function_validates_and_refuses_with_exact_errors(
    stack: dict[str, Any],
) -> None:
    checked = call(
        stack["upload"],
        "POST",
        "/validate?name=petstore.yaml&gateways=caddy",
        PETSTORE.read_bytes(),
    )
    assert checked.status == 200, checked.body
    summary = checked.json()
    assert (summary["gateways"], summary["selected"]) == (["nginx", "haproxy", "caddy"], ["caddy"])
    assert "cloud_only" not in summary
    assert "access-control-allow-origin" not in checked.headers  # no Origin sent

    broken = PETSTORE.read_bytes().replace(b"repetitions: 3", b"repetitions: lots")
    refused = _upload(stack, {"name": "petstore.yaml"}, broken)
    assert refused.status == 400
    assert [(e["pointer"], e["line"]) for e in refused.json()["errors"]] == [
        ("/x-gatebench/repetitions", 107)
    ]
    assert refused.headers["access-control-allow-origin"] == SITE
    unknown = _upload(stack, {"name": "petstore.yaml", "gateways": "kongg"}, PETSTORE.read_bytes())
    assert unknown.status == 400
    assert unknown.json()["errors"][0]["message"] == (
        "gateways: 'kongg' is not in the plan; choose among nginx, haproxy, caddy"
    )
    assert call(stack["upload"], "GET", "/uploads").status == 405
    missing = call(stack["upload"], "POST", "/runs", b"x")
    assert missing.status == 404
    assert (
        missing.json()["errors"][0]["message"] == "no API route 'runs'; routes: validate, uploads"
    )


def test_cors_preflights_are_answered_for_the_sites_origin_only(stack: dict[str, Any]) -> None:
    preflight = {"Origin": SITE, "Access-Control-Request-Method": "POST"}
    for name, path, methods in (
        ("upload", "/uploads", "POST, OPTIONS"),
        ("read", "/runs", "GET, HEAD, OPTIONS"),
    ):
        answer = call(stack[name], "OPTIONS", path, headers=preflight)
        assert answer.status == 204, (name, answer.body)
        assert answer.headers["access-control-allow-origin"] == SITE
        assert answer.headers["access-control-allow-methods"] == methods
        assert answer.headers["access-control-allow-headers"] == "Content-Type, X-Gatebench"
        other = call(
            stack[name], "OPTIONS", path, headers={**preflight, "Origin": "https://evil.example"}
        )
        assert other.status == 403
        assert other.json()["errors"][0]["message"] == (
            "origin 'https://evil.example' may not call this API"
        )
        assert "access-control-allow-origin" not in other.headers


def _undated(report: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(report.pop("generated_at"), float)
    return report


def test_the_read_function_answers_what_gatebench_serve_answers(
    stack: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", stack["firestore"])
    seed_two_runs(f"firestore://gatebench-test/{stack['database']}", RUN_A, RUN_B)
    sqlite = tmp_path / "local.sqlite"
    seed_two_runs(str(sqlite), RUN_A, RUN_B)
    serve = start_serve(tmp_path, store=sqlite)
    try:
        paths = [
            "/runs",
            "/runs?limit=1",
            f"/runs/{RUN_A}",
            f"/runs/{RUN_B}/view",
            f"/runs/{RUN_A}/report?format=json",
            f"/runs/{RUN_A}/report?format=csv",
            f"/compare?a={RUN_A}&b={RUN_B}",
            "/runs?spec_uri=file://examples/auction/openapi.yaml",
            "/runs/20990101-000000-none",
            "/runs?limit=0",
            "/compare?a=&b=x",
            "/nothing",
        ]
        for path in paths:
            cloud = call(stack["read"], "GET", path, headers={"Origin": SITE})
            local = call(serve.url, "GET", f"/api{path}")
            assert cloud.status == local.status, (path, cloud.body, local.body)
            if "format=json" in path:  # the report says when it was made: all else is equal
                assert _undated(cloud.json()) == _undated(local.json())
            elif path == "/nothing":  # each lists the routes it answers: serve takes uploads
                said = "no API route 'nothing'; routes: " + READ_ROUTES
                assert cloud.json()["errors"][0]["message"] == said
                assert local.json()["errors"][0]["message"] == f"{said}, {UPLOAD_ROUTES}"
            elif local.headers["content-type"].startswith("application/json"):
                # Equal as JSON: Firestore keeps a map's keys in its own order.
                assert cloud.json() == local.json(), path
            else:
                assert cloud.body == local.body, path
            assert cloud.headers["content-type"] == local.headers["content-type"], path
            assert cloud.headers["access-control-allow-origin"] == SITE, path
        # The same application reads the path as sent on both: an encoded '/' is no separator.
        traversal = call(stack["read"], "GET", "/runs/..%2Fx")
        local = call(serve.url, "GET", "/api/runs/..%2Fx")
        assert traversal.status == local.status == 400
        assert traversal.json() == local.json()
        assert traversal.json()["errors"][0]["message"] == "'..%2Fx' is not a run id"
        listed = call(stack["read"], "GET", "/runs").json()["runs"]
        assert [r["run_id"] for r in listed] == [RUN_B, RUN_A]
        assert call(stack["read"], "POST", "/runs", b"{}").status == 405
    finally:
        code, err = serve.stop()
    assert code == 0, err
