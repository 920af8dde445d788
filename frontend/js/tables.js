// Tables from the server's table views: printed cells, numeric columns right-aligned,
// row headers, keyboard-operable sort buttons (aria-sort says the order), the best value
// marked in words as well as in bold.

import { h, srOnly } from "./dom.js";

function sortKey(cell) {
  const raw = cell.dataset.sort;
  if (raw === undefined || raw === "") return cell.textContent.trim().toLowerCase();
  const n = Number(raw);
  return Number.isNaN(n) ? raw : n;
}

function makeSortable(table) {
  const heads = Array.from(table.tHead.rows[0].cells);
  heads.forEach((th, index) => {
    const button = th.querySelector("button");
    if (!button) return;
    button.addEventListener("click", () => {
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach((other) => other.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = sortKey(a.cells[index]);
        const y = sortKey(b.cells[index]);
        return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
      });
      rows.forEach((row) => body.append(row));
    });
  });
}

/** Several tables; a legend shared with the table before is not repeated. */
export function drawTables(views, idPrefix = "") {
  let previous = null;
  return views.map((view) => {
    const block = drawTable(view, idPrefix, view.legend !== previous);
    previous = view.legend;
    return block;
  });
}

/** A <table> for a table view: {id, caption, legend, columns, rows}. */
export function drawTable(view, idPrefix = "", withLegend = true) {
  const head = h(
    "tr",
    {},
    view.columns.map((col) =>
      h("th", { scope: "col", class: col.numeric ? "num" : null }, h("button", { type: "button" }, col.label)),
    ),
  );
  const body = h(
    "tbody",
    {},
    view.rows.map((row) =>
      h(
        "tr",
        {},
        h(
          "th",
          { scope: "row", "data-sort": row.header },
          row.header,
          (row.tags || []).map((tag) => h("span", { class: "tag" }, tag)),
        ),
        row.cells.map((cell, i) =>
          h(
            "td",
            { class: view.columns[i + 1] && view.columns[i + 1].numeric ? "num" : null, "data-sort": cell.sort ?? "" },
            cell.best ? h("strong", { class: "best" }, cell.text, srOnly(" (best)")) : cell.text,
            (cell.tags || []).map((tag) => h("span", { class: `tag tag-${tag.split(" ")[0]}` }, tag)),
          ),
        ),
      ),
    ),
  );
  const table = h(
    "table",
    { class: "sortable", id: `${idPrefix}table-${view.id}` },
    h("caption", {}, view.caption),
    h("thead", {}, head),
    body,
  );
  makeSortable(table);
  const legend = withLegend && view.legend ? h("p", { class: "legend" }, view.legend) : null;
  return h("div", { class: "table-block" }, legend, h("div", { class: "scroll" }, table));
}
