"""Work done per op and per line (FLOPs, estimated bytes) beside the GPU time it took: the
numbers behind TFLOP/s, % of peak and the roofline bound.

FLOPs and bytes sit on op nodes (``m.flops``, ``m.mem_bytes``, written at capture with
``--flops``, see :mod:`dlpt.capture.flops.annotate`); a backward op is grafted under the forward
line that created it, so a line's FLOPs are its forward plus its backward. A line's time is the
time of its *own* kernels (callee lines count at their own rows), the same "self" the flat
profile uses. fp32 work counts against the TF32 peak when its kernels ran on TF32 tensor cores
(their names say so: ``tf32``, cuBLAS/CUTLASS ``tensorop_s``), else against the CUDA-core fp32
peak.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dlpt.analysis.inputs import Analysis, in_backward, user_line
from dlpt.analysis.peaks import dtype_key
from dlpt.analysis.roofline import Bound, classify
from dlpt.model.tree import Node, walk

__all__ = ["OpWork", "LineWork", "op_work", "line_work", "model_flops", "is_tf32_kernel"]

_TF32 = re.compile(r"tf32|tensorop_s\d|s1688|s16816", re.IGNORECASE)


def is_tf32_kernel(name: str) -> bool:
    """Whether a kernel's name says it computes fp32 on TF32 tensor cores."""
    return bool(_TF32.search(name))


def _kernels(node: Node) -> list[Node]:
    return [n for n, _ in walk(node) if n.kind == "kernel"]


@dataclass
class OpWork:
    """An op with recorded work and the kernels beneath it."""

    node: Node
    line: Node | None
    backward: bool
    flops: int
    nbytes: int
    kernel_ns: int
    launches: int
    key: str | None  # peak key: fp32/tf32/fp16/bf16/fp8
    kernel: str  # its longest-running kernel's name
    cpu_ns: int = 0  # the op's CPU time (inclusive): its time on a CPU run

    def bound(self, a: Analysis) -> Bound:
        return classify(
            self.flops, self.nbytes, self.kernel_ns, self.launches, a.device, a.peak_tflops(self.key)
        )

    def cpu_rate(self) -> Bound:
        """The achieved rates over the op's CPU time (a CPU run: no roof to compare with)."""
        return classify(self.flops, self.nbytes, self.cpu_ns, 0, None, None)


def op_work(root: Node) -> list[OpWork]:
    """Every op node carrying FLOPs or bytes, with its kernels' time (inclusive)."""
    out = []
    for node, _ in walk(root):
        if node.kind != "op":
            continue
        flops, nbytes = node.metrics.get("flops", 0), node.metrics.get("mem_bytes", 0)
        if not flops and not nbytes:
            continue
        kernels = _kernels(node)
        longest = max(kernels, key=lambda k: k.metrics.get("gpu_ns", 0), default=None)
        tf32 = any(is_tf32_kernel(k.typed_extras.full_name or k.name) for k in kernels)
        dtype = node.typed_extras.flop_dtype
        out.append(
            OpWork(
                node,
                user_line(node.parent),
                in_backward(node),
                flops,
                nbytes,
                node.inclusive.get("gpu_ns", 0),
                node.inclusive.get("kernels", 0),
                dtype_key(dtype, tf32) if flops else None,
                longest.name if longest is not None else "",
                node.inclusive.get("cpu_ns", 0),
            )
        )
    return out


@dataclass
class LineWork:
    """A user line's own work and kernel time (see module docstring)."""

    line: Node
    flops_forward: int = 0
    flops_backward: int = 0
    nbytes: int = 0
    kernel_ns: int = 0
    launches: int = 0
    by_key: dict[str, int] = field(default_factory=dict)  # FLOPs per peak key
    cpu_ns: int = 0  # the CPU time of its ops that did work (a CPU run's time for it)

    @property
    def flops(self) -> int:
        return self.flops_forward + self.flops_backward

    @property
    def key(self) -> str | None:
        """The peak key most of the line's FLOPs ran in."""
        return max(self.by_key, key=lambda k: self.by_key[k]) if self.by_key else None

    def bound(self, a: Analysis) -> Bound:
        return classify(
            self.flops, self.nbytes, self.kernel_ns, self.launches, a.device, a.peak_tflops(self.key)
        )

    def cpu_rate(self) -> Bound:
        """The achieved rates over its ops' CPU time (a CPU run: no roof to compare with)."""
        return classify(self.flops, self.nbytes, self.cpu_ns, 0, None, None)


def line_work(root: Node) -> list[LineWork]:
    """Per user line (file, line): its own FLOPs (forward/backward), bytes and kernel time,
    in first-seen order."""
    lines: dict[tuple[str, int], LineWork] = {}
    ops = {id(w.node): w for w in op_work(root)}
    for node, _ in walk(root):
        line = user_line(node)
        if line is None:
            continue
        lw = lines.get((line.file, line.line))
        if lw is None:
            lw = lines[(line.file, line.line)] = LineWork(line)
        if node.kind == "kernel":
            lw.kernel_ns += node.metrics.get("gpu_ns", 0)
            lw.launches += node.metrics.get("kernels", 0)
        w = ops.get(id(node))
        if w is None:
            continue
        lw.nbytes += w.nbytes
        lw.cpu_ns += w.cpu_ns
        if w.flops:
            if w.backward:
                lw.flops_backward += w.flops
            else:
                lw.flops_forward += w.flops
            k = w.key or "?"
            lw.by_key[k] = lw.by_key.get(k, 0) + w.flops
    return list(lines.values())


def model_flops(root: Node) -> dict[str, int]:
    """All FLOPs of the run per peak key (the model FLOPs of MFU are their sum)."""
    out: dict[str, int] = {}
    for w in op_work(root):
        if w.flops:
            k = w.key or "?"
            out[k] = out.get(k, 0) + w.flops
    return out
