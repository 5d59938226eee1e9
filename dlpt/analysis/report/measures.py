"""Measurements of how well a step uses the GPU: MFU with its formula (when FLOPs were recorded),
where each GPU idles per step and whether the step is launch-bound, and the ops whose FLOPs could
not be counted. Every number says where it came from: the MFU line prints its formula with the
values put in and names the peak's source."""

from __future__ import annotations

from dlpt.analysis.idle import step_idle
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.mfu import mfu
from dlpt.analysis.report.model import Fact
from dlpt.model.units import Units, flops_text, rate_text

__all__ = ["mfu_facts", "idle_facts", "coverage_facts"]


def mfu_facts(a: Analysis, units: Units) -> list[Fact]:
    """The MFU line and its details, or nothing when the run recorded no FLOPs."""
    m = mfu(a)
    if m is None:
        return []
    step = "per step" if m.per_step else "in the run"
    wall = "step wall" if m.per_step else "wall"
    t = units.time(m.step_wall_ns, per_step=False)
    flops = flops_text(m.flops_per_step)
    share = f"{100 * m.share:.0f}% of them in {m.key or 'an unknown dtype'}"
    if m.value is None or m.peak_tflops is None:
        why = f"no datasheet peak for '{a.device_name}'" if a.device_name else "no GPU in this run"
        return [
            Fact(
                "measure",
                f"model FLOPs {step} {flops} ({share}), {rate_text(m.achieved_tflops)} over the {wall} {t}; "
                f"MFU: {why} (give a peak with --peak-tflops)",
            )
        ]
    traced = ""
    if a.untraced_step is not None and m.per_step:
        wall = "untraced step wall"
        traced_mfu = m.flops_per_step / a.traced_step_ns / 1e3 / m.peak_tflops if a.traced_step_ns > 0 else 0
        traced = (
            f"; {100 * traced_mfu:.1f}% over the {units.time(a.traced_step_ns, per_step=False)} traced step"
        )
    # The MFU's spread: the step median's interval (an MFU is inversely proportional to it).
    st = a.untraced_step or a.traced_step
    spread = ""
    if m.per_step and st is not None and st.median_lo_ns and st.median_hi_ns and st.n > 1:
        lo = m.flops_per_step / st.median_hi_ns / 1e3 / m.peak_tflops
        hi = m.flops_per_step / st.median_lo_ns / 1e3 / m.peak_tflops
        spread = f" ({100 * lo:.1f}\u2013{100 * hi:.1f}%)"
    return [
        Fact(
            "measure",
            f"MFU {100 * m.value:.1f}%{spread} = model FLOPs {step} / {wall} / peak = {flops} / {t} / "
            f"{m.peak_tflops:g} TFLOP/s ({m.peak_source}){traced}",
        ),
        Fact(
            "measure",
            f"achieved {rate_text(m.achieved_tflops)} over the {wall}; {share}; FLOPs of matmuls, "
            "convolutions and attention from torch's formulas (torch.utils.flop_counter)",
        ),
    ]


def idle_facts(a: Analysis, units: Units) -> list[Fact]:
    """Per GPU: where its idle time per step is, and whether the step is launch-bound."""
    out = []

    def t(ns: float) -> str:
        return units.time(ns, per_step=False)

    for s in step_idle(a):
        text = (
            f"GPU {s.device} idle per step: {t(s.before_ns)} before its first kernel, "
            f"{t(s.between_ns)} between kernels, {t(s.after_ns)} after its last "
            f"(of {t(s.span_ns)}; {s.kernels:.0f} kernels of {t(s.mean_kernel_ns)} on average"
        )
        if s.syncs:
            text += f"; host waits {t(s.sync_ns)} in {s.syncs:.3g} syncs"
        text += ")" + (": launch-bound" if s.launch_bound else "")
        if s.traced is not None:
            tr = s.traced
            text += (
                f"; scaled to the untraced step (traced: {t(tr.before_ns)} before, {t(tr.between_ns)} "
                f"between, {t(tr.after_ns)} after, of {t(tr.span_ns)})"
            )
        out.append(Fact("measure", text, "bad" if s.launch_bound else "info"))
    return out


def coverage_facts(a: Analysis) -> list[Fact]:
    """Ops whose FLOP formula could not take the recorded inputs (their FLOPs are missing)."""
    missed = (a.meta.flops.unevaluated if a.meta.flops is not None else None) or {}
    parts = [f"{name} x{n}" for name, n in sorted(missed.items()) if n > 0]
    if not parts:
        return []
    return [
        Fact("measure", f"FLOPs not counted (formula could not take the inputs): {', '.join(parts)}", "note")
    ]
