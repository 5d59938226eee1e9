"""Facts about memory (``--memory``, :mod:`dlpt.analysis.memory`): the allocation failure first
(where, what it asked for, what was live then, by line), then each device's peak per step with
what was reserved at that moment (and so cached but unallocated), and the lines holding the most
at the peak."""

from __future__ import annotations

import os

from dlpt.analysis.inputs import Analysis
from dlpt.analysis.memory import LineMemory, device_peaks, has_memory, lines_by_memory, oom_of, oom_site
from dlpt.analysis.report.model import Fact
from dlpt.model.meta import Memory
from dlpt.model.tree import Node
from dlpt.model.units import Units

__all__ = ["oom_facts", "memory_facts", "line_label"]

#: Lines named in a fact; the rest are counted.
_TOP_LINES = 4


def line_label(line: Node | None) -> str:
    """``model.py:20 forward`` (``(no line)`` for memory allocated outside any frame)."""
    if line is None:
        return "(no line)"
    return f"{os.path.basename(line.file) or line.file}:{line.line} {line.name}".rstrip()


def _size(units: Units, v: float) -> str:
    return units.bytes(v, per_step=False)


def _listing(rows: list[LineMemory], value: str, forward: str, units: Units) -> str:
    shown = [r for r in rows if getattr(r, value) > 0]
    parts = []
    for r in shown[:_TOP_LINES]:
        fwd = getattr(r, forward)
        extra = f" ({_size(units, fwd)} allocated in its forward)" if fwd > 0 else ""
        parts.append(f"{line_label(r.line)} {_size(units, getattr(r, value))}{extra}")
    more = len(shown) - _TOP_LINES
    return ", ".join(parts) + (f" and {more} more line{'s' if more > 1 else ''}" if more > 0 else "")


def oom_facts(a: Analysis, units: Units) -> list[Fact]:
    """The allocation failure, when the run had one: the report leads with it."""
    oom = oom_of(a.meta)
    if oom is None:
        return []
    site = oom_site(a)
    where = f" at {line_label(site)}" if site is not None else ""
    more = f" ({oom.count} allocations failed; the first is shown)" if oom.count > 1 else ""
    reserved = f" and {_size(units, oom.reserved)} reserved" if oom.reserved else ""
    value = (
        f"on {oom.device or 'an unknown device'}{where}: an allocation of {_size(units, oom.requested)} "
        f"failed with {_size(units, oom.allocated)} allocated{reserved}{more}"
    )
    out = [Fact("oom", f"out of memory {value}", "error", "out of memory", value)]
    rows = lines_by_memory(a, "mem_oom_bytes")
    traced = sum(r.oom for r in rows)
    listing = _listing(rows, "oom", "oom_forward", units)
    before = max(0, oom.allocated - traced)
    tail = f"; {_size(units, before)} allocated before recording started, on no line" if before else ""
    if listing or tail:
        text = f"live at the failure: {listing or 'nothing recorded on a line'}{tail}"
        out.append(Fact("oom", text, "error", "live at the failure", text.split(": ", 1)[1]))
    return out


def memory_facts(a: Analysis, units: Units) -> list[Fact]:
    """Each device's peak per step (allocated, reserved then, traced to lines) and the lines that
    held the most at it; a warning when memory capture was asked for and could not run."""
    mem = a.meta.memory
    if mem is None or mem == Memory():
        return []
    if not has_memory(a.meta):
        reason = mem.reason or "reason unknown"
        return [Fact("memory", f"memory capture: off - {reason}", "warn")]
    out = []
    per = "per step" if units.steps else "in the run"
    for d in device_peaks(a.meta):
        peak = f"peak {_size(units, d.peak)} allocated {per}"
        if d.max_peak > 1.01 * d.peak:
            peak += f" (max {_size(units, d.max_peak)})"
        if d.reserved_at_peak:
            peak += (
                f", {_size(units, d.reserved_at_peak)} reserved then: {_size(units, d.cached)} reserved but "
                "not allocated (the allocator's cache, fragmentation included)"
            )
        peak += f"; of the peak, {_size(units, d.traced)} allocated while recording (on lines)"
        if d.untraced >= 1:
            peak += f", {_size(units, d.untraced)} before (parameters, optimizer state, inputs)"
        out.append(Fact("memory", f"memory {d.device}: {peak}", label=f"memory {d.device}", value=peak))
    rows = lines_by_memory(a)
    if any(r.peak > 0 for r in rows):
        listing = _listing(rows, "peak", "peak_forward", units)
        out.append(Fact("memory", f"held at the peak: {listing}", label="held at the peak", value=listing))
    missed = mem.missed_frees or 0
    if missed:
        out.append(
            Fact(
                "memory",
                f"memory: {missed:,} frees were not seen (made on threads dlpt does not follow); their "
                "blocks were released when their address was allocated again",
                "note",
            )
        )
    return out
