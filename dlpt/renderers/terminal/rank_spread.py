"""The cross-rank report's tree and lines: each row's value on every rank as min / median / max,
and the slowest rank, so a line that costs more on one rank stands out.

Values arrive per step of each rank (:mod:`dlpt.analysis.ranks.merge`); the ``Fmt`` these views get has
no step count, so nothing is divided twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch
from rich.console import RenderableType
from rich.text import Text

from dlpt.analysis.ranks.lines import LineTable, row_median
from dlpt.analysis.ranks.merge import Rank, SpreadNode, median
from dlpt.model.metrics import Metric
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt, label_parts, truncate
from dlpt.renderers.terminal.grid import Chain, GridRow, render_grid

__all__ = ["SpreadTreeView", "LinesView", "spread_cells", "MAX_DEPTH"]

MAX_DEPTH = 100  # as the single-rank tree (dlpt.renderers.terminal.tree_view.MAX_DEPTH)


def spread_cells(fmt: Fmt, metric: Metric, values: Mapping[int, float], comm: float | None) -> list[str]:
    """min, median, max, slowest rank (when the ranks differ), and the median communication."""
    vals = list(values.values())
    lo, mid, hi = (min(vals), median(vals), max(vals)) if vals else (0.0, 0.0, 0.0)
    slowest = max(values, key=lambda r: (values[r], -r)) if vals and hi > lo else None
    cells = [
        fmt.value(metric, lo) if lo else "",
        fmt.value(metric, mid),
        fmt.value(metric, hi) if hi else "",
        f"r{slowest}" if slowest is not None else "",
    ]
    if comm is not None:
        cells.append(fmt.time(comm) if comm else "")
    return cells


def _headers(comm: Metric | None) -> list[str]:
    return ["min", "median", "max", "slowest", *([comm.name] if comm is not None else [])]


def _title(text: str, metric: Metric, fmt: Fmt, width: int, n: int) -> Text:
    t = Text(text, "bold")
    t.append(f"  {metric.label} per step, across {n} rank{'s' if n != 1 else ''}", "dim")
    return truncate(t, width, fmt.ascii)


class SpreadTreeView(View):
    """The merged tree: rows whose largest value on any rank reaches ``threshold`` of the total
    (the median rank's), children by median, at most ``depth`` levels."""

    def __init__(
        self,
        root: SpreadNode,
        ranks: Mapping[int, Rank],
        metric: Metric,
        fmt: Fmt,
        threshold: float,
        depth: int | None,
        comm: Metric | None,
    ) -> None:
        super().__init__(fmt)
        self.root, self.ranks, self.metric = root, ranks, metric
        self.threshold, self.depth, self.comm = threshold, depth, comm

    def _comm(self, n: SpreadNode) -> float | None:
        if self.comm is None:
            return None
        return median(list(n.values(self.comm, self.ranks).values()))

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        metric, ranks = self.metric, self.ranks
        total = median(list(self.root.values(metric, ranks).values()))
        cut = self.threshold * total
        limit = self.depth if self.depth else MAX_DEPTH
        rows: list[GridRow] = []
        stack: list[tuple[SpreadNode, Chain | None]] = [(self.root, None)]
        while stack:
            node, chain = stack.pop()
            values = node.values(metric, ranks)
            main, detail = label_parts(node.node, fmt)
            rows.append(
                GridRow(
                    spread_cells(fmt, metric, values, self._comm(node)),
                    main,
                    detail,
                    keep_detail=node.node.kind == "kernel",
                    chain=chain,
                )
            )
            depth = 1 if chain is None else chain[2] + 1
            if depth > limit:
                continue
            kids = []
            for c in node.children.values():
                v = c.values(metric, ranks)
                if v and max(v.values()) > 0 and max(v.values()) >= cut:
                    kids.append((median(list(v.values())), max(v.values()), c))
            kids.sort(key=lambda k: (-k[0], -k[1]))
            last = len(kids) - 1
            for i in range(last, -1, -1):
                stack.append((kids[i][2], (i == last, chain, depth)))
        yield _title("Top-down, every rank", metric, fmt, width, len(ranks))
        yield render_grid(_headers(self.comm), "name", rows, width, fmt.ascii)


class LinesView(View):
    """Source lines by their largest own cost on any rank, with the spread across ranks."""

    def __init__(
        self,
        lines: LineTable,
        ranks: Mapping[int, Rank],
        metric: Metric,
        fmt: Fmt,
        threshold: float,
        total: float,
        comm: Metric | None,
        limit: int = 25,
    ) -> None:
        super().__init__(fmt)
        self.lines, self.ranks, self.metric = lines, ranks, metric
        self.threshold, self.total, self.comm, self.limit = threshold, total, comm, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        metric, lines = self.metric, self.lines
        yield _title("Lines (each line's own cost)", metric, fmt, width, len(self.ranks))
        v = lines.values(metric)
        top = v.max(dim=1).values if len(lines) and v.shape[1] else torch.zeros(len(lines))
        keep = torch.nonzero((top > 0) & (top >= self.threshold * self.total)).flatten()
        if not len(keep):
            yield Text("  (nothing above the threshold)", "dim")
            return
        mid = row_median(v[keep])
        # The largest on any rank first, then the largest median (the order of :func:`sorted`
        # on (-top, -median), done on all lines at once).
        order = sorted(range(len(keep)), key=lambda i: (-float(top[keep[i]]), -float(mid[i])))
        comm = lines.values(self.comm) if self.comm is not None else None
        rows = []
        for i in order[: self.limit]:
            row = int(keep[i])
            values = lines.row(row, metric, v)
            c = median(list(lines.row(row, self.comm, comm).values())) if self.comm is not None else None
            main, detail = label_parts(lines.labels[row], fmt)
            rows.append(GridRow(spread_cells(fmt, metric, values, c), main, detail))
        yield render_grid(_headers(self.comm), "line", rows, width, fmt.ascii)
        if len(keep) > self.limit:
            yield Text(f"  ... {len(keep) - self.limit} more lines", "dim")
