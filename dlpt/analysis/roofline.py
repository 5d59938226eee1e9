"""Which roof a kernel (or a line's kernels) sits under: compute, memory bandwidth, or neither
(latency), from its FLOPs, its estimated bytes and its measured time, against the device's
datasheet peaks.

The roofline model: a kernel that does ``F`` FLOPs over ``B`` bytes (arithmetic intensity
``I = F / B``) can at best run at ``min(peak FLOP/s, I x memory bandwidth)``. Below the ridge
point (``I < peak / bandwidth``) the memory roof is the lower one: the kernel is memory-bound;
above it, compute-bound. A kernel that reaches less than a tenth of its roof and runs for only a
few microseconds is neither: it is too small to fill the GPU, and its time is launch and
scheduling latency (latency-bound). Bytes are the compulsory traffic estimated from tensor
sizes (:mod:`dlpt.capture.flops.traffic`), so the achieved bandwidth is a lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlpt.analysis.peaks import DevicePeaks

__all__ = ["Bound", "classify", "LATENCY_FRACTION", "SHORT_KERNEL_NS"]

#: Below this fraction of its roof a short kernel counts as latency-bound.
LATENCY_FRACTION = 0.1
#: "Short": mean duration per launch under this many nanoseconds.
SHORT_KERNEL_NS = 20_000


@dataclass(frozen=True)
class Bound:
    """A classification and the numbers behind it.

    kind: "compute", "memory", "latency", or "" when there is nothing to compare (no work
    recorded or no datasheet peak); tflops / gbs: achieved TFLOP/s and GB/s (None without
    FLOPs / bytes); intensity: FLOPs per byte; fraction: achieved share of the roof that applies.
    """

    kind: str
    tflops: float | None = None
    gbs: float | None = None
    intensity: float | None = None
    fraction: float | None = None


def classify(
    flops: int, nbytes: int, ns: int, launches: int, device: DevicePeaks | None, peak_tflops: float | None
) -> Bound:
    """Classify work of ``flops`` and ``nbytes`` that took ``ns`` of kernel time in ``launches``
    kernels, against ``peak_tflops`` (the dtype's dense peak) and the device's bandwidth."""
    if ns <= 0 or (flops <= 0 and nbytes <= 0):
        return Bound("")
    tflops = flops / ns / 1e3 if flops > 0 else None  # FLOP/ns = GFLOP/s
    gbs = nbytes / ns if nbytes > 0 else None  # byte/ns = GB/s
    intensity = flops / nbytes if flops > 0 and nbytes > 0 else None
    if device is None:
        return Bound("", tflops, gbs, intensity)
    bw = device.mem_gbs
    if tflops is not None and peak_tflops:
        peak = peak_tflops * 1e3  # GFLOP/s
        memory_side = intensity is not None and intensity * bw < peak
        roof = intensity * bw if memory_side and intensity is not None else peak
        fraction = (flops / ns) / roof
        kind = "memory" if memory_side else "compute"
    elif gbs is not None:
        fraction, kind = gbs / bw, "memory"
    else:
        return Bound("", tflops, gbs, intensity)
    short = launches > 0 and ns / launches < SHORT_KERNEL_NS
    if fraction < LATENCY_FRACTION and short:
        kind = "latency"
    return Bound(kind, tflops, gbs, intensity, fraction)
