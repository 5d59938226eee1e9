/* dlpt report: a sortable table whose rows may expand into child rows (top-down and bottom-up
 * trees; flat tables are the same table without children).
 *
 * The caller describes rows through callbacks, so one component serves node-backed rows
 * (top-down), lazily computed caller groups (bottom-up) and flat profile rows. Only expanded
 * rows exist in the DOM; a parent shows its largest children first and at most `limit` of
 * them, with a row that reveals the rest. */
(function (D) {
  "use strict";

  /* opts: columns [{label, value(row) -> number, text(row, value) -> string, bar: bool,
   *                 cls(row, value) -> extra class, title}], name(row) -> Node, key(row) -> string, roots() -> rows,
   *       kids(row) -> rows (optional), onSelect(row), expandFirst(row, depth) -> bool,
   *       limit (rows per parent), empty (text when there are no rows). */
  D.TreeTable = function (host, opts) {
    this.o = opts;
    this.sortCol = 0;
    this.sortDir = -1;
    this.open = {};        /* key -> true for expanded rows */
    this.showAll = {};     /* key -> true where the parent shows every child */
    this.kidCache = {};
    this.selectedKey = null;
    this.table = D.el("table", { className: "tt" });
    this.thead = D.el("thead");
    this.tbody = D.el("tbody");
    this.table.appendChild(this.thead);
    this.table.appendChild(this.tbody);
    this.note = D.el("div", { className: "tt-empty" });
    host.appendChild(this.table);
    host.appendChild(this.note);
  };

  var P = D.TreeTable.prototype;

  /* Forget rows and expansion (after a metric change the rows themselves change). */
  P.reset = function () {
    this.open = {};
    this.showAll = {};
    this.kidCache = {};
    this._autoOpened = false;
    this.render();
  };

  /* Expand the rows on a path (keys, outermost first) and highlight its last row. */
  P.reveal = function (keys) {
    for (var i = 0; i < keys.length - 1; i++) this.open[keys[i]] = true;
    this.selectedKey = keys[keys.length - 1];
    this.render();
  };

  P._kids = function (row) {
    if (!this.o.kids) return [];
    var k = this.o.key(row);
    if (!this.kidCache[k]) this.kidCache[k] = this.o.kids(row);
    return this.kidCache[k];
  };

  P._sorted = function (rows) {
    var col = this.o.columns[this.sortCol], dir = this.sortDir;
    if (col.value) {
      return rows.slice().sort(function (a, b) { return dir * ((col.value(a) || 0) - (col.value(b) || 0)); });
    }
    return rows.slice().sort(function (a, b) {
      var x = col.text(a), y = col.text(b);
      return dir * (x < y ? -1 : x > y ? 1 : 0);
    });
  };

  P._header = function () {
    var self = this, tr = D.el("tr");
    this.o.columns.forEach(function (c, i) {
      var arrow = i === self.sortCol ? (self.sortDir < 0 ? " \u25be" : " \u25b4") : "";
      tr.appendChild(D.el("th", {
        className: (c.value ? "num" : "name") + (i === self.sortCol ? " sorted" : ""),
        text: c.label + arrow, title: c.title || "sort by " + c.label,
        on: { click: function () {
          if (self.sortCol === i) self.sortDir = -self.sortDir;
          else { self.sortCol = i; self.sortDir = c.value ? -1 : 1; }
          self.render();
        } }
      }));
    });
    D.clear(this.thead).appendChild(tr);
  };

  P.render = function () {
    this._header();
    var frag = document.createDocumentFragment();
    var roots = this._sorted(this.o.roots());
    if (!this._autoOpened && this.o.expandFirst) {
      this._autoOpened = true;
      var stack = roots.map(function (r) { return [r, 0]; });
      var opened = 0;
      while (stack.length && opened < 60) {
        var it = stack.shift();
        if (this.o.expandFirst(it[0], it[1]) && this._kids(it[0]).length) {
          this.open[this.o.key(it[0])] = true;
          opened++;
          this._kids(it[0]).forEach(function (k) { stack.push([k, it[1] + 1]); });
        }
      }
    }
    this._rows(frag, roots, 0, null);
    D.clear(this.tbody).appendChild(frag);
    var empty = typeof this.o.empty === "function" ? this.o.empty() : this.o.empty;
    this.note.textContent = roots.length ? "" : (empty || "Nothing to show.");
    this.note.style.display = roots.length ? "none" : "block";
  };

  P._rows = function (frag, rows, depth, parentKey) {
    var limit = this.o.limit || 200, shown = rows;
    if (parentKey !== null && !this.showAll[parentKey] && rows.length > limit) shown = rows.slice(0, limit);
    if (parentKey === null && rows.length > (this.o.rootLimit || 2000)) shown = rows.slice(0, this.o.rootLimit || 2000);
    for (var i = 0; i < shown.length; i++) {
      var row = shown[i], key = this.o.key(row), kids = this._kids(row);
      frag.appendChild(this._tr(row, key, depth, kids.length > 0));
      if (this.open[key] && kids.length) this._rows(frag, this._sorted(kids), depth + 1, key);
    }
    if (shown.length < rows.length) frag.appendChild(this._moreRow(rows.length - shown.length, depth, parentKey));
  };

  P._moreRow = function (n, depth, parentKey) {
    var self = this, td = D.el("td", { className: "name more", attrs: { colspan: String(this.o.columns.length) } });
    td.style.paddingLeft = (8 + depth * 16 + 18) + "px";
    td.appendChild(D.el("button", { className: "link", text: "\u2026 " + n + " more rows",
      on: { click: function () { if (parentKey !== null) self.showAll[parentKey] = true; else self.o.rootLimit = 1e9; self.render(); } } }));
    return D.el("tr", null, td);
  };

  P._tr = function (row, key, depth, hasKids) {
    var self = this, tr = D.el("tr", { className: key === this.selectedKey ? "selected" : "" });
    tr.dataset.key = key;
    this.o.columns.forEach(function (c) {
      if (!c.value) {
        var td = D.el("td", { className: "name" });
        td.style.paddingLeft = (8 + depth * 16) + "px";
        var tog = D.el("span", { className: "toggle" + (hasKids ? "" : " leaf"),
          text: hasKids ? (self.open[key] ? "\u25be" : "\u25b8") : "" });
        if (hasKids) {
          tog.addEventListener("click", function (e) {
            e.stopPropagation();
            self.open[key] = !self.open[key];
            self.render();
          });
        }
        td.appendChild(tog);
        td.appendChild(self.o.name(row));
        tr.appendChild(td);
        return;
      }
      var v = c.value(row);
      var cell = D.el("td", { className: "num" + (c.cls ? " " + c.cls(row, v) : ""), text: c.text(row, v) });
      if (c.bar && v > 0) {
        var pct = Math.min(100, c.bar(row, v));
        cell.style.background = "linear-gradient(to right, var(--bar) " + pct.toFixed(1) + "%, transparent " + pct.toFixed(1) + "%)";
      }
      tr.appendChild(cell);
    });
    tr.addEventListener("click", function () {
      self.selectedKey = key;
      var prev = self.tbody.querySelector("tr.selected");
      if (prev) prev.className = "";
      tr.className = "selected";
      if (self.o.onSelect) self.o.onSelect(row);
    });
    tr.addEventListener("dblclick", function () {
      if (hasKids) { self.open[key] = !self.open[key]; self.render(); }
    });
    return tr;
  };
})(window.dlpt = window.dlpt || {});
