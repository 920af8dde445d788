"""The report's charts (``_charts``) as inline SVG, drawn here: a report must open offline and
fetch nothing, and a charting library would be hundreds of kilobytes for a few bar charts.

Two kinds of chart cover the reports: horizontal bars in groups (a group per workload, a
bar per target), with an optional confidence-interval whisker; and, for a capacity run,
latency against offered rate (:func:`curve_chart`). Horizontal, because target
names then sit beside their bars in plain text: nothing depends on colour alone, and the
chart grows downwards with the number of gateways and workloads. Every bar carries its
number as text, a ``<title>`` tooltip and ``data-*`` attributes; the chart has a
``<title>`` and ``<desc>`` for screen readers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from html import escape

from gatebench.core.report._charts import BASELINE_COLOUR, Chart, CurveChart, nice_step, scale_end

ROW = 20
BAR = 13
GROUP_HEADER = 22
AXIS = 24
TICK_ROW = 16
"""A group's own scale (``Chart.per_group``): its tick labels, between its title and its bars."""
PLOT_WIDTH = 440
VALUE_WIDTH = 170
CHAR = 7.0


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def grid_line(
    start: tuple[float, float],
    end: tuple[float, float],
    label: str,
    at: tuple[float, float],
    anchor: str,
) -> str:
    """A grid line of a chart from ``start`` to ``end`` (x, y), and its tick's label (already
    escaped) at ``at``, anchored ``middle`` (under a vertical line) or ``end`` (left of one
    across)."""
    return (
        f'<line class="grid" x1="{_num(start[0])}" x2="{_num(end[0])}" y1="{_num(start[1])}" '
        f'y2="{_num(end[1])}"/><text class="tick" x="{_num(at[0])}" y="{_num(at[1])}" '
        f'text-anchor="{anchor}">{label}</text>'
    )


def axis_ticks(top: float, step: float) -> Iterator[tuple[float, str]]:
    """The ticks of a linear axis from 0 to ``top`` every ``step`` (``charts.nice_step``):
    each value and its label, escaped, with as many decimals as the step needs."""
    exponent = math.floor(math.log10(step))
    mantissa = round(step / 10**exponent, 3)
    decimals = max(0, -exponent + (1 if mantissa == 2.5 else 0))
    tick = 0.0
    while tick <= top + step * 1e-9:
        yield tick, escape(f"{tick:,.{decimals}f}")
        tick += step


def hbar_chart(chart: Chart, colour_of: Callable[[str], str]) -> str:
    """Grouped horizontal bars; returns one ``<svg>`` element (``chart-ID``). One scale along
    the top, or (``Chart.per_group``) each group's own above its bars."""
    groups = chart.groups
    labels = [b.label for g in groups for b in g.bars]
    label_width = min(240.0, max(70.0, 12 + CHAR * max((len(x) for x in labels), default=4)))
    own = TICK_ROW if chart.per_group else 0
    height = AXIS + sum(GROUP_HEADER + own + ROW * len(g.bars) for g in groups) + 8
    width = label_width + PLOT_WIDTH + VALUE_WIDTH
    chart_id = f"chart-{chart.id}"
    title_id, desc_id, hatch_id = f"{chart_id}-title", f"{chart_id}-desc", f"{chart_id}-hatch"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{escape(chart_id)}" '
        f'viewBox="0 0 {_num(width)} {_num(height)}" width="{_num(width)}" height="{_num(height)}" '
        f'role="img" aria-labelledby="{escape(title_id)} {escape(desc_id)}">',
        f'<title id="{escape(title_id)}">{escape(chart.title)}</title>',
        f'<desc id="{escape(desc_id)}">{escape(chart.description)}</desc>',
        f'<defs><pattern id="{escape(hatch_id)}" width="6" height="6" '
        'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
        f'<rect width="6" height="6" fill="{BASELINE_COLOUR}" opacity="0.35"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="{BASELINE_COLOUR}" stroke-width="3"/>'
        "</pattern></defs>",
    ]

    def ticks(end: float, step: float, top: float, bottom: float) -> None:
        for tick, label in axis_ticks(end, step):
            tx = label_width + PLOT_WIDTH * max(0.0, min(tick, end)) / end
            out.append(grid_line((tx, top), (tx, bottom), label, (tx, top - 4), "middle"))

    scale = scale_end(chart.top, chart.max)
    if not chart.per_group:  # along the top, grid lines through every group
        ticks(*scale, AXIS - 4, height - 8)
    out.append(f'<text class="axis-label" x="4" y="{AXIS - 8}">{escape(chart.axis)}</text>')
    y = float(AXIS)
    for group in groups:
        out.append(
            f'<text class="group" x="4" y="{_num(y + GROUP_HEADER - 7)}">{escape(group.title)}</text>'
        )
        y += GROUP_HEADER
        if chart.per_group:
            scale = scale_end(group.top, group.max)
            ticks(*scale, y + own - 2, y + own + ROW * len(group.bars))
            y += own
        end = scale[0]

        def x(value: float, end: float = end) -> float:
            return label_width + PLOT_WIDTH * max(0.0, min(value, end)) / end

        for bar in group.bars:
            mid = y + ROW / 2
            fill = f"url(#{hatch_id})" if bar.baseline else colour_of(bar.label)
            attrs = f' data-target="{escape(bar.label)}" data-workload="{escape(group.title)}"'
            bar_width = max(0.0, x(bar.value) - label_width)
            out.append(
                f'<g class="bar-row"{attrs}>'
                f'<text class="label" x="{_num(label_width - 6)}" y="{_num(mid + 4)}" '
                f'text-anchor="end">{escape(bar.label)}</text>'
                f'<rect class="bar" x="{_num(label_width)}" y="{_num(mid - BAR / 2)}" '
                f'width="{_num(bar_width)}" height="{BAR}" fill="{fill}" '
                f'stroke="{colour_of(bar.label)}" data-value="{bar.value!r}">'
                f"<title>{escape(group.title)}, {escape(bar.label)}: {escape(bar.text)}</title></rect>"
            )
            end_x = x(bar.value)
            if bar.low is not None and bar.high is not None:
                lo, hi = x(bar.low), x(bar.high)
                out.append(
                    f'<path class="whisker" d="M{_num(lo)} {_num(mid)}H{_num(hi)}'
                    f"M{_num(lo)} {_num(mid - 4)}V{_num(mid + 4)}"
                    f'M{_num(hi)} {_num(mid - 4)}V{_num(mid + 4)}" '
                    f'data-low="{bar.low!r}" data-high="{bar.high!r}"/>'
                )
                end_x = max(end_x, hi)
            out.append(
                f'<text class="value" x="{_num(end_x + 6)}" y="{_num(mid + 4)}">'
                f"{escape(bar.text)}</text></g>"
            )
            y += ROW
    out.append("</svg>")
    return "".join(out)


# -- latency against offered rate (capacity runs) ------------------------------------------

CURVE_WIDTH = 720
CURVE_HEIGHT = 340
CURVE_LEFT = 64
CURVE_RIGHT = 16
CURVE_TOP = 28
CURVE_BOTTOM = 44


def _decades(low: float, high: float) -> tuple[float, float]:
    lo = 10.0 ** math.floor(math.log10(max(low, 0.01)))
    hi = 10.0 ** math.ceil(math.log10(max(high, lo * 10)))
    return lo, max(hi, lo * 10)


def curve_chart(chart: CurveChart, colour_of: Callable[[str], str]) -> str:
    """p50 (hollow squares, dashed line) and p99 (dots, solid line) latency against the
    offered rate, one colour per target, the latency axis logarithmic (a queue grows
    without bound past the knee); each target's knee a vertical line labelled with its name,
    the objective a horizontal one. A probe that broke the objective is drawn faded."""
    series, objective_ms, objective_text = chart.series, chart.objective_ms, chart.objective_text
    points = [p for s in series for p in s.points]
    rates = [p.rate for p in points] + [s.knee for s in series if s.knee]
    top_rate = max(rates, default=1.0)
    step = nice_step(top_rate)
    x_max = step * math.ceil(top_rate * 1.02 / step)
    lats = [v for p in points for v in (p.p50, p.p99) if v > 0]
    if objective_ms:
        lats.append(objective_ms)
    y_lo, y_hi = _decades(min(lats, default=1.0), max(lats, default=10.0))
    plot_w = CURVE_WIDTH - CURVE_LEFT - CURVE_RIGHT
    plot_h = CURVE_HEIGHT - CURVE_TOP - CURVE_BOTTOM
    legend_h = 18 * len(series)
    height = CURVE_HEIGHT + legend_h

    def x(rate: float) -> float:
        return CURVE_LEFT + plot_w * max(0.0, min(rate, x_max)) / x_max

    def y(ms: float) -> float:
        v = min(max(ms, y_lo), y_hi)
        f = (math.log10(v) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo))
        return CURVE_TOP + plot_h * (1.0 - f)

    chart_id = f"chart-{chart.id}"
    title_id, desc_id = f"{chart_id}-title", f"{chart_id}-desc"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart curve" id="{escape(chart_id)}" '
        f'viewBox="0 0 {CURVE_WIDTH} {_num(height)}" width="{CURVE_WIDTH}" '
        f'height="{_num(height)}" role="img" aria-labelledby="{escape(title_id)} {escape(desc_id)}">',
        f'<title id="{escape(title_id)}">{escape(chart.title)}</title>',
        f'<desc id="{escape(desc_id)}">{escape(chart.description)}</desc>',
    ]
    bottom = CURVE_TOP + plot_h
    for tick, label in axis_ticks(x_max, step):
        tx = x(tick)
        out.append(grid_line((tx, CURVE_TOP), (tx, bottom), label, (tx, bottom + 14), "middle"))
    decade = y_lo
    while decade <= y_hi * 1.0001:
        ty = y(decade)
        out.append(
            grid_line(
                (CURVE_LEFT, ty),
                (CURVE_WIDTH - CURVE_RIGHT, ty),
                escape(f"{decade:g}"),
                (CURVE_LEFT - 6, ty + 4),
                "end",
            )
        )
        decade *= 10
    out.append(
        f'<text class="axis-label" x="{_num(CURVE_LEFT + plot_w / 2)}" y="{_num(bottom + 32)}" '
        'text-anchor="middle">offered rate (requests per second)</text>'
        f'<text class="axis-label" x="4" y="{CURVE_TOP - 10}">latency (ms, log scale)</text>'
    )
    if objective_ms:
        oy = y(objective_ms)
        out.append(
            f'<line class="objective" x1="{CURVE_LEFT}" x2="{CURVE_WIDTH - CURVE_RIGHT}" '
            f'y1="{_num(oy)}" y2="{_num(oy)}" stroke="#b00020" stroke-dasharray="6 4"/>'
            f'<text class="objective" x="{CURVE_WIDTH - CURVE_RIGHT - 4}" y="{_num(oy - 4)}" '
            f'text-anchor="end" fill="#b00020">{escape(objective_text)}</text>'
        )
    for s in series:
        colour = colour_of(s.label)
        ordered = sorted(s.points, key=lambda p: p.rate)
        out.append(f'<g class="series" data-target="{escape(s.label)}">')
        for attr, dash in (("p99", ""), ("p50", ' stroke-dasharray="4 3"')):
            path = " ".join(
                f"{'M' if i == 0 else 'L'}{_num(x(p.rate))} {_num(y(getattr(p, attr)))}"
                for i, p in enumerate(ordered)
            )
            if path:
                out.append(
                    f'<path class="line-{attr}" d="{path}" fill="none" stroke="{colour}" '
                    f'stroke-width="1.3"{dash}/>'
                )
        for p in ordered:
            faded = "" if p.held else ' opacity="0.45"'
            tip = f"<title>{escape(s.label)}: {escape(p.text)}</title>"
            cx, cy99, cy50 = x(p.rate), y(p.p99), y(p.p50)
            out.append(
                f'<circle class="p99" cx="{_num(cx)}" cy="{_num(cy99)}" r="3.5" fill="{colour}"'
                f'{faded} data-rate="{p.rate!r}" data-p99="{p.p99!r}">{tip}</circle>'
                f'<rect class="p50" x="{_num(cx - 3)}" y="{_num(cy50 - 3)}" width="6" height="6" '
                f'fill="none" stroke="{colour}"{faded} data-rate="{p.rate!r}" '
                f'data-p50="{p.p50!r}">{tip}</rect>'
            )
        if s.knee:
            kx = x(s.knee)
            out.append(
                f'<line class="knee" x1="{_num(kx)}" x2="{_num(kx)}" y1="{CURVE_TOP}" '
                f'y2="{_num(bottom)}" stroke="{colour}" stroke-width="2" '
                f'stroke-dasharray="2 3" data-knee="{s.knee!r}"><title>{escape(s.label)}: '
                f"{escape(s.knee_text)}</title></line>"
            )
        out.append("</g>")
    ly = CURVE_HEIGHT + 4
    for s in series:
        colour = colour_of(s.label)
        out.append(
            f'<g class="legend-row"><circle cx="{CURVE_LEFT + 6}" cy="{_num(ly - 4)}" r="4" '
            f'fill="{colour}"/><text x="{CURVE_LEFT + 16}" y="{_num(ly)}">{escape(s.label)}: '
            f"knee {escape(s.knee_text or 'none')}</text></g>"
        )
        ly += 18
    out.append("</svg>")
    return "".join(out)
