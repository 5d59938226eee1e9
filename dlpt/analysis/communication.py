"""One rank's communication, computed from its session: the tree's communication columns, and
the collectives by operation, data type and process group (calls, bytes, time, waits, bus
bandwidth).

The numbers come from what :mod:`dlpt.capture.ranks.annotate` marked (``comm_ns`` on NCCL kernels,
``comm_wait_ns`` on waits, bytes on collective calls) and from the native core's per-device union
of communication kernels (``meta.gpu_comm_ns``) and its exposed part (``meta.gpu_comm_exposed_ns``:
no other GPU work ran on that device meanwhile). Sessions without communication have none of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dlpt.model.comm_names import WAIT_OPS, WORK_WAIT, bus_bandwidth, family, is_collective_op, is_comm_kernel
from dlpt.model.meta import Meta, int_of, typed
from dlpt.model.metrics import COMM, METRICS, WAIT, Metric
from dlpt.model.units import Units

__all__ = ["tree_columns", "comm_facts", "CollectiveRow", "collective_rows"]

#: The tree's extra columns: what of a row's GPU time is communication kernels, and what of its
#: CPU time is the rank waiting for a collective.


def tree_columns(totals: Mapping[str, int]) -> list[Metric]:
    """The communication columns worth showing for a session with these totals."""
    return [c for c in (COMM, WAIT) if c(totals) > 0]


def comm_facts(
    meta: Meta | Mapping[str, Any], totals: Mapping[str, int], units: Units
) -> list[tuple[str, bool]]:
    """The header's communication sentences, each with whether it is bad news (most of the
    communication exposed): GPU time split into compute and communication, the exposed
    communication per device (per step when there are steps), and host time waiting on CPU
    process groups."""
    out: list[tuple[str, bool]] = []
    per = " per step" if units.steps else ""
    gpu = METRICS["gpu"](totals)
    comm = int_of(totals.get("comm_ns"))
    if comm and gpu:
        out.append(
            (
                f"GPU time: compute {units.time(gpu - comm)}, communication {units.time(comm)} "
                f"({100 * comm / gpu:.0f}%){per}",
                False,
            )
        )
    m = typed(meta)
    union, exposed = m.gpu_comm_ns, m.gpu_comm_exposed_ns or {}
    if union is not None:
        for dev in sorted(union, key=lambda s: (len(s), s)):
            u = union[dev]
            e = exposed.get(dev, 0)
            if u:
                out.append(
                    (
                        f"communication on GPU {dev}: {units.time(u)}{per}, exposed {units.time(e)} "
                        f"({100 * e / u:.0f}%: no compute overlapping it)",
                        e > u / 2,
                    )
                )
    wait = int_of(totals.get("comm_wait_ns"))
    cpu = int_of(totals.get("cpu_ns"))
    if wait:
        text = f"waiting for collectives (host): {units.time(wait)}{per}"
        if cpu:
            text += f", {100 * wait / cpu:.0f}% of the CPU op time"
        out.append((text, False))
    return out


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
