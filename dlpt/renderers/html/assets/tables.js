/* dlpt report: the top-down, bottom-up and flat tables, all on D.TreeTable.
 *
 * Top-down rows are tree nodes. Bottom-up rows are computed lazily for the current metric:
 * a top-level row groups every node with a self value by (kind, name, file, line); its child
 * rows group those nodes' callers, carrying the self value along each caller chain (the same
 * inversion as dlpt.processors.invert). Flat rows come precomputed from Python
 * (dlpt.processors.flatten_by_line / flatten_by_kind), as one value per metric key. */
(function (D) {
  "use strict";

  /* A node's label: kind swatch, location, function, source text or name, markers, detail. */
  D.nodeLabel = function (m, id, colors) {
    var kind = m.kind[id], span = D.el("span", { className: "label k-" + kind });
    if (colors) span.appendChild(D.el("span", { className: "swatch", style: { background: colors[id] } }));
    if (kind === "frame") {
      span.appendChild(D.el("span", { className: "loc", text: m.location(id) }));
      span.appendChild(D.el("span", { className: "fn", text: m.name(id) }));
      var t = m.text(id);
      if (t) span.appendChild(D.el("code", { className: "src", text: t }));
    } else if (kind === "root") {
      span.appendChild(D.el("span", { className: "fn", text: "all" }));
    } else {
      span.appendChild(D.el("span", { className: "nm", text: m.label(id) }));
    }
    if (m.mark(id)) span.appendChild(D.el("span", { className: "mark", text: "\u26a0 " + m.mark(id) }));
    if (m.detail(id)) span.appendChild(D.el("span", { className: "detail", text: m.detail(id) }));
    return span;
  };

  function nodeKey(m, i) { return m.kind[i] + "\u0001" + m.name(i) + "\u0001" + m.file(i) + "\u0001" + m.line(i); }

  /* Numeric columns shared by the tree tables. value(row) gives raw totals; the text is per
   * step when the report shows per-step values. */
  function columns(app, v, self, count, kernels) {
    var m = app.model, cols = [
      { label: "total", value: v, bar: function (r, x) { return 100 * x / app.total(); },
        text: function (r, x) { return app.fmt(x); }, title: "inclusive: this row and everything below it" },
      { label: "%", value: v, text: function (r, x) { return D.fmtPct(x, app.total()); } },
      { label: "self", value: self, text: function (r, x) { return x ? app.fmt(x) : ""; },
        title: "exclusive: recorded on this row itself" },
      { label: "count", value: count, text: function (r, x) { return x ? D.fmtCount(x / app.scale()) : ""; },
        title: "calls of an op, launches of a kernel, copies, syncs" }
    ];
    if (m.get(0, "kernels", true) > 0) {
      cols.push({ label: "kernels", value: kernels, text: function (r, x) { return x ? D.fmtCount(x / app.scale()) : ""; },
                  title: "kernel launches at or below this row" });
    }
    return cols;
  }

  D.TopDown = function (host, app) {
    var m = app.model;
    var cols = columns(app,
      function (i) { return m.value(app.metric, i, true); },
      function (i) { return m.value(app.metric, i, false); },
      function (i) { return m.count(i); },
      function (i) { return m.get(i, "kernels", true); });
    cols.push({ label: "name", text: function (i) { return m.label(i); } });
    this.table = new D.TreeTable(host, {
      columns: cols,
      key: function (i) { return String(i); },
      roots: function () { return [0]; },
      kids: function (i) { return m.kids[i].filter(function (k) { return m.value(app.metric, k, true) > 0; }); },
      name: function (i) { return D.nodeLabel(m, i, app.colors); },
      onSelect: function (i) { app.select(i, "table"); },
      expandFirst: function (i, depth) { return depth < 30 && m.value(app.metric, i, true) >= 0.05 * app.total(); },
      empty: function () { return "No " + app.metric.label + " recorded."; }
    });
  };
  D.TopDown.prototype.refresh = function () { this.table.reset(); };
  /* Show node id's row: its ancestors expanded, the row highlighted. */
  D.TopDown.prototype.reveal = function (id, model) {
    this.table.reveal(model.ancestors(id).map(String));
  };

  D.BottomUp = function (host, app) {
    var m = app.model;
    function value(r) {
      var v = 0;
      for (var j = 0; j < r.origins.length; j++) v += m.value(app.metric, r.origins[j], false);
      return v;
    }
    function group(pairs, prefix) {
      var byKey = {}, out = [];
      pairs.forEach(function (p) {
        var k = nodeKey(m, p[0]), r = byKey[k];
        if (!r) { r = byKey[k] = { key: prefix + "\u0002" + k, nodes: [], origins: [], top: prefix === "" }; out.push(r); }
        r.nodes.push(p[0]);
        r.origins.push(p[1]);
      });
      return out;
    }
    var cols = columns(app, value,
      function (r) { return r.top ? value(r) : 0; },
      function (r) { var c = 0; r.origins.forEach(function (o) { c += m.count(o); }); return r.top ? c : 0; },
      function (r) { var c = 0; r.origins.forEach(function (o) { c += m.get(o, "kernels", false); }); return c; });
    cols.push({ label: "name", text: function (r) { return m.label(r.nodes[0]); } });
    this.table = new D.TreeTable(host, {
      columns: cols,
      key: function (r) { return r.key; },
      roots: function () {
        var pairs = [];
        for (var i = 0; i < m.n; i++) if (m.value(app.metric, i, false) > 0) pairs.push([i, i]);
        return group(pairs, "");
      },
      kids: function (r) {
        var pairs = [];
        for (var j = 0; j < r.nodes.length; j++) {
          var p = m.parent[r.nodes[j]];
          if (p > 0) pairs.push([p, r.origins[j]]);
        }
        return group(pairs, r.key);
      },
      name: function (r) { return D.nodeLabel(m, r.nodes[0], app.colors); },
      onSelect: function (r) { app.highlight(r.nodes, m.label(r.nodes[0])); },
      limit: 100,
      rootLimit: 500,
      empty: function () { return "No " + app.metric.label + " recorded."; }
    });
  };
  D.BottomUp.prototype.refresh = function () { this.table.reset(); };

  var FLAT_KINDS = [["line", "By source line"], ["op", "By op"], ["kernel", "By kernel"]];

  D.Flat = function (host, app) {
    var m = app.model, self = this;
    this.app = app;
    this.kind = "line";
    var bar = D.el("div", { className: "seg" });
    this.buttons = {};
    FLAT_KINDS.forEach(function (fk) {
      if (!app.raw.flat[fk[0]].length) return;
      var b = D.el("button", { text: fk[1], on: { click: function () { self.show(fk[0]); } } });
      self.buttons[fk[0]] = b;
      bar.appendChild(b);
    });
    host.appendChild(bar);
    var box = D.el("div");
    host.appendChild(box);
    var ck = m.keyIndex;
    function countOf(r) {
      var kind = m.kind[r[0]];
      if (kind === "kernel") return r[2][ck.kernels];
      if (kind === "op") return r[2][ck.calls];
      return 0;
    }
    var cols = columns(app,
      function (r) { return m.vecValue(app.metric, r[1]); },
      function (r) { return m.vecValue(app.metric, r[2]); },
      countOf,
      function (r) { return r[1][ck.kernels]; });
    // Lines of a session with per-step spreads carry their 95% half-width (docs/numbers.md).
    var lines = app.raw.flat.line;
    if (lines.length && lines[0].length > 3) {
      cols.splice(1, 0, { label: "\u00b195%", value: function (r) { return r.length > 3 ? m.vecValue(app.metric, r[3]) : 0; },
        text: function (r, x) { return r.length > 3 && x ? "\u00b1" + app.fmt(x) : ""; },
        title: "95% interval of the total per step (t on the per-step spread; docs/numbers.md)" });
    }
    cols.push({ label: "name", text: function (r) { return m.label(r[0]); } });
    this.table = new D.TreeTable(box, {
      columns: cols,
      key: function (r) { return self.kind + ":" + r[0]; },
      roots: function () {
        return app.raw.flat[self.kind].filter(function (r) { return m.vecValue(app.metric, r[1]) > 0; });
      },
      name: function (r) { return D.nodeLabel(m, r[0], app.colors); },
      onSelect: function (r) {
        var id = r[0];
        if (m.kind[id] === "frame") app.showLine(m.file(id), m.line(id));
        else app.highlightName(m.kind[id], m.name(id));
      },
      rootLimit: 500,
      empty: function () { return "No " + app.metric.label + " recorded."; }
    });
    this.show("line");
  };
  D.Flat.prototype.show = function (kind) {
    this.kind = kind;
    for (var k in this.buttons) this.buttons[k].className = k === kind ? "on" : "";
    this.table.reset();
  };
  D.Flat.prototype.refresh = function () { this.table.reset(); };
})(window.dlpt = window.dlpt || {});
