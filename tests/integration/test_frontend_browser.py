"""The dashboard end to end in a real browser: Debian's Chromium driven by playwright-core
(tests/integration/frontend_e2e.cjs, with tools/node's launcher: never a downloaded
browser, host resolution off except for 127.0.0.1) against a real ``gatebench serve``
running real benchmarks. Screenshots are kept in tests/artifacts/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from _frontend_helpers import (
    PETSTORE,
    Serve,
    assert_capacity_run_shown,
    assert_clean,
    assert_screenshot,
    assert_two_seeded_runs_compared,
    broken_petstore,
    scenario,
    seed_capacity_run,
    seed_two_runs,
    start_serve,
)

from gatebench.local.procs import free_port

RUN_A, RUN_B = "20260101-120000-synthetic-a", "20260102-120000-synthetic-b"
EXPECTED_400 = (
    "error: Failed to load resource: the server responded with a status of 400 (Bad Request)"
)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    """A server whose store already holds two (synthetic) runs to compare."""
    tmp = tmp_path_factory.mktemp("dashboard")
    store_path = tmp / "store.sqlite"
    seed_two_runs(str(store_path), RUN_A, RUN_B)
    serve = start_serve(tmp, store=store_path)
    yield serve
    code, err = serve.stop()
    assert code == 0, err


def test_a_broken_spec_dropped_on_the_form_shows_located_errors(
    dashboard: Serve, tmp_path: Path
) -> None:
    broken = tmp_path / "broken-petstore.yaml"
    broken.write_text(broken_petstore(), encoding="utf-8")
    result = scenario("broken", dashboard, broken=str(broken))
    # The validation answer is a 400 (the browser logs that), and nothing else went wrong.
    assert_clean(result, dashboard, console=[EXPECTED_400])
    # this server reads API Blueprint (Node.js is here); the Cloud Functions do not
    assert result["hint"].startswith("OpenAPI 3.x, Swagger 2.0, RAML or API Blueprint")
    assert ".apib" in result["accept"].split(",")
    assert result["dragClass"] == "drop-zone dragging"
    assert result["heading"] == "broken-petstore.yaml: 2 problems to fix before it can run"
    assert result["problems"] == [
        {
            "pointer": "/x-gatebench/repetitions",
            "where": "broken-petstore.yaml, line 107, column 3 ",
            "message": "expected a whole number from 1 to 1,000, got -1",
            "line": "107",
        },
        {
            "pointer": "/x-gatebench/workloads/0/operation",
            "where": "broken-petstore.yaml, line 113, column 7 ",
            "message": "no operation 'listPetz' in the description; did you mean 'listPets', 'listMyPets'?",
            "line": "113",
        },
    ]
    assert result["startMessage"] == (
        "The spec has problems (listed above): fix them and choose the file again."
    )
    assert result["tooBig"] == "huge.yaml is 25,000,001 bytes; the limit is 25,000,000 (25 MB)"
    posts = [r["url"] for r in result["requests"] if r["method"] == "POST"]
    assert posts == [
        f"{dashboard.url}api/validate?name=broken-petstore.yaml&quick=0"
    ]  # not the huge one
    assert result["unlabelled"] == []
    assert_screenshot(result["screenshots"][0])


def test_the_form_says_which_gateways_the_run_leaves_out(dashboard: Serve, tmp_path: Path) -> None:
    """A policy caddy cannot apply leaves it out of the run: the form listed it among the
    targets all the same."""
    limited = tmp_path / "limited-petstore.yaml"
    limited.write_bytes(
        PETSTORE.read_bytes().replace(
            b"  baseline: true\n",
            b"  baseline: true\n  policies: {rate_limit: {requests: 100, window: 1s, key: address}}\n",
        )
    )
    result = scenario("left-out", dashboard, spec=str(limited))
    assert_clean(result, dashboard)
    assert result["targets"] == "Targets: nginx, haproxy, baseline (no gateway)"
    assert result["leftOut"] == [
        "caddy cannot apply the requested policies natively: rate limit per client address "
        "(rate_limit.address)"
    ]
    assert result["unlabelled"] == []


def test_keyboard_only_upload_of_the_petstore_runs_to_done(dashboard: Serve) -> None:
    result = scenario("keyboard-upload", dashboard, spec=str(PETSTORE))
    assert_clean(result, dashboard)
    assert result["tabsToFile"] <= 8  # skip link, header links, then the file input
    assert result["chooserFrom"] == "spec-file"  # Space on the focused input opened it
    assert result["unlabelled"] == []
    assert "Repetitions: 3" in result["summaryBefore"]
    assert "Repetitions: 1 (quick run)" in result["summary"]
    assert result["workloadRows"] == [
        ["list", "GET /v1/pets", "10 concurrent users for 2s"],
        ["show", "GET /v1/pets/{petId}", "100 sequential requests"],
        ["create", "POST /v1/pets", "50 req/s for 2s"],
    ]
    assert result["focusAfterNavigation"] == "page-title"
    statuses = result["statuses"]
    assert statuses[-1] == "done", statuses
    assert "loading" in statuses
    run_id = result["runUrl"].rsplit("/", 1)[1]
    stored = dashboard.run(run_id)
    assert stored["status"] == "done"
    assert stored["quick"] is True

    r = result["results"]
    assert r["statusText"] == "Status: ✓ done"
    assert r["pageOverflow"] == 0  # the latency tables scroll in their own box
    assert r["verdict"].split(" scores highest")[0] in ("nginx", "haproxy", "caddy")
    assert sorted(row[0] for row in r["scoreRows"]) == ["caddy", "haproxy", "nginx"]
    ranks = [int(row[1]) for row in r["scoreRows"]]
    assert ranks[0] == 1
    assert ranks == sorted(ranks)  # best first (equal scores share a rank)
    assert r["charts"] == [
        "chart-scores",
        "chart-workload-scores",
        "chart-throughput",
        "chart-latency",
    ]
    assert r["chartsLabelled"] is True
    assert r["throughputBars"] == 12  # 3 workloads × (3 gateways + baseline)
    assert r["throughputBarsDrawn"] == 12
    assert all(t.endswith(" req/s") for t in r["throughputTexts"])
    assert r["whiskers"] == 0  # a quick run has one repetition: no interval to draw
    assert r["percentileSegments"] >= 12
    assert r["scoreBarsDrawn"] == 3
    assert r["latencyTables"] == 3
    assert r["overheadRows"] == 9
    # what each target cost: every workload × target measured its CPU and memory (the
    # baseline's header carries its "no gateway" tag)
    assert sorted([h.removesuffix("no gateway"), w] for h, w in r["costRows"]) == sorted(
        [t, w]
        for t in ("baseline", "caddy", "haproxy", "nginx")
        for w in ("create", "list", "show")
    )
    assert r["downloads"] == ["HTML report", "JSON report", "CSV report", "MD report"]
    assert result["listed"][0] == {"run": run_id, "status": "✓ done"}
    for shot in result["screenshots"]:
        assert_screenshot(shot)


def test_two_runs_side_by_side(dashboard: Serve) -> None:
    result = scenario("compare", dashboard, run_a=RUN_A, run_b=RUN_B)
    assert_clean(result, dashboard)
    assert_two_seeded_runs_compared(result, RUN_A, RUN_B)
    view = dashboard.api(f"compare?a={RUN_A}&b={RUN_B}")
    rows = view["tables"][0]["rows"]
    by_score_a = [row["header"] for row in sorted(rows, key=lambda row: row["cells"][0]["sort"])]
    assert result["unsortedRows"] == [row["header"] for row in rows]
    assert result["sortedRows"] == by_score_a
    assert_screenshot(result["screenshots"][0])


def test_gcp_mode_uploads_through_a_signed_url(tmp_path: Path) -> None:
    """The GCP configuration (absolute API URLs, signed-URL uploads) against the local
    server's stand-in bucket: the same JavaScript, a different config.json."""
    port = free_port()
    base = f"http://127.0.0.1:{port}/api/"
    config = tmp_path / "gcp-config.json"
    config.write_text(
        json.dumps(
            {
                "format": "gatebench-site/1",
                "mode": "gcp",
                "api": base,
                "upload": {"endpoint": base, "method": "signed-url"},
                "max_bytes": 25_000_000,
                "poll_ms": 500,
            }
        ),
        encoding="utf-8",
    )
    serve = start_serve(
        tmp_path, "--port", str(port), "--upload", "signed-url", "--site-config", str(config)
    )
    try:
        result = scenario("signed-upload", serve, spec=str(PETSTORE))
    finally:
        code, err = serve.stop()
    assert code == 0, err
    assert_clean(result, serve)
    assert "convert API Blueprint to OpenAPI first" in result["hint"]
    assert ".apib" not in result["accept"].split(",")
    assert result["where"] == "Runs on Google Cloud"
    assert "Targets: baseline (no gateway)" in result["summary"]
    calls = [
        (r["method"], r["url"].split("?")[0])
        for r in result["requests"]
        if r["resourceType"] == "fetch"
    ]
    upload = calls.index(("POST", f"{base}uploads"))
    put = next(i for i, c in enumerate(calls) if c[0] == "PUT")
    assert put == upload + 1
    assert calls[put][1].startswith(f"http://127.0.0.1:{port}/bucket/specs/")
    assert calls[put + 1] == ("GET", f"{base}runs")  # found by its spec_uri
    assert result["statuses"][-1] == "done"
    r = result["results"]
    assert r["throughputBars"] == 3  # the baseline on three workloads
    assert r["throughputBarsDrawn"] == 3
    assert r["scoreRows"] == []  # no gateway: nothing to score
    assert_screenshot(result["screenshots"][0])


def test_a_capacity_run_on_the_dashboard(tmp_path: Path) -> None:
    """A stored capacity run (a campaign on the simulated target, so every number is known):
    the runs list says what it is, its page draws the latency-against-rate curves with every
    probe inside the chart, marks each target's knee and the objective, and gives its tables."""
    run_id = "20260103-120000-capacity"
    store_path = tmp_path / "store.sqlite"
    result, targets = seed_capacity_run(str(store_path), run_id)
    serve = start_serve(tmp_path, store=store_path)
    try:
        found = scenario("capacity", serve, run_a=run_id)
    finally:
        code, err = serve.stop()
    assert code == 0, err
    assert_clean(found, serve)
    assert_capacity_run_shown(found, result, targets)


def test_a_change_run_on_the_dashboard_shows_its_report_in_its_frame(tmp_path: Path) -> None:
    """A stored change-under-load run: its page frames the run's own report, and the browser
    shows it (the page's policy allows the frame, the report's allows this server to frame it:
    nothing refused, nothing logged), the report's script sandboxed."""
    from gatebench.core.model import RunKind, RunRecord, RunStatus
    from gatebench.kinds._live._report import CHANGE_KIND
    from gatebench.store import open_store
    from synthetic import synthetic_change

    run_id = "20260104-120000-change"
    store_path = tmp_path / "store.sqlite"
    with open_store(str(store_path)) as store:
        store.create_run(
            RunRecord(
                run_id=run_id,
                spec_uri="file:///petstore.yaml",
                spec_sha256="0" * 64,
                title="Petstore",
                gateways=["haproxy", "nginx"],
                kind=RunKind.CHANGE,
                status=RunStatus.DONE,
            )
        )
        for gateway in ("haproxy", "nginx"):
            change = synthetic_change(
                gateway,
                arrivals=400,
                failed=(250,),
                change_ms=3000.0,
                new_routes_s={"a": 0.1, "b": 0.2},
                mechanism="a reload",
            )
            store.put_result(run_id, CHANGE_KIND, gateway, change.to_dict())
    serve = start_serve(tmp_path, store=store_path)
    try:
        found = scenario("change", serve, run_a=run_id)
    finally:
        code, err = serve.stop()
    assert code == 0, err
    assert_clean(found, serve)
    assert found["sandbox"] == "allow-scripts"
    assert found["frameVerdict"].startswith(
        "In the 1 s after the change, haproxy failed 1 request and nginx failed 1 request."
    )
    assert found["frameCircles"] > 20  # a point per 100 ms bucket per gateway
    assert found["frameTables"] == [2]
    assert_screenshot(found["screenshots"][0])
