"""The header of an answer: the run's facts, each with its basis, as the report's header states
them: the steps counted and how the warm-up ended, the step time and what it is the median of,
dlpt's own cost and the windows it was measured in, the totals, MFU, and every fact of the
report's header as the report words it (docs/query-format.md, "header")."""

from __future__ import annotations

from typing import Any

from dlpt.analysis.mfu import mfu
from dlpt.analysis.report import Report
from dlpt.model.calibration import calibration
from dlpt.model.meta import StepTime, step_time
from dlpt.model.metrics import METRICS
from dlpt.views.run import RunView

__all__ = ["header", "TOTAL_METRICS"]

#: The totals an answer states (per step), where non-zero.
TOTAL_METRICS = ("gpu", "cpu", "sync", "api", "kernels", "calls", "bytes", "mem_peak", "host")


def _steps(view: RunView) -> dict[str, Any]:
    steps = view.session.typed_meta.steps
    counted = view.session.typed_meta.profiled_steps
    out: dict[str, Any] = {"counted": counted}
    if steps is None:
        out["basis"] = "no steps detected: values are per run"
        return out
    if steps.seen is not None:
        out["seen"] = steps.seen
    warm = steps.warmup
    if warm is not None and warm.steps is not None:
        how = "detected" if steps.skip_first is None else "--skip-first"
        out["warmup"] = {"steps": warm.steps, "how": how, **({"reason": warm.reason} if warm.reason else {})}
    if steps.active is not None:
        out["active"] = steps.active
    if steps.source:
        out["source"] = steps.source
    out["basis"] = (
        f"values are per counted step (/{counted})" if counted else "no step counted: values are per run"
    )
    return out


def _step_time(view: RunView) -> dict[str, Any] | None:
    """The step time derived figures use, with what it rests on."""
    meta = view.session.typed_meta
    cost = calibration(meta)
    untraced = step_time(meta, "untraced") if cost.measured else None
    st: StepTime | None = untraced or step_time(meta, "traced")
    if st is None or not view.session.typed_meta.profiled_steps:
        return None
    kind = "untraced" if untraced is not None else "traced"
    out: dict[str, Any] = {"kind": kind, "median_ns": round(st.median_ns), "n": st.n}
    if st.median_lo_ns is not None and st.median_hi_ns is not None:
        out["lo_ns"], out["hi_ns"] = round(st.median_lo_ns), round(st.median_hi_ns)
    interval = "95% interval" if st.n >= 6 else "min-max"
    out["basis"] = f"median of {st.n} {kind} steps ({interval})"
    return out


def _cost(view: RunView) -> dict[str, Any]:
    c = calibration(view.session.typed_meta)
    out: dict[str, Any] = {"windows": c.windows, "measured": c.measured, "text": c.text()}
    if c.windows:
        out.update(ratio=round(c.ratio, 3), lo=round(c.lo, 3), hi=round(c.hi, 3), interval=c.how)
    return out


def _totals(view: RunView) -> dict[str, int]:
    steps = max(1, view.session.typed_meta.profiled_steps)
    out = {}
    for name in TOTAL_METRICS:
        v = METRICS[name](view.totals)
        if v:
            out[name] = round(v / steps)
    return out


def _mfu(view: RunView) -> dict[str, Any] | None:
    m = mfu(view.analysis)
    if m is None:
        return None
    out: dict[str, Any] = {
        "flops_per_step": round(m.flops_per_step),
        "achieved_tflops": round(m.achieved_tflops, 3),
        "peak_source": m.peak_source,
    }
    if m.value is not None and m.peak_tflops is not None:
        out.update(value=round(m.value, 4), peak_tflops=m.peak_tflops)
    return out


def header(view: RunView, report: Report) -> dict[str, Any]:
    """The answer's ``header`` (docs/query-format.md)."""
    out: dict[str, Any] = {"program": report.title}
    if report.rank:
        out["rank"] = report.rank
    out["steps"] = _steps(view)
    st = _step_time(view)
    if st is not None:
        out["step_time"] = st
    out["cost"] = _cost(view)
    out["totals"] = _totals(view)
    m = _mfu(view)
    if m is not None:
        out["mfu"] = m
    out["facts"] = [{"kind": f.kind, "level": f.level, "text": f.text} for f in report.header]
    return out
