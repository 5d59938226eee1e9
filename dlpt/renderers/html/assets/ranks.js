/* dlpt page across ranks (dlpt/renderers/html/ranks_page.py builds its model): the verdict
 * (the straggler, its wait and what it did meanwhile, or how close the ranks are), the ranks
 * table, each rank's steps side by side on one step axis, and the lines with their cost on
 * every rank (min / median / max / slowest) for any metric. */
(function (D) {
  "use strict";

  function Ranks(raw) {
    this.raw = raw;
    this.metric = raw.metrics.filter(function (m) { return m.name === raw.metric; })[0] || raw.metrics[0];
    this.filter = "";
    raw.lines.forEach(function (l, i) { l.index = i; });
  }

  var P = Ranks.prototype;

  function where(o) { return D.basename(o.file) + ":" + o.line; }
  /* A line's [max, median, min, slowest rank] of the metric shown, per step. */
  P.values = function (line) { return line.v[this.metric.name] || [0, 0, 0, -1]; };
  P.fmt = function (v) { return D.fmtUnit(this.metric.unit, v); };

  P.lineLabel = function (o) {
    var span = D.el("span", { className: "label" });
    span.appendChild(D.el("span", { className: "loc", text: where(o), title: o.file }));
    span.appendChild(D.el("span", { className: "fn", text: o.function || o.name }));
    if (o.text) span.appendChild(D.el("code", { className: "src", text: o.text }));
    return span;
  };

  P.build = function (root) {
    var self = this, raw = this.raw;
    var select = D.el("select", { attrs: { id: "metric", "aria-label": "metric" },
      on: { change: function () { self.metric = raw.metrics.filter(function (m) { return m.name === select.value; })[0]; self.table.reset(); } } });
    raw.metrics.forEach(function (m) {
      var o = D.el("option", { text: m.label, attrs: { value: m.name } });
      if (m.name === self.metric.name) o.selected = true;
      select.appendChild(o);
    });
    var filter = D.el("input", { attrs: { type: "search", id: "search", placeholder: "Filter lines\u2026", "aria-label": "filter" } });
    filter.addEventListener("input", D.debounce(function () { self.filter = filter.value.trim().toLowerCase(); self.table.reset(); }, 120));
    root.appendChild(D.el("header", { className: "topbar" },
      D.el("span", { className: "brand ranks", text: "dlpt" }),
      D.el("span", { className: "title", text: raw.title }),
      D.el("span", { className: "spacer" }),
      D.el("label", { className: "ctl" }, D.el("span", { text: "metric" }), select),
      D.el("span", { className: "search" }, filter)));
    var main = D.el("main");
    root.appendChild(main);
    main.appendChild(this.header());
    main.appendChild(this.rankTable());
    main.appendChild(this.strips());
    /* The ranks' GPU streams on one clock, when they recorded a timeline window (--timeline N). */
    if (raw.timeline) this.timeline = new D.Timeline(main, raw.timeline, raw.timeline.strings);
    var panel = D.el("section", { className: "panel", attrs: { id: "lines" } });
    panel.appendChild(D.el("div", { className: "panel-head" }, D.el("h2", { text: "Lines on every rank" }),
      D.el("span", { className: "muted", text: "a line's own cost per step \u00b7 " + raw.lines.length + " of " + raw.lines_total + " lines" })));
    var box = D.el("div");
    panel.appendChild(box);
    main.appendChild(panel);
    this.table = new D.TreeTable(box, {
      columns: [
        { label: "max", value: function (r) { return self.values(r)[0]; }, text: function (r, v) { return self.fmt(v); } },
        { label: "median", value: function (r) { return self.values(r)[1]; }, text: function (r, v) { return self.fmt(v); } },
        { label: "min", value: function (r) { return self.values(r)[2]; }, text: function (r, v) { return self.fmt(v); } },
        { label: "slowest", value: function (r) { return self.values(r)[3]; },
          text: function (r, v) { return v >= 0 && self.values(r)[0] > self.values(r)[2] ? "r" + v : ""; } },
        { label: "line", text: function (r) { return where(r) + " " + r.function + " " + (r.text || ""); } }
      ],
      key: function (r) { return String(r.index); },
      roots: function () {
        return raw.lines.filter(function (r) {
          if (!self.values(r)[0]) return false;
          if (!self.filter) return true;
          return (where(r) + " " + r.function + " " + (r.text || "") + " " + r.file).toLowerCase().indexOf(self.filter) >= 0;
        });
      },
      name: function (r) { return self.lineLabel(r); },
      rootLimit: 500,
      empty: function () { return "No line has any " + self.metric.label + "."; }
    });
    this.table.reset();
  };

  /* A spread across ranks in words, as the terminal's ranks.py _across words it. */
  function across(s) {
    if (s.ranks === 1) return D.fmtTime(s.high);
    if (s.low === s.high) return D.fmtTime(s.high) + " on every rank";
    return "min " + D.fmtTime(s.low) + " (rank " + s.low_rank + ")" +
      (s.median !== null ? ", median " + D.fmtTime(s.median) : "") +
      ", max " + D.fmtTime(s.high) + " (rank " + s.high_rank + ")";
  }

  /* " (in 19 of 19 steps)" where the arrivals say step by step, as ranks.py _steps words it. */
  function stepsOf(s) { return s.steps ? " (" + s.steps + ")" : ""; }

  P.header = function () {
    var raw = this.raw, h = D.el("section", { className: "header" });
    h.appendChild(D.el("div", { className: "facts" },
      D.el("span", { className: "fact-v", text: raw.ranks.length + " of " + raw.world_size + " ranks" }),
      D.el("span", { className: "muted", text: raw.step_spread ? " \u00b7 step time per rank: " + across(raw.step_spread) : "" })));
    if (raw.untraced_spread) {
      h.appendChild(D.el("div", { className: "muted", text: "untraced step (each rank's median, measured without dlpt's cost): " +
        across(raw.untraced_spread) + "; the traced step above includes it" }));
    }
    raw.missing.forEach(function (m) { h.appendChild(D.el("div", { className: "warning", text: "rank " + m.rank + " missing: " + m.why })); });
    raw.notes.forEach(function (n) { h.appendChild(D.el("div", { className: "warning", text: n })); });
    var lacking = raw.lacking || [];
    if (lacking.length) {
      h.appendChild(D.el("div", { className: "verdict", text: "stragglers not judged: " + raw.not_judged }));
    } else if (raw.stragglers.length) {
      raw.stragglers.forEach(function (s) {
        h.appendChild(D.el("div", { className: "verdict bad", text: "straggler: rank " + s.rank + " \u2014 the other ranks waited " + D.fmtTime(s.waited) + " per step for it" + stepsOf(s) +
          (s.pace ? "; it also " + s.pace : "") }));
        if (s.causes.length) {
          h.appendChild(D.el("div", { className: "muted", text: "what rank " + s.rank + " did meanwhile (its own cost per step above the others' median):" }));
          s.causes.forEach(function (c) {
            var row = D.el("div", { className: "cause" });
            row.appendChild(D.el("span", { className: "fact-v strong", text: "+" + D.fmtTime(c.own - c.others) + " " + c.metric + "  " }));
            row.appendChild(this.lineLabel(c));
            h.appendChild(row);
          }, this);
        } else {
          h.appendChild(D.el("div", { className: "muted", text: "no line of its own costs more than on the others: its delay is outside the recorded work" }));
        }
        if (s.sites.length) {
          h.appendChild(D.el("div", { className: "muted", text: "where the wait landed: " + s.sites.slice(0, 3).map(function (x) {
            return (x.line ? where(x.line) + " " : "") + x.op + (x.paths > 1 ? " (" + x.paths + " call paths)" : "") +
              " (+" + D.fmtTime(x.others - x.own) + " in the collective)";
          }).join(", ") }));
        }
      }, this);
    } else if (raw.ranks.length > 1 && !(raw.unnamed || []).length) {
      var spread = raw.step_ns ? (100 * (raw.waits.high - raw.waits.low) / raw.step_ns).toFixed(1) + "% of the step" : D.fmtTime(raw.waits.high - raw.waits.low);
      h.appendChild(D.el("div", { className: "verdict good", text: "no straggler: ranks' waits per step within " + spread +
        " (" + D.fmtTime(raw.waits.low) + " to " + D.fmtTime(raw.waits.high) + "), over " + raw.fewest_steps +
        " counted step" + (raw.fewest_steps === 1 ? "" : "s") + " per rank or more" }));
    }
    (raw.unnamed || []).forEach(function (s) {
      var head = s.unsure ? "straggler not decided: rank " : "no straggler in the code: rank ";
      h.appendChild(D.el("div", { className: "verdict", text: head + s.rank + " " + s.why +
        "; the others waited " + D.fmtTime(s.waited) + " per step for it" + stepsOf(s) }));
    });
    h.appendChild(D.el("div", { className: "versions", text: raw.wait_rule }));
    return h;
  };

  P.rankTable = function () {
    var raw = this.raw, strag = {};
    raw.stragglers.forEach(function (s) { strag[s.rank] = "straggler"; });
    (raw.unnamed || []).forEach(function (s) { strag[s.rank] = s.label; });
    var cols = [["rank", "rank"], ["step", "step"], ["untraced", "untraced"], ["compute", "compute"],
      [raw.gpu ? "comm" : "wait", "comm"], ["exposed", "exposed"], ["waited", "waited"]];
    var t = D.el("table", { className: "rank-table", attrs: { id: "rank-table" } });
    var head = D.el("tr");
    cols.forEach(function (c) { head.appendChild(D.el("th", { text: c[0] })); });
    head.appendChild(D.el("th", { className: "where", text: "where" }));
    t.appendChild(D.el("thead", {}, head));
    var body = D.el("tbody");
    raw.ranks.forEach(function (r) {
      var tr = D.el("tr", { className: strag[r.rank] ? "straggler" : "" });
      cols.forEach(function (c) {
        var v = r[c[1]];
        tr.appendChild(D.el("td", { text: c[1] === "rank" ? String(v) : v ? D.fmtTime(v) : "" }));
      });
      tr.appendChild(D.el("td", { className: "where", text: r.where + (strag[r.rank] ? "  " + strag[r.rank] : "") }));
      body.appendChild(tr);
    });
    t.appendChild(body);
    var panel = D.el("section", { className: "panel" });
    panel.appendChild(D.el("div", { className: "panel-head" }, D.el("h2", { text: "Ranks" }), D.el("span", { className: "muted", text: "per step" })));
    panel.appendChild(t);
    return panel;
  };

  /* Each rank's counted steps side by side, step k under step k: busy share of the step, with
   * its communication and the exposed part of that underneath. */
  P.strips = function () {
    var raw = this.raw, panel = D.el("section", { className: "panel", attrs: { id: "steps" } });
    panel.appendChild(D.el("div", { className: "panel-head" }, D.el("h2", { text: "Steps, rank by rank" }),
      D.el("span", { className: "legend" },
        D.el("span", {}, D.el("i", { style: { background: "hsl(140, 46%, 62%)" } }), "GPU busy"),
        D.el("span", {}, D.el("i", { style: { background: "hsl(215, 70%, 62%)" } }), "communication"),
        D.el("span", {}, D.el("i", { style: { background: "hsl(0, 72%, 64%)" } }), "exposed"))));
    var box = D.el("div", { className: "strips" });
    var longest = 0;
    raw.ranks.forEach(function (r) { r.steps.forEach(function (s) { longest = Math.max(longest, s[0]); }); });
    raw.ranks.forEach(function (r) {
      var row = D.el("div", { className: "strip" }, D.el("span", { className: "who", text: "rank " + r.rank }));
      var steps = D.el("div", { className: "steps" });
      r.steps.forEach(function (s, k) {
        var span = s[0] || 1;
        var cell = D.el("div", { className: "step", style: { width: (100 * s[0] / (longest || 1) / Math.max(1, r.steps.length)) + "%" },
          attrs: { title: "step " + (k + 1) + ": " + D.fmtTime(s[0]) + ", busy " + D.fmtTime(s[1]) + ", communication " + D.fmtTime(s[2]) + ", exposed " + D.fmtTime(s[3]) } });
        cell.appendChild(D.el("div", { className: "busy", style: { width: (100 * s[1] / span) + "%" } }));
        cell.appendChild(D.el("div", { className: "comm", style: { width: (100 * s[2] / span) + "%" } }));
        cell.appendChild(D.el("div", { className: "exposed", style: { width: (100 * s[3] / span) + "%" } }));
        steps.appendChild(cell);
      });
      if (!r.steps.length) steps.appendChild(D.el("span", { className: "muted", text: "no GPU step time line" }));
      row.appendChild(steps);
      box.appendChild(row);
    });
    panel.appendChild(box);
    return panel;
  };

  D.boot("ranks page", Ranks);
})(window.dlpt = window.dlpt || {});
