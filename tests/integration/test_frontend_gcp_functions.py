"""The site as deployed on Google Cloud, in Chromium, against the real dashboard functions.

``gatebench serve --export DIR --mode gcp`` writes the static site with a config.json naming
the read and upload functions' URLs; a static server on 127.0.0.1 (Python's http.server, as
the site bucket serves files: no API behind it) serves DIR. The functions are the deployable
bundles of functions/read, functions/upload and functions/parse under functions-framework,
over the Firestore emulator and fake-gcs-server (_dashboard_stack.py), with
GATEBENCH_ORIGINS set to the static server's origin, so every call the page makes is a real
cross-origin call answered by the functions' own CORS.

- Two runs seeded into Firestore: the runs list shows both, the comparison draws its charts
  (bars, whiskers of five repetitions, one scale), no console error, and the page talks to
  nobody but the site and the two functions.
- A capacity run seeded into Firestore: its page shows the verdict, the curves with each
  target's knee, and its tables, read through the read function.
- The upload flow: the page checks the petstore with the upload function, asks it for a
  ticket, PUTs the spec to the V4 signed URL on fake-gcs-server (its CORS allows the
  ``x-goog-meta-gatebench`` header, as the bucket's CORS configuration must), then waits for
  the pipeline's run. The object lands with its ``gatebench`` metadata; the test then plays
  the workflow's first two steps (workflows/benchmark.yaml ``parse`` and ``create_run``: the
  parse function on the object, its run document committed to Firestore) and the page finds
  the run by its spec_uri through the read function and opens its page.

One change to the export: its index.html allows connect-src ``'self' https:`` plus the
functions' origins when they are plain http (as here); the signed PUT goes to Cloud Storage,
https on Google Cloud, here fake-gcs-server on plain http, so the test adds that one origin
to that directive and nothing else.

Not covered: the rest of the pipeline (render, VMs, scoring) — the run stays at the status
the parse step gives it; fake-gcs-server checks no signature (test_dashboard_functions.py
verifies one with the key's public half) and its CORS allows any origin, where the real
bucket's lists the site's; Cloud Run's IAM and the site bucket's HTTPS cannot run here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from _dashboard_stack import UPLOADS, dashboard_stack
from _frontend_helpers import (
    PETSTORE,
    assert_capacity_run_shown,
    assert_screenshot,
    assert_two_seeded_runs_compared,
    scenario,
    seed_capacity_run,
    seed_two_runs,
    wait_for,
)

from cloud.firestore import EmulatorFirestore
from gatebench.local.procs import Supervisor, free_port, wait_ready
from paths import ROOT

RUN_A, RUN_B = "20260101-120000-site-a", "20260102-120000-site-b"
CAPACITY_RUN = "20260103-120000-site-capacity"
PROJECT = "gatebench-test"  # GATEBENCH_PROJECT of the functions (cloud.servers.gcs_env)


@dataclass
class Site:
    url: str  # the static server, ending in "/"
    origin: str
    stack: dict[str, Any]

    def origins(self) -> set[str]:
        """Whom the page may talk to: the site and the two functions."""
        return {self.origin, _origin(self.stack["read"].url), _origin(self.stack["upload"].url)}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("gcp-site")
    export = tmp / "site"
    export.mkdir()
    with Supervisor() as supervisor:
        # The static server first: its origin is what the functions must allow.
        port = free_port()
        static = supervisor.start(
            "site",
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
            log_path=tmp / "logs" / "site.log",
            cwd=export,
        )
        wait_ready(static, port, timeout=30)
        origin = f"http://127.0.0.1:{port}"
        with dashboard_stack(tmp, [origin], cors_headers=["x-goog-meta-gatebench"]) as stack:
            exported = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "gatebench.cli",
                    "serve",
                    "--export",
                    str(export),
                    "--mode",
                    "gcp",
                    "--api",
                    stack["read"].url + "/",
                    "--upload-endpoint",
                    stack["upload"].url + "/",
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert exported.returncode == 0, exported.stderr
            _allow_the_storage_emulator(export / "index.html", stack)
            with pytest.MonkeyPatch.context() as env:
                env.setenv("FIRESTORE_EMULATOR_HOST", stack["firestore"])
                seed_two_runs(f"firestore://{PROJECT}/{stack['database']}", RUN_A, RUN_B)
            yield Site(f"{origin}/", origin, stack)


def _allow_the_storage_emulator(index: Path, stack: dict[str, Any]) -> None:
    """The export allows the functions' own (plain http) origins in the page's connect-src;
    the signed PUT goes to Cloud Storage, https on Google Cloud, and here to fake-gcs-server
    on plain http: that origin, and only that, is added."""
    html = index.read_text(encoding="utf-8")
    functions = sorted({_origin(stack[name].url) for name in ("read", "upload")})
    exported = "connect-src 'self' https: " + " ".join(functions) + ";"
    assert html.count(exported) == 1, "the export did not allow the functions' origins"
    storage = _origin(stack["gcs"].url)
    index.write_text(
        html.replace(exported, exported.removesuffix(";") + f" {storage};"), encoding="utf-8"
    )


def _assert_clean(result: dict[str, Any], allowed: set[str]) -> None:
    assert result["pageErrors"] == []
    assert result["consoleErrors"] == []
    assert result["failedRequests"] == []
    outside = [r["url"] for r in result["requests"] if _origin(r["url"]) not in allowed]
    assert outside == []


def test_the_exported_site_compares_two_runs_read_by_the_read_function(site: Site) -> None:
    config = json.loads(urllib.request.urlopen(site.url + "config.json", timeout=10).read())
    assert (config["mode"], config["upload"]["method"]) == ("gcp", "signed-url")
    assert config["api"] == site.stack["read"].url + "/"

    result = scenario("compare", site, run_a=RUN_A, run_b=RUN_B)
    _assert_clean(result, site.origins())
    # Every API call went to the read function, cross-origin (the preflight-free GETs).
    api_calls = {_origin(r["url"]) for r in result["requests"] if r["resourceType"] == "fetch"}
    assert api_calls == {_origin(site.stack["read"].url), site.origin}  # + config.json
    listed = [run for run in result["listed"] if run in (RUN_A, RUN_B)]
    assert listed == [RUN_B, RUN_A]  # newest first
    assert_two_seeded_runs_compared(result, RUN_A, RUN_B)
    assert_screenshot(result["screenshots"][0])


def test_the_exported_site_shows_a_capacity_run_read_by_the_read_function(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capacity run stored in Firestore (its result a nested document: encoded and decoded
    by the store) reaches the page through the read function as it does from ``gatebench
    serve``: listed as a capacity search, its verdict, curves, knees and tables."""
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", site.stack["firestore"])
    result, targets = seed_capacity_run(
        f"firestore://{PROJECT}/{site.stack['database']}", CAPACITY_RUN
    )
    found = scenario("capacity", site, run_a=CAPACITY_RUN)
    _assert_clean(found, site.origins())
    api_calls = {_origin(r["url"]) for r in found["requests"] if r["resourceType"] == "fetch"}
    assert api_calls == {_origin(site.stack["read"].url), site.origin}  # + config.json
    assert_capacity_run_shown(found, result, targets)


def _play_parse_and_create_run(site: Site, page: Future[dict[str, Any]]) -> tuple[Any, str]:
    """What workflows/benchmark.yaml does when the object lands (steps ``parse`` and
    ``create_run``), with the real parse function and a Firestore commit."""

    def landed() -> Any:
        if page.done():  # the page gave up: its error is the one to show
            page.result()
            raise AssertionError(f"the page finished before any upload: {page.result()}")
        return next(iter(site.stack["bucket"].list_blobs(prefix="specs/")), None)

    blob = wait_for("the page's PUT to land in the bucket", landed, timeout=60)
    request = {
        "bucket": UPLOADS,
        "name": blob.name,
        "generation": str(blob.generation),
        "execution_id": "exec-site-1",
    }
    with urllib.request.urlopen(
        urllib.request.Request(
            site.stack["parse"].url + "/",
            data=json.dumps(request).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        ),
        timeout=30,
    ) as response:
        parsed = json.loads(response.read())
    firestore = EmulatorFirestore(site.stack["firestore"])
    try:
        firestore.create_document(
            {
                "parent": f"projects/{PROJECT}/databases/{site.stack['database']}/documents",
                "collectionId": "runs",
                "documentId": parsed["run_id"],
                "body": parsed["document"],
            }
        )
    finally:
        firestore.close()
    return blob, parsed["run_id"]


def test_the_exported_site_uploads_through_the_function_and_a_signed_put(
    site: Site,
) -> None:
    with ThreadPoolExecutor(1) as pool:
        page = pool.submit(scenario, "cloud-upload", site, spec=str(PETSTORE), timeout_ms="60000")
        blob, run_id = _play_parse_and_create_run(site, page)
        result = page.result(timeout=120)

    bucket_origin = site.stack["gcs"].url
    _assert_clean(result, site.origins() | {bucket_origin})
    puts = [r for r in result["requests"] if r["method"] == "PUT"]
    assert [_origin(r["url"]) for r in puts] == [bucket_origin]
    assert f"/{UPLOADS}/{blob.name}" in urlsplit(puts[0]["url"]).path
    # Each change of the options is checked again (validate), then one ticket (uploads);
    # all are cross-origin POSTs with a custom header, so each went through a preflight.
    posts = [r["url"] for r in result["requests"] if r["method"] == "POST"]
    paths = [urlsplit(url).path for url in posts]
    assert paths[-1] == "/uploads" and set(paths[:-1]) == {"/validate"}, paths
    assert {_origin(url) for url in posts} == {_origin(site.stack["upload"].url)}

    assert result["where"] == "Runs on Google Cloud"
    assert "quick run" in result["summary"]
    assert result["stages"] == [
        "Checking the spec and uploading it…",
        "Uploading to the bucket through a signed URL…",
        "Uploaded. Waiting for the pipeline to start the run…",
    ]
    assert result["runUrl"].endswith(f"#/runs/{run_id}")

    blob.reload()
    assert blob.name.startswith("specs/") and blob.name.endswith("-openapi.yaml")
    assert blob.download_as_bytes() == PETSTORE.read_bytes()
    assert blob.content_type == "application/yaml"
    assert blob.metadata == {"gatebench": '{"gateways":["nginx"],"quick":true}'}
    found = json.loads(
        urllib.request.urlopen(
            f"{site.stack['read'].url}/runs?spec_uri=gs://{UPLOADS}/{blob.name}", timeout=10
        ).read()
    )["runs"]
    assert [r["run_id"] for r in found] == [run_id]
    # The status the parse step's document gives it, first of the pipeline's stages.
    assert result["status"] == found[0]["status"] == "received"
    assert result["heading"] == "Petstore"
    assert_screenshot(result["screenshots"][0])
