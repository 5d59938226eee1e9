"""Display names for GPU kernels.

CUDA C++ kernels arrive demangled but long: ``void at::native::vectorized_elementwise_kernel<4,
at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>,
std::array<char*, 1ul>)``. For the tree we keep what tells kernels apart (name and first-level
template arguments) and drop return type, parameters, namespaces and deep template nesting. The
full name stays in the session (``x.full_name``).
"""

from __future__ import annotations

import re

from dlpt.model.meta import Extras

_NAMESPACE = re.compile(r"(?:\(anonymous namespace\)|[A-Za-z_]\w*)::")
_MAX_TEMPLATE_DEPTH = 2


def _strip_params(name: str) -> str:
    """Drop the parameter list: the first '(' at template depth 0 that is not part of the name."""
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and not name.startswith("(anonymous", i):
            return name[:i]
    return name


def _collapse_templates(name: str) -> str:
    """Replace template arguments nested deeper than _MAX_TEMPLATE_DEPTH with '…'."""
    out: list[str] = []
    depth = 0
    for ch in name:
        if ch == "<":
            depth += 1
            if depth == _MAX_TEMPLATE_DEPTH + 1:
                out.append("<…")
            if depth <= _MAX_TEMPLATE_DEPTH:
                out.append(ch)
        elif ch == ">":
            if depth <= _MAX_TEMPLATE_DEPTH:
                out.append(ch)
            elif depth == _MAX_TEMPLATE_DEPTH + 1:
                out.append(">")
            depth -= 1
        elif depth <= _MAX_TEMPLATE_DEPTH:
            out.append(ch)
    return "".join(out)


def shorten_kernel_name(name: str) -> str:
    """A readable kernel name; Triton and cuBLAS names (no C++ syntax) pass through unchanged."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    s = _strip_params(s)
    s = _NAMESPACE.sub("", s)
    s = _collapse_templates(s)
    s = re.sub(r"\s+>", ">", s)
    return s.strip() or name


def _dims(v: object) -> str:
    """``[128, 4, 1]`` -> ``128x4``: trailing 1s say nothing."""
    if not isinstance(v, (list, tuple)):
        return str(v)
    dims = [str(d) for d in v]
    while len(dims) > 1 and dims[-1] == "1":
        dims.pop()
    return "x".join(dims)


def kernel_config(x: Extras) -> str:
    """Compact launch configuration in CUDA's own notation: ``<<<(66,2),384>>> regs 168 smem
    227K`` (grid, block; trailing 1s dropped)."""
    parts = []
    if x.grid is not None or x.block is not None:
        g = _dims(x.grid if x.grid is not None else "?")
        b = _dims(x.block if x.block is not None else "?")
        g = f"({g.replace('x', ',')})" if "x" in g else g
        b = f"({b.replace('x', ',')})" if "x" in b else b
        parts.append(f"<<<{g},{b}>>>")
    if x.regs:
        parts.append(f"regs {x.regs}")
    smem = sum(v for v in (x.smem_static, x.smem_dynamic) if v)
    if smem:
        parts.append(f"smem {smem / 1024:.0f}K" if smem >= 1024 else f"smem {smem}B")
    return " ".join(parts)
