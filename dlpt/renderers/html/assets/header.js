/* dlpt report: the header facts (dlpt/renderers/html/facts.py formats them): what ran, steps, per-step
 * totals, GPU busy and idle per device, MFU and idle per step, suggestions, torch.compile events
 * and warnings. Graph breaks, recompilations and suggestions link to their line in the source
 * view. */
(function (D) {
  "use strict";

  D.renderHeader = function (host, h, app) {
    var box = D.el("section", { className: "header" });
    if (h.warnings.length) {
      var warn = D.el("div", { className: "warnings" });
      h.warnings.forEach(function (w) {
        warn.appendChild(D.el("div", { className: "warning " + w.level, text: "\u26a0 " + w.text }));
      });
      box.appendChild(warn);
    }
    var facts = D.el("div", { className: "facts" });
    h.facts.forEach(function (f) {
      facts.appendChild(D.el("div", { className: "fact" }, D.el("span", { className: "fact-k", text: f[0] }),
        D.el("span", { className: "fact-v", text: f[1] })));
    });
    box.appendChild(facts);
    if (h.totals.length) {
      var tot = D.el("div", { className: "facts totals" }, D.el("span", { className: "facts-label", text: h.totals_label }));
      h.totals.forEach(function (f) {
        tot.appendChild(D.el("div", { className: "fact" }, D.el("span", { className: "fact-k", text: f[0] }),
          D.el("span", { className: "fact-v strong", text: f[1] })));
      });
      box.appendChild(tot);
    }
    h.devices.forEach(function (d) {
      var row = D.el("div", { className: "device" }, D.el("span", { className: "device-name", text: d.name }));
      if (d.busy_pct !== null) {
        var meter = D.el("div", { className: "meter", title: "GPU busy share of the profiled wall time" });
        meter.appendChild(D.el("div", { className: "meter-fill", style: { width: Math.min(100, d.busy_pct) + "%" } }));
        row.appendChild(meter);
      }
      row.appendChild(D.el("span", { className: "device-text" + (d.busy_pct !== null && d.busy_pct < 50 ? " bad" : ""), text: d.text }));
      box.appendChild(row);
    });
    var ins = h.insights || { lines: [], suggestions: [] };
    ins.lines.forEach(function (t) { box.appendChild(D.el("div", { className: "insight", text: t })); });
    if (ins.suggestions.length) box.appendChild(suggestionsBox(ins.suggestions, app));
    if (h.compile) box.appendChild(compileBox(h.compile, app));
    if (h.versions) box.appendChild(D.el("div", { className: "versions", text: h.versions }));
    host.appendChild(box);
  };

  function suggestionsBox(list, app) {
    var det = D.el("details", { className: "suggestions", attrs: { open: "" } });
    det.appendChild(D.el("summary", null, D.el("span", { className: "tag sug", text: "Suggestions" }),
      D.el("span", { text: " ranked by estimated gain, each from this run's measurements (basis given)" })));
    var ol = D.el("ol", { className: "suggestion-list" });
    list.forEach(function (s) {
      var where = s.file
        ? D.el("button", { className: "link", text: s.where, title: s.file, on: { click: function () { app.showLine(s.file, s.line); } } })
        : D.el("span", { text: s.where });
      ol.appendChild(D.el("li", { className: "suggestion" },
        D.el("div", null, D.el("span", { className: "gain", text: s.gain }), D.el("span", { text: "  " }), where),
        D.el("div", { className: "sug-title", text: s.title }),
        D.el("div", { text: s.evidence }),
        D.el("div", { className: "sug-action", text: "\u2192 " + s.action }),
        D.el("div", { className: "muted", text: "basis: " + s.basis })));
    });
    det.appendChild(ol);
    return det;
  }

  function compileBox(c, app) {
    var det = D.el("details", { className: "compile" });
    det.appendChild(D.el("summary", null, D.el("span", { className: "tag cmp", text: "torch.compile" }),
      D.el("span", { text: " " + c.summary })));
    [["Graph breaks", "reason", c.breaks], ["Recompilations (the guard that failed)", "guard", c.recompiles]].forEach(function (sec) {
      if (!sec[2].length) return;
      det.appendChild(D.el("div", { className: "compile-title", text: sec[0] }));
      var t = D.el("table", { className: "compile-table" });
      sec[2].forEach(function (r) {
        var where = D.el("button", { className: "link", text: D.basename(r.file) + ":" + r.line + " " + r.function,
          title: r.file, on: { click: function () { app.showLine(r.file, r.line); } } });
        t.appendChild(D.el("tr", null, D.el("td", null, where), D.el("td", { className: "muted", text: r.reason })));
      });
      det.appendChild(t);
    });
    return det;
  }
})(window.dlpt = window.dlpt || {});
