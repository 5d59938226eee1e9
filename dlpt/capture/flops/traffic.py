"""Bytes an op moves through GPU memory, *estimated* from its tensor sizes: every input read
once, every output written once.

Why an estimate: the real DRAM traffic depends on caches, tiling and recomputation, which only
hardware counters (Nsight Compute) see. Reading each operand once is the lower bound a kernel
must move (the roofline model's "compulsory traffic"), so the achieved bandwidth computed from it
is a lower bound too, and a kernel classified memory-bound on it is at least that close to the
memory roof. Reports label these bytes "estimated".

Output sizes are derived per op family: elementwise ops write the broadcast shape of their
inputs (in-place ops write their first argument), normalisations and softmax write their input's
shape, reductions write a negligible amount (not counted), matmuls, convolutions and attention
write their result, and backward ops write the gradients of the inputs they received.
"""

from __future__ import annotations

import math
from typing import Any

from dlpt.capture.flops.formulas import conv_output_sizes
from dlpt.capture.flops.signature import ITEMSIZE, Tensor, tensors

__all__ = ["bytes_ops", "bytes_of"]

# Elementwise ops (output: broadcast shape of the tensor inputs, dtype of the first). The
# in-place variants (trailing "_") write their first argument instead.
_ELEMENTWISE = [
    "add",
    "sub",
    "mul",
    "div",
    "neg",
    "abs",
    "exp",
    "log",
    "pow",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "relu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "clamp",
    "clamp_min",
    "clamp_max",
    "where",
    "masked_fill",
    "threshold_backward",
    "gelu_backward",
    "silu_backward",
    "sigmoid_backward",
    "tanh_backward",
    "native_dropout",
    "native_dropout_backward",
    "addcmul",
    "addcdiv",
    "lerp",
    "fill",
    "zero",
    "embedding_dense_backward",
]
_INPLACE = [f"{n}_" for n in _ELEMENTWISE if n not in ("where", "native_dropout", "native_dropout_backward")]
# Same shape in, same shape out (plus small statistics, not counted).
_SAME_SHAPE = [
    "native_layer_norm",
    "native_layer_norm_backward",
    "_softmax",
    "_softmax_backward_data",
    "_log_softmax",
    "_log_softmax_backward_data",
    "native_batch_norm",
    "native_group_norm",
    "_fused_rms_norm",
]
# Reductions: read everything, write little.
_REDUCTIONS = ["sum", "mean", "amax", "amin", "max", "min", "norm", "linalg_vector_norm", "nll_loss_forward"]
_COPIES = ("copy_", "_to_copy")
# torch.optim's fused kernels: (lists written).
_FUSED_OPT = {"_fused_adam_": (0, 2, 3, 4), "_fused_adamw_": (0, 2, 3, 4), "_fused_sgd_": (0, 2)}
_FOREACH = [
    "_foreach_add",
    "_foreach_sub",
    "_foreach_mul",
    "_foreach_div",
    "_foreach_addcmul",
    "_foreach_addcdiv",
    "_foreach_lerp",
    "_foreach_sqrt",
    "_foreach_maximum",
    "_foreach_neg",
    "_foreach_copy",
]
_FOREACH_REDUCE = ("_foreach_norm",)
_MATMUL = ("mm", "addmm", "bmm", "baddbmm", "_scaled_mm")
_CONV = ("convolution", "_convolution", "convolution_overrideable")
_SDPA = (
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
)

# c10::ScalarType codes as _to_copy receives its dtype argument (c10/core/ScalarType.h).
_SCALAR_TYPES = {
    0: "Byte",
    1: "Char",
    2: "Short",
    3: "Int",
    4: "Long",
    5: "Half",
    6: "Float",
    7: "Double",
    11: "Bool",
    15: "BFloat16",
    23: "Float8_e5m2",
    24: "Float8_e4m3fn",
}


def bytes_ops() -> list[str]:
    """Ops with no FLOP formula whose traffic is estimated here (their shapes are recorded with
    ``--flops`` too); the FLOP-formula ops get a traffic estimate as well."""
    names = [*_ELEMENTWISE, *_INPLACE, *_SAME_SHAPE, *_REDUCTIONS, *_COPIES, *_FUSED_OPT]
    names += [*_FOREACH, *(f"{n}_" for n in _FOREACH), *_FOREACH_REDUCE]
    return sorted({f"aten::{n}" for n in names})


def _broadcast(shapes: list[tuple[int, ...]]) -> int:
    if not shapes:
        return 0
    dims = max(len(s) for s in shapes)
    out = [1] * dims
    for s in shapes:
        for i, d in enumerate(s, start=dims - len(s)):
            out[i] = max(out[i], d)
    return math.prod(out)


def _list_bytes(v: Any) -> int:
    return sum(t.nbytes for t in v if isinstance(t, Tensor)) if isinstance(v, list) else 0


def _written(name: str, args: list[Any], ts: list[Tensor]) -> int | None:
    """Bytes the op writes, or None when its family is unknown here."""
    first = ts[0] if ts else None
    if name in _MATMUL:
        a, b = [t for t in ts if len(t.sizes) >= 2][-2:] or (None, None)
        if a is None or b is None:
            return None
        rows = a.sizes[:-1]
        return math.prod(rows) * b.sizes[-1] * ITEMSIZE.get(a.dtype, 4)
    if name in _CONV:
        out = conv_output_sizes(args)
        return math.prod(out) * ITEMSIZE.get(ts[0].dtype, 4) if out and ts else None
    if name in _SDPA and len(ts) >= 3:
        q, v = ts[0], ts[2]
        # The output (query's sizes with the value's head dim) and the fp32 logsumexp.
        return math.prod(q.sizes[:-1]) * (v.sizes[-1] * ITEMSIZE.get(q.dtype, 4) + 4)
    if name.endswith("_backward") and name.removesuffix("_backward") in (*_SDPA, "convolution"):
        # Gradients of the query/key/value (or input and weight), the 2nd-4th inputs.
        return sum(t.nbytes for t in ts[1 : 4 if "attention" in name else 3])
    if name in _FUSED_OPT:
        return sum(_list_bytes(args[i]) for i in _FUSED_OPT[name] if i < len(args))
    if name in _FOREACH or name.rstrip("_") in _FOREACH:
        return _list_bytes(args[0]) if args else None
    if name in _FOREACH_REDUCE or name in _REDUCTIONS:
        return 0
    if name == "_to_copy" and first is not None:
        dtype = _SCALAR_TYPES.get(args[1]) if len(args) > 1 and isinstance(args[1], int) else None
        return first.numel * ITEMSIZE.get(dtype or first.dtype, 4)
    if name == "copy_" or name in _INPLACE:
        return first.nbytes if first is not None else None
    if name in _SAME_SHAPE:
        return first.nbytes if first is not None else None
    if name in _ELEMENTWISE and first is not None:
        return _broadcast([t.sizes for t in ts]) * ITEMSIZE.get(first.dtype, 4)
    return None


def bytes_of(op: str, args: list[Any]) -> int | None:
    """Estimated bytes one call of ``op`` reads and writes; None for an op family not known here."""
    name = op.removeprefix("aten::")
    ts = tensors(args)
    written = _written(name, args, ts)
    if written is None:
        return None
    if name in ("fill_", "zero_"):
        return written  # writes only
    if name == "copy_":
        return written + (ts[1].nbytes if len(ts) > 1 else 0)  # reads src, writes self
    return sum(t.nbytes for t in ts) + written
