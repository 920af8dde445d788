// Building the page with DOM calls only: text goes in as text nodes, never as HTML, so a
// gateway name, a spec title or an error message can never become markup.

const SVG_NS = "http://www.w3.org/2000/svg";

function apply(el, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset") {
      for (const [k, v] of Object.entries(value)) el.dataset[k] = String(v);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: h("p", {class: "x"}, "text", h("code", {}, "more")). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/** Replace an element's children (nulls and falses are skipped, strings become text). */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** An SVG element, same calling convention as h(). */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

/** Text only visible to screen readers (a status symbol's meaning, a "best" mark). */
export function srOnly(text) {
  return h("span", { class: "sr-only" }, text);
}

/** "2026-01-01 12:00:00 UTC" from epoch seconds: the same everywhere, whatever the locale. */
export function when(epochSeconds) {
  if (typeof epochSeconds !== "number" || !Number.isFinite(epochSeconds)) return "–";
  return new Date(epochSeconds * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC";
}

/** "25 MB", "812 kB", "530 bytes". */
/** A duration in seconds as the terminal's progress line writes it: 4:05, 1:02:03. */
export function clock(seconds) {
  const whole = Math.max(0, Math.round(seconds));
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const two = (n) => String(n).padStart(2, "0");
  return h ? `${h}:${two(m)}:${two(s)}` : `${m}:${two(s)}`;
}

export function size(bytes) {
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(bytes >= 1e7 ? 0 : 1)} MB`;
  if (bytes >= 1e3) return `${(bytes / 1e3).toFixed(0)} kB`;
  return `${bytes} bytes`;
}

const STATUS_SYMBOL = {
  queued: "…",
  received: "…",
  parsed: "…",
  rendered: "…",
  provisioning: "▶",
  loading: "▶",
  scoring: "▶",
  done: "✓",
  partial: "◐",
  failed: "✗",
};

/** A run's status as words (with a symbol and a colour that only repeat them). */
export function statusBadge(status, extra = "") {
  const text = extra ? `${status} ${extra}` : status;
  return h(
    "span",
    { class: `status status-${status}`, dataset: { status } },
    h("span", { "aria-hidden": "true", class: "symbol" }, STATUS_SYMBOL[status] || "•"),
    " ",
    text,
  );
}
