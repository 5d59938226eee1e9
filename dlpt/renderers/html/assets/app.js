/* dlpt report: the page. Reads the embedded model, builds the top bar (metric, per-step
 * values, search), the header facts, the flame graph with its breadcrumb and legend, and the
 * tabs (top-down, bottom-up, flat, source), and keeps them in step: one metric, one selected
 * node, one highlight. */
(function (D) {
  "use strict";

  var TABS = [["topdown", "Top-down"], ["bottomup", "Bottom-up"], ["flat", "Flat"], ["source", "Source"]];

  function App(raw) {
    this.raw = raw;
    this.model = new D.Model(raw);
    var m = this.model;
    this.metric = m.metrics[raw.metric] || m.metricList[0] ||
      { name: "gpu", label: "GPU time", unit: "ns", idx: [m.keyIndex.gpu_ns] };
    this.per = m.steps > 0;
    this.views = {};
    this.tab = null;
  }

  var P = App.prototype;

  P.scale = function () { return this.per && this.model.steps > 0 ? this.model.steps : 1; };
  P.perStep = function () { return this.scale() > 1; };
  P.fmt = function (v) { return D.fmtUnit(this.metric.unit, v / this.scale()); };
  P.fmtUnit = function (unit, v) { return D.fmtUnit(unit, v / this.scale()); };
  P.fmtTime = function (v) { return D.fmtTime(v / this.scale()); };
  P.total = function () { return this.model.total(this.metric); };

  P.build = function (root) {
    var self = this, m = this.model;
    this.colors = null;

    /* Top bar. */
    var select = D.el("select", { attrs: { id: "metric", "aria-label": "metric" },
      on: { change: function () { self.setMetric(select.value); } } });
    m.metricList.forEach(function (mt) {
      var o = D.el("option", { text: mt.label, attrs: { value: mt.name } });
      if (mt.name === self.metric.name) o.selected = true;
      select.appendChild(o);
    });
    var per = D.el("input", { attrs: { type: "checkbox", id: "perstep" } });
    per.checked = this.per;
    per.disabled = !(m.steps > 0);
    per.addEventListener("change", function () { self.per = per.checked; self.refresh(); });
    this.searchBox = D.el("input", { attrs: { type: "search", id: "search", placeholder: "Search kernels, ops, lines\u2026",
      "aria-label": "search", autocomplete: "off", spellcheck: "false" } });
    this.searchStatus = D.el("span", { className: "search-status" });
    this.searchBox.addEventListener("input", D.debounce(function () { self.search(self.searchBox.value); }, 120));
    this.searchBox.addEventListener("keydown", function (e) {
      if (e.key === "Escape") { self.searchBox.value = ""; self.search(""); }
    });
    root.appendChild(D.el("header", { className: "topbar" },
      D.el("span", { className: "brand", text: "dlpt" }),
      D.el("span", { className: "title", text: this.raw.header.title, title: this.raw.header.title }),
      D.el("span", { className: "spacer" }),
      D.el("label", { className: "ctl" }, D.el("span", { text: "metric" }), select),
      D.el("label", { className: "ctl", title: m.steps > 0 ? "divide by the " + m.steps + " profiled steps" : "no steps were detected" },
        per, D.el("span", { text: m.steps > 0 ? "per step (/" + m.steps + ")" : "per step" })),
      D.el("span", { className: "search" }, this.searchBox, this.searchStatus)));

    var main = D.el("main");
    root.appendChild(main);
    D.renderHeader(main, this.raw.header, this);

    /* Flame graph. */
    var flame = D.el("section", { className: "panel flame" });
    this.crumbs = D.el("nav", { className: "crumbs", attrs: { "aria-label": "zoom path" } });
    this.selection = D.el("div", { className: "selection" });
    var legend = D.el("div", { className: "legend" });
    D.LEGEND.forEach(function (l) {
      legend.appendChild(D.el("span", { className: "legend-item" },
        D.el("span", { className: "swatch", style: { background: D.hsl(l[1]) } }), l[0]));
    });
    flame.appendChild(D.el("div", { className: "panel-head" },
      D.el("h2", { text: "Flame graph" }),
      D.el("span", { className: "muted", text: "click to zoom \u00b7 Esc zooms out \u00b7 hover for details" }),
      D.el("span", { className: "spacer" }), legend));
    flame.appendChild(this.crumbs);
    main.appendChild(flame);
    this.flame = new D.Flame(flame, m, this);
    this.colors = this.flame.colors;
    flame.appendChild(this.selection);
    if (!this.raw.show_all) {
      flame.appendChild(D.el("div", { className: "muted foot",
        text: "Library frames (torch, site-packages, stdlib) are folded into their callers; regenerate with --show-all to keep them." }));
    }

    /* The timeline window (--timeline N), when the session holds one. */
    if (this.raw.timeline) this.timeline = new D.Timeline(main, this.raw.timeline, this.raw.strings);

    /* Tabs. */
    var tabs = D.el("section", { className: "panel tabs" });
    var bar = D.el("div", { className: "tabbar", attrs: { role: "tablist" } });
    this.tabButtons = {};
    this.panes = {};
    var body = D.el("div", { className: "tabbody" });
    TABS.forEach(function (t) {
      var b = D.el("button", { text: t[1], attrs: { role: "tab", "data-tab": t[0] },
        on: { click: function () { self.showTab(t[0]); } } });
      self.tabButtons[t[0]] = b;
      bar.appendChild(b);
      self.panes[t[0]] = D.el("div", { className: "pane", attrs: { role: "tabpanel", "data-pane": t[0] } });
      body.appendChild(self.panes[t[0]]);
    });
    tabs.appendChild(bar);
    tabs.appendChild(body);
    main.appendChild(tabs);

    this.flame.setMetric(this.metric);
    this.selected = -1;
    this._crumbs();
    this.showTab("topdown");
  };

  P.view = function (name) {
    if (!this.views[name]) {
      var ctor = { topdown: D.TopDown, bottomup: D.BottomUp, flat: D.Flat, source: D.SourceView }[name];
      this.views[name] = new ctor(this.panes[name], this);
      this.views[name].dirty = true;
    }
    return this.views[name];
  };

  P.showTab = function (name) {
    this.tab = name;
    for (var k in this.panes) {
      this.panes[k].style.display = k === name ? "block" : "none";
      this.tabButtons[k].className = k === name ? "on" : "";
      this.tabButtons[k].setAttribute("aria-selected", k === name ? "true" : "false");
    }
    var v = this.view(name);
    if (v.dirty) { v.dirty = false; v.refresh(); }
  };

  /* Re-render after a metric or per-step change; hidden views refresh when shown. */
  P.refresh = function () {
    this.flame.setMetric(this.metric);
    if (this.searchBox.value) this.search(this.searchBox.value);
    for (var k in this.views) this.views[k].dirty = true;
    this.showTab(this.tab);
    this._selectionBar();
  };

  P.setMetric = function (name) {
    if (!this.model.metrics[name]) return;
    this.metric = this.model.metrics[name];
    this.refresh();
  };

  /* Select node id: zoom the flame graph to it and show it in the selection bar. */
  P.select = function (id, from) {
    this.selected = id;
    this.flame.setSelected(id);
    this.flame.zoomTo(id);
    this._crumbs();
    this._selectionBar();
    if (from === "table") this.flame.wrap.scrollIntoView({ block: "nearest" });
    else if (this.views.topdown && !this.views.topdown.dirty) this.views.topdown.reveal(id, this.model);
  };

  P._crumbs = function () {
    var self = this, m = this.model, c = D.clear(this.crumbs), anc = m.ancestors(this.flame.zoom);
    anc.forEach(function (id, i) {
      if (i) c.appendChild(D.el("span", { className: "sep", text: "\u203a" }));
      var label = id === 0 ? "all" : m.kind[id] === "frame" ? m.location(id) + " " + m.name(id) : m.label(id);
      c.appendChild(D.el("button", { className: "crumb" + (i === anc.length - 1 ? " on" : ""), text: label,
        title: m.label(id), on: { click: function () { self.select(id, "crumb"); } } }));
    });
  };

  P._selectionBar = function () {
    var self = this, m = this.model, id = this.selected, s = D.clear(this.selection);
    if (id === undefined || id < 0) {
      s.appendChild(D.el("span", { className: "muted", text: "Click a bar to zoom into it; its row then shows here." }));
      return;
    }
    var v = m.value(this.metric, id, true);
    s.appendChild(D.nodeLabel(m, id, this.colors));
    s.appendChild(D.el("span", { className: "sel-val", text: this.fmt(v) + " \u00b7 " + D.fmtPct(v, this.total()) + " of " + this.metric.label }));
    if (m.kind[id] === "frame" && m.file(id)) {
      s.appendChild(D.el("button", { className: "btn", text: "Show source",
        on: { click: function () { self.showLine(m.file(id), m.line(id)); } } }));
    }
  };

  P.search = function (q) {
    this.highlightLabel = null;
    var r = this.flame.search(q);
    this._searchStatus(q ? r : null, q);
  };

  P._searchStatus = function (r, what) {
    var s = this.searchStatus;
    D.clear(s);
    if (!r) return;
    /* Ops and kernels apart from source lines: each total counts a matched node once. */
    var self = this;
    function part(g, kind, cls) {
      return D.el("span", { className: "search-part " + cls, text: g.count + " " + kind + " match" +
        (g.count === 1 ? "" : "es") + " \u00b7 " + self.fmt(g.value) + " (" + D.fmtPct(g.value, self.total()) + ")" });
    }
    if (!r.count) s.appendChild(D.el("span", { text: "no match" }));
    if (r.names && r.names.count) s.appendChild(part(r.names, "op/kernel", "search-names"));
    if (r.names && r.names.count && r.lines && r.lines.count) s.appendChild(D.el("span", { className: "search-sep", text: " | " }));
    if (r.lines && r.lines.count) s.appendChild(part(r.lines, "line", "search-lines"));
    if (what !== undefined && this.highlightLabel) {
      s.appendChild(D.el("button", { className: "link", text: " \u2715 " + this.highlightLabel,
        title: "clear the highlight", on: { click: function () { self.search(""); } } }));
    }
  };

  /* Highlight given nodes in the flame graph (a bottom-up row, a line, a kernel name). */
  P.highlight = function (ids, label) {
    var match = new Uint8Array(this.model.n);
    ids.forEach(function (i) { match[i] = 1; });
    this.searchBox.value = "";
    this.highlightLabel = label;
    var r = this.flame.setMatches(match);
    this._searchStatus(r, label);
    this.flame.wrap.scrollIntoView({ block: "nearest" });
  };

  P.highlightName = function (kind, name) {
    var m = this.model, ids = [];
    for (var i = 0; i < m.n; i++) if (m.kind[i] === kind && m.name(i) === name) ids.push(i);
    this.highlight(ids, name);
  };

  P.showLine = function (file, line) {
    this.showTab("source");
    this.view("source").show(file, line);
    this.panes.source.scrollIntoView({ block: "start" });
  };

  D.boot("report", App);
})(window.dlpt = window.dlpt || {});
