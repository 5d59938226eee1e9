"""Model FLOPs utilisation of a step: the FLOPs the model's ops do per step, divided by the step's
wall time, divided by the GPU's dense peak.

    MFU = model FLOPs per step / step wall / peak

"Model FLOPs" are the sum of torch's formula FLOPs over the recorded ops (matmuls, convolutions,
attention, forward and backward), as in the PaLM paper's definition: the work the model needs,
not what the hardware executed (recomputation and elementwise work are not counted). The peak is
the datasheet's dense rate for the dtype that carries most of those FLOPs (bf16 under autocast);
the share of FLOPs in that dtype is reported beside it, so a mixed-precision run says how much of
its work the peak describes.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlpt.analysis.inputs import Analysis
from dlpt.analysis.work import model_flops

__all__ = ["Mfu", "mfu"]


@dataclass(frozen=True)
class Mfu:
    """The numbers of the MFU formula. ``peak_tflops`` is None when no peak is known."""

    flops_per_step: float
    step_wall_ns: float
    key: str | None
    share: float  # of the FLOPs in dtype ``key``
    peak_tflops: float | None
    peak_source: str
    per_step: bool

    @property
    def achieved_tflops(self) -> float:
        """FLOPs per second over the whole step, in TFLOP/s."""
        return self.flops_per_step / self.step_wall_ns / 1e3 if self.step_wall_ns > 0 else 0.0

    @property
    def value(self) -> float | None:
        """MFU as a fraction (0.42 for 42%), None without a peak."""
        return self.achieved_tflops / self.peak_tflops if self.peak_tflops else None


def mfu(a: Analysis) -> Mfu | None:
    """The MFU of ``a``'s run; None when it recorded no FLOPs (run without ``--flops``)."""
    if not a.totals.get("flops"):  # without walking the tree
        return None
    by_key = model_flops(a.root)
    total = sum(by_key.values())
    if total <= 0 or a.step_wall_ns <= 0:
        return None
    key = max(by_key, key=lambda k: by_key[k])
    known = key if key != "?" else None
    return Mfu(
        flops_per_step=total / a.per,
        step_wall_ns=a.step_wall_ns,
        key=known,
        share=by_key[key] / total,
        peak_tflops=a.peak_tflops(known),
        peak_source=a.peak_source(known),
        per_step=a.steps > 0,
    )
