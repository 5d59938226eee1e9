"""The work tables of ``--view suggestions``: per line and per op (with its kernels), the GPU
time beside the FLOPs and estimated bytes it did, the achieved TFLOP/s and GB/s, their share of
the device's peaks, and the roofline bound (:mod:`dlpt.analysis.roofline`).

Values are per step; TFLOP/s, GB/s and percentages are rates and do not depend on it. Bytes are
the compulsory traffic estimated from tensor sizes, which the column headers say ("GB/s est").
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import RenderableType
from rich.text import Text

from dlpt.analysis.inputs import Analysis
from dlpt.analysis.report.measures import flops_text
from dlpt.analysis.roofline import Bound
from dlpt.analysis.work import line_work, op_work
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import STYLES, Fmt, label_parts
from dlpt.renderers.terminal.tables import Row, add_rows, make_table

__all__ = ["WorkView"]

_BOUND_STYLE = {"compute": "green", "memory": "yellow", "latency": "red"}


def _rate_cells(b: Bound, peak: float | None, bw: float | None) -> list[str | Text]:
    return [
        f"{b.tflops:.3g}" if b.tflops is not None else "-",
        f"{100 * b.tflops / peak:.1f}%" if b.tflops is not None and peak else "-",
        f"{b.gbs:.0f}" if b.gbs is not None else "-",
        f"{100 * b.gbs / bw:.1f}%" if b.gbs is not None and bw else "-",
        Text(b.kind or "-", _BOUND_STYLE.get(b.kind, "dim")),
    ]


_RATE_COLUMNS = ("TFLOP/s", "% peak", "GB/s est", "% BW", "bound")


class WorkView(View):
    """Lines and ops with recorded work (``--flops``), busiest first; ``limit`` rows each."""

    def __init__(self, a: Analysis, fmt: Fmt, limit: int = 20) -> None:
        super().__init__(fmt)
        self.a, self.limit = a, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        a = self.a
        ops = op_work(a.root)
        if not ops:
            yield Text(
                "No FLOPs or bytes recorded: run with --flops (dlpt.profile(flops=True)) for work per line, "
                "TFLOP/s, % of peak and the roofline bound.",
                "dim",
            )
            return
        bw = a.device.mem_gbs if a.device is not None else None
        per = f"  per step (/{fmt.steps})" if fmt.steps else ""
        peaks = (
            ""
            if a.device is not None or a.peak_override
            else f"; no datasheet peaks for '{fmt.clean(a.device_name)}'"
        )
        # Without GPU time (a CPU run) only the FLOPs mean anything: rank by them.
        gpu = a.gpu
        if not gpu:
            ops = [w for w in ops if w.flops]
            peaks = "; no GPU time recorded: FLOPs only"
        lines = sorted(
            (lw for lw in line_work(a.root) if (lw.flops or lw.nbytes) and (gpu or lw.flops)),
            key=lambda lw: (-lw.kernel_ns, -lw.flops),
        )
        t = make_table("Work per line", fmt, f"{per}; bytes estimated from tensor sizes{peaks}")
        for col in ("GPU", "FLOPs", "fwd+bwd", *_RATE_COLUMNS):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("line", no_wrap=True, overflow="ellipsis")
        rows: list[Row] = []
        for lw in lines[: self.limit]:
            b = lw.bound(a)
            split = (
                f"{flops_text(fmt.scale(lw.flops_forward))}+{flops_text(fmt.scale(lw.flops_backward))}"
                if lw.flops_backward
                else ""
            )
            work = flops_text(fmt.scale(lw.flops)) if lw.flops else "-"
            cells: list[str | Text] = [fmt.time(lw.kernel_ns) if gpu else "-", work, split]
            rows.append(Row([*cells, *_rate_cells(b, a.peak_tflops(lw.key), bw)], label_parts(lw.line, fmt)))
        add_rows(t, rows, width, fmt.ascii)
        yield t
        yield Text("")

        ranked = sorted((w for w in ops if w.kernel_ns or not gpu), key=lambda w: (-w.kernel_ns, -w.flops))
        t = make_table("Work per op and its kernels", fmt, f"{per}; bytes estimated from tensor sizes")
        for col in ("GPU", "kernels", "FLOPs", "dtype", *_RATE_COLUMNS):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("op  <-  line  kernel", no_wrap=True, overflow="ellipsis")
        rows = []
        for w in ranked[: self.limit]:
            b = w.bound(a)
            label = Text(fmt.clean(w.node.name), STYLES["op"])
            if w.backward:
                label.append(" (backward)", "dim")
            if w.line is not None:
                main, _ = label_parts(w.line, fmt)
                label.append("  <-  ")
                label.append_text(main)
            if w.kernel:
                label.append("  " + fmt.clean(w.kernel), STYLES["kernel"])
            cells = [
                fmt.time(w.kernel_ns) if gpu else "-",
                fmt.count(w.launches) if gpu else "-",
                flops_text(fmt.scale(w.flops)) if w.flops else "-",
                w.key or "-",
            ]
            rows.append(Row([*cells, *_rate_cells(b, a.peak_tflops(w.key), bw)], label))
        add_rows(t, rows, width, fmt.ascii)
        yield t
