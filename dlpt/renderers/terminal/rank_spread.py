"""The cross-rank report's tree and lines: each row's value on every rank as min / median / max,
and the slowest rank, so a line that costs more on one rank stands out.

Values arrive per step of each rank, shaped by the view (:class:`dlpt.views.ranks.RanksView`); the
``Fmt`` these views get has no step count, so nothing is divided twice.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import RenderableType
from rich.text import Text

from dlpt.model.metrics import Metric
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt, label_parts, truncate
from dlpt.renderers.terminal.grid import Chain, GridRow, render_grid
from dlpt.views.ranks import RanksView, SpreadRow

__all__ = ["SpreadTreeView", "LinesView", "spread_cells", "MAX_DEPTH"]

MAX_DEPTH = 100  # as the single-rank tree (dlpt.renderers.terminal.tree_view.MAX_DEPTH)


def spread_cells(fmt: Fmt, metric: Metric, row: SpreadRow) -> list[str]:
    """min, median, max, slowest rank (when the ranks differ), and the median communication."""
    lo, mid, hi, slowest = row.across
    cells = [
        fmt.value(metric, lo) if lo else "",
        fmt.value(metric, mid),
        fmt.value(metric, hi) if hi else "",
        f"r{slowest}" if slowest is not None else "",
    ]
    if row.comm is not None:
        cells.append(fmt.time(row.comm) if row.comm else "")
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

    def __init__(self, view: RanksView, fmt: Fmt, threshold: float, depth: int | None) -> None:
        super().__init__(fmt)
        self.view, self.threshold, self.depth = view, threshold, depth

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        metric, comm = self.view.metric, self.view.comm
        rows: list[GridRow] = []
        chains: list[Chain | None] = [None]  # the chain of the last row at each depth
        for r in self.view.tree_rows(self.threshold, self.depth if self.depth else MAX_DEPTH):
            chain: Chain | None = None if r.depth == 0 else (r.last, chains[r.depth - 1], r.depth)
            del chains[r.depth :]
            chains.append(chain)
            main, detail = label_parts(r.node, fmt)
            cells = spread_cells(fmt, metric, r)
            rows.append(GridRow(cells, main, detail, keep_detail=r.node.kind == "kernel", chain=chain))
        yield _title("Top-down, every rank", metric, fmt, width, len(self.view.by_rank))
        yield render_grid(_headers(comm), "name", rows, width, fmt.ascii)


class LinesView(View):
    """Source lines by their largest own cost on any rank, with the spread across ranks."""

    def __init__(self, view: RanksView, fmt: Fmt, threshold: float, limit: int = 25) -> None:
        super().__init__(fmt)
        self.view, self.threshold, self.limit = view, threshold, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        metric = self.view.metric
        yield _title("Lines (each line's own cost)", metric, fmt, width, len(self.view.by_rank))
        shown, kept = self.view.line_rows(self.threshold, self.limit)
        if not kept:
            yield Text("  (nothing above the threshold)", "dim")
            return
        rows = []
        for r in shown:
            main, detail = label_parts(r.node, fmt)
            rows.append(GridRow(spread_cells(fmt, metric, r), main, detail))
        yield render_grid(_headers(self.view.comm), "line", rows, width, fmt.ascii)
        if kept > self.limit:
            yield Text(f"  ... {kept - self.limit} more lines", "dim")
