(function () {
  "use strict";
  // Sortable tables (click a header) that show their first rows, all of them on demand.
  function key(cell) {
    var v = cell.getAttribute("data-sort");
    if (v === null) { v = cell.textContent.trim(); }
    if (v === "" || v === "\u2014") { return null; }
    var n = Number(v);
    return isNaN(n) ? v.toLowerCase() : n;
  }
  function compare(a, b) {
    if (a === null) { return b === null ? 0 : 1; }
    if (b === null) { return -1; }
    if (typeof a === typeof b) { return a < b ? -1 : a > b ? 1 : 0; }
    return typeof a === "number" ? -1 : 1;
  }
  function limit(table) {
    var visible = Number(table.getAttribute("data-visible") || "0");
    var all = table.getAttribute("data-expanded") === "1" || visible <= 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r, i) {
      r.classList.toggle("extra", !all && i >= visible);
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, idx) {
      th.addEventListener("click", function () {
        var asc = th.getAttribute("aria-sort") !== "ascending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (r1, r2) {
          var a = key(r1.cells[idx]), b = key(r2.cells[idx]);
          if (a === null || b === null) { return compare(a, b); }
          return asc ? compare(a, b) : compare(b, a);
        });
        rows.forEach(function (r) { body.appendChild(r); });
        limit(table);
      });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("button.showall"), function (button) {
    var table = document.getElementById(button.getAttribute("data-table"));
    if (!table) { return; }
    var label = button.textContent;
    button.addEventListener("click", function () {
      var open = table.getAttribute("data-expanded") === "1";
      table.setAttribute("data-expanded", open ? "0" : "1");
      button.textContent = open ? label : "Show the first " + table.getAttribute("data-visible") + " only";
      button.setAttribute("aria-expanded", open ? "false" : "true");
      limit(table);
    });
  });
}());
