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

  /* Numbers, formatted as the terminal report does (dlpt/renderers/format.py). */
  D.fmtTime = function (ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(2) + "s";
    if (a >= 1e6) return (ns / 1e6).toFixed(2) + "ms";
    if (a >= 1e3) return (ns / 1e3).toFixed(1) + "\u00b5s";
    if (a === 0) return "0";
    return ns.toFixed(0) + "ns";
  };

  D.fmtCount = function (n) {
    if (n === Math.round(n)) return Math.round(n).toLocaleString("en-US");
    return n.toLocaleString("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  };

  D.fmtBytes = function (b) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"];
    var v = b, i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return i === 0 ? v.toFixed(0) + " B" : v.toFixed(1) + " " + units[i];
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
})(window.dlpt = window.dlpt || {});
