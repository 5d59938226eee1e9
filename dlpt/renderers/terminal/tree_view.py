"""Top-down and bottom-up tree views and the flat (by line / op / kernel) tables."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from rich.console import RenderableType
from rich.text import Text

from dlpt.model.metrics import Metric
from dlpt.model.tree import Node
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import COUNT_KEY, Fmt, label_parts, truncate
from dlpt.renderers.terminal.grid import Chain, GridRow, LazyGrid, grid_width, render_grid
from dlpt.renderers.terminal.pc_rows import pc_rows
from dlpt.views.run import FlatRow

# Levels printed below the root unless --depth says otherwise: a runaway recursion 100,000 frames
# deep would print 100,000 lines; deeper levels are summarised by one "... N more levels" row.
MAX_DEPTH = 100


def _headers(metric: Metric, gpu: bool, extra: Sequence[Metric] = ()) -> list[str]:
    return ["total", "%", "self", *(m.name for m in extra), "calls"] + (["kern"] if gpu else [])


def _cells(
    fmt: Fmt,
    metric: Metric,
    total: int,
    inc: dict[str, int],
    exc: dict[str, int],
    kind: str,
    gpu: bool,
    extra: Sequence[Metric] = (),
) -> list[str]:
    value = metric(inc)
    own = metric(exc)
    count = exc.get(COUNT_KEY.get(kind, ""), 0)
    cells = [
        fmt.value(metric, value),
        Fmt.pct(value, total),
        fmt.value(metric, own) if own else "",
        *(fmt.value(m, m(inc)) if m(inc) else "" for m in extra),
        fmt.count(count) if count else "",
    ]
    if gpu:
        k = inc.get("kernels", 0)
        cells.append(fmt.count(k) if k else "")
    return cells


def _title(text: str, fmt: Fmt, metric: Metric, width: int) -> Text:
    per = f", per step (/{fmt.steps})" if fmt.steps > 0 else ""
    t = Text(text, "bold")
    t.append(f"  {metric.label}{per}", "dim")
    return truncate(t, width, fmt.ascii)


class TreeView(View):
    """A (pruned) tree as rows with guides, children sorted by ``metric``, largest first.

    Percentages are relative to the root's inclusive total (which counts what was pruned).
    Below ``max_depth`` levels a node's subtree is one row saying how many levels it hides.
    ``extra``: metrics shown as more columns after ``self``, inclusive (communication time).
    ``max_rows``: the first rows only (the hottest path first), and one row saying how many
    more ``--verbose`` shows."""

    def __init__(
        self,
        root: Node,
        metric: Metric,
        fmt: Fmt,
        title: str,
        gpu: bool,
        max_depth: int | None = None,
        extra: Sequence[Metric] = (),
        max_rows: int | None = None,
    ) -> None:
        super().__init__(fmt)
        self.root, self.metric, self.title, self.gpu, self.max_depth = root, metric, title, gpu, max_depth
        self.extra = tuple(extra)
        self.max_rows = max_rows

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        yield _title(self.title, fmt, self.metric, width)
        # Rows made as they are printed (twice: once to size the columns), never all at once:
        # with --threshold 0 a tree may have millions of them.
        yield LazyGrid(
            _headers(self.metric, self.gpu, self.extra),
            "name",
            lambda labels: self._rows(fmt, labels),
            width,
            fmt.ascii,
        )

    def content_width(self, fmt: Fmt, width: int) -> int | None:
        headers = _headers(self.metric, self.gpu, self.extra)
        grid = grid_width(headers, "name", lambda labels: self._rows(fmt, labels), width, fmt.ascii)
        return max(grid, _title(self.title, fmt, self.metric, width).cell_len)

    def _rows(self, fmt: Fmt, labels: bool = True) -> Iterator[GridRow]:
        """The rows in pre-order; ``labels`` False: cells only (sizing the columns)."""
        metric, gpu = self.metric, self.gpu
        total = metric(self.root.inclusive)
        no_label = Text()
        # Iterative pre-order walk; the chain records guide flags without copying per level.
        stack: list[tuple[Node, Chain | None]] = [(self.root, None)]
        shown = ncells = 0
        while stack:
            if self.max_rows is not None and shown >= self.max_rows:
                yield _more_rows(self.root, shown, ncells)
                return
            shown += 1
            node, chain = stack.pop()
            main, detail = label_parts(node, fmt) if labels else (no_label, "")
            row = GridRow(
                _cells(fmt, metric, total, node.inclusive, node.metrics, node.kind, gpu, self.extra),
                main,
                detail,
                keep_detail=node.kind == "kernel",
                chain=chain,
                source=node.kind == "frame",
            )
            yield row
            ncells = len(row.cells)
            x = node.typed_extras
            if x.pc is not None or x.pc_fused:  # PC samples: notes under the kernel or model line
                yield from pc_rows(node, fmt, chain, len(row.cells), labels)
            depth = 1 if chain is None else chain[2] + 1
            if self.max_depth is not None and depth > self.max_depth and node.children:
                yield _more_levels(node, (True, chain, depth), len(row.cells))
                continue
            kids = sorted(node.children, key=lambda c: -metric(c.inclusive))
            last = len(kids) - 1
            for i in range(last, -1, -1):
                stack.append((kids[i], (i == last, chain, depth)))


def _height(node: Node) -> int:
    """Levels below ``node`` (iterative: the chain may be as deep as the recursion was)."""
    deepest = 0
    stack = [(c, 1) for c in node.children]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((c, d + 1) for c in n.children)
    return deepest


def _count(node: Node) -> int:
    """Rows of the subtree at ``node``, itself included."""
    n, stack = 0, [node]
    while stack:
        n += 1
        stack.extend(stack.pop().children)
    return n


def _more_rows(root: Node, shown: int, ncells: int) -> GridRow:
    n = _count(root) - shown
    text = Text(f"... {n:,} more row{'s' if n != 1 else ''}", "bold")
    return GridRow([""] * ncells, text, "--verbose shows them")


def _more_levels(node: Node, chain: Chain, ncells: int) -> GridRow:
    n = _height(node)
    text = Text(f"... {n:,} more level{'s' if n != 1 else ''}", "bold")
    return GridRow([""] * ncells, text, "--depth shows them", chain=chain)


class FlatView(View):
    """A flat profile table: rows sorted by inclusive ``metric``, at most ``limit`` rows,
    rows below ``threshold`` of ``total`` (or zero) left out and counted in a last line."""

    def __init__(
        self,
        rows: list[FlatRow],
        metric: Metric,
        fmt: Fmt,
        title: str,
        gpu: bool,
        total: int,
        threshold: float,
        limit: int = 40,
    ) -> None:
        super().__init__(fmt)
        self.rows, self.metric, self.title, self.gpu = rows, metric, title, gpu
        self.total, self.threshold, self.limit = total, threshold, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        metric = self.metric
        ranked = sorted(self.rows, key=lambda r: (-metric(r.inclusive), -metric(r.self)))
        cut = self.threshold * self.total
        shown = [r for r in ranked if metric(r.inclusive) > 0 and metric(r.inclusive) >= cut]
        hidden = len(ranked) - len(shown[: self.limit])
        grid_rows = []
        for r in shown[: self.limit]:
            main, detail = label_parts(r.node, fmt, r.inclusive)
            grid_rows.append(
                GridRow(
                    _cells(fmt, metric, self.total, r.inclusive, r.self, r.node.kind, self.gpu),
                    main,
                    detail,
                    keep_detail=r.node.kind == "kernel",
                    source=r.node.kind == "frame",
                )
            )
        yield _title(self.title, fmt, metric, width)
        if not grid_rows:
            yield Text("  (nothing above the threshold)", "dim")
            return
        yield render_grid(_headers(metric, self.gpu), "name", grid_rows, width, fmt.ascii)
        if hidden:
            yield Text(f"  ... {hidden} more below the threshold or row limit", "dim")
