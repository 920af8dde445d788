// Charts drawn in the browser from the server's chart views (gatebench.web._views), with
// the same layout as the HTML report's inline SVG (src/gatebench/report/_svg.py):
// horizontal bars in groups (a group per workload, a bar per target), an optional 95 %
// confidence whisker, the baseline striped, every number printed beside its bar, and a
// title and description for screen readers. Nothing depends on colour alone.

import { svg } from "./dom.js";

const ROW = 20;
const BAR = 13;
const GROUP_HEADER = 22;
const AXIS = 24;
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

/** One <svg> for a chart view: {id, kind, title, description, axis, max, groups}. */
export function drawChart(chart, idPrefix = "") {
  const chartId = `${idPrefix}chart-${chart.id}`;
  const bars = chart.groups.flatMap((g) => g.bars);
  const labelWidth = Math.min(240, Math.max(70, 12 + CHAR * Math.max(4, ...bars.map((b) => b.label.length))));
  const top = Math.max(0, ...bars.map((b) => b.value || 0), ...bars.map((b) => (b.high == null ? 0 : b.high)));
  let scaleMax = chart.max;
  const step = niceStep(scaleMax || top || 1);
  if (scaleMax == null) scaleMax = step * Math.ceil((top || 1) / step);
  const height = AXIS + chart.groups.reduce((sum, g) => sum + GROUP_HEADER + ROW * g.bars.length, 0) + 8;
  const width = labelWidth + PLOT_WIDTH + VALUE_WIDTH;
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
  for (let tick = 0; tick <= scaleMax + step * 1e-9; tick += step) {
    const tx = num(x(tick));
    root.append(
      svg("line", { class: "grid", x1: tx, x2: tx, y1: AXIS - 4, y2: num(height - 8) }),
      svg("text", { class: "tick", x: tx, y: AXIS - 8, "text-anchor": "middle" }, tickLabel(tick, step)),
    );
  }
  root.append(svg("text", { class: "axis-label", x: 4, y: AXIS - 8 }, chart.axis));

  let y = AXIS;
  for (const group of chart.groups) {
    root.append(svg("text", { class: "group", x: 4, y: num(y + GROUP_HEADER - 7) }, group.title));
    y += GROUP_HEADER;
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
