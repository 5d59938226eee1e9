"""Host time from the sampler (``meta.host``): where the step's thread spent a step, and which
of its lines it was in while each GPU idled before, between and after the step's kernels.

The sampler charges each sample to the nearest line of the user's own files (dlpt.capture.
host_session), so these are the lines a report shows. Per-step values: the step's thread's
samples over the profiled steps; the idle blame over the same recorded steps as the GPU idle
split (``meta.gpu_steps``), so "idle 3.1 ms before the first kernel: host in load_batch 2.8 ms"
compares like with like. Sampled times are estimates: each sample stands for one sampling
interval.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from dlpt.analysis.inputs import Analysis
from dlpt.model.meta import Host, HostShare, Meta

__all__ = [
    "HostLine",
    "LineShare",
    "SamplerInfo",
    "GAPS",
    "sampler_info",
    "step_host",
    "idle_blame",
    "blamed",
    "lines_text",
]

#: The idle classes of a step on one GPU, in the report's order (and "busy": the GPU worked).
GAPS = ("before", "between", "after")


@dataclass(frozen=True)
class HostLine:
    """One line's sampled time (per step when divided), and the part with the GIL held."""

    file: str
    line: int
    function: str
    ns: float
    gil_ns: float
    inner: str  # the innermost frame when it is not this line (``decoder.py:353 raw_decode``)

    @property
    def label(self) -> str:
        return f"{os.path.basename(self.file) or self.file}:{self.line} {self.function}"


@dataclass(frozen=True)
class LineShare:
    """Sampled time and its busiest lines (per step when divided)."""

    ns: float
    gil_ns: float
    lines: tuple[HostLine, ...]
    other_ns: float

    def top(self, min_share: float = 0.05, most: int = 3) -> tuple[HostLine, ...]:
        """The busiest lines with at least ``min_share`` of the time, ``most`` of them."""
        return tuple(r for r in self.lines[:most] if self.ns > 0 and r.ns >= min_share * self.ns)


@dataclass(frozen=True)
class SamplerInfo:
    hz: int
    sampling: bool
    off: str  # why it is off ("" when on or not asked for)
    samples: int
    torn: int
    cpu_ns: int  # the sampler thread's own CPU time
    wall_ns: int  # wall time its ticks covered while recording
    codes_lost: int


def sampler_info(meta: Meta) -> SamplerInfo | None:
    """What the sampler did (None: the session has no host sampling at all)."""
    h = meta.host
    if h is None or h == Host():
        return None
    return SamplerInfo(
        hz=h.sample_hz or 0,
        sampling=h.sampling is True,
        off=h.off or "",
        samples=h.samples or 0,
        torn=h.torn or 0,
        cpu_ns=h.sampler_cpu_ns or 0,
        wall_ns=h.sampled_wall_ns or 0,
        codes_lost=h.codes_lost or 0,
    )


def _share(d: HostShare | None, per: float) -> LineShare | None:
    if d is None or per <= 0:
        return None
    rows = [
        HostLine(
            file=r.file,
            line=r.line,
            function=r.function,
            ns=r.ns / per,
            gil_ns=(r.gil_ns or 0) / per,
            inner=r.inner or "",
        )
        for r in d.lines
    ]
    rows.sort(key=lambda r: -r.ns)
    return LineShare(
        ns=d.ns / per, gil_ns=(d.gil_ns or 0) / per, lines=tuple(rows), other_ns=(d.other_ns or 0) / per
    )


def step_host(a: Analysis) -> LineShare | None:
    """The step's thread's sampled time per profiled step (per run without steps), by line."""
    h = a.meta.host
    share = _share(h.step_thread if h is not None else None, a.per)
    return share if share is not None and share.ns > 0 else None


def idle_blame(a: Analysis) -> dict[str, dict[str, LineShare]]:
    """Per device, per class (``before``/``between``/``after``/``busy``): the step's thread's
    sampled time per recorded step while that GPU was so, by line."""
    h = a.meta.host
    idle = (h.idle if h is not None else None) or {}
    gpu_steps = a.meta.gpu_steps or {}
    out: dict[str, dict[str, LineShare]] = {}
    for dev, gaps in idle.items():
        rows = gpu_steps.get(dev)
        # Divided as the GPU idle split divides (its rows are the same recorded steps).
        n = len(rows) if rows else (h.steps if h is not None and h.steps else 0)
        per_gap = {}
        for gap, raw in gaps.items():
            share = _share(raw, float(n))
            if share is not None:
                per_gap[str(gap)] = share
        if per_gap:
            out[str(dev)] = per_gap
    return out


def blamed(a: Analysis, device: str, gap: str) -> LineShare | None:
    """The step's thread's lines while GPU ``device`` was idle ``gap`` (per step), if sampled."""
    share = idle_blame(a).get(device, {}).get(gap)
    return share if share is not None and share.ns > 0 and share.top() else None


def lines_text(lines: tuple[HostLine, ...], time: Callable[[float], str], with_gil: bool = False) -> str:
    """``data.py:41 load_batch 2.80ms, collate.py:9 collate 200.0µs``: each line with its time
    (``time`` formats it), the innermost frame when it is another (``in queue.py:171 get``) and,
    with ``with_gil``, the share of it spent holding the GIL."""
    parts = []
    for r in lines:
        extra = []
        if r.inner:
            extra.append(f"in {r.inner}")
        if with_gil and r.ns > 0:
            extra.append(f"{100 * r.gil_ns / r.ns:.0f}% Python")
        parts.append(f"{r.label} {time(r.ns)}" + (f" ({', '.join(extra)})" if extra else ""))
    return ", ".join(parts)
