"""The top lines of an answer: each source line's own cost per step with its 95% interval and
share, and beside it what the same line did (kernels, ops, FLOPs, bytes, memory at the peak,
host time, PC-sampling stalls), each only where the run recorded it.

A line's own cost is the flat profile's ``self`` (:func:`dlpt.trees.processors.flatten_by_line`
on the run's whole folded tree): what the line caused itself, work under deeper user lines
counted at those lines, so the lines' costs add up to the total. Its kernels, ops and stalls are
the nodes whose nearest frame is the line: the same rule, node by node.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from dlpt.analysis.work import LineWork
from dlpt.analysis.work_tables import WorkRow
from dlpt.model.metrics import Metric
from dlpt.model.source_text import session_sources
from dlpt.model.tree import Node, walk
from dlpt.trees.processors import FlatRow
from dlpt.views.run import RunView

__all__ = [
    "LineKey",
    "LineNodes",
    "line_nodes",
    "line_row",
    "ranked_rows",
    "per",
    "place",
    "same_file",
    "TEXT_LIMIT",
]

#: (file, line): how the flat profile keys a line.
LineKey = tuple[str, int]
#: Source text and names longer than this are cut (an answer stays small whatever the session holds).
TEXT_LIMIT = 160
#: Stall reasons shown per line (the largest).
STALLS_SHOWN = 3


@dataclass
class LineNodes:
    """The nodes of one line's own cost: its ops and leaves (kernels, copies, memsets, syncs)."""

    ops: list[Node] = field(default_factory=list)
    leaves: list[Node] = field(default_factory=list)


def line_nodes(root: Node) -> dict[LineKey, LineNodes]:
    """Every line's own nodes, by (file, line), from one walk of the whole tree."""
    out: dict[LineKey, LineNodes] = {}
    near: dict[int, LineKey | None] = {id(root): None}
    for node, _ in walk(root):
        if node.parent is None:
            continue
        where = (node.file, node.line) if node.kind == "frame" else near[id(node.parent)]
        near[id(node)] = where
        if where is None or node.kind in ("frame", "phase", "thread"):
            continue
        group = out.setdefault(where, LineNodes())
        (group.ops if node.kind == "op" else group.leaves).append(node)
    return out


def per(view: RunView) -> int:
    """What per-step values are divided by (1: values per run)."""
    return max(1, view.session.typed_meta.profiled_steps)


def cut(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 3] + "..."


def ranked_rows(view: RunView, metric: Metric) -> list[FlatRow]:
    """Lines with any own cost of ``metric``, largest first (ties by place, for a stable order)."""
    rows = [r for r in view.flats["line"] if metric(r.self) > 0]
    return sorted(rows, key=lambda r: (-metric(r.self), r.node.file, r.node.line))


def place(file: str, line: int, function: str, text: str | None) -> dict[str, Any]:
    """Where a line is, as every answer names it (a query's rows, a comparison's)."""
    out: dict[str, Any] = {
        "where": f"{os.path.basename(file) or file}:{line}",
        "file": file,
        "line": line,
        "function": cut(function),
    }
    if text is not None:
        out["text"] = cut(text.strip())
    return out


def same_file(path: str, file: str) -> bool:
    """Whether ``file`` as a user wrote it (a path, its tail or a file name) names ``path``."""
    return path == file or os.path.basename(path) == file or path.endswith("/" + file.lstrip("./"))


def _identity(view: RunView, row: FlatRow) -> dict[str, Any]:
    node = row.node
    return place(
        node.file,
        node.line,
        node.name,
        session_sources(view.session.typed_meta).get(node.file, {}).get(node.line),
    )


def _pc(nodes: LineNodes | None) -> dict[str, Any] | None:
    """PC-sampling samples and stall reasons of the line's kernels (``--pc-sampling``)."""
    if nodes is None:
        return None
    samples, stalls = 0, dict[str, int]()
    for k in nodes.leaves:
        pc = k.typed_extras.pc
        if pc is None:
            continue
        samples += pc.samples
        for reason, n in (pc.stalls or {}).items():
            stalls[reason] = stalls.get(reason, 0) + n
    if not samples:
        return None
    top = sorted(stalls.items(), key=lambda kv: -kv[1])[:STALLS_SHOWN]
    return {"samples": samples, "stalls": dict(top)}


def _top_kernel(nodes: LineNodes | None) -> str | None:
    kernels: dict[str, int] = {}
    for k in nodes.leaves if nodes is not None else ():
        if k.kind == "kernel":
            kernels[k.name] = kernels.get(k.name, 0) + k.metrics.get("gpu_ns", 0)
    return cut(max(kernels, key=lambda n: kernels[n])) if kernels else None


def _work(work: WorkRow[LineWork] | None, steps: int) -> dict[str, Any]:
    """FLOPs per step and where the line's kernels sit under the roofline (``--flops``)."""
    if work is None or not work.work.flops:
        return {}
    out: dict[str, Any] = {"flops": round(work.work.flops / steps)}
    b = work.bound
    if b.tflops is not None:
        out["tflops"] = round(b.tflops, 3)
    if b.kind:
        out["bound"] = b.kind
    if b.fraction is not None:
        out["of_roof"] = round(b.fraction, 4)
    return out


#: Own metrics an answer carries per line, where non-zero: (answer key, metric key).
OWN_KEYS = (
    ("gpu_ns", "gpu_ns"),
    ("copy_ns", "copy_ns"),
    ("cpu_ns", "cpu_ns"),
    ("sync_ns", "sync_ns"),
    ("kernels", "kernels"),
    ("ops", "calls"),
    ("copy_bytes", "copy_bytes"),
    ("mem_peak_bytes", "mem_peak_bytes"),
    ("host_ns", "host_ns"),
)


def line_row(
    view: RunView,
    metric: Metric,
    row: FlatRow,
    total: int,
    nodes: LineNodes | None,
    work: WorkRow[LineWork] | None,
) -> dict[str, Any]:
    """One line of an answer (docs/query-format.md, "lines")."""
    steps = per(view)
    own = metric(row.self)
    out = _identity(view, row)
    out["self"] = round(own / steps)
    halves = view.line_halves
    if halves is not None:
        half = halves.get((row.node.file, row.node.line))
        out["ci95"] = round(metric(half[0]) / steps) if half is not None else None
    out["share"] = round(own / total, 4) if total else 0.0
    out["total"] = round(metric(row.inclusive) / steps)
    for key, mkey in OWN_KEYS:
        v = row.self.get(mkey, 0)
        if v:
            out[key] = round(v / steps, 2) if mkey in ("kernels", "calls") else round(v / steps)
    top = _top_kernel(nodes)
    if top is not None:
        out["top_kernel"] = top
    out.update(_work(work, steps))
    pc = _pc(nodes)
    if pc is not None:
        out["pc"] = pc
    return out
