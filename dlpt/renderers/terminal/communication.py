"""One rank's collectives in its terminal report: the table of :mod:`dlpt.analysis.communication`'s
rows, computed once per run by the run's :class:`~dlpt.views.run.RunView` (the header's
communication facts are the report model's).

The numbers come from what :mod:`dlpt.capture.ranks.annotate` marked (``comm_ns`` on NCCL kernels,
``comm_wait_ns`` on waits, bytes on collective calls) and from the native core's per-device union
of communication kernels (``meta.gpu_comm_ns``) and its exposed part (``meta.gpu_comm_exposed_ns``:
no other GPU work ran on that device meanwhile). Sessions without communication show none of it,
so their reports are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import RenderableType
from rich.text import Text

from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.tables import Row, add_rows, make_table
from dlpt.views.run import CollectiveRow

__all__ = ["CollectivesTable"]


def _gbs(v: float) -> str:
    if v >= 1:
        return f"{v:.1f} GB/s"
    return f"{v * 1e3:.1f} MB/s" if v >= 1e-4 else f"{v * 1e6:.1f} kB/s"


class CollectivesTable(View):
    """Collectives by operation, data type and process group: calls, bytes, time, average,
    waiting (CPU process groups), algorithm and NCCL's bus bandwidth."""

    def __init__(self, rows: Sequence[CollectiveRow], fmt: Fmt) -> None:
        super().__init__(fmt)
        self.rows = rows

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        rows = self.rows
        if not rows:
            return
        gpu = any(r.gpu_ns for r in rows)
        wait = any(r.wait_ns for r in rows)
        what = "collective kernels' GPU time, waiting for peers included" if gpu else "host time in the calls"
        per = f", totals per step (/{fmt.steps})" if fmt.steps else ""
        t = make_table("Collectives", fmt, f"  time: {what}{per}")
        cols = ["calls", "bytes", "time", "avg", *(["wait"] if wait else []), "bus bw"]
        for col in cols:
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("operation  data type  group  algorithm", no_wrap=True, overflow="ellipsis")
        out: list[Row] = []
        for r in rows:
            bw = r.bandwidth()
            cells = [
                fmt.count(r.calls),
                fmt.bytes(r.size) if r.bytes_known and r.size else ("" if r.bytes_known else "?"),
                fmt.time(r.time_ns),
                fmt.time(r.time_ns / r.calls if r.calls else 0, per_step=False),
                *([fmt.time(r.wait_ns) if r.wait_ns else ""] if wait else []),
                _gbs(bw[1]) if bw else "",
            ]
            label = Text(fmt.clean(r.family), "bold")
            detail = "  ".join(
                p
                for p in (
                    fmt.clean(r.dtype),
                    fmt.clean(f"group {r.group}") if r.group and r.group != "?" else "",
                    fmt.clean("/".join(sorted(r.algorithms))),
                    "" if r.bytes_known else "bytes unknown",
                )
                if p
            )
            out.append(Row(cells, (label, detail)))
        add_rows(t, out, width, fmt.ascii)
        yield t
