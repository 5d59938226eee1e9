/* dlpt report: a list of kernels, copies, memsets and syncs (the work one line caused), used by
 * the source view and the diff page. Each entry: the name on its own line (kernel names are
 * long and the telling part is often in the middle, so they wrap rather than being cut), then
 * its time, count and forward/backward split. */
(function (D) {
  "use strict";

  var KIND_COLOR = { kernel: "hsl(140,46%,62%)", memcpy: "hsl(192,76%,58%)", memset: "hsl(192,56%,74%)", sync: "hsl(0,72%,64%)" };

  /* items: [{kind, name, detail, fwd, bwd, other, count, color?}] (times in ns, raw totals);
   * fmt: {time(ns) -> string, count(n) -> string} (per-step scaling is theirs). */
  D.leafList = function (items, fmt) {
    var list = D.el("div", { className: "leaf-list" });
    items.forEach(function (g) {
      var total = g.fwd + g.bwd + g.other;
      var nums = D.el("div", { className: "leaf-nums" },
        D.el("span", { className: "leaf-time", text: fmt.time(total) }),
        D.el("span", { className: "muted", text: " \u00d7 " + fmt.count(g.count) }));
      if (g.fwd && (g.bwd || g.other)) nums.appendChild(D.el("span", { className: "tag fwd", text: "fwd " + fmt.time(g.fwd) }));
      else if (g.fwd) nums.appendChild(D.el("span", { className: "tag fwd", text: "forward" }));
      if (g.bwd && (g.fwd || g.other)) nums.appendChild(D.el("span", { className: "tag bwd", text: "bwd " + fmt.time(g.bwd) }));
      else if (g.bwd) nums.appendChild(D.el("span", { className: "tag bwd", text: "backward" }));
      if (g.other && (g.fwd || g.bwd)) nums.appendChild(D.el("span", { className: "tag", text: "other " + fmt.time(g.other) }));
      list.appendChild(D.el("div", { className: "leaf" },
        D.el("div", { className: "leaf-head" },
          D.el("span", { className: "swatch", style: { background: g.color || KIND_COLOR[g.kind] || "#ccc" } }),
          D.el("span", { className: "leaf-name", text: g.name })),
        g.detail ? D.el("div", { className: "detail", text: g.detail }) : null,
        nums));
    });
    return list;
  };
})(window.dlpt = window.dlpt || {});
