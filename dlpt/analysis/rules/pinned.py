"""Pageable host-to-device copies -> ``pin_memory()`` + ``non_blocking=True``.

A copy from pageable host memory goes through a staging buffer in the driver, at a fraction of
the link's bandwidth, and blocks the host meanwhile. Gain per step = the line's measured
pageable copy time - the time the same bytes take from pinned memory, where the pinned HtoD
bandwidth comes from, in order of preference:

1. this run's own pinned HtoD copies (those of 256 KiB or more on average: small copies measure
   latency, not bandwidth);
2. dlpt's measurement after the profile (``meta.host_link_probe``: a pinned copy of the size of
   the pageable ones, timed with CUDA events, made only when pageable copies were seen);
3. the host link's datasheet bandwidth (PCIe / NVLink-C2C, per direction), which no real copy
   exceeds: the gain is then an upper bound, and the text says so.
"""

from __future__ import annotations

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.rules.common import gbs, lines_of, ms, per_step_text, significant, size, where
from dlpt.model.tree import Node

__all__ = ["pinned_memory", "MIN_PINNED_SAMPLE_BYTES"]

MIN_PINNED_SAMPLE_BYTES = 256 * 1024


def _pinned_basis(a: Analysis) -> tuple[float, str] | None:
    """(pinned HtoD bytes per ns, where that number comes from)."""
    pinned_b = pinned_ns = pinned_n = 0
    for node, _ in lines_of(a, ("memcpy",)):
        x = node.typed_extras
        if x.direction == "HtoD" and x.host_mem == "pinned":
            pinned_b += node.metrics.get("copy_bytes", 0)
            pinned_ns += node.metrics.get("copy_ns", 0)
            pinned_n += node.metrics.get("copies", 0)
    if pinned_n and pinned_ns and pinned_b / pinned_n >= MIN_PINNED_SAMPLE_BYTES:
        return (
            pinned_b / pinned_ns,
            f"measured on this run's pinned HtoD copies ({size(pinned_b / pinned_n)} each)",
        )
    probe = a.meta.host_link_probe
    if probe is not None and probe.ns > 0 and probe.bytes > 0:
        return (
            probe.bytes / probe.ns,
            f"measured by dlpt after the profile: a {size(probe.bytes)} pinned copy to GPU {probe.device}",
        )
    if a.device is not None:
        return (
            a.device.link_gbs,
            f"{a.device.link} datasheet bandwidth of the {a.device.name}, per direction; not measured "
            "in this run, so the gain is an upper bound",
        )
    return None


def pinned_memory(a: Analysis) -> list[Finding]:
    if "memcpy" not in a.recorded:
        return []
    by_line: dict[tuple[str, int], tuple[Node | None, list[Node]]] = {}
    for node, line in lines_of(a, ("memcpy",)):
        x = node.typed_extras
        if x.direction == "HtoD" and x.host_mem == "pageable" and node.metrics.get("copy_ns"):
            key = (line.file, line.line) if line is not None else ("", 0)
            by_line.setdefault(key, (line, []))[1].append(node)
    if not by_line:
        return []
    basis = _pinned_basis(a)
    if basis is None:
        return []
    bw, source = basis
    out = []
    for line, copies in by_line.values():
        ns = sum(c.metrics.get("copy_ns", 0) for c in copies) / a.per
        nbytes = sum(c.metrics.get("copy_bytes", 0) for c in copies) / a.per
        n = sum(c.metrics.get("copies", 0) for c in copies) / a.per
        pinned_ns = nbytes / bw
        gain = ns - pinned_ns
        if not significant(a, gain):
            continue
        sync = (
            sum(
                s.metrics.get("sync_ns", 0)
                for c in copies
                if c.parent is not None
                for s in c.parent.children
                if s.kind == "sync"
            )
            / a.per
        )
        waits = f"; the host is blocked {ms(sync)} meanwhile" if sync else ""
        out.append(
            Finding(
                rule="pinned_memory",
                title="Host-to-device copies from pageable memory",
                evidence=f"{n:.3g} cop{'y' if n == 1 else 'ies'} {per_step_text(a)} from pageable memory: "
                f"{size(nbytes)} in {ms(ns)} ({gbs(nbytes, ns)}){waits}",
                action="allocate the host tensor in pinned memory (.pin_memory(), "
                "DataLoader(pin_memory=True)) and copy it with .to(device, non_blocking=True)",
                basis=f"from pinned memory the same bytes take {ms(pinned_ns)} at {bw:.1f} GB/s ({source})",
                gain_ns=round(gain),
                per_step=a.steps > 0,
                **where(line),
                numbers={
                    "pageable_ns": round(ns),
                    "bytes": round(nbytes),
                    "copies": n,
                    "pinned_gbs": round(bw, 3),
                    "pinned_ns": round(pinned_ns),
                    "host_blocked_ns": round(sync),
                },
            )
        )
    return out
