"""Where a step's GPU idle time is: before its first GPU work (the host preparing the step:
data loading, host-side preprocessing), between its kernels (the host not launching fast enough,
or waiting in a synchronisation), after its last GPU work (the host's tail of the step, after
its final sync), and whether the step is launch-bound.

From ``meta.gpu_steps`` (the native core's GPU time line per recorded step: span, busy, idle
before, idle after): idle between = span - busy - before - after. The core keeps totals per
step, not each gap, so the gaps a mid-step synchronisation causes count in "between"; the host's
sync wait per step (``sync`` nodes) is reported beside them.

Calibrated: the host of a traced step is slower than the program's own (dlpt's callbacks and
CUPTI's records cost time on every launch), so its idle gaps are longer. When the run measured
untraced steps (:mod:`dlpt.capture.schedule`), the step is rescaled to the untraced step time: the
GPU's own busy time stays (kernel times are the GPU's), the idle time becomes what the untraced
step leaves (its wall time minus the busy time, never more than the traced idle) and is split in
the traced step's proportions. The traced values stay beside them (``traced``), so a report can
show both.

Launch-bound: between its first and last kernel the GPU idles at least 30% of the step and
longer than it works, while its kernels are short (a mean under 50 µs): the GPU finishes each
kernel before the host has launched the next, and only fewer launches (CUDA graphs,
torch.compile) or more work per launch help.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dlpt.analysis.inputs import Analysis

__all__ = ["StepIdle", "step_idle", "calibrated", "LAUNCH_BOUND_SHARE", "SHORT_MEAN_KERNEL_NS"]

LAUNCH_BOUND_SHARE = 0.3
SHORT_MEAN_KERNEL_NS = 50_000


@dataclass(frozen=True)
class StepIdle:
    """Mean per recorded step on one device (ns), with the step's kernel and sync statistics."""

    device: str
    steps: int
    span_ns: float
    busy_ns: float
    before_ns: float
    between_ns: float
    after_ns: float
    kernels: float  # launches per step
    mean_kernel_ns: float
    syncs: float  # synchronising calls per step
    sync_ns: float  # host time blocked in them per step
    traced: StepIdle | None = None  # the same step as traced, when this one is calibrated

    @property
    def idle_ns(self) -> float:
        return self.before_ns + self.between_ns + self.after_ns

    @property
    def launch_bound(self) -> bool:
        return (
            self.span_ns > 0
            and self.between_ns >= LAUNCH_BOUND_SHARE * self.span_ns
            and self.between_ns > self.busy_ns
            and 0 < self.mean_kernel_ns < SHORT_MEAN_KERNEL_NS
        )


def calibrated(s: StepIdle, untraced_ns: float) -> StepIdle:
    """``s`` (a traced step) rescaled to an untraced step of ``untraced_ns`` (see module
    docstring)."""
    idle = s.idle_ns
    untraced_idle = min(idle, max(0.0, untraced_ns - s.busy_ns))
    f = untraced_idle / idle if idle > 0 else 1.0
    return replace(
        s,
        span_ns=s.busy_ns + untraced_idle,
        before_ns=s.before_ns * f,
        between_ns=s.between_ns * f,
        after_ns=s.after_ns * f,
        traced=s,
    )


def step_idle(a: Analysis) -> list[StepIdle]:
    """One :class:`StepIdle` per device with recorded steps (none without ``meta.gpu_steps``),
    calibrated to the untraced step when the run measured one."""
    untraced = a.untraced_step
    steps = _traced_idle(a)
    return [calibrated(s, untraced.median_ns) for s in steps] if untraced is not None else steps


def _traced_idle(a: Analysis) -> list[StepIdle]:
    raw = a.meta.gpu_steps
    if raw is None:
        return []
    inc = a.totals
    launches, kernel_ns = inc.get("kernels", 0), inc.get("gpu_ns", 0)
    out = []
    for dev in sorted(raw, key=lambda s: (len(str(s)), str(s))):
        rows = raw[dev]
        if not rows:
            continue
        n = len(rows)
        span, busy = sum(r.span_ns for r in rows) / n, sum(r.busy_ns for r in rows) / n
        before, after = sum(r.idle_before_ns for r in rows) / n, sum(r.idle_after_ns for r in rows) / n
        out.append(
            StepIdle(
                device=str(dev),
                steps=n,
                span_ns=span,
                busy_ns=busy,
                before_ns=before,
                between_ns=max(0.0, span - busy - before - after),
                after_ns=after,
                kernels=launches / a.per,
                mean_kernel_ns=kernel_ns / launches if launches else 0.0,
                syncs=inc.get("syncs", 0) / a.per,
                sync_ns=inc.get("sync_ns", 0) / a.per,
            )
        )
    return out
