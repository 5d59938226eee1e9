"""The input signatures the native core records for ops with a work formula (``--flops``): JSON
text, one per distinct (op node, inputs), parsed here into plain Python values.

Format (csrc/context/op_details_capture.cpp, ``input_signature``): a list with one entry per op
input; a tensor is ``["T", [dtype, [sizes]]]`` (``["T", null]`` when undefined), a tensor list
``["TL", [[dtype, [sizes]] | null, ...]]``, numbers, bools, None, int lists and bool lists (such
as ``convolution_backward``'s ``output_mask``) as themselves, anything else ``"?"``. Doubles are
printed with C++'s ``std::to_string``, which writes ``nan``, ``inf`` and ``-inf``: JSON has no
such tokens, so they are read as None (no formula needs a non-finite scalar).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

__all__ = ["Tensor", "parse", "tensors", "ITEMSIZE"]


class Tensor(NamedTuple):
    """A tensor input as recorded: its dtype name ("Float", "BFloat16", ...) and sizes."""

    dtype: str
    sizes: tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.sizes)

    @property
    def nbytes(self) -> int:
        return self.numel * ITEMSIZE.get(self.dtype, 4)


#: Bytes per element of the dtype names c10 prints (unknown names count as 4).
ITEMSIZE: dict[str, int] = {
    "Double": 8,
    "Float": 4,
    "Half": 2,
    "BFloat16": 2,
    "Long": 8,
    "Int": 4,
    "Short": 2,
    "Char": 1,
    "Byte": 1,
    "Bool": 1,
    "ComplexFloat": 8,
    "ComplexDouble": 16,
    "ComplexHalf": 4,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
    "Float8_e4m3fnuz": 1,
    "Float8_e5m2fnuz": 1,
}

_NON_FINITE = re.compile(r"(?<![\w\"])-?(?:nan|inf)(?![\w\"])")


def _tensor(v: Any) -> Tensor | None:
    if isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], list):
        return Tensor(v[0], tuple(int(s) for s in v[1]))
    return None


def _value(v: Any) -> Any:
    if isinstance(v, list) and len(v) == 2 and v[0] == "T":
        return _tensor(v[1])
    if isinstance(v, list) and len(v) == 2 and v[0] == "TL" and isinstance(v[1], list):
        return [_tensor(t) for t in v[1]]
    return v


def parse(signature: str) -> list[Any] | None:
    """The op's inputs (tensors as :class:`Tensor`); None when the text is not a signature."""
    try:
        raw = json.loads(_NON_FINITE.sub("null", signature))
    except ValueError:
        return None
    return [_value(v) for v in raw] if isinstance(raw, list) else None


def tensors(args: list[Any]) -> list[Tensor]:
    """Every tensor among ``args``, tensor lists flattened, undefined ones left out."""
    out: list[Tensor] = []
    for a in args:
        if isinstance(a, Tensor):
            out.append(a)
        elif isinstance(a, list):
            out.extend(t for t in a if isinstance(t, Tensor))
    return out
