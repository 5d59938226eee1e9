"""FLOPs of an op call from torch's own formula registry (``torch.utils.flop_counter``), given
the input signature the native core recorded.

Why torch's registry: its formulas are the ones ``FlopCounterMode`` and torch's own MFU
tooling use (matmuls, convolutions, scaled-dot-product attention in every backend, and their
backward ops), so dlpt's numbers agree with theirs, and an op torch adds a formula for is counted
without a dlpt release. The registry works on shapes; the formulas that also need the output
shape (convolution and its backward) get it computed here from the inputs. Formulas that need
tensor *values* (nested/jagged attention) are not evaluated: such a call counts as
"no formula for these inputs".

This is the only module of ``dlpt.capture.flops`` that imports torch (at session build time only):
a saved session carries its FLOPs, so ``--load`` needs no torch formulas.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from dlpt.capture.flops.signature import Tensor, tensors

__all__ = ["formula_ops", "flops_of", "flop_dtype", "conv_output_sizes"]


# Ops the registry has no entry for whose arguments start like a registered op's, so that op's
# formula applies: the CPU's flash attention (query, key, value, ...; its backward grad_out,
# query, key, value, ...), which CPU runs of scaled_dot_product_attention dispatch to. torch 2.15
# registers both itself (the same formulas); 2.11 to 2.14 do not, so the alias is used there.
_SAME_FORMULA = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": (
        "aten::_scaled_dot_product_flash_attention_backward"
    ),
}


@functools.cache
def _registry() -> dict[str, Callable[..., int]]:
    """aten op name ("aten::mm") -> formula. Higher-order ops (flex attention) have no aten name
    and are left out: they never reach RecordFunction under one."""
    from torch.utils.flop_counter import flop_registry

    out: dict[str, Callable[..., int]] = {}
    for target, formula in flop_registry.items():
        name = getattr(target, "_qualified_op_name", None)
        if isinstance(name, str) and name.startswith("aten::"):
            out[name] = formula
    for alias, op in _SAME_FORMULA.items():
        if op in out and alias not in out:
            out[alias] = out[op]
    return out


@functools.cache
def _keyword_only(op: str, n: int) -> tuple[str, ...]:
    """Names of the keyword-only arguments of ``op``'s overload with ``n`` arguments.

    RecordFunction hands over every argument in schema order, positionally; torch's dispatcher
    (and so the registry's formulas) passes the keyword-only ones (``addmm``'s ``beta`` and
    ``alpha``, attention's ``scale``) by name, and a formula whose next parameter is
    ``out_shape`` would take them for it.
    """
    import torch

    packet = getattr(torch.ops.aten, op.removeprefix("aten::"), None)
    for overload in getattr(packet, "overloads", lambda: [])():
        args = getattr(packet, overload)._schema.arguments
        if len(args) == n:
            return tuple(a.name for a in args if a.kwarg_only)
    return ()


def formula_ops() -> list[str]:
    """The names of the aten ops torch has a FLOP formula for, as RecordFunction names them."""
    return sorted(_registry())


def _shape(v: Any) -> Any:
    """Tensors as their sizes (what the registry's shape formulas take); lists element-wise."""
    if isinstance(v, Tensor):
        return list(v.sizes)
    if isinstance(v, list):
        return [_shape(x) for x in v]
    return v


class _Raw:
    """A stand-in with ``.shape`` for the registry's raw formulas (flash/efficient attention
    forward and backward), which read shapes off their tensor arguments."""

    def __init__(self, t: Tensor) -> None:
        self.shape = tuple(t.sizes)


def _conv_out(
    x: list[int],
    w: list[int],
    stride: Any,
    padding: Any,
    dilation: Any,
    transposed: Any,
    output_padding: Any,
    groups: Any,
) -> list[int] | None:
    """Output sizes of aten::convolution (input, weight, bias, stride, padding, dilation,
    transposed, output_padding, groups), as torch computes them."""
    n = len(x) - 2
    if n < 1 or len(w) != n + 2:
        return None

    def per_dim(v: Any, default: int) -> list[int]:
        if isinstance(v, int):
            return [v] * n
        if isinstance(v, list) and all(isinstance(i, int) for i in v):
            return list(v) * n if len(v) == 1 else list(v)
        return [default] * n

    s, p, d = per_dim(stride, 1), per_dim(padding, 0), per_dim(dilation, 1)
    op = per_dim(output_padding, 0)
    g = groups if isinstance(groups, int) and groups > 0 else 1
    k = w[2:]
    if transposed:
        spatial = [(x[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(n)]
        return [x[0], w[1] * g, *spatial]
    spatial = [(x[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(n)]
    return [x[0], w[0], *spatial]


def conv_output_sizes(args: list[Any]) -> list[int] | None:
    """Output sizes of a convolution call from its recorded inputs (aten::convolution's order:
    input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)."""
    sh = [_shape(a) for a in args]
    if len(sh) < 9 or not isinstance(sh[0], list) or not isinstance(sh[1], list):
        return None
    return _conv_out(sh[0], sh[1], sh[3], sh[4], sh[5], sh[6], sh[7], sh[8])


def _out_shape(op: str, args: list[Any]) -> Any:
    """What the registry's formulas expect as ``out_val`` for ``op`` (None where unused)."""
    sh = [_shape(a) for a in args]
    if op in ("aten::convolution", "aten::_convolution", "aten::convolution_overrideable"):
        return conv_output_sizes(args)
    if op == "aten::convolution_backward" and len(sh) >= 3:
        # Outputs: grad_input (the input's sizes), grad_weight (the weight's), grad_bias.
        return [sh[1], sh[2], None]
    return None


# The registry's raw formulas, with the argument positions of the sequence offsets that make a
# call nested (jagged): those formulas read the offsets' values, which are not recorded.
_RAW = {
    "aten::_flash_attention_forward": (3, 4),
    "aten::_efficient_attention_forward": (4, 5),
    "aten::_flash_attention_backward": (6, 7),
    "aten::_efficient_attention_backward": (6, 7),
}


def flops_of(op: str, args: list[Any]) -> int | None:
    """FLOPs of one call of ``op`` with these inputs; None when torch has no formula for the op,
    or its formula cannot be evaluated from shapes alone (the caller counts those)."""
    formula = _registry().get(op)
    if formula is None:
        return None
    try:
        if op in _RAW:
            if any(i < len(args) and isinstance(args[i], Tensor) for i in _RAW[op]):
                return None
            value = formula(*[_Raw(a) if isinstance(a, Tensor) else a for a in args])
        else:
            names = _keyword_only(op, len(args))
            positional = [_shape(a) for a in args[: len(args) - len(names)]]
            keywords = dict(zip(names, args[len(args) - len(names) :], strict=True))
            value = formula(*positional, out_val=_out_shape(op, args), **keywords)
    except (TypeError, ValueError, IndexError, AssertionError, AttributeError, ZeroDivisionError):
        return None  # a signature the formula does not accept (counted by the caller)
    return int(value) if isinstance(value, int) and value >= 0 else None


def flop_dtype(args: list[Any]) -> str | None:
    """The dtype the op computes in: that of its first tensor of two or more dimensions (the
    matrix, activation or query; a bias comes first in addmm and is one-dimensional)."""
    ts = tensors(args)
    for t in ts:
        if len(t.sizes) >= 2:
            return t.dtype
    return ts[0].dtype if ts else None
