/* dlpt diff page: two profiles compared line by line (dlpt/analysis/diff.py matches the lines).
 * A sortable table of lines (A, B, change, ratio) for any metric, a filter, and for a clicked
 * line its kernels, copies and syncs in A and B side by side. */
(function (D) {
  "use strict";

  // What the whole run shares, in words: as the terminal's shift_text (dlpt/renderers/terminal/diff.py).
  function runText(shift) {
    if (shift.why === "host") {
      return "can't tell what the whole run shares from what one line did: " + shift.lines + " lines of at least 1% of the total in both runs (3 needed)";
    }
    var range = function (f, lo, hi) { return f.toFixed(2) + "x (" + lo.toFixed(2) + "\u2013" + hi.toFixed(2) + ")"; };
    var basis = "B/A " + range(shift.factor, shift.lo, shift.hi) + " shared by the " + shift.lines + " lines compared";
    if (shift.fastest) basis += ", " + range(shift.fastest.factor, shift.fastest.lo, shift.fastest.hi) + " at their ops' fastest calls";
    var verdict = shift.verdict === "same" ? "the run as a whole did not change" :
      shift.verdict === "can't tell" && shift.why === "fastest" ? "can't tell whether the run as a whole changed: its means and its ops' fastest calls disagree (a busy host stretches the means, not the fastest calls)" :
      shift.verdict === "can't tell" ? "can't tell whether the run as a whole changed (its interval holds both no change and one of 1.2x)" :
      shift.basis ? "the whole run is " + shift.verdict + " at its ops' fastest calls, which preemptions do not stretch (more work on every line, a clock, or every call waiting on a busy host, as ops with worker threads do; its means could not tell)" :
      "the whole run is " + shift.verdict + " (the host, a clock, the input, or a change on every line)";
    var lines = shift.comparable === false ? "the whole run moved by 1.5x or more and its lines moved unevenly (the host's load changed several-fold between the runs?): too different to compare line by line" :
      shift.basis ? "lines are judged after the first factor (their means')" : "lines are judged after its factor";
    return basis + ": " + verdict + "; " + lines;
  }

  function Diff(raw) {
    this.raw = raw;
    this.keyIndex = {};
    raw.keys.forEach(function (k, i) { this.keyIndex[k] = i; }, this);
    this.metrics = {};
    raw.metrics.forEach(function (m) {
      this.metrics[m.name] = { name: m.name, label: m.label, unit: m.unit,
        idx: m.keys.map(function (k) { return this.keyIndex[k]; }, this) };
    }, this);
    this.metric = this.metrics[raw.metric] || this.metrics[raw.metrics.length ? raw.metrics[0].name : ""] ||
      { name: "gpu", label: "GPU time", unit: "ns", idx: [0] };
    this.filter = "";
    raw.rows.forEach(function (r, i) { r.index = i; });
  }

  var P = Diff.prototype;

  P.vec = function (v) {
    var s = 0;
    if (!v) return 0;
    for (var j = 0; j < this.metric.idx.length; j++) s += v[this.metric.idx[j]];
    return s;
  };
  P.val = function (row, side) {
    var c = row[side];
    return c ? this.vec(c.self) / this.raw[side].scale : 0;
  };
  P.total = function (side) { return this.vec(this.raw[side].total) / this.raw[side].scale; };
  P.fmt = function (v) { return v ? D.fmtUnit(this.metric.unit, v) : "\u2013"; };
  P.fmtDelta = function (d) { return d ? (d > 0 ? "+" : "\u2212") + D.fmtUnit(this.metric.unit, Math.abs(d)) : D.fmtUnit(this.metric.unit, 0); };
  /* B/A; a line missing from one run is "A only"/"B only", a zero cost "from 0"/"to 0". */
  P.ratio = function (a, b, row) {
    if (a && b) return (b / a).toFixed(2) + "x";
    if (b) return row && !row.a ? "B only" : "from 0";
    return a ? (row && !row.b ? "A only" : "to 0") : "";
  };

  function where(c) { return D.basename(c.file) + ":" + c.line; }

  P.label = function (row) {
    var one = row.a || row.b, span = D.el("span", { className: "label" });
    var loc = where(one);
    if (row.a && row.b && row.a.line !== row.b.line) loc += "\u2192" + row.b.line;
    span.appendChild(D.el("span", { className: "loc", text: loc, title: one.file }));
    span.appendChild(D.el("span", { className: "fn", text: one.function }));
    var text = (row.a && row.a.text) || (row.b && row.b.text);
    if (text) span.appendChild(D.el("code", { className: "src", text: text }));
    return span;
  };

  P.build = function (root) {
    var self = this, raw = this.raw;
    var select = D.el("select", { attrs: { id: "metric", "aria-label": "metric" },
      on: { change: function () { self.metric = self.metrics[select.value]; self.refresh(); } } });
    raw.metrics.forEach(function (m) {
      var o = D.el("option", { text: m.label, attrs: { value: m.name } });
      if (m.name === self.metric.name) o.selected = true;
      select.appendChild(o);
    });
    var filter = D.el("input", { attrs: { type: "search", id: "search", placeholder: "Filter lines\u2026", "aria-label": "filter" } });
    filter.addEventListener("input", D.debounce(function () { self.filter = filter.value.trim().toLowerCase(); self.table.reset(); }, 120));
    root.appendChild(D.el("header", { className: "topbar" },
      D.el("span", { className: "brand diff", text: "dlpt" }),
      D.el("span", { className: "title", text: D.basename(raw.a.label) + "  vs  " + D.basename(raw.b.label) }),
      D.el("span", { className: "spacer" }),
      D.el("label", { className: "ctl" }, D.el("span", { text: "metric" }), select),
      D.el("span", { className: "search" }, filter)));
    var main = D.el("main");
    root.appendChild(main);
    this.head = D.el("section", { className: "header" });
    main.appendChild(this.head);
    var panel = D.el("section", { className: "panel" });
    panel.appendChild(D.el("div", { className: "panel-head" }, D.el("h2", { text: "Lines, by absolute change" }),
      D.el("span", { className: "muted", text: "a line's own cost (lines it calls count at their own rows) \u00b7 click a line for its kernels" })));
    var body = D.el("div", { className: "diff-body" });
    var box = D.el("div", { className: "diff-table" });
    this.side = D.el("div", { className: "diff-side" });
    body.appendChild(box);
    body.appendChild(this.side);
    panel.appendChild(body);
    main.appendChild(panel);
    function testOf(r) { var t = r.sig && r.sig[self.metric.name]; return t === undefined ? -1 : t; }
    this.table = new D.TreeTable(box, {
      columns: [
        { label: "|change|", value: function (r) { return Math.abs(self.val(r, "b") - self.val(r, "a")); },
          text: function (r, v) { return D.fmtPct(v, Math.max(self.total("a"), self.total("b"))); },
          bar: function (r, v) { return 100 * v / Math.max(self.total("a"), self.total("b")); },
          title: "absolute change, as a share of the larger total" },
        { label: "A", value: function (r) { return self.val(r, "a"); }, text: function (r, v) { return self.fmt(v); } },
        { label: "B", value: function (r) { return self.val(r, "b"); }, text: function (r, v) { return self.fmt(v); } },
        { label: "change", value: function (r) { return self.val(r, "b") - self.val(r, "a"); },
          text: function (r, v) { return self.fmtDelta(v); },
          cls: function (r, v) { return v > 0 ? "worse" : v < 0 ? "better" : "same"; } },
        { label: "ratio", value: function (r) { var a = self.val(r, "a"), b = self.val(r, "b"); return a && b ? b / a : b ? 1e9 : 0; },
          text: function (r) { return self.ratio(self.val(r, "a"), self.val(r, "b"), r); } },
        // The verdict per metric (docs/numbers.md): 1 changed, 3 changed judged on the ops' fastest
        // calls (CPU op time on a busy host), 2 can't tell, 0 within noise, absent
        // untested. Sorted on: changed first, then can't tell, then within noise, then untested;
        // each by |change|.
        { label: "test", value: function (r) { var t = testOf(r); return [0, 1, 3, 2, 3][t + 1] * 1e18 + Math.abs(self.val(r, "b") - self.val(r, "a")); },
          text: function (r) { var t = testOf(r); return t === 1 ? "changed" : t === 3 ? "changed (fastest calls)" : t === 2 ? "can't tell" : t === 0 ? "within noise" : ""; },
          cls: function (r) { var t = testOf(r); return t === 1 || t === 3 ? "worse" : "same"; },
          title: "each line against what the whole run shares, with per-step and run-to-run noise, Holm-corrected over the lines (5%), at least 10% and 1% of the total; can't tell: too few lines to tell the line from the host" },
        { label: "line", text: function (r) { var o = r.a || r.b; return where(o) + " " + o.function + " " + (o.text || ""); } }
      ],
      key: function (r) { return String(r.index); },
      roots: function () {
        return raw.rows.filter(function (r) {
          if (!(self.val(r, "a") || self.val(r, "b"))) return false;
          if (!self.filter) return true;
          var o = r.a || r.b;
          return (where(o) + " " + o.function + " " + (o.text || "") + " " + o.file).toLowerCase().indexOf(self.filter) >= 0;
        });
      },
      name: function (r) { return self.label(r); },
      onSelect: function (r) { self.show(r); },
      rootLimit: 1000,
      empty: function () { return "No line has any " + self.metric.label + "."; }
    });
    if (raw.tested) this.table.sortCol = 5;  /* the test column: significant changes first */
    this.refresh();
  };

  P.refresh = function () {
    this._header();
    this.table.reset();
    if (this.current) this.show(this.current);
    else D.clear(this.side).appendChild(D.el("div", { className: "muted pad", text: "Click a line to compare its kernels, copies and syncs." }));
  };

  P._header = function () {
    var raw = this.raw, h = D.clear(this.head);
    ["a", "b"].forEach(function (s) {
      var side = raw[s];
      h.appendChild(D.el("div", { className: "facts" },
        D.el("span", { className: "side-tag side-" + s, text: s.toUpperCase() }),
        D.el("span", { className: "fact-v mono", text: side.label }),
        D.el("span", { className: "muted", text: side.program + (side.steps ? " \u00b7 " + side.steps + " steps" : " \u00b7 no steps detected") + (side.step ? " \u00b7 " + side.step : "") + (side.host ? " \u00b7 " + side.host : "") })));
    });
    if (raw.step_change) {
      h.appendChild(D.el("div", { className: "muted", text: "step time change: " + raw.step_change + " (the step medians' 95% intervals " + (raw.step_change === "differs" ? "do not overlap: the host or the code; the run line and the lines say which)" : "overlap)") }));
    }
    var shift = (raw.shifts || {})[this.metric.name];
    if (shift) {
      var said = runText(shift);
      h.appendChild(D.el("div", { className: "muted", text: "run: " + said }));
    }
    var ta = this.total("a"), tb = this.total("b");
    h.appendChild(D.el("div", { className: "facts totals" },
      D.el("span", { className: "facts-label", text: "total" }),
      D.el("div", { className: "fact" }, D.el("span", { className: "fact-k", text: "A" }), D.el("span", { className: "fact-v strong", text: this.fmt(ta) })),
      D.el("div", { className: "fact" }, D.el("span", { className: "fact-k", text: "B" }), D.el("span", { className: "fact-v strong", text: this.fmt(tb) })),
      D.el("div", { className: "fact" }, D.el("span", { className: "fact-k", text: "change" }),
        D.el("span", { className: "fact-v strong " + (tb > ta ? "worse" : tb < ta ? "better" : ""), text: this.fmtDelta(tb - ta) + "  (" + this.ratio(ta, tb) + ")" }))));
    h.appendChild(D.el("div", { className: "versions", text: raw.note + " \u00b7 " + this.metric.label }));
    if (raw.match_by !== "text") h.appendChild(D.el("div", { className: "warning", text: "\u26a0 Matched by line number: moved lines do not match." }));
  };

  P.show = function (row) {
    var self = this, s = D.clear(this.side);
    this.current = row;
    s.appendChild(this.label(row));
    var a = this.val(row, "a"), b = this.val(row, "b");
    s.appendChild(D.el("div", { className: "line-facts" },
      D.el("span", { text: "A " + this.fmt(a) }), D.el("span", { text: "B " + this.fmt(b) }),
      D.el("span", { className: b > a ? "worse" : b < a ? "better" : "", text: this.fmtDelta(b - a) })));
    var cols = D.el("div", { className: "sbs" });
    ["a", "b"].forEach(function (side) {
      var c = row[side], col = D.el("div", { className: "sbs-col" });
      col.appendChild(D.el("div", { className: "sbs-title" }, D.el("span", { className: "side-tag side-" + side, text: side.toUpperCase() }),
        D.el("span", { className: "muted", text: c ? " " + where(c) : " not in this profile" })));
      if (c && c.leaves.length) {
        var scale = self.raw[side].scale;
        col.appendChild(D.leafList(c.leaves.map(function (l) {
          return { kind: l[0], name: l[1], detail: l[2], count: l[4], fwd: l[5], bwd: l[6], other: l[7] };
        }), { time: function (v) { return D.fmtTime(v / scale); }, count: function (n) { return D.fmtCount(n / scale); } }));
      } else if (c) {
        col.appendChild(D.el("div", { className: "muted pad", text: "no kernels, copies or syncs" }));
      }
      cols.appendChild(col);
    });
    s.appendChild(cols);
  };

  D.boot("diff", Diff);
})(window.dlpt = window.dlpt || {});
