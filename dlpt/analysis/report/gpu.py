"""Facts about where the time went in total: the per-step totals, whether the GPU was captured,
each GPU's busy share, CUDA graph replays, records dropped or left unattributed, and what dlpt's
own callbacks cost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpt.analysis.report.model import Fact, Level
from dlpt.model.calibration import calibrated_untraced
from dlpt.model.meta import Capture, Device, Meta, StepTime, StepTimes, step_time, typed, wall_ns
from dlpt.model.metrics import METRICS
from dlpt.model.units import Units

__all__ = [
    "totals",
    "mean_step_wall",
    "capture_facts",
    "device_facts",
    "graph_facts",
    "record_facts",
    "self_cost",
]


# GPU time above the GPUs' busy time by more than this share is shown as overlap.
OVERLAP_SHARE = 0.01


def totals(inc: Mapping[str, int], units: Units, busy_ns: int | None = None) -> list[Fact]:
    """The session's totals (per step when there are steps), each with its label and value and
    the phrase the one-line form uses ("26 kernels"). ``busy_ns``: the used GPUs' busy time
    (the union of their kernels' intervals) over the same steps; where the summed kernel time
    exceeds it (streams overlapping: NCCL beside compute), the GPU time says so, or it reads as
    more GPU time than the step has."""
    out = []
    gpu = METRICS["gpu"](inc)
    if gpu:
        text = f"GPU {units.time(gpu)}"
        if busy_ns and gpu - busy_ns > OVERLAP_SHARE * gpu:
            text += f" (streams overlap: busy {units.time(busy_ns)})"
        out.append(Fact("total", text, label="GPU time", value=units.time(gpu)))
    if inc.get("kernels"):
        n = units.count(inc["kernels"])
        out.append(Fact("total", f"{n} kernels", label="kernels", value=n))
    if inc.get("copies"):
        v = f"{units.count(inc['copies'])} ({units.bytes(inc.get('copy_bytes', 0))})"
        out.append(
            Fact(
                "total",
                f"{units.count(inc['copies'])} copies ({units.bytes(inc.get('copy_bytes', 0))})",
                label="copies",
                value=v,
            )
        )
    if inc.get("sync_ns"):
        v = units.time(inc["sync_ns"])
        out.append(Fact("total", f"sync wait {v}", label="sync wait", value=v))
    if inc.get("cpu_ns"):
        v = units.time(inc["cpu_ns"])
        out.append(Fact("total", f"CPU ops {v}", label="CPU ops", value=v))
    if inc.get("api_ns"):
        v = units.time(inc["api_ns"])
        out.append(Fact("total", f"CUDA API {v}", label="CUDA API", value=v))
    return out


def mean_step_wall(meta: Meta, steps: int, units: Units) -> list[Fact]:
    """The counted steps' mean wall time, the per-step totals' first figure: the totals are means
    over the same steps (their sums divided by the steps), while the step wall line gives medians
    (issue 48: a median beside a mean read as op time five times the step). Nothing for a session
    saved before dlpt timed its counted steps (its step wall line gives their mean already)."""
    counted = (meta.step_time.counted_ns if meta.step_time is not None else None) or 0
    if not steps or counted <= 0:
        return []
    v = units.time(counted / steps, per_step=False)
    return [Fact("total", f"step wall {v}", label="step wall", value=v)]


def capture_facts(meta: Meta) -> list[Fact]:
    """Whether GPU work was captured, and why not."""
    gpu = meta.gpu
    if gpu is not None and gpu.enabled is False:
        reason = gpu.reason or "reason unknown"
        return [Fact("capture", f"GPU capture: off - {reason}; CPU-side attribution only", "warn")]
    if gpu is not None and gpu.enabled:
        return [Fact("capture", "GPU capture: on", "dim")]
    return []


def device_facts(meta: Meta | Mapping[str, Any], units: Units) -> list[Fact]:
    """Each GPU's busy time against the step (the untraced step when the run measured one, with
    the traced one beside it) or, without steps, against the profiled wall time."""
    meta = typed(meta)
    wall = wall_ns(meta)
    names = {str(d.index): d for d in meta.devices or []}
    busy = meta.gpu_busy_ns or {}
    traced, untraced = step_time(meta, "traced"), calibrated_untraced(meta)
    saved = meta.step_time is not None and meta.step_time != StepTimes()
    per_step = units.steps > 0 and traced is not None and saved
    out = []
    for dev in sorted(set(busy) | set(names), key=lambda s: (len(s), s)):
        d = names.get(dev, Device())
        name = f"GPU {dev} {d.name or ''}".rstrip()
        if d.capability:
            name += f" (sm {d.capability})"
        if dev not in busy:  # a GPU the program never used: one short line (issue 33)
            out.append(Fact("device", f"GPU {dev}: unused", "dim", f"GPU {dev}", "unused"))
            continue
        b = busy[dev]
        if per_step and traced is not None:
            value, frac = _step_busy(
                units.scale(b),
                traced.median_ns,
                untraced.median_ns if untraced else None,
                units,
                _union_share(meta, dev),
            )
            value += _idle_spread(units.scale(b), untraced or traced)
        else:
            frac = b / wall if wall else 0.0
            value = (
                f"busy {units.time(b)} of {units.time(wall)} wall ({100 * frac:.1f}%), "
                f"idle {100 * (1 - frac):.1f}%"
            )
        out.append(Fact("device", f"{name}: {value}", "bad" if frac < 0.5 else "info", name, value, frac))
    return out


def _idle_spread(busy: float, step: StepTime) -> str:
    """The idle share's 95% interval from the step median's: "; idle 21.0-25.0% (95%)"; "" without
    one."""
    lo, hi = step.median_lo_ns, step.median_hi_ns
    if lo is None or hi is None or lo <= 0 or step.n < 2:
        return ""
    idle_lo, idle_hi = 1 - min(1.0, busy / hi), 1 - min(1.0, busy / lo)
    return f"; idle {100 * idle_lo:.1f}\u2013{100 * idle_hi:.1f}% (the step median's interval)"


def _union_share(meta: Meta, dev: str) -> float | None:
    """The median over the recorded steps of the GPU's busy share of each step (the union of
    its kernels, copies and memsets inside the step, over the step's span): at most 1 whatever
    overlaps on several streams, and not a mean of busy times against a median of steps."""
    rows = (meta.gpu_steps or {}).get(dev)
    if rows is None:
        return None
    shares = sorted(min(1.0, r.busy_ns / r.span_ns) for r in rows if r.span_ns > 0)
    return shares[len(shares) // 2] if shares else None


def _step_busy(
    busy: float, traced_ns: float, untraced_ns: float | None, units: Units, share: float | None = None
) -> tuple[str, float]:
    """A GPU's busy time per step against the untraced step (its busy share), and against the
    traced one beside it (``share``: the traced steps' own busy share, when they were recorded
    one by one)."""
    t = units.time
    traced_frac = share if share is not None else min(1.0, busy / traced_ns if traced_ns > 0 else 0.0)
    if not untraced_ns:
        text = f"busy {t(busy, per_step=False)} of the {t(traced_ns, per_step=False)} traced step "
        return text + f"({100 * traced_frac:.1f}%), idle {100 * (1 - traced_frac):.1f}%", traced_frac
    frac = min(1.0, busy / untraced_ns)
    return (
        f"busy {t(busy, per_step=False)} of the {t(untraced_ns, per_step=False)} untraced step "
        f"({100 * frac:.1f}%), idle {100 * (1 - frac):.1f}% (traced: {100 * traced_frac:.1f}% of "
        f"{t(traced_ns, per_step=False)})",
        frac,
    )


def graph_facts(meta: Meta, units: Units) -> list[Fact]:
    """CUDA graph replays: how much GPU time they are, and whether any could not be traced back
    to where they were captured."""
    g = meta.cuda_graphs or {}
    replay = g.get("replay_gpu_ns", 0)
    if not replay:
        return []
    per = " per step" if units.steps else ""
    value = (
        f"{units.time(replay)} GPU time{per}, shown under <cuda graph replay> at the lines that captured them"
    )
    out = [Fact("graphs", f"CUDA graph replays: {value}", label="CUDA graph replays", value=value)]
    lost = g.get("uncaptured_gpu_ns", 0)
    if lost:
        out.append(
            Fact(
                "graphs",
                f"{units.time(lost)}{per} of it was captured before profiling started: shown at the replay "
                "call instead (start dlpt before the graphs are captured; --skip-first keeps warm-up out "
                "of the numbers)",
                "warn",
            )
        )
    return out


def _count_text(key: str, v: int, units: Units) -> str:
    # Keys ending in _ns are times; everything else counts records.
    if key.endswith("_ns"):
        what = key[:-3].replace("_", " ")
        what = "GPU" if what == "gpu" else what
        return f"{units.time(v)} {what} time" + (" per step" if units.steps else "")
    return f"{v:,} {key.replace('_', ' ')}"


def record_facts(meta: Meta, units: Units) -> list[Fact]:
    """Records CUPTI dropped, and work that could not be attributed to a context (shown under
    ``<unknown>``): counts first, then times."""
    out = []
    kinds: tuple[tuple[str, dict[str, int] | None, Level], ...] = (
        ("dropped", meta.dropped, "error"),
        ("unattributed", meta.unattributed, "warn"),
    )
    for key, d, level in kinds:
        items = sorted((d or {}).items(), key=lambda kv: kv[0].endswith("_ns"))
        parts = [_count_text(k, v, units) for k, v in items if v]
        if parts:
            note = " (shown under <unknown>)" if key == "unattributed" else ""
            out.append(Fact("records", f"{key}: {', '.join(parts)}{note}", level))
    return out


def self_cost(meta: Meta, units: Units) -> list[Fact]:
    """What dlpt's own callbacks cost while recording (sampled, see csrc SelfTimer), so that a
    reader knows which part of the step time is the profiler; torch's RecordFunction machinery
    and CUPTI cost more on top (the README's overhead section measures all of it)."""
    own = (meta.capture or Capture()).self_ns or 0
    wall = wall_ns(meta)
    if not own or not wall:
        return []
    # In all, not per step: the callbacks also ran in the recorded time outside the steps (set-up,
    # warm-up), which a per-step figure beside a share of the whole wall time misstated.
    took, of = units.time(own, per_step=False), units.time(wall, per_step=False)
    value = (
        f"dlpt's own callbacks took {took} in all ({100 * own / wall:.1f}% of the {of} wall time); "
        "torch's op hooks and CUPTI add more (README: Overhead)"
    )
    return [Fact("cost", f"profiling: {value}", "dim", "profiling", value)]
