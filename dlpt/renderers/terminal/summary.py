"""Summary tables: GPU kernels, copies (and memsets), CUDA API calls.

They read the session's node table directly rather than the tree: merging in the tree keeps the
extras of the first node only, while copies must be told apart by host memory kind and kernels
need their true min/max.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.console import JustifyMethod, RenderableType
from rich.text import Text

from dlpt.model.folding import SyncSite
from dlpt.model.kernel_names import kernel_config
from dlpt.model.session import Session
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import STYLES, Fmt, label_parts
from dlpt.renderers.terminal.tables import Row, add_rows, make_table


@dataclass
class _Agg:
    count: int = 0
    total: int = 0
    bytes: int = 0
    min: int | None = None
    max: int = 0
    config: str = ""  # kernels: the launch configuration of the first launch seen

    def add(self, count: int, total: int, nbytes: int, mn: int | None, mx: int) -> None:
        self.count += count
        self.total += total
        self.bytes += nbytes
        if mn is not None and count:
            self.min = mn if self.min is None else min(self.min, mn)
        self.max = max(self.max, mx)


def _gpu_total(session: Session) -> int:
    return sum(
        n["m"].get("gpu_ns", 0) + n["m"].get("copy_ns", 0) + n["m"].get("memset_ns", 0) for n in session.nodes
    )


def _per_step(fmt: Fmt) -> str:
    return f"  totals per step (/{fmt.steps})" if fmt.steps > 0 else ""


def _bandwidth(nbytes: int, ns: int) -> str:
    """Bytes per nanosecond is GB/s; the ratio does not depend on per-step scaling."""
    if not nbytes or not ns:
        return ""
    gbs = nbytes / ns
    return f"{gbs:.1f} GB/s" if gbs >= 1 else f"{gbs * 1000:.1f} MB/s"


class KernelTable(View):
    """Kernels by name: calls, total, avg, min, max and % of all GPU time.

    ``kernels`` (the session's kernel nodes) and ``gpu_total`` save a pass over a large node
    table when the caller already has them."""

    def __init__(
        self,
        session: Session,
        fmt: Fmt,
        limit: int = 25,
        kernels: list[dict[str, Any]] | None = None,
        gpu_total: int | None = None,
    ) -> None:
        super().__init__(fmt)
        self.session, self.limit = session, limit
        self.kernels, self.gpu_total = kernels, gpu_total

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        aggs: dict[str, _Agg] = {}
        for n in self.session.nodes if self.kernels is None else self.kernels:
            if n["kind"] == "kernel":
                m = n["m"]
                agg = aggs.get(n["name"])
                if agg is None:  # the first launch config seen stands for the name
                    agg = aggs[n["name"]] = _Agg(config=kernel_config(n.get("x", {})))
                agg.add(m.get("kernels", 0), m.get("gpu_ns", 0), 0, m.get("min_ns"), m.get("max_ns", 0))
        if not aggs:
            return
        gpu_total = _gpu_total(self.session) if self.gpu_total is None else self.gpu_total
        t = make_table("GPU kernels", fmt, _per_step(fmt))
        for col in ("calls", "total", "avg", "min", "max", "%"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("kernel", no_wrap=True, overflow="ellipsis", style=STYLES["kernel"])
        ranked = sorted(aggs.items(), key=lambda kv: (-kv[1].total, kv[0]))
        rows: list[Row] = []
        for name, a in ranked[: self.limit]:
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
                    (Text(fmt.clean(name), STYLES["kernel"]), fmt.clean(a.config)),
                )
            )
        rest = ranked[self.limit :]
        if rest:
            rows.append(
                Row(
                    (
                        fmt.count(sum(a.count for _, a in rest)),
                        fmt.time(sum(a.total for _, a in rest)),
                        "",
                        "",
                        "",
                        Fmt.pct(sum(a.total for _, a in rest), gpu_total),
                    ),
                    Text(f"... {len(rest)} more kernels", "dim"),
                )
            )
        add_rows(t, rows, width, fmt.ascii)
        yield t


class CopyTable(View):
    """Copies by direction and host memory kind (and memsets): count, bytes, time, bandwidth.

    ``copies``: the session's memcpy and memset nodes, if the caller already has them."""

    def __init__(self, session: Session, fmt: Fmt, copies: list[dict[str, Any]] | None = None) -> None:
        super().__init__(fmt)
        self.session, self.copies = session, copies

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        aggs: dict[tuple[str, str], _Agg] = {}
        for n in self.session.nodes if self.copies is None else self.copies:
            m, x = n["m"], n.get("x", {})
            if n["kind"] == "memcpy":
                key = (str(x.get("direction") or n["name"]), str(x.get("host_mem") or ""))
                aggs.setdefault(key, _Agg()).add(
                    m.get("copies", 0), m.get("copy_ns", 0), m.get("copy_bytes", 0), None, 0
                )
            elif n["kind"] == "memset":
                aggs.setdefault(("memset", ""), _Agg()).add(
                    m.get("memsets", 0), m.get("memset_ns", 0), 0, None, 0
                )
        if not aggs:
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
        for (direction, host), a in sorted(aggs.items(), key=lambda kv: -kv[1].total):
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
    """CUDA API functions from ``meta.api``: calls, total, avg, min, max."""

    def __init__(self, session: Session, fmt: Fmt, limit: int = 20) -> None:
        super().__init__(fmt)
        self.session, self.limit = session, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        api = [a for a in self.session.meta.get("api") or [] if isinstance(a, dict)]
        if not api:
            return
        t = make_table("CUDA API calls (host time)", fmt, _per_step(fmt))
        for col in ("calls", "total", "avg", "min", "max"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("function", no_wrap=True, overflow="ellipsis")
        ranked = sorted(api, key=lambda a: (-int(a.get("total_ns", 0)), str(a.get("name"))))
        rows: list[Row] = []
        for a in ranked[: self.limit]:
            calls, total = int(a.get("calls", 0)), int(a.get("total_ns", 0))
            rows.append(
                Row(
                    (
                        fmt.count(calls),
                        fmt.time(total),
                        fmt.time(total / calls if calls else 0, per_step=False),
                        fmt.time(int(a.get("min_ns", 0)), per_step=False),
                        fmt.time(int(a.get("max_ns", 0)), per_step=False),
                    ),
                    fmt.clean(str(a.get("name", "?"))),
                )
            )
        if len(ranked) > self.limit:
            rows.append(Row(("", "", "", "", ""), Text(f"... {len(ranked) - self.limit} more", "dim")))
        add_rows(t, rows, width, fmt.ascii)
        yield t


class SyncTable(View):
    """Where the host blocked on the GPU: sync leaves grouped by call and nearest frame of the
    folded tree (:meth:`dlpt.model.folding.FoldedTable.sync_sites`), so each row names a line the
    user can change."""

    def __init__(self, sites: list[SyncSite], fmt: Fmt, wall_ns: int, limit: int = 15) -> None:
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
