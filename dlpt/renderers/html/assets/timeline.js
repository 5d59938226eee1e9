/* dlpt report: the timeline window (--timeline N) on a canvas. One step at a time (or the whole
 * window): a lane per host thread's ops and CUDA calls, one per thread's sampled Python stacks,
 * one per GPU stream, and the steps; slices nested by depth, hover for name, source line and
 * duration. Slice names reach the page as data: drawn with fillText on the canvas, shown in the
 * hover card with textContent. */
(function (D) {
  "use strict";

  var ROW = 16, GAP = 6, LABEL_W = 210, AXIS = 18;
  var COLORS = {
    step: "hsl(220,14%,82%)", op: "hsl(212,62%,64%)", api: "hsl(38,86%,62%)", sync: "hsl(0,72%,64%)",
    kernel: "hsl(140,46%,58%)", memcpy: "hsl(192,76%,58%)", memset: "hsl(192,56%,72%)",
    frame: "hsl(262,40%,72%)", scope: "hsl(300,30%,74%)"
  };

  /* `text` cut to fit `width` pixels (with an ellipsis). */
  function fit(g, text, width) {
    if (g.measureText(text).width <= width) return text;
    var lo = 0, hi = text.length;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (g.measureText(text.slice(0, mid) + "\u2026").width <= width) lo = mid; else hi = mid - 1;
    }
    return lo > 0 ? text.slice(0, lo) + "\u2026" : "";
  }

  D.Timeline = function (host, raw, strings) {
    this.raw = raw;
    this.str = strings;
    this.kinds = raw.kinds;
    this.lanes = raw.lanes;
    this.steps = raw.steps.length ? raw.steps : [[0, raw.duration]];
    this.step = 0; /* -1: the whole window */
    var depth = this.lanes.map(function () { return 0; });
    raw.slices.forEach(function (s) { if (s[1] + 1 > depth[s[0]]) depth[s[0]] = s[1] + 1; });
    this.laneTop = [];
    var y = AXIS;
    for (var i = 0; i < this.lanes.length; i++) {
      this.laneTop.push(y);
      y += Math.max(1, Math.min(depth[i], 24)) * ROW + GAP;
    }
    this.height = y;
    this.items = [];

    var self = this;
    var panel = D.el("section", { className: "panel timeline" });
    this.label = D.el("span", { className: "muted" });
    this.prev = D.el("button", { className: "btn", text: "\u2039 step", on: { click: function () { self.show(self.step - 1); } } });
    this.next = D.el("button", { className: "btn", text: "step \u203a", on: { click: function () { self.show(self.step + 1); } } });
    this.all = D.el("button", { className: "btn", text: "whole window", on: { click: function () { self.show(-1); } } });
    /* raw.title and raw.note: the page across ranks names its lanes' ranks and their clock. */
    var note = (raw.note ? raw.note + " \u00b7 " : "") + raw.steps_kept + " of " + raw.steps_requested + " steps kept";
    if (raw.steps_shown < raw.steps.length || raw.steps_shown < raw.steps_kept) note += ", " + raw.steps_shown + " shown";
    if (raw.dropped) note += ", " + raw.dropped.toLocaleString("en-US") + " events dropped (budget)";
    panel.appendChild(D.el("div", { className: "panel-head" },
      D.el("h2", { text: raw.title || "Timeline" }),
      D.el("span", { className: "muted", text: note + " \u00b7 hover for details" }),
      D.el("span", { className: "spacer" }), this.prev, this.label, this.next, this.all));
    this.wrap = D.el("div", { className: "timeline-wrap" });
    this.canvas = D.el("canvas", { className: "timeline-canvas", attrs: { "aria-label": "timeline" } });
    this.wrap.appendChild(this.canvas);
    panel.appendChild(this.wrap);
    host.appendChild(panel);
    this.tip = D.el("div", { className: "tooltip timeline-tip" });
    document.body.appendChild(this.tip);
    this.canvas.addEventListener("mousemove", function (e) { self._hover(e); });
    this.canvas.addEventListener("mouseleave", function () { self.tip.style.display = "none"; });
    window.addEventListener("resize", D.debounce(function () { self.draw(); }, 100));
    this.show(0);
  };

  var P = D.Timeline.prototype;

  P.range = function () {
    if (this.step < 0) return [0, Math.max(this.raw.duration, this.steps[this.steps.length - 1][1])];
    return this.steps[this.step];
  };

  P.show = function (step) {
    if (step >= this.steps.length) step = this.steps.length - 1;
    if (step < -1) step = -1;
    this.step = step;
    this.prev.disabled = step <= 0;
    this.next.disabled = step < 0 || step >= this.steps.length - 1;
    var r = this.range();
    var first = this.raw.first_step || 1; /* the run's number of the window's first step */
    this.label.textContent = (step < 0 ? "window" :
      "step " + (first + step) + " (" + (step + 1) + "/" + this.steps.length + " of the window)") +
      " \u00b7 " + D.fmtTime(r[1] - r[0]);
    this.draw();
  };

  P.draw = function () {
    var c = this.canvas, dpr = window.devicePixelRatio || 1;
    var w = Math.max(400, this.wrap.clientWidth || 900), h = this.height;
    c.width = Math.round(w * dpr);
    c.height = Math.round(h * dpr);
    c.style.width = w + "px";
    c.style.height = h + "px";
    var g = c.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.font = "11px system-ui, sans-serif";
    g.textBaseline = "middle";
    var r = this.range(), t0 = r[0], span = Math.max(1, r[1] - r[0]);
    var x0 = LABEL_W, pw = w - LABEL_W - 8, scale = pw / span;
    /* Axis: a tick every "nice" interval. */
    g.fillStyle = "#6b7385";
    var step = Math.pow(10, Math.floor(Math.log(span / 5) / Math.LN10));
    if (span / step > 10) step *= 2;
    if (span / step > 10) step *= 2.5;
    for (var t = 0; t <= span; t += step) {
      var x = x0 + t * scale;
      g.fillRect(x, AXIS - 5, 1, 5);
      g.fillText(D.fmtTime(t), x + 2, 7);
    }
    /* Lane labels and backgrounds. */
    for (var i = 0; i < this.lanes.length; i++) {
      var top = this.laneTop[i], bottom = i + 1 < this.lanes.length ? this.laneTop[i + 1] - GAP : this.height - GAP;
      g.fillStyle = i % 2 ? "#f7f9fc" : "#ffffff";
      g.fillRect(0, top, w, bottom - top);
      g.fillStyle = "#404a5c";
      g.fillText(fit(g, D.clean(this.lanes[i][0]), LABEL_W - 10), 4, top + ROW / 2);
    }
    /* Slices of the range. */
    this.items = [];
    var slices = this.raw.slices;
    for (var k = 0; k < slices.length; k++) {
      var s = slices[k];
      if (s[2] > r[1] || s[2] + s[3] < t0 || s[1] >= 24) continue;
      var xa = x0 + Math.max(0, s[2] - t0) * scale, xb = x0 + Math.min(span, s[2] + s[3] - t0) * scale;
      var sw = Math.max(1, xb - xa), y = this.laneTop[s[0]] + s[1] * ROW;
      var kind = this.kinds[s[6]];
      g.fillStyle = kind === "frame" && s[8] >= 0 && s[8] < 500 ? "hsl(262,24%,80%)" : COLORS[kind] || "#ccc";
      g.fillRect(xa, y + 1, sw, ROW - 2);
      if (sw > 30) {
        g.fillStyle = "#1c2230";
        g.fillText(fit(g, D.clean(this.str[s[4]] || ""), sw - 4), xa + 2, y + ROW / 2);
      }
      this.items.push([xa, y, sw, k]);
    }
  };

  P._hit = function (e) {
    var rect = this.canvas.getBoundingClientRect(), x = e.clientX - rect.left, y = e.clientY - rect.top;
    var best = -1;
    for (var i = 0; i < this.items.length; i++) {
      var it = this.items[i];
      if (x >= it[0] - 1 && x <= it[0] + it[2] + 1 && y >= it[1] && y < it[1] + ROW) best = it[3];
    }
    return best;
  };

  /* The hover card of slice k (text only). */
  P.card = function (k) {
    var s = this.raw.slices[k], kind = this.kinds[s[6]], name = this.str[s[4]] || "", line = this.str[s[5]] || "";
    var card = D.el("div", { className: "timeline-card" },
      D.el("div", { className: "card-title", text: name }),
      D.el("div", { className: "card-detail", text: kind + " \u00b7 " + this.lanes[s[0]][0] }),
      D.el("div", { text: D.fmtTime(s[3]) + " at +" + D.fmtTime(s[2]) }));
    if (line) card.appendChild(D.el("div", { className: "card-file", text: line }));
    if (s[8] >= 0) card.appendChild(D.el("div", { className: "card-note", text: (s[8] / 10).toFixed(0) + "% of its samples held the GIL" }));
    if (s[7]) card.appendChild(D.el("div", { className: "card-note", text: "correlation id " + s[7] }));
    return card;
  };

  P._hover = function (e) {
    var k = this._hit(e);
    if (k < 0) { this.tip.style.display = "none"; return; }
    if (this.tip.dataset.slice !== String(k)) {
      D.clear(this.tip).appendChild(this.card(k));
      this.tip.dataset.slice = String(k);
    }
    this.tip.style.display = "block";
    var pad = 14, tw = this.tip.offsetWidth, th = this.tip.offsetHeight;
    var left = e.clientX + pad, top = e.clientY + pad;
    if (left + tw > window.innerWidth - 4) left = Math.max(4, e.clientX - tw - pad);
    if (top + th > window.innerHeight - 4) top = Math.max(4, e.clientY - th - pad);
    this.tip.style.left = left + "px";
    this.tip.style.top = top + "px";
  };
})(window.dlpt = window.dlpt || {});
