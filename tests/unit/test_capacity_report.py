"""The capacity run's report: HTML (self-contained, curves with the knee marked), Markdown,
JSON, and CSV rows that load into the BigQuery schema unchanged. Built from a campaign on the
simulated target (tests/capacity_sim.py), so every number is known."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from capacity_sim import SimulatedTarget
from gatebench.core.model import RunKind, RunRecord, RunStatus
from gatebench.core.plan import Capacity
from gatebench.core.report import bigquery_schema, column_names
from gatebench.kinds.capacity import Campaign, CapacityResult, capacity_result, search
from gatebench.kinds.capacity._report import build_capacity_report, capacity_rows, render_capacity

SETTINGS = replace(Capacity(), repetitions=3)


@pytest.fixture(scope="module")
def result() -> CapacityResult:
    targets = {
        "haproxy": SimulatedTarget(workers=11, service_ms=10.0, jitter=0.1),
        "envoy": SimulatedTarget(workers=8, service_ms=10.0, jitter=0.1),
        "baseline": SimulatedTarget(workers=16, service_ms=10.0, jitter=0.1),
    }
    campaign = Campaign(tuple(targets), {"bid": SETTINGS}, 5, budget_s=3600.0)
    while keys := campaign.next_round():
        for key in keys:
            target = targets[key.target]
            target.seed = key.repetition
            campaign.record(key, search(SETTINGS, target, start_rate=campaign.start_rate(key)))
        campaign.end_round()
    return capacity_result(campaign, machine="n2-standard-2", hourly_usd=0.0971)


def run_record() -> RunRecord:
    return RunRecord(
        run_id="r-capacity",
        spec_uri="auction.yaml",
        spec_sha256="a" * 64,
        status=RunStatus.DONE,
        created_at=1_700_000_000.0,
        title="Auction <service>",
        kind=RunKind.CAPACITY,
    )


def test_the_html_report_is_self_contained_and_marks_each_knee(result: CapacityResult) -> None:
    report = build_capacity_report(run_record(), result, now=1_700_000_100.0)
    html = render_capacity(report, "html")
    assert "default-src 'none'" in html
    assert "Auction &lt;service&gt;" in html and "<service>" not in html
    # fetches nothing: the only URL is the SVG namespace's name
    assert set(re.findall(r"https?://[^\"'\s<]+", html)) == {"http://www.w3.org/2000/svg"}
    (bid,) = result.endpoints
    assert (
        bid.verdict.startswith("haproxy carries ")
        and " more bid traffic than envoy " in bid.verdict
    )
    assert html.count(bid.verdict) == 2  # the headline and the endpoint's section
    knees = re.findall(r'class="knee"[^>]*data-knee="([0-9.]+)"', html)
    assert sorted(float(k) for k in knees) == sorted(
        s.estimate for s in bid.summaries if s.estimate is not None
    )
    dots = re.findall(r'<circle class="p99"[^>]*data-rate="([0-9.]+)"', html)
    assert len(dots) == len(result.curves)
    assert "p99 ≤ 50 ms" in html  # the objective's line
    assert "every pair" in html and "n2-standard-2 at $0.0971 an hour" in html


def test_markdown_and_json(result: CapacityResult) -> None:
    report = build_capacity_report(run_record(), result, now=1_700_000_100.0)
    md = render_capacity(report, "md")
    assert md.startswith("# Capacity: Auction <service>\n")
    assert "| haproxy | " in md and "| envoy | " in md and "| baseline | " in md
    data = json.loads(render_capacity(report, "json"))
    assert data["kind"] == "capacity" and data["verdict"] == [result.endpoints[0].verdict]
    assert CapacityResult.from_dict(data["capacity"]) == result


def test_the_csv_loads_into_the_bigquery_schema(result: CapacityResult) -> None:
    report = build_capacity_report(run_record(), result, now=1_700_000_100.0)
    text = render_capacity(report, "csv")
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    assert tuple(header) == column_names()
    schema = {f["name"]: f for f in bigquery_schema()}
    for row in reader:
        for name, cell in zip(header, row, strict=True):
            if schema[name]["mode"] == "REQUIRED":
                assert cell != "", name
    rows = capacity_rows(report)
    assert all(set(r) == set(column_names()) for r in rows)
    means = {
        r["target"]: r["value"]
        for r in rows
        if (r["metric"], r["statistic"]) == ("capacity", "mean")
    }
    (bid,) = result.endpoints
    assert means == {s.target: s.mean for s in bid.summaries}
    probes = [r for r in rows if r["statistic"] == "probe" and r["metric"] == "p99"]
    assert len(probes) == len(result.curves)
    assert all(r["offered_rate"] is not None and r["repetition"] for r in probes)
    prices = [r for r in rows if r["metric"] == "capacity_price_per_million"]
    assert {r["target"] for r in prices} == {"haproxy", "envoy"} and {
        r["unit"] for r in prices
    } == {"USD"}


def test_thresholds_gate_on_capacity(result: CapacityResult) -> None:
    from gatebench.core.thresholds import Threshold, evaluate, fmt
    from gatebench.kinds.capacity import evaluate_capacity

    (bid,) = result.endpoints
    haproxy, envoy = bid.summary("haproxy"), bid.summary("envoy")
    assert haproxy is not None and envoy is not None and envoy.mean is not None
    floor = Threshold("capacity", min=envoy.mean + 1, pointer="/x-gatebench/thresholds/0")
    other = Threshold("p99", max=50.0)
    results = evaluate_capacity([floor, other], result)
    assert [(r.target, r.workload, r.passed) for r in results] == [
        ("envoy", "bid", False),
        ("haproxy", "bid", True),
    ]
    assert results[0].line() == (
        f"envoy/bid: capacity {fmt(envoy.mean, 'req/s')} is below the minimum "
        f"{fmt(envoy.mean + 1, 'req/s')} (/x-gatebench/thresholds/0)"
    )
    missing = evaluate_capacity([Threshold("capacity", min=1.0, gateway="kong")], result)
    assert [(r.value, r.passed) for r in missing] == [(None, False)]
    # a fixed-workload run leaves capacity thresholds to a capacity run
    from gatebench.core.aggregate import summarize

    assert evaluate([floor], summarize([])) == []


def test_gatebench_report_writes_a_stored_capacity_run(
    result: CapacityResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from gatebench.cli import main
    from gatebench.store import SqliteStore

    run = run_record()
    run.plan = {"thresholds": [{"metric": "capacity", "min": 1.0, "gateway": "envoy"}]}
    store = tmp_path / "store.sqlite"
    with SqliteStore(store) as s:
        s.create_run(run)
        s.put_result(run.run_id, "capacity", "result", result.to_dict())
    assert main(["report", run.run_id, "--store", str(store), "-f", "md"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# Capacity: Auction <service>") and "envoy/bid: capacity" in md
    assert main(["report", run.run_id, "--store", str(store), "-f", "junit"]) == 0
    junit = capsys.readouterr().out
    assert 'name="capacity &gt;= 1 req/s (every workload)"' in junit and 'failures="0"' in junit
    out = tmp_path / "r.html"
    assert main(["report", "latest", "--store", str(store), "-o", str(out)]) == 0
    assert "gatebench capacity report" in out.read_text(encoding="utf-8")


def test_the_dashboard_reads_a_capacity_run(result: CapacityResult, tmp_path: Path) -> None:
    from gatebench.store import SqliteStore
    from webapp import read_client

    run = run_record()
    with SqliteStore(tmp_path / "store.sqlite") as store:
        store.create_run(run)
        store.put_result(run.run_id, "capacity", "result", result.to_dict())
        client = read_client(store)
        view = json.loads(client.get(f"/runs/{run.run_id}/view").data)
        html = client.get(f"/runs/{run.run_id}/report?format=html")
        compare = client.get(f"/compare?a={run.run_id}&b={run.run_id}")
        listed = json.loads(client.get("/runs").data)
    assert view["kind"] == "capacity" and view["run"]["kind"] == "capacity"
    assert view["verdict"] == [result.endpoints[0].verdict]
    (curves,) = [c for c in view["charts"] if c["kind"] == "curves"]
    assert curves["objective_ms"] == 50.0 and curves["objective_text"] == "p99 ≤ 50 ms"
    assert sum(len(s["points"]) for s in curves["series"]) == len(result.curves)
    assert [t["id"] for t in view["tables"]] == ["capacity-0", "capacity-pairs-0"]
    assert html.status_code == 200 and b"gatebench capacity report" in html.data
    assert compare.status_code == 400 and b"is a capacity search run" in compare.data
    assert listed["runs"][0]["kind"] == "capacity"


def test_a_capacity_run_still_searching_is_shown_as_one(tmp_path: Path) -> None:
    """Before its result, a capacity run's record says what it is (``RunRecord.kind``):
    the dashboard and the report show a capacity run with no result yet, not an empty
    fixed-workload run."""
    from gatebench.store import SqliteStore
    from webapp import read_client

    run = replace(run_record(), status=RunStatus.LOADING)
    with SqliteStore(tmp_path / "store.sqlite") as store:
        store.create_run(run)
        client = read_client(store)
        view = json.loads(client.get(f"/runs/{run.run_id}/view").data)
        md = client.get(f"/runs/{run.run_id}/report?format=md")
    assert view["kind"] == "capacity" and view["run"]["kind"] == "capacity"
    assert view["tables"] == [] and view["verdict"] == []
    assert md.status_code == 200 and "no result: the run is still searching" in md.data.decode()


def _endpoint_of(summaries: list[object]) -> object:
    from gatebench.kinds.capacity import EndpointResult, compare

    ss = tuple(summaries)
    comparisons = tuple(compare(a, b) for i, a in enumerate(ss) for b in ss[i + 1 :])  # type: ignore[arg-type]
    return EndpointResult("bid", "p99 ≤ 50 ms, errors ≤ 0.1 %", ss, comparisons, "v", "stop")  # type: ignore[arg-type]


def test_only_a_decided_knee_is_marked_best_and_the_reasons_sit_under_the_table() -> None:
    from gatebench.kinds.capacity import SearchResult, summarize
    from gatebench.kinds.capacity._report import best_gateway, knee_notes, knee_table

    note = "3,200/s held, just under the share of the engine's ceiling at which the tester is the limit"
    bounded = [SearchResult("tester-bound", 3200.0, None, (), note)] * 3
    nginx, haproxy = summarize("nginx", "bid", bounded), summarize("haproxy", "bid", bounded)
    endpoint = _endpoint_of([nginx, haproxy])
    # two lower bounds, their order undecided: neither is best
    assert best_gateway(endpoint) is None  # type: ignore[arg-type]
    table = knee_table(endpoint)  # type: ignore[arg-type]
    assert not any(c.best for r in table.rows for c in r.cells)
    assert [c.label for c in table.columns][-1] == "probes"  # no notes column
    assert knee_notes(endpoint) == [("nginx", note), ("haproxy", note)]  # type: ignore[arg-type]
    assert f"nginx: {note}." in table.legend
    # a knee decided above every other gateway is best; the baseline never competes
    found = [SearchResult("found", k, k * 1.04, ()) for k in (1000.0, 1020.0, 990.0)]
    slow = [SearchResult("found", k, k * 1.04, ()) for k in (500.0, 510.0, 495.0)]
    base = [SearchResult("found", k, k * 1.04, ()) for k in (5000.0, 5100.0, 4950.0)]
    decided = _endpoint_of(
        [
            summarize("envoy", "bid", found),
            summarize("caddy", "bid", slow),
            summarize("baseline", "bid", base),
        ]
    )
    assert best_gateway(decided) == "envoy"  # type: ignore[arg-type]
    marked = [r.header for r in knee_table(decided).rows if r.cells[0].best]  # type: ignore[arg-type]
    assert marked == ["envoy"]


def test_why_the_searches_stopped_is_said_once() -> None:
    """A one-repetition campaign ends with every order undecided: that is a caution, and the
    text and Markdown do not say it a second time at their end."""
    from gatebench.kinds.capacity._report import capacity_text

    one = replace(SETTINGS, repetitions=1)
    targets = {
        "nginx": SimulatedTarget(workers=11, service_ms=10.0, jitter=0.1),
        "haproxy": SimulatedTarget(workers=8, service_ms=10.0, jitter=0.1),
    }
    campaign = Campaign(tuple(targets), {"bid": one}, 1, budget_s=3600.0)
    for key in campaign.next_round():
        campaign.record(key, search(one, targets[key.target]))
    campaign.end_round()
    report = build_capacity_report(run_record(), capacity_result(campaign), now=1_700_000_100.0)
    stopped = f"The searches stopped: {report.result.stop}."
    assert "undecided: nginx–haproxy" in stopped and stopped in report.cautions
    text = "\n".join(capacity_text(report))
    assert text.count("The searches stopped") == 1 and f"Caution: {stopped}" in text
    assert render_capacity(report, "md").count("The searches stopped") == 1
    (bid,) = report.result.endpoints
    assert "not decided" in bid.verdict and "within the noise" not in bid.verdict
    # a run whose every order was decided says why it stopped at its end, with no caution
    decided = replace(report, cautions=())
    assert capacity_text(decided)[-1] == stopped


def test_a_narrow_interval_keeps_its_ends_apart() -> None:
    """The simulated campaign's 41.0–41.4 % read "41–41 %", as if there were no uncertainty:
    the interval takes the decimals (up to two) that keep its ends apart."""
    from gatebench.kinds.capacity._summary import Comparison

    def interval(low: float, high: float) -> str | None:
        return Comparison("bid", "a", "b", (low + high) / 2, low, high, decided=True).interval()

    assert interval(1.29, 1.47) == "29–47 %"
    assert interval(1.4101, 1.4139) == "41.0–41.4 %"
    assert interval(1.41001, 1.41004) == "41.00–41.00 %"  # two decimals at most
    assert Comparison("bid", "a", "b", 1.4).interval() is None
