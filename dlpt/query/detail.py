"""One line's detail (``dlpt query SESSION --line FILE:LINE``, the MCP tool ``explain_line``):
the line as the top lines show it, then its kernels and copies, its ops, the lines that call it
and those it calls, its source with the lines around it and the suggestions placed on it
(docs/query-format.md, "line")."""

from __future__ import annotations

import os
from typing import Any

from dlpt.errors import UsageError
from dlpt.model.metrics import Metric
from dlpt.model.source_text import session_sources
from dlpt.model.tree import Node, walk
from dlpt.query.lines import LineKey, LineNodes, cut, per, same_file
from dlpt.trees.processors import FlatRow
from dlpt.views.run import RunView

__all__ = ["parse_where", "find_line", "detail", "ROWS"]

#: Rows per list of a detail (kernels, ops, callers, callees): the largest.
ROWS = 10
_TIME_KEY = {"kernel": "gpu_ns", "memcpy": "copy_ns", "memset": "memset_ns", "sync": "sync_ns"}
_COUNT_KEY = {"kernel": "kernels", "memcpy": "copies", "memset": "memsets", "sync": "syncs"}


def parse_where(text: str) -> tuple[str, int]:
    """``FILE:LINE`` (a path, a path's tail or a file name) -> (file, line); UsageError otherwise."""
    file, sep, num = text.rpartition(":")
    if not sep or not file or not num.strip().isdigit():
        raise UsageError(f"--line {text!r}: expected FILE:LINE, e.g. train.py:42")
    return file, int(num)


def find_line(view: RunView, where: str) -> FlatRow:
    """The flat row of the line ``where`` names; UsageError when none or several match."""
    file, line = parse_where(where)
    rows = [r for r in view.flats["line"] if r.node.line == line and same_file(r.node.file, file)]
    files = sorted({r.node.file for r in rows})
    if not rows:
        raise UsageError(f"no line {where} in this session (lines with no recorded cost are not in it)")
    if len(files) > 1:
        raise UsageError(f"{where} matches several files ({', '.join(files)}): give more of the path")
    return rows[0]


def _leaves(nodes: LineNodes, steps: int) -> list[dict[str, Any]]:
    """The line's kernels, copies, memsets and syncs by name, the longest first."""
    groups: dict[tuple[str, str], list[int]] = {}
    for n in nodes.leaves:
        if n.kind not in _TIME_KEY:
            continue
        g = groups.setdefault((n.kind, n.name), [0, 0])
        g[0] += n.metrics.get(_TIME_KEY[n.kind], 0)
        g[1] += n.metrics.get(_COUNT_KEY[n.kind], 0)
    rows = sorted(groups.items(), key=lambda kv: (-kv[1][0], kv[0]))[:ROWS]
    return [
        {"kind": kind, "name": cut(name), "ns": round(t / steps), "count": round(c / steps, 2)}
        for (kind, name), (t, c) in rows
    ]


def _own(op: Node, key: str) -> int:
    """``key`` summed over ``op`` and what hangs under it (its phases, kernels), nested ops and
    frames left out: they are rows of their own (the flat profile's ``self`` of an op)."""
    total, stack = 0, [op]
    while stack:
        n = stack.pop()
        total += n.metrics.get(key, 0)
        stack.extend(c for c in n.children if c.kind not in ("op", "frame"))
    return total


def _ops(nodes: LineNodes, steps: int) -> list[dict[str, Any]]:
    """The line's ops by name (backward ops included: a backward is grafted under the forward
    line that made it): their own CPU time, calls, and the GPU time of their own kernels."""
    groups: dict[str, list[int]] = {}
    for n in nodes.ops:
        g = groups.setdefault(n.name, [0, 0, 0])
        g[0] += _own(n, "cpu_ns")
        g[1] += n.metrics.get("calls", 0)
        g[2] += _own(n, "gpu_ns")
    rows = sorted(groups.items(), key=lambda kv: (-kv[1][2], -kv[1][0], kv[0]))[:ROWS]
    out = []
    for name, (cpu, calls, gpu) in rows:
        row: dict[str, Any] = {"name": cut(name), "cpu_ns": round(cpu / steps)}
        row["calls"] = round(calls / steps, 2)
        if gpu:
            row["gpu_ns"] = round(gpu / steps)
        out.append(row)
    return out


def _nearest_frame(node: Node | None) -> Node | None:
    while node is not None and node.kind != "frame":
        node = node.parent
    return node


def _neighbours(root: Node, key: LineKey, metric: Metric, steps: int) -> dict[str, list[dict[str, Any]]]:
    """The lines that call this one and those it calls, with the cost that flows through each
    (inclusive ``metric`` per step)."""
    callers: dict[LineKey, list[Any]] = {}
    callees: dict[LineKey, list[Any]] = {}
    for node, _ in walk(root):
        if node.kind != "frame" or node.parent is None:
            continue
        above = _nearest_frame(node.parent)
        if (node.file, node.line) == key and above is not None and (above.file, above.line) != key:
            g = callers.setdefault((above.file, above.line), [above, 0])
            g[1] += metric(node.inclusive)
        elif above is not None and (above.file, above.line) == key and (node.file, node.line) != key:
            g = callees.setdefault((node.file, node.line), [node, 0])
            g[1] += metric(node.inclusive)

    def rows(groups: dict[LineKey, list[Any]]) -> list[dict[str, Any]]:
        ranked = sorted(groups.values(), key=lambda g: (-g[1], g[0].file, g[0].line))[:ROWS]
        return [
            {
                "where": f"{os.path.basename(n.file)}:{n.line}",
                "function": cut(n.name),
                "total": round(v / steps),
            }
            for n, v in ranked
        ]

    return {"callers": rows(callers), "callees": rows(callees)}


def _source(view: RunView, key: LineKey) -> list[list[Any]]:
    """[line, text] of the line and the two around it on each side (what dlpt saves)."""
    lines = session_sources(view.session.typed_meta).get(key[0], {})
    return [[n, cut(lines[n].rstrip())] for n in range(key[1] - 2, key[1] + 3) if n in lines]


def detail(
    view: RunView, metric: Metric, row: FlatRow, line: dict[str, Any], nodes: LineNodes | None
) -> dict[str, Any]:
    """The answer's ``line`` (docs/query-format.md): ``line`` is its row as the top lines show it."""
    steps = per(view)
    key = (row.node.file, row.node.line)
    own = nodes or LineNodes()
    out: dict[str, Any] = dict(line)
    out["leaves"] = _leaves(own, steps)
    out["ops_by_name"] = _ops(own, steps)
    out.update(_neighbours(view.whole, key, metric, steps))
    out["source"] = _source(view, key)
    marker = view.markers.get(key)
    if marker:
        out["compile"] = marker
    return out
