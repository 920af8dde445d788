"""The HTML report in a real browser: Debian's Chromium driven by playwright-core
(tools/node/check-page.cjs). No console errors, not one network request, charts drawn
with data, sortable tables that sort; a screenshot is kept in tests/artifacts/."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gatebench.core.report import build_report, render_html
from paths import ROOT
from synthetic import synthetic_run

NODE_TOOLS = ROOT / "tools" / "node"
CHECK_PAGE = NODE_TOOLS / "check-page.cjs"
ARTIFACTS = ROOT / "tests" / "artifacts"

PROBE = """
(() => {
  const bars = Array.from(document.querySelectorAll("svg.chart rect.bar"));
  const table = document.querySelector("#scores table.sortable");
  const names = () => Array.from(table.tBodies[0].rows).map((r) => r.cells[0].textContent.trim());
  const before = names();
  const head = table.tHead.rows[0].cells[2];
  head.querySelector("button").click();
  const afterOneClick = names();
  const sortState = head.getAttribute("aria-sort");
  head.querySelector("button").click();
  const afterTwoClicks = names();
  return {
    charts: document.querySelectorAll("svg.chart").length,
    bars: bars.length,
    barsDrawn: bars.filter((b) => Number(b.getAttribute("data-value")) > 0 && b.getBBox().width > 0).length,
    whiskers: document.querySelectorAll("svg.chart path.whisker").length,
    chartSizes: Array.from(document.querySelectorAll("svg.chart")).map((s) => {
      const r = s.getBoundingClientRect();
      return [Math.round(r.width), Math.round(r.height)];
    }),
    labelled: Array.from(document.querySelectorAll("svg.chart")).every(
      (s) => s.getAttribute("role") === "img" && s.querySelector("title") && s.querySelector("desc")),
    tables: document.querySelectorAll("table").length,
    verdict: document.getElementById("verdict").textContent,
    before, afterOneClick, afterTwoClicks, sortState,
  };
})()
"""


def check_page(
    path: Path,
    screenshot: Path | None = None,
    probe: str | None = None,
    tmp: Path | None = None,
    width: int | None = None,
) -> dict[str, Any]:
    node = shutil.which("node")
    if node is None or not (NODE_TOOLS / "node_modules" / "playwright-core").is_dir():
        pytest.fail(
            "node and tools/node/node_modules are needed: run scripts/setup.d/50-node.sh (`make test` does)"
        )
    if not Path("/usr/bin/chromium").exists():
        pytest.fail(
            "Debian's chromium is needed: scripts/setup.d/apt-packages.txt lists it (`make test` installs it)"
        )
    argv = [node, str(CHECK_PAGE), path.as_uri()]
    if screenshot is not None:
        argv += ["--screenshot", str(screenshot)]
    if width is not None:
        argv += ["--width", str(width)]
    if probe is not None:
        assert tmp is not None
        probe_file = tmp / "probe.js"
        probe_file.write_text(probe, encoding="utf-8")
        argv += ["--probe-file", str(probe_file)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def test_the_html_report_in_chromium(tmp_path: Path) -> None:
    run, ms = synthetic_run()
    report = build_report(run, ms, now=1_767_272_400.0)
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    screenshot = ARTIFACTS / "report.png"
    screenshot.unlink(missing_ok=True)

    result = check_page(page, screenshot, PROBE, tmp_path)

    assert result["consoleErrors"] == []
    assert result["pageErrors"] == []
    # The only request is the page itself: no font, script, image or beacon left the page.
    assert result["requests"] == [{"url": page.as_uri(), "resourceType": "document"}]
    assert result["failedRequests"] == []
    assert result["title"] == f"gatebench: Synthetic auction run ({run.run_id})"

    probe = result["probe"]
    s = report.summary
    gateways, workloads, cells = len(s.gateways), len(s.workloads), len(s.cells)
    assert probe["charts"] == 3
    assert probe["bars"] == gateways + gateways * workloads + cells
    assert probe["barsDrawn"] == probe["bars"]
    assert probe["whiskers"] == cells
    assert all(w > 300 and h > 60 for w, h in probe["chartSizes"])
    assert probe["labelled"] is True
    assert probe["tables"] >= 8
    assert probe["verdict"] == " ".join(report.verdict)
    # The global table starts best-first; one click sorts by score ascending, two descending.
    best_first = [g.target for g in s.scores.gateways]
    assert probe["before"] == best_first
    assert probe["afterOneClick"] == list(reversed(best_first))
    assert probe["sortState"] == "ascending"
    assert probe["afterTwoClicks"] == best_first

    data = screenshot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 50_000


def test_the_request_check_sees_a_page_that_fetches(tmp_path: Path) -> None:
    """Negative control: the same check reports a page that tries to load something."""
    page = tmp_path / "fetching.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>x</title></head><body>"
        '<img src="http://gatebench.invalid/pixel.png" alt=""></body></html>',
        encoding="utf-8",
    )
    result = check_page(page)
    urls = [r["url"] for r in result["requests"]]
    assert "http://gatebench.invalid/pixel.png" in urls
    assert "http://gatebench.invalid/pixel.png" in result["failedRequests"]


CAPACITY_PROBE = """
(() => {
  const curves = Array.from(document.querySelectorAll("svg.chart.curve"));
  const inside = (el, svg) => {
    const a = el.getBoundingClientRect(), b = svg.getBoundingClientRect();
    return a.width >= 0 && a.left >= b.left - 1 && a.right <= b.right + 1
      && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
  };
  return {
    curves: curves.length,
    points: curves.map((s) => s.querySelectorAll("circle.p99").length),
    knees: curves.map((s) => Array.from(s.querySelectorAll("line.knee")).map(
      (l) => l.closest("g.series").dataset.target)),
    objective: curves.map((s) => s.querySelectorAll("line.objective").length),
    drawnInside: curves.every((s) => Array.from(s.querySelectorAll("circle.p99, line.knee"))
      .every((el) => inside(el, s))),
    labelled: curves.every((s) => s.getAttribute("role") === "img" && s.querySelector("title")),
    verdict: document.body.textContent.includes("carries"),
  };
})()
"""


def test_the_capacity_report_in_chromium(tmp_path: Path) -> None:
    """A capacity run's report (a campaign on the simulated target): curves drawn inside their
    charts with every probe, each target's knee marked, the objective line, no request made."""
    from dataclasses import replace

    from capacity_sim import SimulatedTarget
    from gatebench.core.model import RunRecord, RunStatus
    from gatebench.core.plan import Capacity
    from gatebench.kinds.capacity import Campaign, capacity_result, search
    from gatebench.kinds.capacity._report import build_capacity_report, render_capacity

    settings = replace(Capacity(), repetitions=3)
    targets = {
        "haproxy": SimulatedTarget(workers=11, service_ms=10.0, jitter=0.1),
        "envoy": SimulatedTarget(workers=8, service_ms=10.0, jitter=0.1),
        "baseline": SimulatedTarget(workers=16, service_ms=10.0, jitter=0.1),
    }
    campaign = Campaign(tuple(targets), {"bid": settings}, 5, budget_s=3600.0)
    while keys := campaign.next_round():
        for key in keys:
            target = targets[key.target]
            target.seed = key.repetition
            campaign.record(key, search(settings, target, start_rate=campaign.start_rate(key)))
        campaign.end_round()
    result = capacity_result(campaign, machine="n2-standard-2", hourly_usd=0.0971)
    run = RunRecord(
        run_id="r-capacity",
        spec_uri="auction.yaml",
        spec_sha256="a" * 64,
        status=RunStatus.DONE,
        created_at=1_767_272_400.0,
        title="Auction",
    )
    report = build_capacity_report(run, result, now=1_767_272_400.0)
    page = tmp_path / "capacity.html"
    page.write_text(render_capacity(report, "html"), encoding="utf-8")
    screenshot = ARTIFACTS / "capacity-report.png"
    screenshot.unlink(missing_ok=True)

    found = check_page(page, screenshot, CAPACITY_PROBE, tmp_path)

    assert found["consoleErrors"] == [] and found["pageErrors"] == []
    assert found["requests"] == [{"url": page.as_uri(), "resourceType": "document"}]
    probe = found["probe"]
    assert probe["curves"] == 1
    assert probe["points"] == [len(result.curves)]
    assert sorted(probe["knees"][0]) == sorted(targets)
    assert probe["objective"] == [1]
    assert probe["drawnInside"] is True and probe["labelled"] is True
    assert probe["verdict"] is True
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


TABLE_PROBE = """
(() => {
  const table = document.querySelector("#capacity table");
  const scroll = table.closest(".scroll");
  const rows = Array.from(table.tBodies[0].rows);
  return {
    rowHeights: rows.map((r) => Math.round(r.getBoundingClientRect().height)),
    tableWidth: Math.round(table.scrollWidth),
    scrollWidth: Math.round(scroll.clientWidth),
    overflows: scroll.scrollWidth > scroll.clientWidth,
    headers: Array.from(table.tHead.rows[0].cells).map((c) => c.textContent.trim()),
    best: Array.from(table.querySelectorAll("strong.best")).map((b) => b.textContent),
    notes: Array.from(document.querySelectorAll("ul.notes li")).map((li) => li.textContent),
  };
})()
"""


def test_the_capacity_tables_rows_stay_one_line_at_1300_px(tmp_path: Path) -> None:
    """Long reasons (two gateways bounded by the tester, one noisy) sit under the per-target
    table, which keeps one line a row without a horizontal scrollbar in Chromium at 1,300 px, and
    marks no lower bound as best."""
    from gatebench.core.model import RunRecord, RunStatus
    from gatebench.core.plan import Capacity
    from gatebench.kinds.capacity import Campaign, SearchKey, SearchResult, capacity_result
    from gatebench.kinds.capacity._report import build_capacity_report, render_capacity

    note = (
        "3,200/s held, just under the share of the engine's ceiling at which the tester is the "
        "limit; p99 48.0 ms > 45 ms; shared core: the backend shared a core with the load "
        "generator (pinned: gateway on cpu 1; engine, backend on cpu 0)"
    )
    campaign = Campaign(("nginx", "haproxy", "baseline"), {"bid": Capacity()}, 1, 3600.0)
    for rep in (1, 2):
        for target in ("nginx", "haproxy"):
            campaign.record(
                SearchKey(rep, target, "bid"), SearchResult("tester-bound", 3200.0, None, (), note)
            )
        campaign.record(
            SearchKey(rep, "baseline", "bid"), SearchResult("found", 9000.0, 9400.0, ())
        )
    result = capacity_result(campaign)
    run = RunRecord(
        run_id="r-table",
        spec_uri="auction.yaml",
        spec_sha256="a" * 64,
        status=RunStatus.DONE,
        created_at=1_767_272_400.0,
        environment={"cpus": "split: gateway, backend on cpu 1; engine on cpu 0"},
    )
    page = tmp_path / "capacity.html"
    page.write_text(render_capacity(build_capacity_report(run, result), "html"), encoding="utf-8")
    screenshot = ARTIFACTS / "capacity-table-1300.png"
    screenshot.unlink(missing_ok=True)

    found = check_page(page, screenshot, TABLE_PROBE, tmp_path, width=1300)

    assert found["consoleErrors"] == [] and found["pageErrors"] == []
    probe = found["probe"]
    assert "notes" not in probe["headers"]
    assert not probe["overflows"], probe
    # one line of text a row (the cells' padding included), where the notes column made them
    # about 200 px tall
    assert max(probe["rowHeights"]) <= 48, probe["rowHeights"]
    assert probe["best"] == []
    assert [n.split(":")[0] for n in probe["notes"]] == ["nginx", "haproxy"]
    assert all(note in n for n in probe["notes"])
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
