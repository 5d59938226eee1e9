/* dlpt report: the source view. The profiled files, each line with its cost in the margin (a
 * heat bar of the line's self cost: what the line itself caused, work under deeper user lines
 * counts there), and for a clicked line the kernels, copies, memsets and syncs it caused,
 * split into forward, backward and other work.
 *
 * Source text comes only from the session (meta.sources); a report never reads the files a
 * session names. Without it, the profiled lines are listed with their costs and no text. */
(function (D) {
  "use strict";

  /* Short names of the metrics listed for a clicked line (kernel/copy/memset time are parts of
   * GPU time and left out). */
  var FACT_LABELS = { gpu: "GPU", cpu: "CPU ops", sync: "sync wait", api: "CUDA API", kernels: "kernels",
                      calls: "op calls", bytes: "bytes copied", mem_peak: "memory at the peak",
                      mem_alloc: "memory allocated" };

  D.SourceView = function (host, app) {
    this.app = app;
    this.m = app.model;
    this.file = null;
    this.line = null;
    this.files = D.el("div", { className: "src-files" });
    this.main = D.el("div", { className: "src-main" });
    this.detail = D.el("div", { className: "src-detail" });
    var layout = D.el("div", { className: "src-layout" }, this.files, this.main, this.detail);
    if (!app.raw.has_sources) {
      host.appendChild(D.el("div", { className: "notice",
        text: "This session holds no source text (it was saved by a dlpt that did not store it): " +
              "profiled lines are listed with their costs only." }));
    }
    host.appendChild(layout);
    this._index();
    this._detailEmpty();
  };

  var P = D.SourceView.prototype;

  /* Per file: its profiled lines (flat rows by line) and its stored source lines. */
  P._index = function () {
    var m = this.m, byFile = {};
    function entry(f) { return byFile[f] || (byFile[f] = { file: f, rows: {}, nums: {} }); }
    this.app.raw.flat.line.forEach(function (r) {
      var id = r[0], e = entry(m.file(id));
      e.rows[m.line(id)] = r;
      e.nums[m.line(id)] = true;
    });
    for (var f in m.sources) {
      var e = entry(f);
      for (var n in m.sources[f]) e.nums[n] = true;
    }
    /* PC-sampled kernel files (--pc-sampling; html/pc_model.py): per line [samples, stalls]. */
    var S = m.S, raw = this.app.raw.sampled || {};
    for (var fi in raw) {
      var se = entry(S[+fi]), k = raw[fi];
      se.sampled = { total: k.samples, lines: {}, kernels: k.kernels.map(function (i) { return S[i]; }) };
      k.lines.forEach(function (r) { se.sampled.lines[r[0]] = [r[1], S[r[2]]]; se.nums[r[0]] = true; });
    }
    this.byFile = byFile;
  };

  P._fileCost = function (e) {
    var m = this.m, metric = this.app.metric, v = 0;
    for (var n in e.rows) v += m.vecValue(metric, e.rows[n][2]);
    return v;
  };

  P.refresh = function () {
    var self = this, m = this.m, metric = this.app.metric;
    var list = Object.keys(this.byFile).map(function (f) {
      return { e: self.byFile[f], cost: self._fileCost(self.byFile[f]) };
    });
    list.sort(function (a, b) { return b.cost - a.cost || (a.e.file < b.e.file ? -1 : 1); });
    /* The heat scale: the largest self cost of any line, so bars compare across files. */
    this.maxSelf = 0;
    list.forEach(function (it) {
      for (var n in it.e.rows) self.maxSelf = Math.max(self.maxSelf, m.vecValue(metric, it.e.rows[n][2]));
    });
    D.clear(this.files);
    this.files.appendChild(D.el("div", { className: "pane-title", text: "Files" }));
    list.forEach(function (it) {
      var f = it.e.file;
      var b = D.el("button", { className: "file" + (f === self.file ? " on" : ""), title: f,
        on: { click: function () { self.open(f); } } },
        D.el("span", { className: "file-name", text: D.basename(f) || f }),
        D.el("span", { className: "file-cost", text: it.cost ? self.app.fmt(it.cost) :
          (it.e.sampled ? D.fmtCount(it.e.sampled.total) + " samples" : "") }),
        D.el("span", { className: "file-dir", text: D.dirname(f) }));
      b.dataset.file = f;
      self.files.appendChild(b);
    });
    if (!list.length) this.files.appendChild(D.el("div", { className: "muted pad", text: "No profiled lines." }));
    var first = this.file && this.byFile[this.file] ? this.file : (list.length ? list[0].e.file : null);
    if (first) this.open(first, this.line);
  };

  P.open = function (file, line) {
    var self = this, m = this.m, app = this.app, metric = app.metric, e = this.byFile[file];
    if (!e) return;
    this.file = file;
    this.files.querySelectorAll("button.file").forEach(function (b) {
      b.className = "file" + (b.dataset.file === file ? " on" : "");
    });
    D.clear(this.main);
    this.main.appendChild(D.el("div", { className: "pane-title", text: file, title: file }));
    if (e.sampled) {
      this._openSampled(e, tblHead());
      return;
    }
    var tbl = D.el("table", { className: "code" });
    /* The cost margin (heat, self, total, line number) is pinned: it stays in view while a long
     * line scrolls sideways (report.css, table.code .pin). */
    tbl.appendChild(D.el("tr", null, D.el("th", { className: "heat-h pin pin-0", text: "" }),
      D.el("th", { className: "num pin pin-1", text: "self", title: "the line's own cost (lines it calls count at their own rows)" }),
      D.el("th", { className: "num pin pin-2", text: "total", title: "the line's cost including the lines it calls" }),
      D.el("th", { className: "num pin pin-3", text: "line" }), D.el("th", { text: "" })));
    var nums = Object.keys(e.nums).map(Number).sort(function (a, b) { return a - b; });
    var prev = null, src = m.sources[file] || {};
    nums.forEach(function (n) {
      if (prev !== null && n > prev + 1) {
        tbl.appendChild(D.el("tr", { className: "gap" }, D.el("td", { className: "pin pin-0", attrs: { colspan: "4" } }),
          D.el("td", { text: "\u22ef " + (n - prev - 1) + " line" + (n - prev - 1 === 1 ? "" : "s") + " not stored" })));
      }
      prev = n;
      var r = e.rows[n], own = r ? m.vecValue(metric, r[2]) : 0, tot = r ? m.vecValue(metric, r[1]) : 0;
      var heat = D.el("div", { className: r ? "heat" : "heat none" });
      if (own > 0 && self.maxSelf > 0) {
        var frac = own / self.maxSelf;
        heat.appendChild(D.el("div", { className: "heat-bar", style: {
          width: Math.max(2, 100 * frac).toFixed(1) + "%",
          background: "hsl(" + (48 - 48 * frac).toFixed(0) + ", 90%, " + (62 - 10 * frac).toFixed(0) + "%)" } }));
      }
      var text = src[n];
      var code = D.el("td", { className: "code-text" + (text === undefined ? " missing" : "") },
        text === undefined ? (r ? m.name(r[0]) + "  (source not stored)" : "") : text);
      var tr = D.el("tr", { className: (r && tot > 0 ? "hot" : "") + (n === line ? " selected" : "") },
        D.el("td", { className: "heat-cell pin pin-0", title: own ? "self " + app.fmt(own) + " (" + D.fmtPct(own, app.total()) + " of all)" : "" }, heat),
        D.el("td", { className: "num pin pin-1", text: own ? app.fmt(own) : "" }),
        D.el("td", { className: "num muted pin pin-2", text: tot ? app.fmt(tot) : "" }),
        D.el("td", { className: "num lineno pin pin-3", text: String(n) }), code);
      tr.dataset.line = String(n);
      if (r && tot > 0) tr.addEventListener("click", function () { self.select(n); });
      tbl.appendChild(tr);
    });
    this.main.appendChild(tbl);
    if (line !== null && line !== undefined && e.rows[line]) this.select(line);
    else this._detailEmpty();
  };

  function tblHead() {
    return D.el("table", { className: "code" }, D.el("tr", null, D.el("th", { className: "heat-h pin pin-0", text: "" }),
      D.el("th", { className: "num pin pin-1", text: "samples", title: "PC samples on the line (a sampled estimate)" }),
      D.el("th", { className: "num pin pin-2", text: "%", title: "of the file's samples" }),
      D.el("th", { className: "num pin pin-3", text: "line" }), D.el("th", { text: "top stall reasons" }), D.el("th", { text: "" })));
  }

  /* A kernel file: each line's PC samples in the margin, its top stall reasons beside the code. */
  P._openSampled = function (e, tbl) {
    var src = this.m.sources[e.file] || {}, smp = e.sampled, max = 0, prev = null;
    for (var k in smp.lines) max = Math.max(max, smp.lines[k][0]);
    this.main.appendChild(D.el("div", { className: "muted pad",
      text: "PC samples of " + smp.kernels.join(", ") + " (the sampled steps; a sampled estimate)" }));
    Object.keys(e.nums).map(Number).sort(function (a, b) { return a - b; }).forEach(function (n) {
      if (prev !== null && n > prev + 1) {
        tbl.appendChild(D.el("tr", { className: "gap" }, D.el("td", { className: "pin pin-0", attrs: { colspan: "4" } }),
          D.el("td", { attrs: { colspan: "2" }, text: "\u22ef " + (n - prev - 1) + " line" + (n - prev - 1 === 1 ? "" : "s") + " not stored" })));
      }
      prev = n;
      var r = smp.lines[n], heat = D.el("div", { className: r ? "heat" : "heat none" });
      if (r && max > 0) {
        var frac = r[0] / max;
        heat.appendChild(D.el("div", { className: "heat-bar", style: { width: Math.max(2, 100 * frac).toFixed(1) + "%",
          background: "hsl(" + (48 - 48 * frac).toFixed(0) + ", 90%, " + (62 - 10 * frac).toFixed(0) + "%)" } }));
      }
      var text = src[n], tr;
      tbl.appendChild(tr = D.el("tr", { className: r ? "hot" : "" },
        D.el("td", { className: "heat-cell pin pin-0" }, heat),
        D.el("td", { className: "num pin pin-1", text: r ? D.fmtCount(r[0]) : "" }),
        D.el("td", { className: "num muted pin pin-2", text: r ? D.fmtPct(r[0], smp.total) : "" }),
        D.el("td", { className: "num lineno pin pin-3", text: String(n) }),
        D.el("td", { className: "muted", text: r ? r[1] : "" }),
        D.el("td", { className: "code-text" + (text === undefined ? " missing" : "") }, text === undefined ? "(source not stored)" : text)));
      tr.dataset.line = String(n);
    });
    this.main.appendChild(tbl);
    this._detailEmpty();
  };

  P._detailEmpty = function () {
    this.line = null;
    D.clear(this.detail).appendChild(D.el("div", { className: "muted pad", text: "Click a line with a cost to see its kernels, copies and syncs." }));
  };

  P.select = function (line) {
    var m = this.m, app = this.app, e = this.byFile[this.file], r = e && e.rows[line];
    if (!r) return;
    this.line = line;
    this.main.querySelectorAll("tr.selected").forEach(function (t) { t.classList.remove("selected"); });
    var tr = this.main.querySelector('tr[data-line="' + line + '"]');
    if (tr) {
      tr.classList.add("selected");
      if (tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
    }
    var nodes = m.lineNodes(this.file, line);
    var leaves = m.leavesUnder(nodes);
    var d = D.clear(this.detail), id = r[0];
    d.appendChild(D.el("div", { className: "pane-title" },
      D.el("span", { className: "loc", text: m.location(id) }), D.el("span", { className: "fn", text: " " + m.name(id) })));
    if (m.text(id)) d.appendChild(D.el("pre", { className: "card-code", text: m.text(id) }));
    var facts = D.el("div", { className: "line-facts" });
    app.model.metricList.forEach(function (mt) {
      var tot = m.vecValue(mt, r[1]), own = m.vecValue(mt, r[2]);
      if (!tot || !FACT_LABELS[mt.name]) return;
      facts.appendChild(D.el("div", { className: "fact" }, D.el("span", { className: "fact-k", text: FACT_LABELS[mt.name] }),
        D.el("span", { className: "fact-v", text: app.fmtUnit(mt.unit, tot) + (own !== tot ? " (self " + app.fmtUnit(mt.unit, own) + ")" : "") })));
    });
    d.appendChild(facts);
    d.appendChild(D.el("button", { className: "btn", text: "Show in flame graph",
      on: { click: function () { app.highlight(nodes, m.location(id)); } } }));
    var sums = { fwd: 0, bwd: 0, other: 0 };
    leaves.forEach(function (g) { if (g.kind !== "sync") { sums.fwd += g.fwd; sums.bwd += g.bwd; sums.other += g.other; } });
    if (sums.fwd + sums.bwd + sums.other > 0) {
      d.appendChild(D.el("div", { className: "split" },
        D.el("span", { className: "tag fwd", text: "forward " + app.fmtTime(sums.fwd) }),
        D.el("span", { className: "tag bwd", text: "backward " + app.fmtTime(sums.bwd) }),
        sums.other ? D.el("span", { className: "tag", text: "other " + app.fmtTime(sums.other) }) : null,
        D.el("span", { className: "muted", text: " GPU time caused by this line" })));
    }
    if (!leaves.length) {
      d.appendChild(D.el("div", { className: "muted pad", text: "No kernels, copies or syncs under this line." }));
      return;
    }
    d.appendChild(D.leafList(leaves.map(function (g) {
      return { kind: g.kind, name: g.name, detail: g.detail, fwd: g.fwd, bwd: g.bwd, other: g.other,
               count: g.count, color: app.colors[g.node] };
    }), { time: function (v) { return app.fmtTime(v); }, count: function (n) { return D.fmtCount(n / app.scale()); } }));
  };

  /* Jump to a line (from the flat table, a graph break, a flame-graph frame). */
  P.show = function (file, line) {
    if (!this.byFile[file]) return false;
    this.open(file, line);
    return true;
  };
})(window.dlpt = window.dlpt || {});
