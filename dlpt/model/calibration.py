"""dlpt's cost in a run, from its paired windows, and whether it is measured well enough for the
step figures to use the untraced step (docs/numbers.md).

Each untraced window is compared with its traced neighbours (``meta.step_time.paired``, written by
:class:`dlpt.capture.schedule.PairedWindows`): the window's ratio is the median of the traced
steps right before and after it over the median of its own steps. dlpt's cost is the median of
those ratios, with the distribution-free interval of that median (:func:`median_interval`: 95%
from 6 windows on, min-max below). It is **measured** when:

- at least :data:`MIN_WINDOWS` windows were paired, and
- its interval is no wider than :data:`MAX_RELATIVE_WIDTH` of the median (a busy host whose step
  time jumps between windows gives a wide one).

Then the untraced step stands for the program's own step in every derived figure (GPU idle
share, MFU, suggested gains); otherwise those figures are as traced and the report says "not
measured". A cost whose median is below 1.0x (impossible: tracing never makes a step faster) is
never printed as a cost: the report says "within noise (lo-hi)", and uses the untraced step only
if the calibration is measured (it is then as good as the traced one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dlpt.model.meta import Meta, StepTime, StepTimes, step_time, typed
from dlpt.model.stats import median_interval

__all__ = ["Calibration", "calibration", "calibrated_untraced", "MIN_WINDOWS", "MAX_RELATIVE_WIDTH"]

#: Paired windows needed before the cost counts as measured.
MIN_WINDOWS = 3
#: The widest interval (hi - lo, relative to the median) of a measured cost.
MAX_RELATIVE_WIDTH = 0.5


@dataclass(frozen=True)
class Calibration:
    """dlpt's cost per traced step in one run."""

    windows: int  # paired windows
    ratio: float  # median of the windows' traced/untraced ratios (0.0 without windows)
    lo: float
    hi: float
    how: str  # "95%" or "min-max": what [lo, hi] is
    measured: bool  # well enough for the step figures to use the untraced step
    why_not: str  # when not measured: why, in words

    @property
    def within_noise(self) -> bool:
        """The cost cannot be told from 1.0x: its median is below 1.0, or its interval holds 1.0."""
        return self.windows > 0 and (self.ratio < 1.0 or self.lo <= 1.0)

    def text(self) -> str:
        """How a report states it: "1.21x (1.15-1.28, 95%, 9 windows)", "within noise
        (0.92-1.06, ...)", or "not measured (...)"; never a cost below 1.0x."""
        if not self.windows:
            return f"not measured ({self.why_not})"
        windows = f"{self.windows} window{'s' if self.windows != 1 else ''}"
        spread = f"{self.lo:.2f}\u2013{self.hi:.2f}, {self.how}, {windows}"
        if self.ratio < 1.0:
            body = f"within noise ({spread})"
        else:
            body = f"{self.ratio:.2f}x ({spread})" + (", within noise" if self.lo <= 1.0 else "")
        return body if self.measured else f"not measured well enough: {body}; {self.why_not}"


def calibration(meta: Meta | Mapping[str, Any]) -> Calibration:
    """The run's :class:`Calibration` from ``meta.step_time.paired``."""
    st = typed(meta).step_time
    off = st is not None and st.calibrate is False
    if st is None or st.paired is None:
        saved = st is not None and st != StepTimes()
        why = (
            "--calibrate off" if off else "saved before dlpt paired its windows" if saved else "no step times"
        )
        return Calibration(0, 0.0, 0.0, 0.0, "min-max", False, why)
    ratios = [p.traced_ns / p.untraced_ns for p in st.paired if p.traced_ns > 0 and p.untraced_ns > 0]
    if not ratios:
        why = "--calibrate off" if off else "no untraced window with traced steps on both sides"
        return Calibration(0, 0.0, 0.0, 0.0, "min-max", False, why)
    ratios.sort()
    n = len(ratios)
    mid = n // 2
    median = ratios[mid] if n % 2 else (ratios[mid - 1] + ratios[mid]) / 2
    lo, hi, how = median_interval(ratios)
    why = ""
    if n < MIN_WINDOWS:
        why = f"{n} paired window{'s' if n != 1 else ''}, {MIN_WINDOWS} needed"
    elif median > 0 and (hi - lo) / median > MAX_RELATIVE_WIDTH:
        why = f"the windows disagree by more than {MAX_RELATIVE_WIDTH:.0%} (a busy or drifting host)"
    return Calibration(n, median, lo, hi, how, not why, why)


def calibrated_untraced(meta: Meta | Mapping[str, Any]) -> StepTime | None:
    """The untraced step times when the calibration is measured (what derived figures use),
    else None: the figures are as traced."""
    untraced = step_time(meta, "untraced")
    if untraced is None or not calibration(meta).measured:
        return None
    return untraced
