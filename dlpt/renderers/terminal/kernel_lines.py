"""The PC sampling view of one kernel: its source lines with samples and top stall reasons
(``python -m dlpt --load S.json --kernel-lines NAME``), and, for a fused Inductor kernel, the
model lines it fused with their sampled shares. Reads ``meta.pc_sampling`` only."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from dlpt.errors import UsageError
from dlpt.model.meta import Meta, PcKernel, typed

__all__ = ["render_kernel_lines", "top_stalls"]

#: Lines and stall reasons shown per kernel.
MAX_ROWS = 40
TOP_STALLS = 3
#: Kernels shown when a name part matches several (the most sampled first).
MAX_KERNELS = 5


def top_stalls(stalls: Mapping[str, int], samples: int, n: int = TOP_STALLS) -> str:
    """ "long_scoreboard 41%, math_pipe_throttle 20%" (the most frequent reasons first)."""
    ranked = sorted(stalls.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {100 * v / max(1, samples):.0f}%" for k, v in ranked if v)


def _pick(kernels: list[PcKernel], name: str) -> list[PcKernel]:
    if not name:
        return kernels[:1]
    exact = [k for k in kernels if k.name == name]
    return exact or [k for k in kernels if name in k.name][:MAX_KERNELS]


def _code(path: str, line: int, sources: Mapping[str, Mapping[str, str]]) -> str:
    """The line's text as the session saved it (dlpt.capture.pc_annotate saves kernel files);
    never read from ``path``: a session can name any file, and the file may have changed."""
    saved = sources.get(path, {}).get(str(line))
    return saved.strip() if saved is not None else ""


def render_kernel_lines(meta: Meta | Mapping[str, Any], name: str = "", width: int = 120) -> str:
    """The table for the kernels whose name is ``name`` (or contains it; "" the most sampled).
    UsageError (one line) when the session has no PC samples or no kernel matches."""
    m = typed(meta)
    pcs = m.pc_sampling
    if pcs is None:
        raise UsageError("this session has no PC samples (profile with --pc-sampling)")
    kernels = list(pcs.kernels or [])
    if not kernels:
        raise UsageError(f"PC sampling collected nothing in this session: {pcs.reason or 'no samples'}")
    chosen = _pick(kernels, name)
    if not chosen:
        raise UsageError(
            f"no sampled kernel matches {name!r}; sampled: {', '.join(k.name[:60] for k in kernels[:5])}"
        )
    sources = m.sources or {}
    splits = {s.kernel: s for s in pcs.model_lines or []}
    unresolved = pcs.unresolved or {}
    steps = f"steps {pcs.first_step}-{pcs.last_step}" if pcs.first_step else "sampled steps"
    out = [
        f"PC sampling: {steps}, period 2^{pcs.period_log2} cycles, "
        f"{pcs.total_samples or 0} samples ({pcs.dropped_samples or 0} dropped)"
    ]
    for k in chosen:
        total = k.samples
        out.append("")
        out.append(f"{k.name[: width - 20]}  {total} samples  [{top_stalls(k.stalls or {}, total)}]")
        if k.name in unresolved:
            out.append(f"  PCs without a line: {unresolved[k.name]}"[:width])
        out.append(f"{'samples':>9} {'%':>6}  {'line':<40} {'top stalls':<36} code")
        for file, line, samples, stalls in (k.lines or [])[:MAX_ROWS]:
            where = f"{os.path.basename(file)}:{line}" if file else "(no line info)"
            code = _code(file, line, sources) if file else ""
            share = 100 * samples / max(1, total)
            row = f"{samples:>9} {share:>5.1f}%  {where:<40} {top_stalls(stalls, samples):<36} {code}"
            out.append(row[:width])
        split = splits.get(k.name)
        if split and split.lines:
            out.append(
                f"  model lines it fused (sampled estimate, {split.samples} samples; "
                f"{split.unassigned or 0} on lines of no single model line):"
            )
            for ml in split.lines:
                out.append(f"    {100 * (ml.share or 0):5.1f}%  {ml.samples:>9} samples  {ml.file}:{ml.line}")
    return "\n".join(out)
