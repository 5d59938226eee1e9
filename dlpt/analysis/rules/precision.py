"""fp32 matmuls (and convolutions, attention) on a tensor-core GPU -> bf16 autocast, or TF32.

Gain per step = the ops' measured kernel time x (1 - peak of their dtype / bf16 peak), both
peaks from the device's datasheet: the estimate assumes the kernels reach the same share of the
faster peak as they reach of the current one. When the ops' bytes are known (``--flops``), the
bf16 time is floored at half their bytes over the memory bandwidth (bf16 moves half of fp32's
bytes), so a memory-bound matmul is not promised a compute speed-up. The TF32 alternative is
estimated the same way. Without ``--flops`` fp32 GEMMs are recognised by their kernel names
(``sgemm``, cuBLAS ``f32f32_f32f32``), and the text says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.rules.common import lines_of, ms, per_step_text, significant, where
from dlpt.analysis.work import is_tf32_kernel, op_work
from dlpt.model.tree import Node

__all__ = ["fp32_matmul", "is_fp32_gemm_kernel"]

_FP32_GEMM = re.compile(r"sgemm|f32f32_f32f32|gemm_f32|_s\d+gemm", re.IGNORECASE)


def is_fp32_gemm_kernel(name: str) -> bool:
    """Whether a kernel's name says it is an fp32 (non-TF32) GEMM."""
    return bool(_FP32_GEMM.search(name)) and not is_tf32_kernel(name)


@dataclass
class _Line:
    line: Node | None
    key: str
    ns: float = 0.0
    flops: float = 0.0
    nbytes: float = 0.0
    by_name: bool = False  # recognised by kernel names, no FLOPs recorded
    ops: set[str] = field(default_factory=set)


def _collect(a: Analysis) -> list[_Line]:
    lines: dict[tuple[str, int, str], _Line] = {}
    # Only ops carry FLOPs: without any in the session, op_work (a walk of every op's kernels)
    # would find none.
    flops = bool(a.totals.get("flops"))
    work = [w for w in op_work(a.root) if w.flops and w.key in ("fp32", "tf32")] if flops else []
    for w in work:
        k = (w.line.file, w.line.line, w.key or "") if w.line is not None else ("", 0, w.key or "")
        ln = lines.setdefault(k, _Line(w.line, w.key or "fp32"))
        ln.ns += w.kernel_ns / a.per
        ln.flops += w.flops / a.per
        ln.nbytes += w.nbytes / a.per
        ln.ops.add(w.node.name)
    if not any(n.metrics.get("flops") for n, _ in lines_of(a, ("op",))):
        for node, line in lines_of(a, ("kernel",)):
            if is_fp32_gemm_kernel(node.typed_extras.full_name or node.name):
                k = (line.file, line.line, "fp32") if line is not None else ("", 0, "fp32")
                ln = lines.setdefault(k, _Line(line, "fp32", by_name=True))
                ln.ns += node.metrics.get("gpu_ns", 0) / a.per
    return list(lines.values())


def _faster(a: Analysis, ln: _Line, target: str, bytes_factor: float) -> float | None:
    """Estimated time of the line's work in ``target`` (None without both peaks)."""
    assert a.device is not None
    cur, new = a.device.peak(ln.key), a.device.peak(target)
    if not cur or not new or new <= cur:
        return None
    t = ln.ns * cur / new
    if ln.nbytes:
        t = max(t, ln.nbytes * bytes_factor / a.device.mem_gbs)
    return t


def fp32_matmul(a: Analysis) -> list[Finding]:
    if a.device is None or "kernel" not in a.recorded:  # the gain is kernel time
        return []
    target = "bf16" if a.device.peak("bf16") else "fp16"
    out = []
    for ln in _collect(a):
        half = _faster(a, ln, target, 0.5)
        if half is None or not significant(a, ln.ns - half):
            continue
        tf32 = _faster(a, ln, "tf32", 1.0) if ln.key == "fp32" else None
        cur = a.device.peak(ln.key) or 0.0
        what = (
            "GEMM kernels (by name; run with --flops for FLOPs)" if ln.by_name else ", ".join(sorted(ln.ops))
        )
        rate = (
            f" at {ln.flops / ln.ns / 1e3:.1f} TFLOP/s ({100 * ln.flops / ln.ns / 1e3 / cur:.0f}% of its "
            f"{cur:g} TFLOP/s peak)"
            if ln.flops and ln.ns and cur
            else ""
        )
        torch_name = "bfloat16" if target == "bf16" else "float16"
        dtype = "fp32 (TF32 tensor cores)" if ln.key == "tf32" else "fp32"
        tf32_text = (
            f"; TF32 (torch.set_float32_matmul_precision('high')): -{ms(ln.ns - tf32)}" if tf32 else ""
        )
        floor = " floored at half the bytes over the memory bandwidth," if ln.nbytes else ""
        out.append(
            Finding(
                rule="fp32_matmul",
                title=f"{dtype} matmuls on a tensor-core GPU",
                evidence=f"{what}: {ms(ln.ns)} {per_step_text(a)} in {dtype}{rate}",
                action=f"run them in {target} (torch.autocast('cuda', dtype=torch.{torch_name}))" + tf32_text,
                basis=f"measured time x the {a.device.name} datasheet peak ratio {ln.key}/{target} "
                f"({cur:g}/{a.device.peak(target):g} TFLOP/s),{floor} assuming the same share of peak: "
                f"{ms(half)}",
                gain_ns=round(ln.ns - half),
                per_step=a.steps > 0,
                **where(ln.line),
                numbers={
                    "ns": round(ln.ns),
                    "flops": round(ln.flops),
                    "peak_current": cur,
                    "peak_target": a.device.peak(target) or 0.0,
                    "estimated_ns": round(half),
                    "tf32_estimated_ns": round(tf32) if tf32 is not None else -1,
                },
            )
        )
    return out
