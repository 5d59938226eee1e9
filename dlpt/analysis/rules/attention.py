"""Attention computed unfused (softmax over a score matrix in GPU memory) -> a fused kernel
through ``F.scaled_dot_product_attention``.

Two shapes are recognised:

- ``F.scaled_dot_product_attention`` that fell back to its math implementation: its op ran a
  softmax kernel and no fused attention kernel (flash, memory-efficient, cuDNN: their names say
  ``flash``, ``fmha``, ``attention``, ``sdpa``);
- attention written out by hand: a function whose lines run a softmax between two matmuls
  (``q @ k.transpose``, masking, softmax, dropout, ``att @ v``).

Gain per step: the measured time of the non-matmul kernels of that code (softmax, masking,
scaling, dropout, forward and backward): a fused kernel keeps the score matrix on chip, so their
reads and writes of it disappear; the matmuls' time is assumed unchanged (conservative: fused
kernels usually beat them too).
"""

from __future__ import annotations

import re

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.rules.common import ms, per_step_text, significant, where
from dlpt.model.tree import Node, walk

__all__ = ["attention_unfused", "is_gemm_kernel"]

_GEMM = re.compile(r"gemm|gemv|cutlass|xmma|wgmma|matmul|bmm|cublas", re.IGNORECASE)
_FUSED = re.compile(r"flash|fmha|attention|attn|sdpa", re.IGNORECASE)
_SOFTMAX = ("aten::softmax", "aten::_softmax", "aten::_safe_softmax")
_MATMUL = ("aten::matmul", "aten::bmm", "aten::baddbmm", "aten::einsum")
_SDPA = "aten::scaled_dot_product_attention"


def is_gemm_kernel(name: str) -> bool:
    return bool(_GEMM.search(name))


def _kernels(node: Node) -> list[Node]:
    return [n for n, _ in walk(node) if n.kind == "kernel"]


def _other_ns(kernels: list[Node]) -> int:
    return sum(k.metrics.get("gpu_ns", 0) for k in kernels if not is_gemm_kernel(k.name))


def _sdpa_math(a: Analysis) -> list[tuple[Node | None, int, str]]:
    out = []
    for node, line in a.lines:
        if node.kind == "op" and node.name == _SDPA:
            ks = _kernels(node)
            math_op = any(n.name == "aten::_scaled_dot_product_attention_math" for n, _ in walk(node))
            softmax = any("softmax" in k.name.lower() for k in ks)
            if (math_op or softmax) and not any(_FUSED.search(k.name) for k in ks):
                out.append((line, _other_ns(ks), "sdpa"))
    return out


def _ops_by_line(a: Analysis) -> dict[tuple[str, int], tuple[Node, set[str], list[Node]]]:
    """Per user line: its frame, the names of its ops and its kernels (its own, not callees')."""
    lines: dict[tuple[str, int], tuple[Node, set[str], list[Node]]] = {}
    for node, line in a.lines:
        if line is None or node.kind not in ("op", "kernel"):
            continue
        entry = lines.setdefault((line.file, line.line), (line, set(), []))
        if node.kind == "op":
            entry[1].add(node.name)
        else:
            entry[2].append(node)
    return lines


def _manual(a: Analysis) -> list[tuple[Node | None, int, str]]:
    out: list[tuple[Node | None, int, str]] = []
    by_fn: dict[tuple[str, str], list[tuple[Node, set[str], list[Node]]]] = {}
    for line, ops, ks in _ops_by_line(a).values():
        by_fn.setdefault((line.file, line.name), []).append((line, ops, ks))
    for entries in by_fn.values():
        mm = [ln.line for ln, ops, _ in entries if ops & set(_MATMUL)]
        sm = [ln for ln, ops, _ in entries if ops & set(_SOFTMAX) and _SDPA not in ops]
        for soft in sm:
            before = [n for n in mm if n < soft.line]
            after = [n for n in mm if n > soft.line]
            if not before or not after:
                continue
            lo, hi = max(before), min(after)
            region = [ks for ln, _, ks in entries if lo <= ln.line <= hi]
            out.append((soft, sum(_other_ns(ks) for ks in region), "manual"))
    return out


def attention_unfused(a: Analysis) -> list[Finding]:
    if not a.recorded.get("op", set()) & {_SDPA, *_SOFTMAX}:  # neither kind of attention ran
        return []
    out = []
    for line, ns, kind in [*_sdpa_math(a), *_manual(a)]:
        gain = ns / a.per
        if not significant(a, gain):
            continue
        if kind == "sdpa":
            title = "scaled_dot_product_attention fell back to its unfused math kernel"
            action = (
                "give it inputs a fused backend takes: bf16/fp16 q, k, v, a head dim that is a multiple "
                "of 8 (<= 256), is_causal=True instead of a dense mask (torch.nn.attention.sdpa_kernel "
                "lists why a backend was rejected)"
            )
        else:
            title = "Attention written out by hand: softmax over the full score matrix in memory"
            action = (
                "replace it with F.scaled_dot_product_attention(q, k, v, is_causal=True) (bf16/fp16 inputs)"
            )
        out.append(
            Finding(
                rule="attention_unfused",
                title=title,
                evidence=f"softmax, masking, scaling and dropout kernels of the attention take {ms(gain)} "
                f"{per_step_text(a)} (forward and backward)",
                action=action,
                basis="the measured time of its non-matmul kernels, whose score-matrix traffic a fused "
                "kernel keeps on chip; the matmuls' time assumed unchanged",
                gain_ns=round(gain),
                per_step=a.steps > 0,
                **where(line),
                numbers={"unfused_ns": round(gain)},
            )
        )
    return out
