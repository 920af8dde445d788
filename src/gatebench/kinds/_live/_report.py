"""The report of a scale and change-under-load run (docs/scale.md): self-contained HTML with a
chart per gateway (resident memory and p99 against the number of routes, routes on a log
scale), the change-under-load table with every failed request, and the JSON document both
are rendered from.

Charts are inline SVG written here, like the rest of the report (``_svg``): a line per series,
a point per size carrying its number as text, a ``<title>`` tooltip and ``data-*`` attributes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from gatebench.core._version import __version__
from gatebench.core.model import RunRecord
from gatebench.core.report._build import in_words
from gatebench.core.report._charts import PALETTE, nice_step
from gatebench.core.report._flat import csv_cell
from gatebench.core.report._html import _model_table, html_page
from gatebench.core.report._markdown import _model_table as _md_model_table
from gatebench.core.report._svg import _num, axis_ticks, grid_line
from gatebench.core.report._tables import Cell, Column, Table, text_table
from gatebench.core.scaleplan import LIVE_KINDS, LoadSettings
from gatebench.core.stats import counted, joined_names
from gatebench.kinds._live.metrics import ChangeOutcome, ScalePoint, scale_rows
from gatebench.store import ResultStore

FORMAT = "gatebench-scale/1"
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 380.0, 230.0, 56.0, 30.0, 36.0, 36.0
LEGEND_CHAR_W, LEGEND_GAP = 7.0, 14.0
"""A legend's width per character (12 px sans-serif, generously) and the gap between names."""
POSITIONS = ("start", "middle", "end")


def scale_document(
    points: Sequence[ScalePoint], changes: Sequence[ChangeOutcome], **about: Any
) -> dict[str, Any]:
    """The JSON of a run: ``about`` (run id, description, sizes, settings...), every scale
    point and every change outcome, gateways and sizes in order."""
    ordered = sorted(points, key=lambda p: (p.gateway, p.routes))
    return {
        "format": FORMAT,
        **about,
        "points": [p.to_dict() for p in ordered],
        "changes": [c.to_dict() for c in sorted(changes, key=lambda c: c.gateway)],
    }


SCALE_KIND, CHANGE_KIND = "scale", "change"
"""The kinds of the store's results (``ResultStore.put_result``) a scale run writes."""
"""The kinds of run (a run record's ``plan["kind"]``) whose results these are."""


def is_live_run(run: RunRecord) -> bool:
    """A route-scale or change-under-load run: its results are points and outcomes."""
    return run.kind in LIVE_KINDS


def render_scale_csv(document: Mapping[str, Any]) -> str:
    """Flat rows (run, gateway, routes, metric, value) of the scale points, and per change
    (routes: the table before it) its failures, p99 before and after, and slowest new route."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["run", "gateway", "routes", "metric", "value"])
    run = csv_cell(document.get("run", ""))
    points = [_point(p) for p in document.get("points", [])]
    for row in scale_rows(points):
        writer.writerow([run, row["gateway"], row["routes"], row["metric"], csv_cell(row["value"])])
    for c in document.get("changes", []):
        for metric, value in (
            ("change_failures", c["failures"]),
            ("change_p99_before_ms", c["before"]["p99_ms"]),
            ("change_p99_after_ms", c["during"]["p99_ms"]),
            ("change_worst_bucket_p99_ms", c["worst_bucket_p99_ms"]),
            ("change_slowest_new_route_s", c["slowest_new_route_s"]),
            ("change_mechanism_s", c["mechanism_s"]),
        ):
            writer.writerow([run, c["gateway"], c["routes_before"], metric, csv_cell(value)])
    return out.getvalue()


def point_key(point: ScalePoint) -> str:
    """The store key of a scale point: ``gateway@routes``."""
    return f"{point.gateway}@{point.routes}"


def cpu_policy_of(environment: Mapping[str, Any]) -> dict[str, str]:
    """``{"cpu_policy": ...}``: the cores every gateway was given, in the run's words
    (``gatebench.core.fairness``), for the document's header; empty when the run recorded none."""
    policy = environment.get("cpu_policy")
    if isinstance(policy, Mapping) and policy.get("describe"):
        return {"cpu_policy": str(policy["describe"])}
    return {}


def failed_of(target_errors: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The gateways that failed, each by the first line of its reason, as a run's document
    holds them (``failed``; none: no key)."""
    failed = {t: why.splitlines()[0] if why else "" for t, why in sorted(target_errors.items())}
    return {"failed": failed} if failed else {}


def load_of(measured: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The load the results were measured with, as the run's document says it (``rate``,
    ``engine``, ``measured_from``: what latencies count from), read back from the results that
    carry it: a document rebuilt from the store says it as the run's own ``scale.json`` does
    (a setting the results disagree on, or none carries, is left out)."""
    out: dict[str, Any] = {}
    for key in ("rate", "engine", "measured_from"):
        values = {m[key] for m in measured if m.get(key) is not None}
        if len(values) == 1:
            out[key] = values.pop()
    return out


def stored_scale_document(store: ResultStore, run_id: str) -> dict[str, Any] | None:
    """A run's document rebuilt from the store (None when the run does not exist)."""
    run = store.get_run(run_id)
    if run is None:
        return None
    points = store.results(run_id, SCALE_KIND).values()
    changes = store.results(run_id, CHANGE_KIND).values()
    return {
        "format": FORMAT,
        "run": run_id,
        "title": run.title,
        "status": str(run.status),
        **({"plan": run.plan, "kind": run.plan.get("kind")} if run.plan else {}),
        **load_of([*points, *changes]),
        **cpu_policy_of(run.environment),
        **failed_of(run.target_errors),
        "points": sorted(points, key=lambda p: (str(p.get("gateway")), int(p.get("routes", 0)))),
        "changes": sorted(changes, key=lambda c: str(c.get("gateway"))),
    }


def scale_bigquery_rows(
    run: RunRecord, points: Sequence[ScalePoint], changes: Sequence[ChangeOutcome]
) -> list[dict[str, Any]]:
    """A scale or change-under-load run's numbers as rows of the BigQuery table
    (``bigquery_schema.json``; docs/results.md, "A scale run's rows"): per scale point its
    configuration size, start, memory idle and under load (``gateway_rss_mb`` with statistic
    ``idle``, ``under_load``) and per position (``workload``: start, middle, end) p50, p99 and
    the error share, ``routes`` the table's size; per change its failures, p99 before and
    after, the worst 100 ms, the new routes' median and slowest time and the mechanism's,
    ``routes`` the table before it."""
    from gatebench.core.report._flat import _timestamp

    base = {
        "run_id": run.run_id,
        "run_created_at": _timestamp(run.created_at),
        "run_title": run.title or None,
        "is_baseline": False,
        "repetition": None,
        "n": None,
        "profile": None,
    }
    rows: list[dict[str, Any]] = []

    def add(
        target: str, routes: int, metric: str, value: float | None, unit: str, **extra: Any
    ) -> None:
        if value is None or not math.isfinite(float(value)):
            return
        row = dict(base, target=target, routes=routes, metric=metric, value=float(value), unit=unit)
        row.update({"workload": None, "statistic": "value", "flags": None, **extra})
        rows.append(row)

    for p in sorted(points, key=lambda p: (p.gateway, p.routes)):
        flags = None
        if p.problem:
            flags = "tester-bound" if "tester-bound" in p.problem else "incomplete"
        add(p.gateway, p.routes, "config_bytes", p.config_bytes, "bytes")
        add(p.gateway, p.routes, "start_s", p.start_s, "s", flags=flags)
        add(p.gateway, p.routes, "gateway_rss_mb", p.rss_idle_mb, "MB", statistic="idle")
        add(p.gateway, p.routes, "gateway_rss_mb", p.rss_load_mb, "MB", statistic="under_load")
        for position, lat in sorted(p.latency.items()):
            for metric, value in (("p50", lat.p50_ms), ("p99", lat.p99_ms)):
                add(p.gateway, p.routes, metric, value, "ms", workload=position, flags=flags)
            if lat.requests:
                share = 100.0 * lat.ko / lat.requests
                add(p.gateway, p.routes, "error_pct", share, "%", workload=position, flags=flags)
    for c in sorted(changes, key=lambda c: c.gateway):
        flags = (
            "tester-bound" if "tester-bound" in c.problem else ("incomplete" if c.problem else None)
        )
        times = [v for v in c.new_routes_s.values() if v is not None]
        for metric, value, unit, statistic in (
            ("change_failures", c.failures, "requests", "value"),
            ("p99", c.before.p99_ms, "ms", "before_change"),
            ("p99", c.during.p99_ms, "ms", "after_change"),
            ("max", c.during.max_ms, "ms", "after_change"),
            ("p99", c.worst_bucket_p99_ms, "ms", "worst_100ms"),
            ("new_route_s", statistics.median(times) if times else None, "s", "median"),
            ("new_route_s", c.slowest_new_route_s, "s", "slowest"),
            ("mechanism_s", c.mechanism_s, "s", "value"),
            ("check_s", c.check_s, "s", "value"),
        ):
            add(c.gateway, c.routes_before, metric, value, unit, statistic=statistic, flags=flags)
    return rows


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float | None]]],
    *,
    chart_id: str,
    title: str,
    y_label: str,
    x_label: str = "routes (log scale)",
    x_log: bool = True,
    moment: tuple[float, str] | None = None,
    marked: Mapping[str, Mapping[float, str]] | None = None,
    width: float = WIDTH,
) -> str:
    """Lines over an x axis, log10 (the sizes, from a power of 10 to the next) or linear (time
    around a change), and a linear y axis from 0; None values leave a gap. ``moment``: a
    vertical line at an x, labelled (the change); ``marked``: per series, the points ringed
    in red and what their tooltip adds (a bucket with failed requests). One ``<svg>``."""
    xs = sorted({x for values in series.values() for x, _y in values if x > 0 or not x_log})
    ys = [y for values in series.values() for _x, y in values if y is not None]
    top = max(ys, default=0.0) or 1.0
    step = nice_step(top)
    y_max = step * math.ceil(top / step)
    lo: float
    hi: float
    if x_log:
        low = math.floor(math.log10(xs[0])) if xs else 0
        high = max(low + 1, math.ceil(math.log10(xs[-1]))) if xs else 1
        lo, hi = float(low), float(high)
        ticks = [(float(p), f"{10**p:,}") for p in range(low, high + 1)]
    else:
        x_step = nice_step((xs[-1] - xs[0]) if len(xs) > 1 else 1.0)
        lo = x_step * math.floor((xs[0] if xs else 0.0) / x_step)
        hi = max(lo + x_step, x_step * math.ceil((xs[-1] if xs else 1.0) / x_step))
        count = round((hi - lo) / x_step)
        ticks = [(lo + i * x_step, f"{lo + i * x_step:g}") for i in range(count + 1)]
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        at = math.log10(x) if x_log else x
        return LEFT + plot_w * (at - lo) / (hi - lo)

    def py(y: float) -> float:
        return TOP + plot_h * (1 - y / y_max)

    def shown(x: float) -> bool:
        return x > 0 or not x_log

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart line-chart" id="{escape(chart_id)}" '
        f'viewBox="0 0 {_num(width)} {_num(HEIGHT)}" width="{_num(width)}" height="{_num(HEIGHT)}" '
        f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>',
        f'<text class="group" x="4" y="14">{escape(title)}</text>',
    ]
    for tick, label in axis_ticks(y_max, step):
        y = py(tick)
        out.append(grid_line((LEFT, y), (width - RIGHT, y), label, (LEFT - 4, y + 4), "end"))
    bottom = TOP + plot_h
    for at, label in ticks:
        x = LEFT + plot_w * (at - lo) / (hi - lo)
        out.append(grid_line((x, TOP), (x, bottom), escape(label), (x, bottom + 14), "middle"))
    out.append(
        f'<text class="axis-label" x="{_num(LEFT + plot_w / 2)}" y="{_num(HEIGHT - 4)}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text class="axis-label" x="{_num(LEFT)}" y="{_num(TOP - 6)}">{escape(y_label)}</text>'
    )
    if moment is not None:
        mx = px(moment[0])
        out.append(
            f'<line class="moment" x1="{_num(mx)}" x2="{_num(mx)}" y1="{_num(TOP)}" '
            f'y2="{_num(bottom)}" stroke="#b00020" stroke-dasharray="4 3"/>'
            f'<text class="moment" x="{_num(mx + 3)}" y="{_num(TOP + 10)}" fill="#b00020" '
            f'style="fill:#b00020">{escape(moment[1])}</text>'
        )
    legend_x = LEFT + LEGEND_CHAR_W * len(y_label) + LEGEND_GAP
    for index, (name, values) in enumerate(series.items()):
        colour = PALETTE[index % len(PALETTE)]
        notes = (marked or {}).get(name, {})
        path, pen_down = [], False
        ordered = sorted(values, key=lambda item: item[0])
        for vx, vy in ordered:
            if vy is None or not shown(vx):
                pen_down = False
                continue
            path.append(f"{'L' if pen_down else 'M'}{_num(px(vx))} {_num(py(vy))}")
            pen_down = True
        out.append(
            f'<g class="series" data-series="{escape(name)}">'
            f'<path d="{"".join(path)}" fill="none" stroke="{colour}" stroke-width="2"'
            f"{_dash(index) if x_log else ''}/>"
        )
        for vx, vy in ordered:
            if vy is None or not shown(vx):
                continue
            where = f"{vx:,.0f} routes" if x_log else f"{vx:g} s"
            note = notes.get(vx, "")
            ring = ' stroke="#b00020" stroke-width="2" class="marked"' if note else ""
            out.append(
                f'<circle cx="{_num(px(vx))}" cy="{_num(py(vy))}" r="{3 if x_log or note else 2}" '
                f'fill="{colour}"{ring} data-x="{vx!r}" data-y="{vy!r}"><title>{escape(name)}: '
                f"{escape(where)}, {escape(_fmt(vy))}{escape(', ' + note if note else '')}"
                "</title></circle>"
            )
        # Above the plot, on the unit's line, so that no line runs through it; in the series'
        # colour, over the page's text colour.
        out.append(
            f'<text class="legend" x="{_num(legend_x)}" y="{_num(TOP - 6)}" '
            f'fill="{colour}" style="fill:{colour}">{escape(name)}</text></g>'
        )
        legend_x += LEGEND_CHAR_W * len(name) + LEGEND_GAP
    out.append("</svg>")
    return "".join(out)


DASHES = ("", "7 4", "2 3")
"""Series after the first drawn dashed, then dotted: two that coincide (idle memory equal to
memory under load) still show both colours."""


def _dash(index: int) -> str:
    dash = DASHES[index % len(DASHES)]
    return f' stroke-dasharray="{dash}"' if dash else ""


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    text = f"{value:,.0f}" if abs(value) >= 10 else f"{value:,.2f}".rstrip("0").rstrip(".")
    return text + (f" {unit}" if unit else "")


def gateway_charts(gateway: str, points: Sequence[ScalePoint]) -> str:
    """Memory (idle and under load) and p99 per position against the table size."""
    mine = sorted((p for p in points if p.gateway == gateway), key=lambda p: p.routes)
    memory = {
        "idle": [(float(p.routes), p.rss_idle_mb) for p in mine],
        "under load": [(float(p.routes), p.rss_load_mb) for p in mine],
    }
    p99 = {
        position: [
            (
                float(p.routes),
                p.latency[position].p99_ms if position in p.latency else None,
            )
            for p in mine
        ]
        for position in POSITIONS
    }
    slug = "".join(c if c.isalnum() else "-" for c in gateway)
    return line_chart(
        memory,
        chart_id=f"mem-{slug}",
        title=f"{gateway}: resident memory",
        y_label="MB",
    ) + line_chart(
        p99, chart_id=f"p99-{slug}", title=f"{gateway}: p99 at the constant rate", y_label="ms"
    )


def render_scale_html(document: Mapping[str, Any]) -> str:
    """The HTML page of a run's JSON document (:func:`scale_document`), on the report's own
    page (``html_page``: its style and script, a policy that fetches nothing): what was measured
    and what went wrong first (:func:`scale_summary`), then a memory and a p99 chart per gateway,
    the tables and every failed request kept."""
    points = [_point(p) for p in document.get("points", [])]
    heading = str(document.get("title") or "Route scale and live changes")
    verdict, cautions = scale_summary(document)
    body = ["<main>"]
    if points:
        plan = document.get("plan")
        memory = plan.get("memory") if isinstance(plan, Mapping) else None
        memory = memory or "resident memory of the process tree"
        body.append(
            f"<h2>Route scale</h2><p>Memory ({escape(str(memory))}; idle and the highest under "
            "load) and p99 at the constant rate for the routes at the start, middle and end of "
            "the table, against the number of routes (log scale).</p>"
        )
        for gateway in sorted({p.gateway for p in points}):
            body.append(f'<h3>{escape(gateway)}</h3><div style="{_SIDE_BY_SIDE}">')
            body.append(gateway_charts(gateway, points))
            body.append("</div>")
        body.append(_model_table(points_table(points)))
    changes = document.get("changes", [])
    if changes:
        body.append(_changes_section(changes))
    about = {k: v for k, v in document.items() if k not in _NOT_SETTINGS}
    if about:
        pairs = "".join(
            f"<dt>{escape(str(k))}</dt><dd>{escape(in_words(v))}</dd>"
            for k, v in sorted(about.items())
        )
        body.append(f'<h2>Run</h2><dl class="meta">{pairs}</dl>')
    body.append("</main>")
    what = "change under load" if changes and not points else "route scale"
    run = str(document.get("run") or "")
    return html_page(
        title=f"gatebench {what}: {heading}" + (f" ({run})" if run else ""),
        subtitle=" · ".join(
            x
            for x in (
                f"gatebench {what} report",
                f"run {run}" if run else "",
                str(document.get("status") or ""),
            )
            if x
        ),
        heading=heading,
        verdict=verdict,
        cautions=cautions,
        body="".join(body),
        footer=f"Generated by gatebench {__version__} from the run's document ({FORMAT}).",
    )


_SIDE_BY_SIDE = "display:flex;flex-wrap:wrap;gap:0 16px"
"""The charts of one gateway side by side (an inline style: the page's own stays shared)."""


def scale_summary(document: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """What a run measured, in words (the verdict: the gateways and sizes; per change its
    failed requests and the new routes answered; the CPU policy), and what went wrong (the
    cautions: a gateway that failed, each point's and change's problem): the page's header
    and the dashboard's view say the same."""
    points = [_point(p) for p in document.get("points", [])]
    changes = document.get("changes", [])
    verdict = []
    if points:
        gateways = ", ".join(sorted({p.gateway for p in points}))
        sizes = ", ".join(f"{n:,}" for n in sorted({p.routes for p in points}))
        verdict.append(f"Route scale of {gateways} at {sizes} routes: the tables below.")
    verdict += change_verdict(changes, probe_interval_s(document))
    if not verdict:
        verdict.append("Nothing measured yet.")
    if document.get("cpu_policy"):
        verdict.append(f"CPU policy: {document['cpu_policy']}.")
    failed = document.get("failed") or {}
    cautions = [f"{t}: failed: {why}" for t, why in sorted(failed.items())]  # first lines
    return verdict, [*cautions, *point_notes(points), *change_notes(changes)]


def change_verdict(changes: Sequence[Mapping[str, Any]], resolution_s: float = 0.0) -> list[str]:
    """The changes compared, in words: who failed requests in the window after the change
    (and how many), who answered every new route, and through which gateway new routes
    answered soonest and last (median, then slowest), an order said only where the medians
    differ by more than ``resolution_s`` (the new routes were asked once per probe round)."""
    if not changes:
        return []
    windows = {c.get("window_s") for c in changes}
    window = (
        f"the {next(iter(windows)):g} s"
        if len(windows) == 1 and None not in windows
        else "the window"
    )
    failing = sorted(
        (c for c in changes if c["failures"]), key=lambda c: (-c["failures"], c["gateway"])
    )
    # no failure counted says nothing of a window that held no request (the load generator
    # crashed), and is said with its reservation where the change has a problem
    quiet = [c for c in changes if not c["failures"]]
    unloaded = sorted(c["gateway"] for c in quiet if not (c.get("during") or {}).get("requests"))
    doubtful = sorted(
        c["gateway"] for c in quiet if _window_doubt(c) and c["gateway"] not in unloaded
    )
    clean = sorted(
        c["gateway"] for c in quiet if c["gateway"] not in unloaded and c["gateway"] not in doubtful
    )
    if not failing and not doubtful and not unloaded:
        out = [f"No gateway failed a request in {window} after the change."]
    else:
        counts = [f"{c['gateway']} failed {counted(c['failures'], 'request')}" for c in failing]
        said = [joined_names(counts)] if counts else []
        if clean:
            said.append(f"{joined_names(clean)}: none")
        if doubtful:
            said.append(f"{joined_names(doubtful)}: none, with a problem (below)")
        if unloaded:
            said.append(f"{joined_names(unloaded)}: not measured, no request in the window")
        out = [f"In {window} after the change, {'; '.join(said)}."]
    short = [(c, *new_routes_answered(c)) for c in changes]
    partial = [(c["gateway"], a, t) for c, a, t in short if a < t]
    if not partial:
        totals = {t for _c, _a, t in short}
        each = (
            ("its new route" if 1 in totals else f"all {next(iter(totals)):,} new routes")
            if len(totals) == 1
            else "all their new routes"
        )
        out.append(f"Every gateway answered {each} from the new upstream.")
    else:
        out.append(
            "; ".join(
                f"{g} answered {a:,} of {counted(t, 'new route')}" for g, a, t in sorted(partial)
            )
            + " from the new upstream."
        )
    timed = sorted(
        (m, c["gateway"], c.get("slowest_new_route_s"))
        for c in changes
        if (m := _median_new_route_s(c)) is not None
    )
    if len(timed) >= 2 and timed[-1][0] - timed[0][0] > resolution_s:
        first = [t for t in timed if t[0] - timed[0][0] <= resolution_s]
        last = [t for t in timed if timed[-1][0] - t[0] <= resolution_s and t not in first]
        out.append(
            f"New routes answered soonest through {_group(first, resolution_s)} and last "
            f"through {_group(last, resolution_s)}."
        )
    elif len(timed) >= 2:
        low, high = timed[0][0], timed[-1][0]
        medians = f"{_fmt(low)} s" if low == high else f"{_fmt(low)} to {_fmt(high)} s"
        within = f", within one probe round ({resolution_s:g} s)" if low != high else ""
        out.append(
            f"New routes answered as soon through {joined_names(sorted(g for _m, g, _s in timed))} "
            f"(medians {medians}{within})."
        )
    elif timed:
        m1, g1, s1 = timed[0]
        out.append(f"New routes answered through {g1} ({_when(m1, s1)}).")
    return out


def _window_doubt(change: Mapping[str, Any]) -> str:
    """What of a change's problem puts its window's count in doubt: all of it but a new route
    that never answered (the verdict says that apart, and the count stands); "" when none."""
    parts = str(change.get("problem") or "").split("; ")
    return "; ".join(p for p in parts if p and not p.endswith("never answered correctly"))


def probe_interval_s(document: Mapping[str, Any]) -> float:
    """How often a run asked its new routes (its plan's ``probe_interval_s``, the same on both
    paths: ``ScaleAsk.about``)."""
    plan = document.get("plan")
    found = plan.get("probe_interval_s") if isinstance(plan, Mapping) else None
    return float(found) if isinstance(found, int | float) else LoadSettings().probe_interval_s


def _group(timed: Sequence[tuple[float, str, float | None]], resolution_s: float) -> str:
    """Gateways whose new routes answered within one probe round of each other: one is named
    with its median and slowest, several with their medians (no order among them)."""
    if len(timed) == 1:
        m, g, s = timed[0]
        return f"{g} ({_when(m, s)})"
    low, high = timed[0][0], timed[-1][0]
    medians = f"{_fmt(low)} s" if _fmt(low) == _fmt(high) else f"{_fmt(low)} to {_fmt(high)} s"
    names = joined_names(sorted(g for _m, g, _s in timed))
    return f"{names} (medians {medians}, within one probe round of {resolution_s:g} s)"


def _when(median_s: float, slowest_s: float | None) -> str:
    slowest = "some never" if slowest_s is None else f"slowest {_fmt(slowest_s)} s"
    return f"median {_fmt(median_s)} s, {slowest}"


def _median_new_route_s(change: Mapping[str, Any]) -> float | None:
    """When half of a change's new routes answered from the new upstream (as its document
    says, else from ``new_routes_s``)."""
    times = [v for v in change["new_routes_s"].values() if v is not None]
    found = change.get("new_route_median_s", statistics.median(times) if times else None)
    return None if found is None else float(found)


def _point(data: Mapping[str, Any]) -> ScalePoint:
    from gatebench.kinds._live.metrics import Latency

    fields = dict(data)
    fields["latency"] = {k: Latency(**v) for k, v in data.get("latency", {}).items()}
    return ScalePoint(**fields)


def points_table(points: Sequence[ScalePoint]) -> Table:
    """One row per gateway and table size: what its configuration weighed, how long it took to
    answer, its memory, and p50 / p99 for the routes at the start, middle and end of the table."""
    columns = [
        Column("gateway", False),
        Column("routes", True),
        Column("config, KiB", True, compact=False),
        Column("started in, s", True),
        Column("RSS idle, MB", True),
        Column("RSS load, MB", True),
        *(Column(f"{p} p50 / p99, ms", True) for p in POSITIONS),
        Column("not 2xx", True),
        Column("wrong answers", True),
    ]
    table = Table("points", "Route scale: every gateway at every size", columns)
    for p in sorted(points, key=lambda p: (p.gateway, p.routes)):
        cells = [
            Cell(f"{p.routes:,}", p.routes),
            Cell(_fmt(p.config_bytes / 1024), p.config_bytes),
            Cell(_fmt(p.start_s), p.start_s),
            Cell(_fmt(p.rss_idle_mb), p.rss_idle_mb),
            Cell(_fmt(p.rss_load_mb), p.rss_load_mb),
        ]
        for position in POSITIONS:
            lat = p.latency.get(position)
            text = f"{_fmt(lat.p50_ms)} / {_fmt(lat.p99_ms)}" if lat else "–"
            cells.append(Cell(text, lat.p99_ms if lat else None))
        cells.append(Cell(str(sum(x.ko for x in p.latency.values()))))
        cells.append(Cell(str(sum(x.wrong for x in p.latency.values()))))
        table.add(p.gateway, cells, tags=["problem"] if p.problem else [], sort=p.gateway)
    return table


def point_notes(points: Sequence[ScalePoint]) -> list[str]:
    """The problem of each point that has one (the table marks its row ``problem``)."""
    ordered = sorted(points, key=lambda p: (p.gateway, p.routes))
    return [f"{p.gateway} at {p.routes:,} routes: {p.problem}" for p in ordered if p.problem]


def changes_table(changes: Sequence[Mapping[str, Any]]) -> Table:
    """One row per gateway: how the change was applied, the requests that failed in the window
    after it, p99 before and after, and when the new routes answered from the new upstream."""
    columns = [
        Column("gateway", False),
        Column("mechanism", False),
        Column("failed", True),
        Column("p99 before, ms", True),
        Column("p99 / max after, ms", True),
        Column("worst 100 ms p99", True, compact=False),
        Column("new routes answered", True),
        Column("median / slowest, s", True),
        Column("mechanism, s", True, compact=False),
    ]
    table = Table("changes", "Configuration change under load", columns)
    for c in changes:
        median = _median_new_route_s(c)
        answered, total = new_routes_answered(c)
        cells = [
            Cell(str(c["kind"])),
            Cell(str(c["failures"]), c["failures"]),
            Cell(_fmt(c["before"]["p99_ms"]), c["before"]["p99_ms"]),
            Cell(f"{_fmt(c['during']['p99_ms'])} / {_fmt(c['during']['max_ms'])}"),
            Cell(_fmt(c["worst_bucket_p99_ms"]), c["worst_bucket_p99_ms"]),
            Cell(f"{answered} of {total}", answered),
            Cell(f"{_fmt(median)} / {_fmt(c['slowest_new_route_s'])}"),
            Cell(_fmt(c["mechanism_s"]), c["mechanism_s"]),
        ]
        tags = ["problem"] if c.get("problem") else []
        table.add(str(c["gateway"]), cells, tags=tags, sort=str(c["gateway"]))
    return table


def new_routes_answered(change: Mapping[str, Any]) -> tuple[int, int]:
    """How many of a change's new routes answered from the new upstream, and how many it added
    (as its document says, else counted from ``new_routes_s``)."""
    times = change["new_routes_s"]
    answered = sum(v is not None for v in times.values())
    return change.get("new_routes_answered", answered), change.get("new_routes", len(times))


def change_notes(changes: Sequence[Mapping[str, Any]]) -> list[str]:
    """The problem of each change that has one (the table marks its row ``problem``)."""
    return [f"{c['gateway']}: {c['problem']}" for c in changes if c.get("problem")]


TIMELINE_WIDTH = 760.0
"""The timeline of the changes: one line per gateway, a point per bucket."""


def change_timeline(changes: Sequence[Mapping[str, Any]]) -> str:
    """p99 per 100 ms bucket around the change (the document's ``series``; the change at 0 s),
    one line per gateway, a bucket with failed requests ringed in red; "" without a series."""
    series: dict[str, list[tuple[float, float | None]]] = {}
    marked: dict[str, dict[float, str]] = {}
    for c in sorted(changes, key=lambda c: str(c["gateway"])):
        buckets = c.get("series") or []
        if not buckets:
            continue
        name = str(c["gateway"])
        series[name] = [(b["t_ms"] / 1000, b.get("p99_ms")) for b in buckets]
        marked[name] = {
            b["t_ms"] / 1000: _bucket_failed(b) for b in buckets if b.get("ko") or b.get("wrong")
        }
    if not series:
        return ""
    return line_chart(
        series,
        chart_id="change-timeline",
        title="p99 per 100 ms around the change",
        y_label="ms",
        x_label="seconds from the change",
        x_log=False,
        moment=(0.0, "change"),
        marked=marked,
        width=TIMELINE_WIDTH,
    )


def _bucket_failed(bucket: Mapping[str, Any]) -> str:
    """What failed in a bucket of the timeline: a wrong answer is a failure too, as the table
    counts it, and is said as such (a bucket of an older document has no ``wrong``)."""
    ko, wrong = int(bucket.get("ko") or 0), int(bucket.get("wrong") or 0)
    said = f"{ko + wrong:,} of {bucket['requests']:,} failed"
    return said + (f" ({counted(wrong, 'wrong answer')})" if wrong else "")


def _changes_section(changes: Sequence[Mapping[str, Any]]) -> str:
    out = [
        "<h2>Configuration change under load</h2><p>Every request of the window after the "
        "change that was not 2xx or got no answer, the latency before and after, and the time "
        "until each new route answered correctly from the new upstream. The chart: p99 of each "
        "100 ms of the load around the change, a bucket with failed requests ringed in red.</p>",
        change_timeline(changes),
        _model_table(changes_table(changes)),
        "<p>How each gateway applied the change:</p><ul>"
        + "".join(f"<li>{escape(c['gateway'])}: {escape(c['mechanism'])}</li>" for c in changes)
        + "</ul>",
    ]
    for c in changes:
        found = _failed_requests(c)
        if found is None:
            continue
        heading, listed, more = found
        items = "".join(f"<li>{escape(line)}</li>" for line in listed)
        out.append(
            f"<h3>{escape(heading)}</h3>"
            f'<ul style="font-family:monospace">{items}</ul>'
            + (f"<p>{escape(more)}</p>" if more else "")
        )
    return "".join(out)


def _failed_requests(change: Mapping[str, Any]) -> tuple[str, list[str], str] | None:
    """A change's failed requests in every view (the page, the terminal, Markdown): a heading,
    one line per request kept (its time after the change, route and error), and how many more
    there were ("" when every one is kept); None when none failed."""
    if not change["failed"]:
        return None
    heading = (
        f"{change['gateway']}: {counted(change['failures'], 'failed request')} after the change"
    )
    listed = [f"{_fmt(f['after_ms'])} ms: {f['route']}: {f['error']}" for f in change["failed"]]
    more = change["failures"] - len(change["failed"])
    return heading, listed, (f"and {more:,} more" if more > 0 else "")


def _failed_lines(change: Mapping[str, Any]) -> list[str]:
    """A change's failed requests as text lines (:func:`_failed_requests`), those kept indented."""
    found = _failed_requests(change)
    if found is None:
        return []
    heading, listed, more = found
    return [heading, *(f"  {line}" for line in listed), *([f"  {more}"] if more else [])]


def scale_text(document: Mapping[str, Any]) -> list[str]:
    """What ``gatebench scale`` and ``change-under-load`` print at the end: the points' table
    and their problems, the changes' table and every failed request kept, then a change's
    verdict (:func:`change_verdict`, as the page's header says it)."""
    points = [_point(p) for p in document.get("points", [])]
    changes = document.get("changes", [])
    lines: list[str] = []
    if points:
        lines += ["", "Route scale (p50 / p99 at the constant rate; the charts are in scale.html)"]
        lines += ["  " + line for line in text_table(points_table(points))]
        lines += ["  " + note for note in point_notes(points)]
    if changes:
        lines += ["", "Configuration change under load"]
        lines += ["  " + line for line in text_table(changes_table(changes))]
        lines += ["  " + note for note in change_notes(changes)]
        for c in changes:
            lines += ["  " + line for line in _failed_lines(c)]
        lines += ["", " ".join(change_verdict(changes, probe_interval_s(document)))]
    return lines


def scale_view(run: RunRecord, document: Mapping[str, Any]) -> dict[str, Any]:
    """The dashboard's page of a scale or change-under-load run (``gatebench-view/1``, as the
    run view of the core report): what was measured in words, the problems as cautions, and
    the same tables as the report (its charts stay in ``scale.html``)."""
    from gatebench.core.report import VIEW_FORMAT, run_summary

    points = [_point(p) for p in document.get("points", [])]
    changes = document.get("changes", [])
    verdict, cautions = scale_summary(document)
    measured = [*(p.to_dict() for p in points), *changes]
    how = sorted({(str(m["engine"]), str(m["measured_from"]), float(m["rate"])) for m in measured})
    tables = ([points_table(points)] if points else []) + (
        [changes_table(changes)] if changes else []
    )
    return {
        "format": VIEW_FORMAT,
        "kind": str(run.kind),
        "run": run_summary(run),
        "title": run.title,
        "verdict": verdict,
        "cautions": cautions,
        "resolution": " ".join(
            f"Latencies from each request's {when}, by {engine}, at a constant {rate:g} requests a second."
            for engine, when, rate in how
        ),
        "measurements": len(measured),
        "targets": sorted({str(m["gateway"]) for m in measured}),
        "baseline": None,
        "charts": [],
        "tables": [t.to_dict() for t in tables],
    }


def render_scale_markdown(document: Mapping[str, Any]) -> str:
    """The Markdown report of a run's JSON document: what was measured and what went wrong
    (:func:`scale_summary`, as the page's header), the two tables, every failed request kept,
    and the run's settings (the charts are in the HTML report)."""
    points = [_point(p) for p in document.get("points", [])]
    changes = document.get("changes", [])
    head = str(document.get("title") or "Route scale and live changes")
    verdict, cautions = scale_summary(document)
    out = [f"# {head}", "", f"**Verdict.** {' '.join(verdict)}", ""]
    if cautions:
        out += ["Before you trust these numbers:", "", *(f"- {c}" for c in cautions), ""]
    if points:
        out += ["## Route scale", "", *_md_model_table(points_table(points))]
    if changes:
        out += ["## Configuration change under load", ""]
        out += _md_model_table(changes_table(changes))
        for c in changes:
            out += [f"- {line.strip()}" for line in _failed_lines(c)]
        if out[-1]:
            out.append("")
    about = {k: v for k, v in document.items() if k not in _NOT_SETTINGS}
    out += ["## Run", "", *(f"- {k}: {in_words(v)}" for k, v in sorted(about.items()))]
    return "\n".join(out).rstrip() + "\n"


_NOT_SETTINGS = ("points", "changes", "format", "failed")
"""The keys of a run's document that are not its settings (the page and Markdown list those)."""


__all__ = [
    "CHANGE_KIND",
    "FORMAT",
    "SCALE_KIND",
    "change_notes",
    "change_timeline",
    "changes_table",
    "failed_of",
    "gateway_charts",
    "is_live_run",
    "line_chart",
    "load_of",
    "point_key",
    "point_notes",
    "points_table",
    "render_scale_csv",
    "render_scale_html",
    "render_scale_markdown",
    "scale_bigquery_rows",
    "scale_document",
    "scale_summary",
    "scale_text",
    "scale_view",
    "stored_scale_document",
]
