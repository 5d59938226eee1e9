"""Summary tables: GPU kernels, copies (and memsets), CUDA API calls, host waits on the GPU.

They format rows computed once per run (:mod:`dlpt.analysis.summary_tables`, kept by the run's
:class:`~dlpt.views.run.RunView`): nothing here reads the session.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import JustifyMethod, RenderableType
from rich.text import Text

from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import STYLES, Fmt, label_parts
from dlpt.renderers.terminal.tables import Row, add_rows, make_table
from dlpt.views.run import ApiRow, CopyRow, KernelRow, SyncSite


def _per_step(fmt: Fmt) -> str:
    return f"  totals per step (/{fmt.steps})" if fmt.steps > 0 else ""


def _bandwidth(nbytes: int, ns: int) -> str:
    """Bytes per nanosecond is GB/s; the ratio does not depend on per-step scaling."""
    if not nbytes or not ns:
        return ""
    gbs = nbytes / ns
    return f"{gbs:.1f} GB/s" if gbs >= 1 else f"{gbs * 1000:.1f} MB/s"


class KernelTable(View):
    """Kernels by name (ranked, the most GPU time first): calls, total, avg, min, max and % of
    ``gpu_total``, all GPU time."""

    def __init__(self, rows: Sequence[KernelRow], fmt: Fmt, gpu_total: int, limit: int = 25) -> None:
        super().__init__(fmt)
        self.rows, self.gpu_total, self.limit = rows, gpu_total, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        ranked = self.rows
        if not ranked:
            return
        gpu_total = self.gpu_total
        t = make_table("GPU kernels", fmt, _per_step(fmt))
        for col in ("calls", "total", "avg", "min", "max", "%"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("kernel", no_wrap=True, overflow="ellipsis", style=STYLES["kernel"])
        rows: list[Row] = []
        for a in ranked[: self.limit]:
            avg = a.total / a.count if a.count else 0
            rows.append(
                Row(
                    (
                        fmt.count(a.count),
                        fmt.time(a.total),
                        fmt.time(avg, per_step=False),
                        fmt.time(a.min or 0, per_step=False),
                        fmt.time(a.max, per_step=False),
                        Fmt.pct(a.total, gpu_total),
                    ),
                    (Text(fmt.clean(a.name), STYLES["kernel"]), fmt.clean(a.config)),
                )
            )
        rest = ranked[self.limit :]
        if rest:
            rows.append(
                Row(
                    (
                        fmt.count(sum(a.count for a in rest)),
                        fmt.time(sum(a.total for a in rest)),
                        "",
                        "",
                        "",
                        Fmt.pct(sum(a.total for a in rest), gpu_total),
                    ),
                    Text(f"... {len(rest)} more kernels", "dim"),
                )
            )
        add_rows(t, rows, width, fmt.ascii)
        yield t


class CopyTable(View):
    """Copies by direction and host memory kind (and memsets), the most time first: count,
    bytes, time, bandwidth."""

    def __init__(self, rows: Sequence[CopyRow], fmt: Fmt) -> None:
        super().__init__(fmt)
        self.rows = rows

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not self.rows:
            return
        t = make_table("GPU copies and memsets", fmt, _per_step(fmt))
        columns: tuple[tuple[str, JustifyMethod], ...] = (
            ("direction", "left"),
            ("host mem", "left"),
            ("count", "right"),
            ("bytes", "right"),
            ("time", "right"),
            ("bandwidth", "right"),
        )
        for col, just in columns:
            t.add_column(col, justify=just, no_wrap=True)
        for a in self.rows:
            direction, host = a.direction, a.host_mem
            is_memset = direction == "memset"
            bw = _bandwidth(a.bytes, a.total)
            t.add_row(
                Text(fmt.clean(direction), STYLES["memset" if is_memset else "memcpy"]),
                Text(fmt.clean(host)),
                fmt.count(a.count),
                "" if is_memset else fmt.bytes(a.bytes),
                fmt.time(a.total),
                bw,
            )
        yield t


class ApiTable(View):
    """CUDA API functions (``meta.api``, the most host time first): calls, total, avg, min, max."""

    def __init__(self, rows: Sequence[ApiRow], fmt: Fmt, limit: int = 20) -> None:
        super().__init__(fmt)
        self.rows, self.limit = rows, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        ranked = self.rows
        if not ranked:
            return
        t = make_table("CUDA API calls (host time)", fmt, _per_step(fmt))
        for col in ("calls", "total", "avg", "min", "max"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("function", no_wrap=True, overflow="ellipsis")
        rows: list[Row] = []
        for a in ranked[: self.limit]:
            rows.append(
                Row(
                    (
                        fmt.count(a.calls),
                        fmt.time(a.total),
                        fmt.time(a.total / a.calls if a.calls else 0, per_step=False),
                        fmt.time(a.min, per_step=False),
                        fmt.time(a.max, per_step=False),
                    ),
                    fmt.clean(a.name),
                )
            )
        if len(ranked) > self.limit:
            rows.append(Row(("", "", "", "", ""), Text(f"... {len(ranked) - self.limit} more", "dim")))
        add_rows(t, rows, width, fmt.ascii)
        yield t


class SyncTable(View):
    """Where the host blocked on the GPU: sync leaves grouped by call and nearest frame of the
    folded tree (:meth:`dlpt.trees.folding.FoldedTable.sync_sites`), so each row names a line the
    user can change."""

    def __init__(self, sites: Sequence[SyncSite], fmt: Fmt, wall_ns: int, limit: int = 15) -> None:
        super().__init__(fmt)
        self.sites, self.wall_ns, self.limit = sites, wall_ns, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not self.sites:
            return
        t = make_table("Host waiting on the GPU (synchronisation)", fmt, _per_step(fmt))
        for col in ("syncs", "wait", "avg", "% wall"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("call  <-  nearest frame", no_wrap=True, overflow="ellipsis")
        ranked = sorted(self.sites, key=lambda s: -s.sync_ns)
        rows: list[Row] = []
        for s in ranked[: self.limit]:
            where = Text(fmt.clean(s.name.strip("[]").removeprefix("sync ")), STYLES["sync"])
            if s.site is not None:
                main, detail = label_parts(s.site, fmt)
                where.append("  <-  ")
                where.append_text(main)
                if detail:
                    where.append("  " + detail, "dim")
            rows.append(
                Row(
                    (
                        fmt.count(s.syncs),
                        fmt.time(s.sync_ns),
                        fmt.time(s.sync_ns / s.syncs if s.syncs else 0, per_step=False),
                        Fmt.pct(s.sync_ns, self.wall_ns),
                    ),
                    where,
                )
            )
        add_rows(t, rows, width, fmt.ascii)
        yield t
