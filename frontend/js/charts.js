// The report's charts (src/gatebench/core/report/_charts.py, sent as JSON by the read API)
// drawn in the browser, with the same layout as the HTML report's inline SVG (_svg.py):
// horizontal bars in groups (a group per workload, a bar per target), an optional 95 %
// confidence whisker, the baseline striped, every number printed beside its bar, and a
// title and description for screen readers. Nothing depends on colour alone.

import { svg } from "./dom.js";

const ROW = 20;
const BAR = 13;
const GROUP_HEADER = 22;
const AXIS = 24;
const TICK_ROW = 16; // a group's own scale (chart.per_group): its ticks, between its title and its bars
const PLOT_WIDTH = 440;
const VALUE_WIDTH = 190;
const CHAR = 7.0;
const BASELINE_COLOUR = "#8a8a8a";

/** A round tick step (1, 2, 2.5 or 5 × 10^k) giving about `ticks` intervals. */
export function niceStep(span, ticks = 5) {
  if (!(span > 0)) return 1;
  const raw = span / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (raw <= m * power) return m * power;
  }
  return 10 * power;
}

function num(x) {
  return String(Math.round(x * 10) / 10);
}

function tickLabel(value, step) {
  const decimals = step >= 1 ? 0 : Math.min(3, Math.ceil(-Math.log10(step)));
  return value.toLocaleString("en-US", { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** The longest bar or whisker of some bars. */
function topOf(bars) {
  return Math.max(0, ...bars.map((b) => b.value || 0), ...bars.map((b) => (b.high == null ? 0 : b.high)));
}

/** [end, step] of a bar scale: `given`, else the next round number above `top` (as _charts.scale_end). */
export function scaleEnd(top, given) {
  const step = niceStep(given != null ? given : top || 1);
  return [given != null ? given : step * Math.ceil((top || 1) / step), step];
}

/** One <svg> for a chart view: {id, kind, title, description, axis, max, per_group, groups}: one
 * scale along the top, or (per_group) each group's own above its bars. */
export function drawChart(chart, idPrefix = "") {
  const chartId = `${idPrefix}chart-${chart.id}`;
  const bars = chart.groups.flatMap((g) => g.bars);
  const labelWidth = Math.min(240, Math.max(70, 12 + CHAR * Math.max(4, ...bars.map((b) => b.label.length))));
  const own = chart.per_group ? TICK_ROW : 0;
  const height = AXIS + chart.groups.reduce((sum, g) => sum + GROUP_HEADER + own + ROW * g.bars.length, 0) + 8;
  const width = labelWidth + PLOT_WIDTH + VALUE_WIDTH;
  let [scaleMax, step] = scaleEnd(topOf(bars), chart.max);
  const x = (value) => labelWidth + (PLOT_WIDTH * Math.max(0, Math.min(value || 0, scaleMax))) / scaleMax;
  const hatchId = `${chartId}-hatch`;

  const root = svg("svg", {
    class: `chart chart-${chart.kind}`,
    id: chartId,
    viewBox: `0 0 ${num(width)} ${num(height)}`,
    width: num(width),
    height: num(height),
    role: "img",
    "aria-labelledby": `${chartId}-title ${chartId}-desc`,
    dataset: { kind: chart.kind, chart: chart.id },
  });
  root.append(
    svg("title", { id: `${chartId}-title` }, chart.title),
    svg("desc", { id: `${chartId}-desc` }, chart.description),
    svg(
      "defs",
      {},
      svg(
        "pattern",
        { id: hatchId, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
        svg("rect", { width: 6, height: 6, fill: BASELINE_COLOUR, opacity: 0.35 }),
        svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: BASELINE_COLOUR, "stroke-width": 3 }),
      ),
    ),
  );
  const ticks = (top, bottom) => {
    for (let tick = 0; tick <= scaleMax + step * 1e-9; tick += step) {
      const tx = num(x(tick));
      root.append(
        svg("line", { class: "grid", x1: tx, x2: tx, y1: num(top), y2: num(bottom) }),
        svg("text", { class: "tick", x: tx, y: num(top - 4), "text-anchor": "middle" }, tickLabel(tick, step)),
      );
    }
  };
  if (!chart.per_group) ticks(AXIS - 4, height - 8); // along the top, grid lines through every group
  root.append(svg("text", { class: "axis-label", x: 4, y: AXIS - 8 }, chart.axis));

  let y = AXIS;
  for (const group of chart.groups) {
    root.append(svg("text", { class: "group", x: 4, y: num(y + GROUP_HEADER - 7) }, group.title));
    y += GROUP_HEADER;
    if (chart.per_group) {
      [scaleMax, step] = scaleEnd(topOf(group.bars), group.max);
      ticks(y + own - 2, y + own + ROW * group.bars.length);
      y += own;
    }
    for (const bar of group.bars) {
      const mid = y + ROW / 2;
      const fill = bar.baseline ? `url(#${hatchId})` : bar.colour;
      const row = svg("g", {
        class: "bar-row",
        dataset: { target: bar.label, workload: group.title, value: bar.value == null ? "" : bar.value },
      });
      row.append(
        svg("text", { class: "label", x: num(labelWidth - 6), y: num(mid + 4), "text-anchor": "end" }, bar.label),
      );
      let end = x(bar.value);
      if (chart.kind === "percentiles" && bar.marks) {
        // Thick to p50, middle to p90, thin to p99: the shape tells the tail, the text the numbers.
        const heights = [BAR, BAR * 0.6, BAR * 0.3];
        let from = 0;
        bar.marks.forEach((mark, i) => {
          const x0 = x(from);
          const x1 = x(mark.value);
          const h = heights[Math.min(i, heights.length - 1)];
          row.append(
            svg(
              "rect",
              {
                class: `bar segment segment-${mark.name}`,
                x: num(x0),
                y: num(mid - h / 2),
                width: num(Math.max(0, x1 - x0)),
                height: num(h),
                fill,
                stroke: bar.colour,
                dataset: { value: mark.value == null ? "" : mark.value, mark: mark.name },
              },
              svg("title", {}, `${group.title}, ${bar.label}: ${mark.name} ${mark.text} ms`),
            ),
          );
          from = mark.value || from;
        });
      } else {
        row.append(
          svg(
            "rect",
            {
              class: "bar",
              x: num(labelWidth),
              y: num(mid - BAR / 2),
              width: num(Math.max(0, x(bar.value) - labelWidth)),
              height: BAR,
              fill,
              stroke: bar.colour,
              dataset: { value: bar.value == null ? "" : bar.value },
            },
            svg("title", {}, `${group.title}, ${bar.label}: ${bar.text}`),
          ),
        );
        if (bar.low != null && bar.high != null) {
          const lo = x(bar.low);
          const hi = x(bar.high);
          row.append(
            svg("path", {
              class: "whisker",
              d: `M${num(lo)} ${num(mid)}H${num(hi)}M${num(lo)} ${num(mid - 4)}V${num(mid + 4)}M${num(hi)} ${num(mid - 4)}V${num(mid + 4)}`,
              dataset: { low: bar.low, high: bar.high },
            }),
          );
          end = Math.max(end, hi);
        }
      }
      row.append(svg("text", { class: "value", x: num(end + 6), y: num(mid + 4) }, bar.text));
      root.append(row);
      y += ROW;
    }
  }
  return root;
}

// -- latency against offered rate (capacity runs) ----------------------------------------
// The same chart as the capacity report's (src/gatebench/core/report/_svg.py, curve_chart): p99
// (dots, solid line) and p50 (squares, dashed line) against the offered rate, the latency axis
// logarithmic, each target's knee a vertical line named in the legend, the objective a red line.

const CURVE_WIDTH = 720;
const CURVE_HEIGHT = 340;
const CURVE_LEFT = 64;
const CURVE_RIGHT = 16;
const CURVE_TOP = 28;
const CURVE_BOTTOM = 44;

/** The decades a log axis spans: [10^floor(log low), 10^ceil(log high)], at least one decade. */
export function decades(low, high) {
  const lo = 10 ** Math.floor(Math.log10(Math.max(low, 0.01)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(high, lo * 10)));
  return [lo, Math.max(hi, lo * 10)];
}

/** One <svg> for a curves view: {id, title, description, objective_ms, objective_text, series}. */
export function drawCurves(chart, idPrefix = "") {
  const chartId = `${idPrefix}chart-${chart.id}`;
  const points = chart.series.flatMap((s) => s.points);
  const rates = points.map((p) => p.rate).concat(chart.series.map((s) => s.knee || 0));
  const topRate = Math.max(1, ...rates);
  const step = niceStep(topRate);
  const xMax = step * Math.ceil((topRate * 1.02) / step);
  const lats = points.flatMap((p) => [p.p50, p.p99]).filter((v) => v > 0);
  if (chart.objective_ms) lats.push(chart.objective_ms);
  const [yLo, yHi] = decades(lats.length ? Math.min(...lats) : 1, lats.length ? Math.max(...lats) : 10);
  const plotW = CURVE_WIDTH - CURVE_LEFT - CURVE_RIGHT;
  const plotH = CURVE_HEIGHT - CURVE_TOP - CURVE_BOTTOM;
  const height = CURVE_HEIGHT + 18 * chart.series.length;
  const bottom = CURVE_TOP + plotH;
  const x = (rate) => CURVE_LEFT + (plotW * Math.max(0, Math.min(rate, xMax))) / xMax;
  const y = (ms) => {
    const v = Math.min(Math.max(ms, yLo), yHi);
    const f = (Math.log10(v) - Math.log10(yLo)) / (Math.log10(yHi) - Math.log10(yLo));
    return CURVE_TOP + plotH * (1 - f);
  };
  const root = svg("svg", {
    class: "chart chart-curves",
    id: chartId,
    viewBox: `0 0 ${CURVE_WIDTH} ${num(height)}`,
    width: CURVE_WIDTH,
    height: num(height),
    role: "img",
    "aria-labelledby": `${chartId}-title ${chartId}-desc`,
    dataset: { kind: "curves", chart: chart.id },
  });
  root.append(svg("title", { id: `${chartId}-title` }, chart.title), svg("desc", { id: `${chartId}-desc` }, chart.description));
  for (let tick = 0; tick <= xMax + step * 1e-9; tick += step) {
    const tx = num(x(tick));
    root.append(
      svg("line", { class: "grid", x1: tx, x2: tx, y1: CURVE_TOP, y2: num(bottom) }),
      svg("text", { class: "tick", x: tx, y: num(bottom + 14), "text-anchor": "middle" }, tickLabel(tick, step)),
    );
  }
  for (let decade = yLo; decade <= yHi * 1.0001; decade *= 10) {
    const ty = num(y(decade));
    root.append(
      svg("line", { class: "grid", x1: CURVE_LEFT, x2: CURVE_WIDTH - CURVE_RIGHT, y1: ty, y2: ty }),
      svg("text", { class: "tick", x: CURVE_LEFT - 6, y: num(y(decade) + 4), "text-anchor": "end" }, String(decade)),
    );
  }
  root.append(
    svg("text", { class: "axis-label", x: num(CURVE_LEFT + plotW / 2), y: num(bottom + 32), "text-anchor": "middle" }, "offered rate (requests per second)"),
    svg("text", { class: "axis-label", x: 4, y: CURVE_TOP - 10 }, "latency (ms, log scale)"),
  );
  if (chart.objective_ms) {
    const oy = num(y(chart.objective_ms));
    root.append(
      svg("line", { class: "objective", x1: CURVE_LEFT, x2: CURVE_WIDTH - CURVE_RIGHT, y1: oy, y2: oy, stroke: "#b00020", "stroke-dasharray": "6 4" }),
      svg("text", { class: "objective", x: CURVE_WIDTH - CURVE_RIGHT - 4, y: num(y(chart.objective_ms) - 4), "text-anchor": "end", fill: "#b00020" }, chart.objective_text),
    );
  }
  for (const s of chart.series) {
    const group = svg("g", { class: "series", dataset: { target: s.label } });
    const ordered = [...s.points].sort((a, b) => a.rate - b.rate);
    for (const [key, dash] of [["p99", null], ["p50", "4 3"]]) {
      const d = ordered.map((p, i) => `${i === 0 ? "M" : "L"}${num(x(p.rate))} ${num(y(p[key]))}`).join(" ");
      if (d) group.append(svg("path", { class: `line-${key}`, d, fill: "none", stroke: s.colour, "stroke-width": 1.3, "stroke-dasharray": dash }));
    }
    for (const p of ordered) {
      const opacity = p.held ? null : 0.45;
      group.append(
        svg("circle", { class: "p99", cx: num(x(p.rate)), cy: num(y(p.p99)), r: 3.5, fill: s.colour, opacity, dataset: { rate: p.rate, p99: p.p99 } }, svg("title", {}, `${s.label}: ${p.text}`)),
        svg("rect", { class: "p50", x: num(x(p.rate) - 3), y: num(y(p.p50) - 3), width: 6, height: 6, fill: "none", stroke: s.colour, opacity, dataset: { rate: p.rate, p50: p.p50 } }, svg("title", {}, `${s.label}: ${p.text}`)),
      );
    }
    if (s.knee) {
      const kx = num(x(s.knee));
      group.append(
        svg("line", { class: "knee", x1: kx, x2: kx, y1: CURVE_TOP, y2: num(bottom), stroke: s.colour, "stroke-width": 2, "stroke-dasharray": "2 3", dataset: { knee: s.knee } }, svg("title", {}, `${s.label}: ${s.knee_text}`)),
      );
    }
    root.append(group);
  }
  let ly = CURVE_HEIGHT + 4;
  for (const s of chart.series) {
    root.append(
      svg(
        "g",
        { class: "legend-row" },
        svg("circle", { cx: CURVE_LEFT + 6, cy: num(ly - 4), r: 4, fill: s.colour }),
        svg("text", { x: CURVE_LEFT + 16, y: num(ly) }, `${s.label}: knee ${s.knee_text || "none"}`),
      ),
    );
    ly += 18;
  }
  return root;
}
