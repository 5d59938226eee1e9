"""Facts from the host sampler: where the step's thread spent a step (the busiest lines), which
lines it was in while each GPU idled before, between and after its kernels, and what the
sampler cost. Both reports show them (terminal header, HTML insights)."""

from __future__ import annotations

from dlpt.analysis.host import GAPS, LineShare, idle_blame, lines_text, sampler_info, step_host
from dlpt.analysis.idle import step_idle
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.report.model import Fact
from dlpt.model.units import Units

__all__ = ["host_facts", "sampler_facts", "GAP_TEXT"]

#: How each idle class is named after "GPU 0 idle 3.10ms/step ...".
GAP_TEXT = {
    "before": "before its first kernel",
    "between": "between kernels",
    "after": "after its last kernel",
}
#: An idle class is explained when it is at least this share of the step.
MIN_IDLE_SHARE = 0.05


def _step_fact(share: LineShare, a: Analysis, units: Units, hz: int) -> Fact:
    per = "per step" if a.steps else "in the run"
    total = units.time(share.ns, per_step=False)
    gil = f", {100 * share.gil_ns / share.ns:.0f}% of it holding the GIL" if share.ns else ""
    top = share.top(min_share=0.01)
    where = f": {lines_text(top, lambda ns: units.time(ns, per_step=False), with_gil=True)}" if top else ""
    text = f"host {per} (sampled at {hz:,} Hz): {total} on the step's thread{gil}{where}"
    return Fact("measure", text, "info", "host per step" if a.steps else "host", f"{total}{where}")


def host_facts(a: Analysis, units: Units) -> list[Fact]:
    """Where the step's thread spent its time, and the lines it was in while each GPU idled."""
    info = sampler_info(a.meta)
    if info is None:
        return []
    if not info.sampling:
        if info.off:
            return [Fact("capture", f"host sampling: off - {info.off}", "warn")]
        return []
    out: list[Fact] = []
    share = step_host(a)
    if share is not None:
        out.append(_step_fact(share, a, units, info.hz))
    blame = idle_blame(a)

    def plain(ns: float) -> str:
        return units.time(ns, per_step=False)

    for s in step_idle(a):
        gaps = blame.get(s.device)
        if not gaps or s.span_ns <= 0:
            continue
        idle = {"before": s.before_ns, "between": s.between_ns, "after": s.after_ns}
        for gap in GAPS:
            got = gaps.get(gap)
            if got is None or idle[gap] < MIN_IDLE_SHARE * s.span_ns or got.ns <= 0:
                continue
            top = got.top()
            if not top:
                continue
            t = units.time(idle[gap], per_step=False)
            per = "/step" if a.steps else ""
            out.append(
                Fact(
                    "measure",
                    f"GPU {s.device} idle {t}{per} {GAP_TEXT[gap]}: host in {lines_text(top, plain)}",
                    "info",
                )
            )
    return out


def sampler_facts(a: Analysis, units: Units) -> list[Fact]:
    """What the sampler cost and what it could not read (dim, beside dlpt's own cost)."""
    info = sampler_info(a.meta)
    if info is None or not info.sampling or not info.wall_ns:
        return []
    core = 100 * info.cpu_ns / info.wall_ns
    value = f"{info.hz:,} Hz, {info.samples:,} stacks; its thread used {core:.1f}% of a core"
    if info.torn:
        value += f"; {info.torn:,} stacks dropped (read while they changed or across a step boundary)"
    if info.codes_lost:
        value += f"; {info.codes_lost:,} code objects freed before they were named"
    return [Fact("cost", f"host sampler: {value}", "dim", "host sampler", value)]
