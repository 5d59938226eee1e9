"""The data model embedded in an HTML report: a compact, column-oriented copy of the report tree
plus the flat profiles, source text and header facts the page shows.

Why not embed the session JSON: a session repeats every field name on every node and keeps
library frames the report folds away. Here the tree is a set of parallel arrays (parent, kind,
name, ...) with strings interned in one table and exclusive metrics stored sparsely (only
non-zero values), which keeps a 10,000-node report around a megabyte. The page computes
inclusive values, bottom-up trees and per-line details from these arrays itself, so switching
metrics needs no second copy of anything.

Everything comes from the run's :class:`~dlpt.views.run.RunView`, folded and analysed once
for the terminal report, the page and the exports: the whole tree, the flat profiles (by line, op,
kernel: the page and the terminal agree on what a line's total and self cost are, including
under recursion) and the report model. Nothing here folds or analyses.

The model (``format`` "dlpt-html-model", ``version`` 1), read by ``assets/model.js``:

- ``strings``: the string table; every name, file, detail and source text is an index into it.
- ``kinds``, ``keys``, ``ctx_bits``: the node kinds, the metric keys (the order of every metric
  vector) and the context bits of a node (:data:`dlpt.views.run.CONTEXT_BITS`).
- ``nodes``: parallel arrays in pre-order: ``parent`` (-1 for the root), ``kind`` (index into
  ``kinds``), ``name``/``file``/``detail``/``mark`` (string indices; ``mark`` holds compile
  markers), ``line``, ``ctx``; and ``m``: per key, ``[node ids, values]`` of the non-zero
  exclusive values.
- ``metrics`` (those with a non-zero total: name, label, unit, keys summed), ``metric`` (shown
  first), ``steps`` (profiled steps, 0 if none), ``show_all``.
- ``flat``: ``line``/``op``/``kernel`` rows ``[node id, inclusive vector, self vector]``.
- ``sources``: ``{file string index: [[line, text string index], ...]}`` for the files shown,
  ``has_sources``; ``header``: see :mod:`dlpt.renderers.html.facts`.
- ``sampled``: PC-sampled kernel files and their lines' samples and stalls (``--pc-sampling``;
  :mod:`dlpt.renderers.html.pc_model`), ``{}`` without.
- ``units``: the unit steps and decimals numbers are written with, from the table the terminal
  report uses (:func:`dlpt.model.units.units_model`), so the page cannot format differently.
- ``timeline``: the session's timeline window, or null: see :mod:`dlpt.renderers.html.timeline`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpt.model.kernel_names import kernel_config
from dlpt.model.metrics import METRICS, Metric
from dlpt.model.resume_names import display_name
from dlpt.model.session import KINDS, Session
from dlpt.model.source_text import session_sources
from dlpt.model.tree import Node, walk
from dlpt.model.units import units_model
from dlpt.renderers.html.budget import OTHER_KIND, Budget, plan
from dlpt.renderers.html.facts import header_facts
from dlpt.renderers.html.pc_model import frame_pc_detail, kernel_pc_detail, sampled_files
from dlpt.renderers.html.timeline import timeline_model
from dlpt.views.run import CONTEXT_BITS, FlatRow, LineHalfWidths, RunView, view_of

__all__ = ["MODEL_VERSION", "KEYS", "METRIC_KEYS", "build_model"]

MODEL_VERSION = 1

#: The page's note when no step was counted and its tree is the work outside steps.
OUTSIDE_NOTE = (
    "No step was counted: the tree, the flame graph and the tables show the work outside steps "
    "(set-up, warm-up and the end of the run), as totals for the run"
)

#: Metric keys embedded per node (exclusive values). ``min_ns``/``max_ns`` are left out: they do
#: not sum, and the page shows averages instead.
KEYS: tuple[str, ...] = (
    "gpu_ns",
    "copy_ns",
    "memset_ns",
    "cpu_ns",
    "sync_ns",
    "api_ns",
    "kernels",
    "copies",
    "memsets",
    "syncs",
    "calls",
    "copy_bytes",
    "mem_peak_bytes",
    "mem_alloc_bytes",
    "mem_allocs",
    "host_ns",
    "host_gil_ns",
    "host_cpu_ns",
)

#: Each metric of ``dlpt.model.metrics.METRICS`` as a sum of keys, which is how the page evaluates
#: it (a unit test checks this against the Python definitions).
METRIC_KEYS: dict[str, tuple[str, ...]] = {
    "gpu": ("gpu_ns", "copy_ns", "memset_ns"),
    "cpu": ("cpu_ns",),
    "sync": ("sync_ns",),
    "api": ("api_ns",),
    "kernel": ("gpu_ns",),
    "copy": ("copy_ns",),
    "memset": ("memset_ns",),
    "kernels": ("kernels",),
    "calls": ("calls",),
    "bytes": ("copy_bytes",),
    "mem_peak": ("mem_peak_bytes",),
    "mem_alloc": ("mem_alloc_bytes",),
    "mem_allocs": ("mem_allocs",),
    "host": ("host_ns",),
    "host_gil": ("host_gil_ns",),
    "host_cpu": ("host_cpu_ns",),
}


class _Strings:
    """An interning string table: each distinct string is stored once, nodes hold indices."""

    def __init__(self) -> None:
        self.table: list[str] = [""]
        self._index: dict[str, int] = {"": 0}

    def __call__(self, s: str) -> int:
        i = self._index.get(s)
        if i is None:
            i = self._index[s] = len(self.table)
            self.table.append(s)
        return i


def _display_name(node: Node) -> str:
    if node.kind == "frame":
        return display_name(node.name)
    if node.kind == "root":
        return "all"
    return node.name


def _detail(node: Node) -> str:
    """Secondary text of a node: launch configuration and fused ops of kernels, host memory
    kind of copies (what the terminal prints dimmed after the name)."""
    x = node.typed_extras
    if node.kind == "kernel":
        cfg = kernel_config(x)
        if x.fuses:
            cfg = f"fuses {'+'.join(x.fuses)}  {cfg}".rstrip()
        return f"{cfg}  {kernel_pc_detail(x.pc)}".strip()
    if node.kind == "memcpy":
        return x.host_mem or ""
    if node.kind == "frame" and x.pc_fused:
        return frame_pc_detail(x.pc_fused)
    return ""


def _vector(m: Mapping[str, int]) -> list[int]:
    return [int(m.get(k, 0)) for k in KEYS]


def _flat_rows(
    rows: list[FlatRow], ids: dict[int, int], halves: LineHalfWidths | None = None
) -> list[list[Any]]:
    """[node id of the row's first node, inclusive vector, self vector] per row with any value;
    with ``halves`` (lines of a session with per-step spreads), a fourth: the row's inclusive
    95% half-width vector (docs/numbers.md)."""
    out = []
    for r in rows:
        inc, own = _vector(r.inclusive), _vector(r.self)
        if any(inc) or any(own):
            row: list[Any] = [ids[id(r.node)], inc, own]
            if halves is not None:
                half = halves.get((r.node.file, r.node.line))
                row.append(_vector(half[1]) if half is not None else [0] * len(KEYS))
            out.append(row)
    return out


def _metric_defs(root: Node) -> list[dict[str, Any]]:
    """Metrics with a non-zero total, in METRICS order (the page offers only those)."""
    out = []
    for name, m in METRICS.items():
        if m(root.inclusive) > 0:
            out.append({"name": name, "label": m.label, "unit": m.unit, "keys": list(METRIC_KEYS[name])})
    return out


def _node_table(root: Node, strings: _Strings, budget: Budget) -> tuple[dict[str, Any], dict[int, int]]:
    """The tree as parallel arrays in pre-order (a parent before its children), and the index
    of every tree node (by ``id()``) in them. Only the nodes ``budget`` embeds; after a node's
    embedded children, one ``other`` node holds what its other children sum to."""
    kinds = sorted(KINDS) + ([OTHER_KIND] if budget.kept is not None else [])
    kind_index = {k: i for i, k in enumerate(kinds)}
    cols: dict[str, list[int]] = {
        c: [] for c in ("parent", "kind", "name", "file", "line", "detail", "mark", "ctx")
    }
    metrics: dict[str, tuple[list[int], list[int]]] = {k: ([], []) for k in KEYS}
    ids: dict[int, int] = {}

    def add(i: int, parent: int, kind: str, name: str, m: Mapping[str, int], ctx: int) -> None:
        cols["parent"].append(parent)
        cols["kind"].append(kind_index.get(kind, kind_index["thread"]))
        cols["name"].append(strings(name))
        cols["ctx"].append(ctx)
        for k, (col_ids, col_vals) in metrics.items():
            v = m.get(k, 0)
            if v:
                col_ids.append(i)
                col_vals.append(int(v))

    # Pre-order; an entry (None, parent) stands for the parent's "other" node, after its children.
    stack: list[tuple[Node | None, Node]] = [(root, root)]
    while stack:
        node, parent = stack.pop()
        i = len(cols["parent"])
        if node is None:
            summed, count = budget.other[id(parent)]
            add(
                i,
                ids[id(parent)],
                OTHER_KIND,
                f"other ({count:,} nodes)",
                summed,
                cols["ctx"][ids[id(parent)]],
            )
            for c in ("file", "detail", "mark"):
                cols[c].append(0)
            cols["line"].append(0)
            continue
        ids[id(node)] = i
        add(
            i,
            ids[id(node.parent)] if node.parent is not None else -1,
            node.kind,
            _display_name(node),
            node.metrics,
            RunView.context(node),
        )
        cols["file"].append(strings(node.file))
        cols["line"].append(node.line)
        cols["detail"].append(strings(_detail(node)))
        cols["mark"].append(strings(node.marker))
        if id(node) in budget.other:
            stack.append((None, node))
        stack.extend((c, node) for c in reversed(node.children) if budget.embeds(c))
    # Sparse exclusive metrics: per key, the node ids holding a non-zero value and the values.
    table: dict[str, Any] = {**cols, "m": {k: [c[0], c[1]] for k, c in metrics.items() if c[0]}}
    return {"kinds": kinds, "nodes": table}, ids


def build_model(
    source: Session | RunView,
    metric: str | Metric | None = None,
    show_all: bool | None = None,
    peak_tflops: float | None = None,
) -> dict[str, Any]:
    """The JSON-ready model for the HTML page of a session or of the run's view of it.

    ``metric`` is the one shown first (default: GPU time if there is any, else CPU op time);
    ``show_all`` keeps library frames instead of folding them into their callers;
    ``peak_tflops`` replaces the datasheet peak for MFU (as the terminal report's option); None:
    as the view given does (:func:`dlpt.views.run.view_of`).
    """
    sv = view_of(source, show_all, peak_tflops)
    session, root, all_flats = sv.session, sv.whole, sv.flats
    shaped = sv.outside_tree(metric, 0.0, None) if sv.counted_nothing else None
    if shaped is not None and sv.outside is not None:
        # No step counted: the page shows the work outside steps (unpruned), as totals.
        root, chosen, all_flats = sv.outside, shaped[1], sv.outside_flats
    else:
        chosen = sv.metric(metric)
    offered = _metric_defs(root)
    budget, flats = plan(root, [METRICS[d["name"]] for d in offered], all_flats)
    strings = _Strings()
    tree, ids = _node_table(root, strings, budget)
    stored = session_sources(session.typed_meta)

    # Source text of the lines the page shows (library files are folded away unless show_all).
    shown: dict[str, set[int]] = {}
    for node, _ in walk(root):
        if node.kind == "frame" and node.file and id(node) in ids:
            shown.setdefault(node.file, set()).add(node.line)
    sampled = sampled_files(session.typed_meta, strings)  # kernel files (--pc-sampling): shown whole
    for f in stored:
        if str(strings(f)) in sampled:
            shown.setdefault(f, set()).update(int(n) for n in stored[f])
    sources = {
        str(strings(f)): [
            [n, strings(t)] for n, t in sorted(lines.items()) if budget.kept is None or _near(n, shown[f])
        ]
        for f, lines in sorted(stored.items())
        if f in shown
    }

    report = sv.report()
    header = header_facts(report)
    note = budget.note()
    if note is not None:
        header["warnings"].append({"level": "info", "text": note})
    if shaped is not None:
        header["warnings"].append({"level": "info", "text": OUTSIDE_NOTE})

    return {
        "format": "dlpt-html-model",
        "version": MODEL_VERSION,
        "strings": strings.table,
        "keys": list(KEYS),
        "ctx_bits": CONTEXT_BITS,
        **tree,
        "metrics": offered,
        "metric": chosen.name,
        "steps": report.steps,
        "show_all": sv.options.show_all,
        "flat": {
            table: _flat_rows(rows, ids, sv.line_halves if table == "line" and shaped is None else None)
            for table, rows in flats.items()
        },
        "sources": sources,
        "sampled": sampled,
        "has_sources": bool(stored),
        "header": header,
        "units": units_model(),
        "timeline": timeline_model(sv.timeline, strings),
    }


def _near(line: int, shown: set[int]) -> bool:
    """Whether source ``line`` is one the page shows or one of the two around it (the context
    dlpt saves with every profiled line)."""
    return any(line + d in shown for d in range(-2, 3))
