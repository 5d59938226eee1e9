"""Memory per line, from what ``--memory`` recorded (:mod:`dlpt.capture.memory`): each device's
peak of allocated memory per step (with what the allocator reserved then: the difference is
memory cached but not allocated, fragmentation included), which lines held memory at the peak
(split into what their forward ops allocated, i.e. activations saved for backward, and the rest),
and the allocation failure, when there was one: where, and what was live then.

Per-step values are means over the counted steps: node metrics are sums over steps, divided by
the step count as every metric is; ``meta.memory`` keeps each step's device totals.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlpt.analysis.inputs import Analysis, user_line
from dlpt.model.meta import Meta
from dlpt.model.tree import Node

__all__ = [
    "DevicePeak",
    "LineMemory",
    "Oom",
    "device_peaks",
    "oom_of",
    "in_forward",
    "lines_by_memory",
    "oom_site",
    "has_memory",
]


@dataclass(frozen=True)
class DevicePeak:
    """One device's peak per counted step: means, and the largest peak."""

    device: str
    steps: int
    peak: float  # allocated at the peak
    max_peak: int
    reserved_at_peak: float  # reserved at that moment (0 on the CPU: nothing is cached)
    peak_reserved: float  # the most reserved during the step
    traced: float  # of the peak: blocks allocated while recording, i.e. on lines

    @property
    def cached(self) -> float:
        """Reserved but not allocated at the peak: the allocator's cache, fragmentation included."""
        return max(0.0, self.reserved_at_peak - self.peak)

    @property
    def untraced(self) -> float:
        """Of the peak, blocks allocated before recording (parameters, optimizer state, inputs)."""
        return max(0.0, self.peak - self.traced)


@dataclass(frozen=True)
class Oom:
    """The first failed allocation: on which device, how much it asked for, the allocator's totals
    then, how many failed in all."""

    device: str
    requested: int
    allocated: int
    reserved: int
    count: int


@dataclass
class LineMemory:
    """A source line's memory: ``line`` is its first frame node (None: work on no line). Peak
    values are per step; ``oom`` values are at the failure (once)."""

    line: Node | None
    peak: float = 0.0
    peak_forward: float = 0.0  # of it, allocated by the line's forward ops (saved activations)
    alloc: float = 0.0
    oom: int = 0
    oom_forward: int = 0


def has_memory(meta: Meta) -> bool:
    """Whether the session recorded memory (``--memory``)."""
    return meta.memory is not None and meta.memory.enabled is True


def device_peaks(meta: Meta) -> list[DevicePeak]:
    """Each device with counted steps, by name."""
    out = []
    devices = (meta.memory.devices if meta.memory is not None else None) or {}
    for name in sorted(devices):
        steps = devices[name].steps or []
        if not steps:
            continue
        n = len(steps)
        out.append(
            DevicePeak(
                device=str(name),
                steps=n,
                peak=sum(s.peak_allocated for s in steps) / n,
                max_peak=max(s.peak_allocated for s in steps),
                reserved_at_peak=sum(s.reserved_at_peak for s in steps) / n,
                peak_reserved=sum(s.peak_reserved for s in steps) / n,
                traced=sum(s.traced_at_peak for s in steps) / n,
            )
        )
    return out


def oom_of(meta: Meta) -> Oom | None:
    """The allocation failure the run had, if any."""
    o = meta.memory.oom if meta.memory is not None else None
    if o is None:
        return None
    return Oom(o.device, o.requested, o.allocated, o.reserved, count=max(1, o.count or 0))


def in_forward(node: Node) -> bool:
    """Whether ``node`` is the forward work of an op whose backward also ran: beneath a
    ``<forward>`` phase. (The report drops a ``<forward>`` phase that is its op's only one: an op
    without a backward, such as a parameter's initialisation or work under no_grad, keeps its
    memory on the op, which is not counted as forward: nothing of it is saved for a backward.)"""
    p: Node | None = node
    while p is not None:
        if p.kind == "phase":
            return p.name == "<forward>"
        p = p.parent
    return False


def lines_by_memory(a: Analysis, key: str = "mem_peak_bytes") -> list[LineMemory]:
    """Lines (the user's, library frames folded) with any memory, largest ``key`` first (a line
    key: ``peak``, ``oom`` or ``alloc`` by the metric); rows on the same file and line merge."""
    rows: dict[tuple[str, int, str], LineMemory] = {}
    per = a.per
    for node, line in a.lines:
        m = node.metrics
        peak, alloc, oom = m.get("mem_peak_bytes", 0), m.get("mem_alloc_bytes", 0), m.get("mem_oom_bytes", 0)
        if not (peak or alloc or oom):
            continue
        k = (line.file, line.line, line.name) if line is not None else ("", 0, "")
        row = rows.get(k)
        if row is None:
            row = rows[k] = LineMemory(line)
        fwd = in_forward(node)
        row.peak += peak / per
        row.alloc += alloc / per
        row.oom += oom
        if fwd:
            row.peak_forward += peak / per
            row.oom_forward += oom
    order = {"mem_peak_bytes": "peak", "mem_oom_bytes": "oom", "mem_alloc_bytes": "alloc"}[key]
    return sorted(rows.values(), key=lambda r: -getattr(r, order))


def oom_site(a: Analysis) -> Node | None:
    """The user's line of the failed allocation (the node with ``mem_oom_request_bytes``)."""
    for node, line in a.lines:
        if node.metrics.get("mem_oom_request_bytes"):
            return line if line is not None else user_line(node)
    return None
