"""One rank's communication in its report: the header's compute/communication split and exposed
time, the tree's communication column, and the collectives table.

The numbers come from what :mod:`dlpt.ranks.annotate` marked (``comm_ns`` on NCCL kernels,
``comm_wait_ns`` on waits, bytes on collective calls) and from the native core's per-device union
of communication kernels (``meta.gpu_comm_ns``) and its exposed part (``meta.gpu_comm_exposed_ns``:
no other GPU work ran on that device meanwhile). Sessions without communication show none of it,
so their reports are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from dlpt.processors import Metric
from dlpt.ranks.annotate import WAIT_OPS, WORK_WAIT
from dlpt.ranks.comm import bus_bandwidth, family, is_collective_op, is_comm_kernel
from dlpt.renderers.base import View
from dlpt.renderers.format import Fmt
from dlpt.renderers.tables import Row, add_rows, make_table
from dlpt.session import Session

__all__ = [
    "COMM",
    "WAIT",
    "tree_columns",
    "header_lines",
    "CollectiveRow",
    "collective_rows",
    "CollectivesTable",
]

#: The tree's extra columns: what of a row's GPU time is communication kernels, and what of its
#: CPU time is the rank waiting for a collective.
COMM = Metric("comm", "communication GPU time (collective kernels)", "ns", lambda m: m.get("comm_ns", 0))
WAIT = Metric("wait", "host time waiting for collectives", "ns", lambda m: m.get("comm_wait_ns", 0))


def tree_columns(totals: Mapping[str, int]) -> list[Metric]:
    """The communication columns worth showing for a session with these totals."""
    return [c for c in (COMM, WAIT) if c(totals) > 0]


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _dev_sum(v: object) -> int:
    return sum(_int(x) for x in v.values()) if isinstance(v, dict) else 0


def header_lines(meta: Mapping[str, Any], totals: Mapping[str, int], fmt: Fmt) -> list[Text]:
    """The header's communication lines: GPU time split into compute and communication, and the
    exposed communication (per step when there are steps); host waiting on CPU process groups."""
    lines: list[Text] = []
    per = " per step" if fmt.steps else ""
    gpu = _int(totals.get("gpu_ns")) + _int(totals.get("copy_ns")) + _int(totals.get("memset_ns"))
    comm = _int(totals.get("comm_ns"))
    if comm and gpu:
        t = Text(f"GPU time: compute {fmt.time(gpu - comm)}, communication {fmt.time(comm)}")
        t.append(f" ({100 * comm / gpu:.0f}%){per}")
        lines.append(t)
    union, exposed = meta.get("gpu_comm_ns"), meta.get("gpu_comm_exposed_ns")
    if _dev_sum(union):
        assert isinstance(union, dict)
        for dev in sorted(union, key=lambda s: (len(s), s)):
            u = _int(union[dev])
            e = _int(exposed.get(dev)) if isinstance(exposed, dict) else 0
            if not u:
                continue
            t = Text(f"communication on GPU {fmt.clean(str(dev))}: {fmt.time(u)}{per}, ")
            t.append(f"exposed {fmt.time(e)}", "bold red" if e > u / 2 else "bold")
            t.append(f" ({100 * e / u:.0f}%: no compute overlapping it)")
            lines.append(t)
    wait = _int(totals.get("comm_wait_ns"))
    cpu = _int(totals.get("cpu_ns"))
    if wait:
        t = Text(f"waiting for collectives (host): {fmt.time(wait)}{per}")
        if cpu:
            t.append(f", {100 * wait / cpu:.0f}% of the CPU op time")
        lines.append(t)
    return lines


@dataclass
class CollectiveRow:
    """One operation on one process group with one data type, summed over its calls."""

    family: str
    dtype: str = ""
    group: str = ""
    world_size: int = 0
    calls: int = 0
    in_bytes: int = 0
    out_bytes: int = 0
    bytes_known: bool = True
    gpu_ns: int = 0  # communication kernels' time
    host_ns: int = 0  # CPU time of the calls (issue and wait)
    wait_ns: int = 0
    algorithms: set[str] = field(default_factory=set)

    @property
    def size(self) -> int:
        """The full buffer of the calls (NCCL's S, summed): all-gather's output, the input of
        reduce-scatter, the tensor of all-reduce."""
        return max(self.in_bytes, self.out_bytes)

    @property
    def time_ns(self) -> int:
        return self.gpu_ns or self.host_ns

    def bandwidth(self) -> tuple[float, float] | None:
        """(algorithm, bus) bandwidth in GB/s, or None (unknown bytes, no time, no formula)."""
        if not self.bytes_known:
            return None
        return bus_bandwidth(self.family, self.size, self.time_ns, self.world_size)


def _str(v: object) -> str:
    return v if isinstance(v, str) else ""


def collective_rows(nodes: list[dict[str, Any]]) -> list[CollectiveRow]:
    """The collectives of a node table, by (operation, data type, process group). A row starts at
    an outermost collective node (a torch.distributed op, or a call dlpt wrapped): its calls,
    bytes, communication kernels and waits are summed over its subtree, where the native core
    (NCCL) or dlpt's wrapper (gloo) said what it moved. Communication kernels outside any
    collective op get a row of their own operation."""
    if not any(
        (n["kind"] == "op" and is_collective_op(n["name"]))
        or (n["kind"] == "kernel" and is_comm_kernel(n["name"]))
        for n in nodes
    ):
        return []  # the common case, a single process: no pass over a million nodes' children
    children: list[list[int]] = [[] for _ in nodes]
    for n in nodes[1:]:
        children[n["parent"]].append(n["id"])
    rows: dict[tuple[str, str, str], CollectiveRow] = {}
    stack = [(0, False)]
    while stack:
        i, inside = stack.pop()
        n = nodes[i]
        if not inside and n["kind"] == "op" and is_collective_op(n["name"]):
            _add_call(rows, nodes, children, i)
            continue
        if not inside and n["kind"] == "kernel" and is_comm_kernel(_full_name(n)):
            x = n.get("x") or {}
            fam = _str(x.get("collective")) or "communication"
            row = rows.setdefault(
                (fam, _str(x.get("dtype")), "?"), CollectiveRow(fam, _str(x.get("dtype")), "?")
            )
            row.gpu_ns += n["m"].get("comm_ns", n["m"].get("gpu_ns", 0))
            row.calls += n["m"].get("kernels", 0)
            row.bytes_known = False
            _algorithm(row, x)
        stack.extend((c, inside) for c in children[i])
    return sorted(rows.values(), key=lambda r: (-r.time_ns, r.family))


def _full_name(n: dict[str, Any]) -> str:
    full = (n.get("x") or {}).get("full_name")
    return full if isinstance(full, str) else n["name"]


def _algorithm(row: CollectiveRow, x: Mapping[str, Any]) -> None:
    algo = " ".join(p for p in (_str(x.get("algorithm")), _str(x.get("protocol"))) if p)
    if algo:
        row.algorithms.add(algo)


def _add_call(
    rows: dict[tuple[str, str, str], CollectiveRow],
    nodes: list[dict[str, Any]],
    children: list[list[int]],
    top: int,
) -> None:
    sub, stack = [], [top]
    while stack:
        i = stack.pop()
        sub.append(nodes[i])
        stack.extend(children[i])
    node = nodes[top]
    described = next((n for n in sub if isinstance((n.get("x") or {}).get("collective"), str)), None)
    x = (described.get("x") or {}) if described is not None and described["kind"] == "op" else {}
    fam = "wait" if node["name"] in WAIT_OPS else family(_str(x.get("collective")) or node["name"])
    group = _str(x.get("pg_desc")) or _str(x.get("pg_name"))
    key = (fam, _str(x.get("dtype")), group)
    row = rows.get(key)
    if row is None:
        row = rows[key] = CollectiveRow(fam, key[1], group)
    ws = x.get("world_size")
    if isinstance(ws, int) and ws > row.world_size:
        row.world_size = ws
    # A wait for an asynchronous collective (Work.wait) adds its time to the collective's row,
    # not a call: the call that issued it counted that, with its bytes.
    waits = fam == "wait" or node["name"] == WORK_WAIT
    comm_calls = sum(n["m"].get("comm_calls", 0) for n in sub)
    if not waits:
        row.calls += comm_calls or node["m"].get("calls", 0)
    row.in_bytes += sum(n["m"].get("comm_in_bytes", 0) for n in sub)
    row.out_bytes += sum(n["m"].get("comm_out_bytes", 0) for n in sub)
    if not comm_calls and not waits and fam != "barrier":
        row.bytes_known = False
    for n in sub:
        m = n["m"]
        row.host_ns += m.get("cpu_ns", 0)
        row.wait_ns += m.get("comm_wait_ns", 0)
        if n["kind"] == "kernel" and is_comm_kernel(_full_name(n)):
            row.gpu_ns += m.get("comm_ns", m.get("gpu_ns", 0))
            _algorithm(row, n.get("x") or {})


def _gbs(v: float) -> str:
    if v >= 1:
        return f"{v:.1f} GB/s"
    return f"{v * 1e3:.1f} MB/s" if v >= 1e-4 else f"{v * 1e6:.1f} kB/s"


class CollectivesTable(View):
    """Collectives by operation, data type and process group: calls, bytes, time, average,
    waiting (CPU process groups), algorithm and NCCL's bus bandwidth."""

    def __init__(self, session: Session, fmt: Fmt, rows: Iterable[CollectiveRow] | None = None) -> None:
        super().__init__(fmt)
        self.rows = list(collective_rows(session.nodes) if rows is None else rows)

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
