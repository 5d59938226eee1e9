"""PC samples in the HTML model (``--pc-sampling``): a kernel's detail text with its samples and
top stalls, and per kernel file the sampled lines for the source view (``assets/source.js``),
which shows a kernel's file as it shows model files, samples in the margin instead of time.

``sampled``: ``{file string index: {"lines": [[line, samples, stalls string index]], "kernels":
[kernel name string index], "samples": total}}`` from the session's ``meta.pc_sampling`` (every
sampled line of every kernel, not only the few on the nodes); the source text comes from
``meta.sources`` (dlpt.capture.pc_annotate saves kernel files there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dlpt.model.meta import Meta, PcExtras, PcFused

__all__ = ["frame_pc_detail", "kernel_pc_detail", "sampled_files"]


def _stalls(stalls: Mapping[str, int], samples: int, n: int = 3) -> str:
    ranked = sorted(stalls.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{k} {100 * v / max(1, samples):.0f}%" for k, v in ranked if v)


def kernel_pc_detail(pc: PcExtras | None) -> str:
    """ "PC samples 1,000: long_scoreboard 60%, ..." for a kernel node's ``x.pc``; "" without."""
    if pc is None or not pc.samples:
        return ""
    n = pc.samples
    text = f"PC samples {n:,}: {_stalls(pc.stalls or {}, n)}"
    if pc.unassigned:
        text += f"; {pc.unassigned:,} unassigned to model lines"
    return text


def frame_pc_detail(fused: list[PcFused]) -> str:
    """A model line's sampled share of the fused kernels split onto it (``x.pc_fused``): "≈90% of
    K (sampled estimate: 810 of 900 samples on its model lines; 100 unassigned)"; "" without."""
    return "; ".join(
        f"≈{100 * float(f.share or 0):.0f}% of {f.kernel} (sampled estimate: "
        f"{f.samples:,} of {f.of or 0:,} samples on its model lines; "
        f"{f.unassigned or 0:,} unassigned)"
        for f in fused
    )


def sampled_files(meta: Meta, strings: Callable[[str], int]) -> dict[str, Any]:
    """The model's ``sampled`` (see the module docstring)."""
    pcs = meta.pc_sampling
    files: dict[str, dict[str, Any]] = {}
    for k in (pcs.kernels if pcs is not None else None) or []:
        for f, line, n, stalls in k.lines or []:
            if not f or line <= 0:
                continue
            e = files.setdefault(f, {"lines": {}, "kernels": [], "samples": 0})
            total, merged = e["lines"].get(line, (0, {}))
            for reason, c in (stalls or {}).items():
                merged[reason] = merged.get(reason, 0) + int(c)
            e["lines"][line] = (total + int(n), merged)
            e["samples"] += int(n)
            if k.name not in e["kernels"]:
                e["kernels"].append(k.name)
    return {
        str(strings(f)): {
            "lines": [[ln, n, strings(_stalls(st, n))] for ln, (n, st) in sorted(e["lines"].items())],
            "kernels": [strings(name) for name in e["kernels"]],
            "samples": e["samples"],
        }
        for f, e in sorted(files.items())
    }
