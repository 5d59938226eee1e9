"""The work tables of ``--view suggestions``: per line and per op (with its kernels), the GPU
time beside the FLOPs and estimated bytes it did, the achieved TFLOP/s and GB/s, their share of
the device's peaks, and the roofline bound (:mod:`dlpt.analysis.roofline`). On a CPU run: the
ops' CPU time, and GFLOP/s over it.

Values are per step; TFLOP/s, GB/s and percentages are rates and do not depend on it. Bytes are
the compulsory traffic estimated from tensor sizes, which the column headers say ("GB/s est").
The rows, ranked and bounded, are the run's view's (:mod:`dlpt.analysis.work_tables`): this
only formats them.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import RenderableType
from rich.text import Text

from dlpt.model.units import flops_text
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import STYLES, Fmt, label_parts
from dlpt.renderers.terminal.tables import Row, add_rows, make_table
from dlpt.views.run import Bound, WorkTables

__all__ = ["WorkView"]

_BOUND_STYLE = {"compute": "green", "memory": "yellow", "latency": "red"}


def _rate_cells(b: Bound, peak: float | None, bw: float | None, gpu: bool = True) -> list[str | Text]:
    # A CPU's rates are GFLOP/s (its column says so: _rate_columns).
    rate = b.tflops if gpu or b.tflops is None else 1e3 * b.tflops
    return [
        f"{rate:.3g}" if rate is not None else "-",
        f"{100 * b.tflops / peak:.1f}%" if b.tflops is not None and peak else "-",
        f"{b.gbs:.0f}" if b.gbs is not None else "-",
        f"{100 * b.gbs / bw:.1f}%" if b.gbs is not None and bw else "-",
        Text(b.kind or "-", _BOUND_STYLE.get(b.kind, "dim")),
    ]


_RATE_COLUMNS = ("TFLOP/s", "% peak", "GB/s est", "% BW", "bound")


def _rate_columns(gpu: bool) -> tuple[str, ...]:
    """The rate columns: over kernel time on a GPU run, over the ops' CPU time on a CPU run."""
    return _RATE_COLUMNS if gpu else ("GFLOP/s", *_RATE_COLUMNS[1:])


class WorkView(View):
    """Lines and ops with recorded work (``--flops``), busiest first; ``limit`` rows each."""

    def __init__(self, tables: WorkTables, fmt: Fmt, limit: int = 20) -> None:
        super().__init__(fmt)
        self.tables, self.limit = tables, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        w = self.tables
        if not w.recorded:
            yield Text(
                "No FLOPs or bytes recorded: run with --flops (dlpt.profile(flops=True)) for work per line, "
                "TFLOP/s, % of peak and the roofline bound.",
                "dim",
            )
            return
        bw = w.mem_gbs
        per = f"  per step (/{fmt.steps})" if fmt.steps else ""
        peaks = "" if w.datasheet else f"; no datasheet peaks for '{fmt.clean(w.device_name)}'"
        # Without GPU time (a CPU run) only the FLOPs mean anything: the rows rank by them.
        gpu = w.gpu
        if not gpu:
            peaks = "; no GPU time recorded: rates over the ops' CPU time"
        where = "GPU" if gpu else "CPU"
        t = make_table("Work per line", fmt, f"{per}; bytes estimated from tensor sizes{peaks}")
        for col in (where, "FLOPs", "fwd+bwd", *_rate_columns(gpu)):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("line", no_wrap=True, overflow="ellipsis")
        rows: list[Row] = []
        for line_row in w.lines[: self.limit]:
            lw = line_row.work
            split = (
                f"{flops_text(fmt.scale(lw.flops_forward))}+{flops_text(fmt.scale(lw.flops_backward))}"
                if lw.flops_backward
                else ""
            )
            work = flops_text(fmt.scale(lw.flops)) if lw.flops else "-"
            cells: list[str | Text] = [fmt.time(lw.kernel_ns if gpu else lw.cpu_ns), work, split]
            rows.append(
                Row(
                    [*cells, *_rate_cells(line_row.bound, line_row.peak_tflops, bw, gpu)],
                    label_parts(lw.line, fmt),
                    source=True,
                )
            )
        add_rows(t, rows, width, fmt.ascii)
        yield t
        yield Text("")

        t = make_table("Work per op and its kernels", fmt, f"{per}; bytes estimated from tensor sizes")
        for col in (where, "kernels", "FLOPs", "dtype", *_rate_columns(gpu)):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("op  <-  line  kernel", no_wrap=True, overflow="ellipsis")
        rows = []
        for op_row in w.ops[: self.limit]:
            op = op_row.work
            label = Text(fmt.clean(op.node.name), STYLES["op"])
            if op.backward:
                label.append(" (backward)", "dim")
            if op.line is not None:
                main, _ = label_parts(op.line, fmt)
                label.append("  <-  ")
                label.append_text(main)
            if op.kernel:
                label.append("  " + fmt.clean(op.kernel), STYLES["kernel"])
            cells = [
                fmt.time(op.kernel_ns if gpu else op.cpu_ns),
                fmt.count(op.launches) if gpu else "-",
                flops_text(fmt.scale(op.flops)) if op.flops else "-",
                op.key or "-",
            ]
            rows.append(Row([*cells, *_rate_cells(op_row.bound, op_row.peak_tflops, bw, gpu)], label))
        add_rows(t, rows, width, fmt.ascii)
        yield t
