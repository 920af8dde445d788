"""The cost of a cloud run (gatebench.core.cost): every figure recomputed here by hand from the
price table (gatebench/core/gcp_prices.json) for one plan, the table's provenance, the refusal of a
machine type without a price, `gatebench plan` printing it for a cloud plan only, and the
report of a cloud run showing it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from gatebench.cli import main
from gatebench.core.cost import (
    CostError,
    describe_cost,
    describe_vm_limits,
    estimate_cost,
    machine_hourly,
    machine_roles,
    price_table,
    run_estimate,
)
from gatebench.core.model import Measurement, RunRecord, RunStatus
from gatebench.core.report import build_report, render_html, render_markdown

ROOT = Path(__file__).resolve().parents[2]
AUCTION = ROOT / "examples" / "auction" / "openapi.yaml"

PLAN = {
    "gateways": ["nginx", "kong"],
    "baseline": True,
    "repetitions": 3,
    "warmup": {"duration": 6.0, "requests": None},
    "backend": {"kind": "mock"},
    "workloads": [
        {"name": "bid", "injection": {"kind": "concurrent", "users": 10, "duration": 30.0}},
        {"name": "get", "injection": {"kind": "sequential", "requests": 200}},
    ],
    "infrastructure": {
        "gateway_machine": "e2-standard-4",
        "tester_machine": "n2-standard-2",
        "backend_machine": "n2-standard-2",
    },
}


def test_the_price_table_cites_its_sources_and_date() -> None:
    table = json.loads(resources.files("gatebench.core").joinpath("gcp_prices.json").read_text())
    assert table == price_table()
    assert table["as_of"] == "2026-11-23"
    assert table["region"] == "us-central1"
    assert set(table["sources"]) == {
        "compute",
        "disk",
        "cloud_build",
        "functions",
        "workflows",
        "storage",
        "machine_types",
    }
    assert "'VM instance pricing'" in table["sources"]["compute"]
    assert "'Cloud Build pricing'" in table["sources"]["cloud_build"]
    assert "'Workflows pricing'" in table["sources"]["workflows"]
    # The per-resource rates reproduce the published per-machine prices.
    assert machine_hourly("n2-standard-2") == pytest.approx(0.097118)  # 2 × 0.031611 + 8 × 0.004237
    assert machine_hourly("e2-standard-4") == pytest.approx(
        0.134012
    )  # 4 × 0.021811 + 16 × 0.002923
    assert machine_hourly("n2-highcpu-8") == pytest.approx(8 * 0.031611 + 8 * 0.004237)


def test_every_figure_of_one_plan() -> None:
    estimate = estimate_cost(PLAN)
    # Per target and repetition: warm-up 6 s + 2 phases × 2 s overhead = 10 s; the concurrent
    # phase 30 s + 2 s; 200 sequential requests × 0.01 s + 2 s = 4 s: 46 s. 3 targets × 3
    # repetitions × 46 s + 15 s engine start + the engine's own warm-up (20 s + 2 phases × 2 s
    # overhead) = 453 s of load.
    assert estimate.load_s == pytest.approx(453.0)
    # A quick run has no engine warm-up (core.workload.engine_warmup): 453 − 24 s.
    assert estimate_cost(PLAN, quick=True).load_s == pytest.approx(429.0)
    assert run_estimate(PLAN, quick=True).load_s == pytest.approx(429.0)
    # Each VM: 240 s provision + 453 s + 90 s teardown.
    assert estimate.vm_s == pytest.approx(783.0)
    assert estimate.vms == 4
    lines = {line.item: line for line in estimate.lines}
    expected = {
        # 2 gateways × 783 s = 26.1 VM-minutes at 0.134012 $/h
        "Compute Engine 2 × e2-standard-4": (26.1, 0.134012 / 60),
        # backend + tester
        "Compute Engine 2 × n2-standard-2": (26.1, 0.097118 / 60),
        # 4 × 10 GiB (the tester's too: test_the_vms_limits_come_from_the_estimate) for 783 s
        # of a 730-hour month
        "boot disks 4 × 10 GiB": (4 * 10 * 783 / (730 * 3600), 0.04),
        # 240 + 453 + 90 s of builds
        "Cloud Build (provision, load, teardown)": (13.05, 0.006),
        # parse, render, score + ingest (12 + 2 × 2 objects)
        "Cloud Run functions invocations": (19, 0.4 / 1e6),
        # 2×0.333 + 3×0.333 + 10×0.583 + 16 × 2×0.583
        "Cloud Run functions CPU": (26.151, 0.000024),
        # 2×0.5 + 3×0.5 + 10×1 + 16 × 2×1
        "Cloud Run functions memory": (44.5, 0.0000025),
        # 80 + polls: 240 s → 7 (10, 15, 22.5, 33.75, 50.625, 60, 60), 453 s → 11, 90 s → 5
        "Workflows steps (polling included)": (103, 0.01 / 1000),
        # (10 users × 30 s / 0.01 s + 200) × 9 phases × 25 bytes, 30 days of a 730-hour month
        "raw logs kept 30 days": (271800 * 25 / 2**30 * 30 * 24 / 730, 0.02),
        "Cloud Storage writes": (16, 0.005 / 1000),
        "Cloud Storage reads": (16, 0.0004 / 1000),
    }
    assert set(lines) == set(expected)
    for item, (quantity, price) in expected.items():
        assert lines[item].quantity == pytest.approx(quantity, rel=1e-12), item
        assert lines[item].unit_price == pytest.approx(price, rel=1e-12), item
    total = sum(q * p for q, p in expected.values())
    assert estimate.total_usd == pytest.approx(total, rel=1e-12)
    assert round(estimate.total_usd, 4) == 0.1813
    text = describe_cost(estimate)
    assert text[0] == (
        "Estimated cost of one run on Google Cloud: $0.18 (us-central1 list prices read "
        "2026-11-23, no free tier or discount)"
    )
    assert text[1] == (
        "  4 VMs for 13.1 min each; load build 7.5 min (assumptions and sources: "
        "gatebench/core/gcp_prices.json)"
    )
    assert any(
        line.startswith("  Compute Engine 2 × e2-standard-4")
        and line.endswith("× $0.0022335333 = $0.0583")
        for line in text
    ), text


def test_a_backend_url_has_no_backend_vm_and_defaults_are_n2_standard_2() -> None:
    plan = {**PLAN, "backend": {"kind": "url"}, "infrastructure": None}
    estimate = estimate_cost(plan)
    assert estimate.vms == 3
    assert [line.item for line in estimate.lines][:1] == ["Compute Engine 3 × n2-standard-2"]


def test_a_machine_type_without_a_price_is_refused_by_name() -> None:
    plan = {**PLAN, "infrastructure": {"gateway_machine": "c3-standard-4"}}
    with pytest.raises(CostError) as info:
        estimate_cost(plan)
    assert str(info.value) == (
        "no list price for machine type 'c3-standard-4'; priced: e2-highcpu-N, e2-highmem-N, "
        "e2-standard-N, n2-highcpu-N, n2-highmem-N, n2-standard-N"
    )


def test_a_machine_type_the_family_does_not_have_is_refused_by_name() -> None:
    plan = {**PLAN, "infrastructure": {"tester_machine": "n2-standard-3"}}
    with pytest.raises(CostError) as info:
        estimate_cost(plan)
    assert str(info.value) == (
        "no machine type 'n2-standard-3': n2-standard-N exists for N in 2, 4, 8, 16, 32, 48, "
        "64, 80, 96, 128"
    )
    assert machine_hourly("e2-highmem-16") == pytest.approx(16 * 0.021811 + 128 * 0.002923)
    with pytest.raises(CostError):
        machine_hourly("e2-highmem-32")


def test_every_tester_vm_is_counted() -> None:
    one = estimate_cost(PLAN)
    four = estimate_cost({**PLAN, "infrastructure": {**PLAN["infrastructure"], "testers": 4}})
    assert four.vms == one.vms + 3
    lines = {line.item: line for line in four.lines}
    # backend + 4 testers at n2-standard-2
    assert lines["Compute Engine 5 × n2-standard-2"].quantity == pytest.approx(5 * one.vm_s / 60)
    assert [r for r, _ in machine_roles(four_plan())].count("tester_machine") == 4


def four_plan() -> dict[str, Any]:
    return {**PLAN, "infrastructure": {**PLAN["infrastructure"], "testers": 4}}


def test_a_capacity_run_is_estimated_for_its_whole_time_budget() -> None:
    plan = {**PLAN, "capacity": {"default": {"budget": 3600.0}}}
    estimate = run_estimate(plan, kind="capacity")
    assert estimate.load_s == 3600.0
    assert estimate.vm_s == pytest.approx(240 + 3600 + 90)
    assert run_estimate(plan).load_s == estimate_cost(plan).load_s == pytest.approx(453.0)


def test_gatebench_plan_prints_the_cost_of_a_cloud_plan_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gatebench.core.plan import load_plan
    from gatebench.core.spec import read_spec

    assert main(["plan", str(AUCTION)]) == 0
    out = capsys.readouterr().out
    plan = load_plan(read_spec(AUCTION.read_bytes(), name="openapi.yaml"))
    assert plan.infrastructure is not None
    expected = describe_cost(estimate_cost(plan.to_dict()))
    limits = describe_vm_limits(plan.to_dict())
    assert out.endswith("\n".join([*expected, limits]) + "\n")
    assert limits.startswith("VMs delete themselves after ")
    import yaml

    document = yaml.safe_load(AUCTION.read_text())
    del document["x-gatebench"]["infrastructure"]
    local = tmp_path / "local.yaml"
    local.write_text(yaml.safe_dump(document))
    assert main(["plan", str(local)]) == 0
    out = capsys.readouterr().out
    assert "Estimated cost" not in out and "VMs delete themselves" not in out


def test_the_report_of_a_cloud_run_shows_its_cost() -> None:
    run = RunRecord(
        run_id="r-0123456789abcdef0123",
        spec_uri="gs://u/specs/a.yaml",
        spec_sha256="0" * 64,
        status=RunStatus.DONE,
        gateways=["nginx", "kong"],
        workloads=[{"name": "bid"}, {"name": "get"}],
        plan=PLAN,
        execution_id="projects/p/locations/r/workflows/w/executions/e",
    )
    measurements: list[Measurement] = []
    report = build_report(run, measurements, now=0.0)
    assert report.cost == estimate_cost(PLAN)
    assert report.to_dict()["cost"]["total_usd"] == pytest.approx(estimate_cost(PLAN).total_usd)
    markdown = render_markdown(report)
    assert "## Estimated cost" in markdown
    assert describe_cost(estimate_cost(PLAN))[0] in markdown
    html = render_html(report)
    assert 'id="cost"' in html and "Estimated cost of one run on Google Cloud: $0.18" in html
    # A local run: no estimate, and the report's dictionary is as before.
    local = build_report(
        RunRecord(run.run_id, run.spec_uri, run.spec_sha256, plan=PLAN), measurements, now=0.0
    )
    assert local.cost is None and "cost" not in local.to_dict()
    assert "Estimated cost" not in render_markdown(local)


def test_the_vms_limits_come_from_the_estimate() -> None:
    """A run's VMs delete themselves after the estimated lifetime × 2 + 30 min (whole minutes),
    not a 12-hour default; the tester's disk holds the raw log's bound twice over the
    system's 4 GiB (a profile bounded by time: at 50,000 requests/s), at least 10 GiB."""
    from gatebench.core.cost import (
        describe_vm_limits,
        disk_gib_per_tester,
        raw_log_bytes_bound,
        vm_max_run_s,
    )

    # 783 s × 2 + 1800 s = 3366 s → 57 whole minutes
    assert vm_max_run_s(PLAN) == 57 * 60
    # per target: 3 repetitions × (30 s × 50,000 + 200) + a 6-s warm-up × 50,000; 3 targets
    assert raw_log_bytes_bound(PLAN) == 3 * (3 * (30 * 50_000 + 200) + 6 * 50_000) * 25
    assert disk_gib_per_tester(PLAN) == 10  # 4 + 2 × 0.335 GiB: the minimum
    long = {
        **PLAN,
        "workloads": [
            {"name": "bid", "injection": {"kind": "concurrent", "users": 10, "duration": 3600.0}}
        ],
    }
    # 3 × 3 × 3600 s × 50,000 requests/s + 3 × 6 s × 50,000, × 25 bytes: 37.74 GiB
    assert disk_gib_per_tester(long) == 4 + 76
    assert describe_vm_limits(PLAN) == (
        "VMs delete themselves after 57 min at most (estimated 13.1 min × 2 + 30 min; the "
        "deployment's limits.vm_lifetime caps it); tester boot disk 10 GiB"
    )


def test_a_stored_plan_counts_the_baseline_once_and_as_no_gateway() -> None:
    from gatebench.core.model import plan_targets

    # A plan written by hand (or an old record) may list the baseline among its gateways.
    listed = {**PLAN, "gateways": ["nginx", "baseline", "kong"]}
    assert plan_targets(listed) == ["nginx", "kong", "baseline"]
    assert plan_targets({**listed, "baseline": False}) == ["nginx", "kong"]
    assert estimate_cost(listed).vms == estimate_cost(PLAN).vms
    assert estimate_cost(listed).total_usd == estimate_cost(PLAN).total_usd
