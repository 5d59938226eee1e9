"""Where a step's GPU idle time is: before its first GPU work (the host preparing the step:
data loading, host-side preprocessing), between its kernels (the host not launching fast enough,
or waiting in a synchronisation), after its last GPU work (the host's tail of the step, after
its final sync), and whether the step is launch-bound.

From ``meta.gpu_steps`` (the native core's GPU time line per recorded step: span, busy, idle
before, idle after): idle between = span - busy - before - after. The core keeps totals per
step, not each gap, so the gaps a mid-step synchronisation causes count in "between"; the host's
sync wait per step (``sync`` nodes) is reported beside them.

Launch-bound: between its first and last kernel the GPU idles at least 30% of the step and
longer than it works, while its kernels are short (a mean under 50 µs): the GPU finishes each
kernel before the host has launched the next, and only fewer launches (CUDA graphs,
torch.compile) or more work per launch help.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlpt.analysis.inputs import Analysis, int_of

__all__ = ["StepIdle", "step_idle", "LAUNCH_BOUND_SHARE", "SHORT_MEAN_KERNEL_NS"]

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


def step_idle(a: Analysis) -> list[StepIdle]:
    """One :class:`StepIdle` per device with recorded steps (none without ``meta.gpu_steps``)."""
    raw = a.meta.get("gpu_steps")
    if not isinstance(raw, dict):
        return []
    inc = a.totals
    launches, kernel_ns = inc.get("kernels", 0), inc.get("gpu_ns", 0)
    out = []
    for dev in sorted(raw, key=lambda s: (len(str(s)), str(s))):
        rows = [r for r in raw[dev] or [] if isinstance(r, dict)]
        if not rows:
            continue
        n = len(rows)

        def mean(key: str, rows: list[dict[str, object]] = rows, n: int = n) -> float:
            return sum(int_of(r.get(key)) for r in rows) / n

        span, busy = mean("span_ns"), mean("busy_ns")
        before, after = mean("idle_before_ns"), mean("idle_after_ns")
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
