"""What an asking flag gets in the compact header (issue 48): one short line each for ``--flops``
(FLOPs per step, the achieved rate, MFU or why there is none), ``--memory`` (the peak and the line
holding most of it) and ``--pc-sampling`` (what was sampled, or why nothing was).

A reader who asked for something sees its answer without ``--verbose``; the verbose header keeps
the long forms (:mod:`.measures`, :mod:`.memory_facts`). The PC sampling line has no long form:
it is one fact of the header in both forms (and on the HTML page)."""

from __future__ import annotations

from dlpt.analysis.inputs import Analysis
from dlpt.analysis.memory import device_peaks, has_memory, lines_by_memory
from dlpt.analysis.mfu import mfu
from dlpt.analysis.report.memory_facts import line_label
from dlpt.analysis.report.model import Fact
from dlpt.model.meta import Meta
from dlpt.model.units import Units, flops_text, rate_text, separator

__all__ = ["flops_headline", "memory_headline", "pc_sampling_facts"]


def flops_headline(a: Analysis, units: Units) -> list[Fact]:
    """``FLOPs 276 MFLOP/step · 2.17 GFLOP/s · MFU: no GPU peak known ...`` (nothing without
    ``--flops``)."""
    if a.meta.flops is None:
        return []
    m = mfu(a)
    if m is None:
        value = "none recorded (no matmul, convolution or attention op in the run)"
        return [Fact("headline", f"FLOPs: {value}", "note", "FLOPs", value)]
    sep = separator(units.ascii)
    per = "/step" if m.per_step else " in the run"
    parts = [f"{flops_text(m.flops_per_step)}{per}", rate_text(m.achieved_tflops)]
    if m.value is not None and m.peak_tflops is not None:
        parts.append(f"MFU {100 * m.value:.1f}% of {m.peak_tflops:g} TFLOP/s ({m.peak_source})")
    else:
        known = f"no peak known for '{a.device_name}'" if a.device_name else "no GPU peak known (CPU run)"
        parts.append(f"MFU: {known}; --peak-tflops")
    value = sep.join(parts)
    return [Fact("headline", f"FLOPs {value}", label="FLOPs", value=value)]


def memory_headline(a: Analysis, units: Units) -> list[Fact]:
    """``memory peak 6.9 MiB/step (cpu) · top line 2.1 MiB mlp.py:46 step`` (the line holding most
    at the peak)
    (nothing without ``--memory``; capture that could not run says so among the warnings)."""
    if not has_memory(a.meta):
        return []
    peaks = sorted(device_peaks(a.meta), key=lambda d: -d.peak)
    if not peaks:
        value = "no counted step to measure a peak in"
        return [Fact("headline", f"memory peak: {value}", "note", "memory peak", value)]
    top = peaks[0]
    per = "/step" if units.steps else " in the run"
    value = f"{units.bytes(top.peak, per_step=False)}{per} ({top.device})"
    if len(peaks) > 1:
        value += f", {len(peaks) - 1} more device{'s' if len(peaks) > 2 else ''}: --verbose"
    held = [r for r in lines_by_memory(a) if r.peak > 0]
    if held:
        size = units.bytes(held[0].peak, per_step=False)
        value += f"{separator(units.ascii)}top line {size} {line_label(held[0].line)}"
    return [Fact("headline", f"memory peak {value}", label="memory peak", value=value)]


def pc_sampling_facts(meta: Meta) -> list[Fact]:
    """What ``--pc-sampling`` sampled (samples, kernels, the steps held out), or why it sampled
    nothing; nothing when it was not asked for."""
    pc = meta.pc_sampling
    if pc is None:
        return []
    samples = pc.total_samples or 0
    if not samples:
        why = pc.reason or "no sample was collected"
        value = f"off - {why}" if pc.first_step is None else f"nothing sampled - {why}"
        return [Fact("pc_sampling", f"PC sampling: {value}", "note", "PC sampling", value)]
    kernels = len(pc.kernels or [])
    first, last = pc.first_step, pc.last_step
    steps = f"step {first}" if first == last else f"steps {first}-{last}"
    value = (
        f"{samples:,} samples in {kernels:,} kernel{'s' if kernels != 1 else ''} over {steps} "
        "(held out of the step figures); --kernel-lines NAME shows a kernel's lines"
    )
    if pc.reason:
        value += f"; {pc.reason}"
    return [Fact("pc_sampling", f"PC sampling: {value}", label="PC sampling", value=value)]
