"""The scale run's report (gatebench.kinds._live._report): a memory and a p99 chart per gateway with
routes on a log scale, the tables, every failed request of a change listed, the JSON document
it is rendered from."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gatebench.cli import main
from gatebench.core.model import RunKind, RunRecord
from gatebench.kinds._live._report import (
    failed_of,
    line_chart,
    point_key,
    render_scale_html,
    render_scale_markdown,
    scale_document,
    scale_text,
    scale_view,
)
from gatebench.kinds._live.metrics import (
    ChangeOutcome,
    Latency,
    ScalePoint,
)
from gatebench.store import SqliteStore
from synthetic import synthetic_change

SIZES = (10, 100, 1000, 10000)


def _point(gateway: str, routes: int) -> ScalePoint:
    lat = {
        pos: Latency(1000, 0, 1.0, float(routes) / 1000 + i, 9.0)
        for i, pos in enumerate(("start", "middle", "end"))
    }
    return ScalePoint(
        gateway,
        routes,
        routes * 100,
        0.1,
        10 + routes / 100,
        12 + routes / 100,
        200.0,
        "gatling",
        "send",
        lat,
    )


def _change() -> ChangeOutcome:
    change: ChangeOutcome = synthetic_change()
    return change


def test_a_memory_and_a_p99_chart_per_gateway_with_a_point_per_size() -> None:
    points = [_point(g, n) for g in ("nginx", "envoy") for n in SIZES]
    doc = scale_document(points, [], run="r1", title="t <b>")
    html = render_scale_html(json.loads(json.dumps(doc)))
    for gateway in ("nginx", "envoy"):
        assert f'id="mem-{gateway}"' in html and f'id="p99-{gateway}"' in html
    # memory: idle + under load; p99: three positions; one circle per size per series
    assert html.count("<circle") == 2 * (2 + 3) * len(SIZES)
    assert "t &lt;b&gt;" in html and "<b>" not in html.split("<body>")[1].split("</h1>")[0]
    assert [p["routes"] for p in doc["points"][:4]] == list(SIZES)
    assert doc["points"][0]["gateway"] == "envoy"  # sorted


def test_routes_are_on_a_log_scale() -> None:
    svg = line_chart(
        {"s": [(10.0, 1.0), (100.0, 2.0), (1000.0, 3.0), (10000.0, None)]},
        chart_id="c",
        title="t",
        y_label="ms",
    )
    xs = [float(x) for x in re.findall(r'<circle cx="([0-9.]+)"', svg)]
    assert len(xs) == 3  # None leaves a gap
    assert abs((xs[1] - xs[0]) - (xs[2] - xs[1])) < 0.2
    assert ">10,000<" in svg and ">10<" in svg


def test_the_legend_stands_above_the_plot_so_no_line_runs_through_it() -> None:
    """A series near the top of its axis (nginx's memory: 13 of 15 MB) ran through a legend
    drawn inside the plot; the names now stand on the unit's line above it, one after another."""
    from gatebench.kinds._live._report import LEGEND_CHAR_W, TOP

    svg = line_chart(
        {"idle": [(10.0, 13.0), (1000.0, 14.0)], "under load": [(10.0, 13.2), (1000.0, 14.0)]},
        chart_id="c",
        title="nginx: resident memory",
        y_label="MB",
    )
    found = re.findall(r'<text class="legend" x="([0-9.]+)" y="([0-9.]+)"[^>]*>([^<]+)<', svg)
    assert [name for _x, _y, name in found] == ["idle", "under load"]
    assert all(float(y) < TOP for _x, y, _name in found)  # above the plot's top edge
    ys = [float(y) for y in re.findall(r'<circle cx="[0-9.]+" cy="([0-9.]+)"', svg)]
    assert min(ys) >= TOP
    (x1, _, first), (x2, _, _) = found
    assert float(x2) >= float(x1) + LEGEND_CHAR_W * len(first)  # side by side, not overlapping
    # two series that coincide (envoy: idle as much as under load) still show both colours
    dashes = re.findall(
        r'<path d="[^"]*" fill="none" stroke="[^"]+" stroke-width="2"( stroke-dasharray="[^"]+")?/>',
        svg,
    )
    assert dashes == ["", ' stroke-dasharray="7 4"']


def test_every_failed_request_of_a_change_is_listed_with_its_time() -> None:
    html = render_scale_html(scale_document([], [_change()], run="r2"))
    assert "1 failed request after the change" in html
    assert "500 ms: end: status 502" in html
    assert "1 of 2" in html  # new routes answered
    assert "<li>nginx: SIGHUP &lt;to master&gt;</li>" in html  # the mechanism, escaped


def test_the_verdict_of_a_change_compares_the_gateways() -> None:
    """Who failed requests after the change, who answered every new route, and through which
    gateway new routes answered soonest and last: not one sentence per gateway."""
    import dataclasses

    def change(gateway: str, failures: int, times: dict[str, float | None]) -> dict[str, object]:
        c = dataclasses.replace(_change(), gateway=gateway, new_routes_s=times)
        data = json.loads(json.dumps(scale_document([], [c], run="r")))["changes"][0]
        return {**data, "failures": failures, "failed": data["failed"][:failures]}

    both = {"a": 0.1, "b": 0.3}
    doc = {
        "changes": [
            change("nginx", 0, {"a": 0.1, "b": 0.1}),
            change("envoy", 0, both),
            change("haproxy", 0, {"a": 0.4, "b": 0.6}),
        ]
    }
    from gatebench.kinds._live._report import scale_summary

    verdict, _ = scale_summary(doc)
    assert verdict == [
        "No gateway failed a request in the 1 s after the change.",
        "Every gateway answered all 2 new routes from the new upstream.",
        "New routes answered soonest through nginx (median 0.1 s, slowest 0.1 s) and last "
        "through haproxy (median 0.5 s, slowest 0.6 s).",
    ]
    # medians within one probe round (0.05 s by default): no order is claimed
    close = {
        "changes": [
            change("nginx", 0, {"a": 0.1, "b": 0.1}),
            change("envoy", 0, {"a": 0.12, "b": 0.14}),
        ]
    }
    assert scale_summary(close)[0][2] == (
        "New routes answered as soon through envoy and nginx (medians 0.1 to 0.13 s, within one "
        "probe round (0.05 s))."
    )
    tied = {"changes": [*close["changes"][:1], change("envoy", 0, {"a": 0.1, "b": 0.1})]}
    assert (
        scale_summary(tied)[0][2]
        == "New routes answered as soon through envoy and nginx (medians 0.1 s)."
    )
    slow = {**close, "plan": {"probe_interval_s": 0.01}}  # a finer probe tells them apart
    assert scale_summary(slow)[0][2].startswith("New routes answered soonest through nginx")
    # two within one probe round at one end: both named, no order between them
    ends = {"changes": [*close["changes"], change("haproxy", 0, {"a": 0.4, "b": 0.6})]}
    assert scale_summary(ends)[0][2] == (
        "New routes answered soonest through envoy and nginx (medians 0.1 to 0.13 s, within "
        "one probe round of 0.05 s) and last through haproxy (median 0.5 s, slowest 0.6 s)."
    )
    doc["changes"][1] = change("envoy", 1, {"a": 0.2, "b": None})
    doc["changes"][2]["failures"] = 1200
    verdict, _ = scale_summary(doc)
    assert verdict[:2] == [
        "In the 1 s after the change, haproxy failed 1,200 requests and envoy failed 1 "
        "request; nginx: none.",
        "envoy answered 1 of 2 new routes from the new upstream.",
    ]


def test_the_page_draws_p99_over_time_around_the_change_with_the_failed_buckets_ringed() -> None:
    """The document's 100 ms series, drawn: one line per gateway against seconds from the
    change, the change a labelled line at 0, the bucket holding the failed request ringed."""
    from gatebench.kinds._live._report import change_timeline

    doc = json.loads(json.dumps(scale_document([], [_change()], run="r5")))
    series = doc["changes"][0]["series"]
    failed = [b for b in series if b["ko"]]
    assert [b["t_ms"] for b in failed] == [500.0]  # the request 0.5 s after the change
    svg = change_timeline(doc["changes"])
    assert svg in render_scale_html(doc)
    xs = [float(x) for x in re.findall(r'<circle cx="([0-9.]+)"', svg)]
    assert len(xs) == sum(1 for b in series if b["p99_ms"] is not None)
    assert xs == sorted(xs)  # time runs left to right
    ringed = re.findall(r'<circle cx="([0-9.]+)"[^>]*class="marked"[^>]*data-x="([^"]+)"', svg)
    assert [float(x) for _cx, x in ringed] == [0.5]
    assert "1 of 10 failed" in svg  # the bucket's tooltip: 10 requests in 100 ms at 100/s
    moment = re.search(r'<line class="moment" x1="([0-9.]+)"', svg)
    assert moment is not None and ">change</text>" in svg
    at_zero = [
        float(cx)
        for cx, x in re.findall(r'<circle cx="([0-9.]+)"[^>]*data-x="([^"]+)"', svg)
        if float(x) == 0.0
    ]
    assert at_zero == [float(moment.group(1))]
    assert "seconds from the change" in svg
    assert change_timeline([{**doc["changes"][0], "series": []}]) == ""


def test_the_terminal_and_markdown_show_the_same_tables_as_the_page() -> None:
    """One definition of each table (``points_table``, ``changes_table``) in every view: the
    terminal's aligned text, Markdown and HTML; a point with a problem is marked and says it."""
    import dataclasses

    broken = dataclasses.replace(_point("nginx", 100), problem="did not answer in 120 s")
    doc = json.loads(
        json.dumps(scale_document([_point("nginx", 10), broken], [_change()], run="r3"))
    )
    text = scale_text(doc)
    header = next(line for line in text if "started in, s" in line)
    assert header.split()[:2] == ["gateway", "routes"] and "config, KiB" not in header
    rows = [line.split() for line in text if line.strip().startswith("nginx ")]
    assert [r[:2] for r in rows[:2]] == [["nginx", "10"], ["nginx", "(problem)"]]
    assert "  nginx at 100 routes: did not answer in 120 s" in text
    assert "  nginx: 1 of 2 new routes never answered correctly" in text  # the change's problem
    changed = ["nginx", "(problem)", "signal", "1"]  # failed: 1
    assert any(line.split()[:4] == changed for line in text)
    assert "  nginx: 1 failed request after the change" in text
    assert text[-1].startswith("In the 1 s after the change, nginx failed 1 request.")
    assert "    500 ms: end: status 502" in text
    md = render_scale_markdown(doc)
    assert "| nginx (problem) | 100 |" in md and "- nginx at 100 routes: did not answer" in md
    assert "| nginx (problem) | signal | 1 |" in md and "- 500 ms: end: status 502" in md
    assert "- nginx: 1 of 2 new routes never answered correctly" in md
    assert "- run: r3" in md
    html = render_scale_html(doc)
    assert "<li>nginx at 100 routes: did not answer in 120 s</li>" in html
    assert "<li>nginx: 1 of 2 new routes never answered correctly</li>" in html
    assert '<span class="tag">problem</span>' in html


def test_the_dashboards_view_of_a_scale_run_says_what_it_measured() -> None:
    """Not the fixed run's words ("No gateway was measured", Gatling's resolution): what was
    measured, its problems as cautions, and the report's tables."""
    import dataclasses

    broken = dataclasses.replace(_point("nginx", 100), problem="did not answer in 120 s")
    failed = failed_of({"envoy": "did not start\nlog..."})  # as the run's document holds it
    doc = scale_document([_point("nginx", 10), broken], [_change()], run="r4", **failed)
    doc["cpu_policy"] = "every gateway: 1 core"
    record = RunRecord(
        run_id="r4",
        spec_uri="file:///a.yaml",
        spec_sha256="0" * 64,
        kind=RunKind.SCALE,
        target_errors={"envoy": "did not start\nlog..."},
    )
    view = scale_view(record, json.loads(json.dumps(doc)))
    assert view["kind"] == "scale" and view["format"] == "gatebench-view/1"
    assert view["verdict"] == [
        "Route scale of nginx at 10, 100 routes: the tables below.",
        "In the 1 s after the change, nginx failed 1 request.",
        "nginx answered 1 of 2 new routes from the new upstream.",
        "New routes answered through nginx (median 0.1 s, some never).",
        "CPU policy: every gateway: 1 core.",
    ]
    assert view["cautions"] == [
        "envoy: failed: did not start",
        "nginx at 100 routes: did not answer in 120 s",
        "nginx: 1 of 2 new routes never answered correctly",
    ]
    assert "Gatling records" not in view["resolution"]
    assert view["resolution"].startswith("Latencies from each request's send, by gatling")
    assert [t["id"] for t in view["tables"]] == ["points", "changes"]
    assert [r["header"] for r in view["tables"][0]["rows"]] == ["nginx", "nginx"]
    assert view["tables"][0]["rows"][1]["tags"] == ["problem"]
    # the page says the same first, on the report's own page (a policy that fetches nothing)
    html = render_scale_html(json.loads(json.dumps(doc)))
    assert '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'' in html
    assert "Route scale of nginx at 10, 100 routes: the tables below." in html.split("</header>")[0]
    assert "<li>envoy: failed: did not start</li>" in html.split("</header>")[0]
    assert "<dt>failed</dt>" not in html  # a caution, not a setting
    md = render_scale_markdown(json.loads(json.dumps(doc)))
    assert md.splitlines()[2].startswith("**Verdict.** Route scale of nginx at 10, 100 routes")
    assert "- envoy: failed: did not start" in md and "- failed:" not in md


def test_gatebench_report_writes_a_scale_runs_own_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_path = tmp_path / "s.sqlite"
    with SqliteStore(store_path) as store:
        store.create_run(
            RunRecord(
                run_id="r-scale",
                spec_uri="file:///a.yaml",
                spec_sha256="0" * 64,
                plan={"kind": "scale", "sizes": [10, 100]},
                kind=RunKind.SCALE,
            )
        )
        for n in (10, 100):
            point = _point("nginx", n)
            store.put_result("r-scale", "scale", point_key(point), point.to_dict())
        store.put_result("r-scale", "change", "nginx", _change().to_dict())
    base = ["report", "r-scale", "--store", str(store_path), "-o", "-"]
    assert main([*base, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["routes"] for p in doc["points"]] == [10, 100] and doc["plan"]["kind"] == "scale"
    assert main([*base, "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "run,gateway,routes,metric,value"
    assert "r-scale,nginx,100,rss_load_mb,13.0" in rows
    assert "r-scale,nginx,100,change_failures,1" in rows
    assert main([*base, "--format", "html"]) == 0
    assert 'id="mem-nginx"' in capsys.readouterr().out
    assert main([*base, "--format", "md"]) == 0
    md = capsys.readouterr().out
    assert (
        md.startswith("# ") and "| nginx | 100 |" in md and "| nginx (problem) | signal | 1 |" in md
    )
    assert main([*base, "--format", "junit"]) == 2
    assert "its report is html, json, csv or md" in capsys.readouterr().err


def test_a_report_rebuilt_from_the_store_says_what_the_runs_own_file_says(
    tmp_path: Path,
) -> None:
    """``gatebench report RUN`` rewrites scale.html from the store: it says what the load was
    and what latencies count from, as the run's own scale.json does."""
    from gatebench.kinds._live._report import stored_scale_document

    plan = {"kind": "scale", "sizes": [10, 100], "probe_interval_s": 0.05}
    points = [_point("nginx", n) for n in (10, 100)]
    with SqliteStore(tmp_path / "s.sqlite") as store:
        store.create_run(
            RunRecord(
                run_id="r",
                spec_uri="file:///a.yaml",
                spec_sha256="0" * 64,
                title="T",
                plan=plan,
                kind=RunKind.SCALE,
            )
        )
        for point in points:
            store.put_result("r", "scale", point_key(point), point.to_dict())
        stored = stored_scale_document(store, "r")
    own = scale_document(  # as ScaleScore writes it: the plan with its keys sorted
        points,
        [],
        run="r",
        title="T",
        kind="scale",
        plan=json.loads(json.dumps(plan, sort_keys=True)),
        rate=200.0,
        engine="gatling",
        measured_from="send",
    )
    assert stored is not None
    settings = ("kind", "plan", "rate", "engine", "measured_from")
    assert {k: stored.get(k) for k in settings} == {k: own[k] for k in settings}

    def run_section(html: str) -> str:
        return re.sub(r"<dt>status</dt><dd>[^<]*</dd>", "", html.split("<h2>Run</h2>")[1])

    assert run_section(render_scale_html(stored)) == run_section(render_scale_html(own))
    assert "<dt>measured_from</dt>" in run_section(render_scale_html(stored))
