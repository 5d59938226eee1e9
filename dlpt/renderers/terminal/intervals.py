"""``--view flat``'s "By source line, with 95% intervals" table: each line's cost per step with the
half-width of its 95% interval (dlpt.analysis.intervals; docs/numbers.md), for sessions that
saved per-step spreads (format 3). Strings from the session go through :meth:`Fmt.clean`."""

from __future__ import annotations

import os

from rich.console import RenderableType
from rich.text import Text

from dlpt.model.metrics import Metric
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.tables import make_table
from dlpt.views.run import FlatRow, LineHalfWidths

__all__ = ["intervals_table"]

ROW_LIMIT = 40


def intervals_table(
    rows: list[FlatRow], halves: LineHalfWidths, metric: Metric, fmt: Fmt, total: float, threshold: float
) -> list[RenderableType]:
    """Lines at or above ``threshold`` of ``total`` (inclusive ``metric``), largest first."""
    shown = sorted(
        (r for r in rows if total > 0 and metric(r.inclusive) >= threshold * total),
        key=lambda r: -metric(r.inclusive),
    )[:ROW_LIMIT]
    if not shown:
        return []
    pm = "+-" if fmt.ascii else "\u00b1"
    t = make_table(
        "By source line, with 95% intervals", fmt, "  (per step; t on the per-step spread, docs/numbers.md)"
    )
    for col in ("total", f"{pm}95%", "self", f"{pm}95%"):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column("line", no_wrap=True, overflow="ellipsis")
    for r in shown:
        own, inc = halves.get((r.node.file, r.node.line), ({}, {}))
        t.add_row(
            fmt.value(metric, metric(r.inclusive)),
            pm + fmt.value(metric, metric(inc)),
            fmt.value(metric, metric(r.self)) if metric(r.self) else "",
            pm + fmt.value(metric, metric(own)) if metric(r.self) else "",
            Text(fmt.clean(f"{os.path.basename(r.node.file)}:{r.node.line} {r.node.name}"), "cyan"),
        )
    return [Text(""), t]
