"""The cloud side of the dashboard, pure parts: the parse and render steps apply the run
request an upload carries in its ``gatebench`` metadata (and locate a broken one), and the
dashboard functions' settings are checked. The functions themselves, over real HTTP against
the emulators: tests/integration/test_dashboard_functions.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gatebench.cloud import ObjectRef, RequestError, parse_upload, plain_value
from gatebench.cloud._render import render_run
from gatebench.web import DashboardSettingError, cloud_origins, results_store, signed_uploads

ROOT = Path(__file__).resolve().parents[2]
AUCTION = (ROOT / "examples" / "auction" / "openapi.yaml").read_bytes()
REF = ObjectRef("gb-uploads", "specs/20260101-120000-1a2b3c4d-auction.yaml", "7")
SETTINGS: dict[str, Any] = {"project": "proj", "prefix": "gb", "zone": "europe-central2-a"}


def test_parse_applies_the_uploads_run_request_to_the_plan() -> None:
    metadata = {"gatebench": '{"gateways":["nginx","caddy"],"quick":true}'}
    outcome = parse_upload(AUCTION, REF, now=0.0, metadata=metadata)
    assert outcome.ok, outcome.message
    run = outcome.run
    assert run.gateways == ["nginx", "caddy"]  # the plan's order, not the request's
    assert run.plan is not None
    assert run.plan["gateways"] == ["nginx", "caddy"]
    assert run.plan["repetitions"] == 1  # the quick profile
    # recorded as a local run records it: the report's cost estimate runs no engine warm-up
    assert run.environment["quick"] is True
    from gatebench.core.cost import estimate_cost
    from gatebench.core.report._build import cloud_cost

    cost = cloud_cost(dataclasses.replace(run, execution_id="e"))
    assert cost is not None and cost.load_s == estimate_cost(run.plan, quick=True).load_s
    assert cost.load_s < estimate_cost(run.plan).load_s
    document = plain_value({"mapValue": outcome.response()["document"]})
    assert document["gateways"] == ["nginx", "caddy"]
    # Without metadata (a `gcloud storage cp`), or other metadata only: the plan as written.
    for plain in (None, {}, {"owner": "someone"}):
        as_written = parse_upload(AUCTION, REF, now=0.0, metadata=plain).run
        assert as_written.gateways == ["nginx", "haproxy", "caddy", "envoy", "apache", "traefik"]
        assert as_written.plan is not None and as_written.plan["repetitions"] == 10


def test_parse_locates_a_broken_run_request_and_keeps_the_run_id() -> None:
    cases = {
        "{quick": [
            (
                "",
                "metadata x-goog-meta-gatebench: not JSON (Expecting property name enclosed "
                "in double quotes: line 1 column 2 (char 1))",
            )
        ],
        '{"quick": "yes", "gateways": "nginx"}': [
            ("/quick", "expected true or false, got 'yes'"),
            ("/gateways", "expected a list of names, got 'nginx'"),
        ],
        '{"gateways": ["kongg"]}': [
            (
                "/gateways",
                "gateways: 'kongg' is not in the plan; choose among nginx, haproxy, caddy, "
                "envoy, apache, traefik",
            )
        ],
    }
    for value, expected in cases.items():
        outcome = parse_upload(AUCTION, REF, now=0.0, metadata={"gatebench": value})
        assert not outcome.ok, value
        response = outcome.response()
        assert response["run_id"] == REF.run_id
        assert [(e["pointer"], e["message"]) for e in response["errors"]] == expected
        assert {e["source"] for e in response["errors"]} == {"x-goog-meta-gatebench"}
    outcome = parse_upload(AUCTION, REF, now=0.0, metadata={"gatebench": '{"quick": 1}'})
    assert outcome.message == (
        "x-goog-meta-gatebench: error: /quick: expected true or false, got 1"
    )


def test_parse_reports_a_broken_request_and_a_broken_spec_together() -> None:
    broken = AUCTION.replace(b"repetitions: 10 ", b"repetiton: 10 ")
    outcome = parse_upload(broken, REF, now=0.0, metadata={"gatebench": '{"quick": 1}'})
    assert [(e["pointer"], e.get("source")) for e in outcome.response()["errors"]] == [
        ("/quick", "x-goog-meta-gatebench"),
        ("/x-gatebench/repetiton", "20260101-120000-1a2b3c4d-auction.yaml"),
    ]


def test_parse_refuses_a_request_that_leaves_nothing_to_measure() -> None:
    no_baseline = AUCTION.replace(b"baseline: true", b"baseline: false")
    assert no_baseline != AUCTION
    outcome = parse_upload(no_baseline, REF, now=0.0, metadata={"gatebench": '{"gateways":[]}'})
    assert [(e["pointer"], e["message"]) for e in outcome.response()["errors"]] == [
        ("/gateways", "choose at least one gateway: this plan has no baseline")
    ]


def test_render_applies_the_same_run_request() -> None:
    metadata = {"gatebench": '{"gateways":["haproxy"],"quick":true}'}
    rendered = render_run(AUCTION, REF, SETTINGS, "gb-runs", metadata)
    assert sorted(rendered.configs) == ["haproxy"]
    assert sorted(rendered.fleet["gateways"]) == ["haproxy"]
    full = render_run(AUCTION, REF, SETTINGS, "gb-runs")
    assert sorted(full.configs) == ["apache", "caddy", "envoy", "haproxy", "nginx", "traefik"]
    # The quick profile: fewer phases' worth of requests (one repetition instead of ten).
    assert len(rendered.workload["phases"]) < len(full.workload["phases"])
    with pytest.raises(RequestError) as bad:
        render_run(AUCTION, REF, SETTINGS, "gb-runs", {"gatebench": '{"gateways":["tyk"]}'})
    assert [p.format() for p in bad.value.problems] == [
        "x-goog-meta-gatebench: error: /gateways: gateways: 'tyk' is not in the plan; "
        "choose among nginx, haproxy, caddy, envoy, apache, traefik"
    ]


def test_dashboard_settings_are_checked() -> None:
    origins = cloud_origins({"GATEBENCH_ORIGINS": " https://storage.cloud.google.com,"})
    assert origins == ("https://storage.cloud.google.com",)
    assert cloud_origins({}) == ()
    for bad in ("*", "https://site.example/path", "site.example"):
        with pytest.raises(DashboardSettingError) as error:
            cloud_origins({"GATEBENCH_ORIGINS": bad})
        assert str(error.value) == (
            f"GATEBENCH_ORIGINS: {bad!r} is not an origin (http(s)://HOST[:PORT], no path, "
            "never '*')"
        )
    store = results_store({"GATEBENCH_PROJECT": "proj", "GATEBENCH_FIRESTORE_DATABASE": "gb-r"})
    assert (store.project, store.database) == ("proj", "gb-r")
    with pytest.raises(DashboardSettingError) as missing:
        results_store({})
    assert str(missing.value) == "GATEBENCH_PROJECT is not set; infra/modules/dashboard sets it"
    uploads = signed_uploads({"GATEBENCH_UPLOADS_BUCKET": "gb-up", "GATEBENCH_SPEC_PREFIX": "in/"})
    assert (uploads.signer.bucket_uri, uploads.prefix) == ("gs://gb-up", "in/")
    with pytest.raises(DashboardSettingError) as prefix:
        signed_uploads({"GATEBENCH_UPLOADS_BUCKET": "gb-up", "GATEBENCH_SPEC_PREFIX": "../x"})
    assert str(prefix.value) == (
        "GATEBENCH_SPEC_PREFIX: expected lowercase letters, digits, _ and - ending with '/', "
        "got '../x'"
    )


def test_the_cloud_steps_read_the_entry_an_upload_names_in_a_zip_of_two() -> None:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("first.yaml", AUCTION)
        zf.writestr("second.yaml", AUCTION.replace(b"gateways: [", b"gateways: [kong, "))
    zipped = buf.getvalue()
    ref = ObjectRef("gb-uploads", "specs/20260101-120000-1a2b3c4d-specs.zip", "7")
    without = parse_upload(zipped, ref, now=0.0)
    assert [e["message"] for e in without.response()["errors"]] == [
        "several API descriptions in the bundle (first.yaml, second.yaml); name one with "
        "--entry (an upload: the 'entry' parameter)"
    ]
    metadata = {"gatebench": '{"entry":"second.yaml","quick":true}'}
    chosen = parse_upload(zipped, ref, now=0.0, metadata=metadata)
    assert chosen.ok, chosen.message
    assert chosen.run.gateways[0] == "kong"
    rendered = render_run(zipped, ref, SETTINGS, "gb-runs", metadata)
    assert "kong" in rendered.configs
    bad = parse_upload(zipped, ref, now=0.0, metadata={"gatebench": '{"entry": 7}'})
    assert next((e["pointer"], e["message"]) for e in bad.response()["errors"]) == (
        "/entry",
        "expected the name of a file inside the zip, got 7",
    )
