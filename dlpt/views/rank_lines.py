"""The rows of the report across ranks: the lines and the merged tree, each row with its value on
every rank, shaped from the table of every line on every rank (torch tensors: a thousand ranks
times ten thousand lines, computed on one torch thread) for :class:`dlpt.views.ranks.RanksView`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dlpt.analysis.ranks.lines import LineTable, one_thread, row_median
from dlpt.analysis.ranks.merge import median
from dlpt.model.metrics import Metric
from dlpt.model.tree import Node

__all__ = ["SpreadRow", "PageLine", "line_rows", "page_lines"]


@dataclass(frozen=True)
class SpreadRow:
    """A row of the merged tree or of the lines: its label, its value on every rank (per step),
    the median communication beside it (None: no such column), and, in the tree, whether it is
    its parent's last child shown and its depth below the root (0)."""

    node: Node
    values: dict[int, float]
    comm: float | None
    last: bool = False
    depth: int = 0

    @property
    def across(self) -> tuple[float, float, float, int | None]:
        """The least, the median and the most of the ranks' values, and the slowest rank (None
        when the ranks do not differ)."""
        vals = list(self.values.values())
        lo, mid, hi = (min(vals), median(vals), max(vals)) if vals else (0.0, 0.0, 0.0)
        slowest = max(self.values, key=lambda r: (self.values[r], -r)) if vals and hi > lo else None
        return lo, mid, hi, slowest


@dataclass(frozen=True)
class PageLine:
    """A line of the page: its label, and per metric name its max, median and min across ranks
    (per step, rounded) and the slowest rank."""

    node: Node
    values: dict[str, list[int]]


def line_rows(
    lines: LineTable, metric: Metric, comm: Metric | None, cut: float, limit: int
) -> tuple[list[SpreadRow], int]:
    """The lines whose largest own cost of ``metric`` on any rank reaches ``cut`` (per step), the
    largest on any rank first, then the largest median: at most ``limit`` of them, each with the
    median of ``comm`` beside it; and how many reach it."""
    with one_thread():
        return _line_rows(lines, metric, comm, cut, limit)


def _line_rows(
    lines: LineTable, metric: Metric, comm: Metric | None, cut: float, limit: int
) -> tuple[list[SpreadRow], int]:
    v = lines.values(metric)
    top = v.max(dim=1).values if len(lines) and v.shape[1] else torch.zeros(len(lines))
    keep = torch.nonzero((top > 0) & (top >= cut)).flatten()
    if not len(keep):
        return [], 0
    mid = row_median(v[keep])
    # The largest on any rank first, then the largest median (the order of :func:`sorted`
    # on (-top, -median), done on all lines at once).
    order = sorted(range(len(keep)), key=lambda i: (-float(top[keep[i]]), -float(mid[i])))
    comm_values = lines.values(comm) if comm is not None else None
    rows = []
    for i in order[:limit]:
        row = int(keep[i])
        c = median(list(lines.row(row, comm, comm_values).values())) if comm is not None else None
        rows.append(SpreadRow(lines.labels[row], lines.row(row, metric, v), c))
    return rows, len(keep)


def page_lines(table: LineTable, metric: Metric, metrics: list[Metric], limit: int) -> list[PageLine]:
    """The costliest lines (by ``metric`` on any rank; lines with only other metrics after
    them), at most ``limit``, each with, per metric of ``metrics``, its max, median and min
    across ranks and the slowest rank."""
    with one_thread():
        return _page_lines(table, metric, metrics, limit)


def _page_lines(table: LineTable, metric: Metric, metrics: list[Metric], limit: int) -> list[PageLine]:
    if not len(table):
        return []
    values = [table.values(m) for m in metrics]
    maxima = [v.max(dim=1).values for v in values]
    # The costliest by ``metric`` first; lines with only other metrics (a host line
    # without GPU time) after them, the page switches metrics.
    top = maxima[metrics.index(metric)]
    anything = torch.stack(maxima).amax(dim=0)
    by_any = torch.argsort(anything, descending=True, stable=True)
    ranked = by_any[torch.argsort(top[by_any], descending=True, stable=True)]
    shown = [i for i in ranked[:limit].tolist() if float(anything[i]) > 0]
    if not shown:
        return []
    # The spread of the shown lines only: a median over the ranks is a selection per line
    # (1,024 ranks x 10,000 lines: 1.3 s per metric for all of them; the page shows 2,000).
    at = torch.tensor(shown, dtype=torch.long)
    stats: dict[str, tuple[list[float], list[float], list[float], list[int]]] = {}
    for m, v in zip(metrics, values, strict=True):
        part = v[at]
        hi = part.max(dim=1)
        stats[m.name] = (
            hi.values.tolist(),
            row_median(part).tolist(),
            part.min(dim=1).values.tolist(),
            hi.indices.tolist(),
        )
    out = []
    for k, i in enumerate(shown):
        per = {
            name: [round(hi_v[k]), round(mid[k]), round(lo[k]), table.order[slow[k]]]
            for name, (hi_v, mid, lo, slow) in stats.items()
        }
        out.append(PageLine(table.labels[i], per))
    return out
