/* dlpt report: DOM and number-formatting helpers shared by every view.
 *
 * Every session string reaches the DOM through el()/text(), which use text nodes only:
 * kernel, file and function names are data, never markup. */
(function (D) {
  "use strict";

  /* Create an element. props: className, text, title, attrs {name: value}, style {k: v},
   * on {event: handler}; children: nodes or strings (as text) or null (skipped). */
  D.el = function (tag, props) {
    var e = document.createElement(tag);
    props = props || {};
    if (props.className) e.className = props.className;
    if (props.text !== undefined && props.text !== null) e.textContent = D.clean(String(props.text));
    if (props.title) e.title = D.clean(String(props.title));
    var k;
    if (props.attrs) for (k in props.attrs) e.setAttribute(k, props.attrs[k]);
    if (props.style) for (k in props.style) e.style[k] = props.style[k];
    if (props.on) for (k in props.on) e.addEventListener(k, props.on[k]);
    for (var i = 2; i < arguments.length; i++) D.append(e, arguments[i]);
    return e;
  };

  D.append = function (parent, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { D.append(parent, c); }); return; }
    parent.appendChild(typeof child === "string" ? document.createTextNode(D.clean(child)) : child);
  };

  D.clear = function (e) { while (e.firstChild) e.removeChild(e.firstChild); return e; };

  /* Control characters (an escape sequence in a kernel name, a NUL) shown as U+FFFD. */
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  var CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
  D.clean = function (s) { return String(s).replace(CONTROL, "\ufffd"); };

  D.basename = function (path) {
    var i = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
    return i >= 0 ? path.slice(i + 1) : path;
  };

  D.dirname = function (path) {
    var i = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
    return i >= 0 ? path.slice(0, i + 1) : "";
  };

  /* Numbers, formatted as the terminal report does. The units (steps, decimals, separators)
   * are data from the Python side, the one table the terminal report formats with
   * (dlpt/model/units.py, the model's "units"); D.setUnits takes them before anything is
   * drawn. tests/html/test_js_format.py holds these functions equal to Python's Fmt. */
  var UNITS = null;

  D.setUnits = function (units) {
    if (!units || !units.ns || !units.bytes || !units.count) throw new Error("dlpt: the model has no units table");
    UNITS = units;
  };

  function table(name) {
    if (!UNITS) throw new Error("dlpt: D.setUnits(model.units) was not called");
    return UNITS[name];
  }

  /* x with d decimals exactly as Python's format(x, ".<d>f") writes it. Both round the exact
   * binary value; on an exact tie toFixed rounds away from zero, Python to even. A tie at d
   * decimals is a value whose |x| * 2^(d+1) is an odd integer; toFixed's last digit is then
   * odd in half the cases, and one less is Python's (no borrow: the digit is odd). */
  function fixed(x, d) {
    var s = x.toFixed(d);
    if (Math.abs(x) * Math.pow(2, d + 1) % 2 === 1 && /[13579]$/.test(s)) {
      s = s.slice(0, -1) + String(Number(s.charAt(s.length - 1)) - 1);
    }
    if (x === 0 && 1 / x < 0) s = "-" + s;  // Python keeps the sign of a negative zero
    return s;
  }

  /* Thousands separators in the integer part, as Python's "," format option. */
  function grouped(s, sep) {
    var m = /^(-?)(\d+)(.*)$/.exec(s);
    if (!m) return s;
    return m[1] + m[2].replace(/\B(?=(\d{3})+$)/g, sep) + m[3];
  }

  /* v in a scale of units (dlpt.model.units.Scale.format): the first step, from the
   * largest, whose size is at most |v|, else the smallest; an exact zero as the scale's zero. */
  function scaled(t, v) {
    if (v === 0 && t.zero !== null && t.zero !== undefined) return t.zero;
    var a = Math.abs(v), steps = t.steps, st = steps[steps.length - 1];
    for (var i = 0; i < steps.length; i++) {
      if (a >= steps[i][0]) { st = steps[i]; break; }
    }
    return fixed(v / st[0], st[2]) + t.sep + st[1];
  }

  D.fmtTime = function (ns) { return scaled(table("ns"), ns); };

  D.fmtBytes = function (b) { return scaled(table("bytes"), b); };

  /* A count as dlpt.model.units.Counts.format: the table's decimals; whole at that precision,
   * whole (1, not 1.0); too small to show, the table's "below" (<0.1), never a 0 that hides it. */
  D.fmtCount = function (n) {
    var t = table("count"), s = fixed(n, t.decimals);
    if (Number(s) === 0 && n !== 0) return t.below;
    s = s.replace(/\.0+$/, "");  // whole at that precision: "1.0" -> "1" (Python's int(r))
    if (s === "-0") s = "0";
    return grouped(s, t.group);
  };

  D.fmtUnit = function (unit, v) {
    if (unit === "ns") return D.fmtTime(v);
    if (unit === "bytes") return D.fmtBytes(v);
    return D.fmtCount(v);
  };

  D.fmtPct = function (part, total) {
    if (!(total > 0)) return "\u2013";
    var p = 100 * part / total;
    return (p >= 99.95 ? p.toFixed(0) : p.toFixed(1)) + "%";
  };

  /* Debounce: run fn once, wait ms after the last call. */
  D.debounce = function (fn, ms) {
    var t = null;
    return function () {
      var args = arguments, self = this;
      if (t) clearTimeout(t);
      t = setTimeout(function () { t = null; fn.apply(self, args); }, ms);
    };
  };

  /* A small publish/subscribe hub: views react to state changes (metric, selection). */
  D.Hub = function () { this.subs = {}; };
  D.Hub.prototype.on = function (ev, fn) { (this.subs[ev] = this.subs[ev] || []).push(fn); };
  D.Hub.prototype.emit = function (ev, arg) {
    (this.subs[ev] || []).forEach(function (fn) { fn(arg); });
  };

  /**
   * Start a page once the document is parsed: read its model (the "dlpt-data" script), set the
   * units, build `new Page(model)` into #app and keep it as D.app. A failure replaces the page
   * with its stack ("dlpt <what> failed to load: ..."): a blank page tells its reader nothing.
   */
  D.boot = function (what, Page) {
    function start() {
      var root = document.getElementById("app");
      try {
        var raw = JSON.parse(document.getElementById("dlpt-data").textContent);
        D.setUnits(raw.units);
        D.clear(root);
        var app = new Page(raw);
        D.app = app;
        app.build(root);
      } catch (e) {
        D.clear(root).appendChild(D.el("pre", { className: "fatal", text: "dlpt " + what + " failed to load: " + (e && e.stack || e) }));
        throw e;
      }
    }
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  };
})(window.dlpt = window.dlpt || {});
