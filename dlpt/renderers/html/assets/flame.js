/* dlpt report: the flame graph, drawn as an icicle (callers above callees, like the top-down
 * tree) on a canvas.
 *
 * Canvas rather than SVG: a 10,000-node profile would be 10,000 DOM elements, slow to lay out
 * and to re-render on every zoom, hover and metric switch; on a canvas a full redraw takes a
 * few milliseconds. Bars narrower than a pixel are not drawn (their parent's bar covers them),
 * except search matches, which keep a 2px mark so a match is never invisible. */
(function (D) {
  "use strict";

  var ROW = 20;
  var FONT = "12px system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";
  var MIN_PX = 0.7;
  var MAX_ROWS = 300;

  /* Colours: what a bar is (kernel, copy, sync) for leaves; for code, which pass it ran in
   * (forward, backward, neither) and whether it ran inside a torch.compile region. */
  var PAL = {
    code: { frame: [215, 28, 86], op: [42, 72, 77], scope: [300, 32, 85] },
    forward: { frame: [212, 72, 87], op: [212, 66, 78] },
    backward: { frame: [27, 88, 86], op: [27, 82, 75] },
    compiled: { frame: [268, 52, 87], op: [268, 46, 79] },
    phase: { "<forward>": [212, 70, 64], "<backward>": [27, 86, 60], "<cuda graph replay>": [330, 55, 70] },
    kernel: [140, 46, 62],
    kernelCompiled: [168, 58, 50],
    memcpy: [192, 76, 58],
    memset: [192, 56, 74],
    sync: [0, 72, 64],
    root: [220, 14, 90],
    thread: [0, 0, 84]
  };
  D.LEGEND = [
    ["user code", PAL.code.frame], ["op", PAL.code.op], ["forward", PAL.phase["<forward>"]],
    ["backward", PAL.phase["<backward>"]], ["compiled region", PAL.compiled.op], ["kernel", PAL.kernel],
    ["fused (Inductor) kernel", PAL.kernelCompiled], ["copy / memset", PAL.memcpy], ["sync wait", PAL.sync]
  ];
  D.FLAME_ROW = ROW;
  D.hsl = function (c, dl) { return "hsl(" + c[0] + "," + c[1] + "%," + (c[2] + (dl || 0)) + "%)"; };

  function hash(s) {
    var h = 0;
    for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0;
    return h;
  }

  D.Flame = function (host, model, app) {
    this.m = model;
    this.app = app;
    this.wrap = D.el("div", { className: "flame-wrap", attrs: { tabindex: "0", "aria-label": "flame graph" } });
    this.canvas = D.el("canvas", { className: "flame-canvas" });
    this.empty = D.el("div", { className: "flame-empty" });
    this.wrap.appendChild(this.canvas);
    this.wrap.appendChild(this.empty);
    host.appendChild(this.wrap);
    this.tip = D.el("div", { className: "tooltip" });
    document.body.appendChild(this.tip);
    this.zoom = 0;
    this.selected = -1;
    this.hover = -1;
    this.match = null;      /* Uint8Array: 1 where a node matches the search */
    this.hasMatch = null;   /* Uint8Array: 1 where the subtree holds a match */
    this.items = [];
    this.colors = this._colors();
    this._searchText = null;
    var self = this;
    this.canvas.addEventListener("mousemove", function (e) { self._onMove(e); });
    this.canvas.addEventListener("mouseleave", function () { self._setHover(-1); self.tip.style.display = "none"; });
    this.canvas.addEventListener("click", function (e) {
      var id = self._hit(e);
      if (id >= 0) self.app.select(id, "flame");
    });
    this.wrap.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && self.zoom > 0) { self.app.select(self.m.parent[self.zoom], "flame"); }
    });
    window.addEventListener("resize", D.debounce(function () { self.render(); }, 100));
  };

  var P = D.Flame.prototype;

  P._colors = function () {
    var m = this.m, bits = m.ctxBits, out = new Array(m.n);
    for (var i = 0; i < m.n; i++) {
      var kind = m.kind[i], ctx = m.ctx(i), c;
      if (kind === "kernel") c = ctx & bits.compiled ? PAL.kernelCompiled : PAL.kernel;
      else if (kind === "memcpy" || kind === "memset" || kind === "sync" || kind === "root" || kind === "thread") c = PAL[kind];
      else if (kind === "phase") c = PAL.phase[m.name(i)] || PAL.code.op;
      else {
        var fam = ctx & bits.compiled ? PAL.compiled : ctx & bits.backward ? PAL.backward
          : ctx & bits.forward ? PAL.forward : PAL.code;
        c = fam[kind] || fam.op;
      }
      /* A little lightness jitter by name tells adjacent bars of the same colour apart. */
      var jitter = kind === "root" ? 0 : ((hash(m.name(i) + m.line(i)) & 7) - 3.5) * 0.8;
      out[i] = D.hsl(c, jitter);
    }
    return out;
  };

  P.setMetric = function (metric) { this.metric = metric; this.render(); };

  P.zoomTo = function (id) { this.zoom = id; this.render(); };

  P.setSelected = function (id) { this.selected = id; this.paint(); };

  /* Highlight nodes: by a search string (name, location, source text, launch detail), or by an
   * explicit id list. Returns {count, value, names, lines}: every match and the topmost matches'
   * inclusive metric (nested matches are not counted twice), then the same for the matches that
   * are ops, kernels, copies, scopes... (names) and for those that are source lines (lines),
   * apart: a line whose text holds "relu" costs what the whole line costs, aten::relu only its
   * own part, and a sum of the two would count that part twice. */
  P.search = function (query) {
    var q = (query || "").trim().toLowerCase();
    if (!q) return this.setMatches(null);
    var m = this.m, text = this._texts(), match = new Uint8Array(m.n);
    for (var i = 0; i < m.n; i++) if (text[i].indexOf(q) >= 0) match[i] = 1;
    return this.setMatches(match);
  };

  P.setMatches = function (match) {
    var m = this.m;
    this.match = match;
    this.hasMatch = null;
    var count = 0, value = 0, names = { count: 0, value: 0 }, lines = { count: 0, value: 0 };
    if (match) {
      var has = new Uint8Array(m.n), under = new Uint8Array(m.n), i;
      /* Below a matching line / below a matching name: such a match is already in its group's total. */
      var underLine = new Uint8Array(m.n), underName = new Uint8Array(m.n);
      for (i = m.n - 1; i >= 0; i--) {
        if (match[i]) has[i] = 1;
        if (has[i] && i > 0) has[m.parent[i]] = 1;
      }
      for (i = 1; i < m.n; i++) {
        var p = m.parent[i], pLine = m.kind[p] === "frame";
        under[i] = under[p] || match[p];
        underLine[i] = underLine[p] || (match[p] && pLine);
        underName[i] = underName[p] || (match[p] && !pLine);
        if (!match[i]) continue;
        var v = m.value(this.metric, i, true);
        count++;
        if (!under[i]) value += v;
        var g = m.kind[i] === "frame" ? lines : names;
        g.count++;
        if (!(g === lines ? underLine[i] : underName[i])) g.value += v;
      }
      if (match[0]) {
        count++; value = m.value(this.metric, 0, true);
        names.count++; names.value = value;
      }
      this.hasMatch = has;
    }
    this.render();
    return { count: count, value: value, names: names, lines: lines };
  };

  P._texts = function () {
    if (!this._searchText) {
      var m = this.m, t = new Array(m.n);
      for (var i = 0; i < m.n; i++) {
        t[i] = (m.label(i) + "\u0000" + m.name(i) + "\u0000" + (m.kind[i] === "frame" ? m.file(i) + ":" + m.line(i) : "")
          + "\u0000" + m.detail(i) + "\u0000" + m.mark(i)).toLowerCase();
      }
      this._searchText = t;
    }
    return this._searchText;
  };

  P._layout = function (W) {
    var m = this.m, metric = this.metric, items = [];
    var anc = m.ancestors(this.zoom), base = anc.length - 1, maxRow = base;
    for (var d = 0; d < base; d++) items.push({ id: anc[d], row: d, x: 0, w: W, anc: true });
    var total = m.value(metric, this.zoom, true);
    if (!(total > 0)) return { items: items, rows: base, total: 0 };
    var stack = [[this.zoom, 0, W, base]];
    var self = this;
    while (stack.length) {
      var top = stack.pop(), i = top[0], x = top[1], w = top[2], row = top[3];
      items.push({ id: i, row: row, x: x, w: w });
      if (row > maxRow) maxRow = row;
      if (row - base >= MAX_ROWS) continue;
      var v = m.value(metric, i, true);
      var kids = m.kids[i].filter(function (k) { return m.value(metric, k, true) > 0; });
      kids.sort(function (a, b) { return m.value(metric, b, true) - m.value(metric, a, true); });
      var cx = x;
      for (var j = 0; j < kids.length; j++) {
        var k = kids[j], kw = w * m.value(metric, k, true) / v;
        if (kw >= MIN_PX) stack.push([k, cx, kw, row + 1]);
        else if (self.hasMatch && self.hasMatch[k]) items.push({ id: k, row: row + 1, x: cx, w: 2, tiny: true });
        cx += kw;
      }
    }
    return { items: items, rows: maxRow + 1, total: total };
  };

  P.render = function () {
    if (!this.metric) return;
    var W = Math.max(this.wrap.clientWidth, 200);
    var lay = this._layout(W);
    this.items = lay.items;
    this.tip.dataset.node = "";
    var dpr = window.devicePixelRatio || 1, H = lay.rows * ROW;
    this.canvas.width = Math.round(W * dpr);
    this.canvas.height = Math.round(H * dpr);
    this.canvas.style.width = W + "px";
    this.canvas.style.height = H + "px";
    this.empty.textContent = lay.total > 0 ? "" : "No " + this.metric.label + " recorded under this node.";
    this.empty.style.display = lay.total > 0 ? "none" : "block";
    this.paint();
  };

  /* Draw the laid-out bars (hover and selection changes repaint without a new layout). */
  P.paint = function () {
    var dpr = window.devicePixelRatio || 1, W = this.canvas.width / dpr, H = this.canvas.height / dpr;
    var ctx = this.canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    var charW = ctx.measureText("abcdefghijklmnopqrstuvwxyz0123456789").width / 36;
    for (var n = 0; n < this.items.length; n++) this._draw(ctx, this.items[n], charW);
  };

  P._draw = function (ctx, it, charW) {
    var m = this.m, id = it.id, y = it.row * ROW;
    var dim = this.match && !this.match[id];
    ctx.globalAlpha = it.anc ? 0.55 : 1;
    ctx.fillStyle = dim ? (this.hasMatch && this.hasMatch[id] ? "#dfe3ea" : "#eceef1") : this.colors[id];
    ctx.fillRect(it.x + 0.5, y + 0.5, Math.max(it.w - 1, 1), ROW - 1);
    if (id === this.selected || id === this.hover) {
      ctx.globalAlpha = 1;
      ctx.lineWidth = id === this.selected ? 2 : 1;
      ctx.strokeStyle = id === this.selected ? "#111827" : "#374151";
      ctx.strokeRect(it.x + 1, y + 1, Math.max(it.w - 2, 1), ROW - 2);
    }
    if (it.w > 28 && !it.tiny) {
      var label = m.label(id), room = it.w - 8;
      var max = Math.floor(room / charW);
      if (label.length > max) label = label.slice(0, Math.max(max - 1, 1)) + "\u2026";
      while (label.length > 2 && ctx.measureText(label).width > room) label = label.slice(0, -2) + "\u2026";
      ctx.globalAlpha = it.anc ? 0.75 : 1;
      ctx.fillStyle = dim ? "#8b93a1" : "#17202c";
      ctx.fillText(D.clean(label), it.x + 4, y + ROW / 2 + 0.5);
    }
    ctx.globalAlpha = 1;
  };

  P._hit = function (e) {
    var r = this.canvas.getBoundingClientRect(), x = e.clientX - r.left, y = e.clientY - r.top;
    var row = Math.floor(y / ROW);
    for (var n = this.items.length - 1; n >= 0; n--) {
      var it = this.items[n];
      if (it.row === row && x >= it.x && x < it.x + Math.max(it.w, 2)) return it.id;
    }
    return -1;
  };

  P._setHover = function (id) {
    if (id !== this.hover) { this.hover = id; this.paint(); }
  };

  P._onMove = function (e) {
    var id = this._hit(e);
    this._setHover(id);
    if (id < 0) { this.tip.style.display = "none"; this.canvas.style.cursor = "default"; return; }
    this.canvas.style.cursor = "pointer";
    if (this.tip.dataset.node !== String(id)) {
      D.clear(this.tip);
      this.tip.appendChild(D.nodeCard(this.m, id, this.app.perStep()));
      this.tip.dataset.node = String(id);
    }
    this.tip.style.display = "block";
    var pad = 14, tw = this.tip.offsetWidth, th = this.tip.offsetHeight;
    var left = e.clientX + pad, top = e.clientY + pad;
    if (left + tw > window.innerWidth - 8) left = Math.max(8, e.clientX - tw - pad);
    if (top + th > window.innerHeight - 8) top = Math.max(8, e.clientY - th - pad);
    this.tip.style.left = left + "px";
    this.tip.style.top = top + "px";
  };

  /* The facts of one node, for the hover card and the selection panel: where it is, its
   * inclusive and exclusive GPU, CPU-op, copy, sync and API time, its counts and its memory. */
  var ROWS = [
    ["GPU time", ["gpu_ns", "copy_ns", "memset_ns"], "ns"], ["kernel time", ["gpu_ns"], "ns"],
    ["copy time", ["copy_ns"], "ns"], ["memset time", ["memset_ns"], "ns"], ["CPU op time", ["cpu_ns"], "ns"],
    ["sync wait", ["sync_ns"], "ns"], ["CUDA API", ["api_ns"], "ns"], ["kernels", ["kernels"], "count"],
    ["copies", ["copies"], "count"], ["bytes copied", ["copy_bytes"], "bytes"], ["syncs", ["syncs"], "count"],
    ["op calls", ["calls"], "count"], ["memory at the peak", ["mem_peak_bytes"], "bytes"],
    ["memory allocated", ["mem_alloc_bytes"], "bytes"], ["allocations", ["mem_allocs"], "count"]
  ];

  D.nodeCard = function (m, id, perStep) {
    var kind = m.kind[id], bits = m.ctxBits, ctx = m.ctx(id);
    var card = D.el("div", { className: "card" });
    var head = D.el("div", { className: "card-title" });
    if (kind === "frame") {
      head.appendChild(D.el("span", { className: "loc", text: m.location(id) }));
      head.appendChild(D.el("span", { text: " " + m.name(id) }));
    } else {
      head.appendChild(D.el("span", { text: m.label(id) }));
    }
    card.appendChild(head);
    if (kind === "frame" && m.text(id)) card.appendChild(D.el("pre", { className: "card-code", text: m.text(id) }));
    var tags = D.el("div", { className: "card-tags" });
    tags.appendChild(D.el("span", { className: "tag kind", text: kind }));
    if (ctx & bits.forward) tags.appendChild(D.el("span", { className: "tag fwd", text: "forward" }));
    if (ctx & bits.backward) tags.appendChild(D.el("span", { className: "tag bwd", text: "backward" }));
    if (ctx & bits.compiled) tags.appendChild(D.el("span", { className: "tag cmp", text: "compiled" }));
    if (ctx & bits.replay) tags.appendChild(D.el("span", { className: "tag rep", text: "CUDA graph replay" }));
    if (m.mark(id)) tags.appendChild(D.el("span", { className: "tag warn", text: "\u26a0 " + m.mark(id) }));
    card.appendChild(tags);
    if (kind === "frame" && m.file(id)) card.appendChild(D.el("div", { className: "card-file", text: m.file(id) }));
    if (m.detail(id)) card.appendChild(D.el("div", { className: "card-detail", text: m.detail(id) }));
    var scale = perStep && m.steps > 0 ? m.steps : 1;
    var tbl = D.el("table", { className: "card-metrics" });
    tbl.appendChild(D.el("tr", null, D.el("th"), D.el("th", { text: "total" }), D.el("th", { text: "self" }),
      D.el("th", { text: "% of total" })));
    ROWS.forEach(function (r) {
      var inc = 0, exc = 0, tot = 0;
      r[1].forEach(function (k) { inc += m.get(id, k, true); exc += m.get(id, k, false); tot += m.get(0, k, true); });
      if (!inc) return;
      tbl.appendChild(D.el("tr", null, D.el("td", { text: r[0] }),
        D.el("td", { className: "num", text: D.fmtUnit(r[2], inc / scale) }),
        D.el("td", { className: "num", text: exc ? D.fmtUnit(r[2], exc / scale) : "" }),
        D.el("td", { className: "num", text: D.fmtPct(inc, tot) })));
    });
    if (kind === "kernel" && m.get(id, "kernels", false) > 0) {
      tbl.appendChild(D.el("tr", null, D.el("td", { text: "avg per launch" }),
        D.el("td", { className: "num", text: D.fmtTime(m.get(id, "gpu_ns", false) / m.get(id, "kernels", false)) }),
        D.el("td"), D.el("td")));
    }
    card.appendChild(tbl);
    if (scale > 1) card.appendChild(D.el("div", { className: "card-note", text: "per step (/" + m.steps + ")" }));
    return card;
  };
})(window.dlpt = window.dlpt || {});
