"""The work tables' rows (``--view suggestions``): lines and ops with recorded work (``--flops``),
busiest first, each with its roofline bound and the peak it is measured against. Computed once
per run by :mod:`dlpt.views.run`; the terminal's work tables only format them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from dlpt.analysis.inputs import Analysis
from dlpt.analysis.roofline import Bound
from dlpt.analysis.work import LineWork, OpWork, line_work, op_work

__all__ = ["WorkRow", "WorkTables", "work_tables"]

W = TypeVar("W", LineWork, OpWork)


@dataclass(frozen=True)
class WorkRow(Generic[W]):
    """One line's or op's work, its bound and the dense TFLOP/s peak of its dtype (None: none
    known). On a CPU run the bound holds only the rates, over the CPU time of the ops."""

    work: W
    bound: Bound
    peak_tflops: float | None


@dataclass(frozen=True)
class WorkTables:
    """``recorded``: whether any op carries FLOPs or bytes (else the tables say how to get them).
    ``gpu``: whether the run had GPU time (without it only FLOPs mean anything and rows rank by
    them). ``mem_gbs``: the device's memory bandwidth; ``datasheet``: whether peaks are known
    (a datasheet entry or ``--peak-tflops``) and ``device_name`` the device looked up."""

    recorded: bool
    gpu: bool
    mem_gbs: float | None
    datasheet: bool
    device_name: str
    lines: tuple[WorkRow[LineWork], ...]
    ops: tuple[WorkRow[OpWork], ...]


def _bound(w: LineWork | OpWork, a: Analysis, gpu: bool) -> tuple[Bound, float | None]:
    """``w``'s bound and peak; on a CPU run its rates over its ops' CPU time, against no peak."""
    if not gpu:
        return w.cpu_rate(), None
    return w.bound(a), a.peak_tflops(w.key)


def work_tables(a: Analysis) -> WorkTables:
    """The work tables of analysis ``a``: every row ranked by GPU time, then FLOPs."""
    ops = op_work(a.root)
    gpu = a.gpu
    datasheet = a.device is not None or bool(a.peak_override)
    mem_gbs = a.device.mem_gbs if a.device is not None else None
    if not ops:
        return WorkTables(False, gpu, mem_gbs, datasheet, a.device_name, (), ())
    if not gpu:
        ops = [w for w in ops if w.flops]
    lines = sorted(
        (lw for lw in line_work(a.root) if (lw.flops or lw.nbytes) and (gpu or lw.flops)),
        key=lambda lw: (-lw.kernel_ns, -lw.flops),
    )
    ranked = sorted((w for w in ops if w.kernel_ns or not gpu), key=lambda w: (-w.kernel_ns, -w.flops))
    return WorkTables(
        True,
        gpu,
        mem_gbs,
        datasheet,
        a.device_name,
        tuple(WorkRow(lw, *_bound(lw, a, gpu)) for lw in lines),
        tuple(WorkRow(w, *_bound(w, a, gpu)) for w in ranked),
    )
