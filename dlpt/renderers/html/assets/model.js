/* dlpt report: the decoded data model (see dlpt/renderers/html/data.py for the embedded format).
 *
 * Nodes are indices 0..n-1 in pre-order (a parent before its children). Exclusive metrics are
 * unpacked into one Float64Array (node-major, one slot per key); inclusive metrics are summed
 * bottom-up once. A metric is a sum of keys, so every view evaluates any metric for any node
 * or flat row the same way. */
(function (D) {
  "use strict";

  var COUNT_KEY = { op: "calls", scope: "calls", kernel: "kernels", memcpy: "copies",
                    memset: "memsets", sync: "syncs" };
  /* The key holding a leaf's own time, for per-line lists of kernels, copies and syncs. */
  var TIME_KEY = { kernel: "gpu_ns", memcpy: "copy_ns", memset: "memset_ns", sync: "sync_ns" };

  D.Model = function (raw) {
    var nd = raw.nodes, n = nd.parent.length, K = raw.keys.length, i, k;
    this.raw = raw;
    this.n = n;
    this.K = K;
    this.keys = raw.keys;
    this.S = raw.strings;
    this.parent = nd.parent;
    this.steps = raw.steps || 0;
    this.ctxBits = raw.ctx_bits;
    this.keyIndex = {};
    for (k = 0; k < K; k++) this.keyIndex[raw.keys[k]] = k;

    this.kind = new Array(n);
    for (i = 0; i < n; i++) this.kind[i] = raw.kinds[nd.kind[i]];

    this.exc = new Float64Array(n * K);
    for (var key in nd.m) {
      var slot = this.keyIndex[key], ids = nd.m[key][0], vals = nd.m[key][1];
      for (i = 0; i < ids.length; i++) this.exc[ids[i] * K + slot] = vals[i];
    }
    this.inc = new Float64Array(this.exc);
    for (i = n - 1; i > 0; i--) {
      var p = this.parent[i];
      for (k = 0; k < K; k++) this.inc[p * K + k] += this.inc[i * K + k];
    }

    this.kids = new Array(n);
    this.depth = new Int32Array(n);
    for (i = 0; i < n; i++) this.kids[i] = [];
    for (i = 1; i < n; i++) {
      this.kids[this.parent[i]].push(i);
      this.depth[i] = this.depth[this.parent[i]] + 1;
    }

    this.metrics = {};
    this.metricList = raw.metrics.map(function (m) {
      var def = { name: m.name, label: m.label, unit: m.unit, idx: m.keys.map(function (kk) {
        return this.keyIndex[kk];
      }, this) };
      this.metrics[m.name] = def;
      return def;
    }, this);

    this.sources = {};
    for (var f in raw.sources) {
      var lines = {};
      raw.sources[f].forEach(function (pair) { lines[pair[0]] = this.S[pair[1]]; }, this);
      this.sources[this.S[+f]] = lines;
    }
    this._lineNodes = null;
  };

  var P = D.Model.prototype;

  P.name = function (i) { return this.S[this.raw.nodes.name[i]]; };
  P.file = function (i) { return this.S[this.raw.nodes.file[i]]; };
  P.line = function (i) { return this.raw.nodes.line[i]; };
  P.detail = function (i) { return this.S[this.raw.nodes.detail[i]]; };
  P.mark = function (i) { return this.S[this.raw.nodes.mark[i]]; };
  P.ctx = function (i) { return this.raw.nodes.ctx[i]; };
  P.isLeaf = function (i) { return Object.prototype.hasOwnProperty.call(TIME_KEY, this.kind[i]); };
  P.timeKey = function (kind) { return TIME_KEY[kind]; };

  /* The source text of file:line, stripped, or "" when the session holds none. */
  P.sourceLine = function (file, line) {
    var lines = this.sources[file];
    var t = lines ? lines[line] : undefined;
    return t === undefined ? "" : t.trim();
  };
  P.text = function (i) { return this.kind[i] === "frame" ? this.sourceLine(this.file(i), this.line(i)) : ""; };

  P.location = function (i) { return D.basename(this.file(i)) + ":" + this.line(i); };

  /* Short label: what a flame bar or table row shows first. */
  P.label = function (i) {
    var kind = this.kind[i];
    if (kind === "frame") {
      var t = this.text(i);
      return this.location(i) + "  " + (t || this.name(i));
    }
    if (kind === "scope") return "scope \u201c" + this.name(i) + "\u201d";
    return this.name(i);
  };

  /* Value of metric m (a def from this.metrics) for node i, inclusive or exclusive. */
  P.value = function (m, i, inclusive) {
    var a = inclusive === false ? this.exc : this.inc, base = i * this.K, v = 0;
    for (var j = 0; j < m.idx.length; j++) v += a[base + m.idx[j]];
    return v;
  };
  P.get = function (i, key, inclusive) {
    var slot = this.keyIndex[key];
    return (inclusive === false ? this.exc : this.inc)[i * this.K + slot];
  };
  /* Value of metric m for a flat-row vector (one number per key). */
  P.vecValue = function (m, vec) {
    var v = 0;
    for (var j = 0; j < m.idx.length; j++) v += vec[m.idx[j]];
    return v;
  };
  P.count = function (i) {
    var key = COUNT_KEY[this.kind[i]];
    return key ? this.get(i, key, false) : 0;
  };
  P.countKey = function (kind) { return COUNT_KEY[kind]; };
  P.total = function (m) { return this.value(m, 0, true); };

  P.ancestors = function (i) {
    var out = [];
    for (; i >= 0; i = this.parent[i]) out.push(i);
    return out.reverse();
  };

  /* Frame nodes at file:line, outermost per path (a recursive line counts once). */
  P.lineNodes = function (file, line) {
    if (!this._lineNodes) {
      var map = {}, n = this.n;
      for (var i = 0; i < n; i++) {
        if (this.kind[i] !== "frame") continue;
        var key = this.file(i) + "\u0000" + this.line(i);
        var p = this.parent[i], nested = false;
        for (; p >= 0; p = this.parent[p]) {
          if (this.kind[p] === "frame" && this.file(p) === this.file(i) && this.line(p) === this.line(i)) {
            nested = true;
            break;
          }
        }
        if (!nested) (map[key] = map[key] || []).push(i);
      }
      this._lineNodes = map;
    }
    return this._lineNodes[file + "\u0000" + line] || [];
  };

  /* Kernels, copies, memsets and syncs under the given nodes, grouped by kind and name, with
   * their own time split into forward, backward and other (neither pass). */
  P.leavesUnder = function (roots) {
    var groups = {}, list = [], bits = this.ctxBits;
    var stack = roots.slice();
    while (stack.length) {
      var i = stack.pop();
      var kind = this.kind[i];
      if (this.isLeaf(i)) {
        var key = kind + "\u0000" + this.name(i);
        var g = groups[key];
        if (!g) {
          g = groups[key] = { kind: kind, name: this.name(i), detail: this.detail(i), node: i,
                              fwd: 0, bwd: 0, other: 0, count: 0, compiled: false };
          list.push(g);
        }
        var t = this.get(i, TIME_KEY[kind], false), c = this.ctx(i);
        if (c & bits.backward) g.bwd += t; else if (c & bits.forward) g.fwd += t; else g.other += t;
        g.count += this.count(i);
        if (c & bits.compiled) g.compiled = true;
      }
      this.kids[i].forEach(function (k) { stack.push(k); });
    }
    list.forEach(function (grp) { grp.total = grp.fwd + grp.bwd + grp.other; });
    list.sort(function (a, b) { return b.total - a.total || (a.name < b.name ? -1 : 1); });
    return list;
  };
})(window.dlpt = window.dlpt || {});
