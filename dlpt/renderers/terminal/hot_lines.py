"""The report's last section: the few lines with the largest own cost per step, each with its
share of the total, the half-width of its 95% interval where the session has per-step spreads,
and its source text (issue 48). A terminal keeps the end of the report on screen when the run
ends, and the end of the tree is wherever its last branch happens to be: this section makes the
last screen answer "which line".

A line's own cost is what its own ops, kernels and copies took (its callee lines count at their
own rows): the flat profile's "self" (:meth:`dlpt.views.run.RunView.hottest_lines`). Source text
is never cut at its end: it is shortened from the middle, or put on a row of its own when the
line's row has too little room for it. Session strings go through :meth:`Fmt.clean`."""

from __future__ import annotations

import os
from collections.abc import Iterable

from rich.console import RenderableType
from rich.text import Text

from dlpt.model.metrics import Metric
from dlpt.model.resume_names import display_name
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import (
    DETAIL_STYLE,
    LOCATION_STYLE,
    MIN_DETAIL,
    Fmt,
    shorten_middle,
    truncate,
)
from dlpt.renderers.terminal.tables import make_table
from dlpt.views.run import FlatRow, LineHalfWidths

__all__ = ["HotLinesView", "HOT_LINES"]

#: Lines the section lists.
HOT_LINES = 5
#: Indent of a source text given a row of its own.
_INDENT = "  "


class HotLinesView(View):
    """The hottest lines by own ``metric`` out of ``total`` (see the module)."""

    def __init__(
        self, rows: list[FlatRow], metric: Metric, fmt: Fmt, total: int, halves: LineHalfWidths | None
    ) -> None:
        super().__init__(fmt)
        self.rows, self.metric, self.total, self.halves = rows, metric, total, halves

    def _cells(self, row: FlatRow, fmt: Fmt) -> list[str]:
        m = self.metric
        own = m(row.self)
        cells = [fmt.value(m, own), f"{100 * own / self.total:.1f}%" if self.total else "-"]
        if self.halves is not None:
            half = self.halves.get((row.node.file, row.node.line))
            cells.append(_pm(fmt) + fmt.value(m, m(half[0])) if half is not None else "-")
        return cells

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not self.rows:
            return
        per = " per step" if fmt.steps else ""
        # The title on a row of its own: a table's title wraps at the table's (narrow) width.
        title = Text.assemble(
            ("Hottest lines", "bold"), (f"  own cost, not callees': {self.metric.label}{per}", "dim")
        )
        yield truncate(title, width, fmt.ascii)
        t = make_table("", fmt)
        t.title = None
        columns = ["own", "share"] + ([f"{_pm(fmt)}95%"] if self.halves is not None else [])
        cells = [self._cells(r, fmt) for r in self.rows]
        used = 0
        for i, name in enumerate(columns):
            t.add_column(name, justify="right", no_wrap=True)
            t.columns[-1].min_width = max(len(name), *(len(c[i]) for c in cells))
            used += t.columns[-1].min_width + 3  # padding on both sides and the divider
        room = max(width - used, 12)
        t.add_column("line", no_wrap=True, max_width=room)
        for row, values in zip(self.rows, cells, strict=True):
            t.add_row(*values, _label(row, fmt, room))
        yield t


def _pm(fmt: Fmt) -> str:
    return "+-" if fmt.ascii else "\u00b1"


def _label(row: FlatRow, fmt: Fmt, room: int) -> Text:
    """``file:line function  source``; the source shortened from the middle when the row has
    room for at least :data:`MIN_DETAIL` cells of it, else on a row of its own."""
    node = row.node
    main = Text(f"{fmt.clean(os.path.basename(node.file) or node.file)}:{node.line} ", LOCATION_STYLE)
    main.append(fmt.clean(display_name(node.name)), "bold")
    main = truncate(main, room, fmt.ascii)
    source = fmt.source(node.file, node.line)
    if not source:
        return main
    left = room - main.cell_len - 2
    if left >= min(MIN_DETAIL, Text(source).cell_len):
        return main + Text("  ") + Text(shorten_middle(source, left, fmt.ascii), DETAIL_STYLE)
    own_row = shorten_middle(source, room - len(_INDENT), fmt.ascii)
    return main + Text("\n" + _INDENT) + Text(own_row, DETAIL_STYLE)
